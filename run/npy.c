/*
 * npy.c - NumPy .npy files of shape (N, C) for the inputs and outputs of
 * `collsim run`: the header parser, the size checks and the atomic write.
 * Owns nothing after it returns: a read hands the caller one malloc'ed
 * buffer. Does not convert dtypes or know what the rows and columns mean
 * (the run command does). Called by the commands in cli/ and
 * tests/test_npy.c.
 *
 * The header is a Python dict literal. It is never evaluated: a small
 * hand-written scanner reads exactly the three keys NumPy writes, in any
 * order, with either quote, any whitespace and optional trailing commas,
 * and refuses everything else with a one-line reason. Every length comes
 * from the file and is checked against the file's real size before a byte
 * is allocated, so no header can make us allocate, read or loop past EOF.
 * The reader does not insist on 64-byte alignment or on the final '\n'
 * (older numpy aligned to 16); after the '}' only whitespace may follow.
 *
 * File layout (every integer little-endian):
 *
 *   offset          size          field
 *   0               6             magic "\x93NUMPY"
 *   6               1             major version: 1, 2 or 3
 *   7               1             minor version: 0
 *   8               2 (v1.0)      HLEN: header length in bytes, u16
 *                   4 (v2.0/3.0)        ... u32
 *   P = 10 | 12     HLEN          dict literal, ASCII (v3.0: UTF-8),
 *                                 padded with ' ', ending in '\n'
 *   P + HLEN        N*C*esize     data, row-major (C order), to EOF
 *
 *   A (2, 17) fp32 file as cs_npy_write makes it (HLEN 0x76 = 118):
 *
 *   0           6    7    8       10                           128        264
 *   +-----------+----+----+-------+----------------------------+----------+
 *   | \x93NUMPY | 01 | 00 | 76 00 | {'descr': '<f4',           | 34 x <f4 |
 *   |           |    |    |       | 'fortran_order': False,    |          |
 *   |           |    |    |       | 'shape': (2, 17), }  ...\n |          |
 *   +-----------+----+----+-------+----------------------------+----------+
 *
 * Written files are version 1.0, byte for byte what np.save (numpy 1.24)
 * writes: the dict with its keys sorted, then spaces and '\n' so that
 * magic..'\n' is a multiple of 64 bytes. (numpy also puts 21 - len(str(N))
 * spaces of room for N to grow before that padding; for a 2-D header of
 * these dtypes both ways come to the same 128 bytes, so we skip it.)
 */
#define _GNU_SOURCE
#include "npy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sim/trace.h"
#include "../window/cs_error.h"
#include "../window/fdio.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "npy.c copies little-endian file data as is: byte-swap it "
               "before building on a big-endian host");

#define NPY_MAGIC        "\x93NUMPY"
#define NPY_MAGIC_LEN    6
#define NPY_ALIGN        64        /* bytes; magic..'\n' is a multiple */
#define NPY_MAX_HEADER   (1u << 20) /* bytes; numpy itself refuses > 10000 */
#define NPY_DESCR_MAX    32        /* bytes kept of a descr or key string */
#define NPY_SHOW_MAX     48        /* bytes of header text quoted in a reason */

#define NPY_ACCEPTED \
  "expected '<f4' (fp32), '<f2' (fp16) or '<u2' (bf16 bits)"
#define NPY_EXPECTED_DICT \
  "expected {'descr': '<f4', 'fortran_order': False, 'shape': (N, C)}"

static const char *const descr_of[CS_NDTYPES] = {"<f4", "<f2", "<u2"};

/* Writes "PATH: reason" to why (one line: control bytes become '?').
 * Always returns -1 so callers can `return fail(...)`. */
