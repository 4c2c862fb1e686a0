#!/usr/bin/env bash
# Enforce the seam between the portable core and the platform code: nothing in src/ may include
# an OS header or choose code by platform macro. OS code lives in platform/posix, platform/linux
# and platform/windows, and CMake (not the preprocessor) picks which of them is built.
# Also: the port's vocabulary headers (src/port/vocabulary.hpp, src/port/signal_numbers.hpp)
# include nothing of ours, and a platform twin has the same name in each platform folder
# (no _posix/_linux/_windows suffix). And a source file of src/ or platform/ over 500 lines says
# at its top (its first 8 lines: "One file over 500 lines ...") why it is one file.
# Prints every offence as file:line: text and exits 1 if there is any; exits 0 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Headers that belong to an operating system, not to the C++ standard library.
os_headers='unistd\.h|signal\.h|fcntl\.h|windows\.h|poll\.h|dirent\.h|pwd\.h|sys/[^">]+|linux/[^">]+'
include_re="^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"](${os_headers})[>\"]"
# Preprocessor conditionals on a platform macro (#ifdef, #ifndef, #if defined(...), #elif ...).
platform_re='^[[:space:]]*#[[:space:]]*(if|ifdef|ifndef|elif)\b.*\b(_WIN32|_WIN64|__linux__|__linux)\b'

if [ ! -d src ]; then
  echo "check_seams: no src/ directory" >&2
  exit 1
fi

mapfile -t files < <(find src -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
  -o -name '*.cc' -o -name '*.hh' -o -name '*.cxx' -o -name '*.ipp' \) | LC_ALL=C sort)

offences=0
for file in "${files[@]}"; do
  while IFS= read -r hit; do
    echo "$file:$hit  <- OS header in the portable core (move it to platform/)"
    offences=$((offences + 1))
  done < <(grep -nE "$include_re" "$file" || true)
  while IFS= read -r hit; do
    echo "$file:$hit  <- platform #if in the portable core (let CMake pick a platform/ file)"
    offences=$((offences + 1))
  done < <(grep -nE "$platform_re" "$file" || true)
done

# The port's vocabulary headers include nothing of treeguard's own: any header may include them.
for file in src/port/vocabulary.hpp src/port/signal_numbers.hpp; do
  while IFS= read -r hit; do
    echo "$file:$hit  <- the port's vocabulary includes nothing of ours"
    offences=$((offences + 1))
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done

# Platform twins: a file that implements a port header has the same name in each platform
# folder (platform/posix/file_io.cpp, platform/windows/file_io.cpp), never a platform suffix.
while IFS= read -r file; do
  echo "$file  <- a platform twin is named as in the other platform folders, without a suffix"
  offences=$((offences + 1))
done < <(find platform -type f -regextype posix-extended -regex '.*_(posix|linux|windows|win32|unix)\.(cpp|hpp)' | LC_ALL=C sort)

# A file over 500 lines says why it is one file, at its top.
while IFS= read -r file; do
  lines=$(wc -l <"$file")
  # (the first 8 lines as one line, comment marks dropped: the words may wrap)
  if [ "$lines" -gt 500 ] && ! head -n 8 "$file" | tr '\n' ' ' | sed 's|//||g' | tr -s ' ' | grep -q 'over 500 lines'; then
    echo "$file  <- $lines lines: say at its top why it is one file (\"One file over 500 lines ...\")"
    offences=$((offences + 1))
  fi
done < <(find src platform -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)

if [ "$offences" -ne 0 ]; then
  echo "check_seams: $offences offence(s)" >&2
  exit 1
fi
echo "check_seams: src/ is portable (${#files[@]} files checked), platform twins are named alike, long files say why"
