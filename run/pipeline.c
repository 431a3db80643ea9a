/*
 * pipeline.c - the one run pipeline of the collsim tool (see pipeline.h):
 * world, inputs, tracer, launch, verify, report, and the unwinding, in one
 * place for every subcommand that runs ranks. Prints nothing: each step's
 * failure is a code in cs_pipe_t for the subcommand to word.
 */
#define _GNU_SOURCE
#include "pipeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../window/cs_error.h"

uint64_t cs_pipe_trace_bytes(uint32_t nranks, int controlled)
{
  return cs_trace_ring_bytes(controlled ? CS_TRACE_CHUNK_MIN
                                        : cs_trace_chunk_rec(nranks));
}

static int fail(cs_pipe_t *p, cs_pipe_step_t step, int err)
{
  if (p->failed == CS_PIPE_OK) {
    p->failed = step;
    p->err = err;
  }
  return err;
}

/* Inputs: the job's rows copied into every rank's input buffer, or rows
 * filled there in place (no copy in the launcher); hashed row after row
 * when a trace or the job's expected hash needs it. */
static int inputs_in(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  uint64_t bytes = j->input_bytes, h = CS_TRACE_FNV64_INIT;
  if (bytes == 0)
    return 0;
  p->inputs = j->inputs;
  for (uint32_t r = 0; r < j->nranks; r++) {
    uint8_t *row = cs_world_input(&p->world, r);
    if (p->inputs)
      memcpy(row, p->inputs + r * bytes, bytes);
    else
      j->ops->fill(j->ctx, r, row);
    if (j->trace || j->expect_hash)
      h = cs_trace_fnv64_more(h, row, bytes);
  }
  if (j->trace || j->expect_hash)
    p->input_hash = h;
  if (j->expect_hash && p->input_hash != j->expect_hash)
    return fail(p, CS_PIPE_INPUTS, CS_EMISMATCH);
  return 0;
}

/* The run's trace header: the job's, with the tool's fields. */
static void header_of(cs_pipe_t *p)
{
  p->th = p->job->th;
  snprintf(p->th.version_str, sizeof(p->th.version_str), "%s", CS_VERSION_STRING);
  if (!p->th.schedule[0])
    snprintf(p->th.schedule, sizeof(p->th.schedule), "free");
  p->th.input_hash = p->input_hash;
}

/* Creates the trace file (a temporary one: from the template, its name
 * gone as soon as the tracer holds it) and writes the header; or, for a
 * trace into memory, opens a tracer without a file. */
static int tracer_open(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  if (!j->trace && !j->trace_mem)
    return 0;
  header_of(p);
  if (!j->trace) {
    int rc = cs_tracer_open_mem(&p->tracer, &p->th, &p->world);
    return rc < 0 ? fail(p, CS_PIPE_TRACER, rc) : 0;
  }
  p->trace = j->trace;
  if (j->trace_temp) {
    snprintf(p->trace_path, sizeof(p->trace_path), "%s", j->trace);
    p->trace = p->trace_path;
    int fd = mkstemp(p->trace_path);
    if (fd < 0)
      return fail(p, CS_PIPE_TRACE_TEMP, -errno);
    close(fd);
  }
  int rc = cs_tracer_open(&p->tracer, p->trace, &p->th, &p->world);
  if (j->trace_temp)
    unlink(p->trace);
  return rc < 0 ? fail(p, CS_PIPE_TRACER, rc) : 0;
}

/* Launches the ranks, then finishes the trace whatever the launch did. */
static int launch(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  cs_launch_opts_t lo = {.fault = j->fault, .sched = j->sched,
                         .wait_where = j->wait_where, .pool = p->pool};
  if (p->tracer) {
    cs_tracer_launch_opts(p->tracer, &lo);
    lo.statuses = p->statuses;
  }
  p->launch_rc = cs_launch(&p->world, j->body, j->arg, &lo, &p->res);
  p->events = p->world.ctl->event_seq;
  if (p->launch_rc != 0)
    fail(p, CS_PIPE_LAUNCH, p->launch_rc);
  if (p->tracer) {
    p->records = cs_tracer_records(p->tracer);
    const cs_launch_result_t *res = p->launch_rc < 0 ? NULL : &p->res;
    p->close_rc = j->trace ? cs_tracer_close(p->tracer, res, p->statuses)
                           : cs_tracer_close_mem(p->tracer, res, p->statuses,
                                                 j->trace_mem);
    p->tracer = NULL;
    if (p->close_rc < 0)
      fail(p, CS_PIPE_TRACE_CLOSE, p->close_rc);
  }
  return p->failed == CS_PIPE_OK ? 0 : p->err;
}

