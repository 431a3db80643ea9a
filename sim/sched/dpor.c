/*
 * dpor.c - source-DPOR with sleep sets over controlled runs (sim/dpor.h):
 * the search tree of one run after another, the dependence relation of
 * docs/verify.md (dependent()), the races of a finished run and the
 * backtrack points they add.
 *
 * A node is a step of the current run: the actors enabled there with
 * their pending events, its sleep set, the actors explored from it (done)
 * and the ones still to explore (bt, a superset of done). The picker
 * follows the nodes of the prefix, then makes new ones. Owns only this
 * tree; the caller runs the world.
 */
#include "../dpor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DMA_KEY (1ull << 62)

/* An actor and its pending event. postno: for a rank's posting event
 * (store, put, notify under fifo/relaxed/a2a3), its post number, which is
 * the DMA id its op will get; else 0. */
typedef struct pev {
  uint64_t       key;
  uint64_t       postno;
  cs_trace_rec_t rec;
  uint64_t       flags; /* a rank's event: its CS_EVF_* */
} pev_t;

typedef struct node {
  pev_t    *en;     /* enabled actors, in the view's order */
  uint32_t  nen;
  uint32_t  chosen; /* index into en of the step taken */
  pev_t    *sleep;
  uint32_t  nsleep;
  uint64_t *done, *bt;
  uint32_t  ndone, nbt;
  uint64_t **seq;     /* per bt entry: the rest of the race's reversal
                         (actor keys) it was added for, or NULL */
  uint32_t  *nseq;
  uint64_t  next_key; /* the branch to take next (the prefix's last node) */
  uint32_t  out;      /* split: tasks handed out from here, not done */
} node_t;

struct cs_dpor {
  cs_mm_t        model;
  cs_dpor_mode_t mode;
  cs_layout_t    layout;
  int            have_layout;
  node_t        *node;
  uint64_t       nnode, capnode;
  uint64_t       plen;   /* this run follows nodes [0, plen) */
  uint64_t       len;    /* steps picked in this run */
  uint64_t       depth;  /* of them, steps in the tree (before a block) */
  uint32_t      *choice; /* len */
  uint64_t       capchoice;
  uint64_t       posts[CS_MAX_RANKS]; /* posts in the tree, per rank */
  uint64_t       npost[CS_MAX_RANKS], nland[CS_MAX_RANKS]; /* whole run */
  int            started, blocked;
  const char    *err;
  uint64_t      *hb;     /* len x words bits: happens-before */
  size_t         hbcap;
  uint64_t      *hb1;    /* the first pass's (happens_before()) */
  uint64_t      *need;   /* per step of a quiet wait: the last write of its
                            cell it needs, +1 (0: none; UINT64_MAX: all) */
  size_t         needcap;
  uint64_t      *gsrc, *guide; /* the branch's reversal, and what is left of
                                  it in this run: new nodes take it first */
  uint32_t       ngsrc, nguide;
  cs_dpor_stats_t st;
  /* A subtree (cs_dpor_create_sub): nodes [0, root) are the task's
   * prefix, taken by key (rkey), the last one sleeping rsleep; races
   * reversed there go to rep for the coordinator. */
  uint64_t       root;
  uint64_t      *rkey;
  pev_t         *rsleep;
  uint32_t       nrsleep;
  uint64_t      *rep;
  size_t         nrep, caprep;
};

/* ------------------------------------------------------------ sets */

static int has_key(const uint64_t *s, uint32_t n, uint64_t k)
{
  for (uint32_t i = 0; i < n; i++)
    if (s[i] == k)
      return 1;
  return 0;
}

static int asleep(const node_t *nd, uint64_t k)
{
  for (uint32_t i = 0; i < nd->nsleep; i++)
    if (nd->sleep[i].key == k)
      return 1;
  return 0;
}

/* Adds k to a key set of at most `cap` (the node's enabled count). */
static void add_key(uint64_t *s, uint32_t *n, uint64_t k)
{
  if (!has_key(s, *n, k))
    s[(*n)++] = k;
}

static int en_index(const pev_t *en, uint32_t n, uint64_t k)
{
  for (uint32_t i = 0; i < n; i++)
    if (en[i].key == k)
      return (int)i;
  return -1;
}

/* ------------------------------------------------- the relation */

/* The reduced search (a planted variant of it included). */
static int reducing(const cs_dpor_t *x)
{
  return x->mode == CS_DPOR_REDUCE || x->mode == CS_DPOR_QUIET_LOOSE ||
         x->mode == CS_DPOR_QUIET_SLEEP;
}

typedef struct fp {
  uint32_t win;    /* whose window */
  uint64_t lo, hi; /* bytes [lo, hi) */
  int      wr;     /* writes (a wait counts as one) */
  int      add;    /* an AtomicAdd notify: commutes with another */
} fp_t;

static int is_land(const pev_t *e) { return e->rec.kind == CS_TR_DMA_POST; }

static int is_post_kind(cs_mm_t m, uint32_t kind)
{
  return m != CS_MM_SC &&
         (kind == CS_EV_STORE || kind == CS_EV_PUT || kind == CS_EV_NOTIFY);
}

/* The byte range of a data access (a 2-D one from its first row to the
 * last row's end) or of a signal cell; a slot or cell out of range (the
 * run faults there) is the whole window. */
static void range_of(const cs_dpor_t *x, const cs_trace_rec_t *r, int cell,
                     fp_t *f)
{
  const cs_layout_t *l = &x->layout;
  f->lo = 0;
  f->hi = UINT64_MAX;
  if (r->slot >= l->nslots)
    return;
  const cs_slot_t *s = &l->slot[r->slot];
  if (cell) {
    if (!cs_slot_cell_ok(s, r->cell))
      return;
    f->lo = cs_slot_cell_off(s, r->cell);
    f->hi = f->lo + 4;
    return;
  }
  uint64_t elems = r->phys > r->valid ? r->phys : r->valid;
  uint64_t rows = r->cell > 1 ? r->cell : 1;
  uint64_t span = (rows - 1) * (uint64_t)(uint32_t)r->value + elems;
  f->lo = s->off + r->elem_off * s->esize;
  f->hi = f->lo + span * s->esize;
}

/* a2a3: [lo, hi) widened to whole 64-byte lines. */
static void to_lines(fp_t *f)
{
  f->lo &= ~(uint64_t)(CS_LINE_BYTES - 1);
  f->hi = f->hi > UINT64_MAX - CS_LINE_BYTES ? UINT64_MAX
          : (f->hi + CS_LINE_BYTES - 1) & ~(uint64_t)(CS_LINE_BYTES - 1);
}

