/*
 * sched.c - controlled execution (sched.h): the scheduler area, the rank
 * side of a scheduling point, DMA posting, and the launcher-side scheduler
 * with its strategies.
 *
 * A fence is enabled only when its rank's DMA queue is empty, so every op
 * in a queue was posted since the last fence: under relaxed any of them may
 * land next, under fifo only the oldest. Loads read memory as it is when
 * they run: a load can see stale data when a store has not landed, which is
 * how a missing fence shows on x86, whose hardware never reorders stores.
 */
#define _GNU_SOURCE
#include "sched.h"

#include <errno.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"
#include "rng.h"
#include "trace.h"

#define QCAP 256u

enum { SR_RUNNING = 0, SR_POSTED = 1, SR_DONE = 2 };

/* One op waiting for its rank's DMA engine. POD. */
typedef struct cs_dma_op {
  uint64_t dma_id;   /* rank-local id, from 1 */
  uint64_t elem_off; /* first element (store/put) */
  uint64_t data_off; /* payload offset in the rank's arena, bytes */
  uint32_t kind;     /* CS_EV_STORE, CS_EV_PUT or CS_EV_NOTIFY */
  uint32_t peer;     /* target rank */
  uint32_t slot;     /* target slot */
  uint32_t cell;     /* notify: cell */
  uint32_t bytes;    /* payload bytes (store/put) */
  uint32_t valid;    /* elements (store/put) */
  uint32_t op;       /* notify op */
  int32_t  value;    /* notify value */
  uint32_t pad[2];
} cs_dma_op_t;
_Static_assert(sizeof(cs_dma_op_t) == 64, "cs_dma_op_t");

/* One rank's part of the scheduler area. POD (sem_t is process-shared). */
typedef struct cs_sched_slot {
  sem_t      sem;        /* the rank sleeps here until granted */
  uint32_t   state;      /* SR_* */
  uint32_t   nops;       /* ops queued */
  uint64_t   arena_used; /* payload bytes in use */
  uint64_t   next_id;    /* last DMA id assigned */
  uint64_t   pad;
  cs_event_t next;       /* the posted event (state SR_POSTED) */
  cs_dma_op_t q[QCAP];   /* queued ops, oldest first */
} cs_sched_slot_t;

typedef struct cs_sched_area {
  sem_t    wake;        /* ranks post it after posting an event or finishing */
  uint64_t arena_bytes; /* payload arena per rank, bytes */
  uint64_t slot_stride; /* bytes from one rank's slot to the next */
  uint8_t  pad[16];
} cs_sched_area_t;
_Static_assert(sizeof(cs_sched_area_t) == 64, "cs_sched_area_t");

static inline cs_sched_area_t *area_of(const cs_world_t *w)
{
  return (cs_sched_area_t *)(w->base + w->ctl->off_sched);
}
static inline cs_sched_slot_t *slot_of(const cs_world_t *w, uint32_t r)
{
  cs_sched_area_t *a = area_of(w);
  return (cs_sched_slot_t *)((uint8_t *)a + sizeof(*a) + r * a->slot_stride);
}
static inline uint8_t *arena_of(const cs_world_t *w, uint32_t r)
{
  return (uint8_t *)slot_of(w, r) + sizeof(cs_sched_slot_t);
}

uint64_t cs_sched_area_bytes(uint32_t nranks, uint64_t arena_bytes)
{
  uint64_t stride = (sizeof(cs_sched_slot_t) + arena_bytes + 63) / 64 * 64;
  return sizeof(cs_sched_area_t) + stride * nranks;
}

int cs_sched_is_step(uint32_t kind)
{
  return (kind >= CS_EV_LOAD && kind <= CS_EV_MARK) || kind == CS_TR_DMA_LAND;
}

/* ------------------------------------------------------------ parsing */

int cs_mm_parse(const char *s)
{
  static const char *const n[] = {"sc", "fifo", "relaxed"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, n[i]))
      return i;
  return -1;
}

const char *cs_mm_name(cs_mm_t m)
{
  static const char *const n[] = {"sc", "fifo", "relaxed"};
  return (unsigned)m < 3 ? n[m] : "?";
}

