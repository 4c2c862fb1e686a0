#!/bin/bash
# The in-VM runner (inside the guest, from tg-vm.service, as root): runs every suite
# tests/vm/suites/NAME.sh (or those named in /tg/suites), each under a time limit, and writes
# their lines and a summary "N passed, M failed, K skipped" to /tg/results/log (and the console).
# The suite interface is described in tests/vm/README.md.
set -u
export LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN=/tg
RESULTS=$RUN/results
LOG=$RESULTS/log
SUITE_TIMEOUT=${TG_VM_SUITE_TIMEOUT:-420}

exec > >(tee -a "$LOG" >/dev/console) 2>&1
tee_pid=$!

export TREEGUARD=$RUN/bin/treeguard
export TG_FIXTURE=$RUN/bin/tg_fixture
export TG_SRC=$RUN/src
export TG_VM_USER=tg
export TG_RESULTS_DIR=$RESULTS

echo "# guest: $(uname -r), systemd $(systemctl --version | sed -n '1s/^systemd \([0-9]*\).*/\1/p'), up $(cut -d' ' -f1 /proc/uptime)s"
echo "# guest: cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null)"
echo "# guest: runner cgroup: $(sed -n 's/^0:://p' /proc/self/cgroup)"

# the lingering user's manager: suites rely on it (bounded waits; on a loaded host its start may
# time out once, then it is started again)
wait_user_manager() {
    for _ in $(seq 1 240); do
        systemctl is-active --quiet user@1000.service && return 0
        [[ $(systemctl is-active user@1000.service) == failed ]] && return 1
        sleep 0.5
    done
    return 1
}
if ! wait_user_manager; then
    echo "# guest: user@1000.service $(systemctl is-active user@1000.service); starting it again"
    timeout 180 systemctl start user@1000.service
fi
echo "# guest: user@1000.service $(systemctl is-active user@1000.service)"

read -r -a wanted <"$RUN/suites" || wanted=()
suites=()
if ((${#wanted[@]} > 0)); then
    for name in "${wanted[@]}"; do suites+=("$TG_SRC/tests/vm/suites/$name.sh"); done
else
    suites=("$TG_SRC"/tests/vm/suites/*.sh)
fi

passed=0 failed=0 skipped=0
for suite in "${suites[@]}"; do
    name=$(basename "$suite" .sh)
    if [[ ! -f $suite ]]; then
        echo "FAIL $name: no such suite"
        failed=$((failed + 1))
        continue
    fi
    echo "# suite $name (limit ${SUITE_TIMEOUT}s, guest up $(cut -d' ' -f1 /proc/uptime)s)"
    out=$RESULTS/$name.out
    t0=$SECONDS
    (cd /tmp && exec timeout -k 10 "$SUITE_TIMEOUT" bash "$suite") </dev/null >"$out" 2>&1
    rc=$?
    n_fail=0
    while IFS= read -r line; do
        echo "$line"
        case $line in
            "PASS "*) passed=$((passed + 1)) ;;
            "FAIL "*) failed=$((failed + 1)) n_fail=$((n_fail + 1)) ;;
            "SKIP "*) skipped=$((skipped + 1)) ;;
        esac
    done <"$out"
    if ((rc == 124 || rc == 137)); then
        echo "FAIL $name: timed out after ${SUITE_TIMEOUT}s"
        failed=$((failed + 1))
    elif ((rc != 0 && n_fail == 0)); then
        echo "FAIL $name: exited $rc without a FAIL line"
        failed=$((failed + 1))
    elif ((rc == 0 && n_fail > 0)); then
        echo "FAIL $name: exited 0 after $n_fail FAIL line(s)"
        failed=$((failed + 1))
    fi
    echo "# suite $name: exit $rc in $((SECONDS - t0))s"
done
echo "$passed passed, $failed failed, $skipped skipped"
exec >/dev/null 2>&1
wait "$tee_pid"
sync
