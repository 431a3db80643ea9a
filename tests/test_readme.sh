#!/usr/bin/env bash
# test_readme.sh - the README's examples run as written.
#
#   tests/test_readme.sh COLLSIM_BINARY FILE.md...
#
# Owns the check that documented shell examples still work: it finds every
# fenced block that the line before it marks with an HTML comment
#
#   <!-- readme-test -->                      run it, every command exits 0
#   <!-- readme-test: exit=0,3 -->            the exit status of each command
#   <!-- readme-test: noshape; expect=RE -->  output checked by RE only
#   <!-- readme-test: skip REASON -->         not run (says why)
#
# and runs its `$ ` commands (a trailing backslash continues a command) in
# one bash script in a fresh temporary directory, with `collsim` and
# `build/collsim` both naming COLLSIM_BINARY. For each command it checks
# the exit status and the shape of the output: every output line the block
# shows under the command (lines that are `...` or blank are gaps) must
# appear in the real output in the same order, with every number (decimal
# or 0x hex) standing for any number and runs of blanks for any blanks.
# `expect=RE` (extended regex, repeatable, `;`-separated) must match some
# line of the block's output. A block with a `$ collsim` line and no
# marker fails the test, so no example can go untested by accident.
# Does not build anything; ctest (entry `readme`) calls it after the build.
set -u

bin=${1:?usage: test_readme.sh COLLSIM_BINARY FILE.md...}
shift
[ -x "$bin" ] || { echo "test_readme: $bin is not an executable" >&2; exit 2; }
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/collsim-readme.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/path" "$tmp/build"
ln -s "$bin" "$tmp/path/collsim"
ln -s "$bin" "$tmp/build/collsim"

fail=0 blocks=0 cmds=0

