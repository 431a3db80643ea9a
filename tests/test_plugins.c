/*
 * test_plugins.c - collsim against collectives loaded with --algo that it
 * must not trust: a trace naming a library it did not record (issue 32
 * item 2), and plug-ins that misbehave (item 6: tests/plugins/misbehave.c,
 * built by CMake into COLLSIM_PLUGINS). Runs the real binary (COLLSIM_BIN)
 * through the harness, which also checks that no shm name leaked.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../sim/trace.h"
#include "../sim/trace/read.h"
#include "harness.h"

#ifndef COLLSIM_PLUGINS
#error "COLLSIM_PLUGINS must name the built plug-ins (CMakeLists.txt sets it)"
#endif

static cli_out_t r;
static char dir[128];

static void make_dir(void) { temp_dir_for("plug", dir, sizeof dir); }
static void remove_dir(void)
{
  char cmd[192];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", dir);
}

static void copy(const char *from, const char *to)
{
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* sha256sum's hash of path: coreutils, not collsim's own code. */
static void sha256sum(const char *path, char hex[65])
{
  char cmd[256];
  snprintf(cmd, sizeof cmd, "sha256sum '%s'", path);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char line[200] = "";
  cr_assert_not_null(fgets(line, sizeof line, p));
  cr_assert_eq(pclose(p), 0);
  memcpy(hex, line, 64);
  hex[64] = 0;
}

/* One line on stderr containing each needle, exit 2, and the library's
 * constructor never ran (it would have said "misbehave.so: loaded"). */
static void expect_refused(const char *what, const char *n1, const char *n2)
{
  cr_assert_eq(r.status, 2, "%s: exit %d: %s%s", what, r.status, r.out, r.err);
  cr_assert_eq(count_lines(r.err), 1, "%s: not one line:\n%s", what, r.err);
  cr_assert(strstr(r.err, n1), "%s: '%s' not in: %s", what, n1, r.err);
  cr_assert(strstr(r.err, n2), "%s: '%s' not in: %s", what, n2, r.err);
  cr_assert_not(strstr(r.err, "misbehave.so: loaded"), "%s: loaded it", what);
}

/* The trace at path with its header's algo_sha256 zeroed (as a version-4
 * trace written before the field, or a forger, leaves it), resealed. */
static void zero_hash(const char *path)
{
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  cs_trace_header_t h;
  cr_assert_eq(fread(&h, sizeof h, 1, f), 1u);
  memset(h.algo_sha256, 0, sizeof h.algo_sha256);
  cs_trace_header_seal(&h);
  cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
  cr_assert_eq(fwrite(&h, sizeof h, 1, f), 1u);
  cr_assert_eq(fclose(f), 0);
}

/* Item 2: the trace records the library's SHA-256 (as sha256sum computes
 * it); replay and shrink name the library before loading it (its
 * constructor speaks after that line), and refuse with one line and exit
 * 2, without loading it, a file whose hash changed or a trace without
 * one (unless --trust-algo). */
