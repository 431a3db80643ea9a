/*
 * reduce.c - the elementwise reduction kernels (acc[i] = acc[i] op x[i]) and
 * the scalar fp16/bf16 <-> float converters. Owns the run-time choice
 * between the AVX+F16C kernels and the baseline (x86-64 SSE2) ones, made
 * once and cached. Does not know about ranks, windows, segments or the
 * association order: the algorithms (allreduce) call the kernel once per
 * received chunk, and fills use the converters. The oracle deliberately
 * shares no code with this file.
 *
 * Every op rounds once to the data dtype, round to nearest even
 * (docs/algorithms.md §6). fp16/bf16 widen both operands to float
 * exactly, do one float op and narrow with RNE; for + and x this is the
 * correctly rounded result (see reduce.h). Max/Min by default (--minmax
 * ieee) are IEEE 754-2019
 * maximumNumber/minimumNumber, the same in every path:
 *   max(a, b) = b is NaN ? quiet(a) : a == b ? bits(a) & bits(b)
 *                                    : a > b ? a : b
 *   min(a, b) = b is NaN ? quiet(a) : a == b ? bits(a) | bits(b)
 *                                    : a < b ? a : b
 * (a NaN `a` fails both compares and yields b; AND/OR of equal operands
 * only differs for +0/-0, where it picks +0 for max and -0 for min).
 * The other --minmax modes (propagate, pto) are op_f32's and op8's other
 * cases, also the same in every path.
 *
 * Paths (the choice is cached on first use):
 *   fp32  plain float loops, vectorised by gcc -O2; built for the baseline
 *         (SSE2, 4 lanes) and for AVX2 (8 lanes), same bits either way.
 *   fp16  AVX+F16C: 8 lanes vcvtph2ps, one op, vcvtps2ph (RNE), scalar
 *         tail; otherwise scalar cs_half_to_float / op / cs_float_to_half.
 *   bf16  integer bit operations in a loop gcc vectorises: widen by
 *         << 16, one float op, RNE on the float's bits, NaN -> quiet NaN;
 *         built for the baseline and for AVX2.
 * cs_reduce_force_scalar(1) selects the baseline builds of all three.
 * Sum/Prod with two NaN operands may return either payload (gcc commutes
 * the operands of + and x), so only "a quiet NaN" is promised.
 */
#include "reduce.h"

#include <assert.h>
#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#define CS_TARGET_AVX __attribute__((target("avx,f16c")))
#define CS_TARGET_AVX2 __attribute__((target("avx2,avx,f16c")))
#define CS_INLINE static inline __attribute__((always_inline))
#define CS_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* ---- bit casts and scalar max/min -------------------------------------- */

