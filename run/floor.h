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
 * 2(N-1)S/N. The rate is measured on one S-byte buffer per rank (the
 * windows' footprint, so a size whose windows fit the caches has a floor
 * that fits them too), served by min(N, allowed CPUs) threads pinned as
 * the ranks are: each timed pass adds every buffer's second half into its
 * first with the fp32 sum kernel the calls use (1.5S of traffic per
 * buffer) and lasts from the first thread's start to the last one's end.
 * For fp16, bf16 and the other ops it is still the fp32 sum kernel: a
 * floor on memory, not on arithmetic. Nothing is shared between CPUs,
 * which the calls do share.
 */
#ifndef CS_FLOOR_H
#define CS_FLOOR_H

#include <stdint.h>

/* Bytes an N-rank allreduce of `bytes` per rank must move, at least. */
uint64_t cs_floor_traffic(uint32_t nranks, uint64_t bytes);

/* Measures read-add-write passes over N buffers of `bytes` and returns
 * the floor time of the allreduce in ns (traffic / rate, the median
 * pass), or a negative errno (-ENOMEM, or thread creation's). */
int64_t cs_floor_ns(uint32_t nranks, uint64_t bytes);

#endif
