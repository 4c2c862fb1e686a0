#!/bin/bash
# In-VM suite: the systemd user scope (DESIGN.md [scopes]) on a real host. The ordinary user
# TG_VM_USER in a login session (su -l: pam_systemd's root-owned session-N.scope) gets a cgroup leaf
# inside a transient treeguard-RUNID.scope of its own user@UID.service, delegated to it; what
# escapes by setsid is contained, the controller's SIGKILL leaves nothing, the scope is gone
# afterwards, and a nested run nests its leaf with no scope of its own. In a scope of the user's
# without Delegate= (a desktop terminal's app scope) no leaf is made beneath it: the manager is
# asked once and a user scope of treeguard's own is used. The plan probe prints on each shape is
# noted.
source "$TG_SRC/tests/vm/lib.sh"
user=$TG_VM_USER
uid=$(id -u "$user")
check=$WORK/user_scope_check.sh
cat >"$check" <<'CHECK'
# run as the user in its login session; prints PASS/FAIL lines
set -u
uid=$(id -u)
state=$(mktemp -d)/state
token=tg-vm-user-scope-$$-$RANDOM
real=$(readlink -f "$TREEGUARD")
# alive: a process of the runs, other than treeguard itself (a guardian being dismissed), is alive
alive() {
    local file pid
    for file in $(grep -lsa "TG_TOKEN=$token" /proc/[0-9]*/environ); do
        pid=${file#/proc/}
        pid=${pid%/environ}
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$real" ]] || return 0
    done
    return 1
}
poll() { local i; for ((i = 0; i < $1 * 20; i++)); do "${@:2}" && return 0; sleep 0.05; done; return 1; }
gone() { ! alive; }
no_scope() { ! systemctl --user list-units --all --plain --no-legend 'treeguard-*' | grep -q .; }
echo "# XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-unset} cgroup $(sed -n 's/^0:://p' /proc/self/cgroup)"

out=$(TG_TOKEN=$token "$TREEGUARD" run -v --state-dir "$state" -- cat /proc/self/cgroup 2>&1)
rc=$?
leaf=$(sed -n 's/^0:://p' <<<"$out")
echo "# COMMAND's cgroup: $leaf"
if [[ $rc == 0 && $leaf =~ ^/user\.slice/user-$uid\.slice/user@$uid\.service/.*/treeguard-([^/]+)\.scope/treeguard-([^/]+)$ &&
    ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; then
    echo "PASS auto in a login session forms its leaf in treeguard-RUNID.scope under user@$uid.service"
else
    echo "FAIL auto in a login session: exit $rc: $(tr '\n' '|' <<<"$out" | head -c 600)"
fi
if poll 10 no_scope; then
    echo "PASS the scope is gone when the run ends"
else
    echo "FAIL scope left: $(systemctl --user list-units --all --plain --no-legend 'treeguard-*')"
fi

TG_TOKEN=$token "$TREEGUARD" run -k 1s --state-dir "$state" -- \
    sh -c 'setsid sh -c "trap \"\" TERM; exec sleep 1000" </dev/null >/dev/null 2>&1 & echo started' >/dev/null 2>&1
rc=$?
if [[ $rc == 0 ]] && gone; then
    echo "PASS a setsid escapee that ignores TERM is gone when the run ends"
else
    echo "FAIL escapee: exit $rc, alive: $(alive && echo yes || echo no)"
fi

fifo=$(mktemp -u)
mkfifo "$fifo"
TG_TOKEN=$token "$TREEGUARD" run --state-dir "$state" -- \
    sh -c 'setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo ready; exec sleep 1000' >"$fifo" 2>/dev/null &
controller=$!
read -r -t 120 line <"$fifo"
if [[ $line == ready ]]; then
    kill -KILL "$controller"
    if poll 30 gone; then
        echo "PASS the controller SIGKILLed in its scope: nothing of the run is left"
    else
        echo "FAIL controller death: members alive 30 s after the SIGKILL"
    fi
else
    echo "FAIL controller death: COMMAND never said ready"
    kill -KILL "$controller" 2>/dev/null
fi
wait "$controller" 2>/dev/null
if poll 10 no_scope && "$TREEGUARD" run --state-dir "$state" -- true; then
    echo "PASS after the controller's death: no scope left, the next run dispatched"
else
    echo "FAIL after the controller's death: exit $?, scopes: $(systemctl --user list-units --all --plain --no-legend 'treeguard-*')"
fi

out=$("$TREEGUARD" run -v --state-dir "$state" -- "$TREEGUARD" run -v --state-dir "$state" -- cat /proc/self/cgroup 2>&1)
rc=$?
leaf=$(sed -n 's/^0:://p' <<<"$out")
asks=$(grep -c 'a scope from' <<<"$out")
if [[ $rc == 0 && $asks == 1 && $leaf =~ \.scope/treeguard-[^/]+/treeguard-[^/]+$ ]]; then
    echo "PASS a nested run nests its leaf in the outer one, asking for no scope"
else
    echo "FAIL nested: exit $rc, scopes asked $asks, cgroup $leaf"
fi
# a scope the user made with Delegate=yes is delegated: the leaf is made there, no scope asked
out=$(systemd-run --user --scope --quiet -p Delegate=yes "$TREEGUARD" run -v --state-dir "$state" -- cat /proc/self/cgroup 2>&1)
rc=$?
leaf=$(sed -n 's/^0:://p' <<<"$out")
if [[ $rc == 0 && $leaf =~ /run-[^/]+\.scope/treeguard-[^/]+$ ]] && ! grep -q 'a scope from' <<<"$out"; then
    echo "PASS in a scope with Delegate=yes: the leaf is made there, no scope asked"
else
    echo "FAIL scope with Delegate=yes: exit $rc, cgroup $leaf: $(tr '\n' '|' <<<"$out" | head -c 600)"
fi
# a scope the user made without Delegate= (a desktop terminal's app scope, systemd-run --user
# --scope): the cgroup is the user's to write, but the unit is not delegated: no leaf beneath it.
# treeguard asks the user's manager (once for the unit and boot, kept in the state directory) and
# forms its leaf in a user scope of its own, asked with Delegate=yes
inner=$(mktemp)
cat >"$inner" <<'INNER'
cat /proc/self/cgroup
u=$(sed -n 's|^0::.*/\(treeguard-[^/]*\.scope\)/.*|\1|p' /proc/self/cgroup)
echo "unit $u"
systemctl --user show -p Delegate "$u"
INNER
app=tg-app-$$.scope
out=$(systemd-run --user --scope --quiet --unit="$app" sh -c '
    "$0" run -v --state-dir "$1" -- sh "$2"; echo "exit $?"
    "$0" run -v --state-dir "$1" -- true; echo "exit $?"' "$TREEGUARD" "$state" "$inner" 2>&1)
leaf=$(sed -n 's/^0:://p' <<<"$out")
echo "# app scope without Delegate=: COMMAND's cgroup: $leaf"
grep 'cgroup leaf' <<<"$out" | sed 's/^/# app scope: /'
if [[ $(grep -c '^exit 0$' <<<"$out") == 2 && $leaf =~ /treeguard-([^/]+)\.scope/treeguard-([^/]+)$ &&
    ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" && $leaf != *"/$app/"* ]] &&
    grep -qx 'Delegate=yes' <<<"$out" &&
    grep -qF "cgroup leaf: refused: unit $app is not delegated (asked the user's systemd, kept in $state/units/user-$app)" <<<"$out" &&
    grep -qF "cgroup leaf: refused: unit $app is not delegated (systemd's answer of this boot, kept in $state/units/user-$app)" <<<"$out"; then
    echo "PASS in an app scope without Delegate=: no leaf beneath it; a user scope of its own (Delegate=yes); asked once"
else
    echo "FAIL app scope without Delegate=: cgroup $leaf: $(tr '\n' '|' <<<"$out" | head -c 900)"
fi
# the plan probe prints on each shape this user meets
echo "# probe plan, $(id -un) in a login session: $("$TREEGUARD" probe | sed -n '/^boundary plan/,$p' | tr -s ' ' | tr '\n' '|')"
echo "# probe plan, $(id -un) in an app scope without Delegate=: $(systemd-run --user --scope --quiet "$TREEGUARD" probe | sed -n '/^boundary plan/,$p' | tr -s ' ' | tr '\n' '|')"
echo "# probe plan, $(id -un) in a scope with Delegate=yes: $(systemd-run --user --scope --quiet -p Delegate=yes "$TREEGUARD" probe | sed -n '/^boundary plan/,$p' | tr -s ' ' | tr '\n' '|')"
if poll 10 no_scope; then :; else echo "FAIL scopes left: $(systemctl --user list-units --all --plain --no-legend 'treeguard-*')"; fi
if gone; then :; else echo "FAIL survivors of this suite are alive"; fi
CHECK
chmod 644 "$check"
passed=0
while IFS= read -r line; do
    case $line in
        "PASS "*) pass "$user: ${line#PASS }"; passed=$((passed + 1)) ;;
        "FAIL "*) fail "$user: ${line#FAIL }" "(in the session)" ;;
        *) echo "$line" ;;
    esac
done < <(as "session:$user" bash "$check" 2>&1)
# eight checks above: fewer PASS and FAIL lines than that means the session script itself broke
if ((passed + VM_FAILED < 8)); then
    fail "$user: the user-scope checks ran" "only $passed passed and $VM_FAILED failed of 8"
fi
finish
