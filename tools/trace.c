/*
 * trace.c - `collsim trace FILE`: shows a recorded transfer log (format:
 * sim/trace.h, traces/FORMAT.md) as aligned text, JSON lines, or Chrome
 * Trace Event JSON for Perfetto, or summarises it per rank (--stats).
 *
 * Owns: the presentation of a finished trace and the few derived facts a
 * reader needs: which wait-begin a wait-end closes, which notify satisfied
 * a wait (the flow arrows), which dma-post a dma-land delivers, and the
 * per-rank byte and wait totals checked against the algorithms' volumes.
 * Does not own the format or its validation (sim/trace_read.c: every file
 * is loaded whole or refused with one line) and never touches a live world.
 * Called by main.c's subcommand table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../collectives/allreduce.h"
#include "../collectives/bugs.h"
#include "../collectives/geometry.h"
#include "cli.h"

static const char trace_help[] =
    "usage: collsim trace [--format text|jsonl|chrome] [--stats] [--rank R]\n"
    "                     [--kind K[,K...]] [--from SEQ] [--to SEQ] [-o OUT]\n"
    "                     FILE\n"
    "\n"
    "Shows a trace recorded with 'collsim run|ping --trace FILE': every load,\n"
    "store, put, notify, wait, fence, reduce and phase marker of every rank in\n"
    "causal (sequence-number) order, and how a crashed run ended.\n"
    "\n"
    "  --format text    a header block (the run's configuration and slot\n"
    "                   table), then one aligned line per event (default)\n"
    "  --format jsonl   one JSON object per line: the header first, then\n"
    "                   every field of every event\n"
    "  --format chrome  Chrome Trace Event JSON: open it in Perfetto\n"
    "                   (ui.perfetto.dev, Open trace file) or chrome://tracing;\n"
    "                   a process per rank, lanes control/compute/signal/dma,\n"
    "                   waits as slices, arrows from each notify to the wait\n"
    "                   it satisfied and from each DMA post to its landing\n"
    "  --stats          per rank instead of the events: bytes loaded locally\n"
    "                   and remotely, bytes stored, notifies, waits, total and\n"
    "                   longest wait; for ring, mesh and host runs the remote\n"
    "                   bytes against the algorithm's volume (text or jsonl)\n"
    "  --rank R         only events of rank R\n"
    "  --kind K,...     only these kinds: load, store, put, notify, wait-begin,\n"
    "                   wait-end (or wait for both), fence, reduce, mark,\n"
    "                   dma-post, dma-land, fault, abort\n"
    "  --from SEQ       only events with sequence number >= SEQ\n"
    "  --to SEQ         only events with sequence number <= SEQ\n"
    "  -o, --output OUT write to OUT instead of standard output\n"
    "\n"
    "Exit status: 0 success, 2 bad usage or a file that is not a valid\n"
    "trace (one line saying why: empty, truncated, wrong magic, newer format\n"
    "version, corrupt header or record N), 3 out of memory or the output\n"
    "could not be written.\n";

enum { FMT_TEXT = 0, FMT_JSONL, FMT_CHROME };
enum { OPT_FORMAT = 3000, OPT_STATS, OPT_RANK, OPT_KIND, OPT_FROM, OPT_TO };

/* Lanes (Chrome tids) of a rank. */
enum { LANE_CONTROL = 0, LANE_COMPUTE = 1, LANE_SIGNAL = 2, LANE_DMA = 3,
       NLANES = 4 };
static const char *const lane_names[NLANES] = {"control", "compute", "signal",
                                               "dma"};

typedef struct trace_opts {
  const char *path;
  const char *out;
  int         format;
  int         stats;
  int         has_rank;
  uint32_t    rank;
  uint32_t    kinds; /* bit k set: kind k shown; 0 = every kind */
  uint64_t    from, to;
} trace_opts_t;

/* What the records mean together, derived once after loading. Indices are
 * into t->rec (sorted by seq); -1 = none. */
typedef struct derived {
  int64_t *pair;      /* wait-begin <-> wait-end of the same wait */
  int64_t *satisfier; /* wait-end: the notify that satisfied it */
  int64_t *post;      /* dma-land: its dma-post */
  uint64_t start_ns;  /* smallest t_ns: times are shown from here */
  uint64_t end_ns;    /* largest t_ns */
} derived_t;

/* ------------------------------------------------------------ options */

static int parse_kinds(const char *s, uint32_t *mask)
{
  const char *p = s;
  *mask = 0;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    uint32_t bits = 0;
    if (len == 4 && !strncmp(p, "wait", 4))
      bits = 1u << CS_EV_WAIT | 1u << CS_TR_WAIT_BEGIN;
    for (uint32_t k = 1; k < CS_TR_NKINDS && !bits; k++) {
      const char *name = cs_trace_kind_name(k);
      if (strlen(name) == len && !strncmp(p, name, len))
        bits = 1u << k;
    }
    if (!bits) {
      cs_cli_error("trace", "--kind '%s' is not accepted: expected a comma "
                   "list of load, store, put, notify, wait-begin, wait-end, "
                   "wait, fence, reduce, mark, dma-post, dma-land, fault, "
                   "abort", s);
      return -1;
    }
    *mask |= bits;
    if (!e)
      break;
    p = e + 1;
    if (!*p) {
      cs_cli_error("trace", "--kind '%s' is not accepted: empty name after "
                   "a comma", s);
      return -1;
    }
  }
  if (!*mask) {
    cs_cli_error("trace", "--kind '' is not accepted: expected a kind name");
    return -1;
  }
  return 0;
}

