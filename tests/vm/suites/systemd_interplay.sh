#!/bin/bash
# In-VM suite: what systemd does to a run started in a root service without Delegate= (a CI job's
# unit). The unit is not delegated, so treeguard makes no leaf beneath it (DESIGN.md [scopes]: it
# asks the manager once per unit and boot): its leaf is in a system scope of its own,
# treeguard-RUNID.scope with Delegate=yes, PartOf= the service. Cases: `systemctl daemon-reload`
# during the run, another unit enabling controllers (and set-property on the service itself), and
# the service stopped (`systemctl stop`: the scope stops with it), also with a tree that ignores
# TERM (the service SIGKILLs treeguard after TimeoutStopSec; its guardian, which ignores TERM,
# takes the tree down). Each case records what it saw ("# " lines) and checks the rules: the
# run ends as it would have, nothing of the tree survives, no leaf is left.
source "$TG_SRC/tests/vm/lib.sh"
N=0

# hold_start [TREEGUARD OPTIONS...] -- FIXTURE ARGS...: a transient service tg-hold-$$-N running
# "treeguard run -v ..." with the fixture (TimeoutStopSec=$STOP_TIMEOUT seconds, default 10);
# waits for the fixture's "ready"; sets UNIT, D (its files), MAIN (the fixture's main pid), LEAF
# (its cgroup, relative to the mount)
hold_start() {
    N=$((N + 1))
    UNIT=tg-hold-$$-$N.service
    D=$WORK/hold$N
    mkdir -p "$D/state"
    chmod 700 "$D/state"
    local -a tg_opts=()
    while [[ $1 != -- ]]; do tg_opts+=("$1"); shift; done
    shift
    systemd-run --quiet --unit="$UNIT" --service-type=exec \
        -p StandardOutput="file:$D/tg.out" -p StandardError="file:$D/tg.err" -p TimeoutStopSec="${STOP_TIMEOUT:-10}s" \
        --setenv=TG_PIDFILE="$D/pids" --setenv=TG_TOKEN="tgvm-$$-$N" \
        -- "$TREEGUARD" run -v --state-dir "$D/state" --report "$D/report.json" --keep-records \
        "${tg_opts[@]}" -- "$TG_FIXTURE" "$@" || { fail "$UNIT: systemd-run" "could not start"; return 1; }
    local i
    for i in $(seq 1 600); do
        grep -qx ready "$D/pids" 2>/dev/null && break
        systemctl is-active --quiet "$UNIT" || break
        sleep 0.05
    done
    if ! grep -qx ready "$D/pids" 2>/dev/null; then
        fail "$UNIT: the fixture gets ready" "not ready; treeguard said: $(head -c 300 "$D/tg.err")"
        return 1
    fi
    read -r MAIN _ <"$D/pids"
    LEAF=$(sed -n 's/^0:://p' "/proc/$MAIN/cgroup")
    SCOPE=$(sed -n 's|^.*/\(treeguard-[^/]*\.scope\)/.*|\1|p' <<<"$LEAF")
    note "$UNIT: fixture main $MAIN in $LEAF; ${SCOPE:-no scope}: $(systemctl show -p Delegate -p PartOf "${SCOPE:-none}" 2>/dev/null | tr '\n' ' ')"
    grep 'plan for .*cgroup leaf' "$D/tg.err" | head -n 1 | sed "s/^/#   $UNIT: /"
    # the service is not delegated: the leaf is in a system scope of treeguard's own (Delegate=yes)
    if [[ $LEAF =~ /treeguard-([^/]+)\.scope/treeguard-([^/]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" &&
        $(systemctl show -p Delegate --value "$SCOPE") == yes ]] &&
        grep -q "cgroup leaf: refused: unit $UNIT is not delegated (asked systemd, kept in $D/state/units/system-$UNIT)" "$D/tg.err"; then
        pass "$UNIT: no leaf beneath the service (not delegated); a system scope with Delegate=yes"
    else
        fail "$UNIT: no leaf beneath the service (not delegated); a system scope with Delegate=yes" \
            "leaf $LEAF; $(grep 'plan for' "$D/tg.err" | tr '\n' '|' | head -c 600)"
    fi
}

# poll_tree_gone SECONDS: tree_gone, polled (the guardian acts once the controller is dead)
poll_tree_gone() {
    local i
    for ((i = 0; i < $1 * 10; i++)); do
        why=$(tree_gone) && return 0
        sleep 0.1
    done
    return 1
}

# members_alive_in_leaf: every process in the pid file is alive and still in $LEAF
members_alive_in_leaf() {
    local pid start rest cg bad=""
    while read -r pid start rest; do
        [[ $pid =~ ^[0-9]+$ && -z $rest ]] || continue
        cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)
        [[ $cg == "$LEAF" ]] || bad+=" $pid(${cg:-gone})"
    done <"$D/pids"
    [[ -z $bad ]] && return 0
    echo "$bad"
    return 1
}

