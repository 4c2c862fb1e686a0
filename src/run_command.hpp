// `treeguard run`, from parsed options to an exit code. The evidence
// commands (status, sweep, resolve) are in evidence_commands.hpp.
#pragma once

#include "invocation.hpp"

namespace treeguard {

// `treeguard run`: the exit code; where COMMAND died of a signal or one
// stopped the run, it ends by that signal instead (host.hpp end_by_signal).
int command_run(const RunOptions& options);

}  // namespace treeguard
