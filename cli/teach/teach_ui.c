/*
 * teach_ui.c - the terminal lesson of `collsim teach`: curses up and down,
 * the keys, and the picker that the live engine calls at every step (the
 * callback strategy of sim/sched.h). The learner's choices are the run's
 * schedule; stepping back re-runs the schedule's prefix silently and asks
 * again where it stops. The run's own messages (verification, failures,
 * the check) go to a log while the screen is up and are shown at the end.
 *
 * Owns the terminal while the lesson runs: it is restored on every path
 * (q, Ctrl-C, SIGTERM/SIGHUP, a failed run, a rank crash). Does not own
 * the tracking (teach_model.c) or the layout (teach_draw.c). Called by
 * teach.c when stdout is a terminal.
 */
#define _GNU_SOURCE
#include "teach_ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/registry.h"
#include "teach_branch.h"
#include "teach_draw.h"
#include "teach_lesson.h"
#include "teach_story.h"
#include "../collsim/temp.h"

static volatile sig_atomic_t stop_signal; /* one came outside a launch */

static void on_stop(int sig)
{
  stop_signal = sig;
}

/* SIGINT, SIGTERM or SIGHUP: pending (a launch blocks them) or caught
 * between runs; the lesson then ends through its normal path. */
static int signalled(void)
{
  sigset_t pend;
  sigpending(&pend);
  return stop_signal || sigismember(&pend, SIGINT) ||
         sigismember(&pend, SIGTERM) || sigismember(&pend, SIGHUP);
}

/* A pick during the run to the end of the round: the first enabled actor
 * of a rank still in that round (never the next marker of a rank that
 * reached it: its DMA engine lands the round's ops first), else actor 0. */
static int64_t auto_pick(const teach_session_t *t, const cs_sched_view_t *v)
{
  for (uint32_t i = 0; i < v->nenabled; i++) {
    uint32_t r = v->en[i].rank;
    if (v->en[i].op >= 0 || tm_rank_over(t, v, r))
      continue;
    if (v->en[i].rec.kind == CS_EV_MARK && r < TM_MAXR &&
        t->st.marks[r] == t->round_from[r])
      continue;
    return i;
  }
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].op >= 0)
      return i;
  return 0;
}

/* Whether rank r has come to a barrier since the run to it started: it
 * ran something other than a wait, and now waits (or is done). */
static int arrived(const teach_session_t *t, const cs_sched_view_t *v, uint32_t r)
{
  const cs_sched_rank_view_t *rv = &v->rank[r];
  return rv->state == CS_VIEW_DONE ||
         (rv->state == CS_VIEW_POSTED && rv->rec.kind == CS_EV_WAIT &&
          t->bar_moved[r]);
}

/* A pick during the run to the next barrier: the first enabled actor of a
 * rank that has not arrived (or a DMA engine); -1 when every rank has. */
static int64_t barrier_pick(const teach_session_t *t, const cs_sched_view_t *v)
{
  uint32_t r;
  for (r = 0; r < t->n && arrived(t, v, r); r++)
    ;
  if (r == t->n)
    return -1;
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].op >= 0 || !arrived(t, v, v->en[i].rank))
      return i;
  return -1;
}

/* A digit names a rank: its posted event runs if it can; if not, the
 * status line says why (-2: stay). */
static int64_t rank_key(teach_session_t *t, const cs_sched_view_t *v,
                        uint32_t r)
{
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].rank == r && v->en[i].op < 0)
      return i;
  t->note_key = (int)r + 1;
  return -2;
}

/* A pick in the data-step mode: the first enabled actor that moves no
 * data, passing a phase marker only when no other can run (so the ranks
 * meet at round boundaries, where --lesson asks); -1 when the learner is
 * to pick (every enabled rank loads from another, or a question is due). */
static int64_t data_pick(const teach_session_t *t, const cs_sched_view_t *v)
{
  int64_t mark = -1;
  for (uint32_t i = 0; i < v->nenabled; i++) {
    if (tm_is_data(t, v, i))
      continue;
    if (v->en[i].op >= 0 || v->en[i].rec.kind != CS_EV_MARK)
      return i;
    if (mark < 0)
      mark = i;
  }
  uint32_t ph, rd;
  if (mark >= 0 && tl_boundary(t, v, &ph, &rd) >= 0)
    return -1;
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (tm_is_data(t, v, i))
      return -1; /* a load is the learner's: before any marker */
  return mark;
}

