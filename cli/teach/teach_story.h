/*
 * teach_story.h - the verdict of a broken run in the terminal lesson:
 * collsim shrink's story of the run the learner just made fail (its few
 * numbered events and the missing edge), and which of the lesson's steps
 * the story's events are, so that the history marks them and the end
 * screen can step back to each.
 *
 * Owns the matching of the story's trace records to the lesson's steps.
 * Does not own the story (sim/trace/story.c picks it, cli/collsim/story.c
 * words it) or the screen (teach_draw.c marks the steps, teach_ui.c calls
 * this when a run has ended).
 */
#ifndef CS_TEACH_STORY_H
#define CS_TEACH_STORY_H

#include <stdio.h>

#include "teach_model.h"

/* The run at t->trace failed, having printed `out`: prints the story to
 * stdout and finds its events' steps (t->story_step). Returns 0, or -1
 * when the trace cannot be read (nothing printed). */
int ts_story(teach_session_t *t, const char *out);
/* The story's event whose trace seq is `seq`: its step (1 + index into
 * t->story_step), or 0. */
uint32_t ts_of_seq(const teach_session_t *t, uint64_t seq);
/* 1 + the story event that step `step` is, or 0. */
uint32_t ts_of_step(const teach_session_t *t, uint64_t step);

#endif
