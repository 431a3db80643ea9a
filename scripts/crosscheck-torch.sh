#!/usr/bin/env bash
# crosscheck-torch.sh - checks collsim's max/min against torch, the golden
# of PyPTO's tests, on NaN, ±0, ±inf, subnormals and the largest finite.
#
#   scripts/crosscheck-torch.sh [--ranks "2 3 4 5"] [--modes "ieee propagate pto"]
#
# Installs python3-torch and python3-numpy with apt-get if Debian's python3
# cannot import them (as root or through sudo; about 230 packages, so this
# is not part of CI or of the test suite), builds collsim (scripts/setup.sh
# build). Per rank count and dtype (fp32, fp16, bf16) it writes IN.npy
# with NaN (quiet, with a payload, negative), +0/-0, ±inf, subnormals, the
# largest finite and ordinary values, every ordered pair of them on every
# ordered pair of ranks, the other ranks mixed, plus a ragged tail of 7;
# runs `collsim run --algo mesh|ring|host --op max|min --minmax M --input
# IN.npy --output OUT.npy` and compares every rank's row bit for bit (any
# NaN equal to any NaN) with two goldens: torch.stack(rows).max(dim=0)
# .values (.min), what PyPTO's tests use, and torch.maximum (minimum)
# folded in the algorithm's operand order (mesh/host: own row first, then
# the peers ascending; ring: from the owner's right neighbour, each rank's
# own value the first operand). Prints a table of mode x algorithm x dtype
# x golden: "match" or the number of mismatching elements, how many of
# them are only the sign of a zero, and an example. Exit 1 if --minmax
# propagate differs from torch anywhere but the sign of a zero result.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="2 3 4 5"; modes="ieee propagate pto"
die() { echo "crosscheck-torch: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?}; shift 2 ;;
    --modes) modes=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for n in $ranks; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 16 ] ||
    die "--ranks '$n' is not accepted: expected whole numbers 2..16"
done
for m in $modes; do
  case "$m" in ieee|propagate|pto) ;; *) die "--modes '$m' is not accepted: expected ieee, propagate or pto" ;; esac
