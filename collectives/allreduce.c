/*
 * allreduce.c - what the algorithms share: configuration checks, window
 * layout, tiles, stage-in/out, input fills and the rank body of `collsim
 * run`; the facts of one algorithm (its signal shape and final values,
 * where a wait sits, its body) come from its descriptor (algo.h), each in
 * the algorithm's own file (mesh.c, ring.c, host.c), which call down into
 * barrier.c for their shared steps.
 */
#include "allreduce.h"

#include <stdio.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ar_internal.h"
#include "geometry.h"
#include "reduce.h"
#include "../sim/rng.h"

const char *cs_fill_name(cs_fill_t f)
{
  static const char *const n[] = {"default", "arange", "pto", "random", "input"};
  return (unsigned)f <= CS_FILL_INPUT ? n[f] : "?";
}

uint32_t cs_ar_max_ranks(cs_algo_t algo)
{
  const cs_algo_desc_t *a = cs_algo_desc(algo);
  return a ? a->max_ranks : CS_AR_MAX_RANKS;
}

/* The §3.3 shape and valid rectangle of c (none: all four 0). */
static int check_shape(const cs_ar_cfg_t *c)
{
  if (!c->shape_rows && !c->shape_cols && !c->valid_rows && !c->valid_cols)
    return 0;
  if (!c->shape_rows || !c->shape_cols ||
      (uint64_t)c->shape_rows * c->shape_cols != c->count)
    return CS_EARSHAPE;
  if (!c->valid_rows || !c->valid_cols || c->valid_rows > c->shape_rows ||
      c->valid_cols > c->shape_cols)
    return CS_EARVALID;
  if (!cs_ar_rect(c))
    return 0;
  if (!cs_algo_desc(c->algo)->rect)
    return CS_EARVALIDALGO;
  if (c->shape_cols > INT32_MAX) /* the 2-D accesses' stride is an int32 */
    return CS_EARVALIDSTRIDE;
  if ((uint64_t)c->valid_rows * c->valid_cols * cs_dtype_size(c->dtype) >
      c->tile_bytes)
    return CS_EARVALIDTILE;
  return 0;
}

int cs_ar_check(const cs_ar_cfg_t *c)
{
  if (!cs_algo_desc(c->algo) || (unsigned)c->dtype >= CS_NDTYPES ||
      (unsigned)c->op >= CS_NOPS)
    return CS_EARENUM;
  if (c->nranks < 1 || c->nranks > cs_ar_max_ranks(c->algo))
    return CS_EARRANKS;
  if (c->count < 1 || c->count > CS_AR_MAX_COUNT)
    return CS_EARCOUNT;
  if (c->tile_bytes < CS_AR_MIN_TILE || c->tile_bytes > CS_AR_MAX_TILE ||
      c->tile_bytes % 32)
    return CS_EARTILE;
  if (c->iters < 1)
    return CS_EARITERS;
  const cs_algo_desc_t *a = cs_algo_desc(c->algo);
  if (a->dtypes && !(a->dtypes & 1u << c->dtype))
    return CS_EARDTYPE;
  if (a->ops && !(a->ops & 1u << c->op))
    return CS_EAROP;
  if (a->meets && !a->meets(c))
    return CS_EARPRECOND;
  return check_shape(c);
}

uint64_t cs_ar_signal_cells(const cs_ar_cfg_t *c)
{
  return cs_algo_desc(c->algo)->signal_cells(c);
}

int32_t cs_ar_signal_final(const cs_ar_cfg_t *c)
{
  return cs_algo_desc(c->algo)->signal_final(c);
}

int cs_ar_signal_silent(const cs_ar_cfg_t *c, uint32_t rank, uint64_t cell)
{
  const cs_algo_desc_t *a = cs_algo_desc(c->algo);
  return cell % c->nranks == rank ||
         (a->signal_silent && a->signal_silent(c, rank, cell));
}

