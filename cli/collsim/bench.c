/*
 * bench.c - `collsim bench`: the nccl-tests table for the allreduce
 * collectives (docs/bench.md). Sweeps message sizes from
 * -b to -e by factor -f and, for each size and algorithm, builds one world,
 * launches the ranks once and lets each rank stage its input in, run the
 * warmup calls and then the timed calls on the data already in its window
 * (or with stage-in/out inside the timed region, --staging). Per call the
 * time is the slowest rank's; the table shows the median over the timed
 * calls, algbw = size / time and busbw = algbw * 2(N-1)/N, as nccl-tests
 * defines them.
 *
 * With -c 1 the last call is checked: each rank stages its original input
 * in again (repeated calls reduce already-reduced data), runs one more
 * allreduce, stages the result out, and the launcher compares every element
 * of every rank with the oracle (collectives/oracle.h) for those inputs;
 * #wrong is the count of elements that differ. With --staging every timed
 * call starts from the original input, so the last timed call is the
 * checked one.
 *
 * With --algo ./x.so the sweep runs a collective loaded from a shared
 * object instead: per size one run of the shared job (run/coll.h), its
 * median time per call and its verdict against the collective's
 * expected-result function, as one row. Its bus bandwidth depends on what
 * it moves, which collsim does not know, so that table has the algorithm
 * bandwidth only.
 *
 * Owns: the command line, the size sweep, the bench rank body and its io
 * protocol, the table/CSV output of both kinds. Each row is one job on the run pipeline
 * (run/pipeline.h), whose verify step reads the times and checks the
 * result (run/verify.h). Does not own the algorithms, the world or the
 * launcher (collectives/, window/, sim/). Called from cli/collsim/main.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/geometry.h"
#include "../../collectives/oracle.h"
#include "../../sim/launch.h"
#include "../../window/cs_error.h"
#include "cli.h"
#include "temp.h"
#include "run.h"
#include "../../run/coll.h"
#include "../../run/floor.h"
#include "../../run/pipeline.h"
#include "../../run/verify.h"

static const char bench_help[] =
    "usage: collsim bench [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS]\n"
    "                     [-w WARMUP] [-c 0|1] [-d fp32|fp16|bf16|all]\n"
    "                     [-o sum|max|min|prod|all] [--ranks N]\n"
    "                     [--algo NAME|all|./X.so] [--csv]\n"
    "                     [--staging]\n"
    "                     [--tile-bytes B] [--trace-cost] [--floor]\n"
    "                     [--signals self-clearing] [--minmax M]\n"
    "                     [--fault RANK:KIND[:EVENT]] [--timeout SECONDS]\n"
    "\n"
    "Times the allreduce of PyPTO PR #2161 on N forked rank processes and\n"
    "prints the nccl-tests table: one row per size and algorithm with size,\n"
    "count, type, redop, algo, time(us), algbw(GB/s), busbw(GB/s), #wrong.\n"
    "For each size and algorithm: one world, one launch; every rank stages\n"
    "its (seeded random) input in once, runs WARMUP calls, then ITERS timed\n"
    "calls. time is the median over the timed calls of the slowest rank's\n"
    "time per call, with the data already in the windows (--staging: stage-in\n"
    "and stage-out inside the timed region). algbw = size / time, busbw =\n"
    "algbw * 2(N-1)/N (GB = 1e9 bytes). With -c 1 each rank stages its\n"
    "original input in again after the timed calls, runs one more call and\n"
    "#wrong counts the elements, over all ranks, that differ from the oracle\n"
    "for those inputs (with --staging the last timed call is the checked one).\n"
    "\n"
    "  -b, --minbytes B  smallest size per rank, bytes (default 8)\n"
    "  -e, --maxbytes B  largest size per rank, bytes (default 32M)\n"
    "                    sizes take a binary K, M or G suffix (4K = 4096);\n"
    "                    each is rounded down to whole elements, at least one\n"
    "  -f, --stepfactor F  multiply the size by F, 2..1024 (default 4); the\n"
    "                    sweep stops at the last size <= MAXBYTES\n"
    "  -n, --iters K     timed calls per size and algorithm, 1..1000000\n"
    "                    (default 20)\n"
    "  -w, --warmup_iters W  untimed calls before them, 0..1000000 (default 5)\n"
    "  -c, --check 0|1   verify the result of the last call (default 1)\n"
    "  -d, --datatype D  fp32, fp16, bf16 (collsim's extension: PyPTO has fp32\n"
    "                    and fp16) or all, every dtype in one sweep (default\n"
    "                    fp32)\n"
    "  -o, --op O        sum, max, min, prod or all, every op in one sweep\n"
    "                    (default sum); with all, one table whose rows go\n"
    "                    dtype by dtype, op by op, size by size, as nccl-tests\n"
    "  --ranks N         ranks, 1..64 (default 2)\n"
    "  --algo A          all (the default: every built-in algorithm, each one\n"
    "                    skipped where it does not take the rank count or a\n"
    "                    size, as the header says), or one built-in algorithm:\n"
    "@ALGOS@\n"
    "                    or a collective of your own, ./X.so (see collsim run\n"
    "                    --help): one world per size, verified against its\n"
    "                    expected-result function (every call, warm-up too);\n"
    "                    time is the median of the timed calls, and busbw is\n"
    "                    left empty; --trace-cost, --staging, --floor,\n"
    "                    --signals, -c 0, -d all and -o all are for the\n"
    "                    built-ins (refused with a plug-in), and --minmax too\n"
    "                    unless its flags have CS_COLL_MINMAX\n"
    "  --csv             print CSV instead of the table: a header row\n"
    "                    size,count,type,redop,algo,ranks,time_us,algbw_gbps,\n"
    "                    busbw_gbps,wrong then one row per size and algorithm\n"
    "                    (wrong is empty with -c 0)\n"
    "  --staging         include stage-in and stage-out in the timed region\n"
    "  --tile-bytes B    UB tile size (default 16384, as in PR #2161)\n"
    "  --trace-cost      what recording costs (see 'collsim run --trace'):\n"
    "                    in every launch the calls alternate untraced and\n"
    "                    traced (U T T U U T T U ...; the traced ones are\n"
    "                    recorded to a temporary file under $TMPDIR or /tmp,\n"
    "                    deleted at once); time(us) is then the untraced\n"
    "                    median, and three columns follow: traced(us), the\n"
    "                    traced median, ratio, traced / untraced, and\n"
    "                    ns/event, the difference over the device events\n"
    "                    of a call (the most of any rank). CSV adds\n"
    "                    traced_us,trace_ratio,events_per_call,records\n"
    "                    (records: all the ranks wrote in the launch).\n"
    "                    Side by side in one run, so machine drift cancels;\n"
    "                    -n 20 or more. Each traced call's events are\n"
    "                    recorded whole; the launcher's writes may spill\n"
    "                    into the untraced call after it\n"
    "  --floor           the memory floor: before each size's rows, one\n"
    "                    private buffer of the size per rank, served by\n"
    "                    min(N, CPUs) threads pinned as the ranks are;\n"
    "                    timed passes add each buffer's second half into\n"
    "                    its first with the fp32 sum kernel the calls use.\n"
    "                    From that read-add-write rate, floor(us) is the\n"
    "                    time the (3N-1) x size bytes an in-place\n"
    "                    allreduce must move at least would take, and\n"
    "                    floor/time how close the call comes to it (1 =\n"
    "                    at the floor). The buffers take as much memory as\n"
    "                    the windows. CSV adds\n"
    "                    floor_us,floor_ratio\n"
    "  --signals self-clearing  the only mode bench runs: its calls repeat on\n"
    "                    one world, which needs the self-clearing epilogue of\n"
    "                    the later PRs; PR #2161's single-use signals allow one\n"
    "                    call per world ('collsim run --signals single-use')\n"
    "  --minmax M        ieee (default), propagate or pto: what max and min do\n"
    "                    with NaN and signed zeros (see 'collsim run --help')\n"
    CS_CLI_FAULT_TIMEOUT_HELP
    "\n"
    "A progress line goes to stderr while it is a terminal.\n"
    "\n"
    "Exit status: 0 success (every checked result right), 1 wrong result\n"
    "(#wrong > 0 somewhere), 2 bad usage or input, 3 run aborted (a rank\n"
    "crashed, hung or faulted).\n";

#define BENCH_MAX_BYTES (1ull << 36) /* 64G per rank: beyond any window */
#define BENCH_SEED 1u

