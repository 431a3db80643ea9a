/*
 * registry.c - the built-in algorithms' descriptors by id, each defined
 * in the algorithm's own file. One line per algorithm; nothing else in
 * collsim lists them.
 */
#include "registry.h"

#include <string.h>

extern const cs_algo_desc_t cs__algo_mesh, cs__algo_ring, cs__algo_host;

const cs_algo_desc_t *const cs__registry[CS_NALGOS] = {
    [CS_ALGO_MESH] = &cs__algo_mesh,
    [CS_ALGO_RING] = &cs__algo_ring,
    [CS_ALGO_HOST] = &cs__algo_host,
};

const char *cs_algo_name(cs_algo_t a)
{
  const cs_algo_desc_t *d = cs_algo_desc((uint32_t)a);
  return d ? d->name : "?";
}

int cs_algo_parse(const char *s)
{
  for (uint32_t i = 0; i < CS_NALGOS; i++)
    if (strcmp(s, cs__registry[i]->name) == 0)
      return (int)i;
  return CS_EBADNAME;
}
