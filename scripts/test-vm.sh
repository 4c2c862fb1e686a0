#!/usr/bin/env bash
# The VM lane: the in-VM suites (tests/vm/suites) on a real Debian 12 guest with systemd as PID 1
# and cgroup v2 alone at /sys/fs/cgroup with every controller, booted under qemu.
#
#   bash scripts/test-vm.sh              (as root)
#   bash scripts/test-vm.sh --prepare    only install the tools and build (or find) the cached image
#   bash scripts/test-vm.sh --wait       boot the guest as soon as the image is ready, then read one
#                                        line from stdin before the run disk is made and attached;
#                                        end of input calls the lane off (exit 1, qemu killed).
#                                        scripts/test.sh runs it so: the guest boots while the project
#                                        builds, and gets its disk after the other suites.
#
# Steps: install qemu, debootstrap and e2fsprogs from Debian's packages; build the guest image
# (debootstrap --variant=minbase bookworm, an ext4 image by mkfs.ext4 -d, the guest's own kernel and
# initrd from linux-image-amd64) CACHED in $TG_VM_CACHE (default /var/cache/treeguard-vm) under a
# hash of its recipe; boot it (KVM only when a probe shows a KVM guest actually runs, else TCG)
# until its oneshot unit says on the serial console that it waits for the run disk; put
# build/treeguard, the fixture and the repo's tests/ and scripts/ on that second, per-run disk and
# attach it (qemu's monitor: drive_add, device_add); the guest runs every suite, writes its results
# on the run disk and powers off; read them back (debugfs: no loop device, no mount) and print them.
# Exit: 0 every suite passed; 1 a test failed, the guest did not report, or it hung (its qemu is
# killed when the guest is not up TG_VM_TIMEOUT seconds after its start, or has not powered off
# TG_VM_TIMEOUT seconds after its disk was attached; default 840: a loaded host slows a TCG guest
# many times), or the tools could not be installed or the image built on a host that can run the lane;
# 77 the lane cannot run on this host at all (the reason printed): not x86_64 Linux, not root, no
# Debian packages, no private mount namespace to build the image in.
#
# Environment: TG_VM_SUITES="a b" runs only those suites (tests/vm/suites/NAME.sh);
# TG_VM_CACHE=DIR; TG_VM_TIMEOUT=SECONDS; TG_VM_ACCEL=kvm|tcg skips the probe; TG_VM_KEEP=1 keeps
# the run's work directory (serial log, run disk). See tests/vm/README.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD

log() { echo "test-vm: $*"; }
skip() {
    log "SKIP: $*"
    exit 77
}
fail_lane() {
    log "FAIL: $*"
    exit 1
}
now() { date +%s; }
T_START=$(now)

CACHE=${TG_VM_CACHE:-/var/cache/treeguard-vm}
VM_TIMEOUT=${TG_VM_TIMEOUT:-840}
PREPARE_ONLY=0
WAIT_FOR_GO=0
case ${1:-} in
    --prepare) PREPARE_ONLY=1 ;;
    --wait)
        # the go line comes on this fd; nothing else the lane runs (apt, qemu) reads it
        WAIT_FOR_GO=1
        exec {GO_FD}<&0 </dev/null
        ;;
    "") ;;
    *) echo "usage: bash scripts/test-vm.sh [--prepare | --wait]" >&2; exit 2 ;;
esac
TREEGUARD_BIN=${TREEGUARD:-$REPO/build/treeguard}
FIXTURE_BIN=${TG_FIXTURE:-$REPO/build/tests/integration/tg_fixture}

# The guest's packages: what systemd, a login session and the suites need. Part of the image hash.
GUEST_PACKAGES=(
    systemd-sysv dbus dbus-user-session libpam-systemd
    linux-image-amd64 initramfs-tools
    procps jq
)
GUEST_SUITE=bookworm

# ---------------------------------------------------------------- preconditions
preconditions() {
    [[ $(uname -s) == Linux ]] || skip "not Linux"
    [[ $(uname -m) == x86_64 ]] || skip "the guest is x86_64; this host is $(uname -m)"
    (($(id -u) == 0)) || skip "needs root (debootstrap, and installing qemu)"
    command -v dpkg-query >/dev/null || skip "not a Debian host (no dpkg-query): cannot install qemu/debootstrap"
    # debootstrap mounts /proc and /sys in the target: only a private mount namespace keeps those
    # mounts from propagating to the host's (a chroot whose / is not a mount point cannot make one).
    # Asked before anything is installed, and only when the image must be built.
    if ! image_cached; then
        local err
        err=$(unshare --mount --propagation private sh -c 'mount -t tmpfs none /mnt' 2>&1 </dev/null) ||
            skip "cannot mount in a private mount namespace (${err//$'\n'/ }): debootstrap cannot build the guest image here"
    fi
}

