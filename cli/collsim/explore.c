/*
 * explore.c - `collsim explore`: many controlled schedules of one run
 * configuration, side by side, stopping at the first failure (or, with
 * --keep-going, counting the distinct ones).
 *
 * Each schedule is one `collsim run` of the same configuration under a
 * controlled schedule and memory model, started as a child process of
 * this binary with its own trace file, so a schedule that crashes, hangs
 * or corrupts memory can only end its own run; the parent only counts and
 * keeps the trace of a failure. The portfolio interleaves `latest` (once
 * per memory model), `pct` at depths 1-3 with STEPS = the measured length
 * of a first run, and uniform `random`, round by round with a new seed, so
 * that a defect any of them finds shows early. Owns: the portfolio, the
 * children, failure signatures, the progress line and the summary. Does
 * not own running a schedule (cli/collsim/run.c) or reading traces (sim/trace/).
 * Called from cli/collsim/main.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../sim/sched.h"
#include "../../sim/trace.h"
#include "cli.h"
#include "temp.h"
#include "run.h"
#include "shrink.h"
#include "../../run/signature.h"

extern char **environ;

static const char usage[] =
    "usage: collsim explore [run options] [--schedules K] [--time SECONDS]\n"
    "                       [--strategy S,...] [--memory-model M,...] [-j N]\n"
    "                       [--check] [--keep-going] [--batch K] [--no-shrink]\n"
    "                       [-o DIR]\n"
    "\n"
    "Runs many controlled schedules of one configuration (every option of\n"
    "collsim run, --bug included, except --schedule, --memory-model and\n"
    "--trace, which explore sets) and stops at the first failure: a wrong\n"
    "result, signals not at their final values, a deadlock or hang, an\n"
    "out-of-slot fault, a rank crash, or with --check a checker finding.\n"
    "It writes that run's trace to DIR and prints the outcome, the schedule\n"
    "and the collsim replay command that reproduces it.\n"
    "\n"
    "  --schedules K     schedules to run at most (default 1000)\n"
    "  --time SECONDS    stop starting schedules after this long (default: no\n"
    "                    limit; a batch already started runs to its end)\n"
    "  --strategy S,...  from latest, pct, random (default all three): latest\n"
    "                    once per memory model; pct at depths 1, 2 and 3 with\n"
    "                    STEPS = the length of a first run; random; a new seed\n"
    "                    every round\n"
    "  --memory-model M,...  from sc, fifo, relaxed, a2a3 (default all four)\n"
    "  --explore-seed S  the portfolio's seeds: 0 (the default) seeds round r\n"
    "                    (from 1) with r; any other S gives every round a seed\n"
    "                    of its own (latest has no seed: its schedules stay)\n"
    "  -j N              schedules at a time (default: the online CPUs), each\n"
    "                    child process started on a CPU of its own in turn\n"
    "  --check           also check every schedule's trace for ordering defects\n"
    "                    (as collsim check does): a finding on a run that\n"
    "                    otherwise passed is a failure, named by the finding's\n"
    "                    kind and its first pair of events (ranks, positions)\n"
    "  --keep-going      do not stop at a failure: count distinct failures\n"
    "                    (by outcome and first bad rank and position) and keep\n"
    "                    the first trace of each\n"
    "  --batch K         schedules per child process (default 128, at most an\n"
    "                    even share of what is left): a child runs them in\n"
    "                    turn untraced, over one world and one set of rank\n"
    "                    processes while they pass, and runs a failing one\n"
    "                    again, in a fresh world, with its trace; 1: one\n"
    "                    collsim run per schedule\n"
    "  -o DIR            where failing traces go (default .): explore-N.cstrace,\n"
    "                    the first N whose .cstrace and .min.cstrace names are\n"
    "                    both free: never replacing a file or following a link;\n"
    "                    DIR itself not through another user's link\n"
    "  --no-shrink       do not shrink failures (by default the first, and with\n"
    "                    --keep-going the first of every signature, is cut\n"
    "                    down as collsim shrink does, to explore-N.min.cstrace,\n"
    "                    with its replay command and its story)\n"
    "\n"
    "Without --iters, each schedule runs one call (two for defects that show\n"
    "on a second call). The run options go to every schedule as given,\n"
    "--signals single-use and --minmax M included (single-use: one call per\n"
    "world, so no defect that needs two). A progress line goes to stderr while it is a\n"
    "terminal; a summary line always goes to stdout.\n"
    "Exit status: 0 no failure found, 1 a failure found, 2 bad usage,\n"
    "3 interrupted (also while shrinking), 4 a child process was ended by a\n"
    "signal not sent through explore (e.g. SIGKILL from outside): the search\n"
    "stops, that batch counts as no failure, no shrinking.\n";

enum { ST_LATEST = 1, ST_PCT = 2, ST_RANDOM = 4 };
#define MAX_SIGS 64
#define MAX_JOBS 64
#define MAX_BATCH 256
#define EX_EXIT_LOST 4 /* a child ended by a signal: the search is cut short */

