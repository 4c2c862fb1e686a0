# limits (DESIGN.md [boundaries]): --memory-max / --pids-max, enforced or refused; the report's
# usage.
#  - a limit is enforced by a leaf with its controller, or refused before anything runs: exit 125,
#    one line saying why, COMMAND never started, no record and no cgroup left (the harness checks
#    the cgroups). This host's cgroup v2 (hybrid, only hugetlb) and the process-group boundary
#    cannot; where the test's parent does give the controller (cgroup arm on a full host), the leaf
#    is shown to carry the limit instead;
#  - the same from TREEGUARD_MEMORY_MAX / TREEGUARD_PIDS_MAX; bad sizes are one line and 125;
#  - "usage" in the report: 2 s of CPU shows cpu_user_seconds >= 1, source "cgroup" under the
#    cgroup boundary (cpu.stat exists without the cpu controller), "rusage" otherwise (no tasks
#    peak, no OOM count); -v ends with the "consumed" line.

R() { jq -r "$@" "$T/report.json" 2>/dev/null; }

# controller_given NAME: the cgroup the leaf would go in gives NAME to its children
controller_given() {
    [[ $BOUNDARY == cgroup ]] || return 1
    local word
    for word in $(cat "$CG_TEST/cgroup.controllers" 2>/dev/null); do
        [[ $word == "$1" ]] && return 0
    done
    return 1
}

# expect_refused WHAT: exit 125, one "treeguard: error: ... cannot be enforced ..." line naming
# WHAT, COMMAND never ran, no record left in the state directory
expect_refused() {
    expect_exit 125
    local lines
    grep '^treeguard: error: ' "$T/tg.err" >"$T/tg.err.errors"
    lines=$(grep -c . "$T/tg.err.errors")
    expect_eq "$lines" 1 "error lines"
    grep -q -- "$1 cannot be enforced" "$T/tg.err.errors" ||
        fail "no line saying $1 cannot be enforced (stderr:$(tg_stderr_excerpt))"
    [[ -s $PIDFILE ]] && fail "COMMAND ran: $(tr '\n' ' ' <"$PIDFILE")"
    local left
    left=$(find "$STATE" -type f 2>/dev/null | head -3 | tr '\n' ' ')
    [[ -z $left ]] || fail "state directory not empty: $left"
}

# the limit as the leaf shows it, read by COMMAND from its own cgroup
leaf_file_cmd() { echo "cat \"$CG_MOUNT\$(sed -n 's/^0:://p' /proc/self/cgroup)/$1\""; }

TEST "--memory-max 64M: enforced by the leaf, or exit 125 before anything runs"
if controller_given memory; then
    tg_run --memory-max 64M -- sh -c "$(leaf_file_cmd memory.max)"
    expect_exit 0
    expect_eq "$(cat "$T/tg.out")" $((64 << 20)) "the leaf's memory.max"
else
    fx sleep
    tg_run --memory-max 64M -- "${FX[@]}"
    expect_refused --memory-max
    note "$(grep '^treeguard: error: ' "$T/tg.err")"
fi

TEST "--pids-max 64: enforced by the leaf, or exit 125 before anything runs"
if controller_given pids; then
    tg_run --pids-max 64 -- sh -c "$(leaf_file_cmd pids.max)"
    expect_exit 0
    expect_eq "$(cat "$T/tg.out")" 64 "the leaf's pids.max"
else
    fx sleep
    tg_run --pids-max 64 -- "${FX[@]}"
    expect_refused --pids-max
    note "$(grep '^treeguard: error: ' "$T/tg.err")"
fi

TEST "TREEGUARD_MEMORY_MAX and TREEGUARD_PIDS_MAX: the same limits from the environment"
if controller_given memory && controller_given pids; then
    TG_WRAP=(env TREEGUARD_MEMORY_MAX=1G TREEGUARD_PIDS_MAX=100)
    tg_run -- sh -c "$(leaf_file_cmd memory.max); $(leaf_file_cmd pids.max)"
    TG_WRAP=()
    expect_exit 0
    expect_eq "$(tr '\n' ' ' <"$T/tg.out")" "$((1 << 30)) 100 " "the leaf's memory.max and pids.max"
else
    fx sleep
    TG_WRAP=(env TREEGUARD_MEMORY_MAX=1G TREEGUARD_PIDS_MAX=100)
    tg_run -- "${FX[@]}"
    TG_WRAP=()
    expect_refused "--memory-max and --pids-max"
fi

TEST "bad sizes and counts: one line, exit 125, nothing run"
for bad in "--memory-max 0" "--memory-max 1.5G" "--memory-max 64X" "--pids-max 0" "--pids-max -3"; do
    fx sleep
    # shellcheck disable=SC2086 # the option and its value are two words
    tg_run $bad -- "${FX[@]}"
    expect_exit 125
    expect_eq "$(grep -c . "$T/tg.err")" 1 "stderr lines for '$bad'"
    grep -qE -- "^treeguard: error: ${bad%% *}: '.*' is not a (size|task count)" "$T/tg.err" ||
        fail "'$bad': the line does not name the option and the value: $(head -1 "$T/tg.err")"
    [[ -s $PIDFILE ]] && fail "'$bad': COMMAND ran"
done

TEST "usage: 2 s of CPU in the report (cpu_user_seconds >= 1) and the -v line"
fx spin 2
tg_run --timeout 120s --report "$T/report.json" -- "${FX[@]}"
expect_exit 0
if [[ ! -s $T/report.json ]]; then
    fail "no report"
else
    if [[ $BOUNDARY == cgroup ]]; then
        expect_eq "$(R .usage.source)" cgroup "usage.source"
        [[ -e $CG_TEST/pids.peak ]] || expect_eq "$(R .usage.tasks_peak)" null "tasks_peak without pids.peak"
    else
        expect_eq "$(R .usage.source)" rusage "usage.source"
        expect_eq "$(R .usage.tasks_peak)" null "tasks_peak (rusage has none)"
        expect_eq "$(R .oom_kills)" null "oom_kills (rusage cannot count them)"
        [[ $(R .usage.memory_peak_bytes) =~ ^[1-9][0-9]*$ ]] || fail "memory_peak_bytes '$(R .usage.memory_peak_bytes)'"
    fi
    user=$(R .usage.cpu_user_seconds)
    [[ $(R '.usage.cpu_user_seconds >= 1 and .usage.cpu_user_seconds < 60') == true ]] ||
        fail "cpu_user_seconds $user, expected >= 1 (2 s spun)"
    [[ $(R '.usage.cpu_system_seconds >= 0') == true ]] || fail "cpu_system_seconds '$(R .usage.cpu_system_seconds)'"
    note "usage $(R -c .usage), oom_kills $(R .oom_kills)"
fi
last=$(grep '^treeguard: ' "$T/tg.err" | tail -1)
[[ $last =~ ^treeguard:\ consumed\ [0-9.]+s\ CPU\ time\ \([0-9.]+s\ user,\ [0-9.]+s\ system\).*\(from\ (cgroup|rusage)\)$ ]] ||
    fail "the last -v line is '$last', expected 'treeguard: consumed ... CPU time ...'"

TEST "usage of the whole tree: CPU spent by a grandchild counts"
tg_run --timeout 120s --report "$T/report.json" -- sh -c "'$TG_FIXTURE' spin 1 & '$TG_FIXTURE' spin 1; wait"
expect_exit 0
[[ $(R '.usage.cpu_user_seconds >= 1.5') == true ]] ||
    fail "cpu_user_seconds $(R .usage.cpu_user_seconds), expected >= 1.5 (two children spun 1 s each)"
