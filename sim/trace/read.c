/*
 * read.c - the validating trace reader: a stream of checked records, and
 * the whole-trace loader built on it.
 *
 * Owns: cs_trace_reader_* (read.h), which checks the header first and then
 * each record as it comes through one fixed 64 KiB buffer, and
 * cs_trace_load / cs_trace_load_edited (sim/trace.h), which collect the
 * stream's records, sort them by seq and refuse duplicates. Every file is
 * either read whole or refused with a code and a defect (cs_trace_diag_t):
 * empty, truncated, wrong magic, future version, corrupt header, corrupt
 * record N; cs_trace_strerror, at the end of this file, words it in one
 * line. Never trusts a length before checking it against the file's size;
 * never allocates in proportion to the file before its records have been
 * read and checked. Does not own the layout (format.h) or the checksums
 * (sim/trace/checksum.c). Callers: the commands (trace, replay, run,
 * teach), tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../window/cs_error.h"
#include "../../window/fdio.h"
#include "../trace.h"
#include "read.h"

/* Whole records per buffer fill. */
#define BUF_RECORDS (CS_TRACE_READER_BUF / CS_TRACE_RECORD_BYTES)
#define REASON_BYTES 256 /* a reason, without the path */

struct cs_trace_reader {
  int               fd;
  unsigned          flags;  /* CS_TRACE_READ_* */
  cs_trace_diag_t   diag;   /* the refusal; code 0 while none */
  cs_trace_header_t hdr;
  uint64_t          n;      /* records in the file */
  uint64_t          next;   /* index of the next record */
  uint64_t          edited; /* records kept despite their checksum */
  size_t            pos;    /* bytes of buf handed out */
  size_t            len;    /* bytes of buf filled */
  size_t            bytes;  /* this allocation */
  const char       *path;   /* points into path_buf */
  uint8_t           buf[BUF_RECORDS * CS_TRACE_RECORD_BYTES];
  char              path_buf[]; /* the path, NUL-terminated */
};

static int cmp_seq(const void *a, const void *b)
{
  uint64_t x = ((const cs_trace_rec_t *)a)->seq, y = ((const cs_trace_rec_t *)b)->seq;
  return x < y ? -1 : x > y;
}

/* The code each defect is returned as. */
static int defect_code(cs_trace_defect_t k, uint64_t err)
{
  switch (k) {
  case CS_TRD_OK: return 0;
  case CS_TRD_OPEN: return -(int)err;
  case CS_TRD_NOT_REGULAR: return CS_ENOTREG;
  case CS_TRD_EMPTY: return CS_EEMPTY;
  case CS_TRD_MAGIC: return CS_EMAGIC;
  case CS_TRD_SHORT_HEADER:
  case CS_TRD_SHORT_BLOCK:
  case CS_TRD_SHORT_RECORD: return CS_ETRUNCATED;
  case CS_TRD_READ: return -EIO;
  case CS_TRD_NEWER: return CS_EVERSION;
  case CS_TRD_REC_SUM:
  case CS_TRD_REC_KIND:
  case CS_TRD_REC_RANK:
  case CS_TRD_REC_PEER:
  case CS_TRD_REC_2D: return CS_EBADRECORD;
  case CS_TRD_NOMEM_READER:
  case CS_TRD_NOMEM_RECORDS: return -ENOMEM;
  case CS_TRD_DUP_SEQ: return CS_EDUPSEQ;
  default: return CS_EBADHEADER;
  }
}

/* Fills *d with defect k and its values. Returns its code. */
static int diag_set(cs_trace_diag_t *d, const char *path, cs_trace_defect_t k,
                    uint64_t a, uint64_t b)
{
  *d = (cs_trace_diag_t){.code = defect_code(k, a), .defect = k, .path = path,
                         .a = a, .b = b};
  return d->code;
}

