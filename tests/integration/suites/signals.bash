# signals: TERM and INT (and HUP, QUIT) sent to treeguard are forwarded to COMMAND, the whole tree
# drains, and treeguard exits 128+N. The harness sends them to treeguard's pid only.

main_got_signal() { grep -q "^sig $1 $(fixture_main_pid)\$" "$PIDFILE"; }

for sig in 15:TERM 2:INT 1:HUP 3:QUIT; do
    n=${sig%%:*} name=${sig#*:}
    TEST "SIG$name to treeguard: forwarded, tree (child, setsid'd daemon) drains, exit $((128 + n))"
    fx --log-signals daemon
    tg_start --kill-after 15s -- "${FX[@]}"
    if wait_ready 20; then
        expect_members_inside
        kill -"$name" "$TG_PID"
        tg_wait 30
        expect_exit $((128 + n))
        expect_boundary
        main_got_signal "$n" || fail "COMMAND never received SIG$name (pid file: $(grep -v '^[0-9]' "$PIDFILE" | tr '\n' ' '))"
        expect_elapsed_below 10000 "the tree dies of TERM; KILL only after 15s"
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

TEST "SIGINT to treeguard, COMMAND catches TERM/INT and exits 0: exit still 130"
fx --term-exit 0 --log-signals grandchild
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    kill -INT "$TG_PID"
    tg_wait 30
    expect_exit 130
fi

TEST "SIGTERM to treeguard while members ignore TERM: KILL after --kill-after, exit 143"
fx --log-signals ignore-term
tg_start --kill-after 1s -- "${FX[@]}"
if wait_ready 20; then
    now_ms; t_sig=$NOW_MS
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
    now_ms
    ((NOW_MS - t_sig >= 950)) || fail "ended $((NOW_MS - t_sig))ms after TERM, before --kill-after 1s"
fi

TEST "a second SIGINT during the drain skips the rest of the grace period"
fx --log-signals ignore-term
tg_start --kill-after 60s -- "${FX[@]}"
if wait_ready 20; then
    main=$(fixture_main_pid)
    kill -INT "$TG_PID"
    # COMMAND died of the forwarded INT and treeguard reaped it: it is now draining the rest
    if wait_for 20 "COMMAND to die of the forwarded INT and be reaped" eval '! [[ -e /proc/$main ]]'; then
        now_ms; t_sig=$NOW_MS
        kill -INT "$TG_PID"
        tg_wait 90
        expect_exit 130
        now_ms
        ((NOW_MS - t_sig < 10000)) || fail "took $((NOW_MS - t_sig))ms after the second INT (grace was 60s)"
    fi
fi

TEST "SIGTERM to treeguard with a stopped member: TERM still takes effect, exit 143"
fx --log-signals stopped
tg_start --kill-after 15s -- "${FX[@]}"
if wait_ready 20; then
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
    expect_elapsed_below 10000 "the stopped member must die of TERM+CONT, not wait for KILL after 15s"
fi

TEST "SIGTERM to treeguard under a deadline that has not passed: 143, not 124"
fx --log-signals grandchild
tg_start --timeout 60s -- "${FX[@]}"
if wait_ready 20; then
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
fi
