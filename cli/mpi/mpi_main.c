/*
 * mpi_main.c - the `collsim-mpi` command: the allreduce of `collsim run`
 * with one MPI process per rank, over the MPI-3 RMA transport
 * (sim/transport_mpi.h), started by mpirun:
 *
 *   mpirun -np N collsim-mpi run [--algo LIST] [--count LIST] [--dtype LIST]
 *                                [--op LIST] [--fill F] [--seed S] [--iters K]
 *                                [--bug B] [--tile-bytes B] [--timeout S]
 *                                [--fault F] [--minmax M] [--signals M]
 *                                [--trace FILE] [--input IN.npy]
 *                                [--output OUT.npy]
 *   mpirun -np N collsim-mpi bench ...          (cli/mpi/mpi_bench.c)
 *
 * Rank 0 parses the options and hands them to every rank. A list option
 * makes a sweep: every combination runs in turn in the one job (a case is
 * cli/mpi/mpi_case.c: the seeded fill, the rank body of `collsim run`, each
 * rank checking its own result against the oracle; --input's rows, read
 * by rank 0, go to every rank, and --output's are gathered back to rank
 * 0, which writes the file); rank 0 prints the
 * summary of a single case, or one line per case. Owns only this wiring
 * and the words; built only with the CMake option COLLSIM_MPI.
 *
 * Exit status (every rank returns the same): 0 verified, 1 wrong result,
 * 2 bad usage, 3 aborted (a rank faulted, timed out or died: MPI_Abort).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/geometry.h"
#include "../../collectives/registry.h"
#include "../../collectives/oracle.h"
#include "../../sim/transport_mpi.h"
#include "../../window/cs_error.h"
#include "../collsim/cli.h"
#include "mpi_case.h"
#include "mpi_trace.h"
#include "../../run/npy.h"

#define CMD "mpi run"

static const char usage[] =
    "usage: mpirun -np N collsim-mpi run [--algo LIST] [--count LIST]\n"
    "                   [--dtype LIST] [--op LIST]\n"
    "                   [--fill arange|pto|random] [--seed S] [--iters K]\n"
    "                   [--tile-bytes B] [--bug NAME]\n"
    "                   [--minmax ieee|propagate|pto]\n"
    "                   [--signals single-use|self-clearing]\n"
    "                   [--shape ROWSxCOLS [--valid R,C]]\n"
    "                   [--fault RANK:KIND[:EVENT]] [--timeout SECONDS]\n"
    "                   [--trace FILE] [--input IN.npy] [--output OUT.npy]\n"
    "       mpirun -np N collsim-mpi bench [options]   (bench --help)\n"
    "\n"
    "The allreduce of 'collsim run' on N MPI processes (the ranks), over\n"
    "MPI-3 one-sided communication: one MPI_Win_allocate window per rank in\n"
    "the algorithm's slot layout, passive target for the whole run. Every\n"
    "rank verifies its own result bit for bit against the oracle; rank 0\n"
    "prints the summary. Options as in 'collsim run --help', except that\n"
    "--algo, --dtype (fp32, fp16, bf16), --op (sum, max, min, prod) and\n"
    "--count take a comma-separated list or 'all' (not --count): the job\n"
    "then runs every combination, in one mpirun, one line each, and fails\n"
    "if any of them does. --algo all is every algorithm of 'collsim run';\n"
    "a case one of them refuses while the mesh takes it (twophase at a\n"
    "count that is not a multiple of the ranks) is then skipped, with its\n"
    "reason on its line; an algorithm named in the list is refused instead.\n"
    "\n"
    "  --minmax M       ieee (default), propagate or pto: what max and min do\n"
    "                   with NaN and signed zeros, as 'collsim run --minmax';\n"
    "                   the oracle follows the mode\n"
    "  --signals M      self-clearing (default: every call ends with the\n"
    "                   epilogue that returns the cells to 0) or single-use\n"
    "                   (no epilogue, the cells stay at their final values,\n"
    "                   one call: --iters is 1, more is refused), as\n"
    "                   'collsim run --signals'; every rank checks its cells\n"
    "  --shape RxC      as 'collsim run --shape' (one --count or none), with\n"
    "  --valid R,C      mesh's partial-valid rectangle path: 2-D loads and\n"
    "                   stores, one MPI_Get / MPI_Put per row\n"
    "  --trace FILE     write an ordinary collsim trace of the run to FILE\n"
    "                   (one case only), for 'collsim trace' and 'collsim\n"
    "                   check'. The ranks share no clock: events are ordered\n"
    "                   by Lamport clocks carried from each notify to the\n"
    "                   wait that sees it, merged at rank 0 by (clock, rank);\n"
    "                   time is logical (one tick shows as 1 us). A run\n"
    "                   aborted by a wait timeout or an injected hang writes\n"
    "                   what rank 0 and the ranks that answered the hang\n"
    "                   wavefront recorded, a fault record per hung rank and\n"
    "                   the abort (wait timeout), as 'collsim run' does; if\n"
    "                   rank 0 was in no wait, nobody gathers the records:\n"
    "                   no trace is written, and the rank that ends the job\n"
    "                   says so in one line. A run aborted otherwise (a\n"
    "                   fault, a killed rank) writes no trace and leaves an\n"
    "                   existing FILE as it was (FILE.tmpXXXXXX is renamed\n"
    "                   over it)\n"
    "  --input IN.npy   inputs from a .npy of shape (N, C), N the job's ranks:\n"
    "                   '<f4' fp32, '<f2' fp16, '<u2' bf16 bits; row r is rank\n"
    "                   r's input; C and the dtype are the case's --count and\n"
    "                   --dtype (given ones must match); not with --fill.\n"
    "                   Rank 0 reads it and sends every rank all rows; a\n"
    "                   --trace of it says fill 'input file' and holds the\n"
    "                   rows' hash, as 'collsim run --input --trace' does\n"
    "                   ('collsim replay' then needs the same --input)\n"
    "  --output OUT.npy write every rank's result, shape (N, C), same dtype\n"
    "                   (one case only): rank 0 gathers the rows after the\n"
    "                   check and writes OUT.npy.tmpXXXXXX, renamed over\n"
    "                   OUT.npy; an existing path that is not a regular file\n"
    "                   of yours is refused before the run, as are an --output or\n"
    "                   --trace that is the --input file and a --trace that\n"
    "                   is the --output file\n"
    CS_CLI_FAULT_TIMEOUT_HELP
    "\n"
    "When a wait times out (or an injected hang ends), rank 0 prints the hang\n"
    "wavefront of 'collsim run', headed by a rank that reported an injected\n"
    "hang, else by the lowest rank that gave no report (stopped by a signal,\n"
    "in a loop or stuck: 'rank R: no progress: ...'), else by the wait that\n"
    "timed out; one line per rank: each rank in\n"
    "a wait puts its position one-sidedly into a small window on rank 0\n"
    "(after the first timeout only), and rank 0 waits up to --timeout (0.5\n"
    "to 2 s) for them;\n"
    "a rank that cannot answer (computing, or stuck in an MPI call to a rank\n"
    "that makes no progress, as over TCP) shows as 'no report'. If rank 0 is\n"
    "in no wait, each rank that timed out prints its own line instead.\n"
    "With every rank on one node, a watchdog thread per rank names a rank\n"
    "whose process stopped while the others are blocked inside MPI\n"
    "(COLLSIM_MPI_NO_WATCHDOG=1 turns it off). Outside a run (MPI_Init,\n"
    "opening and closing windows, MPI_Finalize) a stretch of collective\n"
    "calls that lasts COLLSIM_MPI_SETUP_LIMIT seconds (default 60, 0: no\n"
    "limit) ends the job with one line and exit 3 (docs/mpi.md).\n"
    "\n"
    "A rank killed by SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT says so in\n"
    "one line ('collsim-mpi: rank 1: killed by SIGSEGV at event 4') and ends\n"
    "the job with MPI_Abort.\n"
    "\n"
    "Exit status: 0 verified, 1 wrong result, 2 bad usage, 3 run aborted\n"
    "(a rank faulted, crashed, timed out or died).\n";

#define LIST_MAX 16

/* What every rank runs; rank 0 parses it and broadcasts the bytes. */
typedef struct mpi_opts {
  cs_ar_cfg_t cfg;        /* the first case; the lists give the others */
  cs_fill_t   fill;       /* 0: the default fill of each case */
  uint64_t    seed;
  cs_cli_common_t common; /* --fault, --timeout, --trace (the path: valid
                             on rank 0 only) */
  int         traced;     /* --trace given */
  int         have_iters; /* --iters given */
  int         have_count, have_dtype; /* --count, --dtype given */
  int         have_shape, have_valid; /* --shape, --valid given */
  const char *input, *output; /* --input, --output: valid on rank 0 only */
  int         has_input, has_output;
  uint32_t    nalgo, ndtype, nop, ncount;
  int         algo_all;   /* --algo all: a case an algorithm refuses is
                             skipped (skipped()), not an error */
  cs_algo_t   algo[LIST_MAX];
  cs_dtype_t  dtype[LIST_MAX];
  cs_op_t     op[LIST_MAX];
  uint64_t    count[LIST_MAX];
} mpi_opts_t;

