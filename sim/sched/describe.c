/*
 * describe.c - the scheduler's events as trace records, so the one event
 * describer of the trace module (cs_trace_sentence, trace/describe.h)
 * words them: a rank's posted event, a DMA op still in its queue, and a
 * replay step. Called by the replay, interactive and callback strategies.
 */
#include "../trace.h"
#include "../trace/describe.h"
#include "internal.h"

void cs__sched_event_rec(cs_trace_rec_t *x, uint32_t rank, const cs_event_t *ev)
{
  cs_trace_rec_from_event(x, rank, ev->kind, ev);
}

void cs__sched_op_rec(cs_trace_rec_t *x, uint32_t rank, const cs_dma_op_t *op)
{
  cs_event_t ev = cs__sched_op_event(op);
  cs_trace_rec_from_event(x, rank, CS_TR_DMA_POST, &ev);
  x->dma_id = op->dma_id;
  x->round = op->kind;
}

void cs__sched_describe_event(char *buf, size_t n, const cs_world_t *w,
                              uint32_t rank, const cs_event_t *ev)
{
  cs_trace_rec_t x;
  cs__sched_event_rec(&x, rank, ev);
  cs_trace_sentence(buf, n, &w->ctl->layout, &x);
}

void cs__sched_describe_op(char *buf, size_t n, const cs_world_t *w,
                           uint32_t rank, const cs_dma_op_t *op)
{
  cs_trace_rec_t x;
  cs__sched_op_rec(&x, rank, op);
  cs_trace_sentence(buf, n, &w->ctl->layout, &x);
}

void cs__sched_describe_rec(char *buf, size_t n, const cs_world_t *w,
                            const cs_trace_rec_t *x)
{
  cs_trace_sentence(buf, n, &w->ctl->layout, x);
}
