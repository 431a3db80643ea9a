/*
 * transport_mpi.c - the MPI-3 RMA transport (transport_mpi.h): every
 * event's effect as one-sided MPI calls on one window per rank. Owns the
 * window's life (allocate, the run-long passive-target epoch, free) and the
 * ops table cs_transport_mpi. Does not own checks, hooks or faults (dev.c
 * has done them before an op runs), nor processes (mpirun starts them;
 * tools/mpi_main.c is the rank's main). The window holds the slot layout of
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
 *            default handler, MPI_ERRORS_ARE_FATAL, 8.3).
 */
#define _GNU_SOURCE
#include "transport_mpi.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

static void mpi_write(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                      const void *src, size_t nbytes)
{
  cs_mpi_t *m = tp(d);
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
  MPI_Win_flush_all(tp(d)->win);
}

static void mpi_stop(cs_dev_t *d, int rx)
{
  const cs_ctl_t *c = d->world->ctl;
  if (rx == CS_RX_ABORTED)
    fprintf(stderr, "collsim-mpi: rank %u: stopped because the run was "
            "aborted\n", d->rank);
  else
    fprintf(stderr, "collsim-mpi: %s\n", c->abort_msg);
  fflush(stderr);
  MPI_Abort(tp(d)->comm, tp(d)->abort_code ? tp(d)->abort_code : rx);
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
};

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
  MPI_Barrier(comm);
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
  MPI_Win_flush_all(m->win);
  /* No rank may still read or write a window that is being freed. */
  MPI_Barrier(m->comm);
  MPI_Win_unlock_all(m->win);
  MPI_Win_free(&m->win);
  m->base = NULL;
}
