# evidence_state (DESIGN.md [state-dir], [bad-input]): an unusable state directory (reached through
# a symlink, group/world-writable, owned by another user) is refused: exit 125, one line on stderr,
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

# ---------------------------------------------------------------- no HOME (cron, services)
# /tmp/treeguard-UID is a name any user can create first. Run as root without
# HOME or XDG_* in a mount namespace of its own, with tmpfs over /tmp, /root and /run (so nothing
# of the host's is touched), /tmp/treeguard-0 made by uid 65534 beforehand.
# homeless_case ROOT_OWNER: start treeguard there; /root and /run are owned by ROOT_OWNER
homeless_case() {
    local owner=$1
    TG_NO_STATE_DIR=1
    # treeguard is reached through a descriptor opened before the mounts: the binary itself may
    # live under /tmp (a CI checkout there), which the tmpfs hides.
    TG_WRAP=(unshare --mount --propagation private sh -c '
        exec 9<"$1" || exit 99
        tg=$1
        shift
        for arg do
            shift
            [ "$arg" = "$tg" ] && arg=/proc/self/fd/9
            set -- "$@" "$arg"
        done
        mount -t tmpfs -o mode=1777 tg-homeless /tmp || exit 99
        for dir in /root /run; do
            mount -t tmpfs -o mode=0755,uid=$0,gid=$0 tg-homeless "$dir" || exit 99
        done
        mkdir -m 0700 /tmp/treeguard-0 && chown 65534:65534 /tmp/treeguard-0 || exit 99
        exec env -u HOME -u XDG_STATE_HOME -u XDG_RUNTIME_DIR -u TREEGUARD_STATE_DIR "$@"' "$owner" "$TREEGUARD")
    tg_run -- true
    TG_WRAP=() TG_NO_STATE_DIR=0
}
homeless_preconditions() {
    if [[ $(id -u) != 0 || $BOUNDARY == unpriv ]]; then
        skip_test "needs root (mounts in a mount namespace of its own)"
        return 1
    fi
    local err
    if ! err=$(unshare --mount --propagation private true 2>&1); then
        skip_test "unshare --mount fails here: $err"
        return 1
    fi
}

TEST "no HOME, /tmp/treeguard-0 made by another user: the user database's home is used, exit 0"
if homeless_preconditions; then
    TG_VERBOSE=1
    homeless_case 0
    TG_VERBOSE=0
    expect_exit 0
    grep -qxF "treeguard: state directory /root/.local/state/treeguard (from the user database)" "$T/tg.err" ||
        fail "not the user database's home: $(grep -m1 'state directory' "$T/tg.err")"
fi

TEST "no HOME, no home of root's, /tmp/treeguard-0 made by another user: 125, one line naming the owner"
if homeless_preconditions; then
    homeless_case 65534
    expect_exit 125
    expect_eq "$(wc -l <"$T/tg.err")" 1 "stderr lines ($(tg_stderr_excerpt))"
    grep -qF "state directory /tmp/treeguard-0: owned by uid 65534 (nobody), not uid 0 (root); another user made it" "$T/tg.err" ||
        fail "the refusal does not name the owner: $(head -c 300 "$T/tg.err")"
fi
