/*
 * test_oracle.c - the independent reference of the allreduce results
 * (collectives/oracle.c): the fp16/bf16/fp32 codec, one rounding per op,
 * Max/Min on NaN and signed zeros, the ring segment ownership of reference
 * §4.2 and the association orders of docs/algorithms.md §6.
 *
 * Expected values are hand-derived: bit patterns worked out in the
 * comments, closed forms (exact sums of the reference's test inputs), or
 * decodings computed by a different path (hardware float for bf16/fp32,
 * powers of two for fp16). Association orders are made visible with one
 * large value: in fp32, 2^24 + 1 ties back to 2^24 while (1 + 1) + 2^24 is
 * exact, so which operands meet first shows in the bits.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../collectives/oracle.h"
#include "../collectives/registry.h"

/* ------------------------------------------------------------- helpers */

static uint32_t f32_bits(float x)
{
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

static float f32_of(uint32_t u)
{
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* 2^k by repeated doubling/halving: exact, and no shared code with ldexp. */
static double pow2i(int k)
{
  double v = 1.0;
  for (; k > 0; k--)
    v *= 2.0;
  for (; k < 0; k++)
    v /= 2.0;
  return v;
}

static uint32_t bits_at(cs_dtype_t t, const void *buf, uint64_t i)
{
  if (t == CS_FP32) {
    uint32_t u;
    memcpy(&u, (const char *)buf + 4 * i, 4);
    return u;
  }
  uint16_t h;
  memcpy(&h, (const char *)buf + 2 * i, 2);
  return h;
}

static void set_bits(cs_dtype_t t, void *buf, uint64_t i, uint32_t u)
{
  if (t == CS_FP32) {
    memcpy((char *)buf + 4 * i, &u, 4);
  } else {
    uint16_t h = (uint16_t)u;
    memcpy((char *)buf + 2 * i, &h, 2);
  }
}

/* 1 when u is a quiet NaN of dtype t (exponent all ones, top mantissa bit). */
static int is_quiet_nan(cs_dtype_t t, uint32_t u)
{
  switch (t) {
  case CS_FP16: return (u & 0x7c00u) == 0x7c00u && (u & 0x0200u);
  case CS_BF16: return (u & 0x7f80u) == 0x7f80u && (u & 0x0040u);
  default: return (u & 0x7f800000u) == 0x7f800000u && (u & 0x00400000u);
  }
}

static void *rows_alloc(cs_dtype_t t, uint32_t nranks, uint64_t count)
{
  void *p = calloc((size_t)(nranks * count + 1), cs_dtype_size(t));
  cr_assert_not_null(p);
  return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (uint32_t)(rng_state >> 32);
}

/* A random finite value of moderate magnitude (|x| in [2^-7, 2^9)). */
static uint32_t rng_value(cs_dtype_t t)
{
  uint32_t r = rng(), s = r >> 31;
  switch (t) {
  case CS_FP16: return s << 15 | (8u + r % 16u) << 10 | (rng() & 0x3ffu);
  case CS_BF16: return s << 15 | (120u + r % 16u) << 7 | (rng() & 0x7fu);
  default: return s << 31 | (120u + r % 16u) << 23 | (rng() & 0x7fffffu);
  }
}

/* ------------------------------------------------------------- decoding */

Test(oracle, decodes_every_fp16_pattern_to_its_closed_form)
{
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t b = (uint16_t)h;
    uint32_t s = h >> 15, e = h >> 10 & 31u, m = h & 0x3ffu;
    double got = cs_oracle_decode(CS_FP16, &b, 0);
    if (e == 31 && m) {
      cr_assert(isnan(got), "0x%04x", h);
      continue;
    }
    double want = e == 31  ? INFINITY
                  : e == 0 ? m * pow2i(-24)
                           : (1024.0 + m) * pow2i((int)e - 25);
    if (s)
      want = -want;
    cr_assert(got == want && !signbit(got) == !signbit(want),
              "0x%04x: got %a want %a", h, got, want);
  }
  uint16_t v[] = {0x3c00, 0x0001, 0x7bff, 0xc000, 0x03ff};
  cr_assert_eq(cs_oracle_decode(CS_FP16, v, 0), 1.0);
  cr_assert_eq(cs_oracle_decode(CS_FP16, v, 1), 0x1p-24);
  cr_assert_eq(cs_oracle_decode(CS_FP16, v, 2), 65504.0);
  cr_assert_eq(cs_oracle_decode(CS_FP16, v, 3), -2.0);
  cr_assert_eq(cs_oracle_decode(CS_FP16, v, 4), 1023 * 0x1p-24);
}

Test(oracle, decodes_every_bf16_pattern_like_the_top_half_of_a_float)
{
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t b = (uint16_t)h;
    double got = cs_oracle_decode(CS_BF16, &b, 0);
    double want = f32_of(h << 16);
    if (isnan(want)) {
      cr_assert(isnan(got), "0x%04x", h);
      continue;
    }
    cr_assert(got == want && !signbit(got) == !signbit(want),
              "0x%04x: got %a want %a", h, got, want);
  }
  uint16_t v[] = {0x3f80, 0x0001, 0x4380};
  cr_assert_eq(cs_oracle_decode(CS_BF16, v, 0), 1.0);
  cr_assert_eq(cs_oracle_decode(CS_BF16, v, 1), 0x1p-133);
  cr_assert_eq(cs_oracle_decode(CS_BF16, v, 2), 256.0);
}

Test(oracle, decodes_fp32_patterns_like_hardware_float)
{
  for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) {
    uint32_t b = (uint32_t)u;
    double got = cs_oracle_decode(CS_FP32, &b, 0);
    double want = f32_of(b);
    if (isnan(want))
      cr_assert(isnan(got), "0x%08x", b);
    else
      cr_assert(got == want && !signbit(got) == !signbit(want),
                "0x%08x: got %a want %a", b, got, want);
  }
  uint32_t v[] = {0x00000001u, 0x80000000u, 0x7f800000u, 0xff800000u,
                  0x7f800001u, 0x7f7fffffu, 0x007fffffu};
  cr_assert_eq(cs_oracle_decode(CS_FP32, v, 0), 0x1p-149);
  double z = cs_oracle_decode(CS_FP32, v, 1);
  cr_assert(z == 0.0 && signbit(z));
  cr_assert_eq(cs_oracle_decode(CS_FP32, v, 2), INFINITY);
  cr_assert_eq(cs_oracle_decode(CS_FP32, v, 3), -INFINITY);
  cr_assert(isnan(cs_oracle_decode(CS_FP32, v, 4)));
  cr_assert_eq(cs_oracle_decode(CS_FP32, v, 5), (double)FLT_MAX);
  cr_assert_eq(cs_oracle_decode(CS_FP32, v, 6), 0x7fffff * 0x1p-149);
}

/* ----------------------------------------------------- encoding, rounding */

/* Every 16-bit pattern x, through x + (-0), x * 1, max(x, x), min(x, x) on
 * two ranks, must come back as x (a NaN as a quiet NaN). */
static void check_round_trip16(cs_dtype_t t, uint16_t one)
{
  const uint64_t count = 65536;
  const uint16_t other[] = {0x8000, one, 0, 0};
  const cs_op_t ops[] = {CS_SUM, CS_PROD, CS_MAX, CS_MIN};
  uint16_t *in = rows_alloc(t, 2, count);
  uint16_t *out = rows_alloc(t, 1, count);

  for (int o = 0; o < 4; o++) {
    for (uint32_t h = 0; h < count; h++) {
      in[h] = (uint16_t)h;
      in[count + h] = o < 2 ? other[o] : (uint16_t)h;
    }
    cs_oracle_expect(CS_ALGO_MESH, t, ops[o], 2, count, in, 0, out);
    for (uint32_t h = 0; h < count; h++) {
      int nan = isnan(cs_oracle_decode(t, in, h));
      if (nan)
        cr_assert(is_quiet_nan(t, out[h]), "%s 0x%04x -> 0x%04x",
                  cs_op_name(ops[o]), h, out[h]);
      else
        cr_assert_eq(out[h], h, "%s %s 0x%04x -> 0x%04x", cs_dtype_name(t),
                     cs_op_name(ops[o]), h, out[h]);
    }
  }
  free(in);
  free(out);
}

Test(oracle, round_trips_every_fp16_pattern)
{
  check_round_trip16(CS_FP16, 0x3c00);
}

Test(oracle, round_trips_every_bf16_pattern)
{
  check_round_trip16(CS_BF16, 0x3f80);
}

