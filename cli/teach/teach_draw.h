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
/* A collective of one's own: every rank's slots as text ("data=1,2,3
 * signal=0 1"), from the live world of step v, for the screen to draw
 * (also once the run has ended, as they were at its last step). */
void td_slots(const teach_session_t *t, const cs_sched_view_t *v);
/* The whole screen for the paused step v (NULL: the run has ended, see
 * t->result), with the help overlay when `help`. */
void td_draw(const teach_session_t *t, const cs_sched_view_t *v, int help);

#endif
