/*
 * writer.c - the writer, in the launcher: creates the trace file, writes
 * the header, writes every chunk the ranks hand over while the run goes
 * (liburing, straight from the shared memory with O_DIRECT where the file
 * system allows, else pwrite), and at close appends each rank's partial
 * chunk and the FAULT and ABORT records, so the trace of a crashed run
 * ends with its cause. The launcher never reads a record: on a 2-core
 * machine every cycle it spends is taken from a rank. A rank whose next
 * chunk slot is not free yet waits (record.c), so memory stays bounded.
 * Also owns the output rule every subcommand's output path follows
 * (cs_output_check, cs_trace_create_file, cs_output_replace; sim/trace.h).
 * Does not own recording (record.c) or reading (read.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../window/cs_error.h"
#include "../../window/fdio.h"
#include "../launch.h"
#include "ring.h"


/* Drops O_DIRECT: later writes go through the page cache. */
static void buffered(cs_tracer_t *t)
{
  int fl = fcntl(t->fd, F_GETFL);
  if (t->direct && fl >= 0 && fcntl(t->fd, F_SETFL, fl & ~O_DIRECT) == 0)
    t->direct = 0;
}

static uint8_t *chunk_mem(cs_tracer_t *t, uint32_t c)
{
  return (uint8_t *)slot_rec(ring_of(t->w, c / CS_TRACE_CHUNKS), c % CS_TRACE_CHUNKS);
}

/* Writes chunk c from byte `done` on synchronously: the rest of a short
 * write, a chunk io_uring could not take, or every chunk when io_uring is
 * unavailable. Straight from the shared memory while the file takes
 * O_DIRECT, else (or once a direct write is refused) through the page
 * cache. */
static void write_sync(cs_tracer_t *t, uint32_t c, uint64_t done)
{
  const uint8_t *p = chunk_mem(t, c);
  int rc = 0;
  while (t->direct && done < t->chunk_bytes && done % DIO_ALIGN == 0) {
    ssize_t k = pwrite(t->fd, p + done, t->chunk_bytes - done,
                       (off_t)(t->off[c] + done));
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      rc = k < 0 ? -errno : -EIO;
      break;
    }
    done += (uint64_t)k;
  }
  if (done < t->chunk_bytes && (rc == 0 || rc == -EINVAL)) {
    buffered(t); /* refused (EINVAL) or a short write left an unaligned rest */
    rc = cs_pwrite_full(t->fd, p + done, t->chunk_bytes - done, t->off[c] + done);
  }
  if (rc < 0 && !t->err)
    t->err = rc;
}

/* The chunk is on disk (or its write failed, reported at close): its slot
 * is free for the rank again. */
static void chunk_done(cs_tracer_t *t, uint32_t c)
{
  cs_trace_ring_t *r = ring_of(t->w, c / CS_TRACE_CHUNKS);
  __atomic_store_n(&r->state[c % CS_TRACE_CHUNKS], SLOT_FREE, __ATOMIC_RELEASE);
}

/* io_uring stopped answering (waiting for a completion failed): write every
 * chunk still in flight again with pwrite, free it, and use pwrite from
 * now on (a late completion of the first write, if one comes, carries the
 * same bytes unless the rank has refilled the slot by then: a risk taken
 * only on a broken ring). */
static void ring_failed(cs_tracer_t *t)
{
  t->sync_only = 1;
  for (uint32_t c = 0; c < t->nchunk; c++) {
    cs_trace_ring_t *r = ring_of(t->w, c / CS_TRACE_CHUNKS);
    if (__atomic_load_n(&r->state[c % CS_TRACE_CHUNKS], __ATOMIC_ACQUIRE) ==
        SLOT_WRITING) {
      write_sync(t, c, 0);
      chunk_done(t, c);
    }
  }
  t->inflight = 0;
}

/* Reaps one completed write (waits for one if `wait`). Returns 0, or -1 if
 * nothing was reaped: none in flight, none completed yet (no wait), or the
 * ring failed, in which case every write in flight is redone with pwrite
 * and the ring is not used again. */