__attribute__((format(printf, 4, 5)))
static int fail(char *why, size_t whylen, const char *path, const char *fmt,
                ...)
{
  if (why == NULL || whylen == 0)
    return -1;
  int n = snprintf(why, whylen, "%s: ", path ? path[0] ? path : "''" : "(null)");
  if (n >= 0 && (size_t)n < whylen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  for (char *p = why; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  return -1;
}

/* Copies n bytes of untrusted text into dst (cap bytes) as printable ASCII:
 * other bytes as \xNN, and "..." when cut short. */
static void show(char *dst, size_t cap, const char *s, size_t n)
{
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[5];
    int w = (c >= 0x20 && c < 0x7f) ? snprintf(tmp, sizeof tmp, "%c", c)
                                    : snprintf(tmp, sizeof tmp, "\\x%02x", c);
    if (off + (size_t)w + 4 > cap) {
      memcpy(dst + off, "...", 3);
      off += 3;
      break;
    }
    memcpy(dst + off, tmp, (size_t)w);
    off += (size_t)w;
  }
  dst[off] = 0;
}

static uint32_t le16(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t le32(const unsigned char *p)
{
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* ---- the header dict ---------------------------------------------------- */

typedef struct hdr {
  const char *base, *p, *end;      /* the header text and the cursor */
  char        descr[NPY_DESCR_MAX]; /* descr value, NUL-terminated */
  size_t      descr_len;           /* its full length in the file, bytes */
  int         have_descr, have_order, have_shape;
  int         fortran;             /* fortran_order: 1 True, 0 False */
  uint64_t    dim[2];              /* the first two dims of shape */
  size_t      ndim;                /* dims in shape */
  const char *shape_txt;           /* "(...)" as written, for reasons */
  size_t      shape_len;           /* bytes */
  char        err[256];            /* what the scanner stopped on */
} hdr_t;

static int perr(hdr_t *h, const char *what)
{
  char near[NPY_SHOW_MAX];
  size_t left = (size_t)(h->end - h->p);
  show(near, sizeof near, h->p, left < 16 ? left : 16);
  snprintf(h->err, sizeof h->err, "%s at header byte %zu (near '%s')", what,
           (size_t)(h->p - h->base), near);
  return -1;
}

static void skip_ws(hdr_t *h)
{
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' ||
                           *h->p == '\r' || *h->p == '\f' || *h->p == '\v'))
    h->p++;
}

static int hdr_is(const hdr_t *h, char c)
{
  return h->p < h->end && *h->p == c;
}

/* A '...' or "..." string without escapes; keeps cap-1 bytes, *len gets the
 * full length. */
static int scan_string(hdr_t *h, char *out, size_t cap, size_t *len)
{
  if (!hdr_is(h, '\'') && !hdr_is(h, '"'))
    return perr(h, "expected a quoted string");
  char q = *h->p++;
  const char *s = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\')
      return perr(h, "escape sequences in strings are not accepted");
    if (*h->p == '\n')
      return perr(h, "unterminated string");
    h->p++;
  }
  if (h->p == h->end)
    return perr(h, "unterminated string");
  *len = (size_t)(h->p - s);
  size_t keep = *len < cap - 1 ? *len : cap - 1;
  memcpy(out, s, keep);
  out[keep] = 0;
  h->p++;
  return 0;
}

/* A non-negative decimal integer, with the 'L' suffix of Python 2 headers. */
static int scan_uint(hdr_t *h, uint64_t *v)
{
  if (hdr_is(h, '-'))
    return perr(h, "shape has a negative dimension");
  if (!(h->p < h->end && *h->p >= '0' && *h->p <= '9'))
    return perr(h, "expected a non-negative integer in shape");
  uint64_t x = 0;
  while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
    unsigned d = (unsigned)(*h->p - '0');
    if (x > (UINT64_MAX - d) / 10)
      return perr(h, "shape dimension does not fit in 64 bits");
    x = x * 10 + d;
    h->p++;
  }
  if (hdr_is(h, 'L') || hdr_is(h, 'l'))
    h->p++;
  *v = x;
  return 0;
}

static int scan_bool(hdr_t *h, int *v)
{
  const char *s = h->p;
  while (h->p < h->end && ((*h->p >= 'A' && *h->p <= 'Z') ||
                           (*h->p >= 'a' && *h->p <= 'z') ||
                           (*h->p >= '0' && *h->p <= '9') || *h->p == '_'))
    h->p++;
  size_t n = (size_t)(h->p - s);
  if (n == 4 && memcmp(s, "True", 4) == 0)
    *v = 1;
  else if (n == 5 && memcmp(s, "False", 5) == 0)
    *v = 0;
  else {
    h->p = s;
    return perr(h, "fortran_order is not True or False");
  }
  return 0;
}

