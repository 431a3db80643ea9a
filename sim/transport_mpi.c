/*
 * transport_mpi.c - the MPI-3 RMA transport (transport_mpi.h): every
 * event's effect as one-sided MPI calls on one window per rank. Owns the
 * window's life (allocate, the run-long passive-target epoch, free) and the
 * ops table cs_transport_mpi. Does not own checks, hooks or faults (dev.c
 * has done them before an op runs), nor processes (mpirun starts them;
 * cli/mpi/mpi_main.c is the rank's main). The window holds the slot layout of
 * window/layout.h; the op's `off` is the MPI target displacement
 * (disp_unit 1), the same in every rank's window; a traced run's window
 * also holds one clock word per signal cell past the slots (clocks).
 *
 * What each op relies on, by section of the MPI-3.1 standard:
 *
 *   epoch    One passive-target access epoch to every rank for the whole
 *            run: MPI_Win_lock_all with MPI_MODE_NOCHECK (11.5.3, 11.5.5:
 *            no rank ever takes an exclusive lock, so no lock is needed).
 *            Inside it, completion comes only from the flush calls of
 *            11.5.4; nothing is ordered by the epoch itself.
 *   load     Peer: MPI_Get (11.3.2) + MPI_Win_flush_local (11.5.4: a get
 *            is complete at the origin once the data is in the buffer).
 *            Own window: MPI_Win_sync, then a plain read (11.4: Win_sync
 *            makes completed RMA updates to the public copy visible to
 *            local loads in the separate model; in the unified model it is a
 *            memory barrier, 11.7 rules on public and private copies).
 *   load2d,  The 2-D forms (cs_load_rect, cs_store_rect): one MPI_Get /
 *   write2d  MPI_Put per row, then one MPI_Win_flush_local; the own window
 *            by memcpy per row, with MPI_Win_sync as for load and write.
 *   write    Peer (put): MPI_Put (11.3.1) + MPI_Win_flush_local, so the
 *            tile may be reused at once (11.3: the origin buffer must not
 *            change until local completion), but NOT completed at the
 *            target: like the device's DMA queue, a put lands by the next
 *            fence. Own window (store): memcpy + MPI_Win_sync rather than
 *            an MPI_Put to self: the store then costs no progress-engine
 *            round trip, and 11.7's rules allow a local store to a
 *            location no RMA op accesses concurrently, made visible to the
 *            public copy (for peers' later gets) by Win_sync (11.4, 11.5.4).
 *            A reducing put (opcmp 1 + sum): MPI_Accumulate MPI_SUM on
 *            MPI_FLOAT instead of MPI_Put, the same flush_local.
 *   notify   MPI_Fetch_and_op (11.3.4) with MPI_SUM (AtomicAdd) or
 *            MPI_REPLACE (Set) on the MPI_INT32_T cell, then MPI_Win_flush
 *            (11.5.4: complete at the target before the call returns, so
 *            the peer's next poll can see it). The fetched old value gives
 *            the value after, for the trace. Every access to a cell is an
 *            accumulate-family call on MPI_INT32_T (notify, the wait's
 *            MPI_NO_OP), so concurrent ones are atomic per element
 *            (11.7.1); the window keeps the default accumulate_ops
 *            same_op_no_op (11.2.7), which holds because the algorithms
 *            never race a Set with an Add on one cell.
 *   fence    MPI_Win_flush_all (11.5.4): every put and notify this rank
 *            issued is complete at its target before anything after. That
 *            is what orders a put before the notify that announces it:
 *            MPI orders neither puts among themselves nor a put with an
 *            accumulate (11.7.2 orders only accumulates, and only by the
 *            accumulate_ordering info), so an algorithm that leaves the
 *            fence out (--bug no-fence-before-notify) may read stale data.
 *   wait     Polls the own cell with MPI_Fetch_and_op(MPI_NO_OP) +
 *            MPI_Win_flush on the own rank (11.3.4, atomic against the
 *            notifies by 11.7.1), spinning, then yielding, then sleeping
 *            with a growing slice. Polling through MPI, not a local read,
 *            also drives the library's progress engine, which passive
 *            target needs in implementations without a progress thread
 *            (11.7.3). A wait past the device's timeout fails the rank.
 *   clocks   (traced runs only, cs_mpi_t.clocks) A notify first raises
 *            the target cell's uint64 clock word with MPI_Accumulate
 *            MPI_MAX (11.3.4) and completes it at the target with
 *            MPI_Win_flush (11.5.4), and only then changes the cell; the
 *            waiter reads the clock word (MPI_Fetch_and_op MPI_NO_OP +
 *            flush) after its poll saw the condition hold. The flush puts
 *            the clock's update in the target's window before the notify
 *            is even issued, so any later read of the word, in particular
 *            the waiter's after it saw the notify's effect, returns at
 *            least the notifier's clock: MPI orders accumulates only per
 *            location (11.7.2), so the order across the two locations
 *            comes from the flush, not from accumulate_ordering. Clock
 *            words are only touched by accumulate-family calls on
 *            MPI_UINT64_T (MAX, NO_OP), so they are atomic (11.7.1) and
 *            within same_op_no_op (11.2.7). The word may already hold a
 *            later notify's clock (MAX keeps the largest): the wait is
 *            then ordered after more than it saw, never after less.
 *   failure  cs__dev_fail and cs__dev_aborted call the stop op: one line
 *            naming the rank, then MPI_Abort (8.7), which ends every
 *            process of the job; MPI errors are fatal too (the window's
 *            default handler, MPI_ERRORS_ARE_FATAL, 8.3). A crash signal
 *            (an injected segv or abort, a defect) is caught the same
 *            way (crash_guard): one line naming the rank, MPI_Abort.
 *   wavefront A wait timeout or an injected hang first reports: the rank
 *            writes its wait state into its record in rank 0's second
 *            window (wf_win) with MPI_Rget_accumulate (11.3.5: the
 *            request completes only once the op is done at the target,
 *            so a rank 0 that makes no progress is given up on at a
 *            deadline instead of hanging the reporter). Rank 0, once it
 *            times out or sees a report in a long wait, sets every rank's
 *            request flag the same way; a rank in a wait reads its own
 *            flag (a local access, every 1024th poll and in every sleep)
 *            and reports too. After the grace period rank 0 prints the
 *            wavefront, lets a traced run write its records
 *            (cs_mpi_t.stop_trace) and calls MPI_Abort. Until a wait
 *            times out no rank writes a wavefront word, but a long wait
 *            reads its own (wf_asked: an MPI_Rget_accumulate NO_OP on
 *            this rank's window, no traffic) every 1024th poll and, once
 *            past the yield phase, every poll.
 *   watchdog With every rank on one node: a thread per rank beats in a
 *            shared window (MPI_Win_allocate_shared, 11.2.3) without MPI
 *            calls; a rank stuck inside MPI (its event still for twice
 *            the timeout plus 5 s) names the rank whose beat stopped and
 *            exits 3 (cs_mpi_t.wd, docs/mpi.md).
 *   guard    Outside a run (MPI_Init, the options' broadcast, opening
 *            and closing a case's windows, MPI_Finalize) every call is
 *            collective and no watchdog beats: a thread started before
 *            MPI_Init (cs_mpi_guard_start) ends the process with exit 3
 *            and one line when such a stretch lasts longer than
 *            COLLSIM_MPI_SETUP_LIMIT seconds (default 60).
 */
