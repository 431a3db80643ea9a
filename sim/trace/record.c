/*
 * record.c - the recorder: the device hooks (cs_trace_hooks) that append
 * one record per event to the rank's ring of chunks in the shared region,
 * checksumming each as it is written, and the dma-land records the
 * scheduler's landings add in the launcher. Owns sequence numbers and the
 * hand-over of full chunks to the writer; does not own the file
 * (writer.c) or the format (trace.h).
 *
 * Sequence numbers come from the control block's atomic counter, taken
 * (or reserved, in free mode: free_producer_seq) before a producer's
 * effect (store, put, notify, fence, reduce, mark) and after a consumer's
 * observation (load, wait-begin, wait-end), so sorting by them is
 * causally consistent: a wait-end sorts after every notify it saw. Times are TSC ticks where the TSC is invariant; the header carries
 * the rate.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../launch.h"
#include "ring.h"

_Static_assert(CS_RECT_MAX_ROWS == CS_TRACE_MAX_ROWS,
               "the core and the trace readers agree on 2-D rows");

uint64_t cs_trace_ring_bytes(uint64_t chunk_rec)
{
  chunk_rec = (chunk_rec + CHUNK_GRAIN - 1) / CHUNK_GRAIN * CHUNK_GRAIN;
  return sizeof(cs_trace_ring_t) + CS_TRACE_CHUNKS * chunk_rec * sizeof(cs_trace_rec_t);
}

uint64_t cs_trace_chunk_rec(uint32_t nranks)
{
  uint64_t budget = 32ull << 20, lo = CS_TRACE_CHUNK_MIN, hi = 12800;
  uint64_t n = budget / ((uint64_t)(nranks ? nranks : 1) * CS_TRACE_CHUNKS *
                         sizeof(cs_trace_rec_t));
  n = n / CHUNK_GRAIN * CHUNK_GRAIN;
  return n < lo ? lo : n > hi ? hi : n;
}

/* Sequence numbers. A consumer (load, wait-end, wait-begin) takes its
 * number from the shared counter after its observation, so it sorts after
 * every producer effect it saw. A producer needs only a number taken before
 * its effect, and a local event (fence, reduce, mark) only one after its
 * rank's previous event: so a consumer reserves SEQ_BLOCK numbers at once,
 * and the events after it in program order use the rest of the block. The
 * counter's line then moves between cores once per consumer instead of once
 * per event (it was the largest single cost of tracing: ~8% of a 1 MiB
 * call). Numbers are unique and increase along each rank, with gaps.
 * Controlled runs take one number per event (the scheduler counts steps
 * with the counter). */
#define SEQ_BLOCK 16

static inline uint64_t take_seq(cs_dev_t *d, cs_trace_rank_t *k, uint64_t n)
{
  uint64_t s = __atomic_fetch_add(&d->world->ctl->event_seq, n, __ATOMIC_SEQ_CST);
  k->seq_next = s + 1;
  k->seq_end = s + n;
  return s;
}

static inline uint64_t consumer_seq(cs_dev_t *d, cs_trace_rank_t *k)
{
  return take_seq(d, k, d->controlled ? 1 : SEQ_BLOCK);
}

static inline uint64_t producer_seq(cs_dev_t *d, cs_trace_rank_t *k)
{
  if (k->seq_next != k->seq_end)
    return k->seq_next++;
  return consumer_seq(d, k);
}

/* Free mode needs no begin hook: there a producer's number, taken at its
 * end, is the next of its rank's block, and a block is never left empty
 * after an event: the event that takes a block's last number reserves the
 * next block at its end, before the next event's effect. Each rank's first
 * block was reserved by the launcher (cs_tracer_launch_opts): [seq_base +
 * rank * SEQ_BLOCK, + SEQ_BLOCK), taken at the rank's first producer (the
 * only time its block is empty at an event's end). */