/* "(" [int ("," int)* [","]] ")" */
static int scan_shape(hdr_t *h)
{
  if (!hdr_is(h, '('))
    return perr(h, "shape is not a tuple");
  h->shape_txt = h->p++;
  h->ndim = 0;
  skip_ws(h);
  while (!hdr_is(h, ')')) {
    if (h->p == h->end)
      return perr(h, "shape has no closing ')'");
    uint64_t v;
    if (scan_uint(h, &v) < 0)
      return -1;
    if (h->ndim < 2)
      h->dim[h->ndim] = v;
    h->ndim++;
    skip_ws(h);
    if (hdr_is(h, ',')) {
      h->p++;
      skip_ws(h);
    } else if (!hdr_is(h, ')')) {
      return perr(h, h->p == h->end ? "shape has no closing ')'"
                                    : "expected ',' or ')' in shape");
    }
  }
  h->p++;
  h->shape_len = (size_t)(h->p - h->shape_txt);
  return 0;
}

static int scan_value(hdr_t *h, const char *key, size_t keylen)
{
  if (keylen == 5 && strcmp(key, "descr") == 0) {
    if (h->have_descr)
      return perr(h, "duplicate key 'descr'");
    h->have_descr = 1;
    if (hdr_is(h, '['))
      return perr(h, "descr is a list (a structured dtype), not '<f4', "
                     "'<f2' or '<u2'");
    return scan_string(h, h->descr, sizeof h->descr, &h->descr_len);
  }
  if (keylen == 13 && strcmp(key, "fortran_order") == 0) {
    if (h->have_order)
      return perr(h, "duplicate key 'fortran_order'");
    h->have_order = 1;
    return scan_bool(h, &h->fortran);
  }
  if (keylen == 5 && strcmp(key, "shape") == 0) {
    if (h->have_shape)
      return perr(h, "duplicate key 'shape'");
    h->have_shape = 1;
    return scan_shape(h);
  }
  char shown[NPY_SHOW_MAX];
  show(shown, sizeof shown, key, keylen < NPY_DESCR_MAX - 1 ? keylen
                                                           : NPY_DESCR_MAX - 1);
  char what[96];
  snprintf(what, sizeof what, "unknown key '%s'", shown);
  return perr(h, what);
}

/* Scans the whole header: the dict, then only whitespace to the end. */
static int scan_header(hdr_t *h)
{
  skip_ws(h);
  if (!hdr_is(h, '{'))
    return perr(h, "header does not start with '{'");
  h->p++;
  skip_ws(h);
  while (!hdr_is(h, '}')) {
    if (h->p == h->end)
      return perr(h, "dict has no closing '}'");
    char key[NPY_DESCR_MAX];
    size_t keylen;
    if (scan_string(h, key, sizeof key, &keylen) < 0)
      return -1;
    skip_ws(h);
    if (!hdr_is(h, ':'))
      return perr(h, "expected ':' after a key");
    h->p++;
    skip_ws(h);
    if (scan_value(h, key, keylen) < 0)
      return -1;
    skip_ws(h);
    if (hdr_is(h, ',')) {
      h->p++;
      skip_ws(h);
    } else if (!hdr_is(h, '}')) {
      return perr(h, h->p == h->end ? "dict has no closing '}'"
                                    : "expected ',' or '}' after a value");
    }
  }
  h->p++;
  skip_ws(h);
  if (h->p != h->end)
    return perr(h, "unexpected bytes after the dict's closing '}'");
  if (!h->have_descr)
    return perr(h, "dict has no 'descr' key");
  if (!h->have_order)
    return perr(h, "dict has no 'fortran_order' key");
  if (!h->have_shape)
    return perr(h, "dict has no 'shape' key");
  return 0;
}

