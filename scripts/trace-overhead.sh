#!/usr/bin/env bash
# trace-overhead.sh - what `--trace` costs a run, side by side: for each
# size, runs of `collsim run` without and with --trace interleaved (so
# both see the same machine load), then the medians of their "time per
# call" and the ratio. Run from the repository root after building
# (scripts/setup.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: scripts/trace-overhead.sh [--pairs P] [--ranks N] [--algo A] [--sizes "C ..."]

For each element count C (fp32, so 4*C bytes per rank), P interleaved
pairs of `collsim run --count C --ranks N --algo A` without and with
`--trace`; prints the median time per call of each, their ratio, and the
median over the pairs of each pair's traced/untraced (robust when the
machine's speed drifts between pairs). Each run's time per call is
itself the median over its calls.

  --pairs P      pairs per size (default 21)
  --ranks N      ranks (default 2)
  --algo A       mesh | ring | host (default ring)
  --sizes "C.."  element counts per rank (default "262144 1048576":
                 1 MiB and 4 MiB per rank)
  --bin PATH     collsim binary (default build/collsim)
EOF
}

pairs=21 ranks=2 algo=ring sizes="262144 1048576" bin=build/collsim
while [ $# -gt 0 ]; do
  case "$1" in
    --pairs) pairs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "trace-overhead.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$pairs" in ''|*[!0-9]*|0) echo "trace-overhead.sh: --pairs '$pairs': expected a positive integer" >&2; exit 2 ;; esac
[ -x "$bin" ] || { echo "trace-overhead.sh: $bin not found: build first (scripts/setup.sh build)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/collsim-overhead-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

per_call() { awk '/^time per call:/ {print $4}'; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "# $("$bin" --version | head -n 1); $(nproc) CPUs; $ranks ranks, $algo, fp32; $pairs interleaved pairs per size"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%12s %10s %14s %14s %8s %12s\n' count "bytes/rank" "untraced us" "traced us" ratio "pair ratio"
for c in $sizes; do
  iters=$(( 50 * 262144 / c )); [ "$iters" -lt 5 ] && iters=5
  : > "$tmp/u"; : > "$tmp/t"
  for k in $(seq "$pairs"); do
    # Untraced first in odd pairs, traced first in even ones: neither
    # always runs right after the other.
    for which in $([ $((k % 2)) = 1 ] && echo "u t" || echo "t u"); do
      if [ "$which" = u ]; then
        "$bin" run --algo "$algo" --ranks "$ranks" --count "$c" --iters "$iters" | per_call >> "$tmp/u"
      else
        "$bin" run --algo "$algo" --ranks "$ranks" --count "$c" --iters "$iters" \
          --trace "$tmp/t.cstrace" | per_call >> "$tmp/t"
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
