/*
 * test_check.c - the happens-before checker (sim/trace/check.h) and
 * `collsim check`: the shipped bug traces name the right pair of events,
 * fresh runs of every ordering mutation are reported (passing free-mode
 * runs too), correct runs of every algorithm give no finding over a sweep
 * of shapes, dtypes, memory models and schedules, and a small race
 * benchmark of device-API programs, each labelled race or no race by
 * construction, is classified with precision and recall 1.0.
 * Runs the real binary (COLLSIM_BIN, set by ctest) for the runs; the
 * benchmark launches its worlds in-process and records them with the
 * tracer, as test_trace.c does.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../collectives/bugs.h"
#include "../sim/launch.h"
#include "../sim/sched.h"
#include "../sim/trace.h"
#include "../sim/trace/check.h"
#include "../sim/trace/story.h"
#include "../window/world.h"
#include "harness.h"

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif
#define BUGS COLLSIM_SOURCE_DIR "/traces/bugs/"

static char tmpdir[64];
static void mk_tmpdir(void)
{
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/collsim-check-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}
static void rm_tmpdir(void)
{
  if (getenv("KEEPTMP"))
    return;
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* A checked trace: its header and the report, streamed from the file;
 * the same trace loaded whole and fed in order must report the same. */
typedef struct checked {
  cs_trace_header_t h;
  cs_check_report_t r;
} checked_t;

static void check_file(const char *path, checked_t *c)
{
  char why[512];
  cs_trace_t t;
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
  c->h = t.hdr;
  cs_check_report_t loaded;
  cr_assert_eq(cs_check_run(&t, &loaded), 0);
  cs_trace_free(&t);
  cr_assert_eq(cs_check_file(path, &c->r, why, sizeof(why)), 0, "%s", why);
  cr_assert_eq(c->r.n, loaded.n, "streamed %llu findings, loaded %llu",
               (unsigned long long)c->r.n, (unsigned long long)loaded.n);
  cr_assert_eq(c->r.total, loaded.total);
  cr_assert_eq(c->r.records, loaded.records);
  for (uint64_t i = 0; i < c->r.n; i++)
    cr_assert(c->r.f[i].kind == loaded.f[i].kind && c->r.f[i].a.seq == loaded.f[i].a.seq &&
              c->r.f[i].b.seq == loaded.f[i].b.seq, "finding %llu differs",
              (unsigned long long)i);
  cs_check_report_fini(&loaded);
}

static void checked_fini(checked_t *c)
{
  cs_check_report_fini(&c->r);
}

/* A finding of `kind` whose events are of kinds ka and kb (0: any), in
 * either order for races when `any_order`; NULL if none. */
static const cs_check_finding_t *find(const checked_t *c, uint32_t kind,
                                      uint32_t ka, uint32_t kb, int any_order)
{
  for (uint64_t i = 0; i < c->r.n; i++) {
    const cs_check_finding_t *f = &c->r.f[i];
    const cs_trace_rec_t *a = f->has & CS_CHECK_HAS_A ? &f->a : NULL;
    const cs_trace_rec_t *b = f->has & CS_CHECK_HAS_B ? &f->b : NULL;
    if (f->kind != kind)
      continue;
    int fwd = (!ka || (a && a->kind == ka)) && (!kb || (b && b->kind == kb));
    int rev = any_order && (!ka || (b && b->kind == ka)) &&
              (!kb || (a && a->kind == kb));
    if (fwd || rev)
      return f;
  }
  return NULL;
}

/* ------------------------------------------------------------ bug traces */

Test(check, shipped_bug_traces_name_the_right_pair, .timeout = 60)
{
  checked_t c;
  const cs_check_finding_t *f;

  check_file(BUGS "no-fence-before-notify.cstrace", &c);
  f = find(&c, CS_CHECK_RACE, CS_EV_STORE, CS_EV_LOAD, 0);
  cr_assert(f && f->cause == CS_CHECK_NO_FENCE, "no store->load race for want of a fence");
  checked_fini(&c);

  check_file(BUGS "ring-no-ready-barrier.cstrace", &c);
  f = find(&c, CS_CHECK_RACE, CS_EV_STORE, CS_EV_LOAD, 0);
  cr_assert(f, "no store->load race");
  cr_assert_neq(f->a.rank, f->b.rank);
  checked_fini(&c);

  check_file(BUGS "mesh-no-chunk-barrier.cstrace", &c);
  f = find(&c, CS_CHECK_RACE, CS_EV_LOAD, CS_EV_STORE, 0);
  cr_assert(f && f->cause == CS_CHECK_NO_READ_DONE, "no load->store (WAR) race");
  cr_assert_neq(f->a.rank, f->b.rank);
  checked_fini(&c);

  check_file(BUGS "early-return.cstrace", &c);
  cr_assert(find(&c, CS_CHECK_RACE, CS_EV_LOAD, CS_EV_STORE, 1), "no race");
  checked_fini(&c);

  check_file(BUGS "signal-reuse.cstrace", &c);
  cr_assert(find(&c, CS_CHECK_NOT_RESET, CS_EV_NOTIFY, 0, 0), "cells not reset not seen");
  cr_assert(find(&c, CS_CHECK_RACE, CS_EV_STORE, CS_EV_LOAD, 1), "no race");
  checked_fini(&c);

  check_file(BUGS "wait-eq.cstrace", &c);
  cr_assert(find(&c, CS_CHECK_WAIT_EQ, 0, 0, 0), "no Eq hazard");
  checked_fini(&c);

  check_file(BUGS "inactive-lane-remote-read.cstrace", &c);
  f = find(&c, CS_CHECK_DEAD_READ, CS_EV_LOAD, 0, 0);
  cr_assert(f, "the inactive lane's remote read is not reported");
  const cs_trace_rec_t *a = &f->a;
  cr_assert(a->peer == (a->rank + c.h.nranks - 1) % c.h.nranks &&
            a->elem_off == 0 && a->valid == 1 && a->phase == 2);
  cr_assert_eq(find(&c, CS_CHECK_RACE, 0, 0, 0), NULL);
  checked_fini(&c);
}

/* What check cannot see: a dropped tail is elements nobody touches, an
 * out-of-slot fault is a bounds defect; both come back clean, and say so. */
Test(check, non_ordering_bugs_come_back_clean_and_say_why, .timeout = 60)
{
  cli_out_t r;
  run_cli(&r, 30, "check", BUGS "ring-drop-tail.cstrace", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "check sees ordering only"), "%s", r.out);
  run_cli(&r, 30, "check", BUGS "unaligned-slots.cstrace", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "FAILED") && strstr(r.out, "bounds"), "%s", r.out);
}

Test(check, exit_codes_and_formats, .timeout = 60)
{
  cli_out_t r;
  run_cli(&r, 30, "check", BUGS "no-fence-before-notify.cstrace", NULL);
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.out, "a fence before the notify orders them"), "%s", r.out);
  cr_assert(strstr(r.out, "[RS t"), "%s", r.out);
  run_cli(&r, 30, "check", "--format", "jsonl", BUGS "no-fence-before-notify.cstrace", NULL);
  cr_assert_eq(r.status, 1, "%s", r.err);
  cr_assert(strstr(r.out, "{\"finding\":\"race\",\"cause\":\"no-fence\""), "%s", r.out);
  cr_assert(strstr(r.out, "{\"summary\":"), "%s", r.out);
  run_cli(&r, 30, "check", COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  run_cli(&r, 30, "check", "/nonexistent.cstrace", NULL);
  cr_assert_eq(r.status, 2);
  run_cli(&r, 30, "check", COLLSIM_SOURCE_DIR "/traces/FORMAT.md", NULL);
  cr_assert_eq(r.status, 2);
  run_cli(&r, 30, "check", "--format", "xml", BUGS "wait-eq.cstrace", NULL);
  cr_assert_eq(r.status, 2);
  run_cli(&r, 30, "help", "check", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "usage: collsim check TRACE"), "%s", r.out);
  run_cli(&r, 30, "--help", NULL);
  cr_assert(strstr(r.out, "  check "), "%s", r.out);
}

/* ------------------------------------------------------------ fresh runs */

static int split(char *s, char **args, int k)
{
  for (char *tok = strtok(s, " "); tok; tok = strtok(NULL, " "))
    args[k++] = tok;
  return k;
}

/* `collsim run OPTS --trace T` then `collsim check T`; returns check's
 * exit status, and the run's in *run_status. */
