// The command line: CLI11 in, plain option structs out. Pure: no process
// is started and nothing is written here, so every bad input can be
// refused before anything exists (DESIGN.md [bad-input]).
#pragma once

#include "invocation.hpp"
#include "state_dir.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace treeguard {

// Parse argv (argv[0] included). Options of `run` not given as flags are
// taken from `environment` (TREEGUARD_TIMEOUT, TREEGUARD_KILL_AFTER,
// TREEGUARD_SIGNAL, TREEGUARD_BOUNDARY, TREEGUARD_CGROUP_PARENT,
// TREEGUARD_LEFTOVERS, TREEGUARD_MEMORY_MAX, TREEGUARD_PIDS_MAX); an empty value counts as unset,
// an invalid one is an error naming the variable.
// --help is wrapped to `help_width` columns.
Invocation parse_command_line(const std::vector<std::string>& args,
                              const EnvironmentLookup& environment = process_environment,
                              std::size_t help_width = 80);

}  // namespace treeguard
