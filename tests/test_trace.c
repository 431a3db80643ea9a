/*
 * test_trace.c - the transfer log end to end: a traced run reads back, the
 * shipped sample traces still parse and carry the algorithms' byte
 * volumes, sequence numbers are causal (every wait-end sorts after the
 * notifies it observed), a crashed run's trace ends with its fault, every
 * export is valid JSON, and the reader survives thousands of corrupt
 * files. Runs the real binary (COLLSIM_BIN, set by ctest) with a kill
 * timer; loads traces in-process with cs_trace_load. No python: the JSON
 * checker is below.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../collectives/allreduce.h"
#include "../sim/launch.h"
#include "../sim/sched.h"
#include "../sim/trace.h"
#include "../sim/trace/check.h"
#include "../window/cs_error.h"
#include "../window/world.h"

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif
#define SAMPLE_RING COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace"
#define SAMPLE_MESH COLLSIM_SOURCE_DIR "/traces/mesh-n3-c4097-fp32-max.cstrace"

/* ------------------------------------------------------------ running */

#include "harness.h"

static void tmp_path(char *buf, size_t n, const char *what)
{
  snprintf(buf, n, "/tmp/collsim-test-trace-%d-%s", (int)getpid(), what);
}

/* Every test's files go, whether it passed or not (each test is its own
 * process, so the pid names them). */
static void remove_tmp_files(void)
{
  char pattern[64];
  snprintf(pattern, sizeof(pattern), "/tmp/collsim-test-trace-%d-*", (int)getpid());
  glob_t g;
  if (glob(pattern, 0, NULL, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; i++)
      unlink(g.gl_pathv[i]);
  globfree(&g);
}
TestSuite(trace, .fini = remove_tmp_files);

/* Whole file into a NUL-terminated heap buffer. */
static char *read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = 0;
  fclose(f);
  if (len)
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

static cli_out_t r;

/* ------------------------------------------------------------ JSON */

/* A strict JSON (RFC 8259) syntax checker: returns 1 if s[0..n) is exactly
 * one JSON value with optional surrounding white space. */
typedef struct js {
  const char *p, *end;
  int depth;
} js_t;

static void js_ws(js_t *j)
{
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' ||
                           *j->p == '\r'))
    j->p++;
}

static int js_lit(js_t *j, const char *w)
{
  size_t n = strlen(w);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
    return 0;
  j->p += n;
  return 1;
}

static int js_string(js_t *j)
{
  if (j->p >= j->end || *j->p != '"')
    return 0;
  j->p++;
  while (j->p < j->end) {
    unsigned char c = (unsigned char)*j->p++;
    if (c == '"')
      return 1;
    if (c < 0x20)
      return 0;
    if (c == '\\') {
      if (j->p >= j->end)
        return 0;
      char e = *j->p++;
      if (e == 'u') {
        for (int i = 0; i < 4; i++, j->p++)
          if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
            return 0;
      } else if (!strchr("\"\\/bfnrt", e) || !e) {
        return 0;
      }
    }
  }
  return 0;
}

static int js_digits(js_t *j)
{
  const char *s = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
    j->p++;
  return j->p > s;
}

static int js_number(js_t *j)
{
  if (j->p < j->end && *j->p == '-')
    j->p++;
  if (j->p < j->end && *j->p == '0')
    j->p++;
  else if (!js_digits(j))
    return 0;
  if (j->p < j->end && *j->p == '.') {
    j->p++;
    if (!js_digits(j))
      return 0;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
      j->p++;
    if (!js_digits(j))
      return 0;
  }
  return 1;
}

static int js_value(js_t *j);

static int js_container(js_t *j, char open, char close, int object)
{
  if (++j->depth > 64)
    return 0;
  j->p++; /* open */
  js_ws(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    j->depth--;
    return 1;
  }
  for (;;) {
    js_ws(j);
    if (object) {
      if (!js_string(j))
        return 0;
      js_ws(j);
      if (j->p >= j->end || *j->p++ != ':')
        return 0;
    }
    if (!js_value(j))
      return 0;
    js_ws(j);
    if (j->p >= j->end)
      return 0;
    char c = *j->p++;
    if (c == close)
      break;
    if (c != ',')
      return 0;
  }
  (void)open;
  j->depth--;
  return 1;
}

static int js_value(js_t *j)
{
  js_ws(j);
  if (j->p >= j->end)
    return 0;
  switch (*j->p) {
  case '{': return js_container(j, '{', '}', 1);
  case '[': return js_container(j, '[', ']', 0);
  case '"': return js_string(j);
  case 't': return js_lit(j, "true");
  case 'f': return js_lit(j, "false");
  case 'n': return js_lit(j, "null");
  default: return js_number(j);
  }
}

static int json_valid(const char *s, size_t n)
{
  js_t j = {s, s + n, 0};
  if (!js_value(&j))
    return 0;
  js_ws(&j);
  return j.p == j.end;
}

static int json_valid_str(const char *s)
{
  return json_valid(s, strlen(s));
}

Test(trace, json_checker_rejects_what_is_not_json)
{
  cr_assert(json_valid_str("{\"a\":[1,2.5,-3e4,true,false,null,\"x\\u00e9\\n\"]}"));
  cr_assert(json_valid_str(" [ ] "));
  cr_assert(!json_valid_str("{\"a\":1,}"), "trailing comma");
  cr_assert(!json_valid_str("[1,2,]"), "trailing comma");
  cr_assert(!json_valid_str("{\"a\":1"), "unclosed");
  cr_assert(!json_valid_str("{a:1}"), "bare key");
  cr_assert(!json_valid_str("\"tab\there\""), "raw control character");
  cr_assert(!json_valid_str("\"\\x\""), "bad escape");
  cr_assert(!json_valid_str("01"), "leading zero");
  cr_assert(!json_valid_str("1."), "bare point");
  cr_assert(!json_valid_str("{} {}"), "two values");
  cr_assert(!json_valid_str(""), "empty");
}

/* ------------------------------------------------------------ helpers */

/* Raw access to a trace file's bytes (header, record i), and resealing
 * after an edit. */
static void reseal_header(uint8_t *b)
{
  cs_trace_header_t h;
  memcpy(&h, b, sizeof(h));
  h.checksum = 0;
  h.checksum = cs_trace_fnv32(&h, sizeof(h));
  memcpy(b, &h, sizeof(h));
}

static void reseal_record(uint8_t *b, uint64_t i)
{
  cs_trace_rec_t x;
  uint8_t *p = b + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES;
  memcpy(&x, p, sizeof(x));
  x.checksum = cs_trace_rec_sum(&x);
  memcpy(p, &x, sizeof(x));
}

static cs_trace_rec_t *rec_at(uint8_t *b, uint64_t i)
{
  return (cs_trace_rec_t *)(b + CS_TRACE_HEADER_BYTES + i * CS_TRACE_RECORD_BYTES);
}

static void load_ok(const char *path, cs_trace_t *t)
{
  char why[512] = "";
  int rc = load_trace(path, t, why, sizeof(why));
  cr_assert_eq(rc, 0, "%s does not load: %s", path, why);
}

static const cs_trace_rec_t *last_rec(const cs_trace_t *t)
{
  cr_assert_gt(t->n, 0);
  return &t->rec[t->n - 1];
}

