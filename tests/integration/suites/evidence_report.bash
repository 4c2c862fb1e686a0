# evidence_report (DESIGN.md [report]): --report FILE, a JSON document per run.
#  - a forced run (TERM-ignoring tree with a setsid'd child, treeguard stopped by a stop request,
#    TERM twice): the authority entry, forced_kill "sent", the setsid'd child named as having left
#    COMMAND's group (never as escaped: it stayed inside the boundary), survivors empty, ended_by
#    stop-request, takedown pass, exit_code = treeguard's exit;
#  - a deadline run: ended_by deadline beside takedown pass and exit 124, what was asked for, every
#    time in RFC 3339 read back by date(1) as its nanoseconds, the lengths agreeing with the times;
#  - status RUN of a live run: what its boundary holds now, by name (text and --json);
#  - names: a deadline's forced kill names who resisted (report, authority, status RUN, the line);
#  - a clean run: no authority, forced_kill "not needed", takedown pass, the command's code;
#  - what FILE may be (DESIGN.md [state-dir]): symlinks (to /proc/self/fd/1, dangling, planted in a
#    sticky directory by another user, the caller's own), a block device, another character device
#    than /dev/null or a terminal, /dev/null, a FIFO whose reader never reads; each refusal made
#    before COMMAND starts (125, nothing launched) where the path can be judged then.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

R() { jq -r "$@" "$T/report.json" 2>/dev/null; }

TEST "--report, forced kill with a setsid'd child: left COMMAND's group (not escaped), authority, survivors empty, pass"
fx --ignore-term setsid
tg_start --kill-after 200ms --report "$T/report.json" -- "${FX[@]}"
if wait_ready 20 && tg_stop TERM; then
    tg_wait 30
    expect_exit 143
    if [[ ! -s $T/report.json ]]; then
        fail "no report written"
    else
        expect_eq "$(R .format)" "treeguard-report/2" "format"
        main=$(sed -n 1p "$PIDFILE") setsid_child=$(sed -n 2p "$PIDFILE")
        expect_eq "$(R .forced_kill)" sent "forced_kill"
        expect_eq "$(R '.authority|length>0')" true "authority entries present"
        # the force each boundary uses: the kernel's cgroup.kill on the leaf, SIGKILL per member
        force=SIGKILL
        [[ $BOUNDARY == cgroup ]] && force=cgroup.kill
        expect_eq "$(R '.authority[0].action')" "$force" "authority action under the $BOUNDARY boundary"
        expect_eq "$(R '.survivors|length')" 0 "survivors"
        expect_eq "$(R .ended_by)" stop-request "ended_by"
        expect_eq "$(R .stop_request_signal)" TERM "stop_request_signal"
        expect_eq "$(R .takedown)" pass "takedown"
        expect_eq "$(R .exit_code)" "$TG_RC" "exit_code vs treeguard's exit"
        expect_eq "$(R --arg p "${main%% *}" '[.members[]|select((.pid|tostring)==$p)]|length')" 1 "COMMAND among the members"
        # the setsid'd child left COMMAND's session but never the boundary (the leaf, or the
        # subreaper's tree): it is named so, and nothing in the report says "escape"
        left=$(R "[.left_command_group[]|select(.pid==${setsid_child%% *} and .start_time==${setsid_child#* })]|length")
        expect_eq "$left" 1 "the setsid'd child ${setsid_child%% *} among those that left COMMAND's group ($(R -c .left_command_group))"
        expect_eq "$(R "[.members[]|select(.pid==${setsid_child%% *})|.left_command_group]|first")" true \
            "the setsid'd child's left_command_group"
        expect_eq "$(R '[paths|.[]|strings|select(test("escape"))]|length')" 0 \
            "fields whose name says escape ($(R -c '[paths|.[]|strings|select(test("escape"))]'))"
        note "left COMMAND's group $(R -c '[.left_command_group[].pid]'), authority $(R -c '[.authority[].action]'), timeline events $(R '.timeline|length')"
        # a forced kill is no clean end: its record, authority and all, is kept without
        # --keep-records (among the finished, which the gate does not read)
        if the_record; then
            expect_eq "${RECORD#"$STATE"/}" "finished/$(R .run_id).json" "where the record is kept"
            expect_eq "$(rec '.authority|length>0')" true "authority entries in the kept record"
        fi
    fi
fi

