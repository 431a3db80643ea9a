/*
 * world.h - the shared-memory world of one run, and each rank's view of it.
 *
 * Owns: the POSIX shm region (create, map, unlink at once, remap in each
 * rank at its own address), the control block at its start, the window
 * addresses, the CommContext ABI (docs/algorithms.md §1.1) and remote
 * address translation (§1.2). Does not own processes (sim/launch.h) or the
 * meaning of what is in the windows (sim/, collectives/).
 *
 * Region map (all offsets in the control block; no pointers in shm):
 *
 *   +-----------+----------+-----+------------+---------------+--------+-------+
 *   | cs_ctl_t  | window 0 | ... | window N-1 | io: in | out  | traces | sched |
 *   +-----------+----------+-----+------------+---------------+--------+-------+
 *   0           off_windows  (stride win_stride) off_io         off_trace off_sched
 */
#ifndef CS_WORLD_H
#define CS_WORLD_H

#include <stddef.h>
#include <stdint.h>

#include "../include/collsim/types.h"
#include "layout.h"

#define CS_MAX_RANKS     256
#define CS_ABI_MAX_RANKS 64 /* COMM_MAX_RANK_NUM of the reference ABI */
#define CS_CTL_MAGIC     0x4d49534c4c4f4343ull /* "CCOLLSIM" little-endian */
#define CS_CTL_VERSION   2u

/* Per-rank state word. */
enum {
  CS_RS_INIT = 0,    /* forked, not yet attached */
  CS_RS_RUNNING = 1, /* executing device-API events */
  CS_RS_WAITING = 2, /* blocked in wait(): wait_* fields describe it */
  CS_RS_DONE = 3,    /* returned from its body */
  CS_RS_FAILED = 4,  /* stopped itself: see reason */
  CS_RS_HUNG = 5,    /* injected hang fault: sleeps until killed */
};

/* Why the run was aborted (abort word) or a rank stopped (reason). */
enum {
  CS_ABORT_NONE = 0,
  CS_ABORT_FAULT = 1,   /* out-of-slot fault or other checked error */
  CS_ABORT_TIMEOUT = 2, /* a wait timed out */
  CS_ABORT_CRASH = 3,   /* a rank died or exited non-zero */
  CS_ABORT_SIGNAL = 4,  /* the launcher was interrupted */
  CS_ABORT_PEER = 5,    /* (reason only) stopped because another rank aborted */
  CS_ABORT_WRONG = 6,   /* (reason only) a rank-side check failed */
  CS_ABORT_DEADLOCK = 7, /* controlled mode: no actor can run */
  CS_ABORT_DIVERGED = 8, /* replay: the run left the recorded schedule */
};

/* CS_CMP_EQ/GE (wait, docs/algorithms.md §6 WaitCmp ABI) and CS_NOTIFY_ADD/SET
 * (NotifyOp ABI): collsim/types.h, the public API's copy of the numbers. */

/* One rank's status, written by the rank, read by the launcher. POD,
 * one cache line so ranks never share a line. */
typedef struct cs_rank_status {
  uint32_t state;      /* CS_RS_* */
  int32_t  pid;        /* process id */
  uint64_t event;      /* index of the device-API event being performed */
  uint32_t wait_slot;  /* slot index of the current (or last) wait */
  uint32_t wait_cell;  /* cell index inside that slot */
  int32_t  wait_value; /* value the wait expects */
  uint32_t wait_cmp;   /* CS_CMP_* */
  uint32_t sleeping;   /* 1 while in FUTEX_WAIT: notifiers must wake it */
  uint32_t reason;     /* CS_ABORT_* once the rank stopped itself, else 0 */
  int32_t  start_err;  /* -errno or CS_E*: why the rank could not start or
                          run (it exits with CS_RX_ERROR), else 0 */
  uint8_t  pad[20];    /* to 64 bytes */
} cs_rank_status_t;
_Static_assert(sizeof(cs_rank_status_t) == 64, "cs_rank_status_t");
_Static_assert(offsetof(cs_rank_status_t, sleeping) == 32, "sleeping");

