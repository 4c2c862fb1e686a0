#!/usr/bin/env bash
# The cost benchmark (contract section 9). Never part of the test suite.
#
#   bash scripts/bench.sh      (as root, for the cgroup rows; installs hyperfine, tini and time)
#
# In one run, side by side, it measures:
#   1. wrapper overhead per run of /bin/true: direct, `timeout 60`, `tini -s`, treeguard with
#      the process-group boundary and (root) with the cgroup boundary;
#   2. (root) teardown of a 100-process tree at a 0.5 s deadline: treeguard (cgroup and
#      process-group), `timeout -s KILL 0.5s`, and the raw kernel operations (mkdir a cgroup, write
#      the pid, cgroup.kill, wait for `populated 0`); once with a tree that stays in its process
#      group and once with one whose members each setsid away;
#   3. maximum resident set size (/usr/bin/time -f %M) of treeguard, timeout and tini.
# Results are means with ratios to `timeout`, printed and written to build/bench.md. Run it on a
# quiet machine: the load average is recorded with the results.
# Environment: BENCH_RUNS (default 300), BENCH_TEARDOWN_RUNS (default 10), BENCH_RSS_RUNS (20);
# BENCH_SKIP_BUILD=1 measures the build/treeguard that is there without rebuilding it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
runs=${BENCH_RUNS:-300}
teardown_runs=${BENCH_TEARDOWN_RUNS:-10}
rss_runs=${BENCH_RSS_RUNS:-20}

