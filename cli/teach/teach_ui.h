/*
 * teach_ui.h - the terminal lesson (teach_ui.c), called by teach.c when
 * stdout is a terminal and --plain is not given.
 */
#ifndef CS_TEACH_UI_H
#define CS_TEACH_UI_H

#include "../collsim/run.h"
#include "teach_model.h"

/* Runs the lesson on `o` (algo, ranks, count, dtype, bug, memory model:
 * checked by the caller) until the learner quits; `level` (may be NULL) is
 * a break-it level's; `lesson`: ask predict-then-reveal questions at
 * the ring's round boundaries. Restores the terminal on every path. Returns the
 * exit code. */
int cs__teach_tui(run_opts_t *o, const cs_teach_level_t *level, int lesson);

#endif