/* The accepted dtype for a parsed header, or a reason. */
static int check_dict(const hdr_t *h, cs_dtype_t *t, char *why, size_t whylen,
                      const char *path)
{
  char d[NPY_SHOW_MAX];
  show(d, sizeof d, h->descr, h->descr_len < sizeof h->descr - 1
                                  ? h->descr_len : sizeof h->descr - 1);
  int found = -1;
  for (int i = 0; i < CS_NDTYPES; i++)
    if (h->descr_len == 3 && strcmp(h->descr, descr_of[i]) == 0)
      found = i;
  if (found < 0) {
    if (h->descr_len == 3 && (h->descr[0] == '>' || h->descr[0] == '!'))
      for (int i = 0; i < CS_NDTYPES; i++)
        if (strcmp(h->descr + 1, descr_of[i] + 1) == 0)
          return fail(why, whylen, path,
                      "dtype '%s' is big-endian: expected little-endian "
                      "'<f4' (fp32), '<f2' (fp16) or '<u2' (bf16 bits)", d);
    return fail(why, whylen, path, "dtype '%s' is not accepted: " NPY_ACCEPTED,
                d);
  }
  if (h->fortran)
    return fail(why, whylen, path,
                "fortran_order is True (column-major): expected False "
                "(C order; save np.ascontiguousarray(a))");
  char s[NPY_SHOW_MAX];
  show(s, sizeof s, h->shape_txt, h->shape_len);
  if (h->ndim != 2)
    return fail(why, whylen, path,
                "shape %s is %zu-D: expected 2-D (N, C) with N, C >= 1", s,
                h->ndim);
  if (h->dim[0] == 0 || h->dim[1] == 0)
    return fail(why, whylen, path,
                "shape %s has a zero dimension: expected (N, C) with N, C >= 1",
                s);
  *t = (cs_dtype_t)found;
  return 0;
}

/* ---- read --------------------------------------------------------------- */

/* Opens path for reading, refusing directories, FIFOs and other non-regular
 * files without blocking on them. Returns the fd (blocking again) and the
 * file's size, or -1 with a reason (nothing left open). */
