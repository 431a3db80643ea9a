/*
 * dev.c - the device core (dev.h): every device-API call's numbering,
 * fault injection, hooks and bounds checks, then its effect through the
 * rank's transport (d->ops). Owns the failure paths of a rank (out-of-slot
 * faults, injected faults, aborts) and the parsing of --fault. Does not own
 * how memory and signals move (transport_free.c, transport_ctl.c) or who
 * schedules ranks (sim/sched/core.c): it knows the ops table, not its
 * implementations. Called by algorithm code in a rank process.
 */
#define _GNU_SOURCE
#include "dev.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"

uint64_t cs_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ lifecycle */

int cs_dev_init(cs_dev_t *d, cs_world_t *w, uint32_t rank,
                const cs_fault_t *fault, const cs_dev_ops_t *ops)
{
  memset(d, 0, sizeof(*d));
  int err = cs_rankctx_init(&d->ctx, w, rank);
  if (err < 0)
    return err;
  d->world = w;
  d->ops = ops;
  d->point = ops->point;
  d->direct = ops->direct;
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
  d->note_slot = w->ctl->note_slot;
  d->note_cells = w->ctl->note_cells;
  return 0;
}

void cs_dev_fini(cs_dev_t *d)
{
  cs_rankctx_fini(&d->ctx);
}

int cs_dev_error(cs_dev_t *d, int err)
{
  d->st->start_err = err;
  return CS_RX_ERROR;
}

void cs__dev_begin_slow(cs_dev_t *d, cs_event_t *ev)
{
  if (d->hooks)
    d->cur_ev = ev; /* never the previous event's frame, which has returned */
  if (ev->index == d->fault_at)
    cs__dev_strike(d);
  if (d->point)
    d->point(d, ev);
  if (d->hooks && d->hooks->begin)
    d->hooks->begin(d, ev, d->hook_arg);
}

/* ------------------------------------------------------------ failures */