install_tools() {
    # this host can run the lane: a failure to install is a failure, never a skip
    bash scripts/install-deps.sh --vm ||
        fail_lane "could not install qemu-system-x86, debootstrap, e2fsprogs from Debian's packages"
    command -v qemu-system-x86_64 >/dev/null || fail_lane "qemu-system-x86_64 not installed"
    command -v debootstrap >/dev/null || fail_lane "debootstrap not installed"
    command -v debugfs >/dev/null || fail_lane "debugfs (e2fsprogs) not installed"
    local probe_dir probe_img
    probe_dir=$(mktemp -d)
    probe_img=$(mktemp)
    echo ok >"$probe_dir/f"
    if ! mkfs.ext4 -q -F -d "$probe_dir" "$probe_img" 4M >/dev/null 2>&1; then
        rm -rf "$probe_dir" "$probe_img"
        skip "mkfs.ext4 cannot populate an image (-d): e2fsprogs too old"
    fi
    rm -rf "$probe_dir" "$probe_img"
}

# ---------------------------------------------------------------- the guest image (cached)
# the Debian mirror apt is configured with here (deb822 .sources or one-line .list); empty: none
# found, and debootstrap uses its default
apt_mirror() {
    local f uris="" suites="" line
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uris="" suites=""
        while IFS= read -r line || [[ -n $line ]]; do
            case $line in
                URIs:*) read -r uris _ <<<"${line#URIs:}" ;;
                Suites:*) suites=${line#Suites:} ;;
                "")
                    if [[ " $suites " == *" $GUEST_SUITE "* ]]; then echo "$uris"; return; fi
                    uris="" suites=""
                    ;;
            esac
        done <"$f"
        if [[ " $suites " == *" $GUEST_SUITE "* ]]; then echo "$uris"; return; fi
    done
    local re='^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+)'
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -f $f ]] || continue
        while IFS= read -r line; do
            [[ $line =~ $re && ${BASH_REMATCH[3]} == "$GUEST_SUITE" ]] || continue
            echo "${BASH_REMATCH[2]}"
            return
        done <"$f"
    done
}

# image_recipe ROOT: everything done to the debootstrapped tree (its text is part of the hash)
image_recipe() {
    local root=$1
    echo tg-vm >"$root/etc/hostname"
    printf '/dev/vda / ext4 rw,noatime 0 1\n' >"$root/etc/fstab"
    chroot "$root" useradd --create-home --uid 1000 --user-group --shell /bin/bash tg
    mkdir -p "$root/var/lib/systemd/linger"
    : >"$root/var/lib/systemd/linger/tg"
    install -m 0755 "$REPO/tests/vm/image/tg-vm-boot" "$root/usr/local/sbin/tg-vm-boot"
    install -m 0644 "$REPO/tests/vm/image/tg-vm.service" "$root/etc/systemd/system/tg-vm.service"
    ln -sf /etc/systemd/system/tg-vm.service "$root/etc/systemd/system/multi-user.target.wants/tg-vm.service"
    ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
    # no login prompts, no timers: the guest only runs the suites
    local unit
    for unit in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
        e2scrub_all.timer fstrim.timer systemd-tmpfiles-clean.timer dpkg-db-backup.timer; do
        ln -sf /dev/null "$root/etc/systemd/system/$unit"
    done
    chroot "$root" apt-get clean
    rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*
}

image_hash() {
    {
        echo "$GUEST_SUITE ${GUEST_PACKAGES[*]}"
        declare -f image_recipe
        cat "$REPO/tests/vm/image/tg-vm-boot" "$REPO/tests/vm/image/tg-vm.service"
    } | sha256sum | cut -c1-16
}

# safe_dir DIR: DIR is a real directory owned by root, not group/world-writable, not a symlink
safe_dir() {
    [[ -d $1 && ! -L $1 ]] || return 1
    [[ $(stat -c '%u %a' "$1") =~ ^0\ [0-7][0-5][0-5]$ ]]
}

