/*
 * coll.c - loading, checking and running a collective of one's own (see
 * coll.h and include/collsim/collective.h): the public cs_coll_open,
 * cs_coll_close, cs_coll_check and cs_coll_run, and the pipeline job they
 * share with `collsim run --algo ./x.so`. Prints nothing: refusals are one
 * line in the caller's buffer.
 */
#define _GNU_SOURCE
#include "coll.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../collectives/builtin.h"
#include "../collectives/oracle.h"
#include "../sim/sched.h"
#include "../sim/trace/sha256.h"
#include "verify.h"

int cs_coll_is_path(const char *s)
{
  size_t n = strlen(s);
  return strchr(s, '/') != NULL || (n > 3 && strcmp(s + n - 3, ".so") == 0);
}

/* Whether registration c (of c->size bytes) has field f. */
#define HAS_FIELD(c, f) \
  ((c)->size >= offsetof(cs_collective_t, f) + sizeof((c)->f))

uint32_t cs_coll_flags(const cs_collective_t *c)
{
  return c && HAS_FIELD(c, flags) ? c->flags : 0;
}

const cs_collective_t *cs_coll_teach(const cs_collective_t *c)
{
  return c && HAS_FIELD(c, wait_where) && c->part_letter ? c : NULL;
}

/* One name of at most CS_COLL_NAMELEN - 1 characters '!'..'~'. */
static int name_ok(const char *s)
{
  size_t i = 0;
  for (; s[i] && i < CS_COLL_NAMELEN; i++)
    if (s[i] < '!' || s[i] > '~')
      return 0;
  return i >= 1 && i < CS_COLL_NAMELEN;
}

/* A text collsim prints as it is (the collective's name, its `what`):
 * NULL, or at most `max` bytes with no control character (a newline or
 * an escape sequence would break a one-line message or drive the
 * terminal). */
static int text_ok(const char *s, size_t max)
{
  if (!s)
    return 1;
  size_t i = 0;
  for (; s[i] && i <= max; i++)
    if ((unsigned char)s[i] < ' ' || s[i] == 0x7f)
      return 0;
  return i <= max;
}

/* Appends name s (NULL: empty) and its NUL at *at. Returns 0, or -1 when
 * it does not fit or is not a name (`empty_ok`: NULL and "" are). */
static int put_name(char *out, size_t *at, const char *s, int empty_ok)
{
  if (!s || !s[0]) {
    if (!empty_ok || *at >= CS_COLL_NAMES_BYTES)
      return -1;
    out[(*at)++] = 0;
    return 0;
  }
  size_t len = strnlen(s, CS_COLL_NAMELEN);
  if (!name_ok(s) || *at + len + 1 > CS_COLL_NAMES_BYTES)
    return -1;
  memcpy(out + *at, s, len + 1);
  *at += len + 1;
  return 0;
}

const char *cs_coll_names(const cs_collective_t *c,
                          char out[CS_COLL_NAMES_BYTES])
{
  memset(out, 0, CS_COLL_NAMES_BYTES);
  uint32_t np = HAS_FIELD(c, nphases) && c->phases ? c->nphases : 0;
  const char *ready = HAS_FIELD(c, ready_barrier) ? c->ready_barrier : NULL;
  const char *done = HAS_FIELD(c, read_done_barrier) ? c->read_done_barrier : NULL;
  if (!np && !ready && !done)
    return NULL;
  size_t at = 0;
  for (uint32_t p = 0; p < np; p++)
    if (put_name(out, &at, c->phases[p], 0) < 0)
      return c->phases[p] ? c->phases[p] : "(NULL)";
  if (put_name(out, &at, NULL, 1) < 0 || put_name(out, &at, ready, 1) < 0)
    return ready ? ready : "(all the names together)";
  if (put_name(out, &at, done, 1) < 0)
    return done ? done : "(all the names together)";
  return NULL;
}

/* Its teach facts (cs_coll_teach), when it has them: 0, or -EINVAL with
 * why filled. */
