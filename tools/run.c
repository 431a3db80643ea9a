/*
 * run.c - `collsim run`: one verified allreduce run. Builds the world for
 * the configuration, fills or reads the inputs, launches the ranks, checks
 * every rank's result bit for bit against the oracle (collectives/oracle.h)
 * and every signal cell against the reference's final values, and prints a
 * short summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../collectives/allreduce.h"
#include "../collectives/geometry.h"
#include "../collectives/oracle.h"
#include "../sim/launch.h"
#include "../window/cs_error.h"
#include "cli.h"
#include "npy.h"
#include "run.h"

static const char run_help[] =
    "usage: collsim run [--algo mesh|ring|host] [--ranks N] [--count C]\n"
    "                   [--dtype fp32|fp16|bf16] [--op sum|max|min|prod]\n"
    "                   [--fill arange|pto|random] [--seed S]\n"
    "                   [--input IN.npy] [--output OUT.npy] [--iters K]\n"
    "                   [--tile-bytes B] [--schedule S] [--memory-model M]\n"
    "                   [--bug NAME] [--list-bugs] [--fault RANK:KIND[:EVENT]]\n"
    "                   [--timeout SECONDS] [--trace FILE]\n"
    "\n"
    "Runs the allreduce of PyPTO PR #2161 on N forked rank processes and\n"
    "verifies every rank's result bit for bit against an independent oracle\n"
    "that folds the inputs in the algorithm's own association order (ring:\n"
    "identical on all ranks; mesh and host: own value first, then the peers\n"
    "ascending). Also reports the largest error against a float64 reduction\n"
    "and checks that every signal cell reached the reference's final value\n"
    "and returned to 0 after the self-clearing epilogue.\n"
    "\n"
    "  --algo A         mesh, ring or host (default ring)\n"
    "  --ranks N        ranks: 1..64, host 1..16 (default 4, or the input's rows)\n"
    "  --count C        elements per rank, >= 1 (default 65537, or the input's\n"
    "                   columns)\n"
    "  --dtype D        fp32, fp16 or bf16 (default fp32, or the input's)\n"
    "  --op O           sum, max, min or prod (default sum)\n"
    "  --fill F         inputs: arange (100*r + i), pto (1 + 0.125*r +\n"
    "                   0.0625*(i mod 5)) or random (seeded; [-1,1), prod\n"
    "                   [0.9,1.1)). Default: as the reference's tests choose\n"
    "                   (pto for prod, and for fp16/bf16 on mesh and ring;\n"
    "                   arange otherwise)\n"
    "  --seed S         seed of the random fill (default 1)\n"
    "  --input IN.npy   inputs from a .npy of shape (N, C): '<f4' fp32, '<f2'\n"
    "                   fp16, '<u2' bf16 bits; row r is rank r's input\n"
    "  --output OUT.npy write every rank's result, shape (N, C), same dtype\n"
    "  --iters K        allreduce calls on one world (default 10); the time\n"
    "                   printed is the median over calls of the slowest rank\n"
    "  --tile-bytes B   UB tile size (default 16384, the reference's)\n"
    "  --schedule S     controlled mode: one actor (a rank, or a rank's DMA\n"
    "                   engine landing a posted op) runs at a time, chosen by\n"
    "                   random:SEED, pct:SEED:DEPTH[:STEPS] (PCT, DEPTH-1\n"
    "                   priority changes in the first STEPS steps, default\n"
    "                   2000), latest (land posted ops only when forced,\n"
    "                   notifies first), replay:TRACE or interactive (you pick\n"
    "                   each step on the terminal). No actor able to run is a\n"
    "                   deadlock, reported with the wavefront (exit 3)\n"
    "  --memory-model M sc (posted stores and notifies land at issue; the\n"
    "                   default), fifo (later, in order) or relaxed (in any\n"
    "                   order unless a fence separates them); fifo and relaxed\n"
    "                   need --schedule\n"
    "  --bug NAME       run with a known defect of reference §8 (see\n"
    "                   --list-bugs, which also prints the options that make\n"
    "                   each one fail)\n"
    CS_CLI_COMMON_HELP
    "\n" CS_CLI_EXIT_HELP;

enum { OPT_ALGO = 2000, OPT_RANKS, OPT_COUNT, OPT_DTYPE, OPT_OP, OPT_FILL,
       OPT_SEED, OPT_INPUT, OPT_OUTPUT, OPT_ITERS, OPT_TILE, OPT_SCHEDULE,
       OPT_MM, OPT_BUG, OPT_LIST_BUGS };


static int parse(int argc, char **argv, run_opts_t *o)
{
  static const struct option longopts[] = {
      {"algo", required_argument, 0, OPT_ALGO},
      {"ranks", required_argument, 0, OPT_RANKS},
      {"count", required_argument, 0, OPT_COUNT},
      {"dtype", required_argument, 0, OPT_DTYPE},
      {"op", required_argument, 0, OPT_OP},
      {"fill", required_argument, 0, OPT_FILL},
      {"seed", required_argument, 0, OPT_SEED},
      {"input", required_argument, 0, OPT_INPUT},
      {"output", required_argument, 0, OPT_OUTPUT},
      {"iters", required_argument, 0, OPT_ITERS},
      {"tile-bytes", required_argument, 0, OPT_TILE},
      {"schedule", required_argument, 0, OPT_SCHEDULE},
      {"memory-model", required_argument, 0, OPT_MM},
      {"bug", required_argument, 0, OPT_BUG},
      {"list-bugs", no_argument, 0, OPT_LIST_BUGS},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  int opt, bad = 0, v;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (cs_cli_common_opt("run", opt, optarg, &o->com, &bad)) {
      if (bad)
        return -1;
      continue;
    }
    switch (opt) {
    case OPT_ALGO:
      if ((v = cs_algo_parse(optarg)) < 0) {
        cs_cli_error("run", "--algo '%s' is not accepted: expected mesh, ring "
                     "or host", optarg);
        return -1;
      }
      o->cfg.algo = (cs_algo_t)v;
      break;
    case OPT_RANKS:
      if (cs_cli_u32("run", "--ranks", optarg, 1, CS_AR_MAX_RANKS, &o->cfg.nranks) < 0)
        return -1;
      o->have_ranks = 1;
      break;
    case OPT_COUNT:
      if (cs_cli_u64("run", "--count", optarg, 1, 1ull << 36, &o->cfg.count) < 0)
        return -1;
      o->have_count = 1;
      break;
    case OPT_DTYPE:
      if (cs_cli_dtype("run", "--dtype", optarg, &o->cfg.dtype) < 0)
        return -1;
      o->have_dtype = 1;
      break;
    case OPT_OP:
      if (cs_cli_op("run", "--op", optarg, &o->cfg.op) < 0)
        return -1;
      break;
    case OPT_FILL:
      if (!strcmp(optarg, "arange"))
        o->fill = CS_FILL_ARANGE;
      else if (!strcmp(optarg, "pto"))
        o->fill = CS_FILL_PTO;
      else if (!strcmp(optarg, "random"))
        o->fill = CS_FILL_RANDOM;
      else {
        cs_cli_error("run", "--fill '%s' is not accepted: expected arange, pto "
                     "or random", optarg);
        return -1;
      }
      break;
    case OPT_SEED:
      if (cs_cli_u64("run", "--seed", optarg, 0, UINT64_MAX - 1, &o->seed) < 0)
        return -1;
      break;
    case OPT_INPUT: o->input = optarg; break;
    case OPT_OUTPUT: o->output = optarg; break;
    case OPT_ITERS:
      if (cs_cli_u32("run", "--iters", optarg, 1, 1000000, &o->cfg.iters) < 0)
        return -1;
      break;
    case OPT_TILE:
      if (cs_cli_u32("run", "--tile-bytes", optarg, 1024, 1u << 24, &o->cfg.tile_bytes) < 0)
        return -1;
      if (o->cfg.tile_bytes % 32) {
        cs_cli_error("run", "--tile-bytes '%s' is not accepted: expected a "
                     "multiple of 32", optarg);
        return -1;
      }
      break;
    case OPT_SCHEDULE: {
      char why[256];
      const char *file = NULL;
      if (cs_sched_parse(optarg, &o->sched, &file, why, sizeof(why)) < 0) {
        cs_cli_error("run", "%s", why);
        return -1;
      }
      o->schedule_str = optarg;
      o->replay_file = file;
      break;
    }
    case OPT_MM:
      if (cs_cli_mm("run", "--memory-model", optarg, &o->sched.model) < 0)
        return -1;
      o->model_set = 1;
      break;
    case OPT_BUG:
      if ((v = cs_bug_parse(optarg)) < 0) {
        cs_cli_error("run", "--bug '%s' is not accepted: see 'collsim run "
                     "--list-bugs'", optarg);
        return -1;
      }
      o->cfg.bug = (uint32_t)v;
      break;
    case OPT_LIST_BUGS:
      cs_run_list_bugs(stdout);
      return 1;
    case 'h':
      fputs(run_help, stdout);
      return 1;
    default:
      fprintf(stderr, "Try 'collsim run --help'.\n");
      return -1;
    }
  }
  if (optind < argc) {
    cs_cli_error("run", "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (o->input && o->fill != CS_FILL_DEFAULT) {
    cs_cli_error("run", "--fill and --input are exclusive: give one");
    return -1;
  }
  if (o->model_set &&
      cs_cli_mm_scheduled("run", o->sched.model, o->schedule_str != NULL) < 0)
    return -1;
  return 0;
}

void cs_run_list_bugs(FILE *out)
{
  fprintf(out, "Bug mutations (--bug NAME); each fails under the options shown:\n\n");
  for (int i = 1; i < CS_NBUGS; i++)
    fprintf(out, "%-26s %s\n%26s fails: %s\n%26s with: %s\n\n",
            cs_bug_table[i].name, cs_bug_table[i].what, "",
            cs_bug_table[i].fails, "", cs_bug_table[i].recipe);
}

/* Takes N, C and the dtype from the input file, or checks them against
 * the options. Returns 0 or -1 (printed). */
