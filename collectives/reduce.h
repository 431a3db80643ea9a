/*
 * reduce.h - elementwise reduction kernels in the data dtype, one rounding
 * (round to nearest, ties to even) per op, as the device does
 * (docs/algorithms.md §6): acc[i] = acc[i] OP x[i].
 *
 * fp32: plain float loops the compiler vectorises. fp16: F16C intrinsics
 * (8 lanes: convert to float, one op, convert back with RNE), chosen at run
 * time from cpuid, scalar bit-exact fallback otherwise.
 * bf16: integer bit operations (widen by shift, one float op, round to
 * nearest even on the bits). For + and x the float detour is exact: float's
 * 24 bits >= 2p+2 for p = 11 (fp16) and 8 (bf16), so the double rounding is
 * innocuous.
 *
 * Max/Min (cs_reduce_kernel; cs_reduce_kernel_mm's CS_MINMAX_IEEE) follow
 * IEEE 754-2019 maximumNumber/minimumNumber: a NaN operand
 * loses to a number (a quiet NaN only if both are NaN), and +0 > -0
 * (max(+0,-0) = +0, min(+0,-0) = -0), in either operand order. The
 * reference leaves NaN/±0 unspecified.
 * Sum/Prod with a NaN operand give a quiet NaN (payload unspecified).
 * Every path (vector or baseline) gives the same bits, NaN payloads aside.
 */
#ifndef CS_REDUCE_H
#define CS_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* acc[i] = acc[i] op x[i] for i < n; acc and x hold n elements of dtype
 * (uint16_t bits for fp16/bf16, float for fp32), any alignment, and must
 * not overlap. Elements at and past n are not touched; n = 0 touches
 * nothing (NULL allowed). t and op must be valid (asserted). No
 * allocation, no I/O, no locks; safe from any thread or rank. */
void cs_reduce_kernel(cs_dtype_t t, cs_op_t op, void *acc, const void *x,
                      size_t n);

/* The same with max/min in mode mm (dtype.h cs_minmax_t): acc[i] =
 * acc[i] op x[i], or with x_first != 0 acc[i] = x[i] op acc[i] (only pto
 * depends on the operand order: the first operand is the reference's
 * local accumulator). sum/prod ignore mm and x_first. */
void cs_reduce_kernel_mm(cs_dtype_t t, cs_op_t op, cs_minmax_t mm,
                         int x_first, void *acc, const void *x, size_t n);

/* Scalar conversions used by the kernels' fallback and by fills (RNE).
 * NaN stays NaN (quiet), infinities and signed zeros are kept. */
float    cs_half_to_float(uint16_t h);
uint16_t cs_float_to_half(float f);
float    cs_bf16_to_float(uint16_t b);
uint16_t cs_float_to_bf16(float f);

/* 1 if the fp16 kernels currently use F16C: the CPU has AVX and F16C and
 * the scalar path is not forced (for reports and tests). */
int cs_reduce_has_f16c(void);
/* on != 0 forces the baseline kernels of every dtype (scalar fp16, SSE2
 * fp32/bf16) in this process, so tests can compare them with the vector
 * ones; 0 restores the run-time dispatch. */
void cs_reduce_force_scalar(int on);

#endif
