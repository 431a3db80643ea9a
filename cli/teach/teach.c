/*
 * teach.c - `collsim teach`: parses the options and picks the lesson. On a
 * terminal (stdout and stdin) it hands the run to the interactive lesson
 * (teach_ui.c: the learner schedules the live engine; --lesson and the
 * break-it --level table here; a collective of one's own --algo ./x.so
 * too, drawn from its slots). Otherwise, or with --plain, --step or
 * --schedule, it prints the ring allreduce explained from its own
 * transfers: runs a real, verified ring allreduce with tracing on, then
 * replays what the trace says moved: after every reduce-scatter and
 * all-gather round, which segment each rank just wrote and whose inputs it
 * now holds, in the [1+2+3] notation of collectives/ring.c (a left fold in
 * the order the ranks were folded in), with the bytes read from the left
 * neighbour, and the total against 2(N-1)/N*S. Nothing is drawn from the
 * formulas alone: the contents are tracked record by record (remote load
 * from the left, store). Runs through the shared run (cli/collsim/run.h) with a
 * temporary trace. A push algorithm's printed lesson (teach_push) is its
 * run, a table of what every rank moved per round, and every rank's window
 * at the end by the terminal lesson's tracking replayed over the trace.
 * Called from cli/collsim/main.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/bugs.h"
#include "../../collectives/geometry.h"
#include "../../sim/trace/check.h"
#include "../../sim/trace/read.h"
#include "../collsim/cli.h"
#include "teach_levels.h"
#include "../collsim/temp.h"
#include "../../run/coll.h"
#include "../collsim/run.h"
#include "teach_model.h"
#include "teach_ui.h"

static const char teach_help[] =
    "usage: collsim teach [--algo NAME] [--ranks N] [--count C]\n"
    "                     [--dtype fp32|fp16|bf16] [--bug NAME] [--memory-model M]\n"
    "                     [--lesson | --level L] [--trace FILE]\n"
    "                     [--plain [--step] [--schedule S]]\n"
    "       collsim teach --algo ./X.so [--ranks N] [--count C] [--dtype D]\n"
    "\n"
    "Teaches the allreduce of PR #2161 on the live engine. On a terminal it\n"
    "is an interactive lesson: the run is controlled and you are its\n"
    "scheduler. Every step shows each rank's window as segments with whose\n"
    "inputs they hold (s2=[3+0]: rank 3's elements op rank 0's, in that\n"
    "order), or their values; the tile; the signal cells and what the next\n"
    "wait needs; the phase, round and subchunk (RS t1 j0); the ring with the\n"
    "reads in progress; bytes read against 2(N-1)/N*S; the last events; a\n"
    "status line: which barrier a waiting rank waits at, for whose notify.\n"
    "Keys: Enter step, 0-9 run that rank, r to the end of the round, n to\n"
    "the next barrier, d data steps (pick only the loads or puts between ranks; the\n"
    "rest runs by itself), b back one step, B back one round, v values,\n"
    "t the last events as a space-time strip (a lane per rank: who loaded\n"
    "from whom, who notified whom), ? help, q quit. The ring stops at the\n"
    "end of the reduce-scatter and of the all-gather to add up the bytes\n"
    "each rank read: (N-1)/N*S, then 2(N-1)/N*S.\n"
    "Branches: stepping back (b, B, j 1-9) from the end of a run keeps that\n"
    "run as branch A; take another order to the end and c compares the two\n"
    "side by side: both outcomes, the step where the orders diverge, where\n"
    "the events that differ there (and a failed run's story) ran in each,\n"
    "both event lists from that step, and which elements differ at the end.\n"
    "\n"
    "With --plain, or when stdout is not a terminal, it prints the ring's\n"
    "lesson instead: the segment table, a verified run, then what the\n"
    "recorded transfers did round by round and the bytes against 2(N-1)/N*S.\n"
    "A push algorithm (ring-push, host-push, ring-bidir, ibing) prints its\n"
    "run, the bytes every rank put and the notifies it sent per round, and\n"
    "every rank's window at the end as the terminal lesson draws it.\n"
    "\n"
    "  --algo A         a built-in algorithm (default ring):\n"
    "@ALGOS@\n"
    "                   With --plain, ring and the push algorithms (those whose\n"
    "                   transfers are puts) print their lesson; the others have the\n"
    "                   terminal lesson only. ibing takes 2 ranks. The push\n"
    "                   algorithms' puts land in the peer's window as you step them\n"
    "                   (d: only the puts); host-push's and ring-bidir's adding\n"
    "                   puts fold into what is there ([2+1]), ibing's into the data\n"
    "                   slot drawn under its result slot (data:); ring-bidir's\n"
    "                   parts are half-chunks, h2q going right, h2q+1 left\n"
    "  --ranks N        2..8 (default 4); the screen needs 80x24 up to 4\n"
    "                   ranks, 120x40 above\n"
    "  --count C        elements per rank (default 10: ragged segments)\n"
    "  --dtype D        fp32 (default), fp16 or bf16 (16-element aligned\n"
    "                   segments, some of them empty)\n"
    "  --bug NAME       run a known defect (collsim run --list-bugs) and try\n"
    "                   to make it fail by the order you choose\n"
    "  --memory-model M sc (default), fifo, relaxed or a2a3: posted ops land when\n"
    "                   you pick the rank's DMA engine\n"
    "  --level L        break it, a campaign of six levels (each opens with\n"
    "                   its story): 1 ring-no-ready-barrier, 2 no-fence-\n"
    "                   before-notify (relaxed), 3 mesh-no-chunk-barrier,\n"
    "                   4 wait-eq, 5 drain-no-ddr-fence (a2a3), 6 host-\n"
    "                   push-no-tail-drain (a2a3); 5 and 6 are upstream\n"
    "                   compiler bugs met on silicon (PTOAS #744, #872);\n"
    "                   choose an order that makes the run fail (S: show\n"
    "                   me one); the end screen names the edge the level\n"
    "                   removed, tells collsim shrink's story of the\n"
    "                   failed run (j 1-9: back to its events), where the\n"
    "                   defect was met upstream and the next level. A\n"
    "                   level sets its own world: not with --algo, --ranks,\n"
    "                   --count, --dtype, --bug, --memory-model, --lesson\n"
    "  --lesson         (ring) a lesson to finish, graded: for every round,\n"
    "                   however you step, predict which segment a rank\n"
    "                   will have written, with whose inputs (a-c, or\n"
    "                   typed: '3 1+2+3', '-'), graded once that rank ended\n"
    "                   the round; when rank 0 waits, which barrier and\n"
    "                   what breaks without it ('1a', with the level that\n"
    "                   breaks it); after the reduce-scatter, the whole\n"
    "                   run's cost in bytes (a-c, or typed). The end shows\n"
    "                   the score. Esc skips, ? and q\n"
    "                   work in the answer box\n"
    "  --trace FILE     keep the trace of the (last) run\n"
    "  --plain          the printed lesson, even on a terminal\n"
    "  --step           the printed lesson, waiting for Enter before each round\n"
    "  --schedule S     the printed lesson, run in controlled mode (collsim\n"
    "                   run --help; all but replay:FILE)\n"
    "  --algo ./X.so    a collective of your own (see collsim run --help): on\n"
    "                   a terminal played like the built-ins (every key but\n"
    "                   the lessons' and levels'); with the teach facts of\n"
    "                   its registration (a part letter, its parts, ...:\n"
    "                   collsim-api(3)) drawn and, with --plain, printed as\n"
    "                   a built-in of those facts is (a pull ring: the\n"
    "                   ring's lesson, so one part per rank); without them\n"
    "                   each rank's window drawn from its slots (name=first\n"
    "                   elements; the signal slot's cells as integers), and\n"
    "                   with --plain or a pipe the run, then a plain table\n"
    "                   of what every rank read from and wrote to its peers\n"
    "                   in each phase and round it marked (cs_mark); --bug,\n"
    "                   --lesson and --level are refused with it\n";

enum { MAXR = 8 };

typedef struct seq_list {
  uint8_t n;
  uint8_t r[MAXR]; /* ranks folded in, in order */
} seq_list_t;

