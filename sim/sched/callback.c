/*
 * callback.c - the callback strategy: the caller's own function picks
 * each step (cfg.pick_fn), from a view of the paused world: the enabled
 * actors and every rank's posted event, with the reason a rank cannot run
 * worded for a person. `collsim teach` drives its terminal lesson with it.
 *
 * Owns the view's arrays (its state) and the wording of the reasons. Does
 * not own which actors are enabled (core.c fills s->en) or the caller's
 * screen. Called through the strategy table (strategy.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../window/cs_error.h"
#include "internal.h"

typedef struct view_state {
  cs_sched_rank_view_t   rank[CS_MAX_RANKS];
  cs_sched_actor_view_t *en; /* n * (QCAP + 1), like s->en */
} view_state_t;

static int init(cs_sched_t *s)
{
  if (!s->cfg.pick_fn)
    return -EINVAL;
  view_state_t *v = calloc(1, sizeof(*v));
  if (!v)
    return -ENOMEM;
  v->en = calloc((size_t)s->n * (QCAP + 1), sizeof(*v->en));
  if (!v->en) {
    free(v);
    return -ENOMEM;
  }
  s->state = v;
  return 0;
}

static void fini(cs_sched_t *s)
{
  view_state_t *v = s->state;
  if (v)
    free(v->en);
  free(v);
  s->state = NULL;
}

/* The posted event as the callback's view shows it: the record the
 * describer words, with the event's DMA id as well (a queued op's record
 * is cs__sched_op_rec's). */
static void event_rec(cs_trace_rec_t *x, uint32_t rank, const cs_event_t *ev)
{
  cs__sched_event_rec(x, rank, ev);
  x->dma_id = ev->dma_id;
}

/* a2a3: the rank's queued ops a notify's own DDR fence waits for, and
 * its drained ones. */
static uint32_t fenced(const cs_sched_slot_t *sl)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < sl->nops; i++)
    k += (sl->q[i].flags & OP_FENCED) != 0;
  return k;
}

static uint32_t drained(const cs_sched_slot_t *sl)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < sl->nops; i++)
    k += (sl->q[i].flags & OP_DRAINED) != 0;
  return k;
}

/* Whether rank slot sl has a queued write into the line of its posted
 * cell event ev (a2a3: its own fill of that line waits for it). */
static int own_line_write(const cs_sched_t *s, const cs_sched_slot_t *sl,
                          const cs_event_t *ev)
{
  const cs_layout_t *l = &s->w->ctl->layout;
  if (ev->slot >= l->nslots || !cs_slot_cell_ok(&l->slot[ev->slot], ev->cell))
    return 0;
  return cs__writes_line(l, sl, ev->peer,
                         cs_slot_cell_off(&l->slot[ev->slot], ev->cell) &
                             ~(uint64_t)(CS_LINE - 1));
}

/* Why rank r's posted event cannot run (it is not among the enabled). */
static void reason(char *why, size_t n, const cs_sched_t *s, uint32_t r,
                   const cs_sched_slot_t *sl)
{
  const cs_event_t *ev = &sl->next;
  const cs_layout_t *l = &s->w->ctl->layout;
  int a2a3 = s->cfg.model == CS_MM_A2A3;
  if (a2a3 && fenced(sl)) {
    /* short: the status line puts "rank R cannot run: " before it */
    snprintf(why, n, "its notify's DDR fence: %u drained write%s must land",
             fenced(sl), fenced(sl) == 1 ? "" : "s");
  } else if (a2a3 && (ev->kind == CS_EV_WAIT || ev->kind == CS_EV_READ ||
                      ev->kind == CS_EV_NOTIFY) && own_line_write(s, sl, ev)) {
    snprintf(why, n, "its queued writes still change the line it reads");
  } else if (ev->kind == CS_EV_WAIT && ev->slot < l->nslots &&
             cs_slot_cell_ok(&l->slot[ev->slot], ev->cell)) {
    const int32_t *cell = (const int32_t *)(cs_world_window(s->w, r) +
                                            cs_slot_cell_off(&l->slot[ev->slot], ev->cell));
    snprintf(why, n, "waiting for %s[%u] %s %d, now %d", l->slot[ev->slot].name,
             ev->cell, ev->opcmp == CS_CMP_EQ ? "==" : ">=", ev->value,
             __atomic_load_n(cell, __ATOMIC_ACQUIRE));
  } else if (ev->kind == CS_EV_DDR && a2a3) {
    snprintf(why, n, "DDR fence: waits for its %u drained write%s to land",
             drained(sl), drained(sl) == 1 ? "" : "s");
  } else if (cs_ev_is_ordering(ev->kind)) {
    snprintf(why, n, "%s: waits for its %u queued DMA op%s to land",
             ev->kind == CS_EV_FENCE ? "fence" : ev->kind == CS_EV_PIPE
             ? "pipe barrier" : "DDR fence", sl->nops, sl->nops == 1 ? "" : "s");
  } else {
    snprintf(why, n, "its DMA queue is full (%u ops)", sl->nops);
  }
}

static void fill_ranks(cs_sched_t *s, view_state_t *v, uint32_t k)
{
  for (uint32_t r = 0; r < s->n; r++) {
    const cs_sched_slot_t *sl = slot_of(s->w, r);
    cs_sched_rank_view_t *rv = &v->rank[r];
    uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
    rv->state = st == SR_POSTED ? CS_VIEW_POSTED
                : st == SR_DONE ? CS_VIEW_DONE : CS_VIEW_RUNNING;
    rv->nops = sl->nops;
    rv->enabled = 0;
    rv->why[0] = 0;
    for (uint32_t i = 0; i < k; i++)
      if (s->en[i].rank == r && s->en[i].op < 0)
        rv->enabled = 1;
    if (rv->state == CS_VIEW_POSTED) {
      event_rec(&rv->rec, r, &sl->next);
      if (!rv->enabled)
        reason(rv->why, sizeof(rv->why), s, r, sl);
    }
  }
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  view_state_t *v = s->state;
  fill_ranks(s, v, k);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t r = s->en[i].rank;
    v->en[i].rank = r;
    v->en[i].op = s->en[i].op;
    v->en[i].flags = 0;
    if (s->en[i].op < 0) {
      event_rec(&v->en[i].rec, r, &slot_of(s->w, r)->next);
      v->en[i].flags = slot_of(s->w, r)->next.flags;
    } else {
      cs__sched_op_rec(&v->en[i].rec, r, &slot_of(s->w, r)->q[s->en[i].op]);
    }
  }
  cs_sched_view_t view = {.w = s->w, .step = s->steps, .nranks = s->n,
                          .nenabled = k, .en = v->en, .rank = v->rank};
  int64_t c = s->cfg.pick_fn(&view, s->cfg.pick_arg);
  if (c >= 0 && c < k)
    return c;
  cs__sched_stop(s, CS_ABORT_SIGNAL, "stopped by the caller at step %llu",
                 (unsigned long long)s->steps);
  return -1;
}

const cs_strategy_ops_t cs__strategy_callback = {
  .name = "callback",
  .init = init,
  .pick = pick,
  .fini = fini,
};
