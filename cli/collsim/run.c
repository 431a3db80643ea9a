/*
 * run.c - `collsim run`: one verified allreduce run, of a built-in
 * algorithm or of a collective loaded from a shared object (--algo ./x.so).
 * Parses the options, checks the configuration, hands the run to the
 * pipeline (run/pipeline.h) as a job whose verify step compares every
 * rank's result bit for bit with the oracle (collectives/oracle.h) or the
 * collective's expected-result function (run/coll.h) and every signal cell
 * with its final value (run/verify.h), and prints the summary and every
 * failure. One run path for both kinds: check, the job of run/coll.h,
 * pipeline, one report whose richer lines (bandwidths, float64, the
 * signals' final values, the first changed element) come with a
 * built-in's facts, the failed step's words; the kind supplies only its
 * checks. cs_run_execute() is shared with `collsim replay` and
 * `collsim teach`, which fill the options themselves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/geometry.h"
#include "../../collectives/oracle.h"
#include "../../sim/trace/check.h"
#include "../../sim/trace/read.h"
#include "../../sim/trace/sha256.h"
#include "../../window/cs_error.h"
#include "cli.h"
#include "temp.h"
#include "../../run/npy.h"
#include "../../run/pipeline.h"
#include "../../run/coll.h"
#include "run.h"
#include "../../run/verify.h"

/* The subcommand the options are parsed for, in their messages: run, or
 * explore checking the run options it will pass on (cs_run_parse_as). */
static const char *parse_cmd = "run";

static const char run_help[] =
    "usage: collsim run [--algo NAME|./X.so] [--ranks N] [--count C]\n"
    "                   [--dtype fp32|fp16|bf16] [--op sum|max|min|prod]\n"
    "                   [--fill arange|pto|random] [--seed S]\n"
    "                   [--input IN.npy] [--output OUT.npy] [--iters K]\n"
    "                   [--tile-bytes B] [--schedule S] [--memory-model M]\n"
    "                   [--bug NAME] [--list-bugs] [--fault RANK:KIND[:EVENT]]\n"
    "                   [--signals single-use|self-clearing]\n"
    "                   [--signal-layout packed|padded]\n"
    "                   [--minmax ieee|propagate|pto]\n"
    "                   [--shape ROWSxCOLS [--valid R,C]]\n"
    "                   [--timeout SECONDS] [--trace FILE] [--check]\n"
    "\n"
    "Runs the allreduce of PyPTO PR #2161 on N forked rank processes and\n"
    "verifies every rank's result bit for bit against an independent oracle\n"
    "that folds the inputs in the algorithm's own association order (the\n"
    "rings, twophase: identical on all ranks; mesh, host, onephase and ibing:\n"
    "own value first, then the peers ascending). Also reports the largest\n"
    "error against a float64 reduction and checks that every signal cell\n"
    "reached its final value and returned to 0 after the self-clearing\n"
    "epilogue (docs/algorithms.md §2.3; with --signals single-use: stayed at\n"
    "that final value).\n"
    "\n"
    "  --algo A         a built-in algorithm (default ring; docs/algorithms.md):\n"
    "@ALGOS@\n"
    "                   or a collective of your own: a shared object exporting\n"
    "                   collsim_collective\n"
    "                   (a path with '/' or ending in .so: a regular file,\n"
    "                   not through another user's link; collsim-api(3)),\n"
    "                   verified against its expected-result function; --bug,\n"
    "                   --input, --output and --signals are for the built-ins\n"
    "                   only (refused with a plug-in), and --minmax and\n"
    "                   --shape unless its flags have CS_COLL_MINMAX and\n"
    "                   CS_COLL_SHAPE. Its\n"
    "                   SHA-256 goes into the trace (replay and shrink load\n"
    "                   only a file with that hash)\n"
    "  --algo-sha256 HEX  load the --algo file only if its SHA-256 is HEX (64\n"
    "                   hex digits, as sha256sum prints it); shrink's reruns\n"
    "                   give it\n"
    "  --ranks N        ranks: 1..64, host 1..16 (default 4, or the input's rows)\n"
    "  --count C        elements per rank, >= 1 (default 65537, or the input's\n"
    "                   columns)\n"
    "  --dtype D        fp32, fp16 or bf16 (default fp32, or the input's);\n"
    "                   bf16 is collsim's extension: PyPTO takes fp32 and fp16\n"
    "  --op O           sum, max, min or prod (default sum)\n"
    "  --fill F         inputs: arange (100*r + i), pto (1 + 0.125*r +\n"
    "                   0.0625*(i mod 5)) or random (seeded; [-1,1), prod\n"
    "                   [0.9,1.1)). Default: as PR #2161's tests choose\n"
    "                   (pto for prod, and for fp16/bf16 on mesh and ring;\n"
    "                   arange otherwise)\n"
    "  --seed S         seed of the random fill (default 1)\n"
    "  --input IN.npy   inputs from a .npy of shape (N, C): '<f4' fp32, '<f2'\n"
    "                   fp16, '<u2' bf16 bits; row r is rank r's input\n"
    "  --output OUT.npy write every rank's result, shape (N, C), same dtype;\n"
    "                   a new name or a regular file of yours (it keeps its\n"
    "                   mode and owner); an --output or --trace that is the\n"
    "                   --input file, or a --trace that is the --output\n"
    "                   file, is refused\n"
    "  --iters K        allreduce calls on one world (default 10); the time\n"
    "                   printed is the median over calls of the slowest rank\n"
    "  --tile-bytes B   UB tile size (default 16384, as in PR #2161)\n"
    "  --schedule S     controlled mode: one actor (a rank, or a rank's DMA\n"
    "                   engine landing a posted op) runs at a time, chosen by\n"
    "                   random:SEED, pct:SEED:DEPTH[:STEPS] (PCT, DEPTH-1\n"
    "                   priority changes in the first STEPS steps, default\n"
    "                   2000), latest (land posted ops only when forced,\n"
    "                   notifies first), replay:TRACE or interactive (you pick\n"
    "                   each step on the terminal: a rank's number runs it,\n"
    "                   R#D lands its DMA op D; ? help, q quit) or\n"
    "                   deviate:LIST (a default order that never preempts,\n"
    "                   except Z>Y: right after\n"
    "                   actor Z, actor Y; R.K = rank R's event K, R#D = the\n"
    "                   landing of its DMA op D, ^ = the start; the form\n"
    "                   collsim shrink writes). No actor able to run is a\n"
    "                   deadlock, reported with the wavefront (exit 3)\n"
    "  --memory-model M sc (posted stores and notifies land at issue; the\n"
    "                   default), fifo (later, in order), relaxed (in any\n"
    "                   order unless a fence separates them) or a2a3 (the\n"
    "                   device: pipe, drain and DDR fence, non-coherent\n"
    "                   64-byte cache lines, Set notifies that write back\n"
    "                   their line; docs/memory-models.md); all but sc need\n"
    "                   --schedule\n"
    "  --bug NAME       run with a known defect (docs/algorithms.md §8; see\n"
    "                   --list-bugs, which also prints the options that make\n"
    "                   each one fail)\n"
    "  --signals M      self-clearing (the default): every call ends with the\n"
    "                   epilogue of the later PRs #2175/#2279 that returns its\n"
    "                   signal cells to 0, so calls can repeat on one world;\n"
    "                   single-use: PR #2161's own protocol, no epilogue, the\n"
    "                   cells stay at their final values (mesh 1+C, ring 2K,\n"
    "                   host 1+ceil(n/256)) and a world takes one call only\n"
    "                   (--iters is then 1; more is refused)\n"
    "  --minmax M       what max and min do with NaN and signed zeros (the\n"
    "                   reference leaves it open): ieee (the default, IEEE\n"
    "                   754-2019 maximumNumber/minimumNumber: a NaN loses to\n"
    "                   a number, +0 > -0), propagate (a NaN operand gives\n"
    "                   NaN, as torch), pto (std::max(local, received) =\n"
    "                   local < received ? received : local, std::min\n"
    "                   likewise, as pto-isa's CPU simulator: a NaN or a ±0\n"
    "                   tie keeps the local value); the oracle follows the\n"
    "                   mode\n"
    "  --signal-layout L  packed (the default: signal cells 4 bytes apart, as\n"
    "                   the reference lays them out) or padded (every cell\n"
    "                   on a 64-byte line of its own: under --memory-model\n"
    "                   a2a3 a Set notify then writes back no other cell;\n"
    "                   docs/memory-models.md)\n"
    "  --shape RxC      the data as a row-major R x C matrix (count = R*C; a\n"
    "                   --count that differs is refused)\n"
    "  --valid R,C      mesh only: the valid top-left R x C rectangle of the\n"
    "                   shape (1 <= R <= ROWS, 1 <= C <= COLS, R*C*esize <=\n"
    "                   --tile-bytes). A partial one takes PR #2161's\n"
    "                   rectangle path (docs/algorithms.md §3.3): one 2-D load\n"
    "                   per rank, one barrier, one 2-D store; the elements\n"
    "                   outside keep each rank's input, and are verified so.\n"
    "                   Default: the whole shape (the chunked path)\n"
    "  --check          at the end, check the run's own trace for ordering\n"
    "                   defects as 'collsim check' does (a temporary trace\n"
    "                   without --trace); a finding fails the run (exit 1)\n"
    CS_CLI_COMMON_HELP
    "\n" CS_CLI_EXIT_HELP;

