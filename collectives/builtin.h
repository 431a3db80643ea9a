/*
 * builtin.h - the built-in allreduces as registrations (builtin.c), for
 * the public cs_coll_builtin (run/coll.c).
 */
#ifndef CS_BUILTIN_H
#define CS_BUILTIN_H

#include "../include/collsim/collective.h"

/* The registration of "mesh", "ring" or "host", or NULL for another
 * name. Static storage; never to be freed. */
const cs_collective_t *cs_builtin_collective(const char *name);

#endif
