# pid1 (DESIGN.md [exit-codes]): treeguard as PID 1 of a pid namespace (a container's entrypoint).
# When COMMAND dies of signal N, treeguard elsewhere ends by N itself; as PID 1 it cannot (a
# namespace's init is not killed by its own signals) and exits 128+N. Needs a pid namespace of the
# test's own, with its own /proc.
probe_err=$(unshare --pid --fork --mount-proc true 2>&1) ||
    skip_suite "cannot make a pid namespace with its own /proc (unshare --pid --fork --mount-proc: ${probe_err:-failed})"

for sig in 15:TERM 11:SEGV; do
    n=${sig%%:*} name=${sig#*:}
    TEST "as PID 1, COMMAND dies of SIG$name: treeguard exits $((128 + n)) (the shell sees an exit, not a death), report $((128 + n))"
    fx die "$n"
    # bash reports a child that died of TERM or SEGV; unshare dies of the signal its child died
    # of, so a treeguard that died of SIG$name would show here
    TG_WRAP=(bash -c '"$@"; exit $?' _ unshare --pid --fork --mount-proc)
    tg_start --report "$T/report.json" -- "${FX[@]}"
    TG_WRAP=()
    tg_wait 30
    expect_exit $((128 + n))
    grep -Eq "(Terminated|Segmentation fault)" "$T/tg.err" &&
        fail "treeguard as PID 1 died of the signal (stderr:$(tg_stderr_excerpt))"
    grep -Eq "\"exit_code\": *$((128 + n))" "$T/report.json" 2>/dev/null ||
        fail "the report does not say exit_code $((128 + n))"
done
