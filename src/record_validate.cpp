#include "record.hpp"
#include "record_fields.hpp"
#include "signal_name.hpp"

#include <string_view>

namespace treeguard {

Error record_error(const std::string& field, const std::string& what) {
  return plain_error("field " + field + ": " + what);
}

Result<void> validate_pid(long long pid, const std::string& field) {
  if (pid <= 0 || pid > k_max_record_pid) {
    return fail(record_error(field, "must be between 1 and " + std::to_string(k_max_record_pid)));
  }
  return {};
}

Result<void> validate_time(std::int64_t at, const std::string& field) {
  if (at < 0) {
    return fail(record_error(field, "must not be negative"));
  }
  return {};
}

namespace {

bool has_nul(std::string_view text) {
  return text.find('\0') != std::string_view::npos;
}

}  // namespace

Result<void> validate_cgroup_address(std::string_view address, const std::string& run_id) {
  if (address.empty() || address.front() != '/') {
    return fail(record_error("boundary.address", "cgroup path is not absolute"));
  }
  if (has_nul(address)) {
    return fail(record_error("boundary.address", "contains a NUL byte"));
  }
  std::string_view last;
  std::size_t start = 1;
  while (start <= address.size()) {
    std::size_t end = address.find('/', start);
    if (end == std::string_view::npos) {
      end = address.size();
    }
    const std::string_view part = address.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return fail(
          record_error("boundary.address", "cgroup path has an empty, \".\" or \"..\" component"));
    }
    last = part;
    start = end + 1;
  }
  if (last != "treeguard-" + run_id) {
    return fail(
        record_error("boundary.address", "cgroup path does not end in treeguard-" + run_id));
  }
  return {};
}

namespace {

Result<void> validate_text(const std::string& text, const std::string& field) {
  if (text.empty()) {
    return fail(record_error(field, "must not be empty"));
  }
  return {};
}

}  // namespace

namespace {

// The nested runs' records a record holds (RunRecord::nested): one level,
// each a record of its own (so every check above holds for it), of a leaf
// inside this run's leaf and no other's, each run once. A record naming a
// leaf elsewhere is not one this run's guardian wrote: never trusted, never
// acted on.
Result<void> validate_nested(const RunRecord& record) {
  if (record.nested.empty()) {
    return {};
  }
  if (record.nested.size() > k_max_nested_records) {
    return fail(record_error("nested",
                             "has more than " + std::to_string(k_max_nested_records) + " entries"));
  }
  if (record.boundary.kind != BoundaryKind::cgroup) {
    return fail(record_error("nested", "only a cgroup run holds nested runs' records"));
  }
  for (std::size_t i = 0; i < record.nested.size(); ++i) {
    const RunRecord& nested = record.nested[i];
    const std::string field = "nested[" + std::to_string(i) + "]";
    if (auto valid = validate_record(nested); !valid) {
      return fail(plain_error(field + ": " + valid.error().message()));
    }
    if (!nested.nested.empty()) {
      return fail(record_error(field + ".nested", "a nested run's record holds none"));
    }
    if (nested.boundary.kind != BoundaryKind::cgroup
        || !leaf_within(nested.boundary.address, record.boundary.address)) {
      return fail(record_error(field + ".boundary.address",
                               "is not a leaf inside this run's leaf " + record.boundary.address));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (record.nested[j].run_id == nested.run_id) {
        return fail(record_error(field + ".run_id", "names run " + nested.run_id + " twice"));
      }
    }
  }
  return {};
}

}  // namespace

