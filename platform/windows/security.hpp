// Who owns a file or directory, compared with who treeguard runs as: the
// Windows form of the POSIX "owned by the effective user" checks on the
// state directory and on every record read from it.
#pragma once

#include "result.hpp"

#include <windows.h>

#include <string>

namespace treeguard::platform {

// The object behind `handle` is owned by this process's user, or by the
// owner its token gives new objects (BUILTIN\Administrators when elevated).
// The error names the owner it found.
Result<void> check_owned_by_current_user(HANDLE handle, const std::string& what);

// "sid S-1-5-21-...", the current user as records name who acted.
std::string current_user_sid_label();

}  // namespace treeguard::platform
