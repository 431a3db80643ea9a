/*
 * mpi_trace.c - the trace of a collsim-mpi run (mpi_trace.h): device hooks
 * that record each event of this rank with its Lamport clock, and the
 * gather, merge and write at the end, or at a wait timeout (the ranks
 * that answered the wavefront send theirs to rank 0, which writes them
 * before the abort). Owns the records until they are
 * written; does not own the clocks' transport (sim/transport_mpi.c) or the
 * file format (sim/trace/format.h).
 *
 * Clock rules (cs_mpi_t.clock): a producer or local event (store, put,
 * notify, fence, reduce, mark) ticks before its effect, so a notify
 * carries its own tick to the cell's clock word; a consumer (load,
 * wait-end) and a wait-begin tick after their observation, a wait-end
 * after the transport joined the cell's word. So a wait-end's clock
 * exceeds that of every notify it saw, and every rank's clocks increase.
 */
#define _GNU_SOURCE
#include "mpi_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../window/cs_error.h"
#include "../../window/fdio.h"
#include "../../run/pipeline.h"

static int is_consumer(uint32_t kind)
{
  return kind == CS_EV_LOAD || kind == CS_EV_WAIT;
}

/* One record of this rank; seq (the sort key) and t_ns hold the clock. */
static void append(cs_dev_t *d, cs_mpi_tracer_t *t, uint32_t kind,
                   const cs_event_t *ev, uint64_t clock, int32_t observed,
                   uint32_t flags)
{
  if (t->n == t->cap) {
    uint64_t cap = t->cap ? t->cap * 2 : 4096;
    cs_trace_rec_t *r = realloc(t->rec, cap * sizeof(*r));
    if (!r) {
      fprintf(stderr, "collsim-mpi: rank %u: out of memory for the trace\n",
              d->rank);
      MPI_Abort(t->m->comm, CS_EXIT_ABORTED);
    }
    t->rec = r;
    t->cap = cap;
  }
  cs_trace_rec_t *x = &t->rec[t->n++];
  cs_trace_rec_from_event(x, d->rank, kind, ev);
  x->seq = x->t_ns = clock;
  x->observed = observed;
  x->opcmp = (uint8_t)(ev->opcmp | flags);
  x->phase = (uint8_t)d->tag_phase;
  x->round = d->tag_round;
  x->step = d->tag_step;
}

static void hook_begin(cs_dev_t *d, const cs_event_t *ev, void *arg)
{
  cs_mpi_tracer_t *t = arg;
  if (!is_consumer(ev->kind))
    d->hook_seq = ++t->m->clock; /* before the effect (a notify sends it) */
}

static void hook_end(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                     void *arg)
{
  cs_mpi_tracer_t *t = arg;
  uint64_t clock = is_consumer(ev->kind) ? ++t->m->clock : d->hook_seq;
  append(d, t, ev->kind, ev, clock, observed, 0);
}

static void hook_block(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                       void *arg)
{
  cs_mpi_tracer_t *t = arg;
  append(d, t, CS_TR_WAIT_BEGIN, ev, ++t->m->clock, observed, 0);
}

static void hook_fail(cs_dev_t *d, const cs_event_t *ev, int32_t observed,
                      void *arg)
{
  cs_mpi_tracer_t *t = arg;
  append(d, t, ev->kind, ev, ++t->m->clock, observed, CS_TR_FAILED);
}

static const cs_dev_hooks_t mpi_trace_hooks = {hook_begin, hook_end,
                                               hook_fail, hook_block, NULL};

static void stop_trace(cs_mpi_t *m, void *arg, const cs_mpi_stopped_t *who,
                       uint64_t deadline);

void cs__mpi_trace_attach(cs_mpi_tracer_t *t, cs_dev_t *d, cs_mpi_t *m,
                          const char *path, const cs_trace_header_t *h)
{
  memset(t, 0, sizeof(*t));
  t->m = m;
  t->path = path;
  if (h)
    t->hdr = *h;
  d->hooks = &mpi_trace_hooks;
  d->hook_arg = t;
  m->stop_trace = stop_trace;
  m->stop_trace_arg = t;
}

