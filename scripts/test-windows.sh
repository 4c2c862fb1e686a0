#!/usr/bin/env bash
# The Windows arm: cross-build treeguard.exe with mingw-w64 into
# ./build-windows and run its suite under Wine (tests/windows). A fresh Wine
# prefix per run, made by the windows.prefix test before the others start and served by one
# wineserver it starts (cmake/wine-prefix.sh), removed at the end, with every Wine process of
# it (wineserver -k, also when ctest was interrupted before its windows.server_stop).
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

status=0
ctest --test-dir build-windows --output-on-failure -j2 || status=$?
exit "$status"
