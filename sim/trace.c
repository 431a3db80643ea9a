/*
 * trace.c - recording and writing the transfer log (format: trace.h,
 * traces/FORMAT.md).
 *
 * Recording: each rank appends fixed-size records to its own ring in the
 * shared region (single producer, single consumer: head written by the
 * rank, tail by the launcher). Sequence numbers come from the control
 * block's atomic counter, taken before a producer's effect (store, put,
 * notify, fence, reduce, mark) and after a consumer's observation (load,
 * wait-begin, wait-end), so sorting by them is causally consistent: a
 * wait-end sorts after every notify it saw. Consumers reserve a block of
 * numbers for the events after them (see SEQ_BLOCK). Times are TSC ticks
 * where the TSC is invariant; the header carries the rate. A full ring
 * makes the rank wait for the launcher (bounded memory).
 *
 * Writing: the launcher drains every ring each tick, checksums the records
 * and stages them in 1 MiB chunks written with liburing, asynchronously and
 * with O_DIRECT where the file system allows, while the run goes on; the
 * final drain after the ranks are reaped adds FAULT and ABORT records, so
 * the trace of a crashed run ends with its cause. The file is in drain
 * order; readers sort by seq.
 *
 * Cost (2-core VM, 2 ranks, 1 MiB ring allreduce, ~770 records per rank
 * per call): what a record costs a rank is mostly reading the TSC (~10 ns)
 * and, for consumers, moving the counter's cache line; see
 * traces/README.md for the measured overhead.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* The checksums of n records, four at a time: crc32 has a latency of three
 * cycles and a throughput of one, so four independent chains run in the
 * time of one (the launcher seals ~1500 records per 1 MiB call). */
__attribute__((target("sse4.2"))) static void seal_hw(cs_trace_rec_t *x,
                                                      size_t n)
{
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const uint8_t *p[4];
    uint64_t c[4];
    for (int j = 0; j < 4; j++) {
      p[j] = (const uint8_t *)&x[i + j];
      c[j] = ~0u;
    }
    for (int k = 0; k < 9; k++)
      for (int j = 0; j < 4; j++) {
        uint64_t w;
        memcpy(&w, p[j] + 8 * k, 8);
        c[j] = __builtin_ia32_crc32di(c[j], w);
      }
    for (int j = 0; j < 4; j++) {
      uint32_t w;
      memcpy(&w, p[j] + 72, 4);
      x[i + j].checksum = ~__builtin_ia32_crc32si((uint32_t)c[j], w);
    }
  }
  for (; i < n; i++)
    x[i].checksum = crc_hw((const uint8_t *)&x[i]);
}

/* Whether this CPU has the crc32 instruction (asked once). */
static int crc_hw_ok(void)
{
  static int hw = -1;
  if (hw < 0)
    hw = __builtin_cpu_supports("sse4.2");
  return hw;
}

