/*
 * teach_lesson.c - predict, then reveal (teach_lesson.h). The expected
 * answer is not computed from the ring's formulas: it is what the live
 * run stored, tracked by teach_model.c, so a run under a --bug mutation
 * reveals what that run really did.
 */
#include "teach_lesson.h"

#include <curses.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/registry.h"
#include "../../sim/trace/check.h"
#include "teach_levels.h"

/* The rank asked about in round rd of phase ph: the one whose segment
 * that round completes a step of (collectives/ring.c's table). */
static int asked_rank(const teach_session_t *t, uint32_t ph, uint32_t rd)
{
  return (int)((rd + 2 + (ph == 2)) % t->n);
}

/* Whether some rank has come to round rd of phase ph: posted at its
 * marker, or past it. */
static int reached(const teach_session_t *t, const cs_sched_view_t *v,
                   uint32_t ph, uint32_t rd)
{
  for (uint32_t r = 0; r < t->n; r++) {
    const cs_sched_rank_view_t *rv = &v->rank[r];
    if (rv->state == CS_VIEW_POSTED && rv->rec.kind == CS_EV_MARK &&
        rv->rec.cell == ph && (uint32_t)rv->rec.value == rd)
      return 1;
    if (t->st.phase[r] > ph || (t->st.phase[r] == ph && t->st.round[r] >= rd))
      return 1;
  }
  return 0;
}

int tl_boundary(const teach_session_t *t, const cs_sched_view_t *v,
                uint32_t *ph, uint32_t *rd)
{
  if (!t->lesson || !tm_flag(t, CS_COLL_TEACH_PULL_RING))
    return -1;
  for (uint32_t p = 1; p <= 2; p++)
    for (uint32_t r = 0; r + 1 < t->n && r < TM_MAXR; r++)
      if (!t->graded[p][r] && reached(t, v, p, r)) {
        *ph = p, *rd = r;
        return asked_rank(t, p, r);
      }
  return -1;
}

int tl_unasked_mark(const teach_session_t *t, const cs_sched_view_t *v,
                    int64_t c)
{
  const cs_sched_actor_view_t *a = &v->en[c];
  if (!t->lesson || !tm_flag(t, CS_COLL_TEACH_PULL_RING) || a->op >= 0 ||
      a->rec.kind != CS_EV_MARK || a->rec.cell < 1 || a->rec.cell > 2 ||
      a->rec.value < 0 || a->rec.value >= TM_MAXR)
    return 0;
  return !t->graded[a->rec.cell][a->rec.value];
}

/* Segment k and the ranks in order into a choice ("s0=[1+2]") and the
 * answer it stands for ("0 1+2"). */
static void choice(teach_session_t *t, int i, uint32_t k, const uint32_t *in,
                   int nin)
{
  char *c = t->q_choice[i], *a = t->q_pick[i];
  size_t oc = (size_t)snprintf(c, sizeof(t->q_choice[0]), "s%u=[", k);
  size_t oa = (size_t)snprintf(a, sizeof(t->q_pick[0]), "%u ", k);
  for (int j = 0; j < nin; j++) {
    if (oc < sizeof(t->q_choice[0]))
      oc += (size_t)snprintf(c + oc, sizeof(t->q_choice[0]) - oc, "%s%u",
                             j ? "+" : "", in[j]);
    if (oa < sizeof(t->q_pick[0]))
      oa += (size_t)snprintf(a + oa, sizeof(t->q_pick[0]) - oa, "%s%u",
                             j ? "+" : "", in[j]);
  }
  if (oc < sizeof(t->q_choice[0]))
    snprintf(c + oc, sizeof(t->q_choice[0]) - oc, "]");
}

/* The round's three choices (one key each, a-c): what the ring's table
 * says rank r writes, and two mistakes a learner makes. RS round rd:
 * segment k = r-rd-2 with the inputs k+1 .. r, own folded in last; the
 * mistakes are the own input first and the segment r sends this round
 * (k+1, holding k+2 .. r). AG round rd: segment k = r-rd-1 finished
 * (k+1 .. k+N) copied; the mistakes are the segment r sends (k+1,
 * finished) and folding its own input in again. The right one's letter
 * moves from round to round. The grade is still the run's (tl_check). */
