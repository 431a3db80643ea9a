/*
 * teach_draw.c - the lesson's screen (teach_draw.h). Top to bottom: the
 * title and the tag legend; every rank's window as segments with their
 * provenance (or values) and its tile; the ring with the transfers in
 * progress; bytes loaded against 2(N-1)/N*S; who may go next (one line per
 * rank: its signal row and its posted event, or greyed with the reason it
 * cannot run; then the DMA engines); the last events in the scheduler's
 * one-line form; the keys. Called by teach_ui.c.
 */
#include "teach_draw.h"

#include <curses.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../../collectives/allreduce.h"
#include "../../collectives/ar_config.h"
#include "../../collectives/geometry.h"
#include "../../collectives/reduce.h"
#include "../../run/coll.h"
#include "../../sim/trace/describe.h"
#include "teach_branch.h"
#include "teach_lesson.h"
#include "teach_story.h"

/* mvprintw clipped at the right edge (curses would wrap the rest). */
static void put(int y, int x, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(int y, int x, const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (COLS > x)
    mvaddnstr(y, x, buf, COLS - x);
}

/* s from line y on, wrapped at spaces to the screen's width (continued
 * lines indented by `ind` more than s's own indent), no line at or past
 * `end`. Returns the next free line. */
static int put_wrapped(int y, int end, int ind, const char *s)
{
  int lead = (int)strspn(s, " "), first = 1;
  while (*s && y < end) {
    int x = first ? 0 : lead + ind, room = COLS - x, len = (int)strlen(s);
    if (room < 10)
      room = 10;
    int cut = len;
    if (len > room) {
      for (cut = room; cut > room / 2 && s[cut] != ' '; cut--)
        ;
      if (s[cut] != ' ')
        cut = room;
    }
    mvaddnstr(y++, x, s, cut);
    s += cut;
    s += strspn(s, " ");
    first = 0;
  }
  if (*s && end > 0) { /* no room left: say so on the last line */
    move(end - 1, 0);
    clrtoeol();
    mvaddnstr(end - 1, 0, "  ... (more than fits: a taller window shows "
              "the rest)", COLS);
  }
  return y;
}

void td_need(uint32_t n, int *cols, int *lines)
{
  *cols = n <= 4 ? 80 : 120;
  *lines = n <= 4 ? 24 : 40;
}

/* The name a collective of one's own gives phase p (its registration's
 * phases[p - 1]; NULL: none, or a registration built before names). */
static const char *user_phase(const cs_collective_t *c, uint32_t p)
{
  if (!c || c->size < offsetof(cs_collective_t, nphases) + sizeof(c->nphases) ||
      !c->phases || p < 1 || p > c->nphases)
    return NULL;
  return c->phases[p - 1];
}

static void tag_str(char *b, size_t cap, uint32_t phase, uint32_t round,
                    uint32_t sub, int algo, const cs_collective_t *coll)
{
  const cs_algo_desc_t *a = algo >= 0 ? cs_algo_desc((uint32_t)algo) : NULL;
  const char *named = user_phase(coll, phase);
  if (!phase)
    snprintf(b, cap, "start");
  else if (named) /* its own names, tagged as the trace tags them */
    snprintf(b, cap, "%s t%u j%u", named, round, sub);
  else if (a && a->nphases)
    snprintf(b, cap, "%s t%u j%u", a->phases[phase < a->nphases ? phase - 1
                                                               : a->nphases - 1],
             round, sub);
  else if ((a || (coll && (cs_coll_flags(coll) & CS_COLL_CHUNK_TAGS))) &&
           phase == 1 && round == 0) /* one phase, unnamed: the trace's
                                        "main" */
    snprintf(b, cap, "main");
  else
    snprintf(b, cap, "ph%u r%u", phase, round);
}

/* The algorithm for tag_str: -1 for a collective of one's own (its phases
 * and rounds are what it marked, "ph1 r2"). */
static int algo_of(const teach_session_t *t)
{
  return t->o->coll ? -1 : (int)t->o->cfg.algo;
}

static double value_at(const teach_session_t *t, uint32_t r, uint64_t e)
{
  const uint8_t *p = t->snap + (r * t->count + e) * t->es;
  uint16_t h;
  float f;
  switch (t->o->cfg.dtype) {
  case CS_FP16: memcpy(&h, p, 2); return cs_half_to_float(h);
  case CS_BF16: memcpy(&h, p, 2); return cs_bf16_to_float(h);
  default: memcpy(&f, p, 4); return f;
  }
}

/* Segment k of rank r as "s1=[2+3]" or "s1=6,9" into a cell of w chars
 * (in: whose inputs the input slot's part holds, where the drawn slot is
 * the result's; not with values). */
static void seg_cell(const teach_session_t *t, uint32_t r, uint32_t k, char *b,
                     size_t w, int in)
{
  uint64_t lo = tm_part_lo(t, k), hi = tm_part_lo(t, k + 1);
  size_t o = (size_t)snprintf(b, w + 1, "%c%u=", t->facts->part_letter, k);
  if (lo == hi) {
    snprintf(b + o, w + 1 - o, "-");
    return;
  }
  if (!t->values) {
    const tm_prov_t *p;
    if (!(in ? tm_in_part_prov : tm_part_prov)(t, r, k, &p))
      b[o - 1] = '~'; /* part-way: its first tile shown */
    char full[TM_MAXR * 8 + 8];
    tm_prov_str(full, sizeof(full), p);
    size_t room = w - o, len = strlen(full);
    if (len <= room)
      memcpy(b + o, full, len + 1);
    else if (room >= 4) /* cut where it shows: "[2+0+1..]" */
      snprintf(b + o, room + 1, "%.*s..]", (int)(room - 3), full);
    else {
      memcpy(b + o, full, room);
      b[o + room] = 0;
    }
    return;
  }
  for (uint64_t e = lo; e < hi && o < w; e++)
    o += (size_t)snprintf(b + o, w + 1 - o, "%s%g", e > lo ? "," : "",
                          value_at(t, r, e));
  if (o >= w)
    b[w - 1] = '+'; /* more than the cell shows */
}

/* Rank r's parts from line y, `per` a line, each cw wide (in: its input
 * slot's, seg_cell); returns the line of the last. */
static int draw_parts(const teach_session_t *t, uint32_t r, int y, int per,
                      int cw, int in)
{
  char cell[64];
  for (uint32_t k = 0; k < tm_nparts(t); k++) {
    if (k && k % (uint32_t)per == 0)
      y++;
    seg_cell(t, r, k, cell, (size_t)cw, in);
    put(y, 16 + (int)(k % (uint32_t)per) * (cw + 1), "%s", cell);
  }
  return y;
}

/* Every rank's window; returns the next free line. A push algorithm with
 * a result slot (ibing) draws under each rank its input slot too, where
 * the peer's puts add: the result slot changes only when it is copied. */
static int draw_windows(const teach_session_t *t, int y)
{
  uint32_t n = t->n;
  /* a mutation may fold a rank in twice: room for that off the ring, up
   * to 4 ranks (above, N parts of that width would not fit 120x40; a
   * longer fold is cut "[2+0+1..]") */
  int cw = (int)(tm_flag(t, CS_COLL_TEACH_PULL_RING) || n > 4 ||
                     tm_nparts(t) > n
                     ? 2 * n + 4 : 4 * n + 6),
      per = (COLS - 12 - 2 * (int)n - 8) / (cw + 1);
  if (per < 1)
    per = 1;
  const char *head = t->st.out_slot
                         ? (t->values ? "rank tag       result slot out: part=values"
                                      : "rank tag       result slot out: part=[whose "
                                        "inputs, in fold order]")
                     : t->values ? "rank tag       window: part=values"
                                 : "rank tag       window: part=[whose inputs, "
                                   "in fold order]";
  /* the tile column after the parts drawn, and after the header */
  uint32_t np = tm_nparts(t);
  int tx = 16 + (int)(np < (uint32_t)per ? np : (uint32_t)per) * (cw + 1);
  if (tx < (int)strlen(head) + 2)
    tx = (int)strlen(head) + 2;
  put(y, 0, "%s", head);
  put(y++, tx, t->values ? "tile: inputs" : "tile");
  int in_line = t->st.out_slot && tm_flag(t, CS_COLL_TEACH_PUSH) &&
                !t->values; /* whose inputs; v shows the result slot's values */
  for (uint32_t r = 0; r < n; r++) {
    char tag[24], tile[40];
    tag_str(tag, sizeof(tag), t->st.phase[r], t->st.round[r], t->st.sub[r],
            algo_of(t), t->o->coll);
    put(y, 0, "r%-3u %-10s", r, tag);
    y = draw_parts(t, r, y, per, cw, 0);
    if (t->st.tile_seg[r] >= 0)
      tm_prov_str(tile, sizeof(tile), &t->st.tile[r]);
    else
      snprintf(tile, sizeof(tile), "-");
    put(y, tx, "%s", tile);
    y++;
    if (in_line) { /* where the peer's adding puts land */
      put(y, 5, "data:");
      y = draw_parts(t, r, y, per, cw, 1) + 1;
    }
  }
  return y;
}

/* One element of a slot of rank r's window, as text: a signal cell or an
 * element of another size than the data type as an integer, else the data
 * type's value. */
static void slot_elem(const teach_session_t *t, const uint8_t *win,
                      const cs_slot_t *sl, int sig, uint64_t i, char *b,
                      size_t cap)
{
  const uint8_t *p = win + (sig ? cs_slot_cell_off(sl, i) : sl->off +
                            i * sl->esize);
  if (sig || sl->esize != t->es || sl->esize == 1 || sl->esize == 8) {
    int64_t x = 0;
    if (sl->esize == 1)
      x = *p;
    else if (sl->esize == 2)
      x = *(const uint16_t *)p;
    else if (sl->esize == 8)
      x = *(const int64_t *)p;
    else
      x = __atomic_load_n((const int32_t *)p, __ATOMIC_ACQUIRE);
    snprintf(b, cap, "%lld", (long long)x);
    return;
  }
  uint16_t h;
  float f;
  double d;
  switch (t->o->cfg.dtype) {
  case CS_FP16: memcpy(&h, p, 2); d = cs_half_to_float(h); break;
  case CS_BF16: memcpy(&h, p, 2); d = cs_bf16_to_float(h); break;
  default: memcpy(&f, p, 4); d = f; break;
  }
  snprintf(b, cap, "%g", d);
}

static char slot_rows[TM_MAXR][256]; /* td_slots' text, by rank */

void td_slots(const teach_session_t *t, const cs_sched_view_t *v)
{
  const cs_layout_t *l = &v->w->ctl->layout;
  uint32_t ns = l->nslots < 8 ? l->nslots : 8;
  int room = COLS > 16 ? COLS - 16 : 64, per = ns ? room / (int)ns - 1 : room;
  if (per > 120)
    per = 120;
  for (uint32_t r = 0; r < t->n && r < TM_MAXR; r++) {
    const uint8_t *win = cs_world_window(v->w, r);
    size_t o = 0;
    slot_rows[r][0] = 0;
    for (uint32_t k = 0; k < ns && o < sizeof(slot_rows[r]); k++) {
      const cs_slot_t *sl = &l->slot[k];
      int sig = k == t->o->coll->signal_slot;
      uint64_t ne = sl->esize ? sl->nbytes / sl->esize : 0;
      char cell[160], e[40];
      size_t c = (size_t)snprintf(cell, sizeof(cell), "%.8s=", sl->name);
      for (uint64_t i = 0; i < ne && (int)c < per && c < sizeof(cell); i++) {
        slot_elem(t, win, sl, sig, i, e, sizeof(e));
        c += (size_t)snprintf(cell + c, sizeof(cell) - c, "%s%s",
                              i ? (sig ? " " : ",") : "", e);
      }
      if ((int)c > per && per > 1) {
        cell[per - 1] = '+'; /* more than the cell shows */
        cell[per] = 0;
      }
      o += (size_t)snprintf(slot_rows[r] + o, sizeof(slot_rows[r]) - o,
                            "%-*s ", per, cell);
    }
  }
}

/* A collective of one's own: every rank's window drawn from its slots
 * (td_slots' text), at the paused step; on the end screen as it was
 * before the last event ran. Returns the next free line. */
static int draw_slots(const teach_session_t *t, const cs_sched_view_t *v,
                      int y)
{
  put(y++, 0, "rank tag       window: slot=its first elements (%s)",
      v ? "live" : "before the last event ran");
  for (uint32_t r = 0; r < t->n && r < TM_MAXR; r++) {
    char tag[24];
    tag_str(tag, sizeof(tag), t->st.phase[r], t->st.round[r], t->st.sub[r],
            -1, t->o->coll);
    put(y++, 0, "r%-3u %-10s %s", r, tag, slot_rows[r]);
  }
  return y;
}

/* The ring, an arrow into every rank whose next event loads from its
 * left (mesh, host: every remote load posted). */
static void draw_reads(const teach_session_t *t, const cs_sched_view_t *v, int y)
{
  int ring = tm_flag(t, CS_COLL_TEACH_PULL_RING),
      push = tm_flag(t, CS_COLL_TEACH_PUSH);
  move(y, 0);
  printw(ring ? "ring: " : push ? "puts: " : "reads:");
  for (uint32_t r = 0; r <= t->n; r++) {
    uint32_t q = r % t->n, left = (q + t->n - 1) % t->n;
    const cs_trace_rec_t *x = v ? &v->rank[q].rec : NULL;
    int busy = x && v->rank[q].state == CS_VIEW_POSTED &&
               x->kind == (push ? CS_EV_PUT : CS_EV_LOAD) && x->peer != q &&
               x->slot == t->sl_data && (!ring || x->peer == left);
    if (!ring) {
      if (busy && r < t->n)
        printw(push ? " r%u=>r%u %c%u" : " r%u<=r%u %c%u", q, x->peer,
               t->facts->part_letter,
               tm_seg_of(t, x->elem_off));
      continue;
    }
    if (r) {
      if (busy)
        attron(A_BOLD | A_REVERSE);
      printw(busy ? " =s%u=> " : " ---> ", busy ? tm_seg_of(t, x->elem_off) : 0);
      attroff(A_BOLD | A_REVERSE);
    }
    printw("r%u", q);
  }
  printw(ring ? "  (=sK=>: reading segment K)"
              : push ? "  (rank=>peer: a put into the peer next)"
                    : "  (rank<=peer: a remote load next)");
}

static int draw_ring(const teach_session_t *t, const cs_sched_view_t *v, int y)
{
  if (!t->facts) { /* no parts to draw: the bytes it loaded from others */
    char b[256];
    size_t o = (size_t)snprintf(b, sizeof(b), "loaded from other ranks:");
    for (uint32_t r = 0; r < t->n && o < sizeof(b); r++)
      o += (size_t)snprintf(b + o, sizeof(b) - o, " r%u %lluB", r,
                            (unsigned long long)t->st.moved[r]);
    return put_wrapped(y, y + 2, 4, b);
  }
  if (v) /* the reads in progress: none once the run has ended, where
             the line is the verdict's */
    draw_reads(t, v, y++);
  /* the algorithm's own textbook figure: 2(N-1)/N*S for the rings and
   * the two-phase mesh, (N-1)*S where every rank reads every peer */
  const char *what = NULL;
  double formula = t->facts->volume ? t->facts->volume(&t->g, &what) : 0;
  uint64_t s = t->count * t->es, ideal = (uint64_t)formula;
  char b[256];
  /* a push algorithm moves its bytes by puts into other ranks' windows */
  size_t o = (size_t)snprintf(b, sizeof(b),
                              tm_flag(t, CS_COLL_TEACH_PUSH) ? "put:"
                                                             : "loaded:");
  for (uint32_t r = 0; r < t->n && o < sizeof(b); r++)
    o += (size_t)snprintf(b + o, sizeof(b) - o, " r%u %lluB", r,
                          (unsigned long long)t->st.moved[r]);
  if (o < sizeof(b) && (t->qq == TL_QQ_COST || !what)) /* the formula is
                                            the answer, or it has none */
    snprintf(b + o, sizeof(b) - o, "  (S=%lluB)", (unsigned long long)s);
  else if (o < sizeof(b))
    snprintf(b + o, sizeof(b) - o, "  of %s = %lluB (S=%lluB)",
             what, (unsigned long long)ideal,
             (unsigned long long)s);
  return put_wrapped(y, y + 2, 4, b); /* a large S takes a second line */
}

/* Rank r's signal row: the row its next signal event touches, else its
 * round's (ring), named as the barrier it is ("RS t1 [2 . 2 2]": the
 * barriers of reduce-scatter round 1; mesh and host have one row, "sig";
 * '.' = its own cell, unused). */
static void signal_row(const teach_session_t *t, const cs_sched_view_t *v,
                       uint32_t r, char *b, size_t cap)
{
  /* its signal cells are in the window view, or it has none */
  if (!t->facts || t->sl_sig >= t->layout.nslots) {
    snprintf(b, cap, "%s", "");
    return;
  }
  const cs_slot_t *sl = &t->layout.slot[t->sl_sig];
  const uint8_t *win = cs_world_window(v->w, r);
  const char *const *phases;
  uint32_t nphases = tm_phase_names(t->o, &phases);
  int ring = tm_flag(t, CS_COLL_TEACH_PULL_RING);
  uint32_t ncells = (uint32_t)(sl->nbytes / 4), row = 0;
  const cs_trace_rec_t *x = &v->rank[r].rec;
  if (v->rank[r].state == CS_VIEW_POSTED && x->slot == t->sl_sig &&
      (x->kind == CS_EV_WAIT || x->kind == CS_EV_NOTIFY) && x->peer == r)
    row = x->cell / t->n;
  else if (ring && t->st.phase[r])
    row = t->st.round[r] + (t->st.phase[r] == 2 ? t->n - 1 : 0);
  else if (!ring && t->st.sigrow[r] >= 0)
    row = (uint32_t)t->st.sigrow[r]; /* the row of its last barrier */
  size_t o;
  if (ring && nphases >= 2)
    o = (size_t)snprintf(b, cap, "%s t%u [", phases[row + 1 < t->n ? 0 : 1],
                         row + 1 < t->n ? row : row - (t->n - 1));
  else if (ncells > t->n) /* several rows: which one */
    o = (size_t)snprintf(b, cap, "row%u [", row);
  else
    o = (size_t)snprintf(b, cap, "sig [");
  for (uint32_t p = 0; p < t->n && o < cap; p++) {
    uint32_t c = row * t->n + p;
    if (p == r || c >= ncells)
      o += (size_t)snprintf(b + o, cap - o, "%s.", p ? " " : "");
    else
      o += (size_t)snprintf(
          b + o, cap - o, "%s%d", p ? " " : "",
          __atomic_load_n((const int32_t *)(win + cs_slot_cell_off(sl, c)),
                          __ATOMIC_ACQUIRE));
  }
  snprintf(b + o, cap > o ? cap - o : 0, "]");
}

static int actor_of(const cs_sched_view_t *v, uint32_t r)
{
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].rank == r && v->en[i].op < 0)
      return (int)i;
  return -1;
}

