/*
 * fuzz_npy.c - libFuzzer harness for the .npy reader (run/npy.c).
 *
 * Owns: handing each input to cs_npy_read as a file (a memfd, read back by
 * its /proc/self/fd path) and checking the reader's contract on the way:
 * a refusal leaves the result zeroed with a reason naming the path; an
 * accepted file has rows, cols >= 1, a known dtype and exactly
 * rows*cols*esize data bytes, all of them readable. Does not own the
 * reader's wording (tests/test_npy.c). Built by CMake with COLLSIM_FUZZ,
 * run by `.ci/stages.sh fuzz`.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../run/npy.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (fd < 0) {
    fd = memfd_create("fuzz-npy", MFD_CLOEXEC);
    if (fd < 0)
      abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  }
  if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
    abort();
  cs_npy_t a;
  char why[256];
  if (cs_npy_read(path, &a, why, sizeof(why)) < 0) {
    if (a.data || a.rows || a.cols || strncmp(why, path, strlen(path)) != 0)
      abort();
    return 0;
  }
  size_t es = cs_dtype_size(a.dtype);
  if (!a.data || a.rows < 1 || a.cols < 1 || es == 0 ||
      a.rows * a.cols * es > size)
    abort();
  /* Every byte the reader says it filled is readable (ASan checks). */
  volatile uint8_t sum = 0;
  for (size_t i = 0; i < a.rows * a.cols * es; i++)
    sum ^= ((const uint8_t *)a.data)[i];
  (void)sum;
  free(a.data);
  return 0;
}
