/*
 * mpi_main.c - the `collsim-mpi` command: the allreduce of `collsim run`
 * with one MPI process per rank, over the MPI-3 RMA transport
 * (sim/transport_mpi.h), started by mpirun:
 *
 *   mpirun -np N collsim-mpi run [--algo A] [--count C] [--dtype D] [--op O]
 *                                [--fill F] [--seed S] [--iters K] [--bug B]
 *                                [--tile-bytes B] [--timeout S] [--fault F]
 *
 * Rank 0 parses the options and hands them to every rank. Each rank fills
 * its own input from the seeded fill (the same rows `collsim run` makes),
 * runs the rank body of `collsim run` (cs_ar_rank_main: stage-in, the
 * timed calls, stage-out) and checks its own result bit for bit against the
 * oracle, which it computes from every rank's fill itself; rank 0 prints
 * the summary. Owns only this wiring and the words; built only with the
 * CMake option COLLSIM_MPI.
 *
 * Exit status (every rank returns the same): 0 verified, 1 wrong result,
 * 2 bad usage, 3 aborted (a rank faulted, timed out or died: MPI_Abort).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/allreduce.h"
#include "../collectives/geometry.h"
#include "../collectives/oracle.h"
#include "../sim/transport_mpi.h"
#include "../window/cs_error.h"
#include "cli.h"
#include "verify.h"

#define CMD "mpi run"

static const char usage[] =
    "usage: mpirun -np N collsim-mpi run [--algo mesh|ring|host] [--count C]\n"
    "                   [--dtype fp32|fp16|bf16] [--op sum|max|min|prod]\n"
    "                   [--fill arange|pto|random] [--seed S] [--iters K]\n"
    "                   [--tile-bytes B] [--bug NAME]\n"
    "                   [--fault RANK:KIND[:EVENT]] [--timeout SECONDS]\n"
    "\n"
    "The allreduce of 'collsim run' on N MPI processes (the ranks), over\n"
    "MPI-3 one-sided communication: one MPI_Win_allocate window per rank in\n"
    "the algorithm's slot layout, passive target for the whole run. Every\n"
    "rank verifies its own result bit for bit against the oracle; rank 0\n"
    "prints the summary. Options as in 'collsim run --help'.\n"
    "\n"
    CS_CLI_FAULT_TIMEOUT_HELP
    "\n"
    "Exit status: 0 verified, 1 wrong result, 2 bad usage, 3 run aborted\n"
    "(a rank faulted, timed out or died).\n";

/* What every rank runs; rank 0 parses it and broadcasts the bytes. */
typedef struct mpi_opts {
  cs_ar_cfg_t cfg;
  cs_fill_t   fill;
  uint64_t    seed;
  cs_cli_common_t common; /* --fault, --timeout (trace unused: NULL) */
} mpi_opts_t;

enum { OPT_ALGO = 1, OPT_COUNT, OPT_DTYPE, OPT_OP, OPT_FILL, OPT_SEED,
       OPT_ITERS, OPT_TILE, OPT_BUG, OPT_HELP };
enum { PARSE_HELP = -1 };

/* One option. Returns 0 or -1 after one line. */
static int opt_one(mpi_opts_t *o, int opt, const char *arg)
{
  int v, bad = 0;
  switch (opt) {
  case OPT_ALGO:
    if ((v = cs_algo_parse(arg)) < 0)
      break;
    o->cfg.algo = (cs_algo_t)v;
    return 0;
  case OPT_COUNT:
    return cs_cli_u64(CMD, "--count", arg, 1, 1ull << 36, &o->cfg.count);
  case OPT_DTYPE:
    return cs_cli_dtype(CMD, "--dtype", arg, &o->cfg.dtype);
  case OPT_OP:
    return cs_cli_op(CMD, "--op", arg, &o->cfg.op);
  case OPT_FILL:
    o->fill = !strcmp(arg, "arange") ? CS_FILL_ARANGE
              : !strcmp(arg, "pto")  ? CS_FILL_PTO
              : !strcmp(arg, "random") ? CS_FILL_RANDOM : CS_FILL_INPUT;
    if (o->fill == CS_FILL_INPUT)
      break;
    return 0;
  case OPT_SEED:
    return cs_cli_u64(CMD, "--seed", arg, 0, UINT64_MAX - 1, &o->seed);
  case OPT_ITERS:
    return cs_cli_u32(CMD, "--iters", arg, 1, 1000000, &o->cfg.iters);
  case OPT_TILE:
    return cs_cli_u32(CMD, "--tile-bytes", arg, 32, 1u << 24, &o->cfg.tile_bytes);
  case OPT_BUG:
    if ((v = cs_bug_parse(arg)) < 0)
      break;
    o->cfg.bug = (uint32_t)v;
    return 0;
  case CS_OPT_TRACE:
    cs_cli_error(CMD, "--trace is not supported over MPI (no shared trace "
                 "area across processes)");
    return -1;
  default:
    if (cs_cli_common_opt(CMD, opt, arg, &o->common, &bad) && !bad)
      return 0;
    if (!bad)
      fprintf(stderr, "%s", usage);
    return -1;
  }
  cs_cli_error(CMD, "'%s' is not accepted (see --help)", arg);
  return -1;
}