static int reap_one(cs_tracer_t *t, int wait)
{
  struct io_uring_cqe *cqe;
  if (!t->inflight)
    return -1;
  int rc;
  do
    rc = wait ? io_uring_wait_cqe(&t->ring, &cqe)
              : io_uring_peek_cqe(&t->ring, &cqe);
  while (rc == -EINTR);
  if (rc < 0 && (wait || rc != -EAGAIN)) {
    ring_failed(t);
    return -1;
  }
  if (rc < 0)
    return -1;
  uint32_t c = (uint32_t)(uintptr_t)io_uring_cqe_get_data(cqe);
  int res = cqe->res;
  io_uring_cqe_seen(&t->ring, cqe);
  if (res == -EINVAL && t->was_direct[c])
    write_sync(t, c, 0); /* direct I/O refused: through the page cache */
  else if (res < 0) {
    if (!t->err)
      t->err = res;
  } else if ((uint64_t)res < t->chunk_bytes) {
    write_sync(t, c, (uint64_t)res); /* short write (rare on files) */
  }
  t->inflight--;
  chunk_done(t, c);
  return 0;
}

/* A memory tracer's "file": appends n bytes (whole records) to mem_rec,
 * in the order the file would hold them. */
static void mem_put(cs_tracer_t *t, const void *p, uint64_t n)
{
  uint64_t k = n / sizeof(cs_trace_rec_t);
  if (t->err)
    return;
  if (t->mem_n + k > t->mem_cap) {
    uint64_t cap = t->mem_cap ? t->mem_cap : 1024;
    while (cap < t->mem_n + k)
      cap *= 2;
    cs_trace_rec_t *g = realloc(t->mem_rec, cap * sizeof(cs_trace_rec_t));
    if (!g) {
      t->err = -ENOMEM;
      return;
    }
    t->mem_rec = g;
    t->mem_cap = cap;
  }
  memcpy(t->mem_rec + t->mem_n, p, k * sizeof(cs_trace_rec_t));
  t->mem_n += k;
}

/* Writes full chunk c at the end of the file, asynchronously (a memory
 * tracer copies it at once). */
