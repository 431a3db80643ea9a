#!/usr/bin/env bash
# attack-sweep.sh - a hostile user's bad-option and bad-path sweep over
# every subcommand of collsim (and collsim-mpi when built); ctest entry
# `attack_sweep`.
#
#   scripts/attack-sweep.sh [--mpi COLLSIM_MPI] [COLLSIM]
#
# COLLSIM defaults to build/collsim; --mpi (default: build-mpi/collsim-mpi
# when it exists; --mpi '' for none) adds collsim-mpi's cases, run as MPI
# singletons (no mpirun: every case is refused before the job starts).
#
# Numbers: every numeric option of run, replay, explore, shrink, trace,
# teach --plain, bench, verify, ping and collsim-mpi run and bench, and
# the numbers inside --fault and --schedule, is given 0, -1, 2^63, 2^64,
# 0x10, an empty string and a unicode string (fullwidth digits), each one
# the option does not accept; some of each subcommand's also ' 5', '5 ',
# '+5', '1e2' and an Arabic-Indic 5. Paths: every file a subcommand reads or
# writes, and every directory it writes into, is given a private FIFO, a
# private character device (mknod, only as root: never the real
# /dev/null), a directory, another user's symbolic link (only as root:
# chown -h nobody) and the subcommand's own input. Every case must exit 2
# with exactly one line on stderr that names the subcommand and the
# value, within 10 s (a FIFO must not block), and must leave every file
# of the sweep as it was: type, inode, size, mode, owner, content, and no
# new name in any directory (stat before and after). Kills (root, in a
# private mount namespace): every subcommand killed with SIGKILL mid-run,
# then a plain `collsim clean`: no process, /dev/shm object or temporary
# file may be left. Prints each failure and "attack-sweep: P/N passed";
# exit 0 when all pass, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mpi=
[ -x "$here/../build-mpi/collsim-mpi" ] && mpi=$here/../build-mpi/collsim-mpi
. "$here/opts.sh"
opts_parse attack-sweep.sh "mpi" "$@"; set -- "${opts_rest[@]}"
cs=$(realpath "${1:-$here/../build/collsim}")
[ -x "$cs" ] || die "no collsim binary at $cs"
[ -z "$mpi" ] || mpi=$(realpath "$mpi")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
root=0; [ "$(id -u)" = 0 ] && root=1

D=$(mktemp -d "${TMPDIR:-/tmp}/attack-sweep.XXXXXX")
E=$(mktemp "${TMPDIR:-/tmp}/attack-sweep-err.XXXXXX")
trap 'rm -rf "$D" "$E"' EXIT
mkdir "$D/cwd" "$D/dir"
cd "$D/cwd"
# The fixtures: a trace and a .npy of a small run, a failing trace for
# shrink, and the hostile paths.
"$cs" run --ranks 2 --count 17 --iters 1 --trace "$D/t.cstrace" \
  --output "$D/in.npy" >/dev/null
"$cs" run --algo ring --ranks 3 --count 40 --bug ring-no-ready-barrier \
  --schedule random:1 --trace "$D/bad.cstrace" >/dev/null 2>&1 || true
mkfifo -m 600 "$D/fifo"
echo precious >"$D/precious"
hostile=(fifo dir) other_file=()
if [ $root = 1 ]; then
  mknod -m 600 "$D/dev" c 1 5 # a private zero device: endless reads
  ln -s "$D/precious" "$D/otherlink"
  chown -h nobody "$D/otherlink"
  hostile+=(dev otherlink)
  # another user's regular file: an output never replaces it
  echo theirs >"$D/otherfile"; chmod 644 "$D/otherfile"; chown nobody "$D/otherfile"
  other_file=(otherfile)
fi
T=$D/t.cstrace B=$D/bad.cstrace N=$D/in.npy

# The state of every fixture: name, type, inode, size, mode, owner, links,
# content hash of regular files, and every name in the sweep's dirs.
snap() {
  (cd "$D" && find . -printf '%p %y %i %s %m %U %n %l\n' | sort
   find "$D" -type f -exec sha1sum {} + | sort)
}

