#!/usr/bin/env bash
# THE test command: set up, build, check the platform seam, run every test.
# Exits 0 only if both the Linux and the Windows (Wine) suites pass.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/check_seams.sh

status=0
ctest --test-dir build --output-on-failure -j2 2>&1 | tee build/ctest-output.txt || status=$?
# ctest says only "Skipped": print each skipped test's reason
bash scripts/ctest-skips.sh build/ctest-output.txt build/Testing/Temporary/LastTest.log
# Then the Windows arm, cross-built and run under Wine (its own build dir).
windows_status=0
bash scripts/test-windows.sh || windows_status=$?
if [ "$status" -eq 0 ]; then
  status=$windows_status
fi
exit "$status"
