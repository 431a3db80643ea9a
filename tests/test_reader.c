/*
 * test_reader.c - the streaming trace reader (sim/trace/read.h): it hands
 * out every record in file order, checked, with the times cs_trace_load
 * gives; it refuses a bad header before any record and a bad record where
 * it is, with the loader's message, and stays refused; edited records are
 * kept only when asked; and its memory stays the same from open to close
 * on a trace a hundred times its buffer. The big trace is recorded with
 * the real binary (COLLSIM_BIN, set by ctest); memory is measured with
 * mallinfo2. The loader's many bad-file messages are tested in
 * test_trace.c.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/trace.h"
#include "../sim/trace/read.h"
#include "../window/cs_error.h"
#include "harness.h"

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif
#define SAMPLE_RING COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace"

static void tmp_path(char *buf, size_t n, const char *what)
{
  snprintf(buf, n, "/tmp/collsim-test-reader-%d-%s", (int)getpid(), what);
}

static void remove_tmp_files(void)
{
  char pattern[64];
  snprintf(pattern, sizeof(pattern), "/tmp/collsim-test-reader-%d-*", (int)getpid());
  glob_t g;
  if (glob(pattern, 0, NULL, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; i++)
      unlink(g.gl_pathv[i]);
  globfree(&g);
}
TestSuite(reader, .fini = remove_tmp_files);

static uint8_t *read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void write_all(const char *path, const void *p, size_t n)
{
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(p, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

static cs_trace_rec_t *rec_at(uint8_t *b, uint64_t i)
{
  return (cs_trace_rec_t *)(b + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES);
}

/* Heap bytes in use, arenas and mmapped chunks. */
static size_t heap_in_use(void)
{
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

Test(reader, yields_every_record_in_file_order_as_the_loader_has_them)
{
  size_t size;
  uint8_t *raw = read_all(SAMPLE_RING, &size);
  uint64_t n = (size - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES;
  cs_trace_t t;
  char why[512] = "";
  cr_assert_eq(load_trace(SAMPLE_RING, &t, why, sizeof(why)), 0, "%s", why);
  cr_assert_eq(t.n, n);
  cs_trace_reader_t *rd;
  cr_assert_eq(open_reader(SAMPLE_RING, 0, &rd, why, sizeof(why)), 0,
               "%s", why);
  cr_assert_eq(cs_trace_reader_records(rd), n);
  cr_assert_eq(memcmp(cs_trace_reader_header(rd), raw, sizeof(cs_trace_header_t)), 0);
  cs_trace_rec_t x;
  uint64_t i = 0;
  while (cs_trace_reader_next(rd, &x) == 1) {
    cr_assert_lt(i, n);
    const cs_trace_rec_t *disk = rec_at(raw, i);
    cr_assert_eq(x.seq, disk->seq, "record %llu", (unsigned long long)i);
    cr_assert_eq(x.kind, disk->kind);
    cr_assert_eq(x.checksum, disk->checksum);
    /* The loader sorts; the stream is in file order. Same record, same
     * converted time. */
    uint64_t lo = 0, hi = t.n;
    while (lo < hi) {
      uint64_t mid = (lo + hi) / 2;
      if (t.rec[mid].seq < x.seq)
        lo = mid + 1;
      else
        hi = mid;
    }
    cr_assert_lt(lo, t.n);
    cr_assert_eq(memcmp(&t.rec[lo], &x, sizeof(x)), 0, "record %llu differs",
                 (unsigned long long)i);
    i++;
  }
  cr_assert_eq(i, n);
  cr_assert_eq(cs_trace_reader_next(rd, &x), 0, "past the end");
  cr_assert_eq(cs_trace_reader_next(rd, &x), 0, "past the end, again");
  cr_assert_str_empty(reader_why(rd));
  cs_trace_reader_close(rd);
  cs_trace_free(&t);
  free(raw);
}

Test(reader, refuses_a_bad_header_before_any_record)
{
  size_t size;
  uint8_t *b = read_all(SAMPLE_RING, &size);
  char path[128], why[512] = "";
  tmp_path(path, sizeof(path), "header.cstrace");
  ((cs_trace_header_t *)b)->count ^= 1; /* not resealed */
  write_all(path, b, size);
  cs_trace_reader_t *rd = (cs_trace_reader_t *)b; /* not NULL */
  cr_assert_eq(open_reader(path, 0, &rd, why, sizeof(why)), CS_EBADHEADER);
  cr_assert_null(rd);
  cr_assert(strstr(why, path) == why && strstr(why, ": corrupt header (checksum mismatch)"),
            "%s", why);
  cs_trace_reader_close(NULL);
  free(b);
}

Test(reader, refuses_a_bad_record_where_it_is_with_the_loaders_message)
{
  size_t size;
  uint8_t *b = read_all(SAMPLE_RING, &size);
  char path[128], why[512] = "", lwhy[512] = "";
  tmp_path(path, sizeof(path), "record.cstrace");
  rec_at(b, 7)->elem_off ^= 1; /* its checksum no longer matches */
  write_all(path, b, size);
  cs_trace_reader_t *rd;
  cr_assert_eq(open_reader(path, 0, &rd, why, sizeof(why)), 0, "%s", why);
  cs_trace_rec_t x;
  for (int i = 0; i < 7; i++)
    cr_assert_eq(cs_trace_reader_next(rd, &x), 1, "record %d", i);
  cr_assert_eq(cs_trace_reader_next(rd, &x), CS_EBADRECORD);
  cr_assert_eq(cs_trace_reader_next(rd, &x), CS_EBADRECORD, "a refused stream goes on");
  cs_trace_t t;
  cr_assert_eq(load_trace(path, &t, lwhy, sizeof(lwhy)), CS_EBADRECORD);
  cr_assert_str_eq(reader_why(rd), lwhy);
  cr_assert(strstr(lwhy, ": corrupt record 7 (checksum mismatch)"), "%s", lwhy);
  cs_trace_reader_close(rd);

  /* Asked to, it keeps the edited record and counts it. */
  cr_assert_eq(open_reader(path, CS_TRACE_READ_EDITED, &rd, why,
                                    sizeof(why)), 0, "%s", why);
  uint64_t n = 0;
  int rc;
  while ((rc = cs_trace_reader_next(rd, &x)) == 1)
    n++;
  cr_assert_eq(rc, 0, "%s", reader_why(rd));
  cr_assert_eq(n, cs_trace_reader_records(rd));
  cr_assert_eq(cs_trace_reader_edited(rd), 1);
  cs_trace_reader_close(rd);
  free(b);
}

static void set_cell_bytes(cs_trace_header_t *h, void *arg)
{
  h->layout.slot[1].cell_bytes = *(uint32_t *)arg;
}

static void set_version4(cs_trace_header_t *h, void *arg)
{
  (void)arg;
  h->version = 4;
}

/* Version 4's additions are refused where they cannot be: a slot's cells
 * other than packed or 64 bytes apart, 64 in an older trace, the kinds
 * 14..17 in an older trace; and read where they can. */
Test(reader, refuses_the_a2a3_fields_where_a_trace_cannot_have_them)
{
  char path[128], why[512];
  uint32_t cb = 32;
  snprintf(path, sizeof(path), "/tmp/collsim-cb-XXXXXX");
  edited_trace(SAMPLE_RING, path, set_cell_bytes, &cb);
  cs_trace_t t;
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), CS_EBADHEADER);
  cr_assert(strstr(why, "corrupt header: slot 1's cells 32 bytes apart"), "%s", why);
  unlink(path);
  cb = 64; /* a version-3 trace cannot be padded */
  snprintf(path, sizeof(path), "/tmp/collsim-cb-XXXXXX");
  edited_trace(SAMPLE_RING, path, set_cell_bytes, &cb);
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), CS_EBADHEADER);
  unlink(path);

  size_t size;
  uint8_t *b = read_all(SAMPLE_RING, &size);
  cs_trace_rec_t *x = rec_at(b, 7);
  x->kind = 14; /* a pipe barrier, in a version-3 file */
  x->checksum = cs_trace_rec_sum(x);
  tmp_path(path, sizeof(path), "kind14.cstrace");
  write_all(path, b, size);
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), CS_EBADRECORD);
  cr_assert(strstr(why, ": corrupt record 7 (unknown kind)"), "%s", why);
  unlink(path);
  free(b);

  /* the same record in a version-4 file is a pipe barrier */
  snprintf(path, sizeof(path), "/tmp/collsim-v4-XXXXXX");
  edited_trace(SAMPLE_RING, path, set_version4, NULL);
  b = read_all(path, &size);
  x = rec_at(b, 7);
  x->kind = 14;
  x->checksum = cs_trace_rec_sum(x);
  write_all(path, b, size);
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
  cs_trace_free(&t);
  unlink(path);
  free(b);
}

