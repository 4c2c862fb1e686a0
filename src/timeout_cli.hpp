// `treeguard timeout [OPTION] DURATION COMMAND [ARG]...`, and treeguard
// invoked under the name `timeout`: coreutils' timeout grammar (its
// options, durations, signals and words) in front of `run`. What it parses
// is a RunOptions like run's; nothing is run differently.
#pragma once

#include "duration.hpp"
#include "invocation.hpp"
#include "result.hpp"
#include "signal_name.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

// The line `treeguard --help` lists the subcommand with.
extern const char* const k_timeout_summary;

// The name timeout's messages start with when `args` is a timeout command
// line: argv[0] itself when its last component is `timeout` (a symlink or
// hard link), "argv[0] timeout" for `treeguard timeout ...`; else nullopt.
std::optional<std::string> timeout_program(const std::vector<std::string>& args);

// Parse a timeout command line (argv[0] included). Errors are in timeout's
// words, followed by its "Try ... --help" line; the options timeout does
// not have (the boundary, the limits) come from the environment as for run.
Invocation parse_timeout_command_line(const std::vector<std::string>& args,
                                      const std::string& program,
                                      const EnvironmentLookup& environment);

// DURATION as timeout reads it: a floating-point number in the C locale
// (exponents, hexadecimal, "inf", "infinity"), then at most one of s, m, h,
// d. Nullopt means no limit: 0, or a value so large it saturates (beyond
// 100 years). A positive value below 1 ns counts as 1 ns. Negative, NaN,
// empty, a second suffix letter: refused ("invalid time interval 'X'").
Result<std::optional<Duration>> parse_timeout_duration(std::string_view text);

// SIGNAL as timeout reads it: a name in any case, with or without SIG
// (EXIT is 0), RTMIN+N / RTMAX-N, or a number (a shell's 128+N and ksh's
// 256+N read as N) up to this platform's highest; 0 sends nothing.
// Refused: "'X': invalid signal".
Result<Signal> parse_timeout_signal(std::string_view text);

}  // namespace treeguard
