/*
 * oracle.c - the independent reference of the allreduce results.
 *
 * Owns: decoding of fp32 / fp16 / bf16 bits to double and encoding back
 * with round to nearest, ties to even; one binary op in the dtype; the ring
 * segment boundaries (docs/algorithms.md §4.2); the association orders
 * (§6: ring, mesh, host); a float64 reduction and the tolerances of the
 * original's tests (§7).
 *
 * Does not own, and deliberately shares no code with: the kernels
 * (reduce.c), the algorithms (allreduce.c) or their index math. Only
 * dtype.h (enum values, element sizes) is common. The reference
 * (cs_oracle_expect*) is serial, scalar, integer/frexp/ldexp arithmetic:
 * slow but obviously right. The verification path (cs_oracle_check_range,
 * "block checking" below) computes the same bits fast, in vector
 * registers, and is held to the reference bit for bit by the tests.
 *
 * Called by the tests and by `collsim` verification to produce the bits
 * every rank must end with.
 *
 * Storage formats handled (one generic codec, parameterised by E and M):
 *
 *     dtype  bits  | sign | exponent (E) | mantissa (M) | bias
 *     fp32    32   |  31  |  30..23 (8)  |  22..0 (23)  | 127
 *     fp16    16   |  15  |  14..10 (5)  |   9..0 (10)  |  15
 *     bf16    16   |  15  |  14..7  (8)  |   6..0 (7)   | 127
 *
 * exponent 0: zero / subnormal (m * 2^(1-bias-M)); exponent all ones:
 * inf (m = 0) or NaN (m != 0); otherwise (2^M + m) * 2^(e-bias-M).
 */
#include "oracle.h"
#include "registry.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* Whether algorithm a folds in the ring's order (the same bits on every
 * rank), as its descriptor declares; else the own value first, by every
 * rank (mesh, host) or by the owner of the chunk (owner_order). */
static int ring_order(cs_algo_t a)
{
  cs_fold_t f = cs_algo_desc(a)->fold;
  return f == CS_FOLD_RING || f == CS_FOLD_RING_EQUAL;
}

/* A ring order on N equal chunks (count / N elements each; the algorithm
 * refuses a count that is not a multiple) instead of §4.2's segments. */
static int equal_chunks(cs_algo_t a)
{
  return cs_algo_desc(a)->fold == CS_FOLD_RING_EQUAL;
}

static int owner_order(cs_algo_t a)
{
  return cs_algo_desc(a)->fold == CS_FOLD_OWNER_FIRST;
}

/* Two rings over N equal chunks (CS_FOLD_RING_BIDIR): the first half of
 * each chunk folded clockwise as the ring folds, the second half
 * counter-clockwise. */
static int two_rings(cs_algo_t a)
{
  return cs_algo_desc(a)->fold == CS_FOLD_RING_BIDIR;
}

/* CS_FOLD_RING_BIDIR: the chunk q of element i (count / nranks elements
 * each, the last one taking any rest) and, in *second, whether i lies in
 * its second half (the chunk's elements from half its width on). */
static uint32_t half_of(uint32_t nranks, uint64_t count, uint64_t i,
                        int *second)
{
  uint64_t w = count / nranks;
  uint64_t q = w ? i / w : nranks - 1u;
  if (q >= nranks)
    q = nranks - 1u;
  *second = i - q * w >= w / 2u;
  return (uint32_t)q;
}

/* CS_FOLD_OWNER_FIRST: the rank whose chunk element i is (count / nranks
 * elements each; the algorithm refuses a count that is not a multiple). */
static uint32_t owner_of(uint32_t nranks, uint64_t count, uint64_t i)
{
  uint64_t w = count / nranks;
  uint64_t q = w ? i / w : 0;
  return q < nranks ? (uint32_t)q : nranks - 1;
}

/* ---------------------------------------------------------------- codec */

typedef struct fmt {
  int ebits; /* exponent field width, bits */
  int mbits; /* stored mantissa width, bits (precision p = mbits + 1) */
} fmt_t;

static fmt_t fmt_of(cs_dtype_t t)
{
  switch (t) {
  case CS_FP16: return (fmt_t){5, 10};
  case CS_BF16: return (fmt_t){8, 7};
  default: return (fmt_t){8, 23};
  }
}

/* Bits of element i of buf, zero-extended to 32 bits. */
static uint32_t load_bits(cs_dtype_t t, const void *buf, uint64_t i)
{
  if (t == CS_FP32) {
    uint32_t u;
    memcpy(&u, (const unsigned char *)buf + i * 4u, 4);
    return u;
  }
  uint16_t h;
  memcpy(&h, (const unsigned char *)buf + i * 2u, 2);
  return h;
}

static void store_bits(cs_dtype_t t, void *buf, uint64_t i, uint32_t u)
{
  if (t == CS_FP32) {
    memcpy((unsigned char *)buf + i * 4u, &u, 4);
  } else {
    uint16_t h = (uint16_t)u;
    memcpy((unsigned char *)buf + i * 2u, &h, 2);
  }
}

/* Exact value of a bit pattern of format f. Every finite value of the three
 * formats is a double (at most 24 significant bits, exponents -149..127). */
static double decode(fmt_t f, uint32_t u)
{
  const uint32_t emask = (1u << f.ebits) - 1u;
  const uint32_t mmask = (1u << f.mbits) - 1u;
  const int bias = (1 << (f.ebits - 1)) - 1;
  const uint32_t s = u >> (f.ebits + f.mbits) & 1u;
  const uint32_t e = u >> f.mbits & emask;
  const uint32_t m = u & mmask;
  double v;

  if (e == 0)
    v = ldexp((double)m, 1 - bias - f.mbits);
  else if (e == emask)
    v = m ? NAN : INFINITY;
  else
    v = ldexp((double)(m | (mmask + 1u)), (int)e - bias - f.mbits);
  return s ? -v : v;
}

