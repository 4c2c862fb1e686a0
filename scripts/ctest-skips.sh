#!/usr/bin/env bash
# ctest-skips.sh CTEST_OUTPUT LAST_TEST_LOG: for every test the ctest run (its stdout saved in
# CTEST_OUTPUT) skipped, print why: the "SKIP ..." (or "SKIP: ...") lines of its output, from
# Testing/Temporary/LastTest.log. ctest itself prints only "Skipped", even with
# --output-on-failure, and a skip must say why.
set -u
out=${1:?ctest output} log=${2:?LastTest.log}
mapfile -t skipped < <(sed -n 's/^[[:space:]]*[0-9][0-9]* - \(.*\) (Skipped)$/\1/p' "$out")
((${#skipped[@]} > 0)) || exit 0
echo "Why the skipped tests did not run:"
for name in "${skipped[@]}"; do
    reasons=$(awk -v name="$name" '
        $0 ~ /^[0-9]+\/[0-9]+ Testing: / { sub(/^[0-9]+\/[0-9]+ Testing: /, ""); current = $0; next }
        current == name && /^<end of output>$/ { current = ""; next }
        current == name && /^SKIP[ :]/ { print }' "$log")
    if [[ -n $reasons ]]; then
        sed "s/^/  $name: /" <<<"$reasons"
    else
        echo "  $name: (printed no SKIP line: a skip without a reason)"
    fi
done