static int footprint_of(const cs_dpor_t *x, const pev_t *e, fp_t *f);

/* What event e does to window bytes: 0 nothing, 1 *f. Under a2a3 every
 * range is widened to its lines (a Set's landing writes its whole line, a
 * cell read or wait fills its line into the rank's cache), and a Set's
 * issue reads its line (the write-back is that line as read then). */
static int footprint(const cs_dpor_t *x, const pev_t *e, fp_t *f)
{
  if (x->model != CS_MM_A2A3 || x->mode == CS_DPOR_CELLS)
    return footprint_of(x, e, f);
  const cs_trace_rec_t *r = &e->rec;
  int k;
  if (!is_land(e) && r->kind == CS_EV_NOTIFY && r->opcmp == CS_NOTIFY_SET) {
    f->win = r->peer;
    f->add = 0;
    f->wr = 0;
    range_of(x, r, 1, f);
    k = 1;
  } else {
    k = footprint_of(x, e, f);
  }
  if (k)
    to_lines(f);
  return k;
}

static int footprint_of(const cs_dpor_t *x, const pev_t *e, fp_t *f)
{
  const cs_trace_rec_t *r = &e->rec;
  uint32_t kind = is_land(e) ? r->round : r->kind;
  int takes_effect = is_land(e) || !is_post_kind(x->model, kind);
  f->win = r->peer;
  f->add = 0;
  f->wr = 1;
  switch (kind) {
  case CS_EV_LOAD:
    f->wr = 0;
    range_of(x, r, 0, f);
    return 1;
  case CS_EV_READ:
    f->wr = 0;
    range_of(x, r, 1, f);
    return 1;
  case CS_EV_STORE:
  case CS_EV_PUT:
    /* A reducing put (cs_put_reduce) stays a write that conflicts with
     * another one into the same bytes, unlike two Add notifies: binary32
     * additions in another order round to other bits. */
    range_of(x, r, 0, f);
    return takes_effect;
  case CS_EV_NOTIFY:
    f->add = r->opcmp == CS_NOTIFY_ADD;
    range_of(x, r, 1, f);
    return takes_effect;
  case CS_EV_WAIT:
    f->win = r->rank; /* its own cell, read and (self-clearing) written */
    range_of(x, r, 1, f);
    return 1;
  default:
    return 0; /* fences (below), reduce, mark, dcci outside a2a3 */
  }
}

static int conflict(const fp_t *a, const fp_t *b)
{
  return a->win == b->win && a->lo < b->hi && b->lo < a->hi &&
         (a->wr || b->wr) && !(a->add && b->add);
}

/* A wait verify may reorder with the AtomicAdds it does not need: a Ge
 * wait whose value the program never sees (cs_wait_until), outside a2a3
 * (whose waits read through a cache). */
static int quiet_wait(const cs_dpor_t *x, const pev_t *e)
{
  return reducing(x) && x->model != CS_MM_A2A3 && !is_land(e) &&
         e->rec.kind == CS_EV_WAIT && (e->flags & CS_EVF_QUIET) &&
         e->rec.opcmp == CS_CMP_GE;
}

/* A notify that changes its cell at this step (issued under sc, landing
 * under fifo and relaxed) by an AtomicAdd of any value. */
static int adds(const cs_dpor_t *x, const pev_t *e)
{
  const cs_trace_rec_t *r = &e->rec;
  uint32_t kind = is_land(e) ? r->round : r->kind;
  return kind == CS_EV_NOTIFY && r->opcmp == CS_NOTIFY_ADD &&
         (is_land(e) || x->model == CS_MM_SC);
}

/* An add of a value >= 0. */
static int grows(const cs_dpor_t *x, const pev_t *e)
{
  return adds(x, e) && e->rec.value >= 0;
}

/* A landing and an event of the rank whose queue it is. */
static int queue_dep(const pev_t *land, const pev_t *r)
{
  return r->rec.rank == land->rec.rank && !is_land(r) &&
         (cs_ev_is_ordering(r->rec.kind) || r->postno == land->rec.dma_id);
}

/* docs/verify.md, "The equivalence": whether a and b are dependent. */
static int dependent(const cs_dpor_t *x, const pev_t *a, const pev_t *b)
{
  if (x->mode == CS_DPOR_UNSOUND)
    return 0;
  if (a->key == b->key || x->mode == CS_DPOR_EXHAUSTIVE)
    return 1;
  if (x->model == CS_MM_A2A3 && x->mode != CS_DPOR_CELLS) {
    /* A landing of rank r's queue and any event of rank r: fences, a
     * notify's own DDR fence, a fill of a line its queued writes change
     * and a full queue all wait for landings, and the pending event does
     * not say which holds it. */
    if (is_land(a) != is_land(b) && a->rec.rank == b->rec.rank)
      return 1;
  } else if ((is_land(a) && queue_dep(a, b)) || (is_land(b) && queue_dep(b, a))) {
    return 1;
  }
  fp_t fa, fb;
  return footprint(x, a, &fa) && footprint(x, b, &fb) && conflict(&fa, &fb);
}

/* ------------------------------------------------------------ tree */

int cs_dpor_create(cs_dpor_t **out, cs_mm_t m, cs_dpor_mode_t mode)
{
  cs_dpor_t *x = calloc(1, sizeof(*x));
  if (!x)
    return -ENOMEM;
  x->model = m;
  x->mode = mode;
  *out = x;
  return 0;
}

static void free_node(node_t *nd)
{
  for (uint32_t i = 0; nd->seq && i < nd->nbt; i++)
    free(nd->seq[i]);
  free(nd->seq);
  free(nd->nseq);
  free(nd->en);
  free(nd->sleep);
  free(nd->done);
  free(nd->bt);
  memset(nd, 0, sizeof(*nd));
}

void cs_dpor_destroy(cs_dpor_t *x)
{
  if (!x)
    return;
  for (uint64_t i = 0; i < x->nnode; i++)
    free_node(&x->node[i]);
  free(x->node);
  free(x->choice);
  free(x->hb);
  free(x->need);
  free(x->hb1);
  free(x->rkey);
  free(x->rsleep);
  free(x->gsrc);
  free(x->guide);
  free(x->rep);
  free(x);
}