void cs_ar_wait_where(const cs_ar_cfg_t *c, uint32_t rank, uint32_t slot,
                      uint32_t cell, int32_t target, char *buf, size_t n)
{
  buf[0] = 0;
  if (slot != CS_AR_SLOT_SIGNAL || cell >= cs_ar_signal_cells(c) || target < 1 ||
      cs_ar_signal_silent(c, rank, cell) || n == 0)
    return;
  cs_knobs_t k = cs_bug_knobs(c->bug, c->no_epilogue);
  cs_algo_desc(c->algo)->wait_where(c, &k, rank, cell, target, buf, n);
}

int cs_ar_layout(const cs_ar_cfg_t *c, cs_layout_t *l)
{
  int rc;
  cs_layout_init(l, cs_bug_knobs(c->bug, c->no_epilogue).slot_align);
  uint32_t es = cs_dtype_size(c->dtype);
  if ((rc = cs_layout_add(l, "data", c->count * es, es)) < 0)
    return rc;
  if ((rc = cs_layout_add(l, "signal", cs_ar_signal_cells(c) * 4, 4)) < 0)
    return rc;
  if (cs_algo_desc(c->algo)->out_slot &&
      (rc = cs_layout_add(l, "out", c->count * es, es)) < 0)
    return rc;
  if (c->padded_cells && (rc = cs_layout_pad_cells(l, CS_AR_SLOT_SIGNAL)) < 0)
    return rc;
  return 0;
}

static uint32_t tile_cap(const cs_ar_cfg_t *c)
{
  uint32_t es = cs_dtype_size(c->dtype);
  uint32_t cap = c->tile_bytes / es;
  return cap > CS_HOST_CHUNK ? cap : CS_HOST_CHUNK;
}

int cs_ar_tiles_init(cs_ar_tiles_t *t, const cs_ar_cfg_t *c)
{
  uint32_t es = cs_dtype_size(c->dtype), cap = tile_cap(c);
  memset(t, 0, sizeof(*t));
  t->acc.buf = aligned_alloc(64, (size_t)cap * es);
  t->recv.buf = aligned_alloc(64, (size_t)cap * es);
  if (!t->acc.buf || !t->recv.buf) {
    cs_ar_tiles_fini(t);
    return -ENOMEM;
  }
  t->acc.esize = t->recv.esize = es;
  t->acc.width = t->recv.width = cap;
  t->knobs = cs_bug_knobs(c->bug, c->no_epilogue);
  return 0;
}

void cs_ar_tiles_fini(cs_ar_tiles_t *t)
{
  free(t->acc.buf);
  free(t->recv.buf);
  t->acc.buf = t->recv.buf = NULL;
}

static void allreduce_checked(cs_dev_t *d, const cs_ar_cfg_t *c,
                              const cs_knobs_t *k, cs_ar_tiles_t *t,
                              cs_ar_sigbad_t *bad)
{
  cs_algo_desc(c->algo)->body(d, c, k, t, bad);
}

void cs_allreduce(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t)
{
  allreduce_checked(d, c, &t->knobs, t, NULL);
}

/* The slot a built-in's result is read from. */
static uint32_t ar_out_slot(const cs_ar_cfg_t *c)
{
  return cs_algo_desc(c->algo)->out_slot ? CS_AR_SLOT_OUT : CS_AR_SLOT_DATA;
}

void cs_ar_stage_in(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                    const void *src)
{
  t->acc.width = tile_cap(c);
  cs_rank_stage_in(d, &t->acc, CS_AR_SLOT_DATA, src, c->count);
}

void cs_ar_stage_out(cs_dev_t *d, const cs_ar_cfg_t *c, cs_ar_tiles_t *t,
                     void *dst)
{
  t->acc.width = tile_cap(c);
  /* The kernel boundary drains the pipes: the collective's own last stores
   * land before its output is read back (as the separate stage-out kernel
   * of the reference's tests sees them). */
  cs_fence(d);
  cs_rank_stage_out(d, &t->acc, ar_out_slot(c), dst, c->count);
}

/* ------------------------------------------------------------ fills */