static int parse(int argc, char **argv, trace_opts_t *o)
{
  static const struct option longopts[] = {
      {"format", required_argument, 0, OPT_FORMAT},
      {"stats", no_argument, 0, OPT_STATS},
      {"rank", required_argument, 0, OPT_RANK},
      {"kind", required_argument, 0, OPT_KIND},
      {"from", required_argument, 0, OPT_FROM},
      {"to", required_argument, 0, OPT_TO},
      {"output", required_argument, 0, 'o'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int opt;
  o->to = UINT64_MAX;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (opt) {
    case OPT_FORMAT:
      if (!strcmp(optarg, "text"))
        o->format = FMT_TEXT;
      else if (!strcmp(optarg, "jsonl"))
        o->format = FMT_JSONL;
      else if (!strcmp(optarg, "chrome"))
        o->format = FMT_CHROME;
      else {
        cs_cli_error("trace", "--format '%s' is not accepted: expected text, "
                     "jsonl or chrome", optarg);
        return -1;
      }
      break;
    case OPT_STATS: o->stats = 1; break;
    case OPT_RANK:
      if (cs_cli_u32("trace", "--rank", optarg, 0, CS_MAX_RANKS - 1, &o->rank) < 0)
        return -1;
      o->has_rank = 1;
      break;
    case OPT_KIND:
      if (parse_kinds(optarg, &o->kinds) < 0)
        return -1;
      break;
    case OPT_FROM:
      if (cs_cli_u64("trace", "--from", optarg, 0, UINT64_MAX - 1, &o->from) < 0)
        return -1;
      break;
    case OPT_TO:
      if (cs_cli_u64("trace", "--to", optarg, 0, UINT64_MAX - 1, &o->to) < 0)
        return -1;
      break;
    case 'o':
      if (!*optarg) {
        cs_cli_error("trace", "-o '' is not accepted: expected a file name");
        return -1;
      }
      o->out = optarg;
      break;
    case 'h':
      fputs(trace_help, stdout);
      return 1;
    default:
      fprintf(stderr, "Try 'collsim trace --help'.\n");
      return -1;
    }
  }
  if (optind >= argc) {
    cs_cli_error("trace", "missing FILE: the trace to show (see 'collsim "
                 "trace --help')");
    return -1;
  }
  if (optind + 1 < argc) {
    cs_cli_error("trace", "unexpected argument '%s'", argv[optind + 1]);
    return -1;
  }
  o->path = argv[optind];
  if (o->from > o->to) {
    cs_cli_error("trace", "--from %llu is after --to %llu: expected an "
                 "ascending range", (unsigned long long)o->from,
                 (unsigned long long)o->to);
    return -1;
  }
  if (o->stats && o->format == FMT_CHROME) {
    cs_cli_error("trace", "--stats is not accepted with --format chrome: "
                 "expected text or jsonl");
    return -1;
  }
  return 0;
}

/* ------------------------------------------------------------ naming */

static int is_launcher_rec(const cs_trace_rec_t *x)
{
  return x->kind == CS_TR_FAULT || x->kind == CS_TR_ABORT;
}

static int shown(const trace_opts_t *o, const cs_trace_rec_t *x)
{
  if (o->has_rank && x->rank != o->rank)
    return 0;
  if (o->kinds && !(o->kinds & (1u << x->kind)))
    return 0;
  return x->seq >= o->from && x->seq <= o->to;
}

/* A slot's name, printable whatever the file holds. */
static const char *slot_name(const cs_trace_header_t *h, uint32_t slot,
                             char *buf, size_t n)
{
  if (slot >= h->layout.nslots) {
    snprintf(buf, n, "slot%u", slot);
    return buf;
  }
  const char *s = h->layout.slot[slot].name;
  size_t i = 0;
  for (; i + 1 < n && i < CS_SLOT_NAMELEN && s[i]; i++)
    buf[i] = (s[i] > 32 && s[i] < 127) ? s[i] : '?';
  buf[i] = 0;
  if (i == 0)
    snprintf(buf, n, "slot%u", slot);
  return buf;
}

/* A fixed char field of the header, printable. */
static void field_str(const char *s, size_t cap, char *buf, size_t n)
{
  size_t i = 0;
  for (; i + 1 < n && i < cap && s[i]; i++)
    buf[i] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
  buf[i] = 0;
}

static const char *model_name(uint32_t m)
{
  static const char *const n[] = {"sc", "fifo", "relaxed"};
  return m < 3 ? n[m] : "?";
}

static const char *abort_name(int32_t r)
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

static const char *exit_meaning(int32_t st)
{
  switch (st) {
  case CS_RX_FAULT: return "out-of-slot fault or bad device-API argument";
  case CS_RX_TIMEOUT: return "wait timeout";
  case CS_RX_ERROR: return "internal error";
  case CS_FAULT_EXIT_STATUS: return "injected exit";
  default: return "non-zero exit";
  }
}

static const char *bug_name(uint32_t bug)
{
  return bug < CS_NBUGS ? cs_bug_table[bug].name : "?";
}

static int is_ring(const cs_trace_header_t *h)
{
  return h->program == 0 && h->algo == CS_ALGO_RING;
}

/* "RS t0 j1" (ring), "main c3" (mesh, host), "" before any marker. */
static const char *tag_str(const cs_trace_header_t *h, const cs_trace_rec_t *x,
                           char *buf, size_t n)
{
  if (x->phase == 0 || is_launcher_rec(x))
    buf[0] = 0;
  else if (is_ring(h))
    snprintf(buf, n, "%s t%u j%u", x->phase == 1 ? "RS" : x->phase == 2 ? "AG" : "P?",
             x->round, x->step);
  else
    snprintf(buf, n, "main c%u", x->step);
  return buf;
}

/* Name of a phase marker: "RS t0", "AG t2", "main". */
static const char *mark_str(const cs_trace_header_t *h, const cs_trace_rec_t *x,
                            char *buf, size_t n)
{
  if (is_ring(h) && (x->cell == 1 || x->cell == 2))
    snprintf(buf, n, "%s t%d", x->cell == 1 ? "RS" : "AG", x->value);
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

/* One line (no newline) describing a fault or abort record. */
static void launcher_str(const cs_trace_rec_t *x, char *buf, size_t n)
{
  char sb[32];
  if (x->kind == CS_TR_FAULT && x->step == 1)
    snprintf(buf, n, "rank %u killed by %s at event %u", x->rank,
             sig_name(x->value, sb, sizeof(sb)), (uint32_t)x->observed);
  else if (x->kind == CS_TR_FAULT)
    snprintf(buf, n, "rank %u exited with status %d (%s) at event %u", x->rank,
             x->value, exit_meaning(x->value), (uint32_t)x->observed);
  else if (x->rank == UINT32_MAX)
    snprintf(buf, n, "run aborted by the launcher (%s)", abort_name(x->value));
  else
    snprintf(buf, n, "run aborted (%s), first failing rank %u",
             abort_name(x->value), x->rank);
}

static uint32_t lane_of(uint32_t kind)
{
  switch (kind) {
  case CS_EV_LOAD: case CS_EV_STORE: case CS_EV_PUT: case CS_EV_FENCE:
  case CS_EV_REDUCE:
    return LANE_COMPUTE;
  case CS_EV_NOTIFY: case CS_EV_WAIT: case CS_TR_WAIT_BEGIN:
    return LANE_SIGNAL;
  case CS_TR_DMA_POST: case CS_TR_DMA_LAND:
    return LANE_DMA;
  default:
    return LANE_CONTROL;
  }
}

/* "12.345" microseconds from nanoseconds, exactly. */
static const char *us_str(uint64_t ns, char *buf, size_t n)
{
  snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ns / 1000),
           (unsigned long long)(ns % 1000));
  return buf;
}

/* ------------------------------------------------------------ derived */

typedef struct notify_ix {
  const cs_trace_rec_t *rec;
  int64_t *ix;     /* notify record indices sorted by (peer, slot, cell, seq) */
  uint64_t n;
  int64_t *own;    /* inclusive running sum of the owner's AtomicAdds */
  int64_t *remote; /* inclusive running sum of other ranks' AtomicAdds */
  int64_t *lastset;/* position of the last Set at or before, -1 none */
  uint8_t *monotone; /* the cell's remote adds are all positive */
} notify_ix_t;

static const cs_trace_rec_t *sort_rec; /* qsort has no context argument */

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

static int cmp_notify(const void *pa, const void *pb)
{
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  int c = key_cmp(&sort_rec[a], &sort_rec[b]);
  return c ? c : (a < b ? -1 : a > b);
}

