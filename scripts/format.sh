#!/usr/bin/env bash
# Apply .clang-format to the C++ sources: src/, platform/, tests/ (every C++ file of them).
#   bash scripts/format.sh           rewrite the files in place
#   bash scripts/format.sh --check   change nothing; exit 1 and list the files that would change
#                                    (77 without clang-format: ctest's style.formatted skips)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0
if [ "${1:-}" = "--check" ]; then
  check=1
elif [ $# -ne 0 ]; then
  echo "usage: bash scripts/format.sh [--check]" >&2
  exit 2
fi

# Without clang-format a check cannot be made: 77, the skip code ctest's
# style.formatted is given; rewriting without it is an error.
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "SKIP: format: $clang_format not found (apt-get install clang-format)" >&2
  [ "$check" -eq 1 ] && exit 77
  exit 1
fi

dirs=()
for dir in src platform tests; do
  [ -d "$dir" ] && dirs+=("$dir")
done
[ "${#dirs[@]}" -ne 0 ] || { echo "format: nothing to format"; exit 0; }

mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
  -o -name '*.cc' \) | LC_ALL=C sort)
[ "${#files[@]}" -ne 0 ] || { echo "format: nothing to format"; exit 0; }

if [ "$check" -eq 1 ]; then
  unformatted=0
  for file in "${files[@]}"; do
    if ! "$clang_format" -style=file "$file" | cmp -s - "$file"; then
      echo "format: would change $file"
      unformatted=$((unformatted + 1))
    fi
  done
  [ "$unformatted" -eq 0 ] || exit 1
  echo "format: ${#files[@]} files already formatted"
else
  "$clang_format" -style=file -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
