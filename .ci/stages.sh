#!/usr/bin/env bash
# stages.sh - the CI stages after the README's test command (.ci/run):
#
#   .ci/stages.sh clang      build everything with clang, warnings as errors;
#                            every suite but the fault matrix, with
#                            COLLSIM_QUICK=1
#   .ci/stages.sh sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build
#                            (gcc), every suite but the fault matrix, with
#                            COLLSIM_QUICK=1
#
# Installs with apt-get only what a stage needs and is missing. Builds into
# ./build-clang and ./build-asan, beside the main ./build.
set -euo pipefail
cd "$(dirname "$0")/.."

. tools/need.sh

jobs=$(nproc)
case "${1:-}" in
  clang)
    need stages clang
    echo "stages: clang build" >&2
    # -Wall -Wextra come from CMakeLists.txt; any warning fails the stage.
    quiet env CC=clang cmake -S . -B build-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS="-Werror"
    quiet cmake --build build-clang -j"$jobs"
    cd build-clang
    # Every suite, quick sweep; the fault matrix (minutes of forked
    # crashes, compiler-independent) runs in the main gcc stage.
    COLLSIM_QUICK=1 ctest --output-on-failure -E faults
    ;;
  sanitize)
    need stages gcc libasan8 libubsan1
    echo "stages: AddressSanitizer + UndefinedBehaviorSanitizer build" >&2
    quiet cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS="-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    quiet cmake --build build-asan -j"$jobs"
    cd build-asan
    # handle_segv=0: a rank's deliberate SIGSEGV must kill it, as the tests expect
    export ASAN_OPTIONS=detect_stack_use_after_return=1:handle_segv=0
    export LSAN_OPTIONS=suppressions=$PWD/../tests/lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1
    # The fault matrix's time bounds are for an optimised build; it runs
    # in the main stage.
    COLLSIM_QUICK=1 ctest --output-on-failure -E faults
    ;;
  *) echo "usage: .ci/stages.sh clang|sanitize" >&2; exit 2 ;;
esac
