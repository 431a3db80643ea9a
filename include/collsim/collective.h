/*
 * collsim/collective.h - a collective of your own: the registration a
 * shared object exports for `collsim run --algo ./mine.so`, and the entry
 * points that load one and run it.
 *
 * A collective is a struct cs_collective (below) that says what windows
 * it needs (its slots), which slot holds each rank's input when a call
 * starts and which holds its result when the call returns, which slot
 * holds its signal cells and what every cell must hold when the run ends,
 * the body every rank runs, and optionally the result every rank must
 * end with. collsim does the rest, for the built-ins and for yours alike:
 * the world of forked ranks over shared memory, the inputs, staging them
 * in and out through the device API, free or controlled schedules, memory
 * models, faults, traces, replay, the happens-before checker, explore.
 *
 * A shared object exports it under the name CS_COLLECTIVE_SYMBOL:
 *
 *   #include <collsim/collsim.h>
 *   const cs_collective_t collsim_collective = {
 *       .abi = CS_COLLECTIVE_ABI, .size = sizeof(cs_collective_t),
 *       .name = "mine", ...};
 *
 * Every function of the struct may be called in the launcher or in any
 * rank's process, any number of times, and must be pure (the same answer
 * for the same configuration) except `body`. None may keep a pointer it
 * was passed after it returns.
 */
#ifndef COLLSIM_COLLECTIVE_H
#define COLLSIM_COLLECTIVE_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of struct cs_collective this header describes; a loader
 * refuses a shared object built against another. */
#define CS_COLLECTIVE_ABI 1u
/* The symbol collsim looks up in a shared object. */
#define CS_COLLECTIVE_SYMBOL "collsim_collective"

#define CS_COLL_MAX_SLOTS 8u   /* slots per window */
#define CS_COLL_NAMELEN   16u  /* a slot name's bytes, NUL included */
#define CS_COLL_MAX_RANKS 64u  /* ranks a run may have */

/* One run's configuration, as the user gave it (collsim run --ranks,
 * --count, ...), the same for every rank and every call. */
typedef struct cs_coll_cfg {
  uint32_t   nranks;     /* 1..CS_COLL_MAX_RANKS */
  uint64_t   count;      /* elements of each rank's input, >= 1 */
  cs_dtype_t dtype;      /* of the input and the result */
  cs_op_t    op;         /* the reduction op, for collectives that reduce */
  uint32_t   tile_bytes; /* a tile size the user asked for (default 16384) */
  uint32_t   iters;      /* calls of the body on one world, >= 1 */
  /* ---- set by collsim for a registration that asks for it (flags);
   * 0 otherwise. cs_coll_check and cs_coll_run read only the fields
   * above: a program built before these passes a shorter struct ---- */
  cs_minmax_t minmax;    /* --minmax, with CS_COLL_MINMAX (ieee: 0) */
  /* --shape ROWSxCOLS and --valid R,C, with CS_COLL_SHAPE: each rank's
   * input is a row-major [shape_rows, shape_cols] matrix (their product
   * is count) of which the top-left [valid_rows, valid_cols] rectangle is
   * valid (1 <= valid_rows <= shape_rows, likewise the columns; --shape
   * alone: the whole matrix). All 0 without --shape. */
  uint32_t shape_rows, shape_cols, valid_rows, valid_cols;
} cs_coll_cfg_t;

/* One slot of the window: `nbytes` logical bytes of `esize`-byte elements
 * (2 or 4; signal slots 4). collsim rounds every slot to 32 bytes and
 * zero-fills all windows before the first call. */
typedef struct cs_coll_slot {
  char     name[CS_COLL_NAMELEN]; /* shown by traces; NUL-terminated */
  uint64_t nbytes;
  uint32_t esize;
} cs_coll_slot_t;

