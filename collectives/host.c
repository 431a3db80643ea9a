/*
 * host.c - host allreduce builtin (builtin.tensor.allreduce) of PR #2161,
 * single-core variant (docs/algorithms.md §5).
 *
 * Function:     cs__ar_host (through cs_allreduce), and its descriptor
 *               cs__algo_host (algo.h) at the end of this file
 * Accepts:      1..16 ranks (the kernel returns early above 16; collsim
 *               refuses such runs up front), count >= 1, fp32/fp16/bf16,
 *               sum/max/min/prod
 * Returns:      like mesh: x[me] op x[p1] op ... (peers ascending) per rank
 * Description:  like mesh but with fixed 256-element chunks and a 1-D
 *               [NR] signal. Every load, local and remote, moves
 *               xfer = ceil(chunk*esize/32)*32/esize elements (32-byte
 *               rounding for fp32 too); only `chunk` are valid and stored.
 *               Ready barrier (+1 / >= 1), then per chunk: load own, fold in
 *               every peer ascending, read-done barrier (wait >= 2, 3, ...),
 *               store exactly `chunk` elements.
 * Signals:      [NR] int32; every non-self cell reaches 1 + ceil(n/256).
 * Cost:         1 + ceil(n/256) all-to-all barriers; (N-1)(1+ceil(n/256))
 *               notifies per rank; (N-1)*S bytes loaded remotely per rank.
 * Limitations:  no multicore lanes (#2160, LATER).
 *
 * Buffers (4 ranks): as mesh.c, 256 elements at a time:
 *   rank0 [0+1+2+3]  rank1 [1+0+2+3]  rank2 [2+0+1+3]  rank3 [3+0+1+2]
 */
#include "ar_internal.h"
#include "barrier.h"
#include "geometry.h"

void cs__ar_host(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank, es = cs_dtype_size(c->dtype);
  uint64_t size = c->count;
  if (n > CS_HOST_MAX_RANKS || size == 0)
    return; /* the kernel's early return, before any notify */
  t->acc.width = t->recv.width = CS_HOST_CHUNK;

  cs_mark(d, 1, 0);
  cs__ar_barrier(d, k, 0, 1); /* ready */
  int32_t read_done = 2;
  for (uint64_t base = 0; base < size; base += CS_HOST_CHUNK) {
    uint32_t chunk = (uint32_t)(size - base < CS_HOST_CHUNK ? size - base
                                                            : CS_HOST_CHUNK);
    uint32_t xfer = (uint32_t)cs_host_xfer(chunk, es);
    cs_dev_step(d, (uint32_t)(base / CS_HOST_CHUNK));
    cs_load(d, &t->acc, me, CS_AR_SLOT_DATA, base, chunk, xfer);
    for (uint32_t p = 0; p < n; p++) {
      if (p == me)
        continue;
      cs__ar_load_reduce(d, t, p, base, chunk, xfer, c);
    }
    int last = base + CS_HOST_CHUNK >= size;
    if (k->final_barrier || !last)
      cs__ar_barrier(d, k, 0, read_done++); /* read-done */
    cs_store(d, &t->acc, CS_AR_SLOT_DATA, base, chunk);
  }
  cs__ar_epilogue(d, k, 1, read_done - 1, read_done - 1, bad);
}

/* ------------------------------------------------------------ descriptor */

static uint64_t host_cells(const cs_ar_cfg_t *c) { return c->nranks; }

static int32_t host_final(const cs_ar_cfg_t *c)
{
  return (int32_t)(1 + cs_ceil_div(c->count, CS_HOST_CHUNK));
}

static void host_notifies(const cs_ar_cfg_t *c, int single, cs_algo_notifies_t *s)
{
  uint64_t n1 = c->nranks - 1;
  s->per_call = n1 * (uint64_t)host_final(c);
  s->epilogue = n1;
  s->what = single ? "(N-1)(1+ceil(n/256))" : "(N-1)(1+ceil(n/256)) + (N-1) epilogue";
}

static void host_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                        cs_algo_volume_t *v)
{
  (void)r;
  v->what = "(N-1)*S";
  v->exact = cs_host_remote_bytes(c->count, c->nranks, es, c->iters);
  v->formula = (double)v->exact;
}

static uint64_t host_parts(const cs_ar_cfg_t *c)
{
  return cs_ceil_div(c->count, CS_HOST_CHUNK);
}

static uint64_t host_part_lo(const cs_ar_cfg_t *c, uint64_t i)
{
  return i * CS_HOST_CHUNK < c->count ? i * CS_HOST_CHUNK : c->count;
}

const cs_algo_desc_t cs__algo_host = {
    .name = "host",
    .ready_barrier = "READY",
    .read_done_barrier = "READ-DONE",
    .what = "host allreduce builtin of PyPTO PR #2161",
    .max_ranks = CS_HOST_MAX_RANKS,
    .limit_who = "the host builtin",
    .rect = false,
    .half_fill_pto = false,
    .body = cs__ar_host,
    .signal_cells = host_cells,
    .signal_final = host_final,
    .final_text = "1+ceil(n/256)",
    .wait_where = cs__ar_chunked_where,
    .fold = CS_FOLD_OWN_FIRST,
    .fold_text = "order: own value first, then peers ascending",
    .notifies = host_notifies,
    .volume = host_volume,
    .teach = true,
    .part_letter = 'c',
    .parts = host_parts,
    .part_lo = host_part_lo,
    .legend = CS_AR_CHUNKED_LEGEND,
};