static int run_and_check(const char *opts, const char *trace, int *run_status)
{
  char buf[512];
  snprintf(buf, sizeof(buf), "%s", opts);
  char *args[64] = {"run"};
  int k = split(buf, args, 1);
  args[k++] = "--trace";
  args[k++] = (char *)trace;
  args[k] = NULL;
  cli_out_t r;
  run_argv(&r, 120, args);
  if (run_status)
    *run_status = r.status;
  run_cli(&r, 120, "check", trace, NULL);
  cr_assert(r.status == 0 || r.status == 1, "check of %s: %d %s", opts,
            r.status, r.err);
  if (r.status != 0 && !run_status)
    cr_log_error("finding in a correct run (%s):\n%.2000s", opts, r.out);
  return r.status;
}

Test(check, fresh_runs_of_each_ordering_bug_under_its_recipe_are_reported,
     .timeout = 300, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  for (int b = 1; b < CS_NBUGS; b++) {
    if (b == CS_BUG_RING_DROP_TAIL || b == CS_BUG_UNALIGNED_SLOTS ||
        b == CS_BUG_NR_MISMATCH)
      continue; /* not ordering defects */
    char opts[400], trace[128];
    snprintf(opts, sizeof(opts), "%s", cs_bug_table[b].recipe);
    char *tr = strstr(opts, " --trace FILE");
    if (tr)
      *tr = 0;
    size_t len = strlen(opts);
    snprintf(opts + len, sizeof(opts) - len, " --bug %s --iters %u --timeout 5",
             cs_bug_table[b].name, cs_bug_min_calls(b));
    snprintf(trace, sizeof(trace), "%s/%s.cstrace", tmpdir, cs_bug_table[b].name);
    int st;
    cr_assert_eq(run_and_check(opts, trace, &st), 1, "%s not reported", opts);
  }
}

/* Without --schedule every store lands at issue and the run passes; the
 * missing fence is in the trace all the same. */
Test(check, passing_free_mode_runs_of_the_ordering_bugs_are_reported,
     .timeout = 300, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  static const char *const runs[] = {
      "--algo ring --ranks 3 --count 40 --bug no-fence-before-notify",
      "--algo mesh --ranks 4 --count 4097 --bug no-fence-before-notify",
      "--algo host --ranks 2 --count 600 --dtype bf16 --bug no-fence-before-notify",
      "--algo ring --ranks 4 --count 17 --dtype fp16 --bug inactive-lane-remote-read",
      "--algo ring --ranks 5 --count 33 --dtype bf16 --bug inactive-lane-remote-read",
  };
  char trace[128];
  snprintf(trace, sizeof(trace), "%s/free.cstrace", tmpdir);
  for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
    int reported = 0, passed = 0;
    for (int k = 0; k < 10; k++) {
      int st;
      reported += run_and_check(runs[i], trace, &st) == 1;
      passed += st == 0;
    }
    cr_log_info("%s: %d of 10 passed, %d reported", runs[i], passed, reported);
    cr_assert_geq(reported, 8, "%s: %d of 10 reported", runs[i], reported);
  }
}

/* ------------------------------------------------------------ explanations */

/* What the first finding of a mutation must name: the edge the reference
 * has where the mutation took it out (bugs.h), true by construction, not
 * read off the checker. */
typedef enum edge {
  E_READY,     /* store, fence, notify, wait, then the peer's load */
  E_READ_DONE, /* load, notify, wait, then the owner's store */
  E_FENCE,     /* store, fence, then the notify the peer's load waits on */
  E_DDR,       /* ... the fence's DDR half after the pipe barrier */
  E_PIPE,      /* ... the fence's pipe half before the DDR fence */
  E_PUSH_DONE, /* put, fence, notify, wait, then the receiver's access */
  E_INPUT,     /* the own input's store, fence, notify, wait, then a
                  peer's put into it */
  E_RESET,     /* the epilogue that clears the cells at the end of a call */
  E_EQ,        /* waits with >= */
  E_OWN,       /* the rank's own store, fence, then its load of it (the
                  source read of a put) */
  E_UNUSED,    /* no remote load on an inactive lane */
} edge_t;

static edge_t true_edge(const cs_mutation_t *m)
{
  if (m->no_ready_barrier)
    return E_READY;
  if (m->no_push_return) /* the left's last put, then the rank's read */
    return E_PUSH_DONE;
  if (m->left_wait_only) /* the own input's store, then the left's add */
    return E_INPUT;
  if (m->no_chunk_barrier || m->no_final_barrier)
    return E_READ_DONE;
  if (m->no_snapshot_barrier) /* ibing: the own snapshot, then the add */
    return E_READ_DONE;
  if (m->no_fence)
    return E_FENCE;
  if (m->drain_only || m->stage_in_drain_only)
    return E_DDR;
  if (m->no_put_tail_drain) /* the last put, a DDR fence, the notify */
    return E_PIPE;
  if (m->push_own_late) /* the own read, then READY, then the push */
    return E_READ_DONE;
  if (m->no_push_done)
    return E_PUSH_DONE;
  if (m->no_put_predrain) /* the own store, then the put's read of it */
    return E_OWN;
  if (m->no_epilogue || m->epilogue_every_peer)
    return E_RESET;
  if (m->wait_eq)
    return E_EQ;
  return E_UNUSED;
}

static int is_write(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT;
}

/* A race between two ranks over the window of one of them, a the writer
 * and b a reader of it (want_write_first) or the other way round. */
static int cross_race(const cs_check_finding_t *f, int want_write_first)
{
  if (f->kind != CS_CHECK_RACE || f->a.rank == f->b.rank)
    return 0;
  const cs_trace_rec_t *w = want_write_first ? &f->a : &f->b;
  const cs_trace_rec_t *r = want_write_first ? &f->b : &f->a;
  return is_write(w->kind) && r->kind == CS_EV_LOAD && r->peer == w->peer;
}

/* Whether finding f names edge e, its fix the edge the reference has. */
static int names_edge(const cs_check_finding_t *f, edge_t e)
{
  switch (e) {
  case E_READY: return cross_race(f, 1) && f->cause == CS_CHECK_NO_SIGNAL;
  case E_READ_DONE: return cross_race(f, 0) && f->cause == CS_CHECK_NO_READ_DONE;
  case E_FENCE: return cross_race(f, 1) && f->cause == CS_CHECK_NO_FENCE;
  case E_DDR:
    return cross_race(f, 1) && f->cause == CS_CHECK_NO_FENCE &&
           f->fence_part == CS_CHECK_PART_DDR;
  case E_PIPE:
    return cross_race(f, 1) && f->cause == CS_CHECK_NO_FENCE &&
           f->fence_part == CS_CHECK_PART_PIPE;
  case E_PUSH_DONE: /* the receiver's load or store of what was put */
    return f->kind == CS_CHECK_RACE && f->a.kind == CS_EV_PUT &&
           f->b.rank == f->a.peer && f->b.peer == f->a.peer &&
           f->a.rank != f->b.rank && f->cause == CS_CHECK_NO_SIGNAL;
  case E_INPUT:
    return f->kind == CS_CHECK_RACE && f->a.kind == CS_EV_STORE &&
           f->b.kind == CS_EV_PUT && f->b.peer == f->a.rank &&
           f->a.rank != f->b.rank && f->cause == CS_CHECK_NO_SIGNAL;
  case E_RESET: return f->kind == CS_CHECK_NOT_RESET && f->cause == 1;
  case E_OWN:
    return f->kind == CS_CHECK_RACE && f->a.rank == f->b.rank &&
           f->a.kind == CS_EV_STORE && f->b.kind == CS_EV_LOAD &&
           f->a.peer == f->a.rank && f->b.peer == f->a.rank;
  case E_EQ: return f->kind == CS_CHECK_WAIT_EQ;
  default: return f->kind == CS_CHECK_DEAD_READ;
  }
}

/* Whether race f between two ranks is told against the order the
 * mutation's reference means: a read-complete barrier proposed where a
 * READY barrier or fence is missing (the load first), or the reverse. */
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

/* The schedules each mutation is run under: its recipe's, three random
 * seeds, a pct one, and free mode (where most runs pass). */
static const char *const expl_sched[] = {"", "random:1", "random:2",
                                          "random:3", "pct:2:1", "free"};
#define NEXPL (sizeof(expl_sched) / sizeof(expl_sched[0]))

/* The run options of mutation b under schedule i of expl_sched. */
static void expl_opts(int b, size_t i, char *out, size_t n)
{
  char r[400], *args[32];
  snprintf(r, sizeof(r), "%s", cs_bug_table[b].recipe);
  int k = split(r, args, 0), len = 0;
  const char *mm = NULL;
  for (int j = 0; j < k; j++) {
    if (!strcmp(args[j], "--trace") || !strcmp(args[j], "--schedule") ||
        !strcmp(args[j], "--memory-model")) {
      if (!strcmp(args[j], "--schedule") && i == 0)
        len += snprintf(out + len, n - (size_t)len, "--schedule %s ", args[j + 1]);
      if (!strcmp(args[j], "--memory-model"))
        mm = args[j + 1];
      j++;
      continue;
    }
    len += snprintf(out + len, n - (size_t)len, "%s ", args[j]);
  }
  if (i > 0 && strcmp(expl_sched[i], "free"))
    len += snprintf(out + len, n - (size_t)len, "--schedule %s ", expl_sched[i]);
  if (mm && strcmp(expl_sched[i], "free"))
    len += snprintf(out + len, n - (size_t)len, "--memory-model %s ", mm);
  snprintf(out + len, n - (size_t)len, "--bug %s --iters %u --timeout 5",
           cs_bug_table[b].name, cs_bug_min_calls(b));
}

