/*
 * test_bench.c - `collsim bench` as a user runs it: the table and the CSV
 * parse, every row is checked (#wrong 0), busbw = algbw * 2(N-1)/N, sizes
 * round down to whole elements, bad flags get one line and exit 2, faults
 * exit 3, and no shm name leaks. Runs the real binary (COLLSIM_BIN, set by
 * ctest) in a child with a kill timer. No timing assertions: machines are
 * noisy.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../window/world.h"

#include "harness.h"

static double bus_factor(int n)
{
  return n > 1 ? 2.0 * (n - 1) / n : 0.0;
}

/* One parsed table row. */
typedef struct row {
  unsigned long long size, count;
  char type[8], redop[8], algo[16], wrong[16];
  double us, algbw, busbw;
} row_t;

/* Parses the table rows (lines not starting with '#'); every one must have
 * the nine columns. Returns the count. */
static int parse_table(const char *out, row_t *rows, int cap)
{
  int n = 0;
  const char *p = out;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char line[512];
    cr_assert_lt(len, sizeof(line));
    memcpy(line, p, len);
    line[len] = 0;
    p += len + (eol != NULL);
    if (line[0] == '#' || line[0] == 0)
      continue;
    cr_assert_lt(n, cap, "more rows than expected:\n%s", out);
    row_t *r = &rows[n++];
    char extra[8];
    int got = sscanf(line, "%llu %llu %7s %7s %15s %lf %lf %lf %15s %7s", &r->size,
                     &r->count, r->type, r->redop, r->algo, &r->us, &r->algbw,
                     &r->busbw, r->wrong, extra);
    cr_assert_eq(got, 9, "not the nine columns: '%s'", line);
  }
  return n;
}

/* Parses CSV rows after the header; every one must have ten fields. */
static int parse_csv(const char *out, row_t *rows, int *ranks, int cap)
{
  const char *hdr = "size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,wrong\n";
  cr_assert(strncmp(out, hdr, strlen(hdr)) == 0, "CSV header missing:\n%s", out);
  const char *p = out + strlen(hdr);
  int n = 0;
  while (*p) {
    const char *eol = strchr(p, '\n');
    cr_assert_not_null(eol, "unterminated CSV line");
    char line[512];
    size_t len = (size_t)(eol - p);
    cr_assert_lt(len, sizeof(line));
    memcpy(line, p, len);
    line[len] = 0;
    p = eol + 1;
    cr_assert_lt(n, cap);
    row_t *r = &rows[n++];
    int commas = 0;
    for (char *c = line; *c; c++)
      if (*c == ',') {
        *c = ' ';
        commas++;
      }
    cr_assert_eq(commas, 9, "not ten fields: '%s'", line);
    r->wrong[0] = 0;
    int got = sscanf(line, "%llu %llu %7s %7s %15s %d %lf %lf %lf %15s", &r->size,
                     &r->count, r->type, r->redop, r->algo, ranks, &r->us,
                     &r->algbw, &r->busbw, r->wrong);
    cr_assert(got == 9 || got == 10, "bad CSV row '%s'", line);
  }
  return n;
}

static cli_out_t r;

