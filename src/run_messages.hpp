// What `treeguard run` says on stderr: its error lines, timeout -v's line
// as each signal goes, and at the run's end the warnings, the report, the
// usage and the one line that says why treeguard (not COMMAND) ended the
// work.
#pragma once

#include "invocation.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"
#include "supervisor.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace treeguard {

// One line on stderr. stderr may be a pipe nobody reads any more (-v into
// `| head`): SIGPIPE is ignored (host_init) and a failed write is dropped,
// so it never ends the run nor loses COMMAND's status.
void print_line(const std::string& line) noexcept;

// "treeguard: error: MESSAGE", on one line even for a path or a value
// holding a newline.
void print_error(const std::string& message);

// timeout -v: "timeout: sending signal TERM to command 'sleep'", as the
// signal goes; empty unless under timeout's grammar with -v.
std::function<void(Signal)> timeout_announcer(const RunOptions& options);

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

// After the run: retention, warnings, the report, the usage and the one
// line that says why treeguard (not COMMAND) ended the work.
void tell_the_end(const RunOptions& options, const RecordStore& store, const RecordJournal& journal,
                  const RunOutcome& outcome, std::int64_t started_at, const Logger& log);

}  // namespace treeguard
