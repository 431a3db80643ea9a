/*
 * describe.c - the text of one event (describe.h).
 *
 * Owns: every wording of an event: the trace's "what" column, the
 * scheduler's sentence, tags, marker names and the launcher's lines.
 * Does not own the links between records (analysis.c) or any output
 * stream; pure formatting into the caller's buffer, no state.
 * Called by export.c and the tools.
 */
#define _GNU_SOURCE
#include "describe.h"

#include <stdio.h>
#include <string.h>

const char *cs_trace_access_str(const cs_layout_t *l, const cs_trace_rec_t *x,
                                int phys, char *buf, size_t n)
{
  char slot[32];
  cs_trace_slot_name(l, x->slot, slot, sizeof(slot));
  uint32_t len = phys && x->kind == CS_EV_LOAD && x->phys > x->valid ? x->phys
                                                                     : x->valid;
  uint64_t end = cs_trace_rec_is_2d(x) ? cs_trace_rec_end(x) : x->elem_off + len;
  int w = snprintf(buf, n, "%s[%llu..%llu)", slot, (unsigned long long)x->elem_off,
                   (unsigned long long)end);
  if (w >= 0 && (size_t)w < n && cs_trace_rec_is_2d(x))
    w += snprintf(buf + w, n - (size_t)w, " (rows %u x %u @ stride %u)", x->cell,
                  x->valid / x->cell, (uint32_t)x->value);
  if (w >= 0 && (size_t)w < n && x->kind == CS_EV_LOAD && x->peer != x->rank)
    snprintf(buf + w, n - (size_t)w, " from rank %u", x->peer);
  else if (w >= 0 && (size_t)w < n && x->kind == CS_EV_PUT)
    snprintf(buf + w, n - (size_t)w, " to rank %u", x->peer);
  return buf;
}

const char *cs_trace_us_str(uint64_t ns, char *buf, size_t n)
{
  snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ns / 1000),
           (unsigned long long)(ns % 1000));
  return buf;
}

const char *cs_trace_cmp_str(uint32_t opcmp)
{
  return (opcmp & ~CS_TR_FAILED) == CS_CMP_EQ ? "==" : ">=";
}

const char *cs_trace_tag_str(const cs_trace_header_t *h,
                             const cs_trace_names_t *nm,
                             const cs_trace_rec_t *x, char *buf, size_t n)
{
  int user = h->program == 0 && h->algo == CS_TRACE_ALGO_USER;
  const char *p = cs_trace_phase_name(nm, h, x->phase);
  if (x->phase == 0 || cs_trace_rec_is_launcher(x))
    buf[0] = 0;
  else if (p)
    snprintf(buf, n, "%s t%u j%u", p, x->round, x->step);
  else if (user && (h->modes & CS_TR_MODE_CHUNK_TAGS) && x->phase == 1 &&
           x->round == 0) /* a main phase of chunks, as mesh's */
    snprintf(buf, n, "main c%u", x->step);
  else if (user)
    snprintf(buf, n, "P%u t%u j%u", x->phase, x->round, x->step);
  else if (cs_trace_phase_name(nm, h, 1))
    snprintf(buf, n, "P? t%u j%u", x->round, x->step);
  else
    snprintf(buf, n, "main c%u", x->step);
  return buf;
}

const char *cs_trace_mark_str(const cs_trace_header_t *h,
                              const cs_trace_names_t *nm,
                              const cs_trace_rec_t *x, char *buf, size_t n)
{
  const char *p = cs_trace_phase_name(nm, h, x->cell);
  if (p)
    snprintf(buf, n, "%s t%d", p, x->value);
  else if (x->cell == 1 && x->value == 0)
    snprintf(buf, n, "main");
  else
    snprintf(buf, n, "phase %u round %d", x->cell, x->value);
  return buf;
}

static const char *sig_name(int32_t sig, char *buf, size_t n)
{
  const char *a = sig > 0 && sig < 65 ? sigabbrev_np(sig) : NULL;
  if (a)
    snprintf(buf, n, "SIG%s", a);
  else
    snprintf(buf, n, "signal %d", sig);
  return buf;
}

