/*
 * temp.c - temporaries nobody can squat, and their sweep (temp.h).
 *
 * The names carry the maker's pid and six random characters: the pid lets
 * `collsim clean` tell a live command's file from a dead one's, and the
 * random part, created with O_EXCL, means a second user cannot plant a
 * symbolic link or a file there in advance. A command that makes them in
 * a directory of the user's (explore, shrink) also leaves a note in the
 * temporary directory, collsim-dir-<pid>-XXXXXX, naming that directory:
 * a plain `collsim clean` follows the note of a killed command there.
 */
#define _GNU_SOURCE
#include "temp.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const prefixes[] = {".explore-", ".shrink-", "collsim-teach-",
                                       "collsim-run-check-",
                                       "collsim-bench-trace-", "collsim-dir-"};
#define NPREFIX (sizeof prefixes / sizeof prefixes[0])

const char *cs_cli_tmpdir(void)
{
  const char *d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

/* This process's note naming the directory of its temporaries, removed
 * at exit (a killed process's stays, for clean). */
static char note[4200], note_dir[4096];
static void drop_note(void)
{
  if (note[0])
    unlink(note);
}

/* Leaves the note for dir (once per directory; one note kept: explore
 * and shrink write into one). Best effort: without it, `clean DIR`. */
static void leave_note(const char *dir)
{
  char abs[4096];
  if (!realpath(dir, abs) || !strcmp(abs, note_dir) || strchr(abs, '\n'))
    return;
  drop_note();
  if (!note_dir[0])
    atexit(drop_note);
  snprintf(note, sizeof note, "%s/collsim-dir-%d-XXXXXX", cs_cli_tmpdir(),
           (int)getpid());
  int fd = mkostemp(note, O_CLOEXEC);
  if (fd < 0) {
    note[0] = 0;
    return;
  }
  size_t len = strlen(abs);
  if (write(fd, abs, len) != (ssize_t)len) {
    unlink(note);
    note[0] = 0;
  }
  close(fd);
  snprintf(note_dir, sizeof note_dir, "%s", abs);
}

int cs_cli_temp(char *path, size_t cap, const char *dir, const char *prefix,
                const char *suffix, int dir_too, unsigned mode)
{
  if (!strcmp(prefix, ".explore-") || !strcmp(prefix, ".shrink-"))
    leave_note(dir);
  int n = snprintf(path, cap, "%s/%s%d-XXXXXX%s", dir, prefix, (int)getpid(),
                   suffix);
  if (n < 0 || (size_t)n >= cap)
    return -ENAMETOOLONG;
  if (dir_too)
    return mkdtemp(path) ? 0 : -errno;
  int fd = mkostemps(path, (int)strlen(suffix), O_CLOEXEC);
  if (fd < 0)
    return -errno;
  if (mode) { /* what open(2) with this mode would have given */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, (mode_t)mode & ~mask) < 0) {
      int err = -errno;
      close(fd);
      unlink(path);
      return err;
    }
  }
  return fd;
}

/* The pid in a temporary's name, or 0 when it is not one of ours. */
static int temp_pid(const char *name)
{
  for (size_t i = 0; i < NPREFIX; i++) {
    size_t k = strlen(prefixes[i]);
    if (strncmp(name, prefixes[i], k))
      continue;
    const char *s = name + k;
    char *end;
    long pid = strtol(s, &end, 10);
    if (end == s || *s == '-' || *s == '+' || pid <= 0 || pid > 1L << 30 ||
        *end != '-')
      return 0;
    const char *r = end + 1;
    for (int j = 0; j < 6; j++)
      if (!r[j] || !(isalnum((unsigned char)r[j])))
        return 0;
    return !strcmp(r + 6, "") || !strcmp(r + 6, ".cstrace") ? (int)pid : 0;
  }
  return 0;
}

/* Removes one stale temporary (a file, or a run --check directory with
 * its one trace). 0 or -errno. */
