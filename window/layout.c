/*
 * layout.c - slot declaration for window layouts. Pure functions; the only
 * state is the caller's cs_layout_t. Called by collectives/ (which declares
 * the data and signal slots of each algorithm) and `collsim ping`.
 */
#include "layout.h"

#include <errno.h>
#include <string.h>

#include "cs_error.h"

#define CS_WIN_MAX_BYTES (1ull << 47)

void cs_layout_init(cs_layout_t *l, uint32_t align)
{
  memset(l, 0, sizeof(*l));
  l->align = align ? align : 1;
}

int cs_layout_add(cs_layout_t *l, const char *name, uint64_t nbytes,
                  uint32_t esize)
{
  size_t namelen = name ? strlen(name) : 0;
  if (namelen == 0 || namelen >= CS_SLOT_NAMELEN)
    return -EINVAL;
  if (esize == 0 || esize > 8)
    return -EINVAL;
  if (l->nslots >= CS_MAX_SLOTS)
    return -ENOSPC;
  if (nbytes > CS_WIN_MAX_BYTES)
    return CS_ETOOBIG;
  uint64_t alloc = cs_round_up(nbytes, l->align);
  if (l->win_bytes + alloc > CS_WIN_MAX_BYTES)
    return CS_ETOOBIG;

  cs_slot_t *s = &l->slot[l->nslots];
  memset(s, 0, sizeof(*s));
  memcpy(s->name, name, namelen);
  s->off = l->win_bytes;
  s->nbytes = nbytes;
  s->alloc = alloc;
  s->esize = esize;
  l->win_bytes += alloc;
  return (int)l->nslots++;
}

int cs_layout_pad_cells(cs_layout_t *l, uint32_t slot)
{
  if (slot >= l->nslots || l->slot[slot].esize != 4)
    return -EINVAL;
  cs_layout_t t = *l;
  cs_slot_t *s = &t.slot[slot];
  s->cell_bytes = CS_LINE_BYTES;
  s->alloc = cs_slot_cells(s) * CS_LINE_BYTES;
  if (s->alloc == 0)
    s->alloc = CS_LINE_BYTES;
  uint64_t at = cs_round_up(s->off, CS_LINE_BYTES);
  for (uint32_t i = slot; i < t.nslots; i++) {
    if (i > slot)
      at = cs_round_up(at, t.align);
    t.slot[i].off = at;
    at += t.slot[i].alloc;
    if (i == slot)
      at = cs_round_up(at, CS_LINE_BYTES); /* the last cell's line, whole */
  }
  if (at > CS_WIN_MAX_BYTES)
    return CS_ETOOBIG;
  t.win_bytes = at;
  *l = t;
  return 0;
}

int cs_layout_find(const cs_layout_t *l, const char *name)
{
  for (uint32_t i = 0; i < l->nslots; i++)
    if (strncmp(l->slot[i].name, name, CS_SLOT_NAMELEN) == 0)
      return (int)i;
  return CS_EBADSLOT;
}