TEST "names: who resisted is named in the report, the authority, status RUN, the line"
fx --ignore-term grandchild
tg_start -t 500ms -k 300ms --keep-records --report "$T/report.json" -- "${FX[@]}"
if wait_ready 20; then
    tg_wait 30
    expect_exit 124
    read -r main main_start _ <"$PIDFILE"
    expect_eq "$(R --arg p "$main" '.members[]|select((.pid|tostring)==$p)|.comm')" tg_fixture "COMMAND's comm"
    whole="${FX[*]}"
    expect_eq "$(R --arg p "$main" '.members[]|select((.pid|tostring)==$p)|.argv')" "${whole:0:128}" \
        "COMMAND's argv (cut at 128 bytes)"
    expect_eq "$(R '[.members[]|select(.comm=="tg_fixture")]|length')" 2 "both members named"
    expect_eq "$(R --arg p "$main" '[.authority[0].targets[]|select(test("^pid " + $p + " start [0-9]+ [(]tg_fixture[)]$"))]|length')" 1 \
        "the authority's sample names COMMAND ($(R -c '.authority[0].targets'))"
    # the one line without -v: who was killed, by name, and whose tree it was
    grep -q "^treeguard: deadline 500ms passed: killed 2 that resisted TERM for 300ms: .*tg_fixture (pid $main).* (COMMAND: .*tg_fixture" "$T/tg.err" ||
        fail "the stderr line does not name them: $(grep -v '^treeguard: [a-z]' "$T/tg.err" | tail -2; tail -1 "$T/tg.err")"
    # -v says the boundary is proven empty, then what the tree used; the line
    # above is the last of all
    expect_eq "$(grep '^treeguard: ' "$T/tg.err" | tail -3 | head -1 | grep -c 'proven empty')" 1 \
        "-v's third line from the end says the boundary is proven empty ($(tail -3 "$T/tg.err" | head -1))"
    expect_eq "$(grep '^treeguard: ' "$T/tg.err" | tail -2 | head -1 | grep -c '^treeguard: consumed ')" 1 \
        "-v's last verbose line says what the tree used ($(tail -2 "$T/tg.err" | head -1))"
    expect_eq "$(tail -1 "$T/tg.err" | grep -c '^treeguard: deadline 500ms passed: killed 2')" 1 \
        "the last line of all is the one saying treeguard ended the work ($(tail -1 "$T/tg.err"))"
    "$TREEGUARD" status --state-dir "$STATE" "$(R .run_id)" >"$T/status.out" 2>&1
    grep -qF "    tg_fixture (pid $main) start $main_start  ${whole:0:128}" "$T/status.out" ||
        fail "status RUN does not name COMMAND: $(cat "$T/status.out")"
fi

TEST "--report, clean run: no authority, forced_kill not needed, takedown pass, the command's code"
fx exit 3
tg_run --report "$T/report.json" -- "${FX[@]}"
expect_exit 3
if [[ -s $T/report.json ]]; then
    expect_eq "$(R .ended_by)" command-exited "ended_by"
    expect_eq "$(R .command_status.exit)" 3 "command_status"
    expect_eq "$(R .forced_kill)" "not needed" "forced_kill"
    expect_eq "$(R '.authority|length')" 0 "authority entries"
    expect_eq "$(R .takedown)" pass "takedown"
    expect_eq "$(R .exit_code)" 3 "exit_code"
    expect_eq "$(R '.survivors|length')" 0 "survivors"
    expect_eq "$(R '[.drain_seconds, .grace_used_seconds]|tostring')" "[null,null]" "the takedown's lengths (nothing to take down)"
else
    fail "no report written"
fi

# raw_ns KEY: every value of "KEY": N in the report, in order, as written (jq reads numbers as
# doubles, which cannot hold a time in nanoseconds exactly)
raw_ns() { grep -oE "\"$1\": [0-9]+" "$T/report.json" | grep -oE '[0-9]+$'; }
# micros JQ: the number JQ gives, in whole microseconds
micros() { R "$1 * 1000000 | round"; }

