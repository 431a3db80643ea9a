/*
 * test_explain.c - the benchmark of explanations (issue 30, items 4 and
 * 5): ordering defects written as plug-ins (tests/plugins/defects.c, one
 * shared object per defect, each labelled by its author with the edge it
 * took out), run by the real binary under free mode and several
 * schedules and memory models, passing and failing. For every trace the
 * first finding of the checker must name the labelled edge and no race
 * may be told against the collective's order; for every failing trace
 * `collsim shrink`'s story must name it too. The shares are printed and
 * must be 1.0. The correct collective must give no finding, and the
 * names its registration gives (phases, barriers) must reach the trace
 * listing, check and the story without loading the plug-in. Its
 * held-out half holds three other collectives (tests/plugins/heldout.c:
 * puts, a ring, recursive doubling; barriers of other names) to the same
 * shares over runs of other seeds and rank counts.
 * COLLSIM_QUICK (the clang and sanitizer stages of CI) runs every other
 * configuration. Forks only through the harness (run_cli: a kill timer, the child
 * reaped, no shm name left behind).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/trace.h"
#include "../sim/trace/check.h"
#include "harness.h"
#include "story_pair.h"

#ifndef COLLSIM_PLUGINS
#error "COLLSIM_PLUGINS must name the built plug-ins (CMakeLists.txt sets it)"
#endif

/* The edge a defect's author took out: the label, true by construction. */
typedef enum edge {
  E_NONE,      /* the correct collective */
  E_FENCE,     /* store, fence, then the notify the peer's load waits on */
  E_READY,     /* store, notify, wait, then the peer's load */
  E_READ_DONE, /* load, notify, wait, then the owner's next store */
  E_RESET,     /* the cells taken back to 0 at the end of a call */
  E_EQ,        /* waits with >= */
  E_MIXED,     /* one notify op per cell */
} edge_t;

typedef struct defect {
  int id; /* DEFECT of tests/plugins/defects.c: defectID.so */
  const char *name;
  edge_t edge;
} defect_t;

static const defect_t defects[] = {
    {1, "missing fence", E_FENCE},
    {2, "missing READY barrier", E_READY},
    {3, "missing READ-COMPLETE barrier", E_READ_DONE},
    {4, "wait on the wrong peer", E_READY},
    {5, "low wait target", E_READY},
    {6, "stale credits across calls", E_RESET},
    {7, "Eq for Ge", E_EQ},
    {8, "Set mixed with Add", E_MIXED},
};
#define NDEFECTS (sizeof(defects) / sizeof(defects[0]))

/* The runs of each defect: ranks, schedule (NULL: free), memory model. */
typedef struct runcfg {
  const char *ranks, *sched, *model;
} runcfg_t;

static const runcfg_t runs[] = {
    {"3", NULL, NULL},           {"3", "random:1", "relaxed"},
    {"3", "random:2", "fifo"},   {"3", "random:3", "relaxed"},
    {"3", "pct:1:2", "relaxed"}, {"3", "pct:2:1", "fifo"},
    {"4", "random:4", "relaxed"}, {"4", NULL, NULL},
    {"3", "latest", "sc"},       {"4", "pct:3:2", "relaxed"},
};
#define NRUNS (sizeof(runs) / sizeof(runs[0]))

