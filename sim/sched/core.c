/*
 * core.c - controlled execution (sched.h): the scheduler area, the rank
 * side of a scheduling point, DMA posting, and the launcher-side scheduler
 * core: the enabled actors, DMA landing, the step loop and a rank's turn
 * (the same step, picked in the granted rank's process). Which enabled
 * actor runs is the strategy's choice (strategy.h, one file per strategy
 * in sim/sched/), chosen once at init; this file never names one after.
 * dev.c calls the rank side, launch.c the launcher side.
 *
 * A fence is enabled only when its rank's DMA queue is empty, so every op
 * in a queue was posted since the last fence: under relaxed any of them may
 * land next, under fifo only the oldest. Loads read memory as it is when
 * they run: a load can see stale data when a store has not landed, which is
 * how a missing fence shows on x86, whose hardware never reorders stores.
 */
#define _GNU_SOURCE
#include "../sched.h"

#include <errno.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../window/cs_error.h"
#include "internal.h"

uint64_t cs_sched_area_bytes(uint32_t nranks, uint64_t arena_bytes)
{
  uint64_t stride = (sizeof(cs_sched_slot_t) + arena_bytes + 63) / 64 * 64;
  return sizeof(cs_sched_area_t) + stride * nranks;
}

int cs_sched_is_step(uint32_t kind)
{
  return cs_ev_is_device(kind) || kind == CS_TR_DMA_LAND;
}

/* ------------------------------------------------------------ parsing */

_Static_assert(CS_MM_COUNT == CS_TR_NMODELS, "one name per memory model");

int cs_mm_parse(const char *s)
{
  for (int i = 0; i < CS_MM_COUNT; i++)
    if (!strcmp(s, cs_tr_model_name((uint32_t)i)))
      return i;
  return CS_EBADNAME;
}

const char *cs_mm_name(cs_mm_t m)
{
  return cs_tr_model_name((uint32_t)m);
}

/* A whole decimal number, digits only (strtoull alone would take a sign
 * and leading spaces, and wrap " -1" to 2^64 - 1). */
static int parse_num(const char *s, uint64_t *v)
{
  char *end;
  if (*s < '0' || *s > '9')
    return -1;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return (errno || *end) ? -1 : 0;
}

int cs_sched_parse(const char *s, cs_sched_cfg_t *c, const char **replay_file)
{
  if (!strncmp(s, "deviate:", 8)) {
    if (cs__deviate_parse(s + 8, NULL, 0) < 0)
      return CS_EBADSCHED;
    c->strategy = CS_SCHED_DEVIATE;
    c->deviate = s + 8;
    return 0;
  }
  char buf[256];
  if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
    return CS_EBADSCHED; /* cut short, its end unread */
  char *a = strchr(buf, ':'), *b = NULL, *d = NULL;
  if (a) {
    *a++ = 0;
    if ((b = strchr(a, ':')))
      *b++ = 0;
    if (b && (d = strchr(b, ':')))
      *d++ = 0;
  }
  uint64_t v;
  if (!strcmp(buf, "random") && a && !b && parse_num(a, &c->seed) == 0) {
    c->strategy = CS_SCHED_RANDOM;
    return 0;
  }
  if (!strcmp(buf, "pct") && a && b && parse_num(a, &c->seed) == 0 &&
      parse_num(b, &v) == 0 && v >= 1 && v <= 64) {
    c->strategy = CS_SCHED_PCT;
    c->depth = (uint32_t)v;
    c->steps = 2000;
    if (d && (parse_num(d, &c->steps) < 0 || c->steps == 0))
      goto bad;
    return 0;
  }
  if (!strcmp(buf, "latest") && !a) {
    c->strategy = CS_SCHED_LATEST;
    return 0;
  }
  if (!strcmp(buf, "interactive") && !a) {
    c->strategy = CS_SCHED_INTERACTIVE;
    return 0;
  }
  if (!strcmp(buf, "replay") && a && *a && replay_file) {
    c->strategy = CS_SCHED_REPLAY;
    *replay_file = s + 7;
    return 0;
  }
bad:
  return CS_EBADSCHED;
}

/* ------------------------------------------------------------ scheduler */

