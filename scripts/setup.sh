#!/usr/bin/env bash
# setup.sh - one step from a fresh Debian 12 machine to a result.
#
#   scripts/setup.sh demo [ARGS...]   install what is missing, build, run the main job
#   scripts/setup.sh test             install what is missing, build, run every test suite
#   scripts/setup.sh build            install what is missing and build
#   scripts/setup.sh mpi [ARGS...]    also install Open MPI and MPICH, build
#                                   collsim-mpi against each (build-mpi/,
#                                   build-mpich/) and run the MPI test
#                                   (ctest -R mpi); the other modes never
#                                   need MPI
#
# Installs with apt-get only the Debian packages that are not yet installed
# (as root, or through sudo), configures with CMake into ./build and builds.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
[ $# -gt 0 ] && shift

pkgs=(gcc libc6-dev make cmake pkg-config liburing-dev libcriterion-dev libncurses-dev)
[ "$mode" = mpi ] && pkgs+=(openmpi-bin libopenmpi-dev mpich libmpich-dev)
[ "$mode" = test ] && pkgs+=(tmux g++ strace) # the terminal lesson's tests, pto_ref, the launcher's system calls counted
. scripts/need.sh
need setup "${pkgs[@]}"

if [ "$mode" = mpi ]; then
  # FindMPI takes one implementation per build tree: Open MPI in build-mpi
  # (its ctest entry runs the test), MPICH in build-mpich (handed to the
  # same test as a second binary).
  # COLLSIM_TESTS=ON: a tree configured before without tests would
  # otherwise have no mpi test, and ctest passes when it finds none.
  quiet cmake -S . -B build-mpi -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOLLSIM_MPI=ON -DCOLLSIM_TESTS=ON -DMPI_C_COMPILER=mpicc.openmpi
  quiet cmake --build build-mpi -j"$(nproc)"
  quiet cmake -S . -B build-mpich -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOLLSIM_MPI=ON -DCOLLSIM_TESTS=OFF -DMPI_C_COMPILER=mpicc.mpich
  quiet cmake --build build-mpich -j"$(nproc)" --target collsim-mpi
  cd build-mpi
  COLLSIM_MPI_MORE=$PWD/../build-mpich/collsim-mpi exec ctest \
    --output-on-failure --no-tests=error -R '^mpi$' "$@"
fi
# test: tests on, even in a tree configured before without them
tests=()
[ "$mode" = test ] && tests=(-DCOLLSIM_TESTS=ON)
quiet cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo "${tests[@]}"
quiet cmake --build build -j"$(nproc)"

case "$mode" in
  demo)  exec ./build/collsim run "$@" ;;
  test)  cd build && exec ctest --output-on-failure --no-tests=error -j"$(nproc)" "$@" ;;
  build) ;;
  *) echo "usage: scripts/setup.sh demo|test|build|mpi" >&2; exit 2 ;;
esac
