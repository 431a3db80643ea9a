/*
 * test_hardening.c - collsim against hostile paths, files and users: an
 * output or trace path that is a symlink, a FIFO or a device; a FIFO given
 * to a reader; predictable shared-memory names; fault reports that must
 * name the faulting rank. Each test pins one defect of the hardening issue
 * and failed before its fix. Runs the real binary (COLLSIM_BIN) through the
 * harness, which also checks that no shm name leaked.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../sim/launch.h"
#include "../sim/trace.h"
#include "../sim/trace/analysis.h"
#include "../cli/collsim/cli.h"
#include "../run/npy.h"
#include "../window/world.h"
#include "harness.h"

static cli_out_t r;

/* CI runs the whole attack as root (.ci/run sets CI=1): there, a case
 * that cannot run (no namespaces, not root, no /proc children) fails
 * instead of being skipped. */
static int in_ci(void)
{
  const char *ci = getenv("CI");
  return ci && *ci && strcmp(ci, "0");
}
#define hard_skip(...)                                                       \
  do {                                                                       \
    if (in_ci())                                                             \
      cr_assert_fail("CI must run this case: " __VA_ARGS__);                 \
    cr_skip_test(__VA_ARGS__);                                               \
  } while (0)

/* No private mount namespace with a tmpfs of its own: skipped, also in
 * CI. Making one needs CAP_SYS_ADMIN and a root that is a mount point
 * (mount MS_PRIVATE on "/"); a chroot's root is not, and mounting the
 * tmpfs without making the namespace private first could show it to the
 * machine's own /dev/shm, so these cases never try that. */
#define ns_skip()                                                            \
  cr_skip_test("no private mount namespace here (needs CAP_SYS_ADMIN and "  \
               "a root that is a mount point; a chroot has none)")

/* A fresh directory per test; removed with everything in it. */
static char dir[64];
static void make_dir(void)
{
  snprintf(dir, sizeof dir, "/tmp/collsim-hard-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}
static void remove_dir(void)
{
  char cmd[96];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}
static const char *in_dir(char *buf, size_t cap, const char *name)
{
  snprintf(buf, cap, "%s/%s", dir, name);
  return buf;
}

/* Entries in dir other than . and .. */
static int count_entries(void)
{
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

static void write_file(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

static void expect_file(const char *path, const char *text)
{
  char buf[256] = {0};
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s is gone", path);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  cr_assert_str_eq(buf, text, "%s was overwritten", path);
}

/* One line on stderr containing needle, exit 2, nothing on stdout. */
static void expect_refused(const char *needle)
{
  cr_assert_eq(r.status, 2, "exit %d: %s%s", r.status, r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "not one line:\n%s", r.err);
  cr_assert(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
  cr_assert_eq(r.out[0], 0, "printed to stdout: %s", r.out);
}

/* ---------------------------------------------- 1: run --output PATH */

Test(hardening, output_refuses_a_symlink_and_leaves_its_target,
     .init = make_dir, .fini = remove_dir, .timeout = 30)
{
  char target[128], link[128];
  in_dir(target, sizeof target, "precious");
  in_dir(link, sizeof link, "out.npy");
  write_file(target, "root's file\n");
  cr_assert_eq(symlink(target, link), 0);
  /* Planted by another user (nobody): our own links are followed. */
  if (lchown(link, 65534, 65534) < 0)
    hard_skip("cannot give the link to another user: %s", strerror(errno));
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--output", link,
          NULL);
  expect_refused("symbolic link");
  expect_file(target, "root's file\n");
  struct stat sb;
  cr_assert_eq(lstat(link, &sb), 0);
  cr_assert(S_ISLNK(sb.st_mode), "the link was replaced");
  cr_assert_eq(count_entries(), 2, "a temp file was left behind");
}

/* The whole file at path, and its size, into buf (at most cap bytes). */
static size_t read_bytes(const char *path, unsigned char *buf, size_t cap)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s is gone", path);
  size_t n = fread(buf, 1, cap, f);
  fclose(f);
  return n;
}

Test(hardening, output_or_trace_naming_the_input_is_refused,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char in[128], dot[160], link[128], out[128], odot[160];
  in_dir(in, sizeof in, "in.npy");
  in_dir(link, sizeof link, "in-link.npy");
  in_dir(out, sizeof out, "o.npy");
  snprintf(dot, sizeof dot, "%s/./in.npy", dir);
  snprintf(odot, sizeof odot, "%s/./o.npy", dir);
  float v[2 * 8];
  for (int i = 0; i < 16; i++)
    v[i] = (float)i;
  char why[256];
  cr_assert_eq(cs_npy_write(in, CS_FP32, 2, 8, v, why, sizeof why), 0, "%s", why);
  cr_assert_eq(symlink("in.npy", link), 0);
  unsigned char before[4096], after[4096];
  size_t nb = read_bytes(in, before, sizeof before);
  const char *pairs[][2] = {{"--output", dot}, {"--trace", dot},
                            {"--trace", link}};
  for (int i = 0; i < 3; i++) {
    run_cli(&r, 20, "run", "--input", in, pairs[i][0], pairs[i][1], NULL);
    expect_refused("is the --input file");
  }
  run_cli(&r, 20, "run", "--input", in, "--output", out, "--trace", odot,
          NULL);
  expect_refused("is the --output file");
  cr_assert_eq(read_bytes(in, after, sizeof after), nb, "the input changed size");
  cr_assert_eq(memcmp(before, after, nb), 0, "the input was replaced");
  cr_assert_eq(count_entries(), 2, "a file was left behind");
}

Test(hardening, output_refuses_a_fifo_and_a_device,
     .init = make_dir, .fini = remove_dir, .timeout = 30)
{
  char fifo[128], dev[128];
  in_dir(fifo, sizeof fifo, "out.fifo");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--output", fifo,
          NULL);
  expect_refused("not a regular file");
  struct stat sb;
  cr_assert_eq(lstat(fifo, &sb), 0);
  cr_assert(S_ISFIFO(sb.st_mode), "the FIFO was replaced");
  /* A null device of our own (as /dev/null is): only root can make one. */
  in_dir(dev, sizeof dev, "null");
  if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
    run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--output", dev,
            NULL);
    expect_refused("not a regular file");
    cr_assert_eq(lstat(dev, &sb), 0);
    cr_assert(S_ISCHR(sb.st_mode), "the device was replaced");
  }
  cr_assert_eq(count_entries(), 1 + (lstat(dev, &sb) == 0));
}

Test(hardening, npy_write_never_replaces_a_symlink,
     .init = make_dir, .fini = remove_dir)
{
  char target[128], link[128], why[256];
  in_dir(target, sizeof target, "precious");
  in_dir(link, sizeof link, "out.npy");
  write_file(target, "root's file\n");
  cr_assert_eq(symlink(target, link), 0);
  if (lchown(link, 65534, 65534) < 0)
    hard_skip("cannot give the link to another user: %s", strerror(errno));
  float x[2] = {1, 2};
  cr_assert_eq(cs_npy_write(link, CS_FP32, 1, 2, x, why, sizeof why), -1);
  cr_assert(strstr(why, "symbolic link"), "%s", why);
  struct stat sb;
  cr_assert(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  expect_file(target, "root's file\n");
  cr_assert_eq(count_entries(), 2, "a temp file was left behind");
}

/* ----------------------------------- 2: an injected hang, as reported */

/* The text of `collsim trace PATH` into out. */
static void trace_text(const char *path, cli_out_t *out)
{
  run_cli(out, 20, "trace", path, NULL);
  cr_assert_eq(out->status, 0, "%s", out->err);
}

/* The event index after `needle` in s, or -1. */
static long event_after(const char *s, const char *needle)
{
  const char *p = strstr(s, needle);
  return p ? strtol(p + strlen(needle), NULL, 10) : -1;
}

static void expect_hang_told_alike(const char *fault)
{
  char path[128];
  in_dir(path, sizeof path, "h.cstrace");
  unlink(path);
  run_cli(&r, 20, "run", "--algo", "mesh", "--ranks", "2", "--count", "300",
          "--iters", "2", "--fault", fault, "--timeout", "1", "--trace", path,
          NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  long head = event_after(r.err, "rank 1: hung (injected fault) at event ");
  const char *wf = strstr(r.err, "hang wavefront:");
  cr_assert_not_null(wf, "%s", r.err);
  long wave = event_after(wf, "rank 1: hung (injected fault) at event ");
  cr_assert(head >= 0 && head == wave, "%s: the headline says event %ld, "
            "the wavefront %ld:\n%s", fault, head, wave, r.err);
  static cli_out_t t;
  trace_text(path, &t);
  cr_assert(strstr(t.out, "rank 1 hung (injected fault) at event "),
            "%s: the trace's fault record does not say the rank hung:\n%s",
            fault, t.out);
  cr_assert_eq(event_after(t.out, "rank 1 hung (injected fault) at event "),
               head, "%s: the trace names another event:\n%s", fault, t.out);
  /* The hang struck before its event began: no made-up failed event. */
  for (const char *l = t.out; (l = strstr(l, " r1 ")); l++) {
    const char *eol = strchr(l, '\n');
    cr_assert(!memmem(l, eol ? (size_t)(eol - l) : strlen(l), "FAILED", 6),
              "%s: a failed event for the hung rank:\n%s", fault, t.out);
  }
}

Test(hardening, hang_is_told_alike_in_headline_wavefront_and_trace,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  expect_hang_told_alike("1:hang:10");     /* mid-run */
  expect_hang_told_alike("1:hang:100000"); /* past the last event */
}

/* ------------------------------------- 5: --trace through a symlink */

Test(hardening, trace_never_follows_another_users_symlink,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char target[128], link[128], good[128];
  in_dir(target, sizeof target, "precious");
  in_dir(link, sizeof link, "t.cstrace");
  write_file(target, "root's file\n");
  cr_assert_eq(symlink(target, link), 0);
  /* Planted by another user (nobody); a test not run as root cannot make
   * one, and its own links are followed. */
  if (lchown(link, 65534, 65534) < 0)
    hard_skip("cannot give the link to another user: %s", strerror(errno));
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--trace", link,
          NULL);
  expect_refused("symbolic link");
  cr_assert(strstr(r.err, link), "the path is not named: %s", r.err);
  expect_file(target, "root's file\n");
  /* trace -o: the same rule for the exported text. */
  in_dir(good, sizeof good, "good.cstrace");
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--trace", good,
          NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  run_cli(&r, 20, "trace", good, "-o", link, NULL);
  expect_refused("symbolic link");
  expect_file(target, "root's file\n");
  struct stat sb;
  cr_assert(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode));
  cr_assert_eq(count_entries(), 3);
}

/* ------------------------------------------- 6: FIFOs never block */

Test(hardening, fifos_are_refused_without_blocking,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char fifo[128], good[128];
  in_dir(fifo, sizeof fifo, "f.cstrace");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  in_dir(good, sizeof good, "good.cstrace");
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--trace", good,
          NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);

  run_cli(&r, 10, "trace", fifo, NULL);
  expect_refused("not a regular file");
  run_cli(&r, 10, "replay", fifo, NULL);
  expect_refused("not a regular file");
  run_cli(&r, 10, "run", "--ranks", "2", "--count", "17", "--trace", fifo,
          NULL);
  expect_refused("not a regular file");
  run_cli(&r, 10, "trace", good, "-o", fifo, NULL);
  expect_refused("not a regular file");
  struct stat sb;
  cr_assert(lstat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode));
}

/* ---------------------------------- 4: shm names nobody can squat */

/* Another local user creates the names a launcher with this pid would
 * use, then the launcher starts (exec keeps the pid): it must still run. */
Test(hardening, squatted_shm_names_do_not_stop_a_run, .timeout = 60)
{
  const char *bin = bin_path();
  int sync[2];
  cr_assert_eq(pipe(sync), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    close(sync[0]);
    for (int n = 0; n < 16; n++) {
      char name[64];
      snprintf(name, sizeof name, "/collsim-%d-%d", (int)getpid(), n);
      int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0644);
      if (fd < 0 || fchown(fd, 65534, 65534) < 0)
        _exit(120);
      close(fd);
    }
    if (write(sync[1], "s", 1) != 1)
      _exit(121);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(bin, bin, "ping", "--ranks", "2", "--rounds", "10", NULL);
    _exit(127);
  }
  close(sync[1]);
  char c;
  cr_assert_eq(read(sync[0], &c, 1), 1, "the squatter could not set up");
  close(sync[0]);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  /* The 16 squatted names are the only ones left with that pid. */
  int left = cs_world_count_names(pid);
  for (int n = 0; n < 16; n++) {
    char name[64];
    snprintf(name, sizeof name, "/collsim-%d-%d", (int)pid, n);
    shm_unlink(name);
  }
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "a squatted name stopped the run: status %d", st);
  cr_assert_eq(left, 16, "the run left %d names of its own", left - 16);
}

/* -------------------- 3: the hang report names the hung rank first */

static void expect_hung_first(const char *rank, const char *const *args)
{
  char *argv[32];
  int n = 0;
  for (; args[n]; n++)
    argv[n] = (char *)args[n];
  argv[n] = NULL;
  run_argv(&r, 30, argv);
  cr_assert_eq(r.status, 3, "%s %s: %s", args[0], args[4], r.err);
  char want[64];
  snprintf(want, sizeof want, "rank %s: hung (injected fault) at event ", rank);
  cr_assert(strncmp(r.err, want, strlen(want)) == 0,
            "%s %s: the first line does not name the hung rank:\n%s", args[0],
            args[4], r.err);
}

