/*
 * registry.c - the built-in algorithms' descriptors by id, each defined
 * in the algorithm's own file. One line per algorithm; nothing else in
 * collsim lists them.
 */
#include "registry.h"

#include <stdio.h>
#include <string.h>

extern const cs_algo_desc_t cs__algo_mesh, cs__algo_ring, cs__algo_host,
    cs__algo_ring_push, cs__algo_twophase, cs__algo_ring_nb, cs__algo_onephase,
    cs__algo_host_push, cs__algo_ring_bidir, cs__algo_ibing;

const cs_algo_desc_t *const cs__registry[CS_NALGOS] = {
    [CS_ALGO_MESH] = &cs__algo_mesh,
    [CS_ALGO_RING] = &cs__algo_ring,
    [CS_ALGO_HOST] = &cs__algo_host,
    [CS_ALGO_RING_PUSH] = &cs__algo_ring_push,
    [CS_ALGO_TWOPHASE] = &cs__algo_twophase,
    [CS_ALGO_RING_NB] = &cs__algo_ring_nb,
    [CS_ALGO_ONEPHASE] = &cs__algo_onephase,
    [CS_ALGO_HOST_PUSH] = &cs__algo_host_push,
    [CS_ALGO_RING_BIDIR] = &cs__algo_ring_bidir,
    [CS_ALGO_IBING] = &cs__algo_ibing,
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
