/*
 * dev.h - the device API: the only way an algorithm touches memory.
 *
 * Owns: load, store, put, notify, wait, fence, marks and reduce events for
 * one rank; their bounds checks against the slot table, fault injection,
 * and the one choke point (cs__dev_begin) every call passes through. Does
 * not own how an event takes effect: that is the transport, one table of
 * operations (cs_dev_ops_t) chosen once when the rank starts (the free
 * shared-memory transport, transport_free.c; the controlled one,
 * transport_ctl.c). Does not own processes (launch.h), the scheduler
 * (sched.h) or the trace (trace.h): the tracer plugs in as hooks
 * (cs_dev_hooks_t) on the same seam.
 *
 * Every call is one event: the core numbers it, strikes an injected fault,
 * lets the transport order it (ops->point), calls the hooks, checks its
 * bounds, and then dispatches its effect to the transport. Failures of the
 * run (out-of-slot fault, wait timeout, abort by another rank) do not
 * return: the rank records why in its status and exits, so algorithm code
 * reads like device code.
 */
#ifndef CS_DEV_H
#define CS_DEV_H

#include <stdbool.h>
#include <stdint.h>

#include "../include/collsim/device.h"
#include "../window/world.h"

/* Event kinds (also the trace's kind field). */
typedef enum cs_ev_kind {
  CS_EV_LOAD = 1,
  CS_EV_STORE = 2,
  CS_EV_PUT = 3,
  CS_EV_NOTIFY = 4,
  CS_EV_WAIT = 5,
  CS_EV_FENCE = 6,
  CS_EV_REDUCE = 7,
  CS_EV_MARK = 8, /* phase/step marker */
  /* 9..13 are the trace's own record kinds (trace/format.h). */
  CS_EV_PIPE = 14, /* pipe barrier (cs_pipe_barrier) */
  CS_EV_DDR = 15,  /* DDR fence (cs_ddr_fence) */
  CS_EV_DCCI = 16, /* clean + invalidate one line (opcmp CS_DCCI_LINE) or
                      every line (CS_DCCI_ALL) of the rank's cache */
  CS_EV_READ = 17, /* scalar read of a cell through the cache */
} cs_ev_kind_t;

enum { CS_DCCI_LINE = 0, CS_DCCI_ALL = 1 };

/* Whether `kind` is a device event (a record kind a rank's call makes). */
static inline int cs_ev_is_device(uint32_t kind)
{
  return (kind >= CS_EV_LOAD && kind <= CS_EV_MARK) ||
         (kind >= CS_EV_PIPE && kind <= CS_EV_READ);
}
/* Whether `kind` is one of the waits for earlier writes: cs_fence, the
 * pipe barrier, the DDR fence. */
static inline int cs_ev_is_ordering(uint32_t kind)
{
  return kind == CS_EV_FENCE || kind == CS_EV_PIPE || kind == CS_EV_DDR;
}

/* Rank exit codes the launcher understands (anything else is reported as
 * "exited with status N"). */
enum {
  CS_RX_OK = 0,
  CS_RX_FAULT = 70,   /* out-of-slot fault or bad device-API argument */
  CS_RX_TIMEOUT = 71, /* a wait timed out */
  CS_RX_ABORTED = 72, /* stopped because another rank or the launcher aborted */
  CS_RX_ERROR = 73,   /* internal error (out of memory, ...) */
  CS_RX_HUNG = 74,    /* an injected hang fault, ended by its own timeout */
  CS_RX_EARLY = 75,   /* the launcher's word for a rank that exited with 0
                         before its body returned (exit() in a plug-in) */
};

/* Injected faults (--fault RANK:KIND[:EVENT]). */
typedef enum cs_fault_kind {
  CS_FAULT_NONE = 0,
  CS_FAULT_SEGV,  /* raise(SIGSEGV) */
  CS_FAULT_ABORT, /* abort() */
  CS_FAULT_EXIT,  /* _exit(CS_FAULT_EXIT_STATUS) */
  CS_FAULT_HANG,  /* stop making progress: found by the wait timeout */
} cs_fault_kind_t;
#define CS_FAULT_EXIT_STATUS 4

typedef struct cs_fault {
  cs_fault_kind_t kind;  /* CS_FAULT_NONE = no fault */
  uint32_t        rank;  /* rank that faults */
  uint64_t        event; /* device-API event index at which it strikes */
} cs_fault_t;