static int teach_valid(const char *path, const cs_collective_t *c, char *why,
                       size_t n)
{
  const cs_collective_t *t = cs_coll_teach(c);
  const char *bad = NULL;
  if (!t)
    return 0;
  if (t->part_letter < '!' || t->part_letter > '~')
    bad = "part_letter is not a printable character '!'..'~'";
  else if (!t->parts || !t->part_lo)
    bad = "part_letter is set without parts and part_lo";
  else if (t->teach_flags & ~(uint32_t)CS_COLL_TEACH_FLAGS)
    bad = "teach_flags have bits this collsim does not know";
  else if (!text_ok(t->legend, 160))
    bad = "legend has a control character or is longer than 160 bytes";
  if (!bad)
    return 0;
  snprintf(why, n, "%s: %s's teach facts are not accepted: its %s", path,
           CS_COLLECTIVE_SYMBOL, bad);
  return -EINVAL;
}

/* The registration's own fields, once loaded. Returns 0 or -EPROTO /
 * -EINVAL with why filled. */
static int coll_valid(const char *path, const cs_collective_t *c, char *why,
                      size_t n)
{
  if (c->abi != CS_COLLECTIVE_ABI) {
    snprintf(why, n, "%s: %s is for collective ABI version %u; this collsim "
             "accepts %u: rebuild it against this collsim's headers", path,
             CS_COLLECTIVE_SYMBOL, c->abi, CS_COLLECTIVE_ABI);
    return -EPROTO;
  }
  if (c->size < CS_COLLECTIVE_SIZE_1 || c->size > sizeof(cs_collective_t)) {
    snprintf(why, n, "%s: %s is %u bytes; ABI %u has %zu to %zu: rebuild it "
             "against this collsim's headers", path, CS_COLLECTIVE_SYMBOL,
             c->size, CS_COLLECTIVE_ABI, (size_t)CS_COLLECTIVE_SIZE_1,
             sizeof(cs_collective_t));
    return -EPROTO;
  }
  char names[CS_COLL_NAMES_BYTES];
  const char *bad = cs_coll_names(c, names);
  if (bad) {
    snprintf(why, n, "%s: %s's name '%.40s' is not accepted: every phase and "
             "barrier name is 1 to %u characters '!'..'~', all of them in %u "
             "bytes with their terminators and one more", path,
             CS_COLLECTIVE_SYMBOL, bad, CS_COLL_NAMELEN - 1, CS_COLL_NAMES_BYTES);
    return -EINVAL;
  }
  uint32_t flags = cs_coll_flags(c);
  if (flags & ~(uint32_t)CS_COLL_FLAGS) {
    snprintf(why, n, "%s: %s's flags 0x%x have bits this collsim does not "
             "know (0x%x): rebuild it against this collsim's headers", path,
             CS_COLLECTIVE_SYMBOL, flags,
             flags & ~(uint32_t)CS_COLL_FLAGS);
    return -EINVAL;
  }
  const char *miss = !c->name || !c->name[0] ? "name" : !c->slots ? "slots"
                     : !c->body ? "body" : NULL;
  if (miss) {
    snprintf(why, n, "%s: %s has no %s: name, slots and body are required",
             path, CS_COLLECTIVE_SYMBOL, miss);
    return -EINVAL;
  }
  if (!text_ok(c->name, 64) || !text_ok(c->what, 256)) {
    snprintf(why, n, "%s: %s's %s has a control character or is too long: "
             "expected printable text of at most %d bytes", path,
             CS_COLLECTIVE_SYMBOL, text_ok(c->name, 64) ? "what" : "name",
             text_ok(c->name, 64) ? 256 : 64);
    return -EINVAL;
  }
  return teach_valid(path, c, why, n);
}

/* What cs_coll_open loaded, for cs_coll_run's trace header (algo_path,
 * algo_sha256): one slot per loaded object (dlopen gives every open of
 * it the same handle), counted open by open until the last cs_coll_close.
 * `known`: the object was loaded afresh from a path with a '/', so its
 * real path and the SHA-256 of the bytes hashed just before dlopen read
 * them describe the code that runs, as `collsim run --algo` records
 * them, and replay and shrink reload the same code. An object already
 * loaded when it was first opened here (by a bare name through the
 * loader's search, or kept loaded past its last close) is not known:
 * the file may no longer hold what was loaded. A collective that is not
 * known, or one opened when every slot is taken, is run without a path
 * (its trace names none, and replay refuses it). */