CS_INLINE uint32_t f2u(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

CS_INLINE float u2f(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* a, with the quiet bit set if a is a NaN (a signalling NaN is returned
 * as is by the selects below; an op's result must be quiet). */
CS_INLINE float quiet(float a)
{
  return u2f(f2u(a) | (a != a ? 0x400000u : 0));
}

/* maximumNumber: NaN loses to a number, max(+0,-0) = +0 in either order;
 * both NaN -> a, made quiet. Written so gcc vectorises it (compares,
 * selects, AND); the AVX version below is the same formula lane by lane
 * (it need not quiet: vcvtps2ph does). */
CS_INLINE float max_num(float a, float b)
{
  float r = a > b ? a : b;
  r = a == b ? u2f(f2u(a) & f2u(b)) : r;
  return b != b ? quiet(a) : r;
}

/* minimumNumber: NaN loses to a number, min(+0,-0) = -0 in either order. */
CS_INLINE float min_num(float a, float b)
{
  float r = a < b ? a : b;
  r = a == b ? u2f(f2u(a) | f2u(b)) : r;
  return b != b ? quiet(a) : r;
}

/* The kernels' ops: sum and prod, and max/min in each --minmax mode
 * (dtype.h): IEEE, PROP (a NaN operand gives NaN: a + b is a quiet NaN
 * then; ±0 as IEEE), and the two plain selects of acc (a) and x (b):
 * MAXT/MINT a > b ? a : b / a < b ? a : b (keep b on a NaN or a tie) and
 * MAXTR/MINTR b > a ? b : a / b < a ? b : a (keep a). pto is C++'s
 * std::max(f, s) = f < s ? s : f, std::min(f, s) = s < f ? s : f, with
 * f the reference's first operand: MAXTR/MINTR when f sits in acc, MAXT/
 * MINT when it sits in x. */
typedef enum kop {
  K_SUM, K_PROD, K_MAX, K_MIN, K_MAXP, K_MINP, K_MAXT, K_MINT, K_MAXTR,
  K_MINTR
} kop_t;

CS_INLINE float op_f32(kop_t op, float a, float b)
{
  switch (op) {
  case K_SUM:
    return a + b;
  case K_PROD:
    return a * b;
  case K_MAX:
    return max_num(a, b);
  case K_MIN:
    return min_num(a, b);
  case K_MAXP:
    return a != a || b != b ? a + b : max_num(a, b);
  case K_MINP:
    return a != a || b != b ? a + b : min_num(a, b);
  case K_MAXT:
    return quiet(a > b ? a : b);
  case K_MINT:
    return quiet(a < b ? a : b);
  case K_MAXTR:
    return quiet(b > a ? b : a);
  default:
    return quiet(b < a ? b : a);
  }
}

/* ---- scalar converters ------------------------------------------------- */

/*
 *  binary16:  [15] sign | [14:10] exponent, bias 15 | [9:0] mantissa
 *  bfloat16:  [15] sign | [14:7]  exponent, bias 127 | [6:0] mantissa
 *  binary32:  [31] sign | [30:23] exponent, bias 127 | [22:0] mantissa
 * A NaN's quiet bit is the mantissa's top bit (0x200, 0x40, 0x400000).
 */

float cs_half_to_float(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;

  if (e == 0x1f) /* inf, or NaN made quiet with its payload kept */
    return u2f(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
  if (e != 0)
    return u2f(sign | ((e + 112) << 23) | (m << 13));
  /* zero or subnormal m * 2^-24: exact in float */
  float v = (float)m * 0x1p-24f;
  return u2f(sign | f2u(v));
}

uint16_t cs_float_to_half(float f)
{
  uint32_t u = f2u(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;

  if (a > 0x7f800000u) /* NaN: keep the top payload bits, set quiet */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) /* >= 65520 = 65504 + half an ulp: tie to even is up */
    return sign | 0x7c00u;
  if (a >= 0x38800000u) { /* normal half (>= 2^-14): rebias, RNE on bits */
    uint32_t r = a - 0x38000000u;
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  uint32_t e = a >> 23;
  if (e < 102) /* < 2^-25: below half the smallest subnormal */
    return sign;
  /* subnormal: value = m * 2^(e-150), in units of 2^-24 that is
   * m >> (126 - e), shift 14..24; rounding up may carry into 0x400, the
   * smallest normal, which is the right encoding. */
  uint32_t m = (a & 0x7fffffu) | 0x800000u;
  uint32_t s = 126 - e;
  uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1u)))
    q++;
  return (uint16_t)(sign | q);
}

float cs_bf16_to_float(uint16_t b)
{
  if ((b & 0x7fffu) > 0x7f80u) /* NaN: make quiet */
    b |= 0x40u;
  return u2f((uint32_t)b << 16);
}

/* RNE on the float's bits; NaN stays a (quiet) NaN instead of being
 * carried into the exponent. The same expression as the bf16 kernel. */
CS_INLINE uint16_t narrow_bf16(float f)
{
  uint32_t u = f2u(f);
  uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (uint16_t)(f != f ? (u >> 16) | 0x40u : r);
}

uint16_t cs_float_to_bf16(float f)
{
  return narrow_bf16(f);
}

/* ---- dispatch ---------------------------------------------------------- */

/* -1 unknown; else bit 0 AVX+F16C, bit 1 AVX2. Racing first calls store
 * the same value. */
static int cpu_simd = -1;
static int force_scalar;

/* The CPU's AVX, F16C and AVX2 bits from cpuid, and whether the OS saves
 * the YMM registers (OSXSAVE, then XCR0 bits 1 and 2), as
 * __builtin_cpu_supports("avx") checks; read with <cpuid.h>, which gcc and
 * clang both accept (clang 14 does not know the "f16c" feature string). */
static int detect_simd(void)
{
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return 0;
  if (!(c & bit_OSXSAVE) || !(c & bit_AVX) || !(c & bit_F16C))
    return 0;
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & 6) != 6)
    return 0;
  int s = 1;
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    if (b & bit_AVX2)
      s |= 2;
  }
  return s;
}

static int simd(void)
{
  int s = __atomic_load_n(&cpu_simd, __ATOMIC_RELAXED);
  if (s < 0) {
    s = detect_simd();
    __atomic_store_n(&cpu_simd, s, __ATOMIC_RELAXED);
  }
  return __atomic_load_n(&force_scalar, __ATOMIC_RELAXED) ? 0 : s;
}