/* Rank r's line: [r] when it can run (the digit r runs it), "-" when it
 * cannot (greyed, with the reason). */
static void actor_line(const teach_session_t *t, const cs_sched_view_t *v,
                       uint32_t r, int y)
{
  char sig[80], what[200], label[16] = " -";
  int i = actor_of(v, r);
  signal_row(t, v, r, sig, sizeof(sig));
  const cs_sched_rank_view_t *rv = &v->rank[r];
  if (rv->state == CS_VIEW_DONE)
    snprintf(what, sizeof(what), "rank %u: done", r);
  else if (i < 0)
    snprintf(what, sizeof(what), "rank %u: %s", r, rv->why);
  else
    tm_sentence(t, what, sizeof(what), &rv->rec);
  if (i >= 0)
    snprintf(label, sizeof(label), "[%u]", r);
  if (i < 0)
    attron(A_DIM);
  if (i >= 0 && i == t->cursor)
    attron(A_REVERSE);
  put(y, 0, "%c %-4s %-*s %.*s", i >= 0 && i == t->cursor ? '>' : ' ', label,
      (int)(2 * t->n + 8), sig, COLS - (int)(2 * t->n) - 16, what);
  attroff(A_DIM | A_REVERSE);
}

/* The DMA engines' rows (under fifo, relaxed, a2a3: one per op that can
 * land), from line y, no row at or past `last` (one row at least): when
 * they do not all fit, a window of them that holds the highlighted one,
 * and a last row saying how many more there are. Returns the next free
 * line. */
