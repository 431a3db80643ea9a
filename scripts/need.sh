# need.sh - sourced by scripts/setup.sh and .ci/stages.sh: the two helpers
# every set-up step uses.
#
#   need LABEL PKG...   installs with apt-get (as root, or through sudo) the
#                       Debian packages given that are not installed yet,
#                       saying "LABEL: installing ..." on stderr
#   quiet CMD...        runs CMD quietly; shows all it printed and exits 1
#                       only if it fails

need() {
  local label=$1 missing=() p sudo=
  shift
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "$label: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

quiet() {
  local out
  if ! out=$("$@" 2>&1); then echo "$out" >&2; exit 1; fi
}