#define OPENED_MAX 32
static struct opened {
  void                  *handle;
  const cs_collective_t *c;
  uint32_t               opens;
  int                    known;
  char                   path[sizeof(((cs_trace_header_t *)0)->algo_path)];
  uint8_t                sha[CS_SHA256_BYTES];
} opened[OPENED_MAX];
static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;

/* The hash of the regular file `real` into o with its path, or -1. */
static int opened_file(const char *real, struct opened *o)
{
  if (strlen(real) >= sizeof(o->path))
    return -1;
  int fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return -1;
  struct stat sb;
  int rc = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)
               ? cs_sha256_fd(fd, o->sha) : -1;
  close(fd);
  if (rc < 0)
    return -1;
  memcpy(o->path, real, strlen(real) + 1);
  return 0;
}

/* One more open of o->handle: its slot counts it, or a new slot takes o
 * (nothing when the table is full). */
static void opened_add(const struct opened *o)
{
  pthread_mutex_lock(&opened_lock);
  int i, free_slot = -1;
  for (i = 0; i < OPENED_MAX && opened[i].handle != o->handle; i++)
    if (!opened[i].handle && free_slot < 0)
      free_slot = i;
  if (i < OPENED_MAX)
    opened[i].opens++; /* loaded before: the first open's record holds */
  else if (free_slot >= 0) {
    opened[free_slot] = *o;
    opened[free_slot].opens = 1;
  }
  pthread_mutex_unlock(&opened_lock);
}

/* The header's algo_path and algo_sha256 of c, when it is known. */
static void opened_header(const cs_collective_t *c, cs_trace_header_t *th)
{
  pthread_mutex_lock(&opened_lock);
  for (int i = 0; i < OPENED_MAX; i++)
    if (opened[i].handle && opened[i].c == c && opened[i].known) {
      memcpy(th->algo_path, opened[i].path, sizeof(th->algo_path));
      memcpy(th->algo_sha256, opened[i].sha, sizeof(th->algo_sha256));
      break;
    }
  pthread_mutex_unlock(&opened_lock);
}

int cs_coll_open(const char *path, const cs_collective_t **c, void **handle,
                 char *why, size_t n)
{
  *c = NULL;
  *handle = NULL;
  struct stat sb;
  if (strchr(path, '/') && stat(path, &sb) < 0) {
    int e = errno;
    snprintf(why, n, "%s: cannot open: %s", path, strerror(e));
    return -ENOENT;
  }
  if (strchr(path, '/') && !S_ISREG(sb.st_mode)) {
    /* dlopen would block on a FIFO, or read a device without end */
    snprintf(why, n, "%s: not a regular file: expected a shared object", path);
    return -ENOEXEC;
  }
  /* A path is loaded by its real name, hashed just before, as collsim run
   * --algo does, unless the loader already holds an object of that name
   * (then dlopen returns it without reading the file). */
  struct opened o = {0};
  char real[PATH_MAX];
  const char *name = strchr(path, '/') && realpath(path, real) ? real : path;
  void *pre = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!pre)
    (void)dlerror(); /* not loaded yet: that is not an error to leave */
  o.known = name == real && !pre && opened_file(real, &o) == 0;
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (pre)
    dlclose(pre); /* the reference RTLD_NOLOAD took */
  if (!h) {
    const char *e = dlerror();
    snprintf(why, n, "%s: cannot load it as a shared object: %s", path,
             e ? e : "unknown error");
    return strchr(path, '/') ? -ENOEXEC : -ENOENT;
  }
  const cs_collective_t *reg = dlsym(h, CS_COLLECTIVE_SYMBOL);
  if (!reg) {
    snprintf(why, n, "%s: does not export %s (a const cs_collective_t; see "
             "collsim-api(3))", path, CS_COLLECTIVE_SYMBOL);
    dlclose(h);
    return -ESRCH;
  }
  int rc = coll_valid(path, reg, why, n);
  if (rc < 0) {
    dlclose(h);
    return rc;
  }
  *c = reg;
  *handle = h;
  o.handle = h;
  o.c = reg;
  opened_add(&o);
  return 0;
}

void cs_coll_close(void *handle)
{
  if (!handle)
    return;
  pthread_mutex_lock(&opened_lock);
  for (int i = 0; i < OPENED_MAX; i++)
    if (opened[i].handle == handle) {
      if (--opened[i].opens == 0)
        memset(&opened[i], 0, sizeof(opened[i]));
      break;
    }
  pthread_mutex_unlock(&opened_lock);
  dlclose(handle);
}

