/*
 * builtin.c - the built-in allreduces (every algorithm of the registry) as
 * registrations of include/collsim/collective.h, so a program that runs
 * collectives through cs_coll_run can run them like its own: the body is
 * cs_allreduce with the reference's knobs, the expected result is the
 * oracle's, the signal cells end at 0 (the self-clearing epilogue). The
 * `collsim run --algo ring` path runs the same job (run/coll.c) with the
 * built-in rank body of allreduce.c instead, which also checks every
 * cell's final value before the last epilogue and takes --bug. Called by
 * run/coll.c.
 */
#include "builtin.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "allreduce.h"
#include "geometry.h"
#include "oracle.h"

static cs_ar_cfg_t ar_cfg(cs_algo_t a, const cs_coll_cfg_t *g)
{
  return (cs_ar_cfg_t){.algo = a, .dtype = g->dtype, .op = g->op,
                       .nranks = g->nranks, .count = g->count,
                       .tile_bytes = g->tile_bytes, .iters = g->iters};
}

static int body(cs_algo_t a, cs_dev_t *d, const cs_coll_cfg_t *g)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  cs_ar_tiles_t t;
  int err = cs_ar_tiles_init(&t, &c);
  if (err < 0)
    return cs_dev_error(d, err);
  cs_allreduce(d, &c, &t);
  cs_ar_tiles_fini(&t);
  return 0;
}

static int slots(cs_algo_t a, const cs_coll_cfg_t *g, cs_coll_slot_t *s)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  uint32_t es = cs_dtype_size(g->dtype);
  s[0] = (cs_coll_slot_t){"data", g->count * es, es};
  s[1] = (cs_coll_slot_t){"signal", cs_ar_signal_cells(&c) * 4, 4};
  if (!cs_algo_desc(a)->out_slot)
    return 2;
  s[2] = (cs_coll_slot_t){"out", g->count * es, es};
  return 3;
}

static void expect(cs_algo_t a, const cs_coll_cfg_t *g, const void *in,
                   uint32_t rank, void *out)
{
  cs_oracle_expect(a, g->dtype, g->op, g->nranks, g->count, in, rank, out);
}

/* The teach facts, from the descriptor (teach_flags: fill_regs). */
static uint64_t parts(cs_algo_t a, const cs_coll_cfg_t *g)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  return cs_algo_desc(a)->parts(&c);
}

static uint64_t part_lo(cs_algo_t a, const cs_coll_cfg_t *g, uint64_t i)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  return cs_algo_desc(a)->part_lo(&c, i);
}

static double volume(cs_algo_t a, const cs_coll_cfg_t *g, const char **what)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  cs_algo_volume_t v = {0, 0, "?"};
  cs_algo_desc(a)->volume(&c, 0, cs_dtype_size(g->dtype), &v);
  *what = v.what;
  return v.formula;
}

/* Without a defect's knobs: the registration runs the algorithm as the
 * reference has it. */
static void wait_where(cs_algo_t a, const cs_coll_cfg_t *g, uint32_t rank,
                       uint64_t cell, int32_t target, char *buf, size_t n)
{
  cs_ar_cfg_t c = ar_cfg(a, g);
  cs_ar_wait_where(&c, rank, CS_AR_SLOT_SIGNAL,
                   cell > UINT32_MAX ? UINT32_MAX : (uint32_t)cell, target,
                   buf, n);
}

/* Thunk sets below: at least one per algorithm id. */
#define MAX_BUILTINS 12

/* The refusal of a configuration the algorithm does not take, in the
 * words of its descriptor: a rank count above its limit ("the host
 * builtin supports at most 16 ranks") or its own precondition ("twophase
 * needs a count that is a multiple of the rank count"). */
static const char *refuse(cs_algo_t a, const cs_coll_cfg_t *g)
{
  static char why[MAX_BUILTINS][128];
  const cs_algo_desc_t *ad = cs_algo_desc(a);
  cs_ar_cfg_t c = ar_cfg(a, g);
  if (g->nranks > ad->max_ranks)
    snprintf(why[a], sizeof(why[a]), "%s supports at most %u ranks",
             ad->limit_who ? ad->limit_who : ad->name, ad->max_ranks);
  else if (ad->meets && g->nranks >= 1 && !ad->meets(&c))
    snprintf(why[a], sizeof(why[a]), "%s needs %s", ad->name, ad->precondition);
  else
    return NULL;
  return why[a];
}

/* Each registration's functions, for the algorithm of id A (the struct
 * has no argument to carry it). */