typedef struct ex_opts {
  char   **run_argv; /* the run options, passed through */
  int      run_argc;
  int      iters_given;
  uint64_t schedules;
  uint64_t time_ns;     /* 0: no limit */
  uint32_t strategies;  /* ST_* */
  uint32_t models;      /* bit m: cs_mm_t m */
  uint32_t jobs;
  uint32_t batch;       /* schedules per child process */
  uint64_t seed;        /* --explore-seed: 0 = seeds 1, 2, 3, ... */
  int      keep_going;
  int      check;       /* --check: a checker finding is a failure */
  int      no_shrink;
  const char *dir;
} ex_opts_t;

/* One schedule of the portfolio. */
typedef struct ex_sched {
  char sched[96];
  char model[8];
} ex_sched_t;

/* A child running schedules index .. index+count-1 of the portfolio. */
typedef struct ex_slot {
  pid_t      pid;      /* 0: free */
  int        out;      /* memfd holding its stdout and stderr */
  uint64_t   index;    /* the first one's schedule number, from 1 */
  uint32_t   count;    /* 1: a `collsim run`; more: a batch child */
  ex_sched_t s;        /* the failing one, once known (finished) */
  ex_sched_t items[MAX_BATCH];
  char       trace[640];
} ex_slot_t;

/* Portfolio positions [from, to) handed out once but never run: the rest
 * of a batch that stopped at a failure, run again with --keep-going. */
typedef struct ex_range {
  uint64_t from, to;
} ex_range_t;

typedef struct ex_sig {
  char     what[200]; /* outcome kind and first bad rank/position */
  uint64_t count;
  char     trace[640]; /* kept trace of its first occurrence */
  ex_sched_t s;
  uint64_t index;
} ex_sig_t;

typedef struct explore {
  ex_opts_t o;
  uint64_t  steps;    /* pct STEPS: schedule steps of the first run */
  uint64_t  started, done, failures;
  uint64_t  t0;
  int       stop;     /* no more schedules: a failure, the time, a signal */
  int       signo;    /* SIGINT/SIGTERM that stopped it */
  int       lost;     /* a child ended by a signal, not by its run */
  int       plug;     /* the collective crashed in code collsim runs */
  ex_slot_t slot[MAX_JOBS];
  ex_sig_t  sig[MAX_SIGS];
  uint32_t  nsig;
  ex_range_t redo[MAX_JOBS];
  uint32_t  nredo;
  sigset_t  set, old;
} explore_t;

/* ------------------------------------------------------------ options */

/* "a,b,c" against names[]; sets bit i for names[i]. */
static int parse_list(const char *opt, const char *s, const char *const *names,
                      uint32_t n, const uint32_t *bits, uint32_t *out)
{
  char buf[128], all[64] = "";
  for (uint32_t i = 0; i < n; i++)
    snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s",
             i ? ", " : "", names[i]);
  snprintf(buf, sizeof(buf), "%s", s);
  *out = 0;
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    uint32_t i = 0;
    while (i < n && strcmp(t, names[i]))
      i++;
    if (i == n) {
      cs_cli_error("explore", "%s '%s': '%s' is not one of %s", opt, s, t, all);
      return -1;
    }
    *out |= bits[i];
  }
  if (!*out) {
    cs_cli_error("explore", "%s '%s': expected a comma-separated list of %s",
                 opt, s, all);
    return -1;
  }
  return 0;
}

/* explore's own options; returns 1 if argv[*i] was one (consumed), 0 if it
 * belongs to run, -1 on a bad value (printed). */
