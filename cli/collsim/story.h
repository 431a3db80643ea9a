/*
 * story.h - the story of a failing trace for a person (cli/collsim/story.c):
 * called by shrink once its trace is written.
 */
#ifndef CS_STORY_H
#define CS_STORY_H

#include <stdio.h>

/* Prints the story of the failing run at `path`, whose signature is sig
 * (signature.h; may be NULL), to f: its few events as a numbered
 * narrative, with the racing pair and missing edge the checker finds.
 * Returns 0, or -1 when the trace cannot be read (nothing printed). */
int cs__story_print(const char *path, const char *sig, FILE *f);

#endif
