/*
 * cli.h - shared command-line plumbing of the collsim tool: exit codes,
 * strict number parsing with one-line errors, the options every
 * rank-running subcommand takes (--fault, --timeout, --trace), and the
 * wordings of the run pipeline's failures (run/pipeline.h) that several
 * subcommands share. The edge where codes become messages: nothing below
 * it prints. Used by every command file in cli/.
 */
#ifndef CS_CLI_H
#define CS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/dtype.h"
#include "../../sim/launch.h"
#include "../../run/exit.h"
#include "../../run/pipeline.h"

/* Prints a subcommand's help text to stdout; a line that is exactly
 * "@ALGOS@" becomes one line per built-in algorithm (registry order),
 * its name and its one-line description, indented by the spaces of the
 * line before it that start its text (`indent` columns). */
void cs_cli_help(const char *text, int indent);

/* When the trace at path (header h, n records) is partial
 * (cs_trace_is_partial: its run was killed, it is still being written, or
 * it was cut since), says so in one line on stderr, "collsim CMD: PATH is
 * partial: ...", and returns 1; else 0, printing nothing. */
struct cs_trace_header;
int cs_cli_partial(const char *cmd, const char *path,
                   const struct cs_trace_header *h, uint64_t n);

/* The one line for an option getopt_long refused (opterr 0): unknown, or
 * its value missing; names the subcommand and the option as given (from
 * the subcommand's arguments, which main hands over with cs_cli_args). */
void cs_cli_bad_option(const char *cmd);
void cs_cli_args(int argc, char **argv);

/* Prints "collsim CMD: <message>" to stderr. */
void cs_cli_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a whole decimal number in [lo, hi] for option `opt`. On failure
 * prints one line naming the value and the accepted range; returns -1. */
int cs_cli_u64(const char *cmd, const char *opt, const char *s, uint64_t lo,
               uint64_t hi, uint64_t *out);
int cs_cli_u32(const char *cmd, const char *opt, const char *s, uint32_t lo,
               uint32_t hi, uint32_t *out);
/* Bytes with an optional binary K/M/G suffix (either case), in [1, hi]
 * (hi a whole number of GiB). On failure prints one line naming the value
 * and the range; returns -1. */
int cs_cli_bytes(const char *cmd, const char *opt, const char *s, uint64_t hi,
                 uint64_t *out);
/* A dtype, op or memory-model name for option `opt`. On failure prints
 * one line naming the value and the accepted names; returns -1. */
int cs_cli_dtype(const char *cmd, const char *opt, const char *s, cs_dtype_t *out);
int cs_cli_op(const char *cmd, const char *opt, const char *s, cs_op_t *out);
int cs_cli_mm(const char *cmd, const char *opt, const char *s, cs_mm_t *out);
/* --signals single-use|self-clearing: *no_epilogue = 1 for single-use.
 * --minmax ieee|propagate|pto. On failure one line; returns -1. */
int cs_cli_signals(const char *cmd, const char *opt, const char *s,
                   uint32_t *no_epilogue);
/* --signal-layout: "packed" (0) or "padded" (1, a 64-byte line per
 * signal cell) into *padded; 0, or -1 (printed). */
int cs_cli_signal_layout(const char *cmd, const char *opt, const char *s,
                         uint32_t *padded);
int cs_cli_minmax(const char *cmd, const char *opt, const char *s,
                  uint32_t *out);
/* The trace header's modes word of c (format.h CS_TR_MODE_*); whether a
 * modes word holds only known modes (0, or -1); and c's modes from one. */
uint32_t cs_cli_modes(const cs_ar_cfg_t *c);
int cs_cli_modes_check(uint32_t modes);
void cs_cli_modes_apply(uint32_t modes, cs_ar_cfg_t *c);

/* The sentence for cs_ar_check's refusal `rc` of `c` ("--ranks 17 is not
 * accepted ..."), into buf. */
void cs_cli_ar_why(const cs_ar_cfg_t *c, int rc, char *buf, size_t n);
/* The one line for cs_sched_parse's refusal of --schedule `s`. */
void cs_cli_schedule_error(const char *cmd, const char *s);
/* A memory model other than sc only means something in controlled mode:
 * without a schedule, prints one line saying so and returns -1. */
int cs_cli_mm_scheduled(const char *cmd, cs_mm_t model, int scheduled);

/* Positive seconds (decimal fraction allowed), up to `hi`. */
int cs_cli_seconds(const char *cmd, const char *opt, const char *s, double hi,
                   uint64_t *ns);

