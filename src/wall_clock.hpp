// The one clock records and reports write their times with.
#pragma once

#include <cstdint>
#include <string>

namespace treeguard {

// Now, as records and reports write times: nanoseconds since the Unix epoch.
std::int64_t unix_time_ns();

// A time as unix_time_ns() gives it, in RFC 3339 (UTC, to the microsecond):
// "2026-01-01T12:00:00.123456Z", which date(1), Python's datetime and
// JavaScript's Date read. Before the epoch, the time counts down from it.
std::string rfc3339(std::int64_t unix_ns);

}  // namespace treeguard
