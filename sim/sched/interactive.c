/*
 * interactive.c - the interactive strategy, which is the whole terminal
 * prompt: every step it prints the enabled actors, reads the person's
 * choice and runs it: a rank's number runs that rank's event, R#D lands
 * rank R's DMA op D (the names deviate: uses), Enter the first listed.
 * `?` prints the help, `q` stops the run, and anything else (a rank that
 * cannot run now, a number that is no rank) is refused with a message
 * saying why and asked again. End of input or a pending SIGINT, SIGTERM or
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

static void print_help(FILE *out)
{
  fprintf(out, "  Each step one actor runs: a rank performs the event shown, or a\n"
               "  rank's DMA engine lands the op shown. Type the rank's number (2\n"
               "  runs rank 2) or the landing's name R#D (rank R's DMA op D) and\n"
               "  Enter; Enter alone runs the first listed; ? for this help, q to\n"
               "  stop the run. A rank that is not listed cannot run now.\n");
}

/* The enabled actor named by `line` ("2": rank 2's event, "1#3": the
 * landing of rank 1's DMA op 3), or -1 with *why set. */
static int64_t named(const cs_sched_t *s, uint32_t k, const char *line,
                     char *why, size_t cap)
{
  char *end;
  errno = 0;
  unsigned long r = strtoul(line, &end, 10), d = 0;
  int dma = *end == '#';
  if (dma) {
    const char *q = end + 1;
    d = *q >= '0' && *q <= '9' ? strtoul(q, &end, 10) : 0;
    if (end == q)
      dma = -1;
  }
  while (*end == ' ' || *end == '\t')
    end++;
  if (*line < '0' || *line > '9' || *end || errno || dma < 0 ||
      r >= s->w->ctl->nranks) {
    snprintf(why, cap, "not a choice: type a rank (0..%u) or R#D for a DMA "
             "landing (Enter = the first listed), ? for help, q to quit",
             s->w->ctl->nranks - 1);
    return -1;
  }
  for (uint32_t i = 0; i < k; i++)
    if (s->en[i].rank == r &&
        (dma ? s->en[i].op >= 0 &&
                   slot_of(s->w, (uint32_t)r)->q[s->en[i].op].dma_id == d
             : s->en[i].op < 0))
      return i;
  if (dma)
    snprintf(why, cap, "not a choice: rank %lu's DMA op %lu cannot land now "
             "(the listed ones can)", r, d);
  else
    snprintf(why, cap, "not a choice: rank %lu cannot run now (it is not "
             "listed: it waits, or is done)", r);
  return -1;
}

/* What one answer means: an actor index, or -1 (help shown or refused:
 * ask again), or -2 (quit). */
static int64_t answer(FILE *out, const cs_sched_t *s, const char *line,
                      uint32_t k)
{
  while (*line == ' ' || *line == '\t')
    line++;
  if (!*line)
    return 0;
  if (!strcmp(line, "?") || !strcmp(line, "h") || !strcmp(line, "help")) {
    print_help(out);
    return -1;
  }
  if (!strcmp(line, "q") || !strcmp(line, "quit"))
    return -2;
  char why[160];
  int64_t i = named(s, k, line, why, sizeof(why));
  if (i < 0)
    fprintf(out, "  '%s' is %s\n", line, why);
  return i;
}

/* The enabled actors, each labelled by what names it: a rank's event by
 * the rank ("[2]"), a DMA landing as R#D ("[1#3]"). */
static void print_actors(FILE *out, cs_sched_t *s, uint32_t k)
{
  fprintf(out, "step %llu: enabled actors:\n", (unsigned long long)s->steps);
  for (uint32_t i = 0; i < k; i++) {
    char d[200], label[48];
    describe_actor(d, sizeof(d), s, i);
    if (s->en[i].op < 0)
      snprintf(label, sizeof(label), "%u", s->en[i].rank);
    else
      snprintf(label, sizeof(label), "%u#%llu", s->en[i].rank,
               (unsigned long long)slot_of(s->w, s->en[i].rank)
                   ->q[s->en[i].op].dma_id);
    fprintf(out, "  [%s] %s\n", label, d);
  }
}

static int64_t pick(cs_sched_t *s, uint32_t k)
{
  FILE *out = s->cfg.tty_out ? s->cfg.tty_out : stderr;
  FILE *in = s->cfg.tty_in ? s->cfg.tty_in : stdin;
  print_actors(out, s, k);
  for (;;) {
    fprintf(out, "choose a rank or R#D (Enter = the first, ? = help, q = "
            "quit): ");
    fflush(out);
    char line[64];
    int got = read_line(s->state, fileno(in), line, sizeof(line));
    if (got >= 0 && !isatty(fileno(in)))
      fputc('\n', out); /* no echo ended the prompt's line */
    int64_t v = got < 0 ? -3 : answer(out, s, line, k);
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