void cs_trace_launcher_str(const cs_trace_rec_t *x, char *buf, size_t n)
{
  char sb[32];
  if (x->kind == CS_TR_FAULT && x->step == 1)
    snprintf(buf, n, "rank %u killed by %s at event %u", x->rank,
             sig_name(x->value, sb, sizeof(sb)), (uint32_t)x->observed);
  else if (x->kind == CS_TR_FAULT && x->value == CS_RX_HUNG)
    snprintf(buf, n, "rank %u hung (injected fault) at event %u", x->rank,
             (uint32_t)x->observed);
  else if (x->kind == CS_TR_FAULT)
    snprintf(buf, n, "rank %u exited with status %d (%s) at event %u", x->rank,
             x->value, cs_trace_exit_meaning(x->value), (uint32_t)x->observed);
  else if (x->rank == UINT32_MAX)
    snprintf(buf, n, "run aborted by the launcher (%s)",
             cs_trace_abort_name(x->value));
  else
    snprintf(buf, n, "run aborted (%s), first failing rank %u",
             cs_trace_abort_name(x->value), x->rank);
}

/* ------------------------------------------------------------ column */

/* ", posted as dma #N" for an op queued for the DMA engine, else "". */
static const char *posted_str(const cs_trace_rec_t *x, char *buf, size_t n)
{
  buf[0] = 0;
  if (x->dma_id)
    snprintf(buf, n, ", posted as dma #%llu", (unsigned long long)x->dma_id);
  return buf;
}

/* " rows 3 x 5 @ stride 8" for a 2-D record, else "". */
static const char *rect_str(const cs_trace_rec_t *x, char *buf, size_t n)
{
  buf[0] = 0;
  if (cs_trace_rec_is_2d(x))
    snprintf(buf, n, " rows %u x %u @ stride %u", x->cell, x->valid / x->cell,
             (uint32_t)x->value);
  return buf;
}

/* A 2-D load, store or put: the span it lies in, then its rows. */
static void describe_rect(char *buf, size_t n, const char *slot,
                          const cs_trace_rec_t *x, const char *post)
{
  char from[16], rs[64];
  unsigned long long off = (unsigned long long)x->elem_off;
  if (x->kind == CS_EV_LOAD && x->peer != x->rank)
    snprintf(from, sizeof(from), "from r%-2u", x->peer);
  else if (x->kind == CS_EV_PUT)
    snprintf(from, sizeof(from), "to r%-4u", x->peer);
  else
    snprintf(from, sizeof(from), "local  ");
  snprintf(buf, n, "%s %s[%llu..%llu)%s valid %u%s", from, slot, off,
           (unsigned long long)cs_trace_rec_end(x),
           rect_str(x, rs, sizeof(rs)), x->valid, post);
}

/* load, store, put: who, which elements. */
static void describe_access(char *buf, size_t n, const cs_layout_t *l,
                            const cs_trace_rec_t *x)
{
  char sn[24], from[16], post[40];
  unsigned long long off = (unsigned long long)x->elem_off;
  const char *slot = cs_trace_slot_name(l, x->slot, sn, sizeof(sn));
  if (cs_trace_rec_is_2d(x)) {
    describe_rect(buf, n, slot, x, posted_str(x, post, sizeof(post)));
  } else if (x->kind == CS_EV_LOAD) {
    if (x->peer == x->rank)
      snprintf(from, sizeof(from), "local  ");
    else
      snprintf(from, sizeof(from), "from r%-2u", x->peer);
    snprintf(buf, n, "%s %s[%llu..%llu) valid %u phys %u", from, slot, off,
             off + x->phys, x->valid, x->phys);
  } else if (x->kind == CS_EV_STORE) {
    snprintf(buf, n, "local   %s[%llu..%llu) valid %u%s", slot, off,
             off + x->valid, x->valid, posted_str(x, post, sizeof(post)));
  } else {
    snprintf(buf, n, "to r%-4u %s[%llu..%llu) valid %u%s%s", x->peer, slot,
             off, off + x->valid, x->valid,
             cs__dev_put_reduces(x->opcmp) ? " atomic add" : "",
             posted_str(x, post, sizeof(post)));
  }
}

