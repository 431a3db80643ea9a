/*
 * ping.c - `collsim ping`: a token goes around the ring of ranks through the
 * windows and signals; rank 0 times every round trip. The smallest honest
 * end-to-end check of the foundation (world, device API, futex signals,
 * launcher), and a latency probe of the wait strategy. Parses, describes
 * the launch as a job for the pipeline (run/pipeline.h) and prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "../../sim/launch.h"
#include "../../window/cs_error.h"
#include "cli.h"
#include "../../run/pipeline.h"
#include "../../run/verify.h"

static const char ping_help[] =
    "usage: collsim ping [--ranks N] [--rounds R] [--fault RANK:KIND[:EVENT]]\n"
    "                    [--timeout SECONDS] [--trace FILE]\n"
    "\n"
    "Passes a token around a ring of N rank processes R times. Each hop is a\n"
    "put of the token into the next rank's window, a fence and a notify; the\n"
    "next rank waits, loads, adds one and passes it on. Rank 0 times each round\n"
    "trip; the hop latency printed is round trip / N (median and p99), and the\n"
    "token's final value is checked every round.\n"
    "\n"
    "  --ranks N        ranks, 1..256 (default 2)\n"
    "  --rounds R       round trips, 1..10000000 (default 1000)\n"
    CS_CLI_COMMON_HELP
    "\n" CS_CLI_EXIT_HELP;

enum { SLOT_TOKEN = 0, SLOT_SIGNAL = 1 };

typedef struct ping_args {
  uint32_t rounds;
} ping_args_t;

/* Output of rank 0, in its io buffer: rounds round-trip times, then flags. */
static int ping_rank(cs_dev_t *d, void *arg)
{
  const ping_args_t *a = arg;
  uint32_t n = d->nranks, me = d->rank, right = (me + 1) % n;
  int32_t buf[8];
  cs_tile_t t = {buf, sizeof(int32_t), 8, 0};
  uint64_t *rtt = (uint64_t *)cs_world_output(d->world, me);
  uint32_t *bad = (uint32_t *)(rtt + a->rounds);

  for (uint32_t k = 0; k < a->rounds; k++) {
    if (me == 0) {
      uint64_t t0 = cs_now_ns();
      buf[0] = (int32_t)k;
      cs_put(d, &t, right, SLOT_TOKEN, 0, 1);
      cs_fence(d);
      cs_notify(d, right, SLOT_SIGNAL, 0, CS_NOTIFY_ADD, 1);
      cs_wait(d, SLOT_SIGNAL, 0, CS_CMP_GE, (int32_t)k + 1);
      cs_load(d, &t, me, SLOT_TOKEN, 0, 1, 1);
      rtt[k] = cs_now_ns() - t0;
      if (buf[0] != (int32_t)(k + n - 1))
        (*bad)++;
    } else {
      cs_wait(d, SLOT_SIGNAL, 0, CS_CMP_GE, (int32_t)k + 1);
      cs_load(d, &t, me, SLOT_TOKEN, 0, 1, 1);
      buf[0] += 1;
      cs_put(d, &t, right, SLOT_TOKEN, 0, 1);
      cs_fence(d);
      cs_notify(d, right, SLOT_SIGNAL, 0, CS_NOTIFY_ADD, 1);
    }
  }
  return 0;
}

/* What ping's verify step reads out of rank 0's io buffer. */
typedef struct ping_job {
  ping_args_t a;
  uint32_t    nranks;
  uint32_t    spin;         /* the world's wait spin */
  double      med, p99;     /* hop latency, us */
  uint32_t    wrong;        /* rounds whose token came back wrong */
} ping_job_t;

static int ping_verify(cs_pipe_t *p, void *ctx)
{
  ping_job_t *pj = ctx;
  uint32_t rounds = pj->a.rounds, n = pj->nranks;
  uint64_t *rtt = (uint64_t *)cs_world_output(&p->world, 0);
  pj->wrong = *(uint32_t *)(rtt + rounds);
  pj->spin = p->world.ctl->spin_iters;
  cs_verify_sort_ns(rtt, rounds);
  pj->med = (double)rtt[rounds / 2] / n / 1000.0;
  pj->p99 = (double)rtt[(uint64_t)rounds * 99 / 100] / n / 1000.0;
  return (int)pj->wrong;
}