enum { OPT_ALGO = 1, OPT_COUNT, OPT_DTYPE, OPT_OP, OPT_FILL, OPT_SEED,
       OPT_ITERS, OPT_TILE, OPT_BUG, OPT_MINMAX, OPT_SIGNALS, OPT_INPUT,
       OPT_OUTPUT, OPT_HELP, OPT_SHAPE, OPT_VALID };
enum { PARSE_HELP = -1 };

/* One item of a list option into o; returns 0 or -1 after one line. */
static int list_item(mpi_opts_t *o, int opt, const char *s)
{
  int v;
  switch (opt) {
  case OPT_ALGO:
    if ((v = cs_algo_parse(s)) < 0) {
      char names[96];
      cs_algo_names(names, sizeof(names), " or all");
      cs_cli_error(CMD, "--algo '%s' is not accepted: %s", s, names);
      return -1;
    }
    o->algo[o->nalgo++] = (cs_algo_t)v;
    return 0;
  case OPT_DTYPE:
    return cs_cli_dtype(CMD, "--dtype", s, &o->dtype[o->ndtype++]);
  case OPT_OP:
    return cs_cli_op(CMD, "--op", s, &o->op[o->nop++]);
  default:
    return cs_cli_u64(CMD, "--count", s, 1, 1ull << 36, &o->count[o->ncount++]);
  }
}

