/*
 * ring_push.c - InCore ring allreduce of PyPTO PR #2280, push model: every
 * rank writes (puts) into its right neighbour's window and reads only its
 * own (docs/algorithms.md §4.4).
 *
 * Function:     cs__ar_ring_push (through cs_allreduce), and its
 *               descriptor cs__algo_ring_push at the end of this file
 * Accepts:      what the pull ring accepts: N >= 1 ranks, any count >= 1,
 *               fp32/fp16/bf16, sum/max/min/prod
 * Returns:      the pull ring's bits on every rank: for segment k the fold
 *               ((x[k+1] op x[k+2]) op ...) op x[k], each op with the
 *               receiving rank's own value first
 * Description:  the pull ring's segments, subchunks, signal rows and
 *               targets. Reduce-scatter round t (row t), subchunk j: rank r
 *               reads its own value of segment kR = (r-t-2) mod N, takes
 *               the READY barrier (>= 2j+1: every rank has read its own
 *               value, no push has landed), puts its segment
 *               kS = (r-t-1) mod N into the same range of its right
 *               neighbour's window (kS of r is kR of r+1), takes the
 *               PUSH-DONE barrier (>= 2j+2: every push has landed), reads
 *               what its left neighbour pushed into kR, folds its own
 *               value first, and stores the result. All-gather round t
 *               (row N-1+t): READY, a put of segment (r-t) mod N to the
 *               right, PUSH-DONE; the put is the store. Every rank takes
 *               both barriers of every (round, subchunk), active lane or
 *               not; an inactive reduce-scatter lane reads element 0
 *               twice, discards it, and puts nothing. Upstream issues its
 *               first placeholder read before READY; here it comes after
 *               (its value is discarded either way): before READY it
 *               would race with the rank's own store of the previous
 *               round into element 0, a race collsim check reports.
 * Signals:      [2(N-1), N] int32, every non-self cell reaches 2K: the
 *               pull ring's.
 * Cost:         4K(N-1) all-to-all barriers (4K(N-1)^2 notifies per
 *               rank); rank r puts 2S - |seg r| - |seg r+1| bytes to its
 *               right neighbour (what r+1 loads from r in the pull ring),
 *               2(N-1)*S over all ranks; no remote load at all.
 * Limitations:  a put reads its source with a local load event and writes
 *               it with a put event (upstream's TPUT is one instruction
 *               with a load and a store inside); no 2-byte over-read is
 *               left, since nothing reads remotely.
 *
 * Who holds what after each round, 4 ranks (as the pull ring's table,
 * docs/algorithms.md §4.3: the same folds in the same order):
 *
 *          rank0            rank1            rank2            rank3
 *   RS t0  s2=[3+0]         s3=[0+1]         s0=[1+2]         s1=[2+3]
 *   RS t2  s0=[1+2+3+0]     s1=[2+3+0+1]     s2=[3+0+1+2]     s3=[0+1+2+3]
 *   AG t0  s3 pushed by r3  s0 pushed by r0  s1 pushed by r1  s2 pushed by r2
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* Segment k's range: [*b, *b + *len). */
static void seg_range(const cs_ar_cfg_t *c, uint32_t k, uint32_t sn,
                      uint32_t es, uint64_t *b, uint64_t *len)
{
  *b = cs_ring_bound(k, c->count, sn, es);
  *len = cs_ring_bound(k + 1, c->count, sn, es) - *b;
}

/* Elements of subchunk `sub` of a segment of `len` (0: inactive). */
static uint32_t lane(uint64_t len, uint64_t sub, uint64_t w)
{
  return sub < len ? (uint32_t)(len - sub < w ? len - sub : w) : 0;
}

/* Puts elements [off, off+v) of the own window into the same range of
 * `right`'s: read into the staging tile, then written. */
static void push(cs_dev_t *d, cs_tile_t *stage, uint32_t right, uint64_t off,
                 uint32_t v)
{
  cs_load(d, stage, d->rank, CS_AR_SLOT_DATA, off, v, v);
  cs_put(d, stage, right, CS_AR_SLOT_DATA, off, v);
}

/* The own value of the receive segment's subchunk into acc (an inactive
 * lane: element 0, discarded). */
static void own_read(cs_dev_t *d, cs_ar_tiles_t *t, uint64_t br, uint64_t sub,
                     uint32_t vr)
{
  cs_load(d, &t->acc, d->rank, CS_AR_SLOT_DATA, vr ? br + sub : 0,
          vr ? vr : 1, vr ? vr : 1);
}

/* One round of `phase` on its own signal row; returns the barriers it
 * took there. */