/* Runs a traced allreduce into `path`; asserts it succeeded. */
static void traced_run(const char *path, const char *algo, const char *ranks,
                       const char *count, const char *dtype, const char *op,
                       const char *tile, const char *iters)
{
  run_cli(&r, 120, "run", "--algo", algo, "--ranks", ranks, "--count", count,
          "--dtype", dtype, "--op", op, "--tile-bytes", tile, "--iters", iters,
          "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "run failed (%d): %s%s", r.status, r.out, r.err);
}

/* The value of "key":NUMBER in the JSON line of rank `rank` of
 * `--stats --format jsonl` output. */
static long long stat_of(const char *out, unsigned rank, const char *key)
{
  char want[64], k[64];
  snprintf(want, sizeof(want), "{\"type\":\"stats\",\"rank\":%u,", rank);
  snprintf(k, sizeof(k), "\"%s\":", key);
  const char *line = strstr(out, want);
  cr_assert_not_null(line, "no stats line for rank %u in:\n%s", rank, out);
  const char *eol = strchr(line, '\n');
  const char *v = strstr(line, k);
  cr_assert(v && (!eol || v < eol), "no %s for rank %u", key, rank);
  return strtoll(v + strlen(k), NULL, 10);
}

/* ------------------------------------------------------------ reading */

Test(trace, traced_run_reads_back_whole_and_in_causal_order, .timeout = 120)
{
  char path[128], txt[128], jsl[128];
  tmp_path(path, sizeof(path), "run.cstrace");
  tmp_path(txt, sizeof(txt), "run.txt");
  tmp_path(jsl, sizeof(jsl), "run.jsonl");
  traced_run(path, "ring", "4", "4097", "fp32", "sum", "1024", "2");
  cs_trace_t t;
  load_ok(path, &t);
  cr_assert_eq(t.hdr.version, CS_TRACE_VERSION);
  cr_assert_eq(t.hdr.nranks, 4);
  cr_assert_eq(t.hdr.count, 4097);
  cr_assert_eq(t.hdr.iters, 2);
  cr_assert_eq(t.hdr.tile_bytes, 1024);
  cr_assert_str_eq(t.hdr.schedule, "free");
  uint64_t per_rank[4] = {0};
  for (uint64_t i = 0; i < t.n; i++) {
    if (i)
      cr_assert_gt(t.rec[i].seq, t.rec[i - 1].seq, "not sorted at %llu",
                   (unsigned long long)i);
    cr_assert_lt(t.rec[i].rank, 4);
    per_rank[t.rec[i].rank]++;
    cr_assert(t.rec[i].kind != CS_TR_FAULT && t.rec[i].kind != CS_TR_ABORT);
  }
  for (int k = 0; k < 4; k++)
    cr_assert_gt(per_rank[k], 100, "rank %d recorded %llu events", k,
                 (unsigned long long)per_rank[k]);

  run_cli(&r, 60, "trace", path, "-o", txt, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  size_t len;
  char *s = read_all(txt, &len);
  cr_assert(strstr(s, "program   allreduce ring, 4 ranks, count 4097 x fp32"), "%.600s", s);
  cr_assert(strstr(s, "slots"), "%.600s", s);
  cr_assert(strstr(s, "wait-end"));
  cr_assert(strstr(s, "AG t2 j4"), "ring tags missing");
  free(s);

  run_cli(&r, 60, "trace", "--format", "jsonl", path, "-o", jsl, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  s = read_all(jsl, &len);
  uint64_t lines = 0;
  for (char *p = s, *e; *p; p = e + 1) {
    e = strchr(p, '\n');
    cr_assert_not_null(e, "last line unterminated");
    cr_assert(json_valid(p, (size_t)(e - p)), "line %llu is not JSON: %.*s",
              (unsigned long long)lines, (int)(e - p), p);
    if (lines == 0)
      cr_assert(!strncmp(p, "{\"type\":\"header\"", 16) &&
                strstr(p, "\"tick_ns\":"), "%.*s", (int)(e - p), p);
    else
      cr_assert(!strncmp(p, "{\"type\":\"event\"", 15));
    lines++;
  }
  cr_assert_eq(lines, t.n + 1, "%llu lines for %llu events",
               (unsigned long long)lines, (unsigned long long)t.n);
  free(s);
  cs_trace_free(&t);
  unlink(path);
  unlink(txt);
  unlink(jsl);
}

/* A trace of several chunks per rank (written while the run goes, each
 * rank's last partial chunk appended at the end) reads back whole — every
 * rank's remote loads add up to the ring's 2(N-1)/N*S per call — and its
 * clock-tick times convert to ns that grow along each rank and fit inside
 * the run's wall time as this test measured it. */
Test(trace, multi_chunk_trace_reads_back_with_ns_times_inside_the_run,
     .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "big.cstrace");
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "2", "--count", "262144",
          "--iters", "200", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cs_trace_t t;
  load_ok(path, &t);
  uint64_t per_rank[2] = {0, 0};
  for (uint64_t i = 0; i < t.n; i++)
    per_rank[t.rec[i].rank & 1]++;
  for (int k = 0; k < 2; k++)
    cr_assert_gt(per_rank[k], 2 * cs_trace_chunk_rec(2), "rank %d: %llu records, "
                 "not several chunks", k, (unsigned long long)per_rank[k]);
  /* The rate applied to the raw ticks, computed here from the file. */
  size_t raw_size;
  uint8_t *raw = (uint8_t *)read_all(path, &raw_size);
  double rate = ((cs_trace_header_t *)raw)->tick_ns;
  uint64_t raw_max = 0;
  for (uint64_t i = 0; i < t.n; i++)
    if (rec_at(raw, i)->t_ns > raw_max)
      raw_max = rec_at(raw, i)->t_ns;
  free(raw);
  /* The calls alone took at least iters x half the median time per call. */
  const char *tpc = strstr(r.out, "time per call: ");
  cr_assert_not_null(tpc, "%s", r.out);
  double per_call_us = strtod(tpc + 15, NULL);
  cr_assert(t.hdr.tick_ns == 0 || (t.hdr.tick_ns > 0.01 && t.hdr.tick_ns < 100),
            "tick_ns %g", t.hdr.tick_ns);
  uint64_t last[2] = {0, 0}, max_t = 0;
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    cr_assert_lt(x->rank, 2);
    cr_assert_geq(x->t_ns, last[x->rank], "rank %u goes back in time at seq %llu",
                  x->rank, (unsigned long long)x->seq);
    last[x->rank] = x->t_ns;
    if (x->t_ns > max_t)
      max_t = x->t_ns;
  }
  double want = rate > 0 ? (double)raw_max * rate : (double)raw_max;
  cr_assert(fabs((double)max_t - want) <= 1, "last time %llu ns, ticks x rate %.0f",
            (unsigned long long)max_t, want);
  cr_assert_gt((double)max_t, 200 * per_call_us * 1e3 / 2, "the trace spans %.6f s, "
               "the 200 calls alone took about %.6f s", (double)max_t / 1e9,
               200 * per_call_us / 1e6);
  cr_assert_lt((double)max_t, r.seconds * 1e9, "the trace spans %.3f s, the run "
               "took %.3f s", (double)max_t / 1e9, r.seconds);
  cs_trace_free(&t);
  run_cli(&r, 60, "trace", "--stats", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "verdict: every rank matches 2(N-1)/N*S"), "%s", r.out);
  unlink(path);
}

/* Remote-load bytes per rank in a loaded trace. */
static void remote_load_bytes(const cs_trace_t *t, uint32_t esize, uint64_t *per_rank)
{
  for (uint32_t k = 0; k < t->hdr.nranks; k++)
    per_rank[k] = 0;
  for (uint64_t i = 0; i < t->n; i++)
    if (t->rec[i].kind == CS_EV_LOAD && t->rec[i].peer != t->rec[i].rank)
      per_rank[t->rec[i].rank] += (uint64_t)t->rec[i].valid * esize;
}

/* Traces a launch of fn on w into path (header th; failures reported to
 * `report`), closes the trace — asserted clean — and destroys w. Returns
 * cs_launch's result. */
static int launch_traced(cs_world_t *w, const char *path, cs_trace_header_t *th,
                         cs_rank_fn fn, void *arg, FILE *report)
{
  cs_tracer_t *tr;
  cr_assert_eq(cs_tracer_open(&tr, path, th, w), 0);
  int st[CS_MAX_RANKS];
  cs_launch_opts_t lo = {.statuses = st, .report = report};
  cs_tracer_launch_opts(tr, &lo);
  cs_launch_result_t res;
  int rc = cs_launch(w, fn, arg, &lo, &res);
  cr_assert_eq(cs_tracer_close(tr, &res, st), 0);
  cs_world_destroy(w);
  return rc;
}

/* Rings far smaller than the run — 4 chunks of 256 records per rank, for
 * a run that records ~2300 per rank — so every rank hands over chunk after
 * chunk and waits for slots the launcher has not written yet: still no
 * record is lost (each rank's remote loads are the ring's 2(N-1)/N*S per
 * call, N = 2), none is doubled (the reader refuses repeated sequence
 * numbers), and every rank's events are there in order. */
Test(trace, small_rings_cycle_through_their_chunks_and_lose_nothing, .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "small.cstrace");
  cs_ar_cfg_t c = {.algo = CS_ALGO_RING, .dtype = CS_FP32, .op = CS_SUM,
                   .nranks = 2, .count = 262144, .tile_bytes = 16384, .iters = 3};
  cs_layout_t l;
  cr_assert_eq(cs_ar_layout(&c, &l), 0);
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(&c), .timeout_ns = 20000000000ull,
                        .trace_bytes = cs_trace_ring_bytes(256)};
  cs_world_t w;
  cr_assert_eq(cs_world_create(&w, &l, c.nranks, &wo), 0);
  for (uint32_t k = 0; k < c.nranks; k++)
    cs_ar_fill(CS_FILL_ARANGE, &c, 1, k, cs_world_input(&w, k));
  cs_trace_header_t th = {.count = c.count, .algo = c.algo, .iters = c.iters,
                          .tile_bytes = c.tile_bytes};
  cr_assert_eq(launch_traced(&w, path, &th, cs_ar_rank_main, &c, stderr), 0);
  cs_trace_t t;
  load_ok(path, &t);
  cr_assert_gt(t.n, 2 * 8 * 256, "%llu records: not several laps of the rings",
               (unsigned long long)t.n);
  uint64_t got[2];
  remote_load_bytes(&t, 4, got);
  for (int k = 0; k < 2; k++)
    cr_assert_eq(got[k], c.count * 4 * c.iters, "rank %d: %llu remote bytes", k,
                 (unsigned long long)got[k]);
  uint64_t last[2] = {0, 0}, marks[2] = {0, 0};
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    cr_assert_lt(x->rank, 2);
    cr_assert_geq(x->t_ns, last[x->rank]);
    last[x->rank] = x->t_ns;
    marks[x->rank] += x->kind == CS_EV_MARK;
  }
  /* Per call: a reduce-scatter and an all-gather marker per round. */
  cr_assert_eq(marks[0], marks[1]);
  cr_assert_gt(marks[0], 0);
  cs_trace_free(&t);
  unlink(path);
}

/* A free-mode run that laps its ring several times (host, 2 ranks, 1 MiB:
 * ~7 300 records per rank per call, 30 calls, against a ring of 4 chunks
 * of cs_trace_chunk_rec(2) records; each rank writes its ring's pages once
 * at its first record, then over and over): every record read back, no
 * findings from the checker (`collsim check`'s), and `collsim replay`
 * re-executes it event for event with the recorded ones, each compared
 * before it runs, to the verified result. */