Test(hardening, hang_report_names_the_hung_rank_first,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  expect_hung_first("0", (const char *const[]){"run", "--algo", "mesh",
      "--fault", "0:hang:0", "--ranks", "2", "--count", "300", "--timeout",
      "1", NULL});
  expect_hung_first("1", (const char *const[]){"run", "--algo", "ring",
      "--fault", "1:hang:5", "--ranks", "3", "--count", "300", "--timeout",
      "1", NULL});
  expect_hung_first("1", (const char *const[]){"bench", "--timeout", "1",
      "--fault", "1:hang:50", "-b", "1K", "-e", "1K", NULL});
  /* The trace's abort record blames the same rank. */
  char path[128];
  in_dir(path, sizeof path, "h.cstrace");
  expect_hung_first("0", (const char *const[]){"run", "--algo", "mesh",
      "--fault", "0:hang:0", "--ranks", "2", "--count", "300", "--timeout",
      "1", "--trace", path, NULL});
  static cli_out_t t;
  trace_text(path, &t);
  cr_assert(strstr(t.out, "first failing rank 0"), "%s", t.out);
}

/* ------------------- 10: the wavefront never calls a met wait blocked */

Test(hardening, wavefront_tells_a_met_wait_from_a_blocked_one)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", 64 * 4, 4);
  cs_layout_add(&l, "signal", 16 * 4, 4);
  cs_world_t w;
  cs_world_opts_t o = {.io_bytes = 4096};
  cr_assert_eq(cs_world_create(&w, &l, 3, &o), 0);
  const cs_slot_t *s = &w.ctl->layout.slot[1];
  cs_rank_status_t *st = w.ctl->rank;
  st[0].state = CS_RS_HUNG;
  st[0].event = 7;
  for (uint32_t r = 1; r < 3; r++) {
    st[r].state = CS_RS_WAITING;
    st[r].event = 9;
    st[r].wait_slot = 1;
    st[r].wait_cell = 0;
    st[r].wait_cmp = CS_CMP_GE;
    st[r].wait_value = 2;
  }
  /* Rank 1's notify landed after it went to sleep; rank 2's never came. */
  *(int32_t *)(cs_world_window(&w, 1) + s->off) = 2;
  *(int32_t *)(cs_world_window(&w, 2) + s->off) = 1;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  cs_launch_print_wavefront(&w, NULL, f);
  fclose(f);
  cs_world_destroy(&w);
  cr_assert_eq(count_lines(text), 4, "not one line per rank:\n%s", text);
  const char *r1 = strstr(text, "  rank 1: ");
  const char *r2 = strstr(text, "  rank 2: ");
  cr_assert(r1 && r2 && strstr(text, "  rank 0: "), "%s", text);
  cr_assert(strncmp(r1, "  rank 1: blocked", 17) != 0,
            "a met wait listed as blocked:\n%s", text);
  cr_assert(strstr(r1, "satisfied"), "%s", text);
  cr_assert(strncmp(r2, "  rank 2: blocked", 17) == 0, "%s", text);
  free(text);
}

/* ---------------------------- 9: a bad fault event says what is accepted */

Test(hardening, fault_event_says_the_accepted_range, .timeout = 30)
{
  cs_fault_t f;
  char why[256] = "";
  cr_assert_eq(cs_fault_parse("1:segv:18446744073709551614", &f), 0);
  cr_assert_eq(f.event, UINT64_MAX - 1);
  const char *bad[] = {"1:segv:18446744073709551615",
                       "1:segv:99999999999999999999999", "1:segv:-1",
                       "1:segv:x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = cs_fault_parse(bad[i], &f);
    cr_assert_lt(rc, 0, "%s", bad[i]);
    cs_cli_fault_why(bad[i], rc, why, sizeof why);
    cr_assert(strstr(why, "expected an event index 0..18446744073709551614"),
              "%s: %s", bad[i], why);
  }
  /* Past every rank's last event: strikes as the rank finishes. */
  run_cli(&r, 20, "ping", "--ranks", "2", "--rounds", "3", "--fault",
          "1:segv:18446744073709551614", NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  cr_assert(strstr(r.err, "rank 1: killed by SIGSEGV"), "%s", r.err);
  run_cli(&r, 20, "ping", "--fault", "1:segv:18446744073709551615", NULL);
  expect_refused("expected an event index 0..18446744073709551614");
}

/* ------------- 11: a too-small /dev/shm names the part that did not fit */

/* Runs collsim ARGS with a 1 MiB /dev/shm of its own (a private mount
 * namespace; needs CAP_SYS_ADMIN): stderr into err. Returns the exit
 * status, or -1 when the namespace cannot be made here. */
static int run_with_tmpfs(const char *where, const char *size, char *err,
                          size_t cap, char *const args[]);
static int run_with_small_shm(char *err, size_t cap, char *const args[])
{
  return run_with_tmpfs("/dev/shm", "size=1m", err, cap, args);
}

/* Runs args (argv[0] the binary) in a private mount namespace with a
 * fresh tmpfs of `size` on `where` (on /dev: no /dev/shm at all); stderr
 * into err. Returns the exit status, or -1 where no such namespace can be
 * had. */
static int run_with_tmpfs(const char *where, const char *size, char *err,
                          size_t cap, char *const args[])
{
  char tmpl[] = "/tmp/collsim-hard-err-XXXXXX";
  int fe = mkstemp(tmpl);
  cr_assert(fe >= 0);
  unlink(tmpl);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    if (unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("none", where, "tmpfs", 0, size) < 0)
      _exit(125);
    dup2(devnull, 1);
    dup2(fe, 2);
    execv(bin_path(), args);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  ssize_t k = pread(fe, err, cap - 1, 0);
  err[k > 0 ? k : 0] = 0;
  close(fe);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 125)
    return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(hardening, small_dev_shm_names_the_part_that_does_not_fit,
     .init = make_dir, .fini = remove_dir, .timeout = 30)
{
  char trace[128], err[2048];
  in_dir(trace, sizeof trace, "t.cstrace");
  char *args[] = {(char *)bin_path(), "run", "--ranks", "2", "--count",
                  "10000", "--trace", trace, NULL};
  int st = run_with_small_shm(err, sizeof err, args);
  if (st < 0)
    ns_skip();
  cr_assert_eq(st, 2, "%s", err);
  cr_assert_eq(count_lines(err), 1, "%s", err);
  cr_assert(strstr(err, "no room for the trace rings ("), "%s", err);
  cr_assert(strstr(err, "/dev/shm has 1 MiB free"), "%s", err);
  cr_assert(strstr(err, "2 windows of 40 KiB"), "%s", err);
  cr_assert_eq(access(trace, F_OK), -1, "the trace file was left behind");
}

/* ping words a too-small or missing /dev/shm as run does: the part that
 * did not fit, or that /dev/shm is missing, and the sizes. */
Test(hardening, ping_names_the_part_and_sizes_when_dev_shm_is_small_or_missing,
     .timeout = 30)
{
  char err[2048];
  char *args[] = {(char *)bin_path(), "ping", "--ranks", "3", "--rounds",
                  "100000", NULL};
  int st = run_with_tmpfs("/dev/shm", "size=64k", err, sizeof err, args);
  if (st < 0)
    ns_skip();
  cr_assert_eq(st, 2, "%s", err);
  cr_assert_eq(count_lines(err), 1, "%s", err);
  /* 100000 rounds x 8 B + 64 B per rank and direction, page-rounded:
   * 784 KiB x 2 x 3 ranks = 4.6 MiB of staging. With the default 1000
   * rounds (below): 8 KiB x 2 x 3 = 48 KiB. */
  cr_assert(strstr(err, "no room for the staging buffers (4.6 MiB)"), "%s", err);
  cr_assert(strstr(err, "/dev/shm has 64 KiB free"), "%s", err);
  cr_assert(strstr(err, "3 windows of 4 KiB"), "%s", err);

  char *small[] = {(char *)bin_path(), "ping", "--ranks", "3", NULL};
  st = run_with_tmpfs("/dev", "size=1m", err, sizeof err, small);
  cr_assert_eq(st, 2, "%s", err);
  cr_assert_eq(count_lines(err), 1, "%s", err);
  cr_assert(strstr(err, "collsim ping: cannot create the shared memory: "
                        "/dev/shm is missing"), "%s", err);
  cr_assert(strstr(err, "3 windows of 4 KiB, staging 48 KiB"), "%s", err);
}

/* ------- round two, 5: a full /dev/shm is "no room" at creation, not SIGBUS */

/* In a private mount namespace with a 4 MiB tmpfs on /dev/shm: a first
 * world of about 3 MiB is created, then a second of the same size. The
 * capacity check sees the first one's pages as free until they are
 * touched, so the second region must be refused by the reservation made
 * at creation, not handed out to die on its first untouched page. The
 * child's exit status says what happened: 0 as expected, 125 no
 * namespace, 10 + k at step k. */
static int two_worlds_in_small_shm(void)
{
  if (unshare(CLONE_NEWNS) < 0 ||
      mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
      mount("none", "/dev/shm", "tmpfs", 0, "size=4m") < 0)
    return 125;
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", 1536 * 1024, 4);
  cs_world_t a, b;
  if (cs_world_create(&a, &l, 2, NULL) != 0)
    return 10;
  if (cs_world_create(&b, &l, 2, NULL) != CS_ETOOBIG)
    return 11;
  char why[512];
  cs_world_explain_size(why, sizeof why, &l, 2, NULL);
  if (!strstr(why, "no room for the windows (3 MiB): /dev/shm has"))
    return 12;
  /* the refused one left nothing: all of the first world is still ours */
  memset(a.base, 1, a.bytes);
  cs_world_destroy(&a);
  if (cs_world_create(&b, &l, 2, NULL) != 0)
    return 13;
  memset(b.base, 2, b.bytes);
  cs_world_destroy(&b);
  return 0;
}

Test(hardening, a_second_world_in_a_full_dev_shm_is_refused_at_creation,
     .timeout = 30)
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0)
    _exit(two_worlds_in_small_shm());
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 125)
    ns_skip();
  cr_assert(WIFEXITED(st), "the child died of signal %d (SIGBUS is %d)",
            WTERMSIG(st), SIGBUS);
  cr_assert_eq(WEXITSTATUS(st), 0, "step %d failed", WEXITSTATUS(st) - 10);
}

/* Two runs started together in a 24 MiB /dev/shm, each needing 13.8 MiB (4 windows of 300000 fp32, page-rounded, and twice as much staging):
 * both pass the free-space check, and before the reservation one of them
 * died "rank N: killed by SIGBUS", exit 3. Now each either runs (0) or is
 * refused with the sizes (2, one line). Both may be refused: two
 * reservations growing at once can each find the tmpfs full before the
 * loser gives its pages back. Several rounds, because who wins is the
 * kernel's choice. */
static void two_runs_at_once(int st[2], char err[2][1024])
{
  char tmpl[2][40];
  int fe[2];
  for (int i = 0; i < 2; i++) {
    snprintf(tmpl[i], sizeof tmpl[i], "/tmp/collsim-hard-err-XXXXXX");
    fe[i] = mkstemp(tmpl[i]);
    cr_assert(fe[i] >= 0);
    unlink(tmpl[i]);
  }
  int sp[2];
  cr_assert_eq(pipe(sp), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    close(sp[0]);
    int out[2] = {125, 125};
    if (unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount("none", "/dev/shm", "tmpfs", 0, "size=24m") < 0) {
      (void)!write(sp[1], out, sizeof out);
      _exit(0);
    }
    pid_t kid[2];
    for (int i = 0; i < 2; i++) {
      if ((kid[i] = fork()) == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        dup2(fe[i], 2);
        alarm(60); /* survives exec: no run outlives a broken test */
        execl(bin_path(), bin_path(), "run", "--ranks", "4", "--count",
              "300000", "--iters", "20", (char *)NULL);
        _exit(127);
      }
    }
    for (int i = 0; i < 2; i++) {
      int s;
      waitpid(kid[i], &s, 0);
      out[i] = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
    }
    (void)!write(sp[1], out, sizeof out);
    _exit(0);
  }
  close(sp[1]);
  cr_assert_eq(read(sp[0], st, 2 * sizeof(int)), (ssize_t)(2 * sizeof(int)));
  close(sp[0]);
  int s;
  cr_assert_eq(waitpid(pid, &s, 0), pid);
  for (int i = 0; i < 2; i++) {
    ssize_t k = pread(fe[i], err[i], 1023, 0);
    err[i][k > 0 ? k : 0] = 0;
    close(fe[i]);
  }
}

