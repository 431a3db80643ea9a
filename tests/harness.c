/* harness.c - see harness.h. */
#define _GNU_SOURCE
#include "harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../sim/trace.h"
#include "../sim/trace/read.h"
#include "../window/world.h"

int quick_tests(void)
{
  const char *q = getenv("COLLSIM_QUICK");
  return q && *q && strcmp(q, "0") != 0;
}

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

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/* In the child, before exec: a seccomp filter that refuses what `deny`
 * names the way the real refusals look: io_uring_setup fails with EPERM
 * (Docker's default profile, kernel.io_uring_disabled); io_uring_enter
 * fails with EPERM (a ring that was set up but takes no submission);
 * setting O_DIRECT with fcntl fails with EINVAL (a file system without
 * direct I/O; the trace writer sets the flag that way). Exit 125 where seccomp
 * filters are not available (an unknown architecture, a kernel without
 * them); 126 if the refusals are not in force after all (a filter that
 * did not apply would make the test prove nothing). */
static void apply_deny(int deny)
{
  if (!deny)
    return;
#ifdef NATIVE_ARCH
#define LD_(f) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, f))
#define ARG_LO(i) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))
#define RET_(v) BPF_STMT(BPF_RET | BPF_K, (v))
  uint32_t ring = deny & CS_DENY_IO_URING ? __NR_io_uring_setup : UINT32_MAX;
  uint32_t enter = deny & CS_DENY_IO_URING_ENTER ? __NR_io_uring_enter : UINT32_MAX;
  uint32_t dio = deny & CS_DENY_O_DIRECT ? O_DIRECT : 0;
  struct sock_filter f[] = {
    LD_(arch),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
    RET_(SECCOMP_RET_ALLOW),
    LD_(nr),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ring, 1, 0),           /* 4 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, enter, 0, 1),
    RET_(SECCOMP_RET_ERRNO | EPERM),                          /* 6 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_fcntl, 0, 5),
    ARG_LO(1),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETFL, 0, 3),       /* 9 */
    ARG_LO(2),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, dio, 0, 1),          /* 11 */
    RET_(SECCOMP_RET_ERRNO | EINVAL),
    RET_(SECCOMP_RET_ALLOW),                                  /* 13 */
  };
  struct sock_fprog prog = {sizeof(f) / sizeof(f[0]), f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
    _exit(125);
  if (deny & CS_DENY_IO_URING) {
    char params[120] = {0}; /* struct io_uring_params */
    if (syscall(__NR_io_uring_setup, 1, params) != -1 || errno != EPERM)
      _exit(126);
  }
  if ((deny & CS_DENY_IO_URING_ENTER) &&
      (syscall(__NR_io_uring_enter, -1, 0, 0, 0, NULL, 0) != -1 || errno != EPERM))
    _exit(126);
  if (deny & CS_DENY_O_DIRECT) {
    int fd = open("/proc/self/exe", O_RDONLY);
    if (fd < 0 || fcntl(fd, F_GETFL) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFL, O_DIRECT) != -1 || errno != EINVAL)
      _exit(126);
    close(fd);
  }
#else
  _exit(125);
#endif
}

void run_argv(cli_out_t *r, double timeout_s, char *const args[])
{
  run_argv_denied(r, timeout_s, 0, args);
}

void run_argv_denied(cli_out_t *r, double timeout_s, int deny,
                     char *const args[])
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
    apply_deny(deny);
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

int load_trace(const char *path, cs_trace_t *t, char *why, size_t n)
{
  cs_trace_diag_t d;
  int rc = cs_trace_load(path, t, &d);
  cs_trace_strerror(&d, why, n);
  return rc;
}

int64_t first_unlike_record(const cs_trace_t *a, const cs_trace_t *b)
{
  uint64_t n = a->n < b->n ? a->n : b->n;
  for (uint64_t i = 0; i < n; i++) {
    cs_trace_rec_t x = a->rec[i], y = b->rec[i];
    x.t_ns = y.t_ns = 0;
    x.checksum = y.checksum = 0;
    if (memcmp(&x, &y, sizeof x))
      return (int64_t)i;
  }
  return -1;
}

int open_reader(const char *path, unsigned flags, cs_trace_reader_t **rd,
                char *why, size_t n)
{
  cs_trace_diag_t d;
  int rc = cs_trace_reader_open(path, flags, rd, &d);
  cs_trace_strerror(&d, why, n);
  return rc;
}

const char *reader_why(const cs_trace_reader_t *rd)
{
  static char why[512];
  cs_trace_strerror(cs_trace_reader_diag(rd), why, sizeof(why));
  return why;
}

void temp_dir_for(const char *tag, char *dir, size_t n)
{
  snprintf(dir, n, "/tmp/collsim-test-%s-XXXXXX", tag);
  cr_assert_not_null(mkdtemp(dir));
}

int files_in(const char *dir, const char *prefix, int remove)
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

void edited_trace(const char *shipped, char *path,
                  void (*edit)(struct cs_trace_header *h, void *arg),
                  void *arg)
{
  FILE *in = fopen(shipped, "rb");
  cr_assert_not_null(in, "%s", shipped);
  cr_assert_eq(fseek(in, 0, SEEK_END), 0);
  long n = ftell(in);
  rewind(in);
  cr_assert(n > (long)sizeof(cs_trace_header_t), "%s", shipped);
  uint8_t *buf = malloc((size_t)n);
  cr_assert_not_null(buf);
  cr_assert_eq(fread(buf, 1, (size_t)n, in), (size_t)n, "%s", shipped);
  fclose(in);
  cs_trace_header_t h;
  memcpy(&h, buf, sizeof(h));
  edit(&h, arg);
  h.checksum = 0;
  h.checksum = cs_trace_fnv32(&h, sizeof(h));
  memcpy(buf, &h, sizeof(h));
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "%s", path);
  cr_assert_eq(write(fd, buf, (size_t)n), (ssize_t)n);
  close(fd);
  free(buf);
}
