#!/usr/bin/env bash
# test_teach_tui.sh - drives `collsim teach` in a real terminal (tmux):
# five steps forward then five back give the identical screen; actors
# picked by hand give the trace that --schedule replay: of it reproduces;
# ? and q work; after Ctrl-C the terminal settings are unchanged; a pipe
# gets the plain lesson; a too-small window says so and 8 ranks fit
# 120x40; a break-it level fails under the learner's order and by "show
# me", with the check's explanation; --lesson checks predictions; a
# segment of several tiles shows what --plain's table says; ring-nb,
# onephase and twophase played to the end; host-push, ring-bidir and
# ibing played to the end, their puts by d; the lesson by data steps in
# at most 40 keys, levels 5's and 6's status and verdict, a plug-in's and B's data
# steps, end screens and the help at 80x24, --plain in 80 columns, the
# docs' branch example against the screen. Skips (exit 77) only
# when tmux is absent. Usage: test_teach_tui.sh COLLSIM_BINARY
set -u
bin=$(realpath "$1")
command -v tmux >/dev/null || { echo "tmux not installed: skipped"; exit 77; }
dir=$(mktemp -d /tmp/collsim-tui-XXXXXX)
# tmux's sockets live in the test's own directory.
export TMUX_TMPDIR=$dir
nsess=0
sock=collsim-tui-$$-0
fails=0
cleanup() { tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# start COLS LINES CMD: a fresh tmux session running CMD in a shell that
# records stty -a before and after it.
start() {
  tmux -L "$sock" kill-server 2>/dev/null
  nsess=$((nsess + 1))
  sock=collsim-tui-$$-$nsess # a fresh server: one being killed may linger
  tmux -L "$sock" new-session -d -x "$1" -y "$2" \
    "stty -a > $dir/stty.before; sh -c 'echo \$\$ > $dir/pid; exec $3'; echo EXIT=\$? > $dir/exit; stty -a > $dir/stty.after; sleep 60"
}
screen() { tmux -L "$sock" capture-pane -p; }
keys() { for k in "$@"; do tmux -L "$sock" send-keys "$k"; sleep 0.15; done; }
# The lesson's answers, read independently of the screen's own tracking:
# predict_of SCREEN: "RS t1 2" for "Predict: after RS t1, which segment
# will rank 2 have..."; plain_cell FILE "RS t1" RANK: that rank's cell of
# --plain's round table; plain_cost FILE: rank 0's bytes ("Read here: r0
# N B"); wait_target SCREEN: V of rank 0's greyed "waiting for signal[C]
# >= V" (odd: READY, even: READ-COMPLETE, collectives/ring.c).
predict_of() { echo "$1" | sed -nE 's/^Predict: after ((RS|AG) t[0-9]), which segment will rank ([0-9]) have.*/\1 \3/p'; }
plain_cell() { awk -v ph="$2" -v rk="$3" '$1 " " $2 == ph {print $(3 + rk)}' "$1"; }
plain_cost() { sed -nE 's/.*Read here: r0 ([0-9]+) B.*/\1/p' "$1"; }
wait_target() { echo "$1" | sed -nE 's/^   -   .* rank 0: waiting for signal\[[0-9]+\] >= ([0-9]+), now.*/\1/p'; }
# wait_for TEXT [SECONDS]: until the screen shows TEXT (10 s at most, or
# SECONDS: the S search runs up to 200 whole runs, which the sanitizer
# build on a loaded machine takes far longer than 10 s to finish).
wait_for() {
  for _ in $(seq $((${2:-10} * 10))); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  fail "the screen never showed '$1'"; screen; return 1
}
# wait_exit: until collsim has exited; then no shared-memory world of its
# (named /collsim-PID-...) may be left.
wait_exit() {
  for _ in $(seq 100); do
    if [ -s "$dir/exit" ]; then
      ls /dev/shm | grep -q "^collsim-$(cat "$dir/pid")-" && fail "a world of collsim was left in /dev/shm"
      return 0
    fi
    sleep 0.1
  done
  fail "collsim did not exit"; return 1
}
# lesson_start: teach --lesson at 80x24, past the goal screen to step 0.
lesson_start() {
  start 80 24 "$bin teach --lesson"
  wait_for "Your goal"
  keys x
  wait_for "step 0, who goes next"
}

# level_start "L [ARGS]": teach --level L at 80x24, past the level's
# first screen (its place in the campaign and its story) to step 0.
level_start() {
  start 80 24 "$bin teach --level $1"
  wait_for "Press any key to start"
  keys x
  wait_for "step 0, who goes next"
}

# 1. Five steps forward, five back: the screen at step 0 again.
start 80 24 "$bin teach"
wait_for "step 0, who goes next" && screen > "$dir/s0"
keys Enter Enter Enter Enter Enter
wait_for "step 5, who goes next"
keys b b b b b
wait_for "step 0, who goes next" && screen > "$dir/s0b"
cmp -s "$dir/s0" "$dir/s0b" || { fail "the screen after 5 forward, 5 back differs"; diff "$dir/s0" "$dir/s0b"; }
# 2. ? shows the help, any key closes it, q quits and restores the terminal.
keys '?'
wait_for "this help"
keys x
sleep 0.3
screen | grep -qF "this help" && fail "the help did not close"
keys q
wait_exit && grep -q "EXIT=0" "$dir/exit" || fail "q: $(cat "$dir/exit")"
cmp -s "$dir/stty.before" "$dir/stty.after" || fail "q left the terminal changed"

# 3. Ctrl-C in the middle of a run: the terminal is as it was.
rm -f "$dir/exit"
start 80 24 "$bin teach --ranks 3"
wait_for "step 0, who goes next"
keys Enter Enter C-c
wait_exit
grep -q "speed" "$dir/stty.before" || fail "stty -a printed no settings: nothing compared"
cmp -s "$dir/stty.before" "$dir/stty.after" || { fail "Ctrl-C left the terminal changed"; diff "$dir/stty.before" "$dir/stty.after"; }

# 4. Picking by hand: rank 3, rank 2, rank 1 first, then to the end of
# every round; the trace it leaves replays to the same events.
rm -f "$dir/exit"
start 80 24 "$bin teach --trace $dir/hand.cstrace"
wait_for "step 0, who goes next"
keys 3
wait_for "step 1, who goes next"
keys 2
wait_for "step 2, who goes next"
keys 1
wait_for "step 3, who goes next"
for _ in $(seq 12); do keys r; done
wait_for "The run has ended"
keys q
wait_exit
grep -q "EXIT=0" "$dir/exit" || fail "hand-picked run: $(cat "$dir/exit")"
"$bin" trace "$dir/hand.cstrace" > "$dir/hand.txt" 2>&1 || fail "cannot read the hand trace"
first=$(awk '$4 == "store" {print $3}' "$dir/hand.txt" | head -3 | tr '\n' ' ')
[ "$first" = "r3 r2 r1 " ] || fail "the first stores were by '$first', not the ranks picked (r3 r2 r1)"
"$bin" run --ranks 4 --count 10 --iters 1 --schedule "replay:$dir/hand.cstrace" \
  --trace "$dir/replay.cstrace" > "$dir/replay.out" 2>&1 || { fail "replay of the hand-picked order failed"; cat "$dir/replay.out"; }
"$bin" trace "$dir/replay.cstrace" > "$dir/replay.txt" 2>&1
# Same events in the same order (the time column differs).
col() { awk '/^ +[0-9]+ +\+/ {$2=""; print}' "$1"; }
[ -n "$(col "$dir/hand.txt")" ] || fail "no events in the hand trace"
cmp -s <(col "$dir/hand.txt") <(col "$dir/replay.txt") || fail "the replay's events differ from the hand-picked run's"

# 5. A pipe gets the plain lesson, with the cost line.
"$bin" teach | cat > "$dir/plain.txt"
grep -q "What the transfers did" "$dir/plain.txt" || fail "teach | cat: no plain lesson"
grep -q "2(N-1)/N \* S" "$dir/plain.txt" || fail "teach | cat: no 2(N-1)/N line"

# 6. Too small: 8 ranks in 80x24 say what they need.
rm -f "$dir/exit"
start 80 24 "$bin teach --ranks 8"
wait_for "the window is too small (80x24); 8 ranks need 120x40"
keys q
wait_exit
rm -f "$dir/exit"
start 120 40 "$bin teach --ranks 8"
wait_for "step 0, who goes next"
screen | grep -q "too small" && fail "8 ranks do not fit 120x40"
keys q
wait_exit
cmp -s "$dir/stty.before" "$dir/stty.after" || fail "too small + q left the terminal changed"

# 7. Break it, level 1 (no READY barrier): rank 0 runs first and reads
# from rank 2 before rank 2 has staged its input; the run is wrong and the
# end screen tells collsim shrink's story of it, ending with the missing
# edge the level removed (a notify after the store, a wait before the
# load: the READY barrier).
rm -f "$dir/exit"
level_start "1"
wait_for "Break it: no READY barrier"
keys Enter Enter Enter Enter Enter Enter
for _ in $(seq 10); do keys r; done
wait_for "You broke it: the run failed"
screen | grep -q "result: WRONG" || fail "level 1: no wrong result on the screen"
screen | grep -qF "What broke it, as collsim shrink tells it" || { fail "level 1: no story"; screen; }
# the story's lines joined: the barrier's name wraps the line at 80 columns
screen | sed -n '/^The level removed/,$p' | tr -s ' \n' '  ' | grep -qE "Missing: (the READY barrier of [A-Za-z]+ t[0-9]+ j[0-9]+: )?a notify by rank [0-9] after [0-9] and a wait by rank [0-9]" || { fail "level 1: the story misses the READY edge"; screen; }
keys q
wait_exit

# 7b. Show me (level 3, mesh without its read-complete barrier): the
# search finds a failing order and the end screen explains it.
rm -f "$dir/exit"
level_start "3"
wait_for "Break it: no read-complete barrier"
keys S
wait_for "Shown: this order fails" 90
screen | grep -q "result: WRONG" || fail "show me: no wrong result on the screen"
screen | grep -qE "^ +Missing: (a read-complete barrier|the READ-COMPLETE barrier)" || { fail "show me: the story misses the read-complete edge"; screen; }
keys q
wait_exit

# 7c. SIGTERM, on the end screen and in the middle of a run: the terminal
# is restored and nothing is left behind.
for where in end middle; do
  rm -f "$dir/exit"
  level_start "1"
  wait_for "step 0, who goes next"
  if [ "$where" = end ]; then keys S; wait_for "Shown: this order fails" 90; else keys Enter Enter; fi
  kill -TERM "$(cat "$dir/pid")"
  wait_exit
  cmp -s "$dir/stty.before" "$dir/stty.after" || fail "SIGTERM ($where) left the terminal changed"
done

# 8. --lesson: predictions checked against the run. The expected
# segments are those of collectives/ring.c's 4-rank table: after RS t0
# rank 2 holds s0=[1+2], after RS t1 rank 3 holds s0=[1+2+3].
# The barrier questions in between are skipped (Esc).
rm -f "$dir/exit"
lesson_start
keys r
wait_for "Predict: after RS t0, which segment will rank 2 have written"
tmux -L "$sock" send-keys "0 1+2" Enter
wait_for "Rank 0 waits. Which barrier"
keys Escape
wait_for "Right: rank 2 wrote s0=[1+2] in RS t0."
wait_for "Predict: after RS t1, which segment will rank 3 have written"
tmux -L "$sock" send-keys "2 9+9" Enter
wait_for "Rank 0 waits. Which barrier"
keys Escape
wait_for "Not quite: rank 3 wrote s0=[1+2+3] in RS t1."
keys C-c
wait_exit

# 9. (D1) A segment of several tiles: after every round the window column
# shows what --plain's record-by-record table says each rank wrote (the
# oracle: the plain lesson tracks the trace's loads from the left and
# stores, never the screen's model). 16400 fp32 on 4 ranks: 4100-element
# segments, two tiles each; 65537: five tiles, checked at the end.
for count in 16400 65537; do
  "$bin" teach --plain --count $count > "$dir/plain$count.txt" 2>&1
  # "RS t0 s2=[3+0] s3=[0+1] ..." -> one line per round: its cells.
  awk '/^(RS|AG) t[0-9]/ {printf "%s", $1 " " $2; for (i = 3; i <= NF; i++) printf " %s", $i; print ""}' \
    "$dir/plain$count.txt" > "$dir/rounds$count"
  [ "$(wc -l < "$dir/rounds$count")" -eq 6 ] || { fail "--plain --count $count: no round table"; continue; }
  rm -f "$dir/exit"
  start 80 24 "$bin teach --count $count"
  wait_for "step 0, who goes next"
  keys r # the stage-in
  round=0
  while read -r ph t cells; do
    round=$((round + 1))
    keys r
    # the ends of RS (round 3) and AG (6) stop at a milestone screen
    [ "$round" = 3 ] && wait_for "End of the reduce-scatter" && keys x
    [ "$round" = 6 ] && wait_for "End of the all-gather" && keys x
    if [ "$count" = 16400 ] || [ "$round" = 6 ]; then
      [ "$round" = 6 ] && wait_for "The run has ended"
      sleep 0.3
      screen > "$dir/win"
      rk=0
      for cell in $cells; do
        grep -E "^r$rk " "$dir/win" | grep -qF " $cell " ||
          { fail "--count $count after $ph $t: rank $rk's window does not show $cell (--plain's)"; grep -E "^r$rk " "$dir/win"; }
        rk=$((rk + 1))
      done
    fi
  done < "$dir/rounds$count"
  # After the all-gather every rank holds every segment with all 4 inputs.
  for rk in 0 1 2 3; do
    grep -E "^r$rk " "$dir/win" | grep -qE "(s[0-3]=\[[0-3]\+[0-3]\+[0-3]\+[0-3]\] +){4}" ||
      fail "--count $count at the end: rank $rk does not hold four 4-input segments"
  done
  keys q
  wait_exit
done

# 10. (D2, D3, D6; issue 31 item 2) A level's verdict is shrink's story
# of the run: its numbered events and the edge the level removed, fitted
# to 80 columns. Level 3 (no read-complete barrier): the missing edge goes
# from a load to a store (load -> notify -> wait -> store), never a notify
# after the store. Level 1 (no READY barrier), played by hand and by S:
# the edge goes from a store by rank W to a load from rank W by rank R (a
# notify by W after the store, a wait by R before the load), and both
# events are in the run's trace (the oracle: collsim trace of --trace).
joined() { screen | sed -n '/^The level removed/,$p' | tr -s ' \n' '  '; }
# ev TEXT N: story event N of TEXT as "rank VERB data[a..b) [from rank p] at TAG"
ev() { echo "$1" | grep -oE " $2\. rank [0-9] (stores|loads) data\[[0-9]+\.\.[0-9]+\)( from rank [0-9])? at (stage-in|[RA][SG] t[0-9] j[0-9]|main c[0-9])" | head -1 | sed -E "s/^ $2\. //"; }
rm -f "$dir/exit"
level_start "3"
wait_for "Break it: no read-complete barrier"
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
v=$(joined)
m=$(echo "$v" | sed -nE 's/.*Missing: (a read-complete barrier|the READ-COMPLETE barrier of [A-Za-z]+ c[0-9]+): a notify by rank ([0-9]) after ([0-9]) and a wait by rank ([0-9]) on it before ([0-9])\..*/\2 \3 \4 \5/p')
if [ -z "$m" ]; then fail "level 3: the story does not end with the read-complete edge: $v"; else
  set -- $m
  ev "$v" "$2" | grep -qE "^rank $1 loads" || fail "level 3: the edge does not start at rank $1's load: $v"
  ev "$v" "$4" | grep -qE "^rank $3 stores" || fail "level 3: the edge does not end at rank $3's store: $v"
fi
echo "$v" | grep -qE "notify by rank [0-9] after the store" && fail "level 3: the verdict recommends a notify after the store"
keys q
wait_exit
for how in hand show; do
  rm -f "$dir/exit" "$dir/l1.cstrace"
  level_start "1 --trace $dir/l1.cstrace"
  wait_for "Break it: no READY barrier"
  if [ $how = hand ]; then
    keys Enter Enter Enter Enter Enter Enter
    for _ in $(seq 10); do keys r; done
    wait_for "You broke it"
  else
    keys S
    wait_for "Shown: this order fails" 90
  fi
  sleep 0.3
  v=$(joined)
  keys q
  wait_exit
  m=$(echo "$v" | sed -nE 's/.*Missing: (the READY barrier of [A-Za-z]+ t[0-9]+ j[0-9]+: )?a notify by rank ([0-9]) after ([0-9]) and a wait by rank ([0-9]) on it before ([0-9])\..*/\2 \3 \4 \5/p')
  [ -n "$m" ] || { fail "level 1 ($how): the story does not end with the READY edge: $v"; continue; }
  set -- $m
  w=$(ev "$v" "$2") r=$(ev "$v" "$4")
  echo "$w" | grep -qE "^rank $1 stores" || fail "level 1 ($how): the edge does not start at rank $1's store: $v"
  echo "$r" | grep -qE "^rank $3 loads data\[[0-9.]+\) from rank $1 " || fail "level 1 ($how): the edge does not end at rank $3's load from rank $1: $v"
  "$bin" trace "$dir/l1.cstrace" > "$dir/l1.txt" 2>&1
  # the trace's line of "rank W stores data[a..b) at TAG": r<W> store ... data[a..b) ... TAG
  intrace() {
    local rk verb rng from tag
    rk=$(echo "$1" | sed -E 's/^rank ([0-9]).*/\1/'); verb=$(echo "$1" | awk '{print $3}')
    rng=$(echo "$1" | grep -oE 'data\[[0-9]+\.\.[0-9]+\)'); tag=$(echo "$1" | sed -E 's/.* at //')
    from=$(echo "$1" | sed -nE 's/.* from rank ([0-9]) .*/r\1/p')
    [ "$verb" = stores ] && verb=store || verb=load
    awk -v rk="r$rk" -v verb="$verb" -v rng="$rng" -v from="$from" -v tag="$tag" '
      $3 == rk && $4 == verb && index($0, rng) && (from == "" || $6 == from) &&
      ((tag == "stage-in" && $NF !~ /^j[0-9]$/) || index($0, tag)) { ok = 1 }
      END { exit !ok }' "$dir/l1.txt"
  }
  intrace "$w" || fail "level 1 ($how): the story's store is not in the run's trace: $w"
  intrace "$r" || fail "level 1 ($how): the story's load is not in the run's trace: $r"
done

# 11. (D5) A shown order, then one of the learner's own: after S, B on the
# end screen and a different pick, the end screen is the learner's verdict
# (broke it / still passed), not "Shown: this order fails", and never both
# "Shown" and "No failing order found".
rm -f "$dir/exit"
level_start "1"
wait_for "Break it: no READY barrier"
keys S
wait_for "Shown: this order fails" 90
keys B
wait_for "who goes next"
keys 2
for _ in $(seq 8); do keys r; done
wait_for "after 141 steps"
sleep 0.3
screen | grep -qE "You broke it|It still passed" || { fail "S, B, own order: no verdict of the learner's order"; screen; }
screen | grep -qF "Shown: this order" && fail "S, B, own order: the end screen still says the order was shown"
screen | grep -qF "Shown" && screen | grep -qF "No failing order found" && fail "S, B: 'Shown' and 'No failing order found' together"
keys q
wait_exit

# 12. (D7) Too small for the whole sentence: at 30x8 the message wraps and
# says what 4 ranks need, and how to quit.
rm -f "$dir/exit"
start 30 8 "$bin teach"
sleep 1
msg=$(screen | tr -s ' \n' '  ')
echo "$msg" | grep -qF "the window is too small (30x8); 4 ranks need 80x24." || fail "30x8: the too-small message is cut: $msg"
echo "$msg" | grep -qF "press q to quit" || fail "30x8: the too-small message does not say how to quit: $msg"
keys q
wait_exit

# 13. (D4, D10, D8; issue 31 item 5) --lesson to its end. It opens with
# its goal; every round asked is graded, the last (AG t2) too; the right
# answers come from --plain's table (its record-by-record tracking), one
# is made wrong on purpose. When rank 0 waits it asks which barrier
# (answered from rank 0's greyed line "waiting for signal[C] >= V": V odd
# is READY, even READ-COMPLETE, collectives/ring.c) and each answer names
# the level that breaks that barrier (READY: --level 1, read-complete:
# --level 3). At the end of the reduce-scatter it asks the cost (answered
# with --plain's "Read here: r0 N B"). The score must be 8 of 9. 'foo' is
# no answer (not graded); ? opens the help and q quits while an answer
# box is open; Esc skips at once (ESCDELAY well under 100 ms).
"$bin" teach --plain > "$dir/plain10.txt" 2>&1
cost=$(plain_cost "$dir/plain10.txt")
rm -f "$dir/exit"
start 80 24 "$bin teach --lesson"
wait_for "Your goal: the ring allreduce of 4 ranks"
screen | grep -qF "When rank 0 waits (twice): which barrier, and what breaks without it?" || fail "lesson: the goal does not say it asks about barriers"
keys x
wait_for "step 0, who goes next"
keys r
nq=0 nb=0 nc=0 nm=0
for _ in $(seq 30); do
  for _ in $(seq 100); do
    sc=$(screen)
    echo "$sc" | grep -qE "^Predict: after|^Rank 0 waits\\. Which barrier|^Cost: rank 0 has loaded|End of the|The run has ended" && break
    sleep 0.1
  done
  if echo "$sc" | grep -qF "End of the"; then
    nm=$((nm + 1)); keys x; sleep 0.3; continue
  elif echo "$sc" | grep -qF "The run has ended"; then
    break
  elif echo "$sc" | grep -qF "Rank 0 waits. Which barrier"; then
    v=$(wait_target "$sc")
    if [ -z "$v" ]; then fail "lesson: rank 0 is not shown waiting"; echo "$sc"; break; fi
    if [ $((v % 2)) = 1 ]; then ans=1a lvl="--level 1" bar=READY; else ans=2b lvl="--level 3" bar=READ-COMPLETE; fi
    echo "$sc" | sed -n 2p | grep -qF "$bar" && fail "lesson: the status line gives the barrier away"
    tmux -L "$sock" send-keys "$ans" # two keys are the whole answer
    wait_for "rank 0 waits at the $bar barrier of"
    screen | grep -qF "Right: rank 0 waits at the $bar barrier of" || { fail "lesson: the $bar answer was not graded right"; screen; }
    screen | grep -qF -- "$lvl" || fail "lesson: the $bar answer does not name $lvl"
    # the answer stopped r, its reveal is read; r goes on
    nb=$((nb + 1)); keys r; sleep 0.3; continue
  elif echo "$sc" | grep -qF "Cost: rank 0 has loaded"; then
    [ -n "$cost" ] || { fail "lesson: no cost in --plain"; break; }
    keys '?'
    wait_for "this help"
    keys x
    sleep 0.3
    tmux -L "$sock" send-keys "$cost" Enter
    wait_for "You said $cost B"
    nc=$((nc + 1)); sleep 0.3; continue
  fi
  q=$(predict_of "$sc")
  set -- $q
  ph="$1 $2"; rk=$3
  cell=$(plain_cell "$dir/plain10.txt" "$ph" "$rk")
  ans=$(echo "$cell" | sed -E 's/^s([0-9]+)=\[(.*)\]$/\1 \2/')
  [ -n "$ans" ] || { fail "lesson: no --plain cell for $ph rank $rk"; break; }
  if [ $nq = 0 ]; then
    tmux -L "$sock" send-keys "foo" Enter
    sleep 0.3
    screen | grep -qE "Right:|Not quite:" && fail "lesson: 'foo' was graded as an answer"
    screen | grep -qF "not an answer" || fail "lesson: 'foo' got no word that it is not an answer"
    tmux -L "$sock" send-keys BSpace BSpace BSpace
    keys '?'
    wait_for "this help"
    screen | grep -qE "^> foo|^> \?" && fail "lesson: ? was typed into the answer box"
    keys x
  fi
  [ "$ph" = "RS t1" ] && ans="$ans+9" # the one wrong on purpose
  tmux -L "$sock" send-keys "$ans" Enter
  nq=$((nq + 1))
  for _ in $(seq 50); do screen | grep -qF "Predict: after $ph" || break; sleep 0.1; done
done
wait_for "The run has ended"
[ "$nq $nb $nc $nm" = "6 2 1 2" ] || fail "lesson: asked $nq rounds, $nb barriers, $nc costs, $nm milestones (not 6 2 1 2)"
screen | grep -qE "^Right: rank [0-9] wrote s[0-9]=\[[0-9+]+\] in AG t2\." || { fail "lesson: AG t2 was not graded"; screen; }
screen | grep -qF "Score: 8 of 9 right (rounds 5 of 6, barriers 2 of 2, cost 1 of 1)." || { fail "lesson: no score of 8 of 9"; screen; }
screen | grep -qF "Cost: right, rank 0 loaded $cost B (you said $cost)" || { fail "lesson: the cost is not graded right"; screen; }
screen | grep -qF -- "Next: --level 1 breaks the READY barrier, --level 3 the read-complete barrier." || fail "lesson: the end names no level"
keys q
wait_exit
# q while an answer box is open quits (the round's, the barrier's); Esc
# skips at once (well under curses' default second); ? works in the
# barrier's box.
rm -f "$dir/exit"
lesson_start
keys r
wait_for "Predict: after RS t0"
tmux -L "$sock" send-keys Escape
# curses' default wait for the rest of an escape sequence is a whole
# second; teach shortens it. 0.6 s tells the two apart on a loaded machine.
sleep 0.6
screen | grep -qF "Predict: after RS t0" && fail "lesson: Esc took more than 600 ms to skip"
keys r
wait_for "Rank 0 waits. Which barrier"
keys '?'
wait_for "this help"
screen | grep -qE "^> \?" && fail "lesson: ? was typed into the barrier box"
keys x
sleep 0.3
screen | grep -qF "this help" && fail "lesson: the help over the barrier box did not close"
tmux -L "$sock" send-keys q
wait_exit
grep -q "EXIT=0" "$dir/exit" || fail "lesson: q in the barrier box did not quit: $(cat "$dir/exit")"
rm -f "$dir/exit"
lesson_start
keys r
wait_for "Predict: after RS t0"
tmux -L "$sock" send-keys q
wait_exit
grep -q "EXIT=0" "$dir/exit" || fail "lesson: q in the answer box did not quit: $(cat "$dir/exit")"

# 14. (D9) Combinations a lesson cannot honour are refused on the terminal
# with one line naming what is not accepted, exit 2, nothing started: a
# level sets its own world (algo, ranks, count, dtype, bug, model); the
# questions are the ring's; a plug-in gets the plain table.
src=$(cd "$(dirname "$0")/.." && pwd)
plug=""
if command -v cc >/dev/null && [ -f "$(dirname "$bin")/include/collsim/version.h" ]; then
  cc -std=gnu11 -fPIC -shared -I"$src/include" -I"$(dirname "$bin")/include/collsim" \
    -o "$dir/ag.so" "$src/examples/ring_allgather/ring_allgather.c" \
    -L"$(dirname "$bin")" -lcollsim -Wl,-rpath,"$(dirname "$bin")" 2>"$dir/cc.err" && plug="$dir/ag.so"
fi
refuse() { # ARGS WORD: refused with one line naming WORD
  rm -f "$dir/exit" "$dir/err"
  start 80 24 "$bin teach $1 2>$dir/err"
  wait_exit
  grep -q "EXIT=2" "$dir/exit" 2>/dev/null || { fail "teach $1: not refused (exit $(cat "$dir/exit" 2>/dev/null))"; screen | head -3; tmux -L "$sock" send-keys q; return; }
  [ "$(wc -l < "$dir/err")" -eq 1 ] || fail "teach $1: not one line: $(cat "$dir/err")"
  grep -q "^collsim teach: .*$2.* not accepted" "$dir/err" || fail "teach $1: the line does not name $2: $(cat "$dir/err")"
}
refuse "--algo host --level 1" "--algo"
refuse "--level 1 --algo host" "--algo"
refuse "--level 2 --memory-model sc" "--memory-model"
refuse "--level 3 --ranks 4" "--ranks"
refuse "--algo mesh --lesson" "--lesson"
refuse "--level 1 --lesson" "--lesson"
if [ -n "$plug" ]; then
  refuse "--algo $plug --lesson" "--lesson"
  refuse "--algo $plug --level 1" "--level"
else
  echo "note: no C compiler or build tree headers: the plug-in refusals were not tried"
fi

# 15. (D6) Nothing cut at 80x24: level 4's verdict shows its story's
# missing edge whole
# (the wavefront after it is cut with a word that more is there), and a
# large S keeps the bytes line whole on two lines.
rm -f "$dir/exit"
level_start "4"
wait_for "Break it: waits compare =="
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
screen | sed -n '/^The level removed/,$p' | tr -s ' \n' '  ' | grep -qF "Missing: a >= comparison: the add can pass the == value before the waiter looks." || { fail "level 4: the missing edge is not on the screen whole"; screen; }
screen | grep -qF "more than fits" || { fail "level 4: the cut wavefront is not marked"; screen; }
keys q
wait_exit
rm -f "$dir/exit"
start 80 24 "$bin teach --count 65537"
wait_for "step 0, who goes next"
keys r r r
wait_for "r3 131072B"
screen | grep -qF "(S=262148B)" || { fail "--count 65537: the bytes line is cut"; screen; }
keys q
wait_exit

# 16. (issue 31, item 4) Readable state. Digits name ranks: with rank 0
# waiting (its line greyed, '-'), the enabled list is ranks 1-3 at
# positions 0-2, and 2 must run rank 2 (its event the newest in the log),
# not the actor at position 2. The status line says where rank 0 waits,
# derived here from its greyed line "waiting for signal[C] >= V": the
# ring's cell C is row C/4 (row t: RS t), from rank C%4, and V odd is
# READY of subchunk (V-1)/2 (collectives/ring.c: READY >= 2j+1,
# READ-COMPLETE >= 2j+2). A digit of a rank that cannot run says why.
# Barrier rows are named by their round (RS t0 [...]).
rm -f "$dir/exit"
start 80 24 "$bin teach"
wait_for "step 0, who goes next"
keys r
wait_for "step 4, who goes next"
for _ in $(seq 40); do
  screen | grep -qE "^   -   RS t0 \[[^]]*\]  rank 0: waiting for" && break
  keys Enter
done
s16=$(screen)
w=$(echo "$s16" | sed -nE 's/^   -   RS t0 \[[^]]*\]  rank 0: waiting for signal\[([0-9]+)\] >= ([0-9]+), now.*/\1 \2/p')
if [ -z "$w" ]; then fail "readable: rank 0 never waited"; echo "$s16"; else
  set -- $w
  cell=$1 val=$2
  if [ $((val % 2)) = 1 ]; then bar=READY; else bar=READ-COMPLETE; fi
  want="rank 0 waits for rank $((cell % 4))'s $bar of RS t$((cell / 4)) j$(((val - 1) / 2))"
  echo "$s16" | sed -n 2p | grep -qF "$want" || { fail "readable: the status line is not '$want'"; echo "$s16" | sed -n 2p; }
  echo "$s16" | grep -qE "^  \[2\]  RS t0 \[" || fail "readable: rank 2 is not labelled [2] with its named row"
  step=$(echo "$s16" | sed -nE 's/^step ([0-9]+), who goes next.*/\1/p')
  keys 2
  wait_for "step $((step + 1)), who goes next"
  newest=$(screen | sed -n '/^last events:/,$p' | grep -E '^  #' | tail -1)
  echo "$newest" | grep -qE "^  #$step +RS t0  rank 2: " || fail "readable: key 2 did not run rank 2: $newest"
  keys 0
  sleep 0.3
  screen | sed -n 2p | grep -qE "^key 0: rank 0 (waits for rank [0-9]'s|cannot run)" || { fail "readable: key 0 (waiting) does not say why"; screen | sed -n 2p; }
  keys 7
  sleep 0.3
  screen | sed -n 2p | grep -qF "key 7: there is no rank 7" || fail "readable: key 7 (4 ranks) is not refused in words"
fi
keys q
wait_exit

# 17. (issue 31, item 4) Data steps and milestones: the default lesson
# played to its end by data steps (d, then Enter at every pick, any key
# on a milestone) in at most 40 keystrokes, one pick per load from
# another rank in the trace it leaves; b goes back one data step. The
# milestones' numbers are the trace's: every rank's bytes loaded from
# another rank in RS and in all, their sum against (N-1) x S and
# 2(N-1) x S (S = 40 B).
rm -f "$dir/exit" "$dir/data.cstrace"
start 80 24 "$bin teach --trace $dir/data.cstrace"
wait_for "step 0, who goes next"
keys d
nk=1 picks=0
wait_for "data step 1:"
keys Enter Enter Enter
wait_for "data step 4:"
keys b
wait_for "data step 3:"
keys Enter
nk=$((nk + 5)) picks=3
# waits until the screen shows the next data step, a milestone or the end
next() {
  for _ in $(seq 100); do
    sc=$(screen)
    if echo "$sc" | grep -qE "End of the|The run has ended|data step $1:"; then return 0; fi
    sleep 0.1
  done
  fail "data steps: stuck before data step $1"; screen; return 1
}
while [ $nk -lt 60 ]; do
  next $((picks + 1)) || break
  if echo "$sc" | grep -qF "End of the reduce-scatter"; then echo "$sc" > "$dir/ms_rs"; keys x; nk=$((nk + 1)); sleep 0.3
  elif echo "$sc" | grep -qF "End of the all-gather"; then echo "$sc" > "$dir/ms_ag"; keys x; nk=$((nk + 1)); sleep 0.3
  elif echo "$sc" | grep -qF "The run has ended"; then break
  else keys Enter; nk=$((nk + 1)) picks=$((picks + 1)); fi
done
keys q
nk=$((nk + 1))
wait_exit
echo "data steps: $picks picks, $nk keystrokes to the end"
[ $nk -le 40 ] || fail "data steps: $nk keystrokes to the end (at most 40)"
"$bin" trace "$dir/data.cstrace" > "$dir/data.txt" 2>&1 || fail "data steps: no trace"
loads=$(awk '$4 == "load" && $5 == "from"' "$dir/data.txt" | wc -l)
[ "$loads" -gt 0 ] && [ "$picks" = "$loads" ] || fail "data steps: $picks picks for $loads loads from another rank"
for ph in RS all; do
  f=$dir/ms_rs; [ $ph = all ] && f=$dir/ms_ag
  [ -s "$f" ] || { fail "data steps: no milestone at the end of $ph"; continue; }
  tot=0
  for rk in 0 1 2 3; do
    b=$(awk -v rk="r$rk" -v ph=$ph '$3 == rk && $4 == "load" && $5 == "from" && (ph == "all" || $(NF-2) == "RS") { match($0, /valid [0-9]+/); s += substr($0, RSTART + 6, RLENGTH - 6) * 4 } END { print s + 0 }' "$dir/data.txt")
    tot=$((tot + b))
    if [ $ph = RS ]; then grep -qE "rank $rk read .*= $b B; holds" "$f" || fail "milestone RS: rank $rk's line does not say $b B"
    else grep -qE "rank $rk read .* B; in all $b B" "$f" || fail "milestone AG: rank $rk's line does not say in all $b B"; fi
  done
  if [ $ph = RS ]; then grep -qF "$tot B = (N-1) x S (S = 40 B)" "$f" && [ $tot = 120 ] || { fail "milestone RS: no '$tot B = (N-1) x S'"; cat "$f"; }
  else grep -qF "Together $tot B = 2(N-1) x S" "$f" && [ $tot = 240 ] || { fail "milestone AG: no 'Together $tot B = 2(N-1) x S'"; cat "$f"; }; fi
done
grep -qF "(N-1)/N x S = 3/4 x 40 B = 30 B" "$dir/ms_rs" 2>/dev/null || fail "milestone RS: no (N-1)/N x S = 30 B"
grep -qF "2(N-1)/N x S = 2 x 3/4 x 40 B = 60 B" "$dir/ms_ag" 2>/dev/null || fail "milestone AG: no 2(N-1)/N x S = 60 B"

# 18. (issue 31, items 2 and 7) Every level of the campaign won, by S: each
# opens with its story and, broken, names the next level (the two made
# from upstream bugs: the report they were met in too; the line fits 80
# columns); each verdict is shrink's
# story and ends with the edge that level's mutation removed
# (collsim run --list-bugs: ring-no-ready-barrier, no-fence-before-notify,
# mesh-no-chunk-barrier, wait-eq, drain-no-ddr-fence: the pipe barrier is
# there, the DDR fence not; host-push-no-tail-drain: the DDR fence is
# there, the pipe barrier after the put not), not check's first finding;
# the story's
# events are marked in the history: its key 1 steps back to event 1, whose
# step (the story's "(step N)") is then the newest in the history, marked *1.
for l in 1 2 3 4 5 6; do
  case $l in
    1) bug=ring-no-ready-barrier want="Missing: (the READY barrier of [A-Za-z]+ t[0-9]+ j[0-9]+: )?a notify by rank [0-9] after [0-9] and a wait by rank [0-9] on it before [0-9]";;
    2) bug=no-fence-before-notify want="Missing: a fence on rank [0-9] between [0-9] and [0-9]";;
    3) bug=mesh-no-chunk-barrier want="Missing: (a read-complete barrier|the READ-COMPLETE barrier of [A-Za-z]+ c[0-9]+): a notify by rank [0-9] after [0-9]";;
    4) bug=wait-eq want="Missing: a >= comparison";;
    5) bug=drain-no-ddr-fence want="Missing: a DDR fence on rank [0-9] between [0-9] and [0-9]: a drain is not one\.";;
    6) bug=host-push-no-tail-drain want="Missing: a pipe barrier on rank [0-9] between [0-9] and [0-9], before its DDR fence\.";;
  esac
  "$bin" run --list-bugs | grep -q "^$bug " || fail "level $l: no bug $bug in --list-bugs"
  rm -f "$dir/exit"
  # (item 7) the campaign: a level opens with its place and its story
  start 80 24 "$bin teach --level $l"
  wait_for "Level $l of 6: "
  [ $l = 5 ] && { screen | grep -qF "a DDR fence waits" || fail "level 5: its first screen tells no story: $(screen)"; }
  [ $l = 6 ] && { screen | tr -s ' \n' '  ' | grep -qF "a put waits in the DMA pipe until a pipe barrier drains it, and a DDR fence makes visible only what was drained" || fail "level 6: its first screen tells no story: $(screen)"; }
  keys x
  wait_for "step 0, who goes next"
  wait_for "Break it:"
  keys S
  wait_for "Shown: this order fails" 90 || { keys q; wait_exit; continue; }
  sleep 0.3
  # broken: the next level, or (the last, an upstream bug) where it was met
  case $l in
    5) want3="^Level 5 of 6 broken; upstream: PTOAS #744, fixed by #757\. Next: --level 6\.$";;
    6) want3="^Level 6 of 6 broken; upstream: PTOAS #872, PyPTO drains every put\. Last level\.$";;
    *) want3="^Level $l of 6 broken\. Next: --level $((l + 1)), ";;
  esac
  l3=$(screen | sed -n 3p | sed 's/ *$//')
  echo "$l3" | grep -qE "$want3" || fail "level $l: line 3 is not '$want3': $l3"
  [ ${#l3} -lt 80 ] || fail "level $l: line 3 is cut: $l3"
  v=$(joined)
  echo "$v" | grep -qF "What broke it, as collsim shrink tells it" || fail "level $l: the verdict is not the story: $v"
  echo "$v" | grep -qE "$want" || fail "level $l ($bug): the story does not end with '$want': $v"
  echo "$v" | grep -qE "[0-9]+\. race " && fail "level $l: check's finding is shown, not the story"
  # the wait the story tells is the one its notify reached: the rank
  # notified waits on the cell notified
  nt=$(echo "$v" | sed -nE 's/.* [0-9]\. rank [0-9] notifies rank ([0-9]): ([a-z]+\[[0-9]+\]) .*/\1 \2/p')
  wt=$(echo "$v" | sed -nE 's/.* [0-9]\. rank ([0-9]) waits until ([a-z]+\[[0-9]+\]) .*/\1 \2/p')
  [ -n "$nt" ] && [ -n "$wt" ] && [ "$nt" != "$wt" ] && fail "level $l: the story's notify ($nt) is not the one its wait ($wt) saw: $v"
  n=$(echo "$v" | sed -nE 's/.* 1\. rank [0-9] [^(]*(\([^)]*\) )?[^(]*\(step ([0-9]+)\)\..*/\2/p')
  if [ -z "$n" ]; then fail "level $l: the story's first event has no step: $v"; else
    keys j 1
    wait_for "step $((n + 1)), who goes next"
    screen | grep -qE "^\*1#$n +" || { fail "level $l: step $n is not marked *1 in the history"; screen; }
  fi
  keys q
  wait_exit
done

# 19. (issue 31, items 4 and 5) --lesson by data steps: the ranks meet at
# the round's start, where the question is asked; the answer is checked
# once the round has run (after RS t0 rank 2 holds s0=[1+2],
# collectives/ring.c's table), not at the next data step.
rm -f "$dir/exit"
lesson_start
keys d
wait_for "Predict: after RS t0, which segment will rank 2 have written"
tmux -L "$sock" send-keys "0 1+2" Enter
for _ in $(seq 40); do
  sc=$(screen)
  echo "$sc" | grep -qE "^(Right|Not quite): rank 2 " && break
  if echo "$sc" | grep -qF "Rank 0 waits. Which barrier"; then keys Escape; else keys Enter; fi
done
screen | grep -qF "Right: rank 2 wrote s0=[1+2] in RS t0." || { fail "lesson by data steps: RS t0 not graded right after its round"; screen; }
keys q
wait_exit

# 20. (issue 31, item 3) t: the last events as a space-time strip, one
# lane per rank. In the ring every rank loads only from its left
# neighbour, so in every column where lane r shows a remote load (L) the
# peer it reads from (o) is on lane r-1 mod 4, and on no other lane.
rm -f "$dir/exit"
start 80 24 "$bin teach"
wait_for "step 0, who goes next"
keys r r t
wait_for "t   L load  S store"
sc=$(screen)
lanes=$(echo "$sc" | grep -cE '^r[0-3]  [-A-Za-z|+:.]+$')
[ "$lanes" = 4 ] || { fail "strip: $lanes lanes, expected 4"; echo "$sc"; }
bad=$(echo "$sc" | grep -E '^r[0-3]  [-A-Za-z|+:.]+$' | cut -c5- | awk '
  { lane[NR - 1] = $0 }
  END {
    loads = 0; bad = 0
    for (c = 1; c <= length(lane[0]); c++)
      for (r = 0; r < 4; r++) {
        if (substr(lane[r], c, 1) != "L") continue
        loads++
        for (q = 0; q < 4; q++)
          if (q != r && substr(lane[q], c, 1) == "o" && q != (r + 3) % 4) bad++
        if (substr(lane[(r + 3) % 4], c, 1) != "o") bad++
      }
    print (loads == 0 ? "no loads" : bad)
  }')
[ "$bad" = 0 ] || { fail "strip: a load not drawn from the left neighbour ($bad)"; echo "$sc"; }
keys t
wait_for "last events:"
keys q
wait_exit

# 21. (issue 31, item 6) Branches: a run, back to its start, another
# order to the end, and c compares the two at 80x24 with 4 ranks. Without
# the READY barrier (--bug ring-no-ready-barrier), A is rank 0's first six
# events by Enter then whole rounds by r: rank 0 loads from rank 3 before
# rank 3 wrote, and the run is wrong. B is the data-step order from step
# 0: every event but a load between ranks runs by itself and a round's
# start marker only when nothing else can, so every store lands before a
# load of it and the run is right; and at step 1, where A entered round 0
# on rank 0, B runs rank 1's stage-in store instead. So by construction:
# the same pick at step 0, the divergence at step 1 (A: r0 enter, B: r1
# store), A failed, B passed, and A's story (a load that ran before a
# store) ran the other way round in B.
rm -f "$dir/exit"
start 80 24 "$bin teach --bug ring-no-ready-barrier"
wait_for "step 0, who goes next"
keys Enter Enter Enter Enter Enter Enter
for _ in $(seq 14); do keys r; done
wait_for "result: WRONG"
screen | grep -qF "Branches: c compares" && fail "branch: a comparison offered before any step back"
for _ in $(seq 40); do keys B; screen | grep -qF "step 0, who goes next" && break; done
wait_for "step 0, who goes next"
keys d
for _ in $(seq 30); do keys Enter; done
keys x
wait_for "Branches: c compares this run (B)"
keys c
wait_for "Branches: A = the run you stepped back from"
sc=$(screen)
echo "$sc" | grep -qE "^A: [0-9]+ steps, FAILED; result: WRONG" || { fail "branch: A's outcome"; echo "$sc"; }
echo "$sc" | grep -qE "^B: [0-9]+ steps, passed; result: bit-exact" || { fail "branch: B's outcome"; echo "$sc"; }
echo "$sc" | grep -qF "Same picks for step 0; they diverge at step 1." || { fail "branch: the divergence point"; echo "$sc"; }
echo "$sc" | grep -qE "^>#1 +r0 enter .* r1 store data" || { fail "branch: the first differing events"; echo "$sc"; }
echo "$sc" | grep -qE "^ #0 +r0 store .*\(same\)" || { fail "branch: the shared step"; echo "$sc"; }
echo "$sc" | grep -qE "^Moved: r0 enter A #1 -> B #[0-9]+ \([0-9]+ steps? later\); r1 store A #[0-9]+ -> B #1" || { fail "branch: which events moved"; echo "$sc"; }
echo "$sc" | tr '\n' ' ' | tr -s ' ' | grep -qE "A failed on its story's events.*1\. r0 load A #[0-9]+ -> B #[0-9]+.*2\. r3 store .*in B, 2 ran before 1" || { fail "branch: the story's events in B"; echo "$sc"; }
echo "$sc" | grep -qE "^At the end the windows differ in: r0 " || { fail "branch: the elements that differ"; echo "$sc"; }
echo "$sc" | grep -qF "any key: back to the end screen" || { fail "branch: the footer cut at 80x24"; echo "$sc"; }
keys x
wait_for "Branches: c compares this run (B)"
keys q
wait_exit
grep -q "EXIT=0" "$dir/exit" || fail "branch: q did not quit cleanly: $(cat "$dir/exit")"

# 22. (issue 31, D9 and Must show) A plug-in of examples/ played on the
# terminal: rd_allreduce, 4 ranks x 8 fp32, arange inputs (rank r's
# element i = 100*r + i). Its window is drawn from its slots: at step 0
# every data slot is still 0; rank 3 keyed by its digit runs its stage-in
# store, after which its data slot reads 300,301,...; r to the end gives
# the plug-in's own verdict, and every rank's data slot holds the sum
# sum_r (100*r + i) = 600 + 4*i: 600,604,608,...
rd=""
if command -v cc >/dev/null && [ -f "$(dirname "$bin")/include/collsim/version.h" ]; then
  cc -std=gnu11 -fPIC -shared -I"$src/include" -I"$(dirname "$bin")/include/collsim" \
    -o "$dir/rd.so" "$src/examples/rd_allreduce/rd_allreduce.c" \
    -L"$(dirname "$bin")" -lcollsim -Wl,-rpath,"$(dirname "$bin")" 2>"$dir/cc.err" && rd="$dir/rd.so"
fi
if [ -n "$rd" ]; then
  rm -f "$dir/exit"
  start 80 24 "$bin teach --algo $rd --ranks 4 --count 8"
  wait_for "rd-allreduce (your own), 4 ranks x 8 fp32"
  wait_for "step 0, who goes next"
  [ "$(screen | grep -cE '^r[0-3] +start +data=0,0,0,0')" = 4 ] || { fail "plug-in: the data slots at step 0"; screen; }
  keys 3
  wait_for "step 1, who goes next"
  screen | grep -qE '^r3 +start +data=300,301,302,303' || { fail "plug-in: rank 3's stage-in not in its data slot"; screen; }
  screen | grep -qE '^r2 +start +data=0,0,0,0' || { fail "plug-in: rank 2 changed without running"; screen; }
  for _ in $(seq 6); do keys r; done
  wait_for "the run has ended"
  screen | grep -qF "result: bit-exact on all 4 ranks against rd-allreduce's" || { fail "plug-in: no verdict"; screen; }
  [ "$(screen | grep -cE '^r[0-3] +ph[0-9]+ r[0-9]+ +data=600,604,608,612')" = 4 ] || { fail "plug-in: the sums not in every data slot"; screen; }
  keys q
  wait_exit
  grep -q "EXIT=0" "$dir/exit" || fail "plug-in: q did not quit cleanly: $(cat "$dir/exit")"
else
  echo "note: no C compiler or build tree headers: the plug-in was not played"
fi

# 23. (issue 31, review 3) b on the end screen in the data-step mode goes
# back to the learner's last pick, not to the all-gather's milestone: the
# default lesson has one data step per load from another rank in its trace,
# so b shows the last of them again.
rm -f "$dir/exit" "$dir/d23.cstrace"
start 80 24 "$bin teach --trace $dir/d23.cstrace"
wait_for "step 0, who goes next"
keys d
for _ in $(seq 60); do
  sc=$(screen)
  if echo "$sc" | grep -qF "The run has ended"; then break
  elif echo "$sc" | grep -qF "End of the"; then keys x
  else keys Enter; fi
done
wait_for "The run has ended"
"$bin" trace "$dir/d23.cstrace" > "$dir/d23.txt" 2>&1
loads=$(awk '$4 == "load" && $5 == "from"' "$dir/d23.txt" | wc -l)
keys b
wait_for "data step $loads: which rank loads next"
screen | grep -qF "End of the all-gather" && fail "data steps: b on the end screen showed the milestone again"
keys q
wait_exit

# 24. (issue 31, review 11) r in a level runs the round to its end: under
# the relaxed model (level 2) the round's stores and notifies wait in the
# DMA engines, so the round has ended only when every rank is at its next
# marker and no engine holds an op of it (no d-line is left to pick).
rm -f "$dir/exit"
level_start "2"
keys r r
wait_for "RS t1"
sleep 0.3
sc=$(screen)
[ "$(echo "$sc" | grep -cE "^[> ] \[[0-2]\] .* rank [0-2]: enter RS t1$")" = 3 ] || { fail "level 2: r did not bring every rank to RS t1's marker"; echo "$sc"; }
echo "$sc" | grep -qE "^[> ]  d[0-9]  rank [0-9]'s DMA: land" && { fail "level 2: r stopped with the round's DMA ops not landed"; echo "$sc"; }
keys q
wait_exit

# 25. (issue 31, review 9) The history names a phase marker as the trace
# does: mesh has one phase, which collsim trace calls by its own name
# (no reduce-scatter).
rm -f "$dir/exit"
"$bin" run --algo mesh --ranks 2 --count 6 --trace "$dir/m25.cstrace" > /dev/null 2>&1
name=$("$bin" trace "$dir/m25.cstrace" | awk '$4 == "mark" && $5 == "phase" {print $6; exit}')
start 80 24 "$bin teach --algo mesh --ranks 2 --count 6"
wait_for "step 0, who goes next"
keys Enter Enter
wait_for "step 2, who goes next"
[ -n "$name" ] && screen | grep -qE "^  #1 .* rank 0: enter $name\$" || { fail "mesh: the marker is not named '$name' as in the trace"; screen; }
screen | grep -qF "reduce-scatter" && fail "mesh: the history names a reduce-scatter"
keys q
wait_exit

# 26. (issue 31, review 8) Level 5 (a2a3): rank 0 keyed until it cannot
# run, its reason fits the status line and its row at 80 columns (a cut
# line fills all 80).
rm -f "$dir/exit"
level_start "5"
keys 0 0 0 0 0 0
sleep 0.3
sc=$(screen)
l2=$(echo "$sc" | sed -n 2p)
row=$(echo "$sc" | grep -E "^   -   RS t0 .* rank 0: ")
echo "$l2" | grep -qF "DDR fence" || { fail "level 5: rank 0 is not held by its DDR fence"; echo "$sc"; }
[ ${#l2} -lt 80 ] || fail "level 5: the status line is cut: $l2"
[ -n "$row" ] && [ ${#row} -lt 80 ] || fail "level 5: rank 0's row is cut: $row"
keys q
wait_exit

# 27. (issue 31, review 1) --lesson stepped event by event (Enter only,
# never r or d): every round is asked when a rank first comes to it and
# graded once the rank asked about has ended it. 3 ranks: 4 rounds, each
# answered right from --plain's table (record-by-record, not the
# screen's model); the barrier and cost boxes are skipped (Esc). An Enter
# that lands in an open box is no answer ("not an answer") and changes
# nothing.
"$bin" teach --plain --ranks 3 > "$dir/plain3.txt" 2>&1
rm -f "$dir/exit"
start 80 24 "$bin teach --lesson --ranks 3"
wait_for "Your goal"
keys x
wait_for "step 0, who goes next"
nq=0
for _ in $(seq 200); do
  sc=$(screen)
  if echo "$sc" | grep -qF "The run has ended"; then break; fi
  q=$(predict_of "$sc")
  if [ -n "$q" ]; then
    set -- $q
    cell=$(plain_cell "$dir/plain3.txt" "$1 $2" "$3")
    ans=$(echo "$cell" | sed -E 's/^s([0-9]+)=\[(.*)\]$/\1 \2/')
    tmux -L "$sock" send-keys C-u BSpace BSpace BSpace BSpace BSpace BSpace "$ans" Enter
    nq=$((nq + 1)); sleep 0.3; continue
  fi
  if echo "$sc" | grep -qE "^Rank 0 waits\. Which barrier|^Cost: rank 0 has loaded"; then keys Escape; continue; fi
  if echo "$sc" | grep -qF "End of the"; then keys x; continue; fi
  tmux -L "$sock" send-keys Enter Enter Enter Enter Enter
  sleep 0.2
done
wait_for "The run has ended"
[ "$nq" = 4 ] || fail "lesson by events: $nq questions asked, not 4"
screen | grep -qF "(rounds 4 of 4," || { fail "lesson by events: not every round graded right"; screen; }
keys q
wait_exit

# 28. (issue 31, review 4) Stepping back drops the grade of a round that
# has not run again: RS t0 asked at step N (after r), answered right and
# graded once it ran; B back to step N undoes it (right so far: 0 of 0)
# and asks it again. A barrier question asked after step N is asked again
# too (skipped here).
rm -f "$dir/exit"
lesson_start
keys r
wait_for "Predict: after RS t0"
n=$(screen | sed -nE 's/^step ([0-9]+), who goes next.*/\1/p')
tmux -L "$sock" send-keys "0 1+2" Enter
for _ in $(seq 20); do
  sc=$(screen)
  echo "$sc" | grep -qF "Right: rank 2 wrote s0=[1+2] in RS t0." && echo "$sc" | grep -qF "Predict: after RS t1" && break
  echo "$sc" | grep -qF "Rank 0 waits. Which barrier" && keys Escape
  sleep 0.3
done
keys Escape
sleep 0.3
screen | sed -n 3p | grep -qF "right so far: 1 of 1" || { fail "back: RS t0 not graded right first"; screen; }
for _ in $(seq 30); do # (the barrier's question, asked again, skipped)
  sc=$(screen)
  echo "$sc" | grep -qF "Predict: after RS t0" && break
  if echo "$sc" | grep -qF "Rank 0 waits. Which barrier"; then keys Escape; else keys B; fi
  sleep 0.2
done
wait_for "Predict: after RS t0"
screen | grep -qE "^step $n, who goes next" || { fail "back: not at step $n"; screen; }
screen | sed -n 3p | grep -qF "right so far: 0 of 0" || { fail "back: the grade of RS t0 was kept after stepping back before it ran"; screen | sed -n 3p; }
keys q
wait_exit

# 29. (issue 31, review 5) t in --lesson: the space-time strip shows its
# four lanes while the answer box is open (t is not typed into the
# answer) and after it closed.
rm -f "$dir/exit"
lesson_start
keys Enter
wait_for "Predict: after RS t0"
keys t
sleep 0.3
sc=$(screen)
[ "$(echo "$sc" | grep -cE '^r[0-3]  [-A-Za-z|+:.]+$')" = 4 ] || { fail "lesson: t shows no strip while the answer box is open"; echo "$sc"; }
echo "$sc" | grep -qE "^> +a s[0-9]" || { fail "lesson: t was typed into the answer box"; echo "$sc"; }
keys Escape Enter Enter
sleep 0.3
[ "$(screen | grep -cE '^r[0-3]  [-A-Za-z|+:.]+$')" = 4 ] || { fail "lesson: no strip after the box closed"; screen; }
keys q
wait_exit

# 30. (issue 31, review 6) Level 2's DMA engines when they do not all fit:
# ranks 0, 1, 2 keyed four times each run their stage-in store, their
# marker and two notifies, so at step 12 the engines hold 12 - 3 markers
# = 9 ops; the rows shown and the "more" row count 9, and the highlight
# moved down 8 times (to the last op) is on a row shown.
rm -f "$dir/exit"
level_start "2"
keys 0 0 0 0 1 1 1 1 2 2 2 2
wait_for "step 12, who goes next"
keys Down Down Down Down Down Down Down Down
sleep 0.3
sc=$(screen)
shown=$(echo "$sc" | grep -cE "^[> ]  d[0-9]  rank [0-9]'s DMA: land")
more=$(echo "$sc" | sed -nE 's/^   \.\.\. ([0-9]+) more DMA ops? .*/\1/p')
[ -n "$more" ] && [ $((shown + more)) = 9 ] || { fail "level 2: $shown DMA rows and '${more}' more, not 9 ops"; echo "$sc"; }
echo "$sc" | grep -qE "^>  d[0-9]  rank [0-9]'s DMA: land" || { fail "level 2: the highlighted DMA op is not on the screen"; echo "$sc"; }
keys q
wait_exit

# 31. (issue 31, review 10) Level 4's wavefront counts in the screen's
# steps, not in each rank's own events: after S (a 100x45 window, so the
# wavefront shows whole), no line says "event N", and "last notified by
# rank 1 at step S" names the step of rank 1's last notify to rank 0 in
# the run's trace (in the sequential model a record's seq is its step).
rm -f "$dir/exit" "$dir/l4.cstrace"
start 100 45 "$bin teach --level 4 --trace $dir/l4.cstrace"
wait_for "Press any key to start"
keys x
wait_for "step 0, who goes next"
keys S
wait_for "hang wavefront"
sleep 0.3
v=$(screen | sed -n '/hang wavefront/,$p' | tr -s ' \n' '  ')
keys q
wait_exit
echo "$v" | grep -qE "at (its )?event [0-9]" && fail "level 4: the wavefront still counts events: $v"
s1=$("$bin" trace "$dir/l4.cstrace" | awk '$3 == "r1" && $4 == "notify" && $6 == "r0" {s = $1} END {print s}')
echo "$v" | grep -qF "last notified by rank 1 at step $s1" || fail "level 4: rank 1's last notify is not named by its step $s1: $v"

# 32. (played as a learner) DMA rows are not withheld while lines stay
# blank: level 2 run to its end by r (it passes), B to the last round and
# S finds no failing order there; its two lines at the bottom leave the
# history no room, so the DMA rows may use the lines down to them: a
# "more" row, if any, is never followed by a blank line.
rm -f "$dir/exit"
level_start "2"
keys r r r r r r r
wait_for "It still passed"
keys B
wait_for "who goes next"
keys S
wait_for "No failing order found" 90
sleep 0.3
sc=$(screen)
echo "$sc" | grep -qE "^[> ]  d[0-9]  rank" || { fail "level 2 after S: no DMA row"; echo "$sc"; }
echo "$sc" | grep -A1 -E "^   \.\.\. [0-9]+ more DMA op" | sed -n 2p | grep -qE "^$" && { fail "level 2 after S: DMA rows withheld while a line stays blank"; echo "$sc"; }
keys q
wait_exit

# 33. (played as a learner) The end screen's last line offers only the
# keys the end screen takes: no Enter or digits to step (the run has
# ended), but b/B, and 1-9 when there is a story.
rm -f "$dir/exit"
level_start "1"
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
foot=$(screen | tail -1)
echo "$foot" | grep -qE "Enter step|0-9 rank" && fail "end screen: the footer offers stepping: $foot"
echo "$foot" | grep -qF "b/B back" && echo "$foot" | grep -qF "1-9" || fail "end screen: the footer lacks b/B or 1-9: $foot"
keys q
wait_exit

# 34. (played as a learner) Level 2's strip (relaxed model): a notify
# posted (N) has not reached its peer yet, its DMA engine lands it later
# (d on the poster's lane) and only then does the peer's lane show n. So
# no column holds both N and n, and every column with an n holds a d.
rm -f "$dir/exit"
level_start "2"
keys r r t
wait_for "d lands"
sc=$(screen)
bad=$(echo "$sc" | grep -E '^r[0-2]  [-A-Za-z|+:.]+$' | cut -c5- | awk '
  { lane[NR] = $0; n = NR }
  END {
    nn = 0; bad = 0
    for (c = 1; c <= length(lane[1]); c++) {
      N = 0; m = 0; d = 0
      for (r = 1; r <= n; r++) {
        ch = substr(lane[r], c, 1)
        N += ch == "N"; m += ch == "n"; d += ch == "d"
      }
      nn += m
      if (m && (N || !d)) bad++
    }
    print (nn == 0 ? "no n" : bad)
  }')
[ "$bad" = 0 ] || { fail "level 2 strip: a notify drawn as arrived before it landed ($bad)"; echo "$sc"; }
keys q
wait_exit

# 35. (issue 28, item 4) ring-nb, onephase and twophase played at 80x24
# to the end. Against the run: the end screen's result line is the one
# `collsim run` prints for the same world; the window holds what the
# algorithm's fold order gives, by construction (ring-nb: chunk q is
# [q+(q-1)+...+(q+1)], own value first, docs/algorithms.md §4.5;
# twophase: chunk q is [q + the others ascending] on every rank;
# onephase: rank r's result slot is [r + the others ascending]); every
# rank loaded the algorithm's textbook bytes (S = 32 B: 2(N-1)/N*S = 48,
# (N-1)*S = 96); rank 0 keyed until it waits names the barrier of its
# first wait as docs/algorithms.md does; --plain is refused in one line.
asc_from() { # asc_from Q N: "[Q+the others ascending]"
  local s="[$1" p; for p in $(seq 0 $(($2 - 1))); do [ "$p" = "$1" ] || s="$s+$p"; done; echo "$s]"
}
ring_nb_chunk() { # ring_nb_chunk Q N: "[Q+(Q-1)+...+(Q+1)]"
  local s="[$1" i; for i in $(seq 1 $(($2 - 1))); do s="$s+$((($1 - i + $2) % $2))"; done; echo "$s]"
}
for algo in ring-nb twophase onephase; do
  rm -f "$dir/exit"
  case $algo in
    ring-nb) bytes=48 formula="2(N-1)/N*S"; wait_line="key 0: rank 0 waits for rank 3's notify at the neighbour barrier of RS t0";;
    twophase) bytes=48 formula="2(N-1)/N*S"; wait_line="key 0: rank 0 waits for rank 1's notify (RS barrier";;
    onephase) bytes=96 formula="(N-1)*S"; wait_line="key 0: rank 0 waits for rank 1's notify (READY barrier";;
  esac
  want=$("$bin" run --algo $algo --ranks 4 --count 8 | grep -m1 "result:" | tr -s ' ' | sed 's/^ //')
  case "$want" in *bit-exact*) ;; *) fail "$algo: collsim run is not bit-exact: $want";; esac
  start 80 24 "$bin teach --algo $algo --ranks 4 --count 8"
  wait_for "step 0, who goes next"
  keys 0 0 0 0 0 0 0 0 0 0
  wait_for "$wait_line"
  keys r r r r r r r r r r
  wait_for "the run has ended"
  sleep 0.3
  sc=$(screen)
  got=$(echo "$sc" | awk '/^  result:/ {on = 1} /^  verification:/ {on = 0} on' | tr '\n' ' ' | tr -s ' ' | sed 's/^ //; s/ $//')
  [ "$got" = "$want" ] || { fail "$algo: the end screen's result is not the run's"; echo "screen: $got"; echo "run:    $want"; }
  for q in 0 1 2 3; do
    case $algo in
      ring-nb) cell="c$q=$(ring_nb_chunk $q 4)"; n=4;;
      twophase) cell="c$q=$(asc_from $q 4)"; n=4;;
      onephase) cell="c0=$(asc_from $q 4)"; n=1;;
    esac
    c=$(echo "$sc" | grep -oF -- "$cell" | wc -l)
    [ "$c" = "$n" ] || { fail "$algo: '$cell' on $c rank lines, expected $n"; echo "$sc"; }
  done
  echo "$sc" | grep -qF "loaded: r0 ${bytes}B r1 ${bytes}B r2 ${bytes}B r3 ${bytes}B  of $formula = ${bytes}B (S=32B)" ||
    { fail "$algo: the bytes loaded are not $bytes per rank against $formula"; echo "$sc"; }
  [ $algo = onephase ] && { echo "$sc" | grep -qF "result slot out:" || fail "onephase: the window drawn is not its result slot"; }
  keys q
  wait_exit
  "$bin" teach --algo $algo --count 8 --plain > "$dir/plain.out" 2>&1
  rc=$?
  [ $rc = 2 ] && [ "$(wc -l < "$dir/plain.out")" = 1 ] && grep -q "^collsim teach: --algo $algo: " "$dir/plain.out" ||
    { fail "$algo --plain: not refused in one line (exit $rc)"; cat "$dir/plain.out"; }