static int draw_dma(const teach_session_t *t, const cs_sched_view_t *v, int y,
                    int last)
{
  uint32_t nd = 0, at = 0; /* DMA rows, and the highlighted one's place */
  for (uint32_t i = 0; i < v->nenabled; i++)
    if (v->en[i].op >= 0) {
      if ((int)i == t->cursor)
        at = nd;
      nd++;
    }
  if (!nd)
    return y;
  uint32_t rows = last - y > 1 ? (uint32_t)(last - y) : 1, shown = nd,
           first = 0;
  if (nd > rows) { /* a window of rows-1, and the "more" row */
    shown = rows > 1 ? rows - 1 : 1;
    if (at >= shown)
      first = at - shown + 1;
  }
  for (uint32_t i = 0, k = 0; i < v->nenabled; i++) {
    if (v->en[i].op < 0)
      continue;
    if (k++ < first || k > first + shown)
      continue;
    char what[200];
    tm_sentence(t, what, sizeof(what), &v->en[i].rec);
    if ((int)i == t->cursor)
      attron(A_REVERSE);
    put(y++, 0, "%c  d%u  %.*s", (int)i == t->cursor ? '>' : ' ',
        v->en[i].rank, COLS - 8, what); /* a DMA engine: arrows + Enter */
    attroff(A_REVERSE);
  }
  if (shown < nd)
    put(y++, 0, "   ... %u more DMA op%s (%u above, %u below: Up/Down)",
        nd - shown, nd - shown == 1 ? "" : "s", first, nd - shown - first);
  return y;
}

