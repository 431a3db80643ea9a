/*
 * story.c - the events of a failure's story (story.h).
 */
#include "story.h"

#include <string.h>

static int is_write(uint32_t kind)
{
  return kind == CS_EV_STORE || kind == CS_EV_PUT;
}

/* The seq at which rank x->rank's posted op x->dma_id landed: x's own seq
 * when it was not posted (it landed at issue), UINT64_MAX if never. */
static uint64_t landing(const cs_trace_t *t, const cs_trace_rec_t *x)
{
  if (!x->dma_id)
    return x->seq;
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

/* How well finding f tells the failure: higher is better. */
static int score(const cs_trace_t *t, const cs_check_finding_t *f,
                 uint32_t bad_rank, uint64_t bad_index)
{
  const cs_trace_rec_t *w, *r;
  if (!write_read(f, &w, &r))
    return f->kind == CS_CHECK_RACE ? 1 : 0;
  /* Only a write issued before the load and landing after it was surely
   * meant to be seen (a stale read); otherwise the load that reads the
   * first bad element of the rank with the wrong result, a race between
   * two ranks, and a write that came first (a read meant to be done
   * before it, as a read-complete barrier orders) tell more. */
  int stale = w->seq < r->seq && landing(t, w) > r->seq;
  int mine = r->rank == bad_rank && r->elem_off <= bad_index &&
             bad_index < r->elem_off + (r->phys > r->valid ? r->phys : r->valid);
  return 2 + 16 * stale + 8 * mine + 4 * (w->rank != r->rank) + 2 * (w->seq < r->seq);
}

static void add(cs_story_t *s, const cs_trace_t *t, const cs_trace_rec_t *x,
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
                                .landed = posted ? landing(t, x) : 0};
}

static uint32_t index_of(const cs_story_t *s, uint32_t role)
{
  for (uint32_t i = 0; i < s->n; i++)
    if (s->ev[i].role == role)
      return i + 1;
  return 0;
}

/* The write/load race's events and its missing edge. */
static void tell_race(const cs_trace_t *t, cs_story_t *s,
                      const cs_trace_rec_t *w, const cs_trace_rec_t *r)
{
  const cs_check_finding_t *f = &s->finding;
  int write_first = w == &f->a;
  add(s, t, w, CS_STORY_WRITE);
  add(s, t, r, CS_STORY_READ);
  s->saw_old = landing(t, w) > r->seq;
  /* A stale read: the writer's notify and the reader's wait tell how the
   * reader went ahead. */
  if (s->saw_old && write_first && f->has & CS_CHECK_HAS_A_AFTER && f->a_after.seq < r->seq)
    add(s, t, &f->a_after, CS_STORY_SIGNAL);
  if (s->saw_old && write_first && f->has & CS_CHECK_HAS_B_BEFORE && f->b_before.seq > w->seq &&
      f->b_before.rank != w->rank)
    add(s, t, &f->b_before, CS_STORY_WAIT);
  uint32_t iw = index_of(s, CS_STORY_WRITE), ir = index_of(s, CS_STORY_READ),
           is = index_of(s, CS_STORY_SIGNAL);
  if (!s->saw_old) { /* the write came first: the read was meant to be first */
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

int cs_trace_story(const cs_trace_t *t, const cs_check_report_t *rep,
                   uint32_t bad_rank, uint64_t bad_index, cs_story_t *s)
{
  memset(s, 0, sizeof(*s));
  s->saw_old = -1;
  const cs_check_finding_t *best = NULL;
  int best_score = -1;
  for (uint64_t i = 0; i < rep->n; i++) {
    int sc = score(t, &rep->f[i], bad_rank, bad_index);
    if (sc > best_score) {
      best_score = sc;
      best = &rep->f[i];
    }
  }
  if (!best) { /* no finding: the event that failed, if one did */
    for (uint64_t i = 0; i < t->n; i++)
      if (t->rec[i].opcmp & CS_TR_FAILED && !cs_trace_rec_is_launcher(&t->rec[i])) {
        add(s, t, &t->rec[i], CS_STORY_FAILED);
        break;
      }
    return 0;
  }
  s->has_finding = 1;
  s->finding = *best;
  const cs_trace_rec_t *w, *r;
  if (write_read(&s->finding, &w, &r)) {
    tell_race(t, s, w, r);
    return 0;
  }
  if (best->has & CS_CHECK_HAS_A)
    add(s, t, &best->a, CS_STORY_OTHER);
  if (best->has & CS_CHECK_HAS_B)
    add(s, t, &best->b, CS_STORY_OTHER);
  return 0;
}
