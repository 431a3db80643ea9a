/*
 * heldout.c - the held-out half of the benchmark of explanations: three
 * collectives written against the public API alone, unlike
 * tests/plugins/defects.c's pull allreduce, each correct or with one
 * ordering defect. The build compiles this file once per collective and
 * defect with -DCOLL=C -DDEFECT=N (CMakeLists.txt: heldoutC_N.so), N 0
 * the correct collective. Every collective works on two halves of the
 * count (h = count / 2) and places them the other way round on odd
 * calls, so that bytes left from the previous call give a wrong result.
 *
 * COLL 1, a gather ring of puts (phases send, forward, fold; barriers
 * ARRIVE and FREED): rank r puts its input into block r of its right
 * neighbour's `gat`, fences and adds 1 to the neighbour's ARRIVE cell;
 * at step t = 1..N-2 it waits until its own ARRIVE cell >= t, loads
 * block (r - t) mod N from its own `gat` and forwards it the same way;
 * it then waits for N - 1, folds every block into its input, takes N - 1
 * off the cell, tells its left neighbour it is done reading (FREED +1)
 * and waits for its right neighbour's word before it returns.
 *   1 no-fence     no fence between the puts and their notifies: fence
 *   2 low-target   every wait is one short (t - 1, N - 2): ARRIVE barrier
 *
 * COLL 2, a mesh of puts (phases push, fold, finish; barriers SENT and
 * FREED): rank r puts its input into block r of every peer's `gat`,
 * fences, adds 1 to the peer's cell r; for p = r+1, r+2, ... it waits
 * until its cell p >= 1, loads block p of its own `gat`, folds it and
 * takes 1 off the cell; then it adds 1 to every peer's cell N + r (done
 * reading your block) and waits for its own cells N + q.
 *   3 wrong-peer   the wait before block p watches another peer's cell
 *                  (N >= 3): SENT barrier
 *   4 no-freed     no FREED barrier: the next call's puts overwrite a
 *                  block its reader has not loaded: read-complete barrier
 *
 * COLL 3, a recursive-doubling allreduce with a store per round (phases
 * round, finish; barriers POSTED and FREED; N a power of two): in round
 * k, partner = r xor 2^k, rank r stores its running result into region
 * k of its `pub`, fences, adds 1 to the partner's cell k, waits until
 * its own cell k >= 1, loads the partner's region k, folds it and takes
 * 1 off the cell; then a FREED barrier with every partner (cells K + k).
 *   5 stale        the round cells are never taken back (registered as
 *                  ending at one per call): call 2's waits pass on call
 *                  1's credits: a self-clearing reset
 *   6 set-add      the partner sets the round cell to 1 where the owner
 *                  adds -1: mixed Set/Add
 */
#include <collsim/collsim.h>

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#ifndef COLL
#define COLL 1
#endif
#ifndef DEFECT
#define DEFECT 0
#endif

enum { IN = 0, GAT = 1, OUT = 2, SIG = 3 };

static uint32_t log2u(uint32_t n)
{
  uint32_t k = 0;
  while ((1u << k) < n)
    k++;
  return k;
}

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (c->nranks < (COLL == 2 && DEFECT == 3 ? 3u : 2u))
    return "this collective needs more ranks";
  if (COLL == 3 && (c->nranks & (c->nranks - 1)))
    return "recursive doubling needs a power-of-two rank count";
  if (c->count < 2 || c->count % 2 || c->count * cs_dtype_size(c->dtype) > c->tile_bytes)
    return "this collective takes an even count of 2 elements or more, at "
           "most one tile";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype), n = c->nranks;
  uint64_t blocks = COLL == 3 ? log2u(n) : n;
  s[IN] = (cs_coll_slot_t){"in", c->count * es, es};
#if COLL == 3
  s[GAT] = (cs_coll_slot_t){"pub", blocks * c->count * es, es};
#else
  s[GAT] = (cs_coll_slot_t){"gat", blocks * c->count * es, es};
#endif
  s[OUT] = (cs_coll_slot_t){"out", c->count * es, es};
  s[SIG] = (cs_coll_slot_t){"sig", 4ull * 2 * (COLL == 3 ? log2u(n) : n), 4};
  return 4;
}

typedef struct halves {
  cs_tile_t a, b, x, y;
  uint64_t off_a, off_b; /* where the halves go in a block this call */
  uint32_t h;
} halves_t;

