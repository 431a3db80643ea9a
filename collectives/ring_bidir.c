/*
 * ring_bidir.c - the bidirectional push ring of hw-native-sys/simpler's
 * scene tests (allreduce_bidirectional_ring_kernel, PRs #1271 and #1383):
 * two push rings at once, one clockwise over the first half of every
 * chunk and one counter-clockwise over the second half, sharing one
 * neighbour barrier per step (docs/algorithms.md §4.7).
 *
 * Function:     the body cs__ar_ring_bidir, reached through its descriptor
 *               cs__algo_ring_bidir at the end of this file
 * Accepts:      N >= 1 ranks, fp32, sum, a count that is a multiple of 2N
 *               (the kernel's divisibility check; its reducing puts are
 *               fp32 atomic adds; refused otherwise)
 * Returns:      the same bits on every rank. Chunk q is the c = count/N
 *               elements from q*c, h = c/2; its first half (ring 0) is
 *               x[q] + (x[q-1] + (... + (x[q+2] + x[q+1]))), its second
 *               half (ring 1) the mirror, x[q] + (x[q+1] + (... + (x[q-2]
 *               + x[q-1])))
 * Description:  2N-1 signal rows, one neighbour barrier each: the fence,
 *               +1 to cell [row, me] of the right neighbour and, when the
 *               left one is another rank, of the left; wait >= 1 on the
 *               own [row, left] and, when it is another rank, [row,
 *               right]. Reduce-scatter step s = 1..N-1 (row s-1): the
 *               barrier, then ring 0's half of chunk (r-s) mod N is put
 *               into the same range of the right neighbour's window,
 *               adding, and ring 1's half of chunk (r+s) mod N into the
 *               left neighbour's, adding. All-gather step s (row N-2+s):
 *               the barrier, then ring 0's half of chunk (r-s+1) mod N
 *               put plainly to the right and ring 1's half of chunk
 *               (r+s-1) mod N to the left. A final barrier on row 2N-2:
 *               every push into this window has landed (upstream's guard
 *               before its stage-out). Every put is a local load of the
 *               own half and one put event, in tiles of --tile-bytes;
 *               each step's puts end with a pipe barrier. The halves stay
 *               where they are in the data slot (upstream's stage-in
 *               copies them into two arrays; the accesses are the same).
 * Signals:      [2N-1, N] int32. On rank r only [row, r-1] and [row, r+1]
 *               are signalled (at N = 2 the one peer, once: upstream's
 *               barrier collapses when left = right), and each reaches 1.
 *               Epilogue: -1 on each of them; none with --signals
 *               single-use (upstream's kernel).
 * Cost:         2(2N-1) notifies (N = 2: 2N-1) per rank per call; each
 *               rank puts (N-1)/N*S bytes to each neighbour, 2(N-1)/N*S
 *               in all, and loads nothing remotely.
 * Limitations:  upstream fences with a pipe barrier only; here the
 *               barrier's fence is the full one, as every collsim
 *               algorithm's (--bug drain-no-ddr-fence gives upstream's).
 *               The atomic add rounds as one binary32 addition.
 *
 * Who holds what, 3 ranks (ring 0 halves a, ring 1 halves b; [1+0] =
 * x1 + x0 as added):
 *
 *            rank0            rank1            rank2
 *   RS s1    a1=[0+2] b2=[0+1] a2=[1+0] b0=[1+2] a0=[2+1] b1=[2+0]
 *   RS s2    a0=[0+2+1]       a1=[1+0+2]       a2=[2+1+0]
 *            b0=[0+1+2]       b1=[1+2+0]       b2=[2+0+1]
 *   AG s1,2  every half copied on, a to the right and b to the left
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* The neighbour barrier on `row`. */
static void bd_barrier(cs_dev_t *d, const cs_knobs_t *k, uint32_t row)
{
  uint32_t n = d->nranks, me = d->rank;
  uint32_t left = (me + n - 1) % n, right = (me + 1) % n;
  uint32_t base = row * n;
  if (k->fence_before_notify && k->ddr_fence)
    cs_fence(d);
  else if (k->fence_before_notify)
    cs_pipe_barrier(d);
  cs_notify(d, right, CS_AR_SLOT_SIGNAL, base + me, CS_NOTIFY_ADD, 1);
  if (left != right)
    cs_notify(d, left, CS_AR_SLOT_SIGNAL, base + me, CS_NOTIFY_ADD, 1);
  cs_wait_until(d, CS_AR_SLOT_SIGNAL, base + left, k->wait_cmp, 1);
  if (left != right && k->right_wait)
    cs_wait_until(d, CS_AR_SLOT_SIGNAL, base + right, k->wait_cmp, 1);
}

/* Puts the own elements [lo, lo+len) into the same range of rank `to`'s
 * window, adding or overwriting, tile by tile (tile numbers from *j). */
static void bd_put(cs_dev_t *d, cs_tile_t *stage, uint32_t to, uint64_t lo,
                   uint64_t len, int add, uint64_t w, uint32_t *j)
{
  for (uint64_t off = lo; off < lo + len; off += w) {
    uint32_t v = (uint32_t)(lo + len - off < w ? lo + len - off : w);
    cs_dev_step(d, (*j)++);
    cs_load(d, stage, d->rank, CS_AR_SLOT_DATA, off, v, v);
    if (add)
      cs_put_reduce(d, stage, to, CS_AR_SLOT_DATA, off, v, CS_SUM);
    else
      cs_put(d, stage, to, CS_AR_SLOT_DATA, off, v);
  }
}

