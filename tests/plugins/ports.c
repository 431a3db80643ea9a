/*
 * ports.c - collsim's built-in mesh, ring and host allreduces written
 * again against the installed headers alone (<collsim/collsim.h>), as a
 * user would port them: the test that they do what the built-ins do
 * (tests/test_ports.c: the same result bits, the same events in the same
 * order under controlled schedules, the same signal values, the same
 * story of a defect) is the test that the public API can express them.
 * The build compiles this file once per algorithm with -DPORT=P (1 mesh,
 * 2 ring, 3 host) and -DDEFECT=D (0 none; 1 the defect of the built-in's
 * --bug named in the table below): ports/port_P_D.so.
 *
 *   PORT 1 mesh   ready barrier, then per chunk of W elements: own load,
 *                 every peer's chunk loaded and folded in ascending, a
 *                 read-complete barrier, the store (docs/algorithms.md §3;
 *                 DEFECT 1 = --bug mesh-no-chunk-barrier)
 *   PORT 2 ring   reduce-scatter and all-gather rounds on their own signal
 *                 rows, a READY and a READ-COMPLETE barrier per subchunk
 *                 (§4; DEFECT 1 = --bug ring-no-ready-barrier)
 *   PORT 3 host   mesh with 256-element chunks moved in 32-byte units, at
 *                 most 16 ranks (§5)
 *
 * It starts its body on the stage-in's stores as the built-ins do
 * (CS_COLL_NO_STAGE_FENCE), honours --minmax (CS_COLL_MINMAX), with
 * the local value as the first operand, and the mesh port takes --shape
 * and --valid (CS_COLL_SHAPE) for the partial-valid rectangle (§3.3);
 * mesh and host mark one unnamed phase of chunks, tagged "main cSTEP" as
 * the built-ins' (CS_COLL_CHUNK_TAGS).
 * What the built-ins do that this port cannot say is not here:
 * --signals single-use and the signal check before the last epilogue
 * (collsim checks the cells at the end, where the epilogue has brought
 * them back to 0).
 *
 * The expected result is the algorithm's own fold order (own value
 * first for mesh and host, the ring's order for ring), with the public
 * plain-memory kernel; with COLLSIM_PORT_EXPECT naming a .npy of shape
 * (N, count) (a built-in run's --output), that file's row instead, so the
 * run compares the port's bits with the built-in's.
 */
#include <collsim/collsim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PORT
#define PORT 1
#endif
#ifndef DEFECT
#define DEFECT 0
#endif

/* The slots: the built-ins' order, or with -DSWAP_SLOTS=1 the signal
 * cells first (tests/test_teach_ports.sh: teach draws from the slots the
 * registration names, not from the built-ins' order). */
#ifndef SWAP_SLOTS
#define SWAP_SLOTS 0
#endif
enum { DATA = SWAP_SLOTS, SIG = 1 - SWAP_SLOTS };

/* ---- geometry (docs/algorithms.md §3.1, §4.2, §5) ---- */

static uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
static uint64_t ceil_to(uint64_t a, uint64_t b) { return ceil_div(a, b) * b; }

/* A remote load of v elements moves 16-element units for 2-byte types. */
static uint32_t remote_phys(uint32_t v, uint32_t es)
{
  return es == 2 ? (uint32_t)ceil_to(v, 16) : v;
}

/* ceil(n/align)*align below the tile's elements, else the tile's. */
static uint64_t width(uint64_t n, uint32_t es, uint32_t tile_bytes)
{
  uint64_t maxc = tile_bytes / es;
  return n > 0 && n < maxc ? ceil_to(n, 32 / es) : maxc;
}

#if PORT == 2
static uint64_t ring_bound(uint64_t i, uint64_t size, uint32_t nr, uint32_t es)
{
  unsigned __int128 p = (unsigned __int128)i * size;
  if (es != 2)
    return (uint64_t)(p / nr);
  unsigned __int128 d = (unsigned __int128)16 * nr;
  uint64_t b = (uint64_t)((p + d - 1) / d) * 16;
  return b < size ? b : size;
}

static uint64_t ring_ms(uint64_t size, uint32_t nr, uint32_t es)
{
  uint64_t ms = ceil_div(size, nr);
  if (es == 2 && (ms += 15) > size)
    ms = size;
  return ms;
}

