/*
 * stop.c - ending a controlled run from the launcher: the first stop wins
 * the abort word and its message, and every sleeping rank is woken so it
 * sees the abort. Called by the step loop (core.c), the strategies
 * (deadlock, replay divergence, end of interactive input) and launch.c.
 */
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>

#include "../../window/cs_error.h"
#include "internal.h"

void cs__sched_wake_all(cs_sched_t *s)
{
  for (uint32_t r = 0; r < s->n; r++)
    sem_post(&slot_of(s->w, r)->sem);
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
  cs__sched_wake_all(s);
  return CS_SCHED_STOPPED;
}

