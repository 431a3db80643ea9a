/*
 * test_sim.c - device API, futex signals and the launcher, with real forked
 * rank processes. cs_launch() forks, reaps every rank and kills stragglers;
 * each test also has a Criterion timeout.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/launch.h"
#include "../cli/collsim/cli.h"
#include "../window/cs_error.h"

enum { DATA = 0, SIG = 1 };

static cs_world_t world;
static FILE *report;

/* A world with a 64-int32 data slot and a 16-cell signal slot. */
static void make_world(uint32_t n, double timeout_s)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", 64 * 4, 4);
  cs_layout_add(&l, "signal", 16 * 4, 4);
  cs_world_opts_t o = {.io_bytes = 4096, .timeout_ns = (uint64_t)(timeout_s * 1e9)};
  cr_assert_eq(cs_world_create(&world, &l, n, &o), 0);
}

static void setup_world(uint32_t n, double timeout_s)
{
  make_world(n, timeout_s);
  report = tmpfile();
  cr_assert_not_null(report);
}

static char *report_text(void)
{
  static char buf[8192];
  fflush(report);
  rewind(report);
  size_t n = fread(buf, 1, sizeof(buf) - 1, report);
  buf[n] = 0;
  return buf;
}

static int launch(cs_rank_fn fn, void *arg, const cs_fault_t *fault,
                  cs_launch_result_t *res)
{
  cs_launch_opts_t o = {.report = report};
  if (fault)
    o.fault = *fault;
  return cs_launch(&world, fn, arg, &o, res);
}

static void teardown_world(void)
{
  cs_world_destroy(&world);
  if (report)
    fclose(report);
  report = NULL;
  cr_assert_eq(cs_world_count_names(getpid()), 0, "a /collsim-* name leaked");
}

/* ---------------------------------------------------------- notify/wait */

/* Rank r adds 1 to cell [r] of every peer, then waits until every cell of
 * its own is >= 1, then (second phase) Sets cell 8+r at every peer to 7 and
 * waits Eq 7 on each. Each rank writes the values it observed to its io. */
static int notify_wait_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t *out = (int32_t *)cs_world_output(d->world, d->rank);
  for (uint32_t p = 0; p < d->nranks; p++)
    if (p != d->rank)
      cs_notify(d, p, SIG, d->rank, CS_NOTIFY_ADD, 1);
  for (uint32_t s = 0; s < d->nranks; s++)
    if (s != d->rank)
      out[s] = cs_wait(d, SIG, s, CS_CMP_GE, 1);
  for (uint32_t p = 0; p < d->nranks; p++)
    if (p != d->rank)
      cs_notify(d, p, SIG, 8 + d->rank, CS_NOTIFY_SET, 7);
  for (uint32_t s = 0; s < d->nranks; s++)
    if (s != d->rank)
      out[8 + s] = cs_wait(d, SIG, 8 + s, CS_CMP_EQ, 7);
  return 0;
}

Test(signal, add_and_set_reach_ge_and_eq_waiters_across_processes,
     .timeout = 30, .fini = teardown_world)
{
  setup_world(5, 10);
  cs_launch_result_t res;
  cr_assert_eq(launch(notify_wait_body, NULL, NULL, &res), 0, "%s", report_text());
  for (uint32_t r = 0; r < 5; r++) {
    int32_t *out = (int32_t *)cs_world_output(&world, r);
    int32_t *cells = (int32_t *)(cs_world_window(&world, r) + world.ctl->layout.slot[SIG].off);
    for (uint32_t s = 0; s < 5; s++) {
      if (s == r) {
        cr_assert_eq(cells[s], 0, "self cell touched");
        continue;
      }
      cr_assert_eq(out[s], 1);
      cr_assert_eq(cells[s], 1, "rank %u cell %u = %d", r, s, cells[s]);
      cr_assert_eq(out[8 + s], 7);
      cr_assert_eq(cells[8 + s], 7);
    }
  }
}

