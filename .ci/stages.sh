#!/usr/bin/env bash
# stages.sh - the CI stages after the README's test command (.ci/run):
#
#   .ci/stages.sh clang      build everything with clang, warnings as errors;
#                            the suites of compiled code but the fault
#                            matrix and the terminal lesson's scripts,
#                            with COLLSIM_QUICK=1
#   .ci/stages.sh sanitize   AddressSanitizer + UndefinedBehaviorSanitizer build
#                            (gcc), every suite but the fault matrix, with
#                            COLLSIM_QUICK=1, ctest -j (CMakeLists.txt's
#                            `cpu` lock keeps the busy suites one at a time)
#   .ci/stages.sh fuzz       the libFuzzer harnesses of tests/fuzz (clang,
#                            with ASan + UBSan), each a fixed number of
#                            runs (FUZZ_RUNS) from seed FUZZ_SEED and its
#                            seed corpus, at most FUZZ_SECONDS (default
#                            120); prints the executions of each run
#
# Installs with apt-get only what a stage needs and is missing. Builds into
# ./build-clang, ./build-asan and ./build-fuzz, beside the main ./build.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/need.sh

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
    # Every suite of compiled code, quick sweep. Left to the main gcc
    # stage: the fault matrix (minutes of forked crashes), the terminal
    # lesson (a minute of tmux over the same code), and the suites that
    # test the tree rather than the compiled code (layering, docs, the
    # README's commands, the install).
    COLLSIM_QUICK=1 ctest --output-on-failure \
      -E '^(faults|teach_tui|teach_ports|structure|structure_plant|docs|readme|install)$'
    ;;
  sanitize)
    need stages gcc libasan8 libubsan1
    echo "stages: AddressSanitizer + UndefinedBehaviorSanitizer build" >&2
    quiet cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS="-O1 -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow -fno-omit-frame-pointer"
    quiet cmake --build build-asan -j"$jobs"
    cd build-asan
    # handle_segv=0: a rank's deliberate SIGSEGV must kill it, as the tests expect
    export ASAN_OPTIONS=detect_stack_use_after_return=1:handle_segv=0
    export LSAN_OPTIONS=suppressions=$PWD/../tests/lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1
    # The fault matrix's time bounds are for an optimised build; it runs
    # in the main stage.
    COLLSIM_QUICK=1 ctest --output-on-failure -j"$jobs" -E faults
    ;;
  fuzz)
    need stages clang
    # libFuzzer and clang's sanitizer runtimes are a package of their own
    # (a recommendation of clang, which need() does not install).
    need stages "libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev"
    echo "stages: libFuzzer harnesses" >&2
    quiet env CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCOLLSIM_FUZZ=ON -DCOLLSIM_TESTS=OFF \
      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
    quiet cmake --build build-fuzz -j"$jobs"
    if [ ! -x build-fuzz/fuzz_npy ]; then
      echo "stages: this clang cannot link -fsanitize=fuzzer; fuzzers skipped" >&2
      [ -z "${CI:-}" ] || exit 1
      exit 0
    fi
    # NAME RUNS MAX_LEN SEED_DIR...: a fresh work corpus, a fixed number of
    # runs from a fixed seed (so a passing stage passes again on the same
    # code: libFuzzer is deterministic given both), and a time bound.
    fuzz_run() {
      local name=$1 runs=$2 max_len=$3 top=$PWD work=$PWD/build-fuzz/work/$1
      local log=$PWD/build-fuzz/$1.log
      shift 3
      rm -rf "$work" && mkdir -p "$work"
      if ! (cd "$work" && "$top/build-fuzz/$name" -max_total_time="${FUZZ_SECONDS:-120}" \
              -seed="${FUZZ_SEED:-1}" -runs="${FUZZ_RUNS:-$runs}" \
              -max_len="$max_len" -timeout=20 -print_final_stats=1 \
              -artifact_prefix="$top/build-fuzz/$name-" \
              . "${@/#/$top/}") >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "stages: $name found a defect (input: build-fuzz/$name-*)" >&2
        exit 1
      fi
      echo "fuzz: $name: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$log"), $(grep -o 'cov: [0-9]*' "$log" | tail -n 1) edges" >&2
    }
    fuzz_run fuzz_npy 400000 4096 tests/fuzz/corpus/npy
    fuzz_run fuzz_parse 2000000 512 tests/fuzz/corpus/parse
    fuzz_run fuzz_trace 20000 65536 tests/fuzz/corpus/trace traces
    fuzz_run fuzz_trace_sealed 20000 65536 tests/fuzz/corpus/trace traces
    ;;
  *) echo "usage: .ci/stages.sh clang|sanitize|fuzz" >&2; exit 2 ;;
esac