/* Nearest pattern of format f to x, ties to even; overflow to +-inf, results
 * below half the smallest subnormal to a zero of x's sign; NaN to the quiet
 * NaN with only the top mantissa bit set (sign 0). */
static uint32_t encode(fmt_t f, double x)
{
  const uint32_t emask = (1u << f.ebits) - 1u;
  const int bias = (1 << (f.ebits - 1)) - 1;
  const int emin = 1 - bias; /* exponent of the smallest normal */
  const uint32_t sign = signbit(x) ? 1u << (f.ebits + f.mbits) : 0u;
  const uint32_t inf = emask << f.mbits;

  if (isnan(x))
    return inf | 1u << (f.mbits - 1);
  x = fabs(x);
  if (isinf(x))
    return sign | inf;
  if (x == 0.0)
    return sign;

  int fe;
  (void)frexp(x, &fe); /* x = frac * 2^fe, frac in [0.5, 1) */
  int ex = fe - 1;     /* x in [2^ex, 2^(ex+1)) */
  /* Quantum (weight of the last mantissa bit) of the result: normal
   * numbers keep M bits after the leading one, subnormals share emin's. */
  int q = (ex < emin ? emin : ex) - f.mbits;
  double scaled = ldexp(x, -q); /* exact: a power-of-two scaling, < 2^(M+1) */
  double ip = floor(scaled);
  double rest = scaled - ip; /* exact */
  uint64_t m = (uint64_t)ip;

  if (rest > 0.5 || (rest == 0.5 && (m & 1u)))
    m++;
  if (ex < emin)
    /* Subnormal: m <= 2^M, and m == 2^M is exactly the smallest normal's
     * pattern (exponent field 1, mantissa 0). m == 0 is the signed zero. */
    return sign | (uint32_t)m;
  if (m == (2ull << f.mbits)) { /* carry into the next binade */
    m >>= 1;
    ex++;
  }
  if (ex + bias >= (int)emask)
    return sign | inf;
  return sign | (uint32_t)(ex + bias) << f.mbits |
         ((uint32_t)m & ((1u << f.mbits) - 1u));
}

/* x rounded to the dtype, as a double. */
static double round_to(fmt_t f, double x)
{
  return decode(f, encode(f, x));
}

/* ------------------------------------------------------------------ ops */

/* IEEE 754-2019 maximumNumber / minimumNumber: a NaN loses to a number,
 * NaN only if both are; +0 > -0 whatever the operand order. */
static double max_num(double a, double b)
{
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  if (a == 0.0 && b == 0.0)
    return signbit(a) ? b : a;
  return a > b ? a : b;
}

static double min_num(double a, double b)
{
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  if (a == 0.0 && b == 0.0)
    return signbit(a) ? a : b;
  return a < b ? a : b;
}

/* The --minmax modes other than ieee, written from their definitions
 * (dtype.h), with `a` the first operand (the reference's local value):
 * propagate: NaN when either operand is NaN, otherwise as ieee; pto:
 * C++'s std::max(a, b) = a < b ? b : a and std::min(a, b) = b < a ? b : a
 * (pto-isa's CPU simulator): a NaN operand or a tie (±0) gives a. */
static double minmax(cs_op_t op, cs_minmax_t mm, double a, double b)
{
  int max = op == CS_MAX;
  if (mm == CS_MINMAX_PTO)
    return max ? (a < b ? b : a) : (b < a ? b : a);
  if (mm == CS_MINMAX_PROPAGATE && (isnan(a) || isnan(b)))
    return NAN;
  return max ? max_num(a, b) : min_num(a, b);
}

/* a op b in double, no rounding to the dtype; a the first operand. */
static double apply_mm(cs_op_t op, cs_minmax_t mm, double a, double b)
{
  switch (op) {
  case CS_SUM: return a + b;
  case CS_PROD: return a * b;
  default: return minmax(op, mm, a, b);
  }
}

static double apply(cs_op_t op, double a, double b)
{
  return apply_mm(op, CS_MINMAX_IEEE, a, b);
}

/* a op b with a, b values of format f, rounded once to f (RNE).
 *
 * Why computing in double first gives the correctly rounded result:
 *  - Prod: the product of two values of at most 24 significant bits has at
 *    most 48, and its exponent (>= 2^-298, <= 2^256) is in double's normal
 *    range, so a*b is exact in double; the only rounding is ours.
 *  - Sum, fp16: both operands are multiples of 2^-24 below 2^16, so the
 *    sum needs at most 41 bits and is exact in double.
 *  - Sum, bf16 / fp32: a+b may round in double, but double's 53 bits are
 *    >= 2p+2 (18 for bf16, 50 for fp32), so rounding to double and then to
 *    the dtype equals rounding once (Figueroa's double-rounding theorem);
 *    sums landing in the subnormal range are exact anyway.
 *  - Max / Min return one operand unchanged; no rounding happens.
 * Overflow is decided by encode() on the exact (or innocuously rounded)
 * double, so the inf boundary is exact too. */
static double op_round(fmt_t f, cs_op_t op, cs_minmax_t mm, double a,
                       double b)
{
  return round_to(f, apply_mm(op, mm, a, b));
}

/* ------------------------------------------------------------- segments */