static void start_run(cs_dpor_t *x)
{
  x->nguide = x->guide ? x->ngsrc : 0;
  if (x->nguide)
    memcpy(x->guide, x->gsrc, x->ngsrc * sizeof(uint64_t));
  x->len = 0;
  x->depth = 0;
  x->blocked = 0;
  x->err = NULL;
  memset(x->posts, 0, sizeof(x->posts));
  memset(x->npost, 0, sizeof(x->npost));
  memset(x->nland, 0, sizeof(x->nland));
}

void cs_dpor_retry(cs_dpor_t *x)
{
  while (x->nnode > x->plen)
    free_node(&x->node[--x->nnode]);
  if (x->plen) {
    node_t *nd = &x->node[x->plen - 1];
    for (uint32_t i = 0; i < nd->ndone; i++)
      if (nd->done[i] == nd->next_key)
        nd->done[i] = nd->done[--nd->ndone];
  }
  start_run(x);
}

/* The run about to take bt entry i of nd follows that entry's reversal
 * (docs/verify.md, "Guided branches"). */
static void set_guide(cs_dpor_t *x, const node_t *nd, uint32_t i)
{
  uint32_t n = nd->seq && nd->seq[i] ? nd->nseq[i] : 0;
  x->ngsrc = 0;
  if (!n)
    return;
  uint64_t *a = realloc(x->gsrc, n * sizeof(uint64_t));
  if (!a)
    return;
  x->gsrc = a;
  uint64_t *b = realloc(x->guide, n * sizeof(uint64_t));
  if (!b)
    return;
  x->guide = b;
  memcpy(x->gsrc, nd->seq[i], n * sizeof(uint64_t));
  x->ngsrc = n;
}

/* The deepest node with an actor to explore that is neither explored nor
 * asleep: it becomes the prefix's last node. */
int cs_dpor_next(cs_dpor_t *x)
{
  start_run(x);
  if (!x->started) {
    x->started = 1;
    x->plen = 0;
    return 1;
  }
  while (x->nnode > x->root) {
    node_t *nd = &x->node[x->nnode - 1];
    for (uint32_t i = 0; i < nd->nbt; i++) {
      uint64_t k = nd->bt[i];
      if (!has_key(nd->done, nd->ndone, k) && !asleep(nd, k)) {
        nd->next_key = k;
        x->plen = x->nnode;
        set_guide(x, nd, i);
        start_run(x);
        return 1;
      }
    }
    free_node(nd);
    x->nnode--;
  }
  return 0;
}

cs_dpor_stats_t cs_dpor_stats(const cs_dpor_t *x) { return x->st; }

const uint32_t *cs_dpor_choices(const cs_dpor_t *x, uint64_t *n)
{
  *n = x->len;
  return x->choice;
}

/* ------------------------------------------------------------ picking */

static uint64_t key_of(const cs_dpor_t *x, const cs_sched_actor_view_t *a)
{
  if (a->op < 0)
    return a->rank;
  uint64_t k = DMA_KEY | (uint64_t)a->rank << 40;
  return x->model == CS_MM_FIFO ? k : k | (a->rec.dma_id & ((1ull << 40) - 1));
}

static int fill_en(cs_dpor_t *x, const cs_sched_view_t *v, pev_t *en)
{
  for (uint32_t i = 0; i < v->nenabled; i++) {
    const cs_sched_actor_view_t *a = &v->en[i];
    en[i].key = key_of(x, a);
    en[i].rec = a->rec;
    en[i].flags = a->op < 0 ? a->flags : 0;
    en[i].postno = a->op < 0 && is_post_kind(x->model, a->rec.kind) &&
                           a->rank < CS_MAX_RANKS
                       ? x->posts[a->rank] + 1 : 0;
    /* an enabled wait: the value its cell holds now, which it will see
     * (outside a2a3, whose waits read through a cache) */
    const cs_layout_t *l = &x->layout;
    if (a->op < 0 && a->rec.kind == CS_EV_WAIT && x->model != CS_MM_A2A3 &&
        a->rec.slot < l->nslots && a->rank < v->nranks &&
        cs_slot_cell_ok(&l->slot[a->rec.slot], a->rec.cell))
      en[i].rec.observed = __atomic_load_n(
          (const int32_t *)(cs_world_window(v->w, a->rank) +
                            cs_slot_cell_off(&l->slot[a->rec.slot],
                                             a->rec.cell)),
          __ATOMIC_ACQUIRE);
    /* a notify about to write its cell (issued under sc, landing under
     * fifo and relaxed): the value the cell holds before it */
    uint32_t k = a->op >= 0 ? a->rec.round : a->rec.kind;
    if (k == CS_EV_NOTIFY && x->model != CS_MM_A2A3 &&
        (a->op >= 0 || x->model == CS_MM_SC) && a->rec.peer < v->nranks &&
        a->rec.slot < l->nslots &&
        cs_slot_cell_ok(&l->slot[a->rec.slot], a->rec.cell))
      en[i].rec.observed = __atomic_load_n(
          (const int32_t *)(cs_world_window(v->w, a->rec.peer) +
                            cs_slot_cell_off(&l->slot[a->rec.slot],
                                             a->rec.cell)),
          __ATOMIC_ACQUIRE);
  }
  return 0;
}

/* A rank whose post is not enabled: its queue or arena is full, which the
 * relation does not cover (a landing would enable it). */
static int queue_full(const cs_dpor_t *x, const cs_sched_view_t *v)
{
  if (x->model == CS_MM_A2A3 || !reducing(x))
    return 0;
  for (uint32_t r = 0; r < v->nranks; r++)
    if (v->rank[r].state == CS_VIEW_POSTED && !v->rank[r].enabled &&
        is_post_kind(x->model, v->rank[r].rec.kind))
      return 1;
  return 0;
}

static int grow(cs_dpor_t *x)
{
  if (x->nnode < x->capnode)
    return 0;
  uint64_t cap = x->capnode ? 2 * x->capnode : 256;
  node_t *nn = realloc(x->node, cap * sizeof(*nn));
  if (!nn)
    return -1;
  x->node = nn;
  memset(nn + x->capnode, 0, (cap - x->capnode) * sizeof(*nn));
  x->capnode = cap;
  return 0;
}

/* Records choice c of step i (every step, in the tree or not), and
 * counts posts and landings. */
