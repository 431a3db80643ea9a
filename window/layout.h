/*
 * layout.h - slot layout of a communication window (pure index math).
 *
 * Owns: the slot table (named buffers inside every window, in declaration
 * order), the 32-byte rounding rule of PR #2161 (docs/algorithms.md
 * §1.3) and the bounds test every window access goes through. Does not own
 * memory: the world (world.h) maps windows; the device API (sim/dev.h)
 * calls cs_slot_check() on every access. No I/O, no side effects: tests
 * sweep it.
 */
#ifndef CS_LAYOUT_H
#define CS_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CS_MAX_SLOTS   8
#define CS_SLOT_ALIGN  32u /* bytes: PR #2161 rounds every slot to this */
#define CS_SLOT_NAMELEN 16

/* One named buffer inside every window. Lives in shared memory: POD. */
typedef struct cs_slot {
  char     name[CS_SLOT_NAMELEN]; /* NUL-terminated */
  uint64_t off;                   /* bytes from the window's start */
  uint64_t nbytes;                /* logical length, bytes */
  uint64_t alloc;                 /* allocated length, bytes (nbytes rounded) */
  uint32_t esize;                 /* element size, bytes (4 for signal cells) */
  uint32_t cell_bytes;            /* bytes from one signal cell to the next:
                                     0 packed (esize apart), 64 a cache
                                     line each (cs_layout_pad_cells) */
} cs_slot_t;
_Static_assert(sizeof(cs_slot_t) == 48, "cs_slot_t is part of the shm ABI");
_Static_assert(offsetof(cs_slot_t, off) == 16, "cs_slot_t.off");
_Static_assert(offsetof(cs_slot_t, esize) == 40, "cs_slot_t.esize");

/* The slot table of one run; identical on every rank. POD. */
typedef struct cs_layout {
  uint32_t  nslots;             /* slots declared */
  uint32_t  align;              /* bytes each slot is rounded up to (32; 1 = unaligned) */
  uint64_t  win_bytes;          /* bytes: sum of alloc */
  cs_slot_t slot[CS_MAX_SLOTS]; /* in declaration order */
} cs_layout_t;
_Static_assert(sizeof(cs_layout_t) == 16 + 48 * CS_MAX_SLOTS, "cs_layout_t");

static inline uint64_t cs_round_up(uint64_t n, uint64_t a)
{
  return (n + a - 1) / a * a;
}

/* Starts an empty layout whose slots are rounded up to `align` bytes
 * (CS_SLOT_ALIGN normally; 1 reproduces the pre-#2161 packing). */
void cs_layout_init(cs_layout_t *l, uint32_t align);

/* Declares the next slot: `nbytes` logical bytes of `esize`-byte elements.
 * Returns the slot index (>= 0), or -EINVAL (bad name or esize), -ENOSPC
 * (more than CS_MAX_SLOTS), CS_ETOOBIG (window would exceed 2^47 bytes).
 * On failure the layout is unchanged. */
int cs_layout_add(cs_layout_t *l, const char *name, uint64_t nbytes,
                  uint32_t esize);

/* Gives every int32 cell of slot `slot` a 64-byte line of its own (the
 * padding that keeps one rank's Set notify from writing back another's
 * cell, docs/memory-models.md): the slot starts on a 64-byte boundary and
 * cell c sits at byte c x 64 of it; nbytes stays the cells' logical bytes
 * (4 per cell), alloc grows to 64 per cell, and the slots after it move.
 * Only for a slot of 4-byte elements. 0, -EINVAL or CS_ETOOBIG (the
 * layout unchanged). */
#define CS_LINE_BYTES 64u
int cs_layout_pad_cells(cs_layout_t *l, uint32_t slot);

/* The signal cells of slot s: its logical elements. */
static inline uint64_t cs_slot_cells(const cs_slot_t *s)
{
  return s->nbytes / (s->esize ? s->esize : 1);
}

/* Whether int32 cell `cell` lies inside slot s's allocation. */
static inline bool cs_slot_cell_ok(const cs_slot_t *s, uint64_t cell)
{
  uint64_t st = s->cell_bytes ? s->cell_bytes : s->esize;
  return cell <= (s->alloc < 4 ? 0 : (s->alloc - 4) / (st ? st : 1)) &&
         s->alloc >= 4;
}

/* The window byte offset of int32 cell `cell` of slot s. */
static inline uint64_t cs_slot_cell_off(const cs_slot_t *s, uint64_t cell)
{
  return s->off + cell * (s->cell_bytes ? s->cell_bytes : s->esize);
}

/* Index of the slot called `name`, or CS_EBADSLOT. */
int cs_layout_find(const cs_layout_t *l, const char *name);

/* Bounds rule of every window access: bytes [off, off + nbytes) relative to
 * the slot's start must lie inside its allocation (alloc, which includes the
 * 32-byte padding past the logical end). Overflow-safe. */
static inline bool cs_slot_contains(const cs_slot_t *s, uint64_t off,
                                    uint64_t nbytes)
{
  return off <= s->alloc && nbytes <= s->alloc - off;
}

#endif
