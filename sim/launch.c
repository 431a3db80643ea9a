/*
 * launch.c - fork, watch and reap the ranks of one run.
 *
 * The launcher blocks SIGCHLD/SIGINT/SIGTERM/SIGHUP and sleeps in
 * sigtimedwait(), so a rank's death, a user's Ctrl-C and the grace-period
 * deadline are all handled in one loop without signal handlers. On the first
 * failure it sets the abort word, wakes every sleeping waiter, waits up to
 * grace_ms for the ranks to notice, then SIGKILLs the rest. Ranks die with
 * the launcher (PR_SET_PDEATHSIG), and the region has no name to leak.
 */
#define _GNU_SOURCE
#include "launch.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"
#include "transport.h"

/* The online CPUs, read once per process: sysconf reads a file every
 * time, twice per run, which many short runs in a row notice. */
static long online_cpus(void)
{
  static long cpus;
  if (cpus == 0)
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus;
}

uint32_t cs_launch_spin_default(uint32_t nranks)
{
  long cpus = online_cpus();
  /* With a CPU per rank, spin far longer than a spin hop and than a
   * cross-core futex wake, so a waiter rarely sleeps, yet short enough to
   * give the core away when something else wants it (docs/measurements.md
   * has the figures). Oversubscribed, do not spin at all: the notifier
   * needs this CPU, so yield it at once (cs_launch_yield_default). */
  return (cpus > 0 && nranks <= (uint32_t)cpus) ? 2000u : 0u;
}

uint32_t cs_launch_yield_default(uint32_t nranks)
{
  long cpus = online_cpus();
  /* More ranks than CPUs: the rank a waiter needs is usually runnable but
   * not running, and sched_yield hands it the CPU sooner than a futex
   * sleep and wake (two context switches) would. After this many yields
   * without progress, sleep (the count: docs/measurements.md). */
  return (cpus > 0 && nranks > (uint32_t)cpus) ? 200u : 0u;
}

typedef struct rank_proc {
  pid_t pid;
  int   reaped;
  int   killed; /* SIGKILLed by the launcher after the grace period */
  int   status;
  uint64_t prog_ev;    /* its event counter when last seen to change */
  uint64_t prog_at;    /* ... and when (0: not yet looked at) */
  int   had_turn;      /* controlled mode: it held the turn when last seen */
  int   stopped; /* stopped by a signal (SIGSTOP, a debugger) at the abort */
} rank_proc_t;

/* With no more ranks than allowed CPUs, binds rank r to the r-th of them
 * (as Open MPI binds to cores for small runs): left to itself the kernel
 * sometimes keeps two spinning ranks on one CPU for a whole run. */
void cs_launch_pin(uint32_t rank, uint32_t nranks)
{
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0 ||
      (uint32_t)CPU_COUNT(&allowed) < nranks)
    return;
  uint32_t k = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed))
      continue;
    if (k++ == rank) {
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
      return;
    }
  }
}

/* A rank that cannot start or run records why (start_err) and exits with
 * CS_RX_ERROR; the launcher reports the cause. */
static _Noreturn void rank_error(cs_world_t *w, uint32_t rank, int err)
{
  w->ctl->rank[rank].start_err = err;
  _exit(CS_RX_ERROR);
}

/* A rank's start in its own process: the caller's signal mask, death with
 * the launcher, its CPU and its own mapping of the region. */
static void rank_setup(cs_world_t *w, uint32_t rank, pid_t parent,
                       const sigset_t *oldmask, int controlled)
{
  sigprocmask(SIG_SETMASK, oldmask, NULL);
  signal(SIGINT, SIG_IGN); /* Ctrl-C goes to the launcher, which aborts */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(CS_RX_ABORTED);
  if (!controlled) /* a controlled rank keeps the launcher's one CPU */
    cs_launch_pin(rank, w->ctl->nranks);
  int err = cs_world_remap(w);
  if (err < 0)
    rank_error(w, rank, err);
}

