/*
 * transport_ctl.c - the controlled transport (transport.h): every event is
 * a scheduling point (the rank posts it and sleeps until the scheduler
 * grants it, sched.h), so exactly one actor runs at a time. Under sc,
 * effects land at issue as in the free transport; under fifo and relaxed,
 * stores, puts and notifies are posted to the rank's DMA queue and land
 * when the scheduler picks that DMA engine. A wait is granted only once
 * its condition holds and a fence only once the rank's queue is empty, so
 * neither blocks here. Loads read memory as it is when they run and are
 * never consumed in place (other actors run between events). Used by the
 * ranks of a controlled run (cs_launch with a scheduler).
 */
#include "transport.h"

#include <string.h>

#include "sched.h"

static void ctl_load(cs_dev_t *d, const cs_event_t *ev, void *dst,
                     size_t nbytes)
{
  memcpy(dst, cs_dev_addr(d, ev->peer, ev->slot, ev->elem_off), nbytes);
}

/* Whether posted ops queue for the DMA engine (fifo, relaxed). */
static inline int posted(const cs_dev_t *d)
{
  return d->world->ctl->controlled > 1 + CS_MM_SC;
}

static void ctl_write(cs_dev_t *d, cs_event_t *ev, const void *src,
                      size_t nbytes)
{
  if (posted(d))
    cs__sched_post(d, ev, src, (uint32_t)nbytes);
  else
    cs__free_write(d, ev, src, nbytes);
}

static int32_t ctl_notify(cs_dev_t *d, cs_event_t *ev)
{
  if (!posted(d))
    return cs__free_notify(d, ev);
  cs__sched_post(d, ev, NULL, 0);
  return 0;
}

const cs_dev_ops_t cs_transport_controlled = {
    .name = "controlled",
    .point = cs__sched_point,
    .load = ctl_load,
    .view = NULL,
    .write = ctl_write,
    .notify = ctl_notify,
    .wait = cs__free_wait, /* granted only when satisfied: returns at once */
    .fence = cs__free_fence, /* granted only with an empty queue */
    .done = cs__sched_done,
};
