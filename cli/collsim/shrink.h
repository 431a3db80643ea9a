/*
 * shrink.h - `collsim shrink` as a function, for explore, which shrinks
 * the failure it found (cli/collsim/shrink.c).
 */
#ifndef CS_SHRINK_H
#define CS_SHRINK_H

#include <stdint.h>
#include <stdio.h>

/* Shrinks the failing run recorded at `in` into the trace `out` (replaced
 * if it exists), trying at most `budget` runs; progress on stderr, the
 * final lines and (story != 0) the story on f. Returns the exit code: 0
 * written, 2 a bad or passing trace (one line on stderr), 3 interrupted
 * (SIGINT, SIGTERM or SIGHUP, caught or pending while blocked). Leaves no
 * temporary file and no child behind. */
int cs__shrink_file(const char *in, const char *out, uint64_t budget, int story,
                    FILE *f);

#endif
