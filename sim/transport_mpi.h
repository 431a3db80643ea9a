/*
 * transport_mpi.h - the MPI-3 RMA transport (transport_mpi.c): the device
 * API over one MPI window per rank, for ranks that share no memory (one
 * MPI process each, on one host or many). Built only with the CMake option
 * COLLSIM_MPI; nothing in the default build includes this header.
 *
 * A rank process (cli/mpi/mpi_main.c) calls, in this order:
 *
 *   cs_world_local(&w, &layout, nranks, &opts)   its own control block
 *   cs_mpi_open(&m, MPI_COMM_WORLD, &layout, -1) collective: the window
 *   cs_mpi_dev_init(&d, &m, &w, &fault)          the device over it
 *   ... the rank body (cs_ar_rank_main) ...
 *   cs_dev_fini(&d); cs_mpi_close(&m)            collective
 *
 * Any failure of a rank (out-of-slot fault, wait timeout, an MPI error)
 * ends the whole job with MPI_Abort after one line naming the rank; a
 * wait timeout (or injected hang) first makes rank 0 print the hang
 * wavefront, every rank's position (cs_mpi_t.wf_win).
 */
#ifndef CS_TRANSPORT_MPI_H
#define CS_TRANSPORT_MPI_H

#include <mpi.h>
#include <stdio.h>

#include "dev.h"
#include "launch.h"

/* The ranks that answered rank 0's wavefront (a wait timed out), for the
 * trace of the aborted run. */
typedef struct cs_mpi_stopped {
  int      first;                  /* the rank whose report came first, or -1 */
  uint8_t  reported[CS_MAX_RANKS]; /* 1: it reported (and sends its records) */
  uint8_t  hung[CS_MAX_RANKS];     /* 1: what it reported is an injected hang */
  uint64_t event[CS_MAX_RANKS];    /* its event index then */
} cs_mpi_stopped_t;

/* One rank's window and what the ops need to reach it. */
typedef struct cs_mpi {
  MPI_Comm comm;    /* the ranks; rank i of comm is collsim rank i */
  MPI_Win  win;     /* MPI_Win_allocate'd, locked (lock_all) until close */
  uint8_t *base;    /* this rank's window memory */
  uint64_t bytes;   /* the layout's win_bytes (+ clock words), rounded up
                       to 64 */
  int      rank;    /* in comm */
  int      nranks;  /* size of comm */
  int      unified; /* MPI_WIN_MODEL is MPI_WIN_UNIFIED */
  int      abort_code; /* MPI_Abort's error code on a failure; 0 (the
                          default): the rank's CS_RX_* exit code */
  /* Logical clocks (cs_mpi_open with clock_slot >= 0, for a traced run):
   * the window then holds, past the slots, one uint64 clock word per cell
   * of the signal slot clock_slot (clock_words of them), none for the
   * data. A notify first raises the target cell's clock word
   * to `clock` (MPI_Accumulate MPI_MAX, then MPI_Win_flush), then changes
   * the cell; a wait whose condition holds reads its cell's clock word
   * and sets clock = max(clock, word). The tracer advances `clock` by one
   * per event (cli/mpi/mpi_trace.c): a Lamport clock. */
  int      clocks;
  uint64_t clock;
  uint64_t clk_off[CS_MAX_SLOTS]; /* slot's first clock word, or 0: none */
  uint64_t clock_words;           /* clock words per window (0: none) */
  /* The hang wavefront: a second window, of CS_MPI_WF_WORDS(nranks)
   * int64 words on rank 0 and one (its request flag) elsewhere. A rank
   * whose wait (or injected hang) passed the timeout writes its state
   * into its record at rank 0 one-sidedly; rank 0 then sets every rank's
   * request flag, which a rank in a wait reads locally and answers with
   * its own record, and after a grace period prints every rank's line
   * (cs_launch_print_wait) before it ends the job. Not written while no
   * wait times out; a long wait reads its own words (a local NO_OP
   * MPI_Rget_accumulate) every 1024th poll and, past the yield phase,
   * every poll. */
  MPI_Win  wf_win;
  int64_t *wf_base;               /* the words */
  cs_wait_where_t where;          /* names a wait's place, or fn NULL */
  /* A traced run's records at a wait timeout (cli/mpi/mpi_trace.c), or
   * NULL: after this rank's report, rank 0 calls it with `who` once the
   * grace period is over (it takes the records of the ranks that
   * reported and writes the trace), another rank with who NULL (it sends
   * its records to rank 0); each gives up at `deadline`. */
  void (*stop_trace)(struct cs_mpi *m, void *arg, const cs_mpi_stopped_t *who,
                     uint64_t deadline);
  void *stop_trace_arg;
  /* Where the lines that end a failed job go (the wavefront, the line
   * naming why), and the command's name they start with: the command
   * sets them after cs_mpi_open (whose defaults are stderr and
   * "collsim-mpi"); the transport writes nowhere else (a rank's fatal
   * signal: one line on report's descriptor). */
  FILE       *report;
  const char *cmd;
  /* The watchdog (every rank on one node only): a shared-memory window
   * (MPI_Win_allocate_shared) of one 64-byte beat per rank, which a
   * thread of each rank advances every 100 ms without any MPI call, and
   * which a stopped or dead process stops advancing. When this rank's
   * event has not moved for twice the timeout plus 5 s (every wait of
   * collsim's and the wavefront have had their turn: it is blocked inside
   * an MPI call), the thread names the lowest rank whose beat stopped
   * (the first such rank prints, through the window's last word) and
   * ends the process, exit 3. */
  MPI_Comm  node;
  MPI_Win   wd_win;
  int64_t  *wd;        /* the beats, or NULL: no watchdog */
  void     *wd_thread; /* its pthread_t, or NULL */
  int       wd_quit;
} cs_mpi_t;