enum { OPT_ALGO = 2000, OPT_RANKS, OPT_COUNT, OPT_DTYPE, OPT_OP, OPT_FILL,
       OPT_SEED, OPT_INPUT, OPT_OUTPUT, OPT_ITERS, OPT_TILE, OPT_SCHEDULE,
       OPT_MM, OPT_BUG, OPT_LIST_BUGS, OPT_CHECK, OPT_SIGNALS, OPT_MINMAX,
       OPT_SIGNAL_LAYOUT,
       OPT_SHAPE, OPT_VALID, OPT_ALGO_SHA256 };

enum { OPT_NOT_MINE = 2 }; /* an option handler's "not one of mine" */

static int sha_differs(const run_opts_t *o);

/* --algo-sha256 HEX: 64 hex digits; checked against an --algo already
 * loaded, else when --algo loads. Returns 0 or -1 after one line. */
static int opt_sha256(run_opts_t *o, const char *arg)
{
  size_t n = strlen(arg);
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789abcdefABCDEF", arg[i]))
      n = 0;
  if (n != 64) {
    cs_cli_error(parse_cmd, "--algo-sha256 '%s' is not accepted: expected 64 hex "
                 "digits (sha256sum's)", arg);
    return -1;
  }
  for (int i = 0; i < 32; i++) {
    char b[3] = {arg[2 * i], arg[2 * i + 1], 0};
    o->want_sha256[i] = (uint8_t)strtoul(b, NULL, 16);
  }
  o->want_sha = 1;
  return o->coll && sha_differs(o) ? -1 : 0;
}

/* --algo, --ranks, --count, --dtype, --op, --fill, --seed, --iters,
 * --tile-bytes. Returns 0, -1 after one line, or OPT_NOT_MINE. */
static int opt_cfg(run_opts_t *o, int opt, const char *arg)
{
  int v;
  switch (opt) {
  case OPT_ALGO:
    if (cs_coll_is_path(arg))
      return cs_run_load_algo(o, arg);
    if ((v = cs_algo_parse(arg)) < 0) {
      char names[96];
      cs_algo_names(names, sizeof(names), ", or a path to a shared object");
      cs_cli_error(parse_cmd, "--algo '%s' is not accepted: expected %s", arg,
                   names);
      return -1;
    }
    o->cfg.algo = (cs_algo_t)v;
    cs_coll_close(o->coll_handle);
    o->coll = NULL;
    o->coll_handle = NULL;
    return 0;
  case OPT_ALGO_SHA256:
    return opt_sha256(o, arg);
  case OPT_RANKS:
    o->have_ranks = 1;
    return cs_cli_u32(parse_cmd, "--ranks", arg, 1, CS_AR_MAX_RANKS, &o->cfg.nranks);
  case OPT_COUNT:
    o->have_count = 1;
    return cs_cli_u64(parse_cmd, "--count", arg, 1, 1ull << 36, &o->cfg.count);
  case OPT_DTYPE:
    o->have_dtype = 1;
    return cs_cli_dtype(parse_cmd, "--dtype", arg, &o->cfg.dtype);
  case OPT_OP:
    return cs_cli_op(parse_cmd, "--op", arg, &o->cfg.op);
  case OPT_FILL:
    if (!strcmp(arg, "arange"))
      o->fill = CS_FILL_ARANGE;
    else if (!strcmp(arg, "pto"))
      o->fill = CS_FILL_PTO;
    else if (!strcmp(arg, "random"))
      o->fill = CS_FILL_RANDOM;
    else {
      cs_cli_error(parse_cmd, "--fill '%s' is not accepted: expected arange, pto "
                   "or random", arg);
      return -1;
    }
    return 0;
  case OPT_SEED:
    return cs_cli_u64(parse_cmd, "--seed", arg, 0, UINT64_MAX - 1, &o->seed);
  case OPT_SHAPE:
    o->have_shape = 1;
    return cs_cli_pair(parse_cmd, "--shape", arg, 'x', 1, &o->cfg.shape_rows,
                       &o->cfg.shape_cols);
  case OPT_VALID:
    o->have_valid = 1;
    return cs_cli_pair(parse_cmd, "--valid", arg, ',', 0, &o->cfg.valid_rows,
                       &o->cfg.valid_cols);
  case OPT_ITERS:
    o->have_iters = 1;
    return cs_cli_u32(parse_cmd, "--iters", arg, 1, 1000000, &o->cfg.iters);
  case OPT_TILE:
    if (cs_cli_u32(parse_cmd, "--tile-bytes", arg, 1024, 1u << 24, &o->cfg.tile_bytes) < 0)
      return -1;
    if (o->cfg.tile_bytes % 32) {
      cs_cli_error(parse_cmd, "--tile-bytes '%s' is not accepted: expected a "
                   "multiple of 32", arg);
      return -1;
    }
    return 0;
  default:
    return OPT_NOT_MINE;
  }
}

/* --input, --output, --schedule, --memory-model, --bug, --list-bugs,
 * --help. Returns 0, 1 when the command is done (a list or the help was
 * printed), -1 after one line, or OPT_NOT_MINE. */