void cs__dev_fail(cs_dev_t *d, uint32_t reason, int rx, const char *fmt, ...)
{
  cs_ctl_t *c = d->world->ctl;
  if (d->hooks && d->hooks->fail && d->cur_ev) {
    int32_t observed = 0;
    if (d->cur_ev->kind == CS_EV_WAIT && d->st->state == CS_RS_WAITING)
      observed = __atomic_load_n(
          (int32_t *)(d->mywin + cs_slot_cell_off(&d->layout->slot[d->cur_ev->slot],
                                                  d->cur_ev->cell)),
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
  if (d->ops->stop)
    d->ops->stop(d, rx);
  _exit(rx);
}

void cs__dev_aborted(cs_dev_t *d)
{
  /* after the stopped wait's record: the deadlock's ordered wake reads
   * this to wake the next rank (sched/stop.c) */
  __atomic_store_n(&d->st->reason, CS_ABORT_PEER, __ATOMIC_RELEASE);
  if (d->ops->stop)
    d->ops->stop(d, CS_RX_ABORTED);
  _exit(CS_RX_ABORTED);
}

void cs_dev_hang_str(char *buf, size_t n, uint32_t rank, uint64_t event,
                     uint64_t timeout_ns)
{
  snprintf(buf, n, "rank %u: hung (injected fault) at event %llu for %.1f s",
           rank, (unsigned long long)event, (double)timeout_ns / 1e9);
}

void cs__dev_strike(cs_dev_t *d)
{
  d->fault_at = UINT64_MAX;
  switch (d->fault_kind) {
  case CS_FAULT_SEGV:
    if (!d->ops->crash_handled)
      signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    break;
  case CS_FAULT_ABORT:
    if (!d->ops->crash_handled)
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
    /* The hang struck before its event began: there is no event to fail,
     * and the event index is the one the wavefront shows. */
    d->cur_ev = NULL;
    char msg[128];
    cs_dev_hang_str(msg, sizeof msg, d->rank, d->st->event, d->timeout_ns);
    cs__dev_fail(d, CS_ABORT_TIMEOUT, CS_RX_HUNG, "%s", msg);
  }
  default:
    break;
  }
}

/* ------------------------------------------------------------ checks */

static const char *kind_name(uint32_t k)
{
  static const char *const names[] = {
      "?", "load", "store", "put", "notify", "wait", "fence", "reduce",
      "mark", "?", "?", "?", "?", "?", "pipe barrier", "DDR fence", "dcci",
      "cell read"};
  return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* The index of the event in progress: the one cs__dev_begin (or
 * cs__dev_count) numbered last. For failure messages, read only there. */
static inline uint64_t cur_index(const cs_dev_t *d)
{
  return d->nevents - 1;
}

/* The out-of-slot fault report of the current event, of `kind`: rank,
 * peer, slot, the range and the slot's bounds; the range in bytes when
 * its end fits 64 bits, else in elements (an offset near 2^64 / esize
 * would wrap the byte figures). */
static _Noreturn __attribute__((cold, noinline)) void
out_of_slot(cs_dev_t *d, uint32_t kind, const cs_slot_t *s, uint32_t peer,
            uint64_t elem_off, uint64_t nelem)
{
  uint64_t es = s->esize ? s->esize : 1;
  int bytes = nelem <= UINT64_MAX / es &&
              elem_off <= (UINT64_MAX - nelem * es) / es;
  char range[96];
  if (bytes)
    snprintf(range, sizeof(range), "bytes [%llu, %llu)",
             (unsigned long long)(elem_off * es),
             (unsigned long long)((elem_off + nelem) * es));
  else
    snprintf(range, sizeof(range), "elements [%llu, +%llu) of %llu B",
             (unsigned long long)elem_off, (unsigned long long)nelem,
             (unsigned long long)es);
  cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
               "rank %u: out-of-slot fault at event %llu: %s %s rank %u "
               "slot '%s' %s outside the slot's [0, %llu) (logical %llu)",
               d->rank, (unsigned long long)cur_index(d), kind_name(kind),
               kind == CS_EV_LOAD ? "from" : "to", peer, s->name, range,
               (unsigned long long)s->alloc, (unsigned long long)s->nbytes);
}

/* Bounds check of one access of the current event, of `kind`
 * (out_of_slot reports a fault). */
static inline const cs_slot_t *check(cs_dev_t *d, uint32_t kind,
                                     uint32_t slot, uint32_t peer,
                                     uint64_t elem_off, uint64_t nelem)
{
  if (__builtin_expect(slot >= d->layout->nslots || peer >= d->nranks, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad %s at event %llu: slot %u of %u, peer %u of %u",
                 d->rank, kind_name(kind), (unsigned long long)cur_index(d),
                 slot, d->layout->nslots, peer, d->nranks);
  const cs_slot_t *s = &d->layout->slot[slot];
  uint64_t off = elem_off * s->esize, nbytes = nelem * s->esize;
  if (__builtin_expect(elem_off > (UINT64_MAX >> 4) || nelem > (UINT64_MAX >> 4) ||
                       !cs_slot_contains(s, off, nbytes), 0))
    out_of_slot(d, kind, s, peer, elem_off, nelem);
  return s;
}

static inline void check_tile(cs_dev_t *d, uint32_t kind, const cs_tile_t *t,
                              const cs_slot_t *s, uint32_t n)
{
  if (__builtin_expect(s->cell_bytes != 0, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad %s at event %llu: slot '%s' holds padded "
                 "signal cells (--signal-layout padded), which tiles do not "
                 "address; read them with cs_read_cell, write them with "
                 "cs_notify", d->rank, kind_name(kind),
                 (unsigned long long)cur_index(d), s->name);
  if (__builtin_expect(n > t->width || t->esize != s->esize, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad %s at event %llu: %u elements of %u bytes "
                 "with a tile of %u elements of %u bytes (slot '%s')",
                 d->rank, kind_name(kind), (unsigned long long)cur_index(d),
                 n, s->esize, t->width, t->esize, s->name);
}

/* ------------------------------------------------------------ data */

/* Begins a load into tile t: numbers it (filling the record ev unless
 * nobody reads it: plain, direct), then bounds of the physical range,
 * tile capacity, valid <= phys. Returns the range's window offset. The
 * range comes as arguments, equal to ev's fields (which nothing changes):
 * after the slow path of cs__dev_begin, which sees ev, the compiler would
 * otherwise reload each field from memory. */
static inline uint64_t load_begin(cs_dev_t *d, cs_event_t *ev,
                                  const cs_tile_t *t, uint32_t peer,
                                  uint32_t slot, uint64_t elem_off,
                                  uint32_t valid, uint32_t phys)
{
  if (d->direct && cs__dev_plain(d)) {
    cs__dev_count(d);
  } else {
    *ev = (cs_event_t){.kind = CS_EV_LOAD, .peer = peer, .slot = slot,
                       .elem_off = elem_off, .valid = valid, .phys = phys};
    cs__dev_begin(d, ev);
  }
  const cs_slot_t *s = check(d, CS_EV_LOAD, slot, peer, elem_off, phys);
  check_tile(d, CS_EV_LOAD, t, s, phys);
  if (__builtin_expect(valid > phys || valid == 0, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad load at event %llu: valid %u with physical %u "
                 "(1 <= valid <= physical is required)",
                 d->rank, (unsigned long long)cur_index(d), valid, phys);
  return s->off + elem_off * s->esize;
}

void cs_load(cs_dev_t *d, cs_tile_t *t, uint32_t peer, uint32_t slot,
             uint64_t elem_off, uint32_t valid, uint32_t phys)
{
  cs_event_t ev; /* filled by load_begin where anyone reads it */
  uint64_t off = load_begin(d, &ev, t, peer, slot, elem_off, valid, phys);
  size_t es = t->esize;
  if (d->direct)
    memcpy(t->buf, cs_win_remote(&d->ctx, d->mywin + off, peer), (size_t)valid * es);
  else
    d->ops->load(d, &ev, off, t->buf, (size_t)valid * es);
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
  cs_event_t ev; /* filled by load_begin where anyone reads it */
  uint64_t off = load_begin(d, &ev, acc, peer, slot, elem_off, valid,
                            phys);
  consume(acc, d->direct ? cs_win_remote(&d->ctx, d->mywin + off, peer)
                        : d->ops->view(d, &ev, off), valid, arg);
  cs__dev_end(d, &ev, 0);
}

static inline void write_to(cs_dev_t *d, uint32_t kind, const cs_tile_t *t,
                            uint32_t peer, uint32_t slot, uint64_t elem_off,
                            uint32_t valid)
{
  cs_event_t ev;
  int plain = d->direct && cs__dev_plain(d); /* nobody reads the record */
  if (plain) {
    cs__dev_count(d);
  } else {
    ev = (cs_event_t){.kind = kind, .peer = peer, .slot = slot,
                      .elem_off = elem_off, .valid = valid, .phys = valid};
    cs__dev_begin(d, &ev);
  }
  const cs_slot_t *s = check(d, kind, slot, peer, elem_off, valid);
  check_tile(d, kind, t, s, valid);
  uint64_t off = s->off + elem_off * s->esize;
  if (d->direct)
    memcpy(cs_win_remote(&d->ctx, d->mywin + off, peer), t->buf,
           (size_t)valid * t->esize);
  else
    d->ops->write(d, &ev, off, t->buf, (size_t)valid * t->esize);
  if (!plain)
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

/* A put whose landing adds into its destination (TPUT<AtomicAdd>): the
 * record is a put's with opcmp 1 + op, so every transport that posts or
 * lands a put carries the op along (cs__dev_put_op); the direct path adds
 * at once. fp32 sum only: the device's atomic adder, and the one
 * MPI_Accumulate every MPI implements for floats. */
void cs_put_reduce(cs_dev_t *d, const cs_tile_t *t, uint32_t peer,
                   uint32_t slot, uint64_t elem_off, uint32_t valid,
                   cs_op_t op)
{
  cs_event_t ev = {.kind = CS_EV_PUT, .peer = peer, .slot = slot,
                   .elem_off = elem_off, .valid = valid, .phys = valid,
                   .opcmp = 1u + (uint32_t)op};
  cs__dev_begin(d, &ev);
  const cs_slot_t *s = check(d, CS_EV_PUT, slot, peer, elem_off, valid);
  check_tile(d, CS_EV_PUT, t, s, valid);
  if (__builtin_expect(op != CS_SUM || t->esize != 4, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad reducing put at event %llu: op %u on %u-byte "
                 "elements (only fp32 sum is an atomic add)", d->rank,
                 (unsigned long long)cur_index(d), (unsigned)op, t->esize);
  uint64_t off = s->off + elem_off * s->esize;
  if (d->direct)
    cs__dev_add_f32(cs_win_remote(&d->ctx, d->mywin + off, peer), t->buf,
                    valid);
  else
    d->ops->write(d, &ev, off, t->buf, (size_t)valid * t->esize);
  cs__dev_end(d, &ev, 0);
}

/* ------------------------------------------------------------ 2-D */

/* Begins 2-D event ev (cell = rows, value = stride) with tile t: the
 * shape's rules, then the footprint: the slot is one contiguous range, so
 * every row lies inside it exactly when the span from the first row's
 * start to the last row's end does. Returns the first row's window
 * offset. */
static uint64_t rect_begin(cs_dev_t *d, cs_event_t *ev, const cs_tile_t *t,
                           uint32_t cols, uint64_t stride)
{
  cs__dev_begin(d, ev);
  uint32_t rows = ev->cell;
  uint64_t n = (uint64_t)rows * cols;
  if (__builtin_expect(rows == 0 || rows > CS_RECT_MAX_ROWS || cols == 0 ||
                       stride < cols || stride > INT32_MAX || n > t->width, 0))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad 2-D %s at event %llu: %u rows x %u columns "
                 "@ stride %llu with a tile of %u elements (expected rows 1 "
                 "to %u, columns >= 1, columns <= stride, rows x columns "
                 "<= the tile)", d->rank, kind_name(ev->kind),
                 (unsigned long long)ev->index, rows, cols,
                 (unsigned long long)stride, t->width, CS_RECT_MAX_ROWS);
  uint64_t span = (uint64_t)(rows - 1) * stride + cols;
  const cs_slot_t *s = check(d, ev->kind, ev->slot, ev->peer, ev->elem_off,
                             span);
  check_tile(d, ev->kind, t, s, (uint32_t)n);
  return s->off + ev->elem_off * s->esize;
}

void cs_load_rect(cs_dev_t *d, cs_tile_t *t, uint32_t peer, uint32_t slot,
                  uint64_t elem_off, uint32_t rows, uint32_t cols,
                  uint32_t stride)
{
  uint32_t n = rows * cols; /* wraps only when rect_begin refuses it */
  cs_event_t ev = {.kind = CS_EV_LOAD, .peer = peer, .slot = slot,
                   .elem_off = elem_off, .valid = n, .phys = n,
                   .cell = rows, .value = (int32_t)stride};
  uint64_t off = rect_begin(d, &ev, t, cols, stride);
  size_t es = t->esize, rb = (size_t)cols * es, pitch = (size_t)stride * es;
  uint8_t *dst = t->buf;
  if (d->direct) {
    const uint8_t *src = cs_win_remote(&d->ctx, d->mywin + off, peer);
    for (uint32_t i = 0; i < rows; i++)
      memcpy(dst + i * rb, src + i * pitch, rb);
  } else {
    d->ops->load2d(d, &ev, off, dst, rb, rows, pitch);
  }
  if (n < t->width)
    memset(dst + (size_t)n * es, 0, (size_t)(t->width - n) * es);
  t->valid = n;
  cs__dev_end(d, &ev, 0);
}

void cs_store_rect(cs_dev_t *d, const cs_tile_t *t, uint32_t slot,
                   uint64_t elem_off, uint32_t rows, uint32_t cols,
                   uint32_t stride)
{
  uint32_t n = rows * cols;
  cs_event_t ev = {.kind = CS_EV_STORE, .peer = d->rank, .slot = slot,
                   .elem_off = elem_off, .valid = n, .phys = n,
                   .cell = rows, .value = (int32_t)stride};
  uint64_t off = rect_begin(d, &ev, t, cols, stride);
  size_t rb = (size_t)cols * t->esize, pitch = (size_t)stride * t->esize;
  const uint8_t *src = t->buf;
  if (d->direct) {
    uint8_t *dst = d->mywin + off;
    for (uint32_t i = 0; i < rows; i++)
      memcpy(dst + i * pitch, src + i * rb, rb);
  } else {
    d->ops->write2d(d, &ev, off, src, rb, rows, pitch);
  }
  cs__dev_end(d, &ev, 0);
}

/* ------------------------------------------------------------ signals */

/* The op and compare checks below test one bound. */
_Static_assert(CS_NOTIFY_ADD == 0 && CS_NOTIFY_SET == 1 && CS_CMP_EQ == 0 &&
                   CS_CMP_GE == 1, "notify ops and compares are 0 and 1");

/* Bounds of a signal access of the current event, of `kind`: one int32 cell
 * inside an int32 slot (the arguments equal the event's fields, passed for
 * the reason load_begin's are).
 * Returns the cell's window offset. */
static __attribute__((noinline, cold)) uint64_t
check_cell_rare(cs_dev_t *d, uint32_t kind, uint32_t peer,
                const cs_slot_t *s, uint32_t cell)
{
  if (s->esize != sizeof(int32_t))
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: %s at event %llu on slot '%s', which does not hold "
                 "int32 signal cells", d->rank, kind_name(kind),
                 (unsigned long long)cur_index(d), s->name);
  if (!cs_slot_cell_ok(s, cell))
    out_of_slot(d, kind, s, peer, (uint64_t)cell * s->cell_bytes / s->esize, 1);
  return cs_slot_cell_off(s, cell);
}

static inline uint64_t check_cell(cs_dev_t *d, uint32_t kind, uint32_t peer,
                                  uint32_t slot, uint32_t cell)
{
  const cs_slot_t *s = check(d, kind, slot, peer, cell, 1);
  /* one test on the way of every signal: an int32 slot of packed cells */
  if (__builtin_expect(s->esize != sizeof(int32_t) || s->cell_bytes != 0, 0))
    return check_cell_rare(d, kind, peer, s, cell); /* padded, or a fault */
  return s->off + (uint64_t)cell * sizeof(int32_t);
}

/* A notify's effect where the transport is direct: the atomic on the
 * peer's mapped cell, then a wake when the peer sleeps (the Dekker pair of
 * transport_free.c). Returns the cell's value after it. */
static inline int32_t notify_direct(cs_dev_t *d, uint32_t peer, uint64_t off,
                                    uint32_t op, int32_t value)
{
  int32_t *p = cs_win_remote(&d->ctx, d->mywin + off, peer), now;
  if (op == CS_NOTIFY_ADD)
    now = __atomic_add_fetch(p, value, __ATOMIC_SEQ_CST);
  else
    __atomic_store_n(p, now = value, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&d->world->ctl->rank[peer].sleeping, __ATOMIC_SEQ_CST))
    d->ops->wake(p);
  return now;
}

/* Bounds, then the notifier note, before the add lands. Returns the
 * cell's window offset. */
static inline uint64_t notify_begin(cs_dev_t *d, uint32_t peer, uint32_t slot,
                                    uint32_t cell, uint32_t op, uint64_t index)
{
  uint64_t off = check_cell(d, CS_EV_NOTIFY, peer, slot, cell);
  if (__builtin_expect(op > CS_NOTIFY_SET, 0)) /* ADD 0, SET 1 */
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad notify at event %llu: op %u (expected "
                 "CS_NOTIFY_ADD 0 or CS_NOTIFY_SET 1)", d->rank,
                 (unsigned long long)cur_index(d), op);
  if (cell < d->note_cells && slot == d->note_slot)
    __atomic_store_n(cs_world_notes(d->world, peer) + cell,
                     CS_NOTE(d->rank, index), __ATOMIC_RELAXED);
  return off;
}

void cs_notify(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell,
               uint32_t op, int32_t value)
{
  if (d->direct && cs__dev_plain(d)) { /* no one reads the record */
    cs__dev_count(d);
    uint64_t off = notify_begin(d, peer, slot, cell, op, cur_index(d));
    notify_direct(d, peer, off, op, value);
    return;
  }
  cs_event_t ev = {.kind = CS_EV_NOTIFY, .peer = peer, .slot = slot,
                   .cell = cell, .opcmp = op, .value = value};
  cs__dev_begin(d, &ev);
  uint64_t off = notify_begin(d, peer, slot, cell, op, ev.index);
  int32_t now = d->direct ? notify_direct(d, peer, off, op, value)
                          : d->ops->notify(d, &ev, off);
  cs__dev_end(d, &ev, now);
}

static int32_t wait_event(cs_dev_t *d, uint32_t slot, uint32_t cell,
                          uint32_t cmp, int32_t value, uint32_t flags)
{
  cs_event_t ev = {.kind = CS_EV_WAIT, .peer = d->rank, .slot = slot,
                   .cell = cell, .opcmp = cmp, .value = value,
                   .flags = flags};
  cs__dev_begin(d, &ev);
  uint64_t off = check_cell(d, CS_EV_WAIT, d->rank, slot, cell);
  if (__builtin_expect(cmp > CS_CMP_GE, 0)) /* EQ 0, GE 1 */
    cs__dev_fail(d, CS_ABORT_FAULT, CS_RX_FAULT,
                 "rank %u: bad wait at event %llu: compare %u (expected "
                 "CS_CMP_EQ 0 or CS_CMP_GE 1)", d->rank,
                 (unsigned long long)cur_index(d), cmp);
  int32_t v;
  if (d->direct) {
    v = __atomic_load_n((int32_t *)(d->mywin + off), __ATOMIC_ACQUIRE);
    if (!(cmp == CS_CMP_EQ ? v == value : v >= value))
      v = d->ops->wait(d, &ev, off);
  } else {
    v = d->ops->wait(d, &ev, off);
  }
  cs__dev_end(d, &ev, v);
  return v;
}

int32_t cs_wait(cs_dev_t *d, uint32_t slot, uint32_t cell, uint32_t cmp,
                int32_t value)
{
  return wait_event(d, slot, cell, cmp, value, 0);
}

void cs_wait_until(cs_dev_t *d, uint32_t slot, uint32_t cell, uint32_t cmp,
                   int32_t value)
{
  (void)wait_event(d, slot, cell, cmp, value, CS_EVF_QUIET);
}

void cs_fence(cs_dev_t *d)
{
  if (d->direct && cs__dev_plain(d)) {
    cs__dev_count(d);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return;
  }
  cs_event_t ev = {.kind = CS_EV_FENCE, .peer = d->rank};
  cs__dev_begin(d, &ev);
  if (d->direct)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  else
    d->ops->fence(d, &ev);
  cs__dev_end(d, &ev, 0);
}

/* A pipe barrier or DDR fence: a full fence where the transport does not
 * tell the two apart. */
static void order_event(cs_dev_t *d, uint32_t kind)
{
  if (d->direct && cs__dev_plain(d)) {
    cs__dev_count(d);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return;
  }
  cs_event_t ev = {.kind = kind, .peer = d->rank};
  cs__dev_begin(d, &ev);
  if (d->direct)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  else if (d->ops->order)
    d->ops->order(d, &ev);
  else
    d->ops->fence(d, &ev);
  cs__dev_end(d, &ev, 0);
}

void cs_pipe_barrier(cs_dev_t *d)
{
  order_event(d, CS_EV_PIPE);
}

void cs_ddr_fence(cs_dev_t *d)
{
  order_event(d, CS_EV_DDR);
}

int32_t cs_read_cell(cs_dev_t *d, uint32_t peer, uint32_t slot,
                     uint32_t cell)
{
  cs_event_t ev = {.kind = CS_EV_READ, .peer = peer, .slot = slot,
                   .cell = cell};
  cs__dev_begin(d, &ev);
  uint64_t off = check_cell(d, CS_EV_READ, peer, slot, cell);
  int32_t v;
  if (d->direct)
    v = __atomic_load_n((int32_t *)cs_win_remote(&d->ctx, d->mywin + off, peer),
                        __ATOMIC_ACQUIRE);
  else if (d->ops->read)
    v = d->ops->read(d, &ev, off);
  else
    d->ops->load(d, &ev, off, &v, sizeof(v));
  cs__dev_end(d, &ev, v);
  return v;
}

void cs_dcci(cs_dev_t *d, uint32_t peer, uint32_t slot, uint64_t elem)
{
  cs_event_t ev = {.kind = CS_EV_DCCI, .peer = peer, .slot = slot,
                   .elem_off = elem, .opcmp = CS_DCCI_LINE};
  cs__dev_begin(d, &ev);
  const cs_slot_t *s = check(d, CS_EV_DCCI, slot, peer, elem, 1);
  uint64_t off = s->off + elem * s->esize;
  if (s->cell_bytes) { /* a padded slot's elements are its cells */
    if (!cs_slot_cell_ok(s, elem))
      out_of_slot(d, CS_EV_DCCI, s, peer, elem * s->cell_bytes / s->esize, 1);
    off = cs_slot_cell_off(s, elem);
  }
  if (!d->direct && d->ops->dcci)
    d->ops->dcci(d, &ev, off);
  cs__dev_end(d, &ev, 0);
}

void cs_dcci_all(cs_dev_t *d)
{
  cs_event_t ev = {.kind = CS_EV_DCCI, .peer = d->rank,
                   .opcmp = CS_DCCI_ALL};
  cs__dev_begin(d, &ev);
  if (!d->direct && d->ops->dcci)
    d->ops->dcci(d, &ev, 0);
  cs__dev_end(d, &ev, 0);
}

void cs_reduce_event(cs_dev_t *d, uint32_t op, uint32_t valid,
                     void (*kernel)(void *arg), void *arg)
{
  cs__dev_reduce(d, op, valid, kernel, arg);
}

void cs_mark(cs_dev_t *d, uint32_t phase, uint32_t round)
{
  d->tag_phase = phase;
  d->tag_round = round;
  d->tag_step = 0;
  if (cs__dev_plain(d)) {
    cs__dev_count(d);
    return;
  }
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

/* Decimal digits only, up to UINT64_MAX - 1 (UINT64_MAX means "none"). */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
  if (len == 0 || len > 20)
    return -1;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
      return -1;
  }
  if (v == UINT64_MAX)
    return -1;
  *out = v;
  return 0;
}

int cs_fault_parse(const char *s, cs_fault_t *f)
{
  const char *c1 = strchr(s, ':');
  uint64_t rank, event = 0;
  memset(f, 0, sizeof(*f));
  if (!c1 || parse_u64(s, (size_t)(c1 - s), &rank) < 0 || rank >= CS_MAX_RANKS)
    return CS_EFAULTRANK;
  const char *kind = c1 + 1, *c2 = strchr(kind, ':');
  size_t klen = c2 ? (size_t)(c2 - kind) : strlen(kind);
  static const cs_fault_kind_t kinds[] = {CS_FAULT_SEGV, CS_FAULT_ABORT,
                                          CS_FAULT_EXIT, CS_FAULT_HANG};
  for (size_t i = 0; i < 4; i++) {
    const char *name = cs_fault_kind_name(kinds[i]);
    if (strlen(name) == klen && strncmp(kind, name, klen) == 0)
      f->kind = kinds[i];
  }
  if (f->kind == CS_FAULT_NONE)
    return CS_EFAULTKIND;
  if (c2 && parse_u64(c2 + 1, strlen(c2 + 1), &event) < 0) {
    f->kind = CS_FAULT_NONE;
    return CS_EFAULTEVENT;
  }
  f->rank = (uint32_t)rank;
  f->event = event;
  return 0;
}
