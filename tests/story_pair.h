/*
 * story_pair.h - the pair of accesses a `collsim shrink` story tells,
 * judged from the shrunk trace itself, by construction: a load reads the
 * window as it is when it runs and a posted write takes effect when its
 * dma-land record lands it (docs/memory-models.md), so a load that runs
 * before the told write lands saw the old bytes, one that runs after saw
 * the new ones. A story about a write meant first (a missing fence or
 * READY barrier) must tell a load that saw the old value; one about a
 * load meant first (a read-complete barrier) a write that landed before
 * the load. Header-only, for test_shrink.c and test_explain.c.
 */
#ifndef CS_TEST_STORY_PAIR_H
#define CS_TEST_STORY_PAIR_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../sim/trace.h"
#include "harness.h"

/* The record of seq `seq` in t, NULL if none. */
static inline const cs_trace_rec_t *sp_rec(const cs_trace_t *t, uint64_t seq)
{
  for (uint64_t i = 0; i < t->n; i++)
    if (t->rec[i].seq == seq)
      return &t->rec[i];
  return NULL;
}

/* The seq of the dma-land record of posted op x (its own seq when it was
 * not posted), UINT64_MAX when it never landed. */
static inline uint64_t sp_landing(const cs_trace_t *t, const cs_trace_rec_t *x)
{
  if (!x->dma_id)
    return x->seq;
  for (uint64_t i = 0; i < t->n; i++)
    if (t->rec[i].kind == CS_TR_DMA_LAND && t->rec[i].rank == x->rank &&
        t->rec[i].dma_id == x->dma_id)
      return t->rec[i].seq;
  return UINT64_MAX;
}

/* The story's told write and load: the "(#SEQ)" of its line that
 * "stores"/"puts" and of the one that "loads ... and sees"; *old: that
 * line says "sees the old value". Returns 1 when both were found. */
static inline int sp_told(const char *out, uint64_t *w, uint64_t *r, int *old)
{
  const char *s = strstr(out, "story:\n");
  int hw = 0, hr = 0;
  for (const char *l = s; l && *l;) {
    const char *e = strchr(l, '\n');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
    const char *h = strrchr(line, '#');
    unsigned long long seq;
    if (h && sscanf(h, "#%llu)", &seq) == 1) {
      if (!hw && (strstr(line, " stores ") || strstr(line, " puts "))) {
        *w = seq;
        hw = 1;
      } else if (!hr && strstr(line, " loads ") && strstr(line, " and sees the ")) {
        *r = seq;
        *old = strstr(line, " and sees the old value") != NULL;
        hr = 1;
      }
    }
    l = e ? e + 1 : NULL;
  }
  return hw && hr;
}

/* Whether the story in `out` (shrink's output) about trace `path` tells a
 * write and a load of the same bytes of one window where the load saw the
 * old value (want_old) or the new one (!want_old), and says so; and, when
 * bad_index is not UINT64_MAX, whether the load covers that element. On
 * failure, why says what is wrong. */
static inline int story_pair_ok(const char *path, const char *out, int want_old,
                                uint64_t bad_index, char *why, size_t n)
{
  uint64_t ws = 0, rs = 0;
  int old = 0;
  if (!sp_told(out, &ws, &rs, &old))
    return snprintf(why, n, "the story tells no write and load"), 0;
  cs_trace_t t;
  char e[256];
  if (load_trace(path, &t, e, sizeof e) != 0)
    return snprintf(why, n, "%.200s: %.200s", path, e), 0;
  const cs_trace_rec_t *w = sp_rec(&t, ws), *r = sp_rec(&t, rs);
  int ok = 0;
  if (!w || !r || !(w->kind == CS_EV_STORE || w->kind == CS_EV_PUT) ||
      r->kind != CS_EV_LOAD) {
    snprintf(why, n, "#%" PRIu64 " / #%" PRIu64 " are not a write and a load", ws, rs);
    goto out;
  }
  uint32_t win = w->kind == CS_EV_STORE ? w->rank : w->peer;
  uint64_t rend = r->elem_off + (r->phys > r->valid ? r->phys : r->valid);
  if (win != r->peer || w->slot != r->slot || w->elem_off >= rend ||
      r->elem_off >= w->elem_off + w->valid) {
    snprintf(why, n, "write #%" PRIu64 " and load #%" PRIu64 " touch other bytes", ws, rs);
    goto out;
  }
  uint64_t land = sp_landing(&t, w);
  int saw_old = land > r->seq;
  if (saw_old != want_old || old != want_old) {
    snprintf(why, n, "write #%" PRIu64 " lands at #%" PRIu64 ", load #%" PRIu64
             ": the load saw the %s value, the story says %s, the defect needs %s",
             ws, land, rs, saw_old ? "old" : "new", old ? "old" : "new",
             want_old ? "old" : "new");
    goto out;
  }
  if (bad_index != UINT64_MAX && (bad_index < r->elem_off || bad_index >= rend)) {
    snprintf(why, n, "load #%" PRIu64 " does not cover the bad element %" PRIu64, rs,
             bad_index);
    goto out;
  }
  ok = 1;
out:
  cs_trace_free(&t);
  return ok;
}

#endif