enum { OPT_RANKS = 2000, OPT_ALGO, OPT_CSV, OPT_STAGING, OPT_TILE,
       OPT_TRACE_COST, OPT_FLOOR, OPT_SIGNALS, OPT_MINMAX, OPT_SHAPE };
enum { OPT_NOT_MINE = 2 }; /* an option handler's "not one of mine" */

typedef struct bench_opts {
  uint64_t   minbytes, maxbytes; /* bytes per rank, as given */
  uint32_t   factor;
  uint32_t   iters, warmup;
  uint32_t   check;
  cs_dtype_t dtype;
  cs_op_t    op;
  uint32_t   nranks;
  int        algo;       /* cs_algo_t, or -1 = all */
  int        csv, staging;
  int        trace_cost; /* alternate untraced and traced calls */
  int        floor;      /* --floor: measure the memory floor per size */
  int        dtype_all, op_all; /* -d all, -o all */
  uint32_t   tile_bytes;
  uint32_t   minmax;     /* cs_minmax_t */
  int        have_signals, have_minmax; /* given (the built-ins' options) */
  cs_cli_common_t com;
  const cs_collective_t *coll; /* --algo ./x.so, else NULL */
  void      *coll_handle;
  char       coll_path[4096];
} bench_opts_t;

/* What every rank of one (size, algorithm) launch does; lives in the
 * launcher and reaches the ranks through fork. */
typedef struct bench_job {
  cs_ar_cfg_t cfg;
  uint32_t    warmup, iters;
  int         staging, check;
  int         alt;    /* --trace-cost: call k traced iff call_traced(k) */
  uint64_t    ns_off; /* bytes: output buffer start -> per-call times (ns)
                         [iters], then (--trace-cost) the device events of
                         the rank's last traced timed call [1] and the
                         records it wrote in each timed call [iters] */
} bench_job_t;

/* Bytes of a rank's results after ns_off. */
static uint64_t bench_io_bytes(uint32_t iters)
{
  return 8ull * (2ull * iters + 1);
}

/* --trace-cost: untraced, traced, traced, untraced, then again, so that
 * neither kind always follows the other. */
static int call_traced(uint32_t k)
{
  return (k + 1) / 2 % 2;
}

/* One row of the table. */
typedef struct bench_row {
  uint64_t  bytes, count;
  cs_algo_t algo;
  double    us, algbw, busbw; /* time per call; GB/s */
  double    us_traced;        /* --trace-cost: traced calls' median */
  uint64_t  events;           /* --trace-cost: a traced call's events, most
                                 of any rank */
  uint64_t  records;          /* --trace-cost: records the ranks wrote */
  int64_t   wrong;            /* elements; -1 = not checked */
  double    floor_us;         /* --floor: the size's memory floor */
} bench_row_t;

/* ------------------------------------------------------------ parsing */

/* -b, -e, -f, -n, -w, -c, -d, -o: the sweep and the calls. Returns 0, -1
 * after one line, or OPT_NOT_MINE. */
static int opt_sweep(bench_opts_t *o, int opt, const char *arg)
{
  switch (opt) {
  case 'b': return cs_cli_bytes("bench", "-b", arg, BENCH_MAX_BYTES, &o->minbytes);
  case 'e': return cs_cli_bytes("bench", "-e", arg, BENCH_MAX_BYTES, &o->maxbytes);
  case 'f': return cs_cli_u32("bench", "-f", arg, 2, 1024, &o->factor);
  case 'n': return cs_cli_u32("bench", "-n", arg, 1, 1000000, &o->iters);
  case 'w': return cs_cli_u32("bench", "-w", arg, 0, 1000000, &o->warmup);
  case 'c': return cs_cli_u32("bench", "-c", arg, 0, 1, &o->check);
  case 'd':
    if (!strcmp(arg, "all"))
      return o->dtype_all = 1, 0;
    if (cs_dtype_parse(arg) < 0) {
      cs_cli_error("bench", "-d '%s' is not accepted: expected fp32, fp16, "
                   "bf16 or all", arg);
      return -1;
    }
    return cs_cli_dtype("bench", "-d", arg, &o->dtype);
  case 'o':
    if (!strcmp(arg, "all"))
      return o->op_all = 1, 0;
    if (cs_op_parse(arg) < 0) {
      cs_cli_error("bench", "-o '%s' is not accepted: expected sum, max, min, "
                   "prod or all", arg);
      return -1;
    }
    return cs_cli_op("bench", "-o", arg, &o->op);
  default: return OPT_NOT_MINE;
  }
}

/* --algo ./x.so: the collective of a shared object. Returns 0 or -1
 * after one line. */
static int load_algo(bench_opts_t *o, const char *arg)
{
  char why[768];
  cs_coll_close(o->coll_handle);
  o->coll_handle = NULL;
  if (cs_run_algo_path("bench", arg, o->coll_path) < 0)
    return -1;
  if (cs_run_open_guarded("bench", o->coll_path, &o->coll, &o->coll_handle,
                          why, sizeof(why)) < 0) {
    cs_run_algo_error("bench", arg, o->coll_path, why);
    return -1;
  }
  return 0;
}

/* --ranks, --algo, --csv, --staging, --trace-cost, --tile-bytes, --help
 * and getopt's complaints. Returns 0, 1 after --help, -1 after one line. */
