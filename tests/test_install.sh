#!/usr/bin/env bash
# test_install.sh - collsim as a new user meets it: installed into a temp
# prefix, the examples built with pkg-config against that prefix only,
# run with --algo ./x.so and verified, each deliberate bug found by
# explore, explained by check (an edge named) and replayed; the public
# library entry points called from a program of one's own, built once
# with pkg-config and once with find_package(collsim); and the refusals
# of a missing file, a missing symbol and a wrong ABI version.
#
# Usage: tests/test_install.sh SOURCE_DIR BUILD_DIR VERSION
# Exit 0 when all hold; else the first failure, exit 1. Temp dirs go.
set -euo pipefail
src=${1:?usage: test_install.sh SOURCE_DIR BUILD_DIR VERSION}
bld=${2:?usage: test_install.sh SOURCE_DIR BUILD_DIR VERSION}
version=${3:?usage: test_install.sh SOURCE_DIR BUILD_DIR VERSION}
tmp=$(mktemp -d /tmp/collsim-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }
# expect CODE CMD...: runs CMD, output into $tmp/out, exit status CODE.
expect() {
  local want=$1 rc=0; shift
  timeout 300 "$@" >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || { cat "$tmp/out" >&2; fail "'$*' exited $rc, expected $want"; }
}
has() { grep -qE -- "$1" "$tmp/out" || { cat "$tmp/out" >&2; fail "no '$1' in the output of the last command"; }; }

p=$tmp/p
cmake --install "$bld" --prefix "$p" >/dev/null
export PKG_CONFIG_LIBDIR=$p/lib/pkgconfig PKG_CONFIG_PATH=
cs=$p/bin/collsim
[ -x "$cs" ] || fail "no $cs after install"
[ "$(pkg-config --modversion collsim)" = "$version" ] || fail "pkg-config --modversion collsim: not $version"
for f in include/collsim/collsim.h include/collsim/device.h include/collsim/collective.h \
         include/collsim/types.h include/collsim/version.h lib/libcollsim.a \
         lib/cmake/collsim/collsimConfig.cmake share/man/man1/collsim.1 share/man/man3/collsim-api.3; do
  [ -f "$p/$f" ] || fail "$f not installed"
done
grep -q '^\.TH COLLSIM 1' "$p/share/man/man1/collsim.1" || fail "collsim.1 is not a man page"
grep -q '^\.TH COLLSIM-API 3' "$p/share/man/man3/collsim-api.3" || fail "collsim-api.3 is not a man page"

# A sanitizer build's library needs its runtime in programs linked to it.
san=
if nm -D -u "$p/lib/libcollsim.so" | grep '__asan_' >/dev/null; then
  san="-fsanitize=address,undefined"
fi

# The shared library exports exactly the public API.
nm -D --defined-only "$p/lib/libcollsim.so" | awk '$2 ~ /[TDRB]/ {print $3}' | sed 's/@.*//' | sort >"$tmp/exported"
grep -E '^[a-z_0-9]+$' "$src/dist/collsim.sym" | sort >"$tmp/public"
diff "$tmp/public" "$tmp/exported" >/dev/null || fail "libcollsim exports other symbols than dist/collsim.sym"
nm -g --defined-only "$p/lib/libcollsim.a" | awk '$2 ~ /[TDRB]/ {print $3}' | sort >"$tmp/exported.a"
diff "$tmp/public" "$tmp/exported.a" >/dev/null || fail "libcollsim.a has other global symbols than dist/collsim.sym"

# The examples, as the README builds them.
for ex in rd_allreduce ring_allgather; do
  cp -r "$src/examples/$ex" "$tmp/$ex"
  make -s -C "$tmp/$ex" >/dev/null
  make -s -C "$tmp/$ex" BUG=1 >/dev/null
done
cd "$tmp/rd_allreduce"
expect 0 "$cs" run --algo ./rd_allreduce.so --ranks 8 --count 100 --iters 3
has "^collsim run: rd-allreduce .*8 ranks"
has "^result: bit-exact on all 8 ranks"
has "^signals: every cell at its final value"
expect 0 "$cs" run --algo ./rd_allreduce.so --ranks 4 --count 40 --dtype bf16 --op max \
  --schedule random:7 --memory-model relaxed --check
has "^check:"
has "^0 findings"
expect 2 "$cs" run --algo ./rd_allreduce.so --ranks 3
has "needs a power-of-two number of ranks"
# The built-ins' own options are refused with a plug-in, not ignored.
for o in "--signals single-use" "--signals self-clearing" "--minmax pto"; do
  expect 2 "$cs" run --algo ./rd_allreduce.so --ranks 2 $o
  has "^collsim run: ${o%% *} is for the built-in algorithms, not --algo .*rd_allreduce\.so$"
  [ "$(wc -l <"$tmp/out")" = 1 ] || fail "run $o with a plug-in takes more than one line"
