#!/usr/bin/env bash
# A compiler cache's server through the launcher: a small C++ project built twice inside one
# `treeguard run`, with CMAKE_CXX_COMPILER_LAUNCHER="treeguard;run;--leftovers;outer;--;sccache".
# The first compile's sccache client starts the server, which its run hands to the build's run;
# every later compile uses it, so the second build is all cache hits, and the build's run takes the
# server down at its end (nothing of sccache is left). A private SCCACHE_DIR and server port, so
# that runs at once share nothing; SCCACHE_IDLE_TIMEOUT=0: the server never ends by itself.
#   tests/launcher/sccache.sh BUILD_DIR cgroup|process-group
# TG_SCCACHE_LEFTOVERS=kill shows what --leftovers kill (treeguard before --leftovers outer) does:
# each compile's run kills the server its compile started, the cache sees no request, the test fails.
set -u
BUILD=${1:?build directory}
ARM=${2:?cgroup or process-group}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TREEGUARD=$(cd "$BUILD" && pwd)/treeguard
LEFTOVERS=${TG_SCCACHE_LEFTOVERS:-outer}
for tool in cmake ninja c++ jq sccache; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh)"; exit 77; }
done
[[ -x $TREEGUARD ]] || { echo "treeguard not found in $BUILD" >&2; exit 2; }

work=$(mktemp -d /tmp/tg-sccache.XXXXXX)
chmod 755 "$work"
cg_parent=""
TOKEN_NAME=TG_SCCACHE_TOKEN
# shellcheck source=token.bash
source "$HERE/token.bash"
# processes this test started carry its token; nothing else is touched
trap token_cleanup EXIT
export TG_SCCACHE_TOKEN=$work

outer_args=(-v --report "$work/outer.json")
case $ARM in
    cgroup)
        (($(id -u) == 0)) || { echo "SKIP: the cgroup arm needs root (a writable cgroup2 parent)"; exit 77; }
        mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
        [[ -n $mount && -w $mount ]] || { echo "SKIP: no writable cgroup2 mount"; exit 77; }
        cg_parent=$mount/tg-sccache-${work##*.}
        mkdir "$cg_parent" || { echo "SKIP: cannot create $cg_parent"; exit 77; }
        # the build's run makes its leaf there; each compile's run nests its leaf in it (auto)
        outer_args+=(--boundary cgroup --cgroup-parent "$cg_parent")
        ;;
    process-group)
        export TREEGUARD_BOUNDARY=process-group # the build's run and each compile's
        ;;
    *) echo "unknown arm $ARM" >&2; exit 2 ;;
esac

private_sccache "$work/cache"
export TREEGUARD_STATE_DIR=$work/state

cp -r "$HERE/cxx_project" "$work/p"
cmake -S "$work/p" -B "$work/b" -G Ninja \
    -DCMAKE_CXX_COMPILER_LAUNCHER="$TREEGUARD;run;-v;--leftovers;$LEFTOVERS;--;sccache" >"$work/configure.log" 2>&1 ||
    { echo "FAIL: configure"; tail -20 "$work/configure.log"; exit 1; }

# The build, twice, inside one run; the first with -j1 (sccache 0.4 gives a server 10 s to start,
# which parallel first starts on a loaded machine can miss: sccache's own race, not this test's).
# shellcheck disable=SC2016
build='b=$1
cmake --build "$b" -j1 && cmake --build "$b" --target clean && cmake --build "$b" -j2 &&
"$b/words_demo" && sccache --show-stats --stats-format json >"$b/../stats.json"'
rc=0
"$TREEGUARD" run "${outer_args[@]}" -- sh -c "$build" sh "$work/b" </dev/null >"$work/build.log" 2>&1 || rc=$?

failed=0
check() { # check WHAT CONDITION...
    local what=$1; shift
    if "$@"; then echo "PASS $what"; else echo "FAIL $what"; failed=1; fi
}
stat_of() { jq -r "$1" "$work/stats.json" 2>/dev/null; }
check "the build's run exits 0 (got $rc)" test "$rc" = 0
check "the program built runs" grep -qx "built through a compiler cache (5 words)" "$work/build.log"
check "no compile lost its server" eval '! grep -q "server looks like it shut down" "$work/build.log"'
requests=$(stat_of '.stats.compile_requests // 0')
hits=$(stat_of '.stats.cache_hits.counts["C/C++"] // 0')
echo "sccache: $requests compile requests, $hits cache hits ($ARM, --leftovers $LEFTOVERS)"
check "the server saw all 6 compiles (got $requests)" test "${requests:-0}" = 6
check "the second build was all cache hits (3, got $hits)" test "${hits:-0}" = 3
check "a compile's run handed the server over" grep -qE "^treeguard: handed [0-9]+ leftover\(s\) to run .*sccache" "$work/build.log"
check "the build's run names the server among its members" \
    eval 'jq -e "[.members[] | select(.comm == \"sccache\")] | length > 0" "$work/outer.json" >/dev/null'
check "the build's run ended with its takedown proven" test "$(jq -r .takedown "$work/outer.json" 2>/dev/null)" = pass
token_pids
check "no sccache (nor anything of the build) is left after the build's run (${#TOKEN_PIDS[@]} left)" \
    test "${#TOKEN_PIDS[@]}" = 0
if ((failed)); then
    echo "--- build log (last lines)"
    grep -v '^treeguard: \(state directory\|guardian pid\|boundary\|child pid\|consumed\)' "$work/build.log" | tail -25
fi
exit "$failed"
