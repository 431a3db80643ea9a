/*
 * test_verify.c - the reduction of `collsim verify` (sim/dpor.h) held to
 * brute force: small device-API programs on real forked ranks, every
 * schedule enumerated by a plain depth-first walk of the scheduler's
 * choices (the walk of test_litmus.c, written here again, sharing no code
 * with the explorer), and the set of outcomes (every rank's registers and
 * a hash of every window after the run) the explorer reaches must equal
 * the brute force's, with no more runs. A planted wrong relation (every
 * two events independent) must miss outcomes, so the comparison can fail.
 * The CLI's own agreement on collectives is in the tests after them,
 * which run collsim verify.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <unistd.h>

#include "../sim/dpor.h"
#include "../sim/launch.h"
#include "../sim/sched.h"
#include "harness.h"

enum { DATA = 0, FLAG = 1 };
#define CELLS 32u
#define NREG 4
#define MAXSTEPS 512
#define MAXOUT 64

static int32_t (*regs)[NREG];

typedef struct prog {
  const char *name;
  uint32_t nranks;
  int (*body)(cs_dev_t *d, void *arg);
  int big; /* thousands of schedules: COLLSIM_QUICK compares it under
              relaxed only */
} prog_t;

/* ---------------------------------------------------------- helpers */

static void put1(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell,
                 int32_t v)
{
  cs_tile_t t;
  cr_assert_eq(cs_tile_init(&t, 4, 16), 0);
  ((int32_t *)t.buf)[0] = v;
  ((int32_t *)t.buf)[1] = v + 10;
  if (peer == cs_dev_rank(d))
    cs_store(d, &t, slot, cell, 2);
  else
    cs_put(d, &t, peer, slot, cell, 2);
  cs_tile_fini(&t);
}

static int32_t load1(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell)
{
  cs_tile_t t;
  cr_assert_eq(cs_tile_init(&t, 4, 16), 0);
  cs_load(d, &t, peer, slot, cell, 1, 1);
  int32_t v = ((int32_t *)t.buf)[0];
  cs_tile_fini(&t);
  return v;
}

#define ME(d) cs_dev_rank(d)

/* Set before a comparison opens its bed (the ranks fork from it): the
 * waits whose value a program ignores go through cs_wait_until, which
 * verify reorders with the adds >= 0 they do not need. */
static int quiet;

static void wait_ge(cs_dev_t *d, uint32_t cell, int32_t v)
{
  if (quiet)
    cs_wait_until(d, FLAG, cell, CS_CMP_GE, v);
  else
    cs_wait(d, FLAG, cell, CS_CMP_GE, v);
}

/* ---------------------------------------------------------- programs */

/* Message passing without a fence: put; notify || wait; load. */
static int mp(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 1) {
    wait_ge(d, 0, 1);
    regs[1][0] = load1(d, 1, DATA, 0);
    return 0;
  }
  put1(d, 1, DATA, 0, 1);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* The same with a fence between put and notify. */
static int mp_fence(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 1) {
    wait_ge(d, 0, 1);
    regs[1][0] = load1(d, 1, DATA, 0);
    return 0;
  }
  put1(d, 1, DATA, 0, 1);
  cs_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* Two adders of one cell of rank 2; rank 2 keeps what its wait saw. */
static int wait_value(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) < 2) {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1 + (int32_t)ME(d));
    return 0;
  }
  regs[2][0] = cs_wait(d, FLAG, 0, CS_CMP_GE, 1);
  regs[2][1] = cs_read_cell(d, 2, FLAG, 0);
  return 0;
}

/* Set and Add on one cell, and a reader of it. */
static int set_add_read(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 0)
    cs_notify(d, 1, FLAG, 3, CS_NOTIFY_SET, 5);
  else
    cs_notify(d, 1, FLAG, 3, CS_NOTIFY_ADD, 2);
  if (ME(d) == 1)
    regs[1][0] = cs_read_cell(d, 1, FLAG, 3);
  return 0;
}

/* Overlapping puts of two writers into rank 2; rank 2 loads both cells
 * once a flag says one of them is done. */
static int overlap(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) < 2) {
    put1(d, 2, DATA, ME(d), 1 + (int32_t)ME(d)); /* cells [r, r+2) */
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
    return 0;
  }
  wait_ge(d, 0, 1);
  regs[2][0] = load1(d, 2, DATA, 0);
  regs[2][1] = load1(d, 2, DATA, 1);
  regs[2][2] = load1(d, 2, DATA, 2);
  return 0;
}

/* Disjoint puts, then loads of one's own and the other's cell: many
 * schedules, few classes. */
static int independent(cs_dev_t *d, void *a)
{
  (void)a;
  uint32_t me = ME(d), other = 1 - me;
  put1(d, me, DATA, 4 * me, 7);
  put1(d, other, DATA, 8 + 4 * me, 9);
  regs[me][0] = load1(d, me, DATA, 8 + 4 * other);
  return 0;
}

/* A store of one's own, and a load of it with no fence. */
static int own(cs_dev_t *d, void *a)
{
  (void)a;
  put1(d, ME(d), DATA, 0, 1);
  regs[ME(d)][0] = load1(d, ME(d), DATA, 0);
  regs[ME(d)][1] = load1(d, 1 - ME(d), DATA, 1);
  return 0;
}

/* A wait for == 1 that later adds can make false: whoever gets there. */
static int wait_eq(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 2) {
    regs[2][0] = cs_wait(d, FLAG, 0, CS_CMP_GE, 1);
    regs[2][1] = load1(d, 2, DATA, 0);
    return 0;
  }
  if (ME(d) == 0) {
    put1(d, 2, DATA, 0, 3);
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
  } else {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
    put1(d, 2, DATA, 1, 4);
  }
  return 0;
}

/* A wait whose value is unused and two adders: rank 0
 * puts data, fences and adds 1, rank 1 adds 1; rank 2 waits for >= 1 and
 * loads the data: whether it sees it depends on which add let it go. */
static int quiet_wait(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 2) {
    wait_ge(d, 0, 1);
    regs[2][0] = load1(d, 2, DATA, 0);
    regs[2][1] = cs_read_cell(d, 2, FLAG, 0);
    return 0;
  }
  if (ME(d) == 0) {
    put1(d, 2, DATA, 0, 3);
    cs_fence(d);
  }
  cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* The same with a subtraction: rank 0 adds 2, rank 1 adds -1 then 1;
 * rank 2 waits for >= 2 and reads the cell: the wait can pass after the
 * 2 alone, or after all three, never after 2 and -1. */
static int quiet_wait_sub(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 2) {
    wait_ge(d, 0, 2);
    regs[2][0] = cs_read_cell(d, 2, FLAG, 0);
    return 0;
  }
  if (ME(d) == 0) {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 2);
    return 0;
  }
  cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, -1);
  cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* Two adds of rank 1 and one of rank 0 after its data: rank 2 waits for
 * >= 2 and loads the data. The wait can pass on rank 1's two adds alone
 * (the data may be missing) or on rank 0's and one of rank 1's. */
static int quiet_two_adds(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 2) {
    wait_ge(d, 0, 2);
    regs[2][0] = load1(d, 2, DATA, 0);
    return 0;
  }
  if (ME(d) == 0) {
    put1(d, 2, DATA, 0, 3);
    cs_fence(d);
  } else {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
  }
  cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* A Set among the writes: rank 0 puts data, fences and adds 2, rank 1
 * Sets the cell to 2; rank 2 waits for >= 2, loads the data and reads
 * the cell. The Set alone can let the wait go (no data), and it can undo
 * the add (2, not 4): a wait behind a Set keeps every write ordered. */
