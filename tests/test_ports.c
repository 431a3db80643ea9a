/*
 * test_ports.c - the built-in mesh, ring and host allreduces against
 * their ports to the public API (tests/plugins/ports.c, built by CMake
 * into COLLSIM_PLUGINS as portP_D.so): the same configurations run
 * through `collsim run --algo NAME` and `--algo ./portP_0.so` under the
 * same controlled schedules must give
 *   - the same result bits: the built-in writes them with --output, and
 *     the port's expected-result function reads that file
 *     (COLLSIM_PORT_EXPECT), so the port's run says "bit-exact" only if
 *     every rank's bits are the built-in's;
 *   - the same events: the two traces hold the same records in the same
 *     order, field for field but the time (and the header the same but
 *     for the algorithm's id, path, hash, names and times); every notify
 *     records the cell's value after it, so the signal values match
 *     event for event, down to the epilogue's return to 0;
 *   - both runs' signal checks passing;
 *   - for a defect the port can express (DEFECT 1: the built-in's --bug
 *     mesh-no-chunk-barrier and ring-no-ready-barrier), the same
 *     verdict, the same findings of `collsim check` and the same story
 *     of `collsim shrink`, word for word (mesh's tags "main cSTEP" too:
 *     CS_COLL_CHUNK_TAGS);
 *   - with --minmax (CS_COLL_MINMAX) and mesh's partial-valid rectangle
 *     (--shape/--valid, CS_COLL_SHAPE) too, and the public kernel's
 *     minmax modes and operand order against C's own expressions;
 *   - and every built-in's own registration (cs_coll_builtin, run by
 *     cs_coll_run as a program of one's own would) against `collsim run
 *     --algo NAME`: the same records, the same tags in `collsim trace`,
 *     and a trace that `collsim replay` replays as the built-in's.
 * Runs the real binary (COLLSIM_BIN) through the harness.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "../collectives/registry.h"
#include "../include/collsim/collective.h"
#include "../include/collsim/device.h"
#include "../sim/trace.h"
#include "harness.h"

#ifndef COLLSIM_PLUGINS
#error "COLLSIM_PLUGINS must name the built plug-ins (CMakeLists.txt sets it)"
#endif

static char dir[128];
static void make_dir(void) { temp_dir_for("ports", dir, sizeof dir); }
static void remove_dir(void)
{
  char cmd[192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

typedef struct pcase {
  const char *dtype, *op;
  unsigned count, tile;
  const char *minmax; /* NULL: none given */
  const char *shape, *valid; /* mesh's §3.3 rectangle, or NULL */
} pcase_t;

/* Counts that take one tile, several with a ragged tail, and (ring)
 * segments shorter than a subchunk or empty. */
static const pcase_t cases[] = {
    {"fp32", "sum", 700, 1024, NULL, NULL, NULL},  /* mesh 3 chunks of 256, ring K > 1 */
    {"fp16", "max", 1100, 1024, NULL, NULL, NULL}, /* 3 chunks of 512, 16-element tails */
    {"fp32", "max", 5, 16384, NULL, NULL, NULL},   /* one short chunk, ring lanes idle */
    {"fp16", "sum", 37, 1024, NULL, NULL, NULL},   /* 2-byte segments, some empty */
    {"fp32", "min", 300, 1024, "pto", NULL, NULL}, /* --minmax for a collective that */
    {"fp16", "max", 40, 1024, "propagate", NULL, NULL}, /* honours it (CS_COLL_MINMAX) */
};

/* The header fields both runs must share: all but the algorithm's
 * identity and the times. */
