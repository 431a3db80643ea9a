#!/usr/bin/env bash
# make-traces.sh - regenerates every trace shipped in traces/: the two
# sample runs and one recorded failure per bug mutation (traces/bugs/), each
# with the recipe from `collsim run --list-bugs`. Run from the repository
# root after building (scripts/setup.sh build).
set -euo pipefail
cd "$(dirname "$0")/.."
cs=build/collsim
$cs run --algo ring --ranks 4 --count 17 --dtype fp16 --op sum --iters 1 \
  --trace traces/ring-n4-c17-fp16-sum.cstrace >/dev/null
$cs run --algo mesh --ranks 3 --count 4097 --dtype fp32 --op max --iters 1 \
  --trace traces/mesh-n3-c4097-fp32-max.cstrace >/dev/null
$cs run --algo ring-push --ranks 4 --count 17 --dtype fp16 --op sum --iters 1 \
  --trace traces/ring-push-n4-c17-fp16-sum.cstrace >/dev/null
$cs run --algo twophase --ranks 4 --count 20 --dtype fp16 --op sum --iters 1 \
  --trace traces/twophase-n4-c20-fp16-sum.cstrace >/dev/null
$cs run --algo ring-nb --ranks 4 --count 20 --dtype fp16 --op sum --iters 1 \
  --trace traces/ring-nb-n4-c20-fp16-sum.cstrace >/dev/null
$cs run --algo onephase --ranks 3 --count 20 --dtype fp16 --op sum --iters 1 \
  --trace traces/onephase-n3-c20-fp16-sum.cstrace >/dev/null
$cs run --algo host-push --ranks 3 --count 30 --dtype fp32 --op sum --iters 1 \
  --trace traces/host-push-n3-c30-fp32-sum.cstrace >/dev/null
$cs run --algo ring-bidir --ranks 4 --count 16 --dtype fp32 --op sum --iters 1 \
  --trace traces/ring-bidir-n4-c16-fp32-sum.cstrace >/dev/null
$cs run --algo ibing --ranks 2 --count 20 --dtype fp32 --op sum --iters 1 \
  --trace traces/ibing-n2-c20-fp32-sum.cstrace >/dev/null
mkdir -p traces/bugs
$cs run --list-bugs | awk '/^[a-z]/ {name=$1} /with:/ {sub(/.*with: /, ""); sub(/ --trace FILE/, ""); print name " " $0}' |
while read -r name recipe; do
  # A run that ends in a fault is recorded controlled: in a free run the
  # other ranks go on for a while after the fault, steps its replay (which
  # stops at the fault) cannot reproduce, so it would not be identical.
  [ "$name" = unaligned-slots ] && recipe="$recipe --schedule latest"
  # shellcheck disable=SC2086
  $cs run $recipe --iters 1 --bug "$name" --trace "traces/bugs/$name.cstrace" >/dev/null 2>&1 \
    && status=0 || status=$?
  echo "traces/bugs/$name.cstrace: collsim run $recipe --iters 1 --bug $name (exit $status)"
done