/* Rank 0's wavefront window: a request flag, the count of reports, and
 * per rank r a record of CS_MPI_WF_REC words: its order among the reports
 * (1 = first; 0 = none yet), its state (CS_RS_*), event, slot, cell, cmp,
 * target and the cell's value. */
#define CS_MPI_WF_REC 8
#define CS_MPI_WF_WORDS(n) (2 + (uint64_t)(n) * CS_MPI_WF_REC)

extern const cs_dev_ops_t cs_transport_mpi;

/* Collective over comm: allocates this rank's window of l->win_bytes
 * (zeroed; with clock_slot >= 0, the index of the layout's signal slot of
 * 4-byte cells, plus one clock word per cell of it), opens the
 * passive-target epoch for the whole run (MPI_Win_lock_all,
 * MPI_MODE_NOCHECK) and waits until every rank has.
 * Returns 0 or -EINVAL (more ranks than CS_MAX_RANKS). MPI errors are
 * fatal to the job (the window's default error handler). */
int cs_mpi_open(cs_mpi_t *m, MPI_Comm comm, const cs_layout_t *l,
                int clock_slot);

/* cs_dev_init for rank m->rank of w (a cs_world_local world of the same
 * layout and size), with the device's own window and the CommContext
 * bases pointing at the MPI window: the ops reach peers only through MPI,
 * never through an address. Returns 0 or -ENOMEM; cs_dev_fini undoes it. */
int cs_mpi_dev_init(cs_dev_t *d, cs_mpi_t *m, cs_world_t *w,
                    const cs_fault_t *fault);

/* Waits for request rq until CLOCK_MONOTONIC deadline (ns), testing it
 * (which drives MPI progress) every 0.1 ms: 0 done, -1 not by then, the
 * request then still pending. Never blocks past the deadline. */
int cs_mpi_complete_by(MPI_Request *rq, uint64_t deadline);

/* Collective: completes this rank's operations, closes the epoch once
 * every rank is done with every window, frees the window. */
void cs_mpi_close(cs_mpi_t *m);

/* The guard of the stretches outside a run, where every MPI call is
 * collective and neither a wait timeout nor the watchdog can end a job
 * that a stopped or dead rank holds: cs_mpi_guard_start, before MPI_Init,
 * starts a thread that ends the process (exit 3, one line on `fd` that
 * starts with `cmd`, the command's name, not NULL) once such a stretch
 * lasts COLLSIM_MPI_SETUP_LIMIT seconds (default 60; 0: no guard).
 * Returns 0, or -EINVAL for a limit that is not a number of seconds from
 * 0 to 86400, or -errno if the thread cannot start.
 * cs_mpi_dev_init and cs_mpi_close mark a run's start and end
 * (cs_mpi_guard_in_run: 1 stops the clock, 0 starts it again, so a loop
 * of collective calls outside a run calls it with 0 before each);
 * cs_mpi_guard_stop after MPI_Finalize. */
int cs_mpi_guard_start(const char *cmd, int fd);
void cs_mpi_guard_in_run(int in_run);
void cs_mpi_guard_stop(void);

#endif