pass=0 total=0
fail() {
  echo "FAIL: $*"
  echo "      exit $rc; stderr: $(head -c 600 "$E" | sed 's/^/| /')"
}

# one SUB VALUE CMD...: a case; SUB is the word the line must name
# ("collsim SUB:" or collsim-mpi's "collsim mpi SUB:"), VALUE what it must
# quote (an empty value as '').
one() {
  local sub=$1 val=$2; shift 2
  total=$((total + 1))
  local before; before=$(snap)
  rc=0
  timeout -k 2 10 "$@" </dev/null >/dev/null 2>"$E" || rc=$?
  local lines; lines=$(wc -l <"$E")
  local err; err=$(cat "$E")
  local want=$val; [ -z "$val" ] && want="''"
  if [ $rc -ne 2 ]; then fail "$*: expected exit 2"
  elif [ "$lines" -ne 1 ]; then fail "$*: expected one line, got $lines"
  elif [[ $err != "collsim $sub:"* && $err != "collsim mpi $sub:"* &&
          $err != "collsim-mpi $sub:"* ]]; then
    fail "$*: the line does not start 'collsim $sub:'"
  elif [[ $err != *"$want"* ]]; then fail "$*: the line does not name '$want'"
  elif [ "$before" != "$(snap)" ]; then
    fail "$*: files changed: $(diff <(echo "$before") <(snap) | head -4 | tr '\n' ' ')"
  else pass=$((pass + 1))
  fi
}

# Numbers ---------------------------------------------------------------
big63=9223372036854775808 big64=18446744073709551616
values=(0 -1 $big63 $big64 0x10 "" "１６")
# num SUB OPT SKIP CMD...: OPT given every value but those in SKIP
# (space-separated: values the option accepts), after CMD.
num() {
  local sub=$1 opt=$2 skip=" $3 "; shift 3
  for v in "${values[@]}"; do
    [[ $skip == *" $v "* ]] && continue
    one "$sub" "$v" "$@" "$opt" "$v"
  done
}
# pat SUB OPT FORMAT SKIP CMD...: as num, the value put into FORMAT's @.
pat() {
  local sub=$1 opt=$2 fmt=$3 skip=" $4 "; shift 4
  for v in "${values[@]}"; do
    [[ $skip == *" $v "* ]] && continue
    one "$sub" "${fmt//@/$v}" "$@" "$opt" "${fmt//@/$v}"
  done
}
run=("$cs" run --ranks 2 --count 17 --iters 1)
for o in --ranks --count --iters --tile-bytes --timeout; do
  num run $o "" "${run[@]}"
done
num run --seed "0 $big63" "${run[@]}"
pat run --fault "@:segv" "0" "${run[@]}"
pat run --fault "0:segv:@" "0 $big63" "${run[@]}"
pat run --shape "@x17" "" "${run[@]}"
pat run --shape "1x@" "" "${run[@]}"
pat run --valid "@,1" "" "${run[@]}" --algo mesh --shape 1x17
schedules=("random:@" "pct:@:1" "pct:1:@" "pct:1:1:@" "deviate:@.0>0.0"
           "deviate:0.@>1.0" "deviate:0#@>1.0")
for s in "${schedules[@]}"; do
  case $s in
    random:@|pct:@:1|deviate:0.@*) skip="0 $big63" ;;
    deviate:@.0*) skip=0 ;;
    pct:1:1:@|deviate:0#@*) skip=$big63 ;; # a step or landing count
    *) skip= ;;
  esac
  pat run --schedule "$s" "$skip" "${run[@]}"
done
# Trailing garbage, signs, spaces and a number cut by a buffer's end.
long0=$(printf '0%.0s' {1..300})
for s in "random:5x" "random:+5" "random: 5" "random: -1" "pct:1:2:3x" \
         "random:${long0}5junk" "deviate:0.1>1.0x" "deviate:+0.1>1.0"; do
  one run "$s" "${run[@]}" --schedule "$s"