TEST "a deadline run's report: ended_by deadline beside takedown pass and 124; RFC 3339 times; lengths that agree"
fx --ignore-term grandchild
tg_start -t 500ms -k 300ms --report "$T/report.json" -- "${FX[@]}"
if wait_ready 20; then
    tg_wait 30
    expect_exit 124
    expect_eq "$(R '[.ended_by, .takedown, .exit_code, .forced_kill]|join(" ")')" "deadline pass 124 sent" \
        "why it ended, whether the takedown was proven, the exit, the force"
    expect_eq "$(R -c .requested)" '{"deadline":"500ms","deadline_seconds":0.5,"grace":"300ms","grace_seconds":0.3,"signal":"TERM","leftovers":"kill"}' \
        "what was asked for"
    # every time in RFC 3339, read back by date(1), is its _unix_ns twin to the microsecond
    mapfile -t texts < <(R '.started_at, .ended_at, (.timeline[].at), (.authority[].at)')
    mapfile -t nanos < <(raw_ns started_at_unix_ns; raw_ns ended_at_unix_ns; raw_ns at_unix_ns)
    expect_eq "${#texts[@]}" "${#nanos[@]}" "times in RFC 3339 vs times in ns"
    for i in "${!texts[@]}"; do
        read_back=$(date -u -d "${texts[i]}" +%s%N 2>&1)
        [[ $read_back == "$((nanos[i] / 1000 * 1000))" ]] ||
            fail "time $i: '${texts[i]}' reads back as $read_back, its twin is ${nanos[i]}"
    done
    # the lengths agree with the times: the run from start to end; the grace used all of its
    # 300 ms (every process ignores TERM) and no more than the takedown, which is within the run
    started=$(raw_ns started_at_unix_ns) ended=$(raw_ns ended_at_unix_ns)
    run_us=$(micros .run_seconds) drain_us=$(micros .drain_seconds) grace_us=$(micros .grace_used_seconds)
    diff_us=$(((ended - started) / 1000 - run_us))
    ((diff_us >= -1 && diff_us <= 1)) || fail "run_seconds ${run_us}us, the times say $(((ended - started) / 1000))us"
    ((grace_us >= 300000 && grace_us <= drain_us && drain_us <= run_us)) ||
        fail "grace used ${grace_us}us (of 300ms), drain ${drain_us}us, run ${run_us}us"
    deadline_us=$(micros '[.timeline[]|select(.event=="deadline passed")][0].elapsed_seconds')
    ((deadline_us >= 500000 && deadline_us <= run_us)) || fail "the deadline passed ${deadline_us}us into the run"
    note "run ${run_us}us, drain ${drain_us}us, grace used ${grace_us}us, deadline at ${deadline_us}us"
fi

TEST "status RUN of a live run: what its boundary holds now, by name (text and --json)"
fx grandchild
tg_start -- "${FX[@]}"
if wait_ready 20 && the_record "$STATE"; then
    main=$(sed -n 1p "$PIDFILE") child=$(sed -n 2p "$PIDFILE")
    tg_cmd status status --state-dir "$STATE" "$RUN_ID"
    grep -qx "  alive in its boundary now: 2" "$T/status.out" ||
        fail "status RUN does not count what the boundary holds: $(cmd_excerpt status)"
    for who in "$main" "$child"; do
        grep -qE "^    tg_fixture \(pid ${who% *}\) start ${who#* }( |$)" "$T/status.out" ||
            fail "status RUN does not name ${who% *} as alive: $(tr '\n' '|' <"$T/status.out")"
    done
    tg_cmd status-json status --json --state-dir "$STATE" "$RUN_ID"
    expect_eq "$(jq -r '[.[0].alive_now[]|"\(.comm) \(.pid) \(.start_time)"]|sort|join(",")' "$T/status-json.out")" \
        "$(printf 'tg_fixture %s\n' "$main" "$child" | sort | paste -sd,)" "status --json's alive_now"
    expect_eq "$(jq -r '.[0]|[(.authority|length), (.notes|length)]|join(" ")' "$T/status-json.out")" "0 0" \
        "status --json's authority entries and notes (none yet)"
    tg_stop TERM && tg_wait 30
    expect_exit 143
fi

# ---------------------------------------------------------------- what --report FILE may write to
# As root: a symlink is never replaced, a dangling one never followed, a symlink
# planted in a sticky directory by another user never followed, a block device never written, a
# FIFO's reader that never reads holds treeguard for the bounded time only. What can be judged
# before COMMAND starts is judged then: 125, one line, nothing launched.

# report_warning: treeguard's one warning line about the report (written at the end)
report_warning() { grep -m1 "^treeguard: warning: report " "$T/tg.err"; }
# report_error: treeguard's error line about --report (judged before COMMAND starts)
report_error() { grep -m1 "^treeguard: error: --report: " "$T/tg.err"; }
# expect_report_refused WHY TARGET...: for each TARGET, a run with --report TARGET is refused
# before COMMAND starts: exit 125, the error line says WHY, nothing launched
expect_report_refused() {
    local why=$1 target
    shift
    for target in "$@"; do
        : >"$PIDFILE"
        fx exit 0
        tg_run --report "$target" -- "${FX[@]}"
        expect_exit 125
        [[ $(report_error) == *"$why"* ]] || fail "--report $target: error line '$(report_error)' (stderr:$(tg_stderr_excerpt))"
        [[ -s $PIDFILE ]] && fail "--report $target: COMMAND was launched"
    done
}
# expect_link LINK TARGET: LINK is still a symlink to TARGET
expect_link() {
    [[ -L $1 && $(readlink "$1") == "$2" ]] ||
        fail "$1 is no longer a symlink to $2 ($(stat -c %F "$1" 2>&1))"
}

