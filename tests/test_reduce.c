/*
 * test_reduce.c - the reduction kernels and the fp16/bf16 converters of
 * collectives/reduce.c against references computed here, in double, from
 * first principles: a format is decoded into a table of the exact values of
 * its positive bit patterns (powers of two by repeated doubling), and a
 * double is rounded to the format by binary search in that table, ties to
 * the even pattern. Nothing here calls the code under test to get an
 * expected value. The fp16 F16C path and the AVX/AVX2 fp32/bf16 builds are
 * compared with the forced baseline builds element by element.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../collectives/reduce.h"

/* ---- helpers ----------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) /* xorshift64* */
{
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t fbits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Runs the kernel on the dispatched path (scalar = 0) or the forced
 * baseline (scalar = 1). */
static void run(cs_dtype_t t, cs_op_t op, void *acc, const void *x, size_t n,
                int scalar)
{
  cs_reduce_force_scalar(scalar);
  cs_reduce_kernel(t, op, acc, x, n);
  cs_reduce_force_scalar(0);
}

/* ---- the 16-bit formats, from first principles ------------------------- */

typedef struct fmt {
  const char *name;
  int mbits;     /* stored mantissa bits */
  int bias;      /* exponent bias */
  uint16_t inf;  /* +inf pattern; larger magnitudes are NaN */
  uint16_t quiet; /* a NaN's quiet bit */
  /* val[p] = value of the positive pattern p, p <= inf, where val[inf] is
   * what the pattern would mean with an unbounded exponent: 2^(emax+1),
   * the value that rounds to infinity (IEEE 754 overflow rule). */
  double val[0x7f81];
} fmt_t;

static fmt_t F16 = {"fp16", 10, 15, 0x7c00, 0x0200, {0}};
static fmt_t BF16 = {"bf16", 7, 127, 0x7f80, 0x0040, {0}};

static double pow2(int k)
{
  double v = 1.0;
  for (; k > 0; k--)
    v *= 2.0;
  for (; k < 0; k++)
    v /= 2.0;
  return v;
}

static fmt_t *fmt_of(cs_dtype_t t)
{
  fmt_t *f = t == CS_FP16 ? &F16 : &BF16;
  if (f->val[1] == 0.0)
    for (unsigned p = 0; p <= f->inf; p++) {
      unsigned e = p >> f->mbits, m = p & ((1u << f->mbits) - 1);
      if (e == 0) /* subnormal: m * 2^(1 - bias - mbits) */
        f->val[p] = (double)m * pow2(1 - f->bias - f->mbits);
      else
        f->val[p] = (double)((1u << f->mbits) | m) *
                    pow2((int)e - f->bias - f->mbits);
    }
  return f;
}

static int is_nan16(const fmt_t *f, uint16_t h)
{
  return (h & 0x7fffu) > f->inf;
}

/* Exact value of pattern h (NaN for NaN patterns). */
static double ref_decode(const fmt_t *f, uint16_t h)
{
  uint16_t a = h & 0x7fffu;
  if (a > f->inf)
    return NAN;
  double v = a == f->inf ? INFINITY : f->val[a];
  return (h & 0x8000u) ? -v : v;
}

/* x rounded to the format, to nearest, ties to the even pattern; x must
 * not be NaN. */
static uint16_t ref_round(const fmt_t *f, double x)
{
  uint16_t sign = signbit(x) ? 0x8000u : 0;
  double ax = signbit(x) ? -x : x;
  if (ax >= f->val[f->inf])
    return sign | f->inf;
  unsigned lo = 0, hi = f->inf; /* val[lo] <= ax < val[hi] */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (f->val[mid] <= ax)
      lo = mid;
    else
      hi = mid;
  }
  if (f->val[lo] == ax)
    return sign | (uint16_t)lo;
  double mid = (f->val[lo] + f->val[hi]) / 2; /* exact: few bits */
  if (ax < mid)
    return sign | (uint16_t)lo;
  if (ax > mid)
    return sign | (uint16_t)hi;
  return sign | (uint16_t)((lo & 1) ? hi : lo);
}

