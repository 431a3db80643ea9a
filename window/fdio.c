/*
 * fdio.c - whole reads and writes on a file descriptor (see fdio.h): EINTR
 * retried, short transfers continued. Used by the trace writer and
 * reader, .npy files, verify's worker pipes and collsim-mpi's trace.
 */
#include "fdio.h"

#include <errno.h>
#include <unistd.h>

/* One loop for the four calls: off < 0 is the plain (non-p) form. */
static ssize_t move(int fd, void *p, size_t n, int64_t off, int out)
{
  size_t done = 0;
  while (done < n) {
    char *at = (char *)p + done;
    size_t left = n - done;
    ssize_t k;
    if (off < 0)
      k = out ? write(fd, at, left) : read(fd, at, left);
    else
      k = out ? pwrite(fd, at, left, (off_t)(off + (int64_t)done))
              : pread(fd, at, left, (off_t)(off + (int64_t)done));
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -errno;
    if (k == 0) {
      if (!out)
        break; /* the end of the file */
      errno = EIO;
      return -EIO;
    }
    done += (size_t)k;
  }
  return (ssize_t)done;
}

int cs_write_full(int fd, const void *p, size_t n)
{
  ssize_t k = move(fd, (void *)p, n, -1, 1);
  return k < 0 ? (int)k : 0;
}

int cs_pwrite_full(int fd, const void *p, size_t n, uint64_t off)
{
  ssize_t k = move(fd, (void *)p, n, (int64_t)off, 1);
  return k < 0 ? (int)k : 0;
}

ssize_t cs_read_full(int fd, void *p, size_t n)
{
  return move(fd, p, n, -1, 0);
}

ssize_t cs_pread_full(int fd, void *p, size_t n, uint64_t off)
{
  return move(fd, p, n, (int64_t)off, 0);
}
