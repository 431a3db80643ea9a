/*
 * read.h - the streaming, validating trace reader.
 *
 * Owns: reading a .cstrace file (layout in format.h) front to back with
 * bounded memory: the header is checked whole before any record is
 * handed out, each record as it is read, through one fixed buffer; the
 * reader never allocates in proportion to the file. Does not own loading
 * a whole trace sorted by seq (cs_trace_load in sim/trace.h, built on
 * this), nor what the records mean (tools/trace.c, collectives/).
 * Callers: cs_trace_load, and any tool that wants to walk a large trace
 * without holding it.
 */
#ifndef CS_TRACE_READ_H
#define CS_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* Bytes of the reader's record buffer: a multiple of the record size is
 * read into it at a time. */
#define CS_TRACE_READER_BUF 65536u

/* cs_trace_reader_open flags. */
enum {
  /* Keep records whose checksum does not match (edited by hand) if their
   * fields are in range, and count them (cs_trace_reader_edited). */
  CS_TRACE_READ_EDITED = 1u,
};

typedef struct cs_trace_reader cs_trace_reader_t;

/* Opens `path` and checks everything that can be checked before the
 * records: the file is regular and not empty, the magic, the version (a
 * newer one is refused before the checksum), the header's checksum, sizes,
 * ranks, slots and clock rate, the header block's zero padding, and a
 * body that is a whole number of records. Returns 0 with *rd set, or -1
 * with one line in `why` ("PATH: reason", the reasons of FORMAT.md's
 * "What a reader checks") and *rd NULL. Reads the first header block only;
 * holds one allocation of cs_trace_reader_bytes() until closed. */
int cs_trace_reader_open(const char *path, unsigned flags,
                         cs_trace_reader_t **rd, char *why, size_t whylen);

/* The next record in file order (not sorted), checked: its checksum
 * (unless CS_TRACE_READ_EDITED), kind, rank, peer and slot. Its t_ns is
 * converted to ns since the header's start_ns (saturating at UINT64_MAX);
 * every other field is as stored. Returns 1 with *rec filled, 0 after the
 * last record, or -1 (a corrupt record, a read error) with the reason in
 * cs_trace_reader_why(); after -1 every call returns -1. Blocks on the
 * file's read only. */
int cs_trace_reader_next(cs_trace_reader_t *rd, cs_trace_rec_t *rec);

/* "PATH: reason" of the last -1 from cs_trace_reader_next, else "". Valid
 * until the reader is closed. */
const char *cs_trace_reader_why(const cs_trace_reader_t *rd);
/* The validated header. */
const cs_trace_header_t *cs_trace_reader_header(const cs_trace_reader_t *rd);
/* Records in the file (from its size at open), read or not. */
uint64_t cs_trace_reader_records(const cs_trace_reader_t *rd);
/* Records handed out so far whose checksum did not match (only with
 * CS_TRACE_READ_EDITED). */
uint64_t cs_trace_reader_edited(const cs_trace_reader_t *rd);
/* Bytes the reader holds (its one allocation): the same from open to
 * close, whatever the file's size. */
size_t cs_trace_reader_bytes(const cs_trace_reader_t *rd);

/* Closes the file and frees the reader. NULL is a no-op. */
void cs_trace_reader_close(cs_trace_reader_t *rd);

#endif