static void describe_notify(char *buf, size_t n, const cs_layout_t *l,
                            const cs_trace_rec_t *x)
{
  char sn[24], post[40];
  const char *slot = cs_trace_slot_name(l, x->slot, sn, sizeof(sn));
  if (x->dma_id && cs_trace_rec_is_add(x)) /* "+1", "-1": never "+-1" */
    snprintf(buf, n, "-> r%u %s[%u] %+d%s", x->peer, slot, x->cell, x->value,
             posted_str(x, post, sizeof(post)));
  else if (x->dma_id)
    snprintf(buf, n, "-> r%u %s[%u] = %d%s", x->peer, slot, x->cell, x->value,
             posted_str(x, post, sizeof(post)));
  else if (cs_trace_rec_is_add(x))
    snprintf(buf, n, "-> r%u %s[%u] %+d (now %d)", x->peer, slot, x->cell,
             x->value, x->observed);
  else
    snprintf(buf, n, "-> r%u %s[%u] = %d", x->peer, slot, x->cell, x->value);
}

static void describe_wait(char *buf, size_t n, const cs_layout_t *l,
                          const cs_trace_rec_t *x, const cs_trace_rec_t *begin,
                          const cs_trace_rec_t *by)
{
  char sn[24], us[32];
  int len = snprintf(buf, n, "%s[%u] %s %d saw %d",
                     cs_trace_slot_name(l, x->slot, sn, sizeof(sn)), x->cell,
                     cs_trace_cmp_str(x->opcmp), x->value, x->observed);
  if (begin && len > 0 && (size_t)len < n)
    len += snprintf(buf + len, n - (size_t)len, ", waited %s us",
                    cs_trace_us_str(x->t_ns - begin->t_ns, us, sizeof(us)));
  if (by && len > 0 && (size_t)len < n)
    snprintf(buf + len, n - (size_t)len, ", by #%llu r%u",
             (unsigned long long)by->seq, by->rank);
}

static void describe_dma(char *buf, size_t n, const cs_layout_t *l,
                         const cs_trace_rec_t *x)
{
  char sn[24];
  const char *verb = x->kind == CS_TR_DMA_POST ? "posts" : "lands";
  const char *slot = cs_trace_slot_name(l, x->slot, sn, sizeof(sn));
  unsigned long long id = (unsigned long long)x->dma_id;
  unsigned long long off = (unsigned long long)x->elem_off;
  if (x->kind == CS_TR_DMA_LAND && x->round == CS_EV_NOTIFY &&
      x->phys == 64)
    snprintf(buf, n, "dma #%llu lands notify -> r%u %s[%u] = %d: writes "
             "back its whole line, window bytes [%llu..%llu) (now %d)", id,
             x->peer, slot, x->cell, x->value, off, off + 64, x->observed);
  else if (x->kind == CS_TR_DMA_LAND && x->round == CS_EV_NOTIFY &&
      cs_trace_rec_is_add(x))
    snprintf(buf, n, "dma #%llu %s notify -> r%u %s[%u] %+d (now %d)", id,
             verb, x->peer, slot, x->cell, x->value, x->observed);
  else if (x->round == CS_EV_NOTIFY)
    snprintf(buf, n, "dma #%llu %s notify -> r%u %s[%u] = %d", id, verb,
             x->peer, slot, x->cell, x->value);
  else {
    char rs[64];
    snprintf(buf, n, "dma #%llu %s %s -> r%u %s[%llu..%llu)%s valid %u", id,
             verb,
             x->round == CS_EV_STORE || x->round == CS_EV_PUT
                 ? cs_trace_kind_name(x->round) : "op",
             x->peer, slot, off, (unsigned long long)cs_trace_rec_end(x),
             rect_str(x, rs, sizeof(rs)), x->valid);
  }
}

