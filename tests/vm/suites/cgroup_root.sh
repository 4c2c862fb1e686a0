#!/bin/bash
# In-VM suite: root on a systemd host, in a system service (the runner's tg-vm.service) and in a
# login session (su -l root under pam_systemd: session-N.scope). Neither unit is delegated, so auto
# makes no leaf beneath its own cgroup (DESIGN.md [scopes]: it asks the system manager once per unit
# and boot) and forms its leaf in a system scope of its own (treeguard-RUNID.scope, Delegate=yes);
# then the integration harness's shapes on the cgroup boundary (in the session, a few of them:
# under TCG the guest is slow; the big fan-outs are left to the host's suites). The forker is one
# of those: it forks every 2 ms until the deadline, so the slower the machine, the more members the
# takedown meets. Measured: on the host, 3,000 members at the deadline cost 430 ms past the 1 s
# grace (the holdings census, the drain's TERM to each, the census and the kill); in the TCG guest,
# 19 s in all, past the harness's 10 s margin, while every other shape there took under 1.5 s.
source "$TG_SRC/tests/vm/lib.sh"
SERVICE_SHAPES="grandchild orphan setsid daemon setpgid ignore-term stopped"
SESSION_SHAPES="setsid daemon ignore-term"

for ctx in service session:root; do
    label="root in ${ctx%%:*}"
    auto_boundary "$ctx"
    note "$label: own cgroup $AUTO_CGROUP; auto: ${AUTO_BOUNDARY:-none}"
    if [[ $ctx == session:* && $AUTO_CGROUP != /user.slice/user-0.slice/session-*.scope ]]; then
        fail "$label: su -l gives a session-N.scope" "cgroup '$AUTO_CGROUP'"
        continue
    fi
    unit=${AUTO_CGROUP##*/}
    grep 'plan for .*cgroup leaf' <<<"$AUTO_OUT" | sed "s/^/# $label: /"
    if [[ $AUTO_BOUNDARY =~ ^cgroup\ $CG_MOUNT/.*/treeguard-([^/]+)\.scope/treeguard-([^/]+)$ &&
        ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" && $AUTO_BOUNDARY != "cgroup $CG_MOUNT$AUTO_CGROUP/"* ]] &&
        grep -q "cgroup leaf: refused: unit $unit is not delegated (asked systemd, kept in " <<<"$AUTO_OUT"; then
        pass "$label: auto makes no leaf beneath $unit (not delegated): a leaf in a system scope of its own"
    else
        fail "$label: auto makes no leaf beneath $unit (not delegated): a leaf in a system scope of its own" \
            "$(tr '\n' '|' <<<"$AUTO_OUT" | head -c 600)"
    fi
    note "$label: probe plan: $(as "$ctx" "$TREEGUARD" probe 2>&1 | sed -n '/^boundary plan/,$p' | tr -s ' ' | tr '\n' '|')"
    if [[ $ctx == service ]]; then shapes=$SERVICE_SHAPES; else shapes=$SESSION_SHAPES; fi
    TG_SHAPES=$shapes harness "$ctx" "$label" shapes cgroup
done
finish
