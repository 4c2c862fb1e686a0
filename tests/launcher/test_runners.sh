#!/usr/bin/env bash
# The test-runner recipes of the README, run for real: a suite of two tests, one clean and one that
# leaves a server listening on a TCP port (its stdio on /dev/null, as a daemon's), under each
# runner with treeguard as its launcher (--leftovers fail). Exactly the leaking test (or, where
# the runner judges a whole session, the session) fails, and the port is named in the output.
#   tests/launcher/test_runners.sh BUILD_DIR ctest|ctest-launcher|go|cargo|pytest|github-actions
# Each recipe is also looked for, word for word, in the README: the test runs what it shows.
# A runner that is not installed is a skip (exit 77) with its reason.
set -u
BUILD=${1:?build directory}
RUNNER=${2:?runner}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE=$(cd "$HERE/../.." && pwd)
TREEGUARD=$(cd "$BUILD" && pwd)/treeguard
[[ -x $TREEGUARD ]] || { echo "treeguard not found in $BUILD" >&2; exit 2; }
skip() { echo "SKIP: $*"; exit 77; }
command -v python3 >/dev/null || skip "python3 (the leaking test's server) is not installed"

work=$(mktemp -d /tmp/tg-runners.XXXXXX)
chmod 755 "$work"
cg_parent=""
failed=0
TOKEN_NAME=TG_RUNNERS_TOKEN
# shellcheck source=token.bash
source "$HERE/token.bash"
# processes this test started carry its token; nothing else is touched
trap token_cleanup EXIT
export TG_RUNNERS_TOKEN=$work
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }
show() { sed 's/^/  | /' "$1" | tail -n "${2:-40}"; }

