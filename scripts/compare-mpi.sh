#!/usr/bin/env bash
# compare-mpi.sh - collsim's allreduce next to Open MPI's MPI_Allreduce on
# the same machine, side by side in one run.
#
#   scripts/compare-mpi.sh [--ranks N] [--sizes "8 4K 64K 1M 16M 64M"]
#                        [--repeats R] [--iters K] [--warmup W]
#                        [--algo A|all] [--mpirun-args "ARGS"]
#                        [--settle SECONDS] [--quiet-wait SECONDS]
#                        [--raw FILE] [--old BIN]
#       scripts/compare-mpi.sh --table FILE
#
# Installs Open MPI with apt-get if it is missing (openmpi-bin
# libopenmpi-dev; as root or through sudo), builds collsim
# (scripts/setup.sh build) and the CMake target mpi_allreduce_timer
# (scripts/mpi_allreduce_timer.c, in the Open MPI tree build-mpi/; the
# default build never needs MPI), finds mpirun flags that work here, then
# runs, for each repeat and each size, `collsim bench --csv` and then the
# MPI timer (A, B, A, B, ...): fp32, sum, N ranks, K timed calls after W
# warmup calls. Each tool reports the median over its calls of the slowest
# rank's time per call; the table shows, per size, the median of that over
# the repeats: every collsim algorithm's time (- where a size does not
# meet its precondition), the best one's name, time and busbw, Open MPI's
# time and busbw, and the ratio collsim busbw / MPI busbw (= MPI time /
# collsim time; above 1 collsim is faster). --raw FILE keeps every run's
# rows (CSV, with the repeat number first); --table FILE prints the table
# of such a file again, without running anything. --old BIN also
# runs another collsim binary (an older build) right after this one, in
# the same rounds (collsim, old, MPI, ...), and adds its best time and its
# busbw ratio against the same MPI runs, so old and new are compared in one
# run.
#
# Between two runs the script sleeps --settle seconds (default 1): on a
# 2-core machine collsim's spinning ranks lose whole milliseconds per call
# when anything else still holds a core, and right after mpirun returns
# something does for a moment (measured: a 15 us call took 2 ms). The
# same sleep measures how busy the machine is (/proc/stat): while other
# work keeps it more than 25% busy, the script waits, up to --quiet-wait
# seconds (default 120) per run, and the table's header reports the
# busiest second seen before a run. Shared or noisy machines show up there.
#
# What differs between the two sides: collsim times calls back to back on
# data already in its windows (in place), each rank timing its own call;
# the MPI timer puts an MPI_Barrier before each call and reduces out of
# place. Both verify their results (collsim against its oracle, the timer
# against exact integer sums) and the script stops if either is wrong.
set -euo pipefail
here=$PWD # relative paths given as options are the caller's
cd "$(dirname "$0")/.."

ranks=2
sizes="8 4K 64K 1M 16M 64M"
repeats=3
iters=20
warmup=5
algo=all
mpirun_args=
settle=1
quiet_wait=120
raw=
old=
table=

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}
die() { echo "compare-mpi: $*" >&2; exit 2; }
whole() {
  if ! [[ $2 =~ ^[0-9]+$ ]] || [ "$2" -lt "$3" ] || [ "$2" -gt "$4" ]; then
    die "$1 '$2' is not accepted: expected a whole number from $3 to $4"
  fi
}