/* The control block at offset 0 of the region. POD, offsets only. */
typedef struct cs_ctl {
  uint64_t magic;        /* CS_CTL_MAGIC */
  uint32_t version;      /* CS_CTL_VERSION */
  uint32_t nranks;       /* ranks in this world */
  uint64_t region_bytes; /* bytes of the whole region */
  uint64_t win_stride;   /* bytes between consecutive window starts */
  uint64_t off_windows;  /* bytes: region start -> window 0 */
  uint64_t off_io;       /* bytes: region start -> rank 0's input buffer */
  uint64_t io_bytes;     /* bytes per rank per direction (in, out) */
  uint64_t off_trace;    /* bytes: region start -> rank 0's trace ring */
  uint64_t trace_bytes;  /* bytes per rank trace ring (0 = no tracing) */
  uint64_t off_sched;    /* bytes: region start -> scheduler area */
  uint64_t sched_bytes;  /* bytes of the scheduler area */
  uint64_t timeout_ns;   /* ns: wait timeout */
  uint64_t reserved3;    /* zero (event_seq lives on its own line below) */
  uint32_t abort_word;   /* CS_ABORT_*: non-zero stops every rank */
  int32_t  abort_rank;   /* rank that set abort_word first, -1 = launcher */
  uint32_t spin_iters;   /* pause-loop iterations before FUTEX_WAIT */
  uint32_t controlled;   /* 0 free mode; else 1 + memory model (sched.h) */
  uint32_t yield_iters;  /* sched_yield rounds after the spin, before FUTEX_WAIT */
  uint32_t reserved2;    /* zero */
  char     abort_msg[256]; /* one line describing the first failure */
  cs_layout_t layout;    /* slot table shared by every window */
  uint32_t note_slot;    /* slot whose cells have notifier notes */
  uint32_t note_cells;   /* cells of note_slot noted per rank, 0 = none */
  uint64_t off_notes;    /* bytes: region start -> rank 0's notes (u64 each:
                            CS_NOTE_RANK/CS_NOTE_EVENT of the last notify
                            issued to the cell, 0 = never notified) */
  uint8_t  pad[32];      /* rank[] starts on a cache line */
  cs_rank_status_t rank[CS_MAX_RANKS]; /* per-rank status, 64 B each */
  /* The trace's global event counter, alone on its cache line: every traced
   * event of every rank takes a number from it, and sharing the line with
   * abort_word or the offsets above made every rank's next read of them a
   * miss. */
  uint64_t event_seq;
  uint8_t  pad_seq[56];
} cs_ctl_t;
_Static_assert(offsetof(cs_ctl_t, abort_word) == 104, "cs_ctl_t.abort_word");
_Static_assert(offsetof(cs_ctl_t, abort_msg) == 128, "cs_ctl_t.abort_msg");
_Static_assert(offsetof(cs_ctl_t, layout) == 384, "cs_ctl_t.layout");
_Static_assert(offsetof(cs_ctl_t, rank) == 832, "rank status on a cache line");
_Static_assert(offsetof(cs_ctl_t, event_seq) == 832 + 64 * CS_MAX_RANKS,
               "cs_ctl_t.event_seq on its own cache line");
_Static_assert(sizeof(cs_ctl_t) == 896 + 64 * CS_MAX_RANKS, "cs_ctl_t size");

/* CommContext of the reference ABI (§1.1): 1056 bytes, little-endian. */
typedef struct cs_commctx {
  uint64_t workSpace;                       /* unused */
  uint64_t workSpaceSize;                   /* unused */
  uint32_t rankId;                          /* this rank */
  uint32_t rankNum;                         /* ranks in the domain */
  uint64_t winSize;                         /* bytes per window */
  uint64_t windowsIn[CS_ABI_MAX_RANKS];     /* process-local window bases */
  uint64_t windowsOut[CS_ABI_MAX_RANKS];    /* mirrors windowsIn */
} cs_commctx_t;
_Static_assert(offsetof(cs_commctx_t, rankId) == 16, "CommContext.rankId");
_Static_assert(offsetof(cs_commctx_t, rankNum) == 20, "CommContext.rankNum");
_Static_assert(offsetof(cs_commctx_t, winSize) == 24, "CommContext.winSize");
_Static_assert(offsetof(cs_commctx_t, windowsIn) == 32, "CommContext.windowsIn");
_Static_assert(offsetof(cs_commctx_t, windowsOut) == 544, "CommContext.windowsOut");
_Static_assert(sizeof(cs_commctx_t) == 1056, "CommContext size");