Test(bench, table_rows_have_the_columns_and_are_all_right, .timeout = 60)
{
  run_cli(&r, 50, "bench", "--ranks", "3", "-b", "8", "-e", "4K", "-f", "8",
          "-n", "3", "-w", "1", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "# collsim bench: allreduce, 3 ranks"), "%s", r.out);
  cr_assert(strstr(r.out, "online CPU"), "%s", r.out);
  cr_assert(strstr(r.out, "slowest rank"), "%s", r.out);
  cr_assert(strstr(r.out, "size  ") && strstr(r.out, "#wrong"), "%s", r.out);
  row_t rows[24];
  int n = parse_table(r.out, rows, 24);
  /* twophase and ring-nb take no count of this sweep (none a multiple of
   * 3): their rows are skipped, and the header says why */
  cr_assert(strstr(r.out, "# twophase: only the sizes that meet its "
                   "precondition (a count that is a multiple of the rank "
                   "count)"), "%s", r.out);
  cr_assert(strstr(r.out, "# ring-nb: only the sizes that meet its "
                   "precondition (a count that is a multiple of the rank "
                   "count)"), "%s", r.out);
  cr_assert_eq(n, 4 * 5, "4 sizes x 5 algos:\n%s", r.out);
  static const unsigned long long sizes[] = {8, 64, 512, 4096};
  static const char *algos[] = {"mesh", "ring", "host", "ring-push", "onephase"};
  for (int i = 0; i < n; i++) {
    cr_assert_eq(rows[i].size, sizes[i / 5], "%s", r.out);
    cr_assert_eq(rows[i].count, sizes[i / 5] / 4);
    cr_assert_str_eq(rows[i].algo, algos[i % 5]);
    cr_assert_str_eq(rows[i].type, "fp32");
    cr_assert_str_eq(rows[i].redop, "sum");
    cr_assert_str_eq(rows[i].wrong, "0", "row %d: #wrong %s", i, rows[i].wrong);
    cr_assert_gt(rows[i].us, 0);
    /* Printed with 3 decimals: within one rounding step each. */
    cr_assert(fabs(rows[i].busbw - rows[i].algbw * bus_factor(3)) <= 0.0015 * 3,
              "busbw %g vs algbw %g", rows[i].busbw, rows[i].algbw);
    cr_assert(fabs(rows[i].algbw - rows[i].size / (rows[i].us * 1e3)) <=
                  0.0006 + 0.01 * rows[i].algbw,
              "algbw %g vs size/time %g", rows[i].algbw,
              rows[i].size / (rows[i].us * 1e3));
  }
  cr_assert(strstr(r.out, "# Wrong elements: 0 OK"), "%s", r.out);
  for (int a = 0; a < 4; a++) {
    char want[64];
    snprintf(want, sizeof(want), "# Avg bus bandwidth (%s): ", algos[a]);
    cr_assert(strstr(r.out, want), "'%s' missing:\n%s", want, r.out);
  }
  cr_assert_eq(r.err[0], 0, "stderr not clean: %s", r.err);
}

