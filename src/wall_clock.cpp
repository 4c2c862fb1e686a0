#include "wall_clock.hpp"

#include <chrono>
#include <cstdio>

namespace treeguard {

std::int64_t unix_time_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

struct CivilDate {
  long long year;
  int month;  // 1-12
  int day;    // 1-31
};

// The proleptic Gregorian date `days` after 1970-01-01 (before it when
// negative), by arithmetic alone: the C library's gmtime() refuses times
// before 1970 on some systems (Windows). Years are counted from March 1st,
// so that a leap day ends its year, in eras of 400 years (146,097 days).
CivilDate civil_from_days(long long days) {
  constexpr long long k_days_per_era = 146097;
  days += 719468;  // from 0000-03-01 to 1970-01-01
  const long long era = (days >= 0 ? days : days - (k_days_per_era - 1)) / k_days_per_era;
  const long long day_of_era = days - era * k_days_per_era;  // 0-146096
  const long long year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;  // 0-399
  const long long day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);  // 0-365
  const long long march_month = (5 * day_of_year + 2) / 153;  // 0 = March ... 11 = February
  const int day = static_cast<int>(day_of_year - (153 * march_month + 2) / 5 + 1);
  const int month = static_cast<int>(march_month < 10 ? march_month + 3 : march_month - 9);
  return CivilDate{year_of_era + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

// a / b rounded towards the past, b > 0
long long floor_divide(long long a, long long b) {
  return a / b - ((a % b) < 0 ? 1 : 0);
}

}  // namespace

std::string rfc3339(std::int64_t unix_ns) {
  // Whole seconds rounded down (towards the past, also before 1970), and
  // the microseconds into that second. snprintf, not fmt: the record's
  // fuzzer links this file alone.
  constexpr long long k_ns_per_second = 1000000000;
  constexpr long long k_seconds_per_day = 86400;
  const long long seconds = floor_divide(unix_ns, k_ns_per_second);
  const long long rest = unix_ns - seconds * k_ns_per_second;
  const long long days = floor_divide(seconds, k_seconds_per_day);
  const long long second_of_day = seconds - days * k_seconds_per_day;
  const CivilDate date = civil_from_days(days);
  char text[64];
  std::snprintf(text, sizeof text, "%04lld-%02d-%02dT%02lld:%02lld:%02lld.%06lldZ", date.year,
                date.month, date.day, second_of_day / 3600, second_of_day / 60 % 60,
                second_of_day % 60, rest / 1000);
  return text;
}

}  // namespace treeguard