static int take(cs_dpor_t *x, const cs_sched_view_t *v, uint64_t i, int64_t c)
{
  const cs_sched_actor_view_t *a = &v->en[c];
  if (a->rank < CS_MAX_RANKS && a->op >= 0)
    x->nland[a->rank]++;
  else if (a->rank < CS_MAX_RANKS && is_post_kind(x->model, a->rec.kind))
    x->npost[a->rank]++;
  if (i >= x->capchoice) {
    uint64_t cap = x->capchoice ? 2 * x->capchoice : 256;
    uint32_t *n = realloc(x->choice, cap * sizeof(*n));
    if (!n) {
      x->err = "out of memory";
      return -1;
    }
    x->choice = n;
    x->capchoice = cap;
  }
  x->choice[i] = (uint32_t)c;
  x->len = i + 1;
  return (int)c;
}

/* The sleep set of a new node after its parent p took p->en[p->chosen]:
 * p's sleepers and its explored siblings, those independent of it. */
static int inherit_sleep(cs_dpor_t *x, const node_t *p, node_t *nd)
{
  const pev_t *t = &p->en[p->chosen];
  nd->sleep = malloc((p->nsleep + p->nen + 1) * sizeof(pev_t));
  if (!nd->sleep)
    return -1;
  for (uint32_t i = 0; i < p->nsleep + p->nen; i++) {
    const pev_t *c = i < p->nsleep ? &p->sleep[i] : &p->en[i - p->nsleep];
    if (i >= p->nsleep && (!has_key(p->done, p->ndone, c->key) ||
                           c->key == t->key))
      continue;
    int planted = x->mode == CS_DPOR_QUIET_SLEEP &&
                  ((quiet_wait(x, c) && grows(x, t)) ||
                   (quiet_wait(x, t) && grows(x, c)));
    if (!asleep(nd, c->key) && (planted || !dependent(x, c, t)))
      nd->sleep[nd->nsleep++] = *c;
  }
  return 0;
}

/* A node of a subtree's prefix (i < root): the task's actor, the last
 * one with the task's sleep set (the coordinator's sleepers there and the
 * branches it handed out before this one). */
static int64_t sub_prefix(cs_dpor_t *x, node_t *nd, uint64_t i)
{
  int c = en_index(nd->en, nd->nen, x->rkey[i]);
  if (c < 0)
    return -2;
  if (i + 1 == x->root && x->nrsleep) {
    nd->sleep = malloc(x->nrsleep * sizeof(pev_t));
    if (!nd->sleep)
      return -2;
    memcpy(nd->sleep, x->rsleep, x->nrsleep * sizeof(pev_t));
    nd->nsleep = x->nrsleep;
  }
  nd->chosen = (uint32_t)c;
  add_key(nd->done, &nd->ndone, nd->en[c].key);
  add_key(nd->bt, &nd->nbt, nd->en[c].key);
  return c;
}

/* A new node at step i; returns the index to take, -1 blocked, -2 error. */
static int64_t new_node(cs_dpor_t *x, const cs_sched_view_t *v, uint64_t i)
{
  if (grow(x) < 0)
    return -2;
  node_t *nd = &x->node[x->nnode++];
  uint32_t n = v->nenabled;
  nd->en = malloc(n * sizeof(pev_t));
  nd->done = malloc(n * sizeof(uint64_t));
  nd->bt = malloc(n * sizeof(uint64_t));
  nd->seq = calloc(n, sizeof(uint64_t *));
  nd->nseq = calloc(n, sizeof(uint32_t));
  if (!nd->en || !nd->done || !nd->bt || !nd->seq || !nd->nseq)
    return -2;
  nd->nen = n;
  fill_en(x, v, nd->en);
  if (i < x->root)
    return sub_prefix(x, nd, i);
  if (i > 0 && x->mode != CS_DPOR_EXHAUSTIVE &&
      inherit_sleep(x, &x->node[i - 1], nd) < 0)
    return -2;
  int64_t c = -1;
  for (uint32_t g = 0; g < x->nguide && c < 0; g++) {
    int e = en_index(nd->en, n, x->guide[g]);
    if (e >= 0 && !asleep(nd, x->guide[g]))
      c = e;
  }
  for (uint32_t k = 0; k < n && c < 0; k++)
    if (!asleep(nd, nd->en[k].key))
      c = k;
  if (c < 0) {
    free_node(nd);
    x->nnode--;
    return -1;
  }
  for (uint32_t g = 0; g < x->nguide; g++) /* taken: off the guide */
    if (x->guide[g] == nd->en[c].key) {
      memmove(x->guide + g, x->guide + g + 1,
              (x->nguide - g - 1) * sizeof(uint64_t));
      x->nguide--;
      break;
    }
  nd->chosen = (uint32_t)c;
  add_key(nd->done, &nd->ndone, nd->en[c].key);
  add_key(nd->bt, &nd->nbt, nd->en[c].key);
  for (uint32_t k = 0; x->mode == CS_DPOR_EXHAUSTIVE && k < n; k++)
    add_key(nd->bt, &nd->nbt, nd->en[k].key);
  return c;
}

/* A node of the prefix: the same actor as before (the prefix's last node:
 * the branch to take), found by key; the same event, or the run is not
 * deterministic. */
static int64_t old_node(cs_dpor_t *x, const cs_sched_view_t *v, uint64_t i)
{
  node_t *nd = &x->node[i];
  if (v->nenabled != nd->nen)
    return -2;
  pev_t en[v->nenabled];
  fill_en(x, v, en);
  uint64_t k = i + 1 == x->plen ? nd->next_key : nd->en[nd->chosen].key;
  int c = en_index(en, v->nenabled, k);
  if (c < 0 || memcmp(&en[c].rec.elem_off, &nd->en[c].rec.elem_off, 48) != 0)
    return -2;
  if (i + 1 == x->plen) {
    nd->chosen = (uint32_t)c;
    nd->en[c] = en[c];
    add_key(nd->done, &nd->ndone, k);
  }
  return c;
}

int64_t cs_dpor_pick(const cs_sched_view_t *v, void *arg)
{
  cs_dpor_t *x = arg;
  uint64_t i = v->step;
  if (x->err)
    return -1;
  if (!x->have_layout) {
    x->layout = v->w->ctl->layout;
    x->have_layout = 1;
  }
  if (i != x->len) {
    x->err = "a step was taken without the picker";
    return -1;
  }
  if (x->blocked) /* past a block: run to the end, outside the tree */
    return take(x, v, i, 0);
  if (queue_full(x, v)) {
    x->err = "a post found its DMA queue full (verify assumes room)";
    return -1;
  }
  int64_t c = i < x->plen ? old_node(x, v, i) : new_node(x, v, i);
  if (c == -1) {
    x->blocked = 1; /* every enabled actor asleep: a redundant run */
    return take(x, v, i, 0);
  }
  if (c < 0) {
    x->err = i < x->plen ? "the run is not deterministic: the same choices "
                           "met other events"
                         : "out of memory";
    return -1;
  }
  const pev_t *e = &x->node[i].en[c];
  if (e->postno && e->rec.rank < CS_MAX_RANKS)
    x->posts[e->rec.rank]++;
  x->depth = i + 1;
  return take(x, v, i, c);
}

