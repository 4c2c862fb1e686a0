#include "wall_clock.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace treeguard {

std::int64_t unix_time_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string rfc3339(std::int64_t unix_ns) {
  // Whole seconds rounded down (towards the past, also before 1970), and
  // the microseconds into that second.
  constexpr std::int64_t k_ns_per_second = 1000000000;
  std::int64_t seconds = unix_ns / k_ns_per_second;
  std::int64_t rest = unix_ns % k_ns_per_second;
  if (rest < 0) {
    --seconds;
    rest += k_ns_per_second;
  }
  const auto when = static_cast<std::time_t>(seconds);
  // gmtime's buffer is the process's own: treeguard writes times from one
  // thread. snprintf, not fmt: the record's fuzzer links this file alone.
  const std::tm* utc = std::gmtime(&when);
  char text[64];
  if (utc == nullptr) {
    // Past what the C library can show.
    std::snprintf(text, sizeof text, "%llds since the epoch", static_cast<long long>(seconds));
    return text;
  }
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc->tm_year + 1900,
                utc->tm_mon + 1, utc->tm_mday, utc->tm_hour, utc->tm_min, utc->tm_sec,
                static_cast<long long>(rest / 1000));
  return text;
}

}  // namespace treeguard