while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || case "$1" in -h|--help) ;; *) die "$1 needs a value";; esac
  case "$1" in
    --ranks) whole --ranks "$2" 1 64; ranks=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --repeats) whole --repeats "$2" 1 1000; repeats=$2; shift 2 ;;
    --iters) whole --iters "$2" 1 1000000; iters=$2; shift 2 ;;
    --warmup) whole --warmup "$2" 0 1000000; warmup=$2; shift 2 ;;
    --algo) algo=$2; shift 2 ;;
    --mpirun-args) mpirun_args=$2; shift 2 ;;
    --raw) raw=$2; [[ $raw = /* ]] || raw=$here/$raw; shift 2 ;;
    --table) table=$2; [[ $table = /* ]] || table=$here/$table
      [ -f "$table" ] && [ -r "$table" ] || die "--table '$2' is not accepted: expected a readable file written by --raw"
      shift 2 ;;
    --old) old=$2; [[ $old = /* ]] || old=$here/$old
      [ -x "$old" ] || die "--old '$2' is not accepted: expected an executable collsim"
      shift 2 ;;
    --quiet-wait) whole --quiet-wait "$2" 0 86400; quiet_wait=$2; shift 2 ;;
    --settle) [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--settle '$2' is not accepted: expected seconds >= 0"
      settle=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$sizes" ] || die "--sizes is empty"
for s in $sizes; do
  [[ $s =~ ^[0-9]+[KMGkmg]?$ ]] || die "--sizes: '$s' is not accepted: expected bytes with an optional K, M or G suffix"
done

# ---- the table (from the runs below, or --table FILE)
# rows: rep,size,count,type,redop,algo,ranks,time_us,algbw,busbw,wrong
print_table() {
sort -t, -k2,2n -k6,6 -k8,8g "$1" | awk -F, -v n="$ranks" -v old="$old" '
  function flush() {
    if (cnt == 0) return
    med = v[int(cnt / 2) + 1]   # upper median, as the tools use
    t[size, algo] = med
    if (!(size in seen)) { seen[size] = 1; order[++nsizes] = size }
    if (algo != "ompi" && algo !~ /^old/ && !(algo in isalgo)) isalgo[algo] = 1
    cnt = 0
  }
  $1 !~ /^[0-9]+$/ { next }
  { if ($2 != size || $6 != algo) { flush(); size = $2; algo = $6 }
    v[++cnt] = $8
    if ($11 != "" && $11 != 0) bad++ }
  END {
    flush()
    # the columns: the three of #2161 first, then the rest as bench runs them
    na = 0
    split("mesh ring host ring-push twophase ring-nb onephase host-push ring-bidir ibing", pref, " ")
    for (j = 1; j in pref; j++)
      if (pref[j] in isalgo) { names[++na] = pref[j]; delete isalgo[pref[j]] }
    for (a in isalgo) names[++na] = a
    f = n > 1 ? 2 * (n - 1) / n : 0
    printf "#%11s", "size(B)"
    for (j = 1; j <= na; j++) printf " %10s", substr(names[j], 1, 10)
    printf "  %10s %10s %11s %10s %11s %11s", "best", "best(us)", "busbw(GB/s)",
      "ompi(us)", "busbw(GB/s)", "busbw ratio"
    if (old) printf " %12s %10s", "old best(us)", "old ratio"
    printf "\n"
    for (k = 1; k <= nsizes; k++) {
      s = order[k]; best = ""; bt = 0
      printf "%12d", s
      for (j = 1; j <= na; j++) {
        a = names[j]
        if ((s, a) in t) printf " %10.2f", t[s, a]; else printf " %10s", "-"
        if ((s, a) in t && (best == "" || t[s, a] < bt)) { best = a; bt = t[s, a] }
      }
      mt = t[s, "ompi"]
      cb = bt > 0 ? s / (bt * 1e3) * f : 0
      mb = mt > 0 ? s / (mt * 1e3) * f : 0
      printf "  %10s %10.2f %11.3f %10.2f %11.3f %11.3f", best, bt, cb, mt, mb,
        (bt > 0 ? mt / bt : 0)
      if (old) {
        ot = 0
        for (j = 1; j <= na; j++)
          if ((s, "old" names[j]) in t && (ot == 0 || t[s, "old" names[j]] < ot))
            ot = t[s, "old" names[j]]
        printf " %12.2f %10.3f", ot, (ot > 0 ? mt / ot : 0)
      }
      printf "\n"
    }
    if (bad) print "# WARNING: some runs reported wrong elements"
  }'
}
if [ -n "$table" ]; then
  [ -z "$old" ] || die "--old is not accepted with --table: the file says whether an old build ran"
  ranks=$(awk -F, '$1 ~ /^[0-9]+$/ { print $7 }' "$table" | sort -u)
  [ -n "$ranks" ] || die "--table '$table' is not accepted: it holds no rows written by --raw"
  [ "$(wc -l <<<"$ranks")" = 1 ] ||
    die "--table '$table' is not accepted: its rows are of several rank counts ($(echo $ranks)); one --raw file holds one"
  awk -F, '$1 ~ /^[0-9]+$/ && $6 ~ /^old/ { f = 1 } END { exit !f }' "$table" && old=yes
  echo "# collsim vs Open MPI, from $table: allreduce fp32 sum, $ranks ranks"
  echo "# time: median over repeats of each run's median over calls of the slowest rank's time per call; busbw = size / time * 2(N-1)/N"
  echo "# each algorithm column: its time per call in us (-: the size does not meet its precondition)"
  print_table "$table"
  exit 0
fi

# ---- Open MPI, collsim, the timer
sudo=
[ "$(id -u)" -ne 0 ] && sudo=sudo
missing=()
for p in openmpi-bin libopenmpi-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare-mpi: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi
scripts/setup.sh build
cmake -S . -B build-mpi -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOLLSIM_MPI=ON \
  -DMPI_C_COMPILER=mpicc.openmpi >/dev/null
cmake --build build-mpi --target mpi_allreduce_timer >/dev/null
timer=build-mpi/mpi_allreduce_timer

# ---- mpirun flags that work on this machine
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
base=(-np "$ranks" --oversubscribe)
[ "$(id -u)" -eq 0 ] && base+=(--allow-run-as-root)
candidates=(
  "--mca pml ob1 --mca btl self,vader"
  "--mca pml ob1 --mca btl self,vader --mca btl_vader_single_copy_mechanism none"
  "--mca pml ob1 --mca btl self,sm"
  "--mca pml ob1 --mca btl self,sm --mca smsc ^cma"
  ""
)
[ -n "$mpirun_args" ] && candidates=("$mpirun_args")
# A set that runs quietly wins; failing that, the first that runs at all.
flags=
found=0
for quiet in 1 0; do
  for c in "${candidates[@]}"; do
    # shellcheck disable=SC2086
    if out=$(timeout 120 mpirun "${base[@]}" $c "$timer" -n 2 -w 1 8 64K 2>&1) &&
       grep -q '^8,2,fp32,sum,ompi,' <<<"$out" &&
       { [ $quiet -eq 0 ] || ! grep -qi 'warn\|error' <<<"$out"; }; then
      flags=$c
      found=1
      break 2
    fi
  done
done
if [ $found -eq 0 ]; then
  echo "compare-mpi: no mpirun flags worked; the last attempt printed:" >&2
  echo "$out" >&2
  exit 3
fi
mpirun_cmd=(mpirun "${base[@]}")
# shellcheck disable=SC2206
[ -n "$flags" ] && mpirun_cmd+=($flags)

# ---- interleaved runs
cpu_ticks() { awk '/^cpu /{print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }
max_busy=0
# Sleeps --settle seconds; then, while the machine was more than 25% busy
# during that sleep, sleeps again (up to --quiet-wait seconds in all).
settle_quietly() {
  local i0 t0 i1 t1 busy start=$SECONDS said=0
  while :; do
    read -r i0 t0 < <(cpu_ticks)
    sleep "$settle"
    read -r i1 t1 < <(cpu_ticks)
    busy=0
    [ "$t1" -gt "$t0" ] && busy=$((100 - 100 * (i1 - i0) / (t1 - t0)))
    if [ "$busy" -le 25 ] || [ $((SECONDS - start)) -ge "$quiet_wait" ] ||
       [ "$settle" = 0 ]; then
      break
    fi
    [ $said -eq 1 ] ||
      echo "compare-mpi: the machine is $busy% busy with other work; waiting (up to ${quiet_wait} s)" >&2
    said=1
  done
  [ "$busy" -gt "$max_busy" ] && max_busy=$busy
  return 0
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=$tmp/rows
: >"$rows"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
nsz=$(wc -w <<<"$sizes")
for rep in $(seq 1 "$repeats"); do
  i=0
  for s in $sizes; do
    i=$((i + 1))
    echo "compare-mpi: repeat $rep/$repeats, size $s ($i/$nsz): collsim" >&2
    settle_quietly
    if ! build/collsim bench --csv -b "$s" -e "$s" -n "$iters" -w "$warmup" \
        --ranks "$ranks" -d fp32 -o sum --algo "$algo" -c 1 >"$tmp/a"; then
      echo "compare-mpi: collsim bench failed (wrong result or aborted) at size $s" >&2
      exit 1
    fi
    if [ -n "$old" ]; then
      echo "compare-mpi: repeat $rep/$repeats, size $s ($i/$nsz): old collsim" >&2
      settle_quietly
      if ! "$old" bench --csv -b "$s" -e "$s" -n "$iters" -w "$warmup" \
          --ranks "$ranks" -d fp32 -o sum --algo "$algo" -c 1 >"$tmp/o"; then
        echo "compare-mpi: old collsim bench failed at size $s" >&2
        exit 1
      fi
      tail -n +2 "$tmp/o" | awk -F, -v OFS=, '{ $5 = "old" $5; print }' |
        sed "s/^/$rep,/" >>"$rows"
    fi
    echo "compare-mpi: repeat $rep/$repeats, size $s ($i/$nsz): Open MPI" >&2
    settle_quietly
    if ! "${mpirun_cmd[@]}" "$timer" -n "$iters" -w "$warmup" "$s" >"$tmp/b"; then
      echo "compare-mpi: the MPI timer failed (wrong result or aborted) at size $s" >&2
      exit 1
    fi
    tail -n +2 "$tmp/a" | sed "s/^/$rep,/" >>"$rows"
    tail -n +2 "$tmp/b" | sed "s/^/$rep,/" >>"$rows"
  done
done

# ---- medians over repeats, then the table
if [ -n "$raw" ]; then
  { echo "repeat,size,count,type,redop,algo,ranks,time_us,algbw_gbps,busbw_gbps,wrong"
    cat "$rows"; } >"$raw"
fi
cpus=$(nproc)
model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
ompi=$(mpirun --version 2>/dev/null | head -n 1)
echo "# collsim vs Open MPI: allreduce fp32 sum, $ranks ranks, $iters timed calls after $warmup warmup, $repeats repeats interleaved (collsim, MPI, collsim, MPI, ...)"
echo "# time: median over repeats of each run's median over calls of the slowest rank's time per call; busbw = size / time * 2(N-1)/N"
echo "# collsim: calls back to back, in place, data already in the windows; MPI: MPI_Barrier before each call, out of place"
echo "# each algorithm column: its time per call in us (-: the size does not meet its precondition)"
echo "# machine: $cpus online CPUs, ${model:-unknown CPU}; $ompi; mpirun ${base[*]} $flags"
echo "# load average before the runs: $load_before, after: $(cut -d' ' -f1-3 /proc/loadavg); busiest settle second before a run: $max_busy% (other work)"
print_table "$rows"
