/*
 * mpi_case.c - one allreduce case of collsim-mpi (see mpi_case.h): each
 * rank fills its own input from the seeded fill (the rows `collsim run`
 * makes), runs the rank body of `collsim run` (cs_ar_rank_main: stage-in,
 * the timed calls, stage-out) over the MPI-3 RMA transport, and checks its
 * own result bit for bit against the oracle, which it computes from every
 * rank's fill itself (the fills are pure functions of the seed), or from
 * the --input rows every rank was given; --output gathers the results at
 * rank 0. Owns no words for people beyond a rank's own failure line.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/geometry.h"
#include "../../collectives/oracle.h"
#include "../../sim/transport_mpi.h"
#include "../../window/cs_error.h"
#include "mpi_case.h"
#include "mpi_trace.h"
#include "../../run/verify.h"

#define VERDICT_N 7

/* The error of element i against float64, into v. */
static void error_of(const cs_ar_cfg_t *c, const uint8_t *got,
                     const uint8_t *in, uint64_t i, double rtol, double atol,
                     cs_mpi_verdict_t *v)
{
  double x = cs_oracle_decode(c->dtype, got, i);
  double y = cs_oracle_f64(c->dtype, c->op, c->nranks, c->count, in, i);
  double e = fabs(x - y);
  if (!isfinite(x) || !isfinite(y)) { /* as the run's float64 check */
    if (!(isnan(x) && isnan(y)) && x != y)
      v->tol_fail++;
    return;
  }
  if (e > v->max_abs)
    v->max_abs = e;
  if (y != 0 && e / fabs(y) > v->max_rel)
    v->max_rel = e / fabs(y);
  if (!(e <= atol + rtol * fabs(y)))
    v->tol_fail++;
}

/* This rank's result against the oracle and float64. The inputs are
 * `rows` (--input), or every rank's fill, made here. */
static int check_result(const cs_ar_cfg_t *c, cs_fill_t fill, uint64_t seed,
                        const uint8_t *rows, uint32_t rank, const uint8_t *got,
                        cs_mpi_verdict_t *v)
{
  size_t row = c->count * cs_dtype_size(c->dtype);
  uint8_t *made = rows ? NULL : malloc(row * c->nranks), *want = malloc(row);
  if ((!rows && !made) || !want) {
    free(made);
    free(want);
    return -1;
  }
  for (uint32_t r = 0; made && r < c->nranks; r++)
    cs_ar_fill(fill, c, seed, r, made + row * r);
  const uint8_t *in = rows ? rows : made;
  cs_oracle_expect_mm(c->algo, c->dtype, c->op, (cs_minmax_t)c->minmax,
                      c->nranks, c->count, in, rank, want);
  size_t es = cs_dtype_size(c->dtype);
  for (uint64_t i = 0; cs_ar_rect(c) && i < c->count; i++)
    if (!cs_ar_in_rect(c, i)) /* §3.3: outside the rectangle, the own input */
      memcpy(want + i * es, in + row * rank + i * es, es);
  double rtol, atol;
  cs_oracle_tolerance(c->dtype, &rtol, &atol);
  int64_t first = -1;
  for (uint64_t i = 0; i < c->count; i++) {
    if (!cs_oracle_same(c->dtype, got, want, i) && v->wrong++ == 0)
      first = (int64_t)i;
    if (cs_ar_in_rect(c, i)) /* outside: no reduction to compare with */
      error_of(c, got, in, i, rtol, atol, v);
  }
  if (first >= 0)
    fprintf(stderr, "collsim-mpi: rank %u: WRONG: %.0f element%s differ from "
            "the oracle; first: index %lld: expected %.9g, got %.9g\n", rank,
            v->wrong, v->wrong == 1 ? "" : "s", (long long)first,
            cs_oracle_decode(c->dtype, want, (uint64_t)first),
            cs_oracle_decode(c->dtype, got, (uint64_t)first));
  free(made);
  free(want);
  return 0;
}

/* --output: every rank's result row to rank 0's io->out, in pieces an
 * int count can hold. */
