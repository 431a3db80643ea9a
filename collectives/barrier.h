/*
 * barrier.h - the steps mesh.c, ring.c and host.c are built from: the
 * all-to-all signal barrier, the reduce event, load-and-reduce and the
 * self-clearing epilogue. Owns no algorithm and no dispatch; it knows only
 * the device API and the configuration types (ar_config.h), so the
 * algorithms call down into it and nothing here calls back up. Internal to
 * collectives/.
 */
#ifndef CS_BARRIER_H
#define CS_BARRIER_H

#include <stdint.h>

#include "../sim/dev.h"
#include "ar_config.h"
#include "bugs.h"
#include "reduce.h"

/* The reference's all-to-all barrier on signal row `row` (cells [row, s],
 * row 0 for mesh and host): a fence (drain every posted store and wait
 * until it is visible before the signal, as PyPTO's PIPE_ALL and DDR
 * fence before TNOTIFY; k->fence_before_notify, k->ddr_fence),
 * +1 to cell [row, me] of every peer ascending, then wait for cell [row, s]
 * >= expect (k->wait_cmp) of every peer ascending. */
static inline void cs__ar_barrier(cs_dev_t *d, const cs_knobs_t *k,
                                  uint32_t row, int32_t expect)
{
  uint32_t n = d->nranks, me = d->rank;
  uint32_t base = row * n;
  if (k->fence_before_notify && k->ddr_fence)
    cs_fence(d);
  else if (k->fence_before_notify)
    cs_pipe_barrier(d);
  for (uint32_t p = 0; p < n; p++)
    if (p != me)
      cs_notify(d, p, CS_AR_SLOT_SIGNAL, base + me, CS_NOTIFY_ADD, 1);
  for (uint32_t s = 0; s < n; s++)
    if (s != me)
      cs_wait_until(d, CS_AR_SLOT_SIGNAL, base + s, k->wait_cmp, expect);
}

/* The operands of one tile reduce (cs__ar_reduce). x_first: x holds the
 * reference's first operand, the local value (the ring folds its own copy
 * into the partial it received); only --minmax pto tells the orders
 * apart. */
typedef struct cs__ar_red {
  const cs_ar_cfg_t *c;
  cs_tile_t         *acc;
  const cs_tile_t   *x;
  int                x_first;
} cs__ar_red_t;

static void cs__ar_red_kernel(void *arg)
{
  const cs__ar_red_t *r = arg;
  cs_reduce_kernel_mm(r->c->dtype, r->c->op, (cs_minmax_t)r->c->minmax,
                      r->x_first, r->acc->buf, r->x->buf, r->acc->valid);
}

/* acc = acc op x (x_first: x op acc) over acc->valid elements: one device
 * event. */
static inline void cs__ar_reduce(cs_dev_t *d, cs_tile_t *acc,
                                 const cs_tile_t *x, const cs_ar_cfg_t *c,
                                 int x_first)
{
  cs__ar_red_t r = {c, acc, x, x_first};
  cs__dev_reduce(d, c->op, acc->valid, cs__ar_red_kernel, &r);
}

static void cs__ar_consume(cs_tile_t *acc, const void *src, uint32_t n,
                           const void *arg)
{
  const cs__ar_red_t *r = arg;
  cs_reduce_kernel_mm(r->c->dtype, r->c->op, (cs_minmax_t)r->c->minmax,
                      r->x_first, acc->buf, src, n);
}

/* acc = acc op (peer's elements [off, off+v), read as `phys`): a remote
 * load and a reduce, two events. The local value is the first operand
 * (the reference's order): acc's, unless `peer` is this rank (the ring's
 * own copy folded into the received partial). Where the transport allows it (free
 * mode) the reduce reads the window in place (one pass over the data, no
 * copy into the receive tile); elsewhere (controlled mode, where other
 * actors may run in between) the load copies and the reduce runs as its
 * own event. Same bits either way. */
