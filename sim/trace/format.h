/*
 * format.h - the trace file's bytes, version 4: the header and record
 * structs, their constants, and one field map per struct as data.
 *
 * Owns: the on-disk layout of a .cstrace file, which traces/FORMAT.md
 * specifies; tests/test_format.c holds that document to the field maps
 * below, row by row. Does not own recording, writing (sim/trace.h) or
 * reading (sim/trace/read.h), nor what a record means to an algorithm
 * (collectives/) or how it is shown (cli/collsim/trace_cmd.c). Included by
 * sim/trace.h and the reader; depends only on window/layout.h.
 *
 * File = header block (4096 bytes: the 1024-byte header, then zeros) +
 * records (80 bytes each), little-endian. Versions 1 and 2 (still read)
 * have a 1024-byte header block.
 *
 * Header:
 *   0   u8[8]  magic "CSTRACE\0"         96   char[64] schedule
 *   8   u32    version (4; 1-3 read)     160  char[16] collsim version
 *   12  u32    header_bytes (4096)       176  cs_layout_t slot table (400 B)
 *   16  u32    record_bytes (80)         576  u64 timeout_ns
 *   20  u32    nranks                    584  u64 start_ns (CLOCK_MONOTONIC)
 *   24  u64    count (elements)          592  u32 header checksum (FNV-1a 32
 *   32  u32    algo (254 user, 255 none)        of the header, this field 0)
 *   36  u32    dtype                     596  u32 fault kind (0 none)
 *   40  u32    op                        600  u32 fault rank
 *   44  u32    fill                      604  u32 modes (0: the defaults)
 *   48  u64    seed                      608  u64 fault event
 *   56  u64    input hash (FNV-1a 64     616  char[256] algo path (algo 254)
 *              of all inputs)
 *   64  u32    tile_bytes                872  u32[4] shape rows, cols, valid
 *   68  u32    iters                            rows, cols (0: no shape)
 *                                          888  u8[32] algo SHA-256 (algo 254;
 *                                                 zero: none recorded)
 *                                          920  u64 end records (at completion)
 *                                          928  u32 end state (0 not kept,
 *                                                 1 open/killed, 2 complete)
 *                                          932  char[88] names (algo 254:
 *                                                 phases, barriers; zero: none)
 *                                          1020 u8[4] reserved, zero
 *   72  u32    memory model (0 sc, 1 fifo, 2 relaxed, 3 a2a3)
 *   76  u32    program (0 allreduce, 1 ping)
 *   80  u32    bug (0 none)
 *   84  u32    rounds (ping) / reserved
 *   88  f64    tick_ns (ns per tick of t_ns; 0: t_ns is ns; v1: 0)
 *
 * Record:
 *   0   u64 seq        global sequence number (causal order)
 *   8   u64 t_ns       ticks (x tick_ns = ns) since start_ns
 *   16  u64 elem_off   first element accessed
 *   24  u64 dma_id     ties a post to its landing (0 in free mode)
 *   32  u32 rank       40  u32 slot       48  u32 valid   56  i32 value
 *   36  u32 peer       44  u32 cell       52  u32 phys    60  i32 observed
 *   64  u16 kind       66  u8 opcmp  67 u8 phase   68 u32 round
 *   72  u32 step       76  u32 checksum (CRC-32C of bytes 0..75)
 */
#ifndef CS_TRACE_FORMAT_H
#define CS_TRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "../../window/layout.h"

#define CS_TRACE_MAGIC "CSTRACE"
#define CS_TRACE_VERSION 4u /* 4: the a2a3 kinds 14-17 and line write-
                               backs; 3 and older have none. 2: 1024-byte
                               header block; 1: also t_ns in ns, no
                               tick_ns. All still read. */
#define CS_TRACE_HEADER_BYTES 4096u /* the header block: header, zeros */
#define CS_TRACE_HEADER_STRUCT 1024u /* the header itself (v1, v2: the block) */
#define CS_TRACE_RECORD_BYTES 80u

/* Record kinds: 1..8 and 14..17 are the device events (cs_ev_kind_t in
 * sim/dev.h, WAIT = wait-end); these are the ones only traces have. */
