/*
 * explore_batch.c - the child side of `collsim explore`'s batches: one
 * process runs many schedules of one configuration in turn, so a schedule
 * pays for its world and its ranks but not for a fresh process, its
 * start-up and option parsing. Started by cli/collsim/explore.c as
 * `collsim explore --run-batch LIST [run options] --trace FILE`, where
 * LIST is SCHEDULE@MODEL,... (never shown in the help).
 *
 * A passing schedule runs untraced (with --check: recorded into memory
 * and checked there, no file) and its output is discarded; such
 * schedules share one world and its rank processes (kept after each clean
 * run, set back to a fresh world's state before the next:
 * run/pipeline.h), so a schedule pays for neither a new world nor a fork
 * nor a file; the first failing one is run again with the trace (and
 * with --check the check's words), its output kept, and the batch stops there with that
 * run's exit code and a last line "explore-batch: schedule K failed". All
 * passing: "explore-batch: N passed", exit 0. SIGINT, SIGTERM and SIGHUP
 * stay blocked for the whole batch: a run in progress aborts (the
 * launcher takes them), and between runs the batch ends with exit 3, so a
 * stop never lands while a world exists.
 *
 * Owns: the batch loop and its protocol. Does not own a run (cli/collsim/run.c)
 * or choosing the schedules (cli/collsim/explore.c, its only caller).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../../run/coll.h"
#include "run.h"

/* Starts a schedule's output afresh: what the last one printed goes. */
static void fresh_output(void)
{
  fflush(stdout);
  fflush(stderr);
  if (ftruncate(1, 0) == 0)
    lseek(1, 0, SEEK_SET);
}

/* Sets o's schedule and memory model from one "SCHEDULE@MODEL". 0 or -1
 * (printed). */
static int take_item(run_opts_t *o, char *item)
{
  char *at = strchr(item, '@');
  int m = at ? cs_mm_parse(at + 1) : -1;
  if (at)
    *at = 0;
  cs_sched_cfg_t s = {0};
  if (m < 0 || cs_sched_parse(item, &s, NULL) < 0) {
    cs_cli_error("explore", "--run-batch: '%s' is not SCHEDULE@MODEL", item);
    return -1;
  }
  s.model = (cs_mm_t)m;
  o->sched = s;
  o->schedule_str = item;
  o->model_set = 1;
  return 0;
}

/* One schedule: its run, and for a failure the traced re-run (in a world
 * of its own: the kept one and its ranks go first). With --check the run
 * of a built-in is recorded into memory and checked there, on the kept
 * world, with no file (cs_run_check_mem); only a failure (of the run or
 * of the check) is run again, with its trace and the check's words. */
static int one(run_opts_t *o, const char *trace)
{
  int mem = o->check && !o->coll;
  o->com.trace = o->check && !mem ? trace : NULL;
  o->abort_reason = 0;
  fresh_output();
  int rc = mem ? cs_run_check_mem(o) : o->check ? cs_run_checked(o) : cs_run_execute(o);
  if (rc != CS_EXIT_OK)
    cs_pipe_keep_close(o->keep);
  if (rc == CS_EXIT_OK || rc == CS_EXIT_USAGE || (o->check && !mem) ||
      o->abort_reason == CS_ABORT_SIGNAL /* stopped, not failed */)
    return rc;
  o->com.trace = trace; /* the same schedule, now recorded */
  if (mem)
    fresh_output(); /* the output of `collsim run --check`, as without memory */
  else
    fflush(stdout);
  int again = mem ? cs_run_checked(o) : cs_run_execute(o);
  if (again == CS_EXIT_OK)
    printf("explore-batch: the traced re-run passed\n");
  return rc;
}

int cs__explore_batch(int argc, char **argv)
{
  char *list = strdup(argv[0]);
  run_opts_t o;
  if (!list)
    return CS_EXIT_ABORTED;
  int rc = cs_run_parse(argc, argv, &o);
  const char *trace = o.com.trace;
  if (rc == 0 && !trace)
    cs_cli_error("explore", "--run-batch needs --trace FILE");
  if (rc != 0 || !trace) {
    free(list);
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  }
  cs_cli_block_stops();
  cs_pipe_keep_t keep = {0};
  o.keep = &keep; /* one world and its ranks for the untraced runs */
  unsigned k = 0;
  for (char *save, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    k++;
    int stop = cs_cli_stop_pending();
    if (stop || take_item(&o, t) < 0) {
      rc = stop ? CS_EXIT_ABORTED : CS_EXIT_USAGE;
      if (stop) /* explore tells this from a failure by it */
        printf("explore-batch: interrupted by SIG%s\n", sigabbrev_np(stop));
      break;
    }
    if ((rc = one(&o, trace)) != CS_EXIT_OK)
      break;
  }
  if (rc != CS_EXIT_OK && rc != CS_EXIT_USAGE)
    printf("explore-batch: schedule %u failed\n", k);
  else if (rc == CS_EXIT_OK)
    printf("explore-batch: %u passed\n", k);
  cs_pipe_keep_close(&keep);
  free(list);
  return rc;
}