/* Where b goes back to from step `step` (> 0): one event, or in the
 * data-step mode the learner's previous pick (the events between ran by
 * themselves and would run again to the same place). */
static uint64_t back_step(const teach_session_t *t, uint64_t step)
{
  if (!t->data_mode)
    return step - 1;
  while (step > 0 && !t->asked[--step])
    ;
  return step;
}

/* Where B goes back to from `step`: the start of its round. In the
 * data-step mode a re-run from a round's start runs by itself to the
 * round's first pick: from there (no pick of the learner's in between)
 * B goes on to the start of the round before, else it would stay. */
static uint64_t round_back(const teach_session_t *t, uint64_t step)
{
  uint64_t to = tm_round_start(t, step);
  for (;;) {
    int picked = 0;
    for (uint64_t s = to; s < step && s < t->nchoice && !picked; s++)
      picked = t->asked[s];
    if (!t->data_mode || picked || !to)
      return to;
    to = tm_round_start(t, to);
  }
}

/* Step back to `step`: the picker stops the run, the driver re-runs. */
static int64_t go_back(teach_session_t *t, uint64_t step)
{
  t->target = step;
  t->restart = 1;
  return -1;
}

/* One key at a paused step: an actor index to run, -1 to stop the run
 * (quit or back), -2 to stay. */
static int64_t on_key(teach_session_t *t, const cs_sched_view_t *v, int ch,
                      int *help)
{
  int k = (int)v->nenabled;
  if (*help && ch != ERR && ch != KEY_RESIZE) {
    *help = 0;
    return -2;
  }
  switch (ch) {
  case 'q': case 'Q': case 3: t->quit = 1; return -1;
  case '?': case 'h': *help = 1; return -2;
  case 'v': t->values = !t->values; return -2;
  case 't': t->strip = !t->strip; return -2;
  case KEY_UP: case 'k': t->cursor = t->cursor > 0 ? t->cursor - 1 : k - 1; return -2;
  case KEY_DOWN: case 'j': t->cursor = (t->cursor + 1) % k; return -2;
  case ' ': case '\n': case '\r': case 's': case KEY_ENTER: case KEY_RIGHT:
    t->by_round = 0;
    return t->cursor < k ? t->cursor : 0;
  case 'r':
    t->by_round = 1;
    tm_round_begin(t, v);
    t->auto_round = 1;
    return auto_pick(t, v);
  case 'n':
    t->by_round = 0;
    memset(t->bar_moved, 0, sizeof(t->bar_moved));
    t->auto_barrier = 1;
    return 0 <= barrier_pick(t, v) ? barrier_pick(t, v) : -2;
  case 'S':
    if (!t->o->cfg.bug)
      return -2;
    t->show_me = 1;
    return go_back(t, v->step);
  case 'd':
    t->by_round = 0;
    t->data_mode = !t->data_mode;
    return t->data_mode ? (data_pick(t, v) >= 0 ? data_pick(t, v) : -2) : -2;
  case 'b': case KEY_LEFT:
    t->shown = 0;
    return v->step ? go_back(t, back_step(t, v->step)) : -2;
  case 'B':
    t->shown = 0;
    return v->step ? go_back(t, round_back(t, v->step)) : -2;
  default:
    if (ch >= '0' && ch <= '9' && !(t->by_round = 0))
      return rank_key(t, v, (uint32_t)(ch - '0'));
    return -2;
  }
}

/* The view's keys while an answer box is open (no answer holds a t or
 * a v): t the strip, v the values. Returns 1 when ch was one. */
static int view_key(teach_session_t *t, int ch)
{
  if (ch == 't' || ch == 'T')
    t->strip = !t->strip;
  else if (ch == 'v' || ch == 'V')
    t->values = !t->values;
  else
    return 0;
  return 1;
}

/* Whether every rank is at a marker (or done): the ranks meet at a round
 * boundary. */
