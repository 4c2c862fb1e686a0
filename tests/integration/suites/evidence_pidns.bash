# evidence_pidns (DESIGN.md [gate]): a record names its controller's pid namespace by the
# namespace's inode AND its init's start time, because inode numbers are handed on: four `unshare
# --pid` in a row gave ...178, ...179, ...180, ...178, and a record of a dead namespace was then
# judged by a later, unrelated one (a spurious 121). A record of a namespace that is gone can be
# settled:
#  - a stale record whose inode is this namespace's now, under another init, is of a namespace that
#    is gone: it neither blocks nor has its pids looked up; the next launch settles it;
#  - a run whose namespace died with it (its init SIGKILLed): from the initial namespace, which sees
#    every process, status says so and sweep closes the record as pass; from any other namespace,
#    where that cannot be proven, sweep leaves it and resolve closes it on a person's word.
# Runs in the host's namespace (evidence.pidns.*) and inside one of its own (integration.pidns.*).

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
(($(id -u) == 0)) || skip_suite "pid namespaces are made with unshare --pid: needs root"
unshare --pid --fork --mount-proc true 2>/dev/null || skip_suite "unshare --pid --fork --mount-proc is not allowed here"

OWN_NS=$(stat -L -c %i /proc/self/ns/pid)
OWN_INIT=$(start_of 1)
# the initial pid namespace (the kernel's PROC_PID_INIT_INO) sees every process of the host
INITIAL_NS=4026531836

TEST "a stale record whose inode is this namespace's under another init: settled, not judged here"
# The record names a dead controller, and COMMAND's group as the group of a live process of this
# test's own: judged as this namespace's, that group "cannot be proven empty" (121).
make_dead_pid
if start_victim setpgid; then
    run=$(new_run_id "$DEAD_PID")
    write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" process-group "pgid $VICTIM_PID" \
        "$VICTIM_PID" "[{\"pid\": $DEAD_PID, \"start_time\": $DEAD_START, \"escaped\": false, \"leads\": \"\"}]"
    jq --argjson ns "$OWN_NS" --argjson init "$((OWN_INIT + 1))" '. + {pid_ns: $ns, pid_ns_init: $init}' \
        "$STATE/$run.json" >"$T/stale.json" && cat "$T/stale.json" >"$STATE/$run.json"
    tg_cmd status status --state-dir "$STATE"
    grep -q "$run  pending  controller namespace-gone" "$T/status.out" ||
        fail "status does not say the record's namespace is gone: $(cmd_excerpt status)"
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the launch after the stale record did not run its COMMAND"
    RECORD=$STATE/finished/$run.json
    if [[ -f $RECORD ]]; then
        expect_eq "$(rec .disposition)" pass "the stale record's disposition once settled"
        rec '.notes[]' | grep -q 'pid namespace' || fail "the settled record does not say why: $(rec -c .notes)"
    else
        fail "the stale record was not settled (open records: $(ls "$STATE"))"
    fi
    expect_victim_alive "after the stale record was settled"
    kill_victims
fi

# ns_tg_start ARGS...: treeguard run ARGS as PID 1 of a pid namespace of its own (TG_PID: unshare)
ns_tg_start() {
    TG_WRAP=(unshare --pid --fork --mount-proc)
    tg_start "$@"
    TG_WRAP=()
}
# ns_init: NS_INIT = the namespace's init (treeguard, the child of unshare) as this namespace sees it
ns_init() {
    local children
    children=$(cat "/proc/$TG_PID/task/$TG_PID/children" 2>/dev/null)
    NS_INIT=${children%% *}
    [[ $NS_INIT =~ ^[0-9]+$ ]]
}
no_token_process() { token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0)); }

TEST "a run whose pid namespace died with it: status and sweep settle it where its end can be proven"
ns_tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20 && the_record && wait_for 5 "the namespace's init" ns_init; then
    expect_eq "$(rec .pid_ns_init)" "$(start_of "$NS_INIT")" "the record's pid_ns_init (its init's start)"
    kill -KILL "$NS_INIT" # the kernel kills every process of the namespace with it
    tg_wait 10
    wait_for 10 "every process of the dead namespace to go" no_token_process
    the_record && expect_eq "$(rec .disposition)" pending "the record's disposition once its namespace died"
    tg_cmd status status --state-dir "$STATE"
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
    if [[ $OWN_NS == "$INITIAL_NS" ]]; then
        grep -q "controller namespace-gone" "$T/status.out" ||
            fail "status does not say the run's namespace is gone: $(cmd_excerpt status)"
        grep -q "record closed" "$T/sweep.out" || fail "sweep did not close the record: $(cmd_excerpt sweep)"
        the_record && expect_eq "$(rec .disposition)" pass "the record's disposition after sweep"
    else
        # not every process is in sight from here: the namespace's end cannot be proven
        grep -q "controller other-namespace" "$T/status.out" ||
            fail "status does not report the run as other-namespace: $(cmd_excerpt status)"
        grep -q "cannot be judged from here" "$T/sweep.out" || fail "sweep did not leave the run alone: $(cmd_excerpt sweep)"
        the_record && expect_eq "$(rec .disposition)" pending "the record's disposition after sweep"
    fi
    tg_run -- true
    expect_exit 0
fi

