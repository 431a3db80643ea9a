/*
 * check.c - `collsim check TRACE`: the ordering defects of a recorded run,
 * in words, with the edge that would fix each.
 *
 * Owns: the subcommand's options, the text and JSON-lines wording of the
 * checker's findings, and cs__check_path, which `run --check` calls on the
 * run's own trace. Does not own the analysis (sim/trace/check.h) or the
 * text of one event (sim/trace/describe.h, used here for both events of a
 * finding). Exit: 0 no finding, 1 findings, 2 a bad trace or usage,
 * 3 out of memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../../sim/trace/check.h"
#include "../../sim/trace/describe.h"
#include "../../sim/trace/export.h"
#include "../../sim/trace/read.h"
#include "cli.h"

typedef struct out {
  FILE *f;
  const cs_trace_header_t *h;
  const cs_trace_names_t *nm;
  int jsonl;
} out_t;

/* "rank 1's store of data[0..16) at RS t0 j0" */
static void event_phrase(const out_t *o, const cs_trace_rec_t *x, char *buf,
                         size_t n)
{
  char slot[32], tag[48], what[160];
  cs_trace_tag_str(o->h, o->nm, x, tag, sizeof(tag));
  if (!tag[0] && x->kind == CS_EV_STORE)
    snprintf(tag, sizeof(tag), "stage-in"); /* before the first marker */
  if (x->kind == CS_EV_NOTIFY) {
    cs_trace_slot_name(&o->h->layout, x->slot, slot, sizeof(slot));
    snprintf(buf, n, "rank %u's %s of rank %u's %s[%u]%s%s", x->rank,
             cs_trace_rec_is_add(x) ? "AtomicAdd" : "Set", x->peer, slot,
             x->cell, tag[0] ? " at " : "", tag);
    return;
  }
  snprintf(buf, n, "rank %u's %s of %s%s%s", x->rank, cs_trace_kind_name(x->kind),
           cs_trace_access_str(&o->h->layout, x, 1, what, sizeof(what)),
           tag[0] ? " at " : "", tag);
}

/* "#577 r2 store local data[0..16) valid 16  [RS t0 j0]" */
static void event_line(const out_t *o, const cs_trace_rec_t *x, char *buf,
                       size_t n)
{
  if (!x) {
    snprintf(buf, n, "-");
    return;
  }
  char what[200], tag[48];
  cs_trace_describe(what, sizeof(what), o->h, o->nm, x, NULL, NULL);
  cs_trace_tag_str(o->h, o->nm, x, tag, sizeof(tag));
  snprintf(buf, n, "#%llu r%u %s %s%s%s%s", (unsigned long long)x->seq,
           x->rank, cs_trace_kind_name(x->kind), what, tag[0] ? "  [" : "",
           tag, tag[0] ? "]" : "");
}