/* Expected result bits of a op b, or -1 when the result must be a NaN.
 * Sum/Prod: the double op is exact for fp16, and rounds with 53 >= 2*8+2
 * bits for bf16 (innocuous double rounding), so rounding it once more to
 * the format is the correctly rounded result. Max/Min: maximumNumber /
 * minimumNumber, returning operand bits. */
static int ref_op16(const fmt_t *f, cs_op_t op, uint16_t a, uint16_t b)
{
  int na = is_nan16(f, a), nb = is_nan16(f, b);
  double da = ref_decode(f, a), db = ref_decode(f, b);
  if (op == CS_SUM || op == CS_PROD) {
    double r = op == CS_SUM ? da + db : da * db;
    return r != r ? -1 : ref_round(f, r);
  }
  if (na && nb)
    return -1;
  if (na)
    return b;
  if (nb)
    return a;
  if (da == db) { /* equal values: only +0/-0 have different bits */
    int sa = a >> 15;
    if (op == CS_MAX)
      return sa ? b : a; /* the non-negative one if any */
    return sa ? a : b;   /* the negative one if any */
  }
  if (op == CS_MAX)
    return da > db ? a : b;
  return da < db ? a : b;
}

/* got matches want (from ref_op16): the same bits, or a quiet NaN. */
static int same16(const fmt_t *f, uint16_t got, int want)
{
  if (want < 0)
    return is_nan16(f, got) && (got & f->quiet);
  return got == (uint16_t)want;
}

/* ---- fp32 reference ---------------------------------------------------- */

static int ref_op32(cs_op_t op, float a, float b, float *want)
{
  double da = a, db = b;
  switch (op) {
  case CS_SUM:
    *want = (float)(da + db); /* 53 >= 2*24+2: correctly rounded */
    break;
  case CS_PROD:
    *want = (float)(da * db); /* exact in double */
    break;
  case CS_MAX:
  case CS_MIN:
    if (a != a && b != b)
      *want = NAN;
    else if (a != a)
      *want = b;
    else if (b != b)
      *want = a;
    else if (a == b)
      *want = (signbit(a) != 0) == (op == CS_MIN) ? a : b;
    else
      *want = (a > b) == (op == CS_MAX) ? a : b;
    break;
  default:
    return -1;
  }
  return 0;
}

static int same32(float got, float want)
{
  if (want != want)
    return got != got && (fbits(got) & 0x400000u);
  return fbits(got) == fbits(want);
}

/* ---- converters -------------------------------------------------------- */

static void check_widen_every_pattern(cs_dtype_t t)
{
  const fmt_t *f = fmt_of(t);
  for (uint32_t p = 0; p < 0x10000; p++) {
    uint16_t h = (uint16_t)p;
    float got = t == CS_FP16 ? cs_half_to_float(h) : cs_bf16_to_float(h);
    if (is_nan16(f, h)) {
      uint32_t g = fbits(got);
      cr_assert(got != got && (g & 0x400000u),
                "%s %#06x -> %#010x not a quiet NaN", f->name, p, g);
      cr_assert_eq(g >> 31, (uint32_t)(h >> 15), "%s %#06x: NaN sign lost",
                   f->name, p);
      uint32_t payload = (uint32_t)(h & (f->quiet - 1u)) << (23 - f->mbits);
      cr_assert_eq(g & payload, payload, "%s %#06x: NaN payload lost",
                   f->name, p);
      continue;
    }
    float want = (float)ref_decode(f, h);
    cr_assert_eq(fbits(got), fbits(want), "%s %#06x -> %#010x, want %#010x",
                 f->name, p, fbits(got), fbits(want));
  }
}

