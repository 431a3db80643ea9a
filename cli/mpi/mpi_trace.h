/*
 * mpi_trace.h - `collsim-mpi run --trace FILE`: an ordinary collsim trace
 * (sim/trace/format.h) of a run whose ranks share no memory and no clock.
 *
 * Each rank records its own events in process memory, stamped with a
 * Lamport clock (cs_mpi_t.clock, carried from a notify to the wait that
 * sees it through the window's clock words, sim/transport_mpi.h): +1 per
 * event, and a wait that holds first takes the max with its cell's word.
 * At the end every rank's records go to rank 0 (MPI_Gatherv), which sorts
 * them by (clock, rank): a linearisation consistent with happens-before
 * (an event's clock exceeds that of every event before it on its rank and
 * of every notify its waits saw), numbers them 1, 2, ... as seq (so seq
 * order is causal, as collsim trace and check expect) and writes the file.
 * Time in such a trace is logical: t_ns holds the Lamport clock, and the
 * header's tick_ns (1000) shows one tick as 1 us; the schedule reads "mpi".
 * A run aborted by a wait timeout or an injected hang writes what the
 * ranks that answered the wavefront recorded (cs__mpi_trace_attach); a
 * run aborted otherwise (a fault, a dead rank) writes no trace.
 */
#ifndef CS_MPI_TRACE_H
#define CS_MPI_TRACE_H

#include <stdint.h>

#include "../../collectives/allreduce.h"
#include "../../sim/trace.h"
#include "../../sim/transport_mpi.h"
#include "../collsim/cli.h"

/* ns per logical tick in the header: each tick shows as 1 us. */
#define CS_MPI_TICK_NS 1000.0
/* The header's schedule of a trace written over MPI. */
#define CS_MPI_SCHEDULE "mpi"

typedef struct cs_mpi_tracer {
  cs_mpi_t       *m;
  cs_trace_rec_t *rec; /* this rank's records; seq holds the clock */
  uint64_t        n, cap;
  const char     *path; /* rank 0: --trace, for a run that aborts */
  cs_trace_header_t hdr; /* rank 0: its header, made before the run */
} cs_mpi_tracer_t;

/* Makes device d (over m, opened with clocks) record into t, and a wait
 * timeout write the trace of the aborted run (cs_mpi_t.stop_trace): the
 * ranks that answered rank 0's wavefront send it their records
 * (MPI_Isend, given up at a deadline), and rank 0 writes them to `path`
 * (rank 0's; NULL elsewhere) with header h (rank 0's, made before the
 * run), then one fault record per hung rank and the abort record (wait
 * timeout), as a one-host run's trace ends. */
void cs__mpi_trace_attach(cs_mpi_tracer_t *t, cs_dev_t *d, cs_mpi_t *m,
                          const char *path, const cs_trace_header_t *h);

/* Collective: gathers every rank's records at rank 0, which merges them
 * and writes header h (completed here) and the records to path (rank 0's;
 * a temp file beside it renamed over it, or a character device or the
 * caller's own link in place; nothing is created before this call).
 * Frees the records. Returns, on every rank, 0 or rank 0's -errno. */
int cs__mpi_trace_write(cs_mpi_tracer_t *t, const char *path,
                        cs_trace_header_t *h);

/* The header fields of case c (layout l, input fill/seed, or with fill
 * CS_FILL_INPUT the --input rows, N rows of c's count, whose hash it
 * holds; --fault). */
void cs__mpi_trace_header(const cs_ar_cfg_t *c, const cs_layout_t *l,
                          cs_fill_t fill, uint64_t seed, const uint8_t *rows,
                          const cs_cli_common_t *com, cs_trace_header_t *h);

#endif
