# signals (DESIGN.md [signals], [lifecycle]): a signal sent to treeguard is passed to COMMAND once
# and the run goes on, as without treeguard; the drain starts when COMMAND exits (its leftovers), or
# on a second interrupt after COMMAND was already sent one (a stop request), and treeguard then
# exits 128+N. The harness sends signals to treeguard's pid only.

main_got_signal() { grep -q "^sig $1 $(fixture_main_pid)\$" "$PIDFILE"; }

for sig in 15:TERM 2:INT 1:HUP 3:QUIT; do
    n=${sig%%:*} name=${sig#*:}
    TEST "SIG$name to treeguard: forwarded, COMMAND dies of it, its leftovers (setsid'd daemon) drain, exit $((128 + n))"
    fx --log-signals daemon
    tg_start --kill-after 15s -- "${FX[@]}"
    if wait_ready 20; then
        expect_members_inside
        kill -"$name" "$TG_PID"
        tg_wait 30
        expect_exit $((128 + n))
        expect_boundary
        main_got_signal "$n" || fail "COMMAND never received SIG$name (pid file: $(grep -v '^[0-9]' "$PIDFILE" | tr '\n' ' '))"
        expect_elapsed_below 15000 "the tree dies of TERM; KILL only after --kill-after 15s"
    fi
done

TEST "SIGTERM to treeguard with a 500-process fanout: exit 143, all gone"
fx --log-signals fanout 500
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 30; then
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
    main_got_signal 15 || fail "COMMAND never received TERM"
fi

if [[ $BOUNDARY == cgroup ]]; then
    TEST "a drain with fewer file descriptors than members: TERM still reaches all 500"
    # The cgroup boundary pins each member with a pidfd before it signals it, as many at once as
    # the descriptor limit allows; under a hard limit of 300 that is batches. A member left out
    # would live on to --kill-after 60s, past tg_wait's 30s.
    fx --log-signals fanout 500
    TG_WRAP=(prlimit --nofile=300:300 --)
    tg_start --kill-after 60s -- "${FX[@]}"
    TG_WRAP=()
    if wait_ready 30; then
        kill -TERM "$TG_PID"
        tg_wait 30
        expect_exit 143
        grep -qE "^treeguard: (force: |.*killed )" "$T/tg.err" && fail "members were force-killed: TERM did not reach them all"
    fi
fi

TEST "SIGINT to treeguard, COMMAND dies of it, its grandchild drains: exit 130"
fx --term-exit 0 --log-signals grandchild
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    kill -INT "$TG_PID"
    tg_wait 30
    expect_exit 130
fi

# forwarded_line SIG: treeguard -v said it passed SIG on
forwarded_line() { grep -q "^treeguard: forwarded $1 to COMMAND\$" "$T/tg.err"; }

TEST "SIGTERM twice to treeguard while members ignore TERM: the second drains, KILL after --kill-after, exit 143"
fx --log-signals ignore-term
tg_start --kill-after 1s -- "${FX[@]}"
if wait_ready 20; then
    kill -TERM "$TG_PID"
    if wait_for 20 "treeguard to pass TERM on" forwarded_line TERM; then
        running "$TG_PID" || fail "treeguard ended on the first TERM (COMMAND ignores it)"
        now_ms; t_sig=$NOW_MS
        kill -TERM "$TG_PID"
        tg_wait 30
        expect_exit 143
        now_ms
        ((NOW_MS - t_sig >= 950)) || fail "ended $((NOW_MS - t_sig))ms after the second TERM, before --kill-after 1s"
    fi
fi

# caught_count SIG: how many times COMMAND logged catching SIG
caught_count() { grep -c "^caught $1 " "$PIDFILE"; }

for sig in 2:INT 1:HUP 3:QUIT; do
    n=${sig%%:*} name=${sig#*:}
    TEST "SIG$name to treeguard, COMMAND handles it: passed on once, the run goes on, COMMAND's own exit (7)"
    fx --catch-signals --release "$T/release" --release-exit 7 grandchild
    tg_start --kill-after 15s -- "${FX[@]}"
    if wait_ready 20; then
        kill -"$name" "$TG_PID"
        if wait_for 20 "COMMAND to catch SIG$name" eval '(($(caught_count $n) >= 1))'; then
            # treeguard forwards before it could start a drain: were it draining, TERM would be on its way
            wait_for 20 "treeguard to log the forward" forwarded_line "$name"
            running "$TG_PID" || fail "treeguard ended after SIG$name although COMMAND handled it"
            main=$(fixture_main_host_pid)
            alive_as "$main" "$(start_of "$main")" || fail "COMMAND is gone after handling SIG$name"
            grep -q "^treeguard: drain" "$T/tg.err" && fail "treeguard started a drain on one SIG$name"
            : >"$T/release"
            tg_wait 30
            expect_exit 7
            expect_eq "$(caught_count $n)" 1 "times COMMAND got SIG$name"
        fi
    fi
done

TEST "a second SIGINT after COMMAND handled the first is a stop request: drain, exit 130"
fx --catch-signals grandchild
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    kill -INT "$TG_PID"
    if wait_for 20 "COMMAND to catch INT" eval '(($(caught_count 2) >= 1))'; then
        kill -INT "$TG_PID"
        tg_wait 30
        expect_exit 130
        expect_eq "$(caught_count 2)" 1 "times COMMAND got INT"
        expect_elapsed_below 15000 "the tree dies of TERM; KILL only after --kill-after 15s"
    fi
fi

TEST "a second SIGINT during the drain skips the rest of the grace period"
fx --log-signals ignore-term
tg_start --kill-after 60s -- "${FX[@]}"
if wait_ready 20; then
    main=$(fixture_main_host_pid)
    kill -INT "$TG_PID"
    # COMMAND died of the forwarded INT and treeguard reaped it: it is now draining the rest
    if wait_for 20 "COMMAND to die of the forwarded INT and be reaped" eval '! [[ -e /proc/$main ]]'; then
        now_ms; t_sig=$NOW_MS
        kill -INT "$TG_PID"
        tg_wait 90
        expect_exit 130
        now_ms
        ((NOW_MS - t_sig < 60000)) || fail "took $((NOW_MS - t_sig))ms after the second INT (grace was 60s)"
    fi
fi

TEST "SIGTERM to treeguard with a stopped member: TERM still takes effect, exit 143"
fx --log-signals stopped
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
    expect_elapsed_below 15000 "the stopped member must die of TERM+CONT, not wait for KILL after --kill-after 15s"
fi

TEST "SIGTERM to treeguard under a deadline that has not passed: 143, not 124"
fx --log-signals grandchild
tg_start --timeout 60s -- "${FX[@]}"
if wait_ready 20; then
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
fi

if [[ $BOUNDARY == cgroup ]]; then
    # dead_orphans_left: how many of the fixture's orphans (pid file lines 3 on: main, the middle,
    # then them) still have a /proc entry, zombie or not, with their start time
    dead_orphans_left() {
        local pid start n=0
        while read -r pid start; do
            proc_stat "$pid" && [[ $PS_START == "$start" ]] && n=$((n + 1))
        done < <(sed -n '3,$p' "$PIDFILE" | grep -E '^[0-9]+ [0-9]+$')
        ORPHANS_LEFT=$n
        ((n == 0))
    }
    TEST "a drain without end reaps the orphans that died of it while a member lives on"
    # During a stop the cgroup boundary reaps orphans only at intervals (1s) and once the leaf is
    # empty, since each waitpid(-1) walks every child. Here main ignores TERM, so with -k 0 the
    # leaf never empties: the 30 orphans, dead of the drain's TERM, must still be reaped.
    fx --main-ignore-term orphan 30
    tg_start --kill-after 0 -- "${FX[@]}"
    if wait_ready 20; then
        kill -TERM "$TG_PID"  # passed on to main, which ignores it
        if wait_for 20 "treeguard to pass TERM on" forwarded_line TERM; then
            kill -TERM "$TG_PID"  # a stop request: TERM to every member, no end to the grace
            wait_for 20 "the drain to start" grep -q "^treeguard: drain: " "$T/tg.err" &&
                { wait_for 10 "treeguard to reap the orphans" dead_orphans_left ||
                    fail "$ORPHANS_LEFT of 30 orphans not reaped"; }
            running "$TG_PID" || fail "treeguard ended while main (ignoring TERM) was alive"
        fi
        kill -INT "$TG_PID"  # cuts the grace short: main is killed
        tg_wait 30
        expect_exit 143
    fi

    TEST "a member root moves out of the leaf is outside the boundary: never signalled"
    # DESIGN.md [job]: treeguard signals only what is inside its boundary. The fixture's child is
    # moved by this test (root) into a cgroup of the test's own; TERM to treeguard then drains the
    # leaf (main dies of TERM) and must leave the moved process alone.
    fx grandchild
    tg_start --kill-after 200ms -- "${FX[@]}"
    if wait_ready 20; then
        moved=$(sed -n 2p "$PIDFILE") moved_pid=${moved%% *} moved_start=${moved#* }
        mkdir "$CG_TEST/elsewhere"
        echo "$moved_pid" >"$CG_TEST/elsewhere/cgroup.procs" || fail "could not move pid $moved_pid"
        kill -TERM "$TG_PID"
        tg_wait 30
        expect_exit 143
        alive_as "$moved_pid" "$moved_start" ||
            fail "the process moved out of the leaf was signalled (state ${PS_STATE:-gone})"
        # it is this test's now: remove it, then the cgroup the test made
        alive_as "$moved_pid" "$moved_start" && kill -KILL "$moved_pid"
        wait_for 5 "the moved process to die" eval '! alive_as $moved_pid $moved_start'
        wait_for 5 "the test's cgroup to empty" eval '! cg_populated "$CG_TEST/elsewhere"' &&
            rmdir "$CG_TEST/elsewhere"
    fi
fi

# ---------------------------------------------------------------- ending by COMMAND's signal
# DESIGN.md [exit-codes]: when COMMAND died of signal N, or N stopped the run, treeguard ends by N
# itself after its teardown (as timeout(1) does), so that the shell sees what it would see without
# treeguard.

TEST "COMMAND dies of SIGSEGV: treeguard dies of it too (the shell says 'Segmentation fault'), no core of its own, report 139"
# The fixture dies without a core of its own; a core file in treeguard's cwd could only be
# treeguard's (core_pattern here is a plain file name when the check applies).
core_check=0
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
[[ -n $pattern && $pattern != "|"* && $pattern != /* ]] && core_check=1
fx die 11
TG_WRAP=(bash -c 'ulimit -c unlimited 2>/dev/null; cd "$0" || exit 99; "$@"; exit $?' "$T")
tg_start --report "$T/report.json" -- "${FX[@]}"
TG_WRAP=()
tg_wait 30
expect_exit 139
grep -q "Segmentation fault" "$T/tg.err" ||
    fail "the shell did not see treeguard die of SIGSEGV (stderr:$(tg_stderr_excerpt))"
grep -Eq '"exit_code": *139' "$T/report.json" || fail "the report does not say exit_code 139"
if ((core_check)); then
    cores=("$T"/core*)
    ((${#cores[@]} == 0)) || fail "treeguard dumped core: ${cores[*]}"
else
    note "core_pattern '$pattern' is not a file name in the cwd: the no-core check does not apply"
fi

TEST "Ctrl-C stops a shell loop of wrapped commands: INT to the loop's process group ends it at once"
# for i in 1 2 3; do treeguard run ...; done, in a process group of its own (setsid: the test's,
# never the harness's), as the terminal's foreground job. bash goes on with the loop unless its
# child died of SIGINT; every iteration's COMMAND writes "ready".
ready_count() { grep -c '^ready$' "$PIDFILE"; }
fx sleep
TG_WRAP=(setsid bash -c 'for i in 1 2 3; do "$@"; done' loop)
tg_start -t 5s -- "${FX[@]}"
TG_WRAP=()
if wait_ready 20; then
    proc_stat "$TG_PID"
    if [[ $PS_PGID != "$TG_PID" ]]; then
        fail "the loop (pid $TG_PID) does not lead its own process group (pgid $PS_PGID)"
    else
        kill -INT -- -"$TG_PID"
        tg_wait 30
        expect_exit 130
        expect_eq "$(ready_count)" 1 "iterations that started"
    fi
fi

TEST "a CI runner's cancel (INT, TERM 7.5s later, KILL 2.5s after) to treeguard's group: with -k 1s, the report and the final line come before the KILL"
# GitHub Actions cancels a step so: SIGINT to its process group, SIGTERM 7.5s later, SIGKILL 2.5s
# after that. COMMAND handles INT and ignores TERM (the worst case): the TERM is the stop request,
# and its drain must end within the 2.5s left. The intervals are the runner's, not a
# synchronisation; the group is the test's own (setsid: treeguard leads it).
runner_wait() { read -r -t "$1" -u "$POLL_FD" _ || true; }
fx --catch-signals --main-ignore-term grandchild
TG_WRAP=(setsid)
tg_start -k 1s --report "$T/report.json" -- "${FX[@]}"
TG_WRAP=()
if wait_ready 20; then
    proc_stat "$TG_PID"
    if [[ $PS_PGID != "$TG_PID" ]]; then
        fail "treeguard (pid $TG_PID) does not lead its own process group (pgid $PS_PGID)"
    else
        kill -INT -- -"$TG_PID"
        runner_wait 7.5
        running "$TG_PID" || fail "treeguard ended on the INT (COMMAND handles it)"
        kill -TERM -- -"$TG_PID"
        runner_wait 2.5
        if running "$TG_PID"; then
            fail "treeguard still running 2.5s after the TERM: the runner's KILL lands first"
            kill -KILL -- -"$TG_PID"
        fi
        tg_wait 10
        expect_exit 143
        grep -Eq '"exit_code": *143' "$T/report.json" 2>/dev/null ||
            fail "no report saying exit_code 143 before the KILL"
        last=$(tail -n 1 "$T/tg.err")
        # main ignores TERM: it is the one killed, by name, after the 1s grace
        [[ $last =~ ^"treeguard: stopped on TERM: killed 1 that resisted TERM for 1s: tg_fixture (pid "[0-9]+") (COMMAND: " ]] ||
            fail "the last stderr line does not say the run was stopped on TERM and who was killed: '$last'"
    fi
fi