/* Records the reader's refusal. Returns its code. */
static int fail(cs_trace_reader_t *rd, cs_trace_defect_t k, uint64_t a,
                uint64_t b)
{
  return diag_set(&rd->diag, rd->path, k, a, b);
}

static int header_ok(cs_trace_reader_t *rd)
{
  const cs_trace_header_t *h = &rd->hdr;
  if (memcmp(h->magic, CS_TRACE_MAGIC, 8) != 0)
    return fail(rd, CS_TRD_MAGIC, 0, 0);
  if (h->version > CS_TRACE_VERSION)
    return fail(rd, CS_TRD_NEWER, h->version, CS_TRACE_VERSION);
  if (h->version == 0)
    return fail(rd, CS_TRD_VERSION0, 0, 0);
  cs_trace_header_t c = *h;
  c.checksum = 0;
  if (cs_trace_fnv32(&c, sizeof(c)) != h->checksum)
    return fail(rd, CS_TRD_HEADER_SUM, 0, 0);
  if (h->header_bytes != (h->version >= 3 ? CS_TRACE_HEADER_BYTES
                                          : CS_TRACE_HEADER_STRUCT) ||
      h->record_bytes != CS_TRACE_RECORD_BYTES)
    return fail(rd, CS_TRD_SIZES, h->header_bytes, h->record_bytes);
  if (!(h->tick_ns >= 0 && h->tick_ns < 1e6) || (h->version == 1 && h->tick_ns != 0)) {
    fail(rd, CS_TRD_TICK, 0, 0);
    rd->diag.tick_ns = h->tick_ns;
    return rd->diag.code;
  }
  if (h->nranks < 1 || h->nranks > CS_MAX_RANKS || h->layout.nslots > CS_MAX_SLOTS)
    return fail(rd, CS_TRD_RANKS, h->nranks, h->layout.nslots);
  for (uint32_t i = 0; i < h->layout.nslots; i++) {
    uint32_t cb = h->layout.slot[i].cell_bytes;
    if (cb != 0 && (cb != CS_LINE_BYTES || h->version < 4 ||
                    h->layout.slot[i].esize != 4))
      return fail(rd, CS_TRD_CELL_BYTES, i, cb);
  }
  return 0;
}

/* The file is there, regular, not empty and at least a header long; the
 * header is read. `size` = the file's bytes. */