static void show(char *buf, size_t cap, const seq_list_t *l)
{
  size_t o = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < l->n && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%u", i ? "+" : "", l->r[i]);
  snprintf(buf + o, cap > o ? cap - o : 0, "]");
}

/* Where segment i begins, B(i), by the registration's teach facts
 * (tm_facts: the ring's, or a plug-in's pull ring). */
static uint64_t seg_lo(const cs_collective_t *f, const cs_coll_cfg_t *g,
                       uint64_t i)
{
  return f->part_lo(g, i);
}

/* Segment of element e (largest non-empty k with B(k) <= e). */
static uint32_t seg_of(uint64_t e, const cs_collective_t *f,
                       const cs_coll_cfg_t *g)
{
  uint32_t k = 0;
  for (uint32_t i = 0; i < g->nranks; i++)
    if (seg_lo(f, g, i) <= e && seg_lo(f, g, i + 1) > seg_lo(f, g, i))
      k = i;
  return k;
}

enum { OPT_PLAIN = 256, OPT_ALGO, OPT_BUG, OPT_TRACE, OPT_LEVEL, OPT_LESSON,
       OPT_SHAPE };


/* Options a break-it level sets itself (G_*: which ones were given). */
enum { G_ALGO = 1, G_RANKS = 2, G_COUNT = 4, G_DTYPE = 8, G_BUG = 16,
       G_MODEL = 32 };

/* Applies level v (1-based) to o; refuses the options it sets itself
 * (given: G_* bits) in one line. Returns 0 or -1. */
static int set_level(uint32_t v, unsigned given, run_opts_t *o,
                     const cs_teach_level_t **goal)
{
  static const char *const names[] = {"--algo", "--ranks", "--count",
                                      "--dtype", "--bug", "--memory-model"};
  const teach_level_t *l = tv_level(v);
  for (int i = 0; i < 6; i++)
    if (given & (1u << i)) {
      cs_cli_error("teach", "--level %u sets its own world (%s, %u ranks, "
                   "%llu x fp32, --bug %s, --memory-model %s): %s is not "
                   "accepted with it", v, l->algo, l->nranks,
                   (unsigned long long)l->count, l->bug,
                   cs_mm_name(l->model), names[i]);
      return -1;
    }
  o->cfg.bug = (uint32_t)cs_bug_parse(l->bug);
  o->cfg.algo = (cs_algo_t)cs_algo_parse(l->algo);
  o->cfg.nranks = l->nranks;
  o->cfg.count = l->count;
  o->sched.model = l->model;
  static cs_teach_level_t chosen; /* the campaign's place filled in */
  chosen = l->l;
  chosen.number = v;
  chosen.total = tv_nlevels();
  chosen.next = v < tv_nlevels() ? tv_level(v + 1)->l.title : NULL;
  *goal = &chosen;
  return 0;
}

