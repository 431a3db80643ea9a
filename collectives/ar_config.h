/*
 * ar_config.h - what one allreduce call is given: the configuration of the
 * run, the ids of the window's two slots and the rank's staging tiles.
 * Types only, no functions: the rank body (allreduce.c), the algorithms
 * (mesh.c, ring.c, host.c) and their shared steps (barrier.c) all read
 * them, so none of those has to include another's header for a type.
 * Checking a configuration and filling the tiles: allreduce.h.
 */
#ifndef CS_AR_CONFIG_H
#define CS_AR_CONFIG_H

#include "bugs.h"
#include <stdint.h>

#include "../sim/dev.h"
#include "algo.h"
#include "dtype.h"

#define CS_AR_MAX_RANKS 64u /* the CommContext ABI's COMM_MAX_RANK_NUM */

typedef struct cs_ar_cfg {
  cs_algo_t  algo;
  cs_dtype_t dtype;
  cs_op_t    op;
  uint32_t   nranks;     /* 1..64 (host: 1..16) */
  uint64_t   count;      /* elements per rank, >= 1 */
  uint32_t   tile_bytes; /* UB tile, CS_TILE_BYTES unless asked otherwise */
  uint32_t   iters;      /* allreduce calls on one world, >= 1 */
  uint32_t   no_epilogue;/* 1: leave signals at their final values (single use) */
  uint32_t   bug;        /* cs_bug_t: a named defect, 0 = none (bugs.h) */
  uint32_t   minmax;     /* cs_minmax_t: max/min on NaN and ±0 (dtype.h) */
  /* docs/algorithms.md §3.3: the data as a row-major 2-D shape
   * [shape_rows, shape_cols] (their product is count) with the valid
   * top-left rectangle [valid_rows, valid_cols]; all 0: 1-D, no shape. */
  uint32_t   shape_rows, shape_cols;
  uint32_t   valid_rows, valid_cols;
  uint32_t   padded_cells; /* 1: every signal cell on a 64-byte line of its
                              own (--signal-layout padded) */
} cs_ar_cfg_t;

/* Whether c takes mesh's partial-valid rectangle path (§3.3): a shape
 * whose valid rectangle is smaller than it (cs_ar_check has held the
 * rectangle to one tile and the algorithm to mesh). */
static inline int cs_ar_rect(const cs_ar_cfg_t *c)
{
  return c->shape_rows != 0 &&
         (c->valid_rows < c->shape_rows || c->valid_cols < c->shape_cols);
}

/* Whether element i lies in c's valid rectangle (always, without one). */
static inline int cs_ar_in_rect(const cs_ar_cfg_t *c, uint64_t i)
{
  return !cs_ar_rect(c) || (i / c->shape_cols < c->valid_rows &&
                            i % c->shape_cols < c->valid_cols);
}

/* The window of every algorithm: slot 0 "data" (count elements), slot 1
 * "signal" (int32 cells), in that order, and for an algorithm whose
 * result goes to an output of its own (its descriptor's out_slot), slot 2
 * "out" (count elements), which only its own rank touches (cs_ar_layout
 * declares them). */
enum { CS_AR_SLOT_DATA = 0, CS_AR_SLOT_SIGNAL = 1, CS_AR_SLOT_OUT = 2 };

/* Rank-private staging tiles (the UB) of one rank. */
typedef struct cs_ar_tiles {
  cs_tile_t  acc;   /* accumulator */
  cs_tile_t  recv;  /* received data */
  cs_knobs_t knobs; /* the configuration's mutation knobs (cs_ar_tiles_init) */
} cs_ar_tiles_t;

#endif
