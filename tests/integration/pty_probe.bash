# Sourced by run and tests/terminal/run.sh. can_open_pty: a pseudo-terminal can be opened here
# (script(1) runs `true` under one); else 1, and PTY_WHY says why: no script, or its own error (in
# a chroot with /dev bound but no devpts mounted on /dev/pts: "failed to create pseudo-terminal").
can_open_pty() {
    PTY_WHY=""
    if ! command -v script >/dev/null; then
        PTY_WHY="script (util-linux) is not installed: no terminal to run under"
        return 1
    fi
    local err
    if ! err=$(script -qec true /dev/null 2>&1 </dev/null); then
        PTY_WHY="no pseudo-terminal can be opened here (is devpts mounted on /dev/pts?): script says: ${err//$'\n'/ }"
        return 1
    fi
    return 0
}