static int opt_other(bench_opts_t *o, int opt, const char *arg,
                     const char *argv_prev)
{
  switch (opt) {
  case OPT_RANKS:
    return cs_cli_u32("bench", "--ranks", arg, 1, CS_AR_MAX_RANKS, &o->nranks);
  case OPT_ALGO:
    if (cs_coll_is_path(arg))
      return load_algo(o, arg);
    if (!strcmp(arg, "all"))
      o->algo = -1;
    else if ((o->algo = cs_algo_parse(arg)) < 0) {
      char names[96];
      cs_algo_names(names, sizeof(names), " or all");
      cs_cli_error("bench", "--algo '%s' is not accepted: expected %s", arg,
                   names);
      return -1;
    }
    return 0;
  case OPT_CSV: o->csv = 1; return 0;
  case OPT_STAGING: o->staging = 1; return 0;
  case OPT_TRACE_COST: o->trace_cost = 1; return 0;
  case OPT_FLOOR: o->floor = 1; return 0;
  case OPT_SIGNALS: {
    uint32_t single = 0;
    o->have_signals = 1;
    if (cs_cli_signals("bench", "--signals", arg, &single) < 0)
      return -1;
    if (single) {
      cs_cli_error("bench", "--signals single-use is not accepted: bench "
                   "repeats calls on one world and single-use signals allow "
                   "one call per world; use 'collsim run --signals single-use'");
      return -1;
    }
    return 0;
  }
  case OPT_MINMAX:
    o->have_minmax = 1;
    return cs_cli_minmax("bench", "--minmax", arg, &o->minmax);
  case OPT_TILE:
    if (cs_cli_u32("bench", "--tile-bytes", arg, 1024, 1u << 24,
                   &o->tile_bytes) < 0)
      return -1;
    if (o->tile_bytes % 32) {
      cs_cli_error("bench", "--tile-bytes '%s' is not accepted: expected a "
                   "multiple of 32 from 1024 to %u", arg, 1u << 24);
      return -1;
    }
    return 0;
  case 'h':
    cs_cli_help(bench_help, 20);
    return 1;
  case OPT_SHAPE:
    cs_cli_error("bench", "--shape and --valid are not accepted: bench "
                 "sweeps 1-D sizes; the partial-valid rectangle path "
                 "(docs/algorithms.md §3.3) runs with collsim run or explore");
    return -1;
  case ':':
    cs_cli_error("bench", "option '%s' needs a value (see 'collsim bench "
                 "--help')", argv_prev);
    return -1;
  default:
    cs_cli_error("bench", "unknown option '%s' (see 'collsim bench --help')",
                 argv_prev);
    return -1;
  }
}

/* The options together. Returns 0 or -1 after one line. */
static int parse_check(const bench_opts_t *o)
{
  if (o->trace_cost && o->iters < 2) {
    cs_cli_error("bench", "-n %u is not accepted with --trace-cost: expected at "
                 "least 2 timed calls (half of them traced)", o->iters);
    return -1;
  }
  if (o->com.trace) {
    cs_cli_error("bench", "--trace '%s' is not accepted: a sweep is many runs; "
                 "record one with 'collsim run --trace FILE', or time "
                 "tracing with 'collsim bench --trace-cost'", o->com.trace);
    return -1;
  }
  if (o->maxbytes < o->minbytes) {
    cs_cli_error("bench", "-e (%llu bytes) is not accepted: expected at least -b "
                 "(%llu bytes)", (unsigned long long)o->maxbytes,
                 (unsigned long long)o->minbytes);
    return -1;
  }
  const cs_algo_desc_t *a = o->algo >= 0 ? cs_algo_desc((uint32_t)o->algo) : NULL;
  if (a && o->nranks > a->max_ranks) { /* worded as run words it */
    cs_ar_cfg_t c = {.algo = (cs_algo_t)o->algo, .nranks = o->nranks};
    char why[256];
    cs_cli_ar_why(&c, CS_EARRANKS, why, sizeof(why));
    cs_cli_error("bench", "%s", why);
    return -1;
  }
  return cs_cli_common_check("bench", &o->com, o->nranks) < 0 ? -1 : 0;
}

/* Returns 0 to run, 1 after --help, -1 on bad usage (printed). */
static int parse(int argc, char **argv, bench_opts_t *o)
{
  static const struct option longopts[] = {
      {"minbytes", required_argument, 0, 'b'},
      {"maxbytes", required_argument, 0, 'e'},
      {"stepfactor", required_argument, 0, 'f'},
      {"iters", required_argument, 0, 'n'},
      {"warmup_iters", required_argument, 0, 'w'},
      {"check", required_argument, 0, 'c'},
      {"datatype", required_argument, 0, 'd'},
      {"op", required_argument, 0, 'o'},
      {"ranks", required_argument, 0, OPT_RANKS},
      {"algo", required_argument, 0, OPT_ALGO},
      {"csv", no_argument, 0, OPT_CSV},
      {"staging", no_argument, 0, OPT_STAGING},
      {"tile-bytes", required_argument, 0, OPT_TILE},
      {"trace-cost", no_argument, 0, OPT_TRACE_COST},
      {"floor", no_argument, 0, OPT_FLOOR},
      {"signals", required_argument, 0, OPT_SIGNALS},
      {"minmax", required_argument, 0, OPT_MINMAX},
      {"shape", required_argument, 0, OPT_SHAPE},
      {"valid", required_argument, 0, OPT_SHAPE},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  int opt, bad = 0, rc;
  optind = 1;
  opterr = 0; /* our own one-line messages */
  while ((opt = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:h", longopts,
                            NULL)) != -1) {
    if (cs_cli_common_opt("bench", opt, optarg, &o->com, &bad)) {
      if (bad)
        return -1;
      continue;
    }
    if ((rc = opt_sweep(o, opt, optarg)) == OPT_NOT_MINE)
      rc = opt_other(o, opt, optarg, argv[optind - 1]);
    if (rc != 0)
      return rc;
  }
  if (optind < argc) {
    cs_cli_error("bench", "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  return parse_check(o);
}

/* ------------------------------------------------------------ rank body */

static int bench_rank(cs_dev_t *d, void *arg)
{
  const bench_job_t *j = arg;
  const cs_ar_cfg_t *c = &j->cfg;
  cs_ar_tiles_t t;
  if (cs_ar_tiles_init(&t, c) < 0)
    return CS_RX_ERROR;
  const uint8_t *in = cs_world_input(d->world, d->rank);
  uint8_t *out = cs_world_output(d->world, d->rank);
  uint64_t *ns = (uint64_t *)(out + j->ns_off), *recorded = ns + j->iters + 1;
  const cs_dev_hooks_t *hooks = d->hooks;

  if (!j->staging)
    cs_ar_stage_in(d, c, &t, in);
  for (uint32_t k = 0; k < j->warmup + j->iters; k++) {
    if (j->alt) /* every rank switches at the same call */
      d->hooks = call_traced(k < j->warmup ? k : k - j->warmup) ? hooks : NULL;
    uint64_t r0 = cs_trace_rank_records(d), e0 = d->nevents, t0 = cs_now_ns();
    if (j->staging)
      cs_ar_stage_in(d, c, &t, in);
    cs_allreduce(d, c, &t);
    if (j->staging)
      cs_ar_stage_out(d, c, &t, out);
    uint64_t dt = cs_now_ns() - t0;
    if (k >= j->warmup) {
      ns[k - j->warmup] = dt;
      recorded[k - j->warmup] = cs_trace_rank_records(d) - r0;
      if (d->hooks)
        ns[j->iters] = d->nevents - e0;
    }
  }
  d->hooks = hooks;
  /* The checked call works on the original inputs: the timed calls have
   * reduced the already-reduced data over and over. */
  if (j->check && !j->staging) {
    cs_ar_stage_in(d, c, &t, in);
    cs_allreduce(d, c, &t);
    cs_ar_stage_out(d, c, &t, out);
  }
  cs_ar_tiles_fini(&t);
  return 0;
}

/* ------------------------------------------------------------ helpers */

/* "model name" (x86) or "Model"/"Hardware" of /proc/cpuinfo; "unknown". */
static void cpu_model(char *out, size_t n)
{
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "model name", 10) && strncmp(line, "Model", 5) &&
        strncmp(line, "Hardware", 8))
      continue;
    char *colon = strchr(line, ':');
    if (!colon)
      continue;
    colon++;
    while (*colon == ' ' || *colon == '\t')
      colon++;
    colon[strcspn(colon, "\n")] = 0;
    if (*colon) {
      snprintf(out, n, "%s", colon);
      break;
    }
  }
  fclose(f);
}