/* Boundary B(i) of docs/algorithms.md §4.2, 0 <= i <= nranks, SIZE = count:
 *   fp32:        B(i) = floor(i*SIZE / NR)
 *   fp16, bf16:  B(i) = min(SIZE, ceil(i*SIZE / (16*NR)) * 16)
 * The product i*SIZE is formed in 128 bits, so any count and nranks are
 * safe (SIZE up to 2^40 and NR up to 256 need only 48 bits). Segment k is
 * [B(k), B(k+1)); B is non-decreasing, B(0) = 0 and B(NR) = SIZE.
 * eq (an algorithm of equal chunks, equal_chunks()): B(i) = i*SIZE/NR for
 * every dtype. */
static uint64_t seg_bound(cs_dtype_t t, int eq, uint32_t nranks,
                          uint64_t count, uint32_t i)
{
  unsigned __int128 num = (unsigned __int128)i * count;

  if (t == CS_FP32 || eq) /* eq: N equal chunks, i*count/N exactly */
    return (uint64_t)(num / nranks);
  unsigned __int128 den = (unsigned __int128)16u * nranks;
  unsigned __int128 b = (num + den - 1u) / den * 16u;
  return b < count ? (uint64_t)b : count;
}

/* ---------------------------------------------------------------- folds */

/* Element i of rank r's input row. */
static double x_at(cs_dtype_t t, fmt_t f, const void *const *in,
                   uint64_t count, uint32_t r, uint64_t i)
{
  (void)count;
  return decode(f, load_bits(t, in[r], i));
}

/* The rank after r on the ring, or before it when `down`. */
static uint32_t ring_next(uint32_t nranks, uint32_t r, int down)
{
  if (down)
    return r == 0u ? nranks - 1u : r - 1u;
  return r + 1u == nranks ? 0u : r + 1u;
}

/* Ring, element i of segment k: x[k] op (... op (x[k+2] op x[k+1])):
 * each rank on the way folds its own value (the first operand) into the
 * partial it received. down: the mirrored ring, x[k] op (... op (x[k-2]
 * op x[k-1])). */
static double fold_ring(cs_dtype_t t, fmt_t f, cs_op_t op, cs_minmax_t mm,
                        uint32_t nranks, uint64_t count, const void *const *in,
                        uint32_t k, int down, uint64_t i)
{
  uint32_t r = ring_next(nranks, k, down);
  double acc = x_at(t, f, in, count, r, i);

  for (uint32_t step = 1; step < nranks; step++) {
    r = ring_next(nranks, r, down);
    acc = op_round(f, op, mm, x_at(t, f, in, count, r, i), acc);
  }
  return acc;
}

/* Mesh / host on rank m: ((x[m] op x[p1]) op x[p2]) ..., p1 < p2 < ...;
 * the accumulator is the first operand. */
static double fold_mesh(cs_dtype_t t, fmt_t f, cs_op_t op, cs_minmax_t mm,
                        uint32_t nranks, uint64_t count, const void *const *in,
                        uint32_t m, uint64_t i)
{
  double acc = x_at(t, f, in, count, m, i);

  for (uint32_t p = 0; p < nranks; p++)
    if (p != m)
      acc = op_round(f, op, mm, acc, x_at(t, f, in, count, p, i));
  return acc;
}

void cs_oracle_expect(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                      uint32_t nranks, uint64_t count, const void *in,
                      uint32_t rank, void *out)
{
  cs_oracle_expect_mm(algo, t, op, CS_MINMAX_IEEE, nranks, count, in, rank,
                      out);
}

/* The ring segment k that element i belongs to: the largest k with
 * B(k) <= i among the non-empty segments. O(nranks). */
static uint32_t ring_seg_of(cs_dtype_t t, int eq, uint32_t nranks,
                            uint64_t count, uint64_t i)
{
  uint32_t k = 0;
  for (uint32_t j = 0; j < nranks; j++)
    if (seg_bound(t, eq, nranks, count, j) <= i &&
        seg_bound(t, eq, nranks, count, j + 1u) > i)
      k = j;
  return k;
}

uint32_t cs_oracle_elem_rows(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                             cs_minmax_t mm, uint32_t nranks, uint64_t count,
                             const void *const *rows, uint32_t rank,
                             uint64_t i)
{
  assert(cs_algo_desc(algo) && (unsigned)t < CS_NDTYPES);
  assert((unsigned)op < CS_NOPS && (unsigned)mm < CS_NMINMAX);
  assert(nranks >= 1 && rank < nranks && i < count);
  const fmt_t f = fmt_of(t);
  if (nranks == 1)
    return load_bits(t, rows[0], i);
  if (two_rings(algo)) {
    int second;
    uint32_t q = half_of(nranks, count, i, &second);
    return encode(f, fold_ring(t, f, op, mm, nranks, count, rows, q, second,
                               i));
  }
  if (ring_order(algo))
    return encode(f, fold_ring(t, f, op, mm, nranks, count, rows,
                               ring_seg_of(t, equal_chunks(algo), nranks,
                                           count, i),
                               0, i));
  if (owner_order(algo))
    rank = owner_of(nranks, count, i);
  return encode(f, fold_mesh(t, f, op, mm, nranks, count, rows, rank, i));
}