static int own_opt(ex_opts_t *o, int argc, char **argv, int *i)
{
  static const char *const st[] = {"latest", "pct", "random"};
  static const uint32_t stb[] = {ST_LATEST, ST_PCT, ST_RANDOM};
  const char *mm[CS_MM_COUNT];
  uint32_t mmb[CS_MM_COUNT];
  for (uint32_t m = 0; m < CS_MM_COUNT; m++) {
    mm[m] = cs_mm_name((cs_mm_t)m);
    mmb[m] = 1u << m;
  }
  const char *a = argv[*i];
  static const char *const with_value[] = {"--schedules", "--time", "--strategy",
                                           "--memory-model", "-j", "-o", "--batch",
                                           "--explore-seed"};
  int known = -1;
  for (int k = 0; k < 8; k++)
    if (!strcmp(a, with_value[k]))
      known = k;
  if (!strcmp(a, "--keep-going"))
    return o->keep_going = 1;
  if (!strcmp(a, "--check"))
    return o->check = 1;
  if (!strcmp(a, "--no-shrink"))
    return o->no_shrink = 1;
  if (known < 0)
    return 0;
  if (*i + 1 >= argc) {
    cs_cli_error("explore", "%s needs a value (see collsim help explore)", a);
    return -1;
  }
  const char *v = argv[++*i];
  switch (known) {
  case 0: return cs_cli_u64("explore", a, v, 1, 100000000, &o->schedules) < 0 ? -1 : 1;
  case 1: return cs_cli_seconds("explore", a, v, 1e6, &o->time_ns) < 0 ? -1 : 1;
  case 2: return parse_list(a, v, st, 3, stb, &o->strategies) < 0 ? -1 : 1;
  case 3: return parse_list(a, v, mm, CS_MM_COUNT, mmb, &o->models) < 0 ? -1 : 1;
  case 4: return cs_cli_u32("explore", a, v, 1, MAX_JOBS, &o->jobs) < 0 ? -1 : 1;
  case 6: return cs_cli_u32("explore", a, v, 1, MAX_BATCH, &o->batch) < 0 ? -1 : 1;
  case 7: return cs_cli_u64("explore", a, v, 0, 1000000000, &o->seed) < 0 ? -1 : 1;
  default: o->dir = v; return 1;
  }
}

/* Options explore sets itself for every schedule. */
static int refused(const char *a)
{
  static const char *const own[] = {"--schedule", "--memory-model", "--trace",
                                    "--output", "--input"};
  for (int k = 0; k < 5; k++) {
    size_t n = strlen(own[k]);
    if (!strncmp(a, own[k], n) && (a[n] == 0 || a[n] == '='))
      return 1;
  }
  return 0;
}

/* The run options explore passes on, checked here as `collsim run` would
 * check them (with the schedule explore adds), so that a bad one is told
 * as explore's, in one line, before anything starts. 0, 1 (done: a list
 * was printed) or -1 (printed). */
static int check_run_opts(const ex_opts_t *o)
{
  char *args[o->run_argc + 4];
  int n = 0;
  args[n++] = "explore";
  for (int i = 0; i < o->run_argc; i++)
    args[n++] = o->run_argv[i];
  args[n++] = "--schedule";
  args[n++] = "latest";
  args[n] = NULL;
  run_opts_t ro;
  cs_cli_args(n, args);
  int rc = cs_run_parse_as("explore", n, args, &ro);
  cs_coll_close(ro.coll_handle);
  return rc;
}

static int parse(int argc, char **argv, ex_opts_t *o)
{
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  *o = (ex_opts_t){.schedules = 1000, .strategies = ST_LATEST | ST_PCT | ST_RANDOM,
                   .models = (1u << CS_MM_COUNT) - 1,
                   .jobs = cpus <= 0 ? 2 : cpus < MAX_JOBS ? (uint32_t)cpus : MAX_JOBS,
                   .batch = 128, .dir = "."};
  o->run_argv = calloc((size_t)argc + 1, sizeof(char *));
  if (!o->run_argv)
    return -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      exit(CS_EXIT_OK);
    }
    int r = own_opt(o, argc, argv, &i);
    if (r < 0)
      return -1;
    if (r > 0)
      continue;
    if (refused(argv[i])) {
      cs_cli_error("explore", "%s is set by explore for every schedule: leave "
                   "it out (see collsim help explore)", argv[i]);
      return -1;
    }
    if (!strcmp(argv[i], "--iters") || !strncmp(argv[i], "--iters=", 8))
      o->iters_given = 1;
    o->run_argv[o->run_argc++] = argv[i];
  }
  int rc = check_run_opts(o);
  if (rc > 0)
    exit(CS_EXIT_OK);
  if (rc < 0)
    return -1;
  return cs_cli_output_dir("explore", o->dir) < 0 ? -1 : 0;
}

/* ------------------------------------------------------------ portfolio */