Test(trace, a_run_that_laps_its_ring_checks_and_replays_identically,
     .timeout = 300)
{
  char path[128];
  tmp_path(path, sizeof(path), "laps.cstrace");
  run_cli(&r, 120, "run", "--algo", "host", "--ranks", "2", "--count", "262144",
          "--iters", "30", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "run failed (%d): %s%s", r.status, r.out, r.err);
  cs_trace_t t;
  load_ok(path, &t);
  uint64_t per_rank[2] = {0, 0}, ring = CS_TRACE_CHUNKS * cs_trace_chunk_rec(2);
  for (uint64_t i = 0; i < t.n; i++) {
    cr_assert_lt(t.rec[i].rank, 2, "record %llu: rank %u",
                 (unsigned long long)i, t.rec[i].rank);
    per_rank[t.rec[i].rank]++;
  }
  for (int k = 0; k < 2; k++)
    cr_assert_gt(per_rank[k], 3 * ring, "rank %d: %llu records, not three laps "
                 "of a %llu-record ring", k, (unsigned long long)per_rank[k],
                 (unsigned long long)ring);
  cs_check_report_t rep;
  cr_assert_eq(cs_check_run(&t, &rep), 0);
  cr_assert_eq(rep.records, t.n);
  cr_assert_eq(rep.n, 0, "%llu findings in a correct run", (unsigned long long)rep.n);
  cr_assert_eq(rep.failed, 0);
  cr_assert_eq(rep.aborted, 0);
  cs_check_report_fini(&rep);
  char want[64];
  snprintf(want, sizeof(want), "replayed %llu events: identical; outcome: verified",
           (unsigned long long)t.n);
  cs_trace_free(&t);
  run_cli(&r, 240, "replay", path, NULL);
  cr_assert_eq(r.status, 0, "replay failed (%d): %s%s", r.status, r.out, r.err);
  cr_assert(strstr(r.out, want), "no '%s' in: %s", want, r.out);
  unlink(path);
}

/* One controlled run of the ring (3 ranks, relaxed: DMA landings too),
 * recorded into `path`, or into memory (*m) when path is NULL; over the
 * pool when pool is not NULL (the world is then kept in *w for the next
 * run). Rings of 4 chunks of 256 records, so the run hands chunks over. */
static void controlled_run(cs_world_t *w, const char *path, cs_trace_t *m,
                           cs_launch_pool_t *pool, const cs_ar_cfg_t *c)
{
  cs_sched_cfg_t s = {0};
  cr_assert_eq(cs_sched_parse("random:5", &s, NULL), 0);
  s.model = CS_MM_RELAXED;
  if (!w->base) {
    cs_layout_t l;
    cr_assert_eq(cs_ar_layout(c, &l), 0);
    cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = 20000000000ull,
                          .trace_bytes = cs_trace_ring_bytes(256),
                          .sched_bytes = cs_sched_area_bytes(c->nranks, (1u << 20) +
                                                             2ull * c->tile_bytes)};
    cr_assert_eq(cs_world_create(w, &l, c->nranks, &wo), 0);
  } else {
    cs_launch_pool_reset(pool, w);
  }
  for (uint32_t k = 0; k < c->nranks; k++)
    cs_ar_fill(CS_FILL_ARANGE, c, 1, k, cs_world_input(w, k));
  cs_trace_header_t th = {.count = c->count, .algo = c->algo, .iters = c->iters,
                          .tile_bytes = c->tile_bytes};
  cs_tracer_t *tr;
  cr_assert_eq(path ? cs_tracer_open(&tr, path, &th, w) : cs_tracer_open_mem(&tr, &th, w), 0);
  int st[CS_MAX_RANKS];
  cs_launch_opts_t lo = {.statuses = st, .sched = &s, .pool = pool};
  cs_tracer_launch_opts(tr, &lo);
  cs_launch_result_t res;
  cr_assert_eq(cs_launch(w, cs_ar_rank_main, (void *)c, &lo, &res), 0);
  if (path)
    cr_assert_eq(cs_tracer_close(tr, &res, st), 0);
  else
    cr_assert_eq(cs_tracer_close_mem(tr, &res, st, m), 0);
  if (!pool)
    cs_world_destroy(w);
}

/* Two record sets of one controlled schedule are the same but for the
 * times (and so the checksums). */
static void same_but_times(const cs_trace_t *a, const cs_trace_t *b)
{
  cr_assert_eq(a->n, b->n);
  cr_assert_eq(a->hdr.end_records, b->hdr.end_records);
  for (uint64_t i = 0; i < a->n; i++) {
    cs_trace_rec_t x = a->rec[i], y = b->rec[i];
    x.t_ns = y.t_ns = 0;
    x.checksum = y.checksum = 0;
    cr_assert(!memcmp(&x, &y, sizeof(x)), "record %llu differs",
              (unsigned long long)i);
  }
}

/* A memory tracer (explore --check) hands over the records the file
 * holds, sorted by seq: the same controlled schedule recorded both ways
 * gives the same records but for the times, with chunks handed over
 * during the run; and recorded into memory again over a pool's kept ranks
 * (hooks with a pool: controlled mode), the same once more. */
Test(trace, memory_tracer_holds_the_file_records_also_on_kept_ranks, .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "mem.cstrace");
  cs_ar_cfg_t c = {.algo = CS_ALGO_RING, .dtype = CS_FP32, .op = CS_SUM,
                   .nranks = 3, .count = 40, .tile_bytes = 16384, .iters = 4};
  cs_world_t w = {0};
  controlled_run(&w, path, NULL, NULL, &c);
  cs_trace_t f, m1, m2;
  load_ok(path, &f);
  cr_assert_gt(f.n, 3 * 256, "%llu records: no chunk handed over",
               (unsigned long long)f.n);
  cs_launch_pool_t *pool;
  cr_assert_eq(cs_launch_pool_open(&pool, c.nranks), 0);
  w = (cs_world_t){0};
  controlled_run(&w, NULL, &m1, pool, &c);
  cr_assert(cs_launch_pool_alive(pool));
  controlled_run(&w, NULL, &m2, pool, &c);
  same_but_times(&f, &m1);
  same_but_times(&f, &m2);
  for (uint64_t i = 0; i < m1.n; i++)
    cr_assert_eq(m1.rec[i].checksum, cs_trace_rec_sum(&m1.rec[i]));
  cs_launch_pool_close(pool);
  cs_world_destroy(&w);
  cs_trace_free(&f);
  cs_trace_free(&m1);
  cs_trace_free(&m2);
  unlink(path);
}

Test(trace, sample_traces_still_parse)
{
  cs_trace_t t;
  load_ok(SAMPLE_RING, &t);
  cr_assert_eq(t.hdr.nranks, 4);
  cr_assert_eq(t.hdr.count, 17);
  cr_assert_eq(t.hdr.dtype, 1); /* fp16 */
  cr_assert_eq(t.hdr.op, 0);    /* sum */
  cr_assert_eq(t.hdr.algo, 1);  /* ring */
  cr_assert_gt(t.n, 100);
  cs_trace_free(&t);
  load_ok(SAMPLE_MESH, &t);
  cr_assert_eq(t.hdr.nranks, 3);
  cr_assert_eq(t.hdr.count, 4097);
  cr_assert_eq(t.hdr.dtype, 0); /* fp32 */
  cr_assert_eq(t.hdr.op, 1);    /* max */
  cr_assert_eq(t.hdr.algo, 0);  /* mesh */
  cs_trace_free(&t);
  run_cli(&r, 30, "trace", SAMPLE_RING, "--kind", "notify", "--rank", "2", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "notify     -> r"), "%.2000s", r.out);
  cr_assert_null(strstr(r.out, "  r1   "), "--rank 2 shows rank 1");
  cr_assert_null(strstr(r.out, " load "), "--kind notify shows a load");
}

/* Ring segment lengths of docs/algorithms.md §4.2 for 2-byte dtypes, written
 * out again here: B(i) = min(S, ceil(i*S/(16*N))*16). */
static uint64_t seg_len_fp16(uint64_t k, uint64_t size, uint64_t n)
{
  uint64_t b0 = (k * size + 16 * n - 1) / (16 * n) * 16;
  uint64_t b1 = ((k + 1) * size + 16 * n - 1) / (16 * n) * 16;
  b0 = b0 < size ? b0 : size;
  b1 = b1 < size ? b1 : size;
  return b1 - b0;
}

/* The FP16 remote over-read and the --stats volumes on traces this build
 * records (the test above reads the shipped ones): ring N = 4, count 17
 * fp16 and mesh N = 3, count 17 fp16. Every remote load is v valid
 * elements read as ceil(v/16)*16 (the reference's rv), and --stats counts
 * the valid bytes of the segment table. */
Test(trace, fresh_traces_over_read_fp16_as_the_reference_and_stats_agree,
     .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "fp16.cstrace");
  traced_run(path, "ring", "4", "17", "fp16", "sum", "16384", "1");
  cs_trace_t t;
  load_ok(path, &t);
  uint64_t remote = 0;
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    if (x->kind != CS_EV_LOAD || x->peer == x->rank)
      continue;
    remote++;
    cr_assert_eq(x->phys, (x->valid + 15) / 16 * 16, "seq %llu: valid %u phys %u",
                 (unsigned long long)x->seq, x->valid, x->phys);
    cr_assert(x->valid == 16 || x->valid == 1, "segments are 16, 0, 0, 1");
  }
  cr_assert_gt(remote, 0);
  cs_trace_free(&t);
  run_cli(&r, 30, "trace", "--stats", "--format", "jsonl", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const long long by_hand[4] = {34, 36, 68, 66}; /* 2S - |seg r-1| - |seg r| */
  for (unsigned k = 0; k < 4; k++) {
    cr_assert_eq(stat_of(r.out, k, "load_remote_bytes"), by_hand[k], "rank %u", k);
    cr_assert_eq(stat_of(r.out, k, "segment_table_bytes"), by_hand[k]);
  }

  /* Mesh, count 17 fp16: W = 32, one chunk; each remote load is 17 valid
   * elements read as 32, 15 past the count, inside the 64-byte slot. */
  traced_run(path, "mesh", "3", "17", "fp16", "sum", "16384", "1");
  load_ok(path, &t);
  remote = 0;
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    if (x->kind != CS_EV_LOAD || x->peer == x->rank)
      continue;
    remote++;
    cr_assert(x->valid == 17 && x->phys == 32, "seq %llu: valid %u phys %u",
              (unsigned long long)x->seq, x->valid, x->phys);
  }
  cr_assert_eq(remote, 3 * 2, "each rank reads both peers once");
  cs_trace_free(&t);
  run_cli(&r, 30, "trace", "--stats", "--format", "jsonl", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (unsigned k = 0; k < 3; k++)
    cr_assert_eq(stat_of(r.out, k, "load_remote_bytes"), 2 * 17 * 2, "rank %u", k);
}