static int quiet_wait_set(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 2) {
    wait_ge(d, 0, 2);
    regs[2][0] = load1(d, 2, DATA, 0);
    regs[2][1] = cs_read_cell(d, 2, FLAG, 0);
    return 0;
  }
  if (ME(d) == 0) {
    put1(d, 2, DATA, 0, 3);
    cs_fence(d);
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_ADD, 2);
  } else {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_SET, 2);
  }
  return 0;
}

/* Two calls' worth of one cell, as the built-ins' self-clearing epilogue
 * leaves it: rank 0 puts, fences and adds 1, then puts again without a
 * fence and adds 1; rank 1 waits for >= 1, loads, adds -1 to its own cell
 * and waits for >= 1 again, then loads the second put (under relaxed it
 * may not have landed). Its second wait stands behind a negative add. */
static int quiet_epilogue(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 1) {
    wait_ge(d, 0, 1);
    regs[1][0] = load1(d, 1, DATA, 0);
    cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, -1);
    wait_ge(d, 0, 1);
    regs[1][1] = load1(d, 1, DATA, 4);
    return 0;
  }
  put1(d, 1, DATA, 0, 3);
  cs_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  put1(d, 1, DATA, 4, 5);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

/* ------------------------------------------ a2a3: lines, pipe, caches */

/* Set notifies into one 64-byte line (flag cells 0 and 1 share one; 16 is
 * on the next): rank 0 Sets rank 1's f0 and f16, rank 1 Sets its own f1,
 * then reads f0 and f16 through its cache. On a2a3 a Set writes back its
 * whole line and can undo the other's cell. */
static int set_line(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 0) {
    cs_notify(d, 1, FLAG, 0, CS_NOTIFY_SET, 1);
    cs_notify(d, 1, FLAG, 16, CS_NOTIFY_SET, 3);
    return 0;
  }
  cs_notify(d, 1, FLAG, 1, CS_NOTIFY_SET, 2);
  regs[1][0] = cs_read_cell(d, 1, FLAG, 0);
  regs[1][1] = cs_read_cell(d, 1, FLAG, 16);
  return 0;
}

/* A Set and an Add into one line of rank 2, an Add on another line that
 * rank 2 waits for; rank 2 then reads both cells of the first line. */
static int set_add_line(cs_dev_t *d, void *a)
{
  (void)a;
  if (ME(d) == 0) {
    cs_notify(d, 2, FLAG, 0, CS_NOTIFY_SET, 5);
    return 0;
  }
  if (ME(d) == 1) {
    cs_notify(d, 2, FLAG, 1, CS_NOTIFY_ADD, 2);
    cs_notify(d, 2, FLAG, 16, CS_NOTIFY_ADD, 1);
    return 0;
  }
  wait_ge(d, 16, 1);
  regs[2][0] = cs_read_cell(d, 2, FLAG, 0);
  regs[2][1] = cs_read_cell(d, 2, FLAG, 1);
  return 0;
}

/* Message passing with half a fence: put; pipe barrier [; DDR fence];
 * notify || wait; load. Drained is not visible: without the DDR fence
 * the load may see the old value. */
static int mp_drain_body(cs_dev_t *d, int ddr)
{
  if (ME(d) == 1) {
    wait_ge(d, 0, 1);
    regs[1][0] = load1(d, 1, DATA, 0);
    return 0;
  }
  put1(d, 1, DATA, 0, 1);
  cs_pipe_barrier(d);
  if (ddr)
    cs_ddr_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}
static int mp_drain(cs_dev_t *d, void *a) { (void)a; return mp_drain_body(d, 0); }
static int mp_drain_ddr(cs_dev_t *d, void *a) { (void)a; return mp_drain_body(d, 1); }

/* PTOAS #706: rank 0 stores its data cell 0, [drains,] then puts it to
 * rank 1 as the device's TPUT does (a load of the source, a put of the
 * tile), fences and notifies; rank 1 waits and loads what arrived. */
static int putsrc_body(cs_dev_t *d, int drain)
{
  if (ME(d) == 1) {
    wait_ge(d, 0, 1);
    regs[1][0] = load1(d, 1, DATA, 4);
    return 0;
  }
  put1(d, 0, DATA, 0, 1);
  if (drain)
    cs_pipe_barrier(d);
  put1(d, 1, DATA, 4, load1(d, 0, DATA, 0));
  cs_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}
static int putsrc(cs_dev_t *d, void *a) { (void)a; return putsrc_body(d, 0); }
static int putsrc_drain(cs_dev_t *d, void *a) { (void)a; return putsrc_body(d, 1); }

/* A stale cached line: rank 0 notifies rank 1's f0, fences, notifies its
 * f16; rank 1 reads f0, waits for f16, [dcci f0's line,] reads f0 again. */
static int stale_body(cs_dev_t *d, int dcci)
{
  if (ME(d) == 0) {
    cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
    cs_fence(d);
    cs_notify(d, 1, FLAG, 16, CS_NOTIFY_ADD, 1);
    return 0;
  }
  regs[1][0] = cs_read_cell(d, 1, FLAG, 0);
  wait_ge(d, 16, 1);
  if (dcci)
    cs_dcci(d, 1, FLAG, 0);
  regs[1][1] = cs_read_cell(d, 1, FLAG, 0);
  return 0;
}
static int stale(cs_dev_t *d, void *a) { (void)a; return stale_body(d, 0); }
static int stale_dcci(cs_dev_t *d, void *a) { (void)a; return stale_body(d, 1); }

/* Each rank Sets a cell of the other's, on a line of its own (rank 0 the
 * line of cell 0, rank 1 that of cell 16), and reads the cell the other
 * Sets in its window: no line shared by two writers. */
static int lines_apart(cs_dev_t *d, void *a)
{
  (void)a;
  uint32_t me = ME(d), other = 1 - me;
  cs_notify(d, other, FLAG, 16 * me, CS_NOTIFY_SET, 1 + (int32_t)me);
  regs[me][0] = cs_read_cell(d, me, FLAG, 16 * other);
  return 0;
}

static const prog_t progs[] = {
  {"MP", 2, mp, 0},
  {"MP+fence", 2, mp_fence, 0},
  {"WAIT-VALUE", 3, wait_value, 0},
  {"SET+ADD+READ", 2, set_add_read, 0},
  {"OVERLAP", 3, overlap, 1},
  {"INDEPENDENT", 2, independent, 1},
  {"OWN", 2, own, 0},
  {"WAIT-RACE", 3, wait_eq, 1},
  {"QUIET-WAIT", 3, quiet_wait, 0},
  {"QUIET-WAIT-SUB", 3, quiet_wait_sub, 0},
  {"QUIET-TWO-ADDS", 3, quiet_two_adds, 0},
  {"QUIET-WAIT-SET", 3, quiet_wait_set, 0},
};
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

/* Where a2a3's own rules matter (each also run under the other models). */
static const prog_t a2a3_progs[] = {
  {"SET-LINE", 2, set_line, 0},
  {"SET+ADD-LINE", 3, set_add_line, 0},
  {"MP+drain", 2, mp_drain, 0},
  {"MP+drain+ddr", 2, mp_drain_ddr, 0},
  {"STALE", 2, stale, 0},
  {"STALE+dcci", 2, stale_dcci, 0},
  {"LINES-APART", 2, lines_apart, 0},
  {"PUTSRC", 2, putsrc, 0},
  {"PUTSRC+drain", 2, putsrc_drain, 0},
};
#define NA2A3 (sizeof(a2a3_progs) / sizeof(a2a3_progs[0]))

/* Run with quiet waits only (agree_quiet()). */
static const prog_t quiet_progs[] = {
  {"QUIET-EPILOGUE", 2, quiet_epilogue, 0},
};
#define NQUIET (sizeof(quiet_progs) / sizeof(quiet_progs[0]))

