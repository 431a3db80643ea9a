/*
 * read.h - the streaming, validating trace reader.
 *
 * Owns: reading a .cstrace file (layout in format.h) front to back with
 * bounded memory: the header is checked whole before any record is
 * handed out, each record as it is read, through one fixed buffer; the
 * reader never allocates in proportion to the file. Does not own loading
 * a whole trace sorted by seq (cs_trace_load in sim/trace.h, built on
 * this), nor what the records mean (cli/collsim/trace_cmd.c, collectives/).
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

/* What is wrong with a trace file (the reasons of FORMAT.md's "What a
 * reader checks"); a and b are the values the reason names. */
typedef enum cs_trace_defect {
  CS_TRD_OK = 0,
  CS_TRD_OPEN,          /* a: the errno of open() */
  CS_TRD_NOT_REGULAR,
  CS_TRD_EMPTY,
  CS_TRD_MAGIC,
  CS_TRD_SHORT_HEADER,  /* a: file bytes, b: header bytes */
  CS_TRD_SHORT_BLOCK,   /* a: file bytes, b: header block bytes */
  CS_TRD_SHORT_RECORD,  /* a: bytes of the last record, b: record bytes */
  CS_TRD_READ,
  CS_TRD_NEWER,         /* a: the file's version, b: the newest read */
  CS_TRD_VERSION0,
  CS_TRD_HEADER_SUM,
  CS_TRD_SIZES,         /* a: header_bytes, b: record_bytes */
  CS_TRD_TICK,          /* tick_ns */
  CS_TRD_RANKS,         /* a: nranks, b: nslots */
  CS_TRD_PADDING,       /* a..b: the first nonzero 64-byte piece */
  CS_TRD_REC_SUM,       /* a: record index (file order), for all REC_ */
  CS_TRD_REC_KIND,
  CS_TRD_REC_RANK,
  CS_TRD_REC_PEER,
  CS_TRD_REC_2D,        /* a 2-D record the core cannot write */
  CS_TRD_NOMEM_READER,
  CS_TRD_NOMEM_RECORDS, /* a: records */
  CS_TRD_DUP_SEQ,       /* a: the sequence number */
  CS_TRD_CELL_BYTES,    /* a: the slot, b: its cell_bytes */
} cs_trace_defect_t;

/* A refusal, as the reader and the loader report it: the code they
 * returned and the defect with its values. Plain data; cs_trace_strerror
 * words it. */
typedef struct cs_trace_diag {
  int               code;   /* 0, a CS_E* code or -errno */
  cs_trace_defect_t defect;
  const char       *path;   /* the file, as the caller named it */
  uint64_t          a, b;   /* see cs_trace_defect_t */
  double            tick_ns;
} cs_trace_diag_t;

/* "PATH: reason" for `d`, one line, into buf (empty for CS_TRD_OK).
 * Pure: the one place the reader's reasons are worded. */
void cs_trace_strerror(const cs_trace_diag_t *d, char *buf, size_t n);

/* Opens `path` and checks everything that can be checked before the
 * records: the file is regular and not empty, the magic, the version (a
 * newer one is refused before the checksum), the header's checksum, sizes,
 * ranks, slots and clock rate, the header block's zero padding, and a
 * body that is a whole number of records. Returns 0 with *rd set, or a
 * negative code (-errno from open, -EIO, -ENOMEM, CS_ENOTREG, CS_EEMPTY,
 * CS_EMAGIC, CS_ETRUNCATED, CS_EVERSION, CS_EBADHEADER) with *rd NULL and,
 * if `d` is not NULL, the defect in *d (d->path = path). Reads the first
 * header block only; holds one allocation of cs_trace_reader_bytes()
 * until closed. */
int cs_trace_reader_open(const char *path, unsigned flags,
                         cs_trace_reader_t **rd, cs_trace_diag_t *d);

/* The next record in file order (not sorted), checked: its checksum
 * (unless CS_TRACE_READ_EDITED), kind, rank, peer and slot. Its t_ns is
 * converted to ns since the header's start_ns (saturating at UINT64_MAX);
 * every other field is as stored. Returns 1 with *rec filled, 0 after the
 * last record, or CS_EBADRECORD / -EIO with the defect in
 * cs_trace_reader_diag(); after a refusal every call returns the same
 * code. Blocks on the file's read only. */
int cs_trace_reader_next(cs_trace_reader_t *rd, cs_trace_rec_t *rec);

/* The refusal of the last failed cs_trace_reader_next (code 0 and
 * CS_TRD_OK if none). Valid until the reader is closed. */
const cs_trace_diag_t *cs_trace_reader_diag(const cs_trace_reader_t *rd);
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
