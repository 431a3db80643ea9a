/*
 * check.c - the happens-before checker of a finished trace (check.h).
 *
 * Owns: the vector clocks of one run and the access maps of its windows,
 * built in one pass over the records in seq order, and the findings.
 * Each rank's clock has 2N words: VC[q], the events of rank q it knows,
 * and FC[q], the fences of rank q it knows. A landing has no clock of its
 * own: a write posted while its rank had seen f fences is known to an
 * event exactly when that event knows fence f + 1 of the rank (FC[p] > f),
 * since a landing's only way out is its rank's next fence (and, for a
 * notify, the waits it satisfies, which join the post's clock). A cell
 * carries the join of the clocks of the posts that changed it (an AtomicAdd
 * continues the release sequence, a Set starts a new one); the landing
 * that satisfied a wait (analysis.h's satisfier) keeps a copy of it for
 * that wait, so a wait joins the notifies it needed and not the ones that
 * landed after its condition held.
 * Seq order is causal (traces/FORMAT.md), so an event's predecessors all
 * come before it and each pair is tested once, when its later event comes.
 * Does not own the text of a finding (tools/check.c) or the links.
 * Called by `collsim check` and `run --check` through check.h.
 */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ state */

typedef struct rd {
  int64_t  idx; /* the rank's latest load of these bytes, -1 none */
  int32_t  blk; /* pool block: its clock, shared by the intervals it read */
} rd_t;

/* Bytes [lo, hi) of one slot of one window with one access history. */
typedef struct ival {
  uint64_t lo, hi;
  int64_t  w;      /* post record of the last write landing, -1 none */
  uint32_t wrank;  /* its posting rank */
  uint32_t wfence; /* fences of that rank before the post */
  uint32_t wepoch; /* the post's VC component */
  rd_t    *r;      /* nranks entries: loads since that write */
} ival_t;

typedef struct imap {
  ival_t  *v; /* sorted by lo, disjoint */
  uint64_t n, cap;
} imap_t;

typedef struct cell {
  int64_t  value;
  int64_t  last_set, last_add, last_change; /* post records, -1 none */
  int64_t  last_radd; /* the last add by a rank other than the owner */
  uint8_t  waited;    /* a wait-end on it since that add */
  int64_t  eq_wait;  /* the last Eq wait-end on it, -1 none */
  uint32_t eq_rank, eq_epoch;
  uint8_t  touched, mixed_told;
} cell_t;

typedef struct cellset {
  cell_t   *c;  /* ncells, NULL until first touched */
  uint32_t *vc; /* 2N words per cell */
  uint64_t  ncells;
} cellset_t;

typedef struct ck {
  const cs_trace_t       *t;
  const cs_trace_links_t *l;
  cs_check_report_t      *rep;
  uint32_t  n, w;      /* ranks, clock words (2n) */
  uint32_t *clk;       /* n clocks of w words */
  int32_t  *snap_of;   /* per record: its pool block, -1 none */
  uint32_t *refs;      /* per record: waits it satisfied */
  uint32_t *pool;      /* blocks of w words */
  uint32_t *pool_ref;  /* per block: uses left */
  uint32_t  npool, cap_pool, free_head;
  imap_t   *maps;      /* nranks x nslots */
  cellset_t *cells;    /* nranks x nslots */
  int64_t  *unused;    /* per rank: its last remote load not yet used */
  int64_t  *fold;      /* hash of findings: index + 1, 0 empty */
  uint64_t  nfold;
  int64_t   last_a, last_b; /* dedupe inside one access */
  int       any_eq;    /* some wait of the run compares with Eq */
  int32_t   max_eq;    /* the largest target of those waits */
  int       faulted;   /* a rank failed or died: its notifies stopped */
  int       collective; /* an allreduce: every remote load feeds a reduce
                           or a store before the rank's next one */
  int       oom;
} ck_t;

#define FOLD_SLOTS 8192u
#define POOL_NONE UINT32_MAX

static uint32_t *clock_of(ck_t *c, uint32_t r) { return c->clk + (size_t)r * c->w; }

static void join(uint32_t *dst, const uint32_t *src, uint32_t w)
{
  for (uint32_t i = 0; i < w; i++)
    if (src[i] > dst[i])
      dst[i] = src[i];
}

