/*
 * story.c - the story of a failing trace in words: its few events as a
 * numbered narrative in the algorithm's terms, and the edge that is
 * missing. Owns the words only; which events and which finding is
 * sim/trace/story.c's choice, the finding itself the checker's
 * (sim/trace/check.h). Called by shrink (cli/collsim/shrink.c) after it wrote
 * its trace.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../sim/trace/analysis.h"
#include "../../sim/trace/check.h"
#include "../../sim/trace/describe.h"
#include "../../sim/trace/story.h"
#include "cli.h"
#include "story.h"

/* "stores data[0..1)", "loads data[0..1) from rank 0", "notifies rank 1:
 * signal[0] +1", ... */
static void verb(char *b, size_t n, const cs_trace_header_t *h,
                 const cs_trace_rec_t *x)
{
  char slot[32], what[160];
  cs_trace_slot_name(&h->layout, x->slot, slot, sizeof(slot));
  switch (x->kind) {
  case CS_EV_STORE:
  case CS_EV_PUT:
  case CS_EV_LOAD:
    snprintf(b, n, "%s %s", x->kind == CS_EV_LOAD ? "loads"
             : x->kind == CS_EV_PUT ? "puts" : "stores",
             cs_trace_access_str(&h->layout, x, 0, what, sizeof(what)));
    break;
  case CS_EV_NOTIFY:
    snprintf(b, n, "notifies rank %u: %s[%u] %s%d", x->peer, slot, x->cell,
             (x->opcmp & 0x7f) == CS_NOTIFY_ADD ? (x->value >= 0 ? "+" : "") : "= ",
             x->value);
    break;
  case CS_EV_WAIT:
    snprintf(b, n, "waits until %s[%u] %s %d and sees %d", slot, x->cell,
             cs_trace_cmp_str(x->opcmp), x->value, x->observed);
    break;
  case CS_TR_WAIT_BEGIN:
    snprintf(b, n, "starts waiting until %s[%u] %s %d", slot, x->cell,
             cs_trace_cmp_str(x->opcmp), x->value);
    break;
  case CS_EV_FENCE:
    snprintf(b, n, "fences (its posted ops land)");
    break;
  default: {
    char s[200];
    cs_trace_sentence(s, sizeof(s), &h->layout, x);
    const char *c = strstr(s, ": ");
    snprintf(b, n, "%s", c ? c + 2 : s);
  }
  }
}

/* What the story adds about event i: landing, the value seen, failure. */
static void note(char *b, size_t n, const cs_story_t *s, uint32_t i)
{
  const cs_story_event_t *e = &s->ev[i];
  uint32_t w = 0;
  for (uint32_t k = 0; k < s->n; k++)
    if (s->ev[k].role == CS_STORY_WRITE)
      w = k;
  b[0] = 0;
  if (e->role == CS_STORY_WRITE && s->saw_old == 1 && e->rec.dma_id && w < i + 1 &&
      e->landed > e->rec.seq)
    snprintf(b, n, " (posted, not landed)");
  else if (e->role == CS_STORY_SIGNAL && e->rec.dma_id && s->saw_old == 1 &&
           e->landed < s->ev[w].landed)
    snprintf(b, n, " (it lands before the data)");
  else if (e->role == CS_STORY_READ && s->saw_old == 1)
    snprintf(b, n, " and sees the old value: the write of %u %s only after it",
             w + 1, w < i ? "lands" : "comes");
  else if (e->role == CS_STORY_READ && s->saw_old == 0)
    snprintf(b, n, " and sees the new value: the write of %u came first", w + 1);
  else if (e->role == CS_STORY_STALE)
    snprintf(b, n, " in call %u", e->rec.kind == CS_EV_NOTIFY ? e->call : 0);
  else if (e->role == CS_STORY_WAIT && s->need == CS_STORY_NEED_RESET) {
    uint32_t k = 0;
    for (uint32_t j = 0; j < s->n; j++)
      if (s->ev[j].role == CS_STORY_STALE)
        k = j + 1;
    if (k)
      snprintf(b, n, " in call %u, on the credit of %u (call %u's, not this "
               "call's)", e->call, k, s->ev[k - 1].call);
  } else if (e->role == CS_STORY_FAILED || e->rec.opcmp & CS_TR_FAILED)
    snprintf(b, n, " (FAILED: the run stops here)");
}