/* Element counts of the sweep: sizes minbytes * factor^k <= maxbytes, each
 * rounded down to whole elements (at least one), duplicates dropped.
 * Returns how many (at most cap). */
static uint32_t sweep_counts(const bench_opts_t *o, uint64_t *counts,
                             uint32_t cap)
{
  uint32_t es = cs_dtype_size(o->dtype), n = 0;
  for (uint64_t b = o->minbytes; b <= o->maxbytes && n < cap;) {
    uint64_t c = b / es ? b / es : 1;
    if (n == 0 || counts[n - 1] != c)
      counts[n++] = c;
    if (b > o->maxbytes / o->factor)
      break;
    b *= o->factor;
  }
  return n;
}

static int progress_on;

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
  if (!progress_on)
    return;
  va_list ap;
  fputs("\r\033[K", stderr);
  if (fmt) {
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fflush(stderr);
}

/* ------------------------------------------------------------ one row */

/* Fills the input rows (count elements each, `inputs` holds nranks rows)
 * once per size: the fill does not depend on the algorithm. */
static void fill_inputs(const bench_opts_t *o, uint64_t count, uint8_t *inputs)
{
  cs_ar_cfg_t c = {.dtype = o->dtype, .op = o->op, .nranks = o->nranks,
                   .count = count};
  uint64_t bytes = count * cs_dtype_size(o->dtype);
  for (uint32_t r = 0; r < o->nranks; r++)
    cs_ar_fill(CS_FILL_RANDOM, &c, BENCH_SEED, r, inputs + r * bytes);
}

/* Trace ring bytes per rank: only with --trace-cost. */
static uint64_t bench_trace_bytes(const bench_opts_t *o)
{
  return o->trace_cost ? cs_pipe_trace_bytes(o->nranks, 0) : 0;
}

/* The mkstemp template of a --trace-cost temporary trace, under $TMPDIR
 * or /tmp (the directory in *dir). */
static void bench_tmp_template(char *path, size_t cap, const char **dir)
{
  *dir = cs_cli_tmpdir();
  /* the pid in the name: what a killed bench leaves, clean sweeps */
  snprintf(path, cap, "%s/collsim-bench-trace-%d-XXXXXX", *dir, (int)getpid());
}

static void tmp_error(const char *dir, int err)
{
  cs_cli_error("bench", "--trace-cost: cannot create a temporary trace in "
               "'%s': %s; expected $TMPDIR (or /tmp when it is unset) to "
               "name a writable directory", dir, cs_strerror(err));
}

/* One (size, algorithm) on the pipeline: the job and what its verify step
 * found. */
typedef struct row_job {
  const bench_opts_t *o;
  bench_job_t    j;
  const uint8_t *inputs; /* nranks rows of the size */
  uint8_t       *want;   /* scratch for one rank's expected result */
  bench_row_t   *row;
  uint64_t      *signals_left;
} row_job_t;

/* Time of call k: the slowest rank's; then the median over k (with
 * --trace-cost over the untraced and the traced calls apart: traced are
 * those in which the ranks wrote records). Returns 0 or -ENOMEM. */
static int read_times(row_job_t *b, const cs_world_t *w)
{
  const bench_opts_t *o = b->o;
  bench_row_t *row = b->row;
  uint32_t n = o->nranks;
  uint64_t *per = calloc(o->iters, sizeof(uint64_t));
  uint64_t *traced = calloc(o->iters, sizeof(uint64_t));
  if (!per || !traced) {
    free(per);
    free(traced);
    return -ENOMEM;
  }
  uint32_t nu = 0, nt = 0;
  for (uint32_t k = 0; k < o->iters; k++) {
    uint64_t slowest = 0, recorded = 0;
    for (uint32_t r = 0; r < n; r++) {
      const uint64_t *ns = (const uint64_t *)(cs_world_output(w, r) + b->j.ns_off);
      if (ns[k] > slowest)
        slowest = ns[k];
      recorded += ns[o->iters + 1 + k];
    }
    if (recorded)
      traced[nt++] = slowest;
    else
      per[nu++] = slowest;
  }
  uint64_t med = cs_verify_median_ns(per, nu);
  uint64_t med_t = cs_verify_median_ns(traced, nt);
  free(per);
  free(traced);
  if (med == 0)
    med = 1;
  row->us_traced = (double)med_t / 1e3;
  row->events = 0;
  for (uint32_t r = 0; b->j.alt && r < n; r++) {
    const uint64_t *ns = (const uint64_t *)(cs_world_output(w, r) + b->j.ns_off);
    if (ns[o->iters] > row->events)
      row->events = ns[o->iters];
  }
  row->us = (double)med / 1e3;
  row->algbw = (double)row->bytes / (double)med; /* bytes/ns = GB/s */
  row->busbw = row->algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
  return 0;
}

/* The verify step: times, and with -c 1 the last call against the oracle
 * and the signal cells against 0 (the self-clearing epilogue returns every
 * cell to 0 after each call). */
static int bench_verify(cs_pipe_t *p, void *ctx)
{
  row_job_t *b = ctx;
  int rc = read_times(b, &p->world);
  if (rc < 0)
    return rc;
  b->row->wrong = -1;
  if (b->o->check) {
    cs_verdict_t v;
    cs_verify_allreduce(&b->j.cfg, &p->world, b->inputs, 0, b->want, &v);
    b->row->wrong = (int64_t)v.wrong;
    *b->signals_left += v.signals_left;
  }
  return 0;
}

