# inherited (DESIGN.md [guardian], [signals]): what the caller hands treeguard
# that treeguard must neither trip over nor change for COMMAND.
#  - closed standard descriptors (cron, daemons, `>&-`): every non-empty subset of 0, 1, 2; the run
#    works (COMMAND's status, its work done), COMMAND finds closed what the caller closed, the
#    guardian never takes the live run down (no "controller lost"), nothing is left;
#  - a low descriptor limit (ulimit -n 8 to 128): the run works fully (and a controller SIGKILL is
#    still taken down by the guardian) or it refuses with 125 and nothing ran; never a guardian
#    that spins or outlives the run;
#  - inherited signal dispositions: a caller that ignores SIGCHLD does not hang treeguard; an
#    inherited ignore (PIPE, CHLD, INT, HUP) reaches COMMAND and the default stays the default;
#    INT and HUP ignored at start are neither acted on nor passed on; SIGALRM is the deadline, now.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

# a closed-stdio arm writes nothing on treeguard's stderr: the checks below read the record, the
# pid file and what COMMAND wrote
open_records() { local -a f=("$STATE"/*.json); echo "${#f[@]}"; }
expect_record_honest() {
    (($(open_records) == 0)) || fail "an open record is left in the state directory: $(cat "$STATE"/*.json | head -c 400)"
    if grep -ls 'controller lost' "$STATE"/finished/*.json >/dev/null 2>&1; then
        fail "a record says 'controller lost' for a run whose controller lived"
    fi
}

# ---------------------------------------------------------------- closed standard descriptors
# open_in_main: which of 0-2 COMMAND's main process has open, seen from outside. The fixture's own
# (its pid file and its notify pipe, which take the lowest free numbers) are left out: what the
# caller gives is /dev/null, tg.out and tg.err, never a pipe.
open_in_main() {
    local main f target out=""
    main=$(fixture_main_host_pid)
    for f in 0 1 2; do
        target=$(readlink "/proc/$main/fd/$f" 2>/dev/null) || continue
        [[ $target == "$PIDFILE" || $target == pipe:* ]] || out+="$f "
    done
    echo "${out% }"
}
for closed in 0 1 2 01 02 12 012; do
    redirect="" expect_open=""
    for fd in 0 1 2; do
        if [[ $closed == *$fd* ]]; then redirect+=" $fd>&-"; else expect_open+="$fd "; fi
    done
    expect_open=${expect_open% }
    TEST "fds${redirect} closed: COMMAND's status and work, the same fds closed in COMMAND, record honest"
    # COMMAND lives a second before the fixture's shape starts (on c32712a the guardian took the
    # live run down meanwhile), then waits for the release file and exits 3
    TG_WRAP=(bash -c "exec \"\$@\"$redirect" bash)
    fx --release "$T/go" --release-exit 3 sleep
    tg_start -- sh -c 'sleep 1; exec "$@"' sh "${FX[@]}"
    TG_WRAP=()
    if wait_ready 20; then
        expect_eq "$(open_in_main)" "$expect_open" "the descriptors open in COMMAND"
        # treeguard holds each closed one (a path-only descriptor of /): nothing it opens (its
        # signalfd, the leaf, a record) lands where its messages go
        for fd in 0 1 2; do
            [[ $closed == *$fd* ]] || continue
            target=$(readlink "/proc/$TG_PID/fd/$fd" 2>/dev/null)
            [[ $target == / ]] || fail "treeguard's fd $fd, closed by its caller, is '$target', not its hold on /"
        done
        touch "$T/go"
    fi
    tg_wait 30
    expect_exit 3
    grep -q '^released ' "$PIDFILE" || fail "COMMAND's work was never done"
    expect_record_honest
done

# ---------------------------------------------------------------- descriptor limits
for n in 8 16 24 32 48 64 96 128; do
    TEST "ulimit -n $n: the run works fully or refuses with 125 and nothing ran; no guardian left"
    TG_WRAP=(prlimit --nofile="$n:$n" --)
    tg_start -- sh -c 'touch "$0"; exit 3' "$T/made"
    tg_wait 30
    TG_WRAP=()
    guardian_of_run
    if [[ $TG_RC == 125 ]]; then
        [[ -e $T/made ]] && fail "125, yet COMMAND ran"
        note "ulimit -n $n: refused ($(tg_stderr_excerpt))"
    else
        expect_exit 3
        [[ -e $T/made ]] || fail "COMMAND's work was never done"
    fi
    expect_record_honest
    # the guardian was dismissed: it exits, whatever it managed to set up (on c32712a it polled the
    # wrong descriptor and spun for ever)
    if [[ -n $GUARDIAN_PID ]]; then
        wait_for 5 "the guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START' ||
            { cpu_ms "$GUARDIAN_PID" && fail "the guardian spins: ${CPU_MS}ms of CPU"; }
    fi
    [[ $TG_RC == 125 || $BOUNDARY == pidns ]] && continue
    TEST "ulimit -n $n: treeguard SIGKILLed mid-run, the guardian takes the tree down"
    TG_WRAP=(prlimit --nofile="$n:$n" --)
    fx daemon
    tg_start -- "${FX[@]}"
    TG_WRAP=()
    if wait_ready 20; then
        guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
        kill -KILL "$TG_PID"
        tg_wait 10
        expect_exit 137
        wait_members_gone 5 "members of the killed run"
        if [[ -n $GUARDIAN_PID ]]; then
            wait_for 10 "the guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
        fi
    fi
done

# ---------------------------------------------------------------- signal dispositions
# sig_ignored FILE NUMBER: the SigIgn mask COMMAND printed (grep ^SigIgn: /proc/self/status) has
# signal NUMBER set
sig_ignored() {
    local mask
    mask=$(sed -n 's/^SigIgn:[[:space:]]*//p' "$1")
    [[ -n $mask ]] || return 2
    (((16#$mask >> ($2 - 1)) & 1))
}
ignoring_sigchld() { # TG_WRAP: a parent that ignores SIGCHLD (as Python services do) execs treeguard
    TG_WRAP=(python3 -c 'import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execvp(sys.argv[1], sys.argv[1:])')
}
ignoring() { # ignoring SIG...: TG_WRAP that ignores SIG... before it execs treeguard
    TG_WRAP=(bash -c "trap '' $*; exec \"\$@\"" bash)
}

TEST "a caller that ignores SIGCHLD: treeguard does not hang, COMMAND's status, COMMAND inherits the ignore"
if ! command -v python3 >/dev/null; then
    skip_test "python3 not installed (the parent that ignores SIGCHLD)"
else
    ignoring_sigchld
    # grep itself is COMMAND: a shell between would set its own SIGCHLD
    tg_start -- grep "^SigIgn:" /proc/self/status
    TG_WRAP=()
    tg_wait 30
    expect_exit 0
    sig_ignored "$T/tg.out" 17 || fail "COMMAND does not ignore SIGCHLD as its caller did: $(cat "$T/tg.out")"
    expect_record_honest
    ignoring_sigchld
    tg_start -- sh -c 'echo hi; exit 3'
    TG_WRAP=()
    tg_wait 30
    expect_exit 3
fi

TEST "a caller that ignores PIPE, INT and HUP: COMMAND ignores them too; the defaults stay defaults"
ignoring PIPE INT HUP
tg_start -- grep "^SigIgn:" /proc/self/status
TG_WRAP=()
tg_wait 30
expect_exit 0
for sig in 13 2 1; do
    sig_ignored "$T/tg.out" "$sig" || fail "COMMAND does not ignore signal $sig as its caller did: $(cat "$T/tg.out")"
done
tg_start -- grep "^SigIgn:" /proc/self/status
tg_wait 30
expect_exit 0
for sig in 13 17 2 1; do
    sig_ignored "$T/tg.out" "$sig" && fail "COMMAND ignores signal $sig, which its caller did not: $(cat "$T/tg.out")"
done

TEST "yes | : with PIPE ignored: yes gets EPIPE (exit 1) as without treeguard, not killed by SIGPIPE"
ignoring PIPE
TG_WRAP+=(sh -c 'exec "$@" | :' sh)
tg_start -- yes
TG_WRAP=()
tg_wait 30
# the wrapper's pipeline status is that of ':'; yes's ends up in treeguard's record of COMMAND
expect_exit 0
grep -q 'Broken pipe' "$T/tg.err" || fail "yes never said 'Broken pipe' (it died of SIGPIPE instead):$(tg_stderr_excerpt)"
grep -q '^treeguard: COMMAND exited (1)' "$T/tg.err" || fail "COMMAND did not exit 1 on EPIPE:$(tg_stderr_excerpt)"

TEST "INT and HUP ignored at start: neither passed on nor a stop request; WINCH still is; TERM ends the run"
ignoring INT HUP
fx --catch-signals sleep
tg_start -- "${FX[@]}"
TG_WRAP=()
if wait_ready 20; then
    for sig in INT HUP INT HUP; do kill -"$sig" "$TG_PID"; done
    # signals are taken lowest number first: once WINCH (28) is passed on, INT (2) and HUP (1),
    # sent before it, would have been
    kill -WINCH "$TG_PID"
    if wait_for 20 "treeguard to pass WINCH on" grep -q '^treeguard: forwarded WINCH to COMMAND$' "$T/tg.err"; then
        grep -qE 'forwarded (INT|HUP)|stopping on' "$T/tg.err" && fail "an ignored INT or HUP was acted on:$(tg_stderr_excerpt)"
        grep -q '^caught ' "$PIDFILE" && fail "COMMAND caught a signal its caller ignored: $(grep '^caught ' "$PIDFILE" | tr '\n' ' ')"
        running "$TG_PID" || fail "treeguard ended on an ignored signal"
    fi
    kill -TERM "$TG_PID"
    tg_wait 30
    expect_exit 143
fi

for timeout in 60s none; do
    TEST "SIGALRM to treeguard (--timeout $timeout): the deadline is now, its report, exit 124"
    fx sleep
    if [[ $timeout == none ]]; then
        tg_start --report "$T/report.json" -- "${FX[@]}"
    else
        tg_start --timeout "$timeout" --report "$T/report.json" -- "${FX[@]}"
    fi
    if wait_ready 20; then
        kill -ALRM "$TG_PID"
        tg_wait 30
        expect_exit 124
        grep -q 'deadline (SIGALRM) passed' "$T/tg.err" || fail "no line says SIGALRM made the deadline:$(tg_stderr_excerpt)"
        [[ $(jq -r .ended_by "$T/report.json" 2>/dev/null) == deadline ]] ||
            fail "the report's cause is not deadline: $(head -c 300 "$T/report.json" 2>/dev/null)"
        expect_elapsed_below 30000 "the deadline is now, not at --timeout $timeout"
    fi
done
