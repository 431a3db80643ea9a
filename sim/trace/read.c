/*
 * read.c - the validating trace reader: a stream of checked records, and
 * the whole-trace loader built on it.
 *
 * Owns: cs_trace_reader_* (read.h), which checks the header first and then
 * each record as it comes through one fixed 64 KiB buffer, and
 * cs_trace_load / cs_trace_load_edited (sim/trace.h), which collect the
 * stream's records, sort them by seq and refuse duplicates. Every file is
 * either read whole or refused with one line saying why: empty,
 * truncated, wrong magic, future version, corrupt header, corrupt record
 * N. Never trusts a length before checking it against the file's size;
 * never allocates in proportion to the file before its records have been
 * read and checked. Does not own the layout (format.h) or the checksums
 * (sim/trace.c). Callers: tools (trace, replay, run, teach), tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../trace.h"
#include "read.h"

/* Whole records per buffer fill. */
#define BUF_RECORDS (CS_TRACE_READER_BUF / CS_TRACE_RECORD_BYTES)
#define REASON_BYTES 256 /* a reason, without the path */

struct cs_trace_reader {
  int               fd;
  unsigned          flags;  /* CS_TRACE_READ_* */
  int               failed; /* 1 after next() returned -1 */
  cs_trace_header_t hdr;
  uint64_t          n;      /* records in the file */
  uint64_t          next;   /* index of the next record */
  uint64_t          edited; /* records kept despite their checksum */
  size_t            pos;    /* bytes of buf handed out */
  size_t            len;    /* bytes of buf filled */
  size_t            bytes;  /* this allocation */
  const char       *path;   /* points into why_path */
  uint8_t           buf[BUF_RECORDS * CS_TRACE_RECORD_BYTES];
  char             *why;    /* "PATH: reason", points into why_path */
  char              why_path[]; /* the path, NUL, then the reason buffer */
};

static int cmp_seq(const void *a, const void *b)
{
  uint64_t x = ((const cs_trace_rec_t *)a)->seq, y = ((const cs_trace_rec_t *)b)->seq;
  return x < y ? -1 : x > y;
}