static void choices(teach_session_t *t, int r, uint32_t ph, uint32_t rd)
{
  uint32_t n = t->n, in[TM_MAXR + 2] = {0}, m = 0, k;
  int right = (int)((ph + rd) % 3), o[3];
  for (int i = 0; i < 3; i++)
    o[i] = (right + i) % 3; /* o[0] the right one's slot */
  if (ph == 1) {
    k = (uint32_t)(r + 2 * (int)n - (int)rd - 2) % n;
    for (uint32_t j = 1; j <= rd + 2; j++)
      in[m++] = (k + j) % n;
    choice(t, o[0], k, in, (int)m);
    in[0] = (uint32_t)r; /* own first */
    for (uint32_t j = 1; j < m; j++)
      in[j] = (k + j) % n;
    choice(t, o[1], k, in, (int)m);
    for (uint32_t j = 0; j + 1 < m; j++) /* what it sends */
      in[j] = (k + 2 + j) % n;
    choice(t, o[2], (k + 1) % n, in, (int)m - 1);
  } else {
    k = (uint32_t)(r + 2 * (int)n - (int)rd - 1) % n;
    for (uint32_t j = 1; j <= n; j++)
      in[m++] = (k + j) % n;
    choice(t, o[0], k, in, (int)m);
    in[m] = (uint32_t)r; /* folded in again */
    choice(t, o[2], k, in, (int)m + 1);
    for (uint32_t j = 0; j < m; j++) /* what it sends */
      in[j] = (k + 2 + j) % n;
    choice(t, o[1], (k + 1) % n, in, (int)m);
  }
}

void tl_open(teach_session_t *t, int r, uint32_t ph, uint32_t rd,
             uint64_t step)
{
  choices(t, r, ph, rd);
  t->q_rank = r;
  t->q_phase = ph;
  t->q_round = rd;
  t->asked_at[ph][rd] = step + 1;
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
  if (!n && ch >= 'a' && ch <= 'c') /* a choice: answered with one key */
    snprintf(t->answer, sizeof(t->answer), "%s", t->q_pick[ch - 'a']);
  if ((!n && ch >= 'a' && ch <= 'c') || ch == '\n' || ch == '\r' ||
      ch == KEY_ENTER) {
    if (well_formed(t->answer)) {
      t->q_err[0] = 0;
      if (t->q_rank >= 0 && t->q_phase <= 2 && t->q_round < TM_MAXR) {
        t->graded[t->q_phase][t->q_round] = 4; /* graded when it has run */
        snprintf(t->said[t->q_phase][t->q_round],
                 sizeof(t->said[0][0]), "%s", t->answer);
      }
      t->q_rank = -1;
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
      while (*s >= '0' && *s <= '9') { /* a huge number stays huge, not UB */
        int dgt = *s++ - '0';
        v = v > (INT_MAX - dgt) / 10 ? INT_MAX : v * 10 + dgt;
      }
      out[n++] = v;
    } else {
      s++;
    }
  }
  return n;
}

/* Round rd of phase ph has run for the rank asked about, which stored
 * part k (-1: none) holding p: grades the answer given and words the
 * reveal (t->reveal). */