/* Process-local handle of a mapped world. */
typedef struct cs_world {
  uint8_t  *base;  /* this process's mapping of the region */
  size_t    bytes; /* mapping length */
  cs_ctl_t *ctl;   /* == base */
  int       fd;    /* shm descriptor kept so ranks can map at their own address */
  char      name[64]; /* shm name used at creation (already unlinked) */
} cs_world_t;

typedef struct cs_world_opts {
  uint64_t io_bytes;    /* bytes per rank per direction for staging buffers */
  uint64_t trace_bytes; /* bytes per rank for the trace ring, 0 = none */
  uint64_t sched_bytes; /* bytes for the scheduler area, 0 = none */
  uint64_t timeout_ns;  /* wait timeout, 0 = default (30 s) */
  uint32_t note_slot;   /* slot of the signal cells whose last notifier is */
  uint32_t note_cells;  /*   noted, and how many per rank (0 = none): the
                           hang wavefront's "last notified by" */
} cs_world_opts_t;

/* Creates the region for `nranks` windows laid out by `l`, maps it, and
 * unlinks its name before returning (children inherit the descriptor).
 * Every page is reserved here (posix_fallocate), so a region that is
 * handed out is backed: room taken meanwhile by another run is a
 * CS_ETOOBIG now, never a SIGBUS in a rank later.
 * Returns 0, -EINVAL (nranks outside 1..CS_MAX_RANKS), CS_ETOOBIG (region
 * larger than memory or free /dev/shm space, or not all of it could be
 * reserved), or -errno. On failure nothing is left behind. Caller owns `w` and must cs_world_destroy() it. */
int cs_world_create(cs_world_t *w, const cs_layout_t *l, uint32_t nranks,
                    const cs_world_opts_t *opts);

/* The same region in this process's private memory, for a transport
 * without shared memory (MPI-3 RMA): the control block, the offsets and the
 * io buffers of cs_world_create, anonymous and unreserved (only the pages
 * touched are backed), so a single rank process keeps its own status,
 * abort word and staging buffers in it. Its windows are never used for
 * data: the transport's own windows are. Returns 0, -EINVAL, CS_ETOOBIG or
 * -errno; cs_world_destroy() undoes it. */
int cs_world_local(cs_world_t *w, const cs_layout_t *l, uint32_t nranks,
                   const cs_world_opts_t *opts);
/* Words, into buf (n bytes), why a region of these parts does not fit
 * (cs_world_create returned CS_ETOOBIG): the first part, in region order
 * (control block, windows, staging buffers, trace rings, scheduler area),
 * that crosses the limit, the limit (free /dev/shm space or available
 * memory, whichever is smaller) and every part's size. One line, no
 * newline. Reads /proc/meminfo and statvfs("/dev/shm"); no side effects. */
void cs_world_explain_size(char *buf, size_t n, const cs_layout_t *l,
                           uint32_t nranks, const cs_world_opts_t *o);
/* The same for any failure of cs_world_create: CS_ETOOBIG as above;
 * otherwise what went wrong with /dev/shm (missing, or the error `err`)
 * and the region's size with its parts. One line, no newline. */
void cs_world_explain_error(char *buf, size_t n, const cs_layout_t *l,
                            uint32_t nranks, const cs_world_opts_t *o, int err);

/* In a forked rank: maps the region again at an address of this process's
 * own choosing (so windowsIn[] differ between processes, as on the device),
 * prefaults it, and drops the inherited mapping. Returns 0 or -errno. */
int cs_world_remap(cs_world_t *w);

/* Unmaps and closes. Safe on a zeroed or half-created world. */
void cs_world_destroy(cs_world_t *w);

/* Memory available for new allocations now (MemAvailable), bytes. */
uint64_t cs_mem_available(void);

