/*
 * strategy.h - the scheduler strategy ops table: how the launcher-side
 * scheduler (sim/sched/core.c) chooses the next actor among the enabled ones.
 *
 * Owns the table's shape and the list of strategies, one file each in
 * sim/sched/: random, pct, latest, replay, interactive, deviate, callback.
 * Does not own the enabled-actor list, DMA landing or the step loop
 * (core.c), nor the
 * scheduler's internals the strategies read (internal.h). cs__sched_init
 * picks the table once from cfg->strategy; the step loop calls it, and
 * never names a strategy.
 */
#ifndef CS_SCHED_STRATEGY_H
#define CS_SCHED_STRATEGY_H

#include <stdint.h>

typedef struct cs_sched cs_sched_t;

typedef struct cs_strategy_ops {
  const char *name; /* as written in --schedule */
  /* 1: pick writes nothing of the launcher's but s->rng, s->steps and
   * s->state when init made it one block of s->state_bytes (pointers only
   * into itself, or to memory init filled and pick only reads), and uses
   * no terminal, so a rank may run it in its own copy of the scheduler,
   * inherited at fork (rank turns, internal.h); a stop (cs__sched_stop)
   * works from there too. */
  int turns;
  /* Called once after the scheduler area is ready: sets s->state (which
   * may stay NULL) and may draw from s->rng. Returns 0 or -errno; on
   * failure fini still runs. NULL: nothing to prepare. */
  int (*init)(cs_sched_t *s);
  /* Picks an index into s->en[0..k), k >= 1, for the step s->steps; or
   * stops the run with cs__sched_stop and returns -1. */
  int64_t (*pick)(cs_sched_t *s, uint32_t k);
  /* Every rank is done and every op landed: returns CS_SCHED_FINISHED, or
   * CS_SCHED_STOPPED from cs__sched_stop. NULL: finished. */
  int (*finish)(cs_sched_t *s);
  /* Frees s->state (NULL-safe). NULL: nothing to free. */
  void (*fini)(cs_sched_t *s);
} cs_strategy_ops_t;

extern const cs_strategy_ops_t cs__strategy_random;
extern const cs_strategy_ops_t cs__strategy_pct;
extern const cs_strategy_ops_t cs__strategy_latest;
extern const cs_strategy_ops_t cs__strategy_replay;
extern const cs_strategy_ops_t cs__strategy_interactive;
extern const cs_strategy_ops_t cs__strategy_deviate;
extern const cs_strategy_ops_t cs__strategy_callback;

#endif
