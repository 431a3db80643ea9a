#!/usr/bin/env bash
# test_mpi.sh - the MPI-3 RMA transport under mpirun (ctest entry `mpi`,
# registered only with -DCOLLSIM_MPI=ON).
#
#   tests/test_mpi.sh COLLSIM_MPI_BINARY [MORE_BINARIES...]
#
# (also every binary named in $COLLSIM_MPI_MORE, space-separated)
# The binary is linked against one MPI implementation; the launcher used is
# that implementation's (mpirun.openmpi or mpirun.mpich, found from the
# binary's libmpi). A second binary built against the other implementation
# may be given too (scripts/setup.sh mpi builds both when both are installed).
# For Open MPI two paths run: shared memory (the default osc sm) and TCP on
# loopback (--mca btl self,tcp --mca osc pt2pt, standing in for a network).
#
# Sweep: one job per N = 2..8 (oversubscribed), each running mesh/ring/host
# x fp32/fp16 x sum/max/min/prod x counts 1, 17 (ragged) and 4097, each
# case verified bit for bit by every rank (exit 0); then `bench` next to
# MPI_Allreduce, verified on both sides, and bad usage (exit 2). Then a
# rank killed with SIGKILL mid-run and an injected wait timeout must end
# the job non-zero within seconds, with no collsim-mpi process left; the
# timeout with rank 0's hang wavefront, one line per rank, headed by the
# hung rank; a rank killed by SIGSEGV or abort() is one line, exit 3.
# --minmax and --signals sweep like the default ones (bad values exit 2);
# mesh's rectangle path (--shape, --valid: 2-D loads and stores as one
# MPI_Get/MPI_Put per row) verified the same way.
# --input/--output: an input with NaN and signed zeros, whose max output
# differs between the three --minmax modes and matches `collsim run`'s
# byte for byte in each; bad inputs exit 2 and write nothing; its trace
# names the input file's hash, as collsim run's does, and replays with it.
# --trace: a traced run's file (logical clocks, merged at rank 0) must be
# read by `collsim trace` (the binary in $COLLSIM_BIN, else next to the first
# binary), whose --stats volumes and signal counts match the reference,
# `collsim replay` must re-run its order on shared memory, and `collsim
# check` must find nothing in correct runs and a race in runs of two
# mutations; a hung run's trace ends with the fault and the abort.
# COLLSIM_QUICK=1 runs a smaller sweep; COLLSIM_MPI_ONLY (a space-separated
# list of sweep, hostpush, bench, usage, modes, npyio, traced, hang, crash,
# kill)
# only those.
set -uo pipefail
fail=0
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

launcher_of() { # mpirun for the MPI library the binary links
  local libs; libs=$(ldd "$1")
  if [[ $libs == *libmpich* ]]; then echo mpirun.mpich
  else echo "mpirun.openmpi --oversubscribe"; fi
}

# run NAME EXPECT_RC PATTERN MPIRUN_CMD... : one job, at most $limit
# seconds (default 120), whose output must hold PATTERN (a fixed string;
# "" for any).
limit=120
run() {
  local name=$1 want=$2 pat=$3; shift 3
  local out; out=$(timeout "$limit" "$@" 2>&1); local rc=$?
  last=$out # the job's output, for a further look
  if [ "$rc" -ne "$want" ] || [[ $out != *"$pat"* ]]; then
    echo "FAIL $name: exit $rc, expected $want and '$pat': $*"
    echo "$out" | tail -5
    fail=1
  fi
}

sweep() { # sweep LABEL MPIRUN... BINARY: one job per rank count
  local label=$1; shift
  local ranks="2 3 4 5 6 7 8" counts="1,17,4097"
  if [ "${COLLSIM_QUICK:-0}" = 1 ]; then
    # MPICH's passive target progresses only inside MPI calls, so with more
    # ranks than cores each poll waits for a descheduled rank (the full
    # sweep goes to 8).
    ranks="2 3 5 8" counts="17,4097"
    # MPICH oversubscribed and the TCP path cost several times more per
    # rank: the quick sweep keeps them to two rank counts each (the shared
    # memory path of Open MPI runs all four).
    [[ $label == mpich* ]] && ranks="2 3"
    [[ $label == *-tcp ]] && ranks="3 8"
  fi
  local n=0 cases
  cases=$(( 3 * 2 * 4 * $(tr ',' '\n' <<<"$counts" | wc -l) ))
  for np in $ranks; do
    limit=900 run "$label np=$np" 0 "$cases cases on $np ranks: all bit-exact" \
      "${@:1:$#-1}" -np "$np" "${@: -1}" run --algo mesh,ring,host --dtype fp32,fp16 \
      --op all --count "$counts" --iters 2 --fill random --seed "$np"
    n=$((n + cases))
  done
  echo "ok $label: $n cases"
}