/* A comma-separated list (or "all") for --algo/--dtype/--op/--count. A
 * repeated option replaces the earlier list. Returns 0 or -1. */
static int parse_list(mpi_opts_t *o, int opt, const char *arg)
{
  static const char *const all[][5] = {
      [OPT_DTYPE] = {"fp32", "fp16", "bf16"},
      [OPT_OP] = {"sum", "max", "min", "prod"}};
  uint32_t *n = opt == OPT_ALGO ? &o->nalgo : opt == OPT_DTYPE ? &o->ndtype
              : opt == OPT_OP ? &o->nop : &o->ncount;
  *n = 0;
  if (opt == OPT_ALGO)
    o->algo_all = 0;
  if (opt == OPT_ALGO && !strcmp(arg, "all")) {
    for (int a = 0; a < CS_NALGOS; a++)
      o->algo[o->nalgo++] = (cs_algo_t)a;
    o->algo_all = 1;
    return 0;
  }
  if (opt != OPT_COUNT && !strcmp(arg, "all")) {
    for (int i = 0; all[opt][i]; i++)
      list_item(o, opt, all[opt][i]);
    return 0;
  }
  char buf[512];
  snprintf(buf, sizeof(buf), "%s", arg);
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (*n == LIST_MAX) {
      cs_cli_error(CMD, "'%s' has more than %d items", arg, LIST_MAX);
      return -1;
    }
    if (list_item(o, opt, t) < 0)
      return -1;
  }
  if (*n == 0) {
    cs_cli_error(CMD, "'%s' is an empty list", arg);
    return -1;
  }
  return 0;
}