const cs_collective_t *cs_coll_builtin(const char *name)
{
  return cs_builtin_collective(name);
}

/* The limits every run has. Returns 0 or -EINVAL with why filled. */
static int cfg_limits(const cs_coll_cfg_t *g, char *why, size_t n)
{
  if ((unsigned)g->dtype >= CS_NDTYPES || (unsigned)g->op >= CS_NOPS)
    snprintf(why, n, "dtype %u or op %u is not accepted: expected fp32, fp16 "
             "or bf16 and sum, max, min or prod", (unsigned)g->dtype,
             (unsigned)g->op);
  else if (g->nranks < 1 || g->nranks > CS_COLL_MAX_RANKS)
    snprintf(why, n, "%u ranks are not accepted: expected 1 to %u", g->nranks,
             CS_COLL_MAX_RANKS);
  else if (g->count < 1 || g->count > CS_AR_MAX_COUNT)
    snprintf(why, n, "count %llu is not accepted: expected 1 to %llu",
             (unsigned long long)g->count, (unsigned long long)CS_AR_MAX_COUNT);
  else if (g->tile_bytes < CS_AR_MIN_TILE || g->tile_bytes > CS_AR_MAX_TILE ||
           g->tile_bytes % 32)
    snprintf(why, n, "tile bytes %u are not accepted: expected a multiple of "
             "32 from %u to %u", g->tile_bytes, CS_AR_MIN_TILE, CS_AR_MAX_TILE);
  else if (g->iters < 1 || g->iters > 1000000)
    snprintf(why, n, "%u calls are not accepted: expected 1 to 1000000",
             g->iters);
  else
    return 0;
  return -EINVAL;
}

/* The fields of *g every version of the header has: a program built
 * before the later ones passes a shorter struct (collective.h). */
static cs_coll_cfg_t cfg_v1(const cs_coll_cfg_t *g)
{
  return (cs_coll_cfg_t){.nranks = g->nranks, .count = g->count,
                         .dtype = g->dtype, .op = g->op,
                         .tile_bytes = g->tile_bytes, .iters = g->iters};
}

int cs_coll_check(const cs_collective_t *c, const cs_coll_cfg_t *g, char *why,
                  size_t n)
{
  cs_coll_cfg_t v1 = cfg_v1(g);
  return cs_coll_check_full(c, &v1, why, n);
}

int cs_coll_check_full(const cs_collective_t *c, const cs_coll_cfg_t *g,
                       char *why, size_t n)
{
  if (cfg_limits(g, why, n) < 0)
    return -EINVAL;
  const char *no = c->refuse ? c->refuse(g) : NULL;
  if (no) {
    snprintf(why, n, "%s does not accept %u rank%s x %llu %s (%s): %s", c->name,
             g->nranks, g->nranks == 1 ? "" : "s", (unsigned long long)g->count,
             cs_dtype_name(g->dtype), cs_op_name(g->op), no);
    return -EINVAL;
  }
  cs_user_run_t u;
  cs_layout_t l;
  cs_user_run_init(&u, c, g);
  int rc = cs_user_layout(&u, &l);
  if (rc < 0) {
    snprintf(why, n, "%s: its slots for %u ranks x %llu %s are not a window "
             "collsim can make (%s): every slot 1..2^47 bytes of 2- or 4-byte "
             "elements, at most %u, in_slot and out_slot of the dtype's size "
             "and large enough, signal_slot of 4-byte cells", c->name,
             g->nranks, (unsigned long long)g->count, cs_dtype_name(g->dtype),
             cs_strerror(rc), CS_COLL_MAX_SLOTS);
    return -EINVAL;
  }
  return 0;
}

/* ------------------------------------------------------------ the job */

static void fill_row(void *ctx, uint32_t r, uint8_t *row)
{
  const cs_coll_job_t *cj = ctx;
  /* cj->fill is never CS_FILL_DEFAULT here (cs_coll_job_init chose) */
  cs_ar_cfg_t a = {.dtype = cj->u.cfg.dtype, .op = cj->u.cfg.op,
                   .nranks = cj->u.cfg.nranks, .count = cj->u.cfg.count};
  cs_ar_fill(cj->fill, &a, cj->seed, r, row);
}