static int opt_mode(run_opts_t *o, int opt, const char *arg)
{
  int v;
  const char *file = NULL;
  switch (opt) {
  case OPT_INPUT: o->input = arg; return 0;
  case OPT_OUTPUT: o->output = arg; return 0;
  case OPT_SCHEDULE:
    if (cs_sched_parse(arg, &o->sched, &file) < 0) {
      cs_cli_schedule_error(parse_cmd, arg);
      return -1;
    }
    o->schedule_str = arg;
    o->replay_file = file;
    return 0;
  case OPT_MM:
    o->model_set = 1;
    return cs_cli_mm(parse_cmd, "--memory-model", arg, &o->sched.model);
  case OPT_BUG:
    if ((v = cs_bug_parse(arg)) < 0) {
      cs_cli_error(parse_cmd, "--bug '%s' is not accepted: see 'collsim run "
                   "--list-bugs'", arg);
      return -1;
    }
    o->cfg.bug = (uint32_t)v;
    return 0;
  case OPT_LIST_BUGS:
    cs_run_list_bugs(stdout);
    return 1;
  case OPT_CHECK: o->check = 1; return 0;
  case OPT_SIGNALS:
    o->have_signals = 1;
    return cs_cli_signals(parse_cmd, "--signals", arg, &o->cfg.no_epilogue);
  case OPT_MINMAX:
    o->have_minmax = 1;
    return cs_cli_minmax(parse_cmd, "--minmax", arg, &o->cfg.minmax);
  case OPT_SIGNAL_LAYOUT:
    return cs_cli_signal_layout(parse_cmd, "--signal-layout", arg,
                                &o->cfg.padded_cells);
  case 'h':
    cs_cli_help(run_help, 19);
    return 1;
  default:
    return OPT_NOT_MINE;
  }
}

/* Returns 0 to run, 1 when done (help, list), -1 on bad usage (printed). */
static int parse(int argc, char **argv, run_opts_t *o)
{
  static const struct option longopts[] = {
      {"algo", required_argument, 0, OPT_ALGO},
      {"ranks", required_argument, 0, OPT_RANKS},
      {"count", required_argument, 0, OPT_COUNT},
      {"dtype", required_argument, 0, OPT_DTYPE},
      {"op", required_argument, 0, OPT_OP},
      {"fill", required_argument, 0, OPT_FILL},
      {"seed", required_argument, 0, OPT_SEED},
      {"input", required_argument, 0, OPT_INPUT},
      {"output", required_argument, 0, OPT_OUTPUT},
      {"iters", required_argument, 0, OPT_ITERS},
      {"tile-bytes", required_argument, 0, OPT_TILE},
      {"schedule", required_argument, 0, OPT_SCHEDULE},
      {"memory-model", required_argument, 0, OPT_MM},
      {"bug", required_argument, 0, OPT_BUG},
      {"list-bugs", no_argument, 0, OPT_LIST_BUGS},
      {"check", no_argument, 0, OPT_CHECK},
      {"signals", required_argument, 0, OPT_SIGNALS},
      {"minmax", required_argument, 0, OPT_MINMAX},
      {"signal-layout", required_argument, 0, OPT_SIGNAL_LAYOUT},
      {"shape", required_argument, 0, OPT_SHAPE},
      {"valid", required_argument, 0, OPT_VALID},
      {"algo-sha256", required_argument, 0, OPT_ALGO_SHA256},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  int opt, bad = 0, rc;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (cs_cli_common_opt(parse_cmd, opt, optarg, &o->com, &bad)) {
      if (bad)
        return -1;
      continue;
    }
    if ((rc = opt_cfg(o, opt, optarg)) == OPT_NOT_MINE &&
        (rc = opt_mode(o, opt, optarg)) == OPT_NOT_MINE) {
      cs_cli_bad_option(parse_cmd);
      return -1;
    }
    if (rc != 0)
      return rc;
  }
  if (optind < argc) {
    cs_cli_error(parse_cmd, "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  /* A collective of one's own may honour --minmax (CS_COLL_MINMAX). */
  int minmax_ok = o->coll && (cs_coll_flags(o->coll) & CS_COLL_MINMAX);
  int shape_ok = o->coll && (cs_coll_flags(o->coll) & CS_COLL_SHAPE);
  const char *builtin_only = o->cfg.bug ? "--bug" : o->input ? "--input"
                             : o->output ? "--output"
                             : o->have_shape && !shape_ok ? "--shape"
                             : o->have_signals ? "--signals"
                             : o->have_minmax && !minmax_ok ? "--minmax" : NULL;
  if (o->coll && builtin_only) {
    cs_cli_error(parse_cmd, "%s is for the built-in algorithms, not --algo %s",
                 builtin_only, o->coll_path);
    return -1;
  }
  if (cs_cli_shape_resolve(parse_cmd, &o->cfg, o->have_shape, o->have_valid,
                           o->have_count) < 0)
    return -1;
  o->have_count |= o->have_shape; /* --input's columns must match it too */
  if (o->input && o->fill != CS_FILL_DEFAULT) {
    cs_cli_error(parse_cmd, "--fill and --input are exclusive: give one");
    return -1;
  }
  if (o->model_set &&
      cs_cli_mm_scheduled(parse_cmd, o->sched.model, o->schedule_str != NULL) < 0)
    return -1;
  return 0;
}

/* The loaded file's hash is not the one asked for: one line. */
static int sha_differs(const run_opts_t *o)
{
  if (!memcmp(o->coll_sha256, o->want_sha256, 32))
    return 0;
  char have[65], want[65];
  cs_sha256_hex(o->coll_sha256, have);
  cs_sha256_hex(o->want_sha256, want);
  cs_cli_error(o->cmd, "--algo %s: its SHA-256 is %s, not %s: refusing to "
               "load it", o->coll_path, have, want);
  return 1;
}

/* The SHA-256 of the regular file `path` into h. Returns 0, or -1 with
 * the reason in why. */
static int hash_file(const char *path, uint8_t h[32], char *why, size_t n)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  struct stat sb;
  int rc = -1;
  if (fd < 0)
    snprintf(why, n, "cannot open: %s", strerror(errno));
  else if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    snprintf(why, n, "not a regular file");
  else if ((rc = cs_sha256_fd(fd, h)) < 0)
    snprintf(why, n, "cannot read: %s", strerror(-rc));
  if (fd >= 0)
    close(fd);
  return rc < 0 ? -1 : 0;
}

int cs_run_algo_vouched(const char *cmd, const char *trace, const char *so,
                        const uint8_t rec[32], int trust)
{
  static const uint8_t zero[32];
  uint8_t now[32];
  char why[256], have[65], want[65];
  if (hash_file(so, now, why, sizeof(why)) < 0) {
    cs_cli_error(cmd, "%s: its collective %s: %s", trace, so, why);
    return -1;
  }
  cs_sha256_hex(now, have);
  cs_sha256_hex(rec, want);
  if (!memcmp(rec, zero, 32) && !trust) {
    cs_cli_error(cmd, "%s records no SHA-256 of its collective %s (a trace "
                 "written before collsim recorded one, or a forged one): not "
                 "loading it; give --trust-algo to load it anyway", trace, so);
    return -1;
  }
  if (memcmp(rec, zero, 32) && memcmp(rec, now, 32)) {
    cs_cli_error(cmd, "%s: its collective %s has changed since the trace was "
                 "recorded (SHA-256 %s, recorded %s): refusing to load it",
                 trace, so, have, want);
    return -1;
  }
  fprintf(stderr, "collsim %s: loading the collective %s (SHA-256 %s%s) "
          "that %s names\n", cmd, so, have,
          memcmp(rec, zero, 32) ? ", as recorded" : ", none recorded: "
          "--trust-algo", trace);
  return 0;
}

/* A crash in a loaded collective's code that the launcher itself runs
 * (its constructor while it loads; refuse, slots, signal_final, expect
 * after): one line and exit 3, as a crashed rank is reported, instead of
 * collsim dying by the signal. Only in the process that loaded it (a rank
 * forked later dies by the signal, which its launcher reports) and only
 * for a fault whose instruction is in the library's code (or any fault
 * while it loads); any other fault is collsim's own and keeps its default
 * action. The words are made before, so the handler only writes. */
static pid_t plug_pid;
static volatile sig_atomic_t plug_loading;
static uintptr_t plug_lo, plug_hi; /* its executable segments' span */
static char plug_head[4200], plug_tail[160];

static int plug_fd = 2;

void cs_run_plug_fd(int fd)
{
  plug_fd = fd;
}

static void plug_write(const char *s)
{
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t k = write(plug_fd, s, n);
    if (k <= 0)
      return;
    s += k;
    n -= (size_t)k;
  }
}