/* Schedule i (from 0) of the portfolio: round 0 has latest under every
 * model, then per round pct depth 1, 2, 3 and random, each under every
 * model, with seed = round + 1. Returns 0, or -1 past the end (only
 * latest was asked for). */
static int portfolio(const explore_t *x, uint64_t i, ex_sched_t *s)
{
  const char *models[CS_MM_COUNT];
  uint32_t nm = 0;
  for (uint32_t m = 0; m < CS_MM_COUNT; m++)
    if (x->o.models & (1u << m))
      models[nm++] = cs_mm_name((cs_mm_t)m);
  uint32_t per = (x->o.strategies & ST_PCT ? 3 : 0) + (x->o.strategies & ST_RANDOM ? 1 : 0);
  uint64_t first = x->o.strategies & ST_LATEST ? nm : 0;
  if (i < first) {
    snprintf(s->sched, sizeof(s->sched), "latest");
    snprintf(s->model, sizeof(s->model), "%s", models[i]);
    return 0;
  }
  if (per == 0)
    return -1;
  i -= first;
  uint64_t round = i / (per * nm), k = i % (per * nm);
  uint32_t strat = (uint32_t)(k / nm);
  /* Round r's seed: r + 1, or with --explore-seed S a seed of its own per
   * (S, r), the same for pct and random (they use it differently). */
  uint64_t seed = x->o.seed ? (x->o.seed * 0x9e3779b97f4a7c15ull ^ (round + 1) *
                               0xbf58476d1ce4e5b9ull) >> 1
                            : round + 1;
  snprintf(s->model, sizeof(s->model), "%s", models[k % nm]);
  if (x->o.strategies & ST_PCT && strat < 3)
    snprintf(s->sched, sizeof(s->sched), "pct:%llu:%u:%llu",
             (unsigned long long)seed, strat + 1, (unsigned long long)x->steps);
  else
    snprintf(s->sched, sizeof(s->sched), "random:%llu", (unsigned long long)seed);
  return 0;
}

/* ------------------------------------------------------------ children */

static uint64_t now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* "SCHEDULE@MODEL,..." of sl's items, for a batch child (malloc'd). */
static char *batch_list(const ex_slot_t *sl)
{
  size_t cap = (size_t)sl->count * (sizeof(sl->items[0]) + 2) + 1, off = 0;
  char *list = malloc(cap);
  if (!list)
    return NULL;
  list[0] = 0;
  for (uint32_t i = 0; i < sl->count; i++)
    off += (size_t)snprintf(list + off, cap - off, "%s%s@%s", i ? "," : "",
                            sl->items[i].sched, sl->items[i].model);
  return list;
}

/* posix_spawn of a child that starts on one CPU of its own: slot j's
 * share of the CPUs explore may use, inherited from this process, whose
 * affinity is set around the spawn and put back. Only one actor of a
 * controlled run runs at a time, so its hand-offs then stay on one CPU
 * instead of waking a process on another one at every step. Returns
 * posix_spawn's code. */
static int spawn_pinned(explore_t *x, ex_slot_t *sl, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char **argv)
{
  cpu_set_t allowed, one;
  int pinned = 0;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_COUNT(&allowed) > 1) {
    int k = (int)((uint32_t)(sl - x->slot) % (uint32_t)CPU_COUNT(&allowed));
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
      if (CPU_ISSET(c, &allowed) && k-- == 0) {
        CPU_SET(c, &one);
        break;
      }
    pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
  }
  char **env = cs_cli_child_env();
  int rc = posix_spawn(&sl->pid, "/proc/self/exe", fa, at, argv,
                       env ? env : environ);
  if (pinned)
    sched_setaffinity(0, sizeof(allowed), &allowed);
  return rc;
}

/* Starts sl's schedules (sl->items, sl->count, sl->index set): one
 * `collsim run` with its options, or a batch child for several
 * (cli/collsim/explore_batch.c). 0 or -errno. */