int64_t cs_dpor_replay_pick(const cs_sched_view_t *v, void *arg)
{
  const cs_dpor_replay_t *r = arg;
  if (v->step >= r->n || r->choice[v->step] >= v->nenabled)
    return -1;
  return r->choice[v->step];
}

/* ------------------------------------------------------------ races */

static const pev_t *ev_at(const cs_dpor_t *x, uint64_t k)
{
  return &x->node[k].en[x->node[k].chosen];
}

#define BIT(hb, w, k, j) ((hb)[(k) * (w) + (j) / 64] >> ((j) % 64) & 1)

/* Whether step m writes the cell of wait f (its footprint fw): a notify,
 * store or put into its bytes; other waits are no writes here. */
static int writes_cell(const cs_dpor_t *x, uint64_t m, const fp_t *fw)
{
  const pev_t *e = ev_at(x, m);
  fp_t fe;
  return !(!is_land(e) && e->rec.kind == CS_EV_WAIT) && footprint(x, e, &fe) &&
         fe.wr && fe.win == fw->win && fe.lo < fw->hi && fw->lo < fe.hi;
}

/* The writes a quiet wait at step k needs (docs/verify.md, "Waits"): when
 * every write of its cell before it is an AtomicAdd, every one of a value
 * < 0 (dependent() orders them) and the shortest prefix (in run order) of
 * the others after which the cell, from the value it started at (what the
 * wait saw less all of them) with the negative ones, already meets the
 * condition; else all of them. Returns the prefix's last index + 1, 0 for
 * none, UINT64_MAX for all. */
static uint64_t needed(const cs_dpor_t *x, uint64_t k)
{
  const pev_t *b = ev_at(x, k);
  fp_t fw;
  footprint(x, b, &fw);
  int64_t sum = 0, neg = 0;
  for (uint64_t m = 0; m < k; m++) {
    if (!writes_cell(x, m, &fw))
      continue;
    if (!adds(x, ev_at(x, m)))
      return UINT64_MAX;
    sum += ev_at(x, m)->rec.value;
    neg += ev_at(x, m)->rec.value < 0 ? ev_at(x, m)->rec.value : 0;
  }
  int64_t cell = (int64_t)b->rec.observed - sum + neg;
  for (uint64_t m = 0; m < k; m++) {
    if (cell >= b->rec.value)
      return m; /* the writes before m are enough */
    if (writes_cell(x, m, &fw) && ev_at(x, m)->rec.value >= 0)
      cell += ev_at(x, m)->rec.value;
  }
  return cell >= b->rec.value ? k : UINT64_MAX;
}

/* Whether every add >= 0 the quiet wait j needs happens before step k in
 * happens-before h (the first pass's): then an add k after the wait can
 * stand in for none of them, in any order of this class (a negative one
 * needs no stand-in: without it the cell only holds more). */
static int needs_before(const cs_dpor_t *x, const uint64_t *h, uint64_t j,
                        uint64_t k, uint64_t w)
{
  if (x->need[j] == UINT64_MAX)
    return 0;
  fp_t fw;
  footprint(x, ev_at(x, j), &fw);
  for (uint64_t m = 0; m < x->need[j]; m++)
    if (writes_cell(x, m, &fw) && grows(x, ev_at(x, m)) && !BIT(h, w, k, m))
      return 0;
  return 1;
}

/* dependent() for steps j < k of this run (docs/verify.md, "Waits"): a
 * quiet wait k and an add before it of its cell are dependent when k
 * needs it (needed()); a quiet wait j and an add k after it of its cell
 * when the add might stand in for a write j needs (needs_before(); the
 * first pass of happens_before() calls them independent). */
static int dep_run(const cs_dpor_t *x, uint64_t j, uint64_t k, uint64_t w)
{
  const pev_t *a = ev_at(x, j), *b = ev_at(x, k);
  if (a->key == b->key)
    return 1;
  fp_t fw;
  if (quiet_wait(x, b) && grows(x, a)) {
    footprint(x, b, &fw);
    return writes_cell(x, j, &fw) &&
           (x->need[k] == UINT64_MAX || j < x->need[k]);
  }
  if (quiet_wait(x, a) && grows(x, b)) {
    footprint(x, a, &fw);
    return writes_cell(x, k, &fw) && x->hb1 &&
           x->mode != CS_DPOR_QUIET_LOOSE && !needs_before(x, x->hb1, j, k, w);
  }
  return dependent(x, a, b);
}

/* hb[k]: the steps before k that happen before it (a chain of dependent
 * steps, program order included). */
static void hb_pass(cs_dpor_t *x, uint64_t n, uint64_t w)
{
  memset(x->hb, 0, (size_t)(n * w) * sizeof(uint64_t));
  for (uint64_t k = 0; k < n; k++) {
    uint64_t *hk = x->hb + k * w;
    for (uint64_t j = k; j-- > 0;) {
      if (BIT(x->hb, w, k, j) || !dep_run(x, j, k, w))
        continue;
      const uint64_t *hj = x->hb + j * w;
      for (uint64_t q = 0; q < w; q++)
        hk[q] |= hj[q];
      hk[j / 64] |= 1ull << (j % 64);
    }
  }
}

/* Two passes: the first with every quiet wait independent of the adds
 * after it, the second with those an add might stand in for (dep_run()),
 * decided on the first; more edges keep every add the first pass found
 * after the writes a wait needs after them. */
static int happens_before(cs_dpor_t *x, uint64_t n, uint64_t w)
{
  size_t need = (size_t)(n * w);
  if (need > x->hbcap) {
    uint64_t *h = realloc(x->hb, need * sizeof(uint64_t));
    uint64_t *h1 = h ? realloc(x->hb1, need * sizeof(uint64_t)) : NULL;
    if (h)
      x->hb = h;
    if (!h1)
      return -1;
    x->hb1 = h1;
    x->hbcap = need;
  }
  uint64_t *h1 = x->hb1;
  x->hb1 = NULL;
  hb_pass(x, n, w);
  x->hb1 = h1;
  memcpy(x->hb1, x->hb, need * sizeof(uint64_t));
  hb_pass(x, n, w);
  return 0;
}