Test(oracle, round_trips_sampled_fp32_patterns)
{
  const uint64_t count = 65536;
  float *in = rows_alloc(CS_FP32, 2, count);
  float *out = rows_alloc(CS_FP32, 1, count);
  for (uint64_t i = 0; i < count; i++) {
    in[i] = f32_of((uint32_t)(i * 65537u + (i >> 3)));
    in[count + i] = 1.0f;
  }
  cs_oracle_expect(CS_ALGO_MESH, CS_FP32, CS_PROD, 2, count, in, 0, out);
  for (uint64_t i = 0; i < count; i++) {
    uint32_t u = f32_bits(in[i]), g = f32_bits(out[i]);
    if (isnan(in[i]))
      cr_assert(is_quiet_nan(CS_FP32, g), "0x%08x -> 0x%08x", u, g);
    else
      cr_assert_eq(g, u, "0x%08x -> 0x%08x", u, g);
  }
  free(in);
  free(out);
}

/* fp16 bits of c * 2^k for c in {1, 3} (hand closed form). */
static uint16_t f16_small(unsigned c, int k)
{
  if (c == 1)
    return k >= -14 ? (uint16_t)((k + 15) << 10) : (uint16_t)(1u << (k + 24));
  /* 3 * 2^k = 1.5 * 2^(k+1): mantissa 0x200 */
  return k + 1 >= -14 ? (uint16_t)((k + 16) << 10 | 0x200)
                      : (uint16_t)(3u << (k + 24));
}

/* For every fp16 h with exponent field e >= 3 (ulp 2^(e-25)), both signs:
 *   h + ulp/4 -> h;  h + ulp/2 -> the even of h, h+1;  h + 3ulp/4 -> h+1.
 * h = 0x7bff (65504): h+1 is 0x7c00 = inf (65520 and 65528 overflow). */
Test(oracle, rounds_every_fp16_sum_to_nearest_even)
{
  const uint32_t lo = 0x0c00, hi = 0x7bff, n = hi - lo + 1;
  const uint64_t count = 6ull * n;
  uint16_t *in = rows_alloc(CS_FP16, 2, count);
  uint16_t *want = rows_alloc(CS_FP16, 1, count);
  uint16_t *out = rows_alloc(CS_FP16, 1, count);
  uint64_t i = 0;

  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t h = lo; h <= hi; h++) {
      int e = (int)(h >> 10);
      uint16_t sg = (uint16_t)(s << 15);
      uint16_t add[3] = {f16_small(1, e - 27), f16_small(1, e - 26),
                         f16_small(3, e - 27)};
      uint16_t res[3] = {(uint16_t)h, (uint16_t)(h & 1 ? h + 1 : h),
                         (uint16_t)(h + 1)};
      for (int j = 0; j < 3; j++, i++) {
        in[i] = (uint16_t)(sg | h);
        in[count + i] = (uint16_t)(sg | add[j]);
        want[i] = (uint16_t)(sg | res[j]);
      }
    }
  cr_assert_eq(i, count);
  for (uint32_t r = 0; r < 2; r++) {
    cs_oracle_expect(CS_ALGO_MESH, CS_FP16, CS_SUM, 2, count, in, r, out);
    for (i = 0; i < count; i++)
      cr_assert_eq(out[i], want[i], "0x%04x + 0x%04x -> 0x%04x, want 0x%04x",
                   in[i], in[count + i], out[i], want[i]);
  }
  free(in);
  free(want);
  free(out);
}

/* Halving every fp16 below 0x0c00 (times 0.5 = 0x3800). Below 0x0800 the
 * pattern h is the significand in units of 2^-24 (subnormals, and the first
 * normal binade: 0x0400 + m = 1024 + m), so h/2 rounds to even in those
 * units; in [0x0800, 0x0c00) the halving is exact: h - 0x0400. */
Test(oracle, rounds_fp16_subnormal_products_to_nearest_even)
{
  const uint64_t count = 2 * 0x0c00;
  uint16_t *in = rows_alloc(CS_FP16, 2, count);
  uint16_t *out = rows_alloc(CS_FP16, 1, count);

  for (uint32_t i = 0; i < count; i++) {
    in[i] = (uint16_t)((i >= 0x0c00 ? 0x8000u : 0u) | i % 0x0c00);
    in[count + i] = 0x3800;
  }
  cs_oracle_expect(CS_ALGO_MESH, CS_FP16, CS_PROD, 2, count, in, 1, out);
  for (uint32_t i = 0; i < count; i++) {
    uint32_t h = i % 0x0c00, sg = i >= 0x0c00 ? 0x8000u : 0u;
    uint32_t w = h >= 0x0800 ? h - 0x0400
                             : (h >> 1) + ((h & 1) && ((h >> 1) & 1));
    cr_assert_eq(out[i], sg | w, "0x%04x * 0.5 -> 0x%04x, want 0x%04x",
                 in[i], out[i], sg | w);
  }
  free(in);
  free(out);
}

typedef struct case16 {
  uint16_t a, b; /* operands, dtype bits */
  cs_op_t op;
  uint16_t want; /* result bits; ignored when nan */
  int nan;       /* 1: a quiet NaN is expected */
} case16_t;

/* Each case on two ranks: mesh rank 0 (a op b), mesh rank 1 (b op a),
 * host, ring. */
static void check_cases16(cs_dtype_t t, const case16_t *c, size_t n)
{
  uint16_t *in = rows_alloc(t, 2, n);
  uint16_t *out = rows_alloc(t, 1, n);
  const cs_op_t ops[] = {CS_SUM, CS_MAX, CS_MIN, CS_PROD};

  for (int o = 0; o < 4; o++) {
    for (size_t i = 0; i < n; i++) {
      in[i] = c[i].a;
      in[n + i] = c[i].b;
    }
    for (int algo = 0; algo < CS_NALGOS; algo++)
      for (uint32_t r = 0; r < 2; r++) {
        cs_oracle_expect((cs_algo_t)algo, t, ops[o], 2, n, in, r, out);
        for (size_t i = 0; i < n; i++) {
          if (c[i].op != ops[o])
            continue;
          if (c[i].nan)
            cr_assert(is_quiet_nan(t, out[i]), "case %zu: 0x%04x", i, out[i]);
          else
            cr_assert_eq(out[i], c[i].want,
                         "%s case %zu algo %d rank %u: 0x%04x %s 0x%04x -> "
                         "0x%04x, want 0x%04x",
                         cs_dtype_name(t), i, algo, r, c[i].a,
                         cs_op_name(ops[o]), c[i].b, out[i], c[i].want);
        }
      }
  }
  free(in);
  free(out);
}

Test(oracle, rounds_hand_picked_fp16_results)
{
  /* 1 = 0x3c00, 0.5 = 0x3800, 0.75 = 0x3a00, 3 = 0x4200, 15 = 0x4b80,
   * 16 = 0x4c00, 683 = 0x6156, 1367 = 0x6557, 1369 = 0x6559,
   * 2048 = 0x6800 (ulp 2), 4096 = 0x6c00 (ulp 4), 65504 = 0x7bff. */
  static const case16_t c[] = {
      {0x6800, 0x3c00, CS_SUM, 0x6800, 0},  /* 2049 tie -> 2048 */
      {0x6801, 0x3c00, CS_SUM, 0x6802, 0},  /* 2051 tie -> 2052 */
      {0x7bff, 0x4c00, CS_SUM, 0x7c00, 0},  /* 65520 -> inf */
      {0x7bff, 0x4b80, CS_SUM, 0x7bff, 0},  /* 65519 -> 65504 */
      {0xfbff, 0xcc00, CS_SUM, 0xfc00, 0},  /* -65520 -> -inf */
      {0x0001, 0x0001, CS_SUM, 0x0002, 0},  /* 2^-24 + 2^-24 */
      {0x03ff, 0x0001, CS_SUM, 0x0400, 0},  /* largest subnormal + min */
      {0x3c00, 0xbc00, CS_SUM, 0x0000, 0},  /* 1 - 1 = +0 */
      {0x8000, 0x8000, CS_SUM, 0x8000, 0},  /* -0 + -0 = -0 */
      {0x0000, 0x8000, CS_SUM, 0x0000, 0},  /* +0 + -0 = +0 */
      {0x7c00, 0xfc00, CS_SUM, 0, 1},       /* inf - inf */
      {0x0001, 0x3800, CS_PROD, 0x0000, 0}, /* 2^-25 tie -> +0 */
      {0x8001, 0x3800, CS_PROD, 0x8000, 0}, /* -2^-25 tie -> -0 */
      {0x0003, 0x3800, CS_PROD, 0x0002, 0}, /* 1.5 * 2^-24 tie -> 2 */
      {0x0001, 0x3a00, CS_PROD, 0x0001, 0}, /* 0.75 * 2^-24 -> 2^-24 */
      {0x0001, 0x0001, CS_PROD, 0x0000, 0}, /* 2^-48 -> +0 */
      {0x4200, 0x6156, CS_PROD, 0x6800, 0}, /* 3 * 683 = 2049 -> 2048 */
      {0x4200, 0x6557, CS_PROD, 0x6c01, 0}, /* 3 * 1367 = 4101 -> 4100 */
      {0x4200, 0x6559, CS_PROD, 0x6c03, 0}, /* 3 * 1369 = 4107 -> 4108 */
      {0x0000, 0x7c00, CS_PROD, 0, 1},      /* 0 * inf */
      {0x7c01, 0x3c00, CS_PROD, 0, 1},      /* signalling NaN * 1 */
  };
  check_cases16(CS_FP16, c, sizeof c / sizeof c[0]);
}