# tree_gone: no process of the pid file alive (same start time), none with the token, leaf gone
tree_gone() {
    local pid start rest alive=""
    while read -r pid start rest; do
        [[ $pid =~ ^[0-9]+$ && -z $rest ]] || continue
        [[ $(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null) == "$start" ]] || continue
        [[ $(sed 's/^.*) //' "/proc/$pid/stat" | cut -d' ' -f1) != Z ]] && alive+=" $pid"
    done <"$D/pids"
    if [[ -n $alive ]]; then echo "alive:$alive"; return 1; fi
    if [[ -d $CG_MOUNT$LEAF ]]; then echo "leaf $LEAF still there"; return 1; fi
    return 0
}

# hold_wait_end SECONDS: the unit ended; RESULT, STATUS (treeguard's exit status), ACTIVE
hold_wait_end() {
    for _ in $(seq 1 $(($1 * 10))); do
        ACTIVE=$(systemctl show -p ActiveState --value "$UNIT")
        [[ $ACTIVE == active || $ACTIVE == activating || $ACTIVE == deactivating ]] || break
        sleep 0.1
    done
    RESULT=$(systemctl show -p Result --value "$UNIT")
    STATUS=$(systemctl show -p ExecMainStatus --value "$UNIT")
    CODE=$(systemctl show -p ExecMainCode --value "$UNIT")
    TAKEDOWN=$(jq -r .takedown "$D/report.json" 2>/dev/null)
    note "$UNIT: ended $ACTIVE, result $RESULT, treeguard exit code/status $CODE/$STATUS, report takedown ${TAKEDOWN:-none}"
    grep -v 'child pid\|^treeguard: boundary' "$D/tg.err" 2>/dev/null | head -n 6 | sed "s/^/#   $UNIT stderr: /"
    cp "$D/tg.err" "${TG_RESULTS_DIR:-$WORK}/tg-$UNIT.err" 2>/dev/null
    cp "$D/report.json" "${TG_RESULTS_DIR:-$WORK}/report-$UNIT.json" 2>/dev/null
}