done
py=/usr/bin/python3 # Debian's, where apt-get puts torch
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  sudo=; [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "crosscheck-torch: installing python3-torch (large)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    python3-torch python3-numpy >/dev/null
fi
bash scripts/setup.sh build
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" - "$PWD/build/collsim" "$tmp" "$ranks" "$modes" <<'EOF'
import subprocess, sys
import numpy as np
import torch

collsim, tmp, ranks, modes = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
# Bits of each dtype: qNaN, NaN with payload, -NaN, +0, -0, +inf, -inf,
# smallest subnormal, -largest subnormal, largest finite, -largest finite,
# 1, -1, 2, smallest normal.
SPECIALS = {
    'fp32': [0x7fc00000, 0x7fc12345, 0xffc00000, 0, 0x80000000, 0x7f800000, 0xff800000,
             1, 0x807fffff, 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x40000000, 0x00800000],
    'fp16': [0x7e00, 0x7e2a, 0xfe00, 0, 0x8000, 0x7c00, 0xfc00,
             1, 0x83ff, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x4000, 0x0400],
    'bf16': [0x7fc0, 0x7fc5, 0xffc0, 0, 0x8000, 0x7f80, 0xff80,
             1, 0x807f, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x4000, 0x0080],
}
UINT = {'fp32': np.uint32, 'fp16': np.uint16, 'bf16': np.uint16}
TDT = {'fp32': torch.float32, 'fp16': torch.float16, 'bf16': torch.bfloat16}
SINT = {'fp32': torch.int32, 'fp16': torch.int16, 'bf16': torch.int16}

def gen(t, n):
    s = np.array(SPECIALS[t], dtype=UINT[t]); v = len(s); pairs = n * (n - 1)
    count = v * v * pairs + 7
    rng = np.random.default_rng(n)
    x = s[rng.integers(0, v, size=(n, count))]
    e = np.arange(v * v * pairs)
    i, j, pr = e % v, e // v % v, e // (v * v)
    p, q = pr % n, pr // n
    q = np.where(q >= p, q + 1, q)
    x[p, e] = s[i]
    x[q, e] = s[j]
    return x

def to_npy(t, bits):
    return bits.view(np.float32) if t == 'fp32' else bits.view(np.float16) if t == 'fp16' else bits

def to_torch(t, bits):
    signed = bits.view(np.int32 if t == 'fp32' else np.int16)
    return torch.from_numpy(signed.copy()).view(TDT[t])

def from_torch(t, x):
    return x.contiguous().view(SINT[t]).numpy().view(UINT[t])

def is_nan(t, b):
    b = b.astype(np.uint64)
    if t == 'fp32':
        return (b & 0x7fffffff) > 0x7f800000
    return (b & 0x7fff) > (0x7c00 if t == 'fp16' else 0x7f80)

def owners(t, n, size):
    # docs/algorithms.md §4.2 boundaries; the owner is the largest
    # non-empty segment k with B(k) <= e.
    if t == 'fp32':
        b = [k * size // n for k in range(n + 1)]
    else:
        b = [min(size, -(-k * size // (16 * n)) * 16) for k in range(n + 1)]
    own = np.zeros(size, dtype=np.int64)
    for k in range(n):
        if b[k] < b[k + 1]:
            own[b[k]:] = k
    return own

def fold(t, op, algo, x):
    # torch.maximum/minimum in the algorithm's operand order, every rank.
    f = torch.maximum if op == 'max' else torch.minimum
    n, size = x.shape
    xs = [to_torch(t, x[r]) for r in range(n)]
    if algo == 'ring':
        own = torch.from_numpy(owners(t, n, size))
        acc = torch.empty_like(xs[0])
        for k in range(n):
            a = xs[(k + 1) % n]
            for step in range(2, n + 1):
                a = f(xs[(k + step) % n], a)
            acc = torch.where(own == k, a, acc)
        return np.stack([from_torch(t, acc)] * n)
    out = []
    for m in range(n):
        a = xs[m]
        for p in range(n):
            if p != m:
                a = f(a, xs[p])
        out.append(from_torch(t, a))
    return np.stack(out)

def golden_stack(t, op, x):
    st = torch.stack([to_torch(t, x[r]) for r in range(x.shape[0])])
    g = st.max(dim=0).values if op == 'max' else st.min(dim=0).values
    return np.stack([from_torch(t, g)] * x.shape[0])

def compare(t, x, want, got):
    nw, ng = is_nan(t, want), is_nan(t, got)
    bad = ~((nw & ng) | (~nw & ~ng & (want == got)))
    mag = 0x7fffffff if t == 'fp32' else 0x7fff
    zero_sign = bad & ~nw & ~ng & ((want & mag) == 0) & ((got & mag) == 0)
    cnt, zs = int(bad.sum()), int(zero_sign.sum())
    if cnt == 0:
        return 'match', 0, 0
    r, e = [int(a[0]) for a in np.nonzero(bad)]
    w, g = '0x%x' % int(want[r, e]), '0x%x' % int(got[r, e])
    ins = ','.join('0x%x' % int(x[k, e]) for k in range(x.shape[0]))
    return ('%d mismatches (%d sign of zero only); e.g. rank %d elem %d in (%s): torch %s collsim %s'
            % (cnt, zs, r, e, ins, w, g)), cnt, zs

def run(algo, op, mode, inp, outp):
    r = subprocess.run([collsim, 'run', '--algo', algo, '--op', op, '--minmax', mode,
                        '--input', inp, '--output', outp], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('collsim run --algo %s --op %s --minmax %s failed:\n%s%s'
                 % (algo, op, mode, r.stdout, r.stderr))

def main():
    print('torch %s; any NaN equal to any NaN; "sign of zero only": both results are zeros' % torch.__version__)
    print('%-9s %-4s %-4s %-3s %-2s %-13s %s' % ('mode', 'algo', 'type', 'op', 'N', 'golden', 'result'))
    fail, totals = False, {}
    for n in map(int, ranks):
        for t in ('fp32', 'fp16', 'bf16'):
            x = gen(t, n)
            inp, outp = tmp + '/in.npy', tmp + '/out.npy'
            np.save(inp, to_npy(t, x))
            for op in ('max', 'min'):
                gs = golden_stack(t, op, x)
                for algo in ('mesh', 'ring', 'host'):
                    gf = fold(t, op, algo, x)
                    for mode in modes:
                        run(algo, op, mode, inp, outp)
                        got = np.load(outp).view(UINT[t])
                        for name, want in (('stack.%s' % op, gs), ('%simum-fold' % op, gf)):
                            text, cnt, zs = compare(t, x, want, got)
                            print('%-9s %-4s %-4s %-3s %-2d %-13s %s' % (mode, algo, t, op, n, name, text))
                            key = (mode, name.split('.')[0].replace('minimum', 'maximum'))
                            tot = totals.setdefault(key, [0, 0, 0, 0])
                            tot[0] += 1; tot[1] += cnt == 0; tot[2] += cnt; tot[3] += zs
                            if mode == 'propagate' and cnt != zs:
                                fail = True
    for (mode, name), (runs, ok, cnt, zs) in totals.items():
        print('summary: %-9s vs %-13s %3d runs, %3d match; %d mismatching elements, %d of them only the sign of a zero'
              % (mode, 'stack.max/min' if name == 'stack' else 'maximum/minimum-fold', runs, ok, cnt, zs))
    print('crosscheck-torch: propagate %s torch except for the sign of zero results'
          % ('DIFFERS FROM' if fail else 'agrees with'))
    sys.exit(1 if fail else 0)

main()
EOF