static void grade(teach_session_t *t, uint32_t ph, uint32_t rd, int k,
                  const tm_prov_t *p, uint64_t step)
{
  int r = asked_rank(t, ph, rd), got[TM_MAXR + 2];
  const char *said = t->said[ph][rd];
  int n = numbers(said, got, TM_MAXR + 2);
  char truth[48];
  tm_prov_str(truth, sizeof(truth), p);
  t->graded_at[ph][rd] = step + 1;
  if (k < 0) {
    int none = strchr(said, '-') != NULL;
    t->graded[ph][rd] = none ? 1 : 2;
    snprintf(t->reveal[0], sizeof(t->reveal[0]), "%s rank %d stored nothing "
             "in %s t%u (its segment is empty: -).", none ? "Right:" :
             "Not quite:", r, ph == 1 ? "RS" : "AG", rd);
    snprintf(t->reveal[1], sizeof(t->reveal[1]), "You said: %s", said);
    return;
  }
  int right = n == p->n + 1 && got[0] == k;
  for (int i = 0; right && i < p->n; i++)
    right = got[i + 1] == p->r[i];
  t->graded[ph][rd] = right ? 1 : 2;
  snprintf(t->reveal[0], sizeof(t->reveal[0]), "%s rank %d wrote s%d=%s in %s "
           "t%u.", right ? "Right:" : "Not quite:", r, k, truth,
           ph == 1 ? "RS" : "AG", rd);
  snprintf(t->reveal[1], sizeof(t->reveal[1]), "You said: %s. %s", said,
           ph == 1 ? "(RS: a partial from the left, own input "
           "folded in last)" : "(AG: a finished segment copied from the left)");
}

void tl_check(teach_session_t *t, const cs_sched_view_t *v)
{
  const tm_state_t *s = &t->st;
  for (uint32_t ph = 1; ph <= 2; ph++)
    for (uint32_t rd = 0; rd < TM_MAXR; rd++) {
      if (t->graded[ph][rd] != 4)
        continue;
      int r = asked_rank(t, ph, rd);
      uint64_t step = v ? v->step : s->nevents;
      if (s->rnd_end[ph][rd][r]) { /* it passed its next marker */
        grade(t, ph, rd, s->rnd_k[ph][rd][r], &s->rnd_p[ph][rd][r], step);
        continue;
      }
      if (s->phase[r] != ph || s->round[r] != rd)
        continue; /* not in that round yet */
      int over = !v || v->rank[r].state == CS_VIEW_DONE ||
                 (v->rank[r].state == CS_VIEW_POSTED &&
                  v->rank[r].rec.kind == CS_EV_MARK);
      for (uint32_t i = 0; v && over && i < v->nenabled; i++)
        if (v->en[i].rank == (uint32_t)r && v->en[i].op >= 0)
          over = 0; /* its DMA engine still lands the round's ops */
      if (over)
        grade(t, ph, rd, s->stored_k[r], &s->stored[r], step);
    }
}

void tl_rewind(teach_session_t *t, uint64_t step)
{
  for (int ph = 1; ph <= 2; ph++)
    for (int rd = 0; rd < TM_MAXR; rd++) {
      if (t->asked_at[ph][rd] && t->asked_at[ph][rd] - 1 >= step) {
        t->graded[ph][rd] = 0; /* asked again when its round comes */
        t->asked_at[ph][rd] = t->graded_at[ph][rd] = 0;
        t->said[ph][rd][0] = 0;
      } else if (t->graded_at[ph][rd] && t->graded_at[ph][rd] - 1 >= step) {
        t->graded[ph][rd] = 4; /* its round runs again: graded again */
        t->graded_at[ph][rd] = 0;
      }
    }
  for (int i = 0; i < 2; i++)
    if (t->bar_at[i] && t->bar_at[i] - 1 >= step)
      t->bar_grade[i] = 0, t->bar_at[i] = 0;
  if (t->cost_at && t->cost_at - 1 >= step)
    t->cost_grade = 0, t->cost_at = 0;
  else if (t->cost_grade == 1 || t->cost_grade == 2)
    t->cost_grade = 4; /* graded at the end, which comes again */
  t->reveal[0][0] = t->reveal[1][0] = 0;
}

/* "rank 0 read s2 s1 s0 from rank 3: 8+12+8 = 28 B" for phase ph. */
static void read_line(const teach_session_t *t, int ph, uint32_t r, char *b,
                      size_t cap, int parts)
{
  const tm_state_t *s = &t->st;
  char letter = t->facts->part_letter;
  size_t o = (size_t)snprintf(b, cap, "  rank %u read", r);
  for (int i = 0; i < s->nrd[ph][r] && o < cap; i++)
    o += (size_t)snprintf(b + o, cap - o, " %c%u", letter, s->rd[ph][r][i]);
  if (o < cap)
    o += (size_t)snprintf(b + o, cap - o, " from rank %u: ", s->rd_from[r]);
  for (int i = 0; parts && s->nrd[ph][r] > 1 && i < s->nrd[ph][r] && o < cap; i++)
    o += (size_t)snprintf(b + o, cap - o, "%s%llu%s", i ? "+" : "",
                          (unsigned long long)s->rdb[ph][r][i],
                          i + 1 == s->nrd[ph][r] ? " = " : "");
  if (o < cap)
    snprintf(b + o, cap - o, "%llu B", (unsigned long long)s->moved_ph[ph][r]);
}