enum {
  CS_TR_WAIT_BEGIN = 9,  /* a wait starts: value = target */
  CS_TR_DMA_POST = 10,   /* controlled mode: a store/put/notify is posted */
  CS_TR_DMA_LAND = 11,   /* controlled mode: it lands */
  CS_TR_FAULT = 12,      /* a rank died: value = signal or exit status,
                            observed = its event index, step = 1 signal / 2 exit */
  CS_TR_ABORT = 13,      /* the run was aborted: value = CS_ABORT_* reason,
                            rank = first failing rank (UINT32_MAX launcher) */
  CS_TR_NKINDS = 18      /* 14..17: pipe barrier, DDR fence, dcci, cell read */
};

/* The header's memory_model values, by name (cs_mm_t in sim/sched.h has
 * the same numbers); "?" for any other. */
#define CS_TR_NMODELS 4u
static inline const char *cs_tr_model_name(uint32_t m)
{
  switch (m) {
  case 0: return "sc";
  case 1: return "fifo";
  case 2: return "relaxed";
  case 3: return "a2a3";
  default: return "?";
  }
}

/* Header algo of a collective loaded from a shared object (collsim run
 * --algo ./x.so): its path is in algo_path. 255 is no collective (ping). */
#define CS_TRACE_ALGO_USER 254u

/* The header's modes word (a field that was reserved and zero, so every
 * older trace reads as the defaults: self-clearing signals, ieee min/max). */
#define CS_TR_MODE_SINGLE_USE 0x1u      /* --signals single-use */
#define CS_TR_MODE_PADDED_CELLS 0x2u    /* --signal-layout padded */
#define CS_TR_MODE_MINMAX_SHIFT 8u      /* --minmax: cs_minmax_t in bits 8-15 */
#define CS_TR_MODE_MINMAX_MASK 0xff00u
/* A collective of one's own (algo 254) whose one phase is a main phase
 * of chunks (CS_COLL_CHUNK_TAGS): its tags read "main cSTEP". */
#define CS_TR_MODE_CHUNK_TAGS 0x4u
#define CS_TR_MODE_KNOWN (CS_TR_MODE_SINGLE_USE | CS_TR_MODE_PADDED_CELLS | \
                          CS_TR_MODE_MINMAX_MASK)

/* The header's end_state: whether the writer finished the file. A trace
 * whose run was killed, or that is still being written, stays OPEN. */
#define CS_TR_END_UNKNOWN 0u  /* written before the field (or collsim-mpi) */
#define CS_TR_END_OPEN 1u     /* opened, not (yet) completed */
#define CS_TR_END_COMPLETE 2u /* completed with end_records records */

/* The event that failed (out-of-slot fault, wait timeout) is recorded with
 * this bit set in opcmp. */
#define CS_TR_FAILED 0x80u

/* ---- the field maps ----
 *
 * One row per field, in file order:
 *   X(offset, C type, name, array suffix, type as FORMAT.md writes it,
 *     meaning with its unit)
 * The structs are declared from these rows, and every offset, width and
 * the absence of padding is asserted below; FORMAT.md's tables are checked
 * against the same rows by tests/test_format.c. Types in the doc's
 * notation: u8 u16 u32 u64 i32 f64, T[N] (N of T). */