static int remove_temp(int dfd, const char *name, const struct stat *sb)
{
  if (!S_ISDIR(sb->st_mode)) /* a link goes, never what it names */
    return unlinkat(dfd, name, 0) == 0 ? 0 : -errno;
  int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (sub < 0)
    return -errno;
  /* Anything but its trace in it: not ours to empty, so nothing goes. */
  int look = dup(sub);
  DIR *in = look < 0 ? NULL : fdopendir(look);
  if (!in) {
    int err = -errno;
    if (look >= 0)
      close(look);
    close(sub);
    return err;
  }
  int other = 0;
  for (struct dirent *e; (e = readdir(in)) != NULL;)
    other |= strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
             strcmp(e->d_name, "run.cstrace");
  closedir(in);
  if (other) {
    close(sub);
    return -ENOTEMPTY;
  }
  if (unlinkat(sub, "run.cstrace", 0) < 0 && errno != ENOENT) {
    int err = -errno;
    close(sub);
    return err;
  }
  close(sub);
  return unlinkat(dfd, name, AT_REMOVEDIR) == 0 ? 0 : -errno;
}

/* A killed command's note (ours): sweeps the directory it names (not
 * following notes there), then removes it. Returns what was removed. */
static int follow_note(int dfd, const char *name, cs_cli_swept_fn said,
                       void *arg, int *kept)
{
  char to[4097] = "";
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ssize_t len = fd < 0 ? -1 : read(fd, to, sizeof to - 1);
  if (fd >= 0)
    close(fd);
  int n = 0;
  if (len > 1 && to[0] == '/' && !memchr(to, 0, (size_t)len)) {
    to[len] = 0;
    int k = cs_cli_sweep_temps(to, said, arg, kept);
    n = k > 0 ? k : 0;
  }
  unlinkat(dfd, name, 0);
  return n;
}

int cs_cli_sweep_temps(const char *dir, cs_cli_swept_fn said, void *arg,
                       int *kept)
{
  static int in_note; /* a note's directory: its notes are not followed */
  DIR *d = opendir(dir);
  if (!d)
    return -errno;
  int n = 0, dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int pid = temp_pid(e->d_name);
    struct stat sb;
    if (!pid || kill(pid, 0) == 0 || errno != ESRCH || /* still there */
        fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
        sb.st_uid != geteuid())
      continue;
    if (!strncmp(e->d_name, "collsim-dir-", 12)) {
      if (!in_note && S_ISREG(sb.st_mode)) {
        in_note = 1;
        n += follow_note(dfd, e->d_name, said, arg, kept);
        in_note = 0;
      }
      continue;
    }
    char path[4352];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    int err = remove_temp(dfd, e->d_name, &sb);
    if (err == -ENOENT)
      continue;
    if (err < 0 && kept)
      ++*kept;
    n += err == 0;
    if (said)
      said(arg, path, pid, -err);
  }
  closedir(d);
  return n;
}

extern char **environ;

char **cs_cli_child_env(void)
{
  static char **env;
  static char mine[40];
  if (env)
    return env;
  size_t n = 0;
  while (environ[n])
    n++;
  env = calloc(n + 2, sizeof *env);
  if (!env)
    return NULL;
  snprintf(mine, sizeof mine, "COLLSIM_PARENT=%d", (int)getpid());
  size_t k = 0;
  env[k++] = mine;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], "COLLSIM_PARENT=", 15))
      env[k++] = environ[i];
  env[k] = NULL;
  return env;
}

void cs_cli_die_with_parent(void)
{
  const char *v = getenv("COLLSIM_PARENT");
  if (!v)
    return;
  long pid = strtol(v, NULL, 10);
  unsetenv("COLLSIM_PARENT");
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (pid > 0 && getppid() != (pid_t)pid)
    raise(SIGKILL); /* it died before we asked: as if we had asked in time */
}
