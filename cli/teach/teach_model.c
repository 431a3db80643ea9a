/*
 * teach_model.c - the lesson's tracking (teach_model.h): every granted
 * actor's event updates whose inputs each segment and tile hold, the
 * rank's phase/round/subchunk tag, and the bytes it loaded. The contents
 * follow the recorded transfers, not the formulas: a load from the left
 * puts the left rank's segment in the tile, a reduce folds the rank's own
 * input in, a store writes the tile into the segment. Called by the
 * lesson's picker (teach_ui.c).
 */
#include "teach_model.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectives/ar_config.h"
#include "../../collectives/registry.h"
#include "../../run/coll.h"
#include "../../collectives/geometry.h"
#include "../../sim/trace/describe.h"

const cs_collective_t *tm_facts(const run_opts_t *o)
{
  return cs_coll_teach(o->coll ? o->coll
                               : cs_coll_builtin(cs_algo_name(o->cfg.algo)));
}

cs_coll_cfg_t tm_cfg(const run_opts_t *o)
{
  const cs_ar_cfg_t *c = &o->cfg;
  return (cs_coll_cfg_t){.nranks = c->nranks, .count = c->count,
                         .dtype = c->dtype, .op = c->op,
                         .tile_bytes = c->tile_bytes, .iters = c->iters};
}

int tm_flag(const teach_session_t *t, uint32_t f)
{
  return t->facts && (t->facts->teach_flags & f);
}

uint32_t tm_phase_names(const run_opts_t *o, const char *const **names)
{
  const cs_collective_t *c = o->coll;
  *names = NULL;
  if (c && c->size >= offsetof(cs_collective_t, nphases) + sizeof(c->nphases))
    *names = c->phases;
  else if (!c)
    *names = cs_algo_desc(o->cfg.algo)->phases;
  if (!*names)
    return 0;
  return c ? c->nphases : cs_algo_desc(o->cfg.algo)->nphases;
}

void tm_wait_where(const teach_session_t *t, uint32_t r, uint32_t slot,
                   uint32_t cell, int32_t target, char *b, size_t cap)
{
  b[0] = 0;
  if (!t->o->coll) /* the knobs of its --bug, which no registration has */
    cs_ar_wait_where(&t->o->cfg, r, slot, cell, target, b, cap);
  else if (t->facts && t->facts->wait_where &&
           slot == t->facts->signal_slot && target >= 1 && cap)
    t->facts->wait_where(&t->g, r, cell, target, b, cap);
}

uint32_t tm_nparts(const teach_session_t *t)
{
  uint64_t n = t->facts->parts(&t->g);
  return n < TM_MAXP ? (uint32_t)n : TM_MAXP;
}

uint64_t tm_part_lo(const teach_session_t *t, uint32_t i)
{
  if (i == tm_nparts(t))
    return t->count; /* the parts shown end the window */
  return t->facts->part_lo(&t->g, i);
}

uint32_t tm_seg_of(const teach_session_t *t, uint64_t e)
{
  uint32_t k = 0, np = tm_nparts(t);
  for (uint32_t i = 0; i < np; i++)
    if (tm_part_lo(t, i) <= e && tm_part_lo(t, i + 1) > tm_part_lo(t, i))
      k = i;
  return k;
}

void tm_prov_str(char *buf, size_t cap, const tm_prov_t *p)
{
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < p->n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%u", i ? "+" : "", p->r[i]);
  snprintf(buf + o, cap > o ? cap - o : 0, "]");
}

void tm_reset(teach_session_t *t)
{
  memset(&t->st, 0, sizeof(t->st));
  for (uint32_t r = 0; r < t->n; r++) {
    t->st.span[r][0] = (tm_span_t){0, {0, {0}}}; /* [] until the stage-in */
    t->st.nspan[r] = 1;
    t->st.tile_seg[r] = -1;
    t->st.sigrow[r] = -1;
    t->st.ispan[r][0] = (tm_span_t){0, {0, {0}}};
    t->st.nispan[r] = 1;
  }
  t->facts = tm_facts(t->o);
  t->g = tm_cfg(t->o);
  t->st.out_slot = t->facts && t->facts->out_slot != t->facts->in_slot;
  t->sl_data = t->facts ? t->facts->in_slot : CS_AR_SLOT_DATA;
  t->sl_out = t->facts ? t->facts->out_slot : CS_AR_SLOT_OUT;
  t->sl_sig = t->facts ? t->facts->signal_slot : CS_AR_SLOT_SIGNAL;
  t->nround = 0;
  t->nhist = 0;
}

