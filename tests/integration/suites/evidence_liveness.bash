# evidence_liveness (DESIGN.md [liveness]): what "alive" means, and what the takedown signals.
#  - a member whose main thread called pthread_exit (shown Z while a worker thread runs) is alive:
#    the controller signals and kills it (exit 124, not 122 "0 member(s) survived"); after the
#    controller's SIGKILL the guardian kills it and records pass only once it is gone; with the
#    guardian killed too, sweep does;
#  - as root, the guardian runs at real-time priority from its start;
#  - a member in uninterruptible sleep (a vfork parent, state D) does not keep the real-time
#    controller or guardian spinning: their CPU time stays small;
#  - a stranger that joins COMMAND's process group is never signalled (process-group);
#  - an escapee without the run's marker that only the guardian's walk saw is taken down after
#    the controller's SIGKILL (process-group: the guardian walks only there).

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

# track_cpu SECONDS PID START WHAT: poll PID's CPU time until it is gone; CPU_SEEN_MS = the last
# reading (a process that is reaped takes its counters with it: the last poll is within 20 ms of
# its end), LIVED_MS = how long it was polled
track_cpu() {
    local secs=$1 pid=$2 start=$3 t0
    CPU_SEEN_MS=0
    now_ms; t0=$NOW_MS
    while alive_as "$pid" "$start"; do
        cpu_ms "$pid" && CPU_SEEN_MS=$CPU_MS
        now_ms
        ((NOW_MS - t0 < secs * 1000)) || { fail "$4 (pid $pid) still running after ${secs}s"; break; }
        poll_sleep
    done
    now_ms; LIVED_MS=$((NOW_MS - t0))
}
# the most CPU a takedown may take here, whatever the tree does: well above a real takedown of a
# small tree (a few ms), far below the 1.5-2 s of a real-time spin
CPU_LIMIT_MS=300