/* ------------------------------------------------- brute force */

typedef struct dfs {
  uint32_t plen, pre[MAXSTEPS], taken[MAXSTEPS], width[MAXSTEPS], len;
  int bad;
  int64_t unlanded; /* posts minus landings in this run */
} dfs_t;

/* Whether the chosen actor posts (counted up) or lands (down): a run
 * that ends with a post never landed lost a step in the engine and is
 * run again (see the note in docs/verify.md). */
static int64_t posts_minus_lands(cs_mm_t m, const cs_sched_actor_view_t *a)
{
  if (a->op >= 0)
    return -1;
  uint32_t k = a->rec.kind;
  return m != CS_MM_SC && (k == CS_EV_STORE || k == CS_EV_PUT ||
                           k == CS_EV_NOTIFY);
}

static cs_mm_t dfs_model;

static int64_t dfs_pick(const cs_sched_view_t *v, void *arg)
{
  dfs_t *s = arg;
  uint64_t i = v->step;
  if (i >= MAXSTEPS) {
    s->bad = 1;
    return -1;
  }
  uint32_t c = i < s->plen ? s->pre[i] : 0;
  if (c >= v->nenabled) {
    s->bad = 1;
    return -1;
  }
  s->taken[i] = c;
  s->width[i] = v->nenabled;
  s->unlanded += posts_minus_lands(dfs_model, &v->en[c]);
  s->len = (uint32_t)i + 1;
  return c;
}

static int dfs_next(dfs_t *s)
{
  int64_t j = (int64_t)s->len - 1;
  while (j >= 0 && s->taken[j] + 1 >= s->width[j])
    j--;
  if (j < 0)
    return 0;
  memcpy(s->pre, s->taken, (size_t)j * sizeof(s->pre[0]));
  s->pre[j] = s->taken[j] + 1;
  s->plen = (uint32_t)j + 1;
  return 1;
}

/* ------------------------------------------------- one world, many runs */

typedef struct outs {
  char o[MAXOUT][160];
  uint32_t n;
} outs_t;

typedef struct bed {
  cs_world_t w;
  cs_layout_t l;
  cs_world_opts_t wo;
  cs_launch_pool_t *pool;
  FILE *rep;
  uint32_t n;
} bed_t;

static void bed_open(bed_t *b, uint32_t n)
{
  memset(b, 0, sizeof(*b));
  b->n = n;
  cs_layout_init(&b->l, 64);
  cs_layout_add(&b->l, "data", CELLS * 4, 4);
  cs_layout_add(&b->l, "flag", CELLS * 4, 4);
  b->wo = (cs_world_opts_t){.io_bytes = 4096, .timeout_ns = 10000000000ull,
                            .sched_bytes = cs_sched_area_bytes(n, 4096)};
  cr_assert_eq(cs_world_create(&b->w, &b->l, n, &b->wo), 0);
  cr_assert_eq(cs_launch_pool_open(&b->pool, n), 0);
  b->rep = tmpfile();
  cr_assert_not_null(b->rep);
}

