/*
 * test_sched.c - controlled mode: memory models, schedules, replay and the
 * bug mutations, with real forked ranks. The algorithms must verify under
 * every model and many schedules; every mutation must fail under its
 * documented recipe, the same way every time; the same schedule must give
 * the same trace; replay must reproduce runs and catch edited events.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../collectives/allreduce.h"
#include "../sim/launch.h"
#include "../sim/sched.h"
#include "../sim/trace.h"
#include "harness.h"

/* ------------------------------------------------ in-process sweep */

/* Runs c under cfg; returns wrong elements (all ranks) or -1 if aborted. */
static int64_t run_controlled(const cs_ar_cfg_t *c, const cs_sched_cfg_t *sc,
                              uint64_t seed)
{
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  uint64_t bytes = c->count * es;
  cs_layout_t l;
  cs_world_t w;
  cr_assert_eq(cs_ar_layout(c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = 20000000000ull,
                        .sched_bytes = cs_sched_area_bytes(n, 1u << 20)};
  cr_assert_eq(cs_world_create(&w, &l, n, &wo), 0);
  uint8_t *in = malloc(bytes * n), *want = malloc(bytes);
  for (uint32_t r = 0; r < n; r++) {
    cs_ar_fill(CS_FILL_RANDOM, c, seed, r, in + r * bytes);
    memcpy(cs_world_input(&w, r), in + r * bytes, bytes);
  }
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep, .sched = sc};
  int rc = cs_launch(&w, cs_ar_rank_main, (void *)c, &lo, NULL);
  int64_t wrong = 0;
  if (rc != 0) {
    wrong = -1;
  } else {
    for (uint32_t r = 0; r < n; r++) {
      cs_oracle_expect(c->algo, c->dtype, c->op, n, c->count, in, r, want);
      for (uint64_t i = 0; i < c->count; i++)
        wrong += !cs_oracle_same(c->dtype, cs_world_output(&w, r), want, i);
      const cs_slot_t *sig = &l.slot[CS_AR_SLOT_SIGNAL];
      for (uint64_t k = 0; k < cs_ar_signal_cells(c); k++) {
        int32_t v;
        memcpy(&v, cs_world_window(&w, r) + cs_slot_cell_off(sig, k), 4);
        wrong += v != 0; /* every cell back to 0 */
      }
    }
  }
  fclose(rep);
  free(in);
  free(want);
  cs_world_destroy(&w);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
  return wrong;
}

/* Every algorithm over ranks 2..nmax, ragged counts, fp32 and fp16,
 * random and pct schedules under `model`, with defect `bug` (one that
 * must not show under it) and the signal layout `padded`. COLLSIM_QUICK:
 * one dtype per (N, count). */
static void sweep(cs_mm_t model, uint32_t nmax, uint32_t bug, uint32_t padded)
{
  static const uint64_t counts[] = {1, 5, 17, 40};
  for (int a = 0; a < CS_NALGOS; a++)
    for (uint32_t n = 2; n <= nmax; n++)
      for (size_t ci = 0; ci < 4; ci++)
        for (int dt = 0; dt < 2; dt++)
          for (int s = 0; s < 4; s++) {
            /* quick: one dtype per (N, count), each in turn */
            if (quick_tests() && (size_t)dt != (n + ci) % 2)
              continue;
            /* twophase, ring-nb, host-push take a multiple of the rank
             * count: the next one (ring-bidir: of twice it); host-push
             * and ring-bidir fp32 only */
            uint64_t count = a == CS_ALGO_TWOPHASE || a == CS_ALGO_RING_NB ||
                                     a == CS_ALGO_HOST_PUSH
                                 ? (counts[ci] + n - 1) / n * n : counts[ci];
            if (a == CS_ALGO_RING_BIDIR)
              count = (counts[ci] + 2 * n - 1) / (2 * n) * (2 * n);
            if (a == CS_ALGO_IBING) /* two ranks, a multiple of N */
              count = (counts[ci] + n - 1) / n * n;
            if ((a == CS_ALGO_HOST_PUSH || a == CS_ALGO_RING_BIDIR ||
                 a == CS_ALGO_IBING) && dt)
              continue;
            if (n > cs_ar_max_ranks((cs_algo_t)a))
              continue;
            cs_ar_cfg_t c = {.algo = (cs_algo_t)a, .dtype = dt ? CS_FP16 : CS_FP32,
                             .op = CS_SUM, .nranks = n, .count = count,
                             .tile_bytes = 1024, .iters = 2, .bug = bug,
                             .padded_cells = padded};
            cs_sched_cfg_t sc = {.model = model, .seed = 100 * ci + 10 * n + s};
            if (s < 2) {
              sc.strategy = CS_SCHED_RANDOM;
            } else {
              sc.strategy = CS_SCHED_PCT;
              sc.depth = (uint32_t)s; /* 2 or 3 */
              sc.steps = 400;
            }
            int64_t wrong = run_controlled(&c, &sc, sc.seed);
            cr_assert_eq(wrong, 0, "%s n=%u count=%llu %s %s %s seed %llu%s%s: %lld",
                         cs_algo_name(c.algo), n, (unsigned long long)c.count,
                         cs_dtype_name(c.dtype), cs_mm_name(model),
                         s < 2 ? "random" : "pct", (unsigned long long)sc.seed,
                         bug ? " bug " : "", bug ? cs_bug_table[bug].name : "",
                         (long long)wrong);
          }
}

static void sweep_model(cs_mm_t model) { sweep(model, 4, 0, 0); }

Test(controlled, correct_algorithms_verify_under_sc, .timeout = 600) { sweep_model(CS_MM_SC); }
Test(controlled, correct_algorithms_verify_under_fifo, .timeout = 600) { sweep_model(CS_MM_FIFO); }
Test(controlled, correct_algorithms_verify_under_relaxed, .timeout = 600) { sweep_model(CS_MM_RELAXED); }
/* The device's model: ranks 2..5, and with every cell on a line of its
 * own (the built-ins notify only with AtomicAdd, so the layout changes
 * nothing they compute). */
Test(controlled, correct_algorithms_verify_under_a2a3, .timeout = 900) { sweep(CS_MM_A2A3, 5, 0, 0); }
Test(controlled, correct_algorithms_verify_under_a2a3_padded, .timeout = 600) { sweep(CS_MM_A2A3, 3, 0, 1); }

/* host-push (PR #2280's host ring) over ranks 1..8 and counts N, 2N, 17N
 * (4096N up to 4 ranks), three calls, random and pct schedules under sc
 * and relaxed: bit-exact on every rank and every signal cell back at 0
 * (run_controlled). */
Test(controlled, host_push_verifies_under_sc_and_relaxed, .timeout = 900)
{
  static const cs_mm_t models[] = {CS_MM_SC, CS_MM_RELAXED};
  for (uint32_t n = 1; n <= 8; n++)
    for (size_t ci = 0; ci < 4; ci++) {
      const uint64_t counts[] = {n, 2 * n, 17 * n, 4096 * n};
      if (ci == 3 && n > 4)
        continue;
      for (size_t m = 0; m < 2; m++)
        for (int s = 0; s < 2; s++) {
          cs_ar_cfg_t c = {.algo = CS_ALGO_HOST_PUSH, .dtype = CS_FP32,
                           .op = CS_SUM, .nranks = n, .count = counts[ci],
                           .tile_bytes = 1024, .iters = 3};
          cs_sched_cfg_t sc = {.model = models[m],
                               .seed = 1000 * n + 10 * ci + 2 * m + s + 1};
          if (s == 0) {
            sc.strategy = CS_SCHED_RANDOM;
          } else {
            sc.strategy = CS_SCHED_PCT;
            sc.depth = 3;
            sc.steps = 400;
          }
          int64_t wrong = run_controlled(&c, &sc, sc.seed);
          cr_assert_eq(wrong, 0, "n=%u count=%llu %s %s: %lld", n,
                       (unsigned long long)c.count, cs_mm_name(models[m]),
                       s ? "pct" : "random", (long long)wrong);
        }
    }
}

