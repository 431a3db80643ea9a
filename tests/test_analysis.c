/*
 * test_analysis.c - the analysis of finished traces (sim/trace/analysis.h,
 * describe.h) and the cost model (collectives/geometry.h): the links built
 * from real recorded traces (the shipped ones and fresh controlled runs
 * under fifo and relaxed memory) hold facts true by construction, the
 * scheduler's sentences read as the scheduler prints them, and the
 * per-rank volumes add up to the algorithms' totals.
 * Runs the real binary (COLLSIM_BIN, set by ctest) to record traces; loads
 * them in-process with cs_trace_load.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/geometry.h"
#include "../sim/trace/analysis.h"
#include "../sim/trace/describe.h"
#include "harness.h"

#ifndef COLLSIM_SOURCE_DIR
#error "COLLSIM_SOURCE_DIR must name the source tree (CMakeLists.txt sets it)"
#endif

static void tmp_path(char *buf, size_t n, const char *what)
{
  snprintf(buf, n, "/tmp/collsim-test-analysis-%d-%s", (int)getpid(), what);
}

static void remove_tmp_files(void)
{
  char pattern[80];
  snprintf(pattern, sizeof(pattern), "/tmp/collsim-test-analysis-%d-*",
           (int)getpid());
  glob_t g;
  if (glob(pattern, 0, NULL, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; i++)
      unlink(g.gl_pathv[i]);
  globfree(&g);
}
TestSuite(analysis, .fini = remove_tmp_files);

static void load_ok(const char *path, cs_trace_t *t)
{
  char why[512];
  cr_assert_eq(load_trace(path, t, why, sizeof(why)), 0, "%s: %s", path, why);
}

/* A record that queued an op for the DMA engine. */
static int posts_dma(const cs_trace_rec_t *x)
{
  return x->kind == CS_TR_DMA_POST ||
         (x->dma_id != 0 && x->kind != CS_TR_DMA_LAND &&
          !cs_trace_rec_is_launcher(x));
}

/* What check_links counted. */
typedef struct counts {
  uint64_t pairs, waits, satisfied, lands, posts, aborts;
} counts_t;

/* Wait pairs: a wait-end's partner is a wait-begin of the same rank on the
 * same cell before it, and the pairing is symmetric. */
static void check_pair(const cs_trace_t *t, const cs_trace_links_t *l,
                       uint64_t i, counts_t *c)
{
  const cs_trace_rec_t *x = &t->rec[i];
  int64_t p = l->pair[i];
  if (x->kind != CS_EV_WAIT && x->kind != CS_TR_WAIT_BEGIN) {
    cr_assert_eq(p, -1, "#%llu (%s) has a wait partner",
                 (unsigned long long)x->seq, cs_trace_kind_name(x->kind));
    return;
  }
  if (p < 0)
    return;
  cr_assert(p < (int64_t)t->n && l->pair[p] == (int64_t)i, "pair not symmetric");
  const cs_trace_rec_t *b = x->kind == CS_EV_WAIT ? &t->rec[p] : x;
  const cs_trace_rec_t *e = x->kind == CS_EV_WAIT ? x : &t->rec[p];
  cr_assert_eq(b->kind, CS_TR_WAIT_BEGIN);
  cr_assert_eq(e->kind, CS_EV_WAIT);
  cr_assert(b->rank == e->rank && b->slot == e->slot && b->cell == e->cell &&
            b->value == e->value, "wait-end #%llu paired with a begin of "
            "another wait", (unsigned long long)e->seq);
  cr_assert_lt(b->seq, e->seq);
  c->pairs += x->kind == CS_EV_WAIT;
}

/* A satisfier changed the waiting rank's own cell before the wait ended:
 * a notify of another rank that landed at issue, or the landing of one. */