static void bed_close(bed_t *b)
{
  fclose(b->rep);
  cs_launch_pool_close(b->pool);
  cs_world_destroy(&b->w);
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The outcome of the run just done: registers, a hash of each window's
 * two slots (data, then flag: the first 2 x CELLS x 4 bytes). */
static void outcome(const bed_t *b, outs_t *o)
{
  char buf[160];
  int k = 0;
  for (uint32_t r = 0; r < b->n; r++) {
    k += snprintf(buf + k, sizeof(buf) - (size_t)k, "%d,%d,%d/%llx ",
                  regs[r][0], regs[r][1], regs[r][2],
                  (unsigned long long)(fnv(cs_world_window(&b->w, r),
                                           2 * CELLS * 4) & 0xffffff));
  }
  for (uint32_t i = 0; i < o->n; i++)
    if (!strcmp(o->o[i], buf))
      return;
  cr_assert_lt(o->n, MAXOUT);
  snprintf(o->o[o->n++], sizeof(o->o[0]), "%s", buf);
}

/* One run with picker f, on a fresh state; returns cs_launch's code. */
static int run_once(bed_t *b, const prog_t *p, cs_mm_t m, cs_sched_pick_fn f,
                    void *arg)
{
  cs_sched_cfg_t sc = {.strategy = CS_SCHED_CALLBACK, .model = m,
                       .pick_fn = f, .pick_arg = arg};
  cs_launch_opts_t lo = {.report = b->rep, .sched = &sc, .pool = b->pool};
  cs_launch_result_t res;
  if (cs_launch_pool_alive(b->pool)) {
    cs_launch_pool_reset(b->pool, &b->w);
  } else { /* a fresh world after a run that did not end cleanly */
    cs_world_destroy(&b->w);
    cr_assert_eq(cs_world_create(&b->w, &b->l, b->n, &b->wo), 0);
  }
  memset(regs, 0, 4096);
  return cs_launch(&b->w, p->body, NULL, &lo, &res);
}

static uint64_t brute(const prog_t *p, cs_mm_t m, outs_t *o)
{
  bed_t b;
  bed_open(&b, p->nranks);
  static dfs_t s;
  memset(&s, 0, sizeof(s));
  uint64_t runs = 0;
  dfs_model = m;
  do {
    int rc, tries = 0;
    do {
      s.len = 0;
      s.unlanded = 0;
      rc = run_once(&b, p, m, dfs_pick, &s); /* lost a step: again */
    } while (s.unlanded && ++tries < 5);
    cr_assert(!s.bad && rc == 0 && !s.unlanded, "%s/%s: brute-force run "
              "%llu failed", p->name, cs_mm_name(m), (unsigned long long)runs);
    outcome(&b, o);
    runs++;
  } while (dfs_next(&s));
  bed_close(&b);
  return runs;
}

static cs_dpor_stats_t reduced(const prog_t *p, cs_mm_t m, cs_dpor_mode_t mode,
                               outs_t *o)
{
  bed_t b;
  bed_open(&b, p->nranks);
  cs_dpor_t *x;
  cr_assert_eq(cs_dpor_create(&x, m, mode), 0);
  while (cs_dpor_next(x) == 1) {
    int rc = run_once(&b, p, m, cs_dpor_pick, x);
    const char *why;
    int d = cs_dpor_done(x, &why);
    for (int tries = 0; d == -EAGAIN && tries < 5; tries++) {
      cs_dpor_retry(x);
      rc = run_once(&b, p, m, cs_dpor_pick, x);
      d = cs_dpor_done(x, &why);
    }
    cr_assert(d >= 0, "%s/%s: %s", p->name, cs_mm_name(m), why ? why : "?");
    cr_assert_eq(rc, 0, "%s/%s: run failed", p->name, cs_mm_name(m));
    outcome(&b, o);
  }
  cs_dpor_stats_t st = cs_dpor_stats(x);
  cs_dpor_destroy(x);
  bed_close(&b);
  return st;
}

/* One run of explorer x and its verdict for the search (a lost step is
 * run again). */
static int run_dpor(bed_t *b, const prog_t *p, cs_mm_t m, cs_dpor_t *x,
                    outs_t *o)
{
  int rc = run_once(b, p, m, cs_dpor_pick, x);
  const char *why;
  int d = cs_dpor_done(x, &why);
  for (int tries = 0; d == -EAGAIN && tries < 5; tries++) {
    cs_dpor_retry(x);
    rc = run_once(b, p, m, cs_dpor_pick, x);
    d = cs_dpor_done(x, &why);
  }
  cr_assert(d >= 0, "%s/%s: %s", p->name, cs_mm_name(m), why ? why : "?");
  cr_assert_eq(rc, 0, "%s/%s: run failed", p->name, cs_mm_name(m));
  outcome(b, o);
  return d;
}

/* The search split as collsim verify -j N splits it, its N workers
 * simulated in one process: each active worker takes one run in turn,
 * its races above its subtree go to the coordinator at once, and an idle
 * worker takes the next open branch. Returns the summed counts. */
static cs_dpor_stats_t split(const prog_t *p, cs_mm_t m, uint32_t nw,
                             outs_t *o)
{
  enum { MAXW = 4 };
  bed_t b;
  bed_open(&b, p->nranks);
  cs_dpor_t *x, *w[MAXW] = {0};
  uint64_t id[MAXW];
  cr_assert_eq(cs_dpor_create(&x, m, CS_DPOR_REDUCE), 0);
  cr_assert_eq(cs_dpor_next(x), 1);
  run_dpor(&b, p, m, x, o);
  cs_dpor_stats_t st = cs_dpor_stats(x);
  for (;;) {
    int busy = 0, fin = 0;
    for (uint32_t k = 0; k < nw; k++) {
      if (!w[k]) {
        void *buf;
        size_t len;
        int t = cs_dpor_task_take(x, &buf, &len, &id[k]);
        cr_assert_geq(t, -1);
        fin = t < 0;
        if (t == 1) {
          cr_assert_eq(cs_dpor_create_sub(&w[k], m, CS_DPOR_REDUCE, buf,
                                          len), 0);
          free(buf);
        }
      }
      if (!w[k])
        continue;
      busy = 1;
      if (cs_dpor_next(w[k]) != 1) {
        cs_dpor_stats_t s = cs_dpor_stats(w[k]);
        st.executions += s.executions;
        st.classes += s.classes;
        st.blocked += s.blocked;
        cs_dpor_destroy(w[k]);
        w[k] = NULL;
        cs_dpor_task_done(x, id[k]);
        continue;
      }
      run_dpor(&b, p, m, w[k], o);
      size_t len;
      const void *rep = cs_dpor_reports(w[k], &len);
      cr_assert_eq(cs_dpor_apply(x, rep, len), 0);
    }
    if (!busy) {
      cr_assert(fin, "%s/%s: no task out and none open, yet not finished",
                p->name, cs_mm_name(m));
      break;
    }
  }
  cs_dpor_destroy(x);
  bed_close(&b);
  return st;
}

static int same(const outs_t *a, const outs_t *b)
{
  if (a->n != b->n)
    return 0;
  for (uint32_t i = 0; i < a->n; i++) {
    int found = 0;
    for (uint32_t j = 0; j < b->n && !found; j++)
      found = !strcmp(a->o[i], b->o[j]);
    if (!found)
      return 0;
  }
  return 1;
}

static void setup(void)
{
  regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
  cr_assert_neq(regs, MAP_FAILED);
}

/* Every program of ps under model m: the reduced search reaches exactly
 * the brute force's outcomes in no more runs. COLLSIM_QUICK (the clang
 * and sanitizer stages of CI) brute-forces the big programs under relaxed
 * only. */
static void agree_on(cs_mm_t m, const prog_t *ps, size_t n)
{
  setup();
  for (size_t i = 0; i < n; i++) {
    if (ps[i].big && m != CS_MM_RELAXED && quick_tests())
      continue;
    outs_t bo = {0}, ro = {0};
    uint64_t runs = brute(&ps[i], m, &bo);
    cs_dpor_stats_t st = reduced(&ps[i], m, CS_DPOR_REDUCE, &ro);
    cr_expect(same(&bo, &ro), "%s under %s: brute force %u outcomes, "
              "verify %u", ps[i].name, cs_mm_name(m), bo.n, ro.n);
    for (uint32_t k = 0; k < bo.n && !same(&bo, &ro); k++)
      cr_log_info("  brute: %s", bo.o[k]);
    for (uint32_t k = 0; k < ro.n && !same(&bo, &ro); k++)
      cr_log_info("  verify: %s", ro.o[k]);
    cr_expect_leq(st.executions, runs, "%s under %s", ps[i].name,
                  cs_mm_name(m));
    cr_expect_eq(st.executions, st.classes + st.blocked);
    cr_log_info("%-13s %-7s brute %4llu runs %2u outcomes; verify %llu "
                "classes %llu executions", ps[i].name, cs_mm_name(m),
                (unsigned long long)runs, bo.n,
                (unsigned long long)st.classes,
                (unsigned long long)st.executions);
  }
}

static void agree(cs_mm_t m)
{
  agree_on(m, progs, NPROGS);
  agree_on(m, a2a3_progs, NA2A3);
}

/* The same with every wait whose value is unused quiet (cs_wait_until):
 * the independence of a Ge wait and the adds >= 0 it does not need
 * (docs/verify.md, "Waits") held to the brute force. */
static void agree_quiet(cs_mm_t m)
{
  quiet = 1;
  agree_on(m, progs, NPROGS);
  agree_on(m, a2a3_progs, NA2A3);
  agree_on(m, quiet_progs, NQUIET);
  quiet = 0;
}

Test(verify, sc_agrees_with_brute_force, .timeout = 600) { agree(CS_MM_SC); }
Test(verify, fifo_agrees_with_brute_force, .timeout = 600) { agree(CS_MM_FIFO); }
Test(verify, relaxed_agrees_with_brute_force, .timeout = 600) { agree(CS_MM_RELAXED); }
Test(verify, a2a3_agrees_with_brute_force, .timeout = 900) { agree(CS_MM_A2A3); }
Test(verify, quiet_sc_agrees_with_brute_force, .timeout = 600)
{
  agree_quiet(CS_MM_SC);
}
Test(verify, quiet_fifo_agrees_with_brute_force, .timeout = 600)
{
  agree_quiet(CS_MM_FIFO);
}
Test(verify, quiet_relaxed_agrees_with_brute_force, .timeout = 600)
{
  agree_quiet(CS_MM_RELAXED);
}

/* The teeth: with every two events called independent, the search runs
 * one schedule per program and misses outcomes the brute force reaches. */
Test(verify, a_planted_unsound_relation_is_caught, .timeout = 600)
{
  setup();
  uint32_t missed = 0;
  for (size_t i = 0; i < NPROGS; i++) {
    outs_t bo = {0}, ro = {0};
    brute(&progs[i], CS_MM_RELAXED, &bo);
    reduced(&progs[i], CS_MM_RELAXED, CS_DPOR_UNSOUND, &ro);
    missed += !same(&bo, &ro);
  }
  cr_assert_geq(missed, NPROGS - 3, "the comparison caught only %u of %zu",
                missed, NPROGS);
}

/* The teeth under a2a3: the relation of relaxed (bytes and cells, a post
 * independent of its rank's earlier landings) is too fine for a2a3's
 * lines, caches and drains, and the a2a3 programs catch it. */
Test(verify, a_relation_blind_to_lines_is_caught_under_a2a3, .timeout = 600)
{
  setup();
  uint32_t missed = 0;
  for (size_t i = 0; i < NA2A3; i++) {
    outs_t bo = {0}, ro = {0};
    brute(&a2a3_progs[i], CS_MM_A2A3, &bo);
    reduced(&a2a3_progs[i], CS_MM_A2A3, CS_DPOR_CELLS, &ro);
    if (!same(&bo, &ro))
      cr_log_info("%s: brute force %u outcomes, the cell relation %u",
                  a2a3_progs[i].name, bo.n, ro.n);
    missed += !same(&bo, &ro);
  }
  cr_assert_geq(missed, 2, "only %u a2a3 programs told lines from cells "
                "(SET-LINE and SET+ADD-LINE must: two writers share a line)",
                missed);
}

/* The teeth of the quiet rule (docs/verify.md, "Waits"): with a quiet
 * wait independent of every add after it, even of one that could stand in
 * for an add the wait needed, the search misses outcomes of the programs
 * where which add lets the wait go decides what it loads. */
static uint32_t quiet_missed(cs_dpor_mode_t mode)
{
  static const cs_mm_t ms[] = {CS_MM_SC, CS_MM_FIFO, CS_MM_RELAXED};
  setup();
  quiet = 1;
  uint32_t missed = 0;
  for (size_t i = 0; i < NPROGS; i++) {
    if (strncmp(progs[i].name, "QUIET-", 6))
      continue;
    for (size_t k = 0; k < 3; k++) {
      outs_t bo = {0}, ro = {0};
      brute(&progs[i], ms[k], &bo);
      reduced(&progs[i], ms[k], mode, &ro);
      if (!same(&bo, &ro))
        cr_log_info("%s under %s: brute force %u outcomes, the planted rule "
                    "%u", progs[i].name, cs_mm_name(ms[k]), bo.n, ro.n);
      missed += !same(&bo, &ro);
    }
  }
  quiet = 0;
  return missed;
}

Test(verify, a_quiet_wait_free_of_every_later_add_is_caught, .timeout = 600)
{
  uint32_t missed = quiet_missed(CS_DPOR_QUIET_LOOSE);
  cr_assert_geq(missed, 4, "the loose rule missed %u outcome sets (QUIET-WAIT "
                "and QUIET-TWO-ADDS under fifo and relaxed must miss)", missed);
}

/* The same for sleep sets: a quiet wait kept asleep past an add blocks
 * the run where the add comes first, which the race of an add the wait
 * needed can only be reversed from. */
Test(verify, a_quiet_wait_asleep_past_an_add_is_caught, .timeout = 600)
{
  uint32_t missed = quiet_missed(CS_DPOR_QUIET_SLEEP);
  cr_assert_geq(missed, 4, "the planted sleep sets missed %u outcome sets "
                "(QUIET-WAIT and QUIET-TWO-ADDS under fifo and relaxed must "
                "miss)", missed);
}

/* The reduction saves runs where events are independent. */
Test(verify, disjoint_events_take_fewer_runs, .timeout = 300)
{
  setup();
  outs_t bo = {0}, ro = {0};
  uint64_t runs = brute(&progs[5], CS_MM_FIFO, &bo);
  cs_dpor_stats_t st = reduced(&progs[5], CS_MM_FIFO, CS_DPOR_REDUCE, &ro);
  cr_assert(same(&bo, &ro));
  cr_assert_lt(st.executions * 2, runs, "%llu executions vs %llu schedules",
               (unsigned long long)st.executions, (unsigned long long)runs);
}

/* The split search (-j 2 and -j 3, simulated): the outcomes the brute
 * force reaches, on every program and model, and those of the serial
 * search, with no more runs than the brute force. */
static void split_agrees(cs_mm_t m)
{
  setup();
  for (size_t i = 0; i < NPROGS + NA2A3 + (quiet ? NQUIET : 0); i++) {
    const prog_t *p = i < NPROGS           ? &progs[i]
                      : i < NPROGS + NA2A3 ? &a2a3_progs[i - NPROGS]
                                           : &quiet_progs[i - NPROGS - NA2A3];
    if (p->big && (quick_tests() || quiet))
      continue;
    outs_t bo = {0}, so = {0};
    uint64_t runs = brute(p, m, &bo);
    reduced(p, m, CS_DPOR_REDUCE, &so);
    cr_expect(same(&bo, &so), "%s/%s: serial", p->name, cs_mm_name(m));
    for (uint32_t nw = 2; nw <= 3; nw++) {
      outs_t po = {0};
      cs_dpor_stats_t st = split(p, m, nw, &po);
      cr_expect(same(&bo, &po), "%s under %s, -j %u: brute force %u "
                "outcomes, the split search %u", p->name, cs_mm_name(m), nw,
                bo.n, po.n);
      cr_expect_leq(st.executions, runs, "%s under %s, -j %u", p->name,
                    cs_mm_name(m), nw);
      cr_log_info("%-13s %-7s -j %u: %llu classes %llu executions (brute "
                  "%llu)", p->name, cs_mm_name(m), nw,
                  (unsigned long long)st.classes,
                  (unsigned long long)st.executions,
                  (unsigned long long)runs);
    }
  }
}

Test(verify, split_sc_agrees_with_brute_force, .timeout = 900) { split_agrees(CS_MM_SC); }
/* The split with quiet waits (the big programs left out). */
Test(verify, split_quiet_agrees_with_brute_force, .timeout = 900)
{
  quiet = 1;
  split_agrees(CS_MM_SC);
  split_agrees(CS_MM_FIFO);
  split_agrees(CS_MM_RELAXED);
  quiet = 0;
}
Test(verify, split_fifo_agrees_with_brute_force, .timeout = 900) { split_agrees(CS_MM_FIFO); }
Test(verify, split_relaxed_agrees_with_brute_force, .timeout = 900) { split_agrees(CS_MM_RELAXED); }
Test(verify, split_a2a3_agrees_with_brute_force, .timeout = 900) { split_agrees(CS_MM_A2A3); }

/* ------------------------------------------------- collsim verify */

static void outcome_line(const char *out, const char *model, char *buf,
                         size_t n)
{
  char key[32];
  snprintf(key, sizeof(key), "outcomes %s: ", model);
  const char *p = strstr(out, key);
  cr_assert_not_null(p, "no outcomes for %s in:\n%s", model, out);
  p = strchr(p, ':') + 1;
  p = strchr(p, ':') + 1; /* after the count */
  size_t k = strcspn(p, "\n");
  snprintf(buf, n, "%.*s", (int)k, p);
}

/* Every final state of 20 random (unreduced) schedules is one verify
 * reaches, on small collectives under sc, fifo and relaxed; each says
 * verified. (Their schedule trees are 1e7 and more: the whole brute force
 * is the litmus programs' above.) */
Test(verify, random_schedules_reach_no_state_verify_missed, .timeout = 600)
{
  static const char *const algos[] = {"mesh", "ring", "host"};
  static const char *const models[] = {"sc", "fifo", "relaxed"};
  for (int a = 0; a < 3; a++) {
    cli_out_t v, e;
    run_cli(&v, 300, "verify", "--algo", algos[a], "--ranks", "2", "--count",
            "2", "--outcomes", NULL);
    cr_assert_eq(v.status, 0, "%s: %s%s", algos[a], v.out, v.err);
    cr_assert(strstr(v.out, "\nverified: "), "%s", v.out);
    run_cli(&e, 300, "verify", "--algo", algos[a], "--ranks", "2", "--count",
            "2", "--outcomes", "--estimate", NULL);
    cr_assert_eq(e.status, 0, "%s: %s%s", algos[a], e.out, e.err);
    for (int m = 0; m < 3; m++) {
      char all[4096], probes[4096];
      outcome_line(v.out, models[m], all, sizeof(all));
      outcome_line(e.out, models[m], probes, sizeof(probes));
      for (char *save, *t = strtok_r(probes, " ", &save); t;
           t = strtok_r(NULL, " ", &save))
        cr_expect(strstr(all, t), "%s %s: a random schedule ended in %s, "
                  "which verify never reached (%s)", algos[a], models[m], t,
                  all);
    }
  }
}

/* collsim verify -j 2 and -j 3: the same final states as the serial
 * search, on small collectives under sc, fifo and relaxed, each verified;
 * the counts add up, and nothing is printed on stderr (not a terminal). */
Test(verify, split_search_reaches_the_serial_search_states, .timeout = 900)
{
  static const char *const cfg[][2] = {{"ring", "2"}, {"mesh", "2"},
                                       {"host", "1"}};
  static const char *const models[] = {"sc", "fifo", "relaxed"};
  for (int a = 0; a < 3; a++) {
    cli_out_t s;
    run_cli(&s, 300, "verify", "--algo", cfg[a][0], "--ranks", "2",
            "--count", cfg[a][1], "--outcomes", NULL);
    cr_assert_eq(s.status, 0, "%s: %s%s", cfg[a][0], s.out, s.err);
    for (int j = 2; j <= 3; j++) {
      cli_out_t p;
      char jobs[4];
      snprintf(jobs, sizeof(jobs), "%d", j);
      run_cli(&p, 300, "verify", "--algo", cfg[a][0], "--ranks", "2",
              "--count", cfg[a][1], "--outcomes", "-j", jobs, NULL);
      cr_assert_eq(p.status, 0, "%s -j %d: %s%s", cfg[a][0], j, p.out, p.err);
      cr_assert(strstr(p.out, "\nverified: "), "%s", p.out);
      cr_expect_eq(p.err[0], 0, "progress on a pipe: %s", p.err);
      for (int m = 0; m < 3; m++) {
        char ser[4096], par[4096];
        outcome_line(s.out, models[m], ser, sizeof(ser));
        outcome_line(p.out, models[m], par, sizeof(par));
        cr_expect_str_eq(par, ser, "%s %s -j %d", cfg[a][0], models[m], j);
      }
    }
  }
}

/* A mutation the search must reach (the probes skipped) is a
 * counterexample under -j 2 too, its trace replaying to the failure; no
 * rank or worker process is left. */
Test(verify, a_mutation_is_a_counterexample_under_j2, .timeout = 600)
{
  static const char *const cases[][6] = {
    {"ring-no-ready-barrier", "ring", "3", "3", "fp32", "sc"},
    {"no-fence-before-notify", "ring", "2", "2", "fp32", "relaxed"},
    {"wait-eq", "mesh", "2", "2", "fp32", "sc"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *const *c = cases[i];
    char dir[64], trace[128];
    temp_dir_for("verify", dir, sizeof(dir));
    cli_out_t r;
    run_cli(&r, 300, "verify", "-j", "2", "--no-probes", "--no-shrink", "-o",
            dir, "--bug", c[0], "--algo", c[1], "--ranks", c[2], "--count",
            c[3], "--dtype", c[4], "--memory-model", c[5], NULL);
    cr_expect_eq(r.status, 1, "%s: %s%s", c[0], r.out, r.err);
    cr_expect(strstr(r.out, "counterexample: memory model"), "%s: %s", c[0],
              r.out);
    cr_expect(!strstr(r.out, "probe before the search"), "%s: %s", c[0], r.out);
    snprintf(trace, sizeof(trace), "%s/verify-1.cstrace", dir);
    cli_out_t rp;
    run_cli(&rp, 60, "replay", trace, NULL);
    cr_expect(strstr(rp.out, "identical; outcome: "), "%s: %s%s", c[0],
              rp.out, rp.err);
    files_in(dir, "", 1);
    rmdir(dir);
  }
}

/* Started with stdin closed, -j 2 still verifies: the runs took fd 0 for
 * their own files, and a kept world's cleanup closed fd 0 as if it were
 * its own (a worker's capture file was truncated under a rank's shared
 * memory, which died of SIGBUS). The child is killed after 120 s and
 * always reaped. */
Test(verify, j2_with_stdin_closed_verifies, .timeout = 180)
{
  char out[] = "/tmp/collsim-test-out-XXXXXX";
  int fo = mkstemp(out);
  cr_assert_geq(fo, 0);
  unlink(out);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fo, 1);
    dup2(fo, 2);
    close(0);
    execl(bin_path(), "collsim", "verify", "--algo", "ring", "--ranks", "2",
          "--count", "2", "-j", "2", (char *)NULL);
    _exit(127);
  }
  int status = 0, waited = 0;
  for (int i = 0; i < 12000 && !waited; i++) {
    waited = waitpid(pid, &status, WNOHANG) == pid;
    if (!waited)
      usleep(10000);
  }
  if (!waited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  char buf[4096] = "";
  ssize_t n = pread(fo, buf, sizeof(buf) - 1, 0);
  buf[n > 0 ? n : 0] = 0;
  close(fo);
  cr_assert(waited, "did not finish in 120 s: %s", buf);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s",
            status, buf);
  cr_assert(strstr(buf, "\nverified: "), "%s", buf);
}

