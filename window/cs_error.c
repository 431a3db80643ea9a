/* cs_error.c - cs_strerror(): the message table generated from
 * CS_ERRNO_MAP; cs_human_bytes(), the sizes in messages. */
#include "cs_error.h"

#include <stdio.h>
#include <string.h>

const char *cs_strerror(int err)
{
  switch (err) {
  case 0: return "success";
#define CS_X_CASE(name, val, msg) case val: return msg;
  CS_ERRNO_MAP(CS_X_CASE)
#undef CS_X_CASE
  default: break;
  }
  if (err < 0 && err > -4096)
    return strerror(-err);
  return "unknown error";
}

const char *cs_human_bytes(uint64_t b, char *buf, size_t n)
{
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (u + 1 < (int)(sizeof(unit) / sizeof(unit[0])) && b >> (10 * (u + 1)))
    u++;
  uint64_t one = 1ull << (10 * u);
  if (b % one == 0)
    snprintf(buf, n, "%llu %s", (unsigned long long)(b / one), unit[u]);
  else
    snprintf(buf, n, "%.1f %s", (double)b / (double)one, unit[u]);
  return buf;
}