static int parse_num(const char *s, uint64_t *v)
{
  char *end;
  if (!*s || *s == '-')
    return -1;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return (errno || *end) ? -1 : 0;
}

int cs_sched_parse(const char *s, cs_sched_cfg_t *c, const char **replay_file,
                   char *why, size_t whylen)
{
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", s);
  char *a = strchr(buf, ':'), *b = NULL, *d = NULL;
  if (a) {
    *a++ = 0;
    if ((b = strchr(a, ':')))
      *b++ = 0;
    if (b && (d = strchr(b, ':')))
      *d++ = 0;
  }
  uint64_t v;
  if (!strcmp(buf, "random") && a && !b && parse_num(a, &c->seed) == 0) {
    c->strategy = CS_SCHED_RANDOM;
    return 0;
  }
  if (!strcmp(buf, "pct") && a && b && parse_num(a, &c->seed) == 0 &&
      parse_num(b, &v) == 0 && v >= 1 && v <= 64) {
    c->strategy = CS_SCHED_PCT;
    c->depth = (uint32_t)v;
    c->steps = 2000;
    if (d && (parse_num(d, &c->steps) < 0 || c->steps == 0))
      goto bad;
    return 0;
  }
  if (!strcmp(buf, "latest") && !a) {
    c->strategy = CS_SCHED_LATEST;
    return 0;
  }
  if (!strcmp(buf, "interactive") && !a) {
    c->strategy = CS_SCHED_INTERACTIVE;
    return 0;
  }
  if (!strcmp(buf, "replay") && a && *a && replay_file) {
    c->strategy = CS_SCHED_REPLAY;
    *replay_file = s + 7;
    return 0;
  }
bad:
  snprintf(why, whylen, "--schedule '%s' is not accepted: expected "
           "random:SEED, pct:SEED:DEPTH[:STEPS] (DEPTH 1..64), latest, "
           "replay:FILE or interactive", s);
  return -1;
}

/* ------------------------------------------------------------ rank side */

void cs__sched_point(cs_dev_t *d, cs_event_t *ev)
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
  __atomic_store_n(&sl->state, SR_POSTED, __ATOMIC_RELEASE);
  sem_post(&area_of(w)->wake);
  while (sem_wait(&sl->sem) < 0 && errno == EINTR)
    ;
  if (__atomic_load_n(&w->ctl->abort_word, __ATOMIC_ACQUIRE))
    cs__dev_aborted(d);
  if (ev->kind == CS_EV_WAIT)
    __atomic_store_n(&d->st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
}

