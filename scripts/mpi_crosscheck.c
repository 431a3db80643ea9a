/*
 * mpi_crosscheck.c - checks collsim's allreduce results against Open MPI's
 * MPI_Allreduce on the same fp32 inputs (scripts/crosscheck-mpi.sh drives it;
 * the CMake target mpi_crosscheck, built only with -DCOLLSIM_MPI=ON).
 *
 *   mpi_crosscheck gen IN.npy COUNT SEED   rank 0 writes (N, COUNT) '<f4'
 *                                          random inputs in [1, 100),
 *                                          N = world size
 *   mpi_crosscheck check IN.npy OUT.npy OP each rank reduces its row with
 *                                          MPI_Allreduce (sum|max|min|prod)
 *                                          and compares with collsim's
 *                                          row: max/min bit for bit, sum
 *                                          and prod within rtol 1e-5,
 *                                          atol 1e-8 (the reference's)
 *   mpi_crosscheck special IN.npy COUNT SEED  as gen, but every element one
 *                                          of NaN, ±0, ±inf, ±(fp32
 *                                          subnormals), ±1, 2
 *   mpi_crosscheck check0 IN.npy OUT.npy OP [FIRST]  OP max|min: every
 *                                          rank's MPI_Allreduce result
 *                                          against collsim's row 0 from
 *                                          element FIRST (default 0) on,
 *                                          bit for bit (NaN equal to NaN)
 *
 * Open MPI's MPI_MAX/MPI_MIN on fp32 are the select (a > b ? a : b),
 * order-dependent for NaN and ±0. Measured with Open MPI 4.1 on 2 and 3
 * ranks and up to about 1000 elements, every rank gets the ascending fold
 * ((x0 op x1) op x2). collsim's --minmax pto is std::max(a, b) = a < b ?
 * b : a, so that fold is std::max(x2, std::max(x1, x0)): the ring's order
 * in its last segment (owner N-1: start at x0, each rank folds its own
 * value in as the first operand). For more ranks or elements the tree or
 * ring Open MPI picks folds in other orders (not modelled).
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads row r of a v1.0 '<f4' (N, C) .npy written by collsim or by gen. */
static float *read_row(const char *path, int r, long count)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] != 1) {
    fclose(f);
    return NULL;
  }
  long hlen = pre[8] | pre[9] << 8;
  float *row = malloc(sizeof(float) * (size_t)count);
  if (!row || fseek(f, 10 + hlen + (long)r * count * 4, SEEK_SET) != 0 ||
      fread(row, 4, (size_t)count, f) != (size_t)count) {
    free(row);
    fclose(f);
    return NULL;
  }
  fclose(f);
  return row;
}

static long npy_cols(const char *path)
{
  FILE *f = fopen(path, "rb");
  char buf[256] = {0};
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = strstr(buf + 10, "'shape': (");
  long rows, cols;
  if (!s || sscanf(s, "'shape': (%ld, %ld)", &rows, &cols) != 2)
    return -1;
  return cols;
}

/* Writes rank 0's (N, count) '<f4' header; the caller writes the data. */
static FILE *npy_open(const char *path, int n, long count)
{
  FILE *f = fopen(path, "wb");
  if (!f)
    return NULL;
  char dict[128];
  int len = snprintf(dict, sizeof(dict),
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %ld), }", n, count);
  int total = (10 + len + 1 + 63) / 64 * 64;
  int hlen = total - 10;
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(hlen & 0xff, f);
  fputc(hlen >> 8, f);
  fputs(dict, f);
  for (int i = 10 + len; i < total - 1; i++)
    fputc(' ', f);
  fputc('\n', f);
  return f;
}

static int same_bits(float a, float b)
{
  return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b));
}

/* special: the values where max/min definitions part. */
static void write_special(const char *path, int n, long count, uint64_t s)
{
  static const float v[] = {NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1e-45f,
                            -1e-45f, 1e-40f, -1e-40f, 1.0f, -1.0f, 2.0f};
  FILE *f = npy_open(path, n, count);
  if (!f)
    return;
  for (long i = 0; i < (long)n * count; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    fwrite(&v[(s >> 20) % (sizeof(v) / sizeof(v[0]))], 4, 1, f);
  }
  fclose(f);
}

