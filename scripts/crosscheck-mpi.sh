#!/usr/bin/env bash
# crosscheck-mpi.sh - checks collsim's results against Open MPI's
# MPI_Allreduce on the same inputs: for every rank count, algorithm and op,
# max and min must be bit-identical, sum and prod within the reference's
# tolerance (rtol 1e-5, atol 1e-8).
#
#   scripts/crosscheck-mpi.sh [--ranks "2 3 5 8"] [--count 70001] [--seed 1]
#
# Installs Open MPI with apt-get if missing (as root or through sudo),
# builds collsim (scripts/setup.sh build) and the CMake target
# mpi_crosscheck (scripts/mpi_crosscheck.c, in the Open MPI tree
# build-mpi/). Per rank count: the MPI program writes random fp32 inputs
# in [1, 100) as IN.npy (N, count); `collsim run --input IN.npy --output
# OUT.npy` reduces them; the MPI program reduces the same rows with
# MPI_Allreduce and compares every element. Then, on 2 and 3 ranks x 1000
# elements drawn from NaN, ±0, ±inf, ±subnormal, ±1 and 2, max and min of
# `collsim run --algo ring --minmax pto` in the ring's last segment (where
# std::max folds as Open MPI's a > b ? a : b does in ascending rank order
# there) must be bit-identical with MPI_Allreduce on every rank. Exit 0
# when all agree.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="2 3 5 8"; count=70001; seed=1
die() { echo "crosscheck-mpi: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?}; shift 2 ;;
    --count) count=${2:?}; shift 2 ;;
    --seed) seed=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $count =~ ^[0-9]+$ ]] && [ "$count" -ge 1 ] || die "--count '$count' is not accepted: expected a whole number >= 1"
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
  sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "crosscheck-mpi: installing Open MPI" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    openmpi-bin libopenmpi-dev >/dev/null
fi
bash scripts/setup.sh build
cmake -S . -B build-mpi -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSIM_MPI=ON \
  -DMPI_C_COMPILER=mpicc.openmpi >/dev/null
cmake --build build-mpi --target mpi_crosscheck >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
for n in $ranks; do
  mpirun --oversubscribe -n "$n" build-mpi/mpi_crosscheck gen "$tmp/in.npy" "$count" "$seed"
  for algo in mesh ring host; do
    for op in max min sum prod; do
      build/collsim run --algo "$algo" --op "$op" --input "$tmp/in.npy" \
        --output "$tmp/out.npy" >/dev/null
      if ! line=$(mpirun --oversubscribe -n "$n" build-mpi/mpi_crosscheck check \
                    "$tmp/in.npy" "$tmp/out.npy" "$op" 2>&1); then
        fail=1
      fi
      echo "$algo $(echo "$line" | grep -v '^rank' | head -1)"
    done
  done
done
# NaN, ±0, inf, subnormals: Open MPI's max/min are `a > b ? a : b` folded
# in rank order on few ranks and small messages (more ranks or elements
# use a tree or ring whose order collsim does not model). That is
# std::max(x2, std::max(x1, x0)): collsim's pto ring in its last segment,
# fp32 elements from floor((N-1)*1000/N) on.
for n in 2 3; do
  [[ " $ranks " == *" $n "* ]] || continue
  mpirun --oversubscribe -n "$n" build-mpi/mpi_crosscheck special "$tmp/sp.npy" 1000 "$seed"
  for op in max min; do
    build/collsim run --algo ring --op "$op" --minmax pto --input "$tmp/sp.npy" \
      --output "$tmp/out.npy" >/dev/null
    if ! line=$(mpirun --oversubscribe -n "$n" build-mpi/mpi_crosscheck check0 \
                  "$tmp/sp.npy" "$tmp/out.npy" "$op" $(((n - 1) * 1000 / n)) 2>&1); then
      fail=1
    fi
    echo "ring --minmax pto, last segment: $(echo "$line" | grep -v '^rank' | head -1)"
  done
done
[ $fail -eq 0 ] && echo "crosscheck-mpi: every result agrees with MPI_Allreduce" \
  || { echo "crosscheck-mpi: MISMATCHES (above)"; exit 1; }
