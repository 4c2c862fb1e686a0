# Shared helpers for the evidence suites (tests/integration/suites/evidence_*.bash), sourced by them
# after the harness (tests/integration/run) has set up: it uses the harness's TEST, wait_for,
# alive_as, tg_start/tg_wait, kill_survivors, cg_remove, ...
#
# Environment (besides the harness's): TG_FSYNC_EIO = path of the tg_fsync_eio LD_PRELOAD shim
# (default build/tests/fault/tg_fsync_eio.so); TREEGUARD_DYNAMIC = treeguard linked dynamically,
# which the shim can reach (default build/treeguard_dynamic).

EV_DIR=$(cd "$HERE/../evidence" && pwd)
EV_TREE=$EV_DIR/tree.sh
TG_FSYNC_EIO=${TG_FSYNC_EIO:-$HERE/../../build/tests/fault/tg_fsync_eio.so}
# treeguard linked dynamically, for what is injected by LD_PRELOAD (the release binary is static)
TREEGUARD_DYNAMIC=${TREEGUARD_DYNAMIC:-$HERE/../../build/treeguard_dynamic}
command -v jq >/dev/null || skip_suite "jq not installed (the suites read records and reports with it)"

# ---------------------------------------------------------------- mounts made by a test
EV_MOUNTS=()
ev_umount() { # ev_umount DIR: undo a mount this suite made (made writable again first)
    local dir=$1 n
    for n in 1 2 3; do
        mountpoint -q "$dir" || return 0
        umount "$dir" 2>/dev/null || umount -l "$dir" 2>/dev/null ||
            { echo "evidence: could not unmount $dir" >&2; return 1; }
    done
}
# loop devices a test attached (losetup), detached by ev_cleanup
EV_LOOPS=()
ev_cleanup() {
    local d
    for d in "${EV_MOUNTS[@]}"; do ev_umount "$d"; done
    EV_MOUNTS=()
    for d in "${EV_LOOPS[@]}"; do losetup -d "$d" 2>/dev/null; done
    EV_LOOPS=()
}
trap 'ev_cleanup; cleanup_all' EXIT

# ---------------------------------------------------------------- real faults in the state directory
# (the write-ahead authority's failures: EROFS by a read-only bind mount, ENOSPC by a full tmpfs,
# EIO by the fsync shim, eio-dir: EIO from the shim on the directory's fsync only, after the
# record's rename); the mounts are on the test's own directories, undone by ev_cleanup
# fault_setup FAULT: make the state directory for FAULT (STATE), before the run
fault_setup() {
    FAULT_DIR=""
    case $1 in
        erofs)
            FAULT_DIR=$T/ro-state
            mkdir -m 700 "$FAULT_DIR"
            mount --bind "$FAULT_DIR" "$FAULT_DIR" || { fail "mount --bind failed"; return 1; }
            EV_MOUNTS+=("$FAULT_DIR")
            STATE=$FAULT_DIR
            ;;
        enospc)
            FAULT_DIR=$T/tiny
            mkdir -m 700 "$FAULT_DIR"
            mount -t tmpfs -o size=64k,mode=0700 tg-evidence "$FAULT_DIR" || { fail "mount tmpfs failed"; return 1; }
            EV_MOUNTS+=("$FAULT_DIR")
            STATE=$FAULT_DIR/state
            mkdir -m 700 "$STATE"
            ;;
        eio | eio-dir)
            [[ -f $TG_FSYNC_EIO ]] || { fail "the fsync shim $TG_FSYNC_EIO is not built"; return 1; }
            ;;
    esac
}
# fault_inject FAULT: the state directory starts failing now
fault_inject() {
    case $1 in
        erofs)
            mount -o remount,bind,ro "$FAULT_DIR" || { fail "remount ro failed"; return 1; }
            if (: >"$FAULT_DIR/probe") 2>/dev/null; then fail "the state directory is still writable"; return 1; fi
            ;;
        enospc)
            dd if=/dev/zero of="$FAULT_DIR/fill" bs=4k 2>/dev/null # stops at ENOSPC
            if (printf x >"$FAULT_DIR/probe") 2>/dev/null; then fail "the tmpfs is not full"; return 1; fi
            rm -f "$FAULT_DIR/probe"
            ;;
        eio | eio-dir) ;; # the shim was preloaded into treeguard from the start
    esac
}
# fault_lift FAULT: the state directory works again
fault_lift() {
    case $1 in
        erofs) mount -o remount,bind,rw "$FAULT_DIR" || fail "remount rw failed" ;;
        enospc) rm -f "$FAULT_DIR/fill" ;;
        eio | eio-dir) ;;
    esac
}

