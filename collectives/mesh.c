/*
 * mesh.c - InCore mesh allreduce of PyPTO PR #2161 (docs/algorithms.md §3).
 *
 * Function:     cs__ar_mesh (through cs_allreduce), and its descriptor
 *               cs__algo_mesh (algo.h) at the end of this file
 * Accepts:      N >= 1 ranks, count >= 1 elements of fp32/fp16/bf16 in the
 *               own window's data slot, op sum/max/min/prod
 * Returns:      every rank's data slot holds the reduction, in the order
 *               x[me] op x[p1] op x[p2] ... (peers ascending): for sum/prod
 *               with N >= 3 ranks hold different roundings of the exact
 *               value, apart by up to 2(N-1)u*sum|x| (with cancellation or
 *               overflow, entirely different: inf on one rank, a number on
 *               another)
 * Description:  one ready barrier, then for each chunk c of W elements:
 *               load own chunk, remote-load it from every peer ascending and
 *               fold it in, a read-complete barrier (WAR guard: nobody
 *               overwrites chunk c while a peer still reads it), store.
 *               W = ceil(N/align)*align for N < maxChunk, else maxChunk
 *               (4096 fp32, 8192 2-byte); C = ceil(N/W). Remote loads of
 *               2-byte dtypes round up to 16 elements (<= 15 past the
 *               logical end, inside the slot's 32-byte padding).
 * Signals:      [NR, 1] int32; every non-self cell reaches 1 + C.
 * Cost:         1 + C all-to-all barriers; (N-1)(1+C) notifies per rank;
 *               each rank loads (N-1)*S bytes remotely (S = count*esize)
 *               and stores S.
 * Rectangle:    with a shape [R, C] (count = R*C) whose valid top-left
 *               rectangle [r, c] is partial and fits one tile, the §3.3
 *               path instead: ready barrier, one 2-D own load, one 2-D
 *               remote load per peer ascending folded in, one barrier
 *               (wait >= 2), one 2-D store; the elements outside the
 *               rectangle keep the rank's input. Cells reach 2.
 *
 * Buffers after the chunk (4 ranks, one chunk; [0+1+2] = x0 op x1 op x2):
 *
 *   start           rank0 [0]        rank1 [1]        rank2 [2]        rank3 [3]
 *   ready barrier   everyone's input is staged
 *   loads           acc0 = 0+1+2+3   acc1 = 1+0+2+3   acc2 = 2+0+1+3   acc3 = 3+0+1+2
 *   barrier, store  rank0 [0+1+2+3]  rank1 [1+0+2+3]  rank2 [2+0+1+3]  rank3 [3+0+1+2]
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

/* §3.3: the valid rectangle [valid_rows, valid_cols] of the row-major
 * [shape_rows, shape_cols] data, in one tile, as one chunk (step 0). */
static void mesh_rect(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                      cs_ar_tiles_t *t, cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank;
  uint32_t rows = c->valid_rows, cols = c->valid_cols, stride = c->shape_cols;
  t->acc.width = t->recv.width = rows * cols;
  cs_mark(d, 1, 0);
  cs__ar_barrier(d, k, 0, 1); /* ready */
  cs_dev_step(d, 0);
  cs_load_rect(d, &t->acc, me, CS_AR_SLOT_DATA, 0, rows, cols, stride);
  for (uint32_t p = 0; p < n; p++) {
    if (p == me)
      continue;
    cs_load_rect(d, &t->recv, p, CS_AR_SLOT_DATA, 0, rows, cols, stride);
    cs__ar_reduce(d, &t->acc, &t->recv, c, 0); /* local first */
  }
  int32_t read_done = 2;
  if (k->chunk_barrier && k->final_barrier)
    cs__ar_barrier(d, k, 0, read_done++); /* read-complete */
  cs_store_rect(d, &t->acc, CS_AR_SLOT_DATA, 0, rows, cols, stride);
  cs__ar_epilogue(d, k, 1, read_done - 1, read_done - 1, bad);
}

