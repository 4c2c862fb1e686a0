# shellcheck shell=bash disable=SC2034  # (the variables are for the suites that source this)
# Helpers for the in-VM suites (source it: source "$TG_SRC/tests/vm/lib.sh"). Interface:
# tests/vm/README.md. Every helper prints the suite's result lines itself:
#   pass NAME | fail NAME WHY | skip NAME WHY | note TEXT ("# TEXT") | finish (the suite's exit)
set -u
export LC_ALL=C
: "${TREEGUARD:?}" "${TG_FIXTURE:?}" "${TG_SRC:?}" "${TG_VM_USER:=tg}"
VM_FAILED=0
CG_MOUNT=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
WORK=$(mktemp -d /tmp/tg-vm-suite.XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; VM_FAILED=$((VM_FAILED + 1)); }
skip() { echo "SKIP $1: $2"; }
note() { echo "# $*"; }
finish() { ((VM_FAILED == 0)); exit; }

# as CONTEXT CMD [ARGS...]: run CMD in CONTEXT, stdout and stderr passed through:
#   service        this process (root, in the runner's tg-vm.service)
#   session:USER   a login session of USER: su -l under pam_systemd (a new session-N.scope each
#                  time), with TREEGUARD, TG_FIXTURE, TG_SRC, TG_VM_USER and TG_SHAPES (if set)
#                  passed on (su -l resets the environment)
as() {
    local ctx=$1
    shift
    case $ctx in
        service) "$@" ;;
        session:*)
            local cmd
            local -a env=(TREEGUARD="$TREEGUARD" TG_FIXTURE="$TG_FIXTURE" TG_SRC="$TG_SRC" TG_VM_USER="$TG_VM_USER")
            [[ -n ${TG_SHAPES:-} ]] && env+=(TG_SHAPES="$TG_SHAPES")
            [[ -n ${TG_RESULTS:-} ]] && env+=(TG_RESULTS="$TG_RESULTS")
            cmd=$(printf '%q ' env "${env[@]}" "$@")
            su -l "${ctx#session:}" -c "$cmd" </dev/null
            ;;
        *) echo "as: unknown context $ctx" >&2; return 2 ;;
    esac
}

# auto_boundary CONTEXT [PREFIX...]: in CONTEXT (through PREFIX, e.g. systemd-run --user --scope),
# "treeguard run -v -- true": AUTO_CGROUP = the cgroup it started in, AUTO_BOUNDARY = what -v says
# after "treeguard: boundary " (e.g. "cgroup /sys/fs/cgroup/system.slice/x.service/treeguard-ID",
# "process-group pgid N"), AUTO_OUT = its stderr
auto_boundary() {
    local ctx=$1 out
    shift
    out=$(as "$ctx" "$@" sh -c '
        echo "own cgroup: $(sed -n "s/^0:://p" /proc/self/cgroup)"
        d=$(mktemp -d) && "$TREEGUARD" run -v --state-dir "$d/state" -- true 2>&1; rc=$?; rm -rf "$d"; exit $rc' 2>&1)
    AUTO_CGROUP=$(sed -n 's/^own cgroup: //p' <<<"$out" | head -n 1)
    AUTO_BOUNDARY=$(sed -n 's/^treeguard: boundary //p' <<<"$out" | head -n 1)
    AUTO_OUT=$out
}

# harness CONTEXT LABEL SUITE BOUNDARY: the integration harness (tests/integration/run SUITE
# BOUNDARY) in CONTEXT; its PASS/FAIL/SKIP lines relayed as "PASS LABEL: ...", its exit judged
harness() {
    local ctx=$1 label=$2 suite=$3 boundary=$4 out=$WORK/harness.out rc line n_fail=0 results
    local name code ms survivors verdict
    # each test's time too (the harness's TG_RESULTS), for the log: under TCG the guest is slow,
    # and how close a test came to its bound is what tells a slow guest from a slow takedown
    results=$(mktemp) && chmod 666 "$results"
    TG_RESULTS=$results as "$ctx" bash "$TG_SRC/tests/integration/run" "$suite" "$boundary" >"$out" 2>&1
    rc=$?
    while IFS=$'\t' read -r name code ms survivors verdict; do
        echo "# $label: $verdict in ${ms}ms (treeguard exit $code, $survivors survivor(s)): $name"
    done <"$results"
    rm -f "$results"
    while IFS= read -r line; do
        case $line in
            "PASS "* | "SKIP "*) echo "${line%% *} $label: ${line#* }" ;;
            "FAIL "*) fail "$label: ${line#FAIL }" "(harness)" ; n_fail=$((n_fail + 1)) ;;
            *) echo "# $label: $line" ;;
        esac
    done <"$out"
    if ((rc != 0 && rc != 77 && n_fail == 0)); then
        fail "$label: $suite/$boundary" "the harness exited $rc without a FAIL line"
    fi
    return 0
}
