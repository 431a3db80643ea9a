/*
 * ring_nb.c - the pull ring of hw-native-sys/simpler's scene tests
 * (allreduce_ring_kernel, PR #1383): a ring whose barrier joins only
 * neighbours, one per step (docs/algorithms.md §4.5).
 *
 * Function:     the body cs__ar_ring_nb, reached through its descriptor
 *               cs__algo_ring_nb at the end of this file
 * Accepts:      N >= 1 ranks and a count that is a multiple of N (the
 *               kernel's own precondition; refused otherwise), fp32/fp16/
 *               bf16, sum/max/min/prod (upstream runs fp32 sum only)
 * Returns:      the same bits on every rank: chunk q (elements
 *               [q*c, (q+1)*c), c = count/N) folded in the ring's order,
 *               x[q] op (x[q-1] op (... op (x[q+2] op x[q+1])))
 * Description:  2(N-1) steps, each on its own signal row and opened by a
 *               neighbour barrier: the fence, +1 to the right
 *               neighbour's cell [row, me], wait >= 1 on the own cell
 *               [row, left]. Reduce-scatter step s = 1..N-1 (row s-1):
 *               chunk k = (r-s-1) mod N is loaded from the left
 *               neighbour, the own chunk k folded into it (own value
 *               first) and the result stored into the own chunk k.
 *               All-gather step s (row N-2+s): chunk (r-s) mod N is
 *               loaded from the left and stored. No read-complete
 *               barrier: a rank passing step g's barrier implies, around
 *               the ring of left-waits, that its right neighbour finished
 *               step g-N+1, the last step that read what step g
 *               overwrites. Then, only with self-clearing signals
 *               (collsim's repeated calls; upstream's kernel is single
 *               use), a DONE barrier in the other direction on row
 *               2(N-1): +1 to the left neighbour, wait for the right one,
 *               which has then finished its last load from this rank's
 *               window, so the next call's stage-in cannot overwrite it;
 *               and the epilogue, which clears only the cells that were
 *               signalled. With --signals single-use, the upstream
 *               kernel's rows and call exactly.
 * Signals:      [2(N-1), N] int32 (single use) or [2N-1, N]; on rank r
 *               only cell [row, r-1] (DONE row: [row, r+1]) is signalled
 *               and reaches 1; every other cell stays 0.
 * Cost:         one notify per step: 2(N-1) (2N-1) per rank per call,
 *               against the all-to-all ring's 4K(N-1)^2; each rank loads
 *               2(N-1)/N*S bytes from its left neighbour.
 * Limitations:  upstream's barrier fences with a pipe barrier only; here
 *               the fence is the full one (pipe barrier and DDR fence),
 *               as every collsim algorithm's: --bug drain-no-ddr-fence
 *               gives upstream's kernel, which --memory-model a2a3 fails
 *               (the neighbour-barrier pull ring that failed on silicon).
 *               Upstream's one tile per chunk is generalised to tiles of
 *               --tile-bytes; 2-byte remote loads read exactly the valid
 *               elements.
 *
 * Who holds what, 4 ranks (chunks c0..c3; [1+2] = x1 op x2 as folded):
 *
 *            rank0          rank1          rank2          rank3
 *   RS s1    c2=[0+3]       c3=[1+0]       c0=[2+1]       c1=[3+2]
 *   RS s2    c1=[0+3+2]     c2=[1+0+3]     c3=[2+1+0]     c0=[3+2+1]
 *   RS s3    c0=[0+3+2+1]   c1=[1+0+3+2]   c2=[2+1+0+3]   c3=[3+2+1+0]
 *   AG s1    c3 from rank3  c0 from rank0  c1 from rank1  c2 from rank2
 *   AG s2    c2             c3             c0             c1
 *   AG s3    c1: all four chunks reduced on every rank
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* The neighbour barrier on `row`: the fence, +1 to `to`'s cell
 * [row, me], wait >= 1 (k->wait_cmp) on the own cell [row, from]. */
static void nb_barrier(cs_dev_t *d, const cs_knobs_t *k, uint32_t row,
                       uint32_t to, uint32_t from)
{
  uint32_t n = d->nranks, me = d->rank;
  if (k->fence_before_notify && k->ddr_fence)
    cs_fence(d);
  else if (k->fence_before_notify)
    cs_pipe_barrier(d);
  cs_notify(d, to, CS_AR_SLOT_SIGNAL, row * n + me, CS_NOTIFY_ADD, 1);
  cs_wait_until(d, CS_AR_SLOT_SIGNAL, row * n + from, k->wait_cmp, 1);
}

/* The one signalled cell of `row` on rank `me`: its left neighbour's,
 * or on the DONE row its right neighbour's. */
