/*
 * test_explore.c - `collsim explore` on the real binary: it finds a
 * shipped ordering defect, keeps a trace that replays to the same failure,
 * finds nothing on a correct algorithm, refuses bad options with one line,
 * and leaves nothing behind when stopped.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static void temp_dir(char *dir, size_t n)
{
  temp_dir_for("explore", dir, n);
}

Test(explore, finds_a_missing_fence_and_keeps_a_trace_that_replays_it, .timeout = 120)
{
  char dir[64], trace[128];
  temp_dir(dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 100, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--bug", "no-fence-before-notify", "--schedules", "200", "-o", dir, NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "failure 1: wrong result"), "%s", r.out);
  cr_assert(strstr(r.out, "reproduce: collsim replay"), "%s", r.out);
  snprintf(trace, sizeof(trace), "%s/explore-1.cstrace", dir);
  cr_assert_eq(access(trace, R_OK), 0, "no kept trace: %s", r.out);
  cr_assert_eq(files_in(dir, ".explore-", 0), 0, "a temporary trace was left");
  cli_out_t rp;
  run_cli(&rp, 60, "replay", trace, NULL);
  cr_assert_eq(rp.status, 0, "%s%s", rp.out, rp.err); /* identical */
  cr_assert(strstr(rp.out, "identical; outcome: wrong result"), "%s", rp.out);
  files_in(dir, "", 1);
  rmdir(dir);
}

/* Under sc every store lands at issue, so a missing fence never gives a
 * wrong result; the checker, which assumes the weakest model, still sees
 * the store racing with the peer's load that the notify announced. */
Test(explore, check_turns_a_race_with_a_right_result_into_a_failure, .timeout = 120)
{
  char dir[64], trace[128];
  temp_dir(dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 100, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--bug", "no-fence-before-notify", "--memory-model", "sc",
          "--schedules", "12", "-o", dir, NULL);
  cr_assert_eq(r.status, 0, "without --check: %s%s", r.out, r.err);
  cr_assert(strstr(r.out, "0 failures"), "%s", r.out);
  run_cli(&r, 100, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--bug", "no-fence-before-notify", "--memory-model", "sc", "--check",
          "--schedules", "12", "-o", dir, NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "failure 1: check: race: rank "), "%s", r.out);
  cr_assert(strstr(r.out, " is not ordered before rank "), "%s", r.out);
  cr_assert(strstr(r.out, "reproduce: collsim replay"), "%s", r.out);
  snprintf(trace, sizeof(trace), "%s/explore-1.cstrace", dir);
  cr_assert_eq(files_in(dir, ".explore-", 0), 0, "a temporary trace was left");
  cli_out_t ck;
  run_cli(&ck, 60, "check", trace, NULL);
  cr_assert_eq(ck.status, 1, "%s%s", ck.out, ck.err);
  cr_assert(strstr(ck.out, "1. race"), "%s", ck.out);
  cli_out_t rp;
  run_cli(&rp, 60, "replay", trace, NULL);
  cr_assert_eq(rp.status, 0, "%s%s", rp.out, rp.err);
  cr_assert(strstr(rp.out, "identical; outcome: verified"), "%s", rp.out);
  files_in(dir, "", 1);
  rmdir(dir);
}

Test(explore, finds_nothing_on_the_correct_algorithms, .timeout = 300)
{
  static const char *const algos[] = {"mesh", "ring", "host"};
  char dir[64];
  temp_dir(dir, sizeof(dir));
  for (int a = 0; a < 3; a++) {
    cli_out_t r;
    run_cli(&r, 250, "explore", "--algo", algos[a], "--ranks", "3", "--count", "17",
            "--dtype", "fp16", "--schedules", "40", "-o", dir, NULL);
    cr_assert_eq(r.status, 0, "%s: %s%s", algos[a], r.out, r.err);
    cr_assert(strstr(r.out, "explore: 40 schedules"), "%s", r.out);
    cr_assert(strstr(r.out, "0 failures"), "%s", r.out);
  }
  cr_assert_eq(files_in(dir, "", 0), 0, "explore left files behind");
  rmdir(dir);
}

/* Every built-in at 2 ranks, where one peer is both neighbours, in both
 * signal modes: a search of the correct algorithms finds nothing. (At 2
 * ranks host-push's single-use barrier waits >= 1 twice on a cell the
 * peer raises to 2, so a rank can pass its last barrier before the
 * peer's second notify lands; the rank-side check once called that cell
 * "not at its final value" in 80 % of schedules. The world's check after
 * the run holds the final value.) */
