#!/usr/bin/env bash
# In-VM suite (issue 14 items 3-5): --memory-max / --pids-max enforced on a real systemd host with
# every cgroup v2 controller, and the report's usage. Run as root in the guest by the VM lane with
# TREEGUARD, TG_FIXTURE, TG_SRC, TG_VM_USER (tests/vm/README.md); prints PASS/FAIL/SKIP lines.
#
# Root runs go through `systemd-run --scope -p Delegate=yes`: a scope holding treeguard alone, so
# treeguard moves itself into the scope's treeguard-controller sub-cgroup and enables the
# controllers in the scope's cgroup.subtree_control (the no-internal-processes rule), as systemd's
# delegation rules allow. A run started straight from this suite's own cgroup (which holds this
# shell) must be refused instead.
set -u
export LC_ALL=C
: "${TREEGUARD:?}" "${TG_FIXTURE:?}"
VM_USER=${TG_VM_USER:-tg}
WORK=$(mktemp -d /tmp/tg-vm-limits.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
FAILED=0

pass() { echo "PASS limits: $1"; }
failed() { echo "FAIL limits: $1: $2"; FAILED=1; }
skip() { echo "SKIP limits: $1: $2"; }

# field NAME FILE: a number of the report (one key per name in treeguard's report), or "null"
field() { sed -n "s/^ *\"$1\": \([0-9.e+-]*\|null\),\{0,1\}$/\1/p" "$2" | head -1; }
# le A B / ge A B: numeric comparisons of report numbers (integers or decimals)
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a != "null" && a + 0 >= b + 0) }'; }
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && a != "null" && a + 0 <= b + 0) }'; }

# scope_run NAME ARGS...: treeguard run ARGS in a transient Delegate=yes scope of its own; sets RC,
# output in $WORK/NAME.{out,err}, report $WORK/NAME.json, state dir $WORK/NAME.state
scope_run() {
    local name=$1
    shift
    mkdir -m 700 "$WORK/$name.state"
    systemd-run --quiet --scope -p Delegate=yes --unit "tg-limits-$name-$$" -- \
        "$TREEGUARD" run -v --state-dir "$WORK/$name.state" --report "$WORK/$name.json" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.err"
    RC=$?
}
excerpt() { tr '\n' '|' <"$WORK/$1.err" | cut -c1-600; }

if ! grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    skip all "no memory controller in /sys/fs/cgroup/cgroup.controllers: not the VM this suite is for"
    exit 0
fi

# 1. a fork bomb under --pids-max 64: ends at its deadline, never more than 64 tasks, and the guest
#    answers while it runs
name=bomb
mkdir -m 700 "$WORK/$name.state"
t0=$(date +%s%N)
systemd-run --quiet --scope -p Delegate=yes --unit "tg-limits-$name-$$" -- \
    "$TREEGUARD" run -v --state-dir "$WORK/$name.state" --report "$WORK/$name.json" \
    --pids-max 64 --timeout 10s --kill-after 2s -- "$TG_FIXTURE" --ignore-term bomb \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
bomb=$!
sleep_until=$(($(date +%s) + 5))
responsive=yes
while (($(date +%s) < sleep_until)); do
    timeout 10 sh -c 'echo alive >/dev/null' || responsive=no
    sleep 0.5 # the sampling interval of the probe, not a synchronisation
done
wait "$bomb"
RC=$?
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
peak=$(field tasks_peak "$WORK/$name.json")
if [[ $RC != 124 ]]; then
    failed "fork bomb under --pids-max 64" "exit $RC, expected 124 ($(excerpt $name))"
elif ! le "$peak" 64; then
    failed "fork bomb under --pids-max 64" "tasks_peak '$peak', expected <= 64"
elif [[ $responsive != yes ]] || ! timeout 10 true; then
    failed "fork bomb under --pids-max 64" "the guest did not answer while the bomb ran"
elif ((elapsed_ms > 10000 + 2000 + 20000)); then
    failed "fork bomb under --pids-max 64" "took ${elapsed_ms}ms for a 10s deadline and 2s grace"
else
    pass "fork bomb under --pids-max 64: exit 124 after ${elapsed_ms}ms, tasks_peak $peak, guest responsive"
fi

# 2. 512 MiB under --memory-max 64M: the OOM killer kills COMMAND (137), reported
scope_run oom --memory-max 64M --timeout 120s -- "$TG_FIXTURE" alloc 512
kills=$(field oom_kills "$WORK/oom.json")
mpeak=$(field memory_peak_bytes "$WORK/oom.json")
if [[ $RC != 137 ]]; then
    failed "512 MiB under --memory-max 64M" "exit $RC, expected 137 ($(excerpt oom))"
elif ! ge "$kills" 1; then
    failed "512 MiB under --memory-max 64M" "oom_kills '$kills', expected >= 1"
