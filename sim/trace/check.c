/*
 * check.c - the happens-before checker of a finished trace (check.h): the
 * clocks, the access maps and the findings, fed one record at a time.
 *
 * Owns: the vector clocks of one run and the access maps of its windows,
 * built in one pass over the records in seq order. Each rank's clock has
 * 2N words: VC[q], the events of rank q it knows, and FC[q], the fences of
 * rank q it knows. A landing has no clock of its own: a write posted while
 * its rank had passed f fences is known to an event exactly when that
 * event knows the rank's fence f + 1 (FC[p] > f), since a landing's only
 * way out is its rank's next fence (and, for a notify, the waits it
 * satisfies, which join the post's clock).
 * A cell carries the join of the clocks of the posts that changed it (an
 * AtomicAdd continues the release sequence, a Set starts a new one), and a
 * short history of its values since the last Set with that join after
 * each remote landing: a wait joins the entry at which its condition first
 * held (the notifies it needed, as analysis.h's satisfier finds them), not
 * the ones that landed after. When that entry has left the history the
 * oldest kept one is joined: more order, never a race that is not there.
 * Seq order is causal (traces/FORMAT.md), so an event's predecessors all
 * come before it and each pair is tested once, when its later event comes.
 * Does not own the text of a finding (cli/collsim/check.c), the links of a
 * loaded trace (analysis.h) or the file reader (read.h: cs_check_file
 * merges one stream per rank).
 */
#define _GNU_SOURCE
#include "check.h"

#include <stdio.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../window/cs_error.h"
#include "read.h"

/* ------------------------------------------------------------ state */

typedef struct rd {
  int32_t blk; /* the rank's latest load of these bytes: its pool block
                  (clock and record), -1 none */
} rd_t;

/* Bytes [lo, hi) of one slot of one window with one access history. */
typedef struct ival {
  uint64_t lo, hi;
  int32_t  w;      /* pool block of the last write's post, -1 none */
  uint32_t wrank;  /* its posting rank */
  uint32_t wfence; /* fences of that rank before the post */
  uint32_t wepoch; /* the post's VC component */
  rd_t    *r;      /* nranks entries: loads since that write */
} ival_t;

typedef struct imap {
  ival_t  *v; /* sorted by lo, disjoint */
  uint64_t n, cap;
} imap_t;

/* Values of a cell since its last Set: one entry per remote landing. */
#define HIST 8u
/* Cells of one slot the checker tracks at most (each a cell_t, kept for the
 * whole run): signal slots of real runs hold thousands; a header claiming
 * more is refused rather than allocated. */
#define CHECK_MAX_CELLS (1u << 20)

typedef struct cell {
  int64_t  value;    /* every landing applied */
  int64_t  base;     /* the last Set's value, or 0 */
  int64_t  own;      /* the owner's adds since then */
  int64_t  rsum;     /* the other ranks' adds since then */
  uint32_t hn, h0;   /* history entries kept, index of the oldest */
  uint8_t  monotone; /* every remote add since the Set was > 0 */
  uint8_t  set_entry; /* the oldest entry is a remote Set (rsum 0) */
  uint8_t  set_remote; /* the last Set was another rank's */
  uint8_t  touched, mixed_told, waited, has_eq, has_radd, has_set, has_add;
  uint32_t eq_rank, eq_epoch;
  int64_t  first;    /* the changes posted in the first call, summed */
  uint8_t  first_touched; /* a change was posted in the first call */
  int64_t *hsum;     /* HIST: rsum after each entry */
  uint32_t *hvc;     /* HIST x w: the cell's clock after each entry */
  uint32_t *vc;      /* w: the join of the posts that changed it */
  cs_trace_rec_t eq_wait, last_radd, last_set, last_add, last_change;
  cs_trace_rec_t first_change; /* the last change posted in the first call */
} cell_t;

typedef struct cellset {
  cell_t  *c; /* ncells, NULL until first touched */
  uint64_t ncells;
} cellset_t;

/* Posted ops of one rank in flight: pool blocks by dma id from base. */
typedef struct pend {
  int32_t *v;
  uint64_t base, len, cap;
  uint64_t posts; /* posted ops of the rank seen so far */
} pend_t;

/* The last few syncs (wait-end, fence) and notifies of one rank, for the
 * bounds of a finding. */
#define RECENT 64u
typedef struct recent {
  cs_trace_rec_t sync[RECENT], notify[RECENT];
  uint64_t nsync, nnotify; /* seen so far; the last RECENT are kept */
} recent_t;

struct cs_check {
  cs_trace_header_t h;
  cs_check_report_t rep;
  uint32_t  n, w;      /* ranks, clock words (2n) */
  uint32_t *clk;       /* n clocks of w words */
  uint32_t *pool;      /* blocks: a clock, then a record */
  uint32_t *pool_ref;  /* per block: uses left (free: the next free) */
  uint32_t  npool, cap_pool, free_head;
  imap_t   *maps;      /* nranks x nslots */
  cellset_t *cells;    /* nranks x nslots */
  pend_t   *pend;      /* nranks */
  cs_check_pos_t *pos; /* nranks: each rank's position now */
  uint32_t *mark_at;   /* nranks: its last marker, phase << 24 | round */
  uint8_t  *has_mark;  /* nranks: it passed a marker */
  recent_t *recent;    /* nranks */
  cs_trace_rec_t *unused;  /* per rank: its last remote load not yet used */
  uint8_t  *has_unused;
  cs_trace_rec_t *open_wait; /* per rank: a wait-begin without its end */
  uint8_t  *has_open;
  cs_trace_rec_t *failed_wait; /* per rank: a wait-end that failed */
  uint8_t  *has_failed;
  uint32_t *pending_after; /* per finding: the next notify it needs of a's
                              rank (bit 0) and of b's (bit 1) */
  uint32_t *npending;  /* per rank: findings waiting for its next notify */
  uint32_t *drains;    /* per rank: its pipe barriers and fences so far (a
                          post made after d of them is fenced once the rank's
                          fence word passes d: FC[p] = the drains a fence or
                          DDR fence has made visible) */
  uint32_t *own_drained; /* per rank: drains as of its last pipe barrier or
                            fence of its own (not a notify's), which a
                            notify's own DDR fence makes visible */
  struct line_w *lines; /* per window line: its last Set and other write */
  uint64_t  nlines, cap_lines;
  struct line_list *line_at; /* per rank: the lines in `lines`, sorted */
  int64_t  *fold;      /* hash of findings: index + 1, 0 empty */
  uint64_t  last_seq;
  uint64_t  last_a, last_b; /* dedupe inside one access: seqs */
  int32_t   max_eq;    /* the largest target of the run's Eq waits seen */
  int       any_eq;    /* some wait so far compares with Eq */
  int       faulted;   /* a rank died or faulted: its notifies stopped */
  int32_t   abort_reason; /* CS_ABORT_* of the abort record, 0 none */
  int       collective; /* a built-in allreduce: every remote load feeds a
                           reduce or a store before the rank's next one */
  int       err;       /* first error, sticky */
};

typedef struct cs_check ck_t;
#define POOL_NONE UINT32_MAX
#define FOLD_SLOTS 8192u
#define PEND_MAX (1u << 20) /* posted ops of one rank in flight at most */

static void found(ck_t *c, uint32_t kind, uint32_t cause,
                            const cs_trace_rec_t *a, const cs_trace_rec_t *b,
                            int32_t value);
static int notify_after(const ck_t *c, const cs_trace_rec_t *x,
                        cs_trace_rec_t *out);
static uint32_t fence_part(const ck_t *c, const cs_trace_rec_t *a,
                           const cs_trace_rec_t *b);
static void found_at(ck_t *c, uint32_t kind, uint32_t cause,
                     const cs_trace_rec_t *a, const cs_check_pos_t *pa,
                     const cs_trace_rec_t *b, const cs_check_pos_t *pb,
                     int32_t value, uint32_t reversed);
static void cell_notify(ck_t *c, const cs_trace_rec_t *x, const uint32_t *k,
                        uint32_t call);
static void wait_end(ck_t *c, const cs_trace_rec_t *x, uint32_t *k);
static void wait_begin(ck_t *c, const cs_trace_rec_t *x);
static void failed_event(ck_t *c, const cs_trace_rec_t *x);
static void sync_seen(ck_t *c, const cs_trace_rec_t *x);
static void end_checks(ck_t *c);
static int rank_findings(ck_t *c);
static int aux_init(ck_t *c);
static void aux_fini(ck_t *c);

/* ------------------------------------------------------------ clocks */

static uint32_t *clock_of(ck_t *c, uint32_t r) { return c->clk + (size_t)r * c->w; }

static void join(uint32_t *dst, const uint32_t *src, uint32_t w)
{
  for (uint32_t i = 0; i < w; i++)
    if (src[i] > dst[i])
      dst[i] = src[i];
}