static int push_rep(cs_dpor_t *x, uint64_t word)
{
  if (x->nrep == x->caprep) {
    size_t cap = x->caprep ? 2 * x->caprep : 256;
    uint64_t *n = realloc(x->rep, cap * sizeof(*n));
    if (!n)
      return -1;
    x->rep = n;
    x->caprep = cap;
  }
  x->rep[x->nrep++] = word;
  return 0;
}

/* A race to reverse at node j of a subtree's prefix: the coordinator's
 * node. Its initials (keys, in order) go to rep as [j, n, keys...]; the
 * coordinator applies the rule of reverse() there (cs_dpor_apply). */
static void report(cs_dpor_t *x, uint64_t j, const uint64_t *v, uint64_t nv,
                   uint64_t w)
{
  uint64_t keys[nv], n = 0;
  for (uint64_t a = 0; a < nv; a++) {
    uint64_t key = ev_at(x, v[a])->key;
    int first = 1, initial = 1;
    for (uint64_t b = 0; b < a && first; b++) {
      first = ev_at(x, v[b])->key != key;
      initial = initial && !BIT(x->hb, w, v[a], v[b]);
    }
    if (first && initial)
      keys[n++] = key;
  }
  size_t at = x->nrep;
  int bad = push_rep(x, j) < 0 || push_rep(x, n) < 0;
  for (uint64_t a = 0; a < n && !bad; a++)
    bad = push_rep(x, keys[a]) < 0;
  if (bad) {
    x->nrep = at;
    x->err = "out of memory";
  }
}

/* The race j < k: at node j, some initial of v (the steps after j not
 * after it in happens-before, then k) must be in the backtrack set. */
static void reverse(cs_dpor_t *x, uint64_t j, uint64_t k, uint64_t w)
{
  node_t *nd = &x->node[j];
  uint64_t v[k - j], nv = 0;
  for (uint64_t m = j + 1; m < k; m++)
    if (!BIT(x->hb, w, m, j))
      v[nv++] = m;
  v[nv++] = k;
  if (j < x->root) {
    report(x, j, v, nv, w);
    return;
  }
  int pick = -1, sleeping = -1;
  for (uint64_t a = 0; a < nv; a++) {
    uint64_t key = ev_at(x, v[a])->key;
    int first = 1, initial = 1;
    for (uint64_t b = 0; b < a && first; b++) {
      first = ev_at(x, v[b])->key != key;
      initial = initial && !BIT(x->hb, w, v[a], v[b]);
    }
    if (!first || !initial)
      continue;
    if (has_key(nd->bt, nd->nbt, key))
      return; /* an initial is there already */
    int e = en_index(nd->en, nd->nen, key);
    if (e >= 0 && !asleep(nd, key) && pick < 0)
      pick = e;
    if (e >= 0 && sleeping < 0)
      sleeping = e;
  }
  if (pick < 0)
    pick = sleeping;
  /* No initial enabled at j: only k's actor can be (every other initial
   * ran later with nothing it depends on in between), so step j enabled
   * it and the race cannot be reversed. */
  if (pick < 0)
    return;
  uint64_t key = nd->en[pick].key;
  add_key(nd->bt, &nd->nbt, key);
  /* The reversal itself, the picked actor's first step left out: the run
   * that takes this branch follows it (guided branches). */
  uint32_t b = nd->nbt - 1, ns = 0, skipped = 0;
  if (!nd->seq || nd->bt[b] != key || nd->seq[b])
    return;
  nd->seq[b] = malloc(nv * sizeof(uint64_t));
  for (uint64_t a = 0; nd->seq[b] && a < nv; a++) {
    uint64_t ka = ev_at(x, v[a])->key;
    if (ka == key && !skipped)
      skipped = 1;
    else
      nd->seq[b][ns++] = ka;
  }
  nd->nseq[b] = ns;
}

/* Whether j -> k is a race: different actors, dependent, and no step in
 * between after j and before k. */
static int is_race(const cs_dpor_t *x, uint64_t j, uint64_t k, uint64_t w)
{
  const pev_t *a = ev_at(x, j), *b = ev_at(x, k);
  if (a->key == b->key || !dep_run(x, j, k, w))
    return 0;
  /* Causal pairs, never reversed (docs/verify.md, "Races that cannot be
   * reversed"): a post and its own landing; outside a2a3, a landing of
   * rank r's queue and a later fence of rank r, which runs only once the
   * queue is empty. */
  if (reducing(x) && a->rec.rank == b->rec.rank) {
    if (!is_land(a) && is_land(b) && a->postno && a->postno == b->rec.dma_id)
      return 0;
    if (x->model != CS_MM_A2A3 && is_land(a) && !is_land(b) &&
        cs_ev_is_ordering(b->rec.kind))
      return 0;
  }
  for (uint64_t m = j + 1; m < k; m++)
    if (BIT(x->hb, w, m, j) && BIT(x->hb, w, k, m))
      return 0;
  return 1;
}

/* Whether the race j -> k can be reversed when k is a wait that saw V
 * and j a notify of its cell (issued under sc, landing under fifo and
 * relaxed). The reversal puts the wait right before step j with every
 * write of the cell in between kept: each of those is ordered before the
 * wait (a wait is dependent with every write of its cell) and none after
 * step j (that would make the pair no race), so they are AtomicAdds (a
 * Set would be ordered after j). Without step j the cell holds V less
 * j's add, or, for a Set, the value before it plus the adds after it
 * (V - the Set's value); a wait whose condition fails there cannot run
 * there: step j enabled it, and there is nothing to reverse. Other places
 * further back are the races of wait_behind(). 1 reversible or unknown,
 * 0 not. */
