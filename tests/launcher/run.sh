#!/usr/bin/env bash
# The launcher recipes of the README and the manual, on a small real C project: `cmake --install`
# (binary, manual page, bash completion), CMake's CMAKE_C_COMPILER_LAUNCHER with options from the
# environment (Ninja and Makefile generators), a Makefile $(TG) prefix with make -j4, a ninja rule,
# and a deadline that ends a compile: the build fails and says why in treeguard's one line.
#   tests/launcher/run.sh BUILD_DIR [NAME... | --list]
# NAME runs only the check of that name (as PASS/FAIL print it), after the install the others need,
# and the last check (nothing left running); a NAME no check has is an error (exit 2) that lists
# them; --list lists them and runs none.
set -u
BUILD=${1:?build directory}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../by_name.bash
source "$HERE/../by_name.bash"
by_name_args "${@:2}"
SOURCE=$(cd "$HERE/../.." && pwd)
for tool in cmake make ninja cc; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done

work=$(mktemp -d /tmp/tg-launcher.XXXXXX)
passed=0
failed=0
cleanup() {
    # Processes this test started carry its token; nothing else is touched.
    local f pid
    for f in $(grep -lzs "^TG_LAUNCHER_TOKEN=$work\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}; pid=${pid%/environ}
        [[ $pid != "$$" ]] && kill -KILL "$pid" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT
export TG_LAUNCHER_TOKEN=$work
check() { # check NAME COMMAND...
    local name=$1; shift
    by_name "$name" || return 0
    report "$name" "$@"
}
# needed NAME COMMAND...: a check the others need: when only others were asked for, it still runs
# first, and ends the test if it fails
needed() {
    local name=$1; shift
    by_name "$name" && { report "$name" "$@"; return; }
    ((LIST_ONLY)) && return 0
    "$@" >"$work/last.log" 2>&1 && return 0
    echo "FAIL $name (needed by the checks asked for)"; sed 's/^/  | /' "$work/last.log" | tail -20
    exit 1
}
# last NAME COMMAND...: the check that ends every run, whichever checks were asked for
last() {
    SEEN_NAMES+=("$1")
    by_name_done run.sh check
    report "$@"
}
report() { # report NAME COMMAND...: run COMMAND, say PASS or FAIL
    local name=$1; shift
    if "$@" >"$work/last.log" 2>&1; then
        echo "PASS $name"; passed=$((passed + 1))
    else
        echo "FAIL $name"; sed 's/^/  | /' "$work/last.log" | tail -20; failed=$((failed + 1))
    fi
}
# survivors: processes carrying this test's token, other than this shell
survivors() {
    local f pid n=0
    for f in $(grep -lzs "^TG_LAUNCHER_TOKEN=$work\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}; pid=${pid%/environ}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] && continue
        [[ -e /proc/$pid ]] && n=$((n + 1))
    done
    echo "$n"
}

prefix=$work/prefix
export TREEGUARD_STATE_DIR=$work/state
export PATH=$prefix/bin:$PATH

installed() {
    cmake --install "$BUILD" --prefix "$prefix" >/dev/null &&
        [[ -x $prefix/bin/treeguard ]] &&
        [[ -f $prefix/share/man/man1/treeguard.1 ]] &&
        [[ -f $prefix/share/bash-completion/completions/treeguard ]] &&
        [[ $(command -v treeguard) == "$prefix/bin/treeguard" ]]
}
needed "cmake --install: binary, manual page, bash completion" installed

# complete WORDS...: what the installed completion offers for the last word
complete_words() {
    (
        # shellcheck source=/dev/null
        source "$prefix/share/bash-completion/completions/treeguard"
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _treeguard
        printf '%s\n' "${COMPREPLY[@]}"
    )
}
completion() {
    complete_words treeguard "" | grep -qx run &&
        complete_words treeguard run --bo | grep -qx -- --boundary &&
        [[ $(complete_words treeguard run --boundary "" | sort | tr '\n' ' ') == "auto cgroup pid-namespace process-group " ]] &&
        complete_words treeguard run -s "" | grep -qx KILL &&
        ! complete_words treeguard run -t 5 ls --bo | grep -qx -- --boundary
}
check "bash completion: subcommands, options, values; none of ours after COMMAND" completion
# treeguard timeout: its options before DURATION, COMMAND's name after it, none of ours after COMMAND
completion_timeout() {
    complete_words treeguard timeout --pre | grep -qx -- --preserve-status &&
        complete_words treeguard timeout -k 5 -s INT 1m ech | grep -qx echo &&
        complete_words treeguard timeout -- 10 ech | grep -qx echo &&
        ! complete_words treeguard timeout 10 ls --fo | grep -qx -- --foreground
}
check "bash completion of timeout: options, COMMAND after DURATION" completion_timeout
# every long option run --help prints is offered after "treeguard run --"
completion_complete() {
    local offered missing
    offered=$(complete_words treeguard run --)
    missing=$(comm -23 <(treeguard run --help | grep -oE -- '--[a-z][a-z-]+' | sort -u) <(sort -u <<<"$offered"))
    [[ -z $missing ]] || { echo "not offered: $missing"; return 1; }
}
check "bash completion offers every option of run --help" completion_complete

project() { rm -rf "$work/p"; cp -r "$HERE/project" "$work/p"; }
hello_runs() { [[ $("$1") == "hello from a build launched by treeguard" ]]; }
no_records() { [[ -z $(find "$TREEGUARD_STATE_DIR" -mindepth 1 -name '*.json' 2>/dev/null) ]]; }

for generator in Ninja "Unix Makefiles"; do
    cmake_build() {
        project
        cmake -S "$work/p" -B "$work/p/build" -G "$generator" \
            -DCMAKE_C_COMPILER_LAUNCHER="treeguard;run" >/dev/null &&
            TREEGUARD_TIMEOUT=60s TREEGUARD_KILL_AFTER=2s cmake --build "$work/p/build" -j4 -v &&
            grep -q "treeguard run" "$work/last.log" && hello_runs "$work/p/build/hello" && no_records
    }
    check "CMake ($generator): CMAKE_C_COMPILER_LAUNCHER=treeguard;run, options from the environment" cmake_build
done

make_build() { project && make -C "$work/p" -j4 && hello_runs "$work/p/hello" && no_records; }
check "Makefile: TG = treeguard run --timeout 60s --, make -j4" make_build

ninja_build() { project && ninja -C "$work/p" && hello_runs "$work/p/hello" && no_records; }
check "build.ninja: rule cc with treeguard run" ninja_build

# A compile that hangs: the deadline (from the environment) ends it, ninja fails the step and shows
# treeguard's one line, and nothing of the step is left running.
deadline_explained() {
    project
    cat >"$work/p/hang.ninja" <<'NINJA'
rule hang
  command = treeguard run -- sh -c 'echo compiling; exec sleep 300'
build never.o: hang
NINJA
    local rc=0
    TREEGUARD_TIMEOUT=1 TREEGUARD_KILL_AFTER=1 ninja -C "$work/p" -f hang.ninja || rc=$?
    ((rc != 0)) && grep -q "^compiling" "$work/last.log" &&
        grep -q "^treeguard: deadline 1s passed: COMMAND's tree was sent TERM" "$work/last.log" &&
        [[ $(survivors) == 0 ]]
}
check "a deadline ends a hanging step: ninja fails and shows treeguard's line" deadline_explained

last "nothing this test started is left running" eval '[[ $(survivors) == 0 ]]'
echo "$passed passed, $failed failed"
((failed == 0))