static uint32_t nb_src(uint32_t n, uint32_t me, uint32_t row)
{
  return row == 2 * (n - 1) ? (me + 1) % n : (me + n - 1) % n;
}

/* One step: chunk `q` from the left neighbour, tile by tile; reduce
 * (RS: the own copy folded in, own value first) and store it. */
static void nb_step(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                    int phase, uint32_t q, uint64_t w)
{
  uint32_t n = d->nranks, left = (d->rank + n - 1) % n;
  uint64_t chunk = c->count / n, end = (q + 1) * chunk;
  uint32_t j = 0;
  for (uint64_t off = q * chunk; off < end; off += w, j++) {
    uint32_t v = (uint32_t)(end - off < w ? end - off : w);
    cs_dev_step(d, j);
    cs_load(d, &t->acc, left, CS_AR_SLOT_DATA, off, v, v);
    if (phase == PHASE_RS)
      cs__ar_load_reduce(d, t, d->rank, off, v, v, c);
    cs_store(d, &t->acc, CS_AR_SLOT_DATA, off, v);
  }
}

static bool ring_nb_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell);

static void cs__ar_ring_nb(cs_dev_t *d, const cs_ar_cfg_t *c,
                           const cs_knobs_t *k, cs_ar_tiles_t *t,
                           cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint32_t left = (me + n - 1) % n, right = (me + 1) % n;
  uint64_t w = cs_max_chunk(es, c->tile_bytes);
  t->acc.width = t->recv.width = (uint32_t)w;
  if (n == 1)
    return; /* one rank: its input is the result, no barrier */

  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_RS, s - 1);
    nb_barrier(d, k, s - 1, right, left);
    nb_step(d, c, t, PHASE_RS, (me + 2 * n - s - 1) % n, w);
  }
  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_AG, s - 1);
    nb_barrier(d, k, n - 2 + s, right, left);
    nb_step(d, c, t, PHASE_AG, (me + n - s) % n, w);
  }
  uint32_t rows = 2 * (n - 1);
  if (cs__has_done(k))
    nb_barrier(d, k, rows++, left, right);

  /* The epilogue (barrier.h's contract) over the signalled cells only. */
  cs__ar_epilogue_some(d, k, rows, 1, 1, ring_nb_silent, c, bad);
}

/* ------------------------------------------------------------ descriptor */

static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  return 2 * (c->nranks - 1) + (cs__has_done(&k) ? 1 : 0);
}

static uint64_t ring_nb_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)rows(c) * c->nranks;
}

static bool ring_nb_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell)
{
  uint32_t n = c->nranks;
  return cell % n != nb_src(n, rank, (uint32_t)(cell / n));
}

static void ring_nb_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                          uint32_t rank, uint32_t cell, int32_t target,
                          char *buf, size_t n)
{
  (void)k;
  (void)rank;
  (void)target;
  cs__ar_neighbour_where(c, cell, 't', 0,
                         "DONE barrier (the right neighbour gathered)", buf, n);
}

static void ring_nb_notifies(const cs_ar_cfg_t *c, int single,
                             cs_algo_notifies_t *s)
{
  uint64_t r = rows(c);
  s->per_call = r;
  s->epilogue = r;
  bool done = r > 2 * (uint64_t)(c->nranks - 1);
  s->what = single ? (done ? "2N-1" : "2(N-1)")
                   : (done ? "2N-1 + 2N-1 epilogue"
                           : "2(N-1) + 2(N-1) epilogue");
}

static const char *const ring_nb_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_ring_nb = {
    .name = "ring-nb",
    .what = "pull ring with neighbour barriers of simpler PR #1383",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .meets = cs__chunks_meets,
    .precondition = "a count that is a multiple of the rank count",
    .half_fill_pto = false,
    .body = cs__ar_ring_nb,
    .signal_cells = ring_nb_cells,
    .signal_final = cs__one_per_row,
    .signal_silent = ring_nb_silent,
    .final_text = "1 per row",
    .signalled = "every neighbour cell",
    .wait_where = ring_nb_where,
    .phases = ring_nb_phases,
    .nphases = 2,
    .ready_barrier = "NEIGHBOUR",
    .read_done_barrier = NULL,
    .fold = CS_FOLD_RING_EQUAL,
    .fold_text = "ring fold order on equal chunks, identical on every rank",
    .notifies = ring_nb_notifies,
    .volume = cs__chunks_volume,
    .teach = true,
    .part_letter = 'c',
    .parts = cs__chunks_parts,
    .part_lo = cs__chunks_part_lo,
    .legend = "RS t0 j1: reduce-scatter step 1, tile 1 (AG: all-gather); "
              "[2+1]: r2's input op r1's",
};