static int at_boundary(const teach_session_t *t, const cs_sched_view_t *v)
{
  for (uint32_t r = 0; r < t->n; r++)
    if (v->rank[r].state != CS_VIEW_DONE &&
        (v->rank[r].state != CS_VIEW_POSTED ||
         v->rank[r].rec.kind != CS_EV_MARK))
      return 0;
  return 1;
}

/* --lesson when a round's question is due: the question, typed in.
 * Returns the first pick of the round once answered when the learner runs
 * rounds (r) or data steps, -1 to quit, -2 to go on picking (skipped, or
 * answered while stepping event by event). */
static int64_t question(teach_session_t *t, const cs_sched_view_t *v, int r,
                        uint32_t ph, uint32_t rd)
{
  int help = 0;
  tl_open(t, r, ph, rd, v->step);
  t->q_typing = 1;
  for (;;) {
    td_draw(t, v, help);
    int ch = getch();
    if (signalled() || ch == 3 || ch == 'q' || ch == 'Q') {
      t->quit = 1; /* q is no answer's: the footer's quit works here too */
      return -1;
    }
    if (ch == ERR || ch == KEY_RESIZE)
      continue;
    if (help || ch == '?') { /* the help overlay, closed by any key */
      help = !help;
      continue;
    }
    if (view_key(t, ch))
      continue;
    int k = tl_key(t, ch);
    if (k < 0) {
      t->q_typing = 0;
      return -2;
    }
    if (k > 0 && t->data_mode && data_pick(t, v) >= 0) {
      t->q_typing = 0;
      tm_round_begin(t, v); /* its end is when the answer is checked */
      return data_pick(t, v); /* the round runs by data steps */
    }
    if (k > 0 && t->by_round && at_boundary(t, v)) {
      t->q_typing = 0; /* r brought it here: the round runs */
      tm_round_begin(t, v);
      t->auto_round = 1;
      return auto_pick(t, v);
    }
    if (k > 0) {
      t->q_typing = 0;
      return -2;
    }
  }
}

/* A screen over the lesson until a key (q quits: -1). */
static int show_over(teach_session_t *t, const cs_sched_view_t *v, int which)
{
  t->overlay = which;
  for (;;) {
    td_draw(t, v, 0);
    int ch = getch();
    if (signalled() || ch == 'q' || ch == 'Q' || ch == 3) {
      t->overlay = TM_OV_NONE;
      t->quit = 1;
      return -1;
    }
    if (ch != ERR && ch != KEY_RESIZE)
      break;
  }
  t->overlay = TM_OV_NONE;
  return 0;
}

/* Whether the ring's milestones are shown: the ring without a mutation
 * (a level's or --bug's numbers are not the lesson's). */
static int milestones(const teach_session_t *t)
{
  return tm_flag(t, CS_COLL_TEACH_PULL_RING) && !t->o->cfg.bug;
}

/* --lesson's other questions: the box open (t->qq) until answered (the
 * reveal then stays on the screen until the learner's next pick, costing
 * no key of its own), skipped with Esc; ? and q work in it. Returns -1
 * to quit, 1 answered, 0 skipped. */
static int qq_box(teach_session_t *t, const cs_sched_view_t *v)
{
  int help = 0;
  for (;;) {
    td_draw(t, v, help);
    int ch = getch();
    if (signalled() || ch == 3 || ch == 'q' || ch == 'Q') {
      t->qq = TL_QQ_NONE;
      t->quit = 1;
      return -1;
    }
    if (ch == ERR || ch == KEY_RESIZE)
      continue;
    if (help || ch == '?') {
      help = !help;
      continue;
    }
    if (view_key(t, ch))
      continue;
    int k = tl_qq_key(t, ch);
    if (k < 0) {
      t->reveal[0][0] = t->reveal[1][0] = 0;
      return 0;
    }
    if (k > 0)
      break;
  }
  t->qq = TL_QQ_NONE;
  return 1;
}

/* The end of the reduce-scatter, once a run reaches it: what the learner
 * watched and the cost it adds up to; --lesson then asks the cost of the
 * whole run. Returns -1 to quit, 1 when a question was answered. */