done
for o in "--minmax pto:--minmax" "--signals self-clearing:--signals" "--floor:--floor" \
         "-d all:-d all" "-o all:-o all"; do
  expect 2 "$cs" bench --algo ./rd_allreduce.so --ranks 2 -e 64 ${o%%:*}
  has "^collsim bench: ${o#*:} is for the built-in algorithms, not --algo .*rd_allreduce\.so$"
  [ "$(wc -l <"$tmp/out")" = 1 ] || fail "bench $o with a plug-in takes more than one line"
done
mkdir "$tmp/x1"
expect 1 "$cs" explore --algo ./rd_allreduce_bug.so --ranks 4 --count 8 --schedules 200 -j 2 -o "$tmp/x1"
has "^failure 1: wrong result"
has "^shrink: ranks 4 -> 2, "
tr=$tmp/x1/explore-1.cstrace
[ -f "$tr" ] || fail "explore kept no trace"
[ -f "$tmp/x1/explore-1.min.cstrace" ] || fail "explore did not shrink the failure of ./rd_allreduce_bug.so"
expect 1 "$cs" check "$tr"
# the write-after-read race, told load first (the order the algorithm
# means), with the read-complete edge
has "^1\. race.*load of data.* is not ordered before rank [0-9]+'s store of data"
has "a read-complete barrier\) order them"
expect 0 "$cs" replay "$tr"
has "identical; outcome: wrong result"
expect 0 "$cs" replay "$tmp/x1/explore-1.min.cstrace"
has "identical; outcome: wrong result"
expect 0 "$cs" trace "$tr"
has "collective .*rd_allreduce_bug\.so"

cd "$tmp/ring_allgather"
expect 0 "$cs" run --algo ./ring_allgather.so --ranks 5 --count 33 --dtype fp16
has "^result: bit-exact on all 5 ranks"
mkdir "$tmp/x2"
expect 1 "$cs" explore --algo ./ring_allgather_bug.so --ranks 3 --count 4 --schedules 200 -j 2 -o "$tmp/x2"
has "^failure 1: wrong result"
expect 1 "$cs" check "$tmp/x2/explore-1.cstrace"
has "race.*put of out"
has "a fence before the notify orders them"

# pto-isa #322 as a collective: passes every schedule of the models
# without caches, loses a flag under a2a3, passes again padded.
cp -r "$src/examples/packed_flags" "$tmp/packed_flags"
make -s -C "$tmp/packed_flags" >/dev/null
cd "$tmp/packed_flags"
for m in sc fifo relaxed; do
  for s in random:1 random:2 pct:1:2 latest; do
    expect 0 "$cs" run --algo ./packed_flags.so --ranks 4 --count 4 --schedule $s --memory-model $m
  done
done
expect 1 "$cs" run --algo ./packed_flags.so --ranks 4 --count 4 --schedule random:1 --memory-model a2a3
has "^result: WRONG"
expect 0 "$cs" run --algo ./packed_flags.so --ranks 4 --count 4 --schedule random:1 --memory-model a2a3 --signal-layout padded
has "^result: bit-exact on all 4 ranks"
mkdir "$tmp/x3"
expect 1 "$cs" explore --algo ./packed_flags.so --ranks 2 --count 4 --memory-model a2a3 --schedules 200 -j 1 -o "$tmp/x3"
has "^failure 1: wrong result"
expect 1 "$cs" check "$tmp/x3/explore-1.cstrace"
has "line clobber: rank [01]'s Set of rank 0's flags\[[01]\] and rank [01]'s Set of rank 0's flags"
expect 0 "$cs" replay "$tmp/x3/explore-1.cstrace"
has "identical; outcome: wrong result"
expect 2 "$cs" run --algo ../ring_allgather/ring_allgather.so --signal-layout diagonal
has "^collsim run: --signal-layout 'diagonal' is not accepted: expected packed or padded$"

# Refusals: one line, exit 2.
cd "$tmp"
expect 2 "$cs" run --algo ./missing.so
has "^collsim run: --algo ./missing.so: cannot open: No such file or directory$"
cat >nosym.c <<'C'
int not_a_collective = 1;
C
cat >abi.c <<'C'
#include <collsim/collsim.h>
const cs_collective_t collsim_collective = {.abi = 99, .size = sizeof(cs_collective_t)};
C
cc -shared -fPIC -o nosym.so nosym.c
cc -shared -fPIC -o abi.so abi.c $(pkg-config --cflags --libs collsim)
expect 2 "$cs" run --algo ./nosym.so
has "nosym\.so: does not export collsim_collective"
[ "$(wc -l <"$tmp/out")" = 1 ] || fail "a missing symbol takes more than one line"
expect 2 "$cs" run --algo ./abi.so
has "abi\.so: collsim_collective is for collective ABI version 99; this collsim accepts 1"

