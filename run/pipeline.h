/*
 * pipeline.h - the one run pipeline of the collsim tool. A subcommand
 * describes a launch as a job (the world's shape, the inputs, the ranks'
 * body, the fault, the schedule, the trace file, and its verify and report
 * steps); cs_pipe_run() then takes every step in order:
 *
 *   create world -> inputs in -> open tracer -> launch -> close tracer
 *   -> verify -> report -> destroy
 *
 * and undoes what it acquired in reverse order, whatever step failed.
 *
 * Owns: the order of the steps and their unwinding, the inputs it fills,
 * the tracer of the run and the trace header's tool fields (version,
 * default schedule, input hash). Does not own: checking a configuration
 * (the job's author does that before), the meaning of the results (the
 * job's verify and report), or any message: it prints nothing and says
 * which step failed with which code; the subcommand words it (cli/collsim/cli.h
 * has the shared wordings). Called by cli/collsim/run.c, bench.c and ping.c
 * (replay.c and teach.c go through run.c).
 */
#ifndef CS_PIPELINE_H
#define CS_PIPELINE_H

#include <stdint.h>

#include "../sim/launch.h"
#include "../sim/trace.h"
#include "../window/layout.h"
#include "../window/world.h"

/* The version the build generated from CMakeLists.txt's project(). */
#include <collsim/version.h>
#define CS_VERSION_STRING CS_VERSION

/* The step a pipeline stopped at (cs_pipe_t.failed). */
typedef enum cs_pipe_step {
  CS_PIPE_OK = 0,
  CS_PIPE_WORLD,       /* cs_world_create */
  CS_PIPE_INPUTS,      /* -ENOMEM for the inputs, or CS_EMISMATCH: they do
                          not hash to job.expect_hash */
  CS_PIPE_TRACE_TEMP,  /* the temporary trace file (job.trace_temp) */
  CS_PIPE_TRACER,      /* cs_tracer_open */
  CS_PIPE_LAUNCH,      /* cs_launch: ranks not started, or the run aborted */
  CS_PIPE_TRACE_CLOSE, /* cs_tracer_close: a write failed */
  CS_PIPE_VERIFY,      /* the job's verify returned a negative code */
  CS_PIPE_REPORT,      /* the job's report returned a negative code */
} cs_pipe_step_t;

typedef struct cs_pipe cs_pipe_t;

/* A world and its ranks kept from one job to the next (cs_job_t.keep):
 * an untraced job of the same shape (layout, ranks, world options, body,
 * fault, free or controlled) takes them over, set back to a fresh world's
 * state, instead of creating a world and forking (sim/launch.h, the
 * pool). They stay only after a clean launch; after anything else the
 * next job starts afresh. Zero-initialise; cs_pipe_keep_close at the end. */
typedef struct cs_pipe_keep {
  cs_world_t        world;  /* base NULL: none kept */
  cs_launch_pool_t *pool;   /* its ranks, NULL: none */
  cs_layout_t       layout; /* the shape they were made for */
  cs_world_opts_t   wo;
  uint32_t          nranks;
  cs_rank_fn        body;
  cs_fault_t        fault;
  int               controlled;
} cs_pipe_keep_t;

/* A job's own steps, called with the world mapped, only after a clean
 * launch (every rank returned 0, the trace fully written). */
typedef struct cs_job_ops {
  /* Without job.inputs: writes rank r's input row (job.input_bytes). */
  void (*fill)(void *ctx, uint32_t r, uint8_t *row);
  /* Reads the results out of the world. Returns 0 or a count (kept in
   * cs_pipe_t.verdict), or a negative code. May be NULL. */
  int (*verify)(cs_pipe_t *p, void *ctx);
  /* Prints them (the one step that may print). Returns 0 or a count (kept
   * in cs_pipe_t.reported), or a negative code. May be NULL. */
  int (*report)(cs_pipe_t *p, void *ctx);
} cs_job_ops_t;

/* What one launch is. The caller fills it and keeps it alive while the
 * pipeline runs; the pipeline never changes it. */