build_image() { # build_image DEST_DIR
    local dest=$1 tmp mirror rc=0
    tmp=$(mktemp -d "$CACHE/build.XXXXXX")
    mirror=$(apt_mirror)
    log "building the guest image (debootstrap $GUEST_SUITE${mirror:+ from the mirror apt uses}); cached afterwards"
    # a private mount namespace: debootstrap's /proc and /sys mounts in the target never leak,
    # even when it is killed
    if ! timeout -k 10 900 unshare --mount --propagation private \
        debootstrap --variant=minbase --include="$(IFS=,; echo "${GUEST_PACKAGES[*]}")" \
        "$GUEST_SUITE" "$tmp/root" ${mirror:+"$mirror"} >"$tmp/debootstrap.log" 2>&1; then
        log "FAIL: debootstrap failed; its log ends:"
        tail -n 20 "$tmp/debootstrap.log" | sed 's/^/  /'
        tail -n 20 "$tmp/root/debootstrap/debootstrap.log" 2>/dev/null | sed 's/^/  /'
        rm -rf --one-file-system "$tmp"
        return 1
    fi
    image_recipe "$tmp/root" || rc=$?
    local kernels initrds kernel initrd
    kernels=("$tmp"/root/boot/vmlinuz-*) initrds=("$tmp"/root/boot/initrd.img-*)
    kernel=${kernels[-1]} initrd=${initrds[-1]}
    if ((rc != 0)) || [[ ! -f $kernel || ! -f $initrd ]]; then
        log "FAIL: the image recipe failed (rc $rc) or left no kernel/initrd in /boot"
        rm -rf --one-file-system "$tmp"
        return 1
    fi
    cp "$kernel" "$tmp/vmlinuz"
    cp "$initrd" "$tmp/initrd.img"
    local mb
    mb=$(du -sm "$tmp/root" | cut -f1)
    if ! mkfs.ext4 -q -F -L tgroot -d "$tmp/root" "$tmp/root.img" "$((mb + 512))M" >"$tmp/mkfs.log" 2>&1; then
        log "FAIL: mkfs.ext4 -d failed:"
        sed 's/^/  /' "$tmp/mkfs.log"
        rm -rf --one-file-system "$tmp"
        return 1
    fi
    rm -rf --one-file-system "$tmp/root"
    mv "$tmp" "$dest"
}

# image_cached: the image for this recipe's hash is in the cache
image_cached() {
    local dir=$CACHE/image-$(image_hash)
    [[ -f $dir/root.img && -f $dir/vmlinuz && -f $dir/initrd.img ]]
}

# ensure_image: IMAGE_DIR holds root.img, vmlinuz, initrd.img for this recipe's hash
ensure_image() {
    mkdir -p "$CACHE"
    chmod 755 "$CACHE"
    safe_dir "$CACHE" || { log "FAIL: cache $CACHE is not a root-owned directory (or is writable by others)"; exit 1; }
    IMAGE_DIR=$CACHE/image-$(image_hash)
    local t0
    t0=$(now)
    # one builder at a time; a concurrent lane waits for it and then uses its image
    exec {lock_fd}>"$CACHE/lock"
    flock "$lock_fd"
    if [[ -f $IMAGE_DIR/root.img && -f $IMAGE_DIR/vmlinuz && -f $IMAGE_DIR/initrd.img ]]; then
        log "guest image cached: $IMAGE_DIR"
    else
        rm -rf --one-file-system "$IMAGE_DIR"
        build_image "$IMAGE_DIR" || exit 1
        log "guest image built in $(($(now) - t0))s: $IMAGE_DIR"
        # older images (another recipe) are not kept
        local d
        for d in "$CACHE"/image-*; do
            [[ $d == "$IMAGE_DIR" ]] || rm -rf --one-file-system "$d"
        done
    fi
    flock -u "$lock_fd"
}

