/*
 * floor.c - the memory floor (floor.h): N threads, pinned as the ranks
 * are, each with one private S-byte buffer (a rank's window), run timed
 * read-add-write passes together (the buffer's second half added into
 * its first with the calls' own fp32 sum kernel), a barrier between
 * passes; the pass time is the slowest thread's and the median pass
 * gives the rate. Owns its threads and buffers (freed before it
 * returns); does not own the table or when to measure (bench.c, which
 * calls it once per size).
 */
#define _GNU_SOURCE
#include "floor.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct floor_job {
  floor_gate_t      *gate;
  pthread_barrier_t *bar;
  float             *buf;    /* 2 * half floats */
  uint64_t           half;   /* floats per half */
  uint32_t           rank, nranks;
  uint32_t           passes; /* warmup pass first, then the timed ones */
  uint64_t           ns[FLOOR_MAX_PASSES];
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
    cs_launch_pin(j->rank, j->nranks);
  for (uint32_t p = 0; go && p < j->passes; p++) {
    pthread_barrier_wait(j->bar);
    uint64_t t0 = cs_now_ns();
    cs_reduce_kernel(CS_FP32, CS_SUM, j->buf, j->buf + j->half, j->half);
    j->ns[p] = cs_now_ns() - t0;
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

int64_t cs_floor_ns(uint32_t nranks, uint64_t bytes)
{
  uint64_t half = (bytes + 7) / 8, len = half * 8;
  floor_job_t *j = calloc(nranks, sizeof(*j));
  pthread_t *tid = calloc(nranks, sizeof(*tid));
  pthread_barrier_t bar;
  floor_gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  int64_t rc = -ENOMEM;
  uint32_t started = 0;
  if (!j || !tid || pthread_barrier_init(&bar, NULL, nranks) != 0)
    goto out;
  for (uint32_t r = 0; r < nranks; r++) {
    j[r] = (floor_job_t){.gate = &gate, .bar = &bar, .half = half, .rank = r,
                         .nranks = nranks, .passes = floor_passes(len)};
    if (!(j[r].buf = malloc(len)))
      goto out_bar;
    memset(j[r].buf, 0, len); /* touched: no page faults in the passes */
  }
  for (; started < nranks; started++)
    if (pthread_create(&tid[started], NULL, floor_thread, &j[started]) != 0) {
      rc = -EAGAIN;
      break;
    }
  /* Every thread or none passes the gate: the barrier needs them all. */
  pthread_mutex_lock(&gate.mu);
  gate.state = started == nranks ? 1 : -1;
  pthread_cond_broadcast(&gate.cv);
  pthread_mutex_unlock(&gate.mu);
  for (uint32_t r = 0; r < started; r++)
    pthread_join(tid[r], NULL);
  if (started < nranks)
    goto out_bar;
  uint32_t timed = j[0].passes - 1;
  uint64_t slow[FLOOR_MAX_PASSES];
  for (uint32_t p = 0; p < timed; p++) {
    slow[p] = 0;
    for (uint32_t r = 0; r < nranks; r++)
      if (j[r].ns[p + 1] > slow[p])
        slow[p] = j[r].ns[p + 1];
  }
  qsort(slow, timed, sizeof(slow[0]), cmp_u64);
  double rate = 1.5 * (double)len * nranks / (double)(slow[timed / 2] ? slow[timed / 2] : 1);
  rc = (int64_t)((double)cs_floor_traffic(nranks, len) / rate);
out_bar:
  pthread_barrier_destroy(&bar);
out:
  for (uint32_t r = 0; j && r < nranks; r++) {
    free(j[r].buf);
  }
  free(j);
  free(tid);
  return rc;
}