static void submit_chunk(cs_tracer_t *t, uint32_t c)
{
  if (t->mem) {
    mem_put(t, chunk_mem(t, c), t->chunk_bytes);
    chunk_done(t, c);
    return;
  }
  t->off[c] = t->pos;
  t->pos += t->chunk_bytes;
  t->was_direct[c] = (uint8_t)t->direct;
  if (t->sync_only) {
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  /* No more writes in flight than the ring has entries, so completions
   * never overflow. */
  while (t->inflight >= t->depth && !t->sync_only)
    reap_one(t, 1);
  struct io_uring_sqe *sqe = t->sync_only ? NULL : io_uring_get_sqe(&t->ring);
  if (!sqe) {
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  io_uring_prep_write(sqe, t->fd, chunk_mem(t, c), (unsigned)t->chunk_bytes, t->off[c]);
  io_uring_sqe_set_data(sqe, (void *)(uintptr_t)c);
  int rc, tries = 0;
  while (((rc = io_uring_submit(&t->ring)) == -EINTR || rc == -EAGAIN ||
          rc == -EBUSY) && ++tries < 1000)
    if (rc == -EBUSY)
      reap_one(t, 1);
  if (rc < 0) {
    /* The ring is unusable (no completion will come, and the entry might
     * go out later with other data): write this chunk and every later
     * one with pwrite. */
    t->sync_only = 1;
    write_sync(t, c, 0);
    chunk_done(t, c);
    return;
  }
  t->inflight++;
}

void cs_trace_header_seal(cs_trace_header_t *h)
{
  h->checksum = 0;
  h->checksum = cs_trace_fnv32(h, sizeof(*h));
}

void cs_trace_header_frame(cs_trace_header_t *h, uint32_t nranks,
                           const cs_layout_t *l, uint64_t timeout_ns,
                           uint64_t start_ns)
{
  memcpy(h->magic, CS_TRACE_MAGIC, 8);
  h->version = CS_TRACE_VERSION;
  h->header_bytes = CS_TRACE_HEADER_BYTES;
  h->record_bytes = CS_TRACE_RECORD_BYTES;
  h->nranks = nranks;
  h->layout = *l;
  h->timeout_ns = timeout_ns;
  h->start_ns = start_ns;
}

/* Whether the TSC ticks at a constant rate in every state and core
 * (/proc/cpuinfo flags constant_tsc and nonstop_tsc). */
static int invariant_tsc(void)
{
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f)
    return 0;
  char line[4096];
  int ok = 0;
  while (fgets(line, sizeof(line), f))
    if (!strncmp(line, "flags", 5)) {
      ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
      break;
    }
  fclose(f);
  return ok;
}

/* Writes the header block (header, zeros) at offset 0, with O_DIRECT if
 * the file takes it (which tells whether later chunks can go direct), else
 * through the page cache. 0 or -errno. */
static int write_header_block(cs_tracer_t *t, const cs_trace_header_t *h)
{
  uint8_t *b = aligned_alloc(DIO_ALIGN, CS_TRACE_HEADER_BYTES);
  if (!b)
    return -ENOMEM;
  memset(b, 0, CS_TRACE_HEADER_BYTES);
  memcpy(b, h, sizeof(*h));
  int fl = fcntl(t->fd, F_GETFL);
  t->direct = fl >= 0 && fcntl(t->fd, F_SETFL, fl | O_DIRECT) == 0;
  int rc = cs_pwrite_full(t->fd, b, CS_TRACE_HEADER_BYTES, 0);
  if (rc == -EINVAL && t->direct) {
    buffered(t);
    rc = cs_pwrite_full(t->fd, b, CS_TRACE_HEADER_BYTES, 0);
  }
  free(b);
  return rc;
}

/* The records' clock: TSC ticks where the TSC is invariant (the rate, a
 * first estimate over 2 ms, goes in h->tick_ns; close measures it over the
 * whole run), else ns. Returns the start time (CLOCK_MONOTONIC). */
static uint64_t start_clock(cs_tracer_t *t, cs_trace_header_t *h)
{
  uint64_t start = cs_now_ns();
#if defined(__x86_64__)
  t->use_tsc = invariant_tsc();
  if (t->use_tsc) {
    uint64_t c0 = __rdtsc(), n0 = cs_now_ns();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    uint64_t c1 = __rdtsc(), n1 = cs_now_ns();
    h->tick_ns = c1 > c0 ? (double)(n1 - n0) / (double)(c1 - c0) : 0;
    t->use_tsc = h->tick_ns > 0;
    start = cs_now_ns();
    t->tsc0 = __rdtsc();
  }
#endif
  if (!t->use_tsc)
    h->tick_ns = 0;
  t->ns0 = start;
  return start;
}

/* A rank's ring, empty, its first chunk filling. */
static void ring_init(const cs_tracer_t *t, cs_trace_ring_t *ring,
                      uint64_t chunk_rec, uint64_t start)
{
  memset(ring, 0, sizeof(*ring));
  ring->end = chunk_rec;
  ring->chunk_rec = (uint32_t)chunk_rec;
  ring->use_tsc = (uint32_t)t->use_tsc;
  ring->start_tsc = t->tsc0;
  ring->start_ns = start;
  ring->state[0] = SLOT_FILLING;
}

/* ---- the output rule: every path a subcommand writes ---- */

/* What the rule says of an existing file (sb from stat or fstat, after
 * any link of ours): 0 for a regular file of ours with no other names,
 * else why not. A file of ours with a second name may be someone else's
 * file linked into a shared directory (where fs.protected_hardlinks is
 * off): never written through the second name. */
static int rule_of(const struct stat *sb)
{
  return S_ISDIR(sb->st_mode)      ? -EISDIR
         : !S_ISREG(sb->st_mode)   ? CS_ENOTREG
         : sb->st_uid != geteuid() ? CS_ENOTOURS
         : sb->st_nlink > 1        ? CS_EHARDLINK
                                   : 0;
}

/* Appends path component p (len bytes) to done as "/p". 0 or -1. */
static int append_name(char *done, size_t cap, const char *p, size_t len)
{
  size_t dl = strlen(done);
  if (dl + 1 + len >= cap)
    return -1;
  done[dl] = '/';
  memcpy(done + dl + 1, p, len);
  done[dl + 1 + len] = 0;
  return 0;
}

int cs_links_ours(const char *path)
{
  char rest[2 * PATH_MAX], done[2 * PATH_MAX], to[PATH_MAX];
  size_t n = strlen(path);
  if (n >= PATH_MAX)
    return -ENAMETOOLONG;
  memcpy(rest, path, n + 1);
  /* done: the part resolved so far, with no link in it */
  snprintf(done, sizeof(done), "%s", path[0] == '/' ? "" : ".");
  char *p = rest;
  for (int hops = 0;;) {
    while (*p == '/')
      p++;
    if (!*p)
      return 0;
    size_t len = strcspn(p, "/"), dl = strlen(done);
    char *after = p + len + strspn(p + len, "/");
    if (append_name(done, sizeof(done), p, len) < 0)
      return -ENAMETOOLONG;
    struct stat ln;
    if (lstat(done, &ln) < 0)
      return 0; /* the rest is not there: the caller's lookup says more */
    if (!S_ISLNK(ln.st_mode)) {
      p = after;
      continue;
    }
    /* The last name: our own link only; a directory on the way: ours or
     * root's (the system's own links, as /var/run). */
    if (ln.st_uid != geteuid() && (!*after || ln.st_uid != 0))
      return CS_ESYMLINK;
    ssize_t k = readlink(done, to, sizeof(to) - 1);
    if (k < 0)
      return -errno;
    if (++hops > 40) /* the kernel's MAXSYMLINKS */
      return -ELOOP;
    done[to[0] == '/' ? 0 : dl] = 0; /* the link goes, its target comes */
    size_t al = strlen(after);
    if ((size_t)k + 1 + al >= sizeof(rest))
      return -ENAMETOOLONG;
    memmove(rest + k + 1, after, al + 1);
    memcpy(rest, to, (size_t)k);
    rest[k] = '/';
    p = rest;
  }
}

/* What path names now: *sb the file (after links of ours), *link
 * whether path is a link. 0, 1 when nothing is there, or a code. */
static int look(const char *path, struct stat *sb, int *link)
{
  struct stat ln;
  *link = 0;
  if (lstat(path, &ln) < 0)
    return errno == ENOENT ? 1 : -errno;
  if (!S_ISLNK(ln.st_mode)) {
    *sb = ln;
    return 0;
  }
  /* A link is followed only when it and every link it leads through are
   * our own (as the kernel's protected_symlinks rule in sticky
   * directories): another user's link in a shared directory must not
   * make us write its target, also when our link names theirs. */
  int err = cs_links_ours(path);
  if (err < 0)
    return err;
  *link = 1;
  return stat(path, sb) < 0 ? -errno : 0;
}

/* Whether paths a and b name one file: the same inode when both exist
 * (through links and other names), else the same name in the same
 * directory (so a new ./x and x are one). */
static int same_file(const char *a, const char *b)
{
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char *ca = strdup(a), *cb = strdup(b), *da = strdup(a), *db = strdup(b);
  int same = 0;
  if (ca && cb && da && db && strcmp(basename(ca), basename(cb)) == 0)
    same = stat(dirname(da), &sa) == 0 && stat(dirname(db), &sb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  free(ca);
  free(cb);
  free(da);
  free(db);
  return same;
}

int cs_output_check(const char *path, const char *const *inputs, int *which)
{
  for (int i = 0; inputs && inputs[i]; i++)
    if (same_file(path, inputs[i])) {
      if (which)
        *which = i;
      return CS_ESAMEFILE;
    }
  struct stat sb;
  int link, rc = cs_links_ours(path);
  if (rc == CS_ESYMLINK)
    return rc;
  rc = look(path, &sb, &link);
  return rc == 0 ? rule_of(&sb) : rc > 0 ? 0 : rc;
}

/* The type of what fd opened, checked again after the open so a path
 * swapped between a check and the open cannot slip through; truncates
 * it, clears O_NONBLOCK. Returns fd, or a negative code with fd closed. */
static int existing_ok(int fd)
{
  struct stat sb;
  int err = fstat(fd, &sb) < 0 ? -errno : rule_of(&sb);
  if (!err && ftruncate(fd, 0) < 0)
    err = -errno;
  int fl = fcntl(fd, F_GETFL);
  if (!err && fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
    err = -errno;
  if (err) {
    close(fd);
    return err;
  }
  return fd;
}

int cs_trace_create_file(const char *path, int *created)
{
  *created = 0;
  /* Not into a directory another user's link names. */
  if (cs_links_ours(path) == CS_ESYMLINK)
    return CS_ESYMLINK;
  /* O_EXCL never follows a link: a planted symlink is EEXIST here. */
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    *created = 1;
    return fd;
  }
  if (errno != EEXIST)
    return -errno;
  struct stat ln, again;
  if (lstat(path, &ln) < 0)
    return -errno;
  int link = S_ISLNK(ln.st_mode), err;
  if (link && (err = cs_links_ours(path)) < 0)
    return err;
  if (!link && (err = rule_of(&ln)) < 0)
    return err; /* before the open: a FIFO would block it */
  /* O_NONBLOCK: a FIFO swapped in since lstat does not block the open. */
  fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | (link ? 0 : O_NOFOLLOW));
  if (fd < 0)
    return errno == ELOOP ? CS_ESYMLINK : errno == ENXIO ? CS_ENOTREG : -errno;
  if (lstat(path, &again) < 0 || again.st_ino != ln.st_ino ||
      again.st_dev != ln.st_dev) {
    close(fd); /* swapped since the check */
    return link ? CS_ESYMLINK : CS_ENOTREG;
  }
  return existing_ok(fd);
}

/* Copies the file tmp into the file fd has open (truncated), in place.
 * 0 or -errno. */
static int copy_into(int fd, const char *tmp)
{
  int in = open(tmp, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return -errno;
  char buf[65536];
  int err = 0;
  uint64_t off = 0;
  for (;;) {
    ssize_t k = read(in, buf, sizeof buf);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0) {
      err = k < 0 ? -errno : 0;
      break;
    }
    if ((err = cs_pwrite_full(fd, buf, (size_t)k, off)) < 0)
      break;
    off += (uint64_t)k;
  }
  close(in);
  return err;
}

int cs_output_replace(const char *tmp, const char *path)
{
  struct stat sb;
  if (cs_links_ours(path) == CS_ESYMLINK)
    return CS_ESYMLINK;
  int link, rc = look(path, &sb, &link);
  if (rc > 0) {
    /* Nothing there when looked: never replace what appeared since. */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
      return 0;
    if (errno != EINVAL && errno != ENOSYS)
      return -errno;
    return rename(tmp, path) < 0 ? -errno : 0; /* no RENAME_NOREPLACE here */
  }
  if (rc < 0 || (rc = rule_of(&sb)) < 0)
    return rc;
  if (link) {
    /* Our own link stays a link: the file it names is rewritten in place,
     * keeping its mode and owner. */
    int created, fd = cs_trace_create_file(path, &created);
    if (fd < 0)
      return fd;
    rc = copy_into(fd, tmp);
    if (close(fd) < 0 && rc == 0)
      rc = -errno;
    if (rc == 0)
      unlink(tmp);
    return rc;
  }
  /* The old file's owner and group (a group we are not in stays ours),
   * then its mode, go to the new one. */
  if (chown(tmp, sb.st_uid, sb.st_gid) < 0 && errno != EPERM)
    return -errno;
  if (chmod(tmp, sb.st_mode & 07777) < 0)
    return -errno;
  return rename(tmp, path) < 0 ? -errno : 0;
}

/* A tracer for world w, without its output: the chunk geometry, the
 * rings touched. NULL with *err set on failure. */
static cs_tracer_t *tracer_new(cs_world_t *w, uint64_t *chunk_rec, int *err)
{
  cs_tracer_t *t = calloc(1, sizeof(*t));
  if (!t) {
    *err = -ENOMEM;
    return NULL;
  }
  t->fd = -1;
  t->w = w;
  uint32_t n = w->ctl->nranks;
  t->nchunk = n * CS_TRACE_CHUNKS;
  *chunk_rec = (w->ctl->trace_bytes - sizeof(cs_trace_ring_t)) /
               sizeof(cs_trace_rec_t) / CS_TRACE_CHUNKS / CHUNK_GRAIN * CHUNK_GRAIN;
  t->chunk_bytes = *chunk_rec * sizeof(cs_trace_rec_t);
  t->was_direct = calloc(t->nchunk, 1);
  t->off = calloc(t->nchunk, sizeof(uint64_t));
  if (!*chunk_rec || t->chunk_bytes > UINT32_MAX || !t->was_direct || !t->off) {
    *err = *chunk_rec ? -ENOMEM : -EINVAL;
    free(t->was_direct);
    free(t->off);
    free(t);
    return NULL;
  }
  /* Touch the rings now (the launcher's view of them), so the run does not
   * pay for allocating their pages. */
  volatile uint8_t *p = (volatile uint8_t *)ring_of(w, 0);
  uint64_t bytes = w->ctl->trace_bytes * n;
  for (uint64_t o = 0; o < bytes; o += 4096)
    (void)p[o];
  return t;
}

/* The header's frame, sealed OPEN, kept in t->hdr; the rings emptied. */
static void tracer_start(cs_tracer_t *t, cs_trace_header_t *h,
                         uint64_t chunk_rec, uint64_t start)
{
  cs_world_t *w = t->w;
  uint32_t n = w->ctl->nranks;
  cs_trace_header_frame(h, n, &w->ctl->layout, w->ctl->timeout_ns, start);
  h->end_state = CS_TR_END_OPEN; /* until close completes it */
  h->end_records = 0;
  cs_trace_header_seal(h);
  t->hdr = *h;
  t->pos = CS_TRACE_HEADER_BYTES;
  for (uint32_t r = 0; r < n; r++)
    ring_init(t, ring_of(w, r), chunk_rec, start);
}

int cs_tracer_open(cs_tracer_t **out, const char *path, cs_trace_header_t *h,
                   cs_world_t *w)
{
  int err;
  uint64_t chunk_rec;
  cs_tracer_t *t = tracer_new(w, &chunk_rec, &err);
  if (!t)
    return err;
  /* Without io_uring (a container's seccomp profile or the
   * kernel.io_uring_disabled sysctl refuses it) the launcher writes each
   * full chunk itself with pwrite: the same file, more launcher time. */
  t->depth = t->nchunk < 256 ? t->nchunk : 256;
  t->have_ring = io_uring_queue_init(t->depth, &t->ring, 0) == 0;
  t->sync_only = !t->have_ring;
  /* Unlink on failure only what this call created: never a file (or a
   * device such as /dev/full) that was there before. */
  t->fd = cs_trace_create_file(path, &t->created);
  if (t->fd < 0) {
    err = t->fd;
    goto err_ring;
  }
  uint64_t start = start_clock(t, h);
  tracer_start(t, h, chunk_rec, start);
  /* The header goes out at once, so an unwritable target fails here with a
   * clear message. */
  if ((err = write_header_block(t, &t->hdr)) < 0)
    goto err_close;
  *out = t;
  return 0;

err_close:
  close(t->fd);
  if (t->created)
    unlink(path);
err_ring:
  if (t->have_ring)
    io_uring_queue_exit(&t->ring);
  free(t->was_direct);
  free(t->off);
  free(t);
  return err;
}

int cs_tracer_open_mem(cs_tracer_t **out, cs_trace_header_t *h, cs_world_t *w)
{
  int err;
  uint64_t chunk_rec;
  cs_tracer_t *t = tracer_new(w, &chunk_rec, &err);
  if (!t)
    return err;
  t->mem = 1;
  t->sync_only = 1;
  /* No clock calibration (start_clock sleeps 2 ms to measure the TSC
   * rate): the records carry ns, which nothing here reads. */
  t->ns0 = cs_now_ns();
  h->tick_ns = 0;
  tracer_start(t, h, chunk_rec, t->ns0);
  *out = t;
  return 0;
}

void cs_tracer_drain(void *arg)
{
  cs_tracer_t *t = arg;
  /* Completions first: a rank may be waiting for its next slot. */
  while (reap_one(t, 0) == 0)
    ;
  for (uint32_t r = 0; r < t->w->ctl->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(t->w, r);
    /* Oldest first: the slots after the current one, round the ring. */
    uint32_t cur = __atomic_load_n(&ring->cur, __ATOMIC_ACQUIRE);
    for (uint32_t k = 1; k <= CS_TRACE_CHUNKS; k++) {
      uint32_t s = (cur + k) % CS_TRACE_CHUNKS;
      if (__atomic_load_n(&ring->state[s], __ATOMIC_ACQUIRE) == SLOT_FULL) {
        __atomic_store_n(&ring->state[s], SLOT_WRITING, __ATOMIC_RELAXED);
        submit_chunk(t, r * CS_TRACE_CHUNKS + s);
      }
    }
  }
}

int cs__tracer_reap(cs_tracer_t *t, int wait)
{
  return reap_one(t, wait);
}

/* Appends n bytes at the end of the file, through the page cache. */
static void put_tail(cs_tracer_t *t, const void *p, uint64_t n)
{
  if (t->mem) {
    mem_put(t, p, n);
    t->pos += n;
    return;
  }
  int rc = cs_pwrite_full(t->fd, p, n, t->pos);
  if (rc < 0 && !t->err)
    t->err = rc;
  t->pos += n;
}

static void launcher_rec(cs_tracer_t *t, uint32_t kind, uint32_t rank,
                         int32_t value, int32_t observed, uint32_t step)
{
  cs_trace_rec_t x;
  memset(&x, 0, sizeof(x));
  x.seq = __atomic_fetch_add(&t->w->ctl->event_seq, 1, __ATOMIC_SEQ_CST);
  x.t_ns = rec_clock(ring_of(t->w, 0)); /* in the ranks' ticks */
  x.rank = rank;
  x.peer = rank;
  x.value = value;
  x.observed = observed;
  x.kind = (uint16_t)kind;
  x.step = step;
  x.checksum = cs_trace_rec_sum(&x);
  put_tail(t, &x, sizeof(x));
}

/* The end of every trace, file or memory: every full chunk written and
 * every write waited for, then each rank's partial chunk (a rank that died
 * mid-chunk leaves its records up to the last one it published), a FAULT
 * record for every rank that died and an ABORT record if the run was
 * aborted. */
static void tracer_tail(cs_tracer_t *t, const cs_launch_result_t *res,
                        const int *statuses)
{
  cs_tracer_drain(t);
  while (t->inflight)
    reap_one(t, 1); /* a failed ring writes the rest with pwrite */
  if (!t->mem)
    buffered(t);
  cs_ctl_t *c = t->w->ctl;
  for (uint32_t r = 0; r < c->nranks; r++) {
    cs_trace_ring_t *ring = ring_of(t->w, r);
    uint32_t s = ring->cur;
    uint64_t n = ring->head + ring->chunk_rec - ring->end;
    if (ring->state[s] == SLOT_FILLING && n > 0 && n <= ring->chunk_rec)
      put_tail(t, slot_rec(ring, s), n * sizeof(cs_trace_rec_t));
  }
  if (statuses)
    for (uint32_t r = 0; r < c->nranks; r++) {
      int st = statuses[r];
      int32_t ev = (int32_t)c->rank[r].event;
      if (WIFSIGNALED(st) && WTERMSIG(st) != SIGKILL)
        launcher_rec(t, CS_TR_FAULT, r, WTERMSIG(st), ev, 1);
      else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
               WEXITSTATUS(st) != CS_RX_ABORTED)
        launcher_rec(t, CS_TR_FAULT, r, WEXITSTATUS(st), ev, 2);
      else if (c->rank[r].state == CS_RS_HUNG) /* stopped by a peer's
                                                  timeout or the launcher */
        launcher_rec(t, CS_TR_FAULT, r, CS_RX_HUNG, ev, 2);
    }
  if (res && res->aborted)
    launcher_rec(t, CS_TR_ABORT, res->abort_rank < 0 ? UINT32_MAX
                                                     : (uint32_t)res->abort_rank,
                 (int32_t)res->abort_reason, 0, 0);
}

