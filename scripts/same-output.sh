#!/usr/bin/env bash
# same-output.sh - two builds of collsim, one broad command set, the same
# words: every subcommand's help, good runs of every algorithm, dtype, op,
# schedule and memory model, every mutation, injected faults, plug-ins,
# the shipped traces through trace, check, replay and shrink, and a sweep
# of bad values for every option. Each command runs once per build in a
# fresh directory; stdout, stderr and the exit status are compared after
# timings (times, rates, bandwidths, latencies) are masked. A refactor
# that should change nothing shows "differ: 0": every command the same,
# or (rerun) a race whose NEW words OLD gives too.
#
#   scripts/same-output.sh [--keep DIR] [--only REGEX] OLD NEW
#
# OLD and NEW are collsim binaries. Plug-ins are built from examples/
# against this tree's public headers. Exit 0 when every command agrees;
# otherwise the first differences (unified diff) and exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
keep= only=.
while [ $# -gt 2 ]; do
  case $1 in
    --keep) keep=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "same-output.sh: unknown option '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: scripts/same-output.sh [--keep DIR] [--only REGEX] OLD NEW" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2")
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "same-output.sh: '$b' is not an executable collsim" >&2; exit 2; }
done
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT

# ---- fixtures: plug-ins and traces every case may name
fx=$work/fx; mkdir -p "$fx"
inc="-I$root/include -I$root/build/include/collsim"
for ex in rd_allreduce ring_allgather; do
  cc -O2 -std=gnu11 -fPIC -shared $inc -o "$fx/$ex.so" "examples/$ex/$ex.c"
  cc -O2 -std=gnu11 -fPIC -shared $inc -DRD_BUG -DAG_BUG -o "$fx/${ex}_bug.so" "examples/$ex/$ex.c"
