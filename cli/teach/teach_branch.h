/*
 * teach_branch.h - branches of the terminal lesson: the run the learner
 * stepped back from is kept (branch A) and, once another order has run to
 * its end (branch B), compared with it: where the two orders diverge, the
 * first event that differs and where each of the two events ran in the
 * other run, both outcomes, and the windows' elements whose contents
 * differ at the end.
 *
 * Owns tm_branch_t's memory and the comparison's words. Does not own the
 * screen (teach_draw.c) or the keys (teach_ui.c).
 */
#ifndef CS_TEACH_BRANCH_H
#define CS_TEACH_BRANCH_H

#include "teach_model.h"

/* Keeps the run that has just ended as branch A (the previous A goes).
 * Returns 0 or -1 (out of memory: nothing kept). */
int tb_keep(teach_session_t *t);
/* Frees branch A. */
void tb_free(teach_session_t *t);
/* Whether the run that has just ended can be compared with A: A is kept
 * and the two took different orders. */
int tb_ready(const teach_session_t *t);
/* The first step whose pick differs between A and the current run (the
 * shorter's length when one is the other's prefix). */
uint64_t tb_diverge(const teach_session_t *t);
/* What a run said of its result, in one line (its "result:" line, else
 * its first word on how it ended). */
void tb_outcome(const teach_session_t *t, char *b, size_t cap);
/* Step `s` of run `which` (0 A, 1 the current) as "r2 store data[3..6)"
 * into b (cap bytes; "-" past its end). */
void tb_event(const teach_session_t *t, int which, uint64_t s, char *b,
              size_t cap);
/* Whether step s ran the same event in both runs. */
int tb_same(const teach_session_t *t, uint64_t s);
/* Where the two events of the divergence step ran in the other run, in
 * one sentence ("moved: ..."). */
void tb_moved(const teach_session_t *t, char *b, size_t cap);
/* The story of the run that failed (B's, else A's), its events and
 * where each ran in both runs, in one sentence; returns 0 when neither
 * run has a story. */
int tb_story(const teach_session_t *t, char *b, size_t cap);
/* The elements whose contents differ at the end, per rank, as ranges with
 * both provenances ("r1 e3..4: A [1+2+3+0] B [1+2+0]"), or that none do. */
void tb_windows(const teach_session_t *t, char *b, size_t cap);

#endif
