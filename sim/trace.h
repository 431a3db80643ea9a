/*
 * trace.h - the transfer log: binary format v3, recording in the ranks,
 * writing in the launcher (liburing), and reading it back.
 *
 * Owns: the on-disk layout (documented in traces/FORMAT.md), the per-rank
 * rings of chunks in the shared region, the device-API hooks that fill
 * them, the writer that writes full chunks while the run goes, and the
 * validating reader.
 * Does not own what the records mean to an algorithm (collectives/) or how
 * they are shown (tools/trace.c).
 *
 * The file's bytes (header, records, kinds, field maps) are in
 * trace/format.h.
 */
#ifndef CS_TRACE_H
#define CS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dev.h"
#include "launch.h"
#include "trace/format.h"

uint32_t cs_trace_fnv32(const void *p, size_t n);
/* A record's checksum: CRC-32C of its bytes [0, 76). */
uint32_t cs_trace_rec_sum(const cs_trace_rec_t *x);
uint64_t cs_trace_fnv64(const void *p, size_t n);
const char *cs_trace_kind_name(uint32_t kind);

/* ---- recording (ranks) ---- */

/* Bytes of one rank's ring of CS_TRACE_CHUNKS chunks of `chunk_rec`
 * records each, rounded up to a multiple of 256 so a chunk is whole 4 KiB
 * blocks (pass as trace_bytes in cs_world_opts_t). */
#define CS_TRACE_CHUNKS 4u
uint64_t cs_trace_ring_bytes(uint64_t chunk_rec);
/* Records per chunk for a run of n ranks: as large as fits 32 MiB of
 * rings in all, between 1280 (100 kB) and 51200 (4 MB) records. Each
 * chunk a rank fills costs a launcher wake-up and a write submission, so
 * large chunks are cheaper; 2 ranks get 4 MB, 8 ranks 1 MB. */
uint64_t cs_trace_chunk_rec(uint32_t nranks);

/* Hooks that record every device event of a rank into its ring. */
extern const cs_dev_hooks_t cs_trace_hooks;

/* Scheduler side: records a DMA landing in `rank`'s ring (dma-land
 * record: round = kind of the landed op, opcmp = notify op, value = notify
 * value, observed = cell after a notify). Only while the rank sleeps. */
void cs__trace_land(cs_world_t *w, uint32_t rank, uint32_t kind, uint32_t peer,
                    uint32_t slot, uint32_t cell, uint64_t elem_off,
                    uint32_t valid, uint32_t op, int32_t value, uint64_t dma_id,
                    int32_t observed);

/* ---- writing (launcher) ---- */

typedef struct cs_tracer cs_tracer_t;

/* Creates `path` and writes the header (its start_ns is set now). The
 * world must have been created with trace rings. Returns 0 or -errno. */
int cs_tracer_open(cs_tracer_t **t, const char *path, cs_trace_header_t *h,
                   cs_world_t *w);
/* Submits every full chunk of every ring as an asynchronous write (from
 * the shared memory itself: O_DIRECT where the file system allows) and
 * frees the chunks whose writes completed. Called while the run goes
 * (cs_launch_opts_t.tick: a rank that fills a chunk rings the doorbell). */
void cs_tracer_drain(void *tracer);
/* After the ranks are reaped: writes every full chunk and waits for every
 * write, appends each rank's partial chunk, a FAULT record for every rank
 * that died and an ABORT record if the run was aborted; closes.
 * statuses: the launcher's per-rank wait statuses (may be NULL). Returns
 * 0, or -errno if any write failed. Frees t. */
int cs_tracer_close(cs_tracer_t *t, const cs_launch_result_t *res,
                    const int *statuses);

/* Records the ranks have appended so far, all ranks (after the launch:
 * every record of the run but the launcher's fault/abort ones). */
uint64_t cs_tracer_records(const cs_tracer_t *t);
/* In a rank: the records it has appended so far (0 in an untraced run). */
uint64_t cs_trace_rank_records(const cs_dev_t *d);
/* Sets the launch options that make a run record into `t`; the process
 * that calls this must be the one that calls cs_launch (the ranks ring its
 * doorbell, CS_LAUNCH_DOORBELL). */
void cs_tracer_launch_opts(cs_tracer_t *t, cs_launch_opts_t *o);

/* ---- reading ---- */

typedef struct cs_trace {
  cs_trace_header_t hdr;
  cs_trace_rec_t   *rec; /* sorted by seq */
  uint64_t          n;   /* records */
} cs_trace_t;

/* Reads and validates a whole trace. Returns 0, or -1 with one line in
 * `why` (empty, truncated, wrong magic, future version, corrupt header or
 * record N) and `t` left empty. Never crashes on any input. */
int cs_trace_load(const char *path, cs_trace_t *t, char *why, size_t whylen);
void cs_trace_free(cs_trace_t *t);
/* The same, but records whose checksum does not match (edited by hand)
 * are kept, if their fields are in range, and counted in *edited. */
int cs_trace_load_edited(const char *path, cs_trace_t *t, char *why,
                         size_t whylen, uint64_t *edited);

#endif