static int prov_eq(const tm_prov_t *a, const tm_prov_t *b)
{
  return a->n == b->n && !memcmp(a->r, b->r, a->n);
}

/* The index of the span of sp[0..ns) holding element e. */
static uint32_t span_in(const tm_span_t *sp, uint32_t ns, uint64_t e)
{
  uint32_t i = 0;
  while (i + 1 < ns && sp[i + 1].lo <= e)
    i++;
  return i;
}

/* The index of the span holding element e of rank r. */
static uint32_t span_at(const tm_state_t *s, uint32_t r, uint64_t e)
{
  return span_in(s->span[r], s->nspan[r], e);
}

const tm_prov_t *tm_prov_in(const tm_state_t *s, uint32_t r, uint64_t e)
{
  return &s->span[r][span_at(s, r, e)].p;
}

int tm_prov_same(const tm_prov_t *a, const tm_prov_t *b)
{
  return prov_eq(a, b);
}

const tm_prov_t *tm_prov_at(const teach_session_t *t, uint32_t r, uint64_t e)
{
  return &t->st.span[r][span_at(&t->st, r, e)].p;
}

/* Part k's provenance in the spans sp[0..ns) (tm_part_prov). */
static int part_prov_of(const teach_session_t *t, const tm_span_t *sp,
                        uint32_t ns, uint32_t k, const tm_prov_t **p)
{
  uint64_t lo = tm_part_lo(t, k), hi = tm_part_lo(t, k + 1);
  uint32_t i = span_in(sp, ns, lo);
  *p = &sp[i].p;
  for (i++; i < ns && sp[i].lo < hi; i++)
    if (!prov_eq(&sp[i].p, *p))
      return 0;
  return 1;
}

int tm_part_prov(const teach_session_t *t, uint32_t r, uint32_t k,
                 const tm_prov_t **p)
{
  return part_prov_of(t, t->st.span[r], t->st.nspan[r], k, p);
}

int tm_in_part_prov(const teach_session_t *t, uint32_t r, uint32_t k,
                    const tm_prov_t **p)
{
  return part_prov_of(t, t->st.ispan[r], t->st.nispan[r], k, p);
}

/* What element e of `slot` of rank r holds, as a load of it reads it:
 * the input slot's spans where the drawn ones are the result's. */
static const tm_prov_t *prov_load(const teach_session_t *t, uint32_t r,
                                  uint32_t slot, uint64_t e)
{
  const tm_state_t *s = &t->st;
  if (!s->out_slot || slot == t->sl_out)
    return tm_prov_at(t, r, e);
  return &s->ispan[r][span_in(s->ispan[r], s->nispan[r], e)].p;
}

/* Elements [lo, hi) of rank r's window now hold p (in: of its input slot
 * where the drawn one is the result's). */
static void hold_set(teach_session_t *t, uint32_t r, uint64_t lo, uint64_t hi,
                     const tm_prov_t *p, int in)
{
  tm_state_t *s = &t->st;
  tm_span_t out[TM_MAXSPAN + 2];
  tm_span_t *arr = in ? s->ispan[r] : s->span[r];
  uint32_t *narr = in ? &s->nispan[r] : &s->nspan[r];
  uint32_t n = 0, ns = *narr;
  if (hi > t->count)
    hi = t->count;
  if (lo >= hi)
    return;
  int put = 0; /* the written span is in out */
  for (uint32_t i = 0; i < ns && n + 3 <= TM_MAXSPAN + 2; i++) {
    const tm_span_t *x = &arr[i];
    uint64_t b = i + 1 < ns ? arr[i + 1].lo : t->count;
    if (b <= lo || x->lo >= hi) { /* untouched */
      if (x->lo >= hi && !put)
        out[n++] = (tm_span_t){lo, *p}, put = 1;
      out[n++] = *x;
      continue;
    }
    if (x->lo < lo) /* its part before the write */
      out[n++] = (tm_span_t){x->lo, x->p};
    if (!put)
      out[n++] = (tm_span_t){lo, *p}, put = 1;
    if (b > hi) /* its part after the write */
      out[n++] = (tm_span_t){hi, x->p};
  }
  if (!put)
    out[n++] = (tm_span_t){lo, *p};
  /* adjacent equal spans are one */
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!m || !prov_eq(&out[m - 1].p, &out[i].p))
      out[m++] = out[i];
  if (m > TM_MAXSPAN) /* more pieces than kept: not expected of a round */
    m = TM_MAXSPAN;
  memcpy(arr, out, m * sizeof(out[0]));
  *narr = m;
}

