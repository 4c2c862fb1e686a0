#!/usr/bin/env bash
# Part of scripts/bench.sh (section 1d), not run alone in the ordinary course:
#   bash scripts/bench_user_scope.sh TREEGUARD RUNS OUT.csv
# As an ordinary user (uid 65534) whose cgroup is root's, with a real `systemd --user`
# (tests/integration/user_manager.bash), hyperfine -N times /bin/true directly, under
# `timeout 60`, under treeguard's process-group boundary, and under treeguard's default (auto),
# which asks the user manager for a delegated scope each run: what the user scope costs; then the
# same in an undelegated app scope, and nested in a wrapped build.
# Exit 77 with a reason when that user manager cannot be had here.
set -u
treeguard=${1:?treeguard} runs=${2:?runs} out=${3:?out.csv}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../tests/integration/user_manager.bash"
user_manager_start 65534 "$0" "$@" || { echo "bench: no user-scope rows: $UM_WHY" >&2; exit 77; }
trap user_manager_stop EXIT
mkdir -m 700 "$UM_WORK/state" "$UM_WORK/out"
chown 65534:65534 "$UM_WORK/state" "$UM_WORK/out"
tg="$treeguard run --state-dir $UM_WORK/state"
um_as_user hyperfine -N --warmup 10 --runs "$runs" --export-csv "$UM_WORK/out/user.csv" \
    -n user-direct /bin/true \
    -n user-timeout "timeout 60 /bin/true" \
    -n user-treeguard-pgroup "$tg --boundary process-group -- /bin/true" \
    -n user-treeguard-userscope "$tg -- /bin/true" >&2 || exit 1
# Two more shapes, each its own hyperfine run (not interleaved with the rows above): in an app
# scope of the user's without Delegate= (a desktop terminal's), where the manager is asked once
# (the answer kept in the state directory) and every run then takes a user scope of its own; and a
# compile nested in a wrapped build (`treeguard run -- make`), which nests its leaf and asks nothing.
um_as_user systemd-run --user --scope --quiet -- hyperfine -N --warmup 10 --runs "$runs" \
    --export-csv "$UM_WORK/out/app.csv" -n user-treeguard-appscope "$tg -- /bin/true" >&2 || exit 1
um_as_user $tg -- hyperfine -N --warmup 10 --runs "$runs" \
    --export-csv "$UM_WORK/out/nested.csv" -n user-treeguard-nested "$tg -- /bin/true" >&2 || exit 1
tail -n +2 "$UM_WORK/out/app.csv" >>"$UM_WORK/out/user.csv"
tail -n +2 "$UM_WORK/out/nested.csv" >>"$UM_WORK/out/user.csv"
# the scope row really formed a leaf in a scope (else the row measures something else)
um_as_user $tg -v -- /bin/true 2>&1 | grep -q 'in the user scope' || {
    echo "bench: the user-scope row did not form a scope" >&2
    exit 1
}
cp "$UM_WORK/out/user.csv" "$out"