# --- tools ------------------------------------------------------------------------------------
need=()
for package in hyperfine tini time; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || need+=("$package")
done
if [ "${#need[@]}" -ne 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bench: missing packages: ${need[*]}; run as root or install them" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update
  apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends "${need[@]}"
fi
bash scripts/install-deps.sh
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

# empty_cgroup CG: kill everything in CG (and below), wait (bounded) for `populated 0`.
empty_cgroup() {
  local cg=$1 i pid procs
  [ -d "$cg" ] || return 0
  for i in $(seq 200); do
    [ "$(populated "$cg")" = 0 ] && return 0
    if [ -e "$cg/cgroup.kill" ]; then
      echo 1 > "$cg/cgroup.kill"
    else
      while read -r procs; do
        while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$procs"
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
  local n=0 procs pid state
  while read -r procs; do
    while read -r pid; do
      state=$(sed 's/^.*) //; s/ .*//' "/proc/$pid/stat" 2>/dev/null) || continue
      [ "$state" = Z ] || n=$((n + 1))
    done < "$procs"
  done < <(find "$1" -name cgroup.procs)
  echo "$n"
}

cleanup() {
  [ -n "$bench_cg" ] && remove_cgroup "$bench_cg"
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

# --- 1. wrapper overhead ------------------------------------------------------------------------
echo "== 1. wrapper overhead: $runs runs of /bin/true each"
names=(direct timeout tini treeguard-pgroup)
cmds=(
  "$true_bin"
  "timeout 60 $true_bin"
  "$(q "$tini") -s -- $true_bin"
  "$tg --boundary process-group -- $true_bin"
)
if [ "$have_cgroup" -eq 1 ]; then
  names+=(treeguard-cgroup)
  cmds+=("$tg --boundary cgroup --cgroup-parent $(q "$bench_cg") -- $true_bin")
fi
args=()
for i in "${!names[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
hyperfine -N --warmup 30 --runs "$runs" --export-csv "$work/overhead.csv" "${args[@]}"

# --- 2. teardown ----------------------------------------------------------------------------------
if [ "$have_cgroup" -eq 1 ]; then
  cat > "$work/tree.sh" <<'TREE'
for i in $(seq 100); do sleep 1000 & done; wait
TREE
  cat > "$work/tree-setsid.sh" <<'TREE'
for i in $(seq 100); do setsid sleep 1000 & done; wait
TREE
  # in-cgroup.sh CG EXPECTED COMMAND...: run COMMAND inside the (existing) cgroup CG, say its exit
  # status on stderr, and succeed only if it is EXPECTED (so a row that fails is never timed).
  cat > "$work/in-cgroup.sh" <<'SCRIPT'
cg=$1; expected=$2; shift 2
echo $$ > "$cg/cgroup.procs" || exit 1
"$@"
status=$?
echo "exit $status" >&2
[ "$status" -eq "$expected" ] && exit 0
echo "in-cgroup: $1 exited $status, expected $expected" >&2
exit 1
SCRIPT
  # raw.sh PARENT TREE: the kernel operations a cgroup boundary is made of, done by hand.
  cat > "$work/raw.sh" <<'SCRIPT'
#!/usr/bin/env bash
set -eu
leaf=$1/raw-$$
mkdir "$leaf"
sh -c 'echo $$ > "$1/cgroup.procs" && exec sh "$2"' sh "$leaf" "$2" &
sleep 0.5                                   # the same deadline as the other rows
echo 1 > "$leaf/cgroup.kill"
for ((i = 0; i < 1000000; i++)); do         # wait for the kernel to say the cgroup is empty
  populated=1
  while read -r key value; do [ "$key" = populated ] && populated=$value; done < "$leaf/cgroup.events"
  [ "$populated" = 0 ] && break
done
wait
rmdir "$leaf"
[ "$populated" = 0 ]
SCRIPT
  reset_bench_cgroup
  in_run="sh $(q "$work/in-cgroup.sh") $(q "$bench_cg/run")"
  deadline_opts="--timeout 0.5s --kill-after 1s"

  teardown_names=()
  teardown_cmds=()
  for tree in tree tree-setsid; do
    tree_file=$work/$tree.sh
    teardown_names+=("$tree:treeguard-cgroup" "$tree:treeguard-pgroup" "$tree:timeout" "$tree:raw-kernel")
    # Every row runs inside $bench_cg/run, so whatever a row leaves behind (timeout leaves what
    # escaped its process group) is killed by cgroup before the next run, never by name.
    # Expected exit: 124 from treeguard (deadline), 137 from timeout (it SIGKILLs its own group).
    teardown_cmds+=(
      "$in_run 124 $tg --boundary cgroup --cgroup-parent $(q "$bench_cg") $deadline_opts -- sh $(q "$tree_file")"
      "$in_run 124 $tg --boundary process-group $deadline_opts -- sh $(q "$tree_file")"
      "$in_run 137 timeout -s KILL 0.5s sh $(q "$tree_file")"
      "$in_run 0 bash $(q "$work/raw.sh") $(q "$bench_cg") $(q "$tree_file")"
    )
  done
  prepare="bash $(q "$work/reset.sh")"
  {
    echo '#!/usr/bin/env bash'
    echo "bench_cg=$(q "$bench_cg")"
    declare -f populated empty_cgroup reset_bench_cgroup
    echo 'reset_bench_cgroup'
  } > "$work/reset.sh"

  echo
  echo "== 2. teardown of a 100-process tree at a 0.5 s deadline: $teardown_runs runs each"
  args=()
  for i in "${!teardown_names[@]}"; do
    args+=(-n "${teardown_names[$i]}" "${teardown_cmds[$i]}")
  done
  hyperfine -N --warmup 1 --runs "$teardown_runs" --prepare "$prepare" \
    --export-csv "$work/teardown.csv" "${args[@]}"
  reset_bench_cgroup

  # One more run of each, inside the bench cgroup, to see what it left alive and its exit code.
  # Everything it started is somewhere below $bench_cg (run/, or a leaf of its own).
  : > "$work/leftovers.txt"
  for i in "${!teardown_names[@]}"; do
    eval "set -- ${teardown_cmds[$i]}"  # the command strings were built with %q
    "$@" >/dev/null 2>"$work/count.err" || true
    rc=$(sed -n 's/^exit //p' "$work/count.err" | tail -n 1)
    # Give what was signalled before the wrapper returned up to 1 s to finish dying.
    for _ in $(seq 100); do
      left=$(count_alive_in "$bench_cg")
      [ "$left" -eq 0 ] && break
      sleep 0.01
    done
    echo "${teardown_names[$i]} $left $rc" >> "$work/leftovers.txt"
    echo "   ${teardown_names[$i]}: exit $rc, left alive $left"
    if grep -q '^in-cgroup:' "$work/count.err"; then
      grep -v '^exit ' "$work/count.err" | sed 's/^/     stderr: /' | tail -n 5
    fi
    reset_bench_cgroup
  done
fi

# --- 3. maximum resident set size -------------------------------------------------------------
echo
echo "== 3. maximum resident set size: $rss_runs runs each"
rss_names=(direct timeout tini treeguard-pgroup)
rss_cmds=("${cmds[@]:0:4}")
if [ "$have_cgroup" -eq 1 ]; then
  rss_names+=(treeguard-cgroup)
  rss_cmds+=("${cmds[4]}")
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

# --- report ----------------------------------------------------------------------------------------
report=$repo/build/bench.md
{
  echo "# treeguard cost benchmark"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -sr), $(nproc) CPUs, $("$treeguard" --version 2>/dev/null | head -n 1)," \
    "$(hyperfine --version), $(timeout --version | head -n 1), tini $("$tini" --version | awk '{ print $3 }')."
  echo "Load average before: $load_before; after: $(cut -d ' ' -f 1-3 /proc/loadavg)" \
    "(on a busy machine the figures mean little: run it on a quiet one)."
  echo
  echo "## 1. Wrapper overhead per run (\`/bin/true\`, $runs runs, hyperfine -N)"
  echo
  echo "| command | mean | ± σ | overhead over direct | ratio to timeout |"
  echo "|---|---:|---:|---:|---:|"
  awk -F, 'NR > 1 { name[NR] = $1; mean[NR] = $2; sd[NR] = $3; if ($1 == "direct") d = $2; if ($1 == "timeout") t = $2 }
    END { for (i = 2; i <= NR; i++)
      printf "| %s | %.2f ms | %.2f ms | %+.2f ms | %.2f× |\n", name[i], mean[i] * 1000, sd[i] * 1000, (mean[i] - d) * 1000, mean[i] / t }' \
    "$work/overhead.csv"
  echo
  echo "Commands: \`/bin/true\`; \`timeout 60 /bin/true\`; \`tini -s -- /bin/true\`;"
  echo "\`treeguard run --boundary process-group -- /bin/true\`; \`treeguard run --boundary cgroup --cgroup-parent <bench cgroup> -- /bin/true\`."
  echo "treeguard rows include its state-dir record (written, then removed on a clean run)."
  if [ "$have_cgroup" -eq 1 ]; then
    echo
    echo "## 2. Teardown of a 100-process tree at a 0.5 s deadline ($teardown_runs runs)"
    echo
    echo "\`tree\`: \`for i in \$(seq 100); do sleep 1000 & done; wait\` (all in one process group)."
    echo "\`tree-setsid\`: the same with \`setsid sleep 1000 &\` (every member leaves the group)."
    echo "treeguard: \`--timeout 0.5s --kill-after 1s\` (TERM, then KILL if needed); timeout: \`timeout -s KILL 0.5s\`;"
    echo "raw-kernel: mkdir a cgroup, write the pid, sleep 0.5, \`cgroup.kill\`, wait for \`populated 0\`, rmdir."
    echo "Every row runs under one \`sh\` that first moves itself into a cgroup the script made, runs the row and"
    echo "checks its exit status (a row that fails stops the benchmark), so whatever a row leaves alive is counted"
    echo "and killed by cgroup; that costs every row the same."
    echo "\"beyond deadline\" is the mean minus 0.5 s. \"left alive\" and \"exit\" come from one extra run of each:"
    echo "the processes of the tree still alive 1 s after the command returned, and its exit status."
    echo
    echo "| tree:command | mean | ± σ | ratio to timeout | beyond deadline | its ratio to timeout | left alive | exit |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|"
    awk -F, -v left="$work/leftovers.txt" '
      BEGIN { while ((getline line < left) > 0) { split(line, f, " "); alive[f[1]] = f[2]; code[f[1]] = f[3] } }
      NR > 1 { name[NR] = $1; mean[NR] = $2; sd[NR] = $3; split($1, p, ":"); if (p[2] == "timeout") t[p[1]] = $2 }
      END { for (i = 2; i <= NR; i++) { split(name[i], p, ":")
        printf "| %s | %.1f ms | %.1f ms | %.2f× | %.1f ms | %.2f× | %s | %s |\n", name[i], mean[i] * 1000,
          sd[i] * 1000, mean[i] / t[p[1]], (mean[i] - 0.5) * 1000, (mean[i] - 0.5) / (t[p[1]] - 0.5),
          alive[name[i]], code[name[i]] } }' "$work/teardown.csv"
  fi
  echo
  echo "## 3. Maximum resident set size (/usr/bin/time -f %M, $rss_runs runs)"
  echo
  echo "| command | median | max | ratio to timeout (median) |"
  echo "|---|---:|---:|---:|"
  awk '{ name[NR] = $1; med[NR] = $2; max[NR] = $3; if ($1 == "timeout") t = $2 }
    END { for (i = 1; i <= NR; i++) printf "| %s | %d KiB | %d KiB | %.2f× |\n", name[i], med[i], max[i], med[i] / t }' \
    "$work/rss.txt"
} > "$report"

echo
cat "$report"
echo
echo "bench: written to $report"