done
# 8 ranks of 8 chunks fit 120x40 to the end: the result line is shown,
# nothing is cut.
rm -f "$dir/exit"
start 120 40 "$bin teach --algo ring-nb --ranks 8 --count 16"
wait_for "step 0, who goes next"
keys r r r r r r r r r r r r r r r r r r
wait_for "the run has ended"
sleep 0.3
screen | grep -qF "result: bit-exact on all 8 ranks" || { fail "ring-nb at 8 ranks: no result line at 120x40"; screen; }
screen | grep -qF "more than fits" && { fail "ring-nb at 8 ranks: the end screen is cut at 120x40"; screen; }
keys q
wait_exit
# A count the algorithm refuses is one line before any screen.
"$bin" teach --algo twophase --ranks 4 --count 10 > "$dir/pre.out" 2>&1
rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$dir/pre.out")" = 1 ] && grep -q "multiple of the rank count" "$dir/pre.out" ||
  { fail "twophase --count 10: not refused in one line (exit $rc)"; cat "$dir/pre.out"; }
# ring-nb under --bug signal-reuse (two calls on one signal buffer), run
# to the end by r: the second call's waits pass on the first call's
# credits and the end screen tells shrink's story of it.
rm -f "$dir/exit"
start 80 24 "$bin teach --algo ring-nb --ranks 3 --count 30 --bug signal-reuse"
wait_for "step 0, who goes next"
keys r r r r r r r r r r r r r r r r r r r r
wait_for "What broke it, as collsim shrink tells it"
screen | grep -qF "1-9 story's event" || { fail "ring-nb signal-reuse: no story keys"; screen; }
keys q
wait_exit