/* Who may go next; returns the next free line. */
static int draw_actors(const teach_session_t *t, const cs_sched_view_t *v,
                       int y, int last)
{
  if (t->data_mode)
    put(y++, 0, "step %llu, data step %llu: which rank %s next? (its "
        "digit, or Enter)", (unsigned long long)v->step,
        (unsigned long long)t->st.nremote + 1,
        !t->facts ? "loads or puts" : tm_flag(t, CS_COLL_TEACH_PUSH) ?
        "puts" : "loads");
  else
    put(y++, 0, "step %llu, who goes next? (a rank's digit, or arrows + "
        "Enter; grey: cannot run)", (unsigned long long)v->step);
  for (uint32_t r = 0; r < t->n; r++)
    actor_line(t, v, r, y++);
  return draw_dma(t, v, y, last);
}

static int draw_events(const teach_session_t *t, int y,
                       int last)
{
  const tm_state_t *s = &t->st;
  put(y++, 0, "last events:");
  uint32_t room = last > y ? (uint32_t)(last - y) : 0;
  uint32_t k = s->nlast < room ? s->nlast : room;
  if (k > TM_LAST)
    k = TM_LAST;
  for (uint32_t i = k; i > 0; i--) {
    const tm_event_t *e = &s->last[(s->nevents - i) % TM_HIST];
    char tag[24], what[200];
    tag_str(tag, sizeof(tag), e->phase, e->round, 0, algo_of(t), t->o->coll);
    if ((!t->o->coll ? cs_algo_desc(t->o->cfg.algo)->nphases != 0
                     : user_phase(t->o->coll, e->phase) != NULL) && e->phase)
      tag[strlen(tag) - 3] = 0; /* no subchunk in the log */
    tm_sentence(t, what, sizeof(what), &e->rec);
    uint32_t k = ts_of_step(t, e->step); /* an event of the story: *k */
    char mark[16] = "  ";
    if (k)
      snprintf(mark, sizeof(mark), "*%u", k), attron(A_BOLD);
    put(y++, 0, "%s#%-5llu %-6s %.*s", mark, (unsigned long long)e->step, tag,
        COLS - 17, what);
    attroff(A_BOLD);
  }
  return y;
}