/* Every rank's result against the collective's expect function, which
 * takes every rank's input as one array: the job's rows, or (when the
 * pipeline filled the world) a copy of the world's input rows. Returns
 * 0 or -ENOMEM. */
static int verify_results(cs_coll_job_t *cj, const cs_pipe_t *p)
{
  const cs_coll_cfg_t *g = &cj->u.cfg;
  uint64_t row = g->count * cs_dtype_size(g->dtype);
  uint8_t *copy = NULL;
  const uint8_t *in = p->inputs;
  if (!in) {
    if (!(copy = malloc(row * g->nranks + 1)))
      return -ENOMEM;
    for (uint32_t r = 0; r < g->nranks; r++)
      memcpy(copy + r * row, cs_world_input(&p->world, r), row);
    in = copy;
  }
  for (uint32_t r = 0; r < g->nranks; r++) {
    const uint8_t *got = cs_world_output(&p->world, r);
    cj->u.coll->expect(g, in, r, cj->want);
    for (uint64_t i = 0; i < cj->u.out_count; i++)
      if (!cs_oracle_same(g->dtype, got, cj->want, i) && cj->wrong++ == 0) {
        cj->bad_rank = r;
        cj->bad_i = i;
      }
  }
  if (cj->wrong) { /* cj->want: the first wrong rank's expected result */
    cj->u.coll->expect(g, in, (uint32_t)cj->bad_rank, cj->want);
    uint32_t es = cs_dtype_size(g->dtype);
    memcpy(cj->want_bits, cj->want + cj->bad_i * es, es);
  }
  free(copy);
  return 0;
}

/* The ranks' own stats (the rank harness's, at `off` after each output):
 * calls unlike the first and the first rank with one, a built-in's
 * signal cells that missed, per-call times (the slowest rank's, their
 * median after the first cj->untimed calls). Returns 0 or -ENOMEM. */
static int read_rank_stats(cs_coll_job_t *cj, const cs_world_t *w,
                           uint64_t off, uint32_t nranks, uint32_t iters)
{
  cs_coll_ar_verdict_t *av = &cj->av;
  uint64_t *per = calloc(iters, sizeof(uint64_t));
  if (!per)
    return -ENOMEM;
  av->sig_rank = cj->differ_rank = -1;
  for (uint32_t r = 0; r < nranks; r++) {
    const cs_rank_stats_t *st =
        (const cs_rank_stats_t *)(cs_world_output(w, r) + off);
    av->signal_bad += st->signal_bad;
    if (st->signal_bad && av->sig_rank < 0) {
      av->sig_rank = r;
      av->sig_st = st;
    }
    if (st->iters_differ && cj->differ_rank < 0) {
      cj->differ_rank = r;
      cj->differ_st = st;
    }
    if (st->iters_differ > cj->differ)
      cj->differ = st->iters_differ; /* calls, on the rank that saw most */
    for (uint32_t it = 0; it < iters; it++)
      if (st->ns[it] > per[it])
        per[it] = st->ns[it];
  }
  uint32_t skip = cj->untimed < iters ? cj->untimed : 0;
  cj->median_ns = cs_verify_median_ns(per + skip, iters - skip);
  free(per);
  return 0;
}

/* Every signal cell against signal_final (0 without one). */
static void verify_signals(cs_coll_job_t *cj, const cs_pipe_t *p)
{
  const cs_collective_t *c = cj->u.coll;
  if (c->signal_slot == CS_COLL_NO_SIGNALS)
    return;
  const cs_slot_t *s = &p->world.ctl->layout.slot[c->signal_slot];
  for (uint32_t r = 0; r < cj->u.cfg.nranks; r++) {
    const uint8_t *win = cs_world_window(&p->world, r);
    for (uint64_t k = 0; k < cs_slot_cells(s); k++) {
      int32_t want = c->signal_final ? c->signal_final(&cj->u.cfg, r, k) : 0;
      int32_t got;
      memcpy(&got, win + cs_slot_cell_off(s, k), sizeof(got));
      if (got != want && cj->signals_bad++ == 0) {
        cj->sig_rank = r;
        cj->sig_cell = k;
        cj->sig_want = want;
        cj->sig_got = got;
      }
    }
  }
}

