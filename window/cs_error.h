/*
 * cs_error.h - the one error vocabulary of collsim.
 *
 * Every library function returns int: 0 (or a count) on success, a negative
 * value on failure. Negative values are either -errno or one of the CS_E*
 * codes below, which sit far below any errno. cs_strerror() names both.
 * Owned by window/ because it is the lowest module; every layer includes it.
 */
#ifndef CS_ERROR_H
#define CS_ERROR_H

#include <stddef.h>
#include <stdint.h>

/* X-macro: name, value, message. Values stay stable: they reach exit paths. */
#define CS_ERRNO_MAP(X)                                                        \
  X(CS_EOUTOFSLOT, -10001, "access outside its slot (out-of-slot fault)")     \
  X(CS_ETIMEDOUT,  -10002, "wait timed out")                                  \
  X(CS_EABORTED,   -10003, "run aborted by another rank")                     \
  X(CS_EBADSLOT,   -10004, "no such slot")                                    \
  X(CS_ETOOBIG,    -10005, "too large")                                       \
  X(CS_EBADPEER,   -10006, "peer rank out of range")                          \
  X(CS_ETILE,      -10007, "tile too small for the access")                   \
  X(CS_EFORMAT,    -10008, "malformed file")                                  \
  X(CS_EVERSION,   -10009, "unsupported format version")                      \
  X(CS_EMISMATCH,  -10010, "does not match the recorded run")                 \
  X(CS_EBADNAME,   -10011, "not one of the known names")                      \
  X(CS_EFAULTRANK, -10012, "fault: rank missing or out of range")             \
  X(CS_EFAULTKIND, -10013, "fault: unknown kind")                             \
  X(CS_EFAULTEVENT, -10014, "fault: event is not a non-negative index")       \
  X(CS_EBADSCHED,  -10015, "not an accepted schedule")                        \
  X(CS_EARENUM,    -10016, "unknown algorithm, dtype or op")                  \
  X(CS_EARRANKS,   -10017, "rank count out of range for the algorithm")       \
  X(CS_EARCOUNT,   -10018, "element count out of range")                      \
  X(CS_EARTILE,    -10019, "tile size out of range or not a multiple of 32")  \
  X(CS_EARITERS,   -10020, "no calls")                                        \
  X(CS_ENOTREG,    -10021, "is not a regular file")                           \
  X(CS_EEMPTY,     -10022, "empty file")                                      \
  X(CS_EMAGIC,     -10023, "wrong magic")                                     \
  X(CS_ETRUNCATED, -10024, "truncated file")                                  \
  X(CS_EBADHEADER, -10025, "corrupt header")                                  \
  X(CS_EBADRECORD, -10026, "corrupt record")                                  \
  X(CS_EDUPSEQ,    -10027, "a sequence number appears twice")                 \
  X(CS_ESYMLINK,   -10028,                                                    \
    "is another user's symbolic link or leads through one, not followed")    \
  X(CS_EHARDLINK,  -10029, "has other hard links, not truncated")          \
  X(CS_EARSHAPE,   -10030, "shape does not match the element count")          \
  X(CS_EARVALID,   -10031, "valid rectangle out of range for the shape")      \
  X(CS_EARVALIDALGO, -10032, "a partial valid rectangle is for mesh only")  \
  X(CS_EARVALIDTILE, -10033, "the valid rectangle does not fit one tile") \
  X(CS_EARVALIDSTRIDE, -10034, "the shape's columns exceed the 2-D stride") \
  X(CS_ENOTOURS,   -10035, "is another user's file, not replaced")           \
  X(CS_ESAMEFILE,  -10036, "is an input of the same command, not replaced") \
  X(CS_EARPRECOND, -10037, "the configuration misses the algorithm's precondition") \
  X(CS_EARDTYPE,   -10038, "the algorithm does not take this dtype")         \
  X(CS_EAROP,      -10039, "the algorithm does not take this op")

enum {
#define CS_X_ENUM(name, val, msg) name = (val),
  CS_ERRNO_MAP(CS_X_ENUM)
#undef CS_X_ENUM
};

/* Returns a static string for an error code (negative) or "success" for 0. */
const char *cs_strerror(int err);

/* b bytes for a message, into buf (returned): "512 B", "4 KiB", "1.5 MiB"
 * (the largest binary unit not above b; whole where it divides b, else
 * one decimal). The one size formatter of collsim's messages. */
const char *cs_human_bytes(uint64_t b, char *buf, size_t n);

#endif