static int ping_report(cs_pipe_t *p, void *ctx)
{
  const ping_job_t *pj = ctx;
  uint32_t rounds = pj->a.rounds, n = pj->nranks;
  (void)p;
  printf("collsim ping: %u ranks, %u rounds, %u hops, wait spin %u\n", n,
         rounds, rounds * n, pj->spin);
  printf("hop latency: median %.2f us, p99 %.2f us (round trip / %u)\n",
         pj->med, pj->p99, n);
  if (pj->wrong)
    printf("token: WRONG in %u of %u rounds\n", pj->wrong, rounds);
  else
    printf("token: verified in every round\n");
  return 0;
}

static const cs_job_ops_t ping_ops = {NULL, ping_verify, ping_report};

/* Returns 0 to run, 1 after --help, -1 on bad usage (printed). */
static int parse(int argc, char **argv, ping_job_t *pj, cs_cli_common_t *com)
{
  static const struct option longopts[] = {
      {"ranks", required_argument, 0, 'n'},
      {"rounds", required_argument, 0, 'r'},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  int bad = 0, opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (cs_cli_common_opt("ping", opt, optarg, com, &bad)) {
      if (bad)
        return -1;
      continue;
    }
    switch (opt) {
    case 'n':
      bad |= cs_cli_u32("ping", "--ranks", optarg, 1, CS_MAX_RANKS, &pj->nranks) < 0;
      break;
    case 'r':
      bad |= cs_cli_u32("ping", "--rounds", optarg, 1, 10000000, &pj->a.rounds) < 0;
      break;
    case 'h':
      fputs(ping_help, stdout);
      return 1;
    default:
      cs_cli_bad_option("ping");
      return -1;
    }
    if (bad)
      return -1;
  }
  if (optind < argc) {
    cs_cli_error("ping", "unexpected argument '%s'", argv[optind]);
    return -1;
  }
  if (com->trace && cs_cli_output_ok("ping", "--trace", com->trace, NULL, 0, 0) < 0)
    return -1;
  return cs_cli_common_check("ping", com, pj->nranks) < 0 ? -1 : 0;
}

/* Words the step the pipeline stopped at. Returns the exit code. */
static int ping_failed(const cs_pipe_t *p, const cs_job_t *j)
{
  char why[512];
  switch (p->failed) {
  case CS_PIPE_WORLD:
    cs_world_explain_error(why, sizeof why, j->layout, j->nranks, &j->wo, p->err);
    cs_cli_error("ping", "cannot create the shared memory: %s", why);
    return p->err == CS_ETOOBIG || p->err == -ENOENT ? CS_EXIT_USAGE
                                                     : CS_EXIT_ABORTED;
  case CS_PIPE_TRACER:
    return cs_cli_tracer_open_exit("ping", p);
  case CS_PIPE_LAUNCH:
  case CS_PIPE_TRACE_CLOSE:
    return cs_cli_pipe_launch_exit("ping", p);
  default:
    return p->verdict ? CS_EXIT_WRONG : CS_EXIT_OK;
  }
}

int cs_cmd_ping(int argc, char **argv)
{
  ping_job_t pj = {.a = {1000}, .nranks = 2};
  cs_cli_common_t com = {0};
  int rc = parse(argc, argv, &pj, &com);
  if (rc != 0)
    return rc > 0 ? CS_EXIT_OK : CS_EXIT_USAGE;

  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "token", sizeof(int32_t), sizeof(int32_t));
  cs_layout_add(&l, "signal", sizeof(int32_t), sizeof(int32_t));
  cs_job_t j = {
      .layout = &l, .nranks = pj.nranks,
      .wo = {.io_bytes = (uint64_t)pj.a.rounds * 8 + 64,
             .timeout_ns = com.timeout_ns,
             .trace_bytes = com.trace ? cs_pipe_trace_bytes(pj.nranks, 0) : 0},
      .body = ping_rank, .arg = &pj.a, .fault = com.fault, .trace = com.trace,
      .th = {.algo = 255, .program = 1, .rounds = pj.a.rounds},
      .ops = &ping_ops, .ctx = &pj};
  cs_pipe_t p;
  cs_pipe_run(&p, &j);
  return ping_failed(&p, &j);
}