Test(hardening, two_runs_in_a_small_dev_shm_never_die_of_sigbus,
     .timeout = 240)
{
  for (int round = 0; round < 6; round++) {
    int st[2];
    char err[2][1024];
    two_runs_at_once(st, err);
    if (st[0] == 125)
      ns_skip();
    for (int i = 0; i < 2; i++) {
      cr_assert(st[i] == 0 || st[i] == 2, "round %d run %d: exit %d: %s",
                round, i, st[i], err[i]);
      if (st[i] == 2) {
        cr_assert_eq(count_lines(err[i]), 1, "%s", err[i]);
        cr_assert(strstr(err[i], "collsim run: cannot create the shared "
                                 "memory: no room for the "), "%s", err[i]);
        cr_assert(strstr(err[i], "/dev/shm has "), "%s", err[i]);
        cr_assert(strstr(err[i], "the region needs 13.8 MiB (4 windows of "
                                 "1.1 MiB, staging 9.2 MiB"), "%s", err[i]);
      }
    }
  }
}

/* ---------------- 12: clean reports the stale names it may not remove */

Test(hardening, clean_reports_names_it_may_not_remove, .timeout = 30)
{
  if (geteuid() != 0)
    hard_skip("needs root to run clean as another user");
  pid_t dead = fork();
  if (dead == 0)
    _exit(0);
  waitpid(dead, NULL, 0);
  char name[64];
  snprintf(name, sizeof name, "/collsim-%d-0", (int)dead);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  cr_assert(fd >= 0);
  close(fd);
  char tmpl[] = "/tmp/collsim-hard-err-XXXXXX";
  int fe = mkstemp(tmpl);
  cr_assert(fe >= 0);
  unlink(tmpl);
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) < 0 || setuid(65534) < 0)
      _exit(125);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(fe, 2);
    execl(bin_path(), bin_path(), "clean", NULL);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  char err[2048];
  ssize_t k = pread(fe, err, sizeof err - 1, 0);
  err[k > 0 ? k : 0] = 0;
  close(fe);
  int left = cs_world_count_names(dead);
  shm_unlink(name);
  cr_assert(!(WIFEXITED(st) && WEXITSTATUS(st) == 127),
            "nobody cannot run %s", bin_path());
  cr_assert_eq(left, 1, "nobody removed root's name");
  cr_assert(strstr(err, "cannot remove /dev/shm") && strstr(err, name + 1),
            "the stale name it could not remove is not reported: '%s'", err);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "status %d", st);
}

/* -------- 7 and 8: the trace reader on a huge file and on an empty one */

/* A header-only copy of a freshly recorded trace at path, then sized to
 * `bytes` (a sparse tail of zeros when larger). */
static void header_only_trace(const char *path, off_t bytes)
{
  char good[128];
  in_dir(good, sizeof good, "good.cstrace");
  run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--trace", good,
          NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  int in = open(good, O_RDONLY), out = open(path, O_WRONLY | O_CREAT, 0644);
  cr_assert(in >= 0 && out >= 0);
  static char head[4096];
  cr_assert_eq(read(in, head, sizeof head), (ssize_t)sizeof head);
  cr_assert_eq(write(out, head, sizeof head), (ssize_t)sizeof head);
  cr_assert_eq(ftruncate(out, bytes), 0);
  close(in);
  close(out);
}

Test(hardening, reader_fails_fast_on_a_huge_file_in_bounded_memory,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char path[128];
  in_dir(path, sizeof path, "huge.cstrace");
  header_only_trace(path, (off_t)4 << 30); /* 4 GiB, sparse */
  char tmpl[] = "/tmp/collsim-hard-err-XXXXXX";
  int fe = mkstemp(tmpl);
  cr_assert(fe >= 0);
  unlink(tmpl);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(fe, 2);
    execl(bin_path(), bin_path(), "trace", path, NULL);
    _exit(127);
  }
  int st;
  struct rusage ru;
  cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
  char err[1024];
  ssize_t k = pread(fe, err, sizeof err - 1, 0);
  err[k > 0 ? k : 0] = 0;
  close(fe);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d: %s", st, err);
  cr_assert(strstr(err, "corrupt record 0"), "%s", err);
  cr_assert_eq(count_lines(err), 1, "%s", err);
  cr_assert_lt(s, 10.0, "took %.1f s to refuse the first record", s);
  /* Far below the file's 4 GiB (a sanitizer build's own overhead too). */
  cr_assert_lt(ru.ru_maxrss, 256 * 1024, "used %ld KiB", ru.ru_maxrss);
}

/* A trace with no records (a launcher killed in controlled mode writes
 * one): read and shown, with no undefined behaviour on the empty array
 * (the sanitizer build of CI turns that into a failure). */
Test(hardening, reader_takes_a_trace_with_no_records,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char path[128];
  in_dir(path, sizeof path, "empty.cstrace");
  header_only_trace(path, 4096);
  cs_trace_t t;
  char why[256] = "";
  cr_assert_eq(load_trace(path, &t, why, sizeof why), 0, "%s", why);
  cr_assert_eq(t.n, 0);
  cs_trace_links_t l;
  cr_assert_eq(cs_trace_links_init(&l, &t), 0);
  cs_trace_links_fini(&l);
  cs_trace_free(&t);
  run_cli(&r, 20, "trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  run_cli(&r, 20, "trace", "--stats", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
}

/* A hung rank that a peer's timeout stopped first (it exits as aborted)
 * still has its fault record; which timer fires first is a race, so the
 * run is repeated. */
Test(hardening, hung_rank_has_its_fault_record_whoever_timed_out_first,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char path[128];
  in_dir(path, sizeof path, "h.cstrace");
  for (int i = 0; i < 10; i++) {
    unlink(path);
    run_cli(&r, 20, "run", "--algo", "mesh", "--ranks", "2", "--count", "300",
            "--fault", "0:hang:0", "--timeout", "1", "--trace", path, NULL);
    cr_assert_eq(r.status, 3, "%s", r.err);
    static cli_out_t t;
    trace_text(path, &t);
    cr_assert(strstr(t.out, "rank 0 hung (injected fault) at event 0"),
              "run %d: no fault record for the hung rank:\n%s", i, t.out);
  }
}

/* ------------- a second user against a root run (the issue's "must show") */

#define NOBODY 65534

/* In a forked child: becomes nobody (no groups). Exits 124 if it cannot. */
static void become_nobody(void)
{
  if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
      setresuid(NOBODY, NOBODY, NOBODY) < 0 || geteuid() != NOBODY)
    _exit(124);
}

/* As nobody, plants in the shared directory: symlinks to root's file
 * (t-link, o-link.npy), FIFOs (t-fifo, o-fifo.npy) and a hard link to it
 * (t-hard; refused by the kernel where fs.protected_hardlinks is on).
 * Exits with bit 1 set if the hard link was made. */
static int plant_as_nobody(const char *precious)
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    become_nobody();
    char p[160];
    int made = 0;
    if (symlink(precious, in_dir(p, sizeof p, "t-link.cstrace")) < 0 ||
        symlink(precious, in_dir(p, sizeof p, "o-link.npy")) < 0 ||
        mkfifo(in_dir(p, sizeof p, "t-fifo.cstrace"), 0666) < 0 ||
        mkfifo(in_dir(p, sizeof p, "o-fifo.npy"), 0666) < 0)
      _exit(120);
    if (link(precious, in_dir(p, sizeof p, "t-hard.cstrace")) == 0)
      made |= 1;
    _exit(made);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 120, "nobody could not plant: %d", st);
  return WEXITSTATUS(st);
}

/* As nobody, until the write end of `stop` closes (the test's process,
 * even when it dies): opens every root-owned /dev/shm/collsim-* name
 * read-write and checks whether it may signal any root process named
 * collsim (kill with
 * signal 0: the permission check alone, so nothing is ever sent). Exits
 * with the number of opens and permitted signals (0 expected), capped at
 * 100. */
static pid_t probe_as_nobody(const int stop[2])
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid != 0)
    return pid;
  close(stop[1]);
  become_nobody();
  int won = 0;
  struct timespec nap = {0, 200000};
  for (;;) {
    struct pollfd pf = {stop[0], POLLIN, 0};
    if (poll(&pf, 1, 0) > 0)
      break;
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));) {
      if (strncmp(e->d_name, "collsim-", 8))
        continue;
      char name[300];
      struct stat sb;
      snprintf(name, sizeof name, "/dev/shm/%s", e->d_name);
      if (stat(name, &sb) < 0 || sb.st_uid != 0)
        continue; /* root's names only (other tests plant nobody's) */
      snprintf(name, sizeof name, "/%s", e->d_name);
      int fd = shm_open(name, O_RDWR, 0);
      if (fd >= 0)
        won++, close(fd);
    }
    if (d)
      closedir(d);
    DIR *pd = opendir("/proc");
    for (struct dirent *e; pd && (e = readdir(pd));) {
      char path[300], comm[64] = "";
      struct stat sb;
      snprintf(path, sizeof path, "/proc/%s", e->d_name);
      if (stat(path, &sb) < 0 || sb.st_uid != 0)
        continue; /* root's processes only */
      snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
      FILE *f = fopen(path, "re");
      if (!f)
        continue;
      if (fgets(comm, sizeof comm, f) && !strcmp(comm, "collsim\n")) {
        pid_t victim = (pid_t)atoi(e->d_name);
        won += kill(victim, 0) == 0;
      }
      fclose(f);
    }
    if (pd)
      closedir(pd);
    nanosleep(&nap, NULL);
  }
  _exit(won > 100 ? 100 : won);
}

Test(hardening, a_second_user_cannot_fail_a_root_run_or_overwrite_a_root_file,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  if (geteuid() != 0)
    hard_skip("needs root: the test runs collsim as root against nobody");
  cr_assert_eq(chmod(dir, 01777), 0); /* a shared directory, like /tmp */
  char precious[160], p[160];
  in_dir(precious, sizeof precious, "precious");
  write_file(precious, "root's file\n");
  if (!(plant_as_nobody(precious) & 1)) {
    /* fs.protected_hardlinks stopped nobody; where it is off the link
     * would be there, as this one (made by root) is. */
    cr_assert_eq(link(precious, in_dir(p, sizeof p, "t-hard.cstrace")), 0);
  }
  int stop[2];
  cr_assert_eq(pipe(stop), 0);
  pid_t prober = probe_as_nobody(stop);

  /* --trace and --output through everything nobody planted: refused. */
  static const char *const traces[] = {"t-link.cstrace", "t-fifo.cstrace",
                                       "t-hard.cstrace"};
  for (int i = 0; i < 3; i++) {
    run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--trace",
            in_dir(p, sizeof p, traces[i]), NULL);
    cr_assert_eq(r.status, 2, "--trace %s: exit %d: %s", traces[i], r.status, r.err);
    expect_file(precious, "root's file\n");
  }
  static const char *const outs[] = {"o-link.npy", "o-fifo.npy"};
  for (int i = 0; i < 2; i++) {
    run_cli(&r, 20, "run", "--ranks", "2", "--count", "17", "--output",
            in_dir(p, sizeof p, outs[i]), NULL);
    cr_assert_eq(r.status, 2, "--output %s: exit %d: %s", outs[i], r.status, r.err);
    expect_file(precious, "root's file\n");
  }
  /* Root's runs while nobody probes the shm names and the processes. */
  for (int i = 0; i < 3; i++) {
    run_cli(&r, 60, "ping", "--ranks", "3", "--rounds", "20000", NULL);
    cr_assert_eq(r.status, 0, "a root ping failed: %s", r.err);
    run_cli(&r, 60, "run", "--ranks", "4", "--count", "65537", NULL);
    cr_assert_eq(r.status, 0, "a root run failed: %s", r.err);
  }
  close(stop[1]);
  int st;
  cr_assert_eq(waitpid(prober, &st, 0), prober);
  close(stop[0]);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 124, "nobody could not start");
  cr_assert_eq(WEXITSTATUS(st), 0, "nobody opened a name or signalled a rank "
               "%d times", WEXITSTATUS(st));
  expect_file(precious, "root's file\n");
  struct stat sb;
  cr_assert(lstat(in_dir(p, sizeof p, "t-link.cstrace"), &sb) == 0 &&
            S_ISLNK(sb.st_mode), "the planted link was replaced");
}

/* ------- round two, 1: no file replaced that is not ours, in every
 * subcommand (issue 32). The hostile nodes are private: a FIFO and a
 * null device made in the test's directory (never the machine's
 * /dev/null), another user's file and link made with chown. */

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif

/* A shipped trace copied into dir as name (never written in traces/). */
static const char *shipped(char *buf, size_t cap, const char *trace,
                           const char *name)
{
  char cmd[512];
  in_dir(buf, cap, name);
  snprintf(cmd, sizeof cmd, "cp '%s/traces/%s' '%s'", COLLSIM_SOURCE_DIR,
           trace, buf);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  return buf;
}

/* Every output option of every subcommand, writing to `out`; the inputs
 * (a failing trace, a finished one) are in dir. NULL-terminated argvs. */
enum { NOUTS = 9 };
static void output_argvs(const char *out, const char *bug, const char *good,
                         const char *argvs[NOUTS][12])
{
  const char *a[NOUTS][12] = {
      {"shrink", bug, "-o", out, "--no-story", NULL},
      {"trace", good, "-o", out, NULL},
      {"replay", good, "--trace", out, NULL},
      {"replay", good, "--output", out, NULL},
      {"run", "--ranks", "2", "--count", "17", "--trace", out, NULL},
      {"run", "--ranks", "2", "--count", "17", "--output", out, NULL},
      {"run", "--ranks", "2", "--count", "17", "--schedule", "random:1",
       "--trace", out, NULL},
      {"teach", "--plain", "--trace", out, NULL},
      {"ping", "--ranks", "2", "--trace", out, NULL},
  };
  memcpy(argvs, a, sizeof a);
}

