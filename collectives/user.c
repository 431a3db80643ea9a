/*
 * user.c - the rank harness every run's rank body is (stage-in, the call,
 * stage-out, the times and the comparison with the first call), the rank
 * body and window of a registered collective on it (see user.h), and the
 * tile reduce the public device API offers (cs_tile_reduce). The
 * collective's own code is the caller's; nothing here knows an
 * algorithm.
 */
#include "user.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

void cs_user_run_init(cs_user_run_t *u, const cs_collective_t *coll,
                      const cs_coll_cfg_t *cfg)
{
  u->coll = coll;
  u->cfg = *cfg;
  u->out_count = coll->out_count ? coll->out_count(cfg) : cfg->count;
  /* A registration built before `flags` ends before it (its size). */
  u->flags = coll->size >= offsetof(cs_collective_t, flags) + sizeof(coll->flags)
                 ? coll->flags : 0;
}

int cs_user_layout(const cs_user_run_t *u, cs_layout_t *l)
{
  /* Room for more than the API allows: a collective that fills a few
   * slots too many (and returns that count, refused below) writes into
   * this spare room, not over collsim's stack. */
  cs_coll_slot_t s[CS_COLL_MAX_SLOTS * 8];
  memset(s, 0, sizeof(s));
  int n = u->coll->slots(&u->cfg, s);
  if (n < 0)
    return n;
  const cs_collective_t *c = u->coll;
  uint32_t es = cs_dtype_size(u->cfg.dtype);
  if (n < 1 || n > (int)CS_COLL_MAX_SLOTS || c->in_slot >= (uint32_t)n ||
      c->out_slot >= (uint32_t)n || s[c->in_slot].esize != es ||
      s[c->out_slot].esize != es ||
      s[c->in_slot].nbytes < u->cfg.count * es ||
      s[c->out_slot].nbytes < u->out_count * es ||
      (c->signal_slot != CS_COLL_NO_SIGNALS &&
       (c->signal_slot >= (uint32_t)n || s[c->signal_slot].esize != 4)))
    return -EINVAL;
  cs_layout_init(l, CS_SLOT_ALIGN);
  for (int i = 0; i < n; i++) {
    s[i].name[CS_COLL_NAMELEN - 1] = 0;
    int rc = cs_layout_add(l, s[i].name, s[i].nbytes, s[i].esize);
    if (rc < 0)
      return rc;
  }
  return 0;
}

uint64_t cs_user_in_bytes(const cs_user_run_t *u)
{
  return u->cfg.count * cs_dtype_size(u->cfg.dtype);
}

uint64_t cs_user_out_bytes(const cs_user_run_t *u)
{
  return u->out_count * cs_dtype_size(u->cfg.dtype);
}

uint64_t cs_rank_stats_off(uint64_t out_bytes)
{
  return cs_round_up(out_bytes, 64);
}

uint64_t cs_rank_io_bytes(uint64_t in_bytes, uint64_t out_bytes,
                          uint32_t iters)
{
  uint64_t out = cs_rank_stats_off(out_bytes) + sizeof(cs_rank_stats_t) +
                 8ull * iters;
  return in_bytes > out ? in_bytes : out;
}

uint64_t cs_user_stats_off(const cs_user_run_t *u)
{
  return cs_rank_stats_off(cs_user_out_bytes(u));
}

uint64_t cs_user_io_bytes(const cs_user_run_t *u)
{
  return cs_rank_io_bytes(cs_user_in_bytes(u), cs_user_out_bytes(u),
                          u->cfg.iters);
}

/* The loops of cs_rank_stage_in and _out, inlined into the harness's
 * per-call path (an exported function of a PIC object is not, and gcc
 * leaves a static one with two callers out of line: 24 instructions a
 * call more, callgrind says). */
static inline __attribute__((always_inline)) void stage_in(cs_dev_t *d, cs_tile_t *t, uint32_t slot,
                     const void *src, uint64_t count)
{
  uint32_t es = t->esize;
  for (uint64_t off = 0; off < count; off += t->width) {
    uint32_t v = (uint32_t)(count - off < t->width ? count - off : t->width);
    memcpy(t->buf, (const uint8_t *)src + off * es, (size_t)v * es);
    t->valid = v;
    cs_store(d, t, slot, off, v);
  }
}

static inline __attribute__((always_inline)) void
stage_out(cs_dev_t *d, cs_tile_t *t, uint32_t slot, void *dst, uint64_t count)
{
  uint32_t es = t->esize;
  for (uint64_t off = 0; off < count; off += t->width) {
    uint32_t v = (uint32_t)(count - off < t->width ? count - off : t->width);
    cs_load(d, t, d->rank, slot, off, v, v);
    memcpy((uint8_t *)dst + off * es, t->buf, (size_t)v * es);
  }
}

void cs_rank_stage_in(cs_dev_t *d, cs_tile_t *t, uint32_t slot,
                      const void *src, uint64_t count)
{
  stage_in(d, t, slot, src, count);
}

void cs_rank_stage_out(cs_dev_t *d, cs_tile_t *t, uint32_t slot, void *dst,
                       uint64_t count)
{
  stage_out(d, t, slot, dst, count);
}