static int wait_reversible(const cs_dpor_t *x, uint64_t j, uint64_t k)
{
  const pev_t *a = ev_at(x, j), *b = ev_at(x, k);
  const cs_trace_rec_t *ra = &a->rec, *rb = &b->rec;
  if (x->model == CS_MM_A2A3 || !reducing(x) || is_land(b) ||
      rb->kind != CS_EV_WAIT)
    return 1;
  uint32_t kind = is_land(a) ? ra->round : ra->kind;
  if (kind != CS_EV_NOTIFY ||
      (ra->opcmp != CS_NOTIFY_ADD && ra->opcmp != CS_NOTIFY_SET) ||
      (!is_land(a) && x->model != CS_MM_SC) || ra->peer != rb->rank ||
      ra->slot != rb->slot || ra->cell != rb->cell)
    return 1;
  /* without step j: V less j's add; or, for a Set, the value before it
   * plus the adds after it (V - the Set's value) */
  int32_t before = ra->opcmp == CS_NOTIFY_ADD
      ? (int32_t)((uint32_t)rb->observed - (uint32_t)ra->value)
      : (int32_t)((uint32_t)ra->observed + (uint32_t)rb->observed -
                  (uint32_t)ra->value);
  return rb->opcmp == CS_CMP_EQ ? before == rb->value : before >= rb->value;
}

/* wait_reversible() for a wait k behind j (wait_behind()): the writes
 * after j that the reversal leaves out are unknown, so only when every
 * write of the cell before k is an AtomicAdd of a value >= 0: the cell
 * only grows, and if the wait fails at V less j's add it fails with
 * fewer adds too. */
static int behind_reversible(const cs_dpor_t *x, uint64_t j, uint64_t k)
{
  const pev_t *a = ev_at(x, j), *b = ev_at(x, k);
  if (a->rec.opcmp != CS_NOTIFY_ADD || a->rec.value < 0 ||
      wait_reversible(x, j, k))
    return 1;
  fp_t fw, fe;
  footprint(x, b, &fw);
  for (uint64_t m = 0; m < k; m++) {
    const pev_t *e = ev_at(x, m);
    if ((!is_land(e) && e->rec.kind == CS_EV_WAIT) || !footprint(x, e, &fe) ||
        !fe.wr || fe.win != fw.win || fe.hi <= fw.lo || fw.hi <= fe.lo)
      continue;
    const cs_trace_rec_t *r = &e->rec;
    uint32_t ek = is_land(e) ? r->round : r->kind;
    if (ek != CS_EV_NOTIFY || r->opcmp != CS_NOTIFY_ADD || r->value < 0)
      return 1;
  }
  return 0;
}

/* wait_reversible() for a race j -> k of an add j and a quiet wait k that
 * needs it, every write of k's cell before k an add (needed()):
 * exactly. The reversal keeps the writes before j and those between j and
 * k that do not happen after j. 1 reversible, 0 not. */
static int quiet_reversible(const cs_dpor_t *x, uint64_t j, uint64_t k,
                            uint64_t w)
{
  const pev_t *b = ev_at(x, k);
  fp_t fw;
  footprint(x, b, &fw);
  int64_t cell = b->rec.observed;
  for (uint64_t m = j; m < k; m++)
    if ((m == j || BIT(x->hb, w, m, j)) && writes_cell(x, m, &fw))
      cell -= ev_at(x, m)->rec.value;
  return cell >= b->rec.value;
}

/* Whether the race j -> k is reversed (docs/verify.md, "Races that cannot
 * be reversed"). */
static int reversible(const cs_dpor_t *x, uint64_t j, uint64_t k, uint64_t w)
{
  if (quiet_wait(x, ev_at(x, k)) && x->need[k] != UINT64_MAX &&
      grows(x, ev_at(x, j)))
    return quiet_reversible(x, j, k, w);
  return wait_reversible(x, j, k);
}

/* A wait k and an earlier write j of another actor that it depends on,
 * with steps in between (not a race): a wait can be moved before several
 * writes at once (one that subtracts, then one that adds back: the add
 * alone is not a reversible race, tests/test_verify.c QUIET-WAIT-SUB),
 * so each such write is tried as well; more backtracking, never less. */
static int wait_behind(const cs_dpor_t *x, uint64_t j, uint64_t k, uint64_t w)
{
  const pev_t *a = ev_at(x, j), *b = ev_at(x, k);
  return reducing(x) && !is_land(b) &&
         b->rec.kind == CS_EV_WAIT && a->key != b->key &&
         BIT(x->hb, w, k, j) && dep_run(x, j, k, w);
}

static int races(cs_dpor_t *x)
{
  uint64_t n = x->depth, w = (n + 63) / 64;
  if (n == 0)
    return 0;
  if (n > x->needcap) {
    uint64_t *nn = realloc(x->need, n * sizeof(uint64_t));
    if (!nn)
      return -1;
    x->need = nn;
    x->needcap = n;
  }
  for (uint64_t k = 0; k < n; k++)
    x->need[k] = quiet_wait(x, ev_at(x, k)) ? needed(x, k) : UINT64_MAX;
  if (happens_before(x, n, w) < 0)
    return -1;
  uint64_t from = x->plen ? x->plen - 1 : 0; /* earlier ones: seen before */
  for (uint64_t k = from; k < n; k++)
    for (uint64_t j = k; j-- > 0;)
      if (is_race(x, j, k, w) ? reversible(x, j, k, w)
                              : wait_behind(x, j, k, w) &&
                                    behind_reversible(x, j, k))
        reverse(x, j, k, w);
  return 0;
}

/* The branches node nd will explore, as known now: those taken, and
 * those still open that are not asleep (never fewer than one). */
static uint32_t branches(const node_t *nd)
{
  uint32_t b = 0;
  for (uint32_t i = 0; i < nd->nbt; i++)
    b += has_key(nd->done, nd->ndone, nd->bt[i]) || !asleep(nd, nd->bt[i]);
  return b ? b : 1;
}

/* The share of the tree below node `from` of the path through nodes
 * [from, to): one over the branches of each. */
static double path_share(const cs_dpor_t *x, uint64_t from, uint64_t to)
{
  double w = 1.0;
  for (uint64_t j = from; j < to; j++)
    w /= branches(&x->node[j]);
  return w;
}

double cs_dpor_task_share(const cs_dpor_t *x, uint64_t id)
{
  return id < x->nnode ? path_share(x, 0, id + 1) : 0.0;
}

int cs_dpor_done(cs_dpor_t *x, const char **why)
{
  *why = NULL;
  if (x->err) {
    *why = x->err;
    return -EINVAL;
  }
  for (uint32_t r = 0; r < CS_MAX_RANKS; r++)
    if (x->npost[r] != x->nland[r]) {
      *why = "the run ended with posted DMA ops not landed";
      return -EAGAIN;
    }
  x->st.executions++;
  if (x->len > x->st.max_steps)
    x->st.max_steps = x->len;
  if (x->blocked)
    x->st.blocked++;
  else
    x->st.classes++;
  if (x->mode != CS_DPOR_EXHAUSTIVE && (races(x) < 0 || x->err)) {
    *why = "out of memory";
    return -ENOMEM;
  }
  x->st.share += path_share(x, x->root, x->nnode); /* with this run's races */
  return x->blocked ? CS_DPOR_BLOCKED : CS_DPOR_CLASS;
}

