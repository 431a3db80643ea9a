/*
 * signature.c - a failed run's signature from its output (signature.h).
 */
#include "signature.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "cli.h"

/* The line of `out` that starts with `key`, into line; 0 if none. */
static int line_of(const char *out, const char *key, char *line, size_t cap)
{
  for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, key, strlen(key)))
      continue;
    size_t n = strcspn(p, "\n");
    snprintf(line, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return 1;
  }
  return 0;
}

/* The failure's signature: its kind and first bad rank and position, from
 * what run printed. */
void cs__run_signature(const char *out, int status, char *sig, size_t cap)
{
  char line[512];
  const char *f;
  if (WIFEXITED(status) && WEXITSTATUS(status) == CS_EXIT_WRONG) {
    if (line_of(out, "result: WRONG", line, sizeof(line)) && (f = strstr(line, "first: ")))
      snprintf(sig, cap, "wrong result, %.*s", (int)strcspn(f + 7, ":"), f + 7);
    else if (line_of(out, "signals: WRONG", line, sizeof(line)))
      snprintf(sig, cap, "signals not at their final values");
    else if (line_of(out, "repeated calls: WRONG", line, sizeof(line)))
      snprintf(sig, cap, "repeated calls differ");
    else
      snprintf(sig, cap, "wrong result");
    return;
  }
  /* Aborted: the first line that is not the run's own header. */
  const char *p = out;
  while (*p && (!strncmp(p, "mode:", 5) || !strncmp(p, "collsim run:", 12)))
    p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p);
  size_t n = strcspn(p, "\n");
  const char *at = strstr(p, " at ");
  if (at && (size_t)(at - p) < n)
    n = (size_t)(at - p); /* "deadlock at step 16" -> "deadlock" */
  snprintf(sig, cap, "%.*s", (int)(n < cap ? n : cap - 1), *p ? p : "run aborted");
}

