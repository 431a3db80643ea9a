/*
 * world.c - shm region lifecycle, window addresses and CommContext; the
 * process-local stand-in of the region for a transport without one
 * (cs_world_local).
 *
 * The name /collsim-<pid>-<random> exists only between shm_open and the
 * shm_unlink a few lines later: every process works through the descriptor
 * (ranks inherit it), so no name survives a run, even one killed with
 * SIGKILL. cs_world_clean_stale() removes what a launcher killed inside that
 * window may have left, and cs_world_end_orphans() the processes a killed
 * launcher's ranks left mapping its region. Called by sim/launch.c and
 * the tools.
 */
#define _GNU_SOURCE
#include "world.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cs_error.h"

#define CS_PAGE 4096ull
#define CS_DEFAULT_TIMEOUT_NS (30ull * 1000000000ull)

static unsigned name_counter;

static int add_ok(uint64_t *acc, uint64_t x)
{
  if (*acc + x < *acc)
    return 0;
  *acc += x;
  return 1;
}

/* The control block and, behind it, the notifier notes of every rank. */
static uint64_t ctl_bytes(uint32_t nranks, const cs_world_opts_t *o)
{
  uint64_t notes = o ? (uint64_t)o->note_cells * 8 * nranks : 0;
  return cs_round_up(sizeof(cs_ctl_t) + notes, CS_PAGE);
}

uint64_t cs_world_region_bytes(const cs_layout_t *l, uint32_t nranks,
                               const cs_world_opts_t *o)
{
  uint64_t total = ctl_bytes(nranks, o);
  uint64_t stride = cs_round_up(l->win_bytes ? l->win_bytes : 1, CS_PAGE);
  uint64_t io = cs_round_up(o ? o->io_bytes : 0, CS_PAGE);
  uint64_t tr = cs_round_up(o ? o->trace_bytes : 0, CS_PAGE);
  uint64_t sc = cs_round_up(o ? o->sched_bytes : 0, CS_PAGE);
  if (stride > UINT64_MAX / 4 / CS_MAX_RANKS || io > UINT64_MAX / 4 / CS_MAX_RANKS ||
      tr > UINT64_MAX / 4 / CS_MAX_RANKS)
    return 0;
  if (!add_ok(&total, stride * nranks) || !add_ok(&total, 2 * io * nranks) ||
      !add_ok(&total, tr * nranks) || !add_ok(&total, sc))
    return 0;
  return total;
}

/* Refuses regions the machine cannot back: more than physical memory or
 * than /dev/shm has free (a later page fault would SIGBUS every rank). */
uint64_t cs_mem_available(void)
{
  FILE *f = fopen("/proc/meminfo", "re");
  unsigned long long kb = 0;
  char line[256];
  while (f && fgets(line, sizeof(line), f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  if (kb)
    return (uint64_t)kb * 1024;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : UINT64_MAX;
}

static int check_capacity(uint64_t bytes)
{
  if (bytes > cs_mem_available())
    return CS_ETOOBIG;
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0 &&
      bytes > (uint64_t)vfs.f_bavail * vfs.f_frsize)
    return CS_ETOOBIG;
  return 0;
}

/* The control block of a new region of `bytes` (zeroed memory). */
static void ctl_fill(cs_ctl_t *c, const cs_layout_t *l, uint32_t nranks,
                     uint64_t bytes, const cs_world_opts_t *o)
{
  c->magic = CS_CTL_MAGIC;
  c->version = CS_CTL_VERSION;
  c->nranks = nranks;
  c->region_bytes = bytes;
  c->win_stride = cs_round_up(l->win_bytes ? l->win_bytes : 1, CS_PAGE);
  c->off_windows = ctl_bytes(nranks, o);
  c->note_slot = o ? o->note_slot : 0;
  c->note_cells = o ? o->note_cells : 0;
  c->off_notes = sizeof(cs_ctl_t);
  c->io_bytes = cs_round_up(o ? o->io_bytes : 0, CS_PAGE);
  c->off_io = c->off_windows + c->win_stride * nranks;
  c->trace_bytes = cs_round_up(o ? o->trace_bytes : 0, CS_PAGE);
  c->off_trace = c->off_io + 2 * c->io_bytes * nranks;
  c->sched_bytes = cs_round_up(o ? o->sched_bytes : 0, CS_PAGE);
  c->off_sched = c->off_trace + c->trace_bytes * nranks;
  c->timeout_ns = (o && o->timeout_ns) ? o->timeout_ns : CS_DEFAULT_TIMEOUT_NS;
  c->abort_rank = -1;
  c->layout = *l;
}

/* A name nobody can guess: another local user who creates
 * /collsim-<pid>-<n> ahead of us must not stop the run. */
static unsigned random_suffix(void)
{
  unsigned x;
  if (getrandom(&x, sizeof x, GRND_NONBLOCK) == (ssize_t)sizeof x)
    return x;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned)ts.tv_nsec ^ (unsigned)ts.tv_sec * 2654435761u ^
         name_counter++ * 40503u;
}