/* Many increments from many ranks on one cell: AtomicAdd must not lose any. */
static int hammer_body(cs_dev_t *d, void *arg)
{
  uint32_t rounds = *(uint32_t *)arg;
  for (uint32_t i = 0; i < rounds; i++)
    cs_notify(d, 0, SIG, 0, CS_NOTIFY_ADD, 1);
  if (d->rank == 0)
    cs_wait(d, SIG, 0, CS_CMP_EQ, (int32_t)(rounds * d->nranks));
  return 0;
}

Test(signal, atomic_add_loses_no_increment, .timeout = 30, .fini = teardown_world)
{
  setup_world(4, 10);
  uint32_t rounds = 20000;
  cr_assert_eq(launch(hammer_body, &rounds, NULL, NULL), 0, "%s", report_text());
  int32_t *cell = (int32_t *)(cs_world_window(&world, 0) + world.ctl->layout.slot[SIG].off);
  cr_assert_eq(*cell, 80000);
}

/* Ge passes a cell that was pushed past the target; Eq on the same would
 * hang (docs/algorithms.md §2.3): rank 1 adds 2 before rank 0 polls. */
static int ge_vs_eq_body(cs_dev_t *d, void *arg)
{
  int eq = *(int *)arg;
  if (d->rank == 1) {
    cs_notify(d, 0, SIG, 1, CS_NOTIFY_ADD, 1);
    cs_notify(d, 0, SIG, 1, CS_NOTIFY_ADD, 1);
    cs_notify(d, 0, SIG, 2, CS_NOTIFY_ADD, 1);
  } else {
    cs_wait(d, SIG, 2, CS_CMP_GE, 1); /* rank 1 is past both adds */
    cs_wait(d, SIG, 1, eq ? CS_CMP_EQ : CS_CMP_GE, 1);
  }
  return 0;
}

Test(signal, ge_passes_an_overshot_cell, .timeout = 30, .fini = teardown_world)
{
  setup_world(2, 5);
  int eq = 0;
  cr_assert_eq(launch(ge_vs_eq_body, &eq, NULL, NULL), 0, "%s", report_text());
}

Test(signal, eq_on_an_overshot_cell_times_out_with_a_wavefront, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(2, 0.5);
  int eq = 1;
  cs_launch_result_t res;
  uint64_t t0 = cs_now_ns();
  cr_assert_eq(launch(ge_vs_eq_body, &eq, NULL, &res), 1);
  double s = (double)(cs_now_ns() - t0) / 1e9;
  /* Not before the 0.5 s timeout; the upper bound with generous slack. */
  cr_assert(s >= 0.5 && s < 10.0, "took %.2f s", s);
  cr_assert_eq(res.abort_reason, CS_ABORT_TIMEOUT);
  cr_assert_eq(res.abort_rank, 0);
  char *t = report_text();
  cr_assert(strstr(t, "rank 0: wait timed out"), "%s", t);
  cr_assert(strstr(t, "hang wavefront"), "%s", t);
  cr_assert(strstr(t, "rank 0: blocked at event 1 in wait(signal[1] == 1): cell is 2"), "%s", t);
  cr_assert(strstr(t, "rank 1: done"), "%s", t);
}

/* ---------------------------------------------------------- abort */

/* Readiness handshake: returns once ranks [0, n) all sleep in FUTEX_WAIT
 * (their status says so), or fails after 20 s. */
static int all_asleep(const cs_world_t *w, uint32_t n)
{
  uint64_t until = cs_now_ns() + 20000000000ull;
  for (;;) {
    uint32_t k = 0;
    for (uint32_t r = 0; r < n; r++)
      k += __atomic_load_n(&w->ctl->rank[r].sleeping, __ATOMIC_SEQ_CST) == 1;
    if (k == n)
      return 1;
    if (cs_now_ns() > until)
      return 0;
    sched_yield();
  }
}

/* Every rank but the last waits forever on its cell 0; the last rank dies
 * once they all sleep. The abort must wake every sleeper: the run ends
 * long before the 60 s wait timeout. */
static int crash_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  if (d->rank == d->nranks - 1) {
    if (!all_asleep(d->world, d->nranks - 1))
      _exit(99); /* not a SIGSEGV: the test fails on the report */
    raise(SIGSEGV);
  }
  cs_wait(d, SIG, 0, CS_CMP_GE, 1);
  return 0;
}