Test(plugins, replay_and_shrink_load_only_the_recorded_library,
     .init = make_dir, .fini = remove_dir, .timeout = 240)
{
  char so[192], tr[192], out[192], want[65], got[65];
  snprintf(so, sizeof so, "%s/x.so", dir);
  snprintf(tr, sizeof tr, "%s/x.cstrace", dir);
  snprintf(out, sizeof out, "%s/min.cstrace", dir);
  copy(COLLSIM_PLUGINS "/misbehave.so", so);
  setenv("COLLSIM_MISBEHAVE", "say", 1);
  run_cli(&r, 60, "run", "--algo", so, "--ranks", "2", "--count", "8",
          "--iters", "1", "--schedule", "random:3", "--trace", tr, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cs_trace_t t;
  char why[512];
  cr_assert_eq(load_trace(tr, &t, why, sizeof why), 0, "%s", why);
  sha256sum(so, want);
  for (int i = 0; i < 32; i++)
    snprintf(got + 2 * i, 3, "%02x", t.hdr.algo_sha256[i]);
  cs_trace_free(&t);
  cr_assert_str_eq(got, want, "the trace's algo_sha256 is not sha256sum's");
  run_cli(&r, 60, "trace", tr, NULL);
  cr_assert(strstr(r.out, want), "collsim trace does not show the hash");

  /* The recorded file: named (with its hash), then loaded. */
  run_cli(&r, 60, "replay", tr, NULL);
  cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
  const char *named = strstr(r.err, "loading the collective");
  const char *loaded = strstr(r.err, "misbehave.so: loaded");
  cr_assert(named && loaded && named < loaded && strstr(named, so) &&
                strstr(named, want),
            "not named before it was loaded:\n%s", r.err);

  /* Another library at the same path: refused unloaded by both. */
  copy(COLLSIM_PLUGINS "/rd_allreduce.so", so);
  run_cli(&r, 60, "replay", tr, NULL);
  expect_refused("replay of a swapped library", so, "changed");
  run_cli(&r, 60, "shrink", tr, "-o", out, "--no-story", NULL);
  expect_refused("shrink of a swapped library", so, "changed");
  cr_assert_eq(access(out, F_OK), -1, "shrink wrote %s", out);

  /* No hash (a version-4 trace, or a forged one): refused unless asked. */
  copy(COLLSIM_PLUGINS "/misbehave.so", so);
  zero_hash(tr);
  run_cli(&r, 60, "replay", tr, NULL);
  expect_refused("replay without a hash", so, "--trust-algo");
  run_cli(&r, 60, "shrink", tr, "-o", out, NULL);
  expect_refused("shrink without a hash", so, "--trust-algo");
  run_cli(&r, 60, "replay", tr, "--trust-algo", NULL);
  cr_assert_eq(r.status, 0, "--trust-algo: %s%s", r.out, r.err);
  cr_assert(strstr(r.err, "loading the collective"), "%s", r.err);

  /* --algo-sha256 (what shrink's reruns are given) refuses another file. */
  run_cli(&r, 60, "run", "--algo-sha256", want, "--algo",
          COLLSIM_PLUGINS "/rd_allreduce.so", NULL);
  expect_refused("run --algo-sha256", "rd_allreduce.so", want);
  run_cli(&r, 60, "run", "--algo", COLLSIM_PLUGINS "/rd_allreduce.so",
          "--algo-sha256", want, NULL);
  expect_refused("run --algo-sha256 after --algo", "rd_allreduce.so", want);
}

/* ------------------------------------------- item 6: misbehaving plug-ins */

#define MIS COLLSIM_PLUGINS "/misbehave.so"

/* `collsim run --algo misbehave.so` with COLLSIM_MISBEHAVE=how and the
 * extra arguments (NULL-terminated, at most 4). */
static void misbehave(const char *how, double timeout_s, const char *a1,
                      const char *a2, const char *a3, const char *a4)
{
  setenv("COLLSIM_MISBEHAVE", how, 1);
  char *args[16] = {"run", "--algo", MIS, "--ranks", "2", "--count", "8",
                    "--iters", "1"};
  int n = 9;
  const char *extra[] = {a1, a2, a3, a4};
  for (int i = 0; i < 4 && extra[i]; i++)
    args[n++] = (char *)extra[i];
  run_argv(&r, timeout_s, args);
}

/* A rank calling exit(0) in the middle of its body stopped the run: exit
 * 3 naming the rank, free and controlled (the controlled run used to
 * hang), and the trace it leaves is read. */
Test(plugins, a_rank_exiting_mid_body_is_named, .init = make_dir,
     .fini = remove_dir, .timeout = 120)
{
  char tr[192];
  snprintf(tr, sizeof tr, "%s/exit.cstrace", dir);
  const char *sched[] = {NULL, "random:1"};
  for (int i = 0; i < 2; i++) {
    misbehave("exit", 30, "--trace", tr, sched[i] ? "--schedule" : NULL, sched[i]);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", sched[i] ? sched[i] : "free",
                 r.status, r.out, r.err);
    cr_assert(strstr(r.err, "rank 1 exited at event"), "%s", r.err);
    cr_assert_null(strstr(r.out, "WRONG"), "%s", r.out);
    run_cli(&r, 30, "trace", tr, NULL);
    cr_assert_eq(r.status, 0, "its trace: %s", r.err);
  }
}

/* The device API's promise: a call that breaks a rule does not return, the
 * rank stops with a fault (exit 3), for a wait compare, a notify op and a
 * load's valid count outside what the API accepts. */