static int open_regular(const char *path, uint64_t *fsize, char *why,
                        size_t whylen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* FIFOs: no hang */
  if (fd < 0)
    return fail(why, whylen, path, "cannot open: %s", strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0) {
    fail(why, whylen, path, "cannot stat: %s", strerror(errno));
    goto close_fd;
  }
  if (S_ISDIR(st.st_mode)) {
    fail(why, whylen, path, "is a directory: expected a .npy file");
    goto close_fd;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(why, whylen, path, "is not a regular file: expected a .npy file");
    goto close_fd;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *fsize = (uint64_t)st.st_size;
  return fd;
close_fd:
  close(fd);
  return -1;
}

/* Reads and checks the fixed prefix (magic, version, HLEN) of a file of
 * fsize bytes: *prefix gets its length (10 or 12 bytes) and *hlen the
 * header's, which is known to fit in the file. Returns 0 or -1 with a
 * reason. */
static int read_prefix(int fd, uint64_t fsize, size_t *prefix, uint32_t *hlen,
                       char *why, size_t whylen, const char *path)
{
  unsigned char pre[12];
  size_t want = fsize < sizeof pre ? (size_t)fsize : sizeof pre;
  ssize_t got = cs_pread_full(fd, pre, want, 0);
  if (got < 0)
    return fail(why, whylen, path, "cannot read: %s", strerror(errno));
  if (got == 0)
    return fail(why, whylen, path, "file is empty: expected a .npy file");
  size_t cmp = (size_t)got < NPY_MAGIC_LEN ? (size_t)got : NPY_MAGIC_LEN;
  if (memcmp(pre, NPY_MAGIC, cmp) != 0)
    return fail(why, whylen, path,
                "not a .npy file: does not start with the magic \\x93NUMPY");
  if ((size_t)got < NPY_MAGIC_LEN + 2)
    return fail(why, whylen, path, "file ends inside the header (%zd bytes)",
                got);
  unsigned major = pre[6], minor = pre[7];
  if (!(major >= 1 && major <= 3 && minor == 0))
    return fail(why, whylen, path,
                ".npy format version %u.%u is not supported: expected 1.0, "
                "2.0 or 3.0", major, minor);
  *prefix = major == 1 ? 10 : 12; /* magic, version, HLEN */
  if ((size_t)got < *prefix)
    return fail(why, whylen, path, "file ends inside the header (%zd bytes)",
                got);
  *hlen = major == 1 ? le16(pre + 8) : le32(pre + 8);
  uint64_t data_off = (uint64_t)*prefix + *hlen;
  if (data_off > fsize)
    return fail(why, whylen, path,
                "header length %u runs past the end of the file (%llu bytes)",
                *hlen, (unsigned long long)fsize);
  if (*hlen > NPY_MAX_HEADER)
    return fail(why, whylen, path,
                "header length %u is implausible (over %u bytes)", *hlen,
                NPY_MAX_HEADER);
  return 0;
}

/* Reads the hlen-byte header dict at offset prefix, parses and checks it:
 * the accepted dtype and the shape (rows, cols). Returns 0 or -1 with a
 * reason. */
static int read_dict(int fd, size_t prefix, uint32_t hlen, cs_dtype_t *t,
                     uint64_t *rows, uint64_t *cols, char *why, size_t whylen,
                     const char *path)
{
  int rc = -1;
  char *text = malloc(hlen ? hlen : 1);
  if (text == NULL)
    return fail(why, whylen, path, "out of memory for a %u-byte header",
                hlen);
  ssize_t got = cs_pread_full(fd, text, hlen, prefix);
  if (got != (ssize_t)hlen) {
    fail(why, whylen, path, "cannot read the header: %s",
         got < 0 ? strerror(errno) : "file shrank while reading");
    goto free_text;
  }
  hdr_t h;
  memset(&h, 0, sizeof h);
  h.base = h.p = text;
  h.end = text + hlen;
  if (scan_header(&h) < 0) {
    fail(why, whylen, path, "bad header: %s; " NPY_EXPECTED_DICT, h.err);
    goto free_text;
  }
  *t = CS_FP32;
  if (check_dict(&h, t, why, whylen, path) < 0)
    goto free_text;
  *rows = h.dim[0];
  *cols = h.dim[1];
  rc = 0;
free_text:
  free(text);
  return rc;
}

/* The data size of shape (rows, cols) of dtype t, which must be exactly the
 * avail bytes after the header. Returns 0 with *nbytes, or -1 with a
 * reason. */
static int check_data_size(cs_dtype_t t, uint64_t rows, uint64_t cols,
                           uint64_t avail, uint64_t *nbytes, char *why,
                           size_t whylen, const char *path)
{
  uint64_t count;
  if (__builtin_mul_overflow(rows, cols, &count) ||
      __builtin_mul_overflow(count, (uint64_t)cs_dtype_size(t), nbytes) ||
      *nbytes > (uint64_t)SIZE_MAX)
    return fail(why, whylen, path,
                "shape (%llu, %llu) of '%s' is too large: its size overflows "
                "64 bits", (unsigned long long)rows, (unsigned long long)cols,
                descr_of[t]);
  if (*nbytes != avail)
    return fail(why, whylen, path,
                "%s: shape (%llu, %llu) of '%s' needs %llu data bytes, the "
                "file has %llu after the header",
                *nbytes > avail ? "data is truncated"
                                : "trailing bytes after the data",
                (unsigned long long)rows, (unsigned long long)cols,
                descr_of[t], (unsigned long long)*nbytes,
                (unsigned long long)avail);
  return 0;
}

/* The nbytes of data at offset off, in a new malloc'ed buffer the caller
 * frees; NULL with a reason. */
static void *read_data(int fd, uint64_t nbytes, uint64_t off, char *why,
                       size_t whylen, const char *path)
{
  void *data = malloc((size_t)nbytes);
  if (data == NULL) {
    fail(why, whylen, path, "out of memory for %llu data bytes",
         (unsigned long long)nbytes);
    return NULL;
  }
  ssize_t got = cs_pread_full(fd, data, (size_t)nbytes, off);
  if (got != (ssize_t)nbytes) {
    fail(why, whylen, path, "cannot read the data: %s",
         got < 0 ? strerror(errno) : "file shrank while reading");
    free(data);
    return NULL;
  }
  return data;
}

int cs_npy_read(const char *path, cs_npy_t *a, char *why, size_t whylen)
{
  if (why && whylen)
    why[0] = 0;
  if (a)
    memset(a, 0, sizeof *a);
  if (path == NULL || a == NULL)
    return fail(why, whylen, path, "no %s given", a ? "path" : "array");

  uint64_t fsize = 0;
  int fd = open_regular(path, &fsize, why, whylen);
  if (fd < 0)
    return -1;
  int rc = -1;
  size_t prefix = 0;
  uint32_t hlen = 0;
  cs_dtype_t t = CS_FP32;
  uint64_t rows = 0, cols = 0, nbytes = 0;
  if (read_prefix(fd, fsize, &prefix, &hlen, why, whylen, path) < 0 ||
      read_dict(fd, prefix, hlen, &t, &rows, &cols, why, whylen, path) < 0)
    goto close_fd;
  uint64_t data_off = (uint64_t)prefix + hlen;
  if (check_data_size(t, rows, cols, fsize - data_off, &nbytes, why, whylen,
                      path) < 0)
    goto close_fd;
  void *data = read_data(fd, nbytes, data_off, why, whylen, path);
  if (data == NULL)
    goto close_fd;
  a->dtype = t;
  a->rows = rows;
  a->cols = cols;
  a->data = data;
  rc = 0;
close_fd:
  close(fd);
  return rc;
}

/* ---- write -------------------------------------------------------------- */

/* The process umask without changing it (umask(2) can only swap it, which
 * races with other threads); 022 when /proc is not there. */
static mode_t current_umask(void)
{
  mode_t m = 022;
  FILE *f = fopen("/proc/self/status", "re");
  if (f == NULL)
    return m;
  char line[128];
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Umask:", 6) == 0) {
      m = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
      break;
    }
  fclose(f);
  return m;
}

