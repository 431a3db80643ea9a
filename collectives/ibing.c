/*
 * ibing.c - the interleaved bidirectional ring of hw-native-sys/simpler's
 * scene tests (allreduce_ibing_kernel, PRs #1271 and #1383, after Zong et
 * al., ACM TACO 2025), which simpler runs at two ranks only: each rank
 * snapshots two chunks, then pushes them into its neighbours' windows,
 * adding (docs/algorithms.md §4.8).
 *
 * Function:     the body cs__ar_ibing, reached through its descriptor
 *               cs__algo_ibing at the end of this file
 * Accepts:      1 or 2 ranks (simpler's host refuses every other count:
 *               from 4 ranks the forward phase's plain puts overwrite
 *               chunks their owners still need), fp32, sum, a count that
 *               is a multiple of N (refused otherwise)
 * Returns:      on rank m, element i = x[m] + x[peer] (the receiver's
 *               value plus the pushed one, dst + src): one addition, so
 *               both ranks hold the same bits
 * Description:  chunk q is the c = count/N elements from q*c. For step
 *               s = 1..N-1 (one step at N = 2): barrier A on row 2(s-1)
 *               (all-to-all: every earlier write, the stage-in included,
 *               is in place); snapshot chunk (r-s) mod N and chunk
 *               (r+s+1) mod N (at N = 2 the peer's chunk and the own one)
 *               into the exchange buffers, a local copy, and a fence;
 *               barrier B on row
 *               2(s-1)+1 (every rank has its snapshots: no add lands in a
 *               chunk before its owner copied it); then put the first
 *               snapshot into the right neighbour's chunk of the same
 *               index and the second into the left's, adding while s <=
 *               N/2 (reduce), overwriting after (forward); a pipe
 *               barrier. A final barrier on row 2(N-1): every push into
 *               this window has landed. Stage-out: the chunks are copied
 *               into the output. The exchange buffers sit in the window's
 *               `out` slot at their chunk's offsets (upstream: two
 *               buffers after the chunks); stage-out then overwrites them.
 *               N = 1: nothing, the input is the result.
 * Signals:      [2N-1, N] int32, all-to-all barriers: every non-self cell
 *               reaches 1. Epilogue: -1 on each; none with --signals
 *               single-use (upstream's kernel).
 * Cost:         3 barriers at N = 2, one notify each per rank (3, and 3
 *               for the epilogue); each rank puts S bytes (both chunks)
 *               to its peer and loads nothing remotely.
 * Limitations:  upstream's simulator build issues the forward puts
 *               asynchronously; at two ranks there is no forward step.
 *               Barriers fence fully (pipe barrier and DDR fence), where
 *               upstream's have a pipe barrier only (--bug
 *               drain-no-ddr-fence gives upstream's). The atomic add
 *               rounds as one binary32 addition.
 *
 * Who holds what, 2 ranks ([0+1] = x0 + x1 as added, receiver first):
 *
 *            rank0              rank1
 *   snap     c1, c0 = x0        c0, c1 = x1
 *   push     c0, c1 = [0+1]     c0, c1 = [1+0]   (the same bits)
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_SNAP = 1, PHASE_PUSH = 2 };

/* The own elements [lo, lo+len) of slot `from` into the same range of
 * slot `to`, tile by tile (tile numbers from *j). */
static void ib_copy(cs_dev_t *d, cs_tile_t *t, uint32_t from, uint32_t to,
                    uint64_t lo, uint64_t len, uint32_t *j)
{
  for (uint64_t off = lo; off < lo + len; off += t->width) {
    uint32_t v = (uint32_t)(lo + len - off < t->width ? lo + len - off
                                                      : t->width);
    cs_dev_step(d, (*j)++);
    cs_load(d, t, d->rank, from, off, v, v);
    cs_store(d, t, to, off, v);
  }
}

/* The snapshot of [lo, lo+len) into the data slot of rank `to`, adding
 * or overwriting, tile by tile. */
static void ib_push(cs_dev_t *d, cs_tile_t *t, uint32_t to, uint64_t lo,
                    uint64_t len, int add, uint32_t *j)
{
  for (uint64_t off = lo; off < lo + len; off += t->width) {
    uint32_t v = (uint32_t)(lo + len - off < t->width ? lo + len - off
                                                      : t->width);
    cs_dev_step(d, (*j)++);
    cs_load(d, t, d->rank, CS_AR_SLOT_OUT, off, v, v);
    if (add)
      cs_put_reduce(d, t, to, CS_AR_SLOT_DATA, off, v, CS_SUM);
    else
      cs_put(d, t, to, CS_AR_SLOT_DATA, off, v);
  }
}

static uint32_t rows(const cs_ar_cfg_t *c);
static bool ibing_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell);