/* ------------------------------------------------------------ pool */

/* Blocks of BLK(c) words: a clock (w words, an even number), the event's
 * position, its record, then its rank's drains when it was made and a pad
 * word, so that every block's record stays 8-byte aligned. */
#define REC_WORDS (sizeof(cs_trace_rec_t) / sizeof(uint32_t))
#define POS_WORDS (sizeof(cs_check_pos_t) / sizeof(uint32_t))
#define DRAIN_WORDS 2u
#define BLK(c) ((c)->w + POS_WORDS + REC_WORDS + DRAIN_WORDS)
_Static_assert((POS_WORDS + REC_WORDS + DRAIN_WORDS) % 2 == 0 && POS_WORDS % 2 == 0,
               "a block's record must stay 8-byte aligned");

static uint32_t *pool_at(ck_t *c, int32_t b) { return c->pool + (size_t)b * BLK(c); }

static const cs_check_pos_t *pool_pos(ck_t *c, int32_t b)
{
  return (const cs_check_pos_t *)(pool_at(c, b) + c->w);
}

static const cs_trace_rec_t *pool_rec(ck_t *c, int32_t b)
{
  return (const cs_trace_rec_t *)(pool_at(c, b) + c->w + POS_WORDS);
}

static uint32_t pool_drains(ck_t *c, int32_t b)
{
  return pool_at(c, b)[c->w + POS_WORDS + REC_WORDS];
}

/* A block holding clock k and record x (its rank's current position),
 * used `uses` times; -1 out of memory. */
static int32_t pool_get(ck_t *c, const uint32_t *k, const cs_trace_rec_t *x,
                        uint32_t uses)
{
  uint32_t b;
  if (c->free_head != POOL_NONE) {
    b = c->free_head;
    c->free_head = c->pool_ref[b]; /* a free block's ref holds the next */
  } else {
    if (c->npool == c->cap_pool) {
      uint32_t cap = c->cap_pool ? 2 * c->cap_pool : 64;
      uint32_t *p = realloc(c->pool, (size_t)cap * BLK(c) * sizeof(uint32_t));
      if (!p)
        return c->err = -ENOMEM, -1;
      c->pool = p;
      uint32_t *r = realloc(c->pool_ref, (size_t)cap * sizeof(uint32_t));
      if (!r)
        return c->err = -ENOMEM, -1;
      c->pool_ref = r;
      c->cap_pool = cap;
    }
    b = c->npool++;
  }
  memcpy(pool_at(c, (int32_t)b), k, c->w * sizeof(uint32_t));
  memcpy(pool_at(c, (int32_t)b) + c->w, &c->pos[x->rank], sizeof(cs_check_pos_t));
  memcpy(pool_at(c, (int32_t)b) + c->w + POS_WORDS, x, sizeof(*x));
  pool_at(c, (int32_t)b)[c->w + POS_WORDS + REC_WORDS] =
      x->rank < c->n ? c->drains[x->rank] : 0;
  c->pool_ref[b] = uses;
  return (int32_t)b;
}

static void pool_put(ck_t *c, int32_t b)
{
  if (b >= 0 && --c->pool_ref[b] == 0) {
    c->pool_ref[b] = c->free_head;
    c->free_head = (uint32_t)b;
  }
}

static void pool_hold(ck_t *c, int32_t b)
{
  if (b >= 0)
    c->pool_ref[b]++;
}

/* ------------------------------------------------------------ access maps */

static rd_t *reads_new(ck_t *c, const rd_t *from)
{
  rd_t *r = malloc(c->n * sizeof(rd_t));
  if (!r)
    return c->err = -ENOMEM, NULL;
  for (uint32_t i = 0; i < c->n; i++) {
    r[i] = from ? from[i] : (rd_t){-1};
    pool_hold(c, r[i].blk);
  }
  return r;
}

/* Inserts a copy of `iv` (or an empty interval) with range [lo, hi) at
 * position p. */
