/*
 * transport_free.c - the free shared-memory transport (transport.h): loads
 * copy from the peer's mapping, stores, puts and notifies land at issue,
 * and waits follow the wait strategy below. Owns the futex calls. Does not
 * own checks, hooks or faults (dev.c has done them before any operation
 * here runs). Used by every rank of a free-mode run, and in part by the
 * controlled transport.
 *
 * Wait strategy (docs/performance.md, "The wait strategy"): a waiter
 * spins (spin_iters, from the launcher: long when ranks <= online CPUs,
 * none otherwise), then yields the CPU (yield_iters, only when ranks
 * outnumber CPUs, so the rank it needs can run), then announces itself in
 * its status word and sleeps on the cell with a shared FUTEX_WAIT. notify()
 * pays for FUTEX_WAKE only when the peer announced itself: the
 * announce/recheck pair is a Dekker handshake (both sides use seq_cst), so
 * no wake is lost. Sleeps are sliced (SLEEP_SLICE_NS) so the abort word and
 * the deadline are seen even if a wake were missed.
 */
#define _GNU_SOURCE
#include "transport.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLEEP_SLICE_NS (100ull * 1000000ull)

static long futex_wait(int32_t *addr, int32_t val, uint64_t ns)
{
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  return syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(int32_t *addr)
{
  syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static const void *free_view(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  return cs__shm_at(d, ev->peer, off);
}

static void free_load(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                      void *dst, size_t nbytes)
{
  memcpy(dst, cs__shm_at(d, ev->peer, off), nbytes);
}

void cs__free_write(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                    const void *src, size_t nbytes)
{
  if (cs__dev_put_reduces(ev->opcmp) && ev->kind == CS_EV_PUT)
    cs__dev_add_f32(cs__shm_at(d, ev->peer, off), src, (uint32_t)(nbytes / 4));
  else
    memcpy(cs__shm_at(d, ev->peer, off), src, nbytes);
}

void cs__free_load2d(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                     void *dst, size_t rowbytes, uint32_t rows, uint64_t pitch)
{
  const uint8_t *src = cs__shm_at(d, ev->peer, off);
  for (uint32_t i = 0; i < rows; i++)
    memcpy((uint8_t *)dst + i * rowbytes, src + i * pitch, rowbytes);
}

void cs__free_write2d(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                      const void *src, size_t rowbytes, uint32_t rows,
                      uint64_t pitch)
{
  uint8_t *dst = cs__shm_at(d, ev->peer, off);
  for (uint32_t i = 0; i < rows; i++)
    memcpy(dst + i * pitch, (const uint8_t *)src + i * rowbytes, rowbytes);
}

int32_t cs__free_notify(cs_dev_t *d, cs_event_t *ev, uint64_t off)
{
  int32_t *p = cs__shm_at(d, ev->peer, off), now;
  if (ev->opcmp == CS_NOTIFY_ADD)
    now = __atomic_add_fetch(p, ev->value, __ATOMIC_SEQ_CST);
  else {
    __atomic_store_n(p, ev->value, __ATOMIC_SEQ_CST);
    now = ev->value;
  }
  if (__atomic_load_n(&d->world->ctl->rank[ev->peer].sleeping, __ATOMIC_SEQ_CST))
    futex_wake(p);
  return now;
}

static inline int satisfied(int32_t v, uint32_t cmp, int32_t want)
{
  return cmp == CS_CMP_EQ ? v == want : v >= want;
}

/* The last stage of a wait: sleep on the cell in slices until it is
 * satisfied, the run aborts, or the deadline passes (a hang). */
static int32_t sleep_until(cs_dev_t *d, const cs_event_t *ev, int32_t *p)
{
  cs_ctl_t *c = d->world->ctl;
  cs_rank_status_t *st = d->st;
  uint64_t deadline = cs_now_ns() + d->timeout_ns;
  for (;;) {
    if (__atomic_load_n(&c->abort_word, __ATOMIC_ACQUIRE))
      cs__dev_aborted(d);
    uint64_t now = cs_now_ns();
    if (now >= deadline)
      cs__dev_fail(d, CS_ABORT_TIMEOUT, CS_RX_TIMEOUT,
                   "rank %u: wait timed out after %.1f s at event %llu "
                   "(slot '%s' cell %u %s %d, value %d)",
                   d->rank, (double)d->timeout_ns / 1e9,
                   (unsigned long long)ev->index, d->layout->slot[ev->slot].name,
                   ev->cell, ev->opcmp == CS_CMP_EQ ? "==" : ">=", ev->value,
                   __atomic_load_n(p, __ATOMIC_ACQUIRE));
    __atomic_store_n(&st->sleeping, 1, __ATOMIC_SEQ_CST);
    int32_t v = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    if (!satisfied(v, ev->opcmp, ev->value)) {
      uint64_t left = deadline - now;
      futex_wait(p, v, left < SLEEP_SLICE_NS ? left : SLEEP_SLICE_NS);
      v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    __atomic_store_n(&st->sleeping, 0, __ATOMIC_RELAXED);
    if (satisfied(v, ev->opcmp, ev->value))
      return v;
  }
}

int32_t cs__free_wait(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  int32_t *p = cs__shm_at(d, d->rank, off);
  uint32_t cmp = ev->opcmp;
  int32_t value = ev->value;
  int32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
  if (satisfied(v, cmp, value))
    return v;

  cs__dev_block(d, ev, v);
  cs_rank_status_t *st = d->st;
  st->wait_slot = ev->slot;
  st->wait_cell = ev->cell;
  st->wait_value = value;
  st->wait_cmp = cmp;
  __atomic_store_n(&st->state, CS_RS_WAITING, __ATOMIC_RELEASE);

  for (uint32_t i = 0; i < d->spin_iters; i++) {
    cpu_relax();
    v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    if (satisfied(v, cmp, value))
      goto woke;
  }
  /* Oversubscribed: hand the CPU to another runnable rank (likely the one
   * this wait needs) instead of paying a futex sleep and wake. */
  for (uint32_t i = 0; i < d->yield_iters; i++) {
    sched_yield();
    v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    if (satisfied(v, cmp, value))
      goto woke;
    if (__atomic_load_n(&d->world->ctl->abort_word, __ATOMIC_ACQUIRE))
      cs__dev_aborted(d);
  }
  v = sleep_until(d, ev, p);
woke:
  __atomic_store_n(&st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
  return v;
}

void cs__free_fence(cs_dev_t *d, const cs_event_t *ev)
{
  (void)d;
  (void)ev;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

const cs_dev_ops_t cs_transport_free = {
    .name = "free",
    .direct = 1, /* the core does these inline, exactly as below */
    .wake = futex_wake,
    .point = NULL,
    .load = free_load,
    .view = free_view,
    .write = cs__free_write,
    .load2d = cs__free_load2d,
    .write2d = cs__free_write2d,
    .notify = cs__free_notify,
    .wait = cs__free_wait,
    .fence = cs__free_fence,
    .done = NULL,
};
