/*
 * collsim/device.h - the device API: the only way a collective touches
 * memory, as collsim's built-in mesh, ring and host allreduces do.
 *
 * A collective's body runs once per rank, in that rank's own process, and
 * sees two kinds of memory:
 *   - windows: one per rank, cut into the slots the collective declared
 *     (collsim/collective.h). Every rank can read and write every window,
 *     but only through the calls below;
 *   - tiles (cs_tile_t): rank-private staging buffers, plain memory the
 *     body reads and writes directly.
 * Every call below is one event: collsim numbers it, may inject a fault
 * at it, lets the scheduler order it (controlled mode), records it in the
 * trace, and checks its bounds against the slot table. A call that breaks
 * a rule (an element range outside its slot, a bad rank, cell or slot, a
 * tile too narrow) does not return: the rank stops with an out-of-slot
 * fault that `collsim run` reports with the event. A wait that times out,
 * or any wait or call after another rank failed, does not return either.
 * So every call that returns has done what it says.
 *
 * Units: element offsets and counts are elements of the slot's element
 * size, never bytes, unless a name says bytes. Ranks are 0..nranks-1.
 * Ownership: the library never keeps a pointer a caller passed after the
 * call returns. Threads: one rank is one thread of one process; the calls
 * take the rank's own cs_dev_t and are not to be shared between threads.
 * Implemented in collsim's sim/ (events) and collectives/ (tile reduce);
 * the engine's own headers include this one, so its prototypes and the
 * engine's are checked against each other by every build.
 */
#ifndef COLLSIM_DEVICE_H
#define COLLSIM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One rank's device: opaque, owned by collsim, valid for the whole body. */
typedef struct cs_dev cs_dev_t;

/* Rank-private staging memory (the "UB"). The body may read and write
 * buf directly; the device calls read or fill it. */
typedef struct cs_tile {
  void    *buf;   /* rank-private, width * esize bytes */
  uint32_t esize; /* bytes per element */
  uint32_t width; /* physical elements buf holds */
  uint32_t valid; /* logical elements (set by cs_load) */
} cs_tile_t;

/* ---- the rank ---- */

/* This rank's number, 0..nranks-1, and the number of ranks. Pure. */
uint32_t cs_dev_rank(const cs_dev_t *d);
uint32_t cs_dev_nranks(const cs_dev_t *d);

/* Tags the events that follow with `step` (a chunk or subchunk number)
 * in the trace; no event, no cost to speak of. */
void cs_dev_set_step(cs_dev_t *d, uint32_t step);

/* For a body that cannot go on for a reason of its own (err: a negative
 * errno, e.g. -ENOMEM): records the cause, which `collsim run` reports,
 * and returns the value for the body to return. */
int cs_dev_error(cs_dev_t *d, int err);

/* ---- tiles ---- */

/* Allocates t->buf for `width` elements of `esize` bytes (2 or 4),
 * zero-filled, 64-byte aligned; valid = 0. Returns 0, -EINVAL (esize not
 * 2 or 4, or width 0) or -ENOMEM; on failure *t is zeroed. Not an event. */
int cs_tile_init(cs_tile_t *t, uint32_t esize, uint32_t width);
/* Frees t->buf (NULL allowed) and zeroes *t. */
void cs_tile_fini(cs_tile_t *t);

/* ---- memory events ---- */

/* Copies `phys` elements starting at element `elem_off` of `slot` in
 * `peer`'s window (peer == own rank: a local load) into t; the first
 * `valid` are kept, the rest of the tile's width is zero-filled; sets
 * t->valid = valid. The physical range [elem_off, elem_off+phys) is what
 * must lie inside the slot. Requires 1 <= valid <= phys <= t->width and
 * t->esize equal to the slot's element size. Blocks only in controlled
 * mode, until the scheduler runs it. */
void cs_load(cs_dev_t *d, cs_tile_t *t, uint32_t peer, uint32_t slot,
             uint64_t elem_off, uint32_t valid, uint32_t phys);

/* Writes the first `valid` elements of t to elements [elem_off,
 * elem_off+valid) of `slot`: in the own window (store) or in `peer`'s
 * (put). Under the fifo and relaxed memory models the write is posted and
 * lands later; cs_fence orders it before what follows. */
void cs_store(cs_dev_t *d, const cs_tile_t *t, uint32_t slot,
              uint64_t elem_off, uint32_t valid);