/* One option. Returns 0 or -1 after one line. */
static int opt_one(mpi_opts_t *o, int opt, const char *arg)
{
  int v, bad = 0;
  switch (opt) {
  case OPT_ALGO: case OPT_COUNT: case OPT_DTYPE: case OPT_OP:
    o->have_count |= opt == OPT_COUNT;
    o->have_dtype |= opt == OPT_DTYPE;
    return parse_list(o, opt, arg);
  case OPT_INPUT:
    o->has_input = 1;
    o->input = arg;
    return 0;
  case OPT_OUTPUT:
    o->has_output = 1;
    o->output = arg;
    return 0;
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
    o->have_iters = 1;
    return cs_cli_u32(CMD, "--iters", arg, 1, 1000000, &o->cfg.iters);
  case OPT_MINMAX:
    return cs_cli_minmax(CMD, "--minmax", arg, &o->cfg.minmax);
  case OPT_SHAPE:
    o->have_shape = 1;
    return cs_cli_pair(CMD, "--shape", arg, 'x', 1, &o->cfg.shape_rows,
                       &o->cfg.shape_cols);
  case OPT_VALID:
    o->have_valid = 1;
    return cs_cli_pair(CMD, "--valid", arg, ',', 0, &o->cfg.valid_rows,
                       &o->cfg.valid_cols);
  case OPT_SIGNALS:
    return cs_cli_signals(CMD, "--signals", arg, &o->cfg.no_epilogue);
  case OPT_TILE:
    return cs_cli_u32(CMD, "--tile-bytes", arg, 32, 1u << 24, &o->cfg.tile_bytes);
  case OPT_BUG:
    if ((v = cs_bug_parse(arg)) < 0)
      break;
    o->cfg.bug = (uint32_t)v;
    return 0;
  case CS_OPT_TRACE:
    o->traced = 1;
    o->common.trace = arg;
    return 0;
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

/* Case i of the product algo x dtype x op x count, into c. */
static void case_of(const mpi_opts_t *o, uint32_t i, cs_ar_cfg_t *c)
{
  *c = o->cfg;
  c->count = o->count[i % o->ncount];
  i /= o->ncount;
  c->op = o->op[i % o->nop];
  i /= o->nop;
  c->dtype = o->dtype[i % o->ndtype];
  i /= o->ndtype;
  c->algo = o->algo[i];
}

static uint32_t ncases(const mpi_opts_t *o)
{
  return o->nalgo * o->ndtype * o->nop * o->ncount;
}

/* With --algo all, a case that its algorithm refuses while the mesh takes
 * it (a count that is not a multiple of the ranks, a dtype or op the
 * algorithm does not reduce, too many ranks) is skipped; rc: its
 * cs_ar_check. A case named algorithm by algorithm is refused instead. */
static int skipped(const mpi_opts_t *o, const cs_ar_cfg_t *c, int rc)
{
  cs_ar_cfg_t m = *c;
  m.algo = (cs_algo_t)cs_algo_parse("mesh"); /* takes every dtype, op, count */
  return rc < 0 && o->algo_all && cs_ar_check(&m) == 0;
}

/* As collsim run: single-use signals allow one call per world, so
 * --iters is 1 unless given, and more calls (asked for, or a defect that
 * needs two) are refused; a defect that shows on a later call gets its
 * calls. --trace records one case. Returns 0 or -1 (printed). */
static int check_modes(mpi_opts_t *o)
{
  if (o->traced && ncases(o) > 1) {
    cs_cli_error(CMD, "--trace records one case, not a sweep of %u: give one "
                 "--algo, --dtype, --op and --count", ncases(o));
    return -1;
  }
  if (cs_cli_single_use_check(CMD, &o->cfg, o->have_iters) < 0)
    return -1;
  if (o->cfg.iters < cs_bug_min_calls(o->cfg.bug))
    o->cfg.iters = cs_bug_min_calls(o->cfg.bug);
  return 0;
}

/* --shape and --valid as collsim run takes them, on one count (given,
 * from --input, or ROWS x COLS). Returns 0 or -1 (printed). */
static int check_shape(mpi_opts_t *o)
{
  if (o->have_shape && o->ncount > 1) {
    cs_cli_error(CMD, "--shape gives one count, not a list of %u: give one "
                 "--count or none", o->ncount);
    return -1;
  }
  o->cfg.count = o->count[0];
  uint64_t n = (uint64_t)o->cfg.shape_rows * o->cfg.shape_cols;
  if (o->have_shape && !o->have_count && o->has_input && n != o->cfg.count) {
    cs_cli_error(CMD, "--input %s: its columns (count) (%llu) do not match "
                 "the options (--shape %ux%u: %llu)", o->input,
                 (unsigned long long)o->cfg.count, o->cfg.shape_rows,
                 o->cfg.shape_cols, (unsigned long long)n);
    return -1;
  }
  if (cs_cli_shape_resolve(CMD, &o->cfg, o->have_shape, o->have_valid,
                           o->have_count || o->has_input) < 0)
    return -1;
  o->count[0] = o->cfg.count;
  return 0;
}

/* Every case must be one collsim run accepts. Returns 0 or -1 (printed). */
static int check_cases(const mpi_opts_t *o)
{
  for (uint32_t i = 0; i < ncases(o); i++) {
    cs_ar_cfg_t c;
    case_of(o, i, &c);
    int rc = cs_ar_check(&c);
    if (rc < 0 && !skipped(o, &c, rc)) {
      char why[256];
      cs_cli_ar_why(&c, rc, why, sizeof(why));
      cs_cli_error(CMD, "%s", why);
      return -1;
    }
  }
  return 0;
}

/* What in the --input file does not match the job or the options, or
 * NULL. */
static const char *input_clash(const mpi_opts_t *o, uint32_t nranks,
                               const cs_npy_t *a)
{
  for (uint32_t i = 0; o->have_dtype && i < o->ndtype; i++)
    if (o->dtype[i] != a->dtype)
      return "dtype";
  if (a->rows != nranks)
    return "rows (ranks)";
  for (uint32_t i = 0; o->have_count && i < o->ncount; i++)
    if (o->count[i] != a->cols)
      return "columns (count)";
  return NULL;
}

/* --input and --output as collsim run takes them: the output path is
 * checked before the run, the input read (into a) and matched against
 * the job's ranks and any --dtype and --count, which it then sets.
 * Returns 0 or -1 (printed). */
static int check_io(mpi_opts_t *o, uint32_t nranks, cs_npy_t *a)
{
  if (o->has_input && o->fill) {
    cs_cli_error(CMD, "--fill and --input are exclusive: give one");
    return -1;
  }
  /* The output rule: neither output is the input nor the other. */
  cs_cli_input_t in[2];
  int n = 0;
  if (o->has_input)
    in[n++] = (cs_cli_input_t){"--input", o->input, 0};
  if (o->has_output && cs_cli_output_ok(CMD, "--output", o->output, in, n, 1) < 0)
    return -1;
  if (o->has_output)
    in[n++] = (cs_cli_input_t){"--output", o->output, 1};
  if (o->traced && cs_cli_output_ok(CMD, "--trace", o->common.trace, in, n, 0) < 0)
    return -1;
  char why[512];
  if (o->has_input && cs_npy_read(o->input, a, why, sizeof(why)) < 0) {
    cs_cli_error(CMD, "--input %s", why);
    return -1;
  }
  const char *clash = o->has_input ? input_clash(o, nranks, a) : NULL;
  if (clash) {
    cs_cli_error(CMD, "--input %s: its %s (%s, shape (%llu, %llu)) do not "
                 "match the options (%u ranks: mpirun -np)", o->input, clash,
                 cs_dtype_name(a->dtype), (unsigned long long)a->rows,
                 (unsigned long long)a->cols, nranks);
    return -1;
  }
  if (o->has_input) {
    o->ndtype = o->ncount = 1;
    o->dtype[0] = o->cfg.dtype = a->dtype;
    o->count[0] = o->cfg.count = a->cols;
  }
  if (o->has_output && ncases(o) > 1) {
    cs_cli_error(CMD, "--output writes one case, not a sweep of %u: give one "
                 "--algo, --dtype, --op and --count", ncases(o));
    return -1;
  }
  return 0;
}

static const struct option run_longopts[] = {
    {"algo", required_argument, 0, OPT_ALGO},
    {"count", required_argument, 0, OPT_COUNT},
    {"dtype", required_argument, 0, OPT_DTYPE},
    {"op", required_argument, 0, OPT_OP},
    {"fill", required_argument, 0, OPT_FILL},
    {"seed", required_argument, 0, OPT_SEED},
    {"iters", required_argument, 0, OPT_ITERS},
    {"tile-bytes", required_argument, 0, OPT_TILE},
    {"bug", required_argument, 0, OPT_BUG},
    {"minmax", required_argument, 0, OPT_MINMAX},
    {"signals", required_argument, 0, OPT_SIGNALS},
    {"input", required_argument, 0, OPT_INPUT},
    {"output", required_argument, 0, OPT_OUTPUT},
    {"shape", required_argument, 0, OPT_SHAPE},
    {"valid", required_argument, 0, OPT_VALID},
    {"help", no_argument, 0, OPT_HELP},
    CS_CLI_COMMON_LONGOPTS,
    {0, 0, 0, 0}};

/* Rank 0: the options of `run`, and the --input file into `in` (the
 * caller frees in->data). Returns 0, PARSE_HELP or CS_EXIT_USAGE
 * (printed). */
static int parse(int argc, char **argv, uint32_t nranks, mpi_opts_t *o,
                 cs_npy_t *in)
{
  memset(o, 0, sizeof(*o));
  o->cfg = (cs_ar_cfg_t){.algo = CS_DEFAULT_ALGO, .dtype = CS_FP32, .op = CS_SUM,
                         .nranks = nranks, .count = 65537,
                         .tile_bytes = CS_TILE_BYTES, .iters = 10};
  o->seed = 1;
  o->nalgo = o->ndtype = o->nop = o->ncount = 1;
  o->algo[0] = CS_DEFAULT_ALGO;
  o->dtype[0] = CS_FP32;
  o->op[0] = CS_SUM;
  o->count[0] = 65537;
  int opt;
  optind = 2;
  opterr = 0; /* one line of ours instead of getopt's */
  cs_cli_args(argc, argv);
  while ((opt = getopt_long(argc, argv, "", run_longopts, NULL)) != -1) {
    if (opt == OPT_HELP) {
      printf("%s", usage);
      return PARSE_HELP;
    }
    if (opt == '?') {
      cs_cli_bad_option(CMD);
      return CS_EXIT_USAGE;
    }
    if (opt_one(o, opt, optarg) < 0)
      return CS_EXIT_USAGE;
  }
  if (optind < argc) {
    cs_cli_error(CMD, "unexpected argument '%s'", argv[optind]);
    return CS_EXIT_USAGE;
  }
  if (check_io(o, nranks, in) < 0 || check_shape(o) < 0 ||
      check_modes(o) < 0 || check_cases(o) < 0 || cs_cli_common_check(CMD, &o->common, nranks) < 0)
    return CS_EXIT_USAGE;
  return 0;
}

static void print_summary(const cs_ar_cfg_t *c, cs_fill_t fill,
                          const char *input, const cs_mpi_result_t *res)
{
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  const cs_mpi_verdict_t *v = &res->v;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = 0;
  char hb[32];
  printf("collsim-mpi run: %s allreduce, %u rank%s, %llu x %s (%s per "
         "rank), %s, input %s%s%s, %u call%s\n", cs_algo_name(c->algo), n,
         n == 1 ? "" : "s", (unsigned long long)c->count,
         cs_dtype_name(c->dtype), cs_human_bytes(bytes, hb, sizeof(hb)),
         cs_op_name(c->op),
         cs_fill_name(fill), input ? " " : "", input ? input : "", c->iters,
         c->iters == 1 ? "" : "s");
  printf("transport: MPI-3 RMA, %s, window memory model %s\n", lib,
         res->unified ? "unified" : "separate");
  if (c->minmax || c->no_epilogue || c->bug)
    printf("mode: minmax %s, signals %s%s%s\n",
           cs_minmax_name((cs_minmax_t)c->minmax),
           c->no_epilogue ? "single-use" : "self-clearing",
           c->bug ? ", bug " : "", c->bug ? cs_bug_table[c->bug].name : "");
  double us = (double)res->median_ns / 1e3;
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
           "%s at the end\n", v->signal_bad, cs_ar_signal_final(c),
           v->signals_left,
           c->no_epilogue ? "at their final value" : "back to 0");
  else if (c->no_epilogue)
    printf("signals: single-use: every non-self cell reached %d and stays "
           "there (no epilogue)\n", cs_ar_signal_final(c));
  else
    printf("signals: every non-self cell reached %d, then the epilogue "
           "returned all to 0\n", cs_ar_signal_final(c));
  if (v->differ)
    printf("repeated calls: WRONG: %.0f gave a result different from the "
           "first\n", v->differ);
}

/* One line of a sweep: the case and its verdict. */
static void print_line(const cs_ar_cfg_t *c, const cs_mpi_result_t *res)
{
  const cs_mpi_verdict_t *v = &res->v;
  printf("%-9s %-4s %-4s count %-8llu %10.1f us  ", cs_algo_name(c->algo),
         cs_dtype_name(c->dtype), cs_op_name(c->op),
         (unsigned long long)c->count, (double)res->median_ns / 1e3);
  if (res->code == CS_EXIT_OK)
    printf("bit-exact\n");
  else
    printf("WRONG: %.0f elements, %.0f signal cells, %.0f cells not back to "
           "0, %.0f calls differ\n", v->wrong, v->signal_bad, v->signals_left,
           v->differ);
  fflush(stdout);
}

/* A case --algo all skips: its line, and why (rc: its cs_ar_check). */
static void print_skip(const cs_ar_cfg_t *c, int rc)
{
  char why[256];
  cs_cli_ar_why(c, rc, why, sizeof(why));
  printf("%-9s %-4s %-4s count %-8llu skipped: %s\n", cs_algo_name(c->algo),
         cs_dtype_name(c->dtype), cs_op_name(c->op),
         (unsigned long long)c->count, why);
  fflush(stdout);
}

/* Rank 0: room for --output's rows of case c (NULL elsewhere). */
static uint8_t *output_rows(const mpi_opts_t *o, const cs_ar_cfg_t *c,
                            int rank)
{
  if (rank != 0 || !o->has_output)
    return NULL;
  uint8_t *out = malloc(c->count * cs_dtype_size(c->dtype) * c->nranks);
  if (!out) {
    cs_cli_error(CMD, "out of memory for the output");
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  }
  return out;
}

/* --output: rank 0 writes the gathered rows (temp file, renamed over the
 * path, by cs_npy_write). Returns the exit code every rank agrees on,
 * given the verdict `code` (a wrong result stays the verdict). */
static int write_output(const mpi_opts_t *o, const cs_ar_cfg_t *c, int rank,
                        uint8_t *out, int code)
{
  char why[256];
  if (rank == 0 && cs_npy_write(o->output, c->dtype, c->nranks, c->count,
                                out, why, sizeof(why)) < 0) {
    cs_cli_error(CMD, "--output %s", why);
    if (code == CS_EXIT_OK)
      code = CS_EXIT_USAGE;
  }
  free(out);
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

/* Every case of the sweep; returns the exit code (the worst case's).
 * traced: the run records a trace to rank 0's --trace; rows: the
 * --input rows on every rank, or NULL. */
static int run_cases(const mpi_opts_t *o, int rank, int traced,
                     const uint8_t *rows)
{
  uint32_t n = ncases(o), bad = 0, skips = 0;
  int code = CS_EXIT_OK; /* the worst case's */
  for (uint32_t i = 0; i < n; i++) {
    cs_ar_cfg_t c;
    case_of(o, i, &c);
    int rc = cs_ar_check(&c);
    if (skipped(o, &c, rc)) {
      if (rank == 0)
        print_skip(&c, rc);
      skips++;
      continue;
    }
    cs_fill_t fill = rows ? CS_FILL_INPUT
                          : o->fill ? o->fill : cs_ar_default_fill(&c);
    cs_mpi_result_t res;
    cs_mpi_io_t io = {.rows = rows, .out = output_rows(o, &c, rank),
                      .gather = o->has_output};
    cs__mpi_case(&c, fill, o->seed, &io, &o->common, 0, traced, &res);
    if (rank == 0 && n == 1)
      print_summary(&c, fill, o->input, &res);
    else if (rank == 0)
      print_line(&c, &res);
    if (o->has_output) { /* after the summary, as collsim run */
      fflush(stdout);
      res.code = write_output(o, &c, rank, io.out, res.code);
    }
    bad += res.code != CS_EXIT_OK;
    code = res.code > code ? res.code : code;
    if (res.trace_err) {
      if (rank == 0 && res.trace_err != -EOVERFLOW) /* else said */
        cs_cli_error(CMD, "--trace %s: write failed: %s", o->common.trace,
                     cs_strerror(res.trace_err));
      return CS_EXIT_ABORTED;
    }
    if (rank == 0 && traced)
      printf("trace: %s (logical clocks: %llu clock words per rank, one "
             "per signal cell; merged at rank 0; see 'collsim trace')\n",
             o->common.trace, (unsigned long long)res.clock_words);
  }
  if (rank == 0 && n > 1 && skips)
    printf("collsim-mpi run: %u case%s on %u rank%s: %s%u wrong; %u skipped "
           "(--algo all: an algorithm's precondition)\n", n - skips,
           n - skips == 1 ? "" : "s", o->cfg.nranks,
           o->cfg.nranks == 1 ? "" : "s", bad ? "" : "all bit-exact, ", bad,
           skips);
  else if (rank == 0 && n > 1)
    printf("collsim-mpi run: %u case%s on %u rank%s: %s%u wrong\n", n,
           n == 1 ? "" : "s", o->cfg.nranks, o->cfg.nranks == 1 ? "" : "s",
           bad ? "" : "all bit-exact, ", bad);
  fflush(stdout);
  return code;
}

/* --input: rank 0's rows (in->data) to every rank, in pieces an int
 * count can hold. */
static void share_rows(const mpi_opts_t *o, int rank, cs_npy_t *in)
{
  size_t bytes = o->count[0] * cs_dtype_size(o->dtype[0]) * o->cfg.nranks;
  size_t piece = 1u << 30;
  if (rank != 0 && !(in->data = malloc(bytes))) {
    fprintf(stderr, "collsim-mpi: rank %d: out of memory for the input\n",
            rank);
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  }
  for (size_t off = 0; off < bytes; off += piece) {
    cs_mpi_guard_in_run(0); /* the setup guard's limit holds per piece */
    MPI_Bcast((uint8_t *)in->data + off,
              (int)(bytes - off < piece ? bytes - off : piece), MPI_BYTE, 0,
              MPI_COMM_WORLD);
  }
}

/* Rank 0: refuses a --trace path that could not be written before the
 * run, by the output rule (cs_output_check), as collsim run does; the
 * file itself is written only at the end, so an aborted run leaves an
 * existing file as it was. Returns 0 or -1 after one line. */
static int trace_path_ok(const char *path)
{
  if (cs_cli_output_ok(CMD, "--trace", path, NULL, 0, 0) < 0)
    return -1;
  /* A temp file beside path is renamed over it. */
  char *copy = strdup(path);
  int err = !copy ? -ENOMEM
            : access(dirname(copy), W_OK | X_OK) < 0 ? -errno : 0;
  free(copy);
  if (err < 0)
    cs_cli_error(CMD, "--trace %s: cannot create: %s", path, cs_strerror(err));
  return err < 0 ? -1 : 0;
}

/* `collsim-mpi run`: rank 0 parses, every rank runs the cases. */
static int cmd_run(int argc, char **argv, int rank, int size)
{
  mpi_opts_t o;
  cs_npy_t in = {0};
  int rc = 0;
  memset(&o, 0, sizeof(o));
  if (rank == 0)
    rc = parse(argc, argv, (uint32_t)size, &o, &in);
  if (rank == 0 && rc == 0 && o.traced && trace_path_ok(o.common.trace) < 0)
    rc = CS_EXIT_USAGE;
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rc != 0) {
    free(in.data);
    return rc == PARSE_HELP ? 0 : rc;
  }
  const char *path = o.common.trace, *input = o.input, *output = o.output;
  MPI_Bcast(&o, (int)sizeof(o), MPI_BYTE, 0, MPI_COMM_WORLD);
  o.common.trace = rank == 0 ? path : NULL;
  o.input = rank == 0 ? input : NULL;
  o.output = rank == 0 ? output : NULL;
  if (o.has_input)
    share_rows(&o, rank, &in);
  rc = run_cases(&o, rank, o.traced, in.data);
  free(in.data);
  return rc;
}

int main(int argc, char **argv)
{
  if (cs_mpi_guard_start("collsim-mpi", STDERR_FILENO) < 0) {
    fprintf(stderr, "collsim-mpi: COLLSIM_MPI_SETUP_LIMIT='%s': expected "
            "seconds from 0 (no limit) to 86400\n",
            getenv("COLLSIM_MPI_SETUP_LIMIT"));
    return CS_EXIT_USAGE;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, rc;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *sub = argc >= 2 ? argv[1] : "";
  if (!strcmp(sub, "run"))
    rc = cmd_run(argc, argv, rank, size);
  else if (!strcmp(sub, "bench"))
    rc = cs__mpi_bench(argc, argv, rank, size);
  else if (!strcmp(sub, "--help")) {
    if (rank == 0)
      printf("%s", usage);
    rc = 0;
  } else {
    /* One line, as every usage error (not the whole usage). */
    if (rank == 0 && *sub)
      fprintf(stderr, "collsim-mpi: unknown subcommand '%s': expected run "
              "or bench (see 'collsim-mpi --help')\n", sub);
    else if (rank == 0)
      fprintf(stderr, "collsim-mpi: no subcommand: expected run or bench "
              "(see 'collsim-mpi --help')\n");
    rc = CS_EXIT_USAGE;
  }
  MPI_Finalize();
  cs_mpi_guard_stop();
  return rc;
}
