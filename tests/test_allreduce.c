/*
 * test_allreduce.c - mesh, ring and host allreduce run on real forked
 * ranks, every rank's result compared bit for bit with the independent
 * oracle (collectives/oracle.c), every signal cell checked against the
 * final values of docs/algorithms.md §2.3 and against 0 after the epilogue.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/registry.h"
#include "../collectives/allreduce.h"
#include "../collectives/geometry.h"
#include "../collectives/reduce.h"
#include "../sim/launch.h"
#include "../cli/collsim/cli.h"
#include "../window/cs_error.h"

typedef struct outcome {
  uint64_t wrong;        /* elements differing from the oracle, all ranks */
  uint32_t signal_bad;   /* cells off their final value before the epilogue */
  uint64_t not_zero;     /* cells not 0 at the end */
  uint32_t differ;       /* repeated calls that changed the result */
  int      ranks_differ; /* 1 if two ranks ended with different bits */
  double   max_rel;      /* vs float64 */
  uint64_t tol_fail;     /* elements outside the reference tolerance */
} outcome_t;

/* twophase and ring-nb take only a count that is a multiple of the rank
 * count (simpler's precondition), so for them the count asked for is
 * rounded up to the next one. */
static int equal_chunks(cs_algo_t a)
{
  return a == CS_ALGO_TWOPHASE || a == CS_ALGO_RING_NB ||
         a == CS_ALGO_HOST_PUSH || a == CS_ALGO_IBING;
}

/* n, or the algorithm's rank limit when below it (ibing: 2): the loops
 * over every algorithm at a fixed rank count. */
static uint32_t ranks_for(cs_algo_t a, uint32_t n)
{
  uint32_t m = cs_ar_max_ranks(a);
  return n < m ? n : m;
}

/* host-push and ring-bidir take fp32 sum only (their reducing puts are
 * fp32 atomic adds): the loops over every algorithm leave out what they
 * refuse. */
static int refused(cs_algo_t a, cs_dtype_t t, cs_op_t op)
{
  return (a == CS_ALGO_HOST_PUSH || a == CS_ALGO_RING_BIDIR ||
          a == CS_ALGO_IBING) &&
         (t != CS_FP32 || op != CS_SUM);
}

/* A configuration (count rounded up for equal_chunks; ring-bidir: to a
 * multiple of 2N, simpler's two halves of every chunk). */
static cs_ar_cfg_t cfg(cs_algo_t a, cs_dtype_t t, cs_op_t op, uint32_t n,
                       uint64_t count)
{
  if (equal_chunks(a))
    count = (count + n - 1) / n * n;
  if (a == CS_ALGO_RING_BIDIR)
    count = (count + 2 * n - 1) / (2 * n) * (2 * n);
  cs_ar_cfg_t c = {.algo = a, .dtype = t, .op = op, .nranks = n,
                   .count = count, .tile_bytes = CS_TILE_BYTES, .iters = 1};
  return c;
}

/* The value every non-self signal cell reaches in one call, written from
 * the reference's formulas alone (not from collectives/): mesh 1 + C with
 * C = ceil(N/W), W = ceil(N/align)*align for N below the max chunk, else
 * the max chunk; ring 2K per row with K = ceil(MS/W), MS = ceil(S/NR)
 * (fp32) or min(S, ceil(S/NR) + 15) (2-byte), W from MS as for mesh; host
 * 1 + ceil(S/256); twophase, ring-nb and onephase 1 per row (simpler's
 * kernels: one barrier per row). align = 32 B, max chunk = the tile's bytes, both in elements. */
static int32_t reference_signal_final(const cs_ar_cfg_t *c)
{
  uint64_t es = c->dtype == CS_FP32 ? 4 : 2;
  uint64_t align = 32 / es, maxc = c->tile_bytes / es, n = c->count;
  uint64_t nr = c->nranks;
  if (c->algo == CS_ALGO_HOST)
    return (int32_t)(1 + (n + 255) / 256);
  /* host-push: each neighbour adds 1 per row; at N = 2 the one peer is
   * both neighbours */
  if (c->algo == CS_ALGO_HOST_PUSH)
    return nr == 2 ? 2 : 1;
  /* ring-bidir: each neighbour adds 1 per row; at N = 2 the one peer
   * notifies once (upstream's barrier collapses) */
  if (equal_chunks(c->algo) || c->algo == CS_ALGO_ONEPHASE ||
      c->algo == CS_ALGO_RING_BIDIR)
    return 1;
  uint64_t len = n;
  int ring = c->algo == CS_ALGO_RING || c->algo == CS_ALGO_RING_PUSH;
  if (ring) {
    len = (n + nr - 1) / nr;
    if (es == 2 && len + 15 < n)
      len += 15;
    else if (es == 2)
      len = n;
  }
  uint64_t w = len < maxc ? (len + align - 1) / align * align : maxc;
  uint64_t chunks = (len + w - 1) / w;
  return (int32_t)(ring ? 2 * chunks : 1 + chunks);
}

/* Whether rank r's own signal cell k (row k / N, from rank k % N) is
 * one a call signals: every non-self cell, but with ring-nb's
 * neighbour barriers only the left neighbour's (single use: no DONE row). */
static int signalled(const cs_ar_cfg_t *c, uint32_t r, uint64_t k)
{
  uint32_t n = c->nranks, src = (uint32_t)(k % n);
  if (c->algo == CS_ALGO_RING_NB)
    return src == (r + n - 1) % n && src != r;
  if (c->algo == CS_ALGO_HOST_PUSH || c->algo == CS_ALGO_RING_BIDIR)
    /* both neighbours' */
    return (src == (r + n - 1) % n || src == (r + 1) % n) && src != r;
  return src != r;
}

