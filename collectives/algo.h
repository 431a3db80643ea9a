/*
 * algo.h - the built-in allreduce algorithms' ids, and the descriptor
 * every algorithm fills in its own file (mesh.c, ring.c, host.c): the one
 * place that holds an algorithm's facts. Types only; the lookup is
 * registry.h's. Everything
 * above the algorithms (the run and its summary, bench, trace --stats,
 * the oracle's fold order, the check's and story's wording) asks the
 * descriptor and never switches on an algorithm's id.
 *
 * Adding an algorithm: its file (body and descriptor), one line in
 * algos.def (the ids below and registry.c's table are made from it), its
 * test, its section in docs/algorithms.md. The ids are stable: a trace
 * header stores them.
 *
 * Owns the ids and the descriptor's shape; owns no algorithm. The
 * registrations through the public collective API are builtin.c's.
 */
#ifndef CS_ALGO_H
#define CS_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../window/cs_error.h"

typedef enum cs_algo {
#define CS_ALGO(id, NAME, sym) CS_ALGO_##NAME = id,
#include "algos.def"
#undef CS_ALGO
  CS_NALGOS
} cs_algo_t;

/* The algorithm a command runs when none is named. */
#define CS_DEFAULT_ALGO CS_ALGO_RING

struct cs_ar_cfg;
struct cs_ar_tiles;
struct cs_ar_sigbad;
struct cs_knobs;
struct cs_dev;

/* The order in which a rank folds the inputs (the oracle's input):
 * the ring's, identical on every rank (segment k: x[k+1] op ... op x[k]),
 * on the ring's segments (docs/algorithms.md §4.2) or on N equal chunks
 * (count a multiple of N);
 * the own value first, then the peers ascending (one order per rank); or
 * the owner's: the data cut into N equal chunks (count a multiple of N),
 * chunk q folded as rank q folds its own value (x[q] first, then the
 * others ascending), identical on every rank; or two rings on N equal
 * chunks (count a multiple of 2N): each chunk's first half in the ring's
 * order, its second half in the mirrored one (x[q] op (x[q+1] op (... op
 * x[q-1]))), identical on every rank. */
typedef enum cs_fold {
  CS_FOLD_RING = 0,
  CS_FOLD_OWN_FIRST = 1,
  CS_FOLD_OWNER_FIRST = 2,
  CS_FOLD_RING_EQUAL = 3,
  CS_FOLD_RING_BIDIR = 4,
} cs_fold_t;

/* Expected remote bytes of one rank over a run. */
typedef struct cs_algo_volume {
  double      formula; /* the textbook figure, may be fractional */
  uint64_t    exact;   /* from the algorithm's own geometry */
  const char *what;    /* the formula's name: "2(N-1)/N*S" */
} cs_algo_volume_t;

/* Notifies per rank of one call without a defect, and the epilogue's. */
typedef struct cs_algo_notifies {
  uint64_t    per_call; /* the algorithm's barriers */
  uint64_t    epilogue; /* the self-clearing epilogue's */
  const char *what;     /* the formula: "4K(N-1)^2 + 2(N-1)^2 epilogue" */
} cs_algo_notifies_t;

