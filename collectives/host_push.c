/*
 * host_push.c - the host builtin's ring allreduce of PyPTO PR #2280, push
 * model (builtin.tensor.allreduce_ring): reduce-scatter by puts that add
 * into the right neighbour's window (TPUT<AtomicAdd>), all-gather by plain
 * puts, one neighbour barrier per step (docs/algorithms.md §4.6).
 *
 * Function:     the body cs__ar_host_push, reached through its descriptor
 *               cs__algo_host_push at the end of this file
 * Accepts:      1..16 ranks, fp32, sum, a count that is a multiple of N
 *               (the kernel's static_assert, its ReduceOp check and its
 *               numel % NR; refused otherwise)
 * Returns:      the same bits on every rank: chunk q (elements [q*c,
 *               (q+1)*c), c = count/N) summed in the ring's order,
 *               x[q] + (x[q-1] + (... + (x[q+2] + x[q+1])))
 * Description:  2N-1 signal rows, one neighbour barrier each: a fence
 *               (pipe barrier and DDR fence), +1 to cell [row, me] of the
 *               left and of the right neighbour, wait >= 1 on the own
 *               cells [row, left] and [row, right]. Reduce-scatter step
 *               s = 1..N-1 (row s-1): the barrier, then chunk
 *               (r-s) mod N is put, tile by tile (256 elements), into the
 *               same range of the right neighbour's window, adding into
 *               it: the receiver does nothing, its own value is the first
 *               operand of the add. All-gather step s (row N-2+s): the
 *               barrier, then chunk (r-s+1) mod N put plainly to the
 *               right. A final barrier on row 2N-2: no rank returns while
 *               a push into its window is in flight. Each put sits
 *               between two pipe barriers (upstream's PIPE_ALL around
 *               every TPUT; --bug host-push-no-tail-drain keeps only the
 *               one before each put and notifies after a DDR fence alone,
 *               the chunked put of PTOAS #872). Before the first step one
 *               fence stands for the kernel boundary (the input is in memory when the
 *               kernel starts). N = 1: nothing, the input is the result.
 * Signals:      [2N-1, N] int32. N >= 3: on rank r only [row, r-1] and
 *               [row, r+1] are signalled and reach 1. N = 2: the one peer
 *               is both neighbours, notifies twice per row, and its cell
 *               reaches 2; with self-clearing signals the barrier's second
 *               wait on it is >= 2 (collsim's choice, so the epilogue
 *               subtracts what has landed), single use keeps upstream's
 *               two >= 1 waits. Epilogue: -1 on each signalled cell (-2
 *               at N = 2); single use (--signals single-use): none, the
 *               PR head's kernel.
 * Cost:         2(2N-1) notifies and 2(2N-1) waits per rank per call (at
 *               N >= 3 the epilogue as many again); each rank puts
 *               2(N-1)/N*S bytes to its right neighbour and loads nothing
 *               remotely.
 * Limitations:  a put reads its source with a local load event and writes
 *               it with a put event (upstream's TPUT is one instruction);
 *               the atomic add rounds as one binary32 addition, which no
 *               source states for the device.
 *
 * Who holds what, 4 ranks (chunks c0..c3; [1+0] = x1 + x0 as added):
 *
 *            rank0          rank1          rank2          rank3
 *   RS s1    c2=[0+3]       c3=[1+0]       c0=[2+1]       c1=[3+2]
 *   RS s2    c1=[0+3+2]     c2=[1+0+3]     c3=[2+1+0]     c0=[3+2+1]
 *   RS s3    c0=[0+3+2+1]   c1=[1+0+3+2]   c2=[2+1+0+3]   c3=[3+2+1+0]
 *   AG s1    c3 from rank3  c0 from rank0  c1 from rank1  c2 from rank2
 *   AG s3    every chunk reduced on every rank
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_RS = 1, PHASE_AG = 2 };

/* Upstream's tile of one TPUT: 256 elements. */
#define HP_TILE 256u

