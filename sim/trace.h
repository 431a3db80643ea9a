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
 * File = header block (4096 bytes: the 1024-byte header, then zeros) +
 * records (80 bytes each), little-endian. Versions 1 and 2 (still read)
 * have a 1024-byte header block.
 *
 * Header:
 *   0   u8[8]  magic "CSTRACE\0"         96   char[64] schedule
 *   8   u32    version (3; 1, 2 read)    160  char[16] collsim version
 *   12  u32    header_bytes (4096)       176  cs_layout_t slot table (400 B)
 *   16  u32    record_bytes (80)         576  u64 timeout_ns
 *   20  u32    nranks                    584  u64 start_ns (CLOCK_MONOTONIC)
 *   24  u64    count (elements)          592  u32 header checksum (FNV-1a 32
 *   32  u32    algo (255 = none)                of the header, this field 0)
 *   36  u32    dtype
 *   40  u32    op
 *   44  u32    fill
 *   48  u64    seed
 *   56  u64    input hash (FNV-1a 64 of all inputs)
 *   64  u32    tile_bytes
 *   68  u32    iters
 *   72  u32    memory model (0 sc, 1 fifo, 2 relaxed)
 *   76  u32    program (0 allreduce, 1 ping)
 *   80  u32    bug (0 none)
 *   84  u32    rounds (ping) / reserved
 *   88  u64    reserved                  596  u32 fault kind (0 none)
 *                                        600  u32 fault rank
 *                                        604  u32 reserved
 *                                        608  u64 fault event
 *                                        616  u8[408] reserved, zero
 *
 * Record:
 *   0   u64 seq        global sequence number (causal order)
 *   8   u64 t_ns       ns since start_ns
 *   16  u64 elem_off   first element accessed
 *   24  u64 dma_id     ties a post to its landing (0 in free mode)
 *   32  u32 rank       40  u32 slot       48  u32 valid   56  i32 value
 *   36  u32 peer       44  u32 cell       52  u32 phys    60  i32 observed
 *   64  u16 kind       66  u8 opcmp  67 u8 phase   68 u32 round
 *   72  u32 step       76  u32 checksum (CRC-32C of bytes 0..75)
 */
#ifndef CS_TRACE_H
#define CS_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "dev.h"

struct cs_launch_opts;
struct cs_launch_result;

#define CS_TRACE_MAGIC "CSTRACE"
#define CS_TRACE_VERSION 3u /* 2: 1024-byte header block; 1: also t_ns in
                               ns, no tick_ns. Both still read. */
#define CS_TRACE_HEADER_BYTES 4096u /* the header block: header, zeros */
#define CS_TRACE_HEADER_STRUCT 1024u /* the header itself (v1, v2: the block) */
#define CS_TRACE_RECORD_BYTES 80u

/* Record kinds: the device events (cs_ev_kind_t, WAIT = wait-end) and the
 * ones only traces have. */
enum {
  CS_TR_WAIT_BEGIN = 9,  /* a wait starts: value = target */
  CS_TR_DMA_POST = 10,   /* controlled mode: a store/put/notify is posted */
  CS_TR_DMA_LAND = 11,   /* controlled mode: it lands */
  CS_TR_FAULT = 12,      /* a rank died: value = signal or exit status,
                            observed = its event index, step = 1 signal / 2 exit */
  CS_TR_ABORT = 13,      /* the run was aborted: value = CS_ABORT_* reason,
                            rank = first failing rank (UINT32_MAX launcher) */
  CS_TR_NKINDS = 14
};

/* The event that failed (out-of-slot fault, wait timeout) is recorded with
 * this bit set in opcmp. */
#define CS_TR_FAILED 0x80u

