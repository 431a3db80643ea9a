/*
 * trace.c - recording and writing the transfer log (format: trace.h,
 * traces/FORMAT.md).
 *
 * Recording: each rank appends fixed-size records to its own ring in the
 * shared region (single producer, single consumer: head written by the
 * rank, tail by the launcher). The global sequence number comes from the
 * control block's atomic counter, taken before a producer's effect (store,
 * put, notify, fence, reduce, mark, wait-begin: at the event's begin) and
 * after a consumer's observation (load, wait-end: at its end), so sorting by
 * it is causally consistent: a wait-end sorts after every notify it saw.
 * A full ring makes the rank wait for the launcher (bounded memory).
 *
 * Writing: the launcher drains every ring each tick into a pool of buffers
 * and writes them with liburing, asynchronously, while the run goes on; the
 * final drain after the ranks are reaped adds FAULT and ABORT records, so
 * the trace of a crashed run ends with its cause. The file is in drain
 * order; readers sort by seq.
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

uint32_t cs_trace_rec_sum(const cs_trace_rec_t *x)
{
  static int hw = -1;
  if (hw < 0)
    hw = __builtin_cpu_supports("sse4.2");
  _Static_assert(offsetof(cs_trace_rec_t, checksum) == 76, "76 bytes");
  return hw ? crc_hw((const uint8_t *)x) : crc_soft((const uint8_t *)x, 76);
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
  uint32_t use_tsc;   /* 1: records carry TSC ticks since start_tsc in t_ns,
                         converted to ns by the launcher as it drains */
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

static inline uint64_t ring_cap(const cs_world_t *w)
{
  return (w->ctl->trace_bytes - sizeof(cs_trace_ring_t)) / sizeof(cs_trace_rec_t);
}