void cs__sched_post(cs_dev_t *d, cs_event_t *ev, const void *data,
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

void cs__sched_done(cs_dev_t *d)
{
  cs_sched_slot_t *sl = slot_of(d->world, d->rank);
  __atomic_store_n(&sl->state, SR_DONE, __ATOMIC_RELEASE);
  sem_post(&area_of(d->world)->wake);
}

/* ------------------------------------------------------------ scheduler */

typedef struct actor {
  uint32_t rank;
  int32_t  op; /* -1: the rank itself; else index into its DMA queue */
} actor_t;

struct cs_sched {
  cs_sched_cfg_t cfg;
  cs_world_t    *w;
  uint32_t       n;
  uint64_t       rng;
  uint64_t       steps;
  int            waiting;  /* rank granted and not yet posted again, or -1 */
  uint64_t       replay_i; /* next replay record */
  uint32_t      *prio;     /* pct: priority per actor (2n: ranks, DMA engines) */
  uint64_t      *change;   /* pct: change points (depth - 1) */
  actor_t       *en;       /* enabled actors, scratch */
  char           ibuf[256]; /* interactive: answers read but not used yet */
  size_t         ilen;
};

int cs__sched_init(cs_sched_t **out, cs_world_t *w, const cs_sched_cfg_t *cfg)
{
  uint32_t n = w->ctl->nranks;
  cs_sched_t *s = calloc(1, sizeof(*s));
  if (!s)
    return -ENOMEM;
  s->cfg = *cfg;
  s->w = w;
  s->n = n;
  s->waiting = -1;
  s->rng = cfg->seed * 0x2545f4914f6cdd1dull + 12345;
  s->en = calloc((size_t)n * (QCAP + 1), sizeof(actor_t));
  s->prio = calloc(2 * (size_t)n, sizeof(uint32_t));
  s->change = calloc(cfg->depth + 1, sizeof(uint64_t));
  if (!s->en || !s->prio || !s->change) {
    cs__sched_fini(s);
    return -ENOMEM;
  }
  cs_sched_area_t *a = area_of(w);
  a->slot_stride = (w->ctl->sched_bytes - sizeof(*a)) / n / 64 * 64;
  a->arena_bytes = a->slot_stride - sizeof(cs_sched_slot_t);
  if (sem_init(&a->wake, 1, 0) < 0) {
    cs__sched_fini(s);
    return -errno;
  }
  for (uint32_t r = 0; r < n; r++) {
    cs_sched_slot_t *sl = slot_of(w, r);
    memset(sl, 0, sizeof(*sl));
    sem_init(&sl->sem, 1, 0);
  }
  if (cfg->strategy == CS_SCHED_PCT) {
    /* Burckhardt et al.: distinct random priorities >= depth for every
     * actor, and depth-1 change points in [0, steps). */
    for (uint32_t i = 0; i < 2 * n; i++)
      s->prio[i] = cfg->depth + i;
    for (uint32_t i = 2 * n; i > 1; i--) {
      uint32_t j = (uint32_t)(cs_splitmix64(&s->rng) % i), t = s->prio[i - 1];
      s->prio[i - 1] = s->prio[j];
      s->prio[j] = t;
    }
    for (uint32_t i = 1; i < cfg->depth; i++)
      s->change[i] = cs_splitmix64(&s->rng) % cfg->steps;
  }
  w->ctl->controlled = 1 + (uint32_t)cfg->model;
  *out = s;
  return 0;
}

void cs__sched_fini(cs_sched_t *s)
{
  if (!s)
    return;
  free(s->en);
  free(s->prio);
  free(s->change);
  free(s);
}

uint64_t cs__sched_steps(const cs_sched_t *s)
{
  return s->steps;
}

void cs__sched_wake_all(cs_sched_t *s)
{
  for (uint32_t r = 0; r < s->n; r++)
    sem_post(&slot_of(s->w, r)->sem);
}

static int cell_satisfied(const cs_world_t *w, uint32_t r, const cs_event_t *ev,
                          int32_t *val)
{
  const cs_slot_t *sl = &w->ctl->layout.slot[ev->slot];
  const int32_t *cell = (const int32_t *)(cs_world_window(w, r) + sl->off) + ev->cell;
  int32_t v = __atomic_load_n(cell, __ATOMIC_ACQUIRE);
  if (val)
    *val = v;
  return ev->opcmp == CS_CMP_EQ ? v == ev->value : v >= ev->value;
}

static int is_post(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT || kind == CS_EV_NOTIFY;
}

/* Whether rank r's posted event may run now. */
static int rank_enabled(const cs_sched_t *s, uint32_t r)
{
  const cs_sched_slot_t *sl = slot_of(s->w, r);
  if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SR_POSTED)
    return 0;
  const cs_event_t *ev = &sl->next;
  if (ev->kind == CS_EV_WAIT) {
    const cs_layout_t *l = &s->w->ctl->layout;
    if (ev->slot >= l->nslots || (uint64_t)ev->cell * 4 + 4 > l->slot[ev->slot].alloc)
      return 1; /* let the rank run into its own bounds check */
    return cell_satisfied(s->w, r, ev, NULL);
  }
  if (ev->kind == CS_EV_FENCE)
    return sl->nops == 0;
  if (is_post(ev->kind) && s->cfg.model != CS_MM_SC) {
    uint64_t bytes = ev->kind == CS_EV_NOTIFY ? 0
                     : (uint64_t)ev->valid * s->w->ctl->layout.slot[ev->slot % CS_MAX_SLOTS].esize;
    uint64_t arena = area_of(s->w)->arena_bytes;
    return sl->nops < QCAP && (sl->arena_used + bytes <= arena || sl->nops == 0);
  }
  return 1;
}

/* Fills s->en; returns the count. Ranks first (by index), then landable
 * DMA ops (by rank, oldest first). */
