/*
 * test_wavefront.c - the hang wavefront in the algorithm's terms, checked
 * on injected hangs whose answer is known by construction: a rank hangs at
 * the first notify of a chosen barrier, found in the trace of the same run
 * without the fault, so every other rank must be blocked in that barrier on
 * the hung rank's cell, one notify short, and the last notify that cell got
 * is the hung rank's notify of the barrier before, whose event index the
 * trace gives. Every line of the wavefront is checked, one per rank (four
 * ranks, so a missing middle rank fails). Runs the real binary
 * (COLLSIM_BIN) through the harness.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/allreduce.h"
#include "../sim/trace.h"
#include "harness.h"

static cli_out_t r;
static char dir[64];

static void make_dir(void)
{
  snprintf(dir, sizeof dir, "/tmp/collsim-wave-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}
static void remove_dir(void)
{
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

TestSuite(wavefront, .init = make_dir, .fini = remove_dir, .timeout = 120);

#define NR 4
#define HUNG 2

/* Rank HUNG's notifies to the signal slot in a clean run's trace, by
 * barrier: ev[g][p] is the rank's event index (its device events counted
 * in order: kinds 1..8) of its notify to peer p in barrier g. Returns the
 * barriers seen. */
static int hung_notifies(const char *path, uint64_t ev[][NR], int maxg)
{
  cs_trace_t t;
  char why[512];
  cr_assert_eq(load_trace(path, &t, why, sizeof why), 0, "%s", why);
  uint64_t idx = 0;
  int g = -1, in_group = 0;
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    if (x->rank != HUNG || x->kind < 1 || x->kind > 8)
      continue;
    if (x->kind == CS_EV_NOTIFY && x->slot == CS_AR_SLOT_SIGNAL &&
        x->peer != HUNG) {
      if (!in_group && ++g >= maxg)
        break;
      in_group = 1;
      ev[g][x->peer] = idx;
    } else if (x->kind != CS_EV_NOTIFY) {
      in_group = 0;
    }
    idx++;
  }
  cs_trace_free(&t);
  return g + 1 > maxg ? maxg : g + 1;
}

/* The wavefront's lines, one per rank in order, into line[]; fails unless
 * there are exactly NR of them, for ranks 0..NR-1. */
static void wavefront_lines(const char *err, char line[NR][512])
{
  const char *p = strstr(err, "hang wavefront:\n");
  cr_assert_not_null(p, "no wavefront:\n%s", err);
  p += strlen("hang wavefront:\n");
  int n = 0;
  while (*p == ' ' && p[1] == ' ') {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    cr_assert_lt(n, NR, "more than %d wavefront lines:\n%s", NR, err);
    snprintf(line[n], 512, "%.*s", (int)len, p);
    char want[32];
    snprintf(want, sizeof want, "  rank %d: ", n);
    cr_assert(!strncmp(line[n], want, strlen(want)),
              "wavefront line %d is not rank %d's:\n%s", n, n, err);
    n++;
    p += len + (eol != NULL);
  }
  cr_assert_eq(n, NR, "%d wavefront lines for %d ranks:\n%s", n, NR, err);
}

/* Runs `collsim run ARGS --iters 1 --trace PATH` (no fault) and returns
 * the hung rank's notify events by barrier. */
static int clean_run(char *const args[], int nargs, uint64_t ev[][NR], int maxg)
{
  char path[128];
  snprintf(path, sizeof path, "%s/clean.cstrace", dir);
  char *argv[32];
  int k = 0;
  argv[k++] = "run";
  for (int i = 0; i < nargs; i++)
    argv[k++] = args[i];
  argv[k++] = "--iters", argv[k++] = "1", argv[k++] = "--trace";
  argv[k++] = path;
  argv[k] = NULL;
  run_argv(&r, 60, argv);
  cr_assert_eq(r.status, 0, "%s", r.err);
  return hung_notifies(path, ev, maxg);
}

static void hang_run(char *const args[], int nargs, uint64_t at)
{
  char fault[64];
  snprintf(fault, sizeof fault, "%d:hang:%llu", HUNG, (unsigned long long)at);
  char *argv[32];
  int k = 0;
  argv[k++] = "run";
  for (int i = 0; i < nargs; i++)
    argv[k++] = args[i];
  argv[k++] = "--iters", argv[k++] = "1", argv[k++] = "--fault";
  argv[k++] = fault, argv[k++] = "--timeout", argv[k++] = "1";
  argv[k] = NULL;
  run_argv(&r, 60, argv);
  cr_assert_eq(r.status, 3, "%s", r.err);
}

/* Mesh: barrier 0 is the ready barrier, barrier 1 + c the read-complete of
 * chunk c. Rank HUNG hangs at its first notify of chunk 1's: every other
 * rank waits there on cell HUNG for 3 (ready + chunks 0 and 1), sees 2,
 * and that cell's last notify is HUNG's of chunk 0's barrier. */
Test(wavefront, mesh_names_the_barrier_the_value_and_the_last_notifier)
{
  char *args[] = {"--algo", "mesh", "--ranks", "4", "--count", "600",
                  "--tile-bytes", "1024"};
  uint64_t ev[4][NR] = {{0}};
  cr_assert_eq(clean_run(args, 8, ev, 4), 4, "three chunks expected");
  hang_run(args, 8, ev[2][0]);
  char line[NR][512];
  wavefront_lines(r.err, line);
  for (int p = 0; p < NR; p++) {
    char want[256];
    if (p == HUNG) {
      snprintf(want, sizeof want, "  rank %d: hung (injected fault) at event "
               "%llu", HUNG, (unsigned long long)ev[2][0]);
      cr_assert_str_eq(line[p], want);
      continue;
    }
    snprintf(want, sizeof want, "in wait(signal[%d] >= 3): cell is 2, "
             "expected >= 3; read-complete of chunk 1, rank %d's notify; "
             "last notified by rank %d at its event %llu", HUNG, HUNG, HUNG,
             (unsigned long long)ev[1][p]);
    cr_assert(strstr(line[p], "blocked at event") && strstr(line[p], want),
              "rank %d: expected '...%s', got\n%s", p, want, line[p]);
  }
}

/* Ring with one subchunk per round: barriers 2t and 2t+1 are READY and
 * READ-COMPLETE of RS round t (row t). Rank HUNG hangs at its first notify
 * of RS t1's READY barrier: every other rank waits there on cell
 * NR*1 + HUNG for 1, sees 0, and in a single call nobody ever notified
 * that cell. */
Test(wavefront, ring_names_the_ready_barrier_of_its_round)
{
  char *args[] = {"--algo", "ring", "--ranks", "4", "--count", "40"};
  uint64_t ev[8][NR] = {{0}};
  cr_assert_geq(clean_run(args, 6, ev, 8), 3);
  hang_run(args, 6, ev[2][0]);
  char line[NR][512];
  wavefront_lines(r.err, line);
  for (int p = 0; p < NR; p++) {
    if (p == HUNG) {
      cr_assert(strstr(line[p], "hung (injected fault)"), "%s", line[p]);
      continue;
    }
    char want[256];
    snprintf(want, sizeof want, "in wait(signal[%d] >= 1): cell is 0, "
             "expected >= 1; READY barrier of RS t1 j0, rank %d's notify; "
             "never notified", NR + HUNG, HUNG);
    cr_assert(strstr(line[p], "blocked at event") && strstr(line[p], want),
              "rank %d: expected '...%s', got\n%s", p, want, line[p]);
  }
}