#define CS_TRACE_HEADER_FIELDS(X)                                            \
  X(  0, char,        magic,        [8],   "u8[8]",    "\"CSTRACE\\0\"")         \
  X(  8, uint32_t,    version,      ,      "u32",      "CS_TRACE_VERSION")       \
  X( 12, uint32_t,    header_bytes, ,      "u32",      "4096 (v1, v2: 1024)")    \
  X( 16, uint32_t,    record_bytes, ,      "u32",      "80")                     \
  X( 20, uint32_t,    nranks,       ,      "u32",      "ranks")                  \
  X( 24, uint64_t,    count,        ,      "u64",      "elements per rank")      \
  X( 32, uint32_t,    algo,         ,      "u32",      "cs_algo_t, 255 = none")  \
  X( 36, uint32_t,    dtype,        ,      "u32",      "cs_dtype_t")             \
  X( 40, uint32_t,    op,           ,      "u32",      "cs_op_t")                \
  X( 44, uint32_t,    fill,         ,      "u32",      "cs_fill_t")              \
  X( 48, uint64_t,    seed,         ,      "u64",      "fill seed")              \
  X( 56, uint64_t,    input_hash,   ,      "u64",                                \
    "FNV-1a 64 of all ranks' inputs")                                        \
  X( 64, uint32_t,    tile_bytes,   ,      "u32",      "bytes")                  \
  X( 68, uint32_t,    iters,        ,      "u32",      "calls")                  \
  X( 72, uint32_t,    memory_model, ,      "u32",      "0 sc, 1 fifo, 2 relaxed, 3 a2a3")\
  X( 76, uint32_t,    program,      ,      "u32",      "0 allreduce, 1 ping")    \
  X( 80, uint32_t,    bug,          ,      "u32",      "mutation id, 0 none")    \
  X( 84, uint32_t,    rounds,       ,      "u32",      "ping rounds, else 0")    \
  X( 88, double,      tick_ns,      ,      "f64",                                \
    "ns per tick of the records' t_ns; 0: t_ns is ns")                       \
  X( 96, char,        schedule,     [64],  "char[64]",                           \
    "\"free\", \"random:SEED\", ... NUL-terminated")                         \
  X(160, char,        version_str,  [16],  "char[16]",                           \
    "collsim version, NUL-terminated")                                       \
  X(176, cs_layout_t, layout,       ,      "u8[400]",  "slot table")             \
  X(576, uint64_t,    timeout_ns,   ,      "u64",      "wait timeout, ns")       \
  X(584, uint64_t,    start_ns,     ,      "u64",                                \
    "CLOCK_MONOTONIC at the start, ns")                                      \
  X(592, uint32_t,    checksum,     ,      "u32",                                \
    "FNV-1a 32 of the header with this field 0")                             \
  X(596, uint32_t,    fault_kind,   ,      "u32",                                \
    "injected fault (cs_fault_kind_t), 0 none")                              \
  X(600, uint32_t,    fault_rank,   ,      "u32",      "its rank")               \
  X(604, uint32_t,    modes,        ,      "u32",                                \
    "fidelity modes: bit 0 single-use signals, bit 1 padded signal cells, bits 8-15 --minmax; 0 default")\
  X(608, uint64_t,    fault_event,  ,      "u64",      "its event index")        \
  X(616, char,        algo_path,    [256], "char[256]",                          \
    "algo 254: the collective's shared object, NUL-terminated")             \
  X(872, uint32_t,    shape_rows,   ,      "u32",                                \
    "--shape ROWS (docs/algorithms.md §3.3), 0 none")                         \
  X(876, uint32_t,    shape_cols,   ,      "u32",      "--shape COLS, 0 none")   \
  X(880, uint32_t,    valid_rows,   ,      "u32",      "--valid R, 0 none")      \
  X(884, uint32_t,    valid_cols,   ,      "u32",      "--valid C, 0 none")      \
  X(888, uint8_t,     algo_sha256,  [32],  "u8[32]",                             \
    "algo 254: SHA-256 of the shared object; all zero: none recorded")       \
  X(920, uint64_t,    end_records,  ,      "u64",                                \
    "records when the writer completed the file; 0 otherwise")               \
  X(928, uint32_t,    end_state,    ,      "u32",                                \
    "0 not kept (older writers), 1 being written or never completed, 2 complete")\
  X(932, char,        names,        [88],  "char[88]",                           \
    "algo 254: the collective's phase and barrier names; all zero: none")   \
  X(1020, uint8_t,    reserved,     [4],   "u8[4]",    "zero")

/* t_ns on disk: ticks since the start (x tick_ns = ns); as the reader
 * returns it (sim/trace/read.h, cs_trace_load): ns since start_ns. */