static int32_t push_round(cs_dev_t *d, const cs_ar_cfg_t *c,
                          const cs_knobs_t *k, cs_ar_tiles_t *t, int phase,
                          uint32_t round, uint64_t w, uint64_t k_sub)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint32_t sn = n + k->static_nr_extra; /* the segment math's rank count */
  uint32_t right = (me + 1) % n;
  uint32_t row = phase == PHASE_RS ? round : round + n - 1;
  /* send: the segment the right neighbour receives; recv: the own one */
  uint32_t ks = phase == PHASE_RS ? cs_ring_rs_seg(right, round, n)
                                  : cs_ring_ag_seg(right, round, n);
  uint32_t kr = cs_ring_rs_seg(me, round, n);
  uint64_t bs, ls, br, lr;
  seg_range(c, ks, sn, es, &bs, &ls);
  seg_range(c, kr, sn, es, &br, &lr);
  int last_round = phase == PHASE_AG && round + 2 == n;
  int32_t seen = 0;
  /* READY's fence is also what lands the rank's previous store of the
   * segment it now puts (RS round t+1 sends what round t stored, AG round
   * 0 what the last RS round stored): upstream's PIPE_ALL before every
   * put. --bug push-no-put-predrain notifies READY without it. */
  cs_knobs_t ready_k = *k;
  ready_k.fence_before_notify = false;

  cs_mark(d, (uint32_t)phase, round);
  for (uint64_t j = 0; j < k_sub; j++) {
    uint64_t sub = j * w;
    uint32_t vs = lane(ls, sub, w), vr = lane(lr, sub, w);
    int last = last_round && j + 1 == k_sub;
    cs_dev_step(d, (uint32_t)j);
    /* The own value, before anyone pushes; an inactive lane's placeholder
     * after READY (see the header) */
    int early = vr && k->own_read_first;
    if (phase == PHASE_RS && early)
      own_read(d, t, br, sub, vr);
    if (k->ready_barrier)
      cs__ar_barrier(d, k->put_predrain ? k : &ready_k, row,
                     ++seen); /* READY */
    if (phase == PHASE_RS && !early)
      own_read(d, t, br, sub, vr); /* or --bug push-own-read-after-ready */
    if (vs)
      push(d, &t->recv, right, bs + sub, vs);
    if ((k->final_barrier || !last) && (k->push_done_barrier || last))
      cs__ar_barrier(d, k, row, ++seen); /* PUSH-DONE */
    if (phase == PHASE_AG)
      continue;
    /* what the left neighbour pushed; own value first in the fold */
    cs_load(d, &t->recv, me, CS_AR_SLOT_DATA, vr ? br + sub : 0, vr ? vr : 1,
            vr ? vr : 1);
    if (vr) {
      cs__ar_reduce(d, &t->acc, &t->recv, c, 0);
      cs_store(d, &t->acc, CS_AR_SLOT_DATA, br + sub, vr);
    }
  }
  return seen;
}

void cs__ar_ring_push(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                      cs_ar_tiles_t *t, cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, es = cs_dtype_size(c->dtype);
  uint32_t sn = n + k->static_nr_extra;
  uint64_t w = cs_ring_width(c->count, sn, es, c->tile_bytes);
  uint64_t k_sub = cs_ring_subchunks(c->count, sn, es, c->tile_bytes);
  t->acc.width = t->recv.width = (uint32_t)w;
  /* The input is in the window before the call: upstream, an earlier
   * kernel wrote it; here the stage-in's stores, which a posted model may
   * still hold. The pull ring fences them at its first barrier, before
   * its first read; this ring reads its own value before that barrier. */
  if (k->fence_before_notify)
    cs_fence(d);
  int32_t per_row = 0, last_row = 0;
  for (uint32_t r = 0; r + 1 < n; r++)
    per_row = push_round(d, c, k, t, PHASE_RS, r, w, k_sub);
  for (uint32_t r = 0; r + 1 < n; r++)
    last_row = push_round(d, c, k, t, PHASE_AG, r, w, k_sub);
  if (n > 1)
    cs__ar_epilogue(d, k, 2 * (n - 1), per_row, last_row, bad);
}

/* ------------------------------------------------------------ descriptor */

/* Row t: RS round t; row N-1+t: AG round t. Per subchunk j: READY
 * (2j+1), then PUSH-DONE (2j+2); only PUSH-DONE (j+1) without READY. */
static void push_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                       uint32_t rank, uint32_t cell, int32_t target, char *buf,
                       size_t n)
{
  (void)rank;
  cs__ring_where_named(c, k, cell, target, "PUSH-DONE", buf, n);
}

/* Rank r puts what rank r+1 loads from it in the pull ring. */
static void push_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                        cs_algo_volume_t *v)
{
  v->what = "2(N-1)/N*S";
  v->formula = cs_ring_remote_bytes_formula(c->count, c->nranks, es, c->iters);
  v->exact = cs_ring_remote_bytes((r + 1) % c->nranks, c->count, c->nranks,
                                  es, c->iters);
}

static const char *const push_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_ring_push = {
    .name = "ring-push",
    .what = "InCore push ring of PyPTO PR #2280",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .half_fill_pto = true,
    .body = cs__ar_ring_push,
    .signal_cells = cs__ring_cells,
    .signal_final = cs__ring_final,
    .final_text = "2K per row",
    .wait_where = push_where,
    .phases = push_phases,
    .nphases = 2,
    .ready_barrier = "PUSH-DONE",
    .read_done_barrier = "READY",
    .fold = CS_FOLD_RING,
    .fold_text = "ring fold order, identical on every rank",
    .notifies = cs__ring_notifies,
    .volume = push_volume,
    .total_volume = cs__ring_total,
    .segment_len = cs__ring_seg,
    .pull_ring = false,
    .push = true,
    .teach = true,
    .part_letter = 's',
    .parts = cs__ring_parts,
    .part_lo = cs__ring_part_lo,
    .legend = "RS t1 j0: reduce-scatter round 1, subchunk 0 (AG: all-gather); "
              "[2+3]: r2 op r3",
};
