/*
 * test_explore.c - `collsim explore` on the real binary: it finds a
 * shipped ordering defect, keeps a trace that replays to the same failure,
 * finds nothing on a correct algorithm, refuses bad options with one line,
 * and leaves nothing behind when stopped.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* A fresh directory for the traces of one test. */
static void temp_dir(char *dir, size_t n)
{
  snprintf(dir, n, "/tmp/collsim-test-explore-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

/* Files in dir (names starting with prefix), and removes them all. */
static int files_in(const char *dir, const char *prefix, int remove)
{
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    n += !strncmp(e->d_name, prefix, strlen(prefix));
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (remove)
      unlink(path);
  }
  closedir(d);
  return n;
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

Test(explore, refuses_bad_options_with_one_line, .timeout = 60)
{
  static const char *const bad[][3] = {
      {"--schedules", "0", NULL}, {"--strategy", "bfs", NULL},
      {"--memory-model", "tso", NULL}, {"-j", "1000", NULL},
      {"--schedule", "random:1", NULL}, {"--trace", "x.cstrace", NULL},
      {"-o", "/nonexistent-dir", NULL}, {"--count", "0", NULL}};
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
