/*
 * run_user.c - the run of a collective loaded from a shared object, for
 * `collsim run --algo ./x.so` (see run_user.h): the configuration check,
 * the pipeline job (run/coll.h), the summary and the exit code. Owns the
 * wording of the summary; not the loading (coll.c), the option parsing
 * (run.c) or the rank body (collectives/user.c).
 */
#define _GNU_SOURCE
#include "run_user.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../collectives/oracle.h"
#include "../../window/cs_error.h"
#include "../../run/coll.h"
#include "../../run/pipeline.h"

static void print_elem(cs_dtype_t t, const void *buf, uint64_t i)
{
  if (t == CS_FP32) {
    uint32_t b;
    memcpy(&b, (const uint8_t *)buf + i * 4, 4);
    printf("0x%08x (%.9g)", b, cs_oracle_decode(t, buf, i));
  } else {
    printf("0x%04x (%.6g)", ((const uint16_t *)buf)[i],
           cs_oracle_decode(t, buf, i));
  }
}

static void print_head(const cs_run_user_t *x, const cs_coll_job_t *cj)
{
  const cs_coll_cfg_t *g = &x->cfg;
  uint32_t n = g->nranks;
  if (x->verbose_mode || x->sched->strategy != CS_SCHED_FREE)
    printf("mode: %s%s, memory model %s\n",
           x->sched->strategy != CS_SCHED_FREE ? "controlled, schedule " : "free",
           x->sched->strategy != CS_SCHED_FREE ? cj->job.th.schedule : "",
           cs_mm_name(x->sched->model));
  printf("collsim run: %s (%s), %u rank%s, %llu x %s per rank, %s, input %s, "
         "%u call%s\n", x->coll->name, x->path, n, n == 1 ? "" : "s",
         (unsigned long long)g->count, cs_dtype_name(g->dtype),
         cs_op_name(g->op), cs_fill_name(cj->fill), g->iters,
         g->iters == 1 ? "" : "s");
  printf("time per call: %.1f us (median of %u, slowest rank)\n",
         (double)cj->median_ns / 1e3, g->iters);
}

static void print_result(const cs_run_user_t *x, cs_coll_job_t *cj,
                         const cs_pipe_t *p)
{
  uint32_t n = x->cfg.nranks;
  if (!cj->verified) {
    printf("result: NOT VERIFIED: %s has no expected-result function "
           "(expect is NULL), so the outputs were not compared\n",
           x->coll->name);
  } else if (cj->wrong == 0) {
    printf("result: bit-exact on all %u rank%s against %s's expected-result "
           "function\n", n, n == 1 ? "" : "s", x->coll->name);
  } else {
    uint32_t r = (uint32_t)cj->bad_rank; /* cj->want is its expected result */
    printf("result: WRONG: %llu element%s differ from %s's expected result; "
           "first: rank %u index %llu: expected ", (unsigned long long)cj->wrong,
           cj->wrong == 1 ? "" : "s", x->coll->name, r,
           (unsigned long long)cj->bad_i);
    print_elem(x->cfg.dtype, cj->want, cj->bad_i);
    printf(", got ");
    print_elem(x->cfg.dtype, cs_world_output(&p->world, r), cj->bad_i);
    printf("\n");
  }
  if (x->coll->signal_slot == CS_COLL_NO_SIGNALS)
    printf("signals: none declared\n");
  else if (cj->signals_bad == 0)
    printf("signals: every cell at its final value (%s)\n",
           x->coll->signal_final ? "signal_final" : "0, self-cleared");
  else
    printf("signals: WRONG: %llu cell%s not at the final value; first: rank "
           "%lld cell %llu holds %d, expected %d\n",
           (unsigned long long)cj->signals_bad, cj->signals_bad == 1 ? "" : "s",
           (long long)cj->sig_rank, (unsigned long long)cj->sig_cell,
           cj->sig_got, cj->sig_want);
  if (cj->differ)
    printf("repeated calls: WRONG: %u call%s gave a result different from "
           "the first\n", cj->differ, cj->differ == 1 ? "" : "s");
}

/* One run: the shared job first, so that the pipeline's context is both
 * the job (its verify step) and this (the report). */
typedef struct user_run {
  cs_coll_job_t  cj;
  cs_job_ops_t   ops;
  cs_run_user_t *x;
} user_run_t;

static int user_report(cs_pipe_t *p, void *ctx)
{
  user_run_t *ur = ctx;
  print_head(ur->x, &ur->cj);
  print_result(ur->x, &ur->cj, p);
  return cs_coll_job_ok(&ur->cj) ? CS_EXIT_OK : CS_EXIT_WRONG;
}

