/*
 * bench_user.h - `collsim bench --algo ./x.so`: the size sweep of bench
 * for a collective loaded from a shared object, one free-mode world per
 * size, every call timed and the result verified against the
 * collective's expected-result function. cli/collsim/bench.c parses the
 * options and hands over.
 */
#ifndef CS_BENCH_USER_H
#define CS_BENCH_USER_H

#include <stdint.h>

#include "../../include/collsim/collective.h"
#include "cli.h"

typedef struct cs_bench_user {
  const cs_collective_t *coll;
  const char            *path;
  const uint64_t        *counts; /* elements per rank, one per row */
  uint32_t               nsizes;
  cs_coll_cfg_t          cfg;    /* count set per row; iters = timed calls */
  uint32_t               warmup; /* calls before the timed ones */
  int                    csv;
  const cs_cli_common_t *com;
} cs_bench_user_t;

/* Runs the sweep, prints the table. Returns the exit code. */
int cs_bench_user(const cs_bench_user_t *b);

#endif