/* SIGABRT is raised inside libc (abort, raise), never at an instruction
 * of the library: it is the library's when a return address on the stack
 * lies in its code (abort() called from it). backtrace() is primed in
 * plug_guard, so here it only walks the stack. */
static int plug_called_abort(void)
{
  void *frame[64];
  int n = plug_hi ? backtrace(frame, 64) : 0;
  for (int i = 0; i < n; i++)
    if ((uintptr_t)frame[i] >= plug_lo && (uintptr_t)frame[i] < plug_hi)
      return 1;
  return 0;
}

static void plug_crash(int sig, siginfo_t *si, void *ucv)
{
  (void)si;
  uintptr_t pc = 0;
  const ucontext_t *uc = ucv;
#if defined(__x86_64__)
  pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  pc = (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
#endif
  int called = sig == SIGABRT && plug_called_abort();
  if (getpid() == plug_pid &&
      (plug_loading || (pc >= plug_lo && pc < plug_hi) || called)) {
    const char *name = sigabbrev_np(sig);
    plug_write(plug_head);
    plug_write(name ? name : "?");
    if (called && !plug_loading)
      plug_write(" (it called abort())");
    plug_write(plug_loading ? " while loading it (in its constructor); stopped\n" : plug_tail);
    _exit(CS_EXIT_ABORTED);
  }
  signal(sig, SIG_DFL); /* collsim's own (or a rank's): the default */
  raise(sig);
}

/* The executable span of the loaded object that holds the address
 * *(uintptr_t *)arg (its registration). */
static int plug_span(struct dl_phdr_info *info, size_t size, void *arg)
{
  (void)size;
  uintptr_t at = *(uintptr_t *)arg;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine |= ph->p_type == PT_LOAD && at >= lo && at < lo + ph->p_memsz;
  }
  if (!mine)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
      continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (!plug_lo || lo < plug_lo)
      plug_lo = lo;
    if (hi > plug_hi)
      plug_hi = hi;
  }
  return 1;
}

static void plug_guard(const char *cmd, const char *path)
{
  snprintf(plug_head, sizeof(plug_head), "collsim %s: the collective %s "
           "crashed with SIG", cmd, path);
  snprintf(plug_tail, sizeof(plug_tail), " in its own code, run by collsim "
           "itself (refuse, slots, signal_final or expect); stopped\n");
  plug_pid = getpid();
  plug_lo = plug_hi = 0;
  void *prime[1];
  backtrace(prime, 1); /* loads the unwinder now, not in the handler */
  struct sigaction sa = {.sa_sigaction = plug_crash,
                         .sa_flags = SA_SIGINFO | SA_NODEFER};
  sigemptyset(&sa.sa_mask);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
    sigaction(sigs[i], &sa, NULL);
}

int cs_run_algo_path(const char *cmd, const char *arg, char *path)
{
  struct stat sb;
  /* Another user's link, also one our own link names, would let that
   * user choose the code we run (as the output rule never writes through
   * one). */
  if (cs_links_ours(arg) == CS_ESYMLINK) {
    cs_cli_error(cmd, "--algo %s is another user's symbolic link: expected "
                 "a shared object of yours or a link of yours to one", arg);
    return -1;
  }
  if (!realpath(arg, path) || stat(path, &sb) < 0) {
    cs_cli_error(cmd, "--algo %s: cannot open: %s", arg, strerror(errno));
    return -1;
  }
  /* Before dlopen, which would block on a FIFO or read a device forever. */
  if (!S_ISREG(sb.st_mode)) {
    cs_cli_error(cmd, "--algo %s is not a regular file: expected a shared "
                 "object", arg);
    return -1;
  }
  return 0;
}

void cs_run_algo_error(const char *cmd, const char *arg, const char *path,
                       const char *why)
{
  size_t k = strlen(path);
  if (!strncmp(why, path, k) && !strncmp(why + k, ": ", 2))
    why += k + 2; /* cs_coll_open's reason starts with the path it loaded */
  cs_cli_error(cmd, "--algo %s: %s", arg, why);
}

int cs_run_load_algo(run_opts_t *o, const char *arg)
{
  char why[768];
  cs_coll_close(o->coll_handle);
  o->coll = NULL;
  o->coll_handle = NULL;
  if (cs_run_algo_path(o->cmd, arg, o->coll_path) < 0)
    return -1;
  /* Hashed before it is loaded: what the trace records, and what
   * --algo-sha256 (shrink's reruns, a replay) must match. */
  if (hash_file(o->coll_path, o->coll_sha256, why, sizeof(why)) < 0) {
    cs_cli_error(o->cmd, "--algo %s: %s", arg, why);
    return -1;
  }
  if (o->want_sha && sha_differs(o))
    return -1;
  if (cs_run_open_guarded(o->cmd, o->coll_path, &o->coll, &o->coll_handle,
                          why, sizeof(why)) < 0) {
    cs_run_algo_error(o->cmd, arg, o->coll_path, why);
    return -1;
  }
  return 0;
}

int cs_run_open_guarded(const char *cmd, const char *path,
                        const cs_collective_t **coll, void **handle, char *why,
                        size_t n)
{
  plug_guard(cmd, path);
  plug_loading = 1;
  int rc = cs_coll_open(path, coll, handle, why, n);
  plug_loading = 0;
  if (rc < 0)
    return rc;
  uintptr_t at = (uintptr_t)*coll;
  dl_iterate_phdr(plug_span, &at);
  return 0;
}

void cs_run_list_bugs(FILE *out)
{
  fprintf(out, "Bug mutations (--bug NAME); each fails under the options shown:\n\n");
  for (int i = 1; i < CS_NBUGS; i++)
    fprintf(out, "%-26s %s\n%26s fails: %s\n%26s with: %s\n\n",
            cs_bug_table[i].name, cs_bug_table[i].what, "",
            cs_bug_table[i].fails, "", cs_bug_table[i].recipe);
}

/* ------------------------------------------------------------ the job */

/* One run: a copy of the options (the input file and the bug may change
 * the configuration, not the caller's) and the pipeline job, a built-in's
 * or a registration's (run/coll.h), with what its verify step found.
 * Lives in cs_run_execute's frame. */
typedef struct run_job {
  cs_coll_job_t cj;       /* first, so that the pipeline's context is both
                             it (its fill and verify steps) and this run
                             (the report) */
  cs_job_ops_t  cj_ops;   /* its ops plus this run's report */
  cs_coll_cfg_t ccfg;     /* --algo ./x.so: its configuration */
  int           cj_made;  /* cj initialised (to be finished) */
  run_opts_t  o;
  cs_npy_t    in;         /* --input, or empty */
  int         controlled; /* a schedule decides the order */
} run_job_t;

/* Takes N, C and the dtype from the input file, or checks them against
 * the options. Returns 0 or -1 (printed). */