# ---------------------------------------------------------------- the run disk
make_run_disk() {
    # the guest runs the host's binaries: treeguard is static; the fixture needs a glibc no newer
    # than the guest's (Debian 12's). Looked for only now: with --wait they are built meanwhile.
    [[ -x $TREEGUARD_BIN ]] || { log "FAIL: $TREEGUARD_BIN not built (scripts/build.sh)"; return 1; }
    [[ -x $FIXTURE_BIN ]] || { log "FAIL: $FIXTURE_BIN not built (scripts/build.sh)"; return 1; }
    local stage=$WORK/stage
    mkdir -p "$stage/bin" "$stage/src" "$stage/results"
    install -m 0755 "$TREEGUARD_BIN" "$stage/bin/treeguard"
    install -m 0755 "$FIXTURE_BIN" "$stage/bin/tg_fixture"
    cp -r "$REPO/tests" "$REPO/scripts" "$stage/src/"
    chmod -R a+rX "$stage"
    chmod 1777 "$stage/results"
    echo "${TG_VM_SUITES:-}" >"$stage/suites"
    local mb
    mb=$(du -sm "$stage" | cut -f1)
    mkfs.ext4 -q -F -L tgrun -d "$stage" "$WORK/run.img" "$((mb + 128))M" >"$WORK/mkfs.log" 2>&1 ||
        { log "FAIL: mkfs.ext4 -d for the run disk:"; cat "$WORK/mkfs.log"; return 1; }
}

# ---------------------------------------------------------------- qemu
QEMU_PID=""
kill_qemu() {
    if [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
        kill -KILL "$QEMU_PID" 2>/dev/null || true
        wait "$QEMU_PID" 2>/dev/null || true
    fi
    QEMU_PID=""
}

# qemu_wait SECONDS: wait for the qemu we started to exit; 1 (and it is killed) when it did not
qemu_wait() {
    local deadline=$(($(now) + $1))
    while kill -0 "$QEMU_PID" 2>/dev/null; do
        if (($(now) >= deadline)); then
            kill_qemu
            return 1
        fi
        sleep 1
    done
    wait "$QEMU_PID" 2>/dev/null || true
    QEMU_PID=""
    return 0
}

# kvm_works: a KVM guest boots its kernel to the root mount (it panics: no initrd) within 10s
# (where nested virtualisation hangs KVM guests it never does)
kvm_works() {
    [[ -c /dev/kvm && -r /dev/kvm && -w /dev/kvm ]] || return 1
    local out=$WORK/kvm-probe.log
    qemu-system-x86_64 -accel kvm -m 256 -nodefaults -display none -no-reboot \
        -serial "file:$out" -kernel "$IMAGE_DIR/vmlinuz" \
        -append "console=ttyS0 panic=-1" </dev/null >/dev/null 2>&1 &
    QEMU_PID=$!
    local deadline=$(($(now) + 10))
    while (($(now) < deadline)) && kill -0 "$QEMU_PID" 2>/dev/null; do
        grep -q "Kernel panic\|VFS: Unable" "$out" 2>/dev/null && break
        sleep 1
    done
    kill_qemu
    grep -q "Kernel panic\|VFS: Unable" "$out" 2>/dev/null
}

choose_accel() {
    case ${TG_VM_ACCEL:-} in
        kvm) ACCEL=(-accel kvm -cpu host) ;;
        tcg) ACCEL=(-accel tcg,thread=multi) ;;
        *)
            if kvm_works; then
                ACCEL=(-accel kvm -cpu host)
            else
                ACCEL=(-accel tcg,thread=multi)
            fi
            ;;
    esac
    log "accelerator: ${ACCEL[1]}"
}

# show_guest_end: after a failure, the end of what qemu and the guest's serial console said
show_guest_end() {
    log "qemu said:"
    tail -n 10 "$WORK/qemu.out" | sed 's/^/  /'
    log "its serial console ends:"
    tail -n 30 "$WORK/serial.log" | sed 's/^/  /'
}