/* Checks the arguments of cs_npy_write; returns 0 with the data size in
 * *nbytes, or -1 with a reason. */
static int check_write_args(const char *path, cs_dtype_t t, uint64_t rows,
                            uint64_t cols, const void *data, uint64_t *nbytes,
                            char *why, size_t whylen)
{
  if (path == NULL || path[0] == 0)
    return fail(why, whylen, path, "no path given");
  if ((unsigned)t >= CS_NDTYPES)
    return fail(why, whylen, path,
                "dtype %d is not accepted: expected fp32, fp16 or bf16",
                (int)t);
  if (rows == 0 || cols == 0)
    return fail(why, whylen, path,
                "shape (%llu, %llu) has a zero dimension: expected (N, C) "
                "with N, C >= 1", (unsigned long long)rows,
                (unsigned long long)cols);
  uint64_t count;
  if (__builtin_mul_overflow(rows, cols, &count) ||
      __builtin_mul_overflow(count, (uint64_t)cs_dtype_size(t), nbytes) ||
      *nbytes > (uint64_t)SIZE_MAX)
    return fail(why, whylen, path,
                "shape (%llu, %llu) is too large: its size overflows 64 bits",
                (unsigned long long)rows, (unsigned long long)cols);
  if (data == NULL)
    return fail(why, whylen, path, "no data given");
  return 0;
}

/* The version 1.0 prefix and padded dict of a (rows, cols) array of dtype t
 * into head (cap >= 256: 10 + dict (<= 97) + pad (<= 64) + '\n' < 256);
 * returns its length, a multiple of NPY_ALIGN. */
static size_t format_header(char *head, size_t cap, cs_dtype_t t,
                            uint64_t rows, uint64_t cols)
{
  memcpy(head, NPY_MAGIC "\x01\x00", NPY_MAGIC_LEN + 2);
  size_t off = 10;
  off += (size_t)snprintf(head + off, cap - off,
                          "{'descr': '%s', 'fortran_order': False, "
                          "'shape': (%llu, %llu), }",
                          descr_of[t], (unsigned long long)rows,
                          (unsigned long long)cols);
  size_t pad = NPY_ALIGN - (off + 1) % NPY_ALIGN; /* 1..64, as numpy */
  memset(head + off, ' ', pad);
  off += pad;
  head[off++] = '\n';
  head[8] = (char)((off - 10) & 0xff);
  head[9] = (char)((off - 10) >> 8);
  return off;
}

