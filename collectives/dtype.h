/*
 * dtype.h - data types and reduction ops of the collectives (docs/algorithms.md
 * §6
 * ABI values), their names and element sizes. Pure; no I/O.
 */
#ifndef CS_DTYPE_H
#define CS_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "../include/collsim/types.h"
#include "../window/cs_error.h"

/* cs_dtype_t (CS_FP32, CS_FP16, CS_BF16), cs_op_t (the reference's
 * ReduceOp ABI: CS_SUM=0, CS_MAX, CS_MIN, CS_PROD) and cs_dtype_size:
 * collsim/types.h, shared with the public API. */

/* cs_minmax_t (what max/min do with NaN and signed zeros, --minmax; the
 * reference leaves both unspecified; PTO's first operand is the
 * reference's local accumulator, the second the received value):
 * collsim/types.h, shared with the public API. */

static inline const char *cs_minmax_name(cs_minmax_t m)
{
  static const char *const n[] = {"ieee", "propagate", "pto"};
  return (unsigned)m < CS_NMINMAX ? n[m] : "?";
}

static inline int cs_minmax_parse(const char *s)
{
  for (int i = 0; i < CS_NMINMAX; i++)
    if (strcmp(s, cs_minmax_name((cs_minmax_t)i)) == 0)
      return i;
  return CS_EBADNAME;
}

static inline const char *cs_dtype_name(cs_dtype_t t)
{
  static const char *const n[] = {"fp32", "fp16", "bf16"};
  return (unsigned)t < CS_NDTYPES ? n[t] : "?";
}

static inline const char *cs_op_name(cs_op_t o)
{
  static const char *const n[] = {"sum", "max", "min", "prod"};
  return (unsigned)o < CS_NOPS ? n[o] : "?";
}

/* Name -> value; CS_EBADNAME when unknown. */
static inline int cs_dtype_parse(const char *s)
{
  for (int i = 0; i < CS_NDTYPES; i++)
    if (strcmp(s, cs_dtype_name((cs_dtype_t)i)) == 0)
      return i;
  return CS_EBADNAME;
}

static inline int cs_op_parse(const char *s)
{
  for (int i = 0; i < CS_NOPS; i++)
    if (strcmp(s, cs_op_name((cs_op_t)i)) == 0)
      return i;
  return CS_EBADNAME;
}

#endif
