# evidence_takedown (issue 6): the one takedown engine, as the controller, the guardian and `sweep`
# use it, attacked where the first after-death path broke:
#  - pid reuse: a stranger's session whose id is a dead member's pid is never killed, by the
#    guardian or by sweep (the member was seen to make that session, then died);
#  - the guardian and sweep withhold their forced kill when their authority cannot be made durable
#    (EROFS), and sweep takes the tree down once the fault is lifted;
#  - 300 treeguards SIGKILLed in their first milliseconds leave no leaf cgroup and no open record
#    once their guardians and one sweep are done;
#  - a 20,000-member tree is taken down at its deadline (exit 124) with a record under 1 MiB;
#  - an unbounded fork bomb is contained within 5 s of its deadline (inside a pids.max cgroup of
#    this test's own, so it cannot take the machine down; skipped where the host has none).

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
(($(id -u) == 0)) || skip_suite "the takedown suite steers pids and mounts file systems: needs root"

# ---------------------------------------------------------------- helpers
# leader_line: LEADER = the pid COMMAND printed as "leader N" (the member that made a session)
leader_line() {
    local line
    LEADER=""
    while IFS= read -r line; do
        [[ $line =~ ^leader\ ([0-9]+)$ ]] && LEADER=${BASH_REMATCH[1]}
    done <"$T/tg.out"
    [[ -n $LEADER ]]
}
# COMMAND for the pid-reuse tests: a member that makes its own session, says its pid, lives long
# enough to be seen (walks are at most 100 ms apart) and dies; then a fixture that sleeps
reuse_command() {
    REUSE=(sh -c 'setsid sh -c "echo leader \$\$; exec sleep 0.4"; exec "$0" sleep' "$TG_FIXTURE")
}
# start_bystander PID: a process of this test's own (not treeguard's) in a session whose id is PID
start_bystander() {
    local pf=$T/victim.pids line
    : >"$pf"
    TG_PIDFILE=$pf "$TG_FIXTURE" session-at "$1" </dev/null >/dev/null 2>&1 &
    record_started "$!"
    disown "$!"
    VICTIM_FILE=$pf
    wait_for 20 "the bystander session" eval '[[ $(grep -c . "$VICTIM_FILE") -ge 2 ]] || ! kill -0 '"$!"' 2>/dev/null' || return 1
    line=$(sed -n 2p "$pf")
    [[ $line =~ ^[0-9]+\ [0-9]+$ ]] || { note "could not get pid $1 for the bystander's session (host busy)"; return 1; }
    VICTIM_PID=${line%% *} VICTIM_START=${line#* }
    proc_stat "$VICTIM_PID"
    expect_eq "$PS_SID" "$1" "the bystander's session id"
}
# spin_us N: let N microseconds pass (a busy loop: the delay before a SIGKILL, not a wait)
spin_us() {
    local t0=${EPOCHREALTIME/[.,]/}
    while ((${EPOCHREALTIME/[.,]/} - t0 < $1)); do :; done
}
# all_records: RECORDS = every record file of the state directory (open and finished ones)
all_records() { mapfile -t RECORDS < <(find "$STATE" -name '*.json' -type f 2>/dev/null); }

# pids_cgroup MAX: PIDS_CG = a pids cgroup of this test's own with pids.max MAX (v1 pids hierarchy
# of a hybrid host, or v2 where the pids controller is enabled for our parent); 1 if none
PIDS_CGS=()
PIDS_WHY=""
pids_cgroup() {
    local line pre post fstype opts mnt
    local -a f
    PIDS_CG=""
    while IFS= read -r line; do
        pre=${line%% - *} post=${line#* - }
        fstype=${post%% *} opts=${post##* }
        read -r -a f <<<"$pre"
        mnt=$(printf '%b' "${f[4]//\\/\\0}")
        if [[ $fstype == cgroup && ,$opts, == *,pids,* ]]; then
            PIDS_CG=$mnt/tg-takedown-$RUNID-$TEST_NO
            break
        fi
    done </proc/self/mountinfo
    if [[ -z $PIDS_CG ]]; then
        local saved_mount=$CG_MOUNT
        if [[ -n $CG_SUITE ]]; then
            grep -qw pids "$CG_SUITE/cgroup.controllers" 2>/dev/null && PIDS_CG=$CG_SUITE/pids-$TEST_NO
        elif find_cgroup2_mount && grep -qw pids "$CG_MOUNT/cgroup.subtree_control" 2>/dev/null; then
            # the process-group arm on a cgroup2 host: a cgroup of this harness's own under the
            # root, where pids is enabled (the name the cgroup arm's cleanup of dead harnesses knows)
            PIDS_CG=$CG_MOUNT/tg-it-$PIDNS-$RUNID-pids-$TEST_NO
        fi
        CG_MOUNT=$saved_mount
    fi
    if [[ -z $PIDS_CG ]]; then
        PIDS_WHY="no v1 pids hierarchy, and pids is not enabled in a cgroup2 parent of ours"
        return 1
    fi
    if ! { mkdir "$PIDS_CG" && echo "$1" >"$PIDS_CG/pids.max"; }; then
        PIDS_WHY="could not create $PIDS_CG with pids.max $1"
        rmdir "$PIDS_CG" 2>/dev/null
        PIDS_CG=""
        return 1
    fi
    PIDS_CGS+=("$PIDS_CG")
}
# pids_cgroup_empty: no process is left in PIDS_CG
pids_cgroup_empty() { [[ -z $(cat "$PIDS_CG/cgroup.procs" 2>/dev/null) ]]; }
pids_cgroup_remove() {
    wait_for 10 "the pids cgroup to empty" pids_cgroup_empty || fail "processes left in $PIDS_CG: $(head -c 200 "$PIDS_CG/cgroup.procs")"
    rmdir "$PIDS_CG" 2>/dev/null || fail "could not remove $PIDS_CG"
}
# in_pids_cgroup: treeguard starts inside PIDS_CG (so does everything it starts)
in_pids_cgroup() { TG_PREFIX=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$PIDS_CG"); }

# ---------------------------------------------------------------- pid reuse
reuse_case() { # reuse_case guardian|sweep
    TEST "pid reuse: a stranger's session with a dead member's pid as its id survives the $1"
    reuse_command
    tg_start -- "${REUSE[@]}"
    wait_ready 20 || return
    wait_for 10 "COMMAND to print its leader" leader_line || return
    guardian_of_run || { fail "no guardian line"; return; }
    wait_for 10 "the leader $LEADER to exit" eval '! running $LEADER' || return
    if ! start_bystander "$LEADER"; then
        kill -KILL "$TG_PID"; tg_wait 10; kill_victims; return
    fi
    if [[ $1 == sweep ]]; then
        kill -KILL "$GUARDIAN_PID"
        wait_for 5 "the guardian to die" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    fi
    kill -KILL "$TG_PID"
    tg_wait 10
    if [[ $1 == guardian ]]; then
        wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    else
        tg_cmd sweep sweep --state-dir "$STATE"
        expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
    fi
    wait_members_gone 3 "the run's members"
    expect_victim_alive "after the $1 took the run down"
    if the_record; then
        expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
    fi
    kill_victims
}
reuse_case guardian
reuse_case sweep

# ---------------------------------------------------------------- authority faults after death
TEST "EROFS: the guardian withholds its kill; the tree lives; sweep takes it down once writable"
fx --ignore-term ignore-term
if fault_setup erofs && tg_start -- "${FX[@]}" && wait_ready 20 && guardian_of_run; then
    fault_inject erofs
    kill -KILL "$TG_PID"
    tg_wait 10
    wait_for 10 "the guardian to give up" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    expect_all_members_alive "after the guardian found the state directory read-only"
    the_record && expect_eq "$(rec .disposition)" pending "record disposition while read-only"
    tg_cmd sweep-ro sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 122 "sweep exit while read-only ($(cmd_excerpt sweep-ro))"
    expect_all_members_alive "after sweep found the state directory read-only"
    fault_lift erofs
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "sweep exit once writable ($(cmd_excerpt sweep))"
    wait_members_gone 3 "after sweep"
    the_record && expect_eq "$(rec .disposition)" pass "record disposition after sweep"
fi
ev_cleanup

TEST "EROFS: sweep withholds its kill (guardian dead too); exit 122; the tree lives until writable"
fx --ignore-term ignore-term
if fault_setup erofs && tg_start -- "${FX[@]}" && wait_ready 20 && guardian_of_run; then
    kill_guardian_and_controller
    fault_inject erofs
    tg_cmd sweep-ro sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 122 "sweep exit while read-only ($(cmd_excerpt sweep-ro))"
    grep -q "forced kill withheld" "$T/sweep-ro.err" || fail "sweep did not say the kill was withheld: $(cmd_excerpt sweep-ro)"
    expect_all_members_alive "after sweep found the state directory read-only"
    fault_lift erofs
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "sweep exit once writable ($(cmd_excerpt sweep))"
    wait_members_gone 3 "after sweep"
fi
ev_cleanup

# ---------------------------------------------------------------- early deaths
TEST "300 treeguards SIGKILLed in their first milliseconds: no leaf and no open record after sweep"
started=0
for ((i = 0; i < 300; i++)); do
    TG_TOKEN=$TOKEN "$TREEGUARD" run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" -- true </dev/null >/dev/null 2>&1 &
    pid=$!
    spin_us $(((i % 21) * 200)) # 0 to 4 ms
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    started=$((started + 1))
done
# the guardians of the killed runs finish their work and leave
wait_for 30 "every guardian to leave" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))'
tg_cmd sweep sweep --state-dir "$STATE"
expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
if [[ $BOUNDARY == cgroup ]]; then
    cg_children "$CG_TEST"
    ((${#CG_CHILDREN[@]} == 0)) || fail "${#CG_CHILDREN[@]} leaf cgroup(s) left after $started early SIGKILLs and sweep"
fi
all_records
open=0
for r in "${RECORDS[@]}"; do
    [[ $(jq -r .disposition "$r") == pending ]] && open=$((open + 1))
done
((open == 0)) || fail "$open of ${#RECORDS[@]} record(s) still pending after sweep"
note "$started runs killed at 0-4 ms; ${#RECORDS[@]} record(s) kept, $open pending"
tg_run -- true
expect_exit 0

# ---------------------------------------------------------------- a big tree
TEST "a 20,000-member tree that ignores TERM: taken down at its deadline, exit 124, record < 1 MiB"
if pids_cgroup 20200; then
    in_pids_cgroup
    fx --ignore-term fanout 20000
    tg_start --keep-records --timeout 40s --kill-after 1s -- "${FX[@]}"
    if wait_ready 60; then
        tg_wait 120
        expect_exit 124
        all_records
        if ((${#RECORDS[@]} == 1)); then
            RECORD=${RECORDS[0]}
            size=$(stat -c %s "$RECORD")
            ((size < 1048576)) || fail "record is $size bytes, not under 1 MiB"
            (($(rec '.authority|length') >= 1)) || fail "no authority entry in the record"
            expect_eq "$(rec .disposition)" pass "record disposition"
            note "record ${size} bytes, $(rec '.members|length') members named, notes '$(rec '.notes|join("; ")')'; treeguard took ${TG_ELAPSED_MS}ms"
        else
            fail "expected one record, found ${#RECORDS[@]}"
        fi
    else
        tg_wait 120
    fi
    TG_PREFIX=()
    pids_cgroup_remove
else
    skip_test "no pids controller to bound the tree with ($PIDS_WHY)"
fi

TEST "an unbounded fork bomb (in a pids.max cgroup): contained within 5 s of its deadline"
if pids_cgroup 1500; then
    in_pids_cgroup
    fx --ignore-term bomb
    tg_start --timeout 2s --kill-after 500ms -- "${FX[@]}"
    wait_ready 20
    tg_wait 60
    expect_exit 124
    expect_elapsed_below 7000 "deadline 2s + 5s"
    note "$(member_count) bomb processes logged; treeguard exited ${TG_ELAPSED_MS}ms after start"
    TG_PREFIX=()
    pids_cgroup_remove
else
    skip_test "no pids controller to bound the bomb with ($PIDS_WHY)"
fi
