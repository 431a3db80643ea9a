/*
 * geometry.h - the index math of the allreduce algorithms, pure and
 * header-only so tests sweep it without processes (docs/algorithms.md
 * §3.1, §4.2, §5). No I/O, no state. Sizes are elements unless a name says
 * bytes.
 *
 * "2-byte dtypes" (fp16 and bf16) follow the reference's FP16 rules: a
 * 32-byte span holds 16 of them, so remote reads round up to 16 elements
 * and ring segment boundaries are multiples of 16.
 */
#ifndef CS_GEOMETRY_H
#define CS_GEOMETRY_H

#include <stdint.h>

#define CS_ALIGN_BYTES 32u     /* MTE/CCU-safe span */
#define CS_TILE_BYTES  16384u  /* UB tile of the reference (CHUNK_BYTES) */
#define CS_HOST_CHUNK  256u    /* host builtin's fixed chunk, elements */
#define CS_HOST_MAX_RANKS 16u  /* host builtin returns early above this */

static inline uint64_t cs_ceil_div(uint64_t a, uint64_t b)
{
  return a / b + (a % b != 0);
}

static inline uint64_t cs_ceil_to(uint64_t a, uint64_t b)
{
  return cs_ceil_div(a, b) * b;
}

/* Elements per 32-byte span: 8 (fp32) or 16 (2-byte dtypes). */
static inline uint32_t cs_align_elems(uint32_t esize)
{
  return CS_ALIGN_BYTES / esize;
}

/* Largest tile width: 4096 (fp32) or 8192 (2-byte) for a 16 KiB tile. */
static inline uint64_t cs_max_chunk(uint32_t esize, uint32_t tile_bytes)
{
  return tile_bytes / esize;
}

/* Physical elements of a remote load of v valid ones: 2-byte dtypes round
 * up to a multiple of 16 (the FP16 tail over-read, <= 15 extra); fp32 exact. */
static inline uint64_t cs_remote_phys(uint64_t v, uint32_t esize)
{
  return esize == 2 ? cs_ceil_to(v, 16) : v;
}

/* ---------------------------------------------------------------- mesh */

/* Physical chunk width W (§3.1): ceil(N/align)*align when 0 < N < maxChunk,
 * else maxChunk. */
static inline uint64_t cs_mesh_width(uint64_t n, uint32_t esize,
                                     uint32_t tile_bytes)
{
  uint64_t maxc = cs_max_chunk(esize, tile_bytes);
  return (n > 0 && n < maxc) ? cs_ceil_to(n, cs_align_elems(esize)) : maxc;
}

/* Chunks C = ceil(N / W). */
static inline uint64_t cs_mesh_chunks(uint64_t n, uint32_t esize,
                                      uint32_t tile_bytes)
{
  return cs_ceil_div(n, cs_mesh_width(n, esize, tile_bytes));
}

/* ---------------------------------------------------------------- ring */

/* Segment boundary B(i), i = 0..NR (§4.2): fp32 floor(i*SIZE/NR); 2-byte
 * dtypes min(SIZE, ceil(i*SIZE/(16*NR))*16). */
static inline uint64_t cs_ring_bound(uint64_t i, uint64_t size, uint32_t nr,
                                     uint32_t esize)
{
  unsigned __int128 p = (unsigned __int128)i * size;
  if (esize != 2)
    return (uint64_t)(p / nr);
  unsigned __int128 d = (unsigned __int128)16 * nr;
  uint64_t b = (uint64_t)((p + d - 1) / d) * 16;
  return b < size ? b : size;
}

/* Subchunk loop bound MS: fp32 ceil(SIZE/NR); 2-byte dtypes
 * min(SIZE, ceil(SIZE/NR) + 15) (the FP16 tail slack). */
static inline uint64_t cs_ring_ms(uint64_t size, uint32_t nr, uint32_t esize)
{
  uint64_t ms = cs_ceil_div(size, nr);
  if (esize == 2) {
    ms += 15;
    if (ms > size)
      ms = size;
  }
  return ms;
}

/* Subchunk width W: ceil(MS/align)*align when 0 < MS < maxChunk, else
 * maxChunk. */
static inline uint64_t cs_ring_width(uint64_t size, uint32_t nr,
                                     uint32_t esize, uint32_t tile_bytes)
{
  uint64_t ms = cs_ring_ms(size, nr, esize);
  uint64_t maxc = cs_max_chunk(esize, tile_bytes);
  return (ms > 0 && ms < maxc) ? cs_ceil_to(ms, cs_align_elems(esize)) : maxc;
}