Test(bench, csv_has_a_header_and_one_exact_row_per_size_and_algo, .timeout = 60)
{
  run_cli(&r, 50, "bench", "--csv", "--ranks", "5", "-b", "2", "-e", "8K",
          "-f", "64", "-d", "bf16", "-o", "prod", "--algo", "mesh", "-n", "2",
          "-w", "0", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_null(strchr(r.out, '#'), "comments in CSV:\n%s", r.out);
  row_t rows[8];
  int ranks = 0, n = parse_csv(r.out, rows, &ranks, 8);
  cr_assert_eq(n, 3, "sizes 2, 128, 8192:\n%s", r.out);
  static const unsigned long long sizes[] = {2, 128, 8192};
  for (int i = 0; i < n; i++) {
    cr_assert_eq(rows[i].size, sizes[i]);
    cr_assert_eq(rows[i].count, sizes[i] / 2);
    cr_assert_str_eq(rows[i].type, "bf16");
    cr_assert_str_eq(rows[i].redop, "prod");
    cr_assert_str_eq(rows[i].algo, "mesh");
    cr_assert_eq(ranks, 5);
    /* mesh prod on 5 ranks: results differ between ranks in the last bit,
     * so the per-rank oracle is what makes this 0. */
    cr_assert_str_eq(rows[i].wrong, "0", "%s", r.out);
    /* The CSV prints both with 6 decimals: each is off by up to 0.5e-6,
     * and algbw's error is multiplied by the factor. */
    cr_assert(fabs(rows[i].busbw - rows[i].algbw * bus_factor(5)) <=
                  0.5e-6 * (1 + bus_factor(5)) + 1e-4 * rows[i].busbw,
              "busbw %g vs algbw %g", rows[i].busbw, rows[i].algbw);
  }
}

Test(bench, sizes_round_down_to_whole_elements_at_least_one, .timeout = 60)
{
  /* 1 -> 1 element (4 B), 3 -> 1 element again (dropped), 9 -> 2 elements. */
  run_cli(&r, 50, "bench", "--csv", "-b", "1", "-e", "9", "-f", "3", "--algo",
          "ring", "-n", "1", "-w", "0", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  row_t rows[8];
  int ranks = 0, n = parse_csv(r.out, rows, &ranks, 8);
  cr_assert_eq(n, 2, "%s", r.out);
  cr_assert(rows[0].size == 4 && rows[0].count == 1, "%s", r.out);
  cr_assert(rows[1].size == 8 && rows[1].count == 2, "%s", r.out);
  cr_assert_eq(ranks, 2, "default ranks");
}

Test(bench, staging_and_no_check_show_na_in_wrong, .timeout = 60)
{
  run_cli(&r, 50, "bench", "--staging", "-c", "0", "-b", "64K", "-e", "64K",
          "--algo", "host", "-n", "2", "-w", "1", "--tile-bytes", "1024", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "including stage-in and stage-out"), "%s", r.out);
  cr_assert(strstr(r.out, "# Wrong elements: not checked"), "%s", r.out);
  row_t rows[5];
  cr_assert_eq(parse_table(r.out, rows, 5), 1, "%s", r.out);
  cr_assert_str_eq(rows[0].wrong, "N/A");
  /* --staging with -c 1 checks the last timed call (2048 elements: every
   * algorithm but twophase and ring-nb at 3 ranks). */
  run_cli(&r, 50, "bench", "--staging", "-b", "4K", "-e", "4K", "-d", "fp16",
          "--ranks", "3", "-n", "2", "-w", "1", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_eq(parse_table(r.out, rows, 5), 5, "%s", r.out);
  for (int i = 0; i < 5; i++)
    cr_assert_str_eq(rows[i].wrong, "0", "%s", r.out);
}

Test(bench, host_is_skipped_above_16_ranks_with_algo_all, .timeout = 60)
{
  run_cli(&r, 50, "bench", "--ranks", "17", "-b", "8", "-e", "8", "-n", "1",
          "-w", "0", "--timeout", "20", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "# host: skipped"), "%s", r.out);
  row_t rows[5];
  cr_assert_eq(parse_table(r.out, rows, 5), 4, "%s", r.out);
  cr_assert_str_eq(rows[0].algo, "mesh");
  cr_assert_str_eq(rows[1].algo, "ring");
  cr_assert_str_eq(rows[2].algo, "ring-push");
  cr_assert_str_eq(rows[3].algo, "onephase");
  cr_assert(fabs(rows[0].busbw - rows[0].algbw * bus_factor(17)) <= 0.01);
}

static void expect_usage(const char *needle, const char *a1, const char *a2,
                         const char *a3, const char *a4)
{
  run_cli(&r, 20, "bench", a1, a2, a3, a4, NULL);
  cr_assert_eq(r.status, 2, "%s %s %s %s -> %d: %s", a1, a2 ? a2 : "",
               a3 ? a3 : "", a4 ? a4 : "", r.status, r.err);
  cr_assert_eq(count_lines(r.err), 1, "not one line:\n%s", r.err);
  cr_assert(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
  cr_assert_eq(r.out[0], 0, "printed to stdout: %s", r.out);
}

Test(bench, bad_flags_get_one_line_and_exit_2, .timeout = 60)
{
  expect_usage("-b '0' is not accepted: expected bytes from 1 to 64G", "-b",
               "0", NULL, NULL);
  expect_usage("-e '4X'", "-e", "4X", NULL, NULL);
  expect_usage("-b '1T'", "-b", "1T", NULL, NULL);
  expect_usage("expected at least -b", "-b", "8M", "-e", "4M");
  expect_usage("-f '1' is not accepted: expected a whole number from 2 to 1024",
               "-f", "1", NULL, NULL);
  expect_usage("-n '0'", "-n", "0", NULL, NULL);
  expect_usage("-w 'x'", "-w", "x", NULL, NULL);
  expect_usage("-c '2' is not accepted", "-c", "2", NULL, NULL);
  expect_usage("-d 'fp8' is not accepted: expected fp32, fp16, bf16 or all", "-d",
               "fp8", NULL, NULL);
  expect_usage("-o 'avg'", "-o", "avg", NULL, NULL);
  expect_usage("--ranks '65' is not accepted: expected a whole number from 1 to 64",
               "--ranks", "65", NULL, NULL);
  expect_usage("--ranks 17 is not accepted for --algo host", "--algo", "host",
               "--ranks", "17");
  expect_usage("--algo 'tree' is not accepted: expected mesh, ring, host, ring-push, twophase, ring-nb, onephase, host-push, ring-bidir, ibing or all",
               "--algo", "tree", NULL, NULL);
  expect_usage("--tile-bytes '1000'", "--tile-bytes", "1000", NULL, NULL);
  expect_usage("unknown option '--bogus'", "--bogus", NULL, NULL, NULL);
  expect_usage("option '-n' needs a value", "-n", NULL, NULL, NULL);
  expect_usage("unexpected argument 'extra'", "extra", NULL, NULL, NULL);
  expect_usage("rank 5 is not accepted", "--fault", "5:segv", NULL, NULL);
  expect_usage("--timeout '0'", "--timeout", "0", NULL, NULL);
  expect_usage("--trace '/tmp/collsim-test-bench-never.cstrace' is not "
               "accepted: a sweep is many runs", "--trace",
               "/tmp/collsim-test-bench-never.cstrace", NULL, NULL);
  cr_assert_neq(access("/tmp/collsim-test-bench-never.cstrace", F_OK), 0);
  expect_usage("-n 1 is not accepted with --trace-cost", "--trace-cost", "-n",
               "1", NULL);
  setenv("TMPDIR", "/nonexistent-collsim-dir", 1);
  expect_usage("--trace-cost: cannot create a temporary trace in "
               "'/nonexistent-collsim-dir': No such file or directory; expected "
               "$TMPDIR (or /tmp when it is unset) to name a writable directory",
               "--trace-cost", "-e", "1K", NULL);
  unsetenv("TMPDIR");
  /* 2 windows of 64G plus staging fit in no test machine's /dev/shm. */
  expect_usage("does not fit", "-b", "64G", "-e", "64G");
}

/* --trace-cost: the CSV gains traced_us, trace_ratio (= traced_us /
 * time_us), events_per_call and records; exactly the traced calls were
 * recorded (timed calls 1, 2, 5, 6 of 0..7, warm-up call 1 of 0..1, the
 * checked call, and the one stage-in: between the 4 timed traced calls'
 * worth of records and all 11 calls' worth, with wait-begin records at most
 * one per wait); the temporary trace is gone afterwards. */
Test(bench, trace_cost_times_traced_calls_beside_untraced_ones, .timeout = 120)
{
  char dir[] = "/tmp/collsim-test-bench-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  setenv("TMPDIR", dir, 1);
  run_cli(&r, 60, "bench", "--trace-cost", "--csv", "--ranks", "3", "-b", "64K",
          "-e", "256K", "--algo", "all", "-n", "8", "-w", "2", NULL);
  unsetenv("TMPDIR");
  int left = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d)) != NULL;)
    if (e->d_name[0] != '.') {
      char f[300];
      snprintf(f, sizeof(f), "%s/%s", dir, e->d_name);
      unlink(f);
      left++;
    }
  closedir(d);
  rmdir(dir);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_eq(left, 0, "%d temporary file(s) left in %s", left, dir);
  const char *hdr = "size,count,type,redop,algo,ranks,time_us,algbw_gbps,"
                    "busbw_gbps,wrong,traced_us,trace_ratio,events_per_call,records\n";
  cr_assert(strncmp(r.out, hdr, strlen(hdr)) == 0, "%s", r.out);
  int rows = 0;
  for (const char *p = strchr(r.out, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
    unsigned long long size, count, events, records;
    char type[8], redop[8], algo[16];
    int ranks, wrong;
    double us, algbw, busbw, traced, ratio;
    int got = sscanf(p, "%llu,%llu,%7[^,],%7[^,],%15[^,],%d,%lf,%lf,%lf,%d,%lf,%lf,%llu,%llu",
                     &size, &count, type, redop, algo, &ranks, &us, &algbw, &busbw,
                     &wrong, &traced, &ratio, &events, &records);
    cr_assert_eq(got, 14, "bad row: %.200s", p);
    cr_assert_eq(wrong, 0, "%.200s", p);
    cr_assert(us > 0 && traced > 0);
    cr_assert(fabs(ratio - traced / us) <= 1e-3 * ratio + 1e-4, "ratio %f, "
              "%f / %f", ratio, traced, us);
    cr_assert_gt(events, 0);
    cr_assert_geq(records, 4 * events * 3, "%s: %llu records, %llu events per "
                  "call: the traced calls were not all recorded", algo, records, events);
    cr_assert_lt(records, 11 * events * 3, "%s: %llu records, %llu events per "
                 "call: the untraced calls were recorded too", algo, records, events);
    rows++;
  }
  cr_assert_eq(rows, 2 * 5, "%s", r.out);

  run_cli(&r, 60, "bench", "--trace-cost", "-b", "64K", "-e", "64K", "--algo",
          "ring", "-n", "4", "-w", "0", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "traced(us)   ratio  ns/event"), "%s", r.out);
  cr_assert(strstr(r.out, "untraced median (2 calls), traced(us) the traced "
                   "median (2)"), "%s", r.out);
}