static void check_satisfier(const cs_trace_t *t, const cs_trace_links_t *l,
                            uint64_t i, counts_t *c)
{
  const cs_trace_rec_t *x = &t->rec[i];
  int64_t s = l->satisfier[i];
  if (x->kind != CS_EV_WAIT || (x->opcmp & CS_TR_FAILED)) {
    cr_assert_eq(s, -1, "#%llu has a satisfier", (unsigned long long)x->seq);
    return;
  }
  c->waits++;
  if (s < 0)
    return;
  const cs_trace_rec_t *y = &t->rec[s];
  cr_assert(y->kind == CS_EV_NOTIFY || (y->kind == CS_TR_DMA_LAND &&
                                        y->round == CS_EV_NOTIFY),
            "wait #%llu satisfied by a %s", (unsigned long long)x->seq,
            cs_trace_kind_name(y->kind));
  if (y->kind == CS_EV_NOTIFY)
    cr_assert_eq(y->dma_id, 0, "a posted notify changes no cell until it lands");
  cr_assert(y->peer == x->rank && y->slot == x->slot && y->cell == x->cell,
            "wait #%llu on r%u %u[%u] satisfied by #%llu aimed at r%u %u[%u]",
            (unsigned long long)x->seq, x->rank, x->slot, x->cell,
            (unsigned long long)y->seq, y->peer, y->slot, y->cell);
  cr_assert_neq(y->rank, x->rank, "a wait is satisfied by another rank");
  cr_assert_lt(y->seq, x->seq);
  c->satisfied++;
}

/* A landing's post is the same rank's op with the same dma_id before it. */
static void check_post(const cs_trace_t *t, const cs_trace_links_t *l,
                       uint64_t i, uint8_t *landed, counts_t *c)
{
  const cs_trace_rec_t *x = &t->rec[i];
  int64_t p = l->post[i];
  c->posts += posts_dma(x);
  c->aborts += x->kind == CS_TR_ABORT;
  if (x->kind != CS_TR_DMA_LAND) {
    cr_assert_eq(p, -1, "#%llu (%s) has a post", (unsigned long long)x->seq,
                 cs_trace_kind_name(x->kind));
    return;
  }
  c->lands++;
  cr_assert_geq(p, 0, "dma-land #%llu has no post", (unsigned long long)x->seq);
  const cs_trace_rec_t *y = &t->rec[p];
  cr_assert(posts_dma(y), "dma-land #%llu paired with a %s",
            (unsigned long long)x->seq, cs_trace_kind_name(y->kind));
  cr_assert(y->rank == x->rank && y->dma_id == x->dma_id && y->seq < x->seq);
  cr_assert(y->kind == CS_TR_DMA_POST || y->kind == x->round,
            "dma-land #%llu lands a %s but its post is a %s",
            (unsigned long long)x->seq, cs_trace_kind_name(x->round),
            cs_trace_kind_name(y->kind));
  cr_assert_eq(landed[p], 0, "two landings of post #%llu",
               (unsigned long long)y->seq);
  landed[p] = 1;
}

/* Builds the links of `path` and checks every record's. */
static counts_t check_links(const char *path)
{
  cs_trace_t t;
  load_ok(path, &t);
  cs_trace_links_t l;
  cr_assert_eq(cs_trace_links_init(&l, &t), 0);
  cr_assert_eq(l.n, t.n);
  uint8_t *landed = calloc(t.n ? t.n : 1, 1);
  cr_assert_not_null(landed);
  counts_t c = {0};
  for (uint64_t i = 0; i < t.n; i++) {
    check_pair(&t, &l, i, &c);
    check_satisfier(&t, &l, i, &c);
    check_post(&t, &l, i, landed, &c);
    cr_assert(t.rec[i].t_ns >= l.start_ns && t.rec[i].t_ns <= l.end_ns);
  }
  free(landed);
  cs_trace_links_fini(&l);
  cr_assert_null(l.pair);
  cs_trace_free(&t);
  return c;
}

/* Every record of a run that finished: each wait was satisfied by another
 * rank's notify and each posted op landed once. A free-mode run has waits
 * that blocked (a controlled run's waits run only once satisfied). */