static inline uint64_t free_producer_seq(cs_dev_t *d, cs_trace_rank_t *k)
{
  if (__builtin_expect(k->seq_next == k->seq_end, 0)) {
    k->seq_next = k->seq_base + (uint64_t)d->rank * SEQ_BLOCK;
    k->seq_end = k->seq_next + SEQ_BLOCK;
  }
  uint64_t s = k->seq_next++;
  if (__builtin_expect(k->seq_next == k->seq_end, 0)) {
    k->seq_next = __atomic_fetch_add(&d->world->ctl->event_seq, SEQ_BLOCK,
                                     __ATOMIC_SEQ_CST);
    k->seq_end = k->seq_next + SEQ_BLOCK;
  }
  return s;
}

/* The current chunk is full: hand it to the launcher and move to the next
 * slot once that one is free (bounded memory: a rank that outruns the disk
 * waits). A rank rings the doorbell, so the launcher writes the chunk now,
 * and rings again after each nap while it waits: completions wake nobody,
 * and a waiting rank has nothing better to do; the launcher itself
 * (dma-land records) writes at once. The chunk
 * is handed over once: after an abort a rank may call this again for the
 * same full chunk (the record is dropped each time), and by then the
 * launcher may be writing it. The stores are ordered so that a rank killed
 * between any two of them leaves a state the launcher's final pass reads
 * right: the chunk FULL with no records after it, or the next slot current
 * and empty. lt: the launcher's tracer when the launcher appends, NULL in
 * a rank. -1: the run is aborting, drop the record. */
