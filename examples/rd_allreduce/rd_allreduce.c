/*
 * rd_allreduce.c - a recursive-doubling allreduce, written only against
 * collsim's installed API (<collsim/collsim.h>): an example of a
 * collective of your own for `collsim run --algo ./rd_allreduce.so`.
 *
 * Function:     the body below, one call per rank
 * Accepts:      a power-of-two number of ranks N, any count, any dtype/op
 * Returns:      every rank holds the reduction of all inputs, the same
 *               bits on every rank
 * Description:  log2(N) steps. In step k rank r pairs with p = r XOR 2^k:
 *               it announces that its data slot holds its step-k partial
 *               (fence, notify p's cell READY(k)), waits for p's, reads
 *               p's whole data slot, folds the two partials lower rank
 *               first (so both ranks compute the same bits), tells p it
 *               has finished reading (notify DONE(k)), waits until p has
 *               finished reading its own slot, and only then stores the
 *               new partial. The self-clearing epilogue returns every
 *               cell to 0 after the last step.
 * Signals:      [2 log2 N] int32 per rank: READY(k) = 2k, DONE(k) = 2k+1;
 *               each reaches 1 in a call and is back at 0 at its end.
 * Cost:         log2(N) steps; each rank loads (log2 N) * S bytes from
 *               peers (S = count * esize) and stores as much.
 * Limitations:  one tile holds the whole buffer (fine for the sizes an
 *               example runs); N a power of two.
 *
 * Buffers, 4 ranks ([0+1] = x0 op x1):
 *   start     rank0 [0]        rank1 [1]        rank2 [2]        rank3 [3]
 *   step 0    [0+1]            [0+1]            [2+3]            [2+3]
 *   step 1    [0+1+2+3]        [0+1+2+3]        [0+1+2+3]        [0+1+2+3]
 *
 * The deliberate bug (build with -DRD_BUG, `make BUG=1`): the wait for the
 * partner's DONE(k) moves from before the store to the epilogue, so a
 * rank may overwrite its data slot while its partner still reads it (a
 * write-after-read race): the partner folds in a partial twice.
 */
#include <collsim/collsim.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { SLOT_DATA = 0, SLOT_SIGNAL = 1 };

static uint32_t log2_of(uint32_t n)
{
  uint32_t k = 0;
  while ((1u << k) < n)
    k++;
  return k;
}

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (c->nranks & (c->nranks - 1))
    return "recursive doubling needs a power-of-two number of ranks";
  if (c->count > (1u << 24))
    return "this example keeps the whole buffer in one tile: at most 2^24 "
           "elements";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype);
  uint32_t steps = log2_of(c->nranks);
  s[0] = (cs_coll_slot_t){"data", c->count * es, es};
  uint32_t cells = steps > 0 ? 2 * steps : 1; /* one rank: one idle cell */
  s[1] = (cs_coll_slot_t){"signal", 4ull * cells, 4};
  return 2;
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  uint32_t es = cs_dtype_size(c->dtype), v = (uint32_t)c->count;
  cs_tile_t acc, recv;
  int rc = cs_tile_init(&acc, es, v);
  if (rc == 0 && (rc = cs_tile_init(&recv, es, v)) < 0)
    cs_tile_fini(&acc);
  if (rc < 0)
    return cs_dev_error(d, rc);

  cs_load(d, &acc, me, SLOT_DATA, 0, v, v);
  for (uint32_t k = 0; (1u << k) < n; k++) {
    uint32_t p = me ^ (1u << k);
    cs_mark(d, 1, k);
    cs_fence(d); /* my step-k partial has landed before I say so */
    cs_notify(d, p, SLOT_SIGNAL, 2 * k, CS_NOTIFY_ADD, 1);
    cs_wait(d, SLOT_SIGNAL, 2 * k, CS_CMP_GE, 1);
    cs_load(d, &recv, p, SLOT_DATA, 0, v, v);
    if (me < p) {
      cs_tile_reduce(d, &acc, &recv, c->dtype, c->op);
    } else {
      cs_tile_reduce(d, &recv, &acc, c->dtype, c->op);
      cs_tile_t t = acc;
      acc = recv;
      recv = t;
    }
    cs_notify(d, p, SLOT_SIGNAL, 2 * k + 1, CS_NOTIFY_ADD, 1);
#ifndef RD_BUG
    cs_wait(d, SLOT_SIGNAL, 2 * k + 1, CS_CMP_GE, 1);
#endif
    cs_store(d, &acc, SLOT_DATA, 0, v);
  }
  /* Epilogue: every partner's notifies of this call have landed (the
   * waits saw them), so taking 1 off each cell returns it to 0; adds
   * commute, so a partner already in its next call keeps its +1. */
  for (uint32_t k = 0; (1u << k) < n; k++) {
#ifdef RD_BUG
    cs_wait(d, SLOT_SIGNAL, 2 * k + 1, CS_CMP_GE, 1); /* moved here: too late */
#endif
    cs_notify(d, me, SLOT_SIGNAL, 2 * k, CS_NOTIFY_ADD, -1);
    cs_notify(d, me, SLOT_SIGNAL, 2 * k + 1, CS_NOTIFY_ADD, -1);
  }
  cs_tile_fini(&acc);
  cs_tile_fini(&recv);
  return 0;
}

/* The same tree, serially: at step k the block of 2^(k+1) ranks holding r
 * folds its lower half's partial with its upper half's, lower first. */
static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  (void)rank; /* the same on every rank */
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  size_t row = (size_t)c->count * es;
  /* part + r*row: the partial rank r holds after each step. */
  unsigned char *part = malloc(n * row);
  if (!part) {
    memset(out, 0xff, row); /* no memory: a result that never matches */
    return;
  }
  memcpy(part, in, n * row);
  for (uint32_t k = 0; (1u << k) < n; k++)
    for (uint32_t r = 0; r < n; r++) {
      uint32_t p = r ^ (1u << k);
      if (r < p) {
        cs_reduce_kernel(c->dtype, c->op, part + r * row, part + p * row,
                         c->count);
        memcpy(part + p * row, part + r * row, row);
      }
    }
  memcpy(out, part, row);
  free(part);
}

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
    .size = sizeof(cs_collective_t),
#ifdef RD_BUG
    .name = "rd-allreduce-bug",
#else
    .name = "rd-allreduce",
#endif
    .what = "recursive-doubling allreduce (power-of-two ranks)",
    .refuse = refuse,
    .slots = slots,
    .in_slot = SLOT_DATA,
    .out_slot = SLOT_DATA,
    .signal_slot = SLOT_SIGNAL,
    .body = body,
    .expect = expect,
};