static void fold(tm_prov_t *into, const tm_prov_t *p)
{
  for (int i = 0; i < p->n && into->n < TM_MAXR; i++)
    into->r[into->n++] = p->r[i];
}

/* into = p op into: the own copy folded in as the first operand, as the
 * rings with own-first fold orders write it (ring-nb's c2=[0+3]). */
static void fold_first(tm_prov_t *into, const tm_prov_t *p)
{
  tm_prov_t o = *p;
  fold(&o, into);
  *into = o;
}

/* Whether the algorithm's notation puts the own copy first where a
 * received partial and the own copy meet (its oracle's fold order). */
static int own_first(const teach_session_t *t)
{
  return tm_flag(t, CS_COLL_TEACH_OWN_FIRST);
}

/* Rank r loaded part k of another rank's data: the bytes, and in its
 * phase the part read (once per part of several tiles). */
static void remote_load(teach_session_t *t, uint32_t r, const cs_trace_rec_t *x,
                        uint32_t k)
{
  tm_state_t *s = &t->st;
  uint64_t bytes = (uint64_t)x->valid * t->es;
  uint32_t ph = s->phase[r];
  s->moved[r] += bytes;
  s->nremote++;
  if (ph < 1 || ph > 2)
    return;
  uint8_t *n = &s->nrd[ph - 1][r];
  if (!*n || s->rd[ph - 1][r][*n - 1] != k) {
    if (*n == TM_RD)
      return;
    s->rd[ph - 1][r][(*n)++] = (uint8_t)k;
  }
  s->rdb[ph - 1][r][*n - 1] += bytes;
  s->moved_ph[ph - 1][r] += bytes;
  s->rd_from[r] = (uint8_t)(x->peer < TM_MAXR ? x->peer : 0);
}

/* A reducing put (host-push's atomic add) lands as the owner's value
 * there, the first operand, plus what it carries (*pv). */
static void put_adds(const teach_session_t *t, uint32_t owner,
                     const cs_trace_rec_t *x, tm_prov_t *pv)
{
  tm_prov_t sum = *prov_load(t, owner, x->slot, x->elem_off);
  fold(&sum, pv);
  *pv = sum;
}

/* A data access of rank r, as the rank runs it (lands: a store lands now,
 * or is a queued op landing). A load after anything but a load or reduce
 * starts the tile (acc); later loads go to recv, a reduce folds recv into
 * acc, a store writes acc. Under fifo/relaxed a store's contents are taken
 * when it is posted and written when it lands. */
