/*
 * test_format.c - traces/FORMAT.md against the field maps of
 * sim/trace/format.h: every row of the document's header, slot-table,
 * slot-entry and record tables names a field of the map at the same
 * offset with the same type, every field of the map has its row, the
 * kinds table names the kinds the code names, and the headings state the
 * code's version and sizes. The checker is also run on doctored copies of
 * the document, to show it catches a moved offset, a changed type, a
 * renamed or missing row. Reads the document from the source tree
 * (COLLSIM_SOURCE_DIR, set by CMakeLists.txt); runs nothing.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/trace.h"
#include "../sim/trace/sha256.h"

#include <fcntl.h>
#include <unistd.h>

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif
#define FORMAT_MD COLLSIM_SOURCE_DIR "/traces/FORMAT.md"

/* ------------------------------------------------------------ the maps */

typedef struct field {
  unsigned    off;   /* bytes */
  size_t      width; /* bytes, from the C declaration */
  const char *type;  /* as the document writes it */
  const char *name;
} field_t;

typedef struct map {
  const char    *what;
  const field_t *f;
  size_t         n;
  int           *seen; /* rows found in the document, per field */
  int            elided; /* 1: the document may leave rows out ("...") */
} map_t;

#define HEADER_ROW(off, ctype, name, dim, type, meaning) \
  {off, sizeof(ctype dim), type, #name},
#define LAYOUT_ROW(off, member, type) \
  {off, sizeof(((cs_trace_header_t *)0)->layout.member), type, #member},
#define SLOT_ROW(off, member, type) \
  {off, sizeof(((cs_slot_t *)0)->member), type, #member},

static const field_t header_map[] = {CS_TRACE_HEADER_FIELDS(HEADER_ROW)};
static const field_t rec_map[] = {CS_TRACE_REC_FIELDS(HEADER_ROW)};
static const field_t layout_map[] = {CS_TRACE_LAYOUT_FIELDS(LAYOUT_ROW)};
static const field_t slot_map[] = {CS_TRACE_SLOT_FIELDS(SLOT_ROW)};

#define NF(a) (sizeof(a) / sizeof((a)[0]))

/* Bytes a type in the document's notation takes: u8 u16 u32 u64 i32 f64,
 * char, T[N], "N B"; 0 if it is none of these. */
static size_t type_width(const char *t)
{
  static const struct { const char *name; size_t w; } base[] = {
      {"u8", 1}, {"u16", 2}, {"u32", 4}, {"u64", 8}, {"i8", 1},
      {"i16", 2}, {"i32", 4}, {"i64", 8}, {"f64", 8}, {"char", 1}};
  unsigned n;
  char tail;
  if (sscanf(t, "%u B%c", &n, &tail) == 1 && strstr(t, " B"))
    return n;
  size_t len = strcspn(t, "[");
  size_t mult = 1;
  if (t[len]) {
    int k = 0;
    if (sscanf(t + len, "[%u]%n", &n, &k) != 1 || k == 0 || t[len + (size_t)k])
      return 0;
    mult = n;
  }
  for (size_t i = 0; i < NF(base); i++)
    if (strlen(base[i].name) == len && strncmp(t, base[i].name, len) == 0)
      return base[i].w * mult;
  return 0;
}

/* ------------------------------------------------------------ the checker */

typedef struct report {
  int  problems;
  char first[512]; /* the first problem, for the assertion message */
} report_t;

static void problem(report_t *r, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void problem(report_t *r, int line, const char *fmt, ...)
{
  if (r->problems++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    int k = snprintf(r->first, sizeof(r->first), "FORMAT.md line %d: ", line);
    vsnprintf(r->first + k, sizeof(r->first) - (size_t)k, fmt, ap);
    va_end(ap);
  }
}

/* One document row against the map: the field of that name, at that
 * offset, of that type. */
static void check_row(report_t *r, map_t *m, int line, unsigned off,
                      const char *type, const char *name)
{
  for (size_t i = 0; i < m->n; i++) {
    const field_t *f = &m->f[i];
    if (strcmp(f->name, name) != 0)
      continue;
    m->seen[i]++;
    if (f->off != off)
      problem(r, line, "%s field %s at offset %u, format.h says %u", m->what,
              name, off, f->off);
    if (strcmp(f->type, type) != 0)
      problem(r, line, "%s field %s is %s, format.h says %s", m->what, name,
              type, f->type);
    return;
  }
  problem(r, line, "%s has no field %s (offset %u)", m->what, name, off);
}

/* After the document: every field of the map has exactly one row (one at
 * most where rows may be elided). */
static void check_seen(report_t *r, const map_t *m)
{
  for (size_t i = 0; i < m->n; i++)
    if (m->seen[i] > 1 || (m->seen[i] == 0 && !m->elided))
      problem(r, 0, "%s field %s (offset %u) has %d rows", m->what,
              m->f[i].name, m->f[i].off, m->seen[i]);
}

/* The map itself: each type's width is the C declaration's, and the
 * fields tile the struct in order. */
static void check_map(report_t *r, const map_t *m, size_t base, size_t size)
{
  size_t at = base;
  for (size_t i = 0; i < m->n; i++) {
    const field_t *f = &m->f[i];
    if (type_width(f->type) != f->width)
      problem(r, 0, "format.h: %s field %s is %zu bytes, its type %s is %zu",
              m->what, f->name, f->width, f->type, type_width(f->type));
    if (f->off != at)
      problem(r, 0, "format.h: %s field %s at %u, the one before ends at %zu",
              m->what, f->name, f->off, at);
    at = f->off + f->width;
  }
  if (at != base + size)
    problem(r, 0, "format.h: %s ends at %zu, not %zu", m->what, at, base + size);
}

static int digits(const char *s)
{
  if (*s == '+')
    s++;
  if (!*s)
    return 0;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return 0;
  return 1;
}

/* A code-block row "OFFSET TYPE NAME ..." (TYPE may be "N B"). Returns 1
 * with its pieces, 0 for any other line. */
static int code_row(char *line, char **off, char *type, size_t typelen,
                    char **name)
{
  char *save = NULL;
  char *a = strtok_r(line, " \t", &save);
  char *b = a ? strtok_r(NULL, " \t", &save) : NULL;
  char *c = b ? strtok_r(NULL, " \t", &save) : NULL;
  if (!c || !digits(a))
    return 0;
  if (digits(b) && strcmp(c, "B") == 0) {
    snprintf(type, typelen, "%s B", b);
    c = strtok_r(NULL, " \t", &save);
    if (!c)
      return 0;
  } else {
    snprintf(type, typelen, "%s", b);
  }
  *off = a;
  *name = c;
  return 1;
}

/* A markdown table row "| OFFSET | `NAME` TYPE | ..." or, for kinds,
 * "| ID | `NAME` | ...". Returns 1 with its pieces. */
static int md_row(const char *line, unsigned *num, char *name, size_t namelen,
                  char *type, size_t typelen)
{
  unsigned v;
  int k = 0;
  if (sscanf(line, "| %u | `%n", &v, &k) != 1 || k == 0)
    return 0;
  const char *p = line + k, *q = strchr(p, '`');
  if (!q || (size_t)(q - p) >= namelen)
    return 0;
  snprintf(name, namelen, "%.*s", (int)(q - p), p);
  q++;
  while (*q == ' ')
    q++;
  size_t tl = strcspn(q, " |");
  snprintf(type, typelen, "%.*s", (int)tl, q);
  *num = v;
  return 1;
}

enum { SEC_NONE, SEC_HEADER, SEC_RECORD, SEC_KINDS };

/* A heading: which table section starts, and its stated sizes. */
static int heading(report_t *r, int line, const char *s, int *blocks)
{
  unsigned a, b;
  *blocks = 0;
  if (strncmp(s, "# collsim trace format, version ", 32) == 0) {
    if (sscanf(s + 32, "%u", &a) != 1 || a != CS_TRACE_VERSION)
      problem(r, line, "title names another version than %u", CS_TRACE_VERSION);
    return SEC_NONE;
  }
  if (strncmp(s, "## Header", 9) == 0) {
    if (sscanf(s, "## Header (%u bytes, then %u zero bytes)", &a, &b) != 2 ||
        a != CS_TRACE_HEADER_STRUCT || a + b != CS_TRACE_HEADER_BYTES)
      problem(r, line, "header heading does not say %u bytes, then %u zero "
              "bytes", CS_TRACE_HEADER_STRUCT,
              CS_TRACE_HEADER_BYTES - CS_TRACE_HEADER_STRUCT);
    return SEC_HEADER;
  }
  if (strncmp(s, "## Record", 9) == 0) {
    if (sscanf(s, "## Record (%u bytes)", &a) != 1 || a != CS_TRACE_RECORD_BYTES)
      problem(r, line, "record heading does not say %u bytes",
              CS_TRACE_RECORD_BYTES);
    return SEC_RECORD;
  }
  if (strncmp(s, "### Kinds", 9) == 0)
    return SEC_KINDS;
  return SEC_NONE;
}

/* Checks the document text against the maps. Returns the problems found
 * (0: they agree); the first is described in r->first. */
static int check_doc(const char *text, report_t *r)
{
  int seen[4][64] = {{0}};
  int kinds[CS_TR_NKINDS] = {0};
  map_t header = {"header", header_map, NF(header_map), seen[0], 0};
  map_t layout = {"slot table", layout_map, NF(layout_map), seen[1], 1};
  map_t slot = {"slot entry", slot_map, NF(slot_map), seen[2], 0};
  map_t rec = {"record", rec_map, NF(rec_map), seen[3], 0};
  memset(r, 0, sizeof(*r));
  check_map(r, &header, 0, sizeof(cs_trace_header_t));
  check_map(r, &layout, offsetof(cs_trace_header_t, layout.nslots),
            sizeof(cs_layout_t));
  check_map(r, &slot, 0, sizeof(cs_slot_t));
  check_map(r, &rec, 0, sizeof(cs_trace_rec_t));

  char *copy = strdup(text);
  cr_assert_not_null(copy);
  int sec = SEC_NONE, in_code = 0, blocks = 0, lineno = 0, rows = 0;
  for (char *s = copy, *nl; s; s = nl) {
    nl = strchr(s, '\n');
    if (nl)
      *nl++ = 0;
    lineno++;
    if (strncmp(s, "```", 3) == 0) {
      in_code = !in_code;
      blocks += !in_code;
      continue;
    }
    if (!in_code && s[0] == '#') {
      sec = heading(r, lineno, s, &blocks);
      continue;
    }
    char type[32], name[64], *off, *nm;
    unsigned num;
    if (sec == SEC_HEADER && in_code && blocks <= 1) {
      char buf[512];
      snprintf(buf, sizeof(buf), "%s", s);
      if (!code_row(buf, &off, type, sizeof(type), &nm))
        continue;
      map_t *m = blocks == 0 ? &header : off[0] == '+' ? &slot : &layout;
      check_row(r, m, lineno, (unsigned)strtoul(off, NULL, 10), type, nm);
      rows++;
    } else if (sec == SEC_RECORD && !in_code &&
               md_row(s, &num, name, sizeof(name), type, sizeof(type))) {
      check_row(r, &rec, lineno, num, type, name);
      rows++;
    } else if (sec == SEC_KINDS && !in_code &&
               md_row(s, &num, name, sizeof(name), type, sizeof(type))) {
      if (num == 0 || num >= CS_TR_NKINDS)
        problem(r, lineno, "kind %u is not a kind (1..%d)", num, CS_TR_NKINDS - 1);
      else if (kinds[num]++)
        problem(r, lineno, "kind %u has two rows", num);
      else if (strcmp(name, cs_trace_kind_name(num)) != 0)
        problem(r, lineno, "kind %u is %s in the document, %s in the code",
                num, name, cs_trace_kind_name(num));
    }
  }
  free(copy);
  check_seen(r, &header);
  check_seen(r, &layout);
  check_seen(r, &slot);
  check_seen(r, &rec);
  for (unsigned k = 1; k < CS_TR_NKINDS; k++)
    if (!kinds[k])
      problem(r, 0, "kind %u (%s) has no row", k, cs_trace_kind_name(k));
  if (rows < (int)(NF(header_map) + NF(rec_map)))
    problem(r, 0, "only %d field rows found", rows);
  return r->problems;
}

/* ------------------------------------------------------------ tests */

static char *read_doc(void)
{
  FILE *f = fopen(FORMAT_MD, "rb");
  cr_assert_not_null(f, "cannot open %s", FORMAT_MD);
  static char buf[1 << 17];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  cr_assert(feof(f), "%s is larger than the test's buffer", FORMAT_MD);
  fclose(f);
  buf[n] = 0;
  return buf;
}

Test(format, doc_tables_match_the_field_maps)
{
  report_t r;
  int n = check_doc(read_doc(), &r);
  cr_assert_eq(n, 0, "%d disagreements; the first: %s", n, r.first);
}

/* Replaces the first occurrence of `from` in doc by `to`, checks the
 * result and expects a problem mentioning `needle`. */
static void expect_caught(const char *doc, const char *from, const char *to,
                          const char *needle)
{
  const char *at = strstr(doc, from);
  cr_assert_not_null(at, "'%s' is not in FORMAT.md", from);
  size_t n = strlen(doc) + strlen(to) + 1;
  char *bad = malloc(n);
  cr_assert_not_null(bad);
  snprintf(bad, n, "%.*s%s%s", (int)(at - doc), doc, to, at + strlen(from));
  report_t r;
  int k = check_doc(bad, &r);
  cr_assert_gt(k, 0, "'%s' -> '%s' not caught", from, to);
  cr_assert(strstr(r.first, needle), "'%s' -> '%s': %s", from, to, r.first);
  free(bad);
}

Test(format, checker_catches_a_doctored_doc)
{
  const char *doc = read_doc();
  expect_caught(doc, "    88  f64   tick_ns", "    90  f64   tick_ns",
                "tick_ns at offset 90");
  expect_caught(doc, "    88  f64   tick_ns", "    88  u64   tick_ns",
                "tick_ns is u64");
  expect_caught(doc, "    88  f64   tick_ns", "    88  f64   reserved0",
                "no field reserved0");
  expect_caught(doc, "   608  u64   fault_event", "   608  u64   fault_evt",
                "no field fault_evt");
  expect_caught(doc, "   600  u32   fault_rank     its rank\n", "",
                "fault_rank (offset 600) has 0 rows");
  expect_caught(doc, "   184  u64   win_bytes", "   188  u64   win_bytes",
                "win_bytes at offset 188");
  expect_caught(doc, "   +40  u32   esize", "   +40  u16   esize", "esize is u16");
  expect_caught(doc, "| 66 | `opcmp` u8 |", "| 65 | `opcmp` u8 |",
                "opcmp at offset 65");
  expect_caught(doc, "| 76 | `checksum` u32 |", "| 76 | `checksum` u16 |",
                "checksum is u16");
  expect_caught(doc, "| 24 | `dma_id` u64 |", "| 24 | `dma` u64 |", "no field dma");
  expect_caught(doc, "| 12 | `fault` |", "| 12 | `crash` |", "kind 12");
  expect_caught(doc, "## Record (80 bytes)", "## Record (96 bytes)",
                "80 bytes");
  expect_caught(doc, "version 4\n", "version 5\n", "another version");
  expect_caught(doc, "   880  u32   valid_rows", "   880  u32   valid_r",
                "no field valid_r");
  expect_caught(doc, "  1020  u8[4]   reserved", "  1016  u8[4]   reserved",
                "reserved at offset 1016");
  expect_caught(doc, "   932  char[88] names", "   932  u8[88]  names",
                "names is u8[88]");
  expect_caught(doc, "   888  u8[32]  algo_sha256", "   888  u8[16]  algo_sha256",
                "algo_sha256 is u8[16]");
}

/* The §3.3 fields came out of the reserved bytes: a zero header (every
 * older trace) has no shape. And a 2-D record (cell = rows, value =
 * stride) ends with its last row; a 1-D one, or a notify whose cell is
 * a signal cell, is not 2-D. */
Test(format, shape_fields_and_two_d_records)
{
  cs_trace_header_t h;
  memset(&h, 0, sizeof(h));
  cr_assert_eq(h.shape_rows | h.shape_cols | h.valid_rows | h.valid_cols, 0u);
  cr_assert_eq(offsetof(cs_trace_header_t, shape_rows), 872u);
  cr_assert_eq(offsetof(cs_trace_header_t, algo_sha256), 888u);
  cr_assert_eq(offsetof(cs_trace_header_t, end_state), 928u);
  cr_assert_eq(offsetof(cs_trace_header_t, names), 932u);
  cr_assert_eq(offsetof(cs_trace_header_t, reserved), 1020u);
  cs_trace_rec_t x = {.kind = 1, .elem_off = 8, .valid = 15, .phys = 15,
                      .cell = 3, .value = 8};
  cr_assert(cs_trace_rec_is_2d(&x));
  cr_assert_eq(cs_trace_rec_end(&x), 8u + 2 * 8 + 5); /* rows 8, 16, 24 */
  x.kind = 2;
  cr_assert(cs_trace_rec_is_2d(&x));
  x.kind = CS_TR_DMA_LAND;
  x.round = 2;
  cr_assert(cs_trace_rec_is_2d(&x));
  cr_assert_eq(cs_trace_rec_end(&x), 29u);
  x.round = 4; /* a landed notify: cell is its signal cell */
  cr_assert_not(cs_trace_rec_is_2d(&x));
  cs_trace_rec_t n = {.kind = 4, .cell = 3, .value = 1};
  cr_assert_not(cs_trace_rec_is_2d(&n));
  cs_trace_rec_t one = {.kind = 1, .elem_off = 8, .valid = 5, .phys = 16};
  cr_assert_not(cs_trace_rec_is_2d(&one));
  cr_assert_eq(cs_trace_rec_end(&one), 24u);
}

Test(format, doc_types_have_the_widths_of_the_c_declarations)
{
  cr_assert_eq(type_width("u8[8]"), 8);
  cr_assert_eq(type_width("char[64]"), 64);
  cr_assert_eq(type_width("f64"), 8);
  cr_assert_eq(type_width("48 B"), 48);
  cr_assert_eq(type_width("u8[400]"), 400);
  cr_assert_eq(type_width("u33"), 0);
  cr_assert_eq(type_width("u8[4"), 0);
  cr_assert_eq(type_width("u8[4]x"), 0);
  report_t r;
  memset(&r, 0, sizeof(r));
  map_t m = {"header", header_map, NF(header_map), NULL, 0};
  check_map(&r, &m, 0, sizeof(cs_trace_header_t));
  cr_assert_eq(r.problems, 0, "%s", r.first);
  field_t moved[NF(rec_map)];
  memcpy(moved, rec_map, sizeof(moved));
  moved[3].off += 4;
  map_t bad = {"record", moved, NF(moved), NULL, 0};
  check_map(&r, &bad, 0, sizeof(cs_trace_rec_t));
  cr_assert_gt(r.problems, 0, "a gap in a map is not caught");
}

/* The SHA-256 a trace records of a collective's shared object, held to
 * the system's sha256sum (coreutils, an independent implementation) over
 * the lengths where the padding changes shape (55, 56, 63, 64, 119, 120
 * bytes), longer ones, whole and fed in uneven pieces, and read from the
 * file. */
Test(format, sha256_agrees_with_sha256sum, .timeout = 60)
{
  static const size_t lens[] = {0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120,
                                121, 128, 1000, 16383, 16384, 16385, 100003};
  static uint8_t buf[100003];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof(buf); i++) {
    x = x * 1103515245u + 12345u;
    buf[i] = (uint8_t)(x >> 16);
  }
  char path[] = "/tmp/collsim-sha-XXXXXX";
  for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
    size_t n = lens[k];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, buf, n), (ssize_t)n);
    char cmd[128], want[80] = "";
    snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    cr_assert_not_null(fgets(want, sizeof(want), p));
    cr_assert_eq(pclose(p), 0);
    want[64] = 0;
    uint8_t h[CS_SHA256_BYTES];
    char hex[65];
    cs_sha256(buf, n, h);
    cs_sha256_hex(h, hex);
    cr_assert_str_eq(hex, want, "%zu bytes", n);
    cs_sha256_t s; /* in pieces of 1, 2, 3, ... bytes */
    cs_sha256_init(&s);
    for (size_t at = 0, step = 1; at < n; at += step, step = step % 97 + 1)
      cs_sha256_more(&s, buf + at, at + step <= n ? step : n - at);
    cs_sha256_done(&s, h);
    cs_sha256_hex(h, hex);
    cr_assert_str_eq(hex, want, "%zu bytes in pieces", n);
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    cr_assert_eq(cs_sha256_fd(fd, h), 0);
    cs_sha256_hex(h, hex);
    cr_assert_str_eq(hex, want, "%zu bytes from the file", n);
    close(fd);
    unlink(path);
    strcpy(path, "/tmp/collsim-sha-XXXXXX");
  }
}
