#!/bin/bash
# In-VM suite: what systemd does to a run started in a root service without Delegate= (a CI job's
# unit). The unit is not delegated, so treeguard makes no leaf beneath it (issue 24 item 3: it asks
# the manager once per unit and boot): its leaf is in a system scope of its own,
# treeguard-RUNID.scope with Delegate=yes, PartOf= the service. Cases: `systemctl daemon-reload`
# during the run, another unit enabling controllers (and set-property on the service itself), and
# the service stopped (`systemctl stop`: the scope stops with it), also with a tree that ignores
# TERM (the service SIGKILLs treeguard after TimeoutStopSec; its guardian, which ignores TERM,
# takes the tree down). Each case records what it saw ("# " lines) and checks the contract: the
# run ends as it would have, nothing of the tree survives, no leaf is left.
source "$TG_SRC/tests/vm/lib.sh"
N=0

# hold_start [TREEGUARD OPTIONS...] -- FIXTURE ARGS...: a transient service tg-hold-$$-N running
# "treeguard run -v ..." with the fixture; waits for the fixture's "ready"; sets UNIT, D (its files),
# MAIN (the fixture's main pid), LEAF (its cgroup, relative to the mount)
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
        -p StandardOutput="file:$D/tg.out" -p StandardError="file:$D/tg.err" -p TimeoutStopSec=10s \
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
    DISPOSITION=$(jq -r .disposition "$D/report.json" 2>/dev/null)
    note "$UNIT: ended $ACTIVE, result $RESULT, treeguard exit code/status $CODE/$STATUS, report disposition ${DISPOSITION:-none}"
    grep -v 'child pid\|^treeguard: boundary' "$D/tg.err" 2>/dev/null | head -n 6 | sed "s/^/#   $UNIT stderr: /"
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
    if [[ $STATUS == 0 && $DISPOSITION == pass ]] && why=$(tree_gone); then
        pass "$name: the run ends by itself, exit 0, disposition pass, the tree and leaf gone"
    else
        fail "$name: the run ends by itself, exit 0, disposition pass, the tree and leaf gone" \
            "exit $CODE/$STATUS, disposition $DISPOSITION ${why:-}"
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
    if [[ $STATUS == 0 && $DISPOSITION == pass ]] && why=$(tree_gone); then
        pass "$name: the run ends by itself, exit 0, disposition pass, the tree and leaf gone"
    else
        fail "$name: the run ends by itself, exit 0, disposition pass, the tree and leaf gone" \
            "exit $CODE/$STATUS, disposition $DISPOSITION ${why:-}"
    fi
    systemctl stop "$other" 2>/dev/null
    hold_cleanup
fi

# ---- 3. the unit stopped: systemd sends TERM to every process of the unit, the leaf's too
name="systemctl stop of the unit holding a run"
if hold_start -- setsid; then
    t0=$SECONDS
    systemctl stop "$UNIT"
    note "$name: systemctl stop returned after $((SECONDS - t0))s"
    hold_wait_end 30
    if poll_tree_gone 30; then
        pass "$name: the tree and the leaf are gone"
    else
        fail "$name: the tree and the leaf are gone" "$why"
    fi
    if [[ -n $DISPOSITION && $DISPOSITION != pending ]]; then
        pass "$name: treeguard finished its record ($DISPOSITION)"
    else
        fail "$name: treeguard finished its record" "report disposition '${DISPOSITION}'"
    fi
    hold_cleanup
fi

# ---- 4. the unit stopped while the tree ignores TERM: systemd's SIGKILL after TimeoutStopSec
name="systemctl stop, the tree ignoring TERM"
if hold_start --kill-after 30s -- ignore-term; then
    t0=$SECONDS
    systemctl stop "$UNIT"
    note "$name: systemctl stop returned after $((SECONDS - t0))s (TimeoutStopSec=10s)"
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