static uint32_t enabled(cs_sched_t *s, const uint8_t *alive)
{
  uint32_t k = 0;
  for (uint32_t r = 0; r < s->n; r++)
    if (alive[r] && rank_enabled(s, r))
      s->en[k++] = (actor_t){r, -1};
  for (uint32_t r = 0; r < s->n; r++) {
    const cs_sched_slot_t *sl = slot_of(s->w, r);
    uint32_t nl = s->cfg.model == CS_MM_RELAXED ? sl->nops : (sl->nops ? 1 : 0);
    for (uint32_t i = 0; i < nl; i++)
      s->en[k++] = (actor_t){r, (int32_t)i};
  }
  return k;
}

/* One line for a person: "rank 1: load data[16..32) from rank 0 (16
 * physical)". Used by the interactive prompt and replay divergences. */
static void describe(char *buf, size_t n, const cs_layout_t *l, uint32_t rank,
                     uint32_t kind, uint32_t peer, uint32_t slot, uint64_t off,
                     uint32_t valid, uint32_t phys, uint32_t cell,
                     uint32_t opcmp, int32_t value)
{
  const char *sn = slot < l->nslots ? l->slot[slot].name : "?";
  unsigned long long a = (unsigned long long)off, b = a + valid;
  switch (kind) {
  case CS_EV_LOAD:
    if (peer == rank)
      snprintf(buf, n, "rank %u: load %s[%llu..%llu) (local)", rank, sn, a, b);
    else
      snprintf(buf, n, "rank %u: load %s[%llu..%llu) from rank %u (%u physical)",
               rank, sn, a, b, peer, phys);
    break;
  case CS_EV_STORE:
    snprintf(buf, n, "rank %u: store %s[%llu..%llu)", rank, sn, a, b);
    break;
  case CS_EV_PUT:
    snprintf(buf, n, "rank %u: put %s[%llu..%llu) to rank %u", rank, sn, a, b, peer);
    break;
  case CS_EV_NOTIFY:
    snprintf(buf, n, "rank %u: notify rank %u %s[%u] %s%d", rank, peer, sn, cell,
             opcmp == CS_NOTIFY_ADD ? (value >= 0 ? "+" : "") : "= ", value);
    break;
  case CS_EV_WAIT:
    snprintf(buf, n, "rank %u: wait %s[%u] %s %d", rank, sn, cell,
             opcmp == CS_CMP_EQ ? "==" : ">=", value);
    break;
  case CS_EV_FENCE:
    snprintf(buf, n, "rank %u: fence", rank);
    break;
  case CS_EV_REDUCE:
    snprintf(buf, n, "rank %u: reduce %u elements", rank, valid);
    break;
  case CS_EV_MARK:
    snprintf(buf, n, "rank %u: enter %s round %d", rank,
             cell == 1 ? "reduce-scatter/main" : cell == 2 ? "all-gather" : "phase",
             value);
    break;
  default:
    snprintf(buf, n, "rank %u: %s", rank, cs_trace_kind_name(kind));
    break;
  }
}

static void describe_event(char *buf, size_t n, const cs_world_t *w,
                           uint32_t rank, const cs_event_t *ev)
{
  describe(buf, n, &w->ctl->layout, rank, ev->kind, ev->peer, ev->slot,
           ev->elem_off, ev->valid, ev->phys, ev->cell, ev->opcmp, ev->value);
}

static void describe_rec(char *buf, size_t n, const cs_world_t *w,
                         const cs_trace_rec_t *x)
{
  if (x->kind == CS_TR_DMA_LAND)
    snprintf(buf, n, "rank %u's DMA lands op #%llu (%s to rank %u)", x->rank,
             (unsigned long long)x->dma_id, cs_trace_kind_name(x->round), x->peer);
  else
    describe(buf, n, &w->ctl->layout, x->rank, x->kind, x->peer, x->slot,
             x->elem_off, x->valid, x->phys, x->cell, x->opcmp & 0x7fu, x->value);
}