static inline uint64_t next_seq(cs_dev_t *d)
{
  return __atomic_fetch_add(&d->world->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
}

/* The launcher's tail as this rank last read it: re-read only when the ring
 * looks full, so an append does not pull the launcher's cache line over. */
static uint64_t tail_seen;

static void append(cs_dev_t *d, uint32_t kind, const cs_event_t *ev,
                   uint64_t seq, int32_t value, int32_t observed, uint8_t flags)
{
  cs_trace_ring_t *r = ring_of(d->world, d->rank);
  uint64_t cap = ring_cap(d->world), h = r->head;
  while (h - tail_seen >= cap &&
         h - (tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE)) >= cap) {
    if (__atomic_load_n(&d->world->ctl->abort_word, __ATOMIC_ACQUIRE))
      return; /* the launcher may never drain again */
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  cs_trace_rec_t *x = &r->rec[h % cap];
  x->seq = seq;
  x->t_ns = rec_clock(r);
  x->elem_off = ev->elem_off;
  x->dma_id = ev->dma_id;
  x->rank = d->rank;
  x->peer = ev->peer;
  x->slot = ev->slot;
  x->cell = ev->cell;
  x->valid = ev->valid;
  x->phys = ev->phys;
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
    d->hook_seq = next_seq(d); /* before the effect */
}

/* A wait that blocks gets a wait-begin record (value = target, observed =
 * the cell when it started waiting); one satisfied at once has only its
 * wait-end. */
static void hook_block(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                       void *arg)
{
  (void)arg;
  append(d, CS_TR_WAIT_BEGIN, ev, next_seq(d), ev->value, observed, 0);
}

static void hook_end(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                     void *arg)
{
  (void)arg;
  uint64_t seq = is_consumer(ev->kind) ? next_seq(d) : d->hook_seq;
  append(d, ev->kind, ev, seq, ev->value, observed, 0);
}

static void hook_fail(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                      void *arg)
{
  (void)arg;
  append(d, ev->kind, ev, next_seq(d), ev->value, observed, CS_TR_FAILED);
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
  cs_trace_rec_t *x = &r->rec[h % cap];
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

#define WBUF_BYTES (1u << 20)
#define WBUF_RECS (WBUF_BYTES / sizeof(cs_trace_rec_t))
#define NWBUF 8

typedef struct wbuf {
  cs_trace_rec_t *rec;
  uint32_t n;        /* records filled */
  int      inflight; /* submitted, completion not reaped */
  uint64_t off;      /* file offset it was submitted at */
  uint32_t len;      /* bytes submitted */
} wbuf_t;

struct cs_tracer {
  struct io_uring ring;
  int       use_tsc;  /* records carry TSC ticks (see rec_clock) */
  uint64_t  tsc0;     /* TSC at the start */
  uint64_t  ns0;      /* CLOCK_MONOTONIC at the start */
  double    ns_per_tick; /* calibrated, refined at every drain */
  int       fd;
  cs_world_t *w;
  uint64_t  off;      /* next file offset */
  uint64_t  nrec;     /* records written (queued) */
  int       cur;      /* buffer being filled */
  int       err;      /* first write error, -errno */
  wbuf_t    buf[NWBUF];
};

static void reap_one(cs_tracer_t *t, int wait)
{
  struct io_uring_cqe *cqe;
  int rc = wait ? io_uring_wait_cqe(&t->ring, &cqe)
                : io_uring_peek_cqe(&t->ring, &cqe);
  if (rc < 0)
    return;
  wbuf_t *b = io_uring_cqe_get_data(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&t->ring, cqe);
  if (res < 0) {
    if (!t->err)
      t->err = res;
  } else if ((uint32_t)res < b->len) {
    /* Short write (rare on files): finish it synchronously. */
    const uint8_t *p = (const uint8_t *)b->rec + res;
    ssize_t k = pwrite(t->fd, p, b->len - (uint32_t)res, (off_t)(b->off + (uint64_t)res));
    if (k != (ssize_t)(b->len - (uint32_t)res) && !t->err)
      t->err = k < 0 ? -errno : -EIO;
  }
  b->inflight = 0;
  b->n = 0;
}

static void submit_cur(cs_tracer_t *t)
{
  wbuf_t *b = &t->buf[t->cur];
  if (b->n == 0)
    return;
  b->len = b->n * (uint32_t)sizeof(cs_trace_rec_t);
  b->off = t->off;
  struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
  while (!sqe) {
    reap_one(t, 1);
    sqe = io_uring_get_sqe(&t->ring);
  }
  io_uring_prep_write(sqe, t->fd, b->rec, b->len, b->off);
  io_uring_sqe_set_data(sqe, b);
  io_uring_submit(&t->ring);
  b->inflight = 1;
  t->off += b->len;
  t->cur = (t->cur + 1) % NWBUF;
  while (t->buf[t->cur].inflight)
    reap_one(t, 1);
}

static void put_rec(cs_tracer_t *t, const cs_trace_rec_t *x)
{
  wbuf_t *b = &t->buf[t->cur];
  cs_trace_rec_t *y = &b->rec[b->n++];
  *y = *x;
  y->checksum = cs_trace_rec_sum(y);
  t->nrec++;
  if (b->n == WBUF_RECS)
    submit_cur(t);
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
  for (int i = 0; i < NWBUF; i++)
    if (!(t->buf[i].rec = aligned_alloc(4096, WBUF_BYTES))) {
      err = -ENOMEM;
      goto err_free;
    }
  if ((err = io_uring_queue_init(NWBUF * 2, &t->ring, 0)) < 0)
    goto err_free;
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
    /* A first calibration over 2 ms; drains refine it over the whole run. */
    uint64_t c0 = __rdtsc(), n0 = cs_now_ns();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    uint64_t c1 = __rdtsc(), n1 = cs_now_ns();
    t->ns_per_tick = c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0;
    t->use_tsc = t->ns_per_tick > 0;
    start = cs_now_ns();
    t->tsc0 = __rdtsc();
  }
#endif
  t->ns0 = start;
  memcpy(h->magic, CS_TRACE_MAGIC, 8);
  h->version = CS_TRACE_VERSION;
  h->header_bytes = CS_TRACE_HEADER_BYTES;
  h->record_bytes = CS_TRACE_RECORD_BYTES;
  h->nranks = w->ctl->nranks;
  h->layout = w->ctl->layout;
  h->timeout_ns = w->ctl->timeout_ns;
  h->start_ns = start;
  h->checksum = 0;
  h->checksum = cs_trace_fnv32(h, sizeof(*h));
  if (pwrite(t->fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h)) {
    err = -errno ? -errno : -EIO;
    goto err_close;
  }
  t->off = sizeof(*h);
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
  unlink(path);
err_ring:
  io_uring_queue_exit(&t->ring);
err_free:
  for (int i = 0; i < NWBUF; i++)
    free(t->buf[i].rec);
  free(t);
  return err;
}

void cs_tracer_drain(void *arg)
{
  cs_tracer_t *t = arg;
  cs_world_t *w = t->w;
  uint64_t cap = ring_cap(w);
#if defined(__x86_64__)
  if (t->use_tsc) {
    uint64_t c = __rdtsc(), n = cs_now_ns();
    if (n - t->ns0 > 10000000ull && c > t->tsc0)
      t->ns_per_tick = (double)(n - t->ns0) / (double)(c - t->tsc0);
  }
#endif
  for (uint32_t r = 0; r < w->ctl->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(w, r);
    uint64_t h = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
    for (uint64_t i = ring->tail; i < h; i++) {
      cs_trace_rec_t *x = &ring->rec[i % cap];
      if (t->use_tsc)
        x->t_ns = (uint64_t)((double)x->t_ns * t->ns_per_tick);
      put_rec(t, x);
    }
    __atomic_store_n(&ring->tail, h, __ATOMIC_RELEASE);
  }
  /* Reap whatever completed, without blocking the launcher. */
  struct io_uring_cqe *cqe;
  while (io_uring_peek_cqe(&t->ring, &cqe) == 0)
    reap_one(t, 0);
}

uint64_t cs_tracer_records(const cs_tracer_t *t)
{
  return t->nrec;
}

void cs_tracer_launch_opts(cs_tracer_t *t, cs_launch_opts_t *o)
{
  o->hooks = &cs_trace_hooks;
  o->hook_arg = t;
  o->tick = cs_tracer_drain;
  o->tick_arg = t;
  o->tick_ns = 1000000ull;
}

static void launcher_rec(cs_tracer_t *t, uint32_t kind, uint32_t rank,
                         int32_t value, int32_t observed, uint32_t step)
{
  cs_trace_rec_t x;
  memset(&x, 0, sizeof(x));
  x.seq = __atomic_fetch_add(&t->w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  x.t_ns = cs_now_ns() - ring_of(t->w, 0)->start_ns;
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
  submit_cur(t);
  for (int i = 0; i < NWBUF; i++)
    while (t->buf[i].inflight)
      reap_one(t, 1);
  int err = t->err;
  if (close(t->fd) < 0 && !err)
    err = -errno;
  io_uring_queue_exit(&t->ring);
  for (int i = 0; i < NWBUF; i++)
    free(t->buf[i].rec);
  free(t);
  return err;
}
