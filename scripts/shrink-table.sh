#!/usr/bin/env bash
# shrink-table.sh - for every shipped mutation (collsim run --list-bugs):
# explore its documented configuration until a failure, shrink that
# failure, and print events, ranks and deviations before and after.
#
# Usage: scripts/shrink-table.sh [COLLSIM]   (default build/collsim)
# "Deviations before" counts the steps of the explored schedule where the
# actor changes, the deviations shrink starts from; "after" the ones it
# keeps. Prints a Markdown table; temporary traces go to a directory that
# is removed at the end.
set -euo pipefail
bin=${1:-build/collsim}
[ -x "$bin" ] || { echo "shrink-table.sh: $bin is not an executable (build first)" >&2; exit 2; }
dir=$(mktemp -d /tmp/collsim-shrink-table-XXXXXX)
trap 'rm -rf "$dir"' EXIT

echo "| mutation | outcome | events | ranks | count | deviations | shrink runs, s |"
echo "|---|---|---|---|---|---|---|"
"$bin" run --list-bugs | awk '/^[a-z]/ {name=$1} /with:/ {sub(/.*with: */, ""); print name "\t" $0}' |
while IFS=$'\t' read -r bug opts; do
  # explore sets the schedule, the memory model and the trace itself
  opts=$(sed -E 's/--schedule [^ ]+//; s/--memory-model [^ ]+//; s/--trace [^ ]+//' <<<"$opts")
  mkdir -p "$dir/$bug"
  # shellcheck disable=SC2086
  if "$bin" explore $opts --bug "$bug" --no-shrink -o "$dir/$bug" >"$dir/$bug.explore" 2>&1; then
    echo "| \`$bug\` | no failure in 1000 schedules | | | | | |"
    continue
  fi
  if ! "$bin" shrink "$dir/$bug/explore-1.cstrace" -o "$dir/$bug/min.cstrace" --no-story \
      >"$dir/$bug.shrink" 2>/dev/null; then
    echo "| \`$bug\` | shrink failed | | | | | |"
    continue
  fi
  sig=$(sed -n '1s/^shrink: .* -> //p' "$dir/$bug.shrink")
  line=$(sed -n 2p "$dir/$bug.shrink")
  ranks=$(sed -E 's/.*ranks ([0-9]+ -> [0-9]+).*/\1/' <<<"$line")
  count=$(sed -E 's/.*count ([0-9]+ -> [0-9]+).*/\1/' <<<"$line")
  devs=$(sed -E 's/.*deviations ([0-9]+ -> [^,]+),.*/\1/' <<<"$line")
  events=$(sed -E 's/.*events ([0-9]+ -> [0-9]+).*/\1/' <<<"$line")
  runs=$(sed -E 's/.*\(([0-9]+) runs, ([0-9.]+) s\).*/\1, \2/' <<<"$line")
  echo "| \`$bug\` | $sig | $events | $ranks | $count | $devs | $runs |"
done