/* Parses "RANK:KIND[:EVENT]" (RANK below CS_MAX_RANKS; KIND segv, abort,
 * exit or hang; EVENT a decimal index, default 0). Returns 0, or the part
 * that is wrong: CS_EFAULTRANK, CS_EFAULTKIND or CS_EFAULTEVENT, with *f
 * zeroed (kind CS_FAULT_NONE). Words no message: the caller names `s`. */
int cs_fault_parse(const char *s, cs_fault_t *f);
const char *cs_fault_kind_name(cs_fault_kind_t k);

/* One event as the hooks see it. */
typedef struct cs_event {
  uint64_t index;    /* this rank's event index */
  uint32_t kind;     /* cs_ev_kind_t */
  uint32_t opcmp;    /* notify op (CS_NOTIFY_*), wait cmp (CS_CMP_*), reduce op */
  /* The two runs below have the order and widths of the trace record's
   * fields (sim/trace.h), so recording an event copies them as blocks. */
  uint64_t elem_off; /* first element accessed */
  uint64_t dma_id;   /* controlled fifo/relaxed: id of the posted op, else 0 */
  uint32_t peer;     /* peer rank (own rank for local access) */
  uint32_t slot;     /* slot index */
  uint32_t cell;     /* signal cell index (notify, wait); a 2-D load or
                        store (cs_load_rect, cs_store_rect): its rows, else 0 */
  uint32_t valid;    /* logical elements */
  uint32_t phys;     /* physical elements (>= valid: FP16 tail rounding) */
  int32_t  value;    /* notify value, wait target; 2-D: the row stride
                        in elements (valid = phys = rows x columns) */
  uint32_t flags;    /* CS_EVF_*; not recorded in a trace */
} cs_event_t;

/* cs_event_t.flags: a wait whose value the program never sees
 * (cs_wait_until), which verify may reorder with the AtomicAdds it does
 * not need (docs/verify.md, "The equivalence"). */
enum { CS_EVF_QUIET = 1u };

typedef struct cs_dev cs_dev_t;

/* Hooks called around every event (NULL in the fast path). */
typedef struct cs_dev_hooks {
  /* Before the event's effect; NULL: none. */
  void (*begin)(cs_dev_t *d, const cs_event_t *ev, void *arg);
  void (*end)(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg);
  /* The current event failed (out-of-slot fault, timeout); the rank exits
   * right after. observed: the cell's value for a wait, else 0. */
  void (*fail)(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg);
  /* A wait found its condition false and starts blocking (free mode). */
  void (*block)(cs_dev_t *d, const cs_event_t *ev, int32_t observed, void *arg);
  /* In the launcher, controlled mode: the scheduler landed `op` (a store,
   * put or notify that `rank` posted; op->dma_id ties it to its post) while
   * that rank sleeps. observed: the cell after a notify, else 0. */
  void (*land)(cs_world_t *w, uint32_t rank, const cs_event_t *op,
               int32_t observed, void *arg);
} cs_dev_hooks_t;

/* How an event takes effect: one table per transport, chosen once when a
 * rank starts and never looked at by algorithm code. Every operation runs
 * after the core has numbered, ordered, hooked and bounds-checked the
 * event, so it only performs the effect. The event (ev) says which peer,
 * slot, elements and cell; `off` is the checked byte offset of the target
 * (the range's first byte, or the cell) inside a window, the same in every
 * rank's window: a shared-memory transport adds it to the peer's mapping,
 * an MPI-3 RMA one uses it as the target displacement. */
