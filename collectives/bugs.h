/*
 * bugs.h - named defects (--bug NAME) the algorithms can be run with: the
 * known ordering bugs of PyPTO's allreduce history (docs/algorithms.md
 * §8), as the regression corpus for controlled runs, replay and teaching.
 * Each entry says what it breaks, which item of §8 it is, and the schedule
 * and memory model under which it fails deterministically (its recipe, also
 * used for traces/bugs/ and the tests).
 *
 * A defect is a departure from the reference algorithm (cs_mutation_t, one
 * per table row). The algorithms never test a bug's name: cs_bug_knobs()
 * turns the row into named knobs once per call configuration (cs_knobs_t),
 * and the bodies read those (`if (k->ready_barrier)`). Pure, header-only.
 */
#ifndef CS_BUGS_H
#define CS_BUGS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../sim/dev.h"
#include "../window/cs_error.h"

typedef enum cs_bug {
  CS_BUG_NONE = 0,
  CS_BUG_MESH_NO_CHUNK_BARRIER,
  CS_BUG_RING_NO_READY_BARRIER,
  CS_BUG_NO_FENCE_BEFORE_NOTIFY,
  CS_BUG_SIGNAL_REUSE,
  CS_BUG_WAIT_EQ,
  CS_BUG_UNALIGNED_SLOTS,
  CS_BUG_INACTIVE_LANE_REMOTE_READ,
  CS_BUG_RING_DROP_TAIL,
  CS_BUG_EARLY_RETURN,
  CS_BUG_NR_MISMATCH,
  CS_BUG_DRAIN_NO_DDR_FENCE,
  CS_BUG_PUSH_OWN_READ_AFTER_READY,
  CS_BUG_PUSH_NO_DONE_BARRIER,
  CS_BUG_HOST_PUSH_NO_DSB,
  CS_BUG_HOST_PUSH_NO_FINAL_BARRIER,
  CS_BUG_HOST_PUSH_LEFT_WAIT_ONLY,
  CS_BUG_HOST_PUSH_EPILOGUE_2279,
  CS_BUG_IBING_NO_SNAPSHOT_BARRIER,
  CS_BUG_PUSH_NO_PUT_PREDRAIN,
  CS_BUG_HOST_PUSH_NO_TAIL_DRAIN,
  CS_BUG_RING_STAGE_IN_DRAIN_ONLY,
  CS_NBUGS
} cs_bug_t;

/* What a defect changes; all zero is the reference algorithm. */
typedef struct cs_mutation {
  bool no_chunk_barrier;     /* mesh: no read-complete barrier per chunk */
  bool no_ready_barrier;     /* ring: no READY barrier before the read */
  bool no_final_barrier;     /* no last read-complete barrier of the call */
  bool no_fence;             /* barriers notify without draining stores */
  bool no_epilogue;          /* signals keep their values across calls */
  bool wait_eq;              /* barrier waits compare Eq, not Ge */
  bool packed_slots;         /* slots packed, no 32-byte rounding */
  bool inactive_remote_read; /* ring AG inactive lanes read the left peer */
  bool drop_tail;            /* ring segments SIZE/NR, tail unowned */
  bool nr_mismatch;          /* ring segment math for NR+1 ranks */
  bool drain_only;           /* barriers drain posted stores before the
                                notify but do not wait until they are
                                visible (no DDR fence) */
  bool push_own_late;        /* push ring: the own value read after the
                                READY barrier */
  bool no_push_done;         /* push ring: no PUSH-DONE barrier but the
                                call's last */
  bool no_put_drain;         /* host push ring: no pipe barrier around
                                its puts */
  bool left_wait_only;       /* host push ring: the neighbour barrier
                                waits for the left neighbour only */
  bool epilogue_every_peer;  /* host push ring: the epilogue subtracts 1
                                from every peer's cell of every row */
  bool no_push_return;       /* host push ring: no final barrier, the one
                                after which every push into the rank's
                                window has landed */
  bool no_snapshot_barrier;  /* ibing: no barrier B between the snapshots
                                and the pushes */
  bool no_put_predrain;      /* push ring: nothing drains the rank's last
                                store before a put reads it as source */
  bool no_put_tail_drain;    /* host push ring: no pipe barrier after a
                                step's last put, and the notify's drain
                                does not cover the put (DDR fence only) */
  bool stage_in_drain_only;  /* ring: the first READY barrier, the one
                                that publishes the staged input, drains
                                without a DDR fence */
} cs_mutation_t;

typedef struct cs_bug_info {
  const char *name;
  const char *what;   /* one line: what it breaks (reference item) */
  const char *recipe; /* run options under which it fails */
  const char *fails;  /* how it fails */
  cs_mutation_t mut;  /* what it changes in the algorithms */
  uint32_t min_calls; /* allreduce calls on one world it needs to show */
} cs_bug_info_t;

