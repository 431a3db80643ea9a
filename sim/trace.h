/*
 * trace.h - the transfer log, the trace module's public face: recording
 * in the ranks (sim/trace/record.c), writing in the launcher
 * (sim/trace/writer.c, liburing), and reading it back (sim/trace/read.c,
 * streaming: sim/trace/read.h).
 *
 * The file's bytes (header, records, kinds, field maps) are in
 * trace/format.h and documented in traces/FORMAT.md. Does not own what
 * the records mean to an algorithm (collectives/) or how they are shown
 * (sim/trace/describe.h, export.h; cli/collsim/trace_cmd.c).
 */
#ifndef CS_TRACE_H
#define CS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dev.h"

#include "trace/format.h"

struct cs_launch_opts;
struct cs_launch_result;


/* ---- recording (ranks) ---- */

/* Bytes of one rank's ring of CS_TRACE_CHUNKS chunks of `chunk_rec`
 * records each, rounded up to a multiple of 256 so a chunk is whole 4 KiB
 * blocks (pass as trace_bytes in cs_world_opts_t). */
#define CS_TRACE_CHUNKS 4u
uint64_t cs_trace_ring_bytes(uint64_t chunk_rec);
/* Records per chunk for a free-mode run of n ranks: as large as fits
 * 32 MiB of rings in all, between CS_TRACE_CHUNK_MIN (100 kB) and 12800
 * (1 MB) records, so 1 to 8 ranks get 1 MB chunks (a 4 MB ring each) and
 * 16 ranks 512 kB. Each chunk a rank fills costs a launcher wake-up and a
 * write submission, which favours large chunks; but where the first write
 * to each page of a rank's mapping is slow (~9 us per 4 KiB page in a VM,
 * ~180 ns per record) a small ring that a run reuses is far cheaper than
 * a large one it fills once: at 1 MiB per rank a 2-rank host call records
 * ~580 kB per rank, so a 4 MB ring wraps every ~7 calls. A controlled
 * run (one event at a time; the launcher takes every step anyway) uses
 * CS_TRACE_CHUNK_MIN, so a short run does not pay for setting up MiB of
 * rings. Chunks are the unit of writing only: a run's records are the
 * same whatever their size. A free-mode rank writes its whole ring once
 * at its first record (record.c, ring_touch), so that cost is paid there,
 * once, and not on the records of the ring's first lap. */
#define CS_TRACE_CHUNK_MIN 1280u
uint64_t cs_trace_chunk_rec(uint32_t nranks);

/* Hooks that record every device event of a rank into its ring, and the
 * scheduler's DMA landings (hook_arg: the tracer). */
extern const cs_dev_hooks_t cs_trace_hooks;

/* The record of event ev of `rank` as `kind` (ev->kind, or a trace-only
 * kind such as CS_TR_WAIT_BEGIN): kind, rank and the event's peer, slot,
 * elem_off, valid, phys, cell, opcmp and value; every other field 0
 * (seq, t_ns, dma_id, observed, phase, round, step, checksum) for the
 * caller to set. For records made outside the rings (collsim-mpi's
 * trace, the scheduler's describer); the hooks above copy in blocks. */
static inline void cs_trace_rec_from_event(cs_trace_rec_t *x, uint32_t rank,
                                           uint32_t kind, const cs_event_t *ev)
{
  *x = (cs_trace_rec_t){.kind = (uint16_t)kind, .rank = rank,
                        .peer = ev->peer, .slot = ev->slot,
                        .elem_off = ev->elem_off, .valid = ev->valid,
                        .phys = ev->phys, .cell = ev->cell,
                        .opcmp = (uint8_t)ev->opcmp, .value = ev->value};
}

/* ---- writing (launcher) ---- */

typedef struct cs_tracer cs_tracer_t;

/* The output rule, one for every path a subcommand writes (a trace, an
 * export, a .npy, a shrunk trace): checked before any work starts, and
 * again by the writers below when they write.
 * Accepts a path where nothing is, and an existing regular file of ours
 * (owned by the effective user) with no other hard links, reached by its
 * name or through our own symbolic link. Refuses: one of `inputs` (a
 * NULL-terminated list, may be NULL) by inode, so through links and other
 * names, or by name in the same directory when either does not exist yet
 * (CS_ESAMEFILE, *which = its index; which may be NULL); another user's
 * symbolic link, never followed, as the last name, behind ours, or as a
 * directory on the way (CS_ESYMLINK; cs_links_ours); a directory (-EISDIR); a
 * FIFO, device, socket (CS_ENOTREG); another user's file (CS_ENOTOURS); a
 * file with other hard links, which may be someone's file linked into a
 * shared directory (CS_EHARDLINK); -errno when path cannot be looked at.
 * Looks only (lstat, stat): changes nothing, never blocks. */
int cs_output_check(const char *path, const char *const *inputs, int *which);

/* Whether resolving path meets only links it may follow: every link of
 * the last name (link after link) must be ours; a link that is a
 * directory on the way, ours or root's. 0 (also when path holds no link,
 * or the rest of it is not there), CS_ESYMLINK at the first link another
 * user owns, or -errno (-ELOOP after 40 links). Trailing slashes make no
 * difference ("link/" is the link). Looks only (lstat, readlink). */