Test(trace, stats_bytes_equal_the_reference_volumes)
{
  /* Ring, N = 4, count 17 fp16: segments 16, 0, 0, 1 elements. Rank r
   * reads every segment but r-1 (reduce-scatter) and every segment but r
   * (all-gather) from its left neighbour: 2S - |seg r-1| - |seg r|. */
  const uint64_t n = 4, count = 17, es = 2;
  const long long by_hand[4] = {34, 36, 68, 66};
  cr_assert_eq(seg_len_fp16(0, count, n), 16);
  cr_assert_eq(seg_len_fp16(1, count, n), 0);
  cr_assert_eq(seg_len_fp16(2, count, n), 0);
  cr_assert_eq(seg_len_fp16(3, count, n), 1);
  run_cli(&r, 30, "trace", "--stats", "--format", "jsonl", SAMPLE_RING, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  long long total = 0;
  for (unsigned k = 0; k < n; k++) {
    uint64_t want = (2 * count - seg_len_fp16((k + n - 1) % n, count, n) -
                     seg_len_fp16(k, count, n)) * es;
    cr_assert_eq((long long)want, by_hand[k]);
    long long got = stat_of(r.out, k, "load_remote_bytes");
    cr_assert_eq(got, by_hand[k], "rank %u loaded %lld B remotely, expected %lld",
                 k, got, by_hand[k]);
    cr_assert_eq(stat_of(r.out, k, "segment_table_bytes"), by_hand[k]);
    total += got;
  }
  /* Summed over ranks the ring volume is exact: N * 2(N-1)/N * S. */
  cr_assert_eq(total, (long long)(2 * (n - 1) * count * es));
  cr_assert(strstr(r.out, "\"reference_bytes\":51,"), "2(N-1)/N*S = 51: %s", r.out);

  /* Mesh, N = 3, count 4097 fp32: (N-1) * S per rank. */
  run_cli(&r, 30, "trace", "--stats", "--format", "jsonl", SAMPLE_MESH, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (unsigned k = 0; k < 3; k++) {
    cr_assert_eq(stat_of(r.out, k, "load_remote_bytes"), 2 * 4097 * 4);
    cr_assert_eq(stat_of(r.out, k, "store_bytes"), 2 * 4097 * 4,
                 "stage-in + result store");
  }
  cr_assert(strstr(r.out, "\"verdict\":\"matches\""), "%s", r.out);

  /* The text table says the same. */
  run_cli(&r, 30, "trace", "--stats", SAMPLE_RING, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "2(N-1)*S = 204 B: matches"), "%s", r.out);
  cr_assert(strstr(r.out, "every rank matches its segment table"), "%s", r.out);
}

/* The reference's signal counts per rank and call, written from its
 * formulas (PR #2161: mesh (N-1)(1+C), ring 4K(N-1)^2, host
 * (N-1)(1+ceil(n/256)) notifies; cells end at 1+C, 2K, 1+ceil(n/256)) and
 * the later self-clearing epilogue (one more notify per non-self cell of
 * the own window, cells end at 0). */
typedef struct sig_case {
  const char *algo, *ranks, *count;
  long long   n, units;  /* N, and C (mesh), K (ring), ceil(n/256) (host) */
} sig_case_t;

static void check_signals(const sig_case_t *c, int single)
{
  char path[128];
  tmp_path(path, sizeof(path), "signals.cstrace");
  run_cli(&r, 60, "run", "--algo", c->algo, "--ranks", c->ranks, "--count",
          c->count, "--iters", "1", "--signals",
          single ? "single-use" : "self-clearing", "--trace", path, NULL);
  cr_assert_eq(r.status, 0, "run failed: %s%s", r.out, r.err);
  long long n1 = c->n - 1, notifies, final, epi;
  if (!strcmp(c->algo, "ring")) {
    notifies = 4 * c->units * n1 * n1;
    final = 2 * c->units;
    epi = 2 * n1 * n1; /* 2(N-1) rows x (N-1) cells */
  } else {
    notifies = n1 * (1 + c->units);
    final = 1 + c->units;
    epi = n1;
  }
  if (!single) {
    notifies += epi;
    final = 0;
  }
  run_cli(&r, 30, "trace", "--stats", "--format", "jsonl", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  for (unsigned k = 0; k < (unsigned)c->n; k++) {
    cr_assert_eq(stat_of(r.out, k, "notifies"), notifies, "%s %s rank %u",
                 c->algo, single ? "single-use" : "self-clearing", k);
    cr_assert_eq(stat_of(r.out, k, "signal_cells_min"), final);
    cr_assert_eq(stat_of(r.out, k, "signal_cells_max"), final);
  }
  run_cli(&r, 30, "trace", "--stats", path, NULL);
  cr_assert(strstr(r.out, "verdict: the signals match the reference"), "%s",
            r.out);
  unlink(path);
}

/* The device's own events are counted: the ring takes 4K(N-1) barriers
 * per call, each one pipe barrier under --bug drain-no-ddr-fence (and no
 * DDR fence); under a2a3 no landing of an AtomicAdd is a line write-back. */
Test(trace, stats_count_the_pipe_barriers_of_every_barrier, .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "pipe.cstrace");
  run_cli(&r, 120, "run", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--iters", "2", "--bug", "drain-no-ddr-fence", "--schedule",
          "random:2", "--memory-model", "a2a3", "--trace", path, NULL);
  cr_assert(r.status == 0 || r.status == 1, "%s%s", r.out, r.err);
  run_cli(&r, 60, "trace", "--stats", "--format", "jsonl", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* K = 1 subchunk (40 fp32 in one 16 KiB tile), N = 3, 2 calls */
  for (unsigned k = 0; k < 3; k++) {
    cr_assert_eq(stat_of(r.out, k, "pipe_barriers"), 2 * 4 * 1 * 2, "rank %u", k);
    cr_assert_eq(stat_of(r.out, k, "ddr_fences"), 0);
    cr_assert_eq(stat_of(r.out, k, "line_writebacks"), 0);
  }
  run_cli(&r, 60, "trace", "--stats", path, NULL);
  cr_assert(strstr(r.out, "pipe barriers DDR fences"), "%s", r.out);
  unlink(path);
}

Test(trace, stats_signals_follow_the_reference_for_each_mode, .timeout = 240)
{
  /* mesh N=4, 5000 fp32: W = 4096, C = 2 (9 notifies single-use, 12 with
   * the epilogue); ring N=3, 40 fp32: K = 1 (16 and 24); host N=3, 300
   * elements: ceil(300/256) = 2. */
  const sig_case_t cases[] = {{"mesh", "4", "5000", 4, 2},
                              {"ring", "3", "40", 3, 1},
                              {"host", "3", "300", 3, 2},
                              {"mesh", "2", "17", 2, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    check_signals(&cases[i], 1);
    check_signals(&cases[i], 0);
  }
}

Test(trace, single_use_signals_take_one_call_per_world, .timeout = 30)
{
  run_cli(&r, 20, "run", "--signals", "single-use", "--iters", "2", NULL);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--iters 2 is not accepted with --signals single-use"),
            "%s", r.err);
  run_cli(&r, 20, "run", "--signals", "once", NULL);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "--signals 'once' is not accepted"), "%s", r.err);
  run_cli(&r, 20, "run", "--signals", "single-use", "--bug", "signal-reuse", NULL);
  cr_assert_eq(r.status, 2);
}

/* ------------------------------------------------------------ causality */

typedef struct cell_sum {
  uint32_t rank, slot, cell;
  int64_t  sum;
  int32_t  notifiers; /* bit mask of remote notifier ranks (< 32) */
} cell_sum_t;

static cell_sum_t *cell_of(cell_sum_t *c, size_t *n, size_t cap, uint32_t rank,
                           uint32_t slot, uint32_t cell)
{
  for (size_t i = 0; i < *n; i++)
    if (c[i].rank == rank && c[i].slot == slot && c[i].cell == cell)
      return &c[i];
  cr_assert_lt(*n, cap);
  c[*n] = (cell_sum_t){rank, slot, cell, 0, 0};
  return &c[(*n)++];
}

/* Every wait-end observed v on its own cell. Sequence numbers are taken
 * before a producer's effect and after a consumer's observation, so every
 * notify that had landed when the wait looked has a smaller seq. The sum A
 * of the AtomicAdds with smaller seq (the owner's epilogue subtractions
 * included: they precede the wait in program order) therefore counts every
 * landed add plus at most one in-flight +1 per other notifier rank: with
 * one notifier per cell (ring, mesh), 0 <= A - v <= 1. After the run
 * every cell sums to 0 (the self-clearing epilogue). */