/* --floor: the CSV gains floor_us and floor_ratio (= floor_us / time_us);
 * the floor is measured once per size, so every algorithm of a size shows
 * the same one; the table gains the two columns. */
Test(bench, floor_adds_one_floor_per_size_and_its_ratio, .timeout = 120)
{
  run_cli(&r, 60, "bench", "--floor", "--csv", "--ranks", "2", "-b", "4K",
          "-e", "64K", "-f", "16", "--algo", "all", "-n", "3", "-w", "1", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  const char *hdr = "size,count,type,redop,algo,ranks,time_us,algbw_gbps,"
                    "busbw_gbps,wrong,floor_us,floor_ratio\n";
  cr_assert(strncmp(r.out, hdr, strlen(hdr)) == 0, "%s", r.out);
  int rows = 0;
  unsigned long long last_size = 0;
  double last_floor = 0;
  for (const char *p = strchr(r.out, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
    unsigned long long size, count;
    char type[8], redop[8], algo[16];
    int ranks, wrong;
    double us, algbw, busbw, fl, ratio;
    int got = sscanf(p, "%llu,%llu,%7[^,],%7[^,],%15[^,],%d,%lf,%lf,%lf,%d,%lf,%lf",
                     &size, &count, type, redop, algo, &ranks, &us, &algbw,
                     &busbw, &wrong, &fl, &ratio);
    cr_assert_eq(got, 12, "bad row: %.200s", p);
    cr_assert_eq(wrong, 0, "%.200s", p);
    cr_assert(us > 0 && fl > 0, "%.200s", p);
    cr_assert(fabs(ratio - fl / us) <= 1e-3 * ratio + 1e-4, "ratio %f, %f / %f",
              ratio, fl, us);
    if (size == last_size)
      cr_assert_eq(fl, last_floor, "two floors for size %llu", size);
    last_size = size;
    last_floor = fl;
    rows++;
  }
  cr_assert_eq(rows, 2 * 10, "2 sizes x 10 algorithms (2 ranks: twophase, ring-nb, host-push, ring-bidir and ibing take both):\n%s", r.out);

  run_cli(&r, 60, "bench", "--floor", "-b", "4K", "-e", "4K", "--algo", "ring",
          "-n", "2", "-w", "0", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "floor(us)  floor/time"), "%s", r.out);
}

Test(bench, fault_aborts_the_sweep_with_exit_3, .timeout = 60)
{
  run_cli(&r, 30, "bench", "--ranks", "3", "-b", "8", "-e", "64K", "-n", "2",
          "-w", "0", "--fault", "1:segv:5", NULL);
  cr_assert_eq(r.status, 3, "%s%s", r.out, r.err);
  cr_assert(strstr(r.err, "rank 1: killed by SIGSEGV at event 5"), "%s", r.err);
  cr_assert_null(strstr(r.out, "# Avg bus bandwidth"), "%s", r.out);
}

Test(bench, help_lists_the_flags_and_the_subcommand_is_registered)
{
  run_cli(&r, 10, "bench", "--help", NULL);
  cr_assert_eq(r.status, 0);
  static const char *flags[] = {"-b, --minbytes", "-e, --maxbytes", "-f,",
                                "-n, --iters", "-w,", "-c, --check", "-d,",
                                "-o,", "--ranks N", "--algo A", "--csv", "--floor",
                                "--staging", "--tile-bytes", "--trace-cost",
                                "--fault", "--timeout", "Exit status"};
  for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
    cr_assert(strstr(r.out, flags[i]), "'%s' missing from help", flags[i]);
  cr_assert_null(strstr(r.out, "--trace FILE"), "bench takes no --trace FILE");
  run_cli(&r, 10, "--help", NULL);
  cr_assert(strstr(r.out, "  bench "), "%s", r.out);
  run_cli(&r, 10, "help", "bench", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "usage: collsim bench"), "%s", r.out);
}

