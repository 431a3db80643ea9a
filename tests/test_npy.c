/*
 * test_npy.c - run/npy.c as a file format: round trips of every dtype,
 * headers spelled out byte by byte as numpy 1.24's np.save writes them (so
 * the expected bytes do not come from our writer), every malformed file
 * refused with a one-line reason, and a seeded fuzz of corrupted files.
 * Each test works in its own mkdtemp directory, removed by the fixture.
 * Needs no numpy.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../run/npy.h"

/* ---- fixtures ------------------------------------------------------------ */

static char dir[] = "/tmp/collsim-npy-XXXXXX";

static int rm_one(const char *p, const struct stat *st, int flag,
                  struct FTW *ftw)
{
  (void)st, (void)flag, (void)ftw;
  return remove(p);
}

static void setup(void)
{
  cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void teardown(void)
{
  nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(npy, .init = setup, .fini = teardown, .timeout = 60);

/* dir/name, in one of 32 rotating buffers (a test holds at most 32). */
static const char *tpath(const char *name)
{
  static char buf[32][512];
  static int i;
  char *p = buf[i++ % 32];
  snprintf(p, 512, "%s/%s", dir, name);
  return p;
}

static const char *put_file(const char *name, const void *bytes, size_t n)
{
  const char *p = tpath(name);
  FILE *f = fopen(p, "wb");
  cr_assert_not_null(f, "fopen %s: %s", p, strerror(errno));
  cr_assert_eq(fwrite(bytes, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
  return p;
}

/* Magic, version major.0, the header length (u16 LE for 1, u32 LE else),
 * `dict` verbatim (the caller spells its padding and '\n'), then n data
 * bytes. */
static const char *put_npy_len(const char *name, int major, const char *dict,
                               size_t hlen, const void *data, size_t n)
{
  size_t pre = major == 1 ? 10 : 12;
  unsigned char *b = malloc(pre + hlen + n + 1);
  cr_assert_not_null(b);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    b[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(b + pre, dict, hlen);
  if (n)
    memcpy(b + pre + hlen, data, n);
  const char *p = put_file(name, b, pre + hlen + n);
  free(b);
  return p;
}

static const char *put_npy(const char *name, int major, const char *dict,
                           const void *data, size_t n)
{
  return put_npy_len(name, major, dict, strlen(dict), data, n);
}

static unsigned char *slurp(const char *p, size_t *n)
{
  FILE *f = fopen(p, "rb");
  cr_assert_not_null(f, "fopen %s: %s", p, strerror(errno));
  unsigned char *b = malloc(1 << 20);
  cr_assert_not_null(b);
  *n = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}

static int count_entries(void)
{
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

/* Reads p, expecting a refusal whose reason names the file, mentions
 * `needle`, is one line, and leaves the array empty. */
static void expect_refused(const char *p, const char *needle)
{
  cs_npy_t a;
  memset(&a, 0xa5, sizeof a);
  char why[512];
  int rc = cs_npy_read(p, &a, why, sizeof why);
  if (rc == 0)
    free(a.data);
  cr_assert_eq(rc, -1, "%s was accepted; expected a reason with \"%s\"", p,
               needle);
  cr_assert_null(a.data);
  cr_assert_eq(a.rows, 0);
  cr_assert_eq(a.cols, 0);
  cr_assert(strncmp(why, p, strlen(p)) == 0, "reason does not name %s: %s",
            p, why);
  cr_assert_not_null(strstr(why, needle), "reason lacks \"%s\": %s", needle,
                     why);
  for (const char *c = why; *c; c++)
    cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f,
              "control byte 0x%02x in reason: %s", (unsigned char)*c, why);
}

/* ---- what numpy 1.24 writes, spelled out ---------------------------------- */

#define SP10 "          "

/* np.save('x.npy', (np.arange(6, dtype='<f4') * 0.5).reshape(2, 3)):
 * a 59-byte dict, 58 spaces and '\n' make HLEN 118 = 'v'; 128 in all. */
static const char V1_F4_2x3[] =
  "\x93NUMPY\x01\x00" "v\x00"
  "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
  SP10 SP10 SP10 SP10 SP10 "        " "\n";

/* The same array by numpy.lib.format.write_array(version=(2, 0)): the
 * length takes 4 bytes, so 56 spaces and HLEN 116 = 't'. */
static const char V2_F4_2x3[] =
  "\x93NUMPY\x02\x00" "t\x00\x00\x00"
  "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
  SP10 SP10 SP10 SP10 SP10 "      " "\n";

/* 0, 0.5, 1, 1.5, 2, 2.5 as little-endian binary32. */
static const char F4_2x3_DATA[] =
  "\x00\x00\x00\x00" "\x00\x00\x00\x3f" "\x00\x00\x80\x3f"
  "\x00\x00\xc0\x3f" "\x00\x00\x00\x40" "\x00\x00\x20\x40";
static const float F4_2x3_VALUES[6] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f};

/* np.save('x.npy', (np.arange(15, dtype=np.float16) / 4).reshape(3, 5)) */
static const char V1_F2_3x5[] =
  "\x93NUMPY\x01\x00" "v\x00"
  "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 5), }"
  SP10 SP10 SP10 SP10 SP10 "        " "\n";
static const char F2_3x5_DATA[] =
  "\x00\x00" "\x00\x34" "\x00\x38" "\x00\x3a" "\x00\x3c"
  "\x00\x3d" "\x00\x3e" "\x00\x3f" "\x00\x40" "\x80\x40"
  "\x00\x41" "\x80\x41" "\x00\x42" "\x80\x42" "\x00\x43";
static const uint16_t F2_3x5_BITS[15] = {
  0x0000, 0x3400, 0x3800, 0x3a00, 0x3c00, 0x3d00, 0x3e00, 0x3f00,
  0x4000, 0x4080, 0x4100, 0x4180, 0x4200, 0x4280, 0x4300};

/* A valid v1.0 file with `dict` (unpadded) and the 2x3 fp32 data. */
static const char *put_dict(const char *name, const char *dict)
{
  return put_npy(name, 1, dict, F4_2x3_DATA, sizeof F4_2x3_DATA - 1);
}

/* ---- round trips ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng(void) /* splitmix64 */
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void round_trip(cs_dtype_t t, uint64_t rows, uint64_t cols)
{
  size_t nbytes = (size_t)(rows * cols * cs_dtype_size(t));
  unsigned char *in = malloc(nbytes);
  cr_assert_not_null(in);
  rng_state = 42 + (uint64_t)t;
  for (size_t i = 0; i < nbytes; i++) /* every bit pattern: NaNs, -0, inf */
    in[i] = (unsigned char)rng();
  const char *p = tpath("rt.npy");
  char why[512] = "";
  cr_assert_eq(cs_npy_write(p, t, rows, cols, in, why, sizeof why), 0, "%s",
               why);
  cs_npy_t a;
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
  cr_assert_eq(a.dtype, t);
  cr_assert_eq(a.rows, rows);
  cr_assert_eq(a.cols, cols);
  cr_assert_not_null(a.data);
  cr_assert(memcmp(a.data, in, nbytes) == 0, "data differs after the trip");
  free(a.data);

  size_t n;
  unsigned char *b = slurp(p, &n);
  size_t data_off = 10 + (size_t)(b[8] | b[9] << 8);
  cr_assert_eq(n, data_off + nbytes);
  cr_assert_eq(data_off % 64, 0, "header of %zu bytes", data_off);
  cr_assert_eq(b[data_off - 1], '\n');
  free(b);
  free(in);
}

Test(npy, round_trips_fp32)
{
  round_trip(CS_FP32, 3, 17);
}

Test(npy, round_trips_fp16)
{
  round_trip(CS_FP16, 7, 5);
}

Test(npy, round_trips_bf16_bits)
{
  round_trip(CS_BF16, 1, 4097);
}

Test(npy, writes_the_bytes_np_save_writes)
{
  const char *p = tpath("w.npy");
  char why[512] = "";
  cr_assert_eq(sizeof V1_F4_2x3 - 1, 128);
  cr_assert_eq(cs_npy_write(p, CS_FP32, 2, 3, F4_2x3_VALUES, why, sizeof why),
               0, "%s", why);
  size_t n;
  unsigned char *b = slurp(p, &n);
  cr_assert_eq(n, 128 + 24);
  cr_assert(memcmp(b, V1_F4_2x3, 128) == 0, "header differs: %.128s", b);
  cr_assert(memcmp(b + 128, F4_2x3_DATA, 24) == 0);
  free(b);

  cr_assert_eq(cs_npy_write(p, CS_FP16, 3, 5, F2_3x5_BITS, why, sizeof why),
               0, "%s", why);
  b = slurp(p, &n);
  cr_assert_eq(n, 128 + 30);
  cr_assert(memcmp(b, V1_F2_3x5, 128) == 0, "header differs: %.128s", b);
  cr_assert(memcmp(b + 128, F2_3x5_DATA, 30) == 0);
  free(b);
}

Test(npy, writes_headers_aligned_to_64_for_every_width)
{
  static const uint64_t dims[] = {1, 9, 10, 99, 100, 999, 1000, 9999, 10000,
                                  65537};
  float *zero = calloc(65537, sizeof *zero);
  cr_assert_not_null(zero);
  const char *p = tpath("w.npy");
  char why[512] = "";
  for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
    for (int flip = 0; flip < 2; flip++) {
      uint64_t rows = flip ? dims[i] : 1, cols = flip ? 1 : dims[i];
      cr_assert_eq(cs_npy_write(p, CS_FP32, rows, cols, zero, why, sizeof why),
                   0, "%s", why);
      size_t n;
      unsigned char *b = slurp(p, &n);
      size_t data_off = 10 + (size_t)(b[8] | b[9] << 8);
      /* numpy's header for any 2-D shape of these dtypes is 128 bytes */
      cr_assert_eq(data_off, 128, "(%llu, %llu): header of %zu bytes",
                   (unsigned long long)rows, (unsigned long long)cols,
                   data_off);
      cr_assert_eq(n, data_off + rows * cols * 4);
      cr_assert_eq(b[data_off - 1], '\n');
      char want[80];
      snprintf(want, sizeof want, "'shape': (%llu, %llu), }",
               (unsigned long long)rows, (unsigned long long)cols);
      cr_assert_not_null(memmem(b, data_off, want, strlen(want)),
                         "no %s in %.*s", want, (int)data_off, b);
      free(b);
      cs_npy_t a;
      cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
      cr_assert_eq(a.rows, rows);
      cr_assert_eq(a.cols, cols);
      free(a.data);
    }
  free(zero);
}

/* ---- reading what numpy wrote ---------------------------------------------- */

static void expect_f4_2x3(const char *p)
{
  cs_npy_t a;
  char why[512] = "";
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
  cr_assert_eq(a.dtype, CS_FP32);
  cr_assert_eq(a.rows, 2);
  cr_assert_eq(a.cols, 3);
  for (int i = 0; i < 6; i++)
    cr_assert_eq(((float *)a.data)[i], F4_2x3_VALUES[i], "element %d", i);
  free(a.data);
}

static const char *put_literal(const char *name, const char *head,
                               size_t headlen, const char *data, size_t n)
{
  unsigned char b[512];
  cr_assert(headlen + n <= sizeof b);
  memcpy(b, head, headlen);
  memcpy(b + headlen, data, n);
  return put_file(name, b, headlen + n);
}

Test(npy, reads_a_v1_header_spelled_out)
{
  expect_f4_2x3(put_literal("v1.npy", V1_F4_2x3, sizeof V1_F4_2x3 - 1,
                            F4_2x3_DATA, sizeof F4_2x3_DATA - 1));
}

Test(npy, reads_v2_and_v3_headers_spelled_out)
{
  cr_assert_eq(sizeof V2_F4_2x3 - 1, 128);
  expect_f4_2x3(put_literal("v2.npy", V2_F4_2x3, sizeof V2_F4_2x3 - 1,
                            F4_2x3_DATA, sizeof F4_2x3_DATA - 1));
  char v3[sizeof V2_F4_2x3];
  memcpy(v3, V2_F4_2x3, sizeof v3);
  v3[6] = 3;
  expect_f4_2x3(put_literal("v3.npy", v3, sizeof v3 - 1, F4_2x3_DATA,
                            sizeof F4_2x3_DATA - 1));
}

Test(npy, reads_numpy_fp16_3x5)
{
  const char *p = put_literal("f2.npy", V1_F2_3x5, sizeof V1_F2_3x5 - 1,
                              F2_3x5_DATA, sizeof F2_3x5_DATA - 1);
  cs_npy_t a;
  char why[512] = "";
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
  cr_assert_eq(a.dtype, CS_FP16);
  cr_assert_eq(a.rows, 3);
  cr_assert_eq(a.cols, 5);
  cr_assert(memcmp(a.data, F2_3x5_BITS, sizeof F2_3x5_BITS) == 0);
  free(a.data);
}

Test(npy, reads_u2_as_bf16_bits)
{
  static const char data[] = "\x80\x3f" "\x00\x40" "\xc0\x7f"
                             "\x00\x80" "\x01\x00" "\xff\xff";
  const char *p = put_npy("bf.npy", 1,
                          "{'descr': '<u2', 'fortran_order': False, "
                          "'shape': (3, 2), }\n", data, 12);
  static const uint16_t bits[6] = {0x3f80, 0x4000, 0x7fc0, 0x8000, 0x0001,
                                   0xffff};
  cs_npy_t a;
  char why[512] = "";
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
  cr_assert_eq(a.dtype, CS_BF16);
  cr_assert_eq(a.rows, 3);
  cr_assert_eq(a.cols, 2);
  cr_assert(memcmp(a.data, bits, sizeof bits) == 0);
  free(a.data);
}

Test(npy, reads_dicts_in_any_order_quoting_and_spacing)
{
  static const char *const ok[] = {
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n",
    "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n",
    "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3), }\n",
    "{'fortran_order':False,'descr':'<f4','shape':(2,3)}",
    "  {\n 'descr' :\t'<f4' ,\n 'fortran_order' : False ,"
    " 'shape' : ( 2 , 3 , ) , }   \n",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }\n",
    "{'descr': '<f4', 'fortran_order': False, 'shape': (002, 3), }" SP10 "\n",
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    char name[32];
    snprintf(name, sizeof name, "ok%zu.npy", i);
    expect_f4_2x3(put_dict(name, ok[i]));
  }
}

/* ---- refusals ---------------------------------------------------------------- */

#define DICT(descr, order, shape)                                   \
  "{'descr': '" descr "', 'fortran_order': " order ", 'shape': " \
  shape ", }\n"

Test(npy, refuses_big_endian)
{
  expect_refused(put_dict("be4.npy", DICT(">f4", "False", "(2, 3)")),
                 "dtype '>f4' is big-endian");
  expect_refused(put_dict("be2.npy", DICT(">f2", "False", "(2, 3)")),
                 "big-endian: expected little-endian '<f4'");
  expect_refused(put_dict("beu.npy", DICT(">u2", "False", "(2, 3)")),
                 "big-endian");
}

Test(npy, refuses_other_dtypes_naming_the_accepted_ones)
{
  static const char *const bad[] = {"<f8", "<i4", "|u1", "|f4", "=f4", "<u4",
                                    "<c8", "<f4 ", "f4", "<F4", "", "<i2",
                                    "|b1", ">f8"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char dict[128], name[32], needle[64];
    snprintf(dict, sizeof dict,
             "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }\n",
             bad[i]);
    snprintf(name, sizeof name, "d%zu.npy", i);
    snprintf(needle, sizeof needle, "dtype '%s' is not accepted", bad[i]);
    expect_refused(put_dict(name, dict), needle);
    expect_refused(tpath(name),
                   "expected '<f4' (fp32), '<f2' (fp16) or '<u2' (bf16 bits)");
  }
  expect_refused(put_dict("st.npy", "{'descr': [('a', '<f4')], "
                          "'fortran_order': False, 'shape': (2, 3), }\n"),
                 "structured dtype");
  expect_refused(put_dict("nq.npy", DICT("<f4'+'", "False", "(2, 3)")),
                 "expected ',' or '}'");
}

Test(npy, refuses_fortran_order)
{
  expect_refused(put_dict("f.npy", DICT("<f4", "True", "(2, 3)")),
                 "fortran_order is True");
  expect_refused(put_dict("f0.npy", DICT("<f4", "0", "(2, 3)")),
                 "fortran_order is not True or False");
  expect_refused(put_dict("fq.npy", DICT("<f4", "'False'", "(2, 3)")),
                 "fortran_order is not True or False");
  expect_refused(put_dict("fl.npy", DICT("<f4", "false", "(2, 3)")),
                 "fortran_order is not True or False");
}

Test(npy, refuses_shapes_that_are_not_2d)
{
  expect_refused(put_dict("s0.npy", DICT("<f4", "False", "()")),
                 "shape () is 0-D: expected 2-D (N, C)");
  expect_refused(put_dict("s1.npy", DICT("<f4", "False", "(6,)")),
                 "shape (6,) is 1-D");
  expect_refused(put_dict("s1b.npy", DICT("<f4", "False", "(6)")),
                 "is 1-D");
  expect_refused(put_dict("s3.npy", DICT("<f4", "False", "(1, 2, 3)")),
                 "shape (1, 2, 3) is 3-D");
  expect_refused(put_dict("sl.npy", DICT("<f4", "False", "[2, 3]")),
                 "shape is not a tuple");
  expect_refused(put_dict("sn.npy", DICT("<f4", "False", "6")),
                 "shape is not a tuple");
}

Test(npy, refuses_zero_dimensions)
{
  expect_refused(put_npy("z0.npy", 1, DICT("<f4", "False", "(0, 3)"), "", 0),
                 "shape (0, 3) has a zero dimension");
  expect_refused(put_npy("z1.npy", 1, DICT("<f4", "False", "(3, 0)"), "", 0),
                 "zero dimension");
  expect_refused(put_npy("z2.npy", 1, DICT("<f4", "False", "(0, 0)"), "", 0),
                 "zero dimension");
}

Test(npy, refuses_negative_and_non_integer_dimensions)
{
  expect_refused(put_dict("n.npy", DICT("<f4", "False", "(-2, 3)")),
                 "negative dimension");
  expect_refused(put_dict("f.npy", DICT("<f4", "False", "(2.0, 3)")),
                 "expected ',' or ')' in shape");
  expect_refused(put_dict("a.npy", DICT("<f4", "False", "(a, 3)")),
                 "expected a non-negative integer");
  expect_refused(put_dict("b.npy", DICT("<f4", "False", "(2 3)")),
                 "expected ',' or ')' in shape");
  expect_refused(put_dict("c.npy", DICT("<f4", "False", "(2, 3")),
                 "expected a non-negative integer");
  expect_refused(put_dict("e.npy", "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, 3"),
                 "shape has no closing ')'");
  expect_refused(put_dict("h.npy", DICT("<f4", "False",
                                        "(2, 18446744073709551616)")),
                 "does not fit in 64 bits");
}

Test(npy, refuses_truncated_data)
{
  expect_refused(put_dict("t.npy", DICT("<f4", "False", "(2, 4)")),
                 "data is truncated: shape (2, 4) of '<f4' needs 32 data "
                 "bytes, the file has 24");
  expect_refused(put_literal("t1.npy", V1_F4_2x3, sizeof V1_F4_2x3 - 1,
                             F4_2x3_DATA, sizeof F4_2x3_DATA - 2),
                 "data is truncated");
  expect_refused(put_file("t0.npy", V1_F4_2x3, sizeof V1_F4_2x3 - 1),
                 "the file has 0 after the header");
}

Test(npy, refuses_trailing_bytes)
{
  expect_refused(put_dict("x.npy", DICT("<f4", "False", "(1, 3)")),
                 "trailing bytes after the data");
  expect_refused(put_dict("x2.npy", DICT("<f2", "False", "(2, 3)")),
                 "needs 12 data bytes, the file has 24");
}

Test(npy, refuses_sizes_that_overflow)
{
  expect_refused(put_dict("o1.npy", DICT("<f4", "False",
                                         "(4294967296, 4294967296)")),
                 "overflows 64 bits");
  expect_refused(put_dict("o2.npy", DICT("<f2", "False",
                                         "(18446744073709551615, 2)")),
                 "overflows 64 bits");
  expect_refused(put_dict("o3.npy", DICT("<f4", "False",
                                         "(4611686018427387904, 1)")),
                 "overflows 64 bits");
}

/* 4 PB that does not overflow: refused by the file size, not by malloc. */
Test(npy, refuses_absurd_sizes_before_allocating)
{
  expect_refused(put_dict("big.npy", DICT("<f4", "False",
                                          "(1000000000, 1000000)")),
                 "needs 4000000000000000 data bytes, the file has 24");
  expect_refused(put_dict("big2.npy", DICT("<f4", "False",
                                           "(2305843009213693951, 1)")),
                 "data is truncated");
}

Test(npy, refuses_empty_files_directories_and_missing_files)
{
  expect_refused(put_file("empty.npy", "", 0), "file is empty");
  cr_assert_eq(mkdir(tpath("d.npy"), 0700), 0);
  expect_refused(tpath("d.npy"), "is a directory");
  expect_refused(tpath("missing.npy"), "No such file or directory");
  expect_refused(tpath("missing/x.npy"), "cannot open");
}

Test(npy, refuses_a_fifo_without_hanging, .timeout = 10)
{
  cr_assert_eq(mkfifo(tpath("fifo.npy"), 0600), 0);
  expect_refused(tpath("fifo.npy"), "is not a regular file");
}

Test(npy, refuses_files_without_the_magic)
{
  expect_refused(put_file("pk.npy", "PK\x03\x04" SP10 SP10, 24),
                 "not a .npy file: does not start with the magic");
  expect_refused(put_file("x.npy", "\x93NUMPX\x01\x00\x10\x00" SP10, 20),
                 "not a .npy file");
  expect_refused(put_file("txt.npy", "hello\n", 6), "not a .npy file");
  expect_refused(put_file("short.npy", "\x93NU", 3), "ends inside the header");
  expect_refused(put_file("short2.npy", "\x93NUMPY\x01", 7),
                 "ends inside the header");
  expect_refused(put_file("short3.npy", "\x93NUMPY\x02\x00\x10\x00", 10),
                 "ends inside the header");
}

Test(npy, refuses_unsupported_versions)
{
  static const unsigned char v[][2] = {{4, 0}, {1, 1}, {0, 0}, {2, 1},
                                       {255, 0}};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    char b[sizeof V1_F4_2x3 + 24];
    memcpy(b, V1_F4_2x3, 128);
    memcpy(b + 128, F4_2x3_DATA, 24);
    b[6] = (char)v[i][0];
    b[7] = (char)v[i][1];
    char name[32], needle[80];
    snprintf(name, sizeof name, "v%zu.npy", i);
    snprintf(needle, sizeof needle,
             "version %u.%u is not supported: expected 1.0, 2.0 or 3.0",
             v[i][0], v[i][1]);
    expect_refused(put_file(name, b, 152), needle);
  }
}

Test(npy, refuses_a_header_length_past_eof)
{
  char b[152];
  memcpy(b, V1_F4_2x3, 128);
  memcpy(b + 128, F4_2x3_DATA, 24);
  b[8] = b[9] = (char)0xff;
  expect_refused(put_file("l1.npy", b, 152),
                 "header length 65535 runs past the end of the file (152 "
                 "bytes)");
  b[8] = (char)0x8f; /* 143 + 10 = 153 > 152 */
  b[9] = 0;
  expect_refused(put_file("l2.npy", b, 152), "runs past the end");
  memcpy(b, V2_F4_2x3, 128);
  memset(b + 8, 0xff, 4);
  expect_refused(put_file("l3.npy", b, 152),
                 "header length 4294967295 runs past the end");
  memset(b + 8, 0, 4);
  b[11] = 0x40; /* 1 GiB */
  expect_refused(put_file("l4.npy", b, 152), "runs past the end");
}

Test(npy, refuses_an_implausibly_long_header)
{
  size_t hlen = (1u << 20) + 64;
  char *dict = malloc(hlen + 1);
  cr_assert_not_null(dict);
  memset(dict, ' ', hlen);
  const char *d = DICT("<f4", "False", "(2, 3)");
  memcpy(dict, d, strlen(d) - 1);
  dict[hlen - 1] = '\n';
  dict[hlen] = 0;
  expect_refused(put_npy("long.npy", 2, dict, F4_2x3_DATA, 24),
                 "is implausible");
  free(dict);
}

Test(npy, refuses_a_dict_without_closing_brace)
{
  expect_refused(put_dict("b1.npy",
                          "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, 3), \n"),
                 "dict has no closing '}'");
  expect_refused(put_dict("b2.npy", "{'descr': '<f4'"),
                 "dict has no closing '}'");
  expect_refused(put_dict("b3.npy", "{"), "dict has no closing '}'");
  expect_refused(put_dict("b4.npy", "{'descr': '<f4"), "unterminated string");
  expect_refused(put_dict("b5.npy", "{'descr': "), "expected a quoted string");
  expect_refused(put_dict("b6.npy", ""), "header does not start with '{'");
  expect_refused(put_dict("b7.npy", SP10 "\n"), "does not start with '{'");
}

Test(npy, refuses_non_ascii_garbage)
{
  unsigned char g[96];
  rng_state = 7;
  for (size_t i = 0; i < sizeof g; i++)
    g[i] = (unsigned char)(0x80 | rng());
  g[sizeof g - 1] = 0;
  expect_refused(put_dict("g1.npy", (const char *)g), "bad header");
  g[0] = '{';
  expect_refused(put_dict("g2.npy", (const char *)g),
                 "expected a quoted string at header byte 1 (near '\\x");
  expect_refused(put_dict("g3.npy", DICT("<f\xc3\xa9", "False", "(2, 3)")),
                 "dtype '<f\\xc3\\xa9' is not accepted");
  expect_refused(put_dict("g4.npy", DICT("<f4\x01\x02\x1b[31m", "False",
                                         "(2, 3)")),
                 "dtype '<f4\\x01\\x02\\x1b[31m' is not accepted");
}

Test(npy, refuses_missing_unknown_and_duplicate_keys)
{
  expect_refused(put_dict("k1.npy", "{'descr': '<f4', 'shape': (2, 3)}\n"),
                 "dict has no 'fortran_order' key");
  expect_refused(put_dict("k2.npy",
                          "{'fortran_order': False, 'shape': (2, 3)}\n"),
                 "dict has no 'descr' key");
  expect_refused(put_dict("k3.npy",
                          "{'descr': '<f4', 'fortran_order': False}\n"),
                 "dict has no 'shape' key");
  expect_refused(put_dict("k4.npy", "{}\n"), "dict has no 'descr' key");
  expect_refused(put_dict("k5.npy",
                          "{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (2, 3), 'extra': 1}\n"),
                 "unknown key 'extra'");
  expect_refused(put_dict("k6.npy",
                          "{'descr': '<f8', 'fortran_order': False, "
                          "'shape': (2, 3), 'descr': '<f4'}\n"),
                 "duplicate key 'descr'");
  expect_refused(put_dict("k7.npy", "{descr: '<f4'}\n"),
                 "expected a quoted string");
  expect_refused(put_dict("k8.npy", "{'descr' '<f4'}\n"),
                 "expected ':' after a key");
  expect_refused(put_dict("k9.npy", "{'de\\x73cr': '<f4'}\n"),
                 "escape sequences");
}

Test(npy, refuses_junk_after_the_dict)
{
  expect_refused(put_dict("j1.npy", "{'descr': '<f4', 'fortran_order': False,"
                          " 'shape': (2, 3), } x\n"),
                 "unexpected bytes after the dict's closing '}'");
  expect_refused(put_dict("j2.npy", "{'descr': '<f4', 'fortran_order': False,"
                          " 'shape': (2, 3), }}\n"),
                 "after the dict's closing");
  static const char nul[] = "{'descr': '<f4', 'fortran_order': False,"
                            " 'shape': (2, 3), }  \n\0\0";
  expect_refused(put_npy_len("j3.npy", 1, nul, sizeof nul - 1, F4_2x3_DATA,
                             24),
                 "after the dict's closing");
}

Test(npy, tolerates_null_arguments)
{
  char why[512] = "";
  cs_npy_t a;
  cr_assert_eq(cs_npy_read(NULL, &a, why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "no path given"), "%s", why);
  cr_assert_eq(cs_npy_read(tpath("x.npy"), NULL, why, sizeof why), -1);
  cr_assert_eq(cs_npy_read(tpath("missing.npy"), &a, NULL, 0), -1);
  cr_assert_null(a.data);
  char tiny[8];
  cr_assert_eq(cs_npy_read(tpath("missing.npy"), &a, tiny, sizeof tiny), -1);
  cr_assert_eq(strlen(tiny), 7);
  cr_assert_eq(cs_npy_write(NULL, CS_FP32, 1, 1, "abcd", why, sizeof why), -1);
}

Test(npy, reasons_stay_on_one_line_for_odd_paths)
{
  const char *p = put_file("new\nline\x1b[0m.npy", "junk", 4);
  char why[512] = "";
  cs_npy_t a;
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "new?line?[0m.npy: not a .npy file"), "%s",
                     why);
  cr_assert_eq(cs_npy_write(tpath("no\ndir/x.npy"), CS_FP32, 1, 1, "abcd",
                            why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "no?dir/x.npy: cannot create"), "%s", why);
  for (const char *c = why; *c; c++)
    cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "%s", why);
}

