# evidence_pidns (issue 15 item 5): a record names its controller's pid namespace by the namespace's
# inode AND its init's start time, because inode numbers are handed on: four `unshare --pid` in a
# row gave ...178, ...179, ...180, ...178, and a record of a dead namespace was then judged by a
# later, unrelated one (a spurious 121). A record of a namespace that is gone can be settled:
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
