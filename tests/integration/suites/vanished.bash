# vanished: the boundary's own object disappears under a running controller. An administrator's
# cleanup (`echo 1 > LEAF/cgroup.kill; rmdir LEAF`), or a namespace's init killed from outside. The
# run ends at once as what happened makes it: a leaf can only be removed empty, so COMMAND's death
# by the kill and the takedown proven (pass), or, where COMMAND lives on outside it, ambiguous with
# the reason. Never a busy loop (the removed leaf's cgroup.events is "ready" for ever), never
# "members survived" with none named, and no later run refused for what ended so.
#
# The controller is stopped (SIGSTOP) while the leaf is killed and removed, so that the removal,
# not the kill, is what it meets when it runs again: otherwise it may see the leaf empty and remove
# it itself first, which proves nothing here.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
[[ $BOUNDARY == cgroup || $BOUNDARY == pidns ]] ||
    skip_suite "a boundary with an object of its own to remove: the cgroup and pidns arms"

# boundary_address: ADDRESS = what -v's "treeguard: boundary KIND ADDRESS" line names
boundary_address() {
    ADDRESS=$(sed -n 's/^treeguard: boundary [a-z-]* //p' "$T/tg.err" | head -1)
    [[ -n $ADDRESS ]] || { fail "no 'treeguard: boundary' line on stderr"; return 1; }
}
# stopped PID: the process is in state T
stopped() { proc_stat "$1" && [[ $PS_STATE == T ]]; }
# stop_controller: SIGSTOP treeguard, and wait until it is stopped
stop_controller() {
    kill -STOP "$TG_PID"
    wait_for "$LOAD_MARGIN_S" "treeguard to stop" stopped "$TG_PID"
}
leaf_empty() { [[ $(sed -n 's/^populated //p' "$ADDRESS/cgroup.events" 2>/dev/null) == 0 ]]; }
leaf_removed() { rmdir "$ADDRESS" 2>/dev/null || [[ ! -e $ADDRESS ]]; }
# kill_and_remove_leaf: what an administrator does: cgroup.kill, then rmdir once it is empty
kill_and_remove_leaf() {
    echo 1 >"$ADDRESS/cgroup.kill" || { fail "cannot write $ADDRESS/cgroup.kill"; return 1; }
    wait_for "$LOAD_MARGIN_S" "the leaf to empty after cgroup.kill" leaf_empty &&
        wait_for "$LOAD_MARGIN_S" "rmdir of the leaf" leaf_removed
}
# continue_and_await_end: SIGCONT treeguard; it must end within the load margin (it has nothing
# left to wait for; the grace period it was given is far longer), and use little CPU on the way
# (CONT_CPU_MS: its CPU time from the CONT to its last look while it ran). It is reaped: TG_RC
continue_and_await_end() {
    local t0 cpu0=0
    CONT_CPU_MS=0
    cpu_ms "$TG_PID" && cpu0=$CPU_MS
    kill -CONT "$TG_PID"
    now_ms; t0=$NOW_MS
    while running "$TG_PID"; do
        cpu_ms "$TG_PID" && CONT_CPU_MS=$((CPU_MS - cpu0))
        now_ms
        if ((NOW_MS - t0 > LOAD_MARGIN_MS)); then
            fail "treeguard still running ${LOAD_MARGIN_S}s after the boundary vanished, ${CONT_CPU_MS}ms of CPU meanwhile ($(stall_report))"
            return 1
        fi
        poll_sleep
    done
    note "treeguard ended $((NOW_MS - t0))ms after the CONT, ${CONT_CPU_MS}ms of CPU at its last look"
    ((CONT_CPU_MS < 1000)) || fail "treeguard used ${CONT_CPU_MS}ms of CPU to end (a busy loop?)"
    tg_wait "$(((NOW_MS - TG_T0) / 1000 + 2))"
}
# next_run_dispatched: the next run on this state directory starts (no refusal, 121)
next_run_dispatched() {
    tg_run -- touch "$T/next"
    expect_exit 0
    [[ -e $T/next ]] || fail "the next run did not start its COMMAND"
}
expect_no_survived_line() {
    grep -q "survived" "$T/tg.err" && fail "'survived' on stderr:$(tg_stderr_excerpt)"
    return 0
}

if [[ $BOUNDARY == cgroup ]]; then

TEST "the leaf killed and removed from outside as COMMAND runs: COMMAND's death (137), pass, at once"
fx sleep
tg_start --keep-records --kill-after 60s -- "${FX[@]}"
if wait_ready 20 && boundary_address && stop_controller && kill_and_remove_leaf &&
    continue_and_await_end; then
    expect_exit 137
    expect_no_survived_line
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition"
    next_run_dispatched
fi

TEST "the leaf killed and removed during the drain (TERM ignored, grace 60s): 124, pass, at once"
fx --ignore-term ignore-term
tg_start --keep-records --kill-after 60s -- "${FX[@]}"
if wait_ready 20 && boundary_address; then
    kill -ALRM "$TG_PID" # the deadline, now
    if wait_for "$LOAD_MARGIN_S" "the drain" grep -q '^treeguard: drain: TERM' "$T/tg.err" &&
        stop_controller && kill_and_remove_leaf && continue_and_await_end; then
        expect_exit 124
        expect_no_survived_line
        the_record && expect_eq "$(rec .disposition)" pass "the record's disposition"
        next_run_dispatched
    fi
fi

TEST "COMMAND moved out of its leaf, the leaf removed: ambiguous (122) at once, the reason named"
fx sleep
tg_start --kill-after 60s -- "${FX[@]}"
if wait_ready 20 && boundary_address && stop_controller; then
    main=$(fixture_main_pid)
    mkdir "$CG_TEST/moved" && echo "$main" >"$CG_TEST/moved/cgroup.procs" &&
        wait_for "$LOAD_MARGIN_S" "rmdir of the leaf" leaf_removed && continue_and_await_end
    expect_exit 122
    expect_no_survived_line
    grep -q "was removed from outside while COMMAND (pid $main) lived on outside it" "$T/tg.err" ||
        fail "stderr does not say why the run is not proven:$(tg_stderr_excerpt)"
    the_record && expect_eq "$(rec .disposition)" ambiguous "the record's disposition"
    # COMMAND lives on outside every boundary: this test's to end
    kill_survivors "$PIDFILE" "$TOKEN"
    wait_members_gone "$LOAD_MARGIN_S" "COMMAND moved out, killed by the test"
    rmdir "$CG_TEST/moved"
fi

fi # cgroup

if [[ $BOUNDARY == pidns ]]; then

TEST "the namespace's init killed from outside: COMMAND's death (137), pass, at once"
fx sleep
tg_start --keep-records --kill-after 60s -- "${FX[@]}"
if wait_ready 20 && boundary_address && [[ $ADDRESS =~ ^init\ pid\ ([0-9]+)$ ]]; then
    init=${BASH_REMATCH[1]}
    stop_controller
    kill -KILL "$init"
    wait_for "$LOAD_MARGIN_S" "every process of the namespace to be gone" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} <= 1))'
    if continue_and_await_end; then
        expect_exit 137
        expect_no_survived_line
        the_record && expect_eq "$(rec .disposition)" pass "the record's disposition"
        next_run_dispatched
    fi
elif [[ -z $TEST_FAIL ]]; then
    fail "no 'init pid N' in the boundary line: '$ADDRESS'"
fi

fi # pidns
