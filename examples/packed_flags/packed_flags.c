/*
 * packed_flags.c - every rank publishes a flag with a Set notify into a
 * packed int32 row of rank 0's window, as the test of pto-isa issue #322
 * does; written only against collsim's installed API
 * (<collsim/collsim.h>), for `collsim run --algo ./packed_flags.so`.
 *
 * Function:     the body below, one call per rank
 * Accepts:      any number of ranks N, any count (the input is unused),
 *               fp32 only (the flags come back as fp32 values)
 * Returns:      every rank's "out" slot holds the N flags, rank order:
 *               out[s] = 1000 + s
 * Description:  rank r Sets cell r of rank 0's "flags" row to 1000 + r,
 *               fences, and adds 1 to rank 0's arrival counter. Rank 0
 *               waits for all N arrivals, invalidates its cache, reads the
 *               N cells, Sets them back to 0, fences, and puts the row
 *               into every rank's "out" slot; a notify says it is there.
 * Signals:      "flags": N int32 cells (a row of 16 at least), 4 bytes
 *               apart, each back at 0 after a call; "sync": cell 0 the
 *               arrival counter (rank 0), cell 1 "the row is there" (the
 *               others), each back at 0 after a call.
 * Cost:         one Set and one add per rank, N reads and N - 1 puts of N
 *               elements by rank 0.
 *
 * The defect is the layout, not the code: the flags of up to 16 ranks
 * share one 64-byte line. On the device (collsim --memory-model a2a3) a
 * Set is a store through the rank's data cache: it reads the whole line,
 * changes its cell and writes the whole line back, so a rank whose line
 * was read before another rank's flag landed writes that flag back as 0.
 * The sequentially consistent models pass it in every schedule; a2a3
 * loses a flag; `--signal-layout padded` gives each cell a line of its
 * own and it passes again.
 */
#include <collsim/collsim.h>

#include <stdlib.h>
#include <string.h>

enum { SLOT_FLAGS = 0, SLOT_SYNC = 1, SLOT_IN = 2, SLOT_OUT = 3 };
enum { ARRIVE = 0, THERE = 1 };

static uint64_t out_count(const cs_coll_cfg_t *c)
{
  return c->nranks;
}

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (c->dtype != CS_FP32)
    return "the flags come back as fp32 values: --dtype fp32 only";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint64_t row = (c->nranks + 15) / 16 * 16; /* whole lines of cells */
  s[SLOT_FLAGS] = (cs_coll_slot_t){"flags", 4 * row, 4};
  s[SLOT_SYNC] = (cs_coll_slot_t){"sync", 4 * 16, 4};
  s[SLOT_IN] = (cs_coll_slot_t){"in", c->count * 4, 4};
  s[SLOT_OUT] = (cs_coll_slot_t){"out", 4ull * c->nranks, 4};
  return 4;
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  (void)c;
  uint32_t me = cs_dev_rank(d), n = cs_dev_nranks(d);
  cs_notify(d, 0, SLOT_FLAGS, me, CS_NOTIFY_SET, 1000 + (int32_t)me);
  cs_fence(d); /* the flag lands before the arrival says so */
  cs_notify(d, 0, SLOT_SYNC, ARRIVE, CS_NOTIFY_ADD, 1);
  if (me != 0) {
    cs_wait(d, SLOT_SYNC, THERE, CS_CMP_GE, 1);
    cs_notify(d, me, SLOT_SYNC, THERE, CS_NOTIFY_ADD, -1);
    return 0;
  }
  cs_tile_t t;
  int rc = cs_tile_init(&t, 4, n);
  if (rc < 0)
    return cs_dev_error(d, rc);
  cs_wait(d, SLOT_SYNC, ARRIVE, CS_CMP_GE, (int32_t)n);
  cs_dcci_all(d); /* read the cells from memory, not from old lines */
  for (uint32_t s = 0; s < n; s++) {
    ((float *)t.buf)[s] = (float)cs_read_cell(d, 0, SLOT_FLAGS, s);
    cs_notify(d, 0, SLOT_FLAGS, s, CS_NOTIFY_SET, 0);
  }
  t.valid = n;
  cs_store(d, &t, SLOT_OUT, 0, n);
  for (uint32_t p = 1; p < n; p++)
    cs_put(d, &t, p, SLOT_OUT, 0, n);
  cs_fence(d); /* the row and the reset land before anyone hears of them */
  for (uint32_t p = 1; p < n; p++)
    cs_notify(d, p, SLOT_SYNC, THERE, CS_NOTIFY_ADD, 1);
  cs_notify(d, 0, SLOT_SYNC, ARRIVE, CS_NOTIFY_ADD, -(int32_t)n);
  cs_tile_fini(&t);
  return 0;
}

static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  (void)in;
  (void)rank; /* the same on every rank */
  for (uint32_t s = 0; s < c->nranks; s++)
    ((float *)out)[s] = (float)(1000 + s);
}

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
    .size = sizeof(cs_collective_t),
    .name = "packed-flags",
    .what = "flags published with Set into one packed row (pto-isa #322)",
    .refuse = refuse,
    .slots = slots,
    .in_slot = SLOT_IN,
    .out_slot = SLOT_OUT,
    .out_count = out_count,
    .signal_slot = SLOT_FLAGS,
    .body = body,
    .expect = expect,
};
