/*
 * verify.c - `collsim verify`: every execution class of one run
 * configuration under each memory model asked for, each explored once
 * (sim/dpor.h: source-DPOR with sleep sets, the relation of
 * docs/verify.md), ending with `verified`, a counterexample (kept as a
 * trace, shrunk as explore does) or `incomplete`.
 *
 * Every execution is one cs_run_execute() in this process, its output
 * caught in a temporary file (shown only when the configuration is
 * refused), over one kept world and its rank processes (run/pipeline.h)
 * while runs pass. Owns the options, the loop, the estimate, progress
 * and the verdict. Does not own a run (cli/collsim/run.c), the search
 * (sim/sched/dpor.c) or shrinking (cli/collsim/shrink.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/dpor.h"
#include "../../sim/rng.h"
#include "../../window/fdio.h"
#include "cli.h"
#include "run.h"
#include "shrink.h"
#include "story.h"

static const char usage[] =
    "usage: collsim verify [run options] [--memory-model M,...]\n"
    "                      [--max-classes K] [--budget SECONDS] [--estimate]\n"
    "                      [--exhaustive] [--outcomes] [--check] [--no-shrink]\n"
    "                      [--no-probes] [-j N] [-o DIR]\n"
    "\n"
    "Runs every execution class of one configuration (every option of\n"
    "collsim run, --bug and --algo ./x.so included, except --schedule,\n"
    "--memory-model, --trace, --input and --output; --iters is 1 unless\n"
    "given) under each memory model:\n"
    "two schedules are in one class when they differ only in the order of\n"
    "independent events (docs/verify.md), and one of each class runs.\n"
    "Ends with exactly one of:\n"
    "  verified: ...       every class ran and passed (exit 0)\n"
    "  counterexample: ... the first run that failed as collsim run reports\n"
    "                      it (wrong result, signals, calls differ, deadlock,\n"
    "                      fault), kept as DIR/verify-1.cstrace, then shrunk\n"
    "                      to DIR/verify-1.min.cstrace (exit 1); the\n"
    "                      latest schedule and 16 random ones run first\n"
    "                      under each model, and one of them that fails\n"
    "                      is a counterexample too;\n"
    "                      with --check so is a check finding on a run\n"
    "                      that passed (shrunk the same way: the first\n"
    "                      finding is kept)\n"
    "  incomplete: ...     the budget or --max-classes ran out (exit 4), with\n"
    "                      the share of the tree explored and a rough\n"
    "                      estimate of the classes in all\n"
    "\n"
    "  --memory-model M,...  from sc, fifo, relaxed, a2a3 (default sc,fifo,\n"
    "                    relaxed; a2a3 reduces at 64-byte line grain and has\n"
    "                    many more classes)\n"
    "  --max-classes K   stop after K classes per model (default: no limit)\n"
    "  --budget SECONDS  stop after this long in all (default: no limit)\n"
    "  --estimate        only estimate the size of the schedule tree per model\n"
    "                    (Knuth's estimator over random runs: the number of\n"
    "                    schedules, an upper bound on the classes) and the\n"
    "                    time the brute force would take\n"
    "  --exhaustive      no reduction: every schedule (the brute force)\n"
    "  --outcomes        also print each model's distinct final states (a\n"
    "                    hash of every window and result) of passing runs\n"
    "                    (with --estimate: of the random probes)\n"
    "  --check           also check every execution as collsim check does,\n"
    "                    sleep-blocked ones too (they are real executions):\n"
    "                    in memory (a plug-in's: a temporary trace), no file\n"
    "                    kept unless one has a finding; --estimate ignores it\n"
    "  --no-shrink       keep the counterexample as it is\n"
    "  --no-probes       no latest and random schedules before the search\n"
    "  -j N              split the search across N worker processes (1 to 64,\n"
    "                    default 1), each on a kept world of its own: the\n"
    "                    first execution's branches are handed out, deepest\n"
    "                    first, and the races a worker finds above its subtree\n"
    "                    come back as new branches; the first failure stops\n"
    "                    them all (docs/verify.md, \"Parallel\")\n"
    "  -o DIR            where the counterexample goes (default .):\n"
    "                    verify-1.cstrace and verify-1.min.cstrace, each a new\n"
    "                    name or a regular file of yours, not a link (checked\n"
    "                    before anything runs); DIR itself not through\n"
    "                    another user's link\n"
    "\n"
    "Progress (classes, executions, rate; with -j the subtrees handed out and\n"
    "the workers busy) on stderr when it is a terminal.\n"
    "Exit: 0 verified, 1 counterexample, 2 bad usage, 3 aborted or interrupted\n"
    "(SIGINT, SIGTERM, SIGHUP: the run in progress stops, nothing is left),\n"
    "4 incomplete.\n";

typedef struct vf_opts {
  uint32_t models;
  uint64_t max_classes;
  uint64_t budget_ns; /* 0: none */
  uint64_t jobs;      /* -j: worker processes (1: the search in this one) */
  int estimate, exhaustive, outcomes, no_shrink, no_probes;
  const char *dir;
  int run_argc;
  char **run_argv;
} vf_opts_t;

typedef struct vf {
  vf_opts_t o;
  run_opts_t run;
  cs_pipe_keep_t keep;
  FILE *cap;      /* the runs' stdout and stderr */
  int saved[2];   /* the real ones */
  uint64_t t0;
  int tty;
  uint64_t *fp;   /* --outcomes: distinct final states */
  size_t nfp, capfp;
} vf_t;

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ options */

