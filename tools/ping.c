/*
 * ping.c - `collsim ping`: a token goes around the ring of ranks through the
 * windows and signals; rank 0 times every round trip. The smallest honest
 * end-to-end check of the foundation (world, device API, futex signals,
 * launcher), and a latency probe of the wait strategy.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/launch.h"
#include "../window/cs_error.h"
#include "cli.h"

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

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int cs_cmd_ping(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"ranks", required_argument, 0, 'n'},
      {"rounds", required_argument, 0, 'r'},
      {"help", no_argument, 0, 'h'},
      CS_CLI_COMMON_LONGOPTS,
      {0, 0, 0, 0}};
  uint32_t nranks = 2;
  ping_args_t a = {1000};
  cs_cli_common_t com = {0};
  int bad = 0, opt;
  optind = 1;
  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    if (cs_cli_common_opt("ping", opt, optarg, &com, &bad)) {
      if (bad)
        return CS_EXIT_USAGE;
      continue;
    }
    switch (opt) {
    case 'n':
      bad |= cs_cli_u32("ping", "--ranks", optarg, 1, CS_MAX_RANKS, &nranks) < 0;
      break;
    case 'r':
      bad |= cs_cli_u32("ping", "--rounds", optarg, 1, 10000000, &a.rounds) < 0;
      break;
    case 'h':
      fputs(ping_help, stdout);
      return CS_EXIT_OK;
    default:
      fprintf(stderr, "Try 'collsim ping --help'.\n");
      return CS_EXIT_USAGE;
    }
    if (bad)
      return CS_EXIT_USAGE;
  }
  if (optind < argc) {
    cs_cli_error("ping", "unexpected argument '%s'", argv[optind]);
    return CS_EXIT_USAGE;
  }
  if (cs_cli_common_check("ping", &com, nranks) < 0)
    return CS_EXIT_USAGE;

  cs_layout_t l;
  cs_layout_init(&l, CS_SLOT_ALIGN);
  cs_layout_add(&l, "token", sizeof(int32_t), sizeof(int32_t));
  cs_layout_add(&l, "signal", sizeof(int32_t), sizeof(int32_t));
  cs_world_opts_t wo = {.io_bytes = (uint64_t)a.rounds * 8 + 64,
                        .timeout_ns = com.timeout_ns,
                        .trace_bytes = cs_cli_trace_bytes(&com, nranks)};
  cs_world_t w;
  int rc = cs_world_create(&w, &l, nranks, &wo);
  if (rc < 0) {
    cs_cli_error("ping", "cannot create the shared world: %s", cs_strerror(rc));
    return rc == CS_ETOOBIG ? CS_EXIT_USAGE : CS_EXIT_ABORTED;
  }
  cs_launch_opts_t lo = {.fault = com.fault};
  cs_trace_header_t th = {.algo = 255, .program = 1, .rounds = a.rounds};
  if (cs_cli_trace_open("ping", &com, &th, &w, &lo) < 0) {
    cs_world_destroy(&w);
    return CS_EXIT_USAGE;
  }
  cs_launch_result_t res;
  rc = cs_launch(&w, ping_rank, &a, &lo, &res);
  int code = cs_cli_launch_exit("ping", rc);
  if (cs_cli_trace_close("ping", &com, rc < 0 ? NULL : &res) < 0 && code == CS_EXIT_OK)
    code = CS_EXIT_ABORTED;
  if (code == CS_EXIT_OK) {
    uint64_t *rtt = (uint64_t *)cs_world_output(&w, 0);
    uint32_t wrong = *(uint32_t *)(rtt + a.rounds);
    qsort(rtt, a.rounds, sizeof(*rtt), cmp_u64);
    double med = (double)rtt[a.rounds / 2] / nranks / 1000.0;
    double p99 = (double)rtt[(uint64_t)a.rounds * 99 / 100] / nranks / 1000.0;
    printf("collsim ping: %u ranks, %u rounds, %u hops, wait spin %u\n", nranks,
           a.rounds, a.rounds * nranks, w.ctl->spin_iters);
    printf("hop latency: median %.2f us, p99 %.2f us (round trip / %u)\n", med,
           p99, nranks);
    if (wrong) {
      printf("token: WRONG in %u of %u rounds\n", wrong, a.rounds);
      code = CS_EXIT_WRONG;
    } else {
      printf("token: verified in every round\n");
    }
  }
  cs_world_destroy(&w);
  return code;
}
