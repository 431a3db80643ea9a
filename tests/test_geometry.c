/*
 * test_geometry.c - the index math of the algorithms against the worked
 * tables of docs/algorithms.md §3.1 and §4.2, and invariants swept
 * exhaustively. Pure functions: no processes.
 */
#include <criterion/criterion.h>

#include "../collectives/geometry.h"

Test(mesh_geometry, widths_and_chunks_match_the_reference_table)
{
  /* §3.1: FP32 N=1 -> W=8,C=1; 17 -> 24,1; 4097 -> 4096,2; 65537 -> 4096,17.
   * FP16 N=1 -> 16,1; 17 -> 32,1; 8193 -> 8192,2; 65537 -> 8192,9. */
  static const struct { uint32_t es; uint64_t n, w, c; } t[] = {
      {4, 1, 8, 1},    {4, 17, 24, 1},   {4, 4097, 4096, 2}, {4, 65537, 4096, 17},
      {2, 1, 16, 1},   {2, 17, 32, 1},   {2, 8193, 8192, 2}, {2, 65537, 8192, 9},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    cr_assert_eq(cs_mesh_width(t[i].n, t[i].es, CS_TILE_BYTES), t[i].w,
                 "es %u N %llu", t[i].es, (unsigned long long)t[i].n);
    cr_assert_eq(cs_mesh_chunks(t[i].n, t[i].es, CS_TILE_BYTES), t[i].c);
  }
}

typedef struct ring_row {
  uint32_t es, nr;
  uint64_t size, ms, w, k;
  uint64_t len[4]; /* segment lengths, begin = prefix sum */
} ring_row_t;

Test(ring_geometry, segments_match_the_worked_table)
{
  /* §4.2 worked values. */
  static const ring_row_t t[] = {
      {4, 2, 17, 9, 16, 1, {8, 9}},
      {4, 4, 1, 1, 8, 1, {0, 0, 0, 1}},
      {4, 4, 17, 5, 8, 1, {4, 4, 4, 5}},
      {4, 4, 65537, 16385, 4096, 5, {16384, 16384, 16384, 16385}},
      {4, 2, 65537, 32769, 4096, 9, {32768, 32769}},
      {2, 2, 17, 17, 32, 1, {16, 1}},
      {2, 4, 17, 17, 32, 1, {16, 0, 0, 1}},
      {2, 4, 33, 24, 32, 1, {16, 16, 0, 1}},
      {2, 4, 8193, 2064, 2064, 1, {2064, 2048, 2048, 2033}},
      {2, 2, 32769, 16400, 8192, 3, {16400, 16369}},
      {2, 4, 32769, 8208, 8192, 2, {8208, 8192, 8192, 8177}},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    const ring_row_t *r = &t[i];
    cr_assert_eq(cs_ring_ms(r->size, r->nr, r->es), r->ms, "row %zu", i);
    cr_assert_eq(cs_ring_width(r->size, r->nr, r->es, CS_TILE_BYTES), r->w, "row %zu", i);
    cr_assert_eq(cs_ring_subchunks(r->size, r->nr, r->es, CS_TILE_BYTES), r->k, "row %zu", i);
    uint64_t begin = 0;
    for (uint32_t k = 0; k < r->nr; k++) {
      uint64_t b = cs_ring_bound(k, r->size, r->nr, r->es);
      uint64_t e = cs_ring_bound(k + 1, r->size, r->nr, r->es);
      cr_assert_eq(b, begin, "row %zu seg %u begin %llu", i, k, (unsigned long long)b);
      cr_assert_eq(e - b, r->len[k], "row %zu seg %u len %llu", i, k,
                   (unsigned long long)(e - b));
      begin += r->len[k];
    }
    cr_assert_eq(begin, r->size);
  }
}

/* For every N and SIZE: segments tile [0, SIZE); 2-byte starts are 16-
 * aligned; K subchunks of W cover every segment; remote reads stay inside
 * the 32-byte-rounded slot; W fits a tile. */