#define BUILTIN_FNS(A)                                                         \
  static int body_##A(cs_dev_t *d, const cs_coll_cfg_t *g)                     \
  { return body(A, d, g); }                                                    \
  static int slots_##A(const cs_coll_cfg_t *g, cs_coll_slot_t *s)              \
  { return slots(A, g, s); }                                                   \
  static void expect_##A(const cs_coll_cfg_t *g, const void *in,               \
                         uint32_t rank, void *out)                             \
  { expect(A, g, in, rank, out); }                                             \
  static const char *refuse_##A(const cs_coll_cfg_t *g)                        \
  { return refuse(A, g); }                                                     \
  static uint64_t parts_##A(const cs_coll_cfg_t *g) { return parts(A, g); }   \
  static uint64_t part_lo_##A(const cs_coll_cfg_t *g, uint64_t i)              \
  { return part_lo(A, g, i); }                                                 \
  static double volume_##A(const cs_coll_cfg_t *g, const char **w)             \
  { return volume(A, g, w); }                                                  \
  static void where_##A(const cs_coll_cfg_t *g, uint32_t r, uint64_t cell,     \
                        int32_t tg, char *b, size_t n)                         \
  { wait_where(A, g, r, cell, tg, b, n); }
#define BUILTIN_ROW(A)                                                         \
  {body_##A, slots_##A, expect_##A, refuse_##A, parts_##A, part_lo_##A,        \
   volume_##A, where_##A}

BUILTIN_FNS(0) BUILTIN_FNS(1) BUILTIN_FNS(2) BUILTIN_FNS(3)
BUILTIN_FNS(4) BUILTIN_FNS(5) BUILTIN_FNS(6) BUILTIN_FNS(7)
BUILTIN_FNS(8) BUILTIN_FNS(9) BUILTIN_FNS(10) BUILTIN_FNS(11)

static const struct {
  int (*body)(cs_dev_t *, const cs_coll_cfg_t *);
  int (*slots)(const cs_coll_cfg_t *, cs_coll_slot_t *);
  void (*expect)(const cs_coll_cfg_t *, const void *, uint32_t, void *);
  const char *(*refuse)(const cs_coll_cfg_t *);
  uint64_t (*parts)(const cs_coll_cfg_t *);
  uint64_t (*part_lo)(const cs_coll_cfg_t *, uint64_t);
  double (*volume)(const cs_coll_cfg_t *, const char **);
  void (*wait_where)(const cs_coll_cfg_t *, uint32_t, uint64_t, int32_t,
                     char *, size_t);
} fns[] = {BUILTIN_ROW(0), BUILTIN_ROW(1), BUILTIN_ROW(2), BUILTIN_ROW(3),
           BUILTIN_ROW(4), BUILTIN_ROW(5), BUILTIN_ROW(6), BUILTIN_ROW(7),
           BUILTIN_ROW(8), BUILTIN_ROW(9), BUILTIN_ROW(10), BUILTIN_ROW(11)};
_Static_assert(sizeof(fns) / sizeof(fns[0]) == MAX_BUILTINS &&
                   CS_NALGOS <= MAX_BUILTINS,
               "one BUILTIN_FNS per algorithm id: add rows");

static cs_collective_t regs[CS_NALGOS];

/* Every registration, from its descriptor. */
static void fill_regs(void)
{
  for (uint32_t a = 0; a < CS_NALGOS; a++) {
    const cs_algo_desc_t *ad = cs_algo_desc(a);
    regs[a] = (cs_collective_t){
        .abi = CS_COLLECTIVE_ABI, .size = sizeof(cs_collective_t),
        .name = ad->name, .what = ad->what, .refuse = fns[a].refuse,
        .slots = fns[a].slots, .in_slot = CS_AR_SLOT_DATA,
        .out_slot = ad->out_slot ? CS_AR_SLOT_OUT : CS_AR_SLOT_DATA,
        .signal_slot = CS_AR_SLOT_SIGNAL,
        .body = fns[a].body, .expect = fns[a].expect,
        /* the names traces, check and stories use, as the built-in run
         * records them: phase names, or "main cSTEP" for a body that
         * marks chunks; its first barrier orders the stage-in */
        .phases = ad->phases, .nphases = ad->nphases,
        .ready_barrier = ad->ready_barrier,
        .read_done_barrier = ad->read_done_barrier,
        .flags = CS_COLL_NO_STAGE_FENCE |
                 (ad->phases ? 0 : CS_COLL_CHUNK_TAGS)};
    if (!ad->teach)
      continue; /* teach does not take it */
    regs[a].part_letter = ad->part_letter;
    regs[a].teach_flags =
        (ad->pull_ring ? CS_COLL_TEACH_PULL_RING : 0) |
        (ad->push ? CS_COLL_TEACH_PUSH : 0) |
        (ad->fold == CS_FOLD_RING_EQUAL || ad->fold == CS_FOLD_RING_BIDIR
             ? CS_COLL_TEACH_OWN_FIRST : 0);
    regs[a].parts = fns[a].parts;
    regs[a].part_lo = fns[a].part_lo;
    regs[a].legend = ad->legend;
    regs[a].volume = fns[a].volume;
    regs[a].wait_where = fns[a].wait_where;
  }
}

const cs_collective_t *cs_builtin_collective(const char *name)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  int a = cs_algo_parse(name);
  if (a < 0)
    return NULL;
  pthread_once(&once, fill_regs);
  return &regs[a];
}

int cs_builtin_id(const cs_collective_t *c)
{
  for (uint32_t a = 0; a < CS_NALGOS; a++)
    if (c == &regs[a])
      return (int)a;
  return -1;
}
