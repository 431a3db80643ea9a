/*
 * ring.c - InCore ring allreduce of PyPTO PR #2161 (docs/algorithms.md
 * §4), pull model: every rank reads only from its left neighbour.
 *
 * Function:     cs__ar_ring (through cs_allreduce), and its descriptor
 *               cs__algo_ring (algo.h) at the end of this file
 * Accepts:      N >= 1 ranks, any count >= 1 (count < N, ragged and empty
 *               segments included), fp32/fp16/bf16, sum/max/min/prod
 * Returns:      every rank holds the same bits: for segment k the fold
 *               ((x[k+1] op x[k+2]) op ...) op x[k]
 * Description:  N segments, B(i) = floor(i*S/N) (fp32) or boundaries
 *               rounded up to 16 elements (2-byte dtypes; some segments
 *               may be empty). Reduce-scatter rounds t = 0..N-2 on signal
 *               row t: rank r folds its own copy of segment (r-t-2) mod N
 *               into the partial it reads from the left. All-gather rounds
 *               t = 0..N-2 on row N-1+t: rank r copies segment (r-t-1) mod N
 *               from the left. Each round walks K subchunks of W elements;
 *               every (round, subchunk) has a READY barrier (>= 2j+1) before
 *               the read and a READ-COMPLETE barrier (>= 2j+2) before the
 *               store, taken by every rank, active lane or not. An inactive
 *               lane (subchunk past its segment's end) does a placeholder
 *               local load of element 0 and stores nothing.
 * Signals:      [2(N-1), N] int32; every non-self cell reaches 2K.
 * Cost:         4K(N-1) all-to-all barriers: 4K(N-1)^2 notifies per rank;
 *               bytes loaded from the left 2(N-1)/N * S per rank (the
 *               bandwidth-optimal ring volume), stored the same.
 * Limitations:  static and runtime N agree unless --bug nr-mismatch
 *               (docs/algorithms.md §8.13): then the segment math (bounds, W, K) uses
 *               N+1, as a signal built for N+1 ranks makes it, while the
 *               loops run N; the signal cells stay those of N ranks.
 *
 * Buffers after each round, 4 ranks, segments s0..s3 ([1+2] = x1 op x2,
 * left-to-right fold order; '.' = own input):
 *
 *          rank0            rank1            rank2            rank3
 *   RS t0  s2=[3+0]         s3=[0+1]         s0=[1+2]         s1=[2+3]
 *   RS t1  s1=[2+3+0]       s2=[3+0+1]       s3=[0+1+2]       s0=[1+2+3]
 *   RS t2  s0=[1+2+3+0]     s1=[2+3+0+1]     s2=[3+0+1+2]     s3=[0+1+2+3]
 *   AG t0  s3 from rank3    s0 from rank0    s1 from rank1    s2 from rank2
 *   AG t1  s2               s3               s0               s1
 *   AG t2  s1: all four segments reduced on every rank
 */
#include <stdio.h>

#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* One round of `phase` on its own signal row; returns the barriers it
 * took there, the value every non-self cell of that row reaches. */
