# evidence_records (DESIGN.md [records], [ownership]): records never to be trusted or acted on.
#  - a pending record of a dead controller whose boundary.address is a cgroup this test made (not
#    named treeguard-<run_id>) holding a process of this test's (cgroup arm): the record is untrusted
#    (run 125, sweep 125); naming the process group of one (process-group arm): the boundary cannot
#    be proven empty (run 121, sweep 122); `sweep` kills nothing;
#  - a pending record naming a live process of ours with the WRONG start time (a recycled pid) as
#    controller and member: the controller counts as dead, the boundary is not proven empty (run
#    121, sweep 122), and the process is never signalled;
#  - a truncated record: `status` reports it, `run` exits 125 with one line naming the file and
#    starts nothing, `sweep` acts on nothing.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
TG_VERBOSE=0

# gate_and_sweep_spare_victim RUN_EXIT SWEEP_EXIT: the gate refuses with RUN_EXIT and starts
# nothing; sweep exits SWEEP_EXIT and leaves the victim alive
gate_and_sweep_spare_victim() {
    tg_run -- touch "$T/made"
    expect_exit "$1"
    [[ -e $T/made ]] && fail "COMMAND was started"
    expect_victim_alive "after the gated run"
    tg_cmd status status --state-dir "$STATE"
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" "$2" "sweep's exit ($(cmd_excerpt sweep))"
    expect_victim_alive "after sweep (exit $CMD_RC: $(cmd_excerpt sweep))"
}

