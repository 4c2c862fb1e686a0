// The state directory (contract section 5): where every run keeps its
// record. Finding it is portable; checking that it is safe to trust is not,
// so prepare_state_dir() is defined per platform (platform/posix/).
#pragma once

#include "result.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// The state directory's subdirectory where the service manager's answers
// about units are kept (STATE/units/MANAGER-UNIT, Linux).
inline constexpr std::string_view k_units_dir = "units";

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

// Where the state directory may be, in order (contract section 5): `cli`
// (--state-dir), else $TREEGUARD_STATE_DIR -- either alone, no fallback --
// else $XDG_STATE_HOME/treeguard, $HOME/.local/state/treeguard,
// $XDG_RUNTIME_DIR/treeguard, the platform's `fallbacks`, and last
// /tmp/treeguard-UID (a name any user could create first: it is refused
// then, naming its owner). Empty values count as unset, and so does a
// relative XDG_STATE_HOME, HOME or XDG_RUNTIME_DIR (the XDG spec says to
// ignore them). A relative --state-dir or TREEGUARD_STATE_DIR is made
// absolute against the current directory. Touches the file system only
// through `fallbacks` and to read the current directory.
Result<std::vector<StateDirChoice>>
state_dir_candidates(const std::optional<std::string>& cli,
                     const EnvironmentLookup& environment = process_environment,
                     const std::string& user_id = current_user_id(),
                     const FallbackLookup& fallbacks = platform_fallback_dirs);

// The first candidate's path.
Result<std::filesystem::path>
resolve_state_dir(const std::optional<std::string>& cli,
                  const EnvironmentLookup& environment = process_environment);

// The first candidate that prepare_state_dir() accepts. A default place
// that cannot be created (no home, a read-only home: an errno) gives way
// to the next; one that exists but is refused (foreign, group- or
// world-writable, a symlink) is an error, as is an unusable --state-dir or
// TREEGUARD_STATE_DIR.
Result<StateDirChoice> open_state_dir(const std::optional<std::string>& cli,
                                      const EnvironmentLookup& environment = process_environment,
                                      const std::string& user_id = current_user_id(),
                                      const FallbackLookup& fallbacks = platform_fallback_dirs);

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