# The recipes call `treeguard` by name, as the README does.
mkdir "$work/bin"
ln -s "$TREEGUARD" "$work/bin/treeguard"
export PATH=$work/bin:$PATH
export TREEGUARD_STATE_DIR=$work/state
unset TREEGUARD_LEFTOVERS TREEGUARD_TIMEOUT TREEGUARD_KILL_AFTER TREEGUARD_SIGNAL
# The strongest boundary, in a cgroup parent of this test's own where there is one.
mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
if (($(id -u) == 0)) && [[ -n $mount && -w $mount ]] && mkdir "$mount/tg-runners-${work##*.}"; then
    cg_parent=$mount/tg-runners-${work##*.}
    export TREEGUARD_BOUNDARY=cgroup TREEGUARD_CGROUP_PARENT=$cg_parent
else
    export TREEGUARD_BOUNDARY=process-group
fi
echo "boundary: $TREEGUARD_BOUNDARY"

# The leaking test's server: listens on a port of the kernel's choosing, writes it to the file
# named by its argument (whole, by a rename), and stays.
cat >"$work/listen.py" <<'EOF'
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(3600)
EOF
export LEAK_SERVER=$work/listen.py LEAK_PORT_FILE=$work/port
# The same for a test written in shell: started in the background, stdio on /dev/null; the test
# ends once the port is written (bounded: 60 s).
cat >"$work/leak.sh" <<'EOF'
python3 "$LEAK_SERVER" "$LEAK_PORT_FILE" </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s "$LEAK_PORT_FILE" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$LEAK_PORT_FILE" ]
EOF

# in_readme LINE: the README shows the recipe word for word
in_readme() {
    if grep -qF -- "$1" "$SOURCE/README.md"; then pass "the README shows: $1"
    else fail "the README does not show: $1"; fi
}
# port_named OUTPUT: the leaking test's port is named in the runner's output
port_named() {
    local port
    port=$(cat "$LEAK_PORT_FILE" 2>/dev/null)
    if [[ -z $port ]]; then fail "the leaking test wrote no port"; show "$1"; return; fi
    if grep -qF "listening on 127.0.0.1:$port" "$1"; then pass "the output names the port (127.0.0.1:$port)"
    else fail "the output does not name the port 127.0.0.1:$port"; show "$1"; fi
}
# expect_status WHAT GOT WANTED OUTPUT
expect_status() {
    if [[ $2 == "$3" ]]; then pass "$1 exits $3"; else fail "$1 exits $2, expected $3"; show "$4"; fi
}
# expect_line WHAT PATTERN OUTPUT: a line of OUTPUT matches the extended regex PATTERN
expect_line() {
    if grep -qE -- "$2" "$3"; then pass "$1"; else fail "$1 (no line matches /$2/)"; show "$3"; fi
}
expect_no_line() {
    if ! grep -qE -- "$2" "$3"; then pass "$1"; else fail "$1 (a line matches /$2/)"; show "$3"; fi
}

# --- CTest: the test command's prefix (any CMake), or CMAKE_TEST_LAUNCHER (CMake 3.29+) ---------
ctest_project() { # ctest_project DIR: tests `clean` and `leaks_a_server`, each a C program
    mkdir -p "$1"
    cat >"$1/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(leaks C)
enable_testing()
set(TEST_LAUNCHER "" CACHE STRING "a command that runs each test")
add_executable(clean_test clean.c)
add_executable(leak_test leak.c)
add_test(NAME clean COMMAND ${TEST_LAUNCHER} $<TARGET_FILE:clean_test>)
add_test(NAME leaks_a_server COMMAND ${TEST_LAUNCHER} $<TARGET_FILE:leak_test> ${LEAK_SH})
EOF
    echo 'int main(void) { return 0; }' >"$1/clean.c"
    printf '%s\n' '#include <unistd.h>' \
        'int main(int argc, char **argv) { execl("/bin/sh", "sh", argv[1], (char *)0); return 127; }' \
        >"$1/leak.c"
}
# ctest_judged OUTPUT STATUS: exactly leaks_a_server failed, and said why
ctest_judged() {
    expect_status "ctest" "$2" 8 "$1"
    expect_line "ctest: leaks_a_server failed" '^[[:space:]]*[0-9]+ - leaks_a_server \(Failed\)' "$1"
    expect_no_line "ctest: clean did not fail" '^[[:space:]]*[0-9]+ - clean \(' "$1"
    expect_line "ctest: 1 test of 2 failed" 'tests passed, 1 tests failed out of 2' "$1"
    port_named "$1"
}
# ctest_suite CACHE_ENTRY: the project configured with CACHE_ENTRY (the launcher), built, its
# tests run by ctest and judged
ctest_suite() {
    local status
    cmake -S "$work/p" -B "$work/p/build" -DLEAK_SH="$work/leak.sh" "$1" >"$work/configure.log" 2>&1 &&
        cmake --build "$work/p/build" >>"$work/configure.log" 2>&1 ||
        { fail "the project does not build"; show "$work/configure.log"; return; }
    ctest --test-dir "$work/p/build" --output-on-failure </dev/null >"$work/out" 2>&1
    status=$?
    ctest_judged "$work/out" "$status"
}
run_ctest() {
    command -v cmake >/dev/null && command -v cc >/dev/null || skip "cmake or cc is not installed"
    in_readme 'add_test(NAME my_test COMMAND ${TEST_LAUNCHER} $<TARGET_FILE:my_test>)'
    in_readme 'cmake -S . -B build -DTEST_LAUNCHER="treeguard;run;--leftovers;fail;--"'
    ctest_project "$work/p"
    ctest_suite -DTEST_LAUNCHER="treeguard;run;--leftovers;fail;--"
}
run_ctest_launcher() {
    command -v cmake >/dev/null && command -v cc >/dev/null || skip "cmake or cc is not installed"
    local version
    version=$(cmake --version | awk 'NR == 1 { print $3 }')
    printf '%s\n' 3.29 "$version" | sort -V -C ||
        skip "CMake $version is older than 3.29, which brought CMAKE_TEST_LAUNCHER; the test command's prefix is the recipe here (launcher.test_runners.ctest)"
    in_readme 'cmake -S . -B build -DCMAKE_TEST_LAUNCHER="treeguard;run;--leftovers;fail;--"'
    ctest_project "$work/p"
    sed -i 's/${TEST_LAUNCHER} //' "$work/p/CMakeLists.txt"
    ctest_suite -DCMAKE_TEST_LAUNCHER="treeguard;run;--leftovers;fail;--"
}

# --- go test -exec: each package's test binary is one run ------------------------------------------
run_go() {
    command -v go >/dev/null || skip "go is not installed (Debian: golang-go)"
    local recipe='go test -exec "treeguard run --leftovers fail --" ./...' status
    in_readme "$recipe"
    mkdir -p "$work/g/clean" "$work/g/leaky"
    printf 'module example.com/leaks\n\ngo 1.18\n' >"$work/g/go.mod"
    cat >"$work/g/clean/clean_test.go" <<'EOF'
package clean

import "testing"

func TestClean(t *testing.T) {}
EOF
    cat >"$work/g/leaky/leaky_test.go" <<'EOF'
package leaky

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestLeavesAServer(t *testing.T) {
	server := exec.Command("python3", os.Getenv("LEAK_SERVER"), os.Getenv("LEAK_PORT_FILE"))
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 600; i++ {
		if data, err := os.ReadFile(os.Getenv("LEAK_PORT_FILE")); err == nil && len(data) > 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the server wrote no port")
}
EOF
    (cd "$work/g" && export GOCACHE=$work/gocache GOPATH=$work/gopath GOPROXY=off GOFLAGS=-count=1 &&
        eval "$recipe") </dev/null >"$work/out" 2>&1
    status=$?
    expect_status "go test" "$status" 1 "$work/out"
    expect_line "go test: the leaky package failed" '^FAIL[[:space:]]+example.com/leaks/leaky' "$work/out"
    expect_line "go test: the clean package passed" '^ok[[:space:]]+example.com/leaks/clean' "$work/out"
    port_named "$work/out"
}

# --- cargo: target.<triple>.runner, each test binary is one run --------------------------------------
run_cargo() {
    command -v cargo >/dev/null && command -v rustc >/dev/null || skip "cargo is not installed (Debian: cargo)"
    local triple status
    triple=$(rustc -vV | sed -n 's/^host: //p')
    in_readme 'runner = ["treeguard", "run", "--leftovers", "fail", "--"]'
    mkdir -p "$work/c/src" "$work/c/tests" "$work/c/.cargo"
    printf '[package]\nname = "leaks"\nversion = "0.1.0"\nedition = "2018"\n\n[lib]\ndoctest = false\n' \
        >"$work/c/Cargo.toml"
    : >"$work/c/src/lib.rs"
    printf '[target.%s]\nrunner = ["treeguard", "run", "--leftovers", "fail", "--"]\n' "$triple" \
        >"$work/c/.cargo/config.toml"
    echo '#[test] fn clean() {}' >"$work/c/tests/clean.rs"
    cat >"$work/c/tests/leaky.rs" <<'EOF'
#[test]
fn leaves_a_server() {
    let port_file = std::env::var("LEAK_PORT_FILE").unwrap();
    std::process::Command::new("python3")
        .args([std::env::var("LEAK_SERVER").unwrap(), port_file.clone()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if std::fs::read_to_string(&port_file).map_or(false, |s| !s.is_empty()) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("the server wrote no port");
}
EOF
    (cd "$work/c" && CARGO_TARGET_DIR=$work/c/target cargo test --offline --no-fail-fast) </dev/null >"$work/out" 2>&1
    status=$?
    expect_status "cargo test" "$status" 101 "$work/out"
    expect_line "cargo test: the leaky test binary failed" "test failed, to rerun pass .--test leaky." "$work/out"
    expect_no_line "cargo test: the clean test binary did not fail" "to rerun pass .--test clean." "$work/out"
    port_named "$work/out"
}

# --- pytest: the whole session is one run; or one run per test ---------------------------------------
run_pytest() {
    command -v pytest >/dev/null || skip "pytest is not installed (Debian: python3-pytest)"
    local session='treeguard run --leftovers fail -- pytest'
    local per_test="pytest --collect-only -q | grep '::' | xargs -d '\\n' -n 1 treeguard run --leftovers fail -- pytest -q"
    local status
    in_readme "$session"
    in_readme "$per_test"
    mkdir -p "$work/py"
    echo 'def test_clean(): pass' >"$work/py/test_clean.py"
    cat >"$work/py/test_leaky.py" <<'EOF'
import os, subprocess, time

def test_leaves_a_server():
    port_file = os.environ["LEAK_PORT_FILE"]
    subprocess.Popen(["python3", os.environ["LEAK_SERVER"], port_file], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            return
        time.sleep(0.1)
    raise AssertionError("the server wrote no port")
EOF
    (cd "$work/py" && eval "$session") </dev/null >"$work/out" 2>&1
    status=$?
    expect_status "the pytest session" "$status" 120 "$work/out"
    expect_line "pytest: both tests passed in the session" '2 passed' "$work/out"
    port_named "$work/out"
    rm -f "$LEAK_PORT_FILE"
    (cd "$work/py" && eval "$per_test") </dev/null >"$work/out" 2>&1
    status=$?
    expect_status "one pytest run per test (xargs)" "$status" 123 "$work/out"
    expect_line "per test: the leaking test is named with its leftover" \
        'treeguard: COMMAND left 1 process behind: .*\(COMMAND: pytest -q test_leaky.py::test_leaves_a_server\)' "$work/out"
    expect_no_line "per test: the clean test left nothing" 'COMMAND left .*test_clean' "$work/out"
    port_named "$work/out"
}

# --- GitHub Actions: a step's shell template ----------------------------------------------------------
# The runner writes the step's `run:` to a file, puts its path in place of {0} and runs the
# template's words: done here the same way.
run_github_actions() {
    local template='shell: treeguard run --leftovers fail -k 1s -- bash --noprofile --norc -eo pipefail {0}'
    local words status
    in_readme "$template"
    step() { # step NAME SCRIPT: the step's status, its output in $work/out
        printf '%s\n' "$2" >"$work/$1.sh"
        read -r -a words <<<"${template#shell: }"
        words=("${words[@]/'{0}'/$work/$1.sh}")
        "${words[@]}" </dev/null >"$work/out" 2>&1
    }
    step clean 'echo building; true'
    status=$?
    expect_status "a clean step" "$status" 0 "$work/out"
    expect_no_line "a clean step: no leftover line" 'treeguard: ' "$work/out"
    step failing 'echo testing; exit 3'
    status=$?
    expect_status "a failing step" "$status" 3 "$work/out"
    step leaky "sh $work/leak.sh"
    status=$?
    expect_status "a step that leaves a server" "$status" 120 "$work/out"
    port_named "$work/out"
}

case $RUNNER in
    ctest) run_ctest ;;
    ctest-launcher) run_ctest_launcher ;;
    go) run_go ;;
    cargo) run_cargo ;;
    pytest) run_pytest ;;
    github-actions) run_github_actions ;;
    *) echo "unknown runner '$RUNNER'" >&2; exit 2 ;;
esac

# Nothing this test started is left running (the servers were the runs' leftovers).
token_pids
if ((${#TOKEN_PIDS[@]} == 0)); then pass "nothing this test started is left running"
else fail "left running: ${TOKEN_PIDS[*]}"; ps -o pid,ppid,args -p "${TOKEN_PIDS[*]}"; fi
exit "$failed"