static const cs_job_ops_t bench_ops = {NULL, bench_verify, NULL};

/* The world of one row could not be made. Returns the exit code. */
static int world_failed(const bench_opts_t *o, uint64_t bytes,
                        const cs_layout_t *l, int rc)
{
  char hb[32];
  cs_human_bytes(bytes, hb, sizeof(hb));
  cs_cli_error("bench", "size %s is not accepted: %u windows of %llu bytes "
               "plus staging buffers do not fit (%s); lower -e or --ranks",
               hb, o->nranks, (unsigned long long)l->win_bytes, cs_strerror(rc));
  return rc == CS_ETOOBIG ? CS_EXIT_USAGE : CS_EXIT_ABORTED;
}

/* Words the step the pipeline of one row stopped at. Returns the exit
 * code. */
static int bench_failed(const row_job_t *b, const cs_pipe_t *p,
                        const char *tmpdir)
{
  int code;
  switch (p->failed) {
  case CS_PIPE_WORLD:
    return world_failed(b->o, b->row->bytes, p->job->layout, p->err);
  case CS_PIPE_TRACE_TEMP:
    tmp_error(tmpdir, p->err);
    return CS_EXIT_USAGE;
  case CS_PIPE_TRACER:
    cs_cli_error("bench", "--trace-cost: cannot write a temporary trace in "
                 "'%s': %s", p->trace, cs_strerror(p->err));
    return CS_EXIT_USAGE;
  case CS_PIPE_LAUNCH:
  case CS_PIPE_TRACE_CLOSE:
    code = cs_cli_launch_exit("bench", p->launch_rc);
    if (p->close_rc < 0 && code == CS_EXIT_OK) {
      cs_cli_error("bench", "--trace-cost: writing the temporary trace "
                   "failed: %s", cs_strerror(p->close_rc));
      code = CS_EXIT_ABORTED;
    }
    return code;
  case CS_PIPE_VERIFY:
    cs_cli_error("bench", "out of memory");
    return CS_EXIT_ABORTED;
  default:
    return CS_EXIT_OK;
  }
}

/* Runs one (size, algorithm): world, launch, times, check. Returns an exit
 * code (CS_EXIT_OK with the row filled, or USAGE/ABORTED after a message);
 * *signals_left counts signal cells not back to 0 after the last call. */
static int bench_one(const bench_opts_t *o, cs_algo_t algo, uint64_t count,
                     const uint8_t *inputs, uint8_t *want, bench_row_t *row,
                     uint64_t *signals_left)
{
  uint32_t n = o->nranks;
  uint64_t bytes = count * cs_dtype_size(o->dtype);
  row_job_t b = {
      .o = o, .inputs = inputs, .want = want, .row = row,
      .signals_left = signals_left,
      .j = {.cfg = {.algo = algo, .dtype = o->dtype, .op = o->op, .nranks = n,
                    .count = count, .tile_bytes = o->tile_bytes, .iters = 1,
                    .minmax = o->minmax},
            .warmup = o->warmup, .iters = o->iters, .staging = o->staging,
            .check = (int)o->check, .alt = o->trace_cost,
            .ns_off = cs_ceil_to(bytes, 64)}};
  const cs_ar_cfg_t *c = &b.j.cfg;
  char why[256] = "";
  int rc = cs_ar_check(c);
  if (rc < 0) {
    cs_cli_ar_why(c, rc, why, sizeof(why));
    cs_cli_error("bench", "%s", why);
    return CS_EXIT_USAGE;
  }
  cs_layout_t l;
  rc = cs_ar_layout(c, &l);
  if (rc < 0)
    return world_failed(o, bytes, &l, rc);
  row->bytes = bytes;
  row->count = count;
  row->algo = algo;
  char tmpl[4096];
  const char *tmpdir = NULL;
  if (o->trace_cost)
    bench_tmp_template(tmpl, sizeof(tmpl), &tmpdir);
  cs_job_t job = {
      .layout = &l, .nranks = n,
      .wo = {.io_bytes = b.j.ns_off + bench_io_bytes(o->iters),
             .timeout_ns = o->com.timeout_ns, .trace_bytes = bench_trace_bytes(o)},
      .inputs = inputs, .input_bytes = bytes, .body = bench_rank, .arg = &b.j,
      .fault = o->com.fault, .trace = o->trace_cost ? tmpl : NULL,
      .trace_temp = o->trace_cost,
      .th = {.count = count, .algo = algo, .dtype = o->dtype, .op = o->op,
             .fill = CS_FILL_RANDOM, .seed = BENCH_SEED, .tile_bytes = o->tile_bytes,
             .iters = o->warmup + o->iters + (o->check && !o->staging),
             .fault_kind = o->com.has_fault ? o->com.fault.kind : 0,
             .fault_rank = o->com.fault.rank, .fault_event = o->com.fault.event,
             .modes = cs_cli_modes(&b.j.cfg)},
      .ops = &bench_ops, .ctx = &b};
  cs_pipe_t p;
  cs_pipe_run(&p, &job);
  row->records = p.records;
  return bench_failed(&b, &p, tmpdir);
}

/* ------------------------------------------------------------ output */

