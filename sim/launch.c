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

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../window/cs_error.h"
#include "transport.h"

uint32_t cs_launch_spin_default(uint32_t nranks)
{
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  /* A pause costs ~25 ns on the 2-core development machine (AMD EPYC), so
   * 2000 pauses are ~50 us: far above a spin hop (0.05-0.2 us) and twice a
   * cross-core futex wake (21 us), so a waiter with its own CPU rarely
   * sleeps; yet when something else wants the CPU (another process, a
   * slow peer) it gives the core away after 50 us instead of burning a
   * scheduler slice (20000 pauses made every contended hop cost ~1 ms).
   * Oversubscribed, do not spin at all: the notifier needs this CPU, so
   * yield it at once (cs_launch_yield_default). */
  return (cpus > 0 && nranks <= (uint32_t)cpus) ? 2000u : 0u;
}

uint32_t cs_launch_yield_default(uint32_t nranks)
{
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  /* More ranks than CPUs: the rank a waiter needs is usually runnable but
   * not running, and sched_yield hands it the CPU in a few microseconds;
   * a futex sleep and wake costs about 21 us and two context switches.
   * After this many yields without progress, sleep. Measured with
   * `collsim bench --ranks 8 -b 8 -e 8 --algo mesh` on 2 cores: 160 us
   * per call with spin-then-sleep, 19-30 us with 200 yields (Open MPI,
   * which also yields: 28 us); 50 or 1000 yields were no better. */
  return (cpus > 0 && nranks > (uint32_t)cpus) ? 200u : 0u;
}

typedef struct rank_proc {
  pid_t pid;
  int   reaped;
  int   killed; /* SIGKILLed by the launcher after the grace period */
  int   status;
} rank_proc_t;

/* With no more ranks than allowed CPUs, binds rank r to the r-th of them
 * (as Open MPI binds to cores for small runs): left to itself the kernel
 * sometimes keeps two spinning ranks on one CPU for a whole run, which made
 * a 14 us call take 330 us in 16 of 30 runs on the 2-core machine. */
static void pin_rank(uint32_t rank, uint32_t nranks)
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

static _Noreturn void rank_main(cs_world_t *w, uint32_t rank, cs_rank_fn fn,
                                void *arg, const cs_launch_opts_t *o,
                                pid_t parent, const sigset_t *oldmask)
{
  sigprocmask(SIG_SETMASK, oldmask, NULL);
  signal(SIGINT, SIG_IGN); /* Ctrl-C goes to the launcher, which aborts */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(CS_RX_ABORTED);
  pin_rank(rank, w->ctl->nranks);
  if (cs_world_remap(w) < 0)
    _exit(CS_RX_ERROR);
  cs_dev_t d;
  if (cs_dev_init(&d, w, rank, &o->fault,
                  o->sched ? &cs_transport_controlled : &cs_transport_free) < 0)
    _exit(CS_RX_ERROR);
  d.hooks = o->hooks;
  d.hook_arg = o->hook_arg;
  d.st->pid = (int32_t)getpid();
  __atomic_store_n(&d.st->state, CS_RS_RUNNING, __ATOMIC_RELEASE);
  int rc = fn(&d, arg);
  /* A fault aimed past the rank's last event strikes as it finishes, so an
   * injected fault is never silently skipped. */
  if (d.fault_at != UINT64_MAX) {
    d.nevents = d.fault_at;
    cs__dev_strike(&d);
  }
  if (d.ops->done)
    d.ops->done(&d);
  __atomic_store_n(&d.st->state, rc == 0 ? CS_RS_DONE : CS_RS_FAILED,
                   __ATOMIC_RELEASE);
  cs_dev_fini(&d);
  _exit(rc);
}