if [[ $BOUNDARY == cgroup ]]; then
    foreign_cgroup_case() { # foreign_cgroup_case NAME_KIND
        TEST "record whose boundary is a foreign cgroup ($1) holding our process: refused, nothing killed"
        make_dead_pid
        local run addr cg
        run=$(new_run_id "$DEAD_PID")
        case $1 in
            not-treeguard) cg=$CG_TEST/not-ours; addr=$cg ;;
            other-run) cg=$CG_TEST/treeguard-$(new_run_id 1); addr=$cg ;;
            dotdot) cg=$CG_TEST/not-ours; mkdir "$CG_TEST/treeguard-$run"; addr=$CG_TEST/treeguard-$run/../not-ours ;;
        esac
        mkdir "$cg"
        start_victim sleep || return
        echo "$VICTIM_PID" >"$cg/cgroup.procs" || { fail "could not move our process into $cg"; kill_victims; return; }
        write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" cgroup "$addr" null \
            "[{\"pid\":$VICTIM_PID,\"start_time\":$VICTIM_START,\"escaped\":false,\"leads\":\"\"}]"
        # the address is not this run's leaf: the record is untrusted, never acted on
        gate_and_sweep_spare_victim 125 125
        kill_victims
        remove_test_leaves
    }
    foreign_cgroup_case not-treeguard
    foreign_cgroup_case other-run
    foreign_cgroup_case dotdot
else
    TEST "record whose boundary is the process group of a foreign process of ours: refused, nothing killed"
    make_dead_pid
    run=$(new_run_id "$DEAD_PID")
    if start_victim setpgid; then
        write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" process-group "pgid $VICTIM_PID" "$VICTIM_PID" '[]'
        # A group counts as the run's only when its id is a recorded member's pid: with no members
        # the record proves nothing, so the boundary cannot be proven empty and the gate refuses.
        # Nothing of ours may be killed, by the run or by sweep.
        gate_and_sweep_spare_victim 121 122
        kill_victims
    fi
fi

TEST "record naming a member older than its controller (our live process): untrusted, never acted on"
if start_victim setpgid; then
    # the "controller": started after the process the record calls its member, in a later clock
    # tick (in the member's own tick it would not be younger than the member)
    a_tick_after "$VICTIM_START" && make_dead_pid
    run=$(new_run_id "$DEAD_PID")
    write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" process-group "pgid $VICTIM_PID" "$VICTIM_PID" \
        "[{\"pid\":$VICTIM_PID,\"start_time\":$VICTIM_START,\"escaped\":false,\"leads\":\"group\"}]"
    gate_and_sweep_spare_victim 125 125
    grep -q "is before the controller's" "$T/sweep.err" ||
        fail "sweep does not say why the record is untrusted: $(cmd_excerpt sweep)"
    kill_victims
fi

TEST "record naming a recycled pid (our live process, wrong start time): never signalled"
if start_victim setpgid; then
    run=$(new_run_id "$VICTIM_PID")
    # the recorded process started before the one that holds its pid now (as with any recycled
    # pid): nothing of the run can be older than its controller, so only a start time in the past
    # makes our process a candidate at all
    wrong=$((VICTIM_START > 12345 ? VICTIM_START - 12345 : 1))
    write_record "$STATE/$run.json" "$run" "$VICTIM_PID" "$wrong" process-group "pgid $VICTIM_PID" "$VICTIM_PID" \
        "[{\"pid\":$VICTIM_PID,\"start_time\":$wrong,\"escaped\":false,\"leads\":\"\"}]"
    # the record's controller is 'dead' (its start time does not match) and its group not proven
    # empty: refused, and the process is never signalled
    gate_and_sweep_spare_victim 121 122
    kill_victims
fi

# marked_orphan_sweep older|guardian: an orphan of this test's carrying a run's marker, its ancestry
# lost (its parent PID 1, or the recorded reaper: where the marker alone would claim it), and a
# hand-written record of that run killed before COMMAND was spawned (no member: only the marker
# can claim anything). older: the orphan started before the run's controller (DESIGN.md [ownership]:
# nothing of a run is older than its controller); guardian: after it, and the record names it as the
# run's guardian (treeguard's own helpers are never members). Either way it is not the run's: sweep
# finds the run empty, and the orphan alive after it.
marked_orphan_sweep() {
    local role=$1 run line reaper=null guardian=null
    run=$(new_run_id $$)
    if [[ $role == guardian ]]; then
        make_dead_pid
        a_tick_after "$DEAD_START" || return
    fi
    TREEGUARD_RUNS=$run start_victim orphan || return
    # the orphan, reparented once its parent exited: the fixture's third line
    line=$(sed -n 3p "$VICTIM_FILE")
    VICTIM_PID=${line%% *} VICTIM_START=${line#* }
    proc_stat "$VICTIM_PID" || { fail "the orphan $VICTIM_PID is gone"; return; }
    # the fixture's first process, which started it, goes: it carries the marker too, and its
    # parent is this test's shell, PID 1 itself under the pidns arm (where it would look orphaned)
    sed -n 1p "$VICTIM_FILE" >"$T/starter.pids"
    kill_survivors "$T/starter.pids" "no-token-$TOKEN"
    if ((PS_PPID != 1)); then
        # adopted by a subreaper: the record names it as the run's reaper
        reaper="{\"pid\":$PS_PPID,\"start_time\":$(start_of "$PS_PPID")}"
    fi
    if [[ $role == older ]]; then
        a_tick_after "$VICTIM_START" && make_dead_pid || return
    else
        guardian="{\"pid\":$VICTIM_PID,\"start_time\":$VICTIM_START}"
    fi
    write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" process-group "pgid pending" null "[]"
    jq --argjson reaper "$reaper" --argjson guardian "$guardian" '.reaper = $reaper | .guardian = $guardian' \
        "$STATE/$run.json" >"$T/edited.json" && mv "$T/edited.json" "$STATE/$run.json" && chmod 600 "$STATE/$run.json"
    tg_cmd sweep sweep --state-dir "$STATE" "$run"
    expect_eq "$CMD_RC" 0 "sweep's exit ($(cmd_excerpt sweep))"
    grep -q "already empty" "$T/sweep.out" || fail "sweep did not find the run empty: $(cmd_excerpt sweep)"
    expect_victim_alive "after sweep"
}

TEST "an orphan older than its run, carrying the run's marker: never the run's; sweep leaves it alone"
marked_orphan_sweep older
kill_victims

TEST "an orphan the record names as the run's guardian, carrying its marker: a helper; sweep leaves it alone"
marked_orphan_sweep guardian
kill_victims

TEST "truncated record: status reports it, run exits 125 naming the file, nothing started or killed"
start_victim setpgid
tg_cmd keep run "${BOUNDARY_ARGS[@]}" --keep-records --state-dir "$STATE" -- true
# a kept clean record is finished (kept apart, in finished/); cut, it is planted among the open ones
if the_record "$STATE/finished" && mv "$RECORD" "$STATE/" && the_record; then
    head -c $(($(stat -c %s "$RECORD") / 2)) "$RECORD" >"$RECORD.cut" && mv "$RECORD.cut" "$RECORD"
    chmod 600 "$RECORD"
    tg_cmd status status --state-dir "$STATE"
    grep -qF "${RECORD##*/}" "$T/status.out" "$T/status.err" || fail "status does not name ${RECORD##*/} ($(cmd_excerpt status))"
    note "status exit $CMD_RC: $(cmd_excerpt status)"
    tg_run -- touch "$T/made"
    expect_exit 125
    [[ -e $T/made ]] && fail "COMMAND was started"
    expect_eq "$(wc -l <"$T/tg.err")" 1 "stderr lines ($(tg_stderr_excerpt))"
    grep -qF "${RECORD##*/}" "$T/tg.err" || fail "the error does not name the file ${RECORD##*/}"
    tg_cmd sweep sweep --state-dir "$STATE"
    # an untrusted record is bad input: refused, not acted on (125)
    expect_eq "$CMD_RC" 125 "sweep's exit on a truncated record ($(cmd_excerpt sweep))"
    expect_victim_alive "after run and sweep"
    [[ -f $RECORD ]] || fail "the corrupt record was removed (it must be left for a human)"
fi
kill_victims

TEST "a stale record proven empty is settled once: kept among the finished, never read again"
make_dead_pid
run=$(new_run_id "$DEAD_PID")
# a process-group run whose controller (and guardian) died, whose only member is dead too
write_record "$STATE/$run.json" "$run" "$DEAD_PID" "$DEAD_START" process-group "pgid $DEAD_PID" "$DEAD_PID" \
    "[{\"pid\":$DEAD_PID,\"start_time\":$DEAD_START,\"escaped\":false,\"leads\":\"\"}]"
tg_run -- touch "$T/made"
expect_exit 0
[[ -e $T/made ]] || fail "COMMAND was not started"
[[ -e $STATE/$run.json ]] && fail "the stale record is still among the open ones"
if the_record "$STATE/finished"; then
    expect_eq "$RUN_ID" "$run" "the finished record's run"
    expect_eq "$(rec .disposition)" pass "the settled record's disposition"
    rec '.notes[]' | grep -q '^controller lost; settled' || fail "notes $(rec -c .notes) do not say it was settled"
    tg_cmd status status --state-dir "$STATE"
    grep -qF "$run  pass" "$T/status.out" || fail "status does not show the kept record ($(cmd_excerpt status))"
fi

# Records a reboot leaves (DESIGN.md [gate]): another boot id, and the machine's id beside it. The
# host's machine id, when it has one; a time before this boot began (btime of /proc/stat).
HOST_MACHINE_ID=$(machine_id_here)
BEFORE_BOOT_NS=$((($(awk '$1 == "btime" {print $2}' /proc/stat) - 3600) * 1000000000))
OTHER_BOOT_ID=11111111-2222-3333-4444-555555555555
# edit_record FILE JQ_FILTER: rewrite a hand-made record
edit_record() { jq -c "$2" "$1" >"$1.new" && mv "$1.new" "$1" && chmod 600 "$1"; }
# a pending record of another boot naming a live process of this test's own (never to be signalled)
# (MACHINE_ID null: no machine_id field at all, as treeguard wrote records before it had one)
write_other_boot_record() { # write_other_boot_record FILE RUN_ID MACHINE_ID(or null) AT_NS
    write_record "$1" "$2" "$VICTIM_PID" "$VICTIM_START" process-group "pgid $VICTIM_PID" "$VICTIM_PID" \
        "[{\"pid\":$VICTIM_PID,\"start_time\":$VICTIM_START,\"escaped\":false,\"leads\":\"\"}]"
    if [[ $3 == null ]]; then
        edit_record "$1" ".boot_id = \"$OTHER_BOOT_ID\" | del(.machine_id) | .phases[].at = $4"
    else
        edit_record "$1" ".boot_id = \"$OTHER_BOOT_ID\" | .machine_id = $3 | .phases[].at = $4"
    fi
    [[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$1"
}

TEST "a pending run of an earlier boot of this machine ended with it: the next run settles it ('ended by the host's reboot')"
start_victim sleep
run=$(new_run_id "$VICTIM_PID")
if [[ -z $HOST_MACHINE_ID ]]; then
    # nothing proves that the record is this machine's: it blocks, as a record without one does
    write_other_boot_record "$STATE/$run.json" "$run" null "$BEFORE_BOOT_NS"
    tg_run -- touch "$T/made"
    expect_exit 121
    note "this host has no machine id: checked that the record blocks instead"
else
    write_other_boot_record "$STATE/$run.json" "$run" "\"$HOST_MACHINE_ID\"" "$BEFORE_BOOT_NS"
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "COMMAND was not started"
    [[ -e $STATE/$run.json ]] && fail "the record of the earlier boot is still among the open ones"
    if the_record "$STATE/finished"; then
        expect_eq "$(rec .disposition)" pass "the settled record's disposition"
        rec '.notes[]' | grep -q "^ended by the host's reboot" ||
            fail "notes $(rec -c .notes) do not say the reboot ended it"
    fi
    tg_run -- true
    expect_exit 0
    # the run records this machine's id beside the boot id
    tg_run --keep-records -- true
    newest=$(ls "$STATE"/finished/*.json | sort | tail -1)
    expect_eq "$(jq -r .machine_id "$newest")" "$HOST_MACHINE_ID" "machine_id of a new record"
fi
expect_victim_alive "after the run"
kill_victims

TEST "70 stale records (earlier boot): settled 64 per launch, the rest by the next; neither launch blocked"
start_victim sleep
if [[ -z $HOST_MACHINE_ID ]]; then
    skip_test "this host has no /etc/machine-id: records of an earlier boot are not stale here"
else
    for i in $(seq 1 70); do
        run=$(printf '20240101T%02d%02d00-%s-%04x' $((i / 60)) $((i % 60)) "$VICTIM_PID" "$i")
        write_other_boot_record "$STATE/$run.json" "$run" "\"$HOST_MACHINE_ID\"" "$BEFORE_BOOT_NS"
    done
    tg_run -- true
    expect_exit 0
    expect_eq "$(find "$STATE" -maxdepth 1 -name '*.json' | wc -l)" 6 "open records left after one launch"
    expect_eq "$(find "$STATE/finished" -name '*.json' 2>/dev/null | wc -l)" 64 "records settled by one launch"
    tg_run -- true
    expect_exit 0
    expect_eq "$(find "$STATE" -maxdepth 1 -name '*.json' | wc -l)" 0 "open records left after two launches"
fi
expect_victim_alive "after the runs"
kill_victims

TEST "a record of another boot without a machine id cannot be proven this machine's: 121 with a resolve that works pasted"
start_victim sleep
run=$(new_run_id "$VICTIM_PID")
odd_state_dir
write_other_boot_record "$STATE/$run.json" "$run" null "$BEFORE_BOOT_NS"
tg_run -- touch "$T/made"
expect_exit 121
[[ -e $T/made ]] && fail "the refused run started its COMMAND"
advice=$(grep -m1 "^treeguard: dispatch refused: run $run .*; run: treeguard resolve " "$T/tg.err")
if [[ -z $advice ]]; then
    fail "the refusal does not end with a resolve to run (stderr:$(tg_stderr_excerpt))"
else
    paste_advice resolve "$advice"
    expect_eq "$CMD_RC" 0 "the pasted '$(cat "$T/resolve.cmd")' ($(cmd_excerpt resolve))"
    tg_run -- touch "$T/made"
    expect_exit 0
fi
expect_victim_alive "after resolve and the run"
kill_victims

TEST "a pending run recorded on another machine (shared state directory): not judged here, never blocks, never swept from here"
start_victim sleep
run=$(new_run_id "$VICTIM_PID")
write_other_boot_record "$STATE/$run.json" "$run" '"0123456789abcdef0123456789abcdef"' "$(date +%s%N)"
tg_run -- touch "$T/made"
expect_exit 0
[[ -e $T/made ]] || fail "COMMAND was not started"
[[ -e $STATE/$run.json ]] || fail "the other machine's record was settled or removed from here"
tg_cmd status status --state-dir "$STATE"
grep -q "not judged here: recorded on another machine" "$T/status.out" ||
    fail "status does not say the run is another machine's ($(cmd_excerpt status))"
tg_cmd sweep sweep --state-dir "$STATE" "$run"
expect_eq "$CMD_RC" 0 "sweep of the other machine's run ($(cmd_excerpt sweep))"
grep -q "recorded on another machine" "$T/sweep.out" || fail "sweep does not say why it left the run ($(cmd_excerpt sweep))"
[[ -e $STATE/$run.json ]] || fail "sweep removed the other machine's record"
expect_victim_alive "after run, status and sweep"
kill_victims

# A host without a machine id (many chroots and containers; README "Records"). Where this host has
# one, treeguard runs in a private mount namespace with /dev/null bound over both files it reads
# (TG_PREFIX: run, status and sweep alike); where it cannot be hidden, these tests skip.
NO_ID_WHY=""
NO_ID_PREFIX=()
hide_ids='for f in /etc/machine-id /var/lib/dbus/machine-id; do
    if [ -e "$f" ]; then mount --bind /dev/null "$f" || exit 99; fi
done
exec "$@"'
if [[ -n $HOST_MACHINE_ID ]]; then
    if [[ $(id -u) != 0 ]]; then
        NO_ID_WHY="hiding this host's machine id needs root (a private mount namespace)"
    elif ! command -v unshare >/dev/null; then
        NO_ID_WHY="hiding this host's machine id needs unshare"
    else
        NO_ID_PREFIX=(unshare --mount --propagation private sh -c "$hide_ids" hide-machine-id)
        if ! seen=$("${NO_ID_PREFIX[@]}" bash -c "$(declare -f machine_id_here); machine_id_here" 2>&1 </dev/null) ||
            [[ -n $seen ]]; then
            NO_ID_WHY="cannot hide this host's machine id in a private mount namespace: ${seen//$'\n'/ }"
        fi
    fi
fi

TEST "a host without a machine id did not write a record naming one: another machine's, never settled, never blocks"
if [[ -n $NO_ID_WHY ]]; then
    skip_test "$NO_ID_WHY"
else
    TG_PREFIX=("${NO_ID_PREFIX[@]}")
    start_victim sleep
    run=$(new_run_id "$VICTIM_PID")
    # last written before this boot began: were this host that machine, the reboot would settle it
    write_other_boot_record "$STATE/$run.json" "$run" '"0123456789abcdef0123456789abcdef"' "$BEFORE_BOOT_NS"
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "COMMAND was not started"
    [[ -e $STATE/$run.json ]] || fail "the record naming a machine id was settled or removed by a host without one"
    tg_cmd status status --state-dir "$STATE"
    grep -q "not judged here: recorded on another machine" "$T/status.out" ||
        fail "status does not say the run is another machine's ($(cmd_excerpt status))"
    tg_cmd sweep sweep --state-dir "$STATE" "$run"
    expect_eq "$CMD_RC" 0 "sweep of the other machine's run ($(cmd_excerpt sweep))"
    [[ -e $STATE/$run.json ]] || fail "sweep removed the other machine's record"
    expect_victim_alive "after run, status and sweep"
    kill_victims
    TG_PREFIX=()
fi

TEST "a host without a machine id writes none; another boot's record naming none blocks (121) until resolve"
if [[ -n $NO_ID_WHY ]]; then
    skip_test "$NO_ID_WHY"
else
    TG_PREFIX=("${NO_ID_PREFIX[@]}")
    tg_run --keep-records -- true
    expect_exit 0
    newest=$(ls "$STATE"/finished/*.json | sort | tail -1)
    expect_eq "$(jq -r '.machine_id // "absent"' "$newest")" absent "machine_id written by a host without one"
    start_victim sleep
    run=$(new_run_id "$VICTIM_PID")
    write_other_boot_record "$STATE/$run.json" "$run" null "$BEFORE_BOOT_NS"
    tg_run -- touch "$T/made"
    expect_exit 121
    [[ -e $T/made ]] && fail "the refused run started its COMMAND"
    tg_cmd resolve resolve --state-dir "$STATE" "$run" --why "checked by hand"
    expect_eq "$CMD_RC" 0 "resolve ($(cmd_excerpt resolve))"
    tg_run -- touch "$T/made"
    expect_exit 0
    expect_victim_alive "after the runs and resolve"
    kill_victims
    TG_PREFIX=()
fi

TEST "without /etc/machine-id, D-Bus's /var/lib/dbus/machine-id names the machine"
if [[ -n $NO_ID_WHY ]]; then
    skip_test "$NO_ID_WHY"
elif [[ $(id -u) != 0 ]] || ! command -v unshare >/dev/null; then
    skip_test "placing a D-Bus machine id needs root and unshare (a private mount namespace)"
elif ! err=$(unshare --mount --propagation private true 2>&1 </dev/null); then
    skip_test "placing a D-Bus machine id needs a private mount namespace: ${err//$'\n'/ }"
else
    dbus_id=fedcba9876543210fedcba9876543210
    mkdir -p "$T/var-lib/dbus"
    echo "$dbus_id" >"$T/var-lib/dbus/machine-id"
    # /etc/machine-id hidden (if there is one); the D-Bus file placed over the real one, or, where
    # there is no /var/lib/dbus (a minimal chroot), a /var/lib holding only it
    TG_PREFIX=(unshare --mount --propagation private sh -c '
        if [ -e /etc/machine-id ]; then mount --bind /dev/null /etc/machine-id || exit 99; fi
        if [ -e /var/lib/dbus/machine-id ]; then
            mount --bind "$0/dbus/machine-id" /var/lib/dbus/machine-id || exit 99
        else
            mount --bind "$0" /var/lib || exit 99
        fi
        exec "$@"' "$T/var-lib")
    tg_run --keep-records -- true
    expect_exit 0
    newest=$(ls "$STATE"/finished/*.json | sort | tail -1)
    expect_eq "$(jq -r '.machine_id // "absent"' "$newest")" "$dbus_id" "the record's machine_id"
    TG_PREFIX=()
fi

TEST "--keep-limit N: a run that keeps its record leaves at most N finished ones, the newest"
for i in 1 2 3; do
    tg_run --keep-records --keep-limit 2 -- true
    expect_exit 0
done
kept=("$STATE"/finished/*.json)
expect_eq "${#kept[@]}" 2 "finished records kept"
tg_run --keep-records --keep-limit 0 -- true
kept=("$STATE"/finished/*.json)
expect_eq "${#kept[@]}" 0 "finished records kept with --keep-limit 0"

TEST "sweep removes the temporary files of writes abandoned over 10 minutes ago (the records', finished/, units/), and only those"
tg_run --keep-records -- true
expect_exit 0
abandoned=$STATE/.tmp-20240101T000000-1-0001.json-99-0-1
fresh=$STATE/.tmp-20240101T000000-1-0002.json-99-1-1
old_finished=$STATE/finished/.tmp-20240101T000000-1-0003.json-99-2-1
# a run killed while it kept the service manager's answer (STATE/units/MANAGER-UNIT)
mkdir -p -m 700 "$STATE/units"
old_unit=$STATE/units/.tmp-system-ci.service-99-3-1
printf partial >"$abandoned" && printf partial >"$fresh" && printf partial >"$old_finished" &&
    printf partial >"$old_unit"
touch -d '-11 minutes' "$abandoned" "$old_finished" "$old_unit"
tg_cmd sweep sweep --state-dir "$STATE"
expect_eq "$CMD_RC" 0 "sweep exit ($(cmd_excerpt sweep))"
grep -qx "removed 3 temporary file(s) of state directory writes abandoned over 10 minutes ago" "$T/sweep.out" ||
    fail "sweep does not say what it removed ($(cmd_excerpt sweep))"
[[ ! -e $abandoned && ! -e $old_finished && ! -e $old_unit ]] || fail "the abandoned temporary files are still there"
[[ -e $fresh ]] || fail "sweep removed a write that may still be in flight"
kept=("$STATE"/finished/*.json)
expect_eq "${#kept[@]}" 1 "the kept record"
