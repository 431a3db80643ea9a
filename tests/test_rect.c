/*
 * test_rect.c - mesh's partial-valid rectangle path (docs/algorithms.md
 * §3.3, `collsim run --shape ROWSxCOLS --valid R,C`): every rank's result
 * against a fold written here from the definition (own value first, then
 * the peers ascending, one rounding per op), the elements outside the
 * rectangle against the rank's own input bit for bit, the signal cells,
 * the trace's counts against the §3.3 table, the 2-D device calls'
 * bounds, the command line's refusals, replay and the race checker.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/allreduce.h"
#include "../collectives/geometry.h"
#include "../collectives/reduce.h"
#include "../sim/launch.h"
#include "../sim/trace.h"
#include "../sim/trace/read.h"
#include "../cli/collsim/cli.h"
#include "../run/verify.h"
#include "harness.h"

/* ------------------------------------------------------------ the fold */

/* Inputs chosen so that every op of two values is exact in float (values
 * in [0.5, 4.4) on a 1/16 grid; products of two halves have at most 22
 * significant bits), so one rounding to the dtype after it is the op's
 * single rounding. */
static float input_value(cs_op_t op, uint32_t r, uint64_t i)
{
  if (op == CS_PROD)
    return 1.0f + (float)((r * 7 + i * 3) % 9) / 64.0f;
  return 0.5f + (float)((r * 131 + i * 17) % 61) / 16.0f;
}