/* One run of the body in a rank process; returns its code. */
static int rank_run(cs_world_t *w, uint32_t rank, cs_rank_fn fn, void *arg,
                    const cs_launch_opts_t *o)
{
  cs_dev_t d;
  int err = cs_dev_init(&d, w, rank, &o->fault,
                        o->sched ? &cs_transport_controlled : &cs_transport_free);
  if (err < 0)
    rank_error(w, rank, err);
  d.hooks = o->hooks;
  d.hook_arg = o->hook_arg;
  d.st->pid = (int32_t)getpid();
  __atomic_store_n(&d.st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
  int rc = fn(&d, arg);
  /* A fault aimed past the rank's last event strikes as it finishes, so an
   * injected fault is never silently skipped. */
  if (d.fault_at != UINT64_MAX)
    cs__dev_strike(&d);
  /* Under a schedule a body that failed is not DONE for the scheduler: it
   * keeps the turn (or, before its first event, keeps the launcher
   * waiting for it), so no rank runs between its return and the abort
   * that its exit brings. Handed back, the others ran on until the
   * launcher reaped it, as far as the OS let them: one schedule, a
   * different trace each time. */
  if (d.ops->done && rc == 0) /* (only the controlled transport has one) */
    d.ops->done(&d);
  __atomic_store_n(&d.st->state, rc == 0 ? CS_RS_DONE : CS_RS_FAILED,
                   __ATOMIC_RELEASE);
  cs_dev_fini(&d);
  return rc;
}

static _Noreturn void rank_main(cs_world_t *w, uint32_t rank, cs_rank_fn fn,
                                void *arg, const cs_launch_opts_t *o,
                                pid_t parent, const sigset_t *oldmask)
{
  rank_setup(w, rank, parent, oldmask, o->sched != NULL);
  _exit(rank_run(w, rank, fn, arg, o));
}

/* ------------------------------------------------------------ the pool */

/* What a pool's ranks watch, in memory shared with them: run counts the
 * runs started (a rank begins the next one when it changes), fin[r] is
 * the last run rank r finished cleanly. */
typedef struct pool_words {
  uint32_t run;
  uint32_t fin[CS_MAX_RANKS];
} pool_words_t;

struct cs_launch_pool {
  pool_words_t *words;
  uint32_t      n;
  pid_t         pid[CS_MAX_RANKS]; /* its ranks; 0: none (gone) */
  int           cpu;    /* the one CPU its controlled ranks run on */
  int           cpu_fd; /* its claim on that CPU (claim_cpu), or -1 */
  cs_ctl_t      ctl0;  /* the control block as the first run found it */
  const cs_dev_hooks_t *hooks; /* the hooks its ranks were forked with */
};

/* A pooled rank: the body once per run, until it fails or is killed.
 * `seen` is the run count before its first run. */
static _Noreturn void pool_rank_main(cs_world_t *w, uint32_t rank, cs_rank_fn fn,
                                     void *arg, const cs_launch_opts_t *o,
                                     pid_t parent, const sigset_t *oldmask,
                                     uint32_t seen)
{
  pool_words_t *pw = o->pool->words;
  rank_setup(w, rank, parent, oldmask, o->sched != NULL);
  for (;;) {
    uint32_t run;
    while ((run = __atomic_load_n(&pw->run, __ATOMIC_ACQUIRE)) == seen)
      syscall(SYS_futex, &pw->run, FUTEX_WAIT, seen, NULL, NULL, 0);
    seen = run;
    int rc = rank_run(w, rank, fn, arg, o);
    if (rc != 0)
      _exit(rc);
    __atomic_store_n(&pw->fin[rank], run, __ATOMIC_RELEASE);
    kill(parent, SIGCHLD); /* the launcher looks at its ranks again */
  }
}

int cs_launch_pool_open(cs_launch_pool_t **pool, uint32_t nranks)
{
  *pool = NULL;
  if (nranks < 1 || nranks > CS_MAX_RANKS)
    return -EINVAL;
  cs_launch_pool_t *p = calloc(1, sizeof(*p));
  if (!p)
    return -ENOMEM;
  p->words = mmap(NULL, sizeof(pool_words_t), PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p->words == MAP_FAILED) {
    free(p);
    return -ENOMEM;
  }
  p->n = nranks;
  p->cpu_fd = -1;
  *pool = p;
  return 0;
}


void cs_launch_pool_reset(const cs_launch_pool_t *pool, cs_world_t *w)
{
  memcpy(w->ctl, &pool->ctl0, sizeof(cs_ctl_t));
  cs_ctl_t *c = w->ctl;
  memset(w->base + sizeof(cs_ctl_t), 0, c->off_trace - sizeof(cs_ctl_t));
}

/* Kills and reaps what is left of the pool's ranks. */
static void pool_end(cs_launch_pool_t *pool)
{
  for (uint32_t r = 0; r < pool->n; r++)
    if (pool->pid[r] > 0)
      kill(pool->pid[r], SIGKILL);
  for (uint32_t r = 0; r < pool->n; r++) {
    while (pool->pid[r] > 0 && waitpid(pool->pid[r], NULL, 0) < 0 && errno == EINTR)
      ;
    pool->pid[r] = 0;
  }
  if (pool->cpu_fd >= 0) /* the next run forks afresh and claims again */
    close(pool->cpu_fd);
  pool->cpu_fd = -1;
}

int cs_launch_pool_alive(cs_launch_pool_t *pool)
{
  if (!pool)
    return 0;
  for (uint32_t r = 0; r < pool->n; r++) {
    /* A kept rank killed from outside between runs is a zombie by now:
     * its pid must not be taken for a waiting rank. */
    pid_t gone = pool->pid[r] > 0 ? waitpid(pool->pid[r], NULL, WNOHANG) : 0;
    if (gone == pool->pid[r] || (gone < 0 && errno == ECHILD))
      pool->pid[r] = 0;
    if (pool->pid[r] <= 0) {
      pool_end(pool); /* the others too: the next run forks afresh */
      return 0;
    }
  }
  return 1;
}

void cs_launch_pool_close(cs_launch_pool_t *pool)
{
  if (!pool)
    return;
  pool_end(pool);
  munmap(pool->words, sizeof(pool_words_t));
  free(pool);
}

/* The pool's ranks begin the next run. */
static void pool_start(cs_launch_pool_t *pool)
{
  __atomic_add_fetch(&pool->words->run, 1, __ATOMIC_RELEASE);
  syscall(SYS_futex, &pool->words->run, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void wake_all(cs_world_t *w)
{
  cs_ctl_t *c = w->ctl;
  for (uint32_t r = 0; r < c->nranks; r++) {
    cs_rank_status_t *st = &c->rank[r];
    if (st->wait_slot >= c->layout.nslots)
      continue;
    const cs_slot_t *s = &c->layout.slot[st->wait_slot];
    if (!cs_slot_cell_ok(s, st->wait_cell))
      continue;
    int32_t *cell = (int32_t *)(cs_world_window(w, r) +
                                cs_slot_cell_off(s, st->wait_cell));
    syscall(SYS_futex, cell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
  }
}

static void set_abort(cs_world_t *w, uint32_t reason, int32_t rank,
                      const char *msg)
{
  cs_ctl_t *c = w->ctl;
  uint32_t expect = CS_ABORT_NONE;
  if (__atomic_compare_exchange_n(&c->abort_word, &expect, reason, 0,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    c->abort_rank = rank;
    snprintf(c->abort_msg, sizeof(c->abort_msg), "%s", msg);
  }
  wake_all(w);
}

static const char *state_name(uint32_t s)
{
  switch (s) {
  case CS_RS_INIT: return "not started";
  case CS_RS_RUNNING: return "running";
  case CS_RS_WAITING: return "waiting";
  case CS_RS_DONE: return "done";
  case CS_RS_FAILED: return "failed";
  case CS_RS_HUNG: return "hung (injected fault)";
  default: return "?";
  }
}

/* ", last notified by rank R at its event E" for rank r's cell, or
 * ", never notified"; empty without notes for the slot. */
static void note_str(const cs_world_t *w, uint32_t r, char *buf, size_t n)
{
  const cs_ctl_t *c = w->ctl;
  const cs_rank_status_t *st = &c->rank[r];
  buf[0] = 0;
  if (st->wait_slot != c->note_slot || st->wait_cell >= c->note_cells)
    return;
  uint64_t note = __atomic_load_n(cs_world_notes(w, r) + st->wait_cell,
                                  __ATOMIC_RELAXED);
  if (!note)
    snprintf(buf, n, "; never notified");
  else
    snprintf(buf, n, "; last notified by rank %u at its event %llu",
             CS_NOTE_RANK(note), (unsigned long long)CS_NOTE_EVENT(note));
}

void cs_launch_print_wait(const cs_wait_line_t *l, const cs_wait_where_t *where,
                          FILE *out)
{
  int eq = l->cmp == CS_CMP_EQ;
  int met = eq ? l->value == l->target : l->value >= l->target;
  const char *cmp = eq ? "==" : ">=";
  char pos[160] = "";
  if (where && where->fn)
    where->fn(where->arg, l->rank, l->slot, l->cell, l->target, pos + 2,
              sizeof(pos) - 2);
  if (pos[2])
    pos[0] = ';', pos[1] = ' ';
  else
    pos[0] = 0;
  const char *note = l->note ? l->note : "";
  if (met)
    fprintf(out, "  rank %u: wait satisfied at event %llu (%s[%u] %s %d: "
            "cell is %d), stopped before it returned%s%s\n", l->rank,
            (unsigned long long)l->event, l->slot_name, l->cell, cmp,
            l->target, l->value, pos, note);
  else
    fprintf(out, "  rank %u: blocked at event %llu in wait(%s[%u] %s %d): "
            "cell is %d, expected %s %d%s%s\n", l->rank,
            (unsigned long long)l->event, l->slot_name, l->cell, cmp,
            l->target, l->value, cmp, l->target, pos, note);
}

void cs_launch_print_state(uint32_t rank, uint32_t state, uint64_t event,
                           FILE *out)
{
  fprintf(out, "  rank %u: %s at event %llu\n", rank, state_name(state),
          (unsigned long long)event);
}

/* The wavefront line of rank r, which sleeps in a wait: blocked, or met
 * by a notify that came after it went to sleep (the run stopped before it
 * returned). */
static void print_wait(const cs_world_t *w, uint32_t r,
                       const cs_wait_where_t *where, FILE *out)
{
  const cs_ctl_t *c = w->ctl;
  const cs_rank_status_t *st = &c->rank[r];
  const cs_slot_t *s = &c->layout.slot[st->wait_slot];
  int32_t v = 0;
  if (cs_slot_cell_ok(s, st->wait_cell))
    v = __atomic_load_n((int32_t *)(cs_world_window(w, r) +
                                    cs_slot_cell_off(s, st->wait_cell)),
                        __ATOMIC_ACQUIRE);
  char note[96];
  note_str(w, r, note, sizeof(note));
  cs_wait_line_t l = {.rank = r, .event = st->event, .slot_name = s->name,
                      .slot = st->wait_slot, .cell = st->wait_cell,
                      .cmp = st->wait_cmp, .target = st->wait_value,
                      .value = v, .note = note};
  cs_launch_print_wait(&l, where, out);
}

void cs_launch_print_wavefront(const cs_world_t *w, const cs_wait_where_t *where,
                               FILE *out)
{
  const cs_ctl_t *c = w->ctl;
  fprintf(out, "hang wavefront:\n");
  for (uint32_t r = 0; r < c->nranks; r++) {
    const cs_rank_status_t *st = &c->rank[r];
    if (st->state == CS_RS_WAITING && st->wait_slot < c->layout.nslots)
      print_wait(w, r, where, out);
    else
      cs_launch_print_state(r, st->state, st->event, out);
  }
}

static int failed(int status)
{
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A rank's exit that is a consequence of an abort, not its cause. */
static int secondary(int status)
{
  return WIFEXITED(status) && WEXITSTATUS(status) == CS_RX_ABORTED;
}

static void report_rank(FILE *out, const cs_world_t *w, uint32_t r, int status)
{
  unsigned long long ev = (unsigned long long)w->ctl->rank[r].event;
  if (WIFSIGNALED(status))
    fprintf(out, "rank %u: killed by SIG%s at event %llu\n", r,
            sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?",
            ev);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == CS_RX_ERROR &&
           w->ctl->rank[r].start_err < 0)
    fprintf(out, "rank %u: internal error at event %llu: %s\n", r, ev,
            cs_strerror(w->ctl->rank[r].start_err));
  else if (WIFEXITED(status) && WEXITSTATUS(status) == CS_RX_ERROR)
    fprintf(out, "rank %u: internal error (out of memory?) at event %llu\n", r, ev);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == CS_RX_EARLY)
    fprintf(out, "rank %u exited at event %llu, before its body returned "
            "(exit status 0)\n", r, ev);
  else if (WIFEXITED(status))
    fprintf(out, "rank %u: exited with status %d at event %llu\n", r,
            WEXITSTATUS(status), ev);
}

/* The launcher's state of one run. */
typedef struct launch {
  cs_world_t        *w;
  cs_launch_opts_t   o;
  FILE              *out;
  uint32_t           n;
  rank_proc_t       *p;           /* per rank */
  uint8_t           *alive_ranks; /* per rank: forked and not reaped */
  uint32_t           alive;
  cs_sched_t        *sched;       /* controlled mode, else NULL */
  int                aborted;
  pid_t              before[256]; /* the caller's children before the fork */
  uint64_t           grace_ns;
  uint64_t           kill_at;     /* SIGKILL the rest at this time */
  uint64_t           next_tick;
  int                doorbell;    /* a rank asked for the tick */
  int                sched_state, sched_woken;
  sigset_t           set, old, chld_only;
  struct sigaction   old_chld;
  cs_launch_result_t res;
} launch_t;

/* Whether process pid is stopped (state T, or t under a tracer), read
 * from /proc: a stop is no exit, so waitpid without WUNTRACED never says. */
static int proc_stopped(pid_t pid)
{
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  size_t k = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[k] = 0;
  const char *close = strrchr(buf, ')'); /* the name may hold anything */
  return close && close[1] == ' ' && (close[2] == 'T' || close[2] == 't');
}

/* The abort is decided: the grace period starts. Notes which ranks are
 * stopped by a signal now, before the launcher's SIGKILL ends them: a
 * stopped rank is what the others waited for. */
static void start_grace(launch_t *L)
{
  L->aborted = 1;
  L->kill_at = cs_now_ns() + L->grace_ns;
  int any = 0;
  for (uint32_t r = 0; r < L->n; r++)
    if (L->p[r].pid && !L->p[r].reaped)
      any |= L->p[r].stopped = proc_stopped(L->p[r].pid);
  if (!any)
    return;
  /* Still stopped 5 ms later: a tracer's stop at every system call (strace
   * -f) passes in microseconds and blames nobody. */
  struct timespec pause = {0, 5000000};
  nanosleep(&pause, NULL);
  for (uint32_t r = 0; r < L->n; r++)
    if (L->p[r].stopped)
      L->p[r].stopped = proc_stopped(L->p[r].pid);
}

/* Memory and the scheduler. 0 or -errno. */
static int launch_init(launch_t *L, cs_world_t *w, const cs_launch_opts_t *opts)
{
  memset(L, 0, sizeof(*L));
  if (opts)
    L->o = *opts;
  L->w = w;
  L->out = L->o.report ? L->o.report : stderr;
  L->n = w->ctl->nranks;
  L->grace_ns = (L->o.grace_ms ? L->o.grace_ms : 250) * 1000000ull;
  L->kill_at = UINT64_MAX;
  L->res.abort_rank = -1;
  w->ctl->spin_iters = L->o.spin_iters ? L->o.spin_iters : cs_launch_spin_default(L->n);
  w->ctl->yield_iters = cs_launch_yield_default(L->n);
  for (uint32_t r = 0; r < L->n; r++)
    w->ctl->rank[r].wait_slot = UINT32_MAX;
  L->p = calloc(L->n, sizeof(*L->p));
  L->alive_ranks = calloc(L->n, 1);
  if (!L->p || !L->alive_ranks)
    goto out_mem;
  if (L->o.sched) {
    cs_sched_cfg_t scfg = *L->o.sched;
    scfg.hooks = L->o.hooks; /* the scheduler's landings are hooked too */
    scfg.hook_arg = L->o.hook_arg;
    int err = cs__sched_init(&L->sched, w, &scfg);
    if (err < 0) {
      free(L->p);
      free(L->alive_ranks);
      return err;
    }
  }
  return 0;
out_mem:
  free(L->p);
  free(L->alive_ranks);
  return -ENOMEM;
}

/* SIGCHLD must not be ignored (the kernel would reap the ranks before
 * waitpid sees them); SIGINT, SIGTERM and SIGHUP abort the run unless the
 * caller ignores them (nohup, a background job). */
static void block_signals(launch_t *L)
{
  struct sigaction dfl = {.sa_handler = SIG_DFL}, cur;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &L->old_chld);
  sigemptyset(&L->set);
  sigaddset(&L->set, SIGCHLD);
  if (L->o.tick)
    sigaddset(&L->set, CS_LAUNCH_DOORBELL);
  L->chld_only = L->set; /* drained before the caller's mask comes back */
  static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; i++)
    if (sigaction(stops[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
      sigaddset(&L->set, stops[i]);
  sigprocmask(SIG_BLOCK, &L->set, &L->old);
}

/* Drains any SIGCHLD (and doorbell) left pending, then restores the
 * caller's mask (a SIGINT that came after the last rank stays pending and
 * is delivered). */
static void restore_signals(launch_t *L)
{
  struct timespec zero = {0, 0};
  while (sigtimedwait(&L->chld_only, NULL, &zero) > 0)
    ;
  sigprocmask(SIG_SETMASK, &L->old, NULL);
  sigaction(SIGCHLD, &L->old_chld, NULL);
}

/* Forks every rank (a pool's ranks: only when it has none; they begin
 * the run together). 0, or -errno when a fork failed (the run is then
 * aborted and the forked ones are reaped by the watch loop). */
static int fork_ranks(launch_t *L, cs_rank_fn fn, void *arg)
{
  cs_launch_pool_t *pool = L->o.pool;
  int forked = !cs_launch_pool_alive(pool);
  uint32_t seen = pool ? pool->words->run : 0;
  fflush(NULL); /* children must not flush the parent's buffers again */
  pid_t parent = getpid();
  for (uint32_t r = 0; r < L->n; r++) {
    pid_t pid = forked ? fork() : pool->pid[r];
    if (pid == 0 && pool)
      pool_rank_main(L->w, r, fn, arg, &L->o, parent, &L->old, seen);
    if (pid == 0)
      rank_main(L->w, r, fn, arg, &L->o, parent, &L->old);
    if (pid < 0) {
      int err = -errno;
      set_abort(L->w, CS_ABORT_SIGNAL, -1, "could not fork every rank");
      L->aborted = 1;
      L->kill_at = cs_now_ns();
      return err;
    }
    L->p[r].pid = pid;
    if (pool)
      pool->pid[r] = pid;
    L->alive_ranks[r] = 1;
    L->alive++;
  }
  if (pool)
    pool_start(pool);
  return 0;
}

/* Whether rank r ended this run: it exited (a pool loses it; *status is
 * set), or as a pool's rank it finished the run and waits for the next
 * (status 0). */
static int rank_ended(launch_t *L, uint32_t r, int *status)
{
  rank_proc_t *p = &L->p[r];
  cs_launch_pool_t *pool = L->o.pool;
  if (waitpid(p->pid, status, WNOHANG) == p->pid) {
    if (pool)
      pool->pid[r] = 0;
    /* Exit 0 is a success only after the body returned (CS_RS_DONE): a
     * body that calls exit(0) part-way stopped the run, not finished it. */
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0 &&
        __atomic_load_n(&L->w->ctl->rank[r].state, __ATOMIC_ACQUIRE) != CS_RS_DONE)
      *status = CS_RX_EARLY << 8; /* as waitpid words an exit(CS_RX_EARLY) */
    return 1;
  }
  *status = 0;
  return pool && __atomic_load_n(&pool->words->fin[r], __ATOMIC_ACQUIRE) ==
                     __atomic_load_n(&pool->words->run, __ATOMIC_RELAXED);
}

/* Reaps our ranks only (the caller may have children of its own); the
 * first failure aborts the run. */
static void reap_ranks(launch_t *L)
{
  int status;
  for (uint32_t r = 0; r < L->n && L->alive > 0; r++) {
    rank_proc_t *p = &L->p[r];
    if (p->pid <= 0 || p->reaped || !rank_ended(L, r, &status))
      continue;
    p->reaped = 1;
    p->status = status;
    L->alive_ranks[r] = 0;
    L->alive--;
    if (!failed(status) || L->aborted)
      continue;
    start_grace(L);
    if (!secondary(status)) {
      char msg[128];
      snprintf(msg, sizeof(msg), "rank %u died", r);
      set_abort(L->w, CS_ABORT_CRASH, (int32_t)r, msg);
    } else {
      wake_all(L->w);
    }
  }
}

static void kill_ranks(launch_t *L)
{
  for (uint32_t r = 0; r < L->n; r++)
    if (L->p[r].pid > 0 && !L->p[r].reaped) {
      kill(L->p[r].pid, SIGKILL);
      L->p[r].killed = 1;
    }
  L->kill_at = UINT64_MAX; /* reap them next; SIGKILL cannot be ignored */
}

/* The tick, the scheduler's share of the loop; returns how long the loop
 * may sleep in sigtimedwait. */
static uint64_t run_parts(launch_t *L, uint64_t now)
{
  uint64_t wait_ns = L->aborted && L->kill_at != UINT64_MAX ? L->kill_at - now
                                                            : 1000000000ull;
  if (L->o.tick) {
    uint64_t tick_ns = L->o.tick_ns ? L->o.tick_ns : 1000000ull;
    if (now >= L->next_tick || L->doorbell) {
      L->doorbell = 0;
      L->o.tick(L->o.tick_arg);
      L->next_tick = now + tick_ns;
    }
    if (wait_ns > L->next_tick - now)
      wait_ns = L->next_tick - now;
  }
  if (L->sched && !L->aborted && L->sched_state == CS_SCHED_RUNNING) {
    /* Controlled mode: schedule for a while, then look at signals. */
    L->sched_state = cs__sched_step(L->sched, L->alive_ranks);
    if (L->sched_state == CS_SCHED_STOPPED)
      start_grace(L);
    wait_ns = 0;
  }
  return wait_ns;
}

/* Sleeps until a signal or wait_ns: a rank's death, the doorbell, or a
 * person's SIGINT/SIGTERM/SIGHUP (which aborts the run). */
static void take_signal(launch_t *L, uint64_t wait_ns)
{
  struct timespec ts = {(time_t)(wait_ns / 1000000000ull),
                        (long)(wait_ns % 1000000000ull)};
  siginfo_t si;
  int sig = sigtimedwait(&L->set, &si, &ts);
  if (sig == CS_LAUNCH_DOORBELL)
    L->doorbell = 1;
  if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !L->res.signo) {
    L->res.signo = sig;
    if (!L->aborted)
      start_grace(L);
    char msg[128];
    snprintf(msg, sizeof(msg), "launcher interrupted by SIG%s", sigabbrev_np(sig));
    set_abort(L->w, CS_ABORT_SIGNAL, -1, msg);
  }
}

/* Controlled mode: the one rank that runs between two scheduling points
 * while every other live rank waits for its turn (posted or finished),
 * or -1. */
static int32_t turn_holder(const launch_t *L)
{
  int32_t who = -1;
  for (uint32_t r = 0; L->sched && r < L->n; r++) {
    if (L->p[r].reaped || !cs__sched_running(L->sched, r))
      continue;
    if (who >= 0)
      return -1;
    who = (int32_t)r;
  }
  return who;
}

/* A rank that makes no progress outside the device API after another
 * rank has finished (a loop or pause() in a collective's body, after its
 * peers returned) waits on nothing, so no wait timeout ever fires: once
 * its event counter has stood still, running, for the run's wait timeout,
 * the run is aborted as a hang naming it. In controlled mode the others
 * wait for their turn, not finished: the rank that holds the turn is
 * watched the same way, for as long as it holds it. */
static void watch_progress(launch_t *L, uint64_t now)
{
  cs_ctl_t *c = L->w->ctl;
  uint32_t done = 0;
  int32_t turn = turn_holder(L);
  for (uint32_t r = 0; r < L->n; r++)
    done += L->p[r].reaped ||
            __atomic_load_n(&c->rank[r].state, __ATOMIC_ACQUIRE) == CS_RS_DONE;
  for (uint32_t r = 0; r < L->n && !L->aborted; r++) {
    rank_proc_t *p = &L->p[r];
    uint64_t ev = __atomic_load_n(&c->rank[r].event, __ATOMIC_ACQUIRE);
    uint32_t st = __atomic_load_n(&c->rank[r].state, __ATOMIC_ACQUIRE);
    /* Controlled mode: the clock runs only while the rank holds the turn,
     * from when it was first seen holding it (a rank granted after a long
     * pick, a learner thinking in teach, has not stood still). */
    int had = p->had_turn;
    p->had_turn = L->sched && cs__sched_running(L->sched, r);
    if (p->reaped || p->pid <= 0 || st != CS_RS_RUNNING || ev != p->prog_ev ||
        !p->prog_at || (L->sched && (!p->had_turn || !had))) {
      p->prog_ev = ev;
      p->prog_at = now;
      continue;
    }
    if ((done == 0 && turn != (int32_t)r) || c->timeout_ns == 0 ||
        now - p->prog_at < c->timeout_ns)
      continue;
    char msg[240], others[64];
    if (done)
      snprintf(others, sizeof others, "after %u other rank%s finished", done,
               done == 1 ? "" : "s");
    else
      snprintf(others, sizeof others, "holding the turn the other ranks "
               "wait for");
    snprintf(msg, sizeof(msg), "rank %u: no progress for %.1f s at event "
             "%llu %s (running outside the device API: a loop or pause() "
             "in the collective?)", r, (double)(now - p->prog_at) / 1e9,
             (unsigned long long)ev, others);
    set_abort(L->w, CS_ABORT_TIMEOUT, (int32_t)r, msg);
    start_grace(L);
  }
}

/* Controlled mode, every rank reaped: ops they posted may still wait
 * in their queues, since the scheduler lands them between steps and a
 * rank exits as soon as its body returns. Lands them (the scheduler's
 * remaining steps) so that the run ends as a schedule ends, every post
 * landed; before, a run whose last rank exited while the scheduler was
 * between two steps ended with them queued, in a state no schedule gives
 * (about once in several thousand runs). With no rank left each step
 * lands an op or ends the run; the deadline only guards a scheduler
 * that a rank left holding the turn. */
static void land_rest(launch_t *L)
{
  uint64_t until = cs_now_ns() + 5000000000ull;
  while (L->sched && !L->aborted && L->sched_state == CS_SCHED_RUNNING &&
         cs_now_ns() < until) {
    L->sched_state = cs__sched_step(L->sched, L->alive_ranks);
    if (L->sched_state == CS_SCHED_STOPPED)
      start_grace(L);
  }
  if (L->sched && !L->aborted && L->sched_state == CS_SCHED_RUNNING) {
    /* Never ended as if it had finished: the run is reported stopped. */
    set_abort(L->w, CS_ABORT_DEADLOCK, -1, "the scheduler did not land "
              "the ranks' last posted ops within 5 s of the last rank's end");
    L->aborted = 1;
  }
}

/* Watches the ranks until every one is reaped (and, controlled, the
 * scheduler has landed what they posted). */
static void watch(launch_t *L)
{
  while (L->alive > 0) {
    reap_ranks(L);
    if (L->alive == 0) {
      land_rest(L);
      break;
    }
    uint64_t now = cs_now_ns();
    if (L->sched && L->aborted && !L->sched_woken) {
      cs__sched_wake_all(L->sched); /* sleepers in sem_wait see the abort */
      L->sched_woken = 1;
    }
    if (L->aborted && now >= L->kill_at) {
      kill_ranks(L);
      continue;
    }
    if (!L->aborted)
      watch_progress(L, now);
    take_signal(L, run_parts(L, now));
    /* Abort requested by a rank itself (fault, timeout): start the grace. */
    if (!L->aborted && __atomic_load_n(&L->w->ctl->abort_word, __ATOMIC_ACQUIRE)) {
      start_grace(L);
      wake_all(L->w);
    }
  }
}

/* ------------------------------------------------ ranks' descendants */

/* The calling process's children (every thread's, from /proc), at most
 * cap; -1 without /proc's children lists. */
static int own_children(pid_t *kids, int cap)
{
  DIR *d = opendir("/proc/self/task");
  if (!d)
    return -1;
  int n = 0, k, seen = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[300];
    snprintf(path, sizeof path, "/proc/self/task/%s/children", e->d_name);
    FILE *f = e->d_name[0] != '.' ? fopen(path, "re") : NULL;
    seen |= f != NULL;
    while (f && n < cap && fscanf(f, "%d", &k) == 1)
      kids[n++] = (pid_t)k;
    if (f)
      fclose(f);
  }
  closedir(d);
  return seen ? n : -1;
}

/* Whether the calling process has a child now (any thread's, a zombie
 * too), none reaped: with none, neither the list of the children it had
 * before the run nor the hunt for what the ranks left needs /proc. */
static int have_children(void)
{
  siginfo_t si;
  memset(&si, 0, sizeof si);
  return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 ||
         errno != ECHILD;
}

static int listed(pid_t pid, const pid_t *in, int n)
{
  for (int i = 0; i < n; i++)
    if (in[i] == pid)
      return 1;
  return 0;
}

/* The launcher is the ranks' subreaper for the run (set before the
 * fork), so what a rank forked and left (a setsid child, a daemon) is
 * the launcher's child once the rank is gone: each child that is neither
 * one it had before (before[nbefore]) nor a pool's live rank is killed
 * and reaped, until none is left (a dying one may still fork). */
static void end_descendants(const pid_t *before, int nbefore,
                            const cs_launch_pool_t *pool)
{
  pid_t kids[256];
  for (int pass = 0, found = 1; found && pass < 1000; pass++) {
    int n = own_children(kids, 256);
    found = 0;
    for (int i = 0; i < n; i++) {
      if (listed(kids[i], before, nbefore) ||
          (pool && listed(kids[i], pool->pid, (int)pool->n)))
        continue;
      kill(kids[i], SIGKILL);
      while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
        ;
      found = 1;
    }
  }
}

/* Whether a failed rank's exit is explained by the abort message or by
 * the launcher's own SIGKILL, so it needs no line of its own. */
static int explained(const rank_proc_t *p)
{
  if (p->killed)
    return 1;
  if (!WIFEXITED(p->status))
    return 0;
  int st = WEXITSTATUS(p->status);
  return st == CS_RX_ABORTED || st == CS_RX_FAULT || st == CS_RX_TIMEOUT ||
         st == CS_RX_HUNG;
}

/* The rank an injected hang stopped, or -1. */
static int32_t hung_rank(const cs_ctl_t *c)
{
  for (uint32_t r = 0; r < c->nranks; r++)
    if (c->rank[r].state == CS_RS_HUNG)
      return (int32_t)r;
  return -1;
}

/* The first rank found stopped by a signal at the abort, or -1. */
static int32_t stopped_rank(const launch_t *L)
{
  for (uint32_t r = 0; r < L->n; r++)
    if (L->p[r].stopped)
      return (int32_t)r;
  return -1;
}

/* A wait timeout or deadlock with a hung rank (an injected hang, or a
 * rank stopped by a signal): the hung rank is the cause, whichever rank's
 * timer fired first, so it is named first and blamed. */
static void report_hung_first(launch_t *L)
{
  cs_ctl_t *c = L->w->ctl;
  int32_t hung = hung_rank(c), stopped = hung < 0 ? stopped_rank(L) : -1;
  if (hung < 0)
    hung = stopped;
  if (hung < 0 || (L->res.abort_reason != CS_ABORT_TIMEOUT &&
                   L->res.abort_reason != CS_ABORT_DEADLOCK))
    return;
  L->res.abort_rank = hung;
  if (c->abort_rank == hung)
    return;
  char msg[160];
  if (stopped >= 0)
    snprintf(msg, sizeof msg, "rank %d: stopped by a signal (pid %d: SIGSTOP, "
             "SIGTSTP or a debugger) at event %llu; the others waited for it",
             (int)stopped, (int)L->p[stopped].pid,
             (unsigned long long)c->rank[stopped].event);
  else
    cs_dev_hang_str(msg, sizeof msg, (uint32_t)hung, c->rank[hung].event,
                    c->timeout_ns);
  fprintf(L->out, "%s\n", msg);
}

/* The failure report of an aborted run. */
static void report_abort(launch_t *L)
{
  cs_ctl_t *c = L->w->ctl;
  L->res.aborted = 1;
  L->res.abort_reason = c->abort_word ? c->abort_word : CS_ABORT_CRASH;
  L->res.abort_rank = c->abort_rank;
  report_hung_first(L);
  if (c->abort_word && c->abort_msg[0] && c->abort_word != CS_ABORT_CRASH)
    fprintf(L->out, "%s\n", c->abort_msg);
  int first_reported = 0;
  for (uint32_t r = 0; r < L->n; r++) {
    if (!L->p[r].pid || !failed(L->p[r].status) || explained(&L->p[r]))
      continue;
    if (!first_reported && L->res.abort_rank < 0)
      L->res.abort_rank = (int32_t)r;
    first_reported = 1;
    report_rank(L->out, L->w, r, L->p[r].status);
  }
  if (L->res.abort_reason == CS_ABORT_TIMEOUT ||
      L->res.abort_reason == CS_ABORT_DEADLOCK)
    cs_launch_print_wavefront(L->w, &L->o.wait_where, L->out);
}

/* Claims CPU cpu for one controlled run (or a pool's life) against
 * every other collsim process on the machine: an abstract UNIX socket
 * named after it, which only one process can bind and which the kernel
 * frees when the last process holding it (the launcher, its ranks) is
 * gone, so nothing is left behind. The fd, or -1 when taken. */
static int claim_cpu(int cpu)
{
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "collsim-cpu-%d", cpu);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 &&
      bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) == 0)
    return fd;
  if (fd >= 0)
    close(fd);
  return -1;
}

