// The subcommands, from parsed options to an exit code.
#pragma once

#include "cli.hpp"

namespace treeguard {

int command_run(const RunOptions& options);
int command_status(const StatusOptions& options);
int command_sweep(const SweepOptions& options);
int command_resolve(const ResolveOptions& options);

} // namespace treeguard