# boot_guest: start the guest with its root disk and a monitor on a FIFO, and wait (VM_TIMEOUT)
# until it says on the serial console that it waits for its run disk
boot_guest() {
    local serial=$WORK/serial.log
    mkfifo -m 600 "$WORK/monitor"
    # held open read-write: qemu's stdin never sees an end while the lane lives
    exec {MONITOR_FD}<>"$WORK/monitor"
    : >"$serial"
    # the root image is shared by concurrent lanes: snapshot=on keeps it unchanged. no_timer_check:
    # on a loaded host a TCG guest's timer may not tick within the kernel's IO-APIC check, which
    # then panics at boot ("IO-APIC + timer doesn't work!", seen beside eight busy builds)
    qemu-system-x86_64 "${ACCEL[@]}" -smp 2 -m 1536 -nodefaults -display none -no-reboot \
        -serial "file:$serial" -nic none -monitor stdio \
        -drive "file=$IMAGE_DIR/root.img,format=raw,if=virtio,snapshot=on" \
        -kernel "$IMAGE_DIR/vmlinuz" -initrd "$IMAGE_DIR/initrd.img" \
        -append "root=/dev/vda rw console=ttyS0 panic=-1 no_timer_check fsck.mode=skip systemd.show_status=0 quiet loglevel=3" \
        <"$WORK/monitor" >"$WORK/qemu.out" 2>&1 &
    QEMU_PID=$!
    local t0 deadline
    t0=$(now)
    deadline=$((t0 + VM_TIMEOUT))
    log "booting the guest (qemu pid $QEMU_PID, killed if not up within ${VM_TIMEOUT}s)"
    until grep -q 'tg-vm: the guest is up' "$serial"; do
        if ! kill -0 "$QEMU_PID" 2>/dev/null || (($(now) >= deadline)); then
            kill_qemu
            log "FAIL: the guest did not come up within ${VM_TIMEOUT}s (or qemu exited)"
            show_guest_end
            return 1
        fi
        # with --wait, input before the guest is up can only be its end: test.sh ended early
        if ((WAIT_FOR_GO)) && read -t 0 -u "$GO_FD"; then
            log "FAIL: called off while the guest booted (end of input)"
            return 1
        fi
        sleep 1
    done
    # paused (qemu's monitor: stop) until its disk comes: an idle TCG guest still took 17% of a
    # core here (10.4 s of CPU in 60 s), which the host's own suites need; its clocks stop with it
    printf 'stop\n' >&"$MONITOR_FD"
    log "the guest is up in $(($(now) - t0))s; paused until its run disk is attached"
}

# run_guest: resume the guest and attach the run disk through the monitor; wait (VM_TIMEOUT) for
# it to run the suites and power off
run_guest() {
    printf 'cont\n' >&"$MONITOR_FD"
    printf 'drive_add 0 if=none,id=run,format=raw,file=%s\n' "$WORK/run.img" >&"$MONITOR_FD"
    printf 'device_add virtio-blk-pci,drive=run,id=run-disk\n' >&"$MONITOR_FD"
    local t0
    t0=$(now)
    log "run disk attached; the guest runs the suites (qemu killed after ${VM_TIMEOUT}s)"
    if ! qemu_wait "$VM_TIMEOUT"; then
        log "FAIL: the guest did not power off within ${VM_TIMEOUT}s: qemu killed"
        show_guest_end
        return 1
    fi
    log "guest ran and powered off in $(($(now) - t0))s"
}

# ---------------------------------------------------------------- results
read_results() {
    local log_file=$WORK/results.log summary
    debugfs -R "cat /results/log" "$WORK/run.img" >"$log_file" 2>/dev/null || true
    if [[ ! -s $log_file ]]; then
        log "FAIL: the guest wrote no results; serial console ends:"
        tail -n 40 "$WORK/serial.log" | sed 's/^/  /'
        return 1
    fi
    cat "$log_file"
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log_file" | tail -n 1 || true)
    if [[ -z $summary ]]; then
        log "FAIL: no summary line from the guest (it stopped before the end); serial console ends:"
        tail -n 40 "$WORK/serial.log" | sed 's/^/  /'
        return 1
    fi
    if grep -q '^FAIL ' "$log_file" || [[ $summary != *" 0 failed,"* ]]; then
        log "FAIL: $summary"
        return 1
    fi
    log "$summary"
}

cleanup() {
    kill_qemu
    if [[ ${TG_VM_KEEP:-0} == 1 ]]; then
        log "kept $WORK"
    elif [[ -n ${WORK:-} ]]; then
        rm -rf --one-file-system "$WORK"
    fi
}

preconditions
install_tools
ensure_image
if ((PREPARE_ONLY)); then
    log "prepared in $(($(now) - T_START))s"
    exit 0
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tg-vm.XXXXXX")
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
choose_accel
boot_guest || exit 1
if ((WAIT_FOR_GO)); then
    read -r -u "$GO_FD" _ || { log "FAIL: called off before the run disk was attached (end of input)"; exit 1; }
fi
status=0
make_run_disk || status=1
((status == 0)) && { run_guest || status=1; }
((status == 0)) && { read_results || status=1; }
log "lane took $(($(now) - T_START))s"
exit "$status"