static void cs__ar_ibing(cs_dev_t *d, const cs_ar_cfg_t *c,
                         const cs_knobs_t *k, cs_ar_tiles_t *t,
                         cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank;
  uint32_t left = (me + n - 1) % n, right = (me + 1) % n;
  uint64_t w = c->count / n;
  t->acc.width = t->recv.width = (uint32_t)cs_max_chunk(4, c->tile_bytes);
  if (n == 1) {
    uint32_t j = 0;
    cs_fence(d); /* no barrier to fence: the staged input lands first */
    ib_copy(d, &t->acc, CS_AR_SLOT_DATA, CS_AR_SLOT_OUT, 0, c->count, &j);
    return;
  }
  cs_pipe_barrier(d); /* upstream's pipe barrier after its stage-in */

  for (uint32_t s = 1; s < n; s++) {
    uint32_t qr = (me + n - s) % n, ql = (me + s + 1) % n, j = 0;
    cs_mark(d, PHASE_SNAP, s - 1);
    cs__ar_barrier(d, k, 2 * (s - 1), 1); /* A */
    ib_copy(d, &t->acc, CS_AR_SLOT_DATA, CS_AR_SLOT_OUT, qr * w, w, &j);
    if (ql != qr)
      ib_copy(d, &t->acc, CS_AR_SLOT_DATA, CS_AR_SLOT_OUT, ql * w, w, &j);
    /* upstream's pipe barrier after the snapshots, full as every
     * collsim fence (drain-no-ddr-fence: the pipe barrier alone) */
    if (k->ddr_fence)
      cs_fence(d);
    else
      cs_pipe_barrier(d);
    cs_mark(d, PHASE_PUSH, s - 1);
    if (k->snapshot_barrier)
      cs__ar_barrier(d, k, 2 * (s - 1) + 1, 1); /* B */
    int add = s <= n / 2;
    j = 0;
    ib_push(d, &t->acc, right, qr * w, w, add, &j);
    ib_push(d, &t->acc, left, ql * w, w, add, &j);
    if (k->put_drain)
      cs_pipe_barrier(d);
  }
  if (k->final_barrier)
    cs__ar_barrier(d, k, 2 * (n - 1), 1);
  uint32_t j = 0;
  cs_pipe_barrier(d); /* the stage-out reads what the final barrier saw */
  ib_copy(d, &t->acc, CS_AR_SLOT_DATA, CS_AR_SLOT_OUT, 0, c->count, &j);
  cs__ar_epilogue_some(d, k, rows(c), 1, 1, ibing_silent, c, bad);
}

/* ------------------------------------------------------------ descriptor */

static bool ibing_meets(const cs_ar_cfg_t *c)
{
  return c->dtype == CS_FP32 && c->op == CS_SUM && c->nranks <= 2 &&
         c->count % c->nranks == 0;
}

/* 2N-1 rows; a defect that drops barrier B leaves its row silent (kept,
 * at 0: the epilogue's check expects 0 there), one that drops the final
 * barrier the last row (not counted). */
static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  uint32_t r = 2 * (c->nranks - 1) + 1;
  return c->nranks > 1 && !k.final_barrier ? r - 1 : r;
}

static uint64_t ibing_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)(2 * (c->nranks - 1) + 1) * c->nranks;
}

/* Without barrier B (a defect) its rows are never signalled. */
static bool ibing_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell)
{
  (void)rank;
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  uint32_t row = (uint32_t)(cell / c->nranks);
  return !k.snapshot_barrier && row < 2 * (c->nranks - 1) && row % 2 == 1;
}

static void ibing_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                        uint32_t rank, uint32_t cell, int32_t target,
                        char *buf, size_t n)
{
  (void)k;
  (void)rank;
  (void)target;
  uint32_t nr = c->nranks, row = cell / nr, from = cell % nr;
  if (row + 1 >= 2 * nr - 1)
    snprintf(buf, n, "final barrier (every push into this window has "
             "landed), rank %u's notify", from);
  else if (row % 2 == 0)
    snprintf(buf, n, "barrier A of step %u (every earlier write in place), "
             "rank %u's notify", row / 2 + 1, from);
  else
    snprintf(buf, n, "barrier B of step %u (every snapshot taken), rank "
             "%u's notify", row / 2 + 1, from);
}

static void ibing_notifies(const cs_ar_cfg_t *c, int single,
                           cs_algo_notifies_t *s)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  uint64_t n1 = c->nranks - 1, r = rows(c);
  if (!k.snapshot_barrier && r)
    r -= n1; /* no barrier B in any step */
  s->per_call = r * n1;
  s->epilogue = r * n1;
  s->what = single ? "(2N-1)(N-1)" : "(2N-1)(N-1) + (2N-1)(N-1) epilogue";
}

static const char *const ibing_phases[] = {"snap", "push"};

const cs_algo_desc_t cs__algo_ibing = {
    .name = "ibing",
    .what = "interleaved bidirectional ring of simpler PR #1271/#1383",
    .max_ranks = 2,
    .limit_who = "simpler's ibing",
    .rect = false,
    .out_slot = true,
    .meets = ibing_meets,
    .precondition = "a count that is a multiple of the rank count (fp32 "
                    "sum only)",
    .dtypes = 1u << CS_FP32,
    .ops = 1u << CS_SUM,
    .half_fill_pto = false,
    .body = cs__ar_ibing,
    .signal_cells = ibing_cells,
    .signal_final = cs__one_per_row,
    .signal_silent = ibing_silent,
    .final_text = "1 per row",
    .wait_where = ibing_where,
    .phases = ibing_phases,
    .nphases = 2,
    .ready_barrier = "A",
    .read_done_barrier = "B",
    .fold = CS_FOLD_OWN_FIRST,
    .fold_text = "the own value plus the peer's, the atomic add's dst + "
                 "src: the same bits on both ranks",
    .notifies = ibing_notifies,
    .volume = cs__chunks_volume,
    .teach = true,
    .push = true,
    .part_letter = 'c',
    .parts = cs__chunks_parts,
    .part_lo = cs__chunks_part_lo,
    .legend = "snap t0 j1: step 1's snapshots, tile 1 (push: its puts); "
              "[0+1]: r0's input + r1's",
};