/* One option. Returns 0, 1 after --help, -1 on bad usage (printed).
 * *level: --level's number; *given: G_* of the options given. */
/* Whether built-in algorithm o's printed lesson is refused: one of the
 * ring's, or a push algorithm's, which replays a trace of the sc model
 * (teach_push) all at once. */
static int plain_refuses(const run_opts_t *o, int step)
{
  const cs_collective_t *a = tm_facts(o);
  int push = (a->teach_flags & CS_COLL_TEACH_PUSH) != 0;
  if (push && (step || o->sched.model != CS_MM_SC)) {
    cs_cli_error("teach", "--%s is not accepted with --algo %s --plain: its "
                 "printed lesson is one table and the windows at the end, "
                 "of an sc run", step ? "step" : "memory-model", a->name);
    return -1;
  }
  if (!(a->teach_flags & CS_COLL_TEACH_PULL_RING) && !push) {
    cs_cli_error("teach", "--algo %s: the plain lesson is the ring's; run it "
                 "on a terminal without --plain", a->name);
    return -1;
  }
  cs_coll_cfg_t g = tm_cfg(o);
  uint64_t parts = push ? o->cfg.nranks : a->parts(&g);
  if (parts != o->cfg.nranks) {
    cs_cli_error("teach", "--algo %s: the plain lesson is the ring's, one "
                 "segment per rank, and its parts are %llu for %u ranks; run "
                 "it on a terminal without --plain", a->name,
                 (unsigned long long)parts, o->cfg.nranks);
    return -1;
  }
  return 0;
}

static int opt(int c, const char *arg, run_opts_t *o, int *step, int *plain,
               uint32_t *level, unsigned *given, int *lesson)
{
  int v;
  *given |= c == 'n' ? G_RANKS : c == 'c' ? G_COUNT : c == 'd' ? G_DTYPE :
            c == OPT_BUG ? G_BUG : c == 'M' ? G_MODEL :
            c == OPT_ALGO ? G_ALGO : 0;
  switch (c) {
  case OPT_SHAPE:
    cs_cli_error("teach", "--shape and --valid are not accepted: the lessons "
                 "are 1-D; the partial-valid rectangle path "
                 "(docs/algorithms.md §3.3) runs with collsim run or explore");
    return -1;
  case 'n': return cs_cli_u32("teach", "--ranks", arg, 2, MAXR, &o->cfg.nranks);
  case 'c': return cs_cli_u64("teach", "--count", arg, 1, 1u << 20, &o->cfg.count);
  case 'd': return cs_cli_dtype("teach", "--dtype", arg, &o->cfg.dtype);
  case 's': *step = 1; return 0;
  case OPT_PLAIN: *plain = 1; return 0;
  case OPT_LEVEL:
    return cs_cli_u32("teach", "--level", arg, 1, tv_nlevels(), level);
  case OPT_LESSON: *lesson = 1; return 0;
  case OPT_TRACE: o->com.trace = arg; return 0;
  case 'S':
    if (!strncmp(arg, "replay:", 7)) {
      cs_cli_error("teach", "--schedule '%s' is not accepted: teach replays "
                   "no trace (collsim replay does); expected random:SEED, "
                   "pct:SEED:DEPTH[:STEPS], latest, interactive or "
                   "deviate:LIST", arg);
      return -1;
    }
    if (cs_sched_parse(arg, &o->sched, NULL) < 0) {
      cs_cli_schedule_error("teach", arg);
      return -1;
    }
    o->schedule_str = arg;
    return 0;
  case 'M': return cs_cli_mm("teach", "--memory-model", arg, &o->sched.model);
  case OPT_ALGO:
    if (cs_coll_is_path(arg))
      return cs_run_load_algo(o, arg) < 0 ? -1 : 0;
    if ((v = cs_algo_parse(arg)) < 0 || !cs_algo_desc((uint32_t)v)->teach) {
      char names[256];
      cs_algo_names(names, sizeof(names), ", or a path to a shared object");
      cs_cli_error("teach", "--algo '%s' is not accepted: expected %s", arg,
                   names);
      return -1;
    }
    o->cfg.algo = (cs_algo_t)v;
    return 0;
  case OPT_BUG:
    if ((v = cs_bug_parse(arg)) < 0) {
      cs_cli_error("teach", "--bug '%s' is not accepted: see 'collsim run "
                   "--list-bugs'", arg);
      return -1;
    }
    o->cfg.bug = (uint32_t)v;
    return 0;
  case 'h': cs_cli_help(teach_help, 19); return 1;
  default:
    cs_cli_bad_option("teach");
    return -1;
  }
}

/* A collective of one's own refuses what it cannot run (its refuse hook,
 * its slots) in one line, before the lesson prints or draws anything.
 * Returns 0 or -1. */