typedef struct cs_job {
  const cs_layout_t *layout;   /* the windows */
  uint32_t        nranks;
  cs_world_opts_t wo;          /* io, trace ring (cs_pipe_trace_bytes),
                                  scheduler area, wait timeout */
  const uint8_t  *inputs;      /* nranks rows of input_bytes, copied into
                                  each rank's input buffer; NULL = ops.fill
                                  (or no inputs when input_bytes is 0) */
  uint64_t        input_bytes; /* bytes per rank */
  uint64_t        expect_hash; /* non-zero: the inputs must hash to it
                                  (cs_trace_fnv64 over all rows) */
  cs_rank_fn      body;        /* what every rank runs */
  void           *arg;
  cs_fault_t      fault;       /* kind CS_FAULT_NONE = none */
  const cs_sched_cfg_t *sched; /* controlled mode, NULL = free */
  const char     *trace;       /* trace file, NULL = untraced; with
                                  trace_temp a mkstemp template (XXXXXX) */
  cs_trace_t     *trace_mem;   /* with trace NULL: record into memory
                                  (cs_tracer_open_mem) and hand the run's
                                  records, sorted by seq, over here, even
                                  after a failed launch (the caller
                                  cs_trace_free's them); the world may be
                                  a kept one (keep) */
  int             trace_temp;  /* create the file with mkstemp and unlink
                                  its name as soon as the tracer has it */
  cs_trace_header_t th;        /* the run's configuration for the trace
                                  header; the pipeline adds version_str,
                                  schedule "free" if empty, input_hash */
  const cs_job_ops_t *ops;     /* may be NULL */
  void           *ctx;         /* passed to ops */
  cs_wait_where_t wait_where;  /* the wavefront's names of waits; fn NULL
                                  = none */
  cs_pipe_keep_t *keep;        /* untraced or traced into memory: take and keep the world and
                                  ranks there (the body's arg must not
                                  change between such jobs); NULL = none */
} cs_job_t;

/* One pipeline run: what it holds while it runs and what it found. */
struct cs_pipe {
  const cs_job_t *job;
  cs_world_t      world;     /* mapped from the world step to the end */
  const uint8_t  *inputs;    /* job.inputs, or NULL: the pipeline filled
                                the world's input buffers in place
                                (cs_world_input) */
  uint64_t        input_hash; /* of the inputs (with a trace or expect_hash) */
  const char     *trace;     /* the trace file's name: job.trace, or
                                trace_path for a temporary one */
  char            trace_path[4096]; /* a temporary trace's name */
  cs_trace_header_t th;
  cs_tracer_t    *tracer;
  cs_launch_pool_t *pool;    /* job.keep's ranks for this launch, or NULL */
  int             statuses[CS_MAX_RANKS]; /* ranks' wait statuses */
  cs_launch_result_t res;
  cs_pipe_step_t  failed;    /* the first step that failed */
  int             err;       /* its code (negative), or launch_rc 1 */
  int             launch_rc; /* cs_launch: 0, 1 (aborted) or -errno */
  int             close_rc;  /* cs_tracer_close: 0 or -errno */
  uint64_t        events;    /* global sequence numbers the run used */
  uint64_t        records;   /* records the ranks wrote to the trace */
  int             verdict;   /* ops.verify's result */
  int             reported;  /* ops.report's result */
};

/* Runs job `j` through every step (see the top of this file). Returns 0
 * when every step succeeded (then p->verdict and p->reported hold what
 * verify and report returned); otherwise p->failed names the first step
 * that failed and the return is its code: negative, or 1 for an aborted
 * run (the launcher has printed why). Even after a failed launch the
 * tracer is closed (the trace of a failure is kept), and p->launch_rc,
 * p->close_rc, p->res and p->events are set. On return nothing is held:
 * the world is destroyed (or, with job.keep, kept there after a clean
 * launch).
 * Blocks while the ranks run. */
int cs_pipe_run(cs_pipe_t *p, const cs_job_t *j);

/* Ends the ranks kept in k and destroys its world; k is empty after
 * (zeroed). */
void cs_pipe_keep_close(cs_pipe_keep_t *k);

/* Trace ring bytes per rank (cs_world_opts_t.trace_bytes) for a traced run
 * of nranks, free or controlled (cs_trace_chunk_rec, CS_TRACE_CHUNK_MIN).
 * Pure. */
uint64_t cs_pipe_trace_bytes(uint32_t nranks, int controlled);

/* The launch returned (p->failed is CS_PIPE_OK, LAUNCH, TRACE_CLOSE,
 * VERIFY or REPORT). */
static inline int cs_pipe_launched(const cs_pipe_t *p)
{
  return p->failed == CS_PIPE_OK || p->failed >= CS_PIPE_LAUNCH;
}

#endif
