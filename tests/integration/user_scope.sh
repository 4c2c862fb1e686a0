#!/usr/bin/env bash
# user_scope.sh: the systemd user scope (DESIGN.md [scopes]), against a real `systemd --user`.
#
# An ordinary user (uid 65534) whose shell sits in a cgroup it may not write, the shape of an ssh
# login's session-N.scope, with a user manager of its own (user_manager.bash sets it up without a
# booted systemd): treeguard must ask that manager for a transient scope with Delegate=yes and form
# its cgroup leaf inside (not fall back to a process group).
#
# Needs root, a cgroup2 mount, unshare, setpriv, systemd and dbus-daemon; else exit 77 (skipped)
# with the reason printed. Output: PASS/FAIL lines, then "N passed, M failed".
set -u
export LC_ALL=C
TREEGUARD=${TREEGUARD:?TREEGUARD: the treeguard binary}
USER_ID=65534

skip() {
    echo "SKIP user_scope: $*"
    exit 77
}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/user_manager.bash"
user_manager_start "$USER_ID" "$0" "$@" || skip "$UM_WHY"
trap user_manager_stop EXIT

PASSED=0
FAILED=0
pass() { echo "PASS $1"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL $1: $2"; FAILED=$((FAILED + 1)); }

WORK=$UM_WORK
RT=$UM_RT
mkdir -m 700 "$WORK/state" "$WORK/user"
chown "$USER_ID:$USER_ID" "$WORK/state" "$WORK/user"
as_user() { um_as_user "$@"; }
wait_until() { um_wait_until "$@"; }

TOKEN=tg-user-scope-$$-$RANDOM
# token_alive: some process other than treeguard itself (a guardian being dismissed as the run
# returns carries the token too) has this test's token in its environment
TG_REAL=$(readlink -f "$TREEGUARD")
token_alive() {
    local file pid
    for file in $(grep -lsa "TG_TOKEN=$TOKEN" /proc/[0-9]*/environ); do
        pid=${file#/proc/}
        pid=${pid%/environ}
        [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == "$TG_REAL" ]] || return 0
    done
    return 1
}
token_gone() { ! token_alive; }
scopes_left() { as_user systemctl --user list-units --all --plain --no-legend 'treeguard-*' 2>/dev/null | grep -q .; }
no_scopes_left() { ! scopes_left; }
tg() { as_user TG_TOKEN="$TOKEN" TREEGUARD_STATE_DIR="$WORK/state" "$TREEGUARD" "$@"; }

# 1. auto: the leaf is made inside a scope of the user's manager, named for the run
out=$WORK/1.out err=$WORK/1.err
tg run -v --report "$WORK/user/1.json" -- sh -c 'cat /proc/self/cgroup; env' >"$out" 2>"$err"
rc=$?
leaf=$(sed -n 's/^0:://p' "$out")
kind=$(jq -r '.boundary.kind' "$WORK/user/1.json" 2>/dev/null)
if [[ $rc == 0 && $leaf =~ /treeguard-([0-9T-]+[0-9a-f]{4})\.scope/treeguard-([0-9T-]+[0-9a-f]{4})$ &&
    ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" && $kind == cgroup ]]; then
    pass "auto forms a cgroup leaf in the user scope treeguard-RUNID.scope"
else
    fail "auto in the user scope" "exit $rc, COMMAND's cgroup '$leaf', report kind '$kind'; $(tr '\n' ' ' <"$err")"
fi
if grep -q '^TREEGUARD_USER_SCOPE=' "$out"; then
    fail "marker" "COMMAND inherited TREEGUARD_USER_SCOPE"
else
    pass "COMMAND does not inherit the re-execution's marker"
fi
# 1b. the scope was asked with Delegate=yes (the manager says so while the run holds it): without
# it systemd owns every cgroup below the unit, and only this test's manager, which owns its whole
# tree, would let the leaf form anyway
tg run -- sh -c 'u=$(sed -n "s|^0::.*/\(treeguard-[^/]*\.scope\)/.*|\1|p" /proc/self/cgroup); echo "unit $u"; systemctl --user show -p Delegate "$u"' \
    >"$WORK/1b.out" 2>"$WORK/1b.err"
rc=$?
if [[ $rc == 0 ]] && grep -qx 'unit treeguard-.*\.scope' "$WORK/1b.out" && grep -qx 'Delegate=yes' "$WORK/1b.out"; then
    pass "the user scope is asked with Delegate=yes (systemctl --user show)"
else
    fail "Delegate=yes" "exit $rc; $(tr '\n' ' ' <"$WORK/1b.out") $(tr '\n' ' ' <"$WORK/1b.err")"
fi

# 2. the scope is gone when the run ends
if wait_until 10 no_scopes_left; then
    pass "the scope is gone when the run ends"
else
    fail "scope left" "$(as_user systemctl --user list-units --all --plain --no-legend 'treeguard-*')"
fi

# 3. what escaped by setsid and ignores TERM is gone when treeguard returns
tg run -k 1s -- sh -c 'setsid sh -c "trap \"\" TERM; exec sleep 1000" </dev/null >/dev/null 2>&1 & echo started' \
    >"$WORK/3.out" 2>"$WORK/3.err"
rc=$?
if [[ $rc == 0 ]] && grep -qx started "$WORK/3.out" && ! token_alive; then
    pass "a setsid escapee resisting TERM is gone when the run ends (exit 0)"
else
    fail "escapee" "exit $rc, alive after: $(token_alive && echo yes || echo no); $(tr '\n' ' ' <"$WORK/3.err")"
fi

# 4. the controller SIGKILLed in its scope: its guardian takes the leaf down
fifo=$WORK/4.fifo
mkfifo "$fifo"
# (the command itself in the background, not a shell function: $! must be treeguard's pid, which
# setpriv and env exec into, not a subshell's)
setpriv --reuid "$USER_ID" --regid "$USER_ID" --clear-groups env HOME="$RT" XDG_RUNTIME_DIR="$RT" \
    DBUS_SESSION_BUS_ADDRESS="unix:path=$RT/bus" TG_TOKEN="$TOKEN" TREEGUARD_STATE_DIR="$WORK/state" \
    "$TREEGUARD" run -- sh -c 'setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo ready; exec sleep 1000' \
    >"$fifo" 2>"$WORK/4.err" &
controller=$!
read -r -t 60 line <"$fifo"
if [[ $line == ready && $(readlink "/proc/$controller/exe") == "$TG_REAL" ]]; then
    kill -KILL "$controller"
    wait "$controller" 2>/dev/null
    # DESIGN.md [guardian]: within 2 s; margin for a loaded machine
    if wait_until 20 token_gone; then
        pass "the controller SIGKILLed: its guardian took the user-scope leaf down"
    else
        fail "controller death" "members of the killed run still alive after 20 s"
    fi
else
    fail "controller death" "COMMAND said '$line', pid $controller is $(readlink "/proc/$controller/exe"); $(tr '\n' ' ' <"$WORK/4.err")"
    kill -KILL "$controller" 2>/dev/null
fi
if tg run -- true; then
    pass "the next run is dispatched after the killed one"
else
    fail "gate after controller death" "exit $?"
fi

# 5. nested: the inner run makes its leaf inside the outer one's, with no second scope
tg run -v -- "$TREEGUARD" run -v -- sh -c 'cat /proc/self/cgroup' >"$WORK/5.out" 2>"$WORK/5.err"
rc=$?
leaf=$(sed -n 's/^0:://p' "$WORK/5.out")
scopes=$(grep -c 'a scope from' "$WORK/5.err")
if [[ $rc == 0 && $scopes == 1 && $leaf =~ \.scope/treeguard-[^/]+/treeguard-[^/]+$ ]]; then
    pass "a nested run nests its leaf in the outer leaf, with no scope of its own"
else
    fail "nested" "exit $rc, cgroup '$leaf', scopes asked $scopes; $(tr '\n' ' ' <"$WORK/5.err")"
fi

# 6. probe names the offer
if tg probe | grep -qE '^ +yes +user scope: .*--user --scope'; then
    pass "probe reports the user scope"
else
    fail "probe" "$(tg probe | grep -i scope)"
fi

# 7. without a reachable manager: auto falls back and says why; a demanded cgroup is 125
nomgr() { setpriv --reuid "$USER_ID" --regid "$USER_ID" --clear-groups env -u XDG_RUNTIME_DIR -u DBUS_SESSION_BUS_ADDRESS HOME="$RT" TREEGUARD_STATE_DIR="$WORK/state" "$TREEGUARD" "$@"; }
nomgr run -v -- true 2>"$WORK/7a.err"
rc=$?
if [[ $rc == 0 ]] && grep -q 'boundary process-group' "$WORK/7a.err" && grep -q "plan for --boundary auto: user scope: refused: no user manager" "$WORK/7a.err"; then
    pass "no user manager: auto falls back to process-group and says why"
else
    fail "fallback" "exit $rc; $(tr '\n' ' ' <"$WORK/7a.err")"
fi
nomgr run --boundary cgroup -- true 2>"$WORK/7b.err"
rc=$?
if [[ $rc == 125 ]] && [[ $(wc -l <"$WORK/7b.err") == 1 ]] && grep -q 'cgroup boundary unavailable: cgroup leaf: .*; user scope: no user manager' "$WORK/7b.err"; then
    pass "no user manager: --boundary cgroup exits 125 in one line naming why"
else
    fail "demanded cgroup" "exit $rc; $(tr '\n' ' ' <"$WORK/7b.err")"
fi

# 8. a manager the environment does not name, in /run/user/UID: the advice names it, and the
# command it gives works when pasted
if [[ -d /run/user ]]; then
    mount -t tmpfs -o mode=755 tmpfs /run/user
    mkdir -m 700 /run/user/$USER_ID
    chown "$USER_ID:$USER_ID" /run/user/$USER_ID
    mount --bind "$RT" /run/user/$USER_ID
    nomgr run -v -- true 2>"$WORK/8.err"
    advice=$(grep -o 'export XDG_RUNTIME_DIR=[^)]*' "$WORK/8.err")
    if [[ -n $advice ]]; then
        setpriv --reuid "$USER_ID" --regid "$USER_ID" --clear-groups env -u XDG_RUNTIME_DIR \
            -u DBUS_SESSION_BUS_ADDRESS HOME="$RT" TREEGUARD_STATE_DIR="$WORK/state" TREEGUARD="$TREEGUARD" \
            bash -c "$advice && \"\$TREEGUARD\" run -v -- cat /proc/self/cgroup" >"$WORK/8.out" 2>"$WORK/8b.err"
        if grep -q '^0::.*\.scope/treeguard-' "$WORK/8.out"; then
            pass "the advice for an unnamed user manager works when pasted ($advice)"
        else
            fail "advice pasted" "$(cat "$WORK/8.out" "$WORK/8b.err" | tr '\n' ' ')"
        fi
    else
        fail "advice" "no 'export XDG_RUNTIME_DIR=' in: $(tr '\n' ' ' <"$WORK/8.err")"
    fi
    umount /run/user/$USER_ID /run/user
fi

# 9. a scope of the user's own that is not delegated (a desktop terminal's app scope: systemd-run
# --user --scope without Delegate=): treeguard may write its cgroup (the user manager's tree is the
# user's), but systemd's rule is no cgroups beneath a unit without Delegate=. It asks the manager
# (systemctl --user show -p Delegate) once for that unit and boot, keeps the answer in the state
# directory, and uses a user scope of its own, asked with Delegate=yes. systemctl and systemd-run
# on PATH are wrappers that log each call and exec the real ones.
BIN=$WORK/bin
ASKED=$WORK/user/asked.log
mkdir -p "$BIN"
for tool in systemctl systemd-run; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexec %q "$@"\n' "$tool" "$ASKED" "$(command -v "$tool")" >"$BIN/$tool"
    chmod 755 "$BIN/$tool"
done
APP=tg-app-$$.scope
STATE9=$WORK/user/state9
as_user mkdir -m 700 "$STATE9"
as_user env PATH="$BIN:$PATH" TG_TOKEN="$TOKEN" TREEGUARD_STATE_DIR="$STATE9" TREEGUARD="$TREEGUARD" \
    "$(command -v systemd-run)" --user --scope --quiet --unit="$APP" -- sh -c '
    for i in 1 2; do "$TREEGUARD" run -v -- cat /proc/self/cgroup; done
    sed -i "s/^boot .*/boot 00000000-0000-4000-8000-000000000000/" "$TREEGUARD_STATE_DIR/units/user-$0"
    "$TREEGUARD" run -v -- cat /proc/self/cgroup
    "$TREEGUARD" run -v -- "$TREEGUARD" run -v -- cat /proc/self/cgroup' "$APP" >"$WORK/9.out" 2>"$WORK/9.err"
rc=$?
in_own_scope=$(grep -c "^0::.*/$APP/treeguard-" "$WORK/9.out")
scoped=$(grep -cE '^0::.*/treeguard-([^/]+)\.scope/treeguard-\1(/treeguard-[^/]+)?$' "$WORK/9.out")
nested=$(grep -cE '^0::.*/treeguard-([^/]+)\.scope/treeguard-\1/treeguard-[^/]+$' "$WORK/9.out")
asks=$(grep -cxF "systemctl --user --no-pager show -p Delegate --value -- $APP" "$ASKED")
scopes=$(grep -c '^systemd-run ' "$ASKED")
delegated_scopes=$(grep '^systemd-run ' "$ASKED" | grep -c -- ' --property=Delegate=yes ')
note9="exit $rc, $scoped of 4 in a scope of treeguard's ($nested nested), $in_own_scope beneath $APP; systemctl asked $asks, systemd-run $scopes ($delegated_scopes with Delegate=yes)"
echo "# 9: $note9"
grep 'plan for --boundary auto: cgroup leaf' "$WORK/9.err" | sort | uniq -c | sed 's/^/# 9: /'
if [[ $rc == 0 && $scoped == 4 && $in_own_scope == 0 && $nested == 1 ]] &&
    grep -qF "cgroup leaf: refused: unit $APP is not delegated (asked the user's systemd, kept in $STATE9/units/user-$APP)" "$WORK/9.err"; then
    pass "an app scope without Delegate=: no leaf beneath it, a user scope of treeguard's own"
else
    fail "undelegated app scope" "$note9; $(tr '\n' ' ' <"$WORK/9.err" | head -c 800)"
fi
# once for the unit and boot: runs 1 and 2 ask once; the answer of another boot is asked again; the
# nested run asks nothing (its leaf nests in the outer's)
if [[ $asks == 2 ]] && grep -qF "cgroup leaf: refused: unit $APP is not delegated (systemd's answer of this boot, kept in" "$WORK/9.err"; then
    pass "the manager is asked once per unit and boot (2 asks for 5 runs, one answer of another boot)"
else
    fail "asked once" "$note9; $(cat "$ASKED" | tr '\n' '|')"
fi
# 4 outer runs, each in a scope of its own (the nested run asks none), each asked with Delegate=yes
if [[ $scopes == 4 && $delegated_scopes == 4 ]]; then
    pass "every scope treeguard asks for is asked with Delegate=yes (systemd-run's arguments)"
else
    fail "Delegate=yes in systemd-run's arguments" "$note9; $(grep '^systemd-run' "$ASKED" | tr '\n' '|')"
fi

# 10. the manager's answer is systemctl's stdout alone: a warning systemctl prints on stderr (here a
# wrapper on PATH prints systemd's "changed on disk" warning, then execs the real one) is no part of
# it. Read with it, the answer "no" was unreadable, taken for "nothing known", and the leaf made
# beneath an app scope that is not delegated.
BIN10=$WORK/bin10
mkdir -p "$BIN10"
REAL_SYSTEMCTL=$(command -v systemctl)
cat >"$BIN10/systemctl" <<EOF
#!/bin/sh
echo "Warning: The unit file, source configuration file or drop-ins of \$* changed on disk. Run 'systemctl --user daemon-reload' to reload units." >&2
exec '$REAL_SYSTEMCTL' "\$@"
EOF
chmod 755 "$BIN10/systemctl"
APP10=tg-app10-$$.scope
STATE10=$WORK/user/state10
as_user mkdir -m 700 "$STATE10"
as_user env PATH="$BIN10:$PATH" TG_TOKEN="$TOKEN" TREEGUARD_STATE_DIR="$STATE10" \
    "$(command -v systemd-run)" --user --scope --quiet --unit="$APP10" -- \
    "$TREEGUARD" run -v -- cat /proc/self/cgroup >"$WORK/10.out" 2>"$WORK/10.err"
rc=$?
note10="exit $rc, $(grep -c "^0::.*/$APP10/treeguard-" "$WORK/10.out") beneath $APP10, $(grep -cE '^0::.*/treeguard-([^/]+)\.scope/treeguard-\1$' "$WORK/10.out") in a scope of treeguard's"
echo "# 10: $note10"
if [[ $rc == 0 ]] && ! grep -q "^0::.*/$APP10/treeguard-" "$WORK/10.out" &&
    grep -qE '^0::.*/treeguard-([^/]+)\.scope/treeguard-\1$' "$WORK/10.out" &&
    grep -qF "cgroup leaf: refused: unit $APP10 is not delegated (asked the user's systemd, kept in $STATE10/units/user-$APP10)" "$WORK/10.err"; then
    pass "a warning on systemctl's stderr is no part of its answer: not delegated, no leaf beneath $APP10"
else
    fail "systemctl warning" "$note10; $(tr '\n' ' ' <"$WORK/10.err" | head -c 800)"
fi

if token_alive; then
    fail "survivors" "a process of this test's runs is still alive"
fi
echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
