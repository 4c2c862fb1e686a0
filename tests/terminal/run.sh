#!/usr/bin/env bash
# Interactive use (DESIGN.md [signals]), in a real terminal: tmux runs an interactive bash, keys are
# typed with send-keys and the screen is read with capture-pane. Every wait is a bounded poll on
# what COMMAND prints or writes (never on text the test typed, which the screen echoes too).
#   tests/terminal/run.sh TREEGUARD TG_FIXTURE BOUNDARY [SCENARIO... | --list]
#                           (BOUNDARY: cgroup | process-group | pid-namespace, as uid 65534)
# The checks come in scenarios, each one bash function (named below, at "the scenarios of this
# arm"). SCENARIO runs only that one, and then the last check (the terminal's settings as found); a
# SCENARIO this arm has not is an error (exit 2) that lists them; --list lists them and runs none.
set -u
TG=${1:?treeguard binary}
FIXTURE=${2:?tg_fixture binary}
BOUNDARY=${3:?boundary}
# shellcheck source=../by_name.bash
source "$(dirname "${BASH_SOURCE[0]}")/../by_name.bash"
by_name_args "${@:4}"
skip() { echo "SKIP: $*"; echo "0 passed, 0 failed"; exit 77; }
command -v tmux >/dev/null || skip "tmux is not installed"
# shellcheck source=../integration/pty_probe.bash
source "$(dirname "${BASH_SOURCE[0]}")/../integration/pty_probe.bash"
can_open_pty || skip "$PTY_WHY"
if [[ $BOUNDARY == cgroup ]]; then
    # the same preconditions as the integration harness's cgroup arm
    [[ $(id -u) == 0 ]] || skip "the cgroup arm needs root"
    mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
    [[ -n $mount ]] || skip "no cgroup2 mount in /proc/self/mountinfo"
    [[ -w $mount && -f $mount/cgroup.procs ]] || skip "cgroup2 mount $mount is not writable"
