#!/bin/sh
# ctest's emulator for the Windows build: run one Windows program under Wine,
# headless and quiet. The prefix, its wineserver and Wine's services are started
# once before the tests run (tests/windows: the windows.prefix fixture,
# cmake/wine-prefix.sh), never by tests racing for them.
# `wine-run.sh --server ARGS...` runs `wineserver ARGS...` for the same prefix.
export WINEPREFIX="${WINEPREFIX:-${HOME:-/tmp}/.cache/treeguard-wineprefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
export LANG=C.UTF-8 LC_ALL=C.UTF-8
unset DISPLAY WAYLAND_DISPLAY
if [ "${1:-}" = --server ]; then
  shift
  mkdir -p "$WINEPREFIX" || exit 1 # a server runs in its prefix's directory
  exec wineserver "$@"
fi
exec wine "$@"