static void gather_rows(const cs_ar_cfg_t *c, cs_mpi_t *m, const uint8_t *got,
                        const cs_mpi_io_t *io)
{
  size_t row = c->count * cs_dtype_size(c->dtype), piece = 1u << 30;
  if (m->rank == 0)
    memcpy(io->out, got, row);
  for (uint32_t r = 1; r < c->nranks; r++)
    for (size_t off = 0; off < row; off += piece) {
      int len = (int)(row - off < piece ? row - off : piece);
      if (m->rank == 0)
        MPI_Recv(io->out + row * r + off, len, MPI_BYTE, (int)r, 0, m->comm,
                 MPI_STATUS_IGNORE);
      else if ((uint32_t)m->rank == r)
        MPI_Send(got + off, len, MPI_BYTE, 0, 0, m->comm);
    }
}

/* Own signal cells at the end not where the signal mode leaves them: 0
 * after the last epilogue (self-clearing), or the final value of every
 * non-self cell (single-use). Every rank is past its last call (the
 * barrier), so no notify is in flight. */
static double signals_left(const cs_ar_cfg_t *c, cs_mpi_t *m,
                           const cs_layout_t *l)
{
  MPI_Barrier(m->comm);
  MPI_Win_sync(m->win);
  const cs_slot_t *sig = &l->slot[CS_AR_SLOT_SIGNAL];
  int32_t final = c->no_epilogue ? cs_ar_signal_final(c) : 0;
  double n = 0;
  for (uint64_t i = 0; i < cs_ar_signal_cells(c); i++) {
    int32_t v;
    memcpy(&v, m->base + cs_slot_cell_off(sig, i), sizeof(v));
    n += v != (cs_ar_signal_silent(c, (uint32_t)m->rank, i) ? 0 : final);
  }
  return n;
}

/* The wavefront's name of a wait: its place in the allreduce. */
static void wait_where(void *arg, uint32_t rank, uint32_t slot, uint32_t cell,
                       int32_t target, char *buf, size_t n)
{
  cs_ar_wait_where(arg, rank, slot, cell, target, buf, n);
}

/* The rank body as the launcher runs it (sim/launch.c), minus the fork. */
static void run_body(cs_dev_t *d, const cs_ar_cfg_t *c, cs_mpi_t *m)
{
  d->st->pid = (int32_t)getpid();
  d->st->state = CS_RS_RUNNING;
  int rc = cs_ar_rank_main(d, (void *)c);
  if (d->fault_at != UINT64_MAX) { /* a fault past the last event */
    d->nevents = d->fault_at;
    cs__dev_strike(d);
  }
  d->ops->done(d);
  d->st->state = rc == 0 ? CS_RS_DONE : CS_RS_FAILED;
  if (rc != 0) {
    fprintf(stderr, "collsim-mpi: rank %d: cannot run: %s\n", m->rank,
            cs_strerror(d->st->start_err));
    MPI_Abort(m->comm, CS_EXIT_ABORTED);
  }
}

/* Gathers the verdicts and the slowest rank's time per call at rank 0 and
 * decides the exit code every rank agrees on. */
static void gather(const cs_ar_cfg_t *c, cs_mpi_t *m, const cs_world_t *w,
                   uint32_t warmup, cs_mpi_verdict_t *v, cs_mpi_result_t *res)
{
  const uint8_t *out = cs_world_output(w, (uint32_t)m->rank);
  const cs_ar_stats_t *st = (const cs_ar_stats_t *)(out + cs_ar_stats_off(c));
  v->signal_bad = st->signal_bad;
  v->differ = st->iters_differ;
  cs_mpi_verdict_t sum, max;
  MPI_Reduce(v, &sum, VERDICT_N, MPI_DOUBLE, MPI_SUM, 0, m->comm);
  MPI_Reduce(v, &max, VERDICT_N, MPI_DOUBLE, MPI_MAX, 0, m->comm);
  uint64_t *ns = malloc(sizeof(uint64_t) * c->iters);
  if (!ns)
    MPI_Abort(m->comm, CS_EXIT_ABORTED);
  MPI_Reduce(st->ns, ns, (int)c->iters, MPI_UINT64_T, MPI_MAX, 0, m->comm);
  int code = 0;
  if (m->rank == 0) {
    sum.max_abs = max.max_abs;
    sum.max_rel = max.max_rel;
    res->v = sum;
    uint32_t skip = warmup < c->iters ? warmup : 0;
    res->median_ns = cs_verify_median_ns(ns + skip, c->iters - skip);
    code = sum.wrong || sum.signal_bad || sum.signals_left || sum.differ
               ? CS_EXIT_WRONG : CS_EXIT_OK;
  }
  free(ns);
  MPI_Bcast(&code, 1, MPI_INT, 0, m->comm);
  res->code = code;
}

