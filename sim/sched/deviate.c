/*
 * deviate.c - the deviate:LIST strategy: a fixed default order, except at
 * the listed decision points, where a named actor goes next.
 *
 * The default never preempts: the rank that ran last runs again while it
 * can; otherwise the lowest enabled actor (ranks by index, then DMA
 * landings by rank, oldest first). A deviation `Z>Y` says: right after
 * actor Z has run, actor Y runs, if Y is enabled then (else the deviation
 * does nothing). Actors are named by what they are, not by a global step
 * index: `R.K` is rank R's event number K (from 0, in its program order),
 * `R#D` the landing of rank R's DMA op number D (its rank-local id, from
 * 1), and `^` as Z is the start of the run. So a run's event sequence per
 * rank, which does not depend on the schedule, anchors every deviation, and
 * removing one deviation leaves the others meaning what they meant: this
 * is what `collsim shrink` removes deviations from. `deviate:none` is the
 * default order itself.
 *
 * Owns the list's syntax (cs__deviate_parse, used by cs_sched_parse to
 * refuse a bad list before a run starts) and its state: the parsed list,
 * each rank's event count, the actor that ran last. Called through the
 * strategy table (strategy.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* One actor: a rank's event (dma 0, id = its event number) or a DMA
 * landing (dma 1, id = the op's rank-local id); rank UINT32_MAX = the
 * start of the run. */
typedef struct actor_id {
  uint32_t rank;
  uint32_t dma;
  uint64_t id;
} actor_id_t;

typedef struct deviation {
  actor_id_t after, run;
} deviation_t;

/* One block with the events after it (s->state_bytes: it travels with
 * rank turns); the list, which pick only reads, is allocated apart. */
typedef struct deviate {
  deviation_t *d;
  uint64_t     n;
  uint64_t    *events; /* per rank: events granted so far */
  actor_id_t   last;   /* the actor that ran last */
} deviate_t;

static int parse_num(const char **p, uint64_t *v)
{
  char *end;
  if (**p < '0' || **p > '9')
    return -1;
  errno = 0;
  *v = strtoull(*p, &end, 10);
  *p = end;
  return errno ? -1 : 0; /* past 2^64 - 1 */
}

/* One actor at *p; start: `^` is accepted. */
static int parse_actor(const char **p, actor_id_t *a, int start)
{
  uint64_t r, id;
  if (start && **p == '^') {
    (*p)++;
    *a = (actor_id_t){UINT32_MAX, 0, 0};
    return 0;
  }
  if (parse_num(p, &r) < 0 || r >= 4096 || (**p != '.' && **p != '#'))
    return -1;
  uint32_t dma = *(*p)++ == '#';
  if (parse_num(p, &id) < 0 || (dma && id == 0))
    return -1;
  *a = (actor_id_t){(uint32_t)r, dma, id};
  return 0;
}

int64_t cs__deviate_parse(const char *s, void *out, uint64_t cap)
{
  deviation_t *d = out;
  uint64_t n = 0;
  if (!strcmp(s, "none"))
    return 0;
  for (const char *p = s;; p++) {
    deviation_t x;
    if (parse_actor(&p, &x.after, 1) < 0 || *p++ != '>' ||
        parse_actor(&p, &x.run, 0) < 0 || (*p && *p != ','))
      return -1;
    if (d && n < cap)
      d[n] = x;
    n++;
    if (!*p)
      return (int64_t)n;
  }
}

static void fini(cs_sched_t *s)
{
  deviate_t *v = s->state;
  if (v)
    free(v->d);
  free(v);
  s->state = NULL;
}

static int init(cs_sched_t *s)
{
  size_t bytes = sizeof(deviate_t) + s->n * sizeof(uint64_t);
  deviate_t *v = calloc(1, bytes);
  if (!(s->state = v))
    return -ENOMEM;
  s->state_bytes = bytes;
  v->events = (uint64_t *)(v + 1);
  int64_t n = s->cfg.deviate ? cs__deviate_parse(s->cfg.deviate, NULL, 0) : -1;
  if (n < 0)
    return -EINVAL;
  v->d = calloc(n ? (size_t)n : 1, sizeof(deviation_t));
  if (!v->d)
    return -ENOMEM;
  v->n = (uint64_t)cs__deviate_parse(s->cfg.deviate, v->d, (uint64_t)n);
  v->last = (actor_id_t){UINT32_MAX, 0, 0};
  return 0;
}

/* What enabled actor i is. */
static actor_id_t actor_of(const cs_sched_t *s, const deviate_t *v, uint32_t i)
{
  const cs_actor_t *a = &s->en[i];
  if (a->op < 0)
    return (actor_id_t){a->rank, 0, v->events[a->rank]};
  return (actor_id_t){a->rank, 1, slot_of(s->w, a->rank)->q[a->op].dma_id};
}

static int same(const actor_id_t *a, const actor_id_t *b)
{
  return a->rank == b->rank && a->dma == b->dma && a->id == b->id;
}

/* The index of the listed actor to run after v->last, or -1. */
static int64_t deviation(const cs_sched_t *s, const deviate_t *v, uint32_t k)
{
  for (uint64_t j = 0; j < v->n; j++) {
    if (!same(&v->d[j].after, &v->last))
      continue;
    for (uint32_t i = 0; i < k; i++) {
      actor_id_t a = actor_of(s, v, i);
      if (same(&a, &v->d[j].run))
        return i;
    }
  }
  return -1;
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  deviate_t *v = s->state;
  int64_t i = deviation(s, v, k);
  for (uint32_t j = 0; i < 0 && j < k; j++)
    if (!v->last.dma && s->en[j].op < 0 && s->en[j].rank == v->last.rank)
      i = j; /* the rank that ran last goes on */
  if (i < 0)
    i = 0;
  v->last = actor_of(s, v, (uint32_t)i);
  if (s->en[i].op < 0)
    v->events[s->en[i].rank]++;
  return i;
}

const cs_strategy_ops_t cs__strategy_deviate = {
  .name = "deviate",
  .turns = 1,
  .init = init,
  .pick = pick,
  .fini = fini,
};