# 36. (issue 28, item 4) ring-push: its data arrives by the left
# neighbour's put. Played to the end at 80x24 it holds the pull ring's
# folds (docs/algorithms.md §4.4: the same folds in the same order,
# segment k = [k+1+...+k]), its result line is collsim run's, every rank
# put 2(N-1)/N*S = 60 B (S = 40 B) and loaded nothing. Under relaxed a
# put is posted by its rank and lands at its DMA engine's step: while
# 'land put' is offered, the peer's window does not hold it yet, and once
# it landed it does. With --bug push-own-read-after-ready the window's
# provenance still matches the values (v): rank 0's first element of s0
# holds x1[0]+x1[0]+x0[0] = 200 where the drawing says [1+1+0].
rm -f "$dir/exit"
want=$("$bin" run --algo ring-push --ranks 4 --count 10 | grep -m1 "result:" | tr -s ' ' | sed 's/^ //')
start 80 24 "$bin teach --algo ring-push --ranks 4 --count 10"
wait_for "step 0, who goes next"
keys 0 0 0 0 0 0 0 0 0 0
wait_for "key 0: rank 0 waits for rank "
screen | grep -qE "^key 0: rank 0 waits for rank [1-3]'s READY of RS t0 j0" || { fail "ring-push: rank 0's first wait is not READY of RS t0 j0"; screen; }
keys r r r r r r r r r r r r r r r r
wait_for "the run has ended"
sleep 0.3
sc=$(screen)
got=$(echo "$sc" | awk '/^  result:/ {on = 1} /^  verification:/ {on = 0} on' | tr '\n' ' ' | tr -s ' ' | sed 's/^ //; s/ $//')
[ "$got" = "$want" ] || { fail "ring-push: the end screen's result is not the run's"; echo "screen: $got"; echo "run:    $want"; }
for k in 0 1 2 3; do
  cell="s$k=[$(((k + 1) % 4))+$(((k + 2) % 4))+$(((k + 3) % 4))+$k]"
  c=$(echo "$sc" | grep -oF -- "$cell" | wc -l)
  [ "$c" = 4 ] || { fail "ring-push: '$cell' on $c rank lines, expected 4"; echo "$sc"; }
