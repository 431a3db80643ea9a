#!/usr/bin/env bash
# sched-speed.sh - controlled-mode throughput: scheduling decisions per
# second of one controlled run, for one or two collsim binaries side by
# side (A, B, A, B, ...). Records the run once with --trace to count its
# decisions (every step record: device events and DMA landings), then runs
# it REPS times untraced per binary and divides the decisions of one call
# by the printed time per call (median over calls of the slowest rank), so
# the launch itself is not counted. Prints the median over the repeats.
#
#   scripts/sched-speed.sh [--model sc|fifo|relaxed|a2a3] [--schedule S]
#                        [--algo A] [--ranks N] [--count C] [--iters K]
#                        [--reps R] BIN [BIN2]
#
# Defaults: ring, 4 ranks, count 4097, schedule random:1, memory model sc,
# 10 calls, 5 repeats. Run from anywhere; nothing is left behind.
set -euo pipefail
model=sc schedule=random:1 algo=ring ranks=4 count=4097 iters=10 reps=5
. "$(dirname "$0")/opts.sh"
opts_parse sched-speed "model schedule algo ranks count iters reps" "$@"
set -- "${opts_rest[@]}"
[ $# -ge 1 ] && [ $# -le 2 ] || die "expected one or two collsim binaries (see --help)"
for b in "$@"; do [ -x "$b" ] || die "'$b' is not an executable collsim"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(run --algo "$algo" --ranks "$ranks" --count "$count" --iters "$iters"
      --schedule "$schedule" --memory-model "$model")
"$1" "${args[@]}" --trace "$tmp/t" >/dev/null
steps=$("$1" trace --format jsonl "$tmp/t" |
  grep -c '"kind":"\(load\|store\|put\|notify\|wait\|wait-end\|fence\|reduce\|mark\|dma-land\|pipe-barrier\|ddr-fence\|dcci\|read\)"' || true)
[ "$steps" -gt 0 ] || die "no decisions counted in the trace"
per_call=$(awk -v s="$steps" -v k="$iters" 'BEGIN { printf "%.1f", s / k }')
echo "# $algo, $ranks ranks, count $count, schedule $schedule, memory model $model:" \
     "$steps decisions in $iters calls ($per_call per call); median of $reps repeats"
us() { "$1" "${args[@]}" | sed -n 's/^time per call: \([0-9.]*\) us.*/\1/p'; }
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
for r in $(seq 1 "$reps"); do
  i=0
  for b in "$@"; do
    i=$((i + 1)); us "$b" >> "$tmp/$i"
  done
done
i=0
for b in "$@"; do
  i=$((i + 1))
  t=$(median < "$tmp/$i")
  awk -v b="$b" -v t="$t" -v p="$per_call" \
    'BEGIN { printf "%-40s %10.1f us/call %10.0f decisions/s\n", b, t, p / t * 1e6 }'
done