/* The part of rank r's window that holds every rank's input, as
 * "s0=[1+2+3+0]" (none: ""). */
static void owned(const teach_session_t *t, uint32_t r, char *b, size_t cap)
{
  b[0] = 0;
  for (uint32_t k = 0; k < tm_nparts(t); k++) {
    const tm_prov_t *p;
    if (tm_part_lo(t, k) < tm_part_lo(t, k + 1) && tm_part_prov(t, r, k, &p) &&
        p->n == t->n) {
      char pv[48];
      tm_prov_str(pv, sizeof(pv), p);
      snprintf(b, cap, "%c%u=%s", t->facts->part_letter,
               k, pv);
      return;
    }
  }
}

/* One milestone: ph 0 the reduce-scatter, 1 the all-gather. */
static int milestone_lines(const teach_session_t *t, int ph,
                           char l[TL_OVLINES][TL_OVCOLS])
{
  uint32_t n = t->n;
  uint64_t s = t->count * t->es, total = 0, all = 0;
  int k = 0, w = COLS - 4 < TL_OVCOLS ? COLS - 4 : TL_OVCOLS - 1;
  snprintf(l[k++], TL_OVCOLS, "End of the %s (%u rounds). What you watched:",
           ph ? "all-gather" : "reduce-scatter", n - 1);
  for (uint32_t r = 0; r < n && k < TL_OVLINES - 5; r++, k++) {
    char tail[80], own[64];
    total += t->st.moved_ph[ph][r];
    all += t->st.moved[r];
    owned(t, r, own, sizeof(own));
    if (ph)
      snprintf(tail, sizeof(tail), "; in all %llu B",
               (unsigned long long)t->st.moved[r]);
    else
      snprintf(tail, sizeof(tail), "%s%s", own[0] ? "; holds " : "", own);
    read_line(t, ph, r, l[k], TL_OVCOLS, 1);
    if ((int)(strlen(l[k]) + strlen(tail)) > w) /* the sum alone */
      read_line(t, ph, r, l[k], TL_OVCOLS, 0);
    if ((int)(strlen(l[k]) + strlen(tail)) <= w)
      strcat(l[k], tail);
  }
  uint64_t want = (uint64_t)(ph + 1) * (n - 1) * s;
  char sum[64];
  uint64_t got = ph ? all : total;
  snprintf(sum, sizeof(sum), got == want ? "%llu B = %s(N-1) x S" :
           "%llu B (not %s(N-1) x S)", (unsigned long long)got,
           ph ? "2" : "");
  int each = 1; /* every rank read N-1 parts (none empty) */
  for (uint32_t r = 0; r < n; r++)
    each &= t->st.nrd[ph][r] == n - 1;
  if (!ph && !each) {
    snprintf(l[k++], TL_OVCOLS, "Each rank took N-1 = %u rounds (an empty "
             "segment moves nothing). Together", n - 1);
    snprintf(l[k++], TL_OVCOLS, "%s (S = %llu B), so a rank reads",
             sum, (unsigned long long)s);
    snprintf(l[k++], TL_OVCOLS, "(N-1)/N x S = %u/%u x %llu B = %g B (on "
             "average).", n - 1, n, (unsigned long long)s,
             (double)(n - 1) * (double)s / n);
  } else if (!ph) {
    snprintf(l[k++], TL_OVCOLS, "Each rank read N-1 = %u of the N = %u "
             "segments, one a round. Together", n - 1, n);
    snprintf(l[k++], TL_OVCOLS, "%s (S = %llu B), so a rank reads",
             sum, (unsigned long long)s);
    snprintf(l[k++], TL_OVCOLS, "(N-1)/N x S = %u/%u x %llu B = %g B (on "
             "average).", n - 1, n, (unsigned long long)s,
             (double)(n - 1) * (double)s / n);
  } else {
    snprintf(l[k++], TL_OVCOLS, each ? "Each rank read N-1 = %u segments "
             "again: the all-gather costs what" : "Each rank took N-1 = %u "
             "rounds again: the all-gather costs what", n - 1);
    snprintf(l[k++], TL_OVCOLS, "the reduce-scatter did. Together %s, so "
             "a rank reads", sum);
    snprintf(l[k++], TL_OVCOLS, "2(N-1)/N x S = 2 x %u/%u x %llu B = %g B: "
             "near 2S however large N grows.", n - 1, n,
             (unsigned long long)s, 2.0 * (n - 1) * (double)s / n);
  }
  snprintf(l[k++], TL_OVCOLS, "Press any key.");
  return k;
}