Test(oracle, rounds_hand_picked_bf16_results)
{
  /* 1 = 0x3f80, 0.5 = 0x3f00, 256 = 0x4380 (ulp 2), 258 = 0x4381,
   * largest finite 0x7f7f = (2 - 2^-7) 2^127 (ulp 2^120),
   * 2^119 = 0x7b00, 2^118 = 0x7a80, smallest subnormal 0x0001 = 2^-133. */
  static const case16_t c[] = {
      {0x4380, 0x3f80, CS_SUM, 0x4380, 0},  /* 257 tie -> 256 */
      {0x4381, 0x3f80, CS_SUM, 0x4382, 0},  /* 259 tie -> 260 */
      {0x7f7f, 0x7b00, CS_SUM, 0x7f80, 0},  /* max + ulp/2 tie -> inf */
      {0x7f7f, 0x7a80, CS_SUM, 0x7f7f, 0},  /* max + ulp/4 -> max */
      {0x0001, 0x3f00, CS_PROD, 0x0000, 0}, /* 2^-134 tie -> +0 */
      {0x0003, 0x3f00, CS_PROD, 0x0002, 0}, /* 1.5 * 2^-133 tie -> 2 */
      {0x007f, 0x0001, CS_SUM, 0x0080, 0},  /* largest subnormal + min */
      {0x7f80, 0x0000, CS_PROD, 0, 1},      /* inf * 0 */
      {0x7f81, 0x3f80, CS_SUM, 0, 1},       /* signalling NaN + 1 */
  };
  check_cases16(CS_BF16, c, sizeof c / sizeof c[0]);
}

Test(oracle, rounds_hand_picked_fp32_results)
{
  static const struct {
    float a, b;
    cs_op_t op;
    float want;
  } c[] = {
      {0x1p24f, 1.0f, CS_SUM, 0x1p24f},                  /* tie -> even */
      {0x1p24f + 2.0f, 1.0f, CS_SUM, 0x1p24f + 4.0f},    /* tie -> even */
      {1.0f, 0x1p-24f, CS_SUM, 1.0f},                    /* tie -> 1 */
      {1.0f + 0x1p-23f, 0x1p-24f, CS_SUM, 1.0f + 0x1p-22f},
      {FLT_MAX, FLT_MAX, CS_SUM, INFINITY},
      {FLT_MAX, 0x1p103f, CS_SUM, INFINITY},             /* ulp/2 tie up */
      {FLT_MAX, 0x1p102f, CS_SUM, FLT_MAX},
      {-FLT_MAX, -0x1p103f, CS_SUM, -INFINITY},
      {0x1p-149f, 0.5f, CS_PROD, 0.0f},                  /* tie -> +0 */
      {-0x1p-149f, 0.5f, CS_PROD, -0.0f},                /* tie -> -0 */
      {0x1p-149f, 1.5f, CS_PROD, 0x1p-148f},             /* tie -> 2 */
      {0x1p-149f, 0.75f, CS_PROD, 0x1p-149f},
      {0x1p-100f, 0x1p-100f, CS_PROD, 0.0f},
      {0x1.fffffcp-127f, 0x1p-149f, CS_SUM, 0x1p-126f},  /* to min normal */
      {3.0f, 1.0f / 3.0f, CS_PROD, 1.0f},                /* 1 - 2^-25: up */
  };
  const size_t n = sizeof c / sizeof c[0];
  float *in = rows_alloc(CS_FP32, 2, n), *out = rows_alloc(CS_FP32, 1, n);

  for (int o = 0; o < CS_NOPS; o++) {
    for (size_t i = 0; i < n; i++) {
      in[i] = c[i].a;
      in[n + i] = c[i].b;
    }
    for (uint32_t r = 0; r < 2; r++) {
      cs_oracle_expect(CS_ALGO_MESH, CS_FP32, (cs_op_t)o, 2, n, in, r, out);
      for (size_t i = 0; i < n; i++)
        if (c[i].op == (cs_op_t)o)
          cr_assert_eq(f32_bits(out[i]), f32_bits(c[i].want),
                       "case %zu: %a %s %a -> %a, want %a", i, (double)c[i].a,
                       cs_op_name(c[i].op), (double)c[i].b, (double)out[i],
                       (double)c[i].want);
    }
  }
  free(in);
  free(out);
}

/* -------------------------------------------------------------- max/min */

Test(oracle, max_and_min_ignore_nan_and_order_signed_zeros)
{
  static const struct {
    float a, b, max, min;
  } c[] = {
      {NAN, 1.0f, 1.0f, 1.0f},
      {1.0f, NAN, 1.0f, 1.0f},
      {-INFINITY, NAN, -INFINITY, -INFINITY},
      {0.0f, -0.0f, 0.0f, -0.0f},
      {-0.0f, 0.0f, 0.0f, -0.0f},
      {-0.0f, -0.0f, -0.0f, -0.0f},
      {3.0f, -5.0f, 3.0f, -5.0f},
      {-INFINITY, INFINITY, INFINITY, -INFINITY},
  };
  const size_t n = sizeof c / sizeof c[0];
  float *in = rows_alloc(CS_FP32, 2, n + 1), *out = rows_alloc(CS_FP32, 1, n + 1);

  for (size_t i = 0; i < n; i++) {
    in[i] = c[i].a;
    in[n + 1 + i] = c[i].b;
  }
  in[n] = NAN; /* last element: both NaN */
  in[2 * n + 1] = NAN;
  for (int algo = 0; algo < CS_NALGOS; algo++)
    for (uint32_t r = 0; r < 2; r++)
      for (int mx = 0; mx < 2; mx++) {
        cs_oracle_expect((cs_algo_t)algo, CS_FP32, mx ? CS_MAX : CS_MIN, 2,
                         n + 1, in, r, out);
        for (size_t i = 0; i < n; i++) {
          float w = mx ? c[i].max : c[i].min;
          cr_assert_eq(f32_bits(out[i]), f32_bits(w),
                       "case %zu algo %d rank %u %s: %a", i, algo, r,
                       mx ? "max" : "min", (double)out[i]);
        }
        cr_assert(is_quiet_nan(CS_FP32, f32_bits(out[n])));
      }
  free(in);
  free(out);

  /* fp16 and bf16 bits, both operand orders (mesh ranks 0 and 1). */
  static const case16_t h[] = {
      {0x7e00, 0x3c00, CS_MAX, 0x3c00, 0}, {0x3c00, 0x7e00, CS_MIN, 0x3c00, 0},
      {0x0000, 0x8000, CS_MAX, 0x0000, 0}, {0x8000, 0x0000, CS_MIN, 0x8000, 0},
      {0x7c01, 0x7e00, CS_MAX, 0, 1},      {0xbc00, 0x3c00, CS_MAX, 0x3c00, 0},
  };
  check_cases16(CS_FP16, h, sizeof h / sizeof h[0]);
  static const case16_t b[] = {
      {0x7fc0, 0xbf80, CS_MAX, 0xbf80, 0}, {0x8000, 0x0000, CS_MAX, 0x0000, 0},
      {0x0000, 0x8000, CS_MIN, 0x8000, 0}, {0xff80, 0x7fc1, CS_MIN, 0xff80, 0},
  };
  check_cases16(CS_BF16, b, sizeof b / sizeof b[0]);
}

