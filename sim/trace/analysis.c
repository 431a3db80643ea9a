/*
 * analysis.c - the happens-before links of a finished trace and the naming
 * helpers of its fields (analysis.h).
 *
 * Owns: pairing wait-begins with wait-ends, finding the notify that
 * satisfied each wait (from a per-cell index of every cell change with
 * running sums), pairing DMA landings with their posts, and the names.
 * Does not own any output; never touches a live world. Keeps no state
 * between calls: every index lives in the caller's cs_trace_links_t or on
 * the stack of one call.
 * Called by the exporters (export.c), `collsim trace` and the tools that
 * read traces.
 */
#define _GNU_SOURCE
#include "analysis.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ names */

const char *cs_trace_algo_name(const cs_trace_names_t *nm, uint32_t algo)
{
  return nm && nm->algo ? nm->algo(algo) : "?";
}

const char *cs_trace_dtype_name(const cs_trace_names_t *nm, uint32_t dtype)
{
  return nm && nm->dtype ? nm->dtype(dtype) : "?";
}

uint32_t cs_trace_dtype_size(const cs_trace_names_t *nm, uint32_t dtype)
{
  return nm && nm->dtype_size ? nm->dtype_size(dtype) : 0;
}

const char *cs_trace_op_name(const cs_trace_names_t *nm, uint32_t op)
{
  return nm && nm->op ? nm->op(op) : "?";
}

const char *cs_trace_fill_name(const cs_trace_names_t *nm, uint32_t fill)
{
  return nm && nm->fill ? nm->fill(fill) : "?";
}

const char *cs_trace_bug_name(const cs_trace_names_t *nm, uint32_t bug)
{
  return nm && nm->bug ? nm->bug(bug) : "?";
}

/* The i-th string of the header's names (traces/FORMAT.md, names), i
 * from 0, or NULL past the last. NULL for every i when the bytes are not
 * a well-formed table: names of 1..15 bytes '!'..'~' (the barriers' may
 * be empty), each NUL-terminated, zero after the last. */
static const char *user_name(const cs_trace_header_t *h, uint32_t want)
{
  const char *s = h->names, *got = NULL;
  size_t n = sizeof(h->names), at = 0;
  uint32_t i = 0;
  int phases = 1, barriers = 0;
  if (h->program != 0 || h->algo != CS_TRACE_ALGO_USER)
    return NULL;
  while (at < n && barriers < 2) {
    size_t len = strnlen(s + at, n - at);
    if (at + len == n || len > 15)
      return NULL; /* unterminated, or too long */
    for (size_t k = 0; k < len; k++)
      if (s[at + k] < '!' || s[at + k] > '~')
        return NULL;
    if (!phases)
      barriers++;
    else if (!len)
      phases = 0;
    if (i == want && len)
      got = s + at;
    i++;
    at += len + 1;
  }
  for (; at < n; at++)
    if (s[at])
      return NULL;
  return got;
}

/* Index of the first barrier name among the strings: after the phases
 * and their empty terminator. */
static uint32_t user_phases(const cs_trace_header_t *h)
{
  uint32_t p = 0;
  while (user_name(h, p))
    p++;
  return p;
}

const char *cs_trace_phase_name(const cs_trace_names_t *nm,
                                const cs_trace_header_t *h, uint32_t p)
{
  if (h->program == 0 && h->algo == CS_TRACE_ALGO_USER)
    return p >= 1 && p <= user_phases(h) ? user_name(h, p - 1) : NULL;
  return h->program == 0 && nm && nm->phase ? nm->phase(h->algo, p) : NULL;
}

const char *cs_trace_barrier_name(const cs_trace_names_t *nm,
                                  const cs_trace_header_t *h, uint32_t which)
{
  if (which > 1 || h->program != 0)
    return NULL;
  if (h->algo != CS_TRACE_ALGO_USER)
    return nm && nm->barrier ? nm->barrier(h->algo, which) : NULL;
  return user_name(h, user_phases(h) + 1 + which);
}

int cs_trace_user_names(const cs_trace_header_t *h)
{
  return h->algo == CS_TRACE_ALGO_USER &&
         (user_name(h, 0) || cs_trace_barrier_name(NULL, h, 0) ||
          cs_trace_barrier_name(NULL, h, 1));
}

int cs_trace_is_file_fill(const cs_trace_names_t *nm, uint32_t fill)
{
  return nm && nm->is_file_fill && nm->is_file_fill(fill);
}