/* Words of s from *at into one line of at most w columns; moves *at past
 * them and the blanks after. */
static void wrap_line(const char **at, int w, char *line, size_t cap)
{
  const char *s = *at, *cut = s;
  for (const char *p = s; *p && p - s <= w; p++)
    if (*p == ' ' || !p[1])
      cut = p[1] ? p : p + 1;
  if (cut == s) /* one word longer than the line */
    cut = s + strnlen(s, (size_t)w);
  snprintf(line, cap, "%.*s", (int)(cut - s), s);
  for (s = cut; *s == ' '; s++)
    ;
  *at = s;
}

/* A break-it level's first screen: its place in the campaign, its story,
 * the goal. */
static int level_lines(const teach_session_t *t, char l[TL_OVLINES][TL_OVCOLS])
{
  const cs_teach_level_t *v = t->level;
  int k = 0;
  snprintf(l[k++], TL_OVCOLS, "Level %u of %u: %s", v->number, v->total,
           v->title);
  l[k++][0] = 0;
  for (const char *s = v->story; *s && k < TL_OVLINES - 4;)
    wrap_line(&s, 72, l[k++], TL_OVCOLS);
  l[k++][0] = 0;
  const char *g = v->goal;
  char line[64];
  wrap_line(&g, 62, line, sizeof(line));
  snprintf(l[k++], TL_OVCOLS, "Break it: %s", line);
  if (*g)
    snprintf(l[k++], TL_OVCOLS, "          %s", g);
  snprintf(l[k++], TL_OVCOLS, "Pick who runs (S: show me an order). Press "
           "any key to start.");
  return k;
}

int tl_overlay(const teach_session_t *t, int which,
               char l[TL_OVLINES][TL_OVCOLS])
{
  if (which == TM_OV_RS || which == TM_OV_AG)
    return milestone_lines(t, which == TM_OV_AG, l);
  if (which == TM_OV_LEVEL)
    return level_lines(t, l);
  int k = 0;
  snprintf(l[k++], TL_OVCOLS, "Your goal: the ring allreduce of %u ranks, "
           "run to its end, and why.", t->n);
  snprintf(l[k++], TL_OVCOLS, "  Before each of its %u rounds: which "
           "segment will a rank write,", 2 * (t->n - 1));
  snprintf(l[k++], TL_OVCOLS, "  with whose inputs? (0 1+2 for s0=[1+2]; "
           "- for none)");
  snprintf(l[k++], TL_OVCOLS, "  When rank 0 waits (twice): which barrier, "
           "and what breaks without it?");
  snprintf(l[k++], TL_OVCOLS, "  At the end of the reduce-scatter: what "
           "will the whole run cost?");
  snprintf(l[k++], TL_OVCOLS, "Every answer is graded, the score is at the "
           "end. r runs a round,");
  snprintf(l[k++], TL_OVCOLS, "d steps by data, ? helps, q quits. Press "
           "any key to start.");
  return k;
}

/* ------------------------------------------ barriers and cost questions */

/* Rank 0's wait, in the algorithm's words ("READY barrier of RS t0 j0,
 * rank 1's notify"), when rank 0 is posted at a wait it cannot pass. */
