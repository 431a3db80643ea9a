/*
 * trace_read.c - the validating trace reader. Every file is either loaded
 * whole (records sorted by seq) or refused with one line saying why: empty,
 * truncated, wrong magic, future version, corrupt header, corrupt record N.
 * Reads with plain stdio; never trusts a length before checking it against
 * the file's size.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../trace.h"

static int cmp_seq(const void *a, const void *b)
{
  uint64_t x = ((const cs_trace_rec_t *)a)->seq, y = ((const cs_trace_rec_t *)b)->seq;
  return x < y ? -1 : x > y;
}

static int bad(char *why, size_t n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(char *why, size_t n, const char *path, const char *fmt, ...)
{
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(why, n, "%s: %s", path, msg);
  return -1;
}

static int header_ok(const cs_trace_header_t *h, char *why, size_t n,
                     const char *path)
{
  if (memcmp(h->magic, CS_TRACE_MAGIC, 8) != 0)
    return bad(why, n, path, "not a collsim trace (wrong magic)");
  if (h->version > CS_TRACE_VERSION)
    return bad(why, n, path, "trace format version %u is newer than this "
               "collsim reads (%u): upgrade collsim", h->version, CS_TRACE_VERSION);
  if (h->version == 0)
    return bad(why, n, path, "corrupt header: version 0");
  cs_trace_header_t c = *h;
  c.checksum = 0;
  if (cs_trace_fnv32(&c, sizeof(c)) != h->checksum)
    return bad(why, n, path, "corrupt header (checksum mismatch)");
  if (h->header_bytes != (h->version >= 3 ? CS_TRACE_HEADER_BYTES
                                          : CS_TRACE_HEADER_STRUCT) ||
      h->record_bytes != CS_TRACE_RECORD_BYTES)
    return bad(why, n, path, "corrupt header: header %u / record %u bytes",
               h->header_bytes, h->record_bytes);
  if (!(h->tick_ns >= 0 && h->tick_ns < 1e6) || (h->version == 1 && h->tick_ns != 0))
    return bad(why, n, path, "corrupt header: %g ns per clock tick", h->tick_ns);
  if (h->nranks < 1 || h->nranks > CS_MAX_RANKS || h->layout.nslots > CS_MAX_SLOTS)
    return bad(why, n, path, "corrupt header: %u ranks, %u slots", h->nranks,
               h->layout.nslots);
  return 0;
}

static int load(const char *path, cs_trace_t *t, char *why, size_t whylen,
                uint64_t *edited)
{
  memset(t, 0, sizeof(*t));
  FILE *f = fopen(path, "rb");
  if (!f)
    return bad(why, whylen, path, "cannot open: %s", strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) < 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return bad(why, whylen, path, "not a regular file");
  }
  uint64_t size = (uint64_t)sb.st_size;
  if (size == 0) {
    fclose(f);
    return bad(why, whylen, path, "empty file, not a collsim trace");
  }
  if (size < sizeof(cs_trace_header_t)) {
    char magic[8] = {0};
    size_t got = fread(magic, 1, sizeof(magic), f);
    fclose(f);
    if (got < 8 || memcmp(magic, CS_TRACE_MAGIC, 8) != 0)
      return bad(why, whylen, path, "not a collsim trace (wrong magic)");
    return bad(why, whylen, path, "truncated: %llu bytes, shorter than the "
               "%u-byte header", (unsigned long long)size, CS_TRACE_HEADER_STRUCT);
  }
  if (fread(&t->hdr, sizeof(t->hdr), 1, f) != 1) {
    fclose(f);
    return bad(why, whylen, path, "read error");
  }
  if (header_ok(&t->hdr, why, whylen, path) < 0) {
    fclose(f);
    memset(t, 0, sizeof(*t));
    return -1;
  }
  /* Version 3 pads the header to a 4 KiB block (records written straight
   * from memory with O_DIRECT must start on one): all zero. */
  uint32_t hb = t->hdr.header_bytes;
  if (size < hb) {
    fclose(f);
    memset(t, 0, sizeof(*t));
    return bad(why, whylen, path, "truncated: %llu bytes, shorter than the "
               "%u-byte header block", (unsigned long long)size, hb);
  }
  for (uint32_t o = sizeof(cs_trace_header_t); o < hb; o += 64) {
    uint8_t pad[64];
    size_t k = hb - o < sizeof(pad) ? hb - o : sizeof(pad);
    int nz = fread(pad, 1, k, f) != k;
    for (size_t i = 0; i < k && !nz; i++)
      nz = pad[i] != 0;
    if (nz) {
      fclose(f);
      memset(t, 0, sizeof(*t));
      return bad(why, whylen, path, "corrupt header (padding bytes %u..%u "
                 "are not all zero)", o, o + (uint32_t)k - 1);
    }
  }
  uint64_t body = size - hb;
  if (body % sizeof(cs_trace_rec_t)) {
    fclose(f);
    memset(t, 0, sizeof(*t));
    return bad(why, whylen, path, "truncated: last record has %llu of %zu bytes",
               (unsigned long long)(body % sizeof(cs_trace_rec_t)),
               sizeof(cs_trace_rec_t));
  }
  uint64_t n = body / sizeof(cs_trace_rec_t);
  t->rec = n ? malloc(n * sizeof(cs_trace_rec_t)) : NULL;
  if (n && !t->rec) {
    fclose(f);
    memset(t, 0, sizeof(*t));
    return bad(why, whylen, path, "out of memory for %llu records",
               (unsigned long long)n);
  }
  if (n && fread(t->rec, sizeof(cs_trace_rec_t), n, f) != n) {
    fclose(f);
    cs_trace_free(t);
    return bad(why, whylen, path, "read error");
  }
  fclose(f);
  const cs_trace_header_t *h = &t->hdr;
  for (uint64_t i = 0; i < n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    const char *what = NULL;
    if (cs_trace_rec_sum(x) != x->checksum) {
      if (edited)
        (*edited)++; /* tolerated: an edited record, still range-checked */
      else
        what = "checksum mismatch";
    }
    if (what)
      ;
    else if (x->kind == 0 || x->kind >= CS_TR_NKINDS)
      what = "unknown kind";
    else if (x->rank >= h->nranks && !(x->kind == CS_TR_ABORT && x->rank == UINT32_MAX))
      what = "rank out of range";
    else if (x->kind < CS_TR_FAULT && x->kind != CS_EV_MARK && x->kind != CS_EV_FENCE &&
             x->kind != CS_EV_REDUCE && (x->peer >= h->nranks || x->slot >= h->layout.nslots))
      what = "peer or slot out of range";
    if (what) {
      cs_trace_free(t);
      return bad(why, whylen, path, "corrupt record %llu (%s)",
                 (unsigned long long)i, what);
    }
  }
  /* Times are stored as clock ticks (the TSC, read in ~10 ns where
   * clock_gettime takes 30); the header's rate, measured over the whole
   * run, turns them into ns. */
  if (h->tick_ns > 0)
    for (uint64_t i = 0; i < n; i++) {
      double ns = (double)t->rec[i].t_ns * h->tick_ns + 0.5;
      /* An edited record (replay keeps those) may hold any value: no
       * out-of-range conversion. */
      t->rec[i].t_ns = ns < 0x1p64 ? (uint64_t)ns : UINT64_MAX;
    }
  qsort(t->rec, n, sizeof(cs_trace_rec_t), cmp_seq);
  for (uint64_t i = 1; i < n; i++)
    if (t->rec[i].seq == t->rec[i - 1].seq) {
      unsigned long long s = t->rec[i].seq;
      cs_trace_free(t);
      return bad(why, whylen, path, "corrupt: sequence number %llu appears "
                 "twice", s);
    }
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
