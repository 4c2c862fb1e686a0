# exit_codes: COMMAND's status passes through (sampled 0..255), death by signal N gives 128+N,
# 126 not executable, 127 not found, 124 deadline, --preserve-status.

for code in 0 1 2 3 42 99 100 123 124 125 126 127 128 129 200 254 255; do
    TEST "exit status $code passes through"
    fx exit "$code"
    tg_run -- "${FX[@]}"
    expect_exit "$code"
    expect_boundary
done

for sig in 1:HUP 2:INT 3:QUIT 6:ABRT 9:KILL 10:USR1 11:SEGV 13:PIPE 15:TERM; do
    n=${sig%%:*}
    TEST "command dies of SIG${sig#*:} -> $((128 + n))"
    fx die "$n"
    tg_run -- "${FX[@]}"
    expect_exit $((128 + n))
    expect_boundary
done

TEST "command not found (absolute path) -> 127"
tg_run -- "$T/no-such-program"
expect_exit 127

TEST "command not found (PATH lookup) -> 127"
# a PATH without directories uid 65534 cannot search (execvp would report EACCES: 126)
PATH=/usr/local/bin:/usr/bin:/bin tg_run -- tg-no-such-command-$RANDOM
expect_exit 127

TEST "command not executable (mode 644 file) -> 126"
printf '#!/bin/sh\nexit 0\n' >"$T/not-executable"
chmod 644 "$T/not-executable"
[[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$T/not-executable"
tg_run -- "$T/not-executable"
expect_exit 126

TEST "command is a directory -> 126"
mkdir -p "$T/a-directory"
tg_run -- "$T/a-directory"
expect_exit 126

TEST "deadline passes -> 124"
fx sleep
tg_start --timeout 1s -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
expect_boundary
expect_elapsed_at_least 950 "the deadline is 1s"

TEST "deadline given in ms (500ms) -> 124"
fx sleep
tg_start --timeout 500ms -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
expect_elapsed_at_least 450 "the deadline is 500ms"

TEST "deadline not reached: the command's own status (5)"
fx exit 5
tg_run --timeout 30s -- "${FX[@]}"
expect_exit 5
expect_elapsed_below 10000 "the command exits at once"

TEST "--timeout 0 means no deadline: the command's own status (6)"
fx exit 6
tg_run --timeout 0 -- "${FX[@]}"
expect_exit 6

TEST "deadline, command catches TERM and exits 3 -> 124"
fx --term-exit 3 sleep
tg_start --timeout 1s -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
grep -q "^sig 15 " "$PIDFILE" || fail "the command never received TERM"

TEST "--preserve-status, command catches TERM and exits 3 -> 3"
fx --term-exit 3 sleep
tg_start --timeout 1s --preserve-status -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 3
expect_boundary

TEST "--preserve-status, command dies of TERM -> 143"
fx sleep
tg_start --timeout 1s --preserve-status -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 143

TEST "--preserve-status, command ignores TERM, killed after --kill-after -> 137"
fx --ignore-term sleep
tg_start --timeout 1s --kill-after 500ms --preserve-status -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 137
expect_elapsed_at_least 1450 "KILL only after --kill-after 500ms"

TEST "-v names the forced kill as it is done (process-group: to each member by pidfd, never the group)"
fx --ignore-term sleep
tg_start -v --timeout 300ms --kill-after 300ms -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
force_line=$(grep -m1 "^treeguard: force: " "$T/tg.err")
case $BOUNDARY in
    process-group) [[ $force_line =~ ^"treeguard: force: SIGKILL to each member of pgid "[0-9]+", frozen first, by pidfd"$ ]] ;;
    cgroup) [[ $force_line == "treeguard: force: cgroup.kill /"* ]] ;;
    *) [[ -n $force_line ]] ;;
esac || fail "-v's force line: '$force_line'"

TEST "state directory removed mid-run: made again, the authority and the record in it, exit 124 (not 122)"
fx --ignore-term sleep
tg_start --keep-records --timeout 5s --kill-after 300ms -- "${FX[@]}"
if wait_ready 20; then
    rm -rf "$STATE"
    tg_wait 30
    expect_exit 124
    kept=$(find "$STATE" -name '*.json' 2>/dev/null | head -1)
    if [[ -z $kept ]]; then
        fail "no record in the state directory (stderr:$(tg_stderr_excerpt))"
    else
        # the forced kill's authority (beside a pid namespace's standing kill-on-close one)
        forced='[.authority[] | select(.action | endswith("(kill-on-close)") | not)] | length'
        expect_eq "$(jq -r ".disposition + \" \" + ($forced | tostring)" "$kept")" "pass 1" "the record made again"
        expect_eq "$(stat -c %a "$STATE")" 700 "the state directory's mode"
    fi
fi

TEST "a stopped controller keeps its deadline pending (as timeout); its guardian does not act; continued: 124"
# README's residual: the deadline is the controller's, and a stopped controller (SIGSTOP, Ctrl-Z)
# holds it until continued; the guardian acts on the controller's death, never on its stop.
fx sleep
tg_start --keep-records --timeout 1s --kill-after 300ms -- "${FX[@]}"
if wait_ready 20; then
    kill -STOP "$TG_PID"
    wait_for 10 "treeguard to be stopped" eval '[[ $(awk "{print \$3}" "/proc/$TG_PID/stat" 2>/dev/null) == T ]]'
    # the deadline (1 s after the start) passes while treeguard is stopped
    wait_for 20 "the deadline to pass" eval 'now_ms; ((NOW_MS > TG_T0 + 1500))'
    main=$(fixture_main_host_pid)
    [[ -n $main && $main != gone && -d /proc/$main ]] ||
        fail "COMMAND (${main:-no pid}) did not live on while treeguard was stopped"
    kept=$(find "$STATE" -maxdepth 1 -name '*.json' 2>/dev/null | head -1)
    [[ -n $kept ]] && expect_eq "$(jq -r .disposition "$kept")" pending "the record while treeguard is stopped"
    kill -CONT "$TG_PID"
    tg_wait 30
    expect_exit 124
fi

TEST "--preserve-status, command exits 9 with a leftover, no deadline -> 9"
fx --then exit 9 setsid
tg_run --preserve-status -- "${FX[@]}"
expect_exit 9

TEST "-t/-k short options: deadline -> 124"
fx --ignore-term sleep
tg_start -t 1s -k 300ms -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
expect_elapsed_at_least 1250 "KILL only after -k 300ms"

TEST "--signal INT as the graceful signal: the command gets INT on the deadline"
fx --log-signals sleep
tg_start --timeout 1s --signal INT -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
grep -q "^sig 2 " "$PIDFILE" || fail "the command never received INT (pid file: $(tr '\n' ' ' <"$PIDFILE"))"

if [[ $BOUNDARY == cgroup ]]; then
    TEST "--cgroup-parent relative to the cgroup2 mount works like the absolute path"
    fx --then exit 0 setsid
    rel=${CG_TEST#"$CG_MOUNT"}
    # the arm passes --boundary cgroup --cgroup-parent ABSOLUTE; a later --cgroup-parent RELATIVE wins
    # only if the CLI takes the last one, so give the whole command line here instead
    saved=("${BOUNDARY_ARGS[@]}")
    BOUNDARY_ARGS=(--boundary cgroup --cgroup-parent "$rel")
    tg_run -- "${FX[@]}"
    BOUNDARY_ARGS=("${saved[@]}")
    expect_exit 0
    expect_boundary
fi
