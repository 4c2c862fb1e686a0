# leftovers_outer: --leftovers outer hands what COMMAND left behind to the enclosing run, which
# takes it down at its end as its own; only a clean exit hands over (a deadline takes everything);
# with no enclosing run it is kill, and the leftovers line says so (and -v at the start), with a command
# line that works when pasted.
#
# The outer run is the harness's (this arm's boundary); its COMMAND is a sh script that starts the
# inner run(s) (the cgroup arm: auto, nesting the leaf in the outer one; else this arm's boundary,
# same state directory; its pid in $T/inner.pid), prints "inner exit N" to $T/inner.exits, and waits
# for $T/release before
# it exits, so that the test can look at the handed-over processes while the outer run is on.
[[ $BOUNDARY == pidns ]] && skip_suite "a pid-namespace boundary takes no processes in (outer is kill there)"
# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

inner_args() {
    INNER=("$TREEGUARD" run -v --state-dir "$STATE")
    [[ $BOUNDARY == process-group ]] && INNER+=(--boundary process-group)
    return 0
}
# outer_start OUTER_OPTIONS... -- INNER_OPTIONS... -- COMMAND...: the outer run over the script
outer_start() {
    local -a outer=() inner_opts=()
    while [[ $1 != -- ]]; do outer+=("$1"); shift; done
    shift
    while [[ $1 != -- ]]; do inner_opts+=("$1"); shift; done
    shift
    inner_args
    # shellcheck disable=SC2016
    local script='dir=$1; shift
"$@" 2>"$dir/inner.err" &
echo $! >"$dir/inner.pid"
wait $!
echo "inner exit $?" >>"$dir/inner.exits"
while [ ! -e "$dir/release" ]; do sleep 0.05; done'
    tg_start --report "$T/outer.json" "${outer[@]}" -- sh -c "$script" sh "$T" "${INNER[@]}" "${inner_opts[@]}" -- "$@"
}
# expect_handed_to_outer REPORT N: N of the fixture's processes are alive (LEFT, "pid:start"), each
# a child of the outer treeguard ($TG_PID), in the outer leaf (cgroup arm), and named in REPORT as
# handed over to run $OUTER_ID
expect_handed_to_outer() {
    local report=$1 n=$2 e pid cg line leaf=""
    members_alive
    LEFT=("${ALIVE[@]}")
    ((${#LEFT[@]} == n)) || { fail "${#LEFT[@]} of the fixture's processes alive after the inner run ended, expected $n"; return 1; }
    while IFS= read -r line; do
        [[ $line =~ ^treeguard:\ boundary\ cgroup\ (.*)$ ]] && leaf=${BASH_REMATCH[1]#"$CG_MOUNT"}
    done <"$T/tg.err"
    for e in "${LEFT[@]}"; do
        pid=${e%%:*}
        alive_as "$pid" "${e#*:}" || { fail "leftover $pid is not alive after the inner run ended"; continue; }
        [[ $PS_PPID == "$TG_PID" ]] || fail "leftover $pid's parent is $PS_PPID, not the outer treeguard $TG_PID"
        if [[ $BOUNDARY == cgroup ]]; then
            cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
            [[ $cg == "$leaf" ]] || fail "leftover $pid is in cgroup $cg, not the outer leaf $leaf"
        fi
        jq -e --arg p "$pid" --arg to "$OUTER_ID" '.handed_over | any(.pid == ($p | tonumber) and .to_run == $to)' "$report" >/dev/null ||
            fail "the inner report does not name $pid as handed over to run $OUTER_ID: $(jq -c .handed_over "$report" 2>/dev/null)"
    done
}
# outer_run_id: OUTER_ID, the outer run's id, as the (first) inner run's -v line names it
outer_run_id() {
    OUTER_ID=$(grep -oE 'goes to run [^ ]+' "$T/inner.err" | head -1)
    OUTER_ID=${OUTER_ID#goes to run }
    echo "$OUTER_ID"
}

TEST "a leftover (a double-fork daemon) handed over: alive after the inner run, taken down by the outer run at its end"
fx --then exit 0 daemon
outer_start --kill-after 5s -- --leftovers outer --report "$T/inner.json" -- "${FX[@]}"
if wait_for 30 "the inner run to end" has_line "$T/inner.exits" "inner exit 0"; then
    outer_run_id >/dev/null
    [[ -n $OUTER_ID ]] || fail "the inner run's -v does not name the enclosing run: $(head -c 300 "$T/inner.err" | tr '\n' '|')"
    expect_handed_to_outer "$T/inner.json" 1
    grep -q "^treeguard: handed 1 leftover(s) to run $OUTER_ID " "$T/inner.err" ||
        fail "no 'handed 1 leftover(s) to run $OUTER_ID' line from the inner run"
    [[ $(jq -r .takedown "$T/inner.json") == pass ]] || fail "the inner run's takedown is not a pass"
    touch "$T/release"
    tg_wait 60
    expect_exit 0
    # the outer run took it down as its own: its drain, its proof, its report's members
    grep -q '^treeguard: drain: TERM to every member' "$T/tg.err" || fail "the outer run did not drain"
    for e in "${LEFT[@]}"; do
        jq -e --arg p "${e%%:*}" '.members | any(.pid == ($p | tonumber))' "$T/outer.json" >/dev/null ||
            fail "the outer report's members do not name leftover ${e%%:*}"
    done
    [[ $(jq -r .takedown "$T/outer.json") == pass ]] || fail "the outer run's takedown is not a pass"
fi

TEST "leftovers that ignore TERM, handed over: the outer run forces them after its --kill-after, authority first"
fx --then exit 0 ignore-term
outer_start --kill-after 1s -- --leftovers outer --report "$T/inner.json" -- "${FX[@]}"
if wait_for 30 "the inner run to end" has_line "$T/inner.exits" "inner exit 0"; then
    outer_run_id >/dev/null
    expect_handed_to_outer "$T/inner.json" 4
    touch "$T/release"
    tg_wait $((20 + LOAD_MARGIN_S))
    expect_exit 0
    grep -q "^treeguard: COMMAND left 4 processes behind: .*; taken down: killed 4 that resisted TERM for 1s" "$T/tg.err" ||
        fail "no line from the outer run saying it killed the 4 that resisted TERM: $(grep -v '^treeguard: \(boundary\|child\|guardian\|state\)' "$T/tg.err" | tail -3 | tr '\n' '|')"
    [[ $(jq -r '.authority | length' "$T/outer.json") -ge 1 ]] || fail "the outer run's report has no authority entry"
fi

TEST "a chain of three nested runs: the innermost's leftover goes to the middle run, then to the outermost, which takes it down"
fx --then exit 0 daemon
inner_args
# the middle run's COMMAND: the innermost run, then its exit on the middle's stderr
# shellcheck disable=SC2016
middle='"$@"; echo "innermost exit $?" >&2'
outer_start --kill-after 5s -- --leftovers outer --report "$T/middle.json" -- \
    sh -c "$middle" sh "${INNER[@]}" --leftovers outer --report "$T/innermost.json" -- "${FX[@]}"
if wait_for 30 "the middle run to end" has_line "$T/inner.exits" "inner exit 0"; then
    grep -q '^innermost exit 0$' "$T/inner.err" || fail "the innermost run did not exit 0: $(grep -v '^treeguard' "$T/inner.err" | head -3 | tr '\n' '|')"
    middle_id=$(jq -r .run_id "$T/middle.json" 2>/dev/null)
    OUTER_ID=$middle_id
    members_alive
    for e in "${ALIVE[@]}"; do
        jq -e --arg p "${e%%:*}" --arg to "$middle_id" '.handed_over | any(.pid == ($p | tonumber) and .to_run == $to)' "$T/innermost.json" >/dev/null ||
            fail "the innermost report does not name ${e%%:*} as handed to the middle run $middle_id: $(jq -c .handed_over "$T/innermost.json" 2>/dev/null)"
    done
    outer_run_id >/dev/null # (the middle run's line comes first)
    [[ -n $OUTER_ID && $OUTER_ID != "$middle_id" ]] || fail "the middle run's -v does not name the outermost run"
    expect_handed_to_outer "$T/middle.json" 1
    touch "$T/release"
    tg_wait 60
    expect_exit 0
fi

TEST "a deadline in the inner run: its whole tree is taken down, nothing handed over, the outer run goes on"
fx --then sleep daemon
outer_start --kill-after 5s -- --leftovers outer --timeout 1s --kill-after 1s --report "$T/inner.json" -- "${FX[@]}"
if wait_for $((10 + LOAD_MARGIN_S)) "the inner run to end at its deadline" has_line "$T/inner.exits" "inner exit 124"; then
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "the inner deadline left ${#ALIVE[@]} alive:$(describe_pids "${ALIVE[@]}")"
    [[ $(jq -r '.handed_over | length' "$T/inner.json") == 0 ]] || fail "the inner report names processes handed over at a deadline"
    grep -q '^treeguard: handed ' "$T/inner.err" && fail "the inner run handed over at its deadline"
    running "$TG_PID" || fail "the outer run ended with the inner deadline"
    touch "$T/release"
    tg_wait 60
    expect_exit 0
fi

TEST "a stop request to the inner run (TERM, TERM): its whole tree is taken down, nothing handed over"
fx --then sleep ignore-term
outer_start --kill-after 5s -- --leftovers outer --kill-after 1s --report "$T/inner.json" -- "${FX[@]}"
if wait_ready 20 && wait_for 10 "the inner run's pid" test -s "$T/inner.pid"; then
    read -r inner_pid <"$T/inner.pid"
    kill -TERM "$inner_pid"
    if wait_for 20 "the inner run to pass TERM on" grep -q '^treeguard: forwarded TERM to COMMAND$' "$T/inner.err"; then
        kill -TERM "$inner_pid"
        wait_for $((10 + LOAD_MARGIN_S)) "the inner run to stop" has_line "$T/inner.exits" "inner exit 143"
    fi
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "the stop request left ${#ALIVE[@]} alive:$(describe_pids "${ALIVE[@]}")"
    [[ $(jq -r '.handed_over | length' "$T/inner.json" 2>/dev/null) == 0 ]] || fail "the inner report names processes handed over on a stop request"
    running "$TG_PID" || fail "the outer run ended with the inner stop request"
fi
touch "$T/release"
tg_wait 60
expect_exit 0

TEST "the inner controller SIGKILLed: its guardian takes its whole tree down (2s + load margin), the outer run goes on"
fx --then sleep daemon
outer_start --kill-after 5s -- --leftovers outer -- "${FX[@]}"
if wait_ready 20 && wait_for 10 "the inner run's pid" test -s "$T/inner.pid"; then
    read -r inner_pid <"$T/inner.pid"
    kill -KILL "$inner_pid"
    wait_for 10 "the inner run's death to reach the outer COMMAND" has_line "$T/inner.exits" "inner exit 137"
    wait_members_gone $((GUARDIAN_TAKEDOWN_S + LOAD_MARGIN_S)) "the inner tree after its controller was SIGKILLed"
    running "$TG_PID" || fail "the outer run ended with the inner controller"
fi
touch "$T/release"
tg_wait 60
expect_exit 0

TEST "no enclosing run: outer is kill, -v says so in one line, and its command line works when pasted"
fx --then exit 0 daemon
tg_run --leftovers outer -- "${FX[@]}"
expect_ready
expect_exit 0
line=$(grep '^treeguard: --leftovers outer: ' "$T/tg.err")
[[ $line == "treeguard: --leftovers outer: no enclosing run (not inside a treeguard run: no TREEGUARD_RUNS in the environment), so leftovers are killed as with --leftovers kill; run inside one, as in: treeguard run -- treeguard run --leftovers outer -- "* ]] ||
    fail "-v line: '$line'"
grep -q '^treeguard: drain: TERM to every member' "$T/tg.err" || fail "the leftover was not drained as with kill"
members_alive
((${#ALIVE[@]} == 0)) || fail "leftovers alive after the run:$(describe_pids "${ALIVE[@]}")"
# pasted, with "treeguard" on PATH (a wrapper adding -v, so the hand-over shows)
recipe=${line#*as in: }
mkdir -p "$T/bin"
printf '#!/bin/sh\n[ "$1" = run ] && { shift; exec %q run -v "$@"; }\nexec %q "$@"\n' "$TREEGUARD" "$TREEGUARD" >"$T/bin/treeguard"
chmod 755 "$T/bin" "$T/bin/treeguard"
: >"$PIDFILE"
rc=0
# (this arm's boundary from the environment: both runs get it, and the inner one, inside the outer
# run's leaf or group, hands over to it all the same)
arm_env=()
[[ $BOUNDARY == cgroup ]] && arm_env=(TREEGUARD_CGROUP_PARENT="$CG_TEST")
[[ $BOUNDARY == process-group ]] && arm_env=(TREEGUARD_BOUNDARY=process-group)
env "${arm_env[@]}" TG_TOKEN="$TOKEN" TG_PIDFILE="$PIDFILE" TREEGUARD_STATE_DIR="$STATE" PATH="$T/bin:$PATH" \
    "${TG_PREFIX[@]}" sh -c "$recipe" </dev/null >"$T/pasted.out" 2>"$T/pasted.err" {POLL_FD}<&- || rc=$?
expect_eq "$rc" 0 "the pasted command's exit"
grep -q '^treeguard: handed 1 leftover(s) to run ' "$T/pasted.err" ||
    fail "the pasted command did not hand the leftover over: $(grep -v '^treeguard: \(boundary\|child\|guardian\|state\)' "$T/pasted.err" | head -4 | tr '\n' '|')"
members_alive
((${#ALIVE[@]} == 0)) || fail "the pasted command left ${#ALIVE[@]} alive"

TEST "a launcher's run under ninja typed alone: one line by default says what it took down and the command that wraps the build, which works when pasted; -q silences it"
command -v ninja >/dev/null || skip_test "ninja is not installed"
if [[ -z $TEST_SKIP ]]; then
    # a server, as a compiler cache starts one: a child listening on a port, its stdio on /dev/null
    # (ninja reads a step's output until every holder of it is gone)
    fx --then exit 0 hold listen
    # "treeguard" on PATH as a launcher names it; no -v
    mkdir -p "$T/plain" "$T/verbose" "$T/nj"
    chmod 777 "$T/nj" # ninja writes its log there, as this arm's user
    ln -s "$TREEGUARD" "$T/plain/treeguard"
    quoted=$(printf ' %q' "${FX[@]}")
    printf 'rule step\n  command = treeguard run --leftovers outer --%s\nbuild a: step\n' "$quoted" >"$T/nj/b.ninja"
    printf 'rule step\n  command = treeguard run -q --leftovers outer --%s\nbuild a: step\n' "$quoted" >"$T/nj/quiet.ninja"
    chmod -R a+rX "$T/plain" "$T/nj"
    arm_env=()
    [[ $BOUNDARY == cgroup ]] && arm_env=(TREEGUARD_CGROUP_PARENT="$CG_TEST")
    [[ $BOUNDARY == process-group ]] && arm_env=(TREEGUARD_BOUNDARY=process-group)
    # ninja_in DIR COMMAND...: COMMAND in $T/nj with DIR's treeguard first on PATH, as this arm's
    # user (its output in $T/ninja.out)
    ninja_in() {
        local dir=$1; shift
        (cd "$T/nj" && env "${arm_env[@]}" TG_TOKEN="$TOKEN" TG_PIDFILE="$PIDFILE" TREEGUARD_STATE_DIR="$STATE" \
            PATH="$dir:$PATH" "${TG_PREFIX[@]}" "$@") </dev/null >"$T/ninja.out" 2>&1 {POLL_FD}<&-
    }
    rc=0
    ninja_in "$T/plain" ninja -f b.ninja || rc=$?
    expect_eq "$rc" 0 "ninja's exit"
    mapfile -t said < <(grep '^treeguard:' "$T/ninja.out")
    expect_eq "${#said[@]}" 1 "treeguard's lines under ninja ($(tr '\n' '|' <"$T/ninja.out"))"
    line=${said[0]-}
    [[ $line == "treeguard: COMMAND left 1 process behind: "*" listening on 127.0.0.1:"*"; taken down (COMMAND: "*"); --leftovers outer had no enclosing run to hand them to (not inside a treeguard run: no TREEGUARD_RUNS in the environment); wrap the build in one: treeguard run -- ninja -f b.ninja" ]] ||
        fail "the line: '$line'"
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "leftovers alive after ninja:$(describe_pids "${ALIVE[@]}")"
    # -q: not a word
    : >"$PIDFILE"
    rc=0
    ninja_in "$T/plain" ninja -f quiet.ninja || rc=$?
    expect_eq "$rc" 0 "ninja's exit (-q)"
    ! grep -q '^treeguard:' "$T/ninja.out" || fail "-q printed: $(grep '^treeguard:' "$T/ninja.out")"
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "leftovers alive after ninja (-q):$(describe_pids "${ALIVE[@]}")"
    # pasted as printed (a treeguard adding -v to each run, so that the hand-over shows)
    printf '#!/bin/sh\n[ "$1" = run ] && { shift; exec %q run -v "$@"; }\nexec %q "$@"\n' "$TREEGUARD" "$TREEGUARD" >"$T/verbose/treeguard"
    chmod 755 "$T/verbose" "$T/verbose/treeguard"
    : >"$PIDFILE"
    rc=0
    ninja_in "$T/verbose" sh -c "${line##*wrap the build in one: }" || rc=$?
    expect_eq "$rc" 0 "the pasted command's exit"
    grep -q '^treeguard: handed 1 leftover(s) to run ' "$T/ninja.out" ||
        fail "the pasted command did not hand the leftover over: $(grep -v '^treeguard: \(boundary\|child\|guardian\|state\)' "$T/ninja.out" | head -4 | tr '\n' '|')"
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "the pasted command left ${#ALIVE[@]} alive"
fi

TEST "a resolved run is over: never the enclosing run, even for a run inside its leaf; the leftover is taken down"
# treeguard resolve leaves the record's disposition pending: the run whose guardian and controller
# were SIGKILLed, resolved, keeps its COMMAND running in its leaf, and a run started there finds it
# named last in TREEGUARD_RUNS
[[ $BOUNDARY == cgroup ]] || skip_test "a run inside a dead run's leaf needs a leaf (a process group's orphans go to no run)"
if [[ -z $TEST_SKIP ]]; then
    fx --then exit 0 hold listen
    inner_args
    # shellcheck disable=SC2016
    script='dir=$1; shift
while [ ! -e "$dir/go" ]; do sleep 0.05; done
"$@" 2>"$dir/inner.err"
echo "inner exit $?" >"$dir/inner.exits"
while :; do sleep 1; done'
    tg_start -- sh -c "$script" sh "$T" "${INNER[@]}" --leftovers outer --report "$T/inner.json" -- "${FX[@]}"
    wait_for 20 "the outer run's guardian" guardian_of_run
    leaf=$(sed -n 's/^treeguard: boundary cgroup //p' "$T/tg.err" | head -1)
    kill_guardian_and_controller
    the_record
    tg_cmd resolve resolve "$RUN_ID" --why "the test resolved it" --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "resolve's exit ($(cmd_excerpt resolve))"
    touch "$T/go"
    wait_for 60 "the inner run to end" test -s "$T/inner.exits"
    grep -q "^treeguard: --leftovers outer: no enclosing run (run $RUN_ID is over)" "$T/inner.err" ||
        fail "the inner run does not say the resolved run is over: $(grep -i 'outer\|handed' "$T/inner.err" | head -3 | tr '\n' '|')"
    [[ $(jq -r '.handed_over | length' "$T/inner.json" 2>/dev/null) == 0 ]] || fail "the inner report names processes handed over"
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "the leftover lives on in the resolved run's leaf:$(describe_pids "${ALIVE[@]}")"
    # the resolved run's COMMAND, still in its leaf, is this test's to end
    if [[ -n $leaf && -e $leaf/cgroup.kill ]]; then
        echo 1 >"$leaf/cgroup.kill"
        wait_for 20 "the resolved run's leaf to empty" grep -qx 'populated 0' "$leaf/cgroup.events"
        rmdir "$leaf" || fail "could not remove the resolved run's leaf $leaf"
    fi
fi

TEST "a copy of the marker outside the enclosing run's tree is not an enclosing run: nothing handed over, the leftover is killed"
# the outer run's COMMAND tells its marker and waits; a run started beside it (the harness's child,
# not the outer run's) with that marker and state directory must not hand its leftover over: its
# orphans would not go to the outer run (process group), nor is it inside the outer leaf (cgroup)
# shellcheck disable=SC2016
tg_start -- sh -c 'echo "$TREEGUARD_RUNS" >"$0/runs"; while [ ! -e "$0/release" ]; do sleep 0.05; done' "$T"
if wait_for 20 "the outer run's COMMAND to tell its marker" test -s "$T/runs"; then
    fx --then exit 0 daemon
    TREEGUARD_RUNS=$(cat "$T/runs") TG_PIDFILE=$PIDFILE tg_cmd stray run -v "${BOUNDARY_ARGS[@]}" \
        --state-dir "$STATE" --leftovers outer --report "$T/stray.json" -- "${FX[@]}"
    expect_eq "$CMD_RC" 0 "the stray run's exit ($(cmd_excerpt stray))"
    grep -qE "^treeguard: (leftovers not handed to run .*: this treeguard runs in .*, not inside run .*'s leaf|--leftovers outer: no enclosing run \(run .*'s controller \(pid [0-9]+\) is not where this run's orphans go)" "$T/stray.err" ||
        fail "no line saying why nothing was handed over: $(grep -i 'outer\|handed' "$T/stray.err" | head -3 | tr '\n' '|')"
    [[ $(jq -r '.handed_over | length' "$T/stray.json" 2>/dev/null) == 0 ]] || fail "the stray run's report names processes handed over"
    members_alive
    ((${#ALIVE[@]} == 0)) || fail "the stray run left ${#ALIVE[@]} alive:$(describe_pids "${ALIVE[@]}")"
    touch "$T/release"
    tg_wait 30
    expect_exit 0
fi
