/*
 * defects.c - a small allreduce written against the public API, and the
 * ordering defects of tests/test_explain.c's benchmark, one shared object
 * each: the build compiles this file once per defect with -DDEFECT=N
 * (CMakeLists.txt), DEFECT 0 being the correct collective.
 *
 * Every rank r, per call (N ranks, an even count, h = count / 2; odd
 * calls keep the halves in pub the other way round):
 *   publish t0  load its input; store the first half into its `pub` slot,
 *               fence, notify every peer's READY cell r (+1); the same
 *               for the second half (+1 again)
 *   gather tT   for T = 1..N-1, peer p = (r + T) mod N: wait until
 *               READY cell p >= 1, load p's first half; wait until it is
 *               >= 2, load the second half; fold both into its own; take
 *               2 off the cell (it is 0 again)
 *   finish t0   notify every peer's DONE cell r (+1: done reading your
 *               pub), wait for every peer's DONE cell >= 1 and take 1 off
 *               it (nobody reads my pub any more: the next call may
 *               overwrite it), store the result
 * Its barriers are named: READY (a store before the peers' loads of it)
 * and DONE (the peers' loads before the owner's next store); its phases
 * publish, gather and finish.
 *
 * The defects, each with the edge its author took out (the label the
 * benchmark holds check and shrink to):
 *   1 no-fence      no fence between the stores and their notifies: fence
 *   2 no-ready      no READY notifies or waits at all: READY barrier
 *   3 no-done       no DONE barrier: read-complete barrier
 *   4 wrong-peer    the waits before the loads of p watch another peer's
 *                   cell (N >= 3): READY barrier
 *   5 low-target    the wait before the second half waits for >= 1, not 2:
 *                   READY barrier
 *   6 stale         the READY cells are never taken back to 0 (the
 *                   registration says they end at 2 per call): the next
 *                   call's waits pass on stale credits: a self-clearing reset
 *   7 eq            the waits compare == where >= is meant: Eq hazard
 *   8 set-add       the READY cells are reset with a Set 0 at the end of
 *                   the call, after the DONE notifies, where the peers
 *                   add: a peer's next-call add can be wiped: mixed Set/Add
 * DEFECT 9 is the correct collective registered as a collsim built
 * before the names existed would see it (`size` without the names): it
 * must load and run, its tags "P2 t1 j0". DEFECT 10 names a phase with a
 * space, which collsim must refuse to load.
 */
#include <collsim/collsim.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef DEFECT
#define DEFECT 0
#endif

enum { IN = 0, PUB = 1, OUT = 2, SIG = 3 };
enum { PUBLISH = 1, GATHER = 2, FINISH = 3 };

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (c->nranks < (DEFECT == 4 ? 3u : 2u))
    return DEFECT == 4 ? "this defect needs 3 ranks or more"
                       : "this collective needs 2 ranks or more";
  if (c->count < 2 || c->count % 2 || c->count * cs_dtype_size(c->dtype) > c->tile_bytes)
    return "this collective takes an even count of 2 elements or more, at "
           "most one tile";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype);
  s[IN] = (cs_coll_slot_t){"in", c->count * es, es};
  s[PUB] = (cs_coll_slot_t){"pub", c->count * es, es};
  s[OUT] = (cs_coll_slot_t){"out", c->count * es, es};
  s[SIG] = (cs_coll_slot_t){"sig", 4ull * 2 * c->nranks, 4};
  return 4;
}

/* Stores tile t into pub at off, then announces it to every peer. */
static void publish(cs_dev_t *d, const cs_tile_t *t, uint64_t off)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  cs_store(d, t, PUB, off, t->valid);
  if (DEFECT != 1)
    cs_fence(d);
  if (DEFECT == 2)
    return;
  for (uint32_t q = 0; q < n; q++)
    if (q != me) {
      cs_notify(d, q, SIG, me, CS_NOTIFY_ADD, 1);
    }
}

