/*
 * algo.h - the three allreduce algorithms by id and name (mesh, ring,
 * host). Pure and header-only: the oracle, the algorithms, the trace
 * header and the tools name an algorithm through it without depending on
 * each other. Owns no algorithm; those are mesh.c, ring.c and host.c.
 */
#ifndef CS_ALGO_H
#define CS_ALGO_H

#include <string.h>

#include "../window/cs_error.h"

typedef enum cs_algo {
  CS_ALGO_MESH = 0,
  CS_ALGO_RING = 1,
  CS_ALGO_HOST = 2,
  CS_NALGOS
} cs_algo_t;

/* The algorithm's --algo name, or "?" for an id out of range. */
static inline const char *cs_algo_name(cs_algo_t a)
{
  static const char *const names[CS_NALGOS] = {"mesh", "ring", "host"};
  return (unsigned)a < CS_NALGOS ? names[a] : "?";
}

/* Name -> id, or CS_EBADNAME. */
static inline int cs_algo_parse(const char *s)
{
  for (int i = 0; i < CS_NALGOS; i++)
    if (strcmp(s, cs_algo_name((cs_algo_t)i)) == 0)
      return i;
  return CS_EBADNAME;
}

#endif
