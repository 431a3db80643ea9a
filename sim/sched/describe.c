/*
 * describe.c - the scheduler's events as trace records, so the one event
 * describer of the trace module (cs_trace_sentence, trace/describe.h)
 * words them: a rank's posted event, a DMA op still in its queue, and a
 * replay step. Called by the replay, interactive and callback strategies.
 */
#include <string.h>

#include "../trace/describe.h"
#include "internal.h"

void cs__sched_event_rec(cs_trace_rec_t *x, uint32_t rank, const cs_event_t *ev)
{
  memset(x, 0, sizeof(*x));
  x->kind = (uint16_t)ev->kind;
  x->rank = rank;
  x->peer = ev->peer;
  x->slot = ev->slot;
  x->elem_off = ev->elem_off;
  x->valid = ev->valid;
  x->phys = ev->phys;
  x->cell = ev->cell;
  x->opcmp = (uint8_t)ev->opcmp;
  x->value = ev->value;
}

void cs__sched_op_rec(cs_trace_rec_t *x, uint32_t rank, const cs_dma_op_t *op)
{
  memset(x, 0, sizeof(*x));
  x->kind = CS_TR_DMA_POST;
  x->round = op->kind;
  x->rank = rank;
  x->dma_id = op->dma_id;
  x->peer = op->peer;
  x->slot = op->slot;
  x->cell = op->cell;
  x->value = op->value;
  x->elem_off = op->elem_off;
  x->valid = op->valid;
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
