/*
 * teach_model.h - the state of the terminal lesson (`collsim teach` on a
 * terminal): the learner's schedule so far, and what the run did up to the
 * current step, tracked event by event from the live engine's granted
 * actors: whose inputs every rank's segments hold ([1+2+3], as
 * collectives/ring.c writes it), the tile, the phase/round/subchunk tag,
 * bytes loaded from other ranks, the last events.
 *
 * Owns the session struct and the tracking. Does not own the screen
 * (teach_draw.c), the keys (teach_ui.c) or the run (cli/collsim/run.c through
 * the callback strategy of sim/sched.h). Stepping back re-runs the prefix
 * of the schedule: a controlled run is a pure function of its choices.
 */
#ifndef CS_TEACH_MODEL_H
#define CS_TEACH_MODEL_H

#include <stdint.h>

#include "../../sim/sched.h"
#include "../collsim/run.h"

enum { TM_MAXR = 8, TM_MAXP = 2 * TM_MAXR, TM_LAST = 6, TM_HIST = 128, TM_QCAP = 256, TM_RESULT = 24,
       TM_MAXSPAN = 128, TM_RD = 2 * TM_MAXR, TM_STORY = 6 };

/* The screens shown over the lesson until a key: the end of the
 * reduce-scatter and of the all-gather (what the learner watched, and the
 * cost it adds up to), the --lesson's goal. */
/* A break-it level: the learner's goal, and the edge the level removed:
 * in words (its fix), and as the check finds it (cs_check_kind_t and,
 * for races, cs_check_cause_t), for the verdict. */
typedef struct cs_teach_level {
  const char *goal, *edge;
  uint32_t    kind, cause;
  /* the campaign: the level's place, the story its first screen tells,
   * where the defect was met upstream (NULL: a textbook defect), and the
   * next level's goal (NULL after the last) */
  uint32_t    number, total;
  const char *title, *story, *upstream, *next;
} cs_teach_level_t;

enum { TM_OV_NONE, TM_OV_RS, TM_OV_AG, TM_OV_GOAL, TM_OV_LEVEL };

typedef struct tm_prov {
  uint8_t n;
  uint8_t r[TM_MAXR]; /* ranks folded in, in order */
} tm_prov_t;

/* Whose inputs a run of a rank's window holds: from element lo up to the
 * next span's lo (the last: to the end). A segment written tile by tile
 * holds different inputs in its tiles until the round has written them
 * all, so the contents are kept per element range, not per segment. */
typedef struct tm_span {
  uint64_t  lo;
  tm_prov_t p;
} tm_span_t;

typedef struct tm_event {
  uint64_t       step;
  uint32_t       phase, round; /* the rank's tag when it ran */
  cs_trace_rec_t rec;          /* as the view gave it */
  int            dma;          /* a DMA engine landed an op: 1 + its kind
                                  (rec.round, the view's), 0 a rank's own
                                  event */
} tm_event_t;

