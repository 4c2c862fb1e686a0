// How treeguard re-executes itself in a systemd scope
// (src/port/user_scope.hpp), laid out apart from the exec so that what the
// re-executed treeguard is given can be checked: systemd-run's command line,
// and the markers it finds in its environment.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace treeguard::platform {

// Where the re-executed treeguard finds the name it was called by (argv[0]).
// systemd-run starts it by its executable's path, so without this a link
// named `timeout` would come back as treeguard, with another grammar.
inline constexpr const char* k_scope_argv0_marker = "TREEGUARD_SCOPE_ARGV0";

struct ScopeExec {
  std::vector<std::string> argv;  // systemd-run's, treeguard's after its "--"
  std::vector<std::pair<std::string, std::string>> environment;  // set before the exec
};

// The re-execution for the scope of `manager` ("user", "system") named for
// `run_id`: `systemd_run` with the scope's options, then `exe` (treeguard's
// executable) with `args` after their first (this treeguard's argv, name
// first); `own_unit` is the unit treeguard runs in (for PartOf=), or empty.
// nullopt for an unknown manager or no arguments.
std::optional<ScopeExec> scope_exec(const std::string& manager, const std::string& run_id,
                                    const std::string& systemd_run, const std::string& exe,
                                    const std::vector<std::string>& args,
                                    const std::string& own_unit);

// In the re-executed treeguard, before its arguments are read: argv[0] back
// to the name the first treeguard was called by, and the marker cleared
// (COMMAND never inherits it). Only where a scope's re-execution left it, with
// its scope marker: otherwise `args` are left as they are.
void restore_scope_argv0(std::vector<std::string>& args);

}  // namespace treeguard::platform