static int rank0_waits(const teach_session_t *t, const cs_sched_view_t *v,
                       char *where, size_t cap)
{
  const cs_sched_rank_view_t *rv = &v->rank[0];
  where[0] = 0;
  if (rv->state != CS_VIEW_POSTED || rv->rec.kind != CS_EV_WAIT)
    return 0;
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].rank == 0 && v->en[i].op < 0)
      return 0; /* it can run: it does not wait yet */
  tm_wait_where(t, 0, rv->rec.slot, rv->rec.cell, rv->rec.value,
                   where, cap);
  return where[0] != 0;
}

int tl_barrier_due(const teach_session_t *t, const cs_sched_view_t *v)
{
  char where[160];
  if (!t->lesson || !tm_flag(t, CS_COLL_TEACH_PULL_RING) ||
      !rank0_waits(t, v, where, sizeof(where)))
    return 0;
  if (!strncmp(where, "READY ", 6) && !t->bar_grade[0])
    return 1;
  if (!strncmp(where, "READ-COMPLETE ", 14) && !t->bar_grade[1] &&
      (t->st.phase[0] > 1 || t->st.round[0] > 0))
    return 2;
  return 0;
}

void tl_open_barrier(teach_session_t *t, const cs_sched_view_t *v, int kind)
{
  rank0_waits(t, v, t->qq_where, sizeof(t->qq_where));
  t->bar_at[kind - 1] = v->step + 1;
  t->qq = TL_QQ_BARRIER;
  t->qq_answer[0] = t->qq_err[0] = 0;
  t->qq_kind = kind;
  snprintf(t->qq_text[0], sizeof(t->qq_text[0]), "Rank 0 waits. Which "
           "barrier is it at, and what breaks without it?");
  snprintf(t->qq_text[1], sizeof(t->qq_text[1]), "  1 READY          a: a "
           "rank reads data before its writer stored it");
  snprintf(t->qq_text[2], sizeof(t->qq_text[2]), "  2 READ-COMPLETE  b: a "
           "rank overwrites data a peer still reads");
}

void tl_open_cost(teach_session_t *t, uint64_t step)
{
  t->cost_at = step + 1;
  t->qq = TL_QQ_COST;
  t->qq_answer[0] = t->qq_err[0] = 0;
  t->qq_where[0] = 0;
  snprintf(t->qq_text[0], sizeof(t->qq_text[0]), "Cost: rank 0 has loaded "
           "%llu B from its left. How many bytes in all", (unsigned long long)
           t->st.moved[0]);
  snprintf(t->qq_text[1], sizeof(t->qq_text[1]), "will it have loaded when "
           "the all-gather ends? (S = %llu B, N = %u)", (unsigned long long)
           (t->count * t->es), t->n);
  /* Three choices, ascending: the ring's own (rank 0 reads every segment
   * but s(N-1) in the reduce-scatter and every one but s0 in the
   * all-gather), and the sums a learner guesses: twice what it has
   * loaded, (N-1) x S, 2 x S, S. */
  uint64_t sz = t->count * t->es, es = t->es;
  unsigned long long c[5] = {
    (unsigned long long)(2 * sz - es * (tm_part_lo(t, t->n) -
     tm_part_lo(t, t->n - 1)) - es * (tm_part_lo(t, 1) - tm_part_lo(t, 0))),
    (unsigned long long)(2 * t->st.moved[0]),
    (unsigned long long)((t->n - 1) * sz), (unsigned long long)(2 * sz),
    (unsigned long long)sz};
  int m = 0;
  for (int i = 0; i < 5 && m < 3; i++) {
    int dup = 0;
    for (int j = 0; j < m; j++)
      dup |= t->qq_cost[j] == c[i];
    if (!dup)
      t->qq_cost[m++] = c[i];
  }
  for (int i = 1; i < m; i++) /* ascending: the place tells nothing */
    for (int j = i; j > 0 && t->qq_cost[j - 1] > t->qq_cost[j]; j--) {
      unsigned long long x = t->qq_cost[j];
      t->qq_cost[j] = t->qq_cost[j - 1], t->qq_cost[j - 1] = x;
    }
  snprintf(t->qq_text[2], sizeof(t->qq_text[2]), "  a %llu B   b %llu B   "
           "c %llu B", t->qq_cost[0], t->qq_cost[1], t->qq_cost[2]);
}

