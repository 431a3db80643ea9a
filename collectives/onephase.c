/*
 * onephase.c - the one-phase (direct) mesh allreduce of hw-native-sys/
 * simpler's scene tests (allreduce_onephase_kernel, PR #1383): one
 * barrier, then every rank reads every peer's whole input and folds it
 * into a result it writes to an output of its own, which no peer reads
 * (docs/algorithms.md §3.5).
 *
 * Function:     the body cs__ar_onephase, reached through its descriptor
 *               cs__algo_onephase at the end of this file
 * Accepts:      N >= 1 ranks, any count, fp32/fp16/bf16, sum/max/min/
 *               prod (upstream runs 256 fp32, sum)
 * Returns:      on rank m, element i = x[m] op x[p1] op x[p2] ... (the
 *               own value first, then the peers ascending): one order per
 *               rank, so ranks may differ in the last bits (as mesh's do)
 * Description:  barrier READY (row 0: +1 to every peer, wait >= 1 from
 *               every peer: every input is staged; one rank: its fence
 *               alone, as upstream's pipe barrier); then tile by tile:
 *               load the own tile of the data slot, fold in the same tile
 *               of every peer ascending, store the sum into the own
 *               window's `out` slot (upstream's output tensor). The data
 *               slot is never written during the call, so no
 *               read-complete barrier is needed: a slow peer still
 *               reading it reads the input. Then, only with self-clearing
 *               signals (collsim's repeated calls, which upstream's
 *               single-use kernel does not make), barrier DONE (row 1) so
 *               that no rank stages the next call's input in while a peer
 *               still reads this one's, and the epilogue. With --signals
 *               single-use, the upstream kernel exactly: row READY, one
 *               call.
 * Signals:      [1, N] int32 (single use) or [2, N] (self-clearing, with
 *               the DONE row); every non-self cell reaches 1.
 * Cost:         1 (2) all-to-all barriers; N-1 (2(N-1)) notifies per
 *               rank, and N-1 per row for the epilogue; each rank loads
 *               (N-1)*S bytes remotely (every peer's whole input) and
 *               stores S, into its output slot.
 * Limitations:  upstream's single 256-element tile is generalised to
 *               tiles of --tile-bytes; 2-byte remote loads read exactly
 *               the valid elements.
 *
 * Who holds what in `out`, 3 ranks ([1+0+2]: rank 1's input op rank 0's
 * op rank 2's):
 *
 *            rank0       rank1       rank2
 *            [0+1+2]     [1+0+2]     [2+0+1]
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_MAIN = 1 };
enum { ROW_READY = 0, ROW_DONE = 1 };

static void cs__ar_onephase(cs_dev_t *d, const cs_ar_cfg_t *c,
                            const cs_knobs_t *k, cs_ar_tiles_t *t,
                            cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint64_t w = cs_max_chunk(es, c->tile_bytes);
  t->acc.width = t->recv.width = (uint32_t)w;

  cs_mark(d, PHASE_MAIN, 0);
  if (n > 1)
    cs__ar_barrier(d, k, ROW_READY, 1);
  else
    cs_fence(d); /* no barrier to fence: the staged input lands first */
  uint32_t j = 0;
  for (uint64_t off = 0; off < c->count; off += w, j++) {
    cs_dev_step(d, j);
    uint32_t v = (uint32_t)(c->count - off < w ? c->count - off : w);
    cs_load(d, &t->acc, me, CS_AR_SLOT_DATA, off, v, v);
    for (uint32_t p = 0; p < n; p++)
      if (p != me)
        cs__ar_load_reduce(d, t, p, off, v, v, c);
    cs_store(d, &t->acc, CS_AR_SLOT_OUT, off, v);
  }
  if (n == 1)
    return; /* one rank: no barrier, no signal */
  if (cs__has_done(k))
    cs__ar_barrier(d, k, ROW_DONE, 1);
  cs__ar_epilogue(d, k, cs__has_done(k) ? 2 : 1, 1, 1, bad);
}

/* ------------------------------------------------------------ descriptor */

static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  return cs__has_done(&k) ? 2 : 1;
}

static uint64_t onephase_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)rows(c) * c->nranks;
}

static void onephase_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                           uint32_t rank, uint32_t cell, int32_t target,
                           char *buf, size_t n)
{
  (void)k;
  (void)rank;
  (void)target;
  uint32_t row = cell / c->nranks;
  snprintf(buf, n, "%s, rank %u's notify",
           row == ROW_READY ? "READY barrier (every input staged)"
                            : "DONE barrier (every input read)",
           cell % c->nranks);
}

static void onephase_notifies(const cs_ar_cfg_t *c, int single,
                              cs_algo_notifies_t *s)
{
  uint64_t n1 = c->nranks - 1, r = rows(c);
  s->per_call = r * n1;
  s->epilogue = r * n1;
  s->what = single ? (r == 2 ? "2(N-1)" : "N-1")
                   : (r == 2 ? "2(N-1) + 2(N-1) epilogue"
                             : "(N-1) + (N-1) epilogue");
}

/* Every rank loads every peer's whole input once. */
static void onephase_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                            cs_algo_volume_t *v)
{
  (void)r;
  uint32_t n1 = c->nranks - 1;
  v->what = "(N-1)*S";
  v->exact = (uint64_t)n1 * c->count * es * c->iters;
  v->formula = (double)n1 * (double)c->count * es * c->iters;
}

static uint64_t onephase_parts(const cs_ar_cfg_t *c)
{
  (void)c;
  return 1;
}

static uint64_t onephase_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  return i == 0 ? 0 : c->count;
}

static const char *const onephase_phases[] = {"main"};

const cs_algo_desc_t cs__algo_onephase = {
    .name = "onephase",
    .what = "one-phase (direct) mesh of simpler PR #1383",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .out_slot = true,
    .half_fill_pto = false,
    .body = cs__ar_onephase,
    .signal_cells = onephase_cells,
    .signal_final = cs__one_per_row,
    .final_text = "1 per row",
    .wait_where = onephase_where,
    .phases = onephase_phases,
    .nphases = 1,
    .ready_barrier = "READY",
    .read_done_barrier = "DONE",
    .fold = CS_FOLD_OWN_FIRST,
    .fold_text = "own value first, then the peers ascending (one order per "
                 "rank)",
    .notifies = onephase_notifies,
    .volume = onephase_volume,
    .teach = true,
    .part_letter = 'c',
    .parts = onephase_parts,
    .part_lo = onephase_part_lo,
    .legend = "main j1: tile 1; [2+0+1]: r2's input op r0's op r1's",
};