static int32_t ring_round(cs_dev_t *d, const cs_ar_cfg_t *c,
                          const cs_knobs_t *k, cs_ar_tiles_t *t, int phase,
                          uint32_t round, uint64_t w, uint64_t k_sub)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint32_t sn = n + k->static_nr_extra; /* the segment math's rank count */
  uint32_t left = (me + n - 1) % n;
  uint32_t row = phase == PHASE_RS ? round : round + n - 1;
  uint32_t seg = phase == PHASE_RS ? cs_ring_rs_seg(me, round, n)
                                   : cs_ring_ag_seg(me, round, n);
  uint64_t b, len;
  if (k->ring_tail) {
    b = cs_ring_bound(seg, c->count, sn, es);
    len = cs_ring_bound(seg + 1, c->count, sn, es) - b;
  } else {
    /* Pre-#1942: chunk = SIZE / NR, the SIZE % NR tail belongs to nobody. */
    uint64_t chunk = c->count / n;
    b = seg * chunk;
    len = chunk;
  }
  int last_round = phase == PHASE_AG && round + 2 == n;
  int32_t seen = 0; /* barriers taken on this row so far */

  cs_mark(d, (uint32_t)phase, round);
  int drain_only_first = !k->stage_in_ddr_fence && phase == PHASE_RS &&
                         round == 0; /* the knob below, tested once */
  for (uint64_t j = 0; j < k_sub; j++) {
    uint64_t sub = j * w;
    int active = sub < len;
    uint32_t v = active ? (uint32_t)(len - sub < w ? len - sub : w) : 0;
    uint32_t lv = v ? v : 1; /* inactive lanes use one safe element */
    int last = last_round && j + 1 == k_sub;
    cs_dev_step(d, (uint32_t)j);

    /* The call's first READY publishes the staged input; --bug
     * ring-stage-in-drain-only drains it there without a DDR fence. */
    const cs_knobs_t *rk = k;
    cs_knobs_t first_k;
    if (drain_only_first && j == 0) {
      first_k = *k;
      first_k.ddr_fence = false;
      rk = &first_k;
    }
    if (k->ready_barrier)
      cs__ar_barrier(d, rk, row, ++seen); /* READY */
    if (active && phase == PHASE_RS) {
      /* The reference's order: remote load, local load, local op received.
       * IEEE + and x commute bitwise (and max/min as defined in reduce.h),
       * so the received data goes into acc and, in free mode, the local
       * copy is folded in straight from the window. */
      cs_load(d, &t->acc, left, CS_AR_SLOT_DATA, b + sub, lv,
              (uint32_t)cs_remote_phys(lv, es));
      cs__ar_load_reduce(d, t, me, b + sub, lv, lv, c);
    } else if (active) {
      cs_load(d, &t->recv, left, CS_AR_SLOT_DATA, b + sub, lv,
              (uint32_t)cs_remote_phys(lv, es));
    } else if (phase == PHASE_AG && k->inactive_lane_remote_read) {
      cs_load(d, &t->recv, left, CS_AR_SLOT_DATA, 0, 1,
              (uint32_t)cs_remote_phys(1, es)); /* earlier revision */
    } else {
      cs_load(d, &t->acc, me, CS_AR_SLOT_DATA, 0, 1, 1); /* placeholder */
    }
    if (k->final_barrier || !last)
      cs__ar_barrier(d, k, row, ++seen); /* READ-COMPLETE */
    if (active)
      cs_store(d, phase == PHASE_RS ? &t->acc : &t->recv, CS_AR_SLOT_DATA,
               b + sub, v);
  }
  return seen;
}

void cs__ar_ring(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, es = cs_dtype_size(c->dtype);
  uint32_t sn = n + k->static_nr_extra;
  uint64_t w = cs_ring_width(c->count, sn, es, c->tile_bytes);
  uint64_t k_sub = cs_ring_subchunks(c->count, sn, es, c->tile_bytes);
  t->acc.width = t->recv.width = (uint32_t)w;

  /* Every row takes the same barriers, except that the call's last row may
   * drop its final one: the epilogue clears `per_row` from all rows but the
   * last and `last_row` from the last. */
  int32_t per_row = 0, last_row = 0;
  for (uint32_t r = 0; r + 1 < n; r++)
    per_row = ring_round(d, c, k, t, PHASE_RS, r, w, k_sub);
  for (uint32_t r = 0; r + 1 < n; r++)
    last_row = ring_round(d, c, k, t, PHASE_AG, r, w, k_sub);
  if (n > 1)
    cs__ar_epilogue(d, k, 2 * (n - 1), per_row, last_row, bad);
}

/* ------------------------------------------------------------ descriptor */

uint64_t cs__ring_cells(const cs_ar_cfg_t *c)
{
  uint64_t n = c->nranks;
  return 2 * (n - 1) * n;
}