static int spawn(explore_t *x, ex_slot_t *sl)
{
  /* One name per child, random and made here with O_EXCL (the child
   * writes into our file): a name planted in DIR ahead of us cannot stop
   * the run, and one left by a killed explore is `collsim clean DIR`'s.
   * A trace that could not be kept under its final name stays under this
   * one and is never reused. */
  int tf = cs_cli_temp(sl->trace, sizeof(sl->trace), x->o.dir, ".explore-",
                       ".cstrace", 0, 0644);
  if (tf < 0)
    return tf;
  close(tf);
  char *list = sl->count > 1 ? batch_list(sl) : NULL;
  if (sl->count > 1 && !list) {
    unlink(sl->trace);
    return -ENOMEM;
  }
  sl->out = memfd_create("collsim-explore", MFD_CLOEXEC);
  if (sl->out < 0) {
    int err = -errno;
    unlink(sl->trace);
    free(list);
    return err;
  }
  char *argv[x->o.run_argc + 12];
  int n = 0;
  argv[n++] = "collsim";
  argv[n++] = list ? "explore" : "run";
  if (list) {
    argv[n++] = "--run-batch";
    argv[n++] = list;
  }
  for (int i = 0; i < x->o.run_argc; i++)
    argv[n++] = x->o.run_argv[i];
  if (!list) {
    argv[n++] = "--schedule";
    argv[n++] = sl->items[0].sched;
    argv[n++] = "--memory-model";
    argv[n++] = sl->items[0].model;
  }
  argv[n++] = "--trace";
  argv[n++] = sl->trace;
  if (!x->o.iters_given) {
    argv[n++] = "--iters";
    argv[n++] = "1";
  }
  if (x->o.check)
    argv[n++] = "--check";
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sl->out, 1);
  posix_spawn_file_actions_adddup2(&fa, sl->out, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_init(&at);
  /* Its own process group: a terminal's Ctrl-C reaches explore only,
   * which stops the children itself (take_signal). */
  posix_spawnattr_setsigmask(&at, &x->old);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  int rc = spawn_pinned(x, sl, &fa, &at, argv);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  free(list);
  if (rc != 0) {
    close(sl->out);
    unlink(sl->trace);
    sl->pid = 0;
    return -rc;
  }
  sl->s = sl->items[0];
  return 0;
}

