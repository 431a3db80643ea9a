/*
 * trace_stats.c - `collsim trace --stats` (trace_stats.h).
 *
 * Owns: the per-rank tally of a finished trace (bytes loaded locally and
 * remotely, bytes stored, notifies, waits, total and longest wait, the
 * last value every signal cell was left at) and its verdicts against the
 * algorithm's remote volume and the reference's notify counts and final
 * cell values for the run's signal mode.
 * Does not own the volumes (collectives/geometry.h), the links (the waits'
 * durations come from sim/trace/analysis.h) or the header block
 * (sim/trace/export.h). Called by cli/collsim/trace_cmd.c.
 */
#define _GNU_SOURCE
#include "trace_stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/geometry.h"
#include "../../sim/trace/describe.h"

typedef struct rank_stats {
  uint64_t events;
  uint64_t load_local, load_remote, stored; /* bytes */
  uint64_t put_remote; /* bytes put into other ranks' windows */
  uint64_t notifies, waits;
  uint64_t pipes, ddrs, dccis, reads, lines; /* a2a3: pipe barriers, DDR
                                                fences, dccis, cell reads,
                                                Set line write-backs */
  uint64_t wait_total_ns, wait_max_ns;
  int32_t  cell_min, cell_max; /* non-self signal cells of the rank's own
                                  window at the end (last notify's result;
                                  never notified: 0) */
} rank_stats_t;

/* The reference's signal figures for one call of the traced run. */
typedef struct sig_ref {
  uint64_t    notifies; /* per rank, all calls */
  int32_t     final;    /* every non-self cell at the end */
  const char *what;     /* the notify formula */
} sig_ref_t;

/* The header's built-in allreduce configuration, if it is one that
 * collsim runs (an edited header can hold any numbers; the formulas below
 * divide by its tile and element sizes). Returns 0 otherwise. */
static int header_cfg(const cs_trace_header_t *h, cs_ar_cfg_t *c)
{
  *c = (cs_ar_cfg_t){.algo = h->algo, .dtype = h->dtype, .op = h->op,
                     .nranks = h->nranks, .count = h->count,
                     .tile_bytes = h->tile_bytes, .iters = h->iters,
                     .shape_rows = h->shape_rows, .shape_cols = h->shape_cols,
                     .valid_rows = h->valid_rows, .valid_cols = h->valid_cols,
                     .no_epilogue = (h->modes & CS_TR_MODE_SINGLE_USE) != 0};
  return h->program == 0 && cs_algo_desc(h->algo) && h->layout.nslots >= 1 &&
         cs_ar_check(c) == 0 &&
         h->layout.slot[0].esize == cs_dtype_size((cs_dtype_t)h->dtype);
}

/* Per-rank notifies and end cell value of an allreduce trace without a
 * defect: mesh (N-1)(1+C), ring 4K(N-1)^2, host (N-1)(1+ceil(n/256)) per
 * call; the self-clearing epilogue adds one notify per non-self cell of
 * the own window (mesh, host N-1; ring 2(N-1)(N-1)) and leaves them 0.
 * Returns 0 if there is no such figure. */
static int sig_expected(const cs_trace_header_t *h, sig_ref_t *s)
{
  cs_ar_cfg_t c;
  if (!header_cfg(h, &c) || h->bug != 0 || h->layout.nslots < 2)
    return 0;
  uint64_t n1 = h->nranks - 1;
  int single = (h->modes & CS_TR_MODE_SINGLE_USE) != 0;
  uint64_t f = (uint64_t)cs_ar_signal_final(&c);
  cs_algo_notifies_t an;
  cs_algo_desc(h->algo)->notifies(&c, single, &an);
  s->what = an.what;
  s->notifies = (an.per_call + (single ? 0 : an.epilogue)) * h->iters;
  s->final = single && n1 ? (int32_t)f : 0;
  return 1;
}

typedef cs_algo_volume_t volume_t;

/* Expected remote bytes of rank r for the run's algorithm. Returns 0 if
 * there is none (not an allreduce, or no slot table). */
static int expected(const cs_trace_header_t *h, uint32_t r, volume_t *v)
{
  cs_ar_cfg_t c;
  if (!header_cfg(h, &c))
    return 0;
  cs_algo_desc(h->algo)->volume(&c, r, h->layout.slot[0].esize, v);
  return 1;
}

/* Bytes as "51" or "213.3". */
static const char *num_str(double v, char *buf, size_t n)
{
  if (v >= 0 && v < 0x1p64 && v == (double)(uint64_t)v)
    snprintf(buf, n, "%llu", (unsigned long long)v);
  else
    snprintf(buf, n, "%.1f", v);
  return buf;
}