/* Runs one configuration through the launcher and checks it. */
static void run_case(const cs_ar_cfg_t *c, cs_fill_t fill, uint64_t seed,
                     outcome_t *o)
{
  char why[256];
  memset(o, 0, sizeof(*o));
  int checked = cs_ar_check(c);
  cs_cli_ar_why(c, checked, why, sizeof(why));
  cr_assert_eq(checked, 0, "%s", why);
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  uint64_t bytes = c->count * es;
  cs_layout_t l;
  cs_world_t w;
  cr_assert_eq(cs_ar_layout(c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = 60000000000ull};
  cr_assert_eq(cs_world_create(&w, &l, n, &wo), 0);
  uint8_t *in = malloc(bytes * n), *want = malloc(bytes);
  cr_assert(in && want);
  for (uint32_t r = 0; r < n; r++) {
    cs_ar_fill(fill, c, seed, r, in + r * bytes);
    memcpy(cs_world_input(&w, r), in + r * bytes, bytes);
  }
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep};
  int rc = cs_launch(&w, cs_ar_rank_main, (void *)c, &lo, NULL);
  if (rc != 0) {
    char buf[2048] = {0};
    rewind(rep);
    size_t got = fread(buf, 1, sizeof(buf) - 1, rep);
    buf[got] = 0;
    cr_assert_fail("%s n=%u count=%llu %s %s: launch failed: %s",
                   cs_algo_name(c->algo), n, (unsigned long long)c->count,
                   cs_dtype_name(c->dtype), cs_op_name(c->op), buf);
  }
  fclose(rep);
  double rtol, atol;
  cs_oracle_tolerance(c->dtype, &rtol, &atol);
  for (uint32_t r = 0; r < n; r++) {
    const uint8_t *got = cs_world_output(&w, r);
    cs_oracle_expect_mm(c->algo, c->dtype, c->op, (cs_minmax_t)c->minmax, n,
                        c->count, in, r, want);
    for (uint64_t i = 0; i < c->count; i++) {
      o->wrong += !cs_oracle_same(c->dtype, got, want, i);
      double ref = cs_oracle_f64(c->dtype, c->op, n, c->count, in, i);
      double g = cs_oracle_decode(c->dtype, got, i);
      if (isfinite(ref) && ref != 0 && fabs(g - ref) / fabs(ref) > o->max_rel)
        o->max_rel = fabs(g - ref) / fabs(ref);
      if (isfinite(ref) && fabs(g - ref) > atol + rtol * fabs(ref))
        o->tol_fail++;
    }
    if (r > 0 && memcmp(got, cs_world_output(&w, 0), bytes) != 0)
      o->ranks_differ = 1;
    cs_ar_stats_t *st = (cs_ar_stats_t *)(cs_world_output(&w, r) + cs_ar_stats_off(c));
    o->signal_bad += st->signal_bad;
    o->differ += st->iters_differ;
    const int32_t *sig = (const int32_t *)(cs_world_window(&w, r) +
                                           l.slot[CS_AR_SLOT_SIGNAL].off);
    for (uint64_t k = 0; k < cs_ar_signal_cells(c); k++) {
      int32_t expect = c->no_epilogue && signalled(c, r, k)
                           ? reference_signal_final(c) : 0;
      o->not_zero += sig[k] != expect;
    }
  }
  free(in);
  free(want);
  cs_world_destroy(&w);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

#define CHECK_EXACT(c, o)                                                      \
  cr_assert(o.wrong == 0 && o.signal_bad == 0 && o.not_zero == 0 &&           \
                o.differ == 0,                                                 \
            "%s n=%u count=%llu %s %s: %llu wrong, %u signal, %llu not zero, " \
            "%u differ", cs_algo_name((c).algo), (c).nranks,                   \
            (unsigned long long)(c).count, cs_dtype_name((c).dtype),           \
            cs_op_name((c).op), (unsigned long long)o.wrong, o.signal_bad,     \
            (unsigned long long)o.not_zero, o.differ)

/* ------------------------------------------------------------ the sweep */

static const uint32_t sweep_n[] = {1, 2, 3, 4, 5, 7, 8, 16};

/* N x count {1, N-1, N, N+1, 17, 33, 4097, 8193, 32769, 65537} for one
 * (algo, dtype, op), random inputs (the association order shows in the
 * bits), bit-exact on every rank. COLLSIM_QUICK=1 (the clang and sanitizer
 * stages of CI) keeps counts <= 8193 and N <= 8, without 7. */
static void sweep(cs_algo_t a, cs_dtype_t t, cs_op_t op)
{
  const char *q = getenv("COLLSIM_QUICK");
  int quick = q && *q && strcmp(q, "0") != 0;
  for (size_t ni = 0; ni < sizeof(sweep_n) / sizeof(sweep_n[0]); ni++) {
    uint32_t n = sweep_n[ni];
    if ((quick && (n == 7 || n > 8)) || n > cs_ar_max_ranks(a))
      continue;
    uint64_t counts[] = {1, n - 1, n, n + 1, 17, 33, 4097, 8193, 32769, 65537};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
      if (counts[ci] == 0 || (quick && counts[ci] > 8193))
        continue;
      cs_ar_cfg_t c = cfg(a, t, op, n, counts[ci]);
      outcome_t o;
      run_case(&c, CS_FILL_RANDOM, 1000 * n + ci, &o);
      CHECK_EXACT(c, o);
      /* own value first: one fold order per rank */
      if (a != CS_ALGO_MESH && a != CS_ALGO_HOST && a != CS_ALGO_ONEPHASE)
        cr_assert_not(o.ranks_differ, "%s ranks disagree", cs_algo_name(a));
    }
  }
}