static void check_round_trip_every_pattern(cs_dtype_t t)
{
  const fmt_t *f = fmt_of(t);
  for (uint32_t p = 0; p < 0x10000; p++) {
    uint16_t h = (uint16_t)p;
    float v = t == CS_FP16 ? cs_half_to_float(h) : cs_bf16_to_float(h);
    uint16_t back = t == CS_FP16 ? cs_float_to_half(v) : cs_float_to_bf16(v);
    uint16_t want = is_nan16(f, h) ? (uint16_t)(h | f->quiet) : h;
    cr_assert_eq(back, want, "%s %#06x -> %#06x, want %#06x", f->name, p,
                 back, want);
  }
}

static uint16_t narrow(cs_dtype_t t, float v)
{
  return t == CS_FP16 ? cs_float_to_half(v) : cs_float_to_bf16(v);
}

static void check_narrow_one(const fmt_t *f, cs_dtype_t t, float v)
{
  uint16_t got = narrow(t, v);
  if (v != v) {
    cr_assert(is_nan16(f, got) && (got & f->quiet),
              "%s: NaN %#010x -> %#06x not a quiet NaN", f->name, fbits(v),
              got);
    cr_assert_eq(got >> 15, fbits(v) >> 31, "%s: NaN sign lost", f->name);
    return;
  }
  uint16_t want = ref_round(f, (double)v);
  cr_assert_eq(got, want, "%s: %a (%#010x) -> %#06x, want %#06x", f->name,
               (double)v, fbits(v), got, want);
}

/* A stride through all 2^32 float patterns, and for every pair of
 * neighbouring patterns of the format their midpoint (a tie) and the floats
 * just below and above it, both signs; plus edges. */
static void check_narrow_rounding(cs_dtype_t t)
{
  const fmt_t *f = fmt_of(t);
  for (uint64_t u = 0; u < (1ull << 32); u += 1021)
    check_narrow_one(f, t, bitsf((uint32_t)u));
  for (unsigned p = 0; p < f->inf; p++) {
    float mid = (float)((f->val[p] + f->val[p + 1]) / 2); /* exact */
    cr_assert_eq((double)mid, (f->val[p] + f->val[p + 1]) / 2);
    uint32_t m = fbits(mid);
    for (int d = -2; d <= 2; d++)
      for (uint32_t s = 0; s <= 1; s++)
        check_narrow_one(f, t, bitsf((m + (uint32_t)d) | (s << 31)));
  }
  static const float edge[] = {
      0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e10f,
      0x1p-14f, 0x1p-24f, 0x1p-25f, 0x1p-26f, 0x1.8p-25f, 0x1p-126f,
      0x1p-133f, 0x1p-134f, 0x1.000002p-134f, 0x1p-149f, 3.0e38f,
      0x1.fep127f, 0x1.fefffep127f, 0x1.ff0000p127f, 3.4028235e38f,
      INFINITY};
  for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
    check_narrow_one(f, t, edge[i]);
    check_narrow_one(f, t, -edge[i]);
    check_narrow_one(f, t, bitsf(fbits(edge[i]) + 1));
    check_narrow_one(f, t, bitsf(fbits(edge[i]) - 1));
  }
  check_narrow_one(f, t, bitsf(0x7fc00000u));
  check_narrow_one(f, t, bitsf(0xff800001u)); /* sNaN, payload only low */
  check_narrow_one(f, t, bitsf(0x7f800001u));
  check_narrow_one(f, t, bitsf(0x7fffffffu));
}

Test(reduce, half_to_float_is_exact_for_every_pattern)
{
  check_widen_every_pattern(CS_FP16);
}

Test(reduce, bf16_to_float_is_exact_for_every_pattern)
{
  check_widen_every_pattern(CS_BF16);
}

Test(reduce, half_float_half_round_trips_every_pattern)
{
  check_round_trip_every_pattern(CS_FP16);
}

