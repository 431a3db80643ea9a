/*
 * trace.c - recording and writing the transfer log (format: trace.h,
 * traces/FORMAT.md).
 *
 * Recording: each rank appends fixed-size records to its own ring of chunks
 * in the shared region, checksumming each as it writes it. Sequence numbers
 * come from the control block's atomic counter, taken before a producer's
 * effect (store, put, notify, fence, reduce, mark) and after a consumer's
 * observation (load, wait-begin, wait-end), so sorting by them is causally
 * consistent: a wait-end sorts after every notify it saw. Consumers reserve
 * a block of numbers for the events after them (see SEQ_BLOCK). Times are
 * TSC ticks where the TSC is invariant; the header carries the rate.
 *
 * Writing: a rank that fills a chunk hands it to the launcher and rings its
 * doorbell (CS_LAUNCH_DOORBELL); the launcher writes the chunk with liburing
 * straight from the shared memory (O_DIRECT where the file system allows),
 * asynchronously, while the run goes on, and frees the slot when the write
 * completes. A rank whose next slot is not free yet waits: memory stays
 * bounded (CS_TRACE_CHUNKS chunks per rank). The launcher never reads a
 * record: on a 2-core machine every cycle it spends is taken from a rank,
 * and copying and checksumming records in the launcher made a 4 MiB run
 * 1.6-2x slower (traces/README.md). The final pass after the ranks are
 * reaped appends each rank's partial chunk and the FAULT and ABORT records,
 * so the trace of a crashed run ends with its cause. Readers sort by seq.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif


/* ------------------------------------------------------------ checksums */

