/*
 * shrink.c - `collsim shrink TRACE`: the smallest run found that fails
 * the same way as a recorded failing run, written as an ordinary trace,
 * and the few events that make the failure, told as a story.
 *
 * The same way = the same signature (signature.h: outcome kind and first
 * bad rank and position; for a run that passes with a checker finding,
 * the first finding of `collsim run --check`). First the inputs: one
 * call, fewer ranks (from 2 up), fewer elements (bisection on the count; a §3.3 shape keeps its
 * count); each candidate is searched
 * briefly with a few schedules (the deviations that made the last failure,
 * whose actors are named by what they are and so may still apply; the
 * default order; latest; pct and random seeds). Then the schedule: the
 * failure's schedule is written as deviations from the deviate strategy's
 * default order (sim/sched/deviate.c), cut down by delta debugging and put
 * in a normal form (fewer preemptions, then fewer switches, then the
 * lexicographically smallest list). Every candidate is one `collsim run`
 * child of this binary with its own trace, as in explore; the trace of
 * the last accepted candidate becomes OUT, so `collsim replay OUT`
 * reproduces it exactly.
 *
 * Owns: the candidates, the delta debugging, the normal form, the
 * progress lines and the final line. Does not own running a schedule
 * (cli/collsim/run.c), the signature (signature.c), the story's events
 * (sim/trace/story.c) or its words (cli/collsim/story.c). Called from
 * cli/collsim/main.c (`collsim shrink`) and by explore (cs__shrink_file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../collectives/registry.h"
#include "../../collectives/bugs.h"
#include "../../sim/sched.h"
#include "../../sim/trace.h"
#include "../../sim/trace/read.h"
#include "../../sim/trace/sha256.h"
#include "cli.h"
#include "temp.h"
#include "run.h"
#include "shrink.h"
#include "../../run/signature.h"
#include "story.h"

extern char **environ;

static const char usage[] =
    "usage: collsim shrink TRACE [-o OUT] [--budget N] [--no-story]\n"
    "                      [--trust-algo]\n"
    "\n"
    "Takes the trace of a failing controlled or free run (collsim run\n"
    "--trace, collsim explore) and writes the smallest run it finds that\n"
    "fails the same way: first one call, fewer ranks (down to 2) and fewer\n"
    "elements, each tried with a few schedules and kept if the outcome is\n"
    "the same (a wrong result, a deadlock, ...: the first bad position may\n"
    "move with the inputs); then the schedule, with the whole signature\n"
    "(outcome, first bad rank and position) kept, as deviations from\n"
    "a default order that never preempts (--schedule deviate:LIST), cut\n"
    "down by delta debugging and put in a normal form (fewer preemptions,\n"
    "then fewer switches, then the smallest list). OUT is an ordinary trace:\n"
    "collsim replay OUT reproduces it, collsim trace OUT shows it. Then the\n"
    "few events that make the failure are told as a numbered story, with\n"
    "the racing pair and the missing edge collsim check finds (for a race\n"
    "that follows from a cell a call left unreset, that reset; a barrier\n"
    "the collective named, by its name).\n"
    "A trace whose run passes but where collsim check finds something (an\n"
    "unused remote read, a race no schedule of this size turned into a\n"
    "wrong result) is shrunk the same way, with --check on every run: the\n"
    "signature is then the first finding (its kind while the inputs\n"
    "shrink, the whole finding for the schedule).\n"
    "The run's collective (also --algo ./x.so, which must still be there,\n"
    "with the SHA-256 the trace recorded: shrink names it before it runs\n"
    "it, and refuses a changed one) and its modes (--signals, --minmax,\n"
    "--signal-layout) stay as recorded.\n"
    "\n"
    "  -o OUT       the shrunk trace (default: TRACE with .min.cstrace for\n"
    "               .cstrace): a new name or a regular file of yours, not\n"
    "               TRACE (an existing OUT keeps its mode and owner)\n"
    "  --budget N   runs to try at most (default 600)\n"
    "  --no-story   do not print the story\n"
    "  --trust-algo run the collective a trace names although the trace\n"
    "               records no SHA-256 of it (written by an older collsim)\n"
    "\n"
    "Progress goes to stderr; the final line, the replay command and the\n"
    "story to stdout.\n"
    "Exit status: 0 shrunk (OUT written), 2 bad usage or a trace that does\n"
    "not fail, 3 interrupted.\n";

/* One run configuration. */
typedef struct sh_cfg {
  uint32_t algo, dtype, op, fill, nranks, iters, tile, bug, model;
  uint64_t count, seed;
  uint32_t fault_kind, fault_rank;
  uint64_t fault_event;
  uint64_t timeout_ns; /* the recorded run's wait timeout */
  uint32_t shape_rows, shape_cols, valid_rows, valid_cols; /* §3.3, 0 none:
                          kept as recorded (the count is their product) */
  uint32_t modes;      /* fidelity modes (traces/FORMAT.md), kept */
  char     so[257];    /* algo 254: the collective's shared object, kept */
  char     so_sha[65]; /* its recorded SHA-256 (hex), every rerun's
                          --algo-sha256; "" none (--trust-algo) */
} sh_cfg_t;

/* --trust-algo: a trace that records no hash of its collective is taken. */
static int trust_algo;

