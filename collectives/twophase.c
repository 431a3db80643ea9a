/*
 * twophase.c - the two-phase mesh allreduce of hw-native-sys/simpler's
 * scene tests (allreduce_twophase_kernel, PR #1383): a reduce-scatter in
 * which every rank folds one chunk from all the others, then an
 * all-gather in which every rank reads each chunk from its owner
 * (docs/algorithms.md §3.4).
 *
 * Function:     the body cs__ar_twophase, reached through its descriptor
 *               cs__algo_twophase at the end of this file
 * Accepts:      N >= 1 ranks and a count that is a multiple of N (the
 *               kernel's own precondition; refused otherwise), fp32/fp16/
 *               bf16, sum/max/min/prod (upstream runs fp32 sum only)
 * Returns:      the same bits on every rank: chunk q (elements
 *               [q*c, (q+1)*c), c = count/N) is rank q's fold
 *               x[q] op x[p1] op x[p2] ... (the others ascending)
 * Description:  barrier RS (row 0: +1 to every peer, wait >= 1 from every
 *               peer: every input is staged); reduce-scatter: rank r loads
 *               its own chunk r tile by tile, folds in chunk r of every
 *               peer ascending and stores it back into chunk r; barrier AG
 *               (row 1, its fence drains those stores first); all-gather:
 *               for every other rank q, chunk q is loaded from rank q's
 *               window and stored into the own one. No read-complete
 *               barrier: in the reduce-scatter rank r writes only chunk
 *               r, which no other rank reads then; in the all-gather it
 *               writes only chunks other ranks own, which nobody reads.
 *               Then, only with self-clearing signals (collsim's
 *               repeated calls, which upstream's single-use kernel does
 *               not make), barrier DONE (row 2) so that no rank stages
 *               the next call's input in while a peer still gathers from
 *               it, and the epilogue. With --signals single-use, the
 *               upstream kernel exactly: rows RS and AG, one call.
 * Signals:      [2, N] int32 (single use) or [3, N] (self-clearing, with
 *               the DONE row); every non-self cell reaches 1.
 * Cost:         2 (3) all-to-all barriers; 2(N-1) (3(N-1)) notifies per
 *               rank, and (N-1) per row for the epilogue; each rank loads
 *               2(N-1)/N*S bytes remotely and stores S (its own chunk
 *               once, every other chunk once).
 * Limitations:  upstream's single tile per chunk is generalised to tiles of
 *               --tile-bytes; 2-byte remote loads read exactly the valid
 *               elements (no 16-element round-up past a chunk, which would
 *               read the neighbour chunk its owner is writing).
 *
 * Who holds what, 4 ranks ([1+0+2+3]: rank 1's fold, own value first):
 *
 *            rank0          rank1          rank2          rank3
 *   RS       c0=[0+1+2+3]   c1=[1+0+2+3]   c2=[2+0+1+3]   c3=[3+0+1+2]
 *   AG       every rank: c0=[0+1+2+3] c1=[1+0+2+3] c2=[2+0+1+3] c3=[3+0+1+2]
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

#include <stdio.h>

enum { PHASE_RS = 1, PHASE_AG = 2 };
enum { ROW_RS = 0, ROW_AG = 1, ROW_DONE = 2 };

/* acc = the own chunk `q` tile [off, off+v) folded with every peer's. */
static void reduce_tile(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                        uint64_t off, uint32_t v)
{
  cs_load(d, &t->acc, d->rank, CS_AR_SLOT_DATA, off, v, v);
  for (uint32_t p = 0; p < d->nranks; p++)
    if (p != d->rank)
      cs__ar_load_reduce(d, t, p, off, v, v, c);
  cs_store(d, &t->acc, CS_AR_SLOT_DATA, off, v);
}

