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

// The line on stderr when COMMAND left processes behind (man page, "What
// leftovers hold"): how many, the first few by name and pid with the most
// telling thing each held, and what was done with them (taken down, waited
// for, handed to the enclosing run); with -v, every one and all it held on
// lines of their own. -q silences it; under the timeout grammar only its
// -v prints it. Nullopt when there is nothing to say.
std::optional<std::string> leftovers_line(const RunOptions& options, const RunOutcome& outcome);

}  // namespace treeguard
