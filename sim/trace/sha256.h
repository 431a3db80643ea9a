/*
 * sha256.h - SHA-256 (FIPS 180-4) of a buffer or an open file: the hash a
 * trace records of the shared object its collective was loaded from
 * (traces/FORMAT.md, algo_sha256), so that replay and shrink load only
 * the library that was recorded. Self-contained; tests/test_format.c holds
 * it to the system's sha256sum.
 */
#ifndef CS_TRACE_SHA256_H
#define CS_TRACE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define CS_SHA256_BYTES 32u

typedef struct cs_sha256 {
  uint32_t h[8];
  uint64_t len;      /* bytes hashed so far */
  uint8_t  buf[64];  /* the partial block */
  uint32_t nbuf;
} cs_sha256_t;

void cs_sha256_init(cs_sha256_t *s);
void cs_sha256_more(cs_sha256_t *s, const void *p, size_t n);
void cs_sha256_done(cs_sha256_t *s, uint8_t out[CS_SHA256_BYTES]);
/* The hash of n bytes at p. Pure. */
void cs_sha256(const void *p, size_t n, uint8_t out[CS_SHA256_BYTES]);
/* The hash of what is left of the open file fd (read to its end).
 * Returns 0, or -errno of a failed read. */
int cs_sha256_fd(int fd, uint8_t out[CS_SHA256_BYTES]);
/* The hash as 64 lowercase hex digits and a NUL into hex[65]. */
void cs_sha256_hex(const uint8_t h[CS_SHA256_BYTES], char hex[65]);

#endif