Test(reduce, bf16_float_bf16_round_trips_every_pattern)
{
  check_round_trip_every_pattern(CS_BF16);
}

Test(reduce, float_to_half_rounds_to_nearest_even)
{
  check_narrow_rounding(CS_FP16);
}

Test(reduce, float_to_bf16_rounds_to_nearest_even)
{
  check_narrow_rounding(CS_BF16);
}

Test(reduce, converters_give_hand_checked_bits_at_edges)
{
  /* Spot values written out by hand, so that the table reference itself
   * is checked too. */
  cr_assert_eq(cs_float_to_half(65504.0f), 0x7bff);
  cr_assert_eq(cs_float_to_half(65519.996f), 0x7bff);
  cr_assert_eq(cs_float_to_half(65520.0f), 0x7c00); /* tie -> even = inf */
  cr_assert_eq(cs_float_to_half(0x1p-24f), 0x0001);
  cr_assert_eq(cs_float_to_half(0x1p-25f), 0x0000); /* tie -> even = 0 */
  cr_assert_eq(cs_float_to_half(0x1.000002p-25f), 0x0001);
  cr_assert_eq(cs_float_to_half(0x1.8p-24f), 0x0002); /* tie 1.5 -> 2 */
  cr_assert_eq(cs_float_to_half(0x1.ffcp-15f), 0x0400); /* carry to normal */
  cr_assert_eq(cs_float_to_half(-0.0f), 0x8000);
  cr_assert_eq(cs_float_to_half(1.0f + 0x1p-11f), 0x3c00); /* tie -> even */
  cr_assert_eq(cs_float_to_half(1.0f + 0x3p-11f), 0x3c02);
  cr_assert_eq(cs_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  cr_assert_eq(cs_float_to_bf16(1.0f + 0x3p-8f), 0x3f82);
  cr_assert_eq(cs_float_to_bf16(3.4028235e38f), 0x7f80);
  cr_assert_eq(cs_float_to_bf16(bitsf(0x7f800001u)) & 0x7fc0, 0x7fc0);
  cr_assert_eq(fbits(cs_half_to_float(0x0001)), fbits(0x1p-24f));
  cr_assert_eq(fbits(cs_half_to_float(0x7bff)), fbits(65504.0f));
  cr_assert_eq(fbits(cs_half_to_float(0xfc00)), fbits(-INFINITY));
  /* the reference tables agree with the hand values */
  cr_assert_eq(ref_round(fmt_of(CS_FP16), 65520.0), 0x7c00);
  cr_assert_eq(ref_round(fmt_of(CS_FP16), 0x1p-25), 0x0000);
  cr_assert_eq(ref_round(fmt_of(CS_BF16), 1.0 + 0x3p-8), 0x3f82);
}

/* ---- 16-bit kernels: pairs ---------------------------------------------- */

static const uint16_t special16[] = {
    0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3c01,
    0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d55, 0xffff,
    0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0080, 0x007f,
    0x3f80, 0xbf80, 0x3f81, 0x5bff, 0x1400, 0x3555, 0x4900};

/* Every 7th pattern against ~300 others (specials, random, and patterns
 * with nearby exponents to make sums cancel and round), rotated so each
 * vector lane sees each partner; dispatched and baseline paths each
 * against the reference and against each other. */
static void sweep_pairs16(cs_dtype_t t, cs_op_t op)
{
  const fmt_t *f = fmt_of(t);
  enum { NS = sizeof special16 / sizeof special16[0], NB = NS + 280 };
  size_t na = 0;
  uint16_t *a = malloc(sizeof(uint16_t) * (0x10000 / 7 + 1 + NS));
  uint16_t *x = malloc(sizeof(uint16_t) * (0x10000 / 7 + 1 + NS));
  uint16_t *v = malloc(sizeof(uint16_t) * (0x10000 / 7 + 1 + NS));
  uint16_t *s = malloc(sizeof(uint16_t) * (0x10000 / 7 + 1 + NS));
  uint16_t b[NB];
  cr_assert(a && x && v && s);
  for (uint32_t p = 0; p < 0x10000; p += 7)
    a[na++] = (uint16_t)p;
  memcpy(a + na, special16, sizeof special16);
  na += NS;
  memcpy(b, special16, sizeof special16);
  for (size_t k = NS; k < NB; k++) {
    uint16_t r = (uint16_t)rng();
    if (k % 2) /* near 1.0 .. 4.0 in either format: cancellation, ties */
      r = (uint16_t)((t == CS_FP16 ? 0x3c00 : 0x3f80) + (r & 0x03ff)) |
          (uint16_t)(r & 0x8000);
    b[k] = r;
  }
  uint64_t checked = 0, nonnan = 0;
  for (size_t k = 0; k < NB; k++) {
    for (size_t i = 0; i < na; i++)
      x[i] = b[(i + k) % NB];
    memcpy(v, a, na * sizeof *a);
    memcpy(s, a, na * sizeof *a);
    run(t, op, v, x, na, 0);
    run(t, op, s, x, na, 1);
    for (size_t i = 0; i < na; i++) {
      int want = ref_op16(f, op, a[i], x[i]);
      if (!same16(f, v[i], want) || !same16(f, s[i], want))
        cr_assert_fail("%s %s %#06x %#06x: dispatched %#06x, baseline %#06x, "
                       "want %#06x (-1 = NaN)", f->name, cs_op_name(op), a[i],
                       x[i], v[i], s[i], want);
      /* the two paths agree bit for bit except for NaN payloads */
      if (!(v[i] == s[i] || (is_nan16(f, v[i]) && is_nan16(f, s[i]))))
        cr_assert_fail("%s %s %#06x %#06x: paths differ %#06x %#06x", f->name,
                       cs_op_name(op), a[i], x[i], v[i], s[i]);
      checked++;
      nonnan += want >= 0;
    }
  }
  cr_assert_gt(checked, 2000000);
  cr_assert_gt(nonnan, checked / 2);
  free(a);
  free(x);
  free(v);
  free(s);
}

Test(reduce, fp16_sum_is_correctly_rounded_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_FP16, CS_SUM);
}