#define _GNU_SOURCE
#include "transport_mpi.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Bytes per MPI call: counts are int. */
#define MAX_CHUNK (1u << 30)
/* Wait backoff: polls in a tight loop, then polls with sched_yield, then
 * sleeps that double from SLEEP_MIN_NS up to SLEEP_MAX_NS between polls. */
#define SPIN_POLLS  64u
#define YIELD_POLLS 100000u
#define SLEEP_MIN_NS 1000ull
#define SLEEP_MAX_NS 1000000ull

static cs_mpi_t *tp(const cs_dev_t *d)
{
  return d->tport;
}

static void mpi_load(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                     void *dst, size_t nbytes)
{
  cs_mpi_t *m = tp(d);
  if (ev->peer == d->rank) {
    MPI_Win_sync(m->win);
    memcpy(dst, m->base + off, nbytes);
    return;
  }
  for (size_t done = 0; done < nbytes;) {
    int n = (int)(nbytes - done < MAX_CHUNK ? nbytes - done : MAX_CHUNK);
    MPI_Get((uint8_t *)dst + done, n, MPI_BYTE, (int)ev->peer,
            (MPI_Aint)(off + done), n, MPI_BYTE, m->win);
    done += (size_t)n;
  }
  MPI_Win_flush_local((int)ev->peer, m->win);
}

/* A reducing put (cs_put_reduce, fp32 sum): MPI_Accumulate MPI_SUM on
 * MPI_FLOAT (11.3.4), atomic per element against other accumulates
 * (11.7.1), then MPI_Win_flush_local as for a put; it lands by the next
 * fence like one. Own window too, through MPI, so a concurrent remote
 * accumulate into the same element stays atomic with it. */
static void mpi_accumulate(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                           const void *src, size_t nbytes)
{
  cs_mpi_t *m = tp(d);
  for (size_t done = 0; done < nbytes;) {
    int n = (int)(nbytes - done < MAX_CHUNK ? nbytes - done : MAX_CHUNK) / 4;
    MPI_Accumulate((const uint8_t *)src + done, n, MPI_FLOAT, (int)ev->peer,
                   (MPI_Aint)(off + done), n, MPI_FLOAT, MPI_SUM, m->win);
    done += (size_t)n * 4;
  }
  MPI_Win_flush_local((int)ev->peer, m->win);
}

static void mpi_write(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                      const void *src, size_t nbytes)
{
  cs_mpi_t *m = tp(d);
  if (ev->kind == CS_EV_PUT && cs__dev_put_reduces(ev->opcmp)) {
    mpi_accumulate(d, ev, off, src, nbytes);
    return;
  }
  if (ev->peer == d->rank) {
    memcpy(m->base + off, src, nbytes);
    MPI_Win_sync(m->win);
    return;
  }
  for (size_t done = 0; done < nbytes;) {
    int n = (int)(nbytes - done < MAX_CHUNK ? nbytes - done : MAX_CHUNK);
    MPI_Put((const uint8_t *)src + done, n, MPI_BYTE, (int)ev->peer,
            (MPI_Aint)(off + done), n, MPI_BYTE, m->win);
    done += (size_t)n;
  }
  MPI_Win_flush_local((int)ev->peer, m->win);
}

/* 2-D: one MPI_Get / MPI_Put per row (11.3), then one flush_local; the
 * own window by memcpy as in mpi_load / mpi_write. */
static void mpi_load2d(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                       void *dst, size_t rowbytes, uint32_t rows,
                       uint64_t pitch)
{
  cs_mpi_t *m = tp(d);
  if (ev->peer == d->rank)
    MPI_Win_sync(m->win);
  for (uint32_t i = 0; i < rows; i++) {
    uint8_t *to = (uint8_t *)dst + i * rowbytes;
    if (ev->peer == d->rank)
      memcpy(to, m->base + off + i * pitch, rowbytes);
    else
      MPI_Get(to, (int)rowbytes, MPI_BYTE, (int)ev->peer,
              (MPI_Aint)(off + i * pitch), (int)rowbytes, MPI_BYTE, m->win);
  }
  if (ev->peer != d->rank)
    MPI_Win_flush_local((int)ev->peer, m->win);
}

static void mpi_write2d(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                        const void *src, size_t rowbytes, uint32_t rows,
                        uint64_t pitch)
{
  cs_mpi_t *m = tp(d);
  for (uint32_t i = 0; i < rows; i++) {
    const uint8_t *from = (const uint8_t *)src + i * rowbytes;
    if (ev->peer == d->rank)
      memcpy(m->base + off + i * pitch, from, rowbytes);
    else
      MPI_Put(from, (int)rowbytes, MPI_BYTE, (int)ev->peer,
              (MPI_Aint)(off + i * pitch), (int)rowbytes, MPI_BYTE, m->win);
  }
  if (ev->peer == d->rank)
    MPI_Win_sync(m->win);
  else
    MPI_Win_flush_local((int)ev->peer, m->win);
}

/* The displacement of the clock word of the event's cell. */
static MPI_Aint clock_disp(const cs_mpi_t *m, const cs_event_t *ev)
{
  return (MPI_Aint)(m->clk_off[ev->slot] + (uint64_t)ev->cell * 8u);
}