static const cs_bug_info_t cs_bug_table[CS_NBUGS] = {
    {"none", "", "", "", .min_calls = 1},
    {"mesh-no-chunk-barrier",
     "mesh without the per-chunk read-complete barrier: a fast rank stores its "
     "reduced chunk while a slow peer still reads it (WAR, "
     "docs/algorithms.md §8.1)",
     "--algo mesh --ranks 3 --count 40 --schedule random:3",
     "wrong result (a contribution counted twice)",
     .mut = {.no_chunk_barrier = true}, .min_calls = 1},
    {"ring-no-ready-barrier",
     "ring without the READY barrier: the right neighbour reads a segment "
     "before the left rank's previous-round store (RAW, "
     "docs/algorithms.md §8.2)",
     "--algo ring --ranks 3 --count 40 --schedule random:1",
     "wrong result (stale partial sums)",
     .mut = {.no_ready_barrier = true}, .min_calls = 1},
    {"no-fence-before-notify",
     "barriers notify without draining posted stores first: the signal can "
     "overtake the data it announces (docs/algorithms.md §8.3-8.4)",
     "--algo ring --ranks 3 --count 40 --schedule latest --memory-model relaxed",
     "wrong result (a peer reads stale data)",
     .mut = {.no_fence = true}, .min_calls = 1},
    {"signal-reuse",
     "two calls on one signal buffer without the self-clearing epilogue: the "
     "second call's waits pass on stale credits (docs/algorithms.md §8.6)",
     "--algo mesh --ranks 3 --count 40 --schedule random:1",
     "wrong result in the second call",
     .mut = {.no_epilogue = true}, .min_calls = 2},
    {"wait-eq",
     "waits compare with Eq instead of Ge: a late poller misses the exact "
     "value once a fast peer pushed the cell past it "
     "(docs/algorithms.md §8.7)",
     "--algo mesh --ranks 2 --count 5000 --schedule pct:1:1",
     "deadlock, reported with the wavefront",
     .mut = {.wait_eq = true}, .min_calls = 1},
    {"unaligned-slots",
     "slots packed without 32-byte rounding (pre-#2161): the FP16 tail "
     "over-read crosses the data slot's end (docs/algorithms.md §8.10)",
     "--algo ring --ranks 2 --count 17 --dtype fp16",
     "out-of-slot fault (exit 3)",
     .mut = {.packed_slots = true}, .min_calls = 1},
    {"inactive-lane-remote-read",
     "all-gather inactive lanes read elements 0..15 from the left peer "
     "(earlier #2161 revision, docs/algorithms.md §8.11); the value is "
     "discarded",
     "--algo ring --ranks 4 --count 17 --dtype fp16 --trace FILE",
     "no wrong result: extra remote loads on inactive lanes, visible in the "
     "trace (a race for a happens-before checker)",
     .mut = {.inactive_remote_read = true}, .min_calls = 1},
    {"ring-drop-tail",
     "pre-#1942 ring segments SIZE/NR: the SIZE % NR tail is never reduced "
     "(docs/algorithms.md §8.14)",
     "--algo ring --ranks 3 --count 40",
     "wrong result in the last SIZE % NR elements",
     .mut = {.drop_tail = true}, .min_calls = 1},
    {"early-return",
     "no final read-complete barrier: a fast rank returns and reuses its "
     "window while a slow peer still reads it (docs/algorithms.md §8.15); "
     "two calls",
     "--algo ring --ranks 3 --count 40 --schedule pct:1:1",
     "wrong result",
     .mut = {.no_final_barrier = true}, .min_calls = 2},
    {"nr-mismatch",
     "ring segment math from a signal built for NR+1 ranks (the static "
     "signal.shape[1]) while the loops run the runtime NR: the segments "
     "cover only [0, B(NR)) of NR+1 boundaries (§8 item 13)",
     "--algo ring --ranks 3 --count 40",
     "wrong result in the elements past B(NR) (never reduced)",
     .mut = {.nr_mismatch = true}, .min_calls = 1},
    {"drain-no-ddr-fence",
     "barriers drain posted stores before the notify (pipe barrier) but "
     "issue no DDR fence, so a drained store need not be visible when the "
     "signal is (PTOAS #744, fixed by #757; docs/memory-models.md): passes "
     "on sc, fifo and relaxed, fails only on a2a3",
     "--algo ring --ranks 3 --count 40 --schedule latest --memory-model a2a3",
     "wrong result (a peer reads stale data)",
     .mut = {.drain_only = true}, .min_calls = 1},
    {"push-own-read-after-ready",
     "push ring with the own-value read after the READY barrier: the left "
     "neighbour's push can land first, and the rank folds that partial "
     "with itself (PR #2280's push model, docs/algorithms.md §4.4)",
     "--algo ring-push --ranks 3 --count 40 --schedule random:1",
     "wrong result (a partial counted twice)",
     .mut = {.push_own_late = true}, .min_calls = 1},
    {"push-no-done-barrier",
     "push ring without the PUSH-DONE barrier (but the call's last): a rank "
     "reads its receive segment before the left neighbour's push lands "
     "(docs/algorithms.md §4.4)",
     "--algo ring-push --ranks 3 --count 40 --schedule random:1",
     "wrong result (a contribution missing or doubled)",
     .mut = {.no_push_done = true}, .min_calls = 1},
    {"host-push-no-dsb",
     "host push ring without the pipe barriers around each put and the "
     "pipe barrier and DDR fence that open each neighbour barrier: the "
     "notify can land before the atomic add it follows, and the right "
     "neighbour pushes its chunk on without that contribution (PR #2280's "
     "ordering, docs/algorithms.md §8.21)",
     "--algo host-push --ranks 3 --count 30 --schedule pct:2:1 --memory-model relaxed",
     "wrong result (a rank's contribution missing from a chunk)",
     .mut = {.no_fence = true, .no_put_drain = true}, .min_calls = 1},
    {"host-push-no-final-barrier",
     "host push ring without its final neighbour barrier: a rank returns "
     "before its left neighbour's last all-gather put lands, and its chunk "
     "r+1 is still its own reduce-scatter partial (docs/algorithms.md "
     "§8.22)",
     "--algo host-push --ranks 3 --count 30 --schedule latest",
     "wrong result (a rank returns holding its partial of chunk r+1)",
     .mut = {.no_push_return = true}, .min_calls = 1},
    {"host-push-left-wait-only",
     "host push ring whose neighbour barrier waits for the left neighbour "
     "only: the left neighbour's first add can land in a rank's window "
     "before the rank's own input is there, which then overwrites it "
     "(docs/algorithms.md §8.23)",
     "--algo host-push --ranks 3 --count 30 --schedule latest",
     "wrong result (a contribution lost to the stage-in)",
     .mut = {.left_wait_only = true}, .min_calls = 1},
    {"host-push-epilogue-2279",
     "host push ring with #2279's epilogue as written for the all-to-all "
     "barrier (-1 on every peer's cell of every row): at 2 ranks each cell "
     "keeps 1 of its 2, so the next call's first wait passes on a stale "
     "credit (docs/algorithms.md §8.24); three calls",
     "--algo host-push --ranks 2 --count 20 --schedule latest",
     "signals left at 1, and a wrong result in the third call",
     .mut = {.epilogue_every_peer = true}, .min_calls = 3},
    {"ibing-no-snapshot-barrier",
     "ibing without barrier B between the snapshots and the pushes: the "
     "peer's add can land in a chunk before its owner has copied it, and "
     "the owner pushes the peer's contribution back to it "
     "(docs/algorithms.md §8.25)",
     "--algo ibing --ranks 2 --count 20 --schedule latest",
     "wrong result (the peer's input counted twice)",
     .mut = {.no_snapshot_barrier = true}, .min_calls = 1},
    {"push-no-put-predrain",
     "push ring with nothing between a rank's store of a reduced subchunk "
     "and the put that reads it as its source (no PIPE_ALL before the put, "
     "and READY notifies without a fence of its own, as once PyPTO dropped "
     "the one before every notify): the put's read can miss the store, and "
     "the rank forwards a partial without its own contribution (PTOAS "
     "#706, fixed by #721; docs/algorithms.md §4.4): passes on sc, fails "
     "on fifo, relaxed and a2a3",
     "--algo ring-push --ranks 2 --count 40 --schedule random:6 --memory-model a2a3",
     "wrong result (a rank's contribution missing from a segment)",
     .mut = {.no_put_predrain = true}, .min_calls = 1},
    {"host-push-no-tail-drain",
     "host push ring whose step puts its chunk as one chunked put (a pipe "
     "barrier between tiles, none after the last) and whose neighbour "
     "barrier notifies after a DDR fence whose drain does not reach the "
     "put (PTOAS #872, worked around by PyPTO's pipe barrier after every "
     "put; docs/algorithms.md §8.26): the step's last tile is still in the "
     "pipe at the fence, the neighbour forwards its chunk without it: "
     "passes on sc, fifo and relaxed, fails on a2a3",
     "--algo host-push --ranks 2 --count 1024 --schedule latest --memory-model a2a3",
     "wrong result (the last tile of a chunk lacks a contribution)",
     .mut = {.no_put_tail_drain = true}, .min_calls = 1},
    {"ring-stage-in-drain-only",
     "ring whose first READY barrier, the one after the stage-in, drains "
     "the staged input (pipe barrier) without a DDR fence, every later "
     "barrier as the reference: the left neighbour's first read can see "
     "the window before the input (pypto #1826, one reading of a cause "
     "upstream did not settle; docs/algorithms.md §8.27): passes on sc, "
     "fifo and relaxed, fails on a2a3",
     "--algo ring --ranks 2 --count 256 --schedule latest --memory-model a2a3",
     "wrong result (a rank's input missing from the first segment read)",
     .mut = {.stage_in_drain_only = true}, .min_calls = 1},
};

