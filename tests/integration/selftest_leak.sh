#!/usr/bin/env bash
# The harness's own checks can fail: run the selftest suite with TG_SELFTEST_LEAK=1 (tests that leak
# a setsid'd daemon, a stopped member, a cgroup, and kill the sentinel on purpose) and require the
# harness to report exactly those as FAIL, exit 1, and leave nothing of them behind.
#   tests/integration/selftest_leak.sh BOUNDARY     (TG_FIXTURE in the environment)
set -u
BOUNDARY=${1:?boundary}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$(TG_SELFTEST_LEAK=1 bash "$HERE/run" selftest "$BOUNDARY" 2>&1)
rc=$?
echo "$out"
if [[ $rc == 77 ]]; then exit 77; fi
status=0
expect_fail() {
    grep -q "^FAIL selftest/$BOUNDARY: $1" <<<"$out" || { echo "selftest_leak: not reported FAIL: $1"; status=1; }
}
[[ $rc == 1 ]] || { echo "selftest_leak: the harness exited $rc, expected 1"; status=1; }
expect_fail "deliberate leak of a setsid'd daemon"
expect_fail "deliberate leak of a stopped member"
expect_fail "deliberately kill the sentinel"
[[ $BOUNDARY == cgroup ]] && expect_fail "deliberate leak of a cgroup"
# nothing else failed: the ordinary selftests still pass
expected=3
[[ $BOUNDARY == cgroup ]] && expected=4
fails=$(grep -c "^FAIL " <<<"$out")
[[ $fails == "$expected" ]] || { echo "selftest_leak: $fails FAIL lines, expected $expected"; status=1; }
# the harness's EXIT trap took down what the leak tests left: no process carries their tokens
if grep -lzsE "^TG_TOKEN=tgit[0-9]+x[0-9]+-[0-9]+\$" /proc/[0-9]*/environ >/dev/null 2>&1; then
    for f in $(grep -lzsE "^TG_TOKEN=tgit[0-9]+x[0-9]+-[0-9]+\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}; pid=${pid%/environ}
        # only a harness of ours could have made it; another suite may run at the same time, so
        # only count processes whose harness (token prefix) is gone
        token=$(tr '\0' '\n' <"$f" 2>/dev/null | sed -n 's/^TG_TOKEN=tgit\([0-9]*\)x.*/\1/p')
        [[ -n $token && ! -e /proc/$token ]] && { echo "selftest_leak: pid $pid left behind"; status=1; }
    done
fi
exit "$status"
