/*
 * user.h - a registered collective (include/collsim/collective.h) as a
 * rank body: its window layout, the io buffers of its inputs and results,
 * and the rank body that stages the input in, calls the collective's body
 * once per call and stages the result out. That loop is the harness every
 * run's rank body shares (the built-ins' too, allreduce.c). Owns no
 * collective and no verification (run/coll.c compares the results); knows
 * the device API and the registration only. Called by run/coll.c, and
 * (the harness) by collectives/allreduce.c.
 */
#ifndef CS_USER_H
#define CS_USER_H

#include <stdint.h>

#include "../include/collsim/collective.h"
#include "../sim/dev.h"
#include "../window/layout.h"

/* One run of a registered collective, the launcher's and every rank's. */
typedef struct cs_user_run {
  const cs_collective_t *coll;
  cs_coll_cfg_t          cfg;
  uint64_t               out_count; /* result elements per rank */
  uint32_t               flags;     /* the registration's CS_COLL_* bits */
} cs_user_run_t;

/* Per-rank results after the output data in the io output buffer (at
 * its size rounded up to 64 bytes), written by the rank harness below. */
typedef struct cs_rank_stats {
  uint32_t signal_bad;   /* cells the call's own check found short of their
                            final value (a built-in's, on its last call) */
  uint32_t iters_differ; /* calls whose result differed from the first's */
  uint32_t signal_cell;  /* the first cell that missed: own cell index */
  int32_t  signal_got;   /*   its value before the last epilogue */
  int32_t  signal_want;  /*   its final value */
  uint32_t differ_call;  /* the first differing call (0 = the first call) */
  uint64_t differ_i;     /*   its first differing element */
  uint32_t differ_first; /*   that element's bits in call 0 */
  uint32_t differ_got;   /*   and in differ_call */
  uint64_t ns[];         /* per-call time of this rank's collective, ns */
} cs_rank_stats_t;

/* What the rank harness runs: the stage-in of in_count elements of the
 * io input into in_slot (a fence after it with stage_fence), then one
 * call (timed), a fence, the stage-out of out_count elements of out_slot
 * into the io output, per call; staged in tiles of stage_width elements. */
typedef struct cs_rank_calls {
  uint64_t in_count, out_count;
  uint32_t esize;
  uint32_t in_slot, out_slot;
  uint32_t stage_width;
  int      stage_fence;
  cs_tile_t *stage_tile; /* the tile to stage through (its width used as it
                            is), or NULL: the harness's own of stage_width */
  /* One call of the collective; `last` on the last one, when it may fill
   * st's signal fields. Returns 0, or non-zero to stop (the harness then
   * returns it). */
  int (*call)(cs_dev_t *d, void *ctx, int last, cs_rank_stats_t *st);
  void *ctx;
} cs_rank_calls_t;

/* Moves `count` elements between rank-private memory and element 0.. of
 * the own window's `slot`, tile by tile at t's width: stores from `src`
 * (in), or loads into `dst` (out). */
void cs_rank_stage_in(cs_dev_t *d, cs_tile_t *t, uint32_t slot,
                      const void *src, uint64_t count);
void cs_rank_stage_out(cs_dev_t *d, cs_tile_t *t, uint32_t slot, void *dst,
                       uint64_t count);

/* The harness every run's rank body is: `iters` calls of k, the times and
 * the comparison of each result with the first call's into the stats.
 * Returns 0, the call's non-zero return, or cs_dev_error's for memory. */
int cs_rank_run_calls(cs_dev_t *d, const cs_rank_calls_t *k, uint32_t iters);
/* Offset of the stats in the output buffer for `out_bytes` of results,
 * and the io bytes a rank needs per direction. */
uint64_t cs_rank_stats_off(uint64_t out_bytes);
uint64_t cs_rank_io_bytes(uint64_t in_bytes, uint64_t out_bytes,
                          uint32_t iters);

/* Sets u for coll and cfg (out_count from the registration). */
void cs_user_run_init(cs_user_run_t *u, const cs_collective_t *coll,
                      const cs_coll_cfg_t *cfg);

/* Declares the collective's slots into l. Returns 0, the collective's own
 * negative code, -EINVAL (no slots, too many, or in/out/signal slot out of
 * range or of the wrong element size) or cs_layout_add's code. */
int cs_user_layout(const cs_user_run_t *u, cs_layout_t *l);

/* Bytes of one rank's input (count elements) and result (out_count). */
uint64_t cs_user_in_bytes(const cs_user_run_t *u);
uint64_t cs_user_out_bytes(const cs_user_run_t *u);
/* Offset of the stats in the output buffer, and the io bytes a rank needs
 * per direction (cs_world_opts_t.io_bytes). */
uint64_t cs_user_stats_off(const cs_user_run_t *u);
uint64_t cs_user_io_bytes(const cs_user_run_t *u);

/* Launcher body; arg is a const cs_user_run_t *. The harness with the
 * collective's body as the call, a fence after stage-in unless
 * CS_COLL_NO_STAGE_FENCE, tiles of tile_bytes. Returns 0, or the body's
 * non-zero return. */
int cs_user_rank_main(cs_dev_t *d, void *arg);

#endif