static int is_add(const cs_trace_rec_t *x)
{
  return (x->opcmp & ~CS_TR_FAILED) == CS_NOTIFY_ADD;
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

/* First position in the index whose notify sorts at or after (the cell of
 * wait-end w, seq). */
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
  int64_t r0 = start > gs ? ni->remote[start - 1] : 0;
  int64_t target = w->value;
  if (satisfies(w->opcmp, base + own, target))
    return b >= 0 && ni->rec[ni->ix[b]].rank != w->rank ? ni->ix[b] : -1;
  uint64_t k = e;
  if (ni->monotone[gs] && (w->opcmp & ~CS_TR_FAILED) == CS_CMP_GE) {
    uint64_t lo = start, hi = e;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (base + own + ni->remote[mid] - r0 >= target)
        hi = mid;
      else
        lo = mid + 1;
    }
    k = lo;
  } else {
    for (uint64_t j = start; j < e; j++)
      if (ni->rec[ni->ix[j]].rank != w->rank &&
          satisfies(w->opcmp, base + own + ni->remote[j] - r0, target)) {
        k = j;
        break;
      }
  }
  if (k < e)
    return ni->ix[k];
  for (uint64_t j = e; j-- > gs;)
    if (ni->rec[ni->ix[j]].rank != w->rank)
      return ni->ix[j];
  return -1;
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
  if (!ni->ix || !ni->own || !ni->remote || !ni->lastset || !ni->monotone)
    return -1;
  uint64_t j = 0;
  for (uint64_t i = 0; i < t->n; i++)
    if (changes_cell(&t->rec[i]))
      ni->ix[j++] = (int64_t)i;
  sort_rec = t->rec;
  qsort(ni->ix, ni->n, sizeof(int64_t), cmp_notify);
  uint64_t gs = 0;
  for (uint64_t p = 0; p < ni->n; p++) {
    const cs_trace_rec_t *x = &t->rec[ni->ix[p]];
    int first = p == 0 || key_cmp(&t->rec[ni->ix[p - 1]], x) != 0;
    if (first)
      gs = p;
    int64_t own = first ? 0 : ni->own[p - 1];
    int64_t rem = first ? 0 : ni->remote[p - 1];
    int64_t ls = first ? -1 : ni->lastset[p - 1];
    uint8_t mono = first ? 1 : ni->monotone[gs];
    if (!is_add(x))
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
  return 0;
}

static void free_notify_ix(notify_ix_t *ni)
{
  free(ni->ix);
  free(ni->own);
  free(ni->remote);
  free(ni->lastset);
  free(ni->monotone);
}

/* DMA ids count per posting rank: a post is keyed by (rank, dma_id). */
static int dma_key_cmp(const cs_trace_rec_t *a, const cs_trace_rec_t *b)
{
  if (a->rank != b->rank)
    return a->rank < b->rank ? -1 : 1;
  if (a->dma_id != b->dma_id)
    return a->dma_id < b->dma_id ? -1 : 1;
  return 0;
}

static int cmp_dma(const void *pa, const void *pb)
{
  int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
  int c = dma_key_cmp(&sort_rec[a], &sort_rec[b]);
  return c ? c : (a < b ? -1 : a > b);
}

/* A record that queued an op for the DMA engine. */
static int is_post(const cs_trace_rec_t *x)
{
  return x->kind == CS_TR_DMA_POST ||
         (x->dma_id != 0 && x->kind != CS_TR_DMA_LAND && !is_launcher_rec(x));
}

static void derived_free(derived_t *d)
{
  free(d->pair);
  free(d->satisfier);
  free(d->post);
}

static int derive(const cs_trace_t *t, derived_t *d)
{
  uint64_t n = t->n, nr = t->hdr.nranks;
  size_t m = n ? n : 1;
  memset(d, 0, sizeof(*d));
  d->pair = malloc(m * sizeof(int64_t));
  d->satisfier = malloc(m * sizeof(int64_t));
  d->post = malloc(m * sizeof(int64_t));
  int64_t *open = malloc(nr * sizeof(int64_t));
  int64_t *posts = malloc(m * sizeof(int64_t));
  notify_ix_t ni;
  int rc = build_notify_ix(t, &ni);
  if (!d->pair || !d->satisfier || !d->post || !open || !posts || rc < 0) {
    free(open);
    free(posts);
    free_notify_ix(&ni);
    derived_free(d);
    return -1;
  }
  for (uint64_t r = 0; r < nr; r++)
    open[r] = -1;
  uint64_t npost = 0;
  d->start_ns = n ? UINT64_MAX : 0;
  for (uint64_t i = 0; i < n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    d->pair[i] = d->satisfier[i] = d->post[i] = -1;
    if (x->t_ns > d->end_ns)
      d->end_ns = x->t_ns;
    if (x->t_ns < d->start_ns)
      d->start_ns = x->t_ns;
    if (x->kind == CS_TR_WAIT_BEGIN) {
      open[x->rank] = (int64_t)i;
    } else if (x->kind == CS_EV_WAIT) {
      int64_t b = open[x->rank];
      if (b >= 0 && t->rec[b].slot == x->slot && t->rec[b].cell == x->cell) {
        d->pair[i] = b;
        d->pair[b] = (int64_t)i;
      }
      open[x->rank] = -1;
      if (!(x->opcmp & CS_TR_FAILED))
        d->satisfier[i] = find_satisfier(&ni, x);
    }
    if (is_post(x))
      posts[npost++] = (int64_t)i;
  }
  sort_rec = t->rec;
  qsort(posts, npost, sizeof(int64_t), cmp_dma);
  for (uint64_t i = 0; i < n; i++) {
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
    /* The latest post of that (rank, id) before the landing. */
    int64_t best = -1;
    for (uint64_t j = lo; j < npost && !dma_key_cmp(&t->rec[posts[j]], x); j++)
      if (posts[j] < (int64_t)i)
        best = posts[j];
    d->post[i] = best;
  }
  free(open);
  free(posts);
  free_notify_ix(&ni);
  return 0;
}

/* ------------------------------------------------------------ text */

static void text_header(FILE *f, const cs_trace_t *t, const trace_opts_t *o,
                        uint64_t nshown)
{
  const cs_trace_header_t *h = &t->hdr;
  char sched[80], ver[24], nb[24];
  field_str(h->schedule, sizeof(h->schedule), sched, sizeof(sched));
  field_str(h->version_str, sizeof(h->version_str), ver, sizeof(ver));
  fprintf(f, "collsim trace %s: format v%u, recorded by collsim %s\n", o->path,
          h->version, ver[0] ? ver : "?");
  if (h->program == 1) {
    fprintf(f, "  program   ping, %u rank%s, %u round%s\n", h->nranks,
            h->nranks == 1 ? "" : "s", h->rounds, h->rounds == 1 ? "" : "s");
  } else {
    uint32_t es = cs_dtype_size((cs_dtype_t)h->dtype);
    fprintf(f, "  program   allreduce %s, %u rank%s, count %llu x %s (%llu B "
            "per rank), op %s\n", cs_algo_name((cs_algo_t)h->algo), h->nranks,
            h->nranks == 1 ? "" : "s", (unsigned long long)h->count,
            cs_dtype_name((cs_dtype_t)h->dtype),
            (unsigned long long)(h->count * es), cs_op_name((cs_op_t)h->op));
    if (h->fill == CS_FILL_INPUT)
      fprintf(f, "  input     from a file, input hash 0x%016llx\n",
              (unsigned long long)h->input_hash);
    else
      fprintf(f, "  input     fill %s, seed %llu, input hash 0x%016llx\n",
              cs_fill_name((cs_fill_t)h->fill), (unsigned long long)h->seed,
              (unsigned long long)h->input_hash);
    fprintf(f, "  run       tile %u B, %u call%s, bug %s\n", h->tile_bytes,
            h->iters, h->iters == 1 ? "" : "s", bug_name(h->bug));
  }
  if (h->fault_kind)
    fprintf(f, "  fault     injected: rank %u, %s at event %llu\n", h->fault_rank,
            cs_fault_kind_name((cs_fault_kind_t)h->fault_kind),
            (unsigned long long)h->fault_event);
  fprintf(f, "  schedule  %s, memory model %s, wait timeout %.1f s\n",
          sched[0] ? sched : "?", model_name(h->memory_model),
          (double)h->timeout_ns / 1e9);
  fprintf(f, "  slots     %-2s %-16s %10s %10s %10s %5s\n", "#", "name",
          "offset", "bytes", "alloc", "esize");
  for (uint32_t s = 0; s < h->layout.nslots; s++) {
    const cs_slot_t *sl = &h->layout.slot[s];
    fprintf(f, "            %-2u %-16s %10llu %10llu %10llu %5u\n", s,
            slot_name(h, s, nb, sizeof(nb)), (unsigned long long)sl->off,
            (unsigned long long)sl->nbytes, (unsigned long long)sl->alloc,
            sl->esize);
  }
  char us[32];
  if (t->n)
    fprintf(f, "  events    %llu records, seq %llu..%llu, %s us; shown %llu\n",
            (unsigned long long)t->n, (unsigned long long)t->rec[0].seq,
            (unsigned long long)t->rec[t->n - 1].seq,
            us_str(t->rec[t->n - 1].t_ns > t->rec[0].t_ns
                       ? t->rec[t->n - 1].t_ns - t->rec[0].t_ns : 0, us, sizeof(us)),
            (unsigned long long)nshown);
  else
    fprintf(f, "  events    none recorded\n");
}