static int coll_verify(cs_pipe_t *p, void *ctx)
{
  cs_coll_job_t *cj = ctx;
  const cs_coll_cfg_t *g = &cj->u.cfg;
  if (read_rank_stats(cj, &p->world, cs_user_stats_off(&cj->u), g->nranks,
                      g->iters) < 0)
    return -ENOMEM;
  cj->verified = cj->u.coll->expect != NULL;
  if (cj->verified) {
    if (!(cj->want = malloc(cs_user_out_bytes(&cj->u) + 1)))
      return -ENOMEM;
    if (verify_results(cj, p) < 0)
      return -ENOMEM;
  }
  verify_signals(cj, p);
  return 0;
}

int cs_coll_job_init(cs_coll_job_t *cj, const cs_collective_t *c,
                     const cs_coll_cfg_t *cfg, cs_fill_t fill, uint64_t seed,
                     uint64_t timeout_ns, int traced, int controlled,
                     int padded)
{
  memset(cj, 0, sizeof(*cj));
  cj->bad_rank = cj->sig_rank = -1;
  cs_user_run_init(&cj->u, c, cfg);
  int rc = cs_user_layout(&cj->u, &cj->l);
  if (rc == 0 && padded)
    rc = c->signal_slot == CS_COLL_NO_SIGNALS
             ? -EINVAL : cs_layout_pad_cells(&cj->l, c->signal_slot);
  if (rc < 0)
    return rc;
  cj->fill = fill != CS_FILL_DEFAULT
                 ? fill : cs_ar_fill_rule(cfg->dtype, cfg->op, true);
  cj->seed = seed;
  cj->ops = (cs_job_ops_t){.fill = fill_row, .verify = coll_verify};
  cs_job_t *j = &cj->job;
  uint32_t n = cfg->nranks;
  j->wo = (cs_world_opts_t){
      .io_bytes = cs_user_io_bytes(&cj->u), .timeout_ns = timeout_ns,
      .trace_bytes = traced ? cs_pipe_trace_bytes(n, controlled) : 0,
      .sched_bytes = controlled
                         ? cs_sched_area_bytes(n, (1u << 20) + 2ull * cfg->tile_bytes)
                         : 0};
  j->layout = &cj->l;
  j->nranks = n;
  j->input_bytes = cs_user_in_bytes(&cj->u);
  j->body = cs_user_rank_main;
  j->arg = &cj->u;
  /* A built-in's registration records the same events as `collsim run
   * --algo NAME`, and its header says so as that run's does: the
   * algorithm's id, whose descriptor gives the names and tags. */
  int b = cs_builtin_id(c);
  j->th = (cs_trace_header_t){
      .count = cfg->count, .algo = b >= 0 ? (uint32_t)b : CS_TRACE_ALGO_USER,
      .dtype = cfg->dtype, .op = cfg->op, .fill = cj->fill, .seed = seed,
      .tile_bytes = cfg->tile_bytes, .iters = cfg->iters};
  if (b < 0 && cs_coll_names(c, j->th.names))
    memset(j->th.names, 0, sizeof(j->th.names)); /* cs_coll_open refused it */
  /* how the readers tag and replay it: its signal layout, --minmax,
   * chunk tags, and the rectangle (CS_COLL_SHAPE's, or 0) */
  j->th.modes = (padded ? CS_TR_MODE_PADDED_CELLS : 0) |
                (uint32_t)cfg->minmax << CS_TR_MODE_MINMAX_SHIFT |
                (b < 0 && (cs_coll_flags(c) & CS_COLL_CHUNK_TAGS)
                     ? CS_TR_MODE_CHUNK_TAGS : 0);
  j->th.shape_rows = cfg->shape_rows;
  j->th.shape_cols = cfg->shape_cols;
  j->th.valid_rows = cfg->valid_rows;
  j->th.valid_cols = cfg->valid_cols;
  j->ops = &cj->ops;
  j->ctx = cj;
  return 0;
}

void cs_coll_job_fini(cs_coll_job_t *cj)
{
  free(cj->want);
  cj->want = NULL;
}

/* ------------------------------------------------------------ a built-in */

static void fill_row_ar(void *ctx, uint32_t r, uint8_t *row)
{
  const cs_coll_job_t *cj = ctx;
  cs_ar_fill(cj->fill, &cj->ar, cj->seed, r, row);
}