static int32_t mpi_notify(cs_dev_t *d, cs_event_t *ev, uint64_t off)
{
  cs_mpi_t *m = tp(d);
  int32_t value = ev->value, old = 0;
  if (m->clocks && m->clk_off[ev->slot]) { /* clock before the notify */
    MPI_Accumulate(&m->clock, 1, MPI_UINT64_T, (int)ev->peer,
                   clock_disp(m, ev), 1, MPI_UINT64_T, MPI_MAX, m->win);
    MPI_Win_flush((int)ev->peer, m->win);
  }
  MPI_Op op = ev->opcmp == CS_NOTIFY_ADD ? MPI_SUM : MPI_REPLACE;
  MPI_Fetch_and_op(&value, &old, MPI_INT32_T, (int)ev->peer, (MPI_Aint)off,
                   op, m->win);
  MPI_Win_flush((int)ev->peer, m->win);
  return ev->opcmp == CS_NOTIFY_ADD ? (int32_t)((uint32_t)old + (uint32_t)value)
                                    : value;
}

/* The own cell at `off`, read atomically against the notifies. */
static int32_t poll_cell(cs_mpi_t *m, uint64_t off)
{
  int32_t none = 0, v = 0;
  MPI_Fetch_and_op(&none, &v, MPI_INT32_T, m->rank, (MPI_Aint)off, MPI_NO_OP,
                   m->win);
  MPI_Win_flush(m->rank, m->win);
  return v;
}

static inline int satisfied(int32_t v, uint32_t cmp, int32_t want)
{
  return cmp == CS_CMP_EQ ? v == want : v >= want;
}

/* ------------------------------------------------------------ wavefront */

/* Words of the wavefront windows (cs_mpi_t.wf_win): word 0 of every
 * other rank's is its request flag (rank 0 sets it: report now), rank
 * 0's says it has finished its body (WF_DONE: it sets it itself); rank
 * 0's word 1 counts the reports, and rank r's record is the
 * CS_MPI_WF_REC words from WF_REC(r). */
#define WF_ASK   0u
#define WF_DONE  0u
#define WF_COUNT 1u
#define WF_REC(r) (2u + (uint64_t)(r) * CS_MPI_WF_REC)

static void nap(uint64_t ns)
{
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  nanosleep(&ts, NULL);
}

int cs_mpi_complete_by(MPI_Request *rq, uint64_t deadline)
{
  for (;;) {
    int done = 0;
    MPI_Test(rq, &done, MPI_STATUS_IGNORE);
    if (done)
      return 0;
    if (cs_now_ns() >= deadline)
      return -1;
    nap(100000);
  }
}

/* n int64 words at `word` of rank `to`'s wavefront window, combined with
 * `origin` by op (MPI_REPLACE, MPI_SUM, MPI_NO_OP), the old words into
 * res: MPI_Rget_accumulate (11.3.5), whose request completes only when
 * the result is back, so the op is done at the target (no flush needed).
 * Returns 0, or -1 if it had not completed by `deadline` (the target
 * makes no progress: over TCP, a rank outside MPI calls). Every word is
 * only accessed by accumulate-family calls on MPI_INT64_T, with one op and
 * MPI_NO_OP per word (11.2.7 same_op_no_op, 11.7.1 atomicity). */
static int wf_op(cs_mpi_t *m, int to, const int64_t *origin, int64_t *res,
                 int n, uint64_t word, MPI_Op op, uint64_t deadline)
{
  MPI_Request rq;
  MPI_Rget_accumulate(origin, n, MPI_INT64_T, res, n, MPI_INT64_T, to,
                      (MPI_Aint)word, n, MPI_INT64_T, op, m->wf_win, &rq);
  return cs_mpi_complete_by(&rq, deadline);
}

/* One own word of the wavefront window (a local access, no traffic). */
static int64_t wf_own(cs_mpi_t *m, uint64_t word)
{
  int64_t none = 0, v = 0;
  wf_op(m, m->rank, &none, &v, 1, word, MPI_NO_OP, UINT64_MAX);
  return v;
}

/* How long rank 0 waits for the other ranks' reports after its own:
 * the timeout, at least 0.5 s, at most 2 s. */
static uint64_t wf_grace(const cs_dev_t *d)
{
  uint64_t g = d->timeout_ns;
  return g < 500000000ull ? 500000000ull : g > 2000000000ull ? 2000000000ull : g;
}

/* This rank's state (its wait, or its hang) into its record at rank 0:
 * the fields, then the count of reports, then its order, which marks the
 * record complete. Returns its order (1: the first report), or -1 if
 * rank 0 took none by deadline. */
static int64_t wf_report(cs_dev_t *d, uint64_t deadline)
{
  cs_mpi_t *m = tp(d);
  const cs_rank_status_t *st = d->st;
  int32_t v = 0;
  if (st->state == CS_RS_WAITING && st->wait_slot < d->layout->nslots)
    v = poll_cell(m, cs_slot_cell_off(&d->layout->slot[st->wait_slot],
                                      st->wait_cell));
  /* Static: an op given up on may still complete into them later (this
   * runs once, on the way to MPI_Abort). */
  static int64_t rec[CS_MPI_WF_REC - 1], old[CS_MPI_WF_REC], one = 1, order;
  int64_t mine[CS_MPI_WF_REC - 1] = {st->state, (int64_t)st->event,
                                     st->wait_slot, st->wait_cell,
                                     st->wait_cmp, st->wait_value, v};
  memcpy(rec, mine, sizeof(rec));
  uint64_t at = WF_REC(m->rank);
  if (wf_op(m, 0, rec, old, CS_MPI_WF_REC - 1, at + 1, MPI_REPLACE,
            deadline) < 0 ||
      wf_op(m, 0, &one, &order, 1, WF_COUNT, MPI_SUM, deadline) < 0)
    return -1;
  order += 1;
  return wf_op(m, 0, &order, old, 1, at, MPI_REPLACE, deadline) < 0 ? -1
                                                                     : order;
}

/* Rank 0: asks every other rank to report now (a rank in a wait sees
 * it within a few ms), then waits up to `grace_ns` for every report.
 * A rank that makes no progress leaves its request pending. */
static void wf_gather(cs_mpi_t *m, uint64_t grace_ns)
{
  uint64_t end = cs_now_ns() + grace_ns;
  static const int64_t ask = 1;
  static int64_t old[CS_MAX_RANKS]; /* a pending op may complete later */
  MPI_Request rq[CS_MAX_RANKS];
  for (int r = 1; r < m->nranks; r++)
    MPI_Rget_accumulate(&ask, 1, MPI_INT64_T, &old[r], 1, MPI_INT64_T, r,
                        WF_ASK, 1, MPI_INT64_T, MPI_REPLACE, m->wf_win, &rq[r]);
  while (wf_own(m, WF_COUNT) < m->nranks && cs_now_ns() < end) {
    for (int r = 1; r < m->nranks; r++) { /* a done one becomes NULL */
      int flag = 0;
      if (rq[r] != MPI_REQUEST_NULL)
        MPI_Test(&rq[r], &flag, MPI_STATUS_IGNORE);
    }
    nap(1000000);
  }
}

