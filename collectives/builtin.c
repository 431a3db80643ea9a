/*
 * builtin.c - the three built-in allreduces (mesh, ring, host) as
 * registrations of include/collsim/collective.h, so a program that runs
 * collectives through cs_coll_run can run them like its own: the body is
 * cs_allreduce with the reference's knobs, the expected result is the
 * oracle's, the signal cells end at 0 (the self-clearing epilogue). The
 * `collsim run --algo ring` path does not come here: it keeps its own
 * rank body (allreduce.c), which also checks every cell's final value
 * before the last epilogue and takes --bug. Called by run/coll.c.
 */
#include "builtin.h"

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
  return 2;
}

static void expect(cs_algo_t a, const cs_coll_cfg_t *g, const void *in,
                   uint32_t rank, void *out)
{
  cs_oracle_expect(a, g->dtype, g->op, g->nranks, g->count, in, rank, out);
}

static const char *refuse(cs_algo_t a, const cs_coll_cfg_t *g)
{
  return g->nranks > cs_ar_max_ranks(a)
             ? "the host builtin supports at most 16 ranks" : NULL;
}

#define BUILTIN(A, NAME, STR, WHAT)                                            \
  static int NAME##_body(cs_dev_t *d, const cs_coll_cfg_t *g)                  \
  { return body(A, d, g); }                                                    \
  static int NAME##_slots(const cs_coll_cfg_t *g, cs_coll_slot_t *s)           \
  { return slots(A, g, s); }                                                   \
  static void NAME##_expect(const cs_coll_cfg_t *g, const void *in,            \
                            uint32_t rank, void *out)                          \
  { expect(A, g, in, rank, out); }                                             \
  static const char *NAME##_refuse(const cs_coll_cfg_t *g)                     \
  { return refuse(A, g); }                                                     \
  static const cs_collective_t NAME##_reg = {                                  \
      .abi = CS_COLLECTIVE_ABI, .size = sizeof(cs_collective_t),               \
      .name = STR, .what = WHAT, .refuse = NAME##_refuse,                    \
      .slots = NAME##_slots, .in_slot = CS_AR_SLOT_DATA,                       \
      .out_slot = CS_AR_SLOT_DATA, .signal_slot = CS_AR_SLOT_SIGNAL,           \
      .body = NAME##_body, .expect = NAME##_expect};

BUILTIN(CS_ALGO_MESH, mesh, "mesh", "InCore mesh allreduce of PyPTO PR #2161")
BUILTIN(CS_ALGO_RING, ring, "ring", "InCore ring allreduce of PyPTO PR #2161")
BUILTIN(CS_ALGO_HOST, host, "host", "host allreduce builtin of PyPTO PR #2161")
BUILTIN(CS_ALGO_RING_PUSH, ring_push, "ring-push",
        "InCore ring allreduce of PyPTO PR #2280 (push model)")

const cs_collective_t *cs_builtin_collective(const char *name)
{
  static const cs_collective_t *const regs[CS_NALGOS] = {
      &mesh_reg, &ring_reg, &host_reg, &ring_push_reg};
  int a = cs_algo_parse(name);
  return a < 0 ? NULL : regs[a];
}