static void wake_all(cs_world_t *w)
{
  cs_ctl_t *c = w->ctl;
  for (uint32_t r = 0; r < c->nranks; r++) {
    cs_rank_status_t *st = &c->rank[r];
    if (st->wait_slot >= c->layout.nslots)
      continue;
    const cs_slot_t *s = &c->layout.slot[st->wait_slot];
    if ((uint64_t)st->wait_cell * 4 + 4 > s->alloc)
      continue;
    int32_t *cell = (int32_t *)(cs_world_window(w, r) + s->off) + st->wait_cell;
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

void cs_launch_print_wavefront(const cs_world_t *w, FILE *out)
{
  const cs_ctl_t *c = w->ctl;
  fprintf(out, "hang wavefront:\n");
  for (uint32_t r = 0; r < c->nranks; r++) {
    const cs_rank_status_t *st = &c->rank[r];
    if (st->state == CS_RS_WAITING && st->wait_slot < c->layout.nslots) {
      const cs_slot_t *s = &c->layout.slot[st->wait_slot];
      int32_t v = 0;
      if ((uint64_t)st->wait_cell * 4 + 4 <= s->alloc)
        v = __atomic_load_n((int32_t *)(cs_world_window(w, r) + s->off) +
                                st->wait_cell, __ATOMIC_ACQUIRE);
      fprintf(out, "  rank %u: blocked at event %llu in wait(%s[%u] %s %d): "
              "cell is %d, expected %s %d\n", r,
              (unsigned long long)st->event, s->name, st->wait_cell,
              st->wait_cmp == CS_CMP_EQ ? "==" : ">=", st->wait_value, v,
              st->wait_cmp == CS_CMP_EQ ? "==" : ">=", st->wait_value);
    } else {
      fprintf(out, "  rank %u: %s at event %llu\n", r, state_name(st->state),
              (unsigned long long)st->event);
    }
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
  else if (WIFEXITED(status) && WEXITSTATUS(status) == CS_RX_ERROR)
    fprintf(out, "rank %u: internal error (out of memory?) at event %llu\n", r, ev);
  else if (WIFEXITED(status))
    fprintf(out, "rank %u: exited with status %d at event %llu\n", r,
            WEXITSTATUS(status), ev);
}

int cs_launch(cs_world_t *w, cs_rank_fn fn, void *arg,
              const cs_launch_opts_t *opts, cs_launch_result_t *res)
{
  cs_launch_opts_t o = {0};
  if (opts)
    o = *opts;
  FILE *out = o.report ? o.report : stderr;
  uint32_t n = w->ctl->nranks;
  uint64_t grace_ns = (o.grace_ms ? o.grace_ms : 250) * 1000000ull;
  cs_launch_result_t r0 = {0};
  r0.abort_rank = -1;
  w->ctl->spin_iters = o.spin_iters ? o.spin_iters : cs_launch_spin_default(n);
  w->ctl->yield_iters = cs_launch_yield_default(n);
  for (uint32_t r = 0; r < n; r++)
    w->ctl->rank[r].wait_slot = UINT32_MAX;

  rank_proc_t *p = calloc(n, sizeof(*p));
  uint8_t *alive_ranks = calloc(n, 1);
  cs_sched_t *sched = NULL;
  int serr = 0;
  cs_sched_cfg_t scfg;
  if (o.sched) {
    scfg = *o.sched;
    scfg.hooks = o.hooks; /* the scheduler's landings are hooked too */
    scfg.hook_arg = o.hook_arg;
  }
  if (p && alive_ranks && o.sched && (serr = cs__sched_init(&sched, w, &scfg)) < 0) {
    free(p);
    free(alive_ranks);
    return serr;
  }
  if (!p || !alive_ranks) {
    free(p);
    free(alive_ranks);
    return -ENOMEM;
  }

  /* SIGCHLD must not be ignored (the kernel would reap the ranks before
   * waitpid sees them); SIGINT, SIGTERM and SIGHUP abort the run unless the
   * caller ignores them (nohup, a background job). */
  struct sigaction dfl = {.sa_handler = SIG_DFL}, old_chld, cur;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, &old_chld);
  sigset_t set, old, chld_only;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  if (o.tick)
    sigaddset(&set, CS_LAUNCH_DOORBELL);
  chld_only = set; /* drained before the caller's mask comes back */
  static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; i++)
    if (sigaction(stops[i], NULL, &cur) == 0 && cur.sa_handler != SIG_IGN)
      sigaddset(&set, stops[i]);
  sigprocmask(SIG_BLOCK, &set, &old);
  fflush(NULL); /* children must not flush the parent's buffers again */

  pid_t parent = getpid();
  uint64_t t0 = cs_now_ns();
  int err = 0;
  uint32_t alive = 0;
  for (uint32_t r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid == 0)
      rank_main(w, r, fn, arg, &o, parent, &old);
    if (pid < 0) {
      err = -errno;
      set_abort(w, CS_ABORT_SIGNAL, -1, "could not fork every rank");
      break;
    }
    p[r].pid = pid;
    alive_ranks[r] = 1;
    alive++;
  }

  int aborted = err < 0;
  uint64_t tick_ns = o.tick_ns ? o.tick_ns : 1000000ull, next_tick = 0;
  int doorbell = 0;
  int sched_state = CS_SCHED_RUNNING, sched_woken = 0;
  uint64_t kill_at = aborted ? cs_now_ns() : UINT64_MAX;
  int first_reported = 0;
  while (alive > 0) {
    int status;
    pid_t pid;
    /* Reap our ranks only: the caller may have children of its own. */
    for (uint32_t r = 0; r < n && alive > 0; r++) {
      if (p[r].pid <= 0 || p[r].reaped ||
          (pid = waitpid(p[r].pid, &status, WNOHANG)) != p[r].pid)
        continue;
      p[r].reaped = 1;
      p[r].status = status;
      alive_ranks[r] = 0;
      alive--;
      if (failed(status) && !aborted) {
        aborted = 1;
        kill_at = cs_now_ns() + grace_ns;
        if (!secondary(status)) {
          char msg[128];
          snprintf(msg, sizeof(msg), "rank %u died", r);
          set_abort(w, CS_ABORT_CRASH, (int32_t)r, msg);
        } else {
          wake_all(w);
        }
      }
    }
    if (alive == 0)
      break;
    uint64_t now = cs_now_ns();
    if (sched && aborted && !sched_woken) {
      cs__sched_wake_all(sched); /* sleepers in sem_wait see the abort */
      sched_woken = 1;
    }
    if (aborted && now >= kill_at) {
      for (uint32_t r = 0; r < n; r++)
        if (p[r].pid > 0 && !p[r].reaped) {
          kill(p[r].pid, SIGKILL);
          p[r].killed = 1;
        }
      kill_at = UINT64_MAX; /* reap below; SIGKILL cannot be ignored */
      continue;
    }
    uint64_t wait_ns = aborted ? (kill_at == UINT64_MAX ? 1000000000ull
                                                        : kill_at - now)
                               : 1000000000ull;
    if (o.tick) {
      if (now >= next_tick || doorbell) {
        doorbell = 0;
        o.tick(o.tick_arg);
        next_tick = now + tick_ns;
      }
      if (wait_ns > next_tick - now)
        wait_ns = next_tick - now;
    }
    if (sched && !aborted && sched_state == CS_SCHED_RUNNING) {
      /* Controlled mode: schedule for a while, then look at signals. */
      sched_state = cs__sched_step(sched, alive_ranks);
      if (sched_state == CS_SCHED_STOPPED) {
        aborted = 1;
        kill_at = cs_now_ns() + grace_ns;
      }
      wait_ns = 0;
    }
    struct timespec ts = {(time_t)(wait_ns / 1000000000ull),
                          (long)(wait_ns % 1000000000ull)};
    siginfo_t si;
    int sig = sigtimedwait(&set, &si, &ts);
    if (sig == CS_LAUNCH_DOORBELL)
      doorbell = 1; /* a rank asks for the tick now */
    if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) && !r0.signo) {
      r0.signo = sig;
      if (!aborted) {
        aborted = 1;
        kill_at = cs_now_ns() + grace_ns;
      }
      char msg[128];
      snprintf(msg, sizeof(msg), "launcher interrupted by SIG%s",
               sigabbrev_np(sig));
      set_abort(w, CS_ABORT_SIGNAL, -1, msg);
    }
    /* Abort requested by a rank itself (fault, timeout): start the grace. */
    if (!aborted && __atomic_load_n(&w->ctl->abort_word, __ATOMIC_ACQUIRE)) {
      aborted = 1;
      kill_at = cs_now_ns() + grace_ns;
      wake_all(w);
    }
  }
  r0.wall_ns = cs_now_ns() - t0;

  /* Drain any SIGCHLD (and doorbell) left pending, then restore the
   * caller's mask (a SIGINT that came after the last rank stays pending and
   * is delivered). */
  struct timespec zero = {0, 0};
  while (sigtimedwait(&chld_only, NULL, &zero) > 0)
    ;
  sigprocmask(SIG_SETMASK, &old, NULL);
  sigaction(SIGCHLD, &old_chld, NULL);

  cs_ctl_t *c = w->ctl;
  if (o.statuses)
    for (uint32_t r = 0; r < n; r++)
      o.statuses[r] = p[r].pid > 0 ? p[r].status : 0;
  if (aborted || c->abort_word) {
    r0.aborted = 1;
    r0.abort_reason = c->abort_word ? c->abort_word : CS_ABORT_CRASH;
    r0.abort_rank = c->abort_rank;
    if (c->abort_word && c->abort_msg[0] && c->abort_word != CS_ABORT_CRASH)
      fprintf(out, "%s\n", c->abort_msg);
    for (uint32_t r = 0; r < n; r++) {
      if (!p[r].pid || !failed(p[r].status))
        continue;
      if (WIFEXITED(p[r].status) &&
          (WEXITSTATUS(p[r].status) == CS_RX_ABORTED ||
           WEXITSTATUS(p[r].status) == CS_RX_FAULT ||
           WEXITSTATUS(p[r].status) == CS_RX_TIMEOUT))
        continue; /* explained by the abort message */
      if (p[r].killed)
        continue; /* killed by us after the grace period */
      if (!first_reported && r0.abort_rank < 0)
        r0.abort_rank = (int32_t)r;
      first_reported = 1;
      report_rank(out, w, r, p[r].status);
    }
    if (r0.abort_reason == CS_ABORT_TIMEOUT || r0.abort_reason == CS_ABORT_DEADLOCK)
      cs_launch_print_wavefront(w, out);
    err = err < 0 ? err : 1;
  }
  cs__sched_fini(sched);
  free(alive_ranks);
  free(p);
  if (res)
    *res = r0;
  return err;
}
