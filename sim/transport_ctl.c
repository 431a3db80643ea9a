/*
 * transport_ctl.c - the controlled transport (transport.h): every event is
 * a scheduling point (the rank posts it and sleeps until the scheduler
 * grants it, sched.h), so exactly one actor runs at a time. Under sc,
 * effects land at issue as in the free transport; under fifo and relaxed,
 * stores, puts and notifies are posted to the rank's DMA queue and land
 * when the scheduler picks that DMA engine. A wait is granted only once
 * its condition holds and a fence only once the rank's queue is empty, so
 * neither blocks here. Loads read memory as it is when they run and are
 * never consumed in place (other actors run between events). Used by the
 * ranks of a controlled run (cs_launch with a scheduler).
 */
#include "transport.h"

#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sched.h"
#include "sched/internal.h"

/* For tests only: COLLSIM_TEST_HANDOVER_DELAY_US=N makes a rank sleep N
 * microseconds right after it posts (or finishes), where a rank that
 * read the turn after posting would read another rank's: the race that
 * ctest sched holds this file to (docs/development.md). Read once per
 * rank process; 0 (unset) costs one predicted branch per event. */
static long handover_delay_us(void)
{
  static long us = -1;
  if (us < 0) {
    const char *e = getenv("COLLSIM_TEST_HANDOVER_DELAY_US");
    char *end;
    long v = e ? strtol(e, &end, 10) : 0;
    us = e && *e && !*end && v > 0 && v <= 1000000 ? v : 0;
  }
  return us;
}

static void handover_delay(void)
{
  long us = handover_delay_us();
  if (__builtin_expect(us != 0, 0)) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
  }
}

/* Stores the rank's scheduler state (SR_POSTED, SR_DONE) and returns
 * whether it holds the turn, read before the store: once it has posted,
 * the launcher may grant another rank and switch to SM_RANK (a rank's
 * first event, before any grant), and a rank that read that mode would
 * pick too, beside the granted one: two ranks running, an extra draw of
 * the rng, and a trace that differs run to run under one schedule. The
 * holder's mode cannot change under it. */
static int set_state(cs_dev_t *d, uint32_t state)
{
  int my_turn = __atomic_load_n(&area_of(d->world)->mode, __ATOMIC_ACQUIRE) ==
                SM_RANK;
  __atomic_store_n(&slot_of(d->world, d->rank)->state, state, __ATOMIC_RELEASE);
  handover_delay();
  return my_turn;
}

/* The rank's half of the handshake: post the event, sleep until granted;
 * or, on its turn (sched/internal.h), pick the next step itself, running
 * on at once when it picks itself. */