/* The child's output (stdout and stderr), NUL-terminated, at most cap-1. */
static void output_of(ex_slot_t *sl, char *buf, size_t cap)
{
  ssize_t n = pread(sl->out, buf, cap - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  close(sl->out);
}

/* NAME.cstrace's shrunk name, NAME.min.cstrace, into min. */
static void min_name(const char *t, char *min, size_t n)
{
  size_t len = strlen(t);
  int ext = len > 8 && !strcmp(t + len - 8, ".cstrace");
  snprintf(min, n, "%.*s.min.cstrace", (int)(ext ? len - 8 : len), t);
}

/* Keeps the trace of a failure under a free name explore-N.cstrace in DIR
 * whose shrunk name explore-N.min.cstrace is free too (never replacing a
 * file, nor writing through a link planted under either name); writes
 * the kept name into sl->trace. */
static void keep_trace(explore_t *x, ex_slot_t *sl)
{
  char name[600], min[700];
  struct stat sb;
  for (unsigned k = 1; k < 100000; k++) {
    snprintf(name, sizeof(name), "%.500s/explore-%u.cstrace", x->o.dir, k);
    if (link(sl->trace, name) == 0) {
      min_name(name, min, sizeof(min));
      if (lstat(min, &sb) == 0 || errno != ENOENT) {
        unlink(name); /* its shrunk name is taken: the next N */
        continue;
      }
      unlink(sl->trace);
      snprintf(sl->trace, sizeof(sl->trace), "%s", name);
      return;
    }
    if (errno != EEXIST)
      return; /* the temporary name stays; it is printed as it is */
  }
}

/* Counts a failure under its signature; keeps the trace of a new one. */
static void record_failure(explore_t *x, ex_slot_t *sl, const char *sig)
{
  x->failures++;
  for (uint32_t i = 0; i < x->nsig; i++)
    if (!strcmp(x->sig[i].what, sig)) {
      x->sig[i].count++;
      unlink(sl->trace);
      return;
    }
  if (x->nsig == MAX_SIGS) {
    unlink(sl->trace);
    return;
  }
  keep_trace(x, sl);
  ex_sig_t *g = &x->sig[x->nsig++];
  snprintf(g->what, sizeof(g->what), "%s", sig);
  snprintf(g->trace, sizeof(g->trace), "%s", sl->trace);
  g->s = sl->s;
  g->index = sl->index;
  g->count = 1;
}

/* Which of sl's schedules failed (from 1): a batch child's last line
 * says; a child that could not say is taken at its last. */
static uint32_t failed_item(const ex_slot_t *sl, const char *out)
{
  char line[128];
  unsigned k = 0;
  if (sl->count > 1 && cs__line_of(out, "explore-batch: schedule ", line, sizeof(line)) &&
      sscanf(line, "explore-batch: schedule %u", &k) == 1 && k >= 1 && k <= sl->count)
    return k;
  return sl->count;
}

/* The rest of a batch after its failing schedule k, to run again. */
static void redo_rest(explore_t *x, const ex_slot_t *sl, uint32_t k)
{
  if (k < sl->count && x->nredo < MAX_JOBS)
    x->redo[x->nredo++] = (ex_range_t){sl->index - 1 + k, sl->index - 1 + sl->count};
}

/* A child that ended by a signal (SIGKILL from outside, a crash) or
 * whose run a signal stopped (the launcher's "interrupted by SIGTERM", or
 * the batch's between runs) has no result: 1 and the signal's name in
 * why, else 0. The person's own stop (x->signo) is not asked about. */
static int ended_by_signal(int status, const char *out, char *why, size_t cap)
{
  const char *p;
  if (WIFSIGNALED(status)) {
    const char *name = sigabbrev_np(WTERMSIG(status));
    snprintf(why, cap, "SIG%s", name ? name : "?");
    return 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != CS_EXIT_ABORTED ||
      !(p = strstr(out, "interrupted by SIG")))
    return 0;
  p += strlen("interrupted by ");
  snprintf(why, cap, "%.*s", (int)strcspn(p, " \n;,:"), p);
  return 1;
}

/* A search error, not a failure: one line, and the search stops (the
 * children still running end their schedules). */
static void lost_child(explore_t *x, const ex_slot_t *sl, pid_t pid, const char *why)
{
  cs_cli_error("explore", "child %d (schedules %llu-%llu) was ended by %s, not by "
               "its run: the search stops with exit 4 (no failure counted)",
               (int)pid, (unsigned long long)sl->index,
               (unsigned long long)(sl->index + sl->count - 1), why);
  x->lost = 1;
  x->stop = 1;
}

/* A child ended with `status`. Returns -1 when its run refused the options
 * (exit 2: explore stops and shows why), else 0. */
static int finished(explore_t *x, ex_slot_t *sl, int status)
{
  char out[32768], sig[240], why[32];
  output_of(sl, out, sizeof(out));
  pid_t pid = sl->pid;
  sl->pid = 0;
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  uint32_t k = code == 0 ? sl->count : failed_item(sl, out);
  if (code == CS_EXIT_USAGE) {
    fputs(out, stderr);
    unlink(sl->trace);
    return -1;
  }
  /* The collective crashed in its own code that collsim runs (refuse,
   * slots, signal_final, expect): the same in every schedule, so no
   * failure of one; its line, as explore's, and the search stops. */
  const char *crash = code == CS_EXIT_ABORTED ? strstr(out, ": the collective ")
                                              : NULL;
  if (crash && strstr(crash, " crashed with SIG")) {
    if (!x->plug)
      fprintf(stderr, "collsim explore%.*s", (int)strcspn(crash, "\n") + 1,
              crash);
    x->plug = x->stop = 1;
    unlink(sl->trace);
    return 0;
  }
  int lost = code != 0 && !x->signo && ended_by_signal(status, out, why, sizeof(why));
  if (code == 0 || x->signo || lost) {
    x->done += code == 0 ? k : k - 1;
    unlink(sl->trace); /* passed, or stopped by a signal: no result */
    if (lost)
      lost_child(x, sl, pid, why);
    return 0;
  }
  x->done += k;
  if (x->o.keep_going)
    redo_rest(x, sl, k);
  sl->s = sl->items[k - 1];
  sl->index += k - 1;
  cs__run_signature(out, status, sig, sizeof(sig) - 32);
  if (strstr(out, "explore-batch: the traced re-run passed"))
    strcat(sig, " (its traced re-run passed)");
  record_failure(x, sl, sig);
  if (!x->o.keep_going)
    x->stop = 1;
  return 0;
}

/* Reaps every child that ended. -1 when a run refused the options. */
static int reap(explore_t *x)
{
  int rc = 0, status;
  for (uint32_t j = 0; j < x->o.jobs; j++) {
    ex_slot_t *sl = &x->slot[j];
    if (sl->pid > 0 && waitpid(sl->pid, &status, WNOHANG) == sl->pid &&
        finished(x, sl, status) < 0)
      rc = -1;
  }
  return rc;
}

/* ------------------------------------------------------------ the run */

/* Steps of a controlled run's trace: the length PCT spreads its change
 * points over. */
static uint64_t steps_of(const char *path)
{
  cs_trace_t t;
  uint64_t n = 0;
  if (cs_trace_load(path, &t, NULL) < 0)
    return 0; /* no measure: pct spreads its change points over 1 step */
  for (uint64_t i = 0; i < t.n; i++)
    n += cs_sched_is_step(t.rec[i].kind) != 0;
  cs_trace_free(&t);
  return n;
}

static void progress(const explore_t *x, int final)
{
  double s = (double)(now_ns() - x->t0) / 1e9;
  FILE *f = final ? stdout : stderr;
  fprintf(f, "%sexplore: %llu schedule%s in %.1f s (%.0f/s), %llu failure%s%s",
          final ? "" : "\r", (unsigned long long)x->done,
          x->done == 1 ? "" : "s", s, s > 0 ? x->done / s : 0,
          (unsigned long long)x->failures, x->failures == 1 ? "" : "s",
          final ? "\n" : "   ");
  fflush(f);
}

/* Waits for the next child to end or a signal, up to 200 ms. */
static void take_signal(explore_t *x)
{
  struct timespec ts = {0, 200 * 1000000};
  int sig = sigtimedwait(&x->set, NULL, &ts);
  if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !x->signo) {
    x->signo = sig;
    x->stop = 1;
    for (uint32_t j = 0; j < x->o.jobs; j++)
      if (x->slot[j].pid > 0)
        kill(x->slot[j].pid, SIGTERM); /* they abort and clean up */
  }
}