void cs_put(cs_dev_t *d, const cs_tile_t *t, uint32_t peer, uint32_t slot,
            uint64_t elem_off, uint32_t valid);

/* A put whose landing adds into the destination instead of overwriting
 * it (the device's TPUT<AtomicAdd>): for i < valid, element elem_off+i of
 * `slot` in `peer`'s window becomes itself op t[i], atomically per
 * element (two reducing puts into one element both count, in the order
 * they land; each addition rounds as one IEEE binary32 addition, round to
 * nearest even). Posted and fenced like cs_put. Only op CS_SUM on a fp32
 * tile and slot: anything else is a bad device-API argument (the rank
 * stops with a fault). Traced as a put whose opcmp is 1 + op. */
void cs_put_reduce(cs_dev_t *d, const cs_tile_t *t, uint32_t peer,
                   uint32_t slot, uint64_t elem_off, uint32_t valid,
                   cs_op_t op);

/* The 2-D forms, one event each: a rectangle of `rows` rows of `cols`
 * elements whose row i starts at element elem_off + i*stride of `slot`.
 * cs_load_rect copies it from `peer`'s window into t, packed row after row
 * (element (i, j) at t->buf[i*cols + j]), zero-fills the rest of the
 * tile's width and sets t->valid = rows*cols; cs_store_rect writes the
 * first rows*cols elements of t, packed the same way, into the own
 * window (posted under fifo and relaxed like cs_store). Every row must lie
 * inside the slot; requires 1 <= rows <= CS_RECT_MAX_ROWS, cols >= 1,
 * cols <= stride <= INT32_MAX and rows*cols <= t->width. Traced as one
 * record with the row count and stride (traces/FORMAT.md). */
#define CS_RECT_MAX_ROWS (1u << 20)
void cs_load_rect(cs_dev_t *d, cs_tile_t *t, uint32_t peer, uint32_t slot,
                  uint64_t elem_off, uint32_t rows, uint32_t cols,
                  uint32_t stride);
void cs_store_rect(cs_dev_t *d, const cs_tile_t *t, uint32_t slot,
                   uint64_t elem_off, uint32_t rows, uint32_t cols,
                   uint32_t stride);

/* ---- signals ---- */

/* Applies `op` (CS_NOTIFY_ADD: atomic += value, release; CS_NOTIFY_SET:
 * store) to int32 cell `cell` of `slot` (a slot of 4-byte elements) in
 * `peer`'s window, and wakes the peer if it waits on that cell. Posted
 * like a put under fifo, relaxed and a2a3. On a2a3, as on the device, an
 * Add is a read-modify-write of the one word in memory, while a Set is a
 * plain store through the cache: it reads the cell's whole 64-byte line
 * when the notify runs and later writes the whole line back, so it can
 * undo what other ranks wrote to that line in between; and the notify's
 * own DDR fence comes after its signal, so it orders nothing before it
 * (call cs_fence first). */
void cs_notify(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell,
               uint32_t op, int32_t value);

/* Blocks until the own cell `cell` of `slot` satisfies `cmp value`
 * (CS_CMP_EQ: ==, CS_CMP_GE: >=); returns the value it saw. Does not
 * return when the run's wait timeout passes first (the rank reports a
 * hang) or when another rank failed. */
int32_t cs_wait(cs_dev_t *d, uint32_t slot, uint32_t cell, uint32_t cmp,
                int32_t value);

/* cs_wait without its value: the same event (traced, scheduled and timed
 * out alike), for a program that only needs the condition to hold. That
 * the value is unused lets `collsim verify` treat a Ge wait and the
 * AtomicAdds of a value >= 0 it does not need as independent (fewer
 * classes); a program that reads the value calls cs_wait. */
void cs_wait_until(cs_dev_t *d, uint32_t slot, uint32_t cell, uint32_t cmp,
                   int32_t value);

/* The full fence: every store, put and notify this rank posted before
 * lands before any it posts after. On the a2a3 memory model it is the pipe
 * barrier followed by the DDR fence (the pair the device's code generator
 * emits before a notify). */
void cs_fence(cs_dev_t *d);