static int load_input(run_opts_t *o, cs_npy_t *a)
{
  char why[512];
  if (cs_npy_read(o->input, a, why, sizeof(why)) < 0) {
    cs_cli_error("run", "--input %s", why);
    return -1;
  }
  const char *clash = NULL;
  if (o->have_dtype && a->dtype != o->cfg.dtype)
    clash = "dtype";
  else if (o->have_ranks && a->rows != o->cfg.nranks)
    clash = "rows (ranks)";
  else if (o->have_count && a->cols != o->cfg.count)
    clash = "columns (count)";
  else if (a->rows > CS_AR_MAX_RANKS)
    clash = "rows (ranks: at most 64)";
  if (clash) {
    cs_cli_error("run", "--input %s: its %s (%s, shape (%llu, %llu)) do not "
                 "match the options", o->input, clash, cs_dtype_name(a->dtype),
                 (unsigned long long)a->rows, (unsigned long long)a->cols);
    free(a->data);
    a->data = NULL;
    return -1;
  }
  o->cfg.dtype = a->dtype;
  o->cfg.nranks = (uint32_t)a->rows;
  o->cfg.count = a->cols;
  return 0;
}

static void print_bits(cs_dtype_t t, const void *buf, uint64_t i)
{
  if (t == CS_FP32) {
    uint32_t b;
    memcpy(&b, (const uint8_t *)buf + i * 4, 4);
    printf("0x%08x (%.9g)", b, cs_oracle_decode(t, buf, i));
  } else {
    printf("0x%04x (%.6g)", ((const uint16_t *)buf)[i], cs_oracle_decode(t, buf, i));
  }
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void human_bytes(uint64_t b, char *out, size_t n)
{
  if (b >= (1ull << 20))
    snprintf(out, n, "%.1f MiB", (double)b / (1 << 20));
  else if (b >= 1024)
    snprintf(out, n, "%.1f KiB", (double)b / 1024);
  else
    snprintf(out, n, "%llu B", (unsigned long long)b);
}

/* Verifies, prints the summary. Returns the exit code. */
static int verify(const run_opts_t *o, cs_world_t *w, cs_fill_t fill,
                  const uint8_t *inputs)
{
  const cs_ar_cfg_t *c = &o->cfg;
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  uint64_t count = c->count, bytes = count * es;
  char hb[32];
  human_bytes(bytes, hb, sizeof(hb));
  printf("collsim run: %s allreduce, %u rank%s, %llu x %s (%s per rank), %s, "
         "input %s%s%s, %u call%s\n",
         cs_algo_name(c->algo), n, n == 1 ? "" : "s", (unsigned long long)count,
         cs_dtype_name(c->dtype), hb, cs_op_name(c->op), cs_fill_name(fill),
         o->input ? " " : "", o->input ? o->input : "", c->iters,
         c->iters == 1 ? "" : "s");

  /* Time: per call the slowest rank, then the median over calls. */
  uint64_t *per = calloc(c->iters, sizeof(uint64_t));
  uint32_t signal_bad = 0, differ = 0;
  for (uint32_t r = 0; r < n; r++) {
    cs_ar_stats_t *st = (cs_ar_stats_t *)(cs_world_output(w, r) + cs_ar_stats_off(c));
    signal_bad += st->signal_bad;
    if (st->iters_differ > differ)
      differ = st->iters_differ; /* calls, on the rank that saw most */
    for (uint32_t it = 0; it < c->iters; it++)
      if (st->ns[it] > per[it])
        per[it] = st->ns[it];
  }
  qsort(per, c->iters, sizeof(uint64_t), cmp_u64);
  double us = (double)per[c->iters / 2] / 1e3;
  free(per);
  double algbw = (double)bytes / (us * 1e3); /* GB/s */
  double busbw = algbw * (n > 1 ? 2.0 * (n - 1) / n : 0.0);
  printf("time per call: %.1f us (median of %u, slowest rank), algbw %.3f GB/s, "
         "busbw %.3f GB/s\n", us, c->iters, algbw, busbw);

  /* Results against the oracle, and against float64. */
  uint8_t *want = malloc(bytes);
  uint64_t wrong = 0;
  int64_t bad_rank = -1;
  uint64_t bad_i = 0;
  double max_abs = 0, max_rel = 0, rtol, atol;
  uint64_t tol_fail = 0;
  cs_oracle_tolerance(c->dtype, &rtol, &atol);
  for (uint32_t r = 0; r < n; r++) {
    const uint8_t *got = cs_world_output(w, r);
    if (r == 0 || c->algo != CS_ALGO_RING)
      cs_oracle_expect(c->algo, c->dtype, c->op, n, count, inputs, r, want);
    for (uint64_t i = 0; i < count; i++) {
      if (!cs_oracle_same(c->dtype, got, want, i)) {
        if (wrong++ == 0) {
          bad_rank = r;
          bad_i = i;
        }
      }
      if (r == 0 || c->algo != CS_ALGO_RING) {
        double ref = cs_oracle_f64(c->dtype, c->op, n, count, inputs, i);
        double g = cs_oracle_decode(c->dtype, got, i);
        double err = fabs(g - ref);
        if (isfinite(ref) && isfinite(g)) {
          if (err > max_abs)
            max_abs = err;
          if (ref != 0 && err / fabs(ref) > max_rel)
            max_rel = err / fabs(ref);
          if (err > atol + rtol * fabs(ref))
            tol_fail++;
        } else if (!(isnan(ref) && isnan(g)) && g != ref) {
          tol_fail++;
        }
      }
    }
  }
  if (wrong == 0) {
    printf("result: bit-exact on all %u rank%s against the oracle (%s)\n",
           n, n == 1 ? "" : "s",
           c->algo == CS_ALGO_RING
               ? "ring fold order, identical on every rank"
               : "order: own value first, then peers ascending");
  } else {
    const uint8_t *got = cs_world_output(w, (uint32_t)bad_rank);
    cs_oracle_expect(c->algo, c->dtype, c->op, n, count, inputs,
                     (uint32_t)bad_rank, want);
    printf("result: WRONG: %llu element%s differ from the oracle; first: rank "
           "%lld index %llu: expected ", (unsigned long long)wrong,
           wrong == 1 ? "" : "s", (long long)bad_rank,
           (unsigned long long)bad_i);
    print_bits(c->dtype, want, bad_i);
    printf(", got ");
    print_bits(c->dtype, got, bad_i);
    printf("\n");
  }
  free(want);
  printf("error vs float64: max abs %.3g, max rel %.3g; reference tolerance "
         "(rtol %g, atol %g): %s\n", max_abs, max_rel, rtol, atol,
         tol_fail ? "EXCEEDED" : "within");

  /* Signals: final values before the last epilogue, 0 after it. */
  uint64_t cells = cs_ar_signal_cells(c), not_zero = 0;
  for (uint32_t r = 0; r < n; r++) {
    const int32_t *sig = (const int32_t *)(cs_world_window(w, r) +
                                           w->ctl->layout.slot[CS_AR_SLOT_SIGNAL].off);
    for (uint64_t k = 0; k < cells; k++)
      not_zero += sig[k] != 0;
  }
  const char *what = c->algo == CS_ALGO_MESH ? "1+C" : c->algo == CS_ALGO_RING
                                                           ? "2K per row"
                                                           : "1+ceil(n/256)";
  if (n == 1)
    printf("signals: none (one rank)\n");
  else if (signal_bad == 0 && not_zero == 0)
    printf("signals: every non-self cell reached %s = %d, then the epilogue "
           "returned all %llu cells to 0\n", what, cs_ar_signal_final(c),
           (unsigned long long)(cells * n));
  else
    printf("signals: WRONG: %u cell%s missed %s = %d, %llu cell%s not back "
           "to 0\n", signal_bad, signal_bad == 1 ? "" : "s", what,
           cs_ar_signal_final(c), (unsigned long long)not_zero,
           not_zero == 1 ? "" : "s");
  if (differ)
    printf("repeated calls: WRONG: %u call%s gave a result different from "
           "the first\n", differ, differ == 1 ? "" : "s");
  return (wrong || signal_bad || not_zero || differ) ? CS_EXIT_WRONG : CS_EXIT_OK;
}

int cs_cmd_run(int argc, char **argv)
{
  run_opts_t o = {0};
  o.cfg.algo = CS_ALGO_RING;
  o.cfg.dtype = CS_FP32;
  o.cfg.op = CS_SUM;
  o.cfg.nranks = 4;
  o.cfg.count = 65537;
  o.cfg.tile_bytes = CS_TILE_BYTES;
  o.cfg.iters = 10;
  o.seed = 1;
  o.cmd = "run";
  int rc = parse(argc, argv, &o);
  if (rc != 0)
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  if (o.replay_file) {
    char why[512];
    if (cs_trace_load(o.replay_file, &o.replay, why, sizeof(why)) < 0) {
      cs_cli_error("run", "--schedule replay: %s", why);
      return CS_EXIT_USAGE;
    }
    if (cs_run_replay_steps(&o) < 0) {
      cs_trace_free(&o.replay);
      return CS_EXIT_USAGE;
    }
  }
  rc = cs_run_execute(&o);
  free(o.steps);
  cs_trace_free(&o.replay);
  return rc;
}

int cs_run_replay_steps(run_opts_t *o)
{
  uint64_t k = 0;
  o->steps = malloc((o->replay.n ? o->replay.n : 1) * sizeof(cs_trace_rec_t));
  if (!o->steps) {
    cs_cli_error(o->cmd, "out of memory");
    return -1;
  }
  for (uint64_t i = 0; i < o->replay.n; i++)
    if (cs_sched_is_step(o->replay.rec[i].kind))
      o->steps[k++] = o->replay.rec[i];
  o->sched.replay = o->steps;
  o->sched.nreplay = k;
  o->sched.strategy = CS_SCHED_REPLAY;
  return 0;
}

/* Refuses an --output path that cannot be written before the run, not
 * after it. Returns 0 or -1 (printed). */
static int output_ok(const char *cmd, const char *path)
{
  struct stat sb;
  if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
    cs_cli_error(cmd, "--output %s is a directory: expected a file name", path);
    return -1;
  }
  char *copy = strdup(path);
  const char *dir = copy ? dirname(copy) : ".";
  int ok = access(dir, W_OK | X_OK) == 0;
  if (!ok)
    cs_cli_error(cmd, "--output %s: cannot write in directory %s: %s", path,
                 dir, strerror(errno));
  free(copy);
  return ok ? 0 : -1;
}

