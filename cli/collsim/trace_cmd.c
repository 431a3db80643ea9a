/*
 * trace_cmd.c - `collsim trace FILE`: shows a recorded transfer log (format:
 * sim/trace.h, traces/FORMAT.md) as aligned text, JSON lines, or Chrome
 * Trace Event JSON for Perfetto, or summarises it per rank (--stats).
 *
 * Owns: the subcommand's options and the table of the collectives' names
 * the trace module prints with. Does not own the format or its validation
 * (sim/trace/read.c: every file is checked as it is read, or refused with one line),
 * what the records mean together (sim/trace/analysis.h), their text
 * (sim/trace/describe.h), the output formats (sim/trace/export.h) or the
 * --stats tables (trace_stats.c); never touches a live world.
 * Called by main.c's subcommand table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/bugs.h"
#include "../../sim/trace.h"
#include "../../sim/trace/export.h"
#include "../../sim/trace/read.h"
#include "../../window/cs_error.h"
#include "cli.h"
#include "trace_stats.h"

static const char trace_help[] =
    "usage: collsim trace [--format text|jsonl|chrome] [--stats] [--rank R]\n"
    "                     [--kind K[,K...]] [--from SEQ] [--to SEQ] [-o OUT]\n"
    "                     FILE\n"
    "\n"
    "Shows a trace recorded with 'collsim run|ping --trace FILE': every load,\n"
    "store, put, notify, wait, fence, reduce and phase marker of every rank in\n"
    "causal (sequence-number) order, and how a crashed run ended.\n"
    "\n"
    "  --format text    a header block (the run's configuration and slot\n"
    "                   table), then one aligned line per event (default)\n"
    "  --format jsonl   one JSON object per line: the header first, then\n"
    "                   every field of every event\n"
    "  --format chrome  Chrome Trace Event JSON: open it in Perfetto\n"
    "                   (ui.perfetto.dev, Open trace file) or chrome://tracing;\n"
    "                   a process per rank, lanes control/compute/signal/dma,\n"
    "                   waits as slices, arrows from each notify to the wait\n"
    "                   it satisfied and from each DMA post to its landing\n"
    "  --stats          per rank instead of the events: bytes loaded locally\n"
    "                   and remotely, bytes stored, notifies, waits, total and\n"
    "                   longest wait; for ring, mesh and host runs the remote\n"
    "                   bytes against the algorithm's volume (text or jsonl)\n"
    "  --rank R         only events of rank R\n"
    "  --kind K,...     only these kinds: load, store, put, notify, wait-begin,\n"
    "                   wait-end (or wait for both), fence, reduce, mark,\n"
    "                   dma-post, dma-land, fault, abort\n"
    "  --from SEQ       only events with sequence number >= SEQ\n"
    "  --to SEQ         only events with sequence number <= SEQ\n"
    "  -o, --output OUT write to OUT instead of standard output: a new name or\n"
    "                   a regular file of yours, not FILE\n"
    "\n"
    "Exit status: 0 success, 2 bad usage or a file that is not a valid\n"
    "trace (one line saying why: empty, truncated, wrong magic, newer format\n"
    "version, corrupt header or record N), 3 out of memory or the output\n"
    "could not be written.\n";

enum { FMT_TEXT = 0, FMT_JSONL, FMT_CHROME };
enum { OPT_FORMAT = 3000, OPT_STATS, OPT_RANK, OPT_KIND, OPT_FROM, OPT_TO };

typedef struct trace_opts {
  const char       *path;
  const char       *out;
  int               format;
  int               stats;
  cs_trace_filter_t filter; /* --rank, --kind, --from, --to */
} trace_opts_t;

/* ------------------------------------------------------------ options */

static int parse_kinds(const char *s, uint32_t *mask)
{
  const char *p = s;
  *mask = 0;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    uint32_t bits = 0;
    if (len == 4 && !strncmp(p, "wait", 4))
      bits = 1u << CS_EV_WAIT | 1u << CS_TR_WAIT_BEGIN;
    for (uint32_t k = 1; k < CS_TR_NKINDS && !bits; k++) {
      const char *name = cs_trace_kind_name(k);
      if (strlen(name) == len && !strncmp(p, name, len))
        bits = 1u << k;
    }
    if (!bits) {
      cs_cli_error("trace", "--kind '%s' is not accepted: expected a comma "
                   "list of load, store, put, notify, wait-begin, wait-end, "
                   "wait, fence, reduce, mark, dma-post, dma-land, fault, "
                   "abort", s);
      return -1;
    }
    *mask |= bits;
    if (!e)
      break;
    p = e + 1;
    if (!*p) {
      cs_cli_error("trace", "--kind '%s' is not accepted: empty name after "
                   "a comma", s);
      return -1;
    }
  }
  if (!*mask) {
    cs_cli_error("trace", "--kind '' is not accepted: expected a kind name");
    return -1;
  }
  return 0;
}

