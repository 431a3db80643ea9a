/*
 * story.c - the events of a failure's story (story.h): the way back from
 * the first bad element to the access that produced it, and the race of
 * the checker's report that tells it. The landings of posted ops are
 * looked up in an index made once per story (a sorted array of rank,
 * dma id), not by a pass over the trace each.
 */
#include "story.h"

#include <stdlib.h>

#include "analysis.h"
#include <string.h>

static int is_write(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT;
}

/* The trace and the index of its landings: a rank's posted ops are
 * numbered 1, 2, ... (dma_id), so rank r's op d lands at
 * seq[base[r] + d - 1] (UINT64_MAX: never), one array for all ranks, made
 * in one pass. */
typedef struct ix {
  const cs_trace_t *t;
  uint32_t nranks;
  uint64_t *base, *top; /* per rank: where its ids start, and how many */
  uint64_t *seq;
  const cs_trace_rec_t **writes; /* the stores and puts, in seq order */
  uint64_t nwrites;
} ix_t;

static void ix_fini(ix_t *ix)
{
  free(ix->base);
  free(ix->seq);
  free(ix->writes);
  ix->base = ix->top = ix->seq = NULL;
  ix->writes = NULL;
}

/* Indexes t's landings; ix->seq NULL (a linear search each) when out of
 * memory or the ids are not small numbers. */
static void ix_init(ix_t *ix, const cs_trace_t *t)
{
  ix->t = t;
  ix->nranks = t->hdr.nranks;
  ix->seq = NULL;
  ix->nwrites = 0;
  ix->writes = malloc((t->n ? t->n : 1) * sizeof(*ix->writes));
  for (uint64_t i = 0; ix->writes && i < t->n; i++)
    if ((t->rec[i].kind == CS_EV_STORE || t->rec[i].kind == CS_EV_PUT) &&
        !(t->rec[i].opcmp & CS_TR_FAILED))
      ix->writes[ix->nwrites++] = &t->rec[i];
  ix->base = calloc(2 * (size_t)ix->nranks + 1, sizeof(uint64_t));
  if (!ix->base || !ix->writes) {
    ix_fini(ix);
    return;
  }
  ix->top = ix->base + ix->nranks;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (x->dma_id && x->rank < ix->nranks && x->dma_id > ix->top[x->rank])
      ix->top[x->rank] = x->dma_id;
  }
  uint64_t total = 0, most = 4 * t->n + 64; /* ids past it: not numbered */
  for (uint32_t r = 0; r < ix->nranks && total <= most; r++) {
    ix->base[r] = total;
    total += ix->top[r] <= most ? ix->top[r] : most + 1;
  }
  if (total > most || !(ix->seq = malloc((total ? total : 1) * sizeof(uint64_t)))) {
    free(ix->seq);
    ix->seq = NULL;
    return;
  }
  for (uint64_t i = 0; i < total; i++)
    ix->seq[i] = UINT64_MAX;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    uint64_t *at;
    if (x->kind == CS_TR_DMA_LAND && x->dma_id && x->rank < ix->nranks &&
        *(at = &ix->seq[ix->base[x->rank] + x->dma_id - 1]) == UINT64_MAX)
      *at = x->seq;
  }
}

/* The seq at which rank x->rank's posted op x->dma_id landed: x's own seq
 * when it was not posted (it landed at issue), UINT64_MAX if never. */
static uint64_t landing(const ix_t *ix, const cs_trace_rec_t *x)
{
  if (!x->dma_id)
    return x->seq;
  if (ix->seq && x->rank < ix->nranks && x->dma_id <= ix->top[x->rank])
    return ix->seq[ix->base[x->rank] + x->dma_id - 1];
  const cs_trace_t *t = ix->t;
  for (uint64_t i = 0; i < t->n; i++)
    if (t->rec[i].kind == CS_TR_DMA_LAND && t->rec[i].rank == x->rank &&
        t->rec[i].dma_id == x->dma_id)
      return t->rec[i].seq;
  return UINT64_MAX;
}

/* A race between a write and a load: which is which. 0 if it is not one. */
static int write_read(const cs_check_finding_t *f, const cs_trace_rec_t **w,
                      const cs_trace_rec_t **r)
{
  if (f->kind != CS_CHECK_RACE)
    return 0;
  if (is_write(f->a.kind) && f->b.kind == CS_EV_LOAD) {
    *w = &f->a;
    *r = &f->b;
    return 1;
  }
  if (f->a.kind == CS_EV_LOAD && is_write(f->b.kind)) {
    *w = &f->b;
    *r = &f->a;
    return 1;
  }
  return 0;
}

