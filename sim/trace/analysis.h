/*
 * analysis.h - what the records of a finished trace mean together, and the
 * names of their fields.
 *
 * Owns: the happens-before links derived once from a loaded trace (which
 * wait-begin a wait-end closes, which notify satisfied a wait, which
 * dma-post a dma-land delivers) and the naming helpers every printer of a
 * trace shares (slot, memory model, abort reason, exit status meaning).
 * Does not own the format or its validation (sim/trace.h, sim/trace/read.c),
 * the text of an event (describe.h) or any output (export.h); never touches
 * a live world. The names of the fields the collectives own (algorithm,
 * dtype, op, fill, mutation) reach it through cs_trace_names_t, filled by
 * the tool, so sim/ never includes collectives/.
 * Called by `collsim trace`, teach, replay and check.
 */
#ifndef CS_TRACE_ANALYSIS_H
#define CS_TRACE_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "../trace.h"

/* ------------------------------------------------------------ links */

/* Per-record partners of a loaded trace. Every array has one entry per
 * record of the trace it was built from; entries are indices into t->rec
 * (sorted by seq), -1 = none.
 *
 *   pair       wait-begin <-> wait-end of the same wait: the rank's
 *              latest wait-begin, when no wait-end of that rank came
 *              after it and it waits on the same (slot, cell)
 *   satisfier  wait-end that did not fail: the record at which a notify of
 *              another rank changed the waited cell so that the wait's
 *              condition held (the notify itself when it landed at issue,
 *              its dma-land when it was posted); see analysis.c
 *   post       dma-land: the latest record of the same rank and dma_id
 *              before it that posted the op (a dma-post, or the store, put
 *              or notify that carries the dma_id) */
typedef struct cs_trace_links {
  int64_t *pair;      /* record index or -1 */
  int64_t *satisfier; /* record index or -1 */
  int64_t *post;      /* record index or -1 */
  uint64_t n;         /* entries of each array (the trace's records) */
  uint64_t start_ns;  /* smallest t_ns of any record (0: no records) */
  uint64_t end_ns;    /* largest t_ns of any record */
} cs_trace_links_t;

/* Builds the links of `t` (loaded by cs_trace_load: every non-launcher
 * record's rank is below hdr.nranks). O(n log n); `t` is only read and
 * `l` keeps no pointer into it. Returns 0, or -ENOMEM with `l` left empty
 * (safe to fini). */
int cs_trace_links_init(cs_trace_links_t *l, const cs_trace_t *t);
/* Frees what init allocated; `l` is left empty. Safe on an empty `l`. */
void cs_trace_links_fini(cs_trace_links_t *l);

/* ------------------------------------------------------------ records */

/* A fault or abort record, written by the launcher, not by a rank. */
static inline int cs_trace_rec_is_launcher(const cs_trace_rec_t *x)
{
  return x->kind == CS_TR_FAULT || x->kind == CS_TR_ABORT;
}

/* A notify (or its landing) that adds its value to the cell. */
static inline int cs_trace_rec_is_add(const cs_trace_rec_t *x)
{
  return (x->opcmp & ~CS_TR_FAILED) == CS_NOTIFY_ADD;
}

/* ------------------------------------------------------------ names */

/* Names of header and record fields whose values the collectives define.
 * The tool fills one table from collectives/; any member may be NULL (a
 * live caller in sim/ has none), and then the name reads "?". */
typedef struct cs_trace_names {
  const char *(*algo)(uint32_t algo);    /* header algo, not 255 */
  const char *(*dtype)(uint32_t dtype);
  uint32_t    (*dtype_size)(uint32_t dtype); /* bytes per element */
  const char *(*op)(uint32_t op);        /* header op, reduce record op */
  const char *(*fill)(uint32_t fill);
  const char *(*bug)(uint32_t bug);      /* mutation id, 0 none */
  /* the algorithm's name of phase p (1..), NULL past its phases or for
   * an algorithm that names none; named phases make tags and marks read
   * "RS t0 j1" */
  const char *(*phase)(uint32_t algo, uint32_t p);
  /* the algorithm's name of its barrier `which` (0 a write before
   * another rank's load, 1 loads before the overwrite), NULL: none */
  const char *(*barrier)(uint32_t algo, uint32_t which);
  int         (*is_file_fill)(uint32_t fill); /* inputs came from a file */
} cs_trace_names_t;

/* The table's names, "?" (size 0, not ring) where `nm` or the member is
 * NULL. */
const char *cs_trace_algo_name(const cs_trace_names_t *nm, uint32_t algo);
const char *cs_trace_dtype_name(const cs_trace_names_t *nm, uint32_t dtype);
uint32_t cs_trace_dtype_size(const cs_trace_names_t *nm, uint32_t dtype);
const char *cs_trace_op_name(const cs_trace_names_t *nm, uint32_t op);
const char *cs_trace_fill_name(const cs_trace_names_t *nm, uint32_t fill);
const char *cs_trace_bug_name(const cs_trace_names_t *nm, uint32_t bug);
/* The name of phase p (1..) of the trace's algorithm (program 0), or
 * NULL: an algorithm that names its phases has a name for phase 1. A
 * collective loaded from a shared object (algo 254) names them in the
 * header (a pointer into h), the built-ins through nm. */
const char *cs_trace_phase_name(const cs_trace_names_t *nm,
                                const cs_trace_header_t *h, uint32_t p);
/* The name of a trace's READY barrier (which 0: a write before another
 * rank's load of it) or of its read-complete barrier (which 1: loads
 * before the overwrite): a collective loaded from a shared object (algo
 * 254) names them in the header (traces/FORMAT.md, names; the pointer is
 * into h), a built-in through nm. NULL when it gave none, for a trace of
 * another program, or when the header's names are malformed. */
const char *cs_trace_barrier_name(const cs_trace_names_t *nm,
                                  const cs_trace_header_t *h, uint32_t which);
/* Whether the header holds any such name (a phase's or a barrier's). */
int cs_trace_user_names(const cs_trace_header_t *h);
/* The header's fill says the inputs came from a file (no seed). */
int cs_trace_is_file_fill(const cs_trace_names_t *nm, uint32_t fill);

/* A slot's name from the slot table, printable whatever the file holds:
 * bytes outside '!'..'~' read '?', an index past the table or an empty name
 * reads "slotN". Writes at most n bytes (n >= 1) to buf; returns buf. */
const char *cs_trace_slot_name(const cs_layout_t *l, uint32_t slot, char *buf,
                               size_t n);
/* A fixed char field of `cap` bytes (schedule, version), printable: bytes
 * outside ' '..'~' read '?', stops at the first NUL. n >= 1. */
void cs_trace_field_str(const char *s, size_t cap, char *buf, size_t n);
/* "sc", "fifo", "relaxed", or "?". */
const char *cs_trace_model_name(uint32_t model);
/* What a CS_ABORT_* reason means: "wait timeout", "a rank died", ... */
const char *cs_trace_abort_name(int32_t reason);
/* What a rank's exit status means: CS_RX_* and the injected exit. */
const char *cs_trace_exit_meaning(int32_t status);

#endif
