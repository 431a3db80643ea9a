/*
 * export.c - the text, JSON-lines and Chrome exporters (export.h).
 *
 * Owns: the layout of each output format, the Chrome lanes and slice
 * extents, JSON string escaping.
 * Does not own what an event says (describe.c) or how records link
 * (analysis.c); reads a loaded trace only.
 * Called by `collsim trace` (cli/collsim/trace_cmd.c); the text header also by its
 * --stats.
 */
#define _GNU_SOURCE
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"
#include "sha256.h"

int cs_trace_shown(const cs_trace_filter_t *o, const cs_trace_rec_t *x)
{
  if (o->has_rank && x->rank != o->rank)
    return 0;
  if (o->kinds && !(o->kinds & (1u << x->kind)))
    return 0;
  return x->seq >= o->from && x->seq <= o->to;
}

/* The "what" of record i, with the partners its links name. */
static void describe_at(const cs_trace_export_t *e, uint64_t i, char *buf,
                        size_t n)
{
  const cs_trace_t *t = e->t;
  int64_t b = -1, s = -1;
  if (t->rec[i].kind == CS_EV_WAIT) {
    b = e->links->pair[i];
    s = e->links->satisfier[i];
  }
  cs_trace_describe(buf, n, &t->hdr, e->names, &t->rec[i],
                    b >= 0 ? &t->rec[b] : NULL, s >= 0 ? &t->rec[s] : NULL);
}

/* ------------------------------------------------------------ text */

/* The "program", "input" and "run" lines of an allreduce trace. */
static void text_program(FILE *f, const cs_trace_header_t *h,
                         const cs_trace_names_t *nm)
{
  uint32_t es = cs_trace_dtype_size(nm, h->dtype);
  if (h->algo == CS_TRACE_ALGO_USER) {
    char hex[65];
    cs_sha256_hex(h->algo_sha256, hex);
    fprintf(f, "  collective %.256s (--algo), SHA-256 %s\n", h->algo_path, hex);
  }
  fprintf(f, "  program   %s %s, %u rank%s, count %llu x %s (%llu B "
          "per rank), op %s\n", h->algo == CS_TRACE_ALGO_USER ? "collective"
          : "allreduce", cs_trace_algo_name(nm, h->algo), h->nranks,
          h->nranks == 1 ? "" : "s", (unsigned long long)h->count,
          cs_trace_dtype_name(nm, h->dtype),
          (unsigned long long)(h->count * es), cs_trace_op_name(nm, h->op));
  if (h->shape_rows)
    fprintf(f, "  shape     %u x %u, valid %u x %u%s\n", h->shape_rows,
            h->shape_cols, h->valid_rows, h->valid_cols,
            h->valid_rows < h->shape_rows || h->valid_cols < h->shape_cols
                ? " (partial: the rectangle path, docs/algorithms.md §3.3)"
                : "");
  if (cs_trace_is_file_fill(nm, h->fill))
    fprintf(f, "  input     from a file, input hash 0x%016llx\n",
            (unsigned long long)h->input_hash);
  else
    fprintf(f, "  input     fill %s, seed %llu, input hash 0x%016llx\n",
            cs_trace_fill_name(nm, h->fill), (unsigned long long)h->seed,
            (unsigned long long)h->input_hash);
  fprintf(f, "  run       tile %u B, %u call%s, bug %s\n", h->tile_bytes,
          h->iters, h->iters == 1 ? "" : "s", cs_trace_bug_name(nm, h->bug));
}

