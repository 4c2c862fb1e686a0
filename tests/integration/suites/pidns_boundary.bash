# pidns_boundary (DESIGN.md [boundaries]): --boundary pid-namespace as uid 65534, beyond the shapes,
# exit codes, signals and leftovers suites that run under this arm too: COMMAND sees only its
# namespace; treeguard SIGKILLed takes everything down with no guardian (the kernel does it); the
# standing authority must be durable before anything runs (EROFS at start, EIO at its fsync: 125,
# nothing ran); a host where the namespaces cannot be made gives 125 and probe says why.
[[ $BOUNDARY == pidns ]] || skip_suite "the pid-namespace boundary's own suite runs under the pidns arm"
# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

TEST "COMMAND sees only its namespace: it is pid 2 (the init is 1), /proc lists the namespace, its uid is its own"
tg_run -- sh -c 'echo "pid $$"; echo "uid $(id -u) gid $(id -g)"; for p in /proc/[0-9]*; do echo "proc ${p#/proc/}"; done'
expect_exit 0
expect_boundary
grep -qx "pid 2" "$T/tg.out" || fail "COMMAND's own pid is not 2: $(head -1 "$T/tg.out")"
grep -qx "uid $NOBODY_UID gid $NOBODY_GID" "$T/tg.out" || fail "ids not mapped to themselves: $(grep '^uid' "$T/tg.out")"
n=$(grep -c '^proc ' "$T/tg.out")
((n >= 2 && n <= 4)) || fail "/proc lists $n processes (expected the init, COMMAND and its for loop's): $(grep '^proc' "$T/tg.out" | tr '\n' ' ')"
grep -qx "proc 1" "$T/tg.out" || fail "/proc has no pid 1 (the namespace's init)"