Test(launch, abort_wakes_every_sleeping_waiter, .timeout = 30, .fini = teardown_world)
{
  setup_world(8, 60);
  cs_launch_result_t res;
  uint64_t t0 = cs_now_ns();
  cr_assert_eq(launch(crash_body, NULL, NULL, &res), 1);
  double s = (double)(cs_now_ns() - t0) / 1e9;
  /* The wake, not the 60 s timeout, ended the sleeps: a generous bound. */
  cr_assert(s < 30.0, "took %.2f s", s);
  cr_assert_eq(res.abort_reason, CS_ABORT_CRASH);
  cr_assert_eq(res.abort_rank, 7);
  char *t = report_text();
  cr_assert(strstr(t, "rank 7: killed by SIGSEGV at event 0"), "%s", t);
  for (uint32_t r = 0; r < 7; r++) {
    cr_assert_eq(world.ctl->rank[r].reason, CS_ABORT_PEER,
                 "rank %u did not see the abort itself (reason %u)", r,
                 world.ctl->rank[r].reason);
  }
}

/* A ring of ranks each passing a counter: many events per rank. */
static int ring_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t b[8] = {0};
  cs_tile_t t = {b, 4, 8, 0};
  uint32_t right = (d->rank + 1) % d->nranks;
  for (int32_t k = 1; k <= 50; k++) {
    cs_store(d, &t, DATA, d->rank, 1);
    cs_notify(d, right, SIG, 0, CS_NOTIFY_ADD, 1);
    cs_wait(d, SIG, 0, CS_CMP_GE, k);
  }
  return 0;
}

static void crash_at(uint32_t rank, cs_fault_kind_t kind, uint64_t event,
                     const char *expect)
{
  setup_world(4, 60);
  cs_fault_t f = {.kind = kind, .rank = rank, .event = event};
  cs_launch_result_t res;
  uint64_t t0 = cs_now_ns();
  cr_assert_eq(launch(ring_body, NULL, &f, &res), 1);
  double s = (double)(cs_now_ns() - t0) / 1e9;
  /* Found by the crash, not the 60 s wait timeout: generous slack. */
  cr_assert(s < 10.0, "took %.2f s", s);
  cr_assert_eq(res.abort_rank, (int32_t)rank);
  char *t = report_text();
  cr_assert(strstr(t, expect), "expected '%s' in:\n%s", expect, t);
  teardown_world();
}

Test(launch, a_crash_at_any_position_ends_the_run_fast_with_its_report,
     .timeout = 120)
{
  char expect[128];
  for (uint32_t rank = 0; rank < 4; rank++)
    for (uint64_t ev = 0; ev < 150; ev += 37) {
      snprintf(expect, sizeof(expect), "rank %u: killed by SIGSEGV at event %llu",
               rank, (unsigned long long)ev);
      crash_at(rank, CS_FAULT_SEGV, ev, expect);
    }
  crash_at(2, CS_FAULT_ABORT, 9, "rank 2: killed by SIGABRT at event 9");
  crash_at(1, CS_FAULT_EXIT, 10, "rank 1: exited with status 4 at event 10");
  /* Beyond the last event (150): strikes as the rank finishes. */
  crash_at(3, CS_FAULT_SEGV, 100000, "rank 3: killed by SIGSEGV");
}

static int no_space_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  return d->rank == 1 ? cs_dev_error(d, -ENOSPC) : 0;
}

/* A rank that cannot go on says why: its cause reaches the report. */
Test(launch, a_rank_error_reaches_the_report_with_its_cause, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(3, 5);
  cs_launch_result_t res;
  cr_assert_eq(launch(no_space_body, NULL, NULL, &res), 1);
  char *t = report_text();
  cr_assert(strstr(t, "rank 1: internal error at event 0: No space left on device"),
            "%s", t);
}

/* A rank that cannot map the world reports the system's reason. */
Test(launch, a_rank_that_cannot_start_reports_why, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(2, 5);
  int fd = world.fd;
  world.fd = -1; /* the ranks' mmap of the region fails: EBADF */
  cs_launch_result_t res;
  int rc = launch(ring_body, NULL, NULL, &res);
  world.fd = fd;
  cr_assert_eq(rc, 1);
  char *t = report_text();
  cr_assert(strstr(t, "rank 0: internal error at event 0: Bad file descriptor"),
            "%s", t);
}

