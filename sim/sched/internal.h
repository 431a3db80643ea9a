/*
 * internal.h - the scheduler's internals, shared by sim/sched/core.c and the
 * strategies in sim/sched/ (never included outside sim/).
 *
 * Owns the layout of the scheduler area in the shared region (the wake
 * semaphore and the rank-turn hand-over: who picks, the rng, step count
 * and strategy state; then one slot per rank: semaphore, state, posted
 * event, DMA queue, payload arena), the
 * launcher-side scheduler struct (world, enabled-actor list, step count,
 * rng, the chosen strategy and its state) and the helpers the strategies
 * share: stopping the run with a message and describing an event for a
 * person. Does not own the strategies' state (each strategy file does) or
 * the step loop (core.c).
 */
#ifndef CS_SCHED_INTERNAL_H
#define CS_SCHED_INTERNAL_H

#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>

#include "../sched.h"
#include "../trace/format.h"
#include "strategy.h"

#define QCAP 256u

enum { SR_RUNNING = 0, SR_POSTED = 1, SR_DONE = 2 };

/* One op waiting for its rank's DMA engine. POD. */
typedef struct cs_dma_op {
  uint64_t dma_id;   /* rank-local id, from 1 */
  uint64_t elem_off; /* first element (store/put) */
  uint64_t data_off; /* payload offset in the rank's arena, bytes */
  uint32_t kind;     /* CS_EV_STORE, CS_EV_PUT or CS_EV_NOTIFY */
  uint32_t peer;     /* target rank */
  uint32_t slot;     /* target slot */
  uint32_t cell;     /* notify: cell; 2-D store: rows (else 0) */
  uint32_t bytes;    /* payload bytes (store/put) */
  uint32_t valid;    /* elements (store/put) */
  uint32_t op;       /* notify op */
  int32_t  value;    /* notify value; 2-D store: row stride, elements */
  uint32_t flags;    /* a2a3: OP_* */
  uint32_t pad;
} cs_dma_op_t;
_Static_assert(sizeof(cs_dma_op_t) == 64, "cs_dma_op_t");

/* An op's state under a2a3 (cs_dma_op_t.flags). An op without DRAINED is
 * still in its rank's pipe; with it, issued to memory but not yet
 * visible (it becomes visible when it lands). */
enum {
  OP_DRAINED = 1, /* a pipe barrier (or a notify's own) drained it */
  OP_FENCED = 2,  /* a notify's own DDR fence waits for it: the rank's
                     next event runs only once it landed */
  OP_LINE = 4,    /* a Set notify's write-back of its whole 64-byte line:
                     elem_off is the line's byte offset in the window,
                     bytes 64, the payload the line as the notify made it */
};

/* One 64-byte line of a rank's data cache (a2a3): a copy of window
 * memory the rank read, which no write by anyone updates. */
#define CS_LINE 64u
#define CS_CACHE_LINES 64u
typedef struct cs_cache_line {
  uint32_t valid; /* 1: holds a line */
  uint32_t peer;  /* whose window */
  uint64_t off;   /* the line's byte offset in that window */
  uint8_t  data[CS_LINE];
} cs_cache_line_t;

/* One rank's part of the scheduler area. POD (sem_t is process-shared). */
typedef struct cs_sched_slot {
  sem_t      sem;        /* the rank sleeps here until granted */
  uint32_t   state;      /* SR_* */
  uint32_t   nops;       /* ops queued */
  uint64_t   arena_used; /* payload bytes in use */
  uint64_t   next_id;    /* last DMA id assigned */
  uint64_t   pad;
  cs_event_t next;       /* the posted event (state SR_POSTED) */
  cs_dma_op_t q[QCAP];   /* queued ops, oldest first */
  uint32_t   cache_next; /* a2a3: the cache entry the next fill takes */
  uint32_t   pad2;
  cs_cache_line_t cache[CS_CACHE_LINES]; /* a2a3: the rank's data cache */
} cs_sched_slot_t;

/* The window byte range [*lo, *hi) op writes in its target's window. */
static inline void cs__op_range(const cs_layout_t *l, const cs_dma_op_t *op,
                                uint64_t *lo, uint64_t *hi)
{
  const cs_slot_t *s = &l->slot[op->slot % CS_MAX_SLOTS];
  if (op->flags & OP_LINE) {
    *lo = op->elem_off;
    *hi = op->elem_off + CS_LINE;
  } else if (op->kind == CS_EV_NOTIFY) {
    *lo = cs_slot_cell_off(s, op->cell);
    *hi = *lo + 4;
  } else if (op->cell) { /* 2-D: cell rows, value stride */
    uint64_t cols = op->valid / op->cell;
    *lo = s->off + op->elem_off * s->esize;
    *hi = *lo + ((uint64_t)(op->cell - 1) * (uint32_t)op->value + cols) * s->esize;
  } else {
    *lo = s->off + op->elem_off * s->esize;
    *hi = *lo + op->bytes;
  }
}