typedef struct expl {
  uint32_t traces, first_right, against, follows_wrong;
} expl_t;

/* Runs every ordering mutation under each schedule of expl_sched and
 * checks each trace: how often the first finding names the true edge,
 * how many traces have a race told against the reference's order, and (a
 * run whose cells are not reset) how many races do not say they follow
 * from the cell. */
static expl_t explain_mutations(void)
{
  expl_t e = {0};
  char trace[128], opts[512];
  snprintf(trace, sizeof(trace), "%s/expl.cstrace", tmpdir);
  for (int b = 1; b < CS_NBUGS; b++) {
    if (b == CS_BUG_RING_DROP_TAIL || b == CS_BUG_UNALIGNED_SLOTS ||
        b == CS_BUG_NR_MISMATCH)
      continue; /* not ordering defects */
    edge_t want = true_edge(&cs_bug_table[b].mut);
    uint32_t right = 0, n = 0;
    for (size_t i = 0; i < NEXPL; i++) {
      expl_opts(b, i, opts, sizeof(opts));
      int st;
      if (run_and_check(opts, trace, &st) != 1)
        continue; /* nothing to explain (the detection tests count these) */
      checked_t c;
      check_file(trace, &c);
      n++;
      int ok = names_edge(&c.r.f[0], want), against = 0, follows = 0;
      for (uint64_t j = 0; j < c.r.n; j++) {
        against |= against_order(&c.r.f[j], want);
        follows |= want == E_RESET && c.r.f[j].kind == CS_CHECK_RACE &&
                   c.r.f[j].follows != 1;
      }
      right += ok;
      e.against += against;
      e.follows_wrong += follows;
      if (!ok || against || follows)
        cr_log_error("%s (run %s): first finding %s%s%s", cs_bug_table[b].name,
                     opts, cs_check_kind_name(c.r.f[0].kind),
                     against ? "; a race against the reference's order" : "",
                     follows ? "; a race that does not follow from the cell" : "");
      checked_fini(&c);
    }
    printf("explanations: %s: the first finding names the true edge in %u "
           "of %u traces\n", cs_bug_table[b].name, right, n);
    e.traces += n;
    e.first_right += right;
  }
  return e;
}

Test(check, first_finding_names_the_true_edge_of_each_mutation,
     .timeout = 300, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  expl_t e = explain_mutations();
  cr_assert_gt(e.traces, 20);
  cr_assert_eq(e.first_right, e.traces, "the first finding names the true "
               "edge in %u of %u traces", e.first_right, e.traces);
}

Test(check, no_race_is_told_against_the_references_order, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  expl_t e = explain_mutations();
  cr_assert_gt(e.traces, 20);
  cr_assert_eq(e.against, 0, "%u of %u traces propose an edge backwards",
               e.against, e.traces);
}

/* Stale credits across calls: the cell the first call leaves unreset is
 * the first finding, and the races of the later calls follow from it. */
Test(check, stale_credits_come_first_and_their_races_follow_from_them,
     .timeout = 120, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char trace[128], opts[512];
  snprintf(trace, sizeof(trace), "%s/reuse.cstrace", tmpdir);
  uint32_t races = 0;
  for (size_t i = 0; i < NEXPL; i++) {
    expl_opts(CS_BUG_SIGNAL_REUSE, i, opts, sizeof(opts));
    int st;
    cr_assert_eq(run_and_check(opts, trace, &st), 1, "%s: no finding", opts);
    checked_t c;
    check_file(trace, &c);
    cr_assert(names_edge(&c.r.f[0], E_RESET), "%s: first finding %s", opts,
              cs_check_kind_name(c.r.f[0].kind));
    cr_assert_eq(c.r.f[0].follows, 0);
    for (uint64_t j = 1; j < c.r.n; j++)
      if (c.r.f[j].kind == CS_CHECK_RACE) {
        cr_assert_eq(c.r.f[j].follows, 1, "%s: finding %llu does not follow "
                     "from 1", opts, (unsigned long long)j + 1);
        races++;
      }
    checked_fini(&c);
  }
  cr_assert_gt(races, 0, "no race in the later calls");
  cli_out_t r;
  run_cli(&r, 30, "check", trace, NULL);
  cr_assert(strstr(r.out, "1. cell not reset") && strstr(r.out, "ends call 1 at"),
            "%s", r.out);
  cr_assert(strstr(r.out, "follows from 1)"), "%s", r.out);
}

/* ------------------------------------------------------------ correct runs */

/* algo x N x count x dtype x (free | a schedule under fifo, relaxed or
 * a2a3), two calls each (so the epilogue and the window reuse are in):
 * nothing to report. COLLSIM_QUICK: one dtype per (N, count). */
static void sweep(const char *algo, uint32_t nmax, const char *sched_kind)
{
  static const char *const dt[] = {"fp32", "fp16", "bf16"};
  static const char *const mm[] = {"fifo", "relaxed", "a2a3"};
  char trace[128], opts[300];
  snprintf(trace, sizeof(trace), "%s/sweep.cstrace", tmpdir);
  int runs = 0, bad = 0;
  for (uint32_t n = 1; n <= nmax; n++) {
    uint64_t counts[] = {1, n > 1 ? n - 1 : 2, n + 1, 17, 4097};
    int two_n = !strcmp(algo, "ring-bidir"); /* a multiple of 2N */
    int fp32_only = !strcmp(algo, "host-push") || two_n ||
                    !strcmp(algo, "ibing");
    if (!strcmp(algo, "twophase") || !strcmp(algo, "ring-nb") || fp32_only) /* a multiple of N */
      for (size_t ci = 0; ci < 5; ci++)
        counts[ci] = (counts[ci] + n - 1) / n * n;
    for (size_t ci = 0; two_n && ci < 5; ci++)
      counts[ci] = (counts[ci] + 2 * n - 1) / (2 * n) * (2 * n);
    for (size_t ci = 0; ci < 5; ci++)
      for (int d = 0; d < 3; d++) {
        /* quick: one dtype per (N, count), each dtype in turn */
        if (quick_tests() && (size_t)d != (n + ci) % 3 && !fp32_only)
          continue;
        if (fp32_only && d)
          continue;
        uint64_t seed = n * 1000 + ci * 10 + (uint64_t)d;
        char sched[80] = "";
        if (!strcmp(sched_kind, "random"))
          snprintf(sched, sizeof(sched), " --schedule random:%llu --memory-model %s",
                   (unsigned long long)seed, mm[seed % 3]);
        else if (!strcmp(sched_kind, "pct"))
          snprintf(sched, sizeof(sched), " --schedule pct:%llu:%llu --memory-model %s",
                   (unsigned long long)seed, (unsigned long long)(1 + seed % 3),
                   mm[(seed / 2) % 3]);
        snprintf(opts, sizeof(opts), "--algo %s --ranks %u --count %llu "
                 "--dtype %s --iters 2%s", algo, n, (unsigned long long)counts[ci],
                 dt[d], sched);
        int st;
        bad += run_and_check(opts, trace, &st) != 0;
        cr_assert_eq(st, 0, "%s: the run itself failed", opts);
        runs++;
      }
  }
  cr_log_info("%s %s: %d runs, %d with findings", algo, sched_kind, runs, bad);
  cr_assert_eq(bad, 0, "%d of %d correct runs had findings", bad, runs);
}