done
num replay --timeout "" "$cs" replay "$T"
ex=("$cs" explore --ranks 2 --count 17 --schedules 1 -o "$D/dir")
for o in --schedules --time -j --batch; do num explore $o "" "${ex[@]}"; done
num explore --explore-seed "0" "${ex[@]}"
num explore --ranks "" "${ex[@]}"
num explore --count "" "${ex[@]}"
num shrink --budget "" "$cs" shrink "$B" -o "$D/dir/min.cstrace"
num trace --rank "0" "$cs" trace "$T"
num trace --from "0 $big63" "$cs" trace "$T"
num trace --to "0 $big63" "$cs" trace "$T"
te=("$cs" teach --plain)
for o in --ranks --count --level; do num teach $o "" "${te[@]}"; done
pat teach --schedule "random:@" "0 $big63" "${te[@]}"
pat teach --schedule "pct:1:@" "" "${te[@]}"
be=("$cs" bench -b 8 -e 8 -n 1 -w 0 --ranks 2 --algo ring)
for o in -b -e -f -n --ranks --tile-bytes --timeout; do num bench $o "" "${be[@]}"; done
num bench -w "0" "${be[@]}"
num bench -c "0" "${be[@]}"
ve=("$cs" verify --ranks 2 --count 2 -o "$D/dir")
for o in --max-classes --budget --ranks --count --iters; do num verify $o "" "${ve[@]}"; done
for o in --ranks --rounds --timeout; do num ping $o "" "$cs" ping; done
num verify -j "" "${ve[@]}"
pat bench --fault "@:segv" "0" "${be[@]}"
pat ping --fault "@:segv" "0" "$cs" ping
# Near misses: a space either side, a sign, an exponent, a non-ASCII
# digit (Arabic-Indic five), none of them a number any option takes.
values=(" 5" "5 " "+5" "1e2" "٥")
for o in --ranks --count --timeout; do num run $o "" "${run[@]}"; done
num replay --timeout "" "$cs" replay "$T"
num explore -j "" "${ex[@]}"
num verify -j "" "${ve[@]}"
num shrink --budget "" "$cs" shrink "$B" -o "$D/dir/min.cstrace"
num trace --from "" "$cs" trace "$T"
num teach --count "" "${te[@]}"
num bench -b "" "${be[@]}"
num ping --rounds "" "$cs" ping
values=(0 -1 $big63 $big64 0x10 "" "１６")
if [ -n "$mpi" ]; then
  for o in --count --iters --tile-bytes --timeout; do num run $o "" "$mpi" run; done
  num run --seed "0 $big63" "$mpi" run
  for o in -b -e -f -n; do num bench $o "" "$mpi" bench; done
  num bench -w "0" "$mpi" bench
fi

# Words: every option that takes a name, given an empty string, a
# number, hex, 2^64 and a unicode word (none of them a name it knows).
wvalues=("" 0 -1 0x10 $big64 "ｒｉｎｇ")
# word SUB OPT CMD...: OPT given every word value, after CMD.
word() {
  local sub=$1 opt=$2; shift 2
  for v in "${wvalues[@]}"; do one "$sub" "$v" "$@" "$opt" "$v"; done
}
for o in --algo --dtype --op --fill --memory-model --bug --signals --minmax \
         --signal-layout; do
  word run $o "${run[@]}"
done
for o in --strategy --memory-model; do word explore $o "${ex[@]}"; done
for o in --format --kind; do word trace $o "$cs" trace "$T"; done
word check --format "$cs" check "$T"
for o in --algo --dtype --bug --memory-model; do word teach $o "${te[@]}"; done
for o in -d -o --algo --signals --minmax; do word bench $o "${be[@]}"; done
word verify --memory-model "${ve[@]}"

