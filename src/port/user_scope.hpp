// The systemd scopes (DESIGN.md [scopes]): where no cgroup here may be written
// but a systemd manager is reachable (the user's own; root's system
// manager), treeguard asks it for a transient scope unit with Delegate=yes
// that holds treeguard itself, then makes its leaf inside. systemd-run does
// the asking (no D-Bus protocol of ours; the static binary links no
// libsystemd): treeguard execs
//   systemd-run [--user] --scope --property=Delegate=yes
//     [--property=PartOf=UNIT] --unit=treeguard-RUNID.scope -- treeguard ARGS...
// (the system scope is PartOf= the unit treeguard was started in) which starts the scope around its
// own pid and then execs treeguard again, unchanged, in the same process: same pid, terminal,
// environment and arguments. systemd-run names it by its executable's path: the name treeguard
// was called by (a link named timeout, whose grammar it then speaks) goes along in the
// environment, and the re-executed treeguard takes it back before reading its arguments
// (host_arguments). The scope ends when treeguard does.
#pragma once

#include "result.hpp"

#include <optional>
#include <string>

namespace treeguard {

// How this treeguard came to be, as far as the scopes go.
struct ScopeEntry {
  // The run id its scope was named for, when treeguard was re-executed into
  // treeguard-<id>.scope and is in that scope now.
  std::optional<std::string> run_id;
  // Whose scope it is ("user", "system"), with run_id.
  std::string manager;
  // Set when treeguard was re-executed for a scope but is not in it (or the
  // marker is malformed): the scope is not tried again, and -v says why.
  std::string refused;
};

// Read and clear the markers the re-execution leaves (TREEGUARD_USER_SCOPE,
// TREEGUARD_SYSTEM_SCOPE), so COMMAND never inherits one. Call once, before
// anything else of a run.
ScopeEntry take_scope_entry();

// What would start a scope of `manager` ("user", "system") here ("systemd-run
// --user --scope (user manager at /run/user/1000/bus)"), or why none can:
// no user bus in the environment, nothing listening on it, no systemd-run.
// Cheap: environment look-ups, one connect(2) to a unix socket, a PATH
// search; no D-Bus call.
Result<std::string> scope_offer(const std::string& manager);

// Exec systemd-run as above. Returns only if the exec failed.
Error reexec_in_scope(const std::string& manager, const std::string& run_id);

}  // namespace treeguard
