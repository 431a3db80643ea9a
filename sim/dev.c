/*
 * dev.c - free-mode implementation of the device API (dev.h) and the wait
 * strategy.
 *
 * Wait strategy (DESIGN §5, measured on the 2-core target machine): a spin
 * hop costs 0.05-0.2 us, a cross-core FUTEX_WAKE about 21 us, a same-core
 * futex hand-off 2.5 us, and spinning while more ranks than CPUs are
 * runnable costs milliseconds per hop (the spinner burns the slice its
 * notifier needs). So a waiter spins long (spin_iters from the launcher,
 * large) when ranks <= online CPUs and only briefly otherwise, then
 * announces itself in its status word and sleeps on the cell with a shared
 * FUTEX_WAIT. notify() pays for FUTEX_WAKE only when the peer announced
 * itself: the announce/recheck pair is a Dekker handshake (both sides use
 * seq_cst), so no wake is lost. Sleeps are sliced (100 ms) so the abort word
 * and the deadline are seen even if a wake were missed.
 */
#define _GNU_SOURCE
#include "dev.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"
#include "sched.h"

#define SLEEP_SLICE_NS (100ull * 1000000ull)

uint64_t cs_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long futex_wait(int32_t *addr, int32_t val, uint64_t ns)
{
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  return syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static long futex_wake(int32_t *addr)
{
  return syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* ------------------------------------------------------------ lifecycle */

int cs_dev_init(cs_dev_t *d, cs_world_t *w, uint32_t rank,
                const cs_fault_t *fault)
{
  memset(d, 0, sizeof(*d));
  int err = cs_rankctx_init(&d->ctx, w, rank);
  if (err < 0)
    return err;
  d->world = w;
  d->rank = rank;
  d->nranks = w->ctl->nranks;
  d->mywin = cs_world_window(w, rank);
  d->layout = &w->ctl->layout;
  d->st = &w->ctl->rank[rank];
  d->fault_at = UINT64_MAX;
  if (fault && fault->kind != CS_FAULT_NONE && fault->rank == rank) {
    d->fault_at = fault->event;
    d->fault_kind = fault->kind;
  }
  d->spin_iters = w->ctl->spin_iters;
  d->yield_iters = w->ctl->yield_iters;
  d->timeout_ns = w->ctl->timeout_ns;
  d->controlled = w->ctl->controlled != 0;
  d->posted = w->ctl->controlled > 1 + CS_MM_SC;
  return 0;
}

void cs_dev_fini(cs_dev_t *d)
{
  cs_rankctx_fini(&d->ctx);
}

/* ------------------------------------------------------------ failures */

void cs__dev_fail(cs_dev_t *d, uint32_t reason, int rx, const char *fmt, ...)
{
  cs_ctl_t *c = d->world->ctl;
  if (d->hooks && d->hooks->fail && d->cur_ev) {
    int32_t observed = 0;
    if (d->cur_ev->kind == CS_EV_WAIT && d->st->state == CS_RS_WAITING)
      observed = __atomic_load_n(
          (int32_t *)cs_dev_addr(d, d->rank, d->cur_ev->slot, d->cur_ev->cell),
          __ATOMIC_ACQUIRE);
    d->hooks->fail(d, d->cur_ev, observed, d->hook_arg);
  }
  uint32_t expect = CS_ABORT_NONE;
  /* First failure wins the abort word and the message. */
  if (__atomic_compare_exchange_n(&c->abort_word, &expect, reason, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    c->abort_rank = (int32_t)d->rank;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->abort_msg, sizeof(c->abort_msg), fmt, ap);
    va_end(ap);
  }
  d->st->reason = reason;
  if (d->st->state != CS_RS_WAITING && d->st->state != CS_RS_HUNG)
    d->st->state = CS_RS_FAILED;
  _exit(rx);
}

void cs__dev_aborted(cs_dev_t *d)
{
  d->st->reason = CS_ABORT_PEER;
  _exit(CS_RX_ABORTED);
}

void cs__dev_strike(cs_dev_t *d)
{
  d->fault_at = UINT64_MAX;
  switch (d->fault_kind) {
  case CS_FAULT_SEGV:
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    break;
  case CS_FAULT_ABORT:
    signal(SIGABRT, SIG_DFL);
    abort();
  case CS_FAULT_EXIT:
    _exit(CS_FAULT_EXIT_STATUS);
  case CS_FAULT_HANG: {
    /* Stop making progress, like a device stuck in a kernel. The rank's own
     * timeout reports it (peers waiting on it time out too). */
    uint64_t start = cs_now_ns();
    d->st->state = CS_RS_HUNG;
    while (cs_now_ns() - start < d->timeout_ns) {
      if (__atomic_load_n(&d->world->ctl->abort_word, __ATOMIC_ACQUIRE))
        cs__dev_aborted(d);
      struct timespec ts = {0, 10 * 1000000};
      nanosleep(&ts, NULL);
    }
    cs__dev_fail(d, CS_ABORT_TIMEOUT, CS_RX_TIMEOUT,
                 "rank %u: hung (injected fault) at event %llu for %.1f s",
                 d->rank, (unsigned long long)d->nevents - 1,
                 (double)d->timeout_ns / 1e9);
  }
  default:
    break;
  }
}

/* ------------------------------------------------------------ checks */

static const char *kind_name(uint32_t k)
{
  static const char *const names[] = {"?", "load", "store", "put", "notify",
                                      "wait", "fence", "reduce", "mark"};
  return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* Bounds check of one access; the out-of-slot fault report names rank,
 * peer, slot, the range and the slot's bounds. */
static inline const cs_slot_t *check(cs_dev_t *d, const cs_event_t *ev,
                                     uint32_t slot, uint32_t peer,
                                     uint64_t elem_off, uint64_t nelem)
{
  if (__builtin_expect(slot >= d->layout->nslots || peer >= d->nranks, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad %s at event %llu: slot %u of %u, peer %u of %u",
                 d->rank, kind_name(ev->kind), (unsigned long long)ev->index,
                 slot, d->layout->nslots, peer, d->nranks);
  const cs_slot_t *s = &d->layout->slot[slot];
  uint64_t off = elem_off * s->esize, nbytes = nelem * s->esize;
  if (__builtin_expect(elem_off > (UINT64_MAX >> 4) || nelem > (UINT64_MAX >> 4) ||
                       !cs_slot_contains(s, off, nbytes), 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: out-of-slot fault at event %llu: %s %s rank %u "
                 "slot '%s' bytes [%llu, %llu) outside the slot's [0, %llu) "
                 "(logical %llu)",
                 d->rank, (unsigned long long)ev->index, kind_name(ev->kind),
                 ev->kind == CS_EV_LOAD ? "from" : "to", peer, s->name,
                 (unsigned long long)off, (unsigned long long)(off + nbytes),
                 (unsigned long long)s->alloc, (unsigned long long)s->nbytes);
  return s;
}

static inline void check_tile(cs_dev_t *d, const cs_event_t *ev,
                              const cs_tile_t *t, const cs_slot_t *s,
                              uint32_t n)
{
  if (__builtin_expect(n > t->width || t->esize != s->esize, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad %s at event %llu: %u elements of %u bytes "
                 "with a tile of %u elements of %u bytes (slot '%s')",
                 d->rank, kind_name(ev->kind), (unsigned long long)ev->index,
                 n, s->esize, t->width, t->esize, s->name);
}

/* ------------------------------------------------------------ data */

/* Begins load event ev into tile t: bounds of the physical range, tile
 * capacity, valid <= phys. Returns the source address. */
static inline const uint8_t *load_begin(cs_dev_t *d, cs_event_t *ev,
                                        const cs_tile_t *t)
{
  cs__dev_begin(d, ev);
  const cs_slot_t *s = check(d, ev, ev->slot, ev->peer, ev->elem_off, ev->phys);
  check_tile(d, ev, t, s, ev->phys);
  if (__builtin_expect(ev->valid > ev->phys, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad load at event %llu: valid %u > physical %u",
                 d->rank, (unsigned long long)ev->index, ev->valid, ev->phys);
  return cs_dev_addr(d, ev->peer, ev->slot, ev->elem_off);
}

void cs_load(cs_dev_t *d, cs_tile_t *t, uint32_t peer, uint32_t slot,
             uint64_t elem_off, uint32_t valid, uint32_t phys)
{
  cs_event_t ev = {.kind = CS_EV_LOAD, .peer = peer, .slot = slot,
                   .elem_off = elem_off, .valid = valid, .phys = phys};
  const uint8_t *src = load_begin(d, &ev, t);
  size_t es = t->esize;
  memcpy(t->buf, src, (size_t)valid * es);
  if (valid < t->width)
    memset((uint8_t *)t->buf + (size_t)valid * es, 0,
           (size_t)(t->width - valid) * es);
  t->valid = valid;
  cs__dev_end(d, &ev, 0);
}

void cs_load_fused(cs_dev_t *d, cs_tile_t *acc, uint32_t peer, uint32_t slot,
                   uint64_t elem_off, uint32_t valid, uint32_t phys,
                   void (*consume)(cs_tile_t *acc, const void *src,
                                   uint32_t n, const void *arg),
                   const void *arg)
{
  cs_event_t ev = {.kind = CS_EV_LOAD, .peer = peer, .slot = slot,
                   .elem_off = elem_off, .valid = valid, .phys = phys};
  consume(acc, load_begin(d, &ev, acc), valid, arg);
  cs__dev_end(d, &ev, 0);
}

static inline void write_to(cs_dev_t *d, uint32_t kind, const cs_tile_t *t,
                            uint32_t peer, uint32_t slot, uint64_t elem_off,
                            uint32_t valid)
{
  cs_event_t ev = {.kind = kind, .peer = peer, .slot = slot,
                   .elem_off = elem_off, .valid = valid, .phys = valid};
  cs__dev_begin(d, &ev);
  const cs_slot_t *s = check(d, &ev, slot, peer, elem_off, valid);
  check_tile(d, &ev, t, s, valid);
  if (__builtin_expect(d->posted, 0))
    cs__sched_post(d, &ev, t->buf, valid * t->esize);
  else
    memcpy(cs_dev_addr(d, peer, slot, elem_off), t->buf,
           (size_t)valid * t->esize);
  cs__dev_end(d, &ev, 0);
}

void cs_store(cs_dev_t *d, const cs_tile_t *t, uint32_t slot,
              uint64_t elem_off, uint32_t valid)
{
  write_to(d, CS_EV_STORE, t, d->rank, slot, elem_off, valid);
}

void cs_put(cs_dev_t *d, const cs_tile_t *t, uint32_t peer, uint32_t slot,
            uint64_t elem_off, uint32_t valid)
{
  write_to(d, CS_EV_PUT, t, peer, slot, elem_off, valid);
}

/* ------------------------------------------------------------ signals */

static inline int32_t *cell_addr(cs_dev_t *d, const cs_event_t *ev,
                                 uint32_t peer, uint32_t slot, uint32_t cell)
{
  const cs_slot_t *s = check(d, ev, slot, peer, cell, 1);
  if (__builtin_expect(s->esize != sizeof(int32_t), 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: %s at event %llu on slot '%s', which does not hold "
                 "int32 signal cells", d->rank, kind_name(ev->kind),
                 (unsigned long long)ev->index, s->name);
  return cs_dev_addr(d, peer, slot, cell);
}

void cs_notify(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell,
               uint32_t op, int32_t value)
{
  cs_event_t ev = {.kind = CS_EV_NOTIFY, .peer = peer, .slot = slot,
                   .cell = cell, .opcmp = op, .value = value};
  cs__dev_begin(d, &ev);
  int32_t *p = cell_addr(d, &ev, peer, slot, cell);
  int32_t now;
  if (__builtin_expect(d->posted, 0)) {
    cs__sched_post(d, &ev, NULL, 0);
    cs__dev_end(d, &ev, 0);
    return;
  }
  if (op == CS_NOTIFY_ADD)
    now = __atomic_add_fetch(p, value, __ATOMIC_SEQ_CST);
  else {
    __atomic_store_n(p, value, __ATOMIC_SEQ_CST);
    now = value;
  }
  if (__atomic_load_n(&d->world->ctl->rank[peer].sleeping, __ATOMIC_SEQ_CST))
    futex_wake(p);
  cs__dev_end(d, &ev, now);
}

static inline bool satisfied(int32_t v, uint32_t cmp, int32_t want)
{
  return cmp == CS_CMP_EQ ? v == want : v >= want;
}

int32_t cs_wait(cs_dev_t *d, uint32_t slot, uint32_t cell, uint32_t cmp,
                int32_t value)
{
  cs_event_t ev = {.kind = CS_EV_WAIT, .peer = d->rank, .slot = slot,
                   .cell = cell, .opcmp = cmp, .value = value};
  cs__dev_begin(d, &ev);
  int32_t *p = cell_addr(d, &ev, d->rank, slot, cell);
  cs_ctl_t *c = d->world->ctl;
  int32_t v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
  if (satisfied(v, cmp, value))
    goto done;

  if (__builtin_expect(d->hooks != 0, 0) && d->hooks->block)
    d->hooks->block(d, &ev, v, d->hook_arg);
  cs_rank_status_t *st = d->st;
  st->wait_slot = slot;
  st->wait_cell = cell;
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
    if (__atomic_load_n(&c->abort_word, __ATOMIC_ACQUIRE))
      cs__dev_aborted(d);
  }
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
                   (unsigned long long)ev.index, d->layout->slot[slot].name,
                   cell, cmp == CS_CMP_EQ ? "==" : ">=", value,
                   __atomic_load_n(p, __ATOMIC_ACQUIRE));
    __atomic_store_n(&st->sleeping, 1, __ATOMIC_SEQ_CST);
    v = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    if (!satisfied(v, cmp, value)) {
      uint64_t left = deadline - now;
      futex_wait(p, v, left < SLEEP_SLICE_NS ? left : SLEEP_SLICE_NS);
      v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    __atomic_store_n(&st->sleeping, 0, __ATOMIC_RELAXED);
    if (satisfied(v, cmp, value))
      break;
  }
woke:
  __atomic_store_n(&st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
done:
  cs__dev_end(d, &ev, v);
  return v;
}

void cs_fence(cs_dev_t *d)
{
  cs_event_t ev = {.kind = CS_EV_FENCE, .peer = d->rank};
  cs__dev_begin(d, &ev);
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
  cs__dev_end(d, &ev, 0);
}

void cs_mark(cs_dev_t *d, uint32_t phase, uint32_t round)
{
  d->tag_phase = phase;
  d->tag_round = round;
  d->tag_step = 0;
  cs_event_t ev = {.kind = CS_EV_MARK, .peer = d->rank, .cell = phase,
                   .value = (int32_t)round};
  cs__dev_begin(d, &ev);
  cs__dev_end(d, &ev, 0);
}

/* ------------------------------------------------------------ faults */

const char *cs_fault_kind_name(cs_fault_kind_t k)
{
  switch (k) {
  case CS_FAULT_SEGV: return "segv";
  case CS_FAULT_ABORT: return "abort";
  case CS_FAULT_EXIT: return "exit";
  case CS_FAULT_HANG: return "hang";
  default: return "none";
  }
}

static int parse_u64(const char *s, size_t len, uint64_t *out)
{
  if (len == 0 || len > 19)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return 0;
}

int cs_fault_parse(const char *s, cs_fault_t *f, char *why, size_t whylen)
{
  const char *c1 = strchr(s, ':');
  uint64_t rank, event = 0;
  memset(f, 0, sizeof(*f));
  if (!c1 || parse_u64(s, (size_t)(c1 - s), &rank) < 0 || rank >= CS_MAX_RANKS) {
    snprintf(why, whylen, "bad fault '%s': expected RANK:KIND[:EVENT] with "
             "RANK a number 0..%d", s, CS_MAX_RANKS - 1);
    return -EINVAL;
  }
  const char *kind = c1 + 1, *c2 = strchr(kind, ':');
  size_t klen = c2 ? (size_t)(c2 - kind) : strlen(kind);
  static const cs_fault_kind_t kinds[] = {CS_FAULT_SEGV, CS_FAULT_ABORT,
                                          CS_FAULT_EXIT, CS_FAULT_HANG};
  for (size_t i = 0; i < 4; i++) {
    const char *name = cs_fault_kind_name(kinds[i]);
    if (strlen(name) == klen && strncmp(kind, name, klen) == 0)
      f->kind = kinds[i];
  }
  if (f->kind == CS_FAULT_NONE) {
    snprintf(why, whylen, "bad fault '%s': KIND '%.*s' is not one of segv, "
             "abort, exit, hang", s, (int)klen, kind);
    return -EINVAL;
  }
  if (c2 && parse_u64(c2 + 1, strlen(c2 + 1), &event) < 0) {
    snprintf(why, whylen, "bad fault '%s': EVENT '%s' is not a non-negative "
             "event index", s, c2 + 1);
    f->kind = CS_FAULT_NONE;
    return -EINVAL;
  }
  f->rank = (uint32_t)rank;
  f->event = event;
  return 0;
}