/* A deviation Z>Y (deviate.c): rank UINT32_MAX in z = the start. */
typedef struct sh_dev {
  uint32_t zr, zdma, yr, ydma;
  uint64_t zid, yid;
} sh_dev_t;

/* What a trace's schedule looks like. */
typedef struct sh_shape {
  uint64_t records, steps, switches, preempts;
  uint64_t count;
  uint32_t nranks, iters; /* as the header has them */
} sh_shape_t;

typedef struct shrink {
  const char *in, *out;
  uint64_t    budget, runs;
  char        sig[200];  /* the best failure's signature */
  char        last[200]; /* the last candidate's */
  char        crash[600]; /* a candidate's line: the collective crashed in
                             its own code that collsim runs (no failure) */
  int         crashed;   /* the recorded run's replay did: stopped there */
  int         loose;     /* inputs phase: the outcome kind is enough */
  int         check;     /* the recorded run passes with a checker finding:
                            every candidate runs with --check, and its
                            first finding is the signature */
  sh_cfg_t    cfg;       /* of the best failure so far */
  char        dir[640];  /* where the temporaries go: OUT's directory */
  char        best[700]; /* its trace (a temporary name) */
  char        tmp[700];  /* a candidate's trace (a fresh name each run) */
  sh_dev_t   *dev;       /* the best failure's deviations */
  uint64_t    ndev;
  int         have_dev;  /* dev describes best (else: its own schedule) */
  char       *spec;      /* a schedule string being built */
  size_t      speccap;
  FILE       *log;       /* progress */
} shrink_t;

static volatile sig_atomic_t stop_signo;
static void on_signal(int sig) { stop_signo = sig; }

/* A stop asked for: by a handler, or pending while explore blocks it. */
static int stopped(void)
{
  return stop_signo || cs_cli_stop_pending();
}

/* ------------------------------------------------------------ children */

static void add_u64(char **argv, int *n, char (*num)[40], const char *opt,
                    uint64_t v)
{
  argv[*n] = (char *)opt;
  snprintf(num[*n + 1], sizeof(num[0]), "%llu", (unsigned long long)v);
  argv[*n + 1] = num[*n + 1];
  *n += 2;
}

/* The options of c's fidelity modes, as the header has them. */
static void add_modes(const sh_cfg_t *c, char **argv, int *n)
{
  if (c->modes & CS_TR_MODE_SINGLE_USE) {
    argv[(*n)++] = "--signals";
    argv[(*n)++] = "single-use";
  }
  if (c->modes & CS_TR_MODE_PADDED_CELLS) {
    argv[(*n)++] = "--signal-layout";
    argv[(*n)++] = "padded";
  }
  uint32_t mm = (c->modes & CS_TR_MODE_MINMAX_MASK) >> CS_TR_MODE_MINMAX_SHIFT;
  if (mm) {
    argv[(*n)++] = "--minmax";
    argv[(*n)++] = (char *)cs_minmax_name((cs_minmax_t)mm);
  }
}

/* argv of `collsim run` for c under schedule `sched`, tracing to `trace`. */
static void run_argv(const sh_cfg_t *c, const char *sched, const char *trace,
                     int check, char **argv, char (*num)[40])
{
  int n = 0;
  static const char *const fills[] = {"arange", "arange", "pto", "random", "arange"};
  argv[n++] = "collsim";
  argv[n++] = "run";
  if (c->so_sha[0]) {
    argv[n++] = "--algo-sha256";
    argv[n++] = (char *)c->so_sha;
  }
  argv[n++] = "--algo";
  argv[n++] = c->so[0] ? (char *)c->so : (char *)cs_algo_name((cs_algo_t)c->algo);
  argv[n++] = "--dtype";
  argv[n++] = (char *)cs_dtype_name((cs_dtype_t)c->dtype);
  argv[n++] = "--op";
  argv[n++] = (char *)cs_op_name((cs_op_t)c->op);
  argv[n++] = "--fill";
  argv[n++] = (char *)fills[c->fill < 5 ? c->fill : 1];
  add_u64(argv, &n, num, "--ranks", c->nranks);
  add_u64(argv, &n, num, "--count", c->count);
  if (c->shape_rows) {
    argv[n] = "--shape";
    snprintf(num[n + 1], sizeof(num[0]), "%ux%u", c->shape_rows, c->shape_cols);
    argv[n + 1] = num[n + 1];
    argv[n + 2] = "--valid";
    snprintf(num[n + 3], sizeof(num[0]), "%u,%u", c->valid_rows, c->valid_cols);
    argv[n + 3] = num[n + 3];
    n += 4;
  }
  add_u64(argv, &n, num, "--iters", c->iters);
  add_u64(argv, &n, num, "--tile-bytes", c->tile);
  add_u64(argv, &n, num, "--seed", c->seed);
  if (c->bug) {
    argv[n++] = "--bug";
    argv[n++] = (char *)cs_bug_table[c->bug].name;
  }
  add_modes(c, argv, &n);
  if (c->fault_kind) {
    argv[n] = "--fault";
    snprintf(num[n + 1], sizeof(num[0]), "%u:%s:%llu", c->fault_rank,
             cs_fault_kind_name((cs_fault_kind_t)c->fault_kind),
             (unsigned long long)c->fault_event);
    argv[n + 1] = num[n + 1];
    n += 2;
  }
  argv[n++] = "--memory-model";
  argv[n++] = (char *)cs_mm_name((cs_mm_t)c->model);
  argv[n++] = "--schedule";
  argv[n++] = (char *)sched;
  argv[n++] = "--trace";
  argv[n++] = (char *)trace;
  if (check)
    argv[n++] = "--check";
  argv[n] = "--timeout";
  snprintf(num[n + 1], sizeof(num[0]), "%.3f",
           c->timeout_ns ? (double)c->timeout_ns / 1e9 : 30.0);
  argv[n + 1] = num[n + 1];
  n += 2;
  argv[n] = NULL;
}