/* A trace ~100 times the reader's buffer: every record comes through, and
 * the heap in use is the same after the last as after the open, and back
 * where it was after the close. */
Test(reader, memory_stays_bounded_on_a_large_trace, .timeout = 120)
{
#if defined(__SANITIZE_ADDRESS__)
  /* AddressSanitizer's allocator is not glibc's: mallinfo2 sees none of it
   * (test_hardening bounds the reader's memory there by resident size). */
  cr_skip_test("mallinfo2 does not see the AddressSanitizer heap");
#endif
  char path[128], why[512] = "";
  tmp_path(path, sizeof(path), "big.cstrace");
  static cli_out_t r;
  run_cli(&r, 90, "run", "--algo", "ring", "--ranks", "4", "--count", "1000000",
          "--iters", "3", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  uint64_t size = (uint64_t)ftell(f);
  fclose(f);
  cr_assert_gt(size, 100ull * CS_TRACE_READER_BUF, "only %llu bytes",
               (unsigned long long)size);

  size_t before = heap_in_use();
  cs_trace_reader_t *rd;
  cr_assert_eq(open_reader(path, 0, &rd, why, sizeof(why)), 0, "%s", why);
  size_t opened = heap_in_use(), bytes = cs_trace_reader_bytes(rd);
  uint64_t n = cs_trace_reader_records(rd);
  cs_trace_rec_t x;
  uint64_t got = 0;
  size_t peak = opened;
  int rc;
  while ((rc = cs_trace_reader_next(rd, &x)) == 1) {
    got++;
    if (got % 512 == 0) {
      size_t now = heap_in_use();
      peak = now > peak ? now : peak;
    }
  }
  size_t after = heap_in_use();
  cr_assert_eq(rc, 0, "%s", reader_why(rd));
  cr_assert_eq(cs_trace_reader_bytes(rd), bytes);
  cs_trace_reader_close(rd);
  size_t closed = heap_in_use();

  cr_assert_eq(got, n);
  cr_assert_eq(n, (size - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES);
  cr_assert_leq(bytes, CS_TRACE_READER_BUF + 4096, "the reader holds %zu bytes", bytes);
  cr_assert_geq(opened - before, bytes, "the reader's allocation is not on the heap");
  cr_assert_leq(opened - before, bytes + 4096,
                "opening took %zu bytes, the reader says %zu", opened - before, bytes);
  cr_assert_eq(peak, opened, "the heap grew by %zu bytes while reading",
               peak - opened);
  cr_assert_eq(after, opened);
  cr_assert_eq(closed, before, "%zu bytes not freed", closed - before);

  /* The loader, on the same stream, holds the records and nothing more
   * than an array of them. */
  cs_trace_t t;
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
  cr_assert_eq(t.n, n);
  for (uint64_t i = 1; i < t.n; i++)
    if (t.rec[i].seq <= t.rec[i - 1].seq)
      cr_assert_fail("unsorted at %llu", (unsigned long long)i);
  cs_trace_free(&t);
  cr_assert_eq(heap_in_use(), before);
}