#define SWEEP_NAMED(algo, name, kind, nmax)                                  \
  Test(check, correct_##algo##_##kind##_runs_have_no_findings, .timeout = 600, \
       .init = mk_tmpdir, .fini = rm_tmpdir)                                 \
  {                                                                          \
    sweep(name, nmax, #kind);                                                \
  }
#define SWEEP(algo, kind, nmax) SWEEP_NAMED(algo, #algo, kind, nmax)
SWEEP(mesh, free, 5)
SWEEP(ring, free, 5)
SWEEP(host, free, 5)
SWEEP(mesh, random, 4)
SWEEP(ring, random, 4)
SWEEP(host, random, 3)
SWEEP(mesh, pct, 3)
SWEEP(ring, pct, 4)
SWEEP(host, pct, 3)
SWEEP_NAMED(ring_push, "ring-push", free, 5)
SWEEP_NAMED(ring_push, "ring-push", random, 4)
SWEEP_NAMED(ring_push, "ring-push", pct, 3)
SWEEP(twophase, free, 4)
SWEEP(twophase, random, 3)
SWEEP(twophase, pct, 3)
SWEEP_NAMED(host_push, "host-push", free, 8)
SWEEP_NAMED(host_push, "host-push", random, 5)
SWEEP_NAMED(host_push, "host-push", pct, 5)
SWEEP_NAMED(ring_bidir, "ring-bidir", free, 8)
SWEEP_NAMED(ring_bidir, "ring-bidir", random, 5)
SWEEP_NAMED(ring_bidir, "ring-bidir", pct, 5)
SWEEP(ibing, free, 2)
SWEEP(ibing, random, 2)
SWEEP(ibing, pct, 2)
SWEEP_NAMED(ring_nb, "ring-nb", free, 4)
SWEEP_NAMED(ring_nb, "ring-nb", random, 3)
SWEEP_NAMED(ring_nb, "ring-nb", pct, 3)
SWEEP(onephase, free, 4)
SWEEP(onephase, random, 3)
SWEEP(onephase, pct, 3)

/* Larger shapes: N up to 8 and 65537 elements, once each. */
Test(check, correct_runs_at_eight_ranks_and_65537_elements_have_no_findings,
     .timeout = 600, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  static const char *const runs[] = {
      "--algo ring --ranks 8 --count 65537 --dtype fp16 --iters 2",
      "--algo mesh --ranks 7 --count 65537 --iters 2",
      "--algo host --ranks 8 --count 9 --dtype bf16 --iters 2",
      "--algo ring --ranks 6 --count 7 --iters 2 --schedule random:5 --memory-model relaxed",
      "--algo mesh --ranks 8 --count 9 --dtype fp16 --iters 2 --schedule pct:3:2 --memory-model fifo",
      "--algo ring --ranks 7 --count 65537 --iters 1 --schedule random:9 --memory-model relaxed",
  };
  char trace[128];
  snprintf(trace, sizeof(trace), "%s/big.cstrace", tmpdir);
  for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
    int st;
    cr_assert_eq(run_and_check(runs[i], trace, &st), 0, "%s", runs[i]);
    cr_assert_eq(st, 0, "%s: the run failed", runs[i]);
  }
}

/* ------------------------------------------------------------ race benchmark */

/* Tiny programs on the device API in the style of RMARaceBench: two or
 * three ranks, a handful of events, each race or no race by construction.
 * Slots: data (64 fp32), signal (16 cells), half (17 fp16: its last load
 * of 16 reads the slot's padding). */
enum { S_DATA = 0, S_SIG = 1, S_HALF = 2 };

static uint8_t tilebuf[256];
static cs_tile_t tile(uint32_t es, uint32_t width, uint32_t valid)
{
  return (cs_tile_t){tilebuf, es, width, valid};
}

static void pause_ms(long ms)
{
  struct timespec ts = {0, ms * 1000000};
  nanosleep(&ts, NULL);
}

/* r0 puts data[0..8) into r1, [fences,] notifies; r1 waits, reads it. */
static void put_then_notify(cs_dev_t *d, int fence)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_put(d, &t, 1, S_DATA, 0, 8);
    if (fence)
      cs_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
}
static int p_put_fence(cs_dev_t *d, void *a) { (void)a; put_then_notify(d, 1); return 0; }
static int p_put_nofence(cs_dev_t *d, void *a) { (void)a; put_then_notify(d, 0); return 0; }

/* The halves of the fence (a2a3): r0 puts, then a pipe barrier and/or a
 * DDR fence in the order `how` names, then notifies; r1 waits, reads. */
static void put_halves(cs_dev_t *d, const char *how)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_put(d, &t, 1, S_DATA, 0, 8);
    for (const char *h = how; *h; h++)
      *h == 'p' ? cs_pipe_barrier(d) : cs_ddr_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
}
static int p_put_pipe(cs_dev_t *d, void *a) { (void)a; put_halves(d, "p"); return 0; }
static int p_put_ddr(cs_dev_t *d, void *a) { (void)a; put_halves(d, "d"); return 0; }
static int p_put_pipe_ddr(cs_dev_t *d, void *a) { (void)a; put_halves(d, "pd"); return 0; }
static int p_put_ddr_pipe(cs_dev_t *d, void *a) { (void)a; put_halves(d, "dp"); return 0; }

/* r0 puts, notifies cell 1 (whose own pipe barrier drains the put), DDR
 * fences, notifies cell 0; r1 waits for cell 0, reads: ordered on every
 * model (under relaxed the DDR fence is a whole fence). */
static int p_put_notify_ddr(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_put(d, &t, 1, S_DATA, 0, 8);
    cs_notify(d, 1, S_SIG, 1, CS_NOTIFY_ADD, 1);
    cs_ddr_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
  return 0;
}

/* r0 puts, [drains it with a pipe barrier,] notifies cell 1, then
 * cell 0; r1 waits for cell 0, reads. With the pipe barrier, ordered on
 * every model: under relaxed the pipe barrier waits for the put, under
 * a2a3 the first notify's own DDR fence (after its signal) makes the
 * drained put visible before the second notify is issued (docs'
 * NN+drain). Without it a race: under relaxed a notify orders nothing,
 * under a2a3 the put was still in the pipe at that DDR fence (NN). */
static void put_notify_notify(cs_dev_t *d, int pipe)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_put(d, &t, 1, S_DATA, 0, 8);
    if (pipe)
      cs_pipe_barrier(d);
    cs_notify(d, 1, S_SIG, 1, CS_NOTIFY_ADD, 1);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
}
static int p_put_pipe_nn(cs_dev_t *d, void *a) { (void)a; put_notify_notify(d, 1); return 0; }
static int p_put_nn(cs_dev_t *d, void *a) { (void)a; put_notify_notify(d, 0); return 0; }

/* Two ranks Set cells `c0` and `c1` of rank 0's signal slot (one 64-byte
 * line when they are under 16 apart); with `ordered`, r1 Sets only after
 * r0's Set, a fence and a notify told it so. */
static void two_sets(cs_dev_t *d, uint32_t c0, uint32_t c1, int ordered)
{
  if (d->rank == 0) {
    cs_notify(d, 0, S_SIG, c0, CS_NOTIFY_SET, 1);
    if (ordered) {
      cs_fence(d);
      cs_notify(d, 1, S_SIG, 31, CS_NOTIFY_ADD, 1);
    }
  } else {
    if (ordered)
      cs_wait(d, S_SIG, 31, CS_CMP_GE, 1);
    cs_notify(d, 0, S_SIG, c1, CS_NOTIFY_SET, 2);
  }
}
static int p_set_set_line(cs_dev_t *d, void *a) { (void)a; two_sets(d, 0, 1, 0); return 0; }
static int p_set_set_lines(cs_dev_t *d, void *a) { (void)a; two_sets(d, 0, 16, 0); return 0; }
static int p_set_set_ordered(cs_dev_t *d, void *a) { (void)a; two_sets(d, 0, 1, 1); return 0; }

/* r0 Sets cell 0 of r1's signal slot while r1 adds to cell 1 of it. */
static int p_set_add_line(cs_dev_t *d, void *a)
{
  (void)a;
  if (d->rank == 0)
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_SET, 1);
  else
    cs_notify(d, 1, S_SIG, 1, CS_NOTIFY_ADD, 1);
  return 0;
}

/* r0 stores its data, fences, notifies; r1 loads it before or after its
 * wait. */
static void store_and_read(cs_dev_t *d, int after)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_store(d, &t, S_DATA, 0, 8);
    cs_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    if (!after)
      cs_load(d, &t, 0, S_DATA, 0, 8, 8);
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    if (after)
      cs_load(d, &t, 0, S_DATA, 0, 8, 8);
  }
}
static int p_load_after_wait(cs_dev_t *d, void *a) { (void)a; store_and_read(d, 1); return 0; }
static int p_load_before_wait(cs_dev_t *d, void *a) { (void)a; store_and_read(d, 0); return 0; }

/* r1 reads r0's data; r0 overwrites it after [waiting for] r1's notify
 * (a read-complete barrier, or none). */
static void read_then_overwrite(cs_dev_t *d, int barrier)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 1) {
    cs_load(d, &t, 0, S_DATA, 0, 8, 8);
    cs_notify(d, 0, S_SIG, 1, CS_NOTIFY_ADD, 1);
  } else {
    if (barrier)
      cs_wait(d, S_SIG, 1, CS_CMP_GE, 1);
    cs_store(d, &t, S_DATA, 4, 8);
  }
}
static int p_war_barrier(cs_dev_t *d, void *a) { (void)a; read_then_overwrite(d, 1); return 0; }
static int p_war_none(cs_dev_t *d, void *a) { (void)a; read_then_overwrite(d, 0); return 0; }