/* ", posted as dma #N" for an op queued for the DMA engine, else "". */
static const char *posted_str(const cs_trace_rec_t *x, char *buf, size_t n)
{
  buf[0] = 0;
  if (x->dma_id)
    snprintf(buf, n, ", posted as dma #%llu", (unsigned long long)x->dma_id);
  return buf;
}

/* The "what" column of one event. */
static void describe(const cs_trace_t *t, const derived_t *d, uint64_t i,
                     char *buf, size_t n)
{
  const cs_trace_header_t *h = &t->hdr;
  const cs_trace_rec_t *x = &t->rec[i];
  char sn[24], us[32], from[16], post[40];
  const char *cmp = (x->opcmp & ~CS_TR_FAILED) == CS_CMP_EQ ? "==" : ">=";
  unsigned long long off = (unsigned long long)x->elem_off;
  buf[0] = 0;
  switch (x->kind) {
  case CS_EV_LOAD:
    if (x->peer == x->rank)
      snprintf(from, sizeof(from), "local  ");
    else
      snprintf(from, sizeof(from), "from r%-2u", x->peer);
    snprintf(buf, n, "%s %s[%llu..%llu) valid %u phys %u", from,
             slot_name(h, x->slot, sn, sizeof(sn)), off, off + x->phys,
             x->valid, x->phys);
    break;
  case CS_EV_STORE:
    snprintf(buf, n, "local   %s[%llu..%llu) valid %u%s",
             slot_name(h, x->slot, sn, sizeof(sn)), off, off + x->valid, x->valid,
             posted_str(x, post, sizeof(post)));
    break;
  case CS_EV_PUT:
    snprintf(buf, n, "to r%-4u %s[%llu..%llu) valid %u%s", x->peer,
             slot_name(h, x->slot, sn, sizeof(sn)), off, off + x->valid, x->valid,
             posted_str(x, post, sizeof(post)));
    break;
  case CS_EV_NOTIFY:
    if (x->dma_id)
      snprintf(buf, n, "-> r%u %s[%u] %s%d%s", x->peer,
               slot_name(h, x->slot, sn, sizeof(sn)), x->cell,
               is_add(x) ? "+" : "= ", x->value, posted_str(x, post, sizeof(post)));
    else if (is_add(x))
      snprintf(buf, n, "-> r%u %s[%u] %+d (now %d)", x->peer,
               slot_name(h, x->slot, sn, sizeof(sn)), x->cell, x->value,
               x->observed);
    else
      snprintf(buf, n, "-> r%u %s[%u] = %d", x->peer,
               slot_name(h, x->slot, sn, sizeof(sn)), x->cell, x->value);
    break;
  case CS_TR_WAIT_BEGIN:
    snprintf(buf, n, "%s[%u] %s %d", slot_name(h, x->slot, sn, sizeof(sn)),
             x->cell, cmp, x->value);
    break;
  case CS_EV_WAIT: {
    int len = snprintf(buf, n, "%s[%u] %s %d saw %d",
                       slot_name(h, x->slot, sn, sizeof(sn)), x->cell, cmp,
                       x->value, x->observed);
    if (d->pair[i] >= 0 && len > 0 && (size_t)len < n)
      len += snprintf(buf + len, n - (size_t)len, ", waited %s us",
                      us_str(x->t_ns - t->rec[d->pair[i]].t_ns, us, sizeof(us)));
    int64_t s = d->satisfier[i];
    if (s >= 0 && len > 0 && (size_t)len < n)
      snprintf(buf + len, n - (size_t)len, ", by #%llu r%u",
               (unsigned long long)t->rec[s].seq, t->rec[s].rank);
    break;
  }
  case CS_EV_FENCE:
    snprintf(buf, n, "pipe barrier");
    break;
  case CS_EV_REDUCE:
    snprintf(buf, n, "acc = acc %s recv, %u elements",
             cs_op_name((cs_op_t)(x->opcmp & ~CS_TR_FAILED)), x->valid);
    break;
  case CS_EV_MARK:
    snprintf(buf, n, "phase %s", mark_str(h, x, sn, sizeof(sn)));
    break;
  case CS_TR_DMA_POST:
  case CS_TR_DMA_LAND: {
    const char *verb = x->kind == CS_TR_DMA_POST ? "posts" : "lands";
    if (x->kind == CS_TR_DMA_LAND && x->round == CS_EV_NOTIFY && is_add(x))
      snprintf(buf, n, "dma #%llu %s notify -> r%u %s[%u] %+d (now %d)",
               (unsigned long long)x->dma_id, verb, x->peer,
               slot_name(h, x->slot, sn, sizeof(sn)), x->cell, x->value,
               x->observed);
    else if (x->round == CS_EV_NOTIFY)
      snprintf(buf, n, "dma #%llu %s notify -> r%u %s[%u] = %d",
               (unsigned long long)x->dma_id, verb, x->peer,
               slot_name(h, x->slot, sn, sizeof(sn)), x->cell, x->value);
    else
      snprintf(buf, n, "dma #%llu %s %s -> r%u %s[%llu..%llu) valid %u",
               (unsigned long long)x->dma_id, verb,
               x->round == CS_EV_STORE || x->round == CS_EV_PUT
                   ? cs_trace_kind_name(x->round) : "op",
               x->peer, slot_name(h, x->slot, sn, sizeof(sn)), off,
               off + x->valid, x->valid);
    break;
  }
  case CS_TR_FAULT:
  case CS_TR_ABORT:
    launcher_str(x, buf, n);
    break;
  default:
    break;
  }
}

static void text_event(FILE *f, const cs_trace_t *t, const derived_t *d,
                       uint64_t i, uint64_t t0)
{
  const cs_trace_rec_t *x = &t->rec[i];
  char what[200], tag[48], us[32], ts[40], rk[16];
  describe(t, d, i, what, sizeof(what));
  snprintf(ts, sizeof(ts), "+%sus", us_str(x->t_ns - t0, us, sizeof(us)));
  tag_str(&t->hdr, x, tag, sizeof(tag));
  if (x->rank == UINT32_MAX)
    snprintf(rk, sizeof(rk), "--");
  else
    snprintf(rk, sizeof(rk), "r%u", x->rank);
  fprintf(f, "%7llu  %14s  %-4s %-10s %-50s %s%s\n",
          (unsigned long long)x->seq, ts, rk,
          cs_trace_kind_name(x->kind), what, tag,
          (x->opcmp & CS_TR_FAILED) && !is_launcher_rec(x)
              ? "  <- FAILED: the rank stopped here" : "");
}

