#!/usr/bin/env bash
# Interactive use (contract section 4), in a real terminal: tmux runs an
# interactive bash, keys are typed with send-keys and the screen is read
# with capture-pane. Every wait is a bounded poll on the screen.
#   tests/terminal/run.sh TREEGUARD BOUNDARY     (BOUNDARY: cgroup | process-group)
set -u
TG=${1:?treeguard binary}
BOUNDARY=${2:?boundary}
command -v tmux >/dev/null || { echo "SKIP: tmux is not installed"; echo "0 passed, 0 failed"; exit 77; }
if [[ $BOUNDARY == cgroup && $(id -u) != 0 ]]; then
  echo "SKIP: the cgroup arm needs root"; echo "0 passed, 0 failed"; exit 77
fi

work=$(mktemp -d /tmp/tg-term.XXXXXX)
chmod 700 "$work"
session=tg-term-$$
cgparent=""
args=(--boundary "$BOUNDARY" --state-dir "$work/state")
if [[ $BOUNDARY == cgroup ]]; then
  mount=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
  cgparent=$mount/tg-term-$$
  mkdir "$cgparent"
  args+=(--cgroup-parent "$cgparent")
fi
passed=0
failed=0
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null
  # Only what this test started: the pids its commands wrote.
  for f in "$work"/*.pid; do
    [[ -f $f ]] && kill -9 "$(cat "$f")" 2>/dev/null
  done
  [[ -n $cgparent ]] && rmdir "$cgparent"/* "$cgparent" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# A fifo held open read-write never delivers and never ends: read -t on it
# is the poll interval.
mkfifo "$work/poll"
exec {poll_fd}<>"$work/poll"
screen() { tmux capture-pane -t "$session" -p; }
# wait_screen TEXT: poll the screen for TEXT, at most 10 s.
wait_screen() {
  local deadline=$((SECONDS + 10))
  while ((SECONDS < deadline)); do
    screen | grep -qF -- "$1" && return 0
    read -r -t 0.05 -u "$poll_fd" || true
  done
  return 1
}
check() { # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then echo "PASS $BOUNDARY: $name"; passed=$((passed + 1))
  else echo "FAIL $BOUNDARY: $name"; screen | sed 's/^/  | /'; failed=$((failed + 1)); fi
}

tmux new-session -d -s "$session" -x 200 -y 50 "env PS1='tg\$ ' bash --norc --noprofile -i"
wait_screen 'tg$' || { echo "FAIL: no shell prompt"; echo "0 passed, 1 failed"; exit 1; }

# 1. COMMAND reads the terminal.
tmux send-keys -t "$session" "$TG run ${args[*]} -- bash -c 'read x; echo \"got:\$x\"'" Enter
tmux send-keys -t "$session" "hello" Enter
check "COMMAND reads the terminal" wait_screen "got:hello"

# 2. Ctrl-Z stops the job as the shell sees it; fg resumes it; Ctrl-C ends it with 130.
tmux send-keys -t "$session" "$TG run ${args[*]} -- bash -c 'echo \$\$ > $work/sleeper.pid; echo started; exec sleep 300'" Enter
wait_screen "started"
tmux send-keys -t "$session" C-z
check "Ctrl-Z: the shell sees the job stopped" wait_screen "Stopped"
tmux send-keys -t "$session" "fg" Enter
wait_screen "sleep 300'"
tmux send-keys -t "$session" C-c
tmux send-keys -t "$session" 'echo "rc=$?"' Enter
check "Ctrl-C after fg: exit 130" wait_screen "rc=130"
gone() { local p; p=$(cat "$work/sleeper.pid"); ! [[ -r /proc/$p/stat ]] || [[ $(awk '{print $3}' "/proc/$p/stat") == Z ]]; }
check "nothing survived" gone

echo "$passed passed, $failed failed"
((failed == 0))
