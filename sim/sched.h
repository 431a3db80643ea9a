/*
 * sched.h - controlled execution: one actor at a time, memory models and
 * schedules.
 *
 * The public face of the scheduler: memory models, schedule parsing, and
 * the launcher-side scheduler (sim/sched/core.c) that picks the next actor
 * (a rank, or a rank's DMA engine landing one posted op) by strategy
 * (sim/sched/random.c, pct.c, latest.c, replay.c, interactive.c). The
 * scheduler area's layout is in sim/sched/internal.h; the rank side of a
 * scheduling point and DMA posting are the controlled transport
 * (transport_ctl.c). Does not own processes (launch.c calls
 * cs__sched_step from its loop) or the trace format (trace/format.h).
 *
 * Handshake: a rank about to perform an event writes it to its slot, marks
 * itself POSTED, posts the scheduler semaphore and sleeps on its own. The
 * scheduler, once every live rank is POSTED or DONE, computes the enabled
 * actors, picks one, and either performs a DMA landing itself or grants the
 * rank (which runs until its next event). Exactly one actor runs at a time,
 * so a run is a pure function of build, configuration and schedule.
 * Rank turns (every strategy but interactive and the caller's picker):
 * the granted rank, at its next event, picks the next step itself with
 * the same strategy code and state (no round trip through the launcher;
 * when it picks itself it runs on at once), and hands the turn back for a
 * traced landing, nothing enabled or its body's end; the decisions are
 * the same ones in the same order.
 *
 * Enabled: a rank whose posted event is a wait with its condition true, a
 * fence with its DMA queue empty, a post with room in its queue, or any
 * other event; a DMA engine with a landable op: under fifo the oldest;
 * under relaxed every op of the oldest fence epoch.
 */
#ifndef CS_SCHED_H
#define CS_SCHED_H

#include <stdint.h>
#include <stdio.h>

#include "dev.h"
#include "trace/format.h"

typedef enum cs_mm {
  CS_MM_SC = 0,      /* posted ops land at issue */
  CS_MM_FIFO = 1,    /* they land later, in issue order */
  CS_MM_RELAXED = 2, /* ops not separated by a fence land in any order */
  CS_MM_A2A3 = 3,    /* the device's: pipe -> drained -> visible, per-rank
                        caches of 64-byte lines, Set writes back its line */
} cs_mm_t;
#define CS_MM_COUNT 4

typedef enum cs_strategy {
  CS_SCHED_FREE = 0,   /* not controlled */
  CS_SCHED_RANDOM,     /* random:SEED */
  CS_SCHED_PCT,        /* pct:SEED:DEPTH[:STEPS] */
  CS_SCHED_LATEST,     /* latest */
  CS_SCHED_REPLAY,     /* replay:FILE */
  CS_SCHED_INTERACTIVE,/* interactive */
  CS_SCHED_DEVIATE,    /* deviate:LIST */
  CS_SCHED_CALLBACK,   /* the caller's pick function (no --schedule name) */
} cs_strategy_t;

struct cs_trace_rec;
struct cs_sched_view;
/* A caller's own picker (CS_SCHED_CALLBACK), called in the launcher at
 * every step with what can run: returns an index into v->en, or -1 to stop
 * the run (it ends as aborted, reason CS_ABORT_SIGNAL, message "stopped by
 * the caller at step S"). */
typedef int64_t (*cs_sched_pick_fn)(const struct cs_sched_view *v, void *arg);

typedef struct cs_sched_cfg {
  cs_strategy_t strategy;
  cs_mm_t       model;
  uint64_t      seed;   /* random, pct */
  uint32_t      depth;  /* pct: bug depth d (d-1 priority change points) */
  uint64_t      steps;  /* pct: estimated run length in steps */
  const struct cs_trace_rec *replay; /* replay: step records in order */
  uint64_t      nreplay;
  /* replay of a partial trace (its run killed, still being written, or
   * cut): the steps before replay_whole hold every rank's events; where
   * the run cannot follow the trace at or after that step (the trace
   * ends, or a recorded event needs one that is missing) the run stops
   * as diverged with no message, steps = where it stopped, for the
   * caller to word as the trace's end. 0 (replay_partial 0): none. */
  int           replay_partial;
  uint64_t      replay_whole;
  const char   *deviate; /* deviate: the list, as given (outlives the run) */
  FILE         *tty_in, *tty_out;    /* interactive */
  cs_sched_pick_fn pick_fn;          /* callback */
  void         *pick_arg;
  const cs_dev_hooks_t *hooks;       /* set by the launcher: land() */
  void         *hook_arg;
} cs_sched_cfg_t;