static void same_header(const cs_trace_header_t *a, const cs_trace_header_t *b,
                        const char *what)
{
  cr_assert_eq(a->nranks, b->nranks, "%s: nranks", what);
  cr_assert_eq(a->count, b->count, "%s: count", what);
  cr_assert_eq(a->dtype, b->dtype, "%s: dtype", what);
  cr_assert_eq(a->op, b->op, "%s: op", what);
  cr_assert_eq(a->input_hash, b->input_hash, "%s: input hash", what);
  cr_assert_eq(a->tile_bytes, b->tile_bytes, "%s: tile", what);
  cr_assert_eq(a->iters, b->iters, "%s: iters", what);
  cr_assert_eq(a->memory_model, b->memory_model, "%s: model", what);
  /* the modes but the port's own chunk-tags bit (its identity) */
  cr_assert_eq(a->modes, b->modes & ~CS_TR_MODE_CHUNK_TAGS,
               "%s: modes (--minmax)", what);
  cr_assert(a->shape_rows == b->shape_rows && a->shape_cols == b->shape_cols &&
                a->valid_rows == b->valid_rows && a->valid_cols == b->valid_cols,
            "%s: shape", what);
  cr_assert_str_eq(a->schedule, b->schedule, "%s: schedule", what);
  cr_assert_eq(a->layout.nslots, b->layout.nslots, "%s: slots", what);
  for (uint32_t s = 0; s < a->layout.nslots; s++) {
    cr_assert_str_eq(a->layout.slot[s].name, b->layout.slot[s].name, "%s", what);
    cr_assert_eq(a->layout.slot[s].off, b->layout.slot[s].off, "%s", what);
    cr_assert_eq(a->layout.slot[s].nbytes, b->layout.slot[s].nbytes, "%s", what);
  }
}

/* The same records in the same order, every field but the time and the
 * checksum (which covers the time). */
static void same_records(const cs_trace_t *a, const cs_trace_t *b,
                         const char *what)
{
  cr_assert_eq(a->n, b->n, "%s: %llu records against %llu", what,
               (unsigned long long)a->n, (unsigned long long)b->n);
  int64_t i = first_unlike_record(a, b);
  if (i >= 0) {
    cs_trace_rec_t x = a->rec[i], y = b->rec[i];
    cr_assert_fail("%s: record %llu differs: kind %u/%u rank %u/%u peer %u/%u "
                   "slot %u/%u cell %u/%u off %llu/%llu valid %u/%u phys %u/%u "
                   "value %d/%d observed %d/%d phase %u/%u round %u/%u step %u/%u",
                   what, (unsigned long long)i, x.kind, y.kind, x.rank, y.rank,
                   x.peer, y.peer, x.slot, y.slot, x.cell, y.cell,
                   (unsigned long long)x.elem_off, (unsigned long long)y.elem_off,
                   x.valid, y.valid, x.phys, y.phys, x.value, y.value, x.observed,
                   y.observed, x.phase, y.phase, x.round, y.round, x.step, y.step);
  }
}

static void compare_traces(const char *bt, const char *pt, const char *what)
{
  cs_trace_t a, b;
  char why[512];
  cr_assert_eq(load_trace(bt, &a, why, sizeof why), 0, "%s: %s", what, why);
  cr_assert_eq(load_trace(pt, &b, why, sizeof why), 0, "%s: %s", what, why);
  same_header(&a.hdr, &b.hdr, what);
  same_records(&a, &b, what);
  cs_trace_free(&a);
  cs_trace_free(&b);
}

/* --shape and --valid of k after the last argument of args (which has
 * room for them). */
static void add_shape(char **args, const pcase_t *k)
{
  if (!k->shape)
    return;
  size_t n = 0;
  while (args[n])
    n++;
  args[n] = "--shape";
  args[n + 1] = (char *)k->shape;
  args[n + 2] = "--valid";
  args[n + 3] = (char *)k->valid;
}