static int stop(cs_sched_t *s, uint32_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int stop(cs_sched_t *s, uint32_t reason, const char *fmt, ...)
{
  cs_ctl_t *c = s->w->ctl;
  uint32_t expect = CS_ABORT_NONE;
  if (__atomic_compare_exchange_n(&c->abort_word, &expect, reason, 0,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    c->abort_rank = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->abort_msg, sizeof(c->abort_msg), fmt, ap);
    va_end(ap);
  }
  cs__sched_wake_all(s);
  return CS_SCHED_STOPPED;
}

/* Performs DMA op i of rank r: the data or signal lands in its target. */
static void land(cs_sched_t *s, uint32_t r, uint32_t i)
{
  cs_world_t *w = s->w;
  cs_sched_slot_t *sl = slot_of(w, r);
  cs_dma_op_t op = sl->q[i];
  const cs_slot_t *ts = &w->ctl->layout.slot[op.slot];
  uint8_t *base = cs_world_window(w, op.peer) + ts->off;
  int32_t observed = 0;
  if (op.kind == CS_EV_NOTIFY) {
    int32_t *cell = (int32_t *)base + op.cell;
    if (op.op == CS_NOTIFY_ADD)
      observed = __atomic_add_fetch(cell, op.value, __ATOMIC_SEQ_CST);
    else
      __atomic_store_n(cell, observed = op.value, __ATOMIC_SEQ_CST);
  } else {
    memcpy(base + op.elem_off * ts->esize, arena_of(w, r) + op.data_off, op.bytes);
  }
  memmove(&sl->q[i], &sl->q[i + 1], (sl->nops - i - 1) * sizeof(cs_dma_op_t));
  if (--sl->nops == 0)
    sl->arena_used = 0;
  if (s->cfg.hooks && s->cfg.hooks->land) {
    cs_event_t landed = {.kind = op.kind, .opcmp = op.op,
                         .elem_off = op.elem_off, .dma_id = op.dma_id,
                         .peer = op.peer, .slot = op.slot, .cell = op.cell,
                         .valid = op.valid, .phys = op.valid, .value = op.value};
    s->cfg.hooks->land(w, r, &landed, observed, s->cfg.hook_arg);
  }
}

static int all_done(const cs_sched_t *s, const uint8_t *alive)
{
  for (uint32_t r = 0; r < s->n; r++) {
    const cs_sched_slot_t *sl = slot_of(s->w, r);
    if ((alive[r] && sl->state != SR_DONE) || sl->nops)
      return 0;
  }
  return 1;
}

/* Reads one line of the person's answers from fd (unbuffered, so no
 * answer is lost between prompts). Waits in poll() so that a SIGINT,
 * SIGTERM or SIGHUP the launcher blocks is noticed. Returns the length,
 * -1 at end of input, -2 when such a signal is pending. */
static int read_line(cs_sched_t *s, int fd, char *line, size_t cap)
{
  for (;;) {
    char *nl = memchr(s->ibuf, '\n', s->ilen);
    if (nl || s->ilen == sizeof(s->ibuf)) {
      size_t n = nl ? (size_t)(nl - s->ibuf) : s->ilen;
      size_t k = n < cap - 1 ? n : cap - 1;
      memcpy(line, s->ibuf, k);
      line[k] = 0;
      size_t used = nl ? n + 1 : n;
      memmove(s->ibuf, s->ibuf + used, s->ilen - used);
      s->ilen -= used;
      return (int)k;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, 100);
    sigset_t pend;
    sigpending(&pend);
    if (sigismember(&pend, SIGINT) || sigismember(&pend, SIGTERM) ||
        sigismember(&pend, SIGHUP))
      return -2;
    if (pr <= 0)
      continue;
    ssize_t r = read(fd, s->ibuf + s->ilen, sizeof(s->ibuf) - s->ilen);
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
      if (s->ilen == 0)
        return -1;
      s->ibuf[s->ilen++] = '\n'; /* a last line without its newline */
      continue;
    }
    if (r > 0)
      s->ilen += (size_t)r;
  }
}

