# shapes: every process-tree shape, at the deadline (SIGALRM once the shape is in place) and, where
# the command can end by itself, without a timeout (the rest of the shape is then a leftover and is taken down, exit 0).
# Every test ends (in the harness) with: no survivor by pid+start time or token, no cgroup left under
# the test's parent, the sentinel alive.
# Time limits come from the configured deadline and grace: a shape that TERM ends must end before
# deadline + --kill-after (when the forced kill would have ended it); one that ignores TERM must last
# at least that long, and end within TG_LOAD_MARGIN_MS (default 10 s, for a loaded host) after it.
# TG_SHAPES="MODE ...": only the shapes of these fixture modes (the VM lane's guest, under TCG, is too
# slow to fork 500 children within a 2 s deadline); unset: every shape

# shape NAME KILL_AFTER TERM_WORKS MODE [ARG]
#   KILL_AFTER  the --kill-after given to treeguard
#   TERM_WORKS  1: every member dies of the graceful TERM, so the run must end long before KILL_AFTER;
#               0: members ignore TERM, so the run must last at least KILL_AFTER past the stop cause
shape() {
    local name=$1 kill_after=$2 term_works=$3
    shift 3
    [[ -z ${TG_SHAPES:-} || " $TG_SHAPES " == *" $1 "* ]] || return 0
    local ka_ms
    case $kill_after in *ms) ka_ms=${kill_after%ms} ;; *s) ka_ms=$((${kill_after%s} * 1000)) ;; esac

    # The deadline comes once the shape is in place: SIGALRM is "the deadline, now" (as for
    # timeout). A fixed --timeout 2s raced the forks: beside busy builds, 500 children, a 100-deep
    # chain or 200 setsid'd children were not in place within 2 s (exit 124 before "ready"). The
    # deadline's timer itself is the exit_codes suite's; elapsed times here count from the ALRM.
    TEST "$name, at the deadline"
    fx --then sleep "$@"
    tg_start --timeout 1h --kill-after "$kill_after" -- "${FX[@]}"
    if wait_ready 60; then
        expect_members_inside
        kill -ALRM "$TG_PID"
        now_ms
        TG_T0=$NOW_MS
        tg_wait 60
        expect_exit 124
        expect_boundary
        if ((term_works)); then
            expect_elapsed_below "$ka_ms" "TERM alone must end this shape; KILL only after $kill_after"
        else
            expect_elapsed_at_least $((ka_ms - 50)) "members ignore TERM: KILL only after --kill-after $kill_after"
            expect_elapsed_below $((ka_ms + LOAD_MARGIN_MS)) "KILL after --kill-after $kill_after"
        fi
    fi

    TEST "$name, command exits 0 by itself, the rest is taken down"
    fx --then exit 0 "$@"
    tg_run --kill-after "$kill_after" -- "${FX[@]}"
    expect_ready
    expect_exit 0
    expect_boundary
    if ((term_works)); then
        expect_elapsed_below "$ka_ms" "TERM alone must end the leftovers; KILL only after $kill_after"
    else
        expect_elapsed_at_least $((ka_ms - 50)) "leftovers ignore TERM: KILL only after --kill-after $kill_after"
    fi
}

shape "background grandchild" 15s 1 grandchild
shape "orphaned grandchild (middle exited)" 15s 1 orphan
shape "setsid child" 15s 1 setsid
shape "double-fork daemon (fork, setsid, fork, middle exits)" 15s 1 daemon
shape "child calling setpgid(0,0)" 15s 1 setpgid
shape "members ignoring TERM" 500ms 0 ignore-term
shape "member stopped with SIGSTOP" 15s 1 stopped
shape "member whose main thread called pthread_exit (setsid, ignores TERM, a worker thread runs)" 500ms 0 thread-leader
shape "member in uninterruptible sleep (a vfork parent, ignores TERM)" 500ms 0 vfork-parent
shape "forker (keeps forking setsid'd children while killed, ignores TERM)" 1s 0 forker
shape "500 children at once" 15s 1 fanout 500
shape "100-deep chain" 15s 1 chain 100
shape "200 setsid'd children at once (200 escapes)" 15s 1 fanout-setsid 200

TEST "command waiting for its background child: ends when the child is taken down by the deadline"
fx --then wait grandchild
tg_start --timeout 2s -- "${FX[@]}"
wait_ready 20 && tg_wait 60
expect_exit 124
expect_boundary