# An unknown option, once per subcommand.
for c in "run ${run[*]:2}" "replay $T" "explore" "shrink $B" "trace $T" \
         "check $T" "teach --plain" "bench" "verify" "ping" "clean"; do
  read -r sub rest <<<"$c"
  one "$sub" --bogus "$cs" $sub $rest --bogus
done
[ -z "$mpi" ] || { one run --bogus "$mpi" run --bogus; one bench --bogus "$mpi" bench --bogus; }

# Paths -----------------------------------------------------------------
# out SUB OPT INPUT CMD...: a file SUB writes, given every hostile path
# and INPUT (its own input, or "" when it has none), after CMD.
out() {
  local sub=$1 opt=$2 input=$3; shift 3
  for h in "${hostile[@]}" "${other_file[@]}"; do
    one "$sub" "$D/$h" "$@" "$opt" "$D/$h"
  done
  one "$sub" "" "$@" "$opt" "" # no name at all
  [ -z "$input" ] || one "$sub" "$input" "$@" "$opt" "$input"
}
# inp SUB OPT CMD... : a file SUB reads (OPT "" for a positional one); the
# input trace itself is the wrong kind for an .npy or a plug-in.
inp() {
  local sub=$1 opt=$2; shift 2
  for h in "${hostile[@]}" "${extra_in[@]}"; do
    if [ -z "$opt" ]; then one "$sub" "$D/$h" "$@" "$D/$h"
    else one "$sub" "$D/$h" "$@" "$opt" "$D/$h"; fi
  done
  if [ -z "$opt" ]; then one "$sub" "" "$@" ""; else one "$sub" "" "$@" "$opt" ""; fi
}
# dir SUB OPT CMD...: a directory SUB writes into: a FIFO, a device, a
# regular file, another user's link to one.
dirs() {
  local sub=$1 opt=$2; shift 2
  local h list=(fifo precious)
  [ $root = 1 ] && list+=(dev otherlink)
  for h in "${list[@]}"; do
    if [ -z "$opt" ]; then one "$sub" "$D/$h" "$@" "$D/$h"
    else one "$sub" "$D/$h" "$@" "$opt" "$D/$h"; fi
  done
  if [ -z "$opt" ]; then one "$sub" "" "$@" ""; else one "$sub" "" "$@" "$opt" ""; fi
}
extra_in=(t.cstrace)
out run --output "$N" "${run[@]}" --input "$N"
out run --trace "$N" "${run[@]}" --input "$N"
inp run --input "${run[@]}"
inp run --algo "${run[@]}"
inp bench --algo "${be[@]}"
inp teach --algo "${te[@]}"
extra_in=(in.npy)
out replay --output "$T" "$cs" replay "$T"
out replay --trace "$T" "$cs" replay "$T"
inp replay "" "$cs" replay
inp replay --input "$cs" replay "$T"
out shrink -o "$B" "$cs" shrink "$B"
inp shrink "" "$cs" shrink
out trace -o "$T" "$cs" trace "$T"
out trace --output "$T" "$cs" trace "$T" --stats
inp trace "" "$cs" trace
inp check "" "$cs" check
out teach --trace "" "${te[@]}"
out ping --trace "" "$cs" ping
dirs explore -o "$cs" explore --ranks 2 --count 17 --schedules 1
dirs verify -o "$cs" verify --ranks 2 --count 2
dirs clean "" "$cs" clean
if [ -n "$mpi" ]; then
  out run --trace "$N" "$mpi" run --input "$N"
  out run --output "$N" "$mpi" run --input "$N"
  extra_in=(t.cstrace)
  inp run --input "$mpi" run
fi