TEST "the record of a pid-namespace run names this boot and this machine"
# written by the controller outside the namespace, as uid 65534: the machine id beside the boot id
host_machine_id=$(machine_id_here)
tg_run --keep-records -- true
expect_exit 0
newest=$(ls "$STATE"/finished/*.json 2>/dev/null | sort | tail -1)
if [[ -z $newest ]]; then
    fail "no finished record kept"
else
    expect_eq "$(jq -r .boundary.kind "$newest")" pid-namespace "the record's boundary kind"
    expect_eq "$(jq -r .boot_id "$newest")" "$(cat /proc/sys/kernel/random/boot_id)" "the record's boot_id"
    if [[ -n $host_machine_id ]]; then
        expect_eq "$(jq -r .machine_id "$newest")" "$host_machine_id" "the record's machine_id"
    else
        expect_eq "$(jq -r '.machine_id // "absent"' "$newest")" absent "machine_id on a host without a machine id"
    fi
fi

TEST "treeguard SIGKILLed: the init drains, then the kernel takes the namespace down (no guardian), the record does not block the next run"
# the shapes ignore TERM: the init's drain (grace 1s) ends in its exit, and the kernel kills the rest
tg_start --kill-after 1s -- "$EV_TREE" "$TG_FIXTURE" --ignore-term
if wait_ready 20; then
    grep -q '^treeguard: guardian pid' "$T/tg.err" && fail "a guardian was started for a pid namespace"
    token_pids "$TOKEN"
    n=${#TOKEN_PIDS[@]}
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    now_ms; t0=$NOW_MS
    wait_for $((1 + LOAD_MARGIN_S)) "every process of the namespace to be gone" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))' &&
        { now_ms; note "$n processes gone within $((NOW_MS - t0))ms of treeguard's death"; }
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
fi

# The seed's scenario under this boundary (DESIGN.md [guardian]): the namespace's init, treeguard's
# own, drains first when the controller dies, with the run's signal and grace, then exits.
TEST "treeguard SIGKILLed while its module runs: the init drains first (the run's signal), the module seals its file, nothing survives within grace + 2s"
tg_start --signal USR1 --kill-after 3s -- "$TG_FIXTURE" --seal "$T/sealed" grandchild
if wait_ready 20; then
    main=$(fixture_main_pid)
    kill -KILL "$TG_PID"
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "the module to seal its file (the init's USR1)" test -s "$T/sealed"
    wait_for $((GUARDIAN_TAKEDOWN_S + 3 + LOAD_MARGIN_S)) "every process of the namespace to be gone" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))'
    tg_wait 10
    expect_exit 137
    # (pids as the namespace numbers them, the fixture's and its file's alike)
    expect_eq "$(cat "$T/sealed" 2>/dev/null)" "sealed $main 10" "the sealed file (its module, by USR1)"
fi

TEST "treeguard SIGKILLed, a module that ignores TERM: the namespace is gone at grace + 2s, not before the grace"
tg_start --kill-after 2s -- "$TG_FIXTURE" ignore-term
if wait_ready 20; then
    kill -KILL "$TG_PID"
    now_ms; t0=$NOW_MS
    if wait_for $((GUARDIAN_TAKEDOWN_S + 2 + LOAD_MARGIN_S)) "every process of the namespace to be gone" eval 'token_pids "$TOKEN"; ((${#TOKEN_PIDS[@]} == 0))'; then
        now_ms
        (((NOW_MS - t0) >= 2000)) || fail "the namespace was gone $((NOW_MS - t0))ms after its controller's death, before its grace (2s): no drain"
    fi
    tg_wait 10
    expect_exit 137
fi

TEST "EROFS at start (read-only state directory): 125, nothing ran"
fault_setup erofs
fault_inject erofs
tg_run -- touch "$T/made-erofs"
expect_exit 125
[[ -e $T/made-erofs ]] && fail "COMMAND ran although no record could be written"
ev_cleanup

TEST "EIO at the standing authority's fsync: 125, nothing ran"
shim=$TG_FSYNC_EIO dyn=$TREEGUARD_DYNAMIC
if [[ ! -f $shim || ! -x $dyn ]]; then
    fail "the fsync shim ($shim) or the dynamic treeguard ($dyn) is not built"
else
    # reachable by uid 65534
    mkdir -p "$WORK/bin" && chmod 755 "$WORK/bin"
    cp "$shim" "$WORK/bin/tg_fsync_eio.so" && cp "$dyn" "$WORK/bin/treeguard_dynamic"
    chmod 755 "$WORK/bin/tg_fsync_eio.so" "$WORK/bin/treeguard_dynamic"
    saved=$TREEGUARD
    TREEGUARD=$WORK/bin/treeguard_dynamic
    TG_WRAP=(env LD_PRELOAD="$WORK/bin/tg_fsync_eio.so" TG_FAULT_FSYNC_EIO=1)
    tg_run -- touch "$T/made-eio"
    TG_WRAP=() TREEGUARD=$saved
    expect_exit 125
    grep -q 'standing authority not durable' "$T/tg.err" || fail "stderr does not say the standing authority was not durable:$(tg_stderr_excerpt)"
    [[ -e $T/made-eio ]] && fail "COMMAND ran without a durable standing authority"
fi

TEST "no user namespace may be made (user.max_user_namespaces 0): 125, nothing ran, probe says why"
# the limit is set to 0 in a user namespace of this test's own, where treeguard runs as its root
if ! unshare --user --map-root-user true 2>/dev/null; then
    note "unshare --user is not allowed here; the refusal is not produced"
else
    echo "unshare --user --map-root-user ... treeguard run --boundary pid-namespace" >>"$T/commands"
    # (the test's directory belongs to uid 65534, which is not mapped there: a directory of root's)
    ns_dir=$WORK/as-root-$TEST_NO
    mkdir -m 700 "$ns_dir" && chown 0:0 "$ns_dir"
    TG_TOKEN=$TOKEN timeout -s KILL 60 unshare --user --map-root-user sh -c '
        echo 0 >/proc/sys/user/max_user_namespaces || exit 99
        "$1" probe >"$2/probe.out" 2>&1
        "$1" run --boundary pid-namespace --state-dir "$2/ns-state" -- touch "$2/made-refused"' \
        sh "$TREEGUARD" "$ns_dir" </dev/null >"$T/refused.out" 2>"$T/refused.err"
    expect_eq "$?" 125 "treeguard run's exit where no user namespace may be made ($(head -c 200 "$T/refused.err"))"
    grep -q 'clone3 into new namespaces' "$T/refused.err" || fail "stderr does not say the namespaces could not be made: $(head -c 200 "$T/refused.err")"
    [[ -e $ns_dir/made-refused ]] && fail "COMMAND ran"
    grep -q '^user+pid namespace  *no .*max_user_namespaces is 0' "$ns_dir/probe.out" ||
        fail "probe does not say why: $(grep 'user+pid' "$ns_dir/probe.out")"
fi