void cs_trace_describe(char *buf, size_t n, const cs_trace_header_t *h,
                       const cs_trace_names_t *nm, const cs_trace_rec_t *x,
                       const cs_trace_rec_t *begin, const cs_trace_rec_t *by)
{
  char sn[24];
  buf[0] = 0;
  switch (x->kind) {
  case CS_EV_LOAD:
  case CS_EV_STORE:
  case CS_EV_PUT:
    describe_access(buf, n, &h->layout, x);
    break;
  case CS_EV_NOTIFY:
    describe_notify(buf, n, &h->layout, x);
    break;
  case CS_TR_WAIT_BEGIN:
    snprintf(buf, n, "%s[%u] %s %d",
             cs_trace_slot_name(&h->layout, x->slot, sn, sizeof(sn)), x->cell,
             cs_trace_cmp_str(x->opcmp), x->value);
    break;
  case CS_EV_WAIT:
    describe_wait(buf, n, &h->layout, x, begin, by);
    break;
  case CS_EV_FENCE:
    snprintf(buf, n, "pipe barrier + DDR fence");
    break;
  case CS_EV_PIPE:
    snprintf(buf, n, "pipe barrier only (drain)");
    break;
  case CS_EV_DDR:
    snprintf(buf, n, "DDR fence only");
    break;
  case CS_EV_DCCI:
    if ((x->opcmp & ~CS_TR_FAILED) == CS_DCCI_ALL)
      snprintf(buf, n, "clean+invalidate every cached line");
    else
      snprintf(buf, n, "clean+invalidate the line of r%u %s[%llu]", x->peer,
               cs_trace_slot_name(&h->layout, x->slot, sn, sizeof(sn)),
               (unsigned long long)x->elem_off);
    break;
  case CS_EV_READ:
    snprintf(buf, n, "<- r%u %s[%u] read %d", x->peer,
             cs_trace_slot_name(&h->layout, x->slot, sn, sizeof(sn)), x->cell,
             x->observed);
    break;
  case CS_EV_REDUCE:
    snprintf(buf, n, "acc = acc %s recv, %u elements",
             cs_trace_op_name(nm, x->opcmp & ~CS_TR_FAILED), x->valid);
    break;
  case CS_EV_MARK:
    snprintf(buf, n, "phase %s", cs_trace_mark_str(h, nm, x, sn, sizeof(sn)));
    break;
  case CS_TR_DMA_POST:
  case CS_TR_DMA_LAND:
    describe_dma(buf, n, &h->layout, x);
    break;
  case CS_TR_FAULT:
  case CS_TR_ABORT:
    cs_trace_launcher_str(x, buf, n);
    break;
  default:
    break;
  }
}

/* ------------------------------------------------------------ sentence */

/* load, store, put as a sentence. */
static void sentence_access(char *buf, size_t n, int sl, const char *sn,
                            const cs_trace_rec_t *x)
{
  unsigned long long a = (unsigned long long)x->elem_off, b = a + x->valid;
  char rs[64];
  if (cs_trace_rec_is_2d(x)) {
    b = (unsigned long long)cs_trace_rec_end(x);
    snprintf(buf, n, "rank %u: %s %.*s[%llu..%llu)%s%s%s", x->rank,
             cs_trace_kind_name(x->kind), sl, sn, a, b,
             rect_str(x, rs, sizeof(rs)),
             x->peer == x->rank ? "" : x->kind == CS_EV_LOAD ? " from rank "
                                                             : " to rank ",
             "");
    if (x->peer != x->rank) {
      size_t len = strlen(buf);
      snprintf(buf + len, n > len ? n - len : 0, "%u", x->peer);
    }
    return;
  }
  if (x->kind == CS_EV_LOAD && x->peer == x->rank)
    snprintf(buf, n, "rank %u: load %.*s[%llu..%llu) (local)", x->rank, sl, sn,
             a, b);
  else if (x->kind == CS_EV_LOAD)
    snprintf(buf, n, "rank %u: load %.*s[%llu..%llu) from rank %u (%u "
             "physical)", x->rank, sl, sn, a, b, x->peer, x->phys);
  else if (x->kind == CS_EV_STORE)
    snprintf(buf, n, "rank %u: store %.*s[%llu..%llu)", x->rank, sl, sn, a, b);
  else
    snprintf(buf, n, "rank %u: put %.*s[%llu..%llu) to rank %u%s", x->rank,
             sl, sn, a, b, x->peer,
             cs__dev_put_reduces(x->opcmp) ? ", adding into it" : "");
}