const char *cs_trace_slot_name(const cs_layout_t *l, uint32_t slot, char *buf,
                               size_t n)
{
  if (slot >= l->nslots) {
    snprintf(buf, n, "slot%u", slot);
    return buf;
  }
  const char *s = l->slot[slot].name;
  size_t i = 0;
  for (; i + 1 < n && i < CS_SLOT_NAMELEN && s[i]; i++)
    buf[i] = (s[i] > 32 && s[i] < 127) ? s[i] : '?';
  buf[i] = 0;
  if (i == 0)
    snprintf(buf, n, "slot%u", slot);
  return buf;
}

void cs_trace_field_str(const char *s, size_t cap, char *buf, size_t n)
{
  size_t i = 0;
  for (; i + 1 < n && i < cap && s[i]; i++)
    buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
  buf[i] = 0;
}

const char *cs_trace_model_name(uint32_t m)
{
  return cs_tr_model_name(m);
}

const char *cs_trace_abort_name(int32_t r)
{
  switch (r) {
  case CS_ABORT_FAULT: return "fault";
  case CS_ABORT_TIMEOUT: return "wait timeout";
  case CS_ABORT_CRASH: return "a rank died";
  case CS_ABORT_SIGNAL: return "launcher interrupted";
  case CS_ABORT_PEER: return "peer aborted";
  case CS_ABORT_WRONG: return "rank-side check failed";
  case CS_ABORT_DEADLOCK: return "deadlock: no actor can run";
  case CS_ABORT_DIVERGED: return "replay diverged from the recorded schedule";
  default: return "unknown reason";
  }
}

const char *cs_trace_exit_meaning(int32_t st)
{
  switch (st) {
  case CS_RX_FAULT: return "out-of-slot fault or bad device-API argument";
  case CS_RX_TIMEOUT: return "wait timeout";
  case CS_RX_HUNG: return "hung (injected fault)";
  case CS_RX_ERROR: return "internal error";
  case CS_FAULT_EXIT_STATUS: return "injected exit";
  case CS_RX_EARLY: return "exit(0) before its body returned";
  default: return "non-zero exit";
  }
}

/* ------------------------------------------------------------ notifies */

/* Every record at which a notify changed a cell, grouped by cell (peer,
 * slot, cell) and in sequence order inside a group, with running sums over
 * the group so the value of a cell before any seq is found by binary
 * search. Positions p index ix[] (and the arrays beside it). */
typedef struct notify_ix {
  const cs_trace_rec_t *rec;
  int64_t *ix;       /* record indices sorted by (peer, slot, cell, seq) */
  uint64_t n;        /* entries */
  int64_t *own;      /* inclusive running sum of the cell owner's adds */
  int64_t *remote;   /* inclusive running sum of other ranks' adds */
  int64_t *lastset;  /* position of the last Set at or before p, -1 none */
  uint8_t *monotone; /* at a group's first position: every remote add > 0 */
} notify_ix_t;

static int key_cmp(const cs_trace_rec_t *a, const cs_trace_rec_t *b)
{
  if (a->peer != b->peer)
    return a->peer < b->peer ? -1 : 1;
  if (a->slot != b->slot)
    return a->slot < b->slot ? -1 : 1;
  if (a->cell != b->cell)
    return a->cell < b->cell ? -1 : 1;
  return 0;
}

/* qsort_r order of record indices by cell, then index (= seq order). */
static int cmp_notify(const void *pa, const void *pb, void *rec)
{
  const cs_trace_rec_t *r = rec;
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  int c = key_cmp(&r[a], &r[b]);
  return c ? c : (a < b ? -1 : a > b);
}

/* A record at which a notify changed its cell: a notify that landed at
 * issue (free mode, sc), or the DMA landing of a posted one (controlled
 * fifo/relaxed: the notify record itself only queued it). */
static int changes_cell(const cs_trace_rec_t *x)
{
  if (x->kind == CS_EV_NOTIFY)
    return x->dma_id == 0 && !(x->opcmp & CS_TR_FAILED);
  return x->kind == CS_TR_DMA_LAND && x->round == CS_EV_NOTIFY;
}

/* First position whose record sorts at or after (the cell of wait-end w,
 * seq). */
