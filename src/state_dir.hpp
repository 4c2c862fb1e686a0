// The state directory (contract section 5): where every run keeps its
// record. Finding it is portable; checking that it is safe to trust is not,
// so prepare_state_dir() is defined per platform (platform/posix/).
#pragma once

#include "result.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace treeguard {

// Reads one environment variable; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;

// The process environment (std::getenv).
std::optional<std::string> process_environment(const char* name);

// Where the state directory is: `cli` (--state-dir), else
// $TREEGUARD_STATE_DIR, else $XDG_STATE_HOME/treeguard, else
// $HOME/.local/state/treeguard. Empty values count as unset, and so does a
// relative XDG_STATE_HOME or HOME (the XDG spec says to ignore them). A
// relative --state-dir or TREEGUARD_STATE_DIR is made absolute against the
// current directory. Errors only when none of them is usable. Does not
// touch the file system beyond reading the current directory.
Result<std::filesystem::path>
resolve_state_dir(const std::optional<std::string>& cli,
                  const EnvironmentLookup& environment = process_environment);

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