static void tracer_free(cs_tracer_t *t)
{
  if (t->have_ring)
    io_uring_queue_exit(&t->ring);
  free(t->mem_rec);
  free(t->was_direct);
  free(t->off);
  free(t);
}

int cs_tracer_close(cs_tracer_t *t, const cs_launch_result_t *res,
                    const int *statuses)
{
  /* The ranks are gone. */
  tracer_tail(t, res, statuses);
  int err = t->err;
  if (!err && ftruncate(t->fd, (off_t)t->pos) < 0 && errno != EINVAL)
    err = -errno; /* EINVAL: not a regular file (/dev/null) */
#if defined(__x86_64__)
  /* The clock rate over the whole run (the first estimate spanned 2 ms). */
  if (!err && t->use_tsc) {
    uint64_t now_c = __rdtsc(), now_n = cs_now_ns();
    if (now_c > t->tsc0 && now_n > t->ns0)
      t->hdr.tick_ns = (double)(now_n - t->ns0) / (double)(now_c - t->tsc0);
  }
#endif
  /* The header is written once more, last: the file is complete, with
   * this many records (a run killed before here leaves it OPEN). */
  if (!err) {
    t->hdr.end_records = (t->pos - CS_TRACE_HEADER_BYTES) / sizeof(cs_trace_rec_t);
    t->hdr.end_state = CS_TR_END_COMPLETE;
    cs_trace_header_seal(&t->hdr);
    err = cs_pwrite_full(t->fd, &t->hdr, sizeof(t->hdr), 0);
  }
  if (close(t->fd) < 0 && !err)
    err = -errno;
  tracer_free(t);
  return err;
}

static int cmp_seq(const void *a, const void *b)
{
  uint64_t x = ((const cs_trace_rec_t *)a)->seq, y = ((const cs_trace_rec_t *)b)->seq;
  return x < y ? -1 : x > y;
}

int cs_tracer_close_mem(cs_tracer_t *t, const cs_launch_result_t *res,
                        const int *statuses, cs_trace_t *out)
{
  tracer_tail(t, res, statuses);
  int err = t->err;
  *out = (cs_trace_t){0};
  if (!err) {
    t->hdr.end_records = t->mem_n;
    t->hdr.end_state = CS_TR_END_COMPLETE;
    cs_trace_header_seal(&t->hdr);
    if (t->mem_n > 1)
      qsort(t->mem_rec, t->mem_n, sizeof(cs_trace_rec_t), cmp_seq);
    *out = (cs_trace_t){.hdr = t->hdr, .rec = t->mem_rec, .n = t->mem_n};
    t->mem_rec = NULL; /* the caller's now (cs_trace_free) */
  }
  tracer_free(t);
  return err;
}
