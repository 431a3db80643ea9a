/*
 * registry.h - the built-in algorithms by id and by name: each id's
 * descriptor (algo.h), defined in the algorithm's own file and listed
 * once, in registry.c. What the run, bench, trace --stats, teach and the
 * oracle ask instead of switching on an id.
 */
#ifndef CS_REGISTRY_H
#define CS_REGISTRY_H

#include "algo.h"

/* The table itself (registry.c); read it through cs_algo_desc. */
extern const cs_algo_desc_t *const cs__registry[CS_NALGOS];

/* The descriptor of algorithm a, or NULL for an id out of range. Inline:
 * every allreduce call dispatches through it. */
static inline const cs_algo_desc_t *cs_algo_desc(uint32_t a)
{
  return a < CS_NALGOS ? cs__registry[a] : NULL;
}

/* The algorithm's --algo name, or "?" for an id out of range. */
const char *cs_algo_name(cs_algo_t a);

/* Name -> id, or CS_EBADNAME. */
int cs_algo_parse(const char *s);

/* The built-ins' names for a message, "mesh, ring, host, ring-push"
 * (registry order), into buf; then `tail` (" or all", "" ...). */
void cs_algo_names(char *buf, size_t n, const char *tail);

#endif