/* Rank 0: the wavefront, one line per rank, in the words of collsim
 * run's (sim/launch.h). */
static void wf_print(cs_dev_t *d)
{
  cs_mpi_t *m = tp(d);
  fprintf(m->report, "hang wavefront:\n");
  for (uint32_t r = 0; r < (uint32_t)m->nranks; r++) {
    int64_t x[CS_MPI_WF_REC], none[CS_MPI_WF_REC] = {0};
    wf_op(m, 0, none, x, CS_MPI_WF_REC, WF_REC(r), MPI_NO_OP, UINT64_MAX);
    if (!x[0]) {
      fprintf(m->report, "  rank %u: no report (not in a wait: computing, or "
              "stuck in an MPI call to a rank that makes no progress, or "
              "dead)\n", r);
    } else if (x[1] == CS_RS_WAITING && (uint64_t)x[3] < d->layout->nslots) {
      cs_wait_line_t l = {.rank = r, .event = (uint64_t)x[2],
                          .slot_name = d->layout->slot[x[3]].name,
                          .slot = (uint32_t)x[3], .cell = (uint32_t)x[4],
                          .cmp = (uint32_t)x[5], .target = (int32_t)x[6],
                          .value = (int32_t)x[7]};
      cs_launch_print_wait(&l, &m->where, m->report);
    } else {
      cs_launch_print_state(r, (uint32_t)x[1], (uint64_t)x[2], m->report);
    }
  }
}

/* Rank 0: who reported, and what (for the trace). */
static void wf_who(cs_mpi_t *m, cs_mpi_stopped_t *who)
{
  memset(who, 0, sizeof(*who));
  who->first = -1;
  for (int r = 0; r < m->nranks; r++) {
    int64_t x[CS_MPI_WF_REC], none[CS_MPI_WF_REC] = {0};
    wf_op(m, 0, none, x, CS_MPI_WF_REC, WF_REC(r), MPI_NO_OP, UINT64_MAX);
    who->reported[r] = x[0] != 0;
    who->hung[r] = x[0] != 0 && x[1] == CS_RS_HUNG;
    who->event[r] = (uint64_t)x[2];
    if (x[0] == 1)
      who->first = r;
  }
}

/* This rank's wait passed the timeout and rank 0 took no wavefront: it
 * is in no wait. The headline names the rank that makes no progress:
 * rank 0 unless it has finished its body (WF_DONE; an unanswered read
 * means it is stuck); then the lowest other rank that gave no report
 * while this one waited (stopped by a signal, in a loop, stuck in an MPI
 * call); none: this rank's own line is the headline. */
static int wd_stopped(cs_mpi_t *m);
static void no_wavefront_headline(cs_dev_t *d)
{
  cs_mpi_t *m = tp(d);
  int gone = wd_stopped(m);
  if (gone >= 0) { /* its process does not run: that one, whoever waits */
    fprintf(m->report, "%s: rank %d: no progress: its process does not run "
            "(stopped by a signal, or dead); rank %u's wait passed the %.1f "
            "s timeout waiting for it\n", m->cmd, gone, m->rank,
            (double)d->timeout_ns / 1e9);
    return;
  }
  static int64_t done, x[CS_MPI_WF_REC]; /* may complete after a give-up */
  static const int64_t none[CS_MPI_WF_REC];
  uint64_t by = cs_now_ns() + 200000000ull;
  int silent = -1;
  if (wf_op(m, 0, none, &done, 1, WF_DONE, MPI_NO_OP, by) < 0)
    done = 0;
  for (int r = 1; done && r < m->nranks && silent < 0; r++)
    if (r != m->rank &&
        wf_op(m, 0, none, x, CS_MPI_WF_REC, WF_REC(r), MPI_NO_OP, by) == 0 &&
        !x[0])
      silent = r;
  if (done && silent < 0)
    return;
  fprintf(m->report, "%s: rank %d: no progress: in no wait when rank %u's "
          "wait passed the %.1f s timeout, and no report since (stopped by "
          "a signal, in a loop, or stuck in an MPI call); the other ranks "
          "waited for it\n", m->cmd, done ? silent : 0, m->rank,
          (double)d->timeout_ns / 1e9);
}

/* Rank 0's headline over the reports it gathered: the rank the others
 * waited for, as collsim run's names it. */
static void wf_headline(cs_dev_t *d, const cs_mpi_stopped_t *w, const char *msg)
{
  cs_mpi_t *m = tp(d);
  /* A hung rank before the waiter whose timer fired. */
  int hung = -1, silent = -1;
  for (int r = 0; r < m->nranks && hung < 0; r++)
    hung = w->hung[r] ? r : -1;
  /* Else a rank that gave no report: not in a wait while the ranks
   * that reported are (stopped by a signal, in a loop, or stuck),
   * as collsim run names a stopped rank before the waiter. */
  for (int r = 0; r < m->nranks && silent < 0; r++)
    silent = w->reported[r] ? -1 : r;
  /* A silent rank may be stuck in an MPI call to one whose process is
   * stopped (MPICH): the beats tell which of them does not run. */
  int gone = hung < 0 && silent >= 0 ? wd_stopped(m) : -1;
  char line[128];
  if (gone >= 0) {
    fprintf(m->report, "%s: rank %d: no progress: its process does not "
            "run (stopped by a signal, or dead); a wait passed the %.1f s "
            "timeout waiting for it\n", m->cmd, gone,
            (double)d->timeout_ns / 1e9);
  } else if (hung >= 0) {
    cs_dev_hang_str(line, sizeof line, (uint32_t)hung, w->event[hung],
                    d->timeout_ns);
    fprintf(m->report, "%s: %s\n", m->cmd, line);
  } else if (silent >= 0) {
    fprintf(m->report, "%s: rank %d: no progress: in no wait when a wait "
            "passed the %.1f s timeout, and no report since (stopped "
            "by a signal, in a loop, or stuck in an MPI call); the ranks "
            "that reported waited for it\n", m->cmd, silent,
            (double)d->timeout_ns / 1e9);
  } else if (msg)
    fprintf(m->report, "%s: %s\n", m->cmd, msg);
  else
    fprintf(m->report, "%s: rank %d reported a wait past the %.1f s "
            "timeout; rank 0 stops the run\n", m->cmd, w->first,
            (double)d->timeout_ns / 1e9);
}

