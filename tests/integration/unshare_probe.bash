# Sourced by run and pidns.sh. can_unshare_pidns: a new pid namespace with its own /proc
# (unshare --pid --fork --mount-proc) can be made here; else 1, and UNSHARE_WHY says why: not root,
# no unshare, or unshare's own error (in a chroot whose / is not a mount point: "cannot change root
# filesystem propagation").
can_unshare_pidns() {
    UNSHARE_WHY=""
    if [[ $(id -u) != 0 ]]; then
        UNSHARE_WHY="needs root"
        return 1
    fi
    if ! command -v unshare >/dev/null; then
        UNSHARE_WHY="unshare is not installed"
        return 1
    fi
    local err
    if ! err=$(unshare --pid --fork --mount-proc true 2>&1 </dev/null); then
        UNSHARE_WHY="unshare --pid --fork --mount-proc fails here: ${err//$'\n'/ }"
        return 1
    fi
    return 0
}