static void print_header(const bench_opts_t *o, const int *algos,
                         const int *skipped, uint64_t first, uint64_t last)
{
  uint32_t n = o->nranks;
  char cpu[256], b0[32], b1[32];
  cpu_model(cpu, sizeof(cpu));
  cs_human_bytes(first, b0, sizeof(b0));
  cs_human_bytes(last, b1, sizeof(b1));
  printf("# collsim bench: allreduce, %u rank%s (forked processes), algo", n,
         n == 1 ? "" : "s");
  for (int a = 0; a < CS_NALGOS; a++)
    if (algos[a])
      printf(" %s", cs_algo_name((cs_algo_t)a));
  printf(", %s, %s\n", o->dtype_all ? "fp32 fp16 bf16" : cs_dtype_name(o->dtype),
         o->op_all ? "sum max min prod" : cs_op_name(o->op));
  for (int a = 0; a < CS_NALGOS; a++)
    if (skipped[a])
      printf("# %s: skipped, %s supports at most %u ranks\n", cs_algo_name(a),
             cs_algo_desc(a)->limit_who, cs_algo_desc(a)->max_ranks);
  for (int a = 0; a < CS_NALGOS; a++)
    if (algos[a] && cs_algo_desc(a)->meets)
      printf("# %s: only the sizes that meet its precondition (%s)\n",
             cs_algo_name(a), cs_algo_desc(a)->precondition);
  printf("# sizes %s to %s per rank (x%u), %u warmup + %u timed calls per "
         "size and algo, check %s\n", b0, b1, o->factor, o->warmup, o->iters,
         o->check ? "1 (last call vs the oracle, random fill seed 1)" : "0");
  uint32_t nt = 0;
  for (uint32_t k = 0; o->trace_cost && k < o->iters; k++)
    nt += (uint32_t)call_traced(k);
  printf("# time: median over the %u %stimed calls of the slowest rank's time "
         "per call, %s\n", o->iters - nt, o->trace_cost ? "untraced " : "",
         o->staging ? "including stage-in and stage-out (--staging)"
                    : "data already in the windows (stage-in/out not timed)");
  printf("# algbw = size / time, busbw = algbw * 2(N-1)/N = algbw * %.4g "
         "(GB = 1e9 B)\n", n > 1 ? 2.0 * (n - 1) / n : 0.0);
  printf("# machine: %ld online CPU%s, %s; wait spin %u pauses\n",
         sysconf(_SC_NPROCESSORS_ONLN),
         sysconf(_SC_NPROCESSORS_ONLN) == 1 ? "" : "s", cpu,
         cs_launch_spin_default(n));
  if (o->floor)
    printf("# --floor: floor(us) = (3N-1) x size bytes at the read-add-write "
           "rate measured\n# before each size (fp32 sum kernel, half into half of "
           "one buffer of the size per rank,\n# min(N, CPUs) pinned "
           "threads); floor/time = floor(us) / time(us)\n");
  if (o->trace_cost)
    printf("# --trace-cost: the calls alternate untraced and traced (U T T U "
           "...); time(us) is the\n# untraced median (%u calls), traced(us) "
           "the traced median (%u), ratio traced / untraced,\n# ns/event "
           "(traced - untraced) / device events per call and rank\n",
           o->iters - nt, nt);
  printf("#\n");
  printf("# %10s  %12s  %5s  %5s  %9s  %11s  %11s  %11s  %6s", "size",
         "count", "type", "redop", "algo", "time(us)", "algbw(GB/s)",
         "busbw(GB/s)", "#wrong");
  if (o->trace_cost)
    printf("  %10s  %6s  %8s", "traced(us)", "ratio", "ns/event");
  if (o->floor)
    printf("  %10s  %10s", "floor(us)", "floor/time");
  printf("\n");
}

static void print_row(const bench_opts_t *o, const bench_row_t *r)
{
  const char *t = cs_dtype_name(o->dtype), *op = cs_op_name(o->op),
             *a = cs_algo_name(r->algo);
  if (o->csv) {
    printf("%llu,%llu,%s,%s,%s,%u,%.3f,%.6f,%.6f,", (unsigned long long)r->bytes,
           (unsigned long long)r->count, t, op, a, o->nranks, r->us, r->algbw,
           r->busbw);
    if (r->wrong >= 0)
      printf("%lld", (long long)r->wrong);
    if (o->trace_cost)
      printf(",%.3f,%.4f,%llu,%llu", r->us_traced, r->us_traced / r->us,
             (unsigned long long)r->events, (unsigned long long)r->records);
    if (o->floor)
      printf(",%.3f,%.4f", r->floor_us, r->floor_us / r->us);
    printf("\n");
  } else {
    char wrong[24];
    if (r->wrong >= 0)
      snprintf(wrong, sizeof(wrong), "%lld", (long long)r->wrong);
    else
      snprintf(wrong, sizeof(wrong), "N/A");
    printf("  %10llu  %12llu  %5s  %5s  %9s  %11.2f  %11.3f  %11.3f  %6s",
           (unsigned long long)r->bytes, (unsigned long long)r->count, t, op, a,
           r->us, r->algbw, r->busbw, wrong);
    if (o->trace_cost)
      printf("  %10.2f  %5.3fx  %8.1f", r->us_traced, r->us_traced / r->us,
             r->events ? (r->us_traced - r->us) * 1e3 / (double)r->events : 0.0);
    if (o->floor)
      printf("  %10.2f  %10.3f", r->floor_us, r->floor_us / r->us);
    printf("\n");
  }
  fflush(stdout);
}

/* ------------------------------------------------------------ command */

/* Which algorithms run; --algo all skips those limited below --ranks. */
static void pick_algos(const bench_opts_t *o, int *algos, int *skipped)
{
  for (int a = 0; a < CS_NALGOS; a++) {
    algos[a] = o->algo < 0 || o->algo == a;
    skipped[a] = o->algo < 0 && o->nranks > cs_algo_desc(a)->max_ranks;
    if (skipped[a])
      algos[a] = 0;
  }
}

/* Whether algorithm a takes `count` elements with o's ranks (its own
 * precondition, beyond the ranks: twophase's count a multiple of N). */
static int meets(const bench_opts_t *o, int a, uint64_t count)
{
  const cs_algo_desc_t *d = cs_algo_desc((uint32_t)a);
  cs_ar_cfg_t c = {.algo = (cs_algo_t)a, .dtype = o->dtype, .op = o->op,
                   .nranks = o->nranks, .count = count};
  return !d->meets || d->meets(&c);
}

/* The largest world must fit before anything runs, and so must a
 * temporary trace. Returns the exit code (CS_EXIT_OK to go on). */
static int check_fits(const bench_opts_t *o, const int *algos, uint64_t count)
{
  uint32_t n = o->nranks;
  uint64_t maxbytes = count * cs_dtype_size(o->dtype);
  int rc;
  for (int a = 0; a < CS_NALGOS; a++) {
    if (!algos[a])
      continue;
    cs_ar_cfg_t c = {.algo = (cs_algo_t)a, .dtype = o->dtype, .op = o->op,
                     .nranks = n, .count = count, .tile_bytes = o->tile_bytes,
                     .iters = 1};
    cs_layout_t l;
    cs_world_t w;
    cs_world_opts_t wo = {.io_bytes = cs_ceil_to(maxbytes, 64) + bench_io_bytes(o->iters),
                          .trace_bytes = bench_trace_bytes(o)};
    if ((rc = cs_ar_layout(&c, &l)) < 0 || (rc = cs_world_create(&w, &l, n, &wo)) < 0) {
      char hb[32], he[32];
      cs_human_bytes(maxbytes, hb, sizeof(hb));
      cs_human_bytes(o->maxbytes, he, sizeof(he));
      /* -e as given; the sweep's largest size may be below it. */
      cs_cli_error("bench", "-e %s is not accepted with %u ranks: the world "
                   "of the sweep's largest size (%u windows of %s plus 2 "
                   "staging buffers each) does not fit in memory or free "
                   "/dev/shm space (%s)", he, n, n, hb, cs_strerror(rc));
      return rc == CS_ETOOBIG ? CS_EXIT_USAGE : CS_EXIT_ABORTED;
    }
    cs_world_destroy(&w);
  }
  if (o->trace_cost) {
    char tpath[4096];
    const char *dir;
    bench_tmp_template(tpath, sizeof(tpath), &dir);
    int fd = mkstemp(tpath);
    if (fd < 0) {
      tmp_error(dir, -errno);
      return CS_EXIT_USAGE;
    }
    close(fd);
    unlink(tpath);
  }
  return CS_EXIT_OK;
}

