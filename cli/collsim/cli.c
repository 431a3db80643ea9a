/*
 * cli.c - number parsing, common options and error lines for cli/: the
 * wordings the subcommands share, including those of the pipeline's
 * tracer and launch steps. Called by every subcommand file.
 */
#define _GNU_SOURCE
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../sim/trace/format.h"
#include "../../window/cs_error.h"

void cs_cli_help(const char *text, int indent)
{
  static const char mark[] = "@ALGOS@\n";
  const char *at;
  while ((at = strstr(text, mark)) != NULL) {
    fwrite(text, 1, (size_t)(at - text), stdout);
    for (uint32_t a = 0; a < CS_NALGOS; a++) {
      const cs_algo_desc_t *d = cs_algo_desc(a);
      printf("%*s%-10s %s\n", indent, "", d->name, d->what);
    }
    text = at + strlen(mark);
  }
  fputs(text, stdout);
}

static int sub_argc;
static char **sub_argv;

void cs_cli_args(int argc, char **argv)
{
  sub_argc = argc;
  sub_argv = argv;
}

void cs_cli_bad_option(const char *cmd)
{
  const char *arg = sub_argv && optind - 1 >= 0 && optind - 1 < sub_argc
                        ? sub_argv[optind - 1] : "?";
  char shortopt[3] = {'-', (char)optopt, 0};
  /* A long option is named as given; a short one by its letter when the
   * argument at hand is not it (a cluster such as -xj, or past the end). */
  if (optopt > ' ' && optopt < 127 && strncmp(arg, "--", 2) &&
      (arg[0] != '-' || !strchr(arg, optopt)))
    arg = shortopt;
  /* collsim-mpi's subcommands are "mpi run" and "mpi bench" */
  int mpi = !strncmp(cmd, "mpi ", 4);
  cs_cli_error(cmd, "option '%s' is not accepted: unknown, or its value is "
               "missing (see 'collsim%s %s --help')", arg, mpi ? "-mpi" : "",
               mpi ? cmd + 4 : cmd);
}

int cs_cli_partial(const char *cmd, const char *path,
                   const struct cs_trace_header *h, uint64_t n)
{
  if (!cs_trace_is_partial(h, n))
    return 0;
  if (h->end_state == CS_TR_END_COMPLETE)
    fprintf(stderr, "collsim %s: %s is partial: %llu records, but its writer "
            "completed it with %llu (cut or appended to since)\n", cmd, path,
            (unsigned long long)n, (unsigned long long)h->end_records);
  else
    fprintf(stderr, "collsim %s: %s is partial: its writer never completed "
            "it (the run was killed, or is still writing it); %llu records "
            "so far, the rest of the run is missing\n", cmd, path,
            (unsigned long long)n);
  return 1;
}

void cs_cli_error(const char *cmd, const char *fmt, ...)
{
  va_list ap;
  char *line = NULL;
  va_start(ap, fmt);
  int n = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (n < 0) {
    fprintf(stderr, "collsim %s: %s\n", cmd, fmt);
    return;
  }
  /* One line whatever the values hold: a newline or another control
   * character in a value the user gave shows as '?', as the readers name
   * such a path. */
  for (char *p = line; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  fprintf(stderr, "collsim %s: %s\n", cmd, line);
  free(line);
}

int cs_cli_u64(const char *cmd, const char *opt, const char *s, uint64_t lo,
               uint64_t hi, uint64_t *out)
{
  const char *p = s;
  int ok = *p != 0;
  uint64_t v = 0;
  for (; *p && ok; p++) {
    if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
      ok = 0;
    else
      v = v * 10 + (uint64_t)(*p - '0');
  }
  if (!ok || v < lo || v > hi) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected a whole number "
                 "from %llu to %llu", opt, s, (unsigned long long)lo,
                 (unsigned long long)hi);
    return -1;
  }
  *out = v;
  return 0;
}

int cs_cli_u32(const char *cmd, const char *opt, const char *s, uint32_t lo,
               uint32_t hi, uint32_t *out)
{
  uint64_t v;
  if (cs_cli_u64(cmd, opt, s, lo, hi, &v) < 0)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

int cs_cli_dtype(const char *cmd, const char *opt, const char *s, cs_dtype_t *out)
{
  int v = cs_dtype_parse(s);
  if (v < 0) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected fp32, fp16 or bf16", opt, s);
    return -1;
  }
  *out = (cs_dtype_t)v;
  return 0;
}