static int milestone(teach_session_t *t, const cs_sched_view_t *v)
{
  if (!milestones(t) || t->ms_step[0] || !tm_phase_over(t, v, 1))
    return 0;
  t->ms_step[0] = v->step + 1;
  if (show_over(t, v, TM_OV_RS) < 0)
    return -1;
  if (!t->lesson || t->cost_grade)
    return 0;
  tl_open_cost(t, v->step);
  return qq_box(t, v);
}

/* --lesson's stops in a live run: its goal first; then, when rank 0 waits
 * at a barrier not asked about yet, which one and what breaks without
 * it. Returns -1 to quit, 1 when a question was answered. */
static int lesson_stops(teach_session_t *t, const cs_sched_view_t *v)
{
  if (t->level && !t->intro_shown) { /* a level opens with its story */
    t->intro_shown = 1;
    if (show_over(t, v, TM_OV_LEVEL) < 0)
      return -1;
  }
  if (!t->lesson)
    return 0;
  if (!t->goal_shown) {
    t->goal_shown = 1;
    if (show_over(t, v, TM_OV_GOAL) < 0)
      return -1;
  }
  int k = tl_barrier_due(t, v);
  if (!k)
    return 0;
  tl_open_barrier(t, v, k);
  return qq_box(t, v);
}

/* The learner decides step v->step. */
static int64_t ask(teach_session_t *t, const cs_sched_view_t *v)
{
  int help = 0;
  if (t->cursor >= (int)v->nenabled)
    t->cursor = 0;
  uint32_t ph, rd;
  for (int qr; (qr = tl_boundary(t, v, &ph, &rd)) >= 0;) {
    int64_t c = question(t, v, qr, ph, rd); /* every round due, in order */
    if (c != -2)
      return c;
  }
  for (;;) {
    td_draw(t, v, help);
    int ch = getch();
    if (signalled()) {
      t->quit = 1;
      return -1;
    }
    if (ch != ERR && ch != KEY_RESIZE)
      t->note_key = 0; /* a refused key's note lasts until the next key */
    int64_t c = on_key(t, v, ch, &help);
    if (c >= 0) { /* from here on the order is the learner's own */
      t->reveal[0][0] = t->reveal[1][0] = 0;
      t->shown = 0;
    }
    if (c != -2)
      return c;
  }
}

