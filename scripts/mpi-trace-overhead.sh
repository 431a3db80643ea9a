#!/usr/bin/env bash
# mpi-trace-overhead.sh - what `collsim-mpi run --trace` (the Lamport
# clocks, docs/mpi.md "Traces over MPI") costs a run, side by side: for
# each size, runs under mpirun without and with --trace interleaved (so
# both see the same machine load), then the medians of their "time per
# call", the ratio and the median of the pairs' ratios. Run from the
# repository root after building collsim-mpi (scripts/setup.sh mpi).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/mpi-trace-overhead.sh [--pairs P] [--ranks N] [--algo A]
                                   [--sizes "C ..."] [--bin PATH]
                                   [--mpirun "CMD ..."]

For each element count C (fp32, 4*C bytes per rank), P interleaved pairs
of `MPIRUN -np N collsim-mpi run --count C --algo A` without and with
--trace; prints the median time per call of each (each run's own figure
is the median over its calls of the slowest rank), their ratio, and the
median over the pairs of each pair's traced/untraced.

  --pairs P      pairs per size (default 7)
  --ranks N      ranks (default 4)
  --algo A       mesh | ring | host (default ring)
  --sizes "C.."  element counts per rank (default "262144 1048576":
                 1 MiB and 4 MiB per rank)
  --bin PATH     collsim-mpi binary (default build-mpi/collsim-mpi)
  --mpirun CMD   launcher (default "mpirun.openmpi --oversubscribe")
USAGE
}

pairs=7 ranks=4 algo=ring sizes="262144 1048576" bin=build-mpi/collsim-mpi
mpirun="mpirun.openmpi --oversubscribe"
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --mpirun) mpirun=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "mpi-trace-overhead.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$pairs" in ''|*[!0-9]*|0) echo "mpi-trace-overhead.sh: --pairs '$pairs': expected a positive integer" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "mpi-trace-overhead.sh: $bin not found: build first (scripts/setup.sh mpi)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a launch <<<"$mpirun"

tmp=$(mktemp -d /tmp/collsim-mpi-overhead-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

per_call() { awk '/^time per call:/ {print $4}'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# $mpirun -np $ranks $bin; $(nproc) CPUs; $algo, fp32; $pairs interleaved pairs per size"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%12s %10s %14s %14s %8s %12s\n' count "bytes/rank" "untraced us" "traced us" ratio "pair ratio"
for c in $sizes; do
  iters=$(( 50 * 262144 / c )); [ "$iters" -lt 5 ] && iters=5
  : > "$tmp/u"; : > "$tmp/t"
  for k in $(seq "$pairs"); do
    # Untraced first in odd pairs, traced first in even ones.
    for which in $([ $((k % 2)) = 1 ] && echo "u t" || echo "t u"); do
      if [ "$which" = u ]; then
        "${launch[@]}" -np "$ranks" "$bin" run --algo "$algo" --count "$c" \
          --iters "$iters" | per_call >> "$tmp/u"
      else
        "${launch[@]}" -np "$ranks" "$bin" run --algo "$algo" --count "$c" \
          --iters "$iters" --trace "$tmp/t.cstrace" | per_call >> "$tmp/t"
        rm -f "$tmp/t.cstrace"
      fi
    done
  done
  u=$(median < "$tmp/u") t=$(median < "$tmp/t")
  p=$(paste "$tmp/u" "$tmp/t" | awk '{print $2 / $1}' | median)
  printf '%12s %10s %14.1f %14.1f %7.3fx %11.3fx\n' "$c" "$((4 * c))" "$u" "$t" \
    "$(awk -v a="$u" -v b="$t" 'BEGIN {print b / a}')" "$p"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
