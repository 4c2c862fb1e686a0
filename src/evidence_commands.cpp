// The evidence commands (evidence_commands.hpp). One file over 500 lines
// because status, sweep and resolve read the same records (the state
// directory's, and the nested runs' kept inside them) and print them with
// the same helpers.
#include "evidence_commands.hpp"

#include "nesting.hpp"
#include "port/file_io.hpp"
#include "port/guardian.hpp"
#include "report.hpp"
#include "state_dir.hpp"
#include "sweep.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>

namespace treeguard {

namespace {

using OrderedJson = nlohmann::ordered_json;

std::string_view controller_state_name(ControllerState state) {
  switch (state) {
  case ControllerState::alive:
    return "alive";
  case ControllerState::dead:
    return "dead";
  case ControllerState::other_boot:
    return "other-boot";
  case ControllerState::other_namespace:
    return "other-namespace";
  case ControllerState::namespace_gone:
    return "namespace-gone";
  case ControllerState::earlier_boot:
    return "earlier-boot";
  case ControllerState::other_machine:
    return "other-machine";
  }
  return "unknown";
}

// How many entries of a list status RUN shows.
constexpr std::size_t k_shown = 50;

// Processes, one a line, by name (DESIGN.md [membership]), the first k_shown.
std::string process_lines(const std::vector<MemberInfo>& processes) {
  std::string out;
  for (std::size_t i = 0; i < processes.size() && i < k_shown; ++i) {
    const MemberInfo& member = processes[i];
    const std::string argv = name_text(member.argv, k_max_argv);
    out += "    " + describe_member(member) + " start " + std::to_string(member.start_time)
           + (member.left_group ? "  (left COMMAND's process group)" : "")
           + (argv.empty() ? "" : "  " + argv) + "\n";
  }
  if (processes.size() > k_shown) {
    out += "    ... and " + std::to_string(processes.size() - k_shown) + " more\n";
  }
  return out;
}

// What the run's boundary holds now: asked only of a run that may still
// hold something and can be judged from here (this boot, this pid
// namespace). A live run's record names the members it was written with
// (at spawn, at an authority entry), not every process it has now.
std::optional<std::vector<MemberInfo>> alive_now(const RunRecord& record, const HostView& host) {
  const ControllerState controller = controller_state(record, host);
  if (record.disposition == Disposition::pass
      || (controller != ControllerState::alive && controller != ControllerState::dead)) {
    return std::nullopt;
  }
  return host.alive_in_boundary(record);
}

// status RUN: what its boundary holds now, the members its record names,
// its authority entries and its notes.
std::string run_detail_lines(const RunRecord& record, const HostView& host) {
  std::string out;
  if (auto alive = alive_now(record, host)) {
    out += "  alive in its boundary now: " + std::to_string(alive->size()) + "\n";
    out += process_lines(*alive);
  } else if (record.disposition != Disposition::pass) {
    out += "  alive in its boundary now: cannot be told from here\n";
  }
  out += "  members recorded: " + std::to_string(record.members.size()) + "\n";
  out += process_lines(record.members);
  if (!record.authority.empty()) {
    out += "  authority entries: " + std::to_string(record.authority.size()) + "\n";
  }
  for (const AuthorityEntry& entry : record.authority) {
    out += "    " + rfc3339(entry.at) + "  " + printable(entry.action, std::string::npos) + " by "
           + printable(entry.by, std::string::npos) + ": "
           + printable(entry.reason, std::string::npos) + "\n      targets: "
           + printable(fmt::format("{}", fmt::join(entry.targets, ", ")), std::string::npos) + "\n";
  }
  if (!record.notes.empty()) {
    out += "  notes:\n";
  }
  for (std::size_t i = 0; i < record.notes.size() && i < k_shown; ++i) {
    out += "    " + printable(record.notes[i], std::string::npos) + "\n";
  }
  return out;
}

OrderedJson processes_json(const std::vector<MemberInfo>& processes) {
  OrderedJson out = OrderedJson::array();
  for (const MemberInfo& member : processes) {
    out.push_back(member_json(member));  // as the report names them
  }
  return out;
}

void print_error(std::FILE* err, const std::string& message) {
  std::fprintf(err, "treeguard: error: %s\n", printable(message, std::string::npos).c_str());
}

}  // namespace

int command_status(const StatusOptions& options) {
  // The same choice as run's, fallback included (state_dir.hpp).
  auto dir = open_state_dir(options.state_dir);
  if (!dir) {
    print_error(stderr, dir.error().message());
    return 125;
  }
  return command_status(dir->path, options.json, *make_host_view(), stdout, stderr, options.run_id);
}

int command_sweep(const SweepOptions& options) {
  // The same choice as run's, fallback included (state_dir.hpp).
  auto dir = open_state_dir(options.state_dir);
  if (!dir) {
    print_error(stderr, dir.error().message());
    return 125;
  }
  return command_sweep(dir->path, options.run_id, *make_host_view(), stdout, stderr);
}

int command_resolve(const ResolveOptions& options) {
  // The same choice as run's, fallback included (state_dir.hpp).
  auto dir = open_state_dir(options.state_dir);
  if (!dir) {
    print_error(stderr, dir.error().message());
    return 125;
  }
  return command_resolve(dir->path, options.run_id, options.why, *make_host_view(), stdout, stderr);
}

std::string format_status_text(const std::vector<StoredRecord>& records, const HostView& host,
                               bool with_members) {
  std::string out;
  for (const StoredRecord& stored : records) {
    if (!stored.record) {
      out += printable(stored.file_name, std::string::npos) + "  corrupt\n";
      // The gate reads only the open records: a finished one never blocks.
      out += std::string(stored.finished ? "  among the finished records; does not block: "
                                         : "  blocks dispatch: ")
             + printable(corrupt_finding(stored).line, std::string::npos) + "\n";
      continue;
    }
    const RunRecord& record = *stored.record;
    // A finished run's controller ended with it: only a pending run's is news.
    const std::string controller_text =
        record.disposition == Disposition::pending
            ? "controller " + std::string(controller_state_name(controller_state(record, host)))
            : std::string("finished");
    out += record.run_id + "  " + std::string(disposition_name(record.disposition)) + "  "
           + controller_text + "  " + std::string(boundary_kind_name(record.boundary.kind)) + " "
           + printable(record.boundary.address, std::string::npos) + "  "
           + printable(fmt::format("{}", fmt::join(record.command, " ")), std::string::npos) + "\n";
    if (record.resolution) {
      out += "  resolved by " + printable(record.resolution->by, std::string::npos) + ": "
             + printable(record.resolution->why, std::string::npos) + "\n";
    }
    if (!stored.nested_in.empty()) {
      out += "  nested in run " + stored.nested_in
             + (stored.held_live ? ": its record is held by that run's guardian\n"
                                 : ": kept in that run's record\n");
      continue;
    }
    if (auto finding = blocking_finding(record, stored.path, host)) {
      out += "  blocks dispatch: " + printable(finding->line, std::string::npos) + "\n";
    }
    if (record.disposition == Disposition::pending && !record.resolution) {
      const ControllerState controller = controller_state(record, host);
      if (controller == ControllerState::other_namespace) {
        out += "  not judged here: its controller is in another pid namespace (pid:["
               + std::to_string(*record.pid_ns)
               + "]); status and sweep it from there, or resolve it if that namespace is gone\n";
      } else if (controller == ControllerState::namespace_gone) {
        out += "  its pid namespace (pid:[" + std::to_string(*record.pid_ns)
               + "]) is gone, and every process of the run with it; the next launch or sweep "
                 "closes the record\n";
      } else if (controller == ControllerState::other_machine) {
        out += "  not judged here: recorded on another machine (machine id "
               + printable(record.machine_id.value_or("?"), std::string::npos)
               + "); status and sweep it there\n";
      } else if (controller == ControllerState::earlier_boot) {
        out += "  ended by the host's reboot (an earlier boot of this machine); the next run or "
               "sweep settles it\n";
      }
    }
    if (with_members) {
      out += run_detail_lines(record, host);
    }
  }
  return out;
}

std::string format_status_json(const std::vector<StoredRecord>& records, const HostView& host,
                               bool with_members) {
  OrderedJson out = OrderedJson::array();
  for (const StoredRecord& stored : records) {
    OrderedJson entry = OrderedJson::object();
    entry["file"] = stored.path.string();
    if (!stored.record) {
      entry["error"] = stored.record.error().message();
      entry["blocking"] =
          stored.finished ? OrderedJson(nullptr) : OrderedJson(corrupt_finding(stored).line);
      out.push_back(std::move(entry));
      continue;
    }
    const RunRecord& record = *stored.record;
    entry["run_id"] = record.run_id;
    entry["disposition"] = std::string(disposition_name(record.disposition));
    entry["controller"] =
        OrderedJson{{"pid", static_cast<std::int64_t>(record.controller.pid)},
                    {"start_time", static_cast<std::uint64_t>(record.controller.start_time)},
                    {"state", std::string(controller_state_name(controller_state(record, host)))}};
    entry["boundary"] =
        OrderedJson{{"kind", std::string(boundary_kind_name(record.boundary.kind))},
                    {"address", record.boundary.address},
                    {"pgid", record.boundary.pgid
                                 ? OrderedJson(static_cast<std::int64_t>(*record.boundary.pgid))
                                 : OrderedJson(nullptr)}};
    entry["command"] = record.command;
    entry["exit_code"] = record.exit_code ? OrderedJson(*record.exit_code) : OrderedJson(nullptr);
    entry["resolution"] = record.resolution ? OrderedJson{{"why", record.resolution->why},
                                                          {"at", record.resolution->at},
                                                          {"by", record.resolution->by}}
                                            : OrderedJson(nullptr);
    const auto finding =
        stored.nested_in.empty() ? blocking_finding(record, stored.path, host) : std::nullopt;
    entry["blocking"] = finding ? OrderedJson(finding->line) : OrderedJson(nullptr);
    entry["nested_in"] =
        stored.nested_in.empty() ? OrderedJson(nullptr) : OrderedJson(stored.nested_in);
    entry["error"] = nullptr;
    OrderedJson authority = OrderedJson::array();
    for (const AuthorityEntry& authorized : record.authority) {
      authority.push_back(authority_json(authorized));  // as the report gives them
    }
    entry["authority"] = std::move(authority);
    entry["notes"] = record.notes;
    if (with_members) {
      const auto alive = alive_now(record, host);
      entry["alive_now"] = alive ? processes_json(*alive) : OrderedJson(nullptr);
      entry["members"] = processes_json(record.members);
    }
    out.push_back(std::move(entry));
  }
  return out.dump(2, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

namespace {

// `stored`, then the nested runs' records it holds: those its guardian holds
// while they go on (a cgroup run in progress, whose guardian answers), and
// those its record keeps (RunRecord::nested).
void with_nested_runs(std::vector<StoredRecord>& out, StoredRecord stored, const HostView& host) {
  std::vector<StoredRecord> nested;
  if (stored.record) {
    const RunRecord& record = *stored.record;
    if (!run_is_over(record) && boundary_facts(record.boundary.kind).nests && record.guardian
        && host.process_alive(record.guardian->pid, record.guardian->start_time)) {
      for (RunRecord& held : records_held_for(stored.path.parent_path(), record.run_id)) {
        nested.push_back(StoredRecord{stored.file_name, stored.path, std::move(held),
                                      stored.finished, record.run_id, true});
      }
    }
    for (const RunRecord& kept : record.nested) {
      nested.push_back(
          StoredRecord{stored.file_name, stored.path, kept, stored.finished, record.run_id, false});
    }
  }
  out.push_back(std::move(stored));
  for (StoredRecord& one : nested) {
    out.push_back(std::move(one));
  }
}

}  // namespace

int command_status(const std::filesystem::path& state_dir, bool json, const HostView& host,
                   std::FILE* out, std::FILE* err, const std::optional<std::string>& run_id) {
  if (auto prepared = prepare_state_dir(state_dir); !prepared) {
    print_error(err, prepared.error().message());
    return 125;
  }
  if (run_id && !is_valid_run_id(*run_id)) {
    print_error(err, "status " + printable(*run_id) + ": not a run id");
    return 125;
  }
  const RecordStore store(state_dir);
  // Open records first, then the finished ones kept (retention: --keep-limit);
  // each followed by the runs nested in it whose records its guardian holds
  // (asked while they go on) or keeps in its record.
  std::vector<StoredRecord> records;
  for (auto list : {store.list(), store.list_finished()}) {
    for (StoredRecord& stored : list) {
      with_nested_runs(records, std::move(stored), host);
    }
  }
  if (run_id) {
    std::vector<StoredRecord> chosen;
    for (StoredRecord& stored : records) {
      if (stored.record && stored.record->run_id == *run_id && stored.nested_in.empty()) {
        chosen.push_back(std::move(stored));
      }
    }
    if (chosen.empty()) {
      print_error(err, "status " + *run_id + ": no such run in " + state_dir.string());
      return 125;
    }
    records = std::move(chosen);
  }
  std::string text;
  if (json) {
    text = format_status_json(records, host, run_id.has_value());
  } else if (records.empty()) {
    text = "no runs recorded in " + printable(state_dir.string(), std::string::npos) + "\n";
  } else {
    text = format_status_text(records, host, run_id.has_value());
  }
  std::fputs(text.c_str(), out);
  // Exit 121, as `run` would: something listed blocks dispatch.
  for (const StoredRecord& stored : records) {
    if (!stored.nested_in.empty()) {
      continue;
    }
    if (stored.record ? blocking_finding(*stored.record, stored.path, host).has_value()
                      : !stored.finished) {
      return 121;
    }
  }
  return 0;
}

int command_sweep(const std::filesystem::path& state_dir, const std::optional<std::string>& run_id,
                  const HostView& host, std::FILE* out, std::FILE* err) {
  if (auto prepared = prepare_state_dir(state_dir); !prepared) {
    print_error(err, prepared.error().message());
    return 125;
  }
  const RecordStore store(state_dir);
  return sweep_runs(store, host, run_id, out, err);
}

std::optional<std::string> still_alive_warning(const RunRecord& record,
                                               const std::filesystem::path& state_dir,
                                               const HostView& host) {
  // Only a run of this boot and namespace whose controller is gone can be
  // looked at from here (a live controller's run is refused above).
  if (controller_state(record, host) != ControllerState::dead) {
    return std::nullopt;
  }
  std::vector<MemberInfo> alive;
  for (const MemberInfo& member : record.members) {
    if (host.process_alive(member.pid, member.start_time)) {
      alive.push_back(member);
    }
  }
  const std::optional<bool> empty = host.boundary_empty(record);
  if (alive.empty() && empty != false) {
    return std::nullopt;
  }
  // Named as every member is named (the first few, by name and pid).
  const std::string what = alive.empty()
                               ? "its boundary " + record.boundary.address + " still has members"
                               : std::to_string(alive.size()) + " of its members are still alive ("
                                     + describe_members(alive) + ")";
  return "run " + record.run_id + " is resolved, but " + what
         + "; they are left running; take them down: "
         + suggested_command("sweep", state_dir, record.run_id);
}

namespace {

// resolve RUN for a nested run whose record its enclosing run's record
// holds (RunRecord::nested): written there, only over that record as read
// here. Only a nested run that ended failed or ambiguous is resolved so: a
// pending one is still its enclosing run's guardian's to settle.
Result<RunRecord> resolve_nested_run(const RecordStore& store, const std::string& run_id,
                                     const std::string& why, std::int64_t at,
                                     const std::string& by) {
  const std::string name = "resolve " + run_id;
  for (const StoredRecord& stored : store.list()) {
    if (!stored.record || nested_record(*stored.record, run_id) == nullptr) {
      continue;
    }
    const RunRecord& read = *stored.record;
    RunRecord record = read;
    for (RunRecord& nested : record.nested) {
      if (nested.run_id != run_id) {
        continue;
      }
      if (nested.resolution) {
        return fail(plain_error(name + ": already resolved by " + nested.resolution->by + ": "
                                + nested.resolution->why));
      }
      if (nested.disposition == Disposition::pending) {
        return fail(plain_error(name + ": its record is held by run " + read.run_id
                                + "'s guardian, which has not settled it yet"));
      }
      nested.resolution = Resolution{why, at, by};
    }
    auto replaced = store.replace_if_unchanged(read, record, Durability::durable);
    if (!replaced) {
      return fail(plain_error(name + ": " + replaced.error().message()));
    }
    if (!*replaced) {
      return fail(plain_error(name + ": the record of run " + read.run_id
                              + ", which holds it, changed while it was being resolved; nothing "
                                "was written: look again with "
                              + suggested_command("status", store.dir(), read.run_id)));
    }
    return *nested_record(record, run_id);
  }
  return fail(plain_error(name + ": no such run in " + store.dir().string()));
}

}  // namespace

Result<RunRecord> resolve_run(const RecordStore& store, const std::string& run_id,
                              const std::string& why, const HostView& host, std::int64_t at,
                              const std::string& by) {
  const std::string name = "resolve " + printable(run_id, std::string::npos);
  if (!is_valid_run_id(run_id)) {
    return fail(plain_error(name + ": not a run id"));
  }
  if (why.find_first_not_of(" \t\r\n") == std::string::npos) {
    return fail(plain_error(name + ": --why must say why"));
  }
  // The record is untrusted: load() refuses anything corrupt or foreign,
  // and nothing is written unless it parsed completely.
  auto loaded = store.load(run_id);
  if (!loaded) {
    if (loaded.error().code == std::errc::no_such_file_or_directory) {
      return resolve_nested_run(store, run_id, why, at, by);
    }
    return fail(plain_error(name + ": " + loaded.error().message()));
  }
  RunRecord record = std::move(*loaded);
  if (record.resolution) {
    return fail(plain_error(name + ": already resolved by " + record.resolution->by + ": "
                            + record.resolution->why));
  }
  const ControllerState controller = controller_state(record, host);
  if (record.disposition == Disposition::pending && controller == ControllerState::alive) {
    return fail(plain_error(name + ": still running (controller pid "
                            + std::to_string(record.controller.pid) + " is alive)"));
  }
  // A pending run of another pid namespace (or machine) may be resolved: where that
  // namespace is gone but this one cannot prove it (a sibling namespace),
  // a person's word is the only way to close it.
  if (record.disposition == Disposition::pending && controller == ControllerState::dead
      && record.guardian && host.process_alive(record.guardian->pid, record.guardian->start_time)) {
    return fail(plain_error(name + ": its guardian (pid " + std::to_string(record.guardian->pid)
                            + ") is still taking the tree down"));
  }
  const RunRecord read = record;
  record.resolution = Resolution{why, at, by};
  // Resolved is finished: kept apart from the open records the gate reads.
  // Written only over the record as read here: a guardian or sweep that
  // wrote it meanwhile (an authority entry, its end) is not overwritten.
  auto replaced = store.replace_if_unchanged(read, record, Durability::durable);
  if (!replaced) {
    return fail(plain_error(name + ": " + replaced.error().message()));
  }
  if (!*replaced) {
    return fail(plain_error(name + ": its record changed while it was being resolved (a guardian "
                            + "or sweep wrote it); nothing was written: look again with "
                            + suggested_command("status", store.dir(), run_id)));
  }
  return record;
}

int command_resolve(const std::filesystem::path& state_dir, const std::string& run_id,
                    const std::string& why, const HostView& host, std::FILE* out, std::FILE* err) {
  if (auto prepared = prepare_state_dir(state_dir); !prepared) {
    print_error(err, prepared.error().message());
    return 125;
  }
  const RecordStore store(state_dir);
  auto resolved = resolve_run(store, run_id, why, host, unix_time_ns(), current_user_label());
  if (!resolved) {
    print_error(err, resolved.error().message());
    return 125;
  }
  std::fprintf(out, "treeguard: resolved run %s\n", resolved->run_id.c_str());
  // A nested run's tree is in its enclosing run's leaf, which that run's
  // end (or sweep) takes down: no advice to sweep a run that has no record
  // of its own.
  const bool held = !store.load(resolved->run_id);
  if (auto warning = held ? std::nullopt : still_alive_warning(*resolved, state_dir, host)) {
    std::fprintf(err, "treeguard: warning: %s\n", printable(*warning, std::string::npos).c_str());
  }
  return 0;
}

}  // namespace treeguard