static __attribute__((noinline)) int next_chunk(cs_world_t *w,
                                                cs_trace_ring_t *r,
                                                cs_tracer_t *lt)
{
  uint32_t c = r->cur, n = (c + 1) % CS_TRACE_CHUNKS;
  if (__atomic_load_n(&r->state[c], __ATOMIC_ACQUIRE) == SLOT_FILLING) {
    __atomic_store_n(&r->state[c], SLOT_FULL, __ATOMIC_RELEASE);
    if (lt)
      cs_tracer_drain(lt);
    else
      kill(r->launcher, CS_LAUNCH_DOORBELL); /* chunk c: write it */
  }
  for (uint32_t naps = 0;
       __atomic_load_n(&r->state[n], __ATOMIC_ACQUIRE) != SLOT_FREE; naps++) {
    if (lt) {
      cs_tracer_drain(lt);
      if (__atomic_load_n(&r->state[n], __ATOMIC_ACQUIRE) != SLOT_FREE &&
          cs__tracer_reap(lt, 1) < 0)
        return -1;
      continue;
    }
    if (__atomic_load_n(&w->ctl->abort_word, __ATOMIC_ACQUIRE))
      return -1; /* the launcher may never write again */
    if (naps > 0)
      kill(r->launcher, CS_LAUNCH_DOORBELL);
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  __atomic_store_n(&r->state[n], SLOT_FILLING, __ATOMIC_RELAXED);
  __atomic_store_n(&r->end, r->end + r->chunk_rec, __ATOMIC_RELEASE);
  __atomic_store_n(&r->cur, n, __ATOMIC_RELEASE);
  return 0;
}

/* The event's field runs land at these record offsets (see cs_event_t):
 * every field at the same distance from its run's start, same width. */
#define SAME_PLACE(f, base)                                                     \
  _Static_assert(offsetof(cs_trace_rec_t, f) - offsetof(cs_trace_rec_t, base) ==  \
                         offsetof(cs_event_t, f) - offsetof(cs_event_t, base) &&  \
                     sizeof(((cs_trace_rec_t *)0)->f) ==                         \
                         sizeof(((cs_event_t *)0)->f),                           \
                 #f " is not where append copies it")
SAME_PLACE(elem_off, elem_off);
SAME_PLACE(dma_id, elem_off);
SAME_PLACE(slot, slot);
SAME_PLACE(cell, slot);
SAME_PLACE(valid, slot);
SAME_PLACE(phys, slot);

/* A record as its ten 8-byte words, in file order (the last holds step
 * and, in its high half, the checksum): built in registers, so the
 * checksum is taken from them rather than read back from the ring. */
typedef struct rec_words {
  uint64_t w[10];
} rec_words_t;

static inline __attribute__((always_inline)) rec_words_t
words(uint64_t t, uint32_t rank, uint32_t kind, const cs_event_t *ev,
      uint64_t seq, int32_t value, int32_t observed, uint32_t opcmp,
      uint32_t phase, uint32_t round, uint32_t step)
{
  rec_words_t r;
  r.w[0] = seq;
  r.w[1] = t;
  memcpy(&r.w[2], &ev->elem_off, 16);
  r.w[4] = rank | (uint64_t)ev->peer << 32;
  memcpy(&r.w[5], &ev->slot, 16);
  r.w[7] = (uint32_t)value | (uint64_t)(uint32_t)observed << 32;
  r.w[8] = (kind & 0xffff) | (opcmp & 0xff) << 16 | (phase & 0xff) << 24 |
           (uint64_t)round << 32;
  r.w[9] = step;
  return r;
}

/* Stores the ten words into record x, one 8-byte store each (the last
 * carries the checksum only where the caller has put it there). */
static inline __attribute__((always_inline)) void put(cs_trace_rec_t *x,
                                                      const rec_words_t *r)
{
  uint8_t *b = (uint8_t *)x;
  memcpy(b + 0, &r->w[0], 8);
  memcpy(b + 8, &r->w[1], 8);
  memcpy(b + 16, &r->w[2], 8);
  memcpy(b + 24, &r->w[3], 8);
  memcpy(b + 32, &r->w[4], 8);
  memcpy(b + 40, &r->w[5], 8);
  memcpy(b + 48, &r->w[6], 8);
  memcpy(b + 56, &r->w[7], 8);
  memcpy(b + 64, &r->w[8], 8);
  memcpy(b + 72, &r->w[9], 8);
}

/* One record per event, on the hot path of every traced run: whole 8-byte
 * words, the event's fields copied as blocks, then the checksum, read back
 * from the store buffer. Records are sealed in the rank as they are
 * written (the launcher never reads a record, it only writes chunks): a
 * record below the ring's head is whole and sealed. (Sealing in batches
 * re-reads records that the tile copies in between have evicted.) This is
 * the portable form; a rank whose CPU has crc32 uses fill_hw. */
static inline __attribute__((always_inline)) void
fill(cs_trace_rec_t *x, uint64_t t, uint32_t rank, uint32_t kind,
     const cs_event_t *ev, uint64_t seq, int32_t value, int32_t observed,
     uint32_t opcmp, uint32_t phase, uint32_t round, uint32_t step)
{
  rec_words_t r = words(t, rank, kind, ev, seq, value, observed, opcmp, phase,
                        round, step);
  put(x, &r);
  x->checksum = cs_trace_rec_sum(x);
}

#if defined(__x86_64__)
#define HAVE_FILL_HW 1
/* The same record with the CRC-32C taken from the words in registers
 * (nine crc32q and one crc32l, as cs_trace_rec_sum computes it from
 * memory), then ten plain 8-byte stores: no call, nothing read back.
 * Only where the CPU has SSE4.2 (rank_hooks_hw). */
__attribute__((target("sse4.2"))) static inline uint32_t
words_sum_hw(const rec_words_t *r)
{
  uint64_t c = ~0u;
  c = __builtin_ia32_crc32di(c, r->w[0]);
  c = __builtin_ia32_crc32di(c, r->w[1]);
  c = __builtin_ia32_crc32di(c, r->w[2]);
  c = __builtin_ia32_crc32di(c, r->w[3]);
  c = __builtin_ia32_crc32di(c, r->w[4]);
  c = __builtin_ia32_crc32di(c, r->w[5]);
  c = __builtin_ia32_crc32di(c, r->w[6]);
  c = __builtin_ia32_crc32di(c, r->w[7]);
  c = __builtin_ia32_crc32di(c, r->w[8]);
  return ~__builtin_ia32_crc32si((uint32_t)c, (uint32_t)r->w[9]);
}

__attribute__((target("sse4.2"))) static inline void
fill_hw(cs_trace_rec_t *x, uint64_t t, uint32_t rank, uint32_t kind,
        const cs_event_t *ev, uint64_t seq, int32_t value, int32_t observed,
        uint32_t opcmp, uint32_t phase, uint32_t round, uint32_t step)
{
  rec_words_t r = words(t, rank, kind, ev, seq, value, observed, opcmp, phase,
                        round, step);
  r.w[9] |= (uint64_t)words_sum_hw(&r) << 32;
  put(x, &r);
}
#endif

/* Appends one record to ring r, its position from the ring's header: the
 * launcher's dma-land records, and a rank's in controlled mode (where the
 * two alternate). */
static void append(cs_world_t *w, cs_trace_ring_t *r, cs_tracer_t *lt,
                   uint32_t rank, uint32_t kind, const cs_event_t *ev,
                   uint64_t seq, int32_t value, int32_t observed, uint32_t opcmp,
                   uint32_t phase, uint32_t round, uint32_t step)
{
  uint64_t h = r->head;
  if (h == r->end && next_chunk(w, r, lt) < 0)
    return;
  fill(slot_rec(r, r->cur) + (h + r->chunk_rec - r->end), rec_clock(r), rank,
       kind, ev, seq, value, observed, opcmp, phase, round, step);
  __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
}

/* Writes every 4 KiB page of the ring's records once, at the rank's first
 * record, without changing a byte (an atomic add of 0: whoever reads the
 * word meanwhile reads what was there; nothing is handed over yet). Where
 * a process's first write to a page of its mapping is slow (in a VM,
 * ~9 us per page even with MAP_POPULATE and no guest page
 * fault: the writing process's mapping, not the page, is what is slow the
 * first time), this pays for the whole ring here, once per rank and run,
 * instead of ~180 ns on each record of the ring's first lap; the ring is
 * small enough (cs_trace_chunk_rec) that a long run comes back to written
 * pages. A run that records less than its ring pays for pages it never
 * uses: ~9 ms per rank for a 4 MB ring in that VM, ~0.1 ms on a machine
 * where a first write is cheap. */
static __attribute__((noinline, cold)) void ring_touch(cs_trace_ring_t *r)
{
  uint8_t *p = (uint8_t *)r->rec;
  uint64_t bytes = (uint64_t)CS_TRACE_CHUNKS * r->chunk_rec * sizeof(cs_trace_rec_t);
  for (uint64_t o = 0; o < bytes; o += 4096)
    __atomic_fetch_add((uint32_t *)(p + o), 0, __ATOMIC_RELAXED);
}

/* In free mode a rank is its ring's only writer, so it keeps its place in
 * process memory (each rank is its own process): the next record, the
 * records left in the chunk, the head. */
static __attribute__((noinline)) int rank_resync(cs_dev_t *d,
                                                 cs_trace_rank_t *k)
{
  if (!k->ring) {
    k->ring = ring_of(d->world, d->rank);
    ring_touch(k->ring);
  }
  cs_trace_ring_t *r = k->ring;
  k->head = r->head;
  if (k->head == r->end && next_chunk(d->world, r, NULL) < 0)
    return -1;
  k->next = slot_rec(r, r->cur) + (k->head + r->chunk_rec - r->end);
  k->left = r->end - k->head;
  return 0;
}

/* A rank's append, inlined into each hook: hw (a constant) picks fill_hw,
 * for the hooks compiled for SSE4.2 (hooks_hw). */
static inline __attribute__((always_inline)) void
rank_append(cs_dev_t *d, cs_trace_rank_t *k, uint32_t kind,
            const cs_event_t *ev, uint64_t seq, int32_t value,
            int32_t observed, uint32_t flags, int hw)
{
  if (__builtin_expect(d->controlled, 0)) {
    append(d->world, ring_of(d->world, d->rank), NULL, d->rank, kind, ev, seq,
           value, observed, ev->opcmp | flags, d->tag_phase, d->tag_round,
           d->tag_step);
    return;
  }
  if (__builtin_expect(k->left == 0, 0) && rank_resync(d, k) < 0)
    return;
  cs_trace_rec_t *x = k->next++;
  uint64_t t = rec_clock(k->ring);
#ifdef HAVE_FILL_HW
  if (hw)
    fill_hw(x, t, d->rank, kind, ev, seq, value, observed, ev->opcmp | flags,
            d->tag_phase, d->tag_round, d->tag_step);
  else
#endif
    fill(x, t, d->rank, kind, ev, seq, value, observed, ev->opcmp | flags,
         d->tag_phase, d->tag_round, d->tag_step);
  (void)hw;
  k->left--;
  __atomic_store_n(&k->ring->head, ++k->head, __ATOMIC_RELEASE);
}

static inline cs_trace_rank_t *rank_of(void *tracer)
{
  return &((cs_tracer_t *)tracer)->rank;
}

static int is_consumer(uint32_t kind)
{
  return kind == CS_EV_LOAD || kind == CS_EV_WAIT || kind == CS_EV_READ;
}

/* Controlled mode only (free mode: free_producer_seq). */
static void hook_begin(cs_dev_t *d, const cs_event_t *ev, void *arg)
{
  if (!is_consumer(ev->kind))
    d->hook_seq = producer_seq(d, rank_of(arg)); /* before the effect */
}

/* A wait that blocks gets a wait-begin record (value = target, observed =
 * the cell when it started waiting); one satisfied at once has only its
 * wait-end. */
static inline __attribute__((always_inline)) void
block_with(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg,
           int hw)
{
  cs_trace_rank_t *k = rank_of(arg);
  rank_append(d, k, CS_TR_WAIT_BEGIN, ev, consumer_seq(d, k), ev->value,
              observed, 0, hw);
}

static inline __attribute__((always_inline)) void
end_with(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg,
         int hw)
{
  cs_trace_rank_t *k = rank_of(arg);
  uint64_t seq = is_consumer(ev->kind)   ? consumer_seq(d, k)
                 : __builtin_expect(d->controlled, 0) ? d->hook_seq
                                         : free_producer_seq(d, k);
  rank_append(d, k, ev->kind, ev, seq, ev->value, observed, 0, hw);
}

static void hook_block(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                       void *arg)
{
  block_with(d, ev, observed, arg, 0);
}

static void hook_end(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                     void *arg)
{
  end_with(d, ev, observed, arg, 0);
}

static void hook_fail(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                      void *arg)
{
  cs_trace_rank_t *k = rank_of(arg);
  rank_append(d, k, ev->kind, ev, consumer_seq(d, k), ev->value, observed,
              CS_TR_FAILED, 0);
}

/* The scheduler landed a posted op (controlled mode), in the launcher or
 * in the rank that holds the turn. The posting rank sleeps while its DMA
 * engine lands an op (one actor at a time), so the lander may append to
 * that rank's ring: a dma-land record with round = the landed op's kind,
 * opcmp = notify op, value = notify value, observed = the cell after a
 * notify; phys = 64 and elem_off = the line's byte offset for an a2a3 Set,
 * which writes back its whole line. Only the launcher writes chunks
 * itself; a rank hands a full one over by the doorbell, as for its own
 * records (its `arg` is a copy of the launcher's tracer, not to be
 * drained). */
static void hook_land(cs_world_t *w, uint32_t rank, const cs_event_t *op,
                      int32_t observed, void *arg)
{
  cs_event_t ev = {.elem_off = op->elem_off, .dma_id = op->dma_id,
                   .peer = op->peer, .slot = op->slot, .cell = op->cell,
                   .valid = op->valid, .phys = op->phys};
  cs_trace_ring_t *r = ring_of(w, rank);
  cs_tracer_t *lt = getpid() == r->launcher ? arg : NULL;
  uint64_t seq = __atomic_fetch_add(&w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  append(w, r, lt, rank, CS_TR_DMA_LAND, &ev, seq, op->value, observed,
         op->opcmp, 0, op->kind, 0);
}

const cs_dev_hooks_t cs_trace_hooks = {hook_begin, hook_end, hook_fail,
                                       hook_block, hook_land};

#ifdef HAVE_FILL_HW
/* The hooks of the two records of nearly every event (end, and a wait's
 * begin) compiled for SSE4.2, each record's checksum taken from registers
 * (fill_hw): the same bytes as cs_trace_hooks writes. */
__attribute__((target("sse4.2"))) static void
hook_block_hw(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg)
{
  block_with(d, ev, observed, arg, 1);
}

__attribute__((target("sse4.2"))) static void
hook_end_hw(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg)
{
  end_with(d, ev, observed, arg, 1);
}

static const cs_dev_hooks_t hooks_free_hw = {NULL, hook_end_hw, hook_fail,
                                             hook_block_hw, hook_land};
#endif

/* Free mode: no begin hook (free_producer_seq). */
static const cs_dev_hooks_t hooks_free = {NULL, hook_end, hook_fail,
                                          hook_block, hook_land};

/* The recorder's hooks for this launch, chosen once: controlled mode takes
 * a producer's number at its begin (the scheduler counts steps with the
 * counter); free mode has no begin hook, and its records are sealed with
 * crc32 where the CPU has it. */
static const cs_dev_hooks_t *hooks_for(int controlled)
{
  if (controlled)
    return &cs_trace_hooks;
#ifdef HAVE_FILL_HW
  if (__builtin_cpu_supports("sse4.2"))
    return &hooks_free_hw;
#endif
  return &hooks_free;
}

uint64_t cs_trace_rank_records(const cs_dev_t *d)
{
  if (!d->world->ctl->trace_bytes)
    return 0;
  return __atomic_load_n(&ring_of(d->world, d->rank)->head, __ATOMIC_ACQUIRE);
}

uint64_t cs_tracer_records(const cs_tracer_t *t)
{
  uint64_t n = 0;
  for (uint32_t r = 0; r < t->w->ctl->nranks; r++)
    n += __atomic_load_n(&ring_of(t->w, r)->head, __ATOMIC_ACQUIRE);
  return n;
}

void cs_tracer_launch_opts(cs_tracer_t *t, cs_launch_opts_t *o)
{
  /* Doorbells go to this process, which must be the one that calls
   * cs_launch with these options. */
  for (uint32_t r = 0; r < t->w->ctl->nranks; r++)
    ring_of(t->w, r)->launcher = (int32_t)getpid();
  o->hooks = hooks_for(o->sched != NULL);
  if (!o->sched) { /* each rank's first block of numbers */
    t->rank.seq_next = t->rank.seq_end = 0;
    t->rank.seq_base = t->w->ctl->event_seq;
    t->w->ctl->event_seq += (uint64_t)t->w->ctl->nranks * SEQ_BLOCK;
  }
  o->hook_arg = t;
  o->tick = cs_tracer_drain;
  o->tick_arg = t;
  /* A rank that fills a chunk rings the doorbell, so the tick is only a
   * safety net: the launcher otherwise sleeps, as in an untraced run (each
   * wake takes a CPU from a rank). */
  o->tick_ns = 50000000ull;
}

