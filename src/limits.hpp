// Resource limits on the whole tree (--memory-max, --pids-max) and what the
// tree used (the report's "usage"): the portable half. A boundary that
// cannot enforce a limit refuses to form (make_boundary); nothing is ever
// silently left unlimited.
#pragma once

#include "result.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace treeguard {

struct Limits {
  std::optional<std::uint64_t> memory_max;  // bytes (memory.max)
  std::optional<std::uint64_t> pids_max;    // tasks (pids.max)
  bool any() const { return memory_max.has_value() || pids_max.has_value(); }
};

// What the whole tree used, read from the boundary before it is removed.
// A field the source cannot give is nullopt (null in the report).
struct TreeUsage {
  std::optional<double> cpu_user_seconds;
  std::optional<double> cpu_system_seconds;
  std::optional<std::uint64_t> memory_peak_bytes;
  std::optional<std::uint64_t> tasks_peak;
  // OOM kills inside the boundary (memory.events oom_kill); nullopt where
  // the boundary cannot count them.
  std::optional<std::uint64_t> oom_kills;
  std::string source;  // "cgroup", "rusage"
};

// SIZE: a whole number of bytes, optionally with a suffix K, M, G or T
// (powers of 1024; "KiB", "MB" and lower case are accepted alike), or
// "max" for no limit (nullopt). Zero, signs, fractions and overflow are
// refused with a sentence naming the text.
Result<std::optional<std::uint64_t>> parse_size(std::string_view text);

// N: a whole number of tasks, 1 or more, or "max" (nullopt).
Result<std::optional<std::uint64_t>> parse_task_count(std::string_view text);

// The options that set `limits`: "--memory-max", "--pids-max",
// "--memory-max and --pids-max" (for the line that refuses them).
std::string limit_names(const Limits& limits);

// "64M", "1.5G", "512K", "100B": short, base 1024, for messages.
std::string format_bytes(std::uint64_t bytes);

// The -v line's text: "2.01s CPU time (1.98s user, 0.03s system), 5.0M
// memory peak, 3 tasks peak (from cgroup)"; parts the source lacks are left out.
std::string describe_usage(const TreeUsage& usage);

}  // namespace treeguard