Test(oracle, max_ignores_nan_ranks_among_three)
{
  /* ranks: NaN, NaN, 2 -> 2 everywhere; NaN, -0, +0 -> max +0, min -0. */
  float in[] = {NAN, NAN, NAN, -0.0f, 2.0f, 0.0f}, out[2];
  for (int algo = 0; algo < CS_NALGOS; algo++)
    for (uint32_t r = 0; r < 3; r++) {
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_MAX, 3, 2, in, r, out);
      cr_assert_eq(f32_bits(out[0]), f32_bits(2.0f));
      cr_assert_eq(f32_bits(out[1]), f32_bits(0.0f));
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_MIN, 3, 2, in, r, out);
      cr_assert_eq(f32_bits(out[0]), f32_bits(2.0f));
      cr_assert_eq(f32_bits(out[1]), f32_bits(-0.0f));
    }
}

/* ------------------------------------------------------- ring segments */

/* Ownership probe, nranks >= 3: x[b] = 2^p (p = precision, ulp 2 there),
 * x[b-1] = x[b+1] = 1, the rest 0. The ring fold of segment k starts at
 * k+1 and ends at k, so rank b+1 is folded after b unless k = b:
 *   k == b: (1 + ... + 1) + 2^p = 2^p + 2 (exact);
 *   k != b: 2^p is met with at most one 1 before it (2^p + 1 ties to 2^p)
 *           and the 1 of rank b+1 after it (ties to 2^p again): 2^p.
 * So element e reads 2^p + 2 iff e lies in segment b. `lens` is the
 * hand-derived length of each segment (docs/algorithms.md §4.2 table). */
static void check_owners(cs_dtype_t t, uint32_t n, uint64_t count,
                         const uint64_t *lens)
{
  uint32_t big, one, hit;
  switch (t) {
  case CS_FP16: big = 0x6800, one = 0x3c00, hit = 0x6801; break;
  case CS_BF16: big = 0x4380, one = 0x3f80, hit = 0x4381; break;
  default:
    big = f32_bits(0x1p24f), one = f32_bits(1.0f);
    hit = f32_bits(0x1p24f + 2.0f);
    break;
  }
  uint64_t total = 0;
  for (uint32_t k = 0; k < n; k++)
    total += lens[k];
  cr_assert_eq(total, count, "hand table does not add up");

  void *in = rows_alloc(t, n, count), *out = rows_alloc(t, 1, count);
  for (uint32_t b = 0; b < n; b++) {
    memset(in, 0, (size_t)(n * count) * cs_dtype_size(t));
    for (uint64_t i = 0; i < count; i++) {
      set_bits(t, in, (uint64_t)b * count + i, big);
      set_bits(t, in, (uint64_t)((b + 1) % n) * count + i, one);
      set_bits(t, in, (uint64_t)((b + n - 1) % n) * count + i, one);
    }
    uint32_t ranks[] = {0, n - 1, b};
    for (int ri = 0; ri < 3; ri++) {
      cs_oracle_expect(CS_ALGO_RING, t, CS_SUM, n, count, in, ranks[ri], out);
      uint64_t e = 0;
      for (uint32_t k = 0; k < n; k++)
        for (uint64_t j = 0; j < lens[k]; j++, e++) {
          uint32_t w = k == b ? hit : big, g = bits_at(t, out, e);
          cr_assert_eq(g, w,
                       "%s NR=%u SIZE=%llu owner %u rank %u: element %llu "
                       "(segment %u) got 0x%x want 0x%x",
                       cs_dtype_name(t), n, (unsigned long long)count, b,
                       ranks[ri], (unsigned long long)e, k, g, w);
        }
    }
  }
  free(in);
  free(out);
}

Test(oracle, ring_fp32_segments_match_reference_table)
{
  /* docs/algorithms.md §4.2: FP32 4 1: (0,0)(0,0)(0,0)(0,1); 4 17: 4,4,4,5;
   * 4 65537: 16384,16384,16384,16385. */
  check_owners(CS_FP32, 4, 1, (const uint64_t[]){0, 0, 0, 1});
  check_owners(CS_FP32, 4, 17, (const uint64_t[]){4, 4, 4, 5});
  check_owners(CS_FP32, 4, 65537,
               (const uint64_t[]){16384, 16384, 16384, 16385});
  /* floor(17 i / 3) = 0, 5, 11, 17. */
  check_owners(CS_FP32, 3, 17, (const uint64_t[]){5, 6, 6});
}

Test(oracle, ring_fp16_segments_match_reference_table)
{
  /* docs/algorithms.md §4.2: FP16 4 17: (0,16)(16,0)(16,0)(16,1);
   * 4 33: (0,16)(16,16)(32,0)(32,1); 4 8193: 2064,2048,2048,2033;
   * 4 32769: 8208,8192,8192,8177. */
  check_owners(CS_FP16, 4, 17, (const uint64_t[]){16, 0, 0, 1});
  check_owners(CS_FP16, 4, 33, (const uint64_t[]){16, 16, 0, 1});
  check_owners(CS_FP16, 4, 8193, (const uint64_t[]){2064, 2048, 2048, 2033});
  check_owners(CS_FP16, 4, 32769, (const uint64_t[]){8208, 8192, 8192, 8177});
  /* 3 100: ceil(100 i / 48) * 16 = 48, 80, min(100, 112) -> 48, 32, 20. */
  check_owners(CS_FP16, 3, 100, (const uint64_t[]){48, 32, 20});
}

Test(oracle, ring_bf16_uses_the_aligned_two_byte_segments)
{
  /* Same boundaries as fp16 (16-element aligned), not fp32's 8,8,8,9. */
  check_owners(CS_BF16, 4, 33, (const uint64_t[]){16, 16, 0, 1});
  check_owners(CS_BF16, 4, 8193, (const uint64_t[]){2064, 2048, 2048, 2033});
}

Test(oracle, ring_leaves_segments_empty_when_count_below_nranks)
{
  /* FP32 8 3: floor(3 i / 8) = 0,0,0,1,1,1,2,2,3. */
  check_owners(CS_FP32, 8, 3, (const uint64_t[]){0, 0, 1, 0, 0, 1, 0, 1});
  /* FP32 5 3: floor(3 i / 5) = 0,0,1,1,2,3. */
  check_owners(CS_FP32, 5, 3, (const uint64_t[]){0, 1, 0, 1, 1});
  /* FP16 5 3: B(1) = min(3, ceil(3/80) * 16) = 3: segment 0 owns all. */
  check_owners(CS_FP16, 5, 3, (const uint64_t[]){3, 0, 0, 0, 0});
  /* FP16 16 7: B(i) = min(7, 16) = 7 for i >= 1. */
  check_owners(CS_FP16, 16, 7,
               (const uint64_t[]){7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                  0, 0});
}

/* FP32 NR=4 SIZE=4: floor(4 e / 4) = e, so segment e = {e}. Per element e,
 * with y[j] meaning the input of rank (e + j) % 4 (y[0] is the owner's):
 *   input A: y[1] = 2^24, y[2] = y[3] = 1, y[0] = 0:
 *     ((2^24 + 1) + 1) + 0 = 2^24, whereas a reversed fold y3, y2, y1, y0
 *     gives ((1 + 1) + 2^24) + 0 = 2^24 + 2;
 *   input B: y[1] = y[2] = 1, y[3] = 2^24, y[0] = 0:
 *     ((1 + 1) + 2^24) + 0 = 2^24 + 2 (reversed: 2^24);
 *   input C: y[0] = y[1] = 1, y[2] = 2^24, y[3] = 0:
 *     ((1 + 2^24) + 0) + 1 = 2^24, whereas starting at the owner
 *     (y0, y1, y2, y3) gives ((1 + 1) + 2^24) + 0 = 2^24 + 2. */
Test(oracle, ring_fold_starts_after_owner_and_runs_up_to_it)
{
  const uint32_t n = 4;
  const float ya[4] = {0.0f, 0x1p24f, 1.0f, 1.0f};
  const float yb[4] = {0.0f, 1.0f, 1.0f, 0x1p24f};
  const float yc[4] = {1.0f, 1.0f, 0x1p24f, 0.0f};
  const float *ys[3] = {ya, yb, yc};
  const float want[3] = {0x1p24f, 0x1p24f + 2.0f, 0x1p24f};
  float in[4 * 4], out[4];

  for (int v = 0; v < 3; v++) {
    const float *y = ys[v];
    for (uint32_t e = 0; e < 4; e++)
      for (uint32_t j = 0; j < n; j++)
        in[(e + j) % n * 4 + e] = y[j];
    for (uint32_t rank = 0; rank < n; rank++) {
      cs_oracle_expect(CS_ALGO_RING, CS_FP32, CS_SUM, n, 4, in, rank, out);
      for (uint32_t e = 0; e < 4; e++)
        cr_assert_eq(out[e], want[v], "input %c rank %u element %u: %a",
                     'A' + v, rank, e, (double)out[e]);
    }
  }
}