/* The last events as a space-time strip: one lane per rank, time to the
 * right, one column per event, a letter for its kind on the lane of the
 * rank that ran it (L load from a peer, l from the own window, S store, P
 * put, N notify, W wait, F fence or drain, + reduce, | phase mark, C
 * dcci, r cell read), and where it crosses to another rank a mark on that
 * rank's lane (o the peer a load reads from, n the peer a notify signals,
 * p the peer a put writes to) with ':' on the lanes in between. A header
 * line above the lanes names the letters; when the story's events are in
 * view it shows their numbers above them instead, and they are bold.
 * Takes n + 2 lines from y (a blank first), or as tight as the room
 * before `last` asks: no blank, then no header. Returns 0 when not even
 * the lanes fit (nothing drawn). */
static int draw_strip(const teach_session_t *t, int y, int last)
{
  const tm_state_t *s = &t->st;
  uint32_t n = t->n < TM_MAXR ? t->n : TM_MAXR;
  if (last - y < (int)n)
    return 0;
  int head = last - y >= (int)n + 1;
  if (last - y >= (int)n + 2)
    y++; /* the blank line before it */
  int x0 = 4, width = COLS - x0;
  uint32_t k = s->nlast < (uint32_t)width ? s->nlast : (uint32_t)width;
  int top = head ? y++ : -1;
  if (head && t->o->sched.model != CS_MM_SC) /* d: DMA engines land ops */
    put(top, 0, "t  L load S store N notify W wait F fence + reduce d lands "
        "o n p: the peer");
  else if (head)
    put(top, 0, "t   L load  S store  N notify  W wait  F fence  + reduce  "
        "o n p: the peer");
  for (uint32_t r = 0; r < n; r++) {
    put(y + (int)r, 0, "r%u", r);
    for (int x = x0; x < COLS; x++)
      mvaddch(y + (int)r, x, '-');
  }
  int story_shown = 0;
  for (uint32_t i = 0; i < k; i++) {
    const tm_event_t *e = &s->last[(s->nevents - k + i) % TM_HIST];
    const cs_trace_rec_t *x = &e->rec;
    int col = x0 + (int)i;
    uint32_t r = x->rank, p = x->peer;
    if (r >= n)
      continue;
    char c = '.', other = 0;
    int queued = t->o->sched.model != CS_MM_SC;
    uint32_t kind = e->dma ? (uint32_t)e->dma - 1 : x->kind;
    switch (kind) {
    case CS_EV_LOAD: c = p == r ? 'l' : 'L'; other = 'o'; break;
    case CS_EV_STORE: c = 'S'; break;
    case CS_EV_PUT: c = 'P'; other = 'p'; break;
    case CS_EV_NOTIFY: c = 'N'; other = 'n'; break;
    case CS_EV_WAIT: c = 'W'; break;
    case CS_EV_FENCE: case CS_EV_PIPE: case CS_EV_DDR: c = 'F'; break;
    case CS_EV_REDUCE: c = '+'; break;
    case CS_EV_MARK: c = '|'; break;
    case CS_EV_DCCI: c = 'C'; break;
    case CS_EV_READ: c = 'r'; break;
    default: break;
    }
    if (e->dma) /* the op lands: d, and where it reaches another rank */
      c = 'd', other = kind == CS_EV_NOTIFY ? 'n' : kind == CS_EV_PUT ? 'p' : 0;
    else if (queued && (kind == CS_EV_NOTIFY || kind == CS_EV_PUT))
      other = 0; /* only posted: it reaches the peer when it lands */
    uint32_t story = ts_of_step(t, e->step);
    if (story)
      attron(A_BOLD);
    if (other && p != r && p < n) {
      uint32_t lo = p < r ? p : r, hi = p < r ? r : p;
      for (uint32_t q = lo + 1; q < hi; q++)
        mvaddch(y + (int)q, col, ':');
      mvaddch(y + (int)p, col, (chtype)other);
    }
    mvaddch(y + (int)r, col, (chtype)c);
    if (story && story < 10 && head) {
      if (!story_shown++) { /* numbers instead of the legend */
        move(top, 0);
        clrtoeol();
        mvaddstr(top, 0, "t");
      }
      mvaddch(top, col, (chtype)('0' + story));
    }
    attroff(A_BOLD);
  }
  return 1;
}

