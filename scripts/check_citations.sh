#!/usr/bin/env bash
# The project explains itself (DESIGN.md [cite]): code, tests, scripts and documentation cite
# DESIGN.md's sections or the manual page, never an issue number, a numbered section of a document
# that is not in the repository, or a path outside it. And every `DESIGN.md [anchor]` they cite is
# an anchor DESIGN.md has.
#
#   scripts/check_citations.sh [PATH...]   (default: the project's sources and documentation)
#
# Prints every offence as file:line: text and exits 1 if there is any; exits 0 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if (($# == 0)); then
  set -- src platform tests scripts .ci cmake completions CMakeLists.txt README.md man DESIGN.md
fi

# Spelled with a bracket each, so that this file does not match itself.
foreign='\b[i]ssues? #?[0-9]|\b[c]ontract( sections?)? ?[0-9§]|[c]ontract\.md|[.][.]/[s]hared|/[w]ork/'

offences=0
while IFS= read -r hit; do
  echo "$hit  <- cite DESIGN.md [anchor] or the manual page instead"
  offences=$((offences + 1))
done < <(grep -rnIiE --exclude-dir=build "$foreign" "$@" || true)

# Every cited anchor exists, in `DESIGN.md [anchor]` and in a list such as
# `DESIGN.md [anchor], [anchor]` ("anchor" itself is the placeholder of these comments, of the advice
# above and of DESIGN.md's first section).
mapfile -t anchors < <(grep -oE '^#+ .*\[[a-z][a-z0-9-]*\]$' DESIGN.md | grep -oE '\[[a-z][a-z0-9-]*\]$' | tr -d '[]')
known=" ${anchors[*]} "
while IFS= read -r hit; do
  cited=${hit#*DESIGN.md}
  while [[ $cited =~ ^[[:space:],and]*\[([a-z][a-z0-9-]*)\](.*)$ ]]; do
    if [[ ${BASH_REMATCH[1]} != anchor && $known != *" ${BASH_REMATCH[1]} "* ]]; then
      echo "${hit%:DESIGN.md*}: cites DESIGN.md [${BASH_REMATCH[1]}], which DESIGN.md does not have"
      offences=$((offences + 1))
    fi
    cited=${BASH_REMATCH[2]}
  done
done < <(grep -rnIoE --exclude-dir=build 'DESIGN\.md( ?\[[a-z][a-z0-9-]*\](,? (and )?)?)+' "$@" || true)

# DESIGN.md's own cross-references ("[anchor]" is the placeholder its first section explains).
while IFS= read -r hit; do
  name=${hit##*[}
  name=${name%]}
  if [[ $name != anchor && $known != *" $name "* ]]; then
    echo "DESIGN.md:${hit%%:*}: refers to [$name], which DESIGN.md does not have"
    offences=$((offences + 1))
  fi
done < <(grep -noE '\[[a-z][a-z0-9-]*\]' DESIGN.md)

if ((offences != 0)); then
  echo "check_citations: $offences offence(s)" >&2
  exit 1
fi
echo "check_citations: no foreign citation, every DESIGN.md anchor cited exists (${#anchors[@]} anchors)"