Test(reduce, fp16_prod_is_correctly_rounded_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_FP16, CS_PROD);
}

Test(reduce, fp16_max_is_maximum_number_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_FP16, CS_MAX);
}

Test(reduce, fp16_min_is_minimum_number_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_FP16, CS_MIN);
}

Test(reduce, bf16_sum_is_correctly_rounded_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_BF16, CS_SUM);
}

Test(reduce, bf16_prod_is_correctly_rounded_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_BF16, CS_PROD);
}

Test(reduce, bf16_max_is_maximum_number_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_BF16, CS_MAX);
}

Test(reduce, bf16_min_is_minimum_number_on_both_paths, .timeout = 120)
{
  sweep_pairs16(CS_BF16, CS_MIN);
}

/* Whether the kernel lists flag for the first CPU in /proc/cpuinfo: the
 * oracle for the dispatch, apart from the cpuid code under test (and a
 * check clang accepts, which knows no "f16c" for __builtin_cpu_supports). */
static int cpuinfo_has(const char *flag)
{
  FILE *f = fopen("/proc/cpuinfo", "r");
  cr_assert_not_null(f);
  char line[8192];
  int has = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "flags", 5) == 0) {
      for (char *t = strtok(strchr(line, ':') + 1, " \t\n"); t;
           t = strtok(NULL, " \t\n"))
        has |= strcmp(t, flag) == 0;
      break;
    }
  fclose(f);
  return has;
}