static int parse_models(const char *v, uint32_t *out)
{
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", v);
  *out = 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int m = cs_mm_parse(t);
    if (m < 0) {
      cs_cli_error("verify", "--memory-model '%s': expected a list of sc, fifo, "
                   "relaxed, a2a3", v);
      return -1;
    }
    *out |= 1u << m;
  }
  if (!*out) {
    cs_cli_error("verify", "--memory-model '%s': expected a list of sc, fifo, "
                 "relaxed, a2a3", v);
    return -1;
  }
  return 0;
}

/* verify's own options: 1 consumed, 0 run's, -1 bad (printed). */
static int own_opt(vf_opts_t *o, int argc, char **argv, int *i)
{
  const char *a = argv[*i];
  if (!strcmp(a, "--estimate"))
    return o->estimate = 1;
  if (!strcmp(a, "--exhaustive"))
    return o->exhaustive = 1;
  if (!strcmp(a, "--outcomes"))
    return o->outcomes = 1;
  if (!strcmp(a, "--no-shrink"))
    return o->no_shrink = 1;
  if (!strcmp(a, "--no-probes"))
    return o->no_probes = 1;
  static const char *const with_value[] = {"--memory-model", "--max-classes",
                                           "--budget", "-j", "-o"};
  int k = 0;
  while (k < 5 && strcmp(a, with_value[k]))
    k++;
  if (k == 5)
    return 0;
  if (*i + 1 >= argc) {
    cs_cli_error("verify", "%s needs a value (see collsim help verify)", a);
    return -1;
  }
  const char *v = argv[++*i];
  switch (k) {
  case 0: return parse_models(v, &o->models) < 0 ? -1 : 1;
  case 1: return cs_cli_u64("verify", a, v, 1, UINT64_MAX / 2, &o->max_classes) < 0 ? -1 : 1;
  case 2: return cs_cli_seconds("verify", a, v, 1e7, &o->budget_ns) < 0 ? -1 : 1;
  case 3: return cs_cli_u64("verify", a, v, 1, 64, &o->jobs) < 0 ? -1 : 1;
  default: o->dir = v; return 1;
  }
}

static int refused(const char *a)
{
  static const char *const own[] = {"--schedule", "--trace", "--output",
                                    "--input"};
  for (int k = 0; k < 4; k++) {
    size_t n = strlen(own[k]);
    if (!strncmp(a, own[k], n) && (a[n] == 0 || a[n] == '='))
      return 1;
  }
  return 0;
}