/* "the READY barrier of gather t1 j0: " when the collective named the
 * barrier that edge is (a plug-in's names, traces/FORMAT.md), placed
 * before the story's event b (1-based); else "". */
static const char *barrier_words(const cs_trace_header_t *h, const cs_story_t *s,
                                 uint32_t which, uint32_t b, char *buf, size_t n)
{
  const char *name = cs_trace_barrier_name(cs__trace_names(), h, which);
  char tag[48];
  buf[0] = 0;
  if (!name || !b)
    return buf;
  cs_trace_tag_str(h, cs__trace_names(), &s->ev[b - 1].rec, tag, sizeof(tag));
  snprintf(buf, n, "the %s barrier%s%s: ", name, tag[0] ? " of " : "", tag);
  return buf;
}

/* The missing piece of a finding the story has no gap for, by its kind. */
static void missing_kind(FILE *f, const cs_check_finding_t *x)
{
  switch (x->kind) {
  case CS_CHECK_WAIT_EQ:
    fprintf(f, "Missing: a >= comparison: the add can pass the == value before "
               "the waiter looks.\n");
    break;
  case CS_CHECK_NOT_RESET:
    fprintf(f, "Missing: a self-clearing epilogue: the cell ends at %d, not 0, "
               "and the next call waits on it.\n", x->value);
    break;
  case CS_CHECK_UNSATISFIABLE:
    fprintf(f, "Missing: a notify that brings the cell to the target (it ends "
               "at %d).\n", x->value);
    break;
  case CS_CHECK_MIXED_OPS:
    fprintf(f, "Missing: one notify op per cell: AtomicAdd for every notify "
               "of it (a Set overwrites what the adds counted, or an add "
               "lands on the Set's value).\n");
    break;
  case CS_CHECK_CLOBBER:
    fprintf(f, "Missing: an order between the Set's line write-back and the "
               "other write to its line, or a line per cell.\n");
    break;
  case CS_CHECK_DEAD_READ:
    fprintf(f, "Missing: no edge; the load should not be there: the rank "
               "reads another rank's memory and never uses it (a lane with "
               "nothing to do should skip the load).\n");
    break;
  default:
    fprintf(f, "Missing: an order between %s's events.\n", cs_check_kind_name(x->kind));
  }
}

static void missing(FILE *f, const cs_trace_header_t *h, const cs_story_t *s)
{
  char bw[96];
  const cs_check_finding_t *x = &s->finding;
  uint32_t a = s->gap_from, b = s->gap_to;
  uint32_t wr = a && b ? s->ev[s->need == CS_STORY_NEED_READ_DONE ? b - 1 : a - 1].rec.rank : 0;
  uint32_t rd = a && b ? s->ev[s->need == CS_STORY_NEED_READ_DONE ? a - 1 : b - 1].rec.rank : 0;
  if (!s->has_finding) {
    char sched[sizeof(h->schedule) + 1];
    cs_trace_field_str(h->schedule, sizeof(h->schedule), sched, sizeof(sched));
    if (!strcmp(sched, "deviate:none"))
      fprintf(f, "No ordering defect found: the run fails in the default "
                 "order itself, so the defect is in what is computed, not "
                 "when.\n");
    else /* a failure only some orders show, which check cannot explain */
      fprintf(f, "No ordering defect found: check names no missing edge "
                 "between this run's events (schedule %s), so this story "
                 "cannot say which order matters; the failure is the "
                 "outcome above.\n", sched[0] ? sched : "free");
    return;
  }
  switch (s->need) {
  case CS_STORY_NEED_FENCE: /* the half of the fence the writer lacks */
    if (x->fence_part == CS_CHECK_PART_DDR)
      fprintf(f, "Missing: a DDR fence on rank %u between %u and %u: a drain "
                 "is not one.\n", wr, a, b);
    else if (x->fence_part == CS_CHECK_PART_PIPE)
      fprintf(f, "Missing: a pipe barrier on rank %u between %u and %u, "
                 "before its DDR fence.\n", wr, a, b);
    else
      fprintf(f, "Missing: a fence on rank %u between %u and %u.\n", wr, a, b);
    return;
  case CS_STORY_NEED_SIGNAL:
    fprintf(f, "Missing: %sa notify by rank %u after %u and a wait by rank %u "
               "on it before %u%s.\n", barrier_words(h, s, 0, b, bw, sizeof(bw)),
            wr, a, rd, b, wr == rd ? " (or a fence between them)" : "");
    return;
  case CS_STORY_NEED_RESET: {
    char slot[32], waits[64] = "the next call's waits pass";
    cs_trace_slot_name(&h->layout, s->root.a.slot, slot, sizeof(slot));
    for (uint32_t j = 0; j < s->n; j++)
      if (s->ev[j].role == CS_STORY_WAIT)
        snprintf(waits, sizeof(waits), "the wait of %u passes", j + 1);
    fprintf(f, "Missing: a self-clearing epilogue: signal cells are not back "
               "at 0 (rank %u's %s[%u] ends %s at %d), so %s on stale "
               "credits and nothing orders %u before %u.\n",
            s->root.a.peer, slot, s->root.a.cell,
            s->root.cause == 1 ? "call 1" : "the run", s->root.value, waits, a, b);
    return;
  }
  case CS_STORY_NEED_READ_DONE:
    barrier_words(h, s, 1, b, bw, sizeof(bw));
    fprintf(f, "Missing: %sa notify by rank %u after %u and a wait by rank "
               "%u on it before %u.\n", bw[0] ? bw : "a read-complete barrier: ",
            rd, a, wr, b);
    return;
  }
  missing_kind(f, x);
}