TEST "a run whose pid namespace died with it: resolve closes its record, from any namespace"
ns_tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20 && the_record && wait_for 5 "the namespace's init" ns_init; then
    kill -KILL "$NS_INIT"
    tg_wait 10
    wait_for 10 "every process of the dead namespace to go" no_token_process
    tg_cmd resolve resolve --state-dir "$STATE" "$RUN_ID" --why "its pid namespace is gone"
    expect_eq "$CMD_RC" 0 "resolve exit ($(cmd_excerpt resolve))"
    the_record && expect_eq "$(rec .resolution.why)" "its pid namespace is gone" "the record's resolution"
fi

# Time namespaces (DESIGN.md [identity]): /proc/PID/stat's start time is counted in the reader's
# time namespace (its boottime offset added), so a run recorded from inside `unshare --time
# --boottime` named its controller by start times nobody outside it sees. Identities must compare
# across time namespaces, both ways. A reader inside the namespace sees start times shifted by the
# offset: START_IN_NS, from there, is one of them.
TIMENS=(unshare --time --boottime 1000000 --fork)
timens_ok() { "${TIMENS[@]}" true 2>/dev/null; }
# from_time_ns: the fixture logged its start times as seen inside the time namespace; rewrite
# $PIDFILE's as the host sees them (the offset is whole seconds), so the survivor checks hold
from_time_ns() {
    local shift=$((1000000 * $(getconf CLK_TCK))) a b rest
    while read -r a b rest; do
        if [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]]; then
            echo "$a $((b - shift))"
        else
            echo "$a${b:+ $b}${rest:+ $rest}"
        fi
    done <"$PIDFILE" >"$PIDFILE.host"
    cat "$PIDFILE.host" >"$PIDFILE"
}
# the_run_record RUN: RECORD = the run's record, open or finished
the_run_record() {
    RECORD=$STATE/$1.json
    [[ -f $RECORD ]] || RECORD=$STATE/finished/$1.json
    [[ -f $RECORD ]] || { fail "no record of run $1"; return 1; }
}

TEST "a run inside a time namespace: the host's launches leave it running, and its guardian takes it down"
if ! timens_ok; then
    skip_test "unshare --time --boottime is not allowed here (no time namespaces in this kernel, or no CAP_SYS_ADMIN)"
else
    in_ns=$("${TIMENS[@]}" awk '{print $22}' /proc/self/stat)
    ((in_ns > $(awk '{print $22}' /proc/self/stat) + 1000000 * $(getconf CLK_TCK) - 1000)) ||
        fail "the time namespace's start times are not shifted ($in_ns): nothing to test"
    TG_WRAP=("${TIMENS[@]}")
    tg_start -- "$TG_FIXTURE" setsid
    TG_WRAP=()
    if wait_ready 20 && from_time_ns && the_record "$STATE"; then
        run=$RUN_ID ctl=$(rec .controller.pid)
        read -r cmd_pid cmd_start <"$PIDFILE"
        expect_eq "$(start_of "$cmd_pid")" "$cmd_start" "COMMAND's start time, from the time namespace's"
        expect_eq "$(rec '.members[0].start_time')" "$cmd_start" "COMMAND's recorded start time" 
        expect_eq "$(rec .controller.start_time)" "$(start_of "$ctl")" \
            "the controller's recorded start time, as the host sees it"
        tg_cmd host run --state-dir "$STATE" -- true
        expect_eq "$CMD_RC" 0 "a host launch beside it ($(cmd_excerpt host))"
        the_run_record "$run" && expect_eq "$(rec .disposition)" pending \
            "the live run's record after a host launch (notes $(rec -c .notes))"
        tg_cmd status status --state-dir "$STATE" "$run"
        grep -q 'namespace' "$T/status.out" && fail "status judges the live run by its namespace: $(cmd_excerpt status)"
        expect_all_members_alive "after a host launch"
        # its guardian, in the time namespace too, judges by the same identities
        kill -KILL "$ctl"
        tg_wait 10
        wait_members_gone 5 "the run's members after its controller was SIGKILLed"
        wait_for 10 "the guardian to settle the record" eval 'the_run_record $run && [[ $(rec .disposition) != pending ]]'
        the_run_record "$run" && expect_eq "$(rec .disposition)" pass "the record after the guardian (notes $(rec -c .notes))"
    fi
fi

TEST "a run on the host: launches inside a time namespace leave it running, and sweep from there takes it down"
if ! timens_ok; then
    skip_test "unshare --time --boottime is not allowed here (no time namespaces in this kernel, or no CAP_SYS_ADMIN)"
else
    tg_start -- "$TG_FIXTURE" setsid
    if wait_ready 20 && the_record "$STATE" && guardian_of_run; then
        run=$RUN_ID
        TG_PREFIX=("${TIMENS[@]}")
        tg_cmd inner run --state-dir "$STATE" -- true
        expect_eq "$CMD_RC" 0 "a launch inside a time namespace beside it ($(cmd_excerpt inner))"
        the_run_record "$run" && expect_eq "$(rec .disposition)" pending \
            "the live run's record after that launch (notes $(rec -c .notes))"
        expect_all_members_alive "after a launch inside a time namespace"
        TG_PREFIX=()
        kill_guardian_and_controller
        expect_exit 137
        TG_PREFIX=("${TIMENS[@]}")
        tg_cmd sweep sweep --state-dir "$STATE" "$run"
        TG_PREFIX=()
        expect_eq "$CMD_RC" 0 "sweep from inside a time namespace ($(cmd_excerpt sweep))"
        wait_members_gone 5 "the run's members after sweep"
        the_run_record "$run" && expect_eq "$(rec .disposition)" pass "the record after sweep (notes $(rec -c .notes))"
    fi
fi