static void data_event(teach_session_t *t, uint32_t r, const cs_trace_rec_t *x,
                       int lands, int op)
{
  tm_state_t *s = &t->st;
  int push = tm_flag(t, CS_COLL_TEACH_PUSH);
  if (push && s->phase[r]) { /* loads, puts and folds by tile, not order */
    if (x->kind == CS_EV_LOAD && x->valid) {
      uint32_t p = x->peer < TM_MAXR ? x->peer : 0;
      if (x->peer != r)
        remote_load(t, r, x, tm_seg_of(t, x->elem_off));
      s->pl[r][1] = s->pl[r][0];
      s->pl[r][0] = *prov_load(t, p, x->slot, x->elem_off);
      s->npl[r] = s->npl[r] < 2 ? s->npl[r] + 1 : 2;
      s->tile[r] = s->pl[r][0];
      s->tile_seg[r] = (int)tm_seg_of(t, x->elem_off);
      return;
    }
    if (x->kind == CS_EV_REDUCE && s->npl[r] == 2) { /* received op own */
      s->tile[r] = s->pl[r][0];
      fold(&s->tile[r], &s->pl[r][1]);
      s->npl[r] = 0;
      return;
    }
    if (x->kind == CS_EV_PUT && op < 0 && x->peer != r) {
      s->moved[r] += (uint64_t)x->valid * t->es; /* bytes put to others */
      s->nremote++; /* a data step */
    }
    if (x->kind == CS_EV_PUT && op < 0 && s->npl[r]) { /* the staging tile */
      s->tile[r] = s->pl[r][0];
      s->pl[r][0] = s->pl[r][1];
      s->npl[r]--;
      if (s->npl[r])
        s->tile_seg[r] = s->tile_seg[r] < 0 ? 0 : s->tile_seg[r];
    }
  }
  if (x->kind == CS_EV_LOAD && x->valid && s->phase[r]) {
    uint32_t k = tm_seg_of(t, x->elem_off), p = x->peer < TM_MAXR ? x->peer : 0;
    if (x->peer != r)
      remote_load(t, r, x, k);
    if (!s->acc_open[r]) {
      s->tile[r] = *prov_load(t, p, x->slot, x->elem_off);
      s->tile_seg[r] = (int)k;
      s->acc_open[r] = 1;
    } else {
      s->recv[r] = *prov_load(t, p, x->slot, x->elem_off);
      s->recv_own[r] = x->peer == r;
    }
    return;
  }
  if (x->kind == CS_EV_REDUCE && s->acc_open[r]) {
    if (s->recv_own[r] && own_first(t))
      fold_first(&s->tile[r], &s->recv[r]);
    else
      fold(&s->tile[r], &s->recv[r]);
    return;
  }
  s->acc_open[r] = 0;
  if ((x->kind != CS_EV_STORE && x->kind != CS_EV_PUT) || !x->valid)
    return;
  if (!s->phase[r]) { /* the stage-in: the rank's input arrives */
    s->tile[r] = (tm_prov_t){1, {(uint8_t)r}};
    s->tile_seg[r] = -2;
  }
  if (s->tile_seg[r] == -1)
    return;
  uint32_t owner = x->kind == CS_EV_PUT && x->peer < TM_MAXR ? x->peer : r;
  tm_prov_t pv = s->tile[r];
  if (!lands && op < 0) { /* posted: remember what it carries */
    if (s->nq[r] < TM_QCAP)
      s->q[r][s->nq[r]++] = pv;
    return;
  }
  if (op >= 0 && (uint32_t)op < s->nq[r])
    pv = s->q[r][op];
  int in = s->out_slot && x->slot != t->sl_out;
  if (x->kind == CS_EV_PUT && (x->opcmp & ~CS_TR_FAILED))
    put_adds(t, owner, x, &pv);
  hold_set(t, owner, x->elem_off, x->elem_off + x->valid, &pv, in);
  if (s->phase[r] && !in) {
    s->stored_k[owner] = (int)tm_seg_of(t, x->elem_off);
    s->stored[owner] = pv;
  }
}

/* A queued op of rank r landed or was posted: keeps s->q in the order of
 * the rank's DMA queue (notifies hold an empty entry). */
static void queue_event(teach_session_t *t, uint32_t r, const cs_trace_rec_t *x,
                        int op)
{
  tm_state_t *s = &t->st;
  if (op >= 0) {
    if ((uint32_t)op < s->nq[r]) {
      memmove(&s->q[r][op], &s->q[r][op + 1],
              (s->nq[r] - (uint32_t)op - 1) * sizeof(s->q[r][0]));
      s->nq[r]--;
    }
  } else if (x->kind == CS_EV_NOTIFY && s->nq[r] < TM_QCAP) {
    s->q[r][s->nq[r]++] = (tm_prov_t){0, {0}};
  }
}

static void log_event(teach_session_t *t, uint64_t step, const cs_trace_rec_t *x,
                      int dma)
{
  tm_state_t *s = &t->st;
  tm_event_t *e = &s->last[s->nevents % TM_HIST];
  e->step = step;
  e->rec = *x;
  e->dma = dma ? 1 + (int)x->round : 0;
  uint32_t r = x->rank < TM_MAXR ? x->rank : 0;
  e->phase = s->phase[r];
  e->round = s->round[r];
  if (s->nlast < TM_HIST)
    s->nlast++;
  s->nevents++;
}

static void tag_event(teach_session_t *t, uint64_t step, uint32_t r,
                      const cs_trace_rec_t *x)
{
  tm_state_t *s = &t->st;
  if (x->kind == CS_EV_MARK) {
    uint32_t ph = s->phase[r], rd = s->round[r];
    if (ph >= 1 && ph <= 2 && rd < TM_MAXR) { /* the round it ends */
      s->rnd_end[ph][rd][r] = 1;
      s->rnd_k[ph][rd][r] = (int8_t)s->stored_k[r];
      s->rnd_p[ph][rd][r] = s->stored[r];
    }
    s->phase[r] = x->cell;
    s->round[r] = (uint32_t)x->value;
    s->sub[r] = 0;
    s->marks[r]++;
    s->stored_k[r] = -1;
    uint64_t *rs = realloc(t->round_step, (t->nround + 1) * sizeof(*rs));
    if (rs) {
      t->round_step = rs;
      if (!t->nround || rs[t->nround - 1] != step)
        rs[t->nround++] = step;
    }
  } else if (x->kind == CS_EV_WAIT && x->slot == t->sl_sig &&
             tm_flag(t, CS_COLL_TEACH_PULL_RING) && x->value > 0) {
    s->sub[r] = (uint32_t)(x->value - 1) / 2; /* READY >= 2j+1, RC >= 2j+2 */
  } else if (s->phase[r] && t->facts &&
             !tm_flag(t, CS_COLL_TEACH_PULL_RING) &&
             x->slot == t->sl_data) {
    s->sub[r] = x->step; /* the tile (subchunk) the trace tags it with */
  }
  if ((x->kind == CS_EV_WAIT || x->kind == CS_EV_NOTIFY) &&
      x->slot == t->sl_sig && t->n)
    s->sigrow[r] = (int32_t)(x->cell / t->n);
}