static int parse(int argc, char **argv, vf_opts_t *o)
{
  *o = (vf_opts_t){.models = 7, .dir = ".", .jobs = 1};
  o->run_argv = calloc((size_t)argc + 3, sizeof(char *));
  if (!o->run_argv)
    return -1;
  o->run_argv[o->run_argc++] = "collsim verify";
  o->run_argv[o->run_argc++] = "--iters"; /* one call unless asked */
  o->run_argv[o->run_argc++] = "1";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return 1;
    }
    int r = own_opt(o, argc, argv, &i);
    if (r < 0)
      return -1;
    if (r > 0)
      continue;
    if (refused(argv[i])) {
      cs_cli_error("verify", "%s is set by verify for every run: leave it out "
                   "(see collsim help verify)", argv[i]);
      return -1;
    }
    o->run_argv[o->run_argc++] = argv[i];
  }
  struct stat sb;
  if (cs_cli_output_dir("verify", o->dir) < 0)
    return -1;
  /* The names the counterexample is written to: never through a link
   * planted there (ours or not), and else by the output rule. */
  for (int k = 0; k < 2; k++) {
    char name[4300];
    snprintf(name, sizeof(name), "%s/verify-1%s.cstrace", o->dir,
             k ? ".min" : "");
    if (lstat(name, &sb) == 0 && S_ISLNK(sb.st_mode)) {
      cs_cli_error("verify", "-o %s: %s is a symbolic link: expected a new "
                   "name or a regular file of yours (the counterexample is "
                   "written there)", o->dir, name);
      return -1;
    }
    if (cs_cli_output_ok("verify", "-o", name, NULL, 0, 0) < 0)
      return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ output */

/* From here on the runs' output goes to the capture file. */
static void quiet(vf_t *v)
{
  fflush(stdout);
  fflush(stderr);
  if (ftruncate(fileno(v->cap), 0) == 0)
    rewind(v->cap);
  dup2(fileno(v->cap), 1);
  dup2(fileno(v->cap), 2);
}

static void loud(vf_t *v)
{
  fflush(stdout);
  fflush(stderr);
  dup2(v->saved[0], 1);
  dup2(v->saved[1], 2);
}

/* Shows what the runs printed, naming verify where they name run. */
static void show_captured(vf_t *v, FILE *to)
{
  char line[4096];
  fflush(v->cap);
  rewind(v->cap);
  while (fgets(line, sizeof(line), v->cap)) {
    char *p = strstr(line, "collsim run");
    if (p) {
      fprintf(to, "%.*scollsim verify%s", (int)(p - line), line, p + 11);
    } else {
      fputs(line, to);
    }
  }
}

static void progress(vf_t *v, cs_mm_t m, const cs_dpor_stats_t *st, int final)
{
  static uint64_t last;
  uint64_t t = now_ns();
  if (!v->tty || (!final && t - last < 250000000ull))
    return;
  last = t;
  double s = (double)(t - v->t0) / 1e9;
  dprintf(v->saved[1], "\rverify: %s: %llu classes, %llu executions, %.0f/s  %s",
          cs_mm_name(m), (unsigned long long)st->classes,
          (unsigned long long)st->executions,
          s > 0 ? (double)st->executions / s : 0.0, final ? "\r\033[K" : "");
}

/* ------------------------------------------------------------ one run */

/* One run under picker f. With --check (not for --estimate) a passing
 * run is checked too, as explore --check does: a built-in's run recorded
 * into memory on the kept world and checked there, no file
 * (cs_run_check_mem); a plug-in's (which keeps no world) through a
 * temporary trace (cs_run_checked). A finding makes it CS_EXIT_WRONG. */
static int run_with(vf_t *v, cs_mm_t m, cs_sched_pick_fn f, void *arg)
{
  v->run.sched = (cs_sched_cfg_t){.strategy = CS_SCHED_CALLBACK, .model = m,
                                  .pick_fn = f, .pick_arg = arg};
  v->run.schedule_str = "verify";
  v->run.model_set = 1;
  v->run.abort_reason = 0;
  int check = v->run.check && !v->o.estimate;
  quiet(v);
  int rc = !check ? cs_run_execute(&v->run)
           : v->run.coll ? cs_run_checked(&v->run) : cs_run_check_mem(&v->run);
  loud(v);
  if (rc != CS_EXIT_OK && rc != CS_EXIT_USAGE)
    cs_pipe_keep_close(&v->keep); /* a fresh world for the next */
  return rc;
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* Adds final state h to the set: 1 new, 0 known (or no room). */
static int add_outcome(vf_t *v, uint64_t h)
{
  for (size_t i = 0; i < v->nfp; i++)
    if (v->fp[i] == h)
      return 0;
  if (v->nfp == v->capfp) {
    size_t cap = v->capfp ? 2 * v->capfp : 64;
    uint64_t *n = realloc(v->fp, cap * sizeof(*n));
    if (!n)
      return 0;
    v->fp = n;
    v->capfp = cap;
  }
  v->fp[v->nfp++] = h;
  return 1;
}

/* --outcomes: the final state of the passing run just done (the kept
 * world): every window, every rank's result. Returns 1 when it is new,
 * *h its hash. */
static int note_outcome_h(vf_t *v, uint64_t *hp)
{
  const cs_world_t *w = &v->keep.world;
  if (!w->base)
    return 0;
  uint64_t h = 1469598103934665603ull;
  uint64_t res = v->run.cfg.count * cs_dtype_size(v->run.cfg.dtype);
  for (uint32_t r = 0; r < v->keep.nranks; r++) {
    h = fnv(h, cs_world_window(w, r), v->keep.layout.win_bytes);
    if (!v->run.coll)
      h = fnv(h, cs_world_output(w, r), res);
  }
  *hp = h;
  return add_outcome(v, h);
}

static void note_outcome(vf_t *v)
{
  uint64_t h;
  note_outcome_h(v, &h);
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void print_outcomes(vf_t *v, cs_mm_t m)
{
  qsort(v->fp, v->nfp, sizeof(*v->fp), cmp_u64);
  printf("outcomes %s: %zu:", cs_mm_name(m), v->nfp);
  for (size_t i = 0; i < v->nfp; i++)
    printf(" %016llx", (unsigned long long)v->fp[i]);
  printf("\n");
  v->nfp = 0;
}

/* ------------------------------------------------------------ verdicts */

/* The failing run of `choices` again, traced, its output shown (`which`:
 * where it was found); then shrunk. With --check the trace of a run that
 * passes is checked, and a finding is the counterexample, shrunk as a
 * failure is (shrink keeps the first finding as its signature). */
static int counterexample_at(vf_t *v, cs_mm_t m, const uint32_t *choices,
                             uint64_t n, const char *which, int probe)
{
  char path[4200], min[4300];
  snprintf(path, sizeof(path), "%s/verify-1.cstrace", v->o.dir);
  snprintf(min, sizeof(min), "%s/verify-1.min.cstrace", v->o.dir);
  cs_dpor_replay_t rp = {.choice = choices, .n = n};
  v->run.com.trace = path;
  v->run.sched = (cs_sched_cfg_t){.strategy = CS_SCHED_CALLBACK, .model = m,
                                  .pick_fn = cs_dpor_replay_pick,
                                  .pick_arg = &rp};
  if (probe)
    quiet(v); /* shown only if it fails again */
  int rc = cs_run_execute(&v->run), found = 0;
  v->run.com.trace = NULL;
  struct stat sb;
  if (v->run.check && rc == CS_EXIT_OK && stat(path, &sb) == 0) {
    printf("check:\n"); /* as collsim run --check words it */
    fflush(stdout);
    int ck = cs__check_path(path, 0, stdout);
    fflush(stdout);
    found = ck != CS_EXIT_OK;
    rc = !found ? rc : ck == CS_EXIT_WRONG ? CS_EXIT_WRONG : CS_EXIT_ABORTED;
  }
  if (probe) {
    loud(v);
    if (rc == CS_EXIT_OK || rc == CS_EXIT_USAGE) {
      remove(path); /* a probe whose failure does not repeat is no proof */
      return CS_EXIT_OK;
    }
    show_captured(v, stdout);
  }
  printf("counterexample: memory model %s, %s%s (%llu steps)\n  trace %s\n"
         "  reproduce: collsim replay %s\n", cs_mm_name(m), which,
         found ? ", a check finding on a run that passed" : "",
         (unsigned long long)rp.n, path, path);
  if (found)
    printf("  finding: collsim check %s\n", path);
  if (rc == CS_EXIT_OK)
    printf("  (the traced run passed%s: the failure did not repeat)\n",
           v->run.check ? " and its check found nothing" : "");
  fflush(stdout);
  if (!v->o.no_shrink && rc != CS_EXIT_OK) {
    cs__shrink_file(path, min, 600, 1, stdout);
  } else if (found) { /* --no-shrink: the finding's story as it is */
    cs__story_print(path, NULL, stdout);
    fflush(stdout);
  }
  return CS_EXIT_WRONG;
}

static int counterexample(vf_t *v, cs_mm_t m, const cs_dpor_t *x, int blocked)
{
  uint64_t n;
  const uint32_t *choices = cs_dpor_choices(x, &n);
  cs_dpor_stats_t st = cs_dpor_stats(x);
  char which[128];
  if (blocked) /* a real execution, redundant for the search */
    snprintf(which, sizeof(which), "sleep-blocked execution %llu (after %llu "
             "classes)", (unsigned long long)st.executions,
             (unsigned long long)st.classes);
  else
    snprintf(which, sizeof(which), "class %llu (execution %llu)",
             (unsigned long long)st.classes, (unsigned long long)st.executions);
  return counterexample_at(v, m, choices, n, which, 0);
}

/* ------------------------------------------------------------ probes */

/* A random schedule (or, latest set, the latest strategy's: ranks run
 * while any can, posted ops land only when forced, notifies first) whose
 * choices are kept, to run again if it fails. */
typedef struct probe_rec {
  uint64_t  seed;
  uint32_t *choice;
  uint64_t  n, cap;
  int       oom, latest;
} probe_rec_t;

static uint32_t latest_choice(const cs_sched_view_t *v)
{
  if (v->en[0].op < 0)
    return 0;
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].op >= 0 && v->en[i].rec.round == CS_EV_NOTIFY)
      return i;
  return 0;
}

static int64_t probe_rec_pick(const cs_sched_view_t *v, void *arg)
{
  probe_rec_t *p = arg;
  uint32_t k = p->latest ? latest_choice(v)
                         : (uint32_t)(cs_splitmix64(&p->seed) % v->nenabled);
  if (p->n == p->cap) {
    uint64_t cap = p->cap ? 2 * p->cap : 256;
    uint32_t *c = realloc(p->choice, cap * sizeof(*c));
    if (!c) {
      p->oom = 1;
      return k; /* the run goes on; it cannot be shown again */
    }
    p->choice = c;
    p->cap = cap;
  }
  p->choice[p->n++] = k;
  return k;
}

/* Random schedules under m before the search (docs/verify.md, "Probes"):
 * a failure among them is a counterexample like any other, found without
 * waiting for the search to reach its corner of the tree (the search
 * visits the deepest choices first, and under a2a3, which it does not
 * reduce, a failure near the root can lie beyond any budget). Returns
 * the exit code: CS_EXIT_OK when every probe passed. */
static int probes(vf_t *v, cs_mm_t m)
{
  enum { PROBES = 16 };
  int code = CS_EXIT_OK;
  probe_rec_t p = {0};
  /* k = -1: the latest schedule first (explore's portfolio starts with
   * it too): a notify that overtakes its data, at once */
  for (int k = -1; k < PROBES && code == CS_EXIT_OK; k++) {
    if (cs_cli_stop_pending() ||
        (v->o.budget_ns && now_ns() - v->t0 >= v->o.budget_ns))
      break; /* the search says so */
    uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(k + 1);
    p.seed = seed;
    p.latest = k < 0;
    p.n = 0;
    p.oom = 0;
    int rc = run_with(v, m, probe_rec_pick, &p);
    if (rc == CS_EXIT_USAGE) {
      show_captured(v, stderr);
      code = rc;
    } else if (rc != CS_EXIT_OK && v->run.abort_reason == CS_ABORT_SIGNAL) {
      /* the launcher took the signal: it is no longer pending */
      printf("interrupted under %s after 0 classes (0 executions), during "
             "the probes; not verified\n", cs_mm_name(m));
      code = CS_EXIT_ABORTED;
    } else if (rc != CS_EXIT_OK && v->run.abort_reason != CS_ABORT_SIGNAL &&
               !p.oom) {
      char which[96];
      if (k < 0)
        snprintf(which, sizeof(which), "the latest-schedule probe before "
                 "the search");
      else
        snprintf(which, sizeof(which), "random probe %d of %d before the "
                 "search", k + 1, PROBES);
      code = counterexample_at(v, m, p.choice, p.n, which, 1);
    }
  }
  free(p.choice);
  return code;
}

typedef struct probe {
  uint64_t seed;
  double   size; /* product of the widths */
} probe_t;

static int64_t probe_pick(const cs_sched_view_t *v, void *arg)
{
  probe_t *p = arg;
  p->size *= v->nenabled;
  return (int64_t)(cs_splitmix64(&p->seed) % v->nenabled);
}

/* Knuth's estimator: the mean over random runs of the product of the
 * number of choices along each; its spread as the standard error. */
static int estimate(vf_t *v, cs_mm_t m)
{
  enum { PROBES = 20 };
  double sum = 0, sum2 = 0, lo = INFINITY, hi = 0;
  uint64_t t = now_ns();
  for (int k = 0; k < PROBES; k++) {
    probe_t p = {.seed = 0x5eed0000u + (uint64_t)k, .size = 1};
    int rc = run_with(v, m, probe_pick, &p);
    if (rc == CS_EXIT_USAGE) {
      show_captured(v, stderr);
      return rc;
    }
    if (rc == CS_EXIT_OK && v->o.outcomes)
      note_outcome(v);
    sum += p.size;
    sum2 += p.size * p.size;
    lo = p.size < lo ? p.size : lo;
    hi = p.size > hi ? p.size : hi;
  }
  double mean = sum / PROBES, var = sum2 / PROBES - mean * mean;
  double se = sqrt(var > 0 ? var / PROBES : 0);
  double per = (double)(now_ns() - t) / 1e9 / PROBES;
  printf("estimate %s: about %.3g schedules (Knuth, %d probes: +- %.2g "
         "standard error, min %.3g, max %.3g); %.3f s per run, so the brute "
         "force would take about %.3g s; the classes are at most that many\n",
         cs_mm_name(m), mean, PROBES, se, lo, hi, per, mean * per);
  if (v->o.outcomes)
    print_outcomes(v, m);
  return CS_EXIT_OK;
}

static int interrupted(vf_t *v, cs_mm_t m, const cs_dpor_t *x)
{
  cs_dpor_stats_t st = cs_dpor_stats(x);
  (void)v;
  printf("interrupted under %s after %llu classes (%llu executions); not "
         "verified\n", cs_mm_name(m), (unsigned long long)st.classes,
         (unsigned long long)st.executions);
  return CS_EXIT_ABORTED;
}

static void std_taken(void);

/* ------------------------------------------------------------ -j */

/* Messages between the coordinator and its workers (docs/verify.md,
 * "Parallel"): a header, then len bytes. */
enum { MSG_TASK = 1, MSG_RUN, MSG_DONE, MSG_FAIL, MSG_OUT, MSG_ERR };

typedef struct msg {
  uint32_t type;
  uint32_t flag; /* MSG_RUN, MSG_FAIL: CS_DPOR_CLASS or CS_DPOR_BLOCKED */
  uint64_t len;
} msg_t;

static int send_msg(int fd, uint32_t type, uint32_t flag, const void *p,
                    size_t n)
{
  msg_t h = {.type = type, .flag = flag, .len = n};
  return cs_write_full(fd, &h, sizeof(h)) < 0 || (n && cs_write_full(fd, p, n) < 0)
         ? -1 : 0;
}

/* A run's message: its share of the worker's subtree (cs_dpor_stats_t),
 * then the races it reports above the subtree. */
static int send_run(int fd, uint32_t flag, double share, const void *rep,
                    size_t n)
{
  msg_t h = {.type = MSG_RUN, .flag = flag, .len = sizeof(share) + n};
  return cs_write_full(fd, &h, sizeof(h)) < 0 ||
         cs_write_full(fd, &share, sizeof(share)) < 0 ||
         (n && cs_write_full(fd, rep, n) < 0) ? -1 : 0;
}

/* A message into *h and a malloc'd *body (NULL when empty). */
static int recv_msg(int fd, msg_t *h, void **body)
{
  *body = NULL;
  if (cs_read_full(fd, h, sizeof(*h)) != (ssize_t)sizeof(*h) ||
      h->len > (1ull << 32))
    return -1;
  if (!h->len)
    return 0;
  *body = malloc(h->len);
  if (!*body || cs_read_full(fd, *body, h->len) != (ssize_t)h->len) {
    free(*body);
    *body = NULL;
    return -1;
  }
  return 0;
}

/* A worker: a task's subtree at a time, on a kept world of its own, each
 * run's verdict and races above the subtree sent back; stops at a
 * failure, at a stop signal (the coordinator's SIGTERM) or when the
 * coordinator closes its end. Never returns. */
static void worker(vf_t *v, cs_mm_t m, int in, int out)
{
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  v->tty = 0;
  v->nfp = 0;
  std_taken();
  v->cap = tmpfile(); /* its own: the coordinator's is shared otherwise */
  int mode = v->o.exhaustive ? CS_DPOR_EXHAUSTIVE : CS_DPOR_REDUCE, stop = 0;
  if (!v->cap) {
    send_msg(out, MSG_ERR, 0, "no temporary file", 17);
    stop = 1;
  }
  while (!stop) {
    msg_t h;
    void *task;
    cs_dpor_t *x;
    if (recv_msg(in, &h, &task) < 0)
      break;
    int rc = cs_dpor_create_sub(&x, m, (cs_dpor_mode_t)mode, task, h.len);
    free(task);
    if (rc < 0) {
      send_msg(out, MSG_ERR, 0, "a task it could not read", 24);
      break;
    }
    double shared = 0; /* the subtree's share already reported */
    for (int tries = 0; !stop && cs_dpor_next(x) == 1;) {
      if (cs_cli_stop_pending())
        stop = 1;
      if (stop)
        break;
      rc = run_with(v, m, cs_dpor_pick, x);
      const char *why;
      int d = cs_dpor_done(x, &why);
      if (rc != CS_EXIT_OK && v->run.abort_reason == CS_ABORT_SIGNAL) {
        stop = 1;
        break;
      }
      if (d == -EAGAIN && ++tries < 5) {
        cs_dpor_retry(x);
        continue;
      }
      tries = 0;
      size_t rl;
      const void *rep = cs_dpor_reports(x, &rl);
      double share = cs_dpor_stats(x).share - shared;
      shared += share;
      if (d < 0) {
        send_msg(out, MSG_ERR, 0, why, strlen(why));
        stop = 1;
      } else if (rc == CS_EXIT_USAGE) {
        send_msg(out, MSG_ERR, 0, "a run was refused", 17);
        stop = 1;
      } else if (rc != CS_EXIT_OK) {
        uint64_t n;
        const uint32_t *c = cs_dpor_choices(x, &n);
        send_run(out, (uint32_t)d, share, rep, rl);
        send_msg(out, MSG_FAIL, (uint32_t)d, c, n * sizeof(*c));
        stop = 1;
      } else {
        uint64_t hh;
        if (send_run(out, (uint32_t)d, share, rep, rl) < 0)
          stop = 1;
        if (v->o.outcomes && note_outcome_h(v, &hh))
          send_msg(out, MSG_OUT, 0, &hh, sizeof(hh));
      }
    }
    cs_dpor_destroy(x);
    if (!stop && send_msg(out, MSG_DONE, 0, NULL, 0) < 0)
      break;
  }
  cs_pipe_keep_close(&v->keep);
  fclose(v->cap);
  _exit(0);
}

typedef struct wk {
  pid_t    pid;
  int      to, from; /* the coordinator's ends */
  int      busy;
  uint64_t id;       /* the task's node */
  double   share;    /* the task's share of the tree */
} wk_t;

/* Both ends of a pipe above the standard descriptors (verify may be
 * started with 0, 1 or 2 closed, and a run takes those over). */
static int pipe_hi(int p[2])
{
  if (pipe2(p, O_CLOEXEC) < 0)
    return -1;
  for (int i = 0; i < 2; i++) {
    if (p[i] > 2)
      continue;
    int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
      close(p[0]);
      close(p[1]);
      return -1;
    }
    close(p[i]);
    p[i] = fd;
  }
  return 0;
}