done
echo "$sc" | grep -qF "put: r0 60B r1 60B r2 60B r3 60B  of 2(N-1)/N*S = 60B (S=40B)" || { fail "ring-push: not 60 B put per rank"; echo "$sc"; }
keys q
wait_exit
rm -f "$dir/exit"
start 80 24 "$bin teach --algo ring-push --ranks 3 --count 6 --memory-model relaxed"
wait_for "step 0, who goes next"
landed=0
for _ in $(seq 200); do
  tmux -L "$sock" send-keys Enter; sleep 0.05
  sc=$(screen)
  line=$(echo "$sc" | grep -m1 -E "^[> ]  d[0-9]  rank [0-9]'s DMA: land put #[0-9]+: rank [0-9] data\[")
  [ -n "$line" ] || continue
  dst=$(echo "$line" | sed -E 's/.*: rank ([0-9]) data.*/\1/')
  src=$(echo "$line" | sed -E "s/.*  rank ([0-9])'s DMA.*/\1/")
  # the put's source: the segment the sender sends in RS t0, s(src-1)
  # holding [src] only; the receiver's own copy there is [dst] until it lands
  k=$(((src + 2) % 3))
  echo "$sc" | grep -A1 "^r$dst " | grep -qF "s$k=[$dst]" || { fail "ring-push relaxed: r$dst's s$k changed before the put landed"; echo "$sc"; }
  # move the highlight to that DMA row and land it
  while ! screen | grep -qE "^>  d[0-9]  rank [0-9]'s DMA: land put"; do tmux -L "$sock" send-keys Down; sleep 0.05; done
  tmux -L "$sock" send-keys Enter; sleep 0.3
  screen | grep -A1 "^r$dst " | grep -qF "s$k=[$src]" || { fail "ring-push relaxed: r$dst's s$k does not hold [$src] once the put landed"; screen; }
  landed=1
  break
