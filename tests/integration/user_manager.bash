# shellcheck shell=bash
# user_manager.bash: a real `systemd --user` for an ordinary user on a host whose PID 1 is not
# systemd (the CI machine), for tests/integration/user_scope.sh and scripts/bench.sh. Source it,
# then call user_manager_start (as root); it re-executes the caller in a private mount namespace
# first when it is not in one (UM_INSIDE marks the second pass).
#
# What it makes: in that mount namespace, a tmpfs over /run/systemd with an empty system/ (what
# sd_booted() looks for); cgroups under the cgroup2 mount: $UM_BASE/user and its manager cgroup
# user@UID.service (named as on a booted host, where the units below it are the user manager's) owned
# by the user, as Delegate=yes leaves them, and $UM_BASE/user/login, root's, where the caller's
# shell is moved (the shape of an ssh login's session-N.scope: treeguard may not write it); as
# the user, dbus-daemon --session and /lib/systemd/systemd --user in user@UID.service. (On a booted host
# the common ancestor of the login and the manager, user-UID.slice, is root's and the user
# manager asks PID 1 to move a process; here it is the user's, so the manager moves it itself.)
#
#   user_manager_start UID "$0" "$@"   0 when the manager runs; else 1 with UM_WHY set
#   um_as_user CMD...                  CMD as the user, with HOME, XDG_RUNTIME_DIR and the bus set
#   um_wait_until SECONDS CMD...       poll CMD (bounded)
#   user_manager_stop                  end the manager and everything in $UM_BASE, remove it all
# After start: UM_RT (the user's runtime directory), UM_WORK (a scratch directory, 755),
# UM_MOUNT (the cgroup2 mount), UM_BASE.

UM_PIDS=()
UM_WHY=""

um_wait_until() {
    local limit=$(($1 * 50)) i
    shift
    for ((i = 0; i < limit; i++)); do
        "$@" && return 0
        read -r -t 0.02 -u "$UM_POLL_FD" _ || true
    done
    return 1
}

um_as_user() {
    setpriv --reuid "$UM_UID" --regid "$UM_UID" --clear-groups \
        env HOME="$UM_RT" XDG_RUNTIME_DIR="$UM_RT" DBUS_SESSION_BUS_ADDRESS="unix:path=$UM_RT/bus" "$@"
}

um_ready() {
    [[ -S $UM_RT/systemd/private && -S $UM_RT/bus ]] &&
        um_as_user systemctl --user is-system-running 2>/dev/null | grep -qE 'running|degraded'
}

# user_manager_start UID SCRIPT [ARGS...]
user_manager_start() {
    UM_UID=$1
    shift
    if [[ $(id -u) != 0 ]]; then
        UM_WHY="needs root (to make and chown the cgroups)"
        return 1
    fi
    local tool
    for tool in unshare setpriv dbus-daemon systemctl systemd-run; do
        command -v "$tool" >/dev/null || { UM_WHY="no $tool"; return 1; }
    done
    [[ -x /lib/systemd/systemd ]] || { UM_WHY="no /lib/systemd/systemd"; return 1; }
    UM_MOUNT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    [[ -n $UM_MOUNT ]] || { UM_WHY="no cgroup2 mount in /proc/self/mountinfo"; return 1; }
    if [[ -z ${UM_INSIDE:-} ]]; then
        unshare --mount true 2>/dev/null || { UM_WHY="unshare --mount is refused here"; return 1; }
        export UM_INSIDE=1
        exec unshare --mount bash "$@"
    fi
    mount --make-rprivate / 2>/dev/null || {
        UM_WHY="cannot make / private here (not a mount point: a chroot?)"
        return 1
    }
    UM_WORK=$(mktemp -d /tmp/tg-user-manager.XXXXXX)
    chmod 755 "$UM_WORK"
    UM_RT=$UM_WORK/runtime
    mkdir -m 700 "$UM_RT"
    chown "$UM_UID:$UM_UID" "$UM_RT"
    mkfifo "$UM_WORK/poll.fifo"
    exec {UM_POLL_FD}<>"$UM_WORK/poll.fifo"
    UM_BASE=$UM_MOUNT/tg-user-manager-$$
    local dir
    local manager_cg=$UM_BASE/user/user@$UM_UID.service
    mkdir -p "$manager_cg" "$UM_BASE/user/login"
    for dir in "$UM_BASE/user" "$manager_cg"; do
        chown "$UM_UID:$UM_UID" "$dir" "$dir/cgroup.procs" "$dir/cgroup.subtree_control" "$dir/cgroup.threads"
    done
    mount -t tmpfs -o mode=755 tmpfs /run/systemd
    mkdir /run/systemd/system
    # The bus and the manager, started from user@UID.service (this shell moves there first) as this
    # shell's own children (so $! is theirs) that die with it (--pdeathsig).
    local -a user_env=(env HOME="$UM_RT" XDG_RUNTIME_DIR="$UM_RT" DBUS_SESSION_BUS_ADDRESS="unix:path=$UM_RT/bus")
    echo $$ >"$manager_cg/cgroup.procs"
    setpriv --reuid "$UM_UID" --regid "$UM_UID" --clear-groups --pdeathsig KILL "${user_env[@]}" \
        dbus-daemon --session --address="unix:path=$UM_RT/bus" --nofork --nopidfile --syslog-only \
        </dev/null >/dev/null 2>&1 &
    UM_PIDS+=($!)
    setpriv --reuid "$UM_UID" --regid "$UM_UID" --clear-groups --pdeathsig KILL "${user_env[@]}" \
        /lib/systemd/systemd --user </dev/null >"$UM_WORK/manager.log" 2>&1 &
    UM_PIDS+=($!)
    echo $$ >"$UM_BASE/user/login/cgroup.procs"
    if ! um_wait_until 30 um_ready; then
        UM_WHY="systemd --user did not start here: $(tail -3 "$UM_WORK/manager.log" | tr '\n' ' ')"
        return 1
    fi
    return 0
}

user_manager_stop() {
    local i
    disown -a 2>/dev/null
    [[ -n ${UM_BASE:-} ]] || return 0
    # The manager stops its own units, then exits; what it does not end in time, cgroup.kill
    # does: whatever is left in the cgroups made here is ours. Then the leaves go, deepest
    # first (rmdir only).
    um_as_user systemctl --user exit >/dev/null 2>&1
    for ((i = 0; i < 100; i++)); do
        kill -0 "${UM_PIDS[1]:-0}" 2>/dev/null || break
        read -r -t 0.02 -u "$UM_POLL_FD" _ 2>/dev/null || true
    done
    if [[ -d $UM_BASE ]]; then
        echo $$ >"$UM_MOUNT/cgroup.procs" 2>/dev/null
        [[ -f $UM_BASE/cgroup.kill ]] && echo 1 >"$UM_BASE/cgroup.kill" 2>/dev/null
        for ((i = 0; i < 250; i++)); do
            grep -q 'populated 0' "$UM_BASE/cgroup.events" 2>/dev/null && break
            read -r -t 0.02 -u "$UM_POLL_FD" _ 2>/dev/null || true
        done
        find "$UM_BASE" -depth -type d -exec rmdir {} + 2>/dev/null
    fi
    umount /run/systemd 2>/dev/null
    rm -rf "$UM_WORK"
}
