// The state directory (DESIGN.md [state-dir]): where every run keeps its
// record. Finding it is portable; checking that it is safe to trust is not:
// the platform's primitives are port/state_dir.hpp.
#pragma once

#include "port/state_dir.hpp"
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

// Where the state directory may be, in order (DESIGN.md [state-dir]): `cli`
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

}  // namespace treeguard
