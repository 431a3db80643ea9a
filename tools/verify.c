/*
 * verify.c - the result checks of a finished allreduce world (see
 * verify.h): oracle comparison, float64 error, signal cells, medians.
 */
#include "verify.h"

#include <math.h>
#include <stdlib.h>

#include "../collectives/oracle.h"

/* Element i of rank output `got` against the float64 reduction. */
static void f64_check(const cs_ar_cfg_t *c, const uint8_t *inputs,
                      const uint8_t *got, uint64_t i, cs_verdict_t *v)
{
  double ref = cs_oracle_f64(c->dtype, c->op, c->nranks, c->count, inputs, i);
  double g = cs_oracle_decode(c->dtype, got, i);
  double err = fabs(g - ref);
  if (isfinite(ref) && isfinite(g)) {
    if (err > v->max_abs)
      v->max_abs = err;
    if (ref != 0 && err / fabs(ref) > v->max_rel)
      v->max_rel = err / fabs(ref);
    if (err > v->atol + v->rtol * fabs(ref))
      v->tol_fail++;
  } else if (!(isnan(ref) && isnan(g)) && g != ref) {
    v->tol_fail++;
  }
}

void cs_verify_allreduce(const cs_ar_cfg_t *c, const cs_world_t *w,
                         const uint8_t *inputs, int f64, uint8_t *want,
                         cs_verdict_t *v)
{
  uint32_t n = c->nranks;
  *v = (cs_verdict_t){.bad_rank = -1};
  cs_oracle_tolerance(c->dtype, &v->rtol, &v->atol);
  for (uint32_t r = 0; r < n; r++) {
    const uint8_t *got = cs_world_output(w, r);
    int fresh = r == 0 || c->algo != CS_ALGO_RING; /* ring: one for all */
    if (fresh)
      cs_oracle_expect_mm(c->algo, c->dtype, c->op, (cs_minmax_t)c->minmax, n,
                          c->count, inputs, r, want);
    for (uint64_t i = 0; i < c->count; i++) {
      if (!cs_oracle_same(c->dtype, got, want, i) && v->wrong++ == 0) {
        v->bad_rank = r;
        v->bad_i = i;
      }
      if (f64 && fresh)
        f64_check(c, inputs, got, i, v);
    }
  }
  const cs_slot_t *s = &w->ctl->layout.slot[CS_AR_SLOT_SIGNAL];
  uint64_t cells = cs_ar_signal_cells(c);
  int32_t final = c->no_epilogue ? cs_ar_signal_final(c) : 0;
  for (uint32_t r = 0; r < n; r++) {
    const int32_t *sig = (const int32_t *)(cs_world_window(w, r) + s->off);
    for (uint64_t k = 0; k < cells; k++)
      v->signals_left += sig[k] != (cs_ar_signal_is_self(c, r, k) ? 0 : final);
  }
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
