/*
 * teach_levels.h - the break-it levels of `collsim teach --level` (the
 * campaign, in its order): each a known defect (a --bug mutation), the
 * small world it shows in, and its cs_teach_level_t (goal, the edge it
 * removes, title, story, upstream report). One table for every place that
 * names a level: teach.c applies it, the lesson points to the level that
 * breaks a barrier (teach_lesson.c, teach_ui.c).
 */
#ifndef CS_TEACH_LEVELS_H
#define CS_TEACH_LEVELS_H

#include "teach_model.h"

/* The break-it levels: a known defect, a small world where it can show,
 * the learner's goal and the edge the defect removes (the verdict's). */
typedef struct teach_level {
  const char      *bug;
  const char      *algo;
  uint32_t         nranks;
  uint64_t         count;
  cs_mm_t          model;
  cs_teach_level_t l;
} teach_level_t;

/* How many levels the campaign has. */
uint32_t tv_nlevels(void);
/* Level v (1-based, at most tv_nlevels()). */
const teach_level_t *tv_level(uint32_t v);
/* The number of the level whose edge the check finds as (kind, cause),
 * 0 if none. */
uint32_t tv_find(uint32_t kind, uint32_t cause);

#endif