/* Rank 0: the options. Returns 0, PARSE_HELP or CS_EXIT_USAGE (printed). */
static int parse(int argc, char **argv, uint32_t nranks, mpi_opts_t *o)
{
  static const struct option longopts[] = {
      {"algo", required_argument, 0, OPT_ALGO},
      {"count", required_argument, 0, OPT_COUNT},
      {"dtype", required_argument, 0, OPT_DTYPE},
      {"op", required_argument, 0, OPT_OP},
      {"fill", required_argument, 0, OPT_FILL},
      {"seed", required_argument, 0, OPT_SEED},
      {"iters", required_argument, 0, OPT_ITERS},
      {"tile-bytes", required_argument, 0, OPT_TILE},
      {"bug", required_argument, 0, OPT_BUG},
      {"help", no_argument, 0, OPT_HELP},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  memset(o, 0, sizeof(*o));
  o->cfg = (cs_ar_cfg_t){.algo = CS_ALGO_RING, .dtype = CS_FP32, .op = CS_SUM,
                         .nranks = nranks, .count = 65537,
                         .tile_bytes = CS_TILE_BYTES, .iters = 10};
  o->seed = 1;
  if (argc < 2 || strcmp(argv[1], "run") != 0) {
    fprintf(stderr, "%s", usage);
    return argc >= 2 && !strcmp(argv[1], "--help") ? PARSE_HELP : CS_EXIT_USAGE;
  }
  int opt;
  optind = 2;
  while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    if (opt == OPT_HELP) {
      printf("%s", usage);
      return PARSE_HELP;
    }
    if (opt == '?' || opt_one(o, opt, optarg) < 0)
      return CS_EXIT_USAGE;
  }
  if (optind < argc) {
    cs_cli_error(CMD, "unexpected argument '%s'", argv[optind]);
    return CS_EXIT_USAGE;
  }
  int rc = cs_ar_check(&o->cfg);
  if (rc < 0) {
    char why[256];
    cs_cli_ar_why(&o->cfg, rc, why, sizeof(why));
    cs_cli_error(CMD, "%s", why);
    return CS_EXIT_USAGE;
  }
  if (cs_cli_common_check(CMD, &o->common, nranks) < 0)
    return CS_EXIT_USAGE;
  if (!o->fill)
    o->fill = cs_ar_default_fill(&o->cfg);
  return 0;
}

/* What one rank found; summed (or maxed) over ranks for the summary. */
typedef struct verdict {
  double   wrong;        /* elements of this rank's result that differ */
  double   signal_bad;   /* cells that missed their final value */
  double   signals_left; /* own cells not back to 0 */
  double   differ;       /* calls that differed from the first */
  double   max_abs, max_rel, tol_fail;
} verdict_t;
#define VERDICT_N 7

/* This rank's result against the oracle and float64, from every rank's
 * fill (computed here: the fills are pure functions of the seed). */
