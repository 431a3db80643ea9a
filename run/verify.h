/*
 * verify.h - reads the results of a finished allreduce out of its world:
 * every rank's output against the oracle (collectives/oracle.h) and,
 * optionally, a float64 reduction; the signal cells against their end
 * state (0 after the self-clearing epilogue; with single-use signals the
 * reference's final value, self cells 0); per-call times as medians.
 *
 * Owns: the comparison loops and their counts. Does not own the oracle,
 * the rank bodies that put the results where they are (the caller says
 * where), or any wording: nothing here prints. Called by the verify steps
 * of run/coll.c and cli/collsim/bench.c, and for medians by
 * cli/collsim/ping.c and cli/mpi (mpi_case.c, mpi_bench.c).
 */
#ifndef CS_VERIFY_H
#define CS_VERIFY_H

#include <stdint.h>

#include "../collectives/allreduce.h"
#include "../window/world.h"

/* What the outputs of one allreduce run hold against the oracle. */
typedef struct cs_verdict {
  uint64_t wrong;        /* elements, over all ranks, that differ */
  int64_t  bad_rank;     /* the first of them: rank (-1 = none) */
  uint64_t bad_i;        /*   and element index */
  double   max_abs;      /* float64 (with f64): largest absolute error */
  double   max_rel;      /*   largest relative error */
  double   rtol, atol;   /*   the reference's tolerance for the dtype */
  uint64_t tol_fail;     /*   elements outside it */
  uint64_t signals_left; /* signal cells, over all ranks, not at their end
                             state (0, or the single-use final value) */
  int64_t  left_rank;    /* the first of them: rank (-1 = none) */
  uint64_t left_cell;    /*   cell index in its signal slot */
  int32_t  left_val;     /*   the value it holds */
  int32_t  left_want;    /*   and the one it should end at */
} cs_verdict_t;

/* Compares the first c->count elements of every rank's output buffer with
 * the oracle's result for `inputs` (nranks rows of count elements; NULL:
 * the world's own input buffers), with f64 also with the float64
 * reduction, and counts the cells of every rank's signal slot that are
 * not at their end state. Runs on threads (one per online CPU, joined
 * before it returns), each with O(nranks) scratch: no copy of the inputs
 * or results. With a partial valid rectangle (§3.3, cs_ar_rect) only the
 * rectangle goes to the oracle (and f64), and every element outside it
 * must equal the rank's own input bit for bit. `want` is unused (kept for
 * callers). Returns 0 or -ENOMEM. */
int cs_verify_allreduce(const cs_ar_cfg_t *c, const cs_world_t *w,
                         const uint8_t *inputs, int f64, uint8_t *want,
                         cs_verdict_t *v);

/* Sorts v[0..n) ascending. */
void cs_verify_sort_ns(uint64_t *v, uint64_t n);
/* The median v[n/2] of v[0..n) after sorting it; 0 when n is 0. */
uint64_t cs_verify_median_ns(uint64_t *v, uint64_t n);

#endif