/* Name -> id, or CS_EBADNAME. */
static inline int cs_bug_parse(const char *s)
{
  for (int i = 1; i < CS_NBUGS; i++)
    if (strcmp(s, cs_bug_table[i].name) == 0)
      return i;
  return CS_EBADNAME;
}

/* Allreduce calls on one world a run of defect `bug` needs for it to show
 * (2 for the defects of signal and window reuse), 1 out of range. */
static inline uint32_t cs_bug_min_calls(uint32_t bug)
{
  return bug < CS_NBUGS ? cs_bug_table[bug].min_calls : 1;
}

/* How the algorithms run: the reference's choices, or a defect's. */
typedef struct cs_knobs {
  bool     ready_barrier;       /* ring: READY barrier before each read */
  bool     chunk_barrier;       /* mesh: read-complete barrier per chunk */
  bool     final_barrier;       /* the call's last read-complete barrier */
  bool     fence_before_notify; /* barriers drain posted stores first */
  bool     ddr_fence;           /* ... and wait until they are visible
                                   (cs_fence; else cs_pipe_barrier only) */
  bool     own_read_first;      /* push ring: own value before READY */
  bool     push_done_barrier;   /* push ring: PUSH-DONE every subchunk */
  bool     put_drain;           /* host push ring: a pipe barrier before
                                   and after every put */
  bool     right_wait;          /* host push ring: the neighbour barrier
                                   also waits for the right neighbour */
  bool     epilogue_every_peer; /* host push ring: -1 on every peer cell
                                   (#2279's all-to-all accounting) */
  bool     snapshot_barrier;    /* ibing: barrier B after the snapshots */
  bool     put_predrain;        /* push ring: the rank's stores land before
                                   a put reads its source (READY's fence) */
  bool     put_tail_drain;      /* host push ring: a pipe barrier after a
                                   step's last put, and the notify's own
                                   drain reaches the put */
  bool     stage_in_ddr_fence;  /* ring: the first READY barrier's fence
                                   has its DDR half */
  bool     epilogue;            /* self-clearing epilogue ends the call */
  bool     ring_tail;           /* ring segments cover the SIZE % NR tail */
  bool     inactive_lane_remote_read; /* ring AG inactive lanes load from
                                         the left peer, not locally */
  uint32_t wait_cmp;            /* barrier waits: CS_CMP_GE or CS_CMP_EQ */
  uint32_t slot_align;          /* bytes: CS_SLOT_ALIGN, or 1 (packed) */
  uint32_t static_nr_extra;     /* ring: segment math for nranks + this */
} cs_knobs_t;

