#!/usr/bin/env bash
# record-cost.sh - what recording costs, in one run: for every built-in
# algorithm at 2 and 4 ranks and 1, 4 and 16 MiB per rank, `collsim bench
# --trace-cost` (untraced and traced calls alternating on one world, so
# both see the same machine) gives the untraced and traced median time per
# call, their ratio, and the nanoseconds per recorded event; then `collsim
# explore` on one configuration, without and with --check, gives the
# schedules per second of each. With --old, an older build runs the same
# rows interleaved with this one (old, new, old, new, ...), so both see
# the same machine. Run from the repository root after building
# (scripts/setup.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'USAGE'
usage: scripts/record-cost.sh [--iters N] [--ranks "N ..."] [--sizes "S ..."]
                              [--schedules K] [--rounds R] [--bin PATH]
                              [--old PATH]

  --iters N        timed calls per row, half of them traced (default 20)
  --ranks "N .."   rank counts (default "2 4")
  --sizes "S .."   bytes per rank, with K/M suffixes (default "1M 4M 16M")
  --schedules K    schedules per explore run (default 400)
  --rounds R       explore runs per binary and mode, interleaved; the
                   median rate is shown (default 3)
  --bin PATH       collsim binary (default build/collsim)
  --old PATH       an older collsim binary to run side by side (rows
                   marked "old" and "new")

Prints one table row per (ranks, size, algorithm[, binary]):
untraced(us), traced(us), traced/untraced and ns/event = (traced -
untraced) / events per call; then explore's schedules/s without and with
--check and their ratio, per binary. An algorithm that does not take a
configuration (twophase: a count that is not a multiple of the ranks) has
no row there. The machine's load average is printed before and after:
on a loaded machine the wall-clock ratios say little.
USAGE
}

iters=20 ranks="2 4" sizes="1M 4M 16M" schedules=400 rounds=3 bin=build/collsim old=
while [ $# -gt 0 ]; do
  case "$1" in
    --iters) iters=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --schedules) schedules=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --old) old=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "record-cost: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for b in "$bin" ${old:+"$old"}; do
  [ -x "$b" ] || { echo "record-cost: no $b: build first (scripts/setup.sh build)" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/collsim-record-cost-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# name:path of each binary, old first
bins=("new:$bin")
[ -n "$old" ] && bins=("old:$old" "new:$bin")

echo "# recording cost: ${bins[*]}, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%5s %6s %-10s %4s %12s %12s %8s %10s\n' ranks size algo bin "untraced(us)" \
  "traced(us)" ratio "ns/event"
for n in $ranks; do
  for s in $sizes; do
    for nb in "${bins[@]}"; do
      name=${nb%%:*} b=${nb#*:}
      "$b" bench --csv --trace-cost --ranks "$n" -b "$s" -e "$s" -n "$iters" \
        -w 2 -c 0 --algo all >"$tmp/csv.$name" 2>"$tmp/err" ||
        { cat "$tmp/err" >&2; exit 1; }
    done
    for nb in "${bins[@]}"; do
      name=${nb%%:*}
      # size,count,type,redop,algo,ranks,time_us,algbw,busbw,wrong,traced_us,
      # trace_ratio,events_per_call,records
      awk -F, -v n="$n" -v s="$s" -v b="$name" 'NR > 1 {
        ns = $13 > 0 ? ($11 - $7) * 1000 / $13 : 0
        printf "%5d %6s %-10s %4s %12.1f %12.1f %8.3f %10.1f\n", n, s, $5, b, $7, $11, $12, ns
      }' "$tmp/csv.$name"
    done
  done
done

# explore: one configuration, the same schedules without and with --check
# (rates from explore's own summary line: "explore: K schedules in T s"),
# each binary and mode `rounds` times, interleaved; the median rate.
cfg=(--algo ring --ranks 3 --count 40 --schedules "$schedules" -j "$(nproc)")
rate() { # rate BIN ARGS...: explore's schedules per second
  rm -rf "$tmp/x" && mkdir -p "$tmp/x"
  "$1" explore "${cfg[@]}" -o "$tmp/x" "${@:2}" >"$tmp/out" 2>&1 || true
  sed -n 's/^explore: [0-9]* schedules in [0-9.]* s (\([0-9]*\)\/s).*/\1/p' "$tmp/out" | tail -1
}
for ((i = 0; i < rounds; i++)); do
  for nb in "${bins[@]}"; do
    name=${nb%%:*} b=${nb#*:}
    echo "$(rate "$b")" >>"$tmp/plain.$name"
    echo "$(rate "$b" --check)" >>"$tmp/check.$name"
  done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "?" }'; }
echo
echo "# explore ${cfg[*]} ($rounds rounds interleaved, median)"
for nb in "${bins[@]}"; do
  name=${nb%%:*}
  plain=$(median "$tmp/plain.$name") checked=$(median "$tmp/check.$name")
  printf '%s: schedules/s without --check: %s (%s), with --check: %s (%s), ratio %s\n' \
    "$name" "$plain" "$(paste -sd' ' "$tmp/plain.$name")" "$checked" \
    "$(paste -sd' ' "$tmp/check.$name")" \
    "$(awk -v a="${plain:-0}" -v b="${checked:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "?" }')"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
