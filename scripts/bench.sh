#!/usr/bin/env bash
# The cost benchmark (DESIGN.md [cost]). Never part of the test suite.
#
#   bash scripts/bench.sh      (as root, for the cgroup rows; installs what it needs through
#                               scripts/install-deps.sh --bench: hyperfine, tini, time, ninja)
#
# In one run, side by side, it measures:
#   1. wrapper overhead per run of /bin/true: direct, `timeout 60`, `tini -s`, treeguard with the
#      process-group boundary and (root) the cgroup boundary, each with its guardian and record as a
#      user gets them, and two floors (scripts/bench_floor.c: a bare spawn; a bare spawn with a
#      guardian process); the overhead ratio is (treeguard - direct) / (timeout - direct);
#   1d. (root) the user scope: as an ordinary user whose cgroup is root's, with a real
#      `systemd --user` (scripts/bench_user_scope.sh), treeguard's default against its process group;
#   1b. the dispatch gate's cost: treeguard in a state directory holding 1,000 kept records and 20
#      stale ones (pending, controller dead, boundary empty) against an empty one, and the one
#      launch that settles the 20 stale records (restored before every run);
#   2. (root) teardown of trees of 100, 1,000 and 5,000 `sleep`s past a deadline: treeguard (cgroup
#      and process-group, from its --report: deadline to end) against the kernel floor (the same tree
#      in a cgroup, `cgroup.kill`, wait for `populated 0`), with treeguard's peak RSS (GNU time);
#   3. maximum resident set size (/usr/bin/time -f %M) of treeguard, timeout and tini running true;
#   4. the launcher row: a generated CMake project of BENCH_TUS (100) C++ files built with
#      `ninja -j2`, plainly and with CMAKE_CXX_COMPILER_LAUNCHER=treeguard;
#   6. what leftovers hold: the reading of 100 leftovers holding 10 descriptors each, beside 100
#      holding nothing of note (the report's timeline);
#   7. (root) a real project's warm-cache build: libgit2 1.5.1 (170 C files, fetched from Debian's
#      source archive, its checksum checked) built with ninja -j2, every compile a ccache hit, with
#      `ccache` alone, `timeout 600 ccache` and the README's launcher recipe (a nested
#      `treeguard run --leftovers outer -- ccache` under `treeguard run -- ninja`) as the launcher.
#   Section 1 also measures CPU time per run (perf stat's task-clock: the command and every process
#   it starts, the guardian included), in BENCH_CPU_ROUNDS interleaved rounds, medians: on a busy
#   machine wall time mostly measures the others' load, CPU time much less so; with (root) the nested
#   rows, interleaved with the others: treeguard (auto) inside an outer run's leaf, guarded by the outer
#   run's guardian (whose CPU time for it is added), the same with a guardian of its own, and the
#   nested floor (scripts/bench_floor.c nested: the system calls a nested run makes, nothing else);
#   and a compiler-cache hit (ccache, warm) alone, with `timeout` as the launcher, and (root) through a
#   nested run, its overhead over the hit alone against timeout's.
#   1e. (root) the nested rows run by run (scripts/bench_alternate.c): /bin/true and the cache hit
#      alone, through timeout and through a nested run, one run each in turn for BENCH_ALTERNATE_ROUNDS
#      rounds inside one outer run's leaf; medians of each run's CPU time (rusage), the outer
#      guardian's share added to the nested rows.
# Results are ratios: section 1 wall times are hyperfine means, the CPU times, teardowns and RSS medians;
# printed and written to build/bench.md. Run it on a quiet machine:
# the load average is recorded with the results.
# Environment: BENCH_RUNS (default 300), BENCH_TEARDOWN_RUNS (5), BENCH_RSS_RUNS (20),
# BENCH_BUILD_RUNS (5), BENCH_TUS (100), BENCH_SIZES ("100 1000 5000"), BENCH_CPU_ROUNDS (10),
# BENCH_ALTERNATE_ROUNDS (1000), BENCH_GUARDIAN_SIZE (20000), BENCH_GUARDIAN_RUNS (3);
# BENCH_HOLDINGS_RUNS (10); BENCH_PROJECT_RUNS (10); BENCH_PROJECT_TARBALL (a copy of section 7's
# tarball already at hand: it is still checked);
# BENCH_SECTIONS ("1 2 3 4 5 6 7") the sections to run (e.g. "1" for the per-run overhead alone);
# BENCH_SKIP_BUILD=1 measures the build/treeguard that is there without rebuilding it;
# BENCH_CPU_ONLY=1: section 1 is its CPU-time table alone (no hyperfine rows, no user scope).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
runs=${BENCH_RUNS:-300}
teardown_runs=${BENCH_TEARDOWN_RUNS:-5}
build_runs=${BENCH_BUILD_RUNS:-5}
tus=${BENCH_TUS:-100}
sizes=${BENCH_SIZES:-100 1000 5000}
rss_runs=${BENCH_RSS_RUNS:-20}
cpu_rounds=${BENCH_CPU_ROUNDS:-10}
sections=" ${BENCH_SECTIONS:-1 2 3 4 5 6 7} "
# want N: section N is to be run
want() { [[ $sections == *" $1 "* ]]; }

# --- tools ------------------------------------------------------------------------------------
bash scripts/install-deps.sh --bench
if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  bash scripts/build.sh >/dev/null
fi
treeguard=$repo/build/treeguard
[ -x "$treeguard" ] || { echo "bench: $treeguard was not built" >&2; exit 1; }
tini=$(command -v tini)
true_bin=/bin/true

work=$(mktemp -d "${TMPDIR:-/tmp}/treeguard-bench.XXXXXX")
state=$work/state
bench_cg=

# --- cgroup v2 helpers --------------------------------------------------------------------------
# The cgroup2 mount, from mountinfo (hybrid hosts mount it at /sys/fs/cgroup/unified).
cgroup_mount=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
  /proc/self/mountinfo | head -n 1)
own_cgroup=$(sed -n 's/^0:://p' /proc/self/cgroup)

# populated CG: prints the `populated` value of CG's cgroup.events.
populated() {
  local key value
  while read -r key value; do
    if [ "$key" = populated ]; then echo "$value"; return; fi
  done < "$1/cgroup.events"
}

# kill_listed PROCS: SIGKILL each pid a cgroup.procs file lists. Read whole, then split: a `while
# read` loop on the file itself reads each line after an lseek, in a text the kernel makes anew,
# and can read a pid cut short when the set changed meanwhile. Only pids above 0 (cgroup v2 shows 0
# for a process outside our pid namespace: kill 0 is our own group).
kill_listed() {
  local pid pids
  pids=$(cat "$1")
  for pid in $pids; do [ "$pid" -gt 0 ] && kill -KILL "$pid" 2>/dev/null || true; done
}

# empty_cgroup CG: kill everything in CG (and below), wait (bounded) for `populated 0`.
empty_cgroup() {
  local cg=$1 i procs
  [ -d "$cg" ] || return 0
  for i in $(seq 200); do
    [ "$(populated "$cg")" = 0 ] && return 0
    if [ -e "$cg/cgroup.kill" ]; then
      echo 1 > "$cg/cgroup.kill"
    else
      while read -r procs; do
        kill_listed "$procs"
      done < <(find "$cg" -name cgroup.procs)
    fi
    sleep 0.01
  done
  echo "bench: $cg did not empty" >&2
  return 1
}

# remove_cgroup CG: empty it, then remove it and any child cgroups, deepest first.
remove_cgroup() {
  local cg=$1
  [ -d "$cg" ] || return 0
  empty_cgroup "$cg" || true
  find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  [ ! -d "$cg" ] || echo "bench: could not remove $cg" >&2
}

# reset_bench_cgroup: empty $bench_cg, remove every cgroup below it, and make a fresh run/.
# A fresh one, because on Linux 6.18 a clone3(CLONE_INTO_CGROUP) child is SIGKILLed at birth when
# the parent's own cgroup was ever the target of a cgroup.kill (measured here); treeguard runs from
# run/, so run/ must never have been killed.
reset_bench_cgroup() {
  empty_cgroup "$bench_cg" || true
  find "$bench_cg" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
  mkdir "$bench_cg/run"
}

# count_alive_in CG: live (non-zombie) processes in CG and below.
count_alive_in() {
  local n=0 procs pid pids state
  while read -r procs; do
    pids=$(cat "$procs")  # whole: see kill_listed
    for pid in $pids; do
      state=$(sed 's/^.*) //; s/ .*//' "/proc/$pid/stat" 2>/dev/null) || continue
      [ "$state" = Z ] || n=$((n + 1))
    done
  done < <(find "$1" -name cgroup.procs)
  echo "$n"
}