void tm_apply(teach_session_t *t, const cs_sched_view_t *v, int64_t i)
{
  const cs_sched_actor_view_t *a = &v->en[i];
  uint32_t r = a->rank < TM_MAXR ? a->rank : 0;
  int queued = t->o->sched.model != CS_MM_SC;
  cs_trace_rec_t x = a->rec;
  if (a->op >= 0) { /* a DMA landing: the op's own kind */
    x.kind = (uint16_t)a->rec.round;
    x.round = 0;
  }
  tag_event(t, v->step, r, &x);
  if (!t->facts) { /* a collective of one's own without teach facts: its
                       slots are its own, so only the bytes it loads from
                       other ranks */
    const cs_slot_t *sl = x.slot < t->layout.nslots ? &t->layout.slot[x.slot]
                                                    : NULL;
    if (x.kind == CS_EV_LOAD && x.peer != r && a->op < 0)
      t->st.moved[r] += (uint64_t)x.valid * (sl && sl->esize ? sl->esize
                                                              : t->es);
    if ((x.kind == CS_EV_LOAD || x.kind == CS_EV_PUT) && x.peer != r &&
        a->op < 0)
      t->st.nremote++; /* a data step (tm_is_data) */
  } else if (x.slot == t->sl_data || x.kind == CS_EV_REDUCE ||
             (t->st.out_slot && x.slot == t->sl_out) ||
      x.kind == CS_EV_WAIT || x.kind == CS_EV_MARK)
    data_event(t, r, &x, !queued || x.kind == CS_EV_LOAD, a->op);
  if (queued && x.kind == CS_EV_NOTIFY)
    queue_event(t, r, &x, a->op);
  else if (queued && a->op >= 0)
    queue_event(t, r, &x, a->op);
  log_event(t, v->step, &a->rec, a->op >= 0);
  if (v->step >= t->caphist) { /* the history, for the story's steps */
    uint64_t cap = t->caphist ? t->caphist * 2 : 1024;
    cs_trace_rec_t *h = realloc(t->hist, cap * sizeof(*h));
    if (h)
      t->hist = h;
    uint8_t *d = h ? realloc(t->hist_dma, cap) : NULL;
    if (!d)
      return;
    t->hist_dma = d;
    t->caphist = cap;
  }
  t->hist[v->step] = a->rec;
  t->hist_dma[v->step] = a->op >= 0;
  t->nhist = v->step + 1;
}

void tm_replay(teach_session_t *t, const cs_trace_rec_t *rec, uint64_t step)
{
  cs_trace_rec_t x = *rec;
  uint32_t r = x.rank < TM_MAXR ? x.rank : 0;
  if (x.rank >= t->n)
    return;
  tag_event(t, step, r, &x);
  if (x.slot == t->sl_data || x.kind == CS_EV_REDUCE ||
      (t->st.out_slot && x.slot == t->sl_out) ||
      x.kind == CS_EV_WAIT || x.kind == CS_EV_MARK)
    data_event(t, r, &x, 1, -1);
}

int tm_push(teach_session_t *t, uint64_t step, int64_t c, int asked)
{
  if (step >= t->capchoice) {
    uint64_t cap = t->capchoice ? t->capchoice * 2 : 1024;
    int64_t *p = realloc(t->choice, cap * sizeof(*p));
    if (!p)
      return -1;
    t->choice = p;
    uint8_t *a = realloc(t->asked, cap);
    if (!a)
      return -1;
    t->asked = a;
    t->capchoice = cap;
  }
  t->choice[step] = c;
  t->asked[step] = (uint8_t)asked;
  t->nchoice = step + 1;
  return 0;
}