Test(reduce, fp16_dispatch_follows_the_cpu_and_can_be_forced)
{
  int cpu = cpuinfo_has("avx") && cpuinfo_has("f16c");
  cr_assert_eq(cs_reduce_has_f16c(), cpu);
  cs_reduce_force_scalar(1);
  cr_assert_eq(cs_reduce_has_f16c(), 0);
  cs_reduce_force_scalar(0);
  cr_assert_eq(cs_reduce_has_f16c(), cpu);
  if (!cpu)
    cr_log_warn("no F16C on this CPU: the fp16 vector path is not exercised");
}

/* ---- fp32 kernels ------------------------------------------------------ */

static float rand_float(void)
{
  uint64_t r = rng();
  switch (r % 4) {
  case 0: /* any pattern (NaN, inf, subnormal included) */
    return bitsf((uint32_t)(r >> 32));
  case 1: /* moderate exponents: sums that round, products in range */
    return bitsf((uint32_t)((r >> 32) & 0x807fffffu) |
                 (uint32_t)(((r >> 8) % 40 + 107) << 23));
  case 2: /* near 1: cancellation and ties */
    return bitsf(0x3f800000u + (uint32_t)((r >> 32) & 0xfff)) *
           ((r >> 8) & 1 ? -1.0f : 1.0f);
  default: /* small integers and their halves: exact zeros, ties */
    return (float)((int)((r >> 32) % 33) - 16) * 0.5f;
  }
}

static void sweep_fp32(cs_op_t op)
{
  enum { N = 4099, ROUNDS = 200 };
  static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY,
                                  NAN, -NAN, 0x1p-149f, -0x1p-149f, 0x1p-126f,
                                  3.4028235e38f, -3.4028235e38f, 0x1p64f};
  float a[N], x[N], v[N], s[N];
  uint64_t nonnan = 0;
  for (int round = 0; round < ROUNDS; round++) {
    for (size_t i = 0; i < N; i++) {
      a[i] = rand_float();
      x[i] = rand_float();
      if (i % 5 == 0) /* about -a: cancellation */
        x[i] = bitsf(fbits(a[i]) ^ 0x80000000u ^ (uint32_t)(rng() & 3));
    }
    if (round == 0) /* every pair of specials once */
      for (size_t i = 0; i < 14 * 14; i++) {
        a[i] = special[i / 14];
        x[i] = special[i % 14];
      }
    memcpy(v, a, sizeof a);
    memcpy(s, a, sizeof a);
    run(CS_FP32, op, v, x, N, 0);
    run(CS_FP32, op, s, x, N, 1);
    for (size_t i = 0; i < N; i++) {
      float want;
      cr_assert_eq(ref_op32(op, a[i], x[i], &want), 0);
      if (!same32(v[i], want) || !same32(s[i], want))
        cr_assert_fail("fp32 %s %a %a: dispatched %a, baseline %a, want %a",
                       cs_op_name(op), (double)a[i], (double)x[i],
                       (double)v[i], (double)s[i], (double)want);
      nonnan += want == want;
    }
  }
  cr_assert_gt(nonnan, (uint64_t)N * ROUNDS / 2);
}

Test(reduce, fp32_sum_matches_double_reference)
{
  sweep_fp32(CS_SUM);
}

Test(reduce, fp32_prod_matches_double_reference)
{
  sweep_fp32(CS_PROD);
}

Test(reduce, fp32_max_is_maximum_number)
{
  sweep_fp32(CS_MAX);
}

Test(reduce, fp32_min_is_minimum_number)
{
  sweep_fp32(CS_MIN);
}

/* ---- max/min: NaN and signed zeros, written out ------------------------ */

/* One case: operands and the expected max and min, as values of the dtype;
 * NaN expected means "a NaN". Each is run in both operand orders, at
 * every position of a 40-element vector (vector lanes and scalar tail). */
typedef struct mm_case {
  double a, b, max, min;
} mm_case_t;

