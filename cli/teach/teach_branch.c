/*
 * teach_branch.c - branches of the terminal lesson (teach_branch.h): the
 * run the learner stepped back from, kept to its end, and its comparison
 * with the run that took another order. An event is the same in both
 * runs when it is the same rank's k-th event of the same kind: that is
 * how "which event moved" is found, since a controlled run is a pure
 * function of its picks and both runs are of one program.
 */
#include "teach_branch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/trace/describe.h"

void tb_free(teach_session_t *t)
{
  free(t->branch.choice);
  free(t->branch.hist);
  free(t->branch.st);
  memset(&t->branch, 0, sizeof(t->branch));
}

void tb_outcome(const teach_session_t *t, char *b, size_t cap)
{
  const char *word = t->run_rc == 0 ? "passed" : "FAILED";
  for (uint32_t i = 1; i < t->nresult; i++) {
    const char *l = t->result[i] + strspn(t->result[i], " ");
    if (!strncmp(l, "result:", 7) || strstr(l, "deadlock") ||
        strstr(l, "Deadlock")) {
      snprintf(b, cap, "%s; %s", word, l);
      return;
    }
  }
  snprintf(b, cap, "%s (exit %d)", word, t->run_rc);
}

int tb_keep(teach_session_t *t)
{
  uint64_t n = t->st.nevents < t->nhist ? t->st.nevents : t->nhist;
  if (n > t->nchoice)
    n = t->nchoice;
  tm_branch_t a = {.n = n, .rc = t->run_rc};
  a.choice = malloc((n ? n : 1) * sizeof(*a.choice));
  a.hist = malloc((n ? n : 1) * sizeof(*a.hist));
  a.st = malloc(sizeof(*a.st));
  if (!a.choice || !a.hist || !a.st) {
    free(a.choice);
    free(a.hist);
    free(a.st);
    return -1;
  }
  memcpy(a.choice, t->choice, n * sizeof(*a.choice));
  memcpy(a.hist, t->hist, n * sizeof(*a.hist));
  *a.st = t->st;
  a.nstory = t->nstory;
  memcpy(a.story_step, t->story_step, sizeof(a.story_step));
  tb_outcome(t, a.outcome, sizeof(a.outcome));
  tb_free(t);
  t->branch = a;
  return 0;
}

/* The current run's steps (those both its picks and its history hold). */
static uint64_t cur_n(const teach_session_t *t)
{
  uint64_t n = t->st.nevents < t->nhist ? t->st.nevents : t->nhist;
  return n < t->nchoice ? n : t->nchoice;
}

uint64_t tb_diverge(const teach_session_t *t)
{
  uint64_t n = cur_n(t), m = t->branch.n < n ? t->branch.n : n, s = 0;
  while (s < m && t->branch.choice[s] == t->choice[s])
    s++;
  return s;
}

int tb_ready(const teach_session_t *t)
{
  return t->branch.n && (tb_diverge(t) < t->branch.n ||
                         tb_diverge(t) < cur_n(t));
}

static const cs_trace_rec_t *rec_of(const teach_session_t *t, int which,
                                    uint64_t s)
{
  if (which == 0)
    return s < t->branch.n ? &t->branch.hist[s] : NULL;
  return s < cur_n(t) ? &t->hist[s] : NULL;
}

void tb_event(const teach_session_t *t, int which, uint64_t s, char *b,
              size_t cap)
{
  const cs_trace_rec_t *x = rec_of(t, which, s);
  if (!x) {
    snprintf(b, cap, "-");
    return;
  }
  char w[200];
  tm_sentence(t, w, sizeof(w), x);
  char *ph = strstr(w, " physical)"); /* "(2 physical)": not in a column */
  while (ph && ph > w && ph[-1] >= '0' && ph[-1] <= '9')
    ph--;
  if (ph && ph > w + 1 && ph[-1] == '(' && ph[-2] == ' ')
    ph[-2] = 0;
  unsigned r;
  int k = 0;
  if (sscanf(w, "rank %u: %n", &r, &k) == 1 && k > 0) /* "r2 store ..." */
    snprintf(b, cap, "r%u %s", r, w + k);
  else
    snprintf(b, cap, "%s", w);
}

static int same_rec(const cs_trace_rec_t *a, const cs_trace_rec_t *b)
{
  return a->rank == b->rank && a->kind == b->kind && a->peer == b->peer &&
         a->slot == b->slot && a->cell == b->cell && a->value == b->value &&
         a->valid == b->valid && a->phase == b->phase && a->round == b->round &&
         a->step == b->step;
}

int tb_same(const teach_session_t *t, uint64_t s)
{
  const cs_trace_rec_t *a = rec_of(t, 0, s), *b = rec_of(t, 1, s);
  return a && b && same_rec(a, b);
}

/* The step of run `which` where the event that ran at step s of run
 * `from` ran: the same rank's k-th event of the same kind; -1 if it did
 * not run there. */
static int64_t find_in(const teach_session_t *t, int from, uint64_t s,
                       int which)
{
  const cs_trace_rec_t *x = rec_of(t, from, s);
  if (!x)
    return -1;
  uint64_t k = 0;
  for (uint64_t j = 0; j < s; j++) {
    const cs_trace_rec_t *y = rec_of(t, from, j);
    k += y->rank == x->rank && y->kind == x->kind;
  }
  for (uint64_t j = 0;; j++) {
    const cs_trace_rec_t *y = rec_of(t, which, j);
    if (!y)
      return -1;
    if (y->rank == x->rank && y->kind == x->kind && k-- == 0)
      return (int64_t)j;
  }
}

