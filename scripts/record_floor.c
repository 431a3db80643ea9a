/*
 * record_floor.c - what one recorded event costs a rank, measured in one
 * process with no other rank: N fences and N one-element loads untraced,
 * then traced into a real trace ring (cs_tracer_open and the hooks that
 * cs_tracer_launch_opts picks), then the floor: a bare 80-byte store per
 * event into ring memory nothing has written yet, the same with
 * non-temporal stores, and the bare stores again over memory written
 * once. With "warm", the whole ring is written once before any timing
 * (a long run, whose ring has wrapped); with "other", written once the
 * same way but by another process (a forked child), which tells whether
 * what a first write costs is the page's or this process's mapping of
 * it. Median of R repetitions, each on a fresh world, in this thread's
 * CPU time (time spent preempted on a shared machine is not counted). Not a test: a figure for
 * docs/performance.md, built by CMake as build/record_floor (not
 * installed):
 *
 *   build/record_floor; build/record_floor warm; build/record_floor other
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sim/dev.h"
#include "../sim/launch.h"
#include "../sim/trace.h"
#include "../window/cs_error.h"

extern const cs_dev_ops_t cs_transport_free;

static uint64_t now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
  return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

enum { N = 40000, R = 15 };

int main(int argc, char **argv)
{
  int warm = argc > 1 && !strcmp(argv[1], "warm") ? 1
             : argc > 1 && !strcmp(argv[1], "other") ? 2 : 0;
  double fu[R], ft[R], lu[R], lt[R], fl[R], fn[R], f2[R];
  cs_layout_t l;
  cs_layout_init(&l, 64);
  cs_layout_add(&l, "data", 4096, 4);
  cs_layout_add(&l, "signal", 64, 4);
  static cs_tile_t tile;
  static float buf[16];
  tile.buf = buf; tile.width = 16; tile.esize = 4;
  for (int r = 0; r < R; r++) {
    cs_world_opts_t wo = {.timeout_ns = 1000000000ull,
                          .trace_bytes = cs_trace_ring_bytes(cs_trace_chunk_rec(1))};
    cs_world_t w;
    if (cs_world_create(&w, &l, 1, &wo) != 0) { perror("world"); return 1; }
    /* as a rank does (launch.c): the region mapped again with MAP_POPULATE,
     * so no page of the ring faults inside the timed loops */
    if (cs_world_remap(&w) != 0) { perror("remap"); return 1; }
    cs_trace_header_t th = {.algo = 255};
    cs_tracer_t *tr;
    char path[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/collsim-record-floor-%d.cstrace",
             tmp && *tmp ? tmp : "/tmp", (int)getpid());
    int rc = cs_tracer_open(&tr, path, &th, &w);
    if (rc != 0) {
      fprintf(stderr, "record_floor: %s: %s\n", path, cs_strerror(rc));
      return 1;
    }
    cs_launch_opts_t lo;
    memset(&lo, 0, sizeof lo);
    cs_tracer_launch_opts(tr, &lo);
    if (warm == 1) /* "warm": every record's memory written once before timing */
      memset(w.base + w.ctl->off_trace + 4096, 0, w.ctl->trace_bytes - 4096);
    if (warm == 2) { /* "other": the same, by another process (a child) */
      pid_t pid = fork();
      if (pid == 0) {
        memset(w.base + w.ctl->off_trace + 4096, 0, w.ctl->trace_bytes - 4096);
        _exit(0);
      }
      waitpid(pid, NULL, 0);
    }
    cs_dev_t d;
    cs_dev_init(&d, &w, 0, NULL, &cs_transport_free);
    uint64_t t0 = now();
    for (int i = 0; i < N; i++) cs_fence(&d);
    uint64_t t1 = now();
    for (int i = 0; i < N; i++) cs_load(&d, &tile, 0, 0, 0, 1, 1);
    uint64_t t2 = now();
    d.hooks = lo.hooks; d.hook_arg = lo.hook_arg;
    for (int i = 0; i < N; i++) cs_fence(&d);
    uint64_t t3 = now();
    for (int i = 0; i < N; i++) cs_load(&d, &tile, 0, 0, 0, 1, 1);
    uint64_t t4 = now();
    /* the floor: 80 bytes stored per event into fresh ring memory past
     * the records above (the ring's third chunk, untouched so far) */
    uint8_t *ring = w.base + w.ctl->off_trace + 4096 + 2 * (w.ctl->trace_bytes - 4096) / 4;
    uint64_t t5 = now();
    for (int i = 0; i < N; i++) {
      uint64_t v[10] = {i, t5, i, 0, 0, 1, 1, 0, 6, 0};
      memcpy(ring + 80ull * i, v, 80);
      __asm__ volatile("" ::: "memory");
    }
    uint64_t t6 = now();
    /* the same with non-temporal stores (no read for ownership), into the
     * fourth chunk; one sfence at the end */
    long long *nt = (long long *)(w.base + w.ctl->off_trace + 4096 + 3 * (w.ctl->trace_bytes - 4096) / 4);
    for (int i = 0; i < N; i++) {
      long long v[10] = {i, (long long)t6, i, 0, 0, 1, 1, 0, 6, 0};
      for (int k = 0; k < 10; k++)
#ifdef __x86_64__
        __builtin_ia32_movnti64(nt + 10 * i + k, v[k]);
#else
        nt[10 * i + k] = v[k]; /* no non-temporal store here: plain */
#endif
    }
#ifdef __x86_64__
    __builtin_ia32_sfence();
#endif
    uint64_t t7 = now();
    /* the bare stores again over the same ring memory (touched once now) */
    for (int i = 0; i < N; i++) {
      uint64_t v[10] = {i, t7, i, 0, 0, 1, 1, 0, 6, 0};
      memcpy(ring + 80ull * i, v, 80);
      __asm__ volatile("" ::: "memory");
    }
    uint64_t t8 = now();
    d.hooks = NULL;
    cs_tracer_close(tr, NULL, NULL);
    unlink(path);
    cs_world_destroy(&w);
    fu[r] = (double)(t1 - t0) / N; lu[r] = (double)(t2 - t1) / N;
    ft[r] = (double)(t3 - t2) / N; lt[r] = (double)(t4 - t3) / N;
    fl[r] = (double)(t6 - t5) / N;
    fn[r] = (double)(t7 - t6) / N;
    f2[r] = (double)(t8 - t7) / N;
  }
  qsort(fu, R, sizeof(double), cmp); qsort(ft, R, sizeof(double), cmp);
  qsort(lu, R, sizeof(double), cmp); qsort(lt, R, sizeof(double), cmp);
  qsort(fl, R, sizeof(double), cmp);
  qsort(fn, R, sizeof(double), cmp);
  qsort(f2, R, sizeof(double), cmp);
  printf("%s: ns per event, median of %d x %d: fence untraced %.1f traced %.1f (+%.1f); "
         "load untraced %.1f traced %.1f (+%.1f); bare 80-byte store %.1f, "
         "non-temporal %.1f, again over the same memory %.1f\n",
         warm == 1 ? "ring memory written before"
         : warm == 2 ? "ring memory written before by another process"
                     : "fresh ring memory", R, N, fu[R / 2], ft[R / 2], ft[R / 2] - fu[R / 2], lu[R / 2], lt[R / 2],
         lt[R / 2] - lu[R / 2], fl[R / 2], fn[R / 2], f2[R / 2]);
  return 0;
}
