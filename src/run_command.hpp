// `treeguard run`, from parsed options to an exit code. The evidence
// commands (status, sweep, resolve) are in evidence_commands.hpp.
#pragma once

#include "cli.hpp"

namespace treeguard {

int command_run(const RunOptions& options);

}  // namespace treeguard
