// Signals as the core sees them: a portable identity and the names users
// type. The core holds no signal numbers. A number (what kill(2) takes, the
// N of a 128+N exit code, what `--signal 15` means) is the platform's to
// give (port/signal_numbers.hpp).
#pragma once

#include "port/signal_numbers.hpp"
#include "result.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace treeguard {

// Parse "TERM", "SIGTERM", "term", "sigterm" or "15" (this platform's
// number). Unknown names, 0, real-time signals and signals this platform
// does not have are refused.
Result<Signal> parse_signal(std::string_view text);

// "TERM" for signals::term.
std::string signal_name(Signal signal);

// The signal signal_name() names `name` (a record keeps the drain's signal
// by name): "TERM", "RTMIN+1", or the number of one without a name;
// nullopt for any other text, or a signal this platform does not have.
std::optional<Signal> signal_named(std::string_view name);

// Signals that stop whom they reach (TSTP, TTIN, TTOU): a drain by one of
// them continues every member after it, so that the tree runs on and the
// drain ends.
bool stops_whom_it_reaches(Signal signal);

// The name of this platform's signal `number`: "TERM" for 15 on Linux,
// "SIG42"-style text for a number without a name.
std::string signal_number_name(int number);

// Signals that, sent to treeguard, end the run (after being forwarded):
// HUP, INT, QUIT, TERM. The others are forwarded and the run goes on.
bool is_stop_signal(Signal signal);

// Signals treeguard forwards to COMMAND (DESIGN.md [signals]).
bool is_forwarded_signal(Signal signal);

}  // namespace treeguard