/* The strategy for each cs_strategy_t; NULL: not a controlled schedule. */
static const cs_strategy_ops_t *const strategies[] = {
  [CS_SCHED_RANDOM] = &cs__strategy_random,
  [CS_SCHED_PCT] = &cs__strategy_pct,
  [CS_SCHED_LATEST] = &cs__strategy_latest,
  [CS_SCHED_REPLAY] = &cs__strategy_replay,
  [CS_SCHED_INTERACTIVE] = &cs__strategy_interactive,
  [CS_SCHED_DEVIATE] = &cs__strategy_deviate,
  [CS_SCHED_CALLBACK] = &cs__strategy_callback,
};

/* The scheduler the ranks forked from this process inherit (rank turns):
 * the last one initialized, its turn_id from turn_seq. */
static cs_sched_t *turn_sched;
static uint64_t turn_seq;

/* Copies s's strategy state between its block and the area's, adding
 * `by` to the words that are pointers into the block (a rebuilt copy's). */
static void copy_state(const cs_sched_t *s, void *dst, const void *src,
                       uint64_t by)
{
  memcpy(dst, src, s->state_bytes);
  if (!s->moved)
    return;
  uint64_t *d = dst;
  for (size_t i = 0; i < s->state_bytes / 8; i++)
    if (s->moved[i])
      d[i] += by;
}

/* The scheduler's rng, step count and strategy state to the area, for a
 * rank's turn. */
static void push(cs_sched_t *s)
{
  cs_sched_area_t *a = area_of(s->w);
  a->rng = s->rng;
  a->steps = s->steps;
  if (s->state_bytes)
    copy_state(s, a->state, s->state, 0 - s->delta);
}

/* ... and back, after one. */
static void pull(cs_sched_t *s)
{
  const cs_sched_area_t *a = area_of(s->w);
  s->rng = a->rng;
  s->steps = a->steps;
  if (s->state_bytes)
    copy_state(s, s->state, a->state, s->delta);
}

/* What a kept rank needs to build its own copy of s (cs_sched_area_t). */
static void publish(const cs_sched_t *s, cs_sched_area_t *a)
{
  const cs_sched_cfg_t *c = &s->cfg;
  /* Hooks need no copy in a rank: the rank's own events are recorded by
   * its device hooks, and so are the landings it performs on its turn
   * (cs__sched_rank_turn). */
  a->rebuild = !c->replay && !c->deviate && !c->tty_in && !c->tty_out &&
               !c->pick_fn && !c->pick_arg;
  memset(&a->cfg, 0, sizeof(a->cfg));
  a->cfg.c = (cs_sched_cfg_t){.strategy = c->strategy, .model = c->model,
                              .seed = c->seed, .depth = c->depth,
                              .steps = c->steps};
  a->state_addr = (uint64_t)(uintptr_t)s->state;
  a->state_bytes = (uint32_t)s->state_bytes;
  if (s->state_bytes)
    memcpy(a->state0, s->state, s->state_bytes);
}

static uint64_t first_rng(const cs_sched_cfg_t *cfg)
{
  return cfg->seed * 0x2545f4914f6cdd1dull + 12345;
}

/* Rank turns for s, when its strategy allows them. */
static int init_turns(cs_sched_t *s, cs_sched_area_t *a)
{
  a->mode = SM_LAUNCHER;
  a->turn_id = 0;
  a->rebuild = 0;
  a->refused = 0;
  int turns = s->ops->turns && s->state_bytes <= sizeof(a->state) &&
              (!s->state || s->state_bytes);
  if (!turns)
    s->state_bytes = 0; /* the state stays in the launcher */
  push(s);
  if (!turns)
    return 0;
  s->ones = malloc(s->n);
  if (!s->ones)
    return -ENOMEM;
  memset(s->ones, 1, s->n);
  publish(s, a);
  s->turn_id = a->turn_id = ++turn_seq;
  turn_sched = s;
  return 0;
}