/* A wait (or an injected hang) passed the timeout here (msg: its line),
 * or this rank, in a wait, saw a request (msg NULL): report this rank's
 * state to rank 0. Rank 0 asks the others, waits for their reports,
 * prints the wavefront and ends the job; another rank waits for that,
 * and ends the job itself, with its own line, if rank 0 has not within
 * the timeout and the grace period (rank 0 is not in a wait). */
static _Noreturn void hang_stop(cs_dev_t *d, int rx, const char *msg)
{
  cs_mpi_t *m = tp(d);
  uint64_t grace = wf_grace(d);
  uint64_t bound = cs_now_ns() + d->timeout_ns + grace + 1000000000ull;
  int code = m->abort_code ? m->abort_code : rx;
  int64_t order = wf_report(d, bound);
  int reported = order > 0;
  if (m->rank == 0) {
    wf_gather(m, grace);
    cs_mpi_stopped_t who;
    wf_who(m, &who);
    wf_headline(d, &who, msg);
    wf_print(d);
    fflush(m->report);
    if (m->stop_trace)
      m->stop_trace(m, m->stop_trace_arg, &who, cs_now_ns() + 2000000000ull);
    /* MPICH's launcher drops what it has not forwarded yet when the
     * abort reaches it (seen: the whole wavefront lost in 2 of 6 runs). */
    nap(200000000);
    MPI_Abort(m->comm, code);
  }
  if (reported && m->stop_trace)
    m->stop_trace(m, m->stop_trace_arg, NULL, bound);
  while (reported && cs_now_ns() < bound) { /* rank 0 ends the job */
    int flag = 0; /* meanwhile progress for peers' RMA on this rank's
                     windows (11.7.3), so rank 0 can reach its wait */
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, m->comm, &flag, MPI_STATUS_IGNORE);
    nap(1000000);
  }
  if (order <= 1 && rx != CS_RX_HUNG) /* a later report: the first's */
    no_wavefront_headline(d);
  else if (order > 1) /* the first looks at the beats for 0.3 s, then may
                         read each rank's report (0.2 s each at most):
                         its headline first (a 0.3 s nap here once lost
                         the race, 1 of 6 runs) */
    nap(500000000ull + 200000000ull *
                           (uint64_t)(m->nranks < 8 ? m->nranks : 8));
  if (msg)
    fprintf(m->report, "%s: %s (rank 0 printed no wavefront: it is "
            "not in a wait)\n", m->cmd, msg);
  else
    fprintf(m->report, "%s: rank %d: stopped for the wavefront, which "
            "rank 0 did not print\n", m->cmd, m->rank);
  if (m->stop_trace)
    fprintf(m->report, "%s: rank %d: no trace was written: rank 0 was "
            "not in a wait, so nobody gathered the records\n", m->cmd, m->rank);
  fflush(m->report);
  nap(200000000); /* as above: let the launcher forward the line */
  MPI_Abort(m->comm, code);
  _exit(code); /* not reached: MPI_Abort does not return */
}

/* In a wait that lasts: 1 if the wavefront is being taken (rank 0: a
 * rank reported; another rank: rank 0 asked). Local words only. */
static int wf_asked(cs_mpi_t *m)
{
  return wf_own(m, m->rank == 0 ? WF_COUNT : WF_ASK) != 0;
}

static _Noreturn void wait_timed_out(cs_dev_t *d, const cs_event_t *ev,
                                     int32_t v)
{
  cs__dev_fail(d, CS_ABORT_TIMEOUT, CS_RX_TIMEOUT,
               "rank %u: wait timed out after %.1f s at event %llu "
               "(slot '%s' cell %u %s %d, value %d)",
               d->rank, (double)d->timeout_ns / 1e9,
               (unsigned long long)ev->index, d->layout->slot[ev->slot].name,
               ev->cell, ev->opcmp == CS_CMP_EQ ? "==" : ">=", ev->value, v);
}

/* A wait held: the clock joins what the cell's notifiers knew. */
static int32_t join_clock(cs_mpi_t *m, const cs_event_t *ev, int32_t v)
{
  if (!m->clocks || !m->clk_off[ev->slot])
    return v;
  uint64_t none = 0, word = 0;
  MPI_Fetch_and_op(&none, &word, MPI_UINT64_T, m->rank, clock_disp(m, ev),
                   MPI_NO_OP, m->win);
  MPI_Win_flush(m->rank, m->win);
  if (word > m->clock)
    m->clock = word;
  return v;
}

static int32_t mpi_wait(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  cs_mpi_t *m = tp(d);
  int32_t v = poll_cell(m, off);
  if (satisfied(v, ev->opcmp, ev->value))
    return join_clock(m, ev, v);

  cs__dev_block(d, ev, v);
  cs_rank_status_t *st = d->st;
  st->wait_slot = ev->slot;
  st->wait_cell = ev->cell;
  st->wait_value = ev->value;
  st->wait_cmp = ev->opcmp;
  st->state = CS_RS_WAITING;
  uint64_t deadline = cs_now_ns() + d->timeout_ns, sleep_ns = SLEEP_MIN_NS;
  for (uint32_t i = 1;; i++) {
    v = poll_cell(m, off);
    if (satisfied(v, ev->opcmp, ev->value))
      break;
    if (i < SPIN_POLLS)
      continue;
    if (cs_now_ns() >= deadline)
      wait_timed_out(d, ev, v);
    if ((i >= SPIN_POLLS + YIELD_POLLS || i % 1024 == 0) && wf_asked(m))
      hang_stop(d, CS_RX_ABORTED, NULL); /* the wavefront is being taken */
    if (i < SPIN_POLLS + YIELD_POLLS) {
      sched_yield();
      continue;
    }
    struct timespec ts = {0, (long)sleep_ns};
    nanosleep(&ts, NULL);
    sleep_ns = sleep_ns * 2 < SLEEP_MAX_NS ? sleep_ns * 2 : SLEEP_MAX_NS;
  }
  st->state = CS_RS_RUNNING;
  return join_clock(m, ev, v);
}

static void mpi_fence(cs_dev_t *d, const cs_event_t *ev)
{
  (void)ev;
  MPI_Win_flush_all(tp(d)->win);
}

static void mpi_done(cs_dev_t *d)
{
  cs_mpi_t *m = tp(d);
  MPI_Win_flush_all(m->win);
  if (m->rank == 0) { /* for a rank whose wait times out later */
    static const int64_t one = 1;
    int64_t old;
    wf_op(m, 0, &one, &old, 1, WF_DONE, MPI_REPLACE, UINT64_MAX);
  }
}