done
[ $landed = 1 ] || fail "ring-push relaxed: no put was offered as a DMA landing"
keys q
wait_exit
rm -f "$dir/exit"
start 80 24 "$bin teach --algo ring-push --ranks 3 --count 30 --bug push-own-read-after-ready"
wait_for "step 0, who goes next"
for _ in $(seq 57); do tmux -L "$sock" send-keys 0; sleep 0.03; done
keys r r r r r r r r r r r r r r r r r r r r
wait_for "What broke it, as collsim shrink tells it"
screen | grep -A1 "^r0 " | grep -qF "s0=[1+1+0]" || { fail "push-own-read-after-ready: rank 0's s0 is not [1+1+0]"; screen; }
keys v
wait_for "part=values"
screen | grep "^r0 " | grep -qF "s0=200," || { fail "push-own-read-after-ready: rank 0's s0 does not begin with 200 (x1[0]+x1[0]+x0[0])"; screen; }
keys q
wait_exit
# d: the data steps of a push algorithm are its puts into other ranks;
# after the first, rank 0's s3 has landed in rank 1's window, and the
# next pick is data step 2.
rm -f "$dir/exit"
start 80 24 "$bin teach --algo ring-push --ranks 4 --count 10"
wait_for "step 0, who goes next"
keys d
wait_for "data step 1: which rank puts next?"
keys Enter
wait_for "data step 2: which rank puts next?"
screen | grep -A1 "^r1 " | grep -qF "s3=[0]" || { fail "ring-push d: rank 0's first put is not in rank 1's s3"; screen; }
keys q
wait_exit
# --plain: every rank ends holding segment k in the ring's fold order,
# [k+1+...+k] (docs/algorithms.md §4.2), on all 4 ranks.
"$bin" teach --algo ring-push --plain > "$dir/plain.out" 2>&1 || fail "ring-push --plain: exit $?"
for k in 0 1 2 3; do
  cell="s$k=[$(( (k + 1) % 4 ))+$(( (k + 2) % 4 ))+$(( (k + 3) % 4 ))+$k]"
  c=$(sed -n '/^At the end/,$p' "$dir/plain.out" | grep -oF -- "$cell" | wc -l)
  [ "$c" = 4 ] || { fail "ring-push --plain: '$cell' on $c rank lines, expected 4"; cat "$dir/plain.out"; }
