#!/usr/bin/env bash
# compare.sh TREEGUARD: treeguard invoked as `timeout` (a symlink) against the system's
# coreutils timeout, one argument list at a time: the same exit status and stdout, and the
# same stderr where timeout's words are promised (errors, -v). Each run of ours must leave
# nothing of COMMAND's behind. Exit 0 all agree, 1 any differ, 77 no GNU timeout to compare with.
#
# The table (one case a line):  FLAGS ARGS...   FLAGS: - exit status, stdout and stderr (timeout
# is silent there, or prints its own words: errors, -v); n = exit status only (--help, --version:
# the words are treeguard's own).
# -s STOP is refused by treeguard (coreutils' timeout stops itself with its group and hangs).
# 1e-10000 (124 since coreutils 9.2, "no deadline" in 9.1), " -1e-10000" (125 now, 0 in 9.1) and -v -s 0 ("0" now, "EXIT" in
# 9.1) are checked by the unit tests, not here. The short -f and -p are newer than coreutils 9.1 (this table's usual partner): the unit
# tests check them; here they are spelt long. FLAGS i: the caller ignores SIGPIPE; I: TERM and
# ALRM; J: INT and ALRM; r: see check().
# With TG_COMPARE_TABLE=FILE, the cases are also written to FILE as a markdown table.
#   compare.sh TREEGUARD [CASE... | --list]
# CASE runs only that case, named as PASS/FAIL print it ("timeout -k 1 2 sleep 5", or without the
# word timeout); a CASE the table has not is an error (exit 2) that lists the cases; --list lists
# them and runs none.
set -u
export LC_ALL=C
TREEGUARD=${1:-${TREEGUARD:-}}
# shellcheck source=../by_name.bash
source "$(dirname "${BASH_SOURCE[0]}")/../by_name.bash"
by_name_args "${@:2}"
[[ -n $TREEGUARD ]] && TREEGUARD=$(realpath -- "$TREEGUARD")
SYSTEM=${SYSTEM_TIMEOUT:-/usr/bin/timeout}
if [[ -z $TREEGUARD || ! -x $TREEGUARD ]]; then
    echo "usage: $0 TREEGUARD" >&2
    exit 2
fi
if [[ ! -x $SYSTEM ]] || ! "$SYSTEM" --version 2>/dev/null | grep -q 'GNU coreutils'; then
    echo "SKIP timeout.compare: no GNU coreutils timeout at $SYSTEM to compare with"
    exit 77
fi