/* Picks an index into s->en, or -1 to stop (replay divergence set). */
static int64_t pick(cs_sched_t *s, uint32_t k)
{
  switch (s->cfg.strategy) {
  case CS_SCHED_RANDOM:
    return (int64_t)(cs_splitmix64(&s->rng) % k);
  case CS_SCHED_PCT: {
    for (;;) {
      int64_t best = -1;
      uint32_t bp = 0;
      for (uint32_t i = 0; i < k; i++) {
        uint32_t a = s->en[i].op < 0 ? s->en[i].rank : s->n + s->en[i].rank;
        if (best < 0 || s->prio[a] > bp) {
          best = i;
          bp = s->prio[a];
        }
      }
      uint32_t a = s->en[best].op < 0 ? s->en[best].rank : s->n + s->en[best].rank;
      int changed = 0;
      for (uint32_t c = 1; c < s->cfg.depth && !changed; c++)
        if (s->change[c] == s->steps) {
          s->prio[a] = c; /* lower the actor about to run at change point c */
          s->change[c] = UINT64_MAX; /* each change point fires once */
          changed = 1;
        }
      if (!changed) {
        /* Relaxed: the engine lands one of its ops, chosen at random. */
        if (s->en[best].op >= 0 && s->cfg.model == CS_MM_RELAXED) {
          uint32_t r = s->en[best].rank, first = (uint32_t)best, cnt = 0;
          while (first > 0 && s->en[first - 1].op >= 0 && s->en[first - 1].rank == r)
            first--;
          while (first + cnt < k && s->en[first + cnt].rank == r && s->en[first + cnt].op >= 0)
            cnt++;
          return first + (int64_t)(cs_splitmix64(&s->rng) % cnt);
        }
        return best;
      }
    }
  }
  case CS_SCHED_LATEST: {
    /* Run ranks while any can run; land ops only when forced, notifies
     * before the data they were meant to follow. */
    if (s->en[0].op < 0)
      return 0;
    for (uint32_t i = 0; i < k; i++) {
      const cs_dma_op_t *op = &slot_of(s->w, s->en[i].rank)->q[s->en[i].op];
      if (op->kind == CS_EV_NOTIFY)
        return i;
    }
    return 0;
  }
  case CS_SCHED_INTERACTIVE: {
    FILE *out = s->cfg.tty_out ? s->cfg.tty_out : stderr;
    FILE *in = s->cfg.tty_in ? s->cfg.tty_in : stdin;
    fprintf(out, "step %llu: enabled actors:\n", (unsigned long long)s->steps);
    for (uint32_t i = 0; i < k; i++) {
      char d[200];
      if (s->en[i].op < 0) {
        describe_event(d, sizeof(d), s->w, s->en[i].rank, &slot_of(s->w, s->en[i].rank)->next);
      } else {
        const cs_dma_op_t *op = &slot_of(s->w, s->en[i].rank)->q[s->en[i].op];
        const cs_layout_t *l = &s->w->ctl->layout;
        if (op->kind == CS_EV_NOTIFY)
          snprintf(d, sizeof(d), "rank %u's DMA: land notify #%llu: rank %u %s[%u] %+d",
                   s->en[i].rank, (unsigned long long)op->dma_id, op->peer,
                   l->slot[op->slot].name, op->cell, op->value);
        else
          snprintf(d, sizeof(d), "rank %u's DMA: land %s #%llu: rank %u %s[%llu..%llu)",
                   s->en[i].rank, op->kind == CS_EV_PUT ? "put" : "store",
                   (unsigned long long)op->dma_id, op->peer, l->slot[op->slot].name,
                   (unsigned long long)op->elem_off,
                   (unsigned long long)(op->elem_off + op->valid));
      }
      fprintf(out, "  [%u] %s\n", i, d);
    }
    fprintf(out, "choose [0-%u] (Enter = 0): ", k - 1);
    fflush(out);
    char line[64];
    int got = read_line(s, fileno(in), line, sizeof(line));
    if (got < 0) {
      fputc('\n', out);
      stop(s, CS_ABORT_SIGNAL, got == -1 ? "interactive schedule: end of input "
           "at step %llu, the run stops here" : "interactive schedule: "
           "interrupted at step %llu", (unsigned long long)s->steps);
      return -1;
    }
    unsigned long v = strtoul(line, NULL, 10);
    return v < k ? (int64_t)v : 0;
  }
  case CS_SCHED_REPLAY: {
    char a[256], b[256];
    if (s->replay_i >= s->cfg.nreplay) {
      describe_event(b, sizeof(b), s->w, s->en[0].rank, &slot_of(s->w, s->en[0].rank)->next);
      stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu: the trace ends "
           "here, but the run goes on (%s)", (unsigned long long)s->replay_i,
           s->en[0].op < 0 ? b : "a DMA landing");
      return -1;
    }
    const cs_trace_rec_t *x = &s->cfg.replay[s->replay_i];
    describe_rec(a, sizeof(a), s->w, x);
    for (uint32_t i = 0; i < k; i++) {
      if (s->en[i].rank != x->rank)
        continue;
      if (x->kind == CS_TR_DMA_LAND && s->en[i].op >= 0 &&
          slot_of(s->w, x->rank)->q[s->en[i].op].dma_id == x->dma_id)
        return i;
      if (x->kind != CS_TR_DMA_LAND && s->en[i].op < 0) {
        const cs_event_t *ev = &slot_of(s->w, x->rank)->next;
        if (ev->kind == x->kind && ev->peer == x->peer && ev->slot == x->slot &&
            ev->elem_off == x->elem_off && ev->valid == x->valid &&
            ev->phys == x->phys && ev->cell == x->cell &&
            ev->opcmp == (x->opcmp & 0x7fu) && ev->value == x->value)
          return i;
        describe_event(b, sizeof(b), s->w, x->rank, ev);
        stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu (seq %llu): "
             "the trace has: %s; the run has: %s", (unsigned long long)s->replay_i,
             (unsigned long long)x->seq, a, b);
        return -1;
      }
    }
    const cs_sched_slot_t *sl = slot_of(s->w, x->rank);
    if (x->kind != CS_TR_DMA_LAND && sl->state == SR_POSTED)
      describe_event(b, sizeof(b), s->w, x->rank, &sl->next);
    else
      snprintf(b, sizeof(b), "%s", sl->state == SR_DONE ? "it has finished"
                                                        : "nothing it can do now");
    stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu (seq %llu): the "
         "trace has: %s; but rank %u is not enabled (posted: %s)",
         (unsigned long long)s->replay_i, (unsigned long long)x->seq, a,
         x->rank, b);
    return -1;
  }
  default:
    return 0;
  }
}

