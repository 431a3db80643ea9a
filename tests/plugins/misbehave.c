/*
 * misbehave.c - a collective that misbehaves on request, for the
 * plugins suite (tests/test_plugins.c): built as plugins/misbehave.so
 * by CMake and loaded with `collsim run --algo`. COLLSIM_MISBEHAVE picks
 * what goes wrong (the environment reaches every rank and the launcher):
 *
 *   (unset)        a well-behaved copy: every rank's result is its input
 *   exit           rank 1 calls exit(0) after its first event
 *   abort          rank 1 calls abort() after its first event
 *   setsid         rank 1 forks a child that calls setsid() and sleeps
 *                  (its pid into the file COLLSIM_MISBEHAVE_PIDFILE names)
 *   spin, pause    rank 1 never returns after its events (busy loop /
 *                  pause()) while the others finish
 *   wait-cmp       cs_wait with compare 99      notify-op  cs_notify op 77
 *   load-valid0    cs_load with valid 0         peer       cs_load peer 999
 *   slot           cs_load slot 99              rect       a huge cs_load_rect
 *   say            the constructor writes "misbehave.so: loaded" to stderr
 *   ctor, refuse, signal-final, expect
 *                  a SIGSEGV in the constructor / that launcher hook
 *   expect-abort   expect calls abort()
 *   slots9         slots fills 9 slots, one more than CS_COLL_MAX_SLOTS
 *   name-ctl       the constructor puts a newline and a terminal escape
 *                  (clear screen) into the collective's name
 *   peek           order-dependent without a race (2 ranks): rank 1 stores,
 *                  then notifies rank 0; rank 0 looks at the cell with a
 *                  wait >= 0 and, if the notify is already there, keeps
 *                  only its first element (a wrong result only in orders
 *                  where rank 1 runs first, and no access of another
 *                  rank's memory: nothing for check to order)
 *   drift          rank 1's element 2 drifts from call to call: its
 *                  call k (from 1) stores the input's bits XOR (k - 1)
 *                  there, so every call after the first differs from it
 *   fail           rank 1's body returns 1 after its first event, while
 *                  the others make 2000 marks each before their store
 *   slow-start     every rank's first two calls sleep 300 ms (a bench's
 *                  warm-up with -w 2)
 *
 * The bad device calls are made by rank 1 after one good event.
 */
#include <collsim/collsim.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SLOT_DATA = 0, SLOT_SIGNAL = 1 };

/* A real fault at an instruction of this library (not in libc's raise). */
static volatile int *volatile nowhere; /* NULL */
static void crash(void)
{
  *nowhere = 1;
}

static int is(const char *what)
{
  const char *m = getenv("COLLSIM_MISBEHAVE");
  return m && !strcmp(m, what);
}

/* A child in a session of its own that outlives its rank (sleeps on),
 * holding the rank's mappings and descriptors; its pid goes to the file
 * COLLSIM_MISBEHAVE_PIDFILE names, so the test can look for it. */
static void setsid_child(void)
{
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    for (int i = 0; i < 600; i++) /* at most 10 minutes, should it escape */
      sleep(1);
    _exit(0);
  }
  const char *path = getenv("COLLSIM_MISBEHAVE_PIDFILE");
  FILE *f = pid > 0 && path ? fopen(path, "w") : NULL;
  if (f) {
    fprintf(f, "%d\n", (int)pid);
    fclose(f);
  }
}

/* The collective's name: the constructor may change it (name-ctl). */
static char name_text[32] = "misbehave";

__attribute__((constructor)) static void ctor(void)
{
  if (is("name-ctl"))
    memcpy(name_text, "mis\nbehave\x1b[2J", sizeof("mis\nbehave\x1b[2J"));
  if (is("ctor"))
    raise(SIGSEGV);
  if (is("say")) {
    static const char m[] = "misbehave.so: loaded\n";
    if (write(2, m, sizeof(m) - 1) < 0)
      _exit(9);
  }
}

