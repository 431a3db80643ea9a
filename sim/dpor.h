/*
 * dpor.h - every execution class of a controlled run, each explored once
 * (source-DPOR with sleep sets), through the caller's picker.
 *
 * The caller runs the same configuration again and again with
 * CS_SCHED_CALLBACK, pick_fn = cs_dpor_pick and pick_arg = the explorer:
 *
 *   while (cs_dpor_next(x) == 1) { run once; cs_dpor_done(x); }
 *
 * Each run follows a prefix of earlier choices, then takes new ones; after
 * it, the races of the run add backtrack points. The dependence relation
 * (docs/verify.md) is dependent() in sim/sched/dpor.c. Owns the search
 * tree and its counts; does not own running (the caller) or outcomes.
 */
#ifndef CS_DPOR_H
#define CS_DPOR_H

#include <stdint.h>

#include "sched.h"

typedef struct cs_dpor cs_dpor_t;

typedef enum cs_dpor_mode {
  CS_DPOR_REDUCE = 0,   /* source sets + sleep sets over docs/verify.md's
                           relation */
  CS_DPOR_EXHAUSTIVE,   /* every schedule: no sleep sets, every enabled
                           actor at every step (the brute force) */
  CS_DPOR_UNSOUND,      /* tests only: every two events independent (a
                           planted wrong relation the soundness test must
                           catch) */
  CS_DPOR_CELLS,        /* tests only: under a2a3, the relation of relaxed
                           (bytes and cells, not 64-byte lines; a post
                           independent of its rank's earlier landings): a
                           planted relation too fine for a2a3 */
  CS_DPOR_QUIET_LOOSE,  /* tests only: REDUCE with a quiet wait independent
                           of every add >= 0 after it, whether or not the
                           add can stand in for one the wait needed: a
                           planted rule the quiet programs must catch */
  CS_DPOR_QUIET_SLEEP,  /* tests only: REDUCE with sleep sets that keep a
                           quiet wait asleep past an add >= 0 of its cell
                           (the finer relation the race rule uses, where
                           both orders end alike): planted, as above */
} cs_dpor_mode_t;

/* The outcome of one run for the search (cs_dpor_done). */
enum {
  CS_DPOR_CLASS = 0,   /* ran to its end: one class */
  CS_DPOR_BLOCKED = 1, /* every enabled actor asleep at some step: a
                          redundant run (run on to its end outside the
                          tree, so the world stays clean) */
};

typedef struct cs_dpor_stats {
  uint64_t executions; /* runs, complete or sleep-blocked */
  uint64_t classes;    /* complete runs */
  uint64_t blocked;    /* sleep-blocked runs */
  uint64_t max_steps;  /* the longest run */
  /* The share of the tree the runs so far stand for (docs/verify.md,
   * "How far an incomplete search got"): each run adds the product, over
   * its nodes in the tree, of one over the branches that node will
   * explore as known at the run's end. 1 when every branch is explored
   * and no race added a branch to a node after a run passed it; races
   * found later do add some, so before the end it overstates what is
   * done. A subtree's (cs_dpor_create_sub) is its share of the subtree. */
  double   share;
} cs_dpor_stats_t;

/* A new search of the runs under model m. Returns 0 or -ENOMEM. */
int cs_dpor_create(cs_dpor_t **x, cs_mm_t m, cs_dpor_mode_t mode);
void cs_dpor_destroy(cs_dpor_t *x);
/* Prepares the next run: 1 (run it), 0 (every class explored). */
int cs_dpor_next(cs_dpor_t *x);
/* The picker (pick_arg = x). Stops the run (-1) only when it goes wrong
 * (see cs_dpor_done). */
int64_t cs_dpor_pick(const cs_sched_view_t *v, void *arg);
/* After the run: CS_DPOR_CLASS, CS_DPOR_BLOCKED, or a negative error with
 * a sentence in *why: the run differed from an earlier one with the same
 * prefix (not deterministic), or a post found its DMA queue full (the
 * relation assumes room). */
int cs_dpor_done(cs_dpor_t *x, const char **why);
/* After cs_dpor_done said -EAGAIN (the run ended with posted ops never
 * landed, which a controlled run must not do: the engine lost a step):
 * forget that run; the next one takes the same choices again. */
void cs_dpor_retry(cs_dpor_t *x);
cs_dpor_stats_t cs_dpor_stats(const cs_dpor_t *x);
/* The last run's choices (indices into each step's enabled actors), for
 * running it again (cs_dpor_replay_pick). *n: how many. */
const uint32_t *cs_dpor_choices(const cs_dpor_t *x, uint64_t *n);

/* Splitting the search (collsim verify -j, docs/verify.md "Parallel").
 * The coordinator runs one execution as above (cs_dpor_next, a run,
 * cs_dpor_done); its nodes are then the path whose every branch becomes a
 * task. cs_dpor_task_take hands out the deepest open branch: 1 with a
 * malloc'd blob (*buf, *len) and the node's *id; 0 when none is open now
 * (tasks out may add some); -1 when every branch is explored; -ENOMEM.
 * A task's branch counts as explored from then on (it sleeps in the
 * node's later tasks), and the node stays until cs_dpor_task_done(id).
 * A worker explores the task's subtree with cs_dpor_create_sub and the
 * usual loop; after each cs_dpor_done, cs_dpor_reports drains (valid
 * until its next run) the races it found that reverse above its subtree,
 * which the coordinator adds with cs_dpor_apply (0 or -EINVAL). The
 * union of the tasks' searches is the serial search's, the order of the
 * branches aside. */
int cs_dpor_task_take(cs_dpor_t *x, void **buf, size_t *len, uint64_t *id);
void cs_dpor_task_done(cs_dpor_t *x, uint64_t id);
/* The share of the tree (as cs_dpor_stats_t's) of the task just taken at
 * node id: the product over nodes 0..id of one over their branches. */
double cs_dpor_task_share(const cs_dpor_t *x, uint64_t id);
int cs_dpor_apply(cs_dpor_t *x, const void *buf, size_t len);
int cs_dpor_create_sub(cs_dpor_t **x, cs_mm_t m, cs_dpor_mode_t mode,
                       const void *buf, size_t len);
const void *cs_dpor_reports(cs_dpor_t *x, size_t *len);

/* A picker that takes the choices at `arg` (a cs_dpor_replay_t) in turn. */
typedef struct cs_dpor_replay {
  const uint32_t *choice;
  uint64_t        n;
} cs_dpor_replay_t;
int64_t cs_dpor_replay_pick(const cs_sched_view_t *v, void *arg);

#endif
