# evidence_unpriv (DESIGN.md [after-death]): after the controller's death, a census run by an
# unprivileged user cannot read the environment (the run's marker) of a process of its own user
# that made itself not dumpable. Such a process, newer than the run and never seen by a walk, may be
# the run's: sweep must say it cannot prove the run over, never "pass".
#  - the fixture's main waits until treeguard and its guardian are dead, then starts a setsid'd,
#    non-dumpable child (--then late-escape): no walk can have seen it;
#  - sweep as the same user: exit 122, "cannot be inspected", the record not closed as pass, the
#    escapee untouched (sweep signals only what it can prove is the run's);
#  - the test removes its own escapee; sweep again: now proven, exit 0, disposition pass.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

[[ $BOUNDARY == unpriv ]] || skip_suite "evidence_unpriv is the unprivileged arm's suite"

TEST "unprivileged, after death: an escapee this user cannot inspect makes sweep say so, never pass"
fx --then late-escape sleep
tg_start -- "${FX[@]}"
if wait_ready 20 && guardian_of_run && the_record; then
    kill_guardian_and_controller
    expect_exit 137
    if wait_for 10 "the fixture's late escapee (orphaned main's child)" grep -q "^late " "$PIDFILE"; then
        late=$(grep -m1 '^late ' "$PIDFILE") late=${late#late }
        late_start=$(grep -m1 "^$late " "$PIDFILE") late_start=${late_start#* }
        if "${TG_PREFIX[@]}" cat "/proc/$late/environ" >/dev/null 2>&1; then
            fail "the escapee's environ is readable by its own user: the shape is not produced"
        fi
        tg_cmd sweep sweep --state-dir "$STATE" "$RUN_ID"
        expect_eq "$CMD_RC" 122 "sweep's exit with an uninspectable escapee ($(cmd_excerpt sweep))"
        grep -q "cannot be inspected" "$T/sweep.out" ||
            fail "sweep did not say what it could not inspect: $(cmd_excerpt sweep)"
        # the state cannot be proven from here: ambiguous (DESIGN.md [dispositions]), neither pass
        # nor failed
        the_record && expect_eq "$(rec .disposition)" ambiguous "the record's disposition after a sweep that could not see everything"
        alive_as "$late" "$late_start" ||
            fail "sweep killed the escapee it could not prove to be the run's"
        note "sweep: $(head -n 1 "$T/sweep.out")"
        # our own escapee (this test started it: pid and start time from the fixture's own line)
        alive_as "$late" "$late_start" && kill -KILL "$late"
        wait_for 5 "our escapee to die" eval '! alive_as $late $late_start'
        tg_cmd sweep2 sweep --state-dir "$STATE" "$RUN_ID"
        expect_eq "$CMD_RC" 0 "sweep's exit once nothing is hidden ($(cmd_excerpt sweep2))"
        the_record && expect_eq "$(rec .disposition)" pass "the record's disposition after the second sweep"
    fi
fi
