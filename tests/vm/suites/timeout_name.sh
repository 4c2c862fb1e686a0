#!/bin/bash
# In-VM suite: treeguard called as `timeout` (a link, as the man page has it) where it re-executes
# itself into a systemd scope: root in the runner's service (not delegated: the system scope) and
# the ordinary user tg in a login session (a root-owned session-N.scope: the user scope). The
# re-executed treeguard must speak timeout's grammar as the first did (`timeout 5 true` is not
# `treeguard 5 true`), under the name it was called by, and COMMAND must start with what the
# caller gave treeguard: umask, working directory, environment, ignored and blocked signals, nice
# value and open-files limit, as the same command started without treeguard has them.
source "$TG_SRC/tests/vm/lib.sh"

check=$WORK/timeout_name_check.sh
cat >"$check" <<'CHECK'
# run in its context (root in the service, or the user in its login session); prints PASS/FAIL
set -u
who="$(id -un) in $(sed -n 's/^0:://p' /proc/self/cgroup)"
bin=$(mktemp -d)
ln -s "$TREEGUARD" "$bin/timeout"
export TREEGUARD_STATE_DIR=$bin/state
in_scope() { [[ $1 =~ /treeguard-([^/]+)\.scope/treeguard-([^/]+)$ && ${BASH_REMATCH[1]} == "${BASH_REMATCH[2]}" ]]; }

out=$("$bin/timeout" 5 sh -c 'sed -n "s/^0:://p" /proc/self/cgroup' 2>&1)
rc=$?
if [[ $rc == 0 ]] && in_scope "$out"; then
    echo "PASS $who: timeout 5 COMMAND (a link by its path) runs COMMAND in a leaf of a scope of its own"
else
    echo "FAIL $who: timeout 5 COMMAND by a link's path: exit $rc: $(tr '\n' '|' <<<"$out" | head -c 400)"
fi

out=$(PATH=$bin:$PATH timeout 5 sh -c 'echo ran' 2>&1)
rc=$?
if [[ $rc == 0 && $out == ran ]]; then
    echo "PASS $who: timeout 5 COMMAND (the bare name, found in PATH) runs COMMAND"
else
    echo "FAIL $who: bare timeout 5 COMMAND: exit $rc: $(tr '\n' '|' <<<"$out" | head -c 400)"
fi

t0=$SECONDS
PATH=$bin:$PATH timeout -s INT 1 sleep 60 >"$bin/deadline.out" 2>&1
rc=$?
if [[ $rc == 124 ]] && ((SECONDS - t0 < 30)); then
    echo "PASS $who: timeout -s INT 1 sleep 60: 124 at its deadline"
else
    echo "FAIL $who: timeout -s INT 1 sleep 60: exit $rc after $((SECONDS - t0))s: $(tr '\n' '|' <"$bin/deadline.out" | head -c 400)"
fi

PATH=$bin:$PATH timeout 5 /nonexistent/command >/dev/null 2>"$bin/missing.err"
rc=$?
first=$(head -n 1 "$bin/missing.err")
if [[ $rc == 127 && $first == "timeout: failed to run command '/nonexistent/command'"* ]]; then
    echo "PASS $who: timeout 5 MISSING: 127, and its words name it timeout"
else
    echo "FAIL $who: timeout 5 MISSING: exit $rc: $(tr '\n' '|' <"$bin/missing.err" | head -c 400)"
fi

out=$("$TREEGUARD" timeout 5 sh -c 'echo ran' 2>&1)
rc=$?
if [[ $rc == 0 && $out == ran ]]; then
    echo "PASS $who: treeguard timeout 5 COMMAND runs COMMAND"
else
    echo "FAIL $who: treeguard timeout 5 COMMAND: exit $rc: $(tr '\n' '|' <<<"$out" | head -c 400)"
fi

# What COMMAND starts with: the same through the scope's re-execution as without treeguard.
state='umask; pwd; echo "env [$TG_STATE_PROBE]"; grep -E "^Sig(Ign|Blk)" /proc/self/status;
       echo "nice $(cut -d" " -f19 /proc/self/stat)"; echo "nofile $(ulimit -Sn) $(ulimit -Hn)"'
mkdir "$bin/cwd dir"
given() { # given CMD...: CMD with umask 027, a cwd with a space, INT and QUIT ignored, nice 3
    (cd "$bin/cwd dir" && umask 027 && trap '' INT QUIT && ulimit -Sn 200 &&
        TG_STATE_PROBE='a  b' exec nice -n 3 "$@")
}
direct=$(given sh -c "$state" 2>&1)
through=$(given "$TREEGUARD" run -- sh -c "$state" 2>&1)
if [[ $through == "$direct" ]]; then
    echo "PASS $who: COMMAND starts with the caller's umask, cwd, environment, signals, nice and limits (run)"
else
    echo "FAIL $who: run: COMMAND's start differs from the caller's: direct $(tr '\n' '|' <<<"$direct"), through treeguard $(tr '\n' '|' <<<"$through")"
fi
# timeout's grammar: its deadline signal (TERM) and ALRM start at their default, as coreutils has it
through=$(given "$bin/timeout" 30 sh -c "$state" 2>&1)
if [[ $through == "$direct" ]]; then
    echo "PASS $who: COMMAND starts with the caller's umask, cwd, environment, signals, nice and limits (timeout)"
else
    echo "FAIL $who: timeout: COMMAND's start differs from the caller's: direct $(tr '\n' '|' <<<"$direct"), through timeout $(tr '\n' '|' <<<"$through")"
fi
echo "# $who: COMMAND's start: $(tr '\n' '|' <<<"$direct")"
rm -rf "$bin"
CHECK
chmod 644 "$check"

relay() { # relay CONTEXT: the check's lines as this suite's, counted
    local line n=0
    while IFS= read -r line; do
        case $line in
            "PASS "*) pass "${line#PASS }"; n=$((n + 1)) ;;
            "FAIL "*) fail "${line#FAIL }" "(in $1)"; n=$((n + 1)) ;;
            *) echo "$line" ;;
        esac
    done < <(as "$1" bash "$check" 2>&1)
    # seven checks: fewer lines means the check script itself broke
    ((n == 7)) || fail "timeout_name in $1" "$n of 7 checks reported"
}
relay service
relay "session:$TG_VM_USER"
finish
