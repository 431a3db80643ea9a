/*
 * stop.c - ending a controlled run from the launcher: the first stop wins
 * the abort word and its message, and every sleeping rank is woken so it
 * sees the abort (at a deadlock, in rank order, so that the waits it
 * stopped are recorded in that order). Called by the step loop (core.c),
 * the strategies (deadlock, replay divergence, end of interactive input)
 * and launch.c.
 */
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "../../window/cs_error.h"
#include "internal.h"

void cs__sched_wake_all(cs_sched_t *s)
{
  for (uint32_t r = 0; r < s->n; r++)
    sem_post(&slot_of(s->w, r)->sem);
}

/* A deadlock's ranks, woken one at a time in rank order: each posted
 * rank records the wait it was stopped in (its wait-begin, with the next
 * sequence number) and then says it stopped (its reason), before the
 * next is woken. Woken at once, they took their numbers in the order the
 * OS ran them: one schedule, two traces. A rank that has not answered in
 * about a second (it died, or it is stopped: SIGSTOP, a debugger) is
 * passed over; the launcher waits that long for it. Only the launcher
 * stops for a deadlock (core.c): a rank would wait for itself. */
static void wake_in_order(cs_sched_t *s)
{
  cs_ctl_t *c = s->w->ctl;
  for (uint32_t r = 0; r < s->n; r++) {
    if (__atomic_load_n(&slot_of(s->w, r)->state, __ATOMIC_ACQUIRE) != SR_POSTED)
      continue;
    sem_post(&slot_of(s->w, r)->sem);
    for (int t = 0; t < 10000 &&
                    !__atomic_load_n(&c->rank[r].reason, __ATOMIC_ACQUIRE);
         t++) {
      struct timespec ts = {0, 100000};
      nanosleep(&ts, NULL);
    }
  }
}

int cs__sched_stop(cs_sched_t *s, uint32_t reason, const char *fmt, ...)
{
  cs_ctl_t *c = s->w->ctl;
  uint32_t expect = CS_ABORT_NONE;
  if (__atomic_compare_exchange_n(&c->abort_word, &expect, reason, 0,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    c->abort_rank = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->abort_msg, sizeof(c->abort_msg), fmt, ap);
    va_end(ap);
  }
  if (reason == CS_ABORT_DEADLOCK)
    wake_in_order(s);
  cs__sched_wake_all(s);
  return CS_SCHED_STOPPED;
}

