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
 * the end of the first of several calls on them (of the run if the trace
 * marks no calls), waits nothing could satisfy, and
 * (in a built-in allreduce, where every remote load feeds a reduce or a
 * store before the next)
 * remote loads whose value the rank never uses; ranked so that the first
 * finding is the cause (check.c, "ranking").
 * The model is the weakest memory model collsim offers: relaxed, with
 * a2a3's halves of the fence and its line write-backs. A landing is
 * ordered before later events of its own rank only by a fence, or by a
 * DDR fence after a pipe barrier that came after the post (a notify's own
 * DDR fence, which follows its signal, included, for what a pipe barrier
 * or fence of the rank's own drained), whatever the run's model was, so a
 * free-mode trace shows the fence bugs that its
 * stores, landing at issue, hid; and a Set notify writes its whole 64-byte
 * line (a clobber when another rank writes that line unordered).
 * The checker is fed records in seq order, one at a time, and keeps no
 * record it does not need: its memory is bounded by the run's shape (ranks,
 * slots, signal cells, the distinct byte ranges accessed), not by the
 * trace's length. cs_check_file streams a file (one reader per rank,
 * merged by seq); cs_check_run feeds a loaded trace.
 * Does not own the text of a finding (cli/collsim/check.c words them with
 * describe.h), the format or its validation (read.h), or a live world.
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
  CS_CHECK_WAIT_EQ,       /* a: the Eq wait (or a first add), b: an add
                             that can pass it */
  CS_CHECK_NOT_RESET,     /* a: the cell's last change; value = its end */
  CS_CHECK_UNSATISFIABLE, /* a: the wait (begin or failed end), b: the
                             cell's last change; value = its end */
  CS_CHECK_DEAD_READ,     /* a: a remote load no reduce or store uses
                             (allreduce traces only) */
  CS_CHECK_CLOBBER,       /* a: a Set notify, b: another rank's write to
                             the same 64-byte line (a Set, an add, a store
                             or put) not ordered with it: the device's Set
                             writes back its whole line and can undo b */
} cs_check_kind_t;

/* Which part of the fence a NO_FENCE race lacks, in the writer's events
 * between the write and its signal (cs_check_finding_t.fence_part). */
typedef enum cs_check_fence_part {
  CS_CHECK_PART_FENCE = 0, /* the whole fence (pipe barrier + DDR fence) */
  CS_CHECK_PART_DDR,       /* a pipe barrier drained it, but no DDR fence
                              after it made it visible */
  CS_CHECK_PART_PIPE,      /* a DDR fence came while it was still in the
                              pipe: no pipe barrier before that fence */
} cs_check_fence_part_t;

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

/* Bits of cs_check_finding_t.has: which records are filled in. */
enum {
  CS_CHECK_HAS_A = 1, CS_CHECK_HAS_B = 2,
  CS_CHECK_HAS_A_BEFORE = 4, CS_CHECK_HAS_A_AFTER = 8,
  CS_CHECK_HAS_B_BEFORE = 16, CS_CHECK_HAS_B_AFTER = 32,
};

/* Where an event sits in the algorithm its rank runs, read off the
 * trace: the calls and phase/round markers the rank had passed, its step
 * tag, and its events since the marker or step tag last changed. Every
 * rank runs the same program, so equal positions on two ranks are the
 * same point of the algorithm; a race's events are put in the order of
 * their positions (check.c, "the intended order"). A stage-in carries the
 * previous call's last position (it comes before the call's first
 * marker), which is where it sits: after every access of that call. */
typedef struct cs_check_pos {
  uint32_t call; /* calls the rank had begun before it, from 0 */
  uint32_t mark; /* markers (cs_mark) the rank had passed, all calls,
                    and step tags that went back (a round of a collective
                    that does not mark its rounds) */
  uint32_t step; /* its step tag */
  uint32_t ord;  /* rank events since the marker or step tag changed */
} cs_check_pos_t;

/* One distinct finding, with copies of its records: the two events, and
 * for each the synchronisation points that bound it on its rank (the
 * last wait-end or fence before it, the first notify after it). A race's
 * a is the event the algorithm means to come first (not always the one
 * that came first in the run), and the cause names the edge missing to
 * put it there. */