Test(ring_geometry, segments_cover_and_reads_stay_in_the_slot_for_all_sizes)
{
  for (uint32_t es = 2; es <= 4; es += 2)
    for (uint32_t nr = 1; nr <= 17; nr++)
      for (uint64_t size = 1; size <= 700; size++) {
        uint64_t w = cs_ring_width(size, nr, es, CS_TILE_BYTES);
        uint64_t k = cs_ring_subchunks(size, nr, es, CS_TILE_BYTES);
        uint64_t slot_elems = cs_ceil_to(size * es, 32) / es;
        cr_assert(w * es <= CS_TILE_BYTES);
        cr_assert_eq(cs_ring_bound(0, size, nr, es), 0);
        cr_assert_eq(cs_ring_bound(nr, size, nr, es), size);
        for (uint32_t s = 0; s < nr; s++) {
          uint64_t b = cs_ring_bound(s, size, nr, es);
          uint64_t e = cs_ring_bound(s + 1, size, nr, es);
          cr_assert(e >= b);
          if (es == 2 && e > b)
            cr_assert_eq(b % 16, 0, "nr %u size %llu seg %u", nr,
                         (unsigned long long)size, s);
          cr_assert(e - b <= k * w, "segment longer than K*W");
          for (uint64_t sub = 0; sub < e - b; sub += w) {
            uint64_t v = e - b - sub < w ? e - b - sub : w;
            uint64_t rv = cs_remote_phys(v, es);
            cr_assert(rv <= w);
            cr_assert(b + sub + rv <= slot_elems, "read past slot");
          }
        }
      }
}

Test(ring_geometry, send_and_receive_segments_agree_and_visit_all)
{
  for (uint32_t nr = 1; nr <= 64; nr++)
    for (uint32_t r = 0; r < nr; r++) {
      uint32_t left = (r + nr - 1) % nr;
      for (uint32_t t = 0; t + 1 < nr; t++) {
        /* RS: what I fold at round t is what left folded at round t-1. */
        if (t > 0)
          cr_assert_eq(cs_ring_rs_seg(r, t, nr), cs_ring_rs_seg(left, t - 1, nr));
        /* AG: I copy from left what it owns (t = 0) or copied at t-1. */
        if (t == 0)
          cr_assert_eq(cs_ring_ag_seg(r, 0, nr), left);
        else
          cr_assert_eq(cs_ring_ag_seg(r, t, nr), cs_ring_ag_seg(left, t - 1, nr));
      }
      if (nr > 1) /* after RS rank r owns segment r */
        cr_assert_eq(cs_ring_rs_seg(r, nr - 2, nr), r);
    }
}

Test(host_geometry, transfers_round_both_dtypes_to_32_bytes)
{
  cr_assert_eq(cs_host_xfer(256, 4), 256);
  cr_assert_eq(cs_host_xfer(1, 4), 8);
  cr_assert_eq(cs_host_xfer(17, 4), 24);
  cr_assert_eq(cs_host_xfer(1, 2), 16);
  cr_assert_eq(cs_host_xfer(17, 2), 32);
  cr_assert_eq(cs_host_xfer(256, 2), 256);
}

Test(mesh_geometry, remote_reads_never_leave_the_slot)
{
  for (uint32_t es = 2; es <= 4; es += 2)
    for (uint64_t n = 1; n <= 20000; n += (n < 100 ? 1 : 97)) {
      uint64_t w = cs_mesh_width(n, es, CS_TILE_BYTES);
      uint64_t slot_elems = cs_ceil_to(n * es, 32) / es;
      for (uint64_t off = 0; off < n; off += w) {
        uint64_t v = n - off < w ? n - off : w;
        cr_assert(off + cs_remote_phys(v, es) <= slot_elems);
        cr_assert(cs_remote_phys(v, es) - v <= 15);
      }
    }
}

Test(remote_read, physical_width_is_the_reference_fp16_rounding)
{
  /* Reference: rv(v) = ceil(v/16)*16 for FP16 (the 32-byte span), rv = v
   * for FP32. Hand values first, then every v up to 70000 against the
   * same closed form written another way (v plus the distance to the next
   * multiple of 16). The 2-byte bf16 follows FP16 here (the reference
   * names only FP16; the slots and segments treat both 2-byte types
   * alike). */
  const uint64_t v[] = {1, 2, 15, 16, 17, 31, 32, 33, 4097, 8191, 8192};
  const uint64_t rv[] = {16, 16, 16, 16, 32, 32, 32, 48, 4112, 8192, 8192};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    cr_assert_eq(cs_remote_phys(v[i], 2), rv[i], "v %llu", (unsigned long long)v[i]);
    cr_assert_eq(cs_remote_phys(v[i], 4), v[i]);
  }
  for (uint64_t n = 1; n <= 70000; n++) {
    cr_assert_eq(cs_remote_phys(n, 2), n + (16 - n % 16) % 16, "v %llu",
                 (unsigned long long)n);
    cr_assert_eq(cs_remote_phys(n, 4), n);
  }
}