static uint64_t lower_bound(const notify_ix_t *ni, const cs_trace_rec_t *w,
                            uint64_t seq)
{
  cs_trace_rec_t key = {.peer = w->rank, .slot = w->slot, .cell = w->cell};
  uint64_t lo = 0, hi = ni->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    const cs_trace_rec_t *x = &ni->rec[ni->ix[mid]];
    int c = key_cmp(x, &key);
    if (c < 0 || (c == 0 && x->seq < seq))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int satisfies(uint32_t cmp, int64_t v, int64_t target)
{
  return (cmp & ~CS_TR_FAILED) == CS_CMP_EQ ? v == target : v >= target;
}

/* The first position in [start, e) at which the cell's value, base + own
 * plus the remote adds since start, satisfies wait w; e if none. */
static uint64_t first_satisfying(const notify_ix_t *ni, const cs_trace_rec_t *w,
                                 uint64_t gs, uint64_t start, uint64_t e,
                                 int64_t before)
{
  int64_t r0 = start > gs ? ni->remote[start - 1] : 0;
  if (ni->monotone[gs] && (w->opcmp & ~CS_TR_FAILED) == CS_CMP_GE) {
    uint64_t lo = start, hi = e;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (before + ni->remote[mid] - r0 >= w->value)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  }
  for (uint64_t j = start; j < e; j++)
    if (ni->rec[ni->ix[j]].rank != w->rank &&
        satisfies(w->opcmp, before + ni->remote[j] - r0, w->value))
      return j;
  return e;
}

/* The notify that satisfied wait-end w: the cell's value is the last Set
 * before it (or 0) plus the owner's own adds before the wait (the
 * self-clearing epilogue's subtractions are in program order) plus the
 * other ranks' adds in sequence order; the satisfier is the remote add that
 * brought that sum to the wait's target. Falls back to the latest remote
 * notify before the wait. Returns a record index or -1. */
static int64_t find_satisfier(const notify_ix_t *ni, const cs_trace_rec_t *w)
{
  uint64_t gs = lower_bound(ni, w, 0), e = lower_bound(ni, w, w->seq);
  if (e == gs)
    return -1;
  int64_t b = ni->lastset[e - 1];
  uint64_t start = b >= 0 ? (uint64_t)b + 1 : gs;
  int64_t base = b >= 0 ? ni->rec[ni->ix[b]].value : 0;
  int64_t own = ni->own[e - 1] - (start > gs ? ni->own[start - 1] : 0);
  if (satisfies(w->opcmp, base + own, w->value))
    return b >= 0 && ni->rec[ni->ix[b]].rank != w->rank ? ni->ix[b] : -1;
  uint64_t k = first_satisfying(ni, w, gs, start, e, base + own);
  if (k < e)
    return ni->ix[k];
  for (uint64_t j = e; j-- > gs;)
    if (ni->rec[ni->ix[j]].rank != w->rank)
      return ni->ix[j];
  return -1;
}

/* The running sums of position p from those of p - 1 in its group. */
static void accumulate(notify_ix_t *ni, uint64_t p, int first, uint64_t gs)
{
  const cs_trace_rec_t *x = &ni->rec[ni->ix[p]];
  int64_t own = first ? 0 : ni->own[p - 1];
  int64_t rem = first ? 0 : ni->remote[p - 1];
  int64_t ls = first ? -1 : ni->lastset[p - 1];
  uint8_t mono = first ? 1 : ni->monotone[gs];
  if (!cs_trace_rec_is_add(x))
    ls = (int64_t)p;
  else if (x->rank == x->peer)
    own += x->value;
  else {
    rem += x->value;
    if (x->value <= 0)
      mono = 0;
  }
  ni->own[p] = own;
  ni->remote[p] = rem;
  ni->lastset[p] = ls;
  ni->monotone[gs] = mono;
}

static void free_notify_ix(notify_ix_t *ni)
{
  free(ni->ix);
  free(ni->own);
  free(ni->remote);
  free(ni->lastset);
  free(ni->monotone);
  memset(ni, 0, sizeof(*ni));
}

static int build_notify_ix(const cs_trace_t *t, notify_ix_t *ni)
{
  memset(ni, 0, sizeof(*ni));
  ni->rec = t->rec;
  for (uint64_t i = 0; i < t->n; i++)
    ni->n += changes_cell(&t->rec[i]);
  size_t m = ni->n ? ni->n : 1;
  ni->ix = malloc(m * sizeof(int64_t));
  ni->own = malloc(m * sizeof(int64_t));
  ni->remote = malloc(m * sizeof(int64_t));
  ni->lastset = malloc(m * sizeof(int64_t));
  ni->monotone = malloc(m);
  if (!ni->ix || !ni->own || !ni->remote || !ni->lastset || !ni->monotone) {
    free_notify_ix(ni);
    return -ENOMEM;
  }
  uint64_t j = 0;
  for (uint64_t i = 0; i < t->n; i++)
    if (changes_cell(&t->rec[i]))
      ni->ix[j++] = (int64_t)i;
  qsort_r(ni->ix, ni->n, sizeof(int64_t), cmp_notify, (void *)t->rec);
  uint64_t gs = 0;
  for (uint64_t p = 0; p < ni->n; p++) {
    int first = p == 0 || key_cmp(&t->rec[ni->ix[p - 1]], &t->rec[ni->ix[p]]) != 0;
    if (first)
      gs = p;
    accumulate(ni, p, first, gs);
  }
  return 0;
}

/* ------------------------------------------------------------ DMA */

/* DMA ids count per posting rank: a post is keyed by (rank, dma_id). */
static int dma_key_cmp(const cs_trace_rec_t *a, const cs_trace_rec_t *b)
{
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->dma_id != b->dma_id)
    return a->dma_id < b->dma_id ? -1 : 1;
  return 0;
}

