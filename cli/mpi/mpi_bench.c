/*
 * mpi_bench.c - `collsim-mpi bench`: the nccl-tests table of collsim's
 * algorithms over the MPI-3 RMA transport next to the MPI library's own
 * MPI_Allreduce, in the same mpirun, on the same ranks:
 *
 *   mpirun -np N collsim-mpi bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS]
 *                                  [-w WARMUP] [--algo LIST] [-o OP]
 *
 * Per size (bytes per rank, fp32): every algorithm of LIST runs WARMUP +
 * ITERS calls on one window and is verified against the oracle
 * (cli/mpi/mpi_case.c); then MPI_Allreduce runs WARMUP + ITERS calls out of
 * place, each after an MPI_Barrier. A time is the median over the timed
 * calls of the slowest rank's time per call. The ratio is MPI time / best
 * collsim time (= busbw ratio; above 1 collsim is faster). Owns the MPI
 * side's timing and the table; called from cli/mpi/mpi_main.c.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/geometry.h"
#include "../../sim/transport_mpi.h"
#include "../../window/cs_error.h"
#include "../collsim/cli.h"
#include "mpi_case.h"
#include "../../run/verify.h"

#define BCMD "mpi bench"
#define BENCH_MPI_MAX_BYTES (1ull << 32)

static const char bench_usage[] =
    "usage: mpirun -np N collsim-mpi bench [-b MIN] [-e MAX] [-f FACTOR]\n"
    "                   [-n ITERS] [-w WARMUP] [--algo LIST] [-o sum|max|min|prod]\n"
    "                   [--timeout SECONDS]\n"
    "\n"
    "collsim's allreduce over MPI-3 RMA next to MPI_Allreduce of the same\n"
    "MPI library, in one mpirun: fp32, sizes in bytes per rank from MIN\n"
    "(default 8) to MAX (default 16M), times FACTOR (default 2), with an\n"
    "optional binary K, M or G suffix. Per size and algorithm (LIST: the\n"
    "built-in algorithms' names, comma-separated, or all, the default)\n"
    "ITERS timed calls (default 20) after WARMUP (default 5), verified\n"
    "against the oracle ('-' where a size misses the algorithm's own\n"
    "precondition, as twophase's count that is a multiple of N);\n"
    "then MPI_Allreduce the same way, out of place, a barrier before each\n"
    "call. time = median of the slowest rank's time per call; ratio = MPI\n"
    "time / best collsim time (above 1: collsim is faster).\n"
    "\n"
    "Exit status: 0, 1 when a result is wrong, 2 bad usage, 3 aborted.\n";

typedef struct bench_opts {
  uint64_t minb, maxb;
  uint32_t factor, iters, warmup;
  uint32_t algos;          /* bit per cs_algo_t */
  cs_op_t  op;
  cs_cli_common_t common;  /* --timeout, --fault */
} bench_opts_t;

enum { B_ALGO = 1000, B_HELP };

static int bench_algos(const char *arg, uint32_t *mask)
{
  *mask = 0;
  if (!strcmp(arg, "all")) {
    *mask = (1u << CS_NALGOS) - 1;
    return 0;
  }
  char buf[128];
  snprintf(buf, sizeof(buf), "%s", arg);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int v = cs_algo_parse(t);
    if (v < 0) {
      char names[96];
      cs_algo_names(names, sizeof(names), ", a comma-separated list of them, "
                    "or all");
      cs_cli_error(BCMD, "--algo '%s' is not accepted: %s", t, names);
      return -1;
    }
    *mask |= 1u << v;
  }
  if (!*mask)
    cs_cli_error(BCMD, "--algo '%s' is an empty list", arg);
  return *mask ? 0 : -1;
}

static int bench_opt(bench_opts_t *o, int opt, const char *arg)
{
  int bad = 0;
  switch (opt) {
  case 'b': return cs_cli_bytes(BCMD, "-b", arg, BENCH_MPI_MAX_BYTES, &o->minb);
  case 'e': return cs_cli_bytes(BCMD, "-e", arg, BENCH_MPI_MAX_BYTES, &o->maxb);
  case 'f': return cs_cli_u32(BCMD, "-f", arg, 2, 1024, &o->factor);
  case 'n': return cs_cli_u32(BCMD, "-n", arg, 1, 100000, &o->iters);
  case 'w': return cs_cli_u32(BCMD, "-w", arg, 0, 100000, &o->warmup);
  case 'o': return cs_cli_op(BCMD, "-o", arg, &o->op);
  case B_ALGO: return bench_algos(arg, &o->algos);
  case CS_OPT_TRACE: /* would be parsed by the common options and ignored */
    cs_cli_error(BCMD, "--trace is not accepted: bench records no trace (a "
                 "sweep is many runs); trace one case with 'collsim-mpi run "
                 "--trace FILE'");
    return -1;
  default:
    if (cs_cli_common_opt(BCMD, opt, arg, &o->common, &bad) && !bad)
      return 0;
    if (!bad)
      fprintf(stderr, "%s", bench_usage);
    return -1;
  }
}

