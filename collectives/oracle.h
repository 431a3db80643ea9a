/*
 * oracle.h - the independent reference of the allreduce results.
 *
 * Computes, from all ranks' inputs, the exact bits every rank
 * must end with, using each algorithm's association order (docs/algorithms.md §6):
 *   ring: for an element of segment k, a fold beginning at the rank
 *         after the owner and ending at the owner, each rank's own value
 *         the first operand: x[k] op (... op (x[k+2] op x[k+1]))
 *         (indices mod N),
 *         identical on every rank;
 *   mesh and host: on rank m, ((x[m] op x[p1]) op x[p2]) ... with p1 < p2 <
 *         ... the other ranks ascending; may differ between ranks.
 * Each op rounds once to the dtype (RNE). It shares no code with the
 * kernels (reduce.c) or the algorithms (allreduce.c): it decodes and encodes
 * fp16/bf16 bits itself, computes in double, and derives the ring's segment
 * boundaries from the reference formulas on its own.
 *
 * Also a float64 reduction (any order) to report the largest error of the
 * results and check the reference tolerances.
 */
#ifndef CS_ORACLE_H
#define CS_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "algo.h"
#include "dtype.h"

/* Expected result bits of rank `rank`, element range [0, count).
 * `in` holds nranks rows of count elements (row r = rank r's input, dtype
 * bits: uint16_t for fp16/bf16, float bits for fp32), `out` count
 * elements; exactly out[0..count) is written, `in` is not modified.
 * Requires 1 <= nranks, rank < nranks and valid enums (asserted).
 * nranks == 1: out is the input row, bit for bit. Otherwise every op result
 * is re-encoded, so a NaN comes out as the dtype's quiet NaN (compare with
 * cs_oracle_same). Ring segments follow docs/algorithms.md §4.2 (fp16 and bf16
 * both
 * use the 16-element aligned boundaries). Pure, no allocation, no I/O;
 * O(nranks * count) ops. */
void cs_oracle_expect(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                      uint32_t nranks, uint64_t count, const void *in,
                      uint32_t rank, void *out);

/* The same with max/min in --minmax mode mm (dtype.h); the reference's
 * first operand is the local value (mesh/host: the accumulator; ring: the
 * rank's own value folded into the partial it received), which only pto
 * tells apart. cs_oracle_expect is mm = CS_MINMAX_IEEE. */
void cs_oracle_expect_mm(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                         cs_minmax_t mm, uint32_t nranks, uint64_t count,
                         const void *in, uint32_t rank, void *out);

/* Expected bits of element i (< count) on rank `rank`, the inputs given
 * as one row pointer per rank (zero-extended to 32 bits). Pure. */
uint32_t cs_oracle_elem_rows(cs_algo_t algo, cs_dtype_t t, cs_op_t op,
                             cs_minmax_t mm, uint32_t nranks, uint64_t count,
                             const void *const *rows, uint32_t rank,
                             uint64_t i);

/* The verification path: every rank's results against the oracle's, a
 * range of elements at a time, so that ranges can run on threads. Same
 * definitions, orders and bits as cs_oracle_expect_mm (tested so), but on
 * decoded blocks, each rank's fold in vector registers, with the dtype
 * rounding on float bits (fp16 with F16C where the CPU has it); max/min
 * other than pto take one fold for every rank (their result does not
 * depend on the order), and sum/prod reuse rank 0's fold for rank 1. With f64 also the float64 reduction against the results
 * (ring: rank 0's, the same on every rank; mesh/host: every rank's). */
typedef struct cs_oracle_run {
  cs_algo_t   algo;
  cs_dtype_t  dtype;
  cs_op_t     op;
  cs_minmax_t mm;
  uint32_t    nranks;
  uint64_t    count;
  const void *const *in;  /* nranks input rows of count elements */
  const void *const *got; /* nranks result rows */
  int         f64;
  double      rtol, atol; /* the tolerance of the f64 check */
} cs_oracle_run_t;

/* What a range held: wrong elements over all ranks and the first of them
 * (lowest rank, then lowest index; bad_rank -1 = none), and the f64 check's
 * figures. Start from {.bad_rank = -1}. */
typedef struct cs_oracle_tally {
  uint64_t wrong;
  int64_t  bad_rank;
  uint64_t bad_i;
  double   max_abs, max_rel;
  uint64_t tol_fail;
} cs_oracle_tally_t;

/* Bytes of scratch cs_oracle_check_range needs for nranks (one per
 * thread). */
size_t cs_oracle_scratch_bytes(uint32_t nranks);
/* Adds the elements [lo, hi) of every rank to *t. No allocation, no I/O;
 * safe from any thread with its own scratch and tally. */
void cs_oracle_check_range(const cs_oracle_run_t *o, uint64_t lo, uint64_t hi,
                           void *scratch, cs_oracle_tally_t *t);
/* on != 0: fp16 folds of the verification path round on the bits even
 * where the CPU has F16C (both routes give the same bits; for the tests
 * of both). Not thread-safe against running checks. */
void cs_oracle_force_portable(int on);
/* Merges the tally of another range into *into. */
void cs_oracle_tally_merge(cs_oracle_tally_t *into, const cs_oracle_tally_t *from);

/* Reduction of element i (< count) over all ranks in double: inputs decoded
 * exactly, folded rank 0, 1, ... with double rounding only (no rounding to
 * the dtype); Max/Min as maximumNumber/minimumNumber. */
double cs_oracle_f64(cs_dtype_t t, cs_op_t op, uint32_t nranks,
                     uint64_t count, const void *in, uint64_t i);

/* Decodes one element (index i of buf) of dtype t to double, exactly. */
double cs_oracle_decode(cs_dtype_t t, const void *buf, uint64_t i);

/* 1 when the two elements match: identical bits, or both NaN. */
int cs_oracle_same(cs_dtype_t t, const void *a, const void *b, uint64_t i);

/* The reference tests' tolerance for dtype t: |got - want| <= atol + rtol*|want|
 * (fp32: rtol 1e-5, atol 1e-8; fp16: 2e-2, 2e-2; bf16: 5e-2, 5e-2). */
void cs_oracle_tolerance(cs_dtype_t t, double *rtol, double *atol);

#endif
