# evidence_reuse (DESIGN.md [identity], [ownership]): a recycled pid is never the run's. A member
# made a session of its own and died; a stranger (a bystander of this test's own) then gets the
# member's pid and makes a session with it, so the session id equals the dead member's pid. The
# guardian (which saw the member) and sweep (whose record names it) must take the run down and leave
# the stranger alone. Getting the pid needs root (ns_last_pid): where the bystander cannot get it,
# the test is skipped (skip_test: a ctest skip unless something failed), never passed.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
(($(id -u) == 0)) || skip_suite "steering a pid to the bystander (ns_last_pid) needs root"
[[ -w /proc/sys/kernel/ns_last_pid ]] || skip_suite "/proc/sys/kernel/ns_last_pid is not writable here"

# start_bystander MODE PID START: a process of this test's own (not treeguard's) that took PID again
# after the member that held it (started at clock tick START) died, as the fixture's MODE makes it:
#  session-at: a session whose id is PID (VICTIM_PID/VICTIM_START: the session's process; its
#    leader, which had PID, has exited);
#  parent-at: PID held by a process that lives on as the parent of a child of its own
#    (PARENT_PID/PARENT_START: the process holding PID; VICTIM_PID/VICTIM_START: its child). A
#    child is the run's by descent only while its parent is the run's: a recorded member's pid,
#    once the member died, is nobody's.
# Returns 1 when the bystander could not get PID.
start_bystander() {
    local mode=$1 pf=$T/victim.pids line pid
    a_tick_after "$3" || return 1
    : >"$pf"
    TG_PIDFILE=$pf "$TG_FIXTURE" "$mode" "$2" </dev/null >/dev/null 2>&1 &
    pid=$!
    record_started "$pid"
    disown "$pid"
    VICTIM_FILE=$pf
    wait_for 20 "the bystander ($mode $2)" eval 'has_line "$VICTIM_FILE" ready || ! kill -0 '"$pid"' 2>/dev/null' || return 1
    has_line "$pf" ready || return 1
    line=$(sed -n 2p "$pf")
    [[ $line =~ ^[0-9]+\ [0-9]+$ ]] || return 1
    VICTIM_PID=${line%% *} VICTIM_START=${line#* }
    if [[ $mode == session-at ]]; then
        proc_stat "$VICTIM_PID"
        expect_eq "$PS_SID" "$2" "the bystander's session id"
        return 0
    fi
    PARENT_PID=$VICTIM_PID PARENT_START=$VICTIM_START
    expect_eq "$PARENT_PID" "$2" "the bystander parent's pid"
    line=$(sed -n 3p "$pf")
    [[ $line =~ ^[0-9]+\ [0-9]+$ ]] || return 1
    VICTIM_PID=${line%% *} VICTIM_START=${line#* }
    proc_stat "$VICTIM_PID"
    expect_eq "$PS_PPID" "$2" "the bystander child's parent"
}
# expect_bystander_alive MODE WHEN: the bystander start_bystander MODE made is alive, all of it
expect_bystander_alive() {
    expect_victim_alive "$2"
    [[ $1 == parent-at ]] || return 0
    alive_as "$PARENT_PID" "$PARENT_START" || fail "$2: our own process $PARENT_PID (holding a dead member's pid) was killed"
}

# guardian_spares_bystander MODE PID START: the run started by tg_start had a member PID (started
# at START) that the guardian saw and that is now dead and reaped; a bystander takes PID again
# (start_bystander MODE), the controller is SIGKILLed: the guardian takes the run down and leaves
# the bystander alive
guardian_spares_bystander() {
    if start_bystander "$1" "$2" "$3"; then
        kill -KILL "$TG_PID"
        tg_wait 10
        expect_exit 137
        wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
        wait_members_gone 5 "the run's members"
        expect_bystander_alive "$1" "after the guardian took the run down"
        the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
        kill_victims
    else
        kill -KILL "$TG_PID"
        tg_wait 10
        kill_victims
        skip_test "the bystander could not get pid $2 (the host forks too much)"
    fi
}

# sweep_spares_bystander MODE ESCAPED LEADS: the record as a controller or guardian writes it at its
# authority: COMMAND (alive, leading its own session and group) and a dead member (its `escaped` and
# `leads` as given); the controller and guardian dead too. A bystander takes the dead member's pid
# (start_bystander MODE): sweep takes the run down and leaves the bystander alive.
sweep_spares_bystander() {
    local mode=$1 ctl_pid ctl_start cmd_pid cmd_start member member_start run
    # the controller first: it started before COMMAND, as every real one did (a record naming a
    # member older than its controller is untrusted)
    make_dead_pid
    ctl_pid=$DEAD_PID ctl_start=$DEAD_START
    # our "COMMAND": leads its own session and group (setsid execs it in place); in $PIDFILE, so
    # the survivor check covers it: it must die of sweep
    TG_TOKEN=$TOKEN TG_PIDFILE=$PIDFILE setsid "$TG_FIXTURE" sleep </dev/null >/dev/null 2>&1 &
    record_started "$!"
    disown "$!"
    wait_ready 20 || return
    read -r cmd_pid cmd_start <"$PIDFILE"
    # (the controller's pid was taken first: the member's pid is taken after COMMAND's, so it is
    # not the controller's: in the same clock tick it would be the controller by pid and start
    # time, alive, and sweep rightly leaves such a run alone)
    make_dead_pid
    member=$DEAD_PID member_start=$DEAD_START
    run=$(new_run_id "$ctl_pid")
    if ! start_bystander "$mode" "$member" "$member_start"; then
        kill_survivors "$PIDFILE" "no-token"
        kill_victims
        skip_test "the bystander could not get pid $member (the host forks too much)"
        return
    fi
    write_record "$STATE/$run.json" "$run" "$ctl_pid" "$ctl_start" process-group "pgid $cmd_pid" "$cmd_pid" \
        "[{\"pid\":$cmd_pid,\"start_time\":$cmd_start,\"escaped\":false,\"leads\":\"group\"},
          {\"pid\":$member,\"start_time\":$member_start,\"escaped\":$2,\"leads\":\"$3\"}]"
    tg_cmd sweep sweep --state-dir "$STATE" "$run"
    expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
    wait_members_gone 5 "the run's COMMAND after sweep"
    expect_bystander_alive "$mode" "after sweep took the run down"
    RECORD=$(find "$STATE" -name "$run.json" | head -1)
    [[ -n $RECORD ]] && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
    kill_victims
}

TEST "pid reuse: a stranger's session whose id is a dead member's pid survives the guardian"
# COMMAND: a member that makes a session of its own (setsid), double-forked so that treeguard, the
# subreaper, reaps it (its pid is free again once it exits), and lives until released; then a
# fixture that sleeps
release=$T/release
tg_start -- sh -c '(TG_PIDFILE=$2 setsid "$0" --release "$1" sleep &); exec "$0" sleep' \
    "$TG_FIXTURE" "$release" "$T/leader.pids"
if wait_ready 20 && wait_for 20 "the session leader" has_line "$T/leader.pids" ready && guardian_of_run; then
    read -r leader leader_start <"$T/leader.pids"
    proc_stat "$leader"
    expect_eq "$PS_SID" "$leader" "the member's session"
    [[ $BOUNDARY == cgroup ]] || guardian_walked # the guardian has seen the member lead its session
    : >"$release"
    wait_for 10 "the member $leader to exit and be reaped" eval '! proc_stat $leader || [[ $PS_START != "$leader_start" ]]'
    guardian_spares_bystander session-at "$leader" "$leader_start"
fi

TEST "pid reuse: a stranger's session whose id is a dead member's pid survives sweep"
# the dead member led a session; the bystander's session has its pid as its id
sweep_spares_bystander session-at true session

TEST "pid reuse: a stranger's child whose parent holds a dead member's pid survives the guardian"
# COMMAND: a member in COMMAND's own group and session, double-forked so that treeguard, the
# subreaper, reaps it (its pid is free again once it exits), and lives until released
release=$T/release
tg_start -- sh -c '(TG_PIDFILE=$2 "$0" --release "$1" sleep &); exec "$0" sleep' \
    "$TG_FIXTURE" "$release" "$T/member.pids"
if wait_ready 20 && wait_for 20 "the member" has_line "$T/member.pids" ready && guardian_of_run; then
    read -r member member_start <"$T/member.pids"
    [[ $BOUNDARY == cgroup ]] || guardian_walked # the guardian has seen the member
    : >"$release"
    wait_for 10 "the member $member to exit and be reaped" eval '! proc_stat $member || [[ $PS_START != "$member_start" ]]'
    guardian_spares_bystander parent-at "$member" "$member_start"
fi

TEST "pid reuse: a stranger's child whose parent holds a dead member's pid survives sweep"
# the dead member was in COMMAND's group and session; the bystander holding its pid has a child
sweep_spares_bystander parent-at false ""
