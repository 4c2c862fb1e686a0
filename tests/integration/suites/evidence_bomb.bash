# evidence_bomb (DESIGN.md [guardian]): a fork bomb whose every process makes a
# session of its own, at its pids.max, when the controller is SIGKILLed. The guardian must outrun
# it: it runs at real-time priority (as root) from its start, or one walk of the bomb's tree while
# the controller lives takes it seconds at a 1/1000 share of the CPU, and it never acts in time.
# It drains first (TERM, of which the processes it reaches die, while the rest fork on; then the
# run's grace, 1 s here), then freezes and kills what is left (freeze_and_kill), and records pass. Inside a pids.max cgroup of the
# test's own (a v1 pids hierarchy, or v2 with the pids controller): without one the suite is
# skipped.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
(($(id -u) == 0)) || skip_suite "the bomb needs a pids cgroup of its own, and the guardian real-time priority: needs root"

TEST "controller SIGKILLed under a setsid fork bomb at its pids.max: the guardian takes it down; pass"
pids_cgroup 1000 || skip_suite "no pids cgroup to bound the bomb with: $PIDS_WHY"
in_pids_cgroup
fx_bomb bomb setsid
# the harness ahead of the bomb's thousand sessions, or it cannot look in time (session_ahead)
session_ahead
tg_start --kill-after 1s -- "${FX[@]}"
if wait_ready 20 && { guardian_of_run || fail "treeguard -v named no guardian pid"; }; then
    # the bomb at its limit: every slot taken, every process forking
    wait_for 20 "the bomb to reach pids.max" eval '(($(cat "$PIDS_CG/pids.current") >= 990))'
    kill -KILL "$TG_PID"
    now_ms; t0=$NOW_MS
    tg_wait 120
    expect_exit 137
    wait_for $((1 + 30)) "the guardian to finish (grace 1s)" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    now_ms
    note "the guardian finished $((NOW_MS - t0))ms after the SIGKILL; $(member_count) bomb processes logged"
    pids_cgroup_empty || fail "the bomb survived the guardian: $(wc -w <"$PIDS_CG/cgroup.procs") process(es) left"
    the_record && expect_eq "$(rec .disposition)" pass "the record's disposition (notes $(rec -c .notes))"
fi
TG_PREFIX=()
# the bomb may be left over (a failure): kill what is in our pids cgroup, by its own pids list
if ! pids_cgroup_empty; then
    for round in 1 2 3 4 5 6 7 8 9 10; do
        # (a cgroup v2 cgroup.procs shows 0 for a process outside our pid namespace: kill 0 would
        # signal our own process group, so only pids above 0)
        # (read whole, never by a `while read` loop: one of those reads each line after an lseek, in
        # a text the kernel makes anew, and can read a pid of a set that changed cut short)
        pids=$(<"$PIDS_CG/cgroup.procs")
        for pid in $pids; do ((pid > 0)) && kill -STOP "$pid" 2>/dev/null; done
        pids=$(<"$PIDS_CG/cgroup.procs")
        for pid in $pids; do ((pid > 0)) && kill -KILL "$pid" 2>/dev/null; done
        pids_cgroup_empty && break
        poll_sleep
    done
fi
pids_cgroup_remove
session_restore