int cs_cli_op(const char *cmd, const char *opt, const char *s, cs_op_t *out)
{
  int v = cs_op_parse(s);
  if (v < 0) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected sum, max, min or prod",
                 opt, s);
    return -1;
  }
  *out = (cs_op_t)v;
  return 0;
}

int cs_cli_mm(const char *cmd, const char *opt, const char *s, cs_mm_t *out)
{
  int v = cs_mm_parse(s);
  if (v < 0) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected sc, fifo, relaxed or a2a3",
                 opt, s);
    return -1;
  }
  *out = (cs_mm_t)v;
  return 0;
}

int cs_cli_signals(const char *cmd, const char *opt, const char *s,
                   uint32_t *no_epilogue)
{
  if (!strcmp(s, "single-use") || !strcmp(s, "self-clearing")) {
    *no_epilogue = s[1] == 'i';
    return 0;
  }
  cs_cli_error(cmd, "%s '%s' is not accepted: expected single-use or "
               "self-clearing", opt, s);
  return -1;
}

int cs_cli_signal_layout(const char *cmd, const char *opt, const char *s,
                         uint32_t *padded)
{
  if (!strcmp(s, "packed") || !strcmp(s, "padded")) {
    *padded = s[2] == 'd';
    return 0;
  }
  cs_cli_error(cmd, "%s '%s' is not accepted: expected packed or padded",
               opt, s);
  return -1;
}

int cs_cli_minmax(const char *cmd, const char *opt, const char *s,
                  uint32_t *out)
{
  int v = cs_minmax_parse(s);
  if (v < 0) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected ieee, propagate or "
                 "pto", opt, s);
    return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

int cs_cli_pair(const char *cmd, const char *opt, const char *s, char sep,
                uint32_t lo, uint32_t *a, uint32_t *b)
{
  unsigned long long x = 0, y = 0;
  int n = -1;
  char fmt[] = "%llu?%llu%n";
  fmt[4] = sep;
  if (s[0] >= '0' && s[0] <= '9' && sscanf(s, fmt, &x, &y, &n) == 2 &&
      n >= 0 && s[n] == 0 && strchr(s, sep)[1] >= '0' &&
      strchr(s, sep)[1] <= '9' && x >= lo && y >= lo && x <= UINT32_MAX &&
      y <= UINT32_MAX) {
    *a = (uint32_t)x;
    *b = (uint32_t)y;
    return 0;
  }
  cs_cli_error(cmd, "%s '%s' is not accepted: expected %s (two integers%s)",
               opt, s, sep == 'x' ? "ROWSxCOLS, e.g. 4x8" : "R,C, e.g. 3,5",
               lo ? " of at least 1" : "");
  return -1;
}

int cs_cli_shape_resolve(const char *cmd, cs_ar_cfg_t *c, int have_shape,
                         int have_valid, int have_count)
{
  if (have_valid && !have_shape) {
    cs_cli_error(cmd, "--valid %u,%u needs --shape ROWSxCOLS", c->valid_rows,
                 c->valid_cols);
    return -1;
  }
  if (!have_shape)
    return 0;
  uint64_t n = (uint64_t)c->shape_rows * c->shape_cols;
  if (n > CS_AR_MAX_COUNT) {
    cs_cli_error(cmd, "--shape %ux%u is not accepted: %llu elements; expected "
                 "ROWS x COLS at most %llu", c->shape_rows, c->shape_cols,
                 (unsigned long long)n, CS_AR_MAX_COUNT);
    return -1;
  }
  if (have_count && c->count != n) {
    cs_cli_error(cmd, "--count %llu does not match --shape %ux%u: expected "
                 "%llu (ROWS x COLS) or no --count",
                 (unsigned long long)c->count, c->shape_rows, c->shape_cols,
                 (unsigned long long)n);
    return -1;
  }
  c->count = n;
  if (!have_valid) {
    c->valid_rows = c->shape_rows;
    c->valid_cols = c->shape_cols;
  }
  return 0;
}