static int64_t picker(const cs_sched_view_t *v, void *arg)
{
  teach_session_t *t = arg;
  int64_t c;
  int asked = 0;
  if (!t->facts)
    td_slots(t, v); /* its windows now, kept for the end screen too */
  if (v->step < t->target && v->step < t->nchoice) {
    c = t->choice[v->step] < v->nenabled ? t->choice[v->step] : 0;
  } else {
    tm_snapshot(t, v->w);
    if (t->lesson)
      tl_check(t, v); /* grade the rounds asked about that have run */
    int ms = 0, ls = 0;
    if (!t->searching && ((ms = milestone(t, v)) < 0 ||
                          (ls = lesson_stops(t, v)) < 0))
      return -1;
    if (ms > 0 || ls > 0) /* r or n stops: the answer's reveal is read */
      t->auto_round = t->auto_barrier = 0;
    if (t->searching) {
      uint64_t z = (t->rand += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      c = (int64_t)((z ^ (z >> 31)) % v->nenabled);
    } else if (t->auto_round && !tm_round_over(t, v)) {
      c = auto_pick(t, v);
    } else if (t->auto_barrier && (c = barrier_pick(t, v)) >= 0) {
      ;
    } else if (t->data_mode && (c = data_pick(t, v)) >= 0) {
      ;
    } else {
      c = -1;
    }
    if (c >= 0 && !t->searching && tl_unasked_mark(t, v, c))
      c = -1; /* a round not asked about yet: its question first */
    if (c < 0) {
      t->auto_round = t->auto_barrier = 0;
      c = ask(t, v);
      if (c < 0)
        return -1;
      t->cursor = 0;
      asked = 1;
      if (v->step >= t->nchoice || t->choice[v->step] != c)
        t->nstory = 0; /* another order: the story is not its */
    }
    if (tm_push(t, v->step, c, asked) < 0)
      return -1;
    t->target = v->step + 1;
    if (v->en[c].op < 0 && v->en[c].rec.kind != CS_EV_WAIT &&
        v->en[c].rank < TM_MAXR)
      t->bar_moved[v->en[c].rank] = 1;
  }
  tm_apply(t, v, c);
  return c;
}

/* ------------------------------------------------------------ the driver */

typedef struct tui {
  struct sigaction old[3];    /* SIGINT, SIGTERM, SIGHUP before */
  int   saved_out, saved_err; /* the real stdout and stderr */
  FILE *log;                  /* the run's messages while the screen is up */
  FILE *term;                 /* curses' output: a dup of the real stdout */
  SCREEN *scr;
} tui_t;

static tui_t *live; /* for the atexit restore */
static const int stops[3] = {SIGINT, SIGTERM, SIGHUP};

static void screen_down(void)
{
  tui_t *u = live;
  if (!u)
    return;
  live = NULL;
  for (int i = 0; i < 3; i++)
    sigaction(stops[i], &u->old[i], NULL);
  endwin();
  delscreen(u->scr);
  fclose(u->term);
  fflush(stdout);
  fflush(stderr);
  dup2(u->saved_out, 1);
  dup2(u->saved_err, 2);
  close(u->saved_out);
  close(u->saved_err);
  fclose(u->log);
}

/* Curses on the terminal, the run's output into a log. Returns 0 or -1. */
static int screen_up(tui_t *u)
{
  fflush(stdout);
  fflush(stderr);
  u->log = tmpfile();
  u->saved_out = dup(1);
  u->saved_err = dup(2);
  int tfd = dup(1);
  u->term = tfd >= 0 ? fdopen(tfd, "w") : NULL;
  if (!u->log || u->saved_out < 0 || u->saved_err < 0 || !u->term)
    return -1;
  u->scr = newterm(NULL, u->term, stdin);
  if (!u->scr)
    return -1;
  set_term(u->scr);
  raw();
  noecho();
  keypad(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25); /* Esc (skip a question) acts at once, not after 1 s */
  timeout(200);
  dup2(fileno(u->log), 1);
  dup2(fileno(u->log), 2);
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; i++) {
    sigaction(stops[i], NULL, &u->old[i]);
    if (u->old[i].sa_handler != SIG_IGN) /* nohup stays nohup */
      sigaction(stops[i], &sa, NULL);
  }
  live = u;
  atexit(screen_down);
  return 0;
}

static void result_line(teach_session_t *t, const char *fmt, const char *s)
{
  if (t->nresult < TM_RESULT)
    snprintf(t->result[t->nresult++], sizeof(t->result[0]), fmt, s);
}

/* Replaces [at, end) of the line b (of cap bytes) with `with`. */
static void line_splice(char *b, size_t cap, char *at, const char *end,
                   const char *with)
{
  char tail[512];
  snprintf(tail, sizeof(tail), "%s", end);
  snprintf(at, cap - (size_t)(at - b), "%s%s", with, tail);
}

/* A wavefront line counts each rank's own events ("rank 0: blocked at
 * event 10", "last notified by rank 1 at its event 4"); the screen counts
 * steps. Rewrites them as the steps they ran at (an event that has not
 * run: the step the run stopped at), so the learner matches them with
 * the history and the story. */
static void event_to_step(const teach_session_t *t, char *b, size_t cap)
{
  unsigned r;
  unsigned long long k;
  uint64_t s;
  char with[64], *h, *end;
  const char *p = b + strspn(b, " ");
  if (sscanf(p, "rank %u:", &r) == 1 && (h = strstr(b, " at event ")) &&
      sscanf(h, " at event %llu", &k) == 1) {
    strtoull(h + 10, &end, 10);
    if (!tm_event_step(t, r, k, &s))
      s = t->st.nevents;
    snprintf(with, sizeof(with), " at step %llu", (unsigned long long)s);
    line_splice(b, cap, h, end, with);
  }
  if ((h = strstr(b, " by rank ")) &&
      sscanf(h, " by rank %u at its event %llu", &r, &k) == 2 &&
      (end = strstr(h, " at its event ")) &&
      tm_event_step(t, r, k, &s)) {
    strtoull(end + 14, &end, 10);
    snprintf(with, sizeof(with), " by rank %u at step %llu", r,
             (unsigned long long)s);
    line_splice(b, cap, h, end, with);
  }
}

