/*
 * export.h - a finished trace written out for people and programs: aligned
 * text, JSON lines, Chrome Trace Event JSON (Perfetto).
 *
 * Owns: the three output formats and the event filter they share (rank,
 * kinds, seq range). Every event's text comes from describe.h, every link
 * from analysis.h.
 * Does not own option parsing, the per-rank --stats tables (cli/collsim/) or the
 * trace format; never touches a live world.
 * Called by `collsim trace`.
 */
#ifndef CS_TRACE_EXPORT_H
#define CS_TRACE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "analysis.h"

/* Which records are shown. A zeroed filter with to = UINT64_MAX shows all. */
typedef struct cs_trace_filter {
  int      has_rank; /* only records of `rank` */
  uint32_t rank;
  uint32_t kinds;    /* bit k set: kind k shown; 0 = every kind */
  uint64_t from, to; /* inclusive seq range */
} cs_trace_filter_t;

/* Whether record x passes filter f. */
int cs_trace_shown(const cs_trace_filter_t *f, const cs_trace_rec_t *x);

/* What every exporter reads; nothing here is written. */
typedef struct cs_trace_export {
  const cs_trace_t        *t;      /* the loaded trace */
  const cs_trace_links_t  *links;  /* built from t */
  const cs_trace_names_t  *names;  /* the collectives' names; may be NULL */
  const cs_trace_filter_t *filter; /* the records shown */
  const char              *path;   /* the trace's file name, as shown */
} cs_trace_export_t;

/* The text header block: the run's configuration, the slot table and the
 * record count, ending with "shown NSHOWN". No blank line after it. */
void cs_trace_export_text_header(FILE *f, const cs_trace_export_t *e,
                                 uint64_t nshown);
/* Header block, a blank line, the column heads, one aligned line per shown
 * record. Returns 0 (stdio errors are the caller's to check on f). */
int cs_trace_export_text(FILE *f, const cs_trace_export_t *e);
/* `s` as a JSON string, quotes included: '"' and '\\' escaped, every
 * byte below 0x20 or from 0x7f as \u00XX. The one escaper of every JSON
 * collsim writes. */
void cs_trace_json_str(FILE *f, const char *s);

/* One JSON object per line: the header, then every shown record with every
 * field, its links and its text. Returns 0. */
int cs_trace_export_jsonl(FILE *f, const cs_trace_export_t *e);
/* Chrome Trace Event JSON: a process per rank (the filter's rank only,
 * when it has one) with lanes control/compute/signal/dma, waits as slices,
 * flow arrows from each satisfier to its wait and from each post to its
 * landing when both ends are shown. Returns 0 or -ENOMEM (nothing
 * written). */
int cs_trace_export_chrome(FILE *f, const cs_trace_export_t *e);

#endif