/* The neighbour barrier on `row`: fence, +1 to the left's and the right's
 * cell [row, me], wait on the own [row, left] and [row, right]. */
static void hp_barrier(cs_dev_t *d, const cs_knobs_t *k, uint32_t row)
{
  uint32_t n = d->nranks, me = d->rank;
  uint32_t left = (me + n - 1) % n, right = (me + 1) % n;
  uint32_t base = row * n;
  if (!k->put_tail_drain)
    cs_ddr_fence(d); /* --bug host-push-no-tail-drain: a drain that does
                        not reach the put, then the DDR fence */
  else if (k->fence_before_notify && k->ddr_fence)
    cs_fence(d);
  else if (k->fence_before_notify)
    cs_pipe_barrier(d);
  cs_notify(d, left, CS_AR_SLOT_SIGNAL, base + me, CS_NOTIFY_ADD, 1);
  cs_notify(d, right, CS_AR_SLOT_SIGNAL, base + me, CS_NOTIFY_ADD, 1);
  cs_wait_until(d, CS_AR_SLOT_SIGNAL, base + left, k->wait_cmp, 1);
  if (k->right_wait)
    cs_wait_until(d, CS_AR_SLOT_SIGNAL, base + right, k->wait_cmp,
                  left == right && k->epilogue ? 2 : 1);
}

/* One step's puts: chunk `q` of the own window into the same range of the
 * right neighbour's, adding (reduce-scatter) or overwriting, in tiles. */
static void hp_step(cs_dev_t *d, const cs_knobs_t *k, cs_tile_t *stage,
                    int phase, uint32_t q, uint64_t chunk)
{
  uint32_t right = (d->rank + 1) % d->nranks;
  uint64_t end = (q + 1) * chunk;
  uint32_t j = 0;
  for (uint64_t off = q * chunk; off < end; off += HP_TILE, j++) {
    uint32_t e = (uint32_t)(end - off < HP_TILE ? end - off : HP_TILE);
    cs_dev_step(d, j);
    if (k->put_drain)
      cs_pipe_barrier(d);
    cs_load(d, stage, d->rank, CS_AR_SLOT_DATA, off, e, e);
    if (phase == PHASE_RS)
      cs_put_reduce(d, stage, right, CS_AR_SLOT_DATA, off, e, CS_SUM);
    else
      cs_put(d, stage, right, CS_AR_SLOT_DATA, off, e);
    /* --bug host-push-no-tail-drain: the step as one chunked put, whose
     * next tile's pipe barrier drains the one before; the last is not */
    if (k->put_drain && k->put_tail_drain)
      cs_pipe_barrier(d);
  }
}

static uint32_t rows(const cs_ar_cfg_t *c);

