#!/usr/bin/env bash
# The demonstration: a command leaves three escapees behind (a background grandchild, a setsid
# child and a double-forked daemon). Without treeguard they survive the command's exit; under
# `treeguard run` nothing does, and the exit code says so. Then a --timeout case (exit 124).
#
#   bash scripts/demo.sh        (as root on Debian 12: installs the build dependencies first)
#
# Processes are only ever identified by the pids they recorded themselves, checked against their
# start time; nothing is killed by name. Waits are bounded polls, not fixed sleeps.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

# Installing and building say a lot; the demonstration is what follows. Their output goes to a
# log, shown only if they fail.
setup_log=${TMPDIR:-/tmp}/treeguard-demo-setup.log
echo "demo: installing the build dependencies and building; output in $setup_log"
if ! { bash scripts/install-deps.sh && bash scripts/build.sh; } >"$setup_log" 2>&1; then
  tail -n 30 "$setup_log" >&2
  echo "demo: install or build failed; the whole output is in $setup_log" >&2
  exit 1
fi
treeguard=$repo/build/treeguard
[ -x "$treeguard" ] || { echo "demo: $treeguard was not built" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/treeguard-demo.XXXXXX")
echo "demo: working in $work (shown as \$DEMO below)"
state=$work/state
failures=0

# ---------------------------------------------------------------------------------------------
# Helpers

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
ok() { printf '   OK: %s\n' "$*"; }
bad() { printf '   UNEXPECTED: %s\n' "$*"; failures=$((failures + 1)); }

# is_alive FILE: true if the process recorded in FILE ("pid start_time") still runs. The start
# time (field 22 of /proc/PID/stat) guards against a recycled pid; a zombie counts as dead.
is_alive() {
  local pid start stat rest fields
  read -r pid start < "$1" || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  rest=${stat##*) }           # fields from 3 on (the command name may hold spaces)
  read -r -a fields <<< "$rest"
  [ "${fields[0]}" != Z ] && [ "${fields[0]}" != X ] && [ "${fields[19]}" = "$start" ]
}

pid_of() { local pid _; read -r pid _ < "$1"; echo "$pid"; }

# show_escapees DIR: one ps line per recorded escapee, or that it is gone.
show_escapees() {
  local file
  for file in "$1"/*.pid; do
    if is_alive "$file"; then
      ps -o pid=,ppid=,pgid=,sid=,stat=,etime=,args= -p "$(pid_of "$file")" \
        | sed "s/^/   ALIVE $(basename "$file" .pid): /"
    else
      echo "   gone  $(basename "$file" .pid): pid $(pid_of "$file")"
    fi
  done
}

# count_alive DIR
count_alive() {
  local file n=0
  for file in "$1"/*.pid; do
    if is_alive "$file"; then n=$((n + 1)); fi
  done
  echo "$n"
}

# wait_gone DIR SECONDS: poll until no recorded escapee of DIR is alive, at most SECONDS.
wait_gone() {
  local deadline=$((SECONDS + $2))
  while [ "$(count_alive "$1")" -ne 0 ]; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# kill_recorded DIR: SIGKILL exactly the recorded escapees that are still alive.
kill_recorded() {
  local file
  for file in "$1"/*.pid; do
    [ -e "$file" ] || continue
    if is_alive "$file"; then kill -KILL "$(pid_of "$file")" 2>/dev/null || true; fi
  done
}

cleanup() {
  local dir
  for dir in "$work"/run-*; do
    [ -d "$dir" ] && kill_recorded "$dir"
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# leaf.sh FILE: record "pid start_time" in FILE, then become a long sleep.
cat > "$work/leaf.sh" <<'LEAF'
#!/bin/sh
read -r stat < /proc/$$/stat
set -- "$1" $stat
echo "$$ ${23}" > "$1.tmp" && mv "$1.tmp" "$1"
exec sleep 1000 </dev/null >/dev/null 2>&1
LEAF

# escaper.sh DIR: leave three processes behind, wait until each has recorded itself, exit 0.
cat > "$work/escaper.sh" <<'ESCAPER'
#!/bin/sh
dir=$1
leaf=$(dirname "$0")/leaf.sh
sh "$leaf" "$dir/background.pid" &                                # a background grandchild
setsid sh "$leaf" "$dir/setsid.pid" &                             # leaves the group: new session
( setsid sh -c 'sh "$1" "$2" &' sh "$leaf" "$dir/daemon.pid" & )  # double fork + setsid: a daemon
i=0
while [ ! -s "$dir/background.pid" ] || [ ! -s "$dir/setsid.pid" ] || [ ! -s "$dir/daemon.pid" ]; do
  i=$((i + 1))
  [ "$i" -le 200 ] || { echo "escaper: the escapees did not start" >&2; exit 1; }
  sleep 0.05
done
echo "escaper: left a background grandchild, a setsid child and a double-forked daemon; exit 0"
exit 0
ESCAPER

# stubborn.sh DIR: leave the same three escapees, then ignore SIGTERM and never finish.
cat > "$work/stubborn.sh" <<'STUBBORN'
#!/bin/sh
sh "$(dirname "$0")/escaper.sh" "$1" || exit 1
trap '' TERM
echo "stubborn: ignoring SIGTERM from now on"
while :; do sleep 1; done
STUBBORN

new_run_dir() { mkdir "$work/run-$1" && echo "$work/run-$1"; }

# ---------------------------------------------------------------------------------------------
say "0. What this host supports: treeguard probe"
"$treeguard" probe || bad "treeguard probe exited $?"

# ---------------------------------------------------------------------------------------------
say "1. Without treeguard: sh escaper.sh"
dir=$(new_run_dir plain)
rc=0
sh "$work/escaper.sh" "$dir" || rc=$?
echo "   exit code: $rc"
echo "   the command has exited; its processes, by the pids they recorded:"
show_escapees "$dir"
alive=$(count_alive "$dir")
if [ "$alive" -eq 3 ]; then
  ok "all 3 escapees outlived the command (reparented away from it)"
else
  bad "expected 3 surviving escapees, found $alive"
fi
echo "   cleaning up by hand: kill -KILL, exactly those recorded pids"
kill_recorded "$dir"
if wait_gone "$dir" 10; then ok "the 3 escapees are gone"; else bad "escapees still alive after kill"; fi

# ---------------------------------------------------------------------------------------------
# run_under_treeguard NAME EXPECTED_RC TREEGUARD_OPTIONS... -- COMMAND...
run_under_treeguard() {
  local name=$1 expected=$2 dir rc=0
  shift 2
  dir=$(new_run_dir "$name")
  # The command is given its pid directory as the last argument.
  printf '   $ treeguard run'
  printf ' %q' "$@" "$dir" | sed "s#$work#\$DEMO#g"
  echo
  "$treeguard" run "$@" "$dir" || rc=$?
  echo "   treeguard exit code: $rc"
  if [ "$rc" -eq "$expected" ]; then ok "exit code $rc as expected"; else bad "exit code $rc, expected $expected"; fi
  echo "   after treeguard returned, the escapees by the pids they recorded:"
  show_escapees "$dir"
  alive=$(count_alive "$dir")
  if [ "$alive" -eq 0 ]; then
    ok "nothing survived"
  else
    bad "$alive escapee(s) survived treeguard"
    kill_recorded "$dir"
  fi
}

say "2. With treeguard (default boundary: the strongest this host allows)"
run_under_treeguard auto 0 -v --state-dir "$state" --report "$work/report.json" \
  -- sh "$work/escaper.sh"
if [ -s "$work/report.json" ]; then
  echo "   the JSON report (--report):"
  sed 's/^/   | /' "$work/report.json"
  echo
  # The report's "left_command_group" must name the two that left COMMAND's group (and stayed inside
  # the boundary), by the pids they recorded.
  escapes=$(awk '/"left_command_group": \[/ { on = 1; next } on && /^  \]/ { exit } on && /"pid":/ { gsub(/[^0-9]/, ""); print }' \
    "$work/report.json")
  for name in setsid daemon; do
    pid=$(pid_of "$work/run-auto/$name.pid")
    if printf '%s\n' $escapes | grep -qx "$pid"; then
      ok "the report lists the $name escapee (pid $pid) under \"left_command_group\""
    else
      bad "the report does not list the $name escapee (pid $pid) under \"left_command_group\""
    fi
  done
else
  bad "no JSON report was written to $work/report.json"
fi

say "3. With treeguard, --boundary process-group (what a host without writable cgroups gets)"
run_under_treeguard pgroup 0 -v --state-dir "$state" --boundary process-group --keep-records \
  -- sh "$work/escaper.sh"

say "4. A deadline: --timeout 1s, the command ignores SIGTERM, so SIGKILL follows after -k 1s"
run_under_treeguard timeout 124 -v --state-dir "$state" --timeout 1s --kill-after 1s \
  -- sh "$work/stubborn.sh"

say "5. The state directory afterwards (run 3 kept its record): treeguard status"
rc=0
"$treeguard" status --state-dir "$state" || rc=$?
[ "$rc" -eq 0 ] || bad "treeguard status exited $rc"

# ---------------------------------------------------------------------------------------------
if [ "$failures" -eq 0 ]; then
  say "demo: everything behaved as described"
else
  say "demo: $failures unexpected result(s), see UNEXPECTED above"
  exit 1
fi