/* A controlled run has one actor running at a time (the launcher's
 * scheduler or the granted rank), and every hand-off wakes a sleeping
 * process. On the waker's CPU that is a switch; on another CPU it is an
 * inter-processor interrupt, which in a virtual machine with an idle
 * CPU costs tens of microseconds (docs/performance.md, "Controlled-mode
 * throughput"). So the launcher binds itself to one CPU of the caller's
 * set that no other collsim run has claimed (the one it is on first),
 * its ranks inherit that at fork, and cs_launch gives the caller's set
 * back after the run; with every CPU claimed it binds nothing. A pool
 * keeps its claim, and its later runs the CPU, while its ranks live.
 * Returns whether it bound; saved holds the caller's set, *fd the claim
 * to close after the run (-1: none, or the pool's). */
static int bind_one_cpu(cs_launch_pool_t *pool, cpu_set_t *saved, int *fd)
{
  *fd = -1;
  if (sched_getaffinity(0, sizeof(*saved), saved) < 0)
    return 0;
  int cpu = -1;
  if (pool && cs_launch_pool_alive(pool)) {
    if (pool->cpu_fd >= 0 && CPU_ISSET(pool->cpu, saved))
      cpu = pool->cpu;
  } else {
    int here = sched_getcpu();
    if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(here, saved) &&
        (*fd = claim_cpu(here)) >= 0)
      cpu = here;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
      if (c != here && CPU_ISSET(c, saved) && (*fd = claim_cpu(c)) >= 0)
        cpu = c;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  if (cpu >= 0)
    CPU_SET(cpu, &one);
  if (cpu < 0 || sched_setaffinity(0, sizeof(one), &one) < 0) {
    if (*fd >= 0)
      close(*fd);
    *fd = -1;
    return 0;
  }
  if (pool && *fd >= 0) { /* the pool holds the claim from now on */
    if (pool->cpu_fd >= 0)
      close(pool->cpu_fd);
    pool->cpu = cpu;
    pool->cpu_fd = *fd;
    *fd = -1;
  }
  return 1;
}