/* Bad -j values: one line naming verify and the value, exit 2. */
Test(verify, bad_jobs_are_one_line_naming_verify, .timeout = 120)
{
  static const char *const bad[] = {"0", "-1", "18446744073709551616",
                                    "0x2", ""};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cli_out_t r;
    char want[64];
    snprintf(want, sizeof(want), "-j '%s'", bad[i]);
    run_cli(&r, 30, "verify", "--algo", "ring", "--ranks", "2", "-j", bad[i],
            NULL);
    cr_expect_eq(r.status, 2, "-j '%s': %d", bad[i], r.status);
    cr_expect_eq(count_lines(r.err), 1, "-j '%s': %s", bad[i], r.err);
    cr_expect(!strncmp(r.err, "collsim verify: ", 16) && strstr(r.err, want),
              "%s", r.err);
    cr_expect_eq(r.out[0], 0, "%s", r.out);
  }
}

/* Every shipped mutation that a run can see yields a counterexample at a
 * small configuration, kept as a trace that replays to the same failure. */
Test(verify, every_mutation_yields_a_counterexample, .timeout = 900)
{
  static const char *const cases[][8] = {
    {"mesh-no-chunk-barrier", "mesh", "3", "3", "fp32", "sc,fifo,relaxed"},
    {"ring-no-ready-barrier", "ring", "3", "3", "fp32", "sc,fifo,relaxed"},
    {"no-fence-before-notify", "ring", "2", "2", "fp32", "relaxed"},
    {"signal-reuse", "mesh", "2", "2", "fp32", "sc"},
    {"wait-eq", "mesh", "2", "2", "fp32", "sc"},
    {"unaligned-slots", "ring", "2", "17", "fp16", "sc"},
    {"ring-drop-tail", "ring", "3", "4", "fp32", "sc"},
    {"early-return", "ring", "2", "2", "fp32", "sc"},
    {"nr-mismatch", "ring", "3", "4", "fp32", "sc"},
    {"push-own-read-after-ready", "ring-push", "2", "2", "fp32", "sc"},
    {"push-no-done-barrier", "ring-push", "2", "2", "fp32", "sc"},
    {"host-push-no-final-barrier", "host-push", "2", "2", "fp32", "sc"},
    {"host-push-left-wait-only", "host-push", "3", "3", "fp32", "sc"},
    {"host-push-no-dsb", "host-push", "2", "2", "fp32", "relaxed"},
    {"push-no-put-predrain", "ring-push", "2", "2", "fp32", "relaxed"},
    {"drain-no-ddr-fence", "ring", "3", "3", "fp32", "a2a3"},
    {"host-push-epilogue-2279", "host-push", "2", "2", "fp32", "sc"},
    {"ibing-no-snapshot-barrier", "ibing", "2", "2", "fp32", "sc"},
    {"host-push-no-tail-drain", "host-push", "2", "2", "fp32", "a2a3"},
    {"ring-stage-in-drain-only", "ring", "2", "2", "fp32", "a2a3"},
  };
  /* The table is every mutation `run --list-bugs` names (its rows start
   * at column 0), but the one only --check sees (the test below). */
  cli_out_t lb;
  run_cli(&lb, 30, "run", "--list-bugs", NULL);
  cr_assert_eq(lb.status, 0, "%s", lb.err);
  size_t named = 0;
  for (const char *l = strchr(lb.out, '\n'); l && l[1]; l = strchr(l + 1, '\n')) {
    char name[64];
    if (l[1] == ' ' || l[1] == '\n' || sscanf(l + 1, "%63s", name) != 1)
      continue;
    named++;
    int found = !strcmp(name, "inactive-lane-remote-read");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && !found; i++)
      found = !strcmp(cases[i][0], name);
    cr_expect(found, "--bug %s has no row in this test's table", name);
  }
  cr_assert_eq(named, sizeof(cases) / sizeof(cases[0]) + 1,
               "%zu mutations listed: %s", named, lb.out);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *const *c = cases[i];
    char dir[64], trace[128];
    temp_dir_for("verify", dir, sizeof(dir));
    cli_out_t r;
    run_cli(&r, 300, "verify", "--no-shrink", "-o", dir, "--bug", c[0],
            "--algo", c[1], "--ranks", c[2], "--count", c[3], "--dtype", c[4],
            "--memory-model", c[5], NULL);
    cr_expect_eq(r.status, 1, "%s: %s%s", c[0], r.out, r.err);
    cr_expect(strstr(r.out, "counterexample: memory model"), "%s: %s", c[0],
              r.out);
    snprintf(trace, sizeof(trace), "%s/verify-1.cstrace", dir);
    cli_out_t rp;
    run_cli(&rp, 60, "replay", trace, NULL);
    cr_expect(strstr(rp.out, "identical; outcome: "), "%s: %s%s", c[0],
              rp.out, rp.err);
    files_in(dir, "", 1);
    rmdir(dir);
  }
}

