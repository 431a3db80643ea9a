/* cs_error.c - cs_strerror(): the message table generated from CS_ERRNO_MAP. */
#include "cs_error.h"

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
