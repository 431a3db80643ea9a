/*
 * test_litmus.c - the memory models' litmus tests, herd-style: a table of
 * small device-API programs (two ranks, a handful of events each), and
 * for every program and memory model the set of outcomes the model allows.
 * Each program runs under every schedule there is (a depth-first walk of
 * the scheduler's choices, through the caller's picker, on real forked
 * ranks); the outcomes observed must equal the allowed set exactly: every
 * allowed outcome reached, no other one.
 *
 * The allowed sets are written by hand from the models' rules
 * (docs/memory-models.md, which prints this table), not from the code:
 *   sc       every write lands when it is issued;
 *   fifo     posted writes land later, in issue order;
 *   relaxed  posted writes land later, in any order; cs_fence, the pipe
 *            barrier and the DDR fence each wait until the rank's posted
 *            writes have landed;
 *   a2a3     writes go pipe -> drained -> visible (any order); the pipe
 *            barrier drains, the DDR fence waits for drained writes to be
 *            visible, cs_fence does both; a notify's own DDR fence comes
 *            after its signal; scalar reads go through a per-rank cache of
 *            64-byte lines (a wait and a notify invalidate their line
 *            first); a Set notify writes back its whole line, read when
 *            the notify ran.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../sim/launch.h"
#include "../sim/sched.h"

enum { DATA = 0, FLAG = 1 };
#define CELLS 32u /* per slot: two 64-byte lines of int32 */
#define NREG 4
#define MAXSTEPS 512

/* The registers each rank reports, in a page shared with the ranks
 * (plain memory, outside every model). */
static int32_t (*regs)[NREG];

typedef struct litmus {
  const char *name;
  const char *what;
  int (*body)(cs_dev_t *d, void *arg);
  /* The outcome of one run, from the registers and rank 0's and rank 1's
   * windows after it, into buf. */
  void (*outcome)(const cs_world_t *w, char *buf, size_t n);
  /* Allowed outcomes under sc, fifo, relaxed, a2a3: "o1|o2|..." */
  const char *allowed[4];
  int padded; /* the flag slot's cells a 64-byte line each */
} litmus_t;

/* ---------------------------------------------------------- helpers */