/* Every exit of the reader frees what it took: the heap in use comes back
 * to the same byte after hundreds of refusals (valgrind agrees; this one
 * runs in every build). */
Test(npy, refusals_free_everything_they_allocate)
{
  const char *bad[] = {
    put_dict("p.npy", "{'descr': '<f4', 'fortran_order': False"),
    put_dict("d.npy", DICT("<f8", "False", "(2, 3)")),
    put_dict("f.npy", DICT("<f4", "True", "(2, 3)")),
    put_dict("s.npy", DICT("<f4", "False", "(6,)")),
    put_dict("z.npy", DICT("<f4", "False", "(0, 6)")),
    put_dict("o.npy", DICT("<f4", "False", "(4294967296, 4294967296)")),
    put_dict("t.npy", DICT("<f4", "False", "(2, 4)")),
    put_dict("x.npy", DICT("<f4", "False", "(1, 3)")),
    put_dict("k.npy", "{'descr': '<f4', 'what': 1}\n"),
    put_file("e.npy", "", 0),
    tpath("missing.npy"),
  };
  const char *good = put_dict("ok.npy", DICT("<f4", "False", "(2, 3)"));
  char why[512];
  cs_npy_t a;
  cr_assert_eq(cs_npy_read(good, &a, why, sizeof why), 0, "%s", why);
  free(a.data); /* warm up anything the C library keeps */
  size_t before = mallinfo2().uordblks;
  int refused = 0;
  for (int r = 0; r < 100; r++) {
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
      refused += cs_npy_read(bad[i], &a, why, sizeof why) == -1;
    if (cs_npy_read(good, &a, why, sizeof why) == 0)
      free(a.data);
  }
  size_t after = mallinfo2().uordblks;
  cr_assert_eq(refused, 100 * (int)(sizeof bad / sizeof *bad));
  cr_assert_eq(after, before, "%zu bytes still allocated after the reads",
               after - before);
}