/* a2a3: whether an op in sl's queue writes into line `line` of `peer`'s
 * window: the rank's own cache fill of that line waits for it to land
 * (a core sees its own writes to a line it reads). */
static inline int cs__writes_line(const cs_layout_t *l,
                                  const cs_sched_slot_t *sl, uint32_t peer,
                                  uint64_t line)
{
  for (uint32_t i = 0; i < sl->nops; i++) {
    uint64_t lo, hi;
    cs__op_range(l, &sl->q[i], &lo, &hi);
    if (sl->q[i].peer == peer && lo < line + CS_LINE && hi > line)
      return 1;
  }
  return 0;
}

/* The entry of rank slot sl's cache holding line `off` of `peer`'s
 * window, or NULL. */
static inline cs_cache_line_t *cs__cache_find(cs_sched_slot_t *sl,
                                              uint32_t peer, uint64_t off)
{
  for (uint32_t i = 0; i < CS_CACHE_LINES; i++)
    if (sl->cache[i].valid && sl->cache[i].peer == peer && sl->cache[i].off == off)
      return &sl->cache[i];
  return NULL;
}

/* Room for a strategy's state that travels with rank turns: pct's
 * priorities (2 per rank) and change points (up to 65), with its header. */
#define CS_TURN_STATE_MAX ((2u * CS_MAX_RANKS * 4u + 65u * 8u + 16u + 63u) / 64u * 64u)

/* Who picks the next step (cs_sched_area_t.mode). */
enum { SM_LAUNCHER = 0, SM_RANK = 1 };

typedef struct cs_sched_area {
  sem_t    wake;        /* ranks post it after posting an event or finishing */
  uint64_t arena_bytes; /* payload arena per rank, bytes */
  uint64_t slot_stride; /* bytes from one rank's slot to the next */
  /* Rank turns (SM_RANK): the granted rank picks the next step itself at
   * its next event, with the launcher's strategy and these copies of the
   * rng and step count, and grants the rank picked (itself: it runs on,
   * no hand-off), or performs the landing picked and picks again. Nothing
   * enabled, or its body done: it hands the turn back (SM_LAUNCHER, a
   * post of wake). */
  uint32_t mode;        /* SM_*; SM_RANK only while one granted rank runs */
  uint32_t pad0;
  uint64_t turn_id;     /* cs_sched_t.turn_id of the scheduler it serves */
  uint64_t rng, steps;  /* the scheduler's, at every hand-over */
  /* A kept rank (a pool's, launch.c) forked with an earlier run's
   * scheduler builds its own copy of this one from cfg (rebuild: cfg
   * holds numbers only), running the strategy's init as the launcher did
   * and checking its state against state0, the launcher's right after
   * init at address state_addr: the words that differ are pointers into
   * the block, moved by the two blocks' distance at every hand-over. Any
   * other difference (or a cfg with pointers, but for the hooks, which a
   * rank takes from its own device) and the rank hands its turns back,
   * as with no copy at all. */
  uint64_t state_addr;  /* the launcher's s->state */
  uint32_t rebuild;     /* 1: a rank may build its scheduler from cfg */
  uint32_t state_bytes; /* the launcher's s->state_bytes */
  uint64_t refused;     /* turns handed back for want of this scheduler */
  uint8_t  pad[24];
  uint8_t  state[CS_TURN_STATE_MAX]; /* the strategy's (state_bytes) too */
  union {
    cs_sched_cfg_t c;   /* the launcher's cfg, its pointers cleared */
    uint8_t        pad[256];
  } cfg;
  uint8_t  state0[CS_TURN_STATE_MAX];
} cs_sched_area_t;
_Static_assert(sizeof(cs_sched_cfg_t) <= 256, "cs_sched_area_t.cfg");
_Static_assert(sizeof(cs_sched_area_t) % 64 == 0, "cs_sched_area_t");

static inline cs_sched_area_t *area_of(const cs_world_t *w)
{
  return (cs_sched_area_t *)(w->base + w->ctl->off_sched);
}
static inline cs_sched_slot_t *slot_of(const cs_world_t *w, uint32_t r)
{
  cs_sched_area_t *a = area_of(w);
  return (cs_sched_slot_t *)((uint8_t *)a + sizeof(*a) + r * a->slot_stride);
}
static inline uint8_t *arena_of(const cs_world_t *w, uint32_t r)
{
  return (uint8_t *)slot_of(w, r) + sizeof(cs_sched_slot_t);
}

