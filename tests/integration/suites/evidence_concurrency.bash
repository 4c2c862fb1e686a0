# evidence_concurrency (DESIGN.md [records]: many runs share the directory at once, make -j):
# 200 treeguard runs started at once on one state directory, each `sh -c '...; exit N'` with its
# own N (N avoids 121..127, treeguard's own codes). A barrier (a FIFO every COMMAND reads a line
# from) holds all 200 inside treeguard at the same time, then releases them together, so the
# records are written, and finished, concurrently. Every run's exit code is its own, none is refused
# (121) or finds the directory unusable (125); with --keep-records every record is there, names
# its own command, controller and exit code; without, the directory is empty afterwards.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"

EV_RUNS=${EV_RUNS:-200}
# The barrier holds all runs in flight at once (EV_BARRIER=0: no barrier, runs only overlap).
# Before commit 0e735b4 it melted this 2-core host down under process-group (load average > 300,
# runs not done after 120s: every controller and guardian read all of /proc 4 times a second);
# since, 200 at once take ~1.5s under either boundary.
EV_BARRIER=${EV_BARRIER:-1}

# launch_many OUTDIR [run OPTIONS...]: EV_RUNS background runs; PIDS[i], CODE[i]
launch_many() {
    local out=$1 i n
    shift
    mkdir -p "$out"
    PIDS=() CODE=()
    rm -f "$out.fifo" "$out.arrived"
    mkfifo "$out.fifo"
    : >"$out.arrived"
    exec {BARRIER_FD}<>"$out.fifo"
    now_ms; MANY_T0=$NOW_MS
    for ((i = 0; i < EV_RUNS; i++)); do
        n=$i
        ((n >= 121)) && n=$((n + 7))
        n=$((n % 256))
        CODE[i]=$n
        TG_TOKEN=$TOKEN "$TG_FIXTURE" exec -- "$TREEGUARD" run "${BOUNDARY_ARGS[@]}" --state-dir "$STATE" \
            "$@" -- sh -c "$(script_for "$n")" sh "$out.arrived" "$out.fifo" </dev/null >"$out/$i.out" 2>"$out/$i.err" &
        PIDS[i]=$!
    done
    for ((i = 0; i < EV_RUNS; i++)); do
        echo "${PIDS[i]} $(start_of "${PIDS[i]}" || echo 0)" >>"$WORK/started"
    done
}
script_for() {
    if ((EV_BARRIER)); then
        echo "echo x >>\"\$1\"; read x <\"\$2\"; exit $1"
    else
        echo "echo x >>\"\$1\"; exit $1"
    fi
}
arrived_all() { (($(wc -l <"$1") >= EV_RUNS)); }
# wait_many OUTDIR: the barrier: bounded wait until every COMMAND runs, then release them all
# (one line each) and wait (bounded) for all; RCS[i]; MANY_MS; AT_BARRIER = records seen meanwhile
wait_many() {
    local out=$1 i deadline
    local -a recs
    if ((EV_BARRIER)) && ! wait_for 60 "all $EV_RUNS COMMANDs to run at once ($(wc -l <"$out.arrived") did)" arrived_all "$out.arrived"; then
        printf '%*s' $((EV_RUNS * 2)) '' | tr ' ' '\n' >&"$BARRIER_FD"
    fi
    recs=("$STATE"/*.json)
    AT_BARRIER=${#recs[@]}
    now_ms; BARRIER_MS=$((NOW_MS - MANY_T0))
    printf '%*s' "$EV_RUNS" '' | tr ' ' '\n' >&"$BARRIER_FD"
    now_ms; deadline=$((NOW_MS + 120000))
    for ((i = 0; i < EV_RUNS; i++)); do
        while running "${PIDS[i]}"; do
            now_ms
            if ((NOW_MS > deadline)); then
                fail "run $i (pid ${PIDS[i]}) still running after 120s"
                return 1
            fi
            poll_sleep
        done
    done
    now_ms; MANY_MS=$((NOW_MS - MANY_T0))
    RCS=()
    for ((i = 0; i < EV_RUNS; i++)); do
        wait "${PIDS[i]}"
        RCS[i]=$?
    done
    exec {BARRIER_FD}>&-
}
# expect_own_codes OUTDIR: every run exited with its own N
expect_own_codes() {
    local i bad=0 refused=0 first=""
    for ((i = 0; i < EV_RUNS; i++)); do
        if [[ ${RCS[i]} != "${CODE[i]}" ]]; then
            bad=$((bad + 1))
            [[ ${RCS[i]} == 121 || ${RCS[i]} == 125 ]] && refused=$((refused + 1))
            [[ -z $first ]] && first="run $i: exit ${RCS[i]}, expected ${CODE[i]} (stderr: $(head -c 300 "$1/$i.err" | tr '\n' '|'))"
        fi
    done
    ((bad == 0)) || fail "$bad of $EV_RUNS runs exited with another code ($refused refused with 121/125); first: $first"
}

TEST "$EV_RUNS runs at once, --keep-records: own exit codes, own records, none refused"
launch_many "$T/keep" --keep-records
if wait_many "$T/keep"; then
    note "$EV_RUNS runs: all running at once after ${BARRIER_MS}ms (records on disk then: $AT_BARRIER), all done after ${MANY_MS}ms"
    ((EV_BARRIER)) && expect_eq "$AT_BARRIER" "$EV_RUNS" "records on disk while all runs were in flight"
    expect_own_codes "$T/keep"
    # kept clean records are finished: apart from the open ones, which are none now
    files=("$STATE"/*.json)
    expect_eq "${#files[@]}" 0 "open records in the state directory"
    files=("$STATE"/finished/*.json)
    expect_eq "${#files[@]}" "$EV_RUNS" "finished records in the state directory"
    # one line per record: file, run_id, controller pid, exit code, the command's script, disposition
    jq -r '[input_filename, .run_id, .controller.pid, .exit_code, (.command|join(" ")), .disposition] | @tsv' \
        "${files[@]}" >"$T/records.tsv" 2>"$T/records.err" || fail "some record is not valid JSON: $(head -c 200 "$T/records.err")"
    declare -A code_of_pid=() seen_code=()
    for ((i = 0; i < EV_RUNS; i++)); do code_of_pid[${PIDS[i]}]=${CODE[i]}; done
    mixed=0 first=""
    while IFS=$'\t' read -r file run pid code cmd disp; do
        why=""
        [[ ${file##*/} == "$run.json" ]] || why="file name ${file##*/} is not run id $run"
        [[ $run == *-"$pid"-* ]] || why+=" run id $run does not carry controller pid $pid"
        [[ -n ${code_of_pid[$pid]:-} ]] || why+=" controller pid $pid is none of ours"
        [[ $cmd == "sh -c $(script_for "${code_of_pid[$pid]:-x}") sh $T/keep.arrived $T/keep.fifo" ]] || why+=" command '$cmd' is not the one pid $pid ran (exit ${code_of_pid[$pid]:-?})"
        [[ $code == "${code_of_pid[$pid]:-x}" ]] || why+=" exit_code $code, pid $pid's command exited ${code_of_pid[$pid]:-?}"
        [[ $disp == pass ]] || why+=" disposition $disp"
        [[ -n ${seen_code[$code]:-} ]] && why+=" exit code $code in two records"
        seen_code[$code]=1
        if [[ -n $why ]]; then
            mixed=$((mixed + 1))
            [[ -z $first ]] && first="$run:$why"
        fi
    done <"$T/records.tsv"
    ((mixed == 0)) || fail "$mixed record(s) wrong or mixed up; first: $first"
    expect_eq "${#seen_code[@]}" "$EV_RUNS" "distinct exit codes among the records"
    tmp=$(find "$STATE" -mindepth 1 -name '.*' | head -3)
    [[ -z $tmp ]] || fail "temporary files left in the state directory: $tmp"
fi

TEST "$EV_RUNS runs at once without --keep-records: own exit codes, the directory empty afterwards"
launch_many "$T/nokeep"
if wait_many "$T/nokeep"; then
    note "$EV_RUNS runs: all running at once after ${BARRIER_MS}ms (records on disk then: $AT_BARRIER), all done after ${MANY_MS}ms"
    expect_own_codes "$T/nokeep"
    left=$(find "$STATE" -mindepth 1 | head -5)
    [[ -z $left ]] || fail "the state directory is not empty: $left"
fi