/* "sc", "fifo", "relaxed", "a2a3" -> 0..3, or CS_EBADNAME. */
int cs_mm_parse(const char *s);
const char *cs_mm_name(cs_mm_t m);

/* Parses random:SEED, pct:SEED:DEPTH[:STEPS] (DEPTH 1..64), latest,
 * interactive, deviate:LIST (c->deviate points into s) (and replay:FILE, whose FILE the caller loads; refused when
 * replay_file is NULL). Returns 0, or CS_EBADSCHED with *c possibly half
 * set. Words no message: the caller names `s`. */
int cs_sched_parse(const char *s, cs_sched_cfg_t *c, const char **replay_file);

/* Bytes of the scheduler area for n ranks whose posted payloads may reach
 * arena_bytes each (pass as sched_bytes in cs_world_opts_t). */
uint64_t cs_sched_area_bytes(uint32_t nranks, uint64_t arena_bytes);

/* Record kinds that are schedule steps (replay follows them in seq order):
 * every device event's main record and DMA landings. */
int cs_sched_is_step(uint32_t kind);

/* ---- what a callback picker sees (CS_SCHED_CALLBACK) ---- */

enum { CS_VIEW_RUNNING = 0, CS_VIEW_POSTED = 1, CS_VIEW_DONE = 2 };

/* One rank at a step: its posted event as a trace record (kind load..mark;
 * the tag fields phase/round zero), whether it may run, and if not, why,
 * for a person ("waiting for signal[5] >= 3, now 2"). */
typedef struct cs_sched_rank_view {
  uint32_t       state;   /* CS_VIEW_* */
  int            enabled; /* the posted event may run now */
  uint32_t       nops;    /* DMA ops queued */
  cs_trace_rec_t rec;     /* the posted event (state POSTED) */
  char           why[96]; /* not enabled: the reason; else "" */
} cs_sched_rank_view_t;

/* One enabled actor: a rank's posted event (op -1, rec = its event) or
 * a DMA op of its queue (rec kind CS_TR_DMA_POST, round = the op's kind,
 * as cs_trace_sentence words an op still queued). */
typedef struct cs_sched_actor_view {
  uint32_t       rank;
  int32_t        op;
  cs_trace_rec_t rec;
  uint32_t       flags; /* a rank's event: its CS_EVF_* (sim/dev.h) */
} cs_sched_actor_view_t;

/* Valid only during the call; the world is live and paused. */
typedef struct cs_sched_view {
  const cs_world_t            *w;
  uint64_t                     step;     /* the index of the step to pick */
  uint32_t                     nranks;
  uint32_t                     nenabled; /* >= 1 */
  const cs_sched_actor_view_t *en;       /* in the order of every strategy */
  const cs_sched_rank_view_t  *rank;     /* nranks */
} cs_sched_view_t;

/* ---- launcher side (launch.c) ---- */

typedef struct cs_sched cs_sched_t;

enum { CS_SCHED_RUNNING = 0, CS_SCHED_FINISHED = 1, CS_SCHED_STOPPED = 2 };

/* Prepares the area of `w` (semaphores, queues). Returns 0 or -errno. */
int cs__sched_init(cs_sched_t **s, cs_world_t *w, const cs_sched_cfg_t *cfg);
/* Runs scheduling steps for up to ~10 ms. `alive` says which ranks still
 * run (0 = reaped). Returns CS_SCHED_RUNNING, CS_SCHED_FINISHED (every rank
 * done, every op landed) or CS_SCHED_STOPPED (deadlock or replay
 * divergence: the abort word and message are set). */
int cs__sched_step(cs_sched_t *s, const uint8_t *alive);
/* Wakes every sleeping rank so it sees the abort word. */
void cs__sched_wake_all(cs_sched_t *s);
void cs__sched_fini(cs_sched_t *s);
/* Steps taken so far. */
uint64_t cs__sched_steps(const cs_sched_t *s);
/* 1 if rank r runs between two scheduling points: it was granted (or
 * started) and has neither posted its next event nor finished. */
int cs__sched_running(const cs_sched_t *s, uint32_t r);

#endif