Test(launch, injected_hang_is_reported_within_the_timeout, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(4, 1.0);
  cs_fault_t f = {.kind = CS_FAULT_HANG, .rank = 2, .event = 10};
  cs_launch_result_t res;
  uint64_t t0 = cs_now_ns();
  cr_assert_eq(launch(ring_body, NULL, &f, &res), 1);
  double s = (double)(cs_now_ns() - t0) / 1e9;
  /* Not before the 1 s timeout; the upper bound with generous slack. */
  cr_assert(s >= 1.0 && s < 10.0, "took %.2f s", s);
  cr_assert_eq(res.abort_reason, CS_ABORT_TIMEOUT);
  char *t = report_text();
  cr_assert(strstr(t, "hang wavefront"), "%s", t);
  cr_assert(strstr(t, "rank 2: hung (injected fault) at event 10"), "%s", t);
  cr_assert(strstr(t, "rank 3: blocked at event"), "%s", t);
}

static int sleeper_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  cs_wait(d, SIG, 0, CS_CMP_GE, 1);
  return 0;
}

Test(launch, sigterm_to_the_launcher_stops_every_rank, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(3, 60);
  pid_t me = getpid();
  pid_t killer = fork();
  if (killer == 0) { /* the launcher's ranks are all asleep: it runs them */
    if (all_asleep(&world, 3))
      kill(me, SIGTERM);
    _exit(0);
  }
  cs_launch_result_t res;
  cr_assert_eq(launch(sleeper_body, NULL, NULL, &res), 1);
  cr_assert_eq(res.signo, SIGTERM);
  cr_assert_eq(res.abort_reason, CS_ABORT_SIGNAL);
  int st;
  cr_assert_eq(waitpid(killer, &st, 0), killer);
}

/* ---------------------------------------------------------- bounds */

static int oob_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t b[16];
  cs_tile_t t = {b, 4, 16, 0};
  if (d->rank == 1) {
    cs_load(d, &t, 2, DATA, 56, 8, 8); /* last 8 ints: fine */
    cs_load(d, &t, 2, DATA, 57, 8, 8); /* one past the slot */
  }
  cs_wait(d, SIG, 0, CS_CMP_GE, 1);
  return 0;
}

Test(bounds, out_of_slot_load_stops_the_run_naming_everything, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(3, 60);
  cs_launch_result_t res;
  uint64_t t0 = cs_now_ns();
  cr_assert_eq(launch(oob_body, NULL, NULL, &res), 1);
  /* Stopped by the fault, not the 60 s wait timeout: generous slack. */
  cr_assert((cs_now_ns() - t0) < 10000000000ull);
  cr_assert_eq(res.abort_reason, CS_ABORT_FAULT);
  cr_assert_eq(res.abort_rank, 1);
  char *t = report_text();
  cr_assert(strstr(t, "rank 1: out-of-slot fault at event 1: load from rank 2 "
                      "slot 'data' bytes [228, 260) outside the slot's [0, 256)"),
            "%s", t);
}

static int oob_far_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t b[16];
  cs_tile_t t = {b, 4, 16, 0};
  if (d->rank == 1)
    cs_load(d, &t, 2, DATA, 1ull << 62, 8, 8); /* 2^62 x 4 B wraps 64 bits */
  cs_wait(d, SIG, 0, CS_CMP_GE, 1);
  return 0;
}

/* An offset whose byte figure wraps is reported in elements (it once
 * printed "bytes [0, 32)"). */
Test(bounds, an_offset_past_64_bit_bytes_is_reported_in_elements,
     .timeout = 30, .fini = teardown_world)
{
  setup_world(3, 60);
  cs_launch_result_t res;
  cr_assert_eq(launch(oob_far_body, NULL, NULL, &res), 1);
  cr_assert_eq(res.abort_reason, CS_ABORT_FAULT);
  char *t = report_text();
  cr_assert(strstr(t, "rank 1: out-of-slot fault at event 0: load from rank 2 "
                      "slot 'data' elements [4611686018427387904, +8) of 4 B "
                      "outside the slot's [0, 256)"), "%s", t);
}