done

# 37. (issue 31, review 7) --lesson played to its end by data steps in
# at most 40 keystrokes, every answer right: a round's question and the
# cost are answered with one key (a-c: the right choice is found by its
# text, from --plain's table and its "Read here: r0 N B"), a barrier with
# two (1a, 2b: from rank 0's greyed wait, as in 13), and an answer moves
# on without a key of its own. Counted: every key sent from the goal
# screen to the end screen.
"$bin" teach --plain > "$dir/plain37.txt" 2>&1
cost=$(plain_cost "$dir/plain37.txt")
rm -f "$dir/exit"
start 80 24 "$bin teach --lesson"
wait_for "Your goal"
keys x
wait_for "step 0, who goes next"
keys d
nk=2 prev=""
while [ $nk -le 60 ]; do
  for _ in $(seq 100); do sc=$(screen); [ "$sc" != "$prev" ] && break; sleep 0.1; done
  sleep 0.2
  sc=$(screen); prev=$sc
  if echo "$sc" | grep -qF "The run has ended"; then break
  elif echo "$sc" | grep -qF "End of the"; then keys x
  elif echo "$sc" | grep -qF "Cost: rank 0 has loaded"; then
    l=$(echo "$sc" | grep -oE "[abc] [0-9]+ B" | awk -v c="$cost" '$2 == c {print $1}')
    [ -n "$l" ] || { fail "lesson 37: the cost $cost B is not a choice"; echo "$sc"; break; }
    keys "$l"
  elif echo "$sc" | grep -qF "Rank 0 waits. Which barrier"; then
    v=$(wait_target "$sc")
    [ -n "$v" ] || { fail "lesson 37: rank 0 is not shown waiting"; echo "$sc"; break; }
    if [ $((v % 2)) = 1 ]; then keys 1 a; else keys 2 b; fi
    nk=$((nk + 1))
  elif echo "$sc" | grep -qE "^Predict: after"; then
    q=$(predict_of "$sc")
    set -- $q
    cell=$(plain_cell "$dir/plain37.txt" "$1 $2" "$3")
    l=$(echo "$sc" | grep -E "^> " | grep -oE "[abc] s[0-9]+=\[[0-9+]+\]" | awk -v c="$cell" '$2 == c {print $1}')
    [ -n "$l" ] || { fail "lesson 37: $1 $2 rank $3's $cell is not a choice"; echo "$sc"; break; }
    keys "$l"
  elif echo "$sc" | grep -qE "data step [0-9]+:"; then keys Enter
  else fail "lesson 37: no question, pick or end on the screen"; echo "$sc"; break; fi
  nk=$((nk + 1))
done
echo "lesson by data steps: $nk keystrokes to the end"
[ $nk -le 40 ] || fail "lesson by data steps: $nk keystrokes to the end (at most 40)"
screen | grep -qF "Score: 9 of 9 right (rounds 6 of 6, barriers 2 of 2, cost 1 of 1)." || { fail "lesson 37: not 9 of 9"; screen; }
keys q
wait_exit

# 38. (issue 31, review 7) Level 5 (a2a3, a drain but no DDR fence). The
# status line names a barrier only while the wait holds the rank: when it
# says "rank R waits for rank P's READY/READ-COMPLETE", rank R's greyed
# line is its wait with the cell below the value (true by construction of
# a blocked >= wait); a rank held by its notify's DDR fence is said so.
# Its verdict names the missing DDR fence, not level 2's plain fence.
rm -f "$dir/exit"
level_start "5"
nddr=0
for _ in $(seq 30); do
  keys Enter
  sc=$(screen)
  echo "$sc" | grep -qE "^   -   .* rank [0-9]: its notify's DDR fence" && nddr=$((nddr + 1))
  w=$(echo "$sc" | sed -n 2p | sed -nE "s/^rank ([0-9]) waits for rank [0-9]'s (READY|READ-COMPLETE) .*/\1/p")
  [ -n "$w" ] || continue
  g=$(echo "$sc" | sed -nE "s/^   -   .* rank $w: waiting for signal\[[0-9]+\] >= ([0-9]+), now ([0-9]+)$/\1 \2/p")
  set -- $g
  [ -n "$g" ] && [ "$2" -lt "$1" ] || { fail "level 5: the status says rank $w waits at a barrier its greyed line does not hold it at"; echo "$sc"; break; }
