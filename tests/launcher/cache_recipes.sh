#!/usr/bin/env bash
# README's compiler-cache recipes, run as README writes them: the test reads them from README's
# block (the commands, and the Makefile and build.ninja lines its comments show) and runs each, with
# CACHE, on a project of C and C++ files (tests/launcher/mixed_project):
#   - CMake: the other cache's configure line first, then CACHE's over the same build directory
#     (both launcher entries replaced), then the build line;
#   - make: a Makefile of README's rules, then CACHE's make line;
#   - ninja: a build.ninja of README's rules (cache = CACHE), then the ninja line.
# Each recipe passes when the program it built runs, every C and C++ file's compile went through
# `treeguard run --leftovers outer -- CACHE` (a `treeguard` first on PATH notes each call and execs
# the build's), the cache holds an entry for every file, and nothing the recipe started is left
# once its run ends. A recipe missing a launcher (the C one, say) fails: a file compiled without it.
#   tests/launcher/cache_recipes.sh BUILD_DIR sccache|ccache
set -u
BUILD=${1:?build directory}
CACHE=${2:?sccache or ccache}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
README=$HERE/../../README.md
TREEGUARD=$(cd "$BUILD" && pwd)/treeguard
case $CACHE in
    sccache) OTHER=ccache ;;
    ccache) OTHER=sccache ;;
    *) echo "unknown cache $CACHE" >&2; exit 2 ;;
esac
for tool in cmake make ninja cc c++ "$CACHE"; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps.sh)"; exit 77; }
done
[[ -x $TREEGUARD ]] || { echo "treeguard not found in $BUILD" >&2; exit 2; }

work=$(mktemp -d /tmp/tg-cache-recipes.XXXXXX)
chmod 755 "$work"
TOKEN_NAME=TG_CACHE_RECIPES_TOKEN
# shellcheck source=token.bash
source "$HERE/token.bash"
# processes this test started carry its token; nothing else is touched
trap token_cleanup EXIT
export TG_CACHE_RECIPES_TOKEN=$work
export TREEGUARD_STATE_DIR=$work/state
# each cache private to this test
export CCACHE_DIR=$work/ccache
private_sccache "$work/sccache"
# `treeguard` as the recipes call it: notes its arguments, then is the build's treeguard
mkdir "$work/bin"
export TG_CALLS=$work/calls.log
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"$TG_CALLS"\nexec %q "$@"\n' "$TREEGUARD" >"$work/bin/treeguard"
chmod +x "$work/bin/treeguard"
export PATH=$work/bin:$PATH