# Splits FILE into $tmp/blocks/N/{where,opts,cmd.I,shape.I}.
extract() {
  awk -v out="$tmp/blocks" -v file="$1" -v start="$2" '
    function flush_cmd() { if (cmd != "") { ncmd++; printf "%s\n", cmd > (dir "/cmd." ncmd); close(dir "/cmd." ncmd); cmd = "" } }
    BEGIN { n = start; inblk = 0; marked = 0 }
    /^```/ {
      if (!inblk) {
        inblk = 1; hascollsim = 0; ncmd = 0; cmd = ""; cont = 0
        if (marked) { n++; dir = out "/" n; system("mkdir -p " dir)
                      print file ":" NR > (dir "/where"); close(dir "/where")
                      print opts > (dir "/opts"); close(dir "/opts") }
        blkline = NR; blkmarked = marked; marked = 0
        next
      }
      inblk = 0
      if (blkmarked) flush_cmd()
      if (!blkmarked && hascollsim)
        print file ":" blkline ": a block with a collsim command and no readme-test marker" > "/dev/stderr"
      next
    }
    !inblk && /^<!-- readme-test/ {
      marked = 1; opts = $0
      sub(/^<!-- readme-test:? */, "", opts); sub(/ *-->.*$/, "", opts)
      next
    }
    !inblk { if ($0 !~ /^[[:space:]]*$/) marked = 0; next }
    {
      if ($0 ~ /^\$ collsim/) hascollsim = 1
      if (!blkmarked) next
      if (cont) { cmd = cmd "\n" $0; cont = ($0 ~ /\\$/); next }
      if ($0 ~ /^\$ /) {
        flush_cmd(); cmd = substr($0, 3); cont = ($0 ~ /\\$/)
        printf "" > (dir "/shape." (ncmd + 1)); close(dir "/shape." (ncmd + 1))
        next
      }
      if (ncmd == 0 && cmd == "") next
      line = $0; sub(/^[[:space:]]+/, "", line); sub(/[[:space:]]+$/, "", line)
      if (line == "" || line == "...") next
      print line >> (dir "/shape." (ncmd + 1)); close(dir "/shape." (ncmd + 1))
    }
    END { print n > (out "/count") }
  ' "$1"
}

# Turns shown lines into anchored extended regexes, one per line.
to_regex() {
  awk '{
    s = $0
    gsub(/0x[0-9a-fA-F]+/, "\001", s)
    gsub(/[0-9]+(\.[0-9]+)?/, "\002", s)
    gsub(/[][\\.()*+?{}|^$\/]/, "\\\\&", s)
    gsub(/[[:space:]]+/, "[[:space:]]+", s)
    gsub(/\001/, "0x[0-9a-fA-F]+", s)
    gsub(/\002/, "[0-9]+(\\.[0-9]+)?", s)
    print "^" s "$"
  }' "$1"
}

# In-order match of the regexes in $1 against the lines of $2; prints the
# first shown line not found.
match_shape() {
  awk -v pats="$1" -v shown="$3" '
    BEGIN { while ((getline p < pats) > 0) pat[++np] = p
            while ((getline s < shown) > 0) txt[++ns] = s; i = 1 }
    { line = $0; sub(/^[[:space:]]+/, "", line); sub(/[[:space:]]+$/, "", line)
      if (i <= np && line ~ pat[i]) i++ }
    END { if (i <= np) { print txt[i]; exit 1 } }
  ' "$2"
}

mkdir -p "$tmp/blocks"
echo 0 >"$tmp/blocks/count"
unmarked=0
for f in "$@"; do
  start=$(cat "$tmp/blocks/count")
  err=$(extract "$f" "$start" 2>&1 >/dev/null)
  if [ -n "$err" ]; then echo "$err" >&2; unmarked=1; fi
done
[ "$unmarked" = 0 ] || { echo "test_readme: mark every example (see the top of tests/test_readme.sh)" >&2; fail=1; }
nblocks=$(cat "$tmp/blocks/count")

for ((b = 1; b <= nblocks; b++)); do
  dir=$tmp/blocks/$b
  where=$(cat "$dir/where")
  opts=$(cat "$dir/opts")
  case "$opts" in skip*) echo "skip $where: ${opts#skip}"; continue ;; esac
  blocks=$((blocks + 1))
  exits=() noshape=0 expects=()
  IFS=';' read -ra items <<<"$opts"
  for it in "${items[@]}"; do
    it=$(echo "$it" | sed 's/^ *//; s/ *$//')
    case "$it" in
      exit=*) IFS=',' read -ra exits <<<"${it#exit=}" ;;
      noshape) noshape=1 ;;
      expect=*) expects+=("${it#expect=}") ;;
      "") ;;
      *) echo "FAIL $where: unknown marker option '$it'" >&2; fail=1 ;;
    esac
  done
  work=$tmp/run$b
  mkdir -p "$work"
  # One script per block, so a command sees the files and $? of the last.
  script=$work/script.sh
  echo 'cd "$1" || exit 99' >"$script"
  ncmd=0
  while [ -f "$dir/cmd.$((ncmd + 1))" ]; do
    ncmd=$((ncmd + 1))
    { printf '{ %s\n} >"$1/out.%d" 2>&1 </dev/null; r=$?; echo $r >"$1/rc.%d"; (exit $r)\n' \
        "$(cat "$dir/cmd.$ncmd")" "$ncmd" "$ncmd"; } >>"$script"
  done
  PATH="$tmp/path:$PATH" timeout 300 bash "$script" "$work" >/dev/null 2>&1
  for ((i = 1; i <= ncmd; i++)); do
    cmds=$((cmds + 1))
    c=$(head -1 "$dir/cmd.$i")
    want=${exits[$((i - 1))]:-0}
    got=$(cat "$work/rc.$i" 2>/dev/null || echo "none (timed out or not reached)")
    if [ "$got" != "$want" ]; then
      echo "FAIL $where: \$ $c: exit status $got, the README says $want" >&2
      sed 's/^/    | /' "$work/out.$i" 2>/dev/null | head -20 >&2
      fail=1
      continue
    fi
    if [ "$noshape" = 0 ] && [ -s "$dir/shape.$i" ]; then
      to_regex "$dir/shape.$i" >"$work/pat.$i"
      if ! miss=$(match_shape "$work/pat.$i" "$work/out.$i" "$dir/shape.$i"); then
        echo "FAIL $where: \$ $c: output has no line like (in this order):" >&2
        echo "    $miss" >&2
        sed 's/^/    | /' "$work/out.$i" | head -40 >&2
        fail=1
        continue
      fi
    fi
    echo "ok   $where: \$ $c"
  done
  for re in "${expects[@]}"; do
    if ! cat "$work"/out.* 2>/dev/null | grep -Eq -- "$re"; then
      echo "FAIL $where: no output line of the block matches /$re/" >&2
      cat "$work"/out.* 2>/dev/null | sed 's/^/    | /' | head -40 >&2
      fail=1
    fi
  done
done

[ "$blocks" -gt 0 ] || { echo "test_readme: no marked example found" >&2; fail=1; }
echo "test_readme: $blocks blocks, $cmds commands"
exit "$fail"
