#!/bin/bash
# In-VM suite (DESIGN.md [boundaries]): --memory-max / --pids-max enforced on a real systemd host
# with every cgroup v2 controller, and the report's usage. Interface: tests/vm/README.md.
#
# Root runs go through `systemd-run --scope -p Delegate=yes`: a scope holding treeguard alone, so
# treeguard moves itself into the scope's treeguard-controller sub-cgroup and enables the
# controllers in the scope's cgroup.subtree_control (the no-internal-processes rule), as systemd's
# delegation rules allow. A run started straight from the runner's service (whose cgroup holds
# this shell) gets the system scope instead (suites/system_scope.sh), or is refused. The ordinary user in a login session gets the limit through
# its user scope, or a refusal (125) -- never an unlimited run.
source "$TG_SRC/tests/vm/lib.sh"
user=$TG_VM_USER

R() { jq -r "$2" "$1" 2>/dev/null; }
excerpt() { tr '\n' '|' <"$1" | head -c 600; }

# scope_run NAME ARGS...: treeguard run -v ARGS in a transient Delegate=yes scope of its own; RC,
# stderr $WORK/NAME.err, stdout $WORK/NAME.out, report $WORK/NAME.json
scope_run() {
    local name=$1
    shift
    systemd-run --quiet --scope -p Delegate=yes --unit "tg-limits-$name-$$" -- \
        "$TREEGUARD" run -v --state-dir "$WORK/$name.state" --report "$WORK/$name.json" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err"
    RC=$?
}

if ! grep -qw memory "$CG_MOUNT/cgroup.controllers" || ! grep -qw pids "$CG_MOUNT/cgroup.controllers"; then
    skip limits "no memory and pids controllers in $CG_MOUNT/cgroup.controllers"
    finish
fi

# 1. a fork bomb under --pids-max 64: ends at its deadline, never more than 64 tasks, and the guest
#    answers while it runs
t="fork bomb under --pids-max 64"
t0=$(date +%s%N)
scope_run bomb --pids-max 64 --timeout 10s --kill-after 2s -- "$TG_FIXTURE" --ignore-term bomb &
bomb=$!
# responsive: every probe (a fork and exec outside the leaf, which the bomb's full pids.max cannot
# stop) finishes within the run's deadline and grace (10 s + 2 s, 8 s margin); the slowest is noted.
# pids.max bounds tasks, not CPU: 64 tasks retrying fork (each failed fork costs system time) keep
# both of the guest's CPUs busy, and under TCG a probe then takes seconds (measured: up to 10.4 s).
probe_limit=$((10 + 2 + 8))
hung=0 probes=0 slowest=0
while kill -0 "$bomb" 2>/dev/null; do
    s0=$(date +%s%N)
    timeout "$probe_limit" sh -c 'ps -e >/dev/null' || hung=$((hung + 1))
    ms=$((($(date +%s%N) - s0) / 1000000))
    ((ms > slowest)) && slowest=$ms
    probes=$((probes + 1))
    sleep 0.5 # the probe's sampling interval, not a synchronisation
done
wait "$bomb"
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
code=$(R "$WORK/bomb.json" .exit_code)
peak=$(R "$WORK/bomb.json" .usage.tasks_peak)
note "bomb: exit_code $code after ${elapsed_ms}ms, usage $(jq -c .usage "$WORK/bomb.json" 2>/dev/null); $probes probes, slowest ${slowest}ms"
if [[ $code != 124 ]]; then
    fail "$t" "exit_code '$code', expected 124 ($(excerpt "$WORK/bomb.err"))"
elif [[ ! $peak =~ ^[0-9]+$ ]] || ((peak > 64 || peak < 2)); then
    fail "$t" "tasks_peak '$peak', expected 2..64"
elif ((hung > 0 || probes == 0)) || ! timeout 10 true; then
    fail "$t" "$hung of $probes probes did not finish within ${probe_limit} s while the bomb ran"
elif ((elapsed_ms > 10000 + 2000 + 30000)); then
    fail "$t" "took ${elapsed_ms}ms for a 10s deadline and 2s grace"
else
    pass "$t: exit 124 after ${elapsed_ms}ms, tasks_peak $peak, $probes probes answered (slowest ${slowest}ms)"
fi

# 2. 512 MiB under --memory-max 64M: the OOM killer kills COMMAND (137), reported
t="512 MiB under --memory-max 64M"
scope_run oom --memory-max 64M --timeout 120s -- "$TG_FIXTURE" alloc 512
kills=$(R "$WORK/oom.json" .oom_kills)
mpeak=$(R "$WORK/oom.json" .usage.memory_peak_bytes)
note "oom: exit $RC, oom_kills $kills, usage $(jq -c .usage "$WORK/oom.json" 2>/dev/null)"
if [[ $RC != 137 ]]; then
    fail "$t" "exit $RC, expected 137 ($(excerpt "$WORK/oom.err"))"
elif [[ ! $kills =~ ^[0-9]+$ ]] || ((kills < 1)); then
    fail "$t" "oom_kills '$kills', expected >= 1"
elif [[ ! $mpeak =~ ^[0-9]+$ ]] || ((mpeak > 64 << 20)); then
    fail "$t" "memory_peak_bytes '$mpeak', expected <= $((64 << 20))"
