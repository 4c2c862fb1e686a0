# leftovers: members still alive when COMMAND exits by itself are taken down (default, exit stays
# COMMAND's), or, with --leftovers wait, waited for (under the same deadline). Never for ever: with
# -k 0 (timeout's default) they get the bounded grace the man page states, then KILL.

TEST "leftover grandchild, command exits 0: taken down, exit 0"
fx --then exit 0 grandchild
tg_run -- "${FX[@]}"
expect_ready
expect_exit 0
expect_boundary
grep -q '^released ' "$PIDFILE" && fail "a leftover ended by itself?"

TEST "leftover setsid'd daemon, command exits 0: taken down, exit 0"
fx --then exit 0 daemon
tg_run -- "${FX[@]}"
expect_ready
expect_exit 0

TEST "leftovers, command exits 7: taken down, exit 7"
fx --then exit 7 fanout 20
tg_run -- "${FX[@]}"
expect_ready
expect_exit 7

TEST "--leftovers kill (explicit): taken down, exit 0"
fx --then exit 0 setpgid
tg_run --leftovers kill -- "${FX[@]}"
expect_ready
expect_exit 0

# --leftovers wait: the leftover ends by itself when the release file appears (it then logs
# "released PID"); treeguard must still be running at that point and must exit 0 after it.
leftovers_wait() {
    local shape=$1 n_leftovers=$2
    TEST "--leftovers wait, $shape: treeguard waits for them, exit 0"
    fx --release "$T/release" --then exit 0 $shape
    tg_start --leftovers wait --kill-after 15s -- "${FX[@]}"
    wait_ready 20 || return
    local main
    main=$(fixture_main_host_pid)
    # COMMAND has exited and treeguard has reaped it
    wait_for 20 "COMMAND to exit and be reaped" eval '! [[ -e /proc/$main ]]' || return
    # treeguard has seen COMMAND exit. The leftovers must be alive now and must end by the release
    # (a "released" line each), not by a signal; treeguard must not have exited before the release.
    collect_survivors "$PIDFILE" "no-token" # the fixture's processes only (treeguard has the token)
    local alive=${#SURVIVORS[@]}
    # (in a pid namespace the pid file names the namespace's pids: count from here by token)
    [[ $BOUNDARY == pidns ]] && alive=$(namespace_members)
    running "$TG_PID" || fail "treeguard exited (before the release) although leftovers were alive"
    touch "$T/release"
    tg_wait 30
    expect_exit 0
    expect_boundary
    local released
    released=$(grep -c '^released ' "$PIDFILE")
    expect_eq "$released" "$n_leftovers" "leftovers that ended by themselves (the rest were killed)"
    expect_eq "$alive" "$n_leftovers" "leftovers alive after COMMAND exited"
}
leftovers_wait grandchild 1
leftovers_wait daemon 1
leftovers_wait setsid 1
leftovers_wait "fanout 5" 5

TEST "--leftovers wait under a deadline: leftovers taken down at the deadline, exit 124"
fx --then exit 0 grandchild
tg_start --leftovers wait --timeout 2s -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
expect_boundary
expect_elapsed_at_least 1950 "the deadline is 2s"

TEST "--leftovers wait, leftovers ignore TERM, deadline: KILL after --kill-after, exit 124"
fx --then exit 0 ignore-term
tg_start --leftovers wait --timeout 1s --kill-after 500ms -- "${FX[@]}"
wait_ready 20 && tg_wait 30
expect_exit 124
expect_elapsed_at_least 1450 "deadline 1s + kill-after 500ms"

TEST "leftovers, command dies of SIGSEGV: taken down, exit 139"
fx --then die 11 daemon
tg_run -- "${FX[@]}"
expect_ready
expect_exit 139
expect_boundary

TEST "SIGTERM to treeguard while it waits for leftovers: forwarded/drained, exit 143"
fx --release "$T/never" --then exit 0 fanout 3
tg_start --leftovers wait --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    main=$(fixture_main_host_pid)
    if wait_for 20 "COMMAND to exit and be reaped" eval '! [[ -e /proc/$main ]]'; then
        running "$TG_PID" || fail "treeguard exited although leftovers were alive"
        kill -TERM "$TG_PID"
        tg_wait 30
        expect_exit 143
        expect_elapsed_below 15000 "the leftovers die of TERM; KILL only after --kill-after 15s"
    fi
fi

TEST "no leftovers, --leftovers wait: exit 0 at once"
fx exit 0
tg_run --leftovers wait -- "${FX[@]}"
expect_exit 0
expect_elapsed_below 10000 "nothing to wait for"

# -- never for ever. -k 0 (timeout's default: no -k) asks for no forced kill: COMMAND itself is
# waited for without limit, as timeout(1) does, but what it leaves behind gets the man page's
# bounded grace (1 s once COMMAND is gone), then KILL and the proof. The fixture's main exits 3 once
# its four processes that ignore TERM are in place; timeout(1) would return 3 at once.
LEFTOVER_GRACE_MS=1000
# expect_bounded_leftovers STATUS: treeguard ended with STATUS within the bounded grace plus the
# load margin of its start (the fixture's start included), after at least the grace (drain first)
expect_bounded_leftovers() {
    wait_ready 20 || return
    tg_wait $(((LEFTOVER_GRACE_MS + LOAD_MARGIN_MS) / 1000)) || return
    expect_exit "$1"
    expect_elapsed_at_least "$LEFTOVER_GRACE_MS" "the leftovers ignore TERM: KILL only after the grace"
    grep -q '^released ' "$PIDFILE" && fail "a leftover ended by itself?"
}

TEST "timeout 60, no -k: COMMAND exits 3, its leftovers ignore TERM: 3 after the bounded grace"
fx --then exit 3 ignore-term
tg_timeout_start 60 "${FX[@]}"
expect_bounded_leftovers 3

TEST "timeout 0 (no deadline), no -k: the same bound, 3"
fx --then exit 3 ignore-term
tg_timeout_start 0 "${FX[@]}"
expect_bounded_leftovers 3

TEST "run -k 0: COMMAND exits 3, its leftovers ignore TERM: 3 after the bounded grace"
fx --then exit 3 ignore-term
tg_start --kill-after 0 -- "${FX[@]}"
expect_bounded_leftovers 3
expect_boundary
grep -q "^treeguard: COMMAND is gone: what it left behind gets 1s, then the forced kill$" "$T/tg.err" ||
    fail "no -v line saying the leftovers' bounded grace"

# At the deadline COMMAND (main) exits 9 on TERM, its children ignore it: once main is gone they get
# the bounded grace, then KILL. The status is 124: COMMAND did not die of the KILL (a 9 is not a
# SIGKILL), as timeout(1) says.
TEST "timeout 1, no -k: COMMAND exits 9 on TERM, its children ignore it: 124 after the bounded grace"
fx --ignore-term --term-exit 9 fanout 3
tg_timeout_start 1 "${FX[@]}"
wait_ready 20 &&
    tg_wait $(((1000 + LEFTOVER_GRACE_MS + LOAD_MARGIN_MS) / 1000)) &&
    expect_exit 124 &&
    expect_elapsed_at_least $((1000 + LEFTOVER_GRACE_MS)) "deadline 1s, then the leftovers' grace"