/* One configuration: the built-in, then its port, compared. */
static void one(int port, const char *algo, unsigned ranks, const pcase_t *k,
                unsigned seed)
{
  char what[160], n[8], cnt[16], tile[16], sched[32], bt[192], pt[192],
      npy[192], so[192];
  snprintf(what, sizeof what, "%s %u ranks %u x %s %s tile %u random:%u",
           algo, ranks, k->count, k->dtype, k->op, k->tile, seed);
  snprintf(n, sizeof n, "%u", ranks);
  snprintf(cnt, sizeof cnt, "%u", k->count);
  snprintf(tile, sizeof tile, "%u", k->tile);
  snprintf(sched, sizeof sched, "random:%u", seed);
  snprintf(bt, sizeof bt, "%s/b.cstrace", dir);
  snprintf(pt, sizeof pt, "%s/p.cstrace", dir);
  snprintf(npy, sizeof npy, "%s/b.npy", dir);
  snprintf(so, sizeof so, "%s/port%d_0.so", COLLSIM_PLUGINS, port);
  static cli_out_t r;
  char *b_args[] = {"run", "--algo", (char *)algo, "--ranks", n, "--count",
                    cnt, "--dtype", (char *)k->dtype, "--op", (char *)k->op,
                    "--tile-bytes", tile, "--iters", "2", "--schedule", sched,
                    "--fill", "random", "--seed", n, "--trace", bt, "--output", npy,
                    k->minmax ? "--minmax" : NULL, (char *)k->minmax, NULL, NULL,
                    NULL, NULL, NULL};
  add_shape(b_args, k);
  run_argv(&r, 120, b_args);
  cr_assert_eq(r.status, 0, "%s: built-in exit %d: %s%s", what, r.status,
               r.out, r.err);
  cr_assert(strstr(r.out, "result: bit-exact"), "%s: %s", what, r.out);
  cr_assert(strstr(r.out, "signals: every non-self cell reached"),
            "%s: %s", what, r.out);
  setenv("COLLSIM_PORT_EXPECT", npy, 1);
  char *p_args[] = {"run", "--algo", so, "--ranks", n, "--count", cnt,
                    "--dtype", (char *)k->dtype, "--op", (char *)k->op,
                    "--tile-bytes", tile, "--iters", "2", "--schedule", sched,
                    "--fill", "random", "--seed", n, "--trace", pt,
                    k->minmax ? "--minmax" : NULL, (char *)k->minmax, NULL, NULL,
                    NULL, NULL, NULL};
  add_shape(p_args, k);
  run_argv(&r, 120, p_args);
  unsetenv("COLLSIM_PORT_EXPECT");
  cr_assert_eq(r.status, 0, "%s: port exit %d: %s%s", what, r.status, r.out,
               r.err);
  cr_assert(strstr(r.out, "result: bit-exact on all"), "%s: %s", what, r.out);
  cr_assert(strstr(r.out, "signals: every cell at its final value"), "%s: %s",
            what, r.out);
  compare_traces(bt, pt, what);
}

/* Mesh's §3.3 path: a partial valid rectangle of a 2-D shape, moved as
 * one 2-D load per rank and one 2-D store (CS_COLL_SHAPE). */
static const pcase_t rects[] = {
    {"fp32", "sum", 24, 16384, NULL, "4x6", "3,5"},
    {"fp16", "max", 128, 1024, "pto", "8x16", "5,9"},
    {"fp32", "min", 64, 1024, NULL, "8x8", "8,1"},
};

Test(ports, mesh_rect)
{
  for (unsigned ranks = 2; ranks <= 4; ranks++)
    for (size_t i = 0; i < sizeof rects / sizeof rects[0]; i++)
      for (unsigned seed = 1; seed <= 2; seed++)
        one(1, "mesh", ranks, &rects[i], seed);
  /* the port's last trace has 2-D loads (cell = rows) and replays */
  char pt[192];
  snprintf(pt, sizeof pt, "%s/p.cstrace", dir);
  cs_trace_t t;
  char why[256];
  cr_assert_eq(load_trace(pt, &t, why, sizeof why), 0, "%s", why);
  uint64_t rect_loads = 0;
  for (uint64_t i = 0; i < t.n; i++)
    rect_loads += t.rec[i].kind == CS_EV_LOAD && t.rec[i].cell == 8;
  cr_assert_eq(t.hdr.shape_rows, 8u);
  cs_trace_free(&t);
  cr_assert_gt(rect_loads, 0, "no 2-D load of 8 rows");
  static cli_out_t r;
  run_cli(&r, 60, "replay", pt, NULL);
  cr_assert_eq(r.status, 0, "replay: %s%s", r.out, r.err);
}