/* "r0 load A #6 -> B #7 (1 step later)" into b: the event of step s of
 * run `from`, where it ran in both. */
static size_t moved_one(const teach_session_t *t, int from, uint64_t s,
                        char *b, size_t cap)
{
  char ev[200];
  tb_event(t, from, s, ev, sizeof(ev));
  char *sp = strchr(ev, ' ');
  if (sp && (sp = strchr(sp + 1, ' ')) != NULL)
    *sp = 0; /* "r0 load" */
  int64_t j = find_in(t, from, s, !from);
  int64_t ia = from ? j : (int64_t)s, ib = from ? (int64_t)s : j;
  if (ia < 0 || ib < 0)
    return (size_t)snprintf(b, cap, "%s %s #%llu, never in %s", ev,
                            from ? "B" : "A", (unsigned long long)s,
                            from ? "A" : "B");
  long long d = (long long)(ib - ia);
  if (!d)
    return (size_t)snprintf(b, cap, "%s A #%lld, B #%lld (the same step)", ev,
                            (long long)ia, (long long)ib);
  return (size_t)snprintf(b, cap, "%s A #%lld -> B #%lld (%lld step%s %s)",
                          ev, (long long)ia, (long long)ib, d < 0 ? -d : d,
                          d == 1 || d == -1 ? "" : "s",
                          d < 0 ? "earlier" : "later");
}

void tb_moved(const teach_session_t *t, char *b, size_t cap)
{
  uint64_t d = tb_diverge(t);
  size_t o = (size_t)snprintf(b, cap, "Moved: ");
  if (o < cap && rec_of(t, 0, d))
    o += moved_one(t, 0, d, b + o, cap - o);
  if (o < cap && rec_of(t, 0, d) && rec_of(t, 1, d))
    o += (size_t)snprintf(b + o, cap - o, "; ");
  if (o < cap && rec_of(t, 1, d))
    o += moved_one(t, 1, d, b + o, cap - o);
  if (o < cap)
    snprintf(b + o, cap - o, ".");
}

int tb_story(const teach_session_t *t, char *b, size_t cap)
{
  int from = t->nstory ? 1 : t->branch.nstory ? 0 : -1;
  if (from < 0)
    return 0;
  const uint64_t *st = from ? t->story_step : t->branch.story_step;
  uint32_t n = from ? t->nstory : t->branch.nstory;
  size_t o = (size_t)snprintf(b, cap, "%s failed on its story's events; "
                              "where they ran:", from ? "B" : "A");
  for (uint32_t k = 0; k < n && o < cap; k++) {
    if (st[k] == UINT64_MAX)
      continue;
    o += (size_t)snprintf(b + o, cap - o, "%s %u. ", k ? ";" : "", k + 1);
    if (o < cap)
      o += moved_one(t, from, st[k], b + o, cap - o);
  }
  /* the story's first two events, in the other run the other way round */
  int64_t a0 = n >= 2 ? find_in(t, from, st[0], !from) : -1,
          a1 = n >= 2 ? find_in(t, from, st[1], !from) : -1;
  if (o < cap && a0 >= 0 && a1 >= 0 && (st[0] < st[1]) != (a0 < a1))
    o += (size_t)snprintf(b + o, cap - o, ": in %s, 2 ran before 1",
                          from ? "A" : "B");
  if (o < cap)
    snprintf(b + o, cap - o, ".");
  return 1;
}

void tb_windows(const teach_session_t *t, char *b, size_t cap)
{
  const tm_state_t *a = t->branch.st, *c = &t->st;
  if (!t->facts) { /* its contents are not tracked: only its slots */
    snprintf(b, cap, "The result's elements: as each outcome says.");
    return;
  }
  size_t o = (size_t)snprintf(b, cap, "At the end the windows differ in: ");
  uint32_t shown = 0, more = 0;
  for (uint32_t r = 0; r < t->n && r < TM_MAXR; r++)
    for (uint64_t e = 0; e < t->count;) {
      const tm_prov_t *pa = tm_prov_in(a, r, e), *pb = tm_prov_in(c, r, e);
      uint64_t f = e + 1;
      while (f < t->count && tm_prov_same(tm_prov_in(a, r, f), pa) &&
             tm_prov_same(tm_prov_in(c, r, f), pb))
        f++;
      if (!tm_prov_same(pa, pb)) {
        if (shown < 4 && o < cap) {
          char sa[64], sb[64];
          tm_prov_str(sa, sizeof(sa), pa);
          tm_prov_str(sb, sizeof(sb), pb);
          char range[48];
          if (f - e == 1)
            snprintf(range, sizeof(range), "e%llu", (unsigned long long)e);
          else
            snprintf(range, sizeof(range), "e%llu..%llu",
                     (unsigned long long)e, (unsigned long long)(f - 1));
          o += (size_t)snprintf(b + o, cap - o, "%sr%u %s: A %s B %s",
                                shown ? "; " : "", r, range, sa, sb);
          shown++;
        } else {
          more++;
        }
      }
      e = f;
    }
  if (o >= cap)
    return;
  if (!shown)
    snprintf(b, cap, "At the end every rank's window holds the same in A and "
             "B (whose inputs, in fold order).");
  else if (more)
    snprintf(b + o, cap - o, "; and %u more range%s.", more, more == 1 ? "" :
             "s");
  else
    snprintf(b + o, cap - o, ".");
}