static int read_header(cs_trace_reader_t *rd, uint64_t *size)
{
  rd->fd = open(rd->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* FIFOs */
  if (rd->fd < 0)
    return fail(rd, CS_TRD_OPEN, (uint64_t)errno, 0);
  struct stat sb;
  if (fstat(rd->fd, &sb) < 0 || !S_ISREG(sb.st_mode))
    return fail(rd, CS_TRD_NOT_REGULAR, 0, 0);
  int fl = fcntl(rd->fd, F_GETFL);
  if (fl >= 0)
    fcntl(rd->fd, F_SETFL, fl & ~O_NONBLOCK);
  *size = (uint64_t)sb.st_size;
  if (*size == 0)
    return fail(rd, CS_TRD_EMPTY, 0, 0);
  if (*size < sizeof(cs_trace_header_t)) {
    char magic[8] = {0};
    if (cs_read_full(rd->fd, magic, sizeof(magic)) != (ssize_t)sizeof(magic) ||
        memcmp(magic, CS_TRACE_MAGIC, 8) != 0)
      return fail(rd, CS_TRD_MAGIC, 0, 0);
    return fail(rd, CS_TRD_SHORT_HEADER, *size, CS_TRACE_HEADER_STRUCT);
  }
  if (cs_read_full(rd->fd, &rd->hdr, sizeof(rd->hdr)) != (ssize_t)sizeof(rd->hdr))
    return fail(rd, CS_TRD_READ, 0, 0);
  return 0;
}

/* Version 3 pads the header to a 4 KiB block (records written straight
 * from memory with O_DIRECT must start on one): all zero, checked in
 * 64-byte pieces, the first nonzero one named. */
static int padding_ok(cs_trace_reader_t *rd, uint64_t size)
{
  uint32_t hb = rd->hdr.header_bytes;
  if (size < hb)
    return fail(rd, CS_TRD_SHORT_BLOCK, size, hb);
  size_t pad = hb - sizeof(cs_trace_header_t);
  _Static_assert(CS_TRACE_HEADER_BYTES - CS_TRACE_HEADER_STRUCT <= CS_TRACE_READER_BUF,
                 "the header block's padding fits the buffer");
  ssize_t r = cs_read_full(rd->fd, rd->buf, pad);
  size_t got = r < 0 ? 0 : (size_t)r;
  for (size_t o = 0; o < pad; o += 64) {
    size_t k = pad - o < 64 ? pad - o : 64;
    int nz = o + k > got;
    for (size_t i = 0; i < k && !nz; i++)
      nz = rd->buf[o + i] != 0;
    if (nz) {
      uint32_t at = (uint32_t)(sizeof(cs_trace_header_t) + o);
      return fail(rd, CS_TRD_PADDING, at, at + (uint32_t)k - 1);
    }
  }
  return 0;
}

int cs_trace_reader_open(const char *path, unsigned flags,
                         cs_trace_reader_t **rd, cs_trace_diag_t *d)
{
  cs_trace_diag_t none;
  d = d ? d : &none;
  *rd = NULL;
  size_t plen = strlen(path);
  size_t bytes = sizeof(cs_trace_reader_t) + plen + 1;
  cs_trace_reader_t *r = malloc(bytes);
  if (!r)
    return diag_set(d, path, CS_TRD_NOMEM_READER, 0, 0);
  memset(r, 0, sizeof(*r));
  r->fd = -1;
  r->flags = flags;
  r->bytes = bytes;
  memcpy(r->path_buf, path, plen + 1);
  r->path = r->path_buf;
  uint64_t size = 0;
  if (read_header(r, &size) < 0 || header_ok(r) < 0 || padding_ok(r, size) < 0)
    goto fail_close;
  uint64_t body = size - r->hdr.header_bytes;
  if (body % sizeof(cs_trace_rec_t)) {
    fail(r, CS_TRD_SHORT_RECORD, body % sizeof(cs_trace_rec_t),
         sizeof(cs_trace_rec_t));
    goto fail_close;
  }
  r->n = body / sizeof(cs_trace_rec_t);
  *rd = r;
  return diag_set(d, path, CS_TRD_OK, 0, 0);
fail_close:
  *d = r->diag;
  d->path = path;
  cs_trace_reader_close(r);
  return d->code;
}

/* Why record x is refused, or CS_TRD_OK. Counts a tolerated edit. */
static cs_trace_defect_t rec_fault(cs_trace_reader_t *rd,
                                   const cs_trace_rec_t *x)
{
  const cs_trace_header_t *h = &rd->hdr;
  if (cs_trace_rec_sum(x) != x->checksum) {
    if (!(rd->flags & CS_TRACE_READ_EDITED))
      return CS_TRD_REC_SUM;
    rd->edited++; /* tolerated: an edited record, still range-checked */
  }
  if (x->kind == 0 || x->kind >= CS_TR_NKINDS ||
      (x->kind >= CS_EV_PIPE && h->version < 4))
    return CS_TRD_REC_KIND;
  if (x->rank >= h->nranks && !(x->kind == CS_TR_ABORT && x->rank == UINT32_MAX))
    return CS_TRD_REC_RANK;
  /* The event that failed its bounds check (CS_TR_FAILED) is recorded
   * with the arguments it was refused for: a plug-in's peer 999, slot 99
   * or huge rectangle is what the trace must show, not a corrupt record.
   * Every reader of a record checks peer and slot against the header
   * before it indexes by them. */
  if (x->opcmp & CS_TR_FAILED && cs_ev_is_device(x->kind))
    return CS_TRD_OK;
  if (((x->kind < CS_TR_FAULT && x->kind != CS_EV_MARK && x->kind != CS_EV_FENCE &&
        x->kind != CS_EV_REDUCE) || x->kind == CS_EV_DCCI || x->kind == CS_EV_READ) &&
      (x->peer >= h->nranks || x->slot >= h->layout.nslots))
    return CS_TRD_REC_PEER;
  if (cs_trace_rec_is_2d(x) && !cs_trace_rec_2d_ok(x))
    return CS_TRD_REC_2D;
  return CS_TRD_OK;
}

int cs_trace_reader_next(cs_trace_reader_t *rd, cs_trace_rec_t *rec)
{
  if (rd->diag.code)
    return rd->diag.code;
  if (rd->next == rd->n)
    return 0;
  if (rd->pos == rd->len) {
    uint64_t left = rd->n - rd->next;
    size_t want = (left < BUF_RECORDS ? (size_t)left : BUF_RECORDS) *
                  sizeof(cs_trace_rec_t);
    rd->pos = rd->len = 0;
    ssize_t got = cs_read_full(rd->fd, rd->buf, want);
    if (got >= 0)
      rd->len = (size_t)got;
    if (got != (ssize_t)want)
      return fail(rd, CS_TRD_READ, 0, 0);
  }
  cs_trace_rec_t x;
  memcpy(&x, rd->buf + rd->pos, sizeof(x));
  rd->pos += sizeof(x);
  cs_trace_defect_t what = rec_fault(rd, &x);
  if (what != CS_TRD_OK)
    return fail(rd, what, rd->next, 0);
  /* Times are stored as clock ticks (the TSC where it is invariant); the
   * header's rate, measured over the whole run, turns them into ns. */
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

const cs_trace_diag_t *cs_trace_reader_diag(const cs_trace_reader_t *rd)
{
  return &rd->diag;
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
static int load(const char *path, cs_trace_t *t, cs_trace_diag_t *d,
                uint64_t *edited)
{
  cs_trace_diag_t none;
  d = d ? d : &none;
  memset(t, 0, sizeof(*t));
  cs_trace_reader_t *rd;
  unsigned flags = edited ? CS_TRACE_READ_EDITED : 0;
  int rc = cs_trace_reader_open(path, flags, &rd, d);
  if (rc < 0)
    return rc;
  uint64_t n = 0, cap = 0, total = cs_trace_reader_records(rd);
  cs_trace_rec_t *rec = NULL, x;
  while ((rc = cs_trace_reader_next(rd, &x)) == 1) {
    if (n == cap) {
      uint64_t want = cap ? 2 * cap : 1024;
      want = want < total ? want : total;
      cs_trace_rec_t *grown = want <= SIZE_MAX / sizeof(x)
                                  ? realloc(rec, want * sizeof(x)) : NULL;
      if (!grown) {
        free(rec);
        cs_trace_reader_close(rd);
        return diag_set(d, path, CS_TRD_NOMEM_RECORDS, total, 0);
      }
      rec = grown;
      cap = want;
    }
    rec[n++] = x;
  }
  if (edited)
    *edited = cs_trace_reader_edited(rd);
  if (rc < 0) {
    *d = *cs_trace_reader_diag(rd);
    d->path = path;
    free(rec);
    cs_trace_reader_close(rd);
    return rc;
  }
  cs_trace_header_t hdr = *cs_trace_reader_header(rd);
  cs_trace_reader_close(rd);
  if (n > 1) /* rec is NULL for a trace with no records */
    qsort(rec, n, sizeof(cs_trace_rec_t), cmp_seq);
  for (uint64_t i = 1; i < n; i++)
    if (rec[i].seq == rec[i - 1].seq) {
      uint64_t seq = rec[i].seq;
      free(rec);
      return diag_set(d, path, CS_TRD_DUP_SEQ, seq, 0);
    }
  t->hdr = hdr;
  t->rec = rec;
  t->n = n;
  return 0;
}

int cs_trace_load(const char *path, cs_trace_t *t, cs_trace_diag_t *d)
{
  return load(path, t, d, NULL);
}

int cs_trace_load_edited(const char *path, cs_trace_t *t, cs_trace_diag_t *d,
                         uint64_t *edited)
{
  *edited = 0;
  return load(path, t, d, edited);
}

void cs_trace_free(cs_trace_t *t)
{
  free(t->rec);
  memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------ wording */

/* Each defect's reason, without the path; %llu stand for a then b. */
static const char *const reasons[] = {
  [CS_TRD_OK] = "",
  [CS_TRD_OPEN] = "cannot open: %s",
  [CS_TRD_NOT_REGULAR] = "not a regular file",
  [CS_TRD_EMPTY] = "empty file, not a collsim trace",
  [CS_TRD_MAGIC] = "not a collsim trace (wrong magic)",
  [CS_TRD_SHORT_HEADER] = "truncated: %llu bytes, shorter than the %llu-byte header",
  [CS_TRD_SHORT_BLOCK] =
      "truncated: %llu bytes, shorter than the %llu-byte header block",
  [CS_TRD_SHORT_RECORD] = "truncated: last record has %llu of %llu bytes",
  [CS_TRD_READ] = "read error",
  /* parenthesised: one string split over two lines, not two elements */
  [CS_TRD_NEWER] = ("trace format version %llu is newer than this collsim "
                    "reads (%llu): upgrade collsim"),
  [CS_TRD_VERSION0] = "corrupt header: version 0",
  [CS_TRD_HEADER_SUM] = "corrupt header (checksum mismatch)",
  [CS_TRD_SIZES] = "corrupt header: header %llu / record %llu bytes",
  [CS_TRD_TICK] = "corrupt header: %g ns per clock tick",
  [CS_TRD_RANKS] = "corrupt header: %llu ranks, %llu slots",
  [CS_TRD_PADDING] =
      "corrupt header (padding bytes %llu..%llu are not all zero)",
  [CS_TRD_REC_SUM] = "corrupt record %llu (checksum mismatch)",
  [CS_TRD_REC_KIND] = "corrupt record %llu (unknown kind)",
  [CS_TRD_REC_RANK] = "corrupt record %llu (rank out of range)",
  [CS_TRD_REC_PEER] = "corrupt record %llu (peer or slot out of range)",
  [CS_TRD_REC_2D] = ("corrupt record %llu (a 2-D access no device call makes: "
                     "rows, elements or stride)"),
  [CS_TRD_NOMEM_READER] = "out of memory for the reader",
  [CS_TRD_NOMEM_RECORDS] = "out of memory for %llu records",
  [CS_TRD_DUP_SEQ] = "corrupt: sequence number %llu appears twice",
  [CS_TRD_CELL_BYTES] = ("corrupt header: slot %llu's cells %llu bytes apart "
                         "(expected 0, or 64 for a padded int32 slot in "
                         "format version 4)"),
};

void cs_trace_strerror(const cs_trace_diag_t *d, char *buf, size_t n)
{
  char msg[REASON_BYTES];
  unsigned k = (unsigned)d->defect;
  const char *fmt = k < sizeof(reasons) / sizeof(reasons[0]) && reasons[k]
                        ? reasons[k] : "unknown defect";
  if (k == CS_TRD_OPEN)
    snprintf(msg, sizeof(msg), fmt, strerror((int)d->a));
  else if (k == CS_TRD_TICK)
    snprintf(msg, sizeof(msg), fmt, d->tick_ns);
  else /* a format names a, or a and b, or neither */
    snprintf(msg, sizeof(msg), fmt, (unsigned long long)d->a,
             (unsigned long long)d->b);
  if (d->defect == CS_TRD_OK && n)
    buf[0] = 0;
  else
    snprintf(buf, n, "%s: %s", d->path && d->path[0] ? d->path : "''", msg);
}