typedef struct cs_algo_desc {
  const char *name;  /* --algo NAME */
  const char *what;  /* one line: "InCore ring allreduce of PyPTO PR #2161" */
  uint32_t max_ranks;       /* the most ranks it accepts */
  const char *limit_who;    /* whose limit it is when not the ABI's 64
                               ("the host builtin"), else NULL */
  bool rect;                /* takes the partial-valid rectangle (§3.3) */
  bool out_slot;            /* the result goes to slot "out" of the own
                               window (CS_AR_SLOT_OUT), not back into
                               "data": the harness reads it from there */
  /* NULL, or whether c meets the algorithm's own precondition beyond the
   * ranks and the rectangle (cs_ar_check: CS_EARPRECOND), and the
   * precondition as users read it ("a count that is a multiple of the
   * rank count"). */
  bool (*meets)(const struct cs_ar_cfg *c);
  const char *precondition;
  /* 0 (every one), or the dtypes (bit 1 << cs_dtype_t) and the ops (bit
   * 1 << cs_op_t) it accepts: cs_ar_check refuses others by name
   * (CS_EARDTYPE, CS_EAROP) before asking `meets`, which must refuse
   * them too (bench and --algo all skip what `meets` refuses). */
  uint32_t dtypes, ops;
  bool half_fill_pto;       /* the reference's tests fill fp16/bf16 inputs
                               with the pto fill (prod always does) */

  /* One call on the data in the own window's data slot, with knobs k,
   * ending with the epilogue; `bad` as for cs__ar_epilogue (barrier.h). */
  void (*body)(struct cs_dev *d, const struct cs_ar_cfg *c,
               const struct cs_knobs *k, struct cs_ar_tiles *t,
               struct cs_ar_sigbad *bad);

  /* Signal cells of the window's signal slot (row-major, row * N + src). */
  uint64_t (*signal_cells)(const struct cs_ar_cfg *c);
  /* Value every signalled cell reaches by the end of one call. */
  int32_t (*signal_final)(const struct cs_ar_cfg *c);
  /* NULL (every non-self cell is signalled), or whether `rank`'s own
   * `cell` is one no peer signals (it stays 0; self cells always are). */
  bool (*signal_silent)(const struct cs_ar_cfg *c, uint32_t rank,
                        uint64_t cell);
  /* That value's formula as users read it: "1+C", "2K per row". */
  const char *final_text;
  /* NULL, or which cells reach it when not every non-self one:
   * "every neighbour cell". */
  const char *signalled;
  /* The place in the algorithm of a wait on non-self `cell` for `target`
   * (>= 1) by `rank`, into buf: "READY barrier of RS t1 j0, rank 2's
   * notify". Pure: from the configuration, its knobs and the wait. */
  void (*wait_where)(const struct cs_ar_cfg *c, const struct cs_knobs *k,
                     uint32_t rank, uint32_t cell, int32_t target,
                     char *buf, size_t n);

  /* The names of the phases the body marks (cs_mark phase 1..nphases),
   * as traces tag its events ("RS t1 j0"); none: "main c3". */
  const char *const *phases;
  uint32_t nphases;
  /* The names of its barriers as docs/algorithms.md calls them, which
   * `collsim check`'s fix and shrink's story use ("the READY barrier of
   * RS t1 j0"): the one that orders a rank's write before another rank's
   * load of it, and the one that orders loads before the owner
   * overwrites what they read; NULL: none of that kind, or more than one
   * (the story then says "a read-complete barrier"). */
  const char *ready_barrier;
  const char *read_done_barrier;

  cs_fold_t   fold;      /* the oracle's fold order */
  const char *fold_text; /* how the summary names it */

  /* trace --stats: notifies per rank (single: no epilogue), and rank r's
   * remote bytes over c->iters calls of esize-byte elements. */
  void (*notifies)(const struct cs_ar_cfg *c, int single, cs_algo_notifies_t *s);
  void (*volume)(const struct cs_ar_cfg *c, uint32_t r, uint32_t esize,
                 cs_algo_volume_t *v);
  /* NULL, or (an algorithm whose ranks move different amounts by segment)
   * the bytes of all ranks together with its formula's name, and the
   * elements of segment k. */
  uint64_t (*total_volume)(const struct cs_ar_cfg *c, uint32_t esize,
                           const char **what);
  uint64_t (*segment_len)(const struct cs_ar_cfg *c, uint64_t k, uint32_t esize);

  /* What teach draws and explains: the window cut into parts, either a
   * pull ring's segments, which travel from each rank to its right
   * neighbour round by round, or chunks that every rank folds at once. */
  bool teach;       /* teach draws and explains it */
  bool pull_ring;   /* every rank reads only from its left neighbour */
  bool push;        /* its transfers are puts into other ranks' windows
                       (no remote load): trace --stats counts them */
  char part_letter; /* 's' (segment) or 'c' (chunk) */
  uint64_t (*parts)(const struct cs_ar_cfg *c);
  /* where part i begins, i in 0..parts (parts: the end, count) */
  uint64_t (*part_lo)(const struct cs_ar_cfg *c, uint64_t i);
  const char *legend; /* one line: how its tags and folds read */
} cs_algo_desc_t;

#endif