static void mpi_stop(cs_dev_t *d, int rx)
{
  const cs_ctl_t *c = d->world->ctl;
  if (rx == CS_RX_TIMEOUT || rx == CS_RX_HUNG)
    hang_stop(d, rx, c->abort_msg);
  if (rx == CS_RX_ABORTED)
    fprintf(tp(d)->report, "%s: rank %u: stopped because the run was "
            "aborted\n", tp(d)->cmd, d->rank);
  else
    fprintf(tp(d)->report, "%s: %s\n", tp(d)->cmd, c->abort_msg);
  fflush(tp(d)->report);
  MPI_Abort(tp(d)->comm, tp(d)->abort_code ? tp(d)->abort_code : rx);
}

/* ------------------------------------------------------------ crashes */

/* A crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT: an injected segv or
 * abort fault, or a defect) would end this rank with the signal and the
 * job with the launcher's own report and status (Open MPI's 139 for
 * SIGSEGV). No launcher of ours watches the ranks, so the rank names
 * itself as collsim run's launcher names it ("rank 1: killed by SIGSEGV
 * at event 4"), one line, and ends the job with MPI_Abort (exit 3).
 * Between cs_mpi_dev_init and cs_mpi_close only; elsewhere the signal
 * takes the action it had before (the MPI library's handler, if it set
 * one). MPI_Abort is not async-signal-safe: an alarm bounds a handler
 * stuck in it (SIGALRM's default action ends the process; SA_RESETHAND: a
 * second crash ends it with that signal). */
static const int crash_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NCRASH (sizeof(crash_sigs) / sizeof(crash_sigs[0]))
static struct sigaction crash_old[NCRASH];
static stack_t crash_old_stack;
static int crash_set;
static cs_mpi_t *volatile crash_m;
static const cs_rank_status_t *volatile crash_st;
static uint32_t crash_rank;

/* Appends s to buf at *n (at most cap - 1 bytes in all). */
static void put_str(char *buf, size_t cap, size_t *n, const char *s)
{
  while (*s && *n + 1 < cap)
    buf[(*n)++] = *s++;
}

static void put_u64(char *buf, size_t cap, size_t *n, uint64_t v)
{
  char dig[24];
  int k = 0;
  do
    dig[k++] = (char)('0' + v % 10);
  while ((v /= 10) && k < (int)sizeof(dig));
  while (k > 0 && *n + 1 < cap)
    buf[(*n)++] = dig[--k];
}

static void on_crash(int sig)
{
  cs_mpi_t *m = crash_m;
  const cs_rank_status_t *st = crash_st;
  if (!m || !st) {
    raise(sig); /* SA_RESETHAND: the default action */
    return;
  }
  char line[192];
  size_t n = 0;
  const char *abbrev = sigabbrev_np(sig);
  put_str(line, sizeof line, &n, m->cmd ? m->cmd : "collsim-mpi");
  put_str(line, sizeof line, &n, ": rank ");
  put_u64(line, sizeof line, &n, crash_rank);
  put_str(line, sizeof line, &n, ": killed by SIG");
  put_str(line, sizeof line, &n, abbrev ? abbrev : "?");
  put_str(line, sizeof line, &n, " at event ");
  put_u64(line, sizeof line, &n, st->event);
  line[n++] = '\n';
  /* report's descriptor as the command has set it by now (a field read:
   * no lock is taken); stderr's when there is none */
  int fd = m->report ? fileno_unlocked(m->report) : -1;
  if (write(fd >= 0 ? fd : STDERR_FILENO, line, n) < 0)
    n = 0;
  alarm(5);
  /* As hang_stop: let the launcher forward the line before the abort. */
  struct timespec ts = {0, 200000000};
  nanosleep(&ts, NULL);
  MPI_Abort(m->comm, m->abort_code ? m->abort_code : CS_RX_FAULT);
  _exit(m->abort_code ? m->abort_code : CS_RX_FAULT);
}

static void crash_guard(cs_mpi_t *m, const cs_dev_t *d)
{
  static char stack[1 << 16]; /* a crash on an overflowed stack still reports */
  stack_t ss = {.ss_sp = stack, .ss_size = sizeof(stack)};
  sigaltstack(&ss, &crash_old_stack);
  crash_rank = d->rank;
  crash_st = d->st;
  crash_m = m;
  struct sigaction sa = {.sa_handler = on_crash,
                         .sa_flags = SA_ONSTACK | SA_RESETHAND};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NCRASH; i++)
    sigaction(crash_sigs[i], &sa, &crash_old[i]);
  crash_set = 1;
}

static void crash_unguard(void)
{
  crash_m = NULL;
  crash_st = NULL;
  if (!crash_set)
    return;
  for (size_t i = 0; i < NCRASH; i++)
    sigaction(crash_sigs[i], &crash_old[i], NULL);
  sigaltstack(&crash_old_stack, NULL);
  crash_set = 0;
}

const cs_dev_ops_t cs_transport_mpi = {
    .name = "mpi",
    .point = NULL,
    .load = mpi_load,
    .view = NULL, /* peers' memory is never mapped: loads copy */
    .write = mpi_write,
    .load2d = mpi_load2d,
    .write2d = mpi_write2d,
    .notify = mpi_notify,
    .wait = mpi_wait,
    .fence = mpi_fence,
    .done = mpi_done,
    .stop = mpi_stop,
    .crash_handled = 1, /* crash_guard */
};

/* ------------------------------------------------------------ watchdog */

#define WD_WORDS 8 /* a beat: tick, then spare words; 64 bytes */

static int64_t wd_tick(const cs_mpi_t *m, int r)
{
  return __atomic_load_n(&m->wd[(size_t)r * WD_WORDS], __ATOMIC_RELAXED);
}

/* This rank is stuck inside MPI: names the lowest other rank whose beat
 * stopped `stale_ns` ago or more, if any (the first rank to claim the
 * last word prints), and ends the process. Returns if no beat stopped. */
