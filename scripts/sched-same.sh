#!/usr/bin/env bash
# sched-same.sh - two collsim builds must schedule alike: records the same
# controlled runs with both (ring, mesh and host; memory models sc, fifo
# and relaxed; schedules random:SEED, pct:SEED:3, latest and deviate:none;
# and every bug mutation under the controlled options --list-bugs gives
# for it) and compares their traces record by record, every field but the
# clock (t_ns, the header's start_ns and tick_ns) and the checksums that
# cover it, and the runs' exit statuses; the bug runs also untraced (what
# they print, their results, their exit statuses). Prints one line per
# run, then "same: N of N runs"; exits 1 at the first difference (with a
# diff of the first records that differ), 2 on bad usage.
#
#   scripts/sched-same.sh [--seeds "1 2"] [--ranks N] [--count C] [--iters K]
#                       [--loose 1] OLD NEW
#
# --loose 1 also leaves out the trace's format version and each record's
# worded text (the describer's sentence), for builds on either side of a
# format version or a rewording: the decisions are in the other fields.
# Defaults: seeds 1 2, 4 ranks, count 4097, 2 calls. Nothing is left behind.
set -euo pipefail
seeds="1 2" ranks=4 count=4097 iters=2 loose=
. "$(dirname "$0")/opts.sh"
opts_parse sched-same "seeds ranks count iters loose" "$@"
set -- "${opts_rest[@]}"
[ $# -eq 2 ] || die "expected two collsim binaries, OLD and NEW (see --help)"
for b in "$@"; do [ -x "$b" ] || die "'$b' is not an executable collsim"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One run of binary $1 (run options $3...) traced to $2.jsonl without its
# clock; its exit status in $2.rc.
record() {
  local bin=$1 out=$2 rc=0
  shift 2
  "$bin" run "$@" --trace "$out.cstrace" >/dev/null 2>&1 || rc=$?
  echo "$rc" > "$out.rc"
  "$bin" trace --format jsonl "$out.cstrace" |
    sed -E 's/"(t_ns|start_ns|tick_ns|checksum)":[^,}]*,?//g' |
    if [ -n "$loose" ]; then
      sed -E 's/"version":[0-9]+,//; s/,"text":"[^"]*"}$/}/'
    else
      cat
    fi > "$out.jsonl"
}
runs=0
# Both binaries, run options "$@": the same records and exit status, or exit 1.
same() {
  record "$old" "$tmp/a" "$@"
  record "$new" "$tmp/b" "$@"
  local n=$(($(wc -l < "$tmp/a.jsonl") - 1)) rc
  rc=$(cat "$tmp/a.rc")
  if ! cmp -s "$tmp/a.jsonl" "$tmp/b.jsonl" || ! cmp -s "$tmp/a.rc" "$tmp/b.rc"; then
    echo "DIFFER: $* (exit $rc vs $(cat "$tmp/b.rc"))"
    diff "$tmp/a.jsonl" "$tmp/b.jsonl" | head -6 || true
    exit 1
  fi
  runs=$((runs + 1))
  echo "same: $* ($n records, exit $rc)"
}
# Untraced, the ranks land posted ops themselves (no hook to call in the
# launcher), so no trace shows the schedule: compare what the run prints
# (the wrong calls and elements of a bug depend on it; not the clock) and
# every rank's result (--output), and the exit status.
untraced() {
  local bin=$1 out=$2 rc=0
  shift 2
  "$bin" run "$@" --output "$out.npy" 2>&1 |
    grep -v '^time per call:\|^verification:' > "$out.txt" || rc=$?
  echo "$rc" > "$out.rc"
}
same_untraced() {
  untraced "$old" "$tmp/a" "$@"
  untraced "$new" "$tmp/b" "$@"
  if ! cmp -s "$tmp/a.txt" "$tmp/b.txt" || ! cmp -s "$tmp/a.npy" "$tmp/b.npy" ||
     ! cmp -s "$tmp/a.rc" "$tmp/b.rc"; then
    echo "DIFFER (untraced): $*"
    diff "$tmp/a.txt" "$tmp/b.txt" | head -6 || true
    exit 1
  fi
  runs=$((runs + 1))
  echo "same (untraced): $* (exit $(cat "$tmp/a.rc"))"
}
old=$1 new=$2
for algo in ring mesh host; do
  for model in sc fifo relaxed; do
    scheds="latest deviate:none"
    for s in $seeds; do scheds="$scheds random:$s pct:$s:3"; done
    for sched in $scheds; do
      same --algo "$algo" --ranks "$ranks" --count "$count" --iters "$iters" \
        --schedule "$sched" --memory-model "$model"
    done
  done
done
# Every bug mutation under the controlled options its listing gives (wrong
# results, deadlocks): the failing runs must match too.
"$old" run --list-bugs | awk '/^[a-z]/ { b = $1 } /with:.*--schedule/ {
  sub(/.*with: /, ""); print b, $0 }' > "$tmp/bugs"
while read -r bug opts; do
  # shellcheck disable=SC2086 # opts is a list of options
  same --bug "$bug" $opts
  # shellcheck disable=SC2086
  same_untraced --bug "$bug" $opts
done < "$tmp/bugs"
# A bug whose wrong result depends on when posted ops land, untraced.
for model in fifo relaxed; do
  for s in $seeds 3 4 5; do
    same_untraced --bug no-fence-before-notify --algo ring --ranks 3 --count 40 \
      --schedule "random:$s" --memory-model "$model"
  done
done
echo "same: $runs of $runs runs"