int cs__sched_step(cs_sched_t *s, const uint8_t *alive)
{
  cs_sched_area_t *a = area_of(s->w);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_nsec += 10 * 1000000;
  if (until.tv_nsec >= 1000000000) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000;
  }
  for (;;) {
    if (__atomic_load_n(&s->w->ctl->abort_word, __ATOMIC_ACQUIRE))
      return CS_SCHED_STOPPED;
    /* Wait until every live rank has posted its next event or finished. */
    int ready = 1;
    for (uint32_t r = 0; r < s->n && ready; r++)
      if (alive[r] && __atomic_load_n(&slot_of(s->w, r)->state, __ATOMIC_ACQUIRE) == SR_RUNNING)
        ready = 0;
    if (!ready) {
      if (sem_timedwait(&a->wake, &until) < 0 && errno == ETIMEDOUT)
        return CS_SCHED_RUNNING;
      continue;
    }
    uint32_t k = enabled(s, alive);
    if (k == 0) {
      if (all_done(s, alive)) {
        if (s->cfg.strategy == CS_SCHED_REPLAY && s->replay_i < s->cfg.nreplay)
          return stop(s, CS_ABORT_DIVERGED, "replay diverged at step %llu: the "
                      "run ended, but the trace has %llu more steps",
                      (unsigned long long)s->replay_i,
                      (unsigned long long)(s->cfg.nreplay - s->replay_i));
        return CS_SCHED_FINISHED;
      }
      return stop(s, CS_ABORT_DEADLOCK, "deadlock at step %llu: no rank can "
                  "run and no posted op is left to land",
                  (unsigned long long)s->steps);
    }
    int64_t i = pick(s, k);
    if (i < 0)
      return CS_SCHED_STOPPED;
    actor_t act = s->en[i];
    s->steps++;
    s->replay_i++;
    if (act.op >= 0) {
      land(s, act.rank, (uint32_t)act.op);
    } else {
      cs_sched_slot_t *sl = slot_of(s->w, act.rank);
      __atomic_store_n(&sl->state, SR_RUNNING, __ATOMIC_RELEASE);
      sem_post(&sl->sem);
    }
  }
}
