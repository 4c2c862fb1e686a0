#!/usr/bin/env bash
# Enforce the seam between the portable core and the platform code: nothing in src/ may include
# an OS header or choose code by platform macro. OS code lives in platform/posix, platform/linux
# and platform/windows, and CMake (not the preprocessor) picks which of them is built.
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

if [ "$offences" -ne 0 ]; then
  echo "check_seams: $offences offence(s) in src/" >&2
  exit 1
fi
echo "check_seams: src/ is portable (${#files[@]} files checked)"
