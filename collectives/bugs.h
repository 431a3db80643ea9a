/*
 * bugs.h - named defects (--bug NAME) the algorithms can be run with: the
 * known ordering bugs of PyPTO's allreduce history (reference §8), as the
 * regression corpus for controlled runs, replay and teaching. Each entry
 * says what it breaks, which reference item it is, and the schedule and
 * memory model under which it fails deterministically (its recipe, also
 * used for traces/bugs/ and the tests).
 */
#ifndef CS_BUGS_H
#define CS_BUGS_H

#include <string.h>

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
  CS_NBUGS
} cs_bug_t;

typedef struct cs_bug_info {
  const char *name;
  const char *what;   /* one line: what it breaks (reference item) */
  const char *recipe; /* run options under which it fails */
  const char *fails;  /* how it fails */
} cs_bug_info_t;

static const cs_bug_info_t cs_bug_table[CS_NBUGS] = {
    {"none", "", "", ""},
    {"mesh-no-chunk-barrier",
     "mesh without the per-chunk read-complete barrier: a fast rank stores its "
     "reduced chunk while a slow peer still reads it (WAR, §8 item 1)",
     "--algo mesh --ranks 3 --count 40 --schedule random:3",
     "wrong result (a contribution counted twice)"},
    {"ring-no-ready-barrier",
     "ring without the READY barrier: the right neighbour reads a segment "
     "before the left rank's previous-round store (RAW, §8 item 2)",
     "--algo ring --ranks 3 --count 40 --schedule random:1",
     "wrong result (stale partial sums)"},
    {"no-fence-before-notify",
     "barriers notify without draining posted stores first: the signal can "
     "overtake the data it announces (§8 items 3-4)",
     "--algo ring --ranks 3 --count 40 --schedule latest --memory-model relaxed",
     "wrong result (a peer reads stale data)"},
    {"signal-reuse",
     "two calls on one signal buffer without the self-clearing epilogue: the "
     "second call's waits pass on stale credits (§8 item 6)",
     "--algo mesh --ranks 3 --count 40 --schedule random:1",
     "wrong result in the second call"},
    {"wait-eq",
     "waits compare with Eq instead of Ge: a late poller misses the exact "
     "value once a fast peer pushed the cell past it (§8 item 7)",
     "--algo mesh --ranks 2 --count 5000 --schedule pct:1:1",
     "deadlock, reported with the wavefront"},
    {"unaligned-slots",
     "slots packed without 32-byte rounding (pre-#2161): the FP16 tail "
     "over-read crosses the data slot's end (§8 item 10)",
     "--algo ring --ranks 2 --count 17 --dtype fp16",
     "out-of-slot fault (exit 3)"},
    {"inactive-lane-remote-read",
     "all-gather inactive lanes read elements 0..15 from the left peer "
     "(earlier #2161 revision, §8 item 11); the value is discarded",
     "--algo ring --ranks 4 --count 17 --dtype fp16 --trace FILE",
     "no wrong result: extra remote loads on inactive lanes, visible in the "
     "trace (a race for a happens-before checker)"},
    {"ring-drop-tail",
     "pre-#1942 ring segments SIZE/NR: the SIZE % NR tail is never reduced "
     "(§8 item 14)",
     "--algo ring --ranks 3 --count 40",
     "wrong result in the last SIZE % NR elements"},
    {"early-return",
     "no final read-complete barrier: a fast rank returns and reuses its "
     "window while a slow peer still reads it (§8 item 15); two calls",
     "--algo ring --ranks 3 --count 40 --schedule pct:1:1",
     "wrong result"},
};

/* Name -> id, or -1. */
static inline int cs_bug_parse(const char *s)
{
  for (int i = 1; i < CS_NBUGS; i++)
    if (strcmp(s, cs_bug_table[i].name) == 0)
      return i;
  return -1;
}

#endif
