#!/bin/sh
# The Windows lane's setup and cleanup (tests/windows: windows.prefix and windows.server_stop, the
# wine_prefix fixture's). Usage: wine-prefix.sh start|stop EMULATOR... (the emulator ctest runs
# Windows programs with, cmake/wine-run.sh).
#
# start: one wineserver for the whole suite, persistent (-p) until `stop`, and the prefix made
# (wineboot -i, which starts Wine's services under that server: services.exe, explorer.exe,
# plugplay.exe, winedevice.exe...), all with their output away from this test's. A wineserver and
# the services keep the stderr of the Wine program that started them (a wineserver closes only its
# stdin and stdout), and ctest reads a test's output to its end: with ctest's pipe, this test would
# last until they end, and a test that found no server running would start another set and last
# until the suite's end. cmake/wine-test.sh checks that none holds a test's output. A server that
# runs for the prefix already (another run's) is used as it is.
# stop: `wineserver -k`: the server and every Wine process of the prefix end.
set -u
action=${1:?start or stop}
shift
case $action in
start)
  "$@" --server -p </dev/null >/dev/null 2>&1
  started=$?
  if [ "$started" -ne 0 ] && [ "$started" -ne 2 ]; then # 2: one runs for the prefix already
    echo "wine-prefix.sh: wineserver -p failed (exit $started)"
    exit 1
  fi
  log=$(mktemp) || exit 1
  "$@" wineboot -i </dev/null >"$log" 2>&1
  status=$?
  cat "$log"
  rm -f "$log"
  exit "$status"
  ;;
stop)
  "$@" --server -k
  stopped=$?
  if [ "$stopped" -eq 1 ]; then # no server for the prefix: nothing to stop
    echo "wine-prefix.sh: no wineserver ran for the prefix"
    exit 0
  fi
  exit "$stopped"
  ;;
*)
  echo "wine-prefix.sh: start or stop, not '$action'" >&2
  exit 2
  ;;
esac