/* check0: MPI's result on every rank against collsim's rank 0. */
static int check0(const char *in_path, const char *out_path, const char *opname,
                  long from, int rank, int n)
{
  long count = npy_cols(in_path);
  MPI_Op op = !strcmp(opname, "min") ? MPI_MIN : MPI_MAX;
  float *in = count > 0 ? read_row(in_path, rank, count) : NULL;
  float *got = count > 0 ? read_row(out_path, 0, count) : NULL;
  if (!in || !got) {
    fprintf(stderr, "rank %d: cannot read %s / %s\n", rank, in_path, out_path);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  float *want = malloc(sizeof(float) * (size_t)count);
  MPI_Allreduce(in, want, (int)count, MPI_FLOAT, op, MPI_COMM_WORLD);
  long bad = 0, first = -1, total = 0;
  for (long i = from; i < count; i++)
    if (!same_bits(want[i], got[i]) && bad++ == 0)
      first = i;
  MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (bad)
    fprintf(stderr, "rank %d: %ld mismatches, first at %ld: MPI %.9g, collsim %.9g\n",
            rank, bad, first, want[first], got[first]);
  if (rank == 0)
    printf("%s NaN/±0/inf/subnormal: %d ranks x %ld (from %ld): %s (%ld mismatching elements)\n",
           opname, n, count, from, total ? "MISMATCH" : "bit-identical", total);
  free(want);
  free(in);
  free(got);
  return total ? 1 : 0;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  int rc = 0;
  if (argc == 5 && !strcmp(argv[1], "gen")) {
    long count = atol(argv[3]);
    uint64_t s = strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    FILE *f = rank == 0 ? npy_open(argv[2], n, count) : NULL;
    if (f) {
      for (long i = 0; i < (long)n * count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        /* Positive, like the reference's inputs: a sum of mixed signs can
         * cancel to near 0, where any two association orders differ by
         * more than a relative tolerance. */
        float v = (float)(1.0 + (double)(s >> 11) * 0x1p-53 * 99.0);
        fwrite(&v, 4, 1, f);
      }
      fclose(f);
    }
  } else if (argc == 5 && !strcmp(argv[1], "special")) {
    if (rank == 0)
      write_special(argv[2], n, atol(argv[3]),
                    strtoull(argv[4], NULL, 10) * 0x9e3779b97f4a7c15ull + 1);
  } else if ((argc == 5 || argc == 6) && !strcmp(argv[1], "check0")) {
    rc = check0(argv[2], argv[3], argv[4], argc == 6 ? atol(argv[5]) : 0, rank, n);
  } else if (argc == 5 && !strcmp(argv[1], "check")) {
    long count = npy_cols(argv[2]);
    MPI_Op op = !strcmp(argv[4], "max") ? MPI_MAX : !strcmp(argv[4], "min") ? MPI_MIN
              : !strcmp(argv[4], "prod") ? MPI_PROD : MPI_SUM;
    int exact = op == MPI_MAX || op == MPI_MIN;
    float *in = count > 0 ? read_row(argv[2], rank, count) : NULL;
    float *got = count > 0 ? read_row(argv[3], rank, count) : NULL;
    if (!in || !got) {
      fprintf(stderr, "rank %d: cannot read %s / %s\n", rank, argv[2], argv[3]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    float *want = malloc(sizeof(float) * (size_t)count);
    MPI_Allreduce(in, want, (int)count, MPI_FLOAT, op, MPI_COMM_WORLD);
    long bad = 0, first = -1;
    double maxrel = 0;
    for (long i = 0; i < count; i++) {
      int ok;
      if (exact)
        ok = memcmp(&want[i], &got[i], 4) == 0;
      else {
        double d = fabs((double)want[i] - (double)got[i]);
        ok = d <= 1e-8 + 1e-5 * fabs((double)want[i]);
        if (want[i] != 0 && d / fabs((double)want[i]) > maxrel)
          maxrel = d / fabs((double)want[i]);
      }
      if (!ok && bad++ == 0)
        first = i;
    }
    long total = 0;
    double allrel = 0;
    MPI_Reduce(&bad, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&maxrel, &allrel, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (bad)
      fprintf(stderr, "rank %d: %ld mismatches, first at %ld: MPI %.9g, collsim %.9g\n",
              rank, bad, first, want[first], got[first]);
    if (rank == 0)
      printf("%s: %d ranks x %ld: %s (%ld mismatching elements; max rel diff %.3g)\n",
             argv[4], n, count, total ? "MISMATCH" : exact ? "bit-identical" : "within rtol 1e-5",
             total, allrel);
    rc = total ? 1 : 0;
    free(want);
  } else if (rank == 0) {
    fprintf(stderr, "usage: mpi_crosscheck gen|special IN.npy COUNT SEED | "
                    "check|check0 IN.npy OUT.npy OP\n");
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
