# cascade (DESIGN.md [drain], [nested]): a run nested in another stops its own tree. When the
# enclosing run drains (its deadline, made now by ALRM as timeout(1) takes it; its controller's
# death), the nested run gets the enclosing run's signal through its controller, and its tree gets
# the nested run's own signal and grace, as cascaded timeouts behave:
#   timeout -sALRM 30 timeout -sUSR1 25 COMMAND, ALRM to the outer one -> COMMAND gets USR1.
# COMMAND is the fixture's sealing module (--seal FILE: on its first signal it seals, writing which
# signal reached it, and exits 0): the file must say USR1 (10), never ALRM (14), the outer signal.
# Both runs use this arm's boundary; the inner one makes its leaf inside the outer one (cgroup), its
# namespace inside the outer one's, whose init sends the outer run's signal (pidns).

# INNER_ARGS: this arm's boundary for a run started inside the test's run: no --cgroup-parent, so
# that a cgroup run makes its leaf inside the enclosing one
INNER_ARGS=()
inner_args() {
    local i
    INNER_ARGS=()
    for ((i = 0; i < ${#BOUNDARY_ARGS[@]}; i++)); do
        if [[ ${BOUNDARY_ARGS[i]} == --cgroup-parent ]]; then
            i=$((i + 1))
            continue
        fi
        INNER_ARGS+=("${BOUNDARY_ARGS[i]}")
    done
}
# expect_sealed_by SIGNAL_NUMBER WHAT: the module sealed its file on SIGNAL_NUMBER, and no other
# signal reached it (it logs each one: "sig N PID")
expect_sealed_by() {
    local main got
    main=$(fixture_main_pid)
    wait_for "$LOAD_MARGIN_S" "the module to seal its file" test -s "$T/sealed" || return 1
    expect_eq "$(cat "$T/sealed")" "sealed $main $1" "$2"
    got=$(grep '^sig ' "$PIDFILE" | tr '\n' ' ')
    expect_eq "$got" "sig $1 $main " "the signals that reached the module"
}

TEST "timeout -s ALRM 30 timeout -s USR1 25 COMMAND, ALRM to the outer: COMMAND gets USR1 through the inner, 124"
# (the inner treeguard makes its own choice of parent: the leaf it runs in)
tg_timeout_start -s ALRM 30 env -u TREEGUARD_CGROUP_PARENT "$TREEGUARD" timeout -s USR1 25 \
    "$TG_FIXTURE" --seal "$T/sealed" sleep
if wait_ready 20; then
    kill -ALRM "$TG_PID"
    tg_wait 60
    expect_exit 124
    expect_sealed_by 10 "the sealed file (the inner timeout's USR1, not the outer ALRM)"
fi

TEST "run --signal ALRM over run --signal USR1, ALRM to the outer: the inner run drains its tree with USR1, 124"
inner_args
tg_start --signal ALRM --timeout 30s -- "$TREEGUARD" run "${INNER_ARGS[@]}" --state-dir "$STATE" \
    --signal USR1 --timeout 25s -- "$TG_FIXTURE" --seal "$T/sealed" sleep
if wait_ready 20; then
    kill -ALRM "$TG_PID"
    tg_wait 60
    expect_exit 124
    expect_sealed_by 10 "the sealed file (the inner run's USR1, not the outer ALRM)"
fi

TEST "outer controller SIGKILLed (--signal ALRM): its guardian (pidns: its init) drains through the inner run, whose tree gets USR1; gone within 2s + grace"
inner_args
tg_start --signal ALRM --kill-after 3s -- "$TREEGUARD" run "${INNER_ARGS[@]}" --state-dir "$STATE" \
    --signal USR1 -- "$TG_FIXTURE" --seal "$T/sealed" sleep
if wait_ready 20; then
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    expect_sealed_by 10 "the sealed file (the inner run's USR1, not the outer ALRM)"
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the runs to be gone (token)" \
        eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))'
fi
