#!/bin/sh
# ctest's emulator for the Windows build: run one Windows program under Wine,
# headless and quiet. The prefix is created once before the tests run
# (tests/windows: the wine.prefix fixture), never by tests racing for it.
export WINEPREFIX="${WINEPREFIX:-${HOME:-/tmp}/.cache/treeguard-wineprefix}"
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
export LANG=C.UTF-8 LC_ALL=C.UTF-8
unset DISPLAY WAYLAND_DISPLAY
exec wine "$@"