int tm_is_data(const teach_session_t *t, const cs_sched_view_t *v,
               uint32_t i)
{
  const cs_sched_actor_view_t *a = &v->en[i];
  /* a load from a peer, or a put into one (the push algorithms); a
   * plug-in's slots are its own: any of them */
  return a->op < 0 &&
         (a->rec.kind == CS_EV_LOAD || a->rec.kind == CS_EV_PUT) &&
         (!t->facts || a->rec.slot == t->sl_data) &&
         a->rec.peer != a->rank;
}

int tm_phase_over(const teach_session_t *t, const cs_sched_view_t *v,
                  uint32_t ph)
{
  for (uint32_t r = 0; r < t->n; r++) {
    const cs_sched_rank_view_t *rv = &v->rank[r];
    if (rv->state == CS_VIEW_DONE || t->st.phase[r] > ph ||
        (rv->state == CS_VIEW_POSTED && rv->rec.kind == CS_EV_MARK &&
         rv->rec.cell > ph))
      continue;
    return 0;
  }
  return 1;
}

void tm_snapshot(teach_session_t *t, const cs_world_t *w)
{
  t->layout = w->ctl->layout;
  if (!t->facts)
    return; /* its windows are drawn live from its slots */
  /* the slot drawn: the result's where it has its own */
  const cs_slot_t *sl = &w->ctl->layout.slot[t->st.out_slot ? t->sl_out
                                                            : t->sl_data];
  uint64_t bytes = t->count * t->es;
  for (uint32_t r = 0; r < t->n; r++)
    memcpy(t->snap + r * bytes, cs_world_window(w, r) + sl->off, bytes);
}

uint64_t tm_round_start(const teach_session_t *t, uint64_t step)
{
  uint64_t best = 0;
  for (uint64_t i = 0; i < t->nround; i++)
    if (t->round_step[i] < step)
      best = t->round_step[i];
  return best;
}

void tm_round_begin(teach_session_t *t, const cs_sched_view_t *v)
{
  for (uint32_t r = 0; r < t->n; r++)
    t->round_from[r] = t->st.marks[r] +
        (v->rank[r].state == CS_VIEW_POSTED && v->rank[r].rec.kind == CS_EV_MARK);
}

int tm_rank_over(const teach_session_t *t, const cs_sched_view_t *v, uint32_t r)
{
  const cs_sched_rank_view_t *rv = &v->rank[r];
  if (t->st.marks[r] > t->round_from[r])
    return 1;
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].rank == r && v->en[i].op >= 0)
      return 0; /* its DMA engine still lands the round's ops */
  return rv->state == CS_VIEW_DONE || t->st.marks[r] > t->round_from[r] ||
         (rv->state == CS_VIEW_POSTED && rv->rec.kind == CS_EV_MARK &&
          t->st.marks[r] == t->round_from[r]);
}

int tm_round_over(const teach_session_t *t, const cs_sched_view_t *v)
{
  for (uint32_t r = 0; r < t->n; r++)
    if (!tm_rank_over(t, v, r))
      return 0;
  return 1;
}

/* The name the trace gives the phase a marker enters: the algorithm's
 * phase name and round ("RS t1"), "main" for one unnamed phase (mesh,
 * host), else "phase P round R". */
static void mark_name(const teach_session_t *t, const cs_trace_rec_t *x,
                      char *b, size_t cap)
{
  const char *const *names;
  uint32_t np = tm_phase_names(t->o, &names);
  if (names && x->cell >= 1 && x->cell <= np)
    snprintf(b, cap, "%s t%d", names[x->cell - 1], x->value);
  else if (x->cell == 1 && x->value == 0)
    snprintf(b, cap, "main");
  else
    snprintf(b, cap, "phase %u round %d", x->cell, x->value);
}

void tm_sentence(const teach_session_t *t, char *b, size_t cap,
                 const cs_trace_rec_t *x)
{
  if (x->kind != CS_EV_MARK) {
    cs_trace_sentence(b, cap, &t->layout, x);
    return;
  }
  char nm[64];
  mark_name(t, x, nm, sizeof(nm));
  snprintf(b, cap, "rank %u: enter %s", x->rank, nm);
}

int tm_event_step(const teach_session_t *t, uint32_t r, uint64_t k,
                  uint64_t *step)
{
  for (uint64_t s = 0; s < t->nhist; s++)
    if (t->hist[s].rank == r && !t->hist_dma[s] && k-- == 0) {
      *step = s;
      return 1;
    }
  return 0;
}