/* Waits for pid, killing it on a stop or after 120 s. Returns its status. */
static int wait_child(pid_t pid)
{
  struct timespec ts = {0, 2000000};
  int status = 0, killed = 0;
  for (long waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
    if (!killed && (stopped() || waited > 60000)) {
      kill(pid, stopped() ? SIGTERM : SIGKILL);
      killed = 1;
    }
    nanosleep(&ts, NULL);
  }
  return status;
}

/* The directory of OUT, where the temporaries go (so the result is
 * renamed or copied within one file system). */
static void temp_dir(shrink_t *sh)
{
  const char *slash = strrchr(sh->out, '/');
  int dl = slash ? (int)(slash - sh->out) : 1;
  const char *dir = slash ? sh->out : ".";
  if (slash && dl == 0)
    dl = 1; /* "/name": the root */
  snprintf(sh->dir, sizeof(sh->dir), "%.*s", dl, dir);
}

/* A fresh temporary beside OUT into name: a random name made with O_EXCL
 * (nothing planted there can take a candidate's trace), left for the
 * child to write into. 0 or -errno. */
static int temp_name(shrink_t *sh, char *name, size_t cap)
{
  int fd = cs_cli_temp(name, cap, sh->dir, ".shrink-", ".cstrace", 0, 0644);
  if (fd < 0) {
    name[0] = 0;
    return fd;
  }
  close(fd);
  return 0;
}

/* The candidate's trace goes (its name is forgotten with it). */
static void drop(shrink_t *sh)
{
  if (sh->tmp[0])
    unlink(sh->tmp);
  sh->tmp[0] = 0;
}

/* Runs c under `sched` with its trace at sh->tmp; its output into out
 * (cap bytes). Returns its wait status, or -1 (could not start). */
static int run_child(shrink_t *sh, const sh_cfg_t *c, const char *sched,
                     char *out, size_t cap)
{
  char *argv[64], num[64][40];
  memset(num, 0, sizeof(num));
  drop(sh); /* never two candidates' traces at once */
  if (temp_name(sh, sh->tmp, sizeof(sh->tmp)) < 0)
    return -1;
  run_argv(c, sched, sh->tmp, sh->check, argv, num);
  int fd = memfd_create("collsim-shrink", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  sigset_t none;
  sigemptyset(&none);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd, 1);
  posix_spawn_file_actions_adddup2(&fa, fd, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_init(&at);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  pid_t pid;
  char **env = cs_cli_child_env();
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv,
                       env ? env : environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  int status = rc == 0 ? wait_child(pid) : -1;
  ssize_t n = pread(fd, out, cap - 1, 0);
  out[n > 0 ? n : 0] = 0;
  close(fd);
  return status;
}

/* Whether a signature is a checker finding's (run/signature.c words it
 * "check: KIND: HEADLINE"). */
static const char finding_mark[] = "check: ";
static int is_finding(const char *sig)
{
  return !strncmp(sig, finding_mark, sizeof(finding_mark) - 1);
}

/* Where a signature's kind ends: a failure's at the first comma ("wrong
 * result, rank 1 index 3"), a checker finding's after its kind ("check:
 * unused remote read: rank 1's load of ..."). */
static size_t kind_len(const char *sig)
{
  size_t skip = is_finding(sig) ? sizeof(finding_mark) - 1 : 0;
  return skip + strcspn(sig + skip, skip ? ":" : ",");
}

/* Runs candidate c under sched. 1: it fails with the signature (its trace
 * stays at sh->tmp for keep() or drop()); 0: it does not (or the budget is
 * spent); -1: stopped. */
static int attempt(shrink_t *sh, const sh_cfg_t *c, const char *sched)
{
  char out[8192], sig[200];
  if (stopped())
    return -1;
  if (sh->runs >= sh->budget)
    return 0;
  sh->runs++;
  int status = run_child(sh, c, sched, out, sizeof(out));
  if (stopped()) {
    drop(sh);
    return -1;
  }
  if (status == -1 || (WIFEXITED(status) && (WEXITSTATUS(status) == 0 ||
                                             WEXITSTATUS(status) == CS_EXIT_USAGE))) {
    drop(sh);
    return 0;
  }
  /* The collective crashed in refuse, slots, signal_final or expect:
   * not a failure of this schedule or size, nothing to shrink. */
  const char *crash = WIFEXITED(status) && WEXITSTATUS(status) ==
                      CS_EXIT_ABORTED ? strstr(out, ": the collective ") : NULL;
  if (crash && strstr(crash, " crashed with SIG")) {
    snprintf(sh->crash, sizeof(sh->crash), "%.*s",
             (int)strcspn(crash + 2, "\n"), crash + 2);
    drop(sh);
    return 0;
  }
  cs__run_signature(out, status, sig, sizeof(sig));
  /* Checking, only a run that passed with a finding is this one. */
  if (sh->check != is_finding(sig)) {
    drop(sh);
    return 0;
  }
  snprintf(sh->last, sizeof(sh->last), "%s", sig);
  if (!sh->sig[0])
    snprintf(sh->sig, sizeof(sh->sig), "%s", sig);
  /* Fewer ranks or elements move the first bad position: while the inputs
   * change, the kind (up to the first comma) must match; then all of it. */
  size_t kind = kind_len(sh->sig);
  if (sh->loose ? strncmp(sig, sh->sig, kind) || kind_len(sig) != kind
                : strcmp(sig, sh->sig)) {
    drop(sh);
    return 0;
  }
  return 1;
}

/* The candidate at sh->tmp becomes the best failure. */
static void keep(shrink_t *sh, const sh_cfg_t *c)
{
  rename(sh->tmp, sh->best);
  sh->tmp[0] = 0;
  sh->cfg = *c;
  snprintf(sh->sig, sizeof(sh->sig), "%s", sh->last);
}


/* ------------------------------------------------------------ schedules */

static void spec_add(shrink_t *sh, const char *s)
{
  size_t have = sh->spec ? strlen(sh->spec) : 0, n = strlen(s);
  if (have + n + 1 > sh->speccap) {
    size_t cap = (have + n + 1) * 2;
    char *p = realloc(sh->spec, cap);
    if (!p)
      return; /* the list stays shorter: a candidate that may not fail */
    if (!sh->spec)
      p[0] = 0;
    sh->spec = p;
    sh->speccap = cap;
  }
  strcat(sh->spec, s);
}

static void actor_str(char *b, size_t n, uint32_t r, uint32_t dma, uint64_t id)
{
  if (r == UINT32_MAX)
    snprintf(b, n, "^");
  else
    snprintf(b, n, "%u%c%llu", r, dma ? '#' : '.', (unsigned long long)id);
}

/* "deviate:" and the deviations of d[0..n) whose bit in `on` is set (all
 * when on is NULL), into sh->spec. */
static const char *deviate_spec(shrink_t *sh, const sh_dev_t *d, uint64_t n,
                                const uint8_t *on)
{
  char z[32], y[32], one[80];
  if (sh->spec)
    sh->spec[0] = 0;
  spec_add(sh, "deviate:");
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (on && !on[i])
      continue;
    actor_str(z, sizeof(z), d[i].zr, d[i].zdma, d[i].zid);
    actor_str(y, sizeof(y), d[i].yr, d[i].ydma, d[i].yid);
    snprintf(one, sizeof(one), "%s%s>%s", k++ ? "," : "", z, y);
    spec_add(sh, one);
  }
  if (!k)
    spec_add(sh, "none");
  return sh->spec ? sh->spec : "deviate:none";
}