typedef struct cs_dev_ops {
  const char *name;
  /* 1: load, view, write and fence are plain accesses to the shared
   * mapping (cs_dev_addr) and a full memory fence, a notify is an atomic
   * on the mapped cell followed by `wake` when the peer sleeps, and a wait
   * whose condition already holds returns at once; the core performs these
   * inline instead of calling the functions below (which must do exactly
   * the same): the free transport, where a call per event shows in
   * small-message latency. 0: always call. */
  int direct;
  /* direct only: wakes every waiter sleeping on `cell`. */
  void (*wake)(int32_t *cell);
  /* Before the event is hooked and checked: a transport that runs one
   * actor at a time blocks here until the event may run. NULL: none. */
  void (*point)(cs_dev_t *d, cs_event_t *ev);
  /* Copies nbytes at `off` of the event's peer's window into dst. */
  void (*load)(cs_dev_t *d, const cs_event_t *ev, uint64_t off, void *dst,
               size_t nbytes);
  /* The same source range, readable in place for the rest of the event
   * (cs_load_fused), or NULL: this transport cannot (cs_dev_in_place). */
  const void *(*view)(cs_dev_t *d, const cs_event_t *ev, uint64_t off);
  /* Store or put nbytes from src at `off` of the event's peer's window;
   * may post it for later (then sets ev->dma_id). */
  void (*write)(cs_dev_t *d, cs_event_t *ev, uint64_t off, const void *src,
                size_t nbytes);
  /* The 2-D forms (cs_load_rect, cs_store_rect; ev->cell = rows,
   * ev->value = row stride in elements): `rows` rows of `rowbytes`, the
   * first at `off`, each `pitch` bytes after the one before, packed row
   * after row in dst / src. write2d may post the whole rectangle as one op
   * (then sets ev->dma_id). Not called when `direct`. */
  void (*load2d)(cs_dev_t *d, const cs_event_t *ev, uint64_t off, void *dst,
                 size_t rowbytes, uint32_t rows, uint64_t pitch);
  void (*write2d)(cs_dev_t *d, cs_event_t *ev, uint64_t off, const void *src,
                  size_t rowbytes, uint32_t rows, uint64_t pitch);
  /* Applies the event's op and value to the peer's cell at `off`; returns
   * the cell's value after it, or 0 when the notify was posted for later. */
  int32_t (*notify)(cs_dev_t *d, cs_event_t *ev, uint64_t off);
  /* Blocks until the own cell at `off` satisfies the event's condition;
   * returns the value seen. Times out and aborts through
   * cs__dev_fail/cs__dev_aborted. */
  int32_t (*wait)(cs_dev_t *d, const cs_event_t *ev, uint64_t off);
  /* Orders: everything posted before lands before anything after. */
  void (*fence)(cs_dev_t *d, const cs_event_t *ev);
  /* A pipe barrier or DDR fence (ev->kind CS_EV_PIPE, CS_EV_DDR). NULL:
   * fence, which orders at least as much. */
  void (*order)(cs_dev_t *d, const cs_event_t *ev);
  /* Reads the int32 at `off` of the event's peer's window as the rank's
   * scalar unit would (through its cache, if it models one). NULL: a
   * 4-byte load. */
  int32_t (*read)(cs_dev_t *d, const cs_event_t *ev, uint64_t off);
  /* Cleans and invalidates the line holding `off` (ev->opcmp CS_DCCI_LINE)
   * or every line (CS_DCCI_ALL, off 0) of the rank's cache. NULL: the
   * transport caches nothing. */
  void (*dcci)(cs_dev_t *d, const cs_event_t *ev, uint64_t off);
  /* The rank's body returned (under a schedule: returned 0; a body that
   * failed keeps the turn until the abort, launch.c). NULL: nothing to
   * do. */
  void (*done)(cs_dev_t *d);
  /* The rank stops on a failure with exit code rx, the cause already in
   * the control block (abort_msg, st->reason): a transport whose ranks no
   * launcher watches reports it and ends the job here (MPI_Abort). Called
   * right before the rank's _exit(rx). NULL: nothing to do. */
  void (*stop)(cs_dev_t *d, int rx);
  /* 1: the rank's process handles SIGSEGV and SIGABRT itself (a
   * transport whose ranks no launcher watches names the rank and ends
   * the job), so an injected segv or abort fault raises the signal
   * through that handler. 0: the fault restores the default action
   * first, and the launcher reports the signal. */
  int crash_handled;
} cs_dev_ops_t;

/* cs_tile_t, the rank-private staging memory (the "UB"): collsim/device.h,
 * the public device API, whose prototypes this header's must match (both
 * are seen by every file that includes this one). */