/* Brief example, FP32 NR=3 SIZE=3 (segment e = {e}): x[0] = 2^24, x[1] =
 * x[2] = 1. Segment 0: (x1 + x2) + x0 = 2^24 + 2; segment 1: (x2 + x0) +
 * x1 = 2^24; segment 2: (x0 + x1) + x2 = 2^24. Same on every rank. */
Test(oracle, ring_three_rank_sum_shows_the_owner_last)
{
  float in[9], out[3];
  for (int e = 0; e < 3; e++)
    in[e] = 0x1p24f, in[3 + e] = 1.0f, in[6 + e] = 1.0f;
  for (uint32_t r = 0; r < 3; r++) {
    cs_oracle_expect(CS_ALGO_RING, CS_FP32, CS_SUM, 3, 3, in, r, out);
    cr_assert_eq(out[0], 0x1p24f + 2.0f);
    cr_assert_eq(out[1], 0x1p24f);
    cr_assert_eq(out[2], 0x1p24f);
  }
}

Test(oracle, ring_results_are_identical_on_every_rank)
{
  const uint32_t ns[] = {3, 5, 7, 16};
  const uint64_t count = 37;
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int o = 0; o < CS_NOPS; o++)
      for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        uint32_t n = ns[ni];
        void *in = rows_alloc((cs_dtype_t)t, n, count);
        void *first = rows_alloc((cs_dtype_t)t, 1, count);
        void *out = rows_alloc((cs_dtype_t)t, 1, count);
        for (uint64_t i = 0; i < n * count; i++)
          set_bits((cs_dtype_t)t, in, i, rng_value((cs_dtype_t)t));
        cs_oracle_expect(CS_ALGO_RING, (cs_dtype_t)t, (cs_op_t)o, n, count, in,
                         0, first);
        for (uint32_t r = 1; r < n; r++) {
          cs_oracle_expect(CS_ALGO_RING, (cs_dtype_t)t, (cs_op_t)o, n, count,
                           in, r, out);
          cr_assert_eq(memcmp(first, out, count * cs_dtype_size((cs_dtype_t)t)),
                       0, "%s %s n=%u rank %u", cs_dtype_name((cs_dtype_t)t),
                       cs_op_name((cs_op_t)o), n, r);
        }
        free(in);
        free(first);
        free(out);
      }
}

/* ------------------------------------------------------------ mesh/host */

/* FP32 NR=3: x = (1, 1, 2^24). Rank m folds its own value first, then the
 * others ascending: rank 0: (1 + 1) + 2^24 = 2^24 + 2; rank 1: same;
 * rank 2: (2^24 + 1) + 1 = 2^24. FP16 likewise with 2048 (ulp 2). */
Test(oracle, mesh_results_differ_between_ranks_for_three_ranks)
{
  float in[3] = {1.0f, 1.0f, 0x1p24f}, out;
  uint16_t h[3] = {0x3c00, 0x3c00, 0x6800}, ho;
  const float want[3] = {0x1p24f + 2.0f, 0x1p24f + 2.0f, 0x1p24f};
  const uint16_t hwant[3] = {0x6801, 0x6801, 0x6800};
  for (int algo = CS_ALGO_MESH; algo <= CS_ALGO_HOST; algo += 2)
    for (uint32_t r = 0; r < 3; r++) {
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_SUM, 3, 1, in, r, &out);
      cr_assert_eq(out, want[r], "algo %d rank %u: %a", algo, r, (double)out);
      cs_oracle_expect((cs_algo_t)algo, CS_FP16, CS_SUM, 3, 1, h, r, &ho);
      cr_assert_eq(ho, hwant[r], "algo %d rank %u: 0x%04x", algo, r, ho);
    }
}

/* FP32 NR=4, two elements:
 *   e0: x = (0, 2^24, 1, 1): every rank 2^24 (rank 0 descending would give
 *       ((0+1)+1)+2^24 = 2^24+2; rank 2 cyclic from itself x2,x3,x0,x1 gives
 *       2^24+2 too);
 *   e1: x = (1, 1, 0, 2^24): ranks 0, 1, 2 fold both 1s before 2^24:
 *       2^24 + 2; rank 3 starts at 2^24: ((2^24+1)+1)+0 = 2^24. */
Test(oracle, mesh_folds_own_value_then_others_ascending)
{
  float in[8] = {0, 1, 0x1p24f, 1, 1, 0, 1, 0x1p24f}, out[2];
  const float w1[4] = {0x1p24f + 2.0f, 0x1p24f + 2.0f, 0x1p24f + 2.0f,
                       0x1p24f};
  for (int algo = CS_ALGO_MESH; algo <= CS_ALGO_HOST; algo += 2)
    for (uint32_t r = 0; r < 4; r++) {
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_SUM, 4, 2, in, r, out);
      cr_assert_eq(out[0], 0x1p24f, "e0 rank %u: %a", r, (double)out[0]);
      cr_assert_eq(out[1], w1[r], "e1 rank %u: %a", r, (double)out[1]);
    }
}

/* ------------------------------------------------------------ twophase */

/* FP32 NR=3, count 3 (one element per chunk), every element x = (1, 1,
 * 2^24): chunk q is folded as rank q folds its own value first, then the
 * others ascending: e0 by rank 0: (1 + 1) + 2^24 = 2^24 + 2; e1 by rank 1:
 * (1 + 1) + 2^24 = 2^24 + 2; e2 by rank 2: (2^24 + 1) + 1 = 2^24. The same
 * on every rank (mesh would give rank 2 the value 2^24 in every element). */
Test(oracle, twophase_folds_each_chunk_in_its_owners_order)
{
  float in[9], out[3];
  for (int e = 0; e < 3; e++)
    in[e] = 1.0f, in[3 + e] = 1.0f, in[6 + e] = 0x1p24f;
  const float want[3] = {0x1p24f + 2.0f, 0x1p24f + 2.0f, 0x1p24f};
  for (uint32_t r = 0; r < 3; r++) {
    cs_oracle_expect(CS_ALGO_TWOPHASE, CS_FP32, CS_SUM, 3, 3, in, r, out);
    for (int e = 0; e < 3; e++)
      cr_assert_eq(out[e], want[e], "rank %u e%d: %a", r, e, (double)out[e]);
  }
}

/* Every rank holds, in chunk q, what mesh's rank q holds there. */
Test(oracle, twophase_chunk_q_is_mesh_rank_qs_chunk_q)
{
  const uint32_t n = 5;
  const uint64_t count = 5 * 13;
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int o = 0; o < CS_NOPS; o++) {
      cs_dtype_t d = (cs_dtype_t)t;
      size_t es = cs_dtype_size(d), c = count / n;
      void *in = rows_alloc(d, n, count), *mesh = rows_alloc(d, n, count),
           *two = rows_alloc(d, 1, count);
      for (uint64_t i = 0; i < n * count; i++)
        set_bits(d, in, i, rng_value(d));
      for (uint32_t q = 0; q < n; q++)
        cs_oracle_expect(CS_ALGO_MESH, d, (cs_op_t)o, n, count, in, q,
                         (char *)mesh + q * count * es);
      for (uint32_t r = 0; r < n; r++) {
        cs_oracle_expect(CS_ALGO_TWOPHASE, d, (cs_op_t)o, n, count, in, r, two);
        for (uint32_t q = 0; q < n; q++)
          cr_assert_eq(memcmp((char *)two + q * c * es,
                              (char *)mesh + (q * count + q * c) * es, c * es),
                       0, "%s %s rank %u chunk %u", cs_dtype_name(d),
                       cs_op_name((cs_op_t)o), r, q);
      }
      free(in);
      free(mesh);
      free(two);
    }
}

/* ------------------------------------------------------------- ring-nb */

/* NR=3, count 3 (one element per chunk), every element x = (1, 1, big):
 * chunk q is the ring's fold on equal chunks, x_q + (x_{q-1} + x_{q+1}).
 * fp32, big = 2^24 (2^24 + 1 rounds to 2^24, ties to even): e0 = 1 +
 * (2^24 + 1) = 2^24; e1 = 1 + (1 + 2^24) = 2^24; e2 = 2^24 + (1 + 1) =
 * 2^24 + 2. fp16, big = 2048 (ulp 2): 2048, 2048, 2050. The same on every
 * rank. The ring's own fp16 segments (16-element boundaries) would put
 * all three elements in segment 0: 2048 in e2 as well. */