/* What the run printed, into t->result: its verdict or failure, then the
 * first finding of the check (break-it levels). */
static void read_result(teach_session_t *t, FILE *log)
{
  char buf[512], head[160];
  int in_check = 0;
  fflush(stdout);
  fflush(stderr);
  rewind(log);
  t->nresult = 0;
  snprintf(head, sizeof(head), t->shown ? "Shown: this order fails after "
           "%llu steps (b/B step back through it)." :
           !t->goal ? "The run has ended after %llu steps "
           "(b = step back, q = quit). It said:" : t->run_rc ? "You broke it: "
           "the run failed after %llu steps." :
           "It still passed after %llu steps (b/B: step back, try another "
           "order).", (unsigned long long)t->st.nevents);
  result_line(t, "%s", head);
  if (tb_ready(t))
    result_line(t, "%s", "Branches: c compares this run (B) with the one you "
                "stepped back from (A).");
  if (t->lesson) {
    char line[200];
    if (t->reveal[0][0]) /* the last grade: a verdict line, not a box */
      result_line(t, "%s", t->reveal[0]);
    t->reveal[0][0] = t->reveal[1][0] = 0;
    tl_cost_verdict(t, line, sizeof(line));
    if (line[0])
      result_line(t, "%s", line);
    tl_score_line(t, line, sizeof(line));
    result_line(t, "%s", line);
    tl_next_line(line, sizeof(line));
    result_line(t, "%s", line);
  }
  if (t->edge)
    result_line(t, "The level removed %s.", t->edge);
  /* The check's finding first (a level's point), then the run's words. */
  for (int pass = 1; pass >= 0; pass--)
  for (in_check = 0, rewind(log); fgets(buf, sizeof(buf), log);) {
    buf[strcspn(buf, "\n")] = 0;
    if (!strcmp(buf, "check:")) {
      in_check = 1;
      continue;
    }
    if ((in_check > 0) != pass)
      continue;
    /* What fits 80x24 beside the windows: the verdict, the finding and
     * its fix; not the timing, the signal summary, the events' bounds. */
    if (!buf[0] || !strncmp(buf, "mode:", 5) || strstr(buf, " allreduce, ") ||
        !strncmp(buf, "time per call", 13) || !strncmp(buf, "error vs", 8) ||
        (in_check && !strncmp(buf, "2. ", 3) && (in_check = 2)) || in_check > 1 ||
        (t->goal && (!strncmp(buf, "verification:", 13) ||
                     !strncmp(buf, "signals:", 8) ||
                     !strncmp(buf, "           after", 16) ||
                     !strncmp(buf, "   first ", 9) ||
                     !strncmp(buf, "   second ", 10) ||
                     !strncmp(buf, "note: the run was aborted", 25) ||
                     (strstr(buf, " in ") && strstr(buf, " records") &&
                     strstr(buf, "finding")))))
      continue;
    if (!strcmp(buf, "story:")) {
      result_line(t, "%s", t->nstory ? "What broke it, as collsim shrink "
                  "tells it (j then 1-9: back to that event):" :
                  "What broke it:");
      continue;
    }
    event_to_step(t, buf, sizeof(buf));
    unsigned long long seq;
    char *h = strstr(buf, " (#");
    uint32_t k = h && sscanf(h, " (#%llu)", &seq) == 1 ? ts_of_seq(t, seq) : 0;
    if (k && t->story_step[k - 1] != UINT64_MAX)
      snprintf(h, sizeof(buf) - (size_t)(h - buf), " (step %llu).",
               (unsigned long long)t->story_step[k - 1]);
    result_line(t, "  %.400s", buf);
  }
}

/* What the run printed so far (its log), NUL-terminated; NULL if none. */
static char *slurp(FILE *log)
{
  fflush(stdout);
  fflush(stderr);
  long n = fseek(log, 0, SEEK_END) == 0 ? ftell(log) : -1;
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (!b)
    return NULL;
  rewind(log);
  b[fread(b, 1, (size_t)n, log)] = 0;
  return b;
}