void cs_trace_export_text_header(FILE *f, const cs_trace_export_t *e,
                                 uint64_t nshown)
{
  const cs_trace_t *t = e->t;
  const cs_trace_header_t *h = &t->hdr;
  char sched[80], ver[24], nb[24], us[32];
  cs_trace_field_str(h->schedule, sizeof(h->schedule), sched, sizeof(sched));
  cs_trace_field_str(h->version_str, sizeof(h->version_str), ver, sizeof(ver));
  fprintf(f, "collsim trace %s: format v%u, recorded by collsim %s\n", e->path,
          h->version, ver[0] ? ver : "?");
  if (h->program == 1)
    fprintf(f, "  program   ping, %u rank%s, %u round%s\n", h->nranks,
            h->nranks == 1 ? "" : "s", h->rounds, h->rounds == 1 ? "" : "s");
  else
    text_program(f, h, e->names);
  if (h->fault_kind)
    fprintf(f, "  fault     injected: rank %u, %s at event %llu\n", h->fault_rank,
            cs_fault_kind_name((cs_fault_kind_t)h->fault_kind),
            (unsigned long long)h->fault_event);
  fprintf(f, "  schedule  %s, memory model %s, wait timeout %.1f s\n",
          sched[0] ? sched : "?", cs_trace_model_name(h->memory_model),
          (double)h->timeout_ns / 1e9);
  if (!strcmp(sched, "mpi")) /* collsim-mpi --trace (docs/mpi.md) */
    fprintf(f, "  time      logical: ranks over MPI share no clock; each "
            "record's time is its Lamport clock, one tick shown as 1 us\n");
  fprintf(f, "  slots     %-2s %-16s %10s %10s %10s %5s\n", "#", "name",
          "offset", "bytes", "alloc", "esize");
  for (uint32_t s = 0; s < h->layout.nslots; s++) {
    const cs_slot_t *sl = &h->layout.slot[s];
    fprintf(f, "            %-2u %-16s %10llu %10llu %10llu %5u\n", s,
            cs_trace_slot_name(&h->layout, s, nb, sizeof(nb)),
            (unsigned long long)sl->off, (unsigned long long)sl->nbytes,
            (unsigned long long)sl->alloc, sl->esize);
  }
  if (t->n)
    fprintf(f, "  events    %llu records, seq %llu..%llu, %s us; shown %llu\n",
            (unsigned long long)t->n, (unsigned long long)t->rec[0].seq,
            (unsigned long long)t->rec[t->n - 1].seq,
            cs_trace_us_str(t->rec[t->n - 1].t_ns > t->rec[0].t_ns
                                ? t->rec[t->n - 1].t_ns - t->rec[0].t_ns : 0,
                            us, sizeof(us)),
            (unsigned long long)nshown);
  else
    fprintf(f, "  events    none recorded\n");
}

static void text_event(FILE *f, const cs_trace_export_t *e, uint64_t i)
{
  const cs_trace_rec_t *x = &e->t->rec[i];
  char what[200], tag[48], us[32], ts[40], rk[16];
  describe_at(e, i, what, sizeof(what));
  snprintf(ts, sizeof(ts), "+%sus",
           cs_trace_us_str(x->t_ns - e->links->start_ns, us, sizeof(us)));
  cs_trace_tag_str(&e->t->hdr, e->names, x, tag, sizeof(tag));
  if (x->rank == UINT32_MAX)
    snprintf(rk, sizeof(rk), "--");
  else
    snprintf(rk, sizeof(rk), "r%u", x->rank);
  fprintf(f, "%7llu  %14s  %-4s %-10s %-50s %s%s\n",
          (unsigned long long)x->seq, ts, rk,
          cs_trace_kind_name(x->kind), what, tag,
          (x->opcmp & CS_TR_FAILED) && !cs_trace_rec_is_launcher(x)
              ? "  <- FAILED: the rank stopped here" : "");
}

int cs_trace_export_text(FILE *f, const cs_trace_export_t *e)
{
  const cs_trace_t *t = e->t;
  uint64_t nshown = 0;
  for (uint64_t i = 0; i < t->n; i++)
    nshown += cs_trace_shown(e->filter, &t->rec[i]);
  cs_trace_export_text_header(f, e, nshown);
  fprintf(f, "\n%7s  %14s  %-4s %-10s %-50s %s\n", "seq", "time", "rank",
          "kind", "what", "tag");
  for (uint64_t i = 0; i < t->n; i++)
    if (cs_trace_shown(e->filter, &t->rec[i]))
      text_event(f, e, i);
  return 0;
}

/* ------------------------------------------------------------ JSON */

void cs_trace_json_str(FILE *f, const char *s)
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