static void draw_help(void)
{
  static const char *const l[] = {
    "Keys",
    "  Enter, Space, s   step: run the highlighted actor (one event)",
    "  0-9               run rank 0-9 (if it can): you are the scheduler",
    "  Up/Down, j/k      move the highlight (DMA engines d0..: Enter)",
    "  r                 run to the end of the round (every rank)",
    "  d                 data steps: pick only the loads between ranks",
    "  n                 run to the next barrier (every rank waits)",
    "  b, Left           step back one event (the run is re-executed)",
    "  B                 step back to the start of the round",
    "  v / t             values for provenance / the space-time strip",
    "  S                 (--level, --bug) show me an order that fails",
    "  c                 (end screen) compare the two branches",
    "  ?                 this help     q, Ctrl-C   quit",
    "Legend",
    "  RS t1 j0  reduce-scatter, round 1, subchunk 0 (AG: all-gather)",
    "  s2=[3+0]  segment 2 holds rank 3's input op rank 0's, folded",
    "            in that order; every rank reads only from its left;",
    "            [] = nothing written there yet (before the stage-in)",
    "  s2~[3+0]  part-way: its first tiles hold [3+0], later ones not yet",
    "  RS t1 [2 . 2 2]  the rank's signal cells of RS round 1's",
    "            barriers ('.' = its own cell); a wait needs cell >= value",
    "Press any key."};
  int n = (int)(sizeof(l) / sizeof(l[0])), y0 = (LINES - n - 2) / 2;
  int x0 = (COLS - 70) / 2;
  for (int i = -1; i <= n; i++) { /* whole rows: no fragment beside it */
    move(y0 + 1 + i, 0);
    clrtoeol();
    put(y0 + 1 + i, x0, "%-70s", i < 0 || i == n ? "" : l[i]);
  }
}

/* Why rank r cannot run: the barrier it waits at and for whom, in the
 * algorithm's own words for the wait ("rank 0 waits for rank 1's READY of
 * RS t1 j0"; mesh: "rank 0 waits for rank 1's notify (ready barrier)"),
 * else the scheduler's reason. */
static void blocked_str(const teach_session_t *t, const cs_sched_view_t *v,
                        uint32_t r, char *b, size_t cap)
{
  const cs_trace_rec_t *x = &v->rank[r].rec;
  char where[160];
  where[0] = 0;
  if (v->rank[r].state == CS_VIEW_DONE) {
    snprintf(b, cap, "rank %u is done", r);
    return;
  }
  /* The barrier's words only while the wait itself holds it: under a2a3
   * a wait whose cell is reached may still wait for its rank's notify's
   * DDR fence, which the scheduler's reason says. */
  if (x->kind == CS_EV_WAIT && !strncmp(v->rank[r].why, "waiting for ", 12))
    tm_wait_where(t, r, x->slot, x->cell, x->value, where, sizeof(where));
  char *comma = strstr(where, ", "), *of = strstr(where, " barrier of ");
  char *whose = comma ? strstr(comma, " notify") : NULL;
  if (comma && of && whose && of < comma) { /* "READY barrier of RS t1 j0" */
    *comma = *of = *whose = 0;
    if (where[0] >= 'a' && where[0] <= 'z') /* a kind, not a name: "rank 0
                                               waits for rank 3's notify
                                               at the neighbour barrier" */
      snprintf(b, cap, "rank %u waits for %s notify at the %s barrier of %s",
               r, comma + 2, where, of + 12);
    else
      snprintf(b, cap, "rank %u waits for %s %s of %s", r, comma + 2, where,
               of + 12);
  } else if (comma) {
    *comma = 0;
    /* a name with its reason in brackets (ibing's "barrier A of step 1
     * (every earlier write in place)"): the name alone when the line
     * would not fit */
    char *why = strstr(where, " (");
    if (why && (int)(strlen(where) + strlen(comma + 2)) + 40 > COLS)
      *why = 0;
    snprintf(b, cap, "rank %u waits for %s (%s)", r, comma + 2, where);
  } else {
    snprintf(b, cap, "rank %u cannot run: %s", r, v->rank[r].why);
  }
}

/* What the run is at, in one line: why the rank keyed cannot run; else
 * the first rank that waits (blocked_str); else what the highlighted
 * actor does next. */
static void status_line(const teach_session_t *t, const cs_sched_view_t *v,
                        char *b, size_t cap)
{
  char why[200];
  if (!v && t->note_key) { /* digits name ranks on the end screen too */
    snprintf(b, cap, "key %d: the run has ended, no rank runs (%s)",
             t->note_key - 1, t->nstory ? "j then 1-9: a story's event" :
             "b/B: step back");
    return;
  }
  if (!v) {
    snprintf(b, cap, "the run has ended");
    return;
  }
  if (t->qq == TL_QQ_BARRIER) {
    snprintf(b, cap, "rank 0 waits at a barrier: which one? (answer below)");
    return;
  }
  if (t->note_key > (int)t->n) {
    snprintf(b, cap, "key %d: there is no rank %d (ranks 0-%u)",
             t->note_key - 1, t->note_key - 1, t->n - 1);
    return;
  }
  if (t->note_key) {
    blocked_str(t, v, (uint32_t)t->note_key - 1, why, sizeof(why));
    snprintf(b, cap, "key %d: %s", t->note_key - 1, why);
    return;
  }
  uint32_t waiting = 0, first = 0;
  for (uint32_t r = 0; r < t->n; r++)
    if (v->rank[r].state == CS_VIEW_POSTED && actor_of(v, r) < 0 &&
        !waiting++)
      first = r;
  if (waiting) {
    blocked_str(t, v, first, why, sizeof(why));
    if (waiting > 1 && (int)strlen(why) + 16 <= COLS) /* else the why alone */
      snprintf(b, cap, "%s (%u ranks wait)", why, waiting);
    else
      snprintf(b, cap, "%s", why);
    return;
  }
  int c = t->cursor < (int)v->nenabled ? t->cursor : 0;
  tm_sentence(t, why, sizeof(why), &v->en[c].rec);
  snprintf(b, cap, "no rank waits; Enter runs %s", why);
}

