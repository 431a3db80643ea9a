#!/usr/bin/env bash
# test_pto_ref.sh - `collsim run --minmax pto` against tests/pto_ref.cpp,
# an independent C++ fold with std::max/std::min (pto-isa's CPU
# simulator's expression) in each algorithm's operand order.
#
#   tests/test_pto_ref.sh COLLSIM_BINARY SOURCE_DIR WORK_DIR
#
# Compiles pto_ref.cpp with g++ (or $CXX) into WORK_DIR, writes inputs of
# NaN (quiet, payload, negative), ±0, ±inf, subnormals, the largest finite
# and ordinary values with every ordered pair on every ordered pair of
# ranks (ragged counts), runs mesh, ring and host with 2, 3 and 5 ranks,
# fp32, fp16 and bf16, max and min, and compares every rank bit for bit
# (any NaN equal to any NaN). Exit 0 when all agree, 77 (skipped) when no
# C++ compiler is installed.
set -u
bin=${1:?usage: test_pto_ref.sh COLLSIM_BINARY SOURCE_DIR WORK_DIR}
src=${2:?}
work=${3:?}
cxx=${CXX:-g++}
command -v "$cxx" >/dev/null || { echo "test_pto_ref: no C++ compiler ($cxx): skipped"; exit 77; }
ref=$work/pto_ref
"$cxx" -std=c++17 -O1 -Wall -Wextra -Werror -o "$ref" "$src/tests/pto_ref.cpp" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 runs=0
for n in 2 3 5; do
  for t in fp32 fp16 bf16; do
    "$ref" gen "$t" "$n" "$tmp/in.npy" || exit 1
    for algo in mesh ring host; do
      for op in max min; do
        if ! timeout 120 "$bin" run --algo "$algo" --op "$op" --minmax pto \
             --input "$tmp/in.npy" --output "$tmp/out.npy" >"$tmp/log" 2>&1; then
          echo "collsim run --algo $algo --op $op --dtype $t failed:"; cat "$tmp/log"
          fail=1; continue
        fi
        "$ref" check "$algo" "$op" "$t" "$tmp/in.npy" "$tmp/out.npy" || fail=1
        runs=$((runs + 1))
      done
    done
  done
done
[ $fail -eq 0 ] && echo "test_pto_ref: $runs runs bit-identical with std::max/std::min" \
  || { echo "test_pto_ref: MISMATCHES (above)"; exit 1; }