/* Rank 0. Returns 0, 1 (help printed) or CS_EXIT_USAGE. */
static int bench_parse(int argc, char **argv, uint32_t nranks, bench_opts_t *o)
{
  static const struct option longopts[] = {
      {"algo", required_argument, 0, B_ALGO},
      {"help", no_argument, 0, B_HELP},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  *o = (bench_opts_t){.minb = 8, .maxb = 16u << 20, .factor = 2, .iters = 20,
                      .warmup = 5, .op = CS_SUM};
  bench_algos("all", &o->algos);
  int opt;
  optind = 2;
  opterr = 0; /* one line of ours instead of getopt's */
  cs_cli_args(argc, argv);
  while ((opt = getopt_long(argc, argv, "b:e:f:n:w:o:", longopts, NULL)) != -1) {
    if (opt == B_HELP) {
      printf("%s", bench_usage);
      return 1;
    }
    if (opt == '?') {
      cs_cli_bad_option(BCMD);
      return CS_EXIT_USAGE;
    }
    if (bench_opt(o, opt, optarg) < 0)
      return CS_EXIT_USAGE;
  }
  if (optind < argc) {
    cs_cli_error(BCMD, "unexpected argument '%s'", argv[optind]);
    return CS_EXIT_USAGE;
  }
  if (o->minb > o->maxb) {
    cs_cli_error(BCMD, "-b %llu is above -e %llu", (unsigned long long)o->minb,
                 (unsigned long long)o->maxb);
    return CS_EXIT_USAGE;
  }
  /* Of several algorithms, one that does not take this many ranks (ibing:
   * 2) is left out, as collsim bench skips it; named alone, it is refused. */
  uint32_t fit = 0;
  for (uint32_t a = 0; a < CS_NALGOS; a++)
    fit |= (o->algos & (1u << a)) && nranks <= cs_algo_desc(a)->max_ranks
               ? 1u << a : 0;
  if (fit && fit != o->algos)
    o->algos = fit;
  for (uint32_t a = 0; a < CS_NALGOS; a++) {
    if (!(o->algos & (1u << a)) || nranks <= cs_algo_desc(a)->max_ranks)
      continue;
    char others[64] = "";
    for (uint32_t b = 0; b < CS_NALGOS; b++)
      if (nranks <= cs_algo_desc(b)->max_ranks)
        snprintf(others + strlen(others), sizeof(others) - strlen(others),
                 "%s%s", others[0] ? "," : "", cs_algo_name(b));
    cs_cli_error(BCMD, "%s takes at most %u ranks, not %u: use --algo %s",
                 cs_algo_name(a), cs_algo_desc(a)->max_ranks, nranks, others);
    return CS_EXIT_USAGE;
  }
  return cs_cli_common_check(BCMD, &o->common, nranks) < 0 ? CS_EXIT_USAGE : 0;
}

static MPI_Op mpi_op_of(cs_op_t op)
{
  return op == CS_MAX ? MPI_MAX : op == CS_MIN ? MPI_MIN
       : op == CS_PROD ? MPI_PROD : MPI_SUM;
}

/* Element i of rank r on the MPI side: 1 or 2, so that every sum, max,
 * min and product over at most 64 ranks is exact in float32 whatever the
 * order of the fold (products are powers of two). */
static float mpi_input(int r, uint64_t i)
{
  return 1.0f + (float)((r + i) % 2);
}

/* Times MPI_Allreduce of count floats; returns the median of the slowest
 * rank's time per call (ns, at rank 0) and counts wrong elements. */
static uint64_t time_mpi(const bench_opts_t *o, uint64_t count, int rank,
                         int size, double *wrong)
{
  float *in = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
  uint32_t n = o->warmup + o->iters;
  uint64_t *ns = malloc(sizeof(uint64_t) * n), *slow = malloc(sizeof(uint64_t) * n);
  if (!in || !out || !ns || !slow)
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  for (uint64_t i = 0; i < count; i++)
    in[i] = mpi_input(rank, i);
  for (uint32_t k = 0; k < n; k++) {
    cs_mpi_guard_in_run(0); /* the setup guard's limit holds per call */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, mpi_op_of(o->op), MPI_COMM_WORLD);
    ns[k] = (uint64_t)((MPI_Wtime() - t0) * 1e9);
  }
  double bad = 0;
  for (uint64_t i = 0; i < count; i++) {
    double want = mpi_input(0, i);
    for (int r = 1; r < size; r++) {
      double x = mpi_input(r, i);
      want = o->op == CS_MAX ? fmax(want, x) : o->op == CS_MIN ? fmin(want, x)
           : o->op == CS_PROD ? want * x : want + x;
    }
    bad += (double)out[i] != want;
  }
  MPI_Reduce(&bad, wrong, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(ns, slow, (int)n, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  uint64_t med = rank == 0 ? cs_verify_median_ns(slow + o->warmup, o->iters) : 0;
  free(in);
  free(out);
  free(ns);
  free(slow);
  return med;
}

static void print_head(const bench_opts_t *o, int size)
{
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = 0;
  printf("# collsim-mpi bench: %d rank%s, fp32, %s, %u timed calls after %u; "
         "MPI: %s\n", size, size == 1 ? "" : "s", cs_op_name(o->op), o->iters,
         o->warmup, lib);
  printf("# time = median of the slowest rank's time per call (us); ratio = "
         "MPI time / best collsim time\n");
  printf("%12s %10s", "size(B)", "count");
  for (int a = 0; a < CS_NALGOS; a++)
    if (o->algos & (1u << a))
      printf(" %10s", cs_algo_name((cs_algo_t)a));
  printf(" %10s %10s %8s %8s %7s %6s\n", "best(us)", "mpi(us)", "busbw", "mpi_bw",
         "ratio", "wrong");
}

/* One size: every algorithm, then MPI. Returns the wrong count (rank 0). */
static double bench_size(const bench_opts_t *o, uint64_t bytes, int rank, int size)
{
  uint64_t count = bytes / 4 ? bytes / 4 : 1;
  double best = 0, wrong = 0, mpi_wrong = 0;
  if (rank == 0)
    printf("%12llu %10llu", (unsigned long long)(count * 4), (unsigned long long)count);
  for (int a = 0; a < CS_NALGOS; a++) {
    if (!(o->algos & (1u << a)))
      continue;
    cs_ar_cfg_t c = {.algo = (cs_algo_t)a, .dtype = CS_FP32, .op = o->op,
                     .nranks = (uint32_t)size, .count = count,
                     .tile_bytes = CS_TILE_BYTES, .iters = o->warmup + o->iters};
    const cs_algo_desc_t *d = cs_algo_desc((uint32_t)a);
    if (d->meets && !d->meets(&c)) { /* its precondition: no time here */
      if (rank == 0)
        printf(" %10s", "-");
      continue;
    }
    cs_mpi_result_t res;
    cs__mpi_case(&c, CS_FILL_RANDOM, bytes, NULL, &o->common, o->warmup, 0, &res);
    double us = (double)res.median_ns / 1e3;
    if (rank == 0) {
      printf(" %10.1f", us);
      best = best == 0 || us < best ? us : best;
      wrong += res.v.wrong + res.v.signal_bad + res.v.signals_left + res.v.differ;
    }
  }
  double mpi_us = (double)time_mpi(o, count, rank, size, &mpi_wrong) / 1e3;
  if (rank == 0) {
    double f = size > 1 ? 2.0 * (size - 1) / size : 0.0;
    double bw = best > 0 ? (double)(count * 4) / (best * 1e3) * f : 0;
    double mbw = mpi_us > 0 ? (double)(count * 4) / (mpi_us * 1e3) * f : 0;
    printf(" %10.1f %10.1f %8.3f %8.3f %7.2f %6.0f\n", best, mpi_us, bw, mbw,
           best > 0 ? mpi_us / best : 0, wrong + mpi_wrong);
    fflush(stdout);
  }
  return wrong + mpi_wrong;
}

int cs__mpi_bench(int argc, char **argv, int rank, int size)
{
  bench_opts_t o;
  int rc = 0;
  memset(&o, 0, sizeof(o));
  if (rank == 0)
    rc = bench_parse(argc, argv, (uint32_t)size, &o);
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != 0)
    return rc == 1 ? 0 : rc;
  MPI_Bcast(&o, (int)sizeof(o), MPI_BYTE, 0, MPI_COMM_WORLD);
  o.common.trace = NULL; /* refused above; never a pointer of rank 0's */
  if (rank == 0)
    print_head(&o, size);
  double wrong = 0;
  for (uint64_t b = o.minb; b <= o.maxb; b *= o.factor) {
    wrong += bench_size(&o, b, rank, size);
    if (b > o.maxb / o.factor)
      break;
  }
  int code = wrong ? CS_EXIT_WRONG : CS_EXIT_OK;
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}
