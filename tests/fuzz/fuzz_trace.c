/*
 * fuzz_trace.c - libFuzzer harness for the trace reader (sim/trace/read.c)
 * and everything `collsim trace` and `collsim check` do with what it
 * accepts: load (sorted by seq), the links between records, the text,
 * JSON lines and Chrome exports, --stats, and the happens-before check
 * (streamed and loaded) with its wording.
 *
 * Built twice (CMake, COLLSIM_FUZZ): fuzz_trace hands the input over as it
 * is, so most mutations die at a checksum; fuzz_trace_sealed (FUZZ_SEAL)
 * first re-seals it as a writer would: the header's FNV-1a checksum, the
 * header block's zero padding and every whole record's CRC-32C
 * (sim/trace/checksum.c), so mutated fields reach the code past the
 * checksums. Each input is a memfd read back by its /proc/self/fd path.
 * Does not own the reader's wording (tests/test_reader.c). Run by
 * `.ci/stages.sh fuzz` with the shipped traces (traces/) as seeds.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../sim/trace.h"
#include "../../sim/trace/analysis.h"
#include "../../sim/trace/check.h"
#include "../../sim/trace/export.h"
#include "../../sim/trace/read.h"
#include "../../cli/collsim/cli.h"
#include "../../cli/collsim/trace_stats.h"

static int fd = -1;
static char path[64];
static FILE *sink;

#ifdef FUZZ_SEAL
/* The writer's seals over a copy of the input. */
static void seal(uint8_t *p, size_t n)
{
  if (n < CS_TRACE_HEADER_STRUCT)
    return;
  cs_trace_header_t h;
  memcpy(&h, p, sizeof(h));
  size_t hb = h.version >= 3 ? CS_TRACE_HEADER_BYTES : CS_TRACE_HEADER_STRUCT;
  if (n >= hb)
    memset(p + CS_TRACE_HEADER_STRUCT, 0, hb - CS_TRACE_HEADER_STRUCT);
  h.checksum = 0;
  h.checksum = cs_trace_fnv32(&h, sizeof(h));
  memcpy(p, &h, sizeof(h));
  for (size_t off = hb; off + CS_TRACE_RECORD_BYTES <= n;
       off += CS_TRACE_RECORD_BYTES) {
    cs_trace_rec_t r;
    memcpy(&r, p + off, sizeof(r));
    r.checksum = cs_trace_rec_sum(&r);
    memcpy(p + off, &r, sizeof(r));
  }
}
#endif

static void put(const uint8_t *data, size_t size)
{
  if (fd < 0) {
    fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
    sink = fopen("/dev/null", "w");
    if (fd < 0 || !sink)
      abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  }
#ifdef FUZZ_SEAL
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy)
    abort();
  memcpy(copy, data, size);
  seal(copy, size);
  data = copy;
#endif
  if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
    abort();
#ifdef FUZZ_SEAL
  free(copy);
#endif
}

/* What `collsim trace` does with a loaded trace: every output, and the
 * rank and kind filter on the text one; then the loaded trace's check. */
static void show(const cs_trace_t *t)
{
  cs_trace_links_t links;
  if (cs_trace_links_init(&links, t) < 0)
    return;
  cs_trace_filter_t all = {.to = UINT64_MAX};
  cs_trace_filter_t some = {.has_rank = 1, .rank = t->hdr.nranks - 1,
                            .kinds = 1u << CS_TR_WAIT_BEGIN | 1u << CS_EV_WAIT,
                            .to = UINT64_MAX};
  cs_trace_export_t e = {t, &links, cs__trace_names(), &all, path};
  cs_trace_export_text(sink, &e);
  cs_trace_export_jsonl(sink, &e);
  cs_trace_export_chrome(sink, &e);
  cs__trace_write_stats(sink, &e, 0);
  cs__trace_write_stats(sink, &e, 1);
  e.filter = &some;
  cs_trace_export_text(sink, &e);
  cs_trace_links_fini(&links);
  cs_check_report_t rep;
  if (cs_check_run(t, &rep) == 0)
    cs_check_report_fini(&rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  put(data, size);
  cs_trace_t t;
  cs_trace_diag_t d;
  char why[512];
  if (cs_trace_load(path, &t, &d) < 0) {
    cs_trace_strerror(&d, why, sizeof(why));
    if (t.rec || t.n || strncmp(why, path, strlen(path)) != 0)
      abort();
    /* What a trace edited by hand gets: the records kept. */
    uint64_t edited;
    if (cs_trace_load_edited(path, &t, &d, &edited) == 0) {
      show(&t);
      cs_trace_free(&t);
    }
  } else {
    for (uint64_t i = 1; i < t.n; i++)
      if (t.rec[i - 1].seq >= t.rec[i].seq)
        abort(); /* load's contract: sorted by seq, no repeats */
    show(&t);
    cs_trace_free(&t);
  }
  cs__check_path(path, size & 1, sink); /* `collsim check`, text or JSON */
  return 0;
}