/* The first element where call `it`'s result differs from call 0's. */
static void first_difference(const cs_rank_calls_t *k, const uint8_t *first,
                             const uint8_t *out, uint32_t it,
                             cs_rank_stats_t *st)
{
  uint32_t es = k->esize;
  uint64_t i = 0;
  while (i + 1 < k->out_count && !memcmp(first + i * es, out + i * es, es))
    i++;
  st->differ_call = it;
  st->differ_i = i;
  st->differ_first = st->differ_got = 0;
  memcpy(&st->differ_first, first + i * es, es);
  memcpy(&st->differ_got, out + i * es, es);
}

int cs_rank_run_calls(cs_dev_t *d, const cs_rank_calls_t *k, uint32_t iters)
{
  cs_tile_t own, *t = k->stage_tile;
  int rc = 0;
  if (!t) {
    rc = cs_tile_init(&own, k->esize, k->stage_width ? k->stage_width : 1);
    if (rc < 0)
      return cs_dev_error(d, rc);
    t = &own;
  }
  uint8_t *in = cs_world_input(d->world, d->rank);
  uint8_t *out = cs_world_output(d->world, d->rank);
  uint64_t nbytes = k->out_count * k->esize;
  cs_rank_stats_t *st = (cs_rank_stats_t *)(out + cs_rank_stats_off(nbytes));
  uint8_t *first = NULL;
  if (iters > 1 && !(first = malloc(nbytes))) {
    if (t == &own)
      cs_tile_fini(&own);
    return cs_dev_error(d, -ENOMEM);
  }
  for (uint32_t it = 0; it < iters && rc == 0; it++) {
    stage_in(d, t, k->in_slot, in, k->in_count);
    /* The stage-in kernel ends before the collective starts: its stores
     * have landed before the body's first access (unless the collective
     * orders them itself, as the built-ins do). */
    if (k->stage_fence)
      cs_fence(d);
    uint64_t t0 = cs_now_ns();
    rc = k->call(d, k->ctx, it + 1 == iters, st);
    st->ns[it] = cs_now_ns() - t0;
    if (rc != 0)
      break;
    /* The kernel boundary drains the pipes before the result is read. */
    cs_fence(d);
    stage_out(d, t, k->out_slot, out, k->out_count);
    if (first && it == 0)
      memcpy(first, out, nbytes);
    else if (first && memcmp(first, out, nbytes) != 0 &&
             st->iters_differ++ == 0)
      first_difference(k, first, out, it, st);
  }
  free(first);
  if (t == &own)
    cs_tile_fini(&own);
  return rc;
}

static int user_call(cs_dev_t *d, void *ctx, int last, cs_rank_stats_t *st)
{
  const cs_user_run_t *u = ctx;
  (void)last;
  (void)st;
  return u->coll->body(d, &u->cfg);
}

int cs_user_rank_main(cs_dev_t *d, void *arg)
{
  const cs_user_run_t *u = arg;
  uint32_t es = cs_dtype_size(u->cfg.dtype);
  cs_rank_calls_t k = {
      .in_count = u->cfg.count, .out_count = u->out_count, .esize = es,
      .in_slot = u->coll->in_slot, .out_slot = u->coll->out_slot,
      .stage_width = u->cfg.tile_bytes / es,
      .stage_fence = !(u->flags & CS_COLL_NO_STAGE_FENCE),
      .call = user_call, .ctx = (void *)u};
  return cs_rank_run_calls(d, &k, u->cfg.iters);
}

/* ------------------------------------------------------------ reduce */

typedef struct tile_red {
  cs_dtype_t       t;
  cs_op_t          op;
  cs_minmax_t      mm;
  int              x_first;
  cs_tile_t       *acc;
  const cs_tile_t *x;
} tile_red_t;

static void tile_red_kernel(void *arg)
{
  const tile_red_t *r = arg;
  cs_reduce_kernel_mm(r->t, r->op, r->mm, r->x_first, r->acc->buf, r->x->buf,
                      r->acc->valid);
}

void cs_tile_reduce(cs_dev_t *d, cs_tile_t *acc, const cs_tile_t *x,
                    cs_dtype_t t, cs_op_t op)
{
  cs_tile_reduce_mm(d, acc, x, t, op, CS_MINMAX_IEEE, 0);
}

void cs_tile_reduce_mm(cs_dev_t *d, cs_tile_t *acc, const cs_tile_t *x,
                       cs_dtype_t t, cs_op_t op, cs_minmax_t mm, int x_first)
{
  uint32_t es = cs_dtype_size(t);
  if ((unsigned)t >= CS_NDTYPES || (unsigned)op >= CS_NOPS ||
      (unsigned)mm >= CS_NMINMAX ||
      acc->esize != es || x->esize != es || acc->valid > acc->width ||
      acc->valid > x->width)
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: cs_tile_reduce: bad tiles or type (dtype %u, op %u, "
                 "minmax %u, esize %u and %u for %u, valid %u, widths %u and "
                 "%u)", d->rank, (unsigned)t, (unsigned)op, (unsigned)mm,
                 acc->esize, x->esize, es, acc->valid, acc->width, x->width);
  tile_red_t r = {t, op, mm, x_first != 0, acc, x};
  cs_reduce_event(d, op, acc->valid, tile_red_kernel, &r);
}
