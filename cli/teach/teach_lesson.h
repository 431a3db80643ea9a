/*
 * teach_lesson.h - `collsim teach --lesson`: at a round boundary of the
 * ring the lesson asks which segment a rank will hold after the round and
 * whose inputs will be in it, reads the answer, and once the round has
 * run says whether the engine did what the learner predicted.
 *
 * Owns the question's wording and the checking of the answer against what
 * the run stored (teach_model.c tracks it). Does not own the screen's
 * layout (teach_draw.c draws t->q_text, t->answer and t->reveal) or the
 * step loop (teach_ui.c calls these).
 */
#ifndef CS_TEACH_LESSON_H
#define CS_TEACH_LESSON_H

#include "teach_model.h"

/* The round whose question is due: the first, in the order the rounds
 * run, that some rank has come to (posted at its marker or past it) and
 * that was not asked about yet. Returns the rank to ask about and sets
 * *ph, *rd; else -1. Whatever the stepping (events, r, n, data steps). */
int tl_boundary(const teach_session_t *t, const cs_sched_view_t *v,
                uint32_t *ph, uint32_t *rd);
/* Whether actor c of v passes the marker of a round not asked about yet
 * (an automatic pick stops there: the question comes first). */
int tl_unasked_mark(const teach_session_t *t, const cs_sched_view_t *v,
                    int64_t c);
/* Opens the question about rank r for round rd of phase ph, at `step`. */
void tl_open(teach_session_t *t, int r, uint32_t ph, uint32_t rd,
             uint64_t step);
/* One key typed into the answer: 1 when it was Enter on an answer of the
 * form "K A+B+..." (answered: kept, graded once its round has run), -1
 * Esc (skipped, the question is dropped), 0 otherwise (Enter on anything
 * else sets t->q_err). Closes the question unless 0. */
int tl_key(teach_session_t *t, int ch);
/* The score so far: rounds graded right, and rounds asked. */
void tl_score(const teach_session_t *t, int *right, int *asked);
/* Grades every answered round whose rank asked about has ended it
 * (passed its next marker, posted at it with its DMA ops landed, done;
 * v NULL: the run has ended) against what that rank stored, and words
 * the reveal (t->reveal). */
void tl_check(teach_session_t *t, const cs_sched_view_t *v);
/* The run is re-run to `step` (stepping back): a question asked at or
 * after it is dropped (asked again when its round comes), a grade given
 * at or after it is undone (graded again when its round has run). */
void tl_rewind(teach_session_t *t, uint64_t step);

/* The other questions' box (t->qq). */
enum { TL_QQ_NONE, TL_QQ_BARRIER, TL_QQ_COST, TL_QQ_SEEN /* answered: the reveal shows */ };
/* Whether to ask now which barrier rank 0 waits at: 1 (READY) or 2
 * (READ-COMPLETE, from the second round on) when rank 0 waits at one not
 * asked about yet; else 0. */
int tl_barrier_due(const teach_session_t *t, const cs_sched_view_t *v);
/* Opens the barrier question (kind: tl_barrier_due's) or the cost one. */
void tl_open_barrier(teach_session_t *t, const cs_sched_view_t *v, int kind);
void tl_open_cost(teach_session_t *t, uint64_t step);
/* One key typed into the box: 1 answered (a barrier answer is graded and
 * revealed at once, with the level that breaks that barrier), -1 Esc
 * (skipped), 0 otherwise. Closes the box unless 0. */
int tl_qq_key(teach_session_t *t, int ch);
/* The run has ended: grades the cost answer against what rank 0 loaded,
 * into buf (empty when it was not answered). */
void tl_cost_verdict(teach_session_t *t, char *buf, size_t cap);
/* The break-it level that takes away the barrier of `kind` (1 READY, 2
 * read-complete), from the level table; 0 if none does. */
uint32_t tl_level_of(int kind);
/* The end screen's pointer to those levels ("Next: --level 1 breaks the
 * READY barrier, --level 3 the read-complete barrier."). */
void tl_next_line(char *buf, size_t cap);
/* The lesson's line under the status: its goal and the score so far. */
void tl_progress(const teach_session_t *t, char *buf, size_t cap);
/* "Score: 8 of 9 right (rounds 5 of 6, barriers 2 of 2, cost 1 of 1)". */
void tl_score_line(const teach_session_t *t, char *buf, size_t cap);

/* The lines of overlay `which` (TM_OV_*) into l; returns how many. The
 * milestones count what the run loaded, by rank and part, in the phase
 * that just ended, and add it up to (N-1)/N*S and 2(N-1)/N*S. */
enum { TL_OVLINES = 16, TL_OVCOLS = 120 };
int tl_overlay(const teach_session_t *t, int which,
               char l[TL_OVLINES][TL_OVCOLS]);

#endif