/* Takes the signals still pending, without waiting. */
static void drain_signals(explore_t *x)
{
  struct timespec zero = {0, 0};
  int sig;
  while ((sig = sigtimedwait(&x->set, NULL, &zero)) > 0)
    if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !x->signo)
      x->signo = sig;
}

static int any_running(const explore_t *x)
{
  for (uint32_t j = 0; j < x->o.jobs; j++)
    if (x->slot[j].pid > 0)
      return 1;
  return 0;
}

/* Schedules are left to hand out. */
static int more(const explore_t *x)
{
  return !x->stop && (x->nredo || x->started < x->o.schedules);
}

/* Hands the next schedules to sl: the rest of a failed batch first, then
 * the portfolio, at most --batch and an even share of what is left. 0, or
 * -1 when there are none. */
static int next_items(explore_t *x, ex_slot_t *sl)
{
  uint64_t from, to, left = x->o.schedules - x->started;
  uint64_t share = (left + x->o.jobs - 1) / x->o.jobs;
  int redo = x->nredo > 0;
  if (redo) {
    from = x->redo[x->nredo - 1].from;
    to = x->redo[x->nredo - 1].to;
  } else {
    from = x->started;
    to = from + (share < x->o.batch ? share : x->o.batch);
  }
  if (to - from > x->o.batch)
    to = from + x->o.batch;
  uint32_t n = 0;
  for (uint64_t i = from; i < to && portfolio(x, i, &sl->items[n]) == 0; i++)
    n++;
  if (redo && (x->redo[x->nredo - 1].from = to) >= x->redo[x->nredo - 1].to)
    x->nredo--;
  if (!redo)
    x->started = n ? from + n : x->o.schedules; /* past the portfolio's end */
  sl->index = from + 1;
  sl->count = n;
  return n ? 0 : -1;
}

/* Starts schedules into free slots while there are any to start. */
static int fill_slots(explore_t *x)
{
  for (uint32_t j = 0; j < x->o.jobs && more(x); j++) {
    if (x->slot[j].pid > 0)
      continue;
    if (x->o.time_ns && now_ns() - x->t0 >= x->o.time_ns) {
      x->stop = 1;
      break;
    }
    if (next_items(x, &x->slot[j]) < 0)
      continue;
    int err = spawn(x, &x->slot[j]);
    if (err < 0) {
      cs_cli_error("explore", "cannot start a run: %s", strerror(-err));
      return -1;
    }
  }
  return 0;
}

/* The first schedule alone (latest, or the first of the portfolio): it
 * checks the options and measures the run's length for pct. */
static int first_run(explore_t *x)
{
  ex_slot_t *sl = &x->slot[0];
  int status;
  x->steps = 1; /* the first pct schedule has depth 1: no change point */
  if (portfolio(x, 0, &sl->items[0]) < 0)
    return -1;
  sl->index = sl->count = 1;
  int err = spawn(x, sl);
  if (err < 0) {
    cs_cli_error("explore", "cannot start a run: %s", strerror(-err));
    return -1;
  }
  x->started = 1;
  while (waitpid(sl->pid, &status, WNOHANG) == 0)
    take_signal(x);
  uint64_t steps = steps_of(sl->trace);
  if (finished(x, sl, status) < 0)
    return -1;
  x->steps = steps ? steps : 1;
  return 0;
}