typedef struct cs_check_finding {
  uint32_t kind;   /* cs_check_kind_t */
  uint32_t cause;  /* cs_check_cause_t (races); NOT_RESET: 1 seen at
                      the end of the first call, 0 at the end of the run */
  uint32_t has;    /* CS_CHECK_HAS_* */
  int32_t  value;  /* NOT_RESET: the cell at the end of the first call
                      (of the run if the trace marks no calls);
                      UNSATISFIABLE: the cell's final value */
  uint64_t count;  /* occurrences folded into this one (>= 1) */
  uint32_t follows; /* 1 + index in the report of the finding this one is
                       a consequence of (a race in a later call of a run
                       whose cells were not reset), 0 none */
  uint32_t reversed; /* races: the run did b before a */
  uint32_t bit;      /* races: some occurrence folded into this one ran in
                        the reverse order (the race bit in this run, maybe
                        on other ranks than a's and b's) */
  uint32_t fence_part; /* NO_FENCE races: cs_check_fence_part_t */
  cs_check_pos_t a_pos, b_pos;
  cs_trace_rec_t a, b;
  cs_trace_rec_t a_before, a_after, b_before, b_after;
} cs_check_finding_t;

typedef struct cs_check_report {
  cs_check_finding_t *f; /* distinct findings, causes first (check.c,
                            "ranking"), else in the order first found */
  uint64_t n;            /* entries of f */
  uint64_t total;        /* occurrences, folded ones included */
  uint64_t records;      /* records checked */
  uint64_t failed;       /* records with the FAILED bit (bounds faults,
                            timeouts): not ordering defects */
  int      aborted;      /* the trace ends with an abort record */
} cs_check_report_t;

/* Distinct findings kept; further occurrences of a new kind of finding are
 * only counted in `total`. */
#define CS_CHECK_MAX_FINDINGS 1024u

typedef struct cs_check cs_check_t;

/* A checker for the run of header h (validated: nranks 1..256, the slot
 * table). Returns 0 with *c set, or -ENOMEM. */
int cs_check_create(cs_check_t **c, const cs_trace_header_t *h);
/* The next record, in seq order (strictly increasing seq; launcher records
 * last). Returns 0, CS_EDUPSEQ if x's seq is not above the last one's
 * (fed in seq order, it appears twice), CS_ETOOBIG for a signal slot of
 * more cells than a check holds (a damaged header), or -ENOMEM; after an
 * error every call returns it again. */
int cs_check_feed(cs_check_t *c, const cs_trace_rec_t *x);
/* Ends the trace (the end-of-run checks) and hands over the report,
 * which the caller finis. Returns 0 or the first error of feed. */
int cs_check_finish(cs_check_t *c, cs_check_report_t *rep);
void cs_check_destroy(cs_check_t *c);

/* A loaded trace (cs_trace_load), fed in order. Returns 0 with *rep
 * filled (findings may be none), or cs_check_feed's code (-ENOMEM,
 * CS_ETOOBIG, CS_EDUPSEQ) with *rep empty. */
int cs_check_run(const cs_trace_t *t, cs_check_report_t *rep);

/* Streams the trace at `path`: one validating reader per rank (read.h),
 * merged by seq, so memory does not grow with the file. Returns 0 with
 * *rep filled; for a bad trace the reader's code (read.h: CS_EMAGIC,
 * CS_EBADRECORD, -EIO, ...), CS_EDUPSEQ for a repeated seq or CS_ETOOBIG
 * for a signal slot of more cells than a check holds, each with one line
 * in `why`; or -ENOMEM. */
int cs_check_file(const char *path, cs_check_report_t *rep, char *why,
                  size_t whylen);

void cs_check_report_fini(cs_check_report_t *rep);

/* "race", "mixed Set/Add", "wait Eq hazard", "cell not reset",
 * "unsatisfiable wait", "unused remote read". */
const char *cs_check_kind_name(uint32_t kind);

#endif