# stop_observe: `systemctl stop $UNIT`, timed, with systemd's debug log on for the stop; sets
# STOP_SECS (when systemctl stop returned) and TG_EXIT_SECS (when treeguard, the service's main
# process, was gone or a zombie), both from the stop's start, and notes what systemd did: the
# service's and the scope's properties before and after, and PID 1's log lines about them
stop_observe() {
    local tg_pid tg_start cursor level t0 t1 pid
    tg_pid=$(systemctl show -p MainPID --value "$UNIT")
    tg_start=$(cut -d' ' -f22 "/proc/$tg_pid/stat" 2>/dev/null)
    note "$name: before: service $(systemctl show -p MainPID -p ControlGroup -p TimeoutStopUSec -p KillMode "$UNIT" | tr '\n' ' ')"
    note "$name: before: treeguard (pid $tg_pid) in $(sed -n 's/^0:://p' "/proc/$tg_pid/cgroup" 2>/dev/null); the service's cgroup holds '$(tr '\n' ' ' <"$CG_MOUNT$(systemctl show -p ControlGroup --value "$UNIT")/cgroup.procs" 2>/dev/null)'"
    note "$name: before: scope $(systemctl show -p ActiveState -p ControlGroup -p TimeoutStopUSec -p KillMode -p PartOf -p Delegate "${SCOPE:-none}" | tr '\n' ' ')"
    for pid in $(cat "$CG_MOUNT$(systemctl show -p ControlGroup --value "${SCOPE:-none}")/cgroup.procs" 2>/dev/null) \
        $(find "$CG_MOUNT$(systemctl show -p ControlGroup --value "${SCOPE:-none}")" -mindepth 2 -name cgroup.procs -exec cat {} + 2>/dev/null); do
        note "$name: before: in the scope: $pid ppid $(cut -d' ' -f4 "/proc/$pid/stat" 2>/dev/null) $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | head -c 80) [$(sed -n 's/^0:://p' "/proc/$pid/cgroup" 2>/dev/null)]"
    done
    cursor=$(journalctl -n 0 --show-cursor 2>/dev/null | sed -n 's/^-- cursor: //p')
    level=$(systemd-analyze get-log-level 2>/dev/null)
    systemd-analyze log-level debug 2>/dev/null
    t0=$(date +%s.%N)
    (   # when treeguard is gone (or a zombie not yet reaped by systemd)
        while [[ $(cut -d' ' -f22 "/proc/$tg_pid/stat" 2>/dev/null) == "$tg_start" &&
            $(sed 's/^.*) //' "/proc/$tg_pid/stat" 2>/dev/null | cut -d' ' -f1) != Z ]]; do sleep 0.02; done
        date +%s.%N >"$D/tg_gone"
    ) &
    local watcher=$!
    (   # when each member of the tree is gone (or a zombie)
        local p st r
        while read -r p st r; do
            [[ $p =~ ^[0-9]+$ && -z $r ]] || continue
            while [[ $(cut -d' ' -f22 "/proc/$p/stat" 2>/dev/null) == "$st" &&
                $(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1) != Z ]]; do sleep 0.02; done
            echo "$p $(date +%s.%N)"
        done <"$D/pids" >"$D/members_gone"
    ) &
    local members_watcher=$!
    systemctl stop "$UNIT"
    t1=$(date +%s.%N)
    wait "$watcher"
    wait "$members_watcher"
    systemd-analyze log-level "${level:-info}" 2>/dev/null
    STOP_SECS=$(awk "BEGIN{print $t1 - $t0}")
    TG_EXIT_SECS=$(awk "BEGIN{print $(cat "$D/tg_gone") - $t0}")
    note "$name: treeguard (pid $tg_pid) gone after ${TG_EXIT_SECS}s; systemctl stop returned after ${STOP_SECS}s; the tree's members gone after: $(awk -v t0="$t0" '{printf "%s %.2fs, ", $1, $2 - t0}' "$D/members_gone")"
    note "$name: after: service $(systemctl show -p ActiveState -p Result -p ExecMainCode -p ExecMainStatus -p ExecMainExitTimestamp -p InactiveEnterTimestamp "$UNIT" | tr '\n' ' ')"
    note "$name: after: scope $(systemctl show -p LoadState -p ActiveState -p Result "${SCOPE:-none}" | tr '\n' ' ')"
    jq -c '.timeline[]?' "$D/report.json" 2>/dev/null | head -n 30 | sed "s/^/#   $name: report timeline: /"
    grep -v 'plan for' "$D/tg.err" 2>/dev/null | tail -n 25 | sed "s/^/#   $name: treeguard said: /"
    journalctl --after-cursor="$cursor" -o short-precise --no-pager >"${TG_RESULTS_DIR:-$WORK}/journal-$UNIT.txt" 2>&1
    journalctl --after-cursor="$cursor" -o short-precise --no-pager _PID=1 2>/dev/null |
        grep -E "$UNIT|${SCOPE:-none}|[^0-9]${tg_pid}[^0-9]" | grep -v -E 'Sent message|Got message|Bus private-bus' | head -n 60 |
        sed "s/^/#   $name: journal: /"
}