int cs_links_ours(const char *path);

/* Opens `path` for writing an output file in place (a trace, an export)
 * under the output rule (cs_output_check, without inputs): creates it
 * (0644 under the umask, *created = 1), or truncates an existing regular
 * file of ours, which keeps its mode and owner. The type is checked again
 * on the open file, so a path swapped since a check cannot slip through
 * and a FIFO never blocks the open. Returns the fd (O_CLOEXEC, blocking)
 * or a negative code as cs_output_check's; nothing is changed on
 * failure. */
int cs_trace_create_file(const char *path, int *created);

/* Puts the finished file `tmp` (closed, on path's file system: beside it)
 * in path's place under the output rule, checked again now: renamed to
 * path where nothing is (never over a file that appeared since, where the
 * file system can refuse it); renamed over an existing regular file of
 * ours after taking its mode, owner and group (a group we cannot give
 * stays ours); copied in place into the file our own symbolic link names
 * (the link stays; readers may see a partial file meanwhile). Returns 0
 * with tmp gone, or a negative code as cs_output_check's with tmp left
 * for the caller to remove and path unchanged (but for a failed copy). */
int cs_output_replace(const char *tmp, const char *path);

/* The header fields that are the file's frame rather than the run's
 * configuration: magic, version, header and record sizes, ranks, slot
 * table, wait timeout and start time. The writer's and collsim-mpi's
 * headers are both made with it. */
void cs_trace_header_frame(cs_trace_header_t *h, uint32_t nranks,
                           const cs_layout_t *l, uint64_t timeout_ns,
                           uint64_t start_ns);
/* Sets h->checksum: FNV-1a 32 of the header with the field itself 0. */
void cs_trace_header_seal(cs_trace_header_t *h);

/* Creates `path` (cs_trace_create_file) and writes the header (its
 * start_ns is set now). The world must have been created with trace
 * rings. Returns 0 or -errno / CS_E*. */
int cs_tracer_open(cs_tracer_t **t, const char *path, cs_trace_header_t *h,
                   cs_world_t *w);
/* A tracer with no file: the same records, kept in memory (each full
 * chunk copied out as the ranks hand it over, the rest at close), for a
 * caller that only analyses the run (explore --check). No io_uring, no
 * clock calibration: the records carry ns since the start and the header
 * tick_ns 0. Returns 0 or -ENOMEM / -EINVAL. */
int cs_tracer_open_mem(cs_tracer_t **t, cs_trace_header_t *h, cs_world_t *w);
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
int cs_tracer_close(cs_tracer_t *t, const struct cs_launch_result *res,
                    const int *statuses);

/* cs_tracer_close for a memory tracer: the records the file would hold
 * (the launcher's FAULT and ABORT ones included), sorted by seq, into
 * *out as cs_trace_load gives them (header COMPLETE with end_records;
 * free with cs_trace_free). Returns 0, or -ENOMEM with *out empty. Frees
 * t. */
struct cs_trace;
int cs_tracer_close_mem(cs_tracer_t *t, const struct cs_launch_result *res,
                        const int *statuses, struct cs_trace *out);

/* Records the ranks have appended so far, all ranks (after the launch:
 * every record of the run but the launcher's fault/abort ones). */
uint64_t cs_tracer_records(const cs_tracer_t *t);
/* In a rank: the records it has appended so far (0 in an untraced run). */
uint64_t cs_trace_rank_records(const cs_dev_t *d);
/* Sets the launch options that make a run record into `t`; the process
 * that calls this must be the one that calls cs_launch (the ranks ring its
 * doorbell, CS_LAUNCH_DOORBELL), once per launch, with o->sched already
 * set (controlled and free mode record with different hooks). */
void cs_tracer_launch_opts(cs_tracer_t *t, struct cs_launch_opts *o);

/* ---- reading ---- */

typedef struct cs_trace {
  cs_trace_header_t hdr;
  cs_trace_rec_t   *rec; /* sorted by seq */
  uint64_t          n;   /* records */
} cs_trace_t;

/* Reads and validates a whole trace. Returns 0, or a negative code (those
 * of cs_trace_reader_open and _next, -ENOMEM, CS_EDUPSEQ) with `t` left
 * empty and, if `d` is not NULL, the defect in *d (empty, truncated, wrong
 * magic, future version, corrupt header or record N, a repeated sequence
 * number; d->path = path), which cs_trace_strerror (sim/trace/read.h)
 * words in one line. Never crashes on any input. */
struct cs_trace_diag; /* sim/trace/read.h */
int cs_trace_load(const char *path, cs_trace_t *t, struct cs_trace_diag *d);
void cs_trace_free(cs_trace_t *t);
/* The same, but records whose checksum does not match (edited by hand)
 * are kept, if their fields are in range, and counted in *edited. */
int cs_trace_load_edited(const char *path, cs_trace_t *t,
                         struct cs_trace_diag *d, uint64_t *edited);

#endif
