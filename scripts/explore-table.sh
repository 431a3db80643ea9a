#!/usr/bin/env bash
# explore-table.sh - how soon `collsim explore` finds each shipped
# mutation: for every --bug of `collsim run --list-bugs`, with its
# documented configuration (the options after "with:", less the
# --schedule, --memory-model and --trace that explore sets; --iters 10,
# run's default) and again with --iters 1, runs explore with SEEDS explore
# seeds (--explore-seed 1..SEEDS, -j 1 so the first failure found is the
# first of the portfolio's order) and prints the median and the largest
# number of schedules to the first failure, and how many seeds found one
# within --schedules (default 1000). A mutation whose documented failure
# is only visible in the trace (no wrong result) is explored with --check.
#
# --correct instead explores the three correct algorithms under every
# memory model until TOTAL schedules (default 10000) have run, and prints
# what it found (nothing, for a correct build) and how long it took.
# Run from the repository root after building.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/explore-table.sh [--seeds N] [--schedules K] [--bug NAME] [-P N]
                              [--strategy S,...] [--bin PATH]
       scripts/explore-table.sh --correct [--total N] [--bin PATH]

  --seeds N      explore seeds per row (default 20)
  --schedules K  give up after K schedules (default 1000)
  --bug NAME     only this mutation
  -P N           explores at a time (default 2)
  --strategy S   explore --strategy (default: explore's whole portfolio;
                 pct,random leaves out latest, which has no seed)
  --correct      explore mesh, ring and host (no --bug) instead
  --total N      with --correct: schedules in all (default 10000)
  --bin PATH     collsim binary (default build/collsim)
USAGE
}

seeds=20 schedules=1000 only= par=2 correct=0 total=10000 bin=build/collsim strategy=
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --schedules) schedules=$2; shift 2 ;;
    --bug) only=$2; shift 2 ;;
    -P) par=$2; shift 2 ;;
    --strategy) strategy=$2; shift 2 ;;
    --correct) correct=1; shift ;;
    --total) total=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "explore-table.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "explore-table.sh: $bin is not an executable" >&2; exit 2; }
dir=$(mktemp -d /tmp/collsim-explore-table-XXXXXX)
trap 'rm -rf "$dir"' EXIT

if [ "$correct" = 1 ]; then
  # Three algorithms, two shapes each (an odd count, fp16), every model:
  # total / 6 schedules per explore.
  per=$(( (total + 5) / 6 ))
  start=$(date +%s.%N) found=0 ran=0
  for cfg in "--algo mesh --ranks 3 --count 40" "--algo mesh --ranks 4 --count 17 --dtype fp16" \
             "--algo ring --ranks 3 --count 40" "--algo ring --ranks 4 --count 17 --dtype fp16" \
             "--algo host --ranks 3 --count 40" "--algo host --ranks 4 --count 300 --dtype fp16"; do
    rc=0
    # shellcheck disable=SC2086
    out=$("$bin" explore $cfg --schedules "$per" --keep-going -o "$dir" 2>&1) || rc=$?
    line=$(printf '%s\n' "$out" | grep '^explore: ')
    echo "collsim explore $cfg --schedules $per --keep-going: exit $rc; $line"
    n=$(printf '%s\n' "$line" | awk '{print $2}')
    f=$(printf '%s\n' "$line" | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^failure/) print $(i-1)}')
    ran=$((ran + n)) found=$((found + f))
  done
  end=$(date +%s.%N)
  awk -v n="$ran" -v f="$found" -v a="$start" -v b="$end" \
    'BEGIN{printf "correct algorithms: %d schedules, %d failures, %.0f s\n", n, f, b - a}'
  [ "$found" = 0 ]
  exit
fi

# name|options, from run --list-bugs ("NAME  what" then "fails:", "with:").
bugs=$("$bin" run --list-bugs | awk '
  /^[a-z]/ {name = $1}
  /^ +with: / {sub(/^ +with: /, ""); print name "|" $0}')

# Schedules to the first failure of one explore (or "-" for none).
first_failure() {
  local seed=$1; shift
  local rc=0 out d="$dir/$seed"
  mkdir -p "$d"
  out=$("$bin" explore "$@" ${strategy:+--strategy "$strategy"} --explore-seed "$seed" --schedules "$schedules" -j 1 \
          -o "$d" 2>&1) || rc=$?
  rm -f "$d"/*
  if [ "$rc" = 1 ]; then
    printf '%s\n' "$out" | sed -n 's/.*first at schedule \([0-9]*\)).*/\1/p' | head -1
  else
    echo "-"
  fi
}
export -f first_failure
export bin schedules dir strategy

row() {
  local name=$1 label=$2; shift 2
  local res
  res=$(seq 1 "$seeds" | xargs -P "$par" -I{} bash -c 'first_failure {} "$@"' _ "$@" |
        sort -g)
  printf '%s\n' "$res" | awk -v n="$name" -v l="$label" -v s="$seeds" '
    $1 != "-" {v[++k] = $1}
    END {
      if (k == 0) {printf "| %-26s | %-30s | none | none | 0/%d |\n", n, l, s; exit}
      printf "| %-26s | %-30s | %4d | %4d | %d/%d |\n", n, l, v[int((k+1)/2)], v[k], k, s
    }'
}

echo "explore${strategy:+ --strategy $strategy}: schedules to the first failure over $seeds explore seeds (median, max), at most $schedules"
echo "| mutation | configuration | median | max | found |"
echo "|---|---|---|---|---|"
while IFS='|' read -r name opts; do
  [ -z "$only" ] || [ "$name" = "$only" ] || continue
  # Explore sets the schedule, the memory model and the trace itself.
  # shellcheck disable=SC2001
  base=$(echo "$opts" | sed -e 's/--schedule [^ ]*//' -e 's/--memory-model [^ ]*//' \
                            -e 's/--trace [^ ]*//' -e 's/  */ /g' -e 's/ $//')
  extra=
  if "$bin" run --list-bugs | grep -A1 "^$name " | grep -q "fails: no wrong result"; then
    extra=--check
  fi
  # shellcheck disable=SC2086
  row "$name" "$base${extra:+ $extra} --iters 10" $base $extra --bug "$name" --iters 10
  # shellcheck disable=SC2086
  row "$name" "$base${extra:+ $extra} --iters 1" $base $extra --bug "$name" --iters 1
done <<< "$bugs"