static const mm_case_t mm_cases[] = {
    {NAN, 1.0, 1.0, 1.0},
    {NAN, -2.0, -2.0, -2.0},
    {NAN, NAN, NAN, NAN},
    {NAN, INFINITY, INFINITY, INFINITY},
    {NAN, -INFINITY, -INFINITY, -INFINITY},
    {NAN, 0.0, 0.0, 0.0},
    {NAN, -0.0, -0.0, -0.0},
    {0.0, -0.0, 0.0, -0.0},
    {0.0, 0.0, 0.0, 0.0},
    {-0.0, -0.0, -0.0, -0.0},
    {-1.0, 2.0, 2.0, -1.0},
    {-0.0, 0.5, 0.5, -0.0},
    {0.0, -0.5, 0.0, -0.5},
    {-INFINITY, INFINITY, INFINITY, -INFINITY},
};

/* d (exact in the dtype, or NaN) stored as element i of buf. */
static void to_dtype(cs_dtype_t t, double d, void *buf, size_t i)
{
  if (t == CS_FP32) {
    ((float *)buf)[i] = (float)d;
    return;
  }
  const fmt_t *f = fmt_of(t);
  ((uint16_t *)buf)[i] =
      d != d ? (uint16_t)(f->inf | f->quiet) : ref_round(f, d);
}

static int elem_is_nan(cs_dtype_t t, const void *buf, size_t i)
{
  if (t == CS_FP32) {
    float v = ((const float *)buf)[i];
    return v != v;
  }
  return is_nan16(fmt_of(t), ((const uint16_t *)buf)[i]);
}

/* op(a, b) on N copies of the case; every element must be `want`. */
static void check_max_min_case(cs_dtype_t t, cs_op_t op, double a, double b,
                               double want, int scalar)
{
  enum { N = 40 };
  size_t es = cs_dtype_size(t);
  unsigned char acc[N * 4], x[N * 4], w[4];
  for (size_t i = 0; i < N; i++) {
    to_dtype(t, a, acc, i);
    to_dtype(t, b, x, i);
  }
  if (t != CS_FP32 && a != a) /* also a signalling NaN operand */
    for (size_t i = 0; i < N; i += 3)
      ((uint16_t *)acc)[i] = t == CS_FP16 ? 0x7d01 : 0x7f81;
  to_dtype(t, want, w, 0);
  run(t, op, acc, x, N, scalar);
  for (size_t i = 0; i < N; i++) {
    int ok = want != want ? elem_is_nan(t, acc, i)
                          : memcmp(acc + i * es, w, es) == 0;
    cr_assert(ok, "%s %s(%g, %g) at %zu (%s path): wrong bits, want %g",
              cs_dtype_name(t), cs_op_name(op), a, b, i,
              scalar ? "baseline" : "dispatched", want);
  }
}

Test(reduce, max_min_prefer_numbers_and_order_signed_zeros_in_every_dtype)
{
  size_t ncases = sizeof mm_cases / sizeof mm_cases[0];
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int scalar = 0; scalar < 2; scalar++)
      for (size_t c = 0; c < ncases; c++) {
        const mm_case_t *k = &mm_cases[c];
        /* both operand orders */
        check_max_min_case(t, CS_MAX, k->a, k->b, k->max, scalar);
        check_max_min_case(t, CS_MAX, k->b, k->a, k->max, scalar);
        check_max_min_case(t, CS_MIN, k->a, k->b, k->min, scalar);
        check_max_min_case(t, CS_MIN, k->b, k->a, k->min, scalar);
      }
}

