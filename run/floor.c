/*
 * floor.c - the memory floor (floor.h): one private S-byte buffer per rank
 * (as the windows), served by T = min(N, allowed CPUs) threads pinned as
 * the ranks are, thread t taking buffers t, t + T, ...; in each timed
 * pass every buffer gets its second half added into its first with the
 * fp32 sum kernel the calls use. The threads meet at a spinning barrier
 * between passes, a pass lasts from the first thread's start to the last
 * one's end, and the median pass gives the rate. Owns its threads and
 * buffers (freed before it returns); does not own the table or when to
 * measure (bench.c, which calls it once per size).
 */
#define _GNU_SOURCE
#include "floor.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/reduce.h"
#include "../sim/dev.h"    /* cs_now_ns */
#include "../sim/launch.h" /* cs_launch_pin */

enum { FLOOR_MAX_PASSES = 64 };

/* The start gate: 0 wait, 1 go, -1 give up (a thread failed to start). */
typedef struct floor_gate {
  pthread_mutex_t mu;
  pthread_cond_t  cv;
  int             state;
} floor_gate_t;

/* Between passes the threads meet at a spinning barrier (a count of
 * arrivals that only grows), so every thread starts a pass within a spin
 * hop of the others: a sleeping barrier's wake-ups are tens of
 * microseconds apart, longer than a small pass. There is never more than
 * one thread per CPU, so spinning takes no CPU another thread needs. */
typedef struct floor_job {
  floor_gate_t *gate;
  uint32_t     *arrived;
  float *const *buf;     /* the N buffers, 2 * half floats each */
  uint64_t      half;    /* floats per half */
  uint32_t      t, nthreads, nbufs;
  uint32_t      passes;  /* warmup pass first, then the timed ones */
  uint64_t      t0[FLOOR_MAX_PASSES], t1[FLOOR_MAX_PASSES]; /* ns */
} floor_job_t;

uint64_t cs_floor_traffic(uint32_t nranks, uint64_t bytes)
{
  return (3ull * nranks - 1) * bytes;
}

static void *floor_thread(void *arg)
{
  floor_job_t *j = arg;
  pthread_mutex_lock(&j->gate->mu);
  while (j->gate->state == 0)
    pthread_cond_wait(&j->gate->cv, &j->gate->mu);
  int go = j->gate->state > 0;
  pthread_mutex_unlock(&j->gate->mu);
  if (go)
    cs_launch_pin(j->t, j->nthreads);
  for (uint32_t p = 0; go && p < j->passes; p++) {
    uint32_t want = (p + 1) * j->nthreads;
    __atomic_add_fetch(j->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(j->arrived, __ATOMIC_ACQUIRE) < want)
      ;
    j->t0[p] = cs_now_ns();
    for (uint32_t b = j->t; b < j->nbufs; b += j->nthreads)
      cs_reduce_kernel(CS_FP32, CS_SUM, j->buf[b], j->buf[b] + j->half, j->half);
    j->t1[p] = cs_now_ns();
  }
  return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Passes: enough that a small size is timed over some microseconds. */
static uint32_t floor_passes(uint64_t bytes)
{
  uint64_t p = (64ull << 20) / (bytes ? bytes : 1);
  return (uint32_t)(p < 5 ? 5 : p > FLOOR_MAX_PASSES - 1 ? FLOOR_MAX_PASSES - 1 : p) + 1;
}

/* The median pass, a pass lasting from the first thread's start to the
 * last one's end (the bytes of all N buffers moved in that time). */
static uint64_t median_pass(const floor_job_t *j, uint32_t nthreads)
{
  uint32_t timed = j[0].passes - 1;
  uint64_t wall[FLOOR_MAX_PASSES];
  for (uint32_t p = 0; p < timed; p++) {
    uint64_t first = UINT64_MAX, last = 0;
    for (uint32_t t = 0; t < nthreads; t++) {
      first = j[t].t0[p + 1] < first ? j[t].t0[p + 1] : first;
      last = j[t].t1[p + 1] > last ? j[t].t1[p + 1] : last;
    }
    wall[p] = last - first;
  }
  qsort(wall, timed, sizeof(wall[0]), cmp_u64);
  return wall[timed / 2] ? wall[timed / 2] : 1;
}

/* The CPUs this process may run on (what pinning counts). */
static uint32_t allowed_cpus(void)
{
  cpu_set_t s;
  if (sched_getaffinity(0, sizeof(s), &s) == 0 && CPU_COUNT(&s) > 0)
    return (uint32_t)CPU_COUNT(&s);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (uint32_t)n : 1;
}

int64_t cs_floor_ns(uint32_t nranks, uint64_t bytes)
{
  uint64_t half = (bytes + 7) / 8, len = half * 8;
  uint32_t cpus = allowed_cpus();
  uint32_t nthreads = cpus < nranks ? cpus : nranks;
  floor_job_t *j = calloc(nthreads, sizeof(*j));
  pthread_t *tid = calloc(nthreads, sizeof(*tid));
  float **buf = calloc(nranks, sizeof(*buf));
  uint32_t arrived = 0, started = 0;
  floor_gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  int64_t rc = -ENOMEM;
  if (!j || !tid || !buf)
    goto out;
  for (uint32_t r = 0; r < nranks; r++) {
    if (!(buf[r] = malloc(len)))
      goto out;
    memset(buf[r], 0, len); /* touched: no page faults in the passes */
  }
  for (uint32_t t = 0; t < nthreads; t++)
    j[t] = (floor_job_t){.gate = &gate, .arrived = &arrived, .buf = buf,
                         .half = half, .t = t, .nthreads = nthreads,
                         .nbufs = nranks, .passes = floor_passes(len)};
  for (int err; started < nthreads; started++)
    if ((err = pthread_create(&tid[started], NULL, floor_thread, &j[started])) != 0) {
      rc = -err;
      break;
    }
  /* Every thread or none passes the gate: the barrier needs them all. */
  pthread_mutex_lock(&gate.mu);
  gate.state = started == nthreads ? 1 : -1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  for (uint32_t t = 0; t < started; t++)
    pthread_join(tid[t], NULL);
  if (started == nthreads) {
    double rate = 1.5 * (double)len * nranks / (double)median_pass(j, nthreads);
    rc = (int64_t)((double)cs_floor_traffic(nranks, bytes) / rate);
  }
out:
  for (uint32_t r = 0; buf && r < nranks; r++)
    free(buf[r]);
  free(buf);
  free(j);
  free(tid);
  return rc;
}
