# nested (DESIGN.md [nested]): a treeguard started inside another run's leaf (a launcher under
# `treeguard run -- ninja`, a CI step prefix inside a wrapped job) makes its leaf inside the outer
# one; the outer run's stop, forced kill and proof cover the nested leaves; the outer controller's
# death takes the nested runs down (its guardian), leaving no cgroup behind; an inner run's death
# leaves the outer one working; records in the shared state directory gate correctly. A nested
# run starts no guardian process of its own: the outer run's guardian guards it
# (an inner controller's SIGKILL: that guardian drains the inner tree with the inner run's own
# signal and grace, forces what is left, authority first, and settles its record), down a chain of
# three runs. And the
# delegated path: uid 65534 in a cgroup root made and chowned for it as Delegate=yes does gets the
# cgroup boundary from --boundary auto. Every test ends (in the harness) with no survivor by token,
# no cgroup left under the test's parent, the sentinel alive.
[[ $BOUNDARY == cgroup ]] || skip_suite "nested runs need writable cgroups (the cgroup arm)"
# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

# inner_leaf N: the leaf the Nth inner run reported (-v) in $T/inner.N.err
inner_leaf() {
    local line
    INNER_LEAF=""
    while IFS= read -r line; do
        [[ $line =~ ^treeguard:\ boundary\ cgroup\ (.*)$ ]] && INNER_LEAF=${BASH_REMATCH[1]}
    done <"$T/inner.$1.err" 2>/dev/null
    [[ -n $INNER_LEAF ]]
}
# outer_leaf: the leaf the outer run reported (-v)
outer_leaf() {
    local line
    OUTER_LEAF=""
    while IFS= read -r line; do
        [[ $line =~ ^treeguard:\ boundary\ cgroup\ (.*)$ ]] && OUTER_LEAF=${BASH_REMATCH[1]}
    done <"$T/tg.err"
    [[ -n $OUTER_LEAF ]]
}
# expect_nested N: the Nth inner run made its leaf inside the outer run's leaf
expect_nested() {
    outer_leaf || { fail "no boundary line from the outer run"; return 1; }
    inner_leaf "$1" || { fail "inner run $1 reported no cgroup boundary:$(head -c 300 "$T/inner.$1.err" 2>/dev/null | tr '\n' '|')"; return 1; }
    [[ $INNER_LEAF == "$OUTER_LEAF"/treeguard-* ]] ||
        fail "inner run $1's leaf $INNER_LEAF is not inside the outer leaf $OUTER_LEAF"
}
inner_ready() { local n; for n in "$@"; do has_line "$T/inner.$n.pids" ready || return 1; done; }
# expect_guarded_by_outer N...: each inner run's -v says its guardian is the outer run's (the one
# guardian_of_run found), which guards the runs nested in its leaf: no guardian process of its own
expect_guarded_by_outer() {
    local n line
    [[ -n ${GUARDIAN_PID:-} ]] || { fail "no 'treeguard: guardian pid N' line from the outer run"; return 1; }
    for n in "$@"; do
        line=$(grep -m1 '^treeguard: guardian pid ' "$T/inner.$n.err")
        [[ $line =~ ^treeguard:\ guardian\ pid\ $GUARDIAN_PID:\ run\ [^\ ]+\'s,\ which\ guards ]] ||
            fail "inner run $n is not guarded by the outer run's guardian (pid $GUARDIAN_PID): '$line'"
    done
}
# sockets_held PID: how many sockets process PID holds (a guardian: its listener, and one connection
# per nested run whose announcement it took)
sockets_held() {
    local fd n=0
    for fd in /proc/"$1"/fd/*; do
        [[ $(readlink "$fd" 2>/dev/null) == socket:* ]] && n=$((n + 1))
    done
    echo "$n"
}
# outer_record: RECORD = the outer run's record (open or finished), from its leaf's name
outer_record() {
    outer_leaf || { fail "no boundary line from the outer run"; return 1; }
    RECORD=$STATE/${OUTER_LEAF##*/treeguard-}.json
    [[ -e $RECORD ]] || RECORD=$STATE/finished/${OUTER_LEAF##*/treeguard-}.json
    [[ -e $RECORD ]] || { fail "no record of the outer run"; return 1; }
}
# no_own_record ID: run ID (nested, held by the outer run's guardian) has no record file of its own
no_own_record() {
    [[ ! -e $STATE/$1.json && ! -e $STATE/finished/$1.json ]] ||
        fail "nested run $1 has a record file of its own"
}
# inner_record N: RECORD = the Nth inner run's record, as the outer run's record keeps it (its
# nested runs' records: written there only for what evidence needs), in $T/inner.N.record.json
inner_record() {
    local id
    inner_leaf "$1" || { fail "inner run $1 reported no cgroup boundary"; return 1; }
    id=${INNER_LEAF##*/treeguard-}
    outer_record || return 1
    jq -e --arg id "$id" '.nested[] | select(.run_id == $id)' "$RECORD" >"$T/inner.$1.record.json" 2>/dev/null ||
        { fail "the outer run's record keeps no record of inner run $1 ($id)"; return 1; }
    no_own_record "$id"
    RECORD=$T/inner.$1.record.json
}
# expect_settled_by_outer_guardian N: the Nth inner run's record, kept in the outer run's, is pass,
# with "controller lost" and the drain of the outer run's guardian (its tree dies of TERM: no forced
# kill, so no authority; DESIGN.md [guardian])
expect_settled_by_outer_guardian() {
    inner_record "$1" || return 1
    expect_eq "$(rec .disposition)" pass "inner run $1's disposition ($RECORD)"
    rec '.notes[]' | grep -qx 'controller lost' || fail "inner run $1's record has no 'controller lost' note: $(rec -c .notes)"
    rec '.notes[]' | grep -q "^drain after controller death: TERM to every process of the run .* by guardian pid $GUARDIAN_PID;" ||
        fail "inner run $1's record shows no drain by the outer guardian (pid $GUARDIAN_PID): $(rec -c .notes)"
    expect_eq "$(rec '.authority | length')" 0 "authority entries of inner run $1 (its tree dies of TERM)"
}

# The outer COMMAND: sh running inner treeguards (auto boundary, same state directory, and the
# options in $INNER_OPTS when the test exports it), each over a
# fixture shape with its own pid file ($T/inner.N.pids) and stderr ($T/inner.N.err); the inner
# treeguard's pid goes to $T/inner.N.pid. Then it waits for them and prints their exits, and, while
# $T/hold exists, stays (so that the outer run's own end takes nothing down meanwhile).
nested_script='
dir=$1 tg=$2 state=$3 fx=$4 n=$5
shift 5
i=1
while [ "$i" -le "$n" ]; do
    # shellcheck disable=SC2086 # INNER_OPTS: options for the inner runs, words
    TG_PIDFILE=$dir/inner.$i.pids "$tg" run -v ${INNER_OPTS:-} --state-dir "$state" -- "$fx" "$@" 2>"$dir/inner.$i.err" &
    echo $! >"$dir/inner.$i.pid"
    i=$((i + 1))
done
i=1
while [ "$i" -le "$n" ]; do
    wait "$(cat "$dir/inner.$i.pid")"
    echo "inner $i exit $?" >>"$dir/inner.exits"
    i=$((i + 1))
done
while [ -e "$dir/hold" ]; do sleep 0.02; done
'
# kill_inner_and_wait N WHAT: SIGKILL to inner run N's controller, then wait (bound: the guardian's
# takedown and the load margin) until every process of its pid file is gone, taken down by the
# outer run's guardian; notes how long it took
kill_inner_and_wait() {
    local n=$1 what=$2 inner_pid a b t0
    local -a members=()
    read -r inner_pid <"$T/inner.$n.pid"
    while read -r a b _; do [[ $a =~ ^[0-9]+$ ]] && members+=("$a:$b"); done <"$T/inner.$n.pids"
    KILLED_MEMBERS=("${members[@]}")
    now_ms; t0=$NOW_MS
    kill -KILL "$inner_pid"
    wait_for $((GUARDIAN_TAKEDOWN_S + LOAD_MARGIN_S)) "$what to be taken down by the outer run's guardian" killed_members_gone &&
        { now_ms; note "$what gone within $((NOW_MS - t0))ms of its controller's SIGKILL"; }
}
killed_members_gone() {
    local e
    for e in "${KILLED_MEMBERS[@]}"; do alive_as "${e%%:*}" "${e#*:}" && return 1; done
    return 0
}

# as_prefix_user FILE...: files the test makes for its runs belong to the user they run as
as_prefix_user() { ((${#TG_PREFIX[@]} == 0)) || chown "$NOBODY_UID:$NOBODY_GID" "$@"; }
nested_start() { # nested_start N OUTER_OPTIONS... -- FIXTURE_ARGS...
    local n=$1
    shift
    local -a outer=()
    while [[ $1 != -- ]]; do outer+=("$1"); shift; done
    shift
    local i
    for ((i = 1; i <= n; i++)); do : >"$T/inner.$i.pids" && as_prefix_user "$T/inner.$i.pids"; done
    # the inner runs' treeguard: INNER_TREEGUARD when set (a wrapper), else the outer's
    tg_start "${outer[@]}" -- sh -c "$nested_script" sh "$T" "${INNER_TREEGUARD:-$TREEGUARD}" "$STATE" "$TG_FIXTURE" "$n" "$@"
}

TEST "outer deadline over two nested runs whose trees ignore TERM: both leaves inside, all taken down at deadline + kill-after"
nested_start 2 --timeout 2s --kill-after 1s -- --then sleep ignore-term
if wait_for 20 "both inner fixtures to be ready" inner_ready 1 2; then
    expect_nested 1
    expect_nested 2
    # the shared state directory holds the outer record, pending, alive (the inner runs' are
    # held by its guardian): a concurrent run is not refused by it
    for n in 1 2; do inner_leaf "$n" && no_own_record "${INNER_LEAF##*/treeguard-}"; done
    tg_cmd concurrent run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" -- true
    expect_eq "$CMD_RC" 0 "a concurrent run beside the nested ones ($(cmd_excerpt concurrent))"
    tg_wait 60
    expect_exit 124
    expect_elapsed_at_least 2950 "deadline 2s + kill-after 1s: the inner trees ignore TERM"
    expect_elapsed_below $((3000 + LOAD_MARGIN_MS)) "the forced kill after kill-after 1s"
    # the inner runs died with the outer leaf; their records do not block the next run
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
fi

TEST "outer controller SIGKILLed: its guardian takes the nested runs down (2s + grace + load margin) and leaves no cgroup"
# the inner trees ignore TERM: the outer guardian's drain (grace 1s) ends in its forced kill
nested_start 2 --kill-after 1s -- --then sleep ignore-term
if wait_for 20 "both inner fixtures to be ready" inner_ready 1 2; then
    expect_nested 1
    expect_nested 2
    guardian_of_run || fail "no 'treeguard: guardian pid N' line from the outer run"
    expect_guarded_by_outer 1 2
    # the guardian has taken both announcements (its listener and two connections), so that the
    # takedown below finds them taken, not waiting to be: a run taken while its controller lived is
    # settled too
    wait_for 10 "the outer guardian to hold both announced connections" \
        eval '(($(sockets_held "$GUARDIAN_PID") >= 3))'
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    now_ms; t0=$NOW_MS
    wait_for $((GUARDIAN_TAKEDOWN_S + 1 + LOAD_MARGIN_S)) "the nested trees to be gone (token)" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))' &&
        { now_ms; note "everything gone within $((NOW_MS - t0))ms of treeguard's exit"; }
    [[ -n $GUARDIAN_PID ]] && wait_for 10 "the outer guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    cg_children "$CG_TEST"
    ((${#CG_CHILDREN[@]} == 0)) || fail "the outer guardian left cgroups behind: ${CG_CHILDREN[*]#"$CG_MOUNT"} $(find "${CG_CHILDREN[@]}" -mindepth 1 -type d 2>/dev/null | sed "s|^$CG_MOUNT||" | tr '\n' ' ')"
    # the inner runs died with the outer leaf, which the outer guardian's authority and proof cover:
    # nothing of them is left pending, and they have no record files of their own
    for n in 1 2; do
        inner_leaf "$n" && no_own_record "${INNER_LEAF##*/treeguard-}"
    done
    outer_record && [[ $(rec '[.nested[]? | select(.disposition == "pending")] | length') == 0 ]] ||
        fail "a nested run's record is left pending in the outer run's: $(rec -c .nested)"
    [[ ! -e $STATE/nested ]] || [[ -z $(ls -A "$STATE/nested") ]] ||
        fail "the outer guardian left announcements behind: $(ls -R "$STATE/nested" | tr '\n' ' ')"
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
fi

# one_nested_daemon: the outer run, held open ($T/hold), over one nested run whose tree is a
# double-fork daemon, guarded by the outer run's guardian (GUARDIAN_PID); false when the daemon
# never got ready
one_nested_daemon() {
    : >"$T/hold"
    nested_start 1 --kill-after 1s -- --then sleep daemon
    wait_for 20 "the inner fixture to be ready" inner_ready 1 || return 1
    expect_nested 1
    guardian_of_run
    expect_guarded_by_outer 1
}

TEST "inner controller SIGKILLed while the outer lives: the outer run's guardian takes the inner tree down (2s + load margin) and settles its record; the outer run goes on"
if one_nested_daemon; then
    # the inner tree (a double-fork daemon) is gone; the outer run is still on
    kill_inner_and_wait 1 "the inner tree"
    wait_for 5 "the inner run's exit to reach the outer COMMAND" has_line "$T/inner.exits" "inner 1 exit 137"
    wait_for 5 "the inner run's record to be settled" eval 'inner_record 1 && [[ $(rec .disposition) == pass ]]'
    expect_settled_by_outer_guardian 1
    running "$TG_PID" || fail "the outer run ended before it was let go"
    rm -f "$T/hold"
    tg_wait 30
    expect_exit 0
    inner_leaf 1 && [[ -d $INNER_LEAF ]] && fail "the inner leaf $INNER_LEAF is still there"
    tg_run -- touch "$T/made"
    expect_exit 0
fi

TEST "a chain of three nested runs: both inner runs guarded by the outermost run's guardian; the innermost controller's SIGKILL takes its tree down only, the others end 0"
# outer -> sh -> middle treeguard (inner 1) -> sh -> innermost treeguard (inner 2) -> fixture daemon
chain_script='
dir=$1 tg=$2 state=$3 fx=$4
"$tg" run -v --state-dir "$state" -- sh -c '"'"'
dir=$1 tg=$2 state=$3 fx=$4
TG_PIDFILE=$dir/inner.2.pids "$tg" run -v --state-dir "$state" -- "$fx" --then sleep daemon 2>"$dir/inner.2.err" &
echo $! >"$dir/inner.2.pid"
wait $!
echo "inner 2 exit $?" >>"$dir/inner.exits"
while [ -e "$dir/hold" ]; do sleep 0.02; done
'"'"' sh "$dir" "$tg" "$state" "$fx" 2>"$dir/inner.1.err"
echo "inner 1 exit $?" >>"$dir/inner.exits"
'
: >"$T/inner.2.pids" && : >"$T/hold"
tg_start -- sh -c "$chain_script" sh "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE"
if wait_for 20 "the innermost fixture to be ready" inner_ready 2; then
    expect_nested 1
    outer_leaf && inner_leaf 1 && middle=$INNER_LEAF && inner_leaf 2 &&
        { [[ $INNER_LEAF == "$middle"/treeguard-* ]] || fail "the innermost leaf $INNER_LEAF is not inside the middle one $middle"; }
    guardian_of_run
    expect_guarded_by_outer 1 2
    kill_inner_and_wait 2 "the innermost tree"
    wait_for 5 "the innermost run's record to be settled" eval 'inner_record 2 && [[ $(rec .disposition) == pass ]]'
    expect_settled_by_outer_guardian 2
    rm -f "$T/hold"
    tg_wait 30
    expect_exit 0
    has_line "$T/inner.exits" "inner 2 exit 137" || fail "the middle run's COMMAND did not see the innermost exit 137: $(tr '\n' '|' <"$T/inner.exits")"
    has_line "$T/inner.exits" "inner 1 exit 0" || fail "the middle run did not end 0: $(tr '\n' '|' <"$T/inner.exits")"
fi

# The enclosing guardian's socket, as a stranger of the same user sees it (STATE/nested/OUTER-ID).
outer_socket() {
    outer_leaf || { fail "no boundary line from the outer run"; return 1; }
    SOCKET=$STATE/nested/${OUTER_LEAF##*/treeguard-}
}
# inner_members_alive N: every process inner run N's pid file names is alive
inner_members_alive() {
    local a b
    while read -r a b _; do
        [[ $a =~ ^[0-9]+$ ]] || continue
        alive_as "$a" "$b" || return 1
    done <"$T/inner.$1.pids"
}
# no_authority_anywhere WHY: no record of the state directory (open or finished) holds an authority
# entry or a "controller lost" note
no_authority_anywhere() {
    local f
    for f in "$STATE"/*.json "$STATE"/finished/*.json; do
        jq -e '([.authority[]?] | length) > 0 or ([.notes[]?] | index("controller lost")) != null or ([.nested[]?.authority[]?] | length) > 0' "$f" >/dev/null 2>&1 &&
            fail "$1: $f holds $(jq -c '{authority, notes, nested}' "$f")"
    done
}
# stranger NAME ARGS...: a process of the same user, outside every run, runs tg_fixture ARGS with
# the pid file $T/NAME.pids (stopped by the test: stop_stranger NAME)
stranger() {
    local name=$1
    shift
    : >"$T/$name.pids" && as_prefix_user "$T/$name.pids"
    TG_TOKEN=$TOKEN TG_PIDFILE=$T/$name.pids "${TG_PREFIX[@]}" "$TG_FIXTURE" "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err" {POLL_FD}<&- &
    STRANGER_PID=$!
}
stop_stranger() {
    local a b
    read -r a b _ <"$T/$1.pids" 2>/dev/null
    [[ $a =~ ^[0-9]+$ ]] && alive_as "$a" "$b" && kill -KILL "$a"
    wait_for 10 "the stranger $1 to die" eval '! { [[ $a =~ ^[0-9]+$ ]] && alive_as $a $b; }'
}

# stranger_hangs_up: the body of the stranger's-line cases (as root, and as a delegated user)
stranger_hangs_up() {
    : >"$T/hold"
    nested_start 1 -- --release "$T/release" sleep
    if wait_for 20 "the inner fixture to be ready" inner_ready 1 && outer_socket; then
        expect_nested 1
        guardian_of_run
        expect_guarded_by_outer 1
        expect_nested 1
        inner_id=${INNER_LEAF##*/treeguard-}
        read -r inner_pid <"$T/inner.1.pid"
        inner_start=$(start_of "$inner_pid")
        # The run's announcement as its controller said it (every word right), then shorter ones.
        stranger stranger --then exit 0 unix-say "$SOCKET" \
            "A $inner_id $inner_pid $inner_start $INNER_LEAF - TERM/10000000000 / $TG_FIXTURE sleep" \
            "A $inner_id $inner_pid $inner_start" "A $inner_id $INNER_LEAF / sleep" "sync"
        wait "$STRANGER_PID"
        expect_eq "$?" 0 "the stranger's lines read by the guardian ($(head -c 200 "$T/stranger.err"))"
        has_line "$T/stranger.pids" "said 4" || fail "the stranger did not say its lines: $(tr '\n' '|' <"$T/stranger.pids")"
        inner_members_alive 1 || fail "the live nested run's tree was killed after a stranger's line"
        no_authority_anywhere "a stranger's line"
        touch "$T/release"
        wait_for 20 "the inner run to end" has_line "$T/inner.exits" "inner 1 exit 0" ||
            fail "the inner run: $(tr '\n' '|' <"$T/inner.exits" 2>/dev/null) $(tail -n 3 "$T/inner.1.err" | tr '\n' '|')"
        rm -f "$T/hold"
        tg_wait 30
        expect_exit 0
        tg_run -- touch "$T/made"
        expect_exit 0
    fi
}

TEST "a stranger of the same user writes the announcement of a live nested run to the enclosing guardian and hangs up: ignored; the nested run goes on and ends 0"
# The line alone is no controller's death: the enclosing guardian acts for a nested run only on
# the death of the process that announced it. The stranger says each line on a connection of its
# own and hangs up once the guardian has read it; its last line is read after the guardian dealt
# with the hang-ups before it (one loop, connections in turn).
stranger_hangs_up

TEST "a flood of connections to the enclosing guardian: its descriptors stay bounded; a nested run started during it is guarded (2s + load margin after its controller's SIGKILL); the outer controller's death is still acted on"
# The outer COMMAND starts its nested run only once $T/go exists, after the flood; the flood (a
# stranger of the same user) holds its connections, saying nothing, until the end of the test: three
# times the descriptors the outer run (and its guardian) may have (512).
late_script='
dir=$1 tg=$2 state=$3 fx=$4
shift 4
while [ ! -e "$dir/go" ]; do sleep 0.02; done
TG_PIDFILE=$dir/inner.1.pids "$tg" run -v --state-dir "$state" -- "$fx" "$@" 2>"$dir/inner.1.err" &
echo $! >"$dir/inner.1.pid"
wait $!
echo "inner 1 exit $?" >>"$dir/inner.exits"
while [ -e "$dir/hold" ]; do sleep 0.02; done
'
: >"$T/inner.1.pids" && : >"$T/hold"
TG_WRAP=(prlimit --nofile=512:512 --)
tg_start --kill-after 1s -- sh -c "$late_script" sh "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE" --then sleep daemon
TG_WRAP=()
if wait_for 20 "the outer run's guardian" guardian_of_run && outer_socket &&
    wait_for 20 "the enclosing guardian's socket" test -S "$SOCKET"; then
    stranger flood unix-flood "$SOCKET" 1500
    if wait_for 30 "the flood to be in place" has_line "$T/flood.pids" ready; then
        note "$(grep -m1 '^flooded ' "$T/flood.pids") connections held by the stranger"
        fds=$(ls "/proc/$GUARDIAN_PID/fd" 2>/dev/null | wc -l)
        ((fds <= 100)) || fail "the enclosing guardian holds $fds descriptors during the flood (at most 100 expected)"
        touch "$T/go"
        if wait_for 20 "the inner fixture to be ready" inner_ready 1; then
            expect_nested 1
            kill_inner_and_wait 1 "the inner tree started during the flood"
        fi
        kill -KILL "$TG_PID"
        tg_wait 10
        now_ms; t0=$NOW_MS
        wait_for $((GUARDIAN_TAKEDOWN_S + LOAD_MARGIN_S)) "the outer leaf to be taken down by its guardian during the flood" \
            eval '! [[ -d $OUTER_LEAF ]] || ! cg_populated "$OUTER_LEAF"' &&
            { now_ms; note "the outer leaf emptied within $((NOW_MS - t0))ms of its controller's SIGKILL"; }
    fi
    stop_stranger flood
fi

# guardian_killed_then_controller: the body of the guardian-killed cases (as root, and as a
# delegated user)
guardian_killed_then_controller() {
    if one_nested_daemon; then
        kill -KILL "$GUARDIAN_PID"
        wait_for 5 "the outer guardian to die" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
        wait_for $((GUARDIAN_TAKEDOWN_S + LOAD_MARGIN_S)) "the nested run to say it guards itself" \
            grep -q "^treeguard: the enclosing run's guardian (pid $GUARDIAN_PID) is gone: this run guards itself, guardian pid [0-9]*\$" "$T/inner.1.err"
        kill_inner_and_wait 1 "the inner tree, its enclosing guardian gone"
        wait_for 5 "the inner run's exit to reach the outer COMMAND" has_line "$T/inner.exits" "inner 1 exit 137"
        rm -f "$T/hold"
        tg_wait 30
        expect_exit 0
        tg_run -- touch "$T/made"
        expect_exit 0
    fi
}

TEST "the enclosing run's guardian SIGKILLed: a nested run announced to it guards itself; its controller's SIGKILL then takes its tree down (2s + load margin)"
guardian_killed_then_controller

TEST "a nested run held by the outer run's guardian: its clean path creates, reads and removes no file of the state directory; status shows it while it lives"
: >"$T/hold"
if ! command -v strace >/dev/null; then
    skip_test "strace not installed (the test lists the nested run's system calls)"
else
    # the inner treeguard under strace: every system call that names a path, its children's too
    printf '#!/bin/sh\nexec strace -f -qq -o %q -e trace=%%file,connect %q "$@"\n' \
        "$T/inner.strace" "$TREEGUARD" >"$T/traced"
    chmod 755 "$T/traced"
    # only the inner run is traced: strace -f on the outer run would trace the inner strace's child
    # too, and a process traced already cannot be traced again (the inner strace could not start it)
    INNER_TREEGUARD=$T/traced nested_start 1 -- --release "$T/release" sleep
    if wait_for 20 "the inner fixture to be ready" inner_ready 1; then
        guardian_of_run
        expect_guarded_by_outer 1
        expect_nested 1
        inner_id=${INNER_LEAF##*/treeguard-}
        tg_cmd status status --json --state-dir "$STATE"
        jq -e --arg id "$inner_id" --arg outer "${OUTER_LEAF##*/treeguard-}" \
            '[.[] | select(.run_id == $id and .nested_in == $outer and .disposition == "pending")] | length == 1' \
            "$T/status.out" >/dev/null || fail "status does not show the live nested run $inner_id: $(head -c 600 "$T/status.out")"
        touch "$T/release"
        wait_for 20 "the inner run to end" has_line "$T/inner.exits" "inner 1 exit 0"
        no_own_record "$inner_id"
        # what the inner treeguard did under the state directory: its checks of the directory
        # itself, and its connection to the outer guardian's socket; no file of it named
        touched=$(grep -F "$STATE/" "$T/inner.strace" | grep -v -F "connect(" | head -5)
        [[ -z $touched ]] || fail "the nested run's clean path named files of the state directory: $touched"
        grep -q -F "connect(" "$T/inner.strace" || fail "the strace of the nested run shows no connect (did it run under strace?)"
    fi
    rm -f "$T/hold"
    tg_wait 30
    expect_exit 0
    # the outer run's record is removed after its clean end; if it is kept, it keeps no nested run's
    outer_leaf && for RECORD in "$STATE/${OUTER_LEAF##*/treeguard-}.json" "$STATE/finished/${OUTER_LEAF##*/treeguard-}.json"; do
        [[ ! -e $RECORD ]] || [[ $(rec '[.nested[]?] | length') == 0 ]] ||
            fail "the outer record keeps nested runs' records after a clean one: $(rec -c .nested)"
    done
fi

TEST "status lists every nested run the outer run's guardian holds while they live (three), each nested in the outer run"
: >"$T/hold"
nested_start 3 -- --release "$T/release" sleep
if wait_for 20 "the inner fixtures to be ready" inner_ready 1 2 3; then
    outer_leaf
    tg_cmd status status --json --state-dir "$STATE"
    for n in 1 2 3; do
        inner_leaf "$n" || { fail "inner run $n reported no cgroup boundary"; continue; }
        jq -e --arg id "${INNER_LEAF##*/treeguard-}" --arg outer "${OUTER_LEAF##*/treeguard-}" \
            '[.[] | select(.run_id == $id and .nested_in == $outer)] | length == 1' "$T/status.out" >/dev/null ||
            fail "status does not show inner run $n: $(jq -c '[.[] | {run_id, nested_in}]' "$T/status.out" 2>&1 | head -c 600)"
    done
    touch "$T/release"
    for n in 1 2 3; do
        wait_for 20 "inner run $n to end 0" has_line "$T/inner.exits" "inner $n exit 0"
    done
fi
rm -f "$T/hold"
tg_wait 30
expect_exit 0

TEST "a nested run's deadline: the authority for its forced kill is written into the outer run's record before the kill; the outer run's record is kept with it"
: >"$T/hold"
export INNER_OPTS="--timeout 1s --kill-after 1s"
nested_start 1 -- ignore-term
unset INNER_OPTS
if wait_for 20 "the inner run to end" has_line "$T/inner.exits" "inner 1 exit 124"; then
    inner_record 1
    expect_eq "$(rec .disposition)" pass "the nested run's disposition, as the outer record keeps it"
    by=$(rec '[.authority[] | select(.action == "cgroup.kill")] | last | .by')
    [[ $by == "controller pid "* ]] || fail "the nested run's authority: $(rec -c .authority)"
fi
rm -f "$T/hold"
tg_wait 30
expect_exit 0
[[ -e $STATE/finished/${OUTER_LEAF##*/treeguard-}.json ]] ||
    fail "the outer run's record, which keeps a forced kill's authority, was not kept (finished)"
tg_run -- touch "$T/made"
expect_exit 0

TEST "the outer run's record cannot be written (EROFS) when a nested run needs its forced kill's authority: the kill is not sent, the nested run ends 122, its tree kept; the outer run then takes it down"
if (($(id -u) != 0)); then
    skip_test "needs root (it mounts a read-only bind mount)"
elif fault_setup erofs; then
    : >"$T/hold"
    export INNER_OPTS="--kill-after 1s"
    nested_start 1 --kill-after 1s -- ignore-term
    unset INNER_OPTS
    if wait_for 20 "the inner fixture to be ready" inner_ready 1; then
        guardian_of_run
        expect_guarded_by_outer 1
        read -r inner_pid <"$T/inner.1.pid"
        inner_start=$(start_of "$inner_pid")
        read -r f_pid f_start _ <"$T/inner.1.pids"
        fault_inject erofs
        # a stop request (the second TERM) to the inner treeguard: its tree ignores TERM, so the
        # end of its grace needs a forced kill, and its authority the outer run's record
        alive_as "$inner_pid" "$inner_start" && kill -TERM "$inner_pid"
        wait_for 20 "the inner treeguard to pass TERM on" grep -q "^treeguard: forwarded TERM to COMMAND\$" "$T/inner.1.err" &&
            alive_as "$inner_pid" "$inner_start" && kill -TERM "$inner_pid"
        if wait_for $((10 + LOAD_MARGIN_S)) "the inner run to end" grep -q "^inner 1 exit" "$T/inner.exits"; then
            has_line "$T/inner.exits" "inner 1 exit 122" ||
                fail "the nested run's exit: $(tr '\n' '|' <"$T/inner.exits") $(grep '^treeguard' "$T/inner.1.err" | tail -5 | tr '\n' '|')"
            alive_as "$f_pid" "$f_start" || fail "the nested run's tree was killed without durable authority"
        fi
        fault_lift erofs
    fi
    rm -f "$T/hold"
    tg_wait $((30 + LOAD_MARGIN_S))
    expect_exit 0
    alive_as "${f_pid:-0}" "${f_start:-0}" && fail "the outer run's end left the nested tree alive"
    ev_cleanup
fi

# The outer COMMAND of the next tests: once $T/go exists, one inner run of an exiting fixture
# ($T/inner.1.*), its exit in $T/inner.exits; then it stays while $T/hold exists.
go_script='
dir=$1 tg=$2 state=$3 fx=$4
while [ ! -e "$dir/go" ]; do sleep 0.02; done
TG_PIDFILE=$dir/inner.1.pids "$tg" run -v --state-dir "$state" -- "$fx" exit 0 2>"$dir/inner.1.err"
echo "inner 1 exit $?" >>"$dir/inner.exits"
while [ -e "$dir/hold" ]; do sleep 0.02; done
'
# go_inner_and_expect_exit CODE: the inner run goes; false when it did not end, else its exit is CODE
go_inner_and_expect_exit() {
    touch "$T/go"
    wait_for 20 "the inner run to end" grep -q "^inner 1 exit" "$T/inner.exits" || return 1
    has_line "$T/inner.exits" "inner 1 exit $1" ||
        fail "the nested run did not end $1: $(tr '\n' '|' <"$T/inner.exits") $(tr '\n' '|' <"$T/inner.1.err")"
}

TEST "a run that blocks dispatch appears while an outer run goes on: its guardian, which answers the gate for the runs nested in it, refuses the next nested run (121, the finding and its cure)"
: >"$T/hold" && : >"$T/inner.1.pids"
tg_start -- sh -c "$go_script" sh "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE"
if wait_for 20 "the outer run's guardian" guardian_of_run && outer_record; then
    # a failed run, as a run of this directory that ended so would have left it
    failed_id=20261206T000000-$$-dead
    jq -c --arg id "$failed_id" \
        '.run_id = $id | .boundary.address = (.boundary.address | sub("treeguard-[^/]*$"; "treeguard-" + $id))
         | .command = ["make"] | .disposition = "failed" | .exit_code = 122 | .authority = [] | .notes = []' \
        "$RECORD" >"$STATE/.failed" && mv "$STATE/.failed" "$STATE/$failed_id.json"
    if go_inner_and_expect_exit 121; then
        grep -q "^treeguard: dispatch refused: run $failed_id (make) failed: .*; unresolved; run: treeguard resolve --state-dir .* $failed_id --why TEXT\$" "$T/inner.1.err" ||
            fail "the nested run's refusal: $(tr '\n' '|' <"$T/inner.1.err")"
        [[ ! -s $T/inner.1.pids ]] || fail "the refused nested run started its COMMAND"
    fi
    rm -f "$STATE/$failed_id.json"
fi
rm -f "$T/hold"
tg_wait 30
expect_exit 0

TEST "a run that is over (its record resolved) takes no nested run while its guardian still listens: the nested run guards itself"
: >"$T/hold" && : >"$T/inner.1.pids"
tg_start -- sh -c "$go_script" sh "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE"
if wait_for 20 "the outer run's guardian" guardian_of_run && outer_record; then
    # the outer record as `treeguard resolve` leaves a run it resolves (its disposition pending),
    # written while the outer controller and guardian live (resolve refuses a live controller here;
    # a run of another pid namespace is resolved so)
    jq -c --arg at "$(date +%s%N)" '.resolution = {why: "the test resolved it", at: ($at | tonumber), by: "uid 0"}' \
        "$RECORD" >"$STATE/.resolved" && mv "$STATE/.resolved" "$RECORD"
    if go_inner_and_expect_exit 0; then
        grep -q "^treeguard: not held by an enclosing run (run [^ ]*'s guardian: run [^ ]* is over): this run guards itself\$" "$T/inner.1.err" ||
            fail "the nested run does not say the resolved run is over: $(grep '^treeguard: \(not held\|guardian\)' "$T/inner.1.err" | tr '\n' '|')"
        grep -q "^treeguard: guardian pid [0-9]*\$" "$T/inner.1.err" ||
            fail "the nested run has no guardian of its own: $(grep '^treeguard: guardian' "$T/inner.1.err" | tr '\n' '|')"
    fi
fi
rm -f "$T/hold"
tg_wait 30
expect_exit 0

# forged_announcement CASE: a stranger of the same user announces a run to the enclosing guardian,
# makes the run's leaf with a process in it (before the announcement for existing-leaf, else after
# it) and exits. CASE: outside (the leaf is beside the outer leaf, not in it), claimed-controller
# (the announcement names another process, the test's shell, as the controller), existing-leaf (the
# leaf is there before the announcement: someone else's), or control (none of these: the guardian
# took the run, and takes its leaf down, authority first, written into the outer run's record). The
# check that it did nothing: a later announcement it answered (it deals with deaths before new
# connections).
# forged_leaf LEAF: LEAF made, with a process in it (the victim: $T/victim.pids)
forged_leaf() {
    mkdir -p "$1"
    : >"$T/victim.pids"
    TG_TOKEN=$TOKEN TG_PIDFILE=$T/victim.pids sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" sleep' sh "$1" "$TG_FIXTURE" </dev/null {POLL_FD}<&- &
    wait_for 20 "the process in the leaf $1" has_line "$T/victim.pids" ready
}
forged_announcement() {
    local kind=$1 id=20261206T000000-$$-beef id2=20261206T000000-$$-cafe leaf
    : >"$T/hold"
    nested_start 0 -- sleep
    wait_for 20 "the outer run's guardian" guardian_of_run && outer_socket &&
        wait_for 20 "the enclosing guardian's socket" test -S "$SOCKET" || return 1
    leaf=$OUTER_LEAF/treeguard-$id
    [[ $kind == outside ]] && leaf=$CG_TEST/elsewhere/treeguard-$id
    [[ $kind == existing-leaf ]] && { forged_leaf "$leaf" || return 1; }
    local claimed="%PID %START"
    [[ $kind == claimed-controller ]] && claimed="$$ $(start_of $$)"
    stranger announcer --release "$T/announcer.go" unix-ask "$SOCKET" "A $id $claimed $leaf - - / sleep"
    wait_for 20 "the announcer's reply" has_line "$T/announcer.pids" ready || return 1
    note "the guardian's reply to the announcement: $(grep -m1 '^reply' "$T/announcer.pids")"
    read -r a_pid a_start _ <"$T/announcer.pids"
    [[ $kind == existing-leaf ]] || forged_leaf "$leaf" || return 1
    touch "$T/announcer.go"
    wait_for 10 "the announcer to exit" eval '! alive_as $a_pid $a_start'
    stranger sync --then exit 0 unix-ask "$SOCKET" "A $id2 %PID %START $OUTER_LEAF/treeguard-$id2 - - / true"
    wait "$STRANGER_PID"
    has_line "$T/sync.pids" ready || fail "no reply to the later announcement: $(tr '\n' '|' <"$T/sync.pids")"
    read -r v_pid v_start _ <"$T/victim.pids"
    outer_record
    if [[ $kind == control ]]; then
        # drained first (the run's signal, in a helper of the guardian), forced only if it resists;
        # written into the outer run's record
        wait_for $((GUARDIAN_TAKEDOWN_S + LOAD_MARGIN_S)) "the guardian to take down the leaf of a run it took whose controller died" \
            eval '! alive_as $v_pid $v_start'
        wait_for 10 "the run's record to be settled in the outer run's" \
            eval 'outer_record && jq -e --arg id "$id" '"'"'.nested[] | select(.run_id == $id) | select(.disposition != "pending")'"'"' "$RECORD" >/dev/null 2>&1'
        outer_record
        jq -e --arg id "$id" --arg by "guardian pid $GUARDIAN_PID" '[.nested[] | select(.run_id == $id)
            | ([.authority[] | select(.by == $by)] | length > 0)
              or ([.notes[] | select(startswith("drain after controller death:") and contains("by " + $by + ";"))] | length > 0)]
            | any' "$RECORD" >/dev/null 2>&1 ||
            fail "the outer run's record shows neither a drain nor authority by the guardian for run $id: $(rec -c .nested)"
    else
        alive_as "$v_pid" "$v_start" || fail "the process in the announced leaf was killed ($kind)"
        jq -e '[.nested[]?] | length == 0' "$RECORD" >/dev/null 2>&1 ||
            fail "the outer run's record keeps a nested run's: $(rec -c .nested)"
    fi
    no_own_record "$id"
    alive_as "$v_pid" "$v_start" && kill -KILL "$v_pid"
    wait_for 10 "the announced leaf to empty" eval '! [[ -d $leaf ]] || ! cg_populated "$leaf"'
    rmdir "$leaf" 2>/dev/null
    [[ $kind == outside ]] && rmdir "$CG_TEST/elsewhere"
    stop_stranger announcer
    rm -f "$T/hold"
    tg_wait 30
    expect_exit 0
}

TEST "an announcement naming a leaf outside the enclosing guardian's leaf is never taken: its announcer's death kills nothing there"
forged_announcement outside

TEST "an announcement naming another process as its controller is never taken: the announcer's death kills nothing"
forged_announcement claimed-controller

TEST "an announcement of a leaf that exists already (someone else's) is never taken: the announcer's death kills nothing there"
forged_announcement existing-leaf

TEST "a run taken whose controller (the process that announced it) dies with its leaf populated: the guardian takes that leaf down, drained first, into the outer run's record (the cases above can fail)"
forged_announcement control

# sent_record ID DISPOSITION: the record a nested run of id ID would send on its connection, one
# line of JSON: the outer run's record ($RECORD) renamed, moved into a leaf of its own inside the
# outer leaf, with DISPOSITION (pass: exit 0)
sent_record() {
    jq -c --arg id "$1" --arg leaf "$OUTER_LEAF/treeguard-$1" --arg d "$2" \
        '.run_id = $id | .boundary.address = $leaf | .nested = [] | .disposition = $d
         | .exit_code = (if $d == "pass" then 0 else null end)' "$RECORD"
}
TEST "a run taken sends the record of another run on its connection: refused, never written into the outer run's record; its own is (the check can fail)"
id=20261206T000000-$$-feed other=20261206T000000-$$-f00d
: >"$T/hold"
nested_start 0 -- sleep
if wait_for 20 "the outer run's guardian" guardian_of_run && outer_socket &&
    wait_for 20 "the enclosing guardian's socket" test -S "$SOCKET" && outer_record; then
    # announced as itself (taken), then evidence naming another run, then its own
    stranger announcer --release "$T/announcer.go" unix-ask "$SOCKET" \
        "A $id %PID %START $OUTER_LEAF/treeguard-$id - - / sleep" \
        "E 0 $(sent_record "$other" pass)" "E 0 $(sent_record "$id" pass)"
    if wait_for 20 "the announcer's replies" has_line "$T/announcer.pids" ready; then
        mapfile -t replies < <(grep '^reply' "$T/announcer.pids")
        [[ ${replies[0]:-} == "reply G "* ]] || fail "the announcement was not taken: '${replies[0]:-}'"
        # (the answer's words are percent-encoded: %20 a space)
        [[ ${replies[1]:-} == "reply X not%20the%20record%20of%20the%20run%20announced%20on%20this%20connection" ]] ||
            fail "the record of another run was not refused for what it is: '${replies[1]:-}'"
        expect_eq "${replies[2]:-}" "reply K" "the answer to the run's own record"
        outer_record
        jq -e --arg id "$other" '[.nested[]? | select(.run_id == $id)] | length == 0' "$RECORD" >/dev/null ||
            fail "the outer run's record keeps run $other's, sent on run $id's connection: $(jq -c .nested "$RECORD")"
        jq -e --arg id "$id" '[.nested[]? | select(.run_id == $id and .disposition == "pass")] | length == 1' \
            "$RECORD" >/dev/null || fail "the outer run's record does not keep run $id's own: $(jq -c .nested "$RECORD")"
        no_own_record "$id"
        no_own_record "$other"
    fi
    touch "$T/announcer.go"
    wait "$STRANGER_PID"
fi
stop_stranger announcer
rm -f "$T/hold"
tg_wait 30
expect_exit 0

TEST "inner controller SIGKILLed: the outer run's guardian drains the inner run with that run's own signal (USR1) and grace; its module seals; the outer run goes on"
# outer -> sh -> inner treeguard --signal USR1 --kill-after 3s -> the sealing fixture
drain_script='
dir=$1 tg=$2 state=$3 fx=$4
TG_PIDFILE=$dir/inner.1.pids "$tg" run -v --state-dir "$state" --signal USR1 --kill-after 3s -- "$fx" --seal "$dir/sealed" sleep 2>"$dir/inner.1.err" &
echo $! >"$dir/inner.1.pid"
wait $!
echo "inner 1 exit $?" >>"$dir/inner.exits"
while [ -e "$dir/hold" ]; do sleep 0.02; done
'
: >"$T/inner.1.pids" && : >"$T/hold"
tg_start -- sh -c "$drain_script" sh "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE"
if wait_for 20 "the inner fixture to be ready" inner_ready 1; then
    expect_nested 1
    guardian_of_run
    expect_guarded_by_outer 1
    read -r main _ <"$T/inner.1.pids"
    read -r inner_pid <"$T/inner.1.pid"
    kill -KILL "$inner_pid"
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the inner module to seal its file (USR1 from the outer guardian)" test -s "$T/sealed"
    expect_eq "$(cat "$T/sealed" 2>/dev/null)" "sealed $main 10" "the sealed file (the inner run's USR1)"
    wait_for 10 "the inner run's record to be settled" eval 'inner_record 1 2>/dev/null && [[ $(rec .disposition) == pass ]]'
    if inner_record 1; then
        rec '.notes[]' | grep -qx 'controller lost' || fail "the inner record has no 'controller lost' note: $(rec -c .notes)"
        rec '.notes[]' | grep -q "^drain after controller death: USR1 to every process of the run (1 alive), then CONT, by guardian pid $GUARDIAN_PID; grace 3s\$" ||
            fail "the inner record does not show the outer guardian's drain with USR1 and 3s: $(rec -c .notes)"
        expect_eq "$(rec '.authority | length')" 0 "authority entries (the drain emptied the inner run)"
    fi
    running "$TG_PID" || fail "the outer run ended with the inner controller"
    rm -f "$T/hold"
    tg_wait 30
    expect_exit 0
fi

# A service manager taking down its unit (the VM lane's "systemctl stop of the unit holding a
# run"): systemd signals the unit's processes cgroup by cgroup; an inner run that removed its leaf
# meanwhile made systemd's walk fail there and systemd SIGKILL the unit before treeguard's record
# was finished. The manager here: PID 1 of a pid namespace, a bash named systemd (the name and pid
# is_service_manager() looks for), inside the outer run; it starts an inner run over a fixture,
# waits until the test saw the fixture's "ready", has TERM sent to the inner treeguard and writes down whether the
# inner leaf was there once the inner run had ended. The senders: the manager itself; a child of it
# named systemd (a user's manager); a child named sh (a stranger); a grandchild named systemd; the
# manager sending USR1 (not a stop: `systemctl kill -s USR1`), which COMMAND dies of.
manager_script='
dir=$1 tg=$2 state=$3 fx=$4 sender=$5
shift 5
TG_PIDFILE=$dir/inner.1.pids "$tg" run -v --state-dir "$state" --report "$dir/inner.1.json" "$@" -- "$fx" sleep 2>"$dir/inner.1.err" &
inner=$!
# the test writes a line here once the inner fixture is ready (or once it gave up waiting)
read -r _ <"$dir/go.fifo"
# a sender other than PID 1 lives until the inner run has ended (it reads a line from fd 4): the
# inner treeguard reads its name and parent from /proc when the signal arrives
mkfifo "$dir/hold.fifo"
exec 4<>"$dir/hold.fifo"
case $sender in
manager) kill -TERM "$inner" ;;
manager-usr1) kill -USR1 "$inner" ;;
user-manager) "$dir/bin/systemd" -c '"'"'kill -TERM "$1"; read -r _'"'"' systemd "$inner" <&4 & ;;
stranger) sh -c '"'"'kill -TERM "$1"; read -r _'"'"' sh "$inner" <&4 & ;;
named-systemd) sh -c '"'"'"$0" -c "kill -TERM \$1; read -r _" systemd "$1"; true'"'"' "$dir/bin/systemd" "$inner" <&4 & ;;
esac
wait "$inner"
echo "inner 1 exit $?" >"$dir/inner.exits"
echo >&4
wait
leaf=$(sed -n "s/^treeguard: boundary cgroup //p" "$dir/inner.1.err")
if [ -n "$leaf" ] && [ -d "$leaf" ]; then echo "kept $leaf"; else echo "removed $leaf"; fi >"$dir/inner.leaf"
'
# manager_case SENDER EXPECT [INNER OPTIONS...]: the outer run over the manager above; SENDER
# (above) sends the inner treeguard TERM (or USR1); EXPECT (kept, removed): the inner leaf once
# the inner run ended; the inner run ends 128+N (143, 138), disposition pass, and says (-v, and its report's
# timeline) that it left the leaf exactly when it was kept; the harness then finds no cgroup left
manager_case() {
    local sender=$1 expect=$2 left_line
    shift 2
    source "$HERE/unshare_probe.bash"
    if ! can_unshare_pidns; then
        skip_test "$UNSHARE_WHY"
        return 0
    fi
    mkdir -p "$T/bin" && ln -sf "$(command -v bash)" "$T/bin/systemd"
    : >"$T/inner.1.pids"
    mkfifo "$T/go.fifo"
    tg_start -- unshare --pid --fork --mount-proc "$T/bin/systemd" -c "$manager_script" systemd \
        "$T" "$TREEGUARD" "$STATE" "$TG_FIXTURE" "$sender" "$@"
    wait_for 20 "the inner fixture to be ready" inner_ready 1
    # (bounded: a manager that died before it opened the FIFO does not hold the test)
    timeout 20 sh -c 'echo go >"$1"' go "$T/go.fifo" || fail "the manager script did not read its go-ahead"
    tg_wait 60
    expect_exit 0
    has_line "$T/inner.exits" "inner 1 exit $([[ $sender == *usr1 ]] && echo 138 || echo 143)" ||
        fail "the inner run did not end 128+N on signal N: $(tr '\n' '|' <"$T/inner.exits" 2>/dev/null) $(head -c 400 "$T/inner.1.err" | tr '\n' '|')"
    [[ $(cat "$T/inner.leaf" 2>/dev/null) == "$expect "/* ]] ||
        fail "the inner leaf once the inner run ended: '$(cat "$T/inner.leaf" 2>/dev/null)', expected $expect"
    expect_eq "$(jq -r .takedown "$T/inner.1.json" 2>/dev/null)" pass "the inner run's takedown"
    left_line=$(grep -Ec '^treeguard: the empty leaf .* is left to the service manager \(systemd, pid [0-9]+\), which signalled treeguard: it removes the leaf with its unit$' "$T/inner.1.err")
    if [[ $expect == kept ]]; then
        expect_eq "$left_line" 1 "the inner run's line saying it left the leaf to the manager"
        jq -r '.timeline[].event' "$T/inner.1.json" 2>/dev/null | grep -q '^the empty leaf .* is left to the service manager' ||
            fail "the inner report's timeline does not say the leaf was left: $(jq -c '[.timeline[].event]' "$T/inner.1.json" 2>/dev/null)"
    else
        expect_eq "$left_line" 0 "lines saying the leaf was left to the manager"
    fi
}

TEST "a service manager (PID 1 named systemd) signals a nested run: its empty leaf is left for the manager to remove with the unit, the run ends as usual"
manager_case manager kept

TEST "a user's service manager (a child of PID 1 named systemd) signals a nested run: its empty leaf is left for the manager"
manager_case user-manager kept

TEST "a stranger signals a nested run: it removes its leaf as usual"
manager_case stranger removed

TEST "a process named systemd that is no manager (not PID 1, nor its child) signals a nested run: it removes its leaf as usual"
manager_case named-systemd removed

TEST "a service manager sends a nested run USR1 (no stop signal): it removes its leaf as usual"
manager_case manager-usr1 removed

TEST "a service manager signals a run whose leaf is outside the unit (--cgroup-parent elsewhere): it removes its leaf as usual"
manager_case manager removed --cgroup-parent "$CG_TEST"

# as_delegated_user: what follows runs as uid 65534 in a cgroup root made and chowned for it as
# Delegate=yes does (DELEG), its runs with --boundary auto; as_root_again undoes it and removes DELEG
as_delegated_user() {
    DELEG=$CG_TEST/delegated
    mkdir "$DELEG"
    chown "$NOBODY_UID:$NOBODY_GID" "$DELEG" "$DELEG/cgroup.procs" "$DELEG/cgroup.subtree_control" "$DELEG/cgroup.threads"
    chown -R "$NOBODY_UID:$NOBODY_GID" "$T"
    SAVED_TREEGUARD=$TREEGUARD SAVED_FIXTURE=$TG_FIXTURE
    if ! setpriv --reuid=$NOBODY_UID --regid=$NOBODY_GID --clear-groups test -x "$TREEGUARD" -a -x "$TG_FIXTURE" 2>/dev/null; then
        mkdir -p "$WORK/bin" && chmod 755 "$WORK/bin"
        cp "$TREEGUARD" "$WORK/bin/treeguard" && cp "$TG_FIXTURE" "$WORK/bin/tg_fixture"
        chmod 755 "$WORK/bin/treeguard" "$WORK/bin/tg_fixture"
        TREEGUARD=$WORK/bin/treeguard TG_FIXTURE=$WORK/bin/tg_fixture
    fi
    # the test's shell joins the delegated cgroup first (as root), then becomes uid 65534
    TG_PREFIX=(sh -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid='$NOBODY_UID' --regid='$NOBODY_GID' --clear-groups "$@"' "$DELEG")
    SAVED_ARGS=("${BOUNDARY_ARGS[@]}")
    BOUNDARY_ARGS=(--boundary auto)
}
as_root_again() {
    TG_PREFIX=() BOUNDARY_ARGS=("${SAVED_ARGS[@]}") TREEGUARD=$SAVED_TREEGUARD TG_FIXTURE=$SAVED_FIXTURE
    cg_children "$DELEG"
    ((${#CG_CHILDREN[@]} == 0)) || fail "leaves left in the delegated cgroup: ${CG_CHILDREN[*]#"$CG_MOUNT"}"
    wait_for 5 "the delegated cgroup to empty" eval '! cg_populated "$DELEG"' && rmdir "$DELEG"
}

TEST "delegated subtree (chowned as Delegate=yes does) as uid $NOBODY_UID: --boundary auto forms the cgroup boundary there"
as_delegated_user
fx --then sleep daemon
tg_start --timeout 2s -- "${FX[@]}"
if wait_ready 20; then
    tg_wait 30
    expect_exit 124
    line=$(grep -m1 '^treeguard: boundary ' "$T/tg.err")
    [[ $line == "treeguard: boundary cgroup $DELEG/treeguard-"* ]] ||
        fail "boundary line '$line', expected 'treeguard: boundary cgroup $DELEG/treeguard-...'"
fi
as_root_again

TEST "as uid $NOBODY_UID in a delegated subtree: a stranger of the same user writes the announcement of a live nested run and hangs up: ignored; the nested run ends 0"
as_delegated_user
stranger_hangs_up
as_root_again

TEST "as uid $NOBODY_UID in a delegated subtree: the enclosing run's guardian SIGKILLed: a nested run announced to it guards itself; its controller's SIGKILL then takes its tree down"
as_delegated_user
guardian_killed_then_controller
as_root_again