/* An algorithm named by --algo must take every size of the sweep (with
 * --algo all, the sizes it does not take are skipped). Returns the exit
 * code (CS_EXIT_OK to go on). */
static int check_named(const bench_opts_t *o, const uint64_t *counts,
                       uint32_t nsizes)
{
  for (uint32_t s = 0; o->algo >= 0 && s < nsizes; s++) {
    if (meets(o, o->algo, counts[s]))
      continue;
    cs_ar_cfg_t c = {.algo = (cs_algo_t)o->algo, .dtype = o->dtype,
                     .op = o->op, .nranks = o->nranks, .count = counts[s]};
    const cs_algo_desc_t *d = cs_algo_desc((uint32_t)o->algo);
    int rc = d->dtypes && !(d->dtypes & 1u << c.dtype) ? CS_EARDTYPE
             : d->ops && !(d->ops & 1u << c.op)         ? CS_EAROP
                                                        : CS_EARPRECOND;
    char why[256];
    cs_cli_ar_why(&c, rc, why, sizeof(why));
    cs_cli_error("bench", "%s", why);
    return CS_EXIT_USAGE;
  }
  return CS_EXIT_OK;
}

/* The CSV header row or the table's header. */
static void print_start(const bench_opts_t *o, const int *algos,
                        const int *skipped, uint64_t first, uint64_t last)
{
  if (o->csv) {
    for (int a = 0; a < CS_NALGOS; a++)
      if (skipped[a])
        fprintf(stderr, "collsim bench: note: %s skipped, %s supports at most "
                "%u ranks\n", cs_algo_name(a), cs_algo_desc(a)->limit_who,
                cs_algo_desc(a)->max_ranks);
    for (int a = 0; a < CS_NALGOS; a++)
      if (algos[a] && cs_algo_desc(a)->meets)
        fprintf(stderr, "collsim bench: note: %s runs only the sizes that "
                "meet its precondition (%s)\n", cs_algo_name(a),
                cs_algo_desc(a)->precondition);
    printf("size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,"
           "wrong%s%s\n",
           o->trace_cost ? ",traced_us,trace_ratio,events_per_call,records" : "",
           o->floor ? ",floor_us,floor_ratio" : "");
  } else {
    print_header(o, algos, skipped, first, last);
  }
  fflush(stdout);
}

/* What the sweep added up. */
typedef struct bench_sum {
  double   busbw[CS_NALGOS]; /* GB/s, over the rows of the algorithm */
  uint32_t rows[CS_NALGOS];
  uint64_t wrong;            /* elements, every row */
  uint64_t signals_left;     /* cells, every row */
} bench_sum_t;

/* Every size, every algorithm: one row each. Returns the exit code of the
 * first row that failed, or CS_EXIT_OK. */
static int sweep(const bench_opts_t *o, const int *algos, const uint64_t *counts,
                 uint32_t nsizes, uint8_t *inputs, uint8_t *want, bench_sum_t *sum)
{
  uint32_t es = cs_dtype_size(o->dtype), nalgos = 0, done = 0;
  for (uint32_t s = 0; s < nsizes; s++)
    for (int a = 0; a < CS_NALGOS; a++)
      nalgos += algos[a] && meets(o, a, counts[s]);
  progress_on = isatty(2);
  for (uint32_t s = 0; s < nsizes; s++) {
    fill_inputs(o, counts[s], inputs);
    double floor_us = 0;
    if (o->floor) {
      int64_t fns = cs_floor_ns(o->nranks, counts[s] * es);
      if (fns < 0) {
        cs_cli_error("bench", "--floor: cannot measure the memory floor (%s)",
                     cs_strerror((int)fns));
        return CS_EXIT_ABORTED;
      }
      floor_us = (double)fns / 1e3;
    }
    for (int a = 0; a < CS_NALGOS; a++) {
      if (!algos[a] || !meets(o, a, counts[s]))
        continue;
      char hb[32];
      cs_human_bytes(counts[s] * es, hb, sizeof(hb));
      progress("collsim bench: [%u/%u] %s %s", ++done, nalgos, hb,
               cs_algo_name((cs_algo_t)a));
      bench_row_t row = {.floor_us = floor_us};
      int code = bench_one(o, (cs_algo_t)a, counts[s], inputs, want, &row,
                           &sum->signals_left);
      progress(NULL);
      if (code != CS_EXIT_OK)
        return code;
      print_row(o, &row);
      sum->busbw[a] += row.busbw;
      sum->rows[a]++;
      if (row.wrong > 0)
        sum->wrong += (uint64_t)row.wrong;
    }
  }
  return CS_EXIT_OK;
}

/* The table's footer and the WRONG lines. Returns the exit code. */
static int print_end(const bench_opts_t *o, const int *algos,
                     const bench_sum_t *sum)
{
  uint64_t wrong = sum->wrong, left = sum->signals_left;
  if (!o->csv) {
    if (o->check)
      printf("# Wrong elements: %llu%s\n", (unsigned long long)wrong,
             wrong ? " WRONG" : " OK");
    else
      printf("# Wrong elements: not checked (-c 0)\n");
    for (int a = 0; a < CS_NALGOS; a++) {
      if (!algos[a])
        continue;
      if (sum->rows[a])
        printf("# Avg bus bandwidth (%s): %.3f GB/s\n",
               cs_algo_name((cs_algo_t)a), sum->busbw[a] / sum->rows[a]);
      else
        printf("# Avg bus bandwidth (%s): no size met its precondition\n",
               cs_algo_name((cs_algo_t)a));
    }
  }
  if (left)
    fprintf(stderr, "collsim bench: WRONG: %llu signal cell%s not back to 0 "
            "after the last call\n", (unsigned long long)left, left == 1 ? "" : "s");
  if (wrong && o->csv)
    fprintf(stderr, "collsim bench: WRONG: %llu element%s differ from the "
            "oracle\n", (unsigned long long)wrong, wrong == 1 ? "" : "s");
  return (wrong || left) ? CS_EXIT_WRONG : CS_EXIT_OK;
}

/* ------------------------------------------------------------ a plug-in */

/* One row of a plug-in's sweep: a world of cfg with `count`. Returns the
 * exit code; adds the row's wrong elements, cells and calls to *wrong. */
