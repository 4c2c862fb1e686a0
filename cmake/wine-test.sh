#!/usr/bin/env bash
# ctest's wrapper for each test of the Windows lane: runs the test, then checks that its output is
# its own. Usage: wine-test.sh COMMAND...
#
# ctest reads a test's stdout and stderr (a pipe) to their end, so a test lasts until the last
# process holding that pipe has ended. A Wine program that finds no wineserver running starts one,
# and Wine's services with it; they keep the program's stderr, so a test that started them, or the
# setup that made the prefix with its output on ctest's pipe, would "run" until they end, at the
# suite's end (58-71 s instead of 2 s), bounded only by its TIMEOUT. The server and the services
# are started once, by the windows.prefix fixture, with their output away from every test
# (cmake/wine-prefix.sh); this check fails a test whose output a Wine server or service still
# holds when its command has ended, naming it.
#
# Wine's own processes are the wineserver and Wine's programs in C:\windows\ (services.exe,
# explorer.exe, winedevice.exe, plugplay.exe, svchost.exe, rpcss.exe...): they serve the whole
# prefix and outlive every test. A test's own programs (treeguard.exe, tg_winfixture.exe, and
# conhost.exe, which belongs to a console and ends with it) are the test's to take down; its
# scenario checks that none survives.
set -uo pipefail
started=$(date +%s%N)
"$@"
status=$?
took_ms=$((($(date +%s%N) - started) / 1000000))

# The pipes this test's output goes to (fd 1 and 2), as /proc names them: "pipe:[12345]".
pipes=()
for fd in 1 2; do
  link=$(readlink "/proc/$$/fd/$fd" 2>/dev/null) || continue
  case $link in pipe:*) pipes+=("$link") ;; esac
done
if [ "${#pipes[@]}" -eq 0 ]; then
  exit "$status" # output not on a pipe (run by hand): nothing anyone could hold
fi

# Wine's own: the wineserver, or a Wine program of C:\windows\ other than conhost.exe.
wines_own() {
  local exe program
  exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
  case ${exe##*/} in wineserver*) return 0 ;; esac
  program=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -n 1)
  program=${program,,}
  case $program in
    'c:\windows\system32\conhost.exe') return 1 ;;
    'c:\windows\'*) return 0 ;;
  esac
  return 1
}

# Every process but this one with one of the pipes as its stdin, stdout or stderr (what a started
# process inherits); listed by one find, its own output away from the pipes.
names=()
for pipe in "${pipes[@]}"; do
  inode=${pipe#pipe:[}
  names+=(-o -lname "pipe:\\[${inode%]}\\]")
done
listing=$(mktemp)
find /proc/[0-9]*/fd -maxdepth 1 -name '[012]' \( "${names[@]:1}" \) -print \
  </dev/null >"$listing" 2>/dev/null
held=0
named=" "
while IFS=/ read -r _ _ pid _ fd; do
  case $named in *" $pid "*) continue ;; esac
  [ "$pid" = "$$" ] && continue
  wines_own "$pid" || continue
  named+="$pid "
  program=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)
  echo "wine-test.sh: FAIL: this test's output (fd $fd of pid $pid: ${program% }) is held by" \
    "a Wine server or service, which outlives the test: ctest waits for it to end"
  held=1
done <"$listing"
rm -f "$listing"
if [ "$held" -ne 0 ]; then
  exit 1
fi
echo "wine-test.sh: the test's command took $((took_ms / 1000)).$(printf %03d $((took_ms % 1000))) s;" \
  "no Wine server or service holds its output"
exit "$status"