static void check_finished_run(const char *path, int free_mode,
                               uint64_t min_lands)
{
  counts_t c = check_links(path);
  cr_assert_gt(c.waits, 0, "%s: no waits", path);
  cr_assert_eq(c.satisfied, c.waits, "%s: %llu of %llu waits satisfied", path,
               (unsigned long long)c.satisfied, (unsigned long long)c.waits);
  if (free_mode)
    cr_assert_gt(c.pairs, 0, "%s: no wait blocked", path);
  cr_assert_eq(c.lands, c.posts, "%s: %llu landings for %llu posts", path,
               (unsigned long long)c.lands, (unsigned long long)c.posts);
  cr_assert_geq(c.lands, min_lands, "%s", path);
}

Test(analysis, links_of_every_shipped_trace_hold, .timeout = 120)
{
  char pattern[512];
  const char *dirs[2] = {"traces", "traces/bugs"};
  uint64_t ntraces = 0, lands = 0;
  for (int d = 0; d < 2; d++) {
    snprintf(pattern, sizeof(pattern), "%s/%s/*.cstrace", COLLSIM_SOURCE_DIR,
             dirs[d]);
    glob_t g;
    cr_assert_eq(glob(pattern, 0, NULL, &g), 0, "%s", pattern);
    for (size_t i = 0; i < g.gl_pathc; i++) {
      counts_t c = check_links(g.gl_pathv[i]);
      lands += c.lands;
      ntraces++;
    }
    globfree(&g);
  }
  cr_assert_geq(ntraces, 11);
  cr_assert_gt(lands, 0, "no shipped trace has DMA landings");
  /* The golden runs finished: every wait had its notify. */
  check_finished_run(COLLSIM_SOURCE_DIR "/traces/ring-n4-c17-fp16-sum.cstrace", 1, 0);
  check_finished_run(COLLSIM_SOURCE_DIR "/traces/mesh-n3-c4097-fp32-max.cstrace", 1, 0);
}

Test(analysis, links_of_controlled_fifo_and_relaxed_runs_hold, .timeout = 240)
{
  struct { const char *algo, *ranks, *count, *mm, *sched; } runs[] = {
      {"ring", "3", "100", "fifo", "random:7"},
      {"ring", "4", "1000", "relaxed", "pct:3:4"},
      {"mesh", "3", "50", "relaxed", "random:5"},
      {"host", "3", "300", "fifo", "random:2"},
  };
  char path[128];
  tmp_path(path, sizeof(path), "controlled.cstrace");
  for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
    cli_out_t r;
    run_cli(&r, 120, "run", "--algo", runs[k].algo, "--ranks", runs[k].ranks,
            "--count", runs[k].count, "--iters", "2", "--tile-bytes", "1024",
            "--schedule", runs[k].sched, "--memory-model", runs[k].mm,
            "--trace", path, NULL);
    cr_assert_eq(r.status, 0, "%s %s: %s%s", runs[k].algo, runs[k].mm, r.out,
                 r.err);
    check_finished_run(path, 0, 1);
  }
  unlink(path);
}

Test(analysis, links_of_a_crashed_run_hold, .timeout = 120)
{
  char path[128];
  tmp_path(path, sizeof(path), "crash.cstrace");
  cli_out_t r;
  run_cli(&r, 60, "run", "--algo", "ring", "--ranks", "3", "--count", "40",
          "--iters", "1", "--fault", "1:hang:10", "--timeout", "1", "--trace",
          path, NULL);
  cr_assert_eq(r.status, 3, "%s%s", r.out, r.err);
  counts_t c = check_links(path);
  /* The run was aborted (which rank's wait timed out first depends on the
   * timing); every wait that returned had its notify. */
  cr_assert_eq(c.aborts, 1, "%llu abort records", (unsigned long long)c.aborts);
  cr_assert_eq(c.satisfied, c.waits, "%llu of %llu waits satisfied",
               (unsigned long long)c.satisfied, (unsigned long long)c.waits);
  unlink(path);
}