/* After the run: b or B re-run to a step, j then 1-9 to a story's event
 * (a digit alone names a rank, as in the run: none runs now, the status
 * line says so), q quits. Returns 1 to re-run. */
static int ended(teach_session_t *t, tui_t *u)
{
  int help = 0, jump = 0;
  if (t->o->cfg.bug && t->trace[0]) {
    char *out = t->run_rc != CS_EXIT_OK ? slurp(u->log) : NULL;
    printf("check:\n");
    fflush(stdout);
    if (out && ts_story(t, out) == 0)
      ; /* a broken run: shrink's story of it */
    else if (t->edge) /* the finding about the edge the level removed */
      cs__check_focus(t->trace, t->edge_kind, t->edge_cause, stdout);
    else
      cs__check_path(t->trace, 0, stdout);
    free(out);
    fflush(stdout);
  }
  if (t->lesson)
    tl_check(t, NULL); /* the last rounds asked about ended the run */
  read_result(t, u->log);
  if (milestones(t) && t->run_rc == CS_EXIT_OK && !t->ms_step[1]) {
    t->ms_step[1] = t->st.nevents + 1;
    if (show_over(t, NULL, TM_OV_AG) < 0)
      return 0;
  }
  for (;;) {
    td_draw(t, NULL, help);
    int ch = getch();
    if (signalled() || ch == 'q' || ch == 'Q' || ch == 3)
      return 0;
    if (ch == ERR || ch == KEY_RESIZE)
      continue;
    t->note_key = 0; /* a digit's note lasts until the next key */
    if (t->compare) { /* the comparison closes with any key */
      t->compare = 0;
      continue;
    }
    int jumping = jump;
    jump = ch == 'j' && t->nstory;
    if (ch == 'v')
      t->values = !t->values;
    if (ch == 't')
      t->strip = !t->strip;
    help = ch == '?' && !help;
    if (ch == 'c' && tb_ready(t))
      t->compare = 1;
    /* Stepping back from an ended run keeps it as branch A, to compare
     * with once another order has run to its end. */
    if ((ch == 'b' || ch == KEY_LEFT) && t->st.nevents) {
      t->target = back_step(t, t->st.nevents);
      return tb_keep(t), 1;
    }
    if (ch == 'B' && t->st.nevents) {
      t->target = round_back(t, t->st.nevents);
      return tb_keep(t), 1;
    }
    if (jumping && ch >= '1' && ch <= '0' + (int)t->nstory &&
        t->story_step[ch - '1'] < t->st.nevents) { /* to the story's event */
      t->target = t->story_step[ch - '1'] + 1;
      return tb_keep(t), 1;
    }
    if (!jumping && ch >= '0' && ch <= '9')
      t->note_key = ch - '0' + 1; /* a rank's digit: the run has ended */
  }
}

static int one_run(teach_session_t *t, tui_t *u);

/* "Show me": seeded random orders after the learner's prefix until one
 * makes the run fail; the lesson then replays it to its end, where the
 * learner can step back through it. */
static void show_me(teach_session_t *t, tui_t *u)
{
  uint64_t prefix = t->target;
  t->show_me = 0;
  erase();
  mvprintw(0, 0, "Searching for an order that makes the run fail (after step "
           "%llu)...", (unsigned long long)prefix);
  refresh();
  t->searching = 1;
  for (uint64_t seed = 1; seed <= 200 && !t->quit; seed++) {
    t->target = prefix;
    t->rand = seed;
    int rc = one_run(t, u);
    if (t->sig_abort)
      t->quit = 1;
    if (rc != CS_EXIT_OK && !t->quit) {
      t->shown = 1;
      t->reveal[0][0] = t->reveal[1][0] = 0;
      t->target = t->nchoice;
      break;
    }
  }
  t->searching = 0;
  t->restart = 1; /* re-run to the target, where the learner continues */
  if (t->shown)
    return;
  t->target = prefix; /* none found: back where the learner was */
  t->shown = 0;       /* and the order is the learner's, not a found one */
  snprintf(t->reveal[0], sizeof(t->reveal[0]), "No failing order found in 200 "
           "random tries after step %llu.", (unsigned long long)prefix);
  snprintf(t->reveal[1], sizeof(t->reveal[1]), "Step back (b/B) to an "
           "earlier point and try S again.");
}