Test(oracle, ring_nb_folds_equal_chunks_in_the_rings_order)
{
  float in[9], out[3];
  for (int e = 0; e < 3; e++)
    in[e] = 1.0f, in[3 + e] = 1.0f, in[6 + e] = 0x1p24f;
  const float want[3] = {0x1p24f, 0x1p24f, 0x1p24f + 2.0f};
  for (uint32_t r = 0; r < 3; r++) {
    cs_oracle_expect(CS_ALGO_RING_NB, CS_FP32, CS_SUM, 3, 3, in, r, out);
    for (int e = 0; e < 3; e++)
      cr_assert_eq(out[e], want[e], "fp32 rank %u e%d: %a", r, e,
                   (double)out[e]);
  }
  uint16_t hin[9], hout[3];
  for (int e = 0; e < 3; e++)
    hin[e] = hin[3 + e] = 0x3c00, hin[6 + e] = 0x6800; /* 1, 1, 2048 */
  const uint16_t hwant[3] = {0x6800, 0x6800, 0x6801}; /* 2048, 2048, 2050 */
  for (uint32_t r = 0; r < 3; r++) {
    cs_oracle_expect(CS_ALGO_RING_NB, CS_FP16, CS_SUM, 3, 3, hin, r, hout);
    for (int e = 0; e < 3; e++)
      cr_assert_eq(hout[e], hwant[e], "fp16 rank %u e%d: %#x", r, e, hout[e]);
  }
}

/* fp32 with a count that is a multiple of NR: the ring's segments are
 * the equal chunks (floor(i*S/NR) = i*S/NR), so the two orders agree. */
Test(oracle, ring_nb_is_the_ring_on_fp32_multiples)
{
  const uint32_t n = 5;
  const uint64_t count = 5 * 13;
  for (int o = 0; o < CS_NOPS; o++) {
    void *in = rows_alloc(CS_FP32, n, count), *a = rows_alloc(CS_FP32, 1, count),
         *b = rows_alloc(CS_FP32, 1, count);
    for (uint64_t i = 0; i < n * count; i++)
      set_bits(CS_FP32, in, i, rng_value(CS_FP32));
    for (uint32_t r = 0; r < n; r++) {
      cs_oracle_expect(CS_ALGO_RING, CS_FP32, (cs_op_t)o, n, count, in, r, a);
      cs_oracle_expect(CS_ALGO_RING_NB, CS_FP32, (cs_op_t)o, n, count, in, r, b);
      cr_assert_eq(memcmp(a, b, count * 4), 0, "%s rank %u",
                   cs_op_name((cs_op_t)o), r);
    }
    free(in);
    free(a);
    free(b);
  }
}

Test(oracle, host_matches_mesh_on_every_rank)
{
  const uint32_t n = 5;
  const uint64_t count = 29;
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int o = 0; o < CS_NOPS; o++) {
      cs_dtype_t d = (cs_dtype_t)t;
      void *in = rows_alloc(d, n, count), *a = rows_alloc(d, 1, count),
           *b = rows_alloc(d, 1, count);
      for (uint64_t i = 0; i < n * count; i++)
        set_bits(d, in, i, rng_value(d));
      for (uint32_t r = 0; r < n; r++) {
        cs_oracle_expect(CS_ALGO_MESH, d, (cs_op_t)o, n, count, in, r, a);
        cs_oracle_expect(CS_ALGO_HOST, d, (cs_op_t)o, n, count, in, r, b);
        cr_assert_eq(memcmp(a, b, count * cs_dtype_size(d)), 0);
      }
      free(in);
      free(a);
      free(b);
    }
}

/* --------------------------------------------------------- small worlds */

Test(oracle, two_ranks_are_order_insensitive)
{
  const uint64_t count = 33;
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int o = 0; o < CS_NOPS; o++) {
      cs_dtype_t d = (cs_dtype_t)t;
      void *in = rows_alloc(d, 2, count), *ref = rows_alloc(d, 1, count),
           *out = rows_alloc(d, 1, count);
      for (uint64_t i = 0; i < 2 * count; i++)
        set_bits(d, in, i, rng_value(d));
      cs_oracle_expect(CS_ALGO_RING, d, (cs_op_t)o, 2, count, in, 0, ref);
      for (int algo = 0; algo < CS_NALGOS; algo++)
        for (uint32_t r = 0; r < 2; r++) {
          cs_oracle_expect((cs_algo_t)algo, d, (cs_op_t)o, 2, count, in, r,
                           out);
          cr_assert_eq(memcmp(ref, out, count * cs_dtype_size(d)), 0,
                       "%s %s algo %d rank %u", cs_dtype_name(d),
                       cs_op_name((cs_op_t)o), algo, r);
        }
      free(in);
      free(ref);
      free(out);
    }
  /* And one hand value: fp32 2^24 + 1 ties to 2^24 in either order. */
  float x[2] = {0x1p24f, 1.0f}, y;
  for (int algo = 0; algo < CS_NALGOS; algo++)
    for (uint32_t r = 0; r < 2; r++) {
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_SUM, 2, 1, x, r, &y);
      cr_assert_eq(y, 0x1p24f);
    }
}

Test(oracle, single_rank_returns_input_bits_unchanged)
{
  /* Including a signalling NaN and a NaN payload, which any op would
   * quieten, and -0. */
  uint16_t h[] = {0x7c01, 0xfe55, 0x8000, 0x3c00, 0x0001, 0x7bff}, ho[6];
  uint32_t f[] = {0x7f800001u, 0xffc12345u, 0x80000000u, 0x3f800000u}, fo[4];
  for (int algo = 0; algo < CS_NALGOS; algo++)
    for (int o = 0; o < CS_NOPS; o++) {
      memset(ho, 0xaa, sizeof ho);
      cs_oracle_expect((cs_algo_t)algo, CS_FP16, (cs_op_t)o, 1, 6, h, 0, ho);
      cr_assert_eq(memcmp(h, ho, sizeof h), 0);
      memset(ho, 0xaa, sizeof ho);
      cs_oracle_expect((cs_algo_t)algo, CS_BF16, (cs_op_t)o, 1, 6, h, 0, ho);
      cr_assert_eq(memcmp(h, ho, sizeof h), 0);
      memset(fo, 0xaa, sizeof fo);
      cs_oracle_expect((cs_algo_t)algo, CS_FP32, (cs_op_t)o, 1, 4, f, 0, fo);
      cr_assert_eq(memcmp(f, fo, sizeof f), 0);
    }
}

Test(oracle, writes_exactly_count_elements)
{
  const uint32_t ns[] = {1, 2, 3, 4};
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int algo = 0; algo < CS_NALGOS; algo++)
      for (size_t ni = 0; ni < 4; ni++)
        for (uint64_t count = 0; count < 40; count += 13) {
          cs_dtype_t d = (cs_dtype_t)t;
          uint32_t n = ns[ni], sz = cs_dtype_size(d);
          void *in = rows_alloc(d, n, count);
          unsigned char out[64 * 4];
          memset(out, 0xab, sizeof out);
          cs_oracle_expect((cs_algo_t)algo, d, CS_SUM, n, count, in, n - 1,
                           out);
          for (size_t i = 0; i < count * sz; i++)
            cr_assert_eq(out[i], 0, "all-zero inputs sum to +0");
          for (size_t i = count * sz; i < sizeof out; i++)
            cr_assert_eq(out[i], 0xab, "%s algo %d n=%u count=%llu: byte %zu",
                         cs_dtype_name(d), algo, n, (unsigned long long)count,
                         i);
          free(in);
        }
}

/* ------------------------------------------------- reference test inputs */

/* docs/algorithms.md §7 inputs x_r[i] = 1 + 0.125 r + 0.0625 (i mod 5), all in
 * [1, 2) for r < 4: bits 0x3c00 | (x - 1) * 1024 (fp16),
 * 0x3f80 | (x - 1) * 128 (bf16). Every partial sum of 2-4 ranks is a
 * multiple of 1/16 below 8, exact in fp16 (11 bits), bf16 (8) and fp32, so
 * each rank gets the exact sum
 *   N (1 + 0.0625 (i mod 5)) + 0.125 N (N - 1) / 2. */