static int spawn(vf_t *v, cs_mm_t m, wk_t *w, uint32_t n)
{
  fflush(stdout);
  fflush(stderr);
  for (uint32_t k = 0; k < n; k++) {
    int a[2], b[2];
    if (pipe_hi(a) < 0)
      return -1;
    if (pipe_hi(b) < 0) {
      close(a[0]);
      close(a[1]);
      return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
      close(a[0]); close(a[1]); close(b[0]); close(b[1]);
      return -1;
    }
    if (pid == 0) {
      for (uint32_t q = 0; q < k; q++) {
        close(w[q].to);
        close(w[q].from);
      }
      close(a[1]);
      close(b[0]);
      worker(v, m, a[0], b[1]);
    }
    close(a[0]);
    close(b[1]);
    w[k] = (wk_t){.pid = pid, .to = a[1], .from = b[0]};
  }
  return 0;
}

/* Ends the workers: their task pipes closed (they end after the run in
 * progress), a SIGTERM first when `now` (it aborts that run), reaped. */
static void reap(wk_t *w, uint32_t n, int now)
{
  for (uint32_t k = 0; k < n; k++) {
    if (now)
      kill(w[k].pid, SIGTERM);
    close(w[k].to);
  }
  for (uint32_t k = 0; k < n; k++) {
    while (waitpid(w[k].pid, NULL, 0) < 0 && errno == EINTR)
      ;
    close(w[k].from);
  }
}