/* Options shared by every subcommand that runs ranks. */
typedef struct cs_cli_common {
  cs_fault_t fault;
  int        has_fault;
  uint64_t   timeout_ns;
  const char *trace;      /* --trace FILE, or NULL */
} cs_cli_common_t;

/* The sentence for cs_fault_parse's refusal `rc` of `s` ("bad fault 'S':
 * ..."), into buf. */
void cs_cli_fault_why(const char *s, int rc, char *buf, size_t n);
/* Handles --fault and --timeout; returns 1 if `opt` was one of them (0 on
 * success, -1 on a bad value via *bad), 0 otherwise. */
int cs_cli_common_opt(const char *cmd, int opt, const char *arg,
                      cs_cli_common_t *c, int *bad);
/* A file a subcommand reads (or writes before another output), which no
 * output may name: its option ("--input", "TRACE") and path; output: it is
 * itself an output (the refusal says one would replace the other). */
typedef struct cs_cli_input {
  const char *opt;
  const char *path;
  int output;
} cs_cli_input_t;
/* explore's and verify's -o DIR, before any work: a writable directory,
 * named directly or through links of ours only (another user's link
 * would let that user pick where our files go). 0, or -1 after one line
 * naming cmd and dir. */
int cs_cli_output_dir(const char *cmd, const char *dir);

/* The output rule (cs_output_check) for `opt path` of cmd, before any
 * work starts: not one of the n files in `in` (in may be NULL when n is
 * 0), a name (not empty), new or a regular file of ours with no other hard links, and
 * with `renamed` (the file is written beside it and renamed over it) a
 * writable directory. Returns 0, or -1 after one line naming cmd, opt,
 * path and what is accepted. */
int cs_cli_output_ok(const char *cmd, const char *opt, const char *path,
                     const cs_cli_input_t *in, int n, int renamed);
/* The one line for a refusal `err` of the output rule, or another error
 * creating `opt path` ("cannot create: ..."). */
void cs_cli_output_error(const char *cmd, const char *opt, const char *path,
                         int err);
/* Single-use signals (c->no_epilogue): one call per world (a second
 * call's waits would pass on the first call's credits), so --iters is 1
 * unless given (have_iters), and more than one call (asked for, or a
 * defect that needs two) is refused. Shared by collsim run and
 * collsim-mpi run. Returns 0 or -1 (printed). */
/* --shape ROWSxCOLS (sep 'x') and --valid R,C (sep ','): two decimal
 * u32s joined by `sep`; --shape's at least 1 (--valid's ranges are
 * cs_ar_check's). On failure one line; returns -1. */
int cs_cli_pair(const char *cmd, const char *opt, const char *s, char sep,
                uint32_t lo, uint32_t *a, uint32_t *b);

/* After the options: --valid needs --shape; the count is ROWS*COLS (a
 * --count that disagrees is refused: have_count); no --valid: the whole
 * shape. Returns 0, or -1 after one line. */
int cs_cli_shape_resolve(const char *cmd, cs_ar_cfg_t *c, int have_shape,
                         int have_valid, int have_count);

/* The §3.3 shape and valid rectangle into / out of a trace header
 * (shape_rows .. valid_cols; all 0: none). */
void cs_cli_shape_to_header(const cs_ar_cfg_t *c, cs_trace_header_t *h);
void cs_cli_shape_from_header(const cs_trace_header_t *h, cs_ar_cfg_t *c);

/* The built-in allreduce run a trace header describes, into c, checked as
 * `collsim run` checks its options (cs_ar_check, at most 1000000 calls,
 * the fault rank below nranks). Returns 0, or -1 with the reason in why
 * (the caller prints it). */
int cs_cli_header_cfg(const cs_trace_header_t *h, cs_ar_cfg_t *c, char *why,
                      size_t n);

int cs_cli_single_use_check(const char *cmd, cs_ar_cfg_t *c, int have_iters);
/* Validates the fault rank against nranks. Returns 0 or -1 (printed). */
int cs_cli_common_check(const char *cmd, const cs_cli_common_t *c,
                        uint32_t nranks);

#define CS_OPT_FAULT   1001
#define CS_OPT_TIMEOUT 1002
#define CS_OPT_TRACE   1003
#define CS_CLI_COMMON_LONGOPTS                                                 \
  {"fault", required_argument, 0, CS_OPT_FAULT},                               \
  {"timeout", required_argument, 0, CS_OPT_TIMEOUT},                           \
  {"trace", required_argument, 0, CS_OPT_TRACE}