int cs_launch(cs_world_t *w, cs_rank_fn fn, void *arg,
              const cs_launch_opts_t *opts, cs_launch_result_t *res)
{
  launch_t L;
  cs_launch_pool_t *pool = opts ? opts->pool : NULL;
  /* A pool's ranks keep the hooks and hook_arg of the run that forked
   * them: hooks only in controlled mode (where the recorder keeps nothing
   * of a run in the rank's own memory), and the same ones every run. */
  if (pool && ((opts->hooks && !opts->sched) || pool->n != w->ctl->nranks))
    return -EINVAL;
  if (pool && !cs_launch_pool_alive(pool)) {
    memcpy(&pool->ctl0, w->ctl, sizeof(cs_ctl_t)); /* for the next runs */
    pool->hooks = opts->hooks;
  } else if (pool && pool->hooks != opts->hooks) {
    return -EINVAL;
  }
  int err = launch_init(&L, w, opts);
  if (err < 0)
    return err;
  block_signals(&L);
  cpu_set_t saved;
  int claim = -1;
  int bound = L.sched && bind_one_cpu(pool, &saved, &claim);
  uint64_t t0 = cs_now_ns();
  int reaper = 0, nbefore = have_children() ? own_children(L.before, 256) : 0;
  if (nbefore >= 256) /* the list may be cut short: clean up nothing */
    nbefore = -1;
  prctl(PR_GET_CHILD_SUBREAPER, &reaper);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  err = fork_ranks(&L, fn, arg);
  watch(&L);
  L.res.wall_ns = cs_now_ns() - t0;
  if (bound)
    sched_setaffinity(0, sizeof(saved), &saved);
  if (claim >= 0)
    close(claim);
  restore_signals(&L);

  if (L.o.statuses)
    for (uint32_t r = 0; r < L.n; r++)
      L.o.statuses[r] = L.p[r].pid > 0 ? L.p[r].status : 0;
  if (L.aborted || w->ctl->abort_word) {
    report_abort(&L);
    err = err < 0 ? err : 1;
  }
  if (pool && (err != 0 || !cs_launch_pool_alive(pool)))
    pool_end(pool); /* the next run starts from fresh processes */
  if (nbefore >= 0 && have_children())
    end_descendants(L.before, nbefore, pool);
  prctl(PR_SET_CHILD_SUBREAPER, reaper);
  if (L.sched)
    L.res.steps = cs__sched_steps(L.sched);
  cs__sched_fini(L.sched);
  free(L.alive_ranks);
  free(L.p);
  if (res)
    *res = L.res;
  return err;
}