/* Creates the region's object under a fresh random name, retrying a name
 * that exists, and unlinks the name at once. Returns the fd or -errno. */
static int open_region(cs_world_t *w)
{
  for (int tries = 0; tries < 64; tries++) {
    snprintf(w->name, sizeof(w->name), "/collsim-%d-%u", (int)getpid(),
             random_suffix());
    int fd = shm_open(w->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0)
      return -errno;
    /* Every process reaches the region through the descriptor (ranks
     * inherit it), so the name goes at once: nothing named survives even
     * a launcher killed while sizing the region. */
    shm_unlink(w->name);
    return fd;
  }
  return -EEXIST;
}

/* Backs every page of the region now. The capacity check above only saw
 * what /dev/shm had free at that moment: a second run checking at the
 * same time saw the same room, and the later page faults of one of them
 * would find none and kill its ranks with SIGBUS. A reservation either
 * gets the whole region or fails here, as "no room" (CS_ETOOBIG). */
static int reserve(int fd, uint64_t bytes)
{
  int rc;
  do
    rc = posix_fallocate(fd, 0, (off_t)bytes);
  while (rc == EINTR);
  if (rc == ENOSPC || rc == EFBIG || rc == ENOMEM)
    return CS_ETOOBIG;
  if (rc == EOPNOTSUPP || rc == ENOSYS || rc == EINVAL)
    return 0; /* no reservation here: the check above is all there is */
  return rc ? -rc : 0;
}

void cs_world_explain_size(char *buf, size_t n, const cs_layout_t *l,
                           uint32_t nranks, const cs_world_opts_t *o)
{
  uint64_t stride = cs_round_up(l->win_bytes ? l->win_bytes : 1, CS_PAGE);
  uint64_t io = cs_round_up(o ? o->io_bytes : 0, CS_PAGE);
  uint64_t tr = cs_round_up(o ? o->trace_bytes : 0, CS_PAGE);
  const char *const names[] = {"control block", "windows", "staging buffers",
                               "trace rings", "scheduler area"};
  const uint64_t part[] = {ctl_bytes(nranks, o),
                           stride * nranks, 2 * io * nranks, tr * nranks,
                           cs_round_up(o ? o->sched_bytes : 0, CS_PAGE)};
  uint64_t mem = cs_mem_available(), shm = UINT64_MAX, limit;
  struct statvfs vfs;
  if (statvfs("/dev/shm", &vfs) == 0)
    shm = (uint64_t)vfs.f_bavail * vfs.f_frsize;
  limit = shm < mem ? shm : mem;
  uint64_t total = 0;
  int over = -1;
  for (int i = 0; i < 5; i++) {
    total += part[i];
    if (total > limit && over < 0)
      over = i;
  }
  if (over < 0)
    over = 1; /* fits now: the space was taken meanwhile */
  char h[5][24], hl[24], hs[24];
  snprintf(buf, n, "no room for the %s (%s): %s has %s %s, the region needs "
           "%s (%u windows of %s, staging %s, trace rings %s, scheduler "
           "area %s)", names[over], cs_human_bytes(part[over], h[0], 24),
           shm < mem ? "/dev/shm" : "memory", cs_human_bytes(limit, hl, 24),
           shm < mem ? "free" : "available", cs_human_bytes(total, hs, 24), nranks,
           cs_human_bytes(stride, h[1], 24), cs_human_bytes(part[2], h[2], 24),
           cs_human_bytes(part[3], h[3], 24), cs_human_bytes(part[4], h[4], 24));
}