/* --lesson's other questions (barrier, cost): the question, its
 * choices, the answer; once answered the reveal in the choices' place. */
static void draw_qq(const teach_session_t *t)
{
  int seen = t->qq == TL_QQ_SEEN;
  attron(A_BOLD);
  put(LINES - 5, 0, "%-*s", COLS, t->qq_text[0]);
  put(LINES - 4, 0, "%-*s", COLS, seen ? t->reveal[0] : t->qq_text[1]);
  attroff(A_BOLD);
  put(LINES - 3, 0, "%-*s", COLS, seen ? t->reveal[1] : t->qq_text[2]);
  put(LINES - 2, 0, "> %-12s (%s)", t->qq_answer, seen ? "any key goes on"
      : t->qq_err[0] ? t->qq_err : t->qq_where[0] ? "two keys, e.g. 1a; "
      "Esc skips; ? help" : "a-c, or type bytes + Enter; Esc skips; ? help");
}

/* A milestone or the lesson's goal, boxed over the middle of the screen
 * (the words are teach_lesson.c's). */
static void draw_overlay(const teach_session_t *t)
{
  char l[TL_OVLINES][TL_OVCOLS];
  int n = tl_overlay(t, t->overlay, l), w = 0;
  for (int i = 0; i < n; i++)
    if ((int)strlen(l[i]) > w)
      w = (int)strlen(l[i]);
  int y0 = (LINES - n - 2) / 2, x0 = (COLS - w - 2) / 2;
  if (x0 < 0)
    x0 = 0;
  attron(A_BOLD);
  for (int i = -1; i <= n; i++) {
    move(y0 + 1 + i, 0);
    clrtoeol(); /* the box's rows hold nothing else */
    put(y0 + 1 + i, x0, " %-*s ", w, i < 0 || i == n ? "" : l[i]);
  }
  attroff(A_BOLD);
}

/* The comparison of two branches (c on the end screen): both outcomes,
 * where the orders diverge and which events moved, both event sequences
 * side by side from the last shared step, and the elements whose
 * contents differ at the end. */
static void draw_compare(const teach_session_t *t)
{
  char b[800], o[480], ea[200], eb[200];
  uint64_t d = tb_diverge(t);
  int y = 0, w = (COLS - 8) / 2, foot = LINES - 1;
  attron(A_BOLD);
  put(y++, 0, "Branches: A = the run you stepped back from, B = this run");
  attroff(A_BOLD);
  snprintf(b, sizeof(b), "A: %llu steps, %s", (unsigned long long)t->branch.n,
           t->branch.outcome);
  y = put_wrapped(y, y + 2, 3, b);
  tb_outcome(t, o, sizeof(o));
  snprintf(b, sizeof(b), "B: %llu steps, %s",
           (unsigned long long)t->st.nevents, o);
  y = put_wrapped(y, y + 2, 3, b);
  if (d)
    snprintf(b, sizeof(b), "Same picks for step%s 0%s%.0llu; they diverge at "
             "step %llu.", d > 1 ? "s" : "", d > 1 ? "-" : "",
             (unsigned long long)d - 1, (unsigned long long)d);
  else
    snprintf(b, sizeof(b), "They diverge at the first step, step 0.");
  put(y++, 0, "%s", b);
  tb_moved(t, b, sizeof(b));
  y = put_wrapped(y, y + 3, 4, b);
  if (tb_story(t, b, sizeof(b)))
    y = put_wrapped(y, y + 3, 4, b);
  tb_windows(t, b, sizeof(b));
  int wl = 1 + (int)strlen(b) / (COLS - 4); /* the windows' lines */
  if (wl > 4)
    wl = 4;
  put(y++, 0, "step   %-*s %s", w, "A (stepped back from)", "B (this run)");
  for (uint64_t s = d ? d - 1 : 0; y < foot - wl - 1; s++) {
    if (s >= t->branch.n && s >= t->st.nevents)
      break;
    tb_event(t, 0, s, ea, sizeof(ea));
    int same = tb_same(t, s);
    if (same)
      snprintf(eb, sizeof(eb), "(same)");
    else
      tb_event(t, 1, s, eb, sizeof(eb));
    if (s == d)
      attron(A_BOLD);
    put(y++, 0, "%c#%-5llu %-*.*s %.*s", s == d ? '>' : ' ',
        (unsigned long long)s, w, w, ea, w, eb);
    attroff(A_BOLD);
  }
  put_wrapped(y + 1 < foot - wl ? y + 1 : y, foot, 4, b);
  put(foot, 0, "any key: back to the end screen   q quit");
}

/* Line 2: a level's goal (broken: the campaign's next level, or where the
 * defect was met upstream; both: the next level's title when it fits),
 * or the lesson's score so far. */
static void draw_goal(const teach_session_t *t, const cs_sched_view_t *v)
{
  char st[240];
  if (t->goal) { /* a level's goal, under the status; broken: the campaign */
    const cs_teach_level_t *l = t->level;
    char next[120] = " Last level.";
    if (l && l->next)
      snprintf(next, sizeof(next), " Next: --level %u, %s.", l->number + 1,
               l->next);
    attron(A_BOLD);
    if (!v && l && t->run_rc) {
      snprintf(st, sizeof(st), "Level %u of %u broken%s%s.", l->number,
               l->total, l->upstream ? "; upstream: " : "",
               l->upstream ? l->upstream : "");
      if (l->next && (int)(strlen(st) + strlen(next)) >= COLS) /* too wide: */
        snprintf(next, sizeof(next), " Next: --level %u.", l->number + 1);
      put(2, 0, "%s%s", st, next);
    } else
      put(2, 0, "Break it: %s", t->goal);
    attroff(A_BOLD);
  } else if (t->lesson) { /* the lesson's score so far */
    tl_progress(t, st, sizeof(st));
    put(2, 0, "%s", st);
  }
}

