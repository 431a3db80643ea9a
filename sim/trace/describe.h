/*
 * describe.h - the text of one event: every printer of events, recorded or
 * live, says what an event did with these functions.
 *
 * Owns: the "what" column of `collsim trace` (cs_trace_describe), the
 * sentence the controlled scheduler prints for a person (cs_trace_sentence),
 * the tag and phase-marker names, the launcher's fault and abort lines and
 * the exact microsecond notation.
 * Does not own the links between records (analysis.h): a caller passes the
 * partners it knows. Never touches a live world: a live event is described
 * by first copying it into a cs_trace_rec_t.
 * Called by the exporters (export.c) and the tools; meant for the
 * scheduler's prompt and divergence reports too.
 */
#ifndef CS_TRACE_DESCRIBE_H
#define CS_TRACE_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

/* The "what" of record x, as the text export's column shows it (no
 * newline), e.g. "from r0  data[16..32) valid 16 phys 16" or
 * "signal[3] >= 1 saw 1, waited 2.500 us, by #41 r2".
 *   h      the slot table (h->layout) and, with nm, whether marks read
 *          "RS t0": a live caller may pass a zeroed header whose layout is
 *          the world's
 *   nm     the collectives' names (op of a reduce); may be NULL ("?")
 *   begin  for a wait-end: its wait-begin (", waited ... us"); else NULL
 *   by     for a wait-end: the record that satisfied it (", by #SEQ rR");
 *          else NULL
 * Writes at most n bytes (n >= 1), truncating; the export uses n = 200. */
void cs_trace_describe(char *buf, size_t n, const cs_trace_header_t *h,
                       const cs_trace_names_t *nm, const cs_trace_rec_t *x,
                       const cs_trace_rec_t *begin, const cs_trace_rec_t *by);

/* The same event as a sentence for a person, "rank 1: load data[16..32)
 * from rank 0 (16 physical)", the text the controlled scheduler's
 * interactive prompt and replay divergence reports print: a device event
 * (kinds load..mark, opcmp's CS_TR_FAILED bit ignored), a dma-land
 * ("rank 0's DMA lands op #3 (put to rank 1)") or a dma-post standing for
 * an op still queued, round = its kind ("rank 0's DMA: land put #3: rank 1
 * data[0..8)", "rank 0's DMA: land notify #4: rank 1 signal[2] +1"); other
 * kinds read "rank R: KIND". Slot names are the layout's, unfiltered ("?"
 * past the table). Writes at most n bytes (n >= 1). */
void cs_trace_sentence(char *buf, size_t n, const cs_layout_t *l,
                       const cs_trace_rec_t *x);

/* The elements an access touches, as check's findings and the story name
 * them: "data[0..16)", then " (rows R x C @ stride S)" for a 2-D one, then
 * " from rank P" for a load from another rank or " to rank P" for a put.
 * `phys`: a load's range runs to its physical end (the bytes it reads,
 * over-read included), else to its valid end. Returns buf. */
const char *cs_trace_access_str(const cs_layout_t *l, const cs_trace_rec_t *x,
                                int phys, char *buf, size_t n);

/* "==" or ">=" for a wait's comparison (CS_TR_FAILED ignored). */
const char *cs_trace_cmp_str(uint32_t opcmp);

/* The tag column: "RS t0 j1" (ring), "main c3" (mesh, host), a collective
 * loaded from a shared object "gather t1 j0" with the names its header
 * keeps or "P2 t1 j0" without; "" before any marker and for launcher
 * records. Returns buf. */
const char *cs_trace_tag_str(const cs_trace_header_t *h,
                             const cs_trace_names_t *nm,
                             const cs_trace_rec_t *x, char *buf, size_t n);
/* A phase marker's name: "RS t0", "AG t2", "main", "phase 3 round 1".
 * Returns buf. */
const char *cs_trace_mark_str(const cs_trace_header_t *h,
                              const cs_trace_names_t *nm,
                              const cs_trace_rec_t *x, char *buf, size_t n);
/* One line for a fault or abort record: "rank 2 killed by SIGSEGV at event
 * 40", "run aborted (wait timeout), first failing rank 1", ... */
void cs_trace_launcher_str(const cs_trace_rec_t *x, char *buf, size_t n);
/* "12.345": microseconds from nanoseconds, exactly. Returns buf. */
const char *cs_trace_us_str(uint64_t ns, char *buf, size_t n);

#endif