static int bench_row_coll(const bench_opts_t *o, const cs_coll_cfg_t *cfg,
                          uint64_t count, uint64_t *wrong)
{
  cs_coll_cfg_t g = *cfg;
  g.count = count;
  cs_coll_job_t cj;
  if (cs_coll_job_init(&cj, o->coll, &g, CS_FILL_DEFAULT, 1,
                       o->com.timeout_ns, 0, 0, 0) < 0) {
    cs_cli_error("bench", "%s: its slots are not a window collsim can make",
                 o->coll->name);
    return CS_EXIT_USAGE;
  }
  cj.job.fault = o->com.fault;
  cj.untimed = o->warmup; /* verified, not timed */
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
    printf(o->csv ? "%llu,%llu,%s,%s,%s,%u,%.2f,%.3f,%s,%s\n"
                  : "%12llu %12llu %6s %6s %-16s %5u %10.2f %11.3f %11s %6s\n",
           (unsigned long long)nbytes, (unsigned long long)count,
           cs_dtype_name(g.dtype), cs_op_name(g.op), o->coll->name, g.nranks,
           us, (double)nbytes / (us * 1e3), o->csv ? "" : "-",
           cj.verified ? w : o->csv ? "" : "n/a");
    *wrong += cj.wrong + cj.signals_bad + cj.differ;
  }
  cs_coll_job_fini(&cj);
  return code;
}

/* --algo ./x.so: the options it does not honour refused, every size
 * checked against its registration, then one free-mode world per size,
 * every call (warm-up and timed) verified, the timed ones timed. Returns
 * the exit code. */
static int bench_coll(const bench_opts_t *o)
{
  const char *builtin_only =
      o->trace_cost ? "--trace-cost" : o->staging ? "--staging"
      : o->floor ? "--floor" : o->have_signals ? "--signals"
      : o->have_minmax && !(cs_coll_flags(o->coll) & CS_COLL_MINMAX)
      ? "--minmax" : !o->check ? "-c 0" : o->dtype_all ? "-d all"
      : o->op_all ? "-o all" : NULL;
  if (builtin_only) {
    cs_cli_error("bench", "%s is for the built-in algorithms, not --algo %s",
                 builtin_only, o->coll_path);
    return CS_EXIT_USAGE;
  }
  uint64_t counts[128];
  uint32_t nsizes = sweep_counts(o, counts, 128), n = o->nranks;
  cs_coll_cfg_t cfg = {.nranks = n, .dtype = o->dtype, .op = o->op,
                       .tile_bytes = o->tile_bytes,
                       .iters = o->iters + o->warmup,
                       .minmax = (cs_minmax_t)o->minmax};
  char why[768];
  for (uint32_t s = 0; s < nsizes; s++) {
    cs_coll_cfg_t g = cfg;
    g.count = counts[s];
    if (cs_coll_check_full(o->coll, &g, why, sizeof(why)) < 0) {
      cs_cli_error("bench", "%s", why);
      return CS_EXIT_USAGE;
    }
  }
  if (o->csv)
    printf("size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,wrong\n");
  else
    printf("# collsim bench: %s (%s), %u rank%s, %u warm-up + %u timed calls "
           "per size, all verified; time = median of the timed calls, "
           "slowest rank\n"
           "%12s %12s %6s %6s %-16s %5s %10s %11s %11s %6s\n", o->coll->name,
           o->coll_path, n, n == 1 ? "" : "s", o->warmup, o->iters,
           "size(B)", "count", "type", "redop", "algo", "ranks", "time(us)",
           "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  uint64_t wrong = 0;
  for (uint32_t s = 0; s < nsizes; s++) {
    int code = bench_row_coll(o, &cfg, counts[s], &wrong);
    if (code != CS_EXIT_OK)
      return code;
  }
  if (!o->coll->expect)
    printf("# Wrong elements: not checked (%s has no expected-result function)\n",
           o->coll->name);
  else if (!o->csv)
    printf("# Wrong elements: %llu%s\n", (unsigned long long)wrong,
           wrong ? " WRONG" : " OK");
  return wrong ? CS_EXIT_WRONG : CS_EXIT_OK;
}

/* One sweep per dtype and op asked for (-d all, -o all: every one, dtype
 * by dtype, op by op), under one header and one footer. Sizes are bytes,
 * so counts follow each dtype. Returns the exit code. */
static int sweep_all(const bench_opts_t *o, const int *algos, const int *skipped,
                     uint8_t *inputs, uint8_t *want, bench_sum_t *sum)
{
  int code = CS_EXIT_OK, first = 1;
  for (int t = 0; t < CS_NDTYPES && code == CS_EXIT_OK; t++) {
    if (!o->dtype_all && t != (int)o->dtype)
      continue;
    for (int op = 0; op < CS_NOPS && code == CS_EXIT_OK; op++) {
      if (!o->op_all && op != (int)o->op)
        continue;
      bench_opts_t one = *o;
      one.dtype = (cs_dtype_t)t;
      one.op = (cs_op_t)op;
      uint64_t counts[128];
      uint32_t nsizes = sweep_counts(&one, counts, 128), es = cs_dtype_size(one.dtype);
      if ((code = check_fits(&one, algos, counts[nsizes - 1])) != CS_EXIT_OK ||
          (code = check_named(&one, counts, nsizes)) != CS_EXIT_OK)
        break;
      if (first)
        print_start(o, algos, skipped, counts[0] * es, counts[nsizes - 1] * es);
      first = 0;
      code = sweep(&one, algos, counts, nsizes, inputs, want, sum);
    }
  }
  return code;
}

int cs_cmd_bench(int argc, char **argv)
{
  bench_opts_t o = {.minbytes = 8, .maxbytes = 32ull << 20, .factor = 4,
                    .iters = 20, .warmup = 5, .check = 1, .dtype = CS_FP32,
                    .op = CS_SUM, .nranks = 2, .algo = -1,
                    .tile_bytes = CS_TILE_BYTES};
  int rc = parse(argc, argv, &o);
  if (rc != 0 || o.coll) {
    if (rc == 0)
      rc = bench_coll(&o);
    else
      rc = rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
    cs_coll_close(o.coll_handle);
    return rc;
  }
  int algos[CS_NALGOS], skipped[CS_NALGOS];
  bench_sum_t sum;
  memset(&sum, 0, sizeof(sum));
  pick_algos(&o, algos, skipped);
  /* The largest size in bytes is the same for every dtype (fp32's count
   * is the smallest, its bytes the largest after rounding down). */
  bench_opts_t f32 = o;
  f32.dtype = CS_FP32;
  uint64_t counts[128];
  uint32_t nsizes = sweep_counts(o.dtype_all ? &f32 : &o, counts, 128), n = o.nranks;
  uint64_t maxbytes = counts[nsizes - 1] * cs_dtype_size(o.dtype_all ? CS_FP32 : o.dtype);
  int code = check_fits(o.dtype_all ? &f32 : &o, algos, counts[nsizes - 1]);
  if (code != CS_EXIT_OK)
    return code;
  uint8_t *inputs = malloc(maxbytes * n), *want = malloc(maxbytes);
  if (!inputs || !want) {
    cs_cli_error("bench", "out of memory for %u x %llu bytes of input", n,
                 (unsigned long long)maxbytes);
    code = CS_EXIT_ABORTED;
    goto out_buffers;
  }
  code = sweep_all(&o, algos, skipped, inputs, want, &sum);
  if (code == CS_EXIT_OK)
    code = print_end(&o, algos, &sum);
out_buffers:
  free(inputs);
  free(want);
  return code;
}
