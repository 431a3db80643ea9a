#!/usr/bin/env bash
# check-structure.sh - the engine's shape, checked on the tree as it stands:
#
#  1. layers: a file includes or calls only files of its own layer or the
#     layers below it:
#       cli/collsim/main.c -> cli/teach -> cli/collsim -> run -> collectives
#       -> sim -> window, and cli/mpi -> cli/collsim (collsim-mpi shares the
#       option plumbing of cli/collsim/cli.c);
#     include/ (the public headers, declarations only) counts as the bottom;
#     libcollsim is built from run/ and below, so nothing there may reach
#     into cli/;
#  2. no circle between files: a file and its header (foo.c, foo.h) are one
#     unit; an arrow A -> B means A includes B's header or calls (links to)
#     a symbol B defines; every strongly connected group of two or more
#     units is a circle and fails the check;
#  3. no function longer than MAX_FN lines in sim/, run/ and cli/ (option and
#     help tables are data, not functions, and are not counted).
#
# Usage: tests/check-structure.sh SOURCE_DIR BUILD_DIR
# Calls are read from the object files the build made (nm), includes from
# the sources. Exit 0 when the shape holds; else one line per defect, exit 1.
set -euo pipefail
src=${1:?usage: check-structure.sh SOURCE_DIR BUILD_DIR}
bld=${2:?usage: check-structure.sh SOURCE_DIR BUILD_DIR}
MAX_FN=${MAX_FN:-80}
cd "$src"
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
# STRUCTURE_EDGES=FILE: also copy the arrows found there (for a look).

unit() { local f=${1%.c}; echo "${f%.h}"; }

# Include arrows: "#include "relative/path.h"" resolved against the file
# (one awk over every source: "dir/../x" folded by hand).
find window sim collectives run cli -name '*.[ch]' | sort |
  xargs awk '
    function norm(p,   n, i, k, parts, out) {
      n = split(p, parts, "/"); k = 0
      for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == ".." && k > 0 && out[k] != "..") { k--; continue }
        out[++k] = parts[i]
      }
      p = out[1]; for (i = 2; i <= k; i++) p = p "/" out[i]
      return p
    }
    function unit(p) { sub(/\.[ch]$/, "", p); return p }
    /^#include "/ {
      inc = $0; sub(/^#include "/, "", inc); sub(/".*/, "", inc)
      dir = FILENAME; sub(/\/[^\/]*$/, "", dir)
      print unit(FILENAME), unit(norm(dir "/" inc)), norm(dir "/" inc)
    }' | while read -r a b target; do
    if [ -f "$target" ]; then echo "$a $b"; fi
  done >> "$edges"

# Call arrows: an object's undefined symbols resolved to the object that
# defines them, among the project's own libraries. nm prints each
# object's name before its symbols, so one nm call covers them all.
objs=$(find "$bld/CMakeFiles" -path '*/cs_*.dir/*' -name '*.c.o' | sort |
  while read -r o; do
    # only objects of sources that still exist (a moved file leaves one)
    s=${o#*/CMakeFiles/cs_*.dir/}
    [ -f "${s%.o}" ] && echo "$o"
  done)
[ -n "$objs" ] || { echo "check-structure: no object files under $bld (build first)"; exit 1; }
# shellcheck disable=SC2086
nm -A $objs | awk '
  { split($1, f, ":"); o = f[1]; sub(/.*\/cs_[a-z]+\.dir\//, "", o); sub(/\.c\.o$/, "", o) }
  NF == 3 && $2 ~ /^[TDRB]$/ { def[$3] = o }
  NF == 3 && $2 == "U" { use[++n] = o " " $3 }
  END { for (i = 1; i <= n; i++) { split(use[i], u, " "); if (u[2] in def) print u[1], def[u[2]] } }' >> "$edges"

[ -n "${STRUCTURE_EDGES:-}" ] && sort -u "$edges" > "$STRUCTURE_EDGES"
fail=0
layer() {
  case $1 in
    include/*|window/*) echo 0;; sim/*) echo 1;; collectives/*) echo 2;;
    run/*) echo 3;; cli/collsim/main) echo 6;; cli/collsim/*) echo 4;;
    cli/teach/*|cli/mpi/*) echo 5;; *) echo 9;;
  esac
}
while read -r a b; do
  [ "$a" = "$b" ] && continue
  if [ "$(layer "$a")" -lt "$(layer "$b")" ]; then
    echo "layering: $a uses $b (arrows point down only: cli -> run -> collectives -> sim -> window)"
    fail=1
  fi
done < <(sort -u "$edges")

# Circles: strongly connected components (Tarjan), in awk.
circles=$(sort -u "$edges" | awk '
  $1 != $2 { adj[$1] = adj[$1] " " $2; nodes[$1]; nodes[$2] }
  function strong(v,   i, n, w, ws, c) {
    idx[v] = low[v] = ++counter; stack[++sp] = v; on[v] = 1
    n = split(adj[v], ws, " ")
    for (i = 1; i <= n; i++) { w = ws[i]
      if (!(w in idx)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
      else if (on[w] && idx[w] < low[v]) low[v] = idx[w] }
    if (low[v] == idx[v]) { c = ""; k = 0
      do { w = stack[sp--]; on[w] = 0; c = c " " w; k++ } while (w != v)
      if (k > 1) print "circle:" c }
  }
  END { for (v in nodes) if (!(v in idx)) strong(v) }')
if [ -n "$circles" ]; then echo "$circles"; fail=1; fi

# Function length: from a line "name(...)" at column 0 followed by "{" at
# column 0, to the next "}" at column 0.
long=$(find sim run cli -name '*.c' | sort | xargs awk -v max="$MAX_FN" '
  FNR == 1 { infn = 0 }
  /^[A-Za-z_].*\(/ && !/;[[:space:]]*$/ { cand = $0; candline = FNR; next }
  /^\{/ && cand != "" { infn = 1; start = FNR; name = cand; cand = ""; next }
  /^\}/ && infn { n = FNR - start - 1; infn = 0
    if (n > max) { sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
      printf "function too long: %s:%d %s (%d lines > %d)\n", FILENAME, start, name, n, max } }
  !/^[[:space:]]/ && !/^\{/ && !/^\}/ && !/\(/ { cand = "" }')
if [ -n "$long" ]; then echo "$long"; fail=1; fi

[ $fail = 0 ] && echo "check-structure: layers hold, no circle, no function over $MAX_FN lines"
exit $fail
