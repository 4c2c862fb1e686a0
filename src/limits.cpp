#include "limits.hpp"

#include <fmt/format.h>

#include <cctype>
#include <iterator>
#include <limits>
#include <vector>

namespace treeguard {

namespace {

// The digits at the front of `text` as a number; nullopt when there are
// none or they overflow.
std::optional<std::uint64_t> leading_number(std::string_view text, std::size_t& used) {
  std::uint64_t value = 0;
  used = 0;
  while (used < text.size() && std::isdigit(static_cast<unsigned char>(text[used])) != 0) {
    const auto digit = static_cast<std::uint64_t>(text[used] - '0');
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
      return std::nullopt;
    }
    value = value * 10 + digit;
    ++used;
  }
  if (used == 0) {
    return std::nullopt;
  }
  return value;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

Result<std::optional<std::uint64_t>> parse_size(std::string_view text) {
  if (text == "max") {
    return std::optional<std::uint64_t>();
  }
  auto refused = [&](const char* why) {
    return fail(plain_error(
        fmt::format("'{}' is not a size ({}; e.g. 512M, 2G, 1048576, max)", text, why)));
  };
  std::size_t used = 0;
  auto number = leading_number(text, used);
  if (!number) {
    return used > 0 ? refused("too large") : refused("a whole number of bytes comes first");
  }
  const std::string suffix = lower(text.substr(used));
  if (!suffix.empty() && (suffix[0] == '.' || suffix[0] == ',')) {
    return refused("whole numbers only: 1536M, not 1.5G");
  }
  int shift = 0;
  if (suffix.empty() || suffix == "b") {
    shift = 0;
  } else {
    static const char k_units[] = "kmgt";
    const auto at = std::string_view(k_units).find(suffix[0]);
    const std::string rest = suffix.substr(1);
    if (at == std::string_view::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return refused("the suffixes are K, M, G, T");
    }
    shift = 10 * static_cast<int>(at + 1);
  }
  if (*number > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
    return refused("too large");
  }
  const std::uint64_t bytes = *number << shift;
  if (bytes == 0) {
    return refused("0 would leave no memory at all");
  }
  return std::optional<std::uint64_t>(bytes);
}

Result<std::optional<std::uint64_t>> parse_task_count(std::string_view text) {
  if (text == "max") {
    return std::optional<std::uint64_t>();
  }
  std::size_t used = 0;
  auto number = leading_number(text, used);
  if (!number || used != text.size() || *number == 0) {
    return fail(plain_error(
        fmt::format("'{}' is not a task count (a whole number, 1 or more, or max)", text)));
  }
  return std::optional<std::uint64_t>(*number);
}

std::string limit_names(const Limits& limits) {
  if (limits.memory_max && limits.pids_max) {
    return "--memory-max and --pids-max";
  }
  return limits.memory_max ? "--memory-max" : "--pids-max";
}

std::string format_bytes(std::uint64_t bytes) {
  static const char* const k_units[] = {"B", "K", "M", "G", "T", "P", "E"};
  std::size_t unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024.0 && unit + 1 < std::size(k_units)) {
    value /= 1024.0;
    ++unit;
  }
  if (unit == 0) {
    return fmt::format("{}B", bytes);
  }
  // Whole values as "64M", others with one decimal ("1.5G").
  if (bytes % (std::uint64_t{1} << (10 * unit)) == 0) {
    return fmt::format("{}{}", bytes >> (10 * unit), k_units[unit]);
  }
  return fmt::format("{:.1f}{}", value, k_units[unit]);
}

std::string describe_usage(const TreeUsage& usage) {
  std::vector<std::string> parts;
  if (usage.cpu_user_seconds && usage.cpu_system_seconds) {
    parts.push_back(fmt::format("{:.2f}s CPU time ({:.2f}s user, {:.2f}s system)",
                                *usage.cpu_user_seconds + *usage.cpu_system_seconds,
                                *usage.cpu_user_seconds, *usage.cpu_system_seconds));
  }
  if (usage.memory_peak_bytes) {
    parts.push_back(fmt::format("{} memory peak", format_bytes(*usage.memory_peak_bytes)));
  }
  if (usage.tasks_peak) {
    parts.push_back(fmt::format("{} tasks peak", *usage.tasks_peak));
  }
  if (usage.oom_kills && *usage.oom_kills > 0) {
    parts.push_back(fmt::format("{} OOM kill(s)", *usage.oom_kills));
  }
  return fmt::format("{} (from {})",
                     parts.empty() ? std::string("no usage known")
                                   : fmt::format("{}", fmt::join(parts, ", ")),
                     usage.source);
}

}  // namespace treeguard