static void check_causality(const char *path, uint64_t min_waits)
{
  cs_trace_t t;
  load_ok(path, &t);
  size_t cap = 4096, ncell = 0;
  cell_sum_t *cells = calloc(cap, sizeof(*cells));
  int64_t *open = calloc(t.hdr.nranks, sizeof(int64_t));
  for (uint32_t k = 0; k < t.hdr.nranks; k++)
    open[k] = -1;
  uint64_t checked = 0, in_flight = 0;
  for (uint64_t i = 0; i < t.n; i++) {
    const cs_trace_rec_t *x = &t.rec[i];
    if (x->kind == CS_EV_NOTIFY) {
      cr_assert_eq(x->opcmp & 0x7f, CS_NOTIFY_ADD);
      cell_sum_t *c = cell_of(cells, &ncell, cap, x->peer, x->slot, x->cell);
      c->sum += x->value;
      if (x->rank != x->peer) {
        cr_assert_eq(x->value, 1, "barrier notifies add 1");
        c->notifiers |= 1 << x->rank;
      } else {
        cr_assert_lt(x->value, 0, "only the epilogue notifies its own cell");
      }
    } else if (x->kind == CS_TR_WAIT_BEGIN) {
      open[x->rank] = (int64_t)i;
    } else if (x->kind == CS_EV_WAIT) {
      /* A wait that blocked has a wait-begin (one satisfied at once has
       * none); if there is one it is this wait's. */
      if (open[x->rank] >= 0) {
        const cs_trace_rec_t *b = &t.rec[open[x->rank]];
        cr_assert(b->seq < x->seq && b->cell == x->cell && b->slot == x->slot);
        cr_assert_lt(b->observed, x->value, "wait-begin #%llu saw the cell "
                     "satisfied", (unsigned long long)b->seq);
      }
      open[x->rank] = -1;
      cr_assert_eq(x->opcmp & 0x7f, CS_CMP_GE);
      cr_assert_geq(x->observed, x->value, "wait #%llu returned unsatisfied",
                    (unsigned long long)x->seq);
      cell_sum_t *c = cell_of(cells, &ncell, cap, x->rank, x->slot, x->cell);
      int64_t slack = c->sum - x->observed;
      cr_assert(slack >= 0 && slack <= __builtin_popcount((unsigned)c->notifiers)
                && slack <= 1,
                "wait-end #%llu on r%u cell %u saw %d but the notifies with "
                "smaller seq sum to %lld", (unsigned long long)x->seq, x->rank,
                x->cell, x->observed, (long long)c->sum);
      in_flight += slack != 0;
      checked++;
    }
  }
  for (size_t i = 0; i < ncell; i++)
    cr_assert_eq(cells[i].sum, 0, "cell %u of r%u ends at %lld", cells[i].cell,
                 cells[i].rank, (long long)cells[i].sum);
  cr_assert_geq(checked, min_waits, "%s: only %llu waits checked", path,
                (unsigned long long)checked);
  cr_log_info("%s: %llu waits consistent, %llu saw an in-flight notify", path,
              (unsigned long long)checked, (unsigned long long)in_flight);
  free(cells);
  free(open);
  cs_trace_free(&t);
}

Test(trace, every_wait_end_sorts_after_the_notifies_it_observed, .timeout = 180)
{
  char ring[128], mesh[128];
  tmp_path(ring, sizeof(ring), "causal-ring.cstrace");
  tmp_path(mesh, sizeof(mesh), "causal-mesh.cstrace");
  /* Several subchunks (small tile) and repeated calls: the epilogue's
   * subtractions interleave with the next call's notifies. */
  traced_run(ring, "ring", "4", "4097", "fp32", "sum", "1024", "4");
  traced_run(mesh, "mesh", "3", "3000", "fp16", "max", "1024", "3");
  check_causality(ring, 4 * 720); /* 2 barriers x K 5 x 6 rounds x 3 peers x 4 calls */
  check_causality(mesh, 3 * 42);  /* 7 barriers x 2 peers x 3 calls */
  check_causality(SAMPLE_RING, 4 * 36);
  check_causality(SAMPLE_MESH, 3 * 6);
  unlink(ring);
  unlink(mesh);
}

/* ------------------------------------------------------------ crashes */

/* The device events `rank` completed, as recorded in t: its records but its
 * wait-begins and the launcher's fault and abort records. */
static uint64_t events_of(const cs_trace_t *t, uint32_t rank)
{
  uint64_t n = 0;
  for (uint64_t i = 0; i < t->n; i++)
    n += t->rec[i].rank == rank && t->rec[i].kind < CS_TR_FAULT &&
         t->rec[i].kind != CS_TR_WAIT_BEGIN;
  return n;
}

/* The trace of a run in which `rank` was killed at the start of its event
 * `event`: it ends with that rank's fault record then the abort record
 * naming it, and holds exactly the rank's events before the fault. */
static void check_ends_with_fault(const cs_trace_t *t, uint32_t rank, uint64_t event)
{
  cr_assert_geq(t->n, 3);
  const cs_trace_rec_t *ab = last_rec(t), *fa = &t->rec[t->n - 2];
  cr_assert_eq(ab->kind, CS_TR_ABORT, "last record is %s", cs_trace_kind_name(ab->kind));
  cr_assert_eq(ab->rank, rank, "first failing rank");
  cr_assert_eq(fa->kind, CS_TR_FAULT, "before it: %s", cs_trace_kind_name(fa->kind));
  cr_assert_eq(fa->rank, rank);
  cr_assert_eq((uint64_t)fa->observed, event, "event index");
  uint64_t n = events_of(t, rank);
  cr_assert_eq(n, event, "rank %u recorded %llu events before event %llu", rank,
               (unsigned long long)n, (unsigned long long)event);
}

Test(trace, crashed_run_exits_3_and_its_trace_ends_with_the_fault, .timeout = 60)
{
  char path[128];
  tmp_path(path, sizeof(path), "crash.cstrace");
  run_cli(&r, 30, "run", "--algo", "ring", "--ranks", "4", "--count", "17",
          "--dtype", "fp16", "--fault", "1:segv:20", "--trace", path, NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  cs_trace_t t;
  load_ok(path, &t);
  /* Events 0..19 completed and were recorded; 20 struck at its start. */
  check_ends_with_fault(&t, 1, 20);
  const cs_trace_rec_t *fa = &t.rec[t.n - 2];
  cr_assert_eq(fa->value, SIGSEGV);
  cr_assert_eq(fa->step, 1, "killed by a signal");
  uint64_t faults = 0;
  for (uint64_t i = 0; i < t.n; i++)
    faults += t.rec[i].kind == CS_TR_FAULT;
  cr_assert_eq(faults, 1, "only the crashed rank has a fault record");
  cs_trace_free(&t);

  run_cli(&r, 30, "trace", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "rank 1 killed by SIGSEGV at event 20"), "%s", r.out);
  cr_assert(strstr(r.out, "run aborted (a rank died), first failing rank 1"), "%s", r.out);
  unlink(path);
}

/* Rank 0 fails after 20 ms; rank 1 fences until it sees the abort, then
 * 2000 times more (what a rank does between an abort and its next wait). */
static int fence_past_abort(cs_dev_t *d, void *arg)
{
  (void)arg;
  if (d->rank == 0) {
    struct timespec ts = {0, 20 * 1000000};
    nanosleep(&ts, NULL);
    return 1;
  }
  while (!__atomic_load_n(&d->world->ctl->abort_word, __ATOMIC_ACQUIRE))
    cs_fence(d);
  for (int i = 0; i < 2000; i++)
    cs_fence(d);
  return 0;
}

/* After an abort a rank whose next chunk is not free drops its records
 * (the launcher may never write again) and tries again at each one; the
 * chunk it had filled must still be written once, not once per try: the
 * trace loads (no sequence number twice) and ends with the fault and the
 * abort. Rings of 4 x 256 records, so rank 1 fills chunks fast. */
Test(trace, a_rank_that_records_after_an_abort_writes_each_chunk_once,
     .timeout = 60)
{
  char path[128];
  tmp_path(path, sizeof(path), "after-abort.cstrace");
  for (int run = 0; run < 3; run++) {
    cs_layout_t l;
    cs_layout_init(&l, 32);
    cr_assert_eq(cs_layout_add(&l, "signal", 64, 4), 0);
    cs_world_opts_t wo = {.timeout_ns = 5000000000ull,
                          .trace_bytes = cs_trace_ring_bytes(256)};
    cs_world_t w;
    cr_assert_eq(cs_world_create(&w, &l, 2, &wo), 0);
    cs_trace_header_t th = {.algo = 255};
    FILE *rep = tmpfile();
    cr_assert_eq(launch_traced(&w, path, &th, fence_past_abort, NULL, rep), 1);
    fclose(rep);
    cs_trace_t t;
    load_ok(path, &t);
    const cs_trace_rec_t *ab = last_rec(&t);
    cr_assert_eq(ab->kind, CS_TR_ABORT, "last record is %s", cs_trace_kind_name(ab->kind));
    cr_assert_eq(t.rec[t.n - 2].kind, CS_TR_FAULT);
    cr_assert_eq(t.rec[t.n - 2].rank, 0);
    cr_assert_gt(t.n, 4 * 256, "%llu records: rank 1 did not lap its ring",
                 (unsigned long long)t.n);
    cs_trace_free(&t);
  }
  unlink(path);
}

/* A rank that dies after its trace has filled several chunks: the chunks
 * written during the run, the ones handed over but not yet written and the
 * partial one it was filling all reach the file — exactly its events
 * before the fault — and the trace still ends with the fault. */
Test(trace, crash_after_several_chunks_keeps_every_event_before_it, .timeout = 60)
{
  char path[128];
  tmp_path(path, sizeof(path), "crash-late.cstrace");
  run_cli(&r, 30, "run", "--algo", "ring", "--ranks", "2", "--count", "262144",
          "--iters", "200", "--fault", "1:segv:120000", "--trace", path, NULL);
  cr_assert_eq(r.status, 3, "%s", r.err);
  cs_trace_t t;
  load_ok(path, &t);
  cr_assert_gt(120000, 2 * cs_trace_chunk_rec(2), "not several chunks");
  check_ends_with_fault(&t, 1, 120000);
  cs_trace_free(&t);
  unlink(path);
}

/* ------------------------------------------------------------ chrome */