TEST "--report through a symlink to /proc/self/fd/1, fd 1 closed: refused before COMMAND starts, the link stays"
ln -s /proc/self/fd/1 "$T/stdout"
TG_WRAP=(sh -c 'exec "$@" >&-' tg-close-stdout)
expect_report_refused "$T/stdout: a descriptor that is closed or open on a directory; not written" "$T/stdout"
TG_WRAP=()
expect_link "$T/stdout" /proc/self/fd/1

TEST "--report through a dangling symlink: refused before COMMAND starts, nothing created, the link stays"
ln -s "$T/nowhere.json" "$T/dangling"
expect_report_refused "does not exist; not followed, not replaced" "$T/dangling"
expect_link "$T/dangling" "$T/nowhere.json"
[[ -e $T/nowhere.json ]] && fail "the dangling link's target was created"

TEST "--report through a symlink to /proc/self/fd/1, fd 1 a file: appended to it in place, the link stays"
ln -s /proc/self/fd/1 "$T/stdout"
fx exit 0
tg_run --report "$T/stdout" -- "${FX[@]}"
expect_exit 0
expect_link "$T/stdout" /proc/self/fd/1
expect_eq "$(jq -r .format "$T/tg.out" 2>&1)" "treeguard-report/2" "the report in treeguard's stdout file"

sticky_dir() { # sticky_dir: $T/sticky, a /tmp-like directory (mode 1777, owned by root)
    mkdir -m 1777 "$T/sticky" && chmod 1777 "$T/sticky"
}

TEST "--report through a symlink uid $NOBODY_UID planted in a sticky directory: not followed, the target untouched"
if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
    skip_test "needs root and setpriv (a symlink of uid $NOBODY_UID for root to meet)"
else
    sticky_dir
    echo precious >"$T/victim"
    setpriv --reuid=$NOBODY_UID --regid=$NOBODY_GID --clear-groups ln -s "$T/victim" "$T/sticky/report.json"
    expect_report_refused "owned by uid $NOBODY_UID in the sticky directory" "$T/sticky/report.json"
    expect_link "$T/sticky/report.json" "$T/victim"
    expect_eq "$(cat "$T/victim")" precious "the planted link's target"
fi

TEST "--report to a FIFO and a file uid $NOBODY_UID planted in a sticky directory: neither written (protected_fifos, protected_regular)"
if [[ $(id -u) != 0 ]] || ! command -v setpriv >/dev/null; then
    skip_test "needs root and setpriv (a FIFO and a file of uid $NOBODY_UID for root to meet)"
else
    sticky_dir
    setpriv --reuid=$NOBODY_UID --regid=$NOBODY_GID --clear-groups mkfifo "$T/sticky/fifo.json"
    setpriv --reuid=$NOBODY_UID --regid=$NOBODY_GID --clear-groups sh -c 'echo planted >"$1"' sh "$T/sticky/file.json"
    # the planter's reader: this shell holds the FIFO open (read and write), so a write would land
    exec {planted_fd}<>"$T/sticky/fifo.json"
    expect_report_refused "a FIFO owned by uid $NOBODY_UID in the sticky directory $T/sticky: not written" \
        "$T/sticky/fifo.json"
    read -r -t 0 -u "$planted_fd" && fail "the report was written into the planted FIFO"
    exec {planted_fd}<&-
    [[ -p $T/sticky/fifo.json ]] || fail "the planted FIFO was replaced ($(stat -c %F "$T/sticky/fifo.json" 2>&1))"
    expect_report_refused "a file owned by uid $NOBODY_UID in the sticky directory $T/sticky: not written" \
        "$T/sticky/file.json"
    expect_eq "$(cat "$T/sticky/file.json")" planted "the planted file"
    expect_eq "$(stat -c %u "$T/sticky/file.json")" "$NOBODY_UID" "the planted file's owner"
fi

TEST "--report through the caller's own symlink in a sticky directory: its target replaced, the link stays"
sticky_dir
echo old >"$T/mine.json"
ln -s "$T/mine.json" "$T/sticky/report.json"
fx exit 0
tg_run --report "$T/sticky/report.json" -- "${FX[@]}"
expect_exit 0
expect_link "$T/sticky/report.json" "$T/mine.json"
expect_eq "$(jq -r .format "$T/mine.json" 2>&1)" "treeguard-report/2" "the link's target"
[[ -z $(report_warning) ]] || fail "warning '$(report_warning)'"

