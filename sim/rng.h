/*
 * rng.h - splitmix64, the one pseudo-random generator collsim uses: the
 * random input fill (collectives/allreduce.c) and the controlled-mode
 * schedules (sim/sched/random.c, pct.c). Deterministic per seed, so a
 * recorded seed reproduces a run.
 */
#ifndef CS_RNG_H
#define CS_RNG_H

#include <stdint.h>

/* Advances *s and returns the next 64 random bits. */
static inline uint64_t cs_splitmix64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

#endif
