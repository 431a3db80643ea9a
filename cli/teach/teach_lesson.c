/*
 * teach_lesson.c - predict, then reveal (teach_lesson.h). The expected
 * answer is not computed from the ring's formulas: it is what the live
 * run stored, tracked by teach_model.c, so a run under a --bug mutation
 * reveals what that run really did.
 */
#include "teach_lesson.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#include "../../collectives/registry.h"

int tl_boundary(const teach_session_t *t, const cs_sched_view_t *v)
{
  int at = -1;
  if (!t->lesson || !cs_algo_desc(t->o->cfg.algo)->pull_ring)
    return -1;
  for (uint32_t r = 0; r < t->n; r++) {
    const cs_sched_rank_view_t *rv = &v->rank[r];
    if (rv->state == CS_VIEW_DONE)
      continue;
    if (rv->state != CS_VIEW_POSTED || rv->rec.kind != CS_EV_MARK)
      return -1;
    at = (int)r;
  }
  if (at < 0)
    return -1;
  const cs_trace_rec_t *m = &v->rank[at].rec;
  uint64_t id = 1 + (uint64_t)m->cell * 64 + (uint64_t)m->value;
  if (id == t->q_asked)
    return -1;
  return (int)((m->value + 2 + (m->cell == 2)) % t->n);
}

void tl_open(teach_session_t *t, const cs_sched_view_t *v, int r)
{
  const cs_trace_rec_t *m = &v->rank[r].rec;
  for (uint32_t q = 0; q < t->n; q++)
    if (v->rank[q].state == CS_VIEW_POSTED) {
      m = &v->rank[q].rec; /* every posted rank is at the same marker */
      break;
    }
  t->q_rank = r;
  t->q_phase = m->cell;
  t->q_round = (uint32_t)m->value;
  t->q_asked = 1 + (uint64_t)m->cell * 64 + (uint64_t)m->value;
  t->answer[0] = 0;
  snprintf(t->q_text, sizeof(t->q_text), "Predict: after %s t%u, which "
           "segment will rank %d have written, with whose inputs?",
           t->q_phase == 1 ? "RS" : "AG", t->q_round, r);
}

/* Whether s is an answer: a segment number, then one or more rank numbers
 * joined by '+' ("3 1+2+3", "s3=[1+2+3]", "3: 1 + 2 + 3"). */
static int well_formed(const char *s)
{
  const char *p = s;
  p += strspn(p, " ");
  if (*p == '-') /* nothing: the rank's segment is empty */
    return p[1 + strspn(p + 1, " ")] == 0;
  if (*p == 's' || *p == 'S')
    p++;
  if (*p < '0' || *p > '9')
    return 0;
  p += strspn(p, "0123456789");
  p += strspn(p, " =:,[");
  if (*p < '0' || *p > '9')
    return 0;
  for (;;) {
    p += strspn(p, "0123456789");
    p += strspn(p, " ");
    if (*p != '+')
      break;
    p++;
    p += strspn(p, " ");
    if (*p < '0' || *p > '9')
      return 0;
  }
  p += strspn(p, "] ");
  return *p == 0;
}

int tl_key(teach_session_t *t, int ch)
{
  size_t n = strlen(t->answer);
  if (ch == 27) {
    if (t->q_rank >= 0 && t->q_phase <= 2 && t->q_round < TM_MAXR)
      t->graded[t->q_phase][t->q_round] = 3;
    t->q_rank = -1;
    return -1;
  }
  if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
    if (well_formed(t->answer)) {
      t->q_err[0] = 0;
      return 1;
    }
    snprintf(t->q_err, sizeof(t->q_err), "not an answer; e.g. 3 1+2+3, or "
             "- for none");
    return 0;
  }
  t->q_err[0] = 0;
  if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n)
    t->answer[n - 1] = 0;
  else if (ch >= 32 && ch < 127 && n + 1 < sizeof(t->answer))
    t->answer[n] = (char)ch, t->answer[n + 1] = 0;
  return 0;
}

void tl_score(const teach_session_t *t, int *right, int *asked)
{
  *right = *asked = 0;
  for (int p = 1; p <= 2; p++)
    for (int r = 0; r < TM_MAXR; r++)
      if (t->graded[p][r] == 1 || t->graded[p][r] == 2) {
        (*asked)++;
        *right += t->graded[p][r] == 1;
      }
}

/* The numbers in s, in order (at most cap). */
static int numbers(const char *s, int *out, int cap)
{
  int n = 0;
  while (*s && n < cap) {
    if (*s >= '0' && *s <= '9') {
      int v = 0;
      while (*s >= '0' && *s <= '9')
        v = v * 10 + (*s++ - '0');
      out[n++] = v;
    } else {
      s++;
    }
  }
  return n;
}

void tl_reveal(teach_session_t *t)
{
  int r = t->q_rank, got[TM_MAXR + 2];
  if (r < 0)
    return;
  t->q_rank = -1;
  int k = t->st.stored_k[r], n = numbers(t->answer, got, TM_MAXR + 2);
  char truth[48];
  const tm_prov_t *p = &t->st.stored[r];
  tm_prov_str(truth, sizeof(truth), p);
  if (k < 0) {
    int none = strchr(t->answer, '-') != NULL;
    if (t->q_phase <= 2 && t->q_round < TM_MAXR)
      t->graded[t->q_phase][t->q_round] = none ? 1 : 2;
    snprintf(t->reveal[0], sizeof(t->reveal[0]), "%s rank %d stored nothing "
             "in %s t%u (its segment is empty: -).", none ? "Right:" :
             "Not quite:", r, t->q_phase == 1 ? "RS" : "AG", t->q_round);
    snprintf(t->reveal[1], sizeof(t->reveal[1]), "You said: %s", t->answer);
    return;
  }
  int right = n == p->n + 1 && got[0] == k;
  for (int i = 0; right && i < p->n; i++)
    right = got[i + 1] == p->r[i];
  if (t->q_phase <= 2 && t->q_round < TM_MAXR)
    t->graded[t->q_phase][t->q_round] = right ? 1 : 2;
  snprintf(t->reveal[0], sizeof(t->reveal[0]), "%s rank %d wrote s%d=%s in %s "
           "t%u.", right ? "Right:" : "Not quite:", r, k, truth,
           t->q_phase == 1 ? "RS" : "AG", t->q_round);
  snprintf(t->reveal[1], sizeof(t->reveal[1]), "You said: %s. %s", t->answer,
           t->q_phase == 1 ? "(RS: a partial from the left, own input "
           "folded in last)" : "(AG: a finished segment copied from the left)");
}
