/*
 * signature.h - a failed `collsim run`'s signature: its outcome kind and
 * first bad rank and position, read from what the run printed and its
 * exit status, so that two runs fail "the same way" when their
 * signatures are equal. Owns only that reading; does not run anything.
 * Called by explore (distinct failures) and shrink (a smaller run must
 * keep the signature).
 */
#ifndef CS_SIGNATURE_H
#define CS_SIGNATURE_H

#include <stddef.h>

/* Writes the signature of a run that printed `out` (its stdout and
 * stderr) and ended with wait status `status` (not a success) into sig
 * (cap bytes): "wrong result, rank 0 index 0", "signals not at their
 * final values", "deadlock", ... */
void cs__run_signature(const char *out, int status, char *sig, size_t cap);

/* The line of `out` that starts with `key`, into line (cap bytes, cut
 * there); 1, or 0 if there is none. */
int cs__line_of(const char *out, const char *key, char *line, size_t cap);

#endif