/* ------------------------------------------------------------ pool */

/* A block of w words holding `src`, used `uses` times; -1 out of memory. */
static int32_t pool_get(ck_t *c, const uint32_t *src, uint32_t uses)
{
  uint32_t b;
  if (c->free_head != POOL_NONE) {
    b = c->free_head;
    c->free_head = c->pool_ref[b]; /* a free block's ref holds the next */
  } else {
    if (c->npool == c->cap_pool) {
      uint32_t cap = c->cap_pool ? 2 * c->cap_pool : 64;
      uint32_t *p = realloc(c->pool, (size_t)cap * c->w * sizeof(uint32_t));
      if (!p)
        return c->oom = 1, -1;
      c->pool = p;
      uint32_t *r = realloc(c->pool_ref, (size_t)cap * sizeof(uint32_t));
      if (!r)
        return c->oom = 1, -1;
      c->pool_ref = r;
      c->cap_pool = cap;
    }
    b = c->npool++;
  }
  memcpy(c->pool + (size_t)b * c->w, src, c->w * sizeof(uint32_t));
  c->pool_ref[b] = uses;
  return (int32_t)b;
}

static uint32_t *pool_at(ck_t *c, int32_t b) { return c->pool + (size_t)b * c->w; }

static void pool_put(ck_t *c, int32_t b)
{
  if (--c->pool_ref[b] == 0) {
    c->pool_ref[b] = c->free_head;
    c->free_head = (uint32_t)b;
  }
}

/* ------------------------------------------------------------ findings */