static void fill_pto(cs_dtype_t t, uint32_t n, uint64_t count, void *in)
{
  for (uint32_t r = 0; r < n; r++)
    for (uint64_t i = 0; i < count; i++) {
      double frac = 0.125 * r + 0.0625 * (double)(i % 5);
      uint32_t u = t == CS_FP16   ? 0x3c00u | (uint32_t)(frac * 1024)
                   : t == CS_BF16 ? 0x3f80u | (uint32_t)(frac * 128)
                                  : f32_bits((float)(1.0 + frac));
      set_bits(t, in, (uint64_t)r * count + i, u);
    }
}

Test(oracle, reference_inputs_sum_exactly_for_two_to_four_ranks)
{
  const uint64_t counts[] = {1, 17, 8193};
  for (int t = 0; t < CS_NDTYPES; t++)
    for (uint32_t n = 2; n <= 4; n++)
      for (int ci = 0; ci < 3; ci++) {
        cs_dtype_t d = (cs_dtype_t)t;
        uint64_t count = counts[ci];
        void *in = rows_alloc(d, n, count), *out = rows_alloc(d, 1, count);
        fill_pto(d, n, count, in);
        for (int algo = 0; algo < CS_NALGOS; algo++)
          for (uint32_t r = 0; r < n; r++) {
            cs_oracle_expect((cs_algo_t)algo, d, CS_SUM, n, count, in, r, out);
            for (uint64_t i = 0; i < count; i++) {
              double want = n * (1.0 + 0.0625 * (double)(i % 5)) +
                            0.125 * n * (n - 1) / 2.0;
              double got = cs_oracle_decode(d, out, i);
              cr_assert_eq(got, want, "%s n=%u algo %d rank %u i=%llu: %g",
                           cs_dtype_name(d), n, algo, r,
                           (unsigned long long)i, got);
            }
          }
        free(in);
        free(out);
      }
}

/* 64 ranks, 65537 elements (the largest reference-like case): fp32 sum of
 * 1 + 0.125 r + 0.0625 j (j = i mod 5) over r < 64 is
 * 64 + 0.125 * 2016 + 4 j = 316 + 4 j, every partial sum exact. */
Test(oracle, sums_sixty_four_ranks_exactly, .timeout = 60)
{
  const uint32_t n = 64;
  const uint64_t count = 65537;
  float *in = rows_alloc(CS_FP32, n, count), *out = rows_alloc(CS_FP32, 1, count);
  for (uint32_t r = 0; r < n; r++)
    for (uint64_t i = 0; i < count; i++)
      in[r * count + i] = 1.0f + 0.125f * (float)r + 0.0625f * (float)(i % 5);
  for (int algo = CS_ALGO_MESH; algo <= CS_ALGO_RING; algo++) {
    cs_oracle_expect((cs_algo_t)algo, CS_FP32, CS_SUM, n, count, in, n - 1,
                     out);
    for (uint64_t i = 0; i < count; i++)
      cr_assert_eq(out[i], 316.0f + 4.0f * (float)(i % 5), "algo %d i=%llu",
                   algo, (unsigned long long)i);
  }
  free(in);
  free(out);
}

/* ------------------------------------------------------ float64, checks */

Test(oracle, f64_reduces_without_rounding_to_the_dtype)
{
  /* fp32 (2^24, 1, 1): double keeps 2^24 + 2 whatever the order. */
  float x[3] = {0x1p24f, 1.0f, 1.0f};
  cr_assert_eq(cs_oracle_f64(CS_FP32, CS_SUM, 3, 1, x, 0), 0x1p24 + 2.0);
  /* fp16 (2048, 1, 1): 2050. And 65504 + 65504 stays finite in double. */
  uint16_t h[6] = {0x6800, 0x7bff, 0x3c00, 0x7bff, 0x3c00, 0x0000};
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_SUM, 3, 2, h, 0), 2050.0);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_SUM, 3, 2, h, 1), 131008.0);

  /* Reference inputs, 3 ranks, element 0: 1, 1.125, 1.25; element 3:
   * 1.1875, 1.3125, 1.4375. */
  uint16_t p[3 * 4];
  fill_pto(CS_FP16, 3, 4, p);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_PROD, 3, 4, p, 0), 1.40625);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_PROD, 3, 4, p, 3), 2.240478515625);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_SUM, 3, 4, p, 3), 3.9375);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_MAX, 3, 4, p, 3), 1.4375);
  cr_assert_eq(cs_oracle_f64(CS_FP16, CS_MIN, 3, 4, p, 3), 1.1875);

  /* Ascending rank order, visible in double: (1 + 2^60) - 2^60 = 0, while
   * descending would give (-2^60 + 2^60) + 1 = 1. */
  float big[3] = {1.0f, 0x1p60f, -0x1p60f};
  cr_assert_eq(cs_oracle_f64(CS_FP32, CS_SUM, 3, 1, big, 0), 0.0);

  /* NaN loses to numbers; -0 < +0. */
  float q[4] = {NAN, -0.0f, 2.0f, 0.0f};
  cr_assert_eq(cs_oracle_f64(CS_FP32, CS_MAX, 2, 2, q, 0), 2.0);
  cr_assert_eq(cs_oracle_f64(CS_FP32, CS_MIN, 2, 2, q, 0), 2.0);
  double z = cs_oracle_f64(CS_FP32, CS_MIN, 2, 2, q, 1);
  cr_assert(z == 0.0 && signbit(z));
  z = cs_oracle_f64(CS_FP32, CS_MAX, 2, 2, q, 1);
  cr_assert(z == 0.0 && !signbit(z));
}

Test(oracle, tolerance_matches_reference_values)
{
  double rt = -1, at = -1;
  cs_oracle_tolerance(CS_FP32, &rt, &at);
  cr_assert(rt == 1e-5 && at == 1e-8);
  cs_oracle_tolerance(CS_FP16, &rt, &at);
  cr_assert(rt == 2e-2 && at == 2e-2);
  cs_oracle_tolerance(CS_BF16, &rt, &at);
  cr_assert(rt == 5e-2 && at == 5e-2);
}

Test(oracle, same_accepts_equal_bits_and_any_two_nans)
{
  uint32_t fa[] = {0x3f800000u, 0x7fc00000u, 0x00000000u, 0x7f800000u,
                   0x3f800000u};
  uint32_t fb[] = {0x3f800000u, 0xffc00001u, 0x80000000u, 0x7f800001u,
                   0x3f800001u};
  const int fw[] = {1, 1, 0, 0, 0};
  for (uint64_t i = 0; i < 5; i++)
    cr_assert_eq(cs_oracle_same(CS_FP32, fa, fb, i), fw[i], "fp32 %llu",
                 (unsigned long long)i);

  uint16_t ha[] = {0x3c00, 0x7e00, 0x0000, 0x7c00, 0x7c01};
  uint16_t hb[] = {0x3c00, 0x7c01, 0x8000, 0x7c01, 0xfd00};
  const int hw[] = {1, 1, 0, 0, 1};
  for (uint64_t i = 0; i < 5; i++)
    cr_assert_eq(cs_oracle_same(CS_FP16, ha, hb, i), hw[i], "fp16 %llu",
                 (unsigned long long)i);

  /* 0x7c01 is a NaN in fp16 but 0x7c01 bf16 is a finite number. */
  uint16_t ba[] = {0x7fc0, 0x7f80, 0x7c01, 0x7c00};
  uint16_t bb[] = {0xff81, 0x7f81, 0x7c02, 0x7c00};
  const int bw[] = {1, 0, 0, 1};
  for (uint64_t i = 0; i < 4; i++)
    cr_assert_eq(cs_oracle_same(CS_BF16, ba, bb, i), bw[i], "bf16 %llu",
                 (unsigned long long)i);
}

Test(oracle, decode_reads_element_i_of_each_dtype)
{
  uint16_t h[] = {0x3c00, 0x4000, 0x4200};
  float f[] = {1.0f, -2.5f, 3.0f};
  uint16_t b[] = {0x3f80, 0xc020, 0x4040};
  cr_assert_eq(cs_oracle_decode(CS_FP16, h, 2), 3.0);
  cr_assert_eq(cs_oracle_decode(CS_FP32, f, 1), -2.5);
  cr_assert_eq(cs_oracle_decode(CS_BF16, b, 1), -2.5);
  cr_assert_eq(cs_oracle_decode(CS_BF16, b, 2), 3.0);
}

/* ------------------------------------------------ the verification path */

/* Bits of a random element: mostly ordinary values, with NaN, ±0, ±inf,
 * subnormals and huge values mixed in (overflow and underflow paths). */