static char dir[128];
static void make_dir(void) { temp_dir_for("explain", dir, sizeof dir); }
static void remove_dir(void)
{
  char cmd[192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

static void so_path(int id, char *buf, size_t n)
{
  snprintf(buf, n, "%s/defect%d.so", COLLSIM_PLUGINS, id);
}

/* `collsim run --algo defectID.so` with run i's configuration and trace
 * `tr`; returns the exit status (0 passed, 1 wrong result or signals, 3 a
 * hang or deadlock). */
static int run_cfg(const char *so, const runcfg_t *c, size_t i, const char *tr);
static int run_so(const char *so, size_t i, const char *tr)
{
  return run_cfg(so, &runs[i], i, tr);
}
static int run_defect(int id, size_t i, const char *tr)
{
  char so[256];
  so_path(id, so, sizeof so);
  return run_so(so, i, tr);
}

static int run_cfg(const char *so, const runcfg_t *c, size_t i, const char *tr)
{
  char *args[32] = {"run", "--algo", (char *)so, "--ranks", (char *)c->ranks,
                    "--count", "6", "--iters", "2", "--timeout", "2",
                    "--trace", (char *)tr};
  int k = 13;
  if (c->sched) {
    args[k++] = "--schedule";
    args[k++] = (char *)c->sched;
    args[k++] = "--memory-model";
    args[k++] = (char *)c->model;
  }
  args[k] = NULL;
  cli_out_t r;
  run_argv(&r, 120, args);
  cr_assert(r.status == 0 || r.status == 1 || r.status == 3,
            "%s run %zu: exit %d\n%s", so, i, r.status, r.err);
  return r.status;
}

static int is_write(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT;
}

/* A race between two ranks over one window (the writer's own for a
 * store, the target's for a put), a the writer and b a reader of it
 * (want_write_first) or the other way round. */
static int cross_race(const cs_check_finding_t *f, int want_write_first)
{
  if (f->kind != CS_CHECK_RACE || f->a.rank == f->b.rank)
    return 0;
  const cs_trace_rec_t *w = want_write_first ? &f->a : &f->b;
  const cs_trace_rec_t *r = want_write_first ? &f->b : &f->a;
  uint32_t window = w->kind == CS_EV_PUT ? w->peer : w->rank;
  return is_write(w->kind) && r->kind == CS_EV_LOAD && r->peer == window;
}

/* Whether finding f names edge e. */
static int names_edge(const cs_check_finding_t *f, edge_t e)
{
  switch (e) {
  case E_FENCE: return cross_race(f, 1) && f->cause == CS_CHECK_NO_FENCE;
  case E_READY: return cross_race(f, 1) && f->cause == CS_CHECK_NO_SIGNAL;
  case E_READ_DONE: return cross_race(f, 0) && f->cause == CS_CHECK_NO_READ_DONE;
  case E_RESET: return f->kind == CS_CHECK_NOT_RESET;
  case E_EQ: return f->kind == CS_CHECK_WAIT_EQ;
  case E_MIXED: return f->kind == CS_CHECK_MIXED_OPS;
  default: return 0;
  }
}

/* A race between ranks told against the collective's order: the load
 * first where the label says a write comes first, or the reverse. */
static int against_order(const cs_check_finding_t *f, edge_t e)
{
  if (f->kind != CS_CHECK_RACE || f->a.rank == f->b.rank)
    return 0;
  if (e == E_READY || e == E_FENCE)
    return cross_race(f, 0);
  if (e == E_READ_DONE)
    return cross_race(f, 1);
  return 0;
}

/* The barrier names and a phase tag of the collective being benchmarked
 * (defects.c's by default; the held-out test sets its own). */
static const char *ready_name = "READY", *done_name = "DONE";
static const char *const *phase_tags;
static const char *const defects_tags[] = {" at publish t0 j0", " at gather t",
                                           " at finish t0 j0", NULL};

/* The words of the story's "Missing:" line that name edge e, with the
 * barrier names the collective gave. */
static const char *story_words(edge_t e)
{
  static char buf[80];
  switch (e) {
  case E_FENCE: return "Missing: a fence on rank ";
  case E_READY:
  case E_READ_DONE:
    snprintf(buf, sizeof buf, "Missing: the %s barrier of ",
             e == E_READY ? ready_name : done_name);
    return buf;
  case E_RESET: return "Missing: a self-clearing epilogue";
  case E_EQ: return "Missing: a >= comparison";
  case E_MIXED: return "Missing: one notify op per cell";
  default: return "?";
  }
}

typedef struct share {
  uint32_t n[2], right[2]; /* [0] passing traces, [1] failing */
  uint32_t against, stories, stories_right, undetected;
} share_t;

/* Shrinks failing trace tr and reads its story: 1 when the "Missing:"
 * line names edge e and the events are told in the collective's phases. */
static int story_names(const char *tr, edge_t e, const char *what)
{
  char out[256];
  snprintf(out, sizeof out, "%s/min.cstrace", dir);
  cli_out_t r;
  run_cli(&r, 300, "shrink", tr, "-o", out, NULL);
  const char *m = strstr(r.out, "Missing:");
  int ok = r.status == 0 && m && !strncmp(m, story_words(e), strlen(story_words(e)));
  int phased = 0;
  for (const char *const *p = phase_tags ? phase_tags : defects_tags; *p; p++)
    phased |= strstr(r.out, *p) != NULL;
  if (!ok || !phased)
    cr_log_error("%s: the story does not name the edge (%s) or its phases "
                 "(exit %d):\n%s%s", what, story_words(e), r.status, r.out, r.err);
  /* The pair it tells is the one that bit, by the shrunk trace's own
   * landings: a write meant first that landed after the load (the load
   * saw the old value), or one meant after that landed before it. */
  int pair = 1;
  if (ok && (e == E_FENCE || e == E_READY || e == E_READ_DONE)) {
    char why[512];
    pair = story_pair_ok(out, r.out, e != E_READ_DONE, UINT64_MAX, why, sizeof why);
    if (!pair)
      cr_log_error("%s: the story tells a pair that did not bite: %s\n%s", what, why,
                   r.out);
  }
  /* Stale credits: the story goes back to the call and the notify whose
   * credit the failing call's wait passed on. */
  if (ok && e == E_RESET && !strstr(r.out, "(call 1's, not this call's)")) {
    cr_log_error("%s: the story does not tell the wait that passed on call 1's "
                 "credit:\n%s", what, r.out);
    pair = 0;
  }
  remove(out);
  return ok && phased && pair;
}

/* One defect (shared object so) over every run of rs that it takes
 * (min_ranks, pow2: a power of two only): its traces checked, up to
 * `stories` failing ones of controlled runs shrunk. */
static void bench_so(const defect_t *d, const char *so, const runcfg_t *rs, size_t nrs,
                     uint32_t min_ranks, int pow2, uint32_t stories, share_t *s)
{
  char tr[256];
  snprintf(tr, sizeof tr, "%s/d%d.cstrace", dir, d->id);
  uint32_t shrunk = 0;
  share_t mine = {0};
  for (size_t i = 0; i < nrs; i++) {
    uint32_t nr = (uint32_t)atoi(rs[i].ranks);
    if (nr < min_ranks || (pow2 && (nr & (nr - 1))))
      continue;
    if (quick_tests() && i % 2) /* quick: runs 0, 2, 4, 6, 8 */
      continue;
    int st = run_cfg(so, &rs[i], i, tr);
    int failing = st != 0;
    cs_trace_t t;
    char why[512];
    cr_assert_eq(load_trace(tr, &t, why, sizeof why), 0, "%s", why);
    cs_check_report_t rep;
    cr_assert_eq(cs_check_run(&t, &rep), 0);
    cs_trace_free(&t);
    int ok = rep.n > 0 && names_edge(&rep.f[0], d->edge), against = 0;
    for (uint64_t j = 0; j < rep.n; j++)
      against |= against_order(&rep.f[j], d->edge);
    mine.n[failing]++;
    mine.right[failing] += ok;
    mine.against += against;
    mine.undetected += rep.n == 0;
    if (!ok || against)
      cr_log_error("%s, run %zu (%s ranks, %s %s, %s): first finding %s%s",
                   d->name, i, rs[i].ranks, rs[i].sched ? rs[i].sched : "free",
                   rs[i].model ? rs[i].model : "", failing ? "failing" : "passing",
                   rep.n ? cs_check_kind_name(rep.f[0].kind) : "none",
                   against ? "; a race told against the collective's order" : "");
    cs_check_report_fini(&rep);
    /* Stories from controlled runs only: a free run's failure can come
     * from two events that overlapped in time, which its trace orders
     * one way and replay (and so shrink) then runs that way, passing. */
    if (failing && shrunk < stories && rs[i].sched) {
      char what[160];
      snprintf(what, sizeof what, "%s, run %zu", d->name, i);
      shrunk++;
      mine.stories++;
      mine.stories_right += story_names(tr, d->edge, what);
    }
  }
  printf("explain: %-30s check first names the edge: passing %u/%u, failing "
         "%u/%u; reversed %u; stories %u/%u\n", d->name, mine.right[0],
         mine.n[0], mine.right[1], mine.n[1], mine.against, mine.stories_right,
         mine.stories);
  fflush(stdout);
  for (int k = 0; k < 2; k++) {
    s->n[k] += mine.n[k];
    s->right[k] += mine.right[k];
  }
  s->against += mine.against;
  s->stories += mine.stories;
  s->stories_right += mine.stories_right;
  s->undetected += mine.undetected;
}

static void bench_defect(const defect_t *d, share_t *s)
{
  char so[256];
  so_path(d->id, so, sizeof so);
  bench_so(d, so, runs, NRUNS, d->id == 4 ? 3 : 2, 0, 2, s);
}

/* Prints the shares of s under `title` and holds them to 1.0, with at
 * least `floor` passing and failing traces and `floor_stories` stories. */
static void judge(const char *title, const share_t *s, uint32_t floor,
                  uint32_t floor_stories)
{
  uint32_t n = s->n[0] + s->n[1], right = s->right[0] + s->right[1];
  printf("%s: check's first finding names the labelled edge in %u of %u "
         "traces (%.3f; passing %u/%u, failing %u/%u); %u traces with a race "
         "told backwards; %u undetected; shrink's story names it in %u of %u "
         "(%.3f)\n", title, right, n, n ? (double)right / n : 0.0, s->right[0],
         s->n[0], s->right[1], s->n[1], s->against, s->undetected, s->stories_right,
         s->stories, s->stories ? (double)s->stories_right / s->stories : 0.0);
  fflush(stdout);
  cr_assert_gt(s->n[0], floor, "only %u passing traces", s->n[0]);
  cr_assert_gt(s->n[1], floor, "only %u failing traces", s->n[1]);
  cr_assert_gt(s->stories, floor_stories, "only %u stories", s->stories);
  cr_assert_eq(s->undetected, 0, "%u traces of a defect with no finding", s->undetected);
  cr_assert_eq(right, n, "check's first finding names the edge in %u of %u", right, n);
  cr_assert_eq(s->against, 0, "%u traces tell a race backwards", s->against);
  cr_assert_eq(s->stories_right, s->stories, "the story names the edge in %u of %u",
               s->stories_right, s->stories);
}

Test(explain, first_findings_and_stories_name_the_labelled_edge,
     .init = make_dir, .fini = remove_dir, .timeout = 1100)
{
  share_t s = {0};
  for (size_t i = 0; i < NDEFECTS; i++)
    bench_defect(&defects[i], &s);
  /* The floors for the whole benchmark (80 traces), halved for the
   * quick one (40). */
  uint32_t q = quick_tests() ? 2 : 1;
  judge("explain", &s, 10 / q, 8 / q);
}

/* The held-out half (tests/plugins/heldout.c): three other collectives,
 * a gather ring of puts, a mesh of puts and a recursive doubling of
 * stores, with barriers and phases of their own names, two defects
 * each, over runs of their own (other seeds, rank counts 2 to 4). */
typedef struct heldout {
  defect_t d;
  const char *so; /* heldoutC_N */
  uint32_t min_ranks;
  int pow2;
  const char *ready;
  const char *const *tags;
} heldout_t;

static const char *const ring_tags[] = {" at send t0 j0", " at forward t", " at fold t0 j0",
                                        NULL};
static const char *const mesh_tags[] = {" at push t0 j0", " at fold t", " at finish t0 j0",
                                        NULL};
static const char *const rd_tags[] = {" at round t", " at finish t0 j0", NULL};

static const heldout_t heldouts[] = {
    {{101, "ring of puts: no fence", E_FENCE}, "heldout1_1", 2, 0, "ARRIVE", ring_tags},
    {{102, "ring of puts: low target", E_READY}, "heldout1_2", 2, 0, "ARRIVE", ring_tags},
    {{203, "mesh of puts: wrong peer", E_READY}, "heldout2_3", 3, 0, "SENT", mesh_tags},
    {{204, "mesh of puts: no FREED", E_READ_DONE}, "heldout2_4", 2, 0, "SENT", mesh_tags},
    {{305, "doubling: stale credits", E_RESET}, "heldout3_5", 2, 1, "POSTED", rd_tags},
    {{306, "doubling: Set with Add", E_MIXED}, "heldout3_6", 2, 1, "POSTED", rd_tags},
};
#define NHELDOUT (sizeof(heldouts) / sizeof(heldouts[0]))

static const runcfg_t heldout_runs[] = {
    {"4", NULL, NULL},           {"4", "random:11", "relaxed"},
    {"4", "random:12", "fifo"},  {"4", "pct:13:2", "relaxed"},
    {"4", "pct:14:1", "fifo"},   {"2", "random:15", "relaxed"},
    {"4", "latest", "sc"},       {"2", NULL, NULL},
    {"4", "random:16", "relaxed"}, {"3", "random:17", "relaxed"},
    {"4", "pct:18:3", "relaxed"}, {"3", NULL, NULL},
};
#define NHELDOUT_RUNS (sizeof(heldout_runs) / sizeof(heldout_runs[0]))

Test(explain, held_out_collectives, .init = make_dir, .fini = remove_dir,
     .timeout = 1100)
{
  share_t s = {0};
  for (size_t i = 0; i < NHELDOUT; i++) {
    const heldout_t *h = &heldouts[i];
    char so[256];
    snprintf(so, sizeof so, "%s/%s.so", COLLSIM_PLUGINS, h->so);
    ready_name = h->ready;
    done_name = "FREED";
    phase_tags = h->tags;
    bench_so(&h->d, so, heldout_runs, NHELDOUT_RUNS, h->min_ranks, h->pow2, 3, &s);
  }
  ready_name = "READY";
  done_name = "DONE";
  phase_tags = NULL;
  uint32_t q = quick_tests() ? 2 : 1;
  judge("explain held-out", &s, 8 / q, 6 / q);
}

/* The correct held-out collectives pass every run and check clean. */
Test(explain, held_out_correct_collectives_have_no_finding, .init = make_dir,
     .fini = remove_dir, .timeout = 600)
{
  char tr[256], so[256];
  snprintf(tr, sizeof tr, "%s/ok.cstrace", dir);
  static const char *const ok[] = {"heldout1_0", "heldout2_0", "heldout3_0"};
  for (size_t k = 0; k < 3; k++)
    for (size_t i = 0; i < NHELDOUT_RUNS; i++) {
      uint32_t nr = (uint32_t)atoi(heldout_runs[i].ranks);
      if ((k == 2 && (nr & (nr - 1))) || (quick_tests() && i % 2))
        continue;
      snprintf(so, sizeof so, "%s/%s.so", COLLSIM_PLUGINS, ok[k]);
      cr_assert_eq(run_cfg(so, &heldout_runs[i], i, tr), 0, "%s run %zu failed", ok[k], i);
      cli_out_t r;
      run_cli(&r, 60, "check", tr, NULL);
      cr_assert_eq(r.status, 0, "%s run %zu: check found:\n%s", ok[k], i, r.out);
    }
}

/* The correct collective passes every run and check finds nothing; the
 * same registered as before the names (DEFECT 9, a shorter `size`) loads,
 * runs and checks clean too. */
Test(explain, the_correct_collective_has_no_finding, .init = make_dir,
     .fini = remove_dir, .timeout = 600)
{
  char tr[256];
  snprintf(tr, sizeof tr, "%s/ok.cstrace", dir);
  static const int ids[] = {0, 9};
  for (size_t k = 0; k < 2; k++)
    for (size_t i = 0; i < NRUNS; i++) {
      if (quick_tests() && i % 2)
        continue;
      cr_assert_eq(run_defect(ids[k], i, tr), 0, "defect%d run %zu failed", ids[k], i);
      cli_out_t r;
      run_cli(&r, 60, "check", tr, NULL);
      cr_assert_eq(r.status, 0, "defect%d run %zu: check found:\n%s", ids[k], i, r.out);
    }
}

/* The names reach every reader from the trace alone: the listing, check
 * and the story tag events "gather t1 j0", check's fix and the story name
 * the barrier; a registration without names reads "P2 t1 j0". */
Test(explain, the_collectives_names_reach_the_readers, .init = make_dir,
     .fini = remove_dir, .timeout = 300)
{
  char tr[256], so[256], copy[256], cp[600];
  snprintf(tr, sizeof tr, "%s/named.cstrace", dir);
  so_path(2, so, sizeof so);
  snprintf(copy, sizeof copy, "%s/named.so", dir);
  snprintf(cp, sizeof cp, "cp '%s' '%s'", so, copy);
  cr_assert_eq(system(cp), 0);
  cr_assert_eq(run_so(copy, 1, tr), 1, "the missing READY barrier passed");
  /* The readers never load the plug-in: the file the header names is gone. */
  cr_assert_eq(remove(copy), 0);
  cli_out_t r;
  run_cli(&r, 60, "trace", tr, NULL);
  cr_assert(strstr(r.out, "[gather t1 j0]") || strstr(r.out, "gather t1 j0"),
            "the listing has no 'gather t1 j0':\n%.3000s", r.out);
  cr_assert(strstr(r.out, "publish t0 j0"), "no 'publish t0 j0' in the listing");
  run_cli(&r, 60, "check", tr, NULL);
  cr_assert_eq(r.status, 1);
  cr_assert(strstr(r.out, "at gather t"), "check does not tag with phases:\n%s", r.out);
  cr_assert(strstr(r.out, "its READY barrier"), "check's fix does not name the "
            "barrier:\n%s", r.out);

  /* A name with a space is refused when the plug-in is loaded. */
  char bad[256];
  so_path(10, bad, sizeof bad);
  run_cli(&r, 60, "run", "--algo", bad, "--ranks", "2", "--count", "2", NULL);
  cr_assert_eq(r.status, 2, "exit %d:\n%s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.err, "'gather all' is not accepted") && count_lines(r.err) == 1,
            "%s", r.err);

  snprintf(tr, sizeof tr, "%s/unnamed.cstrace", dir);
  cr_assert_eq(run_defect(9, 1, tr), 0);
  run_cli(&r, 60, "trace", tr, NULL);
  cr_assert(strstr(r.out, "P2 t1 j0"), "an unnamed phase is not 'P2 t1 j0':\n%.3000s",
            r.out);
  cr_assert_not(strstr(r.out, "gather"), "names from nowhere:\n%.3000s", r.out);
}