static const char *verdict(uint64_t got, const volume_t *v)
{
  if ((double)got == v->formula)
    return "matches";
  if (got == v->exact)
    return "matches the segment table (ragged segments)";
  return "DIFFERS";
}

/* Adds record i to its rank's totals. */
static void tally_one(const cs_trace_export_t *e, uint64_t i, rank_stats_t *st)
{
  const cs_trace_header_t *h = &e->t->hdr;
  const cs_trace_rec_t *x = &e->t->rec[i];
  rank_stats_t *s = &st[x->rank];
  uint64_t es = x->slot < h->layout.nslots ? h->layout.slot[x->slot].esize : 0;
  s->events++;
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
    if (x->kind == CS_EV_PUT && x->peer != x->rank)
      s->put_remote += x->valid * es;
    break;
  case CS_EV_NOTIFY:
    s->notifies++;
    break; /* its cell's value: cells_end() */
  case CS_EV_PIPE: s->pipes++; break;
  case CS_EV_DDR: s->ddrs++; break;
  case CS_EV_DCCI: s->dccis++; break;
  case CS_EV_READ: s->reads++; break;
  case CS_TR_DMA_LAND:
    s->lines += x->round == CS_EV_NOTIFY && x->phys == 64;
    break;
  case CS_EV_WAIT:
    s->waits++;
    if (e->links->pair[i] >= 0) {
      uint64_t w = x->t_ns - e->t->rec[e->links->pair[i]].t_ns;
      s->wait_total_ns += w;
      if (w > s->wait_max_ns)
        s->wait_max_ns = w;
    }
    break;
  default:
    break;
  }
}

/* One notify record's target cell, for cells_end's sort. */
typedef struct cell_hit {
  uint32_t peer;
  uint64_t cell, i; /* i: the record's index (its seq order) */
} cell_hit_t;