static int halves_init(halves_t *t, const cs_coll_cfg_t *c)
{
  static uint32_t calls; /* every rank makes the same calls */
  uint32_t es = cs_dtype_size(c->dtype);
  memset(t, 0, sizeof *t);
  t->h = (uint32_t)c->count / 2;
  t->off_a = calls % 2 ? t->h : 0;
  t->off_b = calls % 2 ? 0 : t->h;
  calls++;
  int rc = cs_tile_init(&t->a, es, t->h);
  if (rc == 0)
    rc = cs_tile_init(&t->b, es, t->h);
  if (rc == 0)
    rc = cs_tile_init(&t->x, es, t->h);
  if (rc == 0)
    rc = cs_tile_init(&t->y, es, t->h);
  return rc;
}

static void halves_fini(halves_t *t)
{
  cs_tile_fini(&t->a);
  cs_tile_fini(&t->b);
  cs_tile_fini(&t->x);
  cs_tile_fini(&t->y);
}

/* Puts tiles p, q as block `blk` of peer's slot, fenced, then notified. */
static void send(cs_dev_t *d, halves_t *t, const cs_tile_t *p, const cs_tile_t *q,
                 uint32_t peer, uint64_t blk, uint64_t count, uint32_t cell)
{
  cs_put(d, p, peer, GAT, blk * count + t->off_a, t->h);
  cs_put(d, q, peer, GAT, blk * count + t->off_b, t->h);
  if (!(COLL == 1 && DEFECT == 1))
    cs_fence(d);
  cs_notify(d, peer, SIG, cell, CS_NOTIFY_ADD, 1);
}

/* Loads block blk of rank `from`'s slot into x, y. */
static void fetch(cs_dev_t *d, halves_t *t, uint32_t from, uint64_t blk, uint64_t count)
{
  cs_load(d, &t->x, from, GAT, blk * count + t->off_a, t->h, t->h);
  cs_load(d, &t->y, from, GAT, blk * count + t->off_b, t->h, t->h);
}

static void fold(cs_dev_t *d, halves_t *t, const cs_coll_cfg_t *c)
{
  cs_tile_reduce(d, &t->a, &t->x, c->dtype, c->op);
  cs_tile_reduce(d, &t->b, &t->y, c->dtype, c->op);
}

/* The FREED barrier: tell each rank whose data I read that I am done
 * (cell base + mine of its window), then wait for the word of each rank
 * that reads mine (cell base + its) and take it back. */
static void freed(cs_dev_t *d, const uint32_t *to, const uint32_t *mine,
                  const uint32_t *from, const uint32_t *theirs, uint32_t k,
                  uint32_t base)
{
  for (uint32_t i = 0; i < k; i++)
    cs_notify(d, to[i], SIG, base + mine[i], CS_NOTIFY_ADD, 1);
  for (uint32_t i = 0; i < k; i++) {
    cs_wait(d, SIG, base + theirs[i], CS_CMP_GE, 1);
    cs_notify(d, cs_dev_rank(d), SIG, base + theirs[i], CS_NOTIFY_ADD, -1);
  }
  (void)from;
}

static void ring(cs_dev_t *d, const cs_coll_cfg_t *c, halves_t *t)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  uint32_t right = (me + 1) % n, left = (me + n - 1) % n;
  int32_t low = DEFECT == 2 ? 1 : 0;
  cs_mark(d, 1, 0);
  send(d, t, &t->a, &t->b, right, me, c->count, 0);
  for (uint32_t s = 1; s + 1 < n; s++) {
    cs_mark(d, 2, s);
    cs_wait(d, SIG, 0, CS_CMP_GE, (int32_t)s - low);
    fetch(d, t, me, (me + n - s) % n, c->count);
    send(d, t, &t->x, &t->y, right, (me + n - s) % n, c->count, 0);
  }
  cs_mark(d, 3, 0);
  cs_wait(d, SIG, 0, CS_CMP_GE, (int32_t)(n - 1) - low);
  for (uint32_t s = 1; s < n; s++) {
    fetch(d, t, me, (me + n - s) % n, c->count);
    fold(d, t, c);
  }
  cs_notify(d, me, SIG, 0, CS_NOTIFY_ADD, -(int32_t)(n - 1));
  uint32_t zero = 0;
  freed(d, &left, &zero, &right, &zero, 1, 1);
}