int cs_run_execute(run_opts_t *o_)
{
  run_opts_t o = *o_; /* the fields below are shared with the caller's */
  int rc;
  if (o.output && output_ok(o.cmd, o.output) < 0)
    return CS_EXIT_USAGE;
  cs_npy_t a = {0};
  if (o.input && load_input(&o, &a) < 0)
    return CS_EXIT_USAGE;
  if (o.cfg.iters < cs_bug_min_calls(o.cfg.bug))
    o.cfg.iters = cs_bug_min_calls(o.cfg.bug); /* some show on a second call */
  char why[256];
  why[0] = 0;
  if (cs_ar_check(&o.cfg, why, sizeof(why)) < 0 ||
      cs_cli_common_check(o.cmd, &o.com, o.cfg.nranks) < 0) {
    if (why[0])
      cs_cli_error(o.cmd, "%s", why);
    free(a.data);
    return CS_EXIT_USAGE;
  }
  why[0] = 0;

  const cs_ar_cfg_t *c = &o.cfg;
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  uint64_t bytes = c->count * es;
  cs_fill_t fill = o.input ? CS_FILL_INPUT
                           : (o.fill ? o.fill : cs_ar_default_fill(c));
  cs_layout_t l;
  cs_world_t w;
  int controlled = o.sched.strategy != CS_SCHED_FREE;
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = o.com.timeout_ns,
                        .trace_bytes = cs_cli_trace_bytes(&o.com, n),
                        .sched_bytes = controlled ? cs_sched_area_bytes(n, (1u << 20) + 2ull * c->tile_bytes) : 0};
  /* The launcher also holds the inputs, one rank's expected result and the
   * output copy beside the region: refuse up front what cannot fit. */
  if ((rc = cs_ar_layout(c, &l)) == 0) {
    uint64_t region = cs_world_region_bytes(&l, n, &wo);
    uint64_t need = region + 2 * bytes * n + bytes, avail = cs_mem_available();
    if (region == 0 || need > avail) {
      cs_cli_error(o.cmd, "%u ranks x %llu elements need about %.1f GiB of "
                   "memory; %.1f GiB are available", n,
                   (unsigned long long)c->count, (double)need / (1ull << 30),
                   (double)avail / (1ull << 30));
      free(a.data);
      return CS_EXIT_USAGE;
    }
  }
  if (rc < 0 || (rc = cs_world_create(&w, &l, n, &wo)) < 0) {
    cs_cli_error(o.cmd, "cannot hold %u windows of %llu bytes: %s", n,
                 (unsigned long long)l.win_bytes, cs_strerror(rc));
    free(a.data);
    return CS_EXIT_USAGE;
  }
  /* Inputs: kept contiguous for the oracle, copied to each rank's io. */
  uint8_t *inputs = o.input ? a.data : malloc(bytes * n);
  if (!inputs) {
    cs_cli_error(o.cmd, "out of memory for %u x %llu bytes of input", n,
                 (unsigned long long)bytes);
    cs_world_destroy(&w);
    return CS_EXIT_ABORTED;
  }
  for (uint32_t r = 0; r < n; r++) {
    if (!o.input)
      cs_ar_fill(fill, c, o.seed, r, inputs + r * bytes);
    memcpy(cs_world_input(&w, r), inputs + r * bytes, bytes);
  }
  if (o.expect_hash && cs_trace_fnv64(inputs, bytes * n) != o.expect_hash) {
    cs_cli_error(o.cmd, "the inputs differ from the recorded run's (input "
                 "hash mismatch)%s", o.input ? ": is it the same --input file?" : "");
    free(inputs);
    cs_world_destroy(&w);
    return CS_EXIT_USAGE;
  }

  cs_launch_opts_t lo = {.fault = o.com.fault, .sched = controlled ? &o.sched : NULL};
  cs_trace_header_t th = {.count = c->count, .algo = c->algo, .dtype = c->dtype,
                          .op = c->op, .fill = fill, .seed = o.seed,
                          .input_hash = cs_trace_fnv64(inputs, bytes * n),
                          .tile_bytes = c->tile_bytes, .iters = c->iters,
                          .program = 0, .memory_model = o.sched.model,
                          .bug = c->bug, .fault_kind = o.com.has_fault ? o.com.fault.kind : 0,
                          .fault_rank = o.com.fault.rank, .fault_event = o.com.fault.event};
  snprintf(th.schedule, sizeof(th.schedule), "%s",
           o.schedule_str ? o.schedule_str : controlled ? "replay" : "free");
  if (cs_cli_trace_open(o.cmd, &o.com, &th, &w, &lo) < 0) {
    free(inputs);
    cs_world_destroy(&w);
    return CS_EXIT_USAGE;
  }
  cs_launch_result_t res = {0};
  rc = cs_launch(&w, cs_ar_rank_main, &o.cfg, &lo, &res);
  o_->abort_reason = res.aborted ? res.abort_reason : 0;
  o_->sched_steps = w.ctl->event_seq;
  int code = cs_cli_launch_exit(o.cmd, rc);
  if (cs_cli_trace_close(o.cmd, &o.com, rc < 0 ? NULL : &res) < 0 && code == CS_EXIT_OK)
    code = CS_EXIT_ABORTED;
  if (code == CS_EXIT_OK) {
    if (o.verbose_mode || controlled || c->bug)
      printf("mode: %s%s%s%s, memory model %s%s%s\n",
             controlled ? "controlled, schedule " : "free",
             controlled ? th.schedule : "", "", "", cs_mm_name(o.sched.model),
             c->bug ? ", bug " : "", c->bug ? cs_bug_table[c->bug].name : "");
    code = verify(&o, &w, fill, inputs);
    if (o.output) {
      uint8_t *res = malloc(bytes * n);
      if (!res) {
        cs_cli_error(o.cmd, "out of memory for the output");
        code = CS_EXIT_ABORTED;
      } else {
        for (uint32_t r = 0; r < n; r++)
          memcpy(res + r * bytes, cs_world_output(&w, r), bytes);
        if (cs_npy_write(o.output, c->dtype, n, c->count, res, why, sizeof(why)) < 0) {
          cs_cli_error(o.cmd, "--output %s", why);
          if (code == CS_EXIT_OK)
            code = CS_EXIT_USAGE; /* a wrong result stays the verdict */
        }
        free(res);
      }
    }
  }
  free(inputs);
  cs_world_destroy(&w);
  return code;
}