static int oob_cell_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  cs_notify(d, 0, SIG, 16, CS_NOTIFY_ADD, 1); /* 16 cells: 0..15 */
  return 0;
}

Test(bounds, notify_past_the_signal_slot_is_a_fault, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(1, 60);
  cr_assert_eq(launch(oob_cell_body, NULL, NULL, NULL), 1);
  char *t = report_text();
  cr_assert(strstr(t, "notify to rank 0 slot 'signal' bytes [64, 68) outside "
                      "the slot's [0, 64)"), "%s", t);
}

/* ---------------------------------------------------------- data & scale */

/* Loads zero-fill past the valid count; stores write exactly valid. */
static int load_store_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t b[16];
  cs_tile_t t = {b, 4, 16, 0};
  for (int i = 0; i < 16; i++)
    b[i] = 1000 * (int)d->rank + i;
  cs_store(d, &t, DATA, 0, 16);
  cs_notify(d, (d->rank + 1) % d->nranks, SIG, 0, CS_NOTIFY_ADD, 1);
  cs_wait(d, SIG, 0, CS_CMP_GE, 1);
  uint32_t left = (d->rank + d->nranks - 1) % d->nranks;
  cs_load(d, &t, left, DATA, 2, 5, 8);
  int32_t *out = (int32_t *)cs_world_output(d->world, d->rank);
  memcpy(out, b, sizeof(b));
  out[16] = (int32_t)t.valid;
  return 0;
}

Test(dev, load_fills_valid_elements_and_zero_pads_the_tile, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(3, 10);
  cr_assert_eq(launch(load_store_body, NULL, NULL, NULL), 0, "%s", report_text());
  for (uint32_t r = 0; r < 3; r++) {
    int32_t *out = (int32_t *)cs_world_output(&world, r);
    uint32_t left = (r + 2) % 3;
    for (int i = 0; i < 16; i++)
      cr_assert_eq(out[i], i < 5 ? (int32_t)(1000 * left + 2 + i) : 0,
                   "rank %u tile[%d] = %d", r, i, out[i]);
    cr_assert_eq(out[16], 5);
  }
}

/* Reducing puts lose no addition: every rank but 0 adds 1.0f to each of
 * rank 0's 64 elements `arg` times, all at once, then tells rank 0, which
 * reads the sums. Small whole numbers: any order gives the same bits. */
enum { RPUT_TIMES = 300 };
static int reduce_put_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  float b[64];
  cs_tile_t t = {b, 4, 64, 64};
  for (int i = 0; i < 64; i++)
    b[i] = 1.0f;
  if (d->rank != 0) {
    for (int k = 0; k < RPUT_TIMES; k++)
      cs_put_reduce(d, &t, 0, DATA, 0, 64, CS_SUM);
    cs_fence(d);
    cs_notify(d, 0, SIG, d->rank, CS_NOTIFY_ADD, 1);
    return 0;
  }
  for (uint32_t s = 1; s < d->nranks; s++)
    cs_wait(d, SIG, s, CS_CMP_GE, 1);
  cs_load(d, &t, 0, DATA, 0, 64, 64);
  memcpy(cs_world_output(d->world, 0), b, sizeof(b));
  return 0;
}

Test(dev, concurrent_reducing_puts_lose_no_addition, .timeout = 60,
     .fini = teardown_world)
{
  setup_world(4, 20);
  cr_assert_eq(launch(reduce_put_body, NULL, NULL, NULL), 0, "%s", report_text());
  const float *out = (const float *)cs_world_output(&world, 0);
  for (int i = 0; i < 64; i++)
    cr_assert_eq(out[i], 3.0f * RPUT_TIMES, "element %d = %g", i, out[i]);
}

/* Only fp32 sum is an atomic add: any other op or element size stops the
 * rank with a fault that names it. */
static int reduce_put_bad_body(cs_dev_t *d, void *arg)
{
  float b[4] = {0};
  cs_tile_t t = {b, 4, 4, 4};
  if (d->rank == 0)
    cs_put_reduce(d, &t, 1, DATA, 0, 4, (cs_op_t)(uintptr_t)arg);
  return 0;
}