static void wd_fire(cs_mpi_t *m, const cs_dev_t *d, const uint64_t *seen_at,
                    uint64_t now)
{
  int who = -1;
  for (int r = 0; r < m->nranks && who < 0; r++)
    who = r != m->rank && now - seen_at[r] >= 1500000000ull ? r : -1;
  if (who < 0)
    return;
  int64_t none = 0;
  if (__atomic_compare_exchange_n(&m->wd[(size_t)m->nranks * WD_WORDS], &none,
                                  m->rank + 1, 0, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    char line[320];
    int n = snprintf(line, sizeof line, "%s: rank %d: no progress: its "
                     "process has not run for %.1f s (stopped by a signal, "
                     "or dead); rank %d waited for it inside an MPI call "
                     "at event %llu, where no wait timeout can fire\n",
                     m->cmd, who, (double)(now - seen_at[who]) / 1e9,
                     m->rank, (unsigned long long)__atomic_load_n(
                         &d->st->event, __ATOMIC_RELAXED));
    if (n > 0 && write(fileno(m->report), line,
                       (size_t)n < sizeof line ? (size_t)n : sizeof line) < 0)
      n = 0;
  } else
    nap(500000000); /* the first rank's line goes first */
  _exit(3); /* CS_EXIT_ABORTED: the run aborted */
}

static void *wd_main(void *arg)
{
  const cs_dev_t *d = arg;
  cs_mpi_t *m = tp(d);
  uint64_t limit = 2 * d->timeout_ns + 5000000000ull, now = cs_now_ns();
  uint64_t since = now, seen_at[CS_MAX_RANKS];
  int64_t seen[CS_MAX_RANKS];
  for (int r = 0; r < m->nranks; r++)
    seen[r] = wd_tick(m, r), seen_at[r] = now;
  uint64_t last = UINT64_MAX;
  while (!__atomic_load_n(&m->wd_quit, __ATOMIC_RELAXED)) {
    nap(100000000);
    __atomic_fetch_add(&m->wd[(size_t)m->rank * WD_WORDS], 1, __ATOMIC_RELAXED);
    now = cs_now_ns();
    for (int r = 0; r < m->nranks; r++)
      if (wd_tick(m, r) != seen[r])
        seen[r] = wd_tick(m, r), seen_at[r] = now;
    uint64_t ev = __atomic_load_n(&d->st->event, __ATOMIC_RELAXED);
    if (ev != last || d->st->state == CS_RS_DONE) {
      last = ev;
      since = now;
    } else if (now - since >= limit)
      wd_fire(m, d, seen_at, now);
  }
  return NULL;
}

/* The lowest other rank whose beat does not move for 0.3 s (its process
 * does not run), or -1 (none, or no watchdog). */
static int wd_stopped(cs_mpi_t *m)
{
  if (!m->wd || !m->wd_thread)
    return -1;
  int64_t t0[CS_MAX_RANKS];
  for (int r = 0; r < m->nranks; r++)
    t0[r] = wd_tick(m, r);
  nap(300000000);
  for (int r = 0; r < m->nranks; r++)
    if (r != m->rank && wd_tick(m, r) == t0[r])
      return r;
  return -1;
}

/* Collective over m->comm: the beats, when every rank is on this node. */
static void wd_open(cs_mpi_t *m)
{
  int nn = 0;
  m->node = MPI_COMM_NULL;
  MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, m->rank, MPI_INFO_NULL,
                      &m->node);
  MPI_Comm_size(m->node, &nn);
  MPI_Aint bytes = nn == m->nranks && m->rank == 0
                       ? (MPI_Aint)((m->nranks + 1) * WD_WORDS * 8) : 0;
  void *mine = NULL;
  /* Open MPI's osc pt2pt (the TCP path) has no shared windows: then no
   * watchdog, rather than a fatal error. */
  MPI_Comm_set_errhandler(m->node, MPI_ERRORS_RETURN);
  m->wd_win = MPI_WIN_NULL;
  int ok = MPI_Win_allocate_shared(bytes, 8, MPI_INFO_NULL, m->node, &mine,
                                   &m->wd_win) == MPI_SUCCESS;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, m->comm);
  MPI_Aint size = 0;
  int disp = 0;
  void *at = NULL;
  if (ok)
    MPI_Win_shared_query(m->wd_win, 0, &size, &disp, &at);
  else
    bytes = 0;
  if (m->rank == 0 && bytes)
    memset(at, 0, (size_t)bytes);
  MPI_Barrier(m->comm);
  m->wd = ok && nn == m->nranks &&
                  size >= (MPI_Aint)((m->nranks + 1) * WD_WORDS * 8)
              ? at : NULL;
}

/* The thread, once the device is set up (needs d->st and the timeout). */
static void wd_start(cs_mpi_t *m, const cs_dev_t *d)
{
  pthread_t *t = m->wd && getenv("COLLSIM_MPI_NO_WATCHDOG") == NULL
                     ? malloc(sizeof *t) : NULL;
  if (t && pthread_create(t, NULL, wd_main, (void *)d) != 0) {
    free(t);
    t = NULL;
  }
  if (t) /* tests/test_mpi.sh waits for it before stopping a rank */
    pthread_setname_np(*t, "cs-watchdog");
  m->wd_thread = t;
}

static void wd_close(cs_mpi_t *m)
{
  if (m->wd_thread) {
    __atomic_store_n(&m->wd_quit, 1, __ATOMIC_RELAXED);
    pthread_join(*(pthread_t *)m->wd_thread, NULL);
    free(m->wd_thread);
    m->wd_thread = NULL;
  }
  if (m->wd_win != MPI_WIN_NULL)
    MPI_Win_free(&m->wd_win);
  MPI_Comm_free(&m->node);
  m->wd = NULL;
}

/* ------------------------------------------------------------ guard */

/* since: when the stretch outside a run began (0: in a run, or off);
 * rank: this rank, from the launcher's environment until MPI knows it. */
static struct {
  uint64_t since, limit;
  int rank;
  const char *cmd; /* the command's name, which starts the line */
  int fd;          /* where the line goes */
} guard;

static void *guard_main(void *arg)
{
  (void)arg;
  for (;;) {
    nap(200000000);
    uint64_t s = __atomic_load_n(&guard.since, __ATOMIC_ACQUIRE);
    uint64_t lim = __atomic_load_n(&guard.limit, __ATOMIC_RELAXED);
    uint64_t now = cs_now_ns();
    if (!s || !lim || now - s < lim)
      continue;
    int r = __atomic_load_n(&guard.rank, __ATOMIC_RELAXED);
    nap((uint64_t)(r > 0 && r < 64 ? r : 0) * 300000000ull); /* rank order */
    char line[400];
    int n = snprintf(line, sizeof line, "%s: rank %d: no progress: "
                     "the job's MPI setup or teardown (MPI_Init, opening or "
                     "closing a case's windows, MPI_Finalize: calls every "
                     "rank must make) has not finished after %.0f s; a rank "
                     "stopped by a signal, dead or never started holds it, "
                     "and outside a run none can be named "
                     "(COLLSIM_MPI_SETUP_LIMIT sets the limit)\n",
                     guard.cmd, r, (double)lim / 1e9);
    if (n > 0 && write(guard.fd, line, (size_t)n < sizeof line ? (size_t)n
                                                        : sizeof line) < 0)
      n = 0;
    _exit(3); /* CS_EXIT_ABORTED */
  }
  return NULL;
}