static float get(cs_dtype_t t, const uint8_t *row, uint64_t i)
{
  if (t == CS_FP32) {
    float f;
    memcpy(&f, row + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, row + 2 * i, 2);
  return cs_half_to_float(h);
}

static void put(cs_dtype_t t, uint8_t *row, uint64_t i, float v)
{
  if (t == CS_FP32) {
    memcpy(row + 4 * i, &v, 4);
    return;
  }
  uint16_t h = cs_float_to_half(v);
  memcpy(row + 2 * i, &h, 2);
}

static float op_of(cs_op_t op, float a, float b)
{
  switch (op) {
  case CS_SUM: return a + b;
  case CS_PROD: return a * b;
  case CS_MAX: return a > b ? a : b;
  default: return a < b ? a : b;
  }
}

/* Rank me's element i: x_me op x_p1 op ..., peers ascending, rounded to
 * the dtype after every op. */
static float fold(const cs_ar_cfg_t *c, const uint8_t *in, uint64_t bytes,
                  uint32_t me, uint64_t i)
{
  float acc = get(c->dtype, in + me * bytes, i);
  for (uint32_t p = 0; p < c->nranks; p++) {
    if (p == me)
      continue;
    float v = op_of(c->op, acc, get(c->dtype, in + p * bytes, i));
    if (c->dtype == CS_FP16)
      v = cs_half_to_float(cs_float_to_half(v));
    acc = v;
  }
  return acc;
}

/* Runs c (a rectangle configuration) on forked ranks; asserts every
 * element and, with single-use signals, every cell. */
static void run_rect(const cs_ar_cfg_t *c)
{
  char why[256];
  int rc = cs_ar_check(c);
  cs_cli_ar_why(c, rc, why, sizeof(why));
  cr_assert_eq(rc, 0, "%s", why);
  cr_assert(cs_ar_rect(c));
  uint32_t n = c->nranks;
  size_t es = cs_dtype_size(c->dtype);
  uint64_t bytes = c->count * es;
  cs_layout_t l;
  cs_world_t w;
  cr_assert_eq(cs_ar_layout(c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c),
                        .timeout_ns = 60000000000ull};
  cr_assert_eq(cs_world_create(&w, &l, n, &wo), 0);
  uint8_t *in = malloc(bytes * n);
  cr_assert_not_null(in);
  for (uint32_t r = 0; r < n; r++) {
    for (uint64_t i = 0; i < c->count; i++)
      put(c->dtype, in + r * bytes, i, input_value(c->op, r, i));
    memcpy(cs_world_input(&w, r), in + r * bytes, bytes);
  }
  cr_assert_eq(cs_launch(&w, cs_ar_rank_main, (void *)c, NULL, NULL), 0);
  uint64_t wrong = 0, touched = 0;
  for (uint32_t r = 0; r < n; r++) {
    const uint8_t *got = cs_world_output(&w, r), *own = in + r * bytes;
    for (uint64_t i = 0; i < c->count; i++) {
      uint64_t row = i / c->shape_cols, col = i % c->shape_cols;
      if (row < c->valid_rows && col < c->valid_cols) {
        uint8_t want[4];
        put(c->dtype, want, 0, fold(c, in, bytes, r, i));
        wrong += memcmp(got + i * es, want, es) != 0;
      } else {
        touched += memcmp(got + i * es, own + i * es, es) != 0;
      }
    }
    const int32_t *sig = (const int32_t *)(cs_world_window(&w, r) +
                                           l.slot[CS_AR_SLOT_SIGNAL].off);
    for (uint32_t k = 0; k < n; k++)
      cr_assert_eq(sig[k], k == r || !c->no_epilogue ? 0 : 2,
                   "rank %u cell %u: %d", r, k, sig[k]);
  }
  cr_assert(wrong == 0 && touched == 0,
            "%u ranks %ux%u valid %u,%u %s %s: %llu wrong in the rectangle, "
            "%llu changed outside it", n, c->shape_rows, c->shape_cols,
            c->valid_rows, c->valid_cols, cs_dtype_name(c->dtype),
            cs_op_name(c->op), (unsigned long long)wrong,
            (unsigned long long)touched);
  free(in);
  cs_world_destroy(&w);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

static cs_ar_cfg_t rect_cfg(cs_dtype_t t, cs_op_t op, uint32_t n,
                            uint32_t rows, uint32_t cols, uint32_t vr,
                            uint32_t vc)
{
  return (cs_ar_cfg_t){.algo = CS_ALGO_MESH, .dtype = t, .op = op,
                       .nranks = n, .count = (uint64_t)rows * cols,
                       .tile_bytes = CS_TILE_BYTES, .iters = 2,
                       .shape_rows = rows, .shape_cols = cols,
                       .valid_rows = vr, .valid_cols = vc};
}

/* Shapes: a middle rectangle, C = 1, R = 1, an odd stride, and (last,
 * per dtype) the largest rectangle that fits one 16 KiB tile. */
typedef struct shape { uint32_t rows, cols, vr, vc; } shape_t;
static const shape_t shapes32[] = {
    {4, 8, 3, 5}, {5, 7, 5, 1}, {6, 9, 1, 9}, {7, 13, 6, 11}, {33, 129, 32, 128}};
static const shape_t shapes16[] = {
    {4, 8, 3, 5}, {5, 7, 5, 1}, {6, 9, 1, 9}, {7, 13, 6, 11}, {65, 131, 64, 128}};

Test(rect, every_op_dtype_rank_count_and_shape_folds_and_leaves_the_rest,
     .timeout = 300)
{
  static const cs_op_t ops[] = {CS_SUM, CS_MAX, CS_MIN, CS_PROD};
  for (int d = 0; d < 2; d++)
    for (size_t o = 0; o < 4; o++)
      for (uint32_t n = 2; n <= 4; n++)
        for (size_t s = 0; s < 5; s++) {
          const shape_t *sh = d ? &shapes16[s] : &shapes32[s];
          cs_ar_cfg_t c = rect_cfg(d ? CS_FP16 : CS_FP32, ops[o], n, sh->rows,
                                   sh->cols, sh->vr, sh->vc);
          run_rect(&c);
        }
}

Test(rect, single_use_cells_end_at_two, .timeout = 60)
{
  cs_ar_cfg_t c = rect_cfg(CS_FP32, CS_SUM, 4, 4, 8, 3, 5);
  c.iters = 1;
  c.no_epilogue = 1;
  cr_assert_eq(cs_ar_signal_final(&c), 2);
  run_rect(&c); /* asserts 2 on every non-self cell, 0 on the self cell */
  c.dtype = CS_FP16;
  run_rect(&c);
}

Test(rect, the_check_refuses_what_the_path_cannot_take)
{
  cs_ar_cfg_t c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 3, 5);
  cr_assert_eq(cs_ar_check(&c), 0);
  c.count = 33;
  cr_assert_eq(cs_ar_check(&c), CS_EARSHAPE);
  c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 0, 5);
  cr_assert_eq(cs_ar_check(&c), CS_EARVALID);
  c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 5, 5);
  cr_assert_eq(cs_ar_check(&c), CS_EARVALID);
  c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 3, 9);
  cr_assert_eq(cs_ar_check(&c), CS_EARVALID);
  c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 3, 5);
  c.algo = CS_ALGO_RING;
  cr_assert_eq(cs_ar_check(&c), CS_EARVALIDALGO);
  c.algo = CS_ALGO_HOST;
  cr_assert_eq(cs_ar_check(&c), CS_EARVALIDALGO);
  /* 4097 fp32 elements = 16388 bytes: one element past the tile */
  c = rect_cfg(CS_FP32, CS_SUM, 3, 1, 4097, 1, 4097);
  cr_assert_eq(cs_ar_check(&c), 0); /* valid == shape: not a rectangle */
  cr_assert_not(cs_ar_rect(&c));
  c = rect_cfg(CS_FP32, CS_SUM, 3, 2, 4097, 1, 4097);
  cr_assert_eq(cs_ar_check(&c), CS_EARVALIDTILE);
  c = rect_cfg(CS_FP32, CS_SUM, 3, 2, 4097, 1, 4096);
  cr_assert_eq(cs_ar_check(&c), 0);
  /* valid == shape takes the chunked path, on any algorithm */
  c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 4, 8);
  c.algo = CS_ALGO_RING;
  cr_assert_eq(cs_ar_check(&c), 0);
  cr_assert_not(cs_ar_rect(&c));
}