static void mesh(cs_dev_t *d, const cs_coll_cfg_t *c, halves_t *t)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  cs_mark(d, 1, 0);
  for (uint32_t s = 1; s < n; s++)
    send(d, t, &t->a, &t->b, (me + s) % n, me, c->count, me);
  for (uint32_t s = 1; s < n; s++) {
    uint32_t p = (me + s) % n;
    uint32_t cell = DEFECT == 3 ? (me + s % (n - 1) + 1) % n : p;
    cs_mark(d, 2, s);
    cs_wait(d, SIG, cell, CS_CMP_GE, 1);
    fetch(d, t, me, p, c->count);
    fold(d, t, c);
    cs_notify(d, me, SIG, cell, CS_NOTIFY_ADD, -1);
  }
  cs_mark(d, 3, 0);
  if (DEFECT == 4)
    return;
  uint32_t peers[CS_COLL_MAX_RANKS], mine[CS_COLL_MAX_RANKS];
  for (uint32_t s = 1; s < n; s++) {
    peers[s - 1] = (me + s) % n;
    mine[s - 1] = me;
  }
  freed(d, peers, mine, peers, peers, n - 1, n);
}

static void doubling(cs_dev_t *d, const cs_coll_cfg_t *c, halves_t *t)
{
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d), rounds = log2u(n);
  uint32_t partners[8], cells[8];
  for (uint32_t k = 0; k < rounds; k++) {
    uint32_t p = me ^ (1u << k);
    partners[k] = p;
    cells[k] = k;
    cs_mark(d, 1, k);
    cs_store(d, &t->a, GAT, k * c->count + t->off_a, t->h);
    cs_store(d, &t->b, GAT, k * c->count + t->off_b, t->h);
    cs_fence(d);
    cs_notify(d, p, SIG, k, DEFECT == 6 ? CS_NOTIFY_SET : CS_NOTIFY_ADD, 1);
    cs_wait(d, SIG, k, CS_CMP_GE, 1);
    fetch(d, t, p, k, c->count);
    fold(d, t, c);
    if (DEFECT != 5)
      cs_notify(d, me, SIG, k, CS_NOTIFY_ADD, -1);
  }
  cs_mark(d, 2, 0);
  freed(d, partners, cells, partners, cells, rounds, rounds);
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  halves_t t;
  int rc = halves_init(&t, c);
  if (rc < 0) {
    halves_fini(&t);
    return cs_dev_error(d, rc);
  }
  uint32_t me = cs_dev_rank(d);
  cs_load(d, &t.a, me, IN, 0, t.h, t.h);
  cs_load(d, &t.b, me, IN, t.h, t.h, t.h);
  if (COLL == 1)
    ring(d, c, &t);
  else if (COLL == 2)
    mesh(d, c, &t);
  else
    doubling(d, c, &t);
  cs_store(d, &t.a, OUT, 0, t.h);
  cs_store(d, &t.b, OUT, t.h, t.h);
  halves_fini(&t);
  return 0;
}

/* Every rank ends with the sum over all ranks: the default inputs make
 * every fold order give the same bits. Folded in rank order. */
static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  uint32_t es = cs_dtype_size(c->dtype);
  size_t row = (size_t)c->count * es;
  const unsigned char *rows = in;
  (void)rank;
  memcpy(out, rows, row);
  for (uint32_t r = 1; r < c->nranks; r++)
    cs_reduce_kernel(c->dtype, c->op, out, rows + r * row, c->count);
}

/* Stale credits: every round cell gains one per call. */
static int32_t signal_final(const cs_coll_cfg_t *c, uint32_t rank, uint64_t cell)
{
  (void)rank;
  if (COLL != 3 || DEFECT != 5 || cell >= log2u(c->nranks))
    return 0;
  return (int32_t)c->iters;
}

#if COLL == 1
static const char *const phases[] = {"send", "forward", "fold"};
#define READY_NAME "ARRIVE"
#elif COLL == 2
static const char *const phases[] = {"push", "fold", "finish"};
#define READY_NAME "SENT"
#else
static const char *const phases[] = {"round", "finish"};
#define READY_NAME "POSTED"
#endif

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
    .size = sizeof(cs_collective_t),
    .name = COLL == 1 ? "ringput" : COLL == 2 ? "meshput" : "rdstore",
    .what = "a held-out allreduce of the benchmark of explanations",
    .refuse = refuse,
    .slots = slots,
    .in_slot = IN,
    .out_slot = OUT,
    .signal_slot = SIG,
    .signal_final = signal_final,
    .body = body,
    .expect = expect,
    .phases = phases,
    .nphases = sizeof(phases) / sizeof(phases[0]),
    .ready_barrier = READY_NAME,
    .read_done_barrier = "FREED",
};