Test(plugins, bad_device_arguments_fault, .timeout = 120)
{
  const char *how[][2] = {{"wait-cmp", "compare 99"}, {"notify-op", "op 77"},
                          {"load-valid0", "valid 0"}};
  for (size_t i = 0; i < sizeof how / sizeof how[0]; i++) {
    misbehave(how[i][0], 30, "--schedule", "random:1", NULL, NULL);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i][0], r.status, r.out, r.err);
    cr_assert(strstr(r.err, "rank 1: bad") && strstr(r.err, how[i][1]),
              "%s: %s", how[i][0], r.err);
    misbehave(how[i][0], 30, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 3, "%s free: exit %d: %s%s", how[i][0], r.status,
                 r.out, r.err);
  }
}

/* A rank that spins or pause()s after the other finished waits on
 * nothing: once the wait timeout passes it is named, exit 3. */
Test(plugins, a_rank_making_no_progress_is_named, .timeout = 120)
{
  const char *how[] = {"spin", "pause"};
  for (int i = 0; i < 2; i++) {
    misbehave(how[i], 30, "--timeout", "2", NULL, NULL);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i], r.status, r.out, r.err);
    cr_assert(strstr(r.err, "rank 1: no progress"), "%s: %s", how[i], r.err);
    cr_assert_lt(r.seconds, 15.0, "%s: %.1f s", how[i], r.seconds);
  }
}

/* A crash in the collective's code that collsim runs in its own process
 * (the constructor as it loads, refuse, signal_final, expect): one line
 * naming the library, exit 3, not death by SIGSEGV. */
Test(plugins, a_crash_in_launcher_called_plugin_code_is_contained, .timeout = 120)
{
  const char *how[] = {"ctor", "refuse", "signal-final", "expect"};
  for (int i = 0; i < 4; i++) {
    misbehave(how[i], 30, NULL, NULL, NULL, NULL);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i], r.status, r.out, r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s: %s", how[i], r.err);
    cr_assert(strstr(r.err, "misbehave.so crashed with SIGSEGV"), "%s: %s",
              how[i], r.err);
  }
}

/* The same guard for bench --algo ./x.so, which died of the SIGSEGV
 * (status 139): one line naming bench and the library, exit 3. */
Test(plugins, a_crash_in_plugin_code_bench_runs_is_contained, .timeout = 120)
{
  const char *how[] = {"ctor", "refuse", "signal-final", "expect"};
  for (int i = 0; i < 4; i++) {
    setenv("COLLSIM_MISBEHAVE", how[i], 1);
    run_cli(&r, 30, "bench", "--algo", MIS, "-b", "1K", "-e", "1K", NULL);
    cr_assert_eq(r.status, 3, "%s: exit %d: %s%s", how[i], r.status, r.out,
                 r.err);
    cr_assert_eq(count_lines(r.err), 1, "%s: %s", how[i], r.err);
    cr_assert(strstr(r.err, "collsim bench: the collective ") &&
              strstr(r.err, "misbehave.so crashed with SIGSEGV"), "%s: %s",
              how[i], r.err);
  }
}

/* A rank that faults on an argument out of range (peer 999, slot 99, a
 * rectangle no tile holds) left a trace that collsim's own readers called
 * corrupt ("corrupt record 63 (peer or slot out of range)"): the refused
 * event is recorded as it was asked for, marked failed. trace, check,
 * trace --stats and replay (with the same plug-in behaviour) take it, and
 * trace shows the refused call on rank 1, free and controlled. */