static int load_input(run_job_t *rj)
{
  run_opts_t *o = &rj->o;
  cs_npy_t *a = &rj->in;
  char why[512];
  if (cs_npy_read(o->input, a, why, sizeof(why)) < 0) {
    cs_cli_error(o->cmd, "--input %s", why);
    return -1;
  }
  /* The option the file disagrees with, by name and value. */
  char clash[160] = "";
  if (o->have_dtype && a->dtype != o->cfg.dtype)
    snprintf(clash, sizeof(clash), "dtype does not match --dtype %s",
             cs_dtype_name(o->cfg.dtype));
  else if (o->have_ranks && a->rows != o->cfg.nranks)
    snprintf(clash, sizeof(clash), "rows do not match --ranks %u", o->cfg.nranks);
  else if (o->have_count && a->cols != o->cfg.count)
    snprintf(clash, sizeof(clash), "columns do not match %s %llu",
             o->have_shape ? "--shape's count" : "--count",
             (unsigned long long)o->cfg.count);
  else if (a->rows > CS_AR_MAX_RANKS)
    snprintf(clash, sizeof(clash), "rows are more than the 64 ranks a run "
             "may have");
  if (clash[0]) {
    cs_cli_error(o->cmd, "--input %s (%s, shape (%llu, %llu)): its %s",
                 o->input, cs_dtype_name(a->dtype), (unsigned long long)a->rows,
                 (unsigned long long)a->cols, clash);
    free(a->data);
    a->data = NULL;
    return -1;
  }
  o->cfg.dtype = a->dtype;
  o->cfg.nranks = (uint32_t)a->rows;
  o->cfg.count = a->cols;
  return 0;
}

/* The built-in's job (its world options and layout), and whether the
 * launcher can hold its world (with --input's rows beside it).
 * Returns the exit code (CS_EXIT_OK to go on; otherwise printed). */
static int check_world(run_job_t *rj, cs_fill_t fill)
{
  const run_opts_t *o = &rj->o;
  const cs_ar_cfg_t *c = &o->cfg;
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  rj->controlled = o->sched.strategy != CS_SCHED_FREE;
  int rc = cs_coll_job_init_ar(&rj->cj, c, fill, o->seed,
                               o->input ? rj->in.data : NULL,
                               o->com.timeout_ns, o->com.trace || o->trace_mem,
                               rj->controlled);
  rj->cj_made = 1;
  if (rc < 0) {
    cs_cli_error(o->cmd, "cannot hold %u windows of %llu bytes: %s", n,
                 (unsigned long long)rj->cj.l.win_bytes, cs_strerror(rc));
    return CS_EXIT_USAGE;
  }
  uint64_t region = cs_world_region_bytes(&rj->cj.l, n, &rj->cj.job.wo);
  /* The world, and beside it only --input's rows (the fill writes into
   * the world, verification reads it in place). */
  uint64_t need = region + (o->input ? bytes * n : 0), avail = cs_mem_available();
  if (region == 0 || need > avail) {
    char hn[32], ha[32];
    cs_cli_error(o->cmd, "%u ranks x %llu elements need about %s of "
                 "memory; %s are available", n, (unsigned long long)c->count,
                 cs_human_bytes(need, hn, sizeof(hn)),
                 cs_human_bytes(avail, ha, sizeof(ha)));
    return CS_EXIT_USAGE;
  }
  return CS_EXIT_OK;
}

/* Everything that can be refused before a built-in's world exists.
 * Returns the exit code (CS_EXIT_OK to go on; otherwise printed). */
static int check(run_job_t *rj)
{
  run_opts_t *o = &rj->o;
  if (o->input && load_input(rj) < 0)
    return CS_EXIT_USAGE;
  if (cs_cli_single_use_check(o->cmd, &o->cfg, o->have_iters) < 0)
    return CS_EXIT_USAGE;
  if (o->cfg.iters < cs_bug_min_calls(o->cfg.bug))
    o->cfg.iters = cs_bug_min_calls(o->cfg.bug); /* some show on a second call */
  char why[256];
  int rc = cs_ar_check(&o->cfg);
  if (rc < 0) {
    cs_cli_ar_why(&o->cfg, rc, why, sizeof(why));
    cs_cli_error(o->cmd, "%s", why);
    return CS_EXIT_USAGE;
  }
  if (cs_cli_common_check(o->cmd, &o->com, o->cfg.nranks) < 0)
    return CS_EXIT_USAGE;
  return check_world(rj, o->input ? CS_FILL_INPUT
                                  : (o->fill ? o->fill
                                             : cs_ar_default_fill(&o->cfg)));
}

/* What a plug-in run refuses before its world exists: the options its
 * flags do not honour, the configuration its check refuses; then its job
 * (run/coll.h). Returns the exit code (CS_EXIT_OK to go on; otherwise
 * printed). */
static int check_coll(run_job_t *rj)
{
  const run_opts_t *o = &rj->o;
  const cs_ar_cfg_t *c = &o->cfg;
  if (c->minmax && !(cs_coll_flags(o->coll) & CS_COLL_MINMAX)) {
    cs_cli_error(o->cmd, "--minmax %s: %s does not honour it (its flags lack "
                 "CS_COLL_MINMAX)", cs_minmax_name((cs_minmax_t)c->minmax),
                 o->coll_path);
    return CS_EXIT_USAGE;
  }
  if (c->shape_rows && !(cs_coll_flags(o->coll) & CS_COLL_SHAPE)) {
    cs_cli_error(o->cmd, "--shape %ux%u: %s does not take a shape (its flags "
                 "lack CS_COLL_SHAPE)", c->shape_rows, c->shape_cols,
                 o->coll_path);
    return CS_EXIT_USAGE;
  }
  if (c->shape_rows && (!c->valid_rows || !c->valid_cols ||
                        c->valid_rows > c->shape_rows ||
                        c->valid_cols > c->shape_cols)) {
    cs_cli_error(o->cmd, "--valid %u,%u is not accepted: expected 1..%u rows "
                 "and 1..%u columns, inside --shape %ux%u", c->valid_rows,
                 c->valid_cols, c->shape_rows, c->shape_cols, c->shape_rows,
                 c->shape_cols);
    return CS_EXIT_USAGE;
  }
  rj->ccfg = (cs_coll_cfg_t){
      .nranks = c->nranks, .count = c->count, .dtype = c->dtype, .op = c->op,
      .tile_bytes = c->tile_bytes, .iters = c->iters,
      .minmax = (cs_minmax_t)c->minmax, .shape_rows = c->shape_rows,
      .shape_cols = c->shape_cols, .valid_rows = c->valid_rows,
      .valid_cols = c->valid_cols};
  char why[768];
  if (cs_coll_check_full(o->coll, &rj->ccfg, why, sizeof(why)) < 0) {
    cs_cli_error(o->cmd, "%s", why);
    return CS_EXIT_USAGE;
  }
  if (cs_cli_common_check(o->cmd, &o->com, c->nranks) < 0)
    return CS_EXIT_USAGE;
  if (c->padded_cells && o->coll->signal_slot == CS_COLL_NO_SIGNALS) {
    cs_cli_error(o->cmd, "--signal-layout padded: %s declares no signal slot "
                 "to pad", o->coll->name);
    return CS_EXIT_USAGE;
  }
  rj->controlled = o->sched.strategy != CS_SCHED_FREE;
  if (cs_coll_job_init(&rj->cj, o->coll, &rj->ccfg, o->fill, o->seed,
                       o->com.timeout_ns, o->com.trace != NULL,
                       rj->controlled, (int)c->padded_cells) < 0) {
    cs_cli_error(o->cmd, "%s: its slots are not a window collsim can make",
                 o->coll->name);
    return CS_EXIT_USAGE;
  }
  rj->cj_made = 1;
  return CS_EXIT_OK;
}