static int covers(const cs_trace_rec_t *x, uint64_t i)
{
  uint32_t len = x->kind == CS_EV_LOAD && x->phys > x->valid ? x->phys : x->valid;
  uint64_t end = cs_trace_rec_is_2d(x) ? cs_trace_rec_end(x) : x->elem_off + len;
  return x->elem_off <= i && i < end;
}

/* Whether write x lands in rank r's window. */
static int writes_to(const cs_trace_rec_t *x, uint32_t r)
{
  return (x->kind == CS_EV_STORE && x->rank == r) ||
         (x->kind == CS_EV_PUT && x->peer == r);
}

/* The position in the tile of access x that element e of x's slot takes
 * (row after row for a 2-D one); 0 with *p unset if x does not cover e. */
static int tile_pos(const cs_trace_rec_t *x, uint64_t e, uint64_t *p)
{
  if (!covers(x, e))
    return 0;
  uint64_t d = e - x->elem_off;
  if (!cs_trace_rec_is_2d(x)) {
    *p = d;
    return 1;
  }
  uint64_t stride = (uint32_t)x->value, cols = x->valid / x->cell;
  if (!stride || d % stride >= cols)
    return 0;
  *p = d / stride * cols + d % stride;
  return 1;
}

/* The element of load x's slot that lands at position p of its tile; 0
 * if p is past what it loads. */
static int load_elem(const cs_trace_rec_t *x, uint64_t p, uint64_t *e)
{
  if (p >= x->valid)
    return 0;
  if (!cs_trace_rec_is_2d(x)) {
    *e = x->elem_off + p;
    return 1;
  }
  uint64_t cols = x->valid / x->cell;
  *e = x->elem_off + p / cols * (uint32_t)x->value + p % cols;
  return 1;
}