Test(reduce, max_min_cases_have_the_expected_signs)
{
  /* The checks above compare bits; this pins the zero cases to signs,
   * independently of to_dtype. */
  float acc[2] = {0.0f, -0.0f}, x[2] = {-0.0f, 0.0f};
  cs_reduce_kernel(CS_FP32, CS_MAX, acc, x, 2);
  cr_assert(!signbit(acc[0]) && !signbit(acc[1]));
  float acc2[2] = {0.0f, -0.0f};
  cs_reduce_kernel(CS_FP32, CS_MIN, acc2, x, 2);
  cr_assert(signbit(acc2[0]) && signbit(acc2[1]));
  uint16_t h[2] = {0x0000, 0x8000}, hx[2] = {0x8000, 0x0000};
  cs_reduce_kernel(CS_FP16, CS_MAX, h, hx, 2);
  cr_assert(h[0] == 0x0000 && h[1] == 0x0000);
  uint16_t h2[2] = {0x7fc0, 0x3c00}, hx2[2] = {0x3c00, 0x7fc0};
  cs_reduce_kernel(CS_BF16, CS_MIN, h2, hx2, 2);
  cr_assert(h2[0] == 0x3c00 && h2[1] == 0x3c00);
}

/* ---- lengths, tails, untouched memory ---------------------------------- */

static void fill_finite(cs_dtype_t t, void *buf, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    uint64_t r = rng();
    double d = (double)((int64_t)(r % 2001) - 1000) / 64.0;
    to_dtype(t, d, buf, i);
  }
}

/* Element i of acc0 op x0 landed in got, per the reference. */
static int elem_ok(cs_dtype_t t, cs_op_t op, const void *acc0,
                   const void *x0, const void *got, size_t i)
{
  if (t == CS_FP32) {
    float want;
    ref_op32(op, ((const float *)acc0)[i], ((const float *)x0)[i], &want);
    return same32(((const float *)got)[i], want);
  }
  const fmt_t *f = fmt_of(t);
  int want = ref_op16(f, op, ((const uint16_t *)acc0)[i],
                      ((const uint16_t *)x0)[i]);
  return same16(f, ((const uint16_t *)got)[i], want);
}

/* The kernel on n elements starting `at` elements into padded buffers:
 * those n are reduced, nothing else in acc changes, x never changes. */
static void check_length(cs_dtype_t t, cs_op_t op, int scalar, size_t n,
                         size_t at)
{
  enum { MAXN = 1100 };
  size_t es = cs_dtype_size(t);
  unsigned char acc[MAXN * 4], acc0[MAXN * 4], x[MAXN * 4], x0[MAXN * 4];
  cr_assert_leq(at + n, MAXN);
  fill_finite(t, acc, MAXN);
  fill_finite(t, x, MAXN);
  memcpy(acc0, acc, sizeof acc);
  memcpy(x0, x, sizeof x);
  run(t, op, acc + at * es, x + at * es, n, scalar);
  const char *tn = cs_dtype_name(t), *on = cs_op_name(op);
  cr_assert(memcmp(x, x0, sizeof x) == 0, "%s %s n=%zu: x written", tn, on,
            n);
  cr_assert(memcmp(acc, acc0, at * es) == 0,
            "%s %s n=%zu: element before acc touched", tn, on, n);
  size_t end = (at + n) * es;
  cr_assert(memcmp(acc + end, acc0 + end, sizeof acc - end) == 0,
            "%s %s n=%zu: element past n touched", tn, on, n);
  for (size_t i = at; i < at + n; i++)
    cr_assert(elem_ok(t, op, acc0, x0, acc, i),
              "%s %s n=%zu at=%zu (%s path): element %zu wrong", tn, on, n,
              at, scalar ? "baseline" : "dispatched", i - at);
}

Test(reduce, every_length_reduces_exactly_n_elements)
{
  static const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000};
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int op = 0; op < CS_NOPS; op++)
      for (int scalar = 0; scalar < 2; scalar++) {
        /* n = 0 touches nothing, not even a NULL buffer */
        run((cs_dtype_t)t, (cs_op_t)op, NULL, NULL, 0, scalar);
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
          for (size_t at = 24; at < 27; at++) /* unaligned starts too */
            check_length((cs_dtype_t)t, (cs_op_t)op, scalar, lens[li], at);
      }
}