Test(analysis, an_empty_trace_has_empty_links)
{
  cs_trace_t t = {0};
  t.hdr.nranks = 2;
  cs_trace_links_t l;
  cr_assert_eq(cs_trace_links_init(&l, &t), 0);
  cr_assert_eq(l.n, 0);
  cr_assert_eq(l.start_ns, 0);
  cr_assert_eq(l.end_ns, 0);
  cs_trace_links_fini(&l);
  cs_trace_links_fini(&l); /* twice is safe */
}

/* ------------------------------------------------------------ describe */

static cs_layout_t two_slots(void)
{
  cs_layout_t l = {0};
  l.nslots = 2;
  snprintf(l.slot[0].name, CS_SLOT_NAMELEN, "data");
  snprintf(l.slot[1].name, CS_SLOT_NAMELEN, "signal");
  return l;
}

static void sentence_is(const cs_layout_t *l, cs_trace_rec_t x, const char *want)
{
  char buf[200];
  cs_trace_sentence(buf, sizeof(buf), l, &x);
  cr_assert_str_eq(buf, want);
}

/* The texts the scheduler's interactive prompt (sim/sched) and replay reports print. */
Test(analysis, sentences_read_as_the_scheduler_prints_them)
{
  cs_layout_t l = two_slots();
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_LOAD, .rank = 1, .peer = 0,
                                   .elem_off = 16, .valid = 16, .phys = 16},
              "rank 1: load data[16..32) from rank 0 (16 physical)");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_LOAD, .rank = 1, .peer = 1,
                                   .valid = 4},
              "rank 1: load data[0..4) (local)");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_STORE, .rank = 2, .peer = 2,
                                   .elem_off = 3, .valid = 2},
              "rank 2: store data[3..5)");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_PUT, .rank = 0, .peer = 3,
                                   .valid = 8},
              "rank 0: put data[0..8) to rank 3");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_NOTIFY, .rank = 0, .peer = 1,
                                   .slot = 1, .cell = 2, .value = 1,
                                   .opcmp = CS_NOTIFY_ADD},
              "rank 0: notify rank 1 signal[2] +1");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_NOTIFY, .rank = 1, .peer = 1,
                                   .slot = 1, .value = -2,
                                   .opcmp = CS_NOTIFY_ADD},
              "rank 1: notify rank 1 signal[0] -2");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_NOTIFY, .rank = 0, .peer = 1,
                                   .slot = 1, .value = 5,
                                   .opcmp = CS_NOTIFY_SET},
              "rank 0: notify rank 1 signal[0] = 5");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_WAIT, .rank = 3, .slot = 1,
                                   .cell = 4, .value = 2,
                                   .opcmp = CS_CMP_GE | CS_TR_FAILED},
              "rank 3: wait signal[4] >= 2");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_WAIT, .rank = 3, .slot = 9,
                                   .value = 1, .opcmp = CS_CMP_EQ},
              "rank 3: wait ?[0] == 1");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_FENCE, .rank = 1},
              "rank 1: fence");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_REDUCE, .rank = 1, .valid = 7},
              "rank 1: reduce 7 elements");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_EV_MARK, .rank = 0, .cell = 2,
                                   .value = 1},
              "rank 0: enter all-gather round 1");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_TR_DMA_LAND, .rank = 0, .peer = 2,
                                   .dma_id = 3, .round = CS_EV_PUT},
              "rank 0's DMA lands op #3 (put to rank 2)");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_TR_DMA_POST, .rank = 0, .peer = 2,
                                   .dma_id = 4, .round = CS_EV_NOTIFY,
                                   .slot = 1, .cell = 3, .value = 1},
              "rank 0's DMA: land notify #4: rank 2 signal[3] +1");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_TR_DMA_POST, .rank = 1, .peer = 0,
                                   .dma_id = 9, .round = CS_EV_STORE,
                                   .elem_off = 8, .valid = 8},
              "rank 1's DMA: land store #9: rank 0 data[8..16)");
  sentence_is(&l, (cs_trace_rec_t){.kind = CS_TR_WAIT_BEGIN, .rank = 2},
              "rank 2: wait-begin");
}