/* r0 and r1 each store, fence and notify r2's cell 0, with Add (both) or
 * one Set; r2 waits for both and reads both. */
static void two_notifiers(cs_dev_t *d, int set)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank < 2) {
    cs_store(d, &t, S_DATA, 0, 8);
    cs_fence(d);
    uint32_t op = set && d->rank == 1 ? CS_NOTIFY_SET : CS_NOTIFY_ADD;
    cs_notify(d, 2, S_SIG, 0, op, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, set ? 1 : 2);
    if (!set) {
      cs_load(d, &t, 0, S_DATA, 0, 8, 8);
      cs_load(d, &t, 1, S_DATA, 0, 8, 8);
    }
  }
}
static int p_add_add(cs_dev_t *d, void *a) { (void)a; two_notifiers(d, 0); return 0; }
static int p_add_set(cs_dev_t *d, void *a) { (void)a; two_notifiers(d, 1); return 0; }

/* Two notifiers, one wait for >= 1: only the first notify is needed, so
 * the other notifier's store is not ordered before r2's read of it. */
static int p_ge_first_only(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank < 2) {
    if (d->rank == 1)
      pause_ms(30);
    cs_store(d, &t, S_DATA, 0, 8);
    cs_fence(d);
    cs_notify(d, 2, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
  return 0;
}

/* The padding: r1 loads element 16 of r0's 17-element fp16 slot as 16
 * physical elements (the tail over-read), after r0's store and notify; or
 * r1 loads element 0 as 16 physical while r0 writes elements 8..16 with
 * nothing between them: they overlap only by the physical extent. */
static int p_pad_ordered(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(2, 32, 17);
  if (d->rank == 0) {
    cs_store(d, &t, S_HALF, 0, 17);
    cs_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 0, S_HALF, 16, 1, 16);
  }
  return 0;
}
static int p_pad_phys_race(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(2, 32, 8);
  if (d->rank == 0)
    cs_store(d, &t, S_HALF, 8, 8);
  else
    cs_load(d, &t, 0, S_HALF, 0, 1, 16);
  return 0;
}
/* The same logical element, 16 physical, but r0 writes elements past
 * them (16): no byte in common. */
static int p_pad_disjoint(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(2, 32, 1);
  if (d->rank == 0)
    cs_store(d, &t, S_HALF, 16, 1);
  else
    cs_load(d, &t, 0, S_HALF, 0, 1, 16);
  return 0;
}

/* A 2-D store's footprint is its rows: r0 stores rows 2 x 2 @ stride 8
 * of its data slot (elements 0, 1, 8, 9) while r1, unordered, loads
 * element 8 from it (a race) or elements 2..7, between the rows (none:
 * a contiguous footprint [0, 10) would call it one). And a 2-D load
 * against a 1-D store into its second row. */
static int p_rect_row_race(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 32, 4);
  if (d->rank == 0)
    cs_store_rect(d, &t, S_DATA, 0, 2, 2, 8);
  else
    cs_load(d, &t, 0, S_DATA, 8, 1, 1);
  return 0;
}
static int p_rect_gap(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 32, 6);
  if (d->rank == 0)
    cs_store_rect(d, &t, S_DATA, 0, 2, 2, 8);
  else
    cs_load(d, &t, 0, S_DATA, 2, 6, 6);
  return 0;
}
static int p_rect_load_race(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 32, 4);
  if (d->rank == 0)
    cs_put(d, &t, 1, S_DATA, 9, 1);
  else
    cs_load_rect(d, &t, 1, S_DATA, 0, 2, 2, 8);
  return 0;
}
static int p_rect_load_gap(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 32, 4);
  if (d->rank == 0)
    cs_put(d, &t, 1, S_DATA, 2, 6);
  else
    cs_load_rect(d, &t, 1, S_DATA, 0, 2, 2, 8);
  return 0;
}

/* An Eq wait that r0's second add can pass before r1 looks, or the same
 * with the second add after r1's wait (r1 notifies after it). */
static int p_eq_hazard(cs_dev_t *d, void *a)
{
  (void)a;
  if (d->rank == 0) {
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
    pause_ms(20);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_EQ, 1);
  }
  return 0;
}
static int p_eq_ordered(cs_dev_t *d, void *a)
{
  (void)a;
  if (d->rank == 0) {
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_EQ, 1);
    cs_notify(d, 0, S_SIG, 0, CS_NOTIFY_ADD, 1);
    cs_wait(d, S_SIG, 0, CS_CMP_EQ, 2);
  }
  return 0;
}

/* Local: a rank's own store, then its own load with or without a fence
 * between (under relaxed the store may still be in its queue). */
static void own_store_load(cs_dev_t *d, int fence)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank != 0)
    return;
  cs_store(d, &t, S_DATA, 0, 8);
  if (fence)
    cs_fence(d);
  cs_load(d, &t, 0, S_DATA, 0, 8, 8);
}
static int p_own_fenced(cs_dev_t *d, void *a) { (void)a; own_store_load(d, 1); return 0; }
static int p_own_unfenced(cs_dev_t *d, void *a) { (void)a; own_store_load(d, 0); return 0; }

/* r0 waits for its cell to reach 2; r1 adds 1 once (nothing else could
 * ever add: a wait that times out), or twice. */
static void wait_for_two(cs_dev_t *d, int adds)
{
  if (d->rank == 0) {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 2);
    return;
  }
  for (int i = 0; i < adds; i++)
    cs_notify(d, 0, S_SIG, 0, CS_NOTIFY_ADD, 1);
}
static int p_unsatisfiable(cs_dev_t *d, void *a) { (void)a; wait_for_two(d, 1); return 0; }
static int p_satisfiable(cs_dev_t *d, void *a) { (void)a; wait_for_two(d, 2); return 0; }

/* Reducing puts (cs_put_reduce): r0 reduce-puts into r1's data[0..8)
 * [, fences], notifies; r1 waits and reads. Or r0 and r2 both reduce-put
 * into r1's data[0..8) with nothing between them: a race, since which
 * lands first decides the rounding of binary32 sums. */
static void reduce_put_then_notify(cs_dev_t *d, int fence)
{
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank == 0) {
    cs_put_reduce(d, &t, 1, S_DATA, 0, 8, CS_SUM);
    if (fence)
      cs_fence(d);
    cs_notify(d, 1, S_SIG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 1, S_DATA, 0, 8, 8);
  }
}
static int p_rput_fence(cs_dev_t *d, void *a) { (void)a; reduce_put_then_notify(d, 1); return 0; }
static int p_rput_nofence(cs_dev_t *d, void *a) { (void)a; reduce_put_then_notify(d, 0); return 0; }
static int p_rput_rput(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t = tile(4, 16, 8);
  if (d->rank != 1)
    cs_put_reduce(d, &t, 1, S_DATA, 0, 8, CS_SUM);
  return 0;
}

typedef struct prog {
  const char *name;
  uint32_t    nranks;
  cs_rank_fn  fn;
  int         race;  /* by construction */
  uint32_t    want;  /* the finding kind a race must give */
  int         model; /* -1 free mode, else controlled under this model */
} prog_t;

