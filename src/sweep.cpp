#include "sweep.hpp"

#include "authority.hpp"
#include "file_io.hpp"
#include "host.hpp"
#include "record_journal.hpp"
#include "takedown.hpp"

#include <fmt/format.h>

namespace treeguard {

namespace {

// Mark a swept record and keep it durable; the gate then lets runs go.
// False (with one line on `err`) when the record could not be written.
bool close_record(const RecordStore& store, RunRecord& record, bool proven, std::string note,
                  std::FILE* err) {
  record.phases.push_back(PhaseEntry{"swept", unix_time_ns()});
  record.disposition = settled_disposition(record, proven);
  record.notes.push_back(std::move(note));
  // A proven end is finished: kept apart from the open records.
  auto saved =
      proven ? store.finish(record, Durability::durable) : store.save(record, Durability::durable);
  if (!saved) {
    fmt::print(err, "treeguard: error: sweep: record of run {} not closed: {}\n", record.run_id,
               saved.error().message());
  }
  return static_cast<bool>(saved);
}

// The exit of a sweep that could not write a record it closed: the state
// directory is unusable (125), unless something worse (122) was found.
int record_not_closed(int exit_code) {
  return exit_code == 0 ? 125 : exit_code;
}

}  // namespace

int sweep_runs(const RecordStore& store, const HostView& host,
               const std::optional<std::string>& run_id, std::FILE* out, std::FILE* err) {
  int exit_code = 0;
  bool found = false;
  const ProcessIdentity self = current_process_identity();
  for (auto& stored : store.list()) {
    if (!stored.record) {
      if (!run_id || stored.file_name == *run_id + ".json") {
        fmt::print(err, "treeguard: error: sweep: untrusted record {}: {}; not acted on\n",
                   stored.path.string(), stored.record.error().message());
        exit_code = 125;
        found = found || run_id.has_value();
      }
      continue;
    }
    RunRecord record = *stored.record;
    if (run_id && record.run_id != *run_id) {
      continue;
    }
    found = true;
    const std::string& id = record.run_id;
    if (record.resolution || record.disposition == Disposition::pass) {
      if (run_id) {
        fmt::print(out, "run {}: nothing to sweep ({})\n", id,
                   record.resolution ? "resolved" : "pass");
      }
      continue;
    }
    switch (controller_state(record, host)) {
    case ControllerState::alive:
      fmt::print(out, "run {}: still running (controller pid {}); left alone\n", id,
                 record.controller.pid);
      continue;
    case ControllerState::other_boot:
      fmt::print(out,
                 "run {}: from another boot; nothing of it can be alive or proven; "
                 "resolve it: treeguard resolve {} --why TEXT\n",
                 id, id);
      continue;
    case ControllerState::other_namespace:
      fmt::print(out,
                 "run {}: its controller is in another pid namespace; it cannot be judged from "
                 "here; left alone (sweep it from there, or, if that namespace is gone: "
                 "treeguard resolve {} --why TEXT)\n",
                 id, id);
      continue;
    case ControllerState::namespace_gone:
      // Nothing to kill: every process of the run died with its namespace.
      std::ignore = remove_recorded_boundary(record);
      if (!close_record(store, record, true,
                        "swept: its pid namespace is gone, and every process of the run with it",
                        err)) {
        exit_code = record_not_closed(exit_code);
        continue;
      }
      fmt::print(out,
                 "run {}: its pid namespace (pid:[{}]) is gone, and every process of the run "
                 "with it; record closed\n",
                 id, record.pid_ns.value_or(0));
      continue;
    case ControllerState::dead:
      break;
    }
    auto valid = check_recorded_boundary(record);
    if (!valid) {
      fmt::print(err, "treeguard: error: sweep: run {}: {}; not acted on\n", id,
                 valid.error().message());
      exit_code = 125;
      continue;
    }
    std::string why_not;
    std::vector<MemberInfo> alive;
    if (recorded_boundary_empty(record, &why_not, &alive) == true) {
      std::ignore = remove_recorded_boundary(record);
      if (!close_record(store, record, true, "swept: boundary found empty", err)) {
        exit_code = record_not_closed(exit_code);
        continue;
      }
      fmt::print(out, "run {}: boundary {} already empty; record closed\n", id,
                 record.boundary.address);
      continue;
    }
    // Write-ahead authority, as for the controller's own forced kill.
    AuthorityEntry entry;
    entry.at = unix_time_ns();
    entry.action = recorded_force_method(record);
    entry.targets = authority_targets(record, alive);
    entry.reason = fmt::format("sweep: controller pid {} is gone and run was {}",
                               record.controller.pid, disposition_name(record.disposition));
    entry.by = fmt::format("sweep pid {} {}", self.pid, current_user_label());
    auto authorized = record_authority(store, record, std::move(entry));
    if (!authorized) {
      fmt::print(err,
                 "treeguard: error: sweep: run {}: authority not durable ({}); forced kill "
                 "withheld\n",
                 id, authorized.error().message());
      exit_code = 122;
      continue;
    }
    auto killed = kill_recorded_boundary(record, std::chrono::seconds(5), &why_not);
    const bool proven = killed && *killed;
    if (proven) {
      std::ignore = remove_recorded_boundary(record);
    }
    const bool closed =
        close_record(store, record, proven,
                     proven ? "swept: boundary taken down"
                            : (killed ? "swept: not proven empty: " + why_not
                                      : "sweep failed: " + killed.error().message()),
                     err);
    fmt::print(out, "run {}: boundary {} {}\n", id, record.boundary.address,
               proven ? "taken down"
                      : "NOT proven empty: " + (killed ? why_not : killed.error().message()));
    if (!proven) {
      exit_code = 122;
    } else if (!closed) {
      exit_code = record_not_closed(exit_code);
    }
  }
  if (run_id && !found) {
    fmt::print(err, "treeguard: error: sweep: no run {} in {}\n", *run_id, store.dir().string());
    return 125;
  }
  return exit_code;
}

}  // namespace treeguard
