# evidence_report (issue 3, contract 5): --report FILE, a JSON document per run.
#  - a forced run (TERM-ignoring tree with a setsid'd child, treeguard stopped by a stop request,
#    TERM twice): the
#    authority entry, forced_kill "sent", the setsid'd child among the escapes (process-group),
#    survivors empty, disposition pass, exit_code = treeguard's exit;
#  - a clean run: no authority, forced_kill "not needed", disposition pass, the command's code.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

R() { jq -r "$@" "$T/report.json" 2>/dev/null; }

TEST "--report, forced kill with a setsid'd escapee: escapes, authority, survivors empty, pass"
fx --ignore-term setsid
tg_start --kill-after 200ms --report "$T/report.json" -- "${FX[@]}"
if wait_ready 20 && tg_stop TERM; then
    tg_wait 30
    expect_exit 143
    if [[ ! -s $T/report.json ]]; then
        fail "no report written"
    else
        expect_eq "$(R .format)" "treeguard-report/1" "format"
        main=$(sed -n 1p "$PIDFILE") escapee=$(sed -n 2p "$PIDFILE")
        expect_eq "$(R .forced_kill)" sent "forced_kill"
        expect_eq "$(R '.authority|length>0')" true "authority entries present"
        [[ $(R '.authority[0].action') =~ ^(SIGKILL|cgroup.kill)$ ]] || fail "authority action '$(R '.authority[0].action')'"
        expect_eq "$(R '.survivors|length')" 0 "survivors"
        expect_eq "$(R .disposition)" pass "disposition"
        expect_eq "$(R .exit_code)" "$TG_RC" "exit_code vs treeguard's exit"
        expect_eq "$(R --arg p "${main%% *}" '[.members[]|select((.pid|tostring)==$p)]|length')" 1 "COMMAND among the members"
        esc=$(R "[.escapes[]|select(.pid==${escapee%% *} and .start_time==${escapee#* })]|length")
        if [[ $BOUNDARY == process-group ]]; then
            expect_eq "$esc" 1 "the setsid'd child ${escapee%% *} among the escapes ($(R -c .escapes))"
        fi
        note "escapes $(R -c '[.escapes[].pid]'), authority $(R -c '[.authority[].action]'), timeline events $(R '.timeline|length')"
    fi
fi

TEST "--report, clean run: no authority, forced_kill not needed, pass, the command's code"
fx exit 3
tg_run --report "$T/report.json" -- "${FX[@]}"
expect_exit 3
if [[ -s $T/report.json ]]; then
    expect_eq "$(R .forced_kill)" "not needed" "forced_kill"
    expect_eq "$(R '.authority|length')" 0 "authority entries"
    expect_eq "$(R .disposition)" pass "disposition"
    expect_eq "$(R .exit_code)" 3 "exit_code"
    expect_eq "$(R '.survivors|length')" 0 "survivors"
else
    fail "no report written"
fi