/* What the run did up to the current step (reset at every re-run). */
typedef struct tm_state {
  tm_span_t  span[TM_MAXR][TM_MAXSPAN]; /* [rank]: the window, sorted by lo */
  uint32_t   nspan[TM_MAXR];
  /* an algorithm whose result goes to slot out (onephase): span is that
   * slot, the one drawn, and ispan the data slot, its input, which the
   * peers load; unused otherwise */
  tm_span_t  ispan[TM_MAXR][TM_MAXSPAN];
  uint32_t   nispan[TM_MAXR];
  int        out_slot;
  tm_prov_t  tile[TM_MAXR];          /* the rank's accumulator tile */
  tm_prov_t  recv[TM_MAXR];          /* what its last load into recv holds */
  int        acc_open[TM_MAXR];      /* the tile is being accumulated */
  int        recv_own[TM_MAXR];      /* recv holds the rank's own window */
  int32_t    sigrow[TM_MAXR];        /* signal row it last touched, -1 */
  /* a push algorithm (ring-push): what its last two loads not yet put
   * hold, newest first: [0] the received partial, [1] the own value read
   * before the barrier; a put takes [0] (its staging tile) */
  tm_prov_t  pl[TM_MAXR][2];
  uint8_t    npl[TM_MAXR];
  tm_prov_t  q[TM_MAXR][TM_QCAP];    /* fifo/relaxed: its queued ops' contents */
  uint32_t   nq[TM_MAXR];
  int        tile_seg[TM_MAXR];      /* segment the tile came from, -1 none */
  uint32_t   phase[TM_MAXR], round[TM_MAXR], sub[TM_MAXR];
  uint32_t   marks[TM_MAXR];         /* phase markers passed */
  uint64_t   moved[TM_MAXR];         /* bytes loaded from other ranks */
  tm_event_t last[TM_HIST];          /* ring of the last events (the list
                                        shows TM_LAST, the strip more) */
  uint32_t   nlast;                  /* events in it (<= TM_HIST) */
  uint64_t   nevents;                /* steps applied */
  int        stored_k[TM_MAXR];      /* part last stored in this round, -1 */
  tm_prov_t  stored[TM_MAXR];        /* what went there */
  uint64_t   nremote;                /* data steps: loads from, puts
                                        into another rank's data */
  /* per phase (RS, AG) and rank: the parts it loaded from other ranks, in
   * order (a part of several tiles once), their bytes, and from whom */
  uint8_t    rd[2][TM_MAXR][TM_RD];
  uint64_t   rdb[2][TM_MAXR][TM_RD];
  uint8_t    nrd[2][TM_MAXR];
  uint64_t   moved_ph[2][TM_MAXR];
  uint8_t    rd_from[TM_MAXR];
  /* [phase][round][rank]: what the rank stored in that round, kept when
   * it passed its next marker (--lesson grades it then) */
  uint8_t    rnd_end[3][TM_MAXR][TM_MAXR];
  int8_t     rnd_k[3][TM_MAXR][TM_MAXR];
  tm_prov_t  rnd_p[3][TM_MAXR][TM_MAXR];
} tm_state_t;

/* A run kept to compare with (teach_branch.c): the run the learner
 * stepped back from, to its end. */
typedef struct tm_branch {
  uint64_t        n;      /* its steps */
  int64_t        *choice; /* its picks, by step */
  cs_trace_rec_t *hist;   /* the event each step ran */
  tm_state_t     *st;     /* what the run did, at its end */
  int             rc;     /* its exit code */
  char            outcome[480]; /* what it said of its result */
  uint64_t        story_step[TM_STORY]; /* its story's steps, if it */
  uint32_t        nstory;               /* failed and has one */
} tm_branch_t;