/* (clock, rank): every rank's clocks are distinct, so this is total. */
static int cmp_rec(const void *pa, const void *pb)
{
  const cs_trace_rec_t *a = pa, *b = pb;
  if (a->seq != b->seq)
    return a->seq < b->seq ? -1 : 1;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Rank 0: the merged records as the file, seq 1, 2, ... in merged order. */
static int write_file(int fd, cs_trace_header_t *h, cs_trace_rec_t *all,
                      uint64_t n)
{
  qsort(all, n, sizeof(*all), cmp_rec);
  for (uint64_t i = 0; i < n; i++) {
    all[i].seq = i + 1;
    all[i].checksum = cs_trace_rec_sum(&all[i]);
  }
  uint8_t block[CS_TRACE_HEADER_BYTES];
  memset(block, 0, sizeof(block));
  cs_trace_header_seal(h);
  memcpy(block, h, sizeof(*h));
  int rc = cs_pwrite_full(fd, block, sizeof(block), 0);
  if (rc == 0)
    rc = cs_pwrite_full(fd, all, n * sizeof(*all), CS_TRACE_HEADER_BYTES);
  return rc;
}

/* A path that is not a plain name (the caller's own symbolic link):
 * written in place, at the end, under the output rule
 * (cs_trace_create_file refuses a device, a FIFO, another user's link). */
static int write_in_place(const char *path, cs_trace_header_t *h,
                          cs_trace_rec_t *all, uint64_t n)
{
  int created = 0, fd = cs_trace_create_file(path, &created);
  if (fd < 0)
    return fd;
  int rc = write_file(fd, h, all, n);
  if (close(fd) < 0 && rc == 0)
    rc = -errno;
  if (rc < 0 && created)
    unlink(path);
  return rc;
}

/* Rank 0: writes the trace to PATH.tmpXXXXXX beside path and renames it
 * over path once written, so a failed write leaves path as it was and no
 * temp file (the terminating signals are held meanwhile). Created only
 * now, after the gather: a run that aborts before leaves nothing. */
static int commit_file(const char *path, cs_trace_header_t *h,
                       cs_trace_rec_t *all, uint64_t n)
{
  struct stat sb;
  if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return write_in_place(path, h, all, n);
  size_t len = strlen(path);
  char *tmp = malloc(len + sizeof ".tmpXXXXXX");
  if (!tmp)
    return -ENOMEM;
  memcpy(tmp, path, len);
  memcpy(tmp + len, ".tmpXXXXXX", sizeof ".tmpXXXXXX");
  sigset_t stops, old;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigaddset(&stops, SIGHUP);
  sigprocmask(SIG_BLOCK, &stops, &old);
  int rc = 0, fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    rc = -errno;
  mode_t mask = umask(0);
  umask(mask);
  if (fd >= 0 && fchmod(fd, 0644 & ~mask) < 0) /* as an open(2) would */
    rc = -errno;
  if (fd >= 0 && rc == 0)
    rc = write_file(fd, h, all, n);
  if (fd >= 0 && close(fd) < 0 && rc == 0)
    rc = -errno;
  if (fd >= 0 && rc == 0)
    rc = cs_output_replace(tmp, path); /* an old file keeps mode and owner */
  if (fd >= 0 && rc < 0)
    unlink(tmp);
  sigprocmask(SIG_SETMASK, &old, NULL);
  free(tmp);
  return rc;
}

/* The most records one MPI_Gatherv carries in all: its counts and
 * displacements are ints (of records, the datatype rec). The environment
 * variable COLLSIM_MPI_TRACE_MAX (a smaller whole number) lowers it, so a
 * test can reach the limit. */
static uint64_t gather_max(void)
{
  const char *s = getenv("COLLSIM_MPI_TRACE_MAX");
  char *end = NULL;
  unsigned long long v = s && *s ? strtoull(s, &end, 10) : 0;
  return v && end && !*end && v < INT_MAX ? v : INT_MAX;
}

/* Rank 0: the int counts and displacements of every rank's records
 * (n[r], gathered as uint64) for the MPI_Gatherv, or -EOVERFLOW after
 * one line when they do not fit. */
static int gather_counts(const uint64_t *n, int size, const char *path,
                         int *counts, int *displs, uint64_t *total)
{
  uint64_t max = gather_max(), sum = 0;
  int big = 0;
  for (int r = 0; r < size; r++) {
    sum += n[r];
    big = n[r] > n[big] ? r : big;
  }
  if (sum > max) {
    cs_cli_error("mpi run", "--trace %s: %llu records in all (rank %d: "
                 "%llu) exceed the %llu records one MPI_Gatherv can gather (int "
                 "counts): trace fewer calls (--iters) or a smaller --count",
                 path, (unsigned long long)sum, big,
                 (unsigned long long)n[big], (unsigned long long)max);
    return -EOVERFLOW;
  }
  for (int r = 0; r < size; r++) {
    displs[r] = (int)*total;
    counts[r] = (int)n[r];
    *total += n[r];
  }
  return 0;
}

int cs__mpi_trace_write(cs_mpi_tracer_t *t, const char *path,
                        cs_trace_header_t *h)
{
  MPI_Comm comm = t->m->comm;
  int rank = t->m->rank, size = t->m->nranks, rc = 0;
  t->m->stop_trace = NULL; /* the records go now, not at a timeout */
  MPI_Datatype rec;
  MPI_Type_contiguous((int)sizeof(cs_trace_rec_t), MPI_BYTE, &rec);
  MPI_Type_commit(&rec);
  uint64_t mine = t->n, *n = NULL, total = 0;
  int *counts = NULL, *displs = NULL;
  cs_trace_rec_t *all = NULL;
  if (rank == 0) {
    n = calloc((size_t)size, sizeof(uint64_t));
    counts = calloc((size_t)size, sizeof(int));
    displs = calloc((size_t)size, sizeof(int));
  }
  MPI_Gather(&mine, 1, MPI_UINT64_T, n, 1, MPI_UINT64_T, 0, comm);
  if (rank == 0 && n && counts && displs)
    rc = gather_counts(n, size, path, counts, displs, &total);
  if (rank == 0 && rc == 0) {
    all = n && counts && displs ? malloc((total ? total : 1) * sizeof(*all))
                                : NULL;
    if (!all) {
      fprintf(stderr, "collsim-mpi: rank 0: out of memory for the trace\n");
      MPI_Abort(comm, CS_EXIT_ABORTED);
    }
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm); /* no gather when it cannot fit */
  if (rc == 0)
    MPI_Gatherv(t->rec, (int)mine, rec, all, counts, displs, rec, 0, comm);
  free(t->rec);
  t->rec = NULL;
  t->n = t->cap = 0;
  if (rank == 0 && rc == 0)
    rc = commit_file(path, h, all, total);
  free(all);
  free(n);
  free(counts);
  free(displs);
  MPI_Type_free(&rec);
  MPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  return rc;
}

/* FNV-1a 64 of every rank's input row, in rank order, as collsim run
 * hashes them: the --input rows, or the fill's (pure functions of the
 * seed, so any rank can make them all). */
static uint64_t input_hash(const cs_ar_cfg_t *c, cs_fill_t fill, uint64_t seed,
                           const uint8_t *rows)
{
  size_t row = c->count * cs_dtype_size(c->dtype);
  if (rows)
    return cs_trace_fnv64_more(CS_TRACE_FNV64_INIT, rows, row * c->nranks);
  uint8_t *buf = malloc(row ? row : 1);
  uint64_t h = CS_TRACE_FNV64_INIT;
  for (uint32_t r = 0; buf && r < c->nranks; r++) {
    cs_ar_fill(fill, c, seed, r, buf);
    h = cs_trace_fnv64_more(h, buf, row);
  }
  free(buf);
  return buf ? h : 0;
}

void cs__mpi_trace_header(const cs_ar_cfg_t *c, const cs_layout_t *l,
                          cs_fill_t fill, uint64_t seed, const uint8_t *rows,
                          const cs_cli_common_t *com, cs_trace_header_t *h)
{
  memset(h, 0, sizeof(*h));
  h->count = c->count;
  h->algo = c->algo;
  h->dtype = c->dtype;
  h->op = c->op;
  h->fill = fill;
  h->seed = seed;
  h->input_hash = input_hash(c, fill, seed, rows);
  h->tile_bytes = c->tile_bytes;
  h->iters = c->iters;
  h->bug = c->bug;
  h->tick_ns = CS_MPI_TICK_NS;
  snprintf(h->schedule, sizeof(h->schedule), "%s", CS_MPI_SCHEDULE);
  snprintf(h->version_str, sizeof(h->version_str), "%s", CS_VERSION_STRING);
  cs_trace_header_frame(h, c->nranks, l, com->timeout_ns, cs_now_ns());
  h->fault_kind = com->has_fault ? com->fault.kind : 0;
  h->fault_rank = com->fault.rank;
  h->fault_event = com->fault.event;
  h->modes = cs_cli_modes(c);
  cs_cli_shape_to_header(c, h);
}

/* ------------------------------------------------------------ aborted run */

#define TAG_COUNT 0x6373 /* a stopped rank's record count, then its records */
#define TAG_RECS  0x6374


/* A stopped rank: its records to rank 0 (none if an int cannot count
 * them). The requests stay alive after a deadline: the caller keeps
 * driving progress until the job ends. */
static void send_recs(cs_mpi_tracer_t *t, MPI_Datatype rec, uint64_t deadline)
{
  static uint64_t n;
  n = t->n <= (uint64_t)INT_MAX ? t->n : 0;
  MPI_Request rq;
  MPI_Isend(&n, 1, MPI_UINT64_T, 0, TAG_COUNT, t->m->comm, &rq);
  if (cs_mpi_complete_by(&rq, deadline) < 0 || !n)
    return;
  MPI_Isend(t->rec, (int)n, rec, 0, TAG_RECS, t->m->comm, &rq);
  cs_mpi_complete_by(&rq, deadline);
}

/* Rank 0: appends a launcher-style record after every clock (c + k). */
static void end_rec(cs_trace_rec_t *x, uint32_t kind, uint32_t rank,
                    int32_t value, int32_t observed, uint32_t step,
                    uint64_t clock)
{
  memset(x, 0, sizeof(*x));
  x->seq = x->t_ns = clock;
  x->rank = x->peer = rank;
  x->value = value;
  x->observed = observed;
  x->kind = (uint16_t)kind;
  x->step = step;
}

/* Rank 0: the records of the ranks that reported (their own after rank
 * 0's), the hung ranks' fault records and the abort record into all;
 * returns how many. all has room for n + what `n` counts + nranks + 1. */
static uint64_t recv_recs(cs_mpi_tracer_t *t, MPI_Datatype rec,
                          const cs_mpi_stopped_t *who, const uint64_t *n,
                          cs_trace_rec_t *all, uint64_t deadline)
{
  uint64_t k = t->n, clock = 0;
  memcpy(all, t->rec, t->n * sizeof(*all));
  for (int r = 1; r < t->m->nranks; r++) {
    MPI_Request rq;
    if (!n[r])
      continue;
    MPI_Irecv(all + k, (int)n[r], rec, r, TAG_RECS, t->m->comm, &rq);
    if (cs_mpi_complete_by(&rq, deadline) == 0)
      k += n[r];
  }
  for (uint64_t i = 0; i < k; i++)
    clock = all[i].seq > clock ? all[i].seq : clock;
  for (int r = 0; r < t->m->nranks; r++)
    if (who->hung[r])
      end_rec(&all[k++], CS_TR_FAULT, (uint32_t)r, CS_RX_HUNG,
              (int32_t)who->event[r], 2, clock + 1);
  end_rec(&all[k++], CS_TR_ABORT,
          who->first < 0 ? UINT32_MAX : (uint32_t)who->first,
          CS_ABORT_TIMEOUT, 0, 0, clock + 2);
  return k;
}

/* Rank 0: takes the reported ranks' records and writes the trace. */
static void collect(cs_mpi_tracer_t *t, MPI_Datatype rec,
                    const cs_mpi_stopped_t *who, uint64_t deadline)
{
  /* Static, and `all` never freed: a receive given up on may still
   * complete into them until MPI_Abort, which comes next. */
  static uint64_t in[CS_MAX_RANKS];
  uint64_t n[CS_MAX_RANKS] = {0}, total = t->n, got = 0;
  int from = 0;
  for (int r = 1; r < t->m->nranks; r++) {
    MPI_Request rq;
    if (!who->reported[r])
      continue;
    MPI_Irecv(&in[r], 1, MPI_UINT64_T, r, TAG_COUNT, t->m->comm, &rq);
    /* a rank whose count never comes is left out */
    if (cs_mpi_complete_by(&rq, deadline) == 0)
      n[r] = in[r];
    total += n[r];
    from += 1; /* it reported (its records may still be missing) */
  }
  cs_trace_rec_t *all = malloc((total + (uint64_t)t->m->nranks + 1) *
                               sizeof(*all));
  int rc = all ? 0 : -ENOMEM;
  if (all) {
    got = recv_recs(t, rec, who, n, all, deadline);
    rc = commit_file(t->path, &t->hdr, all, got);
  }
  if (rc < 0)
    cs_cli_error("mpi run", "--trace %s: write failed: %s", t->path,
                 cs_strerror(rc));
  else
    fprintf(stderr, "trace: %s (aborted run: %llu records, of rank 0 and "
            "the %d other rank%s that reported, then the abort)\n", t->path,
            (unsigned long long)got, from, from == 1 ? "" : "s");
  fflush(stderr);
}

static void stop_trace(cs_mpi_t *m, void *arg, const cs_mpi_stopped_t *who,
                       uint64_t deadline)
{
  cs_mpi_tracer_t *t = arg;
  MPI_Datatype rec;
  MPI_Type_contiguous((int)sizeof(cs_trace_rec_t), MPI_BYTE, &rec);
  MPI_Type_commit(&rec);
  if (m->rank != 0)
    send_recs(t, rec, deadline);
  else if (t->path)
    collect(t, rec, who, deadline);
  /* rec stays committed: a send may still be in flight until MPI_Abort */
}