# hostpush LABEL MPIRUN... BINARY: PR #2280's host push ring, whose
# reduce-scatter puts are MPI_Accumulate(MPI_SUM, MPI_FLOAT): fp32 sum on
# counts N, 17N and 4096N, three calls, bit-exact on every rank; then a
# traced run that `collsim check` finds clean.
hostpush() {
  local label=$1; shift
  local ranks="2 3 4 8"
  [ "${COLLSIM_QUICK:-0}" = 1 ] && ranks="2 3"
  for np in $ranks; do
    run "$label np=$np" 0 "3 cases on $np ranks: all bit-exact" \
      "${@:1:$#-1}" -np "$np" "${@: -1}" run --algo host-push --dtype fp32 \
      --op sum --count "$np,$((17 * np)),$((4096 * np))" --iters 3 \
      --fill random --seed "$np"
  done
  local tr; tr=$(mktemp -d)
  run "$label traced" 0 "" "${@:1:$#-1}" -np 3 "${@: -1}" run --algo host-push \
    --count 30 --iters 2 --trace "$tr/hp.cstrace"
  local cs=${COLLSIM_BIN:-$(dirname "${@: -1}")/collsim}
  run "$label traced check" 0 "0 findings" "$cs" check "$tr/hp.cstrace"
  rm -rf "$tr"
  echo "ok $label: host-push"
}

# bench LABEL MPIRUN... BINARY: the table next to MPI_Allreduce, verified.
bench() {
  local label=$1; shift
  run "$label bench" 0 "ratio" "${@:1:$#-1}" -np 3 "${@: -1}" bench -b 8 \
    -e 64K -f 8 -n 3 -w 1
  run "$label bench max" 0 "ratio" "${@:1:$#-1}" -np 2 "${@: -1}" bench -b 4K \
    -e 4K -o max --algo ring,mesh -n 3 -w 1
  echo "ok $label: bench"
}

# A rank's command line starts with the binary (mpirun's does not).
left_over() { pgrep -f "^$bin run" >/dev/null; }

# kill_rank LABEL MPIRUN... BINARY: SIGKILL of one rank mid-run.
kill_rank() {
  local label=$1; shift
  local t0; t0=$(date +%s)
  "${@:1:$#-1}" -np 3 "${@: -1}" run --algo ring --count 4097 --iters 1000000 \
    --timeout 60 >/dev/null 2>&1 &
  local job=$!
  local victim=""
  for _ in $(seq 100); do # wait for the ranks, then pick one
    victim=$(pgrep -f "^${*: -1} run --algo ring --count 4097 --iters 1000000" | tail -1)
    [ -n "$victim" ] && break
    sleep 0.1
  done
  sleep 1
  [ -n "$victim" ] && kill -9 "$victim"
  local waited=0
  while kill -0 "$job" 2>/dev/null && [ $waited -lt 150 ]; do sleep 0.1; waited=$((waited + 1)); done
  if kill -0 "$job" 2>/dev/null; then
    echo "FAIL $label: job still running 15 s after a rank was killed"
    kill -9 "$job"; fail=1
  fi
  wait "$job"; local rc=$?
  if [ -z "$victim" ] || [ $rc -eq 0 ]; then
    echo "FAIL $label: killed rank '${victim}', job exit $rc (expected non-zero)"; fail=1
  fi
  sleep 0.5
  if left_over; then echo "FAIL $label: collsim-mpi processes left"; pgrep -a -f "^$bin run"; fail=1; fi
  echo "ok $label: killed rank pid $victim, job exit $rc after $(( $(date +%s) - t0 )) s"
}

# hang LABEL MPIRUN... BINARY: an injected hang (in rank 1, then in rank
# 0, which must still print; then rank 1 stopped: stopped_rank) fails the waits at the timeout: exit 3 and
# rank 0's hang wavefront, one line per rank, naming the hung rank's
# position and rank 0's wait, the words of `collsim run`'s wavefront.
hang() {
  local label=$1; shift
  local who out rc r n bad
  for who in 1 0; do
    out=$(timeout 60 "${@:1:$#-1}" -np 3 "${@: -1}" run --algo mesh \
      --count 100 --iters 1 --fault "$who:hang:5" --timeout 1 2>&1); rc=$?
    bad=""
    [ $rc -eq 3 ] || bad="exit $rc, expected 3"
    [ "$(grep -c '^hang wavefront:$' <<<"$out")" = 1 ] || bad="$bad; no wavefront"
    for r in 0 1 2; do
      n=$(grep -c "^  rank $r: " <<<"$out")
      [ "$n" = 1 ] || bad="$bad; $n lines for rank $r"
    done
    grep -q "^  rank $who: hung (injected fault) at event 5$" <<<"$out" ||
      bad="$bad; rank $who's hang not named"
    # The headline names the hung rank, as collsim run's does, not the
    # waiter whose timer fired (rank 0).
    grep -m1 '^collsim-mpi: ' <<<"$out" |
      grep -q "^collsim-mpi: rank $who: hung (injected fault) at event 5 " ||
      bad="$bad; the headline does not name rank $who's hang"
    [ "$who" = 0 ] || grep -Eq '^  rank 0: blocked at event [0-9]+ in wait\(signal\[[0-9]+\] >= [0-9]+\): cell is [0-9]+, expected >= [0-9]+; .+' <<<"$out" ||
      bad="$bad; rank 0's wait not named"
    if [ -n "$bad" ]; then
      echo "FAIL $label (hang in rank $who): $bad; output:"; echo "$out" | head -8; fail=1
    fi
    sleep 0.5
    if left_over; then echo "FAIL $label: collsim-mpi processes left"; fail=1; fi
  done
  echo "ok $label: exit $rc, wavefront: $(grep -c '^  rank ' <<<"$out") lines"
  # A rank stopped with SIGSTOP mid-run: the others may block inside
  # one-sided calls that need the stopped rank's progress, where no wait
  # of collsim's times out (MPICH, Open MPI on some machines); the
  # watchdog (docs/mpi.md) ends the job and names it. Stopped before its
  # run began (in MPI_Init: the case that once hung on a fresh Debian
  # root, where MPI_Init outlasted the second the test used to give it),
  # the setup guard ends the job.
  stopped_rank "$label" 1 "$@"
  stopped_rank "$label" 0 "$@"
  stopped_rank "$label" 2 "$@"
  stopped_in_setup "$label" "$@"
}