/* Shrinks the first failure, or with --keep-going the first of every
 * signature, as collsim shrink does, into NAME.min.cstrace beside its
 * trace, until one is interrupted (1). */
static int shrink_failures(const explore_t *x)
{
  uint32_t n = x->o.keep_going ? x->nsig : x->nsig ? 1 : 0;
  for (uint32_t i = 0; i < n; i++) {
    char min[700];
    const char *t = x->sig[i].trace;
    min_name(t, min, sizeof(min));
    if (n > 1)
      printf("shrinking failure %u:\n", i + 1);
    fflush(stdout);
    struct stat sb;
    if (lstat(min, &sb) == 0) { /* free when the trace was kept */
      cs_cli_error("explore", "%s appeared since %s was kept: not shrinking "
                   "over it (collsim shrink %s -o NEW)", min, t, t);
      continue;
    }
    if (cs__shrink_file(t, min, 600, 1, stdout) == CS_EXIT_ABORTED)
      return 1;
  }
  return 0;
}

/* The failures and the summary, then the shrinking: 1 when a stop cut
 * that short (its signal may be gone: one ignored when explore started is
 * discarded as shrink puts the disposition back). */
static int explore_report(const explore_t *x)
{
  for (uint32_t i = 0; i < x->nsig; i++) {
    const ex_sig_t *g = &x->sig[i];
    printf("failure %u: %s (%llu time%s; first at schedule %llu)\n", i + 1,
           g->what, (unsigned long long)g->count, g->count == 1 ? "" : "s",
           (unsigned long long)g->index);
    printf("  schedule %s, memory model %s\n", g->s.sched, g->s.model);
    printf("  trace %s\n  reproduce: collsim replay %s\n", g->trace, g->trace);
    if (!strncmp(g->what, "check: ", 7))
      printf("  finding: collsim check %s\n", g->trace);
  }
  progress(x, 1);
  return !x->o.no_shrink && !x->signo && !x->lost && !x->plug &&
         shrink_failures(x);
}

int cs_cmd_explore(int argc, char **argv)
{
  if (argc > 2 && !strcmp(argv[1], "--run-batch"))
    return cs__explore_batch(argc - 2, argv + 2);
  explore_t *x = calloc(1, sizeof(*x));
  if (!x || parse(argc, argv, &x->o) < 0) {
    if (x)
      free(x->o.run_argv);
    free(x);
    return CS_EXIT_USAGE;
  }
  /* SIGCHLD must not be ignored: the children are reaped here. */
  struct sigaction dfl = {.sa_handler = SIG_DFL}, old_chld;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);
  sigemptyset(&x->set);
  sigaddset(&x->set, SIGCHLD);
  sigaddset(&x->set, SIGINT);
  sigaddset(&x->set, SIGTERM);
  sigaddset(&x->set, SIGHUP);
  sigprocmask(SIG_BLOCK, &x->set, &x->old);
  x->t0 = now_ns();
  int tty = isatty(2), rc = first_run(x);
  while (rc == 0 && (more(x) || any_running(x))) {
    if (fill_slots(x) < 0 || reap(x) < 0)
      rc = -1;
    if (tty)
      progress(x, 0);
    if (any_running(x))
      take_signal(x);
  }
  while (any_running(x)) { /* after an error: let the others end */
    take_signal(x);
    reap(x);
  }
  if (tty)
    fputc('\n', stderr);
  drain_signals(x); /* a stop that came with the last child still counts */
  int exit_code = rc < 0 ? CS_EXIT_USAGE : x->signo ? CS_EXIT_ABORTED
                  : x->lost ? EX_EXIT_LOST : x->plug ? CS_EXIT_ABORTED
                  : x->failures ? CS_EXIT_WRONG : CS_EXIT_OK;
  int cut = rc == 0 && explore_report(x);
  /* A stop that cut the shrinking short is still pending (shrink only
   * looks): taken here, it is an interruption, not death by the signal
   * once the mask is restored. */
  drain_signals(x);
  if (rc == 0 && (cut || x->signo))
    exit_code = CS_EXIT_ABORTED;
  sigprocmask(SIG_SETMASK, &x->old, NULL);
  sigaction(SIGCHLD, &old_chld, NULL);
  free(x->o.run_argv);
  free(x);
  return exit_code;
}
