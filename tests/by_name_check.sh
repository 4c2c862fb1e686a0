#!/usr/bin/env bash
# A shell suite runs one of its tests alone: RUNNER... NAME runs exactly that test (its PASS/FAIL
# lines are RESULTS, newline-separated, nothing else); an unknown name is an error (exit 2) that
# runs nothing and lists the names, NAME among them; RUNNER... --list lists them and runs none.
#   tests/by_name_check.sh NAME RESULTS RUNNER [ARGS...]
# Exit 77 when the runner skips (its reason printed).
set -u
NAME=${1:?name}
RESULTS=${2:?expected PASS/FAIL lines}
shift 2
status=0
bad() { echo "by_name_check: $*"; status=1; }
results() { grep -E '^(PASS|FAIL) ' <<<"$1"; }

out=$("$@" "$NAME" 2>&1)
rc=$?
((rc == 77)) && { echo "$out"; exit 77; }
((rc == 0)) || bad "'$NAME' alone: exit $rc: $out"
[[ $(results "$out") == "$RESULTS" ]] || bad "'$NAME' alone ran
$(results "$out")
expected
$RESULTS"

out=$("$@" "no such test" 2>&1)
rc=$?
((rc == 2)) || bad "an unknown name: exit $rc, expected 2"
[[ -n $(results "$out") ]] && bad "an unknown name ran tests: $(results "$out")"
grep -qF "no such test" <<<"$out" || bad "an unknown name is not named: $out"
grep -qxF "  $NAME" <<<"$out" || bad "an unknown name does not list the names: $out"

list=$("$@" --list 2>&1)
rc=$?
((rc == 0)) || bad "--list: exit $rc"
[[ -n $(results "$list") ]] && bad "--list ran tests: $(results "$list")"
grep -qxF "$NAME" <<<"$list" || bad "--list does not name '$NAME': $list"

((status == 0)) && echo "by_name_check: one test alone, an unknown name refused, $(wc -l <<<"$list") listed: $*"
exit "$status"