static void ctl_point(cs_dev_t *d, cs_event_t *ev)
{
  cs_world_t *w = d->world;
  cs_sched_slot_t *sl = slot_of(w, d->rank);
  sl->next = *ev;
  if (ev->kind == CS_EV_WAIT) {
    d->st->wait_slot = ev->slot;
    d->st->wait_cell = ev->cell;
    d->st->wait_value = ev->value;
    d->st->wait_cmp = ev->opcmp;
    __atomic_store_n(&d->st->state, CS_RS_WAITING, __ATOMIC_RELEASE);
  }
  cs_sched_area_t *a = area_of(w);
  int runs_on = 0;
  if (set_state(d, SR_POSTED))
    runs_on = cs__sched_rank_turn(w, d->rank, d->hooks, d->hook_arg); /* this rank's turn to pick */
  else
    sem_post(&a->wake);
  while (!runs_on && sem_wait(&sl->sem) < 0 && errno == EINTR)
    ;
  uint32_t abort = __atomic_load_n(&w->ctl->abort_word, __ATOMIC_ACQUIRE);
  if (abort) {
    /* A wait a deadlock stopped before it was granted (nothing could
     * satisfy it) leaves its wait-begin, as a free-mode wait that is
     * stopped does: the checker sees the wait that never ended. */
    if (ev->kind == CS_EV_WAIT && abort == CS_ABORT_DEADLOCK)
      cs__dev_block(d, ev, __atomic_load_n(
          (int32_t *)(d->mywin + cs_slot_cell_off(&d->layout->slot[ev->slot],
                                                  ev->cell)),
          __ATOMIC_ACQUIRE));
    cs__dev_aborted(d);
  }
  if (ev->kind == CS_EV_WAIT)
    __atomic_store_n(&d->st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
}

/* Queues a store/put/notify for the rank's DMA engine (fifo, relaxed),
 * with a copy of its payload; sets ev->dma_id. The scheduler enabled this
 * post only with room in the queue and the arena. */
static void ctl_post(cs_dev_t *d, cs_event_t *ev, const void *data,
                     uint32_t bytes)
{
  cs_sched_slot_t *sl = slot_of(d->world, d->rank);
  /* The scheduler enabled this post only with room in queue and arena. */
  cs_dma_op_t *op = &sl->q[sl->nops++];
  memset(op, 0, sizeof(*op));
  op->dma_id = ++sl->next_id;
  op->elem_off = ev->elem_off;
  op->kind = ev->kind;
  op->peer = ev->peer;
  op->slot = ev->slot;
  op->cell = ev->cell;
  op->op = ev->opcmp;
  op->value = ev->value;
  op->valid = ev->valid;
  op->bytes = bytes;
  op->data_off = sl->arena_used;
  if (bytes) {
    memcpy(arena_of(d->world, d->rank) + sl->arena_used, data, bytes);
    sl->arena_used += (bytes + 63) / 64 * 64;
  }
  ev->dma_id = op->dma_id;
}

/* The rank's body returned: DONE for the scheduler. */
static void ctl_done(cs_dev_t *d)
{
  cs__sched_done(d->world, set_state(d, SR_DONE));
}


static void ctl_load(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                     void *dst, size_t nbytes)
{
  memcpy(dst, cs__shm_at(d, ev->peer, off), nbytes);
}

/* Whether posted ops queue for the DMA engine (fifo, relaxed, a2a3). */
static inline int posted(const cs_dev_t *d)
{
  return d->world->ctl->controlled > 1 + CS_MM_SC;
}

static void ctl_write(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                      const void *src, size_t nbytes)
{
  if (posted(d))
    ctl_post(d, ev, src, (uint32_t)nbytes);
  else
    cs__free_write(d, ev, off, src, nbytes);
}

/* A 2-D store: posted as one op whose payload is the packed rows (the op
 * carries rows and stride in cell and value; the landing scatters them). */
static void ctl_write2d(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                        const void *src, size_t rowbytes, uint32_t rows,
                        uint64_t pitch)
{
  if (posted(d))
    ctl_post(d, ev, src, (uint32_t)(rowbytes * rows));
  else
    cs__free_write2d(d, ev, off, src, rowbytes, rows, pitch);
}

/* ---- a2a3 (sched.h: CS_MM_A2A3) ----
 * A posted op is in the pipe until a pipe barrier (or a notify's own)
 * marks it drained; it lands (becomes visible) when the scheduler picks
 * it, in any order; the DDR fence runs only once no drained op is left.
 * The rank's cache lives in its scheduler slot, so it starts empty with
 * every run and the scheduler sees it. The scheduler runs an event that
 * fills a line only once the rank's own writes to that line have landed
 * (core.c), so a fill reads memory. */

static inline int a2a3(const cs_dev_t *d)
{
  return d->world->ctl->controlled == 1 + CS_MM_A2A3;
}

static inline uint64_t line_of(uint64_t off)
{
  return off & ~(uint64_t)(CS_LINE - 1);
}

/* Marks every op in the rank's queue with `flag`; only those already
 * drained when `drained_only`. */
static void mark_ops(cs_sched_slot_t *sl, uint32_t flag, int drained_only)
{
  for (uint32_t i = 0; i < sl->nops; i++)
    if (!drained_only || (sl->q[i].flags & OP_DRAINED))
      sl->q[i].flags |= flag;
}

static void cache_drop(cs_sched_slot_t *sl, uint32_t peer, uint64_t line)
{
  cs_cache_line_t *c = cs__cache_find(sl, peer, line);
  if (c)
    c->valid = 0;
}

/* Reads line `line` of `peer`'s window from memory into the rank's cache
 * (round-robin over the entries: the lines are clean, so dropping one
 * loses nothing). */
static cs_cache_line_t *cache_fill(cs_dev_t *d, cs_sched_slot_t *sl,
                                   uint32_t peer, uint64_t line)
{
  cs_cache_line_t *c = cs__cache_find(sl, peer, line);
  for (uint32_t i = 0; !c && i < CS_CACHE_LINES; i++)
    if (!sl->cache[i].valid)
      c = &sl->cache[i]; /* a free entry first */
  if (!c)
    c = &sl->cache[sl->cache_next++ % CS_CACHE_LINES];
  c->valid = 1;
  c->peer = peer;
  c->off = line;
  memcpy(c->data, cs__shm_at(d, peer, line), CS_LINE);
  return c;
}

/* A notify on a2a3: the line leaves the rank's cache (TNOTIFY cleans and
 * invalidates it first); the signal is posted, an Add as the word's
 * read-modify-write, a Set as the whole line read now with the cell
 * changed; then the notify's own DDR fence covers what was drained before
 * it (not the signal) and its pipe barrier drains everything. */
static void a2a3_notify(cs_dev_t *d, cs_event_t *ev, uint64_t off)
{
  cs_sched_slot_t *sl = slot_of(d->world, d->rank);
  uint64_t line = line_of(off);
  cache_drop(sl, ev->peer, line);
  mark_ops(sl, OP_FENCED, 1);
  if (ev->opcmp == CS_NOTIFY_SET) {
    uint8_t buf[CS_LINE];
    memcpy(buf, cs__shm_at(d, ev->peer, line), CS_LINE);
    memcpy(buf + (off - line), &ev->value, sizeof(ev->value));
    ctl_post(d, ev, buf, CS_LINE);
    cs_dma_op_t *op = &sl->q[sl->nops - 1];
    op->flags |= OP_LINE;
    op->elem_off = line;
  } else {
    ctl_post(d, ev, NULL, 0);
  }
  mark_ops(sl, OP_DRAINED, 0);
}

static int32_t ctl_notify(cs_dev_t *d, cs_event_t *ev, uint64_t off)
{
  if (!posted(d))
    return cs__free_notify(d, ev, off);
  if (a2a3(d))
    a2a3_notify(d, ev, off);
  else
    ctl_post(d, ev, NULL, 0);
  return 0;
}

/* Granted only once its condition holds (core.c); on a2a3 it leaves the
 * cell's line in the rank's cache as it read it. */
static int32_t ctl_wait(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  int32_t v = cs__free_wait(d, ev, off);
  if (a2a3(d))
    cache_fill(d, slot_of(d->world, d->rank), d->rank, line_of(off));
  return v;
}

/* The pipe barrier drains (a2a3); the DDR fence, and both on the other
 * models, were granted only once there was nothing left to wait for. */
static void ctl_order(cs_dev_t *d, const cs_event_t *ev)
{
  if (a2a3(d) && ev->kind == CS_EV_PIPE)
    mark_ops(slot_of(d->world, d->rank), OP_DRAINED, 0);
}

static int32_t ctl_read(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  int32_t v;
  if (!a2a3(d)) {
    memcpy(&v, cs__shm_at(d, ev->peer, off), sizeof(v));
    return v;
  }
  cs_sched_slot_t *sl = slot_of(d->world, d->rank);
  uint64_t line = line_of(off);
  cs_cache_line_t *c = cs__cache_find(sl, ev->peer, line);
  if (!c)
    c = cache_fill(d, sl, ev->peer, line);
  memcpy(&v, c->data + (off - line), sizeof(v));
  return v;
}

static void ctl_dcci(cs_dev_t *d, const cs_event_t *ev, uint64_t off)
{
  if (!a2a3(d))
    return;
  cs_sched_slot_t *sl = slot_of(d->world, d->rank);
  if (ev->opcmp == CS_DCCI_ALL) {
    for (uint32_t i = 0; i < CS_CACHE_LINES; i++)
      sl->cache[i].valid = 0;
  } else {
    cache_drop(sl, ev->peer, line_of(off));
  }
}

const cs_dev_ops_t cs_transport_controlled = {
    .name = "controlled",
    .point = ctl_point,
    .load = ctl_load,
    .view = NULL,
    .write = ctl_write,
    .load2d = cs__free_load2d, /* loads read memory as it is when they run */
    .write2d = ctl_write2d,
    .notify = ctl_notify,
    .wait = ctl_wait, /* granted only when satisfied: returns at once */
    .fence = cs__free_fence, /* granted only with an empty queue */
    .order = ctl_order,
    .read = ctl_read,
    .dcci = ctl_dcci,
    .done = ctl_done,
};