done
[ $nddr -gt 0 ] || fail "level 5: no rank was ever held by its notify's DDR fence (nothing checked)"
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
v=$(joined)
echo "$v" | grep -qE "Missing: a DDR fence on rank [0-9] between [0-9] and [0-9]: a drain is not one\." || { fail "level 5: the verdict does not name the missing DDR fence: $v"; }
keys q
wait_exit

# 39. (issue 31, review 7) A plug-in that puts (examples/ring_allgather)
# by data steps: each put into another rank is a pick, b goes back one
# of them (the run does not jump to its end), and played to the end the
# picks are the puts to other ranks and loads from them in the trace it
# leaves.
if [ -n "$plug" ]; then
  rm -f "$dir/exit" "$dir/plug.cstrace"
  start 80 24 "$bin teach --algo $plug --trace $dir/plug.cstrace"
  wait_for "step 0, who goes next"
  keys d
  wait_for "data step 1: which rank loads or puts next?"
  keys Enter Enter Enter
  wait_for "data step 4:"
  keys b
  wait_for "data step 3:"
  screen | grep -qiF "the run has ended" && fail "plug-in d: b jumped to the end"
  picks=2
  for _ in $(seq 40); do
    sc=$(screen)
    echo "$sc" | grep -qF "The run has ended" && break
    if echo "$sc" | grep -qE "data step [0-9]+:"; then
      n=$(echo "$sc" | sed -nE 's/.*data step ([0-9]+):.*/\1/p')
      keys Enter; picks=$((picks + 1))
      for _ in $(seq 50); do screen | grep -qE "data step $n:" || break; sleep 0.1; done
    else sleep 0.2; fi
  done
  wait_for "The run has ended"
  keys q
  wait_exit
  moves=$("$bin" trace "$dir/plug.cstrace" | awk '($4 == "put" && $5 == "to") || ($4 == "load" && $5 == "from")' | wc -l)
  [ "$moves" -gt 0 ] && [ "$picks" = "$moves" ] || fail "plug-in d: $picks picks for $moves puts and loads between ranks"
fi

# 40. (issue 31, review 7) B by data steps goes back a round each time.
# The ring of 4 ranks x 10 loads one segment per rank per round
# (collectives/ring.c), and by data steps the ranks meet at every round's
# start, so round t's picks are data steps 4t+1 .. 4t+4. From data step
# 10 (in RS t2): B to 9 (its start), B to 5 (RS t1's), B to 1.
rm -f "$dir/exit"
start 80 24 "$bin teach"
wait_for "step 0, who goes next"
keys d
wait_for "data step 1:"
keys Enter Enter Enter Enter Enter Enter Enter Enter Enter
wait_for "data step 10:"
for want in 9 5 1; do
  keys B
  wait_for "data step $want:" || break
done
keys q
wait_exit

# 41. (issue 31, review 7) End screens at 80x24 and the answer box's
# keys. Level 4 by S: the wavefront's rank 0 line is whole ("last
# notified by rank 1 at step N"), and t shows the strip's two lanes.
# --lesson: while an answer box is open the footer offers its keys, not
# the stepping ones; played to the end (rounds answered a, the other
# questions skipped), the last grade is a line of the verdict above the
# run's result, and no answer box or reveal is left under it.
rm -f "$dir/exit"
level_start "4"
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
v=$(screen | sed -n '/hang wavefront/,$p' | tr -s ' \n' '  ')
echo "$v" | grep -qE "last notified by rank 1 at step [0-9]+" || fail "level 4 at 80x24: the wavefront's line is cut: $v"
keys t
sleep 0.3
[ "$(screen | grep -cE '^r[01]  [-A-Za-z|+:.]+$')" = 2 ] || { fail "level 4 end screen: t shows no strip at 80x24"; screen; }
keys q
wait_exit
rm -f "$dir/exit"
lesson_start
keys r
wait_for "Predict: after RS t0"
foot=$(screen | tail -1)
echo "$foot" | grep -qE "Enter step|0-9 rank|b/B back" && fail "lesson: the footer offers stepping while the answer box is open: $foot"
echo "$foot" | grep -qF "Esc skips" || fail "lesson: the footer does not offer the box's keys: $foot"
for _ in $(seq 40); do
  sc=$(screen)
  if echo "$sc" | grep -qF "The run has ended"; then break
  elif echo "$sc" | grep -qF "End of the"; then keys x
  elif echo "$sc" | grep -qE "^Predict: after"; then keys a
  elif echo "$sc" | grep -qE "^Rank 0 waits\. Which barrier|^Cost: rank 0 has loaded"; then keys Escape
  else keys r; fi
  sleep 0.3
done
wait_for "The run has ended"
sleep 0.3
sc=$(screen)
g=$(echo "$sc" | grep -nE "^(Right|Not quite): rank [0-9] wrote s[0-9]+=\[[0-9+]+\] in AG t2\." | cut -d: -f1)
r=$(echo "$sc" | grep -nE "^  result:" | cut -d: -f1)
[ -n "$g" ] && [ -n "$r" ] && [ "$g" -lt "$r" ] || { fail "lesson end: the last grade is not a verdict line above the result"; echo "$sc"; }
echo "$sc" | grep -qE "^You said:|^> " && { fail "lesson end: the answer box or its reveal is left on the end screen"; echo "$sc"; }
keys q
wait_exit

# 42. (issue 31, review 7) The cost question does not show its answer:
# while it is asked, no line of the screen holds 2(N-1)/N or the whole
# run's bytes of --plain's "Read here: r0 N B" (the bytes line keeps
# what was loaded so far and S).
"$bin" teach --plain > "$dir/plain42.txt" 2>&1
cost=$(plain_cost "$dir/plain42.txt")
rm -f "$dir/exit"
lesson_start
for _ in $(seq 30); do
  sc=$(screen)
  if echo "$sc" | grep -qF "Cost: rank 0 has loaded"; then break
  elif echo "$sc" | grep -qF "End of the"; then keys x
  elif echo "$sc" | grep -qE "^Predict: after|^Rank 0 waits\. Which barrier"; then keys Escape
  else keys r; fi
  sleep 0.3
done
wait_for "Cost: rank 0 has loaded"
sc=$(screen)
echo "$sc" | grep -qE "^loaded: r0 [0-9]+B" || { fail "cost question: no bytes line"; echo "$sc"; }
echo "$sc" | grep -qF "2(N-1)/N" && { fail "cost question: the formula is on the screen"; echo "$sc"; }
echo "$sc" | grep -qE "= ${cost} ?B" && { fail "cost question: the answer ($cost B) is on the screen"; echo "$sc"; }
keys q
wait_exit

# 43. (issue 31, review 7) A plug-in that refuses the world asked for
# (examples/rd_allreduce: recursive doubling needs a power-of-two number
# of ranks) is refused before anything is printed: with --plain, one
# line on stderr naming the reason, exit 2, nothing on stdout; on the
# terminal the same line and no screen.
rd=""
if command -v cc >/dev/null && [ -f "$(dirname "$bin")/include/collsim/version.h" ]; then
  cc -std=gnu11 -fPIC -shared -I"$src/include" -I"$(dirname "$bin")/include/collsim" \
    -o "$dir/rd.so" "$src/examples/rd_allreduce/rd_allreduce.c" \
    -L"$(dirname "$bin")" -lcollsim -Wl,-rpath,"$(dirname "$bin")" 2>"$dir/cc.err" && rd="$dir/rd.so"
fi
if [ -n "$rd" ]; then
  "$bin" teach --algo "$rd" --ranks 3 --plain > "$dir/rd.out" 2> "$dir/rd.err"
  rc=$?
  [ $rc = 2 ] && [ ! -s "$dir/rd.out" ] && [ "$(wc -l < "$dir/rd.err")" = 1 ] &&
    grep -q "^collsim teach: .*power-of-two" "$dir/rd.err" ||
    { fail "plug-in --plain --ranks 3: not refused first in one line (exit $rc)"; cat "$dir/rd.out" "$dir/rd.err"; }
  rm -f "$dir/exit" "$dir/err"
  start 80 24 "$bin teach --algo $rd --ranks 3 2>$dir/err"
  wait_exit
  grep -q "EXIT=2" "$dir/exit" && [ "$(wc -l < "$dir/err")" = 1 ] && grep -q "power-of-two" "$dir/err" ||
    { fail "plug-in --ranks 3 on the terminal: not refused in one line: $(cat "$dir/exit" "$dir/err")"; }
else
  echo "note: no C compiler or build tree headers: the plug-in refusal was not tried"
fi

# 44. (issue 31, review 7) The help overlay at 80x24 shows no fragments
# of the screen under it: on every row from "Keys" to "Press any key."
# (and the blank rows around them) the columns outside the help's 70 are
# blank.
rm -f "$dir/exit"
start 80 24 "$bin teach"
wait_for "step 0, who goes next"
keys r
wait_for "step 4, who goes next"
keys '?'
wait_for "this help"
sleep 0.3
sc=$(screen)
top=$(echo "$sc" | grep -n "^ *Keys *$" | cut -d: -f1)
bot=$(echo "$sc" | grep -n "^ *Press any key\. *$" | cut -d: -f1)
if [ -z "$top" ] || [ -z "$bot" ]; then fail "help: its first or last line is not alone on its row"; echo "$sc"; else
  x0=$(echo "$sc" | sed -n "${top}p" | sed -E 's/Keys.*//' | wc -c) # 1 + the left margin
  bad=$(echo "$sc" | sed -n "$((top > 1 ? top - 1 : 1)),$((bot + 1))p" |
    awk -v x0="$x0" '{ l = substr($0, 1, x0 - 1); r = substr($0, x0 + 70); if (l ~ /[^ ]/ || r ~ /[^ ]/) n++ } END { print n + 0 }')
  [ "$bad" = 0 ] || { fail "help: $bad rows show fragments beside it"; echo "$sc"; }
fi
keys x q # any key closes the help
wait_exit

# 45. (issue 31, review 7) --plain fits 80 columns at 4 ranks: the
# lesson of the ring and the table of a plug-in have no line over 80.
"$bin" teach --plain > "$dir/p45.txt" 2>&1
long=$(awk 'length > 80' "$dir/p45.txt" | head -3)
[ -z "$long" ] || fail "--plain: lines over 80 columns: $long"
grep -qE "Read here: r0 [0-9]+ B" "$dir/p45.txt" || fail "--plain: the cost's 'Read here: r0 N B' is broken up"
if [ -n "$plug" ]; then
  "$bin" teach --algo "$plug" --plain > "$dir/p45u.txt" 2>&1
  long=$(awk 'length > 80' "$dir/p45u.txt" | head -3)
  [ -z "$long" ] || fail "--algo plug-in --plain: lines over 80 columns: $long"
fi

# 46. (issue 31, review 7) docs/teach.md's branch example is the screen:
# its scenario played (as section 21 plays it) and c pressed, the screen
# is the example's block line for line (trailing blanks aside).
doc="$src/docs/teach.md"
if [ -f "$doc" ]; then
  # the block after the paragraph that ends "... and `c` shows:"
  awk '/^```$/ { if (on) exit; if (nx) on = 1; next } on { print }
       /shows:$/ { nx = 1 }' "$doc" | sed 's/ *$//' > "$dir/doc_branch"
  grep -q "^Branches: A = " "$dir/doc_branch" || { fail "docs/teach.md: no branch example found"; }
  rm -f "$dir/exit"
  start 80 24 "$bin teach --bug ring-no-ready-barrier"
  wait_for "step 0, who goes next"
  keys Enter Enter Enter Enter Enter Enter
  for _ in $(seq 14); do keys r; done
  wait_for "result: WRONG"
  for _ in $(seq 40); do keys B; screen | grep -qF "step 0, who goes next" && break; done
  wait_for "step 0, who goes next"
  keys d
  for _ in $(seq 30); do keys Enter; done
  wait_for "Branches: c compares this run (B)"
  keys c
  wait_for "Branches: A = the run you stepped back from"
  sleep 0.3
  screen | sed 's/ *$//' | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$dir/scr_branch"
  diff "$dir/doc_branch" "$dir/scr_branch" > "$dir/branch.diff" || { fail "docs/teach.md's branch example differs from the screen"; cat "$dir/branch.diff"; }
  keys q
  wait_exit
fi

# 47. (issue 31, review 7) Digits keep their meaning on the end screen: a
# digit names a rank there as in the run (none runs now: the status line
# says so, the end screen stays); j then a digit goes back to the story's
# event of that number (its step is then the newest in the history).
rm -f "$dir/exit"
level_start "1"
keys S
wait_for "Shown: this order fails" 90
sleep 0.3
keys 1
sleep 0.5
screen | sed -n 2p | grep -qF "key 1: the run has ended, no rank runs (j then 1-9: a story's event)" || { fail "end screen: digit 1 does not name a rank"; screen | sed -n 2p; }
screen | grep -qF "who goes next" && fail "end screen: digit 1 alone stepped back"
n=$(screen | sed -n '/^The level removed/,$p' | tr -s ' \n' '  ' | sed -nE 's/.* 1\. rank [0-9] [^(]*(\([^)]*\) )?[^(]*\(step ([0-9]+)\)\..*/\2/p')
keys j 1
wait_for "step $((n + 1)), who goes next"
keys q
wait_exit

