/*
 * ar_internal.h - the three algorithm bodies as cs_allreduce (allreduce.c)
 * dispatches to them; each is defined in its own file (mesh.c, ring.c,
 * host.c) and built from the steps of barrier.h. Internal to collectives/.
 */
#ifndef CS_AR_INTERNAL_H
#define CS_AR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../sim/dev.h"
#include "ar_config.h"
#include "barrier.h"
#include "bugs.h"

/* One call of the algorithm on the data in the own window's data slot,
 * run with knobs k (cs_bug_knobs of c, computed once by the caller),
 * ending with the epilogue; `bad` as for cs__ar_epilogue. */
void cs__ar_mesh(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad);
void cs__ar_ring(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad);
void cs__ar_host(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                 cs_ar_tiles_t *t, cs_ar_sigbad_t *bad);
void cs__ar_ring_push(cs_dev_t *d, const cs_ar_cfg_t *c, const cs_knobs_t *k,
                      cs_ar_tiles_t *t, cs_ar_sigbad_t *bad);

/* The ring's descriptor pieces (ring.c) that another ring over the same
 * segments and signal rows shares (algo.h has what each one is). */
struct cs_algo_notifies;
uint64_t cs__ring_cells(const cs_ar_cfg_t *c);
int32_t cs__ring_final(const cs_ar_cfg_t *c);
void cs__ring_notifies(const cs_ar_cfg_t *c, int single,
                       struct cs_algo_notifies *s);
uint64_t cs__ring_total(const cs_ar_cfg_t *c, uint32_t es, const char **what);
uint64_t cs__ring_seg(const cs_ar_cfg_t *c, uint64_t k, uint32_t es);
uint64_t cs__ring_parts(const cs_ar_cfg_t *c);
uint64_t cs__ring_part_lo(const cs_ar_cfg_t *c, uint64_t i);
/* A wait's place on a ring's rows (row t: RS round t, N-1+t: AG round
 * t; READY then `second`, the subchunk's other barrier). */
void cs__ring_where_named(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                          uint32_t cell, int32_t target, const char *second,
                          char *buf, size_t n);

/* The pieces of an algorithm of N equal chunks (count a multiple of N,
 * chunk q from q * count / N), twophase.c's, which ring_nb.c shares:
 * the precondition, 2(N-1)/N*S remote bytes per rank, the parts. */
struct cs_algo_volume;
bool cs__chunks_meets(const cs_ar_cfg_t *c);
void cs__chunks_volume(const cs_ar_cfg_t *c, uint32_t r, uint32_t es,
                       struct cs_algo_volume *v);
uint64_t cs__chunks_parts(const cs_ar_cfg_t *c);
uint64_t cs__chunks_part_lo(const cs_ar_cfg_t *c, uint64_t i);

/* Whether simpler's kernels (twophase, ring-nb, onephase) run collsim's
 * DONE barrier, and so have its signal row: with self-clearing signals
 * only (upstream's single-use kernels have none), and not with a defect
 * that drops the call's last barrier. */
static inline bool cs__has_done(const cs_knobs_t *k)
{
  return k->epilogue && k->final_barrier;
}

/* The final value of simpler's kernels' signal cells (twophase, ring-nb,
 * onephase): one notify per barrier row, so 1. */
int32_t cs__one_per_row(const cs_ar_cfg_t *c);

#endif