/* The headline and the fix of a race. */
static void race_words(const out_t *o, const cs_check_finding_t *f,
                       char *head, char *fix, size_t n)
{
  const cs_trace_rec_t *a = &f->a, *b = &f->b;
  char pa[160], pb[160];
  event_phrase(o, a, pa, sizeof(pa));
  event_phrase(o, b, pb, sizeof(pb));
  snprintf(head, n, "%s is not ordered before %s", pa, pb);
  uint32_t p = a->rank, q = b->rank;
  switch (f->cause) {
  case CS_CHECK_NO_FENCE:
    if (f->fence_part == CS_CHECK_PART_DDR)
      snprintf(fix, n, "rank %u's pipe barrier drains the %s, but no DDR "
               "fence after it waits until the %s is visible before the %s; "
               "a DDR fence after the pipe barrier (or cs_fence, both) "
               "orders them", p, cs_trace_kind_name(a->kind),
               cs_trace_kind_name(a->kind), p == q ? cs_trace_kind_name(b->kind)
                                                   : "notify");
    else if (f->fence_part == CS_CHECK_PART_PIPE)
      snprintf(fix, n, "rank %u's DDR fence waits only for drained writes, "
               "and the %s was still in the pipe: no pipe barrier before the "
               "DDR fence; a pipe barrier before it (or cs_fence, both) "
               "orders them", p, cs_trace_kind_name(a->kind));
    else if (p == q)
      snprintf(fix, n, "the %s may still be in rank %u's queue at the %s: "
               "nothing drains it between them; a fence between them "
               "orders them", cs_trace_kind_name(a->kind), p,
               cs_trace_kind_name(b->kind));
    else
      snprintf(fix, n, "rank %u notifies before the %s lands (rank %u hears "
               "of the notify, not of the landing); a fence before the "
               "notify orders them", p, cs_trace_kind_name(a->kind), q);
    break;
  case CS_CHECK_NO_SIGNAL:
    snprintf(fix, n, "nothing rank %u does after the %s reaches rank %u "
             "before its %s; a notify by rank %u after the %s (a fence "
             "before it) and a wait by rank %u on it before the %s order "
             "them", p, cs_trace_kind_name(a->kind), q,
             cs_trace_kind_name(b->kind), p, cs_trace_kind_name(a->kind), q,
             cs_trace_kind_name(b->kind));
    break;
  default:
    snprintf(fix, n, "rank %u's %s does not wait for rank %u to finish "
             "reading; a notify by rank %u after the load and a wait by "
             "rank %u on it before the %s (a read-complete barrier) order "
             "them", q, cs_trace_kind_name(b->kind), p, p, q,
             cs_trace_kind_name(b->kind));
    break;
  }
  const char *bn = f->cause == CS_CHECK_NO_SIGNAL ? cs_trace_barrier_name(o->nm, o->h, 0)
                   : f->cause == CS_CHECK_NO_READ_DONE ? cs_trace_barrier_name(o->nm, o->h, 1)
                                                       : NULL;
  if (bn) { /* the collective named that barrier: the one of the later
               * access's place ("its READY barrier of RS t1 j0") */
    char tag[48];
    size_t len = strlen(fix);
    cs_trace_tag_str(o->h, o->nm, b, tag, sizeof(tag));
    snprintf(fix + len, n - len, ": its %s barrier%s%s", bn, tag[0] ? " of " : "", tag);
  }
  if (f->reversed) {
    size_t len = strlen(fix);
    snprintf(fix + len, n - len, " (this run did the %s first; the "
             "algorithm's order puts the %s first)",
             cs_trace_kind_name(b->kind), cs_trace_kind_name(a->kind));
  }
}

/* The headline and the fix of any other finding. */
static void other_words(const out_t *o, const cs_check_finding_t *f,
                        char *head, char *fix, size_t n)
{
  const cs_trace_rec_t *a = &f->a;
  const cs_trace_rec_t *b = f->has & CS_CHECK_HAS_B ? &f->b : NULL;
  char slot[32], pa[160];
  cs_trace_slot_name(&o->h->layout, a->slot, slot, sizeof(slot));
  event_phrase(o, a, pa, sizeof(pa));
  uint32_t owner = a->kind == CS_EV_NOTIFY ? a->peer : a->rank;
  switch (f->kind) {
  case CS_CHECK_CLOBBER: {
    char pb[160];
    event_phrase(o, b, pb, sizeof(pb));
    snprintf(head, n, "%s and %s write one 64-byte line of rank %u's window, "
             "unordered", pa, pb, a->peer);
    snprintf(fix, n, "a Set notify writes back its whole line as it read it "
             "and can put back the other write's old value (pto-isa #322); "
             "use AtomicAdd, order the two writes, or give each cell a line "
             "of its own (--signal-layout padded)");
    break;
  }
  case CS_CHECK_MIXED_OPS:
    snprintf(head, n, "rank %u's %s[%u] gets both Set and AtomicAdd", owner,
             slot, a->cell);
    snprintf(fix, n, "a Set erases the adds that landed before it and an "
             "add moves a Set's value; give the cell one op");
    break;
  case CS_CHECK_WAIT_EQ:
    if (a->kind == CS_EV_NOTIFY)
      snprintf(head, n, "rank %u adds to rank %u's %s[%u] twice (#%llu, "
               "#%llu) with no wait on it in between, in a run whose waits "
               "compare with Eq: the cell passes a value an Eq wait needs",
               a->rank, a->peer, slot, a->cell, (unsigned long long)a->seq,
               (unsigned long long)(b ? b->seq : 0));
    else
      snprintf(head, n, "rank %u waits for %s[%u] == %d, and the cell can "
               "pass %d before it looks (an add not ordered after the wait)",
               a->rank, slot, a->cell, a->value, a->value);
    snprintf(fix, n, "wait with >= (Ge): the notifies only add");
    break;
  case CS_CHECK_NOT_RESET:
    if (f->cause == 1)
      snprintf(head, n, "rank %u's %s[%u] ends call 1 at %d, not 0, and the "
               "run makes %u calls on it", owner, slot, a->cell, f->value,
               o->h->iters);
    else
      snprintf(head, n, "rank %u's %s[%u] ends the run at %d, not 0, and "
               "the run makes %u calls on it", owner, slot, a->cell, f->value,
               o->h->iters);
    snprintf(fix, n, "the next call's waits pass on stale credits; a "
             "self-clearing epilogue (each rank subtracts what it received "
             "after its last wait) resets the cells");
    break;
  case CS_CHECK_UNSATISFIABLE:
    snprintf(head, n, "rank %u's wait %s[%u] %s %d can never hold: with "
             "every notify of the run landed the cell reaches %d", a->rank,
             slot, a->cell, cs_trace_cmp_str(a->opcmp), a->value, f->value);
    snprintf(fix, n, "a notifier is missing (or stopped early: see the "
             "run's fault records), or the target counts one barrier too "
             "many");
    break;
  default:
    snprintf(head, n, "%s is never used: no reduce or store follows before "
             "the rank's next remote load", pa);
    snprintf(fix, n, "not a race (the barriers order it), but a read of "
             "rank %u's memory the lane does not need, such as an inactive "
             "lane reading instead of skipping; load locally or not at all",
             a->peer);
    break;
  }
}

