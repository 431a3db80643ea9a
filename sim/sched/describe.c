/*
 * describe.c - one line for a person about a posted event or a trace
 * record ("rank 1: load data[16..32) from rank 0 (16 physical)").
 *
 * Owns the wording of the interactive prompt's actors and of replay's
 * divergence messages (internal.h). Does not own the trace's own text
 * column (trace.c) or the prompt's DMA-op lines (interactive.c). Called by
 * the replay and interactive strategies.
 */
#include <stdio.h>

#include "internal.h"

/* One line for a person: "rank 1: load data[16..32) from rank 0 (16
 * physical)". Used by the interactive prompt and replay divergences. */
static void describe(char *buf, size_t n, const cs_layout_t *l, uint32_t rank,
                     uint32_t kind, uint32_t peer, uint32_t slot, uint64_t off,
                     uint32_t valid, uint32_t phys, uint32_t cell,
                     uint32_t opcmp, int32_t value)
{
  const char *sn = slot < l->nslots ? l->slot[slot].name : "?";
  unsigned long long a = (unsigned long long)off, b = a + valid;
  switch (kind) {
  case CS_EV_LOAD:
    if (peer == rank)
      snprintf(buf, n, "rank %u: load %s[%llu..%llu) (local)", rank, sn, a, b);
    else
      snprintf(buf, n, "rank %u: load %s[%llu..%llu) from rank %u (%u physical)",
               rank, sn, a, b, peer, phys);
    break;
  case CS_EV_STORE:
    snprintf(buf, n, "rank %u: store %s[%llu..%llu)", rank, sn, a, b);
    break;
  case CS_EV_PUT:
    snprintf(buf, n, "rank %u: put %s[%llu..%llu) to rank %u", rank, sn, a, b, peer);
    break;
  case CS_EV_NOTIFY:
    snprintf(buf, n, "rank %u: notify rank %u %s[%u] %s%d", rank, peer, sn, cell,
             opcmp == CS_NOTIFY_ADD ? (value >= 0 ? "+" : "") : "= ", value);
    break;
  case CS_EV_WAIT:
    snprintf(buf, n, "rank %u: wait %s[%u] %s %d", rank, sn, cell,
             opcmp == CS_CMP_EQ ? "==" : ">=", value);
    break;
  case CS_EV_FENCE:
    snprintf(buf, n, "rank %u: fence", rank);
    break;
  case CS_EV_REDUCE:
    snprintf(buf, n, "rank %u: reduce %u elements", rank, valid);
    break;
  case CS_EV_MARK:
    snprintf(buf, n, "rank %u: enter %s round %d", rank,
             cell == 1 ? "reduce-scatter/main" : cell == 2 ? "all-gather" : "phase",
             value);
    break;
  default:
    snprintf(buf, n, "rank %u: %s", rank, cs_trace_kind_name(kind));
    break;
  }
}

void cs__sched_describe_event(char *buf, size_t n, const cs_world_t *w,
                              uint32_t rank, const cs_event_t *ev)
{
  describe(buf, n, &w->ctl->layout, rank, ev->kind, ev->peer, ev->slot,
           ev->elem_off, ev->valid, ev->phys, ev->cell, ev->opcmp, ev->value);
}

void cs__sched_describe_rec(char *buf, size_t n, const cs_world_t *w,
                            const cs_trace_rec_t *x)
{
  if (x->kind == CS_TR_DMA_LAND)
    snprintf(buf, n, "rank %u's DMA lands op #%llu (%s to rank %u)", x->rank,
             (unsigned long long)x->dma_id, cs_trace_kind_name(x->round), x->peer);
  else
    describe(buf, n, &w->ctl->layout, x->rank, x->kind, x->peer, x->slot,
             x->elem_off, x->valid, x->phys, x->cell, x->opcmp & 0x7fu, x->value);
}
