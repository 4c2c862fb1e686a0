#include "duration.hpp"

#include <fmt/format.h>

#include <cctype>

namespace treeguard {

namespace {

// Ten years: longer than any CI job, short enough that nanoseconds fit.
constexpr long double k_max_seconds = 10.0L * 365 * 24 * 3600;

Result<long double> unit_seconds(std::string_view unit) {
  if (unit == "ms") {
    return 1e-3L;
  }
  if (unit == "s" || unit.empty()) {
    return 1.0L;
  }
  if (unit == "m") {
    return 60.0L;
  }
  if (unit == "h") {
    return 3600.0L;
  }
  if (unit == "d") {
    return 86400.0L;
  }
  return fail(plain_error("unknown unit"));
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  auto invalid = [&](std::string_view why) {
    return fail(plain_error(fmt::format("invalid duration '{}': {}", text, why)));
  };
  if (text.empty()) {
    return invalid("empty");
  }
  long double total = 0;
  std::size_t i = 0;
  bool first = true;
  while (i < text.size()) {
    // A term: digits, an optional fraction, then a unit.
    std::size_t start = i;
    long double value = 0;
    bool digits = false;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      value = value * 10 + (text[i] - '0');
      digits = true;
      ++i;
    }
    if (i < text.size() && text[i] == '.') {
      ++i;
      long double scale = 0.1L;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        value += scale * (text[i] - '0');
        scale /= 10;
        digits = true;
        ++i;
      }
    }
    if (!digits) {
      if (start < text.size() && (text[start] == '-' || text[start] == '+')) {
        return invalid("must not be signed");
      }
      return invalid("expected a number");
    }
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty() && i < text.size()) {
      return invalid("expected a unit (ms, s, m, h, d)");
    }
    if (unit.empty() && !first) {
      return invalid("every term after the first needs a unit");
    }
    auto scale = unit_seconds(unit);
    if (!scale) {
      return invalid(fmt::format("unknown unit '{}' (use ms, s, m, h, d)", unit));
    }
    total += value * *scale;
    if (total > k_max_seconds) {
      return invalid("too long (at most 10 years)");
    }
    first = false;
  }
  const auto nanoseconds = static_cast<Duration::rep>(total * 1e9L + 0.5L);
  if (total > 0 && nanoseconds == 0) {
    // It would read as 0, which means "none" for a timeout.
    return invalid("positive but below 1ns, the finest step (0 means none)");
  }
  return Duration(nanoseconds);
}

std::string format_duration(Duration duration) {
  using namespace std::chrono;
  auto ns = duration.count();
  if (ns % 3'600'000'000'000LL == 0 && ns != 0) {
    return fmt::format("{}h", ns / 3'600'000'000'000LL);
  }
  if (ns % 60'000'000'000LL == 0 && ns != 0) {
    return fmt::format("{}m", ns / 60'000'000'000LL);
  }
  if (ns % 1'000'000'000LL == 0) {
    return fmt::format("{}s", ns / 1'000'000'000LL);
  }
  if (ns % 1'000'000LL == 0) {
    return fmt::format("{}ms", ns / 1'000'000LL);
  }
  return fmt::format("{:.3f}s", static_cast<double>(ns) / 1e9);
}

}  // namespace treeguard