static const char *cause_name(uint32_t c)
{
  switch (c) {
  case CS_CHECK_NO_FENCE: return "no-fence";
  case CS_CHECK_NO_SIGNAL: return "no-signal";
  case CS_CHECK_NO_READ_DONE: return "no-read-complete";
  default: return "";
  }
}

/* The synchronisation points around one event of a finding. */
static void bounds_words(const out_t *o, const cs_trace_rec_t *before,
                         const cs_trace_rec_t *after, char *buf, size_t n)
{
  char lb[260], la[260];
  event_line(o, before, lb, sizeof(lb));
  event_line(o, after, la, sizeof(la));
  snprintf(buf, n, "after %s; before %s",
           before ? lb : "the start (or a sync no longer kept)",
           after ? la : "the end (no notify follows)");
}

#define REC_IF(f, bit, field) ((f)->has & (bit) ? &(f)->field : NULL)

static void print_finding(const out_t *o, const cs_check_finding_t *f,
                          uint64_t no)
{
  char head[600], fix[600], ea[300], eb[300], ba[600], bb[600];
  if (f->kind == CS_CHECK_RACE)
    race_words(o, f, head, fix, sizeof(head));
  else
    other_words(o, f, head, fix, sizeof(head));
  event_line(o, REC_IF(f, CS_CHECK_HAS_A, a), ea, sizeof(ea));
  event_line(o, REC_IF(f, CS_CHECK_HAS_B, b), eb, sizeof(eb));
  bounds_words(o, REC_IF(f, CS_CHECK_HAS_A_BEFORE, a_before),
               REC_IF(f, CS_CHECK_HAS_A_AFTER, a_after), ba, sizeof(ba));
  bounds_words(o, REC_IF(f, CS_CHECK_HAS_B_BEFORE, b_before),
               REC_IF(f, CS_CHECK_HAS_B_AFTER, b_after), bb, sizeof(bb));
  if (o->jsonl) {
    fprintf(o->f, "{\"finding\":");
    cs_trace_json_str(o->f, cs_check_kind_name(f->kind));
    fprintf(o->f, ",\"cause\":\"%s\",\"count\":%llu,",
            f->kind == CS_CHECK_RACE ? cause_name(f->cause) : "",
            (unsigned long long)f->count);
    if (f->follows)
      fprintf(o->f, "\"follows\":%u,", f->follows);
    if (f->reversed)
      fprintf(o->f, "\"reversed\":true,");
    const char *const key[] = {"what", "first", "second", "first_bounds",
                               "second_bounds", "fix"};
    const char *const val[] = {head, ea, eb, ba, bb, fix};
    for (size_t i = 0; i < sizeof(key) / sizeof(key[0]); i++) {
      fprintf(o->f, "%s\"%s\":", i ? "," : "", key[i]);
      cs_trace_json_str(o->f, val[i]);
    }
    fprintf(o->f, "}\n");
    return;
  }
  fprintf(o->f, "%llu. %s", (unsigned long long)no, cs_check_kind_name(f->kind));
  if (f->count > 1 && f->follows)
    fprintf(o->f, " (x%llu, same positions; follows from %u)",
            (unsigned long long)f->count, f->follows);
  else if (f->count > 1)
    fprintf(o->f, " (x%llu, same positions)", (unsigned long long)f->count);
  else if (f->follows)
    fprintf(o->f, " (follows from %u)", f->follows);
  fprintf(o->f, ": %s\n   first   %s\n           %s\n", head, ea, ba);
  if (f->has & CS_CHECK_HAS_B)
    fprintf(o->f, "   second  %s\n           %s\n", eb, bb);
  fprintf(o->f, "   fix     %s\n", fix);
}