static int run_report(cs_pipe_t *p, void *ctx);

/* The rest of the pipeline job, either kind: this run's report, the
 * schedule, the trace, the fault and their trace header fields. */
static void make_job(run_job_t *rj)
{
  const run_opts_t *o = &rj->o;
  cs_coll_job_t *cj = &rj->cj;
  cs_job_t *j = &cj->job;
  rj->cj_ops = cj->ops;
  rj->cj_ops.report = run_report;
  j->ops = &rj->cj_ops;
  j->ctx = rj;
  j->sched = rj->controlled ? &rj->o.sched : NULL;
  j->trace = o->com.trace;
  j->fault = o->com.fault;
  j->expect_hash = o->expect_hash;
  j->th.memory_model = o->sched.model;
  j->th.fault_kind = o->com.has_fault ? o->com.fault.kind : 0;
  j->th.fault_rank = o->com.fault.rank;
  j->th.fault_event = o->com.fault.event;
  snprintf(j->th.schedule, sizeof(j->th.schedule), "%s",
           o->schedule_str ? o->schedule_str : rj->controlled ? "replay" : "free");
  if (cj->is_ar) {
    j->trace_mem = o->com.trace ? NULL : o->trace_mem;
    j->keep = o->com.trace ? NULL : o->keep;
    j->th.modes = cs_cli_modes(&o->cfg);
    cs_cli_shape_to_header(&o->cfg, &j->th);
    return;
  }
  /* the modes and the rectangle are cs_coll_job_init's */
  snprintf(j->th.algo_path, sizeof(j->th.algo_path), "%.*s",
           (int)sizeof(j->th.algo_path) - 1, o->coll_path); /* as cut before */
  memcpy(j->th.algo_sha256, o->coll_sha256, sizeof(j->th.algo_sha256));
}

/* ------------------------------------------------------------ report */

static void print_bits(cs_dtype_t t, const void *buf, uint64_t i)
{
  if (t == CS_FP32) {
    uint32_t b;
    memcpy(&b, (const uint8_t *)buf + i * 4, 4);
    printf("0x%08x (%.9g)", b, cs_oracle_decode(t, buf, i));
  } else {
    printf("0x%04x (%.6g)", ((const uint16_t *)buf)[i], cs_oracle_decode(t, buf, i));
  }
}

/* The mode line: shown with --verbose-mode, a schedule, or (built-ins) a
 * bug or a minmax mode, which it then names (a plug-in's bug is its own,
 * its minmax mode not named). */
static void print_mode(const run_job_t *rj)
{
  const cs_ar_cfg_t *c = &rj->o.cfg;
  uint32_t bug = rj->cj.is_ar ? c->bug : 0;
  uint32_t minmax = rj->cj.is_ar ? c->minmax : 0;
  if (!rj->o.verbose_mode && !rj->controlled && !bug && !minmax)
    return;
  printf("mode: %s%s, memory model %s%s%s%s%s\n",
         rj->controlled ? "controlled, schedule " : "free",
         rj->controlled ? rj->cj.job.th.schedule : "",
         cs_mm_name(rj->o.sched.model), bug ? ", bug " : "",
         bug ? cs_bug_table[bug].name : "", minmax ? ", minmax " : "",
         minmax ? cs_minmax_name((cs_minmax_t)minmax) : "");
}

/* The run's line and the time per call; a built-in's with its size per
 * rank, its --input, its valid rectangle and its bandwidths. */
static void print_head(const run_job_t *rj)
{
  const run_opts_t *o = &rj->o;
  const cs_coll_job_t *cj = &rj->cj;
  const cs_ar_cfg_t *c = &o->cfg; /* a plug-in's: its cfg's fields */
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  if (cj->is_ar) {
    char hb[32];
    cs_human_bytes(bytes, hb, sizeof(hb));
    printf("collsim run: %s allreduce, %u rank%s, %llu x %s (%s per rank), "
           "%s, input %s%s%s, %u call%s\n", cs_algo_name(c->algo), n,
           n == 1 ? "" : "s", (unsigned long long)c->count,
           cs_dtype_name(c->dtype), hb, cs_op_name(c->op),
           cs_fill_name(cj->fill), o->input ? " " : "",
           o->input ? o->input : "", c->iters, c->iters == 1 ? "" : "s");
  } else {
    printf("collsim run: %s (%s), %u rank%s, %llu x %s per rank, %s, input "
           "%s, %u call%s\n", o->coll->name, o->coll_path, n, n == 1 ? "" : "s",
           (unsigned long long)c->count, cs_dtype_name(c->dtype),
           cs_op_name(c->op), cs_fill_name(cj->fill), c->iters,
           c->iters == 1 ? "" : "s");
  }
  if (cj->is_ar && cs_ar_rect(c))
    printf("shape: %u x %u, valid rectangle %u x %u (the partial-valid path, "
           "docs/algorithms.md §3.3; the rest keeps each rank's input)\n",
           c->shape_rows, c->shape_cols, c->valid_rows, c->valid_cols);
  double us = (double)cj->median_ns / 1e3;
  printf("time per call: %.1f us (median of %u, slowest rank)", us, c->iters);
  if (cj->is_ar) {
    double algbw = (double)bytes / (us * 1e3); /* GB/s */
    double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
    printf(", algbw %.3f GB/s, busbw %.3f GB/s", algbw, busbw);
  }
  printf("\n");
}

/* The results against the oracle (a built-in, then also against float64)
 * or the registration's expected-result function. */
static void print_result(const run_job_t *rj, const cs_pipe_t *p)
{
  const cs_coll_job_t *cj = &rj->cj;
  const cs_ar_cfg_t *c = &rj->o.cfg;
  const char *name = cj->is_ar ? "the oracle" : rj->o.coll->name;
  uint32_t n = c->nranks;
  if (!cj->verified) {
    printf("result: NOT VERIFIED: %s has no expected-result function "
           "(expect is NULL), so the outputs were not compared\n", name);
  } else if (cj->wrong == 0 && cj->is_ar) {
    printf("result: bit-exact on all %u rank%s against the oracle (%s)\n",
           n, n == 1 ? "" : "s", cs_algo_desc(c->algo)->fold_text);
  } else if (cj->wrong == 0) {
    printf("result: bit-exact on all %u rank%s against %s's expected-result "
           "function\n", n, n == 1 ? "" : "s", name);
  } else {
    printf("result: WRONG: %llu element%s differ from %s%s; first: rank %lld "
           "index %llu: expected ", (unsigned long long)cj->wrong,
           cj->wrong == 1 ? "" : "s", name,
           cj->is_ar ? "" : "'s expected result", (long long)cj->bad_rank,
           (unsigned long long)cj->bad_i);
    print_bits(c->dtype, cj->want_bits, 0);
    printf(", got ");
    print_bits(c->dtype, cs_world_output(&p->world, (uint32_t)cj->bad_rank),
               cj->bad_i);
    printf("\n");
  }
  if (!cj->is_ar)
    return;
  const cs_verdict_t *v = &cj->av.v;
  printf("error vs float64: max abs %.3g, max rel %.3g; reference tolerance "
         "(rtol %g, atol %g): %s\n", v->max_abs, v->max_rel, v->rtol, v->atol,
         v->tol_fail ? "EXCEEDED" : "within");
  printf("verification: %.3f s (oracle and float64, every rank, all online "
         "CPUs)\n", (double)cj->av.verify_ns / 1e9);
}