/* argv's exit is 2 with one line naming its subcommand, option and path. */
static void expect_refused_out(const char *const *argv, const char *opt,
                               const char *out, const char *needle)
{
  run_argv(&r, 30, (char *const *)argv);
  char head[300];
  snprintf(head, sizeof head, "collsim %s: %s %s ", argv[0], opt, out);
  cr_assert_eq(r.status, 2, "%s %s: exit %d: %s", argv[0], opt, r.status, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s %s: not one line:\n%s", argv[0],
               opt, r.err);
  cr_assert(strstr(r.err, head) == r.err, "%s %s: the line does not start "
            "with '%s': %s", argv[0], opt, head, r.err);
  cr_assert(strstr(r.err, needle), "%s %s: '%s' not in: %s", argv[0], opt,
            needle, r.err);
}

/* The option of argv that names out (the last: an input may be out). */
static const char *opt_of(const char *const *argv, const char *out)
{
  int n = 0;
  while (argv[n])
    n++;
  for (int i = n - 1; i > 1; i--)
    if (argv[i] == out)
      return argv[i - 1];
  cr_assert_fail("no option names %s", out);
  return NULL;
}

Test(hardening, no_subcommand_replaces_a_fifo_or_a_device,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], fifo[128], dev[128];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(fifo, sizeof fifo, "out.fifo");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  /* A null device of our own (as /dev/null is): only root can make one. */
  in_dir(dev, sizeof dev, "null");
  int have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
  const char *argvs[NOUTS][12];
  for (int k = 0; k < 1 + have_dev; k++) {
    const char *out = k ? dev : fifo;
    output_argvs(out, bug, good, argvs);
    for (int i = 0; i < NOUTS; i++) {
      expect_refused_out(argvs[i], opt_of(argvs[i], out), out,
                         "is not a regular file");
      struct stat sb;
      cr_assert_eq(lstat(out, &sb), 0, "%s: %s is gone", argvs[i][0], out);
      cr_assert(k ? S_ISCHR(sb.st_mode) : S_ISFIFO(sb.st_mode),
                "%s %s: %s was replaced", argvs[i][0], opt_of(argvs[i], out),
                out);
    }
  }
  cr_assert_eq(count_entries(), 3 + have_dev, "a file was left behind");
}

Test(hardening, no_subcommand_replaces_another_users_file_or_link,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], theirs[128], target[128], link[128];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(theirs, sizeof theirs, "theirs");
  in_dir(target, sizeof target, "precious");
  in_dir(link, sizeof link, "link");
  write_file(theirs, "nobody's file\n");
  write_file(target, "root's file\n");
  cr_assert_eq(symlink(target, link), 0);
  if (chown(theirs, 65534, 65534) < 0 || lchown(link, 65534, 65534) < 0)
    hard_skip("cannot give files to another user: %s", strerror(errno));
  const char *argvs[NOUTS][12];
  output_argvs(theirs, bug, good, argvs);
  for (int i = 0; i < NOUTS; i++) {
    expect_refused_out(argvs[i], opt_of(argvs[i], theirs), theirs,
                       "is another user's file");
    expect_file(theirs, "nobody's file\n");
    struct stat sb;
    cr_assert(stat(theirs, &sb) == 0 && sb.st_uid == 65534,
              "%s: the file changed owner", argvs[i][0]);
  }
  output_argvs(link, bug, good, argvs);
  for (int i = 0; i < NOUTS; i++) {
    expect_refused_out(argvs[i], opt_of(argvs[i], link), link,
                       "symbolic link");
    expect_file(target, "root's file\n");
    struct stat sb;
    cr_assert(lstat(link, &sb) == 0 && S_ISLNK(sb.st_mode),
              "%s: the link was replaced", argvs[i][0]);
  }
  cr_assert_eq(count_entries(), 5, "a file was left behind");
}

/* Our own link to another user's link: the rule looked only at the
 * first link (ours) and then followed the whole chain, so the second
 * user picked the file every output option wrote (here root's own file)
 * and the shared object --algo loaded. Every link on the way must be
 * ours, as the first must. */
Test(hardening, a_chain_through_another_users_link_is_not_followed,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], target[128], theirs[128], chain[128];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(target, sizeof target, "precious");
  in_dir(theirs, sizeof theirs, "theirs");
  in_dir(chain, sizeof chain, "chain");
  write_file(target, "root's file\n");
  cr_assert_eq(symlink("precious", theirs), 0);
  cr_assert_eq(symlink("theirs", chain), 0);
  if (lchown(theirs, 65534, 65534) < 0)
    hard_skip("cannot give a link to another user: %s", strerror(errno));
  const char *argvs[NOUTS][12];
  output_argvs(chain, bug, good, argvs);
  for (int i = 0; i < NOUTS; i++) {
    expect_refused_out(argvs[i], opt_of(argvs[i], chain), chain,
                       "symbolic link");
    expect_file(target, "root's file\n");
  }
  /* The same chain to a shared object of ours: never loaded. */
  char so[128], theirs_so[128], chain_so[128], cmd[600];
  in_dir(so, sizeof so, "rd.so");
  in_dir(theirs_so, sizeof theirs_so, "theirs.so");
  in_dir(chain_so, sizeof chain_so, "chain.so");
  snprintf(cmd, sizeof cmd, "cp '%s/rd_allreduce.so' '%s'", COLLSIM_PLUGINS,
           so);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  cr_assert_eq(symlink("rd.so", theirs_so), 0);
  cr_assert_eq(symlink("theirs.so", chain_so), 0);
  cr_assert_eq(lchown(theirs_so, 65534, 65534), 0);
  const char *algo[][12] = {
      {"run", "--ranks", "2", "--count", "8", "--iters", "1", "--algo",
       chain_so, NULL},
      {"bench", "-b", "8", "-e", "8", "-n", "1", "--ranks", "2", "--algo",
       chain_so, NULL},
      {"teach", "--plain", "--algo", chain_so, NULL}};
  for (size_t i = 0; i < sizeof algo / sizeof algo[0]; i++)
    expect_refused_out(algo[i], "--algo", chain_so, "symbolic link");
  /* A chain of our own links is followed as one link is. */
  cr_assert_eq(lchown(theirs_so, getuid(), getgid()), 0);
  run_argv(&r, 30, (char *const *)algo[0]);
  cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
}

/* explore -o DIR and verify -o DIR took another user's link to a
 * directory (also with a trailing slash, or behind a link of ours): that
 * user picked where root's traces went. Refused as an output file's link
 * is; our own link to a directory is taken. */
Test(hardening, an_output_directory_through_another_users_link_is_refused,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char real[128], theirs[128], slash[160], chain[128], ours[128];
  in_dir(real, sizeof real, "real");
  in_dir(theirs, sizeof theirs, "theirs");
  in_dir(chain, sizeof chain, "chain");
  in_dir(ours, sizeof ours, "ours");
  snprintf(slash, sizeof slash, "%s/", theirs);
  cr_assert_eq(mkdir(real, 0755), 0);
  cr_assert_eq(symlink("real", theirs), 0);
  cr_assert_eq(symlink("theirs", chain), 0);
  cr_assert_eq(symlink("real", ours), 0);
  if (lchown(theirs, 65534, 65534) < 0)
    hard_skip("cannot give a link to another user: %s", strerror(errno));
  const char *dirs[] = {theirs, slash, chain};
  for (int d = 0; d < 3; d++)
    for (int e = 0; e < 2; e++) {
      const char *ex[] = {"explore", "--ranks", "2", "--count", "8",
                          "--schedules", "1", "-o", dirs[d], NULL};
      const char *ve[] = {"verify", "--ranks", "2", "--count", "2", "-o",
                          dirs[d], NULL};
      expect_refused_out(e ? ve : ex, "-o", dirs[d], "symbolic link");
    }
  run_cli(&r, 60, "explore", "--ranks", "2", "--count", "8", "--schedules",
          "1", "-o", ours, NULL);
  cr_assert_eq(r.status, 0, "our own link: exit %d: %s", r.status, r.err);
}

/* A directory on the way that is another user's link (theirs/precious,
 * theirs naming our own directory): only the last name was looked at,
 * so every output option wrote into whatever directory that user named,
 * replacing a file of ours there. Refused as the last name's link is;
 * our own and root's directory links are followed. */
Test(hardening, an_output_through_another_users_directory_link_is_refused,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], real[128], theirs[128], ours[128], target[160],
      via_theirs[160], via_ours[160];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(real, sizeof real, "real");
  in_dir(theirs, sizeof theirs, "theirs");
  in_dir(ours, sizeof ours, "ours");
  cr_assert_eq(mkdir(real, 0755), 0);
  cr_assert_eq(symlink("real", theirs), 0);
  cr_assert_eq(symlink("real", ours), 0);
  snprintf(target, sizeof target, "%s/precious", real);
  snprintf(via_theirs, sizeof via_theirs, "%s/precious", theirs);
  snprintf(via_ours, sizeof via_ours, "%s/precious", ours);
  write_file(target, "root's file\n");
  if (lchown(theirs, 65534, 65534) < 0)
    hard_skip("cannot give a link to another user: %s", strerror(errno));
  const char *argvs[NOUTS][12];
  output_argvs(via_theirs, bug, good, argvs);
  for (int i = 0; i < NOUTS; i++) {
    expect_refused_out(argvs[i], opt_of(argvs[i], via_theirs), via_theirs,
                       "symbolic link");
    expect_file(target, "root's file\n");
  }
  run_cli(&r, 30, "run", "--ranks", "2", "--count", "17", "--iters", "1",
          "--trace", via_ours, NULL);
  cr_assert_eq(r.status, 0, "through our own link: exit %d: %s", r.status,
               r.err);
}

/* The bytes of path, for comparing before and after. */
static size_t snapshot(const char *path, unsigned char *buf, size_t cap)
{
  size_t n = read_bytes(path, buf, cap);
  cr_assert(n < cap, "%s is larger than the test's buffer", path);
  return n;
}

Test(hardening, no_subcommand_writes_over_its_input,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], blink[128], ghard[128], dot[160];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(blink, sizeof blink, "bug-link.cstrace");
  in_dir(ghard, sizeof ghard, "g-hard.cstrace");
  snprintf(dot, sizeof dot, "%s/./g.cstrace", dir);
  cr_assert_eq(symlink("bug.cstrace", blink), 0);
  cr_assert_eq(link(good, ghard), 0);
  static unsigned char b0[1 << 16], g0[1 << 16], b1[1 << 16], g1[1 << 16];
  size_t nb = snapshot(bug, b0, sizeof b0), ng = snapshot(good, g0, sizeof g0);
  char sched[200];
  snprintf(sched, sizeof sched, "replay:%s", good);
  const char *cases[][12] = {
      {"shrink", bug, "-o", bug, "--no-story", NULL},
      {"shrink", bug, "-o", blink, "--no-story", NULL},
      {"trace", good, "-o", good, NULL},
      {"trace", good, "-o", ghard, NULL},
      {"replay", good, "--trace", good, NULL},
      {"replay", good, "--trace", dot, NULL},
      {"replay", good, "--output", ghard, NULL},
      {"run", "--schedule", sched, "--ranks", "4", "--count", "17", "--dtype",
       "fp16", "--trace", ghard, NULL},
  };
  const char *outs[] = {bug, blink, good, ghard, good, dot, ghard, ghard};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *out = outs[i];
    expect_refused_out(cases[i], opt_of(cases[i], out), out, "is the ");
    cr_assert_eq(snapshot(bug, b1, sizeof b1), nb, "%s: the input changed",
                 cases[i][0]);
    cr_assert_eq(memcmp(b0, b1, nb), 0, "%s: the input changed", cases[i][0]);
    cr_assert_eq(snapshot(good, g1, sizeof g1), ng, "%s: the input changed",
                 cases[i][0]);
    cr_assert_eq(memcmp(g0, g1, ng), 0, "%s: the input changed", cases[i][0]);
  }
  struct stat sb;
  cr_assert(lstat(blink, &sb) == 0 && S_ISLNK(sb.st_mode), "the link was replaced");
  cr_assert_eq(count_entries(), 4, "a file was left behind");
}

/* path: mode 0600, our uid, group nobody, the text "old\n". */
static void make_private(const char *path)
{
  write_file(path, "old\n");
  cr_assert_eq(chmod(path, 0600), 0);
  cr_assert_eq(chown(path, geteuid(), 65534), 0, "%s", strerror(errno));
}

/* path was written (not "old\n" any more) and kept mode, owner, group. */
static void expect_kept(const char *path, const char *what)
{
  struct stat sb;
  cr_assert_eq(lstat(path, &sb), 0, "%s: %s is gone", what, path);
  cr_assert(S_ISREG(sb.st_mode), "%s: not a regular file now", what);
  cr_assert_eq(sb.st_mode & 07777, 0600, "%s: mode %o, was 600", what,
               (unsigned)(sb.st_mode & 07777));
  cr_assert_eq(sb.st_uid, geteuid(), "%s: owner %u", what, (unsigned)sb.st_uid);
  cr_assert_eq(sb.st_gid, 65534, "%s: group %u, was 65534", what,
               (unsigned)sb.st_gid);
  cr_assert_gt(sb.st_size, 4, "%s: not written", what);
}

