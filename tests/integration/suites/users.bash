# users: what a user of timeout(1), a launcher or a container expects. COMMAND without
# "--", -s KILL, -k 0, the one line a deadline prints, options from the environment, the state
# directory without a home, --report on odd targets and odd bytes, -v into a closed pipe, probe, and
# treeguard as PID 1. Time limits are the run's deadline + grace, with margin.

TEST "COMMAND at the first positional, no --: it runs, the exit is COMMAND's"
fx --then exit 3 sleep
tg_start -k 2s "${FX[@]}"
tg_wait 30
expect_exit 3
expect_ready
expect_boundary

TEST "TREEGUARD_TIMEOUT=1 from the environment ends the run: 124, one line on stderr without -v"
fx sleep
TG_VERBOSE=0
TREEGUARD_TIMEOUT=1 TREEGUARD_KILL_AFTER=5s tg_start "${FX[@]}"
TG_VERBOSE=1
tg_wait $((1 + 5 + 20))
expect_exit 124
expect_elapsed_at_least 1000 "the deadline is 1s"
mapfile -t lines <"$T/tg.err"
expect_eq "${#lines[@]}" 1 "lines on stderr"
whose="${FX[*]}"
((${#whose} > 60)) && whose="${whose:0:60}..."
expect_eq "${lines[0]:-}" "treeguard: deadline 1s passed: COMMAND's tree was sent TERM (COMMAND: $whose)" "the line"

TEST "a flag wins over the environment: --timeout 1 under TREEGUARD_TIMEOUT=300"
fx sleep
TREEGUARD_TIMEOUT=300 tg_start --timeout 1 -k 5s "${FX[@]}"
tg_wait $((1 + 5 + 20))
expect_exit 124

TEST "-q: the deadline passes without a line"
fx sleep
TG_VERBOSE=0
tg_start -q -t 500ms -k 5s -- "${FX[@]}"
TG_VERBOSE=1
tg_wait $((1 + 5 + 20))
expect_exit 124
[[ -s $T/tg.err ]] && fail "stderr: $(head -3 "$T/tg.err")"

TEST "-s KILL: no TERM, straight to authority and the forced kill"
fx --log-signals grandchild
tg_start -t 500ms -s KILL -- "${FX[@]}"
tg_wait 20
expect_exit 124
expect_ready
grep -q "^sig " "$PIDFILE" && fail "COMMAND got a graceful signal: $(grep '^sig ' "$PIDFILE")"
expect_elapsed_below 10500 "no grace period: deadline 500ms + the default grace 10s would be 10.5s"

TEST "-k 0 as timeout: no forced kill; the tree that ignores TERM ends when it exits by itself"
fx --release "$T/release" ignore-term
tg_start -t 500ms -k 0 -- "${FX[@]}"
drain_said() { grep -q "^treeguard: drain: TERM to every member" "$T/tg.err"; }
if wait_ready 20 && wait_for 20 "the drain to begin" drain_said; then
    grep -q "^treeguard: force" "$T/tg.err" && fail "a forced kill with -k 0: $(grep force "$T/tg.err")"
    running "$TG_PID" || fail "treeguard ended although the tree ignores TERM and -k 0 means no forced kill"
    : >"$T/release"
    tg_wait 30
    expect_exit 124
    grep -q "^released " "$PIDFILE" || fail "the tree was killed, not released"
    grep -q "^treeguard: force" "$T/tg.err" && fail "a forced kill with -k 0"
fi

# tg_plain_start ENV... -- ARGS: "treeguard run -v BOUNDARY ARGS" with no state directory given,
# under `env ENV...` (TG_WRAP), so the state directory is chosen from the environment
tg_plain_start() {
    local -a env_args=()
    while [[ $1 != -- ]]; do env_args+=("$1"); shift; done
    shift
    TG_WRAP=(env -u TREEGUARD_STATE_DIR -u XDG_STATE_HOME "${env_args[@]}")
    TG_NO_STATE_DIR=1
    tg_start "$@"
    TG_WRAP=()
    TG_NO_STATE_DIR=0
}
runtime_dir() {
    mkdir -p "$T/runtime"
    chmod 700 "$T/runtime"
    [[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$T/runtime"
}

TEST "no HOME: the state directory is \$XDG_RUNTIME_DIR/treeguard, and -v says so"
runtime_dir
fx exit 0
tg_plain_start -u HOME "XDG_RUNTIME_DIR=$T/runtime" -- "${FX[@]}"
tg_wait 30
expect_exit 0
grep -qx "treeguard: state directory $T/runtime/treeguard (from XDG_RUNTIME_DIR)" "$T/tg.err" ||
    fail "no state-directory line naming XDG_RUNTIME_DIR (stderr:$(tg_stderr_excerpt))"
[[ $(stat -c %a "$T/runtime/treeguard" 2>/dev/null) == 700 ]] || fail "$T/runtime/treeguard is not a 0700 directory"

TEST "a HOME that cannot be created (as user nobody's /nonexistent): the runtime directory instead"
runtime_dir
fx exit 0
# nothing can be created in /proc, not even by root
tg_plain_start HOME=/proc/treeguard-no-home "XDG_RUNTIME_DIR=$T/runtime" -- "${FX[@]}"
tg_wait 30
expect_exit 0
grep -qx "treeguard: state directory $T/runtime/treeguard (from XDG_RUNTIME_DIR)" "$T/tg.err" ||
    fail "no fallback to XDG_RUNTIME_DIR (stderr:$(tg_stderr_excerpt))"

TEST "--report with an argument that is not UTF-8: COMMAND's exit, the bytes escaped"
fx exit 3
tg_start --report "$T/report.json" -- "${FX[@]}" $'a\xff\xfeb'
tg_wait 30
expect_exit 3
if [[ -f $T/report.json ]]; then
    expect_eq "$(jq -r '.command[-1]' "$T/report.json")" 'a\xff\xfeb' "the argument in the report"
    expect_eq "$(jq -r '.exit_code' "$T/report.json")" 3 "exit_code in the report"
else
    fail "no report written"
fi

TEST "--report to a FIFO: written into it, the FIFO stays a FIFO"
mkfifo "$T/report.fifo"
[[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$T/report.fifo"
exec {report_fd}<>"$T/report.fifo"
fx exit 0
tg_start --report "$T/report.fifo" -- "${FX[@]}"
tg_wait 30
expect_exit 0
[[ -p $T/report.fifo ]] || fail "the FIFO was replaced by $(stat -c %F "$T/report.fifo")"
report=""
while IFS= read -r -t 5 -u "$report_fd" line; do
    report+=$line$'\n'
    [[ $line == "}" ]] && break
done
exec {report_fd}<&-
[[ $report == *'"format": "treeguard-report/2"'* ]] || fail "the report did not come through the FIFO"

if [[ $BOUNDARY != unpriv ]]; then
    TEST "--report to a character device (a private copy of /dev/null): written in place, not replaced"
    mknod "$T/null" c 1 3
    fx exit 0
    tg_start --report "$T/null" -- "${FX[@]}"
    tg_wait 30
    expect_exit 0
    [[ -c $T/null ]] || fail "the device node was replaced by $(stat -c %F "$T/null")"
fi

TEST "-v into a closed stderr pipe: treeguard lives, the exit is COMMAND's, COMMAND has default SIGPIPE"
# perl (essential in Debian) makes stderr a pipe whose reader is already gone
TG_WRAP=(perl -e 'pipe(my $r, my $w) or die "pipe: $!"; close $r; open(STDERR, ">&", $w) or die "dup: $!"; close $w; $SIG{PIPE} = "DEFAULT"; exec @ARGV or die "exec: $!"' --)
tg_start -- sh -c 'grep "^SigIgn:" /proc/$$/status >"$0"; exit 3' "$T/sigign"
TG_WRAP=()
tg_wait 30
expect_exit 3
if [[ -s $T/sigign ]]; then
    mask=$(awk '{print $2}' "$T/sigign")
    (((16#$mask >> 12) & 1)) && fail "COMMAND runs with SIGPIPE ignored (SigIgn $mask)"
else
    fail "COMMAND did not run"
fi

TEST "probe: the boundary auto forms and the state directory, as text and JSON"
expected=process-group
if find_cgroup2_mount && "${TG_PREFIX[@]}" test -w "$CG_MOUNT"; then expected=cgroup; fi
TREEGUARD_STATE_DIR=$STATE "${TG_PREFIX[@]}" "$TREEGUARD" probe >"$T/probe.txt" 2>"$T/probe.err"
rc=$?
expect_eq "$rc" 0 "probe's exit"
grep -qE "^boundary auto +$expected " "$T/probe.txt" || fail "no 'boundary auto $expected' line: $(cat "$T/probe.txt")"
grep -qE "^state directory +yes +$STATE \(from TREEGUARD_STATE_DIR\)$" "$T/probe.txt" ||
    fail "no state directory line: $(grep state "$T/probe.txt")"
TREEGUARD_STATE_DIR=$STATE "${TG_PREFIX[@]}" "$TREEGUARD" probe --json >"$T/probe.json" 2>>"$T/probe.err"
jq -e --arg b "$expected" '.auto_boundary == $b and
    ([.capabilities[] | select(.name == "state directory" and .available)] | length) == 1' \
    "$T/probe.json" >/dev/null || fail "probe --json: $(head -c 300 "$T/probe.json")"
if [[ $expected == process-group ]]; then
    # no cgroup to write is not "the kernel lacks cgroup.kill"; the fallback says what it
    # loses and how to get a cgroup here
    grep -qE "^cgroup\.kill +n/a +not checked: no writable cgroup$" "$T/probe.txt" ||
        fail "cgroup.kill line: $(grep 'cgroup.kill' "$T/probe.txt")"
    grep -q "^  process-group loses against a cgroup: " "$T/probe.txt" ||
        fail "no word of what the fallback loses: $(cat "$T/probe.txt")"
    grep -q "^  for a cgroup here: " "$T/probe.txt" || fail "no word of how to get a cgroup here"
    # a stronger boundary named where this user may make one (DESIGN.md [plan]), by probe and -v
    userns=$(jq -r '.capabilities[]|select(.name=="user+pid namespace")|.available' "$T/probe.json")
    expect_eq "$(grep -c "^  stronger here without root: --boundary pid-namespace " "$T/probe.txt")" \
        "$([[ $userns == true ]] && echo 1 || echo 0)" "probe names pid-namespace iff 'user+pid namespace' is yes ($userns)"
    TREEGUARD_STATE_DIR=$STATE "${TG_PREFIX[@]}" "$TREEGUARD" run -v -- true >/dev/null 2>"$T/run-v.err"
    said=("process-group loses against a cgroup: " "for a cgroup here: ")
    [[ $userns == true ]] && said+=("stronger here without root: --boundary pid-namespace ")
    for line in "${said[@]}"; do
        grep -qF "treeguard: $line" "$T/run-v.err" ||
            fail "run -v does not say '$line' when it falls back: $(tr '\n' '|' <"$T/run-v.err")"
    done
fi

if [[ $BOUNDARY != unpriv ]] && find_cgroup2_mount && (($(id -u) == 0)) && command -v unshare >/dev/null &&
    unshare --mount --propagation private true 2>/dev/null; then
    TEST "probe in a mount namespace without cgroup2: clone3 into cgroup is n/a, not yes"
    unshare --mount --propagation private sh -c 'umount -l "$1" && exec "$2" probe' sh "$CG_MOUNT" "$TREEGUARD" \
        >"$T/probe.txt" 2>&1
    grep -qE "^cgroup v2 mount +no " "$T/probe.txt" || fail "cgroup2 still mounted: $(head -3 "$T/probe.txt")"
    grep -qE "^clone3 into cgroup +n/a +no cgroup v2 here$" "$T/probe.txt" ||
        fail "clone3 line: $(grep clone3 "$T/probe.txt")"
    grep -q "^  for a cgroup here: a host (or container) with cgroup v2 mounted$" "$T/probe.txt" ||
        fail "no advice: $(tail -3 "$T/probe.txt")"
fi

if [[ $BOUNDARY != unpriv ]]; then
    TEST "as PID 1 (unshare --pid --fork --mount-proc): TERM from outside reaches COMMAND, leftovers drain, exit 143"
    if ! can_unshare_pidns; then
        skip_test "$UNSHARE_WHY"
    else
        TG_WRAP=(unshare --pid --fork --mount-proc)
        fx --log-signals orphan
        tg_start --kill-after 15s -- "${FX[@]}"
        TG_WRAP=()
        if wait_ready 20; then
            # treeguard is unshare's child: PID 1 of the new namespace
            read -r inner _ <"/proc/$TG_PID/task/$TG_PID/children"
            if [[ -n $inner ]] && grep -q "^NSpid:.*[[:space:]]1$" "/proc/$inner/status"; then
                kill -TERM "$inner"
                tg_wait 30
                expect_exit 143
                grep -q "^sig 15 " "$PIDFILE" || fail "COMMAND never received TERM"
                expect_elapsed_below 15000 "the tree dies of TERM; KILL only after --kill-after 15s"
            else
                fail "treeguard is not PID 1 of a new pid namespace (child of unshare: '${inner:-none}')"
            fi
        fi
    fi
fi