/* The push model's mutations of the host ring (docs/algorithms.md §8.21,
 * §8.22): without its fences it verifies under every sc schedule (nothing
 * is posted) and fails under relaxed; without its final barrier it fails
 * under sc as well, given a schedule that lets a rank return early. Some
 * of the first 40 schedules (random and pct in turn) show each failure. */
Test(controlled, host_push_mutations_fail_where_the_table_says, .timeout = 300)
{
  for (uint32_t n = 2; n <= 4; n++) {
    int dsb_relaxed = 0, final_sc = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
      cs_ar_cfg_t c = {.algo = CS_ALGO_HOST_PUSH, .dtype = CS_FP32,
                       .op = CS_SUM, .nranks = n, .count = 10 * n,
                       .tile_bytes = 1024, .iters = 1,
                       .bug = CS_BUG_HOST_PUSH_NO_DSB};
      cs_sched_cfg_t sc = {.strategy = seed % 2 ? CS_SCHED_RANDOM : CS_SCHED_PCT,
                           .model = CS_MM_SC, .seed = seed,
                           .depth = 1 + (uint32_t)(seed / 2) % 3, .steps = 400};
      if (seed <= 24)
        cr_assert_eq(run_controlled(&c, &sc, seed), 0,
                     "host-push-no-dsb failed under sc: %u ranks seed %llu", n,
                     (unsigned long long)seed);
      sc.model = CS_MM_RELAXED;
      dsb_relaxed |= run_controlled(&c, &sc, seed) != 0;
      c.bug = CS_BUG_HOST_PUSH_NO_FINAL_BARRIER;
      sc.model = CS_MM_SC;
      final_sc |= run_controlled(&c, &sc, seed) != 0;
    }
    cr_assert(dsb_relaxed, "%u ranks: host-push-no-dsb never failed under relaxed", n);
    cr_assert(final_sc, "%u ranks: host-push-no-final-barrier never failed under sc", n);
  }
}

/* host-push-left-wait-only (docs/algorithms.md §8.23): without the
 * right-hand wait the left neighbour's first add can land before the
 * rank's own input is in its window. Some of the first 40 schedules of
 * one call under sc show it from 3 ranks (at 2 the one peer's first
 * notify, after its fence, is all the wait needs). */
Test(controlled, host_push_left_wait_only_fails_in_one_call_under_sc, .timeout = 300)
{
  for (uint32_t n = 3; n <= 5; n++) {
    int failed = 0;
    for (uint64_t seed = 1; seed <= 40 && !failed; seed++) {
      cs_ar_cfg_t c = {.algo = CS_ALGO_HOST_PUSH, .dtype = CS_FP32,
                       .op = CS_SUM, .nranks = n, .count = 10 * n,
                       .tile_bytes = 1024, .iters = 1,
                       .bug = CS_BUG_HOST_PUSH_LEFT_WAIT_ONLY};
      cs_sched_cfg_t sc = {.strategy = seed % 2 ? CS_SCHED_RANDOM : CS_SCHED_PCT,
                           .model = CS_MM_SC, .seed = seed,
                           .depth = 1 + (uint32_t)(seed / 2) % 3, .steps = 400};
      failed = run_controlled(&c, &sc, seed) != 0;
    }
    cr_assert(failed, "%u ranks: no schedule of 40 failed", n);
  }
}

/* host-push-epilogue-2279 (docs/algorithms.md §8.24), #2279's epilogue
 * for the all-to-all barrier on the neighbour barrier, over 3 calls: at
 * 3 ranks (every peer a neighbour) it is exact and verifies; at 2 ranks
 * some schedule gives a wrong result or stale cells; at 4 every schedule
 * leaves cells off 0 (run_controlled counts those). */
Test(controlled, host_push_epilogue_2279_is_right_only_at_three_ranks, .timeout = 300)
{
  for (uint32_t n = 2; n <= 4; n++) {
    int failed = 0, all = 1;
    for (uint64_t seed = 1; seed <= 12; seed++) {
      cs_ar_cfg_t c = {.algo = CS_ALGO_HOST_PUSH, .dtype = CS_FP32,
                       .op = CS_SUM, .nranks = n, .count = 10 * n,
                       .tile_bytes = 1024, .iters = 3,
                       .bug = CS_BUG_HOST_PUSH_EPILOGUE_2279};
      cs_sched_cfg_t sc = {.strategy = seed % 2 ? CS_SCHED_RANDOM : CS_SCHED_PCT,
                           .model = CS_MM_SC, .seed = seed,
                           .depth = 1 + (uint32_t)(seed / 2) % 3, .steps = 400};
      int bad = run_controlled(&c, &sc, seed) != 0;
      failed |= bad;
      all &= bad;
    }
    if (n == 3)
      cr_assert_not(failed, "3 ranks: a schedule failed");
    else if (n == 2)
      cr_assert(failed, "2 ranks: no schedule failed");
    else
      cr_assert(all, "4 ranks: a schedule left every cell at 0");
  }
}

/* ring-bidir (simpler's two push rings) over ranks 1..8 and counts 2N,
 * 4N, 34N (2*4096N up to 4 ranks), three calls, random and pct schedules
 * under sc and relaxed: bit-exact on every rank and every signal cell
 * back at 0 (run_controlled). */
Test(controlled, ring_bidir_verifies_under_sc_and_relaxed, .timeout = 900)
{
  static const cs_mm_t models[] = {CS_MM_SC, CS_MM_RELAXED};
  for (uint32_t n = 1; n <= 8; n++)
    for (size_t ci = 0; ci < 4; ci++) {
      const uint64_t counts[] = {2 * n, 4 * n, 34 * n, 2 * 4096 * n};
      if (ci == 3 && n > 4)
        continue;
      for (size_t m = 0; m < 2; m++)
        for (int s = 0; s < 2; s++) {
          cs_ar_cfg_t c = {.algo = CS_ALGO_RING_BIDIR, .dtype = CS_FP32,
                           .op = CS_SUM, .nranks = n, .count = counts[ci],
                           .tile_bytes = 1024, .iters = 3};
          cs_sched_cfg_t sc = {.model = models[m],
                               .seed = 2000 * n + 10 * ci + 2 * m + s + 1};
          if (s == 0) {
            sc.strategy = CS_SCHED_RANDOM;
          } else {
            sc.strategy = CS_SCHED_PCT;
            sc.depth = 3;
            sc.steps = 400;
          }
          int64_t wrong = run_controlled(&c, &sc, sc.seed);
          cr_assert_eq(wrong, 0, "n=%u count=%llu %s %s: %lld", n,
                       (unsigned long long)c.count, cs_mm_name(models[m]),
                       s ? "pct" : "random", (long long)wrong);
        }
    }
}

/* ring-bidir reads the host push ring's barrier knobs: waiting for the
 * left neighbour only, or without the final barrier, it fails under the
 * latest schedule on sc (3 ranks, 30 elements), and with upstream's
 * fences exactly (drain-no-ddr-fence) under a2a3 only. */
Test(controlled, ring_bidir_fails_with_the_host_push_barrier_mutations, .timeout = 120)
{
  static const char *const bugs[] = {"host-push-left-wait-only",
                                     "host-push-no-final-barrier"};
  for (size_t b = 0; b < 2; b++) {
    cs_ar_cfg_t c = {.algo = CS_ALGO_RING_BIDIR, .dtype = CS_FP32,
                     .op = CS_SUM, .nranks = 3, .count = 30,
                     .tile_bytes = 1024, .iters = 1,
                     .bug = (uint32_t)cs_bug_parse(bugs[b])};
    cs_sched_cfg_t sc = {.strategy = CS_SCHED_LATEST, .model = CS_MM_SC};
    cr_assert_gt(run_controlled(&c, &sc, 1), 0, "%s did not fail", bugs[b]);
  }
  cs_ar_cfg_t c = {.algo = CS_ALGO_RING_BIDIR, .dtype = CS_FP32, .op = CS_SUM,
                   .nranks = 3, .count = 30, .tile_bytes = 1024, .iters = 1,
                   .bug = CS_BUG_DRAIN_NO_DDR_FENCE};
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_LATEST, .model = CS_MM_SC};
  cr_assert_eq(run_controlled(&c, &sc, 1), 0);
  sc.model = CS_MM_A2A3;
  cr_assert_gt(run_controlled(&c, &sc, 1), 0, "drain-only passed a2a3");
}