hold_cleanup() {
    systemctl stop "$UNIT" 2>/dev/null
    systemctl reset-failed "$UNIT" 2>/dev/null
    local pid start rest
    while read -r pid start rest; do # only what this suite started, by pid and start time
        [[ $pid =~ ^[0-9]+$ && -z $rest ]] || continue
        [[ $(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null) == "$start" ]] && kill -KILL "$pid" 2>/dev/null
    done <"$D/pids"
    return 0
}

# ---- 1. daemon-reload during a run
name="daemon-reload during a run"
if hold_start -- --release "$WORK/release1" setsid; then
    systemctl daemon-reload
    sleep 1 # (no condition to wait for: this looks for a change that systemd might make)
    if bad=$(members_alive_in_leaf); then
        pass "$name: the members stay in the leaf"
    else
        fail "$name: the members stay in the leaf" "moved or gone:$bad"
    fi
    touch "$WORK/release1"
    hold_wait_end 30
    if [[ $STATUS == 0 && $TAKEDOWN == pass ]] && why=$(tree_gone); then
        pass "$name: the run ends by itself, exit 0, takedown pass, the tree and leaf gone"
    else
        fail "$name: the run ends by itself, exit 0, takedown pass, the tree and leaf gone" \
            "exit $CODE/$STATUS, takedown $TAKEDOWN ${why:-}"
    fi
    hold_cleanup
fi

# ---- 2. another unit enabling controllers, and set-property on the holding unit
name="controllers enabled during a run"
if hold_start -- --release "$WORK/release2" setsid; then
    before=$(cat "$CG_MOUNT$(dirname "$LEAF")/cgroup.subtree_control")
    other=tg-other-$$.service
    systemd-run --quiet --unit="$other" -p MemoryMax=256M -p CPUWeight=50 -p IOWeight=50 -p TasksMax=200 \
        -- sleep 60
    systemctl set-property --runtime "$UNIT" CPUWeight=70 MemoryMax=512M TasksMax=300 IOWeight=70
    sleep 1 # (as above)
    after=$(cat "$CG_MOUNT$(dirname "$LEAF")/cgroup.subtree_control")
    note "$name: the leaf's parent's cgroup.subtree_control '$before' -> '$after'; system.slice enables '$(cat "$CG_MOUNT/system.slice/cgroup.subtree_control")'; its controllers '$(cat "$CG_MOUNT$(dirname "$LEAF")/cgroup.controllers")'"
    if bad=$(members_alive_in_leaf); then
        pass "$name: the members stay in the leaf"
    else
        fail "$name: the members stay in the leaf" "moved or gone:$bad"
    fi
    touch "$WORK/release2"
    hold_wait_end 30
    if [[ $STATUS == 0 && $TAKEDOWN == pass ]] && why=$(tree_gone); then
        pass "$name: the run ends by itself, exit 0, takedown pass, the tree and leaf gone"
    else
        fail "$name: the run ends by itself, exit 0, takedown pass, the tree and leaf gone" \
            "exit $CODE/$STATUS, takedown $TAKEDOWN ${why:-}"
    fi
    systemctl stop "$other" 2>/dev/null
    hold_cleanup
fi