static void split_progress(vf_t *v, cs_mm_t m, const cs_dpor_stats_t *st,
                           uint64_t tasks, uint32_t busy, int final)
{
  static uint64_t last;
  uint64_t t = now_ns();
  if (!v->tty || (!final && t - last < 250000000ull))
    return;
  last = t;
  double s = (double)(t - v->t0) / 1e9;
  dprintf(v->saved[1], "\rverify: %s: %llu classes, %llu executions, %.0f/s, "
          "%llu subtrees, %u of %llu workers busy  %s", cs_mm_name(m),
          (unsigned long long)st->classes, (unsigned long long)st->executions,
          s > 0 ? (double)st->executions / s : 0.0, (unsigned long long)tasks,
          busy, (unsigned long long)v->o.jobs, final ? "\r\033[K" : "");
}

/* The coordinator's state under -j. */
typedef struct split {
  wk_t       w[64];
  uint32_t   n, busy;
  uint64_t   tasks;
  uint32_t  *fail, failflag; /* the failing run's choices */
  uint64_t   nfail, fail_at;
  const char *err;
  char       errbuf[256];
} split_t;

/* Every idle worker gets the deepest open branch, while there is one. */
static void hand_out(split_t *p, cs_dpor_t *x)
{
  for (uint32_t k = 0; k < p->n && !p->err; k++) {
    if (p->w[k].busy)
      continue;
    void *buf;
    size_t len;
    int t = cs_dpor_task_take(x, &buf, &len, &p->w[k].id);
    if (t < 0 && t != -1)
      p->err = "out of memory";
    if (t != 1)
      break;
    p->w[k].share = cs_dpor_task_share(x, p->w[k].id);
    if (send_msg(p->w[k].to, MSG_TASK, 0, buf, len) < 0)
      p->err = "a worker ended unexpectedly";
    free(buf);
    p->w[k].busy = 1;
    p->busy++;
    p->tasks++;
  }
}

