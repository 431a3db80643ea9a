/*
 * bench_user.c - the size sweep of `collsim bench --algo ./x.so` (see
 * bench_user.h): for each size one run of the collective on the pipeline
 * (run/coll.h), its median time per call and its verdict, as one row.
 * A collective's bus bandwidth depends on what it moves, which collsim
 * does not know, so the table has the algorithm bandwidth only.
 */
#include "bench_user.h"

#include <stdio.h>

#include "../../run/coll.h"
#include "../../run/verify.h"

/* One row: a world of b->cfg with `count`. Returns the exit code. */
static int bench_row(const cs_bench_user_t *b, uint64_t count, uint64_t *wrong)
{
  cs_coll_cfg_t g = b->cfg;
  g.count = count;
  g.iters = b->cfg.iters + b->warmup; /* checked by cs_bench_user */
  cs_coll_job_t cj;
  if (cs_coll_job_init(&cj, b->coll, &g, CS_FILL_DEFAULT, 1,
                       b->com->timeout_ns, 0, 0, 0) < 0) {
    cs_cli_error("bench", "%s: its slots are not a window collsim can make",
                 b->coll->name);
    return CS_EXIT_USAGE;
  }
  cj.job.fault = b->com->fault;
  cs_pipe_t p;
  int rc = cs_pipe_run(&p, &cj.job), code = CS_EXIT_OK;
  if (rc != 0) {
    code = p.failed == CS_PIPE_LAUNCH ? cs_cli_pipe_launch_exit("bench", &p)
                                      : CS_EXIT_ABORTED;
    if (p.failed != CS_PIPE_LAUNCH)
      cs_cli_error("bench", "%s", cs_strerror(p.err));
  } else {
    uint64_t nbytes = count * cs_dtype_size(g.dtype);
    double us = (double)cj.median_ns / 1e3;
    char w[24];
    snprintf(w, sizeof(w), "%llu", (unsigned long long)(cj.wrong + cj.signals_bad));
    printf(b->csv ? "%llu,%llu,%s,%s,%s,%u,%.2f,%.3f,%s,%s\n"
                  : "%12llu %12llu %6s %6s %-16s %5u %10.2f %11.3f %11s %6s\n",
           (unsigned long long)nbytes, (unsigned long long)count,
           cs_dtype_name(g.dtype), cs_op_name(g.op), b->coll->name, g.nranks,
           us, (double)nbytes / (us * 1e3), b->csv ? "" : "-",
           cj.verified ? w : b->csv ? "" : "n/a");
    *wrong += cj.wrong + cj.signals_bad + cj.differ;
  }
  cs_coll_job_fini(&cj);
  return code;
}

int cs_bench_user(const cs_bench_user_t *b)
{
  char why[768];
  for (uint32_t s = 0; s < b->nsizes; s++) {
    cs_coll_cfg_t g = b->cfg;
    g.count = b->counts[s];
    g.iters = b->cfg.iters + b->warmup;
    if (cs_coll_check_full(b->coll, &g, why, sizeof(why)) < 0) {
      cs_cli_error("bench", "%s", why);
      return CS_EXIT_USAGE;
    }
  }
  if (b->csv)
    printf("size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,wrong\n");
  else
    printf("# collsim bench: %s (%s), %u rank%s, %u warm-up + %u timed calls "
           "per size; time = median of all calls, slowest rank\n"
           "%12s %12s %6s %6s %-16s %5s %10s %11s %11s %6s\n", b->coll->name,
           b->path, b->cfg.nranks, b->cfg.nranks == 1 ? "" : "s", b->warmup,
           b->cfg.iters, "size(B)", "count", "type", "redop", "algo", "ranks",
           "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  uint64_t wrong = 0;
  for (uint32_t s = 0; s < b->nsizes; s++) {
    int code = bench_row(b, b->counts[s], &wrong);
    if (code != CS_EXIT_OK)
      return code;
  }
  if (!b->coll->expect)
    printf("# Wrong elements: not checked (%s has no expected-result function)\n",
           b->coll->name);
  else if (!b->csv)
    printf("# Wrong elements: %llu%s\n", (unsigned long long)wrong,
           wrong ? " WRONG" : " OK");
  return wrong ? CS_EXIT_WRONG : CS_EXIT_OK;
}