#define SWEEP(algo, dt, op)                                                    \
  Test(sweep, algo##_##dt##_##op, .timeout = 600)                             \
  {                                                                            \
    sweep(CS_ALGO_##algo, CS_##dt, CS_##op);                                  \
  }
#define SWEEP_OPS(algo, dt)                                                    \
  SWEEP(algo, dt, SUM) SWEEP(algo, dt, MAX) SWEEP(algo, dt, MIN) SWEEP(algo, dt, PROD)
#define SWEEP_ALGO(algo)                                                       \
  SWEEP_OPS(algo, FP32) SWEEP_OPS(algo, FP16) SWEEP_OPS(algo, BF16)

SWEEP_ALGO(MESH)
SWEEP_ALGO(RING)
SWEEP_ALGO(HOST)
SWEEP_ALGO(RING_PUSH)
SWEEP_ALGO(TWOPHASE)
SWEEP_ALGO(RING_NB)
SWEEP_ALGO(ONEPHASE)
SWEEP(HOST_PUSH, FP32, SUM)
SWEEP(RING_BIDIR, FP32, SUM)
SWEEP(IBING, FP32, SUM)

/* ------------------------------------------------- the reference's tests */

typedef struct ref_case {
  cs_algo_t a;
  uint32_t n;
  uint64_t size;
  cs_dtype_t t;
  cs_op_t op;
} ref_case_t;

/* docs/algorithms.md §7 parametrisations, with the inputs those tests use (the
 * default fill) and their tolerance against a float64 reduction. */
Test(reference, every_parametrisation_of_the_pr_tests_passes, .timeout = 600)
{
  static const ref_case_t t[] = {
      /* mesh test_allreduce_intrinsic */
      {CS_ALGO_MESH, 2, 1, CS_FP32, CS_SUM}, {CS_ALGO_MESH, 2, 17, CS_FP32, CS_SUM},
      {CS_ALGO_MESH, 2, 4097, CS_FP32, CS_SUM}, {CS_ALGO_MESH, 2, 65537, CS_FP32, CS_SUM},
      {CS_ALGO_MESH, 4, 1, CS_FP32, CS_SUM}, {CS_ALGO_MESH, 4, 17, CS_FP32, CS_SUM},
      {CS_ALGO_MESH, 4, 4097, CS_FP32, CS_SUM}, {CS_ALGO_MESH, 4, 65537, CS_FP32, CS_SUM},
      /* mesh test_allreduce_reduce_ops */
      {CS_ALGO_MESH, 2, 17, CS_FP32, CS_MAX}, {CS_ALGO_MESH, 2, 17, CS_FP32, CS_MIN},
      {CS_ALGO_MESH, 2, 17, CS_FP32, CS_PROD}, {CS_ALGO_MESH, 2, 17, CS_FP16, CS_SUM},
      {CS_ALGO_MESH, 2, 17, CS_FP16, CS_MAX}, {CS_ALGO_MESH, 2, 17, CS_FP16, CS_MIN},
      {CS_ALGO_MESH, 2, 17, CS_FP16, CS_PROD},
      /* mesh test_allreduce_fp16_arbitrary_lengths */
      {CS_ALGO_MESH, 1, 1, CS_FP16, CS_SUM}, {CS_ALGO_MESH, 1, 17, CS_FP16, CS_SUM},
      {CS_ALGO_MESH, 1, 8193, CS_FP16, CS_SUM}, {CS_ALGO_MESH, 2, 8193, CS_FP16, CS_SUM},
      {CS_ALGO_MESH, 4, 1, CS_FP16, CS_SUM}, {CS_ALGO_MESH, 4, 8193, CS_FP16, CS_SUM},
      /* ring test_ring_allreduce_intrinsic */
      {CS_ALGO_RING, 2, 1, CS_FP32, CS_SUM}, {CS_ALGO_RING, 2, 17, CS_FP32, CS_SUM},
      {CS_ALGO_RING, 2, 4097, CS_FP32, CS_SUM}, {CS_ALGO_RING, 2, 65537, CS_FP32, CS_SUM},
      {CS_ALGO_RING, 4, 1, CS_FP32, CS_SUM}, {CS_ALGO_RING, 4, 17, CS_FP32, CS_SUM},
      {CS_ALGO_RING, 4, 4097, CS_FP32, CS_SUM}, {CS_ALGO_RING, 4, 65537, CS_FP32, CS_SUM},
      /* ring test_ring_allreduce_reduce_ops */
      {CS_ALGO_RING, 2, 17, CS_FP32, CS_MAX}, {CS_ALGO_RING, 2, 17, CS_FP32, CS_MIN},
      {CS_ALGO_RING, 2, 17, CS_FP32, CS_PROD},
      /* ring test_ring_allreduce_fp16_arbitrary_lengths */
      {CS_ALGO_RING, 2, 1, CS_FP16, CS_SUM}, {CS_ALGO_RING, 2, 17, CS_FP16, CS_SUM},
      {CS_ALGO_RING, 2, 8193, CS_FP16, CS_SUM}, {CS_ALGO_RING, 2, 32769, CS_FP16, CS_SUM},
      {CS_ALGO_RING, 4, 1, CS_FP16, CS_SUM}, {CS_ALGO_RING, 4, 17, CS_FP16, CS_SUM},
      {CS_ALGO_RING, 4, 8193, CS_FP16, CS_SUM}, {CS_ALGO_RING, 4, 32769, CS_FP16, CS_SUM},
      /* host tests */
      {CS_ALGO_HOST, 2, 256, CS_FP32, CS_SUM}, {CS_ALGO_HOST, 4, 256, CS_FP32, CS_SUM},
      {CS_ALGO_HOST, 2, 256, CS_FP32, CS_MAX}, {CS_ALGO_HOST, 2, 1, CS_FP16, CS_SUM},
      {CS_ALGO_HOST, 2, 17, CS_FP16, CS_SUM}, {CS_ALGO_HOST, 2, 257, CS_FP16, CS_SUM},
      {CS_ALGO_HOST, 2, 8193, CS_FP16, CS_SUM}, {CS_ALGO_HOST, 2, 17, CS_FP16, CS_MAX},
      {CS_ALGO_HOST, 2, 17, CS_FP16, CS_MIN}, {CS_ALGO_HOST, 2, 17, CS_FP16, CS_PROD},
      {CS_ALGO_HOST, 2, 17, CS_FP32, CS_SUM}, {CS_ALGO_HOST, 2, 257, CS_FP32, CS_SUM},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    cs_ar_cfg_t c = cfg(t[i].a, t[i].t, t[i].op, t[i].n, t[i].size);
    outcome_t o;
    run_case(&c, CS_FILL_DEFAULT, 0, &o);
    CHECK_EXACT(c, o);
    /* Host FP16 arange sizes > 2048 are rounded by the cast itself and
     * sums of them in FP16 stay within 2e-2 of float64; all others too. */
    cr_assert_eq(o.tol_fail, 0, "case %zu: %llu elements beyond tolerance "
                 "(max rel %g)", i, (unsigned long long)o.tol_fail, o.max_rel);
  }
}

Test(reference, fp32_arange_sums_are_exact, .timeout = 120)
{
  /* 100r + i summed over <= 4 ranks stays below 2^24: exact in fp32. */
  for (int a = 0; a < CS_NALGOS; a++) {
    /* 4 ranks, or as many as the algorithm takes (ibing: 2) */
    uint32_t most = cs_algo_desc((cs_algo_t)a)->max_ranks;
    cs_ar_cfg_t c = cfg((cs_algo_t)a, CS_FP32, CS_SUM, most < 4 ? most : 4,
                        65537);
    outcome_t o;
    run_case(&c, CS_FILL_ARANGE, 0, &o);
    CHECK_EXACT(c, o);
    cr_assert_eq(o.max_rel, 0.0, "%s: max rel %g", cs_algo_name(c.algo), o.max_rel);
  }
}

/* ------------------------------------------------- orders and signals */

Test(order, mesh_ranks_may_differ_for_sum_with_three_ranks_and_match_each_oracle,
     .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_MESH, CS_FP16, CS_SUM, 3, 4097);
  outcome_t o;
  run_case(&c, CS_FILL_RANDOM, 7, &o);
  CHECK_EXACT(c, o);
  cr_assert(o.ranks_differ, "random fp16 sums over 3 ranks should round "
            "differently on some rank (own value first)");
}

Test(order, ring_ranks_agree_bit_for_bit, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_RING, CS_FP16, CS_SUM, 5, 4097);
  outcome_t o;
  run_case(&c, CS_FILL_RANDOM, 7, &o);
  CHECK_EXACT(c, o);
  cr_assert_not(o.ranks_differ);
}

