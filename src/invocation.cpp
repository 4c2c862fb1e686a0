#include "invocation.hpp"

#include "duration.hpp"
#include "signal_name.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace treeguard {

const std::vector<std::string> k_leftover_modes{"kill", "wait", "outer", "fail"};

namespace {

bool is_one_of(const std::string& value, const std::vector<std::string>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

// A setting of `run` for launchers (CMAKE_<LANG>_COMPILER_LAUNCHER, a
// Makefile prefix) that cannot easily pass flags: its flag wins; else a
// non-empty variable NAME gives VALUE.
struct Setting {
  enum class Source { none, flag, environment };
  Source source;
  const char* origin;  // the flag, or the variable it came from (for errors)
  bool set() const { return source != Source::none; }
  bool from_environment() const { return source == Source::environment; }
};

Setting setting(const OptionGiven& given, const EnvironmentLookup& environment, const char* option,
                const char* name, std::string& value) {
  if (given(option)) {
    return {Setting::Source::flag, option};
  }
  auto text = environment(name);
  if (!text || text->empty()) {
    return {Setting::Source::none, option};
  }
  value = *text;
  return {Setting::Source::environment, name};
}

}  // namespace

std::optional<std::string> resolve_run_environment(const OptionGiven& given,
                                                   const EnvironmentLookup& environment,
                                                   RawRun& raw, RunOptions& options) {
  // Options from the environment (see `setting`); a flag wins.
  setting(given, environment, "--boundary", "TREEGUARD_BOUNDARY", raw.boundary);
  if (auto request = boundary_request_named(raw.boundary)) {
    options.boundary = *request;
  } else {
    return fmt::format("TREEGUARD_BOUNDARY: '{}' is not one of {}", raw.boundary,
                       fmt::join(boundary_request_names(), ", "));
  }
  const Setting cgroup_parent = setting(given, environment, "--cgroup-parent",
                                        "TREEGUARD_CGROUP_PARENT", options.cgroup_parent);
  if (setting(given, environment, "--leftovers", "TREEGUARD_LEFTOVERS", raw.leftovers)
          .from_environment()
      && !is_one_of(raw.leftovers, k_leftover_modes)) {
    return fmt::format("TREEGUARD_LEFTOVERS: '{}' is not one of {}", raw.leftovers,
                       fmt::join(k_leftover_modes, ", "));
  }
  const Setting memory =
      setting(given, environment, "--memory-max", "TREEGUARD_MEMORY_MAX", raw.memory_max);
  if (memory.set()) {
    auto size = parse_size(raw.memory_max);
    if (!size) {
      return memory.origin + std::string(": ") + size.error().message();
    }
    options.limits.memory_max = *size;
  }
  const Setting pids =
      setting(given, environment, "--pids-max", "TREEGUARD_PIDS_MAX", raw.pids_max);
  if (pids.set()) {
    auto count = parse_task_count(raw.pids_max);
    if (!count) {
      return pids.origin + std::string(": ") + count.error().message();
    }
    options.limits.pids_max = *count;
  }
  options.policy.leftovers = raw.leftovers == "wait"    ? Leftovers::wait
                             : raw.leftovers == "outer" ? Leftovers::outer
                             : raw.leftovers == "fail"  ? Leftovers::fail
                                                        : Leftovers::kill;
  if (!options.cgroup_parent.empty()
      && (options.boundary == BoundaryRequest::process_group
          || options.boundary == BoundaryRequest::pid_namespace)) {
    if (!cgroup_parent.from_environment()) {
      return "--cgroup-parent goes with --boundary cgroup or auto";
    }
    options.cgroup_parent.clear();  // TREEGUARD_CGROUP_PARENT, overruled by the flag
  }
  return std::nullopt;
}
// -t, -k and -s of `run`, from their flags or the environment.
std::optional<std::string> resolve_run_timing(const OptionGiven& given,
                                              const EnvironmentLookup& environment, RawRun& raw,
                                              RunPolicy& policy) {
  const Setting timeout =
      setting(given, environment, "--timeout", "TREEGUARD_TIMEOUT", raw.timeout);
  if (timeout.set()) {
    auto duration = parse_duration(raw.timeout);
    if (!duration) {
      return timeout.origin + std::string(": ") + duration.error().message();
    }
    if (duration->count() > 0) {
      policy.timeout = *duration;
    }
  }
  const char* kill_after_origin =
      setting(given, environment, "--kill-after", "TREEGUARD_KILL_AFTER", raw.kill_after).origin;
  const char* signal_origin =
      setting(given, environment, "--signal", "TREEGUARD_SIGNAL", raw.signal).origin;
  auto kill_after = parse_duration(raw.kill_after);
  if (!kill_after) {
    return kill_after_origin + std::string(": ") + kill_after.error().message();
  }
  policy.kill_after = *kill_after;
  auto signal = parse_signal(raw.signal);
  if (!signal) {
    return signal_origin + std::string(": ") + signal.error().message();
  }
  if (*signal == signals::stop) {
    return fmt::format("{}: {} cannot be a graceful signal", signal_origin, signal_name(*signal));
  }
  policy.stop_signal = *signal;
  return std::nullopt;
}

}  // namespace treeguard