/* The ring's subchunk width W and subchunks per round K. */
static uint64_t ring_w(const cs_coll_cfg_t *c)
{
  uint32_t es = cs_dtype_size(c->dtype);
  return width(ring_ms(c->count, c->nranks, es), es, c->tile_bytes);
}
static uint64_t ring_k(const cs_coll_cfg_t *c)
{
  return ceil_div(ring_ms(c->count, c->nranks, cs_dtype_size(c->dtype)),
                  ring_w(c));
}
#endif

#define HOST_CHUNK 256u

/* ---- the steps ---- */

typedef struct tiles {
  cs_tile_t acc, recv;
} tiles_t;

/* The all-to-all barrier on signal row `row`: fence, +1 to cell [row, me]
 * of every peer ascending, wait for cell [row, s] >= expect of each. */
static void barrier(cs_dev_t *d, uint32_t row, int32_t expect)
{
  uint32_t n = cs_dev_nranks(d), me = cs_dev_rank(d);
  cs_fence(d);
  for (uint32_t p = 0; p < n; p++)
    if (p != me)
      cs_notify(d, p, SIG, row * n + me, CS_NOTIFY_ADD, 1);
  for (uint32_t s = 0; s < n; s++)
    if (s != me)
      cs_wait(d, SIG, row * n + s, CS_CMP_GE, expect);
}

/* Every own non-self cell of rows [0, nrows) back to 0: -total (the last
 * row: -last). */
static void epilogue(cs_dev_t *d, uint32_t nrows, int32_t total, int32_t last)
{
  uint32_t n = cs_dev_nranks(d), me = cs_dev_rank(d);
  for (uint32_t row = 0; row < nrows; row++)
    for (uint32_t s = 0; s < n; s++)
      if (s != me)
        cs_notify(d, me, SIG, row * n + s, CS_NOTIFY_ADD,
                  row + 1 == nrows ? -last : -total);
}

/* acc = acc op (peer's elements [off, off+v), moved as phys), in
 * --minmax's mode; the local value is the first operand (the reference's
 * order): acc's, unless peer is this rank (the ring's own copy folded
 * into the partial it received). */
static void load_reduce(cs_dev_t *d, tiles_t *t, const cs_coll_cfg_t *c,
                        uint32_t peer, uint64_t off, uint32_t v, uint32_t phys)
{
  cs_load(d, &t->recv, peer, DATA, off, v, phys);
  cs_tile_reduce_mm(d, &t->acc, &t->recv, c->dtype, c->op, c->minmax,
                    peer == cs_dev_rank(d));
}

/* ---- the algorithms ---- */

/* Whether c asks for mesh's partial-valid rectangle (§3.3): a shape
 * whose valid rectangle is smaller than it. */
static int rect(const cs_coll_cfg_t *c)
{
  return c->shape_rows &&
         (c->valid_rows < c->shape_rows || c->valid_cols < c->shape_cols);
}

#if PORT == 1
/* §3.3: the valid rectangle, in one tile, as one chunk: ready barrier,
 * one 2-D own load, one 2-D load per peer ascending folded in, the
 * read-complete barrier, one 2-D store. */
static void mesh_rect(cs_dev_t *d, const cs_coll_cfg_t *c, tiles_t *t)
{
  uint32_t n = cs_dev_nranks(d), me = cs_dev_rank(d);
  uint32_t rows = c->valid_rows, cols = c->valid_cols, stride = c->shape_cols;
  cs_mark(d, 1, 0);
  barrier(d, 0, 1); /* READY */
  cs_dev_set_step(d, 0);
  cs_load_rect(d, &t->acc, me, DATA, 0, rows, cols, stride);
  for (uint32_t p = 0; p < n; p++)
    if (p != me) {
      cs_load_rect(d, &t->recv, p, DATA, 0, rows, cols, stride);
      cs_tile_reduce_mm(d, &t->acc, &t->recv, c->dtype, c->op, c->minmax, 0);
    }
  int32_t read_done = 2;
  if (DEFECT != 1)
    barrier(d, 0, read_done++); /* READ-COMPLETE */
  cs_store_rect(d, &t->acc, DATA, 0, rows, cols, stride);
  epilogue(d, 1, read_done - 1, read_done - 1);
}
#endif

#if PORT == 1 || PORT == 3
/* Mesh (chunk 0: the tile's width) and host (HOST_CHUNK elements moved
 * in 32-byte units): ready barrier, then per chunk own load, peers
 * folded in ascending, read-complete barrier, store. */
