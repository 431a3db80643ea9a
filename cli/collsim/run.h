/*
 * run.h - the verified allreduce run that `collsim run`, `collsim replay`
 * and `collsim teach` share: the options, cs_run_execute() (checks, the
 * run's job on the pipeline of run/pipeline.h, the summary) and the
 * replay schedule taken from a loaded trace.
 */
#ifndef CS_RUN_H
#define CS_RUN_H

#include <stdio.h>

#include "../../collectives/allreduce.h"
#include "../../include/collsim/collective.h"
#include "../../sim/sched.h"
#include "../../sim/trace.h"
#include "cli.h"
#include "../../run/pipeline.h"

typedef struct run_opts {
  const char *cmd;          /* subcommand name for messages */
  cs_ar_cfg_t cfg;          /* cfg.algo unused with coll */
  const cs_collective_t *coll; /* --algo ./x.so: its registration, else NULL */
  void *coll_handle;        /* what cs_coll_open loaded (the caller closes) */
  char coll_path[4096];     /* its absolute path */
  uint8_t coll_sha256[32];  /* the SHA-256 of that file, hashed before loading */
  uint8_t want_sha256[32];  /* --algo-sha256 / a replayed trace's: the hash */
  int want_sha;             /* the --algo file must have (refused otherwise) */
  int trust_algo;           /* --trust-algo: load a trace's collective that
                               has no recorded hash (a version-4 trace) */
  cs_cli_common_t com;
  cs_fill_t fill;
  uint64_t seed;
  const char *input, *output;
  int have_ranks, have_count, have_dtype, have_iters;
  int have_shape, have_valid; /* --shape, --valid given */
  int have_signals, have_minmax; /* --signals, --minmax given (the
                                   built-ins' options: a plug-in is refused) */
  cs_sched_cfg_t sched;     /* strategy CS_SCHED_FREE = free mode */
  const char *schedule_str; /* as given */
  int model_set;
  int verbose_mode;
  int check;                /* --check: check the run's own trace at the end */
  const char *replay_file;  /* --schedule replay:FILE */
  cs_trace_t replay;        /* the loaded trace */
  cs_trace_rec_t *steps;    /* its step records, in seq order */
  uint64_t expect_hash;     /* replay: input hash the trace was made with */
  cs_pipe_keep_t *keep;     /* untraced runs of one configuration in a row
                               (explore's batches): keep the world and its
                               ranks there for the next (run/pipeline.h);
                               NULL = a fresh world per run */
  cs_trace_t *trace_mem;    /* without --trace: record the run into memory
                               and hand its records over here (run/pipeline.h;
                               cs_run_check_mem); NULL = none */
  /* results */
  uint32_t abort_reason;    /* CS_ABORT_* if the run was aborted */
  uint64_t sched_steps;     /* events recorded (global sequence numbers used) */
  uint64_t steps_taken;     /* controlled: scheduling steps taken (replay: the
                               recorded steps it followed) */
} run_opts_t;

/* Runs o (checks, world, inputs, launch, verification, summary); prints
 * every message and returns the exit code. Sets o's results; leaves its
 * other fields as they were. */
int cs_run_execute(run_opts_t *o);
/* The defaults of `collsim run`, then its options argv[1..argc) (argv[0]
 * is skipped). Returns 0 to run, 1 when done (help, the bug list), -1 on
 * bad usage (printed). */
int cs_run_parse(int argc, char **argv, run_opts_t *o);
/* The same, for subcommand `cmd` (explore checks the run options it will
 * pass on): its messages name cmd. */
int cs_run_parse_as(const char *cmd, int argc, char **argv, run_opts_t *o);
/* --check: cs_run_execute, then the check of the run's trace (a temporary
 * one when o->com.trace is NULL), printed after "check:". A finding turns
 * a passing run into exit 1; a run that failed keeps its own exit code. */
int cs_run_checked(run_opts_t *o);
/* explore --check's passing path: cs_run_execute with the run recorded
 * into memory (no file; o->keep's world is kept) and its records checked
 * there, nothing of the check printed. Returns the run's exit code, or,
 * for a run that passed, CS_EXIT_WRONG when the check has a finding (or
 * cannot be made: then also CS_EXIT_ABORTED). A failure is to be run again
 * with cs_run_checked to word it and keep its trace. The built-in
 * collectives only: a plug-in (--algo ./x.so) goes through
 * cs_run_checked. */
int cs_run_check_mem(run_opts_t *o);
/* Extracts the schedule steps of o->replay into o->steps / o->sched.
 * Returns 0 or -1 (printed). */
int cs_run_replay_steps(run_opts_t *o);
void cs_run_list_bugs(FILE *out);
/* Loads the shared object `arg` of --algo into o (coll, coll_handle,
 * coll_path), closing one loaded before. Returns 0 or -1 (one line
 * printed: the file is missing, not a shared object, without the
 * registration symbol, or of another ABI version). */
int cs_run_load_algo(run_opts_t *o, const char *arg);
/* --algo ARG's file, resolved into path (PATH_MAX bytes): not another
 * user's symbolic link, and a regular file (a FIFO or a device would
 * block or never end the load). 0, or -1 after one line naming cmd and
 * arg. */
int cs_run_algo_path(const char *cmd, const char *arg, char *path);
/* The one line for cs_coll_open's refusal `why` of --algo ARG (loaded
 * from its resolved path): names ARG as given. */
void cs_run_algo_error(const char *cmd, const char *arg, const char *path,
                       const char *why);
/* Loads the collective at path (cs_coll_open) under collsim's crash
 * guard: a SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT in its constructor,
 * or later in its own code run in this process (refuse, slots,
 * signal_final, expect), ends the command with one line naming it and cmd,
 * exit 3. 0, or what cs_coll_open returned with why filled. */
int cs_run_open_guarded(const char *cmd, const char *path,
                        const cs_collective_t **coll, void **handle, char *why,
                        size_t n);
/* Where that crash's line goes: fd (default 2, stderr); verify gives
 * its real stderr while the runs' output is captured. */
void cs_run_plug_fd(int fd);
/* Before `cmd` loads the collective `so` a trace's header names: the file
 * must have the SHA-256 the trace recorded (`rec`; all zero: none, taken
 * only when `trust` is set). Prints one line on stderr either way: the
 * library it is about to load and its hash, or why it refuses. Returns 0,
 * or -1 (refused; exit 2). Does not load it. */
int cs_run_algo_vouched(const char *cmd, const char *trace, const char *so,
                        const uint8_t rec[32], int trust);

#endif
