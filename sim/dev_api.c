/*
 * dev_api.c - what the public device API (include/collsim/device.h)
 * offers in place of cs_dev_t's fields, which a collective built outside
 * collsim cannot see: the rank, the rank count, the step tag, and tiles
 * it allocates itself. Not events; the events are dev.c. Called by
 * collectives loaded from shared objects and by collectives/user.c.
 */
#include "dev.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t cs_dev_rank(const cs_dev_t *d)
{
  return d->rank;
}

uint32_t cs_dev_nranks(const cs_dev_t *d)
{
  return d->nranks;
}

void cs_dev_set_step(cs_dev_t *d, uint32_t step)
{
  cs_dev_step(d, step);
}

int cs_tile_init(cs_tile_t *t, uint32_t esize, uint32_t width)
{
  memset(t, 0, sizeof(*t));
  if ((esize != 2 && esize != 4) || width == 0)
    return -EINVAL;
  size_t nbytes = ((size_t)width * esize + 63) & ~(size_t)63;
  if (!(t->buf = aligned_alloc(64, nbytes)))
    return -ENOMEM;
  memset(t->buf, 0, nbytes);
  t->esize = esize;
  t->width = width;
  return 0;
}

void cs_tile_fini(cs_tile_t *t)
{
  free(t->buf);
  memset(t, 0, sizeof(*t));
}