Test(hardening, an_existing_output_keeps_its_mode_and_owner,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char bug[128], good[128], out[128], npy[128], tgt[128], lnk[128];
  shipped(bug, sizeof bug, "bugs/early-return.cstrace", "bug.cstrace");
  shipped(good, sizeof good, "ring-n4-c17-fp16-sum.cstrace", "g.cstrace");
  in_dir(out, sizeof out, "out");
  in_dir(npy, sizeof npy, "out.npy");
  write_file(npy, "old\n");
  if (chown(npy, geteuid(), 65534) < 0)
    hard_skip("cannot give a file another group: %s", strerror(errno));
  umask(022);
  make_private(npy);
  run_cli(&r, 30, "run", "--ranks", "2", "--count", "17", "--output", npy, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_kept(npy, "run --output");
  make_private(npy);
  run_cli(&r, 30, "replay", good, "--output", npy, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  expect_kept(npy, "replay --output");
  const char *cases[][8] = {
      {"run", "--ranks", "2", "--count", "17", "--trace", out, NULL},
      {"replay", good, "--trace", out, NULL},
      {"trace", good, "-o", out, NULL},
      {"shrink", bug, "-o", out, "--no-story", "--budget", "5", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    make_private(out);
    run_argv(&r, 60, (char *const *)cases[i]);
    cr_assert_eq(r.status, 0, "%s: %s", cases[i][0], r.err);
    expect_kept(out, cases[i][0]);
  }
  /* Through our own link: the link stays, the file it names is written. */
  in_dir(tgt, sizeof tgt, "target");
  in_dir(lnk, sizeof lnk, "min.cstrace");
  make_private(tgt);
  cr_assert_eq(symlink("target", lnk), 0);
  run_cli(&r, 60, "shrink", bug, "-o", lnk, "--no-story", "--budget", "5",
          NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  struct stat sb;
  cr_assert(lstat(lnk, &sb) == 0 && S_ISLNK(sb.st_mode), "the link was replaced");
  expect_kept(tgt, "shrink -o through our link");
  run_cli(&r, 30, "replay", lnk, NULL);
  cr_assert_eq(r.status, 0, "the shrunk trace does not replay: %s", r.err);
  cr_assert_eq(count_entries(), 6, "a file was left behind");
}

/* ------------------------------------ issue 32 item 3: partial traces */

/* One line on stderr that says the trace is partial, whatever else the
 * subcommand printed there. */
static void expect_partial_line(const char *what, const char *path)
{
  const char *p = strstr(r.err, " is partial: ");
  cr_assert(p, "%s: not reported partial: %s", what, r.err);
  cr_assert_null(strstr(p + 1, " is partial: "), "%s: said twice: %s", what, r.err);
  cr_assert(strstr(r.err, path), "%s: the trace is not named: %s", what, r.err);
}

/* The four readers on path: each says partial (or, `partial` 0, none
 * does); check's own output says the trace is incomplete. */
static void readers_say(const char *path, int partial)
{
  char out[200];
  snprintf(out, sizeof out, "%s.min.cstrace", path);
  const char *cmds[][4] = {{"trace", path, NULL}, {"trace", "--stats", path, NULL},
                           {"check", path, NULL},
                           {"replay", path, "--timeout", "2"},
                           {"shrink", path, "-o", out}};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char *args[6] = {0};
    for (int k = 0; k < 4 && cmds[i][k]; k++)
      args[k] = (char *)cmds[i][k];
    run_argv(&r, 60, args);
    if (!partial) {
      cr_assert_null(strstr(r.err, "partial"), "%s: %s", cmds[i][0], r.err);
      cr_assert_null(strstr(r.out, "INCOMPLETE"), "%s: %s", cmds[i][0], r.out);
      continue;
    }
    expect_partial_line(cmds[i][0], path);
    if (!strcmp(cmds[i][0], "check"))
      cr_assert(strstr(r.out, "INCOMPLETE"), "check's findings: %s", r.out);
    if (!strcmp(cmds[i][0], "replay"))
      cr_assert(strstr(r.out, "partial"), "replay: %s", r.out);
    if (!strcmp(cmds[i][0], "shrink")) /* refused: its end is missing */
      cr_assert(r.status == 2 && count_lines(r.err) == 1 &&
                access(out, F_OK) < 0, "shrink: exit %d: %s", r.status, r.err);
  }
}

/* collsim with `args` (argv[0] first) in a child whose output goes to
 * /dev/null; the caller kills and reaps it. */
static pid_t quiet_run(char *const args[])
{
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(bin_path(), args);
    _exit(127);
  }
  return pid;
}

/* A trace still being written, then the same one after its run was
 * killed with SIGKILL, then a complete one cut by a record: all partial
 * to trace, trace --stats, check and replay; the complete one is not. */
Test(hardening, partial_traces_are_reported_partial, .init = make_dir,
     .fini = remove_dir, .timeout = 200)
{
  char t[128], whole[128];
  in_dir(t, sizeof t, "killed.cstrace");
  in_dir(whole, sizeof whole, "whole.cstrace");
  char *const args[] = {"collsim", "run", "--ranks", "4", "--count", "1000",
                        "--fault", "1:hang", "--timeout", "60", "--trace", t,
                        NULL};
  pid_t pid = quiet_run(args);
  struct stat sb;
  for (int i = 0; i < 300 && !(stat(t, &sb) == 0 && sb.st_size >= 4096); i++)
    usleep(20000);
  usleep(200000);
  readers_say(t, 1); /* still being written */
  kill(pid, SIGKILL);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  readers_say(t, 1); /* killed */

  run_cli(&r, 60, "run", "--ranks", "3", "--count", "40", "--iters", "1",
          "--schedule", "random:2", "--trace", whole, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  readers_say(whole, 0);
  cr_assert_eq(stat(whole, &sb), 0);
  cr_assert_eq(truncate(whole, sb.st_size - 80), 0);
  readers_say(whole, 1); /* cut */
}

/* run --schedule replay:FILE reads a trace too: on a cut one it ended
 * "replay diverged at step N: the trace ends here", with no word that the
 * trace, not the run, was short. It says partial as the other readers do;
 * the whole trace replays with no such word. */
Test(hardening, run_schedule_replay_says_a_trace_is_partial, .init = make_dir,
     .fini = remove_dir, .timeout = 60)
{
  char t[128], sched[160];
  in_dir(t, sizeof t, "t.cstrace");
  snprintf(sched, sizeof sched, "replay:%s", t);
  run_cli(&r, 30, "run", "--ranks", "3", "--count", "40", "--iters", "1",
          "--schedule", "random:2", "--trace", t, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (int cut = 0; cut < 2; cut++) {
    struct stat sb;
    cr_assert_eq(stat(t, &sb), 0);
    if (cut)
      cr_assert_eq(truncate(t, sb.st_size - 80 * 5), 0);
    run_cli(&r, 30, "run", "--ranks", "3", "--count", "40", "--iters", "1",
            "--schedule", sched, NULL);
    if (!cut) {
      cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
      cr_assert_null(strstr(r.err, "partial"), "%s", r.err);
      continue;
    }
    expect_partial_line("run --schedule replay:", t);
    cr_assert(strstr(r.err, "collsim run: "), "%s", r.err);
  }
}

/* teach takes no replay:FILE schedule, but its refusal listed replay:FILE
 * among the schedules it expects. It now says teach replays no trace and
 * what does. */
Test(hardening, teach_refuses_a_replay_schedule_without_offering_it,
     .timeout = 30)
{
  run_cli(&r, 20, "teach", "--plain", "--schedule", "replay:x.cstrace", NULL);
  expect_refused("collsim teach: --schedule 'replay:x.cstrace' ");
  cr_assert_null(strstr(r.err, "replay:FILE,"), "offered: %s", r.err);
  cr_assert(strstr(r.err, "collsim replay"), "%s", r.err);
}

/* A traced run of `args` killed with SIGKILL once its trace at t has
 * `bytes`: the trace of a run with no end. */
static void killed_trace(const char *t, off_t bytes, char *const args[])
{
  pid_t pid = quiet_run(args);
  struct stat sb;
  for (int i = 0; i < 1500 && !(stat(t, &sb) == 0 && sb.st_size >= bytes); i++)
    usleep(20000);
  kill(pid, SIGKILL);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st), "the run ended before it was killed");
}

/* Changes the first load record of trace t (records at 4096 + 80 i,
 * traces/FORMAT.md) to another element: an edited event the replay must
 * call a divergence, partial trace or not. */
static void edit_first_load(const char *t)
{
  int fd = open(t, O_RDWR);
  cr_assert_geq(fd, 0);
  unsigned char rec[80];
  for (off_t at = 4096;; at += 80) {
    cr_assert_eq(pread(fd, rec, 80, at), 80, "no load record in %s", t);
    uint16_t kind;
    memcpy(&kind, rec + 64, 2);
    if (kind != 1)
      continue;
    rec[16] ^= 1; /* elem_off */
    cr_assert_eq(pwrite(fd, rec, 80, at), 80);
    break;
  }
  close(fd);
}

/* The replay of a trace whose run was killed (free mode: each rank's
 * unwritten tail is missing, so a replay cannot follow the last steps;
 * controlled: the run goes on past the last one) says in one line that
 * it stopped where the partial trace runs out, and exits 0 as a replay
 * that matched all it could compare: no "diverged", no "not enabled". An
 * edited early event of the same trace is still a divergence, exit 1. */
Test(hardening, replay_of_a_killed_trace_stops_at_its_end, .init = make_dir,
     .fini = remove_dir, .timeout = 240)
{
  const char *sched[] = {"free", "random:1"};
  for (int m = 0; m < 2; m++) {
    char t[128];
    in_dir(t, sizeof t, m ? "ctl.cstrace" : "free.cstrace");
    char *args[] = {"collsim", "run", "--ranks", "4", "--count", "4096",
                    "--iters", "1000000", "--trace", t, "--schedule",
                    (char *)sched[m], NULL};
    if (!m)
      args[10] = NULL; /* free mode: no --schedule */
    killed_trace(t, m ? 400000 : 4000000, args);
    run_cli(&r, 120, "replay", t, NULL);
    cr_assert_eq(r.status, 0, "%s: exit %d: %s%s", sched[m], r.status, r.out, r.err);
    expect_partial_line("replay", t);
    cr_assert_eq(count_lines(r.err), 1, "%s: more than the partial line: %s",
                 sched[m], r.err);
    cr_assert(strstr(r.out, "stopped where partial trace") &&
              strstr(r.out, "replayed identically"), "%s: %s", sched[m], r.out);
    cr_assert_null(strstr(r.out, "DIVERGED"), "%s: %s", sched[m], r.out);
    cr_assert_null(strstr(r.out, "identical; outcome"), "%s: %s", sched[m], r.out);
    edit_first_load(t);
    run_cli(&r, 120, "replay", t, NULL);
    cr_assert_eq(r.status, 1, "%s edited: exit %d: %s%s", sched[m], r.status,
                 r.out, r.err);
    cr_assert(strstr(r.out, "DIVERGED") && strstr(r.err, "diverged at step"),
              "%s edited: %s%s", sched[m], r.out, r.err);
  }
}

/* Every prefix of a controlled trace (the file cut after record k, for
 * every k) replays as far as it goes: exit 0, "replayed identically".
 * Under relaxed and a2a3 a rank's turn lands posted ops; a replay that
 * ran out inside such a turn lost that turn's steps from its count and
 * said DIVERGED, exit 1, with no divergence shown (ring, 3 ranks, relaxed,
 * random:5: cuts 230 and 253 of 288). */
Test(hardening, every_prefix_of_a_controlled_trace_replays, .init = make_dir,
     .fini = remove_dir, .timeout = 280)
{
  const char *models[] = {"relaxed", "a2a3"};
  for (int m = 0; m < 2; m++) {
    char t[128], cut[128];
    in_dir(t, sizeof t, "full.cstrace");
    in_dir(cut, sizeof cut, "cut.cstrace");
    run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--count", "40",
            "--iters", "1", "--memory-model", models[m], "--schedule", "random:5",
            "--trace",
            t, NULL);
    cr_assert_eq(r.status, 0, "%s: exit %d: %s%s", models[m], r.status, r.out,
                 r.err);
    FILE *f = fopen(t, "rb");
    cr_assert_not_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert(n > 4096 && n < sizeof buf && (n - 4096) % 80 == 0,
              "%s: %zu bytes", models[m], n);
    size_t recs = (n - 4096) / 80;
    for (size_t k = 1; k < recs; k++) {
      f = fopen(cut, "wb");
      cr_assert_not_null(f);
      cr_assert_eq(fwrite(buf, 1, 4096 + k * 80, f), 4096 + k * 80);
      cr_assert_eq(fclose(f), 0);
      run_cli(&r, 60, "replay", cut, NULL);
      cr_assert_eq(r.status, 0, "%s cut after %zu of %zu records: exit %d: "
                   "%s%s", models[m], k, recs, r.status, r.out, r.err);
      cr_assert(strstr(r.out, "replayed identically"), "%s cut %zu: %s",
                models[m], k, r.out);
    }
  }
}

/* ------------------------------------ issue 32 item 8: one line, named */

/* Every subcommand's numeric options against values no option takes (0
 * where 0 is refused, -1, 2^63, 2^64, hex, empty, non-ASCII): exit 2 and
 * exactly one line on stderr that starts with the subcommand and names
 * the value as given. */
Test(hardening, bad_values_are_one_line_naming_subcommand_and_value,
     .timeout = 280)
{
  static const char *T = COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace";
  struct {
    const char *sub, *pre, *opt;
    int zero_ok;
  } cases[] = {
      {"run", NULL, "--ranks", 0},      {"run", NULL, "--count", 0},
      {"run", NULL, "--timeout", 0},    {"run", NULL, "--iters", 0},
      {"run", NULL, "--tile-bytes", 0}, {"replay", T, "--timeout", 0},
      {"explore", NULL, "--schedules", 0}, {"explore", NULL, "--timeout", 0},
      {"explore", NULL, "--ranks", 0},  {"explore", NULL, "--count", 0},
      {"shrink", T, "--budget", 0},     {"ping", NULL, "--ranks", 0},
      {"ping", NULL, "--rounds", 0},    {"ping", NULL, "--timeout", 0},
      {"bench", NULL, "-e", 0},         {"bench", NULL, "-b", 0},
      {"bench", NULL, "--iters", 0},    {"teach", NULL, "--ranks", 0},
      {"trace", T, "--rank", 1},        {"check", T, "--format", 0},
  };
  const char *vals[] = {"0", "-1", "9223372036854775808", "18446744073709551616",
                        "0x10", "", "\xc3\xa9t\xc3\xa9"};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
      if (k == 0 && cases[i].zero_ok)
        continue;
      char *args[6] = {(char *)cases[i].sub};
      int n = 1;
      if (cases[i].pre)
        args[n++] = (char *)cases[i].pre;
      args[n++] = (char *)cases[i].opt;
      args[n++] = (char *)vals[k];
      run_argv(&r, 60, args);
      char head[32], quoted[64];
      snprintf(head, sizeof head, "collsim %s: ", cases[i].sub);
      snprintf(quoted, sizeof quoted, "'%s'", vals[k]);
      cr_assert_eq(r.status, 2, "%s %s '%s': exit %d: %s", cases[i].sub,
                   cases[i].opt, vals[k], r.status, r.err);
      cr_assert_eq(count_lines(r.err), 1, "%s %s '%s': not one line: %s",
                   cases[i].sub, cases[i].opt, vals[k], r.err);
      cr_assert(!strncmp(r.err, head, strlen(head)), "%s %s '%s': %s",
                cases[i].sub, cases[i].opt, vals[k], r.err);
      cr_assert(strstr(r.err, quoted), "%s %s '%s': the value is not named: %s",
                cases[i].sub, cases[i].opt, vals[k], r.err);
    }
  /* An unknown option, and an option without its value: one line too. */
  const char *subs[] = {"run", "replay", "explore", "shrink", "teach", "ping",
                        "bench", "trace", "check"};
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    char *args[] = {(char *)subs[i], "--no-such-option", NULL};
    run_argv(&r, 30, args);
    cr_assert_eq(r.status, 2, "%s: exit %d", subs[i], r.status);
    cr_assert_eq(count_lines(r.err), 1, "%s: not one line: %s", subs[i], r.err);
    cr_assert(strstr(r.err, "--no-such-option"), "%s: %s", subs[i], r.err);
    char head[32];
    snprintf(head, sizeof head, "collsim %s: ", subs[i]);
    cr_assert(!strncmp(r.err, head, strlen(head)), "%s: %s", subs[i], r.err);
  }
}