TEST "--report naming a block device (and a link to one): never written"
if [[ $(id -u) != 0 ]] || ! command -v losetup >/dev/null; then
    skip_test "needs root and losetup (a loop device over a file of the test's own)"
elif ! mknod -m 0600 "$T/probe-node" c 1 3 2>"$T/mknod.err"; then
    skip_test "mknod fails here (the test names a device node of its own): $(head -c 200 "$T/mknod.err")"
elif ! head -c 1048576 /dev/zero >"$T/backing" || ! LOOP=$(losetup -f --show "$T/backing" 2>"$T/losetup.err"); then
    skip_test "no loop device here: $(head -c 200 "$T/losetup.err")"
else
    EV_LOOPS+=("$LOOP")
    # a node of the test's own for that device: a treeguard that wrongly replaces what it names
    # replaces this node, never the host's /dev/loopN (which the detach below needs)
    mknod -m 0600 "$T/disk" b "$((0x$(stat -c %t "$LOOP")))" "$((0x$(stat -c %T "$LOOP")))"
    ln -s "$T/disk" "$T/disk.json"
    expect_report_refused "is a block device; not written" "$T/disk" "$T/disk.json"
    losetup -d "$LOOP"
    EV_LOOPS=()
    [[ -z $(tr -d '\0' <"$T/backing" | head -c 64) ]] ||
        fail "the block device was written: $(tr -d '\0' <"$T/backing" | head -c 64)"
    expect_link "$T/disk.json" "$T/disk"
    [[ -b $T/disk ]] || fail "the device node was replaced: $(stat -c %F "$T/disk" 2>&1)"
fi

TEST "--report naming a character device other than /dev/null or a terminal (a node of /dev/zero's): never written"
if [[ $(id -u) != 0 ]]; then
    skip_test "needs root (mknod)"
elif ! mknod -m 0600 "$T/zero.json" c 1 5 2>"$T/mknod.err"; then
    skip_test "mknod fails here: $(head -c 200 "$T/mknod.err")"
else
    # /dev/zero takes any write: only the type check stands between the report and the device
    ln -s "$T/zero.json" "$T/zero-link.json"
    expect_report_refused "is a character device other than /dev/null or a terminal; not written" \
        "$T/zero.json" "$T/zero-link.json"
    [[ -c $T/zero.json && $(stat -c %t:%T "$T/zero.json") == 1:5 ]] ||
        fail "the device node was replaced: $(stat -c '%F %t:%T' "$T/zero.json" 2>&1)"
    expect_link "$T/zero-link.json" "$T/zero.json"
fi

TEST "--report /dev/null: written in place, no warning, /dev/null still the null device"
# first a null device of the test's own (c 1 3, as /dev/null): a treeguard that wrongly replaces
# what it names replaces that node; the host's /dev/null is named only once that one held
null=$T/null
if [[ $(id -u) != 0 ]] || ! mknod -m 0666 "$null" c 1 3 2>/dev/null; then
    null=/dev/null # not root, or no device nodes here: the host's own is the only one
fi
for target in "$null" /dev/null; do
    fx exit 0
    tg_run --report "$target" -- "${FX[@]}"
    expect_exit 0
    [[ -z $(report_warning) ]] || fail "--report $target: warning '$(report_warning)'"
    if ! [[ -c $target && $(stat -c %t:%T "$target") == 1:3 ]]; then
        fail "$target is now $(stat -c '%F %t:%T' "$target")"
        break
    fi
    [[ $null == /dev/null ]] && break
done

TEST "--report to a FIFO whose reader never reads: given up after 5 s, the outcome still delivered"
mkfifo "$T/fifo"
# a reader that never reads: this shell holds the FIFO open (read and write) and reads nothing
exec {fifo_fd}<>"$T/fifo"
# a report larger than the FIFO's buffer (64 KiB): COMMAND's arguments are in it
big=$(head -c 100000 /dev/zero | tr '\0' x)
tg_start --report "$T/fifo" -- sh -c 'exit 4' tg-report "$big" "$big"
tg_wait 30
exec {fifo_fd}<&-
expect_exit 4
# the write's bound (5 s) with margin for a loaded host; without a bound treeguard never exits
expect_elapsed_below 20000 "a report write bounded at 5 s"
[[ $(report_warning) == *"took nothing for 5 s"* ]] || fail "warning '$(report_warning)'"