/* ibing (simpler's, two ranks) over 1 and 2 ranks and counts N, 2N,
 * 17N, 4096N, three calls, random and pct schedules under sc, relaxed
 * and a2a3: bit-exact and every signal cell back at 0; without barrier B
 * (--bug ibing-no-snapshot-barrier) the latest schedule fails under sc:
 * the peer's add lands before the snapshot. */
Test(controlled, ibing_verifies_and_fails_without_barrier_b, .timeout = 600)
{
  static const cs_mm_t models[] = {CS_MM_SC, CS_MM_RELAXED, CS_MM_A2A3};
  for (uint32_t n = 1; n <= 2; n++)
    for (size_t ci = 0; ci < 4; ci++) {
      const uint64_t counts[] = {n, 2 * n, 17 * n, 4096 * n};
      for (size_t m = 0; m < 3; m++)
        for (int s = 0; s < 2; s++) {
          cs_ar_cfg_t c = {.algo = CS_ALGO_IBING, .dtype = CS_FP32,
                           .op = CS_SUM, .nranks = n, .count = counts[ci],
                           .tile_bytes = 1024, .iters = 3};
          cs_sched_cfg_t sc = {.model = models[m],
                               .seed = 3000 * n + 10 * ci + 2 * m + s + 1};
          if (s == 0) {
            sc.strategy = CS_SCHED_RANDOM;
          } else {
            sc.strategy = CS_SCHED_PCT;
            sc.depth = 3;
            sc.steps = 400;
          }
          int64_t wrong = run_controlled(&c, &sc, sc.seed);
          cr_assert_eq(wrong, 0, "n=%u count=%llu %s %s: %lld", n,
                       (unsigned long long)c.count, cs_mm_name(models[m]),
                       s ? "pct" : "random", (long long)wrong);
        }
    }
  cs_ar_cfg_t c = {.algo = CS_ALGO_IBING, .dtype = CS_FP32, .op = CS_SUM,
                   .nranks = 2, .count = 20, .tile_bytes = 1024, .iters = 1,
                   .bug = CS_BUG_IBING_NO_SNAPSHOT_BARRIER};
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_LATEST, .model = CS_MM_SC};
  cr_assert_gt(run_controlled(&c, &sc, 1), 0, "no wrong element without B");
}

/* A defect only the device shows (PTOAS #744: a pipe barrier and no DDR
 * fence before the notify) passes every schedule of the models that have
 * no state between drained and visible, as upstream's own simulator
 * passes it. */
Test(controlled, drain_without_ddr_fence_passes_sc_fifo_relaxed, .timeout = 900)
{
  sweep(CS_MM_SC, 3, CS_BUG_DRAIN_NO_DDR_FENCE, 0);
  sweep(CS_MM_FIFO, 3, CS_BUG_DRAIN_NO_DDR_FENCE, 0);
  sweep(CS_MM_RELAXED, 3, CS_BUG_DRAIN_NO_DDR_FENCE, 0);
}

/* simpler's neighbour-barrier pull ring as upstream ships it (a pipe
 * barrier and no DDR fence before the notify: --bug drain-no-ddr-fence)
 * passes the models above (the sweep) and fails on the device's: a
 * rank's store of step g-1 can land after its notify, and the right
 * neighbour's load of step g reads the old chunk (the pull ring that
 * failed on silicon). Some of the first 40 schedules show it. */
Test(controlled, ring_nb_without_ddr_fence_fails_under_a2a3, .timeout = 300)
{
  for (uint32_t n = 3; n <= 4; n++) {
    int failed = 0;
    for (uint64_t seed = 1; seed <= 40 && !failed; seed++) {
      cs_ar_cfg_t c = {.algo = CS_ALGO_RING_NB, .dtype = CS_FP32,
                       .op = CS_SUM, .nranks = n, .count = 8 * n,
                       .tile_bytes = 1024, .iters = 2,
                       .bug = CS_BUG_DRAIN_NO_DDR_FENCE};
      cs_sched_cfg_t sc = {.strategy = CS_SCHED_RANDOM, .model = CS_MM_A2A3,
                           .seed = seed};
      failed = run_controlled(&c, &sc, seed) != 0;
    }
    cr_assert(failed, "%u ranks: no schedule of 40 failed under a2a3", n);
  }
}

/* The upstream bug corpus (docs/upstream-bugs.md): each row's mutation
 * at its configuration. A bug upstream saw only on silicon passes 24
 * schedules of `sc` (upstream's own simulator is sequentially consistent)
 * and fails under the model that exposes it (the latest schedule, or some
 * of the first 40 random ones); pypto #2279's leftover credits fail under `sc` too, given a
 * schedule that delays one rank (upstream's simulator missed them by its
 * dispatch order, not by its memory model). */
typedef struct corpus_row {
  const char *upstream, *bug;
  cs_algo_t   algo;
  uint32_t    nranks, iters;
  uint64_t    count;
  cs_mm_t     model;        /* the model that exposes it */
  int         silicon_only; /* passes every schedule of sc */
  int         latest;       /* exposed by the latest schedule (the bug
                               table's recipe), else by a random one */
} corpus_row_t;

Test(corpus, each_row_passes_sc_or_not_as_documented_and_fails_its_model,
     .timeout = 600)
{
  static const corpus_row_t rows[] = {
      {"pypto #1561 / PTOAS #711", "no-fence-before-notify", CS_ALGO_RING, 3, 1,
       40, CS_MM_RELAXED, 1, 1},
      {"PTOAS #744", "drain-no-ddr-fence", CS_ALGO_RING, 3, 1, 40, CS_MM_A2A3, 1, 1},
      {"pypto #2093", "drain-no-ddr-fence", CS_ALGO_RING_NB, 3, 1, 9, CS_MM_A2A3, 1, 0},
      {"pypto #2279", "signal-reuse", CS_ALGO_MESH, 3, 2, 40, CS_MM_SC, 0, 0},
      {"PTOAS #706", "push-no-put-predrain", CS_ALGO_RING_PUSH, 2, 1, 40,
       CS_MM_A2A3, 1, 0},
      {"PTOAS #872", "host-push-no-tail-drain", CS_ALGO_HOST_PUSH, 2, 1, 1024,
       CS_MM_A2A3, 1, 1},
      {"pypto #1826", "ring-stage-in-drain-only", CS_ALGO_RING, 2, 1, 256,
       CS_MM_A2A3, 1, 1},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    const corpus_row_t *r = &rows[i];
    int bug = cs_bug_parse(r->bug);
    cr_assert_gt(bug, 0, "%s", r->bug);
    cs_ar_cfg_t c = {.algo = r->algo, .dtype = CS_FP32, .op = CS_SUM,
                     .nranks = r->nranks, .count = r->count, .tile_bytes = 1024,
                     .iters = r->iters, .bug = (uint32_t)bug};
    if (r->silicon_only)
      for (uint64_t s = 1; s <= 24; s++) {
        cs_sched_cfg_t sc = {.model = CS_MM_SC, .seed = s};
        sc.strategy = s % 2 ? CS_SCHED_RANDOM : CS_SCHED_PCT;
        sc.depth = 2;
        sc.steps = 400;
        cr_assert_eq(run_controlled(&c, &sc, s), 0, "%s (%s): schedule %llu "
                     "of sc fails", r->upstream, r->bug, (unsigned long long)s);
      }
    int failed = 0;
    for (uint64_t s = 1; s <= (r->latest ? 1 : 40) && !failed; s++) {
      cs_sched_cfg_t sc = {.strategy = r->latest ? CS_SCHED_LATEST : CS_SCHED_RANDOM,
                           .model = r->model, .seed = s};
      failed = run_controlled(&c, &sc, s) != 0;
    }
    cr_assert(failed, "%s (%s): %s failed under %s", r->upstream, r->bug,
              r->latest ? "the latest schedule never" : "no schedule of 40",
              cs_mm_name(r->model));
  }
}

