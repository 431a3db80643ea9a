/*
 * test_window.c - slot layout, the CommContext ABI, region creation and
 * address translation across real processes.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../window/cs_error.h"
#include "../window/layout.h"
#include "../window/world.h"

Test(layout, rounds_every_slot_up_to_32_bytes)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  /* docs/algorithms.md §1.3 example: FP32 N=17 ring NR=2: data 68 B -> 96 B,
   * signal 2*(NR-1)*NR*4 = 16 B -> 32 B, window 128 B. */
  cr_assert_eq(cs_layout_add(&l, "data", 68, 4), 0);
  cr_assert_eq(cs_layout_add(&l, "signal", 16, 4), 1);
  cr_assert_eq(l.slot[0].off, 0);
  cr_assert_eq(l.slot[0].alloc, 96);
  cr_assert_eq(l.slot[0].nbytes, 68);
  cr_assert_eq(l.slot[1].off, 96);
  cr_assert_eq(l.slot[1].alloc, 32);
  cr_assert_eq(l.win_bytes, 128);
}

Test(layout, offsets_are_prefix_sums_for_any_size)
{
  for (uint64_t a = 0; a < 200; a++)
    for (uint64_t b = 0; b < 70; b += 3) {
      cs_layout_t l;
      cs_layout_init(&l, CS_SLOT_ALIGN);
      cs_layout_add(&l, "a", a, 2);
      cs_layout_add(&l, "b", b, 4);
      uint64_t ra = (a + 31) / 32 * 32, rb = (b + 31) / 32 * 32;
      cr_assert_eq(l.slot[1].off, ra);
      cr_assert_eq(l.slot[1].off % 32, 0);
      cr_assert_eq(l.win_bytes, ra + rb);
    }
}

Test(layout, unaligned_packing_keeps_exact_sizes)
{
  cs_layout_t l;
  cs_layout_init(&l, 1);
  cs_layout_add(&l, "data", 34, 2);
  cs_layout_add(&l, "signal", 8, 4);
  cr_assert_eq(l.slot[1].off, 34);
  cr_assert_eq(l.win_bytes, 42);
}

Test(layout, rejects_bad_declarations_without_change)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cr_assert_eq(cs_layout_add(&l, "", 4, 4), -EINVAL);
  cr_assert_eq(cs_layout_add(&l, "a_name_far_too_long", 4, 4), -EINVAL);
  cr_assert_eq(cs_layout_add(&l, "x", 4, 0), -EINVAL);
  cr_assert_eq(cs_layout_add(&l, "x", 1ull << 60, 4), CS_ETOOBIG);
  for (int i = 0; i < CS_MAX_SLOTS; i++)
    cr_assert_eq(cs_layout_add(&l, "s", 1, 1), i);
  cr_assert_eq(cs_layout_add(&l, "s", 1, 1), -ENOSPC);
  cr_assert_eq(l.nslots, CS_MAX_SLOTS);
  cr_assert_eq(l.win_bytes, 32 * CS_MAX_SLOTS);
}

Test(layout, bounds_include_padding_and_nothing_more)
{
  cs_slot_t s = {.alloc = 96, .nbytes = 68};
  cr_assert(cs_slot_contains(&s, 0, 96));
  cr_assert(cs_slot_contains(&s, 64, 32)); /* into the padding: legal */
  cr_assert(cs_slot_contains(&s, 96, 0));
  cr_assert_not(cs_slot_contains(&s, 64, 33));
  cr_assert_not(cs_slot_contains(&s, 97, 0));
  cr_assert_not(cs_slot_contains(&s, 8, UINT64_MAX)); /* no wrap-around */
}

Test(commctx, abi_offsets_match_the_reference)
{
  cr_assert_eq(offsetof(cs_commctx_t, rankId), 16);
  cr_assert_eq(offsetof(cs_commctx_t, rankNum), 20);
  cr_assert_eq(offsetof(cs_commctx_t, winSize), 24);
  cr_assert_eq(offsetof(cs_commctx_t, windowsIn), 32);
  cr_assert_eq(offsetof(cs_commctx_t, windowsOut), 544);
  cr_assert_eq(sizeof(cs_commctx_t), 1056);
  /* The kernel's reading: i64 slot 2 = rankId | rankNum << 32. */
  cs_commctx_t c = {.rankId = 3, .rankNum = 8};
  uint64_t slot2;
  memcpy(&slot2, (uint8_t *)&c + 16, 8);
  cr_assert_eq(slot2 & 0xffffffffu, 3);
  cr_assert_eq(slot2 >> 32, 8);
}

