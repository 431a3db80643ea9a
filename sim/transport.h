/*
 * transport.h - the transports of the device core: the tables of how an
 * event takes effect (cs_dev_ops_t, dev.h). The launcher picks one per run
 * and hands it to cs_dev_init; the core and algorithm code never name one.
 *
 *   cs_transport_free        free mode: ranks run in parallel over the
 *                            shared windows; stores, puts and notifies
 *                            land at issue; waits spin, yield, then sleep
 *                            on the cell's futex (transport_free.c).
 *   cs_transport_controlled  controlled mode: every event is a scheduling
 *                            point; under fifo and relaxed, stores, puts
 *                            and notifies are posted to the rank's DMA
 *                            queue and the scheduler lands them
 *                            (transport_ctl.c, sched.h).
 */
#ifndef CS_TRANSPORT_H
#define CS_TRANSPORT_H

#include "dev.h"

extern const cs_dev_ops_t cs_transport_free;
extern const cs_dev_ops_t cs_transport_controlled;

/* Pieces of the free transport that the controlled one shares: an effect
 * that lands at once in the shared windows. */
/* The address of window offset `off` in `peer`'s window, in this process. */
static inline void *cs__shm_at(const cs_dev_t *d, uint32_t peer, uint64_t off)
{
  return cs_win_remote(&d->ctx, d->mywin + off, peer);
}
void cs__free_write(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                    const void *src, size_t nbytes);
void cs__free_load2d(cs_dev_t *d, const cs_event_t *ev, uint64_t off,
                     void *dst, size_t rowbytes, uint32_t rows, uint64_t pitch);
void cs__free_write2d(cs_dev_t *d, cs_event_t *ev, uint64_t off,
                      const void *src, size_t rowbytes, uint32_t rows,
                      uint64_t pitch);
int32_t cs__free_notify(cs_dev_t *d, cs_event_t *ev, uint64_t off);
int32_t cs__free_wait(cs_dev_t *d, const cs_event_t *ev, uint64_t off);
void cs__free_fence(cs_dev_t *d, const cs_event_t *ev);

#endif
