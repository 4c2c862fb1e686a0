#!/bin/bash
# In-VM suite: root on a systemd host, in a system service (the runner's tg-vm.service) and in a
# login session (su -l root under pam_systemd: session-N.scope): auto forms a cgroup leaf beneath
# its own cgroup; then the integration harness's shapes on the cgroup boundary (in the session, a
# few of them: under TCG the guest is slow; the big fan-outs are left to the host's suites).
source "$TG_SRC/tests/vm/lib.sh"
SERVICE_SHAPES="grandchild orphan setsid daemon setpgid ignore-term stopped forker"
SESSION_SHAPES="setsid daemon ignore-term"

for ctx in service session:root; do
    label="root in ${ctx%%:*}"
    auto_boundary "$ctx"
    note "$label: own cgroup $AUTO_CGROUP; auto: ${AUTO_BOUNDARY:-none}"
    if [[ $ctx == session:* && $AUTO_CGROUP != /user.slice/user-0.slice/session-*.scope ]]; then
        fail "$label: su -l gives a session-N.scope" "cgroup '$AUTO_CGROUP'"
        continue
    fi
    if [[ $AUTO_BOUNDARY == "cgroup $CG_MOUNT$AUTO_CGROUP/treeguard-"* ]]; then
        pass "$label: auto forms a cgroup leaf beneath its own cgroup"
    else
        fail "$label: auto forms a cgroup leaf beneath its own cgroup" "$(tr '\n' '|' <<<"$AUTO_OUT" | head -c 400)"
    fi
    if [[ $ctx == service ]]; then shapes=$SERVICE_SHAPES; else shapes=$SESSION_SHAPES; fi
    TG_SHAPES=$shapes harness "$ctx" "$label" shapes cgroup
done
finish