/* The header object up to (not including) "schedule". */
static void jsonl_config(FILE *f, const cs_trace_header_t *h,
                         const cs_trace_names_t *nm)
{
  fprintf(f, "{\"type\":\"header\",\"magic\":\"CSTRACE\",\"version\":%u,"
          "\"header_bytes\":%u,\"record_bytes\":%u,\"nranks\":%u,"
          "\"count\":%llu,\"program\":\"%s\",\"algo\":", h->version,
          h->header_bytes, h->record_bytes, h->nranks,
          (unsigned long long)h->count, h->program == 1 ? "ping" : "allreduce");
  cs_trace_json_str(f, h->algo == 255 ? "none" : cs_trace_algo_name(nm, h->algo));
  fprintf(f, ",\"algo_id\":%u,\"dtype\":", h->algo);
  cs_trace_json_str(f, cs_trace_dtype_name(nm, h->dtype));
  fprintf(f, ",\"dtype_id\":%u,\"op\":", h->dtype);
  cs_trace_json_str(f, cs_trace_op_name(nm, h->op));
  fprintf(f, ",\"op_id\":%u,\"fill\":", h->op);
  cs_trace_json_str(f, cs_trace_fill_name(nm, h->fill));
  fprintf(f, ",\"fill_id\":%u,\"seed\":%llu,\"input_hash\":\"0x%016llx\","
          "\"tile_bytes\":%u,\"iters\":%u,\"memory_model\":\"%s\","
          "\"memory_model_id\":%u,\"program_id\":%u,\"bug\":%u,\"bug_name\":\"%s\","
          "\"rounds\":%u,\"fault_kind\":\"%s\",\"fault_rank\":%u,"
          "\"fault_event\":%llu,\"modes\":%u,", h->fill, (unsigned long long)h->seed,
          (unsigned long long)h->input_hash, h->tile_bytes, h->iters,
          cs_trace_model_name(h->memory_model), h->memory_model, h->program,
          h->bug, cs_trace_bug_name(nm, h->bug), h->rounds,
          cs_fault_kind_name((cs_fault_kind_t)h->fault_kind), h->fault_rank,
          (unsigned long long)h->fault_event, h->modes);
  if (h->shape_rows)
    fprintf(f, "\"shape\":[%u,%u],\"valid\":[%u,%u],", h->shape_rows,
            h->shape_cols, h->valid_rows, h->valid_cols);
  if (h->algo_path[0]) {
    char so[sizeof(h->algo_path) + 1];
    cs_trace_field_str(h->algo_path, sizeof(h->algo_path), so, sizeof(so));
    fprintf(f, "\"algo_path\":");
    cs_trace_json_str(f, so);
    char hex[65];
    cs_sha256_hex(h->algo_sha256, hex);
    fprintf(f, ",\"algo_sha256\":\"%s\",", hex);
  }
  fprintf(f, "\"schedule\":");
}

static void jsonl_header(FILE *f, const cs_trace_export_t *e)
{
  const cs_trace_t *t = e->t;
  const cs_trace_header_t *h = &t->hdr;
  char sched[80], ver[24], sn[24];
  cs_trace_field_str(h->schedule, sizeof(h->schedule), sched, sizeof(sched));
  cs_trace_field_str(h->version_str, sizeof(h->version_str), ver, sizeof(ver));
  jsonl_config(f, h, e->names);
  cs_trace_json_str(f, sched);
  fprintf(f, ",\"collsim_version\":");
  cs_trace_json_str(f, ver);
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
    cs_trace_json_str(f, cs_trace_slot_name(&h->layout, s, sn, sizeof(sn)));
    fprintf(f, ",\"off\":%llu,\"nbytes\":%llu,\"alloc\":%llu,\"esize\":%u}",
            (unsigned long long)sl->off, (unsigned long long)sl->nbytes,
            (unsigned long long)sl->alloc, sl->esize);
  }
  fprintf(f, "]}\n");
}