static const prog_t progs[] = {
    {"put, fence, notify", 2, p_put_fence, 0, 0, -1},
    {"put, notify, no fence", 2, p_put_nofence, 1, CS_CHECK_RACE, -1},
    {"put, notify, no fence (relaxed)", 2, p_put_nofence, 1, CS_CHECK_RACE, CS_MM_RELAXED},
    {"put, fence, notify (fifo)", 2, p_put_fence, 0, 0, CS_MM_FIFO},
    {"put, fence, notify (relaxed)", 2, p_put_fence, 0, 0, CS_MM_RELAXED},
    {"load after a satisfied wait", 2, p_load_after_wait, 0, 0, -1},
    {"load after a satisfied wait (relaxed)", 2, p_load_after_wait, 0, 0, CS_MM_RELAXED},
    {"load before the wait", 2, p_load_before_wait, 1, CS_CHECK_RACE, -1},
    {"load before the wait (fifo)", 2, p_load_before_wait, 1, CS_CHECK_RACE, CS_MM_FIFO},
    {"overwrite after a read-complete wait", 2, p_war_barrier, 0, 0, -1},
    {"overwrite with no read-complete wait", 2, p_war_none, 1, CS_CHECK_RACE, -1},
    {"overwrite with no read-complete wait (relaxed)", 2, p_war_none, 1, CS_CHECK_RACE, CS_MM_RELAXED},
    {"two notifiers Add, wait for both", 3, p_add_add, 0, 0, -1},
    {"two notifiers Add, wait for both (relaxed)", 3, p_add_add, 0, 0, CS_MM_RELAXED},
    {"notify Add vs Set", 3, p_add_set, 1, CS_CHECK_MIXED_OPS, -1},
    {"wait >= 1 needs one of two notifiers", 3, p_ge_first_only, 1, CS_CHECK_RACE, -1},
    {"padding read after the store", 2, p_pad_ordered, 0, 0, -1},
    {"padding read after the store (fifo)", 2, p_pad_ordered, 0, 0, CS_MM_FIFO},
    {"padding over-read races a store", 2, p_pad_phys_race, 1, CS_CHECK_RACE, -1},
    {"padding over-read, no byte shared", 2, p_pad_disjoint, 0, 0, -1},
    {"2-D store row races a load", 2, p_rect_row_race, 1, CS_CHECK_RACE, -1},
    {"2-D store row races a load (fifo)", 2, p_rect_row_race, 1, CS_CHECK_RACE, CS_MM_FIFO},
    {"2-D store, a load between its rows", 2, p_rect_gap, 0, 0, -1},
    {"2-D store, a load between its rows (relaxed)", 2, p_rect_gap, 0, 0, CS_MM_RELAXED},
    {"2-D load row races a put", 2, p_rect_load_race, 1, CS_CHECK_RACE, -1},
    {"2-D load, a put between its rows", 2, p_rect_load_gap, 0, 0, -1},
    {"wait Eq passed by a second add", 2, p_eq_hazard, 1, CS_CHECK_WAIT_EQ, -1},
    {"wait Eq, second add ordered after it", 2, p_eq_ordered, 0, 0, -1},
    {"a wait the notifies satisfy", 2, p_satisfiable, 0, 0, -1},
    {"own store, fence, own load", 1, p_own_fenced, 0, 0, -1},
    {"own store, own load, no fence (relaxed)", 1, p_own_unfenced, 1, CS_CHECK_RACE, CS_MM_RELAXED},
    {"a wait nothing can satisfy", 2, p_unsatisfiable, 1, CS_CHECK_UNSATISFIABLE, -1},
    {"put, pipe barrier, notify", 2, p_put_pipe, 1, CS_CHECK_RACE, -1},
    {"put, pipe barrier, notify (a2a3)", 2, p_put_pipe, 1, CS_CHECK_RACE, CS_MM_A2A3},
    {"put, DDR fence, notify", 2, p_put_ddr, 1, CS_CHECK_RACE, -1},
    {"put, DDR fence, pipe barrier, notify (a2a3)", 2, p_put_ddr_pipe, 1, CS_CHECK_RACE, CS_MM_A2A3},
    {"put, pipe barrier, DDR fence, notify", 2, p_put_pipe_ddr, 0, 0, -1},
    {"put, pipe barrier, DDR fence, notify (a2a3)", 2, p_put_pipe_ddr, 0, 0, CS_MM_A2A3},
    {"put, fence, notify (a2a3)", 2, p_put_fence, 0, 0, CS_MM_A2A3},
    {"put, notify, DDR fence, notify", 2, p_put_notify_ddr, 0, 0, -1},
    {"put, notify, DDR fence, notify (a2a3)", 2, p_put_notify_ddr, 0, 0, CS_MM_A2A3},
    {"put, notify, DDR fence, notify (relaxed)", 2, p_put_notify_ddr, 0, 0, CS_MM_RELAXED},
    {"put, pipe barrier, notify, notify", 2, p_put_pipe_nn, 0, 0, -1},
    {"put, pipe barrier, notify, notify (a2a3)", 2, p_put_pipe_nn, 0, 0, CS_MM_A2A3},
    {"put, pipe barrier, notify, notify (relaxed)", 2, p_put_pipe_nn, 0, 0, CS_MM_RELAXED},
    {"put, notify, notify", 2, p_put_nn, 1, CS_CHECK_RACE, -1},
    {"put, notify, notify (a2a3)", 2, p_put_nn, 1, CS_CHECK_RACE, CS_MM_A2A3},
    {"two ranks Set one line", 2, p_set_set_line, 1, CS_CHECK_CLOBBER, -1},
    {"two ranks Set one line (a2a3)", 2, p_set_set_line, 1, CS_CHECK_CLOBBER, CS_MM_A2A3},
    {"two ranks Set two lines", 2, p_set_set_lines, 0, 0, -1},
    {"two ranks Set two lines (a2a3)", 2, p_set_set_lines, 0, 0, CS_MM_A2A3},
    {"two ranks Set one line, ordered", 2, p_set_set_ordered, 0, 0, -1},
    {"two ranks Set one line, ordered (a2a3)", 2, p_set_set_ordered, 0, 0, CS_MM_A2A3},
    {"a Set and another rank's add, one line", 2, p_set_add_line, 1, CS_CHECK_CLOBBER, -1},
    {"reducing put, fence, notify", 2, p_rput_fence, 0, 0, -1},
    {"reducing put, fence, notify (relaxed)", 2, p_rput_fence, 0, 0, CS_MM_RELAXED},
    {"reducing put, fence, notify (a2a3)", 2, p_rput_fence, 0, 0, CS_MM_A2A3},
    {"reducing put, notify, no fence (relaxed)", 2, p_rput_nofence, 1, CS_CHECK_RACE, CS_MM_RELAXED},
    {"two unordered reducing puts into one range", 3, p_rput_rput, 1, CS_CHECK_RACE, -1},
    {"two unordered reducing puts into one range (fifo)", 3, p_rput_rput, 1, CS_CHECK_RACE, CS_MM_FIFO},
};
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

/* Runs program p once (controlled under its model with a random
 * schedule, or free) into trace `path`. */
static void run_prog(const prog_t *p, const char *path, uint64_t seed)
{
  cs_layout_t l;
  cs_layout_init(&l, 32);
  cr_assert_eq(cs_layout_add(&l, "data", 64 * 4, 4), S_DATA);
  cr_assert_eq(cs_layout_add(&l, "signal", 32 * 4, 4), S_SIG);
  cr_assert_eq(cs_layout_add(&l, "half", 17 * 2, 2), S_HALF);
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_RANDOM, .seed = seed,
                       .model = p->model < 0 ? CS_MM_SC : (cs_mm_t)p->model};
  cs_world_opts_t wo = {.timeout_ns = 500000000ull,
                        .trace_bytes = cs_trace_ring_bytes(256),
                        .sched_bytes = p->model >= 0
                                           ? cs_sched_area_bytes(p->nranks, 1u << 16)
                                           : 0};
  cs_world_t w;
  cr_assert_eq(cs_world_create(&w, &l, p->nranks, &wo), 0);
  cs_trace_header_t th = {.algo = 255, .memory_model = sc.model};
  cs_tracer_t *tr;
  cr_assert_eq(cs_tracer_open(&tr, path, &th, &w), 0);
  int st[CS_MAX_RANKS];
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.statuses = st, .report = rep,
                         .sched = p->model >= 0 ? &sc : NULL};
  cs_tracer_launch_opts(tr, &lo);
  cs_launch_result_t res;
  cs_launch(&w, p->fn, NULL, &lo, &res);
  cr_assert_eq(cs_tracer_close(tr, &res, st), 0);
  fclose(rep);
  cs_world_destroy(&w);
}

/* Every program, three times each (other seeds, other timings): the
 * checker's verdict is the label; precision and recall are printed. */
Test(check, race_benchmark_precision_and_recall_are_one, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char path[128];
  snprintf(path, sizeof(path), "%s/bench.cstrace", tmpdir);
  uint32_t tp = 0, fp = 0, fn = 0, tn = 0;
  for (size_t i = 0; i < NPROGS; i++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      const prog_t *p = &progs[i];
      run_prog(p, path, seed);
      checked_t c;
      check_file(path, &c);
      int said = c.r.n > 0;
      int right_kind = !p->race || find(&c, p->want, 0, 0, 0) != NULL;
      if (said && p->race && right_kind)
        tp++;
      else if (said && !p->race)
        fp++;
      else if (p->race)
        fn++;
      else
        tn++;
      if (said != p->race || !right_kind)
        cr_log_error("%s (seed %llu): labelled %s, check found %llu (first: %s)",
                     p->name, (unsigned long long)seed, p->race ? "race" : "no race",
                     (unsigned long long)c.r.n,
                     c.r.n ? cs_check_kind_name(c.r.f[0].kind) : "-");
      checked_fini(&c);
    }
  double precision = tp + fp ? (double)tp / (tp + fp) : 1.0;
  double recall = tp + fn ? (double)tp / (tp + fn) : 1.0;
  printf("race benchmark: %zu programs x 3 runs: %u true positives, %u false "
         "positives, %u false negatives, %u true negatives; precision %.3f, "
         "recall %.3f\n", NPROGS, tp, fp, fn, tn, precision, recall);
  cr_assert_eq(fp, 0);
  cr_assert_eq(fn, 0);
  cr_assert_gt(tp, 0);
  cr_assert_gt(tn, 0);
}