/* The run's own verification (run/verify.c): clean after a correct
 * run; one element changed outside the rectangle, or inside it, is one
 * wrong element at that index. */
Test(rect, verification_holds_the_outside_to_the_input, .timeout = 60)
{
  cs_ar_cfg_t c = rect_cfg(CS_FP32, CS_SUM, 3, 4, 8, 3, 5);
  c.iters = 1;
  cs_layout_t l;
  cs_world_t w;
  cr_assert_eq(cs_ar_layout(&c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(&c),
                        .timeout_ns = 60000000000ull};
  cr_assert_eq(cs_world_create(&w, &l, 3, &wo), 0);
  for (uint32_t r = 0; r < 3; r++)
    for (uint64_t i = 0; i < c.count; i++)
      put(c.dtype, cs_world_input(&w, r), i, input_value(c.op, r, i));
  cr_assert_eq(cs_launch(&w, cs_ar_rank_main, &c, NULL, NULL), 0);
  cs_verdict_t v;
  cr_assert_eq(cs_verify_allreduce(&c, &w, NULL, 1, NULL, &v), 0);
  cr_assert_eq(v.wrong, 0);
  float *out1 = (float *)cs_world_output(&w, 1);
  out1[13] += 1; /* row 1, column 5: outside */
  cr_assert_eq(cs_verify_allreduce(&c, &w, NULL, 1, NULL, &v), 0);
  cr_assert_eq(v.wrong, 1);
  cr_assert_eq(v.bad_rank, 1);
  cr_assert_eq(v.bad_i, 13);
  out1[13] -= 1;
  out1[12] += 1; /* row 1, column 4: inside */
  cr_assert_eq(cs_verify_allreduce(&c, &w, NULL, 1, NULL, &v), 0);
  cr_assert_eq(v.wrong, 1);
  cr_assert_eq(v.bad_i, 12);
  cs_world_destroy(&w);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

/* ------------------------------------------------------------ the CLI */

static char tmpdir[128];
static void mk_tmpdir(void)
{
  temp_dir_for("rect", tmpdir, sizeof(tmpdir));
}
static void rm_tmpdir(void)
{
  files_in(tmpdir, "", 1);
  rmdir(tmpdir);
}

/* One refusal: exit 2, one line on stderr holding `needle`. */
static void refused(const char *needle, ...)
{
  char *args[32] = {"run"};
  int k = 1;
  va_list ap;
  va_start(ap, needle);
  for (char *a; (a = va_arg(ap, char *)) && k < 31;)
    args[k++] = a;
  va_end(ap);
  args[k] = NULL;
  cli_out_t r;
  run_argv(&r, 60, args);
  cr_assert_eq(r.status, 2, "%s: exit %d, %s", needle, r.status, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, needle), "want '%s' in: %s", needle, r.err);
}

Test(rect_cli, bad_shapes_and_rectangles_get_one_line_and_exit_2,
     .timeout = 120)
{
  refused("--valid 0,3 is not accepted for --shape 4x8: expected R from 1 to "
          "4 and C from 1 to 8", "--algo", "mesh", "--shape", "4x8", "--valid",
          "0,3", NULL);
  refused("--valid 3,0 is not accepted", "--algo", "mesh", "--shape", "4x8",
          "--valid", "3,0", NULL);
  refused("--valid 5,3 is not accepted", "--algo", "mesh", "--shape", "4x8",
          "--valid", "5,3", NULL);
  refused("--valid 3,9 is not accepted", "--algo", "mesh", "--shape", "4x8",
          "--valid", "3,9", NULL);
  refused("do not fit one tile; expected R x C x 4 <= 16384", "--algo", "mesh",
          "--shape", "200x100", "--valid", "100,41", NULL);
  refused("is not accepted for --algo ring: only mesh", "--algo", "ring",
          "--shape", "4x8", "--valid", "3,5", NULL);
  refused("is not accepted for --algo host: only mesh", "--algo", "host",
          "--shape", "4x8", "--valid", "3,5", NULL);
  /* a 4 GiB window if it got that far: refused before any allocation */
  refused("--shape 1x2147483648 is not accepted with a partial --valid 1,1: "
          "expected COLS <= 2147483647", "--algo", "mesh", "--ranks", "1",
          "--dtype", "fp16", "--shape", "1x2147483648", "--valid", "1,1",
          NULL);
  refused("--count 33 does not match --shape 4x8: expected 32", "--algo",
          "mesh", "--shape", "4x8", "--count", "33", NULL);
  refused("--valid 1,1 needs --shape", "--algo", "mesh", "--valid", "1,1", NULL);
  refused("--shape '4x' is not accepted: expected ROWSxCOLS", "--algo", "mesh",
          "--shape", "4x", NULL);
  refused("--shape '0x8' is not accepted", "--algo", "mesh", "--shape", "0x8",
          NULL);
  refused("--shape 4294967295x17 is not accepted: 73014444015 elements",
          "--algo", "mesh", "--shape", "4294967295x17", NULL);
  refused("--shape '4x-8' is not accepted", "--algo", "mesh", "--shape",
          "4x-8", NULL);
  refused("--valid '3;5' is not accepted: expected R,C", "--algo", "mesh",
          "--shape", "4x8", "--valid", "3;5", NULL);
}

Test(rect_cli, bench_and_teach_refuse_a_shape_with_one_line, .timeout = 60)
{
  static const char *cmds[] = {"bench", "teach"};
  for (int i = 0; i < 2; i++) {
    cli_out_t r;
    run_cli(&r, 30, cmds[i], "--shape", "4x8", "--valid", "3,5", NULL);
    cr_assert_eq(r.status, 2, "%s: %d %s", cmds[i], r.status, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, "--shape and --valid are not accepted"), "%s",
              r.err);
  }
}