#define CS_TRACE_REC_FIELDS(X)                                               \
  X( 0, uint64_t, seq,      , "u64", "global sequence number")                   \
  X( 8, uint64_t, t_ns,     , "u64", "ticks since the start (x tick_ns = ns)")   \
  X(16, uint64_t, elem_off, , "u64", "first element")                            \
  X(24, uint64_t, dma_id,   , "u64", "0 in free mode")                           \
  X(32, uint32_t, rank,     , "u32", "acting rank")                              \
  X(36, uint32_t, peer,     , "u32", "peer rank (own rank for local)")           \
  X(40, uint32_t, slot,     , "u32", "slot index")                               \
  X(44, uint32_t, cell,     , "u32",                                             \
    "signal cell (notify/wait); phase for marks; 2-D load/store: rows")       \
  X(48, uint32_t, valid,    , "u32", "logical elements")                         \
  X(52, uint32_t, phys,     , "u32", "physical elements")                        \
  X(56, int32_t,  value,    , "i32",                                             \
    "notify value, wait target, mark step; 2-D load/store: row stride")       \
  X(60, int32_t,  observed, , "i32", "wait: value seen; notify: cell after the add")\
  X(64, uint16_t, kind,     , "u16", "cs_ev_kind_t or CS_TR_*")                  \
  X(66, uint8_t,  opcmp,    , "u8",                                              \
    "notify op / wait cmp / reduce op; | CS_TR_FAILED")                      \
  X(67, uint8_t,  phase,    , "u8",  "0 none, 1 main/RS, 2 AG")                  \
  X(68, uint32_t, round,    , "u32", "RS/AG round or chunk")                     \
  X(72, uint32_t, step,     , "u32", "subchunk")                                 \
  X(76, uint32_t, checksum, , "u32", "CRC-32C (Castagnoli) of bytes [0, 76)")

/* The slot table inside the header (cs_layout_t, window/layout.h), at its
 * offsets in the header: X(offset, member, doc type). */
#define CS_TRACE_LAYOUT_FIELDS(X)                                            \
  X(176, nslots,    "u32")                                                   \
  X(180, align,     "u32")                                                   \
  X(184, win_bytes, "u64")                                                   \
  X(192, slot[0],   "48 B")                                                  \
  X(240, slot[1],   "48 B")                                                  \
  X(288, slot[2],   "48 B")                                                  \
  X(336, slot[3],   "48 B")                                                  \
  X(384, slot[4],   "48 B")                                                  \
  X(432, slot[5],   "48 B")                                                  \
  X(480, slot[6],   "48 B")                                                  \
  X(528, slot[7],   "48 B")

/* One slot entry (cs_slot_t): X(offset in the entry, member, doc type). */
#define CS_TRACE_SLOT_FIELDS(X)                                              \
  X( 0, name,     "char[16]")                                                \
  X(16, off,      "u64")                                                     \
  X(24, nbytes,   "u64")                                                     \
  X(32, alloc,    "u64")                                                     \
  X(40, esize,    "u32")                                                     \
  X(44, cell_bytes, "u32")

#define CS__TRACE_MEMBER(off, ctype, name, dim, type, meaning) ctype name dim;

typedef struct cs_trace_header {
  CS_TRACE_HEADER_FIELDS(CS__TRACE_MEMBER)
} cs_trace_header_t;

typedef struct cs_trace_rec {
  CS_TRACE_REC_FIELDS(CS__TRACE_MEMBER)
} cs_trace_rec_t;

/* Every field at its offset, and the widths adding up to the size: no
 * padding anywhere. */
