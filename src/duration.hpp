// Durations on the command line: "250ms", "90s", "1m30s", "2h", "1.5s", or
// a bare number of seconds, as timeout(1) takes them.
#pragma once

#include "result.hpp"

#include <chrono>
#include <string>
#include <string_view>

namespace treeguard {

using Duration = std::chrono::nanoseconds;

// Parse a duration. Refuses, with a sentence naming the text: empty input,
// a sign, an unknown or missing unit after the first term, exponents,
// and anything above 10 years (so "1e999" and overflow are errors, not 0).
Result<Duration> parse_duration(std::string_view text);

// "1.5s", "250ms", "2h": short, for messages and reports.
std::string format_duration(Duration duration);

}  // namespace treeguard
