/*
 * mpi_allreduce_timer.c - the Open MPI side of scripts/compare-mpi.sh: times
 * MPI_Allreduce (MPI_FLOAT, MPI_SUM) for the sizes given on the command
 * line and prints one CSV row per size in the column layout of
 * `collsim bench --csv`, so the script reads both the same way.
 *
 * The CMake target mpi_allreduce_timer, built only with -DCOLLSIM_MPI=ON
 * (scripts/compare-mpi.sh builds it in build-mpi/): the default build does
 * not need MPI.
 *
 *   mpirun -np N build-mpi/mpi_allreduce_timer [-n ITERS] [-w WARMUP] SIZE...
 *
 * SIZE is bytes per rank, with an optional binary K/M/G suffix, rounded
 * down to whole floats (at least one). Per size: WARMUP untimed calls, then
 * ITERS calls, each after an MPI_Barrier and timed with MPI_Wtime on every
 * rank; the time of a call is the maximum over ranks (MPI_Reduce MAX to
 * rank 0) and the row shows the median over calls, algbw = size / time and
 * busbw = algbw * 2(N-1)/N, GB = 1e9 bytes. Out-of-place (separate send and
 * receive buffers, as nccl-tests' first column). The result of the last
 * call is checked: rank r sends r+1+(i mod 7), so every element's sum is a
 * small exact integer; `wrong` counts differing elements over all ranks.
 * Exit status: 0, 1 when a result is wrong, 2 on bad usage.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Bytes with an optional K/M/G suffix; 0 when malformed. */
static unsigned long long parse_bytes(const char *s)
{
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s)
    return 0;
  switch (*end) {
  case 'K': case 'k': v <<= 10; end++; break;
  case 'M': case 'm': v <<= 20; end++; break;
  case 'G': case 'g': v <<= 30; end++; break;
  default: break;
  }
  return *end ? 0 : v;
}

/* Reads [-n ITERS] [-w WARMUP] into *iters and *warmup and the index of the
 * first SIZE into *first. Returns 0, or -1 after rank 0 printed why. */
static int parse_args(int argc, char **argv, int me, int *iters, int *warmup,
                      int *first)
{
  for (*first = 1; *first < argc && argv[*first][0] == '-'; *first += 2) {
    const char *opt = argv[*first];
    if (*first + 1 >= argc || (strcmp(opt, "-n") && strcmp(opt, "-w"))) {
      if (me == 0)
        fprintf(stderr, "usage: mpi_allreduce_timer [-n ITERS] [-w WARMUP] SIZE...\n");
      return -1;
    }
    int v = atoi(argv[*first + 1]);
    if (opt[1] == 'n')
      *iters = v;
    else
      *warmup = v;
  }
  if (*iters < 1 || *warmup < 0 || *first >= argc) {
    if (me == 0)
      fprintf(stderr, "mpi_allreduce_timer: need -n >= 1, -w >= 0 and at least one SIZE\n");
    return -1;
  }
  return 0;
}

/* WARMUP untimed calls, then ITERS calls each after a barrier: per[k] gets
 * the slowest rank's time of call k on rank 0, in seconds. */
static void time_calls(const float *send, float *recv, size_t count,
                       int warmup, int iters, double *per)
{
  for (int k = 0; k < warmup; k++)
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  for (int k = 0; k < iters; k++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double dt = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    per[k] = slowest;
  }
}

/* Elements of recv that differ from the exact sum over n ranks, summed over
 * all ranks (the total is valid on rank 0 only). */
static long long count_wrong(const float *recv, size_t count, int n)
{
  long long wrong = 0, total = 0;
  for (size_t i = 0; i < count; i++) {
    /* sum over r of (r + 1 + i mod 7) = n(n+1)/2 + n*(i mod 7), exact */
    float want = (float)(n * (n + 1) / 2 + n * (int)(i % 7));
    wrong += recv[i] != want;
  }
  MPI_Reduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  return total;
}

/* The CSV row of one size from the per-call times (sorted here). */
static void print_row(size_t count, int n, double *per, int iters,
                      long long wrong)
{
  qsort(per, (size_t)iters, sizeof(double), cmp_double);
  double sec = per[iters / 2], nbytes = (double)count * sizeof(float);
  double algbw = nbytes / sec / 1e9;
  double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
  printf("%zu,%zu,fp32,sum,ompi,%d,%.3f,%.6f,%.6f,%lld\n",
         count * sizeof(float), count, n, sec * 1e6, algbw, busbw, wrong);
  fflush(stdout);
}

/* Times and checks one size of count floats; rank 0 prints its row.
 * Returns 1 on rank 0 when a result was wrong, else 0. */
static int run_size(size_t count, int me, int n, int iters, int warmup)
{
  int code = 0;
  float *send = malloc(count * sizeof(float)), *recv = malloc(count * sizeof(float));
  double *per = malloc((size_t)iters * sizeof(double));
  if (!send || !recv || !per) {
    fprintf(stderr, "mpi_allreduce_timer: out of memory for %zu floats\n", count);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (size_t i = 0; i < count; i++) {
    send[i] = (float)(me + 1 + (int)(i % 7));
    recv[i] = 0;
  }
  time_calls(send, recv, count, warmup, iters, per);
  long long total = count_wrong(recv, count, n);
  if (me == 0) {
    print_row(count, n, per, iters, total);
    if (total)
      code = 1;
  }
  free(send);
  free(recv);
  free(per);
  return code;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  int iters = 20, warmup = 5, first;
  if (parse_args(argc, argv, me, &iters, &warmup, &first) < 0) {
    MPI_Finalize();
    return 2;
  }
  if (me == 0)
    printf("size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,wrong\n");
  int code = 0;
  for (int a = first; a < argc; a++) {
    unsigned long long bytes = parse_bytes(argv[a]);
    if (bytes == 0) {
      if (me == 0)
        fprintf(stderr, "mpi_allreduce_timer: size '%s' is not accepted: "
                "expected bytes >= 1 with an optional K, M or G suffix\n", argv[a]);
      MPI_Finalize();
      return 2;
    }
    size_t count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
    if (run_size(count, me, n, iters, warmup))
      code = 1;
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