void cs_world_explain_error(char *buf, size_t n, const cs_layout_t *l,
                            uint32_t nranks, const cs_world_opts_t *o, int err)
{
  if (err == CS_ETOOBIG) {
    cs_world_explain_size(buf, n, l, nranks, o);
    return;
  }
  uint64_t stride = cs_round_up(l->win_bytes ? l->win_bytes : 1, CS_PAGE);
  uint64_t io = cs_round_up(o ? o->io_bytes : 0, CS_PAGE);
  uint64_t tr = cs_round_up(o ? o->trace_bytes : 0, CS_PAGE);
  uint64_t sc = cs_round_up(o ? o->sched_bytes : 0, CS_PAGE);
  char h[5][24], what[128];
  struct stat sb;
  if (stat("/dev/shm", &sb) != 0 || !S_ISDIR(sb.st_mode))
    snprintf(what, sizeof what, "/dev/shm is missing (POSIX shared memory "
             "needs a tmpfs mounted there)");
  else
    snprintf(what, sizeof what, "/dev/shm: %s", cs_strerror(err));
  snprintf(buf, n, "%s; the region needs %s (%u windows of %s, staging %s, "
           "trace rings %s, scheduler area %s)", what,
           cs_human_bytes(cs_world_region_bytes(l, nranks, o), h[0], 24), nranks,
           cs_human_bytes(stride, h[1], 24), cs_human_bytes(2 * io * nranks, h[2], 24),
           cs_human_bytes(tr * nranks, h[3], 24), cs_human_bytes(sc, h[4], 24));
}

/* An empty world (no region, no descriptor), and the bytes of the region
 * nranks ranks of layout l need into *bytes. Returns 0, -EINVAL for a
 * rank count out of range, or CS_ETOOBIG for a region this address space
 * cannot hold. */
static int world_begin(cs_world_t *w, const cs_layout_t *l, uint32_t nranks,
                       const cs_world_opts_t *o, uint64_t *bytes)
{
  memset(w, 0, sizeof(*w));
  w->fd = -1;
  if (nranks < 1 || nranks > CS_MAX_RANKS)
    return -EINVAL;
  *bytes = cs_world_region_bytes(l, nranks, o);
  if (*bytes == 0 || *bytes > (uint64_t)SIZE_MAX)
    return CS_ETOOBIG;
  return 0;
}

int cs_world_create(cs_world_t *w, const cs_layout_t *l, uint32_t nranks,
                    const cs_world_opts_t *o)
{
  uint64_t bytes;
  int err = world_begin(w, l, nranks, o, &bytes);
  if (err < 0)
    return err;
  if ((err = check_capacity(bytes)) < 0)
    return err;

  if ((w->fd = open_region(w)) < 0)
    return w->fd;
  if (ftruncate(w->fd, (off_t)bytes) < 0) {
    err = -errno;
    goto err_close;
  }
  if ((err = reserve(w->fd, bytes)) < 0)
    goto err_close;
  w->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
  if (w->base == MAP_FAILED) {
    w->base = NULL;
    err = -errno;
    goto err_close;
  }
  w->bytes = bytes;
  w->ctl = (cs_ctl_t *)w->base;
  ctl_fill(w->ctl, l, nranks, bytes, o);
  return 0;

err_close:
  close(w->fd);
  w->fd = -1;
  return err;
}

int cs_world_local(cs_world_t *w, const cs_layout_t *l, uint32_t nranks,
                   const cs_world_opts_t *o)
{
  uint64_t bytes;
  int err = world_begin(w, l, nranks, o, &bytes);
  if (err < 0)
    return err;
  /* Private and unreserved: only the pages this rank touches (the control
   * block, its own io buffers) are ever backed. */
  w->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (w->base == MAP_FAILED) {
    w->base = NULL;
    return -errno;
  }
  w->bytes = bytes;
  w->ctl = (cs_ctl_t *)w->base;
  ctl_fill(w->ctl, l, nranks, bytes, o);
  return 0;
}

int cs_world_remap(cs_world_t *w)
{
  /* Map first, then drop the old mapping, so the new address differs from
   * the launcher's (and, with ASLR, from the other ranks'). */
  void *p = mmap(NULL, w->bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_POPULATE, w->fd, 0);
  if (p == MAP_FAILED)
    return -errno;
  munmap(w->base, w->bytes);
  w->base = p;
  w->ctl = (cs_ctl_t *)p;
  return 0;
}