# The library's own entry points, from a program of one's own.
cat >driver.c <<'C'
#include <collsim/collsim.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
  const cs_collective_t *c;
  void *h;
  char why[512];
  h = NULL;
  c = argc >= 3 ? cs_coll_builtin(argv[1]) : NULL;
  if (!c && (argc < 3 || cs_coll_open(argv[1], &c, &h, why, sizeof why) < 0)) {
    fprintf(stderr, "%s\n", argc >= 3 ? why : "usage: driver SO SCHEDULE [COUNT [TRACE]]");
    return 2;
  }
  cs_coll_cfg_t cfg = {.nranks = 4, .count = argc > 3 ? strtoull(argv[3], 0, 10) : 8,
                       .dtype = CS_FP32, .op = CS_SUM, .tile_bytes = 16384,
                       .iters = 1};
  cs_coll_run_opts_t o = {.schedule = argv[2], .trace = argc > 4 ? argv[4] : NULL};
  cs_coll_result_t r;
  int rc = cs_coll_run(c, &cfg, &o, &r);
  printf("%s rc %d verified %d wrong %llu %s\n", CS_VERSION, rc, r.verified,
         (unsigned long long)r.wrong, r.why);
  cs_coll_close(h);
  return rc < 0 ? 3 : rc;
}
C
cc $san -o driver driver.c $(pkg-config --cflags --libs collsim)
expect 0 ./driver "$tmp/rd_allreduce/rd_allreduce.so" free
has "^$version rc 0 verified 1 wrong 0"
expect 1 ./driver "$tmp/rd_allreduce/rd_allreduce_bug.so" latest
has "^$version rc 1 verified 1 wrong [1-9]"
# A trace the program writes names the shared object it opened (its real
# path and hash), so collsim replays, checks and shrinks it.
expect 1 ./driver ./rd_allreduce/rd_allreduce_bug.so latest 8 "$tmp/api.cstrace"
expect 0 "$cs" trace "$tmp/api.cstrace"
has "collective $tmp/rd_allreduce/rd_allreduce_bug\.so \(--algo\), SHA-256 [0-9a-f]{64}"
expect 0 "$cs" replay "$tmp/api.cstrace"
has "^replayed [0-9]+ events: identical; outcome: wrong result"
expect 1 "$cs" check "$tmp/api.cstrace"
has "read-complete barrier"
expect 0 "$cs" shrink "$tmp/api.cstrace" -o "$tmp/api-short.cstrace"
has "story:"
# One loaded by a bare name (the loader's search) has no path to record:
# replay and shrink say so in one line.
LD_LIBRARY_PATH=$tmp/rd_allreduce expect 0 ./driver rd_allreduce.so free 8 "$tmp/bare.cstrace"
expect 2 "$cs" replay "$tmp/bare.cstrace"
has "algo_path is empty: its collective was not loaded from a shared object by a path"
expect 2 "$cs" shrink "$tmp/bare.cstrace"
has "its collective was not loaded from a shared object by a path"
# The record follows the object the loader holds, open by open: `life A B
# TRACE [CMD [N [2]]]` opens A (each a path, or bare: a name for the
# loader's search), runs CMD, opens A N more times without closing, opens
# B, closes A's first handle and runs B's collective with a trace (with 2:
# closes B's and runs A's); the run verifies with the code that was
# loaded.
cat >life.c <<'C'
#include <collsim/collsim.h>
#include <stdio.h>
#include <stdlib.h>
static void *open1(const char *p, const cs_collective_t **c)
{
  void *h;
  char why[512];
  if (cs_coll_open(p, c, &h, why, sizeof why) < 0) {
    fprintf(stderr, "%s\n", why);
    exit(2);
  }
  return h;
}
int main(int argc, char **argv)
{
  const cs_collective_t *c;
  void *first = open1(argv[1], &c);
  if (argc > 4 && system(argv[4]) != 0) /* between the opens */
    return 2;
  for (int i = 0; argc > 5 && i < atoi(argv[5]); i++) /* opens never closed */
    open1(argv[1], &c);
  const cs_collective_t *a = c;
  void *h = open1(argv[2], &c);
  if (argc > 6 && argv[6][0] == '2') { /* keep A, run it */
    void *t = first;
    first = h;
    h = t;
    c = a;
  }
  cs_coll_close(first);
  cs_coll_cfg_t cfg = {.nranks = 4, .count = 8, .dtype = CS_FP32, .op = CS_SUM,
                       .tile_bytes = 16384, .iters = 1};
  cs_coll_run_opts_t o = {.schedule = "latest", .trace = argv[3]};
  cs_coll_result_t r;
  int rc = cs_coll_run(c, &cfg, &o, &r);
  printf("rc %d verified %d wrong %llu %s\n", rc, r.verified,
         (unsigned long long)r.wrong, r.why);
  cs_coll_close(h);
  return rc < 0 ? 3 : rc;
}
C
cc $san -o life life.c $(pkg-config --cflags --libs collsim)
good=$tmp/rd_allreduce/rd_allreduce.so
cp "$good" cur.so
# 1. The file is replaced while the object is loaded: the second open gets
# the loaded (correct) code, and the trace keeps the first open's hash,
# so replay refuses the changed file instead of running other code.
expect 0 ./life ./cur.so ./cur.so "$tmp/life1.cstrace" "cp $tmp/rd_allreduce/rd_allreduce_bug.so cur.so.new && mv cur.so.new cur.so"
has "rc 0 verified 1 wrong 0"
expect 2 "$cs" replay "$tmp/life1.cstrace"
has "has changed since the trace was recorded"
# 2. Opened by its path, then by a bare name (one object, one handle):
# closing either handle leaves the object hashed at the first open, and
# its trace replays. Loaded by a bare name first, the bytes it was loaded
# from are unknown: no path is recorded.
cp "$good" p1.so
for keep in 1 2; do
  LD_LIBRARY_PATH=$tmp expect 0 ./life ./p1.so p1.so "$tmp/life2.cstrace" true 0 $keep
  expect 0 "$cs" replay "$tmp/life2.cstrace"
  has "^replayed [0-9]+ events: identical; outcome: verified"