static void chunked(cs_dev_t *d, const cs_coll_cfg_t *c, tiles_t *t)
{
  uint32_t n = cs_dev_nranks(d), me = cs_dev_rank(d);
  uint32_t es = cs_dtype_size(c->dtype);
  uint64_t w = PORT == 1 ? width(c->count, es, c->tile_bytes) : HOST_CHUNK;
  uint64_t nchunks = ceil_div(c->count, w);
  cs_mark(d, 1, 0);
  barrier(d, 0, 1); /* READY */
  int32_t read_done = 2;
  for (uint64_t ci = 0; ci < nchunks; ci++) {
    uint64_t off = ci * w;
    uint32_t v = (uint32_t)(c->count - off < w ? c->count - off : w);
    uint32_t own = PORT == 1 ? v : (uint32_t)(ceil_to((uint64_t)v * es, 32) / es);
    uint32_t far = PORT == 1 ? remote_phys(v, es) : own;
    cs_dev_set_step(d, (uint32_t)ci);
    cs_load(d, &t->acc, me, DATA, off, v, own);
    for (uint32_t p = 0; p < n; p++)
      if (p != me)
        load_reduce(d, t, c, p, off, v, far);
    if (!(DEFECT == 1 && PORT == 1))
      barrier(d, 0, read_done++); /* READ-COMPLETE */
    cs_store(d, &t->acc, DATA, off, v);
  }
  epilogue(d, 1, read_done - 1, read_done - 1);
}
#endif

#if PORT == 2
/* One round of phase 1 (reduce-scatter) or 2 (all-gather) on its row. */
static void ring_round(cs_dev_t *d, const cs_coll_cfg_t *c, tiles_t *t,
                       uint32_t phase, uint32_t round)
{
  uint32_t n = cs_dev_nranks(d), me = cs_dev_rank(d);
  uint32_t es = cs_dtype_size(c->dtype), left = (me + n - 1) % n;
  uint32_t row = phase == 1 ? round : round + n - 1;
  uint32_t seg = (uint32_t)(((uint64_t)me + 2ull * n - round - (phase == 1 ? 2 : 1)) % n);
  uint64_t b = ring_bound(seg, c->count, n, es);
  uint64_t len = ring_bound(seg + 1, c->count, n, es) - b;
  uint64_t w = ring_w(c), k = ring_k(c);
  int32_t seen = 0;
  cs_mark(d, phase, round);
  for (uint64_t j = 0; j < k; j++) {
    uint64_t sub = j * w;
    int active = sub < len;
    uint32_t v = active ? (uint32_t)(len - sub < w ? len - sub : w) : 0;
    cs_dev_set_step(d, (uint32_t)j);
    if (DEFECT != 1)
      barrier(d, row, ++seen); /* READY */
    if (active && phase == 1) {
      cs_load(d, &t->acc, left, DATA, b + sub, v, remote_phys(v, es));
      load_reduce(d, t, c, me, b + sub, v, v); /* own copy folded in */
    } else if (active) {
      cs_load(d, &t->recv, left, DATA, b + sub, v, remote_phys(v, es));
    } else {
      cs_load(d, &t->acc, me, DATA, 0, 1, 1); /* an inactive lane */
    }
    barrier(d, row, ++seen); /* READ-COMPLETE */
    if (active)
      cs_store(d, phase == 1 ? &t->acc : &t->recv, DATA, b + sub, v);
  }
}
#endif

static int body(cs_dev_t *d, const cs_coll_cfg_t *c)
{
  uint32_t es = cs_dtype_size(c->dtype), cap = c->tile_bytes / es;
  tiles_t t;
  memset(&t, 0, sizeof t);
  int rc = cs_tile_init(&t.acc, es, cap > HOST_CHUNK ? cap : HOST_CHUNK);
  if (rc == 0)
    rc = cs_tile_init(&t.recv, es, cap > HOST_CHUNK ? cap : HOST_CHUNK);
  if (rc < 0) {
    cs_tile_fini(&t.acc);
    return cs_dev_error(d, rc);
  }
#if PORT == 2
  uint32_t n = cs_dev_nranks(d);
  for (uint32_t r = 0; r + 1 < n; r++)
    ring_round(d, c, &t, 1, r);
  for (uint32_t r = 0; r + 1 < n; r++)
    ring_round(d, c, &t, 2, r);
  int32_t total = (int32_t)(2 * ring_k(c) - (DEFECT == 1 ? ring_k(c) : 0));
  if (n > 1)
    epilogue(d, 2 * (n - 1), total, total);
#elif PORT == 1
  if (rect(c))
    mesh_rect(d, c, &t);
  else
    chunked(d, c, &t);
#else
  chunked(d, c, &t);
#endif
  cs_tile_fini(&t.acc);
  cs_tile_fini(&t.recv);
  return 0;
}

