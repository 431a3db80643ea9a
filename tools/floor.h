/*
 * floor.h - the memory floor of an allreduce (`collsim bench --floor`):
 * what this machine's memory allows for N ranks of S bytes, measured in
 * the same launch as the calls it is compared with. Owns the model and the
 * read-add-write measurement; does not own the table (bench.c calls it).
 *
 * Model: an in-place allreduce of S bytes on each of N ranks moves at
 * least (3N-1)S bytes through memory: each rank's share of S/N is read on
 * all N ranks and written once (reduce), then the (N-1) shares it does not
 * own are read and written once more (gather): per rank S + S/N +
 * 2(N-1)S/N. The rate is that of N threads, all at once, each pinned as
 * rank r is and adding the second half of its own S-byte buffer into the
 * first with the calls' own fp32 sum kernel (1.5S of traffic per pass):
 * the same kernel, CPUs and footprint (N x S, the windows) as the calls,
 * so repeated passes are as cache-warm as repeated calls.
 */
#ifndef CS_FLOOR_H
#define CS_FLOOR_H

#include <stdint.h>

/* Bytes an N-rank allreduce of `bytes` per rank must move, at least. */
uint64_t cs_floor_traffic(uint32_t nranks, uint64_t bytes);

/* Measures N concurrent read-add-write passes over `bytes` per thread and
 * returns the floor time of the allreduce in ns (traffic / rate, the
 * median pass), or a negative errno (-ENOMEM, thread creation). */
int64_t cs_floor_ns(uint32_t nranks, uint64_t bytes);

#endif