fi
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [[ $BOUNDARY == pid-namespace ]]; then
    [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null || skip "the pid-namespace arm needs root and setpriv (it runs treeguard as uid 65534)"
    "${nobody[@]}" test -x "$TG" -a -x "$FIXTURE" || skip "$TG or $FIXTURE is not reachable by uid 65534"
    why=$("${nobody[@]}" "$TG" probe 2>&1 | grep '^user+pid namespace ')
    [[ $why == *"  yes  "* ]] || skip "uid 65534 cannot form a user+pid namespace here: ${why:-no probe line}"
fi

work=$(mktemp -d /tmp/tg-term.XXXXXX)
chmod 700 "$work"
session=tg-term-$$
# A tmux server of this test's own (its socket in $work): another run of this test on the machine
# (another pid namespace, where $$ and so the session's name can be the same) never types into
# this one's terminal, nor this one into a user's own tmux.
tmux() { command tmux -S "$work/tmux.sock" "$@"; }
cgparent=""
args=(--boundary "$BOUNDARY" --state-dir "$work/state")
if [[ $BOUNDARY == cgroup ]]; then
    # named for this run's work directory: $$ is 1 in every run inside a fresh pid namespace
    cgparent=$mount/${work##*/}
    mkdir "$cgparent" || skip "cannot create $cgparent"
    args+=(--cgroup-parent "$cgparent")
fi
passed=0
failed=0
# stat_of PID: STAT = the fields of /proc/PID/stat after "(comm)", read whole: STAT[0] the state,
# [1] ppid, [2] pgrp, [3] session, [5] tpgid (the terminal's foreground group), [19] start time;
# status 1 when it cannot be read
stat_of() {
    local line
    line=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    read -r -a STAT <<<"${line##*) }"
}
# alive PID START: the process exists with this start time and is not a zombie
alive() { stat_of "$1" && [[ ${STAT[19]} == "$2" && ${STAT[0]} != Z ]]; }
cleanup() {
    tmux kill-server 2>/dev/null
    # Only what this test started: every pid (with its start time) its fixtures wrote.
    local f a b rest
    for f in "$work"/*.pids; do
        [[ -f $f ]] || continue
        while read -r a b rest; do
            [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] && alive "$a" "$b" && kill -9 "$a"
        done <"$f"
    done
    [[ -n $cgparent ]] && rmdir "$cgparent"/* "$cgparent" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# A fifo held open read-write never delivers and never ends: read -t on it is the poll interval.
mkfifo "$work/poll"
exec {poll_fd}<>"$work/poll"
screen() { tmux capture-pane -t "$session" -p; }
# poll SECONDS COMMAND...: until COMMAND succeeds, at most SECONDS
poll() {
    local deadline=$((SECONDS + $1))
    shift
    while ((SECONDS < deadline)); do
        "$@" && return 0
        read -r -t 0.05 -u "$poll_fd" || true
    done
    "$@"
}
on_screen() { screen | grep -qF -- "$1"; }
wait_screen() { poll 10 on_screen "$1"; }
has_line() { grep -qx -- "$2" "$1" 2>/dev/null; }
count_lines() { grep -c -- "$2" "$1" 2>/dev/null; }
check() { # check NAME CONDITION...
    local name=$1; shift
    if "$@"; then echo "PASS $BOUNDARY: $name"; passed=$((passed + 1))
    else echo "FAIL $BOUNDARY: $name"; screen | sed 's/^/  | /'; failed=$((failed + 1)); fi
}
type_line() { tmux send-keys -t "$session" "$1" Enter; }
# scenario NAME FUNCTION: run FUNCTION's checks, unless only other scenarios were asked for
scenario() { by_name "$1" && "$2"; }
# shell_gave_terminal: the shell (the pane's bash) no longer holds the terminal's foreground: after
# `fg` it has undone readline's settings and handed the terminal to the job. A line typed before
# that is queued under readline's raw mode (no echo; Enter stays \r, which never ends the job's
# read): type a job's input only once this holds.
shell_gave_terminal() { stat_of "$shell_pid" && [[ ${STAT[5]} != "${STAT[2]}" ]]; }
# nothing_left PIDFILE: no process the fixture recorded is alive (all of COMMAND's tree)
nothing_left() {
    local a b rest
    while read -r a b rest; do
        [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] || continue
        alive "$a" "$b" && return 1
    done <"$1"
    return 0
}
# note_treeguard PIDFILE: TG_PID/TG_START = COMMAND's parent, the job's treeguard
note_treeguard() {
    local main
    read -r main _ <"$1"
    stat_of "$main" || return 1
    TG_PID=${STAT[1]}
    stat_of "$TG_PID" || return 1
    TG_START=${STAT[19]}
}
treeguard_gone() { ! alive "$TG_PID" "$TG_START"; }

tmux new-session -d -s "$session" -x 200 -y 50 "env PS1='tg\$ ' bash --norc --noprofile -i"
shell_pid=$(tmux display -p -t "$session" '#{pane_pid}')
poll 10 on_screen 'tg$' || { echo "FAIL: no shell prompt"; echo "0 passed, 1 failed"; exit 1; }
# The terminal's settings as found; compared at the end.
type_line "stty -a > $work/stty.before"
poll 10 test -s "$work/stty.before"

if [[ $BOUNDARY == pid-namespace ]]; then
    # COMMAND runs as uid 65534 in its own pid namespace, so its pid file names pids of that
    # namespace: treeguard is found as the shell's child, and COMMAND's tree by treeguard's end
    # (the kernel kills the namespace with its init).
    chmod 711 "$work"
    mkdir -m 700 "$work/state-nobody" && chown 65534:65534 "$work/state-nobody"
    args=(--boundary pid-namespace --state-dir "$work/state-nobody")
    # the_treeguard: TG_PID/TG_START = the shell's child (the job's treeguard)
    the_treeguard() {
        local child=""
        read -r child _ <"/proc/$shell_pid/task/$shell_pid/children" # (no newline at its end)
        [[ -n $child ]] || return 1
        stat_of "$child" || return 1
        TG_PID=$child TG_START=${STAT[19]}
    }
fi

# The pid-namespace arm: COMMAND handles Ctrl-C in the namespace, or dies of it.
ns_ctrl_c_handled() {
    pids=$work/repl.pids
    : >"$pids" && chown 65534:65534 "$pids"
    type_line "TG_PIDFILE=$pids ${nobody[*]} $TG run ${args[*]} -- $FIXTURE --catch-signals --release $work/release --release-exit 7 sleep"
    if poll 10 has_line "$pids" ready && poll 5 the_treeguard; then
        tmux send-keys -t "$session" C-c
        check "Ctrl-C reaches COMMAND in the namespace, which handles it" poll 10 eval 'grep -q "^caught 2 " "$pids"'
        check "Ctrl-C: treeguard keeps running" eval '! treeguard_gone'
        tmux send-keys -t "$session" C-c
        check "a second Ctrl-C reaches COMMAND too" poll 10 eval '(($(count_lines "$pids" "^caught 2 ") == 2))'
        : >"$work/release"
        type_line 'echo "repl=$?"'
        check "COMMAND's own exit (7) is the job's" wait_screen "repl=7"
        check "COMMAND got each INT once (not again from the init or treeguard)" eval '[[ $(count_lines "$pids" "^caught 2 ") == 2 ]]'
        check "treeguard is gone" poll 10 treeguard_gone
    else
        check "the handler's COMMAND started" false
    fi
}

ns_ctrl_c() {
    pids=$work/plain.pids
    : >"$pids" && chown 65534:65534 "$pids"
    type_line "clear; TG_PIDFILE=$pids ${nobody[*]} $TG run ${args[*]} -- $FIXTURE grandchild"
    if poll 10 has_line "$pids" ready && poll 5 the_treeguard; then
        tmux send-keys -t "$session" C-c
        type_line 'echo "rc=$?"'
        check "Ctrl-C to a COMMAND that does not handle it: exit 130" wait_screen "rc=130"
        check "treeguard is gone" poll 10 treeguard_gone
    else
        check "the plain COMMAND started" false
    fi
}

# 1. COMMAND reads the terminal. (The reply is computed, so the typed line cannot match it.)
reads_the_terminal() {
    type_line "$TG run ${args[*]} -- bash -c 'read x; echo \"got:\$x:\$((6*7))\"'"
    type_line "hello"
    check "COMMAND reads the terminal" wait_screen "got:hello:42"
}

# 2. Ctrl-Z stops the job as without treeguard ("Stopped", $? 148); fg continues COMMAND with one
#    CONT; Ctrl-C then ends it (130) and nothing of its tree is left.
ctrl_z_and_fg() {
    pids=$work/job.pids
    type_line "TG_PIDFILE=$pids $TG run ${args[*]} --report $work/job.json -- $FIXTURE --log-cont grandchild"
    if poll 10 has_line "$pids" ready && note_treeguard "$pids"; then
        tmux send-keys -t "$session" C-z
        check "Ctrl-Z: the shell sees the job Stopped" wait_screen "Stopped"
        type_line 'echo "z=$?"'
        check "Ctrl-Z: \$? is 148 (SIGTSTP), as without treeguard" wait_screen "z=148"
        type_line "fg"
        check "fg: COMMAND continues" poll 10 has_line "$pids" "cont $(head -1 "$pids" | cut -d' ' -f1)"
        # Ctrl-C now; its own CONT handler has run by the time COMMAND dies of INT, and treeguard
        # would have forwarded a second CONT before it reads the INT.
        tmux send-keys -t "$session" C-c
        type_line 'echo "rc=$?"'
        check "Ctrl-C after fg: exit 130" wait_screen "rc=130"
        # Two CONTs close together may reach COMMAND as one (a pending signal is not queued twice), so
        # the report's timeline says whether treeguard sent a second.
        check "fg: COMMAND got CONT once (the shell's; treeguard forwarded none)" \
            eval '[[ $(count_lines "$pids" "^cont ") == 1 ]] &&
                  [[ $(jq "[.timeline[] | select(.event | test(\"forwarded CONT\"))] | length" "$work/job.json") == 0 ]]'
        check "nothing of COMMAND's tree survived, treeguard included" \
            poll 10 eval 'nothing_left "$pids" && treeguard_gone'
    else
        check "the job's COMMAND started" false
    fi
}

# 3. A COMMAND that handles Ctrl-C keeps running (the terminal's INT is not followed by TERM), also
#    after a second Ctrl-C, and its own exit status is the job's.
ctrl_c_handled() {
    pids=$work/repl.pids
    type_line "TG_PIDFILE=$pids $TG run ${args[*]} -- $FIXTURE --catch-signals --release $work/release --release-exit 7 sleep"
    if poll 10 has_line "$pids" ready && note_treeguard "$pids"; then
        tmux send-keys -t "$session" C-c
        check "Ctrl-C reaches COMMAND, which handles it" poll 10 eval 'grep -q "^caught 2 " "$pids"'
        check "Ctrl-C: COMMAND and treeguard keep running" eval '! nothing_left "$pids" && ! treeguard_gone'
        # again, as a user at a REPL does: still COMMAND's to handle, not a stop request
        tmux send-keys -t "$session" C-c
        check "a second Ctrl-C reaches COMMAND too" poll 10 eval '(($(count_lines "$pids" "^caught 2 ") == 2))'
        check "after the second Ctrl-C COMMAND and treeguard keep running" \
            eval '! nothing_left "$pids" && ! treeguard_gone'
        : >"$work/release"
        type_line 'echo "repl=$?"'
        check "COMMAND's own exit (7) is the job's" wait_screen "repl=7"
        check "COMMAND got each INT once" eval '[[ $(count_lines "$pids" "^caught 2 ") == 2 ]]'
        check "nothing survived" poll 10 eval 'nothing_left "$pids" && treeguard_gone'
    else
        check "the handler's COMMAND started" false
    fi
}

# 4. Job control from the background, as without treeguard (DESIGN.md [signals]): a job
#    started with & that reads the terminal (python3 -q) or sets it raw (vim) stops by TTIN / TTOU,
#    treeguard with it (the shell says "Stopped"), fg gives COMMAND the terminal, and Ctrl-Z, bg, a read in the background
#    and fg again keep working. The reader logs its pid and start time, "ready", then reads a line
#    (with "raw": echo off around the read, a tcsetattr) and prints a reply computed from it.
background_jobs() {
    cat >"$work/reader.sh" <<'READER'
log=$1
read -r -a f < <(sed 's/.*) //' /proc/$$/stat)
echo "$$ ${f[19]}" >>"$log"
echo ready >>"$log"
[[ $2 == raw ]] && stty -echo
read -r line
[[ $2 == raw ]] && stty echo
echo "read:$line:$((6 * 7))"
READER
    state_of() { stat_of "$1" && echo "${STAT[0]}"; }
    treeguard_stopped() { [[ $(state_of "$TG_PID") == T ]]; }
    job_stopped() { # the shell's `jobs` says STATE (cleared screen first, so only its answer counts)
        local tries
        for tries in 1 2 3 4 5 6 7 8 9 10; do
            type_line "clear; jobs"
            poll 1 on_screen "$1" && return 0
        done
        return 1
    }
    # background_reader NAME MODE: start it with &, see it stop (as without treeguard: bash says "Stopped"),
    # fg it, answer it
    background_reader() {
        local name=$1 mode=$2 reply
        pids=$work/$name.pids
        reply="$name$RANDOM"
        # A background stty reads the settings before its tcsetattr stops it, and sets them when
        # continued: had readline's raw mode (the prompt's) been in force then, the reply's Enter would
        # not end the read, with or without treeguard. Line editing stays off while it runs.
        [[ $mode == raw ]] && type_line "set +o emacs"
        type_line "clear; $TG run ${args[*]} -- bash $work/reader.sh $pids $mode &"
        if poll 10 has_line "$pids" ready && note_treeguard "$pids"; then
            check "$name: started with &, the job stops at its $mode read (treeguard stopped too)" \
                poll 10 treeguard_stopped
            check "$name: the shell sees it Stopped" job_stopped Stopped
            type_line "fg"
            poll 10 shell_gave_terminal
            type_line "$reply"
            check "$name: fg gives COMMAND the terminal; it reads the line" \
                wait_screen "read:$reply:42"
            type_line 'echo "fg=$?"'
            check "$name: COMMAND's exit (0) is the job's" wait_screen "fg=0"
            check "$name: nothing survived" poll 10 eval 'nothing_left "$pids" && treeguard_gone'
            [[ $mode == raw ]] && type_line "set -o emacs"
        else
            check "$name: COMMAND started" false
        fi
    }
    background_reader reader plain
    background_reader raw raw

    # Started in the foreground: Ctrl-Z while it reads, bg (its read in the background stops it by
    # TTIN), fg, and the line is read.
    pids=$work/zbg.pids
    type_line "clear; $TG run ${args[*]} -- bash $work/reader.sh $pids plain"
    if poll 10 has_line "$pids" ready && note_treeguard "$pids"; then
        tmux send-keys -t "$session" C-z
        check "Ctrl-Z while it reads: the job is Stopped" poll 10 treeguard_stopped
        type_line "clear; bg"
        check "bg, then its read in the background (TTIN): Stopped" \
            job_stopped Stopped
        type_line "fg"
        poll 10 shell_gave_terminal
        type_line "again42"
        check "fg after bg: COMMAND reads the line" wait_screen "read:again42:42"
        check "Ctrl-Z/bg/fg: nothing survived" poll 10 eval 'nothing_left "$pids" && treeguard_gone'
    else
        check "the Ctrl-Z/bg COMMAND started" false
    fi
}

# 5. `treeguard timeout --foreground` (DESIGN.md [timeout]): COMMAND is the terminal's foreground
#    group (it reads a line typed there; the terminal's group, tcgetpgrp, is COMMAND's own group),
#    and unlike coreutils' timeout --foreground, what COMMAND started is taken down with it. COMMAND
#    is fg.sh: it logs its pid and start time and "group G terminal T session S" (its process group
#    and the terminal's foreground group, fields 5 and 8 of /proc/PID/stat), has the fixture
#    leave a double-forked daemon in a session of its own (the escapee timeout would leave
#    running), reads a line and replies with a value computed from it, then becomes the fixture
#    with the rest of its arguments. Had COMMAND a group of its own without the terminal, its read
#    would stop it (TTIN) and the groups differ.
timeout_foreground() {
    cat >"$work/fg.sh" <<'FG'
export TG_PIDFILE=$1
read -r -a f < <(sed 's/.*) //' /proc/$$/stat)
echo "$$ ${f[19]}" >>"$1"
echo "group ${f[2]} terminal ${f[5]} session ${f[3]}" >>"$1"
"$2" --then exit 0 daemon || exit 3
echo reading >>"$1"
read -r line
echo "fgread:$line:$((6 * 7))"
exec "${@:2}"
FG
    tgenv="TREEGUARD_BOUNDARY=$BOUNDARY TREEGUARD_STATE_DIR=$work/state"
    [[ -n $cgparent ]] && tgenv+=" TREEGUARD_CGROUP_PARENT=$cgparent"
    session_of() { stat_of "$1" && echo "${STAT[3]}"; }
    # escapee_alive PIDFILE: a process COMMAND's tree recorded is alive in a session not COMMAND's
    escapee_alive() {
        local a b rest main sid
        read -r main _ <"$1"
        sid=$(session_of "$main") || return 1
        while read -r a b rest; do
            [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] || continue
            alive "$a" "$b" && [[ $(session_of "$a") != "$sid" ]] && return 0
        done <"$1"
        return 1
    }
    terminal_is_commands() { grep -qE '^group ([0-9]+) terminal \1 session [0-9]+$' "$1"; }
    # foreground_reader NAME DEADLINE FIXTURE-ARGS...: start it under timeout --foreground, check
    # that it is the terminal's foreground and has its escapee, and answer its read
    foreground_reader() {
        local name=$1 deadline=$2 reply
        shift 2
        pids=$work/$name.pids
        reply="$name$RANDOM"
        type_line "clear; $tgenv $TG timeout --foreground $deadline bash $work/fg.sh $pids $FIXTURE $*"
        if poll 10 has_line "$pids" reading && note_treeguard "$pids"; then
            check "$name: the terminal's foreground group (tcgetpgrp) is COMMAND's" terminal_is_commands "$pids"
            check "$name: COMMAND's daemon runs in a session of its own" escapee_alive "$pids"
            type_line "$reply"
            check "$name: COMMAND reads the line typed at the terminal" wait_screen "fgread:$reply:42"
            return 0
        fi
        check "$name: COMMAND started" false
        return 1
    }
    # The deadline passes while COMMAND sleeps: 124, and the daemon is gone too. (The deadline leaves
    # room for the read on a loaded machine; the wait for it, a margin beyond.)
    fg_deadline=10
    if foreground_reader fgdeadline $fg_deadline sleep; then
        type_line 'echo "fgdeadline=$?"'
        check "fgdeadline: the deadline passes, exit 124" poll $((fg_deadline + 20)) on_screen "fgdeadline=124"
        check "fgdeadline: nothing survived, the daemon and treeguard included" \
            poll 10 eval 'nothing_left "$pids" && treeguard_gone'
    fi
    # Ctrl-C, as without treeguard: COMMAND gets INT once and dies of it (130); the daemon goes too.
    if foreground_reader fgint 60 --log-signals sleep; then
        tmux send-keys -t "$session" C-c
        type_line 'echo "fgint=$?"'
        check "fgint: Ctrl-C, exit 130" wait_screen "fgint=130"
        check "fgint: COMMAND got INT once" eval '[[ $(count_lines "$pids" "^sig 2 ") == 1 ]]'
        check "fgint: nothing survived, the daemon and treeguard included" \
            poll 10 eval 'nothing_left "$pids" && treeguard_gone'
    fi
}

# The scenarios of this arm, in order.
if [[ $BOUNDARY == pid-namespace ]]; then
    scenario "Ctrl-C to a COMMAND in the namespace that handles it" ns_ctrl_c_handled
    scenario "Ctrl-C to a COMMAND in the namespace that does not handle it" ns_ctrl_c
else
    scenario "COMMAND reads the terminal" reads_the_terminal
    scenario "Ctrl-Z, fg, Ctrl-C" ctrl_z_and_fg
    scenario "a COMMAND that handles Ctrl-C" ctrl_c_handled
    scenario "job control from the background" background_jobs
    scenario "timeout --foreground" timeout_foreground
fi
by_name_done run.sh scenario "under $BOUNDARY"

# 6. The terminal is left as it was found.
type_line "stty -a > $work/stty.after"
poll 10 test -s "$work/stty.after"
check "the terminal's settings are as found (stty -a)" cmp -s "$work/stty.before" "$work/stty.after"

echo "$passed passed, $failed failed"
((failed == 0))