void cs_cli_shape_to_header(const cs_ar_cfg_t *c, cs_trace_header_t *h)
{
  h->shape_rows = c->shape_rows;
  h->shape_cols = c->shape_cols;
  h->valid_rows = c->valid_rows;
  h->valid_cols = c->valid_cols;
}

void cs_cli_shape_from_header(const cs_trace_header_t *h, cs_ar_cfg_t *c)
{
  c->shape_rows = h->shape_rows;
  c->shape_cols = h->shape_cols;
  c->valid_rows = h->valid_rows;
  c->valid_cols = h->valid_cols;
}

uint32_t cs_cli_modes(const cs_ar_cfg_t *c)
{
  return (c->no_epilogue ? CS_TR_MODE_SINGLE_USE : 0) |
         (c->padded_cells ? CS_TR_MODE_PADDED_CELLS : 0) |
         (c->minmax << CS_TR_MODE_MINMAX_SHIFT);
}

int cs_cli_modes_check(uint32_t modes)
{
  uint32_t mm = (modes & CS_TR_MODE_MINMAX_MASK) >> CS_TR_MODE_MINMAX_SHIFT;
  return (modes & ~CS_TR_MODE_KNOWN) || mm >= CS_NMINMAX ? -1 : 0;
}

void cs_cli_modes_apply(uint32_t modes, cs_ar_cfg_t *c)
{
  c->no_epilogue = modes & CS_TR_MODE_SINGLE_USE ? 1 : 0;
  c->padded_cells = modes & CS_TR_MODE_PADDED_CELLS ? 1 : 0;
  c->minmax = (modes & CS_TR_MODE_MINMAX_MASK) >> CS_TR_MODE_MINMAX_SHIFT;
}

int cs_cli_header_cfg(const cs_trace_header_t *h, cs_ar_cfg_t *c, char *why,
                      size_t n)
{
  *c = (cs_ar_cfg_t){.algo = h->algo, .dtype = h->dtype, .op = h->op,
                     .nranks = h->nranks, .count = h->count,
                     .tile_bytes = h->tile_bytes, .iters = h->iters,
                     .bug = h->bug};
  cs_cli_modes_apply(h->modes, c);
  cs_cli_shape_from_header(h, c);
  int rc = cs_ar_check(c);
  if (rc < 0)
    cs_cli_ar_why(c, rc, why, n);
  else if (h->iters > 1000000)
    snprintf(why, n, "more than 1000000 calls");
  else if (h->fault_kind && h->fault_rank >= h->nranks)
    snprintf(why, n, "fault rank out of range");
  else
    return 0;
  return -1;
}

