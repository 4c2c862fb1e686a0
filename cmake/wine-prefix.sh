#!/bin/sh
# The windows.prefix fixture: make the Wine prefix once, before any test races to make it.
# scripts/test-windows.sh makes it itself before ctest starts, under the one wineserver it keeps
# for the suite, and leaves the mark below; then this leaves the prefix as it is: a second
# `wineboot -i` would start another set of Wine's services, holding this test's output open until
# that server ends. (Not system.reg: a persistent wineserver writes the registry only when it ends.)
# Usage: wine-prefix.sh EMULATOR... (the emulator ctest runs Windows programs with).
if [ -n "${WINEPREFIX:-}" ] && [ -f "$WINEPREFIX/.treeguard-prefix-made" ]; then
  echo "wine-prefix.sh: $WINEPREFIX was made by scripts/test-windows.sh"
  exit 0
fi
exec "$@" wineboot -i