Test(rect_cli, agreeing_count_and_a_whole_valid_shape_run, .timeout = 120)
{
  cli_out_t r;
  run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", "3", "--shape", "4x8",
          "--count", "32", "--valid", "3,5", "--iters", "2", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "valid rectangle 3 x 5"), "%s", r.out);
  cr_assert(strstr(r.out, "result: bit-exact"), "%s", r.out);
  /* valid == shape: the chunked path, on ring as well */
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--shape", "4x8",
          "--valid", "4,8", "--iters", "1", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_null(strstr(r.out, "valid rectangle"), "%s", r.out);
}

/* The §3.3 table (docs/algorithms.md), per rank of one call: notifies
 * 2(NR-1) single-use, 3(NR-1) self-clearing; waits 2(NR-1), targets 1
 * then 2; remote bytes (NR-1)*r*c*esize and r*c*esize stored, counted
 * from the 2-D records (the stage-in and stage-out are 1-D). */
static void trace_counts(const char *dtype, uint32_t nr, int single)
{
  char path[200], ranks[8];
  snprintf(path, sizeof(path), "%s/counts-%s-%u-%d.cstrace", tmpdir, dtype,
           nr, single);
  snprintf(ranks, sizeof(ranks), "%u", nr);
  cli_out_t r;
  run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", ranks, "--dtype", dtype,
          "--shape", "7x13", "--valid", "6,11", "--iters", "1", "--signals",
          single ? "single-use" : "self-clearing", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cs_trace_t t;
  char why[256];
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), 0, "%s", why);
  uint64_t es = strcmp(dtype, "fp32") ? 2 : 4;
  uint64_t notif[8] = {0}, waits[8] = {0}, remote[8] = {0}, stored[8] = {0};
  uint64_t w1[8] = {0}, w2[8] = {0};
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    if (x->rank >= nr)
      continue;
    if (x->kind == CS_EV_NOTIFY)
      notif[x->rank]++;
    if (x->kind == CS_EV_WAIT) {
      waits[x->rank]++;
      w1[x->rank] += x->value == 1;
      w2[x->rank] += x->value == 2;
    }
    if (x->kind == CS_EV_LOAD && cs_trace_rec_is_2d(x) && x->peer != x->rank) {
      cr_assert_eq(x->cell, 6u);
      cr_assert_eq(x->value, 13);
      remote[x->rank] += x->valid * es;
    }
    if (x->kind == CS_EV_STORE && cs_trace_rec_is_2d(x))
      stored[x->rank] += x->valid * es;
  }
  for (uint32_t k = 0; k < nr; k++) {
    cr_assert_eq(notif[k], (single ? 2u : 3u) * (nr - 1), "rank %u: %llu", k,
                 (unsigned long long)notif[k]);
    cr_assert_eq(waits[k], 2u * (nr - 1));
    cr_assert_eq(w1[k], nr - 1u);
    cr_assert_eq(w2[k], nr - 1u);
    cr_assert_eq(remote[k], (nr - 1) * 66 * es);
    cr_assert_eq(stored[k], 66 * es);
  }
  cs_trace_free(&t);
  run_cli(&r, 60, "trace", path, "--stats", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "verdict: every rank matches"), "%s", r.out);
  cr_assert(strstr(r.out, "verdict: the signals match the reference"), "%s",
            r.out);
  cr_assert(strstr(r.out, single ? "every non-self cell ends at 2"
                                 : "every non-self cell ends at 0"), "%s",
            r.out);
}

