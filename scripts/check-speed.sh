#!/usr/bin/env bash
# check-speed.sh - how fast `collsim check` reads a large trace, and in how
# much memory: records one correct run of about EVENTS records (a ring of
# 4 ranks on a 64-element input, many calls: barrier-heavy, the checker's
# hardest case per record), then checks it REPS times and prints the
# records per second of each pass and the largest resident set. Run from
# the repository root after building (scripts/setup.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/check-speed.sh [--events N] [--reps R] [--bin PATH] [--keep FILE]

  --events N   records to aim for (default 10000000: ~800 MB of trace)
  --reps R     checks of the trace (default 3); the median is printed
  --bin PATH   collsim binary (default build/collsim)
  --keep FILE  write the trace to FILE and keep it (default: a temporary
               file, removed at the end)
USAGE
}

events=10000000 reps=3 bin=build/collsim keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --events) events=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "check-speed.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "check-speed.sh: no binary at $bin (build first)" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "check-speed.sh: needs /usr/bin/time" >&2; exit 2; }

trace=${keep:-$(mktemp /tmp/collsim-check-speed-XXXXXX.cstrace)}
[ -n "$keep" ] || trap 'rm -f "$trace"' EXIT
# A call of this shape records 552 records (4 ranks x 138).
iters=$(( (events + 551) / 552 ))
rm -f "$trace"
"$bin" run --algo ring --ranks 4 --count 64 --iters "$iters" --trace "$trace" >/dev/null
bytes=$(stat -c %s "$trace")
records=$(( (bytes - 4096) / 80 ))
echo "trace: $records records, $bytes bytes ($iters calls of ring, 4 ranks, 64 x fp32)"

rates=()
for i in $(seq "$reps"); do
  out=$( { /usr/bin/time -f '%e %M' "$bin" check "$trace" >/dev/null; } 2>&1 | tail -1)
  secs=${out% *} kb=${out#* }
  rate=$(awk -v n="$records" -v s="$secs" 'BEGIN { printf "%.2f", n / (s > 0 ? s : 0.01) / 1e6 }')
  echo "check $i: ${secs} s, ${rate} M records/s, max resident ${kb} KiB"
  rates+=("$rate")
done
median=$(printf '%s\n' "${rates[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
echo "median: ${median} M records/s"
