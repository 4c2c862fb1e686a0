#!/usr/bin/env bash
# THE test command: set up, build, check the platform seam, run every test.
# Exits 0 only if the Linux, the Windows (Wine) and the VM lane's suites pass. The VM lane may
# skip only where this machine cannot run it at all (test-vm.sh's 77: see tests/vm/README.md); its
# reason is then the last line printed. A failure to install its tools or to prepare its image
# fails this script.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh
# The VM lane starts now: its guest image (debootstrap, minutes when not cached) is built and the
# guest boots (a TCG guest beside a busy machine: two minutes) while the project compiles; the
# guest is then paused until its run disk is attached, after the Linux suites (a line on the lane's
# stdin): its suites run while the Windows arm is tested. Its start is done before any test
# starts: the takedown and liveness suites hold speed targets on an otherwise idle machine (they
# run alone, RUN_SERIAL), and an image build beside them (dpkg, mkfs) made the guardian's
# 20,000-member verdict 3.3 s -> 5.7-6.4 s here. When this script ends early (set -e), the lane's
# stdin ends and it kills its guest.
mkdir -p build
vm_log=build/test-vm.log
exec {vm_go}> >(exec bash scripts/test-vm.sh --wait >"$vm_log" 2>&1)
vm_pid=$!
# The Windows arm's cross-build goes beside the Linux build: the same work, done while the CPU is
# ours anyway (beside a busy machine, two builds at once get a larger share of it); its output is
# printed after the Linux build's, and a failure fails the arm when it is tested below.
windows_build_log=build/test-windows-build.log
bash scripts/test-windows.sh --build-only >"$windows_build_log" 2>&1 &
windows_build_pid=$!
bash scripts/build.sh
windows_build_status=0
wait "$windows_build_pid" || windows_build_status=$?
sed 's/^/  (windows build) /' "$windows_build_log"
bash scripts/check_seams.sh
# the VM lane's guest is up (or the lane has ended: a skip or a failure, told below)
while kill -0 "$vm_pid" 2>/dev/null && ! grep -q '^test-vm: the guest is up' "$vm_log"; do
  sleep 1
done
vm_lines_shown=$(wc -l <"$vm_log")
sed 's/^/  (vm lane) /' "$vm_log"

status=0
ctest --test-dir build --output-on-failure -j2 2>&1 | tee build/ctest-output.txt || status=$?
# ctest says only "Skipped": print each skipped test's reason
bash scripts/ctest-skips.sh build/ctest-output.txt build/Testing/Temporary/LastTest.log
# Then the VM lane's suites in its guest (the line on its stdin; it fails harmlessly when the lane
# has already ended: SIGPIPE ignored in that subshell only), beside the Windows arm's: beside a
# busy machine the two took 100 s and 430-520 s one after the other.
( trap '' PIPE; echo go >&"$vm_go" ) 2>/dev/null || true
exec {vm_go}>&-
# The Windows arm, cross-built and run under Wine (its own build dir).
windows_status=0
if [ "$windows_build_status" -ne 0 ]; then
  echo "test.sh: the Windows arm's build failed (exit $windows_build_status; its log is above)"
  windows_status=$windows_build_status
else
  bash scripts/test-windows.sh || windows_status=$?
fi
if [ "$status" -eq 0 ]; then
  status=$windows_status
fi
# Then the VM lane's output since the guest was up, as it comes (77 = skipped).
tail -n +"$((vm_lines_shown + 1))" --pid="$vm_pid" -f "$vm_log"
vm_status=0
wait "$vm_pid" || vm_status=$?
vm_skipped=""
if [ "$vm_status" -eq 77 ]; then
  vm_skipped=$(sed -n 's/^test-vm: SKIP: //p' "$vm_log" | tail -n 1)
  vm_skipped=${vm_skipped:-"(test-vm.sh printed no reason)"}
  vm_status=0
fi
if [ "$status" -eq 0 ]; then
  status=$vm_status
fi
if [ -n "$vm_skipped" ]; then
  echo "test.sh: the VM lane was SKIPPED: this machine cannot run it: $vm_skipped"
fi
echo "test.sh: exit $status"
exit "$status"