TEST "a member whose main thread called pthread_exit (Z, worker runs): signalled and killed, exit 124"
fx thread-leader
tg_start --timeout 1s --kill-after 300ms -- "${FX[@]}"
if wait_ready 20; then
    members_alive
    ((${#ALIVE[@]} == 2)) || fail "expected COMMAND and the thread leader alive, got ${ALIVE[*]} / ${DEAD[*]}"
    leader=$(sed -n 2p "$PIDFILE")
    proc_stat "${leader%% *}"
    expect_eq "$PS_STATE" Z "the thread leader's own state letter"
    tg_wait 60
    expect_exit 124
    grep -q "survived" "$T/tg.err" && fail "treeguard reported survivors:$(tg_stderr_excerpt)"
    # the whole run is bounded by its deadline and grace: no wait for a member it cannot see
    expect_elapsed_below $((1000 + 300 + 10000)) "deadline 1s + --kill-after 300ms + load margin"
fi

# The guardian drains first (TERM, which the thread leader ignores), waits the run's grace, then
# kills: the grace is the run's own, 1 s here, and the bound follows from it.
TEST "controller SIGKILLed, a member whose main thread called pthread_exit: the guardian kills it, then records pass"
fx thread-leader
tg_start --kill-after 1s -- "${FX[@]}"
if wait_ready 20 && guardian_of_run; then
    [[ $BOUNDARY == cgroup ]] || guardian_walked
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    wait_members_gone $((GUARDIAN_TAKEDOWN_S + 1 + LOAD_MARGIN_S)) "members after the controller's SIGKILL (grace 1s)" &&
        note "members gone ${GONE_MS}ms after SIGKILL"
    wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition (notes $(rec -c .notes))"
fi

TEST "guardian and controller SIGKILLed, a member whose main thread called pthread_exit: sweep kills it"
fx thread-leader
tg_start --kill-after 1s -- "${FX[@]}"
if wait_ready 20 && guardian_of_run; then
    kill_guardian_and_controller
    expect_exit 137
    expect_all_members_alive "after the controller and its guardian were killed"
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
    wait_members_gone 5 "members after sweep"
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition (notes $(rec -c .notes))"
fi

# sched_of PID: SCHED = "POLICY RT_PRIORITY" of PID (/proc/PID/stat fields 41 and 40; SCHED_RR is 2)
sched_of() {
    local line rest
    local -a f=()
    line=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    rest=${line##*) }
    read -r -a f <<<"$rest"
    ((${#f[@]} >= 39)) || return 1
    SCHED="${f[38]} ${f[37]}"
}
guardian_ahead() { sched_of "$GUARDIAN_PID" && [[ $SCHED == "2 1" ]]; }

# The guardian outruns the tree it may have to take down (DESIGN.md [guardian]): as root it runs at
# real-time round-robin priority 1 from its start, as the controller does from spawn. A tree that
# keeps every CPU busy (evidence_bomb) would otherwise leave it a sliver of CPU when it must act.
TEST "as root, the guardian runs ahead of the run's tree: real-time round-robin, priority 1"
if (($(id -u) != 0)); then
    skip_test "real-time priority is root's to take"
else
    fx grandchild
    tg_start --timeout 1h -- "${FX[@]}"
    if wait_ready 20 && { guardian_of_run || fail "treeguard -v named no guardian pid"; }; then
        wait_for "$LOAD_MARGIN_S" "the guardian at real-time priority" guardian_ahead ||
            fail "the guardian's policy and real-time priority: '$SCHED' (SCHED_RR priority 1 is '2 1')"
        kill -ALRM "$TG_PID" # the deadline, now
        tg_wait 60
        expect_exit 124
    fi
fi

TEST "a member in uninterruptible sleep (vfork parent, D): the controller's takedown stays cheap"
fx vfork-parent
tg_start --timeout 1s --kill-after 200ms -- "${FX[@]}"
if wait_ready 20; then
    track_cpu 60 "$TG_PID" "$TG_START" treeguard
    ((CPU_SEEN_MS < CPU_LIMIT_MS)) || fail "treeguard used at least ${CPU_SEEN_MS}ms of CPU (limit ${CPU_LIMIT_MS}ms): a spin"
    note "treeguard used at least ${CPU_SEEN_MS}ms of CPU in the ${LIVED_MS}ms it ran after ready"
    tg_wait 60
    expect_exit 124
    expect_elapsed_below $((1000 + 200 + 10000)) "deadline 1s + --kill-after 200ms + load margin"
fi

# The guardian drains first and waits the run's grace (10 s, said here) for members that ignore the
# drain's TERM and never die of it: that wait, as long as the kill after it, must not spin.
TEST "controller SIGKILLed, a member in uninterruptible sleep (vfork parent, D): the guardian's takedown stays cheap"
fx vfork-parent
tg_start --kill-after 10s -- "${FX[@]}"
if wait_ready 20 && guardian_of_run; then
    [[ $BOUNDARY == cgroup ]] || guardian_walked
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    track_cpu $((GUARDIAN_TAKEDOWN_S + 10 + LOAD_MARGIN_S)) "$GUARDIAN_PID" "$GUARDIAN_START" "the guardian (grace 10s)"
    ((CPU_SEEN_MS < CPU_LIMIT_MS)) || fail "the guardian used at least ${CPU_SEEN_MS}ms of CPU (limit ${CPU_LIMIT_MS}ms): a spin"
    note "the guardian used at least ${CPU_SEEN_MS}ms of CPU; it lived ${LIVED_MS}ms after treeguard was reaped"
    wait_members_gone 5 "members after the guardian's takedown"
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition (notes $(rec -c .notes))"
fi

if [[ $BOUNDARY == process-group ]]; then
    TEST "a stranger that joins COMMAND's process group is never stopped nor killed by the forced kill"
    fx --ignore-term sleep
    tg_start --timeout 1s --kill-after 200ms -- "${FX[@]}"
    if wait_ready 20; then
        read -r cmd_pid _ <"$PIDFILE"
        if start_victim join-pgid "$cmd_pid"; then
            proc_stat "$VICTIM_PID"
            expect_eq "$PS_PGID" "$cmd_pid" "the stranger's process group"
            tg_wait 60
            expect_exit 124
            expect_victim_alive "after the run's forced kill"
            proc_stat "$VICTIM_PID" && [[ $PS_STATE == T ]] && fail "the stranger was stopped (state T)"
        else
            tg_wait 60
        fi
        kill_victims
    fi

    TEST "controller SIGKILLed, an escapee without the run's marker that only the guardian saw: taken down"
    # env -u TREEGUARD_RUNS: neither COMMAND nor its double-forked daemon carries the marker; the
    # record names COMMAND only; the daemon's parent has exited (after the controller's death it is
    # the reaper's child, so not the run's by descent either): it is the run's only because the
    # guardian's walk saw it
    tg_start -- env -u TREEGUARD_RUNS "$TG_FIXTURE" daemon
    if wait_ready 20 && guardian_of_run && guardian_walked; then
        kill -KILL "$TG_PID"
        tg_wait 10
        expect_exit 137
        wait_members_gone 5 "members after the controller's SIGKILL" && note "members gone ${GONE_MS}ms after SIGKILL"
        wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
        the_record && expect_eq "$(rec .disposition)" pass "the record's disposition (notes $(rec -c .notes))"
    fi
fi