# The pids limit every tree of the benchmark runs under: cgroup v2's pids.max on the bench cgroup
# where the controller is enabled there, else a v1 pids cgroup (hybrid hosts) the runners join.
pids_v1=
set_pids_limit() {
  local limit=$1 v1_root=/sys/fs/cgroup/pids
  if [ -e "$bench_cg/pids.max" ]; then
    echo "$limit" > "$bench_cg/pids.max"
  elif [ -d "$v1_root" ] && [ -w "$v1_root" ]; then
    pids_v1=$v1_root/treeguard-bench-$$
    mkdir -p "$pids_v1"
    echo "$limit" > "$pids_v1/pids.max"
  else
    echo "bench: no pids controller to limit the trees with: the teardown section is skipped" >&2
    return 1
  fi
}

# pids_in_use: tasks counted against that limit now
pids_in_use() {
  if [ -n "$pids_v1" ]; then cat "$pids_v1/pids.current"; else cat "$bench_cg/pids.current"; fi
}

cleanup() {
  [ -n "$bench_cg" ] && remove_cgroup "$bench_cg"
  if [ -n "$pids_v1" ] && [ -d "$pids_v1" ]; then
    # Only what this script started is in it (its runners and their trees).
    kill_listed "$pids_v1/cgroup.procs"
    for _ in $(seq 100); do [ -s "$pids_v1/cgroup.procs" ] || break; sleep 0.01; done
    rmdir "$pids_v1" 2>/dev/null || echo "bench: could not remove $pids_v1" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

have_cgroup=0
if [ "$(id -u)" -eq 0 ] && [ -n "$cgroup_mount" ] && [ -n "$own_cgroup" ]; then
  bench_cg=${cgroup_mount}${own_cgroup%/}/treeguard-bench-$$
  if mkdir "$bench_cg" 2>/dev/null; then
    have_cgroup=1
  else
    bench_cg=
  fi
fi
[ "$have_cgroup" -eq 1 ] || echo "bench: no writable cgroup v2 (needs root): the cgroup rows and the teardown section are skipped"

q() { printf '%q' "$1"; }
tg="$(q "$treeguard") run --state-dir $(q "$state")"

# --- state directories for the gate rows -----------------------------------------------------
# A process that is gone, with the start time it had: the controller (and member) of every
# hand-made record below, so no record names anything alive.
sh -c 'cut -d " " -f 22 /proc/$$/stat > "$1"; echo $$ >> "$1"' sh "$work/dead"
dead_start=$(sed -n 1p "$work/dead")
dead_pid=$(sed -n 2p "$work/dead")
boot_id=$(cat /proc/sys/kernel/random/boot_id)
now_ns=$(date +%s%N)
# records DIR DISPOSITION COUNT TAG: COUNT valid records of process-group runs of the dead process,
# as treeguard writes them (pending ones name the dead process as their only member).
records() {
  local dir=$1 disposition=$2 count=$3 tag=$4
  mkdir -p "$dir"
  chmod 700 "$dir"
  jq -nc --arg boot "$boot_id" --argjson pid "$dead_pid" --argjson start "$dead_start" \
    --arg disposition "$disposition" --argjson now "$now_ns" --argjson count "$count" --arg tag "$tag" \
    --arg stamp "$(date -u +%Y%m%dT%H%M%S)" '
    range($count) as $i | ($stamp + "-" + ($pid | tostring) + "-" + $tag +
      ([($i / 256 | floor), ($i / 16 | floor) % 16, $i % 16] | map("0123456789abcdef"[.:. + 1]) | add)) as $run |
    {format: "treeguard-record/1", run_id: $run, boot_id: $boot, pid_ns: null,
     controller: {pid: $pid, start_time: $start}, guardian: null,
     boundary: {kind: "process-group", address: ("pgid " + ($pid | tostring)), pgid: $pid},
     command: ["cc", "-c", ("tu" + ($i | tostring) + ".cpp")], cwd: "/", phases: [{name: "spawn", at: $now}],
     authority: [], members: (if $disposition == "pending" then [{pid: $pid, start_time: $start, escaped: false, leads: ""}] else [] end),
     disposition: $disposition, exit_code: (if $disposition == "pass" then 0 else null end), notes: [], resolution: null}' |
    while IFS= read -r line; do
      run=$(jq -r .run_id <<<"$line")
      printf '%s\n' "$line" > "$dir/$run.json"
      chmod 600 "$dir/$run.json"
    done
}
state_kept=$work/state-kept
records "$state_kept/finished" pass 1000 a
records "$state_kept" pending 20 b
state_stale=$work/state-stale
records "$work/stale" pending 20 c
mkdir -m 700 "$state_stale"
restore_stale="sh -c 'rm -rf $(q "$state_stale")/* && cp -p $(q "$work/stale")/*.json $(q "$state_stale")/'"
tg_kept="$(q "$treeguard") run --state-dir $(q "$state_kept")"
tg_stale="$(q "$treeguard") run --state-dir $(q "$state_stale")"

# --- 1. wrapper overhead ------------------------------------------------------------------------
names=(direct timeout tini treeguard-pgroup treeguard-pgroup-kept)
cmds=(
  "$true_bin"
  "timeout 60 $true_bin"
  "$(q "$tini") -s -- $true_bin"
  "$tg --boundary process-group -- $true_bin"
  "$tg_kept --boundary process-group -- $true_bin"
)
# The timeout front end: the same run as treeguard-pgroup behind timeout's grammar; it
# takes its state directory and boundary from the environment (set for section 1 alone, below).
names+=(treeguard-timeout)
cmds+=("$(q "$treeguard") timeout 60 $true_bin")
if [ "$have_cgroup" -eq 1 ]; then
  names+=(treeguard-cgroup treeguard-cgroup-kept)
  cmds+=("$tg --boundary cgroup --cgroup-parent $(q "$bench_cg") -- $true_bin"
    "$tg_kept --boundary cgroup --cgroup-parent $(q "$bench_cg") -- $true_bin")
fi
# The pid-namespace boundary (opt-in), where this user may make a user namespace.
have_pidns=0
if "$treeguard" probe 2>/dev/null | grep -q '^user+pid namespace  *yes'; then
  have_pidns=1
  names+=(treeguard-pidns)
  cmds+=("$tg --boundary pid-namespace -- $true_bin")
  # its kernel floor: the same namespaces, id maps and /proc by util-linux, nothing else
  if unshare -r --pid --fork --mount-proc "$true_bin" 2> /dev/null; then
    names+=(floor-unshare-pidns)
    cmds+=("unshare -r --pid --fork --mount-proc $true_bin")
  fi
else
  echo "bench: no user+pid namespace here (treeguard probe): no pid-namespace row" >&2
fi
# The floor rows (scripts/bench_floor.c, static like treeguard): spawning COMMAND the cheapest way and
# nothing else; and the same with a guardian process per run, started the cheapest way (no memory
# copied) and doing nothing. What treeguard does beyond the second is its own cost.
floor=$work/bench_floor
if want 1 && cc -O2 -static -o "$floor" scripts/bench_floor.c 2> "$work/floor.err"; then
  names+=(floor-spawn floor-spawn+guardian)
  cmds+=("$(q "$floor") spawn $true_bin" "$(q "$floor") guarded $true_bin")
elif want 1; then
  echo "bench: scripts/bench_floor.c did not build: no floor rows ($(head -n 1 "$work/floor.err"))" >&2
fi
args=()
for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
if want 1; then
# treeguard-timeout's state directory and boundary (tg_row_env); every other row names its own on
# the command line
tg_row_env=(TREEGUARD_STATE_DIR="$state" TREEGUARD_BOUNDARY=process-group)
if [ "${BENCH_CPU_ONLY:-0}" != 1 ]; then
echo "== 1. wrapper overhead and the gate's cost: $runs runs of /bin/true each"
env "${tg_row_env[@]}" hyperfine -N --warmup 30 --runs "$runs" --export-csv "$work/overhead.csv" "${args[@]}"
# The one launch that finds 20 stale records and settles them (restored before every run).
hyperfine -N --warmup 3 --runs "$((runs / 10 > 10 ? runs / 10 : 10))" --prepare "$restore_stale" \
  --export-csv "$work/settle.csv" -n treeguard-pgroup-settles-20 "$tg_stale --boundary process-group -- $true_bin"
ls "$state_kept/finished" | wc -l > "$work/kept-after.txt"
# 1b. A nested run: the same treeguard (auto) started inside an outer run's leaf, as a launcher
# under `treeguard run -- ninja` is; hyperfine itself runs inside the outer run.
: > "$work/nested.csv"
if [ "$have_cgroup" -eq 1 ]; then
  echo "== 1b. a nested run (inside an outer run's leaf): $runs runs"
  eval "$tg --boundary cgroup --cgroup-parent $(q "$bench_cg") -- hyperfine -N --warmup 30 --runs $runs \
    --export-csv $(q "$work/nested.csv") -n treeguard-nested $(q "$tg -- $true_bin")"
fi
# 1d. The user scope: an ordinary user whose cgroup is root's, with a user manager of its own.
echo "== 1d. the user scope: $((runs / 3)) runs each, as uid 65534 with a systemd --user"
bash scripts/bench_user_scope.sh "$treeguard" "$((runs / 3))" "$work/userscope.csv" || rm -f "$work/userscope.csv"
fi
# CPU time: perf stat -r of each command in turn, BENCH_CPU_ROUNDS times, interleaved.
: > "$work/cpu.txt"
# nested_cpu ROW COMMAND: one round of a nested row: perf stat of COMMAND (quoted for eval: e.g.
# `treeguard run --state-dir STATE -- /bin/true`) inside an outer run's leaf (the outer run's state
# directory: $state), as a launcher under `treeguard run -- ninja` is. perf counts the nested runs
# and what they start; the outer run's guardian works for them too (it watches each one that
# announces itself to it), so its CPU time over the round (/proc/PID/schedstat, ns) is added, per
# run. Prints ROW MS GUARDIAN-MS.
nested_cpu() {
  local row=$1 command=$2
  # (in the outer run: its guardian from its record, found by the marker's last run id)
  eval "$tg --boundary cgroup --cgroup-parent $(q "$bench_cg") -- sh -c $(q '
    g=$(jq -r .guardian.pid "$1/${TREEGUARD_RUNS##* }.json")
    a=$(cut -d " " -f 1 "/proc/$g/schedstat")
    shift
    out=$1 n=$2
    shift 2
    perf stat -x, -e task-clock -o "$out" -r "$n" "$@" > /dev/null 2>&1
    b=$(cut -d " " -f 1 "/proc/$g/schedstat")
    echo "$((b - a))" > "$out.guardian"') sh $(q "$state") $(q "$work/perf.out") $per_round $command" \
    || true
  local ms guardian_ns
  ms=$(awk -F, '/task-clock/ { print $1 }' "$work/perf.out")
  guardian_ns=$(cat "$work/perf.out.guardian" 2> /dev/null || echo 0)
  [ -n "$ms" ] && awk -v ms="$ms" -v g="$guardian_ns" -v n="$per_round" -v row="$row" \
    'BEGIN { printf "%s %.4f %.4f\n", row, ms + g / 1e6 / n, g / 1e6 / n }'
}
if command -v perf > /dev/null && perf stat -x, -e task-clock "$true_bin" > /dev/null 2>&1; then
  per_round=$((runs / cpu_rounds > 5 ? runs / cpu_rounds : 5))
  echo "== 1c. CPU time per run (perf stat task-clock): $cpu_rounds rounds of $per_round runs each"
  # The compiler-cache hit (ccache, a cache of its own, warmed: every run of the rows is a hit).
  hit=
  : > "$work/cpu-hit.txt"
  if command -v ccache > /dev/null && command -v cc > /dev/null; then
    export CCACHE_DIR=$work/ccache
    printf '#include <stdio.h>\nint main(void) { puts("hit"); return 0; }\n' > "$work/hit.c"
    hit="ccache cc -O2 -c $(q "$work/hit.c") -o $(q "$work/hit.o")"
    eval "$hit" && eval "$hit" || hit=
  else
    echo "bench: no ccache or cc: no compiler-cache rows" >&2
  fi
  mkdir -m 700 "$work/state-nested-apart"
  for _ in $(seq "$cpu_rounds"); do
    for i in "${!names[@]}"; do
      eval "set -- ${cmds[$i]}"
      env "${tg_row_env[@]}" perf stat -x, -e task-clock -r "$per_round" "$@" > /dev/null 2> "$work/perf.out" || true
      ms=$(awk -F, '/task-clock/ { print $1 }' "$work/perf.out")
      [ -n "$ms" ] && echo "${names[$i]} $ms" >> "$work/cpu.txt"
    done
    if [ "$have_cgroup" -eq 1 ]; then
      # guarded by the outer run's guardian (the same state directory), and, for comparison, with a
      # guardian of its own (another state directory: the outer run's guardian is not found)
      nested_cpu treeguard-nested "$(q "$treeguard") run --state-dir $(q "$state") -- $true_bin" \
        >> "$work/cpu.txt"
      nested_cpu treeguard-nested-own-guardian \
        "$(q "$treeguard") run --state-dir $(q "$work/state-nested-apart") -- $true_bin" >> "$work/cpu.txt"
      if [ -x "$floor" ]; then
        nested_cpu floor-nested "$(q "$floor") nested $(q "$state") $(q "$cgroup_mount") $true_bin" \
          >> "$work/cpu.txt"
      fi
    fi
    if [ -n "$hit" ]; then
      # a compiler-cache hit: alone, with `timeout` as the launcher, and through a nested run
      for row in ccache-hit ccache-hit-timeout; do
        command=$hit
        [ "$row" = ccache-hit-timeout ] && command="timeout 60 $hit"
        eval "set -- $command"
        perf stat -x, -e task-clock -r "$per_round" "$@" > /dev/null 2> "$work/perf.out" || true
        ms=$(awk -F, '/task-clock/ { print $1 }' "$work/perf.out")
        [ -n "$ms" ] && echo "$row $ms" >> "$work/cpu-hit.txt"
      done
      [ "$have_cgroup" -eq 1 ] &&
        nested_cpu ccache-hit-nested "$(q "$treeguard") run --state-dir $(q "$state") -- $hit" >> "$work/cpu-hit.txt"
    fi
  done
else
  echo "bench: perf stat cannot count task-clock here: no CPU-time table" >&2
fi
# 1e. The nested rows run by run (scripts/bench_alternate.c): /bin/true alone, through timeout and
# through a nested run, one run each in turn for BENCH_ALTERNATE_ROUNDS rounds, and the same three
# for the compiler-cache hit where there is one; all of them inside one outer run's leaf. CPU time
# from each run's rusage; the outer guardian's CPU time over them all (/proc/PID/schedstat), per
# nested run, is added to the nested rows. Whatever the machine does meanwhile falls on every row
# alike, which rounds of many runs each cannot give on a machine whose load moves.
: > "$work/alternate.txt"
alternate=$work/bench_alternate
if [ "$have_cgroup" -eq 1 ] && cc -O2 -o "$alternate" scripts/bench_alternate.c 2> "$work/alternate.err"; then
  alternate_rounds=${BENCH_ALTERNATE_ROUNDS:-1000}
  echo "== 1e. the nested rows run by run: $alternate_rounds rounds"
  timeout_bin=$(command -v timeout)
  rows=(direct "$true_bin" ";;" timeout "$timeout_bin" 60 "$true_bin"
    ";;" treeguard-nested "$treeguard" run --state-dir "$state" -- "$true_bin")
  nested_rows=1
  if [ -n "${hit:-}" ]; then
    ccache_bin=$(command -v ccache)
    hit_words=(cc -O2 -c "$work/hit.c" -o "$work/hit.o")
    rows+=(";;" ccache-hit "$ccache_bin" "${hit_words[@]}"
      ";;" ccache-hit-timeout "$timeout_bin" 60 "$ccache_bin" "${hit_words[@]}"
      ";;" ccache-hit-nested "$treeguard" run --state-dir "$state" -- "$ccache_bin" "${hit_words[@]}")
    nested_rows=2
  fi
  "$treeguard" run --state-dir "$state" --boundary cgroup --cgroup-parent "$bench_cg" -- sh -c '
    g=$(jq -r .guardian.pid "$1/${TREEGUARD_RUNS##* }.json")
    a=$(cut -d " " -f 1 "/proc/$g/schedstat")
    out=$2
    shift 2
    "$@" > "$out" || exit 1
    b=$(cut -d " " -f 1 "/proc/$g/schedstat")
    echo "guardian-ns $((b - a))" >> "$out"' sh "$state" "$work/alternate.txt" \
    "$alternate" "$alternate_rounds" "${rows[@]}" || : > "$work/alternate.txt"
  echo "nested-runs $((alternate_rounds * nested_rows))" >> "$work/alternate.txt"
elif [ "$have_cgroup" -eq 1 ]; then
  echo "bench: scripts/bench_alternate.c did not build: no run-by-run rows ($(head -n 1 "$work/alternate.err"))" >&2
fi
fi

# --- helpers of the tree sections (2 and 5) ------------------------------------------------------
if [ "$have_cgroup" -eq 1 ]; then
  # tree.sh N READY: N `sleep`s in the background, then "ready" into READY, then wait.
  cat > "$work/tree.sh" <<'TREE'
n=$1; i=0
while [ "$i" -lt "$n" ]; do sleep 1000 & i=$((i + 1)); done
echo ready > "$2"
wait
TREE
  # runner.sh COMMAND...: join the pids limit (v1) and $bench_cg/run (v2), then exec COMMAND, so
  # whatever a row leaves behind is in cgroups this script made.
  {
    echo 'pids_v1=$1; run_cg=$2; shift 2'
    echo '[ -n "$pids_v1" ] && echo $$ > "$pids_v1/cgroup.procs"'
    echo 'echo $$ > "$run_cg/cgroup.procs" || exit 1'
    echo 'exec "$@"'
  } > "$work/runner.sh"
  # wait_file FILE SECONDS: bounded poll for FILE to exist
  wait_file() {
    local i
    for i in $(seq $(($2 * 100))); do [ -e "$1" ] && return 0; sleep 0.01; done
    return 1
  }
  # raw.sh PARENT N READY TREE: the kernel floor: the tree in a cgroup of its own, then cgroup.kill and
  # a wait for `populated 0`; prints the milliseconds from the write to the proof.
  cat > "$work/raw.sh" <<'SCRIPT'
set -eu
leaf=$1/raw-$$
mkdir "$leaf"
# (the tree must not hold our stdout, the caller's $(...), open)
sh -c 'echo $$ > "$1/cgroup.procs" && exec sh "$2" "$3" "$4"' sh "$leaf" "$4" "$2" "$3" > /dev/null 2>&1 &
i=0
until [ -e "$3" ]; do
  i=$((i + 1))
  if [ "$i" -ge 12000 ]; then echo 1 > "$leaf/cgroup.kill"; exit 1; fi
  sleep 0.01
done
t0=${EPOCHREALTIME/[.,]/}
echo 1 > "$leaf/cgroup.kill"
populated=1
while [ "$populated" != 0 ]; do           # builtins only: no fork per look
  while read -r key value; do [ "$key" = populated ] && populated=$value; done < "$leaf/cgroup.events"
done
t1=${EPOCHREALTIME/[.,]/}
wait 2>/dev/null || true
rmdir "$leaf"
echo $((t1 - t0))
SCRIPT
fi

# --- 2. teardown ----------------------------------------------------------------------------------
have_teardown=0
max_size=0
for n in $sizes; do [ "$n" -gt "$max_size" ] && max_size=$n; done
if want 2 && [ "$have_cgroup" -eq 1 ] && set_pids_limit $((max_size + 200)); then
  have_teardown=1
fi
if [ "$have_teardown" -eq 1 ]; then
  reset_bench_cgroup
  runner="sh $(q "$work/runner.sh") $(q "$pids_v1") $(q "$bench_cg/run")"
  : > "$work/teardown.txt"
  echo
  echo "== 2. teardown of trees of $sizes sleeps: $teardown_runs runs each"
  for n in $sizes; do
    # Rounds outermost, rows interleaved within a round: a drift in the machine's load meets every
    # row alike.
    for r in $(seq "$teardown_runs"); do
      for row in raw-kernel treeguard-cgroup treeguard-pgroup; do
        # The previous tree's pids are freed only once its members are reaped: wait (bounded) until
        # the limit is free again, so no tree meets "Cannot fork" halfway.
        for _ in $(seq 1000); do [ "$(pids_in_use)" -le 10 ] && break; sleep 0.01; done
        ready=$work/ready-$n-$row-$r
        rm -f "$ready"
        if [ "$row" = raw-kernel ]; then
          us=$($runner bash "$work/raw.sh" "$bench_cg" "$n" "$ready" "$work/tree.sh") || us=
          rss=
        else
          boundary_args=(--boundary cgroup --cgroup-parent "$bench_cg")
          [ "$row" = treeguard-pgroup ] && boundary_args=(--boundary process-group)
          report=$work/report-$n-$row-$r.json
          # No deadline: once the tree is complete, TERM to treeguard reaches COMMAND (the tree's
          # sh), which dies of it; the N sleeps are leftovers and the drain's TERM ends them
          # (--kill-after 0 means no forced kill, as in timeout: the row measures the graceful stop).
          # Teardown = the drain's start to treeguard's end.
          $runner /usr/bin/time -f %M -o "$work/rss-$n-$row-$r" $(q "$treeguard") run \
            --state-dir "$state" "${boundary_args[@]}" --kill-after 0 \
            --report "$report" -- sh "$work/tree.sh" "$n" "$ready" > /dev/null 2>&1 &
          tg_runner=$!
          complete=1
          wait_file "$ready" 120 || complete=0
          # the runner exec'd time, which forked treeguard: treeguard is time's child
          tg_pid=$(cat /proc/"$tg_runner"/task/*/children 2>/dev/null | awk '{ print $1; exit }')
          [ -n "$tg_pid" ] && kill -TERM "$tg_pid"
          wait "$tg_runner" 2>/dev/null || true
          [ "$complete" -eq 1 ] && us=$(jq -r '[.timeline[] | select(.event == "phase drain") | .at_unix_ns][0] as $t0 |
            if $t0 == null then empty else ((.ended_at_unix_ns - $t0) / 1000 | floor) end' "$report" 2>/dev/null) || us=
          [ "$complete" -eq 1 ] || us=
          rss=$(tail -n 1 "$work/rss-$n-$row-$r" 2>/dev/null) || rss=
        fi
        left=$(count_alive_in "$bench_cg")
        echo "$n $row ${us:-NA} ${rss:-NA} $left" >> "$work/teardown.txt"
        echo "   $n $row run $r: ${us:-NA} us, peak RSS ${rss:-NA} KiB, left alive $left"
        reset_bench_cgroup
      done
    done
  done
fi

# --- 3. maximum resident set size -------------------------------------------------------------
if want 3; then
echo
echo "== 3. maximum resident set size: $rss_runs runs each"
rss_names=(direct timeout tini treeguard-pgroup)
rss_cmds=("${cmds[@]:0:4}")
if [ "$have_cgroup" -eq 1 ]; then
  rss_names+=(treeguard-cgroup)
  rss_cmds+=("${cmds[5]}")
fi
: > "$work/rss.txt"
for i in "${!rss_names[@]}"; do
  eval "set -- ${rss_cmds[$i]}"
  : > "$work/rss-one.txt"
  for _ in $(seq "$rss_runs"); do
    /usr/bin/time -f %M -a -o "$work/rss-one.txt" "$@"
  done
  median=$(sort -n "$work/rss-one.txt" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  max=$(sort -n "$work/rss-one.txt" | tail -n 1)
  echo "${rss_names[$i]} $median $max" >> "$work/rss.txt"
  echo "   ${rss_names[$i]}: median ${median} KiB, max ${max} KiB"
done
fi

# --- 4. the launcher row ------------------------------------------------------------------------
if want 4; then
echo
echo "== 4. a $tus-file C++ project built with ninja -j2, with and without treeguard as launcher"
project=$work/project
mkdir -p "$project/src"
{
  echo 'cmake_minimum_required(VERSION 3.18)'
  echo 'project(bench CXX)'
  echo 'file(GLOB sources src/*.cpp)'
  echo 'add_library(bench STATIC ${sources})'
} > "$project/CMakeLists.txt"
for i in $(seq "$tus"); do
  cat > "$project/src/tu$i.cpp" <<CPP
#include <string>
#include <vector>
std::string tu$i(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& word : words) out += word + "$i";
  return out;
}
CPP
done
launcher_state=$work/launcher-state
cmake -S "$project" -B "$work/build-plain" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake -S "$project" -B "$work/build-tg" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_CXX_COMPILER_LAUNCHER=$treeguard;run;--state-dir;$launcher_state;--" > /dev/null
# Rounds of one build each, the two builds' order alternating, after one unmeasured build of each:
# GNU time gives the wall time and the CPU time of ninja and every process it waited for.
: > "$work/launcher.txt"
for build in plain tg; do ninja -C "$work/build-$build" -j2 > /dev/null; done
for r in $(seq "$build_runs"); do
  order="plain tg"; [ $((r % 2)) -eq 0 ] && order="tg plain"
  for build in $order; do
    ninja -C "$work/build-$build" clean > /dev/null
    /usr/bin/time -f "%e %U %S" -o "$work/time.out" ninja -C "$work/build-$build" -j2 > /dev/null
    read -r wall user sys < "$work/time.out"
    echo "$r $build $wall $user $sys" >> "$work/launcher.txt"
    echo "   round $r, $build: ${wall}s wall, ${user}s user, ${sys}s system"
  done
done
cat "$work/build-tg/build.ninja" "$work/build-tg/CMakeFiles/rules.ninja" 2>/dev/null | grep -q -- "$treeguard" ||
  echo "bench: the launcher was not used" >&2
fi

# --- 5. the guardian's verdict on a big tree ------------------------------------------------------
# A tree of $guardian_size members (scripts: fanout.sh, tg_fixture's fanout: one parent of N children
# that sleep), its treeguard controller SIGKILLed once it is complete: how soon the guardian's record
# says `pass` (the target, DESIGN.md [cost]: 5 s, both boundaries), beside the kernel's own kill of the same tree.
guardian_size=${BENCH_GUARDIAN_SIZE:-20000}
guardian_runs=${BENCH_GUARDIAN_RUNS:-3}
fixture=$repo/build/tests/integration/tg_fixture
have_guardian=0
if want 5 && [ "$have_cgroup" -eq 1 ] && [ -x "$fixture" ] && set_pids_limit $((guardian_size + 200)); then
  have_guardian=1
fi
if [ "$have_guardian" -eq 1 ]; then
  reset_bench_cgroup
  runner="sh $(q "$work/runner.sh") $(q "$pids_v1") $(q "$bench_cg/run")"
  # fanout.sh N READY: the fixture's fanout of N, then "ready" into READY once it says it is complete.
  {
    echo 'TG_PIDFILE=$2.pids '"$(q "$fixture")"' fanout "$1" &'
    echo 'until grep -qx ready "$2.pids" 2>/dev/null; do sleep 0.05; done'
    echo 'echo ready > "$2"'
    echo 'wait'
  } > "$work/fanout.sh"
  : > "$work/guardian.txt"
  echo
  echo "== 5. the guardian's verdict on a tree of $guardian_size after its controller's SIGKILL: $guardian_runs runs each"
  for r in $(seq "$guardian_runs"); do
    for row in raw-kernel guardian-cgroup guardian-pgroup; do
      for _ in $(seq 3000); do [ "$(pids_in_use)" -le 10 ] && break; sleep 0.01; done
      ready=$work/gready-$row-$r
      rm -f "$ready" "$ready.pids"
      disposition=
      if [ "$row" = raw-kernel ]; then
        us=$($runner bash "$work/raw.sh" "$bench_cg" "$guardian_size" "$ready" "$work/fanout.sh") || us=
        ms=${us:+$((us / 1000))}
      else
        boundary_args=(--boundary cgroup --cgroup-parent "$bench_cg")
        [ "$row" = guardian-pgroup ] && boundary_args=(--boundary process-group)
        gstate=$work/gstate-$row-$r
        mkdir -m 700 "$gstate"
        # (the runner execs treeguard: $! is the controller)
        $runner $(q "$treeguard") run -v --state-dir "$gstate" "${boundary_args[@]}" \
          -- sh "$work/fanout.sh" "$guardian_size" "$ready" > /dev/null 2> "$gstate.err" &
        controller=$!
        ms=
        if wait_file "$ready" 300; then
          killed_at=$(date +%s%N)
          kill -KILL "$controller"
          wait "$controller" 2>/dev/null || true
          # the guardian's verdict: its record's last phase, `verify` (bounded: 600 s)
          for _ in $(seq 6000); do
            record=$(find "$gstate" -name '*.json' 2>/dev/null | head -n 1)
            verify=
            [ -n "$record" ] && verify=$(jq -r '[.phases[] | select(.name == "verify") | .at] | last // empty' "$record" 2>/dev/null || true)
            [ -n "$verify" ] && break
            sleep 0.1
          done
          if [ -n "$verify" ]; then
            ms=$(((verify - killed_at) / 1000000))
            disposition=$(jq -r .disposition "$record")
          fi
        else
          kill -KILL "$controller" 2>/dev/null
          wait "$controller" 2>/dev/null || true
        fi
      fi
      # What is alive in the bench cgroup once the guardian has left (bounded: 30 s) was missed;
      # the reset kills it.
      for _ in $(seq 300); do
        left=$(count_alive_in "$bench_cg")
        [ "$left" -eq 0 ] && break
        sleep 0.1
      done
      reset_bench_cgroup
      echo "$row ${ms:-NA} ${disposition:--} $left" >> "$work/guardian.txt"
      echo "   $row run $r: ${ms:-NA} ms${disposition:+, $disposition}, left alive $left"
    done
  done
fi

# --- 6. what leftovers hold -----------------------------------------------------------------------
# COMMAND exits and leaves 100 processes behind; what they hold is read before any signal. The cost
# of that reading, from the report's timeline ("COMMAND left ..." to "phase drain"): 100 leftovers
# holding 10 descriptors each (tg_fixture hold-many: a TCP socket listening on 127.0.0.1 and 9 files
# open for writing) beside 100 holding only what they inherited (fanout, stdio on /dev/null).
# Target: <= 200 ms for the first. A run that leaves nothing behind reads nothing: section 1.
holdings_runs=${BENCH_HOLDINGS_RUNS:-10}
have_holdings=0
if want 6 && [ -x "$fixture" ]; then
  have_holdings=1
  : > "$work/holdings.txt"
  mkdir -p "$work/held"
  echo
  echo "== 6. what 100 leftovers hold: $holdings_runs interleaved runs each"
  for r in $(seq "$holdings_runs"); do
    for row in leftovers-100x10 leftovers-100x0; do
      if [ "$row" = leftovers-100x10 ]; then shape=(hold-many 100 10 "$work/held"); else shape=(fanout 100); fi
      report=$work/holdings-$row-$r.json
      "$treeguard" run --state-dir "$state" --boundary process-group --kill-after 5s --report "$report" \
        -- "$fixture" --then exit 0 "${shape[@]}" < /dev/null > /dev/null 2>&1 || true
      ms=$(jq -r '([.timeline[] | select(.event | startswith("COMMAND left")) | .at_unix_ns][0]) as $a |
        ([.timeline[] | select(.event == "phase drain") | .at_unix_ns][0]) as $b |
        if $a == null or $b == null then empty else (($b - $a) / 1e6) end' "$report" 2> /dev/null) || ms=
      kept=$(jq '[.leftovers[] | (.holds // []) | length] | add // 0' "$report" 2> /dev/null) || kept=
      left=$(jq '.leftovers | length' "$report" 2> /dev/null) || left=
      echo "$row ${ms:-NA} ${kept:-NA} ${left:-NA}" >> "$work/holdings.txt"
      echo "   $row run $r: ${ms:-NA} ms, $left leftovers, $kept holdings kept"
      rm -f "$work/held"/*
    done
  done
fi

# --- 7. a real project's warm-cache build -----------------------------------------------------------
# libgit2 1.5.1 as Debian 12 ships its source (nobody here wrote it): 170 C files with the options
# below, built with `ninja -j2` three ways, its compiler launcher: `ccache` alone; `timeout 600 ccache`
# under `timeout 3600 ninja`; the README's recipe, `treeguard run --leftovers outer -- ccache` under
# `treeguard run -- ninja` (each compile a nested run of the build's run). Every compile is a hit of
# a cache of its own (warmed by one build of each). Interleaved rounds (`ninja -t clean`, then the
# build), the three orders rotating: wall time (GNU time) and the CPU time of everything the build
# started, guardians included (cpu.stat of a cgroup of the round's own that the build runs in and
# the outer run's leaf is made under). Target: treeguard's build within 1.05x of timeout's.
project_runs=${BENCH_PROJECT_RUNS:-10}
project_url=http://deb.debian.org/debian/pool/main/libg/libgit2/libgit2_1.5.1+ds.orig.tar.xz
project_sha256=96369433500bb528f036c16be9921bd437c098b745f1aaeccb91290815518970
have_project=0
if want 7 && [ "$have_cgroup" -eq 1 ]; then
  echo
  echo "== 7. libgit2 1.5.1 (Debian's source) built from a warm ccache with ninja -j2: $project_runs interleaved rounds"
  tarball=${BENCH_PROJECT_TARBALL:-$work/libgit2.tar.xz}
  [ -e "$tarball" ] || curl -fsS -o "$tarball" "$project_url" || echo "bench: could not fetch $project_url" >&2
  if [ -e "$tarball" ] && echo "$project_sha256  $tarball" | sha256sum -c --quiet -; then
    have_project=1
  else
    echo "bench: no libgit2 source with the expected checksum: section 7 is skipped" >&2
  fi
fi
if [ "$have_project" -eq 1 ]; then
  mkdir -p "$work/libgit2"
  tar -xJf "$tarball" -C "$work/libgit2" --strip-components 1
  export CCACHE_DIR=$work/project-ccache
  project_state=$work/project-state
  mkdir -m 700 "$project_state"
  declare -A project_launcher=(
    [ccache]="ccache"
    [timeout]="timeout;600;ccache"
    [treeguard]="$treeguard;run;--state-dir;$project_state;--leftovers;outer;--;ccache"
  )
  for row in ccache timeout treeguard; do
    cmake -S "$work/libgit2" -B "$work/project-$row" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DUSE_HTTPS=OFF -DUSE_NTLMCLIENT=OFF -DUSE_HTTP_PARSER=system \
      -DREGEX_BACKEND=regcomp -DUSE_SHA1=CollisionDetection -DUSE_SHA256=Builtin \
      "-DCMAKE_C_COMPILER_LAUNCHER=${project_launcher[$row]}" > "$work/project-$row.cmake" 2>&1 ||
      { echo "bench: libgit2 did not configure ($row): see below" >&2; tail -n 5 "$work/project-$row.cmake" >&2; have_project=0; }
  done
fi
if [ "$have_project" -eq 1 ]; then
  # project_build ROW: one build of ROW after `ninja -t clean`, in a cgroup of its own below the
  # bench cgroup; prints "WALL CPU" in seconds.
  project_build() {
    local row=$1 cg=$bench_cg/project usage_before usage_after build=$work/project-$row
    local -a outer=()
    case $row in
      timeout) outer=(timeout 3600) ;;
      treeguard) outer=("$treeguard" run --state-dir "$project_state" --boundary cgroup --cgroup-parent "$cg" --) ;;
    esac
    ninja -C "$build" -t clean > /dev/null
    rmdir "$cg" 2> /dev/null || true
    mkdir "$cg"
    usage_before=$(awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat")
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
      /usr/bin/time -f %e -o "$work/time.out" "${outer[@]}" ninja -C "$build" -j2 > "$work/project-build.out" 2>&1 ||
      { echo "bench: the $row build failed:" >&2; tail -n 5 "$work/project-build.out" >&2; return 1; }
    usage_after=$(awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat")
    empty_cgroup "$cg" || true
    find "$cg" -depth -type d -exec rmdir {} \; 2> /dev/null || true
    echo "$(cat "$work/time.out") $(awk -v a="$usage_before" -v b="$usage_after" 'BEGIN { printf "%.3f", (b - a) / 1e6 }')"
  }
  for row in ccache timeout treeguard; do project_build "$row" > /dev/null; done   # (warms the cache)
  hits_before=$(ccache -s 2> /dev/null | awk '/Hits:/ { print $2; exit }')
  : > "$work/project.txt"
  rows=(ccache timeout treeguard)
  for r in $(seq "$project_runs"); do
    for k in 0 1 2; do
      row=${rows[$(((r + k) % 3))]}
      result=$(project_build "$row") || continue
      echo "$row $result" >> "$work/project.txt"
      echo "   round $r, $row: $result (wall s, CPU s)"
    done
  done
  ccache -s > "$work/project-ccache.txt" 2>&1 || true
  grep -q -- "$treeguard" "$work/project-treeguard/build.ninja" "$work/project-treeguard/CMakeFiles/rules.ninja" 2> /dev/null ||
    echo "bench: the treeguard launcher was not used" >&2
fi

# --- report ----------------------------------------------------------------------------------------
# awk's median(LIST): the median of the space-separated numbers in LIST, -1 for none; it sets lo and
# hi to their least and greatest.
awk_median='function median(list,   a, c, i, j, t) { c = split(list, a, " ")
    for (i = 2; i <= c; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    lo = a[1]; hi = a[c]; return c ? (c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2) : -1 }'
# cpu_table DIRECT TIMEOUT FILE: the CPU-time table's rows from FILE (ROW MS lines, round after
# round: first appearance is the table's order), medians with the rounds' range, each row's overhead
# over row DIRECT and its ratio to row TIMEOUT's; and that ratio round by round (the row's overhead
# over DIRECT's of the same round, against TIMEOUT's of the same round): its median and range, which
# the machine's drift from round to round moves much less than the rows' own ranges.
cpu_table() {
  awk -v direct="$1" -v timeout="$2" "$awk_median"'
    { v[$1] = v[$1] " " $2; k[$1]++; at[$1, k[$1]] = $2; if (!($1 in seen)) { seen[$1] = ++n; order[n] = $1 } }
    END { for (i = 1; i <= n; i++) { m[order[i]] = median(v[order[i]]); l[order[i]] = lo; h[order[i]] = hi }
      d = m[direct]; t = m[timeout]
      for (i = 1; i <= n; i++) { c = order[i]; r = ""
        for (j = 1; j <= k[c]; j++)
          if ((direct, j) in at && (timeout, j) in at && at[timeout, j] > at[direct, j])
            r = r " " (at[c, j] - at[direct, j]) / (at[timeout, j] - at[direct, j])
        rm = median(r)
        printf "| %s | %.3f ms | %.3f–%.3f ms | %+.3f ms | %.2f | %.2f (%.2f–%.2f) |\n", c, m[c], l[c], h[c], m[c] - d,
          (m[c] - d) / (t - d), rm, lo, hi } }' \
    "$3"
}
report=$repo/build/bench.md
{
  echo "# treeguard cost benchmark"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) CPUs, $("$treeguard" --version 2>/dev/null | head -n 1)," \
    "$(hyperfine --version), $(timeout --version | head -n 1), tini $("$tini" --version | awk '{ print $3 }')."
  echo "Load average before: $load_before; after: $(cut -d ' ' -f 1-3 /proc/loadavg)" \
    "(on a busy machine the figures mean little: run it on a quiet one)."
  if want 1; then
  echo
  if [ -s "$work/overhead.csv" ]; then
  echo "## 1. Wrapper overhead per run (\`/bin/true\`, $runs runs, hyperfine -N)"
  echo
  echo "| command | mean | ± σ | overhead over direct | overhead ratio to timeout's (target ≤ 1.00) | ratio to the same without records |"
  echo "|---|---:|---:|---:|---:|---:|"
  cat "$work/overhead.csv" <(tail -n +2 "$work/settle.csv") <(tail -n +2 "$work/nested.csv") |
  awk -F, 'NR > 1 { name[NR] = $1; mean[NR] = $2; sd[NR] = $3; m[$1] = $2; if ($1 == "direct") d = $2; if ($1 == "timeout") t = $2 }
    END { for (i = 2; i <= NR; i++) {
      base = name[i]; sub(/-kept$/, "", base); sub(/-settles-20$/, "", base)
      gate = (base != name[i] && (base in m)) ? sprintf("%.2f×", mean[i] / m[base]) : ""
      printf "| %s | %.2f ms | %.2f ms | %+.2f ms | %.2f | %s |\n", name[i], mean[i] * 1000, sd[i] * 1000,
        (mean[i] - d) * 1000, (mean[i] - d) / (t - d), gate } }'
  echo
  echo "Commands: \`/bin/true\`; \`timeout 60 /bin/true\`; \`tini -s -- /bin/true\`;"
  echo "\`treeguard run --boundary process-group -- /bin/true\`; \`treeguard run --boundary cgroup --cgroup-parent <bench cgroup> -- /bin/true\`,"
  echo "each with its guardian and its record (written, then removed on a clean run), as a user gets them."
  echo "\`treeguard-timeout\`: \`treeguard timeout 60 /bin/true\` with TREEGUARD_BOUNDARY=process-group and the same state"
  echo "directory: the timeout front end's cost against treeguard-pgroup's, the same run behind another grammar."
  echo "\`-kept\`: a state directory holding 1,000 kept (finished) records and 20 stale ones (pending, controller"
  echo "dead, boundary empty; the warm-up runs settle them, and $(cat "$work/kept-after.txt") finished records are left"
  echo "after the row: --keep-limit's default); the last column is its mean over the empty directory's (gate target ≤ 1.15)."
  echo "\`-settles-20\`: the launch that finds the 20 stale records and settles them, restored before every run."
  [ "$have_pidns" -eq 1 ] && echo "\`treeguard-pidns\`: \`treeguard run --boundary pid-namespace -- /bin/true\` (its init, the user+PID+mount namespaces and a fresh /proc per run; no guardian); \`floor-unshare-pidns\`: \`unshare -r --pid --fork --mount-proc /bin/true\`, the same namespaces, maps and /proc and nothing else."
  [ -s "$work/nested.csv" ] && echo "\`treeguard-nested\`: \`treeguard run -- /bin/true\` (auto) from inside an outer run's leaf, as a launcher under \`treeguard run -- ninja\` is (its own hyperfine run, inside the outer run; not interleaved with the rows above)."
  echo "\`floor-spawn\`: scripts/bench_floor.c, static: posix_spawn of /bin/true and a wait, nothing else."
  echo "\`floor-spawn+guardian\`: the same after starting a guardian process per run the cheapest way (a middle"
  echo "process and the guardian share the wrapper's memory until the guardian execs; it waits on a pipe and is"
  echo "dismissed): the least any wrapper that keeps a guardian per run pays, before any work of its own."
  fi
  if [ -s "$work/userscope.csv" ]; then
    echo
    echo "The user scope (as uid 65534 from a cgroup it may not write, with its own \`systemd --user\`:"
    echo "\`treeguard run\` asks that manager for a delegated scope each run, by executing systemd-run):"
    echo
    echo "| command | mean | ± σ | overhead over direct | overhead ratio to timeout's |"
    echo "|---|---:|---:|---:|---:|"
    awk -F, 'NR > 1 { name[NR] = $1; mean[NR] = $2; sd[NR] = $3; if ($1 == "user-direct") d = $2; if ($1 == "user-timeout") t = $2 }
      END { for (i = 2; i <= NR; i++) printf "| %s | %.2f ms | %.2f ms | %+.2f ms | %.2f |\n", name[i], mean[i] * 1000,
        sd[i] * 1000, (mean[i] - d) * 1000, (mean[i] - d) / (t - d) }' "$work/userscope.csv"
  fi
  if [ -s "$work/cpu.txt" ]; then
    echo
    echo "CPU time per run (perf stat task-clock: the command and every process it starts, the guardian"
    echo "included; the median of $cpu_rounds interleaved rounds of $per_round runs each, with the rounds' range):"
    echo
    echo "| command | CPU time | rounds' range | CPU overhead over direct | CPU overhead ratio to timeout's (target ≤ 1.00) | the same ratio round by round: median (range) |"
    echo "|---|---:|---:|---:|---:|---:|"
    # (cpu.txt is written in the rows' order, round after round: first appearance is the table's order)
    cpu_table direct timeout "$work/cpu.txt"
    if grep -q '^treeguard-nested ' "$work/cpu.txt"; then
      echo
      echo "\`treeguard-nested\`: \`treeguard run -- /bin/true\` (auto) inside an outer run's leaf (\`treeguard run --boundary cgroup\`,"
      echo "one per round, not counted), in the outer run's state directory: the outer run's guardian guards it, and"
      echo "that guardian's CPU time over the round (/proc/PID/schedstat) is added per run (median share:"
      echo "$(awk "$awk_median"' $1 == "treeguard-nested" { v = v " " $3 } END { printf "%.3f ms", median(v) }' "$work/cpu.txt"))."
      echo "\`treeguard-nested-own-guardian\`: the same in a state directory of its own, where it does not find the outer"
      echo "run's guardian and starts one of its own (as every nested run did before the outer guardian guarded it)."
      grep -q '^floor-nested ' "$work/cpu.txt" && echo "\`floor-nested\`: scripts/bench_floor.c, static, in the same place: the system calls a nested run makes and nothing else (no parsing, no checks): it keeps no file of the state directory, reads its identity and cgroup in /proc, announces itself to the outer run's guardian (in words the guardian refuses) and reads its answer, makes its leaf, clones /bin/true into it and removes the leaf; the outer guardian's CPU time is added as above."
    fi
    if [ -s "$work/cpu-hit.txt" ]; then
      echo
      echo "A compiler-cache hit (\`ccache cc -O2 -c hit.c\`, a warm cache of its own), CPU time per run as above:"
      echo "alone, with \`timeout 60\` as the launcher, and through a nested run (\`treeguard run -- ccache ...\` inside"
      echo "an outer run's leaf, its guardian's share added, as \`treeguard-nested\`); the overhead is over the hit alone:"
      echo
      echo "| command | CPU time | rounds' range | CPU overhead over the hit alone | CPU overhead ratio to timeout's (target ≤ 1.00) | the same ratio round by round: median (range) |"
      echo "|---|---:|---:|---:|---:|---:|"
      cpu_table ccache-hit ccache-hit-timeout "$work/cpu-hit.txt"
    fi
  fi
  if grep -q '^treeguard-nested ' "$work/alternate.txt" 2> /dev/null; then
    echo
    echo "The nested rows run by run (scripts/bench_alternate.c: one run of each in turn, $alternate_rounds rounds,"
    echo "all inside one outer run's leaf; CPU time from each run's rusage, the outer guardian's per nested run added"
    echo "to the nested rows: $(awk '$1 == "guardian-ns" { g = $2 } $1 == "nested-runs" { n = $2 }
      END { printf "%.3f ms", n ? g / n / 1e6 : 0 }' "$work/alternate.txt")):"
    echo
    echo "| command | CPU time per run: median | middle half of the runs | CPU overhead over the command alone | CPU overhead ratio to timeout's (target ≤ 1.00) |"
    echo "|---|---:|---:|---:|---:|"
    awk '$1 == "guardian-ns" { g = $2; next } $1 == "nested-runs" { n = $2; next }
      { row[++k] = $1; m[$1] = $2 / 1000; q1[$1] = $3 / 1000; q3[$1] = $4 / 1000 }
      END { share = n ? g / n / 1e6 : 0
        for (i = 1; i <= k; i++) { c = row[i]; if (c ~ /nested$/) { m[c] += share; q1[c] += share; q3[c] += share } }
        for (i = 1; i <= k; i++) { c = row[i]
          alone = c ~ /^ccache/ ? "ccache-hit" : "direct"; through = c ~ /^ccache/ ? "ccache-hit-timeout" : "timeout"
          printf "| %s | %.3f ms | %.3f–%.3f ms | %+.3f ms | %.2f |\n", c, m[c], q1[c], q3[c], m[c] - m[alone],
            (m[c] - m[alone]) / (m[through] - m[alone]) } }' "$work/alternate.txt"
  fi
  fi
  if [ "$have_teardown" -eq 1 ]; then
    echo
    echo "## 2. Teardown of a tree of N \`sleep\`s ($teardown_runs interleaved runs each, medians)"
    echo
    echo "raw-kernel: the tree in a cgroup of its own, \`cgroup.kill\`, wait for \`populated 0\`: from the write to the proof."
    echo "treeguard: \`run --kill-after 0 --report F -- sh tree.sh N\`; once the tree is complete, TERM to treeguard ends"
    echo "COMMAND and the N sleeps are leftovers: TERM to each, which they die of (\`-k 0\`: no forced kill), and the proof. From the drain's start to treeguard's end (its report)."
    echo "Every tree runs under a pids limit of $((max_size + 200)). Targets: cgroup ≤ 1.3×, process-group ≤ 3× the kernel floor."
    echo
    echo "| N | command | teardown | ratio to raw-kernel | per member | peak RSS | left alive |"
    echo "|---:|---|---:|---:|---:|---:|---:|"
    awk "$awk_median"'
      { key = $1 " " $2; if ($3 != "NA") vals[key] = vals[key] " " $3; if ($4 != "NA") rss[key] = ($4 > rss[key] ? $4 : rss[key]);
        left[key] += $5; if (!(key in order)) order[key] = NR; n[key] = $1; row[key] = $2 }
      END { for (k in order) keys[order[k]] = k
        for (i = 1; i <= NR; i++) { if (!(i in keys)) continue; k = keys[i]
          mid = median(vals[k]); floor = median(vals[n[k] " raw-kernel"]); if (floor < 0) floor = 0
          printf "| %d | %s | %s | %s | %s | %s | %d |\n", n[k], row[k], mid < 0 ? "NA" : sprintf("%.1f ms", mid / 1000),
            (mid < 0 || floor == 0) ? "" : sprintf("%.2f×", mid / floor), mid < 0 ? "" : sprintf("%.1f µs", mid / n[k]),
            rss[k] ? sprintf("%d KiB", rss[k]) : "", left[k] } }' "$work/teardown.txt"
  fi
  if want 3; then
  echo
  echo "## 3. Maximum resident set size (/usr/bin/time -f %M, $rss_runs runs)"
  echo
  echo "| command | median | max | ratio to timeout (median) |"
  echo "|---|---:|---:|---:|"
  awk '{ name[NR] = $1; med[NR] = $2; max[NR] = $3; if ($1 == "timeout") t = $2 }
    END { for (i = 1; i <= NR; i++) printf "| %s | %d KiB | %d KiB | %.2f× |\n", name[i], med[i], max[i], med[i] / t }' \
    "$work/rss.txt"
  fi
  if want 4; then
  echo
  echo "## 4. Launcher: $tus C++ files (\`<string>\`, \`<vector>\`), \`ninja -j2\` after \`ninja clean\` ($build_runs rounds, medians)"
  echo
  echo "Each round builds both, in alternating order; a ratio is treeguard's build over the plain one of the same"
  echo "round. CPU: user + system time of ninja and every process it waited for (GNU time)."
  echo
  echo "| build | wall | CPU | wall ratio to plain (target ≤ 1.02) | CPU ratio to plain | rounds' wall ratios |"
  echo "|---|---:|---:|---:|---:|---|"
  awk "$awk_median"'
    { wall[$1 " " $2] = $3; cpu[$1 " " $2] = $4 + $5; rounds[$1] = 1
      w[$2] = w[$2] " " $3; c[$2] = c[$2] " " ($4 + $5) }
    END { for (r in rounds) if ((r " plain") in wall && (r " tg") in wall) {
            wr = wr " " wall[r " tg"] / wall[r " plain"]; cr = cr " " cpu[r " tg"] / cpu[r " plain"]
            list = list sprintf(" %.3f", wall[r " tg"] / wall[r " plain"]) }
      printf "| ninja-plain | %.2f s | %.2f s | | | |\n", median(w["plain"]), median(c["plain"])
      printf "| ninja-treeguard | %.2f s | %.2f s | %.3f× | %.3f× |%s |\n", median(w["tg"]), median(c["tg"]),
        median(wr), median(cr), list }' "$work/launcher.txt"
  echo
  echo "\`ninja-treeguard\`: CMAKE_CXX_COMPILER_LAUNCHER=\"treeguard;run;--state-dir;DIR;--\" (defaults otherwise)."
  fi
  if [ "$have_guardian" -eq 1 ]; then
    echo
    echo "## 5. The guardian's verdict on a tree of $guardian_size after its controller's death ($guardian_runs interleaved runs each, medians)"
    echo
    echo "The tree: one parent of $guardian_size children that sleep (tg_fixture fanout), under \`sh fanout.sh\`."
    echo "raw-kernel: the tree in a cgroup of its own, \`cgroup.kill\`, wait for \`populated 0\`."
    echo "guardian-*: \`treeguard run -v --boundary cgroup|process-group -- sh fanout.sh N\`; once the tree is complete,"
    echo "SIGKILL to the controller; from it to the \`verify\` phase of the record the guardian writes (its verdict)."
    echo "PID 1 here: \`$(cat /proc/1/comm)\` (it reaps whatever a dead parent leaves). Target: \`pass\` within 5 s, both boundaries."
    echo
    echo "| command | verdict | runs' range | ratio to raw-kernel | dispositions | within 5 s | left alive |"
    echo "|---|---:|---:|---:|---|---|---:|"
    awk "$awk_median"'
      { if ($2 != "NA") v[$1] = v[$1] " " $2; d[$1] = d[$1] (d[$1] == "" ? "" : " ") $3; left[$1] += $4
        if (!($1 in seen)) { seen[$1] = ++n; order[n] = $1 } }
      END { floor = median(v["raw-kernel"])
        for (i = 1; i <= n; i++) { c = order[i]; m = median(v[c])
          met = (c == "raw-kernel") ? "" : (m >= 0 && hi < 5000 && d[c] ~ /^pass( pass)*$/) ? "yes" : "no"
          printf "| %s | %s | %s | %s | %s | %s | %d |\n", c, m < 0 ? "NA" : sprintf("%d ms", m),
            m < 0 ? "" : sprintf("%d–%d ms", lo, hi), (m < 0 || floor <= 0) ? "" : sprintf("%.2f×", m / floor),
            c == "raw-kernel" ? "" : d[c], met, left[c] } }' "$work/guardian.txt"
  fi
  if [ "$have_holdings" -eq 1 ]; then
    echo
    echo "## 6. What 100 leftovers hold, read before any signal ($holdings_runs interleaved runs each, medians)"
    echo
    echo "\`treeguard run --boundary process-group --report F -- tg_fixture --then exit 0 SHAPE\`; from the report's"
    echo "\"COMMAND left ...\" to its \"phase drain\": the reading of what each leftover holds (/proc/PID/fd, fdinfo, the"
    echo "socket tables of their network namespace, cwd). leftovers-100x10: \`hold-many 100 10\` (each a TCP socket"
    echo "listening and 9 files open for writing); leftovers-100x0: \`fanout 100\` (stdio on /dev/null). Target: ≤ 200 ms."
    echo
    echo "| command | reading | runs' range | ratio to leftovers-100x0 | holdings kept | leftovers |"
    echo "|---|---:|---:|---:|---:|---:|"
    awk "$awk_median"'
      { if ($2 != "NA") v[$1] = v[$1] " " $2; kept[$1] = $3; left[$1] = $4
        if (!($1 in seen)) { seen[$1] = ++n; order[n] = $1 } }
      END { base = median(v["leftovers-100x0"])
        for (i = 1; i <= n; i++) { c = order[i]; m = median(v[c])
          printf "| %s | %s | %s | %s | %s | %s |\n", c, m < 0 ? "NA" : sprintf("%.1f ms", m),
            m < 0 ? "" : sprintf("%.1f–%.1f ms", lo, hi), (m < 0 || base <= 0) ? "" : sprintf("%.2f×", m / base),
            kept[c], left[c] } }' "$work/holdings.txt"
  fi
  if [ "$have_project" -eq 1 ] && [ -s "$work/project.txt" ]; then
    echo
    echo "## 7. A real project's warm-cache build: libgit2 1.5.1 ($project_runs interleaved rounds, medians)"
    echo
    echo "Debian 12's libgit2 source (170 C files), \`ninja -j2\` after \`ninja -t clean\`, every compile a ccache hit."
    echo "ccache: the launcher \`ccache\`; timeout: \`timeout 600 ccache\` under \`timeout 3600 ninja\`; treeguard:"
    echo "\`treeguard run --leftovers outer -- ccache\` under \`treeguard run -- ninja\` (README's recipe). CPU: everything"
    echo "the build started, guardians included (its cgroup's cpu.stat). Target: treeguard ≤ 1.05× timeout's wall time."
    echo
    echo "| launcher | wall | rounds' range | ratio to timeout's | CPU | rounds' range | ratio to timeout's |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk "$awk_median"'
      { w[$1] = w[$1] " " $2; c[$1] = c[$1] " " $3; if (!($1 in seen)) { seen[$1] = ++n; order[n] = $1 } }
      END { tw = median(w["timeout"]); tc = median(c["timeout"])
        for (i = 1; i <= n; i++) { r = order[i]
          mw = median(w[r]); wl = lo; wh = hi; mc = median(c[r]); cl = lo; ch = hi
          printf "| %s | %.2f s | %.2f–%.2f s | %.3f× | %.2f s | %.2f–%.2f s | %.3f× |\n", r, mw, wl, wh, mw / tw, mc, cl, ch, mc / tc } }' \
      "$work/project.txt"
    echo
    echo "ccache after the rounds: $(awk '/Hits:|Misses:/ { printf "%s %s; ", $1, $2 }' "$work/project-ccache.txt")"
  fi
} > "$report"

echo
cat "$report"
echo
echo "bench: written to $report"