int32_t cs__ring_final(const cs_ar_cfg_t *c)
{
  return (int32_t)(2 * cs_ring_subchunks(c->count, c->nranks,
                                         cs_dtype_size(c->dtype), c->tile_bytes));
}

/* Row t: RS round t; row N-1+t: AG round t. Per subchunk j the row takes
 * READY (2j+1) then READ-COMPLETE (2j+2), or only the latter (j+1)
 * without READY barriers. */
void cs__ring_where_named(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                          uint32_t cell, int32_t target, const char *second,
                          char *buf, size_t n)
{
  uint32_t nr = c->nranks, from = cell % nr, row = cell / nr;
  const char *ph = row + 1 < nr ? "RS" : "AG";
  uint32_t t = row + 1 < nr ? row : row - (nr - 1);
  int ready = k->ready_barrier && target % 2 == 1;
  int32_t j = k->ready_barrier ? (target - 1) / 2 : target - 1;
  snprintf(buf, n, "%s barrier of %s t%u j%d, rank %u's notify",
           ready ? "READY" : second, ph, t, j, from);
}

static void ring_where(const cs_ar_cfg_t *c, const cs_knobs_t *k, uint32_t rank,
                       uint32_t cell, int32_t target, char *buf, size_t n)
{
  (void)rank;
  cs__ring_where_named(c, k, cell, target, "READ-COMPLETE", buf, n);
}

void cs__ring_notifies(const cs_ar_cfg_t *c, int single, cs_algo_notifies_t *s)
{
  uint64_t n1 = c->nranks - 1;
  s->per_call = 2 * (uint64_t)cs__ring_final(c) * n1 * n1; /* 2K x 2(N-1) rows x (N-1) */
  s->epilogue = 2 * n1 * n1;
  s->what = single ? "4K(N-1)^2" : "4K(N-1)^2 + 2(N-1)^2 epilogue";
}

static void ring_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                        cs_algo_volume_t *v)
{
  v->what = "2(N-1)/N*S";
  v->formula = cs_ring_remote_bytes_formula(c->count, c->nranks, es, c->iters);
  v->exact = cs_ring_remote_bytes(r, c->count, c->nranks, es, c->iters);
}

uint64_t cs__ring_total(const cs_ar_cfg_t *c, uint32_t es, const char **what)
{
  *what = "2(N-1)*S";
  return cs_ring_total_remote_bytes(c->count, c->nranks, es, c->iters);
}

uint64_t cs__ring_seg(const cs_ar_cfg_t *c, uint64_t k, uint32_t es)
{
  return cs_ring_seg_len(k, c->count, c->nranks, es);
}

uint64_t cs__ring_parts(const cs_ar_cfg_t *c) { return c->nranks; }

uint64_t cs__ring_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  return cs_ring_bound(i, c->count, c->nranks, cs_dtype_size(c->dtype));
}

static const char *const ring_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_ring = {
    .name = "ring",
    .what = "InCore ring allreduce of PyPTO PR #2161",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .half_fill_pto = true,
    .body = cs__ar_ring,
    .signal_cells = cs__ring_cells,
    .signal_final = cs__ring_final,
    .final_text = "2K per row",
    .wait_where = ring_where,
    .phases = ring_phases,
    .nphases = 2,
    .ready_barrier = "READY",
    .read_done_barrier = "READ-COMPLETE",
    .fold = CS_FOLD_RING,
    .fold_text = "ring fold order, identical on every rank",
    .notifies = cs__ring_notifies,
    .volume = ring_volume,
    .total_volume = cs__ring_total,
    .segment_len = cs__ring_seg,
    .pull_ring = true,
    .teach = true,
    .part_letter = 's',
    .parts = cs__ring_parts,
    .part_lo = cs__ring_part_lo,
    .legend = "RS t1 j0: reduce-scatter round 1, subchunk 0 (AG: all-gather); "
              "[2+3]: r2 op r3",
};
