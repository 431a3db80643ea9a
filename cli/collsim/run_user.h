/*
 * run_user.h - `collsim run --algo ./x.so`: one verified run of a
 * collective loaded from a shared object, with every option of collsim run
 * that does not belong to the built-in algorithms (schedules, memory
 * models, faults, traces). cli/collsim/run.c fills the description from its
 * options and hands over; replay, teach and explore reach it through run.
 */
#ifndef CS_RUN_USER_H
#define CS_RUN_USER_H

#include <stdint.h>

#include "../../collectives/allreduce.h"
#include "../../include/collsim/collective.h"
#include "../../sim/sched.h"
#include "cli.h"

typedef struct cs_run_user {
  const char            *cmd;    /* subcommand name for messages */
  const cs_collective_t *coll;
  const char            *path;   /* the shared object, absolute */
  const uint8_t         *sha256; /* its SHA-256 (32 bytes), or NULL */
  cs_coll_cfg_t          cfg;
  cs_fill_t              fill;   /* CS_FILL_DEFAULT: the collective's default */
  uint64_t               seed;
  const cs_sched_cfg_t  *sched;  /* strategy CS_SCHED_FREE: free mode */
  const char            *schedule_str; /* as given, or NULL */
  const cs_cli_common_t *com;    /* fault, timeout, trace */
  uint64_t               expect_hash; /* replay: the recorded inputs' hash */
  int                    verbose_mode;
  uint32_t               padded_cells; /* --signal-layout padded */
  /* results */
  uint32_t abort_reason;         /* CS_ABORT_* if the run was aborted */
  uint64_t sched_steps;          /* global sequence numbers the run used */
  uint64_t steps_taken;          /* controlled: scheduling steps taken */
} cs_run_user_t;

/* Runs x: checks, the job on the pipeline, the summary. Prints every
 * message; returns the exit code (CS_EXIT_*). Sets x's results. */
int cs_run_user(cs_run_user_t *x);

#endif