/* One message of worker k. */
static void take_msg(vf_t *v, split_t *p, uint32_t k, cs_dpor_t *x,
                     cs_dpor_stats_t *st)
{
  msg_t h;
  void *body;
  if (recv_msg(p->w[k].from, &h, &body) < 0) {
    p->err = "a worker ended unexpectedly";
    return;
  }
  switch (h.type) {
  case MSG_RUN: {
    double share;
    if (h.len < sizeof(share)) {
      p->err = "a worker sent a run without its share";
      break;
    }
    memcpy(&share, body, sizeof(share));
    st->share += p->w[k].share * share;
    st->executions++;
    if (h.flag == CS_DPOR_BLOCKED)
      st->blocked++;
    else
      st->classes++;
    if (cs_dpor_apply(x, (char *)body + sizeof(share), h.len - sizeof(share)) < 0)
      p->err = "a worker reported a race the coordinator does not hold";
    break;
  }
  case MSG_DONE:
    cs_dpor_task_done(x, p->w[k].id);
    p->w[k].busy = 0;
    p->busy--;
    break;
  case MSG_OUT:
    if (h.len == sizeof(uint64_t))
      add_outcome(v, *(uint64_t *)body);
    break;
  case MSG_FAIL:
    p->fail = body;
    body = NULL;
    p->nfail = h.len / sizeof(uint32_t);
    p->failflag = h.flag;
    p->fail_at = st->executions;
    break;
  default:
    snprintf(p->errbuf, sizeof(p->errbuf), "a worker: %.*s",
             (int)(h.len < 200 ? h.len : 200), body ? (char *)body : "?");
    p->err = p->errbuf;
  }
  free(body);
}