static uint64_t count_str(const char *s, const char *needle)
{
  uint64_t n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* Valid JSON, the Trace Event object shape, a named process per rank,
 * waits as slices of positive duration, and every flow start ('s') paired
 * with a finish ('f') of the same id. Returns the number of flows. */
static uint64_t check_chrome(const char *json, size_t len, unsigned nranks)
{
  cr_assert(json_valid(json, len), "not valid JSON");
  cr_assert(!strncmp(json, "{\"displayTimeUnit\":\"ns\"", 23), "%.100s", json);
  cr_assert(strstr(json, "\"traceEvents\":["));
  cr_assert_geq(count_str(json, "\"name\":\"process_name\""), nranks);
  cr_assert_geq(count_str(json, "\"name\":\"thread_name\""), 4 * nranks);
  cr_assert_null(strstr(json, "\"dur\":0.000"), "a slice without duration");
  uint64_t s = count_str(json, "\"ph\":\"s\""), f = count_str(json, "\"ph\":\"f\"");
  cr_assert_eq(s, f, "%llu flow starts, %llu finishes", (unsigned long long)s,
               (unsigned long long)f);
  for (const char *p = json; (p = strstr(p, "\"ph\":\"s\",\"id\":")); p++) {
    unsigned long long id = strtoull(p + 14, NULL, 10);
    cr_assert_gt(id, 0);
    char want[64];
    snprintf(want, sizeof(want), "\"ph\":\"f\",\"id\":%llu,", id);
    cr_assert(strstr(json, want), "flow %llu has no finish", id);
  }
  cr_assert_null(strstr(json, ",]"), "trailing comma");
  cr_assert_null(strstr(json, ",}"), "trailing comma");
  return s;
}

Test(trace, chrome_export_is_valid_trace_event_json, .timeout = 120)
{
  char path[128], out[128];
  tmp_path(path, sizeof(path), "chrome.cstrace");
  tmp_path(out, sizeof(out), "chrome.json");
  traced_run(path, "ring", "4", "4097", "fp32", "sum", "1024", "1");
  cs_trace_t t;
  load_ok(path, &t);
  uint64_t waits = 0;
  for (uint64_t i = 0; i < t.n; i++)
    waits += t.rec[i].kind == CS_EV_WAIT;
  cs_trace_free(&t);

  run_cli(&r, 60, "trace", "--format", "chrome", path, "-o", out, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  size_t len;
  char *json = read_all(out, &len);
  uint64_t flows = check_chrome(json, len, 4);
  /* Every wait of a barrier was satisfied by a peer's notify. */
  cr_assert_eq(flows, waits, "%llu arrows for %llu waits",
               (unsigned long long)flows, (unsigned long long)waits);
  cr_assert_eq(count_str(json, "\"name\":\"wait\""), waits);
  cr_assert(strstr(json, "\"name\":\"RS t0\""), "phase slices");
  free(json);

  /* Filtered exports and a crashed run's export stay valid. */
  run_cli(&r, 60, "trace", "--format", "chrome", "--rank", "1", "--kind",
          "wait,notify", path, "-o", out, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json = read_all(out, &len);
  check_chrome(json, len, 1);
  free(json);
  run_cli(&r, 30, "run", "--ranks", "3", "--count", "100", "--fault", "2:segv:7",
          "--trace", path, NULL);
  cr_assert_eq(r.status, 3);
  run_cli(&r, 60, "trace", "--format", "chrome", path, "-o", out, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json = read_all(out, &len);
  check_chrome(json, len, 3);
  cr_assert(strstr(json, "rank 2 killed by SIGSEGV at event 7"));
  free(json);
  const char *samples[2] = {SAMPLE_RING, SAMPLE_MESH};
  for (int k = 0; k < 2; k++) {
    run_cli(&r, 60, "trace", "--format", "chrome", samples[k], "-o", out, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json = read_all(out, &len);
    cr_assert_gt(check_chrome(json, len, k == 0 ? 4 : 3), 0);
    free(json);
  }
  unlink(path);
  unlink(out);
}

/* ------------------------------------------------------------ bad files */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

typedef struct fuzz {
  char     path[128];
  uint64_t loads, refused;
} fuzz_t;

/* A code the loader refuses a regular file's contents with. */
static int is_refusal(int rc)
{
  return rc == CS_EEMPTY || rc == CS_EMAGIC || rc == CS_ETRUNCATED ||
         rc == CS_EVERSION || rc == CS_EBADHEADER || rc == CS_EBADRECORD ||
         rc == CS_EDUPSEQ;
}

/* Writes buf as a trace, loads it: must return 0 (sorted, whole) or a
 * refusal code with one line and an empty result. Returns the rc. */
static int try_load(fuzz_t *fz, const void *buf, size_t n, const char *what)
{
  write_all(fz->path, buf, n);
  cs_trace_t t;
  char why[512];
  memset(why, 0, sizeof(why));
  memset(&t, 0x5a, sizeof(t));
  int rc = load_trace(fz->path, &t, why, sizeof(why));
  fz->loads++;
  cr_assert(rc == 0 || is_refusal(rc), "%s: rc %d", what, rc);
  if (rc < 0) {
    fz->refused++;
    cr_assert_neq(why[0], 0, "%s: no reason", what);
    cr_assert_null(strchr(why, '\n'), "%s: reason is not one line: %s", what, why);
    cr_assert(t.rec == NULL && t.n == 0, "%s: refused but not left empty", what);
  } else {
    cr_assert_geq(n, CS_TRACE_HEADER_BYTES);
    cr_assert_eq(t.n, (n - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES, "%s", what);
    for (uint64_t i = 1; i < t.n; i++)
      cr_assert_gt(t.rec[i].seq, t.rec[i - 1].seq, "%s: unsorted", what);
    cs_trace_free(&t);
  }
  return rc;
}

static void expect_refused(fuzz_t *fz, const void *buf, size_t n,
                           const char *what, const char *needle)
{
  write_all(fz->path, buf, n);
  cs_trace_t t;
  char why[512] = "";
  int rc = load_trace(fz->path, &t, why, sizeof(why));
  cr_assert(is_refusal(rc), "%s: accepted (rc %d)", what, rc);
  cr_assert(strstr(why, needle), "%s: '%s' not in: %s", what, needle, why);
  cr_assert_null(strchr(why, '\n'));
}




Test(trace, reader_refuses_corrupt_files_with_one_line_and_never_crashes,
     .timeout = 300)
{
  fuzz_t fz = {0};
  tmp_path(fz.path, sizeof(fz.path), "fuzz.cstrace");
  size_t size;
  char *orig = read_all(SAMPLE_RING, &size);
  cr_assert_eq((size - CS_TRACE_HEADER_BYTES) % CS_TRACE_RECORD_BYTES, 0);
  uint64_t nrec = (size - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES;
  cr_assert_gt(nrec, 10);
  uint8_t *b = malloc(size + 4096);
  cr_assert_not_null(b);
  char what[96];

  cr_assert_eq(try_load(&fz, orig, size, "original"), 0);
  /* Empty and truncated: every length through the header and the first
   * records, and every length near the end. */
  expect_refused(&fz, orig, 0, "empty", "empty file");
  for (size_t n = 1; n < CS_TRACE_HEADER_BYTES + 3 * CS_TRACE_RECORD_BYTES; n++) {
    snprintf(what, sizeof(what), "truncated to %zu", n);
    int rc = try_load(&fz, orig, n, what);
    int whole = n >= CS_TRACE_HEADER_BYTES &&
                (n - CS_TRACE_HEADER_BYTES) % CS_TRACE_RECORD_BYTES == 0;
    cr_assert(whole ? rc == 0 : is_refusal(rc), "%s: rc %d", what, rc);
  }
  expect_refused(&fz, orig, 7, "shorter than the magic", "wrong magic");
  expect_refused(&fz, orig, 100, "short", "truncated: 100 bytes, shorter than the 1024-byte header");
  expect_refused(&fz, orig, 1000, "short header", "shorter than the 1024-byte header");
  expect_refused(&fz, orig, 4000, "short header block",
                 "truncated: 4000 bytes, shorter than the 4096-byte header block");
  expect_refused(&fz, orig, size - 1, "last byte gone", "truncated: last record has 79 of 80");
  for (size_t n = size - 3 * CS_TRACE_RECORD_BYTES; n < size; n++) {
    snprintf(what, sizeof(what), "truncated to %zu of %zu", n, size);
    try_load(&fz, orig, n, what);
  }
  /* Every single changed byte is caught: the header and each record are
   * checksummed, the header block's padding must be zero. */
  for (int k = 0; k < 3000; k++) {
    memcpy(b, orig, size);
    size_t at = k < 1024 ? (size_t)k : (size_t)(rnd() % size);
    if (k >= 1024 && k < 1100)
      at = 1024 + (size_t)(rnd() % (CS_TRACE_HEADER_BYTES - 1024)); /* padding */
    b[at] ^= (uint8_t)(1 + rnd() % 255);
    snprintf(what, sizeof(what), "byte %zu changed", at);
    cr_assert(is_refusal(try_load(&fz, b, size, what)), "%s: accepted", what);
  }
  /* Several random changes, random lengths, appended garbage. */
  for (int k = 0; k < 2000; k++) {
    memcpy(b, orig, size);
    int flips = 2 + (int)(rnd() % 30);
    for (int i = 0; i < flips; i++)
      b[rnd() % size] = (uint8_t)rnd();
    size_t n = k % 3 == 0 ? (size_t)(rnd() % (size + 200)) : size;
    if (n > size)
      for (size_t i = size; i < n; i++)
        b[i] = (uint8_t)rnd();
    snprintf(what, sizeof(what), "%d changes, %zu bytes", flips, n);
    try_load(&fz, b, n, what);
  }
  for (int k = 0; k < 200; k++) {
    size_t n = (size_t)(rnd() % (size + 1000));
    for (size_t i = 0; i < n; i++)
      b[i] = (uint8_t)rnd();
    if (k % 2 && n >= 8)
      memcpy(b, "CSTRACE", 8); /* garbage behind a good magic */
    snprintf(what, sizeof(what), "garbage of %zu bytes", n);
    try_load(&fz, b, n, what);
  }
  /* Targeted: each check of the reader fires with its own message. */
  memcpy(b, orig, size);
  memcpy(b, "CSTRACX", 8);
  expect_refused(&fz, b, size, "wrong magic", "wrong magic");
  cs_trace_header_t *h = (cs_trace_header_t *)b;
  memcpy(b, orig, size);
  h->version = CS_TRACE_VERSION + 1;
  reseal_header(b);
  expect_refused(&fz, b, size, "future version", "is newer than this collsim reads");
  memcpy(b, orig, size);
  h->version = 0;
  reseal_header(b);
  expect_refused(&fz, b, size, "version 0", "corrupt header");
  memcpy(b, orig, size);
  h->record_bytes = 96;
  reseal_header(b);
  expect_refused(&fz, b, size, "record size", "corrupt header");
  memcpy(b, orig, size);
  h->nranks = 0;
  reseal_header(b);
  expect_refused(&fz, b, size, "0 ranks", "corrupt header");
  memcpy(b, orig, size);
  h->nranks = 100000;
  reseal_header(b);
  expect_refused(&fz, b, size, "too many ranks", "corrupt header");
  memcpy(b, orig, size);
  h->layout.nslots = CS_MAX_SLOTS + 1;
  reseal_header(b);
  expect_refused(&fz, b, size, "too many slots", "corrupt header");
  memcpy(b, orig, size);
  h->count ^= 1; /* not resealed */
  expect_refused(&fz, b, size, "header changed", "checksum mismatch");
  /* The clock rate: finite, not negative, below 10^6 ns per tick; zero in
   * a version-1 file. */
  double rates[] = {-1.0, 1e6, 1.0 / 0.0, 0.0 / 0.0};
  for (int c = 0; c < 4; c++) {
    memcpy(b, orig, size);
    h->tick_ns = rates[c];
    reseal_header(b);
    snprintf(what, sizeof(what), "tick_ns %g", rates[c]);
    expect_refused(&fz, b, size, what, "ns per clock tick");
  }
  memcpy(b, orig, size);
  h->version = 1;
  h->header_bytes = CS_TRACE_HEADER_STRUCT;
  h->tick_ns = 0.5;
  reseal_header(b);
  expect_refused(&fz, b, size, "version 1 with tick_ns", "ns per clock tick");
  /* A time beyond 2^64 ns after conversion (an edited record) saturates. */
  memcpy(b, orig, size);
  h->tick_ns = 999999.0;
  reseal_header(b);
  rec_at(b, 4)->t_ns = 1ull << 60;
  reseal_record(b, 4);
  {
    write_all(fz.path, b, size);
    cs_trace_t t;
    char why[256];
    cr_assert_eq(load_trace(fz.path, &t, why, sizeof(why)), 0, "%s", why);
    uint64_t sat = 0;
    for (uint64_t i = 0; i < t.n; i++)
      sat += t.rec[i].t_ns == UINT64_MAX;
    cr_assert_eq(sat, 1, "%llu saturated times", (unsigned long long)sat);
    cs_trace_free(&t);
  }

  struct { const char *what, *needle; } rc_cases[] = {
      {"kind 0", "unknown kind"}, {"kind 99", "unknown kind"},
      {"rank 4", "rank out of range"}, {"peer 9", "peer or slot out of range"},
      {"slot 7", "peer or slot out of range"}};
  for (int c = 0; c < 5; c++) {
    memcpy(b, orig, size);
    uint64_t i = 5; /* a load, store, notify or wait: peer and slot checked */
    while (i < nrec && (rec_at(b, i)->kind < CS_EV_LOAD || rec_at(b, i)->kind > CS_EV_WAIT))
      i++;
    cr_assert_lt(i, nrec);
    cs_trace_rec_t *x = rec_at(b, i);
    switch (c) {
    case 0: x->kind = 0; break;
    case 1: x->kind = 99; break;
    case 2: x->rank = 4; break;
    case 3: x->peer = 9; break;
    default: x->slot = 7; break;
    }
    reseal_record(b, i);
    expect_refused(&fz, b, size, rc_cases[c].what, rc_cases[c].needle);
    expect_refused(&fz, b, size, rc_cases[c].what, "corrupt record");
  }
  /* Records out of order are fine (the file is in write order); the same
   * record twice is not. */
  memcpy(b, orig, size);
  cs_trace_rec_t tmp = *rec_at(b, 1);
  *rec_at(b, 1) = *rec_at(b, nrec - 1);
  *rec_at(b, nrec - 1) = tmp;
  cr_assert_eq(try_load(&fz, b, size, "swapped"), 0);
  memcpy(b, orig, size);
  *rec_at(b, 2) = *rec_at(b, 3);
  expect_refused(&fz, b, size, "duplicate", "appears twice");
  cr_assert_eq(try_load(&fz, orig, CS_TRACE_HEADER_BYTES, "header only"), 0);

  cr_assert_gt(fz.loads, 5000, "only %llu loads", (unsigned long long)fz.loads);
  cr_log_info("%llu corrupt loads, %llu refused", (unsigned long long)fz.loads,
              (unsigned long long)fz.refused);

  /* The command: exit 2, one line on stderr, nothing on stdout. */
  struct { size_t n; const char *needle; } cmd[] = {
      {0, "empty"}, {500, "wrong magic"}, {2000, "truncated"}};
  for (int c = 0; c < 3; c++) {
    memcpy(b, orig, size);
    if (c == 1)
      memset(b, 'x', 500);
    write_all(fz.path, b, cmd[c].n);
    run_cli(&r, 30, "trace", fz.path, NULL);
    cr_assert_eq(r.status, 2, "%s", cmd[c].needle);
    cr_assert_eq(count_lines(r.err), 1, "not one line: %s", r.err);
    cr_assert(strstr(r.err, cmd[c].needle), "%s", r.err);
    cr_assert_eq(r.out[0], 0, "printed: %.200s", r.out);
  }
  const char *fmts[] = {"text", "jsonl", "chrome"};
  for (int c = 0; c < 3; c++) {
    memcpy(b, orig, size);
    b[CS_TRACE_HEADER_BYTES + 7 * CS_TRACE_RECORD_BYTES + 3] ^= 0x40;
    write_all(fz.path, b, size);
    run_cli(&r, 30, "trace", "--format", fmts[c], fz.path, NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_eq(count_lines(r.err), 1, "not one line: %s", r.err);
    cr_assert(strstr(r.err, "corrupt record 7"), "%s", r.err);
    cr_assert_eq(r.out[0], 0);
  }
  memcpy(b, orig, size);
  h->version = 7;
  reseal_header(b);
  write_all(fz.path, b, size);
  run_cli(&r, 30, "trace", "--stats", fz.path, NULL);
  cr_assert_eq(r.status, 2);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, "version 7 is newer"), "%s", r.err);
  free(b);
  free(orig);
  unlink(fz.path);
}

/* ------------------------------------------------------------ options */

static void expect_usage(const char *needle, const char *a1, const char *a2,
                         const char *a3)
{
  run_cli(&r, 10, "trace", a1, a2, a3, NULL);
  cr_assert_eq(r.status, 2, "%s %s %s -> %d", a1, a2 ? a2 : "", a3 ? a3 : "",
               r.status);
  cr_assert_eq(count_lines(r.err), 1, "not one line:\n%s", r.err);
  cr_assert(strstr(r.err, needle), "'%s' not in: %s", needle, r.err);
  cr_assert_eq(r.out[0], 0, "printed to stdout: %s", r.out);
}

Test(trace, bad_options_get_one_line_and_exit_2)
{
  expect_usage("missing FILE", NULL, NULL, NULL);
  expect_usage("--format 'xml'", "--format", "xml", SAMPLE_RING);
  expect_usage("--kind 'loads'", "--kind", "loads", SAMPLE_RING);
  expect_usage("--rank 4 is not accepted: the trace has ranks 0..3", "--rank",
               "4", SAMPLE_RING);
  expect_usage("--rank '-1'", "--rank", "-1", SAMPLE_RING);
  expect_usage("--from 'x'", "--from", "x", SAMPLE_RING);
  expect_usage("unexpected argument", SAMPLE_RING, SAMPLE_MESH, NULL);
  expect_usage("cannot open", "/nonexistent/trace.cstrace", NULL, NULL);
  expect_usage("not a regular file", "/tmp", NULL, NULL);
  run_cli(&r, 10, "trace", "--help", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert(strstr(r.out, "--format text|jsonl|chrome"), "%s", r.out);
  run_cli(&r, 10, "--help", NULL);
  cr_assert(strstr(r.out, "trace"), "not in the subcommand list: %s", r.out);
}

/* A trace target that cannot be written gets one line and exit 2, and the
 * writer leaves the path alone: it once unlinked whatever path it failed
 * on, and `--trace /dev/full` deleted the device. The path here is a
 * symlink to /dev/full, so a regression deletes the link, not the device,
 * and shows as root or not. A device is refused by the output rule now,
 * before anything is opened. */
Test(trace, unwritable_target_gets_one_line_and_is_not_deleted, .timeout = 60)
{
  struct stat sb;
  if (stat("/dev/full", &sb) != 0 || !S_ISCHR(sb.st_mode) ||
      access("/dev/full", W_OK) != 0)
    cr_skip_test("no writable /dev/full here");
  char link[128];
  tmp_path(link, sizeof(link), "full.cstrace");
  cr_assert_eq(symlink("/dev/full", link), 0, "%s", strerror(errno));
  cli_out_t r;
  run_cli(&r, 30, "run", "--count", "100", "--trace", link, NULL);
  cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s", r.err);
  cr_assert(strstr(r.err, "is not a regular file"), "%s", r.err);
  cr_assert_eq(lstat(link, &sb), 0, "the run deleted the path it could not write");
  cr_assert(S_ISLNK(sb.st_mode));
  cr_assert(stat("/dev/full", &sb) == 0 && S_ISCHR(sb.st_mode), "/dev/full is gone");
  unlink(link);
}

/* Whether this kernel has seccomp filters (CONFIG_SECCOMP_FILTER: the
 * status file has a Seccomp_filters line), so installing one must work,
 * already filtered or not. */
static int seccomp_in_kernel(void)
{
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  int yes = 0;
  while (f && !yes && fgets(line, sizeof line, f))
    yes = !strncmp(line, "Seccomp_filters:", 16);
  if (f)
    fclose(f);
  return yes;
}

/* Where io_uring is refused (Docker's default seccomp profile, the
 * kernel.io_uring_disabled sysctl), or set up but every submission fails,
 * or the file system refuses O_DIRECT, or both, a traced run still
 * succeeds and writes the same trace: several
 * chunks per rank written while the run goes (so through the fallback),
 * every rank's remote loads equal to the ring's 2(N-1)/N*S per call, and
 * per rank the same number of events of every kind as with nothing
 * refused (wait-begin aside: whether a wait blocks is timing). The
 * refusals are real kernel refusals, from a seccomp filter on the run. */
Test(trace, runs_without_io_uring_or_o_direct_write_the_same_trace,
     .timeout = 240)
{
  static const int modes[] = {0, CS_DENY_IO_URING, CS_DENY_IO_URING_ENTER,
                              CS_DENY_O_DIRECT, CS_DENY_IO_URING | CS_DENY_O_DIRECT};
  uint64_t base[2][CS_TR_ABORT + 1] = {{0}};
  for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
    char path[128];
    tmp_path(path, sizeof(path), "denied.cstrace");
    char *args[] = {"run", "--algo", "ring", "--ranks", "2", "--count", "262144",
                    "--iters", "200", "--trace", path, NULL};
    run_argv_denied(&r, 120, modes[m], args);
    if (r.status == 125 && getenv("CI") && seccomp_in_kernel())
      cr_assert_fail("CI is set and this kernel has seccomp filters, but the "
                     "filter could not be installed");
    if (r.status == 125)
      cr_skip_test("no seccomp filters here to refuse io_uring or O_DIRECT");
    cr_assert_neq(r.status, 126, "mode %d: the seccomp filter did not apply", modes[m]);
    cr_assert_eq(r.status, 0, "mode %d: exit %d: %s", modes[m], r.status, r.err);
    cs_trace_t t;
    load_ok(path, &t);
    uint64_t n[2][CS_TR_ABORT + 1] = {{0}}, per_rank[2] = {0, 0};
    for (uint64_t i = 0; i < t.n; i++) {
      cr_assert(t.rec[i].rank < 2 && t.rec[i].kind <= CS_TR_ABORT);
      per_rank[t.rec[i].rank]++;
      if (t.rec[i].kind != CS_TR_WAIT_BEGIN)
        n[t.rec[i].rank][t.rec[i].kind]++;
    }
    cs_trace_free(&t);
    for (int k = 0; k < 2; k++)
      cr_assert_gt(per_rank[k], 2 * cs_trace_chunk_rec(2), "mode %d rank %d: "
                   "%llu records, not several chunks", modes[m], k,
                   (unsigned long long)per_rank[k]);
    if (m == 0)
      memcpy(base, n, sizeof(n));
    else
      for (int k = 0; k < 2; k++)
        for (int kind = 0; kind <= CS_TR_ABORT; kind++)
          cr_assert_eq(n[k][kind], base[k][kind], "mode %d rank %d: %llu %s "
                       "events, %llu with nothing refused", modes[m], k,
                       (unsigned long long)n[k][kind], cs_trace_kind_name(kind),
                       (unsigned long long)base[k][kind]);
    run_cli(&r, 60, "trace", "--stats", path, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "verdict: every rank matches 2(N-1)/N*S"), "mode %d: %s",
              modes[m], r.out);
    unlink(path);
  }
}

/* Versions 1 and 2 had a 1024-byte header block (no padding); version 1
 * also stored times in ns, with zero at byte 88. The version-3 sample
 * rewritten in each older layout — padding dropped, for version 1 the times
 * converted here from the file's ticks and rate, header and records
 * resealed — loads to the same records with the same times (to the ns) as
 * the original. */
static void check_old_version(uint32_t version)
{
  char path[128];
  tmp_path(path, sizeof(path), version == 1 ? "v1.cstrace" : "v2.cstrace");
  size_t size;
  uint8_t *b = (uint8_t *)read_all(SAMPLE_RING, &size);
  cs_trace_header_t *h = (cs_trace_header_t *)b;
  cr_assert_eq(h->version, 3);
  cr_assert_eq(h->header_bytes, CS_TRACE_HEADER_BYTES);
  cr_assert_gt(h->tick_ns, 0, "the sample has no clock rate: regenerate it");
  uint64_t n = (size - CS_TRACE_HEADER_BYTES) / CS_TRACE_RECORD_BYTES;
  for (uint64_t i = 0; i < n && version == 1; i++) {
    rec_at(b, i)->t_ns = (uint64_t)llround((double)rec_at(b, i)->t_ns * h->tick_ns);
    reseal_record(b, i);
  }
  h->version = version;
  h->header_bytes = CS_TRACE_HEADER_STRUCT;
  if (version == 1)
    h->tick_ns = 0;
  reseal_header(b);
  memmove(b + CS_TRACE_HEADER_STRUCT, b + CS_TRACE_HEADER_BYTES,
          size - CS_TRACE_HEADER_BYTES);
  write_all(path, b, size - (CS_TRACE_HEADER_BYTES - CS_TRACE_HEADER_STRUCT));
  cs_trace_t old, cur;
  load_ok(path, &old);
  load_ok(SAMPLE_RING, &cur);
  cr_assert_eq(old.hdr.version, version);
  cr_assert_eq(old.n, cur.n);
  cr_assert_gt(old.n, 10);
  for (uint64_t i = 0; i < old.n; i++) {
    cr_assert_eq(old.rec[i].seq, cur.rec[i].seq);
    cr_assert_eq(old.rec[i].kind, cur.rec[i].kind);
    cr_assert_eq(old.rec[i].t_ns, cur.rec[i].t_ns, "record %llu", (unsigned long long)i);
  }
  cs_trace_free(&old);
  cs_trace_free(&cur);
  /* The old layout with the new version number is refused, and the other
   * way round. */
  h->version = 3;
  reseal_header(b);
  write_all(path, b, CS_TRACE_HEADER_STRUCT);
  cs_trace_t t;
  char why[512] = "";
  cr_assert_eq(load_trace(path, &t, why, sizeof(why)), CS_EBADHEADER);
  cr_assert(strstr(why, "corrupt header: header 1024 / record 80 bytes"), "%s", why);
  free(b);
  unlink(path);
}

Test(trace, version_1_files_still_read_with_their_ns_times)
{
  check_old_version(1);
}

Test(trace, version_2_files_still_read_with_their_1024_byte_header)
{
  check_old_version(2);
}

/* Sequence numbers of rank 2's wait-end and mark events in `out` (jsonl),
 * in order. */
static int rank2_waits_marks(char *out, unsigned long long *seq, int cap)
{
  int n = 0;
  for (char *p = strstr(out, "{\"type\":\"event\""); p;
       p = strstr(p + 1, "{\"type\":\"event\"")) {
    char *e = strchr(p, '\n');
    cr_assert_not_null(e);
    *e = 0;
    if (strstr(p, "\"rank\":2,") &&
        (strstr(p, "\"kind\":\"wait-end\"") || strstr(p, "\"kind\":\"mark\""))) {
      cr_assert_lt(n, cap);
      seq[n++] = strtoull(strstr(p, "\"seq\":") + 6, NULL, 10);
    }
    *e = '\n';
  }
  return n;
}

/* The filters against the unfiltered export: exactly the rank-2 wait-end
 * and mark events whose seq lies in [from, to], and nothing else. */
Test(trace, filters_select_rank_kind_and_sequence_range)
{
  static unsigned long long all[4096], got[4096];
  char path[128];
  tmp_path(path, sizeof(path), "all.jsonl");
  run_cli(&r, 30, "trace", "--format", "jsonl", SAMPLE_RING, "-o", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  size_t len;
  char *everything = read_all(path, &len);
  int n = rank2_waits_marks(everything, all, 4096);
  free(everything);
  cr_assert_gt(n, 12, "only %d rank-2 wait-end/mark events in the sample", n);
  unsigned long long from = all[3], to = all[12];
  char fs[32], ts[32];
  snprintf(fs, sizeof(fs), "%llu", from);
  snprintf(ts, sizeof(ts), "%llu", to);
  run_cli(&r, 30, "trace", "--format", "jsonl", "--rank", "2", "--kind",
          "wait-end,mark", "--from", fs, "--to", ts, SAMPLE_RING, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  int m = rank2_waits_marks(r.out, got, 4096);
  cr_assert_eq(m, 10, "%d events between seq %llu and %llu: %s", m, from, to, r.out);
  for (int i = 0; i < m; i++)
    cr_assert_eq(got[i], all[3 + i]);
  int lines = count_lines(r.out);
  cr_assert_eq(lines, m + 1, "other events passed the filters: %s", r.out);
}