/* The links of record i that JSON lines carry. */
static void jsonl_links(FILE *f, const cs_trace_export_t *e, uint64_t i)
{
  const cs_trace_rec_t *rec = e->t->rec, *x = &rec[i];
  const cs_trace_links_t *d = e->links;
  if (x->kind == CS_EV_WAIT && d->pair[i] >= 0)
    fprintf(f, ",\"begin_seq\":%llu,\"waited_ns\":%llu",
            (unsigned long long)rec[d->pair[i]].seq,
            (unsigned long long)(x->t_ns - rec[d->pair[i]].t_ns));
  if (x->kind == CS_EV_WAIT && d->satisfier[i] >= 0)
    fprintf(f, ",\"satisfied_by\":%llu",
            (unsigned long long)rec[d->satisfier[i]].seq);
  if (x->kind == CS_TR_DMA_LAND && d->post[i] >= 0)
    fprintf(f, ",\"post_seq\":%llu", (unsigned long long)rec[d->post[i]].seq);
}

static void jsonl_event(FILE *f, const cs_trace_export_t *e, uint64_t i)
{
  const cs_trace_rec_t *x = &e->t->rec[i];
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
  cs_trace_json_str(f, cs_trace_rec_is_launcher(x) || x->kind == CS_EV_MARK ||
                      x->kind == CS_EV_FENCE || x->kind == CS_EV_REDUCE ||
                      x->kind == CS_EV_PIPE || x->kind == CS_EV_DDR ||
                      (x->kind == CS_EV_DCCI &&
                       (x->opcmp & ~CS_TR_FAILED) == CS_DCCI_ALL)
                  ? "" : cs_trace_slot_name(&e->t->hdr.layout, x->slot, sn,
                                            sizeof(sn)));
  fprintf(f, ",\"elem_off\":%llu,\"valid\":%u,\"phys\":%u,\"cell\":%u,"
          "\"opcmp\":%u,\"value\":%d,\"observed\":%d,\"dma_id\":%llu,"
          "\"phase\":%u,\"round\":%u,\"step\":%u,\"checksum\":\"0x%08x\","
          "\"failed\":%s,\"tag\":",
          (unsigned long long)x->elem_off, x->valid, x->phys, x->cell,
          x->opcmp & ~CS_TR_FAILED, x->value, x->observed,
          (unsigned long long)x->dma_id, x->phase, x->round, x->step,
          x->checksum, (x->opcmp & CS_TR_FAILED) ? "true" : "false");
  cs_trace_json_str(f, cs_trace_tag_str(&e->t->hdr, e->names, x, tag, sizeof(tag)));
  jsonl_links(f, e, i);
  describe_at(e, i, what, sizeof(what));
  fprintf(f, ",\"text\":");
  cs_trace_json_str(f, what);
  fprintf(f, "}\n");
}

int cs_trace_export_jsonl(FILE *f, const cs_trace_export_t *e)
{
  jsonl_header(f, e);
  for (uint64_t i = 0; i < e->t->n; i++)
    if (cs_trace_shown(e->filter, &e->t->rec[i]))
      jsonl_event(f, e, i);
  return 0;
}

/* ------------------------------------------------------------ chrome */

/* Lanes (Chrome tids) of a rank. */
enum { LANE_CONTROL = 0, LANE_COMPUTE = 1, LANE_SIGNAL = 2, LANE_DMA = 3,
       NLANES = 4 };
static const char *const lane_names[NLANES] = {"control", "compute", "signal",
                                               "dma"};

static uint32_t lane_of(uint32_t kind)
{
  switch (kind) {
  case CS_EV_LOAD: case CS_EV_STORE: case CS_EV_PUT: case CS_EV_FENCE:
  case CS_EV_REDUCE: case CS_EV_PIPE: case CS_EV_DDR:
    return LANE_COMPUTE;
  case CS_EV_NOTIFY: case CS_EV_WAIT: case CS_TR_WAIT_BEGIN: case CS_EV_READ:
  case CS_EV_DCCI:
    return LANE_SIGNAL;
  case CS_TR_DMA_POST: case CS_TR_DMA_LAND:
    return LANE_DMA;
  default:
    return LANE_CONTROL;
  }
}

