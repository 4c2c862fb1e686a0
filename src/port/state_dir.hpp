// What a platform provides for the state directory: the environment, the
// user, its own default and fallback places, and the check that a
// directory can be trusted (platform/posix/state_dir.cpp,
// platform/windows/state_dir.cpp). Choosing among the places is the core's
// (state_dir.hpp).
#pragma once

#include "result.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// Reads one environment variable; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;

// The process environment, in UTF-8. Defined per platform: std::getenv on
// POSIX; on Windows read as UTF-16 (GetEnvironmentVariableW), since the
// ANSI environment turns a profile path outside the code page into '?'.
std::optional<std::string> process_environment(const char* name);

// The effective user's id as text ("1000"), for /tmp/treeguard-UID.
// Defined per platform.
std::string current_user_id();

// The platform's own default place, tried after $TREEGUARD_STATE_DIR and
// before the XDG ones: %LOCALAPPDATA%\treeguard on Windows, none on POSIX.
// Defined per platform.
std::optional<std::filesystem::path> platform_state_dir(const EnvironmentLookup& environment);

// A place the state directory may be, and where that came from
// ("--state-dir", "TREEGUARD_STATE_DIR", "XDG_STATE_HOME", "HOME",
// "XDG_RUNTIME_DIR", "the user database", "/run/user/UID", "/run", "/tmp").
struct StateDirChoice {
  std::filesystem::path path;
  std::string source;
};

// The places the platform adds after $XDG_RUNTIME_DIR/treeguard and before
// /tmp/treeguard-UID, none of which another user can create first. POSIX:
// the account's home from the user database (when $HOME is unset or
// another place: cron jobs, services) if it is an existing directory of the
// user's; /run/user/UID/treeguard if /run/user/UID is the user's; for root,
// /run/treeguard. Windows: none. Reads the file system (lstat) and the
// user database, nothing else.
std::vector<StateDirChoice> platform_fallback_dirs(const EnvironmentLookup& environment);
using FallbackLookup = std::function<std::vector<StateDirChoice>(const EnvironmentLookup&)>;

// Make `dir` a state directory that can be trusted, creating it (and any
// missing parent, each mode 0700) if absent. Refuses, with an Error whose
// context starts "state directory DIR: ", a directory that
//   - is reached through a symlink in any component of its path,
//   - is a symlink or not a directory,
//   - is not owned by the effective user,
//   - is group- or world-writable.
// Checks again after creating, so a race that swaps in something else is
// caught. Idempotent; safe to call from many processes at once.
Result<void> prepare_state_dir(const std::filesystem::path& dir);

}  // namespace treeguard
