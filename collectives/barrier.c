/*
 * barrier.c - the self-clearing epilogue every algorithm shares (barrier.h
 * has its contract, and the all-to-all barrier, inline), and the wording
 * of a wait's place that the chunked algorithms (mesh, host) share.
 * Called by the algorithm bodies; calls only the device API (and the
 * silent-cell predicate a body hands it).
 */
#include "barrier.h"

#include <stdio.h>

/* The epilogue's reset: every cell a peer signalled (not `silent`) back
 * to 0 by its row's total. Inlined twice, once with no predicate. */
static inline __attribute__((always_inline)) void
reset_rows(cs_dev_t *d, uint32_t nrows, int32_t row_total, int32_t last_total,
           cs__ar_silent_fn silent, const cs_ar_cfg_t *c)
{
  uint32_t n = d->nranks, me = d->rank;
  for (uint32_t row = 0; row < nrows; row++) {
    int32_t by = row + 1 == nrows ? -last_total : -row_total;
    for (uint32_t s = 0; s < n; s++)
      if (s != me && !(silent && silent(c, me, (uint64_t)row * n + s)))
        cs_notify(d, me, CS_AR_SLOT_SIGNAL, row * n + s, CS_NOTIFY_ADD, by);
  }
}

void cs__ar_epilogue(cs_dev_t *d, const cs_knobs_t *k, uint32_t nrows,
                     int32_t row_total, int32_t last_total, cs_ar_sigbad_t *bad)
{
  cs__ar_epilogue_some(d, k, nrows, row_total, last_total, NULL, NULL, bad);
}

void cs__ar_epilogue_some(cs_dev_t *d, const cs_knobs_t *k, uint32_t nrows,
                          int32_t row_total, int32_t last_total,
                          cs__ar_silent_fn silent, const cs_ar_cfg_t *c,
                          cs_ar_sigbad_t *bad)
{
  uint32_t n = d->nranks, me = d->rank;
#define SIGNALLED(row, s)                                                      \
  ((s) != me && !(silent && silent(c, me, (uint64_t)(row) * n + (s))))
  if (bad) {
    /* Harness check, not a device event: the own cells right before the
     * reset must hold exactly the reference's final values. */
    const cs_slot_t *sl = &d->layout->slot[CS_AR_SLOT_SIGNAL];
    for (uint32_t row = 0; row < nrows; row++)
      for (uint32_t s = 0; s < n; s++) {
        int32_t total = row + 1 == nrows ? last_total : row_total;
        int32_t want = SIGNALLED(row, s) ? total : 0;
        int32_t got = __atomic_load_n(
            (const int32_t *)(d->mywin + cs_slot_cell_off(sl, row * n + s)),
            __ATOMIC_ACQUIRE);
        if (got != want && bad->n++ == 0) {
          bad->cell = row * n + s;
          bad->got = got;
          bad->want = want;
        }
      }
  }
#undef SIGNALLED
  if (!k->epilogue)
    return;
  if (silent)
    reset_rows(d, nrows, row_total, last_total, silent, c);
  else /* every peer's cell: the same loop without the test */
    reset_rows(d, nrows, row_total, last_total, NULL, NULL);
}

/* Mesh and host: target 1 is the ready barrier, 2 + ci chunk ci's
 * read-complete barrier. */
void cs__ar_chunked_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                          uint32_t rank, uint32_t cell, int32_t target,
                          char *buf, size_t n)
{
  (void)k;
  (void)rank;
  uint32_t from = cell % c->nranks;
  if (target == 1)
    snprintf(buf, n, "ready barrier, rank %u's notify", from);
  else
    snprintf(buf, n, "read-complete of chunk %d, rank %u's notify",
             target - 2, from);
}

void cs__ar_neighbour_where(const cs_ar_cfg_t *c, uint32_t cell, char letter,
                            uint32_t first, const char *last, char *buf,
                            size_t n)
{
  uint32_t nr = c->nranks, row = cell / nr, from = cell % nr;
  if (row + 1 < nr)
    snprintf(buf, n, "neighbour barrier of RS %c%u, rank %u's notify", letter,
             row + first, from);
  else if (row + 2 < 2 * nr)
    snprintf(buf, n, "neighbour barrier of AG %c%u, rank %u's notify", letter,
             row - (nr - 1) + first, from);
  else
    snprintf(buf, n, "%s, rank %u's notify", last, from);
}

bool cs__ar_two_neighbours_silent(const cs_ar_cfg_t *c, uint32_t rank,
                                  uint64_t cell)
{
  uint32_t n = c->nranks, src = (uint32_t)(cell % n);
  return src != (rank + n - 1) % n && src != (rank + 1) % n;
}

void cs__ar_push_ring_where(const cs_ar_cfg_t *c, const cs_knobs_t *k,
                            uint32_t rank, uint32_t cell, int32_t target,
                            char *buf, size_t n)
{
  (void)k;
  (void)rank;
  (void)target;
  cs__ar_neighbour_where(c, cell, 's', 1,
                         "final barrier (every push into this window has "
                         "landed)", buf, n);
}
