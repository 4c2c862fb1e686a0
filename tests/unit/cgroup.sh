#!/bin/sh
# cgroup.sh UNIT_TESTS ARGS...: run the unit cases that need a writable cgroup2 mount (as root), or
# say why not and exit 77 (a ctest skip, never a pass).
mount=$(awk '{ for (i = 1; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
    /proc/self/mountinfo | head -n 1)
if [ "$(id -u)" != 0 ]; then
    echo "SKIP unit.cgroup: needs root (it creates cgroups)"
    exit 77
fi
if [ -z "$mount" ]; then
    echo "SKIP unit.cgroup: no cgroup2 mount in /proc/self/mountinfo"
    exit 77
fi
if [ ! -w "$mount/cgroup.procs" ]; then
    echo "SKIP unit.cgroup: cgroup2 mount $mount is not writable"
    exit 77
fi
exec "$@"