void cs_oracle_expect_mm(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                         cs_minmax_t mm, uint32_t nranks, uint64_t count,
                         const void *in, uint32_t rank, void *out)
{
  assert(cs_algo_desc(algo) && (unsigned)t < CS_NDTYPES);
  assert((unsigned)mm < CS_NMINMAX);
  assert((unsigned)op < CS_NOPS && nranks >= 1 && rank < nranks);
  const fmt_t f = fmt_of(t);
  const void *rows[nranks];
  for (uint32_t r = 0; r < nranks; r++)
    rows[r] = (const unsigned char *)in + (size_t)r * count * cs_dtype_size(t);

  if (nranks == 1) { /* no op at all: the input, bit for bit (NaN payloads) */
    memcpy(out, in, (size_t)(count * cs_dtype_size(t)));
    return;
  }
  if (ring_order(algo)) {
    /* Walk the segments once; boundaries cost O(NR), not O(count). Empty
     * segments own nothing, so element e lands in the k with
     * B(k) <= e < B(k+1), i.e. the largest k with B(k) <= e among the
     * non-empty ones (docs/algorithms.md §6). */
    int eq = equal_chunks(algo);
    uint64_t lo = seg_bound(t, eq, nranks, count, 0);
    for (uint32_t k = 0; k < nranks; k++) {
      uint64_t hi = seg_bound(t, eq, nranks, count, k + 1u);
      for (uint64_t i = lo; i < hi; i++)
        store_bits(t, out, i,
                   encode(f, fold_ring(t, f, op, mm, nranks, count, rows, k,
                                       0, i)));
      lo = hi;
    }
    return;
  }
  if (two_rings(algo)) {
    for (uint64_t i = 0; i < count; i++) {
      int second;
      uint32_t q = half_of(nranks, count, i, &second);
      store_bits(t, out, i,
                 encode(f, fold_ring(t, f, op, mm, nranks, count, rows, q,
                                     second, i)));
    }
    return;
  }
  /* Own value first, then the peers ascending (mesh, host); or the
   * chunk owner's value first (the same on every rank). */
  int owner = owner_order(algo);
  for (uint64_t i = 0; i < count; i++)
    store_bits(t, out, i,
               encode(f, fold_mesh(t, f, op, mm, nranks, count, rows,
                                   owner ? owner_of(nranks, count, i) : rank,
                                   i)));
}

double cs_oracle_f64(cs_dtype_t t, cs_op_t op, uint32_t nranks,
                     uint64_t count, const void *in, uint64_t i)
{
  assert((unsigned)t < CS_NDTYPES && (unsigned)op < CS_NOPS);
  assert(nranks >= 1 && i < count);
  const fmt_t f = fmt_of(t);
  size_t row = (size_t)count * cs_dtype_size(t);
  double acc = decode(f, load_bits(t, in, i));

  for (uint32_t r = 1; r < nranks; r++)
    acc = apply(op, acc, decode(f, load_bits(t, (const unsigned char *)in + r * row, i)));
  return acc;
}

double cs_oracle_decode(cs_dtype_t t, const void *buf, uint64_t i)
{
  assert((unsigned)t < CS_NDTYPES);
  return decode(fmt_of(t), load_bits(t, buf, i));
}

int cs_oracle_same(cs_dtype_t t, const void *a, const void *b, uint64_t i)
{
  assert((unsigned)t < CS_NDTYPES);
  uint32_t ua = load_bits(t, a, i), ub = load_bits(t, b, i);

  if (ua == ub)
    return 1;
  const fmt_t f = fmt_of(t);
  return isnan(decode(f, ua)) && isnan(decode(f, ub));
}

void cs_oracle_tolerance(cs_dtype_t t, double *rtol, double *atol)
{
  switch (t) {
  case CS_FP16:
    *rtol = 2e-2;
    *atol = 2e-2;
    break;
  case CS_BF16:
    *rtol = 5e-2;
    *atol = 5e-2;
    break;
  default:
    *rtol = 1e-5;
    *atol = 1e-8;
    break;
  }
}

/* ------------------------------------------------------ block checking */

/* The verification path (cs_oracle_check_range): the same definitions as
 * above, the same orders, the same single rounding per op, but on blocks
 * of elements decoded once, with the dtype rounding done on float bits
 * instead of frexp/ldexp, so that it runs at the speed of the call it
 * checks. tests/test_oracle.c holds it to cs_oracle_expect_mm bit for bit.
 *
 * Rounding a double v (the op's result, exact or innocuously rounded as
 * op_round explains) to the dtype: fp32 (float)v; fp16 and bf16 first
 * (float)v (24 >= 2p+2 bits, so the second rounding is innocuous) and then
 * round the float to 11 or 8 significant bits on its bits, RNE. */

#define BLOCK 256u

