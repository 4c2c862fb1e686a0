# by_name.bash: one test of a shell suite run alone, the same way in every runner that sources it
# (tests/integration/run, tests/terminal/run.sh, tests/launcher/run.sh, tests/timeout/compare.sh).
# The runner takes NAME... after its own arguments: only the tests of those names run; a NAME no
# test has is an error (exit 2) that lists the names; `--list` alone lists them and runs none.
# tests/by_name_check.sh checks a runner against this.

# by_name_args ARGS...: the names asked for (none: every test), or --list
WANTED=()
MATCHED=()
SEEN_NAMES=()
LIST_ONLY=0
by_name_args() {
    WANTED=("$@")
    if [[ ${WANTED[*]} == --list ]]; then
        LIST_ONLY=1
        WANTED=()
    fi
}

# by_name NAME [ALIAS...]: whether the test NAME (also asked for as an ALIAS, the way its PASS
# line prints it) is to run; remembers NAME for the lists
by_name() {
    local i alias hit=1
    SEEN_NAMES+=("$1")
    ((LIST_ONLY)) && return 1
    ((${#WANTED[@]} == 0)) && return 0
    for i in "${!WANTED[@]}"; do
        for alias in "$@"; do
            [[ ${WANTED[i]} == "$alias" ]] && MATCHED[i]=1 hit=0
        done
    done
    return $hit
}

# by_name_done WHO WHAT [WHERE]: after the last test: --list's list (exit 0), or, for each name
# asked for that no test has, "WHO: no WHAT named 'NAME' WHERE" and the names (exit 2)
by_name_done() {
    local i unknown=0 where=${3:+ $3}
    if ((LIST_ONLY)); then
        printf '%s\n' "${SEEN_NAMES[@]}"
        exit 0
    fi
    for i in "${!WANTED[@]}"; do
        [[ -n ${MATCHED[i]:-} ]] && continue
        echo "$1: no $2 named '${WANTED[i]}'$where" >&2
        unknown=1
    done
    ((unknown)) || return 0
    echo "$1: the ${2}s$where:" >&2
    printf '  %s\n' "${SEEN_NAMES[@]}" >&2
    exit 2
}