/* ---- the registration ---- */

static const char *refuse(const cs_coll_cfg_t *c)
{
  if (PORT == 3 && c->nranks > 16)
    return "the host builtin supports at most 16 ranks";
  if (rect(c) && (uint64_t)c->valid_rows * c->valid_cols *
                         cs_dtype_size(c->dtype) > c->tile_bytes)
    return "the valid rectangle must fit one tile";
  return NULL;
}

static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{
  uint32_t es = cs_dtype_size(c->dtype);
  uint64_t cells = PORT == 2 ? 2ull * (c->nranks - 1) * c->nranks : c->nranks;
  s[DATA] = (cs_coll_slot_t){"data", c->count * es, es};
  s[SIG] = (cs_coll_slot_t){"signal", cells * 4, 4};
  return 2;
}

/* Rank `rank`'s row of the .npy at `path` (shape (N, count), the
 * dtype's element size): 0, or -1 when it cannot be read as one. */
static int npy_row(const char *path, const cs_coll_cfg_t *c, uint32_t rank,
                   void *out)
{
  FILE *f = fopen(path, "rb");
  unsigned char h[12];
  size_t es = cs_dtype_size(c->dtype), row = c->count * es;
  int ok = f && fread(h, 1, sizeof h, f) == sizeof h && !memcmp(h, "\x93NUMPY", 6);
  long data = !ok ? 0 : h[6] == 1 ? 10 + (h[8] | h[9] << 8)
                                  : 12 + (long)(h[8] | h[9] << 8 | h[10] << 16);
  ok = ok && fseek(f, data + (long)(rank * row), SEEK_SET) == 0 &&
       fread(out, 1, row, f) == row;
  if (f)
    fclose(f);
  return ok ? 0 : -1;
}

static void expect(const cs_coll_cfg_t *c, const void *in, uint32_t rank,
                   void *out)
{
  size_t es = cs_dtype_size(c->dtype), row = c->count * es;
  const unsigned char *x = in;
  const char *file = getenv("COLLSIM_PORT_EXPECT");
  if (file && *file) {
    if (npy_row(file, c, rank, out) < 0)
      memset(out, 0xff, row); /* a NaN pattern no fold gives: WRONG */
    return;
  }
  uint32_t n = c->nranks;
#if PORT == 2
  /* Segment k: ((x[k+1] op x[k+2]) op ...) op x[k]. */
  for (uint32_t k = 0; k < n; k++) {
    uint64_t lo = ring_bound(k, c->count, n, (uint32_t)es);
    uint64_t hi = ring_bound(k + 1, c->count, n, (uint32_t)es);
    unsigned char *o = (unsigned char *)out + lo * es;
    memcpy(o, x + ((k + 1) % n) * row + lo * es, (hi - lo) * es);
    for (uint32_t i = 2; i <= n; i++) /* the holder's own value first */
      cs_reduce_kernel_mm(c->dtype, c->op, c->minmax, 1, o,
                          x + ((k + i) % n) * row + lo * es, hi - lo);
  }
#else
  memcpy(out, x + rank * row, row); /* own value first, peers ascending */
  uint32_t rows = rect(c) ? c->valid_rows : 1;
  uint64_t cols = rect(c) ? c->valid_cols : c->count;
  uint64_t stride = rect(c) ? c->shape_cols : 0; /* outside: the input */
  for (uint32_t i = 0; i < rows; i++)
    for (uint32_t p = 0; p < n; p++)
      if (p != rank)
        cs_reduce_kernel_mm(c->dtype, c->op, c->minmax, 0,
                            (unsigned char *)out + i * stride * es,
                            x + p * row + i * stride * es, cols);
#endif
}

#if PORT == 2
static const char *const phases[] = {"RS", "AG"};
#endif

/* ---- what teach draws (the built-ins' own facts, said again) ---- */

/* The parts teach tracks: the ring's N segments (§4.2), mesh's chunks of
 * the tile's width, host's of HOST_CHUNK elements; where part i begins. */