/* The coordinator's loop: 1 every branch explored, 0 stopped early (the
 * budget, a stop, a failure or an error; *code set for a stop). */
static int coordinate(vf_t *v, cs_mm_t m, split_t *p, cs_dpor_t *x,
                      cs_dpor_stats_t *st, int *incomplete, int *code)
{
  while (!p->fail && !p->err) {
    hand_out(p, x);
    if (!p->busy)
      return !p->err;
    if ((v->o.budget_ns && now_ns() - v->t0 >= v->o.budget_ns) ||
        (v->o.max_classes && st->classes >= v->o.max_classes)) {
      *incomplete = 1;
      return 0;
    }
    if (cs_cli_stop_pending()) {
      printf("interrupted under %s after %llu classes (%llu executions); not "
             "verified\n", cs_mm_name(m), (unsigned long long)st->classes,
             (unsigned long long)st->executions);
      *code = CS_EXIT_ABORTED;
      return 0;
    }
    struct pollfd pf[64];
    for (uint32_t k = 0; k < p->n; k++)
      pf[k] = (struct pollfd){.fd = p->w[k].busy ? p->w[k].from : -1,
                              .events = POLLIN};
    if (poll(pf, p->n, 100) < 0 && errno != EINTR)
      p->err = "poll failed";
    for (uint32_t k = 0; k < p->n && !p->err && !p->fail; k++)
      if (pf[k].revents & (POLLIN | POLLHUP | POLLERR))
        take_msg(v, p, k, x, st);
    split_progress(v, m, st, p->tasks, p->busy, 0);
  }
  return 0;
}

/* The search under m split across -j workers (docs/verify.md,
 * "Parallel"), after x's first run: every branch of that run's path a
 * task, handed to an idle worker, deepest first; the races a worker finds
 * above its subtree added to the path (new tasks); stops at the first
 * failure, the budget or a stop signal. */
static int split_search(vf_t *v, cs_mm_t m, cs_dpor_t *x, cs_dpor_stats_t *st,
                        int *incomplete)
{
  static split_t p;
  memset(&p, 0, sizeof(p));
  p.n = (uint32_t)v->o.jobs;
  *st = cs_dpor_stats(x);
  cs_pipe_keep_close(&v->keep); /* the workers make their own */
  signal(SIGPIPE, SIG_IGN); /* a worker gone is an error, not a death */
  if (spawn(v, m, p.w, p.n) < 0) {
    cs_cli_error("verify", "-j %u: cannot start a worker: %s", p.n,
                 strerror(errno));
    return CS_EXIT_ABORTED;
  }
  int code = CS_EXIT_OK;
  int all = coordinate(v, m, &p, x, st, incomplete, &code);
  reap(p.w, p.n, !all);
  split_progress(v, m, st, p.tasks, p.busy, 1);
  if (p.err) {
    cs_cli_error("verify", "-j %u: %s under %s", p.n, p.err, cs_mm_name(m));
    code = CS_EXIT_ABORTED;
  } else if (p.fail) {
    char which[128];
    if (p.failflag == CS_DPOR_BLOCKED)
      snprintf(which, sizeof(which), "sleep-blocked execution %llu (after "
               "%llu classes, -j %u)", (unsigned long long)p.fail_at,
               (unsigned long long)st->classes, p.n);
    else
      snprintf(which, sizeof(which), "class %llu (execution %llu, -j %u)",
               (unsigned long long)st->classes,
               (unsigned long long)p.fail_at, p.n);
    code = counterexample_at(v, m, p.fail, p.nfail, which, 0);
  }
  free(p.fail);
  return code;
}

/* The search under model m. Returns the exit code; *st its counts. */
static int search(vf_t *v, cs_mm_t m, cs_dpor_stats_t *st, int *incomplete)
{
  cs_dpor_t *x;
  int mode = v->o.exhaustive ? CS_DPOR_EXHAUSTIVE : CS_DPOR_REDUCE;
  int probed = v->o.no_probes ? CS_EXIT_OK : probes(v, m);
  if (probed != CS_EXIT_OK)
    return probed;
  if (cs_dpor_create(&x, m, (cs_dpor_mode_t)mode) < 0)
    return CS_EXIT_ABORTED;
  int code = CS_EXIT_OK, tries = 0;
  while (code == CS_EXIT_OK && cs_dpor_next(x) == 1) {
    if (v->o.jobs > 1 && cs_dpor_stats(x).executions) {
      code = split_search(v, m, x, st, incomplete);
      cs_dpor_destroy(x);
      return code;
    }
    *st = cs_dpor_stats(x);
    if ((v->o.budget_ns && now_ns() - v->t0 >= v->o.budget_ns) ||
        (v->o.max_classes && st->classes >= v->o.max_classes)) {
      *incomplete = 1;
      break;
    }
    if (cs_cli_stop_pending()) {
      code = interrupted(v, m, x);
      break;
    }
    int rc = run_with(v, m, cs_dpor_pick, x);
    const char *why;
    int d = cs_dpor_done(x, &why);
    if (d != -EINVAL && rc != CS_EXIT_OK &&
        v->run.abort_reason == CS_ABORT_SIGNAL) {
      code = interrupted(v, m, x); /* the launcher took the signal */
      break;
    }
    if (d == -EAGAIN && ++tries < 5) { /* docs/verify.md: a lost step */
      cs_dpor_retry(x);
      continue;
    }
    tries = 0;
    if (d < 0) {
      cs_cli_error("verify", "%s under %s", why, cs_mm_name(m));
      code = CS_EXIT_ABORTED;
    } else if (rc == CS_EXIT_USAGE) {
      show_captured(v, stderr);
      code = CS_EXIT_USAGE;
    } else if (rc != CS_EXIT_OK) {
      code = counterexample(v, m, x, d == CS_DPOR_BLOCKED);
    } else if (v->o.outcomes) {
      note_outcome(v);
    }
    *st = cs_dpor_stats(x);
    progress(v, m, st, 0);
  }
  *st = cs_dpor_stats(x);
  progress(v, m, st, 1);
  cs_dpor_destroy(x);
  return code;
}

