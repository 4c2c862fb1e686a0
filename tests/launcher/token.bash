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
# private_sccache DIR: sccache's cache in DIR, its server on a port nothing listens on (LISTEN is
# state 0A in /proc/net/tcp*), never
# idle-ending, so that tests running at once share nothing. Its client waits 10 s by default for the
# server it starts; at load average 150 that ran out ("Timed out waiting for server startup" in
# make's -j8 build): sccache's own setting, server_startup_timeout_ms, gives it 120 s.
private_sccache() {
    local dir=$1 port=$((20000 + ($$ * 7 + RANDOM) % 30000))
    while awk 'NR > 1 && $4 == "0A" { print $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null |
        grep -qi ":$(printf '%04X' "$port")\$"; do
        port=$((port + 1))
    done
    mkdir -p "$dir"
    printf 'server_startup_timeout_ms = 120000\n' >"$dir.conf.toml"
    export SCCACHE_DIR=$dir SCCACHE_SERVER_PORT=$port SCCACHE_IDLE_TIMEOUT=0 SCCACHE_CONF=$dir.conf.toml
}