/* What check saw but does not call an ordering defect, and what it cannot
 * see at all. */
static void print_summary(const out_t *o, const cs_check_report_t *r,
                          int partial)
{
  if (partial && !o->jsonl)
    fprintf(o->f, "note: the trace is INCOMPLETE (partial: its run was "
            "killed, is still writing it, or it was cut): the events after "
            "its end are missing, so the findings above may come from the "
            "cut rather than from the run\n");
  if (o->jsonl) {
    fprintf(o->f, "{\"summary\":{\"records\":%llu,\"findings\":%llu,"
            "\"occurrences\":%llu,\"failed_events\":%llu,\"aborted\":%s,"
            "\"partial\":%s}}\n",
            (unsigned long long)r->records, (unsigned long long)r->n,
            (unsigned long long)r->total, (unsigned long long)r->failed,
            r->aborted ? "true" : "false", partial ? "true" : "false");
    return;
  }
  fprintf(o->f, "%llu finding%s (%llu occurrence%s) in %llu records\n",
          (unsigned long long)r->n, r->n == 1 ? "" : "s",
          (unsigned long long)r->total, r->total == 1 ? "" : "s",
          (unsigned long long)r->records);
  if (r->failed)
    fprintf(o->f, "note: %llu event%s FAILED (an out-of-slot access, a bad "
            "argument or a wait timeout): a bounds or liveness fault, which "
            "check reports through its consequences only; see "
            "'collsim trace'\n", (unsigned long long)r->failed,
            r->failed == 1 ? "" : "s");
  if (r->aborted)
    fprintf(o->f, "note: the run was aborted; events after the abort are "
            "not in the trace, so their races cannot be seen\n");
  if (r->n == 0)
    fprintf(o->f, "note: check sees ordering only: wrong arithmetic, or "
            "elements no rank ever reads or writes (a dropped tail), leave "
            "no trace of a missing edge; verify the result with 'collsim "
            "run'\n");
}

/* Checks `path` into *r and reads its header into *h; *partial: the
 * trace is partial (said on stderr). Returns 0, or the exit code after
 * printing why. */
static int check_load(const char *path, cs_check_report_t *r,
                      cs_trace_header_t *h, int *partial)
{
  char why[512] = "";
  int rc = cs_check_file(path, r, why, sizeof(why));
  if (rc == -ENOMEM) {
    cs_cli_error("check", "%s: out of memory", path);
    return CS_EXIT_ABORTED;
  }
  if (rc < 0) {
    for (char *p = why; *p; p++)
      if (*p == '\n' || *p == '\r')
        *p = '?';
    cs_cli_error("check", "%s", why);
    return CS_EXIT_USAGE;
  }
  /* The header again, for the names: the check has read it already. */
  cs_trace_reader_t *rd;
  cs_trace_diag_t d;
  if (cs_trace_reader_open(path, 0, &rd, &d) < 0) {
    cs_trace_strerror(&d, why, sizeof(why));
    cs_cli_error("check", "%s", why);
    cs_check_report_fini(r);
    return CS_EXIT_USAGE;
  }
  *h = *cs_trace_reader_header(rd);
  *partial = cs_cli_partial("check", path, h, cs_trace_reader_records(rd));
  cs_trace_reader_close(rd);
  return 0;
}