/* A replayed header with a field no run has names that field and value. */
static void set_dtype_9(struct cs_trace_header *h, void *arg)
{
  (void)arg;
  h->dtype = 9;
}
static void set_user_no_path(struct cs_trace_header *h, void *arg)
{
  (void)arg;
  h->algo = CS_TRACE_ALGO_USER;
  memset(h->algo_path, 0, sizeof h->algo_path);
}

Test(hardening, replay_names_the_bad_header_field, .timeout = 60)
{
  static const char *T = COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace";
  struct {
    void (*edit)(struct cs_trace_header *, void *);
    const char *field;
  } cases[] = {{set_dtype_9, "dtype = 9"}, {set_user_no_path, "algo_path is empty"}};
  for (size_t i = 0; i < 2; i++) {
    char path[] = "/tmp/collsim-hdr-XXXXXX";
    edited_trace(T, path, cases[i].edit, NULL);
    run_cli(&r, 30, "replay", path, NULL);
    unlink(path);
    cr_assert_eq(r.status, 2, "%s: exit %d: %s", cases[i].field, r.status, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, cases[i].field), "'%s' not named: %s",
              cases[i].field, r.err);
  }
}

/* ------- round two, 4: temporaries nobody can squat, and clean sweeps */

/* Files in dir whose names start with prefix and that uid owns. */
static int owned_in(const char *prefix, uid_t uid)
{
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  char p[512];
  struct stat sb;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix)) &&
        lstat(in_dir(p, sizeof p, e->d_name), &sb) == 0 && sb.st_uid == uid)
      n++;
  closedir(d);
  return n;
}

/* As nobody, plants in dir a symlink to precious at every name the
 * temporaries of explore and shrink had when they were <pid>-based: pids
 * 1..200 (a fresh pid namespace starts at 1), explore's indices 0..15. */
static void plant_temp_names(const char *precious)
{
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    become_nobody();
    char name[96], p[200];
    for (int q = 1; q <= 200; q++) {
      for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, ".explore-%d-%d.cstrace", q, i);
        if (symlink(precious, in_dir(p, sizeof p, name)) < 0)
          _exit(120);
      }
      static const char *const kind[] = {"best", "try"};
      for (int i = 0; i < 2; i++) {
        snprintf(name, sizeof name, ".shrink-%d-%s.cstrace", q, kind[i]);
        if (symlink(precious, in_dir(p, sizeof p, name)) < 0)
          _exit(121);
      }
    }
    _exit(0);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "nobody could not plant: %d", st);
}

/* Runs collsim ARGS as the second process of a fresh pid namespace (its
 * pid is 2 there: the predictable part of a pid-based name); stdout and
 * stderr into out. Returns the exit status, -1 where no such namespace
 * can be made. Everything in the namespace dies with its first process,
 * which dies with this one (PR_SET_PDEATHSIG). */
static int run_in_pid_ns(cli_out_t *out, char *const args[])
{
  char tmpl[] = "/tmp/collsim-hard-out-XXXXXX";
  int fo = mkstemp(tmpl);
  cr_assert(fo >= 0);
  unlink(tmpl);
  pid_t c = fork();
  cr_assert_neq(c, -1);
  if (c == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWPID) < 0)
      _exit(125);
    pid_t init = fork();
    if (init < 0)
      _exit(126);
    if (init == 0) { /* pid 1 */
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      pid_t e = fork();
      if (e == 0) { /* pid 2 */
        dup2(fo, 1);
        dup2(fo, 2);
        alarm(200);
        execv(bin_path(), args);
        _exit(127);
      }
      int s;
      while (waitpid(e, &s, 0) < 0 && errno == EINTR)
        ;
      _exit(WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s));
    }
    int s;
    waitpid(init, &s, 0);
    _exit(WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s));
  }
  int st;
  cr_assert_eq(waitpid(c, &st, 0), c);
  ssize_t k = pread(fo, out->out, sizeof out->out - 1, 0);
  out->out[k > 0 ? k : 0] = 0;
  out->err[0] = 0;
  close(fo);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 125)
    return -1;
  return out->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A second user who plants links at the pid-based temporary names of
 * explore and shrink made explore exit 2 (its run refused the trace) and
 * shrink say the run did not fail. The names are random now and made with
 * O_EXCL: both work as on an empty directory and nobody's file, and the
 * file behind it, are untouched. */
Test(hardening, squatted_temp_names_stop_neither_explore_nor_shrink,
     .init = make_dir, .fini = remove_dir, .timeout = 200)
{
  if (geteuid() != 0)
    hard_skip("needs root: the test plants names as nobody");
  cr_assert_eq(chmod(dir, 01777), 0); /* a shared directory, like /tmp */
  char precious[160], min[160], tr[160];
  in_dir(precious, sizeof precious, "precious");
  write_file(precious, "root's file\n");
  plant_temp_names(precious);
  char *ex[] = {(char *)bin_path(), "explore", "--algo", "ring", "--ranks",
                "3", "--count", "40", "--bug", "no-fence-before-notify",
                "--schedules", "200", "-o", dir, NULL};
  int st = run_in_pid_ns(&r, ex);
  if (st < 0)
    hard_skip("no private pid namespace here (needs CAP_SYS_ADMIN)");
  cr_assert_eq(st, 1, "explore: exit %d: %s", st, r.out);
  cr_assert(strstr(r.out, "failure 1: wrong result"), "%s", r.out);
  cr_assert(strstr(r.out, "explore-1.min.cstrace"), "explore's shrink: %s",
            r.out);
  expect_file(precious, "root's file\n");

  shipped(tr, sizeof tr, "bugs/ring-no-ready-barrier.cstrace", "bug.cstrace");
  cr_assert_eq(chmod(tr, 0644), 0);
  char *sh[] = {(char *)bin_path(), "shrink", tr, "-o",
                (char *)in_dir(min, sizeof min, "min.cstrace"), NULL};
  st = run_in_pid_ns(&r, sh);
  cr_assert_eq(st, 0, "shrink: exit %d: %s", st, r.out);
  cr_assert_eq(access(min, R_OK), 0, "%s", r.out);
  expect_file(precious, "root's file\n");
  /* nobody's links are all still there, and no temporary of root's */
  cr_assert_eq(owned_in(".explore-", NOBODY), 200 * 16);
  cr_assert_eq(owned_in(".shrink-", NOBODY), 200 * 2);
  cr_assert_eq(owned_in(".explore-", 0), 0);
  cr_assert_eq(owned_in(".shrink-", 0), 0);
}

/* The first entry of dir whose name starts with prefix, waited for while
 * pid runs (1 ms naps; the test's timeout bounds it). 1 when it came, 0
 * when pid ended first. */
static int wait_for_entry(pid_t pid, const char *prefix)
{
  struct timespec nap = {0, 1000000};
  for (;;) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int seen = 0;
    for (struct dirent *e; !seen && (e = readdir(d));)
      seen = !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    if (seen)
      return 1;
    if (waitpid(pid, NULL, WNOHANG) == pid)
      return 0;
    nanosleep(&nap, NULL);
  }
}

/* Starts collsim ARGS (TMPDIR = the test's directory), SIGKILLs it as soon
 * as a temporary named prefix... shows in the directory, and reaps, as a
 * subreaper, every process it left: each must have been killed with it
 * (a run it started finishing on its own afterwards is a process left).
 * Then `collsim clean DIR` must leave no temporary and no shm name of it. */
static void kill_and_clean(const char *prefix, char *const args[])
{
  cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    setenv("TMPDIR", dir, 1);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execv(bin_path(), args);
    _exit(127);
  }
  int came = wait_for_entry(pid, prefix);
  if (came)
    kill(pid, SIGKILL);
  cr_assert(came, "%s ended before a %s* temporary showed", args[1], prefix);
  int st, left = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  for (pid_t q; (q = waitpid(-1, &st, 0)) > 0;)
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
      left++; /* ended by itself: it outlived the command */
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  cr_assert_eq(left, 0, "%s: %d processes outlived it", args[1], left);
  cr_assert_gt(owned_in(prefix, 0), 0, "%s: nothing left for clean to do",
               args[1]);
  cli_out_t c;
  setenv("TMPDIR", dir, 1);
  run_cli(&c, 30, "clean", dir, NULL);
  unsetenv("TMPDIR");
  cr_assert_eq(c.status, 0, "%s%s", c.out, c.err);
  cr_assert(strstr(c.out, "removed "), "%s", c.out);
  cr_assert_eq(owned_in(".explore-", 0) + owned_in(".shrink-", 0) +
               owned_in("collsim-", 0), 0, "%s: clean left something: %s",
               args[1], c.out);
  cr_assert_eq(cs_world_count_names(pid), 0);
}

Test(hardening, a_killed_explore_leaves_no_run_and_clean_sweeps_its_trace,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  /* each schedule runs for many seconds: 8 ranks, 1 KiB tiles */
  char *ex[] = {(char *)bin_path(), "explore", "--ranks", "8", "--count",
                "1000000", "--tile-bytes", "1024", "--schedules", "4", "-j",
                "2", "--no-shrink", "-o", dir, NULL};
  kill_and_clean(".explore-", ex);
}

Test(hardening, a_killed_shrink_or_run_check_leaves_nothing_after_clean,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char tr[160], min[160];
  shipped(tr, sizeof tr, "bugs/ring-no-ready-barrier.cstrace", "bug.cstrace");
  char *sh[] = {(char *)bin_path(), "shrink", tr, "-o",
                (char *)in_dir(min, sizeof min, "min.cstrace"), NULL};
  kill_and_clean(".shrink-", sh);
  char *ck[] = {(char *)bin_path(), "run", "--ranks", "8", "--count",
                "1000000", "--tile-bytes", "1024", "--schedule", "random:1",
                "--iters", "1", "--check", NULL};
  kill_and_clean("collsim-run-check-", ck);
}

