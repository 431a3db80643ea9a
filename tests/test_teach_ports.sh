#!/usr/bin/env bash
# test_teach_ports.sh - the built-in mesh, ring and host and their ports
# to the public API (tests/plugins/ports.c, which declare the teach facts
# of include/collsim/collective.h) give the same teach lessons: `teach
# --plain` and, in a real terminal (tmux, 80x24), the first screen, the
# screens after each of 5 Enter presses, and the end screen reached by r
# (to the end of each round). Masked, and only that: where the algorithm
# is named ("ring allreduce" / "ring-port (your own)" in the title, the
# --algo value in a refusal), and the run's own summary (--plain's "The
# run:" block, the end screen's "It said:" block: collsim run's report,
# which names the algorithm or the plug-in's path and its own checks;
# tests/test_ports.c compares the runs). Skips (exit 77) the terminal
# part only when tmux is absent.
# Usage: test_teach_ports.sh COLLSIM_BINARY PLUGIN_DIR
set -u
bin=$(realpath "$1")
plugins=$(realpath "$2")
dir=$(mktemp -d /tmp/collsim-tports-XXXXXX)
export TMUX_TMPDIR=$dir
sock=collsim-tports-$$
fails=0
cleanup() { tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# mask NAME: the lesson's text on stdin with NAME (the built-in's name or
# the port's, and the port's path) masked, and the run's report dropped.
mask() {
  sed -E -e "s#--algo ($1|$plugins/port[0-9]_0\\.so|$dir/swap\\.so)#--algo ALGO#g" \
    -e "/^collsim teach: /{s#^collsim teach: ($1 allreduce|$1 \\(your own\\)),#collsim teach: ALGO,#;s/  +/  /g}" |
    awk '/^The run:$/ || /It said:$/ {skip = 1; print; next}
         skip && /^ *$/ {skip = 0}
         !skip {print}'
}

# 0. The teach facts are checked when the shared object is loaded (one
# line naming what is wrong, exit 2), and read only when its size covers
# them: one built before them, whose bytes past its size say 's' and no
# parts, loads and gets the table of its slots.
src=$(cd "$(dirname "$0")/.." && pwd)
inc="-I$src/include -I$(dirname "$plugins")/include -I$(dirname "$plugins")/include/collsim"
mk() { # NAME FIELDS SIZE: a do-nothing collective of one slot
  cat > "$dir/$1.c" <<C
#include <collsim/collsim.h>
static int slots(const cs_coll_cfg_t *c, cs_coll_slot_t *s)
{ s[0] = (cs_coll_slot_t){"data", c->count * 4, 4}; return 1; }
static int body(cs_dev_t *d, const cs_coll_cfg_t *c) { (void)d; (void)c; return 0; }
static uint64_t parts(const cs_coll_cfg_t *c) { (void)c; return 1; }
static uint64_t lo(const cs_coll_cfg_t *c, uint64_t i) { return i ? c->count : 0; }
/* one part per rank, not where the ring's begin: parts 0 .. N-2 of one element */
__attribute__((unused)) static uint64_t nparts(const cs_coll_cfg_t *c) { return c->nranks; }
__attribute__((unused)) static uint64_t nlo(const cs_coll_cfg_t *c, uint64_t i)
{ return i >= c->nranks ? c->count : i; }
const cs_collective_t collsim_collective = {.abi = CS_COLLECTIVE_ABI,
  .size = $3, .name = "$1", .slots = slots, .body = body,
  .signal_slot = CS_COLL_NO_SIGNALS, $2};
C
  cc -std=gnu11 -fPIC -shared $inc -o "$dir/$1.so" "$dir/$1.c" 2> "$dir/cc.err" ||
    { fail "cannot build $1.so: $(cat "$dir/cc.err")"; return 1; }
}
refused() { # NAME WORDS: teach refuses NAME.so in one line with WORDS
  "$bin" teach --plain --algo "$dir/$1.so" > "$dir/o.txt" 2> "$dir/e.txt"; rc=$?
  [ $rc = 2 ] && [ "$(wc -l < "$dir/e.txt")" = 1 ] && grep -qF "$2" "$dir/e.txt" ||
    fail "$1.so: expected one line with '$2', exit 2; got exit $rc: $(cat "$dir/e.txt")"
}
if command -v cc > /dev/null; then
  S='sizeof(cs_collective_t)'
  mk letter ".part_letter = 1, .parts = parts, .part_lo = lo" "$S" && refused letter "teach facts are not accepted: its part_letter"
  mk noparts ".part_letter = 's'" "$S" && refused noparts "part_letter is set without parts and part_lo"
  mk tflags ".part_letter = 's', .parts = parts, .part_lo = lo, .teach_flags = 0x80" "$S" && refused tflags "teach_flags have bits"
  mk legend ".part_letter = 's', .parts = parts, .part_lo = lo, .legend = \"a\\033[2Jb\"" "$S" && refused legend "legend has a control character"
  mk old ".part_letter = 's'" CS_COLLECTIVE_SIZE_3 &&
    { "$bin" teach --plain --algo "$dir/old.so" > "$dir/o.txt" 2>&1 &&
        grep -qF "What the ranks moved" "$dir/o.txt" ||
        fail "a registration built before the teach facts: not its slots' table: $(head -5 "$dir/o.txt")"; }
  # a pull ring's printed lesson is the ring's, one segment per rank: one
  # whose parts are not refused; one whose parts begin elsewhere is taught
  # without the ring's B(i) formula, its own boundaries shown
  P=".teach_flags = CS_COLL_TEACH_PULL_RING"
  mk onepart ".part_letter = 's', .parts = parts, .part_lo = lo, $P" "$S" &&
    refused onepart "the plain lesson is the ring's, one segment per rank, and its parts are 1 for 4 ranks"
  mk ownsplit ".part_letter = 's', .parts = nparts, .part_lo = nlo, $P" "$S" &&
    { "$bin" teach --plain --algo "$dir/ownsplit.so" > "$dir/o.txt" 2>&1
      grep -qF "(where ownsplit's part_lo puts them)." "$dir/o.txt" &&
        grep -qF "s0=[0,1)  s1=[1,2)  s2=[2,3)  s3=[3,10)" "$dir/o.txt" &&
        ! grep -qF "B(i)" "$dir/o.txt" ||
        fail "a pull ring split its own way: not its own boundaries without the ring's formula: $(head -12 "$dir/o.txt")"; }
  mk good ".part_letter = 'c', .parts = parts, .part_lo = lo" "$S" &&
    { "$bin" teach --plain --algo "$dir/good.so" > "$dir/o.txt" 2>&1
      grep -qF "the plain lesson is the ring's" "$dir/o.txt" ||
        fail "chunks without a pull ring or puts: not refused as the built-in mesh is: $(head -3 "$dir/o.txt")"; }
fi

# The ring's port with its slots in another order (signal cells in slot
# 0, the data in 1): taught the same, from the slots it names.
swap=""
if command -v cc > /dev/null &&
   cc -std=gnu11 -fPIC -shared $inc -DPORT=2 -DDEFECT=0 -DSWAP_SLOTS=1 \
     -o "$dir/swap.so" "$src/tests/plugins/ports.c" 2> "$dir/cc.err"; then
  swap="ring:$dir/swap.so"
else
  command -v cc > /dev/null && fail "cannot build the swapped ring port: $(cat "$dir/cc.err")"
fi

# 1. --plain (mesh and host: the same refusal; ring: the same lesson).
for pair in mesh:1 ring:2 host:3 $swap; do
  a=${pair%%:*}; so=${pair#*:}
  [ -f "$so" ] || so=$plugins/port${so}_0.so
  for extra in "" "--ranks 3 --count 37" "--dtype fp16 --count 40"; do
    "$bin" teach --plain --algo "$a" $extra > "$dir/b.txt" 2>&1; rb=$?
    "$bin" teach --plain --algo "$so" $extra > "$dir/p.txt" 2>&1; rp=$?
    [ "$rb" = "$rp" ] || fail "teach --plain $extra: $a exits $rb, its port $rp"
    mask "$a" < "$dir/b.txt" > "$dir/bm.txt"
    mask "$a-port" < "$dir/p.txt" > "$dir/pm.txt"
    diff "$dir/bm.txt" "$dir/pm.txt" > "$dir/d.txt" ||
      { fail "teach --plain --algo $a $extra: the port's lesson differs"; head -20 "$dir/d.txt"; }
  done
done

command -v tmux >/dev/null || { echo "tmux not installed: the screens skipped"; [ $fails -eq 0 ] || exit 1; exit 77; }

screen() { tmux -L "$sock" capture-pane -p; }
# play ARGS OUT: teach ARGS at 80x24; OUT.0 the first screen, OUT.1..5
# after each Enter, OUT.end the end screen.
nsess=0
play() {
  tmux -L "$sock" kill-server 2>/dev/null
  nsess=$((nsess + 1))
  sock=collsim-tports-$$-$nsess # a fresh server: one being killed may linger
  tmux -L "$sock" new-session -d -x 80 -y 24 "$bin teach $1; sleep 60"
  local i
  for i in $(seq 100); do screen | grep -qF "step 0, who goes next" && break; sleep 0.1; done
  screen > "$2.0"
  for i in 1 2 3 4 5; do
    tmux -L "$sock" send-keys Enter
    for _ in $(seq 50); do screen | grep -qF "step $i, who goes next" && break; sleep 0.1; done
    sleep 0.2
    screen > "$2.$i"
  done
  for i in $(seq 60); do
    screen | grep -qF "The run has ended" && break
    tmux -L "$sock" send-keys r
    sleep 0.2
  done
  sleep 0.3
  screen > "$2.end"
  tmux -L "$sock" send-keys q
  grep -qF "The run has ended" "$2.end" || fail "teach $1: r never reached the end screen"
}

# The end screen's event lines (after "last events:", before the keys'
# line), and the screen without them: the run's report above them takes
# as many lines as it has, so the built-in's longer one leaves room for
# fewer events.
evs() { awk '/^last events:$/ {on = 1; next} on && /^  #/ {print}' "$1"; }
noevs() { awk '/^last events:$/ {on = 1; print; next} on && /^  #/ {next} {print}' "$1"; }

# 2. The screens.
for pair in mesh:1 ring:2 host:3 $swap; do
  a=${pair%%:*}; so=${pair#*:}
  [ -f "$so" ] || so=$plugins/port${so}_0.so
  for extra in "" "--ranks 3 --count 20"; do
    play "--algo $a $extra" "$dir/b"
    play "--algo $so $extra" "$dir/p"
    for s in 0 1 2 3 4 5 end; do
      mask "$a" < "$dir/b.$s" > "$dir/bm"
      mask "$a-port" < "$dir/p.$s" > "$dir/pm"
      if [ $s = end ]; then # the last events: as many as both have room for
        evs "$dir/bm" > "$dir/be"; evs "$dir/pm" > "$dir/pe"
        k=$(cat "$dir/be" "$dir/pe" | awk 'FNR == 1 {f++} {n[f]++}
          END {print (n[1] < n[2] ? n[1] : n[2]) + 0}')
        { noevs "$dir/bm"; tail -n "$k" "$dir/be"; } > "$dir/bm2"; mv "$dir/bm2" "$dir/bm"
        { noevs "$dir/pm"; tail -n "$k" "$dir/pe"; } > "$dir/pm2"; mv "$dir/pm2" "$dir/pm"
      fi
      diff "$dir/bm" "$dir/pm" > "$dir/d.txt" ||
        { fail "teach --algo $a $extra, screen $s: the port's differs"; cat "$dir/d.txt"; }
    done
  done
done

[ $fails -eq 0 ] && echo "teach_ports: the ports' lessons are the built-ins'" && exit 0
exit 1
