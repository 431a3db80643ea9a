/*
 * teach_ui.h - the terminal lesson (teach_ui.c), called by teach.c when
 * stdout is a terminal and --plain is not given.
 */
#ifndef CS_TEACH_UI_H
#define CS_TEACH_UI_H

#include "../collsim/run.h"

/* A break-it level: the learner's goal, and the edge the level removed:
 * in words (its fix), and as the check finds it (cs_check_kind_t and,
 * for races, cs_check_cause_t), for the verdict. */
typedef struct cs_teach_level {
  const char *goal, *edge;
  uint32_t    kind, cause;
} cs_teach_level_t;

/* Runs the lesson on `o` (algo, ranks, count, dtype, bug, memory model:
 * checked by the caller) until the learner quits; `level` (may be NULL) is
 * a break-it level's; `lesson`: ask predict-then-reveal questions at
 * the ring's round boundaries. Restores the terminal on every path. Returns the
 * exit code. */
int cs__teach_tui(run_opts_t *o, const cs_teach_level_t *level, int lesson);

#endif
