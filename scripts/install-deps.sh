#!/usr/bin/env bash
# Install what building and testing treeguard needs, from Debian's packages only.
# Idempotent: when every package is already installed it does nothing (no apt-get update),
# so test.sh and demo.sh can call it on every run. Needs root for the install itself.
#
#   bash scripts/install-deps.sh           build and test (what scripts/test.sh needs)
#   bash scripts/install-deps.sh --bench   that, plus what scripts/bench.sh measures with:
#                                          hyperfine, tini, GNU time, ninja (the launcher row),
#                                          perf (CPU time per run), and what section 7's real
#                                          project (libgit2) is fetched and built with
#   bash scripts/install-deps.sh --vm      that, plus what the VM lane (scripts/test-vm.sh) needs:
#                                          qemu, debootstrap (the guest's kernel comes from its
#                                          own linux-image-amd64)
set -euo pipefail

packages=(
  build-essential cmake
  libcli11-dev libfmt-dev doctest-dev nlohmann-json3-dev
  clang libclang-rt-14-dev
  util-linux procps tmux jq ninja-build
  # evidence_controller holds a record's rename with strace (it skips without it)
  strace
  # launcher.sccache builds through sccache with --leftovers outer (it skips without it);
  # launcher.cache_recipes runs README's sccache and ccache recipes
  sccache ccache
  # launcher.test_runners runs README's go test, cargo and pytest recipes (each skips without
  # its runner)
  golang-go cargo python3-pytest
  # The Windows arm: the -posix mingw compiler (std::thread, which doctest
  # needs) and Wine to run its suite; 64-bit only, no wine32. chattr
  # (e2fsprogs) makes its state directory unwritable in one test.
  g++-mingw-w64-x86-64-posix wine wine64 e2fsprogs
)
if [ "${1:-}" = --bench ]; then
  packages+=(hyperfine tini time ninja-build linux-perf curl xz-utils zlib1g-dev libhttp-parser-dev)
fi
if [ "${1:-}" = --vm ]; then
  packages+=(qemu-system-x86 debootstrap)
fi

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  if [ "$status" != "install ok installed" ]; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (e.g. sudo bash scripts/install-deps.sh)" >&2
  exit 1
fi

echo "install-deps: installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y -o DPkg::Lock::Timeout=600 --no-install-recommends "${packages[@]}"