/* ------- round two, 7: a rank stopped with SIGSTOP is the hung rank */

/* The pids of pid's children (/proc/PID/task/PID/children), at most cap;
 * their number. */
static int children_of(pid_t pid, pid_t *kids, int cap)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  int n = 0, k;
  while (n < cap && fscanf(f, "%d", &k) == 1)
    kids[n++] = (pid_t)k;
  fclose(f);
  return n;
}

/* A run whose rank is stopped (SIGSTOP) times out in another rank's wait;
 * the headline named that waiter (rank 0). It names the stopped rank and
 * its pid first, and the trace's abort record blames it. */
Test(hardening, a_rank_stopped_with_sigstop_is_named_first,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char trace[128], errp[128];
  in_dir(trace, sizeof trace, "s.cstrace");
  in_dir(errp, sizeof errp, "err.txt");
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    int fe = open(errp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    dup2(fe, 2);
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    alarm(50);
    execl(bin_path(), bin_path(), "run", "--ranks", "4", "--count", "4096",
          "--iters", "1000000", "--timeout", "1", "--trace", trace,
          (char *)NULL);
    _exit(127);
  }
  pid_t kids[8];
  int n;
  struct timespec nap = {0, 1000000};
  while ((n = children_of(pid, kids, 8)) >= 0 && n < 4) {
    cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "the run ended early");
    nanosleep(&nap, NULL);
  }
  if (n < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    hard_skip("no /proc/PID/task/PID/children here");
  }
  pid_t victim = kids[2];
  cr_assert_eq(kill(victim, SIGSTOP), 0);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  kill(victim, SIGCONT); /* should it have outlived the run (it must not) */
  cr_assert_eq(kill(victim, 0), -1, "the stopped rank outlived the run");
  char err[8192] = "";
  FILE *f = fopen(errp, "r");
  cr_assert_not_null(f);
  size_t k = fread(err, 1, sizeof err - 1, f);
  err[k] = 0;
  fclose(f);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d: %s", st, err);
  int rank = -1, said_pid = 0;
  cr_assert_eq(sscanf(err, "rank %d: stopped by a signal (pid %d:", &rank,
                      &said_pid), 2, "the first line names no stopped rank:\n%s",
               err);
  cr_assert_eq(said_pid, (int)victim, "%s", err);
  static cli_out_t t;
  trace_text(trace, &t);
  char want[48];
  snprintf(want, sizeof want, "first failing rank %d", rank);
  cr_assert(strstr(t.out, want), "'%s' not in:\n%.2000s", want, t.out);
}

/* ------------- round two, 6: plug-ins that stall or leave processes */

#ifndef COLLSIM_PLUGINS
#error "COLLSIM_PLUGINS must name the built plug-ins (CMakeLists.txt sets it)"
#endif
#define MISBEHAVE COLLSIM_PLUGINS "/misbehave.so"

/* A rank that spins or pause()s in its body in controlled mode holds the
 * turn every other rank waits for, so none finishes and no wait times
 * out: the run hung with no report. Once the wait timeout passes, the
 * rank is named, exit 3 (the test's own bound: 60 s). */
Test(hardening, a_stalled_rank_holding_the_turn_is_named, .timeout = 150)
{
  const char *how[] = {"spin", "pause"};
  for (int i = 0; i < 2; i++) {
    setenv("COLLSIM_MISBEHAVE", how[i], 1);
    run_cli(&r, 60, "run", "--algo", MISBEHAVE, "--ranks", "2", "--count",
            "8", "--iters", "1", "--schedule", "random:1", "--timeout", "1",
            NULL);
    unsetenv("COLLSIM_MISBEHAVE");
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i], r.status, r.out,
                 r.err);
    cr_assert(!strncmp(r.err, "rank 1: no progress for ", 24),
              "%s: the first line does not name rank 1:\n%s", how[i], r.err);
  }
}

/* A rank that forks a child which calls setsid() and sleeps: the run
 * ended, the child lived on, holding the rank's mappings. The launcher
 * kills and reaps every process a rank leaves. */
Test(hardening, a_ranks_setsid_child_does_not_outlive_the_run,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char pidf[128];
  in_dir(pidf, sizeof pidf, "pid.txt");
  setenv("COLLSIM_MISBEHAVE", "setsid", 1);
  setenv("COLLSIM_MISBEHAVE_PIDFILE", pidf, 1);
  /* Its output through files: the child would hold a pipe open. */
  char outp[128];
  in_dir(outp, sizeof outp, "out.txt");
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    int fo = open(outp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    dup2(fo, 1);
    dup2(fo, 2);
    alarm(50);
    execl(bin_path(), bin_path(), "run", "--algo", MISBEHAVE, "--ranks", "2",
          "--count", "8", "--iters", "1", (char *)NULL);
    _exit(127);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  unsetenv("COLLSIM_MISBEHAVE");
  unsetenv("COLLSIM_MISBEHAVE_PIDFILE");
  int child = 0;
  FILE *f = fopen(pidf, "r");
  cr_assert_not_null(f, "the rank's child wrote no pid");
  cr_assert_eq(fscanf(f, "%d", &child), 1);
  fclose(f);
  int alive = child > 1 && kill(child, 0) == 0;
  if (alive) /* do not leave it behind ourselves */
    kill(child, SIGKILL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
  cr_assert_not(alive, "the rank's setsid child (pid %d) outlived the run",
                child);
}

/* Processes other than the caller that map a region of launcher `pid`
 * (/dev/shm/collsim-PID-N, its name long unlinked): read from /proc.
 * With `end`, each is sent SIGKILL (the test leaves none behind). */
static int holding_region_of(pid_t pid, int end)
{
  char needle[64], path[64], line[512];
  snprintf(needle, sizeof needle, "/dev/shm/collsim-%d-", (int)pid);
  DIR *d = opendir("/proc");
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int p = atoi(e->d_name);
    if (p <= 0 || p == getpid())
      continue;
    snprintf(path, sizeof path, "/proc/%d/maps", p);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    int hit = 0;
    while (!hit && fgets(line, sizeof line, f))
      hit = strstr(line, needle) != NULL;
    fclose(f);
    n += hit;
    if (hit && end)
      kill(p, SIGKILL);
  }
  closedir(d);
  return n;
}

/* The same setsid children when the launcher itself is killed (SIGKILL:
 * it can end nothing): they lived on after `collsim clean`, holding the
 * dead run's shared memory (pages /dev/shm never gets back). clean now
 * ends every process of ours that maps a region whose launcher is gone. */
Test(hardening, clean_ends_processes_holding_a_killed_runs_region,
     .init = make_dir, .fini = remove_dir, .timeout = 90)
{
  char pidf[128], outp[128];
  in_dir(pidf, sizeof pidf, "pid.txt");
  in_dir(outp, sizeof outp, "out.txt");
  setenv("COLLSIM_MISBEHAVE", "setsid", 1);
  setenv("COLLSIM_MISBEHAVE_PIDFILE", pidf, 1);
  pid_t pid = fork();
  cr_assert_neq(pid, -1);
  if (pid == 0) {
    int fo = open(outp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    dup2(fo, 1);
    dup2(fo, 2);
    alarm(60);
    execl(bin_path(), bin_path(), "run", "--algo", MISBEHAVE, "--ranks", "2",
          "--count", "8", "--iters", "1000000", (char *)NULL);
    _exit(127);
  }
  unsetenv("COLLSIM_MISBEHAVE");
  unsetenv("COLLSIM_MISBEHAVE_PIDFILE");
  for (int i = 0; i < 500 && access(pidf, F_OK) < 0; i++)
    usleep(20000);
  usleep(100000);
  kill(pid, SIGKILL);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFSIGNALED(st), "the run ended before it was killed: %d", st);
  int before = 0;
  for (int i = 0; i < 20 && !before; i++, usleep(50000))
    before = holding_region_of(pid, 0);
  if (before == 0)
    cr_assert_fail("no setsid child outlived the launcher to test");
  run_cli(&r, 30, "clean", NULL);
  int after = 0;
  for (int i = 0; i < 40 && (after = holding_region_of(pid, 0)) > 0; i++)
    usleep(50000);
  holding_region_of(pid, 1);
  cr_assert_eq(r.status, 0, "clean: exit %d: %s", r.status, r.err);
  cr_assert_eq(after, 0, "%d of %d processes still hold the killed run's "
               "region after clean: %s", after, before, r.out);
  cr_assert(strstr(r.out, "collsim clean: ended "), "%s", r.out);
}

/* A collective whose slots() fills one slot more than CS_COLL_MAX_SLOTS
 * (and says so) wrote past collsim's array of 8 on its stack: collsim
 * died with SIGSEGV and no word. The count is refused as any bad window
 * is, exit 2, one line. */
Test(hardening, a_collective_with_too_many_slots_is_refused, .timeout = 30)
{
  setenv("COLLSIM_MISBEHAVE", "slots9", 1);
  run_cli(&r, 20, "run", "--algo", MISBEHAVE, "--ranks", "2", "--count", "8",
          "--iters", "1", NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  expect_refused("are not a window collsim can make");
  cr_assert(strstr(r.err, "collsim run: misbehave: its slots"), "%s", r.err);
}

/* A collective's name went to the terminal as it was: one with a newline
 * and an escape sequence (here clear-screen) broke run's one-line
 * summary and drove the terminal. It is refused at load like a bad phase
 * name: exit 2, one line, nothing raw printed. */
Test(hardening, a_collective_name_with_control_characters_is_refused,
     .timeout = 30)
{
  setenv("COLLSIM_MISBEHAVE", "name-ctl", 1);
  run_cli(&r, 20, "run", "--algo", MISBEHAVE, "--ranks", "2", "--count", "8",
          "--iters", "1", NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  expect_refused("collsim run: --algo ");
  cr_assert(strstr(r.err, "name"), "%s", r.err);
  cr_assert_null(strchr(r.err, '\x1b'), "an escape printed: %s", r.err);
}

/* ------------- round two, 3: a replay that reproduces only some ranks */

/* A free run whose rank 1 hangs: the other ranks' recorded events go on
 * after the hang, and a replay that stops at the hang (the scheduler
 * waits for rank 1) reproduces only part of them. It said 'identical'
 * (exit 0); it must say which steps it did not reproduce, exit 1. */
Test(hardening, a_replay_that_reproduces_only_some_ranks_is_not_identical,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char path[128];
  in_dir(path, sizeof path, "h.cstrace");
  run_cli(&r, 30, "run", "--algo", "mesh", "--ranks", "3", "--count", "100",
          "--iters", "1", "--fault", "1:hang:5", "--timeout", "1", "--trace",
          path, NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  run_cli(&r, 30, "replay", path, NULL);
  /* Rank 2 waits for rank 1's notify at rank 1's event 4, its last
   * recorded step, and has recorded events after that wait; in the
   * replay rank 1 then hangs at event 5 without posting, so no later
   * step is granted: rank 2's steps after its wait are never reproduced,
   * whatever the free run's order. */
  cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "replay: NOT identical to "), "%s", r.out);
  cr_assert(strstr(r.out, "rank 2: "), "rank 2 not named: %s", r.out);
  cr_assert_null(strstr(r.out, ": identical"), "%s", r.out);
  /* In a schedule that is not free, the recorded run stopped where its
   * replay stops: identical. */
  run_cli(&r, 30, "run", "--algo", "mesh", "--ranks", "3", "--count", "100",
          "--iters", "1", "--fault", "1:hang:5", "--timeout", "1",
          "--schedule", "random:1", "--trace", path, NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  run_cli(&r, 30, "replay", path, NULL);
  cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, "identical; outcome: hang"), "%s", r.out);
}

/* An abort() in the collective's code that collsim runs itself (here
 * its expect) raised SIGABRT inside libc, not at the library's
 * instruction, so collsim took it for its own and died of it (status
 * 134). It is the library's when the library is on the stack: one line
 * naming it and abort(), exit 3. */
Test(hardening, an_abort_in_launcher_called_plugin_code_is_named,
     .timeout = 60)
{
  setenv("COLLSIM_MISBEHAVE", "expect-abort", 1);
  run_cli(&r, 30, "run", "--algo", MISBEHAVE, "--ranks", "2", "--count", "8",
          "--iters", "1", NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  cr_assert_eq(r.status, 3, "exit %d: %s%s", r.status, r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, "misbehave.so crashed with SIGABRT (it called "
                          "abort())"), "%s", r.err);
}

/* --algo names a shared object to run: a FIFO or a device there blocked
 * bench (dlopen reads it; run only refused it because it hashes the file
 * first), another user's link let that user pick the code collsim runs,
 * and a refusal named the link's target instead of the value given. Now
 * each is one line naming the value as given, exit 2, at once. */
Test(hardening, algo_takes_only_a_regular_file_through_no_foreign_link,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char fifo[128], link[128], junk[128];
  in_dir(fifo, sizeof fifo, "x.so");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  in_dir(junk, sizeof junk, "junk.so");
  write_file(junk, "not a shared object\n");
  in_dir(link, sizeof link, "theirs.so");
  cr_assert_eq(symlink(COLLSIM_PLUGINS "/rd_allreduce.so", link), 0);
  int foreign = lchown(link, 65534, 65534) == 0;
  const char *cmds[][12] = {
      {"run", "--ranks", "2", "--count", "8", "--iters", "1", "--algo", NULL},
      {"bench", "-b", "8", "-e", "8", "-n", "1", "--ranks", "2", "--algo",
       NULL},
      {"teach", "--plain", "--algo", NULL}};
  for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++)
    for (int k = 0; k < 3; k++) {
      const char *val = k == 0 ? fifo : k == 1 ? junk : link;
      if (k == 2 && !foreign)
        continue;
      const char *argv[14];
      int n = 0;
      while (cmds[c][n]) {
        argv[n] = cmds[c][n];
        n++;
      }
      argv[n++] = val;
      argv[n] = NULL;
      run_argv(&r, 20, (char *const *)argv);
      char want[200];
      snprintf(want, sizeof want, "collsim %s: --algo %s", cmds[c][0], val);
      cr_assert_eq(r.status, 2, "%s --algo %s: exit %d: %s", cmds[c][0], val,
                   r.status, r.err);
      cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
      cr_assert(strstr(r.err, want) == r.err, "'%s' does not start: %s", want,
                r.err);
    }
  if (!foreign)
    hard_skip("cannot give a link to another user: %s", strerror(errno));
  /* Our own link to it loads as before. */
  cr_assert_eq(lchown(link, getuid(), getgid()), 0);
  run_cli(&r, 30, "run", "--ranks", "2", "--count", "8", "--iters", "1",
          "--algo", link, NULL);
  cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
}