typedef struct cs_collective {
  uint32_t    abi;  /* CS_COLLECTIVE_ABI */
  uint32_t    size; /* sizeof(cs_collective_t) */
  const char *name; /* short, shown in summaries: "rd-allreduce" (at most
                       64 bytes, no control character) */
  const char *what; /* one line: what it computes, or NULL (at most 256
                       bytes, no control character) */

  /* NULL when every configuration is accepted; else a sentence saying
   * why `c` is not ("recursive doubling needs a power-of-two rank
   * count"), which collsim prints after the value (exit 2). */
  const char *(*refuse)(const cs_coll_cfg_t *c);

  /* Fills s[0..n) with the window's slots in order and returns n
   * (1..CS_COLL_MAX_SLOTS), or a negative errno. Slot i is the index the
   * device calls take. */
  int (*slots)(const cs_coll_cfg_t *c, cs_coll_slot_t *s);
  uint32_t in_slot;     /* collsim stores the rank's `count` input
                           elements at element 0 of it before each call */
  uint32_t out_slot;    /* ... and reads the result from element 0 of it
                           after each call */
  /* Elements of the result per rank (NULL: count, as an allreduce). */
  uint64_t (*out_count)(const cs_coll_cfg_t *c);
  uint32_t signal_slot; /* the slot of int32 signal cells collsim checks
                           at the end (CS_COLL_NO_SIGNALS: none) */
  /* What cell `cell` of rank `rank`'s signal slot must hold when the run
   * ends (NULL: 0 everywhere, the value a self-clearing collective
   * leaves). */
  int32_t (*signal_final)(const cs_coll_cfg_t *c, uint32_t rank,
                          uint64_t cell);

  /* One call of the collective on rank cs_dev_rank(d): the input is in
   * in_slot of the own window; when it returns, out_slot must hold the
   * result. Touches windows only through the device API; may allocate
   * tiles (and must free them). Returns 0, or cs_dev_error(d, -errno) to
   * give up (the run then fails with that cause). */
  int (*body)(cs_dev_t *d, const cs_coll_cfg_t *c);

  /* The result rank `rank` must end with, into `out` (out_count
   * elements), from `in` (nranks rows of count elements, row r rank r's
   * input). NULL: collsim cannot verify, and says so in the summary.
   * Compared bit for bit (any NaN matches any NaN). Runs in the launcher,
   * not as a rank: plain memory, no device calls. */
  void (*expect)(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                 void *out);

  /* ---- names (optional; a registration built against an older header
   * ends before them, its `size` says so, and they read as NULL) ---- */

  /* The names of the phases the body marks: phases[p - 1] is phase p of
   * cs_mark(d, p, round), p = 1..nphases. Traces, `collsim check` and
   * the stories of `collsim shrink` then tag events "NAME tROUND jSTEP"
   * (as the built-in ring's "RS t1 j0"); a phase without a name reads
   * "P3 t1 j0". NULL, 0: none. */
  const char *const *phases;
  uint32_t nphases;
  /* The names of its two kinds of barrier, which stories use for the
   * barrier they find missing ("Missing: the READY barrier of gather t1
   * j0: ..."): the one that orders a rank's write before another rank's
   * load of it (store, fence, notify, wait, load), and the one that
   * orders a rank's loads before the owner overwrites what they read
   * (load, notify, wait, store). NULL: unnamed (the story says "a
   * read-complete barrier"). */
  const char *ready_barrier;
  const char *read_done_barrier;
  /* Every name is 1 to CS_COLL_NAMELEN - 1 characters '!'..'~', recorded
   * in the trace header, where all of them together take at most
   * CS_COLL_NAMES_BYTES bytes: each name and its NUL, plus one NUL after
   * the phases. cs_coll_open refuses a registration whose names do not
   * fit or are not such names. */

  /* ---- how collsim runs it (optional; absent in a registration built
   * before it, which reads as 0) ---- */

  /* CS_COLL_* bits below, 0 for the default of each. */
  uint32_t flags;

  /* ---- what `collsim teach` draws and explains (optional; absent in a
   * registration built before them, which reads as 0 and NULL: teach
   * then shows its slots as they are, and the bytes it loaded) ---- */

  /* 's' (segments) or 'c' (chunks): teach cuts out_slot into `parts`
   * parts named "s0", "s1", ... and tracks, from the recorded loads,
   * folds and stores, whose inputs each part of every rank holds
   * ("s2=[3+0]"), as it does the built-ins'. 0: none (and the fields
   * below are not read). With a letter, parts and part_lo are required. */
  char part_letter;
  /* CS_COLL_TEACH_* bits below. */
  uint32_t teach_flags;
  /* The parts (1 .. 64; teach draws at most 16), and where part i
   * begins (the element of out_slot; i in 0..parts, nondecreasing, part
   * `parts` begins at count). */
  uint64_t (*parts)(const cs_coll_cfg_t *c);
  uint64_t (*part_lo)(const cs_coll_cfg_t *c, uint64_t i);
  /* One line, how its tags and folds read ("RS t1 j0: reduce-scatter
   * round 1, subchunk 0; [2+3]: r2 op r3"), or NULL (at most 160 bytes,
   * no control character). */
  const char *legend;
  /* NULL, or the bytes one rank moves to or from other ranks in one
   * call as the textbook figure (may be fractional), and that figure's
   * formula into *what ("2(N-1)/N*S"): teach prints the bytes each rank
   * moved against it. */
  double (*volume)(const cs_coll_cfg_t *c, const char **what);
  /* NULL, or where in the algorithm rank `rank`'s wait on cell `cell` of
   * its signal slot for a value >= `target` is, into buf (n bytes):
   * "READY barrier of RS t1 j0, rank 2's notify" (the barrier's name, a
   * tag as the trace gives it, then the notifying rank's). Teach's
   * status line says it while that rank waits. */
  void (*wait_where)(const cs_coll_cfg_t *c, uint32_t rank, uint64_t cell,
                     int32_t target, char *buf, size_t n);
} cs_collective_t;

