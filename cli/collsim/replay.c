/*
 * replay.c - `collsim replay TRACE`: rebuilds a run from a trace's header
 * and re-executes it in controlled mode with the recorded order as the
 * schedule, comparing every event with the recorded one before it runs.
 * Parses, turns the trace's header into `collsim run` options, hands them
 * to the run (cli/collsim/run.h) and prints the replay's verdict.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/trace/read.h"
#include "../../window/cs_error.h"
#include "cli.h"
#include "../../run/coll.h"
#include "run.h"

static const char replay_help[] =
    "usage: collsim replay TRACE [--input IN.npy] [--output OUT.npy]\n"
    "                      [--trace NEW] [--timeout SECONDS]\n"
    "\n"
    "Rebuilds the run recorded in TRACE (algorithm, ranks, count, dtype, op,\n"
    "inputs, memory model, bug mutation, injected fault) and re-executes it in\n"
    "controlled mode, granting the ranks and DMA engines in exactly the\n"
    "recorded order (for free-mode traces too). Before each event runs it is\n"
    "compared with the recorded one. Prints 'replayed N events: identical'\n"
    "and the outcome (verified, wrong result with the first bad element,\n"
    "fault, deadlock), or the first divergence with both events. A replay\n"
    "that stops (a fault, a hang) before every recorded step ran says NOT\n"
    "identical and how many steps of each rank were not reproduced. A\n"
    "partial trace (its run killed, or cut) replays as far as it goes and\n"
    "stops where it runs out with one line saying so, exit 0.\n"
    "\n"
    "A trace of a collective of your own (collsim run --algo ./X.so) names\n"
    "its shared object and records its SHA-256; replay loads it again from\n"
    "the same path only if the file still has that hash, and says which file\n"
    "it loads before loading it. A trace without the hash (written by an\n"
    "older collsim) is refused unless --trust-algo is given.\n"
    "\n"
    "Records edited by hand (their checksum no longer matches) are accepted,\n"
    "so an edited event replays to a divergence at that event.\n"
    "\n"
    "  --input IN.npy   the inputs, for traces of runs made with --input\n"
    "                   (their hash must match the trace's)\n"
    "  --output OUT.npy write the replayed results\n"
    "  --trace NEW      record the replayed run\n"
    "  --trust-algo     load the collective a trace names although the trace\n"
    "                   records no SHA-256 of it\n"
    "  --timeout SECONDS\n"
    "\n"
    "Exit status: 0 identical, 1 diverged, 2 bad usage or a bad trace.\n";

/* Returns 0 to replay *path, 1 after --help, -1 on bad usage (printed). */
static int parse(int argc, char **argv, run_opts_t *o, const char **path)
{
  static const struct option longopts[] = {
      {"input", required_argument, 0, 'i'},
      {"output", required_argument, 0, 'o'},
      {"trust-algo", no_argument, 0, 'T'},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  int opt, bad = 0;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (opt == CS_OPT_FAULT) {
      cs_cli_error("replay", "--fault is taken from the trace");
      return -1;
    }
    if (cs_cli_common_opt("replay", opt, optarg, &o->com, &bad)) {
      if (bad)
        return -1;
      continue;
    }
    switch (opt) {
    case 'i': o->input = optarg; break;
    case 'o': o->output = optarg; break;
    case 'T': o->trust_algo = 1; break;
    case 'h': fputs(replay_help, stdout); return 1;
    default:
      cs_cli_bad_option("replay");
      return -1;
    }
  }
  if (optind + 1 != argc) {
    cs_cli_error("replay", optind >= argc ? "a TRACE file is required"
                                          : "one TRACE file expected");
    return -1;
  }
  *path = argv[optind];
  return 0;
}

/* What every replay takes from the header whatever the collective: the
 * fill's seed and input hash, the injected fault, the wait timeout (unless
 * given) and the memory model. */
static void header_common(run_opts_t *o, const cs_trace_header_t *h)
{
  o->seed = h->seed;
  o->expect_hash = h->input_hash;
  if (h->fault_kind) {
    o->com.has_fault = 1;
    o->com.fault = (cs_fault_t){.kind = h->fault_kind, .rank = h->fault_rank,
                                .event = h->fault_event};
  }
  if (!o->com.timeout_ns)
    o->com.timeout_ns = h->timeout_ns;
  o->sched.model = (cs_mm_t)h->memory_model;
  o->schedule_str = "replay";
}

/* Whether a trace of a collective of one's own has modes collsim sets
 * for one: padded cells, a --minmax (which the run checks the collective
 * honours) and its chunk tags. */
