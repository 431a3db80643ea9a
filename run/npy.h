/*
 * npy.h - reading and writing NumPy .npy files (format 1.0/2.0/3.0 read,
 * 1.0 written) of shape (N, C), little-endian, C order, for the inputs and
 * outputs of `collsim run`. dtypes: '<f4' (fp32), '<f2' (fp16) and '<u2'
 * (raw bf16 bits). Every malformed file is refused with a one-line reason;
 * never a crash.
 */
#ifndef CS_NPY_H
#define CS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "../collectives/dtype.h"

typedef struct cs_npy {
  cs_dtype_t dtype; /* from descr: <f4 fp32, <f2 fp16, <u2 bf16 (raw bits) */
  uint64_t   rows;  /* shape[0] */
  uint64_t   cols;  /* shape[1] */
  void      *data;  /* rows*cols elements, malloc'ed, caller frees */
} cs_npy_t;

/* Reads the .npy file at `path` (format 1.0, 2.0 or 3.0; descr '<f4',
 * '<f2' or '<u2'; fortran_order False; shape exactly (N, C), N, C >= 1; the
 * data exactly N*C*esize bytes to end of file).
 * On success returns 0 and fills `a`; a->data holds rows*cols elements
 * (rows*cols*cs_dtype_size(dtype) bytes), malloc'ed, and the caller frees it.
 * On failure returns -1, sets `a` to all zeros (data NULL) and writes a
 * one-line reason to `why` (truncated to whylen; `why` may be NULL) that
 * starts with the path and says what was wrong (magic, version, header,
 * dtype, order, shape, size) and what is accepted. Never allocates more
 * than the file holds. Blocks on file I/O only; a FIFO or other non-regular
 * file is refused without waiting. Keeps no state between calls. */
int cs_npy_read(const char *path, cs_npy_t *a, char *why, size_t whylen);

/* Writes rows*cols elements of dtype t from `data` (row-major, little-endian
 * raw bits; not modified) as a version 1.0 .npy, byte for byte as np.save
 * writes it: a new file with the permissions open(2) would give under the
 * umask, an existing one keeping its mode and owner.
 * rows and cols must be >= 1, as the reader requires.
 * Returns 0, or -1 with a one-line reason in `why` (may be NULL).
 * The file is written to PATH.tmpXXXXXX beside `path` and renamed over it,
 * so readers see the old file or the whole new one, and a failure leaves
 * `path` unchanged and no temp file behind. `path` must pass the output
 * rule (cs_output_check, sim/trace.h): a device, a FIFO, another user's
 * file or symbolic link is refused, never replaced; through our own link
 * the file it names is rewritten in place (cs_output_replace), which is
 * not atomic: a copy that fails part way leaves that file partial.
 * Not fsync'ed. */
int cs_npy_write(const char *path, cs_dtype_t t, uint64_t rows, uint64_t cols,
                 const void *data, char *why, size_t whylen);

#endif