Test(controlled, latest_schedule_verifies_every_algorithm_and_model, .timeout = 120)
{
  for (int a = 0; a < CS_NALGOS; a++)
    for (int m = 0; m < CS_MM_COUNT; m++) {
      cs_ar_cfg_t c = {.algo = (cs_algo_t)a, .dtype = CS_FP16, .op = CS_SUM,
                       .nranks = 3, .count = 333, .tile_bytes = 1024, .iters = 2};
      if (a == CS_ALGO_HOST_PUSH || a == CS_ALGO_RING_BIDIR) /* fp32 only */
        c.dtype = CS_FP32;
      if (a == CS_ALGO_RING_BIDIR) /* a multiple of 2N */
        c.count = 336;
      if (a == CS_ALGO_IBING) /* two ranks, fp32 */
        c.dtype = CS_FP32, c.nranks = 2, c.count = 334;
      cs_sched_cfg_t sc = {.strategy = CS_SCHED_LATEST, .model = (cs_mm_t)m};
      cr_assert_eq(run_controlled(&c, &sc, 5), 0, "%s %s", cs_algo_name(c.algo),
                   cs_mm_name((cs_mm_t)m));
    }
}

/* ------------------------------------------------ through the binary */


/* Splits a recipe string into args appended to `args` (static storage). */
static int split(char *s, char **args, int k)
{
  for (char *tok = strtok(s, " "); tok; tok = strtok(NULL, " "))
    args[k++] = tok;
  return k;
}

