/*
 * random.c - the random:SEED strategy: every step, an enabled actor drawn
 * uniformly from the scheduler's rng.
 *
 * Owns nothing but its pick; the rng and its seeding belong to the
 * scheduler (core.c), so a seed names one schedule. Called through the
 * strategy table (strategy.h).
 */
#include "../rng.h"
#include "internal.h"

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  return (int64_t)(cs_splitmix64(&s->rng) % k);
}

const cs_strategy_ops_t cs__strategy_random = {
  .name = "random",
  .turns = 1,
  .pick = pick,
};
