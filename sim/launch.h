/*
 * launch.h - the launcher: forks the ranks of a world, reaps them, and turns
 * the first failure into an aborted run with a one-line report per problem.
 *
 * Owns: processes (fork, PR_SET_PDEATHSIG, SIGCHLD/SIGINT/SIGTERM handling,
 * the grace period, SIGKILL of stragglers) and the failure report (crash
 * lines, hang wavefront). Does not own the world (window/world.h), which the
 * caller creates before and destroys after.
 */
#ifndef CS_LAUNCH_H
#define CS_LAUNCH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "dev.h"
#include "sched.h"

/* A rank's body, run in the forked process. Returns 0 on success; any
 * other value becomes the rank's exit status and fails the run. */
typedef int (*cs_rank_fn)(cs_dev_t *d, void *arg);

/* A rank that needs the launcher's tick now (a trace chunk is full) sends
 * this signal to the launcher: SIGURG (its default action is to ignore
 * it). cs_launch blocks it while it runs, when a tick is set, and discards
 * any left pending before it returns. */
#define CS_LAUNCH_DOORBELL SIGURG

/* What a program says about one of its waits, for the hang wavefront:
 * fn(arg, rank, slot, cell, target, buf, n) writes the wait's place in
 * the program ("READY barrier of RS t1 j0, rank 2's notify") into buf,
 * or leaves it empty when it has nothing to say. Called by the launcher
 * only, after the ranks stopped. */
typedef struct cs_wait_where {
  void (*fn)(void *arg, uint32_t rank, uint32_t slot, uint32_t cell,
             int32_t target, char *buf, size_t n);
  void *arg;
} cs_wait_where_t;

/* The ranks of one world kept alive from run to run (cs_launch_opts_t.
 * pool): a run with a pool whose ranks are alive starts them again
 * instead of forking, so a run pays for its world, its fork and each
 * rank's mapping of the region only once. Opaque: the cs_launch_pool_*
 * functions below. */
typedef struct cs_launch_pool cs_launch_pool_t;

typedef struct cs_launch_opts {
  cs_fault_t fault;           /* injected fault (kind NONE = none) */
  uint32_t   spin_iters;      /* 0 = choose from ranks vs online CPUs */
  uint32_t   grace_ms;        /* after the first failure, 0 = 250 ms */
  const cs_dev_hooks_t *hooks; /* per-event hooks in every rank, or NULL */
  void      *hook_arg;
  FILE      *report;          /* where failure lines go; NULL = stderr */
  void     (*tick)(void *arg); /* called every tick_ns while ranks run, and
                                 at once when a rank rings the doorbell */
  void      *tick_arg;
  uint64_t   tick_ns;         /* 0 = 1 ms */
  int       *statuses;        /* if set: each rank's wait status (nranks) */
  const cs_sched_cfg_t *sched; /* controlled mode (the world needs a
                                  scheduler area), NULL = free mode */
  cs_wait_where_t wait_where; /* names a blocked wait's place in the
                                 program for the wavefront, or NULL */
  cs_launch_pool_t *pool;     /* keep the ranks for the next run, or NULL
                                 (fork for this run only); hooks with a
                                 pool only in controlled mode, and the
                                 ones its ranks were forked with (they
                                 keep that run's hooks and hook_arg) */
} cs_launch_opts_t;

typedef struct cs_launch_result {
  int      aborted;      /* 1 if the run was aborted */
  uint32_t abort_reason; /* CS_ABORT_* */
  int32_t  abort_rank;   /* first failing rank, -1 = launcher */
  int      signo;        /* signal that interrupted the launcher, 0 if none */
  uint64_t wall_ns;      /* fork of the first rank to reap of the last */
  uint64_t steps;        /* controlled: scheduling steps taken (replay: the
                            recorded steps it followed); free: 0 */
} cs_launch_result_t;

/* Runs fn(dev, arg) in nranks forked processes over `w` and waits for all.
 * Returns 0 when every rank returned 0; 1 when the run was aborted (the
 * report has been printed); -errno when ranks could not be started (any
 * started ones are killed and reaped). Blocks. Not thread-safe: it blocks
 * SIGCHLD, SIGINT, SIGTERM and SIGHUP (and CS_LAUNCH_DOORBELL with a tick)
 * while it runs. A free run pins rank r to the r-th allowed CPU when the
 * ranks fit (cs_launch_pin); a controlled run binds the calling thread
 * and its ranks to one CPU no other collsim run claims, and gives the
 * thread its CPU set back before it returns. */
