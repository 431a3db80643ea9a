/*
 * temp.h - collsim's temporary files: names nobody can guess or squat,
 * made with O_EXCL, that say which process made them, so that
 * `collsim clean` can sweep what a killed command left. Used by explore,
 * shrink, teach, run --check, bench --trace-cost and clean.
 */
#ifndef CS_CLI_TEMP_H
#define CS_CLI_TEMP_H

#include <stddef.h>

/* The directory for temporaries outside the user's: $TMPDIR, or /tmp when
 * it is unset or empty. */
const char *cs_cli_tmpdir(void);

/* Creates DIR/PREFIX<pid>-XXXXXX<suffix> (PREFIX one of the names clean
 * knows: ".explore-", ".shrink-", "collsim-teach-", "collsim-run-check-",
 * "collsim-bench-trace-"), with six random characters, O_EXCL (never
 * through a planted link) and mode 0600, or `mode` less the umask when
 * mode is not 0 (a trace that may be kept under another name: as open(2)
 * would have made it); path gets its name. Returns the open descriptor
 * (close-on-exec) or -errno (-ENAMETOOLONG when path's cap is too small).
 * dir_too: make a directory (0700) instead and return 0. */
int cs_cli_temp(char *path, size_t cap, const char *dir, const char *prefix,
                const char *suffix, int dir_too, unsigned mode);

/* Removes, in dir, the temporaries of the form above whose process is
 * gone and that belong to this user (a run --check directory with the
 * trace in it). said(arg, path, pid, err) is told each one, err 0 when
 * removed. Returns the number removed, or -errno when dir cannot be read;
 * *kept counts those that could not be removed. */
typedef void (*cs_cli_swept_fn)(void *arg, const char *path, int pid, int err);
int cs_cli_sweep_temps(const char *dir, cs_cli_swept_fn said, void *arg,
                       int *kept);

/* The environment for a collsim child that explore or shrink starts
 * (posix_spawn): this one with COLLSIM_PARENT=<our pid>, so the child
 * dies with us (cs_cli_die_with_parent) and no run outlives a killed
 * explore or shrink. Built once; NULL when out of memory. */
char **cs_cli_child_env(void);
/* Called first in main: under COLLSIM_PARENT=PID, asks for SIGKILL when
 * the parent dies (PR_SET_PDEATHSIG), exits at once when PID is already
 * gone, and drops the variable so that nothing further inherits it. */
void cs_cli_die_with_parent(void);

#endif