void cs_world_destroy(cs_world_t *w)
{
  if (w->base)
    munmap(w->base, w->bytes);
  if (w->fd >= 0)
    close(w->fd);
  w->base = NULL;
  w->ctl = NULL;
  w->fd = -1;
}

/* Parses "collsim-<pid>-<n>"; returns pid or 0. */
static int name_pid(const char *name)
{
  int pid = 0;
  unsigned n;
  char tail;
  if (sscanf(name, "collsim-%d-%u%c", &pid, &n, &tail) != 2 || pid <= 0)
    return 0;
  return pid;
}

int cs_world_count_names(int pid)
{
  DIR *d = opendir("/dev/shm");
  if (!d)
    return -errno;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int p = name_pid(e->d_name);
    if (p && (pid == 0 || p == pid))
      n++;
  }
  closedir(d);
  return n;
}

int cs_world_clean_stale(cs_world_clean_fn fn, void *arg, int *kept)
{
  if (kept)
    *kept = 0;
  DIR *d = opendir("/dev/shm");
  if (!d)
    return -errno;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int pid = name_pid(e->d_name);
    if (!pid || kill(pid, 0) == 0 || errno != ESRCH)
      continue;
    char path[300];
    snprintf(path, sizeof(path), "/%s", e->d_name);
    if (shm_unlink(path) == 0) {
      n++;
      if (fn)
        fn(arg, e->d_name, pid, 0);
    } else if (errno != ENOENT) {
      int err = errno;
      if (kept)
        ++*kept;
      if (fn)
        fn(arg, e->d_name, pid, err);
    }
  }
  closedir(d);
  return n;
}

/* The launcher of the first region process `pid` maps whose launcher is
 * gone (from /proc/PID/maps: "... /dev/shm/collsim-L-N (deleted)"), or 0. */
static int orphaned_by(int pid)
{
  char path[64], line[1024];
  snprintf(path, sizeof(path), "/proc/%d/maps", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  int gone = 0;
  while (!gone && fgets(line, sizeof(line), f)) {
    char *at = strstr(line, "/dev/shm/collsim-");
    if (!at)
      continue;
    at += strlen("/dev/shm/");
    at[strcspn(at, " \n")] = 0;
    int l = name_pid(at);
    if (l && l != getpid() && kill(l, 0) < 0 && errno == ESRCH)
      gone = l;
  }
  fclose(f);
  return gone;
}

/* Whether process pid is in our pid namespace (a launcher's pid in its
 * region's name means another process in any other). */
static int same_pid_ns(int pid)
{
  char path[64];
  struct stat a, b;
  snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
  if (stat("/proc/self/ns/pid", &a) < 0 || stat(path, &b) < 0)
    return 0;
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

int cs_world_end_orphans(cs_world_orphan_fn fn, void *arg)
{
  DIR *d = opendir("/proc");
  if (!d)
    return -errno;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == getpid() || !same_pid_ns((int)pid))
      continue;
    int launcher = orphaned_by((int)pid);
    if (!launcher)
      continue;
    int err = kill((pid_t)pid, SIGKILL) < 0 ? errno : 0;
    n += !err;
    if (fn && err != ESRCH)
      fn(arg, (int)pid, launcher, err);
  }
  closedir(d);
  return n;
}

int cs_rankctx_init(cs_rankctx_t *c, const cs_world_t *w, uint32_t rank)
{
  uint32_t n = w->ctl->nranks;
  memset(c, 0, sizeof(*c));
  c->windows = calloc(n, sizeof(uint64_t));
  if (!c->windows)
    return -ENOMEM;
  c->abi.rankId = rank;
  c->abi.rankNum = n;
  c->abi.winSize = w->ctl->layout.win_bytes;
  for (uint32_t i = 0; i < n; i++) {
    c->windows[i] = (uint64_t)(uintptr_t)cs_world_window(w, i);
    if (i < CS_ABI_MAX_RANKS)
      c->abi.windowsIn[i] = c->abi.windowsOut[i] = c->windows[i];
  }
  return 0;
}

void cs_rankctx_fini(cs_rankctx_t *c)
{
  free(c->windows);
  c->windows = NULL;
}
