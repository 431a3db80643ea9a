/*
 * main.c - the `collsim` command: git-style subcommand dispatch, --help,
 * --version, `help SUB`, and `clean`.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../../window/world.h"
#include "cli.h"
#include "temp.h"

typedef struct subcmd {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} subcmd_t;

static const subcmd_t cmds[] = {
    {"run", cs_cmd_run, "run a verified allreduce (a built-in algorithm or ./x.so)"},
    {"replay", cs_cmd_replay, "re-execute a recorded run in its exact order"},
    {"explore", cs_cmd_explore, "search controlled schedules of a run for a failure"},
    {"verify", cs_cmd_verify, "run every execution class of a configuration once: verified or a counterexample"},
    {"shrink", cs_cmd_shrink, "cut a failing trace down to a small run that fails the same way"},
    {"teach", cs_cmd_teach, "be the scheduler of a live run: step, predict, break it"},
    {"ping", cs_cmd_ping, "pass a token around the ranks; print hop latency"},
    {"bench", cs_cmd_bench, "time allreduce over a size sweep; nccl-tests table"},
    {"trace", cs_cmd_trace, "show a recorded trace: text, JSON lines, Perfetto"},
    {"check", cs_cmd_check, "find the ordering defects of a recorded run"},
    {"clean", cs_cmd_clean, "remove what killed runs left: shm names, temp files, orphan ranks"},
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void usage(FILE *out)
{
  fprintf(out,
          "usage: collsim [--help] [--version] SUBCOMMAND [OPTIONS]\n"
          "\n"
          "Simulates the allreduce collectives of the PTO projects (PyPTO PR\n"
          "#2161 and later) on one workstation: every rank is a forked process\n"
          "with a communication window in POSIX shared memory, signalling its\n"
          "peers through futex counters; every result is verified against an\n"
          "independent oracle.\n"
          "\n"
          "Subcommands:\n");
  for (size_t i = 0; i < NCMDS; i++)
    fprintf(out, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(out, "  %-8s %s\n", "help", "show the help of a subcommand");
  fprintf(out, "\n'collsim help SUBCOMMAND' or 'collsim SUBCOMMAND --help' "
               "for details.\n\n" CS_CLI_EXIT_HELP
               "verify also exits 4 (its budget ran out) and explore 4 (a "
               "child ended from outside);\n'collsim SUBCOMMAND --help' gives "
               "each one's own meanings.\n");
}

/* One stale name, as clean words it: removed (stdout) or kept (stderr). */
static void clean_said(void *arg, const char *name, int pid, int err)
{
  (void)arg;
  if (!err)
    printf("removed /dev/shm/%s (launcher pid %d is gone)\n", name, pid);
  else
    fprintf(stderr, "collsim clean: cannot remove /dev/shm/%s (launcher "
            "pid %d is gone): %s\n", name, pid, strerror(err));
}

/* One process left holding a killed run's region, as clean words it. */
static void orphan_said(void *arg, int pid, int launcher, int err)
{
  (void)arg;
  if (!err)
    printf("ended pid %d (it held the region of launcher pid %d, which is "
           "gone)\n", pid, launcher);
  else
    fprintf(stderr, "collsim clean: cannot end pid %d (it holds the region "
            "of launcher pid %d, which is gone): %s\n", pid, launcher,
            strerror(err));
}

/* One stale temporary file, as clean words it. */
static void temp_said(void *arg, const char *path, int pid, int err)
{
  (void)arg;
  if (!err)
    printf("removed %s (its collsim, pid %d, is gone)\n", path, pid);
  else
    fprintf(stderr, "collsim clean: cannot remove %s (its collsim, pid %d, "
            "is gone): %s\n", path, pid, strerror(err));
}

/* Sweeps dir's stale temporaries; a dir that cannot be read is one line
 * when it was named (given), silence when it is a default. */
static int sweep(const char *dir, int given, int *n, int *kept)
{
  int k = cs_cli_sweep_temps(dir, temp_said, NULL, kept);
  if (k >= 0) {
    *n += k;
    return 0;
  }
  if (!given)
    return 0;
  cs_cli_error("clean", "cannot read the directory '%s': %s; expected a "
               "directory that explore or shrink wrote into", dir,
               strerror(-k));
  return -1;
}