/* ------------------------------------------------------------ split */

/* A task blob: words [root, nsleep | nguide << 32, key 0 .. key
 * root-1, the guide's nguide keys], then nsleep pev_t. The workers are forks of one binary, so the layout is shared. */
int cs_dpor_task_take(cs_dpor_t *x, void **buf, size_t *len, uint64_t *id)
{
  while (x->nnode) { /* the deepest node, done with, goes */
    node_t *nd = &x->node[x->nnode - 1];
    int open = nd->out > 0;
    for (uint32_t i = 0; i < nd->nbt && !open; i++)
      open = !has_key(nd->done, nd->ndone, nd->bt[i]) &&
             !asleep(nd, nd->bt[i]);
    if (open)
      break;
    free_node(nd);
    x->nnode--;
  }
  if (!x->nnode)
    return -1;
  for (uint64_t j = x->nnode; j-- > 0;) {
    node_t *nd = &x->node[j];
    for (uint32_t i = 0; i < nd->nbt; i++) {
      uint64_t k = nd->bt[i];
      if (has_key(nd->done, nd->ndone, k) || asleep(nd, k))
        continue;
      /* sleepers: the node's own, and the branches handed out before */
      uint32_t ns = nd->nsleep;
      for (uint32_t e = 0; e < nd->nen; e++)
        ns += nd->en[e].key != k && has_key(nd->done, nd->ndone, nd->en[e].key);
      uint32_t ng = nd->seq && nd->seq[i] ? nd->nseq[i] : 0;
      size_t words = 2 + j + 1 + ng;
      size_t n = words * sizeof(uint64_t) + ns * sizeof(pev_t);
      uint64_t *b = malloc(n);
      if (!b)
        return -ENOMEM;
      b[0] = j + 1;
      b[1] = ns | (uint64_t)ng << 32;
      for (uint64_t q = 0; q < j; q++)
        b[2 + q] = x->node[q].en[x->node[q].chosen].key;
      b[2 + j] = k;
      if (ng) /* the branch's guide (guided branches) */
        memcpy(b + 3 + j, nd->seq[i], ng * sizeof(uint64_t));
      pev_t *sl = (pev_t *)(b + words);
      if (nd->nsleep) /* an empty sleep set may have no array */
        memcpy(sl, nd->sleep, nd->nsleep * sizeof(pev_t));
      ns = nd->nsleep;
      for (uint32_t e = 0; e < nd->nen; e++)
        if (nd->en[e].key != k && has_key(nd->done, nd->ndone, nd->en[e].key))
          sl[ns++] = nd->en[e];
      add_key(nd->done, &nd->ndone, k);
      nd->out++;
      *buf = b;
      *len = n;
      *id = j;
      return 1;
    }
  }
  return 0;
}

void cs_dpor_task_done(cs_dpor_t *x, uint64_t id)
{
  if (id < x->nnode && x->node[id].out)
    x->node[id].out--;
}

int cs_dpor_apply(cs_dpor_t *x, const void *buf, size_t len)
{
  const uint64_t *w = buf;
  size_t n = len / sizeof(uint64_t);
  for (size_t at = 0; at + 2 <= n;) {
    uint64_t j = w[at], nk = w[at + 1];
    if (at + 2 + nk > n || j >= x->nnode)
      return -EINVAL; /* a node of the path is held while tasks under it run */
    const uint64_t *keys = w + at + 2;
    at += 2 + nk;
    node_t *nd = &x->node[j];
    int pick = -1, sleeping = -1, there = 0;
    for (uint64_t a = 0; a < nk && !there; a++) {
      there = has_key(nd->bt, nd->nbt, keys[a]);
      int e = en_index(nd->en, nd->nen, keys[a]);
      if (e >= 0 && !asleep(nd, keys[a]) && pick < 0)
        pick = e;
      if (e >= 0 && sleeping < 0)
        sleeping = e;
    }
    if (there)
      continue;
    if (pick < 0)
      pick = sleeping;
    if (pick >= 0)
      add_key(nd->bt, &nd->nbt, nd->en[pick].key);
  }
  return 0;
}

int cs_dpor_create_sub(cs_dpor_t **out, cs_mm_t m, cs_dpor_mode_t mode,
                       const void *buf, size_t len)
{
  const uint64_t *w = buf;
  if (len < 2 * sizeof(uint64_t))
    return -EINVAL;
  uint64_t root = w[0], ns = w[1] & 0xffffffffu, ng = w[1] >> 32;
  if (root == 0 || root > (1u << 24) || ns > (1u << 20) || ng > (1u << 24) ||
      len != (2 + root + ng) * sizeof(uint64_t) + ns * sizeof(pev_t))
    return -EINVAL;
  int rc = cs_dpor_create(out, m, mode);
  if (rc < 0)
    return rc;
  cs_dpor_t *x = *out;
  x->root = root;
  x->nrsleep = (uint32_t)ns;
  x->rkey = malloc(root * sizeof(uint64_t));
  x->rsleep = malloc((ns ? ns : 1) * sizeof(pev_t));
  if (!x->rkey || !x->rsleep) {
    cs_dpor_destroy(x);
    return -ENOMEM;
  }
  memcpy(x->rkey, w + 2, root * sizeof(uint64_t));
  memcpy(x->rsleep, w + 2 + root + ng, ns * sizeof(pev_t));
  if (ng) { /* the task's first run follows its branch's guide */
    x->gsrc = malloc(ng * sizeof(uint64_t));
    x->guide = malloc(ng * sizeof(uint64_t));
    if (!x->gsrc || !x->guide) {
      cs_dpor_destroy(x);
      return -ENOMEM;
    }
    memcpy(x->gsrc, w + 2 + root, ng * sizeof(uint64_t));
    x->ngsrc = (uint32_t)ng;
  }
  return 0;
}

const void *cs_dpor_reports(cs_dpor_t *x, size_t *len)
{
  *len = x->nrep * sizeof(uint64_t);
  x->nrep = 0;
  return x->rep;
}
