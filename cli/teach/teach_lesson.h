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

/* At a round boundary not asked about yet (every rank posted at a phase
 * marker or done): returns the rank to ask about, else -1. */
int tl_boundary(const teach_session_t *t, const cs_sched_view_t *v);
/* Opens the question about rank r (t->q_*, t->q_text). */
void tl_open(teach_session_t *t, const cs_sched_view_t *v, int r);
/* One key typed into the answer: 1 when it was Enter on an answer of the
 * form "K A+B+..." (answered), -1 Esc (skipped, the question is dropped),
 * 0 otherwise (Enter on anything else sets t->q_err). */
int tl_key(teach_session_t *t, int ch);
/* The score so far: rounds graded right, and rounds asked. */
void tl_score(const teach_session_t *t, int *right, int *asked);
/* The round is over: compares the answer with what the rank stored and
 * words the reveal (t->reveal); closes the question. */
void tl_reveal(teach_session_t *t);

#endif
