/*
 * collsim/types.h - the values every part of collsim's public C API
 * shares: element types, reduction ops, signal comparisons and notify
 * operations, with their ABI numbers. Constants and one pure helper only;
 * no functions to link. Included by collsim/device.h and
 * collsim/collective.h, and inside collsim by the code that defines the
 * same values, so the public numbers cannot drift from the engine's.
 */
#ifndef COLLSIM_TYPES_H
#define COLLSIM_TYPES_H

#include <stdint.h>

/* Element types of a slot or a tile. */
typedef enum cs_dtype {
  CS_FP32 = 0, /* IEEE binary32, 4 bytes */
  CS_FP16 = 1, /* IEEE binary16, 2 bytes (stored as uint16_t bits) */
  CS_BF16 = 2, /* bfloat16, 2 bytes (stored as uint16_t bits) */
  CS_NDTYPES
} cs_dtype_t;

/* Reduction ops (the ReduceOp ABI: Sum=0, Max=1, Min=2, Prod=3). */
typedef enum cs_op {
  CS_SUM = 0,
  CS_MAX = 1,
  CS_MIN = 2,
  CS_PROD = 3,
  CS_NOPS
} cs_op_t;

/* What Max and Min do with a NaN operand and with +0 against -0 (collsim
 * run --minmax; cs_tile_reduce_mm, cs_reduce_kernel_mm):
 *   IEEE       IEEE 754-2019 maximumNumber/minimumNumber: a NaN loses to
 *              a number, max(+0,-0) = +0, min(+0,-0) = -0, in either
 *              operand order (the default, and what cs_tile_reduce does)
 *   PROPAGATE  a NaN operand gives NaN; +0 and -0 as IEEE
 *   PTO        max(a, b) = a < b ? b : a, min(a, b) = b < a ? b : a (C++
 *              std::max and std::min), a the first operand: a NaN operand
 *              or a tie of +0 and -0 gives a, so the order matters */
typedef enum cs_minmax {
  CS_MINMAX_IEEE = 0,
  CS_MINMAX_PROPAGATE = 1,
  CS_MINMAX_PTO = 2,
  CS_NMINMAX
} cs_minmax_t;

/* Comparison of cs_wait (the WaitCmp ABI): Eq passes when the cell equals
 * the target, Ge when it is at least the target. */
enum { CS_CMP_EQ = 0, CS_CMP_GE = 1 };
/* Operation of cs_notify (the NotifyOp ABI): Add is an atomic +=, Set a
 * plain store. */
enum { CS_NOTIFY_ADD = 0, CS_NOTIFY_SET = 1 };

/* Bytes per element of `t`: 4 for fp32, 2 for fp16 and bf16. */
static inline uint32_t cs_dtype_size(cs_dtype_t t)
{
  return t == CS_FP32 ? 4u : 2u;
}

#endif