Test(dev, a_reducing_put_other_than_fp32_sum_is_a_fault, .timeout = 30,
     .fini = teardown_world)
{
  setup_world(2, 10);
  cr_assert_neq(launch(reduce_put_bad_body, (void *)(uintptr_t)CS_MAX, NULL, NULL), 0);
  cr_assert(strstr(report_text(), "bad reducing put") != NULL, "%s", report_text());
}

/* 64 ranks: an all-to-all barrier, as the collectives use. */
static int barrier_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  for (int32_t k = 1; k <= 3; k++) {
    for (uint32_t p = 0; p < d->nranks; p++)
      if (p != d->rank)
        cs_notify(d, p, DATA, d->rank, CS_NOTIFY_ADD, 1);
    for (uint32_t s = 0; s < d->nranks; s++)
      if (s != d->rank)
        cs_wait(d, DATA, s, CS_CMP_GE, k);
  }
  return 0;
}

Test(launch, sixty_four_ranks_start_barrier_and_finish, .timeout = 60,
     .fini = teardown_world)
{
  setup_world(64, 30);
  cr_assert_eq(launch(barrier_body, NULL, NULL, NULL), 0, "%s", report_text());
  for (uint32_t r = 0; r < 64; r++) {
    cr_assert_eq(world.ctl->rank[r].state, CS_RS_DONE);
    int32_t *c = (int32_t *)(cs_world_window(&world, r));
    for (uint32_t s = 0; s < 64; s++)
      cr_assert_eq(c[s], s == r ? 0 : 3);
  }
}

/* ---------------------------------------------------------- the pool */

/* A pooled run's body: fails (status 9) unless its data slot and its
 * output start as a fresh world's (zero; peers may already notify its
 * signal cells); exits with status 5 when its input says so; else marks
 * its data slot, writes its pid to out[0] and notifies every peer's cell
 * [rank], waiting for its own. */
static int pool_body(cs_dev_t *d, void *arg)
{
  (void)arg;
  int32_t *win = (int32_t *)cs_world_window(d->world, d->rank);
  int32_t *out = (int32_t *)cs_world_output(d->world, d->rank);
  for (uint32_t i = 0; i < 64; i++)
    if (win[i] || out[i])
      return 9;
  if (((const int32_t *)cs_world_input(d->world, d->rank))[0] == 1)
    return 5;
  win[0] = 1;
  out[0] = (int32_t)getpid();
  for (uint32_t p = 0; p < d->nranks; p++)
    if (p != d->rank)
      cs_notify(d, p, SIG, d->rank, CS_NOTIFY_ADD, 1);
  for (uint32_t s = 0; s < d->nranks; s++)
    if (s != d->rank)
      cs_wait(d, SIG, s, CS_CMP_GE, 1);
  return 0;
}

/* One pooled run over the world; `fail_rank` >= 0 exits that rank with
 * status 5. Copies every rank's pid out. */
static int pool_run(cs_launch_pool_t *pool, int fail_rank, int32_t *pids)
{
  if (cs_launch_pool_alive(pool))
    cs_launch_pool_reset(pool, &world);
  for (uint32_t r = 0; r < world.ctl->nranks; r++)
    ((int32_t *)cs_world_input(&world, r))[0] = (int)r == fail_rank;
  cs_launch_opts_t o = {.report = report, .pool = pool};
  int rc = cs_launch(&world, pool_body, NULL, &o, NULL);
  for (uint32_t r = 0; r < world.ctl->nranks; r++)
    pids[r] = ((int32_t *)cs_world_output(&world, r))[0];
  return rc;
}

/* After a pool lost its ranks: over a fresh world the next run passes
 * with ranks forked afresh (none of `first`), the pool holds them again,
 * and closing it leaves no rank behind. Closes the pool. */
static void runs_afresh(cs_launch_pool_t *pool, const int32_t *first)
{
  int32_t pids[3];
  cs_world_destroy(&world);
  make_world(3, 10);
  cr_assert_eq(pool_run(pool, -1, pids), 0, "%s", report_text());
  for (uint32_t r = 0; r < 3; r++)
    cr_assert_neq(pids[r], first[r], "rank %u was not forked afresh", r);
  cr_assert(cs_launch_pool_alive(pool));
  cs_launch_pool_close(pool);
  cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a rank was left behind");
}

