#!/usr/bin/env bash
# compare-instructions.sh - two builds of collsim side by side in
# instructions, where timing is too noisy to show a small change: each
# build runs `collsim run --algo A --ranks N --count C --iters K` under
# callgrind (every process), and the table gives per (algorithm, ranks)
# the launcher's instructions and a rank's (the mean over the ranks),
# the latter without the functions that wait for a peer (their count
# grows with how late the peer is, which is noise), then NEW-OLD per call.
# A rank's count holds what its launcher did before the fork (loading,
# parsing), so a call's cost is taken as the slope between a run of K
# calls and one of 2K: (rank(2K) - rank(K)) / K, for each build; the
# fixed start-up drops out. Below 0: NEW runs fewer per call.
#
#   scripts/compare-instructions.sh [--algos "mesh ring host"]
#                       [--ranks "2 8"] [--count 2] [--iters 200] OLD NEW
#
# The default --count 2 is 8 bytes of fp32 per rank. Needs valgrind
# (Debian package valgrind). Nothing is left behind.
set -euo pipefail
algos="mesh ring host" ranks="2 8" count=2 iters=200
. "$(dirname "$0")/opts.sh"
opts_parse compare-instructions "algos ranks count iters" "$@"
set -- "${opts_rest[@]}"
[ $# -eq 2 ] || die "expected two collsim binaries, OLD and NEW (see --help)"
for b in "$@"; do [ -x "$b" ] || die "'$b' is not an executable collsim"; done
command -v valgrind > /dev/null || die "needs valgrind (apt-get install valgrind)"
case $iters in '' | *[!0-9]* | 0) die "--iters '$iters': expected a positive integer" ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Instructions of one callgrind file: all, or (nowait) without the
# functions whose name says they wait.
ir() {
  if [ "$2" = all ]; then
    sed -n 's/^summary: //p' "$1"
  else
    callgrind_annotate --auto=no --inclusive=no --threshold=100 "$1" 2>/dev/null |
      grep -E '^ *[0-9,]+ +\([ 0-9.]+%\) +[^ ]+:[^ ]+' | grep -v 'PROGRAM TOTALS' |
      grep -viE ':[^ ]*(wait|futex|sched_yield|syscall)' |
      awk '{c = $1; gsub(",", "", c); s += c} END {print s + 0}'
  fi
}

printf "%-6s %5s %14s %14s %14s %14s %12s\n" algo ranks old_launcher \
  new_launcher old_rank new_rank "new-old/call"
# measure BIN ALGO RANKS CALLS: sets launcher= and rank= of one run.
measure() {
  local d=$tmp/run.$RANDOM$RANDOM files
  mkdir -p "$d"
  valgrind --tool=callgrind --trace-children=yes \
    --callgrind-out-file="$d/cg.%p" "$1" run --algo "$2" --ranks "$3" \
    --count "$count" --iters "$4" --timeout 600 > /dev/null 2>&1 ||
    die "$1 run --algo $2 --ranks $3 failed under valgrind"
  # the launcher is the first process (the smallest pid)
  files=$(ls "$d"/cg.* | sort -t. -k2 -n)
  launcher=$(ir "$(echo "$files" | head -1)" all)
  rank=$(for f in $(echo "$files" | tail -n +2); do ir "$f" nowait; done |
    awk '{s += $1; n++} END {printf "%.0f", n ? s / n : 0}')
  rm -rf "$d"
}
for a in $algos; do
  for n in $ranks; do
    for side in old new; do
      bin=$1
      [ $side = new ] && bin=$2
      measure "$bin" "$a" "$n" $((2 * 10#$iters))
      r2=$rank
      measure "$bin" "$a" "$n" "$iters"
      eval "l_$side=$launcher r_$side=$rank s_$side=$((r2 - rank))"
    done
    awk -v a="$a" -v n="$n" -v lo="$l_old" -v ln="$l_new" -v ro="$r_old" \
      -v rn="$r_new" -v so="$s_old" -v sn="$s_new" -v k="$iters" \
      'BEGIN {printf "%-6s %5s %14s %14s %14s %14s %12.1f\n", a, n, lo, ln, ro, rn, (sn - so) / k}'
  done
done