static int bad(char *why, size_t n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(char *why, size_t n, const char *path, const char *fmt, ...)
{
  char msg[REASON_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(why, n, "%s: %s", path, msg);
  return -1;
}

/* Fills the reader's reason: "PATH: reason". Returns -1. */
static int fail(cs_trace_reader_t *rd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(cs_trace_reader_t *rd, const char *fmt, ...)
{
  char msg[REASON_BYTES];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(rd->why, strlen(rd->path) + 2 + REASON_BYTES, "%s: %s", rd->path, msg);
  return -1;
}

/* Reads up to n bytes, retrying short reads; *got = bytes read. Returns 0
 * when all n came, -1 at an error or the end of the file. */
static int read_full(int fd, void *p, size_t n, size_t *got)
{
  size_t k = 0;
  while (k < n) {
    ssize_t r = read(fd, (uint8_t *)p + k, n - k);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    k += (size_t)r;
  }
  *got = k;
  return k == n ? 0 : -1;
}

static int header_ok(cs_trace_reader_t *rd)
{
  const cs_trace_header_t *h = &rd->hdr;
  if (memcmp(h->magic, CS_TRACE_MAGIC, 8) != 0)
    return fail(rd, "not a collsim trace (wrong magic)");
  if (h->version > CS_TRACE_VERSION)
    return fail(rd, "trace format version %u is newer than this "
                "collsim reads (%u): upgrade collsim", h->version, CS_TRACE_VERSION);
  if (h->version == 0)
    return fail(rd, "corrupt header: version 0");
  cs_trace_header_t c = *h;
  c.checksum = 0;
  if (cs_trace_fnv32(&c, sizeof(c)) != h->checksum)
    return fail(rd, "corrupt header (checksum mismatch)");
  if (h->header_bytes != (h->version >= 3 ? CS_TRACE_HEADER_BYTES
                                          : CS_TRACE_HEADER_STRUCT) ||
      h->record_bytes != CS_TRACE_RECORD_BYTES)
    return fail(rd, "corrupt header: header %u / record %u bytes",
                h->header_bytes, h->record_bytes);
  if (!(h->tick_ns >= 0 && h->tick_ns < 1e6) || (h->version == 1 && h->tick_ns != 0))
    return fail(rd, "corrupt header: %g ns per clock tick", h->tick_ns);
  if (h->nranks < 1 || h->nranks > CS_MAX_RANKS || h->layout.nslots > CS_MAX_SLOTS)
    return fail(rd, "corrupt header: %u ranks, %u slots", h->nranks,
                h->layout.nslots);
  return 0;
}

/* The file is there, regular, not empty and at least a header long; the
 * header is read. `size` = the file's bytes. */
static int read_header(cs_trace_reader_t *rd, uint64_t *size)
{
  rd->fd = open(rd->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* FIFOs */
  if (rd->fd < 0)
    return fail(rd, "cannot open: %s", strerror(errno));
  struct stat sb;
  if (fstat(rd->fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    return fail(rd, "not a regular file: expected a collsim trace file");
  int fl = fcntl(rd->fd, F_GETFL);
  if (fl >= 0)
    fcntl(rd->fd, F_SETFL, fl & ~O_NONBLOCK);
  *size = (uint64_t)sb.st_size;
  if (*size == 0)
    return fail(rd, "empty file, not a collsim trace");
  size_t got;
  if (*size < sizeof(cs_trace_header_t)) {
    char magic[8] = {0};
    if (read_full(rd->fd, magic, sizeof(magic), &got) < 0 ||
        memcmp(magic, CS_TRACE_MAGIC, 8) != 0)
      return fail(rd, "not a collsim trace (wrong magic)");
    return fail(rd, "truncated: %llu bytes, shorter than the %u-byte header",
                (unsigned long long)*size, CS_TRACE_HEADER_STRUCT);
  }
  if (read_full(rd->fd, &rd->hdr, sizeof(rd->hdr), &got) < 0)
    return fail(rd, "read error");
  return 0;
}

/* Version 3 pads the header to a 4 KiB block (records written straight
 * from memory with O_DIRECT must start on one): all zero, checked in
 * 64-byte pieces, the first nonzero one named. */
static int padding_ok(cs_trace_reader_t *rd, uint64_t size)
{
  uint32_t hb = rd->hdr.header_bytes;
  if (size < hb)
    return fail(rd, "truncated: %llu bytes, shorter than the %u-byte header "
                "block", (unsigned long long)size, hb);
  size_t pad = hb - sizeof(cs_trace_header_t), got;
  _Static_assert(CS_TRACE_HEADER_BYTES - CS_TRACE_HEADER_STRUCT <= CS_TRACE_READER_BUF,
                 "the header block's padding fits the buffer");
  read_full(rd->fd, rd->buf, pad, &got);
  for (size_t o = 0; o < pad; o += 64) {
    size_t k = pad - o < 64 ? pad - o : 64;
    int nz = o + k > got;
    for (size_t i = 0; i < k && !nz; i++)
      nz = rd->buf[o + i] != 0;
    if (nz) {
      uint32_t at = (uint32_t)(sizeof(cs_trace_header_t) + o);
      return fail(rd, "corrupt header (padding bytes %u..%u are not all zero)",
                  at, at + (uint32_t)k - 1);
    }
  }
  return 0;
}

int cs_trace_reader_open(const char *path, unsigned flags,
                         cs_trace_reader_t **rd, char *why, size_t whylen)
{
  *rd = NULL;
  size_t plen = strlen(path);
  size_t bytes = sizeof(cs_trace_reader_t) + plen + 1 + plen + 2 + REASON_BYTES;
  cs_trace_reader_t *r = malloc(bytes);
  if (!r)
    return bad(why, whylen, path, "out of memory for the reader");
  memset(r, 0, sizeof(*r));
  r->fd = -1;
  r->flags = flags;
  r->bytes = bytes;
  memcpy(r->why_path, path, plen + 1);
  r->path = r->why_path;
  r->why = r->why_path + plen + 1;
  r->why[0] = 0;
  uint64_t size = 0;
  if (read_header(r, &size) < 0 || header_ok(r) < 0 || padding_ok(r, size) < 0)
    goto fail_close;
  uint64_t body = size - r->hdr.header_bytes;
  if (body % sizeof(cs_trace_rec_t)) {
    fail(r, "truncated: last record has %llu of %zu bytes",
         (unsigned long long)(body % sizeof(cs_trace_rec_t)), sizeof(cs_trace_rec_t));
    goto fail_close;
  }
  r->n = body / sizeof(cs_trace_rec_t);
  *rd = r;
  return 0;
fail_close:
  snprintf(why, whylen, "%s", r->why);
  cs_trace_reader_close(r);
  return -1;
}

/* Why record x (index i) is refused, or NULL. Counts a tolerated edit. */
static const char *rec_fault(cs_trace_reader_t *rd, const cs_trace_rec_t *x)
{
  const cs_trace_header_t *h = &rd->hdr;
  if (cs_trace_rec_sum(x) != x->checksum) {
    if (!(rd->flags & CS_TRACE_READ_EDITED))
      return "checksum mismatch";
    rd->edited++; /* tolerated: an edited record, still range-checked */
  }
  if (x->kind == 0 || x->kind >= CS_TR_NKINDS)
    return "unknown kind";
  if (x->rank >= h->nranks && !(x->kind == CS_TR_ABORT && x->rank == UINT32_MAX))
    return "rank out of range";
  if (x->kind < CS_TR_FAULT && x->kind != CS_EV_MARK && x->kind != CS_EV_FENCE &&
      x->kind != CS_EV_REDUCE && (x->peer >= h->nranks || x->slot >= h->layout.nslots))
    return "peer or slot out of range";
  return NULL;
}

int cs_trace_reader_next(cs_trace_reader_t *rd, cs_trace_rec_t *rec)
{
  if (rd->failed)
    return -1;
  if (rd->next == rd->n)
    return 0;
  if (rd->pos == rd->len) {
    uint64_t left = rd->n - rd->next;
    size_t want = (left < BUF_RECORDS ? (size_t)left : BUF_RECORDS) *
                  sizeof(cs_trace_rec_t);
    rd->pos = rd->len = 0;
    if (read_full(rd->fd, rd->buf, want, &rd->len) < 0) {
      rd->failed = 1;
      return fail(rd, "read error");
    }
  }
  cs_trace_rec_t x;
  memcpy(&x, rd->buf + rd->pos, sizeof(x));
  rd->pos += sizeof(x);
  const char *what = rec_fault(rd, &x);
  if (what) {
    rd->failed = 1;
    return fail(rd, "corrupt record %llu (%s)", (unsigned long long)rd->next, what);
  }
  /* Times are stored as clock ticks (the TSC, read in ~10 ns where
   * clock_gettime takes 30); the header's rate, measured over the whole
   * run, turns them into ns. */
  if (rd->hdr.tick_ns > 0) {
    double ns = (double)x.t_ns * rd->hdr.tick_ns + 0.5;
    /* An edited record (replay keeps those) may hold any value: no
     * out-of-range conversion. */
    x.t_ns = ns < 0x1p64 ? (uint64_t)ns : UINT64_MAX;
  }
  rd->next++;
  *rec = x;
  return 1;
}

const char *cs_trace_reader_why(const cs_trace_reader_t *rd)
{
  return rd->why;
}

const cs_trace_header_t *cs_trace_reader_header(const cs_trace_reader_t *rd)
{
  return &rd->hdr;
}

uint64_t cs_trace_reader_records(const cs_trace_reader_t *rd)
{
  return rd->n;
}

uint64_t cs_trace_reader_edited(const cs_trace_reader_t *rd)
{
  return rd->edited;
}

size_t cs_trace_reader_bytes(const cs_trace_reader_t *rd)
{
  return rd->bytes;
}

void cs_trace_reader_close(cs_trace_reader_t *rd)
{
  if (!rd)
    return;
  if (rd->fd >= 0)
    close(rd->fd);
  free(rd);
}

/* ------------------------------------------------------------ loading */

/* Collects the stream, growing the array as checked records arrive (never
 * past the file's count), then sorts by seq and refuses duplicates. */
static int load(const char *path, cs_trace_t *t, char *why, size_t whylen,
                uint64_t *edited)
{
  memset(t, 0, sizeof(*t));
  cs_trace_reader_t *rd;
  if (cs_trace_reader_open(path, edited ? CS_TRACE_READ_EDITED : 0, &rd, why,
                           whylen) < 0)
    return -1;
  uint64_t n = 0, cap = 0, total = cs_trace_reader_records(rd);
  cs_trace_rec_t *rec = NULL, x;
  int rc;
  while ((rc = cs_trace_reader_next(rd, &x)) == 1) {
    if (n == cap) {
      uint64_t want = cap ? 2 * cap : 1024;
      want = want < total ? want : total;
      cs_trace_rec_t *grown = want <= SIZE_MAX / sizeof(x)
                                  ? realloc(rec, want * sizeof(x)) : NULL;
      if (!grown) {
        free(rec);
        cs_trace_reader_close(rd);
        return bad(why, whylen, path, "out of memory for %llu records",
                   (unsigned long long)total);
      }
      rec = grown;
      cap = want;
    }
    rec[n++] = x;
  }
  if (edited)
    *edited = cs_trace_reader_edited(rd);
  if (rc < 0) {
    snprintf(why, whylen, "%s", cs_trace_reader_why(rd));
    free(rec);
    cs_trace_reader_close(rd);
    return -1;
  }
  cs_trace_header_t hdr = *cs_trace_reader_header(rd);
  cs_trace_reader_close(rd);
  if (n > 1) /* rec is NULL for a trace with no records */
    qsort(rec, n, sizeof(cs_trace_rec_t), cmp_seq);
  for (uint64_t i = 1; i < n; i++)
    if (rec[i].seq == rec[i - 1].seq) {
      unsigned long long s = rec[i].seq;
      free(rec);
      return bad(why, whylen, path, "corrupt: sequence number %llu appears "
                 "twice", s);
    }
  t->hdr = hdr;
  t->rec = rec;
  t->n = n;
  return 0;
}

int cs_trace_load(const char *path, cs_trace_t *t, char *why, size_t whylen)
{
  return load(path, t, why, whylen, NULL);
}

int cs_trace_load_edited(const char *path, cs_trace_t *t, char *why,
                         size_t whylen, uint64_t *edited)
{
  *edited = 0;
  return load(path, t, why, whylen, edited);
}

void cs_trace_free(cs_trace_t *t)
{
  free(t->rec);
  memset(t, 0, sizeof(*t));
}