/* One run of the engine up to where the learner stops it. Returns the
 * run's exit code. */
static int one_run(teach_session_t *t, tui_t *u)
{
  for (int i = 0; i < 2; i++) /* stepped back before it: shown again */
    if (t->ms_step[i] && t->target + 1 < t->ms_step[i])
      t->ms_step[i] = 0;
  tm_reset(t);
  if (t->lesson)
    tl_rewind(t, t->target); /* no grade of a round not run again yet */
  t->restart = 0;
  t->auto_round = t->auto_barrier = 0;
  t->q_rank = -1;
  if (ftruncate(fileno(u->log), 0) == 0)
    rewind(u->log);
  run_opts_t o = *t->o;
  o.sched.strategy = CS_SCHED_CALLBACK;
  o.sched.pick_fn = picker;
  o.sched.pick_arg = t;
  o.schedule_str = "interactive";
  o.com.trace = t->trace[0] ? t->trace : NULL;
  int rc = t->run_rc = cs_run_execute(&o);
  fflush(stdout);
  fflush(stderr);
  /* The picker stops a run with the same reason; only its own stops set
   * restart or quit (or happen while searching). */
  t->sig_abort = signalled() || (o.abort_reason == CS_ABORT_SIGNAL &&
                 !t->restart && !t->quit && !t->show_me);
  return rc;
}

/* The runs' trace: the learner's --trace, or with a bug a temporary one
 * for the check. Returns 0 or -1. */
static int trace_name(teach_session_t *t, int *temp)
{
  *temp = 0;
  if (t->o->com.trace) {
    snprintf(t->trace, sizeof(t->trace), "%s", t->o->com.trace);
    return strlen(t->o->com.trace) < sizeof(t->trace) ? 0 : -1;
  }
  if (!t->o->cfg.bug)
    return 0;
  int fd = cs_cli_temp(t->trace, sizeof(t->trace), cs_cli_tmpdir(),
                       "collsim-teach-", "", 0, 0);
  if (fd < 0)
    return -1;
  close(fd);
  *temp = 1;
  return 0;
}

int cs__teach_tui(run_opts_t *o, const cs_teach_level_t *level, int lesson)
{
  teach_session_t t = {.o = o, .level = level, .n = o->cfg.nranks,
                       .count = o->cfg.count,
                       .es = cs_dtype_size(o->cfg.dtype),
                       .goal = level ? level->goal : NULL,
                       .edge = level ? level->edge : NULL,
                       .edge_kind = level ? level->kind : 0,
                       .edge_cause = level ? level->cause : 0,
                       .lesson = lesson, .q_rank = -1};
  int temp;
  if (trace_name(&t, &temp) < 0) {
    cs_cli_error("teach", "cannot create a temporary trace file: %s",
                 strerror(errno));
    return CS_EXIT_ABORTED;
  }
  t.snap = calloc(t.n, t.count * t.es);
  tui_t u;
  memset(&u, 0, sizeof(u));
  if (!t.snap || screen_up(&u) < 0) {
    screen_down();
    free(t.snap);
    if (temp)
      unlink(t.trace);
    cs_cli_error("teach", "cannot start the terminal screen (use --plain)");
    return CS_EXIT_ABORTED;
  }
  int rc = CS_EXIT_OK;
  for (;;) {
    rc = one_run(&t, &u);
    if (t.quit || t.sig_abort)
      break;
    if (t.show_me)
      show_me(&t, &u);
    if (t.restart)
      continue;
    if (!ended(&t, &u))
      break;
  }
  uint64_t steps = t.st.nevents;
  screen_down();
  printf("collsim teach: %s at step %llu.\n", t.quit ? "stopped" : "done",
         (unsigned long long)steps);
  if (temp)
    unlink(t.trace);
  free(t.choice);
  free(t.asked);
  free(t.hist);
  free(t.hist_dma);
  free(t.round_step);
  free(t.snap);
  tb_free(&t);
  return t.quit && !t.sig_abort ? CS_EXIT_OK : rc;
}