elif ! le "$mpeak" $((64 << 20)); then
    failed "512 MiB under --memory-max 64M" "memory_peak_bytes '$mpeak', expected <= $((64 << 20))"
elif ! grep -q "OOM killer killed" "$WORK/oom.err"; then
    failed "512 MiB under --memory-max 64M" "no OOM line on stderr ($(excerpt oom))"
else
    pass "512 MiB under --memory-max 64M: exit 137, oom_kills $kills, memory_peak_bytes $mpeak"
fi

# 3. 2 s of CPU: cpu_user_seconds >= 1 from the leaf, with the peaks the kernel has here
scope_run cpu --timeout 120s -- "$TG_FIXTURE" spin 2
user=$(field cpu_user_seconds "$WORK/cpu.json")
if [[ $RC != 0 ]]; then
    failed "2 s of CPU" "exit $RC ($(excerpt cpu))"
elif ! ge "$user" 1; then
    failed "2 s of CPU" "cpu_user_seconds '$user', expected >= 1"
elif ! grep -q '"source": "cgroup"' "$WORK/cpu.json"; then
    failed "2 s of CPU" "usage source is not cgroup: $(grep -A6 '"usage"' "$WORK/cpu.json" | tr -d '\n ')"
else
    pass "2 s of CPU: cpu_user_seconds $user, $(tail -1 "$WORK/cpu.err")"
fi

# 4. the limit from the environment, with a tasks peak: pids.max and memory.max on the leaf
mkdir -m 700 "$WORK/env.state"
TREEGUARD_MEMORY_MAX=96M TREEGUARD_PIDS_MAX=50 systemd-run --quiet --scope -p Delegate=yes -- \
    "$TREEGUARD" run --state-dir "$WORK/env.state" -- sh -c \
    'c=$(sed -n "s/^0:://p" /proc/self/cgroup); cat /sys/fs/cgroup$c/memory.max /sys/fs/cgroup$c/pids.max' \
    >"$WORK/env.out" 2>"$WORK/env.err"
RC=$?
got=$(tr '\n' ' ' <"$WORK/env.out")
if [[ $RC == 0 && $got == "$((96 << 20)) 50 " ]]; then
    pass "TREEGUARD_MEMORY_MAX / TREEGUARD_PIDS_MAX set the leaf's memory.max and pids.max"
else
    failed "TREEGUARD_MEMORY_MAX / TREEGUARD_PIDS_MAX" "exit $RC, leaf shows '$got' ($(excerpt env))"
fi

# 5. from a cgroup this shell shares (no scope of its own): refused, nothing run
mkdir -m 700 "$WORK/shared.state"
"$TREEGUARD" run --state-dir "$WORK/shared.state" --memory-max 64M -- touch "$WORK/shared.ran" \
    >"$WORK/shared.out" 2>"$WORK/shared.err"
RC=$?
if [[ $RC == 125 && ! -e $WORK/shared.ran ]] && grep -q "cannot be enforced" "$WORK/shared.err"; then
    pass "a cgroup shared with other processes: 125, nothing run ($(head -1 "$WORK/shared.err"))"
else
    failed "a cgroup shared with other processes" "exit $RC, ran: $([[ -e $WORK/shared.ran ]] && echo yes || echo no) ($(excerpt shared))"
fi

# 6. the same limit as the ordinary user: enforced (through the user scope) or refused with 125 --
#    never run unlimited
if id "$VM_USER" >/dev/null 2>&1; then
    uid=$(id -u "$VM_USER")
    U=$WORK/user
    mkdir -m 700 "$U" && chown "$VM_USER" "$U"
    runuser -u "$VM_USER" -- env XDG_RUNTIME_DIR=/run/user/$uid \
        DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$uid/bus \
        "$TREEGUARD" run -v --state-dir "$U/state" --report "$U/report.json" \
        --memory-max 64M --timeout 120s -- "$TG_FIXTURE" alloc 512 >"$WORK/user.out" 2>"$WORK/user.err"
    RC=$?
    if [[ $RC == 137 ]] && ge "$(field oom_kills "$U/report.json")" 1; then
        pass "as $VM_USER: 512 MiB under --memory-max 64M killed (137, oom_kills $(field oom_kills "$U/report.json"))"
    elif [[ $RC == 125 ]] && grep -q "cannot be enforced" "$WORK/user.err" &&
        ! grep -q "allocated" "$WORK/user.err"; then
        pass "as $VM_USER: --memory-max refused with 125, nothing run ($(grep 'cannot be enforced' "$WORK/user.err" | head -1))"
    else
        failed "as $VM_USER: --memory-max 64M" "exit $RC, neither enforced nor refused ($(excerpt user))"
    fi
else
    skip "as the ordinary user" "no user $VM_USER in this guest"
fi

exit $FAILED
