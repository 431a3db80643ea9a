#!/usr/bin/env bash
# check-structure-plant.sh - the structure check can fail: on a copy of the
# tree, plant one upward arrow per layer boundary (a library file that
# includes a command header; a collective that includes the run layer; a
# command that includes teach) and expect check-structure.sh to name each;
# then, on a copy of the build's objects, one upward call per boundary
# from a file that includes nothing (only the object files show it).
#
# Usage: tests/check-structure-plant.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=${1:?usage: check-structure-plant.sh SOURCE_DIR BUILD_DIR}
bld=$(realpath "${2:?usage: check-structure-plant.sh SOURCE_DIR BUILD_DIR}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
mkdir "$tmp/t"
cp -r "$src"/{window,sim,collectives,run,cli,include,tests} "$tmp/t/"
named() { # WHAT BUILD_DIR EXPECTED-LINE: the check fails, naming that arrow
  if out=$(bash "$tmp/t/tests/check-structure.sh" "$tmp/t" "$2" 2>&1); then
    echo "FAIL: $1 passed the structure check"; fail=1
  elif ! grep -qF "$3 (" <<<"$out"; then
    echo "FAIL: $1: expected '$3' in:"; echo "$out"; fail=1
  fi
}
plant() { # FILE INCLUDE EXPECTED-LINE
  cp "$src/$1" "$tmp/t/$1"
  sed -i "0,/^#include \"/s||#include \"$2\"\n#include \"|" "$tmp/t/$1"
  named "$1 including $2" "$bld" "$3"
  cp "$src/$1" "$tmp/t/$1"
}
plant run/npy.c ../cli/collsim/cli.h "layering: run/npy uses cli/collsim/cli"
plant collectives/ring.c ../run/verify.h "layering: collectives/ring uses run/verify"
plant sim/dev.c ../collectives/reduce.h "layering: sim/dev uses collectives/reduce"
plant cli/collsim/bench.c ../teach/teach_ui.h "layering: cli/collsim/bench uses cli/teach/teach_ui"
plant cli/collsim/run.c ../mpi/mpi_case.h "layering: cli/collsim/run uses cli/mpi/mpi_case"
# Calls: the build's objects linked into a copy, plus one compiled from a
# planted file that declares an upper layer's function itself and calls it.
mkdir -p "$tmp/b/CMakeFiles"
for d in "$bld"/CMakeFiles/cs_*.dir; do cp -rs "$d" "$tmp/b/CMakeFiles/"; done
plant_call() { # LIBRARY FOLDER FUNCTION EXPECTED-LINE: FOLDER/plant.c
  set -- "$1" "$2/plant.c" "$3" "$4"
  printf 'void %s(void);\nvoid cs_plant_%s(void) { %s(); }\n' "$3" "$1" "$3" \
    >"$tmp/t/$2"
  mkdir -p "$(dirname "$tmp/b/CMakeFiles/cs_$1.dir/$2")"
  cc -c -o "$tmp/b/CMakeFiles/cs_$1.dir/$2.o" "$tmp/t/$2"
  named "$2 calling $3" "$tmp/b" "$4"
  rm -f "$tmp/t/$2" "$tmp/b/CMakeFiles/cs_$1.dir/$2.o"
}
plant_call window window cs__dev_begin_slow "layering: window/plant uses sim/dev"
plant_call sim sim cs_allreduce "layering: sim/plant uses collectives/allreduce"
plant_call collectives collectives cs_npy_read "layering: collectives/plant uses run/npy"
plant_call run run cs_cli_error "layering: run/plant uses cli/collsim/cli"
plant_call cli cli/collsim cs_cmd_teach "layering: cli/collsim/plant uses cli/teach/teach"
[ $fail = 0 ] && echo "check-structure-plant: every planted upward arrow was named"
exit $fail