/* One step: ring 0's half of chunk q0 to the right, ring 1's half of
 * chunk q1 to the left, then the pipe barrier. */
static void bd_step(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                    cs_ar_tiles_t *t, int add, uint32_t q0, uint32_t q1)
{
  uint32_t n = d->nranks;
  uint64_t h = c->count / (2 * (uint64_t)n), w = t->acc.width;
  uint32_t j = 0;
  bd_put(d, &t->acc, (d->rank + 1) % n, 2 * h * q0, h, add, w, &j);
  bd_put(d, &t->acc, (d->rank + n - 1) % n, 2 * h * q1 + h, h, add, w, &j);
  if (k->put_drain)
    cs_pipe_barrier(d);
}

static uint32_t rows(const cs_ar_cfg_t *c);

static void cs__ar_ring_bidir(cs_dev_t *d, const cs_ar_cfg_t *c,
                              const cs_knobs_t *k, cs_ar_tiles_t *t,
                              cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank;
  t->acc.width = t->recv.width = (uint32_t)cs_max_chunk(4, c->tile_bytes);
  if (n == 1)
    return; /* the kernel's guard: one rank, the input is the result */
  /* upstream's pipe barrier after its stage-in */
  cs_pipe_barrier(d);

  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_RS, s - 1);
    bd_barrier(d, k, s - 1);
    bd_step(d, c, k, t, 1, (me + n - s) % n, (me + s) % n);
  }
  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_AG, s - 1);
    bd_barrier(d, k, n - 2 + s);
    bd_step(d, c, k, t, 0, (me + n + 1 - s) % n, (me + s - 1) % n);
  }
  if (k->final_barrier)
    bd_barrier(d, k, 2 * (n - 1));
  cs__ar_epilogue_some(d, k, rows(c), 1, 1, cs__ar_two_neighbours_silent, c,
                       bad);
}

/* ------------------------------------------------------------ descriptor */

static bool ring_bidir_meets(const cs_ar_cfg_t *c)
{
  return c->dtype == CS_FP32 && c->op == CS_SUM &&
         c->count % (2 * (uint64_t)c->nranks) == 0;
}

/* 2N-1 rows; without the final barrier (a defect) its row is never
 * signalled, so the epilogue stops before it. */
static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  uint32_t r = 2 * (c->nranks - 1) + 1;
  return c->nranks > 1 && !k.final_barrier ? r - 1 : r;
}

static uint64_t ring_bidir_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)(2 * (c->nranks - 1) + 1) * c->nranks;
}

static void ring_bidir_notifies(const cs_ar_cfg_t *c, int single,
                                cs_algo_notifies_t *s)
{
  uint64_t r = rows(c), n = c->nranks;
  uint64_t per = n > 2 ? 2 : n == 2 ? 1 : 0; /* one peer at N = 2 */
  s->per_call = per * r;
  s->epilogue = per * r;
  s->what = single ? (n == 2 ? "2N-1 (N = 2: one neighbour)" : "2(2N-1)")
                   : n == 2 ? "2N-1 + 2N-1 epilogue (N = 2: one neighbour)"
                            : "2(2N-1) + 2(2N-1) epilogue";
}

/* teach draws the halves, each ring's own part: half 2q is chunk q's
 * first (ring 0, travelling right), half 2q+1 its second (ring 1, left). */
static uint64_t ring_bidir_parts(const cs_ar_cfg_t *c)
{
  return 2 * (uint64_t)c->nranks;
}

static uint64_t ring_bidir_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  return i * (c->count / (2 * (uint64_t)c->nranks));
}

static const char *const ring_bidir_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_ring_bidir = {
    .name = "ring-bidir",
    .what = "bidirectional push ring of simpler PR #1271/#1383",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .meets = ring_bidir_meets,
    .precondition = "a count that is a multiple of twice the rank count "
                    "(fp32 sum only)",
    .dtypes = 1u << CS_FP32,
    .ops = 1u << CS_SUM,
    .half_fill_pto = false,
    .body = cs__ar_ring_bidir,
    .signal_cells = ring_bidir_cells,
    .signal_final = cs__one_per_row,
    .signal_silent = cs__ar_two_neighbours_silent,
    .final_text = "1 per row",
    .signalled = "every neighbour cell",
    .wait_where = cs__ar_push_ring_where,
    .phases = ring_bidir_phases,
    .nphases = 2,
    .ready_barrier = "NEIGHBOUR",
    .read_done_barrier = NULL,
    .fold = CS_FOLD_RING_BIDIR,
    .fold_text = "first half of each chunk in the ring's order, second "
                 "half mirrored, identical on every rank",
    .notifies = ring_bidir_notifies,
    .volume = cs__chunks_volume,
    .teach = true,
    .push = true,
    .part_letter = 'h',
    .parts = ring_bidir_parts,
    .part_lo = ring_bidir_part_lo,
    .legend = "RS t0 j1: reduce-scatter step 1, tile 1 (AG: all-gather); "
              "h2, h3: chunk 1's halves, h2 goes right, h3 left; [1+0]: "
              "r1's input + r0's",
};
