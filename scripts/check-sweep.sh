#!/usr/bin/env bash
# check-sweep.sh - `collsim check` on correct runs: mesh, ring and host x
# N 1..8 x counts {1, N-1, N+1, 17, 4097, 65537} x fp32/fp16/bf16, each
# once in free mode and under four schedules (random and pct, each under
# fifo and relaxed; seeds vary with the configuration), two calls each.
# Every run must pass and every check must find nothing; prints each
# exception and a summary line. Run from the repository root after
# building (scripts/setup.sh build).
set -uo pipefail
cd "$(dirname "$0")/.."

bin=${1:-build/collsim}
jobs=${JOBS:-2}
[ -x "$bin" ] || { echo "check-sweep.sh: no binary at $bin (build first)" >&2; exit 2; }
dir=$(mktemp -d /tmp/collsim-check-sweep-XXXXXX)
trap 'rm -rf "$dir"' EXIT

one() { # one configuration: ALGO N COUNT DTYPE SEED
  local a=$1 n=$2 c=$3 d=$4 s=$5 t="$dir/$1-$2-$3-$4.cstrace" out rc
  for sched in "" "--schedule random:$s --memory-model fifo" \
      "--schedule random:$((s + 1)) --memory-model relaxed" \
      "--schedule pct:$s:$((1 + s % 3)) --memory-model fifo" \
      "--schedule pct:$((s + 1)):$((1 + (s + 1) % 3)) --memory-model relaxed"; do
    if ! "$bin" run --algo "$a" --ranks "$n" --count "$c" --dtype "$d" --iters 2 \
        $sched --trace "$t" >/dev/null 2>&1; then
      echo "RUN FAILED: --algo $a --ranks $n --count $c --dtype $d $sched"
    else
      out=$("$bin" check "$t" 2>&1); rc=$?
      if [ $rc != 0 ]; then
        echo "FINDING ($rc): --algo $a --ranks $n --count $c --dtype $d $sched"
        echo "$out" | head -6
      fi
      echo ok >> "$dir/ok.$BASHPID"
    fi
    rm -f "$t"
  done
}
export -f one
export bin dir

for a in mesh ring host; do for n in 1 2 3 4 5 6 7 8; do
  for c in 1 $((n > 1 ? n - 1 : 1)) $((n + 1)) 17 4097 65537; do
    for d in fp32 fp16 bf16; do echo "$a $n $c $d $((n * 7919 + c * 31 + ${#d}))"; done
  done; done; done | sort -u | shuf --random-source=<(yes) | xargs -P "$jobs" -L 1 bash -c 'one "$@"' _ | tee "$dir/log"
checked=$(cat "$dir"/ok.* 2>/dev/null | wc -l)
bad=$(grep -c '^FINDING' "$dir/log" || true)
failed=$(grep -c '^RUN FAILED' "$dir/log" || true)
echo "check-sweep: $checked runs checked, $bad with findings, $failed runs failed"
[ "$bad" = 0 ] && [ "$failed" = 0 ]