void cs_cli_ar_why(const cs_ar_cfg_t *c, int rc, char *buf, size_t n)
{
  uint32_t maxr = cs_ar_max_ranks(c->algo);
  const cs_algo_desc_t *a = cs_algo_desc(c->algo);
  char who[80] = "";
  switch (rc) {
  case CS_EARRANKS:
    if (a && a->limit_who)
      snprintf(who, sizeof(who), " (%s supports at most %u)", a->limit_who, maxr);
    snprintf(buf, n, "--ranks %u is not accepted for --algo %s: expected 1 "
             "to %u%s", c->nranks, cs_algo_name(c->algo), maxr, who);
    break;
  case CS_EARCOUNT:
    snprintf(buf, n, "--count %llu is not accepted: expected 1 to %llu "
             "elements", (unsigned long long)c->count, CS_AR_MAX_COUNT);
    break;
  case CS_EARTILE:
    snprintf(buf, n, "--tile-bytes %u is not accepted: expected a multiple "
             "of 32 from %u to %u", c->tile_bytes, CS_AR_MIN_TILE, CS_AR_MAX_TILE);
    break;
  case CS_EARITERS:
    snprintf(buf, n, "--iters 0 is not accepted: expected at least 1");
    break;
  case CS_EARPRECOND:
    snprintf(buf, n, "--ranks %u --count %llu is not accepted for --algo %s: "
             "expected %s", c->nranks, (unsigned long long)c->count,
             cs_algo_name(c->algo), a->precondition);
    break;
  case CS_EARDTYPE:
  case CS_EAROP: {
    char list[64] = "";
    size_t len = 0;
    uint32_t mask = rc == CS_EARDTYPE ? a->dtypes : a->ops;
    for (uint32_t i = 0; i < 32 && len < sizeof(list); i++)
      if (mask & 1u << i)
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                                len ? " or " : "",
                                rc == CS_EARDTYPE ? cs_dtype_name((cs_dtype_t)i)
                                                  : cs_op_name((cs_op_t)i));
    snprintf(buf, n, "%s %s is not accepted for --algo %s: expected %s",
             rc == CS_EARDTYPE ? "--dtype" : "--op",
             rc == CS_EARDTYPE ? cs_dtype_name(c->dtype) : cs_op_name(c->op),
             cs_algo_name(c->algo), list);
    break;
  }
  case CS_EARSHAPE:
    snprintf(buf, n, "--shape %ux%u is not accepted: expected ROWS x COLS = "
             "the element count (%llu)", c->shape_rows, c->shape_cols,
             (unsigned long long)c->count);
    break;
  case CS_EARVALID:
    snprintf(buf, n, "--valid %u,%u is not accepted for --shape %ux%u: "
             "expected R from 1 to %u and C from 1 to %u", c->valid_rows,
             c->valid_cols, c->shape_rows, c->shape_cols, c->shape_rows,
             c->shape_cols);
    break;
  case CS_EARVALIDALGO:
    snprintf(buf, n, "--valid %u,%u (a partial rectangle of --shape %ux%u) "
             "is not accepted for --algo %s: only mesh has the partial-valid "
             "path (docs/algorithms.md §3.3)", c->valid_rows, c->valid_cols,
             c->shape_rows, c->shape_cols, cs_algo_name(c->algo));
    break;
  case CS_EARVALIDSTRIDE:
    snprintf(buf, n, "--shape %ux%u is not accepted with a partial --valid "
             "%u,%u: expected COLS <= %d (the 2-D stride's limit)",
             c->shape_rows, c->shape_cols, c->valid_rows, c->valid_cols,
             INT32_MAX);
    break;
  case CS_EARVALIDTILE:
    snprintf(buf, n, "--valid %u,%u is not accepted: %llu bytes of %s do not "
             "fit one tile; expected R x C x %u <= %u (--tile-bytes)",
             c->valid_rows, c->valid_cols,
             (unsigned long long)c->valid_rows * c->valid_cols *
                 cs_dtype_size(c->dtype),
             cs_dtype_name(c->dtype), cs_dtype_size(c->dtype), c->tile_bytes);
    break;
  default:
    snprintf(buf, n, "unknown algorithm, dtype or op");
  }
}

void cs_cli_schedule_error(const char *cmd, const char *s)
{
  /* Printed whole (a buffer would cut a long value short, and its end
   * may be what is wrong). */
  cs_cli_error(cmd, "--schedule '%s' is not accepted: expected "
               "random:SEED, pct:SEED:DEPTH[:STEPS] (DEPTH 1..64), latest, "
               "replay:FILE, interactive or deviate:LIST (none, or Z>Y,... "
               "with actors R.K, R#D, ^)", s);
}

int cs_cli_mm_scheduled(const char *cmd, cs_mm_t model, int scheduled)
{
  if (model == CS_MM_SC || scheduled)
    return 0;
  cs_cli_error(cmd, "--memory-model %s needs --schedule (posted stores and "
               "notifies land later only in controlled mode)", cs_mm_name(model));
  return -1;
}

int cs_cli_seconds(const char *cmd, const char *opt, const char *s, double hi,
                   uint64_t *ns)
{
  char *end;
  errno = 0;
  /* Decimal only, as every other number collsim takes: digits with at
   * most one '.', so no hex, exponent, sign, inf or nan. */
  size_t digits = strspn(s, "0123456789"), more = 0;
  if (s[digits] == '.')
    more = 1 + strspn(s + digits + 1, "0123456789");
  int plain = digits + more > (more ? 1u : 0u) && s[digits + more] == 0;
  double v = plain ? strtod(s, &end) : 0;
  if (!plain || errno || !isfinite(v) || v <= 0 || v > hi) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected seconds, more than "
                 "0 and at most %g", opt, s, hi);
    return -1;
  }
  *ns = (uint64_t)(v * 1e9);
  if (*ns == 0)
    *ns = 1;
  return 0;
}