static char tmpdir[64];
static void mk_tmpdir(void)
{
  snprintf(tmpdir, sizeof(tmpdir), "/tmp/collsim-sched-XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}
static void rm_tmpdir(void)
{
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* The line that names the first wrong element (bits included). */
static void first_wrong(const char *out, char *buf, size_t n)
{
  const char *p = strstr(out, "result: ");
  cr_assert_not_null(p, "%s", out);
  const char *e = strchr(p, '\n');
  snprintf(buf, n, "%.*s", (int)(e ? e - p : (long)strlen(p)), p);
}

Test(mutations, each_fails_under_its_recipe_the_same_way_every_time,
     .timeout = 300, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  for (int b = 1; b < CS_NBUGS; b++) {
    char recipe[256], trace[128];
    snprintf(recipe, sizeof(recipe), "%s", cs_bug_table[b].recipe);
    char *tr = strstr(recipe, " --trace FILE");
    if (tr)
      *tr = 0;
    snprintf(trace, sizeof(trace), "%s/%s.cstrace", tmpdir, cs_bug_table[b].name);
    char *args[48] = {"run"};
    int k = split(recipe, args, 1);
    args[k++] = "--bug";
    args[k++] = (char *)cs_bug_table[b].name;
    args[k++] = "--trace";
    args[k++] = trace;
    args[k++] = "--timeout";
    args[k++] = "10";
    /* A free run that ends in a fault lets the other rank go on for a
     * while, steps a replay (which stops at the fault) cannot reproduce:
     * recorded controlled, it ends where its replay ends (as
     * scripts/make-traces.sh records it). */
    if (b == CS_BUG_UNALIGNED_SLOTS) {
      args[k++] = "--schedule";
      args[k++] = "latest";
    }
    args[k] = NULL;
    cli_out_t r1, r2;
    run_argv(&r1, 60, args);
    run_argv(&r2, 60, args);
    cr_assert_eq(r1.status, r2.status, "%s: %d then %d", cs_bug_table[b].name,
                 r1.status, r2.status);
    if (b == CS_BUG_INACTIVE_LANE_REMOTE_READ) {
      /* Results stay right; the defect is remote traffic on inactive lanes. */
      cr_assert_eq(r1.status, 0, "%s", r1.err);
      cs_trace_t t;
      char why[256];
      cr_assert_eq(load_trace(trace, &t, why, sizeof(why)), 0, "%s", why);
      uint64_t remote_short = 0;
      for (uint64_t i = 0; i < t.n; i++)
        if (t.rec[i].kind == CS_EV_LOAD && t.rec[i].peer != t.rec[i].rank &&
            t.rec[i].phase == 2 && t.rec[i].valid == 1 && t.rec[i].elem_off == 0)
          remote_short++;
      cs_trace_free(&t);
      cr_assert_gt(remote_short, 0, "no inactive-lane remote load in the trace");
      continue;
    }
    cr_assert_neq(r1.status, 0, "%s did not fail:\n%s", cs_bug_table[b].name, r1.out);
    if (r1.status == 1) {
      char l1[512], l2[512];
      first_wrong(r1.out, l1, sizeof(l1));
      first_wrong(r2.out, l2, sizeof(l2));
      cr_assert_str_eq(l1, l2, "%s", cs_bug_table[b].name);
    }
    if (b == CS_BUG_WAIT_EQ)
      cr_assert(strstr(r1.err, "deadlock") && strstr(r1.err, "hang wavefront"),
                "%s", r1.err);
    if (b == CS_BUG_UNALIGNED_SLOTS)
      cr_assert(strstr(r1.err, "out-of-slot fault"), "%s", r1.err);
    /* The trace of the failure replays to the same failure. */
    char *rargs[] = {"replay", trace, NULL};
    cli_out_t rr;
    run_argv(&rr, 60, rargs);
    cr_assert_eq(rr.status, 0, "%s replay: %s%s", cs_bug_table[b].name, rr.out, rr.err);
    cr_assert(strstr(rr.out, "identical"), "%s", rr.out);
    cr_assert_null(strstr(rr.out, "outcome: verified"), "%s: %s", cs_bug_table[b].name, rr.out);
  }
}

Test(replay, no_fence_bug_replays_to_the_same_wrong_bits_ten_times,
     .timeout = 120, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char trace[128];
  snprintf(trace, sizeof(trace), "%s/b.cstrace", tmpdir);
  char *args[] = {"run", "--algo", "ring", "--ranks", "3", "--count", "40",
                  "--bug", "no-fence-before-notify", "--schedule", "latest",
                  "--memory-model", "relaxed", "--trace", trace, NULL};
  cli_out_t r;
  run_argv(&r, 60, args);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  char want[512], got[512];
  first_wrong(r.out, want, sizeof(want));
  for (int i = 0; i < 10; i++) {
    char *rargs[] = {"replay", trace, NULL};
    cli_out_t rr;
    run_argv(&rr, 60, rargs);
    cr_assert_eq(rr.status, 0, "%s%s", rr.out, rr.err);
    cr_assert(strstr(rr.out, "events: identical; outcome: wrong result"), "%s", rr.out);
    first_wrong(rr.out, got, sizeof(got));
    cr_assert_str_eq(got, want);
  }
  /* Without the bug the same command verifies. */
  char *ok[] = {"run", "--algo", "ring", "--ranks", "3", "--count", "40",
                "--schedule", "latest", "--memory-model", "relaxed", NULL};
  run_argv(&r, 60, ok);
  cr_assert_eq(r.status, 0, "%s", r.out);
}

/* `runs` runs of args (its trace path last, given as %d of the run's
 * number): each exits `status` and leaves the first one's records,
 * timestamps aside. */
static void same_trace_runs(char **args, int nargs, int runs, int status,
                            uint64_t min_records)
{
  cs_trace_t first = {0};
  for (int i = 0; i < runs; i++) {
    char trace[128], why[256];
    snprintf(trace, sizeof(trace), "%s/d%d.cstrace", tmpdir, i);
    args[nargs - 1] = trace;
    cli_out_t r;
    run_argv(&r, 60, args);
    cr_assert_eq(r.status, status, "run %d: exit %d: %s%s", i, r.status, r.out,
                 r.err);
    cs_trace_t t;
    cr_assert_eq(load_trace(trace, &t, why, sizeof(why)), 0, "%s", why);
    if (i == 0) {
      first = t;
      cr_assert_gt(first.n, min_records);
      continue;
    }
    cr_assert_eq(t.n, first.n, "run %d: %llu records, first had %llu", i,
                 (unsigned long long)t.n, (unsigned long long)first.n);
    int64_t k = first_unlike_record(&first, &t);
    cr_assert_eq(k, -1, "run %d differs at record %lld", i, (long long)k);
    cs_trace_free(&t);
  }
  cs_trace_free(&first);
}

/* Same config and schedule: identical traces (timestamps aside), 20 runs. */
Test(replay, same_schedule_gives_the_same_trace_twenty_times, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char *args[] = {"run", "--algo", "mesh", "--ranks", "3", "--count", "300",
                  "--dtype", "fp16", "--schedule", "pct:7:3", "--memory-model",
                  "relaxed", "--tile-bytes", "1024", "--trace", NULL, NULL};
  same_trace_runs(args, 17, 20, 0, 50);
}

/* With every hand-over slowed (the transport's test delay: each rank
 * sleeps 3 ms right after it posts), the same trace ten times: a rank
 * that learnt whether it held the turn after posting, not before, read
 * the mode the launcher had meanwhile set for the rank it granted, and
 * picked too (2 traces in 10 runs of this configuration). */
Test(replay, slowed_hand_overs_give_the_same_trace_ten_times, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  setenv("COLLSIM_TEST_HANDOVER_DELAY_US", "3000", 1);
  char *args[] = {"run", "--algo", "mesh", "--ranks", "2", "--count", "24",
                  "--iters", "2", "--schedule", "random:1", "--trace", NULL,
                  NULL};
  same_trace_runs(args, 13, 10, 0, 20);
  unsetenv("COLLSIM_TEST_HANDOVER_DELAY_US");
}

/* A deadlock's end too: the stopped waits are recorded in rank order
 * every time. Woken at once, the two ranks' wait-begins took their
 * sequence numbers in the order the OS ran them (this run: 4 of 10 runs
 * had them the other way round). */
Test(replay, a_deadlock_ends_with_the_same_trace_ten_times, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char *args[] = {"run", "--algo", "mesh", "--ranks", "2", "--count", "5000",
                  "--bug", "wait-eq", "--schedule", "pct:1:1", "--trace",
                  NULL, NULL};
  same_trace_runs(args, 13, 10, 3, 10);
}

Test(replay, an_edited_event_replays_to_a_divergence_at_that_event,
     .timeout = 120, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char trace[128], edited[128], why[256];
  snprintf(trace, sizeof(trace), "%s/e.cstrace", tmpdir);
  snprintf(edited, sizeof(edited), "%s/e2.cstrace", tmpdir);
  for (int controlled = 0; controlled < 2; controlled++) {
    char *args[] = {"run", "--algo", "ring", "--ranks", "4", "--count", "100",
                    "--trace", trace, controlled ? "--schedule" : NULL, "random:4", NULL};
    cli_out_t r;
    run_argv(&r, 60, args);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cs_trace_t t;
    cr_assert_eq(load_trace(trace, &t, why, sizeof(why)), 0, "%s", why);
    /* Pick the 30th load by seq and change its element offset in the file. */
    uint64_t target_seq = 0;
    int seen = 0;
    for (uint64_t i = 0; i < t.n && !target_seq; i++)
      if (t.rec[i].kind == CS_EV_LOAD && ++seen == 30)
        target_seq = t.rec[i].seq;
    cs_trace_free(&t);
    cr_assert_neq(target_seq, 0);
    FILE *f = fopen(trace, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *buf = malloc((size_t)size);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    for (long off = CS_TRACE_HEADER_BYTES; off < size; off += CS_TRACE_RECORD_BYTES) {
      cs_trace_rec_t *x = (cs_trace_rec_t *)(buf + off);
      if (x->seq == target_seq)
        x->elem_off += 1; /* checksum left stale, as a hand edit would */
    }
    f = fopen(edited, "wb");
    fwrite(buf, 1, (size_t)size, f);
    fclose(f);
    free(buf);
    char *rargs[] = {"replay", edited, NULL};
    cli_out_t rr;
    run_argv(&rr, 60, rargs);
    cr_assert_eq(rr.status, 1, "%s%s", rr.out, rr.err);
    char needle[64];
    snprintf(needle, sizeof(needle), "(seq %llu)", (unsigned long long)target_seq);
    cr_assert(strstr(rr.err, needle), "divergence not at %s: %s", needle, rr.err);
    cr_assert(strstr(rr.err, "edited"), "%s", rr.err);
    /* The unedited trace replays identically. */
    char *oargs[] = {"replay", trace, NULL};
    run_argv(&rr, 60, oargs);
    cr_assert_eq(rr.status, 0, "%s%s", rr.out, rr.err);
    cr_assert(strstr(rr.out, "identical; outcome: verified"), "%s", rr.out);
  }
}

Test(replay, bad_traces_and_usage_exit_2_with_one_line, .init = mk_tmpdir,
     .fini = rm_tmpdir)
{
  char path[128];
  snprintf(path, sizeof(path), "%s/junk.cstrace", tmpdir);
  FILE *f = fopen(path, "w");
  fputs("garbage", f);
  fclose(f);
  char *a1[] = {"replay", path, NULL};
  cli_out_t r;
  run_argv(&r, 20, a1);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "not a collsim trace"), "%s", r.err);
  char *a2[] = {"replay", NULL};
  run_argv(&r, 20, a2);
  cr_assert_eq(r.status, 2);
  char *a3[] = {"run", "--schedule", "sometimes", NULL};
  run_argv(&r, 20, a3);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--schedule 'sometimes'"), "%s", r.err);
  char *a4[] = {"run", "--memory-model", "relaxed", NULL};
  run_argv(&r, 20, a4);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "needs --schedule"), "%s", r.err);
  char *a5[] = {"run", "--bug", "typo", NULL};
  run_argv(&r, 20, a5);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--list-bugs"), "%s", r.err);
}

/* Runs an interactive schedule with `answers` on stdin; returns the exit
 * status. */
static int interactive_run(const char *answers, size_t n, const char *trace)
{
  int p[2];
  cr_assert_eq(pipe(p), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[0], 0);
    close(p[1]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execl(bin_path(), bin_path(), "run", "--ranks", "2", "--count", "3",
          "--iters", "1", "--schedule", "interactive", "--trace", trace, NULL);
    _exit(127);
  }
  close(p[0]);
  if (n && write(p[1], answers, n) != (ssize_t)n)
    cr_assert_fail("cannot write the answers");
  close(p[1]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "status %d", st);
  cr_assert_eq(cs_world_count_names(pid), 0);
  return WEXITSTATUS(st);
}

Test(interactive, the_person_decides_which_actor_runs, .timeout = 60,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char trace[128], answers[512], why[256];
  snprintf(trace, sizeof(trace), "%s/i.cstrace", tmpdir);
  /* First answer 1 (rank 1's stage-in store before rank 0's), then Enter. */
  memset(answers, '\n', sizeof(answers));
  answers[0] = '1';
  cr_assert_eq(interactive_run(answers, sizeof(answers), trace), 0);
  cs_trace_t t;
  cr_assert_eq(load_trace(trace, &t, why, sizeof(why)), 0, "%s", why);
  cr_assert_eq(t.rec[0].kind, CS_EV_STORE);
  cr_assert_eq(t.rec[0].rank, 1, "the first event is rank %u's", t.rec[0].rank);
  cs_trace_free(&t);
  /* Answer 0 first: rank 0 goes first. */
  answers[0] = '0';
  cr_assert_eq(interactive_run(answers, sizeof(answers), trace), 0);
  cr_assert_eq(load_trace(trace, &t, why, sizeof(why)), 0, "%s", why);
  cr_assert_eq(t.rec[0].rank, 0);
  cs_trace_free(&t);
  /* Input ends before the run does: the run stops (exit 3), nothing leaks. */
  cr_assert_eq(interactive_run("\n\n\n", 3, trace), 3);
}

