#include "sweep.hpp"

#include "after_death.hpp"
#include "authority.hpp"
#include "port/file_io.hpp"
#include "port/host.hpp"
#include "port/takedown.hpp"
#include "record_journal.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace treeguard {

namespace {

// Whether a finished record names live processes: resolved by a person
// while its boundary still held members (`resolve` warns and names them).
// Only swept when named: a sweep of everything reads the open records only.
bool resolved_with_members(const RunRecord& record, const HostView& host) {
  return record.resolution && controller_state(record, host) == ControllerState::dead
         && host.boundary_empty(record) == false;
}

// What a sweep step returns when another settler (a guardian, another
// sweep) wrote the record since it was read: sweep_one() reads it again.
constexpr int k_superseded = -1;

// A run whose controller is not dead on this boot, in this namespace: said
// and settled without a kill, `record` as it was read. Its exit code (0,
// 125 when its record could not be closed, or k_superseded); nullopt for a
// dead controller (take_down()).
std::optional<int> sweep_without_kill(const RecordStore& store, const HostView& host,
                                      const RunRecord& record, std::FILE* out, std::FILE* err) {
  const std::string& id = record.run_id;
  const std::string resolve = suggested_command("resolve", store.dir(), id, "--why TEXT");
  switch (controller_state(record, host)) {
  case ControllerState::alive:
    fmt::print(out, "run {}: still running (controller pid {}); left alone\n", id,
               record.controller.pid);
    return 0;
  case ControllerState::other_boot:
    fmt::print(out,
               "run {}: from another boot; nothing of it can be alive or proven; resolve it: {}\n",
               id, resolve);
    return 0;
  case ControllerState::other_namespace:
    fmt::print(out,
               "run {}: its controller is in another pid namespace; it cannot be judged from "
               "here; left alone (sweep it from there, or, if that namespace is gone: {})\n",
               id, resolve);
    return 0;
  case ControllerState::namespace_gone: {
    // Nothing to kill: every process of the run died with its namespace.
    RunRecord closing = record;
    if (auto closed = close_after_death(
            store, record, closing, record, "swept", true,
            "swept: its pid namespace is gone, and every process of the run with it");
        !closed) {
      fmt::print(err, "treeguard: error: sweep: record of run {} not closed: {}\n", id,
                 closed.error().message());
      return 125;
    } else if (!*closed) {
      return k_superseded;
    }
    fmt::print(out,
               "run {}: its pid namespace (pid:[{}]) is gone, and every process of the run "
               "with it; record closed\n",
               id, record.pid_ns.value_or(0));
    return 0;
  }
  case ControllerState::other_machine:
    fmt::print(out,
               "run {}: recorded on another machine; it cannot be judged from here; left alone "
               "(sweep it there)\n",
               id);
    return 0;
  case ControllerState::earlier_boot:
    if (record.disposition != Disposition::pending) {
      fmt::print(out,
                 "run {}: from an earlier boot of this machine; nothing of it is alive, but it "
                 "was {}: resolve it: {}\n",
                 id, disposition_name(record.disposition), resolve);
      return 0;
    }
    if (auto saved = settle_record(store, record, settled_by_reboot(record, "sweep"), false);
        !saved) {
      fmt::print(err, "treeguard: error: sweep: record of run {} not closed: {}\n", id,
                 saved.error().message());
      return 125;
    } else if (!*saved) {
      return k_superseded;
    }
    fmt::print(out, "run {}: ended by the host's reboot; record closed\n", id);
    return 0;
  case ControllerState::dead:
    break;
  }
  return std::nullopt;
}

// Says what the takedown left alone: another user's orphans carrying the
// run's marker, which nothing tells from a stranger's (sweep never looked at
// the run's tree while it ran).
void say_left_alone(const RunRecord& record, std::FILE* out) {
  for (const auto& process : recorded_boundary(record)->left_alone()) {
    fmt::print(out,
               "run {}: left alone: {}, an orphan of another user carrying the run's marker: "
               "nothing shows it is the run's\n",
               record.run_id, describe_member(process));
  }
}

// A run whose controller died on this boot: its boundary drained with the
// run's own signal and grace (DESIGN.md [guardian]: whoever takes a run
// down drains it first), then taken down, authority first, and its record
// closed. Its exit code: 0, 122 (not proven gone, or the authority not
// durable: the kill withheld), 125 or k_superseded.
int take_down(const RecordStore& store, const RunRecord& read, std::FILE* out, std::FILE* err) {
  RunRecord record = read;
  const std::string& id = record.run_id;
  auto valid = recorded_boundary(record)->check();
  if (!valid) {
    fmt::print(err, "treeguard: error: sweep: run {}: {}; not acted on\n", id,
               valid.error().message());
    return 125;
  }
  const ProcessIdentity self = current_process_identity();
  AfterDeath how;
  how.closing_phase = "swept";
  how.reason =
      fmt::format("sweep: controller pid {} is gone and run was {}{}", record.controller.pid,
                  disposition_name(record.disposition), record.resolution ? " (resolved)" : "");
  how.by = fmt::format("sweep pid {} {}", self.pid, current_user_label());
  how.found_empty_note = "swept: boundary found empty";
  how.drained_note = "swept: the drain emptied the boundary";
  how.taken_down_note = "swept: boundary taken down";
  how.not_proven_note = "swept: not proven empty: ";
  how.kill_failed_note = "sweep failed: ";
  how.tell = [&](const std::string& drain) {
    fmt::print(out, "run {}: {}\n", id, drain);
    std::fflush(out);  // the grace may take a while
  };
  const AfterDeathOutcome outcome = take_down_after_death(store, read, record, how);
  say_left_alone(read, out);
  if (outcome.superseded && !outcome.authorized) {
    return k_superseded;  // nothing sent: the other settler's judgement stands
  }
  if (outcome.drained) {
    if (!outcome.closed) {
      return 125;
    }
    fmt::print(out, "run {}: boundary {} emptied by the drain; record closed\n", id,
               record.boundary.address);
    return 0;
  }
  if (!outcome.found_empty && !outcome.authorized) {
    fmt::print(err,
               "treeguard: error: sweep: run {}: authority not durable ({}); forced kill "
               "withheld\n",
               id, outcome.why_not);
    return 122;
  }
  if (!outcome.closed) {
    fmt::print(err, "treeguard: error: sweep: record of run {} not closed: {}\n", id,
               outcome.closed.error().message());
  }
  if (outcome.superseded) {
    // Killed under this sweep's authority; the record closed by another.
    fmt::print(out, "run {}: boundary {} {}; its record was written by another settler since\n", id,
               record.boundary.address,
               outcome.proven ? "taken down" : "NOT proven empty: " + outcome.why_not);
    return k_superseded;
  }
  if (outcome.found_empty) {
    if (!outcome.closed) {
      return 125;
    }
    fmt::print(out, "run {}: boundary {} already empty; record closed\n", id,
               record.boundary.address);
    return 0;
  }
  fmt::print(out, "run {}: boundary {} {}\n", id, record.boundary.address,
             outcome.proven ? "taken down" : "NOT proven empty: " + outcome.why_not);
  if (!outcome.proven) {
    return 122;
  }
  return outcome.closed ? 0 : 125;
}

// Sweep one run, as `record` was read; its exit code (0, 122, 125 or
// k_superseded). `named`: the user asked for this run.
int sweep_read(const RecordStore& store, const HostView& host, const RunRecord& record, bool named,
               std::FILE* out, std::FILE* err) {
  if (record.disposition == Disposition::pass
      || (record.resolution && !(named && resolved_with_members(record, host)))) {
    if (named) {
      fmt::print(out, "run {}: nothing to sweep ({})\n", record.run_id,
                 record.resolution ? "resolved" : "pass");
    }
    return 0;
  }
  if (auto settled = sweep_without_kill(store, host, record, out, err)) {
    return *settled;
  }
  return take_down(store, record, out, err);
}

// Sweep one run; its exit code (0, 122 or 125). A record another settler
// wrote meanwhile is read again and swept as it now stands, once; written
// again meanwhile, it is left to them (122).
int sweep_one(const RecordStore& store, const HostView& host, const RunRecord& record, bool named,
              std::FILE* out, std::FILE* err) {
  const int code = sweep_read(store, host, record, named, out, err);
  if (code != k_superseded) {
    return code;
  }
  auto again = store.load(record.run_id);
  if (!again) {
    fmt::print(err, "treeguard: error: sweep: record of run {} changed and cannot be read: {}\n",
               record.run_id, again.error().message());
    return 125;
  }
  const int second = sweep_read(store, host, *again, named, out, err);
  if (second != k_superseded) {
    return second;
  }
  fmt::print(err,
             "treeguard: error: sweep: run {}: its record keeps being written by another "
             "settler (a guardian or sweep); left to it\n",
             record.run_id);
  return 122;
}

}  // namespace