/* ---- writer failures ---------------------------------------------------------- */

Test(npy, write_refuses_bad_arguments_and_creates_nothing)
{
  char why[512] = "";
  float x[4] = {0};
  const char *p = tpath("w.npy");
  cr_assert_eq(cs_npy_write(p, (cs_dtype_t)7, 2, 2, x, why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "dtype 7 is not accepted"), "%s", why);
  cr_assert_eq(cs_npy_write(p, CS_FP32, 0, 2, x, why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "shape (0, 2) has a zero dimension"), "%s",
                     why);
  cr_assert_eq(cs_npy_write(p, CS_FP32, 2, 0, x, why, sizeof why), -1);
  cr_assert_eq(cs_npy_write(p, CS_FP32, 2, 2, NULL, why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "no data given"), "%s", why);
  cr_assert_eq(cs_npy_write(p, CS_FP16, 1ull << 32, 1ull << 31, x, why,
                            sizeof why), -1);
  cr_assert_not_null(strstr(why, "overflows 64 bits"), "%s", why);
  cr_assert_eq(count_entries(), 0);
}

Test(npy, write_failure_leaves_no_file_and_no_temp)
{
  char why[512] = "";
  float x[4] = {1, 2, 3, 4};
  cr_assert_eq(cs_npy_write(tpath("nodir/w.npy"), CS_FP32, 2, 2, x, why,
                            sizeof why), -1);
  cr_assert_not_null(strstr(why, "cannot create a temp file beside it"), "%s",
                     why);
  cr_assert_not_null(strstr(why, "nodir/w.npy"), "%s", why);

  cr_assert_eq(mkdir(tpath("isdir.npy"), 0700), 0);
  cr_assert_eq(cs_npy_write(tpath("isdir.npy"), CS_FP32, 2, 2, x, why,
                            sizeof why), -1);
  cr_assert_not_null(strstr(why, "cannot rename"), "%s", why);
  cr_assert_eq(count_entries(), 1, "a temp file was left behind");
}