static void cs__ar_twophase(cs_dev_t *d, const cs_ar_cfg_t *c,
                            const cs_knobs_t *k, cs_ar_tiles_t *t,
                            cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint64_t chunk = c->count / n, w = cs_max_chunk(es, c->tile_bytes);
  t->acc.width = t->recv.width = (uint32_t)w;
  if (n == 1)
    return; /* one rank: its input is the result, no barrier */

  cs_mark(d, PHASE_RS, 0);
  cs__ar_barrier(d, k, ROW_RS, 1);
  uint32_t j = 0;
  for (uint64_t off = me * chunk; off < (me + 1) * chunk; off += w, j++) {
    cs_dev_step(d, j);
    uint64_t left = (me + 1) * chunk - off;
    reduce_tile(d, c, t, off, (uint32_t)(left < w ? left : w));
  }

  cs_mark(d, PHASE_AG, 0);
  cs__ar_barrier(d, k, ROW_AG, 1);
  j = 0;
  for (uint32_t q = 0; q < n; q++) {
    if (q == me)
      continue;
    for (uint64_t off = q * chunk; off < (q + 1) * chunk; off += w, j++) {
      cs_dev_step(d, j);
      uint64_t left = (q + 1) * chunk - off;
      uint32_t v = (uint32_t)(left < w ? left : w);
      cs_load(d, &t->acc, q, CS_AR_SLOT_DATA, off, v, v);
      cs_store(d, &t->acc, CS_AR_SLOT_DATA, off, v);
    }
  }
  if (cs__has_done(k))
    cs__ar_barrier(d, k, ROW_DONE, 1);
  cs__ar_epilogue(d, k, cs__has_done(k) ? 3 : 2, 1, 1, bad);
}

/* ------------------------------------------------------------ descriptor */

bool cs__chunks_meets(const cs_ar_cfg_t *c)
{
  return c->count % c->nranks == 0;
}

static uint32_t rows(const cs_ar_cfg_t *c)
{
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  return cs__has_done(&k) ? 3 : 2;
}

static uint64_t twophase_cells(const cs_ar_cfg_t *c)
{
  return (uint64_t)rows(c) * c->nranks;
}

int32_t cs__one_per_row(const cs_ar_cfg_t *c)
{
  (void)c;
  return 1;
}

static void twophase_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                           uint32_t rank, uint32_t cell, int32_t target,
                           char *buf, size_t n)
{
  (void)k;
  (void)rank;
  (void)target;
  static const char *const what[] = {
      "RS barrier (every input staged)", "AG barrier (every chunk reduced)",
      "DONE barrier (every chunk gathered)"};
  uint32_t row = cell / c->nranks;
  snprintf(buf, n, "%s, rank %u's notify", what[row < 3 ? row : 2],
           cell % c->nranks);
}

static void twophase_notifies(const cs_ar_cfg_t *c, int single,
                              cs_algo_notifies_t *s)
{
  uint64_t n1 = c->nranks - 1, r = rows(c);
  s->per_call = r * n1;
  s->epilogue = r * n1;
  s->what = single ? (r == 3 ? "3(N-1)" : "2(N-1)")
                   : (r == 3 ? "3(N-1) + 3(N-1) epilogue"
                             : "2(N-1) + 2(N-1) epilogue");
}

/* Rank r loads chunk r of every peer, then every peer's own chunk (a
 * ring of equal chunks: 2(N-1) chunks from its left neighbour). */
void cs__chunks_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                       cs_algo_volume_t *v)
{
  (void)r;
  uint32_t nr = c->nranks;
  v->what = "2(N-1)/N*S";
  v->exact = 2 * (uint64_t)(nr - 1) * (c->count / nr) * es * c->iters;
  v->formula = 2.0 * (nr - 1) / nr * (double)c->count * es * c->iters;
}

uint64_t cs__chunks_parts(const cs_ar_cfg_t *c) { return c->nranks; }

uint64_t cs__chunks_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  return i * (c->count / c->nranks);
}

static const char *const twophase_phases[] = {"RS", "AG"};

const cs_algo_desc_t cs__algo_twophase = {
    .name = "twophase",
    .what = "two-phase mesh of simpler PR #1383",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = false,
    .meets = cs__chunks_meets,
    .precondition = "a count that is a multiple of the rank count",
    .half_fill_pto = false,
    .body = cs__ar_twophase,
    .signal_cells = twophase_cells,
    .signal_final = cs__one_per_row,
    .final_text = "1 per row",
    .wait_where = twophase_where,
    .phases = twophase_phases,
    .nphases = 2,
    .ready_barrier = NULL,
    .read_done_barrier = "DONE",
    .fold = CS_FOLD_OWNER_FIRST,
    .fold_text = "chunk q in rank q's order (own value first, then peers "
                 "ascending), identical on every rank",
    .notifies = twophase_notifies,
    .volume = cs__chunks_volume,
    .teach = true,
    .part_letter = 'c',
    .parts = cs__chunks_parts,
    .part_lo = cs__chunks_part_lo,
    .legend = "RS t0 j1: reduce-scatter, tile 1 (AG: all-gather); "
              "[2+0+1]: r2's input op r0's op r1's",
};