/* After the options: exactly one FILE, and options that fit together. */
static int check_args(int argc, char **argv, trace_opts_t *o)
{
  if (optind >= argc) {
    cs_cli_error("trace", "missing FILE: the trace to show (see 'collsim "
                 "trace --help')");
    return -1;
  }
  if (optind + 1 < argc) {
    cs_cli_error("trace", "unexpected argument '%s'", argv[optind + 1]);
    return -1;
  }
  o->path = argv[optind];
  if (o->filter.from > o->filter.to) {
    cs_cli_error("trace", "--from %llu is after --to %llu: expected an "
                 "ascending range", (unsigned long long)o->filter.from,
                 (unsigned long long)o->filter.to);
    return -1;
  }
  if (o->stats && o->format == FMT_CHROME) {
    cs_cli_error("trace", "--stats is not accepted with --format chrome: "
                 "expected text or jsonl");
    return -1;
  }
  return 0;
}

static int parse(int argc, char **argv, trace_opts_t *o)
{
  static const struct option longopts[] = {
      {"format", required_argument, 0, OPT_FORMAT},
      {"stats", no_argument, 0, OPT_STATS},
      {"rank", required_argument, 0, OPT_RANK},
      {"kind", required_argument, 0, OPT_KIND},
      {"from", required_argument, 0, OPT_FROM},
      {"to", required_argument, 0, OPT_TO},
      {"output", required_argument, 0, 'o'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int opt;
  o->filter.to = UINT64_MAX;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
    switch (opt) {
    case OPT_FORMAT:
      if (!strcmp(optarg, "text"))
        o->format = FMT_TEXT;
      else if (!strcmp(optarg, "jsonl"))
        o->format = FMT_JSONL;
      else if (!strcmp(optarg, "chrome"))
        o->format = FMT_CHROME;
      else {
        cs_cli_error("trace", "--format '%s' is not accepted: expected text, "
                     "jsonl or chrome", optarg);
        return -1;
      }
      break;
    case OPT_STATS: o->stats = 1; break;
    case OPT_RANK:
      if (cs_cli_u32("trace", "--rank", optarg, 0, CS_MAX_RANKS - 1, &o->filter.rank) < 0)
        return -1;
      o->filter.has_rank = 1;
      break;
    case OPT_KIND:
      if (parse_kinds(optarg, &o->filter.kinds) < 0)
        return -1;
      break;
    case OPT_FROM:
      if (cs_cli_u64("trace", "--from", optarg, 0, UINT64_MAX - 1, &o->filter.from) < 0)
        return -1;
      break;
    case OPT_TO:
      if (cs_cli_u64("trace", "--to", optarg, 0, UINT64_MAX - 1, &o->filter.to) < 0)
        return -1;
      break;
    case 'o':
      if (!*optarg) {
        cs_cli_error("trace", "-o '' is not accepted: expected a file name");
        return -1;
      }
      o->out = optarg;
      break;
    case 'h':
      fputs(trace_help, stdout);
      return 1;
    default:
      cs_cli_bad_option("trace");
      return -1;
    }
  }
  return check_args(argc, argv, o);
}
/* ------------------------------------------------------------ names */

static const char *algo_name(uint32_t a)
{
  return a == CS_TRACE_ALGO_USER ? "from a shared object" : cs_algo_name((cs_algo_t)a);
}
static const char *dtype_name(uint32_t d) { return cs_dtype_name((cs_dtype_t)d); }
static uint32_t dtype_size(uint32_t d) { return cs_dtype_size((cs_dtype_t)d); }
static const char *op_name(uint32_t op) { return cs_op_name((cs_op_t)op); }
static const char *fill_name(uint32_t f) { return cs_fill_name((cs_fill_t)f); }
static const char *phase_name(uint32_t a, uint32_t p)
{
  const cs_algo_desc_t *d = cs_algo_desc(a);
  return d && p >= 1 && p <= d->nphases ? d->phases[p - 1] : NULL;
}
static const char *barrier_name(uint32_t a, uint32_t which)
{
  const cs_algo_desc_t *d = cs_algo_desc(a);
  return !d ? NULL : which ? d->read_done_barrier : d->ready_barrier;
}
static int is_file_fill(uint32_t f) { return f == CS_FILL_INPUT; }

static const char *bug_name(uint32_t bug)
{
  return bug < CS_NBUGS ? cs_bug_table[bug].name : "?";
}

/* The collectives' names of header and record fields. */
static const cs_trace_names_t ar_names = {
    .algo = algo_name,
    .dtype = dtype_name,
    .dtype_size = dtype_size,
    .op = op_name,
    .fill = fill_name,
    .bug = bug_name,
    .phase = phase_name,
    .barrier = barrier_name,
    .is_file_fill = is_file_fill,
};

const cs_trace_names_t *cs__trace_names(void) { return &ar_names; }

/* ------------------------------------------------------------ command */

/* Loads o->path, refusing a --rank the trace does not have. Returns 0 or
 * an exit code. */
static int load(const trace_opts_t *o, cs_trace_t *t)
{
  char why[512];
  cs_trace_diag_t d;
  if (cs_trace_load(o->path, t, &d) < 0) {
    cs_trace_strerror(&d, why, sizeof(why));
    for (char *p = why; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = '?';
    cs_cli_error("trace", "%s", why);
    return CS_EXIT_USAGE;
  }
  if (o->filter.has_rank && o->filter.rank >= t->hdr.nranks) {
    cs_cli_error("trace", "--rank %u is not accepted: the trace has ranks "
                 "0..%u", o->filter.rank, t->hdr.nranks - 1);
    cs_trace_free(t);
    return CS_EXIT_USAGE;
  }
  cs_cli_partial("trace", o->path, &t->hdr, t->n);
  return 0;
}

/* Writes the chosen output to f; returns 0 or -ENOMEM. */
static int write_out(FILE *f, const trace_opts_t *o, const cs_trace_export_t *e)
{
  if (o->stats)
    return cs__trace_write_stats(f, e, o->format == FMT_JSONL);
  if (o->format == FMT_CHROME)
    return cs_trace_export_chrome(f, e);
  if (o->format == FMT_JSONL)
    return cs_trace_export_jsonl(f, e);
  return cs_trace_export_text(f, e);
}

/* -o PATH, under the output rule (cs_trace_create_file): created, or a
 * regular file of ours truncated; never another user's link followed or a
 * FIFO waited on. NULL after one printed line. */
static FILE *open_out(const char *path)
{
  int created;
  int fd = cs_trace_create_file(path, &created);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (f)
    return f;
  cs_cli_output_error("trace", "-o", path, fd < 0 ? fd : -errno);
  if (fd >= 0) {
    close(fd);
    if (created)
      unlink(path);
  }
  return NULL;
}

int cs_cmd_trace(int argc, char **argv)
{
  trace_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc != 0)
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  /* The output rule before the trace is read: never the trace itself. */
  if (o.out && cs_cli_output_ok("trace", "-o", o.out,
                                &(cs_cli_input_t){"TRACE", o.path, 0}, 1, 0) < 0)
    return CS_EXIT_USAGE;
  cs_trace_t t;
  if ((rc = load(&o, &t)) != 0)
    return rc;
  cs_trace_links_t links;
  if (cs_trace_links_init(&links, &t) < 0) {
    cs_cli_error("trace", "out of memory for %llu records",
                 (unsigned long long)t.n);
    cs_trace_free(&t);
    return CS_EXIT_ABORTED;
  }
  FILE *f = stdout;
  if (o.out && !(f = open_out(o.out))) {
    cs_trace_links_fini(&links);
    cs_trace_free(&t);
    return CS_EXIT_USAGE;
  }
  static char buf[1 << 16];
  setvbuf(f, buf, _IOFBF, sizeof(buf));

  int code = CS_EXIT_OK;
  cs_trace_export_t e = {&t, &links, &ar_names, &o.filter, o.path};
  if (write_out(f, &o, &e) < 0) {
    cs_cli_error("trace", "out of memory for %llu records",
                 (unsigned long long)t.n);
    code = CS_EXIT_ABORTED;
  }
  if (fflush(f) != 0 || ferror(f)) {
    cs_cli_error("trace", "%s: write failed: %s", o.out ? o.out : "stdout",
                 strerror(errno));
    code = CS_EXIT_ABORTED;
  }
  if (f != stdout)
    fclose(f);
  cs_trace_links_fini(&links);
  cs_trace_free(&t);
  return code;
}