void cs_cli_fault_why(const char *s, int rc, char *buf, size_t n)
{
  const char *kind = strchr(s, ':');
  kind = kind ? kind + 1 : "";
  size_t klen = strcspn(kind, ":");
  if (rc == CS_EFAULTKIND)
    snprintf(buf, n, "bad fault '%s': KIND '%.*s' is not one of segv, "
             "abort, exit, hang", s, (int)klen, kind);
  else if (rc == CS_EFAULTEVENT)
    snprintf(buf, n, "bad fault '%s': EVENT '%s' is not accepted: "
             "expected an event index 0..%llu", s,
             kind + klen + (kind[klen] == ':'), (unsigned long long)UINT64_MAX - 1);
  else
    snprintf(buf, n, "bad fault '%s': expected RANK:KIND[:EVENT] with "
             "RANK a number 0..%d", s, CS_MAX_RANKS - 1);
}

int cs_cli_common_opt(const char *cmd, int opt, const char *arg,
                      cs_cli_common_t *c, int *bad)
{
  char why[200];
  int rc;
  switch (opt) {
  case CS_OPT_FAULT:
    if ((rc = cs_fault_parse(arg, &c->fault)) < 0) {
      cs_cli_fault_why(arg, rc, why, sizeof(why));
      cs_cli_error(cmd, "--fault: %s", why);
      *bad = 1;
    }
    c->has_fault = !*bad;
    return 1;
  case CS_OPT_TIMEOUT:
    if (cs_cli_seconds(cmd, "--timeout", arg, 86400, &c->timeout_ns) < 0)
      *bad = 1;
    return 1;
  case CS_OPT_TRACE:
    if (!*arg) {
      cs_cli_error(cmd, "--trace '' is not accepted: expected a file name");
      *bad = 1;
    }
    c->trace = arg;
    return 1;
  default:
    return 0;
  }
}

int cs_cli_common_check(const char *cmd, const cs_cli_common_t *c,
                        uint32_t nranks)
{
  if (c->has_fault && c->fault.rank >= nranks) {
    cs_cli_error(cmd, "--fault: rank %u is not accepted: the run has ranks "
                 "0..%u", c->fault.rank, nranks - 1);
    return -1;
  }
  return 0;
}

void cs_cli_block_stops(void)
{
  sigset_t stops;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGHUP);
  sigprocmask(SIG_BLOCK, &stops, NULL);
}

int cs_cli_stop_pending(void)
{
  sigset_t p;
  sigpending(&p);
  return sigismember(&p, SIGINT) ? SIGINT : sigismember(&p, SIGTERM) ? SIGTERM
         : sigismember(&p, SIGHUP) ? SIGHUP : 0;
}

int cs_cli_launch_exit(const char *cmd, int rc)
{
  if (rc == 0)
    return CS_EXIT_OK;
  if (rc < 0)
    cs_cli_error(cmd, "could not start the ranks: %s", cs_strerror(rc));
  return CS_EXIT_ABORTED;
}

int cs_cli_tracer_open_exit(const char *cmd, const cs_pipe_t *p)
{
  cs_cli_output_error(cmd, "--trace", p->trace, p->err);
  return CS_EXIT_USAGE;
}

int cs_cli_pipe_launch_exit(const char *cmd, const cs_pipe_t *p)
{
  int code = cs_cli_launch_exit(cmd, p->launch_rc);
  if (p->close_rc < 0) {
    cs_cli_error(cmd, "--trace %s: write failed: %s", p->trace,
                 cs_strerror(p->close_rc));
    if (code == CS_EXIT_OK)
      code = CS_EXIT_ABORTED;
  }
  return code;
}

/* Bytes with an optional binary K/M/G suffix (either case), in [1, hi].
 * Returns 0, or -1 after one line naming the value and the range. */