/* --check: a checker finding on a class whose run passes is a
 * counterexample. inactive-lane-remote-read gives no wrong result by
 * construction (the bug table: the inactive all-gather lanes only load
 * from the left peer what they never use), so without --check the
 * configuration is verified; with it, the unused remote load that
 * `collsim check` names on the kept trace is the counterexample, shrunk
 * with that finding kept; its trace and the shrunk one are the files
 * left. */
Test(verify, a_check_finding_on_a_passing_class_is_a_counterexample,
     .timeout = 300)
{
  char dir[64], trace[128];
  temp_dir_for("verify", dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 120, "verify", "-o", dir, "--algo", "ring", "--ranks", "2",
          "--count", "1", "--bug", "inactive-lane-remote-read", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "\nverified: "), "%s", r.out);
  cr_assert_eq(files_in(dir, "", 0), 0);

  run_cli(&r, 120, "verify", "-o", dir, "--algo", "ring", "--ranks", "2",
          "--count", "1", "--bug", "inactive-lane-remote-read", "--check",
          NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "counterexample: memory model sc, "), "%s", r.out);
  cr_assert(strstr(r.out, "a check finding on a run that passed"), "%s",
            r.out);
  cr_assert(strstr(r.out, "\ncheck:\n1. unused remote read: "), "%s", r.out);
  cr_assert(strstr(r.out, "\nstory:\n"), "%s", r.out);
  cr_assert(!strstr(r.out, "verified"), "%s", r.out);
  snprintf(trace, sizeof(trace), "%s/verify-1.cstrace", dir);
  cli_out_t c;
  run_cli(&c, 60, "check", trace, NULL); /* the kept trace, checked anew */
  cr_assert_eq(c.status, 1, "%s%s", c.out, c.err);
  cr_assert(strstr(c.out, "unused remote read: "), "%s", c.out);
  run_cli(&c, 60, "replay", trace, NULL); /* its run passes */
  cr_assert_eq(c.status, 0, "%s%s", c.out, c.err);
  cr_assert(strstr(c.out, "identical; outcome: "), "%s%s", c.out, c.err);
  /* shrunk with the finding kept: the shrunk trace passes and check
   * finds the same kind in it */
  cr_assert(strstr(r.out, "-> check: unused remote read: "), "%s", r.out);
  snprintf(trace, sizeof(trace), "%s/verify-1.min.cstrace", dir);
  run_cli(&c, 60, "check", trace, NULL);
  cr_assert_eq(c.status, 1, "%s%s", c.out, c.err);
  cr_assert(strstr(c.out, "unused remote read: "), "%s", c.out);
  cr_assert_eq(files_in(dir, "", 1), 2, "not the trace and the shrunk one");
  rmdir(dir);
}

