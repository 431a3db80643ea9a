# opts.sh - the option loop of the scripts that take --NAME VALUE
# options and then binaries, sourced after `set -euo pipefail`:
#
#   . "$(dirname "$0")/opts.sh"
#   opts_parse SCRIPT "NAME ..." "$@"; set -- "${opts_rest[@]}"
#
# Each --NAME VALUE (NAME one of the list) sets the variable NAME (the
# script gives it its default first); -h or --help prints the comment at
# the top of the script (line 2 to the `set -euo` line) and exits 0; any
# other option is an error: "SCRIPT: unknown option '-x' (see --help)",
# exit 2. The first argument that is not an option ends the options; it
# and the rest are left in the array opts_rest. die MESSAGE prints
# "SCRIPT: MESSAGE" and exits 2.
die() { echo "$opts_script: $*" >&2; exit 2; }
opts_parse() {
  opts_script=$1
  local names=" $2 " name
  shift 2
  while [ $# -gt 0 ]; do
    case $1 in
      -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      --*)
        name=${1#--}
        case $names in *" $name "*) ;; *) die "unknown option '$1' (see --help)" ;; esac
        printf -v "$name" '%s' "$2"
        shift 2 ;;
      -*) die "unknown option '$1' (see --help)" ;;
      *) break ;;
    esac
  done
  opts_rest=("$@")
}