typedef struct teach_session {
  run_opts_t *o;
  /* What it draws (tm_facts, set by tm_reset): NULL for a plug-in that
   * declares no teach facts (its slots drawn as they are); g: the
   * configuration its functions take. */
  const cs_collective_t *facts;
  cs_coll_cfg_t g;
  /* the slots it draws from, its registration's (without facts the
   * built-ins' order): the input (data), the result, the signal cells */
  uint32_t sl_data, sl_out, sl_sig;
  uint32_t    n, es;
  uint64_t    count;
  int         curses;     /* the screen is up */
  /* the schedule */
  int64_t    *choice;     /* the learner's picks, by step */
  uint8_t    *asked;      /* by step: 1 the learner picked it, 0 it ran
                             itself (a run to a round's end, barrier, or
                             between data steps) */
  uint64_t    nchoice, capchoice;
  uint64_t    target;     /* replay choice[0..target) silently, then ask */
  uint64_t   *round_step; /* steps where some rank passed a phase marker */
  uint64_t    nround;
  /* what the current run did */
  tm_state_t  st;
  /* between the UI and the picker */
  int         restart;    /* the picker stopped the run to re-run to target */
  int         quit;
  int         values;     /* show values instead of provenance */
  int         strip;      /* t: the last events as a space-time strip */
  int         cursor;     /* highlighted enabled actor */
  int         note_key;   /* 1 + the rank keyed that cannot run, until the
                             next key; 0 none */
  int         auto_round; /* running to the end of the round */
  int         auto_barrier; /* running until every rank waits at a barrier */
  int         data_mode;  /* d: the learner picks only loads from another
                             rank; every other event runs by itself */
  int         overlay;    /* a screen over the lesson: TM_OV_* */
  uint64_t    ms_step[2]; /* 1 + the step the RS, AG milestone showed at */
  uint8_t     bar_moved[TM_MAXR]; /* ran a non-wait event since */
  uint32_t    round_from[TM_MAXR]; /* marks when the auto-run started */
  uint8_t    *snap;       /* the data windows at the last pick */
  cs_layout_t layout;     /* the world's slot table (for the describer) */
  const cs_teach_level_t *level; /* a break-it level, or NULL */
  int         intro_shown; /* the level's first screen has been shown */
  const char *goal;       /* a break-it level's goal, or NULL */
  const char *edge;       /* the edge the level removed, in words */
  uint32_t    edge_kind, edge_cause; /* as the check finds it */
  int         run_rc;     /* the last run's exit code */
  int         sig_abort;  /* the last run was ended by SIGINT/TERM/HUP */
  char        trace[96];  /* the runs' trace file */
  char        result[TM_RESULT][480]; /* how the last run ended */
  uint32_t    nresult;
  /* break it: "show me" searches seeded random orders after the prefix */
  int         show_me;    /* the learner asked; the driver searches */
  int         searching;  /* the picker picks at random (rand) */
  int         shown;      /* the current schedule was found, not chosen */
  uint64_t    rand;       /* splitmix64 state */
  /* --lesson: predict, then reveal */
  int         lesson;
  int         q_rank;     /* the rank asked about, -1: no question open */
  uint32_t    q_phase, q_round;
  char        q_text[160], answer[64], reveal[2][200];
  char        q_err[80];  /* why the typed answer is not one, or "" */
  char        q_choice[3][48]; /* a-c, one key each: "s0=[1+2]" */
  char        q_pick[3][48];   /* the same, as an answer: "0 1+2" */
  int         q_typing;   /* the answer box is open */
  uint8_t     graded[3][TM_MAXR]; /* [phase][round]: 0 not asked, 1 right,
                                     2 wrong, 3 skipped, 4 answered, its
                                     round not over yet */
  char        said[3][TM_MAXR][40]; /* the answers, by round */
  uint64_t    asked_at[3][TM_MAXR]; /* 1 + the step it was asked at */
  uint64_t    graded_at[3][TM_MAXR]; /* 1 + the step it was graded at */
  int         by_round;   /* the learner ran rounds with r: an answer
                             runs the round it asked about */
  /* --lesson's other questions, answered in a box of their own: which
   * barrier rank 0 waits at (READY, READ-COMPLETE) and what breaks
   * without it, graded at once; the cost, graded at the end */
  int         qq;         /* the box open: TL_QQ_* */
  int         qq_kind;    /* the barrier asked about: 1 READY, 2 RC */
  char        qq_text[3][100], qq_answer[32], qq_err[80];
  char        qq_where[160]; /* the barrier, in the algorithm's words */
  unsigned long long qq_cost[3]; /* the cost's choices a-c, in bytes */
  uint8_t     bar_grade[2];  /* READY, READ-COMPLETE: as graded[] */
  uint64_t    bar_at[2];     /* 1 + the step each was asked at */
  uint8_t     cost_grade;    /* 0 not asked, 1 right, 2 wrong, 3 skipped,
                                4 answered, not graded yet */
  uint64_t    cost_at;       /* 1 + the step it was asked at */
  char        cost_answer[32];
  int         goal_shown; /* --lesson's goal screen has been shown */
  /* every step's posted event (the history), and the steps of the story
   * of the run that failed, while the schedule is that run's */
  cs_trace_rec_t *hist;
  uint8_t    *hist_dma;   /* by step: 1 a DMA engine landed an op (no
                             event of the rank's own) */
  uint64_t    nhist, caphist;
  uint64_t    story_step[TM_STORY], story_seq[TM_STORY];
  uint32_t    nstory;
  /* branches: the run stepped back from (A), kept to compare with the
   * current one when it ends (c) */
  tm_branch_t branch;     /* branch.n == 0: none kept */
  int         compare;    /* the compare screen is up */
} teach_session_t;

/* Forgets what the previous run did (the schedule stays). */
void tm_reset(teach_session_t *t);
/* Accounts for actor `i` of v running now, as step v->step. */
void tm_apply(teach_session_t *t, const cs_sched_view_t *v, int64_t i);
/* Accounts for record x of a free run's trace (no DMA queue) as step
 * `step`: the printed lesson of a push algorithm replays its trace so. */
void tm_replay(teach_session_t *t, const cs_trace_rec_t *x, uint64_t step);
/* Remembers choice c for step `step` (dropping any later ones), and
 * whether the learner made it. Returns 0 or -1 (out of memory). */
int tm_push(teach_session_t *t, uint64_t step, int64_t c, int asked);
/* Whether actor i of v moves data between ranks: a rank's load from
 * another rank's data, or its put into it (the steps of the data-step
 * mode; a plug-in's, in any of its slots). */
