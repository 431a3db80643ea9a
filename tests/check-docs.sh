#!/usr/bin/env bash
# check-docs.sh - the documentation stands on its own.
#
#   tests/check-docs.sh SOURCE_DIR
#
# Fails when a file path that the docs, sources, scripts or tests name
# (window/, sim/, collectives/, run/, cli/, scripts/, tests/, traces/,
# docs/, dist/, examples/, include/ or .ci/, ending in a source, script,
# doc or trace suffix) does not exist in the tree, when a section sign followed by N or N.M anywhere in the sources, scripts, tests or
# docs has no numbered heading in docs/ to resolve to (`## N. ...` or
# `### N.M ...`, as in docs/algorithms.md), or when any of them names a
# file outside the repository (a path into ../shared or /work/shared), or
# when a link between the markdown files points at no file or heading,
# or when a comment or doc names a bare source file (read.c) that is not
# a file of the tree.
# Reads only; ctest runs it as the entry `docs`.
set -u
cd "${1:?usage: check-docs.sh SOURCE_DIR}" || exit 2

dirs=(README.md docs collectives sim run cli scripts window include dist examples
      tests traces .ci CMakeLists.txt)
fail=0

# Paths that name a file of the tree. A placeholder (traces/bugs/NAME...)
# is none, and a generated header (version.h, from version.h.in) is the
# build's, not the tree's.
while IFS=: read -r file line path; do
  path=${path#./}
  case "$path" in
    include/collsim/version.h) continue ;;
    */NAME.*|*/FILE.*) continue ;; # a placeholder: traces/bugs/NAME.cstrace
  esac
  [ -e "$path" ] || [ -e "$(dirname "$file")/$path" ] && continue
  echo "$file:$line: names $path, which is not in the tree" >&2
  fail=1
done < <(grep -rnoE '(^|[^A-Za-z0-9_./-])(\.ci|window|sim|collectives|run|cli|scripts|tests|traces|docs|dist|examples|include)/[A-Za-z0-9_./-]*[A-Za-z0-9_]\.(c|h|sh|md|cmake|in|cpp|cstrace|sym|py)\b' \
           "${dirs[@]}" --exclude-dir=build --exclude-dir=corpus 2>/dev/null |
         sed -E 's/^([^:]+:[0-9]+:)[^A-Za-z.]*/\1/')

# A bare source name in a comment or a doc ("the reader (read.c)") must
# be the name of a file of the tree. Code is not read (a field access
# looks like a name), nor system headers, nor the generated version
# header, nor the names of the files the docs and tests have a user
# write (mine.c, driver.c, ...).
namefile=$(mktemp)
trap 'rm -f "$namefile"' EXIT
{ git ls-files --cached --others --exclude-standard 2>/dev/null || true; } | sed 's|.*/||' | sort -u >"$namefile"
[ -s "$namefile" ] ||
  find . -path ./build -prune -o -type f -print | sed 's|.*/||' | sort -u >"$namefile"
written="version.h abi.c driver.c foo.c foo.h life.c manex.c mine.c nosym.c plant.c prog.c x.c"
bare=$({
  grep -rnE '^[[:space:]]*(/\*|\*|//|#)' --include='*.c' --include='*.h' --include='*.sh' \
    --include='*.cpp' collectives sim run cli window include tests scripts examples 2>/dev/null
  grep -rn '' --include='*.md' README.md docs traces examples 2>/dev/null
} | LC_ALL=C grep -v '#[[:space:]]*include' |
  LC_ALL=C sed -E 's/<[^>]*>//g; s/^([^:]+:[0-9]+:)/\1 /' |
  LC_ALL=C grep -oE '^[^:]+:[0-9]+:|(^|[^A-Za-z0-9_./<-])[a-z][a-z0-9_]*\.[ch]\b' |
  LC_ALL=C awk -v written="$written" -v names="$namefile" '
    BEGIN { while ((getline n < names) > 0) have[n] = 1
            k = split(written, w, " "); for (i = 1; i <= k; i++) have[w[i]] = 1 }
    /^[^:]+:[0-9]+:$/ { loc = $0; next }
    { sub(/^[^a-z]+/, ""); if (!($0 in have)) print loc " names " $0 ", which is not a file of the tree" }')
if [ -n "$bare" ]; then
  echo "$bare" >&2
  fail=1
fi

heads=$(grep -hoE '^#{2,3} [0-9]+(\.[0-9]+)?[. ]' docs/*.md | sed -E 's/^#+ //; s/[. ]$//' | sort -u)
while IFS=: read -r file line ref; do
  n=${ref#§}
  if ! grep -qxF -- "$n" <<<"$heads"; then
    echo "$file:$line: $ref has no heading '$n' in docs/" >&2
    fail=1
  fi
done < <(grep -rnoE '§[0-9]+(\.[0-9]+)?' "${dirs[@]}" --exclude-dir=build 2>/dev/null |
         grep -v '^tests/check-docs.sh:')

if grep -rnE '\.\./shared|/work/shared' "${dirs[@]}" 2>/dev/null | grep -v '^tests/check-docs.sh:'; then
  echo "check-docs: the lines above name files outside the repository" >&2
  fail=1
fi
# Links between the markdown files: the file exists, and a #fragment is
# the GitHub slug of one of its headings (lower case, punctuation dropped,
# blanks to dashes).
slugs() {
  grep -E '^#{1,6} ' "$1" | sed -E 's/^#+ +//' | tr 'A-Z' 'a-z' |
    sed -E 's/[^a-z0-9 _-]//g; s/ /-/g'
}
for md in README.md docs/*.md traces/*.md; do
  [ -f "$md" ] || continue
  base=$(dirname "$md")
  while IFS= read -r link; do
    target=${link%%#*} frag=
    case "$link" in *'#'*) frag=${link#*#} ;; esac
    case "$target" in http*|mailto:*) continue ;; esac
    [ -n "$target" ] && path=$base/$target || path=$md
    if [ ! -e "$path" ]; then
      echo "$md: link to $link: no file $path" >&2; fail=1; continue
    fi
    if [ -n "$frag" ] && ! slugs "$path" | grep -qxF -- "$frag"; then
      echo "$md: link to $link: no heading with that anchor in $path" >&2; fail=1
    fi
  done < <(grep -oE '\]\([^) ]+\)' "$md" | sed -E 's/^\]\(//; s/\)$//')
done

[ -n "$heads" ] || { echo "check-docs: no numbered heading in docs/" >&2; fail=1; }
[ "$fail" = 0 ] && echo "check-docs: every section reference resolves, nothing points outside the repository"
exit "$fail"