W=$(mktemp -d "${TMPDIR:-/tmp}/tg-timeout-compare.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/ours" "$W/theirs" "$W/state"
ln -s "$TREEGUARD" "$W/ours/timeout"
ln -s "$SYSTEM" "$W/theirs/timeout"
export TREEGUARD_STATE_DIR=$W/state
cd "$W" || exit 2  # COMMAND's core files, if any, go with the work directory
# every process a case starts carries this token, so what is left can be found
TOKEN=tg-timeout-compare-$$-$RANDOM

PASSED=0
FAILED=0
TABLE=${TG_COMPARE_TABLE:-}
if [[ -n $TABLE ]]; then
    {
        echo "| # | timeout ARGS | timeout's exit | treeguard's exit | stdout | stderr | verdict |"
        echo "|---|---|---|---|---|---|---|"
    } >"$TABLE"
fi

# table_row NAME THEIR_RC OUR_RC STDOUT STDERR VERDICT: one line of TG_COMPARE_TABLE (if set)
table_row() {
    [[ -z $TABLE ]] && return 0
    local name=${1//|/\\|}
    printf '| %d | `%s` | %s | %s | %s | %s | %s |\n' "$((PASSED + FAILED))" "$name" "$2" "$3" "$4" \
        "$5" "${6//|/\\|}" >>"$TABLE"
}

# run_as DIR ARGS...: `timeout ARGS` with argv[0] "timeout", from DIR/timeout
# (the caller ignores the signals named in CALLER_IGNORES, as `trap '' PIPE` makes it)
CALLER_IGNORES=
run_as() {
    local dir=$1
    shift
    (
        # shellcheck disable=SC2086 # a list of signal names
        [[ -n $CALLER_IGNORES ]] && trap '' $CALLER_IGNORES
        PATH=$dir:$PATH TG_TOKEN=$TOKEN exec -a timeout "$dir/timeout" "$@"
    ) >"$W/out" 2>"$W/err" </dev/null
}

# left_over: pids of live processes carrying the token (not this script's)
left_over() {
    local environ pid
    for environ in $(grep -lsxzF "TG_TOKEN=$TOKEN" /proc/[0-9]*/environ); do
        pid=${environ#/proc/}
        pid=${pid%/environ}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
        # a zombie awaiting its reaper is gone already
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] || echo "$pid"
    done
}

# wait (bounded) until nothing carrying the token is alive; kill what coreutils' timeout
# left (its children are not its concern); report what treeguard left.
settle() {
    local who=$1 tries left
    for ((tries = 0; tries < 100; tries++)); do
        left=$(left_over)
        [[ -z $left ]] && return 0
        read -r -t 0.05 <> <(:) || true
    done
    if [[ $who == ours ]]; then
        echo "  left behind by treeguard: $left"
        # shellcheck disable=SC2086 # pids: ours to clean up
        kill -KILL $left 2>/dev/null
        return 1
    fi
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null
    return 0
}

check() {
    local flags=$1
    shift
    CALLER_IGNORES=
    [[ $flags == *i* ]] && CALLER_IGNORES+=" PIPE"
    [[ $flags == *I* ]] && CALLER_IGNORES+=" TERM ALRM"
    [[ $flags == *J* ]] && CALLER_IGNORES+=" INT ALRM"
    local name
    name=$(printf '%q ' "$@")
    name=${name% }
    by_name "$name" "timeout $name" || return 0
    run_as "$W/theirs" "$@"
    local their_rc=$?
    local their_out their_err
    their_out=$(cat "$W/out")
    their_err=$(cat "$W/err")
    settle theirs
    run_as "$W/ours" "$@"
    local our_rc=$?
    local our_out our_err
    our_out=$(cat "$W/out")
    our_err=$(cat "$W/err")
    local why=""
    settle ours || why+=" survivors;"
    local raced=""
    # FLAGS r: timeout's status races (its own signal to its group against its child's end); ours
    # must be the status timeout means, 124
    if [[ $flags == *r* && $our_rc == 124 && $their_rc != 124 ]]; then
        raced=" (timeout gave $their_rc by a race of its own; 124 when it wins)"
    else
        ((our_rc == their_rc)) || why+=" exit $our_rc, timeout's $their_rc;"
    fi
    local out_same="not compared" err_same="not compared (the words are treeguard's)"
    if [[ $flags != *n* ]]; then
        out_same=same err_same=same
        [[ -z $their_err ]] && err_same="same (both silent)"
        [[ $our_out == "$their_out" ]] || { why+=" stdout '$our_out', timeout's '$their_out';"; out_same=differs; }
        [[ $our_err == "$their_err" ]] || { why+=" stderr '$our_err', timeout's '$their_err';"; err_same=differs; }
    fi
    if [[ -z $why ]]; then
        PASSED=$((PASSED + 1))
        echo "PASS timeout $name -> $our_rc$raced"
        local verdict=identical
        [[ -n $raced ]] && verdict="stdout and stderr identical; exit status 124 as timeout means it$raced"
        [[ $flags == *n* ]] && verdict="identical exit status; the text is treeguard's (a stated difference)"
        table_row "$name" "$their_rc" "$our_rc" "$out_same" "$err_same" "$verdict"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL timeout $name:$why"
        table_row "$name" "$their_rc" "$our_rc" "$out_same" "$err_same" "FAIL:$why"
    fi
}

# -- exit statuses of COMMAND, passed through
check - 1 true
check - 1 false
check - 1 sh -c 'exit 3'
check - 0 sh -c 'exit 7'
check - 1 sh -c 'echo out; echo err >&2; exit 4'
check - 5 sh -c 'kill -USR1 $$'
check - -- 1 echo a b
check - 1 echo -- -s x
check - --foreground 1 sh -c 'echo fg'
check - --fore --pres -v 1 sh -c 'exit 4'
# -- durations: floating point, hex, exponents, suffixes, 0, inf, huge, underflow
check - 10.34 true
check - 9.999999999 true
check - 0x10 true
check - 1e3 true
check - inf true
check - infinity sh -c 'echo hi'
check - 1e999 true
check - 99999999999999999999d true
check - 2.34e+5d true
check - 0.2 sleep 5
check - 0.2s sleep 5
check - 0.003m sleep 5
check - 0x0.4p0 sleep 5
check - 2e-1 sleep 5
check - 0.2 sh -c 'echo out; sleep 5'
check - 0.2 sh -c 'sleep 5 & exec sleep 6'
# -- signals, --preserve-status, -k, and 137 whenever KILL was sent
check - -s KILL 0.2 sleep 5
check - -s 9 0.2 sleep 5
check - -s sigkill --preserve-status 0.2 sleep 5
# COMMAND's traps are set before the deadline comes: it says so by sending ALRM, "the deadline,
# now", to its parent (a 0.2 s deadline raced the shell's start on a loaded machine)
check - -k 0.2 5 sh -c 'trap "" TERM; kill -ALRM $PPID; sleep 5'
check - --kill-after=0.2 -s INT 5 sh -c 'trap "" INT; kill -ALRM $PPID; sleep 5'
check - -s 0 -k 0.3 0.2 sleep 5
check - --preserve-status 0.2 sleep 5
check - --preserve-status 0.2 sh -c 'trap "exit 5" TERM; sleep 5 & wait'
check - 0.2 sh -c 'trap "exit 5" TERM; sleep 5 & wait'
check - -s INT 0.2 sleep 5
check - -s HUP --preserve-status 0.2 sleep 5
check - -s RTMIN+1 --preserve-status 0.2 sleep 5
check - -s 64 0.2 sleep 5
check - -s 143 --preserve-status 0.2 sleep 5
check - -s 0 0.2 sleep 1
# 137 only when COMMAND died of the KILL: a COMMAND that exits with status 9 on the deadline's TERM
# is 124 (9 is not SIGKILL), whether leftovers were forced or not; one that dies of a KILL of its own
# after the deadline is 137, though nobody forced it
check - 0.2 sh -c 'trap "exit 9" TERM; sleep 5 & wait'
check - -k 0.3 5 sh -c 'trap "" TERM; sleep 5 & trap "exit 9" TERM; kill -ALRM $PPID; wait'
check - 0.2 sh -c 'trap "" TERM; sleep 5 & trap "exit 9" TERM; wait'
check - -s 0 0.2 sh -c 'sleep 0.5; kill -KILL $$'
# -- never for ever: COMMAND exits 3 before the deadline (or with none), leaving a process that
# ignores TERM. timeout returns 3 at once; treeguard returns 3 too, once its bounded grace for
# leftovers (no -k) has ended and the leftover is killed
check - 2 sh -c 'trap "" TERM; sleep 8206 & exit 3'
check - 0 sh -c 'trap "" TERM; sleep 8206 & exit 3'
# with -v treeguard adds its line saying what COMMAND left behind (a stated difference): exit status only
check n -v 2 sh -c 'trap "" TERM; sleep 8206 & exit 3'
# -- -v in timeout's words; silence without it
check - -v 0.2 sleep 5
check - -v -s KILL 0.2 sleep 5
check - -v -k 0.2 5 sh -c 'trap "" TERM; kill -ALRM $PPID; sleep 5'
check - -v -s RTMIN+2 0.2 sleep 5
check - -v 1 true
# -- failures: 125 (ours), 126, 127, in timeout's words
check - 1 no_such_command_tg
check - 1 /
check -
check - 5
check - invalid sleep 0
check - ' -0.1' sleep 0
check - --kill-after=invalid 1 sleep 0
check - 42D sleep 0
check - 1h30m true
check - --signal=invalid 1 sleep 0
check - -s 65 1 true
check - -x 1 true
check - --xyz=1 1 true
check - --v 1 true
check - --fore=1 1 true
check - -k
check - --kill-after
check - -- -1 true
# -- help and version: status only (the words are treeguard's)
# Inherited dispositions: a caller's ignored SIGPIPE stays ignored in COMMAND (yes gets EPIPE and
# says "Broken pipe", where a default SIGPIPE kills it silently); SIGALRM is "the deadline now".
check i 5 sh -c 'yes | head -n 1 >/dev/null; echo done'
# (not with -s INT: coreutils' timeout also sends the INT to its own group, itself included, and
# then ends 124 or 130 by a race of its own)
check r 5 sh -c 'kill -ALRM $PPID; sleep 3'
# timeout handles its deadline signal and ALRM itself, so COMMAND starts with them at their default
# even when the caller ignores them (a script's background job ignores INT): the deadline's INT ends
# COMMAND; every other ignore reaches it.
check I 5 grep SigIgn /proc/self/status
check J -s INT 5 grep SigIgn /proc/self/status
check J -s INT 0.2 sh -c 'sleep 2; echo finished'
# A signal that stops (TSTP) is followed by CONT, so the tree runs on and ends by itself.
check - -s TSTP -k 2 0.2 sleep 1
# COMMAND dies of a signal that dumps core: "timeout: the monitored command dumped core" (where the
# machine lets it dump one: a core file in the work directory, or none and no line from either)
check - 5 sh -c 'ulimit -c unlimited; kill -SEGV $$'
check n --help
check n --version

# -- run, not timeout: a first word that is not found but reads as a duration is still 127 with
# nothing run, and its one error line names both command lines meant
if by_name "treeguard run 10 touch FILE"; then
    TG_TOKEN=$TOKEN "$TREEGUARD" run 10 touch "$W/ran" >"$W/out" 2>"$W/err" </dev/null
    rc=$?
    settle ours || rc=survivors
    if [[ $rc == 127 && $(wc -l <"$W/err") == 1 && ! -e $W/ran ]] \
        && grep -qF "treeguard run -t 10 touch $W/ran, or treeguard timeout 10 touch $W/ran" "$W/err"; then
        PASSED=$((PASSED + 1))
        echo "PASS treeguard run 10 touch FILE -> 127, one line naming -t 10 and timeout 10"
        table_row "(treeguard run, not timeout) 10 touch FILE" "-" "$rc" "-" "one line naming both" \
            "127, nothing run"
    else
        FAILED=$((FAILED + 1))
        echo "FAIL treeguard run 10 touch FILE: exit $rc, stderr '$(cat "$W/err")'"
        table_row "(treeguard run, not timeout) 10 touch FILE" "-" "$rc" "-" "-" "FAIL"
    fi
fi

by_name_done compare case

echo "$PASSED passed, $FAILED failed"
((FAILED == 0))
