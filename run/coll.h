/*
 * coll.h - collectives of one's own, on the tool side: loading a shared
 * object's registration (cs_coll_open, public), checking a configuration
 * against it, and the pipeline job that runs and verifies one, shared by
 * the public cs_coll_run and by `collsim run` (cli/collsim/run.c), which
 * also runs the built-ins through it (cs_coll_job_init_ar). Owns: the
 * job's layout, fill, verify step and the verdict. Does not own the rank
 * bodies (collectives/user.c, collectives/allreduce.c), the pipeline
 * (run/pipeline.c) or any wording of a summary (run.c prints).
 */
#ifndef CS_COLL_H
#define CS_COLL_H

#include <stdint.h>

#include "../collectives/allreduce.h"
#include "../collectives/user.h"
#include "../include/collsim/collective.h"
#include "pipeline.h"
#include "verify.h"

/* What a built-in's run (cs_coll_job_init_ar) tells beyond the verdict
 * every run has: its rank body checks each signal cell before the last
 * epilogue; the oracle adds the float64 error and the cells not back at
 * their end state. */
typedef struct cs_coll_ar_verdict {
  uint32_t signal_bad;    /* cells that missed their final value */
  int64_t  sig_rank;      /* the lowest rank with one (-1) */
  const cs_ar_stats_t *sig_st; /* its stats, in the world (mapped until
                                  the report) */
  cs_verdict_t v;         /* the oracle's verdict, float64's error */
  uint64_t verify_ns;     /* the comparison's wall time */
} cs_coll_ar_verdict_t;

/* One run of a registered collective on the pipeline, or of a built-in
 * (is_ar) with its own rank body and the oracle. */
typedef struct cs_coll_job {
  cs_user_run_t u;
  cs_layout_t   l;
  cs_job_t      job;
  cs_job_ops_t  ops;      /* fill and verify; the caller may add report */
  cs_fill_t     fill;     /* never CS_FILL_DEFAULT */
  uint64_t      seed;
  /* verify */
  int      verified;      /* the collective has an expect function */
  uint64_t wrong;         /* elements over all ranks unlike expect's */
  int64_t  bad_rank;      /* first of them, -1 none */
  uint64_t bad_i;
  uint64_t signals_bad;   /* cells not at signal_final's value */
  int64_t  sig_rank;      /* first of them, -1 none */
  uint64_t sig_cell;
  int32_t  sig_want, sig_got;
  uint32_t differ;        /* calls unlike the first, on the rank with most */
  int64_t  differ_rank;   /* the lowest rank with one (-1) */
  const cs_rank_stats_t *differ_st; /* its stats: the first element a
                             repeated call changed (in the world, mapped
                             until the report) */
  uint32_t untimed;       /* the first calls, left out of median_ns (a
                             bench's warm-up; ignored unless fewer than
                             the calls) */
  uint64_t median_ns;     /* per call the slowest rank, median over the
                             calls after the untimed */
  uint8_t *want;          /* after verification: the first wrong rank's expected result */
  uint8_t  want_bits[4];  /* the first wrong element's expected bits */
  /* a built-in: its configuration (the rank body's argument) and verdict */
  int      is_ar;
  cs_ar_cfg_t ar;
  cs_coll_ar_verdict_t av;
} cs_coll_job_t;

/* The phase and barrier names of registration c as the trace header keeps
 * them (traces/FORMAT.md, names) into out, all zero when it names
 * nothing. Returns NULL, or the first name that is not a name or does not
 * fit (out is then incomplete). */
const char *cs_coll_names(const cs_collective_t *c,
                          char out[CS_COLL_NAMES_BYTES]);

/* Prepares cj to run c with cfg (already cs_coll_check'ed): layout, world
 * options (io; with `traced` the trace ring; with `controlled` the
 * scheduler area), inputs of `fill` (CS_FILL_DEFAULT: arange for fp32
 * sum/max/min, pto otherwise) and seed, the rank body, the verify step,
 * and the trace header's fields that come from c and cfg (the run's
 * sizes, c's names, the modes: padded, --minmax, chunk tags; the
 * rectangle; for a built-in's registration its algorithm's id instead
 * of names and chunk tags). The caller then sets the job's schedule,
 * memory model, trace, fault and the header fields of those. Returns 0
 * or cs_user_layout's code.
 * padded: every cell of c's signal slot on a 64-byte line of its own
 * (cs_layout_pad_cells; -EINVAL when c declares no signal slot). */
int cs_coll_job_init(cs_coll_job_t *cj, const cs_collective_t *c,
                     const cs_coll_cfg_t *cfg, cs_fill_t fill, uint64_t seed,
                     uint64_t timeout_ns, int traced, int controlled,
                     int padded);
void cs_coll_job_fini(cs_coll_job_t *cj);

/* Prepares cj to run built-in configuration c (already cs_ar_check'ed)
 * as `collsim run` does: its layout, the world options (io, the signal
 * slot as the note slot; with `traced` the trace ring, with `controlled`
 * the scheduler area), `inputs` (nranks rows, or NULL for `fill`, which
 * is not CS_FILL_DEFAULT) with seed, the built-in rank body, where a wait
 * sits, the trace header's run fields, and a verify step that reads the
 * ranks' stats and compares every result with the oracle and float64.
 * The common verdict fields are set as for a registration (signals_bad:
 * the cells missed before the last epilogue plus those not back at their
 * end state). Returns 0 or cs_ar_layout's code (cj->l then holds the
 * layout as far as it got). */
int cs_coll_job_init_ar(cs_coll_job_t *cj, const cs_ar_cfg_t *c,
                        cs_fill_t fill, uint64_t seed, const void *inputs,
                        uint64_t timeout_ns, int traced, int controlled);

/* 1 when the job's checks all passed (right result, signals, calls). */
static inline int cs_coll_job_ok(const cs_coll_job_t *cj)
{
  return !cj->wrong && !cj->signals_bad && !cj->differ;
}

/* cs_coll_check for a cfg of this collsim's own size, every field read
 * (minmax, the shape): for collsim's own callers; the public one reads
 * only the fields of a cfg of the first ABI. */
int cs_coll_check_full(const cs_collective_t *c, const cs_coll_cfg_t *cfg,
                       char *why, size_t n);

/* The registration's CS_COLL_* flags (0 for one built before them). */
uint32_t cs_coll_flags(const cs_collective_t *c);

/* The registration itself when it declares what teach draws (a part
 * letter, with a `size` that covers the teach facts), else NULL. */
const cs_collective_t *cs_coll_teach(const cs_collective_t *c);

/* Whether an --algo value names a shared object rather than a built-in
 * algorithm: it contains '/' or ends in ".so". */
int cs_coll_is_path(const char *s);

#endif