/* The schedule of trace t as deviations (*d, *n; malloc'd): every step
 * that is not its rank going on after its own previous event. */
static int to_deviations(const cs_trace_t *t, sh_dev_t **d, uint64_t *n)
{
  uint32_t nr = t->hdr.nranks;
  uint64_t *events = calloc(nr ? nr : 1, sizeof(uint64_t));
  *d = calloc(t->n ? t->n : 1, sizeof(sh_dev_t));
  *n = 0;
  if (!events || !*d) {
    free(events);
    free(*d);
    *d = NULL;
    return -ENOMEM;
  }
  sh_dev_t last = {.yr = UINT32_MAX};
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (!cs_sched_is_step(x->kind) || x->rank >= nr)
      continue;
    sh_dev_t a = {.zr = last.yr, .zdma = last.ydma, .zid = last.yid,
                  .yr = x->rank, .ydma = x->kind == CS_TR_DMA_LAND};
    a.yid = a.ydma ? x->dma_id : events[x->rank]++;
    if (!(a.zr == a.yr && !a.zdma && !a.ydma))
      (*d)[(*n)++] = a;
    last = a;
  }
  free(events);
  return 0;
}

/* The shape of the schedule of trace t: steps, switches between actors,
 * and preemptions (switches away from a rank whose next event is neither
 * a wait nor a fence, so it could have gone on). */
static void shape_of(const cs_trace_t *t, sh_shape_t *sp)
{
  memset(sp, 0, sizeof(*sp));
  sp->records = t->n;
  sp->nranks = t->hdr.nranks;
  sp->count = t->hdr.count;
  sp->iters = t->hdr.iters;
  int64_t prev = -1;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (!cs_sched_is_step(x->kind))
      continue;
    sp->steps++;
    int64_t who = (int64_t)x->rank * 2 + (x->kind == CS_TR_DMA_LAND);
    if (prev >= 0 && who != prev) {
      sp->switches++;
      if (!(prev & 1)) { /* away from rank prev/2: what was it to do next? */
        for (uint64_t j = i + 1; j < t->n; j++) {
          const cs_trace_rec_t *y = &t->rec[j];
          if (y->rank != (uint32_t)(prev / 2) || !cs_sched_is_step(y->kind) ||
              y->kind == CS_TR_DMA_LAND)
            continue;
          sp->preempts += y->kind != CS_EV_WAIT && y->kind != CS_EV_FENCE;
          break;
        }
      }
    }
    prev = who;
  }
}