# watchdog_of PID: PID's process has the watchdog thread (its run began).
watchdog_of() { grep -qsx cs-watchdog /proc/"$1"/task/*/comm; }

# rank_pid BINARY RANK: the pid of RANK's process (its launcher's rank
# variable), or nothing.
rank_pid() {
  local p
  for p in $(pgrep -f "^$1 run --algo ring --count 100000 --iters 1000000"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
      grep -Eq "^(OMPI_COMM_WORLD_RANK|PMI_RANK)=$2\$" && { echo "$p"; return; }
  done
}

# stopped_in_setup LABEL MPIRUN... BINARY: rank 1 stopped as soon as its
# process exists (before its run, most likely in MPI_Init): with
# COLLSIM_MPI_SETUP_LIMIT=5 the setup guard ends the job with exit 3
# (MPICH's launcher may report the SIGKILL of the stopped rank, 9) and
# its one line, in about 5 s.
stopped_in_setup() {
  local label=$1; shift
  local b=${*: -1} victim="" out rc
  COLLSIM_MPI_SETUP_LIMIT=5 "${@:1:$#-1}" -np 3 "$b" run --algo ring \
    --count 100000 --iters 1000000 --timeout 1 >"$tmp/stop.out" 2>&1 &
  local job=$!
  for _ in $(seq 1000); do
    victim=$(rank_pid "$b" 1)
    [ -n "$victim" ] && break
    sleep 0.01
  done
  [ -n "$victim" ] && kill -STOP "$victim"
  if [ -n "$victim" ] && watchdog_of "$victim"; then
    kill -CONT "$victim"; kill -9 "$job"; wait "$job"
    echo "skip $label stopped in setup: rank 1's run had begun at its stop"
    return
  fi
  local waited=0
  while kill -0 "$job" 2>/dev/null && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
  kill -0 "$job" 2>/dev/null && kill -9 "$job"
  wait "$job"; rc=$?
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
  out=$(cat "$tmp/stop.out")
  local rc_ok=0
  [ $rc -eq 3 ] || { [ "${label#mpich}" != "$label" ] && [ $rc -eq 9 ]; } && rc_ok=1
  if [ -z "$victim" ] || [ $rc_ok = 0 ] ||
     ! grep -m1 '^collsim-mpi: ' <<<"$out" |
       grep -Eq "^collsim-mpi: rank [02]: no progress: the job's MPI setup or teardown .* has not finished after 5 s"; then
    echo "FAIL $label stopped in setup: rank 1 pid '$victim', exit $rc (expected 3), no setup line:"
    echo "$out" | head -6; fail=1
  fi
  sleep 0.5
  if left_over; then echo "FAIL $label stopped in setup: collsim-mpi processes left"; pgrep -a -f "^$bin run"; fail=1; fi
  echo "ok $label stopped in setup: exit $rc after $((waited / 10)) s"
}

# stopped_rank LABEL RANK MPIRUN... BINARY: RANK stopped by SIGSTOP
# mid-run is in no wait and gives no report; the headline names it, as
# collsim run names a stopped rank, not the waiter whose timer fired (was:
# rank 0's wait timeout; for a stopped rank 0, which gathers no
# wavefront, the first rank that reported).
stopped_rank() {
  local label=$1 vr=$2; shift 2
  local b=${*: -1} p victim="" out
  "${@:1:$#-1}" -np 3 "$b" run --algo ring --count 100000 --iters 1000000 \
    --timeout 1 >"$tmp/stop.out" 2>&1 &
  local job=$!
  for _ in $(seq 600); do # the victim's process, once its run has begun
    victim=$(rank_pid "$b" "$vr")
    [ -n "$victim" ] && watchdog_of "$victim" && break
    sleep 0.1
  done
  sleep 0.5
  [ -n "$victim" ] && kill -STOP "$victim"
  local waited=0
  while kill -0 "$job" 2>/dev/null && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
  kill -0 "$job" 2>/dev/null && kill -9 "$job"
  wait "$job"; local rc=$?
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null
  out=$(cat "$tmp/stop.out")
  # exit 3; MPICH's launcher may report instead the SIGKILL it sent the
  # stopped rank (9) when the watchdog ended the job
  local rc_ok=0
  [ $rc -eq 3 ] || { [ "${label#mpich}" != "$label" ] && [ $rc -eq 9 ]; } && rc_ok=1
  if [ -z "$victim" ] || [ $rc_ok = 0 ] ||
     ! grep -m1 '^collsim-mpi: ' <<<"$out" | grep -q "^collsim-mpi: rank $vr: no progress"; then
    echo "FAIL $label stopped: rank $vr pid '$victim', exit $rc (expected 3), the headline does not name rank $vr:"
    echo "$out" | head -6; fail=1
  fi
  sleep 0.5
  if left_over; then echo "FAIL $label stopped: collsim-mpi processes left"; pgrep -a -f "^$bin run"; fail=1; fi
  echo "ok $label stopped: rank $vr named, exit $rc"
}

# own_lines: the job's output without the launcher's notes: Open MPI's
# framed banners ("----" boxes) and "[host:pid] ..." help notes, MPICH's
# "Abort(3) on node 1 ...".
own_lines() {
  awk '/^--------------------+$/ { box = !box; next }
       !box && !/^\[/ && !/^Abort\([0-9]+\) on node /' <<<"$1"
}

# crash LABEL MPIRUN... BINARY: a rank killed by an injected SIGSEGV or
# abort() ends the job with one collsim-mpi line naming it and exit 3
# (was: the launcher's exit 139 and its report only); an unknown
# subcommand is one line, exit 2 (was: the whole usage, 95 lines).
crash() {
  local label=$1; shift
  local pre=("${@:1:$#-1}") b=${*: -1} kind sig out rc own bad failed=$fail
  fail=0
  for kind in segv:SEGV abort:ABRT; do
    sig=${kind#*:}
    out=$(timeout 60 "${pre[@]}" -np 3 "$b" run --algo ring --count 100 \
      --iters 1 --fault "1:${kind%:*}:4" 2>&1); rc=$?
    own=$(own_lines "$out")
    bad=""
    [ $rc -eq 3 ] || bad="exit $rc, expected 3"
    [ "$(grep -c . <<<"$own")" = 1 ] || bad="$bad; not one line"
    grep -q "^collsim-mpi: rank 1: killed by SIG$sig at event 4\$" <<<"$own" ||
      bad="$bad; rank 1's SIG$sig not named"
    if [ -n "$bad" ]; then
      echo "FAIL $label ${kind%:*}: $bad; output:"; echo "$out" | head -12; fail=1
    fi
    sleep 0.5
    if left_over; then echo "FAIL $label: collsim-mpi processes left"; fail=1; fi
  done
  for sub in bogus ""; do
    out=$(timeout 60 "${pre[@]}" -np 2 "$b" $sub 2>&1); rc=$?
    own=$(own_lines "$out")
    if [ $rc -ne 2 ] || [ "$(grep -c . <<<"$own")" != 1 ] ||
       ! grep -q "^collsim-mpi: .*subcommand" <<<"$own"; then
      echo "FAIL $label subcommand '$sub': exit $rc, expected 2 and one line:"
      echo "$out" | head -12; fail=1
    fi
  done
  # An unknown option: one line of collsim's naming it (was getopt's
  # "collsim-mpi: unrecognized option", without the subcommand).
  for sub in run bench; do
    out=$(timeout 60 "${pre[@]}" -np 2 "$b" $sub --bogus 2>&1); rc=$?
    own=$(own_lines "$out")
    if [ $rc -ne 2 ] || [ "$(grep -c . <<<"$own")" != 1 ] ||
       ! grep -q "^collsim mpi $sub: option '--bogus' is not accepted" <<<"$own"; then
      echo "FAIL $label $sub --bogus: exit $rc, expected 2 and one line:"
      echo "$out" | head -12; fail=1
    fi
  done
  [ $fail = 0 ] && echo "ok $label: a crashed rank is one line, exit 3; a bad subcommand or option one line"
  [ $failed = 0 ] || fail=1
}

# modes LABEL MPIRUN... BINARY: --minmax and --signals, verified like the
# default modes, and their bad values.
modes() {
  local label=$1; shift
  local pre=("${@:1:$#-1}") b=${*: -1}
  run "$label minmax" 0 "12 cases on 3 ranks: all bit-exact" "${pre[@]}" -np 3 \
    "$b" run --algo mesh,ring,host --dtype fp32,fp16 --op max,min --count 300 \
    --minmax pto --iters 2 --fill random
  run "$label minmax propagate" 0 "6 cases on 2 ranks: all bit-exact" \
    "${pre[@]}" -np 2 "$b" run --algo mesh,ring,host --op max,min --count 17 --minmax propagate
  run "$label single-use" 0 "6 cases on 3 ranks: all bit-exact" "${pre[@]}" \
    -np 3 "$b" run --algo mesh,ring,host --dtype fp32,fp16 --count 300 --signals single-use
  # --algo all: every algorithm of collsim run; a case an algorithm refuses
  # (twophase and ring-nb at a count that is not a multiple of the ranks)
  # is skipped with its reason, not an error. 17 is prime, so at 3 ranks
  # those two skip it and run 30.
  run "$label all" 0 "cases on 3 ranks: all bit-exact, 0 wrong; " \
    "${pre[@]}" -np 3 "$b" run --algo all --op sum,max --count 17,30
  for want in "twophase +fp32 sum +count 17 +skipped: .*multiple of the rank count" \
              "ring-nb +fp32 max +count 17 +skipped: " \
              "ring-nb +fp32 max +count 30 .*bit-exact" \
              "onephase +fp32 sum +count 17 .*bit-exact"; do
    grep -qE "^$want" <<<"$last" || {
      echo "FAIL $label all: no line '$want'"; echo "$last" | tail -5; fail=1; }
  done
  run "$label single-use line" 0 "signals: single-use: every non-self cell reached" \
    "${pre[@]}" -np 2 "$b" run --algo mesh --count 100 --signals single-use
  run "$label minmax usage" 2 "not accepted" "${pre[@]}" -np 2 "$b" run --minmax nan
  run "$label signals usage" 2 "not accepted" "${pre[@]}" -np 2 "$b" run --signals twice
  run "$label single-use iters" 2 "not accepted with --signals single-use" \
    "${pre[@]}" -np 2 "$b" run --signals single-use --iters 3
  run "$label rectangle" 0 "8 cases on 3 ranks: all bit-exact" "${pre[@]}" -np 3 \
    "$b" run --algo mesh --dtype fp32,fp16 --op all --shape 33x129 --valid 32,128
  run "$label rectangle cells" 0 "single-use: every non-self cell reached 2" \
    "${pre[@]}" -np 4 "$b" run --algo mesh --shape 7x13 --valid 6,11 \
    --signals single-use
  run "$label rectangle ring" 2 "only mesh has the partial-valid path" \
    "${pre[@]}" -np 2 "$b" run --algo ring --shape 4x8 --valid 3,5
  echo "ok $label: --minmax, --signals, --shape"
}

# traced LABEL MPIRUN... BINARY: --trace read by collsim trace and check.
traced() {
  local label=$1; shift
  local pre=("${@:1:$#-1}") b=${*: -1} f="$tmp/$label.cstrace" out
  [ -x "$cs" ] || { echo "skip $label: no collsim binary ($cs)"; return; }
  local algo np
  for algo in ring mesh host; do
    np=4; [ "$algo" = host ] && np=3
    run "$label $algo" 0 "trace: $f" "${pre[@]}" -np $np "$b" run --algo $algo \
      --count 1000 --iters 2 --trace "$f"
    # One clock word per signal cell (the trace's signal slot, 4-byte
    # cells), none for the fp32 data slot.
    local said=$last cells
    cells=$("$cs" trace "$f" 2>/dev/null | awk '$2 == "signal" {print $4 / 4}')
    if [ -z "$cells" ] || [[ $said != *": $cells clock words per rank"* ]]; then
      echo "FAIL $label $algo clock words: expected $cells: $said"; fail=1
    fi
    run "$label $algo read" 0 "logical: ranks over MPI share no clock" "$cs" trace "$f"
    # The merged order is one the shared-memory engine can run event by
    # event: a replay that met a wait before its notify would deadlock.
    [ "$algo" = ring ] &&
      run "$label $algo replay" 0 "events: identical; outcome: verified" "$cs" replay "$f"
    out=$("$cs" trace --stats "$f" 2>&1)
    if [[ $out != *"the total matches"* && $out != *"every rank matches"* ]] ||
       [[ $out != *"verdict: the signals match the reference"* ]]; then
      echo "FAIL $label $algo stats:"; echo "$out" | grep -i verdict; fail=1
    fi
    run "$label $algo check" 0 "0 findings" "$cs" check "$f"
  done
  run "$label chrome" 0 '"ph":"s"' "$cs" trace --format chrome "$f"
  if [[ $label == openmpi* ]]; then # the clocks over TCP (osc pt2pt)
    run "$label tcp" 0 "trace: $f" "${pre[@]}" --mca btl self,tcp --mca osc pt2pt \
      -np 4 "$b" run --algo ring --count 1000 --iters 2 --trace "$f"
    run "$label tcp check" 0 "0 findings" "$cs" check "$f"
  fi
  run "$label single-use" 0 "trace: $f" "${pre[@]}" -np 3 "$b" run --algo ring \
    --count 100 --signals single-use --trace "$f"
  run "$label single-use stats" 0 "every non-self cell ends at 2" "$cs" trace --stats "$f"
  run "$label single-use check" 0 "0 findings" "$cs" check "$f"
  # Mutations: the run itself may pass (MPI's flush hides the missing
  # fence) or fail (1); the trace must show the missing edge either way.
  local bug rc
  for bug in no-fence-before-notify:ring mesh-no-chunk-barrier:mesh; do
    rm -f "$f"
    out=$(timeout 120 "${pre[@]}" -np 3 "$b" run --algo "${bug#*:}" --count 40 \
      --iters 2 --bug "${bug%%:*}" --trace "$f" 2>&1); rc=$?
    if [ $rc -gt 1 ] || [[ $out != *"trace: $f"* ]]; then
      echo "FAIL $label ${bug%%:*}: exit $rc, no trace"; echo "$out" | tail -3; fail=1
    fi
    run "$label ${bug%%:*} check" 1 "1. race" "$cs" check "$f"
  done
  run "$label trace sweep" 2 "--trace records one case" "${pre[@]}" -np 2 "$b" \
    run --algo all --trace "$f"
  run "$label trace path" 2 "cannot create" "${pre[@]}" -np 2 "$b" run \
    --trace "$tmp/no/such/dir/x.cstrace"
  # An aborted run writes no trace: an existing file stays as it was and
  # no temp file is left beside it.
  local keep="$tmp/$label-keep"; mkdir -p "$keep"; echo keep >"$keep/t.cstrace"
  timeout "$limit" "${pre[@]}" -np 2 "$b" run --algo ring --count 100 \
    --fault 1:segv:5 --trace "$keep/t.cstrace" >/dev/null 2>&1
  if [ "$(cat "$keep/t.cstrace")" != keep ] || [ "$(ls "$keep")" != t.cstrace ]; then
    echo "FAIL $label abort: the trace path changed: $(ls -l "$keep")"; fail=1
  fi
  # A wait timeout writes the hung run's trace: the records of the ranks
  # that answered the wavefront, the hung rank's fault record, then the
  # abort (wait timeout), which collsim trace and check read.
  local hf="$tmp/$label-hang.cstrace" rc
  out=$(timeout 60 "${pre[@]}" -np 3 "$b" run --algo mesh --count 100 --iters 1 \
    --fault 1:hang:5 --timeout 1 --trace "$hf" 2>&1); rc=$?
  local out0=$out
  if [ $rc -ne 3 ] || [[ $out != *"trace: $hf (aborted run: "* ]]; then
    echo "FAIL $label hang trace: exit $rc"; echo "$out" | grep -v '^---' | head -8; fail=1
  fi
  out=$("$cs" trace "$hf" 2>&1 | tail -2)
  if ! grep -Eq '^ +[0-9]+ .* r1 +fault +rank 1 hung \(injected fault\) at event 5' <<<"$out" ||
     ! grep -Eq '^ +[0-9]+ .* abort +run aborted \(wait timeout\), first failing rank [0-2] *$' <<<"$out"; then
    echo "FAIL $label hang trace end:"; echo "$out"; fail=1
  fi
  # The line names what was reported: rank 1's injected hang, not a wait.
  if [[ $out0 == *"rank 1 reported a wait past"* ]]; then
    echo "FAIL $label hang trace: an injected hang reported as a wait"; fail=1
  fi
  run "$label hang trace check" 0 "the run was aborted" "$cs" check "$hf"
  # Rank 0 in no wait (done, in the final barrier): nobody gathers the
  # records; the rank that ends the job says no trace was written.
  run "$label hang no trace" 3 "no trace was written: rank 0 was not in a wait" \
    "${pre[@]}" -np 3 "$b" run --algo mesh --count 40 --iters 1 \
    --fault 1:hang:1000 --timeout 1 --trace "$tmp/$label-none.cstrace"
  [ -e "$tmp/$label-none.cstrace" ] &&
    { echo "FAIL $label hang no trace: a trace was written"; fail=1; }
  # The headline names the hung rank 1, not rank 0, which finished.
  grep -m1 '^collsim-mpi: ' <<<"$last" | grep -q '^collsim-mpi: rank 1: hung' ||
    { echo "FAIL $label hang no trace: the headline does not name rank 1: $(grep -m1 '^collsim-mpi: ' <<<"$last")"; fail=1; }
  # More records than one MPI_Gatherv's int counts carry (the limit
  # lowered for the test): one line, exit 3, the file as it was.
  run "$label trace gather" 3 "records one MPI_Gatherv can gather" "${pre[@]}" \
    -np 2 env COLLSIM_MPI_TRACE_MAX=100 "$b" run --algo ring --count 100 \
    --trace "$keep/t.cstrace"
  [ "$(cat "$keep/t.cstrace")" = keep ] ||
    { echo "FAIL $label trace gather: the trace path changed"; fail=1; }
  echo "ok $label: --trace read by collsim trace, --stats and check"
}

# npyio LABEL MPIRUN... BINARY: --input and --output. The input (3 ranks x
# 6 fp32) holds NaN, +0, -0 and ordinary values; its header comes from
# collsim's own writer (`collsim run --output`), its rows from printf. For
# --op max under each --minmax mode the three outputs must differ from each
# other (so a mode the job ignored would fail here), and each must be
# byte-identical to collsim run's output on shared memory (the other engine).
# Then bad inputs: one line, exit 2, no output file.
npyio() {
  local label=$1; shift
  local pre=("${@:1:$#-1}") b=${*: -1} d="$tmp/$label" a m out
  [ -x "$cs" ] || { echo "skip $label: no collsim binary ($cs)"; return; }
  mkdir -p "$d"
  if ! "$cs" run --ranks 3 --count 6 --iters 1 --output "$d/base.npy" >/dev/null; then
    echo "FAIL $label: collsim run --output"; fail=1; return
  fi
  local one='\x00\x00\x80\x3f' two='\x00\x00\x00\x40' nan='\x00\x00\xc0\x7f'
  local pz='\x00\x00\x00\x00' nz='\x00\x00\x00\x80'
  { head -c $(( $(stat -c %s "$d/base.npy") - 72 )) "$d/base.npy"
    printf "$one$pz$nan"'\x00\x00\xc0\x3f'"$nz"'\x00\x00\xe0\x40' # 1 +0 NaN 1.5 -0 7
    printf "$nan$nz$nan"'\x00\x00\x20\x40'"$pz"'\x00\x00\x40\xc0' # NaN -0 NaN 2.5 +0 -3
    printf "$two$nz$nan"'\x00\x00\x80\xbf'"$nan"'\x00\x00\x80\x40' # 2 -0 NaN -1 NaN 4
  } > "$d/in.npy"
  local algos="mesh ring host"
  [ "${COLLSIM_QUICK:-0}" = 1 ] && algos="mesh"
  for a in $algos; do
    for m in ieee propagate pto; do
      run "$label $a $m" 0 "result: bit-exact on all 3 ranks" "${pre[@]}" -np 3 \
        "$b" run --algo $a --op max --minmax $m --iters 1 --input "$d/in.npy" \
        --output "$d/mpi-$a-$m.npy"
      run "$label $a $m shm" 0 "result: bit-exact" "$cs" run --algo $a --op max \
        --minmax $m --iters 1 --input "$d/in.npy" --output "$d/shm-$a-$m.npy"
      if ! cmp -s "$d/mpi-$a-$m.npy" "$d/shm-$a-$m.npy"; then
        echo "FAIL $label $a $m: the MPI and shared-memory outputs differ"; fail=1
      fi
    done
    for m in ieee:propagate ieee:pto propagate:pto; do
      if cmp -s "$d/mpi-$a-${m%:*}.npy" "$d/mpi-$a-${m#*:}.npy"; then
        echo "FAIL $label $a: --minmax ${m%:*} and ${m#*:} gave the same output"; fail=1
      fi
    done
  done
  # --trace with --input: the header says "from a file" with the rows'
  # hash, as collsim run's trace of the same file does; check reads it,
  # replay refuses it without the file and replays it with it.
  local t="$d/in.cstrace"
  run "$label trace" 0 "trace: $t" "${pre[@]}" -np 3 "$b" run --algo ring \
    --op max --iters 1 --input "$d/in.npy" --trace "$t"
  "$cs" run --ranks 3 --algo ring --op max --iters 1 --input "$d/in.npy" \
    --trace "$d/shm.cstrace" >/dev/null
  local want got
  want=$("$cs" trace "$d/shm.cstrace" 2>&1 | grep '^  input ')
  got=$("$cs" trace "$t" 2>&1 | grep '^  input ')
  if [[ $want != *"from a file, input hash 0x"* ]] || [ "$got" != "$want" ]; then
    echo "FAIL $label trace header: '$got', expected '$want'"; fail=1
  fi
  run "$label trace check" 0 "0 findings" "$cs" check "$t"
  run "$label trace replay" 2 "was recorded with --input: give the same file" \
    "$cs" replay "$t"
  run "$label trace replay input" 0 "events: identical; outcome: verified" \
    "$cs" replay --input "$d/in.npy" "$t"
  # Bad inputs: one line from collsim-mpi, exit 2, nothing written.
  out=$(timeout "$limit" "${pre[@]}" -np 4 "$b" run --input "$d/in.npy" \
    --output "$d/bad.npy" 2>&1); local rc=$?
  if [ $rc -ne 2 ] || [ "$(grep -c '^collsim' <<<"$out")" -ne 1 ] ||
     [[ $out != *"rows (ranks) (fp32, shape (3, 6)) do not match"* ]] ||
     compgen -G "$d/bad.npy*" >/dev/null; then
    echo "FAIL $label shape: exit $rc, files: $(ls "$d" | grep bad)"
    echo "$out" | grep -v '^-----' | head -5; fail=1
  fi
  run "$label dtype" 2 "its dtype (fp32, shape (3, 6)) do not match" "${pre[@]}" \
    -np 3 "$b" run --input "$d/in.npy" --dtype fp16 --output "$d/bad.npy"
  run "$label fill" 2 "--fill and --input are exclusive" "${pre[@]}" -np 3 "$b" \
    run --input "$d/in.npy" --fill random
  # --shape against the input's columns (no --count given): named so.
  run "$label shape" 2 "its columns (count) (6) do not match the options (--shape 2x4: 8)" \
    "${pre[@]}" -np 3 "$b" run --algo mesh --input "$d/in.npy" --shape 2x4
  # --trace or --output naming the input file (another spelling, or a
  # symlink to it): refused, exit 2, the input's bytes as they were.
  cp "$d/in.npy" "$d/in-before.npy"; ln -sf in.npy "$d/in-link.npy"
  run "$label trace is input" 2 "is the --input file" "${pre[@]}" -np 3 "$b" \
    run --input "$d/in.npy" --trace "$d/in-link.npy"
  run "$label output is input" 2 "is the --input file" "${pre[@]}" -np 3 "$b" \
    run --input "$d/in.npy" --output "$d/./in.npy"
  run "$label trace is output" 2 "is the --output file" "${pre[@]}" -np 3 "$b" \
    run --input "$d/in.npy" --output "$d/o.npy" --trace "$d/./o.npy"
  if ! cmp -s "$d/in.npy" "$d/in-before.npy"; then
    echo "FAIL $label: the --input file was replaced"; fail=1
  fi
  run "$label sweep" 2 "--output writes one case" "${pre[@]}" -np 3 "$b" run \
    --input "$d/in.npy" --op max,min --output "$d/bad.npy"
  # Another user's link is never followed (here to a file of ours, which
  # must stay as it was); where chown is refused, our own link to the
  # input is refused as the input.
  cp "$d/in.npy" "$d/victim.npy"
  local want="is another user's symbolic link"
  ln -s victim.npy "$d/link.npy"
  if ! chown -h 65534 "$d/link.npy" 2>/dev/null; then
    rm -f "$d/link.npy"; ln -s in.npy "$d/link.npy"; want="is the --input file"
  fi
  run "$label symlink" 2 "$want" "${pre[@]}" -np 3 "$b" run \
    --input "$d/in.npy" --output "$d/link.npy"
  if compgen -G "$d/bad.npy*" >/dev/null || [ ! -L "$d/link.npy" ] ||
     ! cmp -s "$d/in.npy" "$d/victim.npy"; then
    echo "FAIL $label: a refused run left $(ls "$d") or changed the link's target"; fail=1
  fi
  echo "ok $label: --input/--output, --minmax modes differ and match collsim run"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cs=${COLLSIM_BIN:-$(dirname "$1")/collsim}

# shellcheck disable=SC2086
set -- "$@" ${COLLSIM_MPI_MORE:-}
# COLLSIM_MPI_ONLY="hang kill" runs only those parts (while developing).
only() { [ -z "${COLLSIM_MPI_ONLY:-}" ] || [[ " $COLLSIM_MPI_ONLY " == *" $1 "* ]]; }
for bin in "$@"; do
  [ -x "$bin" ] || { echo "FAIL: $bin is not an executable"; fail=1; continue; }
  read -r -a mpirun <<<"$(launcher_of "$bin")"
  impl=${mpirun[0]#mpirun.}
  command -v "${mpirun[0]}" >/dev/null || { echo "skip $impl: ${mpirun[0]} not found"; continue; }
  only sweep && sweep "$impl-shm" "${mpirun[@]}" "$bin"
  if [ "$impl" = openmpi ] && only sweep; then
    sweep "$impl-tcp" "${mpirun[@]}" --mca btl self,tcp --mca osc pt2pt "$bin"
  fi
  only hostpush && hostpush "$impl-hostpush" "${mpirun[@]}" "$bin"
  only bench && bench "$impl" "${mpirun[@]}" "$bin"
  if only usage; then
    run "$impl usage" 2 "not accepted" "${mpirun[@]}" -np 2 "$bin" run --algo nope
    run "$impl usage list" 2 "not accepted" "${mpirun[@]}" -np 2 "$bin" run --op sum,nope
    run "$impl bench usage" 2 "not accepted" "${mpirun[@]}" -np 2 "$bin" bench -b 9x
    run "$impl bench trace" 2 "--trace is not accepted" "${mpirun[@]}" -np 2 "$bin" \
      bench -b 8 -e 8 -n 1 -w 0 --trace "$tmp/bench.cstrace"
    run "$impl wrong" 1 "result: WRONG" "${mpirun[@]}" -np 3 "$bin" run --algo ring --count 40 --bug ring-drop-tail --iters 1
  fi
  only modes && modes "$impl-modes" "${mpirun[@]}" "$bin"
  only npyio && npyio "$impl-npy" "${mpirun[@]}" "$bin"
  only traced && traced "$impl-trace" "${mpirun[@]}" "$bin"
  only hang && hang "$impl-hang" "${mpirun[@]}" "$bin"
  only crash && crash "$impl-crash" "${mpirun[@]}" "$bin"
  only kill && kill_rank "$impl-kill" "${mpirun[@]}" "$bin"
done
[ $fail = 0 ] && echo "test_mpi: all passed"
exit $fail