static int user_modes_ok(uint32_t modes)
{
  return !(modes & ~(CS_TR_MODE_PADDED_CELLS | CS_TR_MODE_MINMAX_MASK |
                     CS_TR_MODE_CHUNK_TAGS)) &&
         (modes & CS_TR_MODE_MINMAX_MASK) >> CS_TR_MODE_MINMAX_SHIFT <
             CS_NMINMAX;
}

/* The first header field (FORMAT.md's name) whose value no run collsim
 * makes has, with its value, into buf; "" when there is none. `user`: a
 * collective loaded from a shared object (no bug, no --input; only the
 * padded-cells and minmax modes). */
static void bad_field(const cs_trace_header_t *h, int user, char *buf, size_t n)
{
  struct {
    const char *name;
    uint64_t v;
    int bad;
  } f[] = {
      {"program", h->program, h->program != 0},
      {"algo", h->algo, !user && h->algo >= CS_NALGOS},
      {"dtype", h->dtype, h->dtype >= CS_NDTYPES},
      {"op", h->op, h->op >= CS_NOPS},
      {"bug", h->bug, user ? h->bug != 0 : h->bug >= CS_NBUGS},
      {"memory_model", h->memory_model, h->memory_model >= CS_MM_COUNT},
      {"fill", h->fill, h->fill > (user ? CS_FILL_RANDOM : CS_FILL_INPUT)},
      {"fault_kind", h->fault_kind, h->fault_kind > CS_FAULT_HANG},
      {"fault_rank", h->fault_rank, h->fault_kind && h->fault_rank >= h->nranks},
      {"iters", h->iters, user && h->iters > 1000000},
      {"modes", h->modes, user ? !user_modes_ok(h->modes)
                               : cs_cli_modes_check(h->modes) < 0},
      {"algo_path", 0, user && !h->algo_path[0]},
  };
  buf[0] = 0;
  for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
    if (f[i].bad) {
      snprintf(buf, n, "header field %s = %llu", f[i].name,
               (unsigned long long)f[i].v);
      if (!strcmp(f[i].name, "algo_path"))
        snprintf(buf, n, "header field algo_path is empty: its collective "
                 "was not loaded from a shared object by a path, so collsim "
                 "cannot load it again");
      return;
    }
}

/* The run of a collective loaded from a shared object (algo_path): the
 * same file must still be there. Returns 0 or -1 (printed). */
static int from_user_header(run_opts_t *o, const char *path, uint64_t edited)
{
  const cs_trace_header_t *h = &o->replay.hdr;
  char so[sizeof(h->algo_path) + 1];
  snprintf(so, sizeof(so), "%.*s", (int)sizeof(h->algo_path), h->algo_path);
  if (h->dtype >= CS_NDTYPES || h->op >= CS_NOPS || h->bug != 0 ||
      h->memory_model >= CS_MM_COUNT || h->fill > CS_FILL_RANDOM ||
      h->fault_kind > CS_FAULT_HANG || h->iters > 1000000 ||
      !user_modes_ok(h->modes) ||
      (h->fault_kind && h->fault_rank >= h->nranks) || !so[0]) {
    char field[192];
    bad_field(h, 1, field, sizeof(field));
    cs_cli_error("replay", "%s: its header describes a run collsim cannot "
                 "make (%s)", path, field);
    return -1;
  }
  if (o->input || o->output) {
    cs_cli_error("replay", "%s is for traces of the built-in algorithms, not "
                 "of %s", o->input ? "--input" : "--output", so);
    return -1;
  }
  /* Only the file the trace recorded (its hash), named before it loads. */
  if (cs_run_algo_vouched("replay", path, so, h->algo_sha256, o->trust_algo) < 0)
    return -1;
  static const uint8_t none[sizeof(h->algo_sha256)];
  memcpy(o->want_sha256, h->algo_sha256, sizeof(o->want_sha256));
  o->want_sha = memcmp(h->algo_sha256, none, sizeof(none)) != 0;
  if (cs_run_load_algo(o, so) < 0)
    return -1;
  if (edited)
    fprintf(stderr, "collsim replay: %llu record%s of %s edited (checksum "
            "mismatch); replaying them as they are\n",
            (unsigned long long)edited, edited == 1 ? "" : "s", path);
  o->cfg = (cs_ar_cfg_t){.dtype = h->dtype, .op = h->op, .nranks = h->nranks,
                         .count = h->count, .tile_bytes = h->tile_bytes,
                         .iters = h->iters,
                         .padded_cells = !!(h->modes & CS_TR_MODE_PADDED_CELLS),
                         .minmax = (h->modes & CS_TR_MODE_MINMAX_MASK) >>
                                   CS_TR_MODE_MINMAX_SHIFT};
  cs_cli_shape_from_header(h, &o->cfg); /* a CS_COLL_SHAPE run's */
  o->fill = (cs_fill_t)h->fill;
  header_common(o, h);
  return 0;
}

