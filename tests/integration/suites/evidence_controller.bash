# evidence_controller (issue 3, contract 7): treeguard itself is SIGKILLed mid-run. The tree has a
# background grandchild, a setsid'd child and a double-fork daemon (tests/evidence/tree.sh), and
# treeguard is killed as soon as the tree reports ready.
#  - the guardian takes the tree down: no member alive 2s later (measured), the record says
#    "controller lost", and the next run goes;
#  - the guardian is killed too (first): nothing takes the tree down, so the next run refuses
#    with 121 and starts nothing; `sweep` takes the tree down; then runs go again.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

TEST "SIGKILL to treeguard: the guardian takes the tree down within 2s, record says controller lost"
tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20; then
    guardian_of_run || fail "no 'treeguard: guardian pid N' line with -v"
    n=$(member_count)
    kill -KILL "$TG_PID"
    now_ms; t0=$NOW_MS
    if wait_members_gone 2 "members of the killed run ($n in all)"; then
        note "all $n members gone ${GONE_MS}ms after SIGKILL to treeguard"
    fi
    tg_wait 10
    expect_exit 137
    # the guardian finishes its work and leaves
    [[ -n $GUARDIAN_PID ]] && wait_for 10 "the guardian to exit" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    if the_record; then
        rec '.notes[]' | grep -q 'controller lost' || fail "record notes $(rec -c .notes) do not say 'controller lost'"
        note "record: disposition $(rec .disposition), authority by '$(rec '.authority[0].by')', members $(rec '.members|length') of $n"
    fi
    tg_run -- touch "$T/made"
    expect_exit 0
    [[ -e $T/made ]] || fail "the next run did not start its COMMAND"
fi

TEST "guardian and treeguard SIGKILLed: next run 121 (nothing started), sweep takes the tree down, runs go again"
tg_start -- "$EV_TREE" "$TG_FIXTURE"
if wait_ready 20; then
    if guardian_of_run; then
        kill -KILL "$GUARDIAN_PID"
        wait_for 5 "the guardian to die" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    else
        fail "no 'treeguard: guardian pid N' line with -v"
    fi
    kill -KILL "$TG_PID"
    tg_wait 10
    expect_exit 137
    save_tg_output killed
    members_alive
    note "${#ALIVE[@]} of $(member_count) members alive after both were killed"
    the_record && note "record: disposition $(rec .disposition), members recorded $(rec '.members|length')"
    tg_run -- touch "$T/made-refused"
    save_tg_output refused
    expect_exit 121
    [[ -e $T/made-refused ]] && fail "the refused run started its COMMAND"
    now_ms; t0=$NOW_MS
    tg_cmd sweep sweep --state-dir "$STATE"
    expect_eq "$CMD_RC" 0 "treeguard sweep exit ($(cmd_excerpt sweep))"
    wait_members_gone 3 "after sweep ($(cmd_excerpt sweep))" && note "sweep + members gone: $((NOW_MS - t0))ms"
    tg_run -- touch "$T/made-after-sweep"
    expect_exit 0
    [[ -e $T/made-after-sweep ]] || fail "the run after sweep did not start its COMMAND"
fi