int cs__sched_init(cs_sched_t **out, cs_world_t *w, const cs_sched_cfg_t *cfg)
{
  uint32_t n = w->ctl->nranks;
  if ((unsigned)cfg->strategy >= sizeof(strategies) / sizeof(strategies[0]) ||
      !strategies[cfg->strategy])
    return -EINVAL;
  cs_sched_t *s = calloc(1, sizeof(*s));
  if (!s)
    return -ENOMEM;
  s->cfg = *cfg;
  s->w = w;
  s->n = n;
  s->waiting = -1;
  s->rng = first_rng(cfg);
  s->en = calloc((size_t)n * (QCAP + 1), sizeof(cs_actor_t));
  if (!s->en) {
    cs__sched_fini(s);
    return -ENOMEM;
  }
  cs_sched_area_t *a = area_of(w);
  a->slot_stride = (w->ctl->sched_bytes - sizeof(*a)) / n / 64 * 64;
  a->arena_bytes = a->slot_stride - sizeof(cs_sched_slot_t);
  if (sem_init(&a->wake, 1, 0) < 0) {
    cs__sched_fini(s);
    return -errno;
  }
  for (uint32_t r = 0; r < n; r++) {
    cs_sched_slot_t *sl = slot_of(w, r);
    memset(sl, 0, sizeof(*sl));
    sem_init(&sl->sem, 1, 0);
  }
  s->ops = strategies[cfg->strategy];
  int err = s->ops->init ? s->ops->init(s) : 0;
  if (err == 0)
    err = init_turns(s, a);
  if (err < 0) {
    cs__sched_fini(s);
    return err;
  }
  w->ctl->controlled = 1 + (uint32_t)cfg->model;
  *out = s;
  return 0;
}

void cs__sched_fini(cs_sched_t *s)
{
  if (!s)
    return;
  if (s->ops && s->ops->fini)
    s->ops->fini(s);
  if (turn_sched == s)
    turn_sched = NULL;
  free(s->moved);
  free(s->ones);
  free(s->en);
  free(s);
}

uint64_t cs__sched_steps(const cs_sched_t *s)
{
  /* A rank's turn counts in the area until the launcher pulls it back
   * (a run aborted in a turn is never pulled): the larger is current. */
  uint64_t turns = area_of(s->w)->steps;
  return turns > s->steps ? turns : s->steps;
}

static int cell_satisfied(const cs_world_t *w, uint32_t r, const cs_event_t *ev,
                          int32_t *val)
{
  const cs_slot_t *sl = &w->ctl->layout.slot[ev->slot];
  const int32_t *cell = (const int32_t *)(cs_world_window(w, r) +
                                          cs_slot_cell_off(sl, ev->cell));
  int32_t v = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
  if (val)
    *val = v;
  return ev->opcmp == CS_CMP_EQ ? v == ev->value : v >= ev->value;
}

static int is_post(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT || kind == CS_EV_NOTIFY;
}

/* Whether ev's cell lies inside its slot (else the rank is let run into
 * its own bounds check). */
static int cell_in_slot(const cs_layout_t *l, const cs_event_t *ev)
{
  return ev->slot < l->nslots && cs_slot_cell_ok(&l->slot[ev->slot], ev->cell);
}

/* Whether any op in sl's queue has all of `flags`. */
static int any_op(const cs_sched_slot_t *sl, uint32_t flags)
{
  for (uint32_t i = 0; i < sl->nops; i++)
    if ((sl->q[i].flags & flags) == flags)
      return 1;
  return 0;
}

/* a2a3 rules for the posted event ev of rank slot sl (rank_enabled); -1
 * when the common rules decide. */
static int a2a3_enabled(const cs_sched_t *s, cs_sched_slot_t *sl,
                        const cs_event_t *ev)
{
  const cs_layout_t *l = &s->w->ctl->layout;
  if (any_op(sl, OP_FENCED))
    return 0; /* the last notify's own DDR fence has not finished */
  switch (ev->kind) {
  case CS_EV_PIPE:
    return 1;
  case CS_EV_DDR:
    return !any_op(sl, OP_DRAINED);
  case CS_EV_READ:
  case CS_EV_NOTIFY:
  case CS_EV_WAIT: { /* a wait leaves its line in the cache as it read it */
    if (!cell_in_slot(l, ev))
      return 1;
    uint64_t line = cs_slot_cell_off(&l->slot[ev->slot], ev->cell) & ~(uint64_t)(CS_LINE - 1);
    if (ev->kind == CS_EV_READ && cs__cache_find(sl, ev->peer, line))
      return 1; /* a hit */
    if ((ev->kind != CS_EV_NOTIFY || ev->opcmp == CS_NOTIFY_SET) &&
        cs__writes_line(l, sl, ev->peer, line))
      return 0;
    return -1;
  }
  default:
    return -1;
  }
}