static const char *refuse(const cs_coll_cfg_t *c)
{
  (void)c;
  if (is("refuse"))
    crash();
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype);
  s[0] = (cs_coll_slot_t){"data", c->count * es, es};
  s[1] = (cs_coll_slot_t){"signal", 16, 4};
  if (is("slots9")) {
    for (int i = 2; i < 9; i++)
      s[i] = (cs_coll_slot_t){"extra", 64, 4};
    return 9;
  }
  return 2;
}

static int32_t signal_final(const cs_coll_cfg_t *c, uint32_t rank,
                            uint64_t cell)
{
  (void)c, (void)rank, (void)cell;
  if (is("signal-final"))
    crash();
  return 0;
}

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  uint32_t me = cs_dev_rank(d), es = cs_dtype_size(c->dtype);
  uint32_t v = (uint32_t)c->count;
  cs_tile_t t;
  int rc = cs_tile_init(&t, es, v);
  if (rc < 0)
    return cs_dev_error(d, rc);
  cs_load(d, &t, me, SLOT_DATA, 0, v, v);
  if (is("fail") && me == 1) { /* an error after one event */
    cs_tile_fini(&t);
    return 1;
  }
  if (is("fail"))
    for (uint32_t i = 0; i < 2000; i++) /* independent of rank 1 */
      cs_mark(d, 2, i);
  if (me == 1) {
    if (is("exit"))
      exit(0);
    if (is("abort"))
      abort();
    if (is("setsid"))
      setsid_child();
    if (is("wait-cmp"))
      cs_wait(d, SLOT_SIGNAL, 0, 99, 0);
    if (is("notify-op"))
      cs_notify(d, me, SLOT_SIGNAL, 0, 77, 1);
    if (is("load-valid0"))
      cs_load(d, &t, me, SLOT_DATA, 0, 0, v);
    if (is("peer"))
      cs_load(d, &t, 999, SLOT_DATA, 0, v, v);
    if (is("slot"))
      cs_load(d, &t, me, 99, 0, v, v);
    if (is("rect"))
      cs_load_rect(d, &t, me, SLOT_DATA, 0, CS_RECT_MAX_ROWS, 1u << 30,
                   1u << 30);
  }
  if (is("peek") && me == 0) {
    if (cs_wait(d, SLOT_SIGNAL, 0, CS_CMP_GE, 0) != 0)
      cs_load(d, &t, me, SLOT_DATA, 0, 1, v); /* the rest zero-filled */
    cs_wait(d, SLOT_SIGNAL, 0, CS_CMP_GE, 1);
    cs_notify(d, me, SLOT_SIGNAL, 0, CS_NOTIFY_ADD, -1);
  }
  static uint32_t calls; /* this rank's, in its own process */
  calls++;
  if (is("slow-start") && calls <= 2)
    usleep(300 * 1000);
  if (is("drift") && me == 1 && v > 2)
    ((uint8_t *)t.buf)[2 * es] ^= (uint8_t)(calls - 1);
  cs_store(d, &t, SLOT_DATA, 0, v);
  if (is("peek") && me == 1)
    cs_notify(d, 0, SLOT_SIGNAL, 0, CS_NOTIFY_ADD, 1);
  if (me == 1 && is("spin"))
    for (volatile unsigned x = 0;; x++)
      ;
  if (me == 1 && is("pause"))
    for (;;)
      pause();
  cs_tile_fini(&t);
  return 0;
}

static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  if (is("expect"))
    crash();
  if (is("expect-abort"))
    abort();
  size_t row = (size_t)c->count * cs_dtype_size(c->dtype);
  memcpy(out, (const char *)in + rank * row, row);
}

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI, .size = sizeof(cs_collective_t),
    .name = name_text, .what = "each rank keeps its input, or misbehaves",
    .refuse = refuse, .slots = slots, .in_slot = SLOT_DATA,
    .out_slot = SLOT_DATA, .signal_slot = SLOT_SIGNAL,
    .signal_final = signal_final, .body = body, .expect = expect};
