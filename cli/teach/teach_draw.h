/*
 * teach_draw.h - the lesson's screen: draws a teach_session_t with curses.
 * Owns the layout; does not read keys (teach_ui.c) or track the run
 * (teach_model.c).
 */
#ifndef CS_TEACH_DRAW_H
#define CS_TEACH_DRAW_H

#include "teach_model.h"

/* Columns and lines the screen needs for n ranks. */
void td_need(uint32_t n, int *cols, int *lines);
/* The whole screen for the paused step v (NULL: the run has ended, see
 * t->result), with the help overlay when `help`. */
void td_draw(const teach_session_t *t, const cs_sched_view_t *v, int help);

#endif