/* Whether rank r's posted event may run now. */
static int rank_enabled(const cs_sched_t *s, uint32_t r)
{
  cs_sched_slot_t *sl = slot_of(s->w, r);
  if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SR_POSTED)
    return 0;
  const cs_event_t *ev = &sl->next;
  if (s->cfg.model == CS_MM_A2A3) {
    int e = a2a3_enabled(s, sl, ev);
    if (e >= 0)
      return e;
  }
  if (ev->kind == CS_EV_WAIT) {
    if (!cell_in_slot(&s->w->ctl->layout, ev))
      return 1; /* let the rank run into its own bounds check */
    return cell_satisfied(s->w, r, ev, NULL);
  }
  if (cs_ev_is_ordering(ev->kind))
    return sl->nops == 0;
  if (is_post(ev->kind) && s->cfg.model != CS_MM_SC) {
    uint64_t bytes = ev->kind != CS_EV_NOTIFY ? (uint64_t)ev->valid * s->w->ctl->layout.slot[ev->slot % CS_MAX_SLOTS].esize
                     : s->cfg.model == CS_MM_A2A3 && ev->opcmp == CS_NOTIFY_SET ? CS_LINE
                     : 0;
    uint64_t arena = area_of(s->w)->arena_bytes;
    return sl->nops < QCAP && (sl->arena_used + bytes <= arena || sl->nops == 0);
  }
  return 1;
}

/* Fills s->en; returns the count. Ranks first (by index), then landable
 * DMA ops (by rank, oldest first). */
static uint32_t enabled(cs_sched_t *s, const uint8_t *alive)
{
  uint32_t k = 0;
  for (uint32_t r = 0; r < s->n; r++)
    if (alive[r] && rank_enabled(s, r))
      s->en[k++] = (cs_actor_t){r, -1};
  for (uint32_t r = 0; r < s->n; r++) {
    const cs_sched_slot_t *sl = slot_of(s->w, r);
    uint32_t nl = s->cfg.model == CS_MM_FIFO ? (sl->nops ? 1 : 0) : sl->nops;
    for (uint32_t i = 0; i < nl; i++)
      s->en[k++] = (cs_actor_t){r, (int32_t)i};
  }
  return k;
}

/* Performs DMA op i of rank r: the data or signal lands in its target. */
static void land(cs_sched_t *s, uint32_t r, uint32_t i)
{
  cs_world_t *w = s->w;
  cs_sched_slot_t *sl = slot_of(w, r);
  cs_dma_op_t op = sl->q[i];
  const cs_slot_t *ts = &w->ctl->layout.slot[op.slot];
  uint8_t *base = cs_world_window(w, op.peer) + ts->off;
  int32_t observed = 0;
  if (op.flags & OP_LINE) { /* a Set's line: all 64 bytes, then its cell */
    memcpy(cs_world_window(w, op.peer) + op.elem_off, arena_of(w, r) + op.data_off,
           CS_LINE);
    observed = __atomic_load_n((int32_t *)(cs_world_window(w, op.peer) +
                                           cs_slot_cell_off(ts, op.cell)),
                               __ATOMIC_SEQ_CST);
  } else if (op.kind == CS_EV_NOTIFY) {
    int32_t *cell = (int32_t *)(cs_world_window(w, op.peer) +
                                cs_slot_cell_off(ts, op.cell));
    if (op.op == CS_NOTIFY_ADD)
      observed = __atomic_add_fetch(cell, op.value, __ATOMIC_SEQ_CST);
    else
      __atomic_store_n(cell, observed = op.value, __ATOMIC_SEQ_CST);
  } else if (op.cell) { /* 2-D: op.cell rows, op.value stride (elements) */
    uint32_t rb = op.valid / op.cell * ts->esize;
    for (uint32_t i = 0; i < op.cell; i++)
      memcpy(base + (op.elem_off + (uint64_t)i * (uint32_t)op.value) * ts->esize,
             arena_of(w, r) + op.data_off + (uint64_t)i * rb, rb);
  } else if (op.kind == CS_EV_PUT && cs__dev_put_reduces(op.op)) {
    cs__dev_add_f32(base + op.elem_off * ts->esize,
                    arena_of(w, r) + op.data_off, op.bytes / 4);
  } else {
    memcpy(base + op.elem_off * ts->esize, arena_of(w, r) + op.data_off, op.bytes);
  }
  memmove(&sl->q[i], &sl->q[i + 1], (sl->nops - i - 1) * sizeof(cs_dma_op_t));
  if (--sl->nops == 0)
    sl->arena_used = 0;
  if (s->cfg.hooks && s->cfg.hooks->land) {
    cs_event_t landed = cs__sched_op_event(&op);
    landed.phys = op.flags & OP_LINE ? CS_LINE : op.valid;
    s->cfg.hooks->land(w, r, &landed, observed, s->cfg.hook_arg);
  }
}