Test(npy, write_replaces_an_existing_file_whole)
{
  char why[512] = "";
  float big[64] = {0}, small[2] = {7, 8};
  const char *p = tpath("w.npy");
  cr_assert_eq(cs_npy_write(p, CS_FP32, 8, 8, big, why, sizeof why), 0, "%s",
               why);
  cr_assert_eq(cs_npy_write(p, CS_FP32, 1, 2, small, why, sizeof why), 0,
               "%s", why);
  cs_npy_t a;
  cr_assert_eq(cs_npy_read(p, &a, why, sizeof why), 0, "%s", why);
  cr_assert_eq(a.rows, 1);
  cr_assert_eq(a.cols, 2);
  cr_assert_eq(((float *)a.data)[1], 8.0f);
  free(a.data);
  cr_assert_eq(count_entries(), 1);
}

Test(npy, write_gives_the_file_the_umask_permissions)
{
  char why[512] = "";
  float x[1] = {1};
  umask(022);
  cr_assert_eq(cs_npy_write(tpath("a.npy"), CS_FP32, 1, 1, x, why,
                            sizeof why), 0, "%s", why);
  umask(027);
  cr_assert_eq(cs_npy_write(tpath("b.npy"), CS_FP32, 1, 1, x, why,
                            sizeof why), 0, "%s", why);
  struct stat st;
  cr_assert_eq(stat(tpath("a.npy"), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
  cr_assert_eq(stat(tpath("b.npy"), &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0640, "mode %o", st.st_mode & 0777);
}

/* ---- fuzz --------------------------------------------------------------------- */

/* Bytes that steer the scanner somewhere new. */
static unsigned char pick_byte(void)
{
  static const char interesting[] = "{}()[],:'\" \n\t-0123456789LTFx<>|\\";
  uint64_t r = rng();
  if (r % 4 == 0)
    return (unsigned char)(r >> 8);
  return (unsigned char)interesting[(r >> 8) % (sizeof interesting - 1)];
}

/* One random corruption of b (n bytes, cap room); returns the new size. */
static size_t mutate(unsigned char *b, size_t n, size_t cap)
{
  size_t hot = n < 160 ? n : 160; /* mostly the prefix and header */
  size_t at = n ? (rng() % 4 ? rng() % hot : rng() % n) : 0;
  switch (rng() % 7) {
  case 0: /* flip a bit */
    if (n)
      b[at] ^= (unsigned char)(1u << (rng() % 8));
    return n;
  case 1: /* overwrite a byte */
    if (n)
      b[at] = pick_byte();
    return n;
  case 2: /* truncate */
    return n ? (size_t)(rng() % n) : 0;
  case 3: { /* append */
    size_t k = 1 + rng() % 16;
    for (size_t i = 0; i < k && n < cap; i++)
      b[n++] = (unsigned char)rng();
    return n;
  }
  case 4: /* a new header length */
    if (n >= 12) {
      uint64_t r = rng();
      b[8] = (unsigned char)(r % 3 ? r % 200 : r >> 8);
      b[9] = (unsigned char)(r % 5 ? 0 : r >> 16);
      if (r % 7 == 0)
        b[10] = b[11] = (unsigned char)(r >> 24);
    }
    return n;
  case 5: { /* delete a span */
    size_t k = 1 + rng() % 8;
    if (at + k > n)
      return n;
    memmove(b + at, b + at + k, n - at - k);
    return n - k;
  }
  default: { /* insert a span */
    size_t k = 1 + rng() % 8;
    if (n + k > cap)
      return n;
    memmove(b + at + k, b + at, n - at);
    for (size_t i = 0; i < k; i++)
      b[at + i] = pick_byte();
    return n + k;
  }
  }
}

static void fuzz(const unsigned char *base, size_t n0, uint64_t seed,
                 int rounds)
{
  unsigned char b[1024];
  cr_assert(n0 + 256 <= sizeof b);
  rng_state = seed;
  const char *p = tpath("fuzz.npy");
  int accepted = 0, refused = 0;
  for (int r = 0; r < rounds; r++) {
    memcpy(b, base, n0);
    size_t n = n0;
    for (int m = 1 + (int)(rng() % 3); m > 0; m--)
      n = mutate(b, n, sizeof b);
    put_file("fuzz.npy", b, n);
    cs_npy_t a;
    char why[256] = "";
    int rc = cs_npy_read(p, &a, why, sizeof why);
    if (rc == 0) {
      accepted++;
      cr_assert(a.dtype < CS_NDTYPES && a.rows && a.cols && a.data,
                "round %d: accepted an empty array", r);
      cr_assert(a.rows * a.cols * cs_dtype_size(a.dtype) < n,
                "round %d: more data than file", r);
      free(a.data);
    } else {
      refused++;
      cr_assert_eq(rc, -1, "round %d: rc %d", r, rc);
      cr_assert_null(a.data, "round %d", r);
      cr_assert(strncmp(why, p, strlen(p)) == 0 && strlen(why) > strlen(p) + 2,
                "round %d: reason %s", r, why);
      cr_assert_null(strchr(why, '\n'), "round %d: two lines: %s", r, why);
    }
  }
  cr_assert(accepted > 0 && refused > rounds / 2,
            "accepted %d, refused %d: the mutations miss the header",
            accepted, refused);
}

Test(npy, survives_thousands_of_corrupted_v1_files)
{
  unsigned char base[158];
  memcpy(base, V1_F2_3x5, 128);
  memcpy(base + 128, F2_3x5_DATA, 30);
  fuzz(base, sizeof base, 0x5eed1, 3000);
}

Test(npy, survives_thousands_of_corrupted_v2_files)
{
  unsigned char base[128 + 24];
  memcpy(base, V2_F4_2x3, 128);
  memcpy(base + 128, F4_2x3_DATA, 24);
  fuzz(base, sizeof base, 0x5eed2, 3000);
}

Test(npy, survives_corrupted_short_unpadded_headers)
{
  /* The whole header sits in the hot region, so most mutations hit it. */
  unsigned char base[256];
  const char *d = "{'descr':'<f4','fortran_order':False,'shape':(2,3)}";
  size_t hlen = strlen(d);
  memcpy(base, "\x93NUMPY\x01\x00", 8);
  base[8] = (unsigned char)hlen;
  base[9] = 0;
  memcpy(base + 10, d, hlen);
  memcpy(base + 10 + hlen, F4_2x3_DATA, 24);
  fuzz(base, 10 + hlen + 24, 0x5eed3, 3000);
}
