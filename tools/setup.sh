#!/usr/bin/env bash
# setup.sh - one step from a fresh Debian 12 machine to a result.
#
#   tools/setup.sh demo [ARGS...]   install what is missing, build, run the main job
#   tools/setup.sh test             install what is missing, build, run every test suite
#   tools/setup.sh build            install what is missing and build
#
# Installs with apt-get only the Debian packages that are not yet installed
# (as root, or through sudo), configures with CMake into ./build and builds.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
[ $# -gt 0 ] && shift

pkgs=(gcc libc6-dev make cmake pkg-config liburing-dev libcriterion-dev libncurses-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

quiet() { # run quietly; show everything only if it fails
  local out
  if ! out=$("$@" 2>&1); then echo "$out" >&2; exit 1; fi
}
quiet cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
quiet cmake --build build -j"$(nproc)"

case "$mode" in
  demo)  exec ./build/collsim run "$@" ;;
  test)  cd build && exec ctest --output-on-failure "$@" ;;
  build) ;;
  *) echo "usage: tools/setup.sh demo|test|build" >&2; exit 2 ;;
esac