static int all_done(const cs_sched_t *s, const uint8_t *alive)
{
  for (uint32_t r = 0; r < s->n; r++) {
    const cs_sched_slot_t *sl = slot_of(s->w, r);
    if ((alive[r] && sl->state != SR_DONE) || sl->nops)
      return 0;
  }
  return 1;
}

/* Grants rank r: it runs to its next event, and with rank turns picks the
 * step after that itself. */
static void grant(cs_sched_t *s, uint32_t r)
{
  cs_sched_area_t *a = area_of(s->w);
  cs_sched_slot_t *sl = slot_of(s->w, r);
  if (s->turn_id)
    __atomic_store_n(&a->mode, SM_RANK, __ATOMIC_RELEASE);
  __atomic_store_n(&sl->state, SR_RUNNING, __ATOMIC_RELEASE);
  sem_post(&sl->sem);
}

/* Hands the turn back to the launcher (posted or done, the rank's state is
 * stored first). */
static void hand_back(cs_sched_area_t *a)
{
  __atomic_store_n(&a->mode, SM_LAUNCHER, __ATOMIC_RELEASE);
  sem_post(&a->wake);
}

void cs__sched_done(cs_world_t *w, int my_turn)
{
  cs_sched_area_t *a = area_of(w);
  if (my_turn)
    hand_back(a);
  else
    sem_post(&a->wake);
}

/* Which words of s's state (rebuilt in a rank, by the strategy's init)
 * are pointers into it, against the launcher's state0: the words that
 * differ, each by the blocks' distance and pointing into the launcher's.
 * 0, or -1 when the two differ otherwise (no copy of this scheduler). */
static int find_moved(cs_sched_t *s, const cs_sched_area_t *a)
{
  if (s->state_bytes != a->state_bytes || s->state_bytes > sizeof(a->state) ||
      (s->state_bytes && !s->state))
    return -1;
  size_t nw = s->state_bytes / 8, tail = s->state_bytes % 8;
  const uint8_t *mine = s->state;
  if (tail && memcmp(mine + nw * 8, a->state0 + nw * 8, tail))
    return -1;
  s->delta = (uint64_t)(uintptr_t)s->state - a->state_addr;
  s->moved = calloc(nw ? nw : 1, 1);
  if (!s->moved)
    return -1;
  for (size_t i = 0; i < nw; i++) {
    uint64_t m, l;
    memcpy(&m, mine + i * 8, 8);
    memcpy(&l, a->state0 + i * 8, 8);
    if (m == l)
      continue;
    if (m - l != s->delta || l - a->state_addr > s->state_bytes)
      return -1;
    s->moved[i] = 1;
  }
  return 0;
}

/* A kept rank's own copy of the launcher's current scheduler, built from
 * the area (publish) in place of the one it forked with; NULL when it
 * cannot be. The shared area is the launcher's and stays as it is. */
static cs_sched_t *rebuild(cs_world_t *w, const cs_sched_area_t *a)
{
  cs_sched_t *s = calloc(1, sizeof(*s));
  if (!s)
    return NULL;
  s->cfg = a->cfg.c;
  s->w = w;
  s->n = w->ctl->nranks;
  s->waiting = -1;
  s->rng = first_rng(&s->cfg);
  s->en = calloc((size_t)s->n * (QCAP + 1), sizeof(cs_actor_t));
  s->ones = malloc(s->n);
  s->ops = strategies[s->cfg.strategy];
  if (!s->en || !s->ones || (s->ops->init && s->ops->init(s) < 0) ||
      find_moved(s, a) < 0) {
    cs__sched_fini(s);
    return NULL;
  }
  memset(s->ones, 1, s->n);
  s->turn_id = a->turn_id;
  return s;
}

/* The scheduler a rank's turn runs: the one it forked with, or when the
 * launcher has begun another since (a kept rank), its own copy of that. */
static cs_sched_t *rank_sched(cs_world_t *w, const cs_sched_area_t *a)
{
  cs_sched_t *s = turn_sched;
  if (s && s->turn_id == a->turn_id && s->w == w)
    return s;
  static uint64_t failed; /* the turn_id a copy could not be built for */
  unsigned k = (unsigned)a->cfg.c.strategy;
  if (!a->rebuild || a->turn_id == failed ||
      k >= sizeof(strategies) / sizeof(strategies[0]) || !strategies[k] ||
      !strategies[k]->turns)
    return NULL;
  cs__sched_fini(s); /* this process's copy of an earlier run's */
  turn_sched = rebuild(w, a);
  if (!turn_sched)
    failed = a->turn_id;
  return turn_sched;
}