void cs__ar_mesh(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad)
{
  if (cs_ar_rect(c)) {
    mesh_rect(d, c, k, t, bad);
    return;
  }
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint64_t size = c->count;
  uint64_t w = cs_mesh_width(size, es, c->tile_bytes);
  uint64_t nchunks = cs_ceil_div(size, w);
  t->acc.width = t->recv.width = (uint32_t)w;

  cs_mark(d, 1, 0);
  cs__ar_barrier(d, k, 0, 1); /* ready */
  int32_t read_done = 2;
  for (uint64_t ci = 0; ci < nchunks; ci++) {
    uint64_t off = ci * w;
    cs_dev_step(d, (uint32_t)ci);
    uint32_t v = (uint32_t)(size - off < w ? size - off : w);
    cs_load(d, &t->acc, me, CS_AR_SLOT_DATA, off, v, v);
    for (uint32_t p = 0; p < n; p++) {
      if (p == me)
        continue;
      cs__ar_load_reduce(d, t, p, off, v, (uint32_t)cs_remote_phys(v, es), c);
    }
    int last = ci + 1 == nchunks;
    if (k->chunk_barrier && (k->final_barrier || !last))
      cs__ar_barrier(d, k, 0, read_done++); /* read-complete */
    cs_store(d, &t->acc, CS_AR_SLOT_DATA, off, v);
  }
  cs__ar_epilogue(d, k, 1, read_done - 1, read_done - 1, bad);
}

/* ------------------------------------------------------------ descriptor */

static uint64_t mesh_cells(const cs_ar_cfg_t *c) { return c->nranks; }

static int32_t mesh_final(const cs_ar_cfg_t *c)
{
  if (cs_ar_rect(c))
    return 2; /* §3.3: one chunk */
  return (int32_t)(1 + cs_mesh_chunks(c->count, cs_dtype_size(c->dtype),
                                      c->tile_bytes));
}

static void mesh_notifies(const cs_ar_cfg_t *c, int single, cs_algo_notifies_t *s)
{
  uint64_t n1 = c->nranks - 1;
  s->per_call = n1 * (uint64_t)mesh_final(c);
  s->epilogue = n1;
  s->what = cs_ar_rect(c) ? (single ? "2(N-1) (rectangle path)"
                                    : "2(N-1) + (N-1) epilogue (rectangle path)")
                          : (single ? "(N-1)(1+C)" : "(N-1)(1+C) + (N-1) epilogue");
}

static void mesh_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                        cs_algo_volume_t *v)
{
  (void)r;
  uint32_t nr = c->nranks;
  v->what = cs_ar_rect(c) ? "(N-1)*r*c*esize (the valid rectangle)" : "(N-1)*S";
  v->exact = cs_ar_rect(c) ? (uint64_t)(nr - 1) * c->valid_rows * c->valid_cols *
                                 es * c->iters
                           : cs_mesh_remote_bytes(c->count, nr, es, c->iters);
  v->formula = (double)v->exact;
}

static uint64_t mesh_parts(const cs_ar_cfg_t *c)
{
  return cs_mesh_chunks(c->count, cs_dtype_size(c->dtype), c->tile_bytes);
}

static uint64_t mesh_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  uint64_t w = cs_mesh_width(c->count, cs_dtype_size(c->dtype), c->tile_bytes);
  return i * w < c->count ? i * w : c->count;
}

const cs_algo_desc_t cs__algo_mesh = {
    .name = "mesh",
    .ready_barrier = "READY",
    .read_done_barrier = "READ-COMPLETE",
    .what = "InCore mesh allreduce of PyPTO PR #2161",
    .max_ranks = CS_AR_MAX_RANKS,
    .rect = true,
    .half_fill_pto = true,
    .body = cs__ar_mesh,
    .signal_cells = mesh_cells,
    .signal_final = mesh_final,
    .final_text = "1+C",
    .wait_where = cs__ar_chunked_where,
    .fold = CS_FOLD_OWN_FIRST,
    .fold_text = "order: own value first, then peers ascending",
    .notifies = mesh_notifies,
    .volume = mesh_volume,
    .teach = true,
    .part_letter = 'c',
    .parts = mesh_parts,
    .part_lo = mesh_part_lo,
    .legend = CS_AR_CHUNKED_LEGEND,
};