/* Creates the temp file tmp (a mkstemp template), gives it the mode open(2)
 * would and writes head then data into it. Returns 0 with the file closed,
 * or -1 with a reason and the temp file removed. */
static int write_temp(char *tmp, const char *head, size_t hlen,
                      const void *data, size_t nbytes, char *why,
                      size_t whylen, const char *path)
{
  int fd = mkstemp(tmp);
  if (fd < 0)
    return fail(why, whylen, path, "cannot create a temp file beside it: %s",
                strerror(errno));
  /* mkstemp makes 0600; give the file what open(2) would have. */
  if (fchmod(fd, 0666 & ~current_umask()) < 0 ||
      cs_write_full(fd, head, hlen) < 0 || cs_write_full(fd, data, nbytes) < 0) {
    fail(why, whylen, path, "cannot write %s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    return -1;
  }
  if (close(fd) < 0) {
    fail(why, whylen, path, "cannot write %s: %s", tmp, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* The output rule (cs_output_check): a new name or a regular file of ours
 * with no other hard links; a device, FIFO, another user's file or link is
 * refused, never replaced. Returns 0 or -1 with a reason. */
static int refuse_not_ours(const char *path, int err, char *why, size_t whylen)
{
  if (err == 0)
    return 0;
  return fail(why, whylen, path, "%s: expected a new name or a regular file "
              "of yours with no other hard links", cs_strerror(err));
}

/* Writes head and data to PATH.tmpXXXXXX and renames it over path, with
 * the terminating signals held meanwhile. Returns 0, or -1 with a reason,
 * path unchanged and no temp file left. */
static int write_atomic(const char *path, const char *head, size_t hlen,
                        const void *data, size_t nbytes, char *why,
                        size_t whylen)
{
  int rc = -1;
  size_t plen = strlen(path);
  /* A directory is left to rename, which cannot replace it. */
  int err = cs_output_check(path, NULL, NULL);
  if (refuse_not_ours(path, err == -EISDIR ? 0 : err, why, whylen) < 0)
    return -1;
  char *tmp = malloc(plen + sizeof ".tmpXXXXXX");
  if (tmp == NULL)
    return fail(why, whylen, path, "out of memory");
  /* Ctrl-C while the temp file exists would leave it behind: hold the
   * terminating signals until it is renamed or removed. */
  sigset_t stops, old_mask;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGHUP);
  sigprocmask(SIG_BLOCK, &stops, &old_mask);
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmpXXXXXX", sizeof ".tmpXXXXXX");
  if (write_temp(tmp, head, hlen, data, nbytes, why, whylen, path) < 0)
    goto free_tmp;
  /* Checked again as it is replaced; an old file keeps its mode and
   * owner. */
  err = cs_output_replace(tmp, path);
  if (err < 0) {
    if (err == CS_ENOTREG || err == CS_ESYMLINK || err == CS_ENOTOURS ||
        err == CS_EHARDLINK)
      refuse_not_ours(path, err, why, whylen);
    else
      fail(why, whylen, path, "cannot rename %s over it: %s", tmp,
           cs_strerror(err));
    unlink(tmp);
    goto free_tmp;
  }
  rc = 0;
free_tmp:
  free(tmp);
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  return rc;
}

int cs_npy_write(const char *path, cs_dtype_t t, uint64_t rows, uint64_t cols,
                 const void *data, char *why, size_t whylen)
{
  if (why && whylen)
    why[0] = 0;
  uint64_t nbytes = 0;
  if (check_write_args(path, t, rows, cols, data, &nbytes, why, whylen) < 0)
    return -1;
  char head[256];
  size_t hlen = format_header(head, sizeof head, t, rows, cols);
  return write_atomic(path, head, hlen, data, (size_t)nbytes, why, whylen);
}