# README's block of cache recipes, continuation lines joined: commands (CMD ...) and the lines its
# comments show for a Makefile (MAKEFILE ...) and a build.ninja (NINJA ...)
recipe_lines() {
    awk '
        /^```/ {
            if (inblock) { if (ours) { for (i = 1; i <= n; i++) print line[i]; exit } inblock = 0; n = 0; ours = 0 }
            else inblock = 1
            next
        }
        !inblock { next }
        /--leftovers;outer;--;sccache/ { ours = 1 }
        {
            if (pending != "") { $0 = pending $0; pending = "" }
            if (sub(/\\$/, "")) { pending = $0; next }
            if ($0 ~ /^#   /) { if (section != "") line[++n] = section " " substr($0, 5); next }
            if ($0 ~ /^#/) { section = ($0 ~ /Makefile/) ? "MAKEFILE" : ($0 ~ /build\.ninja/) ? "NINJA" : ""; next }
            if ($0 ~ /^ *$/) next
            line[++n] = "CMD " $0
        }
    ' "$README"
}
mapfile -t RECIPE < <(recipe_lines)
# recipe KIND PATTERN: the lines of KIND (CMD, MAKEFILE, NINJA) that match PATTERN (grep -E)
recipe() {
    local entry
    for entry in "${RECIPE[@]}"; do
        [[ ${entry%% *} == "$1" ]] || continue
        grep -qE -- "$2" <<<"${entry#* }" && printf '%s\n' "${entry#* }"
    done
}

failed=0
check() { # check WHAT CONDITION...
    local what=$1; shift
    if "$@"; then echo "PASS $what"; else echo "FAIL $what"; failed=1; fi
}
one_line() { [[ -n $1 && $1 != *$'\n'* ]]; }

cmake_other=$(recipe CMD "^cmake -S .*;$OTHER\"")
cmake_ours=$(recipe CMD "^cmake -S .*;$CACHE\"")
cmake_build=$(recipe CMD '^treeguard run -- cmake --build' | head -1)
make_line=$(recipe CMD "^treeguard run -- make .*CC=\"$CACHE ")
ninja_line=$(recipe CMD '^treeguard run -- ninja')
check "README's block has one CMake configure line for each cache" eval 'one_line "$cmake_other" && one_line "$cmake_ours"'
check "README's block has a CMake build line, a make line for $CACHE and a ninja line" \
    eval 'one_line "$cmake_build" && one_line "$make_line" && one_line "$ninja_line"'
check "README's block shows a Makefile and a build.ninja" \
    eval '[[ -n $(recipe MAKEFILE .) && -n $(recipe NINJA .) ]]'

SOURCES=(main.cpp count.cpp greet.c shout.c)
project() { rm -rf "$work/p"; cp -r "$HERE/mixed_project" "$work/p"; }
# run_recipe NAME LINE...: each LINE in the project's directory, as a shell runs it, then the checks
run_recipe() {
    local name=$1 line rc=0 program=$2; shift 2
    : >"$TG_CALLS"
    rm -rf "$CCACHE_DIR" "$SCCACHE_DIR"
    for line in "$@"; do
        (cd "$work/p" && eval "$line") </dev/null >>"$work/$name.log" 2>&1 || rc=$?
    done
    check "$name: the recipe exits 0 (got $rc)" test "$rc" = 0
    check "$name: the program built runs" \
        eval '[[ $("$work/p/$program") == "HELLO FROM C AND C++ THROUGH A COMPILER CACHE (9 words)" ]]'
    local source missing=()
    for source in "${SOURCES[@]}"; do
        grep -E -- "^run --leftovers outer -- $CACHE .*[ /]$source( |\$)" "$TG_CALLS" >/dev/null ||
            missing+=("$source")
    done
    check "$name: every C and C++ file compiled through treeguard run --leftovers outer -- $CACHE (not: ${missing[*]})" \
        test "${#missing[@]}" = 0
    local entries
    if [[ $CACHE == ccache ]]; then
        entries=$(find "$CCACHE_DIR" -type f -name '*R' 2>/dev/null | wc -l)
    else
        entries=$(find "$SCCACHE_DIR" -type f -regextype egrep -regex '.*/[0-9a-f]{64}' 2>/dev/null | wc -l)
        check "$name: no compile lost sccache's server" \
            eval '! grep -q "server looks like it shut down" "$work/$name.log"'
    fi
    check "$name: $CACHE holds an entry for each of the ${#SOURCES[@]} files (got $entries)" \
        test "$entries" = "${#SOURCES[@]}"
    token_pids
    check "$name: nothing the recipe started is left once its run ends (${#TOKEN_PIDS[@]} left)" \
        test "${#TOKEN_PIDS[@]}" = 0
    if ((failed)); then
        echo "--- $name: log (last lines); treeguard's calls"
        tail -20 "$work/$name.log"
        cat "$TG_CALLS"
    fi
}

# CMake: configured with the other cache first, so the recipe replaces both launcher entries
project
run_recipe cmake build/mixed "$cmake_other" "$cmake_ours" "$cmake_build"

# make: README's Makefile rules, after a first rule that links the program
project
{
    printf 'mixed: main.o count.o greet.o shout.o\n\t$(TG) $(CXX) -o $@ $^\n'
    recipe MAKEFILE .
    printf 'main.o count.o: mixed.h\ngreet.o shout.o: mixed.h\n'
} >"$work/p/Makefile"
run_recipe make mixed "$make_line"

# ninja: README's rules with cache = CACHE, the build statements and a link
project
{
    recipe NINJA . | sed "s/^cache = .*/cache = $CACHE/"
    printf 'rule link\n  command = c++ -o $out $in\n'
    printf 'build main.o: cxx main.cpp\nbuild count.o: cxx count.cpp\n'
    printf 'build greet.o: cc greet.c\nbuild shout.o: cc shout.c\n'
    printf 'build mixed: link main.o count.o greet.o shout.o\n'
} >"$work/p/build.ninja"
run_recipe ninja mixed "$ninja_line"

exit "$failed"
