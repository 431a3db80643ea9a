/*
 * exit.h - the exit codes of every collsim command, one table: the
 * commands return them, and the run signature (signature.c) reads them
 * back from a child run's wait status. Pure, header-only.
 */
#ifndef CS_EXIT_H
#define CS_EXIT_H

enum {
  CS_EXIT_OK = 0,      /* success, result verified */
  CS_EXIT_WRONG = 1,   /* wrong result */
  CS_EXIT_USAGE = 2,   /* bad usage or input */
  CS_EXIT_ABORTED = 3, /* run aborted: a rank crashed, hung or faulted */
  CS_EXIT_INCOMPLETE = 4, /* verify: the budget ran out before the end */
};

#endif