static int ival_insert(ck_t *c, imap_t *m, uint64_t p, const ival_t *iv,
                       uint64_t lo, uint64_t hi)
{
  if (m->n == m->cap) {
    uint64_t cap = m->cap ? 2 * m->cap : 16;
    ival_t *v = realloc(m->v, cap * sizeof(ival_t));
    if (!v)
      return c->err = -ENOMEM, -1;
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
  pool_hold(c, m->v[p].w);
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

/* The bytes of its slot a record touches, clamped to the slot's alloc
 * (reads of the padding count by their physical extent); 0 if none. */
static int byte_range(const ck_t *c, const cs_trace_rec_t *x, uint64_t off,
                      uint32_t elems, uint64_t *lo, uint64_t *hi)
{
  const cs_layout_t *L = &c->h.layout;
  if (x->slot >= L->nslots || x->peer >= c->n || elems == 0)
    return 0;
  uint64_t es = L->slot[x->slot].esize ? L->slot[x->slot].esize : 1;
  uint64_t cap = L->slot[x->slot].alloc;
  if (off > cap / es)
    return 0;
  *lo = off * es;
  *hi = *lo + (uint64_t)elems * es;
  if (*hi > cap)
    *hi = cap;
  return *lo < *hi;
}

static imap_t *map_of(ck_t *c, uint32_t rank, uint32_t slot)
{
  return &c->maps[(size_t)rank * c->h.layout.nslots + slot];
}

/* Why a write (posted by rank p at epoch e) is not ordered before an
 * event whose clock is k: k knows the post (a fence is missing) or not. */
static uint32_t write_cause(const uint32_t *k, uint32_t p, uint32_t e)
{
  return k[p] >= e ? CS_CHECK_NO_FENCE : CS_CHECK_NO_SIGNAL;
}

static int is_write(const cs_trace_rec_t *x)
{
  return x->kind == CS_EV_STORE || x->kind == CS_EV_PUT;
}

/* -1, 0, 1 as position p comes before, with, or after q. */
static int pos_cmp(const cs_check_pos_t *p, const cs_check_pos_t *q)
{
  if (p->mark != q->mark)
    return p->mark < q->mark ? -1 : 1;
  if (p->step != q->step)
    return p->step < q->step ? -1 : 1;
  if (p->ord != q->ord)
    return p->ord < q->ord ? -1 : 1;
  return 0;
}

/* The intended order: whether the algorithm means access a (at position
 * pa) to come before access b (pb), two accesses of a race that nothing
 * orders. Every rank runs the same program, so the one at the earlier
 * position comes first: a load at RS round t means to read the store of
 * round t - 1 (or the stage-in) before it, and a store means to overwrite
 * only what the loads at earlier positions have read. At one position a
 * step reads before it writes: the load comes first. */
static int meant_first(const cs_trace_rec_t *a, const cs_check_pos_t *pa,
                       const cs_trace_rec_t *b, const cs_check_pos_t *pb)
{
  int d = pos_cmp(pa, pb);
  if (d != 0)
    return d < 0;
  return !(is_write(a) && b->kind == CS_EV_LOAD);
}

/* A race between a (first in the run) and b. A race the clocks cannot
 * order by themselves (neither knew of the other: no signal, or a load
 * before a write that does not wait for it) is told in the intended
 * order, with the edge that order needs: a write first needs a signal
 * after it (a READY barrier), a load first needs a read-complete barrier.
 * Never the order this run happened to take. */
static void race(ck_t *c, const cs_trace_rec_t *a, const cs_check_pos_t *pa,
                 const cs_trace_rec_t *b, const cs_check_pos_t *pb,
                 uint32_t cause)
{
  if (a->seq == c->last_a && b->seq == c->last_b)
    return; /* the same pair, met again in the next interval */
  c->last_a = a->seq;
  c->last_b = b->seq;
  if (cause != CS_CHECK_NO_FENCE && !meant_first(a, pa, b, pb)) {
    cause = b->kind == CS_EV_LOAD ? CS_CHECK_NO_READ_DONE : CS_CHECK_NO_SIGNAL;
    found_at(c, CS_CHECK_RACE, cause, b, pb, a, pa, 0, 1);
    return;
  }
  found_at(c, CS_CHECK_RACE, cause, a, pa, b, pb, 0, 0);
}

static void read_forget(ck_t *c, rd_t *r)
{
  pool_put(c, r->blk);
  r->blk = -1;
}

/* An access's footprint is its rows (FORMAT.md, 2-D accesses): one for
 * a 1-D access, from elem_off; a 2-D one's `cell` rows of valid/cell
 * elements, `value` elements apart (the reader refuses a 2-D record whose
 * rows do not fit that, or number more than CS_TRACE_MAX_ROWS). The gaps
 * between rows are untouched: a write there races with nothing. */
static uint32_t rows_of(const cs_trace_rec_t *x)
{
  return cs_trace_rec_is_2d(x) ? x->cell : 1;
}

static uint64_t row_off(const cs_trace_rec_t *x, uint32_t i)
{
  return x->elem_off + (uint64_t)i * (uint32_t)x->value;
}

/* The intervals of access x's window map that row i (n elements; 1-D:
 * row 0) covers: the first index, with *m the map and *end one past the
 * last; -1 when the range is empty or out of the slot. */
static int64_t cover(ck_t *c, const cs_trace_rec_t *x, uint32_t i, uint32_t n,
                     imap_t **m, uint64_t *end)
{
  uint64_t lo, hi;
  if (!byte_range(c, x, row_off(x, i), n, &lo, &hi))
    return -1;
  *m = map_of(c, x->peer, x->slot);
  return ival_cover(c, *m, lo, hi, end);
}

/* Access x (its rank's clock k) against interval iv's last write: a race
 * unless the write's fence epoch is ordered before x. */
static inline void after_write(ck_t *c, const ival_t *iv, const uint32_t *k,
                               const cs_trace_rec_t *x, const cs_check_pos_t *px)
{
  if (iv->w >= 0 && !(k[c->n + iv->wrank] > iv->wfence))
    race(c, pool_rec(c, iv->w), pool_pos(c, iv->w), x, px,
         write_cause(k, iv->wrank, iv->wepoch));
}

/* Load x by its rank, whose clock is k. */
static void access_read(ck_t *c, const cs_trace_rec_t *x, const uint32_t *k)
{
  uint32_t rows = rows_of(x);
  uint32_t n = cs_trace_rec_is_2d(x) ? x->valid / rows
               : x->phys > x->valid ? x->phys : x->valid;
  c->last_a = c->last_b = UINT64_MAX;
  for (uint32_t i = 0; i < rows; i++) {
    uint64_t end;
    imap_t *m;
    int64_t p = cover(c, x, i, n, &m, &end);
    if (p < 0)
      continue;
    int32_t blk = pool_get(c, k, x, (uint32_t)(end - (uint64_t)p));
    if (blk < 0)
      return;
    for (uint64_t j = (uint64_t)p; j < end; j++) {
      ival_t *iv = &m->v[j];
      after_write(c, iv, k, x, &c->pos[x->rank]);
      read_forget(c, &iv->r[x->rank]);
      iv->r[x->rank].blk = blk;
    }
  }
}

/* A load r whose bytes write w (block wb: post clock, record) lands on
 * later, unordered: a read-complete barrier is missing, unless the load
 * knew the write's post (its rank signalled before the write landed). */
static void late_landing(ck_t *c, int32_t rb, int32_t wb)
{
  const cs_trace_rec_t *w = pool_rec(c, wb), *r = pool_rec(c, rb);
  if (pool_at(c, rb)[w->rank] >= pool_at(c, wb)[w->rank])
    race(c, w, pool_pos(c, wb), r, pool_pos(c, rb), CS_CHECK_NO_FENCE);
  else
    race(c, r, pool_pos(c, rb), w, pool_pos(c, wb), CS_CHECK_NO_READ_DONE);
}

static void write_row(ck_t *c, int32_t wb, uint32_t i, uint32_t n);

/* The landing of the write in block wb (its post's clock and record). */
static void access_write(ck_t *c, int32_t wb)
{
  const cs_trace_rec_t *x = pool_rec(c, wb);
  uint32_t rows = rows_of(x);
  c->last_a = c->last_b = UINT64_MAX;
  for (uint32_t i = 0; i < rows; i++)
    write_row(c, wb, i, x->valid / rows);
}

/* Row i (n elements) of the write in block wb. A reducing put (opcmp
 * 1 + op) also reads what it lands on: the check that the bytes' last
 * write is ordered before it (after_write) is the same one its read
 * needs, so it is checked once, as a write. */
static void write_row(ck_t *c, int32_t wb, uint32_t i, uint32_t n)
{
  const cs_trace_rec_t *x = pool_rec(c, wb);
  const uint32_t *k = pool_at(c, wb);
  uint64_t end;
  imap_t *m;
  int64_t p = cover(c, x, i, n, &m, &end);
  if (p < 0)
    return;
  for (uint64_t j = (uint64_t)p; j < end; j++) {
    ival_t *iv = &m->v[j];
    after_write(c, iv, k, x, pool_pos(c, wb));
    for (uint32_t q = 0; q < c->n; q++) {
      rd_t *r = &iv->r[q];
      if (r->blk >= 0 && k[q] < pool_at(c, r->blk)[q])
        late_landing(c, r->blk, wb);
      read_forget(c, r);
    }
    pool_put(c, iv->w);
    pool_hold(c, wb);
    iv->w = wb;
    iv->wrank = x->rank;
    iv->wfence = pool_drains(c, wb);
    iv->wepoch = k[x->rank];
  }
}

/* ------------------------------------------------------------ lines */

/* The 64-byte lines of the windows that notifies have touched: the last
 * Set notify and the last other write (add, store, put) to each, for the
 * clobber of a Set's whole-line write-back (CS_CHECK_CLOBBER). An open
 * hash by (window, line). */
#define LINE 64u
typedef struct line_w {
  uint64_t key; /* (rank << 48 | line) + 1, 0 empty */
  int32_t  set, other; /* pool blocks, -1 none */
} line_w_t;

static uint64_t line_hash(uint64_t key)
{
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  return key ^ (key >> 33);
}

static line_w_t *line_find(ck_t *c, uint64_t key, int insert)
{
  if (insert && 2 * (c->nlines + 1) > c->cap_lines) {
    uint64_t cap = c->cap_lines ? 2 * c->cap_lines : 256;
    line_w_t *v = calloc(cap, sizeof(*v));
    if (!v)
      return c->err = -ENOMEM, NULL;
    for (uint64_t i = 0; i < c->cap_lines; i++)
      if (c->lines[i].key)
        for (uint64_t h = line_hash(c->lines[i].key);; h++)
          if (!v[h & (cap - 1)].key) {
            v[h & (cap - 1)] = c->lines[i];
            break;
          }
    free(c->lines);
    c->lines = v;
    c->cap_lines = cap;
  }
  if (!c->cap_lines)
    return NULL;
  for (uint64_t h = line_hash(key);; h++) {
    line_w_t *e = &c->lines[h & (c->cap_lines - 1)];
    if (e->key == key)
      return e;
    if (!e->key) {
      if (!insert)
        return NULL;
      c->nlines++;
      *e = (line_w_t){.key = key, .set = -1, .other = -1};
      return e;
    }
  }
}

/* Whether the write in block b is ordered before the event with clock k:
 * k knows a fence of b's rank that came after b's drains. */
static int knows(ck_t *c, const uint32_t *k, int32_t b)
{
  return k[c->n + pool_rec(c, b)->rank] > pool_drains(c, b);
}

/* Set a and write b (blocks) of two ranks, neither ordered before the
 * other: a clobber. */
static void clobber(ck_t *c, int32_t a, int32_t b)
{
  const cs_trace_rec_t *x = pool_rec(c, a), *y = pool_rec(c, b);
  if (x->rank == y->rank || knows(c, pool_at(c, b), a) ||
      knows(c, pool_at(c, a), b))
    return;
  found_at(c, CS_CHECK_CLOBBER, 0, x, pool_pos(c, a), y, pool_pos(c, b), 0,
           0);
}

/* The lines of one window that notifies have touched, ascending: a data
 * write looks up only these (a binary search per row), so its cost does
 * not grow with its length. */
typedef struct line_list {
  uint64_t *v;
  uint64_t  n, cap;
} line_list_t;

static int line_list_add(ck_t *c, line_list_t *ll, uint64_t line)
{
  if (ll->n == ll->cap) {
    uint64_t cap = ll->cap ? 2 * ll->cap : 64;
    uint64_t *v = realloc(ll->v, cap * sizeof(*v));
    if (!v)
      return c->err = -ENOMEM;
    ll->v = v;
    ll->cap = cap;
  }
  uint64_t p = ll->n;
  while (p > 0 && ll->v[p - 1] > line)
    p--;
  memmove(&ll->v[p + 1], &ll->v[p], (ll->n - p) * sizeof(uint64_t));
  ll->v[p] = line;
  ll->n++;
  return 0;
}

/* The first index of ll whose line is >= line. */
static uint64_t line_list_find(const line_list_t *ll, uint64_t line)
{
  uint64_t lo = 0, hi = ll->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (ll->v[mid] < line)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Write b (its record x) against line entry e. */
static void line_check(ck_t *c, line_w_t *e, int32_t b,
                       const cs_trace_rec_t *x, int set)
{
  if (set) {
    if (e->other >= 0)
      clobber(c, b, e->other);
    if (e->set >= 0 && (pool_rec(c, e->set)->cell != x->cell ||
                        pool_rec(c, e->set)->slot != x->slot))
      clobber(c, b, e->set);
    pool_put(c, e->set);
    e->set = b;
  } else {
    if (e->set >= 0)
      clobber(c, e->set, b);
    pool_put(c, e->other);
    e->other = b;
  }
  pool_hold(c, b);
}

/* The write of block b (a notify, or a data write) against the lines it
 * writes: a Set is checked against the other writes to its line, any
 * other write against the line's last Set. Data writes are checked only
 * against lines a notify touched, row by row (the gaps of a 2-D write
 * are not written). */
static void line_write(ck_t *c, int32_t b)
{
  const cs_trace_rec_t *x = pool_rec(c, b);
  const cs_layout_t *L = &c->h.layout;
  if (x->slot >= L->nslots || x->peer >= c->n)
    return;
  const cs_slot_t *sl = &L->slot[x->slot];
  if (x->kind == CS_EV_NOTIFY) {
    if (!cs_slot_cell_ok(sl, x->cell))
      return;
    uint64_t line = cs_slot_cell_off(sl, x->cell) / LINE;
    uint64_t n0 = c->nlines;
    line_w_t *e = line_find(c, ((uint64_t)x->peer << 48 | line) + 1, 1);
    if (!e)
      return;
    if (c->nlines > n0 && line_list_add(c, &c->line_at[x->peer], line) < 0)
      return;
    line_check(c, e, b, x, !cs_trace_rec_is_add(x));
    return;
  }
  const line_list_t *ll = &c->line_at[x->peer];
  if (ll->n == 0)
    return;
  uint32_t rows = rows_of(x);
  uint32_t per = cs_trace_rec_is_2d(x) ? x->valid / rows : x->valid;
  for (uint32_t i = 0; i < rows; i++) {
    uint64_t lo, hi;
    if (!byte_range(c, x, row_off(x, i), per, &lo, &hi))
      continue;
    lo += sl->off;
    hi += sl->off;
    for (uint64_t k = line_list_find(ll, lo / LINE);
         k < ll->n && ll->v[k] <= (hi - 1) / LINE; k++) {
      line_w_t *e = line_find(c, ((uint64_t)x->peer << 48 | ll->v[k]) + 1, 0);
      if (e)
        line_check(c, e, b, x, 0);
    }
  }
}

/* ------------------------------------------------------------ posts */

/* Posted ops waiting for their landing, per rank: a window of dma ids
 * from the oldest one still in flight. */
static int pend_put(ck_t *c, uint32_t r, uint64_t id, int32_t blk)
{
  pend_t *q = &c->pend[r];
  q->posts++;
  if (q->len == 0)
    q->base = id;
  /* A rank numbers its posted ops 1, 2, ...: the window never spans more
   * ids than the rank has posted, so memory follows the records. */
  if (id < q->base || id - q->base >= q->posts || id - q->base > PEND_MAX)
    return pool_put(c, blk), 0; /* not a dma id this run could have made */
  while (q->len <= id - q->base) { /* id - base: no overflow at 2^64 */
    if (q->len == q->cap) {
      uint64_t cap = q->cap ? 2 * q->cap : 64;
      int32_t *v = realloc(q->v, cap * sizeof(int32_t));
      if (!v)
        return pool_put(c, blk), c->err = -ENOMEM;
      q->v = v;
      q->cap = cap;
    }
    q->v[q->len++] = -1;
  }
  pool_put(c, q->v[id - q->base]);
  q->v[id - q->base] = blk;
  return 0;
}

/* The block of posted op (r, id), taken out of the window; -1 none. */
static int32_t pend_take(ck_t *c, uint32_t r, uint64_t id)
{
  pend_t *q = &c->pend[r];
  if (id < q->base || id - q->base >= q->len)
    return -1;
  int32_t b = q->v[id - q->base];
  q->v[id - q->base] = -1;
  uint64_t drop = 0;
  while (drop < q->len && q->v[drop] < 0)
    drop++;
  if (drop == 0)
    return b;
  memmove(q->v, q->v + drop, (q->len - drop) * sizeof(int32_t));
  q->len -= drop;
  q->base += drop;
  return b;
}

/* The landing of a posted op, record x (rank = poster, dma_id). */
static void land(ck_t *c, const cs_trace_rec_t *x)
{
  int32_t b = pend_take(c, x->rank, x->dma_id);
  if (b < 0)
    return;
  uint32_t kind = pool_rec(c, b)->kind;
  if (kind == CS_EV_NOTIFY)
    cell_notify(c, pool_rec(c, b), pool_at(c, b), pool_pos(c, b)->call);
  else if (kind == CS_EV_STORE || kind == CS_EV_PUT)
    access_write(c, b);
  line_write(c, b);
  pool_put(c, b);
}

/* A store, put or notify of rank x->rank with clock k: it lands now (free
 * mode, sc) or is posted until its dma-land. */
static void produce(ck_t *c, const cs_trace_rec_t *x, const uint32_t *k)
{
  if (x->dma_id) {
    int32_t b = pool_get(c, k, x, 1);
    if (b >= 0)
      pend_put(c, x->rank, x->dma_id, b);
    return;
  }
  int32_t b = pool_get(c, k, x, 1);
  if (x->kind == CS_EV_NOTIFY)
    cell_notify(c, x, k, c->pos[x->rank].call);
  else if (b >= 0)
    access_write(c, b);
  if (b >= 0) {
    line_write(c, b);
    pool_put(c, b);
  }
}

/* ------------------------------------------------------------ the pass */

/* A remote load a reduce or store of the rank has not used yet. */
static void note_unused(ck_t *c, uint32_t r, const cs_trace_rec_t *next)
{
  if (c->has_unused[r])
    found(c, CS_CHECK_DEAD_READ, 0, &c->unused[r], NULL, 0);
  c->has_unused[r] = next != NULL;
  if (next)
    c->unused[r] = *next;
}

/* Moves rank x->rank's position past event x: a marker not after the
 * rank's last one begins a new call (every algorithm marks its phases and
 * rounds in increasing order); a new step tag restarts the count. */
static void advance(ck_t *c, const cs_trace_rec_t *x)
{
  cs_check_pos_t *p = &c->pos[x->rank];
  if (x->kind == CS_EV_MARK) {
    uint32_t at = (x->cell & 0xffu) << 24 | (x->value & 0xffffffu);
    if (c->has_mark[x->rank] && at <= c->mark_at[x->rank])
      p->call++;
    c->has_mark[x->rank] = 1;
    c->mark_at[x->rank] = at;
    p->mark++;
    p->step = 0;
    p->ord = 0;
    return;
  }
  if (x->kind == CS_TR_WAIT_BEGIN)
    return; /* not every wait has one: no step of the algorithm */
  if (x->step < p->step)
    p->mark++; /* the steps start again: a round its collective left
                  unmarked */
  if (x->step != p->step) {
    p->step = x->step;
    p->ord = 0;
  }
  p->ord++;
}

/* One rank event: a tick of its clock, then its effect. */
static void rank_event(ck_t *c, const cs_trace_rec_t *x)
{
  uint32_t r = x->rank, *k = clock_of(c, r);
  k[r]++;
  advance(c, x);
  sync_seen(c, x);
  if (x->opcmp & CS_TR_FAILED && x->kind != CS_EV_REDUCE) {
    failed_event(c, x);
    return;
  }
  switch (x->kind) {
  case CS_EV_LOAD:
    access_read(c, x, k);
    if (x->peer != r && c->collective)
      note_unused(c, r, x);
    break;
  case CS_EV_STORE:
  case CS_EV_PUT:
    c->has_unused[r] = 0;
    produce(c, x, k);
    break;
  case CS_EV_NOTIFY:
    produce(c, x, k);
    /* Its own DDR fence, after its signal: what an earlier pipe barrier
     * (or fence) of the rank drained is visible before the rank's next
     * event (a2a3), as that pipe barrier alone makes it under relaxed,
     * but the signal may land first. What only a notify's own pipe
     * barrier drained is not: a notify orders nothing under relaxed. */
    if (k[c->n + r] < c->own_drained[r])
      k[c->n + r] = c->own_drained[r];
    c->drains[r]++; /* its own pipe barrier drains what came before */
    break;
  case CS_EV_WAIT: wait_end(c, x, k); break;
  case CS_TR_WAIT_BEGIN: wait_begin(c, x); break;
  case CS_EV_FENCE: k[c->n + r] = c->own_drained[r] = ++c->drains[r]; break;
  case CS_EV_PIPE: c->own_drained[r] = ++c->drains[r]; break;
  case CS_EV_DDR: k[c->n + r] = c->drains[r]; break;
  case CS_EV_REDUCE: c->has_unused[r] = 0; break;
  default: break;
  }
}

int cs_check_feed(cs_check_t *c, const cs_trace_rec_t *x)
{
  if (c->err)
    return c->err;
  if (c->rep.records && x->seq <= c->last_seq)
    return c->err = CS_EDUPSEQ;
  c->last_seq = x->seq;
  c->rep.records++;
  if (x->kind == CS_TR_ABORT) {
    c->rep.aborted = 1;
    c->abort_reason = x->value;
  }
  if (x->kind == CS_TR_FAULT && !(x->step == 2 && x->value == CS_RX_TIMEOUT))
    c->faulted = 1; /* a rank died; its own wait timing out is a symptom */
  if (cs_trace_rec_is_launcher(x) || x->rank >= c->n)
    return 0;
  if (x->kind == CS_TR_DMA_LAND)
    land(c, x);
  else if (x->kind != CS_TR_DMA_POST)
    rank_event(c, x);
  return c->err;
}

/* ------------------------------------------------------------ set-up */

int cs_check_create(cs_check_t **out, const cs_trace_header_t *h)
{
  ck_t *c = calloc(1, sizeof(*c));
  *out = c;
  if (!c)
    return -ENOMEM;
  c->h = *h;
  c->n = h->nranks;
  c->w = 2 * c->n;
  c->free_head = POOL_NONE;
  /* a built-in's: a collective of one's own (algo 254) may load two
   * tiles before it folds either */
  c->collective = h->program == 0 && h->algo < CS_TRACE_ALGO_USER;
  c->faulted = h->fault_kind != 0; /* an injected fault stops a rank */
  size_t nm = (size_t)c->n * h->layout.nslots;
  c->clk = calloc((size_t)c->n * c->w, sizeof(uint32_t));
  c->maps = calloc(nm ? nm : 1, sizeof(imap_t));
  c->cells = calloc(nm ? nm : 1, sizeof(cellset_t));
  c->pend = calloc(c->n, sizeof(pend_t));
  c->pos = calloc(c->n, sizeof(cs_check_pos_t));
  c->mark_at = calloc(c->n, sizeof(uint32_t));
  c->has_mark = calloc(c->n, 1);
  c->unused = calloc(c->n, sizeof(cs_trace_rec_t));
  c->has_unused = calloc(c->n, 1);
  c->drains = calloc(c->n, sizeof(uint32_t));
  c->own_drained = calloc(c->n, sizeof(uint32_t));
  c->line_at = calloc(c->n, sizeof(line_list_t));
  c->rep.f = malloc(CS_CHECK_MAX_FINDINGS * sizeof(cs_check_finding_t));
  if (!c->clk || !c->maps || !c->cells || !c->pend || !c->unused ||
      !c->pos || !c->mark_at || !c->has_mark ||
      !c->has_unused || !c->drains || !c->own_drained || !c->line_at ||
      !c->rep.f || aux_init(c) < 0) {
    cs_check_destroy(c);
    *out = NULL;
    return -ENOMEM;
  }
  return 0;
}

void cs_check_destroy(cs_check_t *c)
{
  if (!c)
    return;
  size_t nm = (size_t)c->n * c->h.layout.nslots;
  for (size_t s = 0; c->maps && s < nm; s++) {
    for (uint64_t j = 0; j < c->maps[s].n; j++)
      free(c->maps[s].v[j].r);
    free(c->maps[s].v);
  }
  for (uint32_t r = 0; c->pend && r < c->n; r++)
    free(c->pend[r].v);
  for (uint64_t i = 0; i < c->cap_lines; i++)
    if (c->lines[i].key) {
      pool_put(c, c->lines[i].set);
      pool_put(c, c->lines[i].other);
    }
  aux_fini(c);
  free(c->maps);
  free(c->clk);
  free(c->pool);
  free(c->pool_ref);
  free(c->pend);
  free(c->pos);
  free(c->mark_at);
  free(c->has_mark);
  free(c->unused);
  free(c->has_unused);
  free(c->drains);
  free(c->own_drained);
  free(c->lines);
  for (uint32_t r = 0; c->line_at && r < c->n; r++)
    free(c->line_at[r].v);
  free(c->line_at);
  free(c->rep.f);
  free(c);
}

int cs_check_finish(cs_check_t *c, cs_check_report_t *rep)
{
  *rep = (cs_check_report_t){0};
  if (c->err)
    return c->err;
  end_checks(c);
  if (!c->rep.aborted)
    for (uint32_t r = 0; r < c->n; r++)
      note_unused(c, r, NULL);
  if (rank_findings(c) < 0)
    return -ENOMEM;
  *rep = c->rep;
  c->rep.f = NULL;
  return 0;
}

int cs_check_run(const cs_trace_t *t, cs_check_report_t *rep)
{
  cs_check_t *c;
  *rep = (cs_check_report_t){0};
  int rc = cs_check_create(&c, &t->hdr);
  for (uint64_t i = 0; rc == 0 && i < t->n; i++)
    rc = cs_check_feed(c, &t->rec[i]);
  if (rc == 0)
    rc = cs_check_finish(c, rep);
  cs_check_destroy(c);
  return rc;
}

void cs_check_report_fini(cs_check_report_t *rep)
{
  free(rep->f);
  *rep = (cs_check_report_t){0};
}

/* ------------------------------------------------------------ findings */

static uint64_t mix(uint64_t h, uint64_t v)
{
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

static uint64_t pos_key(uint64_t h, const cs_trace_rec_t *x)
{
  if (!x)
    return mix(h, 0);
  return mix(mix(mix(mix(h, x->kind), x->phase), x->round), x->step);
}

static int same_pos(const cs_trace_rec_t *x, int has, const cs_trace_rec_t *y)
{
  if (!has || !y)
    return !has && !y;
  return x->kind == y->kind && x->phase == y->phase && x->round == y->round &&
         x->step == y->step;
}

/* The last sync of x's rank before x, from the rank's recent ones. */
static int sync_before(const ck_t *c, const cs_trace_rec_t *x, cs_trace_rec_t *out)
{
  const recent_t *rc = &c->recent[x->rank];
  uint64_t lo = rc->nsync > RECENT ? rc->nsync - RECENT : 0;
  for (uint64_t i = rc->nsync; i-- > lo;)
    if (rc->sync[i % RECENT].seq < x->seq) {
      *out = rc->sync[i % RECENT];
      return 1;
    }
  return 0;
}

/* The first notify of x's rank after x, if it came already (1), is still
 * to come (0), or has left the recent ones (-1). */
static int notify_after(const ck_t *c, const cs_trace_rec_t *x, cs_trace_rec_t *out)
{
  const recent_t *rc = &c->recent[x->rank];
  uint64_t lo = rc->nnotify > RECENT ? rc->nnotify - RECENT : 0;
  int found_one = 0;
  for (uint64_t i = rc->nnotify; i-- > lo;) {
    if (rc->notify[i % RECENT].seq <= x->seq)
      return found_one;
    *out = rc->notify[i % RECENT];
    found_one = 1;
  }
  return found_one ? 1 : (lo > 0 ? -1 : 0);
}

/* Which part of the fence the writer of a NO_FENCE race lacks: its
 * pipe barriers and DDR fences after the write a and before its next
 * notify (or, on one rank, before b), as far as its recent syncs go. A
 * DDR fence after a pipe barrier would have ordered it: only one half,
 * or the halves the wrong way round, leave it unordered. */
static uint32_t fence_part(const ck_t *c, const cs_trace_rec_t *a,
                           const cs_trace_rec_t *b)
{
  uint64_t until = b->seq;
  cs_trace_rec_t nx;
  if (a->rank != b->rank && notify_after(c, a, &nx) == 1)
    until = nx.seq;
  const recent_t *rc = &c->recent[a->rank];
  uint64_t lo = rc->nsync > RECENT ? rc->nsync - RECENT : 0;
  int pipe = 0, ddr_first = 0;
  for (uint64_t i = lo; i < rc->nsync; i++) {
    const cs_trace_rec_t *y = &rc->sync[i % RECENT];
    if (y->seq <= a->seq || y->seq >= until)
      continue;
    if (y->kind == CS_EV_FENCE || (y->kind == CS_EV_DDR && pipe))
      return CS_CHECK_PART_FENCE; /* ordered it: the signal came before */
    if (y->kind == CS_EV_PIPE)
      pipe = 1;
    else if (y->kind == CS_EV_DDR)
      ddr_first = 1;
  }
  return pipe ? CS_CHECK_PART_DDR : ddr_first ? CS_CHECK_PART_PIPE
                                              : CS_CHECK_PART_FENCE;
}

/* The bounds of a new finding's events; a notify still to come is filled
 * in when it comes (pending_after). */
static void bounds(ck_t *c, cs_check_finding_t *f, uint64_t fi)
{
  c->pending_after[fi] = 0;
  if (f->has & CS_CHECK_HAS_A) {
    f->has |= sync_before(c, &f->a, &f->a_before) ? CS_CHECK_HAS_A_BEFORE : 0;
    int k = notify_after(c, &f->a, &f->a_after);
    f->has |= k > 0 ? CS_CHECK_HAS_A_AFTER : 0;
    c->pending_after[fi] |= k == 0 ? 1u : 0;
    c->npending[f->a.rank] += k == 0;
  }
  if (f->has & CS_CHECK_HAS_B) {
    f->has |= sync_before(c, &f->b, &f->b_before) ? CS_CHECK_HAS_B_BEFORE : 0;
    int k = notify_after(c, &f->b, &f->b_after);
    f->has |= k > 0 ? CS_CHECK_HAS_B_AFTER : 0;
    c->pending_after[fi] |= k == 0 ? 2u : 0;
    c->npending[f->b.rank] += k == 0;
  }
}

/* Records one occurrence: folded into an earlier finding of the same kind,
 * cause and positions of both events (and both on one rank, or not), else
 * kept as a new one. */
static void found(ck_t *c, uint32_t kind, uint32_t cause,
                  const cs_trace_rec_t *a, const cs_trace_rec_t *b,
                  int32_t value)
{
  found_at(c, kind, cause, a, a ? &c->pos[a->rank] : NULL, b,
           b ? &c->pos[b->rank] : NULL, value, 0);
}

/* found(), with the positions of a and b (NULL: unknown) and whether the
 * run did b first. */
static void found_at(ck_t *c, uint32_t kind, uint32_t cause,
                     const cs_trace_rec_t *a, const cs_check_pos_t *pa,
                     const cs_trace_rec_t *b, const cs_check_pos_t *pb,
                     int32_t value, uint32_t reversed)
{
  cs_check_report_t *rep = &c->rep;
  int same = a && b && a->rank == b->rank; /* one rank or two: other fixes */
  uint64_t h = pos_key(pos_key(mix(mix(mix(1, kind), cause), same), a), b);
  rep->total++;
  for (uint64_t k = 0; k < FOLD_SLOTS; k++) {
    int64_t *e = &c->fold[(h + k) % FOLD_SLOTS];
    if (*e == 0) {
      if (rep->n >= CS_CHECK_MAX_FINDINGS)
        return;
      cs_check_finding_t *f = &rep->f[rep->n];
      *f = (cs_check_finding_t){.kind = kind, .cause = cause, .value = value,
                                .count = 1, .reversed = reversed,
                                .bit = reversed};
      if (pa)
        f->a_pos = *pa;
      if (pb)
        f->b_pos = *pb;
      f->has = (a ? CS_CHECK_HAS_A : 0) | (b ? CS_CHECK_HAS_B : 0);
      if (a)
        f->a = *a;
      if (b)
        f->b = *b;
      bounds(c, f, rep->n);
      if (kind == CS_CHECK_RACE && cause == CS_CHECK_NO_FENCE && a && b)
        f->fence_part = fence_part(c, a, b);
      *e = (int64_t)++rep->n;
      return;
    }
    cs_check_finding_t *f = &rep->f[*e - 1];
    int fsame = (f->has & CS_CHECK_HAS_A) && (f->has & CS_CHECK_HAS_B) &&
                f->a.rank == f->b.rank;
    if (f->kind == kind && f->cause == cause && fsame == same &&
        same_pos(&f->a, f->has & CS_CHECK_HAS_A, a) &&
        same_pos(&f->b, f->has & CS_CHECK_HAS_B, b)) {
      f->count++;
      f->bit |= reversed;
      return;
    }
  }
}

/* Keeps x if it is a sync or a notify, and gives the findings that wait
 * for this rank's next notify their bound. */
static void sync_seen(ck_t *c, const cs_trace_rec_t *x)
{
  recent_t *rc = &c->recent[x->rank];
  if (x->kind == CS_EV_WAIT || cs_ev_is_ordering(x->kind))
    rc->sync[rc->nsync++ % RECENT] = *x;
  if (x->kind != CS_EV_NOTIFY)
    return;
  rc->notify[rc->nnotify++ % RECENT] = *x;
  for (uint64_t i = 0; c->npending[x->rank] && i < c->rep.n; i++) {
    cs_check_finding_t *f = &c->rep.f[i];
    if ((c->pending_after[i] & 1) && f->a.rank == x->rank) {
      f->a_after = *x;
      f->has |= CS_CHECK_HAS_A_AFTER;
      c->pending_after[i] &= ~1u;
      c->npending[x->rank]--;
    }
    if ((c->pending_after[i] & 2) && f->b.rank == x->rank) {
      f->b_after = *x;
      f->has |= CS_CHECK_HAS_B_AFTER;
      c->pending_after[i] &= ~2u;
      c->npending[x->rank]--;
    }
  }
}

/* ------------------------------------------------------------ cells */

/* The cell x names (notify: peer's; wait: own), NULL if outside its slot
 * or out of memory. */
static cell_t *cell_of(ck_t *c, uint32_t rank, uint32_t slot, uint32_t cell)
{
  const cs_layout_t *L = &c->h.layout;
  if (slot >= L->nslots || rank >= c->n)
    return NULL;
  cellset_t *s = &c->cells[(size_t)rank * L->nslots + slot];
  if (!s->c) {
    uint64_t es = L->slot[slot].esize ? L->slot[slot].esize : 1;
    s->ncells = L->slot[slot].nbytes / es;
    if (s->ncells > CHECK_MAX_CELLS) /* a damaged header, or not a signal slot */
      return c->err = CS_ETOOBIG, NULL;
    s->c = calloc(s->ncells ? s->ncells : 1, sizeof(cell_t));
    if (!s->c)
      return c->err = -ENOMEM, NULL;
  }
  if (cell >= s->ncells)
    return NULL;
  cell_t *ce = &s->c[cell];
  if (!ce->vc) {
    ce->vc = calloc(c->w, sizeof(uint32_t));
    ce->hsum = calloc(HIST, sizeof(int64_t));
    ce->hvc = calloc((size_t)HIST * c->w, sizeof(uint32_t));
    if (!ce->vc || !ce->hsum || !ce->hvc)
      return c->err = -ENOMEM, NULL;
    ce->monotone = 1;
  }
  return ce;
}

/* Appends the cell's state after a remote landing to its history. */
static void hist_push(ck_t *c, cell_t *ce)
{
  uint32_t i;
  if (ce->hn < HIST) {
    i = (ce->h0 + ce->hn++) % HIST;
  } else {
    i = ce->h0;
    ce->h0 = (ce->h0 + 1) % HIST;
    ce->set_entry = 0;
  }
  ce->hsum[i] = ce->rsum;
  memcpy(ce->hvc + (size_t)i * c->w, ce->vc, c->w * sizeof(uint32_t));
}

/* In a run with Eq waits, a cell one rank adds to twice with no wait on it
 * in between, past every Eq target, has passed a value an Eq wait may
 * have needed (a controlled run does not record a wait it never granted). */
static void eq_passed(ck_t *c, cell_t *ce, const cs_trace_rec_t *x)
{
  if (c->any_eq && !ce->waited && ce->has_radd &&
      ce->last_radd.rank == x->rank && ce->value > c->max_eq)
    found(c, CS_CHECK_WAIT_EQ, 0, &ce->last_radd, x, 0);
}

/* An AtomicAdd of post x (clock k) lands on its cell. */
static void cell_add(ck_t *c, cell_t *ce, const cs_trace_rec_t *x,
                     const uint32_t *k)
{
  ce->value += x->value;
  join(ce->vc, k, c->w);
  if (ce->has_eq && x->rank != ce->eq_rank && k[ce->eq_rank] < ce->eq_epoch) {
    found(c, CS_CHECK_WAIT_EQ, 0, &ce->eq_wait, x, 0);
    ce->has_eq = 0;
  }
  if (x->rank == x->peer) {
    ce->own += x->value;
    return;
  }
  ce->rsum += x->value;
  ce->monotone &= x->value > 0;
  eq_passed(c, ce, x);
  ce->last_radd = *x;
  ce->has_radd = 1;
  ce->waited = 0;
  hist_push(c, ce);
}

/* A Set of post x (clock k) lands on its cell: a new release sequence. */
static void cell_set(ck_t *c, cell_t *ce, const cs_trace_rec_t *x,
                     const uint32_t *k)
{
  ce->value = ce->base = x->value;
  ce->own = ce->rsum = 0;
  ce->hn = ce->h0 = 0;
  ce->monotone = 1;
  memcpy(ce->vc, k, c->w * sizeof(uint32_t));
  ce->set_entry = ce->set_remote = x->rank != x->peer;
  if (ce->set_entry)
    hist_push(c, ce);
}

/* A notify posted as record x with clock k changes its cell (at issue, or
 * at its dma-land). */
static void cell_notify(ck_t *c, const cs_trace_rec_t *x, const uint32_t *k,
                        uint32_t call)
{
  cell_t *ce = cell_of(c, x->peer, x->slot, x->cell);
  if (!ce)
    return;
  int add = cs_trace_rec_is_add(x);
  ce->touched = 1;
  if (call == 0) {
    ce->first = add ? ce->first + x->value : x->value;
    ce->first_touched = 1;
    ce->first_change = *x;
  }
  if (!ce->mixed_told && (add ? ce->has_set : ce->has_add)) {
    ce->mixed_told = 1;
    found(c, CS_CHECK_MIXED_OPS, 0, add ? &ce->last_set : x,
          add ? x : &ce->last_add, 0);
  }
  if (add) {
    ce->has_add = 1;
    ce->last_add = *x;
    cell_add(c, ce, x, k);
  } else {
    ce->has_set = 1;
    ce->last_set = *x;
    cell_set(c, ce, x, k);
  }
  ce->last_change = *x;
}

static int holds(uint32_t cmp, int64_t v, int64_t target)
{
  return (cmp & ~CS_TR_FAILED) == CS_CMP_EQ ? v == target : v >= target;
}

/* The history entry whose clock wait x joins: the first at which the
 * cell, with the owner's adds before the wait, satisfied it (the oldest
 * kept if the first has left); the latest if none did; -1 to join none. */
static int64_t needed_entry(const cell_t *ce, const cs_trace_rec_t *x)
{
  int64_t before = ce->base + ce->own;
  if (ce->hn == 0)
    return -1; /* no other rank changed the cell since the last Set */
  if (holds(x->opcmp, before, x->value)) /* the Set's clock: its entry, or
                                             the oldest kept if it left */
    return ce->set_remote ? (int64_t)ce->h0 : -1;
  uint32_t from = ce->set_entry ? 1 : 0;
  if (ce->monotone && (x->opcmp & ~CS_TR_FAILED) == CS_CMP_GE) {
    uint32_t lo = from, hi = ce->hn;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (before + ce->hsum[(ce->h0 + mid) % HIST] >= x->value)
        hi = mid;
      else
        lo = mid + 1;
    }
    return (ce->h0 + (lo < ce->hn ? lo : ce->hn - 1)) % HIST;
  }
  for (uint32_t j = from; j < ce->hn; j++)
    if (holds(x->opcmp, before + ce->hsum[(ce->h0 + j) % HIST], x->value))
      return (ce->h0 + j) % HIST;
  return (ce->h0 + ce->hn - 1) % HIST;
}

/* A wait-end that held: joins what the notifies it needed knew. */
static void wait_end(ck_t *c, const cs_trace_rec_t *x, uint32_t *k)
{
  c->has_open[x->rank] = 0;
  cell_t *ce = cell_of(c, x->rank, x->slot, x->cell);
  if (!ce)
    return;
  int64_t e = needed_entry(ce, x);
  if (e >= 0)
    join(k, ce->hvc + (size_t)e * c->w, c->w);
  ce->waited = 1;
  if ((x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ) {
    c->any_eq = 1;
    c->max_eq = x->value > c->max_eq ? x->value : c->max_eq;
    /* Adds after the one that made the cell equal, already numbered
     * before the wait's look: the cell passes the target around it. */
    if (e >= 0 && (uint32_t)e != (ce->h0 + ce->hn - 1) % HIST)
      found(c, CS_CHECK_WAIT_EQ, 0, x, &ce->last_radd, 0);
    ce->has_eq = 1;
    ce->eq_wait = *x;
    ce->eq_rank = x->rank;
    ce->eq_epoch = k[x->rank];
  }
}

static void wait_begin(ck_t *c, const cs_trace_rec_t *x)
{
  c->open_wait[x->rank] = *x;
  c->has_open[x->rank] = 1;
  if ((x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ) {
    c->any_eq = 1;
    c->max_eq = x->value > c->max_eq ? x->value : c->max_eq;
  }
}

static void failed_event(ck_t *c, const cs_trace_rec_t *x)
{
  c->rep.failed++;
  c->faulted |= x->kind != CS_EV_WAIT; /* a timeout is a symptom */
  if (x->kind == CS_EV_WAIT) {
    c->failed_wait[x->rank] = *x;
    c->has_failed[x->rank] = 1;
    c->has_open[x->rank] = 0;
  }
}

/* ------------------------------------------------------------ the end */

/* A wait that never ended (a wait-begin without its end, a failed wait):
 * an Eq wait its cell passed; or, when it is the only rank stuck in a run
 * that stopped by itself (a wait timeout or a deadlock, no rank dead or
 * faulted), so that every other rank had ended and no notify could still
 * come, a wait the cell's final value does not satisfy. */
static void stuck_wait(ck_t *c, const cs_trace_rec_t *x, uint32_t nstuck)
{
  cell_t *ce = cell_of(c, x->rank, x->slot, x->cell);
  if (!ce)
    return;
  int eq = (x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ;
  const cs_trace_rec_t *last = ce->touched ? &ce->last_change : NULL;
  if (eq && ce->value > x->value)
    found(c, CS_CHECK_WAIT_EQ, 0, x, last, 0);
  else if (!c->faulted && nstuck == 1 &&
           (c->abort_reason == CS_ABORT_TIMEOUT ||
            c->abort_reason == CS_ABORT_DEADLOCK) &&
           !holds(x->opcmp, ce->value, x->value))
    found(c, CS_CHECK_UNSATISFIABLE, 0, x, last, (int32_t)ce->value);
}

/* Stuck waits; and in a run of more than one call, which reuses its
 * cells, every cell back at 0 when the run ends. */
static void end_checks(ck_t *c)
{
  const cs_layout_t *L = &c->h.layout;
  uint32_t nstuck = 0;
  for (uint32_t r = 0; r < c->n; r++)
    nstuck += c->has_open[r] || c->has_failed[r];
  for (uint32_t r = 0; r < c->n; r++) {
    if (c->has_open[r])
      stuck_wait(c, &c->open_wait[r], nstuck);
    if (c->has_failed[r])
      stuck_wait(c, &c->failed_wait[r], nstuck);
  }
  if (c->rep.aborted || c->h.iters < 2)
    return;
  /* With the calls marked (every rank's markers begin as many calls as
   * the header says it made), the end of the first one: where stale
   * credits start, before the races they let through in the next call. */
  const cs_check_pos_t first = {0};
  int marked = 1;
  for (uint32_t r = 0; r < c->n; r++)
    marked &= c->has_mark[r] && c->pos[r].call + 1 == c->h.iters;
  for (size_t s = 0; s < (size_t)c->n * L->nslots; s++)
    for (uint64_t j = 0; c->cells[s].c && j < c->cells[s].ncells; j++) {
      const cell_t *ce = &c->cells[s].c[j];
      if (marked && ce->first_touched && ce->first != 0)
        found_at(c, CS_CHECK_NOT_RESET, 1, &ce->first_change, &first, NULL,
                 NULL, (int32_t)ce->first, 0);
      else if (ce->touched && ce->value != 0)
        found(c, CS_CHECK_NOT_RESET, 0, &ce->last_change, NULL,
              (int32_t)ce->value);
    }
}

/* ------------------------------------------------------------ ranking */

/* The rank of a finding's kind: causes a user should read first. A cell
 * not reset comes first (the stale credits of the next call are behind
 * its races); then the other defects of one cell; then races between two
 * ranks (a missing barrier or fence between them), then races within a
 * rank (a missing fence, which the barrier the other races name brings
 * along); last, loads nothing uses. */
static int kind_rank(const cs_check_finding_t *f)
{
  switch (f->kind) {
  case CS_CHECK_NOT_RESET: return 0;
  case CS_CHECK_MIXED_OPS:
  case CS_CHECK_WAIT_EQ:
  case CS_CHECK_UNSATISFIABLE: return 1;
  case CS_CHECK_RACE: return f->a.rank != f->b.rank ? 2 : 3;
  case CS_CHECK_CLOBBER: return 2;
  default: return 4;
  }
}

typedef struct ranked {
  uint32_t key; /* follows, then the kind's rank */
  uint32_t i;   /* the order found in */
} ranked_t;

static int ranked_cmp(const void *x, const void *y)
{
  const ranked_t *p = x, *q = y;
  if (p->key != q->key)
    return p->key < q->key ? -1 : 1;
  return p->i < q->i ? -1 : p->i > q->i;
}

/* Orders the findings so that the first is the cause: a finding that
 * follows from another (a race in a call after the first, in a run whose
 * cells the first call left unreset) after every one that does not, each
 * group by kind_rank, then in the order found. Sets `follows`. */
static int rank_findings(ck_t *c)
{
  cs_check_report_t *rep = &c->rep;
  if (rep->n < 2)
    return 0;
  int64_t cause = -1; /* the first cell the first call left unreset */
  for (uint64_t i = 0; i < rep->n && cause < 0; i++)
    if (rep->f[i].kind == CS_CHECK_NOT_RESET && rep->f[i].cause == 1)
      cause = (int64_t)i;
  ranked_t *r = malloc(rep->n * sizeof(*r));
  cs_check_finding_t *f = malloc(rep->n * sizeof(*f));
  if (!r || !f) {
    free(r);
    free(f);
    return -ENOMEM;
  }
  for (uint64_t i = 0; i < rep->n; i++) {
    const cs_check_finding_t *x = &rep->f[i];
    int later = (x->has & CS_CHECK_HAS_A && x->a_pos.call > 0) ||
                (x->has & CS_CHECK_HAS_B && x->b_pos.call > 0);
    /* only races: other findings are stamped with where the checker
     * noticed them, which may be a later call than where they happened */
    int follows = cause >= 0 && x->kind == CS_CHECK_RACE && later;
    r[i] = (ranked_t){(uint32_t)follows << 8 | (uint32_t)kind_rank(x),
                      (uint32_t)i};
  }
  qsort(r, rep->n, sizeof(*r), ranked_cmp);
  uint32_t cause_at = 0;
  for (uint64_t i = 0; i < rep->n; i++) {
    f[i] = rep->f[r[i].i];
    if ((int64_t)r[i].i == cause)
      cause_at = (uint32_t)i + 1;
  }
  for (uint64_t i = 0; i < rep->n; i++)
    f[i].follows = r[i].key >> 8 ? cause_at : 0;
  memcpy(rep->f, f, rep->n * sizeof(*f));
  free(r);
  free(f);
  return 0;
}

static int aux_init(ck_t *c)
{
  c->recent = calloc(c->n, sizeof(recent_t));
  c->open_wait = calloc(c->n, sizeof(cs_trace_rec_t));
  c->has_open = calloc(c->n, 1);
  c->failed_wait = calloc(c->n, sizeof(cs_trace_rec_t));
  c->has_failed = calloc(c->n, 1);
  c->pending_after = calloc(CS_CHECK_MAX_FINDINGS, sizeof(uint32_t));
  c->fold = calloc(FOLD_SLOTS, sizeof(int64_t));
  c->npending = calloc(c->n, sizeof(uint32_t));
  if (!c->npending || !c->recent || !c->open_wait || !c->has_open || !c->failed_wait ||
      !c->has_failed || !c->pending_after || !c->fold)
    return -ENOMEM;
  return 0;
}

static void aux_fini(ck_t *c)
{
  size_t nm = (size_t)c->n * c->h.layout.nslots;
  for (size_t s = 0; c->cells && s < nm; s++) {
    for (uint64_t j = 0; c->cells[s].c && j < c->cells[s].ncells; j++) {
      free(c->cells[s].c[j].vc);
      free(c->cells[s].c[j].hsum);
      free(c->cells[s].c[j].hvc);
    }
    free(c->cells[s].c);
  }
  free(c->cells);
  free(c->recent);
  free(c->open_wait);
  free(c->has_open);
  free(c->failed_wait);
  free(c->has_failed);
  free(c->pending_after);
  free(c->npending);
  free(c->fold);
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
  case CS_CHECK_CLOBBER: return "line clobber";
  default: return "?";
  }
}

/* ------------------------------------------------------------ a file */

/* One rank's records of a file, in file order (the format keeps each
 * rank's records in seq order within the file; the launcher's fault and
 * abort records, which take the last numbers, are collected apart). */
typedef struct stream {
  cs_trace_reader_t *rd;
  uint32_t rank;
  int      has;      /* head is valid */
  cs_trace_rec_t head;
} stream_t;

#define LAUNCHER_MAX 600u

typedef struct merge {
  stream_t *s;
  uint32_t  n;
  cs_trace_rec_t launcher[LAUNCHER_MAX];
  uint32_t  nlauncher;
  int       unsorted; /* a rank's records were out of seq order */
} merge_t;

/* Advances stream s to its rank's next record. Returns 0, or the reader's
 * code on a bad record (its reason in the reader's diag). */
static int stream_next(merge_t *m, stream_t *s)
{
  cs_trace_rec_t x;
  uint64_t prev = s->has ? s->head.seq : 0;
  int had = s->has, rc;
  s->has = 0;
  while ((rc = cs_trace_reader_next(s->rd, &x)) == 1) {
    if (cs_trace_rec_is_launcher(&x)) {
      if (s->rank == 0 && m->nlauncher < LAUNCHER_MAX)
        m->launcher[m->nlauncher++] = x;
      continue;
    }
    if (x.rank != s->rank)
      continue;
    if (had && x.seq <= prev)
      m->unsorted = 1;
    s->head = x;
    s->has = 1;
    return 0;
  }
  return rc < 0 ? rc : 0;
}

static void merge_close(merge_t *m)
{
  for (uint32_t r = 0; m->s && r < m->n; r++)
    cs_trace_reader_close(m->s[r].rd);
  free(m->s);
}

/* Opens one reader per rank and reads each one's first record. Returns
 * 0, -ENOMEM, or the reader's code with its reason in why. */
static int merge_open(merge_t *m, const char *path, cs_trace_header_t *h,
                      char *why, size_t whylen)
{
  cs_trace_reader_t *rd;
  cs_trace_diag_t d;
  int rc = cs_trace_reader_open(path, 0, &rd, &d);
  if (rc < 0) {
    cs_trace_strerror(&d, why, whylen);
    return rc;
  }
  *h = *cs_trace_reader_header(rd);
  m->n = h->nranks;
  m->s = calloc(m->n, sizeof(stream_t));
  if (!m->s) {
    cs_trace_reader_close(rd);
    return -ENOMEM;
  }
  m->s[0].rd = rd;
  for (uint32_t r = 1; r < m->n; r++)
    if ((rc = cs_trace_reader_open(path, 0, &m->s[r].rd, &d)) < 0) {
      cs_trace_strerror(&d, why, whylen);
      return rc;
    }
  for (uint32_t r = 0; r < m->n; r++) {
    m->s[r].rank = r;
    if ((rc = stream_next(m, &m->s[r])) < 0) {
      cs_trace_strerror(cs_trace_reader_diag(m->s[r].rd), why, whylen);
      return rc;
    }
  }
  return 0;
}

/* Feeds the rank streams merged by seq, then the launcher's records.
 * Returns 0; 1 when a rank's records are out of seq order; CS_EDUPSEQ or
 * the reader's code (why set); or a feed error. */
static int merge_feed(merge_t *m, cs_check_t *c, char *why, size_t whylen)
{
  for (;;) {
    stream_t *best = NULL;
    for (uint32_t r = 0; r < m->n; r++)
      if (m->s[r].has && (!best || m->s[r].head.seq < best->head.seq))
        best = &m->s[r];
    if (!best)
      break;
    int rc = cs_check_feed(c, &best->head);
    if (rc == CS_EDUPSEQ) {
      snprintf(why, whylen, "corrupt: sequence number %llu appears twice",
               (unsigned long long)best->head.seq);
      return rc;
    }
    if (rc < 0)
      return rc;
    if ((rc = stream_next(m, best)) < 0) {
      cs_trace_strerror(cs_trace_reader_diag(best->rd), why, whylen);
      return rc;
    }
    if (m->unsorted)
      return 1;
  }
  for (uint32_t i = 0; i < m->nlauncher; i++)
    if (cs_check_feed(c, &m->launcher[i]) == -ENOMEM)
      return -ENOMEM;
  return 0;
}

/* The slow way, for a file whose ranks' records are not each in seq
 * order: load it whole (sorted) and feed that. */
static int check_loaded(const char *path, cs_check_report_t *rep, char *why,
                        size_t whylen)
{
  cs_trace_t t;
  cs_trace_diag_t d;
  int rc = cs_trace_load(path, &t, &d);
  if (rc < 0) {
    cs_trace_strerror(&d, why, whylen);
    return rc;
  }
  rc = cs_check_run(&t, rep);
  cs_trace_free(&t);
  return rc;
}

int cs_check_file(const char *path, cs_check_report_t *rep, char *why,
                  size_t whylen)
{
  merge_t m = {0};
  cs_trace_header_t h;
  cs_check_t *c = NULL;
  *rep = (cs_check_report_t){0};
  if (whylen)
    why[0] = 0;
  int rc = merge_open(&m, path, &h, why, whylen);
  if (rc == 0)
    rc = cs_check_create(&c, &h);
  if (rc == 0)
    rc = merge_feed(&m, c, why, whylen);
  if (rc == 0)
    rc = cs_check_finish(c, rep);
  cs_check_destroy(c);
  merge_close(&m);
  if (rc == 1)
    return check_loaded(path, rep, why, whylen);
  if (rc == CS_ETOOBIG && why[0] == 0)
    snprintf(why, whylen, "%s: %s: a slot of its signals has more than %u "
             "cells (a damaged header?)", path, cs_strerror(rc), CHECK_MAX_CELLS);
  else if (rc < 0 && rc != -ENOMEM && why[0] == 0)
    snprintf(why, whylen, "%s: %s", path, cs_strerror(rc));
  return rc;
}
