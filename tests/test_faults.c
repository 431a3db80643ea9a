/*
 * test_faults.c - the fault matrix: every algorithm (mesh, ring, host) on
 * 2 to 5 ranks, every injected fault kind (segv, abort, exit, hang) at
 * event 0, mid-run, the rank's last event and past it, with and without
 * --trace. Each run must exit 3 within 2 s (a crash) or the timeout plus
 * 2 s (a hang), name the faulting rank on its first line, leave
 * no /dev/shm name (the harness) and no process behind (this test is the
 * subreaper of everything the launcher forks), and a trace that reads and
 * ends with the fault records and the abort.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sim/trace.h"
#include "harness.h"

static cli_out_t r, t;
static char dir[64];

static void setup(void)
{
  snprintf(dir, sizeof dir, "/tmp/collsim-faults-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  /* A rank that outlived its launcher would be re-parented here. */
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

static void teardown(void)
{
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

static const char *const head_of[] = {
    [0] = "killed by SIGSEGV", [1] = "killed by SIGABRT",
    [2] = "exited with status 4", [3] = "hung (injected fault)"};
static const char *const kind_of[] = {"segv", "abort", "exit", "hang"};

/* The last event index of `rank`: a fault aimed past it strikes there. */
static unsigned long long last_event(const char *algo, const char *n,
                                     unsigned rank)
{
  char fault[64];
  snprintf(fault, sizeof fault, "%u:exit:18446744073709551614", rank);
  run_cli(&r, 20, "run", "--algo", algo, "--ranks", n, "--count", "300",
          "--iters", "2", "--fault", fault, NULL);
  char want[64];
  snprintf(want, sizeof want, "rank %u: exited with status 4 at event ", rank);
  const char *p = strstr(r.err, want);
  cr_assert_not_null(p, "%s %s: %s", algo, n, r.err);
  return strtoull(p + strlen(want), NULL, 10);
}

/* The trace reads (here and for `collsim trace`), and ends with fault
 * records, one of them the faulting rank's, then the abort record. */
static void check_trace(const char *path, unsigned rank, const char *what)
{
  run_cli(&t, 30, "trace", path, NULL);
  cr_assert_eq(t.status, 0, "%s: trace unreadable: %s", what, t.err);
  cs_trace_t tr;
  char why[256];
  cr_assert_eq(load_trace(path, &tr, why, sizeof why), 0, "%s: %s", what,
               why);
  cr_assert_gt(tr.n, 1, "%s: %llu records", what, (unsigned long long)tr.n);
  cr_assert_eq(tr.rec[tr.n - 1].kind, CS_TR_ABORT, "%s: the last record is "
               "not the abort", what);
  int named = 0;
  uint64_t i = tr.n - 1;
  while (i > 0 && tr.rec[i - 1].kind == CS_TR_FAULT)
    named |= tr.rec[--i].rank == rank;
  cr_assert(i < tr.n - 1, "%s: no fault record before the abort", what);
  cr_assert(named, "%s: no fault record for rank %u", what, rank);
  for (uint64_t k = 0; k < i; k++)
    cr_assert(tr.rec[k].kind != CS_TR_FAULT && tr.rec[k].kind != CS_TR_ABORT,
              "%s: a launcher record before the end", what);
  cs_trace_free(&tr);
}

static void one_case(const char *algo, const char *n, unsigned kind,
                     unsigned rank, unsigned long long ev, int traced,
                     unsigned long long shown)
{
  char fault[64], what[160], path[128];
  snprintf(fault, sizeof fault, "%u:%s:%llu", rank, kind_of[kind], ev);
  snprintf(what, sizeof what, "%s --ranks %s --fault %s%s", algo, n, fault,
           traced ? " --trace" : "");
  snprintf(path, sizeof path, "%s/f.cstrace", dir);
  unlink(path);
  char *args[] = {"run", "--algo", (char *)algo, "--ranks", (char *)n,
                  "--count", "300", "--iters", "2", "--fault", fault,
                  "--timeout", "1", traced ? "--trace" : NULL, path, NULL};
  run_argv(&r, 20, args);
  cr_assert_eq(r.status, 3, "%s: exit %d: %s", what, r.status, r.err);
  /* The bounds are 1 s and timeout + 1 s; one more second of slack
   * for a CI machine shared with other jobs. */
  double bound = kind == 3 ? 1.0 + 2.0 : 2.0;
  cr_assert_lt(r.seconds, bound, "%s: took %.2f s", what, r.seconds);
  char want[96];
  snprintf(want, sizeof want, "rank %u: %s at event %llu", rank,
           head_of[kind], shown);
  cr_assert(strncmp(r.err, want, strlen(want)) == 0,
            "%s: the first line is not '%s...':\n%s", what, want, r.err);
  errno = 0;
  cr_assert(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD,
            "%s: a process outlived the launcher", what);
  if (traced)
    check_trace(path, rank, what);
}

static void matrix(const char *algo, unsigned kind)
{
  static const char *const ns[] = {"2", "3", "4", "5"};
  for (int i = 0; i < 4; i++) {
    unsigned rank = (unsigned)i + 1; /* the last rank */
    unsigned long long last = last_event(algo, ns[i], rank);
    const unsigned long long at[] = {0, last / 2, last, last + 1000};
    for (int k = 0; k < 4; k++)
      for (int traced = 0; traced < 2; traced++)
        one_case(algo, ns[i], kind, rank, at[k], traced,
                 at[k] > last ? last : at[k]);
  }
}

#define MATRIX(algo, kind, k)                                                  \
  Test(faults, algo##_##kind, .init = setup, .fini = teardown,                 \
       .timeout = 240)                                                         \
  {                                                                            \
    matrix(#algo, k);                                                          \
  }
MATRIX(mesh, segv, 0)
MATRIX(mesh, abort, 1)
MATRIX(mesh, exit, 2)
MATRIX(mesh, hang, 3)
MATRIX(ring, segv, 0)
MATRIX(ring, abort, 1)
MATRIX(ring, exit, 2)
MATRIX(ring, hang, 3)
MATRIX(host, segv, 0)
MATRIX(host, abort, 1)
MATRIX(host, exit, 2)
MATRIX(host, hang, 3)
