/* harness.c - see harness.h. */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../window/world.h"

const char *bin_path(void)
{
  const char *b = getenv("COLLSIM_BIN");
  return b ? b : "./collsim";
}

static void slurp(int fd, char *buf, size_t cap)
{
  lseek(fd, 0, SEEK_SET);
  ssize_t n = read(fd, buf, cap - 1);
  buf[n > 0 ? n : 0] = 0;
  close(fd);
}

void run_argv(cli_out_t *r, double timeout_s, char *const args[])
{
  const char *bin = bin_path();
  char *argv[64] = {(char *)bin};
  int n = 1;
  while (n < 63 && args[n - 1])
    argv[n] = args[n - 1], n++;
  argv[n] = NULL;
  char tout[] = "/tmp/collsim-test-out-XXXXXX", terr[] = "/tmp/collsim-test-err-XXXXXX";
  int fo = mkstemp(tout), fe = mkstemp(terr);
  cr_assert(fo >= 0 && fe >= 0);
  unlink(tout);
  unlink(terr);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    dup2(fo, 1);
    dup2(fe, 2);
    execv(bin, argv);
    _exit(127);
  }
  int st = 0;
  for (;;) {
    if (waitpid(pid, &st, WNOHANG) == pid)
      break;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9 > timeout_s) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      cr_assert_fail("collsim %s did not finish within %.0f s", argv[1], timeout_s);
    }
    usleep(2000);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  r->seconds = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r->pid = pid;
  slurp(fo, r->out, sizeof(r->out));
  slurp(fe, r->err, sizeof(r->err));
  cr_assert_eq(cs_world_count_names(pid), 0, "a /collsim-%d-* name leaked", pid);
}

void run_cli(cli_out_t *r, double timeout_s, ...)
{
  char *args[63];
  va_list ap;
  va_start(ap, timeout_s);
  int n = 0;
  while (n < 62 && (args[n] = va_arg(ap, char *)) != NULL)
    n++;
  va_end(ap);
  args[n] = NULL;
  run_argv(r, timeout_s, args);
}

int count_lines(const char *s)
{
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}
