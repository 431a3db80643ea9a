#!/usr/bin/env bash
# verify-speed.sh - how long verification takes against the call it
# checks, for two builds side by side in one run (e.g. before and after a
# change to the oracle):
#
#   scripts/verify-speed.sh OLD_COLLSIM NEW_COLLSIM [RANKS] [COUNT] [DTYPE] [ALGO]
#
# Defaults: mesh, 64 ranks x 1000003 fp16 (sum, random fill), one call.
# For each binary, one `collsim run --iters 1` (NEW first, then OLD, so a
# slow OLD does not delay NEW's figure): its wall time, the call's own time
# (the run's "time per call"), the rest (wall - call: the world, the fill
# and the verification) and, where the binary prints it ("verification:
# S s"), the verification alone. Prints one line per binary and the ratio
# of the rests. Run it niced on a quiet machine; it measures,
# it asserts nothing.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
old=$1; new=$2; ranks=${3:-64}; count=${4:-1000003}; dtype=${5:-fp16}; algo=${6:-mesh}
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "verify-speed: $b is not an executable" >&2; exit 2; }
done
one() { # binary label
  local t0 t1 out us
  t0=$(date +%s.%N)
  out=$("$1" run --algo "$algo" --ranks "$ranks" --count "$count" --dtype "$dtype" \
        --op sum --fill random --iters 1 2>&1) || true
  t1=$(date +%s.%N)
  us=$(echo "$out" | sed -n 's/^time per call: \([0-9.]*\) us.*/\1/p')
  ver=$(echo "$out" | sed -n 's/^verification: \([0-9.]*\) s.*/\1/p')
  [ -n "$us" ] || { echo "verify-speed: $2 run failed:"; echo "$out"; exit 1; }
  echo "$out" | grep -q 'bit-exact' || echo "verify-speed: $2: result not bit-exact" >&2
  awk -v l="$2" -v a="$t0" -v b="$t1" -v c="$us" -v v="${ver:--}" 'BEGIN {
    w = b - a; cs = c / 1e6;
    printf "%-4s wall %8.2f s   call %7.2f s   rest %8.2f s   rest/call %6.2f   verification %s s\n", l, w, cs, w - cs, (w - cs) / cs, v }'
}
echo "# $algo, $ranks ranks x $count $dtype, sum, one call; $(nproc) online CPUs"
n=$(one "$new" new); echo "$n"
o=$(one "$old" old); echo "$o"
awk -v o="$o" -v n="$n" 'BEGIN { split(o, a, " "); split(n, b, " ");
  printf "rest old / new: %.1fx\n", a[9] / b[9] }'