/* Subchunks per round K = ceil(MS / W), the same on every rank. */
static inline uint64_t cs_ring_subchunks(uint64_t size, uint32_t nr,
                                         uint32_t esize, uint32_t tile_bytes)
{
  return cs_ceil_div(cs_ring_ms(size, nr, esize),
                     cs_ring_width(size, nr, esize, tile_bytes));
}

/* Segment rank r works on in reduce-scatter round t: (r - t - 2) mod NR;
 * in all-gather round t: (r - t - 1) mod NR. The segment read from the left
 * neighbour and the one written locally are the same index (the #2161
 * review invariant). */
static inline uint32_t cs_ring_rs_seg(uint32_t r, uint32_t t, uint32_t nr)
{
  return (uint32_t)(((uint64_t)r + 2ull * nr - t - 2) % nr);
}
static inline uint32_t cs_ring_ag_seg(uint32_t r, uint32_t t, uint32_t nr)
{
  return (uint32_t)(((uint64_t)r + 2ull * nr - t - 1) % nr);
}

/* Signal cell [row, src] of the ring's [2(NR-1), NR] signal. */
static inline uint64_t cs_ring_cell(uint32_t row, uint32_t src, uint32_t nr)
{
  return (uint64_t)row * nr + src;
}

/* ---------------------------------------------------------------- host */

/* Elements transferred for a host chunk: ceil(chunk*esize/32)*32/esize,
 * for both dtypes and both local and remote loads (§5). */
static inline uint64_t cs_host_xfer(uint64_t chunk, uint32_t esize)
{
  return cs_ceil_to(chunk * esize, CS_ALIGN_BYTES) / esize;
}

/* ---------------------------------------------------------------- cost */

/* The bytes a rank loads from other ranks' windows in `iters` allreduces of
 * `size` elements of `esize` bytes (S = size * esize bytes), for checking a
 * trace's remote loads against the algorithm (Gloo docs/algorithms.md). */

/* Elements of ring segment k: B(k+1) - B(k). */
static inline uint64_t cs_ring_seg_len(uint64_t k, uint64_t size, uint32_t nr,
                                       uint32_t esize)
{
  return cs_ring_bound(k + 1, size, nr, esize) - cs_ring_bound(k, size, nr, esize);
}

/* Ring, the textbook figure per rank: 2(N-1)/N * S per call (fractional
 * when N does not divide the segments evenly). */
static inline double cs_ring_remote_bytes_formula(uint64_t size, uint32_t nr,
                                                  uint32_t esize, uint32_t iters)
{
  uint64_t s = size * esize;
  return (double)iters * 2.0 * (double)(nr - 1) * (double)s / (double)nr;
}

/* Ring, exactly, for rank r: it reads every segment but its left
 * neighbour's and its own twice (reduce-scatter and all-gather), so
 * 2S - |seg r-1| - |seg r| per call; 0 for one rank. */
static inline uint64_t cs_ring_remote_bytes(uint32_t r, uint64_t size,
                                            uint32_t nr, uint32_t esize,
                                            uint32_t iters)
{
  if (nr == 1)
    return 0;
  uint32_t left = (uint32_t)(((uint64_t)r + nr - 1) % nr);
  uint64_t lenl = cs_ring_seg_len(left, size, nr, esize);
  uint64_t lenr = cs_ring_seg_len(r, size, nr, esize);
  return (uint64_t)iters * (2 * size - lenl - lenr) * esize;
}

/* Ring, all ranks together: 2(N-1) * S per call. */
static inline uint64_t cs_ring_total_remote_bytes(uint64_t size, uint32_t nr,
                                                  uint32_t esize, uint32_t iters)
{
  return (uint64_t)iters * 2 * (nr - 1) * (size * esize);
}

/* Mesh, per rank: every peer's whole buffer, (N-1) * S per call. */
static inline uint64_t cs_mesh_remote_bytes(uint64_t size, uint32_t nr,
                                            uint32_t esize, uint32_t iters)
{
  return (uint64_t)iters * (nr - 1) * (size * esize);
}

/* Host, per rank: every peer's whole buffer chunk by chunk, (N-1) * S per
 * call, as mesh (valid elements; a chunk's physical over-read is not
 * counted). */
static inline uint64_t cs_host_remote_bytes(uint64_t size, uint32_t nr,
                                            uint32_t esize, uint32_t iters)
{
  return cs_mesh_remote_bytes(size, nr, esize, iters);
}

#endif
