/*
 * ring.h - internal to the trace module: the per-rank rings of chunks in
 * the shared region, the recorder's per-rank state and the tracer, shared
 * by the recorder (record.c, in the ranks) and the writer (writer.c, in the
 * launcher). Not for use outside sim/trace/.
 */
#ifndef CS_TRACE_RING_H
#define CS_TRACE_RING_H

#include <liburing.h>

#include "../trace.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* A rank's ring: a 4 KiB header, then CS_TRACE_CHUNKS chunks of chunk_rec
 * records, each chunk a whole number of 4 KiB blocks, so a full chunk goes
 * to the file straight from the shared memory (O_DIRECT, no copy). A chunk
 * slot is FILLING (the rank appends to it), FULL (waiting for the
 * launcher), WRITING (its write is in flight) or FREE. POD. */
enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_FULL, SLOT_WRITING };

typedef struct cs_trace_ring {
  /* The rank's line: read and written on every append. */
  uint64_t head;      /* records published by the rank */
  uint64_t end;       /* head at which the current chunk is full */
  uint32_t cur;       /* the current chunk's slot */
  uint32_t chunk_rec; /* records per chunk */
  uint32_t use_tsc;   /* 1: records carry TSC ticks since start_tsc in t_ns
                         (the header's tick_ns converts them), 0: ns */
  int32_t  launcher;  /* pid that gets the doorbell */
  uint64_t start_tsc; /* TSC at the trace start */
  uint64_t start_ns;  /* CLOCK_MONOTONIC of the trace start */
  uint8_t  pad0[16];
  /* The slots' states: the rank fills and hands over, the launcher frees. */
  uint32_t state[CS_TRACE_CHUNKS];
  uint8_t  pad1[4096 - 64 - 4 * CS_TRACE_CHUNKS];
  cs_trace_rec_t rec[]; /* CS_TRACE_CHUNKS * chunk_rec records */
} cs_trace_ring_t;
_Static_assert(offsetof(cs_trace_ring_t, state) == 64, "state line");
_Static_assert(sizeof(cs_trace_ring_t) == 4096, "ring header: one block");

/* Records per chunk: a multiple of 256, so a chunk is 80 * 256 = 20 KiB =
 * five 4 KiB blocks times a whole number. */
#define CHUNK_GRAIN 256u

static inline cs_trace_ring_t *ring_of(const cs_world_t *w, uint32_t rank)
{
  return (cs_trace_ring_t *)(w->base + w->ctl->off_trace +
                             (uint64_t)rank * w->ctl->trace_bytes);
}

static inline cs_trace_rec_t *slot_rec(cs_trace_ring_t *r, uint32_t slot)
{
  return r->rec + (uint64_t)slot * r->chunk_rec;
}

/* A timestamp for a record: TSC ticks when the launcher found an invariant
 * TSC (far cheaper to read than clock_gettime, and there is one record per
 * device event), else ns. */
static inline uint64_t rec_clock(const cs_trace_ring_t *r)
{
#if defined(__x86_64__)
  if (r->use_tsc)
    return __rdtsc() - r->start_tsc;
#endif
  return cs_now_ns() - r->start_ns;
}

/* The recorder's state of one rank, in that rank's process: each forked
 * rank has its own copy of the launcher's tracer (fork copies the heap),
 * and only its own rank writes this part of it. */
typedef struct cs_trace_rank {
  uint64_t         seq_next, seq_end; /* unused numbers of the seq block */
  uint64_t         seq_base; /* free mode: the launcher reserved [seq_base +
                                rank * SEQ_BLOCK, + SEQ_BLOCK) as each rank's
                                first block (record.c) */
  cs_trace_ring_t *ring;  /* free mode: own ring (NULL until the first) */
  cs_trace_rec_t  *next;  /* free mode: where the next record goes */
  uint64_t         left;  /* free mode: records left in the chunk */
  uint64_t         head;  /* free mode: the ring's head, as published */
} cs_trace_rank_t;

/* The file: the header block, then the full chunks in the order the
 * launcher wrote them (each at a 4 KiB-aligned offset, written with
 * O_DIRECT from the shared memory where the file system allows, which
 * spares the launcher the kernel's page-cache copy), then, written at
 * close, each rank's last
 * partial chunk and the launcher's fault/abort records. */
#define DIO_ALIGN 4096u

struct cs_tracer {
  cs_trace_rank_t rank; /* recorder state of the rank this process is */
  struct io_uring ring;
  int       use_tsc;  /* records carry TSC ticks (see rec_clock) */
  uint64_t  tsc0;     /* TSC at the start */
  uint64_t  ns0;      /* CLOCK_MONOTONIC at the start */
  cs_trace_header_t hdr; /* as written; tick_ns is finalised at close */
  int       fd;
  int       direct;   /* fd has O_DIRECT */
  int       created;  /* this tracer created the file (unlink on failure) */
  cs_world_t *w;
  uint32_t  nchunk;   /* nranks * CS_TRACE_CHUNKS: chunk c = rank c / 4, slot c % 4 */
  uint64_t  chunk_bytes;
  uint8_t  *was_direct; /* per chunk: submitted while fd had O_DIRECT */
  uint64_t *off;      /* per chunk: file offset of its write in flight */
  uint32_t  inflight; /* writes submitted, completion not reaped */
  uint32_t  depth;    /* io_uring entries: at most this many in flight */
  int       have_ring; /* the io_uring was set up (queue_exit at close) */
  int       sync_only; /* no io_uring, or it failed: pwrite from then on */
  uint64_t  pos;      /* end of the file so far */
  int       err;      /* first write error, -errno */
  int       mem;      /* no file: the records go to mem_rec (a memory
                         tracer, cs_tracer_open_mem) */
  cs_trace_rec_t *mem_rec; /* a memory tracer's records, in file order */
  uint64_t  mem_n, mem_cap;
};

/* Writer: reaps one completed write, waiting for one if `wait`; 0, or -1
 * if none was reaped (see writer.c). For the recorder in the launcher. */
int cs__tracer_reap(cs_tracer_t *t, int wait);

#endif
