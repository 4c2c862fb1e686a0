#!/usr/bin/env bash
# The Windows arm: cross-build treeguard.exe with mingw-w64 into
# ./build-windows and run its suite under Wine (tests/windows). A fresh Wine
# prefix per run (created once by the windows.prefix test before the others
# start), served by one wineserver started before them, removed at the end, with every Wine
# process of it (wineserver -k).
# Exits with ctest's status. `--build-only` builds and stops (scripts/test.sh builds it beside the
# Linux build, then runs this again to test: the second build finds nothing to do).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cmake -S . -B build-windows -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/mingw-w64-x86_64.cmake"
cmake --build build-windows -j"$(nproc)"
if [ "${1:-}" = --build-only ]; then
  exit 0
fi

prefix_parent=$(mktemp -d /tmp/treeguard-wine.XXXXXX)
export WINEPREFIX="$prefix_parent/prefix"
export WINEDEBUG=-all LANG=C.UTF-8 LC_ALL=C.UTF-8
unset DISPLAY WAYLAND_DISPLAY
cleanup() {
  wineserver -k 2>/dev/null || true
  rm -rf "$prefix_parent"
}
trap cleanup EXIT
# One wineserver for the whole suite, and Wine's own services (services.exe, explorer.exe,
# plugplay.exe, ...) started under it by a wineboot here, all with their stdio on /dev/null.
# Left to the tests, a test's Wine program that finds no server running starts the server and
# the services, and they keep that test's stderr (a wineserver closes only its stdin and stdout),
# a pipe ctest reads to its end: the prefix test waited for its server to shut down, and the
# first test after it "ran" until the suite's end (58-71 s instead of 2 s in 5 of 13 runs beside
# two CPU hogs), bounded only by its TIMEOUT. Persistent (-p) until cleanup's `wineserver -k`.
# The mark tells the windows.prefix test (cmake/wine-prefix.sh) that the prefix is made.
mkdir -p "$WINEPREFIX"
wineserver -p </dev/null >/dev/null 2>&1
bash cmake/wine-run.sh wineboot -i </dev/null >/dev/null 2>&1
touch "$WINEPREFIX/.treeguard-prefix-made"

status=0
ctest --test-dir build-windows --output-on-failure -j2 || status=$?
exit "$status"