int cs_mpi_guard_start(const char *cmd, int fd)
{
  guard.cmd = cmd;
  guard.fd = fd;
  const char *e = getenv("COLLSIM_MPI_SETUP_LIMIT");
  double lim = 60;
  if (e && *e) {
    char *end;
    errno = 0;
    lim = strtod(e, &end);
    if (errno || *end || !(lim >= 0 && lim <= 86400))
      return -EINVAL;
  }
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r)
    r = getenv("PMI_RANK");
  guard.rank = r ? atoi(r) : 0;
  if (lim == 0)
    return 0; /* off */
  __atomic_store_n(&guard.limit, (uint64_t)(lim * 1e9), __ATOMIC_RELAXED);
  __atomic_store_n(&guard.since, cs_now_ns(), __ATOMIC_RELEASE);
  pthread_t t;
  pthread_attr_t a;
  if (pthread_attr_init(&a) != 0)
    return -ENOMEM;
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&t, &a, guard_main, NULL);
  pthread_attr_destroy(&a);
  if (rc != 0) {
    guard.since = 0;
    return -rc;
  }
  pthread_setname_np(t, "cs-guard");
  return 0;
}

void cs_mpi_guard_in_run(int in_run)
{
  if (!__atomic_load_n(&guard.limit, __ATOMIC_RELAXED))
    return;
  __atomic_store_n(&guard.since, in_run ? 0 : cs_now_ns(), __ATOMIC_RELEASE);
}

void cs_mpi_guard_stop(void)
{
  __atomic_store_n(&guard.since, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&guard.limit, 0, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------ window */

/* With clocks: one 8-byte word per cell of the signal slot clock_slot
 * (its cells are 4-byte), past the slots; no other slot has any. Returns
 * the window's bytes. */
static uint64_t clock_layout(cs_mpi_t *m, const cs_layout_t *l, int clock_slot)
{
  uint64_t end = (l->win_bytes + 7u) / 8u * 8u;
  m->clocks = clock_slot >= 0 && (uint32_t)clock_slot < l->nslots &&
              clock_slot < CS_MAX_SLOTS &&
              l->slot[clock_slot].esize == sizeof(int32_t);
  if (!m->clocks)
    return l->win_bytes;
  m->clk_off[clock_slot] = end;
  m->clock_words = l->slot[clock_slot].nbytes / sizeof(int32_t);
  return end + m->clock_words * 8u;
}

int cs_mpi_open(cs_mpi_t *m, MPI_Comm comm, const cs_layout_t *l,
                int clock_slot)
{
  memset(m, 0, sizeof(*m));
  m->comm = comm;
  m->report = stderr; /* until the command says otherwise */
  m->cmd = "collsim-mpi";
  MPI_Comm_rank(comm, &m->rank);
  MPI_Comm_size(comm, &m->nranks);
  if (m->nranks < 1 || m->nranks > CS_MAX_RANKS)
    return -EINVAL;
  /* Whole 64-byte lines: MPICH 4.0.2's shared-memory windows place rank
   * r's memory right after rank r-1's, but its MPI_Get from a window
   * whose start is not 16-byte aligned reads the wrong bytes (seen with
   * two ranks of 136 B each: rank 0's get of rank 1's window). */
  m->bytes = (clock_layout(m, l, clock_slot) + 63u) / 64u * 64u;
  void *base = NULL;
  MPI_Win_allocate((MPI_Aint)(m->bytes ? m->bytes : 1), 1, MPI_INFO_NULL,
                   comm, &base, &m->win);
  m->base = base;
  int *model = NULL, found = 0;
  MPI_Win_get_attr(m->win, MPI_WIN_MODEL, &model, &found);
  m->unified = found && model && *model == MPI_WIN_UNIFIED;
  /* Zeroed before any rank may reach it: the barrier below comes after
   * every rank's memset and Win_sync. */
  memset(m->base, 0, m->bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, m->win);
  MPI_Win_sync(m->win);
  uint64_t wf_bytes = (m->rank == 0 ? CS_MPI_WF_WORDS(m->nranks) : 1u) * 8u;
  void *wf = NULL;
  MPI_Win_allocate((MPI_Aint)wf_bytes, 8, MPI_INFO_NULL, comm, &wf,
                   &m->wf_win);
  m->wf_base = wf;
  if (wf_bytes)
    memset(wf, 0, wf_bytes);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, m->wf_win);
  MPI_Win_sync(m->wf_win);
  MPI_Barrier(comm);
  wd_open(m);
  return 0;
}

int cs_mpi_dev_init(cs_dev_t *d, cs_mpi_t *m, cs_world_t *w,
                    const cs_fault_t *fault)
{
  int err = cs_dev_init(d, w, (uint32_t)m->rank, fault, &cs_transport_mpi);
  if (err < 0)
    return err;
  d->tport = m;
  d->mywin = m->base;
  crash_guard(m, d);
  wd_start(m, d);
  /* the run: its waits time out, and the watchdog covers MPI calls */
  __atomic_store_n(&guard.rank, m->rank, __ATOMIC_RELAXED);
  cs_mpi_guard_in_run(1);
  /* Every base is the own window: cs_win_remote() then yields a local
   * address, which no op dereferences for a peer. */
  uint64_t base = (uint64_t)(uintptr_t)m->base;
  for (uint32_t i = 0; i < d->nranks; i++) {
    d->ctx.windows[i] = base;
    if (i < CS_ABI_MAX_RANKS)
      d->ctx.abi.windowsIn[i] = d->ctx.abi.windowsOut[i] = base;
  }
  return 0;
}

void cs_mpi_close(cs_mpi_t *m)
{
  crash_unguard();
  cs_mpi_guard_in_run(0);
  wd_close(m);
  MPI_Win_flush_all(m->win);
  /* No rank may still read or write a window that is being freed. */
  MPI_Barrier(m->comm);
  MPI_Win_unlock_all(m->win);
  MPI_Win_free(&m->win);
  MPI_Win_unlock_all(m->wf_win);
  MPI_Win_free(&m->wf_win);
  m->base = NULL;
}