Test(rect_cli, trace_counts_follow_the_table, .timeout = 240, .init = mk_tmpdir,
     .fini = rm_tmpdir)
{
  for (uint32_t nr = 2; nr <= 4; nr++) {
    trace_counts("fp32", nr, 1);
    trace_counts("fp16", nr, 0);
  }
}

Test(rect_cli, controlled_runs_replay_and_show_rows, .timeout = 240,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  static const char *models[] = {"sc", "fifo", "relaxed"};
  for (int m = 0; m < 3; m++) {
    char path[200];
    snprintf(path, sizeof(path), "%s/replay-%s.cstrace", tmpdir, models[m]);
    cli_out_t r;
    run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", "3", "--shape", "5x7",
            "--valid", "4,3", "--schedule", "random:7", "--memory-model",
            models[m], "--iters", "2", "--trace", path, NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, "result: bit-exact"), "%s", r.out);
    run_cli(&r, 120, "replay", path, NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert(strstr(r.out, ": identical"), "%s", r.out);
    run_cli(&r, 60, "trace", path, NULL);
    cr_assert(strstr(r.out, "shape     5 x 7, valid 4 x 3"), "%s", r.out);
    cr_assert(strstr(r.out, "rows 4 x 3 @ stride 7"), "%.3000s", r.out);
    run_cli(&r, 60, "trace", path, "--format", "chrome", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "rows 4 x 3 @ stride 7"), "%.3000s", r.out);
    run_cli(&r, 60, "check", path, NULL);
    cr_assert_eq(r.status, 0, "correct %s run: %.2000s", models[m], r.out);
  }
}