/* The "what" column of a wait-end names its begin and satisfier. */
Test(analysis, a_wait_end_is_described_with_its_partners)
{
  cs_trace_header_t h = {0};
  h.layout = two_slots();
  cs_trace_rec_t w = {.kind = CS_EV_WAIT, .rank = 1, .slot = 1, .cell = 3,
                      .value = 1, .observed = 1, .opcmp = CS_CMP_GE,
                      .t_ns = 4500};
  cs_trace_rec_t b = {.kind = CS_TR_WAIT_BEGIN, .t_ns = 2000};
  cs_trace_rec_t by = {.kind = CS_EV_NOTIFY, .seq = 41, .rank = 2};
  char buf[200];
  cs_trace_describe(buf, sizeof(buf), &h, NULL, &w, &b, &by);
  cr_assert_str_eq(buf, "signal[3] >= 1 saw 1, waited 2.500 us, by #41 r2");
  cs_trace_describe(buf, sizeof(buf), &h, NULL, &w, NULL, NULL);
  cr_assert_str_eq(buf, "signal[3] >= 1 saw 1");
  cs_trace_rec_t red = {.kind = CS_EV_REDUCE, .valid = 9, .opcmp = 1};
  cs_trace_describe(buf, sizeof(buf), &h, NULL, &red, NULL, NULL);
  cr_assert_str_eq(buf, "acc = acc ? recv, 9 elements", "no names: '?'");
  cs_trace_rec_t mk = {.kind = CS_EV_MARK, .cell = 1, .value = 2};
  cs_trace_describe(buf, sizeof(buf), &h, NULL, &mk, NULL, NULL);
  cr_assert_str_eq(buf, "phase phase 1 round 2", "no names: not a ring");
}

/* ------------------------------------------------------------ cost */

Test(cost, ring_volumes_add_up_to_the_total)
{
  static const uint32_t ranks[] = {1, 2, 3, 4, 5, 7, 8, 16};
  static const uint64_t counts[] = {1, 2, 3, 15, 16, 17, 4097, 8193, 65537, 1000003};
  static const uint32_t esizes[] = {4, 2};
  for (size_t a = 0; a < sizeof(ranks) / sizeof(ranks[0]); a++)
    for (size_t b = 0; b < sizeof(counts) / sizeof(counts[0]); b++)
      for (size_t e = 0; e < 2; e++) {
        uint32_t nr = ranks[a], es = esizes[e], it = 3;
        uint64_t n = counts[b], sum = 0, segs = 0;
        for (uint32_t r = 0; r < nr; r++) {
          sum += cs_ring_remote_bytes(r, n, nr, es, it);
          segs += cs_ring_seg_len(r, n, nr, es);
        }
        cr_assert_eq(segs, n, "segments cover the buffer");
        cr_assert_eq(sum, cs_ring_total_remote_bytes(n, nr, es, it),
                     "N %u count %llu esize %u", nr, (unsigned long long)n, es);
        double f = cs_ring_remote_bytes_formula(n, nr, es, it);
        cr_assert(fabs(f * nr - (double)sum) <= 1e-9 * (double)sum + 1e-9,
                  "the mean of the exact volumes is the formula");
        /* Even fp32 segments: every rank reads exactly the formula. */
        if (es == 4 && n % nr == 0)
          for (uint32_t r = 0; r < nr; r++)
            cr_assert_eq((double)cs_ring_remote_bytes(r, n, nr, es, it), f);
      }
}

Test(cost, mesh_and_host_read_every_peer_once)
{
  for (uint32_t nr = 1; nr <= 16; nr++)
    for (uint64_t n = 1; n < 5000; n += 333) {
      uint64_t want = 2 * (uint64_t)(nr - 1) * n * 4;
      cr_assert_eq(cs_mesh_remote_bytes(n, nr, 4, 2), want);
      cr_assert_eq(cs_host_remote_bytes(n, nr, 4, 2), want);
    }
}
