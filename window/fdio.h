/*
 * fdio.h - whole reads and writes on a file descriptor: the loops every
 * layer needs around read(2), write(2), pread(2) and pwrite(2) (a call may
 * move fewer bytes than asked, or be interrupted by a signal). Owned by
 * window/ as the lowest module, like cs_error.h; no state.
 */
#ifndef CS_FDIO_H
#define CS_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes all n bytes of p (at offset off for the p- form). 0, or -errno
 * (-EIO when the system wrote nothing and named no error); errno holds
 * the same error on failure. */
int cs_write_full(int fd, const void *p, size_t n);
int cs_pwrite_full(int fd, const void *p, size_t n, uint64_t off);

/* Reads until n bytes or the end of the file (from offset off for the p-
 * form). The bytes read (fewer than n at the end of the file), or -errno
 * (errno holds the same error). */
ssize_t cs_read_full(int fd, void *p, size_t n);
ssize_t cs_pread_full(int fd, void *p, size_t n, uint64_t off);

#endif
