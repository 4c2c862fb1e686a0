#!/bin/bash
# In-VM suite (DESIGN.md [scopes]): the system scope. Root in the runner's oneshot service, whose
# cgroup also holds this shell (and root in a login session, whose session-N.scope holds its shell):
# no leaf beneath that cgroup can be given a controller (the no-internal-processes rule), so a
# limit makes treeguard ask the system manager for a transient treeguard-RUNID.scope with
# Delegate=yes holding itself, and form its leaf there. The fork bomb under --pids-max and the hog
# under --memory-max are contained, the scope is gone afterwards, the controller's SIGKILL leaves
# nothing, stopping the unit treeguard was started in stops the run (the scope is PartOf= it), and
# a run inside another run's boundary asks for no scope.
source "$TG_SRC/tests/vm/lib.sh"

R() { jq -r "$2" "$1" 2>/dev/null; }
excerpt() { tr '\n' '|' <"$1" | head -c 600; }
poll() { local i; for ((i = 0; i < $1 * 20; i++)); do "${@:2}" && return 0; sleep 0.05; done; return 1; }
no_scope() { ! systemctl list-units --all --plain --no-legend 'treeguard-*.scope' | grep -q .; }
TOKEN=tg-vm-system-scope-$$-$RANDOM
REAL=$(readlink -f "$TREEGUARD")
# alive: a process of this suite's runs, other than treeguard itself, is alive
alive() {
    local file pid
    for file in $(grep -lsa "TG_TOKEN=$TOKEN" /proc/[0-9]*/environ); do
        pid=${file#/proc/}
        pid=${pid%/environ}
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$REAL" ]] || return 0
    done
    return 1
}
gone() { ! alive; }
# run NAME ARGS...: treeguard run -v ARGS from this service's cgroup (shared with this shell); RC,
# $WORK/NAME.out, $WORK/NAME.err, report $WORK/NAME.json
run() {
    local name=$1
    shift
    TG_TOKEN=$TOKEN "$TREEGUARD" run -v --state-dir "$WORK/$name.state" --report "$WORK/$name.json" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err"
    RC=$?
}
# the unit and leaf of COMMAND's cgroup, printed by COMMAND, then what the manager says of the unit
SHOW='c=$(sed -n "s/^0:://p" /proc/self/cgroup); echo "cgroup $c"; u=$(sed -n "s|^0::.*/\(treeguard-[^/]*\.scope\)/.*|\1|p" /proc/self/cgroup); systemctl show -p Delegate "$u"'
in_scope() { # FILE: COMMAND's cgroup is treeguard-ID.scope/treeguard-ID, the scope Delegate=yes
    local c
    c=$(sed -n 's/^cgroup //p' "$1")
    [[ $c =~ /treeguard-([^/]+)\.scope/treeguard-([^/]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]] &&
        grep -qx 'Delegate=yes' "$1"
}

if ! grep -qw memory "$CG_MOUNT/cgroup.controllers" || ! grep -qw pids "$CG_MOUNT/cgroup.controllers"; then
    skip system_scope "no memory and pids controllers in $CG_MOUNT/cgroup.controllers"
    finish
fi
note "own cgroup $(sed -n 's/^0:://p' /proc/self/cgroup): $(wc -w <"$CG_MOUNT$(sed -n 's/^0:://p' /proc/self/cgroup)/cgroup.procs") processes"
note "probe here: $("$TREEGUARD" probe | sed -n '/^boundary plan/,$p' | tr -s ' ' | tr '\n' '|')"

# 1. a limit from the service: the leaf in the system scope, asked with Delegate=yes
t="root in a service with other processes, --pids-max 100: a leaf in the system scope (Delegate=yes)"
run scope --pids-max 100 -- sh -c "$SHOW"
note "plan: $(grep 'plan for' "$WORK/scope.err" | sed 's/^treeguard: plan for --boundary auto: //' | tr '\n' '|')"
note "formed: $(grep -E 'in the system scope|^treeguard: boundary ' "$WORK/scope.err" | tr '\n' '|')"
if [[ $RC == 0 ]] && in_scope "$WORK/scope.out" && grep -q 'in the system scope treeguard-' "$WORK/scope.err" &&
    [[ $(R "$WORK/scope.json" .boundary.kind) == cgroup ]]; then
    pass "$t"
else
    fail "$t" "exit $RC; $(excerpt "$WORK/scope.out") $(excerpt "$WORK/scope.err")"
fi
t="the system scope is gone when the run ends"
if poll 10 no_scope; then
    pass "$t"
else
    fail "$t" "$(systemctl list-units --all --plain --no-legend 'treeguard-*')"
fi

# 2. a fork bomb under --pids-max 64: ends at its deadline with never more than 64 tasks
t="fork bomb under --pids-max 64 in the system scope"
t0=$(date +%s%N)
run bomb --pids-max 64 --timeout 10s --kill-after 2s -- "$TG_FIXTURE" --ignore-term bomb
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
code=$(R "$WORK/bomb.json" .exit_code)
peak=$(R "$WORK/bomb.json" .usage.tasks_peak)
note "bomb: exit $RC after ${elapsed_ms}ms, usage $(jq -c .usage "$WORK/bomb.json" 2>/dev/null)"
if [[ $RC != 124 || $code != 124 ]]; then
    fail "$t" "exit $RC, report exit_code '$code', expected 124 ($(excerpt "$WORK/bomb.err"))"
elif ! grep -q 'in the system scope' "$WORK/bomb.err"; then
    fail "$t" "not in the system scope ($(excerpt "$WORK/bomb.err"))"
elif [[ ! $peak =~ ^[0-9]+$ ]] || ((peak > 64 || peak < 2)); then
    fail "$t" "tasks_peak '$peak', expected 2..64"
elif ((elapsed_ms > 10000 + 2000 + 30000)); then
    fail "$t" "took ${elapsed_ms}ms for a 10s deadline and 2s grace"
elif ! gone || ! poll 10 no_scope; then
    fail "$t" "left: alive $(alive && echo yes || echo no), scopes $(systemctl list-units --all --plain --no-legend 'treeguard-*' | tr '\n' '|')"
else
    pass "$t: exit 124 after ${elapsed_ms}ms, tasks_peak $peak, nothing left"
fi

# 3. 512 MiB under --memory-max 64M: the OOM killer kills COMMAND (137), reported
t="512 MiB under --memory-max 64M in the system scope"
run oom --memory-max 64M --timeout 120s -- "$TG_FIXTURE" alloc 512
kills=$(R "$WORK/oom.json" .oom_kills)
note "oom: exit $RC, oom_kills $kills, usage $(jq -c .usage "$WORK/oom.json" 2>/dev/null)"
if [[ $RC == 137 && $kills =~ ^[0-9]+$ ]] && ((kills >= 1)) && grep -q 'in the system scope' "$WORK/oom.err" &&
    ! grep -q allocated "$WORK/oom.err" && poll 10 no_scope; then
    pass "$t: exit 137, oom_kills $kills"
else
    fail "$t" "exit $RC, oom_kills '$kills' ($(excerpt "$WORK/oom.err"))"
fi

# 4. the controller SIGKILLed in its system scope: its guardian takes the leaf down
t="the controller SIGKILLed in the system scope: nothing is left"
fifo=$WORK/kill.fifo
mkfifo "$fifo"
TG_TOKEN=$TOKEN "$TREEGUARD" run --state-dir "$WORK/kill.state" --pids-max 100 -- \
    sh -c 'setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo ready; exec sleep 1000' >"$fifo" 2>"$WORK/kill.err" &
controller=$!
line=
exec {fd}<>"$fifo" # read-write: the open never blocks, so -t bounds the wait even if no run starts
read -r -t 120 -u "$fd" line
exec {fd}<&-
if [[ $line == ready && $(readlink "/proc/$controller/exe") == "$REAL" ]] &&
    grep -q '/treeguard-[^/]*\.scope/' "/proc/$controller/cgroup"; then
    kill -KILL "$controller"
    wait "$controller" 2>/dev/null
    # DESIGN.md [guardian]: within 2 s; margin for TCG
    if poll 30 gone && poll 30 no_scope; then
        pass "$t"
    else
        fail "$t" "after 30 s: alive $(alive && echo yes || echo no), scopes $(systemctl list-units --all --plain --no-legend 'treeguard-*' | tr '\n' '|')"
    fi
else
    fail "$t" "COMMAND said '$line', pid $controller is $(readlink "/proc/$controller/exe") in $(cat "/proc/$controller/cgroup" 2>/dev/null); $(excerpt "$WORK/kill.err")"
    kill -KILL "$controller" 2>/dev/null
    wait "$controller" 2>/dev/null
fi

# 5. inside another run's boundary no scope is asked: it would take the inner run out of it
t="a run inside another run's leaf, with a limit its leaf cannot give: 125, no scope"
run nested -- sh -c '"$0" run -v --state-dir "$1" --pids-max 50 -- sh -c "echo ran; cat /proc/self/cgroup"; echo "inner $?"' \
    "$TREEGUARD" "$WORK/nested-inner.state"
if [[ $RC == 0 ]] && grep -qx 'inner 125' "$WORK/nested.out" && ! grep -qx ran "$WORK/nested.out" &&
    grep -q "inside another run's boundary" "$WORK/nested.err" && poll 10 no_scope; then
    pass "$t"
else
    fail "$t" "exit $RC; $(excerpt "$WORK/nested.out") $(excerpt "$WORK/nested.err")"
fi

# 6. root in a login session (su -l: its shell in session-N.scope): the same through the system scope
t="root in a login session, --pids-max 100: a leaf in the system scope (Delegate=yes)"
out=$(as session:root sh -c "d=\$(mktemp -d); \"\$TREEGUARD\" run -v --state-dir \"\$d/state\" --pids-max 100 -- sh -c '$SHOW' 2>&1; echo \"exit \$?\"; rm -rf \"\$d\"" 2>&1)
printf '%s\n' "$out" >"$WORK/session.out"
note "session: $(grep -E '^cgroup|system scope:|exit ' "$WORK/session.out" | tr '\n' '|')"
if grep -qx 'exit 0' "$WORK/session.out" && in_scope "$WORK/session.out" && poll 10 no_scope; then
    pass "$t"
else
    fail "$t" "$(excerpt "$WORK/session.out")"
fi

# 7. the unit treeguard was started in is stopped (a CI job's service, cancelled): the system scope
#    is not inside that unit, so it is asked PartOf= it, and the run stops with it
t="systemctl stop of the unit treeguard started in stops its run in the system scope (PartOf=)"
fifo=$WORK/holder.fifo
mkfifo "$fifo"
holder=tg-holder-$$
systemd-run --quiet --unit "$holder" -p Type=exec --setenv=TG_TOKEN="$TOKEN" bash -c \
    'sleep 1000 & "$0" run --state-dir "$1" --pids-max 50 -- sh -c "echo ready >\"\$0\"; exec sleep 1000" "$2"; wait' \
    "$TREEGUARD" "$WORK/holder.state" "$fifo"
line=
exec {fd}<>"$fifo"
read -r -t 120 -u "$fd" line
exec {fd}<&-
scope=$(systemctl list-units --plain --no-legend 'treeguard-*.scope' | awk '{ print $1; exit }')
part_of=$(systemctl show -p PartOf --value "$scope" 2>/dev/null)
note "holder: COMMAND said '$line'; $scope PartOf='$part_of'"
timeout 60 systemctl stop "$holder"
if [[ $line == ready ]] && poll 30 gone && poll 30 no_scope; then
    pass "$t"
else
    fail "$t" "after 30 s: alive $(alive && echo yes || echo no), scopes $(systemctl list-units --all --plain --no-legend 'treeguard-*' | tr '\n' '|')"
    timeout 60 systemctl stop 'treeguard-*.scope' 2>/dev/null # this suite's runs only: nothing else runs here
fi

if alive; then
    fail "survivors" "a process of this suite's runs is still alive"
fi
finish
