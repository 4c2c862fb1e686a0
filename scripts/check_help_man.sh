#!/usr/bin/env bash
# --help and man/treeguard.1 describe the same interface. Compared, each as a set:
#   long options   every one --help prints is in the man page; every one the OPTIONS section names
#                  is in some --help
#   short options  (-t, -s, -k, -v, -q, -h) the same, both ways
#   subcommands    the top-level --help's list and the man page's COMMANDS section
#   exit codes     the 12x codes of `run --help`'s footer and of the EXIT STATUS section
#   environment    the variables `run --help` names and the ENVIRONMENT section's (less PATH and
#                  TREEGUARD_RUNS, which treeguard does not read as settings)
# Exit 1 naming the differences.  Usage: scripts/check_help_man.sh [path/to/treeguard]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tg=${1:-build/treeguard}
man=man/treeguard.1

help_all=$(for sub in run probe status sweep resolve; do "$tg" "$sub" --help; done; "$tg" --help)
help_run=$("$tg" run --help)
help_top=$("$tg" --help)
# The man page writes options as \-\-name; unescape.
man_text=$(sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$man")
section() { sed -n "/^\.SH $1\$/,/^\.SH /p" <<<"$man_text"; }

status=0
# compare WHAT LEFT_NAME LEFT RIGHT_NAME RIGHT: the two sets (one item a line) are equal
compare() {
    local what=$1 left_name=$2 left=$3 right_name=$4 right=$5 only
    only=$(comm -23 <(sort -u <<<"$left") <(sort -u <<<"$right") | tr '\n' ' ')
    if [[ -n ${only// /} ]]; then
        echo "$what in $left_name but not in $right_name: $only"
        status=1
    fi
    only=$(comm -13 <(sort -u <<<"$left") <(sort -u <<<"$right") | tr '\n' ' ')
    if [[ -n ${only// /} ]]; then
        echo "$what in $right_name but not in $left_name: $only"
        status=1
    fi
}

# Long options: --help's must be somewhere in the man page; the OPTIONS section's in some --help.
help_long=$(grep -oE -- '--[a-z][a-z-]+' <<<"$help_all" | sort -u || true)
man_long_options=$(section OPTIONS | grep -oE -- '--[a-z][a-z-]+' | sort -u || true)
man_long_all=$(grep -oE -- '--[a-z][a-z-]+' <<<"$man_text" | sort -u || true)
missing=$(comm -23 <(echo "$help_long") <(echo "$man_long_all") | tr '\n' ' ')
[[ -z ${missing// /} ]] || { echo "long options in --help but not in $man: $missing"; status=1; }
missing=$(comm -13 <(echo "$help_long") <(echo "$man_long_options") | tr '\n' ' ')
[[ -z ${missing// /} ]] || { echo "long options in $man OPTIONS but in no --help: $missing"; status=1; }

# Short options: "-t," in --help; ".BR -t ", "" in the OPTIONS section.
help_short=$(grep -oE -- '(^|[[:space:]])-[a-zA-Z],' <<<"$help_all" | grep -oE -- '-[a-zA-Z]' || true)
man_short=$(section OPTIONS | grep -E '^\.B[RI]? ' | grep -oE -- '(^|[[:space:]])-[a-zA-Z]( |"|$)' | grep -oE -- '-[a-zA-Z]' || true)
compare "short options" "--help" "$help_short" "$man OPTIONS" "$man_short"

# Subcommands: the top-level --help's "Subcommands:" list; the COMMANDS section's .TP headings.
# (a subcommand's line starts with two spaces; its wrapped description's lines with more)
help_subs=$(sed -n '/^Subcommands:/,/^$/p' <<<"$help_top" | awk '/^  [^ ]/ { print $1 }' || true)
man_subs=$(section COMMANDS | awk 'prev == ".TP" { gsub(/"/, "", $2); print $2 } { prev = $0 }' || true)
compare "subcommands" "--help" "$help_subs" "$man COMMANDS" "$man_subs"

# Exit codes: the 12x numbers of run's footer; the EXIT STATUS section's .B headings.
help_codes=$(sed -n '/^Exit status:/,/^$/p' <<<"$help_run" | grep -oE '\b12[1-7]\b' || true)
man_codes=$(section 'EXIT STATUS' | grep -E '^\.B 12[1-7]$' | awk '{ print $2 }' || true)
compare "exit codes" "run --help" "$help_codes" "$man EXIT STATUS" "$man_codes"

# Environment: the variables run's footer names; the ENVIRONMENT section's .B headings.
help_env=$(sed -n '/^Environment/,/^$/p' <<<"$help_run" | grep -oE '\b[A-Z][A-Z_]+[A-Z]\b' | grep -vx 'COMMAND' || true)
man_env=$(section ENVIRONMENT | grep -E '^\.B [A-Z_]+$' | awk '{ print $2 }' | grep -vxE 'PATH|TREEGUARD_RUNS' || true)
compare "environment variables" "run --help" "$help_env" "$man ENVIRONMENT" "$man_env"

if [[ $status == 0 ]]; then
    echo "help and man page agree: $(wc -l <<<"$help_long") long and $(sort -u <<<"$help_short" | wc -l) short options," \
        "$(wc -l <<<"$help_subs") subcommands, $(sort -u <<<"$help_codes" | wc -l) exit codes," \
        "$(sort -u <<<"$help_env" | wc -l) environment variables"
fi
exit "$status"