/* Runs an interactive schedule with `answers` on stdin and returns what
 * it printed on stderr (the prompt), up to cap-1 bytes; *status gets the
 * exit status. */
static void interactive_prompt(const char *answers, char *out, size_t cap,
                               int *status)
{
  int in[2], er[2];
  cr_assert_eq(pipe(in), 0);
  cr_assert_eq(pipe(er), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(er[1], 2);
    close(in[1]);
    close(er[0]);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(bin_path(), bin_path(), "run", "--ranks", "2", "--count", "3",
          "--iters", "1", "--schedule", "interactive", NULL);
    _exit(127);
  }
  close(in[0]);
  close(er[1]);
  size_t n = strlen(answers);
  if (n && write(in[1], answers, n) != (ssize_t)n)
    cr_assert_fail("cannot write the answers");
  close(in[1]);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < cap && (r = read(er[0], out + got, cap - 1 - got)) > 0)
    got += (size_t)r;
  out[got] = 0;
  close(er[0]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "status %d", st);
  cr_assert_eq(cs_world_count_names(pid), 0);
  *status = WEXITSTATUS(st);
}

Test(interactive, refuses_what_is_not_a_choice_and_shows_help_and_quits,
     .timeout = 60)
{
  static char out[1 << 16];
  int st;
  /* Step 0 has two enabled actors (both ranks' stage-in stores): 7, x and
   * 1x are refused and asked again, ? prints the help, q stops the run. */
  interactive_prompt("7\nx\n1x\n?\nq\n", out, sizeof(out), &st);
  cr_assert_eq(st, 3, "%s", out);
  cr_assert(strstr(out, "'7' is not a choice: type a rank (0..1)"), "%s", out);
  cr_assert(strstr(out, "'x' is not a choice"), "%s", out);
  cr_assert(strstr(out, "'1x' is not a choice"), "%s", out);
  cr_assert(strstr(out, "Each step one actor runs"), "%s", out);
  cr_assert(strstr(out, "quit at step 0"), "%s", out);
  /* The refusals did not count as choices: the run was still at step 0. */
  cr_assert_null(strstr(out, "step 1:"), "%s", out);
}

/* Digits name ranks, not positions in the list (as teach's keys do). Rank
 * 0 answered again and again runs until it waits for rank 1 (its READY
 * barrier needs rank 1's notify); from then on "0" is refused with the
 * reason and not counted, and "1" runs rank 1 although the list then
 * holds it first (by position, 1 would be out of range). */
Test(interactive, digits_name_ranks_not_positions, .timeout = 60)
{
  static char out[1 << 16];
  int st;
  char answers[64] = "";
  for (int i = 0; i < 12; i++)
    strcat(answers, "0\n");
  strcat(answers, "1\nq\n");
  interactive_prompt(answers, out, sizeof(out), &st);
  cr_assert_eq(st, 3, "%s", out);
  cr_assert(strstr(out, "'0' is not a choice: rank 0 cannot run now"), "%s",
            out);
  cr_assert_null(strstr(out, "'1' is not a choice"), "%s", out);
  /* the refusals came at the step before the quit, whose list held rank
   * 1 alone, labelled [1]; the "1" then ran it */
  const char *refused = strstr(out, "rank 0 cannot run now");
  const char *q = strstr(out, "quit at step ");
  cr_assert_not_null(q, "%s", out);
  unsigned long quit_at = strtoul(q + 13, NULL, 10);
  char before[32];
  snprintf(before, sizeof(before), "step %lu: enabled actors:\n  [1] ",
           quit_at - 1);
  const char *last = strstr(out, before);
  cr_assert_not_null(last, "rank 1 was not listed, as [1], before the quit: "
                     "%s", out);
  cr_assert(refused > last, "the refusals came at that step: %s", out);
}

/* PCT with many change points on few steps must still finish (two change
 * points on one step once looped forever). */
Test(controlled, pct_with_colliding_change_points_finishes, .timeout = 60)
{
  cs_ar_cfg_t c = {.algo = CS_ALGO_RING, .dtype = CS_FP32, .op = CS_SUM,
                   .nranks = 3, .count = 40, .tile_bytes = 1024, .iters = 1};
  for (uint64_t seed = 1; seed <= 5; seed++) {
    cs_sched_cfg_t sc = {.strategy = CS_SCHED_PCT, .model = CS_MM_RELAXED,
                         .seed = seed, .depth = 64, .steps = 2};
    cr_assert_eq(run_controlled(&c, &sc, seed), 0);
    sc.steps = 200;
    cr_assert_eq(run_controlled(&c, &sc, seed), 0);
  }
}

/* Every golden trace shipped in traces/ replays identically and verifies:
 * the engine still makes, event for event, the run it recorded. */
Test(replay, every_shipped_golden_trace_replays_identically, .timeout = 300)
{
  glob_t g;
  cr_assert_eq(glob(COLLSIM_SOURCE_DIR "/traces/*.cstrace", 0, NULL, &g), 0);
  cr_assert_geq(g.gl_pathc, 2, "the golden traces are missing");
  for (size_t i = 0; i < g.gl_pathc; i++) {
    char *args[] = {"replay", g.gl_pathv[i], NULL};
    cli_out_t r;
    run_argv(&r, 60, args);
    cr_assert_eq(r.status, 0, "%s: %s%s", g.gl_pathv[i], r.out, r.err);
    cr_assert(strstr(r.out, "identical"), "%s", r.out);
    cr_assert(strstr(r.out, "outcome: verified"), "%s: %s", g.gl_pathv[i], r.out);
  }
  globfree(&g);
}

/* Every shipped trace in traces/bugs/ replays identically to its failure. */
Test(replay, every_shipped_bug_trace_replays_to_the_same_failure, .timeout = 300)
{
  for (int b = 1; b < CS_NBUGS; b++) {
    char path[512];
    snprintf(path, sizeof(path), "%s/traces/bugs/%s.cstrace", COLLSIM_SOURCE_DIR,
             cs_bug_table[b].name);
    cr_assert_eq(access(path, R_OK), 0, "missing %s", path);
    char *args[] = {"replay", path, NULL};
    cli_out_t r;
    run_argv(&r, 60, args);
    cr_assert_eq(r.status, 0, "%s: %s%s", path, r.out, r.err);
    cr_assert(strstr(r.out, "identical"), "%s", r.out);
    if (b == CS_BUG_INACTIVE_LANE_REMOTE_READ)
      cr_assert(strstr(r.out, "outcome: verified"), "%s", r.out);
    else
      cr_assert_null(strstr(r.out, "outcome: verified"), "%s: %s", path, r.out);
  }
}

/* ------------------------------------------------ rank turns */

#include "../sim/rng.h"
#include "../cli/collsim/run.h"

/* random:SEED's rule (an enabled actor drawn uniformly from the rng, seeded
 * as the scheduler seeds it) as the caller's picker: every pick is then
 * made in the launcher, never in a rank's turn. */
static int64_t launcher_random(const cs_sched_view_t *v, void *arg)
{
  return (int64_t)(cs_splitmix64((uint64_t *)arg) % v->nenabled);
}

/* `collsim run ARGS --schedule random:SEED` in this process, its summary
 * to /dev/null; picked by the launcher's picker when by_launcher. Returns
 * the exit code. */
