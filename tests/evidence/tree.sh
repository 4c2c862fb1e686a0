#!/bin/sh
# tree.sh FIXTURE [FIXTURE OPTIONS...]: one run's worth of awkward shapes at once, for the
# evidence suites. The shell records itself ("pid starttime") in $TG_PIDFILE, starts three
# tg_fixture shapes (grandchild: a background grandchild; setsid: a setsid'd child; daemon: a
# double-fork daemon), each with its own pid file, waits (bounded poll, 10s) until all three say
# ready, appends their pid lines to $TG_PIDFILE, then writes "ready" there and waits for them.
fx=$1
shift
main_pf=$TG_PIDFILE
# field 22 of /proc/$$/stat
st=$(sed 's/.*) //' /proc/$$/stat | cut -d' ' -f20)
echo "$$ $st" >>"$main_pf"
for shape in grandchild setsid daemon; do
    : >"$main_pf.$shape"
    TG_PIDFILE=$main_pf.$shape "$fx" "$@" "$shape" </dev/null >/dev/null 2>&1 &
done
n=0
while [ $n -lt 1000 ]; do
    if grep -qx ready "$main_pf.grandchild" && grep -qx ready "$main_pf.setsid" &&
        grep -qx ready "$main_pf.daemon"; then
        for shape in grandchild setsid daemon; do
            grep -v '^ready$' "$main_pf.$shape" >>"$main_pf"
        done
        echo ready >>"$main_pf"
        # forever, without a child that would have to be tracked: wait for the background jobs
        wait
        exit 0
    fi
    n=$((n + 1))
    sleep 0.01
done
echo "tree.sh: shapes not ready after 10s" >&2
exit 99
