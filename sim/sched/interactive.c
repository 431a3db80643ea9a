/*
 * interactive.c - the interactive strategy, which is the whole terminal
 * prompt: every step it prints the enabled actors, reads the person's
 * choice and runs it (Enter: actor 0). `?` prints the help, `q` stops the
 * run, and anything else that is not an actor's number is refused with a
 * message and asked again. End of input or a pending SIGINT, SIGTERM or
 * SIGHUP stops the run.
 *
 * Owns the answers read but not used yet (its state) and the prompt's
 * wording (the actor lines come from describe.c, the DMA-op lines from
 * here). Does not own the terminal: cfg.tty_in and cfg.tty_out (default
 * stdin and stderr) are the caller's. Called through the strategy table
 * (strategy.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

typedef struct prompt {
  char   ibuf[256]; /* answers read but not used yet */
  size_t ilen;      /* bytes in ibuf */
} prompt_t;

static int init(cs_sched_t *s)
{
  s->state = calloc(1, sizeof(prompt_t));
  return s->state ? 0 : -ENOMEM;
}

static void fini(cs_sched_t *s)
{
  free(s->state);
  s->state = NULL;
}

/* Reads one line of the person's answers from fd (unbuffered, so no
 * answer is lost between prompts). Waits in poll() so that a SIGINT,
 * SIGTERM or SIGHUP the launcher blocks is noticed. Returns the length,
 * -1 at end of input, -2 when such a signal is pending. */
static int read_line(prompt_t *p, int fd, char *line, size_t cap)
{
  for (;;) {
    char *nl = memchr(p->ibuf, '\n', p->ilen);
    if (nl || p->ilen == sizeof(p->ibuf)) {
      size_t n = nl ? (size_t)(nl - p->ibuf) : p->ilen;
      size_t k = n < cap - 1 ? n : cap - 1;
      memcpy(line, p->ibuf, k);
      line[k] = 0;
      size_t used = nl ? n + 1 : n;
      memmove(p->ibuf, p->ibuf + used, p->ilen - used);
      p->ilen -= used;
      return (int)k;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, 100);
    sigset_t pend;
    sigpending(&pend);
    if (sigismember(&pend, SIGINT) || sigismember(&pend, SIGTERM) ||
        sigismember(&pend, SIGHUP))
      return -2;
    if (pr <= 0)
      continue;
    ssize_t r = read(fd, p->ibuf + p->ilen, sizeof(p->ibuf) - p->ilen);
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
      if (p->ilen == 0)
        return -1;
      p->ibuf[p->ilen++] = '\n'; /* a last line without its newline */
      continue;
    }
    if (r > 0)
      p->ilen += (size_t)r;
  }
}

/* One line for enabled actor i: its rank's posted event, or the DMA op
 * it would land. */
static void describe_actor(char *d, size_t n, const cs_sched_t *s, uint32_t i)
{
  if (s->en[i].op < 0) {
    cs__sched_describe_event(d, n, s->w, s->en[i].rank, &slot_of(s->w, s->en[i].rank)->next);
    return;
  }
  cs__sched_describe_op(d, n, s->w, s->en[i].rank,
                        &slot_of(s->w, s->en[i].rank)->q[s->en[i].op]);
}

static void print_help(FILE *out, uint32_t k)
{
  fprintf(out, "  Each step one actor runs: a rank performs the event shown, or a\n"
               "  rank's DMA engine lands the op shown. Type its number and Enter\n"
               "  (0..%u; Enter alone = 0), ? for this help, q to stop the run.\n",
          k - 1);
}

/* What one answer means: an actor index, or -1 (help shown or refused:
 * ask again), or -2 (quit). */
static int64_t answer(FILE *out, const char *line, uint32_t k)
{
  while (*line == ' ' || *line == '\t')
    line++;
  if (!*line)
    return 0;
  if (!strcmp(line, "?") || !strcmp(line, "h") || !strcmp(line, "help")) {
    print_help(out, k);
    return -1;
  }
  if (!strcmp(line, "q") || !strcmp(line, "quit"))
    return -2;
  char *end;
  errno = 0;
  unsigned long v = strtoul(line, &end, 10);
  while (*end == ' ' || *end == '\t')
    end++;
  if (*line >= '0' && *line <= '9' && !*end && !errno && v < k)
    return (int64_t)v;
  fprintf(out, "  '%s' is not a choice: type 0..%u (Enter = 0), ? for help, "
               "q to quit\n", line, k - 1);
  return -1;
}

static void print_actors(FILE *out, cs_sched_t *s, uint32_t k)
{
  fprintf(out, "step %llu: enabled actors:\n", (unsigned long long)s->steps);
  for (uint32_t i = 0; i < k; i++) {
    char d[200];
    describe_actor(d, sizeof(d), s, i);
    fprintf(out, "  [%u] %s\n", i, d);
  }
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  FILE *out = s->cfg.tty_out ? s->cfg.tty_out : stderr;
  FILE *in = s->cfg.tty_in ? s->cfg.tty_in : stdin;
  print_actors(out, s, k);
  for (;;) {
    fprintf(out, "choose [0-%u] (Enter = 0, ? = help, q = quit): ", k - 1);
    fflush(out);
    char line[64];
    int got = read_line(s->state, fileno(in), line, sizeof(line));
    if (got >= 0 && !isatty(fileno(in)))
      fputc('\n', out); /* no echo ended the prompt's line */
    int64_t v = got < 0 ? -3 : answer(out, line, k);
    if (v >= 0)
      return v;
    if (v == -1)
      continue;
    if (got < 0)
      fputc('\n', out);
    cs__sched_stop(s, CS_ABORT_SIGNAL, v == -2 ? "interactive schedule: quit "
                   "at step %llu" : got == -1 ? "interactive schedule: end "
                   "of input at step %llu, the run stops here" : "interactive "
                   "schedule: interrupted at step %llu", (unsigned long long)s->steps);
    return -1;
  }
}

const cs_strategy_ops_t cs__strategy_interactive = {
  .name = "interactive",
  .init = init,
  .pick = pick,
  .fini = fini,
};