/* A traced case's end: the header, then every rank's records to rank
 * 0's --trace path (com->trace). */
static void write_trace(const cs_ar_cfg_t *c, const cs_layout_t *l,
                        cs_fill_t fill, uint64_t seed, const uint8_t *rows,
                        const cs_cli_common_t *com, const cs_dev_t *d,
                        cs_mpi_tracer_t *tr, cs_mpi_result_t *res)
{
  cs_trace_header_t h;
  if (tr->m->rank == 0) {
    cs__mpi_trace_header(c, l, fill, seed, rows, com, &h);
    h.timeout_ns = d->timeout_ns;
  }
  res->trace_err = cs__mpi_trace_write(tr, com->trace, &h);
}

void cs__mpi_case(const cs_ar_cfg_t *c, cs_fill_t fill, uint64_t seed,
                  const cs_mpi_io_t *io, const cs_cli_common_t *com,
                  uint32_t warmup, int traced, cs_mpi_result_t *res)
{
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  memset(res, 0, sizeof(*res));
  cs_layout_t l;
  cs_world_t w;
  cs_world_opts_t wo = {.io_bytes = cs_ar_io_bytes(c), .timeout_ns = com->timeout_ns};
  cs_mpi_t m;
  cs_dev_t d;
  int err = cs_ar_layout(c, &l);
  if (err >= 0)
    err = cs_world_local(&w, &l, c->nranks, &wo);
  if (err >= 0 &&
      (err = cs_mpi_open(&m, MPI_COMM_WORLD, &l,
                           traced ? CS_AR_SLOT_SIGNAL : -1)) >= 0)
    err = cs_mpi_dev_init(&d, &m, &w, com->has_fault ? &com->fault : NULL);
  if (err < 0) {
    fprintf(stderr, "collsim-mpi: rank %d: %s\n", rank, cs_strerror(err));
    MPI_Abort(MPI_COMM_WORLD, CS_EXIT_ABORTED);
  }
  m.abort_code = CS_EXIT_ABORTED;
  m.report = stderr;
  m.cmd = "collsim-mpi";
  m.where = (cs_wait_where_t){wait_where, (void *)c};
  cs_mpi_tracer_t tr;
  cs_trace_header_t th;
  if (traced && rank == 0) { /* for a run that aborts */
    cs__mpi_trace_header(c, &l, fill, seed, io ? io->rows : NULL, com, &th);
    th.timeout_ns = d.timeout_ns;
  }
  if (traced)
    cs__mpi_trace_attach(&tr, &d, &m, rank == 0 ? com->trace : NULL,
                         rank == 0 ? &th : NULL);
  const uint8_t *rows = io ? io->rows : NULL;
  uint8_t *mine = cs_world_input(&w, (uint32_t)rank);
  size_t row = c->count * cs_dtype_size(c->dtype);
  if (rows)
    memcpy(mine, rows + row * (size_t)rank, row);
  else
    cs_ar_fill(fill, c, seed, (uint32_t)rank, mine);
  MPI_Barrier(m.comm);
  run_body(&d, c, &m);
  cs_mpi_verdict_t v = {0};
  const uint8_t *got = cs_world_output(&w, (uint32_t)rank);
  if (check_result(c, fill, seed, rows, (uint32_t)rank, got, &v) < 0) {
    fprintf(stderr, "collsim-mpi: rank %d: out of memory\n", rank);
    MPI_Abort(m.comm, CS_EXIT_ABORTED);
  }
  if (io && io->gather)
    gather_rows(c, &m, got, io);
  v.signals_left = signals_left(c, &m, &l);
  gather(c, &m, &w, warmup, &v, res);
  if (traced)
    write_trace(c, &l, fill, seed, rows, com, &d, &tr, res);
  res->unified = m.unified;
  res->clock_words = m.clock_words;
  cs_dev_fini(&d);
  cs_mpi_close(&m);
  cs_world_destroy(&w);
}
