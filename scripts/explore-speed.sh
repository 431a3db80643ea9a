#!/usr/bin/env bash
# explore-speed.sh - schedules per second of `collsim explore` on the
# benchmark configuration (--algo ring --ranks 3 --count 40, a correct
# algorithm, so every schedule runs to the end), one child process per
# schedule (--batch 1) and batched (the default) side by side: the two
# alternate ROUNDS times and each one's median rate and the ratio are
# printed. With --base OLD, OLD's two rates are measured in the same
# rounds, alternating with the binary's, and the ratios new / old are
# printed too. Run from the repository root after building.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/explore-speed.sh [--schedules K] [--rounds R] [-j N] [--bin PATH]
                              [--base PATH]

  --schedules K  schedules per explore (default 400)
  --rounds R     alternations of the two modes (default 3)
  -j N           explore -j (default: explore's, the online CPUs)
  --bin PATH     collsim binary (default build/collsim)
  --base PATH    another collsim binary (an older build) measured side by side
USAGE
}

schedules=400 rounds=3 jobs= bin=build/collsim base=
while [ $# -gt 0 ]; do
  case "$1" in
    --schedules) schedules=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "explore-speed.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for b in "$bin" ${base:+"$base"}; do
  [ -x "$b" ] || { echo "explore-speed.sh: $b is not an executable" >&2; exit 2; }
done
dir=$(mktemp -d /tmp/collsim-explore-speed-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The rate of one explore of binary $1: "explore: N schedules in S s (R/s),
# ..." -> N/S.
rate() {
  local b=$1
  shift
  "$b" explore --algo ring --ranks 3 --count 40 --schedules "$schedules" \
    ${jobs:+-j "$jobs"} -o "$dir" "$@" |
    awk '/^explore: /{gsub(/[(]/,""); print $2 / $5}'
}
median() { sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }

one=() many=() old_one=() old_many=()
for ((r = 1; r <= rounds; r++)); do
  one+=("$(rate "$bin" --batch 1)")
  many+=("$(rate "$bin")")
  if [ -n "$base" ]; then
    old_one+=("$(rate "$base" --batch 1)")
    old_many+=("$(rate "$base")")
  fi
done
m1=$(printf '%s\n' "${one[@]}" | median)
m2=$(printf '%s\n' "${many[@]}" | median)
echo "explore --algo ring --ranks 3 --count 40, $schedules schedules, $rounds rounds (load $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs)"
printf '  one process per schedule (--batch 1): %7.1f schedules/s  (%s)\n' "$m1" "${one[*]}"
printf '  batched (default --batch):            %7.1f schedules/s  (%s)\n' "$m2" "${many[*]}"
awk -v a="$m1" -v b="$m2" 'BEGIN{printf "  ratio batched / one per schedule: %.2f\n", b / a}'
if [ -n "$base" ]; then
  o1=$(printf '%s\n' "${old_one[@]}" | median)
  o2=$(printf '%s\n' "${old_many[@]}" | median)
  echo "  base $base:"
  printf '  one process per schedule (--batch 1): %7.1f schedules/s  (%s)\n' "$o1" "${old_one[*]}"
  printf '  batched (default --batch):            %7.1f schedules/s  (%s)\n' "$o2" "${old_many[*]}"
  awk -v a="$m1" -v b="$o1" -v c="$m2" -v d="$o2" \
    'BEGIN{printf "  ratio %s / base: one per schedule %.2f, batched %.2f\n", "'"$bin"'", a / b, c / d}'
fi