# 48. (issue 28, item 4) host-push, ring-bidir and ibing played to the end
# by r at 80x24 (4 ranks; ibing 2, its limit): the end screen's result is
# the one `collsim run` prints for the same world; every part holds what
# the algorithm's fold order gives, by construction (docs/algorithms.md
# §4.6-4.8: host-push's chunk q is [q+(q-1)+...+(q+1)], the atomic add's
# own value first; ring-bidir's half 2q is that, half 2q+1 the mirror
# [q+(q+1)+...+(q-1)]; ibing's rank r holds [r+peer] in both chunks); each
# rank put 2(N-1)/N*S bytes; rank 0 keyed at its first wait names the
# barrier; d's first data step is a put that lands adding into the right
# neighbour (ibing: the peer); --plain for the same options prints the
# run's result and the end screen's window column, cell for cell, and the
# bytes each rank wrote per round add up to what it put.
win_cells() { # the window's cells per rank ("r0 c0=[0+3] c1=[1+0]"), the
  # rank lines and their continuations read from stdin
  # (ibing's input-slot lines, "     data: ...", are not its window)
  awk '/^r[0-9]+ / { r = $1 } /^$/ { r = "" } /^ +data:/ { next } r != "" { for (i = 1; i <= NF; i++)
    if ($i ~ /^[a-z][0-9]+[=~]\[[0-9+]*\]$/) c[r] = c[r] " " $i }
    END { for (k in c) print k c[k] }' | sort
}
ring_mirror() { # ring_mirror Q N: "[Q+(Q+1)+...+(Q-1)]"
  local s="[$1" i; for i in $(seq 1 $(($2 - 1))); do s="$s+$((($1 + i) % $2))"; done; echo "$s]"
}
for algo in host-push ring-bidir ibing; do
  rm -f "$dir/exit"
  case $algo in
    host-push) n=4 count=8 bytes=48 s=32
      wait_line="key 0: rank 0 waits for rank 3's notify at the neighbour barrier of RS s1";;
    ring-bidir) n=4 count=16 bytes=96 s=64
      wait_line="key 0: rank 0 waits for rank 3's notify at the neighbour barrier of RS s1";;
    ibing) n=2 count=8 bytes=32 s=32
      wait_line="key 0: rank 0 waits for rank 1's notify (barrier A of step 1)";;
  esac
  want=$("$bin" run --algo $algo --ranks $n --count $count | grep -m1 "result:" | tr -s ' ' | sed 's/^ //')
  case "$want" in *bit-exact*) ;; *) fail "$algo: collsim run is not bit-exact: $want";; esac
  start 80 24 "$bin teach --algo $algo --ranks $n --count $count"
  wait_for "step 0, who goes next"
  keys 0 0 0 0 0 0 0 0 0 0
  wait_for "$wait_line"
  keys r r r r r r r r r r r r r r r r
  wait_for "the run has ended"
  sleep 0.3
  sc=$(screen)
  got=$(echo "$sc" | awk '/^  result:/ {on = 1} /^  verification:/ {on = 0} on' | tr '\n' ' ' | tr -s ' ' | sed 's/^ //; s/ $//')
  [ "$got" = "$want" ] || { fail "$algo: the end screen's result is not the run's"; echo "screen: $got"; echo "run:    $want"; }
  for q in $(seq 0 $((n - 1))); do
    case $algo in
      host-push) cells="c$q=$(ring_nb_chunk $q $n)"; per=$n;;
      ring-bidir) cells="h$((2 * q))=$(ring_nb_chunk $q $n) h$((2 * q + 1))=$(ring_mirror $q $n)"; per=$n;;
      ibing) cells="c0=$(asc_from $q $n) c1=$(asc_from $q $n)"; per=1;;
    esac
    for cell in $cells; do
      if [ $algo = ibing ]; then # rank q's own line holds it
        echo "$sc" | grep "^r$q " | grep -qF -- "$cell" || { fail "$algo: rank $q does not hold '$cell'"; echo "$sc"; }
      else
        c=$(echo "$sc" | grep -oF -- "$cell" | wc -l)
        [ "$c" = "$per" ] || { fail "$algo: '$cell' on $c rank lines, expected $per"; echo "$sc"; }
      fi
    done
  done
  # --plain for the same options: the run's result, every rank's
  # window part by part as the end screen's column, in 80 columns, and
  # each rank's bytes written per round adding up to the bytes put
  "$bin" teach --algo $algo --ranks $n --count $count --plain > "$dir/plain48.out" 2>&1 ||
    { fail "$algo --plain: exit $?"; cat "$dir/plain48.out"; }
  grep -qF "$(echo "$want" | cut -c1-40)" "$dir/plain48.out" || fail "$algo --plain: not the run's result"
  long=$(awk 'length > 80' "$dir/plain48.out")
  [ -z "$long" ] || fail "$algo --plain: lines over 80 columns: $long"
  tui_win=$(echo "$sc" | win_cells)
  plain_win=$(sed -n '/^At the end/,$p' "$dir/plain48.out" | win_cells)
  [ "$(echo "$tui_win" | wc -l)" = $n ] && [ "$tui_win" = "$plain_win" ] ||
    { fail "$algo: the end screen's window column is not --plain's"; echo "screen:"; echo "$tui_win"; echo "plain:"; echo "$plain_win"; }
  w=$(awk '/^(RS|AG|snap|push) t[0-9]/ { for (i = 3; i <= NF; i += 6) if ($i == "r") s += $(i + 3) } END { print s }' "$dir/plain48.out")
  [ "$w" = $((n * bytes)) ] || fail "$algo --plain: the ranks wrote $w B in its rounds, expected $((n * bytes))"
  puts="put:"; for r in $(seq 0 $((n - 1))); do puts="$puts r$r ${bytes}B"; done
  echo "$sc" | grep -qF "$puts  of 2(N-1)/N*S = ${bytes}B (S=${s}B)" ||
    { fail "$algo: not $bytes B put per rank"; echo "$sc"; }
  keys q
  wait_exit
  # d: the first data step is a put into another rank; once it ran, the
  # next pick is data step 2 and the put's target holds the sum
  rm -f "$dir/exit"
  start 80 24 "$bin teach --algo $algo --ranks $n --count $count"
  wait_for "step 0, who goes next"
  keys d
  wait_for "data step 1: which rank puts next?"
  line=$(screen | grep -m1 "^> \[" )
  src=$(echo "$line" | sed -n 's/.*rank \([0-9]\): put data\[\([0-9]*\)\.\.[0-9]*) to rank \([0-9]\), adding into it.*/\1 \2 \3/p')
  [ -n "$src" ] || { fail "$algo d: the first data step is not an adding put: $line"; screen; }
  keys Enter
  wait_for "data step 2: which rank puts next?"
  # (ibing's puts land in the peer's data slot, its input, drawn on the
  # "data:" line under the rank; the slot on the rank's own line is its
  # result slot out, which the last copy fills)
  if [ -n "$src" ]; then
    set -- $src
    # the part holding element $2 of rank $3: [dst+src] after the add
    part=$(case $algo in ring-bidir) echo "h$(($2 / (count / (2 * n))))";; *) echo "c$(($2 / (count / n)))";; esac)
    if [ $algo = ibing ]; then
      screen | grep -A1 "^r$3 " | grep "^ *data:" | grep -qF "$part=[$3+$1]" ||
        { fail "$algo d: rank $1's first put did not land as $part=[$3+$1] on rank $3's data line"; screen; }
      screen | grep "^r$3 " | grep -qF "$part=[$3]" ||
        { fail "$algo d: rank $3's result slot changed before its copy"; screen; }
    else
      screen | grep -A1 "^r$3 " | grep -qF "$part=[$3+$1]" ||
        { fail "$algo d: rank $1's first put did not land as $part=[$3+$1] in rank $3"; screen; }
    fi
  fi
  keys q
  wait_exit
done
# ibing names each of its barriers as its rank waits at it: A (every
# earlier write in place), B (every snapshot taken) and the final one.
rm -f "$dir/exit"
start 80 24 "$bin teach --algo ibing --ranks 2 --count 8"
wait_for "step 0, who goes next"
seen=""
for _ in $(seq 40); do
  keys 0
  seen="$seen$(screen | sed -n 2p)
"
  keys 1
  seen="$seen$(screen | sed -n 2p)
"
done
for b in "(barrier A of step 1)" "(barrier B of step 1)" "(final barrier)"; do
  echo "$seen" | grep -qF "notify $b" || { fail "ibing: the status line never named $b"; echo "$seen" | sort -u; }
done
keys q
wait_exit

# 49. (issue 31) --plain at 8 ranks stays in 80 columns: the round table
# comes in blocks of as many ranks as fit, each with its heads, and every
# reduce-scatter cell is what docs/algorithms.md §4.3 gives: after round t
# rank r holds segment (r-t-2) mod N with ranks r-t-1 ... r folded in that
# order. The push lesson (ring-push) and a plug-in's table likewise.
"$bin" teach --plain --ranks 8 --count 16 > "$dir/plain49.txt" 2>&1 || fail "--plain --ranks 8: exit $?"
long=$(awk 'length > 80' "$dir/plain49.txt")
[ -z "$long" ] || fail "--plain --ranks 8: lines over 80 columns: $long"
cells=$(awk '$1 == "round" { for (i = 2; i <= NF; i++) { h[i] = substr($i, 5) }; next }
  $1 == "RS" || $1 == "AG" { for (i = 3; i <= NF; i++) print $1 " " $2 " " h[i - 1] " " $i }' "$dir/plain49.txt")
[ "$(echo "$cells" | grep -c '^RS ')" = 56 ] || { fail "--plain --ranks 8: not 7 RS rounds x 8 ranks of cells"; cat "$dir/plain49.txt"; }
n=8
for t in $(seq 0 6); do
  for r in $(seq 0 7); do
    k=$(( ((r - t - 2) % n + n) % n )) f=""
    for i in $(seq $((t + 1)) -1 0); do f="$f+$(( ((r - i) % n + n) % n ))"; done
    want="s$k=[${f#+}]"
    got=$(echo "$cells" | awk -v t="t$t" -v r=$r '$1 == "RS" && $2 == t && $3 == r { print $4 }')
    [ "$got" = "$want" ] || fail "--plain --ranks 8: RS t$t rank $r holds '$got', expected '$want'"
  done
done
plain8() { # plain8 NAME ALGO COUNT: its --plain at 8 ranks in 80 columns,
  # its phase.round tables heading all 8 ranks between them
  local f="$dir/plain49-$1.txt" long heads
  "$bin" teach --plain --algo "$2" --ranks 8 --count "$3" > "$f" 2>&1 || fail "$1 --plain --ranks 8: exit $?"
  long=$(awk 'length > 80' "$f")
  [ -z "$long" ] || fail "$1 --plain --ranks 8: lines over 80 columns: $long"
  heads=$(grep -E '^phase\.round ' "$f" | tr ' ' '\n' | grep -c '^rank[0-7]$')
  [ "$heads" = 8 ] || { fail "$1 --plain --ranks 8: $heads rank heads, expected 8"; cat "$f"; }
}
plain8 ring-push ring-push 16
# the plug-in of section 22 (examples/rd_allreduce)
[ -z "${rd:-}" ] || plain8 plug-in "$rd" 64

# 50. (issue 31, item 7) Level 6 (host-push under a2a3, PTOAS #872)
# stepped by Enter to its end at 80x24: no line of the screen while it
# runs (the status line, the ranks' rows, the history) is cut (a cut line
# fills all 80 columns); a rank is held by
# its notify's DDR fence at some step (the mutation keeps the DDR fence
# and drops the pipe barrier after the put: collectives/host_push.c); the
# default order passes, and the end screen then shows check's finding
# about the level's edge: no pipe barrier before the DDR fence.
rm -f "$dir/exit"
level_start "6"
nddr=0 cut=""
for _ in $(seq 120); do
  sc=$(screen)
  echo "$sc" | grep -qE "It still passed|^the run has ended" && break
  echo "$sc" | sed -n 2p | grep -qF "its notify's DDR fence" && nddr=$((nddr + 1))
  long=$(echo "$sc" | awk 'length($0) >= 80')
  [ -n "$long" ] && cut="$cut$long
"
  keys Enter
done
sleep 0.3
sc=$(screen)
echo "$sc" | grep -qF "It still passed" || { fail "level 6: the default order did not end, or failed"; echo "$sc"; }
[ -z "$cut" ] || fail "level 6: lines cut at 80 columns: $cut"
[ $nddr -gt 0 ] || fail "level 6: no rank was ever held by its notify's DDR fence"
echo "$sc" | tr -s ' \n' '  ' | grep -qF "no pipe barrier before the DDR fence" || { fail "level 6: the passing run's finding does not name the missing pipe barrier"; echo "$sc"; }
keys q
wait_exit

[ "$fails" -eq 0 ] && echo "all terminal checks passed"
exit $((fails > 0))
