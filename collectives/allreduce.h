/*
 * allreduce.h - mesh, ring and host allreduce of PyPTO PR #2161 on the
 * device API, plus what a run needs around them: the window layout of each
 * algorithm, stage-in/out, input fills, the signal shapes and their final
 * values, and the rank body the launcher runs.
 *
 * Algorithms: mesh.c, ring.c and host.c (the files' headers describe each
 * one with its cost and a 4-rank picture), built from the steps of
 * barrier.h. The configuration and tile types: ar_config.h. Named defects:
 * bugs.h. Index math: geometry.h. Expected results: oracle.h (independent
 * of all of this).
 */
#ifndef CS_ALLREDUCE_H
#define CS_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "../sim/dev.h"
#include "algo.h"
#include "registry.h"
#include "ar_config.h"
#include "bugs.h"
#include "dtype.h"
#include "oracle.h"
#include "user.h"

typedef enum cs_fill {
  CS_FILL_DEFAULT = 0, /* as the original's tests (docs/algorithms.md §7) */
  CS_FILL_ARANGE,      /* 100*r + i */
  CS_FILL_PTO,         /* 1 + 0.125*r + 0.0625*(i mod 5) */
  CS_FILL_RANDOM,      /* seeded; sum/max/min in [-1, 1), prod in [0.9, 1.1) */
  CS_FILL_INPUT,       /* from a file */
} cs_fill_t;

/* Limits cs_ar_check holds a configuration to. */
#define CS_AR_MAX_COUNT (1ull << 36)     /* elements per rank */
#define CS_AR_MIN_TILE  1024u            /* bytes, a multiple of 32 */
#define CS_AR_MAX_TILE  (1u << 24)       /* bytes */
/* The most ranks `algo` accepts (the host builtin: CS_HOST_MAX_RANKS). */
uint32_t cs_ar_max_ranks(cs_algo_t algo);

/* Checks a configuration. Returns 0, or the first field out of range:
 * CS_EARENUM (algo, dtype or op), CS_EARRANKS (1..cs_ar_max_ranks),
 * CS_EARCOUNT (1..CS_AR_MAX_COUNT), CS_EARTILE (a multiple of 32 from
 * CS_AR_MIN_TILE to CS_AR_MAX_TILE), CS_EARITERS (0 calls), and for a
 * shape (§3.3): CS_EARSHAPE (rows x columns != count), CS_EARVALID (valid
 * rows or columns 0 or above the shape's), CS_EARVALIDALGO (a partial
 * rectangle on ring or host), CS_EARVALIDSTRIDE (a partial rectangle
 * with shape columns above INT32_MAX, the 2-D stride's limit),
 * CS_EARVALIDTILE (its bytes above tile_bytes). Words no
 * message: the caller names the value from `c`. */
int cs_ar_check(const cs_ar_cfg_t *c);

/* Declares the window of the algorithm: slot 0 "data" (count elements),
 * slot 1 "signal" (int32 cells), in that order, 32-byte rounded. */
int cs_ar_layout(const cs_ar_cfg_t *c, cs_layout_t *l);

/* Signal cells of the algorithm: mesh [NR,1], ring [2(NR-1), NR], host [NR]. */
uint64_t cs_ar_signal_cells(const cs_ar_cfg_t *c);
/* Value every non-self cell reaches by the end of one call
 * (docs/algorithms.md §2.3): mesh 1+C, ring 2K (every row), host
 * 1+ceil(n/256). Self cells stay 0. */
int32_t cs_ar_signal_final(const cs_ar_cfg_t *c);
/* The place in the algorithm of rank `rank`'s wait on `cell` of `slot`
 * for `target`, into buf: ring "READY barrier of RS t1 j0, rank 2's
 * notify" (or READ-COMPLETE; RS/AG round t, subchunk j), mesh and host
 * "ready barrier, ..." or "read-complete of chunk 3, ...". Empty for a
 * cell the algorithm never waits on (another slot, a self cell, out of
 * range, target < 1). Pure: from the configuration and the wait alone. */
void cs_ar_wait_where(const cs_ar_cfg_t *c, uint32_t rank, uint32_t slot,
                      uint32_t cell, int32_t target, char *buf, size_t n);
/* Whether cell `cell` of rank `rank`'s signal slot is one no peer
 * signals: a self cell, or one the algorithm leaves alone (a neighbour
 * barrier signals only the neighbour's cells). It stays 0. */
int cs_ar_signal_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell);

/* Rank-private staging tiles (the UB) of one rank, sized for c, and the
 * knobs of c->bug, derived once here for every call with these tiles.
 * Returns 0 or -ENOMEM. */
int  cs_ar_tiles_init(cs_ar_tiles_t *t, const cs_ar_cfg_t *c);
void cs_ar_tiles_fini(cs_ar_tiles_t *t);

/* One allreduce call on the data already in the own window's data slot,
 * with the knobs of c->bug (bugs.h; t->knobs, from cs_ar_tiles_init for
 * the same c). Ends with the self-clearing signal
 * epilogue unless c->no_epilogue or the bug leaves it out. */
void cs_allreduce(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t);

/* Stage-in: stores `count` elements from rank-private `src` into the own
 * window's data slot through the device API, tile by tile. Stage-out: loads
 * them back into `dst`. */
void cs_ar_stage_in(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                    const void *src);
void cs_ar_stage_out(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                     void *dst);

/* Input of rank r (count elements of dtype bits) for a fill. */
void cs_ar_fill(cs_fill_t f, const cs_ar_cfg_t *c, uint64_t seed, uint32_t r,
                void *dst);
/* The fill the reference's tests use for this configuration. */
cs_fill_t cs_ar_default_fill(const cs_ar_cfg_t *c);
/* The same rule from its inputs: pto for prod, and for fp16/bf16 when
 * the algorithm's tests fill them so (half_fill_pto), else arange. */
cs_fill_t cs_ar_fill_rule(cs_dtype_t dtype, cs_op_t op, bool half_fill_pto);
const char *cs_fill_name(cs_fill_t f);

/* ---- the rank body and its io-buffer protocol (used by run/coll.c's
 * job of a built-in and by cli/mpi/mpi_case.c) ---- */

/* Per-rank results after the output data in the io buffer: the rank
 * harness's (user.h). */
typedef cs_rank_stats_t cs_ar_stats_t;

/* io bytes needed per rank per direction. */
uint64_t cs_ar_io_bytes(const cs_ar_cfg_t *c);
/* Offset of the stats inside the output buffer. */
uint64_t cs_ar_stats_off(const cs_ar_cfg_t *c);

/* Launcher body: arg is a const cs_ar_cfg_t *. The rank harness of user.h
 * with the allreduce as the call: stage-in of the rank's input (io input
 * buffer; no fence, the algorithms order it themselves), the allreduce
 * (timed), stage-out to the io output buffer, in tiles of at least
 * CS_HOST_CHUNK elements; the last call checks the final signal values
 * before its epilogue. */
int cs_ar_rank_main(cs_dev_t *d, void *arg);

#endif