static inline void cs__ar_load_reduce(cs_dev_t *d, cs_ar_tiles_t *t,
                                      uint32_t peer, uint64_t off, uint32_t v,
                                      uint32_t phys, const cs_ar_cfg_t *c)
{
  int x_first = peer == d->rank;
  if (!cs_dev_in_place(d)) {
    cs_load(d, &t->recv, peer, CS_AR_SLOT_DATA, off, v, phys);
    cs__ar_reduce(d, &t->acc, &t->recv, c, x_first);
    return;
  }
  cs__ar_red_t r = {c, &t->acc, NULL, x_first};
  cs_load_fused(d, &t->acc, peer, CS_AR_SLOT_DATA, off, v, phys,
                cs__ar_consume, &r);
  cs__dev_reduce(d, c->op, v, NULL, NULL); /* the work happened in the load */
}

/* The own signal cells that missed their final value before the reset:
 * how many, and the first of them (row-major, row * nranks + src). */
typedef struct cs_ar_sigbad {
  uint32_t n;    /* non-self cells not exactly their total */
  uint32_t cell; /* the first of them: own cell index */
  int32_t  got;  /*   the value it held */
  int32_t  want; /*   its total */
} cs_ar_sigbad_t;

/* Self-clearing epilogue (docs/algorithms.md §2.3; PyPTO #2175/#2279):
 * after the last barrier, for rows [0, nrows) and every src != me,
 * AtomicAdd -total to the own cell [row, src] (-last_total on the last row). Every peer's
 * notifies of this call have landed (the last wait saw them), so the cells
 * return to 0; adds commute, so a peer already in its next call keeps its
 * +1. Skipped (the cells keep their totals) unless k->epilogue. `bad` (may
 * be NULL) counts non-self cells that were not exactly their total before
 * the reset, and names the first. */
void cs__ar_epilogue(cs_dev_t *d, const cs_knobs_t *k, uint32_t nrows,
                     int32_t total, int32_t last_total, cs_ar_sigbad_t *bad);

/* Whether `rank`'s own `cell` is one no peer signals in a call of c (a
 * descriptor's signal_silent, algo.h). */
typedef bool (*cs__ar_silent_fn)(const cs_ar_cfg_t *c, uint32_t rank,
                                 uint64_t cell);

/* The same epilogue when only some non-self cells are signalled (the
 * neighbour barriers): a cell `silent` names must hold 0 before the reset
 * and is not reset; the others as above. */
void cs__ar_epilogue_some(cs_dev_t *d, const cs_knobs_t *k, uint32_t nrows,
                          int32_t total, int32_t last_total,
                          cs__ar_silent_fn silent, const cs_ar_cfg_t *c,
                          cs_ar_sigbad_t *bad);

/* How teach's tags and folds read for an algorithm of chunks (mesh,
 * host): a descriptor's legend (algo.h). */
#define CS_AR_CHUNKED_LEGEND                                                   \
  "ph1 r0: the main phase; c0 = chunk 0; [2+0+1]: r2's input op r0's op r1's"

/* The place of a wait in an algorithm of chunks (mesh, host): target 1
 * is the ready barrier, 2 + ci chunk ci's read-complete barrier, into buf
 * ("read-complete of chunk 3, rank 1's notify"). A descriptor's
 * wait_where (algo.h). */
void cs__ar_chunked_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                          uint32_t rank, uint32_t cell, int32_t target,
                          char *buf, size_t n);

/* The place of a wait on `cell` in an algorithm of neighbour barriers, one
 * signal row per barrier (ring-nb, host-push, ring-bidir): rows 0..N-2 the
 * reduce-scatter's steps, rows N-1..2N-3 the all-gather's, a later row the
 * final barrier, told as `last`; steps are numbered from `first` with the
 * letter the algorithm's tags use ("neighbour barrier of RS s1, rank 2's
 * notify"). */
void cs__ar_neighbour_where(const cs_ar_cfg_t *c, uint32_t cell, char letter,
                            uint32_t first, const char *last, char *buf,
                            size_t n);

/* For a push ring whose barriers wait on both neighbours (host-push,
 * ring-bidir): whether rank's own `cell` is one neither neighbour
 * signals (a descriptor's signal_silent), and a wait's place ("neighbour
 * barrier of RS s1, rank 2's notify", the final barrier last; a
 * descriptor's wait_where). */
bool cs__ar_two_neighbours_silent(const cs_ar_cfg_t *c, uint32_t rank,
                                  uint64_t cell);
void cs__ar_push_ring_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                            uint32_t rank, uint32_t cell, int32_t target,
                            char *buf, size_t n);

#endif
