/*
 * ring_allgather.c - a ring allgather in the push model, written only
 * against collsim's installed API (<collsim/collsim.h>): an example of a
 * collective of your own for `collsim run --algo ./ring_allgather.so`.
 *
 * Function:     the body below, one call per rank
 * Accepts:      any number of ranks N, any count, any dtype (op unused)
 * Returns:      every rank's "out" slot holds all N inputs, rank order:
 *               out[s*count + i] = input of rank s, element i
 * Description:  the rank copies its own input into its block of out. A
 *               READY barrier with the left neighbour says the right
 *               neighbour's out slot may be written (its previous call's
 *               result has been read). Then N-1 rounds: in round t the
 *               rank puts block (r - t) mod N, which it holds, into the
 *               right neighbour's out slot, fences, and notifies the
 *               neighbour's cell t; it then waits for its own cell t,
 *               which says block (r - 1 - t) mod N has arrived from the
 *               left. The epilogue returns every cell to 0.
 * Signals:      [N] int32 per rank: cell t < N-1 for round t, cell N-1
 *               for READY; each reaches 1 in a call and ends at 0.
 * Cost:         N-1 rounds; each rank puts (N-1) * S bytes to its right
 *               neighbour (S = count * esize), the bandwidth-optimal ring.
 * Limitations:  one tile holds one block (count elements).
 *
 * Blocks in out after each round, 4 ranks ('.' = not yet there):
 *   start     rank0 [0 . . .]  rank1 [. 1 . .]  rank2 [. . 2 .]  rank3 [. . . 3]
 *   round 0   [0 . . 3]        [0 1 . .]        [. 1 2 .]        [. . 2 3]
 *   round 1   [0 . 2 3]        [0 1 . 3]        [0 1 2 .]        [. 1 2 3]
 *   round 2   [0 1 2 3]        [0 1 2 3]        [0 1 2 3]        [0 1 2 3]
 *
 * The deliberate bug (build with -DAG_BUG, `make BUG=1`): no fence between
 * the put and the notify that announces it. Under the fifo memory model
 * that is harmless (posted writes land in order); under relaxed the
 * notify may land first, and the neighbour forwards or returns a block
 * that has not arrived.
 */
#include <collsim/collsim.h>

#include <stdlib.h>
#include <string.h>

enum { SLOT_IN = 0, SLOT_OUT = 1, SLOT_SIGNAL = 2 };

static uint64_t out_count(const cs_coll_cfg_t *c)
{
  return (uint64_t)c->nranks * c->count;
}

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (c->count > (1u << 24))
    return "this example moves a block in one tile: at most 2^24 elements";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype);
  s[0] = (cs_coll_slot_t){"in", c->count * es, es};
  s[1] = (cs_coll_slot_t){"out", out_count(c) * es, es};
  s[2] = (cs_coll_slot_t){"signal", 4ull * c->nranks, 4};
  return 3;
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  uint32_t es = cs_dtype_size(c->dtype), v = (uint32_t)c->count;
  uint32_t left = (me + n - 1) % n, right = (me + 1) % n;
  cs_tile_t t;
  int rc = cs_tile_init(&t, es, v);
  if (rc < 0)
    return cs_dev_error(d, rc);

  cs_load(d, &t, me, SLOT_IN, 0, v, v);
  cs_store(d, &t, SLOT_OUT, (uint64_t)me * v, v);
  if (n > 1) {
    cs_mark(d, 1, 0);
    cs_notify(d, left, SLOT_SIGNAL, n - 1, CS_NOTIFY_ADD, 1); /* READY */
    cs_wait(d, SLOT_SIGNAL, n - 1, CS_CMP_GE, 1);
  }
  for (uint32_t round = 0; round + 1 < n; round++) {
    uint32_t blk = (me + n - round) % n;
    cs_mark(d, 2, round);
    if (round > 0) /* round 0 sends the own input, already in t */
      cs_load(d, &t, me, SLOT_OUT, (uint64_t)blk * v, v, v);
    cs_put(d, &t, right, SLOT_OUT, (uint64_t)blk * v, v);
#ifndef AG_BUG
    cs_fence(d); /* the block lands before the notify that announces it */
#endif
    cs_notify(d, right, SLOT_SIGNAL, round, CS_NOTIFY_ADD, 1);
    cs_wait(d, SLOT_SIGNAL, round, CS_CMP_GE, 1);
  }
  /* Epilogue: every cell was waited for, so its +1 has landed. */
  for (uint32_t cell = 0; n > 1 && cell < n; cell++)
    cs_notify(d, me, SLOT_SIGNAL, cell, CS_NOTIFY_ADD, -1);
  cs_tile_fini(&t);
  return 0;
}

static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  (void)rank; /* the same on every rank: the inputs, rank by rank */
  memcpy(out, in, (size_t)out_count(c) * cs_dtype_size(c->dtype));
}

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
    .size = sizeof(cs_collective_t),
#ifdef AG_BUG
    .name = "ring-allgather-bug",
#else
    .name = "ring-allgather",
#endif
    .what = "ring allgather, push model",
    .refuse = refuse,
    .slots = slots,
    .in_slot = SLOT_IN,
    .out_slot = SLOT_OUT,
    .out_count = out_count,
    .signal_slot = SLOT_SIGNAL,
    .body = body,
    .expect = expect,
};