/* The run the loaded trace's header describes, as `collsim run` options;
 * it must be one `collsim run` would accept. Returns 0 or -1 (printed). */
static int from_header(run_opts_t *o, const char *path, uint64_t edited)
{
  const cs_trace_header_t *h = &o->replay.hdr;
  if (h->program == 0 && h->algo == CS_TRACE_ALGO_USER)
    return from_user_header(o, path, edited);
  if (h->program != 0 || h->algo >= CS_NALGOS || h->dtype >= CS_NDTYPES ||
      h->op >= CS_NOPS || h->bug >= CS_NBUGS || h->memory_model >= CS_MM_COUNT ||
      h->fill > CS_FILL_INPUT || h->fault_kind > CS_FAULT_HANG ||
      cs_cli_modes_check(h->modes) < 0) {
    char field[192];
    bad_field(h, 0, field, sizeof(field));
    cs_cli_error("replay", "%s: not the trace of an allreduce run collsim can "
                 "make (%s): only 'collsim run' traces replay", path, field);
    return -1;
  }
  if (h->fill == CS_FILL_INPUT && !o->input) {
    cs_cli_error("replay", "%s was recorded with --input: give the same file "
                 "with --input", path);
    return -1;
  }
  if (h->fill != CS_FILL_INPUT && o->input) {
    cs_cli_error("replay", "--input %s is not accepted: %s was recorded "
                 "without --input (its inputs are a fill): leave it out",
                 o->input[0] ? o->input : "''", path);
    return -1;
  }
  if (edited)
    fprintf(stderr, "collsim replay: %llu record%s of %s edited (checksum "
            "mismatch); replaying them as they are\n",
            (unsigned long long)edited, edited == 1 ? "" : "s", path);
  char why[256];
  int bad = cs_cli_header_cfg(h, &o->cfg, why, sizeof(why));
  o->have_ranks = o->have_count = o->have_dtype = o->have_iters = 1;
  o->fill = h->fill == CS_FILL_INPUT ? CS_FILL_DEFAULT : (cs_fill_t)h->fill;
  header_common(o, h);
  if (bad) {
    cs_cli_error("replay", "%s: its header describes a run collsim cannot "
                 "make (%s)", path, why);
    return -1;
  }
  return 0;
}

/* The steps of a partial trace that hold every rank's events: a rank's
 * records run whole up to its last one (only each rank's unwritten tail
 * is missing), so every event up to the smallest last seq over the ranks
 * is in the trace; past it a step may need one that is not. */
static void partial_whole(run_opts_t *o)
{
  const cs_trace_header_t *h = &o->replay.hdr;
  uint32_t n = h->nranks < CS_MAX_RANKS ? h->nranks : CS_MAX_RANKS;
  uint64_t last[CS_MAX_RANKS] = {0};
  int seen[CS_MAX_RANKS] = {0};
  for (uint64_t i = 0; i < o->replay.n; i++) {
    const cs_trace_rec_t *x = &o->replay.rec[i];
    if (x->rank < n && (!seen[x->rank] || x->seq > last[x->rank])) {
      last[x->rank] = x->seq;
      seen[x->rank] = 1;
    }
  }
  uint64_t upto = UINT64_MAX;
  int all = 1;
  for (uint32_t r = 0; r < n; r++) {
    all &= seen[r];
    upto = last[r] < upto ? last[r] : upto;
  }
  uint64_t k = 0;
  while (all && k < o->sched.nreplay && o->steps[k].seq <= upto)
    k++;
  o->sched.replay_partial = 1;
  o->sched.replay_whole = k;
}

/* The replayed run stopped before it had followed every recorded step
 * (a hang that strikes in the replay before the steps of ranks that the
 * recorded run let go on): some ranks' events were not reproduced, so
 * the replay is not identical, whatever the outcome. Names them; exit 1. */