/* The expected bits of the first wrong element: the oracle's inside the
 * valid rectangle, the rank's own input outside it. */
static void want_ar(cs_coll_job_t *cj, const cs_world_t *w)
{
  const cs_ar_cfg_t *c = &cj->ar;
  const cs_verdict_t *v = &cj->av.v;
  const void *rows[CS_AR_MAX_RANKS];
  for (uint32_t r = 0; r < c->nranks; r++)
    rows[r] = cs_world_input(w, r);
  uint32_t bits = 0, es = cs_dtype_size(c->dtype);
  if (cs_ar_in_rect(c, v->bad_i))
    bits = cs_oracle_elem_rows(c->algo, c->dtype, c->op,
                               (cs_minmax_t)c->minmax, c->nranks, c->count,
                               rows, (uint32_t)v->bad_rank, v->bad_i);
  else
    memcpy(&bits, (const uint8_t *)rows[v->bad_rank] + v->bad_i * es, es);
  uint16_t half = (uint16_t)bits;
  memcpy(cj->want_bits, es == 4 ? (const void *)&bits : &half, es);
}

static int verify_ar(cs_pipe_t *p, void *ctx)
{
  cs_coll_job_t *cj = ctx;
  if (read_rank_stats(cj, &p->world, cs_ar_stats_off(&cj->ar),
                      cj->ar.nranks, cj->ar.iters) < 0)
    return -ENOMEM;
  /* The inputs as the ranks read them: the world's own buffers. */
  cs_verdict_t *v = &cj->av.v;
  uint64_t t0 = cs_now_ns();
  int rc = cs_verify_allreduce(&cj->ar, &p->world, NULL, 1, NULL, v);
  cj->av.verify_ns = cs_now_ns() - t0;
  if (rc < 0)
    return -ENOMEM;
  cj->verified = 1;
  cj->wrong = v->wrong;
  cj->bad_rank = v->bad_rank;
  cj->bad_i = v->bad_i;
  cj->signals_bad = cj->av.signal_bad + v->signals_left;
  if (v->wrong)
    want_ar(cj, &p->world);
  return 0;
}

/* The wavefront's name of a wait: its place in the allreduce. */
static void wait_where_ar(void *arg, uint32_t rank, uint32_t slot,
                          uint32_t cell, int32_t target, char *buf, size_t n)
{
  cs_ar_wait_where(arg, rank, slot, cell, target, buf, n);
}

int cs_coll_job_init_ar(cs_coll_job_t *cj, const cs_ar_cfg_t *c,
                        cs_fill_t fill, uint64_t seed, const void *inputs,
                        uint64_t timeout_ns, int traced, int controlled)
{
  memset(cj, 0, sizeof(*cj));
  cj->bad_rank = cj->sig_rank = -1;
  cj->is_ar = 1;
  cj->ar = *c;
  cj->fill = fill;
  cj->seed = seed;
  cs_job_t *j = &cj->job;
  uint32_t n = c->nranks;
  j->wo = (cs_world_opts_t){
      .io_bytes = cs_ar_io_bytes(c), .timeout_ns = timeout_ns,
      .trace_bytes = traced ? cs_pipe_trace_bytes(n, controlled) : 0,
      .sched_bytes = controlled
                         ? cs_sched_area_bytes(n, (1u << 20) + 2ull * c->tile_bytes)
                         : 0,
      .note_slot = CS_AR_SLOT_SIGNAL,
      .note_cells = (uint32_t)cs_ar_signal_cells(c)};
  int rc = cs_ar_layout(c, &cj->l);
  if (rc < 0)
    return rc;
  cj->ops = (cs_job_ops_t){.fill = fill_row_ar, .verify = verify_ar};
  j->layout = &cj->l;
  j->nranks = n;
  j->inputs = inputs;
  j->input_bytes = c->count * cs_dtype_size(c->dtype);
  j->body = cs_ar_rank_main;
  j->arg = &cj->ar;
  j->wait_where = (cs_wait_where_t){wait_where_ar, &cj->ar};
  j->th = (cs_trace_header_t){
      .count = c->count, .algo = c->algo, .dtype = c->dtype, .op = c->op,
      .fill = fill, .seed = seed, .tile_bytes = c->tile_bytes,
      .iters = c->iters, .program = 0, .bug = c->bug};
  j->ops = &cj->ops;
  j->ctx = cj;
  return 0;
}

