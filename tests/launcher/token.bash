# token.bash: the processes a launcher test started, known by a token in their environment: the
# test exports TOKEN_NAME=$work (its own directory, so never another test's) before it starts
# anything, and sets TOKEN_NAME to that variable's name before sourcing this.
# token_pids: TOKEN_PIDS, the processes (not zombies) carrying the token, other than this shell
token_pids() {
    local f pid
    TOKEN_PIDS=()
    for f in $(grep -lzs "^$TOKEN_NAME=$work\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}; pid=${pid%/environ}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == [ZX] || ! -e /proc/$pid ]] && continue
        TOKEN_PIDS+=("$pid")
    done
}
# kill_token_pids: SIGKILL to each of them (the cleanup; nothing else is touched)
kill_token_pids() {
    local pid
    token_pids
    for pid in "${TOKEN_PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; done
}
# token_cleanup: the launcher tests' EXIT trap: their processes killed, the cgroup parent
# $cg_parent (when the test made one) and its leaves removed, $work removed
token_cleanup() {
    kill_token_pids
    if [[ -n ${cg_parent:-} && -d $cg_parent ]]; then
        find "$cg_parent" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
        rmdir "$cg_parent" 2>/dev/null || echo "could not remove $cg_parent" >&2
    fi
    rm -rf "$work"
}