static int short_of(const run_opts_t *o, const char *path, const char *what,
                    int partial)
{
  uint64_t left[CS_MAX_RANKS] = {0};
  uint32_t n = o->replay.hdr.nranks < CS_MAX_RANKS ? o->replay.hdr.nranks
                                                   : CS_MAX_RANKS;
  for (uint64_t i = o->steps_taken; i < o->sched.nreplay; i++)
    if (o->steps[i].rank < n)
      left[o->steps[i].rank]++;
  char who[512] = "";
  size_t len = 0;
  for (uint32_t r = 0; r < n && len < sizeof(who); r++)
    if (left[r])
      len += (size_t)snprintf(who + len, sizeof(who) - len, "%srank %u: %llu",
                              len ? ", " : "", r, (unsigned long long)left[r]);
  printf("replay: NOT identical to %s: the replayed run stopped (outcome: %s) "
         "after %llu of its %llu recorded schedule steps; steps not "
         "reproduced: %s%s\n", path, what,
         (unsigned long long)o->steps_taken,
         (unsigned long long)o->sched.nreplay, who,
         partial ? " (the trace is partial)" : "");
  return 1;
}

/* Prints how the replayed run ended (its exit code `rc`). Returns the
 * replay's exit code. */
static int outcome(const run_opts_t *o, const char *path, int rc, int partial)
{
  if (rc == CS_EXIT_USAGE)
    return CS_EXIT_USAGE;
  if (o->abort_reason == CS_ABORT_DIVERGED && partial &&
      o->steps_taken >= o->sched.replay_whole) {
    printf("replay: stopped where partial trace %s runs out: its first %llu "
           "steps replayed identically; the rest of the run is not in the "
           "trace, so it was neither replayed nor compared\n", path,
           (unsigned long long)o->steps_taken);
    return CS_EXIT_OK;
  }
  if (o->abort_reason == CS_ABORT_DIVERGED) {
    printf("replay: DIVERGED from %s (the first divergence is above)%s\n",
           path, partial ? "; the trace is partial, so the replay may have "
           "gone past the end of what was recorded" : "");
    return 1;
  }
  const char *what = rc == CS_EXIT_OK ? "verified"
                     : rc == CS_EXIT_WRONG ? "wrong result"
                     : o->abort_reason == CS_ABORT_DEADLOCK ? "deadlock"
                     : o->abort_reason == CS_ABORT_TIMEOUT ? "hang (wait timeout)"
                                                           : "fault";
  if (o->steps_taken < o->sched.nreplay)
    return short_of(o, path, what, partial);
  if (partial)
    printf("replayed %llu recorded events: identical up to the end of the "
           "partial trace, whose run was not recorded to its end; outcome "
           "of the replay: %s\n", (unsigned long long)o->replay.n, what);
  else if (o->abort_reason && o->abort_reason != CS_ABORT_DEADLOCK)
    printf("replayed %llu recorded events up to the abort: identical; outcome: %s\n",
           (unsigned long long)o->replay.n, what);
  else
    printf("replayed %llu events: identical; outcome: %s\n",
           (unsigned long long)o->replay.n, what);
  return CS_EXIT_OK;
}

int cs_cmd_replay(int argc, char **argv)
{
  run_opts_t o;
  memset(&o, 0, sizeof(o));
  o.cmd = "replay";
  const char *path = NULL;
  int rc = parse(argc, argv, &o, &path);
  if (rc != 0)
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  char why[512];
  uint64_t edited = 0;
  cs_trace_diag_t d;
  o.replay_file = path; /* no --output or --trace may replace it */
  if (cs_trace_load_edited(path, &o.replay, &d, &edited) < 0) {
    cs_trace_strerror(&d, why, sizeof(why));
    cs_cli_error("replay", "%s", why);
    return CS_EXIT_USAGE;
  }
  int partial = cs_cli_partial("replay", path, &o.replay.hdr, o.replay.n);
  int code = CS_EXIT_USAGE;
  if (from_header(&o, path, edited) < 0 || cs_run_replay_steps(&o) < 0)
    goto out_trace;
  if (partial)
    partial_whole(&o);
  const cs_trace_header_t *h = &o.replay.hdr;
  printf("collsim replay: %s (%s, recorded with schedule %.64s, memory model "
         "%s): %llu events, %llu schedule steps\n", path,
         h->schedule[0] == 'f' ? "free mode" : "controlled", h->schedule,
         cs_mm_name((cs_mm_t)h->memory_model), (unsigned long long)o.replay.n,
         (unsigned long long)o.sched.nreplay);
  fflush(stdout);
  code = outcome(&o, path, cs_run_execute(&o), partial);
out_trace:
  cs_coll_close(o.coll_handle);
  free(o.steps);
  cs_trace_free(&o.replay);
  return code;
}
