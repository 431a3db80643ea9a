/*
 * checksum.c - the trace's checksums: FNV-1a for headers and input hashes,
 * CRC-32C for records (hardware crc32 where the CPU has it), and the names
 * of record kinds. Pure; used by the recorder, the writer and the reader.
 */
#define _GNU_SOURCE
#include <string.h>

#include "format.h"

uint32_t cs_trace_fnv32(const void *p, size_t n)
{
  const uint8_t *b = p;
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

uint64_t cs_trace_fnv64_more(uint64_t h, const void *p, size_t n)
{
  const uint8_t *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

uint64_t cs_trace_fnv64(const void *p, size_t n)
{
  return cs_trace_fnv64_more(CS_TRACE_FNV64_INIT, p, n);
}

/* CRC-32C (Castagnoli, reflected 0x82f63b78) of a record's first 76
 * bytes: with SSE4.2 nine crc32q and one crc32l, else a table. */
static uint32_t crc_table[256];

static void crc_table_init(void)
{
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    crc_table[i] = c;
  }
}

static uint32_t crc_soft(const uint8_t *p, size_t n)
{
  if (!crc_table[1])
    crc_table_init();
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; i++)
    c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(const uint8_t *p)
{
  uint64_t c = ~0u, w;
  for (int i = 0; i < 9; i++) {
    memcpy(&w, p + 8 * i, 8);
    c = __builtin_ia32_crc32di(c, w);
  }
  uint32_t t;
  memcpy(&t, p + 72, 4);
  return ~__builtin_ia32_crc32si((uint32_t)c, t);
}

/* Whether this CPU has the crc32 instruction (asked once). */
static int crc_hw_ok(void)
{
  static int hw = -1;
  if (hw < 0)
    hw = __builtin_cpu_supports("sse4.2");
  return hw;
}

uint32_t cs_trace_rec_sum(const cs_trace_rec_t *x)
{
  _Static_assert(offsetof(cs_trace_rec_t, checksum) == 76, "76 bytes");
  return crc_hw_ok() ? crc_hw((const uint8_t *)x) : crc_soft((const uint8_t *)x, 76);
}

const char *cs_trace_kind_name(uint32_t kind)
{
  static const char *const names[CS_TR_NKINDS] = {
      "?", "load", "store", "put", "notify", "wait-end", "fence", "reduce",
      "mark", "wait-begin", "dma-post", "dma-land", "fault", "abort",
      "pipe-barrier", "ddr-fence", "dcci", "read"};
  return kind < CS_TR_NKINDS ? names[kind] : "?";
}