int cs_reduce_has_f16c(void)
{
  return simd() & 1;
}

void cs_reduce_force_scalar(int on)
{
  __atomic_store_n(&force_scalar, on != 0, __ATOMIC_RELAXED);
}

/* ---- fp32 and bf16 loops ---------------------------------------------- */

/* gcc 12 at -O2 uses the "very cheap" vectoriser cost model, which refuses a
 * loop whose trip count would need a scalar epilogue, i.e. every plain
 * `for (i = 0; i < n; i++)`. So the loops run in blocks of CS_BLOCK
 * elements with a fixed-count inner loop (vectorised: 4 or 8 lanes, 2-4
 * vectors per block), then a scalar tail with the same expression. */
#define CS_BLOCK 16

CS_INLINE void fp32_loop(kop_t op, float *restrict acc,
                         const float *restrict x, size_t n)
{
  size_t i = 0;
  for (; i + CS_BLOCK <= n; i += CS_BLOCK)
    for (size_t j = 0; j < CS_BLOCK; j++)
      acc[i + j] = op_f32(op, acc[i + j], x[i + j]);
  for (; i < n; i++)
    acc[i] = op_f32(op, acc[i], x[i]);
}

/* Widen by << 16 (exact), one float op, RNE back on the bits. */
CS_INLINE uint16_t op_bf16(kop_t op, uint16_t a, uint16_t b)
{
  float fa = u2f((uint32_t)a << 16), fb = u2f((uint32_t)b << 16);
  return narrow_bf16(op_f32(op, fa, fb));
}

CS_INLINE void bf16_loop(kop_t op, uint16_t *restrict acc,
                         const uint16_t *restrict x, size_t n)
{
  size_t i = 0;
  for (; i + CS_BLOCK <= n; i += CS_BLOCK)
    for (size_t j = 0; j < CS_BLOCK; j++)
      acc[i + j] = op_bf16(op, acc[i + j], x[i + j]);
  for (; i < n; i++)
    acc[i] = op_bf16(op, acc[i], x[i]);
}

/* name(op, acc, x, n) for one target: one copy of `loop` per op, with op a
 * constant so that no switch is left inside the loops. */
#define CS_CASE(op, loop, acc, x, n)                                         \
  case op:                                                                   \
    loop(op, acc, x, n);                                                     \
    break;
#define CS_VARIANT(name, target, loop, type)                                 \
  target static void name(kop_t op, type *restrict acc,                      \
                          const type *restrict x, size_t n)                  \
  {                                                                          \
    switch (op) {                                                            \
      CS_CASE(K_SUM, loop, acc, x, n)                                        \
      CS_CASE(K_PROD, loop, acc, x, n)                                       \
      CS_CASE(K_MAX, loop, acc, x, n)                                        \
      CS_CASE(K_MIN, loop, acc, x, n)                                        \
      CS_CASE(K_MAXP, loop, acc, x, n)                                       \
      CS_CASE(K_MINP, loop, acc, x, n)                                       \
      CS_CASE(K_MAXT, loop, acc, x, n)                                       \
      CS_CASE(K_MINT, loop, acc, x, n)                                       \
      CS_CASE(K_MAXTR, loop, acc, x, n)                                      \
      default: loop(K_MINTR, acc, x, n); break;                              \
    }                                                                        \
  }

CS_VARIANT(fp32_base, , fp32_loop, float)
CS_VARIANT(fp32_avx2, CS_TARGET_AVX2, fp32_loop, float)
CS_VARIANT(bf16_base, , bf16_loop, uint16_t)
CS_VARIANT(bf16_avx2, CS_TARGET_AVX2, bf16_loop, uint16_t)

/* ---- fp16 -------------------------------------------------------------- */

static void fp16_scalar(kop_t op, uint16_t *restrict acc,
                        const uint16_t *restrict x, size_t n)
{
  for (size_t i = 0; i < n; i++)
    acc[i] = cs_float_to_half(op_f32(op, cs_half_to_float(acc[i]),
                                     cs_half_to_float(x[i])));
}

/* max_num / min_num on 8 lanes. vmaxps(a, b) is a > b ? a : b (so b on
 * NaN and on ties): fix ties with AND/OR of the operands (they differ only
 * for +0/-0), then take a where b is NaN. Selects are AND/ANDNOT/OR, not
 * blendv: gcc 12 folds _mm256_blendv_ps of a compare into a generic
 * vector select, which it then scalarises lane by lane on AVX1. */
CS_TARGET_AVX CS_INLINE __m256 select8(__m256 mask, __m256 yes, __m256 no)
{
  return _mm256_or_ps(_mm256_and_ps(mask, yes), _mm256_andnot_ps(mask, no));
}