static void config_words(const vf_t *v, char *buf, size_t n)
{
  const run_opts_t *r = &v->run;
  int k = 0;
  for (int i = 3; i < v->o.run_argc && k < (int)n; i++)
    k += snprintf(buf + k, n - (size_t)k, "%s%s", i > 3 ? " " : "",
                  v->o.run_argv[i]);
  if (v->o.run_argc <= 3)
    snprintf(buf, n, "%u ranks x %llu", r->cfg.nranks,
             (unsigned long long)r->cfg.count);
}

/* Every model in turn; the verdict. */
/* How far an incomplete search got (docs/verify.md): the share of the
 * tree its runs stand for, and the classes that share makes in all. */
static void print_share(const cs_dpor_stats_t *st)
{
  double f = st->share < 1.0 ? st->share : 1.0;
  if (!(f > 0) || !st->classes)
    return;
  printf("  explored: about %.3g%% of the tree as its branches are known "
         "now, which makes about %.3g classes in all (a rough figure, not a "
         "bound: docs/verify.md)\n", 100.0 * f,
         (double)st->classes / f);
}

static int verify_all(vf_t *v)
{
  uint64_t classes = 0, execs = 0;
  char models[64] = "", cfg[512];
  config_words(v, cfg, sizeof(cfg));
  for (uint32_t m = 0; m < CS_MM_COUNT; m++) {
    if (!(v->o.models & (1u << m)))
      continue;
    if (v->o.estimate) {
      int rc = estimate(v, (cs_mm_t)m);
      if (rc != CS_EXIT_OK)
        return rc;
      continue;
    }
    cs_dpor_stats_t st = {0};
    int incomplete = 0;
    uint64_t t = now_ns();
    int rc = search(v, (cs_mm_t)m, &st, &incomplete);
    if (rc != CS_EXIT_OK)
      return rc;
    printf("  %s: %llu classes, %llu executions (%llu sleep-blocked), %.1f s\n",
           cs_mm_name((cs_mm_t)m), (unsigned long long)st.classes,
           (unsigned long long)st.executions, (unsigned long long)st.blocked,
           (double)(now_ns() - t) / 1e9);
    if (v->o.outcomes)
      print_outcomes(v, (cs_mm_t)m);
    classes += st.classes;
    execs += st.executions;
    if (incomplete) {
      printf("incomplete: %s ran out under %s after %llu classes (%llu "
             "executions); not verified\n",
             v->o.budget_ns && now_ns() - v->t0 >= v->o.budget_ns
                 ? "the budget" : "--max-classes",
             cs_mm_name((cs_mm_t)m), (unsigned long long)st.classes,
             (unsigned long long)st.executions);
      print_share(&st);
      return CS_EXIT_INCOMPLETE;
    }
    snprintf(models + strlen(models), sizeof(models) - strlen(models), "%s%s",
             models[0] ? "," : "", cs_mm_name((cs_mm_t)m));
  }
  if (!v->o.estimate)
    printf("verified: %s: %llu classes, %llu executions (%.2f per class), "
           "%.1f s, models %s%s\n", cfg, (unsigned long long)classes,
           (unsigned long long)execs,
           classes ? (double)execs / (double)classes : 0.0,
           (double)(now_ns() - v->t0) / 1e9, models,
           v->o.exhaustive ? " (exhaustive)" : "");
  return CS_EXIT_OK;
}

/* The run options, parsed as run parses them, its messages naming
 * verify. Returns cs_run_parse's code. */
static int parse_run(vf_t *v)
{
  cs_cli_args(v->o.run_argc, v->o.run_argv);
  return cs_run_parse_as("verify", v->o.run_argc, v->o.run_argv, &v->run);
}

/* 0, 1 and 2 taken (by /dev/null when closed), so that no file of
 * verify's is one of them. */
static void std_taken(void)
{
  for (int fd = 0; fd >= 0 && fd < 3;)
    if ((fd = open("/dev/null", O_RDWR | O_CLOEXEC)) > 2)
      close(fd);
}

int cs_cmd_verify(int argc, char **argv)
{
  vf_t v = {.t0 = now_ns(), .tty = isatty(2)};
  std_taken();
  int rc = parse(argc, argv, &v.o);
  if (rc != 0) {
    free(v.o.run_argv);
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  }
  v.cap = tmpfile();
  v.saved[0] = dup(1);
  v.saved[1] = dup(2);
  if (!v.cap || v.saved[0] < 0 || v.saved[1] < 0) {
    cs_cli_error("verify", "cannot make a temporary file: %s", strerror(errno));
    rc = CS_EXIT_ABORTED;
  } else if ((cs_run_plug_fd(v.saved[1]), rc = parse_run(&v)) != 0) {
    rc = rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  } else {
    v.run.cmd = "verify";
    v.run.keep = &v.keep;
    cs_cli_block_stops();
    rc = verify_all(&v);
  }
  cs_run_plug_fd(2);
  cs_pipe_keep_close(&v.keep);
  if (v.cap)
    fclose(v.cap);
  close(v.saved[0]);
  close(v.saved[1]);
  free(v.fp);
  free(v.o.run_argv);
  return rc;
}