/* "signal[7] (row 2, from rank 1)": a cell of c's signal slot. */
static void cell_name(const cs_ar_cfg_t *c, uint64_t cell, char *buf, size_t n)
{
  snprintf(buf, n, "signal[%llu] (row %llu, from rank %llu)",
           (unsigned long long)cell, (unsigned long long)(cell / c->nranks),
           (unsigned long long)(cell % c->nranks));
}

/* A built-in's signals line when cells missed: how many, and the first
 * cell of each kind by rank, index and value against the expected one. */
static void print_signals_wrong(const run_job_t *rj)
{
  const cs_ar_cfg_t *c = &rj->o.cfg;
  const cs_coll_ar_verdict_t *av = &rj->cj.av;
  uint32_t bad = av->signal_bad;
  uint64_t not_zero = av->v.signals_left;
  const char *what = cs_algo_desc(c->algo)->final_text;
  char cell[80];
  printf("signals: WRONG: %u cell%s missed %s = %d, %llu cell%s not %s",
         bad, bad == 1 ? "" : "s", what, cs_ar_signal_final(c),
         (unsigned long long)not_zero, not_zero == 1 ? "" : "s",
         c->no_epilogue ? "at their final value at the end" : "back to 0");
  if (bad) {
    cell_name(c, av->sig_st->signal_cell, cell, sizeof(cell));
    printf("; first: rank %lld %s held %d %s, expected %d",
           (long long)av->sig_rank, cell, av->sig_st->signal_got,
           c->no_epilogue ? "at the end of the call" : "before the last epilogue",
           av->sig_st->signal_want);
  }
  if (not_zero) {
    cell_name(c, av->v.left_cell, cell, sizeof(cell));
    printf("; %s: rank %lld %s holds %d at the end, expected %d",
           bad ? "and" : "first", (long long)av->v.left_rank, cell,
           av->v.left_val, av->v.left_want);
  }
  printf("\n");
}

/* A built-in's signals: final values before the last epilogue, 0 after
 * it. */
static void print_signals_ar(const run_job_t *rj)
{
  const cs_ar_cfg_t *c = &rj->o.cfg;
  const cs_coll_ar_verdict_t *av = &rj->cj.av;
  uint32_t n = c->nranks;
  uint64_t cells = cs_ar_signal_cells(c);
  const char *what = cs_algo_desc(c->algo)->final_text;
  const char *cells_word = cs_algo_desc(c->algo)->signalled
                               ? cs_algo_desc(c->algo)->signalled
                               : "every non-self cell";
  int ok = av->signal_bad == 0 && av->v.signals_left == 0;
  if (n == 1)
    printf("signals: none (one rank)\n");
  else if (ok && c->no_epilogue)
    printf("signals: single-use: %s reached %s = %d and "
           "stays there (no epilogue)\n", cells_word, what,
           cs_ar_signal_final(c));
  else if (ok)
    printf("signals: %s reached %s = %d, then the epilogue "
           "returned all %llu cells to 0\n", cells_word, what,
           cs_ar_signal_final(c), (unsigned long long)(cells * n));
  else
    print_signals_wrong(rj);
}

/* The signals (a registration's against signal_final, or 0) and the
 * repeated calls (a built-in's with the first element that changed). */
static void print_signals(const run_job_t *rj)
{
  const cs_coll_job_t *cj = &rj->cj;
  const cs_collective_t *coll = rj->o.coll;
  if (cj->is_ar)
    print_signals_ar(rj);
  else if (coll->signal_slot == CS_COLL_NO_SIGNALS)
    printf("signals: none declared\n");
  else if (cj->signals_bad == 0)
    printf("signals: every cell at its final value (%s)\n",
           coll->signal_final ? "signal_final" : "0, self-cleared");
  else
    printf("signals: WRONG: %llu cell%s not at the final value; first: rank "
           "%lld cell %llu holds %d, expected %d\n",
           (unsigned long long)cj->signals_bad, cj->signals_bad == 1 ? "" : "s",
           (long long)cj->sig_rank, (unsigned long long)cj->sig_cell,
           cj->sig_got, cj->sig_want);
  if (!cj->differ)
    return;
  printf("repeated calls: WRONG: %u call%s gave a result different from "
         "the first", cj->differ, cj->differ == 1 ? "" : "s");
  const cs_rank_stats_t *st = cj->differ_st;
  if (st) {
    cs_dtype_t t = rj->o.cfg.dtype;
    printf("; first: call %u on rank %lld, index %llu: call 1 ",
           st->differ_call + 1, (long long)cj->differ_rank,
           (unsigned long long)st->differ_i);
    print_bits(t, &st->differ_first, 0);
    printf(", call %u ", st->differ_call + 1);
    print_bits(t, &st->differ_got, 0);
  }
  printf("\n");
}

/* --output: every rank's result. Returns the exit code given the
 * verdict `code` (a wrong result stays the verdict). */
static int write_output(const run_job_t *rj, const cs_pipe_t *p, int code)
{
  const run_opts_t *o = &rj->o;
  const cs_ar_cfg_t *c = &o->cfg;
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  char why[256];
  uint8_t *res = malloc(bytes * n);
  if (!res) {
    cs_cli_error(o->cmd, "out of memory for the output");
    return CS_EXIT_ABORTED;
  }
  for (uint32_t r = 0; r < n; r++)
    memcpy(res + r * bytes, cs_world_output(&p->world, r), bytes);
  if (cs_npy_write(o->output, c->dtype, n, c->count, res, why, sizeof(why)) < 0) {
    cs_cli_error(o->cmd, "--output %s", why);
    if (code == CS_EXIT_OK)
      code = CS_EXIT_USAGE;
  }
  free(res);
  return code;
}

/* Prints the mode and the summary, writes --output (a built-in's only:
 * parse refuses it for a plug-in). Returns the exit code. */
static int run_report(cs_pipe_t *p, void *ctx)
{
  run_job_t *rj = ctx;
  print_mode(rj);
  print_head(rj);
  print_result(rj, p);
  print_signals(rj);
  int code = cs_coll_job_ok(&rj->cj) ? CS_EXIT_OK : CS_EXIT_WRONG;
  return rj->o.output ? write_output(rj, p, code) : code;
}

/* ------------------------------------------------------------ the run */

