# selftest: the harness and the fixture checked on their own, without treeguard.
# Shows that the checks CAN fail: a leaked process, a leaked cgroup and a bounded wait that times out
# are all detected. TG_SELFTEST_LEAK=1 adds tests that leak on purpose and must be reported FAIL.

# fx_start ARGS...: run the fixture directly (no treeguard) in the background: FX_PID
fx_start() {
    TG_TOKEN=$TOKEN TG_PIDFILE=$PIDFILE "$TG_FIXTURE" exec -- "$TG_FIXTURE" "$@" </dev/null >"$T/fx.out" 2>"$T/fx.err" {POLL_FD}<&- &
    FX_PID=$!
    disown "$FX_PID"
    record_started "$FX_PID"
}
fx_wait_ready() {
    wait_for 20 "fixture ready" fixture_ready
}
pid_lines() {
    local n=0 a b rest
    while read -r a b rest; do
        [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] && n=$((n + 1))
    done <"$PIDFILE"
    echo "$n"
}
nth_pid() { sed -n "${1}p" "$PIDFILE" | cut -d' ' -f1; }
sig_ignored() { # sig_ignored PID SIGNUM
    local mask
    mask=$(status_field "$1" SigIgn) || return 1
    (((16#$mask >> ($2 - 1)) & 1))
}
# reap_fx: kill the direct fixture's tree and check the harness's own kill worked
reap_fx() {
    kill_survivors "$PIDFILE" "$TOKEN"
    collect_survivors "$PIDFILE" "$TOKEN"
    expect_eq "${#SURVIVORS[@]}" 0 "survivors after the harness's own cleanup"
}

for shape in "grandchild 2" "orphan 3" "setsid 2" "daemon 3" "setpgid 2" "ignore-term 5" \
    "stopped 2" "fanout:500 501" "fanout-setsid:20 21" "chain:100 101"; do
    mode=${shape% *}
    want=${shape#* }
    TEST "fixture shape ${mode/:/ } comes up ($want processes) and is fully detected"
    fx_start ${mode/:/ }
    fx_wait_ready
    expect_eq "$(pid_lines)" "$want" "pid lines"
    collect_survivors "$PIDFILE" "$TOKEN"
    want_alive=$want
    case $mode in orphan | daemon) want_alive=$((want - 1)) ;; esac
    expect_eq "${#SURVIVORS[@]}" "$want_alive" "live processes found by the survivor check"
    case $mode in
        setsid)
            p=$(nth_pid 2); proc_stat "$p"; expect_eq "$PS_SID" "$p" "setsid child's session" ;;
        setpgid)
            p=$(nth_pid 2); proc_stat "$p"; expect_eq "$PS_PGID" "$p" "setpgid child's group" ;;
        daemon)
            m=$(nth_pid 2); p=$(nth_pid 3); proc_stat "$p"
            expect_eq "$PS_SID" "$m" "daemon's session (the middle's)"
            [[ $PS_PPID != "$m" ]] || fail "daemon still has the middle as parent" ;;
        stopped)
            p=$(nth_pid 2); proc_stat "$p"; expect_eq "$PS_STATE" T "stopped member's state" ;;
        ignore-term)
            for k in 1 2 3 4 5; do
                sig_ignored "$(nth_pid $k)" 15 || fail "process $k does not ignore TERM"
            done ;;
    esac
    reap_fx
done

TEST "fixture forker keeps forking setsid'd children"
fx_start forker
fx_wait_ready
n1=$(pid_lines)
wait_for 10 "the forker to fork 50 more" eval '(($(pid_lines) > n1 + 50))'
p=$(nth_pid 3); proc_stat "$p"; expect_eq "$PS_SID" "$p" "forked child's session"
reap_fx

TEST "fixture exit and die report the status"
"$TG_FIXTURE" exit 42; expect_eq $? 42 "exit 42"
{ "$TG_FIXTURE" die 15; } 2>/dev/null; expect_eq $? 143 "die 15"
{ "$TG_FIXTURE" die 3; } 2>/dev/null; expect_eq $? 131 "die 3 (no core)"
TG_PIDFILE=$PIDFILE "$TG_FIXTURE" --release "$T/rel" --then exit 7 grandchild; expect_eq $? 7 "then exit 7"
: >"$T/rel"
wait_for 10 "released grandchild" grep -q '^released ' "$PIDFILE"