Test(bench, all_dtypes_and_all_ops_sweep_every_pair, .timeout = 120)
{
  /* nccl-tests' -d all -o all: one CSV, every (dtype, op) pair in order,
   * each with every size (bytes; counts follow the dtype) and algorithm. */
  run_cli(&r, 110, "bench", "--csv", "--ranks", "3", "-b", "8", "-e", "128",
          "-f", "16", "-d", "all", "-o", "all", "--algo", "ring", "-n", "1",
          "-w", "0", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  row_t rows[64];
  int ranks = 0, n = parse_csv(r.out, rows, &ranks, 64);
  static const char *const types[] = {"fp32", "fp16", "bf16"};
  static const char *const ops[] = {"sum", "max", "min", "prod"};
  cr_assert_eq(n, 3 * 4 * 2, "3 dtypes x 4 ops x sizes 8, 128:\n%s", r.out);
  for (int i = 0; i < n; i++) {
    cr_assert_str_eq(rows[i].type, types[i / 8], "row %d:\n%s", i, r.out);
    cr_assert_str_eq(rows[i].redop, ops[i / 2 % 4], "row %d", i);
    cr_assert_eq(rows[i].size, i % 2 ? 128 : 8);
    cr_assert_eq(rows[i].count, rows[i].size / (i < 8 ? 4 : 2));
    cr_assert_str_eq(rows[i].wrong, "0");
  }
  run_cli(&r, 20, "bench", "-d", "fp64", NULL);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "-d 'fp64' is not accepted: expected fp32, fp16, bf16 or all"),
            "%s", r.err);
}