int cs_cmd_clean(int argc, char **argv)
{
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    printf("usage: collsim clean [DIR...]\n\n"
           "Removes what collsim commands that were killed left behind:\n"
           "/dev/shm/collsim-<pid>-<n> names whose launcher (pid) no longer\n"
           "exists (a run unlinks its region's name right after creating it,\n"
           "so only a launcher killed in that instant leaves one), and the\n"
           "temporary files of a command (pid) that no longer exists and\n"
           "that are yours: collsim-teach-*, collsim-run-check-* and\n"
           "collsim-bench-trace-* in $TMPDIR (or /tmp), and .explore-* and\n"
           ".shrink-* traces in the current directory, in each DIR, and in\n"
           "the directory a killed explore or shrink wrote into (its note,\n"
           "collsim-dir-<pid>-*, in $TMPDIR names it). It also ends\n"
           "(SIGKILL) the processes of yours that still map the shared\n"
           "memory of a launcher that is gone (a rank's child that a\n"
           "launcher killed with SIGKILL could not end).\n");
    return CS_EXIT_OK;
  }
  for (int i = 1; i < argc; i++)
    if (argv[i][0] == '-') {
      cs_cli_error("clean", "unexpected option '%s'; expected directories "
                   "(DIR...)", argv[i]);
      return CS_EXIT_USAGE;
    }
  int kept = 0, files = 0;
  int n = cs_world_clean_stale(clean_said, NULL, &kept);
  if (n < 0) {
    cs_cli_error("clean", "cannot read /dev/shm");
    return CS_EXIT_ABORTED;
  }
  int ended = cs_world_end_orphans(orphan_said, NULL);
  sweep(cs_cli_tmpdir(), 0, &files, &kept);
  sweep(".", 0, &files, &kept);
  for (int i = 1; i < argc; i++)
    if (sweep(argv[i], 1, &files, &kept) < 0)
      return CS_EXIT_USAGE;
  printf("collsim clean: removed %d stale name%s\n", n, n == 1 ? "" : "s");
  if (ended > 0)
    printf("collsim clean: ended %d process%s left holding a killed run's "
           "region\n", ended, ended == 1 ? "" : "es");
  if (files)
    printf("collsim clean: removed %d stale temporary file%s\n", files,
           files == 1 ? "" : "s");
  if (kept)
    printf("collsim clean: %d stale name%s could not be removed (ask their "
           "owner or root)\n", kept, kept == 1 ? "" : "s");
  return kept ? CS_EXIT_ABORTED : CS_EXIT_OK;
}

static const subcmd_t *find(const char *name)
{
  for (size_t i = 0; i < NCMDS; i++)
    if (strcmp(cmds[i].name, name) == 0)
      return &cmds[i];
  return NULL;
}

int main(int argc, char **argv)
{
  /* A file-size limit makes writes fail with EFBIG (reported on the normal
   * error path) instead of killing the launcher mid-run. */
  signal(SIGXFSZ, SIG_IGN);
  /* A run that explore or shrink started dies with it. */
  cs_cli_die_with_parent();
  /* Keep descriptors 0-2 taken: otherwise, with stdin closed, the world's
   * shm descriptor would become fd 0 and be read as the user's input. */
  for (int fd = 0; fd < 3; fd++)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) < 0)
      return CS_EXIT_ABORTED;
  if (argc < 2) {
    usage(stderr);
    return CS_EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    usage(stdout);
    return CS_EXIT_OK;
  }
  if (!strcmp(sub, "--version") || !strcmp(sub, "version")) {
    printf("collsim %s\n", CS_VERSION_STRING);
    return CS_EXIT_OK;
  }
  if (!strcmp(sub, "help")) {
    if (argc < 3 || !strcmp(argv[2], "help")) {
      usage(stdout);
      return CS_EXIT_OK;
    }
    const subcmd_t *c = find(argv[2]);
    if (!c) {
      fprintf(stderr, "collsim: unknown subcommand '%s' (see 'collsim --help')\n",
              argv[2]);
      return CS_EXIT_USAGE;
    }
    char *hargv[] = {(char *)c->name, "--help", NULL};
    return c->fn(2, hargv);
  }
  const subcmd_t *c = find(sub);
  if (!c) {
    fprintf(stderr, "collsim: unknown subcommand '%s' (see 'collsim --help')\n",
            sub);
    return CS_EXIT_USAGE;
  }
  /* getopt's own two-line complaints are replaced by one line of ours
   * (cs_cli_bad_option) in every subcommand. */
  opterr = 0;
  cs_cli_args(argc - 1, argv + 1);
  return c->fn(argc - 1, argv + 1);
}