#define CS__TRACE_WIDTH(off, ctype, name, dim, type, meaning) + sizeof(ctype dim)
#define CS__TRACE_HEADER_AT(off, ctype, name, dim, type, meaning)            \
  _Static_assert(offsetof(cs_trace_header_t, name) == (off),                 \
                 "cs_trace_header_t." #name " at " #off);
#define CS__TRACE_REC_AT(off, ctype, name, dim, type, meaning)               \
  _Static_assert(offsetof(cs_trace_rec_t, name) == (off),                    \
                 "cs_trace_rec_t." #name " at " #off);
#define CS__TRACE_LAYOUT_AT(off, member, type)                               \
  _Static_assert(offsetof(cs_trace_header_t, layout.member) == (off),        \
                 "cs_trace_header_t.layout." #member " at " #off);
#define CS__TRACE_SLOT_AT(off, member, type)                                 \
  _Static_assert(offsetof(cs_slot_t, member) == (off),                       \
                 "cs_slot_t." #member " at " #off);
#define CS__TRACE_SLOT_WIDTH(off, member, type)                              \
  + sizeof(((cs_slot_t *)0)->member)

CS_TRACE_HEADER_FIELDS(CS__TRACE_HEADER_AT)
CS_TRACE_REC_FIELDS(CS__TRACE_REC_AT)
CS_TRACE_LAYOUT_FIELDS(CS__TRACE_LAYOUT_AT)
CS_TRACE_SLOT_FIELDS(CS__TRACE_SLOT_AT)
_Static_assert(0 CS_TRACE_HEADER_FIELDS(CS__TRACE_WIDTH) == CS_TRACE_HEADER_STRUCT &&
               sizeof(cs_trace_header_t) == CS_TRACE_HEADER_STRUCT,
               "cs_trace_header_t: 1024 bytes, no padding");
_Static_assert(0 CS_TRACE_REC_FIELDS(CS__TRACE_WIDTH) == CS_TRACE_RECORD_BYTES &&
               sizeof(cs_trace_rec_t) == CS_TRACE_RECORD_BYTES,
               "cs_trace_rec_t: 80 bytes, no padding");
_Static_assert(0 CS_TRACE_SLOT_FIELDS(CS__TRACE_SLOT_WIDTH) == sizeof(cs_slot_t),
               "cs_slot_t: no padding");
_Static_assert(sizeof(cs_layout_t) == 400 && CS_MAX_SLOTS == 8,
               "the slot table is 400 bytes: 16 + 8 entries of 48");

/* Whether a trace of n records is partial: its writer never completed it
 * (killed, or still writing), or it completed it with another number of
 * records (cut or appended to since). An older trace (UNKNOWN) is not
 * known to be partial. Pure. */
static inline int cs_trace_is_partial(const cs_trace_header_t *h, uint64_t n)
{
  return h->end_state == CS_TR_END_OPEN || h->end_state > CS_TR_END_COMPLETE ||
         (h->end_state == CS_TR_END_COMPLETE && h->end_records != n);
}

/* Whether record x is a 2-D data access (FORMAT.md, "2-D accesses"): a
 * load (1), store (2) or put (3), or the dma-land of a store or put, with
 * cell = rows >= 1 and value = the row stride. Pure. */
static inline int cs_trace_rec_is_2d(const cs_trace_rec_t *x)
{
  uint32_t k = x->kind == CS_TR_DMA_LAND ? x->round : x->kind;
  return x->cell != 0 && k >= 1 && k <= 3;
}

/* The most rows of a 2-D record (include/collsim/device.h's
 * CS_RECT_MAX_ROWS: the core writes no more). */
#define CS_TRACE_MAX_ROWS (1u << 20)

/* A 2-D record as the core writes one: 1..CS_TRACE_MAX_ROWS rows (cell)
 * that divide valid into columns >= 1, a stride (value) >= the columns,
 * and a last row that ends below 2^64. The reader refuses any other.
 * Pure. */
static inline int cs_trace_rec_2d_ok(const cs_trace_rec_t *x)
{
  uint32_t cols = x->valid / x->cell;
  if (x->cell > CS_TRACE_MAX_ROWS || cols < 1 || x->valid % x->cell != 0 ||
      x->value < 0 || (uint32_t)x->value < cols)
    return 0;
  uint64_t span = (uint64_t)(x->cell - 1) * (uint32_t)x->value + cols;
  return x->elem_off <= UINT64_MAX - span;
}

/* One past the last element a data record touches: elem_off + phys (1-D
 * load), elem_off + valid (1-D store, put, landing), the last row's end
 * for a 2-D one. Pure. */
static inline uint64_t cs_trace_rec_end(const cs_trace_rec_t *x)
{
  if (cs_trace_rec_is_2d(x))
    return x->elem_off + (uint64_t)(x->cell - 1) * (uint32_t)x->value +
           x->valid / x->cell;
  return x->elem_off + (x->kind == 1 ? x->phys : x->valid);
}

/* The format's checksums and names (checksum.c): FNV-1a 32 of a header
 * (with its checksum field 0) and FNV-1a 64 of the inputs; a record's
 * CRC-32C of its bytes [0, 76); the name of a record kind ("load", ...,
 * "abort"; "?" for an unknown one). Pure. */
uint32_t cs_trace_fnv32(const void *p, size_t n);
uint32_t cs_trace_rec_sum(const cs_trace_rec_t *x);
uint64_t cs_trace_fnv64(const void *p, size_t n);
/* FNV-1a 64 continued from h over n more bytes: fnv64 of a || b is
 * more(more(CS_TRACE_FNV64_INIT, a), b). */
#define CS_TRACE_FNV64_INIT 14695981039346656037ull
uint64_t cs_trace_fnv64_more(uint64_t h, const void *p, size_t n);
const char *cs_trace_kind_name(uint32_t kind);

#endif