/* The record of seq `seq` in t (sorted by seq), or -1. */
static int64_t rec_index(const cs_trace_t *t, uint64_t seq)
{
  uint64_t lo = 0, hi = t->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (t->rec[mid].seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < t->n && t->rec[lo].seq == seq ? (int64_t)lo : -1;
}

#define CHAIN_MAX 64u
#define ANY_SLOT UINT32_MAX

/* A place to trace back from: element `elem` of `slot` (ANY_SLOT: the
 * first bad element, of the slot the result was read from) in rank's
 * window, as it was before seq `before`. */
typedef struct back {
  uint32_t rank, slot;
  uint64_t elem, before;
} back_t;

/* Where the first bad element i of rank r's result was read from: the
 * rank's last local load that covers element i of its range (the
 * stage-out, which reads the result slot after the last call). */
static back_t bad_place(const cs_trace_t *t, uint32_t r, uint64_t i)
{
  for (uint64_t k = t->n; k-- > 0;) {
    const cs_trace_rec_t *x = &t->rec[k];
    uint64_t e;
    if (x->rank == r && x->peer == r && x->kind == CS_EV_LOAD &&
        !cs_trace_rec_is_2d(x) && load_elem(x, i, &e))
      return (back_t){r, x->slot, e, x->seq};
  }
  return (back_t){r, ANY_SLOT, i, UINT64_MAX};
}

/* The last write into place b that landed before it (posts land out of
 * order), NULL if none (the window's initial bytes). */
static const cs_trace_rec_t *last_write(const ix_t *ix, const back_t *b)
{
  const cs_trace_rec_t *w = NULL;
  uint64_t w_at = 0, lx;
  for (uint64_t k = 0; k < ix->nwrites && ix->writes[k]->seq < b->before; k++) {
    const cs_trace_rec_t *x = ix->writes[k];
    if (writes_to(x, b->rank) && (b->slot == ANY_SLOT || x->slot == b->slot) &&
        covers(x, b->elem) &&
        (lx = landing(ix, x)) < b->before && (!w || lx > w_at))
      w = x, w_at = lx;
  }
  return w;
}

/* The loads whose values reach the first bad element, traced back from
 * it: the last write into its place that landed before it was read; the
 * writing rank's loads since its previous write of that place that put
 * something at the written element's position of their tile (what the
 * written tile was made of: the loads of the other tiles it folded in
 * too, a position being the same in every tile); and, for each, the
 * same again at the element it read, in the window and slot it read,
 * before the load. Fills chain with up to CHAIN_MAX loads, in the order
 * met (nearest the bad element first), elems with the element of its slot
 * each reads on the way; returns how many. */
static uint32_t trace_back(const ix_t *ix, uint32_t r, uint64_t i,
                           const cs_trace_rec_t **chain, uint64_t *elems)
{
  const cs_trace_t *t = ix->t;
  back_t todo[CHAIN_MAX];
  uint32_t ntodo = 0, next = 0, n = 0;
  todo[ntodo++] = bad_place(t, r, i);
  while (next < ntodo && n < CHAIN_MAX) {
    back_t b = todo[next++];
    const cs_trace_rec_t *w = last_write(ix, &b);
    uint64_t p;
    if (!w || !tile_pos(w, b.elem, &p))
      continue;
    /* The writer's previous write of that place (walking back from w),
     * and the loads between it and w. */
    int64_t wi = rec_index(t, w->seq), k0 = wi;
    while (--k0 >= 0) {
      const cs_trace_rec_t *x = &t->rec[k0];
      if (x->rank == w->rank && is_write(x->kind) && x->slot == w->slot &&
          (x->kind == CS_EV_PUT ? x->peer : x->rank) == b.rank && covers(x, b.elem))
        break;
    }
    for (int64_t k = k0 + 1; k < wi && n < CHAIN_MAX; k++) {
      const cs_trace_rec_t *x = &t->rec[k];
      uint64_t e;
      if (x->rank != w->rank || x->kind != CS_EV_LOAD ||
          !load_elem(x, p, &e))
        continue;
      elems[n] = e;
      chain[n++] = x;
      if (ntodo < CHAIN_MAX)
        todo[ntodo++] = (back_t){x->peer, x->slot, e, x->seq};
    }
  }
  return n;
}

/* The earliest load of the chain that is load f's read (the same record,
 * or one folded into it: same kind, phase, round and step, and local or
 * remote alike); 0 if none. */
static uint64_t on_chain(const cs_trace_rec_t *rd, const cs_trace_rec_t **chain,
                         uint32_t n)
{
  uint64_t best = 0;
  for (uint32_t j = 0; j < n; j++) {
    const cs_trace_rec_t *x = chain[j];
    int same = x->seq == rd->seq ||
               (x->phase == rd->phase && x->round == rd->round &&
                x->step == rd->step && (x->rank == x->peer) == (rd->rank == rd->peer));
    if (same && (!best || x->seq < best))
      best = x->seq;
  }
  return best;
}

/* How well finding f tells the failure: higher is better. */
static int score(const ix_t *ix, const cs_check_finding_t *f,
                 const cs_trace_rec_t **chain, uint32_t nchain)
{
  const cs_trace_rec_t *w, *r;
  if (!write_read(f, &w, &r))
    return f->kind == CS_CHECK_RACE ? 1 : 0;
  /* The race on the way back from the first bad element tells the
   * failure; then one that bit in this run (the run took the other order
   * than the intended one the finding gives: a read before the write it
   * was meant to see landed, or after the write it was meant to precede);
   * then check's order, whose first finding is the cause. */
  int write_first = w == &f->a;
  uint64_t lw = landing(ix, w);
  int bit = write_first ? lw > r->seq : lw < r->seq;
  int chained = on_chain(r, chain, nchain) != 0;
  return 2 + 32 * chained + 16 * bit;
}

/* Whether two records are at the same point of the algorithm as check
 * folds its findings: kind, phase, round and step. */
static int same_point(const cs_trace_rec_t *x, const cs_trace_rec_t *y)
{
  return x->kind == y->kind && x->phase == y->phase && x->round == y->round &&
         x->step == y->step;
}

/* The first race of rep (check's order) that an occurrence of write w and
 * load r, write meant first (write_first) or load meant first, is folded
 * into: the same points and both on one rank or not. NULL if none. */
static const cs_check_finding_t *finding_of(const cs_check_report_t *rep,
                                            const cs_trace_rec_t *w,
                                            const cs_trace_rec_t *r, int write_first)
{
  for (uint64_t i = 0; i < rep->n; i++) {
    const cs_check_finding_t *f = &rep->f[i];
    const cs_trace_rec_t *fw, *fr;
    if (!write_read(f, &fw, &fr) || (fw == &f->a) != write_first ||
        (f->a.rank == f->b.rank) != (w->rank == r->rank))
      continue;
    if (same_point(fw, w) && same_point(fr, r))
      return f;
  }
  return NULL;
}

/* Whether write x writes bytes load r reads: into r's window and slot,
 * covering element i. */
static int feeds(const cs_trace_rec_t *x, const cs_trace_rec_t *r, uint64_t i)
{
  return is_write(x->kind) && writes_to(x, r->peer) && x->slot == r->slot &&
         covers(x, i) && !(x->opcmp & CS_TR_FAILED);
}

/* The race that produced the wrong value, traced back from the first bad
 * element i: for each load of the chain, nearest the element first, a
 * write into the bytes it read that was meant to come first and landed
 * only after the load (the load saw the old value), or the write the
 * load saw that was meant to come after it (it landed first: the load
 * saw the new value); the first whose occurrence check reports. Fills
 * *f with that finding, its a and b the occurrence's write and load and
 * their bounds read off the trace, and *g with the finding in rep.
 * Returns 1, or 0 if none. */
static int bit_pair(const ix_t *ix, const cs_check_report_t *rep,
                    const cs_trace_rec_t **chain, const uint64_t *elems, uint32_t nchain,
                    cs_check_finding_t *f, const cs_check_finding_t **g)
{
  const cs_trace_t *t = ix->t;
  for (uint32_t j = 0; j < nchain; j++) {
    const cs_trace_rec_t *r = chain[j], *seen = NULL;
    uint64_t i = elems[j];
    uint64_t seen_at = 0;
    for (uint64_t k = 0; k < ix->nwrites; k++) {
      const cs_trace_rec_t *x = ix->writes[k];
      if (!feeds(x, r, i))
        continue;
      uint64_t lx = landing(ix, x);
      if (lx < r->seq) {
        if (!seen || lx > seen_at) /* the last to land before r: the */
          seen = x, seen_at = lx;  /* bytes r read (posts land out of order) */
        continue;
      }
      *g = finding_of(rep, x, r, 1);
      if (*g) { /* meant first, landed after the load: the old value */
        *f = **g;
        f->a = *x;
        f->b = *r;
        goto bounds;
      }
    }
    if (seen) {
      *g = finding_of(rep, seen, r, 0);
      if (*g) { /* meant after the load, landed before it: the new value */
        *f = **g;
        f->a = *r;
        f->b = *seen;
        goto bounds;
      }
    }
  }
  return 0;
bounds:
  /* Each event's first notify after it and last wait before it, on its
   * rank (the notify the writer announced it with, the wait that let the
   * reader go on). */
  f->has &= CS_CHECK_HAS_A | CS_CHECK_HAS_B;
  for (uint64_t k = 0; k < t->n; k++) {
    const cs_trace_rec_t *x = &t->rec[k];
    for (int e = 0; e < 2; e++) {
      const cs_trace_rec_t *y = e ? &f->b : &f->a;
      uint32_t after = e ? CS_CHECK_HAS_B_AFTER : CS_CHECK_HAS_A_AFTER;
      uint32_t before = e ? CS_CHECK_HAS_B_BEFORE : CS_CHECK_HAS_A_BEFORE;
      if (x->rank != y->rank)
        continue;
      if (x->kind == CS_EV_NOTIFY && x->seq > y->seq && !(f->has & after)) {
        *(e ? &f->b_after : &f->a_after) = *x;
        f->has |= after;
      }
      if ((x->kind == CS_EV_WAIT || x->kind == CS_EV_FENCE) && x->seq < y->seq) {
        *(e ? &f->b_before : &f->a_before) = *x;
        f->has |= before;
      }
    }
  }
  return 1;
}

/* The call of x's rank that x belongs to, 1-based: a mark not after the
 * rank's previous mark begins a new one (check.c's advance). */
static uint32_t call_of(const cs_trace_t *t, const cs_trace_rec_t *x)
{
  uint32_t call = 1, last = 0;
  int has = 0;
  for (uint64_t k = 0; k < t->n && t->rec[k].seq <= x->seq; k++) {
    const cs_trace_rec_t *m = &t->rec[k];
    if (m->rank != x->rank || m->kind != CS_EV_MARK)
      continue;
    uint32_t at = (m->cell & 0xffu) << 24 | (m->value & 0xffffffu);
    if (has && at <= last)
      call++;
    has = 1;
    last = at;
  }
  return call;
}

static void add(cs_story_t *s, const ix_t *ix, const cs_trace_rec_t *x,
                uint32_t role)
{
  for (uint32_t i = 0; i < s->n; i++)
    if (s->ev[i].rec.seq == x->seq)
      return;
  if (s->n == CS_STORY_MAX)
    return;
  uint32_t i = s->n++;
  while (i > 0 && s->ev[i - 1].rec.seq > x->seq) { /* keep seq order */
    s->ev[i] = s->ev[i - 1];
    i--;
  }
  int posted = is_write(x->kind) || x->kind == CS_EV_NOTIFY;
  s->ev[i] = (cs_story_event_t){.rec = *x, .role = role,
                                .landed = posted ? landing(ix, x) : 0,
                                .call = call_of(ix->t, x)};
}

static uint32_t index_of(const cs_story_t *s, uint32_t role)
{
  for (uint32_t i = 0; i < s->n; i++)
    if (s->ev[i].role == role)
      return i + 1;
  return 0;
}

/* The reader's wait that the writer's notify n reached: rank r's last
 * wait on n's cell between n and the load at seq `before`; NULL if none
 * (the reader went on by another wait, or by none). */
static const cs_trace_rec_t *wait_on(const cs_trace_t *t,
                                     const cs_trace_rec_t *n, uint32_t r,
                                     uint64_t before)
{
  const cs_trace_rec_t *w = NULL;
  for (uint64_t k = 0; k < t->n; k++) {
    const cs_trace_rec_t *x = &t->rec[k];
    if (x->kind == CS_EV_WAIT && x->rank == r && n->peer == r &&
        x->slot == n->slot && x->cell == n->cell && x->seq > n->seq &&
        x->seq < before)
      w = x;
  }
  return w;
}

/* The write/load race's events and its missing edge. */
static void tell_race(const ix_t *ix, cs_story_t *s,
                      const cs_trace_rec_t *w, const cs_trace_rec_t *r)
{
  const cs_check_finding_t *f = &s->finding;
  int write_first = w == &f->a; /* the finding's order is the intended one */
  add(s, ix, w, CS_STORY_WRITE);
  add(s, ix, r, CS_STORY_READ);
  s->saw_old = landing(ix, w) > r->seq;
  /* The writer's notify and the reader's wait tell how the reader went
   * ahead of a write it was meant to see. */
  if (write_first && f->has & CS_CHECK_HAS_A_AFTER && f->a_after.seq < r->seq)
    add(s, ix, &f->a_after, CS_STORY_SIGNAL);
  /* The wait: the one the writer's notify reached when the story tells
   * that notify; else the reader's last wait before the load. */
  const cs_trace_rec_t *wt = index_of(s, CS_STORY_SIGNAL)
                                 ? wait_on(ix->t, &f->a_after, r->rank, r->seq)
                                 : NULL;
  if (!wt && f->has & CS_CHECK_HAS_B_BEFORE)
    wt = &f->b_before;
  if (s->saw_old && write_first && wt && wt->seq > w->seq &&
      wt->rank != w->rank)
    add(s, ix, wt, CS_STORY_WAIT);
  uint32_t iw = index_of(s, CS_STORY_WRITE), ir = index_of(s, CS_STORY_READ),
           is = index_of(s, CS_STORY_SIGNAL);
  if (!write_first) { /* the read was meant to be first */
    s->need = CS_STORY_NEED_READ_DONE;
    s->gap_from = ir;
    s->gap_to = iw;
  } else if (f->cause == CS_CHECK_NO_FENCE && is) {
    s->need = CS_STORY_NEED_FENCE;
    s->gap_from = iw;
    s->gap_to = is;
  } else {
    s->need = CS_STORY_NEED_SIGNAL;
    s->gap_from = iw;
    s->gap_to = ir;
  }
}

/* A race that follows from a cell left unreset: the reader's wait before
 * the load and the notify of an earlier call whose credit let it pass
 * (its satisfier), and the finding about that cell. Adds both events to
 * the story and sets s->root to the cell's finding (rep's `follows` one
 * when the wait's cell has none). Returns 1 if the wait passed on an
 * earlier call's notify. */
static int tell_stale(const ix_t *ix, const cs_check_report_t *rep, cs_story_t *s)
{
  const cs_trace_t *t = ix->t;
  const cs_check_finding_t *f = &s->finding;
  if (!(f->has & CS_CHECK_HAS_B_BEFORE) || f->b_before.kind != CS_EV_WAIT ||
      f->b.kind != CS_EV_LOAD)
    return 0;
  cs_trace_links_t l;
  if (cs_trace_links_init(&l, t) < 0)
    return 0;
  int64_t w = rec_index(t, f->b_before.seq), by = w >= 0 ? l.satisfier[w] : -1;
  if (by >= 0 && t->rec[by].kind == CS_TR_DMA_LAND && l.post[by] >= 0)
    by = l.post[by];
  int stale = by >= 0 && t->rec[by].kind == CS_EV_NOTIFY &&
              call_of(t, &t->rec[by]) < call_of(t, &t->rec[w]);
  if (stale) {
    const cs_trace_rec_t *ww = &t->rec[w];
    uint64_t from = s->gap_from ? s->ev[s->gap_from - 1].rec.seq : 0;
    uint64_t to = s->gap_to ? s->ev[s->gap_to - 1].rec.seq : 0;
    add(s, ix, ww, CS_STORY_WAIT);
    add(s, ix, &t->rec[by], CS_STORY_STALE);
    for (uint32_t i = 0; i < s->n; i++) { /* the ends moved: seq order */
      if (from && s->ev[i].rec.seq == from)
        s->gap_from = i + 1;
      if (to && s->ev[i].rec.seq == to)
        s->gap_to = i + 1;
    }
    for (uint64_t i = 0; i < rep->n; i++) {
      const cs_check_finding_t *g = &rep->f[i];
      if (g->kind == CS_CHECK_NOT_RESET && g->a.peer == ww->rank &&
          g->a.slot == ww->slot && g->a.cell == ww->cell) {
        s->has_root = 1;
        s->root = *g;
        break;
      }
    }
  }
  cs_trace_links_fini(&l);
  return stale;
}

int cs_trace_story(const cs_trace_t *t, const cs_check_report_t *rep,
                   uint32_t bad_rank, uint64_t bad_index, cs_story_t *s)
{
  memset(s, 0, sizeof(*s));
  s->saw_old = -1;
  ix_t ix;
  ix_init(&ix, t);
  const cs_check_finding_t *best = NULL;
  const cs_trace_rec_t *chain[CHAIN_MAX];
  uint64_t elems[CHAIN_MAX];
  uint32_t nchain = bad_rank != UINT32_MAX && ix.writes /* else out of memory */
                        ? trace_back(&ix, bad_rank, bad_index, chain, elems) : 0;
  int best_score = -1;
  cs_check_finding_t told;
  int has_told = nchain && bit_pair(&ix, rep, chain, elems, nchain, &told, &best);
  for (uint64_t i = 0; i < rep->n && !has_told; i++) { /* ties: check's order */
    int sc = score(&ix, &rep->f[i], chain, nchain);
    if (sc > best_score) {
      best_score = sc;
      best = &rep->f[i];
    }
  }
  if (!best) { /* no finding: the event that failed, if one did */
    for (uint64_t i = 0; i < t->n; i++)
      if (t->rec[i].opcmp & CS_TR_FAILED && !cs_trace_rec_is_launcher(&t->rec[i])) {
        add(s, &ix, &t->rec[i], CS_STORY_FAILED);
        break;
      }
    ix_fini(&ix);
    return 0;
  }
  s->has_finding = 1;
  s->finding = has_told ? told : *best;
  const cs_trace_rec_t *w, *r;
  if (write_read(&s->finding, &w, &r)) {
    tell_race(&ix, s, w, r);
    uint32_t k = best->follows;
    int stale = tell_stale(&ix, rep, s);
    if (!s->has_root && k && k <= rep->n && rep->f[k - 1].kind == CS_CHECK_NOT_RESET) {
      s->has_root = 1; /* the cause is the stale cell, not this barrier */
      s->root = rep->f[k - 1];
    }
    if (s->has_root && (stale || k))
      s->need = CS_STORY_NEED_RESET;
  } else {
    if (best->has & CS_CHECK_HAS_A)
      add(s, &ix, &best->a, CS_STORY_OTHER);
    if (best->has & CS_CHECK_HAS_B)
      add(s, &ix, &best->b, CS_STORY_OTHER);
  }
  ix_fini(&ix);
  return 0;
}