Test(plugins, a_faulting_rank_leaves_a_trace_the_readers_take,
     .init = make_dir, .fini = remove_dir, .timeout = 200)
{
  const char *how[][2] = {{"peer", "from r999 data[0..8)"},
                          {"slot", "slot99[0..8)"},
                          {"rect", "r1   load"}};
  const char *sched[] = {NULL, "random:1"};
  char tr[192];
  snprintf(tr, sizeof tr, "%s/f.cstrace", dir);
  for (size_t i = 0; i < 3; i++)
    for (int s = 0; s < 2; s++) {
      unlink(tr);
      misbehave(how[i][0], 30, "--trace", tr, sched[s] ? "--schedule" : NULL,
                sched[s]);
      cr_assert_eq(r.status, 3, "%s: exit %d: %s", how[i][0], r.status, r.err);
      run_cli(&r, 30, "trace", tr, NULL);
      cr_assert_eq(r.status, 0, "%s %s: trace: %s", how[i][0],
                   sched[s] ? sched[s] : "free", r.err);
      char *failed = strstr(r.out, "<- FAILED");
      cr_assert_not_null(failed, "%s: no failed event:\n%s", how[i][0], r.out);
      char *line = failed;
      while (line > r.out && line[-1] != '\n')
        line--;
      cr_assert(strstr(line, how[i][1]) && strstr(line, how[i][1]) < failed,
                "%s: the failed event is not the refused call: %.*s",
                how[i][0], (int)(failed - line), line);
      run_cli(&r, 30, "check", tr, NULL);
      cr_assert(r.status == 0 || r.status == 1, "%s: check: exit %d: %s",
                how[i][0], r.status, r.err);
      cr_assert_null(strstr(r.err, "corrupt"), "%s: %s", how[i][0], r.err);
      run_cli(&r, 30, "trace", "--stats", tr, NULL);
      cr_assert_eq(r.status, 0, "%s: stats: %s", how[i][0], r.err);
      run_cli(&r, 60, "replay", tr, NULL); /* COLLSIM_MISBEHAVE still set */
      /* A free run's rank 0 may go on for a few events after rank 1's
       * fault, steps the replay (which stops at the fault) cannot
       * reproduce: then it is not identical, and says so, naming only
       * rank 0. A controlled run stops at the fault as its replay does. */
      if (!sched[s] && r.status == 1) {
        cr_assert(strstr(r.out, "NOT identical") &&
                  strstr(r.out, "(outcome: fault)") &&
                  strstr(r.out, "not reproduced: rank 0: ") &&
                  !strstr(r.out, "rank 1: "), "%s: %s", how[i][0], r.out);
        continue;
      }
      cr_assert_eq(r.status, 0, "%s: replay: exit %d: %s%s", how[i][0],
                   r.status, r.out, r.err);
      cr_assert(strstr(r.out, "identical; outcome: fault"), "%s: %s",
                how[i][0], r.out);
    }
}

/* A failure that only some orders show, with nothing for check to order
 * (misbehave.c's peek: rank 0 acts on the value a wait >= 0 happened to
 * see): shrink keeps one deviation, and the story does not claim that
 * the run fails in the default order (it once did for every run without
 * a finding); the default order itself passes. */