done
# the test plug-ins (tests/plugins: ports, defects, held-out, misbehave),
# as CMake builds them for the tests, when build/plugins holds them
[ -d build/plugins ] && cp build/plugins/*.so "$fx/" 2>/dev/null || true
cc -O2 -std=gnu11 -fPIC -shared $inc -o "$fx/packed_flags.so" examples/packed_flags/packed_flags.c
cp traces/*.cstrace traces/bugs/*.cstrace "$fx/"
printf 'not a trace\n' > "$fx/junk.cstrace"
head -c 300 traces/ring-n4-c17-fp16-sum.cstrace > "$fx/short.cstrace"

# ---- the command set: one line each, words split on blanks; FX names
# the fixtures' directory.
cases=$work/cases
{
  echo "--help"; echo "--version"; echo "nosuch"; echo ""
  for c in run bench replay explore shrink teach ping trace check clean help; do
    echo "help $c"; echo "$c --help"; echo "$c --nosuch"
  done
  for a in mesh ring host; do
    for d in fp32 fp16 bf16; do
      for o in sum max min prod; do
        echo "run --algo $a --ranks 3 --count 37 --dtype $d --op $o"
      done
    done
    for n in 1 2 4 5 8; do for c in 1 7 4097; do
      echo "run --algo $a --ranks $n --count $c --iters 2"; done; done
    for s in random:1 random:7 pct:3:2 latest; do for m in sc fifo relaxed; do
      echo "run --algo $a --ranks 3 --count 40 --schedule $s --memory-model $m"; done; done
    echo "run --algo $a --ranks 3 --count 40 --schedule random:2 --check"
    echo "run --algo $a --ranks 2 --count 17 --signals"
    echo "run --algo $a --ranks 3 --count 17 --fill random --seed 9"
    echo "run --algo $a --ranks 3 --count 17 --fill arange --tile-bytes 1024"
    echo "run --algo $a --ranks 4 --count 5000 --tile-bytes 1024 --schedule pct:1:1"
    for k in segv hang abort; do echo "run --algo $a --ranks 3 --count 40 --fault 1:$k:5 --timeout 1"; done
    echo "run --algo $a --ranks 3 --count 40 --trace FX/t-$a.cstrace"
    echo "run --algo $a --ranks 3 --count 40 --minmax pto --op max"
  done
  echo "run --algo mesh --ranks 2 --count 12 --shape 3x4 --valid 2,3"
  echo "run --algo mesh --ranks 3 --count 12 --shape 3x4 --valid 3,4 --schedule random:1"
  for bug in $("$old" run --list-bugs 2>/dev/null | awk '/^[a-z]/ {print $1}'); do
    recipe=$("$old" run --list-bugs | awk -v b="$bug" '$1==b {f=1; next} f && /with:/ && !done {sub(/^ *with: */,""); print; done=1}')
    recipe=${recipe//FILE/FX\/bug-$bug.cstrace}
    echo "run --bug $bug $recipe"
    echo "run --bug $bug --algo ring --ranks 3 --count 40 --schedule random:4"
    echo "run --bug $bug --algo mesh --ranks 2 --count 40 --schedule random:5 --check"
  done
  echo "run --list-bugs"
  for p in rd_allreduce ring_allgather; do
    echo "run --algo FX/$p.so --ranks 4 --count 33"
    echo "run --algo FX/$p.so --ranks 4 --count 33 --schedule random:3 --memory-model relaxed"
    echo "run --algo FX/${p}_bug.so --ranks 4 --count 33 --schedule random:3"
    echo "run --algo FX/${p}_bug.so --ranks 4 --count 33 --schedule random:3 --check"
    echo "run --algo FX/$p.so --ranks 3 --count 33"
    echo "run --algo FX/$p.so --ranks 4 --count 33 --signals"
    echo "run --algo FX/$p.so --ranks 4 --count 33 --trace FX/p-$p.cstrace"
    echo "explore --schedules 40 --no-shrink -- --algo FX/${p}_bug.so --ranks 4 --count 9"
    echo "bench --algo FX/$p.so --ranks 4 -b 64 -e 256 -f 4 -n 2 -w 1"
  done
  echo "run --algo FX/nosuch.so"
  echo "run --algo FX/junk.cstrace"
  for t in $(cd "$fx" && ls *.cstrace | grep -v '^t-\|^p-\|^bug-'); do
    echo "trace FX/$t"; echo "trace FX/$t --format jsonl"; echo "trace FX/$t --stats"
    echo "trace FX/$t --format chrome"; echo "trace FX/$t --rank 1 --kind notify,wait"
    echo "check FX/$t"; echo "check FX/$t --format jsonl"
    echo "replay FX/$t"
  done
  for t in ring-no-ready-barrier signal-reuse mesh-no-chunk-barrier wait-eq; do
    echo "shrink FX/$t.cstrace -o FX/s-$t.cstrace --budget 60"
  done
  echo "explore --schedules 30 -- --algo ring --ranks 3 --count 40"
  echo "explore --schedules 30 --no-shrink -- --algo ring --ranks 3 --count 40 --bug ring-no-ready-barrier"
  echo "explore --schedules 30 --check --no-shrink -- --algo mesh --ranks 3 --count 40 --bug mesh-no-chunk-barrier"
  echo "explore --schedules 20 --strategy pct --memory-model relaxed --no-shrink -- --algo ring --ranks 3 --count 40 --bug no-fence-before-notify"
  echo "teach --plain --ranks 3 --count 12"
  echo "teach --plain --ranks 4 --count 16400"
  echo "teach --plain --ranks 3 --count 12 --bug ring-no-ready-barrier --schedule random:1"
  echo "bench --ranks 2 -b 8 -e 64 -f 2 -n 2 -w 1"
  echo "bench --ranks 3 -b 8 -e 64 -f 8 -n 2 -w 1 --algo all --csv"
  echo "bench --ranks 2 -b 8 -e 8 -n 2 -w 1 -d fp16 -o max"
  echo "ping --ranks 3 --rounds 5"
  echo "clean"
  # bad values: every option of the rank-running subcommands
  # values no option takes (0 only where it is refused: bench -c 0 and
  # -w 0 are valid and would run a whole sweep)
  for v in 0 -1 9223372036854775808 18446744073709551616 0x10 '' ü 1e3 1.5 abc; do
    q=${v:-EMPTY}
    for o in --ranks --count --iters --tile-bytes --seed --timeout; do echo "run $o $q"; done
    for o in --algo --dtype --op --fill --schedule --memory-model --bug --fault --minmax --shape --valid; do echo "run $o $q"; done
    for o in -b -e -f -n -w -c -d -o --ranks --algo --tile-bytes; do
      case "$o $v" in "-c 0"|"-w 0") continue ;; esac
      echo "bench $o $q"
    done
    for o in --ranks --rounds --timeout; do echo "ping $o $q"; done
    for o in --schedules --time --strategy --memory-model --explore-seed --batch; do echo "explore $o $q -- --algo ring"; done
    echo "shrink FX/ring-no-ready-barrier.cstrace --budget $q -o FX/x.cstrace"
    for o in --ranks --count --level --algo --dtype --bug --memory-model --step; do echo "teach --plain $o $q"; done
    for o in --format --rank --kind --from --to; do echo "trace FX/ring-n4-c17-fp16-sum.cstrace $o $q"; done
    echo "check FX/ring-n4-c17-fp16-sum.cstrace --format $q"
    echo "replay FX/ring-n4-c17-fp16-sum.cstrace --timeout $q"
  done
  for f in junk short nosuch; do for c in trace check replay shrink; do echo "$c FX/$f.cstrace"; done; done
  # the run and bench paths of both kinds: every built-in, then every
  # plug-in (examples/ and tests/plugins), options each kind takes or
  # refuses (scripts/same-output.sh --only '^(run|bench) ' compares them)
  for a in $("$old" run --algo nosuch 2>&1 | sed -n 's/.*expected \(.*\), or a pa.*/\1/p' | tr -d ,); do
    for n in 1 2 3 4 8; do echo "run --algo $a --ranks $n --count 64 --iters 2"; done
    echo "run --algo $a --ranks 4 --count 96 --dtype bf16 --op min --fill random --seed 3"
    echo "run --algo $a --ranks 4 --count 96 --dtype fp16 --op prod --verbose-mode"
    echo "run --algo $a --ranks 4 --count 96 --signals single-use"
    echo "run --algo $a --ranks 4 --count 96 --signal-layout padded --iters 3"
    echo "run --algo $a --ranks 4 --count 96 --minmax propagate --op min"
    echo "run --algo $a --ranks 3 --count 48 --schedule random:2 --memory-model fifo"
    echo "run --algo $a --ranks 3 --count 48 --schedule pct:2:1 --memory-model relaxed"
    echo "run --algo $a --ranks 3 --count 48 --schedule latest --check"
    echo "run --algo $a --ranks 3 --count 48 --fault 2:segv:3 --timeout 2"
    echo "run --algo $a --ranks 3 --count 48 --fault 0:hang:9 --timeout 1"
    echo "run --algo $a --ranks 3 --count 48 --output FX/o-$a.npy"
    echo "run --algo $a --ranks 2 --count 12 --shape 3x4 --valid 2,3"
    echo "bench --algo $a --ranks 3 -b 64 -e 1024 -f 4 -n 2 -w 1"
    echo "bench --algo $a --ranks 4 -b 32 -e 128 -f 2 -n 2 -w 0 -d bf16 -o min --csv"
    echo "bench --algo $a --ranks 2 -b 16 -e 16 -n 1 -w 1 --minmax pto -o max"
    echo "bench --algo $a --ranks 3 -b 64 -e 64 -n 2 -w 1 --fault 1:segv:2 --timeout 2"
  done
  for b in $("$old" run --list-bugs 2>/dev/null | awk '/^[a-z]/ {print $1}'); do
    echo "run --bug $b --ranks 4 --count 96 --iters 3 --schedule random:2 --timeout 2"
    echo "run --bug $b --ranks 4 --count 96 --schedule random:6 --memory-model relaxed --timeout 2"
  done
  for p in $(cd "$fx" && ls *.so); do
    # a defect races in free mode (its words change from run to run):
    # a schedule fixes the order, and its timed bench rows are left out
    case $p in defect0.so|defect9.so|heldout?_0.so|port?_0.so|rd_allreduce.so|ring_allgather.so|packed_flags.so) sch= ;;
      *) sch="--schedule random:1" ;; esac
    echo "run --algo FX/$p --ranks 4 --count 48 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 2 --count 7 --iters 3 --dtype fp16 --op max $sch --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --schedule random:2 --memory-model fifo --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --schedule pct:2:1 --memory-model relaxed --check --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --fault 1:segv:4 --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --fault 2:abort:2 --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 48 --minmax pto --op max $sch --timeout 2"
    echo "run --algo FX/$p --ranks 2 --count 12 --shape 3x4 --valid 2,3 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 2 --count 12 --shape 3x4 --valid 4,4 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 48 --signal-layout padded $sch --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 48 --signals single-use $sch --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 48 --bug ring-no-ready-barrier $sch --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 48 --input FX/nosuch.npy $sch --timeout 2"
    echo "run --algo FX/$p --ranks 65 --count 48 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 4 --count 0 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --verbose-mode --fill random --seed 5 $sch --timeout 2"
    echo "run --algo FX/$p --ranks 3 --count 48 --trace FX/p2-$p.cstrace $sch --timeout 2"
    [ -n "$sch" ] || echo "bench --algo FX/$p --ranks 3 -b 16 -e 256 -f 4 -n 2 -w 1 --timeout 2"
    [ -n "$sch" ] || echo "bench --algo FX/$p --ranks 2 -b 8 -e 64 -f 8 -n 1 -w 0 -d fp16 -o max --csv --timeout 2"
    [ -n "$sch" ] || echo "bench --algo FX/$p --ranks 2 -b 8 -e 8 -n 1 -w 1 --minmax pto -o max --timeout 2"
    [ -n "$sch" ] || echo "bench --algo FX/$p --ranks 3 -b 64 -e 64 -n 2 -w 1 --fault 1:segv:2 --timeout 2"
    for x in "--staging" "--floor" "--trace-cost" "--signals self-clearing" "-c 0" "-d all" "-o all"; do
      echo "bench --algo FX/$p --ranks 2 -b 8 -e 8 -n 1 -w 1 $x --timeout 2"
    done
  done
  echo "ENV:COLLSIM_MISBEHAVE=segv run --algo FX/misbehave.so --ranks 3 --count 16 --timeout 2"
  echo "ENV:COLLSIM_MISBEHAVE=hang run --algo FX/misbehave.so --ranks 3 --count 16 --timeout 1"
  echo "ENV:COLLSIM_MISBEHAVE=abort bench --algo FX/misbehave.so --ranks 2 -b 8 -e 8 -n 1 -w 1 --timeout 1"
  echo "run --ranks 65"; echo "run --algo host --ranks 17"; echo "run --count 12 --shape 5x5"
  echo "run --algo ring --shape 3x4 --valid 2,2 --count 12"
} | sed 's|FX|'"$fx"'|g' | grep -E -- "$only" > "$cases"