Test(signals, final_values_follow_the_reference_formulas)
{
  /* mesh 1+C, ring 2K, host 1+ceil(n/256) (§2.3 with §3.1/§4.2/§5). */
  cr_assert_eq(cs_ar_signal_final(&(cs_ar_cfg_t){CS_ALGO_MESH, CS_FP32, CS_SUM, 4, 65537, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 18);
  cr_assert_eq(cs_ar_signal_final(&(cs_ar_cfg_t){CS_ALGO_MESH, CS_FP16, CS_SUM, 4, 65537, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 10);
  cr_assert_eq(cs_ar_signal_final(&(cs_ar_cfg_t){CS_ALGO_RING, CS_FP32, CS_SUM, 4, 65537, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 10);
  cr_assert_eq(cs_ar_signal_final(&(cs_ar_cfg_t){CS_ALGO_RING, CS_FP16, CS_SUM, 2, 32769, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 6);
  cr_assert_eq(cs_ar_signal_final(&(cs_ar_cfg_t){CS_ALGO_HOST, CS_FP32, CS_SUM, 2, 257, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 3);
  cr_assert_eq(cs_ar_signal_cells(&(cs_ar_cfg_t){CS_ALGO_RING, CS_FP32, CS_SUM, 4, 17, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 24);
  cr_assert_eq(cs_ar_signal_cells(&(cs_ar_cfg_t){CS_ALGO_MESH, CS_FP32, CS_SUM, 4, 17, CS_TILE_BYTES, 1, 0, 0, 0, 0, 0, 0, 0, 0}), 4);
}

Test(signals, the_test_closed_forms_match_the_reference_tables)
{
  /* Mesh C (reference table): FP32 1->1, 17->1, 4097->2, 65537->17; FP16
   * 1->1, 17->1, 8193->2, 65537->9. Ring K (worked values): FP32 NR 2 S 17
   * K 1; FP32 NR 4 S 1 and 17: K 1. */
  const struct { cs_algo_t a; cs_dtype_t t; uint32_t nr; uint64_t n; int32_t want; } tab[] = {
      {CS_ALGO_MESH, CS_FP32, 4, 1, 2},     {CS_ALGO_MESH, CS_FP32, 4, 17, 2},
      {CS_ALGO_MESH, CS_FP32, 4, 4097, 3},  {CS_ALGO_MESH, CS_FP32, 4, 65537, 18},
      {CS_ALGO_MESH, CS_FP16, 4, 1, 2},     {CS_ALGO_MESH, CS_FP16, 4, 17, 2},
      {CS_ALGO_MESH, CS_FP16, 4, 8193, 3},  {CS_ALGO_MESH, CS_FP16, 4, 65537, 10},
      {CS_ALGO_RING, CS_FP32, 2, 17, 2},    {CS_ALGO_RING, CS_FP32, 4, 1, 2},
      {CS_ALGO_RING, CS_FP32, 4, 17, 2},    {CS_ALGO_RING, CS_FP32, 4, 65537, 10},
      {CS_ALGO_RING, CS_FP16, 2, 32769, 6}, {CS_ALGO_HOST, CS_FP32, 2, 256, 2},
      {CS_ALGO_HOST, CS_FP32, 2, 257, 3},
  };
  for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
    cs_ar_cfg_t c = cfg(tab[i].a, tab[i].t, CS_SUM, tab[i].nr, tab[i].n);
    cr_assert_eq(reference_signal_final(&c), tab[i].want, "row %zu", i);
  }
  /* And the implementation's own function agrees everywhere swept. */
  for (int a = 0; a < CS_NALGOS; a++)
    for (int t = 0; t < CS_NDTYPES; t++)
      for (uint32_t nr = 1; nr <= 16; nr++)
        for (uint64_t n = 1; n <= 70000; n += n < 64 ? 1 : 997)
          for (uint32_t tile = 1024; tile <= CS_TILE_BYTES; tile *= 4) {
            cs_ar_cfg_t c = cfg((cs_algo_t)a, (cs_dtype_t)t, CS_SUM, nr, n);
            c.tile_bytes = tile;
            cr_assert_eq(cs_ar_signal_final(&c), reference_signal_final(&c),
                         "%s %s nr %u n %llu tile %u", cs_algo_name(c.algo),
                         cs_dtype_name(c.dtype), nr, (unsigned long long)n, tile);
          }
}

Test(signals, without_the_epilogue_cells_stay_at_their_final_values, .timeout = 60)
{
  for (int a = 0; a < CS_NALGOS; a++) {
    cs_ar_cfg_t c = cfg((cs_algo_t)a, CS_FP32, CS_SUM,
                        ranks_for((cs_algo_t)a, 3), 5000);
    c.no_epilogue = 1;
    outcome_t o;
    run_case(&c, CS_FILL_RANDOM, 3, &o);
    CHECK_EXACT(c, o); /* not_zero counts cells != final here */
  }
}

Test(repeat, repeated_calls_on_one_world_give_the_same_result, .timeout = 120)
{
  for (int a = 0; a < CS_NALGOS; a++) {
    cs_ar_cfg_t c = cfg((cs_algo_t)a, refused((cs_algo_t)a, CS_FP16, CS_SUM)
                                          ? CS_FP32 : CS_FP16, CS_SUM,
                        ranks_for((cs_algo_t)a, 4), 9000);
    c.iters = 6;
    outcome_t o;
    run_case(&c, CS_FILL_RANDOM, 5, &o);
    CHECK_EXACT(c, o);
  }
}

Test(tiles, a_small_tile_reaches_the_multi_chunk_paths, .timeout = 120)
{
  for (int a = 0; a < CS_NALGOS; a++)
    for (int t = 0; t < CS_NDTYPES; t++) {
      if (refused((cs_algo_t)a, (cs_dtype_t)t, CS_SUM))
        continue;
      cs_ar_cfg_t c = cfg((cs_algo_t)a, (cs_dtype_t)t, CS_SUM,
                          ranks_for((cs_algo_t)a, 3), 3001);
      c.tile_bytes = 1024;
      outcome_t o;
      run_case(&c, CS_FILL_RANDOM, 11, &o);
      CHECK_EXACT(c, o);
    }
}

Test(scale, sixty_four_ranks_mesh_and_ring_verify, .timeout = 300)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_RING, CS_FP32, CS_SUM, 64, 1000);
  outcome_t o;
  run_case(&c, CS_FILL_RANDOM, 9, &o);
  CHECK_EXACT(c, o);
  c.algo = CS_ALGO_MESH;
  run_case(&c, CS_FILL_RANDOM, 9, &o);
  CHECK_EXACT(c, o);
}

Test(check, rejects_out_of_range_configurations)
{
  char why[256];
  cs_ar_cfg_t c = cfg(CS_ALGO_HOST, CS_FP32, CS_SUM, 17, 10);
  cr_assert_eq(cs_ar_check(&c), CS_EARRANKS);
  cs_cli_ar_why(&c, CS_EARRANKS, why, sizeof(why));
  cr_assert(strstr(why, "--ranks 17") && strstr(why, "1 to 16"), "%s", why);
  c = cfg(CS_ALGO_RING, CS_FP32, CS_SUM, 65, 10);
  cr_assert_eq(cs_ar_check(&c), CS_EARRANKS);
  c = cfg(CS_ALGO_RING, CS_FP32, CS_SUM, 4, 0);
  cr_assert_eq(cs_ar_check(&c), CS_EARCOUNT);
  cs_cli_ar_why(&c, CS_EARCOUNT, why, sizeof(why));
  cr_assert(strstr(why, "--count 0"), "%s", why);
}

/* ------------------------------------------------------------ --minmax */

/* Runs c on the given inputs (nranks rows) and copies every rank's
 * result into out (nranks rows). */
static void run_inputs(const cs_ar_cfg_t *c, const uint8_t *in, uint8_t *out)
{
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  cs_layout_t l;
  cs_world_t w;
  cr_assert_eq(cs_ar_check(c), 0);
  cr_assert_eq(cs_ar_layout(c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = 60000000000ull};
  cr_assert_eq(cs_world_create(&w, &l, n, &wo), 0);
  for (uint32_t r = 0; r < n; r++)
    memcpy(cs_world_input(&w, r), in + r * bytes, bytes);
  cr_assert_eq(cs_launch(&w, cs_ar_rank_main, (void *)c, NULL, NULL), 0);
  for (uint32_t r = 0; r < n; r++)
    memcpy(out + r * bytes, cs_world_output(&w, r), bytes);
  cs_world_destroy(&w);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

/* The documented max/min of each mode, from the definitions (dtype.h, the
 * README's table), a being the reference's first operand (the local
 * value): 0 = +0, and the result is a float whose NaN-ness, sign and value
 * are compared. */
static float documented(cs_op_t op, cs_minmax_t mm, float a, float b)
{
  int max = op == CS_MAX;
  if (mm == CS_MINMAX_PTO) /* std::max(a, b), std::min(a, b) */
    return max ? (a < b ? b : a) : (b < a ? b : a);
  if (isnan(a) && isnan(b))
    return NAN;
  if (mm == CS_MINMAX_PROPAGATE && (isnan(a) || isnan(b)))
    return NAN;
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  if (a == 0 && b == 0) /* +0 > -0 */
    return max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
  return max ? fmaxf(a, b) : fminf(a, b);
}

static float decode_elem(cs_dtype_t t, const uint8_t *buf, uint64_t i)
{
  if (t == CS_FP32) {
    float f;
    memcpy(&f, buf + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, buf + 2 * i, 2);
  return t == CS_FP16 ? cs_half_to_float(h) : cs_bf16_to_float(h);
}

static void encode_elem(cs_dtype_t t, uint8_t *buf, uint64_t i, float v)
{
  if (t == CS_FP32) {
    memcpy(buf + 4 * i, &v, 4);
    return;
  }
  uint16_t h = t == CS_FP16 ? cs_float_to_half(v) : cs_float_to_bf16(v);
  memcpy(buf + 2 * i, &h, 2);
}

/* twophase, 3 ranks, one element per chunk, every element x = (1, 1,
 * 2^24): chunk q holds rank q's fold, own value first: e0 (rank 0)
 * (1 + 1) + 2^24 = 2^24 + 2, e1 (rank 1) the same, e2 (rank 2)
 * (2^24 + 1) + 1 = 2^24, on every rank (worked by hand). */
Test(order, twophase_ranks_hold_each_chunk_as_its_owner_folds_it, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_TWOPHASE, CS_FP32, CS_SUM, 3, 3);
  float in[9], out[9];
  for (int e = 0; e < 3; e++)
    in[e] = 1.0f, in[3 + e] = 1.0f, in[6 + e] = 0x1p24f;
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  const float want[3] = {0x1p24f + 2.0f, 0x1p24f + 2.0f, 0x1p24f};
  for (int r = 0; r < 3; r++)
    for (int e = 0; e < 3; e++)
      cr_assert_eq(out[3 * r + e], want[e], "rank %d e%d: %a", r, e,
                   (double)out[3 * r + e]);
  c.count = 4; /* not a multiple of 3: refused */
  cr_assert_eq(cs_ar_check(&c), CS_EARPRECOND);
}

/* ring-nb, 3 ranks, one element per chunk, every element x = (1, 1,
 * 2^24): chunk q is the ring's fold x_q + (x_{q-1} + x_{q+1}): e0 = 1 +
 * (2^24 + 1) = 2^24, e1 = 1 + (1 + 2^24) = 2^24, e2 = 2^24 + (1 + 1) =
 * 2^24 + 2, on every rank (worked by hand; twophase gives 2^24 + 2,
 * 2^24 + 2, 2^24). A count not a multiple of 3 is refused. */
Test(order, ring_nb_ranks_hold_each_chunk_in_the_rings_order, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_RING_NB, CS_FP32, CS_SUM, 3, 3);
  float in[9], out[9];
  for (int e = 0; e < 3; e++)
    in[e] = 1.0f, in[3 + e] = 1.0f, in[6 + e] = 0x1p24f;
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  const float want[3] = {0x1p24f, 0x1p24f, 0x1p24f + 2.0f};
  for (int r = 0; r < 3; r++)
    for (int e = 0; e < 3; e++)
      cr_assert_eq(out[3 * r + e], want[e], "rank %d e%d: %a", r, e,
                   (double)out[3 * r + e]);
  c.count = 4;
  cr_assert_eq(cs_ar_check(&c), CS_EARPRECOND);
}

/* host-push, 3 ranks, one element per chunk, x = (1, 1, 2^24): chunk q
 * is added up the ring toward rank q, the receiver's own value first:
 * e0 = 1 + (2^24 + 1) = 2^24, e1 = 1 + (1 + 2^24) = 2^24, e2 = 2^24 +
 * (1 + 1) = 2^24 + 2, on every rank (worked by hand, each tie to even). */
Test(order, host_push_ranks_hold_each_chunk_in_the_rings_order, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, CS_SUM, 3, 3);
  float in[9], out[9];
  for (int e = 0; e < 3; e++)
    in[e] = 1.0f, in[3 + e] = 1.0f, in[6 + e] = 0x1p24f;
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  const float want[3] = {0x1p24f, 0x1p24f, 0x1p24f + 2.0f};
  for (int r = 0; r < 3; r++)
    for (int e = 0; e < 3; e++)
      cr_assert_eq(out[3 * r + e], want[e], "rank %d e%d: %a", r, e,
                   (double)out[3 * r + e]);
}

/* host-push over ranks 1..8 and counts N, 2N, 17N, 4096N, three calls on
 * one world: bit-exact on every rank, and every signal cell at its
 * documented value (single use: 1 on each neighbour cell, 2 at N = 2,
 * 0 elsewhere; self-clearing: 0 everywhere). */
Test(host_push, counts_that_are_multiples_of_n_are_bit_exact_three_calls,
     .timeout = 600)
{
  for (uint32_t n = 1; n <= 8; n++) {
    const uint64_t counts[] = {n, 2 * n, 17 * n, 4096 * n};
    for (size_t ci = 0; ci < 4; ci++)
      for (int single = 0; single < 2; single++) {
        cs_ar_cfg_t c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, CS_SUM, n, counts[ci]);
        c.iters = single ? 1 : 3;
        c.no_epilogue = (uint32_t)single;
        outcome_t o;
        run_case(&c, CS_FILL_RANDOM, 77 * n + ci, &o);
        CHECK_EXACT(c, o);
        cr_assert_not(o.ranks_differ, "n=%u: ranks disagree", n);
      }
  }
}

/* What the host builtin refuses, each in one line naming the value. */
Test(host_push, refuses_other_dtypes_ops_counts_and_rank_counts)
{
  char why[256];
  cs_ar_cfg_t c = cfg(CS_ALGO_HOST_PUSH, CS_FP16, CS_SUM, 3, 30);
  cr_assert_eq(cs_ar_check(&c), CS_EARDTYPE);
  cs_cli_ar_why(&c, CS_EARDTYPE, why, sizeof(why));
  cr_assert(strstr(why, "--dtype fp16") && strstr(why, "expected fp32") &&
            !strchr(why, '\n'), "%s", why);
  c = cfg(CS_ALGO_HOST_PUSH, CS_BF16, CS_SUM, 3, 30);
  cr_assert_eq(cs_ar_check(&c), CS_EARDTYPE);
  for (cs_op_t op = CS_MAX; op <= CS_PROD; op++) {
    c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, op, 3, 30);
    cr_assert_eq(cs_ar_check(&c), CS_EAROP);
    cs_cli_ar_why(&c, CS_EAROP, why, sizeof(why));
    cr_assert(strstr(why, "--op ") && strstr(why, "expected sum"), "%s", why);
  }
  c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, CS_SUM, 3, 30);
  c.count = 31;
  cr_assert_eq(cs_ar_check(&c), CS_EARPRECOND);
  cs_cli_ar_why(&c, CS_EARPRECOND, why, sizeof(why));
  cr_assert(strstr(why, "--count 31") && strstr(why, "multiple"), "%s", why);
  c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, CS_SUM, 17, 34);
  cr_assert_eq(cs_ar_check(&c), CS_EARRANKS);
  cs_cli_ar_why(&c, CS_EARRANKS, why, sizeof(why));
  cr_assert(strstr(why, "--ranks 17") && strstr(why, "1 to 16"), "%s", why);
  c = cfg(CS_ALGO_HOST_PUSH, CS_FP32, CS_SUM, 16, 16);
  cr_assert_eq(cs_ar_check(&c), 0);
}

/* ring-bidir, 4 ranks, chunks of 2 (one element per half), every
 * element of rank r's input x_r, x = (0, 2^24, 1, 1). Ring 0 (first
 * halves, to the right) completes chunk q at rank q as x_q + (x_{q-1} +
 * (x_{q+2} + x_{q+1})), ring 1 (second halves, to the left) as x_q +
 * (x_{q+1} + (x_{q+2} + x_{q-1})). With B = 2^24 (B + 1 is a tie and
 * rounds to B): chunk 0: 0 + (1 + (1 + B)) = B, 0 + (B + (1 + 1)) = B + 2;
 * chunk 1: B + (0 + (1 + 1)) = B + 2, B + (1 + (1 + 0)) = B + 2; chunk 2:
 * 1 + (B + (0 + 1)) = B, 1 + (1 + (0 + B)) = B; chunk 3: 1 + (1 + (B +
 * 0)) = B, 1 + (0 + (B + 1)) = B. Worked by hand; one ring's order on
 * the whole chunk gives B, not B + 2, in element 1. */
Test(order, ring_bidir_folds_each_half_in_its_rings_direction, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_RING_BIDIR, CS_FP32, CS_SUM, 4, 8);
  const float x[4] = {0.0f, 0x1p24f, 1.0f, 1.0f};
  float in[32], out[32];
  for (int r = 0; r < 4; r++)
    for (int e = 0; e < 8; e++)
      in[8 * r + e] = x[r];
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  const float b = 0x1p24f;
  const float want[8] = {b, b + 2, b + 2, b + 2, b, b, b, b};
  for (int r = 0; r < 4; r++)
    for (int e = 0; e < 8; e++)
      cr_assert_eq(out[8 * r + e], want[e], "rank %d e%d: %a", r, e,
                   (double)out[8 * r + e]);
}

/* ring-bidir over ranks 1..8 and counts 2N, 4N, 34N, 2*4097N, three
 * calls on one world, self-clearing and single use: bit-exact on every
 * rank, and every signal cell at its documented value (single use: 1 on
 * each neighbour cell, 0 elsewhere; self-clearing: 0 everywhere). */
Test(ring_bidir, counts_that_are_multiples_of_2n_are_bit_exact_three_calls,
     .timeout = 600)
{
  for (uint32_t n = 1; n <= 8; n++) {
    const uint64_t counts[] = {2 * n, 4 * n, 34 * n, 2 * 4097 * n};
    for (size_t ci = 0; ci < 4; ci++)
      for (int single = 0; single < 2; single++) {
        cs_ar_cfg_t c = cfg(CS_ALGO_RING_BIDIR, CS_FP32, CS_SUM, n, counts[ci]);
        c.iters = single ? 1 : 3;
        c.no_epilogue = (uint32_t)single;
        outcome_t o;
        run_case(&c, CS_FILL_RANDOM, 91 * n + ci, &o);
        CHECK_EXACT(c, o);
        cr_assert_not(o.ranks_differ, "n=%u: ranks disagree", n);
      }
  }
}

/* What ring-bidir refuses, each in one line naming the value. */
Test(ring_bidir, refuses_other_dtypes_ops_and_counts)
{
  char why[256];
  cs_ar_cfg_t c = cfg(CS_ALGO_RING_BIDIR, CS_FP16, CS_SUM, 3, 30);
  cr_assert_eq(cs_ar_check(&c), CS_EARDTYPE);
  c = cfg(CS_ALGO_RING_BIDIR, CS_FP32, CS_MAX, 3, 30);
  cr_assert_eq(cs_ar_check(&c), CS_EAROP);
  c = cfg(CS_ALGO_RING_BIDIR, CS_FP32, CS_SUM, 3, 30);
  cr_assert_eq(cs_ar_check(&c), 0);
  c.count = 33; /* a multiple of N, not of 2N */
  cr_assert_eq(cs_ar_check(&c), CS_EARPRECOND);
  cs_cli_ar_why(&c, CS_EARPRECOND, why, sizeof(why));
  cr_assert(strstr(why, "--count 33") && strstr(why, "twice the rank count") &&
            !strchr(why, '\n'), "%s", why);
}

/* ibing, 2 ranks, x0 = 1 + 2^-23 (the float after 1) and x1 = 2^24 in
 * every element: each rank adds the pushed value into its own, once, so
 * both hold x0 + x1 rounded once: 2^24 + 1 + 2^-23 lies above the tie
 * 2^24 + 1, so 2^24 + 2 (worked by hand; 1 + 2^24 alone would tie to
 * 2^24). The result comes from the window's third slot, "out", where
 * the exchange buffers were. */
Test(order, ibing_ranks_add_the_peers_value_into_their_own_once, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_IBING, CS_FP32, CS_SUM, 2, 6);
  float in[12], out[12];
  for (int e = 0; e < 6; e++)
    in[e] = 1.0f + 0x1p-23f, in[6 + e] = 0x1p24f;
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  for (int i = 0; i < 12; i++)
    cr_assert_eq(out[i], 0x1p24f + 2.0f, "element %d: %a", i, (double)out[i]);
  cs_layout_t l;
  cr_assert_eq(cs_ar_layout(&c, &l), 0);
  cr_assert_eq(l.nslots, 3);
}

/* ibing over 1 and 2 ranks and counts N, 2N, 17N, 4097N, 65537N, three
 * calls, self-clearing and single use: bit-exact, every signal cell at
 * its documented value (single use: 1, self-clearing: 0). */
Test(ibing, even_counts_are_bit_exact_three_calls, .timeout = 300)
{
  for (uint32_t n = 1; n <= 2; n++) {
    const uint64_t counts[] = {n, 2 * n, 17 * n, 4097 * n, 65537 * n};
    for (size_t ci = 0; ci < 5; ci++)
      for (int single = 0; single < 2; single++) {
        cs_ar_cfg_t c = cfg(CS_ALGO_IBING, CS_FP32, CS_SUM, n, counts[ci]);
        c.iters = single ? 1 : 3;
        c.no_epilogue = (uint32_t)single;
        outcome_t o;
        run_case(&c, CS_FILL_RANDOM, 31 * n + ci, &o);
        CHECK_EXACT(c, o);
        cr_assert_not(o.ranks_differ, "n=%u: ranks disagree", n);
      }
  }
}

/* What ibing refuses, each in one line naming the value: simpler's host
 * takes 2 ranks only (collsim also 1, the copy every algorithm makes). */
Test(ibing, refuses_more_than_two_ranks_odd_counts_dtypes_and_ops)
{
  char why[256];
  for (uint32_t n = 3; n <= 5; n++) {
    cs_ar_cfg_t c = cfg(CS_ALGO_IBING, CS_FP32, CS_SUM, n, 60);
    cr_assert_eq(cs_ar_check(&c), CS_EARRANKS);
    cs_cli_ar_why(&c, CS_EARRANKS, why, sizeof(why));
    cr_assert(strstr(why, "1 to 2") && !strchr(why, '\n'), "%s", why);
  }
  cs_ar_cfg_t c = cfg(CS_ALGO_IBING, CS_FP32, CS_SUM, 2, 9);
  c.count = 9;
  cr_assert_eq(cs_ar_check(&c), CS_EARPRECOND);
  c = cfg(CS_ALGO_IBING, CS_FP16, CS_SUM, 2, 8);
  cr_assert_eq(cs_ar_check(&c), CS_EARDTYPE);
  c = cfg(CS_ALGO_IBING, CS_FP32, CS_MIN, 2, 8);
  cr_assert_eq(cs_ar_check(&c), CS_EAROP);
}

/* onephase, 3 ranks, one element, x = (1, 1, 2^24): each rank folds its
 * own value first, then the peers ascending: rank 0 (1 + 1) + 2^24 =
 * 2^24 + 2, rank 1 (1 + 1) + 2^24 = 2^24 + 2, rank 2 (2^24 + 1) + 1 =
 * 2^24 (2^24 + 1 is a tie, which rounds to even: 2^24, twice). Worked
 * by hand. The
 * result comes from the window's third slot, "out". */
Test(order, onephase_ranks_fold_their_own_value_first, .timeout = 60)
{
  cs_ar_cfg_t c = cfg(CS_ALGO_ONEPHASE, CS_FP32, CS_SUM, 3, 1);
  float in[3] = {1.0f, 1.0f, 0x1p24f}, out[3];
  run_inputs(&c, (const uint8_t *)in, (uint8_t *)out);
  const float want[3] = {0x1p24f + 2.0f, 0x1p24f + 2.0f, 0x1p24f};
  for (int r = 0; r < 3; r++)
    cr_assert_eq(out[r], want[r], "rank %d: %a", r, (double)out[r]);
  cs_layout_t l;
  cr_assert_eq(cs_ar_layout(&c, &l), 0);
  cr_assert_eq(l.nslots, 3);
  cr_assert_str_eq(l.slot[CS_AR_SLOT_OUT].name, "out");
}

Test(minmax, nan_zero_and_inf_give_the_documented_bits_in_every_mode,
     .timeout = 240)
{
  /* Two ranks, one (x0, x1) pair per element, repeated so that ring
   * segments of both owners see every pair. Mesh/host rank r: x_r first;
   * ring: the owner of the element's segment first (fp32: [0, count/2) is
   * rank 0's, the rest rank 1's; 2-byte: 16-element boundaries, so with
   * count 32 elements 0..15 are rank 0's, 16..31 rank 1's). */
  const float pairs[][2] = {{1, NAN},      {NAN, 1},     {0.0f, -0.0f},
                            {-0.0f, 0.0f}, {INFINITY, NAN}, {-INFINITY, 1},
                            {NAN, NAN},    {1, 2},       {-0.0f, NAN},
                            {INFINITY, -INFINITY}, {2, 1}, {NAN, -INFINITY},
                            {0.0f, 0.0f},  {-0.0f, -0.0f}, {5, 5}, {NAN, 0.0f}};
  const uint32_t np = sizeof(pairs) / sizeof(pairs[0]), count = 2 * np;
  uint8_t in[2 * 32 * 4], out[2 * 32 * 4];
  for (int mm = 0; mm < CS_NMINMAX; mm++)
    for (int a = 0; a < CS_NALGOS; a++)
      for (int t = 0; t < CS_NDTYPES; t++)
        for (cs_op_t op = CS_MAX; op <= CS_MIN; op++) {
          if (refused((cs_algo_t)a, (cs_dtype_t)t, op))
            continue;
          cs_ar_cfg_t c = cfg((cs_algo_t)a, (cs_dtype_t)t, op, 2, count);
          c.minmax = (uint32_t)mm;
          for (uint32_t i = 0; i < count; i++)
            for (uint32_t r = 0; r < 2; r++)
              encode_elem(c.dtype, in + r * count * cs_dtype_size(c.dtype), i,
                          pairs[i % np][r]);
          run_inputs(&c, in, out);
          for (uint32_t r = 0; r < 2; r++)
            for (uint32_t i = 0; i < count; i++) {
              /* ring: the segment's owner; twophase: the chunk's owner
               * (count/2 = np elements each) */
              uint32_t first = a == CS_ALGO_RING || a == CS_ALGO_RING_PUSH ||
                                       equal_chunks((cs_algo_t)a)
                                   ? i / np : r;
              float x0 = pairs[i % np][first], x1 = pairs[i % np][1 - first];
              float want = documented(op, (cs_minmax_t)mm, x0, x1);
              float got = decode_elem(c.dtype, out + r * count * cs_dtype_size(c.dtype), i);
              int same = isnan(want) ? isnan(got)
                                     : !isnan(got) && got == want &&
                                           signbit(got) == signbit(want);
              cr_assert(same, "%s %s %s --minmax %s rank %u element %u: "
                        "%s(%g, %g) = %g, documented %g",
                        cs_algo_name(c.algo), cs_dtype_name(c.dtype),
                        cs_op_name(op), cs_minmax_name((cs_minmax_t)mm), r, i,
                        cs_op_name(op), x0, x1, got, want);
            }
        }
}

/* The product's kernel on the pairs where the modes differ, against bits
 * written here from the documented rules: pto is std::max(acc, recv) =
 * acc < recv ? recv : acc (std::min: recv < acc ? recv : acc), ieee is
 * maximumNumber / minimumNumber (+0 > -0, a NaN loses to a number),
 * propagate gives NaN when either is. 16 elements: the vector path too. */
Test(minmax, pto_and_ieee_differ_where_the_order_matters)
{
  enum { PZ = 0x00000000u, NZ = 0x80000000u, ONE = 0x3f800000u,
         QNAN = 0x7fc00000u, ANYNAN = 1u };
  static const struct { cs_op_t op; cs_minmax_t mm; int x_first;
                        uint32_t acc, x, want; } rows[] = {
    {CS_MAX, CS_MINMAX_PTO, 0, NZ, PZ, NZ},     /* -0 < +0 is false: acc */
    {CS_MAX, CS_MINMAX_IEEE, 0, NZ, PZ, PZ},
    {CS_MAX, CS_MINMAX_PTO, 0, QNAN, ONE, QNAN}, /* NaN < 1 false: acc */
    {CS_MAX, CS_MINMAX_PTO, 0, ONE, QNAN, ONE},  /* 1 < NaN false: acc */
    {CS_MAX, CS_MINMAX_PTO, 1, QNAN, ONE, ONE},  /* max(x, acc): 1 < NaN false */
    {CS_MAX, CS_MINMAX_PTO, 1, PZ, NZ, NZ},
    {CS_MAX, CS_MINMAX_PROPAGATE, 0, QNAN, ONE, ANYNAN},
    {CS_MAX, CS_MINMAX_PROPAGATE, 0, ONE, QNAN, ANYNAN},
    {CS_MAX, CS_MINMAX_IEEE, 0, QNAN, ONE, ONE},
    {CS_MAX, CS_MINMAX_IEEE, 0, ONE, QNAN, ONE},
    {CS_MIN, CS_MINMAX_PTO, 0, PZ, NZ, PZ},      /* -0 < +0 is false: acc */
    {CS_MIN, CS_MINMAX_IEEE, 0, PZ, NZ, NZ},
    {CS_MIN, CS_MINMAX_PTO, 0, QNAN, ONE, QNAN},
    {CS_MIN, CS_MINMAX_IEEE, 0, QNAN, ONE, ONE},
  };
  for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
    uint32_t acc[16], x[16];
    for (int i = 0; i < 16; i++) {
      acc[i] = rows[k].acc;
      x[i] = rows[k].x;
    }
    cs_reduce_kernel_mm(CS_FP32, rows[k].op, rows[k].mm, rows[k].x_first, acc,
                        x, 16);
    for (int i = 0; i < 16; i++) {
      uint32_t g = acc[i];
      int ok = rows[k].want == ANYNAN
                   ? (g & 0x7f800000u) == 0x7f800000u && (g & 0x007fffffu)
                   : g == rows[k].want;
      cr_assert(ok, "row %zu element %d: %s %s x_first %d of %#x, %#x = %#x, "
                "documented %#x", k, i, cs_op_name(rows[k].op),
                cs_minmax_name(rows[k].mm), rows[k].x_first, rows[k].acc,
                rows[k].x, g, rows[k].want);
    }
  }
}