/* Teach flags. Every rank loads only from its left neighbour (rank - 1),
 * round by round: teach draws the ring and the segment each read moves,
 * and its signal rows as the rounds' (the ring's); teach --plain prints
 * the ring's lesson when its parts are one per rank (refused else). */
#define CS_COLL_TEACH_PULL_RING 0x1u
/* Its transfers are puts into other ranks' windows, not loads. */
#define CS_COLL_TEACH_PUSH 0x2u
/* Where the rank's own copy is folded into a part it received, its own
 * is the first operand ("[0+3]" for rank 0's fold of rank 3's). */
#define CS_COLL_TEACH_OWN_FIRST 0x4u
#define CS_COLL_TEACH_FLAGS (CS_COLL_TEACH_PULL_RING | CS_COLL_TEACH_PUSH | \
                             CS_COLL_TEACH_OWN_FIRST)

/* collsim stores the input into in_slot and then starts the body at
 * once, without its fence in between: the body's first accesses may find
 * stores of the stage-in still posted (fifo, relaxed, a2a3), and must
 * order them itself, as collsim's built-in allreduces do (their first
 * barrier fences before it notifies). Without this bit collsim fences
 * after the stage-in (one `fence` event per call in the trace). */
#define CS_COLL_NO_STAGE_FENCE 0x1u
/* The collective honours cfg->minmax (its max and min through
 * cs_tile_reduce_mm and cs_reduce_kernel_mm in that mode): collsim run,
 * bench, explore and verify then take --minmax M for it and set
 * cfg->minmax. Without this bit they refuse --minmax with it, and
 * cfg->minmax is CS_MINMAX_IEEE. */
#define CS_COLL_MINMAX 0x2u
/* The collective takes a 2-D shape and its valid rectangle (cfg's
 * shape_rows .. valid_cols): collsim run, explore and verify then take
 * --shape and --valid for it (and record them in the trace, for replay
 * and shrink). Without this bit they refuse --shape with it, and the
 * four fields are 0. What it does with the elements outside the
 * rectangle is its own (its expect says so). */
#define CS_COLL_SHAPE 0x4u
/* Its body marks one phase, cs_mark(d, 1, 0), and sets a chunk number
 * as the step (cs_dev_set_step): traces, `collsim check` and stories tag
 * its events "main cSTEP", as they tag the built-in mesh's and host's,
 * instead of "P1 t0 jSTEP". A phase it names (phases) is tagged by its
 * name instead. Recorded in the trace (traces/FORMAT.md, modes). */
#define CS_COLL_CHUNK_TAGS 0x8u
/* Every bit this header knows; cs_coll_open refuses others. */
#define CS_COLL_FLAGS (CS_COLL_NO_STAGE_FENCE | CS_COLL_MINMAX | \
                       CS_COLL_SHAPE | CS_COLL_CHUNK_TAGS)

/* Bytes the trace keeps for a collective's names (traces/FORMAT.md). */
#define CS_COLL_NAMES_BYTES 88u
/* The size of a registration built before the names existed: collsim
 * accepts any `size` from this one up to sizeof(cs_collective_t). */
#define CS_COLLECTIVE_SIZE_1 offsetof(cs_collective_t, phases)
/* ... and of one built before `flags`. */
#define CS_COLLECTIVE_SIZE_2 offsetof(cs_collective_t, flags)
/* ... and of one built before the teach facts (part_letter ...). */
#define CS_COLLECTIVE_SIZE_3 offsetof(cs_collective_t, part_letter)

#define CS_COLL_NO_SIGNALS UINT32_MAX

/* ---- loading a collective ---- */