Test(pool, keeps_its_ranks_and_starts_each_run_from_a_fresh_world,
     .timeout = 30, .fini = teardown_world)
{
  setup_world(3, 10);
  cs_launch_pool_t *pool;
  int32_t first[3], pids[3];
  cr_assert_eq(cs_launch_pool_open(&pool, 3), 0);
  cr_assert_eq(pool_run(pool, -1, first), 0, "%s", report_text());
  for (int k = 0; k < 5; k++) {
    cr_assert(cs_launch_pool_alive(pool));
    cr_assert_eq(pool_run(pool, -1, pids), 0, "run %d: %s", k + 2, report_text());
    for (uint32_t r = 0; r < 3; r++)
      cr_assert_eq(pids[r], first[r], "run %d: rank %u forked again", k + 2, r);
  }
  cs_launch_pool_close(pool);
  cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a rank was left behind");
}

Test(pool, a_failed_run_ends_its_ranks_and_the_next_forks_afresh,
     .timeout = 30, .fini = teardown_world)
{
  setup_world(3, 10);
  cs_launch_pool_t *pool;
  int32_t first[3], pids[3];
  cr_assert_eq(cs_launch_pool_open(&pool, 3), 0);
  cr_assert_eq(pool_run(pool, -1, first), 0, "%s", report_text());
  cr_assert_eq(pool_run(pool, 1, pids), 1, "the failing run passed");
  cr_assert(strstr(report_text(), "rank 1: exited with status 5"), "%s", report_text());
  cr_assert_not(cs_launch_pool_alive(pool));
  cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a failed pool's rank was left");
  runs_afresh(pool, first);
}

/* A kept rank killed from outside while it waits between runs: the pool
 * is no longer alive (its other ranks are ended), and the next run forks
 * afresh and passes instead of reporting the old rank's death. */
Test(pool, a_kept_rank_killed_between_runs_is_not_reused,
     .timeout = 30, .fini = teardown_world)
{
  setup_world(3, 10);
  cs_launch_pool_t *pool;
  int32_t first[3];
  cr_assert_eq(cs_launch_pool_open(&pool, 3), 0);
  cr_assert_eq(pool_run(pool, -1, first), 0, "%s", report_text());
  cr_assert_eq(kill(first[1], SIGKILL), 0);
  siginfo_t si = {0}; /* until rank 1 has died; WNOWAIT leaves it unreaped */
  cr_assert_eq(waitid(P_PID, (id_t)first[1], &si, WEXITED | WNOWAIT), 0);
  cr_assert_not(cs_launch_pool_alive(pool));
  runs_afresh(pool, first);
}

/* ---------------------------------------------------------- parsing */

Test(fault, parses_the_documented_forms_and_rejects_the_rest)
{
  cs_fault_t f;
  char why[200];
  cr_assert_eq(cs_fault_parse("2:segv:10", &f), 0);
  cr_assert(f.rank == 2 && f.kind == CS_FAULT_SEGV && f.event == 10);
  cr_assert_eq(cs_fault_parse("0:hang", &f), 0);
  cr_assert(f.rank == 0 && f.kind == CS_FAULT_HANG && f.event == 0);
  const char *bad[] = {"x:y", "1", "1:", "1:boom", "1:segv:", "1:segv:x",
                       "-1:segv", "999:exit", ":segv", "1:segv:1:2"};
  const int code[] = {CS_EFAULTRANK, CS_EFAULTRANK, CS_EFAULTKIND,
                      CS_EFAULTKIND, CS_EFAULTEVENT, CS_EFAULTEVENT,
                      CS_EFAULTRANK, CS_EFAULTRANK, CS_EFAULTRANK,
                      CS_EFAULTEVENT};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    int rc = cs_fault_parse(bad[i], &f);
    cr_assert_eq(rc, code[i], "%s", bad[i]);
    cs_cli_fault_why(bad[i], rc, why, sizeof(why));
    cr_assert(strstr(why, bad[i]), "message '%s' does not name '%s'", why, bad[i]);
  }
}
