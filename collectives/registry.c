/*
 * registry.c - the built-in algorithms' descriptors by id, each defined
 * in the algorithm's own file, in the table made from algos.def (one
 * line per algorithm; nothing else in collsim lists them).
 */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#define CS_ALGO(id, NAME, sym) extern const cs_algo_desc_t cs__algo_##sym;
#include "algos.def"
#undef CS_ALGO

const cs_algo_desc_t *const cs__registry[CS_NALGOS] = {
#define CS_ALGO(id, NAME, sym) [CS_ALGO_##NAME] = &cs__algo_##sym,
#include "algos.def"
#undef CS_ALGO
};

const char *cs_algo_name(cs_algo_t a)
{
  const cs_algo_desc_t *d = cs_algo_desc((uint32_t)a);
  return d ? d->name : "?";
}

void cs_algo_names(char *buf, size_t n, const char *tail)
{
  size_t len = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < CS_NALGOS && len < n; i++)
    len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                            cs__registry[i]->name);
  if (len < n)
    snprintf(buf + len, n - len, "%s", tail);
}

int cs_algo_parse(const char *s)
{
  for (uint32_t i = 0; i < CS_NALGOS; i++)
    if (strcmp(s, cs__registry[i]->name) == 0)
      return (int)i;
  return CS_EBADNAME;
}