/* ------------------------------------------------------------ reducing put */

/* The reducing put's value, on every model: r0 stores x0 into its data,
 * fences, hands the turn to r1; r1 reduce-puts x1 into r0's data, fences,
 * hands to r2, which adds x2 the same way and tells r0; r0 reads. Each
 * add must round as one C float addition, in that order: (x0+x1)+x2 for
 * values where the other order gives other bits. */
static const float RP_X[3][4] = {{1e8f, 1.0f, -3.5f, 0.1f},
                                 {3.0f, 1e-8f, 2.25f, 0.2f},
                                 {-1e8f, 1.0f, 1.0f, 0.3f}};
static int p_rput_chain(cs_dev_t *d, void *a)
{
  (void)a;
  float b[4];
  cs_tile_t t = {b, 4, 4, 4};
  memcpy(b, RP_X[d->rank], sizeof(b));
  if (d->rank == 0)
    cs_store(d, &t, S_DATA, 0, 4);
  else
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
  if (d->rank > 0)
    cs_put_reduce(d, &t, 0, S_DATA, 0, 4, CS_SUM);
  cs_fence(d);
  cs_notify(d, (d->rank + 1) % 3, S_SIG, 0, CS_NOTIFY_ADD, 1);
  if (d->rank == 0) {
    cs_wait(d, S_SIG, 0, CS_CMP_GE, 1);
    cs_load(d, &t, 0, S_DATA, 0, 4, 4);
    memcpy(cs_world_output(d->world, 0), b, sizeof(b));
  }
  return 0;
}

Test(check, a_reducing_put_adds_in_landing_order_on_every_model, .timeout = 120,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char path[128];
  snprintf(path, sizeof(path), "%s/rput.cstrace", tmpdir);
  static const int models[] = {-1, CS_MM_SC, CS_MM_FIFO, CS_MM_RELAXED,
                               CS_MM_A2A3};
  for (size_t m = 0; m < sizeof(models) / sizeof(models[0]); m++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      int model = models[m];
      cs_layout_t l;
      cs_layout_init(&l, 32);
      cs_layout_add(&l, "data", 64 * 4, 4);
      cs_layout_add(&l, "signal", 32 * 4, 4);
      cs_sched_cfg_t sc = {.strategy = CS_SCHED_RANDOM, .seed = seed,
                           .model = model < 0 ? CS_MM_SC : (cs_mm_t)model};
      cs_world_opts_t wo = {.timeout_ns = 2000000000ull, .io_bytes = 4096,
                            .trace_bytes = cs_trace_ring_bytes(256),
                            .sched_bytes = model >= 0 ? cs_sched_area_bytes(3, 1u << 16) : 0};
      cs_world_t w;
      cr_assert_eq(cs_world_create(&w, &l, 3, &wo), 0);
      cs_trace_header_t th = {.algo = 255, .memory_model = sc.model};
      cs_tracer_t *tr;
      cr_assert_eq(cs_tracer_open(&tr, path, &th, &w), 0);
      int st[CS_MAX_RANKS];
      FILE *rep = tmpfile();
      cs_launch_opts_t lo = {.statuses = st, .report = rep,
                             .sched = model >= 0 ? &sc : NULL};
      cs_tracer_launch_opts(tr, &lo);
      cs_launch_result_t res;
      cr_assert_eq(cs_launch(&w, p_rput_chain, NULL, &lo, &res), 0,
                   "model %d seed %llu", model, (unsigned long long)seed);
      cr_assert_eq(cs_tracer_close(tr, &res, st), 0);
      fclose(rep);
      float got[4];
      memcpy(got, cs_world_output(&w, 0), sizeof(got));
      cs_world_destroy(&w);
      for (int i = 0; i < 4; i++) {
        volatile float e = RP_X[0][i];
        e = e + RP_X[1][i];
        e = e + RP_X[2][i];
        uint32_t gb, eb;
        float ef = e;
        memcpy(&gb, &got[i], 4);
        memcpy(&eb, &ef, 4);
        cr_assert_eq(gb, eb, "model %d seed %llu element %d: %a, want %a",
                     model, (unsigned long long)seed, i, got[i], ef);
      }
      /* the trace: two puts with opcmp 1 (1 + CS_SUM), nothing found */
      char why[256];
      cs_trace_t t;
      cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
      int puts = 0;
      for (uint64_t i = 0; i < t.n; i++)
        if (t.rec[i].kind == CS_EV_PUT) {
          cr_assert_eq(t.rec[i].opcmp, 1u);
          puts++;
        }
      cs_trace_free(&t);
      cr_assert_eq(puts, 2);
      checked_t c;
      check_file(path, &c);
      cr_assert_eq(c.r.n, 0, "model %d: %llu findings (first: %s)", model,
                   (unsigned long long)c.r.n,
                   c.r.n ? cs_check_kind_name(c.r.f[0].kind) : "-");
      checked_fini(&c);
    }
}

/* A race for want of half a fence names the half: a pipe barrier with no
 * DDR fence after it, a DDR fence with no pipe barrier before it (or the
 * two the wrong way round); no half at all names the whole fence. */
Test(check, a_missing_half_of_the_fence_is_named, .timeout = 120,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  static const struct {
    cs_rank_fn fn;
    int model;
    uint32_t part;
  } cases[] = {
      {p_put_pipe, -1, CS_CHECK_PART_DDR},
      {p_put_pipe, CS_MM_A2A3, CS_CHECK_PART_DDR},
      {p_put_ddr, -1, CS_CHECK_PART_PIPE},
      {p_put_ddr_pipe, CS_MM_A2A3, CS_CHECK_PART_DDR},
      {p_put_nofence, -1, CS_CHECK_PART_FENCE},
  };
  char path[128];
  snprintf(path, sizeof(path), "%s/half.cstrace", tmpdir);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    prog_t p = {"half", 2, cases[i].fn, 1, CS_CHECK_RACE, cases[i].model};
    run_prog(&p, path, 1);
    checked_t c;
    check_file(path, &c);
    const cs_check_finding_t *f = find(&c, CS_CHECK_RACE, CS_EV_PUT, CS_EV_LOAD, 0);
    cr_assert_not_null(f, "case %zu: no put -> load race", i);
    cr_assert_eq(f->cause, CS_CHECK_NO_FENCE, "case %zu", i);
    cr_assert_eq(f->fence_part, cases[i].part, "case %zu: part %u, want %u", i,
                 f->fence_part, cases[i].part);
    checked_fini(&c);
  }
}

/* The story shrink tells (story.h) about a race names the edge of the
 * finding it tells, in that finding's order (the intended one), whatever
 * the run did: never a read-complete barrier for a store the load was
 * meant to see because the store happened to land in time, never a
 * notify after a store that was meant to wait for a load. */
Test(check, a_story_names_the_edge_of_its_finding_never_the_reverse,
     .timeout = 300, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char path[128];
  snprintf(path, sizeof(path), "%s/story.cstrace", tmpdir);
  uint32_t told = 0;
  for (size_t i = 0; i < NPROGS; i++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      const prog_t *p = &progs[i];
      if (!p->race || p->want != CS_CHECK_RACE)
        continue;
      run_prog(p, path, seed);
      cs_trace_t t;
      char why[256];
      cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
      cs_check_report_t rep;
      cr_assert_eq(cs_check_run(&t, &rep), 0);
      cs_story_t st;
      cs_trace_story(&t, &rep, UINT32_MAX, UINT64_MAX, &st);
      const cs_check_finding_t *f = &st.finding;
      if (st.has_finding && f->kind == CS_CHECK_RACE &&
          (is_write(f->a.kind) || is_write(f->b.kind)) &&
          (f->a.kind == CS_EV_LOAD || f->b.kind == CS_EV_LOAD)) {
        uint32_t want = f->a.kind == CS_EV_LOAD ? CS_STORY_NEED_READ_DONE
                        : f->cause == CS_CHECK_NO_FENCE && st.need == CS_STORY_NEED_FENCE
                            ? CS_STORY_NEED_FENCE
                            : CS_STORY_NEED_SIGNAL;
        cr_assert_eq(st.need, want, "%s (seed %llu): the story's edge %u, its "
                     "finding's %u (cause %u, first event a %s)", p->name,
                     (unsigned long long)seed, st.need, want, f->cause,
                     f->a.kind == CS_EV_LOAD ? "load" : "write");
        told++;
      }
      cs_check_report_fini(&rep);
      cs_trace_free(&t);
    }
  cr_assert_gt(told, 5, "only %u stories about a write and a load", told);
}

/* A crashed run's trace is checked up to the crash: the races before it
 * are there, and a correct run that crashed has none. */