struct cs_dev {
  cs_world_t        *world;    /* this process's mapping */
  cs_rankctx_t       ctx;      /* CommContext and all window bases */
  uint32_t           rank;     /* == ctx.abi.rankId */
  uint32_t           nranks;   /* == ctx.abi.rankNum */
  uint8_t           *mywin;    /* own window base */
  const cs_layout_t *layout;   /* == &world->ctl->layout */
  cs_rank_status_t  *st;       /* own status in the control block */
  uint64_t           nevents;  /* events begun so far */
  uint64_t           fault_at; /* event index of the injected fault, or UINT64_MAX */
  cs_fault_kind_t    fault_kind;
  uint32_t           spin_iters; /* pause iterations before sleeping */
  uint32_t           yield_iters; /* sched_yield rounds after the spin */
  uint64_t           timeout_ns;
  const cs_dev_ops_t *ops;     /* the transport */
  void              *tport;    /* the transport's own state, or NULL */
  void (*point)(cs_dev_t *, cs_event_t *); /* == ops->point, read on every event */
  int                direct;   /* == ops->direct */
  const cs_dev_hooks_t *hooks; /* NULL = no tracing */
  void              *hook_arg;
  const cs_event_t  *cur_ev;   /* event in progress, NULL between events
                                  (kept only with hooks) */
  uint64_t           hook_seq; /* scratch of the hooks (trace: pending seq) */
  uint32_t           tag_phase; /* algorithm position for traces: phase, */
  uint32_t           tag_round; /*   round or chunk, */
  uint32_t           tag_step;  /*   subchunk */
  uint32_t           controlled; /* every event waits for the scheduler */
  uint32_t           note_slot;  /* == world->ctl->note_slot, */
  uint32_t           note_cells; /*   ->note_cells (0: no notes), read per notify */
};

/* Prepares the device of `rank` in this (forked) process, with the
 * transport `ops`. Returns 0 or -ENOMEM. */
int cs_dev_init(cs_dev_t *d, cs_world_t *w, uint32_t rank,
                const cs_fault_t *fault, const cs_dev_ops_t *ops);
void cs_dev_fini(cs_dev_t *d);

/* For a rank body that cannot go on for a reason of its own (err: -errno
 * or CS_E*, e.g. -ENOMEM from allocating its tiles): records the cause,
 * which the launcher reports, and returns CS_RX_ERROR for the body to
 * return. */
int cs_dev_error(cs_dev_t *d, int err);

/* The headline of an injected hang into buf (n bytes): "rank R: hung
 * (injected fault) at event E for T s". Used by the hung rank and by the
 * launcher when another rank's timer fired first. */
void cs_dev_hang_str(char *buf, size_t n, uint32_t rank, uint64_t event,
                     uint64_t timeout_ns);

