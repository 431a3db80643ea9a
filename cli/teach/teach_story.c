/*
 * teach_story.c - shrink's story as a break-it level's verdict
 * (teach_story.h). A story event is a trace record; the lesson knows its
 * steps by the actor's posted event (teach_model.c keeps every step's
 * record in t->hist). The n-th record of a rank with the same kind, slot,
 * place, cell, peer and value in the trace is the n-th such step.
 */
#include "teach_story.h"

#include <stdint.h>
#include <string.h>

#include "../../run/signature.h"
#include "../../sim/trace/check.h"
#include "../../sim/trace/story.h"
#include "../collsim/story.h"

static int same(const cs_trace_rec_t *a, const cs_trace_rec_t *b)
{
  return a->rank == b->rank && a->kind == b->kind && a->slot == b->slot &&
         a->elem_off == b->elem_off && a->cell == b->cell &&
         a->peer == b->peer && a->value == b->value;
}

/* The step of trace record x (of trace tr): UINT64_MAX if none. */
static uint64_t step_of(const teach_session_t *t, const cs_trace_t *tr,
                        const cs_trace_rec_t *x)
{
  uint64_t nth = 0;
  for (uint64_t i = 0; i < tr->n && tr->rec[i].seq < x->seq; i++)
    nth += same(&tr->rec[i], x);
  for (uint64_t s = 0; s < t->nhist; s++)
    if (same(&t->hist[s], x) && nth-- == 0)
      return s;
  return UINT64_MAX;
}

int ts_story(teach_session_t *t, const char *out)
{
  char sig[200];
  cs_trace_t tr;
  cs_check_report_t rep;
  cs_story_t s;
  t->nstory = 0;
  cs__run_signature(out, t->run_rc << 8, sig, sizeof(sig));
  if (cs__story_print(t->trace, sig, stdout) < 0)
    return -1;
  if (cs_trace_load(t->trace, &tr, NULL) < 0)
    return 0;
  if (cs_check_run(&tr, &rep) == 0) {
    unsigned bad_rank = UINT32_MAX;
    unsigned long long bad_index = UINT64_MAX;
    const char *p = strstr(sig, "wrong result, rank ");
    if (!p || sscanf(p, "wrong result, rank %u index %llu", &bad_rank,
                     &bad_index) != 2)
      bad_rank = UINT32_MAX, bad_index = UINT64_MAX;
    cs_trace_story(&tr, &rep, bad_rank, bad_index, &s);
    for (uint32_t i = 0; i < s.n && i < TM_STORY; i++) {
      t->story_seq[i] = s.ev[i].rec.seq;
      t->story_step[i] = step_of(t, &tr, &s.ev[i].rec);
    }
    t->nstory = s.n < TM_STORY ? s.n : TM_STORY;
    cs_check_report_fini(&rep);
  }
  cs_trace_free(&tr);
  return 0;
}

uint32_t ts_of_seq(const teach_session_t *t, uint64_t seq)
{
  for (uint32_t i = 0; i < t->nstory; i++)
    if (t->story_seq[i] == seq)
      return i + 1;
  return 0;
}

uint32_t ts_of_step(const teach_session_t *t, uint64_t step)
{
  for (uint32_t i = 0; i < t->nstory; i++)
    if (t->story_step[i] == step)
      return i + 1;
  return 0;
}
