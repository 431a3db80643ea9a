/*
 * first_write.c - what the first store into each page of a process's
 * mapping of POSIX shared memory costs, the way a rank maps the region
 * (shm_open, posix_fallocate, mmap MAP_SHARED | MAP_POPULATE), and
 * whether anything done before the stores spares it. One 80-byte store
 * per record over 16 MiB, wall clock (the stall it measures shows in no
 * CPU-time counter), with the process's minor faults around it. Not a
 * test and not built by CMake: a figure for docs/performance.md.
 *
 *   cc -O2 -o first_write scripts/first_write.c   (add -lrt on old glibc)
 *   ./first_write none | populate-write | other-mapping | touch
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static uint64_t now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long minflt(void)
{
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "none";
  const size_t bytes = 16u << 20;
  char name[64];
  snprintf(name, sizeof name, "/collsim-first-write-%d", (int)getpid());
  int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    perror("shm_open");
    return 1;
  }
  shm_unlink(name);
  if (ftruncate(fd, (off_t)bytes) < 0 || posix_fallocate(fd, 0, (off_t)bytes)) {
    perror("ftruncate/fallocate");
    return 1;
  }
  uint8_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  uint64_t t0 = now();
  long f0 = minflt();
  int rc = 0;
  if (!strcmp(mode, "populate-write")) {
    rc = madvise(p, bytes, MADV_POPULATE_WRITE);
  } else if (!strcmp(mode, "other-mapping")) {
    uint8_t *q = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (q == MAP_FAILED) {
      perror("mmap");
      return 1;
    }
    for (size_t o = 0; o < bytes; o += 4096)
      q[o] = 1;
    munmap(q, bytes);
  } else if (!strcmp(mode, "touch")) {
    for (size_t o = 0; o < bytes; o += 4096)
      __atomic_fetch_add((uint32_t *)(p + o), 0, __ATOMIC_RELAXED);
  } else if (strcmp(mode, "none")) {
    fprintf(stderr, "usage: first_write none|populate-write|other-mapping|touch\n");
    return 2;
  }
  uint64_t t1 = now();
  long f1 = minflt();
  for (size_t o = 0; o + 80 <= bytes; o += 80)
    memset(p + o, 7, 80);
  uint64_t t2 = now();
  long f2 = minflt();
  printf("%s%s: before %.2f ms (%ld minor faults); stores %.1f ns per 80 B, "
         "%.1f us per 4 KiB page (%ld minor faults)\n", mode,
         rc ? " (madvise refused)" : "", (double)(t1 - t0) / 1e6, f1 - f0,
         (double)(t2 - t1) / (double)(bytes / 80),
         (double)(t2 - t1) / 1e3 / (double)(bytes / 4096), f2 - f1);
  return 0;
}
