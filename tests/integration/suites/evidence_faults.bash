# evidence_faults (DESIGN.md [authority]): real faults at the moment of escalation. A TERM-ignoring
# tree runs; once it is ready the state directory is made to fail (read-only bind mount: EROFS; full
# tmpfs: ENOSPC; fsync shim: EIO, or EIO on the directory's fsync only, after the rename: eio-dir);
# treeguard is then stopped (TERM, grace 200ms), so the forced kill needs
# its write-ahead authority entry, which cannot be made durable. Expected (DESIGN.md [authority]):
# no SIGKILL (every member alive afterwards, by pid+start time, not a zombie), exit 122, the record
# left on disk unresolved; the next run refuses with 121 and starts nothing, until `resolve` (then
# it runs) or `sweep` (which takes the tree down; then it runs).
# Mounts: needs root (mount namespaces are not used; the mounts are on this test's own directories
# and are undone at the end of each test and on exit).

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
(($(id -u) == 0)) || skip_suite "the fault suite mounts file systems: needs root"

# fault_case FAULT CURE(resolve|sweep)
fault_case() {
    local fault=$1 cure=$2 gate_rc="" gate2_rc="" cure_rc="" after_rc="" shim=""
    TEST "$fault at the forced kill: KILL withheld, tree kept, exit 122; next run 121; then $cure"
    fault_setup "$fault" || return
    fx --ignore-term ignore-term
    case $fault in
        eio) shim=1 ;;
        eio-dir) shim=dir ;;
    esac
    if [[ -n $shim ]]; then
        # the shim reaches only a dynamically linked treeguard
        TREEGUARD=$TREEGUARD_DYNAMIC LD_PRELOAD=$TG_FSYNC_EIO TG_FAULT_FSYNC_EIO=$shim tg_start --kill-after 200ms -- "${FX[@]}"
    else
        tg_start --kill-after 200ms -- "${FX[@]}"
    fi
    wait_ready 20 || { ev_cleanup; return; }
    fault_inject "$fault" || { tg_stop TERM; tg_wait 30; ev_cleanup; return; }
    # a stop request (TERM twice: COMMAND ignores the first), so the drain and the forced kill come
    tg_stop TERM
    tg_wait 30
    save_tg_output faulted
    local faulted_rc=$TG_RC
    expect_exit 122
    grep -q 'withheld' "$T/tg.err" || fail "stderr does not say the forced kill was withheld"
    # no SIGKILL went out: the whole tree is alive (pid + start time, not a zombie)
    expect_all_members_alive "after exit $faulted_rc"
    local n_members=${#ALIVE[@]} kill_sent=no
    ((${#DEAD[@]} > 0 || n_members == 0)) && kill_sent="yes(${#DEAD[@]} dead)"
    the_record || { ev_cleanup; return; }
    local disp
    disp=$(rec .disposition)
    # the disposition "ambiguous" could not be made durable either (the same fault): the record on
    # disk is the last durable one, pending, and the gate treats it as unresolved; under eio-dir
    # each write reached its name and only its durability failed: the last one says ambiguous
    expect_eq "$disp" "$([[ $fault == eio-dir ]] && echo ambiguous || echo pending)" "record disposition"
    # the next run refuses and starts nothing, while the fault is still there ...
    if [[ -z $shim ]]; then
        tg_run -- touch "$T/made-during-fault"
        save_tg_output gate-during-fault
        gate_rc=$TG_RC
        expect_exit 121
        [[ -e $T/made-during-fault ]] && fail "a refused run (during the fault) started its COMMAND"
    fi
    if [[ $cure == sweep ]]; then
        # a sweep while the fault holds cannot make its authority durable either: it kills nothing,
        # says so, and exits 122 (the guardian's and sweep's path to the write-ahead rule)
        if [[ -n $shim ]]; then
            TREEGUARD=$TREEGUARD_DYNAMIC LD_PRELOAD=$TG_FSYNC_EIO TG_FAULT_FSYNC_EIO=$shim tg_cmd sweep-during-fault sweep --state-dir "$STATE"
        else
            tg_cmd sweep-during-fault sweep --state-dir "$STATE"
        fi
        expect_eq "$CMD_RC" 122 "sweep during the fault ($(cmd_excerpt sweep-during-fault))"
        grep -q 'withheld' "$T/sweep-during-fault.err" || fail "the sweep during the fault does not say the forced kill was withheld"
        expect_all_members_alive "after a sweep during the fault"
    fi
    fault_lift "$fault"
    # ... and after it is gone
    tg_run -- touch "$T/made-after-fault"
    save_tg_output gate-after-fault
    gate2_rc=$TG_RC
    expect_exit 121
    [[ -e $T/made-after-fault ]] && fail "a refused run started its COMMAND"
    grep -q "$RUN_ID" "$T/tg.err" || fail "the refusal does not name run $RUN_ID"
    expect_all_members_alive "after the refused runs"
    if [[ $cure == resolve ]]; then
        tg_cmd resolve resolve "$RUN_ID" --why "evidence test: tree cleaned by hand" --state-dir "$STATE"
        cure_rc=$CMD_RC
        expect_eq "$CMD_RC" 0 "treeguard resolve exit ($(cmd_excerpt resolve))"
        expect_all_members_alive "after resolve (resolve kills nothing)"
        tg_run -- touch "$T/made-after-cure"
        after_rc=$TG_RC
        expect_exit 0
        [[ -e $T/made-after-cure ]] || fail "the run after resolve did not start its COMMAND"
        # the kept tree is ours to clean up now
        kill_survivors "$PIDFILE" "$TOKEN"
        remove_test_leaves
    else
        local t0
        now_ms; t0=$NOW_MS
        tg_cmd sweep sweep --state-dir "$STATE"
        cure_rc=$CMD_RC
        expect_eq "$CMD_RC" 0 "treeguard sweep exit ($(cmd_excerpt sweep))"
        wait_members_gone 3 "after sweep ($(cmd_excerpt sweep))" && note "sweep + members gone: $((NOW_MS - t0))ms"
        tg_run -- touch "$T/made-after-cure"
        after_rc=$TG_RC
        expect_exit 0
        [[ -e $T/made-after-cure ]] || fail "the run after sweep did not start its COMMAND"
    fi
    note "matrix fault=$fault boundary=$BOUNDARY kill_sent=$kill_sent exit=$faulted_rc members_alive=$n_members record=$disp next_run=${gate_rc:-n/a}/${gate2_rc} $cure=$cure_rc run_after=$after_rc"
    ev_cleanup
}

for fault in erofs enospc eio eio-dir; do
    for cure in resolve sweep; do
        fault_case "$fault" "$cure"
    done
done
