/*
 * builtin.h - the built-in allreduces as registrations (builtin.c), for
 * the public cs_coll_builtin (run/coll.c).
 */
#ifndef CS_BUILTIN_H
#define CS_BUILTIN_H

#include "../include/collsim/collective.h"

/* The registration of the built-in algorithm `name` (registry.h), or
 * NULL for another name. Made from the descriptors on first use (once,
 * whatever the threads); static storage, never freed. */
const cs_collective_t *cs_builtin_collective(const char *name);

/* The algorithm id (registry.h) whose registration c is, or -1 when c is
 * not one of them (a collective of one's own). */
int cs_builtin_id(const cs_collective_t *c);

#endif