CS_TARGET_AVX CS_INLINE __m256 max_num8(__m256 a, __m256 b)
{
  __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
  __m256 r = _mm256_max_ps(a, b);               /* b where a == b */
  r = _mm256_andnot_ps(_mm256_andnot_ps(a, eq), r); /* b & a there */
  return select8(_mm256_cmp_ps(b, b, _CMP_UNORD_Q), a, r);
}

CS_TARGET_AVX CS_INLINE __m256 min_num8(__m256 a, __m256 b)
{
  __m256 eq = _mm256_cmp_ps(a, b, _CMP_EQ_OQ);
  __m256 r = _mm256_min_ps(a, b);               /* b where a == b */
  r = _mm256_or_ps(r, _mm256_and_ps(eq, a));    /* b | a there */
  return select8(_mm256_cmp_ps(b, b, _CMP_UNORD_Q), a, r);
}

/* vmaxps(a, b) is a > b ? a : b and vminps(a, b) a < b ? a : b: the pto
 * ops as they are (vcvtps2ph quiets a NaN). Propagate: the IEEE result,
 * a + b (a quiet NaN) where either operand is NaN. */
CS_TARGET_AVX CS_INLINE __m256 op8(kop_t op, __m256 a, __m256 b)
{
  __m256 un = _mm256_cmp_ps(a, b, _CMP_UNORD_Q);
  switch (op) {
  case K_SUM:
    return _mm256_add_ps(a, b);
  case K_PROD:
    return _mm256_mul_ps(a, b);
  case K_MAX:
    return max_num8(a, b);
  case K_MIN:
    return min_num8(a, b);
  case K_MAXP:
    return select8(un, _mm256_add_ps(a, b), max_num8(a, b));
  case K_MINP:
    return select8(un, _mm256_add_ps(a, b), min_num8(a, b));
  case K_MAXT:
    return _mm256_max_ps(a, b);
  case K_MINT:
    return _mm256_min_ps(a, b);
  case K_MAXTR:
    return _mm256_max_ps(b, a);
  default:
    return _mm256_min_ps(b, a);
  }
}

CS_TARGET_AVX CS_INLINE void fp16_loop_f16c(kop_t op, uint16_t *restrict acc,
                                            const uint16_t *restrict x,
                                            size_t n)
{
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(acc + i)));
    __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i)));
    __m128i r = _mm256_cvtps_ph(op8(op, a, b), CS_RNE);
    _mm_storeu_si128((__m128i *)(acc + i), r);
  }
  if (i < n)
    fp16_scalar(op, acc + i, x + i, n - i);
}

CS_VARIANT(fp16_f16c, CS_TARGET_AVX, fp16_loop_f16c, uint16_t)

/* ---- entry ------------------------------------------------------------- */

static kop_t kop_of(cs_op_t op, cs_minmax_t mm, int x_first)
{
  if (op == CS_SUM)
    return K_SUM;
  if (op == CS_PROD)
    return K_PROD;
  int max = op == CS_MAX;
  switch (mm) {
  case CS_MINMAX_PROPAGATE: return max ? K_MAXP : K_MINP;
  case CS_MINMAX_PTO:
    return x_first ? (max ? K_MAXT : K_MINT) : (max ? K_MAXTR : K_MINTR);
  default: return max ? K_MAX : K_MIN;
  }
}

void cs_reduce_kernel(cs_dtype_t t, cs_op_t op, void *acc, const void *x,
                      size_t n)
{
  cs_reduce_kernel_mm(t, op, CS_MINMAX_IEEE, 0, acc, x, n);
}

void cs_reduce_kernel_mm(cs_dtype_t t, cs_op_t op_, cs_minmax_t mm,
                         int x_first, void *acc, const void *x, size_t n)
{
  assert((unsigned)t < CS_NDTYPES && (unsigned)op_ < CS_NOPS);
  assert((unsigned)mm < CS_NMINMAX);
  kop_t op = kop_of(op_, mm, x_first);
  int s = simd();
  switch (t) {
  case CS_FP32:
    if (s & 2)
      fp32_avx2(op, acc, x, n);
    else
      fp32_base(op, acc, x, n);
    break;
  case CS_FP16:
    if (s & 1)
      fp16_f16c(op, acc, x, n);
    else
      fp16_scalar(op, acc, x, n);
    break;
  default:
    if (s & 2)
      bf16_avx2(op, acc, x, n);
    else
      bf16_base(op, acc, x, n);
    break;
  }
}
