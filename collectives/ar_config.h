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
} cs_ar_cfg_t;

/* The window of every algorithm: slot 0 "data" (count elements), slot 1
 * "signal" (int32 cells), in that order (cs_ar_layout declares them). */
enum { CS_AR_SLOT_DATA = 0, CS_AR_SLOT_SIGNAL = 1 };

/* Rank-private staging tiles (the UB) of one rank. */
typedef struct cs_ar_tiles {
  cs_tile_t  acc;   /* accumulator */
  cs_tile_t  recv;  /* received data */
  cs_knobs_t knobs; /* the configuration's mutation knobs (cs_ar_tiles_init) */
} cs_ar_tiles_t;

#endif
