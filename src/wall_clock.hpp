// The one clock records and reports write their times with.
#pragma once

#include <cstdint>

namespace treeguard {

// Now, as records and reports write times: nanoseconds since the Unix epoch.
std::int64_t unix_time_ns();

}  // namespace treeguard