# ---- run every case with each build
mask() {
  sed -E -e 's#'"$work"'/(old|new)/[0-9]+#RUN#g' -e 's#'"$work"'/fx(-new)?/#FX/#g' \
    -e '/time|latency|[0-9] ?(us|ms|ns|s)\b|GB\/s|\/s\b|per second|elapsed|took|in [0-9.]+ ?s\b/ s/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?/#/g' \
    -e '/^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ / { s/[0-9]+\.[0-9]+/#/g; s/ +#/ #/g; }' \
    -e '/^[0-9]+,[0-9]+,/ s/[0-9]+\.[0-9]+/#/g' \
    -e 's|/dev/shm/collsim-[0-9]+-[0-9]+|SHM|g' \
    -e 's/collsim-[0-9]+-[0-9]+/SHM/g' -e 's/pid [0-9]+/pid #/g' -e 's/\.explore-[0-9]+-/.explore-#-/g' \
    -e 's/-([0-9]+)\.cstrace/-#.cstrace/g'
}
runone() { # BIN TAG I LINE: the masked words into $work/TAG.I
  local bin=$1 tag=$2 i=$3 line=$4
    local d=$work/$tag/$i; rm -rf "$d"; mkdir -p "$d"
    # EMPTY stands for an empty argument
    local args=(); read -r -a args <<<"$line"
    local k
    for k in "${!args[@]}"; do [ "${args[$k]}" = EMPTY ] && args[$k]=""; done
    # ENV:NAME=VALUE first: the command runs with that variable set
    local envs=()
    while [ ${#args[@]} -gt 0 ] && [ "${args[0]#ENV:}" != "${args[0]}" ]; do
      envs+=("${args[0]#ENV:}"); args=("${args[@]:1}")
    done
    (cd "$d" && env "${envs[@]}" timeout 120 "$bin" "${args[@]}" >out 2>err </dev/null; echo "exit $?" >rc) || true
    { echo "\$ collsim $line" | mask; cat "$d/rc"; echo "-- stdout"; mask <"$d/out"; echo "-- stderr"; mask <"$d/err"; } >"$work/$tag.$i"
}
runall() { # BIN TAG CASES
  local bin=$1 tag=$2 list=$3 i=0
  mkdir -p "$work/$tag"
  while IFS= read -r line; do
    i=$((i + 1))
    runone "$bin" "$tag" "$i" "$line"
  done <"$list"
}
n=$(wc -l <"$cases")
echo "same-output: $n commands, $old then $new" >&2
# Side by side, each build on its own copy of the fixtures (some cases
# write traces there).
cp -r "$fx" "$work/fx-new"
sed 's|'"$fx"'/|'"$work"'/fx-new/|g' "$cases" > "$cases.new"
runall "$old" old "$cases" &
runall "$new" new "$cases.new"
wait
# A case whose words differ runs again with OLD (up to 10 times): when OLD
# itself then gives NEW's words, the case is nondeterministic (a race in
# free mode, which rank's wait times out first after a hang), not a change.
same=0 differ=0 racy=0
for i in $(seq 1 "$n"); do
  if cmp -s "$work/old.$i" "$work/new.$i"; then same=$((same + 1)); continue; fi
  hit=0
  for k in 1 2 3 4 5 6 7 8 9 10; do
    runone "$old" again "$i" "$(sed -n "${i}p" "$cases")"
    if cmp -s "$work/again.$i" "$work/new.$i"; then hit=$k; break; fi
  done
  if [ $hit != 0 ]; then
    racy=$((racy + 1))
    echo "nondeterministic (OLD gave NEW's words on rerun $hit): $(head -1 "$work/new.$i")"
  else
    differ=$((differ + 1))
    if [ $differ -le 10 ]; then diff -u "$work/old.$i" "$work/new.$i" | head -30 || true; fi
  fi
done
echo "same: $same of $n commands; nondeterministic, NEW's words also OLD's: $racy; differ: $differ"
[ $differ -eq 0 ]
