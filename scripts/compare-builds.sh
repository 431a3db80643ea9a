#!/usr/bin/env bash
# compare-builds.sh - two builds of collsim side by side, as ratios.
#
#   scripts/compare-builds.sh [--pairs P] [--ranks "2 8"] [--sizes "8 1M 16M"]
#                           [--algo A] [--iters N] [--trace-cost] OLD NEW
#
# For each rank count and size it runs `OLD bench` and `NEW bench` in turn,
# P pairs, alternating which goes first, and prints the median time of
# each and the median of the per-pair ratios NEW/OLD (below 1: NEW is
# faster). With --trace-cost it compares `bench --trace-cost` instead: the
# traced/untraced ratio of each build and their quotient. A refactor that
# should not change speed shows ratios near 1. The machine's noise is
# shared by both builds of a pair; single figures are not worth quoting.
set -euo pipefail
pairs=7 ranks="2 8" sizes="8 1M 16M" algo=all iters=100 cost=0
while [ $# -gt 2 ]; do
  case $1 in
    --pairs) pairs=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --trace-cost) cost=1; shift ;;
    *) echo "compare-builds.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: scripts/compare-builds.sh [options] OLD NEW" >&2; exit 2; }
old=$1 new=$2
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "compare-builds.sh: '$b' is not an executable collsim" >&2; exit 2; }
done

median() { sort -g | awk '{v[NR]=$1} END {print NR % 2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
# one bench run: prints "algo value" per row (time_us, or the trace ratio)
one() {
  local bin=$1 n=$2 size=$3 col=7 extra=()
  if [ $cost = 1 ]; then extra=(--trace-cost); fi
  "$bin" bench --csv --ranks "$n" -b "$size" -e "$size" -n "$iters" -w 10 \
    --algo "$algo" "${extra[@]}" 2>/dev/null |
    awk -F, -v cost=$cost 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == (cost ? "trace_ratio" : "time_us")) c = i; next }
                           { print $5, $c }'
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
what=$([ $cost = 1 ] && echo "traced/untraced" || echo "time(us)")
printf '%-6s %-8s %-6s %14s %14s %12s\n' ranks size algo "old $what" "new $what" "new/old"
for n in $ranks; do
  for size in $sizes; do
    : > "$tmp/o"; : > "$tmp/n"
    for p in $(seq 1 "$pairs"); do
      if [ $((p % 2)) = 1 ]; then
        one "$old" "$n" "$size" > "$tmp/a"; one "$new" "$n" "$size" > "$tmp/b"
      else
        one "$new" "$n" "$size" > "$tmp/b"; one "$old" "$n" "$size" > "$tmp/a"
      fi
      join <(sort "$tmp/a") <(sort "$tmp/b") | while read -r al a b; do
        echo "$al $a" >> "$tmp/o"; echo "$al $b" >> "$tmp/n"
        echo "$al $(awk -v a="$a" -v b="$b" 'BEGIN { print (a > 0 ? b / a : 0) }')" >> "$tmp/r"
      done
    done
    for al in $(awk '{print $1}' "$tmp/o" | sort -u); do
      mo=$(awk -v a=$al '$1 == a {print $2}' "$tmp/o" | median)
      mn=$(awk -v a=$al '$1 == a {print $2}' "$tmp/n" | median)
      mr=$(awk -v a=$al '$1 == a {print $2}' "$tmp/r" | median)
      printf '%-6s %-8s %-6s %14s %14s %12.3f\n' "$n" "$size" "$al" "$mo" "$mn" "$mr"
    done
    rm -f "$tmp/r"
  done
done