done
LD_LIBRARY_PATH=$tmp expect 0 ./life p1.so ./p1.so "$tmp/life3.cstrace"
expect 2 "$cs" replay "$tmp/life3.cstrace"
has "algo_path is empty"
# 3. Forty opens of one object take one slot: another object opened after
# them is still recorded.
cp "$good" p2.so
expect 0 ./life ./p1.so ./p2.so "$tmp/life4.cstrace" true 40
expect 0 "$cs" replay "$tmp/life4.cstrace"
has "^replayed [0-9]+ events: identical; outcome: verified"
# The built-ins through the same registration, against collsim's oracle.
for a in mesh ring host ring-push twophase ring-nb onephase host-push ring-bidir; do
  expect 0 ./driver $a random:5 8 "$tmp/$a.cstrace"
  has "^$version rc 0 verified 1 wrong 0"
  # ... and its trace is that algorithm's run, which replay takes
  expect 0 "$cs" replay "$tmp/$a.cstrace"
  has "^replayed [0-9]+ events: identical; outcome: verified"
done
# An algorithm's own precondition is its registration's refusal.
expect 3 ./driver twophase free 9
has "rc -22 .*twophase needs a count that is a multiple of the rank count"
# So is a rank limit: the driver runs 4 ranks, ibing takes 2.
expect 3 ./driver ibing free
has "rc -22 .*simpler's ibing supports at most 2 ranks"
# Linked statically (a built-in: a static program that loads shared-object
# collectives must export the API itself, as collsim does).
cc $san -o driver-static driver.c $(pkg-config --cflags collsim) "$p/lib/libcollsim.a" \
  $(pkg-config --static --libs-only-l collsim | sed 's/-lcollsim//')
readelf -d driver-static | grep 'libcollsim' >/dev/null && fail "driver-static needs libcollsim.so"
expect 0 ./driver-static ring random:9
has "^$version rc 0 verified 1 wrong 0"
mkdir cm
cat >cm/CMakeLists.txt <<'C'
cmake_minimum_required(VERSION 3.18)
project(driver C)
find_package(collsim REQUIRED)
add_executable(driver ../driver.c)
target_link_libraries(driver PRIVATE collsim::collsim)
C
cmake -S cm -B cm/build -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_FLAGS="$san" >/dev/null
cmake --build cm/build >/dev/null
expect 0 cm/build/driver "$tmp/rd_allreduce/rd_allreduce.so" random:3
has "^$version rc 0 verified 1 wrong 0"
# The man page's example, as the installed page prints it: it builds,
# verifies, and its trace replays.
sed -n '/^\.SH EXAMPLES/,/^\.SH SEE ALSO/p' "$p/share/man/man3/collsim-api.3" |
  sed -n '/^#include/,/^}/p' | sed 's/\\en/\\n/g' >manex.c
grep -q 'cs_coll_run' manex.c || fail "collsim-api(3) has no example program"
cc $san -std=gnu11 -o manex manex.c $(pkg-config --cflags --libs collsim)
mkdir manex.d
(cd manex.d && expect 0 ../manex)
has "^verified, 0 wrong"
expect 0 "$cs" trace manex.d/ring.cstrace --kind notify
has "schedule +random:1"
expect 0 "$cs" replay manex.d/ring.cstrace
has "identical; outcome: verified"
echo "test_install: all checks passed"