/* The barrier answer: "1a", "2 b", ... into *bar (1, 2) and *brk (a, b). */
static int barrier_answer(const char *s, int *bar, int *brk)
{
  s += strspn(s, " ");
  if (*s != '1' && *s != '2')
    return 0;
  *bar = *s++ - '0';
  s += strspn(s, " ,");
  if (*s != 'a' && *s != 'b' && *s != 'A' && *s != 'B')
    return 0;
  *brk = (*s++ | 0x20) == 'a' ? 1 : 2;
  return s[strspn(s, " ")] == 0;
}

/* A number of bytes: "60", "60 B", "60B". */
static int cost_answer(const char *s, unsigned long long *v)
{
  char *end;
  s += strspn(s, " ");
  if (*s < '0' || *s > '9')
    return 0;
  *v = strtoull(s, &end, 10);
  end += strspn(end, " ");
  if (*end == 'B' || *end == 'b')
    end++;
  return end[strspn(end, " ")] == 0;
}

uint32_t tl_level_of(int kind)
{
  return tv_find(CS_CHECK_RACE, kind == 1 ? CS_CHECK_NO_SIGNAL
                                          : CS_CHECK_NO_READ_DONE);
}

void tl_next_line(char *buf, size_t cap)
{
  uint32_t a = tl_level_of(1), b = tl_level_of(2);
  if (a && b)
    snprintf(buf, cap, "Next: --level %u breaks %s, --level %u %s.", a,
             tv_level(a)->l.title, b, tv_level(b)->l.title);
  else
    snprintf(buf, cap, "Next: the break-it levels, --level 1 to %u.",
             tv_nlevels());
}

/* The barrier answer graded, and the level that breaks that barrier. */
static void barrier_reveal(teach_session_t *t, int bar, int brk)
{
  int kind = !strncmp(t->qq_where, "READY ", 6) ? 1 : 2, ok = bar == kind &&
             brk == kind;
  char where[160];
  snprintf(where, sizeof(where), "%s", t->qq_where);
  char *comma = strstr(where, ", ");
  if (comma)
    *comma = 0;
  t->bar_grade[kind - 1] = ok ? 1 : 2;
  snprintf(t->reveal[0], sizeof(t->reveal[0]), "%s rank 0 waits at the %s "
           "(%s%s).", ok ? "Right:" : "Not quite:", where, kind == 1 ? "1" : "2",
           kind == 1 ? "a" : "b");
  uint32_t lv = tl_level_of(kind);
  snprintf(t->reveal[1], sizeof(t->reveal[1]), kind == 1 ?
           "Without it a load may read a segment before its left stored it: "
           "--level %u." : "Without it a store may overwrite data a peer "
           "still reads: --level %u (%s).", lv, lv ? tv_level(lv)->algo : "");
}