/* ------------------------------------------------------------ JSON */

static void json_str(FILE *f, const char *s)
{
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

static void jsonl_header(FILE *f, const cs_trace_t *t)
{
  const cs_trace_header_t *h = &t->hdr;
  char sched[80], ver[24], sn[24];
  field_str(h->schedule, sizeof(h->schedule), sched, sizeof(sched));
  field_str(h->version_str, sizeof(h->version_str), ver, sizeof(ver));
  fprintf(f, "{\"type\":\"header\",\"magic\":\"CSTRACE\",\"version\":%u,"
          "\"header_bytes\":%u,\"record_bytes\":%u,\"nranks\":%u,"
          "\"count\":%llu,\"program\":\"%s\",\"algo\":", h->version,
          h->header_bytes, h->record_bytes, h->nranks,
          (unsigned long long)h->count, h->program == 1 ? "ping" : "allreduce");
  json_str(f, h->algo == 255 ? "none" : cs_algo_name((cs_algo_t)h->algo));
  fprintf(f, ",\"algo_id\":%u,\"dtype\":", h->algo);
  json_str(f, cs_dtype_name((cs_dtype_t)h->dtype));
  fprintf(f, ",\"dtype_id\":%u,\"op\":", h->dtype);
  json_str(f, cs_op_name((cs_op_t)h->op));
  fprintf(f, ",\"op_id\":%u,\"fill\":", h->op);
  json_str(f, cs_fill_name((cs_fill_t)h->fill));
  fprintf(f, ",\"fill_id\":%u,\"seed\":%llu,\"input_hash\":\"0x%016llx\","
          "\"tile_bytes\":%u,\"iters\":%u,\"memory_model\":\"%s\","
          "\"memory_model_id\":%u,\"program_id\":%u,\"bug\":%u,\"bug_name\":\"%s\","
          "\"rounds\":%u,\"fault_kind\":\"%s\",\"fault_rank\":%u,"
          "\"fault_event\":%llu,\"schedule\":", h->fill, (unsigned long long)h->seed,
          (unsigned long long)h->input_hash, h->tile_bytes, h->iters,
          model_name(h->memory_model), h->memory_model, h->program, h->bug,
          bug_name(h->bug), h->rounds,
          cs_fault_kind_name((cs_fault_kind_t)h->fault_kind), h->fault_rank,
          (unsigned long long)h->fault_event);
  json_str(f, sched);
  fprintf(f, ",\"collsim_version\":");
  json_str(f, ver);
  /* tick_ns: the file's clock rate; the events' t_ns here are already ns. */
  fprintf(f, ",\"timeout_ns\":%llu,\"start_ns\":%llu,\"tick_ns\":%.9g,"
          "\"checksum\":\"0x%08x\","
          "\"records\":%llu,\"slot_align\":%u,\"win_bytes\":%llu,\"slots\":[",
          (unsigned long long)h->timeout_ns, (unsigned long long)h->start_ns,
          h->tick_ns, h->checksum, (unsigned long long)t->n, h->layout.align,
          (unsigned long long)h->layout.win_bytes);
  for (uint32_t s = 0; s < h->layout.nslots; s++) {
    const cs_slot_t *sl = &h->layout.slot[s];
    fprintf(f, "%s{\"index\":%u,\"name\":", s ? "," : "", s);
    json_str(f, slot_name(h, s, sn, sizeof(sn)));
    fprintf(f, ",\"off\":%llu,\"nbytes\":%llu,\"alloc\":%llu,\"esize\":%u}",
            (unsigned long long)sl->off, (unsigned long long)sl->nbytes,
            (unsigned long long)sl->alloc, sl->esize);
  }
  fprintf(f, "]}\n");
}

static void jsonl_event(FILE *f, const cs_trace_t *t, const derived_t *d,
                        uint64_t i)
{
  const cs_trace_rec_t *x = &t->rec[i];
  char sn[24], what[200], tag[48];
  fprintf(f, "{\"type\":\"event\",\"seq\":%llu,\"t_ns\":%llu,\"rank\":",
          (unsigned long long)x->seq, (unsigned long long)x->t_ns);
  if (x->rank == UINT32_MAX)
    fprintf(f, "null");
  else
    fprintf(f, "%u", x->rank);
  fprintf(f, ",\"kind\":\"%s\",\"kind_id\":%u,\"peer\":%u,\"slot\":%u,"
          "\"slot_name\":", cs_trace_kind_name(x->kind), x->kind, x->peer,
          x->slot);
  json_str(f, is_launcher_rec(x) || x->kind == CS_EV_MARK ||
                      x->kind == CS_EV_FENCE || x->kind == CS_EV_REDUCE
                  ? "" : slot_name(&t->hdr, x->slot, sn, sizeof(sn)));
  fprintf(f, ",\"elem_off\":%llu,\"valid\":%u,\"phys\":%u,\"cell\":%u,"
          "\"opcmp\":%u,\"value\":%d,\"observed\":%d,\"dma_id\":%llu,"
          "\"phase\":%u,\"round\":%u,\"step\":%u,\"checksum\":\"0x%08x\","
          "\"failed\":%s,\"tag\":",
          (unsigned long long)x->elem_off, x->valid, x->phys, x->cell,
          x->opcmp & ~CS_TR_FAILED, x->value, x->observed,
          (unsigned long long)x->dma_id, x->phase, x->round, x->step,
          x->checksum, (x->opcmp & CS_TR_FAILED) ? "true" : "false");
  json_str(f, tag_str(&t->hdr, x, tag, sizeof(tag)));
  if (x->kind == CS_EV_WAIT && d->pair[i] >= 0)
    fprintf(f, ",\"begin_seq\":%llu,\"waited_ns\":%llu",
            (unsigned long long)t->rec[d->pair[i]].seq,
            (unsigned long long)(x->t_ns - t->rec[d->pair[i]].t_ns));
  if (x->kind == CS_EV_WAIT && d->satisfier[i] >= 0)
    fprintf(f, ",\"satisfied_by\":%llu",
            (unsigned long long)t->rec[d->satisfier[i]].seq);
  if (x->kind == CS_TR_DMA_LAND && d->post[i] >= 0)
    fprintf(f, ",\"post_seq\":%llu", (unsigned long long)t->rec[d->post[i]].seq);
  describe(t, d, i, what, sizeof(what));
  fprintf(f, ",\"text\":");
  json_str(f, what);
  fprintf(f, "}\n");
}

/* ------------------------------------------------------------ chrome */

typedef struct chrome {
  FILE    *f;
  int      first;   /* no event written yet (no comma) */
  uint64_t flow_id; /* last flow id used */
  uint64_t t0;      /* ns subtracted from every timestamp */
} chrome_t;

static void ch_begin(chrome_t *c)
{
  fputs(c->first ? "\n" : ",\n", c->f);
  c->first = 0;
}

static void ch_meta(chrome_t *c, const char *what, uint32_t pid, int tid,
                    const char *name, uint32_t sort)
{
  ch_begin(c);
  fprintf(c->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,", what, pid);
  if (tid >= 0)
    fprintf(c->f, "\"tid\":%d,", tid);
  fprintf(c->f, "\"args\":{\"name\":");
  json_str(c->f, name);
  fprintf(c->f, "}}");
  ch_begin(c);
  fprintf(c->f, "{\"name\":\"%s_sort_index\",\"ph\":\"M\",\"pid\":%u,",
          tid >= 0 ? "thread" : "process", pid);
  if (tid >= 0)
    fprintf(c->f, "\"tid\":%d,", tid);
  fprintf(c->f, "\"args\":{\"sort_index\":%u}}", sort);
}

/* The event's fields as "args". */
static void ch_args(chrome_t *c, const cs_trace_t *t, const derived_t *d,
                    uint64_t i)
{
  const cs_trace_rec_t *x = &t->rec[i];
  char what[200], tag[48];
  describe(t, d, i, what, sizeof(what));
  fprintf(c->f, ",\"args\":{\"seq\":%llu,\"kind\":\"%s\",\"what\":",
          (unsigned long long)x->seq, cs_trace_kind_name(x->kind));
  json_str(c->f, what);
  fprintf(c->f, ",\"tag\":");
  json_str(c->f, tag_str(&t->hdr, x, tag, sizeof(tag)));
  fprintf(c->f, ",\"peer\":%u,\"slot\":%u,\"elem_off\":%llu,\"valid\":%u,"
          "\"phys\":%u,\"cell\":%u,\"opcmp\":%u,\"value\":%d,\"observed\":%d,"
          "\"dma_id\":%llu,\"t_ns\":%llu,\"failed\":%s}",
          x->peer, x->slot, (unsigned long long)x->elem_off, x->valid, x->phys,
          x->cell, x->opcmp & ~CS_TR_FAILED, x->value, x->observed,
          (unsigned long long)x->dma_id, (unsigned long long)x->t_ns,
          (x->opcmp & CS_TR_FAILED) ? "true" : "false");
}

/* A complete slice [ts, ts + dur) ns, dur >= 1. */
static void ch_slice(chrome_t *c, const cs_trace_t *t, const derived_t *d,
                     uint64_t i, const char *name, uint32_t pid, uint32_t tid,
                     uint64_t ts, uint64_t dur)
{
  char a[32], b[32];
  ch_begin(c);
  fprintf(c->f, "{\"name\":");
  json_str(c->f, name);
  fprintf(c->f, ",\"cat\":\"collsim\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,"
          "\"ts\":%s,\"dur\":%s", pid, tid, us_str(ts - c->t0, a, sizeof(a)),
          us_str(dur ? dur : 1, b, sizeof(b)));
  ch_args(c, t, d, i);
  fputc('}', c->f);
}

/* One end of a flow arrow at ts (inside the slice it binds to). */
static void ch_flow(chrome_t *c, char ph, const char *name, uint64_t id,
                    uint32_t pid, uint32_t tid, uint64_t ts)
{
  char a[32];
  ch_begin(c);
  fprintf(c->f, "{\"name\":\"%s\",\"cat\":\"collsim\",\"ph\":\"%c\","
          "\"id\":%llu,\"pid\":%u,\"tid\":%u,\"ts\":%s%s}", name, ph,
          (unsigned long long)id, pid, tid, us_str(ts - c->t0, a, sizeof(a)),
          ph == 'f' ? ",\"bp\":\"e\"" : "");
}

/* A point inside slice [start, end]: 1 ns before its end when it lasts at
 * least 2 ns, else its start. */
static uint64_t inside(uint64_t start, uint64_t end)
{
  return end >= start + 2 ? end - 1 : start;
}

static int write_chrome(FILE *f, const cs_trace_t *t, const derived_t *d,
                        const trace_opts_t *o)
{
  const cs_trace_header_t *h = &t->hdr;
  uint32_t nr = h->nranks, launcher = nr;
  uint64_t n = t->n;
  size_t m = n ? n : 1;
  /* Slice extent of every record: [start, end] ns since the trace start. */
  uint64_t *start = malloc(m * sizeof(uint64_t)), *end = malloc(m * sizeof(uint64_t));
  uint64_t *prev = calloc(nr, sizeof(uint64_t)), *last = calloc(nr, sizeof(uint64_t));
  int64_t *mark = malloc(nr * sizeof(int64_t));
  uint8_t *seen = calloc(nr, 1);
  if (!start || !end || !prev || !last || !mark || !seen) {
    free(start); free(end); free(prev); free(last); free(mark); free(seen);
    return -1;
  }
  for (uint32_t r = 0; r < nr; r++)
    mark[r] = -1;
  for (uint64_t i = 0; i < n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (is_launcher_rec(x)) {
      start[i] = end[i] = x->t_ns;
      continue;
    }
    uint32_t r = x->rank;
    end[i] = x->t_ns;
    if (x->kind == CS_EV_WAIT && d->pair[i] >= 0)
      start[i] = t->rec[d->pair[i]].t_ns;
    else if (x->kind == CS_TR_WAIT_BEGIN || x->kind == CS_EV_MARK)
      start[i] = x->t_ns;
    else
      start[i] = seen[r] && prev[r] < x->t_ns ? prev[r] : x->t_ns;
    if (end[i] <= start[i])
      end[i] = start[i] + 1;
    if (x->kind == CS_EV_MARK) {
      if (mark[r] >= 0)
        end[mark[r]] = x->t_ns > start[mark[r]] ? x->t_ns : start[mark[r]] + 1;
      mark[r] = (int64_t)i;
    }
    if (x->kind == CS_TR_WAIT_BEGIN && d->pair[i] < 0)
      end[i] = d->end_ns > x->t_ns ? d->end_ns : x->t_ns + 1; /* never ended */
    prev[r] = x->t_ns;
    last[r] = x->t_ns > last[r] ? x->t_ns : last[r];
    seen[r] = 1;
  }
  for (uint32_t r = 0; r < nr; r++)
    if (mark[r] >= 0)
      end[mark[r]] = last[r] > start[mark[r]] ? last[r] : start[mark[r]] + 1;

  chrome_t c = {f, 1, 0, d->start_ns};
  char sb[48], name[64], what[200];
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"trace\":");
  json_str(f, o->path);
  fprintf(f, ",\"program\":\"%s\",\"algo\":", h->program == 1 ? "ping" : "allreduce");
  json_str(f, h->algo == 255 ? "none" : cs_algo_name((cs_algo_t)h->algo));
  fprintf(f, ",\"nranks\":%u,\"count\":%llu,\"dtype\":\"%s\",\"op\":\"%s\","
          "\"iters\":%u,\"memory_model\":\"%s\"},\"traceEvents\":[", nr,
          (unsigned long long)h->count, cs_dtype_name((cs_dtype_t)h->dtype),
          cs_op_name((cs_op_t)h->op), h->iters, model_name(h->memory_model));
  for (uint32_t r = 0; r < nr; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    snprintf(name, sizeof(name), "rank %u", r);
    ch_meta(&c, "process_name", r, -1, name, r);
    for (int l = 0; l < NLANES; l++)
      ch_meta(&c, "thread_name", r, l, lane_names[l], (uint32_t)l);
  }
  int launcher_named = 0;
  for (uint64_t i = 0; i < n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (!shown(o, x))
      continue;
    if (is_launcher_rec(x)) {
      uint32_t pid = x->kind == CS_TR_ABORT ? launcher : x->rank;
      if (pid == launcher && !launcher_named) {
        ch_meta(&c, "process_name", launcher, -1, "launcher", launcher);
        ch_meta(&c, "thread_name", launcher, 0, "control", 0);
        launcher_named = 1;
      }
      launcher_str(x, what, sizeof(what));
      snprintf(name, sizeof(name), "%s", x->kind == CS_TR_FAULT ? "fault" : "abort");
      char a[32];
      ch_begin(&c);
      fprintf(f, "{\"name\":");
      json_str(f, what);
      fprintf(f, ",\"cat\":\"collsim\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,"
              "\"tid\":0,\"ts\":%s", pid, us_str(x->t_ns - c.t0, a, sizeof(a)));
      ch_args(&c, t, d, i);
      fputc('}', f);
      continue;
    }
    if (x->kind == CS_TR_WAIT_BEGIN && d->pair[i] >= 0)
      continue; /* drawn by its wait-end */
    const char *nm = cs_trace_kind_name(x->kind);
    switch (x->kind) {
    case CS_EV_LOAD:
      if (x->peer != x->rank) {
        snprintf(name, sizeof(name), "load r%u", x->peer);
        nm = name;
      }
      break;
    case CS_EV_PUT:
    case CS_EV_NOTIFY:
      snprintf(name, sizeof(name), "%s r%u", nm, x->peer);
      nm = name;
      break;
    case CS_EV_WAIT:
      nm = (x->opcmp & CS_TR_FAILED) ? "wait (failed)" : "wait";
      break;
    case CS_TR_WAIT_BEGIN:
      nm = "wait (never ended)";
      break;
    case CS_EV_MARK:
      nm = mark_str(h, x, sb, sizeof(sb));
      break;
    default:
      break;
    }
    ch_slice(&c, t, d, i, nm, x->rank, lane_of(x->kind), start[i],
             end[i] - start[i]);
    /* Arrows, drawn when both ends are shown. */
    int64_t s = x->kind == CS_EV_WAIT ? d->satisfier[i]
              : x->kind == CS_TR_DMA_LAND ? d->post[i] : -1;
    if (s >= 0 && shown(o, &t->rec[s])) {
      const cs_trace_rec_t *y = &t->rec[s];
      const char *fn = x->kind == CS_EV_WAIT ? "signal" : "dma";
      c.flow_id++;
      ch_flow(&c, 's', fn, c.flow_id, y->rank, lane_of(y->kind),
              inside(start[s], end[s]));
      ch_flow(&c, 'f', fn, c.flow_id, x->rank, lane_of(x->kind),
              inside(start[i], end[i]));
    }
  }
  fprintf(f, "\n]}\n");
  free(start); free(end); free(prev); free(last); free(mark); free(seen);
  return 0;
}

/* ------------------------------------------------------------ stats */

typedef struct rank_stats {
  uint64_t events;
  uint64_t load_local, load_remote, stored; /* bytes */
  uint64_t notifies, waits;
  uint64_t wait_total_ns, wait_max_ns;
} rank_stats_t;

/* Expected remote bytes per rank for the run's algorithm: formula (may be
 * fractional) and exact (segment table). Returns 0 if there is none. */
static int expected(const cs_trace_header_t *h, uint32_t r, double *formula,
                    uint64_t *exact, const char **what)
{
  if (h->program != 0 || h->layout.nslots < 1 || h->algo > CS_ALGO_HOST)
    return 0;
  uint64_t nr = h->nranks, es = h->layout.slot[0].esize, it = h->iters;
  uint64_t s = h->count * es;
  if (h->algo == CS_ALGO_RING) {
    *what = "2(N-1)/N*S";
    *formula = (double)it * 2.0 * (double)(nr - 1) * (double)s / (double)nr;
    if (nr == 1) {
      *exact = 0;
      return 1;
    }
    uint32_t left = (uint32_t)((r + nr - 1) % nr);
    uint64_t lenl = cs_ring_bound(left + 1, h->count, (uint32_t)nr, (uint32_t)es) -
                    cs_ring_bound(left, h->count, (uint32_t)nr, (uint32_t)es);
    uint64_t lenr = cs_ring_bound(r + 1, h->count, (uint32_t)nr, (uint32_t)es) -
                    cs_ring_bound(r, h->count, (uint32_t)nr, (uint32_t)es);
    *exact = it * (2 * h->count - lenl - lenr) * es;
  } else {
    *what = "(N-1)*S";
    *formula = (double)(it * (nr - 1) * s);
    *exact = it * (nr - 1) * s;
  }
  return 1;
}

/* Bytes as "51" or "213.3". */
static const char *num_str(double v, char *buf, size_t n)
{
  if (v == (double)(uint64_t)v)
    snprintf(buf, n, "%llu", (unsigned long long)v);
  else
    snprintf(buf, n, "%.1f", v);
  return buf;
}

static const char *verdict(uint64_t got, double formula, uint64_t exact)
{
  if ((double)got == formula)
    return "matches";
  if (got == exact)
    return "matches the segment table (ragged segments)";
  return "DIFFERS";
}

static int write_stats(FILE *f, const cs_trace_t *t, const derived_t *d,
                       const trace_opts_t *o)
{
  const cs_trace_header_t *h = &t->hdr;
  uint32_t nr = h->nranks;
  rank_stats_t *st = calloc(nr, sizeof(*st));
  if (!st)
    return -1;
  uint64_t faults = 0;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (!shown(o, x))
      continue;
    if (is_launcher_rec(x)) {
      faults += x->kind == CS_TR_FAULT;
      continue;
    }
    rank_stats_t *s = &st[x->rank];
    s->events++;
    uint64_t es = x->slot < h->layout.nslots ? h->layout.slot[x->slot].esize : 0;
    switch (x->kind) {
    case CS_EV_LOAD:
      if (x->peer == x->rank)
        s->load_local += x->valid * es;
      else
        s->load_remote += x->valid * es;
      break;
    case CS_EV_STORE:
    case CS_EV_PUT:
      s->stored += x->valid * es;
      break;
    case CS_EV_NOTIFY:
      s->notifies++;
      break;
    case CS_EV_WAIT:
      s->waits++;
      if (d->pair[i] >= 0) {
        uint64_t w = x->t_ns - t->rec[d->pair[i]].t_ns;
        s->wait_total_ns += w;
        if (w > s->wait_max_ns)
          s->wait_max_ns = w;
      }
      break;
    default:
      break;
    }
  }
  /* The volume check needs every load of the rank. */
  int whole = !o->kinds && o->from == 0 && o->to == UINT64_MAX;
  double formula = 0;
  uint64_t exact = 0, total = 0;
  const char *what = "";
  int can = whole && expected(h, 0, &formula, &exact, &what);
  char a[32], b[32];

  if (o->format == FMT_JSONL) {
    for (uint32_t r = 0; r < nr; r++) {
      if (o->has_rank && r != o->rank)
        continue;
      const rank_stats_t *s = &st[r];
      fprintf(f, "{\"type\":\"stats\",\"rank\":%u,\"events\":%llu,"
              "\"load_local_bytes\":%llu,\"load_remote_bytes\":%llu,"
              "\"store_bytes\":%llu,\"notifies\":%llu,\"waits\":%llu,"
              "\"wait_total_ns\":%llu,\"wait_max_ns\":%llu", r,
              (unsigned long long)s->events, (unsigned long long)s->load_local,
              (unsigned long long)s->load_remote, (unsigned long long)s->stored,
              (unsigned long long)s->notifies, (unsigned long long)s->waits,
              (unsigned long long)s->wait_total_ns,
              (unsigned long long)s->wait_max_ns);
      if (can && expected(h, r, &formula, &exact, &what))
        fprintf(f, ",\"reference\":\"%s\",\"reference_bytes\":%.17g,"
                "\"segment_table_bytes\":%llu,\"verdict\":\"%s\"", what,
                formula, (unsigned long long)exact,
                verdict(s->load_remote, formula, exact));
      fprintf(f, "}\n");
    }
    fprintf(f, "{\"type\":\"stats_summary\",\"records\":%llu,\"faults\":%llu}\n",
            (unsigned long long)t->n, (unsigned long long)faults);
    free(st);
    return 0;
  }

  text_header(f, t, o, t->n);
  fprintf(f, "\n%4s %8s %13s %13s %11s %8s %7s %15s %13s\n", "rank", "events",
          "load local B", "load remote B", "stored B", "notifies", "waits",
          "wait total us", "wait max us");
  for (uint32_t r = 0; r < nr; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    const rank_stats_t *s = &st[r];
    fprintf(f, "%4u %8llu %13llu %13llu %11llu %8llu %7llu %15s %13s\n", r,
            (unsigned long long)s->events, (unsigned long long)s->load_local,
            (unsigned long long)s->load_remote, (unsigned long long)s->stored,
            (unsigned long long)s->notifies, (unsigned long long)s->waits,
            us_str(s->wait_total_ns, a, sizeof(a)),
            us_str(s->wait_max_ns, b, sizeof(b)));
  }
  if (faults)
    fprintf(f, "(the run crashed: %llu fault record%s; the volumes below are "
            "of a partial run)\n", (unsigned long long)faults,
            faults == 1 ? "" : "s");
  if (!can) {
    if (!whole && h->program == 0)
      fprintf(f, "\nvolume check: skipped (--kind/--from/--to hide events)\n");
    free(st);
    return 0;
  }
  uint64_t es = h->layout.slot[0].esize, s = h->count * es;
  char fb[32];
  fprintf(f, "\nremote loads per rank against %s (%s, N = %u, S = %llu x %llu B "
          "= %llu B, %u call%s): %s B\n", what,
          cs_algo_name((cs_algo_t)h->algo), nr, (unsigned long long)h->count,
          (unsigned long long)es, (unsigned long long)s, h->iters,
          h->iters == 1 ? "" : "s", num_str(formula, fb, sizeof(fb)));
  int all_formula = 1, all_exact = 1, total_ok = 1;
  for (uint32_t r = 0; r < nr; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    expected(h, r, &formula, &exact, &what);
    total += st[r].load_remote;
    all_formula &= (double)st[r].load_remote == formula;
    all_exact &= st[r].load_remote == exact;
    if (h->algo == CS_ALGO_RING)
      fprintf(f, "  rank %-3u %10llu B   %s = %s B, segment table %llu B: %s\n",
              r, (unsigned long long)st[r].load_remote, what,
              num_str(formula, fb, sizeof(fb)),
              (unsigned long long)exact,
              verdict(st[r].load_remote, formula, exact));
    else
      fprintf(f, "  rank %-3u %10llu B   %s = %llu B: %s\n", r,
              (unsigned long long)st[r].load_remote, what,
              (unsigned long long)exact,
              verdict(st[r].load_remote, formula, exact));
  }
  if (h->algo == CS_ALGO_RING && nr > 1 && !o->has_rank) {
    uint64_t want = (uint64_t)h->iters * 2 * (nr - 1) * s;
    total_ok = total == want;
    fprintf(f, "  all ranks %8llu B   2(N-1)*S = %llu B: %s\n",
            (unsigned long long)total, (unsigned long long)want,
            total_ok ? "matches" : "DIFFERS");
  }
  if (h->algo == CS_ALGO_RING && !all_formula && all_exact) {
    fprintf(f, "  segments (elements):");
    for (uint32_t k = 0; k < nr; k++)
      fprintf(f, " %llu", (unsigned long long)(
                  cs_ring_bound(k + 1, h->count, nr, (uint32_t)es) -
                  cs_ring_bound(k, h->count, nr, (uint32_t)es)));
    fprintf(f, "; rank r reads all but segments r-1 and r, so per rank "
            "2S - |seg r-1| - |seg r|\n");
  }
  const char *who = o->has_rank ? "the rank matches" : "every rank matches";
  if (all_formula && total_ok)
    fprintf(f, "verdict: %s %s\n", who, what);
  else if (all_exact && total_ok)
    fprintf(f, "verdict: %s its segment table%s\n", who,
            o->has_rank ? "" : "; the total matches 2(N-1)*S");
  else
    fprintf(f, "verdict: DIFFERS from the algorithm's volume%s\n",
            faults ? " (the run crashed)" : "");
  free(st);
  return 0;
}