/* The first line: what runs (a built-in allreduce, or one's own). */
static void draw_title(const teach_session_t *t)
{
  const cs_ar_cfg_t *c = &t->o->cfg;
  if (t->o->coll && t->facts) /* taught as the built-ins are, its op too */
    put(0, 0, "collsim teach: %.30s (your own), %u ranks x %llu %s, %s",
        t->o->coll->name, t->n, (unsigned long long)t->count,
        cs_dtype_name(c->dtype), cs_op_name(c->op));
  else if (t->o->coll)
    put(0, 0, "collsim teach: %.30s (your own), %u ranks x %llu %s",
        t->o->coll->name, t->n, (unsigned long long)t->count,
        cs_dtype_name(c->dtype));
  else
    put(0, 0, "collsim teach: %s allreduce, %u ranks x %llu %s, %s",
        cs_algo_name(c->algo), t->n, (unsigned long long)t->count,
        cs_dtype_name(c->dtype), cs_op_name(c->op));
}

/* The lines under the history: the reveal, the open answer box, the
 * keys (a live run's, or the end screen's). */
static void draw_bottom(const teach_session_t *t, const cs_sched_view_t *v)
{
  if (t->reveal[0][0] && !t->qq) {
    attron(A_BOLD);
    put(LINES - 5, 0, "%-*s", COLS, t->reveal[0]);
    attroff(A_BOLD);
    put(LINES - 4, 0, "%-*s", COLS, t->reveal[1]);
  }
  if (t->qq)
    draw_qq(t);
  else if (t->q_typing) {
    attron(A_BOLD);
    put(LINES - 3, 0, "%-*s", COLS, t->q_text);
    attroff(A_BOLD);
    char ch[160];
    snprintf(ch, sizeof(ch), "a %s  b %s  c %s", t->q_choice[0],
             t->q_choice[1], t->q_choice[2]);
    if (t->q_err[0])
      put(LINES - 2, 0, "> %-10s (%s)", t->answer, t->q_err);
    else if (COLS >= 13 + (int)strlen(ch) + 30) /* the choices, one key */
      put(LINES - 2, 0, "> %-10s %s  (or type; Esc skips)", t->answer, ch);
    else
      put(LINES - 2, 0, "> %-10s %s", t->answer, ch);
  }
  if (v && (t->qq || t->q_typing)) /* an answer box: only its keys */
    put(LINES - 1, 0, "%s Esc skips  t strip  v values  ? help  q quit",
        t->qq == TL_QQ_BARRIER ? "answer: two keys, e.g. 1a;" :
        "answer: a-c, or type it and Enter;");
  else if (v)
    put(LINES - 1, 0, "Enter step 0-9 rank r round n barrier d %s b/B back "
        "v values ? help q quit", t->data_mode ? "events" : "data");
  else /* the end screen: only the keys it takes */
    put(LINES - 1, 0, "b/B back %sv values t strip%s ? help q quit",
        t->nstory ? "j+1-9 story's event " : "",
        tb_ready(t) ? " c compare" : "");
}

void td_draw(const teach_session_t *t, const cs_sched_view_t *v, int help)
{
  int need_c, need_l;
  td_need(t->n, &need_c, &need_l);
  erase();
  if (COLS < need_c || LINES < need_l) {
    char m[160];
    snprintf(m, sizeof(m), "collsim teach: the window is too small (%dx%d); "
             "%u ranks need %dx%d. Resize it, or press q to quit.", COLS,
             LINES, t->n, need_c, need_l);
    put_wrapped(0, LINES, 0, m);
    refresh();
    return;
  }
  if (t->compare && !v && t->branch.n) {
    draw_compare(t);
    if (help)
      draw_help();
    refresh();
    return;
  }
  draw_title(t);
  put(0, COLS - 17, "? help   q quit");
  char st[240];
  status_line(t, v, st, sizeof(st));
  put(1, 0, "%s", st);
  draw_goal(t, v);
  int y = !t->facts ? draw_slots(t, v, 3) : draw_windows(t, 3);
  int last = LINES - 1;
  if (!v && t->reveal[0][0]) /* the end screen: the reveal keeps its lines */
    last -= 4;
  if (v && t->qq)
    last = LINES - 6; /* the box's four lines and a blank */
  else if (v && t->reveal[0][0])
    last = LINES - 5; /* the reveal's two lines (and the answer box's) */
  else if (v && t->q_typing)
    last = LINES - 3; /* the answer box's two lines */
  /* The strip where the room is short (a lesson's box open): the ring's
   * two lines make way for it. */
  int ring = !(v && t->strip && last - (y + 4 + 1 + (int)t->n + 1) <
               (int)t->n + 1);
  if (ring)
    y = draw_ring(t, v, y + 1);
  if (v) { /* the DMA rows leave the history its lines, unless that
              leaves them fewer than 3 (the history then makes way) */
    int dl = last - (t->strip ? (int)t->n + 2 : 4), ya = y + 2 + (int)t->n;
    y = draw_actors(t, v, y + 1, dl - ya < 3 ? last : dl);
  }
  else { /* the end screen: with t the strip keeps its lanes at the
            bottom and the verdict the lines above it */
    int rl = t->strip ? last - (int)t->n - 1 : last;
    y++;
    for (uint32_t i = 0; i < t->nresult; i++)
      y = put_wrapped(y, rl, 4, t->result[i]);
    if (t->strip && y < rl)
      y = rl;
  }
  if (t->strip && draw_strip(t, y, last))
    ;
  else if (last - y > 3)
    draw_events(t, y + 1, last);
  draw_bottom(t, v);
  if (help)
    draw_help();
  else if (t->overlay)
    draw_overlay(t);
  refresh();
}