typedef struct cs_trace_header {
  char     magic[8];      /* "CSTRACE\0" */
  uint32_t version;       /* CS_TRACE_VERSION */
  uint32_t header_bytes;  /* 4096 (v1, v2: 1024) */
  uint32_t record_bytes;  /* 80 */
  uint32_t nranks;        /* ranks */
  uint64_t count;         /* elements per rank */
  uint32_t algo;          /* cs_algo_t, 255 = none */
  uint32_t dtype;         /* cs_dtype_t */
  uint32_t op;            /* cs_op_t */
  uint32_t fill;          /* cs_fill_t */
  uint64_t seed;          /* fill seed */
  uint64_t input_hash;    /* FNV-1a 64 of all ranks' inputs */
  uint32_t tile_bytes;    /* bytes */
  uint32_t iters;         /* calls */
  uint32_t memory_model;  /* 0 sc, 1 fifo, 2 relaxed */
  uint32_t program;       /* 0 allreduce, 1 ping */
  uint32_t bug;           /* mutation id, 0 none */
  uint32_t rounds;        /* ping rounds, else 0 */
  double   tick_ns;       /* ns per tick of the records' t_ns; 0: t_ns is ns */
  char     schedule[64];  /* "free", "random:SEED", ... NUL-terminated */
  char     version_str[16]; /* collsim version, NUL-terminated */
  cs_layout_t layout;     /* slot table */
  uint64_t timeout_ns;    /* wait timeout */
  uint64_t start_ns;      /* CLOCK_MONOTONIC at the start */
  uint32_t checksum;      /* FNV-1a 32 of the header with this field 0 */
  uint32_t fault_kind;    /* injected fault (cs_fault_kind_t), 0 none */
  uint32_t fault_rank;    /* its rank */
  uint32_t reserved1;     /* zero */
  uint64_t fault_event;   /* its event index */
  uint8_t  reserved[408]; /* zero */
} cs_trace_header_t;
_Static_assert(sizeof(cs_trace_header_t) == CS_TRACE_HEADER_STRUCT, "header");
_Static_assert(offsetof(cs_trace_header_t, schedule) == 96, "schedule");
_Static_assert(offsetof(cs_trace_header_t, layout) == 176, "layout");
_Static_assert(offsetof(cs_trace_header_t, checksum) == 592, "checksum");

typedef struct cs_trace_rec {
  uint64_t seq;      /* global sequence number */
  uint64_t t_ns;     /* on disk: ticks since the start (x tick_ns = ns);
                        loaded (cs_trace_load): ns since start_ns */
  uint64_t elem_off; /* first element */
  uint64_t dma_id;   /* 0 in free mode */
  uint32_t rank;     /* acting rank */
  uint32_t peer;     /* peer rank (own rank for local) */
  uint32_t slot;     /* slot index */
  uint32_t cell;     /* signal cell (notify/wait); phase id for marks */
  uint32_t valid;    /* logical elements */
  uint32_t phys;     /* physical elements */
  int32_t  value;    /* notify value, wait target, mark step */
  int32_t  observed; /* wait: value seen; notify: cell after the add */
  uint16_t kind;     /* cs_ev_kind_t or CS_TR_* */
  uint8_t  opcmp;    /* notify op / wait cmp / reduce op; | CS_TR_FAILED */
  uint8_t  phase;    /* 0 none, 1 main/RS, 2 AG */
  uint32_t round;    /* RS/AG round or chunk */
  uint32_t step;     /* subchunk */
  uint32_t checksum; /* CRC-32C (Castagnoli) of bytes [0, 76) */
} cs_trace_rec_t;
_Static_assert(sizeof(cs_trace_rec_t) == CS_TRACE_RECORD_BYTES, "record");
_Static_assert(offsetof(cs_trace_rec_t, kind) == 64, "record.kind");
_Static_assert(offsetof(cs_trace_rec_t, checksum) == 76, "record.checksum");

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

/* Hooks that record every device event of a rank into its ring, and the
 * scheduler's DMA landings (hook_arg: the tracer). */
extern const cs_dev_hooks_t cs_trace_hooks;

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
int cs_tracer_close(cs_tracer_t *t, const struct cs_launch_result *res,
                    const int *statuses);

/* Records the ranks have appended so far, all ranks (after the launch:
 * every record of the run but the launcher's fault/abort ones). */
uint64_t cs_tracer_records(const cs_tracer_t *t);
/* In a rank: the records it has appended so far (0 in an untraced run). */
uint64_t cs_trace_rank_records(const cs_dev_t *d);
/* Sets the launch options that make a run record into `t`; the process
 * that calls this must be the one that calls cs_launch (the ranks ring its
 * doorbell, CS_LAUNCH_DOORBELL). */
void cs_tracer_launch_opts(cs_tracer_t *t, struct cs_launch_opts *o);

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