static void put1(cs_dev_t *d, uint32_t peer, uint32_t slot, uint32_t cell,
                 int32_t v)
{
  cs_tile_t t;
  cr_assert_eq(cs_tile_init(&t, 4, 16), 0);
  ((int32_t *)t.buf)[0] = v;
  if (peer == cs_dev_rank(d))
    cs_store(d, &t, slot, cell, 1);
  else
    cs_put(d, &t, peer, slot, cell, 1);
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

static int32_t cell_of(const cs_world_t *w, uint32_t rank, uint32_t slot,
                       uint32_t cell)
{
  const cs_slot_t *s = &w->ctl->layout.slot[slot];
  int32_t v;
  memcpy(&v, cs_world_window(w, rank) + cs_slot_cell_off(s, cell), 4);
  return v;
}

static void out_r0(const cs_world_t *w, char *buf, size_t n)
{
  (void)w;
  snprintf(buf, n, "%d", regs[1][0]);
}

static void out_r0r1(const cs_world_t *w, char *buf, size_t n)
{
  (void)w;
  snprintf(buf, n, "%d,%d", regs[1][0], regs[1][1]);
}

static void out_r0_of0(const cs_world_t *w, char *buf, size_t n)
{
  (void)w;
  snprintf(buf, n, "%d", regs[0][0]);
}

/* Rank 0's flag cells 0 and 1 (one line), or 0 and 16 (two). */
static void out_m01(const cs_world_t *w, char *buf, size_t n)
{
  snprintf(buf, n, "%d,%d", cell_of(w, 0, FLAG, 0), cell_of(w, 0, FLAG, 1));
}

static void out_m016(const cs_world_t *w, char *buf, size_t n)
{
  snprintf(buf, n, "%d,%d", cell_of(w, 0, FLAG, 0), cell_of(w, 0, FLAG, 16));
}

/* ------------------------------------------- message passing (MP) */

/* The receiver of every MP program: waits for flag cell `cell` >= 1, then
 * loads its data cell 0 (tile DMA, which reads memory) into r0. */
static int mp_receiver(cs_dev_t *d, uint32_t cell)
{
  cs_wait(d, FLAG, cell, CS_CMP_GE, 1);
  regs[1][0] = load1(d, 1, DATA, 0);
  return 0;
}

/* Sender: put data 1 to rank 1, the ordering `how`, then notify. */
enum { NONE, FENCE, DRAIN, DDR, DRAIN_DDR, DDR_DRAIN };

static int mp_body(cs_dev_t *d, int how)
{
  if (cs_dev_rank(d) == 1)
    return mp_receiver(d, 0);
  put1(d, 1, DATA, 0, 1);
  switch (how) {
  case FENCE: cs_fence(d); break;
  case DRAIN: cs_pipe_barrier(d); break;
  case DDR: cs_ddr_fence(d); break;
  case DRAIN_DDR: cs_pipe_barrier(d); cs_ddr_fence(d); break;
  case DDR_DRAIN: cs_ddr_fence(d); cs_pipe_barrier(d); break;
  default: break;
  }
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

static int mp(cs_dev_t *d, void *a) { (void)a; return mp_body(d, NONE); }
static int mp_fence(cs_dev_t *d, void *a) { (void)a; return mp_body(d, FENCE); }
static int mp_drain(cs_dev_t *d, void *a) { (void)a; return mp_body(d, DRAIN); }
static int mp_ddr(cs_dev_t *d, void *a) { (void)a; return mp_body(d, DDR); }
static int mp_drain_ddr(cs_dev_t *d, void *a) { (void)a; return mp_body(d, DRAIN_DDR); }
static int mp_ddr_drain(cs_dev_t *d, void *a) { (void)a; return mp_body(d, DDR_DRAIN); }

/* A notify's own DDR fence comes after its signal: put; [drain;] notify
 * flag 0; notify flag 16. The receiver waits for flag 16. With the drain,
 * the first notify's fence makes the put visible before the second
 * notify is issued; without it the put was still in the pipe then. */
static int nn_body(cs_dev_t *d, int drain)
{
  if (cs_dev_rank(d) == 1)
    return mp_receiver(d, 16);
  put1(d, 1, DATA, 0, 1);
  if (drain)
    cs_pipe_barrier(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  cs_notify(d, 1, FLAG, 16, CS_NOTIFY_ADD, 1);
  return 0;
}

static int nn(cs_dev_t *d, void *a) { (void)a; return nn_body(d, 0); }
static int nn_drain(cs_dev_t *d, void *a) { (void)a; return nn_body(d, 1); }

/* ------------------------------------------------- stale reads */

/* Rank 0: notify rank 1's flag 0, fence, notify its flag `second`.
 * Rank 1: r0 = read flag 0 (through its cache); wait flag `second` >= 1;
 * [dcci flag 0's line;] r1 = read flag 0 again. */
static int stale_body(cs_dev_t *d, uint32_t second, int dcci)
{
  if (cs_dev_rank(d) == 0) {
    cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
    cs_fence(d);
    cs_notify(d, 1, FLAG, second, CS_NOTIFY_ADD, 1);
    return 0;
  }
  regs[1][0] = cs_read_cell(d, 1, FLAG, 0);
  cs_wait(d, FLAG, second, CS_CMP_GE, 1);
  if (dcci)
    cs_dcci(d, 1, FLAG, 0);
  regs[1][1] = cs_read_cell(d, 1, FLAG, 0);
  return 0;
}

static int stale(cs_dev_t *d, void *a) { (void)a; return stale_body(d, 16, 0); }
static int stale_dcci(cs_dev_t *d, void *a) { (void)a; return stale_body(d, 16, 1); }
static int stale_line(cs_dev_t *d, void *a) { (void)a; return stale_body(d, 1, 0); }

/* The same with a dcci of everything. */
static int stale_dcci_all(cs_dev_t *d, void *a)
{
  (void)a;
  if (cs_dev_rank(d) == 0)
    return stale_body(d, 16, 0);
  regs[1][0] = cs_read_cell(d, 1, FLAG, 0);
  cs_wait(d, FLAG, 16, CS_CMP_GE, 1);
  cs_dcci_all(d);
  regs[1][1] = cs_read_cell(d, 1, FLAG, 0);
  return 0;
}

/* ------------------------------------------- two writers, one line */

/* Rank 0 and rank 1 each notify a cell of rank 0's flag slot: rank 0
 * cell 0 with op0 and 1, rank 1 cell `c1` with op1 and 2. */
static int two_body(cs_dev_t *d, uint32_t op0, uint32_t op1, uint32_t c1)
{
  if (cs_dev_rank(d) == 0)
    cs_notify(d, 0, FLAG, 0, op0, 1);
  else
    cs_notify(d, 0, FLAG, c1, op1, 2);
  return 0;
}

static int set_set(cs_dev_t *d, void *a)
{
  (void)a;
  return two_body(d, CS_NOTIFY_SET, CS_NOTIFY_SET, 1);
}
static int add_add(cs_dev_t *d, void *a)
{
  (void)a;
  return two_body(d, CS_NOTIFY_ADD, CS_NOTIFY_ADD, 1);
}
static int set_add(cs_dev_t *d, void *a)
{
  (void)a;
  return two_body(d, CS_NOTIFY_SET, CS_NOTIFY_ADD, 1);
}
static int set_set_padded(cs_dev_t *d, void *a)
{
  (void)a;
  return two_body(d, CS_NOTIFY_SET, CS_NOTIFY_SET, 16);
}

/* ------------------------------------------- a load of one's own store */

static int own_store(cs_dev_t *d, void *a)
{
  (void)a;
  if (cs_dev_rank(d) == 0) {
    put1(d, 0, DATA, 0, 1);
    regs[0][0] = load1(d, 0, DATA, 0);
  }
  return 0;
}

static int own_store_fence(cs_dev_t *d, void *a)
{
  (void)a;
  if (cs_dev_rank(d) == 0) {
    put1(d, 0, DATA, 0, 1);
    cs_fence(d);
    regs[0][0] = load1(d, 0, DATA, 0);
  }
  return 0;
}

/* ------------------------------------ a put of a tile just stored */

/* PTOAS #706: rank 0 stores x = 1 into its own data cell 0, then puts
 * that cell to rank 1's data cell 0 the way the device's TPUT does (its
 * DMA reads the source from memory into a stage tile, then writes the
 * stage remotely), fences and notifies; rank 1 waits and loads its cell
 * into r0. `how` is what separates the store from the put's read. */
static int putsrc_body(cs_dev_t *d, int how)
{
  if (cs_dev_rank(d) == 1)
    return mp_receiver(d, 0);
  put1(d, 0, DATA, 0, 1);
  if (how == FENCE)
    cs_fence(d);
  else if (how == DRAIN)
    cs_pipe_barrier(d);
  put1(d, 1, DATA, 0, load1(d, 0, DATA, 0));
  cs_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

static int putsrc(cs_dev_t *d, void *a) { (void)a; return putsrc_body(d, NONE); }
static int putsrc_drain(cs_dev_t *d, void *a) { (void)a; return putsrc_body(d, DRAIN); }
static int putsrc_fence(cs_dev_t *d, void *a) { (void)a; return putsrc_body(d, FENCE); }

/* PTOAS #872: a put of two chunks, the device's chunked TPUT: chunk 0,
 * the pipe barrier the chunked path issues before each later chunk,
 * chunk 1, [the tail pipe barrier pypto adds after every put,] then the
 * DDR fence and the notify. Rank 1 waits and loads both cells: r0 =
 * chunk 0, r1 = chunk 1. */
static int chunk_body(cs_dev_t *d, int tail)
{
  if (cs_dev_rank(d) == 1) {
    cs_wait(d, FLAG, 0, CS_CMP_GE, 1);
    regs[1][0] = load1(d, 1, DATA, 0);
    regs[1][1] = load1(d, 1, DATA, 1);
    return 0;
  }
  put1(d, 1, DATA, 0, 1);
  cs_pipe_barrier(d);
  put1(d, 1, DATA, 1, 1);
  if (tail)
    cs_pipe_barrier(d);
  cs_ddr_fence(d);
  cs_notify(d, 1, FLAG, 0, CS_NOTIFY_ADD, 1);
  return 0;
}

static int chunk(cs_dev_t *d, void *a) { (void)a; return chunk_body(d, 0); }
static int chunk_tail(cs_dev_t *d, void *a) { (void)a; return chunk_body(d, 1); }

/* ---------------------------------------------------------- table */

/*                                sc       fifo     relaxed  a2a3 */
static const litmus_t table[] = {
  {"MP", "put; notify || wait; load",
   mp, out_r0, {"1", "1", "0|1", "0|1"}, 0},
  {"MP+fence", "put; fence; notify || wait; load",
   mp_fence, out_r0, {"1", "1", "1", "1"}, 0},
  {"MP+drain", "put; pipe barrier; notify || wait; load",
   mp_drain, out_r0, {"1", "1", "1", "0|1"}, 0},
  {"MP+ddr", "put; DDR fence; notify || wait; load",
   mp_ddr, out_r0, {"1", "1", "1", "0|1"}, 0},
  {"MP+drain+ddr", "put; pipe barrier; DDR fence; notify || wait; load",
   mp_drain_ddr, out_r0, {"1", "1", "1", "1"}, 0},
  {"MP+ddr+drain", "put; DDR fence; pipe barrier; notify || wait; load",
   mp_ddr_drain, out_r0, {"1", "1", "1", "0|1"}, 0},
  {"NN", "put; notify f0; notify f16 || wait f16; load",
   nn, out_r0, {"1", "1", "0|1", "0|1"}, 0},
  {"NN+drain", "put; pipe barrier; notify f0; notify f16 || wait f16; load",
   nn_drain, out_r0, {"1", "1", "1", "1"}, 0},
  {"STALE", "notify f0; fence; notify f16 || read f0; wait f16; read f0",
   stale, out_r0r1, {"0,1|1,1", "0,1|1,1", "0,1|1,1", "0,0|1,1"}, 0},
  {"STALE+dcci", "... || read f0; wait f16; dcci f0; read f0",
   stale_dcci, out_r0r1, {"0,1|1,1", "0,1|1,1", "0,1|1,1", "0,1|1,1"}, 0},
  {"STALE+dcci-all", "... || read f0; wait f16; dcci all; read f0",
   stale_dcci_all, out_r0r1, {"0,1|1,1", "0,1|1,1", "0,1|1,1", "0,1|1,1"}, 0},
  {"STALE-one-line", "notify f0; fence; notify f1 || read f0; wait f1; read f0",
   stale_line, out_r0r1, {"0,1|1,1", "0,1|1,1", "0,1|1,1", "0,1|1,1"}, 0},
  {"SET+SET", "Set f0=1 || Set f1=2 (one line)",
   set_set, out_m01, {"1,2", "1,2", "1,2", "0,2|1,0|1,2"}, 0},
  {"ADD+ADD", "Add f0+=1 || Add f1+=2 (one line)",
   add_add, out_m01, {"1,2", "1,2", "1,2", "1,2"}, 0},
  {"SET+ADD", "Set f0=1 || Add f1+=2 (one line)",
   set_add, out_m01, {"1,2", "1,2", "1,2", "1,0|1,2"}, 0},
  {"SET+SET-padded", "Set f0=1 || Set f16=2 (two lines)",
   set_set_padded, out_m016, {"1,2", "1,2", "1,2", "1,2"}, 0},
  {"SET+SET-layout", "Set f0=1 || Set f1=2, the flag slot padded",
   set_set, out_m01, {"1,2", "1,2", "1,2", "1,2"}, .padded = 1},
  {"OWN", "store x; load x",
   own_store, out_r0_of0, {"1", "0|1", "0|1", "0|1"}, 0},
  {"OWN+fence", "store x; fence; load x",
   own_store_fence, out_r0_of0, {"1", "1", "1", "1"}, 0},
  {"PUTSRC", "store x; put x; fence; notify || wait; load",
   putsrc, out_r0, {"1", "0|1", "0|1", "0|1"}, 0},
  {"PUTSRC+drain", "store x; pipe barrier; put x; fence; notify || wait; load",
   putsrc_drain, out_r0, {"1", "1", "1", "0|1"}, 0},
  {"PUTSRC+fence", "store x; fence; put x; fence; notify || wait; load",
   putsrc_fence, out_r0, {"1", "1", "1", "1"}, 0},
  {"CHUNK", "put c0; pipe barrier; put c1; DDR fence; notify || wait; load c0, c1",
   chunk, out_r0r1, {"1,1", "1,1", "1,1", "1,0|1,1"}, 0},
  {"CHUNK+tail", "put c0; pipe barrier; put c1; pipe barrier; DDR fence; notify || ...",
   chunk_tail, out_r0r1, {"1,1", "1,1", "1,1", "1,1"}, 0},
};
#define NLITMUS (sizeof(table) / sizeof(table[0]))

/* ------------------------------------------------- every schedule */

typedef struct dfs {
  uint32_t plen;              /* choices forced from the previous run */
  uint32_t pre[MAXSTEPS];     /* the choices to force */
  uint32_t taken[MAXSTEPS];   /* the choices of this run */
  uint32_t width[MAXSTEPS];   /* actors enabled at each step */
  uint32_t len;               /* steps of this run */
  int      bad;               /* a forced choice was not there, or too long */
} dfs_t;

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
    s->bad = 1; /* the same prefix, another run: not deterministic */
    return -1;
  }
  s->taken[i] = c;
  s->width[i] = v->nenabled;
  s->len = (uint32_t)i + 1;
  return c;
}

/* The next prefix after the run in s; 0 when every schedule was run. */
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

/* Whether `o` is one of the outcomes in the '|'-separated list. */
static int listed(const char *list, const char *o)
{
  size_t n = strlen(o);
  for (const char *p = list; p; p = strchr(p, '|')) {
    if (*p == '|')
      p++;
    if (!strncmp(p, o, n) && (p[n] == '|' || p[n] == 0))
      return 1;
  }
  return 0;
}

/* Runs `t` under every schedule of model m; its observed outcomes go into
 * seen ('|'-separated); returns the schedules run. */
static uint64_t explore_all(const litmus_t *t, cs_mm_t m, char *seen,
                            size_t n)
{
  cs_layout_t l;
  cs_layout_init(&l, 64);
  cs_layout_add(&l, "data", CELLS * 4, 4);
  cs_layout_add(&l, "flag", CELLS * 4, 4);
  if (t->padded)
    cr_assert_eq(cs_layout_pad_cells(&l, FLAG), 0);
  cs_world_t w;
  cs_world_opts_t wo = {.io_bytes = 4096, .timeout_ns = 10000000000ull,
                        .sched_bytes = cs_sched_area_bytes(2, 4096)};
  cr_assert_eq(cs_world_create(&w, &l, 2, &wo), 0);
  for (uint32_t r = 0; r < 2; r++)
    cr_assert_eq((uintptr_t)cs_world_window(&w, r) % 64, 0,
                 "rank %u's window is not line-aligned", r);
  cs_launch_pool_t *pool;
  cr_assert_eq(cs_launch_pool_open(&pool, 2), 0);
  FILE *rep = tmpfile();
  cr_assert_not_null(rep);
  static dfs_t s;
  memset(&s, 0, sizeof(s));
  seen[0] = 0;
  uint64_t runs = 0;
  do {
    cs_sched_cfg_t sc = {.strategy = CS_SCHED_CALLBACK, .model = m,
                         .pick_fn = dfs_pick, .pick_arg = &s};
    cs_launch_opts_t lo = {.report = rep, .sched = &sc, .pool = pool};
    cs_launch_result_t res;
    if (cs_launch_pool_alive(pool))
      cs_launch_pool_reset(pool, &w);
    memset(regs, 0xff, 4096);
    s.len = 0;
    int rc = cs_launch(&w, t->body, NULL, &lo, &res);
    cr_assert(!s.bad, "%s under %s: schedule %llu is longer than %d steps "
              "or not deterministic", t->name, cs_mm_name(m),
              (unsigned long long)runs, MAXSTEPS);
    cr_assert_eq(rc, 0, "%s under %s: schedule %llu did not end cleanly "
                 "(reason %u)", t->name, cs_mm_name(m),
                 (unsigned long long)runs, res.abort_reason);
    char o[64];
    t->outcome(&w, o, sizeof(o));
    if (!listed(seen, o)) {
      size_t k = strlen(seen);
      snprintf(seen + k, n - k, "%s%s", k ? "|" : "", o);
    }
    runs++;
  } while (dfs_next(&s));
  fclose(rep);
  cs_launch_pool_close(pool);
  cs_world_destroy(&w);
  return runs;
}

/* Whether two '|'-lists hold the same outcomes. */
static int same_set(const char *a, const char *b)
{
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", a);
  size_t na = 0, nb = 0;
  for (char *save, *o = strtok_r(buf, "|", &save); o;
       o = strtok_r(NULL, "|", &save), na++)
    if (!listed(b, o))
      return 0;
  for (const char *p = b; p; p = strchr(p + 1, '|'))
    nb++;
  return na == nb;
}

static void setup(void)
{
  regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
  cr_assert_neq(regs, MAP_FAILED);
}

static void check_model(cs_mm_t m)
{
  setup();
  for (size_t i = 0; i < NLITMUS; i++) {
    const litmus_t *t = &table[i];
    char seen[256];
    uint64_t runs = explore_all(t, m, seen, sizeof(seen));
    cr_expect(same_set(seen, t->allowed[m]),
              "%-16s under %-7s: observed {%s}, allowed {%s} (%llu "
              "schedules)", t->name, cs_mm_name(m), seen, t->allowed[m],
              (unsigned long long)runs);
    cr_log_info("%-16s %-7s {%s} in %llu schedules", t->name, cs_mm_name(m),
                seen, (unsigned long long)runs);
  }
}

Test(litmus, sc, .timeout = 600) { check_model(CS_MM_SC); }
Test(litmus, fifo, .timeout = 600) { check_model(CS_MM_FIFO); }
Test(litmus, relaxed, .timeout = 600) { check_model(CS_MM_RELAXED); }
Test(litmus, a2a3, .timeout = 600) { check_model(CS_MM_A2A3); }

/* The list matcher the test rests on. */
Test(litmus, outcome_sets)
{
  cr_assert(listed("0|1", "1"));
  cr_assert(listed("0,1|1,1", "1,1"));
  cr_assert(!listed("10|1", "0"));
  cr_assert(!listed("0,1|1,1", "1"));
  cr_assert(same_set("1|0", "0|1"));
  cr_assert(!same_set("1", "0|1"));
  cr_assert(!same_set("0|1", "1"));
  cr_assert(!same_set("0|2", "0|1"));
}