/* Loads the trace at path and takes its shape and, if d, its deviations. */
static int study(const char *path, sh_shape_t *sp, sh_dev_t **d, uint64_t *n)
{
  cs_trace_t t;
  if (cs_trace_load(path, &t, NULL) < 0)
    return -1;
  shape_of(&t, sp);
  int rc = d ? to_deviations(&t, d, n) : 0;
  cs_trace_free(&t);
  return rc;
}

/* Re-takes the best failure's deviations from its trace. */
static void relearn(shrink_t *sh)
{
  sh_shape_t sp;
  sh_dev_t *d = NULL;
  uint64_t n = 0;
  if (study(sh->best, &sp, &d, &n) == 0) {
    free(sh->dev);
    sh->dev = d;
    sh->ndev = n;
  }
}

/* Searches schedules of candidate c briefly. 1: one failed the same way
 * (kept as the best); 0: none; -1 stopped. */
static int search(shrink_t *sh, const sh_cfg_t *c, const char *what)
{
  sh_shape_t sp = {0};
  study(sh->best, &sp, NULL, NULL);
  char s[96];
  for (int i = 0; i < 16; i++) {
    const char *sched = s;
    if (i == 0)
      sched = deviate_spec(sh, sh->dev, sh->ndev, NULL);
    else if (i == 1)
      sched = "deviate:none";
    else if (i == 2)
      sched = "latest";
    else if (i < 12)
      snprintf(s, sizeof(s), "pct:%d:%d:%llu", (i - 3) / 3 + 1, (i - 3) % 3 + 1,
               (unsigned long long)(sp.steps ? sp.steps : 1));
    else
      snprintf(s, sizeof(s), "random:%d", i - 11);
    char shown[96];
    snprintf(shown, sizeof(shown), "%.60s%s", sched, strlen(sched) > 60 ? "..." : "");
    int r = attempt(sh, c, sched);
    if (r < 0)
      return -1;
    if (r > 0) {
      keep(sh, c);
      relearn(sh);
      fprintf(sh->log, "shrink: %s: fails the same way (schedule %s)\n", what, shown);
      return 1;
    }
  }
  fprintf(sh->log, "shrink: %s: no schedule tried fails the same way\n", what);
  return 0;
}

/* ------------------------------------------------------------ inputs */

/* One call, fewer ranks (from 2 up), fewer elements (bisection). */
static int shrink_inputs(shrink_t *sh)
{
  char what[96];
  sh_cfg_t c = sh->cfg;
  int r;
  for (uint32_t it = 1; it < 3 && it < sh->cfg.iters; it++) {
    c = sh->cfg;
    c.iters = it;
    snprintf(what, sizeof(what), "--iters %u", it);
    if ((r = search(sh, &c, what)) != 0) {
      if (r < 0)
        return -1;
      break;
    }
  }
  for (uint32_t n = 2; n < sh->cfg.nranks; n++) {
    if (sh->cfg.fault_kind && sh->cfg.fault_rank >= n)
      continue;
    c = sh->cfg;
    c.nranks = n;
    snprintf(what, sizeof(what), "--ranks %u", n);
    if ((r = search(sh, &c, what)) != 0) {
      if (r < 0)
        return -1;
      break;
    }
  }
  uint64_t lo = 1, hi = sh->cfg.count;
  while (lo < hi && !sh->cfg.shape_rows) { /* a shape fixes the count */
    c = sh->cfg;
    c.count = lo + (hi - lo) / 2;
    snprintf(what, sizeof(what), "--count %llu", (unsigned long long)c.count);
    if ((r = search(sh, &c, what)) < 0)
      return -1;
    if (r > 0)
      hi = c.count;
    else
      lo = c.count + 1;
  }
  return 0;
}

/* ------------------------------------------------------------ schedule */

/* Whether the deviations of sh->dev marked in `on` fail the same way (the
 * run is kept as the best). 1, 0 or -1 (stopped). */
static int test_set(shrink_t *sh, const uint8_t *on)
{
  int r = attempt(sh, &sh->cfg, deviate_spec(sh, sh->dev, sh->ndev, on));
  if (r > 0)
    keep(sh, &sh->cfg);
  return r;
}

static uint64_t count_on(const uint8_t *on, uint64_t n)
{
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++)
    k += on[i];
  return k;
}

/* trial = cur with (complement = 0) only, or (1) all but, the k-th of n
 * chunks of its members. */
static void chunk(const uint8_t *cur, uint8_t *trial, uint64_t len,
                  uint64_t k, uint64_t n, int complement)
{
  uint64_t size = count_on(cur, len), from = k * size / n, to = (k + 1) * size / n;
  for (uint64_t i = 0, m = 0; i < len; i++) {
    trial[i] = 0;
    if (!cur[i])
      continue;
    int in = m >= from && m < to;
    trial[i] = complement ? !in : in;
    m++;
  }
}

/* Zeller's ddmin over the members of cur (len flags): cur becomes a set
 * that fails the same way and from which no single chunk at the finest
 * granularity can be removed. 0, or -1 stopped. */