static int hit_cmp(const void *a, const void *b)
{
  const cell_hit_t *x = a, *y = b;
  if (x->peer != y->peer)
    return x->peer < y->peer ? -1 : 1;
  if (x->cell != y->cell)
    return x->cell < y->cell ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

static void cell_seen(rank_stats_t *s, int32_t c, int *first)
{
  s->cell_min = *first || c < s->cell_min ? c : s->cell_min;
  s->cell_max = *first || c > s->cell_max ? c : s->cell_max;
  *first = 0;
}

/* The last value every signal cell of every window was left at (the
 * notify records' results, in seq order; 0 for a cell no notify reached),
 * as each rank's min and max over its non-self cells. Memory follows the
 * records, not the header's slot size, which a damaged file may make
 * anything. Returns 0 or -ENOMEM. */
static int cells_end(const cs_trace_export_t *e, rank_stats_t *st)
{
  const cs_trace_header_t *h = &e->t->hdr;
  if (h->program != 0 || !cs_algo_desc(h->algo) || h->layout.nslots < 2)
    return 0;
  uint64_t ncell = h->layout.slot[1].nbytes / 4, nr = h->nranks, n = 0;
  cell_hit_t *hit = malloc(sizeof(*hit) * (e->t->n + 1));
  if (!hit)
    return -ENOMEM;
  for (uint64_t i = 0; i < e->t->n; i++) {
    const cs_trace_rec_t *x = &e->t->rec[i];
    if (x->kind == CS_EV_NOTIFY && x->slot == 1 && x->peer < nr &&
        x->peer < CS_MAX_RANKS && x->cell < ncell && x->cell % nr != x->peer)
      hit[n++] = (cell_hit_t){.peer = x->peer, .cell = x->cell, .i = i};
  }
  if (n)
    qsort(hit, n, sizeof(*hit), hit_cmp);
  /* The cells the algorithm signals (cs_ar_signal_silent: not a self
   * cell, nor one a neighbour barrier leaves alone); without a
   * configuration, every non-self cell. A notify to any other cell still
   * counts in the range, where it shows. */
  cs_ar_cfg_t c;
  int have = header_cfg(h, &c) && cs_ar_signal_cells(&c) == ncell;
  uint64_t touched[CS_MAX_RANKS] = {0}, want[CS_MAX_RANKS] = {0};
  int first[CS_MAX_RANKS];
  for (uint32_t r = 0; r < nr && r < CS_MAX_RANKS; r++) {
    first[r] = 1;
    if (!have) { /* the header's slot may say anything: no walk over it */
      want[r] = ncell - (ncell > r ? (ncell - r + nr - 1) / nr : 0);
      continue;
    }
    for (uint64_t k = 0; k < ncell; k++) /* the configuration's cells */
      want[r] += !cs_ar_signal_silent(&c, r, k);
  }
  for (uint64_t k = 0; k < n; k++) {
    if (k + 1 < n && hit[k + 1].peer == hit[k].peer && hit[k + 1].cell == hit[k].cell)
      continue; /* not the cell's last notify */
    uint32_t r = hit[k].peer;
    touched[r] += !have || !cs_ar_signal_silent(&c, r, hit[k].cell);
    cell_seen(&st[r], e->t->rec[hit[k].i].observed, &first[r]);
  }
  for (uint32_t r = 0; r < nr && r < CS_MAX_RANKS; r++)
    if (touched[r] < want[r]) /* a signalled cell no notify reached */
      cell_seen(&st[r], 0, &first[r]);
  free(hit);
  return 0;
}

/* The signal check: notifies and end cells against the reference. */
static void stats_signals(FILE *f, const cs_trace_export_t *e,
                          const rank_stats_t *st)
{
  const cs_trace_header_t *h = &e->t->hdr;
  sig_ref_t s;
  if (!sig_expected(h, &s) || h->nranks < 2)
    return;
  int single = (h->modes & CS_TR_MODE_SINGLE_USE) != 0, ok = 1;
  fprintf(f, "\nsignals (%s): notifies per rank against %s = %llu (%u call%s); "
          "%s ends at %d\n",
          single ? "single-use, PR #2161" : "self-clearing epilogue of the "
          "later PRs", s.what, (unsigned long long)s.notifies, h->iters,
          h->iters == 1 ? "" : "s",
          single && cs_algo_desc(h->algo)->signalled
              ? cs_algo_desc(h->algo)->signalled : "every non-self cell",
          s.final);
  for (uint32_t r = 0; r < h->nranks; r++) {
    if (e->filter->has_rank && r != e->filter->rank)
      continue;
    int good = st[r].notifies == s.notifies && st[r].cell_min == s.final &&
               st[r].cell_max == s.final;
    ok &= good;
    fprintf(f, "  rank %-3u %8llu notifies, cells end at %d..%d: %s\n", r,
            (unsigned long long)st[r].notifies, st[r].cell_min, st[r].cell_max,
            good ? "matches" : "DIFFERS");
  }
  fprintf(f, "verdict: %s\n", ok ? "the signals match the reference"
                                 : "the signals DIFFER from the reference");
}

/* Totals of every shown rank record; returns the shown fault records. */
static uint64_t tally(const cs_trace_export_t *e, rank_stats_t *st)
{
  uint64_t faults = 0;
  for (uint64_t i = 0; i < e->t->n; i++) {
    const cs_trace_rec_t *x = &e->t->rec[i];
    if (!cs_trace_shown(e->filter, x))
      continue;
    if (cs_trace_rec_is_launcher(x))
      faults += x->kind == CS_TR_FAULT;
    else
      tally_one(e, i, st);
  }
  return faults;
}

static void stats_jsonl(FILE *f, const cs_trace_export_t *e,
                        const rank_stats_t *st, uint64_t faults, int can)
{
  const cs_trace_header_t *h = &e->t->hdr;
  const cs_trace_filter_t *o = e->filter;
  volume_t v;
  sig_ref_t sr;
  for (uint32_t r = 0; r < h->nranks; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    const rank_stats_t *s = &st[r];
    fprintf(f, "{\"type\":\"stats\",\"rank\":%u,\"events\":%llu,"
            "\"load_local_bytes\":%llu,\"load_remote_bytes\":%llu,"
            "\"store_bytes\":%llu,\"put_remote_bytes\":%llu,"
            "\"notifies\":%llu,\"waits\":%llu,"
            "\"wait_total_ns\":%llu,\"wait_max_ns\":%llu", r,
            (unsigned long long)s->events, (unsigned long long)s->load_local,
            (unsigned long long)s->load_remote, (unsigned long long)s->stored,
            (unsigned long long)s->put_remote,
            (unsigned long long)s->notifies, (unsigned long long)s->waits,
            (unsigned long long)s->wait_total_ns,
            (unsigned long long)s->wait_max_ns);
    fprintf(f, ",\"pipe_barriers\":%llu,\"ddr_fences\":%llu,\"dccis\":%llu,"
            "\"cell_reads\":%llu,\"line_writebacks\":%llu",
            (unsigned long long)s->pipes, (unsigned long long)s->ddrs,
            (unsigned long long)s->dccis, (unsigned long long)s->reads,
            (unsigned long long)s->lines);
    if (h->program == 0 && h->layout.nslots >= 2 && h->nranks > 1)
      fprintf(f, ",\"signal_cells_min\":%d,\"signal_cells_max\":%d",
              s->cell_min, s->cell_max);
    if (can && sig_expected(h, &sr))
      fprintf(f, ",\"notifies_reference\":%llu,\"signal_cells_reference\":%d",
              (unsigned long long)sr.notifies, sr.final);
    if (can && expected(h, r, &v))
      fprintf(f, ",\"reference\":\"%s\",\"reference_bytes\":%.17g,"
              "\"segment_table_bytes\":%llu,\"verdict\":\"%s\"", v.what,
              v.formula, (unsigned long long)v.exact,
              verdict(cs_algo_desc(h->algo)->push ? s->put_remote
                                                  : s->load_remote, &v));
    fprintf(f, "}\n");
  }
  fprintf(f, "{\"type\":\"stats_summary\",\"records\":%llu,\"faults\":%llu}\n",
          (unsigned long long)e->t->n, (unsigned long long)faults);
}

/* The text header block and the per-rank table. */
static void stats_table(FILE *f, const cs_trace_export_t *e,
                        const rank_stats_t *st, uint64_t faults)
{
  const cs_trace_filter_t *o = e->filter;
  char a[32], b[32];
  cs_trace_export_text_header(f, e, e->t->n);
  fprintf(f, "\n%4s %8s %13s %13s %11s %8s %7s %15s %13s\n", "rank", "events",
          "load local B", "load remote B", "stored B", "notifies", "waits",
          "wait total us", "wait max us");
  for (uint32_t r = 0; r < e->t->hdr.nranks; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    const rank_stats_t *s = &st[r];
    fprintf(f, "%4u %8llu %13llu %13llu %11llu %8llu %7llu %15s %13s\n", r,
            (unsigned long long)s->events, (unsigned long long)s->load_local,
            (unsigned long long)s->load_remote, (unsigned long long)s->stored,
            (unsigned long long)s->notifies, (unsigned long long)s->waits,
            cs_trace_us_str(s->wait_total_ns, a, sizeof(a)),
            cs_trace_us_str(s->wait_max_ns, b, sizeof(b)));
  }
  uint64_t any = 0;
  for (uint32_t r = 0; r < e->t->hdr.nranks; r++)
    any += st[r].pipes + st[r].ddrs + st[r].dccis + st[r].reads + st[r].lines;
  if (any) { /* the device's own events (docs/memory-models.md) */
    fprintf(f, "\n%4s %13s %10s %6s %10s %15s\n", "rank", "pipe barriers",
            "DDR fences", "dccis", "cell reads", "line writebacks");
    for (uint32_t r = 0; r < e->t->hdr.nranks; r++)
      if (!o->has_rank || r == o->rank)
        fprintf(f, "%4u %13llu %10llu %6llu %10llu %15llu\n", r,
                (unsigned long long)st[r].pipes, (unsigned long long)st[r].ddrs,
                (unsigned long long)st[r].dccis, (unsigned long long)st[r].reads,
                (unsigned long long)st[r].lines);
  }
  if (faults)
    fprintf(f, "(the run crashed: %llu fault record%s; the volumes below are "
            "of a partial run)\n", (unsigned long long)faults,
            faults == 1 ? "" : "s");
}

/* What the shown ranks' remote loads add up to against the volumes. */
typedef struct verdicts {
  int      all_formula, all_exact, total_ok;
  uint64_t total; /* bytes, shown ranks */
} verdicts_t;

/* One line per shown rank, and the all-ranks line of an algorithm whose
 * ranks move different amounts by segment (the ring). Only for a header
 * that header_cfg takes. */
static void volume_lines(FILE *f, const cs_trace_export_t *e,
                         const rank_stats_t *st, verdicts_t *vd)
{
  const cs_trace_header_t *h = &e->t->hdr;
  const cs_trace_filter_t *o = e->filter;
  const cs_algo_desc_t *a = cs_algo_desc(h->algo);
  uint32_t nr = h->nranks, es = h->layout.slot[0].esize;
  char fb[32];
  volume_t v;
  cs_ar_cfg_t c;
  header_cfg(h, &c);
  for (uint32_t r = 0; r < nr; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    uint64_t got = a->push ? st[r].put_remote : st[r].load_remote;
    expected(h, r, &v);
    vd->total += got;
    vd->all_formula &= (double)got == v.formula;
    vd->all_exact &= got == v.exact;
    if (a->total_volume)
      fprintf(f, "  rank %-3u %10llu B   %s = %s B, segment table %llu B: %s\n",
              r, (unsigned long long)got, v.what,
              num_str(v.formula, fb, sizeof(fb)), (unsigned long long)v.exact,
              verdict(got, &v));
    else
      fprintf(f, "  rank %-3u %10llu B   %s = %llu B: %s\n", r,
              (unsigned long long)got, v.what, (unsigned long long)v.exact,
              verdict(got, &v));
  }
  if (a->total_volume && nr > 1 && !o->has_rank) {
    const char *what;
    uint64_t want = a->total_volume(&c, es, &what);
    vd->total_ok = vd->total == want;
    fprintf(f, "  all ranks %8llu B   %s = %llu B: %s\n",
            (unsigned long long)vd->total, what, (unsigned long long)want,
            vd->total_ok ? "matches" : "DIFFERS");
  }
}

/* The volume check of a whole allreduce trace and its verdict. */
static void stats_volume(FILE *f, const cs_trace_export_t *e,
                         const rank_stats_t *st, uint64_t faults)
{
  const cs_trace_header_t *h = &e->t->hdr;
  int one = e->filter->has_rank;
  uint32_t nr = h->nranks, es = h->layout.slot[0].esize;
  char fb[32];
  volume_t v;
  expected(h, 0, &v);
  fprintf(f, "\nremote %s per rank against %s (%s, N = %u, S = %llu x %llu B "
          "= %llu B, %u call%s): %s B\n",
          cs_algo_desc(h->algo)->push ? "puts" : "loads", v.what,
          cs_algo_name((cs_algo_t)h->algo), nr, (unsigned long long)h->count,
          (unsigned long long)es, (unsigned long long)(h->count * es), h->iters,
          h->iters == 1 ? "" : "s", num_str(v.formula, fb, sizeof(fb)));
  verdicts_t vd = {1, 1, 1, 0};
  volume_lines(f, e, st, &vd);
  const cs_algo_desc_t *a = cs_algo_desc(h->algo);
  cs_ar_cfg_t c;
  header_cfg(h, &c);
  if (a->segment_len && !vd.all_formula && vd.all_exact) {
    fprintf(f, "  segments (elements):");
    for (uint32_t k = 0; k < nr; k++)
      fprintf(f, " %llu", (unsigned long long)a->segment_len(&c, k, es));
    fprintf(f, a->push ? "; rank r puts all but segments r and r+1, so per "
                         "rank 2S - |seg r| - |seg r+1|\n"
                       : "; rank r reads all but segments r-1 and r, so per "
                         "rank 2S - |seg r-1| - |seg r|\n");
  }
  const char *who = one ? "the rank matches" : "every rank matches";
  if (vd.all_formula && vd.total_ok)
    fprintf(f, "verdict: %s %s\n", who, v.what);
  else if (vd.all_exact && vd.total_ok)
    fprintf(f, "verdict: %s its segment table%s\n", who,
            one ? "" : "; the total matches 2(N-1)*S");
  else
    fprintf(f, "verdict: DIFFERS from the algorithm's volume%s\n",
            faults ? " (the run crashed)" : "");
}

int cs__trace_write_stats(FILE *f, const cs_trace_export_t *e, int jsonl)
{
  const cs_trace_header_t *h = &e->t->hdr;
  const cs_trace_filter_t *o = e->filter;
  rank_stats_t *st = calloc(h->nranks, sizeof(*st));
  if (!st)
    return -ENOMEM;
  uint64_t faults = tally(e, st);
  if (cells_end(e, st) < 0) {
    free(st);
    return -ENOMEM;
  }
  /* The volume check needs every load of the rank. */
  int whole = !o->kinds && o->from == 0 && o->to == UINT64_MAX;
  volume_t v;
  int can = whole && expected(h, 0, &v);
  if (jsonl) {
    stats_jsonl(f, e, st, faults, can);
  } else {
    stats_table(f, e, st, faults);
    if (can) {
      stats_volume(f, e, st, faults);
      if (!faults)
        stats_signals(f, e, st);
    }
    else if (!whole && h->program == 0)
      fprintf(f, "\nvolume check: skipped (--kind/--from/--to hide events)\n");
  }
  free(st);
  return 0;
}
