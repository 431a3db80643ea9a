/*
 * replay.c - the replay:FILE strategy: follows a recorded trace's schedule
 * steps in order, and stops the run with a divergence message (what the
 * trace has, what the run has) the first time the run cannot follow; in
 * a partial trace's incomplete end (cfg.replay_whole) it stops silently.
 *
 * Owns the index of the next step record (its state). Does not load or
 * check the trace (cli/collsim/replay.c hands over cfg.replay, the step records
 * in seq order). Called through the strategy table (strategy.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

typedef struct replay {
  uint64_t i; /* next step record in cfg.replay */
} replay_t;

static int init(cs_sched_t *s)
{
  s->state = calloc(1, sizeof(replay_t));
  s->state_bytes = sizeof(replay_t); /* travels with rank turns */
  return s->state ? 0 : -ENOMEM;
}

static void fini(cs_sched_t *s)
{
  free(s->state);
  s->state = NULL;
}

/* Whether rank x->rank's posted event is the one record x describes. */
static int same_event(const cs_event_t *ev, const cs_trace_rec_t *x)
{
  return ev->kind == x->kind && ev->peer == x->peer && ev->slot == x->slot &&
         ev->elem_off == x->elem_off && ev->valid == x->valid &&
         ev->phys == x->phys && ev->cell == x->cell &&
         ev->opcmp == (x->opcmp & 0x7fu) && ev->value == x->value;
}

/* Whether a stop at step `at` is the end of a partial trace (no message:
 * the caller words it, cfg.replay_whole); stops the run if so. */
static int partial_end(cs_sched_t *s, uint64_t at)
{
  if (!s->cfg.replay_partial || at < s->cfg.replay_whole)
    return 0;
  cs__sched_stop(s, CS_ABORT_DIVERGED, "%s", "");
  return 1;
}

/* The run goes on past the trace's last step. */
static int64_t past_end(cs_sched_t *s, uint64_t at)
{
  char b[256];
  if (partial_end(s, at))
    return -1;
  cs__sched_describe_event(b, sizeof(b), s->w, s->en[0].rank,
                           &slot_of(s->w, s->en[0].rank)->next);
  cs__sched_stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu: the trace "
                 "ends here, but the run goes on (%s)", (unsigned long long)at,
                 s->en[0].op < 0 ? b : "a DMA landing");
  return -1;
}

/* The record's rank is not enabled; `a` describes the record. */
static int64_t not_enabled(cs_sched_t *s, uint64_t at, const cs_trace_rec_t *x,
                           const char *a)
{
  char b[256];
  if (partial_end(s, at))
    return -1;
  const cs_sched_slot_t *sl = slot_of(s->w, x->rank);
  if (x->kind != CS_TR_DMA_LAND && sl->state == SR_POSTED)
    cs__sched_describe_event(b, sizeof(b), s->w, x->rank, &sl->next);
  else
    snprintf(b, sizeof(b), "%s", sl->state == SR_DONE ? "it has finished"
                                                      : "nothing it can do now");
  cs__sched_stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu (seq %llu): "
                 "the trace has: %s; but rank %u is not enabled (posted: %s)",
                 (unsigned long long)at, (unsigned long long)x->seq, a,
                 x->rank, b);
  return -1;
}

/* Index in s->en of the actor that performs record x, or -1 having
 * stopped the run. */
static int64_t follow(cs_sched_t *s, uint32_t k, uint64_t at,
                      const cs_trace_rec_t *x)
{
  char a[256], b[256];
  cs__sched_describe_rec(a, sizeof(a), s->w, x);
  for (uint32_t i = 0; i < k; i++) {
    if (s->en[i].rank != x->rank)
      continue;
    if (x->kind == CS_TR_DMA_LAND && s->en[i].op >= 0 &&
        slot_of(s->w, x->rank)->q[s->en[i].op].dma_id == x->dma_id)
      return i;
    if (x->kind != CS_TR_DMA_LAND && s->en[i].op < 0) {
      const cs_event_t *ev = &slot_of(s->w, x->rank)->next;
      if (same_event(ev, x))
        return i;
      if (partial_end(s, at))
        return -1;
      cs__sched_describe_event(b, sizeof(b), s->w, x->rank, ev);
      cs__sched_stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu (seq "
                     "%llu): the trace has: %s; the run has: %s",
                     (unsigned long long)at, (unsigned long long)x->seq, a, b);
      return -1;
    }
  }
  return not_enabled(s, at, x, a);
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  replay_t *r = s->state;
  if (r->i >= s->cfg.nreplay)
    return past_end(s, r->i);
  int64_t i = follow(s, k, r->i, &s->cfg.replay[r->i]);
  if (i >= 0)
    r->i++;
  return i;
}

static int finish(cs_sched_t *s)
{
  const replay_t *r = s->state;
  if (r->i < s->cfg.nreplay)
    return cs__sched_stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu: "
                          "the run ended, but the trace has %llu more steps",
                          (unsigned long long)r->i,
                          (unsigned long long)(s->cfg.nreplay - r->i));
  return CS_SCHED_FINISHED;
}

const cs_strategy_ops_t cs__strategy_replay = {
  .name = "replay",
  .turns = 1,
  .init = init,
  .pick = pick,
  .finish = finish,
  .fini = fini,
};