# ---------------------------------------------------------------- running treeguard's other verbs
# tg_cmd NAME ARGS...: "treeguard ARGS" to completion (bounded by timeout 60), as the same user as
# the arm's runs (TG_PREFIX: uid 65534 under unpriv); CMD_RC, output in $T/NAME.out and $T/NAME.err
tg_cmd() {
    local name=$1
    shift
    echo "${TG_PREFIX[*]} $TREEGUARD $*" >>"$T/commands"
    TG_TOKEN=$TOKEN timeout -s KILL 60 "${TG_PREFIX[@]}" "$TREEGUARD" "$@" </dev/null >"$T/$name.out" 2>"$T/$name.err"
    CMD_RC=$?
}
cmd_excerpt() { # cmd_excerpt NAME: first lines of NAME's stdout+stderr, on one line
    head -n 3 "$T/$1.out" "$T/$1.err" 2>/dev/null | grep -v '^==>' | grep -v '^$' | tr '\n' '|'
}
# paste_advice NAME LINE: run the command at the end of LINE (after its last "run: " or "take them
# down: ") as a user pastes it: through a shell, from /, with treeguard on PATH, without
# $TREEGUARD_STATE_DIR, as the arm's user; CMD_RC, output in $T/NAME.out and $T/NAME.err
paste_advice() {
    local name=$1 line=$2 cmd
    cmd=${line##*run: }
    [[ $line == *"take them down: "* ]] && cmd=${line##*take them down: }
    mkdir -p "$T/bin"
    ln -sf "$TREEGUARD" "$T/bin/treeguard"
    [[ $BOUNDARY == unpriv ]] && chown -h "$NOBODY_UID:$NOBODY_GID" "$T/bin" "$T/bin/treeguard"
    printf '%s\n' "$cmd" >"$T/$name.cmd"
    echo "(pasted) $cmd" >>"$T/commands"
    (cd / && TG_TOKEN=$TOKEN timeout -s KILL 60 "${TG_PREFIX[@]}" env -u TREEGUARD_STATE_DIR \
        PATH="$T/bin:$PATH" bash -c "$cmd") </dev/null >"$T/$name.out" 2>"$T/$name.err"
    CMD_RC=$?
}
# odd_state_dir: STATE = a state directory whose path needs quoting in a shell (space, quote, $)
odd_state_dir() {
    STATE="$T/it's a \$state dir"
    mkdir -m 700 "$STATE"
    [[ $BOUNDARY == unpriv ]] && chown "$NOBODY_UID:$NOBODY_GID" "$STATE"
}

# keep a step's treeguard output under its own name
save_tg_output() { cp "$T/tg.out" "$T/$1.tg.out" 2>/dev/null; cp "$T/tg.err" "$T/$1.tg.err" 2>/dev/null; }

# ---------------------------------------------------------------- the run's members
# members_alive: ALIVE = "pid:start" of every process in the pid file alive (not a zombie);
# DEAD = the others (with their state, Z or gone)
members_alive() {
    local a b rest
    ALIVE=() DEAD=()
    while read -r a b rest; do
        [[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ && -z $rest ]] || continue
        if alive_as "$a" "$b"; then
            ALIVE+=("$a:$b")
        elif proc_stat "$a" && [[ $PS_START == "$b" ]]; then
            DEAD+=("$a:$b($PS_STATE)")
        else
            DEAD+=("$a:$b(gone)")
        fi
    done <"$PIDFILE"
}
member_count() { grep -cE '^[0-9]+ [0-9]+$' "$PIDFILE"; }
no_member_alive() { members_alive; ((${#ALIVE[@]} == 0)); }
expect_all_members_alive() { # expect_all_members_alive WHEN
    members_alive
    ((${#DEAD[@]} == 0 && ${#ALIVE[@]} > 0)) && return 0
    fail "$1: ${#DEAD[@]} member(s) not alive: ${DEAD[*]} (expected every one alive: no SIGKILL)"
}
# wait_members_gone SECONDS WHAT: bounded poll until no member is alive; GONE_MS = how long it took
wait_members_gone() {
    local secs=$1 what=$2 t0 deadline
    now_ms; t0=$NOW_MS; deadline=$((t0 + secs * 1000))
    until no_member_alive; do
        now_ms
        if ((NOW_MS > deadline)); then
            GONE_MS=-1
            fail "$what: ${#ALIVE[@]} member(s) still alive after ${secs}s:$(describe_pids "${ALIVE[@]}")"
            return 1
        fi
        poll_sleep
    done
    now_ms; GONE_MS=$((NOW_MS - t0))
    return 0
}

# guardian_of_run: GUARDIAN_PID / GUARDIAN_START from "treeguard: guardian pid N" in $T/tg.err
guardian_of_run() {
    local line
    GUARDIAN_PID="" GUARDIAN_START=""
    while IFS= read -r line; do
        [[ $line =~ ^treeguard:\ guardian\ pid\ ([0-9]+)$ ]] && GUARDIAN_PID=${BASH_REMATCH[1]}
    done <"$T/tg.err"
    [[ -n $GUARDIAN_PID ]] || return 1
    GUARDIAN_START=$(start_of "$GUARDIAN_PID") || return 1
    echo "$GUARDIAN_PID $GUARDIAN_START" >>"$WORK/started"
}

# kill_guardian_and_controller: SIGKILL the run's guardian (GUARDIAN_PID, from guardian_of_run; none
# if that found none) and wait until it is dead, then SIGKILL treeguard and reap it (TG_RC: 137)
kill_guardian_and_controller() {
    if [[ -n $GUARDIAN_PID ]]; then
        kill -KILL "$GUARDIAN_PID"
        wait_for 5 "the guardian to die" eval '! alive_as $GUARDIAN_PID $GUARDIAN_START'
    fi
    kill -KILL "$TG_PID"
    tg_wait 10
}

# guardian_walked: the guardian (GUARDIAN_PID) has walked the controller's tree at least once since
# this was called: it went to sleep in its poll three more times (a whole walk lies between two of
# its sleeps; the third is margin for a sleep inside a walk). The guardian's own counter
# (voluntary_ctxt_switches in /proc/PID/status), not a fixed sleep: a condition to wait on.
guardian_switches() { status_field "$GUARDIAN_PID" voluntary_ctxt_switches; }
guardian_walked() {
    local from
    from=$(guardian_switches) || { fail "cannot read the guardian's /proc/$GUARDIAN_PID/status"; return 1; }
    wait_for 10 "the guardian to walk the tree" eval '(($(guardian_switches || echo 0) >= from + 3))'
}

# cpu_ms PID: CPU_MS = user + system time of PID so far (/proc/PID/stat fields 14 and 15), in ms
CLK_TCK=$(getconf CLK_TCK)
cpu_ms() {
    local line rest
    { IFS= read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
    rest=${line##*) }
    local -a f
    read -r -a f <<<"$rest"
    CPU_MS=$(((f[11] + f[12]) * 1000 / CLK_TCK))
}

# ---------------------------------------------------------------- a pids limit for trees that grow
# pids_cgroup MAX: PIDS_CG = a pids cgroup of this test's own with pids.max MAX (v1 pids hierarchy
# of a hybrid host, or v2 where the pids controller is enabled for our parent); 1 if none
PIDS_CGS=()
PIDS_WHY=""
# pids_free_for N: the machine has N pids to spare, and 1,000 more for everyone else; else
# PIDS_WHY says how many it has. pid_max and threads-max bound every pid namespace's tasks, and
# /proc/loadavg's nr_threads counts the whole machine's (a pid namespace of our own hides the rest).
pids_free_for() {
    local pid_max threads_max threads free
    pid_max=$(cat /proc/sys/kernel/pid_max) threads_max=$(cat /proc/sys/kernel/threads-max)
    threads=$(awk '{split($4, f, "/"); print f[2]}' /proc/loadavg)
    ((threads_max < pid_max)) && pid_max=$threads_max
    free=$((pid_max - threads))
    ((free >= $1 + 1000)) && return 0
    PIDS_WHY="this machine has $free free pids (a limit of $pid_max, $threads tasks alive): the test needs $1 and 1,000 to spare"
    return 1
}
pids_cgroup() {
    local line text pre post fstype opts mnt
    local -a f
    PIDS_CG=""
    pids_free_for "$1" || return 1
    text=$(</proc/self/mountinfo) # whole: see status_field
    while IFS= read -r line; do
        pre=${line%% - *} post=${line#* - }
        fstype=${post%% *} opts=${post##* }
        read -r -a f <<<"$pre"
        mnt=$(printf '%b' "${f[4]//\\/\\0}")
        if [[ $fstype == cgroup && ,$opts, == *,pids,* ]]; then
            PIDS_CG=$mnt/tg-takedown-$RUNID-$TEST_NO
            break
        fi
    done <<<"$text"
    if [[ -z $PIDS_CG ]]; then
        local saved_mount=$CG_MOUNT
        if [[ -n $CG_SUITE ]]; then
            grep -qw pids "$CG_SUITE/cgroup.controllers" 2>/dev/null && PIDS_CG=$CG_SUITE/pids-$TEST_NO
        elif find_cgroup2_mount && grep -qw pids "$CG_MOUNT/cgroup.subtree_control" 2>/dev/null; then
            # the process-group arm on a cgroup2 host: a cgroup of this harness's own under the
            # root, where pids is enabled (the name the cgroup arm's cleanup of dead harnesses knows)
            PIDS_CG=$CG_MOUNT/tg-it-$PIDNS-$RUNID-pids-$TEST_NO
        fi
        CG_MOUNT=$saved_mount
    fi
    if [[ -z $PIDS_CG ]]; then
        PIDS_WHY="no pids controller: no v1 pids hierarchy, and pids is not enabled in a cgroup2 parent of ours"
        return 1
    fi
    if ! { mkdir "$PIDS_CG" && echo "$1" >"$PIDS_CG/pids.max"; }; then
        PIDS_WHY="could not create $PIDS_CG with pids.max $1"
        rmdir "$PIDS_CG" 2>/dev/null
        PIDS_CG=""
        return 1
    fi
    PIDS_CGS+=("$PIDS_CG")
}
# pids_cgroup_empty: no process is left in PIDS_CG
pids_cgroup_empty() { [[ -z $(cat "$PIDS_CG/cgroup.procs" 2>/dev/null) ]]; }
pids_cgroup_remove() {
    wait_for 10 "the pids cgroup to empty" pids_cgroup_empty || fail "processes left in $PIDS_CG: $(head -c 200 "$PIDS_CG/cgroup.procs")"
    rmdir "$PIDS_CG" 2>/dev/null || fail "could not remove $PIDS_CG"
}
# in_pids_cgroup: treeguard starts inside PIDS_CG (so does everything it starts)
in_pids_cgroup() { TG_PREFIX=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$PIDS_CG"); }
# fx_bomb ARGS...: the fixture's fork bomb (FX), at nice 19, and each session it makes at autogroup
# nice 19 (tg_fixture --nice). With autogroups on (Debian's default), each session shares the CPU
# as a whole: a setsid bomb of 1,000 sessions left this harness (one session) about a thousandth
# of the CPU, each of its steps (a fork, a /proc read) took seconds, and one test ran out of its
# 120 s before the controller was even killed (CI, and here beside two busy processes). treeguard
# (root) runs at real-time priority either way, and the bomb still takes every CPU it is left.
fx_bomb() { FX=("$TG_FIXTURE" --nice 19 "$@"); }

# ---------------------------------------------------------------- records
# the_record [DIR]: RECORD = the one record file (*.json) in DIR, or else in the state directory or
# its finished/; RUN_ID its run id
the_record() {
    local dir=${1:-$STATE}
    local -a files=("$dir"/*.json)
    # without DIR: open or finished (a finished record is kept in finished/)
    (($# == 0)) && files+=("$dir"/finished/*.json)
    RECORD="" RUN_ID=""
    if ((${#files[@]} != 1)); then
        fail "expected exactly one record in $dir, found ${#files[@]}"
        return 1
    fi
    RECORD=${files[0]}
    RUN_ID=$(jq -r .run_id "$RECORD" 2>/dev/null)
    [[ -n $RUN_ID && $RUN_ID != null ]] || { fail "record $RECORD unreadable"; return 1; }
}
rec() { jq -r "$1" "$RECORD" 2>/dev/null; } # rec JQ_FILTER

# expect_authority_counts BY: the last authority entry of RECORD written by BY (guardian|sweep)
# counts the run's processes alive when it was written (more than 0: it came before the kill) and
# names min(count, 16) of them by pid and start time, among them one that the tree logged
expect_authority_counts() {
    local by=$1 entry count named line pid start logged=0
    entry=$(jq -c --arg by "$by " '[.authority[] | select(.by | startswith($by))] | last' "$RECORD")
    if [[ -z $entry || $entry == null ]]; then
        fail "no authority entry by the $by: $(rec -c .authority)"
        return 1
    fi
    count=$(jq -r '.targets[] | capture("^(?<n>[0-9]+) member\\(s\\) alive$").n' <<<"$entry")
    named=$(jq '[.targets[] | select(test("^pid [0-9]+ start [0-9]+$"))] | length' <<<"$entry")
    if ! [[ $count =~ ^[0-9]+$ ]] || ((count == 0)); then
        fail "the $by's authority does not count the processes alive: $entry"
        return 1
    fi
    expect_eq "$named" "$((count < 16 ? count : 16))" "members the $by's authority names ($entry)"
    while read -r line; do
        read -r _ pid _ start <<<"$line"
        grep -qx "$pid $start" "$PIDFILE" && logged=$((logged + 1))
    done < <(jq -r '.targets[] | select(test("^pid [0-9]+ start [0-9]+$"))' <<<"$entry")
    ((logged > 0)) || fail "the $by's authority names no member the tree logged: $entry"
}

# the cgroups (leaves) below the test's parent, for tests that keep a tree on purpose
remove_test_leaves() {
    [[ $BOUNDARY == cgroup ]] || return 0
    cg_children "$CG_TEST"
    local d
    for d in "${CG_CHILDREN[@]}"; do cg_remove "$d"; done
}

BOOT_ID=$(cat /proc/sys/kernel/random/boot_id)
# a pid that is dead now, with the start time it had: DEAD_PID, DEAD_START
make_dead_pid() {
    local pf=$T/dead.pids line
    : >"$pf"
    TG_PIDFILE=$pf "$TG_FIXTURE" exit 0
    read -r line <"$pf"
    DEAD_PID=${line%% *} DEAD_START=${line#* }
}
# a_tick_after START: returns once a process started now starts after clock tick START (bounded):
# two processes started in one tick have the same start time: a pid taken again within a dead
# process's tick would be that process by pid and start time, and a process started in the tick
# of another cannot be called older or younger than it
a_tick_after() {
    local try now
    for try in $(seq 200); do
        now=$(bash -c 'read -r l </proc/self/stat; r=${l##*) }; set -- $r; echo "${20}"')
        ((now > $1)) && return 0
        sleep 0.01
    done
    fail "no process started after clock tick $1 within 200 tries"
    return 1
}
# new_run_id PID: a run id of the form YYYYMMDDTHHMMSS-PID-XXXX
new_run_id() { printf '%s-%s-%04x' "$(date -u +%Y%m%dT%H%M%S)" "$1" $((RANDOM % 65536)); }
# write_record FILE RUN_ID CONTROLLER_PID CONTROLLER_START KIND ADDRESS PGID(null|N) MEMBERS_JSON
write_record() {
    local file=$1 now
    now=$(date +%s%N)
    jq -n --arg run "$2" --arg boot "$BOOT_ID" --argjson cpid "$3" --argjson cstart "$4" \
        --arg kind "$5" --arg addr "$6" --argjson pgid "$7" --argjson members "$8" --arg cwd "$PWD" \
        --argjson now "$now" '{
        format: "treeguard-record/1", run_id: $run, boot_id: $boot,
        controller: {pid: $cpid, start_time: $cstart}, guardian: null,
        boundary: {kind: $kind, address: $addr, pgid: $pgid},
        command: ["evidence-test", "hand-written"], cwd: $cwd,
        phases: [{name: "spawn", at: $now}, {name: "running", at: $now}],
        authority: [], members: $members, disposition: "pending", exit_code: null,
        notes: [], resolution: null}' >"$file"
    chmod 600 "$file"
}

# start_victim MODE [ARG]: a process of this test's own, outside any treeguard run, that must
# survive; VICTIM_PID/VICTIM_START (for "setpgid": the child that leads its own process group)
start_victim() {
    local pf=$T/victim.pids line
    : >"$pf"
    TG_TOKEN=$TOKEN TG_PIDFILE=$pf "$TG_FIXTURE" "$@" </dev/null >/dev/null 2>&1 &
    record_started "$!"
    disown "$!"
    wait_for 10 "the victim to be ready" has_line "$pf" ready || return 1
    if [[ $1 == setpgid ]]; then
        line=$(sed -n 2p "$pf")
    else
        line=$(sed -n 1p "$pf")
    fi
    VICTIM_PID=${line%% *} VICTIM_START=${line#* }
    # the victims are this test's: the end-of-test survivor check must not count them, so they
    # are not in $PIDFILE; expect_victim_alive checks them, the test kills them at its end
    VICTIM_FILE=$pf
}
expect_victim_alive() { # expect_victim_alive WHEN
    alive_as "$VICTIM_PID" "$VICTIM_START" && return 0
    proc_stat "$VICTIM_PID"
    fail "$1: our own process $VICTIM_PID (not treeguard's) was killed (state ${PS_STATE:-gone})"
}
kill_victims() { kill_survivors "$T/victim.pids" "no-token-$TOKEN"; }
