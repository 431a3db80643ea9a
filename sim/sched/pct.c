/*
 * pct.c - the pct:SEED:DEPTH[:STEPS] strategy (probabilistic concurrency
 * testing, Burckhardt et al.): every actor (each rank, each rank's DMA
 * engine) has a distinct priority; the highest enabled one runs, and at
 * DEPTH-1 random change points in the first STEPS steps the actor about to
 * run drops below all others.
 *
 * Owns the priorities and change points (its state). Draws from the
 * scheduler's rng at init (shuffle, then change points) and, under
 * relaxed and a2a3, to choose which op of a DMA engine lands. Called through the
 * strategy table (strategy.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "../rng.h"
#include "internal.h"

/* One block (s->state_bytes, so it travels with rank turns): the header,
 * the change points, then the priorities. */
typedef struct pct {
  uint32_t *prio;   /* priority per actor (2n: ranks, then DMA engines) */
  uint64_t *change; /* change points 1..depth-1, in steps; fired: UINT64_MAX */
} pct_t;

static void fini(cs_sched_t *s)
{
  free(s->state);
  s->state = NULL;
}

static int init(cs_sched_t *s)
{
  uint32_t n = s->n, depth = s->cfg.depth;
  size_t bytes = sizeof(pct_t) + (depth + 1) * sizeof(uint64_t) +
                 2 * (size_t)n * sizeof(uint32_t);
  pct_t *p = calloc(1, bytes);
  if (!p)
    return -ENOMEM;
  s->state = p;
  s->state_bytes = bytes;
  p->change = (uint64_t *)(p + 1);
  p->prio = (uint32_t *)(p->change + depth + 1);
  /* Distinct random priorities >= depth for every actor, and depth-1
   * change points in [0, steps). */
  for (uint32_t i = 0; i < 2 * n; i++)
    p->prio[i] = depth + i;
  for (uint32_t i = 2 * n; i > 1; i--) {
    uint32_t j = (uint32_t)(cs_splitmix64(&s->rng) % i), t = p->prio[i - 1];
    p->prio[i - 1] = p->prio[j];
    p->prio[j] = t;
  }
  for (uint32_t i = 1; i < depth; i++)
    p->change[i] = cs_splitmix64(&s->rng) % s->cfg.steps;
  return 0;
}

/* The priority index of enabled actor i: its rank, or n + rank for the
 * rank's DMA engine. */
static uint32_t actor_of(const cs_sched_t *s, uint32_t i)
{
  return s->en[i].op < 0 ? s->en[i].rank : s->n + s->en[i].rank;
}

/* The first enabled actor of highest priority. */
static uint32_t highest(const cs_sched_t *s, const pct_t *p, uint32_t k)
{
  int64_t best = -1;
  uint32_t bp = 0;
  for (uint32_t i = 0; i < k; i++) {
    uint32_t a = actor_of(s, i);
    if (best < 0 || p->prio[a] > bp) {
      best = i;
      bp = p->prio[a];
    }
  }
  return (uint32_t)best;
}

/* At change point c (this step), lowers actor a to priority c. Returns
 * whether a change point fired. */
static int change_point(const cs_sched_t *s, pct_t *p, uint32_t a)
{
  for (uint32_t c = 1; c < s->cfg.depth; c++)
    if (p->change[c] == s->steps) {
      p->prio[a] = c;
      p->change[c] = UINT64_MAX; /* each change point fires once */
      return 1;
    }
  return 0;
}

/* Relaxed: the engine of enabled actor `best` lands one of its ops,
 * chosen at random among its run in s->en. */
static int64_t engine_op(cs_sched_t *s, uint32_t k, uint32_t best)
{
  uint32_t r = s->en[best].rank, first = best, cnt = 0;
  while (first > 0 && s->en[first - 1].op >= 0 && s->en[first - 1].rank == r)
    first--;
  while (first + cnt < k && s->en[first + cnt].rank == r && s->en[first + cnt].op >= 0)
    cnt++;
  return first + (int64_t)(cs_splitmix64(&s->rng) % cnt);
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  pct_t *p = s->state;
  for (;;) {
    uint32_t best = highest(s, p, k);
    if (change_point(s, p, actor_of(s, best)))
      continue;
    if (s->en[best].op >= 0 && s->cfg.model != CS_MM_FIFO)
      return engine_op(s, k, best);
    return best;
  }
}

const cs_strategy_ops_t cs__strategy_pct = {
  .name = "pct",
  .turns = 1,
  .init = init,
  .pick = pick,
  .fini = fini,
};