static void make_world(cs_world_t *w, uint32_t n, uint64_t data_bytes)
{
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", data_bytes, 4);
  cs_layout_add(&l, "signal", 4 * n, 4);
  cr_assert_eq(cs_world_create(w, &l, n, NULL), 0);
}

Test(world, region_is_zeroed_and_its_name_already_gone)
{
  cs_world_t w;
  make_world(&w, 4, 1000);
  cr_assert_eq(w.ctl->magic, CS_CTL_MAGIC);
  cr_assert_eq(w.ctl->nranks, 4);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
  for (uint32_t r = 0; r < 4; r++) {
    uint8_t *win = cs_world_window(&w, r);
    for (uint64_t i = 0; i < w.ctl->layout.win_bytes; i++)
      cr_assert_eq(win[i], 0);
  }
  cs_world_destroy(&w);
}

Test(world, rejects_rank_counts_and_sizes_it_cannot_hold)
{
  cs_world_t w;
  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", 64, 4);
  cr_assert_eq(cs_world_create(&w, &l, 0, NULL), -EINVAL);
  cr_assert_eq(cs_world_create(&w, &l, CS_MAX_RANKS + 1, NULL), -EINVAL);
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "data", 1ull << 46, 4); /* 64 TiB per window */
  cr_assert_eq(cs_world_create(&w, &l, 2, NULL), CS_ETOOBIG);
  cr_assert_eq(cs_world_count_names(getpid()), 0);
}

/* Every rank maps the region at its own address; a store through the
 * translation formula must land in the peer's window as the peer sees it. */
Test(world, translation_round_trip_across_processes, .timeout = 20)
{
  enum { N = 4 };
  cs_world_t w;
  make_world(&w, N, 64 * 4);
  int fds[N][2];
  for (int r = 0; r < N; r++) {
    cr_assert_eq(pipe(fds[r]), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
      if (cs_world_remap(&w) < 0)
        _exit(10);
      cs_rankctx_t c;
      if (cs_rankctx_init(&c, &w, (uint32_t)r) < 0)
        _exit(11);
      uint64_t mine = c.abi.windowsIn[r];
      if (write(fds[r][1], &mine, sizeof(mine)) != sizeof(mine))
        _exit(12);
      /* Write my rank into element [r] of every peer's data slot. */
      int32_t *local = (int32_t *)(uintptr_t)(mine + w.ctl->layout.slot[0].off) + r;
      for (uint32_t p = 0; p < N; p++)
        *(int32_t *)cs_win_remote(&c, local, p) = 100 + r;
      _exit(c.abi.rankNum == N && c.abi.winSize == w.ctl->layout.win_bytes ? 0 : 13);
    }
    close(fds[r][1]);
  }
  uint64_t bases[N];
  for (int r = 0; r < N; r++) {
    int st;
    cr_assert_eq(read(fds[r][0], &bases[r], 8), 8);
    close(fds[r][0]);
    cr_assert_neq(wait(&st), -1);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank exited with %d", st);
  }
  /* Windows were seen at different addresses by different processes... */
  cr_assert_neq(bases[0], bases[1]);
  cr_assert_neq(bases[0], (uint64_t)(uintptr_t)cs_world_window(&w, 0));
  /* ...yet every element landed where the launcher sees it. */
  for (int p = 0; p < N; p++) {
    int32_t *d = (int32_t *)(cs_world_window(&w, p) + w.ctl->layout.slot[0].off);
    for (int r = 0; r < N; r++)
      cr_assert_eq(d[r], 100 + r, "window %d element %d = %d", p, r, d[r]);
  }
  cs_world_destroy(&w);
}

Test(world, ranks_beyond_the_64_rank_abi_translate_too)
{
  cs_world_t w;
  make_world(&w, 70, 64);
  cs_rankctx_t c;
  cr_assert_eq(cs_rankctx_init(&c, &w, 66), 0);
  uint8_t *local = cs_world_window(&w, 66) + 8;
  cr_assert_eq(cs_win_remote(&c, local, 69), cs_world_window(&w, 69) + 8);
  cr_assert_eq(cs_win_remote(&c, local, 1), cs_world_window(&w, 1) + 8);
  cr_assert_eq(cs_win_remote(&c, local, 66), local);
  cr_assert_eq(c.abi.windowsIn[63], c.windows[63]);
  cs_rankctx_fini(&c);
  cs_world_destroy(&w);
}