# Kept modes ------------------------------------------------------------
# kept SUB OPT CMD...: a file SUB writes that exists already, 0600 and
# ours: the write succeeds (exit 0) and the file keeps its mode and owner,
# with the new content. (Another user's file is refused: `out` above.)
kept() {
  local sub=$1 opt=$2; shift 2
  local f
  for f in 600 640; do
    total=$((total + 1))
    mkdir -p "$D/kept"; echo old >"$D/kept/out"; chmod "$f" "$D/kept/out"
    f=$D/kept/out
    local want; want=$(stat -c '%a %U' "$f")
    rc=0
    timeout -k 2 60 "$@" "$opt" "$f" </dev/null >/dev/null 2>"$E" || rc=$?
    if [ $rc -ne 0 ]; then fail "$* $opt $f ($want): expected exit 0"
    elif [ "$(stat -c '%a %U' "$f")" != "$want" ]; then
      fail "$* $opt $f: mode and owner $want became $(stat -c '%a %U' "$f")"
    elif echo old | cmp -s - "$f"; then fail "$* $opt $f: not written"
    else pass=$((pass + 1))
    fi
    rm -rf "$D/kept"
  done
}
kept run --output "${run[@]}"
kept run --trace "${run[@]}"
kept replay --output "$cs" replay "$T"
kept replay --trace "$cs" replay "$T"
kept shrink -o "$cs" shrink "$B"
kept trace -o "$cs" trace "$T"
kept trace --output "$cs" trace --stats "$T"
kept teach --trace "${te[@]}"
kept ping --trace "$cs" ping --rounds 10

