/*
 * temp.c - temporaries nobody can squat, and their sweep (temp.h).
 *
 * The names carry the maker's pid and six random characters: the pid lets
 * `collsim clean` tell a live command's file from a dead one's, and the
 * random part, created with O_EXCL, means a second user cannot plant a
 * symbolic link or a file there in advance.
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
                                       "collsim-bench-trace-"};
#define NPREFIX (sizeof prefixes / sizeof prefixes[0])

const char *cs_cli_tmpdir(void)
{
  const char *d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

int cs_cli_temp(char *path, size_t cap, const char *dir, const char *prefix,
                const char *suffix, int dir_too, unsigned mode)
{
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

int cs_cli_sweep_temps(const char *dir, cs_cli_swept_fn said, void *arg,
                       int *kept)
{
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
