# evidence_controller (DESIGN.md [guardian]): treeguard itself is SIGKILLed mid-run. The tree has a
# background grandchild, a setsid'd child and a double-fork daemon (tests/evidence/tree.sh), and
# treeguard is killed as soon as the tree reports ready.
#  - the guardian takes the tree down: no member alive within its 2 s plus the load margin (the time
#    is noted), the record says
#    "controller lost", and the next run goes;
#  - the guardian is killed too (first): nothing takes the tree down, so the next run refuses
#    with 121 and starts nothing; `sweep` takes the tree down; then runs go again.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

TEST "SIGKILL to treeguard: the guardian takes the tree down (2s + grace + load margin), record says controller lost"
# the shapes ignore TERM: the guardian's drain (grace 1s) ends in its forced kill
tg_start --kill-after 1s -- "$EV_TREE" "$TG_FIXTURE" --ignore-term
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    n=$(member_count)
    kill -KILL "$TG_PID"
    now_ms; t0=$NOW_MS
    if wait_members_gone $((GUARDIAN_TAKEDOWN_S + 1 + LOAD_MARGIN_S)) "members of the killed run ($n in all)"; then
        note "all $n members gone ${GONE_MS}ms after SIGKILL to treeguard"
    fi
    tg_wait 10
    expect_exit 137
    # the guardian finishes its work and leaves
    [[ -n $GUARDIAN_PID ]] && wait_for 10 "the guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    if the_record; then
        rec '.notes[]' | grep -q 'controller lost' || fail "record notes $(rec -c .notes) do not say 'controller lost'"
        expect_authority_counts guardian
        note "record: disposition $(rec .disposition), authority by '$(rec '.authority[0].by')', members $(rec '.members|length') of $n"
    fi
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
fi

# The seed's scenario (DESIGN.md [guardian], [drain]): a supervisor (treeguard) SIGKILLed while its
# module runs. The guardian drains first: the run's signal to every member, then its grace, then the
# forced kill. A module that seals its log on the signal (the fixture's --seal: 200 ms of sealing,
# then the file) gets to finish; one that ignores it is gone at the grace plus the guardian's 2 s,
# and not before the grace.
# expect_drain_recorded SIGNAL: the record shows the guardian's drain as a deadline's: its phase,
# and a note naming the signal sent and the grace
expect_drain_recorded() {
    the_record || return 1
    rec '.phases[].name' | grep -qx drain || fail "no drain phase in the record: $(rec -c '[.phases[].name]')"
    rec '.notes[]' | grep -q "^drain after controller death: $1 to every process of the run " ||
        fail "no note of the guardian's drain naming $1: $(rec -c .notes)"
}