/* Bytes needed for a region; 0 on overflow. Pure. */
uint64_t cs_world_region_bytes(const cs_layout_t *l, uint32_t nranks,
                               const cs_world_opts_t *opts);

static inline uint8_t *cs_world_window(const cs_world_t *w, uint32_t rank)
{
  return w->base + w->ctl->off_windows + (uint64_t)rank * w->ctl->win_stride;
}
/* A notifier note: rank + 1 in the top 16 bits, the notifier's event index
 * in the low 48 (0 = never notified). */
#define CS_NOTE(rank, event) \
  ((uint64_t)((rank) + 1) << 48 | ((uint64_t)(event) & ((1ull << 48) - 1)))
#define CS_NOTE_RANK(note) ((uint32_t)((note) >> 48) - 1)
#define CS_NOTE_EVENT(note) ((note) & ((1ull << 48) - 1))
/* Rank `rank`'s notes, note_cells of them, or NULL without notes. */
static inline uint64_t *cs_world_notes(const cs_world_t *w, uint32_t rank)
{
  return w->ctl->note_cells
             ? (uint64_t *)(w->base + w->ctl->off_notes) +
                   (uint64_t)rank * w->ctl->note_cells
             : NULL;
}
static inline uint8_t *cs_world_input(const cs_world_t *w, uint32_t rank)
{
  return w->base + w->ctl->off_io + (uint64_t)rank * 2 * w->ctl->io_bytes;
}
static inline uint8_t *cs_world_output(const cs_world_t *w, uint32_t rank)
{
  return cs_world_input(w, rank) + w->ctl->io_bytes;
}

/* What cs_world_clean_stale tells its caller of one stale name (its
 * launcher `pid` is gone): err 0, removed; else the errno of the unlink
 * that failed (another user's name, in the sticky /dev/shm). */
typedef void (*cs_world_clean_fn)(void *arg, const char *name, int pid, int err);

/* Removes /dev/shm/collsim-<pid>-<n> names whose creating pid is gone,
 * telling `fn` (may be NULL) of each one removed or kept; *kept (may be
 * NULL) counts those kept. Words nothing: the caller does. Returns the
 * count removed or -errno. */
int cs_world_clean_stale(cs_world_clean_fn fn, void *arg, int *kept);

/* What cs_world_end_orphans tells its caller of one process `pid` that
 * maps a region of the gone launcher `launcher`: err 0, SIGKILL sent;
 * else the errno of the kill that failed. */
typedef void (*cs_world_orphan_fn)(void *arg, int pid, int launcher, int err);

/* Ends (SIGKILL) every process in our pid namespace that maps a region
 * /dev/shm/collsim-<launcher>-<n> (its name long unlinked) whose launcher
 * is gone: what a rank's descendants (a plug-in's setsid child) keep of a
 * launcher killed with SIGKILL, which could end nothing. Processes we
 * cannot look at (another user's) are left alone. Returns the count
 * ended, or -errno when /proc cannot be read. */
int cs_world_end_orphans(cs_world_orphan_fn fn, void *arg);

/* Counts names /dev/shm/collsim-<pid>-* created by `pid` (0 = any). */
int cs_world_count_names(int pid);

/* ---- a rank's view: CommContext plus windows beyond the 64-rank ABI ---- */

typedef struct cs_rankctx {
  cs_commctx_t abi;     /* reference ABI, first 64 windows */
  uint64_t    *windows; /* all nranks bases (== abi.windowsIn[i] for i < 64) */
} cs_rankctx_t;

/* Fills `c` for `rank` from this process's mapping of `w`. Returns 0 or
 * -ENOMEM. Caller calls cs_rankctx_fini(). */
int cs_rankctx_init(cs_rankctx_t *c, const cs_world_t *w, uint32_t rank);
void cs_rankctx_fini(cs_rankctx_t *c);

/* Remote address translation of docs/algorithms.md §1.2:
 * remote(p, q) = p + (windowsIn[q] - windowsIn[me]). */
static inline void *cs_win_remote(const cs_rankctx_t *c, const void *local,
                                  uint32_t peer)
{
  return (uint8_t *)local + (c->windows[peer] - c->windows[c->abi.rankId]);
}

#endif
