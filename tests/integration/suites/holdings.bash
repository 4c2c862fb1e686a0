# holdings: what each leftover holds, read before it is signalled (man page, "What leftovers
# hold"), said in one stderr line and in the report's "leftovers" and "holds"; the leak verdict
# (--leftovers fail, exit 120). The fixture's holder keeps its stdio on /dev/null (as a daemon
# does) but for the held-stdout case, so the holding under test is the most telling one it has.

# the report's first leftover holds KIND WHAT
report_holds() { # report_holds KIND WHAT
    jq -e --arg k "$1" --arg w "$2" '.leftovers[0].holds | any(.kind == $k and .what == $w)' \
        "$T/report.json" >/dev/null && return 0
    fail "the report's leftover does not hold $1 '$2': $(jq -c '.leftovers' "$T/report.json" 2>&1 | head -c 400)"
}
# the one line: COMMAND left 1 process behind, the holder named with HOLDING, then what was done
expect_left_line() { # expect_left_line HOLDING [DONE]
    local done=${2:-taken down} line
    line=$(grep '^treeguard: COMMAND left ' "$T/tg.err")
    [[ $line == "treeguard: COMMAND left 1 process behind: tg_fixture (pid "[0-9]*") $1; $done"* ]] ||
        fail "no line 'COMMAND left 1 process behind: tg_fixture (pid N) $1; $done': '${line:-none}'"
}
# -v's listing of the holder (all it held) names HOLDING; for a holding less telling than the pid
# file every fixture process writes to
expect_listed() { # expect_listed HOLDING
    local line
    line=$(grep '^treeguard: left behind: tg_fixture (pid [0-9]*): ' "$T/tg.err")
    [[ $line == *": $1"* || $line == *", $1"* ]] ||
        fail "-v's listing does not name '$1': '${line:-none}'"
}
expect_leaked() { # expect_leaked true|false
    expect_eq "$(jq -r .leaked "$T/report.json" 2>&1)" "$1" "the report's \"leaked\""
}
# hold_run KIND [ARG] [-- RUN OPTIONS]: the holder left behind by a COMMAND that exits 0
hold_run() {
    local -a hold=()
    while (($#)) && [[ $1 != -- ]]; do hold+=("$1"); shift; done
    (($#)) && shift
    fx --then exit 0 hold "${hold[@]}"
    tg_run --report "$T/report.json" "$@" -- "${FX[@]}"
    expect_ready
}

TEST "a listening port: named in the line and the report, taken down, exit 0"
hold_run listen
expect_exit 0
port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$T/pids")
if [[ -z $port ]]; then
    fail "the fixture logged no port"
else
    expect_left_line "listening on 127.0.0.1:$port"
    report_holds listening "tcp 127.0.0.1:$port"
    expect_leaked true
    expect_eq "$(jq -r '.leftovers | length' "$T/report.json")" 1 "leftovers in the report"
    # the same process, as a member, carries what it held
    jq -e '.members | any(.holds != null and (.holds | any(.kind == "listening")))' "$T/report.json" \
        >/dev/null || fail "no member of the report carries the port"
fi

TEST "a unix socket: its path, listening"
hold_run unix "$T/app.sock"
expect_exit 0
expect_left_line "listening on unix socket $T/app.sock"
report_holds unix-socket "$T/app.sock (listening)"

TEST "a file open for writing"
hold_run write "$T/out.log"
expect_exit 0
expect_listed "writing $T/out.log"
report_holds writing "$T/out.log"

TEST "a lock it holds"
hold_run lock "$T/db.lock"
expect_exit 0
expect_left_line "locking $T/db.lock (POSIX WRITE)"
report_holds lock "$T/db.lock (POSIX WRITE)"
report_holds writing "$T/db.lock"

TEST "its working directory"
mkdir -p "$T/work dir"
[[ $BOUNDARY == unpriv || $BOUNDARY == pidns ]] && chown "$NOBODY_UID:$NOBODY_GID" "$T/work dir"
hold_run cwd "$T/work dir"
expect_exit 0
expect_listed "in $T/work dir"
report_holds cwd "$T/work dir"

TEST "a device node it holds open (a node of the test's own, never the host's /dev)"
if ! mknod -m 0644 "$T/dev0" c 1 5 2>"$T/mknod.err"; then
    skip_test "mknod is not permitted here: $(head -n 1 "$T/mknod.err")"
else
    hold_run device "$T/dev0"
    expect_exit 0
    expect_left_line "holding device $T/dev0"
    report_holds device "$T/dev0"
fi

TEST "the run's own stdout, kept under another descriptor"
hold_run stdout
expect_exit 0
expect_left_line "holding the run's stdout"
report_holds stdio stdout

TEST "--leftovers fail: COMMAND exited 0 and left a port behind: taken down, exit 120"
hold_run listen -- --leftovers fail
expect_exit 120
grep -q '^treeguard: COMMAND left 1 process behind: .*; taken down; a leak (--leftovers fail): exit 120' "$T/tg.err" ||
    fail "the line does not say the leak made it 120: $(grep 'COMMAND left' "$T/tg.err")"
expect_leaked true
expect_eq "$(jq -r .exit_code "$T/report.json")" 120 "the report's exit code"

TEST "--leftovers fail: COMMAND's own failure wins over the leak"
fx --then exit 3 hold listen
tg_run --leftovers fail --report "$T/report.json" -- "${FX[@]}"
expect_ready
expect_exit 3
expect_leaked true

TEST "TREEGUARD_LEFTOVERS=fail: as --leftovers fail"
fx --then exit 0 hold listen
TG_WRAP=(env TREEGUARD_LEFTOVERS=fail)
tg_run -- "${FX[@]}"
TG_WRAP=()
expect_ready
expect_exit 120

TEST "--leftovers fail and nothing left behind: COMMAND's 0"
fx exit 0
tg_run --leftovers fail --report "$T/report.json" -- "${FX[@]}"
expect_exit 0
expect_leaked false
grep -q 'COMMAND left' "$T/tg.err" && fail "a line about leftovers when there were none"

TEST "without -v: the one line, the first three named, the count of the rest"
TG_VERBOSE=0
fx --then exit 0 fanout 5
tg_run -- "${FX[@]}"
TG_VERBOSE=1
expect_ready
expect_exit 0
line=$(grep -c '' "$T/tg.err")
expect_eq "$line" 1 "lines on stderr"
grep -qE '^treeguard: COMMAND left 5 processes behind: tg_fixture \(pid [0-9]+\) holding the run.s stdout and stderr, .* and 2 more; taken down \(COMMAND: ' "$T/tg.err" ||
    fail "not the one line expected: $(head -c 300 "$T/tg.err")"

TEST "-v lists every leftover with all it held"
fx --then exit 0 fanout 3
tg_run -- "${FX[@]}"
expect_ready
expect_exit 0
expect_eq "$(grep -c '^treeguard: left behind: tg_fixture (pid [0-9]*): holding the run.s stdout and stderr' "$T/tg.err")" 3 \
    "leftovers listed with -v"

TEST "-q: no line"
TG_VERBOSE=0
hold_run listen -- -q
TG_VERBOSE=1
expect_exit 0
[[ -s $T/tg.err ]] && fail "stderr not empty under -q: $(head -c 200 "$T/tg.err")"
expect_leaked true

# timeout's grammar takes the boundary from the environment (an empty value counts as unset)
tg_timeout() {
    local cgroup_parent=""
    [[ $BOUNDARY == cgroup ]] && cgroup_parent=$CG_TEST
    TREEGUARD_BOUNDARY=${BOUNDARY_ARGS[1]} TREEGUARD_CGROUP_PARENT=$cgroup_parent tg_raw timeout "$@"
}

TEST "the timeout grammar: timeout's silence wins, no line"
fx --then exit 0 hold listen
tg_timeout 60 "${FX[@]}"
expect_ready
expect_exit 0
[[ -s $T/tg.err ]] && fail "stderr not empty under the timeout grammar: $(head -c 300 "$T/tg.err")"

TEST "the timeout grammar with -v: the line"
fx --then exit 0 hold listen
tg_timeout -v 60 "${FX[@]}"
expect_ready
expect_exit 0
grep -q '^treeguard: COMMAND left 1 process behind: tg_fixture (pid [0-9]*) listening on 127.0.0.1:[0-9]*; taken down' "$T/tg.err" ||
    fail "no leftover line under timeout -v: $(head -c 300 "$T/tg.err")"

TEST "--leftovers wait: the line says they were waited for"
fx --release "$T/release" --then exit 0 hold listen
tg_start --leftovers wait --timeout 60s --report "$T/report.json" -- "${FX[@]}"
if wait_ready 20; then
    # (-v says when it has read what the leftovers hold; the release comes after it)
    wait_for 20 "treeguard to note the leftover" grep -q '^treeguard: leftovers: 1 member(s) alive' "$T/tg.err"
    touch "$T/release"
    tg_wait 30
    expect_exit 0
    expect_left_line "listening on 127.0.0.1:$(sed -n 's/^port \([0-9]*\)$/\1/p' "$T/pids")" "waited for"
    expect_leaked true
fi

TEST "at a deadline: what the members hold is read before the drain, and in the report"
fx hold listen
tg_start --timeout 2s --report "$T/report.json" -- "${FX[@]}"
wait_ready 20 && tg_wait $((30 + LOAD_MARGIN_S))
expect_exit 124
port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$T/pids")
jq -e --arg w "tcp 127.0.0.1:$port" '.members | any(.holds != null and (.holds | any(.kind == "listening" and .what == $w)))' \
    "$T/report.json" >/dev/null || fail "no member of the report holds the port $port: $(jq -c '[.members[] | .holds]' "$T/report.json" 2>&1 | head -c 300)"
expect_leaked false
grep -q 'COMMAND left' "$T/tg.err" && fail "a leftover line at a deadline (nothing was left over)"