/* ------------------------------------------------------------ scheduler */

typedef struct cs_actor {
  uint32_t rank;
  int32_t  op; /* -1: the rank itself; else index into its DMA queue */
} cs_actor_t;

struct cs_sched {
  cs_sched_cfg_t cfg;
  cs_world_t    *w;
  uint32_t       n;
  uint64_t       rng;      /* splitmix64 state, seeded from cfg.seed */
  uint64_t       steps;    /* steps taken; the index of the one being picked */
  int            waiting;  /* rank granted and not yet posted again, or -1 */
  cs_actor_t    *en;       /* enabled actors: ranks by index, then DMA ops */
  const cs_strategy_ops_t *ops; /* chosen once from cfg.strategy */
  void          *state;    /* the strategy's own, or NULL */
  size_t         state_bytes; /* rank turns: s->state is one block of
                                 these bytes, pointers only into itself */
  uint8_t       *ones;     /* n ones: every rank alive, for a rank's turn */
  uint64_t       turn_id;  /* nonzero: ranks may take turns (ops->turns) */
  uint8_t       *moved;    /* a rank's rebuilt copy: per 8-byte word of the
                              state, 1 if a pointer into it, else NULL */
  uint64_t       delta;    /* rank's state address - the launcher's */
};

/* A rank that was granted under SM_RANK and has just posted its next
 * event (transport_ctl.c) picks the next step in its own copy of the
 * launcher's scheduler (inherited at fork; a kept rank builds its copy of
 * a later run's from the area, cs_sched_area_t). Returns 1 when it picked
 * itself and runs on; 0 when it must sleep on its semaphore (another rank
 * granted, or the turn handed back to the launcher). The rank lands the
 * posted ops it picks itself, through its own device's hooks (`hooks`,
 * `hook_arg`: NULL when untraced), as the launcher would. */
int cs__sched_rank_turn(cs_world_t *w, uint32_t r, const cs_dev_hooks_t *hooks,
                        void *hook_arg);
/* A rank's body returned (its state DONE): wakes the launcher, handing
 * back the turn if the rank had it (`my_turn`: the mode was SM_RANK when
 * the rank read it, before storing DONE). */
void cs__sched_done(cs_world_t *w, int my_turn);

/* Sets the abort word to `reason` with a message (unless an abort came
 * first) and wakes every rank (a deadlock's posted ranks first, one at
 * a time in rank order, stop.c). Returns CS_SCHED_STOPPED. */
int cs__sched_stop(cs_sched_t *s, uint32_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The store, put or notify a queued op carries out, as an event: its
 * kind, notify op and value, target, elements and DMA id (phys 0). */
static inline cs_event_t cs__sched_op_event(const cs_dma_op_t *op)
{
  return (cs_event_t){.kind = op->kind, .opcmp = op->op,
                      .elem_off = op->elem_off, .dma_id = op->dma_id,
                      .peer = op->peer, .slot = op->slot, .cell = op->cell,
                      .valid = op->valid, .value = op->value};
}

/* A rank's posted event, a queued DMA op, as trace records (describe.c):
 * an op as kind CS_TR_DMA_POST with its own kind in round. */
void cs__sched_event_rec(cs_trace_rec_t *x, uint32_t rank, const cs_event_t *ev);
void cs__sched_op_rec(cs_trace_rec_t *x, uint32_t rank, const cs_dma_op_t *op);
/* One line for a person, into buf of n bytes: "rank 1: load data[16..32)
 * from rank 0 (16 physical)" for the event rank `rank` posted, or for a
 * trace record (a DMA landing included). Used by the interactive prompt
 * and replay divergences (describe.c). */
void cs__sched_describe_event(char *buf, size_t n, const cs_world_t *w,
                              uint32_t rank, const cs_event_t *ev);
/* The same for a DMA op still in rank's queue (the interactive prompt's
 * "rank 0's DMA: land put #3: rank 1 data[0..8)"). */
void cs__sched_describe_op(char *buf, size_t n, const cs_world_t *w,
                           uint32_t rank, const cs_dma_op_t *op);
void cs__sched_describe_rec(char *buf, size_t n, const cs_world_t *w,
                            const cs_trace_rec_t *x);

/* Parses a deviate: list ("none", or "Z>Y,..."; deviate.c); stores up to
 * cap deviations into out (may be NULL). Returns how many the list has,
 * or -1 if it is not one. */
int64_t cs__deviate_parse(const char *s, void *out, uint64_t cap);

#endif