static int coll_refuses(const run_opts_t *o)
{
  const cs_ar_cfg_t *c = &o->cfg;
  cs_coll_cfg_t g = {.nranks = c->nranks, .count = c->count,
                     .dtype = c->dtype, .op = c->op,
                     .tile_bytes = c->tile_bytes, .iters = c->iters,
                     .minmax = (cs_minmax_t)c->minmax,
                     .shape_rows = c->shape_rows, .shape_cols = c->shape_cols,
                     .valid_rows = c->valid_rows, .valid_cols = c->valid_cols};
  char why[768];
  if (cs_coll_check_full(o->coll, &g, why, sizeof(why)) < 0) {
    cs_cli_error("teach", "%s", why);
    return -1;
  }
  return 0;
}

/* Returns 0 to go on, 1 after --help, -1 on bad usage (printed). *tui:
 * whether the terminal lesson runs. */
static int parse(int argc, char **argv, run_opts_t *o, int *step, int *tui,
                 const cs_teach_level_t **goal, int *lesson)
{
  static const struct option longopts[] = {
      {"ranks", required_argument, 0, 'n'},
      {"count", required_argument, 0, 'c'},
      {"dtype", required_argument, 0, 'd'},
      {"step", no_argument, 0, 's'},
      {"schedule", required_argument, 0, 'S'},
      {"memory-model", required_argument, 0, 'M'},
      {"plain", no_argument, 0, OPT_PLAIN},
      {"algo", required_argument, 0, OPT_ALGO},
      {"bug", required_argument, 0, OPT_BUG},
      {"trace", required_argument, 0, OPT_TRACE},
      {"level", required_argument, 0, OPT_LEVEL},
      {"lesson", no_argument, 0, OPT_LESSON},
      {"shape", required_argument, 0, OPT_SHAPE},
      {"valid", required_argument, 0, OPT_SHAPE},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int c, rc, plain = 0;
  uint32_t level = 0;
  unsigned given = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1)
    if ((rc = opt(c, optarg, o, step, &plain, &level, &given, lesson)) != 0)
      return rc;
  if (optind < argc) {
    cs_cli_error("teach", "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  /* What the lessons cannot take, refused rather than dropped. */
  if (o->coll && o->cfg.bug) {
    cs_cli_error("teach", "--bug is for the built-in algorithms, not --algo %s",
                 o->coll_path);
    return -1;
  }
  if (o->coll && (level || *lesson)) {
    cs_cli_error("teach", "--%s is not accepted with --algo %s: the "
                 "questions and levels are the built-in ring's and mesh's; "
                 "a collective of your own is played without them",
                 level ? "level" : "lesson", o->coll_path);
    return -1;
  }
  if (level && *lesson) {
    cs_cli_error("teach", "--lesson is not accepted with --level %u: one "
                 "at a time", level);
    return -1;
  }
  if (*lesson && !(tm_facts(o)->teach_flags & CS_COLL_TEACH_PULL_RING)) {
    cs_cli_error("teach", "--lesson is not accepted with --algo %s: its "
                 "questions are about the ring's segments (--algo ring)",
                 cs_algo_name(o->cfg.algo));
    return -1;
  }
  if (level && set_level(level, given, o, goal) < 0)
    return -1;
  if (o->coll && coll_refuses(o) < 0)
    return -1;
  /* the algorithm's own precondition (ring-nb, twophase: a count that is
   * a multiple of the ranks), in one line before any screen */
  int why_rc;
  if (!o->coll && (why_rc = cs_ar_check(&o->cfg)) < 0) {
    char why[256];
    cs_cli_ar_why(&o->cfg, why_rc, why, sizeof(why));
    cs_cli_error("teach", "%s", why);
    return -1;
  }
  /* --step and --schedule belong to the printed lesson. */
  *tui = !plain && !*step && o->sched.strategy == CS_SCHED_FREE &&
         isatty(1) && isatty(0);
  if (!*tui && (*goal || *lesson)) {
    cs_cli_error("teach", "--%s is played on a terminal, without --plain, "
                 "--step or --schedule", *goal ? "level" : "lesson");
    return -1;
  }
  if (!*tui && tm_facts(o) && plain_refuses(o, *step) < 0)
    return -1;
  return cs_cli_mm_scheduled("teach", o->sched.model, *tui ||
                             o->sched.strategy != CS_SCHED_FREE) < 0 ? -1 : 0;
}

enum { PLAIN_COLS = 80 }; /* the printed lesson's lines fit 80 columns */

/* Prints line s wrapped at its blanks into lines of at most PLAIN_COLS
 * columns, the later ones indented by 4; a \001 is a blank that does not
 * break ("2(N-1)/N\001*\001S" stays whole). */
static void wrap_print(const char *s)
{
  int first = 1;
  while (*s) {
    int room = first ? PLAIN_COLS : PLAIN_COLS - 4, len = (int)strlen(s);
    int cut = len;
    if (len > room) {
      for (cut = room; cut > 0 && s[cut] != ' '; cut--)
        ;
      if (cut == 0) /* one word longer than the line */
        for (cut = room; s[cut] && s[cut] != ' '; cut++)
          ;
    }
    printf("%s", first ? "" : "    ");
    for (int i = 0; i < cut; i++)
      putchar(s[i] == '\001' ? ' ' : s[i]);
    putchar('\n');
    s += cut;
    s += strspn(s, " ");
    first = 0;
  }
}

/* Whether the segments of f begin where the built-in ring's do, so that
 * its formula may be printed for them. */
static int ring_split(const cs_collective_t *f, const cs_coll_cfg_t *g)
{
  const cs_collective_t *ring = cs_coll_teach(cs_coll_builtin("ring"));
  if (!ring || f == ring)
    return f == ring;
  for (uint32_t i = 0; i <= g->nranks; i++)
    if (seg_lo(f, g, i) != seg_lo(ring, g, i))
      return 0;
  return 1;
}

/* The segment table before the run. */
static void print_intro(const run_opts_t *ro)
{
  const cs_ar_cfg_t *c = &ro->cfg;
  const cs_collective_t *f = tm_facts(ro);
  cs_coll_cfg_t g = tm_cfg(ro);
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  uint64_t count = c->count;
  printf("Ring allreduce, %u ranks, %llu x %s per rank, sum.\n\n", n,
         (unsigned long long)count, cs_dtype_name(c->dtype));
  char where[160];
  snprintf(where, sizeof where, "where %s's part_lo puts them", f->name);
  printf("Every rank's buffer is cut into %u segments\n(%s).\n"
         "Rank r ends the reduce-scatter owning segment r fully reduced; the\n"
         "all-gather then passes the owned segments around. Every step reads\n"
         "only from the left neighbour (r-1), behind all-to-all READY and\n"
         "READ-COMPLETE barriers.\n\n", n,
         !ring_split(f, &g) ? where
         : es == 2 ? "boundaries rounded up to 16 elements, so some may be empty"
                   : "B(i) = floor(i*count/N)");
  char b[1024];
  size_t o = (size_t)snprintf(b, sizeof(b), "  segment:");
  for (uint32_t k = 0; k < n && o < sizeof(b); k++)
    o += (size_t)snprintf(b + o, sizeof(b) - o, "  s%u=[%llu,%llu)", k,
                          (unsigned long long)seg_lo(f, &g, k),
                          (unsigned long long)seg_lo(f, &g, k + 1));
  wrap_print(b);
  printf("  start:    rank r holds only its own input, [r], in every "
         "segment\n\n");
}

/* Runs the ring, traced into --trace FILE (kept) or else a temporary
 * file, and loads the trace into *t. Returns the run's exit code;
 * *loaded says whether *t holds the trace (then the caller frees it). */
static int run_traced(run_opts_t *o, cs_trace_t *t, int *loaded)
{
  char path[4200], why[512];
  const char *keep = o->com.trace; /* checked by the output rule */
  *loaded = 0;
  if (keep) {
    snprintf(path, sizeof path, "%s", keep);
  } else {
    int fd = cs_cli_temp(path, sizeof path, cs_cli_tmpdir(),
                         "collsim-teach-", "", 0, 0);
    if (fd < 0) {
      cs_cli_error("teach", "cannot create a temporary trace in '%s': %s; "
                   "expected $TMPDIR (or /tmp when it is unset) to name a "
                   "writable directory", cs_cli_tmpdir(), strerror(-fd));
      return CS_EXIT_USAGE;
    }
    close(fd);
    o->com.trace = path;
  }
  printf("The run:\n");
  fflush(stdout);
  /* the run's lines, wrapped to 80 columns (its own are not) */
  FILE *cap = tmpfile();
  int saved = cap ? dup(1) : -1;
  if (saved >= 0)
    dup2(fileno(cap), 1);
  int rc = cs_run_execute(o);
  fflush(stdout);
  if (saved >= 0) {
    dup2(saved, 1);
    close(saved);
    rewind(cap);
    char line[1024];
    while (fgets(line, sizeof(line), cap)) {
      line[strcspn(line, "\n")] = 0;
      if (line[0])
        wrap_print(line);
      else
        putchar('\n');
    }
  }
  if (cap)
    fclose(cap);
  o->com.trace = keep;
  cs_trace_diag_t d;
  *loaded = rc != CS_EXIT_USAGE && cs_trace_load(path, t, &d) == 0;
  if (!*loaded && rc != CS_EXIT_USAGE)
    cs_trace_strerror(&d, why, sizeof(why));
  if (!keep)
    unlink(path);
  if (!*loaded) {
    if (rc != CS_EXIT_USAGE)
      cs_cli_error("teach", "%s", why);
    return rc ? rc : CS_EXIT_ABORTED;
  }
  return rc;
}

/* What the transfers did: per phase (RS, AG), round and rank the segment
 * written with whose inputs it holds, and the bytes read from the left. */
typedef struct teach_table {
  seq_list_t hold[MAXR][MAXR], pending[MAXR];
  char       cell[2][MAXR][MAXR][64]; /* [phase][round][rank] */
  uint64_t   moved[2][MAXR][MAXR];    /* bytes */
} teach_table_t;

/* Tracks, record by record, whose inputs each rank's segments hold. */
static void track(const cs_trace_t *t, const run_opts_t *o, teach_table_t *tb)
{
  const cs_ar_cfg_t *c = &o->cfg;
  const cs_collective_t *f = tm_facts(o);
  cs_coll_cfg_t g = tm_cfg(o);
  uint32_t n = c->nranks, es = cs_dtype_size(c->dtype);
  for (uint32_t r = 0; r < n; r++)
    for (uint32_t k = 0; k < n; k++)
      tb->hold[r][k] = (seq_list_t){1, {(uint8_t)r}};
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (x->phase < 1 || x->phase > 2 || x->round >= MAXR ||
        x->slot != f->in_slot)
      continue;
    int ph = x->phase - 1;
    uint32_t r = x->rank, left = (r + n - 1) % n;
    if (x->kind == CS_EV_LOAD && x->peer == left && x->peer != r && x->valid) {
      tb->pending[r] = tb->hold[left][seg_of(x->elem_off, f, &g)];
      tb->moved[ph][x->round][r] += (uint64_t)x->valid * es;
    } else if (x->kind == CS_EV_STORE && x->valid) {
      uint32_t k = seg_of(x->elem_off, f, &g);
      seq_list_t nl = tb->pending[r];
      if (ph == 0 && nl.n < MAXR) /* reduce-scatter: received op own */
        nl.r[nl.n++] = (uint8_t)r;
      tb->hold[r][k] = nl;
      char s[48];
      show(s, sizeof(s), &nl);
      snprintf(tb->cell[ph][x->round][r], sizeof(tb->cell[0][0][0]), "s%u=%s", k, s);
    }
  }
}

/* "rank0 rank1 ..." column heads of ranks [r0, r1), each `width` wide,
 * then the newline. */
static void print_rank_heads(uint32_t r0, uint32_t r1, int width)
{
  for (uint32_t r = r0; r < r1; r++) {
    char h[16];
    snprintf(h, sizeof(h), "rank%u", r);
    printf("%-*s", r + 1 < r1 ? width : 0, h); /* no blanks at the end */
  }
  printf("\n");
}

/* How many rank columns `w` wide fit 80 columns after a label column
 * `lw` wide (the last column has no blanks after it); at least one. */
static uint32_t ranks_per_block(int lw, int w)
{
  int room = 80 - lw + 2;
  return (uint32_t)(room > w ? room / w : 1);
}

/* The head of the block of ranks [r0, r1) of a table in blocks of `per`
 * ranks: its title ("ranks 3-5:", "rank 7:") where the n ranks make more
 * than one block, then `label` in a column lw wide and the rank heads. */
static void print_block_head(uint32_t r0, uint32_t r1, uint32_t n,
                             uint32_t per, int lw, const char *label, int w)
{
  if (per < n && r1 - r0 == 1)
    printf("\nrank %u:", r0);
  else if (per < n)
    printf("\nranks %u-%u:", r0, r1 - 1);
  printf("\n%-*s", lw, label);
  print_rank_heads(r0, r1, w);
}

/* The rounds of ranks [r0, r1) (--step: after Enter on a terminal). */
static void print_round_rows(const teach_table_t *tb, uint32_t n, uint32_t r0,
                             uint32_t r1, int w, int step)
{
  for (int ph = 0; ph < 2; ph++)
    for (uint32_t round = 0; round + 1 < n; round++) {
      if (step && isatty(0)) {
        printf("  (Enter for the next round)");
        fflush(stdout);
        int ch;
        while ((ch = getchar()) != '\n' && ch != EOF)
          ;
        printf("\033[1A\r%60s\r", "");
      }
      printf("%s t%-4u", ph ? "AG" : "RS", round);
      for (uint32_t r = r0; r < r1; r++)
        printf("%-*s", r + 1 < r1 ? w : 0,
               tb->cell[ph][round][r][0] ? tb->cell[ph][round][r] : "-");
      printf("\n%-8s", "");
      for (uint32_t r = r0; r < r1; r++) {
        char b[32];
        snprintf(b, sizeof(b), "%llu B from r%u",
                 (unsigned long long)tb->moved[ph][round][r], (r + n - 1) % n);
        printf("%-*s", r + 1 < r1 ? w : 0, b);
      }
      printf("\n");
    }
}

/* The table, round by round (--step: after Enter on a terminal). */
static void print_rounds(const teach_table_t *tb, uint32_t n, int step)
{
  /* the columns as wide as their widest cell: 4 ranks fit 80 columns */
  int w = 7;
  for (int ph = 0; ph < 2; ph++)
    for (uint32_t round = 0; round + 1 < n; round++)
      for (uint32_t r = 0; r < n; r++) {
        int l = (int)strlen(tb->cell[ph][round][r]);
        w = l + 2 > w ? l + 2 : w;
        char b[32];
        l = snprintf(b, sizeof(b), "%llu B from r%u",
                     (unsigned long long)tb->moved[ph][round][r], r);
        w = l + 2 > w ? l + 2 : w;
      }
  /* in 80 columns: as many ranks a table as fit, the tables one after
   * another (8 ranks: 0-2, 3-5, 6-7) */
  uint32_t per = ranks_per_block(8, w);
  printf("\nWhat the transfers did (from the trace; '-' = nothing to do, an "
         "empty segment):\n");
  for (uint32_t r0 = 0; r0 < n; r0 += per) {
    uint32_t r1 = r0 + per < n ? r0 + per : n;
    print_block_head(r0, r1, n, per, 8, "round", w);
    print_round_rows(tb, n, r0, r1, w, step);
  }
}

/* The bandwidth cost: what each rank read, against 2(N-1)/N * S. */
static void print_cost(const teach_table_t *tb, const cs_ar_cfg_t *c)
{
  uint32_t n = c->nranks;
  uint64_t s = c->count * cs_dtype_size(c->dtype), ideal = 2 * (n - 1) * s / n;
  char b[1024];
  size_t o = (size_t)snprintf(b, sizeof(b), "Cost: every rank reads "
      "2(N-1)/N\001*\001S bytes from its left neighbour (S = %llu B, N = %u): "
      "2*%u/%u*%llu = %llu B (it nears 2S as N grows). Read here:",
      (unsigned long long)s, n, n - 1, n, (unsigned long long)s,
      (unsigned long long)ideal);
  for (uint32_t r = 0; r < n && o < sizeof(b); r++) {
    uint64_t sum = 0;
    for (int ph = 0; ph < 2; ph++)
      for (uint32_t t = 0; t + 1 < n; t++)
        sum += tb->moved[ph][t][r];
    /* "Read here: r0 60 B" stays on one line */
    o += (size_t)snprintf(b + o, sizeof(b) - o, "%sr%u\001%llu\001B",
                          r ? " " : "\001", r, (unsigned long long)sum);
  }
  if (o < sizeof(b))
    snprintf(b + o, sizeof(b) - o, ".");
  printf("\n");
  wrap_print(b);
}

/* Bytes rank r moved from (loads) and to (puts) its peers in one marked
 * phase and round, and the signals it sent. */
typedef struct user_round {
  uint32_t phase, round;
  uint64_t in[MAXR], out[MAXR]; /* bytes, [rank] */
  uint32_t notifies[MAXR];
} user_round_t;

/* Round k's label: the phase as the run named it with cs_mark ("RS t1"),
 * or a built-in's from its descriptor (names), else "phase.round". */
static void round_label(const cs_trace_t *t, const char *const *names,
                        uint32_t nnames, const user_round_t *u, char *h,
                        size_t cap)
{
  const char *name = cs_trace_phase_name(NULL, &t->hdr, u->phase);
  if (!name && u->phase >= 1 && u->phase <= nnames)
    name = names[u->phase - 1];
  if (name)
    snprintf(h, cap, "%s t%u", name, u->round);
  else
    snprintf(h, cap, "%u.%u", u->phase, u->round);
}

/* The plain view of a collective of one's own: per marked (phase, round)
 * and rank, the remote bytes read and written and the notifies sent. */
static void teach_user_rounds(const cs_trace_t *t, uint32_t n, uint32_t es,
                              const char *const *names, uint32_t nnames)
{
  enum { MAXROUNDS = 64 };
  static user_round_t ur[MAXROUNDS];
  uint32_t nr = 0;
  memset(ur, 0, sizeof(ur));
  for (uint64_t i = 0; i < t->n; i++) {
    const cs_trace_rec_t *x = &t->rec[i];
    if (x->rank >= n || x->peer == x->rank || x->phase == 0)
      continue;
    uint32_t k = 0;
    while (k < nr && (ur[k].phase != x->phase || ur[k].round != x->round))
      k++;
    if (k == nr) {
      if (nr == MAXROUNDS)
        continue;
      ur[nr++] = (user_round_t){.phase = x->phase, .round = x->round};
    }
    if (x->kind == CS_EV_LOAD)
      ur[k].in[x->rank] += (uint64_t)x->valid * es;
    else if (x->kind == CS_EV_PUT)
      ur[k].out[x->rank] += (uint64_t)x->valid * es;
    else if (x->kind == CS_EV_NOTIFY)
      ur[k].notifies[x->rank]++;
  }
  int w = 7, lw = 12; /* the columns as wide as their widest cell */
  for (uint32_t k = 0; k < nr; k++) {
    char h[24];
    round_label(t, names, nnames, &ur[k], h, sizeof(h));
    lw = (int)strlen(h) + 1 > lw ? (int)strlen(h) + 1 : lw;
    for (uint32_t r = 0; r < n; r++) {
      char c[64];
      int l = snprintf(c, sizeof(c), "r %llu w %llu n %u",
                       (unsigned long long)ur[k].in[r],
                       (unsigned long long)ur[k].out[r], ur[k].notifies[r]);
      w = l + 2 > w ? l + 2 : w;
    }
  }
  printf("\nWhat the ranks moved, per phase and round they marked (remote "
         "bytes read /\nwritten, notifies sent):\n");
  /* in 80 columns: as many ranks a table as fit, one after another */
  uint32_t per = ranks_per_block(lw, w);
  for (uint32_t r0 = 0; r0 < n; r0 += per) {
    uint32_t r1 = r0 + per < n ? r0 + per : n;
    print_block_head(r0, r1, n, per, lw, "phase.round", w);
    for (uint32_t k = 0; k < nr; k++) {
      char h[24];
      round_label(t, names, nnames, &ur[k], h, sizeof(h));
      printf("%-*s", lw, h);
      for (uint32_t r = r0; r < r1; r++) {
        char c[40];
        snprintf(c, sizeof(c), "r %llu w %llu n %u",
                 (unsigned long long)ur[k].in[r],
                 (unsigned long long)ur[k].out[r], ur[k].notifies[r]);
        printf("%-*s", r + 1 < r1 ? w : 0, c);
      }
      printf("\n");
    }
  }
}

/* teach --algo A --plain of a push algorithm (ring-push, host-push,
 * ring-bidir, ibing): the run, what every rank moved per phase and round,
 * then every rank's window at the end, part by part, whose inputs it holds
 * in fold order: the terminal lesson's tracking replayed over the run's
 * trace, so the column matches its end screen. */
static int teach_push(run_opts_t *o)
{
  const cs_collective_t *a = tm_facts(o);
  uint32_t n = o->cfg.nranks, es = cs_dtype_size(o->cfg.dtype);
  char b[512];
  snprintf(b, sizeof(b), "%s allreduce: %s; %u ranks, %llu x %s per rank, "
           "sum.", a->name, a->what ? a->what : "a collective of your own", n,
           (unsigned long long)o->cfg.count,
           cs_dtype_name(o->cfg.dtype));
  wrap_print(b);
  if (a->legend)
    wrap_print(a->legend);
  printf("\n");
  cs_trace_t tr;
  int loaded, rc = run_traced(o, &tr, &loaded);
  if (!loaded)
    return rc;
  const char *const *phases;
  uint32_t nphases = tm_phase_names(o, &phases);
  teach_user_rounds(&tr, n, es, phases, nphases);
  static teach_session_t s;
  memset(&s, 0, sizeof(s));
  s.o = o;
  s.n = n;
  s.es = es;
  s.count = o->cfg.count;
  tm_reset(&s);
  for (uint64_t i = 0; i < tr.n; i++)
    tm_replay(&s, &tr.rec[i], i);
  printf("\nAt the end, every rank's %s (part=[whose inputs, in fold "
         "order]):\n\n", s.st.out_slot ? "result slot out" : "window");
  for (uint32_t r = 0; r < n; r++) {
    char w[1024], cell[TM_MAXR * 8 + 8];
    size_t at = (size_t)snprintf(w, sizeof(w), "r%u  ", r);
    for (uint32_t k = 0; k < tm_nparts(&s) && at < sizeof(w); k++) {
      const tm_prov_t *p;
      int whole = tm_part_prov(&s, r, k, &p);
      tm_prov_str(cell, sizeof(cell), p);
      if (tm_part_lo(&s, k) == tm_part_lo(&s, k + 1)) /* empty, as drawn */
        snprintf(cell, sizeof(cell), "-"), whole = 1;
      at += (size_t)snprintf(w + at, sizeof(w) - at, "%s%c%u%c%s",
                             k ? " " : "", a->part_letter, k,
                             whole ? '=' : '~', cell);
    }
    wrap_print(w);
  }
  free(s.round_step);
  cs_trace_free(&tr);
  return rc;
}

/* teach --algo ./x.so --plain (or piped): the run, then the plain table. */
static int teach_user(run_opts_t *o)
{
  char b[512];
  snprintf(b, sizeof(b), "%s: %s; %u ranks, %llu x %s per rank.",
           o->coll->name, o->coll->what ? o->coll->what
                                        : "a collective of your own",
           o->cfg.nranks, (unsigned long long)o->cfg.count,
           cs_dtype_name(o->cfg.dtype));
  wrap_print(b);
  printf("\n");
  cs_trace_t t;
  int loaded, rc = run_traced(o, &t, &loaded);
  if (loaded) {
    teach_user_rounds(&t, o->cfg.nranks, cs_dtype_size(o->cfg.dtype), NULL, 0);
    cs_trace_free(&t);
  }
  cs_coll_close(o->coll_handle);
  return rc;
}

/* The ring's printed lesson (a pull ring's: the ring, or a plug-in that
 * says it is one): the segments, the run, the table, the cost. */
static int teach_ring(run_opts_t *o, int step)
{
  int loaded;
  print_intro(o);
  cs_trace_t t;
  int rc = run_traced(o, &t, &loaded);
  if (!loaded)
    return rc;
  static teach_table_t tb;
  track(&t, o, &tb);
  cs_trace_free(&t);
  print_rounds(&tb, o->cfg.nranks, step);
  printf("\nAfter the last reduce-scatter round rank r owns segment r with "
         "all %u\ncontributions; after the all-gather every rank holds every "
         "segment,\nbit-identical on all ranks.\n", o->cfg.nranks);
  print_cost(&tb, &o->cfg);
  return rc;
}

int cs_cmd_teach(int argc, char **argv)
{
  run_opts_t o;
  memset(&o, 0, sizeof(o));
  o.cmd = "teach";
  o.cfg = (cs_ar_cfg_t){.algo = CS_DEFAULT_ALGO, .dtype = CS_FP32, .op = CS_SUM,
                        .nranks = 4, .count = 10, .tile_bytes = CS_TILE_BYTES,
                        .iters = 1};
  o.seed = 1;
  o.fill = CS_FILL_ARANGE;
  int step = 0, tui = 0;
  const cs_teach_level_t *goal = NULL;
  int lesson = 0;
  int rc = parse(argc, argv, &o, &step, &tui, &goal, &lesson);
  /* The output rule before any lesson starts: never the --algo object. */
  if (rc == 0 && o.com.trace &&
      cs_cli_output_ok("teach", "--trace", o.com.trace,
                       &(cs_cli_input_t){"--algo", o.coll_path, 0},
                       o.coll ? 1 : 0, 0) < 0)
    rc = -1;
  if (rc != 0) {
    cs_coll_close(o.coll_handle);
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;
  }
  if (o.coll && tui) { /* played like the built-ins: drawn from its teach
                          facts, or else from its slots */
    rc = cs__teach_tui(&o, NULL, 0);
    cs_coll_close(o.coll_handle);
    return rc;
  }
  if (!tm_facts(&o))
    return teach_user(&o);
  if (tui)
    return cs__teach_tui(&o, goal, lesson);
  if (tm_facts(&o)->teach_flags & CS_COLL_TEACH_PUSH) {
    rc = teach_push(&o);
    cs_coll_close(o.coll_handle);
    return rc;
  }
  rc = teach_ring(&o, step);
  cs_coll_close(o.coll_handle);
  return rc;
}