Test(check, crashed_runs_are_checked_up_to_the_crash, .timeout = 120,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char trace[128];
  snprintf(trace, sizeof(trace), "%s/crash.cstrace", tmpdir);
  int st;
  cr_assert_eq(run_and_check("--algo ring --ranks 3 --count 40 --iters 2 "
                             "--bug no-fence-before-notify --fault 1:segv:150",
                             trace, &st), 1);
  cr_assert_eq(st, 3, "the run did not crash");
  cr_assert_eq(run_and_check("--algo mesh --ranks 3 --count 40 --iters 2 "
                             "--fault 2:segv:40", trace, &st), 0);
  cr_assert_eq(st, 3, "the run did not crash");
  cr_assert_eq(run_and_check("--algo ring --ranks 3 --count 40 --iters 2 "
                             "--fault 0:hang:30 --timeout 1", trace, &st), 0);
  cr_assert_eq(st, 3, "the run did not hang");
}

/* Temporary directories of run --check now in /tmp (other tests may make
 * theirs at the same time: compared as at most the count before). */
static int count_tmp_checks(void)
{
  glob_t g;
  int n = glob("/tmp/collsim-run-check-*", 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
  globfree(&g);
  return n;
}

/* run --check: a clean run passes and says so; a run that passes with a
 * defect fails with exit 1 and the report; no temporary trace is left. */
Test(check, run_check_fails_a_passing_run_with_a_finding, .timeout = 120)
{
  cli_out_t r;
  int before = count_tmp_checks();
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--iters", "2", "--check", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "check:\n0 findings"), "%s", r.out);
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--iters", "1", "--bug", "no-fence-before-notify", "--check", NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "result: bit-exact"), "the run itself should pass: %s", r.out);
  cr_assert(strstr(r.out, "a fence before the notify orders them"), "%s", r.out);
  cr_assert_leq(count_tmp_checks(), before, "a temporary trace was left");
}

/* ------------------------------------------------------ edited traces */

/* A trace file's bytes in one buffer; n its size. */
static uint8_t tracebuf[1 << 22];
static size_t read_trace_file(const char *path)
{
  FILE *in = fopen(path, "rb");
  cr_assert(in, "%s", path);
  size_t n = fread(tracebuf, 1, sizeof(tracebuf), in);
  fclose(in);
  cr_assert(n > sizeof(cs_trace_header_t) && n < sizeof(tracebuf), "%s", path);
  return n;
}

/* A header whose signal slot claims 2^38 cells must not make check or
 * trace --stats allocate for all of them: check refuses the slot with one
 * line (exit 2), --stats reports from the records it has. Both once tried
 * to allocate terabytes. */
static void huge_slot(cs_trace_header_t *h, void *arg)
{
  (void)arg;
  cr_assert(h->layout.nslots >= 2);
  h->layout.slot[1].nbytes = 1ull << 40;
}

Test(check, a_huge_signal_slot_in_the_header_is_not_allocated, .timeout = 60)
{
  char path[] = "/tmp/collsim-hugeslot-XXXXXX";
  edited_trace(COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace", path,
               huge_slot, NULL);
  cli_out_t r;
  run_cli(&r, 30, "check", path, NULL);
  cr_assert_eq(r.status, 2, "%s%s", r.out, r.err);
  cr_assert(strstr(r.err, "too large"), "%s", r.err);
  run_cli(&r, 30, "trace", path, "--stats", NULL);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
}

/* A header whose count and calls make the expected volume larger than
 * 2^64 bytes: trace --stats prints it as a real number instead of
 * converting it to an integer (undefined behaviour, which the sanitizer
 * stage turns into an abort; the fuzz stage found it). */
static void huge_volume(cs_trace_header_t *h, void *arg)
{
  (void)arg;
  h->count = 1ull << 36; /* the most a run takes */
  h->iters = 0xffffffffu;
}

Test(check, a_volume_beyond_64_bits_in_the_header_is_printed, .timeout = 60)
{
  char path[] = "/tmp/collsim-hugevolume-XXXXXX";
  edited_trace(COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace", path,
               huge_volume, NULL);
  cli_out_t r;
  run_cli(&r, 30, "trace", path, "--stats", NULL);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  /* 2(N-1)/N * 2^36 elements * 2 B * (2^32 - 1) calls, as a double */
  cr_assert(strstr(r.out, "2(N-1)/N*S = 885443715331900"), "%s", r.out);
}

/* A header with a tile of 0 bytes: trace --stats skips the figures it
 * cannot derive instead of dividing by zero (a SIGFPE before; the fuzz
 * stage found it). */
static void no_tile(cs_trace_header_t *h, void *arg)
{
  (void)arg;
  h->tile_bytes = 0;
}

Test(check, a_header_with_no_tile_gets_no_formulas, .timeout = 60)
{
  char path[] = "/tmp/collsim-notile-XXXXXX";
  edited_trace(COLLSIM_SOURCE_DIR "/traces/mesh-n3-c4097-fp32-max.cstrace", path,
               no_tile, NULL);
  cli_out_t r;
  run_cli(&r, 30, "trace", path, "--stats", NULL);
  unlink(path);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "rank "), "%s", r.out);
  cr_assert(!strstr(r.out, "verdict"), "%s", r.out);
}

/* A posted op whose dma id is the largest one (an edited record): the
 * checker's window of ops in flight must not grow towards it (it did,
 * without end: base + len wrapped at 2^64; the fuzz stage found it). */
Test(check, a_post_with_the_largest_dma_id_is_ignored, .timeout = 90)
{
  mk_tmpdir();
  char path[128];
  snprintf(path, sizeof(path), "%s/relaxed.cstrace", tmpdir);
  cli_out_t r;
  run_cli(&r, 30, "run", "--algo", "ring", "--ranks", "2", "--count", "8",
          "--schedule", "random:1", "--memory-model", "relaxed", "--trace",
          path, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  size_t n = read_trace_file(path);
  uint64_t nrec = (n - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES, i;
  cs_trace_rec_t x;
  for (i = 0; i < nrec; i++) {
    memcpy(&x, tracebuf + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES, sizeof(x));
    if (x.dma_id != 0)
      break; /* the first record with an id is its post */
  }
  cr_assert_lt(i, nrec, "no posted op in a relaxed run");
  x.dma_id = UINT64_MAX;
  x.checksum = cs_trace_rec_sum(&x);
  memcpy(tracebuf + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES, &x, sizeof(x));
  FILE *out = fopen(path, "wb");
  cr_assert(out);
  cr_assert_eq(fwrite(tracebuf, 1, n, out), n);
  fclose(out);
  run_cli(&r, 30, "check", path, NULL);
  rm_tmpdir();
  cr_assert(r.status == 0 || r.status == 1, "check exited %d: %s", r.status, r.err);
}

/* A 2-D load record edited to claim 2^32 - 1 rows of one element: check
 * follows a rectangle row by row, so the reader must refuse the record
 * with one line instead of walking four billion rows (check did; the fuzz
 * stage found it), and a row count that does not divide the elements
 * likewise (trace printed "rows 3 x 5" for 16 elements). */
static void edit_rect_load(uint32_t rows, uint32_t valid)
{
  mk_tmpdir();
  char path[128];
  snprintf(path, sizeof(path), "%s/rect.cstrace", tmpdir);
  cli_out_t r;
  run_cli(&r, 30, "run", "--algo", "mesh", "--ranks", "2", "--shape", "4x8",
          "--valid", "3,5", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  size_t n = read_trace_file(path);
  uint64_t nrec = (n - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES, i;
  cs_trace_rec_t x;
  for (i = 0; i < nrec; i++) {
    memcpy(&x, tracebuf + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES, sizeof(x));
    if (x.kind == CS_EV_LOAD && x.cell == 3)
      break;
  }
  cr_assert_lt(i, nrec, "no 2-D load in a rectangle run");
  x.cell = rows;
  x.valid = valid;
  x.value = 1;
  x.checksum = cs_trace_rec_sum(&x);
  memcpy(tracebuf + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES, &x, sizeof(x));
  FILE *out = fopen(path, "wb");
  cr_assert(out);
  cr_assert_eq(fwrite(tracebuf, 1, n, out), n);
  fclose(out);
  run_cli(&r, 30, "check", path, NULL);
  cr_assert_eq(r.status, 2, "check exited %d: %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.err, "2-D access"), "%s", r.err);
  run_cli(&r, 30, "trace", path, "--stats", NULL); /* the reader refuses it */
  rm_tmpdir();
  cr_assert_eq(r.status, 2, "trace exited %d: %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.err, "2-D access"), "%s", r.err);
}

Test(check, a_rectangle_of_four_billion_rows_is_refused, .timeout = 90)
{
  edit_rect_load(UINT32_MAX, UINT32_MAX);
}

Test(check, a_rectangle_whose_rows_do_not_divide_it_is_refused, .timeout = 90)
{
  edit_rect_load(3, 16);
}