/* An op in a rank's DMA queue (round = its kind), as a landing to choose. */
static void sentence_queued(char *buf, size_t n, int sl, const char *sn,
                            const cs_trace_rec_t *x)
{
  unsigned long long a = (unsigned long long)x->elem_off, b = a + x->valid;
  char rs[64];
  if (cs_trace_rec_is_2d(x))
    b = (unsigned long long)cs_trace_rec_end(x);
  if (x->round == CS_EV_NOTIFY && (x->opcmp & ~CS_TR_FAILED) == CS_NOTIFY_SET)
    snprintf(buf, n, "rank %u's DMA: land notify #%llu: rank %u %.*s[%u] = %d",
             x->rank, (unsigned long long)x->dma_id, x->peer, sl, sn, x->cell,
             x->value);
  else if (x->round == CS_EV_NOTIFY)
    snprintf(buf, n, "rank %u's DMA: land notify #%llu: rank %u %.*s[%u] %+d",
             x->rank, (unsigned long long)x->dma_id, x->peer, sl, sn, x->cell,
             x->value);
  else
    snprintf(buf, n, "rank %u's DMA: land %s #%llu: rank %u %.*s[%llu..%llu)%s",
             x->rank, x->round != CS_EV_PUT ? "store"
                      : cs__dev_put_reduces(x->opcmp) ? "adding put" : "put",
             (unsigned long long)x->dma_id, x->peer, sl, sn, a, b,
             rect_str(x, rs, sizeof(rs)));
}

void cs_trace_sentence(char *buf, size_t n, const cs_layout_t *l,
                       const cs_trace_rec_t *x)
{
  const char *sn = x->slot < l->nslots ? l->slot[x->slot].name : "?";
  int sl = (int)CS_SLOT_NAMELEN;
  uint32_t opcmp = x->opcmp & ~CS_TR_FAILED;
  switch (x->kind) {
  case CS_EV_LOAD:
  case CS_EV_STORE:
  case CS_EV_PUT:
    sentence_access(buf, n, sl, sn, x);
    break;
  case CS_EV_NOTIFY:
    snprintf(buf, n, "rank %u: notify rank %u %.*s[%u] %s%d", x->rank, x->peer,
             sl, sn, x->cell,
             opcmp == CS_NOTIFY_ADD ? (x->value >= 0 ? "+" : "") : "= ",
             x->value);
    break;
  case CS_EV_WAIT:
    snprintf(buf, n, "rank %u: wait %.*s[%u] %s %d", x->rank, sl, sn, x->cell,
             cs_trace_cmp_str(opcmp), x->value);
    break;
  case CS_EV_FENCE:
    snprintf(buf, n, "rank %u: fence", x->rank);
    break;
  case CS_EV_PIPE:
    snprintf(buf, n, "rank %u: pipe barrier", x->rank);
    break;
  case CS_EV_DDR:
    snprintf(buf, n, "rank %u: DDR fence", x->rank);
    break;
  case CS_EV_DCCI:
    if (opcmp == CS_DCCI_ALL)
      snprintf(buf, n, "rank %u: dcci every line", x->rank);
    else
      snprintf(buf, n, "rank %u: dcci the line of rank %u %.*s[%llu]", x->rank,
               x->peer, sl, sn, (unsigned long long)x->elem_off);
    break;
  case CS_EV_READ:
    snprintf(buf, n, "rank %u: read rank %u %.*s[%u]", x->rank, x->peer, sl,
             sn, x->cell);
    break;
  case CS_EV_REDUCE:
    snprintf(buf, n, "rank %u: reduce %u elements", x->rank, x->valid);
    break;
  case CS_EV_MARK:
    snprintf(buf, n, "rank %u: enter %s round %d", x->rank,
             x->cell == 1 ? "reduce-scatter/main"
             : x->cell == 2 ? "all-gather" : "phase",
             x->value);
    break;
  case CS_TR_DMA_POST:
    sentence_queued(buf, n, sl, sn, x);
    break;
  case CS_TR_DMA_LAND:
    snprintf(buf, n, "rank %u's DMA lands op #%llu (%s to rank %u)", x->rank,
             (unsigned long long)x->dma_id, cs_trace_kind_name(x->round),
             x->peer);
    break;
  default:
    snprintf(buf, n, "rank %u: %s", x->rank, cs_trace_kind_name(x->kind));
    break;
  }
}