elif ! grep -q "OOM killer killed" "$WORK/oom.err"; then
    fail "$t" "no OOM line on stderr ($(excerpt "$WORK/oom.err"))"
elif grep -q "allocated" "$WORK/oom.err"; then
    fail "$t" "the fixture allocated all 512 MiB"
else
    pass "$t: exit 137, oom_kills $kills, memory_peak_bytes $mpeak"
fi

# 3. 2 s of CPU: cpu_user_seconds >= 1 from the leaf, with the peaks the kernel has here
t="2 s of CPU"
scope_run cpu --timeout 120s -- "$TG_FIXTURE" spin 2
user_s=$(R "$WORK/cpu.json" .usage.cpu_user_seconds)
if [[ $RC != 0 ]]; then
    fail "$t" "exit $RC ($(excerpt "$WORK/cpu.err"))"
elif [[ $(R "$WORK/cpu.json" '.usage.cpu_user_seconds >= 1') != true ]]; then
    fail "$t" "cpu_user_seconds '$user_s', expected >= 1"
elif [[ $(R "$WORK/cpu.json" .usage.source) != cgroup ]]; then
    fail "$t" "usage $(jq -c .usage "$WORK/cpu.json"), expected source cgroup"
else
    pass "$t: cpu_user_seconds $user_s; $(tail -n 1 "$WORK/cpu.err")"
fi

# 4. the limits from the environment: the leaf's memory.max and pids.max, and where treeguard went
t="TREEGUARD_MEMORY_MAX / TREEGUARD_PIDS_MAX on the leaf"
TREEGUARD_MEMORY_MAX=96M TREEGUARD_PIDS_MAX=50 systemd-run --quiet --scope -p Delegate=yes -- \
    "$TREEGUARD" run --state-dir "$WORK/env.state" -- sh -c \
    'c=$(sed -n "s/^0:://p" /proc/self/cgroup); cat "'"$CG_MOUNT"'$c/memory.max" "'"$CG_MOUNT"'$c/pids.max"; cat /proc/$PPID/cgroup' \
    >"$WORK/env.out" 2>"$WORK/env.err"
RC=$?
got=$(head -n 2 "$WORK/env.out" | tr '\n' ' ')
note "env: treeguard's own cgroup during the run: $(sed -n 's/^0:://p' "$WORK/env.out")"
if [[ $RC == 0 && $got == "$((96 << 20)) 50 " ]] && grep -q '/treeguard-controller$' "$WORK/env.out"; then
    pass "$t (treeguard moved itself into the scope's treeguard-controller)"
else
    fail "$t" "exit $RC, output '$(tr '\n' '|' <"$WORK/env.out")' ($(excerpt "$WORK/env.err"))"
fi

# 5. from the runner's service, a cgroup shared with this shell: no leaf beneath it can be given
#    the controller; the run goes to the system scope (suites/system_scope.sh), never unlimited
t="--memory-max from a cgroup shared with other processes"
"$TREEGUARD" run -v --state-dir "$WORK/shared.state" --memory-max 64M -- sh -c 'touch "$1"; cat /proc/self/cgroup' sh "$WORK/shared.ran" \
    >"$WORK/shared.out" 2>"$WORK/shared.err"
RC=$?
note "shared: $(grep -E 'cgroup leaf|system scope' "$WORK/shared.err" | head -n 3 | tr '\n' '|')"
if [[ $RC == 0 ]] && grep -q '^0::.*/treeguard-[^/]*\.scope/treeguard-' "$WORK/shared.out"; then
    pass "$t: enforced in the system scope"
elif [[ $RC == 125 && ! -e $WORK/shared.ran ]] && grep -q "cannot be enforced" "$WORK/shared.err"; then
    pass "$t: 125, nothing run"
else
    fail "$t" "exit $RC, ran: $([[ -e $WORK/shared.ran ]] && echo yes || echo no) ($(excerpt "$WORK/shared.err"))"
fi

# 6. the same limit as the ordinary user in a login session: enforced through the user scope, or
#    refused with 125 -- never run unlimited
t="$user in a session: 512 MiB under --memory-max 64M"
U=$WORK/user
mkdir -m 700 "$U" && chown "$user" "$U"
as "session:$user" sh -c '"$TREEGUARD" run -v --state-dir "$1/state" --report "$1/report.json" \
    --memory-max 64M --timeout 120s -- "$TG_FIXTURE" alloc 512 2>"$1/err"' sh "$U" >/dev/null
RC=$?
kills=$(R "$U/report.json" .oom_kills)
note "user: exit $RC; $(grep -E 'boundary|cannot be enforced|OOM' "$U/err" | head -n 3 | tr '\n' '|')"
if [[ $RC == 137 && $kills =~ ^[0-9]+$ ]] && ((kills >= 1)); then
    pass "$t: killed (137, oom_kills $kills)"
elif [[ $RC == 125 ]] && grep -q "cannot be enforced" "$U/err" && ! grep -q allocated "$U/err"; then
    pass "$t: refused with 125, nothing run"
else
    fail "$t" "exit $RC, neither enforced nor refused ($(excerpt "$U/err"))"
fi
finish