static int ddmin(shrink_t *sh, uint8_t *cur, uint64_t len)
{
  uint8_t *trial = malloc(len ? len : 1);
  uint64_t n = 2;
  if (!trial)
    return 0;
  for (;;) {
    uint64_t size = count_on(cur, len);
    if (size < 2 || sh->runs >= sh->budget)
      break;
    if (n > size)
      n = size;
    int reduced = 0, r = 0;
    for (int comp = 0; comp < 2 && !reduced; comp++)
      for (uint64_t k = 0; k < n && !reduced; k++) {
        if (comp && n == 2)
          break; /* the complements of two halves are the halves */
        chunk(cur, trial, len, k, n, comp);
        if ((r = test_set(sh, trial)) < 0)
          goto out;
        if (r > 0) {
          memcpy(cur, trial, len);
          n = comp ? (n > 3 ? n - 1 : 2) : 2;
          reduced = 1;
          fprintf(sh->log, "shrink: deviations: %llu left\n",
                  (unsigned long long)count_on(cur, len));
        }
      }
    if (!reduced) {
      if (n >= size)
        break;
      n = n * 2 < size ? n * 2 : size;
    }
  }
out:
  free(trial);
  return stopped() ? -1 : 0;
}

/* Keeps only the deviations marked in `on`. */
static void compact(shrink_t *sh, const uint8_t *on)
{
  uint64_t k = 0;
  for (uint64_t i = 0; i < sh->ndev; i++)
    if (on[i])
      sh->dev[k++] = sh->dev[i];
  sh->ndev = k;
}

/* Whether schedule shape a with list sa is better than b with sb: fewer
 * preemptions, then fewer switches, then the smaller list. */
static int better(const sh_shape_t *a, const char *sa, const sh_shape_t *b,
                  const char *sb)
{
  if (a->preempts != b->preempts)
    return a->preempts < b->preempts;
  if (a->switches != b->switches)
    return a->switches < b->switches;
  return strcmp(sa, sb) < 0;
}

/* Tries moving each deviation's anchor one event earlier or later on its
 * rank; keeps a move that still fails the same way and is better. */
static int normalise(shrink_t *sh)
{
  sh_shape_t cur, cand;
  char *cur_spec = NULL;
  int moved = 1, r = 0;
  for (int pass = 0; pass < 4 && moved && sh->runs < sh->budget; pass++) {
    moved = 0;
    for (uint64_t i = 0; i < sh->ndev && !moved; i++) {
      for (int dir = -1; dir <= 1 && !moved; dir += 2) {
        sh_dev_t was = sh->dev[i];
        if (was.zr == UINT32_MAX || (dir < 0 && was.zid == (uint64_t)was.zdma))
          continue;
        if (study(sh->best, &cur, NULL, NULL) < 0)
          goto out;
        free(cur_spec);
        cur_spec = strdup(deviate_spec(sh, sh->dev, sh->ndev, NULL));
        sh->dev[i].zid += dir;
        const char *spec = deviate_spec(sh, sh->dev, sh->ndev, NULL);
        if ((r = attempt(sh, &sh->cfg, spec)) < 0)
          goto out;
        if (r > 0 && study(sh->tmp, &cand, NULL, NULL) == 0 && cur_spec &&
            better(&cand, spec, &cur, cur_spec)) {
          keep(sh, &sh->cfg);
          moved = 1;
          fprintf(sh->log, "shrink: normal form: %.70s\n", spec);
          continue;
        }
        if (r > 0)
          drop(sh);
        sh->dev[i] = was;
      }
    }
  }
out:
  free(cur_spec);
  return r < 0 ? -1 : 0;
}

/* The schedule as few deviations from the default order as found: the
 * default itself, else the best failure's own deviations cut down by
 * ddmin and normalised. */
static int shrink_schedule(shrink_t *sh)
{
  relearn(sh);
  int r = attempt(sh, &sh->cfg, "deviate:none");
  if (r > 0) {
    keep(sh, &sh->cfg);
    sh->ndev = 0;
    sh->have_dev = 1;
    return 0;
  }
  if (r == 0)
    r = attempt(sh, &sh->cfg, deviate_spec(sh, sh->dev, sh->ndev, NULL));
  if (r <= 0) {
    if (r == 0)
      fprintf(sh->log, "shrink: the failure's schedule does not run the same "
              "way as deviations; it is kept as it is\n");
    return r;
  }
  keep(sh, &sh->cfg);
  sh->have_dev = 1;
  fprintf(sh->log, "shrink: schedule: %llu deviations from the default order\n",
          (unsigned long long)sh->ndev);
  uint8_t *on = malloc(sh->ndev);
  if (!on)
    return 0;
  memset(on, 1, sh->ndev);
  r = ddmin(sh, on, sh->ndev);
  compact(sh, on);
  free(on);
  return r < 0 ? -1 : normalise(sh);
}

/* ------------------------------------------------------------ the command */

/* The run configuration of a loaded trace's header, its fidelity modes and
 * (algo 254) its collective's shared object included; -1 (printed) when it
 * is not one shrink can make smaller. */