/* replay --input that is not the recorded run's inputs: the line named
 * neither the option nor the file ("the inputs differ ... (input hash
 * mismatch)"), also when the trace was recorded without --input at all. */
Test(hardening, replay_names_the_input_it_refuses, .init = make_dir,
     .fini = remove_dir, .timeout = 60)
{
  char a[128], b[128], filled[128], fed[128], want[300];
  in_dir(a, sizeof a, "a.npy");
  in_dir(b, sizeof b, "b.npy");
  in_dir(filled, sizeof filled, "filled.cstrace");
  in_dir(fed, sizeof fed, "fed.cstrace");
  run_cli(&r, 30, "run", "--ranks", "2", "--count", "17", "--iters", "1",
          "--output", a, "--trace", filled, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  run_cli(&r, 30, "run", "--ranks", "2", "--count", "17", "--iters", "1",
          "--fill", "pto", "--output", b, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  run_cli(&r, 30, "run", "--iters", "1", "--input", a, "--trace", fed, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  run_cli(&r, 30, "replay", filled, "--input", a, NULL);
  snprintf(want, sizeof want, "collsim replay: --input %s ", a);
  expect_refused(want);
  run_cli(&r, 30, "replay", fed, "--input", b, NULL);
  snprintf(want, sizeof want, "collsim replay: --input %s ", b);
  /* (its headline on stdout comes first: the trace was read) */
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, want) == r.err, "'%s' not at the start: %s", want,
            r.err);
  run_cli(&r, 30, "replay", fed, "--input", a, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
}

/* explore -o DIR and verify -o DIR write names of their own choosing in
 * DIR: a link planted under one (here our own, so the output rule alone
 * would follow it) made explore shrink into the link's target and verify
 * write its counterexample there. explore now takes the next N whose two
 * names are both free; verify refuses before it runs. */
Test(hardening, explore_and_verify_never_write_through_a_planted_link,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char precious[128], out[128], name[400];
  in_dir(precious, sizeof precious, "precious");
  in_dir(out, sizeof out, "out");
  cr_assert_eq(mkdir(out, 0700), 0);
  write_file(precious, "precious\n");
  const char *planted[] = {"explore-1.min.cstrace", "verify-1.cstrace",
                           "verify-1.min.cstrace"};
  for (int i = 0; i < 3; i++) {
    snprintf(name, sizeof name, "%s/%s", out, planted[i]);
    cr_assert_eq(symlink(precious, name), 0);
  }
  run_cli(&r, 200, "explore", "--algo", "ring", "--ranks", "3", "--count",
          "40", "--bug", "ring-no-ready-barrier", "--schedules", "30", "-j",
          "1", "-o", out, NULL);
  cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
  expect_file(precious, "precious\n");
  snprintf(name, sizeof name, "trace %s/explore-2.min.cstrace", out);
  cr_assert(strstr(r.out, name), "not shrunk into explore-2: %s", r.out);
  snprintf(name, sizeof name, "%s/explore-1.cstrace", out);
  cr_assert_eq(access(name, F_OK), -1, "explore-1 kept beside a taken .min");
  for (int k = 0; k < 2; k++) {
    run_cli(&r, 60, "verify", "--algo", "ring", "--ranks", "2", "--count",
            "4", "--bug", "ring-no-ready-barrier", "-o", out, NULL);
    snprintf(name, sizeof name, "collsim verify: -o %s: %s/verify-1%s "
             "is a symbolic link", out, out, k ? ".min.cstrace" : ".cstrace");
    cr_assert_eq(r.status, 2, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, name) == r.err, "'%s' not in: %s", name, r.err);
    expect_file(precious, "precious\n");
    snprintf(name, sizeof name, "%s/verify-1.cstrace", out);
    unlink(name);
  }
}

/* teach --plain --trace FILE ran its lesson through a temporary trace and
 * removed it: FILE was checked, then never written. Now the lesson's run
 * is FILE, a whole trace of the lesson's configuration that replays. */
Test(hardening, teach_plain_keeps_the_trace_asked_for, .init = make_dir,
     .fini = remove_dir, .timeout = 120)
{
  char path[128];
  in_dir(path, sizeof path, "lesson.cstrace");
  run_cli(&r, 60, "teach", "--plain", "--ranks", "3", "--count", "12",
          "--schedule", "random:2", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
  run_cli(&r, 60, "trace", path, NULL);
  cr_assert_eq(r.status, 0, "no trace kept: %s", r.err);
  cr_assert(strstr(r.out, "allreduce ring, 3 ranks, count 12 x fp32"), "%s",
            r.out);
  run_cli(&r, 60, "replay", path, NULL);
  cr_assert_eq(r.status, 0, "exit %d: %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, ": identical; outcome: verified"), "%s", r.out);
}

/* The launcher lists its children from /proc before and after every run
 * (to end what the ranks left behind): two directory scans per run, each
 * of explore's and verify's thousands. With no child before and none
 * left after its ranks are reaped (the common case), it asks the kernel
 * instead (waitid) and reads no /proc/self/task at all. Counted on the
 * launcher's own system calls with strace. */
Test(hardening, launcher_scans_proc_only_when_it_has_children,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char log[128], cmd[600];
  in_dir(log, sizeof log, "strace.txt");
  /* LeakSanitizer refuses to run under ptrace: the sanitizer build's
   * binary is traced with leak checking off (other builds ignore it). */
  snprintf(cmd, sizeof cmd, "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" "
           "strace -e trace=openat -o '%s' '%s' run --ranks 2 --count 8 "
           "--iters 1 >/dev/null 2>&1", log, bin_path());
  if (system("strace -o /dev/null true >/dev/null 2>&1") != 0)
    cr_skip_test("no strace here, or ptrace is not allowed");
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  FILE *f = fopen(log, "r");
  cr_assert_not_null(f);
  char line[600];
  int scans = 0, lines = 0;
  while (fgets(line, sizeof line, f)) {
    lines++;
    scans += strstr(line, "\"/proc/self/task\"") != NULL;
  }
  fclose(f);
  cr_assert_gt(lines, 5, "strace logged nothing");
  cr_assert_eq(scans, 0, "%d scans of /proc/self/task in a run with no "
               "other child", scans);
}

/* A crash in the collective's own code that collsim runs (refuse, expect,
 * signal_final) under verify and explore: verify died with exit 3 and not
 * a word (its line went to the runs' capture file), explore counted it as
 * a failure of its first schedule with an empty signature and an empty
 * trace, then tried to shrink that. Both now end with the line of collsim
 * run's guard, as theirs, exit 3, and keep no trace. */
Test(hardening, verify_and_explore_name_a_crash_in_plugin_code_they_run,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  const char *how[] = {"refuse", "expect", "signal-final"};
  for (int i = 0; i < 3; i++)
    for (int e = 0; e < 2; e++) {
      setenv("COLLSIM_MISBEHAVE", how[i], 1);
      if (e)
        run_cli(&r, 60, "explore", "--algo", MISBEHAVE, "--ranks", "2",
                "--count", "8", "--schedules", "3", "-o", dir, NULL);
      else
        run_cli(&r, 60, "verify", "--algo", MISBEHAVE, "--ranks", "2",
                "--count", "8", "-o", dir, NULL);
      unsetenv("COLLSIM_MISBEHAVE");
      char want[300];
      snprintf(want, sizeof want, "collsim %s: the collective %s crashed "
               "with SIGSEGV in its own code", e ? "explore" : "verify",
               MISBEHAVE);
      cr_assert_eq(r.status, 3, "%s %s: exit %d: %s%s", e ? "explore" :
                   "verify", how[i], r.status, r.out, r.err);
      cr_assert(strstr(r.err, want), "%s: '%s' not in: %s", how[i], want,
                r.err);
      cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
      cr_assert_eq(count_entries(), 0, "%s %s left a file", e ? "explore" :
                   "verify", how[i]);
    }
}

/* shrink of a plug-in's trace whose collective crashes in its own code
 * that collsim runs took the crash for the failure (an empty signature)
 * and "shrank" it to 1 rank and count 0, writing that trace. Now it
 * stops there with the guard's line as its own, exit 3, writing
 * nothing. */
Test(hardening, shrink_names_a_crash_in_plugin_code_and_writes_nothing,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  char trace[128], out[128];
  in_dir(trace, sizeof trace, "p.cstrace");
  in_dir(out, sizeof out, "min.cstrace");
  run_cli(&r, 60, "run", "--algo", MISBEHAVE, "--ranks", "2", "--count", "8",
          "--iters", "1", "--trace", trace, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *how[] = {"refuse", "expect", "signal-final"};
  for (int i = 0; i < 3; i++) {
    setenv("COLLSIM_MISBEHAVE", how[i], 1);
    run_cli(&r, 60, "shrink", trace, "-o", out, NULL);
    unsetenv("COLLSIM_MISBEHAVE");
    char want[300];
    snprintf(want, sizeof want, "\ncollsim shrink: the collective %s crashed "
             "with SIGSEGV in its own code", MISBEHAVE);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i], r.status, r.out,
                 r.err);
    cr_assert(strstr(r.err, want), "%s: '%s' not in: %s", how[i], want + 1,
              r.err);
    cr_assert_eq(count_lines(r.err), 2, "(the loading line and the crash) %s",
                 r.err);
    cr_assert_eq(access(out, F_OK), -1, "%s: %s written", how[i], out);
  }
}

/* A value with a newline in it (a hostile file name, a pasted number)
 * made the one-line refusal two lines; control characters now show as
 * '?', as the trace readers already name such a path. */
Test(hardening, a_control_character_in_a_value_keeps_the_refusal_one_line,
     .timeout = 30)
{
  const char *cases[][5] = {
      {"run", "--ranks", "1\n2", "'1?2'", NULL},
      {"run", "--trace", "/nonexistent/a\nb", "a?b", NULL},
      {"explore", "--schedules", "1\r", "'1?'", NULL},
      {"run", "--bogus\nx", NULL, "'--bogus?x'", NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i][2])
      run_cli(&r, 20, cases[i][0], cases[i][1], cases[i][2], NULL);
    else
      run_cli(&r, 20, cases[i][0], cases[i][1], NULL);
    expect_refused(cases[i][3]);
  }
}

/* $TMPDIR that names no writable directory: bench --trace-cost said so,
 * exit 2 (bad input), while run --check and teach said less and exited 3
 * as if a run had aborted. Now all three alike. */
Test(hardening, a_bad_tmpdir_is_bad_input_for_every_subcommand,
     .init = make_dir, .fini = remove_dir, .timeout = 60)
{
  char file[128];
  in_dir(file, sizeof file, "plain-file");
  write_file(file, "x\n");
  const char *dirs[] = {"/nonexistent-collsim-tmp", file};
  for (int d = 0; d < 2; d++) {
    setenv("TMPDIR", dirs[d], 1);
    for (int c = 0; c < 3; c++) {
      if (c == 0)
        run_cli(&r, 30, "run", "--ranks", "2", "--count", "8", "--iters",
                "1", "--check", NULL);
      else if (c == 1)
        run_cli(&r, 30, "teach", "--plain", NULL);
      else
        run_cli(&r, 30, "bench", "-b", "8", "-e", "8", "-n", "20", "--ranks",
                "2", "--algo", "ring", "--trace-cost", NULL);
      cr_assert_eq(r.status, 2, "%s: exit %d: %s", dirs[d], r.status, r.err);
      cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
      cr_assert(strstr(r.err, dirs[d]), "%s not named: %s", dirs[d], r.err);
      cr_assert(strstr(r.err, "expected $TMPDIR"), "%s", r.err);
    }
    unsetenv("TMPDIR");
  }
}