/* The job's verify, then its report. */
static int pipe_results(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  if (!j->ops)
    return 0;
  if (j->ops->verify && (p->verdict = j->ops->verify(p, j->ctx)) < 0)
    return fail(p, CS_PIPE_VERIFY, p->verdict);
  if (j->ops->report && (p->reported = j->ops->report(p, j->ctx)) < 0)
    return fail(p, CS_PIPE_REPORT, p->reported);
  return 0;
}

void cs_pipe_keep_close(cs_pipe_keep_t *k)
{
  cs_launch_pool_close(k->pool);
  if (k->world.base) /* a zeroed keep's fd 0 is not its own: stdin */
    cs_world_destroy(&k->world);
  memset(k, 0, sizeof(*k));
}

/* Whether k holds ranks for j's shape. */
static int keep_fits(const cs_pipe_keep_t *k, const cs_job_t *j)
{
  return k->world.base && cs_launch_pool_alive(k->pool) && k->nranks == j->nranks &&
         k->body == j->body && k->controlled == (j->sched != NULL) &&
         k->fault.kind == j->fault.kind && k->fault.rank == j->fault.rank &&
         k->fault.event == j->fault.event &&
         !memcmp(&k->wo, &j->wo, sizeof(k->wo)) &&
         !memcmp(&k->layout, j->layout, sizeof(k->layout));
}

/* The world: the one kept for j's shape, set back to a fresh world's
 * state with its ranks waiting, or a new one. */
static int world_in(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  cs_pipe_keep_t *k = j->trace ? NULL : j->keep;
  if (k && keep_fits(k, j)) {
    p->world = k->world;
    k->world = (cs_world_t){.fd = -1}; /* the pipeline's until it is kept again */
    cs_launch_pool_reset(k->pool, &p->world);
    p->pool = k->pool;
    return 0;
  }
  if (k) {
    cs_pipe_keep_close(k);
    if (cs_launch_pool_open(&k->pool, j->nranks) == 0)
      p->pool = k->pool; /* else: no pool, a run like any other */
  }
  return cs_world_create(&p->world, j->layout, j->nranks, &j->wo);
}

/* The end: the world kept with its ranks after a clean launch, else
 * destroyed (and a pool's ranks ended). */
static void world_out(cs_pipe_t *p)
{
  const cs_job_t *j = p->job;
  cs_pipe_keep_t *k = p->pool ? j->keep : NULL;
  if (k && cs_pipe_launched(p) && p->launch_rc == 0 &&
      cs_launch_pool_alive(k->pool)) {
    k->world = p->world;
    k->layout = *j->layout;
    k->wo = j->wo;
    k->nranks = j->nranks;
    k->body = j->body;
    k->fault = j->fault;
    k->controlled = j->sched != NULL;
    return;
  }
  if (k) {
    cs_launch_pool_close(k->pool);
    k->pool = NULL;
  }
  cs_world_destroy(&p->world);
}

int cs_pipe_run(cs_pipe_t *p, const cs_job_t *j)
{
  memset(p, 0, sizeof(*p));
  p->job = j;
  int rc = world_in(p);
  if (rc < 0) {
    world_out(p);
    return fail(p, CS_PIPE_WORLD, rc);
  }
  if ((rc = inputs_in(p)) < 0)
    goto out_world;
  if ((rc = tracer_open(p)) < 0)
    goto out_inputs;
  if ((rc = launch(p)) != 0)
    goto out_inputs; /* launch() has closed the tracer */
  rc = pipe_results(p);
out_inputs:
  p->inputs = NULL;
out_world:
  world_out(p);
  return rc;
}