/* Correct collectives stay verified with --check: the checker has no
 * finding on any class, under every model (the search and its counts are
 * the same as without --check). */
Test(verify, correct_collectives_stay_verified_with_check, .timeout = 600)
{
  static const char *const cases[][3] = {
    {"ring", "2", "1"}, {"mesh", "2", "2"}, {"host", "2", "1"},
    {"mesh", "3", "1"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    cli_out_t a, b;
    run_cli(&a, 250, "verify", "--algo", cases[i][0], "--ranks", cases[i][1],
            "--count", cases[i][2], "--memory-model",
            i == 3 ? "sc,fifo" : "sc,fifo,relaxed", "--check", NULL);
    cr_expect_eq(a.status, 0, "%s: %s%s", cases[i][0], a.out, a.err);
    cr_expect(strstr(a.out, "\nverified: "), "%s", a.out);
    if (i == 0) { /* the same classes and executions as without --check */
      run_cli(&b, 250, "verify", "--algo", "ring", "--ranks", "2", "--count",
              "1", NULL);
      const char *pa = strstr(a.out, "  sc: "), *pb = strstr(b.out, "  sc: ");
      cr_assert(pa && pb, "%s\n%s", a.out, b.out);
      cr_expect_eq(strcspn(pa, "("), strcspn(pb, "("));
      cr_expect(!strncmp(pa, pb, strcspn(pa, "(")), "%s\n%s", a.out, b.out);
    }
  }
}

/* The same at the CLI under a2a3, whose reduction is at line grain: every
 * final state of 20 random schedules of the mesh at 2 ranks (about 1e12
 * schedules) is one that verify reached. */
Test(verify, a2a3_random_schedules_reach_no_state_verify_missed,
     .timeout = 600)
{
  if (quick_tests()) /* a full a2a3 search: the main stage runs it */
    cr_skip_test("COLLSIM_QUICK");
  cli_out_t v, e;
  run_cli(&v, 500, "verify", "--algo", "mesh", "--ranks", "2", "--count",
          "1", "--memory-model", "a2a3", "--outcomes", NULL);
  cr_assert_eq(v.status, 0, "%s%s", v.out, v.err);
  cr_assert(strstr(v.out, "\nverified: "), "%s", v.out);
  run_cli(&e, 60, "verify", "--algo", "mesh", "--ranks", "2", "--count",
          "1", "--memory-model", "a2a3", "--outcomes", "--estimate", NULL);
  cr_assert_eq(e.status, 0, "%s%s", e.out, e.err);
  char all[4096], probes[4096];
  outcome_line(v.out, "a2a3", all, sizeof(all));
  outcome_line(e.out, "a2a3", probes, sizeof(probes));
  for (char *save, *t = strtok_r(probes, " ", &save); t;
       t = strtok_r(NULL, " ", &save))
    cr_expect(strstr(all, t), "a random schedule ended in %s, which verify "
              "never reached (%s)", t, all);
}

/* simpler's neighbour-barrier pull ring as upstream ships it (--bug
 * drain-no-ddr-fence: a pipe barrier and no DDR fence before each notify)
 * has one class under sc and relaxed, both searched through, and fails
 * only under a2a3: there the probes before the search find the failure
 * (the latest schedule's), which the depth-first search did not reach in
 * a minute when a2a3 was not reduced (docs/verify.md, "Probes"). */
Test(verify, a_device_only_defect_is_found_by_the_probes, .timeout = 300)
{
  char dir[64], trace[128];
  temp_dir_for("verify", dir, sizeof(dir));
  cli_out_t r;
  run_cli(&r, 250, "verify", "--no-shrink", "-o", dir, "--algo", "ring-nb",
          "--ranks", "3", "--count", "3", "--bug", "drain-no-ddr-fence",
          "--memory-model", "sc,relaxed,a2a3", NULL);
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "  sc: 1 classes") && strstr(r.out, "  relaxed: 1 classes"),
            "%s", r.out);
  cr_assert(strstr(r.out, "counterexample: memory model a2a3, the "
                          "latest-schedule probe before the search"),
            "%s", r.out);
  snprintf(trace, sizeof(trace), "%s/verify-1.cstrace", dir);
  cli_out_t rp;
  run_cli(&rp, 60, "replay", trace, NULL);
  cr_assert(strstr(rp.out, "identical; outcome: "), "%s%s", rp.out, rp.err);
  files_in(dir, "", 1);
  rmdir(dir);
}