TEST "survivor check detects a leaked double-fork daemon"
fx_start --then exit 0 daemon
wait_for 20 "main to exit" eval '! running $FX_PID'
collect_survivors "$PIDFILE" "$TOKEN"
expect_eq "${#SURVIVORS[@]}" 1 "survivors found after main exited"
expect_eq "${SURVIVORS[0]%%:*}" "$(nth_pid 3)" "the survivor is the daemon"
reap_fx

TEST "survivor check compares start times (a recycled pid is not a survivor)"
s=${SENTINELS[0]#*:}
spid=${s%%:*} sstart=${s#*:}
echo "$spid $((sstart + 1))" >"$T/fake.pids"
collect_survivors "$T/fake.pids" "no-such-token"
expect_eq "${#SURVIVORS[@]}" 0 "survivors with a wrong start time"
echo "$spid $sstart" >"$T/fake.pids"
collect_survivors "$T/fake.pids" "no-such-token"
expect_eq "${#SURVIVORS[@]}" 1 "survivors with the right start time"

TEST "token scan finds a process the pid file does not name"
TG_TOKEN=$TOKEN TG_PIDFILE=$T/other.pids "$TG_FIXTURE" sleep </dev/null >/dev/null 2>&1 {POLL_FD}<&- &
FX_PID=$!
disown "$FX_PID"
record_started "$FX_PID"
wait_for 10 "unrecorded sleeper" has_line "$T/other.pids" ready
collect_survivors "$PIDFILE" "$TOKEN"
expect_eq "${#SURVIVORS[@]}" 1 "survivors found by token"
expect_eq "${SURVIVORS[0]%%:*}" "$FX_PID" "the token survivor"
reap_fx

TEST "members-inside check detects a COMMAND outside the boundary"
fx_start grandchild
fx_wait_ready
expect_members_inside
[[ $TEST_FAIL == "members outside the boundary:"* ]] || fail "not detected: '$TEST_FAIL'"
[[ $TEST_FAIL == "members outside the boundary:"* ]] && TEST_FAIL=""
reap_fx

TEST "a bounded wait times out and fails the test"
wait_for 1 "something that never happens" false
expect_eq "$TEST_FAIL" "timed out after 1s waiting for something that never happens" "wait_for's failure"
TEST_FAIL=""

if [[ $BOUNDARY == cgroup ]]; then
    TEST "leftover cgroup under the test's parent is detected"
    mkdir "$CG_TEST/leftover"
    cg_children "$CG_TEST"
    expect_eq "${#CG_CHILDREN[@]}" 1 "child cgroups seen"
    rmdir "$CG_TEST/leftover"
fi

if [[ ${TG_SELFTEST_LEAK:-0} == 1 ]]; then
    TEST "deliberate leak of a setsid'd daemon (must be reported FAIL)"
    fx_start --then exit 0 daemon
    wait_for 20 "main to exit" eval '! running $FX_PID'
    TEST "deliberate leak of a stopped member (must be reported FAIL)"
    fx_start stopped
    fx_wait_ready

    if [[ $BOUNDARY == cgroup ]]; then
        TEST "deliberate leak of a cgroup (must be reported FAIL)"
        mkdir "$CG_TEST/leaked"
    fi

    TEST "deliberately kill the sentinel (must be reported FAIL, and the next tests too)"
    s=${SENTINELS[0]#*:}
    kill -KILL "${s%%:*}"
    # SIGKILL takes effect when the sentinel next runs: until then /proc still shows it alive, and on
    # a loaded machine the end-of-test check could look first (CI saw it). Wait until it is dead.
    sentinel_pid=${s%%:*} sentinel_start=${s#*:}
    wait_for 10 "the killed sentinel to die" eval '! alive_as $sentinel_pid $sentinel_start'
fi