/* Words the step the pipeline stopped at. Returns the exit code. */
static int run_failed(const run_job_t *rj, const cs_pipe_t *p)
{
  const run_opts_t *o = &rj->o;
  const cs_ar_cfg_t *c = &o->cfg;
  switch (p->failed) {
  case CS_PIPE_WORLD:
    if (o->coll) {
      cs_cli_error(o->cmd, "cannot make %u windows of %llu bytes for %s: %s",
                   c->nranks, (unsigned long long)rj->cj.l.win_bytes,
                   o->coll->name, cs_strerror(p->err));
    } else if (p->err == CS_ETOOBIG || p->err == -ENOENT) {
      char why[512];
      cs_world_explain_error(why, sizeof why, &rj->cj.l, c->nranks,
                             &rj->cj.job.wo, p->err);
      cs_cli_error(o->cmd, "cannot create the shared memory: %s", why);
    } else {
      cs_cli_error(o->cmd, "cannot hold %u windows of %llu bytes: %s",
                   c->nranks, (unsigned long long)rj->cj.l.win_bytes,
                   cs_strerror(p->err));
    }
    return CS_EXIT_USAGE;
  case CS_PIPE_INPUTS:
    if (p->err == -ENOMEM && o->coll) {
      cs_cli_error(o->cmd, "out of memory for the inputs");
      return CS_EXIT_ABORTED;
    }
    if (p->err == -ENOMEM) {
      cs_cli_error(o->cmd, "out of memory for %u x %llu bytes of input",
                   c->nranks, (unsigned long long)rj->cj.job.input_bytes);
      return CS_EXIT_ABORTED;
    }
    if (o->input)
      cs_cli_error(o->cmd, "--input %s differs from the recorded run's "
                   "inputs (input hash mismatch): expected the same file",
                   o->input);
    else
      cs_cli_error(o->cmd, "the inputs differ from the recorded run's (input "
                   "hash mismatch)");
    return CS_EXIT_USAGE;
  case CS_PIPE_TRACER:
    return cs_cli_tracer_open_exit(o->cmd, p);
  case CS_PIPE_LAUNCH:
  case CS_PIPE_TRACE_CLOSE:
    return cs_cli_pipe_launch_exit(o->cmd, p);
  case CS_PIPE_VERIFY:
    cs_cli_error(o->cmd, "out of memory for the verification");
    return CS_EXIT_ABORTED;
  default:
    return p->reported;
  }
}

/* The output rule for --output and --trace, before anything runs: neither
 * names a file the run reads (--input, the replayed trace, the --algo
 * shared object) nor the other. 0 or -1 (printed). */
static int outputs_ok(const run_opts_t *o)
{
  cs_cli_input_t in[4];
  int n = 0;
  if (o->input)
    in[n++] = (cs_cli_input_t){"--input", o->input, 0};
  if (o->replay_file)
    in[n++] = (cs_cli_input_t){"replayed trace", o->replay_file, 0};
  if (o->coll)
    in[n++] = (cs_cli_input_t){"--algo", o->coll_path, 0};
  if (o->output && cs_cli_output_ok(o->cmd, "--output", o->output, in, n, 1) < 0)
    return -1;
  if (o->output)
    in[n++] = (cs_cli_input_t){"--output", o->output, 1};
  if (o->com.trace &&
      cs_cli_output_ok(o->cmd, "--trace", o->com.trace, in, n, 0) < 0)
    return -1;
  return 0;
}

int cs_run_execute(run_opts_t *o_)
{
  if (outputs_ok(o_) < 0)
    return CS_EXIT_USAGE;
  run_job_t rj = {.o = *o_}; /* a copy: its pointers are the caller's */
  int code = rj.o.coll ? check_coll(&rj) : check(&rj);
  if (code == CS_EXIT_OK) {
    make_job(&rj);
    cs_pipe_t p;
    cs_pipe_run(&p, &rj.cj.job);
    if (cs_pipe_launched(&p)) {
      o_->abort_reason = p.res.aborted ? p.res.abort_reason : 0;
      o_->sched_steps = p.events;
      o_->steps_taken = p.res.steps;
    }
    code = run_failed(&rj, &p);
  }
  if (rj.cj_made)
    cs_coll_job_fini(&rj.cj);
  free(rj.in.data);
  return code;
}

int cs_run_checked(run_opts_t *o)
{
  char dir[4200] = "", tmp[4300];
  if (!o->com.trace) {
    int err = cs_cli_temp(dir, sizeof dir, cs_cli_tmpdir(),
                          "collsim-run-check-", "", 1, 0);
    if (err < 0) {
      cs_cli_error(o->cmd, "--check: cannot make a temporary directory in "
                   "'%s': %s; expected $TMPDIR (or /tmp when it is unset) to "
                   "name a writable directory", cs_cli_tmpdir(), strerror(-err));
      return CS_EXIT_USAGE; /* the environment is input, as bench says */
    }
    snprintf(tmp, sizeof(tmp), "%s/run.cstrace", dir);
    o->com.trace = tmp;
  }
  int rc = cs_run_execute(o);
  struct stat sb;
  if (stat(o->com.trace, &sb) == 0 && rc != CS_EXIT_USAGE) {
    printf("check:\n");
    fflush(stdout);
    int ck = cs__check_path(o->com.trace, 0, stdout);
    if (rc == CS_EXIT_OK && ck != CS_EXIT_OK)
      rc = ck == CS_EXIT_WRONG ? CS_EXIT_WRONG : CS_EXIT_ABORTED;
  }
  if (dir[0]) {
    unlink(tmp);
    rmdir(dir);
    o->com.trace = NULL;
  }
  return rc;
}

int cs_run_check_mem(run_opts_t *o)
{
  cs_trace_t t = {0};
  o->trace_mem = &t;
  int rc = cs_run_execute(o);
  o->trace_mem = NULL;
  if (rc == CS_EXIT_OK) {
    cs_check_report_t rep;
    int ck = cs_check_run(&t, &rep);
    if (ck < 0)
      rc = CS_EXIT_ABORTED;
    else if (rep.n)
      rc = CS_EXIT_WRONG;
    cs_check_report_fini(&rep);
  }
  cs_trace_free(&t);
  return rc;
}

int cs_run_parse(int argc, char **argv, run_opts_t *o)
{
  return cs_run_parse_as("run", argc, argv, o);
}

int cs_run_parse_as(const char *cmd, int argc, char **argv, run_opts_t *o)
{
  parse_cmd = cmd;
  *o = (run_opts_t){0};
  o->cfg.algo = CS_DEFAULT_ALGO;
  o->cfg.dtype = CS_FP32;
  o->cfg.op = CS_SUM;
  o->cfg.nranks = 4;
  o->cfg.count = 65537;
  o->cfg.tile_bytes = CS_TILE_BYTES;
  o->cfg.iters = 10;
  o->seed = 1;
  o->cmd = cmd;
  return parse(argc, argv, o);
}

int cs_cmd_run(int argc, char **argv)
{
  run_opts_t o;
  int rc = cs_run_parse(argc, argv, &o);
  if (rc != 0) {
    cs_coll_close(o.coll_handle);
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  }
  if (o.replay_file) {
    char why[512];
    cs_trace_diag_t d;
    rc = CS_EXIT_USAGE;
    if (cs_trace_load(o.replay_file, &o.replay, &d) < 0) {
      cs_trace_strerror(&d, why, sizeof(why));
      cs_cli_error(parse_cmd, "--schedule replay: %s", why);
      goto out;
    }
    /* A run past a cut trace's end diverges: say the trace is short. */
    cs_cli_partial(o.cmd, o.replay_file, &o.replay.hdr, o.replay.n);
    if (cs_run_replay_steps(&o) < 0)
      goto out;
  }
  rc = o.check ? cs_run_checked(&o) : cs_run_execute(&o);
out:
  cs_coll_close(o.coll_handle);
  free(o.steps);
  cs_trace_free(&o.replay);
  return rc;
}

int cs_run_replay_steps(run_opts_t *o)
{
  uint64_t k = 0;
  o->steps = malloc((o->replay.n ? o->replay.n : 1) * sizeof(cs_trace_rec_t));
  if (!o->steps) {
    cs_cli_error(o->cmd, "out of memory");
    return -1;
  }
  for (uint64_t i = 0; i < o->replay.n; i++)
    if (cs_sched_is_step(o->replay.rec[i].kind))
      o->steps[k++] = o->replay.rec[i];
  o->sched.replay = o->steps;
  o->sched.nreplay = k;
  o->sched.strategy = CS_SCHED_REPLAY;
  return 0;
}
