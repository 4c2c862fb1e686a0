#!/usr/bin/env bash
# `cmake --install BUILD` (no --strip) installs treeguard without debug info: no .debug_info
# section, and under 8 MiB (the RelWithDebInfo build's own binary is about 40 MB).
#   tests/launcher/install_size.sh BUILD_DIR
set -u
build=${1:?build directory}
prefix=$(mktemp -d /tmp/tg-install.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
if ! cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1; then
    cat "$prefix.log"; rm -f "$prefix.log"; echo "FAIL: cmake --install"; exit 1
fi
rm -f "$prefix.log"
bin=$prefix/bin/treeguard
[[ -x $bin ]] || { echo "FAIL: no $bin"; exit 1; }
size=$(stat -c %s "$bin")
echo "installed treeguard: $size bytes (build tree: $(stat -c %s "$build/treeguard") bytes)"
status=0
if readelf -S "$bin" 2>/dev/null | grep -q '\.debug_info'; then
    echo "FAIL: the installed binary carries debug info"; status=1
fi
if ((size > 8 * 1024 * 1024)); then
    echo "FAIL: the installed binary is $size bytes, over 8 MiB"; status=1
fi
"$bin" --version >/dev/null || { echo "FAIL: the installed binary does not run"; status=1; }
((status == 0)) && echo "PASS: installed stripped"
exit "$status"