static int run_random(char **args, uint64_t seed, int by_launcher)
{
  char *argv[40] = {"run"}, sched[32];
  int argc = 1;
  while (args[argc - 1])
    argv[argc] = args[argc - 1], argc++;
  snprintf(sched, sizeof(sched), "random:%llu", (unsigned long long)seed);
  argv[argc++] = "--schedule";
  argv[argc++] = sched;
  run_opts_t o;
  cr_assert_eq(cs_run_parse(argc, argv, &o), 0);
  uint64_t rng = seed * 0x2545f4914f6cdd1dull + 12345;
  if (by_launcher) {
    o.sched.strategy = CS_SCHED_CALLBACK;
    o.sched.pick_fn = launcher_random;
    o.sched.pick_arg = &rng;
  }
  fflush(stdout);
  int keep = dup(1), null = open("/dev/null", O_WRONLY);
  dup2(null, 1);
  int rc = cs_run_execute(&o);
  fflush(stdout);
  dup2(keep, 1);
  close(keep);
  close(null);
  return rc;
}

static void same_file_bytes(const char *a, const char *b)
{
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  cr_assert(fa && fb, "%s, %s", a, b);
  int ca, cb;
  long at = 0;
  do {
    ca = fgetc(fa);
    cb = fgetc(fb);
    cr_assert_eq(ca, cb, "%s and %s differ at byte %ld", a, b, at);
    at++;
  } while (ca != EOF);
  fclose(fa);
  fclose(fb);
}

/* Whether two files hold the same bytes. */
static int files_equal(const char *a, const char *b)
{
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  cr_assert(fa && fb, "%s, %s", a, b);
  int ca, cb;
  do {
    ca = fgetc(fa);
    cb = fgetc(fb);
  } while (ca == cb && ca != EOF);
  fclose(fa);
  fclose(fb);
  return ca == cb;
}

/* The granted rank picks the next step itself (sched.h, rank turns); the
 * schedule must be the one the launcher picks by the same rule: traced
 * (landings back in the launcher), the same records. The untraced case
 * (landings in the ranks) is the next test. */
Test(controlled, rank_turns_pick_what_the_launcher_picks, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  static const char *const models[] = {"sc", "fifo", "relaxed"};
  for (int m = 0; m < 3; m++)
    for (uint64_t seed = 1; seed <= 3; seed++) {
      char t[2][128];
      cs_trace_t tr[2];
      for (int by = 0; by < 2; by++) {
        snprintf(t[by], sizeof(t[by]), "%s/t%d.cstrace", tmpdir, by);
        char *traced[] = {"--algo", "mesh", "--ranks", "3", "--count", "300",
                          "--iters", "2", "--memory-model", (char *)models[m],
                          "--trace", t[by], NULL};
        cr_assert_eq(run_random(traced, seed, by), 0);
        char why[256];
        cr_assert_eq(load_trace(t[by], &tr[by], why, sizeof(why)), 0, "%s", why);
      }
      cr_assert_eq(tr[0].n, tr[1].n, "%s seed %llu", models[m], (unsigned long long)seed);
      for (uint64_t k = 0; k < tr[0].n; k++) {
        cs_trace_rec_t a = tr[0].rec[k], b = tr[1].rec[k];
        a.t_ns = b.t_ns = 0;
        a.checksum = b.checksum = 0;
        cr_assert(memcmp(&a, &b, sizeof(a)) == 0, "%s seed %llu: record %llu differs",
                  models[m], (unsigned long long)seed, (unsigned long long)k);
      }
      cs_trace_free(&tr[0]);
      cs_trace_free(&tr[1]);
    }
}

/* Untraced, a rank lands posted ops on its own turn: the result of a
 * fence-less ring under relaxed depends on the schedule, so equal results
 * for each seed say the turns chose what the launcher chose. The seeds
 * must give more than one result, or the comparison could not fail. */
Test(controlled, untraced_rank_turns_give_the_launchers_results, .timeout = 300,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char npy[2][128], first[128];
  snprintf(first, sizeof(first), "%s/first.npy", tmpdir);
  int distinct = 0;
  for (uint64_t seed = 1; seed <= 12; seed++) {
    for (int by = 0; by < 2; by++) {
      snprintf(npy[by], sizeof(npy[by]), "%s/o%d-%llu.npy", tmpdir, by,
               (unsigned long long)seed);
      char *untraced[] = {"--algo", "ring", "--ranks", "3", "--count", "40",
                          "--bug", "no-fence-before-notify", "--memory-model",
                          "relaxed", "--output", npy[by], NULL};
      run_random(untraced, seed, by);
    }
    same_file_bytes(npy[0], npy[1]);
    if (seed == 1)
      cr_assert_eq(rename(npy[0], first), 0);
    else
      distinct += !files_equal(first, npy[0]);
  }
  cr_assert_gt(distinct, 0, "every seed gave the same result: the check cannot fail");
}

/* ------------------------------------------------ rank turns, kept ranks */

#include <sched.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "../sim/sched/internal.h" /* the area's count of refused turns */

/* Where the ranks log the order they ran in (shared with them). */
typedef struct turn_log {
  uint32_t n;
  uint8_t  rank[4096];
} turn_log_t;

/* Each rank notifies its right neighbour 24 times, logging itself after
 * every event, then waits for its left neighbour's 24: the log is the
 * order the schedule granted the ranks in. */
static int turn_body(cs_dev_t *d, void *arg)
{
  turn_log_t *log = arg;
  for (int i = 0; i < 24; i++) {
    cs_notify(d, (d->rank + 1) % d->nranks, 0, 0, CS_NOTIFY_ADD, 1);
    uint32_t k = __atomic_fetch_add(&log->n, 1, __ATOMIC_RELAXED);
    if (k < sizeof(log->rank))
      log->rank[k] = (uint8_t)d->rank;
  }
  cs_wait(d, 0, 0, CS_CMP_GE, 24);
  return 0;
}

static void turn_world(cs_world_t *w)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "signal", 16 * 4, 4);
  cs_world_opts_t wo = {.io_bytes = 64, .timeout_ns = 20000000000ull,
                        .sched_bytes = cs_sched_area_bytes(3, 1u << 16)};
  cr_assert_eq(cs_world_create(w, &l, 3, &wo), 0);
}

/* One run of turn_body under sc over w (a pool's, when pool); its log to
 * out. Returns the turns the ranks handed back for want of the
 * launcher's scheduler. */
static uint64_t turn_run(cs_world_t *w, cs_launch_pool_t *pool,
                         const cs_sched_cfg_t *sc, turn_log_t *log,
                         turn_log_t *out)
{
  if (cs_launch_pool_alive(pool))
    cs_launch_pool_reset(pool, w);
  memset(log, 0, sizeof(*log));
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep, .sched = sc, .pool = pool};
  cr_assert_eq(cs_launch(w, turn_body, log, &lo, NULL), 0);
  fclose(rep);
  *out = *log;
  return area_of(w)->refused;
}

/* A kept rank (a pool's) forked with the first run's scheduler; in every
 * later run it must take its turns with that run's scheduler (none handed
 * back), and pick what a fresh world's ranks pick. */