/* ------------------------------------------------------------ command */

int cs_cmd_trace(int argc, char **argv)
{
  trace_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc != 0)
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;

  cs_trace_t t;
  char why[512];
  if (cs_trace_load(o.path, &t, why, sizeof(why)) < 0) {
    for (char *p = why; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = '?';
    cs_cli_error("trace", "%s", why);
    return CS_EXIT_USAGE;
  }
  if (o.has_rank && o.rank >= t.hdr.nranks) {
    cs_cli_error("trace", "--rank %u is not accepted: the trace has ranks "
                 "0..%u", o.rank, t.hdr.nranks - 1);
    cs_trace_free(&t);
    return CS_EXIT_USAGE;
  }
  derived_t d;
  if (derive(&t, &d) < 0) {
    cs_cli_error("trace", "out of memory for %llu records",
                 (unsigned long long)t.n);
    cs_trace_free(&t);
    return CS_EXIT_ABORTED;
  }
  FILE *f = stdout;
  if (o.out && !(f = fopen(o.out, "w"))) {
    cs_cli_error("trace", "-o %s: cannot create: %s", o.out, strerror(errno));
    derived_free(&d);
    cs_trace_free(&t);
    return CS_EXIT_USAGE;
  }
  static char buf[1 << 16];
  setvbuf(f, buf, _IOFBF, sizeof(buf));

  int code = CS_EXIT_OK;
  if (o.stats) {
    rc = write_stats(f, &t, &d, &o);
  } else if (o.format == FMT_CHROME) {
    rc = write_chrome(f, &t, &d, &o);
  } else {
    uint64_t nshown = 0;
    for (uint64_t i = 0; i < t.n; i++)
      nshown += shown(&o, &t.rec[i]);
    if (o.format == FMT_JSONL)
      jsonl_header(f, &t);
    else {
      text_header(f, &t, &o, nshown);
      fprintf(f, "\n%7s  %14s  %-4s %-10s %-50s %s\n", "seq", "time", "rank",
              "kind", "what", "tag");
    }
    for (uint64_t i = 0; i < t.n; i++) {
      if (!shown(&o, &t.rec[i]))
        continue;
      if (o.format == FMT_JSONL)
        jsonl_event(f, &t, &d, i);
      else
        text_event(f, &t, &d, i, d.start_ns);
    }
    rc = 0;
  }
  if (rc < 0) {
    cs_cli_error("trace", "out of memory for %llu records",
                 (unsigned long long)t.n);
    code = CS_EXIT_ABORTED;
  }
  if (fflush(f) != 0 || ferror(f)) {
    cs_cli_error("trace", "%s: write failed: %s", o.out ? o.out : "stdout",
                 strerror(errno));
    code = CS_EXIT_ABORTED;
  }
  if (f != stdout)
    fclose(f);
  derived_free(&d);
  cs_trace_free(&t);
  return code;
}