int tm_is_data(const teach_session_t *t, const cs_sched_view_t *v,
               uint32_t i);
/* Whether every rank has ended phase ph (1 RS, 2 AG): it is done, in a
 * later phase, or posted at a later phase's marker. */
int tm_phase_over(const teach_session_t *t, const cs_sched_view_t *v,
                  uint32_t ph);
/* Copies every rank's data window out of the live world. */
void tm_snapshot(teach_session_t *t, const cs_world_t *w);
/* The step where the round containing `step` began (0 if none). */
uint64_t tm_round_start(const teach_session_t *t, uint64_t step);
/* Starts a run to the end of the round: a rank posted at a phase marker
 * is to pass it and finish that round. */
void tm_round_begin(teach_session_t *t, const cs_sched_view_t *v);
/* Whether rank r's round is over: it is done, passed the next marker, or
 * is posted at it, and its DMA engine has no op of it left to land. */
int tm_rank_over(const teach_session_t *t, const cs_sched_view_t *v, uint32_t r);
/* Whether the round is over for every rank. */
int tm_round_over(const teach_session_t *t, const cs_sched_view_t *v);
/* Whose inputs element e of rank r's window holds: in the run s
 * describes, in the current run. */
const tm_prov_t *tm_prov_in(const tm_state_t *s, uint32_t r, uint64_t e);
/* Whether two provenances are the same ranks in the same order. */
int tm_prov_same(const tm_prov_t *a, const tm_prov_t *b);
const tm_prov_t *tm_prov_at(const teach_session_t *t, uint32_t r, uint64_t e);
/* Whose inputs part k of rank r's window holds, at its first element;
 * returns 1 when every element of the part holds the same, 0 when its
 * tiles differ (a round has written only some of them). */
int tm_part_prov(const teach_session_t *t, uint32_t r, uint32_t k,
                 const tm_prov_t **p);
/* The same for the input slot `data` where the drawn one is the result
 * slot `out` (st.out_slot: ibing's puts add into it). */
int tm_in_part_prov(const teach_session_t *t, uint32_t r, uint32_t k,
                    const tm_prov_t **p);
/* "[3+0]" into buf. */
void tm_prov_str(char *buf, size_t cap, const tm_prov_t *p);
/* The step at which rank r ran its own event number k (0-based, as the
 * wavefront counts a rank's events): 1 and *step, or 0 when it has not
 * run (it is the rank's posted event, or later). */
int tm_event_step(const teach_session_t *t, uint32_t r, uint64_t k,
                  uint64_t *step);
/* The scheduler's one-line form of event x (cs_trace_sentence), with a
 * phase marker named as the trace names it ("rank 0: enter RS t1",
 * mesh's "rank 0: enter main"). */
void tm_sentence(const teach_session_t *t, char *b, size_t cap,
                 const cs_trace_rec_t *x);
/* The registration teach asks what to draw (its teach facts: part
 * letter, parts, teach flags, legend, volume, the place of a wait): the
 * plug-in's own, or a built-in's (cs_coll_builtin, made from its
 * descriptor); NULL when it declares none (cs_coll_teach). */
const cs_collective_t *tm_facts(const run_opts_t *o);
/* o's configuration as the registration's functions take it. */
cs_coll_cfg_t tm_cfg(const run_opts_t *o);
/* Whether the teach flag f (CS_COLL_TEACH_*) is set (0 without facts). */
int tm_flag(const teach_session_t *t, uint32_t f);
/* Its phase names (for a built-in its descriptor's, for a plug-in its
 * registration's, if any); returns how many, *names NULL for none. */
uint32_t tm_phase_names(const run_opts_t *o, const char *const **names);
/* Where rank r's wait on cell `cell` of `slot` for `target` is, into b
 * (empty when the facts do not say): a built-in's with its --bug's
 * knobs, as the run's own report says it. */
void tm_wait_where(const teach_session_t *t, uint32_t r, uint32_t slot,
                   uint32_t cell, int32_t target, char *b, size_t cap);
/* The parts of the window shown: the ring's N segments, mesh's and host's
 * chunks (at most TM_MAXP), and where part i begins (i = nparts: the end). */
uint32_t tm_nparts(const teach_session_t *t);
uint64_t tm_part_lo(const teach_session_t *t, uint32_t i);
/* The part element e lies in. */
uint32_t tm_seg_of(const teach_session_t *t, uint64_t e);

#endif