/* The knobs of defect `bug` (cs_bug_t; out of range reads as none), with
 * the epilogue also off when `no_epilogue` (single-use signals). Pure. */
static inline cs_knobs_t cs_bug_knobs(uint32_t bug, uint32_t no_epilogue)
{
  const cs_mutation_t m = bug < CS_NBUGS ? cs_bug_table[bug].mut
                                         : (cs_mutation_t){0};
  return (cs_knobs_t){
      .ready_barrier = !m.no_ready_barrier,
      .chunk_barrier = !m.no_chunk_barrier,
      .final_barrier = !m.no_final_barrier && !m.no_push_return,
      .fence_before_notify = !m.no_fence,
      .ddr_fence = !m.drain_only,
      .own_read_first = !m.push_own_late,
      .push_done_barrier = !m.no_push_done,
      .put_drain = !m.no_put_drain,
      .right_wait = !m.left_wait_only,
      .epilogue_every_peer = m.epilogue_every_peer,
      .snapshot_barrier = !m.no_snapshot_barrier,
      .put_predrain = !m.no_put_predrain,
      .put_tail_drain = !m.no_put_tail_drain,
      .stage_in_ddr_fence = !m.stage_in_drain_only,
      .epilogue = !m.no_epilogue && !no_epilogue,
      .ring_tail = !m.drop_tail,
      .inactive_lane_remote_read = m.inactive_remote_read,
      .wait_cmp = m.wait_eq ? CS_CMP_EQ : CS_CMP_GE,
      .slot_align = m.packed_slots ? 1 : CS_SLOT_ALIGN,
      .static_nr_extra = m.nr_mismatch ? 1 : 0,
  };
}

#endif