int cs__sched_rank_turn(cs_world_t *w, uint32_t r, const cs_dev_hooks_t *hooks,
                        void *hook_arg)
{
  cs_sched_area_t *a = area_of(w);
  cs_sched_t *s = rank_sched(w, a);
  if (!s) {
    __atomic_add_fetch(&a->refused, 1, __ATOMIC_RELAXED);
    hand_back(a); /* no copy of the launcher's scheduler here */
    return 0;
  }
  /* The turn makes this rank the only actor, so it may append a landing's
   * record to the posting rank's ring as the launcher does (the recorder
   * tells the two apart). Handing each landing back to the launcher cost
   * two more hand-offs per landing: a recorded schedule took twice the
   * context switches of an unrecorded one. */
  s->cfg.hooks = hooks;
  s->cfg.hook_arg = hook_arg;
  pull(s);
  for (;;) {
    uint32_t k = enabled(s, s->ones);
    if (k == 0)
      break; /* finished or deadlocked: the launcher says which */
    int64_t i = s->ops->pick(s, k);
    if (i < 0) {
      /* stopped (the abort wakes every rank): the steps this turn took,
       * its landings', go back for the launcher's count */
      push(s);
      return 0;
    }
    cs_actor_t act = s->en[i];
    s->steps++;
    if (act.op >= 0) {
      land(s, act.rank, (uint32_t)act.op);
      continue;
    }
    push(s);
    if (act.rank != r) {
      grant(s, act.rank);
      return 0;
    }
    __atomic_store_n(&slot_of(w, r)->state, SR_RUNNING, __ATOMIC_RELEASE);
    return 1;
  }
  push(s);
  hand_back(a);
  return 0;
}

/* Waits for a post of a->wake until `until`; -1 at the deadline. */
static int wait_post(cs_sched_area_t *a, const struct timespec *until)
{
  return sem_timedwait(&a->wake, until) < 0 && errno == ETIMEDOUT ? -1 : 0;
}

/* Whether every live rank has posted its next event or finished, and no
 * rank has the turn. */
static int all_posted(const cs_sched_t *s, const uint8_t *alive)
{
  if (__atomic_load_n(&area_of(s->w)->mode, __ATOMIC_ACQUIRE) == SM_RANK)
    return 0;
  for (uint32_t r = 0; r < s->n; r++)
    if (alive[r] && __atomic_load_n(&slot_of(s->w, r)->state, __ATOMIC_ACQUIRE) == SR_RUNNING)
      return 0;
  return 1;
}

int cs__sched_running(const cs_sched_t *s, uint32_t r)
{
  return r < s->n &&
         __atomic_load_n(&slot_of(s->w, r)->state, __ATOMIC_ACQUIRE) == SR_RUNNING;
}


int cs__sched_step(cs_sched_t *s, const uint8_t *alive)
{
  cs_sched_area_t *a = area_of(s->w);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 10 * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  for (;;) {
    if (__atomic_load_n(&s->w->ctl->abort_word, __ATOMIC_ACQUIRE)) {
      pull(s);
      return CS_SCHED_STOPPED;
    }
    /* Wait until every live rank has posted its next event or finished. */
    if (!all_posted(s, alive)) {
      if (wait_post(a, &until) < 0)
        return CS_SCHED_RUNNING;
      continue;
    }
    pull(s);
    uint32_t k = enabled(s, alive);
    if (k == 0) {
      if (all_done(s, alive)) {
        return s->ops->finish ? s->ops->finish(s) : CS_SCHED_FINISHED;
      }
      return cs__sched_stop(s, CS_ABORT_DEADLOCK, "deadlock at step %llu: no "
                            "rank can run and no posted op is left to land",
                            (unsigned long long)s->steps);
    }
    int64_t i = s->ops->pick(s, k);
    if (i < 0)
      return CS_SCHED_STOPPED;
    cs_actor_t act = s->en[i];
    s->steps++;
    push(s);
    if (act.op >= 0)
      land(s, act.rank, (uint32_t)act.op);
    else
      grant(s, act.rank);
  }
}
