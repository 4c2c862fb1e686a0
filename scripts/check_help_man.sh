#!/usr/bin/env bash
# --help and man/treeguard.1 describe the same options: every long option
# --help prints for a command is in the man page, and every option the man
# page's OPTIONS section names is in some --help. Exit 1 naming the
# differences.  Usage: scripts/check_help_man.sh [path/to/treeguard]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tg=${1:-build/treeguard}
man=man/treeguard.1

help_options=$(for sub in run probe status sweep resolve; do "$tg" "$sub" --help; done; "$tg" --help) 
help_set=$(grep -oE -- '--[a-z][a-z-]+' <<<"$help_options" | sort -u)
# The man page writes options as \-\-name; unescape, then take the OPTIONS section.
man_text=$(sed -e 's/\\-/-/g' "$man")
man_set=$(sed -n '/^\.SH OPTIONS/,/^\.SH /p' <<<"$man_text" | grep -oE -- '--[a-z][a-z-]+' | sort -u)
all_man_set=$(grep -oE -- '--[a-z][a-z-]+' <<<"$man_text" | sort -u)

status=0
missing_in_man=$(comm -23 <(echo "$help_set") <(echo "$all_man_set"))
missing_in_help=$(comm -13 <(echo "$help_set") <(echo "$man_set"))
if [[ -n $missing_in_man ]]; then
  echo "in --help but not in $man:" $missing_in_man
  status=1
fi
if [[ -n $missing_in_help ]]; then
  echo "in $man OPTIONS but in no --help:" $missing_in_help
  status=1
fi
[[ $status == 0 ]] && echo "help and man page agree on $(wc -l <<<"$help_set") options"
exit "$status"
