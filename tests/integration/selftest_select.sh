#!/usr/bin/env bash
# One test alone: `run SUITE BOUNDARY NAME...` runs exactly the tests named, wherever they are in
# the suite (top level, a loop, an if); an unknown name is an error (exit 2) that runs nothing and
# lists the tests; --list lists them and runs none. Checked on the selftest suite (no treeguard
# needed). And every suite can be run by name: select.awk takes each apart, and what it makes is
# valid bash.
#   tests/integration/selftest_select.sh BOUNDARY     (TG_FIXTURE in the environment)
set -u
BOUNDARY=${1:?boundary}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
status=0
bad() { echo "selftest_select: $*"; status=1; }
OUT="" ERR="" RC=0
run_selftest() { # run_selftest [ENV=VALUE...] -- ARGS...: OUT, ERR, RC
    local -a env=()
    while [[ $1 != -- ]]; do env+=("$1"); shift; done
    shift
    OUT=$(env "${env[@]}" bash "$HERE/run" selftest "$BOUNDARY" "$@" 2>"$WORK/err")
    RC=$?
    ERR=$(<"$WORK/err")
}
# results: the PASS/FAIL/SKIP lines of OUT, names only, one a line
results() { sed -n "s#^\(PASS\|FAIL\|SKIP\) selftest/$BOUNDARY: \([^:]*\).*#\1 \2#p" <<<"$OUT"; }
expect_results() { # expect_results WHAT EXPECTED_LINES
    local got
    got=$(results)
    [[ $got == "$2" ]] || bad "$1: ran
$got
expected
$2
(exit $RC; stderr: $ERR)"
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-select.XXXXXX") || exit 2
trap 'rm -rf -- "$WORK"' EXIT

# a test at the suite's top level, between others
one="fixture exit and die report the status"
run_selftest -- "$one"
if [[ $RC == 77 ]]; then
    echo "$OUT"
    exit 77
fi
expect_results "one top-level test by name" "PASS $one"
[[ $RC == 0 ]] || bad "one test by name: exit $RC"
grep -qx "1 passed, 0 failed, 0 skipped" <<<"$OUT" || bad "one test by name: counts $(tail -1 <<<"$OUT")"

# a test made by a loop (one pass of it), by the name PASS prints, beside a second name
loop="fixture shape setsid comes up (2 processes) and is fully detected"
run_selftest -- "selftest/$BOUNDARY: $loop" "$one"
expect_results "a loop's test by its printed name, and a second name" "PASS $loop
PASS $one"

# a test that fails is still judged alone, by the end-of-test checks too
leak="deliberate leak of a stopped member (must be reported FAIL)"
run_selftest TG_SELFTEST_LEAK=1 -- "$leak"
expect_results "a test inside an if, one that fails" "FAIL $leak"
[[ $RC == 1 ]] || bad "a failing test by name: exit $RC, expected 1"

# an unknown name: exit 2, nothing run, the name and the tests listed
run_selftest -- "no such test" "$one"
[[ $RC == 2 ]] || bad "an unknown name: exit $RC, expected 2"
grep -qF "run: no test named 'no such test' in selftest under $BOUNDARY" <<<"$ERR" ||
    bad "an unknown name is not named: $ERR"
grep -qxF "  $loop" <<<"$ERR" || bad "an unknown name does not list the tests: $ERR"

# --list: every test, none run
run_selftest -- --list
[[ $RC == 0 ]] || bad "--list: exit $RC"
[[ -z $(results) ]] || bad "--list ran tests: $(results)"
for name in "$one" "$loop" "fixture shape chain 100 comes up (101 processes) and is fully detected" \
    "a bounded wait times out and fails the test"; do
    grep -qxF "$name" <<<"$OUT" || bad "--list does not name '$name': $OUT"
done
listed=$(wc -l <<<"$OUT")

# every suite can be taken apart, into valid bash
for suite in "$HERE"/suites/*.bash; do
    if ! awk -f "$HERE/select.awk" "$suite" >"$WORK/suite.bash"; then
        bad "${suite##*/}: its tests cannot be run by name (above)"
    elif ! bash -n "$WORK/suite.bash"; then
        bad "${suite##*/}: select.awk made invalid bash of it (above)"
    fi
done

((status == 0)) && echo "selftest_select: running tests by name works ($listed tests listed)"
exit "$status"