Test(plugins, a_story_without_a_finding_names_the_order_it_needed,
     .init = make_dir, .fini = remove_dir, .timeout = 120)
{
  setenv("COLLSIM_MISBEHAVE", "peek", 1);
  run_cli(&r, 60, "run", "--algo", MIS, "--ranks", "2", "--count", "4",
          "--iters", "1", "--memory-model", "sc", "--schedule", "deviate:none",
          NULL);
  cr_assert_eq(r.status, 0, "the default order: %s%s", r.out, r.err);
  run_cli(&r, 100, "explore", "--algo", MIS, "--ranks", "2", "--count", "4",
          "--memory-model", "sc", "--schedules", "50", "-o", dir, NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  cr_assert(strstr(r.out, "schedule deviate:^>1.0,"), "%s", r.out);
  cr_assert(strstr(r.out, "No ordering defect found: check names no missing "
                          "edge between this run's events (schedule "
                          "deviate:^>1.0)"), "%s", r.out);
  cr_assert_null(strstr(r.out, "default order itself"), "%s", r.out);
}

/* A plug-in's repeated calls that differ are named as a built-in's are:
 * the first rank and element, and that element's bits in call 1 and in
 * the first call unlike it. misbehave.c's drift makes them by
 * construction: rank 1's element 2 is the input's bits XOR (k - 1) in
 * call k, and its expect is the input, so call 1 holds the expected
 * bits, call 2 those XOR 1 and the last (3), which the result line
 * compares, those XOR 2. */
Test(plugins, repeated_calls_that_differ_are_named, .timeout = 120)
{
  setenv("COLLSIM_MISBEHAVE", "drift", 1);
  run_cli(&r, 60, "run", "--algo", MIS, "--ranks", "2", "--count", "8",
          "--iters", "3", NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
  const char *w = strstr(r.out, "result: WRONG: 1 element ");
  const char *d = strstr(r.out, "repeated calls: WRONG: 2 calls gave a "
                                "result different from the first; ");
  cr_assert(w && d, "%s", r.out);
  unsigned want, got, c1, c2;
  const char *wf = strstr(w, "first: "), *df = strstr(d, "first: ");
  cr_assert(wf && df, "no 'first: ' detail: %s", r.out);
  cr_assert_eq(sscanf(wf, "first: rank 1 index 2: expected "
                      "0x%x (%*[^)]), got 0x%x", &want, &got), 2, "%s", w);
  cr_assert_eq(got, want ^ 2u, "%s", w);
  cr_assert_eq(sscanf(df, "first: call 2 on rank 1, index "
                      "2: call 1 0x%x (%*[^)]), call 2 0x%x", &c1, &c2), 2,
               "%s", d);
  cr_assert_eq(c1, want, "%s", r.out);
  cr_assert_eq(c2, want ^ 1u, "%s", r.out);
}

/* time_us of bench --csv's one row (a plug-in, one size), or -1. */
static double bench_csv_us(const char *out)
{
  const char *row = strchr(out, '\n');
  double us = -1;
  if (row && sscanf(row + 1, "%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%*[^,],%lf",
                    &us) != 1)
    us = -1;
  return us;
}

/* bench --algo ./x.so times the -n timed calls, not the -w warm-up ones
 * (it verifies both): every rank's first two calls sleep 300 ms, so with
 * -w 2 -n 1 the one timed call is fast, and with -w 0 -n 3 (the same
 * calls, all timed) the median is a sleeping one, which shows the sleep
 * reaches the time column. */
Test(plugins, bench_times_the_timed_calls_only, .timeout = 120)
{
  setenv("COLLSIM_MISBEHAVE", "slow-start", 1);
  run_cli(&r, 60, "bench", "--algo", MIS, "-b", "1K", "-e", "1K", "-w", "2",
          "-n", "1", "--csv", NULL);
  double warm = bench_csv_us(r.out);
  int st = r.status;
  char out[512];
  snprintf(out, sizeof out, "%.250s%.250s", r.out, r.err);
  run_cli(&r, 60, "bench", "--algo", MIS, "-b", "1K", "-e", "1K", "-w", "0",
          "-n", "3", "--csv", NULL);
  unsetenv("COLLSIM_MISBEHAVE");
  cr_assert_eq(st, 0, "-w 2: %s", out);
  cr_assert_eq(r.status, 0, "-w 0: %s%s", r.out, r.err);
  double all = bench_csv_us(r.out);
  cr_assert(warm >= 0 && warm < 150000, "-w 2 -n 1 timed a warm-up call: %s",
            out);
  cr_assert(all >= 300000, "-w 0 -n 3: the sleeping calls' median %.2f us: %s",
            all, r.out);
}

/* A rank whose body returns an error under a schedule stops the run
 * where it failed: rank 1 returns 1 after its first event while ranks 0
 * and 2 have 2,000 independent marks each to make. The run must end the
 * same way every time (the same records, but for the clock): before, the
 * failed rank handed its turn back and the others ran on until the
 * launcher reaped it, 500 to 2,500 records depending on the OS. */
Test(plugins, a_failing_body_ends_a_schedule_where_it_failed, .init = make_dir,
     .fini = remove_dir, .timeout = 200)
{
  cs_trace_t first;
  char t[192];
  snprintf(t, sizeof t, "%s/fail.cstrace", dir);
  setenv("COLLSIM_MISBEHAVE", "fail", 1);
  for (int i = 0; i < 4; i++) {
    run_cli(&r, 60, "run", "--algo", MIS, "--ranks", "3", "--count", "8",
            "--iters", "1", "--schedule", "random:1", "--trace", t, NULL);
    cr_assert_eq(r.status, 3, "run %d: exit %d: %s%s", i, r.status, r.out,
                 r.err);
    cr_assert(strstr(r.err, "rank 1: exited with status 1"), "%s", r.err);
    cs_trace_t now;
    char why[256];
    cr_assert_eq(load_trace(t, &now, why, sizeof why), 0, "%s", why);
    uint64_t marks = 0;
    for (uint64_t k = 0; k < now.n; k++)
      marks += now.rec[k].kind == CS_EV_MARK;
    cr_assert_lt(marks, 100u, "run %d: the others ran on after rank 1 "
                 "failed: %llu marks", i, (unsigned long long)marks);
    if (i == 0) {
      first = now;
      continue;
    }
    cr_assert_eq(now.n, first.n, "run %d: %llu records against %llu", i,
                 (unsigned long long)now.n, (unsigned long long)first.n);
    int64_t k = first_unlike_record(&first, &now);
    cr_assert_eq(k, -1, "run %d: record %lld differs", i, (long long)k);
    cs_trace_free(&now);
  }
  unsetenv("COLLSIM_MISBEHAVE");
  cs_trace_free(&first);
}