static void sweep(int port, const char *algo)
{
  unsigned seeds = quick_tests() ? 1 : 2;
  for (unsigned ranks = 2; ranks <= 4; ranks++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      for (unsigned seed = 1; seed <= seeds; seed++)
        one(port, algo, ranks, &cases[i], seed);
}

/* `collsim ARGS` into out (stdout) with the exit code asserted. */
static void run_out(char *const args[], int status, char *out, size_t cap,
                    const char *what)
{
  static cli_out_t r;
  run_argv(&r, 300, args);
  cr_assert_eq(r.status, status, "%s: %s exit %d: %s%s", what, args[0],
               r.status, r.out, r.err);
  snprintf(out, cap, "%s", r.out);
}

/* A defect the port expresses (its DEFECT 1 build) against the built-in's
 * --bug: both runs fail alike, `collsim check` finds the same races with
 * the same fix, and `collsim shrink` cuts both to the same run and tells
 * the same story. */
static void defect(int port, const char *algo, const char *bug,
                   const char *seed)
{
  static char bc[65536], pc[65536], bs[65536], ps[65536];
  char so[192], tr[192], what[96];
  snprintf(what, sizeof what, "%s --bug %s", algo, bug);
  snprintf(so, sizeof so, "%s/port%d_1.so", COLLSIM_PLUGINS, port);
  snprintf(tr, sizeof tr, "%s/t.cstrace", dir); /* one name: the same paths */
  char *b_run[] = {"run", "--algo", (char *)algo, "--bug", (char *)bug,
                   "--ranks", "3", "--count", "40", "--schedule", (char *)seed,
                   "--trace", tr, NULL};
  char *p_run[] = {"run", "--algo", so, "--ranks", "3", "--count", "40",
                   "--schedule", (char *)seed, "--trace", tr, NULL};
  char *check[] = {"check", tr, NULL};
  char *shrink[] = {"shrink", tr, NULL};
  run_out(b_run, 1, bs, sizeof bs, what);
  cr_assert(strstr(bs, "result: WRONG"), "%s: %s", what, bs);
  run_out(check, 1, bc, sizeof bc, what);
  run_out(shrink, 0, bs, sizeof bs, what);
  run_out(p_run, 1, ps, sizeof ps, what);
  cr_assert(strstr(ps, "result: WRONG"), "%s: port: %s", what, ps);
  run_out(check, 1, pc, sizeof pc, what);
  run_out(shrink, 0, ps, sizeof ps, what);
  cr_assert(strstr(bc, "fix"), "%s: no finding: %s", what, bc);
  cr_assert_str_eq(bc, pc, "%s: check differs:\n%s\n---\n%s", what, bc, pc);
  /* the shrinking's own time aside */
  char *tb = strstr(bs, " runs, "), *tp = strstr(ps, " runs, ");
  cr_assert(tb && tp && strstr(bs, "story:"), "%s: no story: %s", what, bs);
  memmove(tb, strchr(tb, ')'), strlen(strchr(tb, ')')) + 1);
  memmove(tp, strchr(tp, ')'), strlen(strchr(tp, ')')) + 1);
  cr_assert_str_eq(bs, ps, "%s: shrink differs:\n%s\n---\n%s", what, bs, ps);
}

TestSuite(ports, .init = make_dir, .fini = remove_dir, .timeout = 600);

Test(ports, mesh_defect) { defect(1, "mesh", "mesh-no-chunk-barrier", "random:3"); }
Test(ports, ring_defect) { defect(2, "ring", "ring-no-ready-barrier", "random:1"); }

Test(ports, mesh) { sweep(1, "mesh"); }
Test(ports, ring) { sweep(2, "ring"); }
Test(ports, host) { sweep(3, "host"); }

/* The public kernel's --minmax modes and operand order against C's own
 * expressions: pto's max(a, b) = a < b ? b : a and min(a, b) = b < a ? b : a
 * with a the first operand, so a NaN or a tie of zeros keeps the first;
 * ieee's maximumNumber, where a number beats a NaN either way. */
static uint32_t bits(float f)
{
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

Test(ports, minmax_order)
{
  const float acc0[4] = {NAN, 0.0f, 1.0f, -0.0f};
  const float x[4] = {2.0f, -0.0f, NAN, 0.0f};
  for (int op = CS_MAX; op <= CS_MIN; op++)
    for (int first = 0; first <= 1; first++) {
      float acc[4];
      memcpy(acc, acc0, sizeof acc);
      cs_reduce_kernel_mm(CS_FP32, (cs_op_t)op, CS_MINMAX_PTO, first, acc, x, 4);
      for (int i = 0; i < 4; i++) {
        float a = first ? x[i] : acc0[i], b = first ? acc0[i] : x[i];
        float want = op == CS_MAX ? (a < b ? b : a) : (b < a ? b : a);
        cr_assert_eq(bits(acc[i]), bits(want), "pto op %d first %d [%d]", op,
                     first, i);
      }
      memcpy(acc, acc0, sizeof acc);
      cs_reduce_kernel_mm(CS_FP32, (cs_op_t)op, CS_MINMAX_IEEE, first, acc, x, 4);
      cr_assert_eq(acc[0], 2.0f, "ieee: the number, not the NaN");
      cr_assert_eq(acc[2], 1.0f, "ieee: the number, not the NaN");
    }
}

/* --minmax reaches a collective only when it says it honours it: one
 * that does not is refused with one line; one that does records the mode
 * in its trace, and replay runs it in that mode again. */
Test(ports, minmax_options)
{
  static cli_out_t r;
  char rd[192], so[192], tr[192];
  snprintf(rd, sizeof rd, "%s/rd_allreduce.so", COLLSIM_PLUGINS);
  snprintf(so, sizeof so, "%s/port2_0.so", COLLSIM_PLUGINS);
  snprintf(tr, sizeof tr, "%s/mm.cstrace", dir);
  const char *cmds[] = {"run", "explore", "verify"};
  for (size_t i = 0; i < 3; i++) {
    run_cli(&r, 60, cmds[i], "--algo", rd, "--ranks", "2", "--count", "4",
            "--minmax", "pto", NULL);
    cr_assert_eq(r.status, 2, "%s: %s%s", cmds[i], r.out, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s: %s", cmds[i], r.err);
    cr_assert(strstr(r.err, "--minmax"), "%s: %s", cmds[i], r.err);
  }
  run_cli(&r, 60, "bench", "--algo", rd, "--ranks", "2", "-b", "16", "-e",
          "16", "--minmax", "pto", NULL);
  cr_assert_eq(r.status, 2, "bench: %s%s", r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "bench: %s", r.err);
  run_cli(&r, 60, "bench", "--algo", so, "--ranks", "2", "-b", "16", "-e",
          "16", "-o", "max", "--minmax", "pto", NULL);
  cr_assert_eq(r.status, 0, "bench: %s%s", r.out, r.err);
  run_cli(&r, 60, "run", "--algo", so, "--ranks", "3", "--count", "40", "--op",
          "max", "--minmax", "pto", "--schedule", "random:2", "--trace", tr,
          NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cs_trace_t t;
  char why[256];
  cr_assert_eq(load_trace(tr, &t, why, sizeof why), 0, "%s", why);
  cr_assert_eq(t.hdr.modes, 2u << 8, "modes 0x%x: pto in bits 8-15", t.hdr.modes);
  cs_trace_free(&t);
  run_cli(&r, 60, "replay", tr, NULL);
  cr_assert_eq(r.status, 0, "replay: %s%s", r.out, r.err);
}

/* Options a collective of one's own does not honour are refused with one
 * line (exit 2), not dropped: teach's --bug, bench's -c 0, and --shape
 * for one without CS_COLL_SHAPE (the ring port). */
Test(ports, refusals)
{
  static cli_out_t r;
  char so[192], ring[192];
  snprintf(so, sizeof so, "%s/port1_0.so", COLLSIM_PLUGINS);
  snprintf(ring, sizeof ring, "%s/port2_0.so", COLLSIM_PLUGINS);
  run_cli(&r, 60, "teach", "--algo", so, "--bug", "wait-eq", "--plain", NULL);
  cr_assert_eq(r.status, 2, "teach --bug: %s%s", r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, "--bug"), "%s", r.err);
  run_cli(&r, 60, "bench", "--algo", so, "--ranks", "2", "-b", "16", "-e",
          "16", "-c", "0", NULL);
  cr_assert_eq(r.status, 2, "bench -c 0: %s%s", r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, "-c 0"), "%s", r.err);
  const char *cmds[] = {"run", "explore", "verify"};
  for (size_t i = 0; i < 3; i++) {
    run_cli(&r, 60, cmds[i], "--algo", ring, "--ranks", "2", "--shape", "4x4",
            "--valid", "2,2", NULL);
    cr_assert_eq(r.status, 2, "%s --shape: %s%s", cmds[i], r.out, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, "--shape"), "%s", r.err);
  }
  run_cli(&r, 60, "run", "--algo", so, "--ranks", "2", "--shape", "4x4",
          "--valid", "5,2", NULL);
  cr_assert_eq(r.status, 2, "--valid outside: %s%s", r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
}

/* The event table of `collsim trace T` (written with -o), each line
 * without its time (the second column), into out. */
static void event_lines(const char *t, char *out, size_t cap)
{
  static cli_out_t r;
  static char text[1 << 20];
  char txt[192];
  snprintf(txt, sizeof txt, "%s/events.txt", dir);
  remove(txt);
  run_cli(&r, 60, "trace", t, "-o", txt, NULL);
  cr_assert_eq(r.status, 0, "trace %s: %s%s", t, r.out, r.err);
  FILE *f = fopen(txt, "r");
  cr_assert(f, "trace %s: no %s", t, txt);
  size_t got = fread(text, 1, sizeof text - 1, f);
  cr_assert(feof(f), "trace %s: more than %zu bytes", t, sizeof text - 1);
  fclose(f);
  text[got] = 0;
  const char *p = strstr(text, "\n    seq ");
  cr_assert(p, "trace %s: no event table: %s", t, text);
  size_t at = 0;
  for (p = strchr(p + 1, '\n'); p && *++p; p = strchr(p, '\n')) {
    char seq[32], time[32];
    int used = 0;
    if (sscanf(p, "%31s %31s %n", seq, time, &used) != 2)
      continue;
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) - (size_t)used : strlen(p + used);
    cr_assert_lt(at + strlen(seq) + len + 2, cap, "trace %s: too long", t);
    at += (size_t)snprintf(out + at, cap - at, "%s %.*s\n", seq, (int)len,
                           p + used);
    if (!end)
      break;
  }
  cr_assert_gt(at, 0, "trace %s: no events", t);
}

/* Every built-in through its registration (cs_coll_builtin), run by the
 * library as a program of one's own runs it, against `collsim run --algo
 * NAME` under the same schedule and memory model: the same inputs, the
 * same records in the same order (no fence of the stage-in: the
 * algorithm's first barrier orders it), the same memory model in the
 * header, the algorithm's id in it as the built-in's run has it, so the
 * same tags ("RS t1 j0", "main c2") in `collsim trace`; and `collsim
 * replay` replays the registration's trace identically. */
Test(ports, builtin_registrations_are_the_builtins)
{
  static char be[1 << 20], re[1 << 20];
  static const char *const models[] = {"relaxed", "a2a3"};
  static const struct { cs_dtype_t dt; const char *dtype; cs_op_t op;
                        const char *opname, *fill; } kinds[] = {
      /* cs_coll_run's inputs are `collsim run`'s default fill of a
       * collective of one's own (arange for fp32, pto for fp16) */
      {CS_FP32, "fp32", CS_SUM, "sum", "arange"},
      {CS_FP16, "fp16", CS_MAX, "max", "pto"}};
  char bt[192], rt[192];
  snprintf(bt, sizeof bt, "%s/b.cstrace", dir);
  snprintf(rt, sizeof rt, "%s/r.cstrace", dir);
  for (uint32_t a = 0; a < CS_NALGOS; a++) {
    const cs_algo_desc_t *ad = cs_algo_desc(a);
    const cs_collective_t *c = cs_coll_builtin(ad->name);
    cr_assert(c, "%s: no registration", ad->name);
    uint32_t ranks = ad->max_ranks < 3 ? ad->max_ranks : 3;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      if ((ad->dtypes && !(ad->dtypes & 1u << kinds[k].dt)) ||
          (ad->ops && !(ad->ops & 1u << kinds[k].op)))
        continue; /* an algorithm of fp32 sums only */
      for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char what[128], n[8], sched[16];
        unsigned seed = 1 + (unsigned)(a + k + m) % 3;
        snprintf(n, sizeof n, "%u", ranks);
        snprintf(sched, sizeof sched, "random:%u", seed);
        snprintf(what, sizeof what, "%s %u ranks %s %s %s %s", ad->name,
                 ranks, kinds[k].dtype, kinds[k].opname, models[m], sched);
        cs_coll_cfg_t cfg = {.nranks = ranks, .count = 1200,
                             .dtype = kinds[k].dt, .op = kinds[k].op,
                             .tile_bytes = 1024, .iters = 2};
        cs_coll_run_opts_t o = {.schedule = sched,
                                .memory_model = models[m], .trace = rt};
        cs_coll_result_t res;
        int rc = cs_coll_run(c, &cfg, &o, &res);
        cr_assert_eq(rc, 0, "%s: registration rc %d: %s", what, rc, res.why);
        cr_assert(res.verified && res.wrong == 0, "%s: not verified", what);
        static cli_out_t r;
        run_cli(&r, 120, "run", "--algo", ad->name, "--ranks", n, "--count",
                "1200", "--dtype", kinds[k].dtype, "--op", kinds[k].opname,
                "--tile-bytes", "1024", "--iters", "2", "--schedule", sched,
                "--memory-model", models[m], "--fill", kinds[k].fill,
                "--trace", bt, NULL);
        cr_assert_eq(r.status, 0, "%s: built-in exit %d: %s%s", what,
                     r.status, r.out, r.err);
        compare_traces(bt, rt, what);
        /* ... recorded as that algorithm's run, which replay takes */
        cs_trace_t t;
        char why[256];
        cr_assert_eq(load_trace(rt, &t, why, sizeof why), 0, "%s", why);
        cr_assert_eq(t.hdr.algo, a, "%s: algo %u", what, t.hdr.algo);
        cs_trace_free(&t);
        run_cli(&r, 120, "replay", rt, NULL);
        cr_assert(r.status == 0 && strstr(r.out, "events: identical"),
                  "%s: replay exit %d: %s%s", what, r.status, r.out, r.err);
        event_lines(bt, be, sizeof be);
        event_lines(rt, re, sizeof re);
        cr_assert_str_eq(be, re, "%s: the tags differ", what);
      }
    }
  }
}
