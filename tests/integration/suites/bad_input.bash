# bad_input (DESIGN.md [bad-input]): exactly one line on stderr ("treeguard: error: ..."), exit 125,
# nothing launched (the would-be COMMAND is the fixture, which would write to the pid file), nothing
# left behind (no cgroup, nothing in the state directory).

# bad_run NAME ARGS...: "treeguard run <boundary> --state-dir S ARGS" must be refused;
# @CMD in ARGS stands for the fixture command line (which would write to the pid file if launched)
bad_run() {
    TEST "$1 -> 125, one line, nothing launched"
    shift
    local -a args=(run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE")
    local a
    for a in "$@"; do
        case $a in
            @CMD) args+=("$TG_FIXTURE" exit 0) ;;
            *) args+=("$a") ;;
        esac
    done
    tg_raw "${args[@]}"
    check_refused
}
check_refused() {
    expect_exit 125
    local -a lines=()
    mapfile -t lines <"$T/tg.err"
    if ((${#lines[@]} != 1)); then
        fail "${#lines[@]} lines on stderr, expected 1:$(printf ' | %s' "${lines[@]:0:4}")"
    elif [[ ${lines[0]} != "treeguard: error: "* ]]; then
        fail "stderr line does not start with 'treeguard: error: ': '${lines[0]}'"
    fi
    if [[ -s $T/tg.err && -n $(tail -c1 "$T/tg.err") ]]; then
        fail "stderr line not newline-terminated"
    fi
    [[ -s $PIDFILE ]] && fail "COMMAND was launched (pid file: $(tr '\n' ' ' <"$PIDFILE"))"
    local left
    left=$(cd "$STATE" && find . -mindepth 1 | head -5 | tr '\n' ' ')
    [[ -z $left ]] || fail "left behind in the state dir: $left"
}

bad_run "unknown option --bogus" --bogus -- @CMD
bad_run "unknown short option -Z" -Z -- @CMD
bad_run "duration -1s" --timeout -1s -- @CMD
bad_run "duration 1e999" --timeout 1e999 -- @CMD
bad_run "duration 10x" --timeout 10x -- @CMD
bad_run "duration empty" --timeout "" -- @CMD
bad_run "duration overflow 99999999999999999999h" --timeout 99999999999999999999h -- @CMD
bad_run "--kill-after -1s" --kill-after -1s -- @CMD
bad_run "--kill-after 10x" --kill-after 10x -- @CMD
bad_run "--kill-after empty" --kill-after "" -- @CMD
bad_run "-t without a value" -t
bad_run "no COMMAND after --" --
bad_run "no COMMAND at all" --timeout 1s
bad_run "unknown signal name BOGUS" --signal BOGUS -- @CMD
bad_run "unknown signal name SIGBOGUS" --signal SIGBOGUS -- @CMD
bad_run "signal number out of range 999" --signal 999 -- @CMD
bad_run "--boundary bogus" --boundary bogus -- @CMD
bad_run "--leftovers bogus" --leftovers bogus -- @CMD
bad_run "--signal STOP" --signal STOP -- @CMD

# the environment's options (for launchers) are checked like flags, and named
TREEGUARD_TIMEOUT=10x bad_run "TREEGUARD_TIMEOUT=10x" @CMD
grep -q "^treeguard: error: TREEGUARD_TIMEOUT: " "$T/tg.err" || fail "the line does not name TREEGUARD_TIMEOUT: $(cat "$T/tg.err")"
TREEGUARD_KILL_AFTER=-1s bad_run "TREEGUARD_KILL_AFTER=-1s" @CMD
TREEGUARD_SIGNAL=BOGUS bad_run "TREEGUARD_SIGNAL=BOGUS" @CMD
TEST "TREEGUARD_BOUNDARY=box (no --boundary flag to win over it) -> 125, one line, nothing launched"
TREEGUARD_BOUNDARY=box tg_raw run --state-dir "$STATE" "$TG_FIXTURE" exit 0
check_refused
TREEGUARD_LEFTOVERS=maybe bad_run "TREEGUARD_LEFTOVERS=maybe" @CMD

TEST "no subcommand at all -> 125, one line"
tg_raw
check_refused

TEST "unknown subcommand -> 125, one line"
tg_raw bogus-subcommand -- "$TG_FIXTURE" exit 0
check_refused

# a boundary that cannot be formed: nothing launched, 125 (DESIGN.md [plan])
if [[ $BOUNDARY == unpriv ]]; then
    bad_run "--boundary cgroup demanded where cgroups are not writable" --boundary cgroup -- @CMD
fi
if [[ $BOUNDARY == cgroup ]]; then
    bad_run "--cgroup-parent that does not exist" --cgroup-parent "$CG_SUITE/no-such-parent" -- @CMD
fi

# state directory checks (DESIGN.md [state-dir])
TEST "state dir group-writable -> 125, one line"
chmod 770 "$STATE"
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" -- "$TG_FIXTURE" exit 0
check_refused

TEST "state dir reached through a symlink -> 125, one line"
ln -s "$STATE" "$T/state-link"
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir "$T/state-link" -- "$TG_FIXTURE" exit 0
check_refused

TEST "state dir owned by another user -> 125, one line"
if [[ $BOUNDARY == unpriv ]]; then chown 0:0 "$STATE"; else chown "$NOBODY_UID:$NOBODY_GID" "$STATE"; fi
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" -- "$TG_FIXTURE" exit 0
check_refused

TEST "state dir / -> 125, one line"
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir / -- "$TG_FIXTURE" exit 0
check_refused
grep -q "root directory cannot be a state directory" "$T/tg.err" || fail "the line does not say why: $(cat "$T/tg.err")"
TEST "--state-dir --json (value missing) -> 125, one line, no directory '--json' made"
pushd "$T" >/dev/null
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir --json -- "$TG_FIXTURE" exit 0
popd >/dev/null
check_refused
grep -q "looks like an option" "$T/tg.err" || fail "the line does not say why: $(cat "$T/tg.err")"
[[ -e $T/--json ]] && fail "a directory named --json was made"

# a positive duration below 1 ns would have meant "no timeout"
bad_run "duration 0.0000000001s (below 1ns)" --timeout 0.0000000001s -- @CMD
grep -q "below 1ns" "$T/tg.err" || fail "the line does not say why: $(cat "$T/tg.err")"
# a value holding a newline is shown escaped, in one line
TREEGUARD_TIMEOUT=$'5\nx' bad_run "TREEGUARD_TIMEOUT holding a newline" @CMD
grep -qF "'5\\nx'" "$T/tg.err" || fail "the value is not shown escaped: $(cat "$T/tg.err")"
TEST "TREEGUARD_BOUNDARY holding a newline (no --boundary flag to win over it) -> 125, one line"
TREEGUARD_BOUNDARY=$'box\n' tg_raw run --state-dir "$STATE" "$TG_FIXTURE" exit 0
check_refused
grep -qF "'box\\n'" "$T/tg.err" || fail "the value is not shown escaped: $(cat "$T/tg.err")"

# --report FILE is judged before COMMAND starts (treeguard(1), REPORT): a path the report could
# not be written to is 125 with one line, nothing launched, and nothing created that stays
# expect_nothing_made_in DIR [NAME...]: DIR holds nothing but the NAMEs (and the state directory)
expect_nothing_made_in() {
    local dir=$1 entry made=""
    shift
    for entry in "$dir"/* "$dir"/.[!.]*; do
        [[ -e $entry || -L $entry ]] || continue
        entry=${entry##*/}
        [[ $entry == state || " $* " == *" $entry "* ]] && continue
        made+=" $entry"
    done
    [[ -z $made ]] || fail "left behind in $dir:$made"
}
# (paths outside the test's own directory: bad_run's TEST makes a new one)
bad_run "--report in a directory that does not exist" --report "$WORK/no-such-dir/report.json" -- @CMD
grep -qF -- "--report: directory $WORK/no-such-dir: No such file or directory" "$T/tg.err" ||
    fail "the line does not name the missing directory: $(cat "$T/tg.err")"
[[ -e $WORK/no-such-dir ]] && fail "$WORK/no-such-dir was created"
bad_run "--report ''" --report "" -- @CMD
grep -qF -- "--report: the path is empty" "$T/tg.err" || fail "the line does not say the path is empty: $(cat "$T/tg.err")"
bad_run "--report naming a directory" --report "$WORK" -- @CMD
grep -qF -- "--report: $WORK: is a directory; not written" "$T/tg.err" ||
    fail "the line does not say it is a directory: $(cat "$T/tg.err")"
bad_run "--report naming a directory by a trailing /" --report "$WORK/not-yet/" -- @CMD
grep -qF -- "--report: $WORK/not-yet/: names a directory, not a file" "$T/tg.err" ||
    fail "the line does not say why: $(cat "$T/tg.err")"
[[ -e $WORK/not-yet ]] && fail "$WORK/not-yet was created"

# a directory no file can be created in: read-only for root (a read-only bind mount, EROFS), a
# directory of root's for the unprivileged arm (EACCES)
TEST "--report where no file can be created -> 125, one line, nothing launched, nothing left"
mkdir -p "$T/closed"
if [[ $BOUNDARY == unpriv ]]; then
    chown 0:0 "$T/closed"
    chmod 755 "$T/closed"
    why="Permission denied"
elif [[ $(id -u) == 0 ]] && mount --bind "$T/closed" "$T/closed" 2>/dev/null; then
    mount -o remount,bind,ro "$T/closed" || fail "remount ro failed"
    why="Read-only file system"
else
    why=""
fi
if [[ -z $why ]]; then
    skip_test "needs root (a read-only bind mount) or the unprivileged arm"
else
    tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" --report "$T/closed/report.json" -- "$TG_FIXTURE" exit 0
    check_refused
    grep -qF -- "--report: create a file in $T/closed: $why" "$T/tg.err" ||
        fail "the line does not say why: $(cat "$T/tg.err")"
    expect_nothing_made_in "$T/closed"
fi
mountpoint -q "$T/closed" && umount "$T/closed"

# treeguard's probe of a writable directory leaves nothing there either
TEST "--report in a writable directory: written at the end, no probe file left"
mkdir -p "$T/reports"
[[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$T/reports"
tg_raw run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" --report "$T/reports/report.json" -- "$TG_FIXTURE" exit 0
expect_exit 0
expect_eq "$(cd "$T/reports" && find . -mindepth 1 | tr '\n' ' ')" "./report.json " "what the report's directory holds"