Test(explore, finds_nothing_at_two_ranks_in_either_signal_mode, .timeout = 300)
{
  static const char *const algos[] = {"mesh",     "ring",     "host",
                                      "ring-push", "twophase", "ring-nb",
                                      "onephase", "host-push", "ring-bidir",
                                      "ibing"};
  static const char *const modes[] = {"single-use", "self-clearing"};
  char dir[64];
  temp_dir(dir, sizeof(dir));
  for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++)
    for (int m = 0; m < 2; m++) {
      cli_out_t r;
      run_cli(&r, 120, "explore", "--algo", algos[a], "--ranks", "2", "--count",
              "64", "--signals", modes[m], "--schedules", "200", "-o", dir,
              NULL);
      cr_assert_eq(r.status, 0, "%s %s: %s%s", algos[a], modes[m], r.out, r.err);
      cr_assert(strstr(r.out, "explore: 200 schedules"), "%s", r.out);
      cr_assert(strstr(r.out, " 0 failures"), "%s %s: %s", algos[a], modes[m],
                r.out);
    }
  cr_assert_eq(files_in(dir, "", 0), 0, "explore left files behind");
  rmdir(dir);
}

Test(explore, refuses_bad_options_with_one_line, .timeout = 60)
{
  static const char *const bad[][3] = {
      {"--schedules", "0", NULL}, {"--strategy", "bfs", NULL},
      {"--memory-model", "tso", NULL}, {"-j", "1000", NULL},
      {"--schedule", "random:1", NULL}, {"--trace", "x.cstrace", NULL},
      {"-o", "/nonexistent-dir", NULL}, {"--count", "0", NULL},
      {"--batch", "0", NULL}, {"--batch", "257", NULL}};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cli_out_t r;
    char *args[] = {"explore", "--algo", "ring", (char *)bad[i][0],
                    (char *)bad[i][1], NULL};
    run_argv(&r, 30, args);
    cr_assert_eq(r.status, 2, "%s %s: %s%s", bad[i][0], bad[i][1], r.out, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s %s: %s", bad[i][0], bad[i][1], r.err);
  }
}

/* SIGTERM while schedules run: exit 3, the summary, nothing left. */
Test(explore, stops_cleanly_on_sigterm, .timeout = 60)
{
  char dir[64], odir[80];
  temp_dir(dir, sizeof(dir));
  snprintf(odir, sizeof(odir), "%s", dir);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int fd = open("/dev/null", 1);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(bin_path(), "collsim", "explore", "--algo", "ring", "--ranks", "3",
          "--count", "40", "--schedules", "100000", "-o", odir, (char *)NULL);
    _exit(127);
  }
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  kill(pid, SIGTERM);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %d", status);
  cr_assert_eq(files_in(dir, "", 0), 0, "explore left files behind");
  rmdir(dir);
}

/* ---- failure outcomes that name things (run, and explore's signatures) */

/* signal-reuse leaves out the epilogue: no cell is ever reset, so after K
 * calls with every notify landed each non-self cell holds K times its
 * per-call total. Mesh with 40 fp32 elements is one chunk: total 1+1 = 2.
 * Rank 0's first non-self cell is cell 1 (row 0, from rank 1). */