/* --fault and --timeout; CS_CLI_COMMON_HELP adds --trace. */
#define CS_CLI_FAULT_TIMEOUT_HELP                                              \
  "  --fault RANK:KIND[:EVENT]\n"                                              \
  "                   inject a fault: rank RANK, when it begins device-API\n"  \
  "                   event number EVENT (default 0; if the rank performs\n"   \
  "                   fewer events it strikes as the rank finishes), does\n"   \
  "                   KIND: segv (raise SIGSEGV), abort (abort()), exit\n"     \
  "                   (exit with status 4) or hang (stop making progress;\n"   \
  "                   found by the wait timeout)\n"                            \
  "  --timeout SECONDS\n"                                                      \
  "                   wait timeout; a wait that exceeds it aborts the run\n"   \
  "                   and prints the hang wavefront (default 30)\n"

#define CS_CLI_COMMON_HELP CS_CLI_FAULT_TIMEOUT_HELP CS_CLI_TRACE_HELP

#define CS_CLI_TRACE_HELP                                                      \
  "  --trace FILE     record every device event of every rank to FILE (the\n" \
  "                   transfer log; see 'collsim trace'); written even when\n" \
  "                   the run aborts, ending with the fault\n"

#define CS_CLI_EXIT_HELP                                                       \
  "Exit status: 0 success (result verified), 1 wrong result, 2 bad usage\n"   \
  "or input, 3 run aborted (a rank crashed, hung or faulted).\n"

/* Blocks SIGINT, SIGTERM and SIGHUP in this process: a command that runs
 * many runs one after the other looks for them between runs
 * (cs_cli_stop_pending), and the launcher aborts the run in progress. */
void cs_cli_block_stops(void);
/* The stop signal pending while blocked (SIGINT, SIGTERM, SIGHUP), or 0. */
int cs_cli_stop_pending(void);

/* Maps cs_launch()'s result to an exit code (0, or CS_EXIT_ABORTED after
 * the failure was reported; prints start-up errors). */
int cs_cli_launch_exit(const char *cmd, int launch_rc);
/* The wordings of a pipeline's tracer and launch steps shared by the
 * subcommands with --trace FILE. After CS_PIPE_TRACER: one line, returns
 * CS_EXIT_USAGE. After CS_PIPE_LAUNCH or CS_PIPE_TRACE_CLOSE: a line for
 * ranks that could not start and one for a failed trace write, in that
 * order; returns CS_EXIT_ABORTED. */
int cs_cli_tracer_open_exit(const char *cmd, const cs_pipe_t *p);
int cs_cli_pipe_launch_exit(const char *cmd, const cs_pipe_t *p);

/* Subcommands. */
int cs_cmd_ping(int argc, char **argv);
int cs_cmd_run(int argc, char **argv);
int cs_cmd_clean(int argc, char **argv);
int cs_cmd_replay(int argc, char **argv);
int cs_cmd_explore(int argc, char **argv);
/* `collsim verify` (cli/collsim/verify.c). */
int cs_cmd_verify(int argc, char **argv);
/* explore's batch child: argv[0] the schedule list, then run options
 * (cli/collsim/explore_batch.c). */
int cs__explore_batch(int argc, char **argv);
int cs_cmd_shrink(int argc, char **argv);
int cs_cmd_teach(int argc, char **argv);
int cs_cmd_bench(int argc, char **argv);
int cs_cmd_trace(int argc, char **argv);
int cs_cmd_check(int argc, char **argv);
/* Checks the trace at `path` and prints the report to f (text, or JSON
 * lines); returns the check exit code: 0 none, 1 findings, 2 bad trace,
 * 3 out of memory (cli/collsim/check.c). */
int cs__check_path(const char *path, int jsonl, FILE *f);
/* The one finding of the trace at `path` about a given edge, in the text
 * form: of kind `kind` (cs_check_kind_t) and, for races, cause `cause`
 * (cs_check_cause_t); the one that bit in this run (a race the run did in
 * the reverse order, on any ranks) before one that did not. Prints it
 * and the report's summary line to f; returns 0 when one was found, 1
 * when none is about that edge (the first finding is printed, if any),
 * or the check exit code 2 or 3. For teach's break-it levels, whose
 * verdict is about the edge the level removed. */
int cs__check_focus(const char *path, uint32_t kind, uint32_t cause, FILE *f);
/* The collectives' names of trace fields, for every reader of a trace in
 * cli/ (cli/collsim/trace_cmd.c). */
const struct cs_trace_names *cs__trace_names(void);

#endif