static uint64_t mix(uint64_t h, uint64_t v)
{
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

static uint64_t pos_key(uint64_t h, const cs_trace_rec_t *x)
{
  if (!x)
    return mix(h, 0);
  return mix(mix(mix(mix(h, x->kind), x->phase), x->round), x->step);
}

static int same_pos(const cs_trace_rec_t *x, const cs_trace_rec_t *y)
{
  if (!x || !y)
    return x == y;
  return x->kind == y->kind && x->phase == y->phase && x->round == y->round &&
         x->step == y->step;
}

static const cs_trace_rec_t *rec_or_null(const ck_t *c, int64_t i)
{
  return i >= 0 ? &c->t->rec[i] : NULL;
}

/* Records one occurrence: folded into an earlier finding of the same kind,
 * cause and positions of both events, else kept as a new one. */
static void found(ck_t *c, uint32_t kind, uint32_t cause, int64_t a, int64_t b,
                  int32_t value)
{
  cs_check_report_t *rep = c->rep;
  const cs_trace_rec_t *ra = rec_or_null(c, a), *rb = rec_or_null(c, b);
  uint64_t h = pos_key(pos_key(mix(mix(1, kind), cause), ra), rb);
  rep->total++;
  for (uint64_t s = h % FOLD_SLOTS, k = 0; k < FOLD_SLOTS; k++) {
    int64_t e = c->fold[(s + k) % FOLD_SLOTS];
    if (e == 0) {
      if (rep->n >= CS_CHECK_MAX_FINDINGS)
        return;
      c->fold[(s + k) % FOLD_SLOTS] = (int64_t)rep->n + 1;
      rep->f[rep->n++] = (cs_check_finding_t){kind, cause, a, b, value, 1};
      return;
    }
    cs_check_finding_t *f = &rep->f[e - 1];
    if (f->kind == kind && f->cause == cause &&
        same_pos(rec_or_null(c, f->a), ra) && same_pos(rec_or_null(c, f->b), rb)) {
      f->count++;
      return;
    }
  }
}

/* ------------------------------------------------------------ access maps */

static rd_t *reads_new(ck_t *c, const rd_t *from)
{
  rd_t *r = malloc(c->n * sizeof(rd_t));
  if (!r)
    return c->oom = 1, NULL;
  for (uint32_t i = 0; i < c->n; i++) {
    r[i] = from ? from[i] : (rd_t){-1, -1};
    if (r[i].idx >= 0)
      c->pool_ref[r[i].blk]++;
  }
  return r;
}

/* Inserts a copy of `iv` with range [lo, hi) at position p. */
static int ival_insert(ck_t *c, imap_t *m, uint64_t p, const ival_t *iv,
                       uint64_t lo, uint64_t hi)
{
  if (m->n == m->cap) {
    uint64_t cap = m->cap ? 2 * m->cap : 16;
    ival_t *v = realloc(m->v, cap * sizeof(ival_t));
    if (!v)
      return c->oom = 1, -1;
    m->v = v;
    m->cap = cap;
  }
  rd_t *r = reads_new(c, iv ? iv->r : NULL);
  if (!r)
    return -1;
  memmove(&m->v[p + 1], &m->v[p], (m->n - p) * sizeof(ival_t));
  m->v[p] = iv ? *iv : (ival_t){.w = -1};
  m->v[p].lo = lo;
  m->v[p].hi = hi;
  m->v[p].r = r;
  m->n++;
  return 0;
}

/* First interval whose hi > x. */
static uint64_t ival_find(const imap_t *m, uint64_t x)
{
  uint64_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (m->v[mid].hi <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Splits the interval holding x (if x is inside it) at x. */
static int ival_split(ck_t *c, imap_t *m, uint64_t x)
{
  uint64_t p = ival_find(m, x);
  if (p == m->n || m->v[p].lo >= x)
    return 0;
  ival_t left = m->v[p];
  m->v[p].lo = x;
  return ival_insert(c, m, p, &left, left.lo, x);
}

/* Makes [lo, hi) exactly a run of intervals; returns the first's position
 * and sets *end past the last, or -1 out of memory. */
static int64_t ival_cover(ck_t *c, imap_t *m, uint64_t lo, uint64_t hi,
                          uint64_t *end)
{
  if (ival_split(c, m, lo) < 0 || ival_split(c, m, hi) < 0)
    return -1;
  uint64_t p = ival_find(m, lo), first = p, x = lo;
  while (x < hi) {
    if (p == m->n || m->v[p].lo > x) {
      uint64_t gap_end = p == m->n || m->v[p].lo > hi ? hi : m->v[p].lo;
      if (ival_insert(c, m, p, NULL, x, gap_end) < 0)
        return -1;
    }
    x = m->v[p].hi;
    p++;
  }
  *end = p;
  return (int64_t)first;
}

/* The bytes of slot `slot` a record touches, clamped to the slot's alloc;
 * 0 if none. */
static int byte_range(const cs_trace_t *t, const cs_trace_rec_t *x,
                      uint32_t elems, uint64_t *lo, uint64_t *hi)
{
  const cs_layout_t *L = &t->hdr.layout;
  if (x->slot >= L->nslots || elems == 0)
    return 0;
  uint64_t es = L->slot[x->slot].esize ? L->slot[x->slot].esize : 1;
  uint64_t cap = L->slot[x->slot].alloc;
  *lo = x->elem_off * es;
  *hi = *lo + (uint64_t)elems * es;
  if (*hi > cap)
    *hi = cap;
  return *lo < *hi;
}

static imap_t *map_of(ck_t *c, uint32_t rank, uint32_t slot)
{
  return &c->maps[(size_t)rank * c->t->hdr.layout.nslots + slot];
}

/* Why write w (by wrank, epoch wepoch) is not ordered before an event
 * whose clock is k. */
static uint32_t write_cause(const ck_t *c, const uint32_t *k, uint32_t wrank,
                            uint32_t wepoch)
{
  (void)c;
  return k[wrank] >= wepoch ? CS_CHECK_NO_FENCE : CS_CHECK_NO_SIGNAL;
}

static void race(ck_t *c, int64_t a, int64_t b, uint32_t cause)
{
  if (a == c->last_a && b == c->last_b)
    return;
  c->last_a = a;
  c->last_b = b;
  found(c, CS_CHECK_RACE, cause, a, b, 0);
}

static void read_forget(ck_t *c, rd_t *r)
{
  if (r->idx >= 0)
    pool_put(c, r->blk);
  *r = (rd_t){-1, -1};
}

/* Load record i by its rank with clock k. */
static void access_read(ck_t *c, int64_t i, const uint32_t *k)
{
  const cs_trace_rec_t *x = &c->t->rec[i];
  uint64_t lo, hi, end;
  if (!byte_range(c->t, x, x->phys > x->valid ? x->phys : x->valid, &lo, &hi))
    return;
  imap_t *m = map_of(c, x->peer, x->slot);
  int64_t p = ival_cover(c, m, lo, hi, &end);
  if (p < 0)
    return;
  int32_t blk = pool_get(c, k, (uint32_t)(end - (uint64_t)p));
  if (blk < 0)
    return;
  c->last_a = c->last_b = -1;
  for (uint64_t j = (uint64_t)p; j < end; j++) {
    ival_t *iv = &m->v[j];
    if (iv->w >= 0 && !(k[c->n + iv->wrank] > iv->wfence))
      race(c, iv->w, i, write_cause(c, k, iv->wrank, iv->wepoch));
    read_forget(c, &iv->r[x->rank]);
    iv->r[x->rank] = (rd_t){i, blk};
  }
}

/* A load whose bytes a write lands on later, unordered: a read-complete
 * barrier is missing, unless the load knew the write's post (its rank
 * signalled before the write landed). */
static void late_landing(ck_t *c, const rd_t *r, int64_t pi, uint32_t p,
                         uint32_t wepoch)
{
  if (pool_at(c, r->blk)[p] >= wepoch)
    race(c, pi, r->idx, CS_CHECK_NO_FENCE);
  else
    race(c, r->idx, pi, CS_CHECK_NO_READ_DONE);
}

/* The landing of write post pi whose clock at the post was k. */
static void access_write(ck_t *c, int64_t pi, const uint32_t *k)
{
  const cs_trace_rec_t *x = &c->t->rec[pi];
  uint64_t lo, hi, end;
  if (!byte_range(c->t, x, x->valid, &lo, &hi))
    return;
  imap_t *m = map_of(c, x->peer, x->slot);
  int64_t p = ival_cover(c, m, lo, hi, &end);
  if (p < 0)
    return;
  c->last_a = c->last_b = -1;
  for (uint64_t j = (uint64_t)p; j < end; j++) {
    ival_t *iv = &m->v[j];
    if (iv->w >= 0 && !(k[c->n + iv->wrank] > iv->wfence))
      race(c, iv->w, pi, write_cause(c, k, iv->wrank, iv->wepoch));
    for (uint32_t q = 0; q < c->n; q++) {
      rd_t *r = &iv->r[q];
      if (r->idx >= 0 && k[q] < pool_at(c, r->blk)[q])
        late_landing(c, r, pi, x->rank, k[x->rank]);
      read_forget(c, r);
    }
    iv->w = pi;
    iv->wrank = x->rank;
    iv->wfence = k[c->n + x->rank];
    iv->wepoch = k[x->rank];
  }
}

/* ------------------------------------------------------------ cells */

/* The cell a notify or wait names, NULL if outside its slot or out of
 * memory; its clock (w words) in *vc. */
static cell_t *cell_of(ck_t *c, uint32_t rank, uint32_t slot, uint32_t cell,
                       uint32_t **vc)
{
  const cs_layout_t *L = &c->t->hdr.layout;
  if (slot >= L->nslots || rank >= c->n)
    return NULL;
  cellset_t *s = &c->cells[(size_t)rank * L->nslots + slot];
  if (!s->c) {
    uint64_t es = L->slot[slot].esize ? L->slot[slot].esize : 1;
    s->ncells = L->slot[slot].nbytes / es;
    s->c = calloc(s->ncells ? s->ncells : 1, sizeof(cell_t));
    s->vc = calloc((s->ncells ? s->ncells : 1) * c->w, sizeof(uint32_t));
    if (!s->c || !s->vc) {
      c->oom = 1;
      free(s->c);
      free(s->vc);
      s->c = NULL;
      s->vc = NULL;
      return NULL;
    }
    for (uint64_t i = 0; i < s->ncells; i++)
      s->c[i] = (cell_t){.last_set = -1, .last_add = -1, .last_change = -1,
                         .last_radd = -1, .eq_wait = -1};
  }
  if (cell >= s->ncells)
    return NULL;
  *vc = s->vc + (size_t)cell * c->w;
  return &s->c[cell];
}

/* A notify posted at record pi (clock k) changes its cell; record i is
 * where it landed (pi itself at issue, else its dma-land). */
static void land_notify(ck_t *c, int64_t i, int64_t pi, const uint32_t *k)
{
  const cs_trace_rec_t *x = &c->t->rec[pi];
  uint32_t *vc;
  cell_t *ce = cell_of(c, x->peer, x->slot, x->cell, &vc);
  if (!ce)
    return;
  int add = cs_trace_rec_is_add(x);
  ce->touched = 1;
  if (!ce->mixed_told && (add ? ce->last_set : ce->last_add) >= 0) {
    ce->mixed_told = 1;
    found(c, CS_CHECK_MIXED_OPS, 0, add ? ce->last_set : pi,
          add ? pi : ce->last_add, 0);
  }
  if (add && x->rank != x->peer) {
    /* In a run with Eq waits, a cell one rank adds to twice with no wait on
     * it in between, past every Eq target, has passed a value an Eq wait
     * may have needed (a controlled run does not record a wait it never
     * granted). */
    if (c->any_eq && !ce->waited && ce->last_radd >= 0 &&
        c->t->rec[ce->last_radd].rank == x->rank &&
        ce->value + x->value > c->max_eq)
      found(c, CS_CHECK_WAIT_EQ, 0, ce->last_radd, pi, 0);
    ce->last_radd = pi;
    ce->waited = 0;
  }
  if (add) {
    ce->value += x->value;
    join(vc, k, c->w);
    ce->last_add = pi;
    if (ce->eq_wait >= 0 && x->rank != ce->eq_rank &&
        k[ce->eq_rank] < ce->eq_epoch) {
      found(c, CS_CHECK_WAIT_EQ, 0, ce->eq_wait, pi, 0);
      ce->eq_wait = -1;
    }
  } else {
    ce->value = x->value;
    memcpy(vc, k, c->w * sizeof(uint32_t));
    ce->last_set = pi;
  }
  ce->last_change = pi;
  if (c->refs[i] > 0)
    c->snap_of[i] = pool_get(c, vc, c->refs[i]);
}

/* A wait-end that held: joins what the notifies it needed knew. */
static void wait_end(ck_t *c, int64_t i, uint32_t *k)
{
  const cs_trace_rec_t *x = &c->t->rec[i];
  int64_t s = c->l->satisfier[i];
  if (s >= 0 && c->snap_of[s] >= 0) {
    join(k, pool_at(c, c->snap_of[s]), c->w);
    pool_put(c, c->snap_of[s]);
  }
  uint32_t *vc;
  cell_t *ce = cell_of(c, x->rank, x->slot, x->cell, &vc);
  if (ce)
    ce->waited = 1;
  if (ce && (x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ) {
    ce->eq_wait = i;
    ce->eq_rank = x->rank;
    ce->eq_epoch = k[x->rank];
  }
}

/* ------------------------------------------------------------ the pass */

/* A posted op (dma_id != 0) keeps its clock until it lands. */
static void post(ck_t *c, int64_t i, const uint32_t *k)
{
  c->snap_of[i] = pool_get(c, k, 1);
}

static void land(ck_t *c, int64_t i)
{
  int64_t pi = c->l->post[i];
  if (pi < 0 || c->snap_of[pi] < 0)
    return;
  int32_t b = c->snap_of[pi];
  c->snap_of[pi] = -1;
  const uint32_t *k = pool_at(c, b);
  uint32_t kind = c->t->rec[pi].kind;
  if (kind == CS_EV_NOTIFY)
    land_notify(c, i, pi, k);
  else if (kind == CS_EV_STORE || kind == CS_EV_PUT)
    access_write(c, pi, k);
  pool_put(c, b);
}

/* A remote load a reduce or store of the rank has not used yet. */
static void note_unused(ck_t *c, uint32_t r, int64_t next)
{
  if (c->unused[r] >= 0)
    found(c, CS_CHECK_DEAD_READ, 0, c->unused[r], -1, 0);
  c->unused[r] = next;
}

/* One rank event: a tick of its clock, then its effect. */
static void rank_event(ck_t *c, int64_t i)
{
  const cs_trace_rec_t *x = &c->t->rec[i];
  uint32_t r = x->rank, *k = clock_of(c, r);
  k[r]++;
  if (x->opcmp & CS_TR_FAILED && x->kind != CS_EV_REDUCE) {
    c->rep->failed++;
    return;
  }
  switch (x->kind) {
  case CS_EV_LOAD:
    access_read(c, i, k);
    if (x->peer != r && c->collective)
      note_unused(c, r, i);
    break;
  case CS_EV_STORE:
  case CS_EV_PUT:
    c->unused[r] = -1;
    if (x->dma_id)
      post(c, i, k);
    else
      access_write(c, i, k);
    break;
  case CS_EV_NOTIFY:
    if (x->dma_id)
      post(c, i, k);
    else
      land_notify(c, i, i, k);
    break;
  case CS_EV_WAIT: wait_end(c, i, k); break;
  case CS_EV_FENCE: k[c->n + r]++; break;
  case CS_EV_REDUCE: c->unused[r] = -1; break;
  default: break;
  }
}

/* ------------------------------------------------------------ the end */

static int holds(uint32_t cmp, int64_t v, int64_t target)
{
  return (cmp & ~CS_TR_FAILED) == CS_CMP_EQ ? v == target : v >= target;
}

/* Waits that never ended (a wait-begin without its end, a failed wait):
 * an Eq wait its cell passed, or a wait the cell's final value, with every
 * notify of the run landed, does not satisfy. */
static void stuck_waits(ck_t *c)
{
  for (uint64_t i = 0; i < c->t->n; i++) {
    const cs_trace_rec_t *x = &c->t->rec[i];
    int open = x->kind == CS_TR_WAIT_BEGIN && c->l->pair[i] < 0;
    int failed = x->kind == CS_EV_WAIT && (x->opcmp & CS_TR_FAILED);
    if (!open && !failed)
      continue;
    uint32_t *vc;
    cell_t *ce = cell_of(c, x->rank, x->slot, x->cell, &vc);
    if (!ce)
      continue;
    int eq = (x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ;
    if (eq && ce->value > x->value)
      found(c, CS_CHECK_WAIT_EQ, 0, (int64_t)i, ce->last_change, 0);
    else if (!c->faulted && !holds(x->opcmp, ce->value, x->value))
      found(c, CS_CHECK_UNSATISFIABLE, 0, (int64_t)i, ce->last_change,
            (int32_t)ce->value);
  }
}

/* A run of more than one call reuses its cells: each must be back at 0
 * when the run ends. Unused remote loads left at the end are reported. */
static void at_end(ck_t *c)
{
  const cs_layout_t *L = &c->t->hdr.layout;
  if (c->rep->aborted)
    return;
  for (uint32_t r = 0; r < c->n; r++)
    note_unused(c, r, -1);
  if (c->t->hdr.iters < 2)
    return;
  for (size_t s = 0; s < (size_t)c->n * L->nslots; s++)
    for (uint64_t j = 0; c->cells[s].c && j < c->cells[s].ncells; j++) {
      const cell_t *ce = &c->cells[s].c[j];
      if (ce->touched && ce->value != 0)
        found(c, CS_CHECK_NOT_RESET, 0, ce->last_change, -1,
              (int32_t)ce->value);
    }
}

/* ------------------------------------------------------------ set-up */

static void ck_fini(ck_t *c)
{
  size_t nm = (size_t)c->n * c->t->hdr.layout.nslots;
  for (size_t s = 0; c->maps && s < nm; s++) {
    for (uint64_t j = 0; j < c->maps[s].n; j++)
      free(c->maps[s].v[j].r);
    free(c->maps[s].v);
  }
  for (size_t s = 0; c->cells && s < nm; s++) {
    free(c->cells[s].c);
    free(c->cells[s].vc);
  }
  free(c->maps);
  free(c->cells);
  free(c->clk);
  free(c->snap_of);
  free(c->refs);
  free(c->pool);
  free(c->pool_ref);
  free(c->unused);
  free(c->fold);
}

static int ck_init(ck_t *c, const cs_trace_t *t, const cs_trace_links_t *l,
                   cs_check_report_t *rep)
{
  *c = (ck_t){.t = t, .l = l, .rep = rep, .n = t->hdr.nranks,
              .free_head = POOL_NONE, .last_a = -1,
              .last_b = -1};
  c->w = 2 * c->n;
  c->collective = t->hdr.program == 0 && t->hdr.algo != 255;
  size_t nm = (size_t)c->n * t->hdr.layout.nslots, m = t->n ? t->n : 1;
  c->clk = calloc((size_t)c->n * c->w, sizeof(uint32_t));
  c->snap_of = malloc(m * sizeof(int32_t));
  c->refs = calloc(m, sizeof(uint32_t));
  c->maps = calloc(nm ? nm : 1, sizeof(imap_t));
  c->cells = calloc(nm ? nm : 1, sizeof(cellset_t));
  c->unused = malloc(c->n * sizeof(int64_t));
  c->fold = calloc(FOLD_SLOTS, sizeof(int64_t));
  rep->f = malloc(CS_CHECK_MAX_FINDINGS * sizeof(cs_check_finding_t));
  if (!c->clk || !c->snap_of || !c->refs || !c->maps || !c->cells ||
      !c->unused || !c->fold || !rep->f)
    return -ENOMEM;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    int wait = x->kind == CS_EV_WAIT || x->kind == CS_TR_WAIT_BEGIN;
    if (wait && (x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ) {
      c->any_eq = 1;
      c->max_eq = x->value > c->max_eq ? x->value : c->max_eq;
    }
    c->faulted |= x->kind == CS_TR_FAULT ||
                  (!cs_trace_rec_is_launcher(x) && x->kind != CS_EV_REDUCE &&
                   (x->opcmp & CS_TR_FAILED));
    c->snap_of[i] = -1;
    if (t->rec[i].kind == CS_EV_WAIT && l->satisfier[i] >= 0)
      c->refs[l->satisfier[i]]++;
  }
  for (uint32_t r = 0; r < c->n; r++)
    c->unused[r] = -1;
  return 0;
}

int cs_check_run(const cs_trace_t *t, const cs_trace_links_t *l,
                 cs_check_report_t *rep)
{
  ck_t c;
  *rep = (cs_check_report_t){0};
  int rc = ck_init(&c, t, l, rep);
  for (uint64_t i = 0; rc == 0 && i < t->n && !c.oom; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (x->kind == CS_TR_ABORT)
      rep->aborted = 1;
    if (cs_trace_rec_is_launcher(x) || x->rank >= c.n)
      continue;
    if (x->kind == CS_TR_DMA_LAND)
      land(&c, (int64_t)i);
    else if (x->kind != CS_TR_DMA_POST)
      rank_event(&c, (int64_t)i);
  }
  if (rc == 0 && !c.oom) {
    stuck_waits(&c);
    at_end(&c);
  }
  if (rc == 0 && c.oom)
    rc = -ENOMEM;
  ck_fini(&c);
  if (rc < 0)
    cs_check_report_fini(rep);
  return rc;
}

void cs_check_report_fini(cs_check_report_t *rep)
{
  free(rep->f);
  *rep = (cs_check_report_t){0};
}

void cs_check_bounds(const cs_trace_t *t, int64_t i, uint64_t reach,
                     int64_t *before, int64_t *after)
{
  *before = *after = -1;
  if (i < 0 || (uint64_t)i >= t->n)
    return;
  uint32_t r = t->rec[i].rank;
  for (uint64_t j = (uint64_t)i, k = 0; j-- > 0 && k < reach; k++) {
    const cs_trace_rec_t *x = &t->rec[j];
    if (x->rank == r && !cs_trace_rec_is_launcher(x) &&
        (x->kind == CS_EV_WAIT || x->kind == CS_EV_FENCE)) {
      *before = (int64_t)j;
      break;
    }
  }
  for (uint64_t j = (uint64_t)i + 1, k = 0; j < t->n && k < reach; j++, k++) {
    const cs_trace_rec_t *x = &t->rec[j];
    if (x->rank == r && x->kind == CS_EV_NOTIFY) {
      *after = (int64_t)j;
      break;
    }
  }
}

const char *cs_check_kind_name(uint32_t kind)
{
  switch (kind) {
  case CS_CHECK_RACE: return "race";
  case CS_CHECK_MIXED_OPS: return "mixed Set/Add";
  case CS_CHECK_WAIT_EQ: return "wait Eq hazard";
  case CS_CHECK_NOT_RESET: return "cell not reset";
  case CS_CHECK_UNSATISFIABLE: return "unsatisfiable wait";
  case CS_CHECK_DEAD_READ: return "unused remote read";
  default: return "?";
  }
}