Test(run_outcomes, a_signal_failure_names_rank_cell_and_values, .timeout = 60)
{
  cli_out_t r;
  run_cli(&r, 50, "run", "--algo", "mesh", "--ranks", "3", "--count", "40",
          "--bug", "signal-reuse", "--iters", "3", "--schedule", "random:1", NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  const char *line = strstr(r.out, "signals: WRONG: ");
  cr_assert_not_null(line, "%s", r.out);
  cr_assert(strstr(line, "rank 0 signal[1] (row 0, from rank 1) holds 6 at "
                         "the end, expected 0"), "%s", line);
  /* Before the last epilogue a cell holds at least call 1's 2 (its waits
   * saw them) and at most all three calls' 6; a cell named as missing is
   * not at the total 2. */
  int held = -1, want = -1;
  const char *f = strstr(line, "held ");
  cr_assert_not_null(f, "%s", line);
  cr_assert_eq(sscanf(f, "held %d before the last epilogue, expected %d", &held,
                      &want), 2, "%s", line);
  cr_assert_eq(want, 2, "%s", line);
  cr_assert(held > 2 && held <= 6, "%s", line);
}

/* Call 1 of signal-reuse is a correct call (nothing stale yet) and the
 * output is call 2's, so the first element where call 2 differs from
 * call 1 is the result's first wrong element, on the same rank, with the
 * same bits. */
Test(run_outcomes, a_repeated_call_difference_names_call_rank_and_element,
     .timeout = 60)
{
  cli_out_t r;
  for (int seed = 1; seed <= 6; seed++) {
    char sched[32];
    snprintf(sched, sizeof(sched), "random:%d", seed);
    run_cli(&r, 50, "run", "--algo", "mesh", "--ranks", "3", "--count", "40",
            "--bug", "signal-reuse", "--iters", "2", "--schedule", sched, NULL);
    const char *w = strstr(r.out, "result: WRONG: ");
    if (!w)
      continue; /* this schedule's stale credits did not change the data */
    const char *d = strstr(r.out, "repeated calls: WRONG: ");
    cr_assert_not_null(d, "%s", r.out);
    int wr, dc, dr;
    unsigned long long wi, di;
    unsigned wbits, dbits, first;
    const char *wf = strstr(w, "first: rank "), *df = strstr(d, "first: call ");
    cr_assert(wf && df, "%s", r.out);
    cr_assert_eq(sscanf(wf, "first: rank %d index %llu: expected 0x%x (%*[^)]), got 0x%x",
                        &wr, &wi, &first, &wbits), 4, "%s", wf);
    unsigned c1;
    cr_assert_eq(sscanf(df, "first: call %d on rank %d, index %llu: call 1 0x%x "
                        "(%*[^)]), call 2 0x%x", &dc, &dr, &di, &c1, &dbits), 5, "%s", df);
    cr_assert_eq(dc, 2, "%s", df);
    cr_assert_eq(dr, wr, "%s", r.out);
    cr_assert_eq(di, wi, "%s", r.out);
    cr_assert_eq(dbits, wbits, "%s", r.out);
    cr_assert_eq(c1, first, "call 1 was not the oracle's value: %s", r.out);
    return;
  }
  cr_assert_fail("no schedule of signal-reuse gave a wrong result: %s", r.out);
}

/* A wrong result names rank and index; explore's signature carries them,
 * and the signature of a signal failure carries its rank and cell. */
Test(run_outcomes, explore_signatures_name_the_rank_and_position, .timeout = 120)
{
  char dir[64];
  temp_dir(dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 100, "explore", "--algo", "mesh", "--ranks", "3", "--count", "40",
          "--bug", "signal-reuse", "--strategy", "random", "--keep-going",
          "--schedules", "24", "-o", dir, NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  const char *w = strstr(r.out, ": wrong result, rank ");
  cr_assert_not_null(w, "%s", r.out);
  int rank;
  unsigned long long idx;
  cr_assert_eq(sscanf(w, ": wrong result, rank %d index %llu", &rank, &idx), 2, "%s", w);
  cr_assert(rank >= 0 && rank < 3 && idx < 40, "%s", w);
  if (strstr(r.out, ": signals not at their final values"))
    cr_assert(strstr(r.out, ": signals not at their final values, rank 0 signal[1] "
                            "(row 0, from rank 1) ("), "%s", r.out);
  files_in(dir, "", 1);
  rmdir(dir);
}

/* ---- batches: one child runs many schedules */

/* The failure signatures of an explore's output, one a line, sorted. */
static void signatures(const char *out, char *sigs, size_t cap)
{
  char lines[64][256];
  int n = 0;
  for (const char *p = strstr(out, "failure "); p && n < 64; p = strstr(p + 1, "\nfailure ")) {
    if (*p == '\n')
      p++;
    const char *c = strstr(p, ": "), *e = strstr(p, " (");
    if (!c || !e || e < c)
      break;
    snprintf(lines[n++], sizeof(lines[0]), "%.*s", (int)(e - c - 2), c + 2);
  }
  qsort(lines, (size_t)n, sizeof(lines[0]), (int (*)(const void *, const void *))strcmp);
  sigs[0] = 0;
  for (int i = 0; i < n; i++)
    snprintf(sigs + strlen(sigs), cap - strlen(sigs), "%s\n", lines[i]);
}

/* Every schedule of the portfolio is deterministic, so batched children
 * (which run passing schedules untraced and re-run a failing one with its
 * trace, and run the rest of a batch again after a failure) find exactly
 * what one run per schedule finds. */
Test(explore_batch, finds_what_one_run_per_schedule_finds, .timeout = 240)
{
  char dir[64], a[4096], b[4096];
  temp_dir(dir, sizeof(dir));
  cli_out_t one, many;
  run_cli(&one, 200, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--bug", "no-fence-before-notify", "--keep-going", "--schedules", "60",
          "--batch", "1", "-j", "1", "--no-shrink", "-o", dir, NULL);
  files_in(dir, "", 1);
  run_cli(&many, 200, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--bug", "no-fence-before-notify", "--keep-going", "--schedules", "60",
          "--batch", "7", "-j", "2", "--no-shrink", "-o", dir, NULL);
  cr_assert_eq(one.status, 1, "%s%s", one.out, one.err);
  cr_assert_eq(many.status, 1, "%s%s", many.out, many.err);
  const char *s1 = strstr(one.out, "explore: 60 schedules"), *s2 = strstr(many.out, "explore: 60 schedules");
  cr_assert(s1 && s2, "%s\n%s", one.out, many.out);
  cr_assert_str_eq(strstr(s1, "), "), strstr(s2, "), "), "%s\n%s", one.out, many.out);
  signatures(one.out, a, sizeof(a));
  signatures(many.out, b, sizeof(b));
  cr_assert_str_eq(a, b, "%s\n%s", one.out, many.out);
  cr_assert_eq(files_in(dir, ".explore-", 0), 0, "a temporary trace was left");
  files_in(dir, "", 1);
  rmdir(dir);
}

/* With one job the first failure is the same schedule either way, and the
 * batched one's trace (from the traced re-run) replays to it. */
Test(explore_batch, stops_at_the_same_first_failure_with_a_trace_that_replays,
     .timeout = 120)
{
  char dir[64], trace[128];
  temp_dir(dir, sizeof(dir));
  cli_out_t one, many, rp;
  run_cli(&one, 100, "explore", "--algo", "mesh", "--ranks", "3", "--count", "40",
          "--bug", "mesh-no-chunk-barrier", "--batch", "1", "-j", "1", "-o", dir, NULL);
  files_in(dir, "", 1);
  run_cli(&many, 100, "explore", "--algo", "mesh", "--ranks", "3", "--count", "40",
          "--bug", "mesh-no-chunk-barrier", "-j", "1", "-o", dir, NULL);
  cr_assert_eq(one.status, 1, "%s%s", one.out, one.err);
  cr_assert_eq(many.status, 1, "%s%s", many.out, many.err);
  char l1[256], l2[256];
  cr_assert_eq(sscanf(strstr(one.out, "failure 1:"), "%255[^\n]", l1), 1);
  cr_assert_eq(sscanf(strstr(many.out, "failure 1:"), "%255[^\n]", l2), 1);
  cr_assert_str_eq(l1, l2);
  cr_assert_eq(sscanf(strstr(one.out, "  schedule "), "%255[^\n]", l1), 1);
  cr_assert_eq(sscanf(strstr(many.out, "  schedule "), "%255[^\n]", l2), 1);
  cr_assert_str_eq(l1, l2);
  snprintf(trace, sizeof(trace), "%s/explore-1.cstrace", dir);
  run_cli(&rp, 60, "replay", trace, NULL);
  cr_assert_eq(rp.status, 0, "%s%s", rp.out, rp.err);
  cr_assert(strstr(rp.out, "identical; outcome: wrong result"), "%s", rp.out);
  cr_assert_eq(files_in(dir, ".explore-", 0), 0, "a temporary trace was left");
  files_in(dir, "", 1);
  rmdir(dir);
}

/* Starts explore (batched, or --batch 1) in its own process group, lets
 * it run, sends `sig` to that group as a terminal's Ctrl-C does (or to
 * explore alone), and checks: exit 3, no file left, and no process left
 * (this test is the subreaper: an orphaned child or rank would be ours). */
static void stop_with(int sig, int group, const char *batch)
{
  char dir[64];
  temp_dir(dir, sizeof(dir));
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(bin_path(), "collsim", "explore", "--algo", "ring", "--ranks", "3",
          "--count", "40", "--schedules", "100000", "--batch", batch, "-o", dir,
          (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  kill(group ? -pid : pid, sig);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %d", status);
  /* Anything explore left would be re-parented here and still running. */
  for (int i = 0; i < 20; i++) {
    if (waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD)
      break;
    nanosleep(&(struct timespec){0, 100000000}, NULL);
  }
  cr_assert_eq(waitpid(-1, &status, WNOHANG), -1, "a process outlived explore");
  cr_assert_eq(files_in(dir, "", 0), 0, "explore left files behind");
  rmdir(dir);
}

Test(explore_batch, ctrl_c_to_the_group_stops_batches_cleanly, .timeout = 60)
{
  stop_with(SIGINT, 1, "32");
}

Test(explore_batch, sigterm_stops_batches_cleanly, .timeout = 60)
{
  stop_with(SIGTERM, 0, "32");
}

Test(explore_batch, sigterm_stops_single_runs_cleanly, .timeout = 60)
{
  stop_with(SIGTERM, 0, "1");
}

/* After a failure, with and without batches: only the kept trace is left,
 * and no process (--no-shrink: the shrunk trace explore adds by default
 * is tested with shrink). */
Test(explore_batch, a_failure_leaves_only_its_trace, .timeout = 120)
{
  static const char *const batch[] = {"1", "32"};
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  for (int b = 0; b < 2; b++) {
    char dir[64];
    temp_dir(dir, sizeof(dir));
    cli_out_t r;
    run_cli(&r, 100, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
            "--bug", "early-return", "--batch", batch[b], "--no-shrink", "-o", dir,
            NULL);
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert_eq(files_in(dir, "", 0), 1, "--batch %s: %s", batch[b], r.out);
    cr_assert_eq(files_in(dir, "explore-1.cstrace", 0), 1, "%s", r.out);
    int status;
    cr_assert_eq(waitpid(-1, &status, WNOHANG), -1, "a process outlived explore");
    files_in(dir, "", 1);
    rmdir(dir);
  }
}

/* With --keep-going every distinct failure is shrunk, not only the first:
 * mesh-no-chunk-barrier fails with several signatures (the rank that
 * double-counts) within 40 schedules of the portfolio (-j 1: the same
 * ones every time), and each gets a shrunk trace that replays to itself. */
Test(explore, keep_going_shrinks_every_signature, .timeout = 240)
{
  char dir[64], name[128], want[32];
  temp_dir(dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 200, "explore", "--algo", "mesh", "--ranks", "3", "--count", "40",
          "--bug", "mesh-no-chunk-barrier", "--schedules", "40", "-j", "1",
          "--keep-going", "-o", dir, NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  unsigned n = 0;
  for (const char *p = r.out; (p = strstr(p, "\nfailure ")); p++)
    n++;
  n += !strncmp(r.out, "failure ", 8);
  cr_assert_geq(n, 2, "fewer than two signatures: %s", r.out);
  for (unsigned i = 1; i <= n; i++) {
    snprintf(want, sizeof(want), "shrinking failure %u:\n", i);
    cr_assert(strstr(r.out, want), "failure %u not shrunk: %s", i, r.out);
    snprintf(name, sizeof(name), "%s/explore-%u.min.cstrace", dir, i);
    cli_out_t rp;
    run_cli(&rp, 60, "replay", name, NULL);
    cr_assert_eq(rp.status, 0, "%s: %s%s", name, rp.out, rp.err);
    cr_assert(strstr(rp.out, "identical; outcome: wrong result"), "%s", rp.out);
  }
  cr_assert_eq(files_in(dir, ".", 0), 0, "a temporary file was left");
  files_in(dir, "", 1);
  rmdir(dir);
}

/* ring-drop-tail fails under every schedule, so the first schedule is the
 * failure and the report shows its seed: round 1's is 1 by default, and
 * another explore seed gives other seeds, each its own. */
Test(explore, explore_seed_changes_the_portfolios_seeds, .timeout = 60)
{
  char dir[64], got[3][64];
  static const char *const seed[] = {"0", "7", "8"};
  temp_dir(dir, sizeof(dir));
  for (int i = 0; i < 3; i++) {
    cli_out_t r;
    run_cli(&r, 50, "explore", "--algo", "ring", "--ranks", "3", "--count", "40",
            "--bug", "ring-drop-tail", "--strategy", "random", "--memory-model",
            "sc", "--schedules", "1", "--explore-seed", seed[i], "-o", dir, NULL);
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    const char *s = strstr(r.out, "  schedule random:");
    cr_assert_not_null(s, "%s", r.out);
    cr_assert_eq(sscanf(s, "  schedule %63[^,]", got[i]), 1, "%s", s);
    files_in(dir, "", 1);
  }
  cr_assert_str_eq(got[0], "random:1");
  cr_assert_str_neq(got[1], got[0]);
  cr_assert_str_neq(got[2], got[0]);
  cr_assert_str_neq(got[2], got[1]);
  rmdir(dir);
}

/* ---- stops while shrinking, and a child ended from outside */

/* Starts `collsim ARGS` with its stdout and stderr in a memfd (*fd). This
 * test is the subreaper: whatever explore leaves is re-parented here. */
static pid_t start_explore(int *fd, char *const args[])
{
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  *fd = memfd_create("explore-out", 0);
  cr_assert_geq(*fd, 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(*fd, 1);
    dup2(*fd, 2);
    execv(bin_path(), args);
    _exit(127);
  }
  return pid;
}

static void output_so_far(int fd, char *buf, size_t cap)
{
  ssize_t n = pread(fd, buf, cap - 1, 0);
  buf[n > 0 ? n : 0] = 0;
}

static void pause_ms(long ms)
{
  nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL);
}

/* Reaps what explore left (re-parented here) and checks there is none. */
static void nothing_left(void)
{
  int status;
  for (int i = 0; i < 20; i++) {
    if (waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD)
      break;
    pause_ms(100);
  }
  cr_assert_eq(waitpid(-1, &status, WNOHANG), -1, "a process outlived explore");
}

/* Waits (at most about 150 s) for explore to end; SIGKILL and a test
 * failure if it does not. Then checks it left no process. Returns its
 * wait status. */
static int end_of(pid_t pid, const char *out)
{
  int status = 0, ended = 0;
  for (int i = 0; i < 1500 && !(ended = waitpid(pid, &status, WNOHANG) == pid); i++)
    pause_ms(100);
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    cr_assert_fail("explore did not end: %s", out);
  }
  nothing_left();
  return status;
}

/* A stop while explore shrinks the second signature (-j 1, the same
 * schedules every time: see keep_going_shrinks_every_signature) is an
 * interruption like one during the search: exit 3, not death by the
 * signal once explore unblocks it; the first shrunk trace stays, the
 * one cut short is not written, and no temporary file is left. */
static void stop_while_shrinking(int sig, int ignored)
{
  char dir[64], out[65536];
  temp_dir(dir, sizeof(dir));
  char *args[] = {"collsim", "explore", "--algo", "mesh", "--ranks", "3",
                  "--count", "40", "--bug", "mesh-no-chunk-barrier",
                  "--schedules", "40", "-j", "1", "--keep-going", "-o", dir, NULL};
  int fd;
  struct sigaction ign = {.sa_handler = SIG_IGN}, was;
  sigemptyset(&ign.sa_mask);
  if (ignored) /* as a shell's background job starts with SIGINT */
    sigaction(sig, &ign, &was);
  pid_t pid = start_explore(&fd, args);
  if (ignored)
    sigaction(sig, &was, NULL);
  int i = 0;
  for (output_so_far(fd, out, sizeof(out)); i < 1500 && !strstr(out, "shrinking failure 2:");
       i++, output_so_far(fd, out, sizeof(out)))
    pause_ms(100);
  kill(pid, sig);
  int status = end_of(pid, out);
  output_so_far(fd, out, sizeof(out));
  close(fd);
  cr_assert(strstr(out, "shrinking failure 2:"), "never shrank a second: %s", out);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %#x: %s", status, out);
  cr_assert(strstr(out, "explore: 40 schedules in "), "no summary: %s", out);
  cr_assert_eq(files_in(dir, "explore-1.min.cstrace", 0), 1, "%s", out);
  /* The shrink the stop cut short (the second, unless it ended first)
   * says so, and wrote nothing. */
  const char *cut = strstr(out, "collsim shrink: interrupted; ");
  char name[128];
  if (cut && sscanf(cut, "collsim shrink: interrupted; %127s", name) == 1)
    cr_assert_neq(access(name, F_OK), 0, "%s was written: %s", name, out);
  cr_assert_eq(files_in(dir, ".", 0), 0, "a temporary file was left");
  files_in(dir, "", 1);
  rmdir(dir);
}

Test(explore, sigint_while_shrinking_exits_interrupted, .timeout = 240)
{
  stop_while_shrinking(SIGINT, 0);
}

/* Explore blocks the signal, so it takes it even when it was ignored. */
Test(explore, sigint_while_shrinking_exits_interrupted_when_ignored, .timeout = 240)
{
  stop_while_shrinking(SIGINT, 1);
}

Test(explore, sigterm_while_shrinking_exits_interrupted, .timeout = 240)
{
  stop_while_shrinking(SIGTERM, 0);
}

/* A child of explore (from /proc) with `needle` in its command line
 * (arguments joined by spaces), 0 while there is none. */
static pid_t child_of(pid_t pid, const char *needle)
{
  char path[64], cmd[4096];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
  FILE *f = fopen(path, "r");
  int c, found = 0;
  while (f && !found && fscanf(f, "%d", &c) == 1) {
    snprintf(path, sizeof(path), "/proc/%d/cmdline", c);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, cmd, sizeof(cmd) - 1) : -1;
    if (fd >= 0)
      close(fd);
    for (ssize_t k = 0; k < n; k++)
      cmd[k] = cmd[k] ? cmd[k] : ' ';
    cmd[n > 0 ? n : 0] = 0;
    found = strstr(cmd, needle) != NULL;
  }
  if (f)
    fclose(f);
  return found ? c : 0;
}

/* Sends sig to a child of explore with needle in its command line (a
 * batch child, or a run after the first) until explore ends (a child may end by
 * itself before the signal lands: then another gets it, 2 s later), at
 * most 32 children and 30 s. Writes those into c[] and their number into
 * *n; returns explore's wait status, or -1 (it did not end). */
static int signal_children(pid_t pid, int sig, const char *needle, pid_t *c, int *n)
{
  int status;
  *n = 0;
  for (int i = 0; i < 1500; i++) {
    if (waitpid(pid, &status, WNOHANG) == pid)
      return status;
    pid_t k = child_of(pid, needle);
    if (k > 0 && *n < 32 && (*n == 0 || (i % 100 == 0 && c[*n - 1] != k)) &&
        kill(k, sig) == 0)
      c[(*n)++] = k;
    pause_ms(20);
  }
  return -1;
}

/* A child of a search of a correct algorithm (one with `needle` in its
 * command line) ended by `sig` from outside is no failure: explore says so in one line naming the child and the
 * signal, reports no failure and no trace, exits 4, leaves nothing. */
static void child_ended_from_outside(int sig, const char *batch, const char *needle)
{
  char dir[64], out[65536], want[64];
  temp_dir(dir, sizeof(dir));
  char *args[] = {"collsim", "explore", "--algo", "ring", "--ranks", "3",
                  "--count", "40", "--schedules", "100000", "--batch",
                  (char *)batch, "-o", dir, NULL};
  int fd, n;
  pid_t pid = start_explore(&fd, args), c[32];
  int status = signal_children(pid, sig, needle, c, &n);
  if (status == -1) {
    kill(pid, SIGTERM);
    end_of(pid, "");
    cr_assert_fail("explore outlived %d signalled children", n);
  }
  nothing_left();
  output_so_far(fd, out, sizeof(out));
  close(fd);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 4, "status %#x: %s", status, out);
  int named = 0;
  for (int i = 0; i < n && !named; i++) {
    snprintf(want, sizeof(want), "child %d ", (int)c[i]);
    named = strstr(out, want) != NULL;
  }
  cr_assert(named, "no signalled child is named: %s", out);
  snprintf(want, sizeof(want), "SIG%s", sigabbrev_np(sig));
  cr_assert(strstr(out, want), "the signal is not named: %s", out);
  cr_assert_null(strstr(out, "failure 1"), "%s", out);
  cr_assert_null(strstr(out, ".cstrace"), "%s", out);
  cr_assert(strstr(out, " 0 failures"), "%s", out);
  cr_assert_eq(files_in(dir, "", 0), 0, "explore left files behind");
  rmdir(dir);
}

Test(explore_batch, a_batch_child_killed_is_a_search_error, .timeout = 200)
{
  child_ended_from_outside(SIGKILL, "32", " --run-batch ");
}

Test(explore_batch, a_batch_child_terminated_is_a_search_error, .timeout = 200)
{
  child_ended_from_outside(SIGTERM, "32", " --run-batch ");
}

Test(explore_batch, a_single_run_child_terminated_is_a_search_error, .timeout = 200)
{
  child_ended_from_outside(SIGTERM, "1", " --schedule pct:");
}
