/*
 * latest.c - the latest strategy: run ranks while any can run; land posted
 * ops only when forced, notifies before the data they were meant to
 * follow.
 *
 * Owns nothing but its pick (no state, no rng). Called through the
 * strategy table (strategy.h).
 */
#include "internal.h"

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  if (s->en[0].op < 0)
    return 0;
  for (uint32_t i = 0; i < k; i++) {
    const cs_dma_op_t *op = &slot_of(s->w, s->en[i].rank)->q[s->en[i].op];
    if (op->kind == CS_EV_NOTIFY)
      return i;
  }
  return 0;
}

const cs_strategy_ops_t cs__strategy_latest = {
  .name = "latest",
  .turns = 1,
  .pick = pick,
};
