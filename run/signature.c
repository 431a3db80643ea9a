/*
 * signature.c - a failed run's signature from its output (signature.h).
 */
#include "signature.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "exit.h"

int cs__line_of(const char *out, const char *key, char *line, size_t cap)
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

/* Length of s up to the first occurrence of `word` (all of s if none). */
static size_t strcspn_word(const char *s, const char *word)
{
  const char *w = strstr(s, word);
  return w ? (size_t)(w - s) : strlen(s);
}

/* A passing run's first checker finding, as `run --check` printed it
 * ("1. race (x3, same positions): rank 0's store of data[13..26) at RS t0
 * j0 is not ordered before ..."): "check: " its kind and headline, which
 * name both events by rank and position. 0, or -1 without a finding. */
static int check_signature(const char *out, char *sig, size_t cap)
{
  const char *c = strstr(out, "\ncheck:\n");
  char line[512];
  if (!c || !cs__line_of(c + 8, "1. ", line, sizeof(line)))
    return -1;
  const char *kind = line + 3, *head = strstr(kind, ": ");
  if (!head)
    return -1;
  size_t nk = (size_t)(head - kind), nh = strcspn(head + 2, ":");
  const char *paren = memchr(kind, '(', nk);
  if (paren)
    nk = (size_t)(paren - kind);
  while (nk && kind[nk - 1] == ' ')
    nk--;
  snprintf(sig, cap, "check: %.*s: %.*s", (int)nk, kind, (int)nh, head + 2);
  return 0;
}

/* The failure's signature: its kind and first bad rank and position, from
 * what run printed. */
void cs__run_signature(const char *out, int status, char *sig, size_t cap)
{
  char line[512];
  const char *f;
  if (WIFEXITED(status) && WEXITSTATUS(status) == CS_EXIT_WRONG) {
    if (cs__line_of(out, "result: WRONG", line, sizeof(line)) && (f = strstr(line, "first: ")))
      snprintf(sig, cap, "wrong result, %.*s", (int)strcspn(f + 7, ":"), f + 7);
    else if (cs__line_of(out, "signals: WRONG", line, sizeof(line)) && (f = strstr(line, "first: ")))
      snprintf(sig, cap, "signals not at their final values, %.*s",
               (int)strcspn_word(f + 7, " h"), f + 7); /* " held"/" holds" */
    else if (cs__line_of(out, "repeated calls: WRONG", line, sizeof(line)) && (f = strstr(line, "first: ")))
      snprintf(sig, cap, "repeated calls differ, %.*s", (int)strcspn(f + 7, ":"), f + 7);
    else if (check_signature(out, sig, cap) == 0)
      ;
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