typedef struct chrome {
  FILE                    *f;
  const cs_trace_export_t *e;
  const uint64_t          *start, *end; /* every record's slice, ns */
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
  cs_trace_json_str(c->f, name);
  fprintf(c->f, "}}");
  ch_begin(c);
  fprintf(c->f, "{\"name\":\"%s_sort_index\",\"ph\":\"M\",\"pid\":%u,",
          tid >= 0 ? "thread" : "process", pid);
  if (tid >= 0)
    fprintf(c->f, "\"tid\":%d,", tid);
  fprintf(c->f, "\"args\":{\"sort_index\":%u}}", sort);
}

/* The event's fields as "args". */
static void ch_args(chrome_t *c, uint64_t i)
{
  const cs_trace_rec_t *x = &c->e->t->rec[i];
  char what[200], tag[48];
  describe_at(c->e, i, what, sizeof(what));
  fprintf(c->f, ",\"args\":{\"seq\":%llu,\"kind\":\"%s\",\"what\":",
          (unsigned long long)x->seq, cs_trace_kind_name(x->kind));
  cs_trace_json_str(c->f, what);
  fprintf(c->f, ",\"tag\":");
  cs_trace_json_str(c->f, cs_trace_tag_str(&c->e->t->hdr, c->e->names, x, tag,
                                  sizeof(tag)));
  fprintf(c->f, ",\"peer\":%u,\"slot\":%u,\"elem_off\":%llu,\"valid\":%u,"
          "\"phys\":%u,\"cell\":%u,\"opcmp\":%u,\"value\":%d,\"observed\":%d,"
          "\"dma_id\":%llu,\"t_ns\":%llu,\"failed\":%s}",
          x->peer, x->slot, (unsigned long long)x->elem_off, x->valid, x->phys,
          x->cell, x->opcmp & ~CS_TR_FAILED, x->value, x->observed,
          (unsigned long long)x->dma_id, (unsigned long long)x->t_ns,
          (x->opcmp & CS_TR_FAILED) ? "true" : "false");
}

/* A complete slice [ts, ts + dur) ns, dur >= 1, of record i. */
static void ch_slice(chrome_t *c, uint64_t i, const char *name, uint32_t pid,
                     uint32_t tid, uint64_t ts, uint64_t dur)
{
  char a[32], b[32];
  ch_begin(c);
  fprintf(c->f, "{\"name\":");
  cs_trace_json_str(c->f, name);
  fprintf(c->f, ",\"cat\":\"collsim\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,"
          "\"ts\":%s,\"dur\":%s", pid, tid,
          cs_trace_us_str(ts - c->t0, a, sizeof(a)),
          cs_trace_us_str(dur ? dur : 1, b, sizeof(b)));
  ch_args(c, i);
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
          (unsigned long long)id, pid, tid,
          cs_trace_us_str(ts - c->t0, a, sizeof(a)),
          ph == 'f' ? ",\"bp\":\"e\"" : "");
}

/* A point inside slice [start, end]: 1 ns before its end when it lasts at
 * least 2 ns, else its start. */
static uint64_t inside(uint64_t start, uint64_t end)
{
  return end >= start + 2 ? end - 1 : start;
}

/* The per-rank state of the extent pass. */
typedef struct extent_state {
  uint64_t *prev; /* t_ns of the rank's previous record */
  uint64_t *last; /* largest t_ns of the rank's records */
  int64_t  *mark; /* the rank's open phase marker, -1 none */
  uint8_t  *seen; /* the rank has had a record */
} extent_state_t;

/* The slice [start, end] ns of rank record i: a wait from its begin, a
 * mark until the rank's next mark, any other event from the rank's
 * previous one; at least 1 ns. */
