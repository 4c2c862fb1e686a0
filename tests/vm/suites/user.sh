#!/bin/bash
# In-VM suite: an ordinary user (TG_VM_USER, uid 1000, lingering) on a systemd host. Records which
# boundary auto gives that user in a login session (su -l: a root-owned session-N.scope; the user
# scope itself is checked by user_scope.sh) and checks the leaf in its own delegated scope
# (systemd-run --user --scope -p Delegate=yes); then the integration shapes as that user on the
# process-group fallback.
source "$TG_SRC/tests/vm/lib.sh"
user=$TG_VM_USER
uid=$(id -u "$user")

if systemctl is-active --quiet "user@$uid.service"; then
    pass "$user: its user manager user@$uid.service runs (lingering)"
else
    fail "$user: its user manager user@$uid.service runs (lingering)" "$(systemctl is-active "user@$uid.service")"
fi

# 1. a login session: the session scope is root's, so the user may not make a leaf there; what auto
# forms instead is recorded here (the user scope's own checks are suites/user_scope.sh)
ctx=session:$user
auto_boundary "$ctx"
note "$user in a session: own cgroup $AUTO_CGROUP; auto: ${AUTO_BOUNDARY:-none}"
sed -n 's/^treeguard: /#   treeguard: /p' <<<"$AUTO_OUT" | grep -v 'child pid' | head -n 8
if [[ $AUTO_CGROUP == "/user.slice/user-$uid.slice/session-"*.scope ]]; then
    pass "$user in a session: su -l gives a session-N.scope"
else
    fail "$user in a session: su -l gives a session-N.scope" "cgroup '$AUTO_CGROUP'"
fi
as "$ctx" "$TREEGUARD" probe 2>&1 | sed 's/^/#   probe: /' | head -n 20

# 2. the user's own delegated scope: a cgroup the user may write
auto_boundary "$ctx" systemd-run --user --scope --quiet -p Delegate=yes --
note "$user in systemd-run --user --scope -p Delegate=yes: own cgroup $AUTO_CGROUP; auto: ${AUTO_BOUNDARY:-none}"
if [[ $AUTO_CGROUP == "/user.slice/user-$uid.slice/user@$uid.service/"* &&
    $AUTO_BOUNDARY == "cgroup $CG_MOUNT$AUTO_CGROUP/treeguard-"* ]]; then
    pass "$user in a delegated user scope: auto forms a cgroup leaf in it"
else
    fail "$user in a delegated user scope: auto forms a cgroup leaf in it" "$(tr '\n' '|' <<<"$AUTO_OUT" | head -c 400)"
fi

# 3. the fallback shapes, as the user in its session
TG_SHAPES="setsid daemon ignore-term" harness "$ctx" "$user in a session" shapes process-group
finish