static inline uint32_t fbits(float f)
{
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float bitsf(uint32_t u)
{
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* A half's exact value as a float; every case computed and one selected
 * by masks, so that the decoding loops vectorise. */
static inline float half_val(uint32_t h)
{
  uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t inf = s | 0x7f800000u | (m << 13);
  uint32_t norm = s | ((e + 112u) << 23) | (m << 13);
  /* int32: AVX2 converts only signed integers */
  uint32_t sub = s | fbits((float)(int32_t)m * 0x1p-24f);
  uint32_t top = 0u - (uint32_t)(e == 0x1fu), zero = 0u - (uint32_t)(e == 0);
  return bitsf((inf & top) | (sub & zero) | (norm & ~(top | zero)));
}

/* f rounded to the nearest half value (ties to even), as a float:
 * normals on the bits (13 dropped bits), subnormals (quantum 2^-24) by
 * adding and removing 0.75, whose ulp is 2^-24; above 65504 + half an ulp
 * infinity; NaN stays NaN. */
static inline float round_half(float f)
{
  uint32_t u = fbits(f), a = u & 0x7fffffffu, sgn = u & 0x80000000u;
  uint32_t rn = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
  /* IEEE arithmetic: (x + 0.75) - 0.75 is not simplified without
   * -ffast-math, which this project never uses. */
  uint32_t sub = fbits((bitsf(a) + 0.75f) - 0.75f);
  /* Masks, not branches, so that the block loops vectorise. */
  uint32_t big = 0u - (uint32_t)(rn > 0x477fe000u);
  uint32_t norm = 0u - (uint32_t)(a >= 0x38800000u);
  uint32_t nan = 0u - (uint32_t)(a > 0x7f800000u);
  rn = (rn & ~big) | (0x7f800000u & big);
  uint32_t r = sgn | (rn & norm) | (sub & ~norm);
  return bitsf((u & nan) | (r & ~nan));
}

/* f rounded to the nearest bf16 value (ties to even) on its bits. */
static inline float round_bf16(float f)
{
  uint32_t u = fbits(f);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return bitsf((u & 0x7fffffffu) > 0x7f800000u ? u : r);
}

/* dst[0..BLOCK) = elements [lo, lo+n) of row, decoded; zeros past n. */
__attribute__((target_clones("avx2", "default")))
static void decode_row(cs_dtype_t t, const void *row, uint64_t lo, uint32_t n,
                       float *restrict dst)
{
  if (t == CS_FP32) {
    memcpy(dst, (const float *)row + lo, (size_t)n * sizeof(float));
  } else {
    const uint16_t *restrict h = (const uint16_t *)row + lo;
    /* a full block with a fixed trip count, which vectorises */
    uint32_t m = n == BLOCK ? BLOCK : 0;
    if (t == CS_FP16) {
      for (uint32_t j = 0; j < m; j++)
        dst[j] = half_val(h[j]);
      for (uint32_t j = m; j < n; j++)
        dst[j] = half_val(h[j]);
    } else {
      for (uint32_t j = 0; j < m; j++)
        dst[j] = bitsf((uint32_t)h[j] << 16);
      for (uint32_t j = m; j < n; j++)
        dst[j] = bitsf((uint32_t)h[j] << 16);
    }
  }
  memset(dst + n, 0, (BLOCK - n) * sizeof(float));
}

/* acc[0..BLOCK) = acc op x (x_first: x op acc), rounded to the dtype; the
 * whole block (a fixed trip count, which gcc vectorises; lanes past the
 * range hold zeros and are never compared). In float: sum and prod of two
 * fp32 values are the correctly rounded float by IEEE; of two fp16 or
 * bf16 values they are exact (prod: at most 22 significant bits) or
 * correctly rounded to float, whose 24 bits make the second rounding to
 * the dtype innocuous (24 >= 2p+2); bf16 products below float's range
 * round to float subnormals, which keep 16 more bits than bf16's. */
__attribute__((target_clones("avx2", "default")))
static void fold_block(const cs_oracle_run_t *o, float *restrict acc,
                       const float *restrict x, int x_first)
{
  cs_dtype_t t = o->dtype;
#define FOLD(expr)                                                           \
  do {                                                                       \
    if (t == CS_FP32)                                                        \
      for (uint32_t j = 0; j < BLOCK; j++)                                   \
        acc[j] = (expr);                                                     \
    else if (t == CS_FP16)                                                   \
      for (uint32_t j = 0; j < BLOCK; j++)                                   \
        acc[j] = round_half(expr);                                           \
    else                                                                     \
      for (uint32_t j = 0; j < BLOCK; j++)                                   \
        acc[j] = round_bf16(expr);                                           \
  } while (0)
  switch (o->op) {
  case CS_SUM:
    FOLD(acc[j] + x[j]);
    return;
  case CS_PROD:
    FOLD(acc[j] * x[j]);
    return;
  default:
    break;
  }
#undef FOLD
  int max = o->op == CS_MAX;
  if (o->mm == CS_MINMAX_PTO) { /* the select, first operand a */
    for (uint32_t j = 0; j < BLOCK; j++) {
      float a = x_first ? x[j] : acc[j], b = x_first ? acc[j] : x[j];
      acc[j] = max ? (a < b ? b : a) : (b < a ? b : a);
    }
    return;
  }
  for (uint32_t j = 0; j < BLOCK; j++)
    acc[j] = x_first ? (float)minmax(o->op, o->mm, x[j], acc[j])
                     : (float)minmax(o->op, o->mm, acc[j], x[j]);
}

/* Mesh and host, sum and prod: rank r's fold of the whole block, x[r]
 * then the peers ascending, acc = acc op x rounded to the dtype after
 * every op, as fold_block, but with 32 lanes of the accumulator held in
 * four registers across all the peers (8-float vectors of GNU C; the
 * default clone splits them in SSE halves). fp32: the float op's own
 * rounding; bf16: round_bf16 on the bits, lane for lane; fp16: the CPU's
 * float-to-half conversion (F16C, round to nearest even) where it has
 * one, else vround_half on the bits. Both are IEEE's rounding of a float
 * to half, as the float op is for fp32; tests/test_oracle.c holds every
 * route to the frexp/ldexp oracle above bit for bit. */
/* The helpers take the vectors by pointer and return none: a 32-byte
 * vector passed by value gets an ABI warning in the default clone. */
typedef float vf8 __attribute__((vector_size(32)));
typedef uint32_t vu8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
#define VLANES 8u
#define VINLINE static inline __attribute__((always_inline))

VINLINE void vload(vf8 *v, const float *p)
{
  memcpy(v, p, sizeof *v);
}

VINLINE void vstore(float *p, const vf8 *v)
{
  memcpy(p, v, sizeof *v);
}

/* round_half's result on 8 lanes, by another route: adding and removing
 * 2^(e+13), e the lane's exponent raised to -14 if below, leaves |f|
 * rounded by the float addition (RNE) to the half quantum of its binade
 * (2^(e-10); subnormals 2^-24); above 65504 after rounding infinity;
 * inf and NaN pass. Equal to round_half on every one of the 2^32 float
 * patterns (checked exhaustively when written). Signed compares are exact
 * here: every operand is below 2^31. */
VINLINE void vround_half(vf8 *f)
{
  vu8 u = (vu8)*f, a = u & 0x7fffffffu;
  vi8 e = (vi8)(a & 0x7f800000u);
  vi8 lo = e < 0x38800000;
  /* 2^(e+13) as a float product: for e >= 115 it is inf and r NaN, which
   * the "not <= 65504" compare turns into the overflow it is */
  vf8 m = (vf8)((e & ~lo) | (0x38800000 & lo)) * 8192.0f;
  vf8 r = ((vf8)a + m) - m;
  vu8 big = (vu8)~(r <= 65504.0f);
  vu8 rb = ((vu8)r & ~big) | (0x7f800000u & big);
  vu8 spec = (vu8)((vi8)a >= 0x7f800000);
  *f = (vf8)((u & spec) | (((u ^ a) | rb) & ~spec));
}

VINLINE void vround_bf16(vf8 *f)
{
  vu8 u = (vu8)*f;
  vu8 r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  vu8 nan = (vu8)((vi8)(u & 0x7fffffffu) > 0x7f800000);
  *f = (vf8)((u & nan) | (r & ~nan));
}

#define VID(v) ((void)(v))
/* The fold of one rank, OP a binary vector operator, ROUND the rounding. */
#define MESH_FOLD(OP, ROUND)                                                 \
  for (uint32_t g = 0; g < BLOCK; g += 4 * VLANES) {                         \
    const float *own = xd + (size_t)r * BLOCK + g;                           \
    vf8 v0, v1, v2, v3, x0, x1, x2, x3;                                      \
    vload(&v0, own);                                                         \
    vload(&v1, own + VLANES);                                                \
    vload(&v2, own + 2 * VLANES);                                            \
    vload(&v3, own + 3 * VLANES);                                            \
    for (uint32_t p = 0; p < nr; p++) {                                      \
      if (p == r)                                                            \
        continue;                                                            \
      const float *x = xd + (size_t)p * BLOCK + g;                           \
      vload(&x0, x);                                                         \
      vload(&x1, x + VLANES);                                                \
      vload(&x2, x + 2 * VLANES);                                            \
      vload(&x3, x + 3 * VLANES);                                            \
      v0 = v0 OP x0;                                                         \
      v1 = v1 OP x1;                                                         \
      v2 = v2 OP x2;                                                         \
      v3 = v3 OP x3;                                                         \
      ROUND(&v0);                                                            \
      ROUND(&v1);                                                            \
      ROUND(&v2);                                                            \
      ROUND(&v3);                                                            \
    }                                                                        \
    vstore(acc + g, &v0);                                                    \
    vstore(acc + g + VLANES, &v1);                                           \
    vstore(acc + g + 2 * VLANES, &v2);                                       \
    vstore(acc + g + 3 * VLANES, &v3);                                       \
  }

#define MESH_FOLD_OPS(ROUND)                                                 \
  do {                                                                       \
    if (prod)                                                                \
      MESH_FOLD(*, ROUND)                                                    \
    else                                                                     \
      MESH_FOLD(+, ROUND)                                                    \
  } while (0)

__attribute__((target_clones("avx2", "default")))
static void mesh_fold_bits(cs_dtype_t t, int prod, uint32_t nr,
                           const float *restrict xd, uint32_t r,
                           float *restrict acc)
{
  if (t == CS_FP16)
    MESH_FOLD_OPS(vround_half);
  else if (t == CS_BF16)
    MESH_FOLD_OPS(vround_bf16);
  else
    MESH_FOLD_OPS(VID);
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define VF16C __attribute__((target("avx2,avx,f16c")))

static inline __attribute__((always_inline)) VF16C void
vround_f16c(vf8 *f)
{
  *f = (vf8)_mm256_cvtph_ps(
      _mm256_cvtps_ph((__m256)*f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

VF16C static void mesh_fold_f16c(int prod, uint32_t nr,
                                 const float *restrict xd, uint32_t r,
                                 float *restrict acc)
{
  MESH_FOLD_OPS(vround_f16c);
}

/* Whether the CPU and the OS give AVX2 and F16C (cpuid; XCR0 saves the
 * YMM registers). */
static int has_f16c(void)
{
  unsigned a, b, c, d, lo, hi;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
      !(c & bit_AVX) || !(c & bit_F16C))
    return 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6 || __get_cpuid_max(0, NULL) < 7)
    return 0;
  __cpuid_count(7, 0, a, b, c, d);
  return (b & bit_AVX2) != 0;
}
#endif

/* -1 not yet known, else whether fp16 folds take F16C; `portable` (set
 * by cs_oracle_force_portable) keeps them on the bits. */
static int use_f16c = -1;
static int portable;

void cs_oracle_force_portable(int on)
{
  __atomic_store_n(&portable, on != 0, __ATOMIC_RELAXED);
}

static void mesh_fold(cs_dtype_t t, cs_op_t op, uint32_t nr,
                      const float *restrict xd, uint32_t r,
                      float *restrict acc)
{
  int prod = op == CS_PROD;
#if defined(__x86_64__) || defined(__i386__)
  int hw = __atomic_load_n(&use_f16c, __ATOMIC_RELAXED);
  if (hw < 0) {
    hw = has_f16c();
    __atomic_store_n(&use_f16c, hw, __ATOMIC_RELAXED);
  }
  if (t == CS_FP16 && hw && !__atomic_load_n(&portable, __ATOMIC_RELAXED)) {
    mesh_fold_f16c(prod, nr, xd, r, acc);
    return;
  }
#endif
  mesh_fold_bits(t, prod, nr, xd, r, acc);
}

static inline int same_val(float w, float g)
{
  return fbits(w) == fbits(g) || (w != w && g != g);
}

/* Rank r's results [lo, lo+n), decoded in got, against want[0..n): a
 * count over the whole block first (it vectorises), the elements one by
 * one only where some differ. */
static void compare(uint32_t r, uint64_t lo, const float *want,
                    const float *got, uint32_t n, cs_oracle_tally_t *t)
{
  uint32_t differ = 0;
  for (uint32_t j = 0; j < BLOCK; j++)
    differ += !same_val(want[j], got[j]);
  if (!differ)
    return;
  for (uint32_t j = 0; j < n; j++) {
    if (same_val(want[j], got[j]))
      continue;
    if (t->wrong++ == 0 || (int64_t)r < t->bad_rank ||
        ((int64_t)r == t->bad_rank && lo + j < t->bad_i)) {
      t->bad_rank = r;
      t->bad_i = lo + j;
    }
  }
}

/* The float64 check of a block, lane by lane, so that its loops have a
 * fixed trip count and vectorise: the reduction, each lane's tolerance and
 * the largest errors seen in each lane so far (over the ranks). Lanes past
 * the range hold zeros everywhere and add nothing. */
typedef struct f64_lanes {
  double ref[BLOCK], thr[BLOCK], abs[BLOCK], rel[BLOCK];
} f64_lanes_t;

/* Scratch of one range: the block's inputs decoded (nranks rows), the
 * expected values, one rank's results decoded, and the float64 lanes. */
size_t cs_oracle_scratch_bytes(uint32_t nranks)
{
  return ((size_t)nranks + 2) * BLOCK * sizeof(float) + sizeof(f64_lanes_t);
}

/* The float64 reduction of the block (any order, IEEE max/min, no dtype
 * rounding), its tolerances, and the maxima reset. */
static void f64_block(const cs_oracle_run_t *o, const float *restrict xd,
                      f64_lanes_t *restrict l)
{
  for (uint32_t j = 0; j < BLOCK; j++)
    l->ref[j] = xd[j];
  for (uint32_t r = 1; r < o->nranks; r++) {
    const float *x = xd + (size_t)r * BLOCK;
    if (o->op == CS_SUM)
      for (uint32_t j = 0; j < BLOCK; j++)
        l->ref[j] += x[j];
    else if (o->op == CS_PROD)
      for (uint32_t j = 0; j < BLOCK; j++)
        l->ref[j] *= x[j];
    else
      for (uint32_t j = 0; j < BLOCK; j++)
        l->ref[j] = apply(o->op, l->ref[j], x[j]);
  }
  for (uint32_t j = 0; j < BLOCK; j++) {
    l->thr[j] = o->atol + o->rtol * fabs(l->ref[j]);
    l->abs[j] = l->rel[j] = 0;
  }
}

/* One rank's results against the reduction: both finite (exactly when
 * the difference is finite: every reduction of finite inputs is), the
 * error counts against the tolerance and the maxima; otherwise only an
 * unequal pair that is not two NaNs fails. Returns the failures. */
static uint64_t f64_compare(const float *restrict got, f64_lanes_t *restrict l)
{
  uint64_t fail = 0;
  for (uint32_t j = 0; j < BLOCK; j++) {
    double g = got[j], f = l->ref[j], err = fabs(g - f), af = fabs(f);
    double rel = err / af;
    /* & and |, not && and ||: no branches, so that the loop vectorises */
    int fin = err <= DBL_MAX;
    int nan2 = (f != f) & (g != g);
    l->abs[j] = (fin & (err > l->abs[j])) ? err : l->abs[j];
    l->rel[j] = (fin & (af != 0) & (rel > l->rel[j])) ? rel : l->rel[j];
    fail += (unsigned)((fin & (err > l->thr[j])) | (!fin & !nan2 & (g != f)));
  }
  return fail;
}

static void f64_maxima(const f64_lanes_t *l, cs_oracle_tally_t *t)
{
  for (uint32_t j = 0; j < BLOCK; j++) {
    if (l->abs[j] > t->max_abs)
      t->max_abs = l->abs[j];
    if (l->rel[j] > t->max_rel)
      t->max_rel = l->rel[j];
  }
}

/* Ring: every element of the block from its segment's fold (the whole
 * block folded in each segment's order, kept where the segment is). */
static void ring_block(const cs_oracle_run_t *o, const float *xd, float *acc,
                       float *tmp, uint64_t lo, uint32_t n)
{
  uint32_t nr = o->nranks;
  for (uint32_t k = 0; k < nr; k++) {
    int eq = equal_chunks(o->algo);
    uint64_t b0 = seg_bound(o->dtype, eq, nr, o->count, k);
    uint64_t b1 = seg_bound(o->dtype, eq, nr, o->count, k + 1u);
    uint64_t s = b0 > lo ? b0 : lo, e = b1 < lo + n ? b1 : lo + n;
    if (s >= e)
      continue;
    uint32_t r = k + 1u == nr ? 0u : k + 1u;
    memcpy(tmp, xd + (size_t)r * BLOCK, BLOCK * sizeof(float));
    for (uint32_t step = 1; step < nr; step++) {
      r = r + 1u == nr ? 0u : r + 1u;
      fold_block(o, tmp, xd + (size_t)r * BLOCK, 1);
    }
    memcpy(acc + (s - lo), tmp + (s - lo), (size_t)(e - s) * sizeof(float));
  }
}

/* Two rings: every element of the block from its half's fold, the
 * first half of chunk q clockwise from q+1 to q, the second half
 * counter-clockwise from q-1 to q (the whole block folded in each order
 * that some element of it needs, kept where that half is). */
static void two_rings_block(const cs_oracle_run_t *o, const float *xd,
                            float *acc, float *tmp, uint64_t lo, uint32_t n)
{
  uint32_t nr = o->nranks;
  for (uint64_t s = lo; s < lo + n;) {
    int second;
    uint32_t q = half_of(nr, o->count, s, &second);
    uint64_t w = o->count / nr;
    /* where this half ends: the chunk's middle, or its end */
    uint64_t e = q + 1u == nr && second ? lo + n
                                        : q * w + (second ? w : w / 2u);
    if (e > lo + n || e <= s)
      e = lo + n;
    uint32_t r = ring_next(nr, q, second);
    memcpy(tmp, xd + (size_t)r * BLOCK, BLOCK * sizeof(float));
    for (uint32_t step = 1; step < nr; step++) {
      r = ring_next(nr, r, second);
      fold_block(o, tmp, xd + (size_t)r * BLOCK, 1);
    }
    memcpy(acc + (s - lo), tmp + (s - lo), (size_t)(e - s) * sizeof(float));
    s = e;
  }
}

/* Owner order: every element of the block from its chunk owner's fold
 * (x[q] first, then the others ascending), kept where the chunk is. */
static void owner_block(const cs_oracle_run_t *o, const float *xd, float *acc,
                        float *tmp, uint64_t lo, uint32_t n)
{
  uint32_t nr = o->nranks;
  for (uint64_t s = lo; s < lo + n;) {
    uint32_t q = owner_of(nr, o->count, s);
    uint64_t e = q + 1u == nr ? lo + n : (uint64_t)(q + 1u) * (o->count / nr);
    if (e > lo + n || e <= s) /* e <= s: chunks of 0 (count below nr) */
      e = lo + n;
    memcpy(tmp, xd + (size_t)q * BLOCK, BLOCK * sizeof(float));
    for (uint32_t p = 0; p < nr; p++)
      if (p != q)
        fold_block(o, tmp, xd + (size_t)p * BLOCK, 0);
    memcpy(acc + (s - lo), tmp + (s - lo), (size_t)(e - s) * sizeof(float));
    s = e;
  }
}

void cs_oracle_check_range(const cs_oracle_run_t *o, uint64_t lo, uint64_t hi,
                           void *scratch, cs_oracle_tally_t *t)
{
  uint32_t nr = o->nranks;
  float *xd = scratch, *acc = xd + (size_t)nr * BLOCK, *gd = acc + BLOCK;
  f64_lanes_t *l = (f64_lanes_t *)(gd + BLOCK);
  float tmp[BLOCK];
  /* max/min but pto do not depend on the order: one fold for all ranks */
  int two = two_rings(o->algo);
  int ring = ring_order(o->algo) || two, owner = owner_order(o->algo);
  int one = ring || owner || nr == 1 ||
            ((o->op == CS_MAX || o->op == CS_MIN) && o->mm != CS_MINMAX_PTO);
  int fast = o->op == CS_SUM || o->op == CS_PROD;
  for (uint64_t b = lo; b < hi; b += BLOCK) {
    uint32_t n = (uint32_t)(hi - b < BLOCK ? hi - b : BLOCK);
    for (uint32_t r = 0; r < nr; r++)
      decode_row(o->dtype, o->in[r], b, n, xd + (size_t)r * BLOCK);
    if (o->f64)
      f64_block(o, xd, l);
    if (one) {
      if (two && nr > 1) {
        two_rings_block(o, xd, acc, tmp, b, n);
      } else if (ring && nr > 1) {
        ring_block(o, xd, acc, tmp, b, n);
      } else if (owner && nr > 1) {
        owner_block(o, xd, acc, tmp, b, n);
      } else {
        memcpy(acc, xd, BLOCK * sizeof(float));
        for (uint32_t p = 1; p < nr; p++)
          fold_block(o, acc, xd + (size_t)p * BLOCK, 0);
      }
    }
    for (uint32_t r = 0; r < nr; r++) {
      if (!one && !fast) {
        memcpy(acc, xd + (size_t)r * BLOCK, BLOCK * sizeof(float));
        for (uint32_t p = 0; p < nr; p++)
          if (p != r)
            fold_block(o, acc, xd + (size_t)p * BLOCK, 0);
      } else if (!one && r != 1) {
        /* rank 1's fold is rank 0's: x1 op x0 == x0 op x1 bit for bit
         * (IEEE + and * commute), then the same peers in the same order */
        mesh_fold(o->dtype, o->op, nr, xd, r, acc);
      }
      decode_row(o->dtype, o->got[r], b, n, gd);
      compare(r, b, acc, gd, n, t);
      if (o->f64 && (r == 0 || !(ring || owner)))
        t->tol_fail += f64_compare(gd, l);
    }
    if (o->f64)
      f64_maxima(l, t);
  }
}

void cs_oracle_tally_merge(cs_oracle_tally_t *into, const cs_oracle_tally_t *from)
{
  if (from->wrong && (into->wrong == 0 || from->bad_rank < into->bad_rank ||
                      (from->bad_rank == into->bad_rank &&
                       from->bad_i < into->bad_i))) {
    into->bad_rank = from->bad_rank;
    into->bad_i = from->bad_i;
  }
  into->wrong += from->wrong;
  into->tol_fail += from->tol_fail;
  if (from->max_abs > into->max_abs)
    into->max_abs = from->max_abs;
  if (from->max_rel > into->max_rel)
    into->max_rel = from->max_rel;
}