/* The jsonl header names what the text header shows: the shape and
 * valid rectangle (only when there is one) and the modes word. */
Test(rect_cli, the_jsonl_header_has_the_shape_and_the_modes, .timeout = 120,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char path[200];
  snprintf(path, sizeof(path), "%s/jsonl.cstrace", tmpdir);
  cli_out_t r;
  run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", "3", "--shape", "5x7",
          "--valid", "4,3", "--signals", "single-use", "--iters", "1",
          "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  run_cli(&r, 60, "trace", path, "--format", "jsonl", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char *nl = strchr(r.out, '\n');
  cr_assert_not_null(nl);
  *nl = 0; /* the header line alone */
  cr_assert(strstr(r.out, "\"shape\":[5,7],\"valid\":[4,3]"), "%s", r.out);
  cr_assert(strstr(r.out, "\"modes\":1,"), "%s", r.out); /* bit 0 */
  cr_assert_not(strstr(r.out, "\"algo_path\""), "%s", r.out);
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--count", "9",
          "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  run_cli(&r, 60, "trace", path, "--format", "jsonl", NULL);
  nl = strchr(r.out, '\n');
  cr_assert_not_null(nl);
  *nl = 0;
  cr_assert(strstr(r.out, "\"modes\":0,"), "%s", r.out);
  cr_assert_not(strstr(r.out, "\"shape\""), "%s", r.out);
}

/* Without the read-complete barrier a fast rank stores its rectangle
 * while a slow peer still reads it: the checker reports the race on
 * the rows, for every seed; the correct run has none. */
Test(rect_cli, the_checker_finds_the_missing_barrier_on_the_rows,
     .timeout = 240, .init = mk_tmpdir, .fini = rm_tmpdir)
{
  char path[200];
  snprintf(path, sizeof(path), "%s/bug.cstrace", tmpdir);
  for (int seed = 1; seed <= 3; seed++) {
    char sched[32];
    snprintf(sched, sizeof(sched), "random:%d", seed);
    cli_out_t r;
    run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", "3", "--shape", "4x8",
            "--valid", "3,5", "--schedule", sched, "--iters", "1", "--bug",
            "mesh-no-chunk-barrier", "--trace", path, NULL);
    cr_assert(r.status == 0 || r.status == 1, "%s%s", r.out, r.err);
    run_cli(&r, 60, "check", path, NULL);
    cr_assert_eq(r.status, 1, "seed %d: %.2000s", seed, r.out);
    cr_assert(strstr(r.out, "rows 3 x 5 @ stride 8"), "%.2000s", r.out);
    run_cli(&r, 60, "run", "--algo", "mesh", "--ranks", "3", "--shape", "4x8",
            "--valid", "3,5", "--schedule", sched, "--iters", "1", "--trace",
            path, NULL);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    run_cli(&r, 60, "check", path, NULL);
    cr_assert_eq(r.status, 0, "seed %d correct: %.2000s", seed, r.out);
  }
}

