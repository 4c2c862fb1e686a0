# evidence_state (issue 3, contract 5 and 10): an unusable state directory (reached through a
# symlink, group/world-writable, owned by another user) is refused: exit 125, one line on stderr,
# COMMAND not started, no boundary made.

# shellcheck source=../../evidence/lib.bash
source "$HERE/../evidence/lib.bash"
TG_VERBOSE=0

# refused_case WHAT: run with $STATE as it is now; expect 125, one stderr line, nothing started
refused_case() {
    tg_run -- touch "$T/made"
    expect_exit 125
    [[ -e $T/made ]] && fail "COMMAND was started"
    local lines
    lines=$(wc -l <"$T/tg.err")
    expect_eq "$lines" 1 "stderr lines ($(tg_stderr_excerpt))"
    grep -q '^treeguard: error: ' "$T/tg.err" || fail "stderr is not 'treeguard: error: ...'"
}

TEST "state directory reached through a symlink: 125, nothing started"
mkdir -m 700 "$T/real"
ln -s real "$T/link"
STATE=$T/link
refused_case
[[ -z $(ls -A "$T/real") ]] || fail "something was written through the symlink: $(ls -A "$T/real")"

TEST "state directory whose parent path is a symlink to it: 125 (through \$TREEGUARD_STATE_DIR)"
mkdir -m 700 "$T/real"
ln -s real "$T/link"
STATE=$T/link
tg_raw run "${BOUNDARY_ARGS[@]}" -- touch "$T/made"
expect_exit 125
[[ -e $T/made ]] && fail "COMMAND was started"

TEST "world-writable state directory (0777): 125, nothing started"
mkdir "$T/ww"
chmod 0777 "$T/ww"
STATE=$T/ww
refused_case
expect_eq "$(stat -c %a "$T/ww")" 777 "mode afterwards (treeguard must not 'fix' it silently)"

TEST "group-writable state directory (0770): 125, nothing started"
mkdir "$T/gw"
chmod 0770 "$T/gw"
STATE=$T/gw
refused_case

TEST "state directory owned by uid 65534: 125, nothing started"
mkdir -m 700 "$T/foreign"
chown 65534:65534 "$T/foreign"
STATE=$T/foreign
refused_case
[[ -z $(ls -A "$T/foreign") ]] || fail "something was written into the foreign directory"

# The record is written before COMMAND runs (under the process-group boundary, while COMMAND's
# process is held before exec): a state directory that cannot take it stops the run first.
for fault in erofs enospc; do
    TEST "state directory that cannot be written ($fault): 125, nothing started, no leaf left"
    if (($(id -u) != 0)); then
        skip_test "needs root (it mounts a read-only bind mount / a tiny tmpfs)"
        continue
    fi
    fault_setup "$fault" && fault_inject "$fault" || continue
    refused_case
    grep -q "state directory" "$T/tg.err" || fail "stderr does not name the state directory: $(tg_stderr_excerpt)"
    if [[ $BOUNDARY == cgroup ]]; then
        cg_children "$CG_TEST"
        ((${#CG_CHILDREN[@]} == 0)) || fail "leaf cgroup(s) left: ${CG_CHILDREN[*]}"
    fi
    fault_lift "$fault"
    ev_cleanup
done