/* The run's job: the shared one plus schedule, trace, fault, header. */
static int make_job(user_run_t *ur)
{
  cs_run_user_t *x = ur->x;
  cs_coll_job_t *cj = &ur->cj;
  int controlled = x->sched->strategy != CS_SCHED_FREE;
  int rc = cs_coll_job_init(cj, x->coll, &x->cfg, x->fill, x->seed,
                            x->com->timeout_ns, x->com->trace != NULL,
                            controlled, (int)x->padded_cells);
  if (rc < 0)
    return rc;
  cs_job_t *j = &cj->job;
  ur->ops = cj->ops;
  ur->ops.report = user_report;
  j->ops = &ur->ops;
  j->ctx = ur;
  j->sched = controlled ? x->sched : NULL;
  j->trace = x->com->trace;
  j->fault = x->com->fault;
  j->expect_hash = x->expect_hash;
  j->th.memory_model = x->sched->model;
  j->th.modes = (x->padded_cells ? CS_TR_MODE_PADDED_CELLS : 0) |
                (uint32_t)x->cfg.minmax << CS_TR_MODE_MINMAX_SHIFT |
                (cs_coll_flags(x->coll) & CS_COLL_CHUNK_TAGS
                     ? CS_TR_MODE_CHUNK_TAGS : 0);
  j->th.fault_kind = x->com->has_fault ? x->com->fault.kind : 0;
  j->th.fault_rank = x->com->fault.rank;
  j->th.fault_event = x->com->fault.event;
  j->th.shape_rows = x->cfg.shape_rows; /* CS_COLL_SHAPE's, or 0 */
  j->th.shape_cols = x->cfg.shape_cols;
  j->th.valid_rows = x->cfg.valid_rows;
  j->th.valid_cols = x->cfg.valid_cols;
  snprintf(j->th.algo_path, sizeof(j->th.algo_path), "%s", x->path);
  if (x->sha256)
    memcpy(j->th.algo_sha256, x->sha256, sizeof(j->th.algo_sha256));
  snprintf(j->th.schedule, sizeof(j->th.schedule), "%s",
           x->schedule_str ? x->schedule_str : controlled ? "replay" : "free");
  return 0;
}

/* Words the step the pipeline stopped at. Returns the exit code. */
static int user_failed(const user_run_t *ur, const cs_pipe_t *p)
{
  const char *cmd = ur->x->cmd;
  switch (p->failed) {
  case CS_PIPE_WORLD:
    cs_cli_error(cmd, "cannot make %u windows of %llu bytes for %s: %s",
                 ur->x->cfg.nranks, (unsigned long long)ur->cj.l.win_bytes,
                 ur->x->coll->name, cs_strerror(p->err));
    return CS_EXIT_USAGE;
  case CS_PIPE_INPUTS:
    if (p->err == -ENOMEM) {
      cs_cli_error(cmd, "out of memory for the inputs");
      return CS_EXIT_ABORTED;
    }
    cs_cli_error(cmd, "the inputs differ from the recorded run's (input hash "
                 "mismatch)");
    return CS_EXIT_USAGE;
  case CS_PIPE_TRACER:
    return cs_cli_tracer_open_exit(cmd, p);
  case CS_PIPE_LAUNCH:
  case CS_PIPE_TRACE_CLOSE:
    return cs_cli_pipe_launch_exit(cmd, p);
  case CS_PIPE_VERIFY:
    cs_cli_error(cmd, "out of memory for the verification");
    return CS_EXIT_ABORTED;
  default:
    return p->reported;
  }
}

int cs_run_user(cs_run_user_t *x)
{
  char why[768];
  if (cs_coll_check_full(x->coll, &x->cfg, why, sizeof(why)) < 0) {
    cs_cli_error(x->cmd, "%s", why);
    return CS_EXIT_USAGE;
  }
  if (cs_cli_common_check(x->cmd, x->com, x->cfg.nranks) < 0)
    return CS_EXIT_USAGE;
  if (x->padded_cells && x->coll->signal_slot == CS_COLL_NO_SIGNALS) {
    cs_cli_error(x->cmd, "--signal-layout padded: %s declares no signal slot "
                 "to pad", x->coll->name);
    return CS_EXIT_USAGE;
  }
  user_run_t ur = {.x = x};
  if (make_job(&ur) < 0) {
    cs_cli_error(x->cmd, "%s: its slots are not a window collsim can make",
                 x->coll->name);
    return CS_EXIT_USAGE;
  }
  cs_pipe_t p;
  cs_pipe_run(&p, &ur.cj.job);
  if (cs_pipe_launched(&p)) {
    x->abort_reason = p.res.aborted ? p.res.abort_reason : 0;
    x->sched_steps = p.events;
    x->steps_taken = p.res.steps;
  }
  int code = user_failed(&ur, &p);
  cs_coll_job_fini(&ur.cj);
  return code;
}