static void extent_of(const cs_trace_t *t, const cs_trace_links_t *d,
                      uint64_t i, extent_state_t *s, uint64_t *start,
                      uint64_t *end)
{
  const cs_trace_rec_t *x = &t->rec[i];
  uint32_t r = x->rank;
  end[i] = x->t_ns;
  if (x->kind == CS_EV_WAIT && d->pair[i] >= 0)
    start[i] = t->rec[d->pair[i]].t_ns;
  else if (x->kind == CS_TR_WAIT_BEGIN || x->kind == CS_EV_MARK)
    start[i] = x->t_ns;
  else
    start[i] = s->seen[r] && s->prev[r] < x->t_ns ? s->prev[r] : x->t_ns;
  if (end[i] <= start[i])
    end[i] = start[i] + 1;
  if (x->kind == CS_EV_MARK) {
    int64_t m = s->mark[r];
    if (m >= 0)
      end[m] = x->t_ns > start[m] ? x->t_ns : start[m] + 1;
    s->mark[r] = (int64_t)i;
  }
  if (x->kind == CS_TR_WAIT_BEGIN && d->pair[i] < 0)
    end[i] = d->end_ns > x->t_ns ? d->end_ns : x->t_ns + 1; /* never ended */
  s->prev[r] = x->t_ns;
  s->last[r] = x->t_ns > s->last[r] ? x->t_ns : s->last[r];
  s->seen[r] = 1;
}

/* Slice extents of every record. Returns 0 or -ENOMEM. */
static int chrome_extents(const cs_trace_t *t, const cs_trace_links_t *d,
                          uint64_t *start, uint64_t *end)
{
  uint32_t nr = t->hdr.nranks;
  extent_state_t s = {calloc(nr, sizeof(uint64_t)), calloc(nr, sizeof(uint64_t)),
                      malloc(nr * sizeof(int64_t)), calloc(nr, 1)};
  if (!s.prev || !s.last || !s.mark || !s.seen) {
    free(s.prev); free(s.last); free(s.mark); free(s.seen);
    return -ENOMEM;
  }
  for (uint32_t r = 0; r < nr; r++)
    s.mark[r] = -1;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (cs_trace_rec_is_launcher(x))
      start[i] = end[i] = x->t_ns;
    else
      extent_of(t, d, i, &s, start, end);
  }
  for (uint32_t r = 0; r < nr; r++) {
    int64_t m = s.mark[r];
    if (m >= 0)
      end[m] = s.last[r] > start[m] ? s.last[r] : start[m] + 1;
  }
  free(s.prev); free(s.last); free(s.mark); free(s.seen);
  return 0;
}

/* The document's head and every shown rank's process and lane names. */
static void chrome_prologue(chrome_t *c)
{
  const cs_trace_header_t *h = &c->e->t->hdr;
  const cs_trace_names_t *nm = c->e->names;
  const cs_trace_filter_t *o = c->e->filter;
  char name[64];
  fprintf(c->f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"trace\":");
  cs_trace_json_str(c->f, c->e->path);
  fprintf(c->f, ",\"program\":\"%s\",\"algo\":",
          h->program == 1 ? "ping" : "allreduce");
  cs_trace_json_str(c->f, h->algo == 255 ? "none" : cs_trace_algo_name(nm, h->algo));
  fprintf(c->f, ",\"nranks\":%u,\"count\":%llu,\"dtype\":\"%s\",\"op\":\"%s\","
          "\"iters\":%u,\"memory_model\":\"%s\"},\"traceEvents\":[", h->nranks,
          (unsigned long long)h->count, cs_trace_dtype_name(nm, h->dtype),
          cs_trace_op_name(nm, h->op), h->iters,
          cs_trace_model_name(h->memory_model));
  for (uint32_t r = 0; r < h->nranks; r++) {
    if (o->has_rank && r != o->rank)
      continue;
    snprintf(name, sizeof(name), "rank %u", r);
    ch_meta(c, "process_name", r, -1, name, r);
    for (int l = 0; l < NLANES; l++)
      ch_meta(c, "thread_name", r, l, lane_names[l], (uint32_t)l);
  }
}

/* A fault (on its rank) or abort (on the launcher process, named the first
 * time) as an instant event. */