static int check_result(const mpi_opts_t *o, uint32_t rank, const uint8_t *got,
                        verdict_t *v)
{
  const cs_ar_cfg_t *c = &o->cfg;
  size_t row = c->count * cs_dtype_size(c->dtype);
  uint8_t *in = malloc(row * c->nranks), *want = malloc(row);
  if (!in || !want) {
    free(in);
    free(want);
    return -1;
  }
  for (uint32_t r = 0; r < c->nranks; r++)
    cs_ar_fill(o->fill, c, o->seed, r, in + row * r);
  cs_oracle_expect(c->algo, c->dtype, c->op, c->nranks, c->count, in, rank, want);
  double rtol, atol;
  cs_oracle_tolerance(c->dtype, &rtol, &atol);
  int64_t first = -1;
  for (uint64_t i = 0; i < c->count; i++) {
    if (!cs_oracle_same(c->dtype, got, want, i) && v->wrong++ == 0)
      first = (int64_t)i;
    double x = cs_oracle_decode(c->dtype, got, i);
    double y = cs_oracle_f64(c->dtype, c->op, c->nranks, c->count, in, i);
    double e = fabs(x - y);
    if (e > v->max_abs)
      v->max_abs = e;
    if (y != 0 && e / fabs(y) > v->max_rel)
      v->max_rel = e / fabs(y);
    if (!(e <= atol + rtol * fabs(y)))
      v->tol_fail++;
  }
  if (first >= 0)
    fprintf(stderr, "collsim-mpi: rank %u: WRONG: %.0f element%s differ from "
            "the oracle; first: index %lld: expected %.9g, got %.9g\n", rank,
            v->wrong, v->wrong == 1 ? "" : "s", (long long)first,
            cs_oracle_decode(c->dtype, want, (uint64_t)first),
            cs_oracle_decode(c->dtype, got, (uint64_t)first));
  free(in);
  free(want);
  return 0;
}

/* Own signal cells after the last epilogue: every rank is past its last
 * call (the barrier), so no notify is in flight. */
static double signals_left(const cs_ar_cfg_t *c, cs_mpi_t *m,
                           const cs_layout_t *l)
{
  MPI_Barrier(m->comm);
  MPI_Win_sync(m->win);
  const int32_t *cells =
      (const int32_t *)(m->base + l->slot[CS_AR_SLOT_SIGNAL].off);
  double n = 0;
  for (uint64_t i = 0; i < cs_ar_signal_cells(c); i++)
    n += cells[i] != 0;
  return n;
}

static void print_summary(const mpi_opts_t *o, const cs_mpi_t *m,
                          const verdict_t *v, uint64_t median_ns)
{
  const cs_ar_cfg_t *c = &o->cfg;
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = 0;
  printf("collsim-mpi run: %s allreduce, %u rank%s, %llu x %s (%llu B per "
         "rank), %s, input %s, %u call%s\n", cs_algo_name(c->algo), n,
         n == 1 ? "" : "s", (unsigned long long)c->count,
         cs_dtype_name(c->dtype), (unsigned long long)bytes, cs_op_name(c->op),
         cs_fill_name(o->fill), c->iters, c->iters == 1 ? "" : "s");
  printf("transport: MPI-3 RMA, %s, window memory model %s\n", lib,
         m->unified ? "unified" : "separate");
  double us = (double)median_ns / 1e3;
  double algbw = us > 0 ? (double)bytes / (us * 1e3) : 0.0;
  double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
  printf("time per call: %.1f us (median of %u, slowest rank), algbw %.3f "
         "GB/s, busbw %.3f GB/s\n", us, c->iters, algbw, busbw);
  if (v->wrong == 0)
    printf("result: bit-exact on all %u rank%s against the oracle\n", n,
           n == 1 ? "" : "s");
  else
    printf("result: WRONG: %.0f element%s differ from the oracle (each "
           "rank's first on stderr)\n", v->wrong, v->wrong == 1 ? "" : "s");
  double rtol, atol;
  cs_oracle_tolerance(c->dtype, &rtol, &atol);
  printf("error vs float64: max abs %.3g, max rel %.3g; reference tolerance "
         "(rtol %g, atol %g): %s\n", v->max_abs, v->max_rel, rtol, atol,
         v->tol_fail ? "EXCEEDED" : "within");
  if (v->signal_bad || v->signals_left)
    printf("signals: WRONG: %.0f cells missed their final value %d, %.0f not "
           "back to 0\n", v->signal_bad, cs_ar_signal_final(c),
           v->signals_left);
  else
    printf("signals: every non-self cell reached %d, then the epilogue "
           "returned all to 0\n", cs_ar_signal_final(c));
  if (v->differ)
    printf("repeated calls: WRONG: %.0f gave a result different from the "
           "first\n", v->differ);
}

/* Gathers the verdicts and the slowest rank's time per call at rank 0,
 * prints there, and returns the exit code every rank agrees on. */