int tl_qq_key(teach_session_t *t, int ch)
{
  size_t n = strlen(t->qq_answer);
  int bar, brk;
  unsigned long long v;
  if (ch == 27) { /* skipped: asked once, not asked again */
    if (t->qq == TL_QQ_BARRIER)
      t->bar_grade[t->qq_kind - 1] = 3;
    else
      t->cost_grade = 3;
    t->qq = TL_QQ_NONE;
    return -1;
  }
  if (t->qq == TL_QQ_COST && !n && ch >= 'a' && ch <= 'c') /* a choice */
    snprintf(t->qq_answer, sizeof(t->qq_answer), "%llu",
             t->qq_cost[ch - 'a']);
  else if (t->qq == TL_QQ_BARRIER && n == 1 && ch >= 'A' && ch <= 'z' &&
           ch != '\\' && n + 1 < sizeof(t->qq_answer)) /* "1a" is whole */
    t->qq_answer[n] = (char)ch, t->qq_answer[n + 1] = 0;
  if ((t->qq == TL_QQ_COST && !n && ch >= 'a' && ch <= 'c') ||
      (t->qq == TL_QQ_BARRIER && n == 1 && ch >= 'A' && ch <= 'z' &&
       ch != '\\') || ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
    if (t->qq == TL_QQ_BARRIER && barrier_answer(t->qq_answer, &bar, &brk)) {
      barrier_reveal(t, bar, brk);
    } else if (t->qq == TL_QQ_COST && cost_answer(t->qq_answer, &v)) {
      snprintf(t->cost_answer, sizeof(t->cost_answer), "%llu", v);
      t->cost_grade = 4;
      snprintf(t->reveal[0], sizeof(t->reveal[0]), "You said %llu B: the "
               "end of the run will tell.", v);
      t->reveal[1][0] = 0;
    } else {
      snprintf(t->qq_err, sizeof(t->qq_err), t->qq == TL_QQ_BARRIER ?
               "not an answer; two keys, e.g. 1a" : "not an answer; e.g. 50");
      return 0;
    }
    t->qq = TL_QQ_NONE;
    t->qq_err[0] = 0;
    return 1;
  }
  t->qq_err[0] = 0;
  if ((ch == KEY_BACKSPACE || ch == 127 || ch == 8) && n)
    t->qq_answer[n - 1] = 0;
  else if (ch >= 32 && ch < 127 && n + 1 < sizeof(t->qq_answer))
    t->qq_answer[n] = (char)ch, t->qq_answer[n + 1] = 0;
  return 0;
}

void tl_cost_verdict(teach_session_t *t, char *buf, size_t cap)
{
  buf[0] = 0;
  if (t->cost_grade != 4)
    return;
  unsigned long long said = strtoull(t->cost_answer, NULL, 10),
                     got = (unsigned long long)t->st.moved[0];
  t->cost_grade = said == got ? 1 : 2;
  snprintf(buf, cap, "Cost: %s rank 0 loaded %llu B (you said %llu): "
           "2(N-1)/N x S = 2 x %u/%u x %llu B.", said == got ? "right," :
           "not quite,", got, said, t->n - 1, t->n,
           (unsigned long long)(t->count * t->es));
}

void tl_score_line(const teach_session_t *t, char *buf, size_t cap)
{
  int rr, ra, br = 0, ba = 0, skipped = 0;
  tl_score(t, &rr, &ra);
  for (int p = 1; p <= 2; p++)
    for (int r = 0; r < TM_MAXR; r++)
      skipped += t->graded[p][r] == 3;
  for (int i = 0; i < 2; i++) {
    ba += t->bar_grade[i] == 1 || t->bar_grade[i] == 2;
    br += t->bar_grade[i] == 1;
    skipped += t->bar_grade[i] == 3;
  }
  int ca = t->cost_grade == 1 || t->cost_grade == 2, cr = t->cost_grade == 1;
  skipped += t->cost_grade == 3;
  size_t o = (size_t)snprintf(buf, cap, "Score: %d of %d right (rounds %d "
                              "of %d, barriers %d of %d, cost %d of %d", rr + br
                              + cr, ra + ba + ca, rr, ra, br, ba, cr, ca);
  if (o < cap && skipped)
    snprintf(buf + o, cap - o, "; %d skipped).", skipped);
  else if (o < cap)
    snprintf(buf + o, cap - o, ").");
}

void tl_progress(const teach_session_t *t, char *buf, size_t cap)
{
  int rr, ra, right, asked = 0;
  tl_score(t, &rr, &ra);
  right = rr + (t->bar_grade[0] == 1) + (t->bar_grade[1] == 1) +
          (t->cost_grade == 1);
  asked = ra + (t->bar_grade[0] == 1 || t->bar_grade[0] == 2) +
          (t->bar_grade[1] == 1 || t->bar_grade[1] == 2) +
          (t->cost_grade == 1 || t->cost_grade == 2);
  snprintf(buf, cap, "Goal: %u answers (%u rounds, 2 barriers, the cost); "
           "right so far: %d of %d", 2 * (t->n - 1) + 3, 2 * (t->n - 1), right,
           asked);
}