static uint64_t chunk_w(const cs_coll_cfg_t *c)
{
  return PORT == 1 ? width(c->count, cs_dtype_size(c->dtype), c->tile_bytes)
                   : HOST_CHUNK;
}

static uint64_t parts(const cs_coll_cfg_t *c)
{
  return PORT == 2 ? c->nranks : ceil_div(c->count, chunk_w(c));
}

static uint64_t part_lo(const cs_coll_cfg_t *c, uint64_t i)
{
#if PORT == 2
  return ring_bound(i, c->count, c->nranks, cs_dtype_size(c->dtype));
#else
  return i * chunk_w(c) < c->count ? i * chunk_w(c) : c->count;
#endif
}

/* The textbook bytes a rank loads from others in one call: the ring
 * 2(N-1)/N*S, mesh and host every peer's whole buffer. */
static double volume(const cs_coll_cfg_t *c, const char **what)
{
  double s = (double)c->count * cs_dtype_size(c->dtype), n = c->nranks;
  *what = PORT == 2 ? "2(N-1)/N*S" : "(N-1)*S";
  return PORT == 2 ? 2.0 * (n - 1) * s / n : (n - 1) * s;
}

/* Which barrier a wait of `rank` on signal cell `cell` for >= target is
 * part of, with the notifying rank (the cell's column): the ring's row t
 * is RS round t, row N-1+t AG round t, per subchunk j READY (2j+1) then
 * READ-COMPLETE (2j+2), only the latter (j+1) without READY barriers;
 * mesh's and host's READY is 1, the read-complete of chunk q is q+2. */
static void wait_where(const cs_coll_cfg_t *c, uint32_t rank, uint64_t cell,
                       int32_t target, char *buf, size_t n)
{
  uint32_t nr = c->nranks, from = (uint32_t)(cell % nr);
  uint64_t cells = PORT == 2 ? 2ull * (nr - 1) * nr : nr;
  buf[0] = 0;
  if (from == rank || cell >= cells || target < 1)
    return; /* its own cell: no peer notifies it */
#if PORT == 2
  uint32_t row = (uint32_t)(cell / nr);
  int ready = DEFECT != 1 && target % 2 == 1;
  int32_t j = DEFECT != 1 ? (target - 1) / 2 : target - 1;
  snprintf(buf, n, "%s barrier of %s t%u j%d, rank %u's notify",
           ready ? "READY" : "READ-COMPLETE", row + 1 < nr ? "RS" : "AG",
           row + 1 < nr ? row : row - (nr - 1), j, from);
#else
  if (target == 1)
    snprintf(buf, n, "ready barrier, rank %u's notify", from);
  else
    snprintf(buf, n, "read-complete of chunk %d, rank %u's notify",
             target - 2, from);
#endif
}

const cs_collective_t collsim_collective = {
    .abi = CS_COLLECTIVE_ABI,
    .size = sizeof(cs_collective_t),
    .name = PORT == 1 ? "mesh-port" : PORT == 2 ? "ring-port" : "host-port",
    .what = "a built-in allreduce on the public API alone",
    .refuse = refuse,
    .slots = slots,
    .in_slot = DATA,
    .out_slot = DATA,
    .signal_slot = SIG,
    .body = body,
    .expect = expect,
#if PORT == 2
    .phases = phases,
    .nphases = 2,
#endif
    .ready_barrier = "READY",
    .read_done_barrier = PORT == 3 ? "READ-DONE" : "READ-COMPLETE",
    .flags = CS_COLL_NO_STAGE_FENCE | CS_COLL_MINMAX |
             (PORT == 1 ? CS_COLL_SHAPE : 0) |
             (PORT != 2 ? CS_COLL_CHUNK_TAGS : 0),
    .part_letter = PORT == 2 ? 's' : 'c',
    .teach_flags = PORT == 2 ? CS_COLL_TEACH_PULL_RING : 0,
    .parts = parts,
    .part_lo = part_lo,
    .legend = PORT == 2 ? "RS t1 j0: reduce-scatter round 1, subchunk 0 (AG: "
                          "all-gather); [2+3]: r2 op r3"
                        : "ph1 r0: the main phase; c0 = chunk 0; [2+0+1]: "
                          "r2's input op r0's op r1's",
    .volume = volume,
    .wait_where = wait_where,
};