static void ready_wait(cs_dev_t *d, uint32_t cell, int32_t target)
{
  if (DEFECT != 2)
    cs_wait(d, SIG, cell, DEFECT == 7 ? CS_CMP_EQ : CS_CMP_GE, target);
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  uint32_t es = cs_dtype_size(c->dtype), v = (uint32_t)c->count;
  uint32_t h = v / 2;
  /* Odd calls swap the halves in pub, so that a load of the previous
   * call's pub gives a wrong result (the same inputs every call would
   * hide it). Every rank makes the same calls: the same parity. */
  static uint32_t calls;
  uint64_t off_a = calls % 2 ? h : 0, off_b = calls % 2 ? 0 : h;
  calls++;
  cs_tile_t a, b, x, y;
  int rc = cs_tile_init(&a, es, v);
  if (rc == 0)
    rc = cs_tile_init(&b, es, v);
  if (rc == 0)
    rc = cs_tile_init(&x, es, v);
  if (rc == 0)
    rc = cs_tile_init(&y, es, v);
  if (rc < 0)
    return cs_dev_error(d, rc);

  cs_mark(d, PUBLISH, 0);
  cs_load(d, &a, me, IN, 0, h, h);
  cs_load(d, &b, me, IN, h, h, h);
  publish(d, &a, off_a);
  publish(d, &b, off_b);

  for (uint32_t t = 1; t < n; t++) {
    uint32_t p = (me + t) % n;
    uint32_t cell = DEFECT == 4 ? (me + t % (n - 1) + 1) % n : p;
    cs_mark(d, GATHER, t);
    ready_wait(d, cell, 1);
    cs_load(d, &x, p, PUB, off_a, h, h);
    ready_wait(d, cell, DEFECT == 5 ? 1 : 2);
    cs_load(d, &y, p, PUB, off_b, h, h);
    cs_tile_reduce(d, &a, &x, c->dtype, c->op);
    cs_tile_reduce(d, &b, &y, c->dtype, c->op);
    if (DEFECT != 2 && DEFECT != 6 && DEFECT != 8)
      cs_notify(d, me, SIG, cell, CS_NOTIFY_ADD, -2);
  }

  cs_mark(d, FINISH, 0);
  if (DEFECT != 3) {
    for (uint32_t q = 0; q < n; q++)
      if (q != me)
        cs_notify(d, q, SIG, n + me, CS_NOTIFY_ADD, 1);
    for (uint32_t q = 0; DEFECT == 8 && q < n; q++)
      if (q != me) /* too late: q may have added its next call's +1 */
        cs_notify(d, me, SIG, q, CS_NOTIFY_SET, 0);
    for (uint32_t q = 0; q < n; q++)
      if (q != me) {
        cs_wait(d, SIG, n + q, CS_CMP_GE, 1);
        cs_notify(d, me, SIG, n + q, CS_NOTIFY_ADD, -1);
      }
  }
  cs_store(d, &a, OUT, 0, h);
  cs_store(d, &b, OUT, h, h);
  cs_tile_fini(&a);
  cs_tile_fini(&b);
  cs_tile_fini(&x);
  cs_tile_fini(&y);
  return 0;
}

/* Rank r folds its own input first, then its peers r+1, r+2, ... */
static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  size_t row = (size_t)c->count * es;
  const unsigned char *rows = in;
  memcpy(out, rows + rank * row, row);
  for (uint32_t t = 1; t < n; t++)
    cs_reduce_kernel(c->dtype, c->op, out, rows + ((rank + t) % n) * row,
                     c->count);
}

/* Stale credits: every READY cell of another rank gains 2 per call. */
static int32_t signal_final(const cs_coll_cfg_t *c, uint32_t rank,
                            uint64_t cell)
{
  if (DEFECT != 6 || cell >= c->nranks || cell == rank)
    return 0;
  return (int32_t)(2 * c->iters);
}

#if DEFECT == 10
static const char *const phases[] = {"publish", "gather all", "finish"};
#elif DEFECT != 9
static const char *const phases[] = {"publish", "gather", "finish"};
#endif

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
#if DEFECT == 9
    .size = CS_COLLECTIVE_SIZE_1,
#else
    .size = sizeof(cs_collective_t),
#endif
    .name = "defects",
    .what = "a pull allreduce with READY and DONE barriers, or one defect",
    .refuse = refuse,
    .slots = slots,
    .in_slot = IN,
    .out_slot = OUT,
    .signal_slot = SIG,
    .signal_final = signal_final,
    .body = body,
    .expect = expect,
#if DEFECT != 9
    .phases = phases,
    .nphases = 3,
    .ready_barrier = "READY",
    .read_done_barrier = "DONE",
#endif
};
