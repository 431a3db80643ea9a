/*
 * verify.c - the result checks of a finished allreduce world (see
 * verify.h): oracle comparison and float64 error on every online CPU
 * (threads taking ranges of elements, each with its own scratch; the
 * oracle's block path does the work), signal cells, medians.
 */
#include "verify.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../collectives/oracle.h"

/* One verification: the run's rows, the next range to take, and the
 * threads' merged tally. */
typedef struct vjob {
  cs_oracle_run_t   o;
  uint64_t          next;  /* first element not yet taken (atomic) */
  uint64_t          range; /* elements per take */
  pthread_mutex_t   lock;
  cs_oracle_tally_t all;
  int               nomem;
} vjob_t;

static void *vthread(void *arg)
{
  vjob_t *j = arg;
  void *scratch = malloc(cs_oracle_scratch_bytes(j->o.nranks));
  cs_oracle_tally_t t = {.bad_rank = -1};
  for (;;) {
    uint64_t lo = __atomic_fetch_add(&j->next, j->range, __ATOMIC_RELAXED);
    if (!scratch || lo >= j->o.count)
      break;
    uint64_t hi = j->o.count - lo < j->range ? j->o.count : lo + j->range;
    cs_oracle_check_range(&j->o, lo, hi, scratch, &t);
  }
  pthread_mutex_lock(&j->lock);
  j->nomem |= !scratch;
  cs_oracle_tally_merge(&j->all, &t);
  pthread_mutex_unlock(&j->lock);
  free(scratch);
  return NULL;
}

/* The §3.3 rectangle path (cs_ar_rect): the rectangle's rows against the
 * oracle (one tile: one thread), every other element of every rank
 * against that rank's own input, bit for bit. Returns 0 or -ENOMEM. */
static int verify_rect(const cs_ar_cfg_t *c, vjob_t *j)
{
  void *scratch = malloc(cs_oracle_scratch_bytes(c->nranks));
  if (!scratch)
    return -ENOMEM;
  uint64_t cols = c->shape_cols;
  size_t es = cs_dtype_size(c->dtype);
  for (uint64_t i = 0; i < c->valid_rows; i++) {
    cs_oracle_tally_t t = {.bad_rank = -1};
    cs_oracle_check_range(&j->o, i * cols, i * cols + c->valid_cols, scratch, &t);
    cs_oracle_tally_merge(&j->all, &t);
  }
  free(scratch);
  for (uint32_t r = 0; r < c->nranks; r++) {
    const uint8_t *in = j->o.in[r], *got = j->o.got[r];
    cs_oracle_tally_t u = {.bad_rank = -1};
    for (uint64_t row = 0; row < c->shape_rows; row++)
      for (uint64_t e = row * cols + (row < c->valid_rows ? c->valid_cols : 0);
           e < (row + 1) * cols; e++)
        if (memcmp(in + e * es, got + e * es, es) && u.wrong++ == 0) {
          u.bad_rank = r;
          u.bad_i = e;
        }
    cs_oracle_tally_merge(&j->all, &u);
  }
  return 0;
}

/* Threads: the online CPUs, at most one per range, at most 64. */
static uint32_t vthreads(uint64_t count, uint64_t range)
{
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t want = (count + range - 1) / range;
  uint32_t n = cpus < 1 ? 1 : cpus > 64 ? 64 : (uint32_t)cpus;
  return want < n ? (uint32_t)want : n;
}

/* Every element on the online CPUs. Returns 0 or -ENOMEM. */
static int verify_threads(const cs_ar_cfg_t *c, vjob_t *j)
{
  pthread_mutex_init(&j->lock, NULL);
  uint32_t nt = vthreads(c->count, j->range), started = 0;
  pthread_t tid[64];
  for (uint32_t k = 1; k < nt; k++)
    started += pthread_create(&tid[started], NULL, vthread, j) == 0;
  vthread(j); /* this thread too */
  for (uint32_t k = 0; k < started; k++)
    pthread_join(tid[k], NULL);
  pthread_mutex_destroy(&j->lock);
  return j->nomem ? -ENOMEM : 0;
}

int cs_verify_allreduce(const cs_ar_cfg_t *c, const cs_world_t *w,
                        const uint8_t *inputs, int f64, uint8_t *want,
                        cs_verdict_t *v)
{
  (void)want;
  uint32_t n = c->nranks;
  uint64_t bytes = c->count * cs_dtype_size(c->dtype);
  const void *in[CS_AR_MAX_RANKS], *got[CS_AR_MAX_RANKS];
  *v = (cs_verdict_t){.bad_rank = -1, .left_rank = -1};
  cs_oracle_tolerance(c->dtype, &v->rtol, &v->atol);
  for (uint32_t r = 0; r < n; r++) {
    in[r] = inputs ? inputs + r * bytes : cs_world_input(w, r);
    got[r] = cs_world_output(w, r);
  }
  vjob_t j = {.o = {.algo = c->algo, .dtype = c->dtype, .op = c->op,
                    .mm = (cs_minmax_t)c->minmax, .nranks = n,
                    .count = c->count, .in = in, .got = got, .f64 = f64,
                    .rtol = v->rtol, .atol = v->atol},
              .range = 16384, .all = {.bad_rank = -1}};
  if (cs_ar_rect(c)) {
    if (verify_rect(c, &j) < 0)
      return -ENOMEM;
  } else if (verify_threads(c, &j) < 0) {
    return -ENOMEM;
  }
  v->wrong = j.all.wrong;
  v->bad_rank = j.all.bad_rank;
  v->bad_i = j.all.bad_i;
  v->max_abs = j.all.max_abs;
  v->max_rel = j.all.max_rel;
  v->tol_fail = j.all.tol_fail;
  const cs_slot_t *s = &w->ctl->layout.slot[CS_AR_SLOT_SIGNAL];
  uint64_t cells = cs_ar_signal_cells(c);
  int32_t final = c->no_epilogue ? cs_ar_signal_final(c) : 0;
  for (uint32_t r = 0; r < n; r++) {
    const uint8_t *win = cs_world_window(w, r);
    for (uint64_t k = 0; k < cells; k++) {
      int32_t got;
      memcpy(&got, win + cs_slot_cell_off(s, k), sizeof(got));
      if (got != (cs_ar_signal_silent(c, r, k) ? 0 : final) &&
          v->signals_left++ == 0) {
        v->left_rank = r;
        v->left_cell = k;
        v->left_val = got;
        v->left_want = cs_ar_signal_silent(c, r, k) ? 0 : final;
      }
    }
  }
  return 0;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

void cs_verify_sort_ns(uint64_t *v, uint64_t n)
{
  qsort(v, n, sizeof(uint64_t), cmp_u64);
}

uint64_t cs_verify_median_ns(uint64_t *v, uint64_t n)
{
  cs_verify_sort_ns(v, n);
  return n ? v[n / 2] : 0;
}