int cs__check_path(const char *path, int jsonl, FILE *f)
{
  cs_check_report_t r;
  cs_trace_header_t h;
  int partial = 0;
  int rc = check_load(path, &r, &h, &partial);
  if (rc)
    return rc;
  out_t o = {f, &h, cs__trace_names(), jsonl};
  if (partial && !jsonl && r.n)
    fprintf(f, "note: the trace is INCOMPLETE: the findings below are of "
            "the part that was written\n");
  for (uint64_t i = 0; i < r.n; i++)
    print_finding(&o, &r.f[i], i + 1);
  print_summary(&o, &r, partial);
  int code = r.n ? CS_EXIT_WRONG : CS_EXIT_OK;
  cs_check_report_fini(&r);
  return code;
}

int cs__check_focus(const char *path, uint32_t kind, uint32_t cause, FILE *f)
{
  cs_check_report_t r;
  cs_trace_header_t h;
  int partial = 0;
  int rc = check_load(path, &r, &h, &partial);
  if (rc)
    return rc;
  out_t o = {f, &h, cs__trace_names(), 0};
  uint64_t best = r.n;
  for (uint64_t i = 0; i < r.n; i++) {
    const cs_check_finding_t *x = &r.f[i];
    if (x->kind != kind || (kind == CS_CHECK_RACE && x->cause != cause))
      continue;
    if (best == r.n || (x->bit && !r.f[best].bit))
      best = i;
  }
  rc = best < r.n ? 0 : 1;
  if (best == r.n)
    best = 0;
  if (best < r.n)
    print_finding(&o, &r.f[best], best + 1);
  print_summary(&o, &r, partial);
  cs_check_report_fini(&r);
  return rc;
}

static void usage(FILE *f)
{
  fprintf(f,
          "usage: collsim check TRACE [--format text|jsonl]\n"
          "\n"
          "Finds the ordering defects of a recorded run, whether or not they\n"
          "bit in it: builds the happens-before relation of the run from the\n"
          "trace (program order; a post -> its landing; the notifies a wait\n"
          "needed -> its end; a fence -> later posts), under the weakest\n"
          "memory model (a write lands only by the next fence), and reports\n"
          "races (two accesses to overlapping bytes, one a write, unordered),\n"
          "Set and AtomicAdd mixed on one cell, Eq waits a cell can pass,\n"
          "cells not reset across calls, waits nothing could satisfy and\n"
          "remote loads nothing uses. Each finding names both events, the\n"
          "synchronisation around them, and the edge that would order them.\n"
          "Races at the same positions are folded into one with a count.\n"
          "A race is told in the order the algorithm means (the earlier of\n"
          "its events' positions: phase/round markers, step, events since),\n"
          "never the order the run happened to take. Findings come causes\n"
          "first; one that follows from another (races after a call that\n"
          "left a cell unreset) says \"follows from N\". A fix that asks\n"
          "for a barrier names it and its place (\"its READY barrier of RS\n"
          "t0 j0\"): a built-in's as docs/algorithms.md does; a collective\n"
          "of one's own (--algo ./x.so) is told in the phase and barrier\n"
          "names its registration gives, which the trace keeps.\n"
          "\n"
          "  --format text|jsonl   output (default text)\n"
          "\n"
          "Exit status: 0 no finding, 1 findings, 2 bad trace or usage,\n"
          "3 out of memory.\n");
}

int cs_cmd_check(int argc, char **argv)
{
  static const struct option lo[] = {{"format", required_argument, 0, 'f'},
                                     {"help", no_argument, 0, 'h'},
                                     {0, 0, 0, 0}};
  int jsonl = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return CS_EXIT_OK;
    }
    if (c == 'f' && (!strcmp(optarg, "text") || !strcmp(optarg, "jsonl"))) {
      jsonl = !strcmp(optarg, "jsonl");
      continue;
    }
    if (c == 'f')
      cs_cli_error("check", "--format '%s' is not accepted: expected text or "
                   "jsonl", optarg);
    else
      cs_cli_bad_option("check");
    return CS_EXIT_USAGE;
  }
  if (optind + 1 != argc) {
    cs_cli_error("check", optind == argc ? "expected one TRACE"
                                         : "expected one TRACE, got more");
    return CS_EXIT_USAGE;
  }
  return cs__check_path(argv[optind], jsonl, stdout);
}