/* A cell left not at 0 after several calls, when the story is not about
 * it: the next call's waits may pass on its stale credits. */
static void also(FILE *f, const cs_trace_header_t *h, const cs_check_report_t *rep,
                 const cs_story_t *s)
{
  for (uint64_t i = 0; i < rep->n; i++) {
    const cs_check_finding_t *x = &rep->f[i];
    if (x->kind != CS_CHECK_NOT_RESET || (s->has_finding && s->finding.kind == x->kind) ||
        s->need == CS_STORY_NEED_RESET)
      continue;
    char slot[32];
    cs_trace_slot_name(&h->layout, x->a.slot, slot, sizeof(slot));
    fprintf(f, "  Also: rank %u's %s[%u] ends %s at %d, not 0 (cell not "
               "reset): the next call's waits pass on its stale credits.\n",
            x->a.peer, slot, x->a.cell, x->cause == 1 ? "call 1" : "the run",
            x->value);
    return;
  }
}

int cs__story_print(const char *path, const char *sig, FILE *f)
{
  unsigned bad_rank = UINT32_MAX;
  unsigned long long bad_index = UINT64_MAX;
  const char *p = sig ? strstr(sig, "wrong result, rank ") : NULL;
  if (!p || sscanf(p, "wrong result, rank %u index %llu", &bad_rank, &bad_index) != 2) {
    bad_rank = UINT32_MAX;
    bad_index = UINT64_MAX;
  }
  cs_trace_t t;
  cs_check_report_t rep;
  cs_story_t s;
  if (cs_trace_load(path, &t, NULL) < 0)
    return -1;
  if (cs_check_run(&t, &rep) < 0) {
    cs_trace_free(&t);
    return -1;
  }
  cs_trace_story(&t, &rep, bad_rank, bad_index, &s);
  fprintf(f, "story:\n");
  for (uint32_t i = 0; i < s.n; i++) {
    char v[240], tag[48], nt[120];
    const cs_trace_rec_t *x = &s.ev[i].rec;
    verb(v, sizeof(v), &t.hdr, x);
    cs_trace_tag_str(&t.hdr, cs__trace_names(), x, tag, sizeof(tag));
    if (!tag[0] && x->kind == CS_EV_STORE)
      snprintf(tag, sizeof(tag), "stage-in");
    note(nt, sizeof(nt), &s, i);
    fprintf(f, "  %u. rank %u %s%s%s%s (#%llu).\n", i + 1, x->rank, v,
            tag[0] ? " at " : "", tag, nt, (unsigned long long)x->seq);
  }
  fprintf(f, "  ");
  missing(f, &t.hdr, &s);
  also(f, &t.hdr, &rep, &s);
  cs_check_report_fini(&rep);
  cs_trace_free(&t);
  return 0;
}