/* The two halves of cs_fence, for code that needs to say which one it has
 * (or lacks). On a2a3 a write this rank issues is first in its pipe, then
 * drained (issued to memory), then visible to every rank:
 *   cs_pipe_barrier  waits until the rank's earlier writes are drained
 *                    (the device's pipe_barrier(PIPE_ALL)); they need not
 *                    be visible yet;
 *   cs_ddr_fence     waits until the rank's drained writes are visible
 *                    (dsb(DSB_DDR)); writes still in the pipe are not
 *                    waited for.
 * On sc, fifo and relaxed, where a write is either posted or landed, each
 * of them waits as cs_fence does. */
void cs_pipe_barrier(cs_dev_t *d);
void cs_ddr_fence(cs_dev_t *d);

/* ---- the data cache (a2a3) ----
 *
 * On a2a3 each rank reads int32 cells through a data cache of 64-byte
 * lines that no other rank's write updates: a line read once keeps the
 * values it had then until the rank cleans and invalidates it. A wait
 * and a notify invalidate their cell's line first (as the device's TWAIT
 * and TNOTIFY do); loads, stores and puts of tiles bypass the cache. On
 * sc, fifo and relaxed there is no cache: cs_read_cell reads memory and
 * cs_dcci does nothing but count as an event. */

/* Reads int32 cell `cell` of `slot` (a slot of 4-byte elements) in
 * `peer`'s window through this rank's cache, and returns it. Never
 * blocks on the cell's value (it is not a wait). */
int32_t cs_read_cell(cs_dev_t *d, uint32_t peer, uint32_t slot,
                     uint32_t cell);

/* Cleans and invalidates (the device's dcci) the 64-byte line of `peer`'s
 * window that holds element `elem` of `slot` (of a slot padded with
 * --signal-layout padded: cell `elem`); cs_dcci_all does it for every
 * line of the rank's cache. Tile loads and stores refuse a padded slot
 * (an out-of-slot fault): its cells are not consecutive elements. */
void cs_dcci(cs_dev_t *d, uint32_t peer, uint32_t slot, uint64_t elem);
void cs_dcci_all(cs_dev_t *d);

/* ---- compute and markers ---- */

/* One reduce event: acc[i] = acc[i] op x[i] for i < acc->valid with
 * collsim's kernels (one rounding per op, round to nearest even; Max/Min
 * as IEEE maximumNumber/minimumNumber). acc and x must have the same
 * esize (that of `t`), x->width >= acc->valid. Touches no window. */
void cs_tile_reduce(cs_dev_t *d, cs_tile_t *acc, const cs_tile_t *x,
                    cs_dtype_t t, cs_op_t op);

/* The same with max and min in mode `mm` (collsim/types.h) and the
 * operand order said: x_first 0, acc[i] = acc[i] op x[i]; x_first 1,
 * acc[i] = x[i] op acc[i] (x the first operand). Only CS_MINMAX_PTO
 * tells the orders apart; sum and prod ignore mm and x_first. A body
 * that honours cfg->minmax (CS_COLL_MINMAX, collsim/collective.h) passes
 * it here. One reduce event, recorded as cs_tile_reduce's. */
void cs_tile_reduce_mm(cs_dev_t *d, cs_tile_t *acc, const cs_tile_t *x,
                       cs_dtype_t t, cs_op_t op, cs_minmax_t mm, int x_first);

/* A reduce event whose work is the caller's: kernel(arg) runs inside the
 * event, which records `valid` elements reduced with op `op`. */
void cs_reduce_event(cs_dev_t *d, uint32_t op, uint32_t valid,
                     void (*kernel)(void *arg), void *arg);

/* A phase marker: the body enters `phase` (1.., e.g. 1 reduce-scatter,
 * 2 all-gather), round `round`. One event, no memory effect; the trace
 * tags later events with it. */
void cs_mark(cs_dev_t *d, uint32_t phase, uint32_t round);

/* acc[i] = acc[i] op x[i] for i < n, plain memory, not an event: for a
 * collective's expected-result function. acc and x hold n elements of `t`
 * and must not overlap. Safe from any thread. */
void cs_reduce_kernel(cs_dtype_t t, cs_op_t op, void *acc, const void *x,
                      size_t n);
/* ... and with max and min in mode `mm`, operands ordered by x_first, as
 * cs_tile_reduce_mm: for an expected-result function that honours
 * cfg->minmax. */
void cs_reduce_kernel_mm(cs_dtype_t t, cs_op_t op, cs_minmax_t mm,
                         int x_first, void *acc, const void *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