/* Slow paths of the choke point (not for algorithm code). */
void cs__dev_strike(cs_dev_t *d);
_Noreturn void cs__dev_aborted(cs_dev_t *d);
_Noreturn void cs__dev_fail(cs_dev_t *d, uint32_t reason, int rx,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

void cs__dev_begin_slow(cs_dev_t *d, cs_event_t *ev);

/* Whether no one looks at an event's record: no hooks and no scheduling
 * point (untraced free mode). Then an event is only numbered, and a call
 * whose effect needs no record (a reduce, a mark, a direct fence) may skip
 * filling one: cs__dev_count instead of cs__dev_begin and cs__dev_end. */
static inline int cs__dev_plain(const cs_dev_t *d)
{
  return __builtin_expect(((uintptr_t)d->hooks | (uintptr_t)d->point) == 0, 1);
}
/* The whole choke point of an event where cs__dev_plain(d): numbers it and
 * strikes an injected fault, exactly as cs__dev_begin does there. */
static inline void cs__dev_count(cs_dev_t *d)
{
  uint64_t index = d->nevents++;
  __atomic_store_n(&d->st->event, index, __ATOMIC_RELAXED);
  if (__builtin_expect(index == d->fault_at, 0))
    cs__dev_strike(d);
}
/* The choke point: every device-API call begins here. Untraced free mode
 * (cs__dev_plain) only numbers the event and looks for an injected fault;
 * traced free mode with no begin hook (the recorder's) also sets cur_ev;
 * the rest is cs__dev_begin_slow: cur_ev, the fault, the transport's
 * scheduling point, the begin hook, in that order. */
static inline void cs__dev_begin(cs_dev_t *d, cs_event_t *ev)
{
  ev->index = d->nevents++;
  __atomic_store_n(&d->st->event, ev->index, __ATOMIC_RELAXED);
  if (cs__dev_plain(d)) {
    if (__builtin_expect(ev->index == d->fault_at, 0))
      cs__dev_strike(d);
  } else if (!__atomic_load_n(&d->point, __ATOMIC_RELAXED) &&
             !__atomic_load_n(&d->hooks, __ATOMIC_RELAXED)->begin) {
    /* (point and hooks read again: reusing the test's loads would cost
     * the plain path two instructions per event) */
    d->cur_ev = ev;
    if (__builtin_expect(ev->index == d->fault_at, 0))
      cs__dev_strike(d);
  } else {
    cs__dev_begin_slow(d, ev);
  }
}
/* cur_ev never outlives its event: it lives in the caller's frame. */
static inline void cs__dev_end(cs_dev_t *d, const cs_event_t *ev,
                               int32_t observed)
{
  if (__builtin_expect(d->hooks != 0, 0)) {
    if (d->hooks->end)
      d->hooks->end(d, ev, observed, d->hook_arg);
    d->cur_ev = NULL;
  }
}
/* For transports: a wait found its condition false and starts blocking. */
static inline void cs__dev_block(cs_dev_t *d, const cs_event_t *ev,
                                 int32_t observed)
{
  if (__builtin_expect(d->hooks != 0, 0) && d->hooks->block)
    d->hooks->block(d, ev, observed, d->hook_arg);
}

/* cs_reduce_event's body, inline for the engine's own collectives: a
 * reduce event is one per chunk and peer, and with no kernel (the work
 * happened in a fused load) it is only the event's numbering. */
static inline void cs__dev_reduce(cs_dev_t *d, uint32_t op, uint32_t valid,
                                  void (*kernel)(void *arg), void *arg)
{
  if (cs__dev_plain(d)) {
    cs__dev_count(d);
    if (kernel)
      kernel(arg);
    return;
  }
  cs_event_t ev = {.kind = CS_EV_REDUCE, .peer = d->rank, .valid = valid,
                   .phys = valid, .opcmp = op};
  cs__dev_begin(d, &ev);
  if (kernel)
    kernel(arg);
  cs__dev_end(d, &ev, 0);
}

/* Whether a load's data can be consumed in place (cs_load_fused): only
 * where nothing else runs between events and memory is mapped. */
static inline int cs_dev_in_place(const cs_dev_t *d)
{
  return d->ops->view != 0;
}

/* cs_load, cs_store, cs_put, cs_notify, cs_wait, cs_fence, cs_reduce_event
 * and cs_mark are declared, with their contracts, in the public
 * include/collsim/device.h (included above); the engine's own calls
 * follow. */

/* Where cs_dev_in_place(d): a load whose `valid` elements are consumed in
 * place instead of copied into a tile: `consume(acc, src, valid, arg)` runs
 * on the window memory inside the load event (bounds-checked and traced
 * exactly like cs_load). Saves a pass over the data when the next step is
 * a reduce; elsewhere (controlled mode, where other actors run between
 * events) use cs_load. */
void cs_load_fused(cs_dev_t *d, cs_tile_t *acc, uint32_t peer, uint32_t slot,
                   uint64_t elem_off, uint32_t valid, uint32_t phys,
                   void (*consume)(cs_tile_t *acc, const void *src,
                                   uint32_t n, const void *arg),
                   const void *arg);

/* Tags later events with subchunk/chunk `step` (no event, no cost to
 * speak of). */
static inline void cs_dev_step(cs_dev_t *d, uint32_t step)
{
  d->tag_step = step;
}

/* Address of element `elem_off` of `slot` in `peer`'s window, through the
 * CommContext translation; no event, no check (for the launcher/tests). */
static inline void *cs_dev_addr(const cs_dev_t *d, uint32_t peer,
                                uint32_t slot, uint64_t elem_off)
{
  const cs_slot_t *s = &d->layout->slot[slot];
  uint8_t *local = d->mywin + s->off + elem_off * s->esize;
  return cs_win_remote(&d->ctx, local, peer);
}

/* The op of a put record (opcmp): 0 a plain put, 1 + cs_op_t a reducing
 * put (cs_put_reduce), whose landing adds into its destination. */
static inline int cs__dev_put_reduces(uint32_t opcmp)
{
  return (opcmp & 0x7fu) != 0;
}

/* dst[i] += src[i] for i < n, fp32, atomic per element: a compare-and-swap
 * loop on each element's bit pattern, so a concurrent reducing put into
 * the same element loses neither addition (round to nearest even, as one
 * C float addition). Unaligned or overlapping memory is the caller's
 * fault. */
static inline void cs__dev_add_f32(void *dst, const void *src, uint32_t n)
{
  uint32_t *d = dst;
  const float *s = src;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t old = __atomic_load_n(&d[i], __ATOMIC_RELAXED), want;
    do {
      float f;
      __builtin_memcpy(&f, &old, 4);
      f += s[i];
      __builtin_memcpy(&want, &f, 4);
    } while (!__atomic_compare_exchange_n(&d[i], &old, want, 1,
                                          __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  }
}

/* Current time, CLOCK_MONOTONIC, ns. */
uint64_t cs_now_ns(void);

#endif
