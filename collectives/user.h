/*
 * user.h - a registered collective (include/collsim/collective.h) as a
 * rank body: its window layout, the io buffers of its inputs and results,
 * and the rank body that stages the input in, calls the collective's body
 * once per call and stages the result out. Owns no collective and no
 * verification (run/coll.c compares the results); knows the device API
 * and the registration only. Called by run/coll.c.
 */
#ifndef CS_USER_H
#define CS_USER_H

#include <stdint.h>

#include "../include/collsim/collective.h"
#include "../sim/dev.h"
#include "../window/layout.h"

/* One run of a registered collective, the launcher's and every rank's. */
typedef struct cs_user_run {
  const cs_collective_t *coll;
  cs_coll_cfg_t          cfg;
  uint64_t               out_count; /* result elements per rank */
  uint32_t               flags;     /* the registration's CS_COLL_* bits */
} cs_user_run_t;

/* Per-rank results after the output data in the io output buffer. */
typedef struct cs_user_stats {
  uint32_t iters_differ; /* calls whose result differed from the first's */
  uint32_t pad;          /* zero */
  uint64_t ns[];         /* per-call time of this rank's body, ns */
} cs_user_stats_t;

/* Sets u for coll and cfg (out_count from the registration). */
void cs_user_run_init(cs_user_run_t *u, const cs_collective_t *coll,
                      const cs_coll_cfg_t *cfg);

/* Declares the collective's slots into l. Returns 0, the collective's own
 * negative code, -EINVAL (no slots, too many, or in/out/signal slot out of
 * range or of the wrong element size) or cs_layout_add's code. */
int cs_user_layout(const cs_user_run_t *u, cs_layout_t *l);

/* Bytes of one rank's input (count elements) and result (out_count). */
uint64_t cs_user_in_bytes(const cs_user_run_t *u);
uint64_t cs_user_out_bytes(const cs_user_run_t *u);
/* Offset of the stats in the output buffer, and the io bytes a rank needs
 * per direction (cs_world_opts_t.io_bytes). */
uint64_t cs_user_stats_off(const cs_user_run_t *u);
uint64_t cs_user_io_bytes(const cs_user_run_t *u);

/* Launcher body; arg is a const cs_user_run_t *. For each call: stage-in
 * (the io input into in_slot) and a fence (none with
 * CS_COLL_NO_STAGE_FENCE), the collective's body (timed),
 * a fence,
 * stage-out (out_slot into the io output), the comparison with the first
 * call's result. Returns 0, or the body's non-zero return. */
int cs_user_rank_main(cs_dev_t *d, void *arg);

#endif