static void chrome_launcher(chrome_t *c, uint64_t i, int *launcher_named)
{
  const cs_trace_rec_t *x = &c->e->t->rec[i];
  uint32_t launcher = c->e->t->hdr.nranks;
  uint32_t pid = x->kind == CS_TR_ABORT ? launcher : x->rank;
  char what[200], a[32];
  if (pid == launcher && !*launcher_named) {
    ch_meta(c, "process_name", launcher, -1, "launcher", launcher);
    ch_meta(c, "thread_name", launcher, 0, "control", 0);
    *launcher_named = 1;
  }
  cs_trace_launcher_str(x, what, sizeof(what));
  ch_begin(c);
  fprintf(c->f, "{\"name\":");
  cs_trace_json_str(c->f, what);
  fprintf(c->f, ",\"cat\":\"collsim\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%u,"
          "\"tid\":0,\"ts\":%s", pid,
          cs_trace_us_str(x->t_ns - c->t0, a, sizeof(a)));
  ch_args(c, i);
  fputc('}', c->f);
}

/* The slice name of a rank record: its kind, with the peer or the marker. */
static const char *slice_name(chrome_t *c, const cs_trace_rec_t *x, char *buf,
                              size_t n)
{
  const char *nm = cs_trace_kind_name(x->kind);
  switch (x->kind) {
  case CS_EV_LOAD:
    if (x->peer == x->rank)
      return nm;
    snprintf(buf, n, "load r%u", x->peer);
    return buf;
  case CS_EV_PUT:
  case CS_EV_NOTIFY:
    snprintf(buf, n, "%s r%u", nm, x->peer);
    return buf;
  case CS_EV_WAIT:
    return (x->opcmp & CS_TR_FAILED) ? "wait (failed)" : "wait";
  case CS_TR_WAIT_BEGIN:
    return "wait (never ended)";
  case CS_EV_MARK:
    return cs_trace_mark_str(&c->e->t->hdr, c->e->names, x, buf, n);
  default:
    return nm;
  }
}

/* A rank record's slice, and the arrow into it when both ends are shown. */
static void chrome_event(chrome_t *c, uint64_t i)
{
  const cs_trace_rec_t *rec = c->e->t->rec, *x = &rec[i];
  const cs_trace_links_t *d = c->e->links;
  const uint64_t *start = c->start, *end = c->end;
  char name[64];
  ch_slice(c, i, slice_name(c, x, name, sizeof(name)), x->rank,
           lane_of(x->kind), start[i], end[i] - start[i]);
  int64_t s = x->kind == CS_EV_WAIT ? d->satisfier[i]
            : x->kind == CS_TR_DMA_LAND ? d->post[i] : -1;
  if (s >= 0 && cs_trace_shown(c->e->filter, &rec[s])) {
    const cs_trace_rec_t *y = &rec[s];
    const char *fn = x->kind == CS_EV_WAIT ? "signal" : "dma";
    c->flow_id++;
    ch_flow(c, 's', fn, c->flow_id, y->rank, lane_of(y->kind),
            inside(start[s], end[s]));
    ch_flow(c, 'f', fn, c->flow_id, x->rank, lane_of(x->kind),
            inside(start[i], end[i]));
  }
}

int cs_trace_export_chrome(FILE *f, const cs_trace_export_t *e)
{
  const cs_trace_t *t = e->t;
  size_t m = t->n ? t->n : 1;
  uint64_t *start = malloc(m * sizeof(uint64_t));
  uint64_t *end = malloc(m * sizeof(uint64_t));
  if (!start || !end || chrome_extents(t, e->links, start, end) < 0) {
    free(start);
    free(end);
    return -ENOMEM;
  }
  chrome_t c = {f, e, start, end, 1, 0, e->links->start_ns};
  chrome_prologue(&c);
  int launcher_named = 0;
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (!cs_trace_shown(e->filter, x))
      continue;
    if (cs_trace_rec_is_launcher(x))
      chrome_launcher(&c, i, &launcher_named);
    else if (x->kind != CS_TR_WAIT_BEGIN || e->links->pair[i] < 0)
      chrome_event(&c, i); /* a paired wait-begin is drawn by its wait-end */
  }
  fprintf(f, "\n]}\n");
  free(start);
  free(end);
  return 0;
}
