#!/usr/bin/env bash
# pidns.sh SUITE BOUNDARY: run one harness suite in a new pid namespace whose session (and
# process group) leader stays outside it, as on CI machines that run jobs in containers: there
# /proc and getsid() show COMMAND's session id as 0. A rule that took 0 for "unknown" held here
# and broke there; this arm runs the suites that watch sessions and groups in that setting.
# Exit as the harness does; 77 (skipped, the reason printed) where a pid namespace cannot be made
# (not root, no unshare, a chroot whose / is not a mount point).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suite=${1:?suite} boundary=${2:?boundary}
# shellcheck source=unshare_probe.bash
source "$HERE/unshare_probe.bash"
if ! can_unshare_pidns; then
    echo "SKIP pidns/$suite/$boundary: $UNSHARE_WHY"
    exit 77
fi
# --mount-proc: the namespace's own /proc (a private mount namespace, gone with it).
exec unshare --pid --fork --mount-proc bash -c '
    read -r -a stat </proc/self/stat
    # field 6 (session; 0-based 5): its leader is outside, so it reads 0
    if [[ ${stat[5]} != 0 ]]; then
        echo "FAIL pidns: session id inside the namespace is ${stat[5]}, not 0: the setting is not produced"
        exit 1
    fi
    exec bash "$1/run" "$2" "$3"' pidns "$HERE" "$suite" "$boundary"