cs_fill_t cs_ar_fill_rule(cs_dtype_t dtype, cs_op_t op, bool half_fill_pto)
{
  if (op == CS_PROD || (half_fill_pto && dtype != CS_FP32))
    return CS_FILL_PTO;
  return CS_FILL_ARANGE;
}

cs_fill_t cs_ar_default_fill(const cs_ar_cfg_t *c)
{
  /* docs/algorithms.md §7: mesh/ring use the pto fill for prod or FP16,
   * host only for prod; arange otherwise. bf16 is treated like fp16. */
  return cs_ar_fill_rule(c->dtype, c->op, cs_algo_desc(c->algo)->half_fill_pto);
}

static void put_elem(cs_dtype_t t, void *dst, uint64_t i, float v)
{
  if (t == CS_FP32)
    ((float *)dst)[i] = v;
  else if (t == CS_FP16)
    ((uint16_t *)dst)[i] = cs_float_to_half(v);
  else
    ((uint16_t *)dst)[i] = cs_float_to_bf16(v);
}

void cs_ar_fill(cs_fill_t f, const cs_ar_cfg_t *c, uint64_t seed, uint32_t r,
                void *dst)
{
  if (f == CS_FILL_DEFAULT)
    f = cs_ar_default_fill(c);
  uint64_t state = seed * 0x2545f4914f6cdd1dull + r + 1;
  double lo = c->op == CS_PROD ? 0.9 : -1.0, hi = c->op == CS_PROD ? 1.1 : 1.0;
  for (uint64_t i = 0; i < c->count; i++) {
    double v;
    switch (f) {
    case CS_FILL_ARANGE: v = 100.0 * r + (double)i; break;
    case CS_FILL_PTO: v = 1.0 + 0.125 * r + 0.0625 * (double)(i % 5); break;
    default:
      v = lo + (hi - lo) * (double)(cs_splitmix64(&state) >> 11) * 0x1p-53;
      break;
    }
    put_elem(c->dtype, dst, i, (float)v);
  }
}

/* ------------------------------------------------------------ rank body */

uint64_t cs_ar_stats_off(const cs_ar_cfg_t *c)
{
  return cs_rank_stats_off(c->count * cs_dtype_size(c->dtype));
}

uint64_t cs_ar_io_bytes(const cs_ar_cfg_t *c)
{
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  return cs_rank_io_bytes(bytes, bytes, c->iters);
}

/* One rank's call state: the configuration and its tiles. */
typedef struct ar_rank {
  const cs_ar_cfg_t *c;
  cs_ar_tiles_t      t;
  uint32_t           cap;
  cs_ar_sigbad_t     sb;
} ar_rank_t;

/* One call; the last one checks every signal cell's final value before
 * its epilogue into the stats. */
static int ar_call(cs_dev_t *d, void *ctx, int last, cs_rank_stats_t *st)
{
  ar_rank_t *a = ctx;
  allreduce_checked(d, a->c, &a->t.knobs, &a->t, last ? &a->sb : NULL);
  a->t.acc.width = a->cap; /* the stage-out's tile again */
  if (last) {
    st->signal_bad = a->sb.n;
    st->signal_cell = a->sb.cell;
    st->signal_got = a->sb.got;
    st->signal_want = a->sb.want;
  }
  return 0;
}

int cs_ar_rank_main(cs_dev_t *d, void *arg)
{
  const cs_ar_cfg_t *c = arg;
  ar_rank_t a = {.c = c, .cap = tile_cap(c)};
  int err = cs_ar_tiles_init(&a.t, c);
  if (err < 0)
    return cs_dev_error(d, err);
  /* The stage tile is the accumulator, at its cap (as the tiles start). */
  cs_rank_calls_t k = {
      .in_count = c->count, .out_count = c->count,
      .esize = cs_dtype_size(c->dtype), .in_slot = CS_AR_SLOT_DATA,
      .out_slot = ar_out_slot(c), .stage_fence = 0, .stage_tile = &a.t.acc,
      .call = ar_call, .ctx = &a};
  int rc = cs_rank_run_calls(d, &k, c->iters);
  cs_ar_tiles_fini(&a.t);
  return rc;
}
