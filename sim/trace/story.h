/*
 * story.h - the few events that make a failure, picked from a finished
 * trace and the checker's report on it: the analysis behind the story
 * `collsim shrink` tells. Words for people are not here (cli/collsim/story.c
 * writes them); this picks and orders records.
 *
 * Owns: which race the story is about (first the pair that produced the
 * wrong value, traced back from the first bad element: a load the wrong
 * value was made of and the write into its bytes that was meant first
 * and landed after it, or that was meant after it and landed first, as
 * it happened, when check reports that occurrence; else among the
 * findings: a race whose load is on that way back, then one that bit in
 * this run, against its intended order; then check's order; then any
 * race; then the other findings), the events it tells in seq order
 * with their role, when each posted write landed, what the load saw (the
 * old value: the write had not landed; or the new one), and between which
 * two events the missing edge goes and what it is (a fence, a notify and
 * a wait, a read-complete barrier), always that of the finding's intended
 * order (check.h), never the order the run took; for a race that follows
 * from a cell the first call left unreset, that cell's reset (the race's
 * barrier is there, and passed on stale credits). Does not own the
 * happens-before analysis (check.h) or the trace's reading (read.h).
 * Called by cli/collsim/story.c.
 */
#ifndef CS_TRACE_STORY_H
#define CS_TRACE_STORY_H

#include <stdint.h>

#include "check.h"

enum {
  CS_STORY_WRITE = 1, /* the race's write (store or put) */
  CS_STORY_SIGNAL,    /* the writer's first notify after it, before the read */
  CS_STORY_WAIT,      /* the reader's last wait before the read, after the write */
  CS_STORY_READ,      /* the race's load */
  CS_STORY_OTHER,     /* an event of a finding that is not such a race */
  CS_STORY_FAILED,    /* no finding: the event that failed */
  CS_STORY_STALE,     /* the notify of an earlier call whose credit let
                         the reader's wait (CS_STORY_WAIT) pass */
};

/* The edge the story says is missing. */
enum {
  CS_STORY_NO_EDGE = 0,
  CS_STORY_NEED_FENCE,     /* between the write and the notify */
  CS_STORY_NEED_SIGNAL,    /* a notify after the write, a wait before the read */
  CS_STORY_NEED_READ_DONE, /* the writer waits for the read to end */
  CS_STORY_NEED_RESET,     /* the race follows from a cell the first call
                              left unreset (root): its reset is missing */
};

typedef struct cs_story_event {
  cs_trace_rec_t rec;
  uint32_t role;   /* CS_STORY_* */
  uint64_t landed; /* posted write or notify: seq of its landing; else 0 */
  uint32_t call;   /* the call of its rank it belongs to, 1-based (a
                      mark not after the rank's previous one begins a
                      call, as check counts them) */
} cs_story_event_t;

#define CS_STORY_MAX 6u

typedef struct cs_story {
  cs_story_event_t ev[CS_STORY_MAX]; /* in seq order */
  uint32_t n;
  int      has_finding;
  cs_check_finding_t finding;        /* the one told */
  int      has_root;  /* the finding follows from another (check.h,
                         follows): a cell not reset, whose stale credits
                         let the told race's wait pass early */
  cs_check_finding_t root;           /* that cause, when has_root */
  int      saw_old;   /* write/load race: 1 the load saw the old value (the
                         write had not landed), 0 the new one; -1 other */
  uint32_t need;      /* CS_STORY_NO_EDGE, _NEED_* */
  uint32_t gap_from, gap_to; /* the missing edge's ends (1-based indices
                                into ev), 0: none */
} cs_story_t;

/* Picks the story of trace t (loaded, seq order) from the checker's
 * report rep on it. bad_rank, bad_index: the first wrong element of the
 * run's result (UINT32_MAX, UINT64_MAX: not a wrong result). Returns 0
 * with s filled (s->n may be 0). */
int cs_trace_story(const cs_trace_t *t, const cs_check_report_t *rep,
                   uint32_t bad_rank, uint64_t bad_index, cs_story_t *s);

#endif
