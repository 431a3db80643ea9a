/*
 * fuzz_parse.c - libFuzzer harness for the command line's value parsers:
 * --schedule (cs_sched_parse, and the sentence of its refusal), --fault
 * (cs_fault_parse, cs_cli_fault_why, the rank check), --timeout and the
 * other numbers (cs_cli_seconds, cs_cli_u64, cs_cli_u32), the names
 * (dtype, op, memory model, algorithm, named defect), `trace --kind` and
 * its other options (through cs_cmd_trace, on a file that does not exist),
 * and the configuration check with its sentence (cs_ar_check,
 * cs_cli_ar_why).
 *
 * Input: the first byte picks the parser, the rest is the value (a C
 * string; for the configuration, the bytes of a cs_ar_cfg_t). Each
 * accepted value is checked against what the parser promises (a fault's
 * kind is a real kind, a schedule's strategy is set, a pct depth is
 * 1..64, seconds are > 0). Refusals print to a stdio stderr pointed at
 * /dev/null. Does not own the wordings (tests/test_cli.c). Built by CMake
 * with COLLSIM_FUZZ, run by `.ci/stages.sh fuzz`.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../collectives/allreduce.h"
#include "../../sim/sched.h"
#include "../../cli/collsim/cli.h"

/* The parsers' refusals go to a stderr that is /dev/null; libFuzzer and
 * the sanitizers keep the real fd 2 (they do not write through stdio's
 * stderr variable). */
static void quiet_stderr(void)
{
  static FILE *null;
  if (!null && !(null = fopen("/dev/null", "w")))
    abort();
  stderr = null;
}

static void sched(const char *s)
{
  cs_sched_cfg_t c;
  memset(&c, 0, sizeof(c));
  const char *file = NULL;
  if (cs_sched_parse(s, &c, &file) < 0) {
    cs_cli_schedule_error("fuzz", s); /* the refusal's line, whole */
    return;
  }
  if (c.strategy == CS_SCHED_FREE)
    abort();
  if (c.strategy == CS_SCHED_PCT && (c.depth < 1 || c.depth > 64 || !c.steps))
    abort();
  if (c.strategy == CS_SCHED_REPLAY && (!file || !*file))
    abort();
  memset(&c, 0, sizeof(c));
  if (cs_sched_parse(s, &c, NULL) == 0 && c.strategy == CS_SCHED_REPLAY)
    abort(); /* replay only where the caller loads the file */
}

static void fault(const char *s)
{
  cs_fault_t f;
  char why[512];
  int rc = cs_fault_parse(s, &f);
  if (rc < 0) {
    if (f.kind != CS_FAULT_NONE)
      abort();
    cs_cli_fault_why(s, rc, why, sizeof(why));
    if (!why[0])
      abort();
    return;
  }
  if (f.kind == CS_FAULT_NONE || !strcmp(cs_fault_kind_name(f.kind), "?") ||
      f.rank >= CS_MAX_RANKS)
    abort();
  cs_cli_common_t c = {0};
  int bad = 0;
  cs_cli_common_opt("run", CS_OPT_FAULT, s, &c, &bad);
  if (bad || !c.has_fault)
    abort();
  cs_cli_common_check("run", &c, 1 + (uint32_t)(f.event % CS_MAX_RANKS));
}

static void numbers(const char *s)
{
  uint64_t v, ns;
  uint32_t w;
  if (cs_cli_u64("run", "--count", s, 1, 1ull << 36, &v) == 0 &&
      (v < 1 || v > 1ull << 36))
    abort();
  if (cs_cli_u32("run", "--ranks", s, 1, 64, &w) == 0 && (w < 1 || w > 64))
    abort();
  if (cs_cli_seconds("run", "--timeout", s, 86400, &ns) == 0 &&
      (ns == 0 || ns > 86400ull * 1000000000ull))
    abort();
  cs_cli_common_t c = {0};
  int bad = 0;
  cs_cli_common_opt("run", CS_OPT_TIMEOUT, s, &c, &bad);
}

static void names(const char *s)
{
  int r;
  if ((r = cs_dtype_parse(s)) >= 0 && strcmp(cs_dtype_name(r), s))
    abort();
  if ((r = cs_op_parse(s)) >= 0 && strcmp(cs_op_name(r), s))
    abort();
  if ((r = cs_algo_parse(s)) >= 0 && strcmp(cs_algo_name(r), s))
    abort();
  if ((r = cs_mm_parse(s)) >= 0 && strcmp(cs_mm_name(r), s))
    abort();
  if ((r = cs_bug_parse(s)) >= 0 && (r < 1 || r >= CS_NBUGS))
    abort();
  cs_dtype_t d;
  cs_op_t o;
  cs_mm_t m;
  cs_cli_dtype("run", "--dtype", s, &d);
  cs_cli_op("run", "--op", s, &o);
  cs_cli_mm("run", "--memory-model", s, &m);
}

/* `collsim trace --kind S --rank S --from S FILE`, FILE missing: the
 * options are parsed, then the load fails (exit 2). */
static void trace_opts(const char *s)
{
  char a[256];
  snprintf(a, sizeof(a), "%s", s);
  char *argv[] = {"trace", "--kind", a, "--rank", a, "--from", a,
                  "/nonexistent-fuzz-dir/x.cstrace", NULL};
  char *argv2[] = {"trace", "--kind", a, "/nonexistent-fuzz-dir/x.cstrace", NULL};
  if (cs_cmd_trace(8, argv) != CS_EXIT_USAGE ||
      cs_cmd_trace(4, argv2) != CS_EXIT_USAGE)
    abort();
}

static void config(const uint8_t *p, size_t n)
{
  cs_ar_cfg_t c;
  memset(&c, 0, sizeof(c));
  memcpy(&c, p, n < sizeof(c) ? n : sizeof(c));
  char why[512];
  int rc = cs_ar_check(&c);
  if (rc < 0) {
    cs_cli_ar_why(&c, rc, why, sizeof(why));
    if (!why[0])
      abort();
    return;
  }
  cs_layout_t l;
  if (c.count <= 4096 && cs_ar_layout(&c, &l) == 0)
    (void)cs_ar_signal_cells(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  quiet_stderr();
  if (size < 1 || size > 512)
    return 0;
  char s[512];
  memcpy(s, data + 1, size - 1);
  s[size - 1] = 0;
  switch (data[0] % 6) {
  case 0: sched(s); break;
  case 1: fault(s); break;
  case 2: numbers(s); break;
  case 3: names(s); break;
  case 4: trace_opts(s); break;
  case 5: config(data + 1, size - 1); break;
  }
  return 0;
}
