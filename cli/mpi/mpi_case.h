/*
 * mpi_case.h - one allreduce case of collsim-mpi on every MPI rank: the
 * window, the seeded input, the timed calls and this rank's verdict,
 * gathered at rank 0. Shared by `collsim-mpi run` (one case or a sweep)
 * and `collsim-mpi bench`; printing stays with them (cli/mpi/mpi_main.c,
 * cli/mpi/mpi_bench.c).
 */
#ifndef CS_MPI_CASE_H
#define CS_MPI_CASE_H

#include <stdint.h>

#include "../../collectives/allreduce.h"
#include "../collsim/cli.h"

/* What the ranks found, summed over ranks at rank 0 (max_abs and max_rel
 * are the maximum over ranks). */
typedef struct cs_mpi_verdict {
  double wrong;        /* result elements that differ from the oracle */
  double signal_bad;   /* cells that missed their final value */
  double signals_left; /* own cells not back to 0 */
  double differ;       /* calls that differed from the first */
  double max_abs, max_rel, tol_fail;
} cs_mpi_verdict_t;

typedef struct cs_mpi_result {
  cs_mpi_verdict_t v;   /* rank 0 only */
  uint64_t median_ns;   /* rank 0 only: median over the timed calls of the
                           slowest rank's time per call */
  int      unified;     /* the window's memory model is unified */
  int      code;        /* every rank: CS_EXIT_OK or CS_EXIT_WRONG */
  int      trace_err;   /* every rank: 0, or -errno of the trace's write */
  uint64_t clock_words; /* traced: clock words per rank (one per signal
                           cell), else 0 */
} cs_mpi_result_t;

/* --input and --output of a case (cli/mpi/mpi_main.c). */
typedef struct cs_mpi_io {
  const uint8_t *rows; /* every rank: the N input rows (row r is rank r's
                          input), or NULL for the fill */
  uint8_t       *out;  /* rank 0: room for the N result rows, gathered
                          after the check; NULL on the others */
  int            gather; /* every rank: 1 to gather the results at rank 0 */
} cs_mpi_io_t;

/* Runs case `c` (c->iters calls, the first `warmup` of them left out of
 * the median) with input `fill`/`seed` (or io->rows; io may be NULL) on
 * the communicator's ranks, gathering the results into io->out. Every
 * rank calls it; a rank that cannot go on calls MPI_Abort (exit 3), so
 * it returns only with a verdict. traced: 0 on every rank for an
 * untraced run; else (1 on every rank) the run is traced
 * (cli/mpi/mpi_trace.h) to rank 0's com->trace, written only at the end; a
 * write that fails sets res->trace_err. */
void cs__mpi_case(const cs_ar_cfg_t *c, cs_fill_t fill, uint64_t seed,
                  const cs_mpi_io_t *io, const cs_cli_common_t *com,
                  uint32_t warmup, int traced, cs_mpi_result_t *res);

/* `collsim-mpi bench` (cli/mpi/mpi_bench.c): every rank calls it with the
 * whole command line; returns the exit code every rank agrees on. */
int cs__mpi_bench(int argc, char **argv, int rank, int size);

#endif