int cs_launch(cs_world_t *w, cs_rank_fn fn, void *arg,
              const cs_launch_opts_t *opts, cs_launch_result_t *res);

/* A pool for worlds of nranks, with no ranks yet: the first cs_launch
 * with it forks them; they stay after a clean run (every rank returned 0,
 * nothing aborted) and run the body again at the next cs_launch with the
 * pool, over the same world. After any other run they are gone (killed
 * and reaped) and the next cs_launch forks afresh. The rank body, its
 * argument (as it was at the fork), the fault and the transport are those
 * of the run that forked them: pass the same ones, and the same world.
 * 0 or -ENOMEM. */
int cs_launch_pool_open(cs_launch_pool_t **pool, uint32_t nranks);
/* 1 while the pool holds ranks (they ran cleanly and none has died since),
 * else 0. A rank found dead (killed from outside between runs) is reaped
 * and the others are ended, so the next cs_launch forks afresh. */
int cs_launch_pool_alive(cs_launch_pool_t *pool);
/* Before the next run over w with a live pool: puts back the control
 * block as it was when the pool's first run began and zeroes the notes,
 * windows and staging buffers, as a fresh world has them. The trace rings
 * and the scheduler area are set up by every run that uses them (a
 * tracer's start writes each ring's header, and nothing reads a record
 * above a ring's head), so they are left as they are. */
void cs_launch_pool_reset(const cs_launch_pool_t *pool, cs_world_t *w);
/* Ends the pool's ranks (SIGKILL, then reaps them) and frees it. NULL is
 * fine. */
void cs_launch_pool_close(cs_launch_pool_t *pool);

/* Binds the calling thread to the rank-th allowed CPU when nranks fit the
 * allowed CPUs (what every rank does at start); otherwise does nothing.
 * Also for a tool whose threads stand in for ranks (bench --floor). */
void cs_launch_pin(uint32_t rank, uint32_t nranks);

/* Spin iterations a waiter uses before sleeping, for n ranks on this
 * machine (long when every rank has a CPU, short otherwise). */
uint32_t cs_launch_spin_default(uint32_t nranks);
/* sched_yield rounds a waiter makes after spinning, before FUTEX_WAIT
 * (only when ranks outnumber CPUs). */
uint32_t cs_launch_yield_default(uint32_t nranks);

/* One rank's wait as a wavefront line shows it, for a caller that keeps
 * the wait state itself (the MPI transport, whose ranks share no control
 * block). */
typedef struct cs_wait_line {
  uint32_t    rank;
  uint64_t    event;     /* the rank's event index */
  const char *slot_name; /* the layout's name of the slot */
  uint32_t    slot, cell, cmp; /* cmp: CS_CMP_* */
  int32_t     target;    /* the value waited for */
  int32_t     value;     /* the cell's value as last seen */
  const char *note;      /* appended as is ("; never notified"), or NULL */
} cs_wait_line_t;

/* The wavefront's line of a rank in a wait: "  rank R: blocked at event E
 * in wait(slot[cell] >= T): cell is V, expected >= T; <where>" (or "wait
 * satisfied ... stopped before it returned" when V meets T). */
void cs_launch_print_wait(const cs_wait_line_t *l, const cs_wait_where_t *where,
                          FILE *out);
/* The wavefront's line of a rank in no wait: "  rank R: running at event
 * E" (state: CS_RS_*, named as the wavefront names it). */
void cs_launch_print_state(uint32_t rank, uint32_t state, uint64_t event,
                           FILE *out);

/* Prints the hang wavefront: one line per rank: what it is blocked on,
 * the cell's value and the expected value, the wait's place in the
 * program (from `where`, which may be NULL or have a NULL fn), and who
 * last issued a notify to that cell and at which of its events (when the
 * world keeps notes for the slot, cs_world_opts_t.note_cells). */
void cs_launch_print_wavefront(const cs_world_t *w, const cs_wait_where_t *where,
                               FILE *out);

#endif
