#!/usr/bin/env bash
# THE test command: set up, build, check the platform seam, run every test.
# Exits with ctest's status.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
bash scripts/build.sh
bash scripts/check_seams.sh

status=0
ctest --test-dir build --output-on-failure -j2 || status=$?
exit "$status"