/* The same search on a correct algorithm: verified, the counts add up. */
Test(verify, a_correct_ring_is_verified, .timeout = 300)
{
  cli_out_t r;
  run_cli(&r, 200, "verify", "--algo", "ring", "--ranks", "2", "--count", "1",
          NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert_eq(count_lines(r.out), 4, "%s", r.out);
  cr_assert(strstr(r.out, "verified: --algo ring --ranks 2 --count 1: "),
            "%s", r.out);
  cr_assert(strstr(r.out, "models sc,fifo,relaxed"), "%s", r.out);
  cr_assert_eq(r.err[0], 0, "progress on a pipe: %s", r.err);
}

/* PR #2280's host push ring, whose reduce-scatter puts add into their
 * destination, verified exhaustively at 2 ranks on every default model. */
Test(verify, the_host_push_ring_is_verified, .timeout = 300)
{
  cli_out_t r;
  run_cli(&r, 250, "verify", "--algo", "host-push", "--ranks", "2", "--count",
          "2", NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "verified: --algo host-push --ranks 2 --count 2: "),
            "%s", r.out);
  cr_assert(strstr(r.out, "models sc,fifo,relaxed"), "%s", r.out);
}

Test(verify, a_budget_too_small_says_incomplete, .timeout = 120)
{
  cli_out_t r;
  run_cli(&r, 100, "verify", "--algo", "ring", "--ranks", "2", "--count", "1",
          "--iters", "2", "--max-classes", "2", NULL);
  cr_assert_eq(r.status, 4, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "incomplete: --max-classes ran out under sc after "
                          "2 classes"), "%s", r.out);
}

/* The share of the tree an incomplete search reports: under the brute
 * force every node's branches are fixed when it is made and all of them
 * are run, so the runs' shares add up to exactly 1 (and under the
 * reduction, to at least the share the last run alone stands for). */
Test(verify, the_brute_force_runs_cover_a_share_of_one, .timeout = 300)
{
  uint32_t multi = 0;
  setup();
  for (size_t i = 0; i < NPROGS; i++) {
    if (progs[i].big)
      continue;
    for (cs_mm_t m = CS_MM_SC; m <= CS_MM_RELAXED; m++) {
      outs_t o = {0};
      cs_dpor_stats_t st = reduced(&progs[i], m, CS_DPOR_EXHAUSTIVE, &o);
      cr_expect(st.share > 1 - 1e-9 && st.share < 1 + 1e-9,
                "%s under %s: %llu runs cover %.12f of the tree",
                progs[i].name, cs_mm_name(m),
                (unsigned long long)st.executions, st.share);
      multi += st.executions > 1;
    }
  }
  /* (a tree of one run covers 1 trivially: most have many) */
  cr_expect_gt(multi, 10, "%u searches of more than one run", multi);
}

/* An incomplete search says how far it got and what that makes in all. */
Test(verify, an_incomplete_search_estimates_the_classes, .timeout = 120)
{
  cli_out_t r;
  run_cli(&r, 100, "verify", "--algo", "ring", "--ranks", "3", "--count", "1",
          "--iters", "2", "--memory-model", "sc", "--max-classes", "10", NULL);
  cr_assert_eq(r.status, 4, "%s%s", r.out, r.err);
  double pct = 0, est = 0;
  const char *e = strstr(r.out, "explored: about ");
  cr_assert(e && sscanf(e, "explored: about %lf%% of the tree as its "
                           "branches are known now, which makes about %lf",
                        &pct, &est) == 2, "%s", r.out);
  /* 10 classes of a configuration that does not finish in minutes
   * (docs/verify.md, Measurements) were explored: a share strictly inside
   * (0, 100], and an estimate of at least the classes explored. */
  cr_expect(pct > 0 && pct <= 100, "%s", r.out);
  cr_expect_geq(est, 10, "%s", r.out);
}

/* Bad values: one line naming verify and the value, exit 2. */
Test(verify, bad_options_are_one_line_naming_verify, .timeout = 120)
{
  static const char *const bad[][3] = {
    {"--memory-model", "tso", "'tso'"},
    {"--max-classes", "0", "'0'"},
    {"--budget", "soon", "'soon'"},
    {"--ranks", "0", "'0'"},
    {"--schedule", "latest", "--schedule"},
    {"-o", "/nonexistent/dir", "/nonexistent/dir"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cli_out_t r;
    run_cli(&r, 30, "verify", bad[i][0], bad[i][1], NULL);
    cr_expect_eq(r.status, 2, "%s %s: %d", bad[i][0], bad[i][1], r.status);
    cr_expect_eq(count_lines(r.err), 1, "%s %s: %s", bad[i][0], bad[i][1],
                 r.err);
    cr_expect(!strncmp(r.err, "collsim verify: ", 16) &&
                  strstr(r.err, bad[i][2]), "%s", r.err);
    cr_expect_eq(r.out[0], 0, "%s", r.out);
  }
}

/* Processes whose command line (NUL-separated) holds the n bytes at s. */
static int left_running(const char *s, size_t n)
{
  int k = 0;
  DIR *d = opendir("/proc");
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));) {
    char path[300], buf[4096];
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
      continue;
    ssize_t got = read(fd, buf, sizeof(buf));
    close(fd);
    k += got > 0 && memmem(buf, (size_t)got, s, n) != NULL;
  }
  closedir(d);
  return k;
}

/* SIGTERM in the middle of a long search: "interrupted", exit 3, no
 * rank process and no shared memory left. */
static void stop_on_sigterm(const char *jobs);

Test(verify, stops_cleanly_on_sigterm, .timeout = 60) { stop_on_sigterm("1"); }
Test(verify, stops_cleanly_on_sigterm_with_j2, .timeout = 60) { stop_on_sigterm("2"); }

static void stop_on_sigterm(const char *jobs)
{
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fds[1], 1);
    dup2(fd, 2);
    close(fds[0]);
    execl(bin_path(), "collsim", "verify", "--algo", "ring", "--ranks", "2",
          "--count", "1", "--memory-model", "a2a3", "-j", jobs, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  struct timespec ts = {1, 500000000};
  nanosleep(&ts, NULL);
  kill(pid, SIGTERM);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  char out[512] = "";
  ssize_t n = read(fds[0], out, sizeof(out) - 1);
  out[n > 0 ? n : 0] = 0;
  close(fds[0]);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %d: %s",
            status, out);
  cr_assert(strstr(out, "interrupted under a2a3 after "), "%s", out);
  nanosleep(&ts, NULL);
  char pat[64]; /* this test's command line (the other runs in parallel) */
  int np = snprintf(pat, sizeof(pat), "--ranks%c2%c--count%c1%c--memory-model"
                    "%ca2a3%c-j%c%s", 0, 0, 0, 0, 0, 0, 0, jobs);
  cr_assert_eq(left_running(pat, (size_t)np + 1), 0,
               "a rank or worker process is left");
}