static int report(const mpi_opts_t *o, cs_mpi_t *m, const cs_world_t *w,
                  verdict_t *v)
{
  const cs_ar_cfg_t *c = &o->cfg;
  const uint8_t *out = cs_world_output(w, (uint32_t)m->rank);
  const cs_ar_stats_t *st = (const cs_ar_stats_t *)(out + cs_ar_stats_off(c));
  v->signal_bad = st->signal_bad;
  v->differ = st->iters_differ;
  verdict_t sum, max;
  MPI_Reduce(v, &sum, VERDICT_N, MPI_DOUBLE, MPI_SUM, 0, m->comm);
  MPI_Reduce(v, &max, VERDICT_N, MPI_DOUBLE, MPI_MAX, 0, m->comm);
  uint64_t *ns = malloc(sizeof(uint64_t) * c->iters);
  if (!ns)
    MPI_Abort(m->comm, CS_EXIT_ABORTED);
  MPI_Reduce(st->ns, ns, (int)c->iters, MPI_UINT64_T, MPI_MAX, 0, m->comm);
  int code = 0;
  if (m->rank == 0) {
    sum.max_abs = max.max_abs;
    sum.max_rel = max.max_rel;
    print_summary(o, m, &sum, cs_verify_median_ns(ns, c->iters));
    fflush(stdout);
    code = sum.wrong || sum.signal_bad || sum.signals_left || sum.differ
               ? CS_EXIT_WRONG : CS_EXIT_OK;
  }
  free(ns);
  MPI_Bcast(&code, 1, MPI_INT, 0, m->comm);
  return code;
}

/* The rank body as the launcher runs it (sim/launch.c), minus the fork. */
static void run_body(cs_dev_t *d, const mpi_opts_t *o, cs_mpi_t *m)
{
  d->st->pid = (int32_t)getpid();
  d->st->state = CS_RS_RUNNING;
  int rc = cs_ar_rank_main(d, (void *)&o->cfg);
  if (d->fault_at != UINT64_MAX) { /* a fault past the last event */
    d->nevents = d->fault_at;
    cs__dev_strike(d);
  }
  d->ops->done(d);
  d->st->state = rc == 0 ? CS_RS_DONE : CS_RS_FAILED;
  if (rc != 0) {
    fprintf(stderr, "collsim-mpi: rank %d: cannot run: %s\n", m->rank,
            cs_strerror(d->st->start_err));
    MPI_Abort(m->comm, CS_EXIT_ABORTED);
  }
}

static int run(const mpi_opts_t *o, int rank)
{
  const cs_ar_cfg_t *c = &o->cfg;
  cs_layout_t l;
  cs_world_t w;
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c),
                        .timeout_ns = o->common.timeout_ns};
  int err = cs_ar_layout(c, &l);
  if (err >= 0)
    err = cs_world_local(&w, &l, c->nranks, &wo);
  if (err < 0) {
    fprintf(stderr, "collsim-mpi: rank %d: %s\n", rank, cs_strerror(err));
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  }
  cs_mpi_t m;
  cs_dev_t d;
  if ((err = cs_mpi_open(&m, MPI_COMM_WORLD, &l)) < 0 ||
      (err = cs_mpi_dev_init(&d, &m, &w, o->common.has_fault ? &o->common.fault
                                                             : NULL)) < 0) {
    fprintf(stderr, "collsim-mpi: rank %d: %s\n", rank, cs_strerror(err));
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  }
  m.abort_code = CS_EXIT_ABORTED;
  cs_ar_fill(o->fill, c, o->seed, (uint32_t)rank, cs_world_input(&w, (uint32_t)rank));
  MPI_Barrier(m.comm);
  run_body(&d, o, &m);
  verdict_t v = {0};
  if (check_result(o, (uint32_t)rank, cs_world_output(&w, (uint32_t)rank), &v) < 0) {
    fprintf(stderr, "collsim-mpi: rank %d: out of memory\n", rank);
    MPI_Abort(m.comm, CS_EXIT_ABORTED);
  }
  v.signals_left = signals_left(c, &m, &l);
  int code = report(o, &m, &w, &v);
  cs_dev_fini(&d);
  cs_mpi_close(&m);
  cs_world_destroy(&w);
  return code;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_opts_t o;
  memset(&o, 0, sizeof(o));
  if (rank == 0)
    rc = parse(argc, argv, (uint32_t)size, &o);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc == 0) {
    MPI_Bcast(&o, (int)sizeof(o), MPI_BYTE, 0, MPI_COMM_WORLD);
    o.common.trace = NULL;
    rc = run(&o, rank);
  }
  MPI_Finalize();
  return rc == PARSE_HELP ? 0 : rc;
}