static void cs__ar_host_push(cs_dev_t *d, const cs_ar_cfg_t *c,
                             const cs_knobs_t *k, cs_ar_tiles_t *t,
                             cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank;
  uint64_t chunk = c->count / n;
  t->acc.width = HP_TILE;
  if (n == 1)
    return; /* the kernel's soft guard: no notify, the input stays */
  /* The kernel boundary: upstream an earlier kernel wrote the input, and
   * it is in memory when this one starts; here the stage-in's stores,
   * which a posted model may still hold, fenced whatever the knobs say
   * (--bug host-push-no-dsb drops only the kernel's own fences). */
  cs_fence(d);

  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_RS, s - 1);
    hp_barrier(d, k, s - 1);
    hp_step(d, k, &t->acc, PHASE_RS, (me + n - s) % n, chunk);
  }
  for (uint32_t s = 1; s < n; s++) {
    cs_mark(d, PHASE_AG, s - 1);
    hp_barrier(d, k, n - 2 + s);
    hp_step(d, k, &t->acc, PHASE_AG, (me + n + 1 - s) % n, chunk);
  }
  if (k->final_barrier)
    hp_barrier(d, k, 2 * (n - 1)); /* the return guard */
  if (k->put_drain)
    cs_pipe_barrier(d);

  int32_t per = n == 2 ? 2 : 1;
  /* Single use at N = 2: the last barrier waits >= 1 twice on the one
   * cell the peer raises to 2, so this rank may pass it before the
   * peer's second notify lands; nothing later orders that notify, so
   * the last row is left to the world's check after the run (every
   * earlier row's second notify precedes the peer's next row). */
  uint32_t checked = n == 2 && !k->epilogue ? rows(c) - 1 : rows(c);
  if (!k->epilogue_every_peer) {
    cs__ar_epilogue_some(d, k, checked, per, per,
                         cs__ar_two_neighbours_silent, c, bad);
    return;
  }
  /* --bug host-push-epilogue-2279: the harness's check of the cells as
   * above, then #2279's reset for the all-to-all barrier */
  cs_knobs_t check_only = *k;
  check_only.epilogue = false;
  cs__ar_epilogue_some(d, &check_only, checked, per, per,
                       cs__ar_two_neighbours_silent, c,
                       bad);
  if (k->epilogue)
    cs__ar_epilogue(d, k, rows(c), 1, 1, NULL);
}

/* ------------------------------------------------------------ descriptor */

static bool host_push_meets(const cs_ar_cfg_t *c)
{
  return c->dtype == CS_FP32 && c->op == CS_SUM && c->count % c->nranks == 0;
}

/* 2N-1 rows; without the final barrier (a defect) its row is never
 * signalled, so the epilogue stops before it. */
static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  uint32_t r = 2 * (c->nranks - 1) + 1;
  return c->nranks > 1 && !k.final_barrier ? r - 1 : r;
}

static uint64_t host_push_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)(2 * (c->nranks - 1) + 1) * c->nranks;
}

static int32_t host_push_final(const cs_ar_cfg_t *c)
{
  return c->nranks == 2 ? 2 : 1;
}

static void host_push_notifies(const cs_ar_cfg_t *c, int single,
                               cs_algo_notifies_t *s)
{
  uint64_t r = rows(c), n = c->nranks;
  s->per_call = n > 1 ? 2 * r : 0;
  s->epilogue = n > 2 ? 2 * r : n == 2 ? r : 0;
  s->what = single ? "2(2N-1)"
                   : n == 2 ? "2(2N-1) + 2N-1 epilogue (N = 2: one cell a row)"
                            : "2(2N-1) + 2(2N-1) epilogue";
}

static const char *const host_push_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_host_push = {
    .name = "host-push",
    .what = "host builtin push ring of PyPTO PR #2280",
    .max_ranks = CS_HOST_MAX_RANKS,
    .limit_who = "the host builtin",
    .rect = false,
    .meets = host_push_meets,
    .precondition = "a count that is a multiple of the rank count (fp32 "
                    "sum only)",
    .dtypes = 1u << CS_FP32,
    .ops = 1u << CS_SUM,
    .half_fill_pto = false,
    .body = cs__ar_host_push,
    .signal_cells = host_push_cells,
    .signal_final = host_push_final,
    .signal_silent = cs__ar_two_neighbours_silent,
    .final_text = "one +1 per neighbour per row",
    .signalled = "every neighbour cell",
    .wait_where = cs__ar_push_ring_where,
    .phases = host_push_phases,
    .nphases = 2,
    .fold = CS_FOLD_RING_EQUAL,
    .fold_text = "ring fold order on equal chunks, identical on every rank",
    .notifies = host_push_notifies,
    .volume = cs__chunks_volume,
    .teach = true,
    .push = true,
    .part_letter = 'c',
    .parts = cs__chunks_parts,
    .part_lo = cs__chunks_part_lo,
    .legend = "RS t0 j1: reduce-scatter step 1, tile 1 (AG: all-gather); "
              "[1+0]: r1's input + r0's",
};
