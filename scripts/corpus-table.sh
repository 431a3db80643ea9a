#!/usr/bin/env bash
# corpus-table.sh - the measured columns of the upstream bug corpus
# (docs/upstream-bugs.md): for every row, its mutation at its
# configuration,
#   - explored under sc (pct and random, --schedules K): the failures
#     found, none for a bug upstream saw only on silicon;
#   - explored under the model that exposes it (pct and random) with
#     SEEDS explore seeds (-j 1, so the first failure is the first of the
#     portfolio's order): the median and the largest number of schedules
#     to the first failure (explore's default portfolio starts with the
#     latest schedule, which finds every row at schedule 1);
#   - the first seed's failing trace: check's first finding (its first
#     line) and the shrunk story's Missing line.
# Run from the repository root after building. Prints one block per row.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/corpus-table.sh [--seeds N] [--schedules K] [--bin PATH]

  --seeds N      explore seeds under the exposing model (default 5)
  --schedules K  schedules per explore (default 300)
  --bin PATH     collsim binary (default build/collsim)
USAGE
}

seeds=5 schedules=300 bin=build/collsim
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --schedules) schedules=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "corpus-table.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "corpus-table.sh: $bin is not an executable (build first)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# upstream | model | options
rows=(
  "pypto #1561 / PTOAS #711|relaxed|--algo ring --ranks 3 --count 40 --iters 1 --bug no-fence-before-notify"
  "PTOAS #744|a2a3|--algo ring --ranks 3 --count 40 --iters 1 --bug drain-no-ddr-fence"
  "pypto #2093|a2a3|--algo ring-nb --ranks 3 --count 9 --iters 1 --bug drain-no-ddr-fence"
  "pypto #2279|sc|--algo mesh --ranks 3 --count 40 --iters 2 --bug signal-reuse"
  "PTOAS #706|a2a3|--algo ring-push --ranks 2 --count 40 --iters 1 --bug push-no-put-predrain"
  "PTOAS #872|a2a3|--algo host-push --ranks 2 --count 1024 --iters 1 --bug host-push-no-tail-drain"
  "pypto #1826|a2a3|--algo ring --ranks 2 --count 256 --iters 1 --bug ring-stage-in-drain-only"
)

for row in "${rows[@]}"; do
  IFS='|' read -r who model opts <<<"$row"
  echo "== $who: $opts"
  # shellcheck disable=SC2086
  out=$("$bin" explore $opts --memory-model sc --strategy pct,random \
        --schedules "$schedules" --no-shrink -j 1 -o "$tmp" 2>&1 || true)
  echo "   sc: $(grep -E '^explore: [0-9]+ schedules' <<<"$out" | tail -1)"
  firsts=()
  for s in $(seq 1 "$seeds"); do
    rm -f "$tmp"/*.cstrace
    shrink=--no-shrink
    [ "$s" = 1 ] && shrink=
    # shellcheck disable=SC2086
    out=$("$bin" explore $opts --memory-model "$model" --strategy pct,random \
          --explore-seed "$s" --schedules "$schedules" $shrink -j 1 -o "$tmp" 2>&1 || true)
    k=$(sed -nE 's/.*first at schedule ([0-9]+)\).*/\1/p' <<<"$out" | head -1)
    firsts+=("${k:-none}")
    if [ "$s" = 1 ]; then
      story=$(grep -E '^  Missing:' <<<"$out" | head -1 | sed 's/^ *//')
      finding=none
      if [ -e "$tmp/explore-1.cstrace" ]; then
        c=$("$bin" check "$tmp/explore-1.cstrace" 2>&1 || true)
        finding="$(head -1 <<<"$c" | cut -c1-160) / $(grep -m1 '^   fix' <<<"$c" | sed 's/^ *//' | cut -c1-200)"
      fi
    fi
  done
  found=$(printf '%s\n' "${firsts[@]}" | grep -c -v none || true)
  med=$(printf '%s\n' "${firsts[@]}" | grep -v none | sort -n |
        awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}')
  max=$(printf '%s\n' "${firsts[@]}" | grep -v none | sort -n | tail -1)
  echo "   $model: found by $found of $seeds seeds; schedules to the first failure: median $med, largest ${max:--} (${firsts[*]})"
  echo "   check: $finding"
  echo "   story: ${story:-none}"
done
