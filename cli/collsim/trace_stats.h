/*
 * trace_stats.h - `collsim trace --stats`: per-rank totals of a finished
 * trace, checked against the algorithms' volumes (collectives/geometry.h).
 * Lives in cli/collsim/ because the volumes are the collectives' and sim/
 * may not include them. Called by cli/collsim/trace_cmd.c only.
 */
#ifndef CS_TRACE_STATS_H
#define CS_TRACE_STATS_H

#include <stdio.h>

#include "../../sim/trace/export.h"

/* Writes the per-rank table of the records e->filter shows (a JSON object
 * per rank and a summary when `jsonl`, else the text header, the table
 * and, when every event of the shown ranks is in, the volume check).
 * Returns 0 or -ENOMEM (nothing written). */
int cs__trace_write_stats(FILE *f, const cs_trace_export_t *e, int jsonl);

#endif