Test(controlled, kept_ranks_take_turns_with_each_runs_scheduler, .timeout = 120)
{
  turn_log_t *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(log, MAP_FAILED);
  static turn_log_t kept, fresh;
  cs_world_t pw;
  turn_world(&pw);
  cs_launch_pool_t *pool;
  cr_assert_eq(cs_launch_pool_open(&pool, 3), 0);
  for (uint64_t seed = 1; seed <= 8; seed++) {
    cs_sched_cfg_t sc = {.strategy = seed % 2 ? CS_SCHED_RANDOM : CS_SCHED_PCT,
                         .model = CS_MM_SC, .seed = seed, .depth = 3, .steps = 80};
    uint64_t refused = turn_run(&pw, pool, &sc, log, &kept);
    cr_assert(cs_launch_pool_alive(pool), "seed %llu: the pool lost a rank",
              (unsigned long long)seed);
    cr_assert_eq(refused, 0, "seed %llu: %llu turns handed back",
                 (unsigned long long)seed, (unsigned long long)refused);
    cs_world_t fw;
    turn_world(&fw);
    turn_run(&fw, NULL, &sc, log, &fresh);
    cs_world_destroy(&fw);
    cr_assert_eq(kept.n, 72);
    cr_assert_eq(fresh.n, 72);
    cr_assert(memcmp(kept.rank, fresh.rank, kept.n) == 0,
              "seed %llu: the kept ranks ran in another order",
              (unsigned long long)seed);
  }
  cs_launch_pool_close(pool);
  cs_world_destroy(&pw);
  munmap(log, sizeof(*log));
  cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a rank was left behind");
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

/* Where each rank ran: the CPUs it was allowed, as a count and the
 * lowest one (shared with the ranks). */
typedef struct cpu_log {
  int count[3], first[3];
} cpu_log_t;

static int cpu_body(cs_dev_t *d, void *arg)
{
  cpu_log_t *log = arg;
  cpu_set_t s;
  cr_assert_eq(sched_getaffinity(0, sizeof(s), &s), 0);
  log->count[d->rank] = CPU_COUNT(&s);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &s)) {
      log->first[d->rank] = c;
      break;
    }
  cs_notify(d, (d->rank + 1) % d->nranks, 0, 0, CS_NOTIFY_ADD, 1);
  cs_wait(d, 0, 0, CS_CMP_GE, 1);
  return 0;
}

/* A controlled run has one actor at a time, so the launcher binds itself
 * and its ranks to one CPU (a hand-off is then a local switch, not an
 * interrupt to another CPU) and gives its own CPU set back afterwards;
 * a free run's ranks are pinned one per CPU when they fit, as before.
 * While the suite's other jobs hold every CPU's claim a run binds none,
 * so the run is repeated until one binds (a few tries at most). */
Test(controlled, ranks_share_the_launchers_one_cpu, .timeout = 60)
{
  cpu_log_t *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(log, MAP_FAILED);
  cpu_set_t before, after;
  cr_assert_eq(sched_getaffinity(0, sizeof(before), &before), 0);
  cs_world_t w;
  turn_world(&w);
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_RANDOM, .model = CS_MM_SC, .seed = 1};
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep, .sched = &sc};
  int bound = 0;
  for (int tries = 0; tries < 200 && !bound; tries++) {
    memset(log, 0, sizeof(*log));
    cr_assert_eq(cs_launch(&w, cpu_body, log, &lo, NULL), 0);
    cr_assert_eq(sched_getaffinity(0, sizeof(after), &after), 0);
    cr_assert(CPU_EQUAL(&before, &after), "the launcher's CPU set changed");
    bound = log->count[0] == 1;
    for (int r = 0; r < 3; r++) {
      cr_assert_eq(log->count[r], bound ? 1 : CPU_COUNT(&before),
                   "rank %d may run on %d CPUs", r, log->count[r]);
      cr_assert_eq(log->first[r], log->first[0], "rank %d on CPU %d, rank 0 on %d",
                   r, log->first[r], log->first[0]);
      cr_assert(CPU_ISSET(log->first[r], &before));
    }
    if (!bound)
      usleep(10000);
  }
  cr_assert(bound, "no run bound its ranks to one CPU in 200 tries");
  if (CPU_COUNT(&before) >= 3) { /* free mode: one CPU each, as before */
    memset(log, 0, sizeof(*log));
    lo.sched = NULL;
    cr_assert_eq(cs_launch(&w, cpu_body, log, &lo, NULL), 0);
    cr_assert_neq(log->first[0], log->first[1]);
  }
  fclose(rep);
  cs_world_destroy(&w);
  munmap(log, sizeof(*log));
}

/* A CPU claimed by another collsim run (an abstract socket of its name,
 * as the launcher binds) is not taken: the run binds to a free one, and
 * with every CPU claimed it binds none and its ranks may use them all. */
static int claim_as_another_run(int cpu)
{
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "collsim-cpu-%d", cpu);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  cr_assert(fd >= 0);
  if (bind(fd, (struct sockaddr *)&a,
           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0) {
    close(fd);
    return -1; /* held by a run of the suite's other jobs */
  }
  return fd;
}

Test(controlled, a_cpu_another_run_claimed_is_not_taken, .timeout = 60)
{
  cpu_log_t *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(log, MAP_FAILED);
  cpu_set_t before;
  cr_assert_eq(sched_getaffinity(0, sizeof(before), &before), 0);
  int fds[CPU_SETSIZE], last = -1;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    fds[c] = -1;
    if (CPU_ISSET(c, &before))
      last = c;
  }
  int held = 1; /* this test, not the suite's other jobs, holds the claims */
  for (int c = 0; c < last; c++) /* every allowed CPU but the last one */
    if (CPU_ISSET(c, &before))
      held &= (fds[c] = claim_as_another_run(c)) >= 0;
  cs_world_t w;
  turn_world(&w);
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_RANDOM, .model = CS_MM_SC, .seed = 1};
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep, .sched = &sc};
  cr_assert_eq(cs_launch(&w, cpu_body, log, &lo, NULL), 0);
  int mine = claim_as_another_run(last);
  /* A run of the suite's other jobs may have held the last CPU's claim
   * while this run started and given it back since: then this run bound
   * none, which is right too. What must never happen is a rank bound to
   * one of the CPUs this test holds. */
  int bound = log->count[0] == 1;
  if (held && mine >= 0 && !bound)
    for (int r = 0; r < 3; r++)
      cr_assert_eq(log->count[r], CPU_COUNT(&before), "rank %d on %d CPUs", r,
                   log->count[r]);
  if (held && mine >= 0 && bound) { /* the run's claim was given back */
    for (int r = 0; r < 3; r++) {
      cr_assert_eq(log->count[r], 1);
      cr_assert_eq(log->first[r], last, "rank %d on CPU %d, the free one is %d", r,
                   log->first[r], last);
    }
    memset(log, 0, sizeof(*log));
    cr_assert_eq(cs_launch(&w, cpu_body, log, &lo, NULL), 0);
    for (int r = 0; r < 3; r++)
      cr_assert_eq(log->count[r], CPU_COUNT(&before), "rank %d bound to a claimed CPU", r);
  }
  if (mine >= 0)
    close(mine);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (fds[c] >= 0)
      close(fds[c]);
  fclose(rep);
  cs_world_destroy(&w);
  munmap(log, sizeof(*log));
}

/* --schedule's numbers are whole decimal numbers, all of them: no sign,
 * no space, no hex, no trailing characters, nothing past 2^64 - 1, and
 * none cut short by a buffer's end (a long run of zeros followed by
 * "5junk" is refused, not read as 5). */
Test(parse, schedule_numbers_are_strictly_decimal)
{
  char zeros[400];
  snprintf(zeros, sizeof(zeros), "random:%0300d5junk", 0);
  const char *bad[] = {
    "random:+5", "random: 5", "random: -1", "random:-1", "random:0x10",
    "random:5x", "random:", "random:18446744073709551616", "pct:1:2:3x",
    "pct:1: 2", "pct:+1:2", "pct:1:2:+3", "pct:1:2:18446744073709551616",
    zeros, "deviate:0.18446744073709551616>1.0",
    "deviate:0#18446744073709551616>1.0", "deviate:18446744073709551616.0>1.0",
    "deviate:+0.1>1.0", "deviate:0.1>1.0x", "deviate: 0.1>1.0"};
  const char *good[] = {"random:0", "random:18446744073709551615", "pct:1:64",
                        "pct:0:1:9223372036854775808", "deviate:0.1>1.0",
                        "deviate:^>0#18446744073709551615"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cs_sched_cfg_t s = {0};
    cr_expect_lt(cs_sched_parse(bad[i], &s, NULL), 0, "accepted '%s'", bad[i]);
  }
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    cs_sched_cfg_t s = {0};
    cr_expect_eq(cs_sched_parse(good[i], &s, NULL), 0, "refused '%s'", good[i]);
  }
}