# ---- 3. the unit stopped: systemd sends TERM to every process of the unit, the leaf's too
name="systemctl stop of the unit holding a run"
# TimeoutStopSec and treeguard's grace both 60 s: a stop that waited for either is told from a
# prompt one (a second or two; 6 s in a TCG guest beside a busy host) by a margin of 30 s
if STOP_TIMEOUT=60 hold_start --kill-after 60s -- setsid; then
    # COMMAND starts with the mask treeguard inherited (none blocked here), not the one treeguard
    # blocked for itself before it re-executed into the scope: else systemd's TERM stays pending
    blocked=""
    while read -r pid start rest; do
        [[ $pid =~ ^[0-9]+$ && -z $rest ]] || continue
        mask=$(sed -n 's/^SigBlk:\t//p' "/proc/$pid/status" 2>/dev/null)
        [[ $mask == 0000000000000000 ]] || blocked+=" $pid:$mask"
    done <"$D/pids"
    if [[ -z $blocked ]]; then
        pass "$name: COMMAND's tree starts with no signal blocked (SigBlk 0)"
    else
        fail "$name: COMMAND's tree starts with no signal blocked (SigBlk 0)" "blocked:$blocked"
    fi
    stop_observe
    # the tree obeys TERM: the stop is prompt, not the service's TimeoutStopSec=60s nor
    # treeguard's grace (--kill-after 60s)
    if awk "BEGIN{exit !($STOP_SECS < 30)}" && [[ $(systemctl show -p Result --value "$UNIT") != timeout ]]; then
        pass "$name: systemctl stop returns well before TimeoutStopSec (${STOP_SECS}s), no Result=timeout"
    else
        fail "$name: systemctl stop returns well before TimeoutStopSec" \
            "${STOP_SECS}s, result $(systemctl show -p Result --value "$UNIT")"
    fi
    hold_wait_end 30
    if poll_tree_gone 30; then
        pass "$name: the tree and the leaf are gone"
    else
        fail "$name: the tree and the leaf are gone" "$why"
    fi
    if [[ -n $TAKEDOWN && $TAKEDOWN != pending ]]; then
        pass "$name: treeguard finished its record ($TAKEDOWN)"
    else
        fail "$name: treeguard finished its record" "report takedown '${TAKEDOWN}'"
    fi
    # systemd's TERM came from PID 1 while it walked the scope's cgroups: treeguard left its empty
    # leaf for systemd to remove with the scope (removed during the walk, it made systemd SIGKILL
    # the scope before the record was finished); that systemd removed it is checked above
    if grep -Eq '^treeguard: the empty leaf .* is left to the service manager \(systemd, pid 1\)' "$D/tg.err"; then
        pass "$name: treeguard left its empty leaf to systemd, which signalled it"
    else
        fail "$name: treeguard left its empty leaf to systemd, which signalled it" \
            "$(grep -E 'proven empty|left to' "$D/tg.err" | tr '\n' '|' | head -c 400)"
    fi
    hold_cleanup
fi

# ---- 4. the unit stopped while the tree ignores TERM: systemd's SIGKILL after TimeoutStopSec
name="systemctl stop, the tree ignoring TERM"
if hold_start --kill-after 30s -- ignore-term; then
    stop_observe
    hold_wait_end 30
    # treeguard is SIGKILLed by the service's stop before its report: its guardian (in the scope,
    # which ignores the scope's TERM) takes the tree down and proves it
    if poll_tree_gone 60; then
        pass "$name: the tree and the leaf are gone"
    else
        fail "$name: the tree and the leaf are gone" "$why"
    fi
    "$TREEGUARD" status --state-dir "$D/state" 2>&1 | head -n 5 | sed "s/^/#   $name: status: /"
    "$TREEGUARD" run --state-dir "$D/state" -- true
    rc=$?
    note "$name: the next treeguard run on that state directory exits $rc"
    if ((rc == 0)); then
        pass "$name: the next run on the state directory is not blocked (the boundary is proven empty)"
    else
        fail "$name: the next run on the state directory is not blocked" "exit $rc"
    fi
    hold_cleanup
fi
finish