int cs_cli_bytes(const char *cmd, const char *opt, const char *s, uint64_t hi,
                 uint64_t *out)
{
  const char *p = s;
  uint64_t v = 0;
  int ok = isdigit((unsigned char)*p);
  for (; ok && isdigit((unsigned char)*p); p++) {
    if (v > (UINT64_MAX - 9) / 10)
      ok = 0;
    else
      v = v * 10 + (uint64_t)(*p - '0');
  }
  unsigned shift = 0;
  if (ok && *p) {
    switch (toupper((unsigned char)*p)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: ok = 0; break;
    }
    if (p[1])
      ok = 0;
  }
  if (ok && v > (hi >> shift))
    ok = 0;
  v <<= shift;
  if (!ok || v < 1 || v > hi) {
    cs_cli_error(cmd, "%s '%s' is not accepted: expected bytes from 1 to "
                 "%lluG, a whole number with an optional K, M or G suffix "
                 "(binary: 4K = 4096)", opt, s, (unsigned long long)(hi >> 30));
    return -1;
  }
  *out = v;
  return 0;
}

int cs_cli_single_use_check(const char *cmd, cs_ar_cfg_t *c, int have_iters)
{
  if (!c->no_epilogue)
    return 0;
  if (!have_iters)
    c->iters = 1;
  if (c->iters > 1) {
    cs_cli_error(cmd, "--iters %u is not accepted with --signals single-use: "
                 "single-use signals allow one call per world (use "
                 "self-clearing to repeat calls)", c->iters);
    return -1;
  }
  if (cs_bug_min_calls(c->bug) > 1) {
    cs_cli_error(cmd, "--bug %s is not accepted with --signals single-use: "
                 "it needs %u calls on one world, single-use signals allow one",
                 cs_bug_table[c->bug].name, cs_bug_min_calls(c->bug));
    return -1;
  }
  return 0;
}

void cs_cli_output_error(const char *cmd, const char *opt, const char *path,
                         int err)
{
  if (err == -EISDIR)
    cs_cli_error(cmd, "%s %s is a directory: expected a file name", opt, path);
  else if (err == CS_ESYMLINK || err == CS_ENOTREG || err == CS_ENOTOURS ||
           err == CS_EHARDLINK)
    cs_cli_error(cmd, "%s %s %s: expected a new name or a regular file of "
                 "yours with no other hard links", opt, path, cs_strerror(err));
  else
    cs_cli_error(cmd, "%s %s: cannot create: %s", opt, path, cs_strerror(err));
}

int cs_cli_output_dir(const char *cmd, const char *dir)
{
  struct stat sb;
  if (!dir[0]) {
    cs_cli_error(cmd, "-o '' names no directory: expected a writable "
                 "directory");
    return -1;
  }
  int err = cs_links_ours(dir);
  if (err == CS_ESYMLINK) {
    cs_cli_error(cmd, "-o %s %s: expected a directory of yours or your own "
                 "link to one", dir, cs_strerror(err));
    return -1;
  }
  if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
      access(dir, W_OK | X_OK) < 0) {
    cs_cli_error(cmd, "-o %s: expected a writable directory", dir);
    return -1;
  }
  return 0;
}

int cs_cli_output_ok(const char *cmd, const char *opt, const char *path,
                     const cs_cli_input_t *in, int n, int renamed)
{
  if (!path[0]) { /* names nothing: refused before any work, not after */
    cs_cli_error(cmd, "%s '' names no file: expected a file name", opt);
    return -1;
  }
  const char *paths[n + 1];
  for (int i = 0; i < n; i++)
    paths[i] = in[i].path;
  paths[n] = NULL;
  int which = 0, err = cs_output_check(path, paths, &which);
  if (err == CS_ESAMEFILE) {
    cs_cli_error(cmd, "%s %s is the %s file %s: expected another file (%s)",
                 opt, path, in[which].opt, in[which].path, in[which].output
                 ? "one would replace the other" : "the input would be replaced");
    return -1;
  }
  if (err < 0) {
    cs_cli_output_error(cmd, opt, path, err);
    return -1;
  }
  if (!renamed)
    return 0;
  char *copy = strdup(path);
  const char *dir = copy ? dirname(copy) : ".";
  int ok = access(dir, W_OK | X_OK) == 0;
  if (!ok)
    cs_cli_error(cmd, "%s %s: cannot write in directory %s: %s", opt, path,
                 dir, strerror(errno));
  free(copy);
  return ok ? 0 : -1;
}