static int from_header(const cs_trace_header_t *h, const char *path, sh_cfg_t *c)
{
  int user = h->algo == CS_TRACE_ALGO_USER;
  if (user && !h->algo_path[0] && h->program == 0) {
    cs_cli_error("shrink", "%s: its collective was not loaded from a shared "
                 "object by a path (header field algo_path is empty), so "
                 "collsim cannot load it again to rerun it", path);
    return -1;
  }
  if (h->program != 0 || (h->algo >= CS_NALGOS && !user) || h->dtype >= CS_NDTYPES ||
      h->op >= CS_NOPS || h->bug >= CS_NBUGS || h->memory_model >= CS_MM_COUNT ||
      h->fill > CS_FILL_INPUT || h->fault_kind > CS_FAULT_HANG ||
      h->nranks < 1 || h->count < 1 || h->iters < 1 || h->iters > 1000000 ||
      cs_cli_modes_check(h->modes & ~(user ? CS_TR_MODE_CHUNK_TAGS : 0)) < 0 ||
      (user && (h->bug || !h->algo_path[0]))) {
    cs_cli_error("shrink", "%s: not the trace of an allreduce run collsim can "
                 "make (program %u, algo %u, modes %#x)", path, h->program,
                 h->algo, h->modes);
    return -1;
  }
  if (h->fill == CS_FILL_INPUT) {
    cs_cli_error("shrink", "%s was recorded with --input: shrink makes its own "
                 "inputs, so it takes only runs with a fill", path);
    return -1;
  }
  cs_ar_cfg_t ar;
  char why[256];
  if (!user && cs_cli_header_cfg(h, &ar, why, sizeof(why)) < 0) {
    cs_cli_error("shrink", "%s: its header describes a run collsim cannot "
                 "make (%s)", path, why);
    return -1;
  }
  *c = (sh_cfg_t){.algo = h->algo, .dtype = h->dtype, .op = h->op,
                  .fill = h->fill, .nranks = h->nranks, .iters = h->iters,
                  .tile = h->tile_bytes, .bug = h->bug, .model = h->memory_model,
                  .count = h->count, .seed = h->seed, .fault_kind = h->fault_kind,
                  .fault_rank = h->fault_rank, .fault_event = h->fault_event,
                  .timeout_ns = h->timeout_ns <= 1000000000ull * 1000000 ? h->timeout_ns : 0,
                  .shape_rows = h->shape_rows, .shape_cols = h->shape_cols,
                  .valid_rows = h->valid_rows, .valid_cols = h->valid_cols,
                  .modes = h->modes};
  if (!user)
    return 0;
  snprintf(c->so, sizeof(c->so), "%.*s", (int)sizeof(h->algo_path), h->algo_path);
  if (access(c->so, R_OK) < 0) {
    cs_cli_error("shrink", "%s: its collective %s cannot be read (%s): shrink "
                 "reruns it, so it must still be there", path, c->so, strerror(errno));
    return -1;
  }
  /* Only the file the trace recorded; every rerun checks the hash again
   * before it loads the file (--algo-sha256). */
  if (cs_run_algo_vouched("shrink", path, c->so, h->algo_sha256, trust_algo) < 0)
    return -1;
  static const uint8_t none[sizeof(h->algo_sha256)];
  if (memcmp(h->algo_sha256, none, sizeof(none)))
    cs_sha256_hex(h->algo_sha256, c->so_sha);
  return 0;
}

/* Loads the input's configuration and the deviations its schedule has. */
static int load_input(shrink_t *sh, sh_shape_t *sp, uint64_t *ndev)
{
  cs_trace_t t;
  cs_trace_diag_t d;
  char why[512];
  if (cs_trace_load(sh->in, &t, &d) < 0) {
    cs_trace_strerror(&d, why, sizeof(why));
    cs_cli_error("shrink", "%s", why);
    return -1;
  }
  /* A run whose end is missing does not replay to its failure: said,
   * and refused, instead of "does not replay to a failure". */
  if (cs_cli_partial("shrink", sh->in, &t.hdr, t.n)) {
    cs_trace_free(&t);
    return -1;
  }
  int rc = from_header(&t.hdr, sh->in, &sh->cfg);
  sh_dev_t *dev = NULL;
  if (rc == 0) {
    shape_of(&t, sp);
    if (to_deviations(&t, &dev, ndev) < 0)
      rc = -1;
  }
  free(dev);
  cs_trace_free(&t);
  return rc;
}

/* The recorded run, replayed: its signature. -1 (printed): it does not
 * fail, or does not replay. 1: stopped. */
static int first_failure(shrink_t *sh)
{
  char sched[700];
  snprintf(sched, sizeof(sched), "replay:%s", sh->in);
  int r = attempt(sh, &sh->cfg, sched);
  if (r < 0)
    return 1;
  if (r == 0 && sh->crash[0]) {
    cs_cli_error("shrink", "%s", sh->crash);
    sh->crashed = 1;
    return 1;
  }
  if (r == 0 && !sh->sig[0]) {
    /* It passes: a checker finding on it is kept instead (run --check). */
    sh->check = 1;
    if ((r = attempt(sh, &sh->cfg, sched)) < 0)
      return 1;
  }
  if (r == 0 || !strncmp(sh->sig, "replay diverged", 15)) {
    drop(sh);
    cs_cli_error("shrink", "%s: %s; nothing to shrink", sh->in,
                 sh->sig[0] ? "its run does not replay to a failure"
                            : "its run does not fail and collsim check finds "
                              "nothing in it");
    return -1;
  }
  keep(sh, &sh->cfg);
  relearn(sh);
  fprintf(sh->log, "shrink: %s %s: %s\n", sh->in,
          sh->check ? "passes with a checker finding" : "fails with", sh->sig);
  return 0;
}

