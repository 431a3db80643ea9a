/*
 * harness.h - running the real `collsim` binary from a Criterion test:
 * stdout and stderr captured, a kill timer, the child reaped, and a check
 * that it left no /collsim-<pid>-* name behind; and reading a trace
 * in-process with its refusal worded as the tools word it; and a shipped
 * trace with an edited header. Shared by the suites that test the command
 * line or read traces (cli, bench, trace, sched, reader, check, shrink, ...).
 */
#ifndef CS_TEST_HARNESS_H
#define CS_TEST_HARNESS_H

#include <stddef.h>
#include <sys/types.h>

typedef struct cli_out {
  int    status;  /* exit code, or 128 + signal */
  double seconds; /* wall time */
  pid_t  pid;     /* the process that ran */
  char   out[65536];
  char   err[16384];
} cli_out_t;

/* COLLSIM_QUICK set (and not "0"): the sweeps take a thinner sample (the
 * clang and sanitizer stages of CI, where every case costs several times
 * more); the main stage runs them whole. */
int quick_tests(void);

/* The binary under test: COLLSIM_BIN (set by ctest), else ./collsim. */
const char *bin_path(void);

/* Runs `collsim ARGS...` (NULL-terminated list / array), killing it after
 * timeout_s (a test failure). */
void run_cli(cli_out_t *r, double timeout_s, ...);
void run_argv(cli_out_t *r, double timeout_s, char *const args[]);

/* Refusals a machine may impose, emulated with a seccomp filter on the
 * child: exit status 125 where seccomp filters are not available, 126 if
 * the refusals were not in force. */
enum {
  CS_DENY_IO_URING = 1, /* io_uring_setup: EPERM (Docker's default profile) */
  CS_DENY_O_DIRECT = 2, /* O_DIRECT via fcntl: EINVAL */
  CS_DENY_IO_URING_ENTER = 4, /* io_uring_enter: EPERM (a ring set up, then
                                 every submission refused) */
};
void run_argv_denied(cli_out_t *r, double timeout_s, int deny,
                     char *const args[]);

/* Lines in s (newlines). */
int count_lines(const char *s);

/* A fresh directory /tmp/collsim-test-TAG-XXXXXX into dir (asserts). */
void temp_dir_for(const char *tag, char *dir, size_t n);
/* Files in dir whose names start with prefix; removes every file of dir
 * when remove is set. */
int files_in(const char *dir, const char *prefix, int remove);

/* In-process trace reading with the refusal worded as the tools word it
 * (cs_trace_strerror) into why, "" when there is none. Each returns the
 * reader's or loader's code. */
struct cs_trace;
struct cs_trace_reader;
int load_trace(const char *path, struct cs_trace *t, char *why, size_t n);
/* The first of the records both traces have that differ in a field but
 * the time and the checksum (which covers the time), or -1. */
int64_t first_unlike_record(const struct cs_trace *a, const struct cs_trace *b);
int open_reader(const char *path, unsigned flags, struct cs_trace_reader **rd,
                char *why, size_t n);
/* The refusal of the reader's last failed next(), worded; "" if none.
 * Valid until the next call. */
const char *reader_why(const struct cs_trace_reader *rd);

/* A shipped trace with its header changed by edit(h, arg) and resealed
 * (so it passes the checksum), written to a new temporary file: path is a
 * mkstemp template and gets the file's name (asserts; the caller unlinks
 * it). */
struct cs_trace_header;
void edited_trace(const char *shipped, char *path,
                  void (*edit)(struct cs_trace_header *h, void *arg),
                  void *arg);

#endif