static int cmp_dma(const void *pa, const void *pb, void *rec)
{
  const cs_trace_rec_t *r = rec;
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  int c = dma_key_cmp(&r[a], &r[b]);
  return c ? c : (a < b ? -1 : a > b);
}

/* A record that queued an op for the DMA engine. */
static int is_post(const cs_trace_rec_t *x)
{
  return x->kind == CS_TR_DMA_POST ||
         (x->dma_id != 0 && x->kind != CS_TR_DMA_LAND &&
          !cs_trace_rec_is_launcher(x));
}

/* post[] of every dma-land: the latest post of that (rank, id) before it.
 * posts: the indices of every post record, npost of them (reordered). */
static void link_posts(cs_trace_links_t *l, const cs_trace_t *t,
                       int64_t *posts, uint64_t npost)
{
  qsort_r(posts, npost, sizeof(int64_t), cmp_dma, (void *)t->rec);
  for (uint64_t i = 0; i < t->n; i++) {
    if (t->rec[i].kind != CS_TR_DMA_LAND)
      continue;
    const cs_trace_rec_t *x = &t->rec[i];
    uint64_t lo = 0, hi = npost;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (dma_key_cmp(&t->rec[posts[mid]], x) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    int64_t best = -1;
    for (uint64_t j = lo; j < npost && !dma_key_cmp(&t->rec[posts[j]], x); j++)
      if (posts[j] < (int64_t)i)
        best = posts[j];
    l->post[i] = best;
  }
}

/* ------------------------------------------------------------ links */

void cs_trace_links_fini(cs_trace_links_t *l)
{
  free(l->pair);
  free(l->satisfier);
  free(l->post);
  memset(l, 0, sizeof(*l));
}

/* One pass in seq order: the time span, wait pairs and satisfiers; the
 * indices of the post records into posts[], their count returned.
 * open[r]: rank r's wait-begin not yet closed, -1 none. */
static uint64_t link_waits(cs_trace_links_t *l, const cs_trace_t *t,
                           const notify_ix_t *ni, int64_t *open,
                           int64_t *posts)
{
  uint64_t npost = 0;
  for (uint32_t r = 0; r < t->hdr.nranks; r++)
    open[r] = -1;
  l->start_ns = t->n ? UINT64_MAX : 0;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    l->pair[i] = l->satisfier[i] = l->post[i] = -1;
    if (x->t_ns > l->end_ns)
      l->end_ns = x->t_ns;
    if (x->t_ns < l->start_ns)
      l->start_ns = x->t_ns;
    if (x->kind == CS_TR_WAIT_BEGIN) {
      open[x->rank] = (int64_t)i;
    } else if (x->kind == CS_EV_WAIT) {
      int64_t b = open[x->rank];
      if (b >= 0 && t->rec[b].slot == x->slot && t->rec[b].cell == x->cell) {
        l->pair[i] = b;
        l->pair[b] = (int64_t)i;
      }
      open[x->rank] = -1;
      if (!(x->opcmp & CS_TR_FAILED))
        l->satisfier[i] = find_satisfier(ni, x);
    }
    if (is_post(x))
      posts[npost++] = (int64_t)i;
  }
  return npost;
}

int cs_trace_links_init(cs_trace_links_t *l, const cs_trace_t *t)
{
  size_t m = t->n ? t->n : 1;
  memset(l, 0, sizeof(*l));
  l->pair = malloc(m * sizeof(int64_t));
  l->satisfier = malloc(m * sizeof(int64_t));
  l->post = malloc(m * sizeof(int64_t));
  int64_t *open = malloc((t->hdr.nranks ? t->hdr.nranks : 1) * sizeof(int64_t));
  int64_t *posts = malloc(m * sizeof(int64_t));
  notify_ix_t ni;
  int rc = build_notify_ix(t, &ni);
  if (!l->pair || !l->satisfier || !l->post || !open || !posts || rc < 0) {
    free(open);
    free(posts);
    free_notify_ix(&ni);
    cs_trace_links_fini(l);
    return -ENOMEM;
  }
  l->n = t->n;
  uint64_t npost = link_waits(l, t, &ni, open, posts);
  link_posts(l, t, posts, npost);
  free(open);
  free(posts);
  free_notify_ix(&ni);
  return 0;
}