static void summary(const shrink_t *sh, const char *first, const sh_shape_t *s0,
                    uint64_t dev0, const sh_shape_t *s1, double secs, FILE *f)
{
  char after[32];
  snprintf(after, sizeof(after), sh->have_dev ? "%llu" : "(kept)",
           (unsigned long long)sh->ndev);
  fprintf(f, "shrink: %s -> %s\n", first, sh->sig);
  fprintf(f, "shrink: ranks %u -> %u, count %llu -> %llu, iters %u -> %u, "
          "deviations %llu -> %s, events %llu -> %llu (%llu runs, %.1f s)\n",
          s0->nranks, s1->nranks, (unsigned long long)s0->count,
          (unsigned long long)s1->count, s0->iters, s1->iters,
          (unsigned long long)dev0, after, (unsigned long long)s0->records,
          (unsigned long long)s1->records, (unsigned long long)sh->runs, secs);
  if (sh->have_dev)
    fprintf(f, "  schedule %s, memory model %s\n",
            sh->spec ? sh->spec : "deviate:none", cs_mm_name((cs_mm_t)sh->cfg.model));
  fprintf(f, "  trace %s\n  reproduce: collsim replay %s\n", sh->out, sh->out);
}

/* Shrinks with sh set up; returns the exit code. */
static int shrink_run(shrink_t *sh, int story, FILE *f)
{
  sh_shape_t s0, s1;
  uint64_t dev0 = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* The output rule before any work: OUT is never the input trace. */
  if (cs_cli_output_ok("shrink", "-o", sh->out,
                       &(cs_cli_input_t){"TRACE", sh->in, 0}, 1, 1) < 0)
    return CS_EXIT_USAGE;
  if (load_input(sh, &s0, &dev0) < 0)
    return CS_EXIT_USAGE;
  temp_dir(sh);
  int r = temp_name(sh, sh->best, sizeof(sh->best));
  if (r < 0) {
    cs_cli_error("shrink", "cannot create a temporary trace in '%s': %s; "
                 "expected the directory of -o to be writable", sh->dir,
                 strerror(-r));
    return CS_EXIT_USAGE;
  }
  r = first_failure(sh);
  if (r != 0)
    return r < 0 ? CS_EXIT_USAGE : CS_EXIT_ABORTED;
  char first[200];
  snprintf(first, sizeof(first), "%s", sh->sig);
  sh->loose = 1;
  for (int round = 0; round < 3; round++) { /* fewer elements may let fewer ranks fail */
    sh_cfg_t was = sh->cfg;
    if (shrink_inputs(sh) < 0)
      return CS_EXIT_ABORTED;
    if (!memcmp(&was, &sh->cfg, sizeof(was)))
      break;
  }
  sh->loose = 0;
  if (shrink_schedule(sh) < 0)
    return CS_EXIT_ABORTED;
  if (sh->have_dev)
    deviate_spec(sh, sh->dev, sh->ndev, NULL);
  /* Checked again as it is replaced: a device, FIFO, another user's file
   * or the input never; an old file of ours keeps its mode and owner. */
  int rc = cs_output_replace(sh->best, sh->out);
  if (rc < 0) {
    cs_cli_output_error("shrink", "-o", sh->out, rc);
    return CS_EXIT_USAGE;
  }
  study(sh->out, &s1, NULL, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  summary(sh, first, &s0, dev0, &s1,
          (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, f);
  if (story)
    cs__story_print(sh->out, sh->sig, f);
  return CS_EXIT_OK;
}

int cs__shrink_file(const char *in, const char *out, uint64_t budget, int story,
                    FILE *f)
{
  shrink_t sh = {.in = in, .out = out, .budget = budget, .log = stderr};
  struct sigaction sa = {.sa_handler = on_signal}, old[3];
  static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
  sigemptyset(&sa.sa_mask);
  stop_signo = 0;
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &sa, &old[i]);
  int code = shrink_run(&sh, story, f);
  drop(&sh);
  if (sh.best[0])
    unlink(sh.best);
  for (int i = 0; i < 3; i++)
    sigaction(sigs[i], &old[i], NULL);
  if (code == CS_EXIT_ABORTED && !sh.crashed) /* a crash said its line */
    cs_cli_error("shrink", "interrupted; %s not written", out);
  free(sh.dev);
  free(sh.spec);
  return code;
}

int cs_cmd_shrink(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"budget", required_argument, 0, 'b'},
      {"no-story", no_argument, 0, 's'},
      {"trust-algo", no_argument, 0, 'T'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  const char *out = NULL;
  uint64_t budget = 600;
  int opt, story = 1;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
    switch (opt) {
    case 'o': out = optarg; break;
    case 'b':
      if (cs_cli_u64("shrink", "--budget", optarg, 1, 1000000, &budget) < 0)
        return CS_EXIT_USAGE;
      break;
    case 's': story = 0; break;
    case 'T': trust_algo = 1; break;
    case 'h': fputs(usage, stdout); return CS_EXIT_OK;
    default:
      cs_cli_bad_option("shrink");
      return CS_EXIT_USAGE;
    }
  }
  if (optind + 1 != argc) {
    cs_cli_error("shrink", optind >= argc ? "a TRACE file is required"
                                          : "one TRACE file expected");
    return CS_EXIT_USAGE;
  }
  const char *in = argv[optind];
  char def[700];
  if (!out) {
    size_t n = strlen(in);
    int ext = n > 8 && !strcmp(in + n - 8, ".cstrace");
    snprintf(def, sizeof(def), "%.*s.min.cstrace", (int)(ext ? n - 8 : n), in);
    out = def;
  }
  return cs__shrink_file(in, out, budget, story, stdout);
}