static uint32_t any_bits(cs_dtype_t t, uint64_t *s)
{
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  uint32_t u = (uint32_t)(*s >> 16), kind = (uint32_t)(*s >> 56) % 16;
  int w = t == CS_FP32 ? 32 : 16;
  uint32_t sign = (u & 1) << (w - 1), emask = t == CS_FP16 ? 0x7c00u
                                     : t == CS_BF16 ? 0x7f80u : 0x7f800000u;
  uint32_t mmask = t == CS_FP16 ? 0x3ffu : t == CS_BF16 ? 0x7fu : 0x7fffffu;
  switch (kind) {
  case 0: return sign | emask | (mmask & (u >> 3) ? mmask & (u >> 3) : 1); /* NaN */
  case 1: return sign;                            /* ±0 */
  case 2: return sign | emask;                    /* ±inf */
  case 3: return sign | (mmask & (u >> 5));       /* subnormal */
  case 4: return sign | (emask - (mmask + 1)) | (mmask & (u >> 2)); /* huge */
  default: /* ordinary: exponent near 1.0 */
    if (t == CS_FP32)
      return sign | (uint32_t)(120 + (u >> 4) % 16) << 23 | (u >> 7 & mmask);
    if (t == CS_BF16)
      return sign | (uint32_t)(120 + (u >> 4) % 16) << 7 | (u >> 7 & mmask);
    return sign | (uint32_t)(10 + (u >> 4) % 10) << 10 | (u >> 7 & mmask);
  }
}

static void verification_path_cases(void);

/* Both routes of the fp16 folds (F16C where the CPU has it, and the bits
 * everywhere) against the oracle. */
Test(oracle, the_verification_path_gives_the_oracles_bits_in_every_case,
     .timeout = 240)
{
  for (int port = 0; port < 2; port++) {
    cs_oracle_force_portable(port);
    verification_path_cases();
  }
  cs_oracle_force_portable(0);
}

/* The float64 figures of the verification path against the definition,
 * element by element: the reduction (cs_oracle_f64), the largest absolute
 * and relative errors where both are finite, and the tolerance failures
 * (a finite error over atol + rtol|ref|, or an unequal non-finite pair
 * that is not two NaNs). */
Test(oracle, the_verification_paths_float64_figures_follow_the_definition,
     .timeout = 120)
{
  const uint32_t n = 5;
  const uint64_t count = 700;
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int t = 0; t < CS_NDTYPES; t++)
    for (int op = 0; op < CS_NOPS; op++) {
      uint32_t es = t == CS_FP32 ? 4 : 2;
      uint8_t *in = malloc(n * count * es), *got = malloc(n * count * es);
      void *scratch = malloc(cs_oracle_scratch_bytes(n));
      cr_assert(in && got && scratch);
      const void *inr[5], *gotr[5];
      for (uint64_t i = 0; i < n * count; i++) {
        uint32_t b = any_bits((cs_dtype_t)t, &seed);
        memcpy(in + i * es, &b, es);
        b = any_bits((cs_dtype_t)t, &seed);
        memcpy(got + i * es, &b, es);
      }
      for (uint32_t r = 0; r < n; r++) {
        inr[r] = in + r * count * es;
        gotr[r] = got + r * count * es;
      }
      double rtol, atol, mabs = 0, mrel = 0;
      uint64_t fail = 0;
      cs_oracle_tolerance((cs_dtype_t)t, &rtol, &atol);
      for (uint64_t i = 0; i < count; i++) {
        double f = cs_oracle_f64((cs_dtype_t)t, (cs_op_t)op, n, count, in, i);
        for (uint32_t r = 0; r < n; r++) {
          double g = cs_oracle_decode((cs_dtype_t)t, gotr[r], i);
          double err = fabs(g - f);
          if (isfinite(f) && isfinite(g)) {
            mabs = err > mabs ? err : mabs;
            if (f != 0 && err / fabs(f) > mrel)
              mrel = err / fabs(f);
            fail += err > atol + rtol * fabs(f);
          } else {
            fail += !(isnan(f) && isnan(g)) && g != f;
          }
        }
      }
      cs_oracle_run_t o = {CS_ALGO_MESH, (cs_dtype_t)t, (cs_op_t)op,
                           CS_MINMAX_IEEE, n, count, inr, gotr, 1, rtol, atol};
      cs_oracle_tally_t tl = {.bad_rank = -1};
      cs_oracle_check_range(&o, 0, 300, scratch, &tl);
      cs_oracle_check_range(&o, 300, count, scratch, &tl);
      cr_assert(tl.max_abs == mabs && tl.max_rel == mrel && tl.tol_fail == fail,
                "dtype %d op %d: max abs %g/%g, rel %g/%g, fail %llu/%llu", t,
                op, tl.max_abs, mabs, tl.max_rel, mrel,
                (unsigned long long)tl.tol_fail, (unsigned long long)fail);
      free(in);
      free(got);
      free(scratch);
    }
}

static void verification_path_cases(void)
{
  static const uint32_t ns[] = {1, 2, 3, 5, 8};
  const uint64_t count = 700; /* several blocks and ragged ring segments */
  uint64_t seed = 88172645463325252ull;
  for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
    for (int t = 0; t < CS_NDTYPES; t++) {
      uint32_t n = ns[ni], es = t == CS_FP32 ? 4 : 2;
      uint8_t *in = malloc(n * count * es), *got = malloc(n * count * es);
      void *scratch = malloc(cs_oracle_scratch_bytes(n));
      cr_assert(in && got && scratch);
      const void *inr[8], *gotr[8];
      for (uint32_t r = 0; r < n; r++) {
        inr[r] = in + r * count * es;
        gotr[r] = got + r * count * es;
      }
      for (uint64_t i = 0; i < n * count; i++) {
        uint32_t b = any_bits((cs_dtype_t)t, &seed);
        memcpy(in + i * es, &b, es); /* little-endian: the low bytes */
      }
      for (int a = 0; a < CS_NALGOS; a++)
        for (int op = 0; op < CS_NOPS; op++)
          for (int mm = 0; mm < CS_NMINMAX; mm++) {
            for (uint32_t r = 0; r < n; r++)
              cs_oracle_expect_mm((cs_algo_t)a, (cs_dtype_t)t, (cs_op_t)op,
                                  (cs_minmax_t)mm, n, count, in, r,
                                  got + r * count * es);
            cs_oracle_run_t o = {(cs_algo_t)a, (cs_dtype_t)t, (cs_op_t)op,
                                 (cs_minmax_t)mm, n, count, inr, gotr, 0, 0, 0};
            cs_oracle_tally_t tl = {.bad_rank = -1};
            cs_oracle_check_range(&o, 0, 300, scratch, &tl);
            cs_oracle_check_range(&o, 300, count, scratch, &tl);
            cr_assert_eq(tl.wrong, 0, "n=%u %s %s %s %s: %llu differ, first "
                         "rank %lld index %llu", n,
                         cs_algo_name((cs_algo_t)a),
                         t == 0 ? "fp32" : t == 1 ? "fp16" : "bf16",
                         op == 0 ? "sum" : op == 1 ? "max" : op == 2 ? "min" : "prod",
                         mm == 0 ? "ieee" : mm == 1 ? "propagate" : "pto",
                         (unsigned long long)tl.wrong, (long long)tl.bad_rank,
                         (unsigned long long)tl.bad_i);
            /* One flipped low bit of a non-NaN result is found, where it is. */
            uint32_t r = n - 1;
            uint64_t i = 0;
            for (; i < count; i++) {
              uint32_t b = 0;
              memcpy(&b, got + (r * count + i) * es, es);
              uint32_t e = t == CS_FP16 ? 0x7c00u : t == CS_BF16 ? 0x7f80u : 0x7f800000u;
              if ((b & e) != e && (b & (e | 1)) != 0)
                break;
            }
            if (i == count)
              continue;
            got[(r * count + i) * es] ^= 1;
            tl = (cs_oracle_tally_t){.bad_rank = -1};
            cs_oracle_check_range(&o, 0, count, scratch, &tl);
            cr_assert(tl.wrong == 1 && tl.bad_rank == r && tl.bad_i == i,
                      "a flipped bit at rank %u index %llu: %llu wrong, rank "
                      "%lld index %llu", r, (unsigned long long)i,
                      (unsigned long long)tl.wrong, (long long)tl.bad_rank,
                      (unsigned long long)tl.bad_i);
          }
      free(in);
      free(got);
      free(scratch);
    }
}
