// `treeguard run`, from parsed options to an exit code. The evidence
// commands (status, sweep, resolve) are in evidence_commands.hpp.
#pragma once

#include "cli.hpp"

#include <optional>
#include <string>

namespace treeguard {

// `treeguard run`: the exit code; where COMMAND died of a signal or one
// stopped the run, it ends by that signal instead (host.hpp end_by_signal).
int command_run(const RunOptions& options);

// The one line on stderr (without -v) when treeguard, not COMMAND, ended
// the work: the deadline passed, a stop request (a second interrupt)
// stopped the run, or members were killed by force; who was killed, by name
// (the first few, bounded), and whose tree it was. Nullopt when there is
// nothing to say.
std::optional<std::string> stop_line(const RunOptions& options, const RunOutcome& outcome);

}  // namespace treeguard