# Kills -----------------------------------------------------------------
# Each subcommand killed with SIGKILL mid-run, then `collsim clean`: no
# process it started (found by a marker in their environment), no
# /dev/shm object and no temporary file (in /tmp or next to an output)
# may be left. Root only: each case runs in a private mount namespace
# with /dev/shm and /tmp of its own (tmpfs), so other collsim runs on the
# machine neither show nor are swept. collsim-mpi is not killed here
# (its processes belong to mpirun's job: tests/test_mpi.sh kills a rank).
# killcase NAME SECONDS CMD...: CMD (stdin: a pipe that stays open)
# killed after SECONDS; it must still be running then.
killcase() {
  local name=$1 after=$2; shift 2
  total=$((total + 1))
  rm -rf "$K/out"; mkdir "$K/out"
  local why
  why=$(unshare -m --propagation private bash -c '
    cs=$1 after=$2 mark=$3 k=$4; shift 4
    mount -t tmpfs -o size=512m none /dev/shm && mount -t tmpfs none /tmp ||
      { echo "no private /dev/shm and /tmp"; exit; }
    exec 3< <(exec sleep 60); sp=$!
    COLLSIM_SWEEP_MARK=$mark "$@" <&3 >/dev/null 2>&1 &
    pid=$!
    sleep "$after"
    kill -0 "$pid" 2>/dev/null || { echo "it ended before the kill"; exit; }
    kill -9 "$pid"; wait "$pid" 2>/dev/null
    "$cs" clean >/dev/null 2>&1
    left=
    for _ in $(seq 30); do # the killed ranks and children may take a moment
      left=$(grep -lsz "^COLLSIM_SWEEP_MARK=$mark\$" /proc/[0-9]*/environ |
             cut -d/ -f3 | tr "\n" " ")
      [ -z "$left" ] && break
      sleep 0.1
    done
    [ -z "$left" ] || echo "processes left: $left"
    [ -z "$(ls -A /dev/shm)" ] || echo "/dev/shm left: $(ls -A /dev/shm | head -3)"
    [ -z "$(ls -A /tmp)" ] || echo "/tmp left: $(ls -A /tmp | head -3)"
    t=$(find "$k/out" \( -name ".explore-*" -o -name ".shrink-*" -o \
             -name "collsim-*" \) -print | head -3)
    [ -z "$t" ] || echo "temporaries left: $t"
    for p in $(grep -lsz "^COLLSIM_SWEEP_MARK=$mark\$" /proc/[0-9]*/environ |
               cut -d/ -f3); do kill -9 "$p"; done
    kill "$sp"
  ' _ "$cs" "$after" "attack-$$-$total" "$K" "$@" 2>&1)
  if [ -n "$why" ]; then
    echo "FAIL kill $name: $why"
  else pass=$((pass + 1))
  fi
}
if [ $root = 1 ] && unshare -m --propagation private true 2>/dev/null; then
  K=$(mktemp -d /var/tmp/attack-kill.XXXXXX)
  trap 'rm -rf "$D" "$E" "$K"' EXIT
  # about 96 MB: check reads some 10 M records/s, so it runs for about
  # 0.16-0.3 s and is still running at its kill at 0.05 s (at 1,500 calls
  # it once ended first on CI); teach --plain at 8 ranks x 1M elements
  # takes about 1 s and is killed at 0.3 s
  "$cs" run --ranks 3 --count 64 --iters 6000 --schedule random:1 \
    --trace "$K/long.cstrace" >/dev/null
  # 300 calls at 4 ranks: shrink replays all of them first and takes some
  # 2.5 s (one call at 3 ranks shrank in 0.5 s and once ended first on CI);
  # verify of the ring at 3 ranks with one call is one class (0.3 s): with
  # 2 calls under sc it runs past 20 s
  "$cs" run --algo ring --ranks 4 --count 4000 --iters 300 \
    --bug ring-no-ready-barrier --schedule random:1 \
    --trace "$K/bad.cstrace" >/dev/null 2>&1 || true
  O=$K/out
  killcase run 0.5 "$cs" run --ranks 4 --count 4096 --iters 1000000
  killcase "run --trace" 0.5 "$cs" run --ranks 3 --count 4096 --iters 1000000 \
    --schedule random:1 --trace "$O/r.cstrace"
  killcase "run --check" 0.5 "$cs" run --ranks 3 --count 4096 --iters 100000 --check
  killcase replay 0.5 "$cs" replay "$K/long.cstrace"
  killcase "replay --trace" 0.5 "$cs" replay "$K/long.cstrace" --trace "$O/re.cstrace"
  killcase explore 0.5 "$cs" explore --ranks 3 --count 40 --schedules 100000 -o "$O"
  killcase "explore -j 2" 0.5 "$cs" explore --ranks 3 --count 40 --schedules 100000 -j 2 -o "$O"
  killcase shrink 0.5 "$cs" shrink "$K/bad.cstrace" -o "$O/min.cstrace"
  killcase trace 0.3 "$cs" trace "$K/long.cstrace"
  killcase "trace --stats" 0.1 "$cs" trace --stats "$K/long.cstrace"
  killcase check 0.05 "$cs" check "$K/long.cstrace"
  killcase teach 0.3 "$cs" teach --plain --schedule random:1 --ranks 8 --count 1000000 --trace "$O/t.cstrace"
  killcase bench 0.5 "$cs" bench -b 8 -e 64M
  killcase "bench --trace-cost" 0.5 "$cs" bench -b 8 -e 8 -n 100000 --trace-cost
  killcase verify 0.5 "$cs" verify --ranks 3 --count 40 --iters 2 --memory-model sc -o "$O"
  killcase ping 0.5 "$cs" ping --rounds 10000000
  killcase "verify -j 2" 0.5 "$cs" verify --ranks 3 --count 40 --iters 2 --memory-model sc -j 2 -o "$O"
  killcase "explore --check" 0.25 "$cs" explore --ranks 3 --count 40 --schedules 100000 --check -o "$O"
  killcase "replay --output" 0.25 "$cs" replay "$K/long.cstrace" --output "$O/r.npy"
  # a plug-in rank's setsid children hold the region: clean ends them
  mis=$(dirname "$cs")/plugins/misbehave.so
  [ ! -f "$mis" ] || killcase "run, setsid plug-in" 0.5 env COLLSIM_MISBEHAVE=setsid \
    "$cs" run --algo "$mis" --ranks 2 --count 8 --iters 1000000 --timeout 30
else
  echo "attack-sweep: the kill cases need root and a private mount namespace: not run"
fi

echo "attack-sweep: $pass/$total passed"
[ "$pass" = "$total" ]