// A record write takes milliseconds; a temporary file this old was left by
// a writer killed before its rename.
constexpr std::chrono::seconds k_abandoned_write_age{600};

int sweep_runs(const RecordStore& store, const HostView& host,
               const std::optional<std::string>& run_id, std::FILE* out, std::FILE* err) {
  int exit_code = 0;
  bool found = false;
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
    if (run_id && stored.record->run_id != *run_id) {
      continue;
    }
    found = true;
    exit_code =
        std::max(exit_code, sweep_one(store, host, *stored.record, run_id.has_value(), out, err));
  }
  if (run_id && !found && is_valid_run_id(*run_id)) {
    // A finished run (pass, resolved) is found too: status lists it.
    auto finished = store.load(*run_id);
    if (finished) {
      return sweep_one(store, host, *finished, true, out, err);
    }
    if (finished.error().code != std::errc::no_such_file_or_directory) {
      fmt::print(err, "treeguard: error: sweep: untrusted record of run {}: {}; not acted on\n",
                 *run_id, finished.error().message());
      return 125;
    }
  }
  if (run_id && !found) {
    fmt::print(err, "treeguard: error: sweep: no run {} in {}\n", *run_id, store.dir().string());
    return 125;
  }
  if (!run_id) {
    auto removed = store.remove_abandoned_temps(k_abandoned_write_age);
    if (!removed) {
      fmt::print(err, "treeguard: warning: sweep: {}\n", removed.error().message());
    } else if (*removed > 0) {
      fmt::print(
          out,
          "removed {} temporary file(s) of state directory writes abandoned over {} minutes ago\n",
          *removed, k_abandoned_write_age.count() / 60);
    }
  }
  return exit_code;
}

}  // namespace treeguard