static void seal(cs_trace_rec_t *x, size_t n)
{
  if (crc_hw_ok()) {
    seal_hw(x, n);
    return;
  }
  for (size_t i = 0; i < n; i++)
    x[i].checksum = crc_soft((const uint8_t *)&x[i], 76);
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

/* One rank's ring in the shared region. POD. */
typedef struct cs_trace_ring {
  uint64_t head;      /* records published by the rank */
  uint64_t start_ns;  /* CLOCK_MONOTONIC of the trace start */
  uint64_t start_tsc; /* TSC at the trace start */
  uint32_t use_tsc;   /* 1: records carry TSC ticks since start_tsc in t_ns
                         (the header's tick_ns converts them), 0: ns */
  uint8_t  pad0[36];  /* head and tail on separate cache lines */
  uint64_t tail;      /* records consumed by the launcher */
  uint8_t  pad1[56];
  cs_trace_rec_t rec[]; /* capacity records */
} cs_trace_ring_t;
_Static_assert(sizeof(cs_trace_ring_t) == 128, "cs_trace_ring_t header");

/* A timestamp for a record: TSC ticks when the launcher found an invariant
 * TSC (7-10 ns to read here, against 30 ns for clock_gettime: recording
 * cost matters, there is one record per device event), else ns. */
static inline uint64_t rec_clock(const cs_trace_ring_t *r)
{
#if defined(__x86_64__)
  if (r->use_tsc)
    return __rdtsc() - r->start_tsc;
#endif
  return cs_now_ns() - r->start_ns;
}

uint64_t cs_trace_ring_bytes(uint64_t cap)
{
  return sizeof(cs_trace_ring_t) + cap * sizeof(cs_trace_rec_t);
}

static inline cs_trace_ring_t *ring_of(const cs_world_t *w, uint32_t rank)
{
  return (cs_trace_ring_t *)(w->base + w->ctl->off_trace +
                             (uint64_t)rank * w->ctl->trace_bytes);
}

/* Records a ring holds: a power of two, so positions are masked, not
 * divided (a 64-bit division per record cost more than the rest of an
 * append). */
static inline uint64_t ring_cap(const cs_world_t *w)
{
  uint64_t n = (w->ctl->trace_bytes - sizeof(cs_trace_ring_t)) / sizeof(cs_trace_rec_t);
  return n ? 1ull << (63 - __builtin_clzll(n)) : 0;
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

/* This process's rank ring, its capacity and the launcher's tail as this
 * rank last read it, kept in process memory: an append reads no line of the
 * control block (the other ranks' seq increments would make that a miss),
 * and re-reads the tail only when the ring looks full. Each rank is its own
 * process, so one copy per process is one per rank. */
static cs_trace_ring_t *my_ring;
static uint64_t my_cap;
static uint64_t tail_seen;

/* The event's two field runs land at these record offsets (see cs_event_t):
 * every field at the same distance from its run's start, same width. */
#define SAME_PLACE(f, base)                                                     \
  _Static_assert(offsetof(cs_trace_rec_t, f) - offsetof(cs_trace_rec_t, base) ==  \
                         offsetof(cs_event_t, f) - offsetof(cs_event_t, base) &&  \
                     sizeof(((cs_trace_rec_t *)0)->f) ==                         \
                         sizeof(((cs_event_t *)0)->f),                           \
                 #f " is not where append copies it")
SAME_PLACE(elem_off, elem_off);
SAME_PLACE(dma_id, elem_off);
SAME_PLACE(peer, peer);
SAME_PLACE(slot, peer);
SAME_PLACE(cell, peer);
SAME_PLACE(valid, peer);
SAME_PLACE(phys, peer);
SAME_PLACE(value, peer);

/* A full ring: wait for the launcher to drain it (bounded memory). */
static __attribute__((noinline)) int ring_full(cs_dev_t *d, cs_trace_ring_t *r,
                                               uint64_t h)
{
  while (h - (tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE)) >= my_cap) {
    if (__atomic_load_n(&d->world->ctl->abort_word, __ATOMIC_ACQUIRE))
      return -1; /* the launcher may never drain again */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  return 0;
}

/* One record per event, on the hot path of every traced run: the event's
 * fields are copied as two blocks, the rest is a handful of stores. */
static inline __attribute__((always_inline)) void
append(cs_dev_t *d, uint32_t kind, const cs_event_t *ev, uint64_t seq,
       int32_t value, int32_t observed, uint8_t flags)
{
  if (__builtin_expect(!my_ring, 0)) {
    my_ring = ring_of(d->world, d->rank);
    my_cap = ring_cap(d->world);
  }
  cs_trace_ring_t *r = my_ring;
  uint64_t h = r->head;
  if (__builtin_expect(h - tail_seen >= my_cap, 0) && ring_full(d, r, h) < 0)
    return;
  cs_trace_rec_t *x = &r->rec[h & (my_cap - 1)];
  x->seq = seq;
  x->t_ns = rec_clock(r);
  memcpy(&x->elem_off, &ev->elem_off, 16);
  x->rank = d->rank;
  memcpy(&x->peer, &ev->peer, offsetof(cs_trace_rec_t, value) - offsetof(cs_trace_rec_t, peer));
  x->value = value;
  x->observed = observed;
  x->kind = (uint16_t)kind;
  x->opcmp = (uint8_t)(ev->opcmp | flags);
  x->phase = (uint8_t)d->tag_phase;
  x->round = d->tag_round;
  x->step = d->tag_step;
  x->checksum = 0;
  __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
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
  append(d, CS_TR_WAIT_BEGIN, ev, consumer_seq(d), ev->value, observed, 0);
}

static void hook_end(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                     void *arg)
{
  (void)arg;
  uint64_t seq = is_consumer(ev->kind) ? consumer_seq(d) : d->hook_seq;
  append(d, ev->kind, ev, seq, ev->value, observed, 0);
}

static void hook_fail(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                      void *arg)
{
  (void)arg;
  append(d, ev->kind, ev, consumer_seq(d), ev->value, observed, CS_TR_FAILED);
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
  cs_trace_ring_t *r = ring_of(w, rank);
  uint64_t cap = ring_cap(w), h = r->head;
  if (h - __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) >= cap)
    return; /* cannot happen: the launcher drains between steps */
  cs_trace_rec_t *x = &r->rec[h & (cap - 1)];
  memset(x, 0, sizeof(*x));
  x->seq = __atomic_fetch_add(&w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  x->t_ns = rec_clock(r);
  x->elem_off = elem_off;
  x->dma_id = dma_id;
  x->rank = rank;
  x->peer = peer;
  x->slot = slot;
  x->cell = cell;
  x->valid = valid;
  x->phys = valid;
  x->value = value;
  x->observed = observed;
  x->kind = CS_TR_DMA_LAND;
  x->opcmp = (uint8_t)op;
  x->round = kind;
  __atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
}

/* ------------------------------------------------------------ writer */

/* The file is one byte stream (header, then records) staged in NCHUNK
 * 4096-aligned chunks; a chunk is written once full, at its own file offset,
 * while the next ones fill. The file is opened with O_DIRECT where the file
 * system allows it: the page-cache copy of buffered writes cost this 2-core
 * machine ~1.7 ns per byte of kernel time (`dd bs=1M`: 0.56 s of sys time
 * for 320 MB buffered, 0.03 s with oflag=direct), more than recording the
 * records. A direct write must be block-aligned, so the last partial chunk
 * is written rounded up to DIO_ALIGN and the file truncated to its size. */
#define CHUNK_BYTES (1u << 20)
#define NCHUNK 8
#define STAGE_BYTES ((size_t)NCHUNK * CHUNK_BYTES)
#define DIO_ALIGN 4096u
#define SEAL_BATCH 64 /* records sealed per step */

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
  uint8_t  *stage;    /* NCHUNK * CHUNK_BYTES */
  int       inflight[NCHUNK]; /* chunk submitted, completion not reaped */
  int       was_direct[NCHUNK]; /* submitted while fd had O_DIRECT */
  int       sync_only; /* io_uring failed: plain pwrite from then on */
  uint32_t  len[NCHUNK];      /* bytes submitted */
  uint64_t  off[NCHUNK];      /* file offset submitted at */
  uint64_t  pos;      /* stream bytes so far: the file's final size */
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

/* Writes chunk c from byte `done` on synchronously, through the page cache:
 * the rest of a short write, or a chunk the file system would not take
 * with O_DIRECT. */
static void write_sync(cs_tracer_t *t, uint32_t c, uint64_t done)
{
  buffered(t);
  int rc = pwrite_all(t->fd, t->stage + (uint64_t)c * CHUNK_BYTES + done,
                      t->len[c] - done, t->off[c] + done);
  if (rc < 0 && !t->err)
    t->err = rc;
}

static void reap_one(cs_tracer_t *t, int wait)
{
  struct io_uring_cqe *cqe;
  int rc = wait ? io_uring_wait_cqe(&t->ring, &cqe)
                : io_uring_peek_cqe(&t->ring, &cqe);
  if (rc < 0)
    return;
  uint32_t c = (uint32_t)(uintptr_t)io_uring_cqe_get_data(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&t->ring, cqe);
  if (res == -EINVAL && t->was_direct[c])
    write_sync(t, c, 0); /* direct I/O refused: through the page cache */
  else if (res < 0) {
    if (!t->err)
      t->err = res;
  } else if ((uint32_t)res < t->len[c]) {
    write_sync(t, c, (uint32_t)res); /* short write (rare on files) */
  }
  t->inflight[c] = 0;
}

/* Submits the first len bytes of chunk c, which hold the stream from file
 * offset off. */
static void submit_chunk(cs_tracer_t *t, uint32_t c, uint32_t len, uint64_t off)
{
#if defined(__x86_64__)
  _mm_sfence(); /* the chunk's non-temporal stores, before the kernel reads it */
#endif
  t->len[c] = len;
  t->off[c] = off;
  t->was_direct[c] = t->direct;
  if (t->sync_only) {
    write_sync(t, c, 0);
    return;
  }
  struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
  while (!sqe) {
    reap_one(t, 1);
    sqe = io_uring_get_sqe(&t->ring);
  }
  io_uring_prep_write(sqe, t->fd, t->stage + (uint64_t)c * CHUNK_BYTES, len, off);
  io_uring_sqe_set_data(sqe, (void *)(uintptr_t)c);
  int rc, tries = 0;
  while (((rc = io_uring_submit(&t->ring)) == -EINTR || rc == -EAGAIN) &&
         ++tries < 1000)
    ;
  if (rc < 0) {
    /* The ring is unusable (no completion will come, and the entry might
     * go out later with other data): write this chunk and every later
     * one with pwrite. */
    t->sync_only = 1;
    write_sync(t, c, 0);
    return;
  }
  t->inflight[c] = 1;
}

/* Copies into the stage with non-temporal stores where both sides are
 * 16-byte aligned (records are 80 bytes, the header 1024): the stage is
 * only read again by the disk, and 8 MiB of it going through the caches
 * pushed out the ranks' data. */
static void stage_copy(uint8_t *dst, const uint8_t *src, uint64_t n)
{
#if defined(__x86_64__)
  if (((uintptr_t)dst | (uintptr_t)src | n) % 16 == 0) {
    for (uint64_t i = 0; i < n; i += 16)
      _mm_stream_si128((__m128i *)(dst + i), _mm_load_si128((const __m128i *)(src + i)));
    return;
  }
#endif
  memcpy(dst, src, n);
}

/* Appends n bytes to the stream, submitting every chunk it fills. */
static void stream_put(cs_tracer_t *t, const void *src, uint64_t n)
{
  const uint8_t *p = src;
  while (n) {
    uint64_t in = t->pos % CHUNK_BYTES;
    uint32_t c = (uint32_t)(t->pos / CHUNK_BYTES % NCHUNK);
    while (in == 0 && t->inflight[c])
      reap_one(t, 1); /* reuse a chunk only once it is on disk */
    uint64_t k = CHUNK_BYTES - in < n ? CHUNK_BYTES - in : n;
    stage_copy(t->stage + (uint64_t)c * CHUNK_BYTES + in, p, k);
    t->pos += k;
    p += k;
    n -= k;
    if (t->pos % CHUNK_BYTES == 0)
      submit_chunk(t, c, CHUNK_BYTES, t->pos - CHUNK_BYTES);
  }
}

/* A record made by the launcher (t_ns in the ranks' ticks already). */
static void put_rec(cs_tracer_t *t, cs_trace_rec_t *x)
{
  x->checksum = cs_trace_rec_sum(x);
  stream_put(t, x, sizeof(*x));
}

/* Appends n consecutive ring records: copied out in small batches (the
 * ring's lines are only read, so the rank's next lap does not pull them
 * back) and their checksums computed on the copies. */
static void put_span(cs_tracer_t *t, const cs_trace_rec_t *src, uint64_t n)
{
  _Alignas(64) cs_trace_rec_t y[SEAL_BATCH];
  while (n) {
    uint64_t k = n < SEAL_BATCH ? n : SEAL_BATCH;
    memcpy(y, src, k * sizeof(*y));
    seal(y, k);
    stream_put(t, y, k * sizeof(*y));
    src += k;
    n -= k;
  }
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

int cs_tracer_open(cs_tracer_t **out, const char *path, cs_trace_header_t *h,
                   cs_world_t *w)
{
  int err;
  cs_tracer_t *t = calloc(1, sizeof(*t));
  if (!t)
    return -ENOMEM;
  t->fd = -1;
  /* The stage is the launcher's alone: MADV_DONTFORK keeps it out of the
   * ranks. Inherited, every page of it would be copy-on-write once the
   * ranks are forked, and the launcher's first write to each would fault,
   * copy 4 KiB and flush the TLB of the CPU a rank runs on (measured: 5 of
   * the 7 ms the drains of a 2-rank, 4 MiB, 12-call run took). Touch it and
   * the launcher's view of the rings now, so the run does not pay for
   * first-touch page faults either. */
  t->stage = mmap(NULL, STAGE_BYTES, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t->stage == MAP_FAILED) {
    t->stage = NULL;
    err = -ENOMEM;
    goto err_free;
  }
  (void)madvise(t->stage, STAGE_BYTES, MADV_DONTFORK); /* best effort */
  memset(t->stage, 0, STAGE_BYTES);
  {
    volatile uint8_t *p = (volatile uint8_t *)ring_of(w, 0);
    uint64_t n = w->ctl->trace_bytes * w->ctl->nranks;
    for (uint64_t o = 0; o < n; o += 4096)
      (void)p[o];
  }
  if ((err = io_uring_queue_init(NCHUNK * 2, &t->ring, 0)) < 0)
    goto err_free;
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
  t->w = w;
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
  h->nranks = w->ctl->nranks;
  h->layout = w->ctl->layout;
  h->timeout_ns = w->ctl->timeout_ns;
  h->start_ns = start;
  seal_header(h);
  t->hdr = *h;
  /* The header goes out at once, through the page cache, so an unwritable
   * target fails here with a clear message; it also starts the stream, and
   * chunk 0's direct write rewrites the same bytes. */
  if ((err = pwrite_all(t->fd, h, sizeof(*h), 0)) < 0)
    goto err_close;
  stream_put(t, h, sizeof(*h));
  int fl = fcntl(t->fd, F_GETFL);
  t->direct = fl >= 0 && fcntl(t->fd, F_SETFL, fl | O_DIRECT) == 0;
  for (uint32_t r = 0; r < w->ctl->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(w, r);
    ring->head = ring->tail = 0;
    ring->start_ns = start;
    ring->start_tsc = t->tsc0;
    ring->use_tsc = (uint32_t)t->use_tsc;
  }
  *out = t;
  return 0;

err_close:
  close(t->fd);
  if (t->created)
    unlink(path);
err_ring:
  io_uring_queue_exit(&t->ring);
err_free:
  if (t->stage)
    munmap(t->stage, STAGE_BYTES);
  free(t);
  return err;
}

void cs_tracer_drain(void *arg)
{
  cs_tracer_t *t = arg;
  cs_world_t *w = t->w;
  uint64_t cap = ring_cap(w);
  for (uint32_t r = 0; r < w->ctl->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(w, r);
    uint64_t h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
    uint64_t i = ring->tail;
    while (i < h) {
      uint64_t at = i & (cap - 1), n = h - i;
      if (n > cap - at)
        n = cap - at; /* up to the end of the ring, then from its start */
      put_span(t, &ring->rec[at], n);
      i += n;
    }
    __atomic_store_n(&ring->tail, h, __ATOMIC_RELEASE);
  }
  /* Reap whatever completed, without blocking the launcher. */
  struct io_uring_cqe *cqe;
  while (io_uring_peek_cqe(&t->ring, &cqe) == 0)
    reap_one(t, 0);
}

void cs_tracer_launch_opts(cs_tracer_t *t, cs_launch_opts_t *o)
{
  o->hooks = &cs_trace_hooks;
  o->hook_arg = t;
  o->tick = cs_tracer_drain;
  o->tick_arg = t;
  /* A ring holds 65536 records, ~8 ms of a 2-rank 1 MiB allreduce: a drain
   * every 2 ms keeps it a quarter full and wakes the launcher half as often
   * as every 1 ms did (each wake takes a CPU from a rank). */
  o->tick_ns = 2000000ull;
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
  put_rec(t, &x);
}

int cs_tracer_close(cs_tracer_t *t, const cs_launch_result_t *res,
                    const int *statuses)
{
  cs_tracer_drain(t);
  cs_ctl_t *c = t->w->ctl;
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
  /* The last, partial chunk: a direct write must cover whole blocks, so
   * it goes out rounded up and the file is cut back to the stream's size. */
  uint32_t tail = (uint32_t)(t->pos % CHUNK_BYTES);
  if (tail) {
    uint32_t ch = (uint32_t)(t->pos / CHUNK_BYTES % NCHUNK);
    uint32_t len = tail;
    if (t->direct) {
      len = (tail + DIO_ALIGN - 1) / DIO_ALIGN * DIO_ALIGN;
      memset(t->stage + (uint64_t)ch * CHUNK_BYTES + tail, 0, len - tail);
    }
    submit_chunk(t, ch, len, t->pos - tail);
  }
  for (int i = 0; i < NCHUNK; i++)
    while (t->inflight[i])
      reap_one(t, 1);
  int err = t->err;
  if (!err && ftruncate(t->fd, (off_t)t->pos) < 0 && errno != EINVAL)
    err = -errno; /* EINVAL: not a regular file (/dev/null) */
#if defined(__x86_64__)
  /* The clock rate over the whole run (the first estimate spanned 2 ms):
   * the header is written once more, through the page cache. */
  if (!err && t->use_tsc) {
    uint64_t c = __rdtsc(), n = cs_now_ns();
    if (c > t->tsc0 && n > t->ns0) {
      t->hdr.tick_ns = (double)(n - t->ns0) / (double)(c - t->tsc0);
      seal_header(&t->hdr);
      buffered(t);
      err = pwrite_all(t->fd, &t->hdr, sizeof(t->hdr), 0);
    }
  }
#endif
  if (close(t->fd) < 0 && !err)
    err = -errno;
  io_uring_queue_exit(&t->ring);
  if (t->stage)
    munmap(t->stage, STAGE_BYTES);
  free(t);
  return err;
}