Result<void> validate_record(const RunRecord& record) {
  if (!is_valid_run_id(record.run_id)) {
    return fail(record_error("run_id", "\"" + printable(record.run_id) + "\" is not a run id"));
  }
  if (!is_valid_boot_id(record.boot_id)) {
    return fail(
        record_error("boot_id", "\"" + printable(record.boot_id) + "\" is not a lowercase UUID"));
  }
  if (record.machine_id && !is_valid_machine_id(*record.machine_id)) {
    return fail(record_error("machine_id",
                             "\"" + printable(*record.machine_id) + "\" is not a machine id"));
  }
  TG_TRY(validate_pid(record.controller.pid, "controller.pid"));
  if (record.guardian) {
    TG_TRY(validate_pid(record.guardian->pid, "guardian.pid"));
  }
  if (record.reaper) {
    TG_TRY(validate_pid(record.reaper->pid, "reaper.pid"));
  }
  const BoundaryAddress& boundary = record.boundary;
  if (boundary.pgid) {
    TG_TRY(validate_pid(*boundary.pgid, "boundary.pgid"));
  }
  switch (boundary.kind) {
  case BoundaryKind::cgroup:
    TG_TRY(validate_cgroup_address(boundary.address, record.run_id));
    break;
  case BoundaryKind::process_group:
    if (!boundary.pgid) {
      // Written before COMMAND exists, so that even a controller killed at
      // spawn leaves a record behind: no group yet.
      if (boundary.address == k_pgid_pending) {
        break;
      }
      return fail(record_error("boundary.pgid", "a process-group boundary needs its pgid, or \""
                                                    + std::string(k_pgid_pending) + "\""));
    }
    if (boundary.address != "pgid " + std::to_string(*boundary.pgid)) {
      return fail(record_error("boundary.address",
                               "must be \"pgid " + std::to_string(*boundary.pgid) + "\""));
    }
    break;
  case BoundaryKind::pid_namespace:
    // Nothing is ever acted on by this address (the namespace dies with its
    // controller); it only has to be one of the two forms written.
    if (boundary.address != k_init_pending
        && (boundary.address.rfind("init pid ", 0) != 0 || boundary.address.size() > 20
            || boundary.address.find_first_not_of("0123456789", 9) != std::string::npos
            || boundary.address.size() == 9)) {
      return fail(record_error("boundary.address", "a pid namespace is \"init pid N\" or \""
                                                       + std::string(k_init_pending) + "\""));
    }
    if (boundary.pgid) {
      return fail(record_error("boundary.pgid", "a pid namespace's record names no process group"));
    }
    break;
  case BoundaryKind::job:
    if (boundary.address != job_object_name(record.run_id)) {
      return fail(record_error("boundary.address",
                               "a job must be named \"" + job_object_name(record.run_id) + "\""));
    }
    if (boundary.pgid) {
      return fail(record_error("boundary.pgid", "a job has no process group"));
    }
    break;
  default:
    return fail(record_error("boundary.kind", "unknown kind"));
  }
  if (record.command.empty()) {
    return fail(record_error("command", "must not be empty"));
  }
  TG_TRY(validate_text(record.command.front(), "command[0]"));
  for (std::size_t i = 0; i < record.command.size(); ++i) {
    if (has_nul(record.command[i])) {
      return fail(record_error("command[" + std::to_string(i) + "]", "contains a NUL byte"));
    }
  }
  TG_TRY(validate_text(record.cwd, "cwd"));
  if (has_nul(record.cwd)) {
    return fail(record_error("cwd", "contains a NUL byte"));
  }
  for (std::size_t i = 0; i < record.phases.size(); ++i) {
    const std::string field = "phases[" + std::to_string(i) + "]";
    TG_TRY(validate_text(record.phases[i].name, field + ".name"));
    TG_TRY(validate_time(record.phases[i].at, field + ".at"));
  }
  for (std::size_t i = 0; i < record.authority.size(); ++i) {
    const AuthorityEntry& entry = record.authority[i];
    const std::string field = "authority[" + std::to_string(i) + "]";
    TG_TRY(validate_time(entry.at, field + ".at"));
    TG_TRY(validate_text(entry.action, field + ".action"));
    if (entry.targets.empty()) {
      return fail(record_error(field + ".targets", "must not be empty"));
    }
    TG_TRY(validate_text(entry.reason, field + ".reason"));
    TG_TRY(validate_text(entry.by, field + ".by"));
  }
  if (record.members.size() > k_max_record_members) {
    return fail(record_error("members",
                             "has more than " + std::to_string(k_max_record_members) + " entries"));
  }
  for (std::size_t i = 0; i < record.members.size(); ++i) {
    const std::string field = "members[" + std::to_string(i) + "]";
    TG_TRY(validate_pid(record.members[i].pid, field + ".pid"));
    // Every member descends from COMMAND, which the controller started: a
    // process older than the controller was never the run's, and a record
    // naming one would have sweep or a guardian kill a stranger.
    if (record.members[i].start_time < record.controller.start_time) {
      return fail(record_error(field + ".start_time",
                               "is before the controller's: a process older than its run is "
                               "never one of its members"));
    }
  }
  if (record.drain) {
    if (!signal_named(record.drain->signal)) {
      return fail(record_error("drain.signal",
                               "\"" + printable(record.drain->signal) + "\" is not a signal"));
    }
    // --kill-after, as parse_duration() takes it: at most 10 years.
    constexpr std::int64_t k_max_ns = 10LL * 366 * 24 * 3600 * 1'000'000'000LL;
    if (record.drain->kill_after_ns < 0 || record.drain->kill_after_ns > k_max_ns) {
      return fail(record_error("drain.kill_after_ns", "must be between 0 and 10 years"));
    }
  }
  if (record.exit_code && *record.exit_code < 0) {
    return fail(record_error("exit_code", "must not be negative"));
  }
  if (record.resolution) {
    TG_TRY(validate_text(record.resolution->why, "resolution.why"));
    TG_TRY(validate_time(record.resolution->at, "resolution.at"));
    TG_TRY(validate_text(record.resolution->by, "resolution.by"));
  }
  return validate_nested(record);
}

}  // namespace treeguard
