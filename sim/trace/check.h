/*
 * check.h - the offline happens-before checker of a finished trace: the
 * ordering defects a run has, whether or not they bit in that run.
 *
 * Owns: the happens-before relation of one run, built from its records
 * with vector clocks (program order per rank; a posted store, put or
 * notify -> its landing; the landings of the notifies a satisfied wait
 * needed -> that wait's end; a fence -> every later post of its rank), and
 * the defects found with it: races (two accesses to overlapping bytes of
 * one window, one of them a write landing, not ordered), Set and AtomicAdd
 * mixed on one cell, Eq waits a cell can pass, cells not back to zero at
 * the end of a run that reuses them, waits nothing could satisfy, and
 * (in an allreduce, where every remote load feeds a reduce or a store)
 * remote loads whose value the rank never uses.
 * The model is the weakest memory model the device offers (relaxed): a
 * landing is ordered before later events of its own rank only by a fence,
 * whatever the run's model was, so a free-mode trace shows the fence bugs
 * that its stores, landing at issue, hid.
 * Does not own the links it builds on (analysis.h), any text (tools/check.c
 * words the findings with describe.h) or a live world.
 * Called by `collsim check` and `collsim run --check`.
 */
#ifndef CS_TRACE_CHECK_H
#define CS_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

typedef enum cs_check_kind {
  CS_CHECK_RACE = 1,      /* a, b: the two accesses, a first in seq order */
  CS_CHECK_MIXED_OPS,     /* a: a Set, b: an AtomicAdd on the same cell */
  CS_CHECK_WAIT_EQ,       /* a: the Eq wait, b: an add that can pass it */
  CS_CHECK_NOT_RESET,     /* a: the cell's last change; value = its end */
  CS_CHECK_UNSATISFIABLE, /* a: the wait (begin or failed end) */
  CS_CHECK_DEAD_READ,     /* a: a remote load no reduce or store uses
                             (allreduce traces only) */
} cs_check_kind_t;

/* Why a race's two events are not ordered, in the algorithm's terms. */
typedef enum cs_check_cause {
  CS_CHECK_NO_CAUSE = 0,
  CS_CHECK_NO_FENCE,  /* b's rank knows a's post, but a's rank signalled
                         before the write landed: a fence is missing */
  CS_CHECK_NO_SIGNAL, /* nothing a's rank signalled after a reaches b: a
                         notify after a and a wait before b are missing */
  CS_CHECK_NO_READ_DONE, /* a is a load, b a write: b's rank does not wait
                            for a's rank to finish reading */
} cs_check_cause_t;

typedef struct cs_check_finding {
  uint32_t kind;   /* cs_check_kind_t */
  uint32_t cause;  /* cs_check_cause_t (races) */
  int64_t  a, b;   /* record indices into the checked trace, -1 none */
  int32_t  value;  /* NOT_RESET: the cell's final value */
  uint64_t count;  /* occurrences folded into this one (>= 1) */
} cs_check_finding_t;

typedef struct cs_check_report {
  cs_check_finding_t *f; /* distinct findings, in the order first found */
  uint64_t n;            /* entries of f */
  uint64_t total;        /* occurrences, folded ones included */
  uint64_t failed;       /* records with the FAILED bit (bounds faults,
                            timeouts): not ordering defects */
  int      aborted;      /* the trace ends with an abort record */
} cs_check_report_t;

/* Distinct findings kept; further occurrences of a new kind of finding are
 * only counted in `total`. */
#define CS_CHECK_MAX_FINDINGS 4096u

/* Checks trace `t` with its links `l` (cs_trace_links_init of t). Memory:
 * the clocks (2 N words per rank and per touched signal cell), one access
 * map per touched slot (bounded by the window's bytes, not the trace's
 * length), and the report. Returns 0 with *rep filled (findings may be
 * none), or -ENOMEM with *rep empty. Safe to fini either way. */
int cs_check_run(const cs_trace_t *t, const cs_trace_links_t *l,
                 cs_check_report_t *rep);
void cs_check_report_fini(cs_check_report_t *rep);

/* The synchronisation points around record i on its rank: the last
 * wait-end or fence before it (*before) and the first notify after it
 * (*after), record indices or -1. Looks at most `reach` records each way. */
void cs_check_bounds(const cs_trace_t *t, int64_t i, uint64_t reach,
                     int64_t *before, int64_t *after);

/* "race", "mixed Set/Add", "wait Eq hazard", "cell not reset",
 * "unsatisfiable wait", "unused remote read". */
const char *cs_check_kind_name(uint32_t kind);

#endif
