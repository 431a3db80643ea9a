#!/usr/bin/env bash
# explore-speed.sh - schedules per second of `collsim explore` on the
# benchmark configuration (--algo ring --ranks 3 --count 40, a correct
# algorithm, so every schedule runs to the end), one child process per
# schedule (--batch 1) and batched (the default) side by side: the two
# alternate ROUNDS times and each one's median rate and the ratio are
# printed. Run from the repository root after building.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: tools/explore-speed.sh [--schedules K] [--rounds R] [-j N] [--bin PATH]

  --schedules K  schedules per explore (default 400)
  --rounds R     alternations of the two modes (default 3)
  -j N           explore -j (default: explore's, the online CPUs)
  --bin PATH     collsim binary (default build/collsim)
USAGE
}

schedules=400 rounds=3 jobs= bin=build/collsim
while [ $# -gt 0 ]; do
  case "$1" in
    --schedules) schedules=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    -j) jobs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "explore-speed.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "explore-speed.sh: $bin is not an executable" >&2; exit 2; }
dir=$(mktemp -d /tmp/collsim-explore-speed-XXXXXX)
trap 'rm -rf "$dir"' EXIT

# The rate of one explore: "explore: N schedules in S s (R/s), ..." -> N/S.
rate() {
  "$bin" explore --algo ring --ranks 3 --count 40 --schedules "$schedules" \
    ${jobs:+-j "$jobs"} -o "$dir" "$@" |
    awk '/^explore: /{gsub(/[(]/,""); print $2 / $5}'
}
median() { sort -g | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }

one=() many=()
for ((r = 1; r <= rounds; r++)); do
  one+=("$(rate --batch 1)")
  many+=("$(rate)")
done
m1=$(printf '%s\n' "${one[@]}" | median)
m2=$(printf '%s\n' "${many[@]}" | median)
echo "explore --algo ring --ranks 3 --count 40, $schedules schedules, $rounds rounds (load $(cut -d' ' -f1 /proc/loadavg), $(nproc) CPUs)"
printf '  one process per schedule (--batch 1): %7.1f schedules/s  (%s)\n' "$m1" "${one[*]}"
printf '  batched (default --batch):            %7.1f schedules/s  (%s)\n' "$m2" "${many[*]}"
awk -v a="$m1" -v b="$m2" 'BEGIN{printf "  ratio batched / one per schedule: %.2f\n", b / a}'