/* ------------------------------------------------------------ the API */

/* The schedule and memory model of o into s. Returns 0 or -EINVAL. */
static int run_sched(const cs_coll_run_opts_t *o, cs_sched_cfg_t *s,
                     char *why, size_t n)
{
  const char *file = NULL;
  memset(s, 0, sizeof(*s));
  if (o->schedule && strcmp(o->schedule, "free") != 0 &&
      (cs_sched_parse(o->schedule, s, &file) < 0 || file ||
       s->strategy == CS_SCHED_INTERACTIVE)) {
    snprintf(why, n, "schedule '%s' is not accepted: expected free, "
             "random:SEED, pct:SEED:DEPTH[:STEPS] or latest", o->schedule);
    return -EINVAL;
  }
  int m = o->memory_model ? cs_mm_parse(o->memory_model) : CS_MM_SC;
  if (m < 0 || (m != CS_MM_SC && s->strategy == CS_SCHED_FREE)) {
    snprintf(why, n, "memory model '%s' is not accepted: expected sc, or "
             "fifo, relaxed or a2a3 with a schedule", o->memory_model);
    return -EINVAL;
  }
  s->model = (cs_mm_t)m;
  return 0;
}

int cs_coll_run(const cs_collective_t *c, const cs_coll_cfg_t *cfg_,
                const cs_coll_run_opts_t *o, cs_coll_result_t *r)
{
  cs_coll_cfg_t v1 = cfg_v1(cfg_), *cfg = &v1;
  static const cs_coll_run_opts_t none;
  if (!o)
    o = &none;
  memset(r, 0, sizeof(*r));
  r->bad_rank = -1;
  cs_sched_cfg_t s;
  if (cs_coll_check_full(c, cfg, r->why, sizeof(r->why)) < 0 ||
      run_sched(o, &s, r->why, sizeof(r->why)) < 0)
    return -EINVAL;
  if (o->timeout_s < 0 || o->timeout_s > 86400) {
    snprintf(r->why, sizeof(r->why), "timeout %g s is not accepted: expected "
             "0 (the default) to 86400", o->timeout_s);
    return -EINVAL;
  }
  int controlled = s.strategy != CS_SCHED_FREE;
  cs_coll_job_t cj;
  int rc = cs_coll_job_init(&cj, c, cfg, CS_FILL_DEFAULT, 1,
                            (uint64_t)(o->timeout_s * 1e9), o->trace != NULL,
                            controlled, 0);
  if (rc < 0)
    return rc;
  cj.job.sched = controlled ? &s : NULL;
  cj.job.trace = o->trace;
  cj.job.th.memory_model = s.model;
  opened_header(c, &cj.job.th); /* what cs_coll_open loaded, if it did */
  snprintf(cj.job.th.schedule, sizeof(cj.job.th.schedule), "%s",
           controlled ? o->schedule : "free");
  cs_pipe_t p;
  rc = cs_pipe_run(&p, &cj.job);
  if (rc == 0) {
    r->launched = 1;
    r->verified = cj.verified;
    r->wrong = cj.wrong;
    r->bad_rank = cj.bad_rank;
    r->bad_index = cj.bad_i;
    r->signals_bad = cj.signals_bad;
    r->median_ns = cj.median_ns;
    rc = cs_coll_job_ok(&cj) ? 0 : 1;
  } else {
    static const char *const reason[] = {
        "aborted", "a rank faulted", "a wait timed out", "a rank crashed",
        "interrupted", "aborted by a peer", "a rank-side check failed",
        "deadlock: no actor can run", "left the replayed schedule"};
    uint32_t a = p.res.abort_reason;
    if (p.failed == CS_PIPE_LAUNCH && p.launch_rc == 1)
      snprintf(r->why, sizeof(r->why), "the run was aborted: %s (rank %d)",
               a < sizeof(reason) / sizeof(reason[0]) ? reason[a] : "aborted",
               (int)p.res.abort_rank);
    else
      snprintf(r->why, sizeof(r->why), "the run failed at step %d: %s",
               (int)p.failed, cs_strerror(rc < 0 ? rc : -EIO));
    rc = rc < 0 ? rc : -ECANCELED;
  }
  cs_coll_job_fini(&cj);
  return rc;
}