uint32_t cs_trace_fnv32(const void *p, size_t n)
{
  const uint8_t *b = p;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

uint64_t cs_trace_fnv64(const void *p, size_t n)
{
  const uint8_t *b = p;
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* CRC-32C (Castagnoli, reflected 0x82f63b78) of a record's first 76
 * bytes: with SSE4.2 nine crc32q and one crc32l, else a table. */
static uint32_t crc_table[256];

static void crc_table_init(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc_soft(const uint8_t *p, size_t n)
{
  if (!crc_table[1])
    crc_table_init();
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++)
    c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(const uint8_t *p)
{
  uint64_t c = ~0u, w;
  for (int i = 0; i < 9; i++) {
    memcpy(&w, p + 8 * i, 8);
    c = __builtin_ia32_crc32di(c, w);
  }
  uint32_t t;
  memcpy(&t, p + 72, 4);
  return ~__builtin_ia32_crc32si((uint32_t)c, t);
}

/* Whether this CPU has the crc32 instruction (asked once). */
static int crc_hw_ok(void)
{
  static int hw = -1;
  if (hw < 0)
    hw = __builtin_cpu_supports("sse4.2");
  return hw;
}

uint32_t cs_trace_rec_sum(const cs_trace_rec_t *x)
{
  _Static_assert(offsetof(cs_trace_rec_t, checksum) == 76, "76 bytes");
  return crc_hw_ok() ? crc_hw((const uint8_t *)x) : crc_soft((const uint8_t *)x, 76);
}

const char *cs_trace_kind_name(uint32_t kind)
{
  static const char *const names[CS_TR_NKINDS] = {
      "?", "load", "store", "put", "notify", "wait-end", "fence", "reduce",
      "mark", "wait-begin", "dma-post", "dma-land", "fault", "abort"};
  return kind < CS_TR_NKINDS ? names[kind] : "?";
}

/* ------------------------------------------------------------ rings */

/* A rank's ring: a 4 KiB header, then CS_TRACE_CHUNKS chunks of chunk_rec
 * records, each chunk a whole number of 4 KiB blocks, so a full chunk goes
 * to the file straight from the shared memory (O_DIRECT, no copy). A chunk
 * slot is FILLING (the rank appends to it), FULL (waiting for the
 * launcher), WRITING (its write is in flight) or FREE. POD. */
enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_FULL, SLOT_WRITING };

typedef struct cs_trace_ring {
  /* The rank's line: read and written on every append. */
  uint64_t head;      /* records published by the rank */
  uint64_t end;       /* head at which the current chunk is full */
  uint32_t cur;       /* the current chunk's slot */
  uint32_t chunk_rec; /* records per chunk */
  uint32_t use_tsc;   /* 1: records carry TSC ticks since start_tsc in t_ns
                         (the header's tick_ns converts them), 0: ns */
  int32_t  launcher;  /* pid that gets the doorbell */
  uint64_t start_tsc; /* TSC at the trace start */
  uint64_t start_ns;  /* CLOCK_MONOTONIC of the trace start */
  uint8_t  pad0[16];
  /* The slots' states: the rank fills and hands over, the launcher frees. */
  uint32_t state[CS_TRACE_CHUNKS];
  uint8_t  pad1[4096 - 64 - 4 * CS_TRACE_CHUNKS];
  cs_trace_rec_t rec[]; /* CS_TRACE_CHUNKS * chunk_rec records */
} cs_trace_ring_t;
_Static_assert(offsetof(cs_trace_ring_t, state) == 64, "state line");
_Static_assert(sizeof(cs_trace_ring_t) == 4096, "ring header: one block");

/* Records per chunk: a multiple of 256, so a chunk is 80 * 256 = 20 KiB =
 * five 4 KiB blocks times a whole number. */
#define CHUNK_GRAIN 256u

uint64_t cs_trace_ring_bytes(uint64_t chunk_rec)
{
  chunk_rec = (chunk_rec + CHUNK_GRAIN - 1) / CHUNK_GRAIN * CHUNK_GRAIN;
  return sizeof(cs_trace_ring_t) + CS_TRACE_CHUNKS * chunk_rec * sizeof(cs_trace_rec_t);
}

uint64_t cs_trace_chunk_rec(uint32_t nranks)
{
  uint64_t budget = 32ull << 20, lo = 1280, hi = 51200;
  uint64_t n = budget / ((uint64_t)(nranks ? nranks : 1) * CS_TRACE_CHUNKS *
                         sizeof(cs_trace_rec_t));
  n = n / CHUNK_GRAIN * CHUNK_GRAIN;
  return n < lo ? lo : n > hi ? hi : n;
}

static inline cs_trace_ring_t *ring_of(const cs_world_t *w, uint32_t rank)
{
  return (cs_trace_ring_t *)(w->base + w->ctl->off_trace +
                             (uint64_t)rank * w->ctl->trace_bytes);
}

static inline cs_trace_rec_t *slot_rec(cs_trace_ring_t *r, uint32_t slot)
{
  return r->rec + (uint64_t)slot * r->chunk_rec;
}

/* A timestamp for a record: TSC ticks when the launcher found an invariant
 * TSC (7-10 ns to read here, against 24-30 ns for clock_gettime: recording
 * cost matters, there is one record per device event), else ns. */
static inline uint64_t rec_clock(const cs_trace_ring_t *r)
{
#if defined(__x86_64__)
  if (r->use_tsc)
    return __rdtsc() - r->start_tsc;
#endif
  return cs_now_ns() - r->start_ns;
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
static uint64_t seq_next, seq_end; /* this rank's unused numbers */

static inline uint64_t take_seq(cs_dev_t *d, uint64_t n)
{
  uint64_t s = __atomic_fetch_add(&d->world->ctl->event_seq, n, __ATOMIC_SEQ_CST);
  seq_next = s + 1;
  seq_end = s + n;
  return s;
}

static inline uint64_t consumer_seq(cs_dev_t *d)
{
  return take_seq(d, d->controlled ? 1 : SEQ_BLOCK);
}

static inline uint64_t producer_seq(cs_dev_t *d)
{
  if (seq_next != seq_end)
    return seq_next++;
  return consumer_seq(d);
}

/* The tracer of a traced run, in the launcher (the scheduler appends
 * dma-land records there; forked ranks inherit the pointer but never use
 * it). */
static cs_tracer_t *launcher_tracer;
static int reap_one(cs_tracer_t *t, int wait);

/* The current chunk is full: hand it to the launcher and move to the next
 * slot once that one is free (bounded memory: a rank that outruns the disk
 * waits). A rank rings the doorbell, so the launcher writes the chunk now,
 * and rings again after each nap while it waits: completions wake nobody,
 * and a waiting rank has nothing better to do (ringing every 50 naps, a
 * rank recording faster than the disk took 2.5 us per event with
 * 512-record chunks, 0.19 us ringing every nap); the launcher itself
 * (dma-land records) writes at once. The chunk
 * is handed over once: after an abort a rank may call this again for the
 * same full chunk (the record is dropped each time), and by then the
 * launcher may be writing it. The stores are ordered so that a rank killed
 * between any two of them leaves a state the launcher's final pass reads
 * right: the chunk FULL with no records after it, or the next slot current
 * and empty. -1: the run is aborting, drop the record. */
static __attribute__((noinline)) int next_chunk(cs_world_t *w,
                                                cs_trace_ring_t *r,
                                                int in_launcher)
{
  uint32_t c = r->cur, n = (c + 1) % CS_TRACE_CHUNKS;
  if (__atomic_load_n(&r->state[c], __ATOMIC_ACQUIRE) == SLOT_FILLING) {
    __atomic_store_n(&r->state[c], SLOT_FULL, __ATOMIC_RELEASE);
    if (in_launcher && launcher_tracer)
      cs_tracer_drain(launcher_tracer);
    else if (!in_launcher)
      kill(r->launcher, CS_LAUNCH_DOORBELL); /* chunk c: write it */
  }
  for (uint32_t naps = 0;
       __atomic_load_n(&r->state[n], __ATOMIC_ACQUIRE) != SLOT_FREE; naps++) {
    if (in_launcher) {
      if (!launcher_tracer)
        return -1;
      cs_tracer_drain(launcher_tracer);
      if (__atomic_load_n(&r->state[n], __ATOMIC_ACQUIRE) != SLOT_FREE &&
          reap_one(launcher_tracer, 1) < 0)
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

/* One record per event, on the hot path of every traced run: whole 8-byte
 * words, the event's fields copied as blocks, then the checksum, read back
 * from the store buffer. Records are sealed in the rank as they are
 * written (the launcher never reads a record, it only writes chunks): a
 * record below the ring's head is whole and sealed. Sealing in batches of
 * 16 instead re-read records that the tile copies in between had evicted:
 * `bench --trace-cost`, pairs of runs, 3-8 ns per event more at 1-16 MiB. */
static inline __attribute__((always_inline)) void
fill(cs_trace_rec_t *x, uint64_t t, uint32_t rank, uint32_t kind,
     const cs_event_t *ev, uint64_t seq, int32_t value, int32_t observed,
     uint32_t opcmp, uint32_t phase, uint32_t round, uint32_t step)
{
  uint64_t w4 = rank | (uint64_t)ev->peer << 32;
  uint64_t w7 = (uint32_t)value | (uint64_t)(uint32_t)observed << 32;
  uint64_t w8 = (kind & 0xffff) | (opcmp & 0xff) << 16 | (phase & 0xff) << 24 |
                (uint64_t)round << 32;
  x->seq = seq;
  x->t_ns = t;
  memcpy(&x->elem_off, &ev->elem_off, 16);
  memcpy(&x->rank, &w4, 8);
  memcpy(&x->slot, &ev->slot, 16);
  memcpy(&x->value, &w7, 8);
  memcpy(&x->kind, &w8, 8);
  x->step = step;
  x->checksum = cs_trace_rec_sum(x);
}

/* Appends one record to ring r, its position from the ring's header: the
 * launcher's dma-land records, and a rank's in controlled mode (where the
 * two alternate). */
static void append(cs_world_t *w, cs_trace_ring_t *r, int in_launcher,
                   uint32_t rank, uint32_t kind, const cs_event_t *ev,
                   uint64_t seq, int32_t value, int32_t observed, uint32_t opcmp,
                   uint32_t phase, uint32_t round, uint32_t step)
{
  uint64_t h = r->head;
  if (h == r->end && next_chunk(w, r, in_launcher) < 0)
    return;
  fill(slot_rec(r, r->cur) + (h + r->chunk_rec - r->end), rec_clock(r), rank,
       kind, ev, seq, value, observed, opcmp, phase, round, step);
  __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
}

/* In free mode a rank is its ring's only writer, so it keeps its place in
 * process memory (each rank is its own process): the next record, the
 * records left in the chunk, the head. */
static cs_trace_ring_t *my_ring;
static cs_trace_rec_t *my_next;
static uint64_t my_left, my_head;

static __attribute__((noinline)) int rank_resync(cs_dev_t *d)
{
  if (!my_ring)
    my_ring = ring_of(d->world, d->rank);
  cs_trace_ring_t *r = my_ring;
  my_head = r->head;
  if (my_head == r->end && next_chunk(d->world, r, 0) < 0)
    return -1;
  my_next = slot_rec(r, r->cur) + (my_head + r->chunk_rec - r->end);
  my_left = r->end - my_head;
  return 0;
}

static inline void rank_append(cs_dev_t *d, uint32_t kind, const cs_event_t *ev,
                               uint64_t seq, int32_t value, int32_t observed,
                               uint32_t flags)
{
  if (__builtin_expect(d->controlled, 0)) {
    append(d->world, ring_of(d->world, d->rank), 0, d->rank, kind, ev, seq,
           value, observed, ev->opcmp | flags, d->tag_phase, d->tag_round,
           d->tag_step);
    return;
  }
  if (__builtin_expect(my_left == 0, 0) && rank_resync(d) < 0)
    return;
  fill(my_next++, rec_clock(my_ring), d->rank, kind, ev, seq, value, observed, ev->opcmp | flags,
       d->tag_phase, d->tag_round, d->tag_step);
  my_left--;
  __atomic_store_n(&my_ring->head, ++my_head, __ATOMIC_RELEASE);
}

static int is_consumer(uint32_t kind)
{
  return kind == CS_EV_LOAD || kind == CS_EV_WAIT;
}

static void hook_begin(cs_dev_t *d, const cs_event_t *ev, void *arg)
{
  (void)arg;
  if (!is_consumer(ev->kind))
    d->hook_seq = producer_seq(d); /* before the effect */
}

/* A wait that blocks gets a wait-begin record (value = target, observed =
 * the cell when it started waiting); one satisfied at once has only its
 * wait-end. */
static void hook_block(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                       void *arg)
{
  (void)arg;
  rank_append(d, CS_TR_WAIT_BEGIN, ev, consumer_seq(d), ev->value, observed, 0);
}

static void hook_end(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                     void *arg)
{
  (void)arg;
  uint64_t seq = is_consumer(ev->kind) ? consumer_seq(d) : d->hook_seq;
  rank_append(d, ev->kind, ev, seq, ev->value, observed, 0);
}

static void hook_fail(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                      void *arg)
{
  (void)arg;
  rank_append(d, ev->kind, ev, consumer_seq(d), ev->value, observed, CS_TR_FAILED);
}

const cs_dev_hooks_t cs_trace_hooks = {hook_begin, hook_end, hook_fail,
                                       hook_block};

void cs__trace_land(cs_world_t *w, uint32_t rank, uint32_t kind, uint32_t peer,
                    uint32_t slot, uint32_t cell, uint64_t elem_off,
                    uint32_t valid, uint32_t op, int32_t value, uint64_t dma_id,
                    int32_t observed)
{
  /* The rank sleeps while its DMA engine lands an op (one actor at a time),
   * so the scheduler may append to the rank's ring. */
  cs_event_t ev = {.elem_off = elem_off, .dma_id = dma_id, .peer = peer,
                   .slot = slot, .cell = cell, .valid = valid, .phys = valid};
  uint64_t seq = __atomic_fetch_add(&w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  cs_trace_ring_t *r = ring_of(w, rank);
  append(w, r, 1, rank, CS_TR_DMA_LAND, &ev, seq, value, observed, op, 0, kind, 0);
}

/* ------------------------------------------------------------ writer */

/* The file: the header block, then the full chunks in the order the
 * launcher wrote them (each at a 4 KiB-aligned offset, written with
 * O_DIRECT from the shared memory where the file system allows: the
 * page-cache copy of buffered writes cost this 2-core machine ~1.7 ns per
 * byte of kernel time, `dd bs=1M`: 0.56 s of sys time for 320 MB buffered,
 * 0.03 s with oflag=direct), then, written at close, each rank's last
 * partial chunk and the launcher's fault/abort records. */
#define DIO_ALIGN 4096u

struct cs_tracer {
  struct io_uring ring;
  int       use_tsc;  /* records carry TSC ticks (see rec_clock) */
  uint64_t  tsc0;     /* TSC at the start */
  uint64_t  ns0;      /* CLOCK_MONOTONIC at the start */
  cs_trace_header_t hdr; /* as written; tick_ns is finalised at close */
  int       fd;
  int       direct;   /* fd has O_DIRECT */
  int       created;  /* this tracer created the file (unlink on failure) */
  cs_world_t *w;
  uint32_t  nchunk;   /* nranks * CS_TRACE_CHUNKS: chunk c = rank c / 4, slot c % 4 */
  uint64_t  chunk_bytes;
  uint8_t  *was_direct; /* per chunk: submitted while fd had O_DIRECT */
  uint64_t *off;      /* per chunk: file offset of its write in flight */
  uint32_t  inflight; /* writes submitted, completion not reaped */
  uint32_t  depth;    /* io_uring entries: at most this many in flight */
  int       have_ring; /* the io_uring was set up (queue_exit at close) */
  int       sync_only; /* no io_uring, or it failed: pwrite from then on */
  uint64_t  pos;      /* end of the file so far */
  int       err;      /* first write error, -errno */
};

/* Writes all n bytes at off: 0 or -errno (a short write is retried, so a
 * full disk reports ENOSPC, not a stale errno). */
static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
  const uint8_t *p = buf;
  while (n) {
    ssize_t k = pwrite(fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -errno;
    if (k == 0)
      return -EIO;
    p += k;
    off += (uint64_t)k;
    n -= (size_t)k;
  }
  return 0;
}

/* Drops O_DIRECT: later writes go through the page cache. */
static void buffered(cs_tracer_t *t)
{
  int fl = fcntl(t->fd, F_GETFL);
  if (t->direct && fl >= 0 && fcntl(t->fd, F_SETFL, fl & ~O_DIRECT) == 0)
    t->direct = 0;
}

static uint8_t *chunk_mem(cs_tracer_t *t, uint32_t c)
{
  return (uint8_t *)slot_rec(ring_of(t->w, c / CS_TRACE_CHUNKS), c % CS_TRACE_CHUNKS);
}

/* Writes chunk c from byte `done` on synchronously: the rest of a short
 * write, a chunk io_uring could not take, or every chunk when io_uring is
 * unavailable. Straight from the shared memory while the file takes
 * O_DIRECT, else (or once a direct write is refused) through the page
 * cache. */
static void write_sync(cs_tracer_t *t, uint32_t c, uint64_t done)
{
  const uint8_t *p = chunk_mem(t, c);
  int rc = 0;
  while (t->direct && done < t->chunk_bytes && done % DIO_ALIGN == 0) {
    ssize_t k = pwrite(t->fd, p + done, t->chunk_bytes - done,
                       (off_t)(t->off[c] + done));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      rc = k < 0 ? -errno : -EIO;
      break;
    }
    done += (uint64_t)k;
  }
  if (done < t->chunk_bytes && (rc == 0 || rc == -EINVAL)) {
    buffered(t); /* refused (EINVAL) or a short write left an unaligned rest */
    rc = pwrite_all(t->fd, p + done, t->chunk_bytes - done, t->off[c] + done);
  }
  if (rc < 0 && !t->err)
    t->err = rc;
}

/* The chunk is on disk (or its write failed, reported at close): its slot
 * is free for the rank again. */
static void chunk_done(cs_tracer_t *t, uint32_t c)
{
  cs_trace_ring_t *r = ring_of(t->w, c / CS_TRACE_CHUNKS);
  __atomic_store_n(&r->state[c % CS_TRACE_CHUNKS], SLOT_FREE, __ATOMIC_RELEASE);
}

/* io_uring stopped answering (waiting for a completion failed): write every
 * chunk still in flight again with pwrite, free it, and use pwrite from
 * now on (a late completion of the first write, if one comes, carries the
 * same bytes unless the rank has refilled the slot by then: a risk taken
 * only on a broken ring). */
static void ring_failed(cs_tracer_t *t)
{
  t->sync_only = 1;
  for (uint32_t c = 0; c < t->nchunk; c++) {
    cs_trace_ring_t *r = ring_of(t->w, c / CS_TRACE_CHUNKS);
    if (__atomic_load_n(&r->state[c % CS_TRACE_CHUNKS], __ATOMIC_ACQUIRE) ==
        SLOT_WRITING) {
      write_sync(t, c, 0);
      chunk_done(t, c);
    }
  }
  t->inflight = 0;
}

/* Reaps one completed write (waits for one if `wait`). Returns 0, or -1 if
 * nothing was reaped: none in flight, none completed yet (no wait), or the
 * ring failed, in which case every write in flight is redone with pwrite
 * and the ring is not used again. */
static int reap_one(cs_tracer_t *t, int wait)
{
  struct io_uring_cqe *cqe;
  if (!t->inflight)
    return -1;
  int rc;
  do
    rc = wait ? io_uring_wait_cqe(&t->ring, &cqe)
              : io_uring_peek_cqe(&t->ring, &cqe);
  while (rc == -EINTR);
  if (rc < 0 && (wait || rc != -EAGAIN)) {
    ring_failed(t);
    return -1;
  }
  if (rc < 0)
    return -1;
  uint32_t c = (uint32_t)(uintptr_t)io_uring_cqe_get_data(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&t->ring, cqe);
  if (res == -EINVAL && t->was_direct[c])
    write_sync(t, c, 0); /* direct I/O refused: through the page cache */
  else if (res < 0) {
    if (!t->err)
      t->err = res;
  } else if ((uint64_t)res < t->chunk_bytes) {
    write_sync(t, c, (uint64_t)res); /* short write (rare on files) */
  }
  t->inflight--;
  chunk_done(t, c);
  return 0;
}

/* Writes full chunk c at the end of the file, asynchronously. */
static void submit_chunk(cs_tracer_t *t, uint32_t c)
{
  t->off[c] = t->pos;
  t->pos += t->chunk_bytes;
  t->was_direct[c] = (uint8_t)t->direct;
  if (t->sync_only) {
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  /* No more writes in flight than the ring has entries, so completions
   * never overflow. */
  while (t->inflight >= t->depth && !t->sync_only)
    reap_one(t, 1);
  struct io_uring_sqe *sqe = t->sync_only ? NULL : io_uring_get_sqe(&t->ring);
  if (!sqe) {
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  io_uring_prep_write(sqe, t->fd, chunk_mem(t, c), (unsigned)t->chunk_bytes, t->off[c]);
  io_uring_sqe_set_data(sqe, (void *)(uintptr_t)c);
  int rc, tries = 0;
  while (((rc = io_uring_submit(&t->ring)) == -EINTR || rc == -EAGAIN ||
          rc == -EBUSY) && ++tries < 1000)
    if (rc == -EBUSY)
      reap_one(t, 1);
  if (rc < 0) {
    /* The ring is unusable (no completion will come, and the entry might
     * go out later with other data): write this chunk and every later
     * one with pwrite. */
    t->sync_only = 1;
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  t->inflight++;
}

/* The header's checksum, over all of it with the field itself 0. */
static void seal_header(cs_trace_header_t *h)
{
  h->checksum = 0;
  h->checksum = cs_trace_fnv32(h, sizeof(*h));
}

/* Whether the TSC ticks at a constant rate in every state and core
 * (/proc/cpuinfo flags constant_tsc and nonstop_tsc). */
static int invariant_tsc(void)
{
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f)
    return 0;
  char line[4096];
  int ok = 0;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "flags", 5)) {
      ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
      break;
    }
  fclose(f);
  return ok;
}

/* Writes the header block (header, zeros) at offset 0, with O_DIRECT if
 * the file takes it (which tells whether later chunks can go direct), else
 * through the page cache. 0 or -errno. */
static int write_header_block(cs_tracer_t *t, const cs_trace_header_t *h)
{
  uint8_t *b = aligned_alloc(DIO_ALIGN, CS_TRACE_HEADER_BYTES);
  if (!b)
    return -ENOMEM;
  memset(b, 0, CS_TRACE_HEADER_BYTES);
  memcpy(b, h, sizeof(*h));
  int fl = fcntl(t->fd, F_GETFL);
  t->direct = fl >= 0 && fcntl(t->fd, F_SETFL, fl | O_DIRECT) == 0;
  int rc = pwrite_all(t->fd, b, CS_TRACE_HEADER_BYTES, 0);
  if (rc == -EINVAL && t->direct) {
    buffered(t);
    rc = pwrite_all(t->fd, b, CS_TRACE_HEADER_BYTES, 0);
  }
  free(b);
  return rc;
}

int cs_tracer_open(cs_tracer_t **out, const char *path, cs_trace_header_t *h,
                   cs_world_t *w)
{
  int err;
  cs_tracer_t *t = calloc(1, sizeof(*t));
  if (!t)
    return -ENOMEM;
  t->fd = -1;
  t->w = w;
  uint32_t n = w->ctl->nranks;
  t->nchunk = n * CS_TRACE_CHUNKS;
  uint64_t chunk_rec = (w->ctl->trace_bytes - sizeof(cs_trace_ring_t)) /
                       sizeof(cs_trace_rec_t) / CS_TRACE_CHUNKS / CHUNK_GRAIN * CHUNK_GRAIN;
  t->chunk_bytes = chunk_rec * sizeof(cs_trace_rec_t);
  t->was_direct = calloc(t->nchunk, 1);
  t->off = calloc(t->nchunk, sizeof(uint64_t));
  if (!chunk_rec || t->chunk_bytes > UINT32_MAX || !t->was_direct || !t->off) {
    err = chunk_rec ? -ENOMEM : -EINVAL;
    goto err_free;
  }
  /* Touch the rings now (the launcher's view of them), so the run does not
   * pay for allocating their pages. */
  {
    volatile uint8_t *p = (volatile uint8_t *)ring_of(w, 0);
    uint64_t bytes = w->ctl->trace_bytes * n;
    for (uint64_t o = 0; o < bytes; o += 4096)
      (void)p[o];
  }
  /* Without io_uring (a container's seccomp profile or the
   * kernel.io_uring_disabled sysctl refuses it) the launcher writes each
   * full chunk itself with pwrite: the same file, more launcher time. */
  t->depth = t->nchunk < 256 ? t->nchunk : 256;
  t->have_ring = io_uring_queue_init(t->depth, &t->ring, 0) == 0;
  t->sync_only = !t->have_ring;
  /* Unlink on failure only what this call created: never a file (or a
   * device such as /dev/full) that was there before. */
  t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  t->created = t->fd >= 0;
  if (t->fd < 0 && errno == EEXIST)
    t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (t->fd < 0) {
    err = -errno;
    goto err_ring;
  }
  uint64_t start = cs_now_ns();
#if defined(__x86_64__)
  t->use_tsc = invariant_tsc();
  if (t->use_tsc) {
    /* A first calibration over 2 ms; close measures the whole run. */
    uint64_t c0 = __rdtsc(), n0 = cs_now_ns();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    uint64_t c1 = __rdtsc(), n1 = cs_now_ns();
    h->tick_ns = c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0;
    t->use_tsc = h->tick_ns > 0;
    start = cs_now_ns();
    t->tsc0 = __rdtsc();
  }
#endif
  if (!t->use_tsc)
    h->tick_ns = 0;
  t->ns0 = start;
  memcpy(h->magic, CS_TRACE_MAGIC, 8);
  h->version = CS_TRACE_VERSION;
  h->header_bytes = CS_TRACE_HEADER_BYTES;
  h->record_bytes = CS_TRACE_RECORD_BYTES;
  h->nranks = n;
  h->layout = w->ctl->layout;
  h->timeout_ns = w->ctl->timeout_ns;
  h->start_ns = start;
  seal_header(h);
  t->hdr = *h;
  /* The header goes out at once, so an unwritable target fails here with a
   * clear message. */
  if ((err = write_header_block(t, h)) < 0)
    goto err_close;
  t->pos = CS_TRACE_HEADER_BYTES;
  for (uint32_t r = 0; r < n; r++) {
    cs_trace_ring_t *ring = ring_of(w, r);
    memset(ring, 0, sizeof(*ring));
    ring->end = chunk_rec;
    ring->chunk_rec = (uint32_t)chunk_rec;
    ring->use_tsc = (uint32_t)t->use_tsc;
    ring->start_tsc = t->tsc0;
    ring->start_ns = start;
    ring->state[0] = SLOT_FILLING;
  }
  launcher_tracer = t;
  *out = t;
  return 0;

err_close:
  close(t->fd);
  if (t->created)
    unlink(path);
err_ring:
  if (t->have_ring)
    io_uring_queue_exit(&t->ring);
err_free:
  free(t->was_direct);
  free(t->off);
  free(t);
  return err;
}

void cs_tracer_drain(void *arg)
{
  cs_tracer_t *t = arg;
  /* Completions first: a rank may be waiting for its next slot. */
  while (reap_one(t, 0) == 0)
    ;
  for (uint32_t r = 0; r < t->w->ctl->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(t->w, r);
    /* Oldest first: the slots after the current one, round the ring. */
    uint32_t cur = __atomic_load_n(&ring->cur, __ATOMIC_ACQUIRE);
    for (uint32_t k = 1; k <= CS_TRACE_CHUNKS; k++) {
      uint32_t s = (cur + k) % CS_TRACE_CHUNKS;
      if (__atomic_load_n(&ring->state[s], __ATOMIC_ACQUIRE) == SLOT_FULL) {
        __atomic_store_n(&ring->state[s], SLOT_WRITING, __ATOMIC_RELAXED);
        submit_chunk(t, r * CS_TRACE_CHUNKS + s);
      }
    }
  }
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
  o->hooks = &cs_trace_hooks;
  o->hook_arg = t;
  o->tick = cs_tracer_drain;
  o->tick_arg = t;
  /* A rank that fills a chunk rings the doorbell, so the tick is only a
   * safety net: the launcher otherwise sleeps, as in an untraced run (each
   * wake takes a CPU from a rank). */
  o->tick_ns = 50000000ull;
}

/* Appends n bytes at the end of the file, through the page cache. */
static void put_tail(cs_tracer_t *t, const void *p, uint64_t n)
{
  int rc = pwrite_all(t->fd, p, n, t->pos);
  if (rc < 0 && !t->err)
    t->err = rc;
  t->pos += n;
}

static void launcher_rec(cs_tracer_t *t, uint32_t kind, uint32_t rank,
                         int32_t value, int32_t observed, uint32_t step)
{
  cs_trace_rec_t x;
  memset(&x, 0, sizeof(x));
  x.seq = __atomic_fetch_add(&t->w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  x.t_ns = rec_clock(ring_of(t->w, 0)); /* in the ranks' ticks */
  x.rank = rank;
  x.peer = rank;
  x.value = value;
  x.observed = observed;
  x.kind = (uint16_t)kind;
  x.step = step;
  x.checksum = cs_trace_rec_sum(&x);
  put_tail(t, &x, sizeof(x));
}

int cs_tracer_close(cs_tracer_t *t, const cs_launch_result_t *res,
                    const int *statuses)
{
  /* The ranks are gone: write every full chunk, wait for every write, then
   * append each rank's partial chunk (a rank that died mid-chunk leaves
   * its records up to the last one it published). */
  cs_tracer_drain(t);
  while (t->inflight)
    reap_one(t, 1); /* a failed ring writes the rest with pwrite */
  buffered(t);
  cs_ctl_t *c = t->w->ctl;
  for (uint32_t r = 0; r < c->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(t->w, r);
    uint32_t s = ring->cur;
    uint64_t n = ring->head + ring->chunk_rec - ring->end;
    if (ring->state[s] == SLOT_FILLING && n > 0 && n <= ring->chunk_rec)
      put_tail(t, slot_rec(ring, s), n * sizeof(cs_trace_rec_t));
  }
  if (statuses)
    for (uint32_t r = 0; r < c->nranks; r++) {
      int st = statuses[r];
      int32_t ev = (int32_t)c->rank[r].event;
      if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL)
        launcher_rec(t, CS_TR_FAULT, r, WTERMSIG(st), ev, 1);
      else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
               WEXITSTATUS(st) != CS_RX_ABORTED)
        launcher_rec(t, CS_TR_FAULT, r, WEXITSTATUS(st), ev, 2);
    }
  if (res && res->aborted)
    launcher_rec(t, CS_TR_ABORT, res->abort_rank < 0 ? UINT32_MAX
                                                     : (uint32_t)res->abort_rank,
                 (int32_t)res->abort_reason, 0, 0);
  int err = t->err;
  if (!err && ftruncate(t->fd, (off_t)t->pos) < 0 && errno != EINVAL)
    err = -errno; /* EINVAL: not a regular file (/dev/null) */
#if defined(__x86_64__)
  /* The clock rate over the whole run (the first estimate spanned 2 ms):
   * the header is written once more. */
  if (!err && t->use_tsc) {
    uint64_t now_c = __rdtsc(), now_n = cs_now_ns();
    if (now_c > t->tsc0 && now_n > t->ns0) {
      t->hdr.tick_ns = (double)(now_n - t->ns0) / (double)(now_c - t->tsc0);
      seal_header(&t->hdr);
      err = pwrite_all(t->fd, &t->hdr, sizeof(t->hdr), 0);
    }
  }
#endif
  if (close(t->fd) < 0 && !err)
    err = -errno;
  if (t->have_ring)
    io_uring_queue_exit(&t->ring);
  if (launcher_tracer == t)
    launcher_tracer = NULL;
  free(t->was_direct);
  free(t->off);
  free(t);
  return err;
}