/* Opens the shared object `path` (dlopen; a name without '/' is looked up
 * as dlopen does) and finds its CS_COLLECTIVE_SYMBOL. Returns 0 with *c
 * and *handle set, or a negative code with one line in why (n bytes) that
 * names the path and what is wrong: -ENOENT the file cannot be opened,
 * -ENOEXEC it is not a loadable shared object, -ESRCH no such symbol,
 * -EPROTO an ABI version or size this collsim does not accept, -EINVAL a
 * required field missing (name, slots, body) or a slot index past its
 * slots; on failure nothing stays loaded. */
int cs_coll_open(const char *path, const cs_collective_t **c, void **handle,
                 char *why, size_t n);
/* Unloads what cs_coll_open loaded (NULL allowed); *c is invalid after. */
void cs_coll_close(void *handle);

/* collsim's own allreduce `name` (any that `collsim run --algo` takes by
 * name: "mesh", "ring", "host", "ring-push", ...) as a registration,
 * verified against collsim's oracle (each algorithm's own fold order, bit
 * for bit) and self-clearing; NULL for another name. It carries the
 * algorithm's phase and barrier names, and cs_coll_run records the same
 * events as `collsim run --algo NAME` would under the same schedule,
 * memory model and inputs (cs_coll_run's fill, below: `collsim run
 * --fill arange` for fp32, `pto` otherwise), in a trace that names the
 * algorithm as that run's does
 * (so `collsim replay`, `check` and `shrink` take it). It takes no
 * --minmax or shape (no CS_COLL_MINMAX, CS_COLL_SHAPE). Static storage:
 * nothing to close. */
const cs_collective_t *cs_coll_builtin(const char *name);

/* Checks `cfg` against the limits of every run (ranks, count, tile
 * bytes, iters), then against c->refuse and c->slots. Returns 0, or -EINVAL
 * with one line in why that names the value and what is accepted. */
int cs_coll_check(const cs_collective_t *c, const cs_coll_cfg_t *cfg,
                  char *why, size_t n);

/* ---- running a collective ---- */

/* How cs_coll_run runs it. Zero is the default of each field. */
typedef struct cs_coll_run_opts {
  const char *schedule;  /* NULL or "free": free mode; "random:SEED",
                            "pct:SEED:DEPTH[:STEPS]", "latest" */
  const char *memory_model; /* NULL "sc", "fifo", "relaxed", "a2a3"
                               (needs a schedule) */
  const char *trace;     /* a trace file to write (replaced), or NULL;
                            it names the memory model, and a collective
                            cs_coll_open loaded afresh from a path with a
                            '/' by its real path and SHA-256, so collsim
                            replay, check and shrink take it */
  double      timeout_s; /* a wait's timeout, 0: collsim's default */
} cs_coll_run_opts_t;

/* What one run found. */
typedef struct cs_coll_result {
  int      launched;     /* 1: every rank ran to the end */
  int      verified;     /* 1: c->expect was there and was compared */
  uint64_t wrong;        /* result elements, over all ranks, that differ */
  int64_t  bad_rank;     /* the first of them (-1 none) */
  uint64_t bad_index;    /*   and its element index */
  uint64_t signals_bad;  /* signal cells not at their final value */
  uint64_t median_ns;    /* per call, the slowest rank's, median of iters */
  char     why[512];     /* when not launched: one line saying why */
} cs_coll_result_t;

/* Runs `c` with `cfg` on cfg->nranks forked rank processes over POSIX
 * shared memory, then verifies it. The inputs are those of `collsim run`'s
 * default fill: rank r's element i is 100*r + i for fp32 sum, max and min,
 * 1 + 0.125*r + 0.0625*(i mod 5) otherwise (exact in every dtype for small
 * counts). Blocks until every rank has ended; forks, so call it from a
 * process that may (no other thread holding locks the ranks need).
 * Returns 0 when it ran and every check passed; 1 when it ran and a check
 * failed (r->wrong, r->signals_bad, or calls that disagreed); -EINVAL when
 * cfg or o is refused, -ECANCELED when a rank failed, timed out or the
 * ranks deadlocked, another negative errno when the world could not be
 * made; r->why holds one line for every negative return (the launcher
 * has also printed its report of a failed run to stderr). Prints nothing
 * else. Nothing is left behind: no process, no shared memory, no file but
 * the trace. */
int cs_coll_run(const cs_collective_t *c, const cs_coll_cfg_t *cfg,
                const cs_coll_run_opts_t *o, cs_coll_result_t *r);

#ifdef __cplusplus
}
#endif

#endif