TEST "SIGKILL to treeguard while its module runs: the guardian drains first, the module seals its file, nothing survives within grace + 2s"
tg_start --kill-after 3s -- "$TG_FIXTURE" --seal "$T/sealed" grandchild
if wait_ready 20; then
    main=$(fixture_main_pid)
    kill -KILL "$TG_PID"
    now_ms; t0=$NOW_MS
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the module to seal its file (the guardian's TERM)" test -s "$T/sealed" &&
        wait_members_gone $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the run after its controller's death" &&
        note "sealed and gone ${GONE_MS}ms after the file"
    tg_wait 10
    expect_exit 137
    expect_eq "$(cat "$T/sealed" 2>/dev/null)" "sealed $main 15" "the sealed file (its module, by TERM)"
    wait_for 10 "the run's record to be finished" eval 'the_record 2>/dev/null && [[ $(rec .disposition) != pending ]]'
    if expect_drain_recorded TERM; then
        expect_eq "$(rec .disposition)" pass "the record's disposition"
        expect_eq "$(rec '.authority|length')" 0 "authority entries (the drain emptied the run: nothing forced)"
    fi
fi

TEST "SIGKILL to treeguard, a module that ignores TERM: gone at grace + 2s, not before the grace"
tg_start --kill-after 2s -- "$TG_FIXTURE" ignore-term
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    kill -KILL "$TG_PID"
    if wait_members_gone $((GUARDIAN_TAKEDOWN_S + 2 + LOAD_MARGIN_S)) "the run after its controller's death"; then
        ((GONE_MS >= 2000)) || fail "the run was gone ${GONE_MS}ms after its controller's death, before its grace (2s): no drain"
        note "gone ${GONE_MS}ms after SIGKILL to treeguard"
    fi
    tg_wait 10
    expect_exit 137
    [[ -n $GUARDIAN_PID ]] && wait_for 10 "the guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    if expect_drain_recorded TERM; then
        expect_authority_counts guardian
        rec '.authority[-1].reason' | grep -q 'the grace period 2s ended' ||
            fail "the guardian's authority does not say the grace ended: $(rec -c '.authority[-1]')"
    fi
fi

TEST "SIGKILL to treeguard under -k 0, a module that ignores TERM: gone after the bounded grace (1s), not before"
tg_start --kill-after 0 -- "$TG_FIXTURE" ignore-term
if wait_ready 20; then
    kill -KILL "$TG_PID"
    if wait_members_gone $((GUARDIAN_TAKEDOWN_S + 1 + LOAD_MARGIN_S)) "the run after its controller's death"; then
        ((GONE_MS >= 1000)) || fail "the run was gone ${GONE_MS}ms after its controller's death, before the bounded grace (1s): no drain"
        note "gone ${GONE_MS}ms after SIGKILL to treeguard"
    fi
    tg_wait 10
    expect_exit 137
    wait_for 10 "the run's record to be finished" eval 'the_record 2>/dev/null && [[ $(rec .disposition) != pending ]]'
    expect_drain_recorded TERM
fi

TEST "SIGKILL to treeguard --signal USR1: the guardian drains with the run's own signal"
tg_start --signal USR1 --kill-after 3s -- "$TG_FIXTURE" --seal "$T/sealed" sleep
if wait_ready 20; then
    main=$(fixture_main_pid)
    kill -KILL "$TG_PID"
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the module to seal its file" test -s "$T/sealed"
    wait_members_gone $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the run after its controller's death"
    tg_wait 10
    expect_exit 137
    expect_eq "$(cat "$T/sealed" 2>/dev/null)" "sealed $main 10" "the sealed file (its module, by USR1)"
    wait_for 10 "the run's record to be finished" eval 'the_record 2>/dev/null && [[ $(rec .disposition) != pending ]]'
    expect_drain_recorded USR1
fi

TEST "guardian and treeguard SIGKILLed: next run 121 (nothing started), sweep drains, then takes the tree down, runs go again"
# the shapes ignore TERM: sweep's drain (the run's grace, 1s) ends in its forced kill, authority first
tg_start --kill-after 1s -- "$EV_TREE" "$TG_FIXTURE" --ignore-term
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    kill_guardian_and_controller
    expect_exit 137
    save_tg_output killed
    members_alive
    note "${#ALIVE[@]} of $(member_count) members alive after both were killed"
    the_record && note "record: disposition $(rec .disposition), members recorded $(rec '.members|length')"
    tg_run -- touch "$T/made-refused"
    save_tg_output refused
    expect_exit 121
    [[ -e $T/made-refused ]] && fail "the refused run started its COMMAND"
    now_ms; t0=$NOW_MS
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "treeguard sweep exit ($(cmd_excerpt sweep))"
    wait_members_gone "$LOAD_MARGIN_S" "after sweep ($(cmd_excerpt sweep))" && note "sweep + members gone: $((NOW_MS - t0))ms"
    if the_record; then
        rec '.notes[]' | grep -q "^drain after controller death: TERM to every process of the run .*, by sweep pid [0-9]* .*; grace 1s$" ||
            fail "the record shows no drain by sweep with the run's grace: $(rec -c .notes)"
        expect_authority_counts sweep
    fi
    tg_run -- touch "$T/made-after-sweep"
    expect_exit 0
    [[ -e $T/made-after-sweep ]] || fail "the run after sweep did not start its COMMAND"
fi

TEST "every command treeguard suggests works pasted as printed: sweep from the 121, resolve's warning, sweep of a finished run"
# The state directory's path needs quoting; the pasted commands run from /, without
# $TREEGUARD_STATE_DIR: only what the line says tells them where the records are.
odd_state_dir
tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    kill_guardian_and_controller
    expect_exit 137
    tg_run -- touch "$T/made-refused"
    expect_exit 121
    advice=$(grep -m1 '^treeguard: dispatch refused: .*; run: treeguard sweep ' "$T/tg.err")
    if [[ -z $advice ]]; then
        fail "the 121 does not end with a sweep to run (stderr:$(tg_stderr_excerpt))"
    else
        paste_advice sweep "$advice"
        expect_eq "$CMD_RC" 0 "the pasted '$(cat "$T/sweep.cmd")' ($(cmd_excerpt sweep))"
        wait_members_gone "$LOAD_MARGIN_S" "after the pasted sweep"
        tg_run -- touch "$T/made-after-sweep"
        expect_exit 0
    fi
fi
TEST "resolve while members live: resolved, with a warning naming them; its pasted sweep takes them down"
odd_state_dir
tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    kill_guardian_and_controller
    expect_exit 137
    the_record
    members_alive
    n_alive=${#ALIVE[@]}
    tg_cmd resolve resolve --state-dir "$STATE" "$RUN_ID" --why "checked by the test"
    expect_eq "$CMD_RC" 0 "resolve exit ($(cmd_excerpt resolve))"
    warning=$(grep -m1 '^treeguard: warning: run .* is resolved, but ' "$T/resolve.err")
    if [[ -z $warning ]]; then
        fail "resolve said nothing of the $n_alive live member(s) ($(cmd_excerpt resolve))"
    else
        first=${ALIVE[0]%%:*}
        [[ $warning == *"pid $first"* || $warning == *"boundary"* ]] ||
            fail "the warning does not name what is alive (pid $first): $warning"
        ((n_alive > 0)) || fail "no member was alive to warn of"
        paste_advice swept "$warning"
        expect_eq "$CMD_RC" 0 "the pasted '$(cat "$T/swept.cmd")' ($(cmd_excerpt swept))"
        wait_members_gone "$LOAD_MARGIN_S" "after the pasted sweep of the resolved run"
    fi
    tg_cmd again sweep --state-dir "$STATE" "$RUN_ID"
    expect_eq "$CMD_RC" 0 "sweep of the finished run ($(cmd_excerpt again))"
    grep -q "^run $RUN_ID: nothing to sweep (resolved)\$" "$T/again.out" ||
        fail "sweep does not find the finished run ($(cmd_excerpt again))"
fi

# record_names_guardian: the run's record (RECORD) names the guardian GUARDIAN_PID
record_names_guardian() { [[ $(rec '.guardian.pid') == "$GUARDIAN_PID" ]]; }
# remember_alive / expect_still_alive WHEN: the members alive now are all alive later (the tree's
# double-fork middle exits by design, so "every member" would be wrong)
remember_alive() { members_alive; ALIVE_BEFORE=("${ALIVE[@]}"); }
expect_still_alive() {
    local e lost=()
    members_alive
    for e in "${ALIVE_BEFORE[@]}"; do
        [[ " ${ALIVE[*]} " == *" $e "* ]] || lost+=("$e")
    done
    ((${#ALIVE_BEFORE[@]} > 0 && ${#lost[@]} == 0)) ||
        fail "$1: ${#lost[@]} of ${#ALIVE_BEFORE[@]} member(s) killed:$(describe_pids "${lost[@]}")"
}

TEST "controller SIGKILLed while its guardian works: sibling runs are not refused"
# The guardian's work is held still with SIGSTOP: from the gate's side it is a guardian that is
# alive and has not finished, which is the window (15-110 ms when not held) in which siblings got 121.
tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20 && guardian_of_run && the_record &&
    wait_for 10 "the record to name guardian $GUARDIAN_PID" record_names_guardian; then
    guardian=$GUARDIAN_PID guardian_start=$GUARDIAN_START
    remember_alive
    kill -STOP "$guardian"
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    refused=0
    for i in 1 2 3 4 5; do
        tg_run -- touch "$T/sibling-$i"
        [[ $TG_RC == 0 && -e $T/sibling-$i ]] || refused=$((refused + 1))
    done
    expect_eq "$refused" 0 "siblings refused while the guardian works (last: exit $TG_RC$(tg_stderr_excerpt))"
    expect_still_alive "while the guardian is stopped"
    kill -CONT "$guardian"
    wait_members_gone 5 "after the guardian went on" && note "members gone ${GONE_MS}ms after SIGCONT"
    wait_for 10 "the guardian to exit" eval '! alive_as $guardian $guardian_start'
    # a proven run is kept among the finished records
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition after the guardian's work"
    tg_run -- touch "$T/after"
    expect_exit 0
fi

# ns_cmd NAME ARGS...: "treeguard ARGS" as PID 1 of a new pid namespace (its own /proc), sharing
# this test's state directory; CMD_RC, output in $T/NAME.out and $T/NAME.err
ns_cmd() {
    local name=$1
    shift
    echo "unshare --pid --fork --mount-proc $TREEGUARD $*" >>"$T/commands"
    TG_TOKEN=$TOKEN timeout -s KILL 60 unshare --pid --fork --mount-proc "$TREEGUARD" "$@" \
        </dev/null >"$T/$name.out" 2>"$T/$name.err"
    CMD_RC=$?
}

TEST "a run in another pid namespace: neither refused by, nor swept from, a namespace that cannot judge it"
if ! can_unshare_pidns; then
    skip_test "$UNSHARE_WHY"
else
    tg_start -- "$EV_TREE" "$TG_FIXTURE"
    if wait_ready 20 && the_record; then
        expect_eq "$(rec .pid_ns)" "$(stat -L -c %i /proc/self/ns/pid)" "the record's pid_ns"
        remember_alive
        ns_cmd ns-run run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" -- touch "$T/ns-made"
        expect_eq "$CMD_RC" 0 "treeguard run in another pid namespace ($(cmd_excerpt ns-run))"
        [[ -e $T/ns-made ]] || fail "the run in the other namespace did not start its COMMAND"
        ns_cmd ns-sweep sweep --state-dir "$STATE" "$RUN_ID"
        expect_eq "$CMD_RC" 0 "treeguard sweep in another pid namespace ($(cmd_excerpt ns-sweep))"
        grep -q "another pid namespace" "$T/ns-sweep.out" ||
            fail "sweep did not say the run is in another pid namespace: $(cmd_excerpt ns-sweep)"
        ns_cmd ns-status status --state-dir "$STATE"
        grep -q "controller other-namespace" "$T/ns-status.out" ||
            fail "status does not report the run as other-namespace: $(cmd_excerpt ns-status)"
        expect_still_alive "after run, sweep and status from another pid namespace"
        running "$TG_PID" || fail "the host run ended while the other namespace looked at it"
        # the host run ends as any run does: TERM to treeguard reaches COMMAND, which dies of it
        kill -TERM "$TG_PID"
        tg_wait 20
        expect_exit 143
        wait_members_gone 5 "after the host run ended"
    fi
fi

# sweep_after_both_killed: SIGKILL the guardian and the controller; every member lives on; then
# sweep takes them all down
sweep_after_both_killed() {
    kill_guardian_and_controller
    expect_exit 137
    expect_all_members_alive "after treeguard and its guardian were killed"
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "treeguard sweep exit ($(cmd_excerpt sweep))"
    wait_members_gone "$LOAD_MARGIN_S" "after sweep ($(cmd_excerpt sweep))"
}

TEST "guardian and treeguard SIGKILLed, COMMAND without the run's marker: the one record write names it, sweep takes it down"
# A run's record is written once on the common path, while COMMAND is held before exec: it must
# already name COMMAND (process group: "pgid N" and COMMAND as member), because nothing else will
# once the controller and its guardian are gone, and a COMMAND that dropped TREEGUARD_RUNS cannot
# be found by the marker.
tg_start -- env -u TREEGUARD_RUNS "$TG_FIXTURE" sleep
if wait_ready 20 && the_record; then
    read -r cmd_pid _ <"$PIDFILE"
    if [[ $BOUNDARY != cgroup ]]; then
        expect_eq "$(rec .boundary.pgid)" "$cmd_pid" "the record's pgid"
        expect_eq "$(rec '.members[0].pid')" "$cmd_pid" "the record's first member"
    fi
    if guardian_of_run; then
        record_names_guardian || fail "the record names guardian $(rec .guardian.pid), not $GUARDIAN_PID"
    else
        fail "no 'treeguard: guardian pid N' line with -v"
    fi
    sweep_after_both_killed
fi

TEST "guardian and treeguard SIGKILLed, a setsid child of COMMAND without the run's marker: sweep takes it down by descent"
# The record names COMMAND only; its child has a session of its own and no TREEGUARD_RUNS, so
# neither group, session nor marker makes it the run's: its parent does (a process started by one
# of the run's is the run's). Without that, sweep killed COMMAND and left the child running.
tg_start -- env -u TREEGUARD_RUNS "$TG_FIXTURE" setsid
if wait_ready 20 && the_record && guardian_of_run; then
    sweep_after_both_killed
fi

TEST "controller SIGKILLed while its record is being written (COMMAND held before exec): COMMAND never runs, nothing blocks"
# The window between COMMAND's spawn and the record's write: strace holds the record's rename (the
# temp file is written, the record does not exist yet) and the controller is SIGKILLed there. COMMAND
# is held before exec until the record exists: it must never run (no line in the pid file), and
# nothing may be left to block the next run.
if ! command -v strace >/dev/null; then
    skip_test "strace is not installed (it holds the record's rename)"
elif ! strace -qq -o /dev/null true 2>/dev/null; then
    skip_test "strace cannot trace here (ptrace not permitted)"
else
    # held 3 s; a SIGKILL during the hold takes effect when strace resumes the controller, which
    # then dies without making the rename
    held=rename,renameat,renameat2
    TG_WRAP=(strace -f -qq -o "$T/strace" -e trace=$held -e inject=$held:delay_enter=3000000)
    tg_start -- "$TG_FIXTURE" sleep
    TG_WRAP=()
    controller=""
    held_now() {
        local tmp=("$STATE"/.tmp-*)
        ((${#tmp[@]} > 0)) && grep -q rename "$T/strace" 2>/dev/null || return 1
        read -r controller _ <"/proc/$TG_PID/task/$TG_PID/children"
        [[ -n $controller ]]
    }
    if wait_for 20 "the record's rename to be held" held_now; then
        controller_start=$(start_of "$controller")
        records=("$STATE"/*.json)
        ((${#records[@]} == 0)) || fail "the record exists already: not the window"
        kill -KILL "$controller"
        wait_for 20 "the controller to die" eval '! alive_as $controller $controller_start'
        tg_wait 60
        records=("$STATE"/*.json)
        ((${#records[@]} == 0)) || fail "a record was written after all: ${records[*]}"
        # the held COMMAND reads EOF instead of the go-ahead and exits; the guardian finds no record
        wait_for 10 "the run's processes to leave" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))'
        (($(grep -c . "$PIDFILE") == 0)) || fail "COMMAND ran: $(head -c 200 "$PIDFILE")"
        tg_cmd status status --state-dir "$STATE"
        expect_eq "$CMD_RC" 0 "treeguard status exit ($(cmd_excerpt status))"
        tg_run -- touch "$T/made"
        expect_exit 0
        [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
    else
        tg_wait 120
    fi
fi

# start_marked_stranger: a process of this test's own, started beside the run by the caller (not
# by COMMAND) with nothing but the run's marker in its environment (env -i TREEGUARD_RUNS=RUN_ID),
# and a setsid child of it: a copy of the run's environment, under a live parent that is not the
# run's (DESIGN.md [ownership]). Both must survive every takedown. VICTIM_FILE lists them.
start_marked_stranger() {
    local pf=$T/victim.pids
    : >"$pf"
    env -i TREEGUARD_RUNS="$RUN_ID" TG_TOKEN="$TOKEN" TG_PIDFILE="$pf" "$TG_FIXTURE" setsid \
        </dev/null >/dev/null 2>&1 &
    record_started "$!"
    disown "$!"
    VICTIM_FILE=$pf
    wait_for 10 "the stranger to be ready" has_line "$pf" ready
}
# expect_strangers_alive WHEN: every process start_marked_stranger logged is alive
expect_strangers_alive() {
    local a b rest n=0
    while read -r a b rest; do
        [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] || continue
        n=$((n + 1))
        alive_as "$a" "$b" || fail "$1: the stranger $a (ours, carrying the run's marker) was killed"
    done <"$VICTIM_FILE"
    ((n == 2)) || fail "$1: expected 2 strangers logged, found $n"
}

TEST "a stranger carrying the run's marker under a live parent of its own: the guardian leaves it alone"
tg_start -- "$TG_FIXTURE" setsid
if wait_ready 20 && the_record && guardian_of_run && start_marked_stranger; then
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    wait_members_gone 5 "the run's members after the guardian's takedown"
    expect_strangers_alive "after the guardian took the run down"
    the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
fi
kill_victims

TEST "a stranger carrying the run's marker under a live parent of its own: sweep leaves it alone"
tg_start -- "$TG_FIXTURE" setsid
if wait_ready 20 && the_record && guardian_of_run && start_marked_stranger; then
    sweep_after_both_killed
    expect_strangers_alive "after sweep took the run down"
    the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
fi
kill_victims

# start_marked_orphan: a daemon of uid NOBODY_UID that this test starts beside the run (not
# COMMAND), orphaned (its parent exited, so its parent is PID 1 or the subreaper the run's orphans
# go to: its ancestry is lost) and carrying a copy of the run's marker (env -i
# TREEGUARD_RUNS=RUN_ID): an `at` job's daemon, `nohup x &` from a shell that has exited. Not the
# run's (DESIGN.md [ownership]). ORPHAN_PID/ORPHAN_START: the daemon; VICTIM_FILE lists it and the
# fixture's main.
start_marked_orphan() {
    local pf=$T/victim.pids a b rest
    : >"$pf"
    chown "$NOBODY_UID:$NOBODY_GID" "$pf"
    setpriv --reuid=$NOBODY_UID --regid=$NOBODY_GID --clear-groups \
        env -i TREEGUARD_RUNS="$RUN_ID" TG_PIDFILE="$pf" "$TG_FIXTURE" daemon </dev/null >/dev/null 2>&1 &
    record_started "$!"
    disown "$!"
    VICTIM_FILE=$pf
    wait_for 10 "the orphan to be ready" has_line "$pf" ready || return 1
    ORPHAN_PID="" ORPHAN_START=""
    while read -r a b rest; do
        [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] || continue
        proc_stat "$a" && [[ $PS_START == "$b" ]] || continue
        if [[ $PS_PPID == 1 || $PS_PPID == $(rec .reaper.pid) ]]; then
            ORPHAN_PID=$a ORPHAN_START=$b
        fi
    done <"$pf"
    [[ -n $ORPHAN_PID ]] || fail "no orphan among $(tr '\n' ' ' <"$pf") (parent PID 1 or the run's reaper $(rec .reaper.pid))"
    [[ -n $ORPHAN_PID ]]
}
# expect_orphan_alive WHEN: the orphan start_marked_orphan made is alive, still of uid NOBODY_UID
expect_orphan_alive() {
    alive_as "$ORPHAN_PID" "$ORPHAN_START" || fail "$1: the orphan $ORPHAN_PID (ours, uid $NOBODY_UID, carrying the run's marker) was killed"
}

# Process group only: a cgroup run is its leaf, and nothing outside it is ever judged by the marker.
if [[ $BOUNDARY != cgroup ]]; then
    TEST "a marked orphan of another user, alive outside the run before its controller died: the guardian leaves it alone"
    # The guardian walks the run's tree while the controller lives; the controller is the
    # subreaper of everything the run starts, so every process of the run alive at a walk is seen
    # in it. The orphan was alive and outside that tree at two walks before the controller's
    # SIGKILL: a stranger, whatever its environment says; the run's own processes are taken down
    # all the same.
    if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
        skip_test "needs root and setpriv (an orphan of uid $NOBODY_UID beside root's run)"
    else
        tg_start -- "$TG_FIXTURE" setsid
        if wait_ready 20 && the_record && guardian_of_run && start_marked_orphan \
            && a_tick_after "$ORPHAN_START" && guardian_walked && guardian_walked; then
            kill -KILL "$TG_PID"
            tg_wait 10
            expect_exit 137
            wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
            wait_members_gone 5 "the run's members after the guardian's takedown"
            expect_orphan_alive "after the guardian took the run down"
            the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
        fi
        kill_victims
    fi

    TEST "a marked orphan of another user: sweep, which never looked at the run, leaves it alone and says so"
    if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
        skip_test "needs root and setpriv (an orphan of uid $NOBODY_UID beside root's run)"
    else
        tg_start -- "$TG_FIXTURE" setsid
        if wait_ready 20 && the_record && guardian_of_run && start_marked_orphan; then
            sweep_after_both_killed
            expect_orphan_alive "after sweep took the run down"
            grep -q "^run $RUN_ID: left alone: .*(pid $ORPHAN_PID), an orphan of another user" "$T/sweep.out" \
                || fail "sweep did not say it left the orphan $ORPHAN_PID alone ($(cmd_excerpt sweep))"
            the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
        fi
        kill_victims
    fi

    TEST "a marked daemon the run starts after the guardian's last look, orphaned by the controller's death: the guardian takes it down"
    # The other side of the last look: what the run starts after the guardian's last walk, and
    # what the controller's death then orphans (out of the tree the guardian walks, its parent the
    # reaper), is claimed by the marker. The guardian is stopped (SIGSTOP) before COMMAND makes its
    # daemon, so no walk can see it; it is continued once the controller is dead.
    GUARDIAN_PID="" GUARDIAN_START=""
    go=$T/go
    mkfifo "$go"
    # COMMAND waits for a line on the fifo, then becomes the fixture's double-fork daemon
    tg_start -- sh -c 'read -r line <"$0" && exec "$1" daemon' "$go" "$TG_FIXTURE"
    guardian_stopped() { proc_stat "$GUARDIAN_PID" && [[ $PS_STATE == T ]]; }
    # the record exists only once the guardian has given COMMAND its word
    if wait_for 20 "the record and the guardian" eval 'compgen -G "$STATE/*.json" >/dev/null && guardian_of_run' \
        && kill -STOP "$GUARDIAN_PID" && wait_for 10 "the guardian to stop" guardian_stopped \
        && timeout 20 sh -c 'echo go >"$0"' "$go" && wait_ready 20; then
        guardian_stopped || fail "the guardian was not stopped while the daemon started"
        kill -KILL "$TG_PID"
        tg_wait 60
        expect_exit 137
        # the guardian acts in a later clock tick than the daemon's start (a look taken as it acts
        # would make the daemon older than it)
        a_tick_after "$(awk 'NF == 2 && $2 ~ /^[0-9]+$/ { s = $2 } END { print s }' "$PIDFILE")"
        kill -CONT "$GUARDIAN_PID"
        wait_for 10 "the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
        wait_members_gone 5 "the daemon started after the guardian's last look"
        the_record && expect_eq "$(rec .disposition)" pass "record disposition (notes $(rec -c .notes))"
    fi
    if [[ -n $GUARDIAN_PID ]] && alive_as "$GUARDIAN_PID" "$GUARDIAN_START"; then
        kill -CONT "$GUARDIAN_PID"
    fi
fi

TEST "under a terminal, a pipeline neighbour in COMMAND's job group: not killed, not a reason to refuse"
# With a controlling terminal COMMAND stays in the caller's job group (job control), which the
# shell made and shares with the pipeline's other command: the run never owned that group
# (DESIGN.md [gate]). script(1) gives the shell a terminal. The neighbour starts once COMMAND is
# ready (it gives up after the 20 s this test waits for it), so it is younger than the run.
if ! can_open_pty; then
    skip_test "$PTY_WHY"
else
    : >"$T/victim.pids"
    VICTIM_FILE=$T/victim.pids
    printf -v line 'TG_TOKEN=%q TG_PIDFILE=%q %q run %s --state-dir %q -- %q sleep | sh -c %q %q %q %q' \
        "$TOKEN" "$PIDFILE" "$TREEGUARD" "${BOUNDARY_ARGS[*]}" "$STATE" "$TG_FIXTURE" \
        'n=0; until grep -q "^ready$" "$0" 2>/dev/null; do n=$((n + 1)); [ $n -le 400 ] || exit 1; sleep 0.05; done; TG_PIDFILE=$1 exec "$2" sleep' \
        "$PIDFILE" "$T/victim.pids" "$TG_FIXTURE"
    script -qec "$line" /dev/null </dev/null >"$T/script.out" 2>&1 &
    script_pid=$!
    record_started "$script_pid"
    if wait_ready 20 && wait_for 20 "the neighbour" eval '[[ -s $VICTIM_FILE ]]' && the_record; then
        ctl=$(rec .controller.pid) ctl_start=$(rec .controller.start_time)
        read -r VICTIM_PID VICTIM_START <"$VICTIM_FILE"
        proc_stat "$VICTIM_PID"
        neighbour_pgid=$PS_PGID
        read -r cmd_pid _ <"$PIDFILE"
        proc_stat "$cmd_pid"
        expect_eq "$PS_PGID" "$neighbour_pgid" "COMMAND's group (the neighbour's: the shell's job)"
        kill -KILL "$ctl"
        wait_for 10 "the controller to die" eval '! alive_as $ctl $ctl_start'
        wait_members_gone 5 "the run's members after its controller was SIGKILLed"
        wait_for 10 "the guardian's verdict" eval 'the_record && [[ $(rec .disposition) != pending ]]'
        expect_eq "$(rec .disposition)" pass "the guardian's verdict (notes $(rec -c .notes))"
        expect_victim_alive "after the guardian took the run down"
        tg_run -- touch "$T/made"
        expect_exit 0
        [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
        expect_victim_alive "after the next launch"
    fi
    kill_victims
    kill -KILL "$script_pid" 2>/dev/null
    wait "$script_pid" 2>/dev/null
fi

TEST "a forker without the run's marker, controller SIGKILLed: the guardian leaves nothing alive, 5 times over"
# The forker keeps making setsid'd sleepers every 2 ms; without the run's marker, a sleeper forked
# while the takedown kills its parent is found only because the freeze stopped the parent first
# (without the freeze, 1-2 escapees lived on under a `pass` in 8 of 16 rounds).
for round in 1 2 3 4 5; do
    # a pid file and state directory per round (the end-of-test check finds every round's
    # processes by the test's token)
    PIDFILE=$T/pids.$round STATE=$T/state.$round
    : >"$PIDFILE"
    mkdir -p "$STATE" && chmod 700 "$STATE"
    tg_start -- env -u TREEGUARD_RUNS "$TG_FIXTURE" forker
    wait_ready 20 && guardian_of_run || { fail "round $round: the forker or its guardian did not start"; break; }
    kill -KILL "$TG_PID"
    tg_wait 10
    wait_for 30 "round $round: the guardian to finish" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    wait_members_gone 5 "round $round: the forker's sleepers ($(member_count) logged)" || break
    the_record && expect_eq "$(rec .disposition)" pass "round $round: the guardian's verdict (notes $(rec -c .notes))"
done