/* explore takes the run options: it finds the missing barrier on the
 * rectangle path, and its shrink keeps the shape (the count is its
 * product) while it cuts the ranks, and replays the smaller failure. */
Test(rect_cli, explore_finds_and_shrink_keeps_the_shape, .timeout = 240,
     .init = mk_tmpdir, .fini = rm_tmpdir)
{
  cli_out_t r;
  run_cli(&r, 120, "explore", "--algo", "mesh", "--ranks", "3", "--shape",
          "4x8", "--valid", "3,5", "--bug", "mesh-no-chunk-barrier", "-o",
          tmpdir, NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "failure 1: wrong result"), "%s", r.out);
  cr_assert(strstr(r.out, "shrink: ranks 3 -> 2, count 32 -> 32"), "%s%s",
            r.out, r.err);
  cr_assert(strstr(r.out, "(rows 3 x 5 @ stride 8)"), "%s", r.out);
  char min[200];
  snprintf(min, sizeof(min), "%s/explore-1.min.cstrace", tmpdir);
  run_cli(&r, 60, "trace", min, NULL);
  cr_assert(strstr(r.out, "shape     4 x 8, valid 3 x 5"), "%.2000s", r.out);
  run_cli(&r, 60, "replay", min, NULL);
  cr_assert(strstr(r.out, "identical; outcome: wrong result"), "%s%s", r.out,
            r.err);
}

/* ------------------------------------------------------------ the API */

/* A 2-D access whose last row leaves the slot is an out-of-slot fault
 * (every row is checked, not only the first); one inside runs. */
static int p_rect_last_row_out(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t;
  cr_assert_eq(cs_tile_init(&t, 4, 16), 0);
  cs_load_rect(d, &t, d->rank, 0, 0, 4, 2, 8); /* rows 0, 8, 16, 24: [24, 26) */
  cs_load_rect(d, &t, d->rank, 0, 1, 4, 2, 8); /* last row [25, 27): out */
  cs_tile_fini(&t);
  return 0;
}
static int p_rect_stride_short(cs_dev_t *d, void *a)
{
  (void)a;
  cs_tile_t t;
  cr_assert_eq(cs_tile_init(&t, 4, 16), 0);
  cs_store_rect(d, &t, 0, 0, 2, 4, 3); /* stride below the columns */
  cs_tile_fini(&t);
  return 0;
}

static void expect_fault(int (*fn)(cs_dev_t *, void *), const char *needle)
{
  cs_layout_t l;
  cs_layout_init(&l, 4);
  cr_assert_eq(cs_layout_add(&l, "data", 26 * 4, 4), 0);
  cs_world_opts_t wo = {.timeout_ns = 5000000000ull};
  cs_world_t w;
  cr_assert_eq(cs_world_create(&w, &l, 1, &wo), 0);
  char buf[2048] = {0};
  FILE *rep = tmpfile();
  cs_launch_opts_t lo = {.report = rep};
  int rc = cs_launch(&w, fn, NULL, &lo, NULL);
  rewind(rep);
  size_t got = fread(buf, 1, sizeof(buf) - 1, rep);
  buf[got] = 0;
  fclose(rep);
  cs_world_destroy(&w);
  cr_assert_neq(rc, 0, "no fault: %s", buf);
  cr_assert(strstr(buf, needle), "want '%s' in: %s", needle, buf);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

Test(rect_api, every_row_is_bounds_checked, .timeout = 60)
{
  expect_fault(p_rect_last_row_out, "bytes [4, 108) outside the slot's [0, 104)");
  expect_fault(p_rect_stride_short, "bad 2-D store");
}
