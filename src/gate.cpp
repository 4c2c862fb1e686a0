#include "gate.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace treeguard {

namespace {

std::string command_text(const RunRecord& record) {
  // Enough of COMMAND to recognise the run, without control characters.
  const std::string out = fmt::format("{}", fmt::join(record.command, " "));
  if (out.size() > 60) {
    return printable(out.substr(0, 57), std::string::npos) + "...";
  }
  return printable(out, std::string::npos);
}

// The cures, for the record at `path` (its directory is the state
// directory).
std::string resolve_command(const std::string& run_id, const std::filesystem::path& path) {
  return suggested_command("resolve", path.parent_path(), run_id, "--why TEXT");
}

std::string sweep_command(const std::string& run_id, const std::filesystem::path& path) {
  return suggested_command("sweep", path.parent_path(), run_id);
}

// The latest time the record says anything happened: when it was last
// written, as near as the record tells.
std::int64_t last_written_at(const RunRecord& record) {
  std::int64_t latest = 0;
  for (const PhaseEntry& phase : record.phases) {
    latest = std::max(latest, phase.at);
  }
  for (const AuthorityEntry& entry : record.authority) {
    latest = std::max(latest, entry.at);
  }
  return latest;
}

// A record of another boot: of an earlier boot of this machine, of another
// machine, or of a machine not known (DESIGN.md [gate]). Same machine id
// is not enough: a record written since this boot began is of a running
// machine that shares the id (a cloned image), never of an earlier boot.
// A host without a machine id (a chroot, a container) writes none into its
// records, so a record that names one was written on another machine: it is
// never this host's to judge, settle or block on. A record that names none
// may be this host's earlier boot or another such host's: not known.
ControllerState other_boot_state(const RunRecord& record, const HostView& host) {
  if (!record.machine_id) {
    return ControllerState::other_boot;
  }
  const std::string machine = host.machine_id();
  if (machine.empty() || *record.machine_id != machine) {
    return ControllerState::other_machine;
  }
  const std::optional<std::int64_t> began = host.boot_began_at();
  if (!began || last_written_at(record) >= *began) {
    return ControllerState::other_machine;
  }
  return ControllerState::earlier_boot;
}

// Only asked once the controller is known dead on this boot, in this
// namespace: the guardian shares both.
bool guardian_alive(const RunRecord& record, const HostView& host) {
  return record.guardian && host.process_alive(record.guardian->pid, record.guardian->start_time);
}

// A pending record that can never block again, as the gate keeps it among
// the finished ones: its controller and guardian are dead and its boundary
// is proven empty, or its pid namespace is gone.
// `record` marked pass at a "settled" phase, with `note` saying why.
RunRecord settled_as_pass(const RunRecord& record, std::string note) {
  RunRecord settled = record;
  settled.disposition = Disposition::pass;
  settled.phases.push_back(PhaseEntry{"settled", unix_time_ns()});
  settled.notes.push_back(std::move(note));
  return settled;
}

RunRecord settled_record(const RunRecord& record, ControllerState controller) {
  return settled_as_pass(
      record,
      controller == ControllerState::namespace_gone
          ? "controller lost; settled at a later launch: its pid namespace (pid:["
                + std::to_string(record.pid_ns.value_or(0))
                + "]) is gone, and every process of the run with it"
          : "controller lost; settled at a later launch: controller and guardian gone, boundary "
            "proven empty");
}

}  // namespace

std::string suggested_command(const std::string& verb, const std::filesystem::path& state_dir,
                              const std::string& run_id, const std::string& rest) {
  std::error_code error;
  std::filesystem::path dir = std::filesystem::absolute(state_dir, error);
  if (error) {
    dir = state_dir;
  }
  std::string out = "treeguard " + verb + " --state-dir "
                    + shell_quoted(dir.lexically_normal().string()) + " " + shell_quoted(run_id);
  return rest.empty() ? out : out + " " + rest;
}

bool GateVerdict::corrupt() const {
  for (const GateFinding& finding : findings) {
    if (finding.kind == FindingKind::corrupt) {
      return true;
    }
  }
  return false;
}

int GateVerdict::exit_code() const {
  if (open()) {
    return 0;
  }
  return corrupt() ? 125 : 121;
}

ControllerState controller_state(const RunRecord& record, const HostView& host) {
  // An empty boot id on either side proves nothing: treat it as another boot.
  const std::string boot = host.boot_id();
  if (boot.empty()) {
    return ControllerState::other_boot;
  }
  if (record.boot_id != boot) {
    return other_boot_state(record, host);
  }
  const std::uint64_t ns = host.pid_namespace();
  if (record.pid_ns && ns != 0) {
    if (*record.pid_ns != ns) {
      return host.pid_namespace_gone(*record.pid_ns, record.pid_ns_init)
                 ? ControllerState::namespace_gone
                 : ControllerState::other_namespace;
    }
    // This namespace holds the record's inode now. Under another init it
    // is not the record's: an inode is handed on only once its namespace
    // is gone, so the record's is gone.
    const auto init = host.pid_namespace_init();
    if (record.pid_ns_init && init && *record.pid_ns_init != *init) {
      return ControllerState::namespace_gone;
    }
  }
  return host.process_alive(record.controller.pid, record.controller.start_time)
             ? ControllerState::alive
             : ControllerState::dead;
}

RunRecord settled_by_reboot(const RunRecord& record, const std::string& by) {
  return settled_as_pass(record, "ended by the host's reboot: the record is of an earlier boot ("
                                     + record.boot_id + ") of this machine; settled by " + by);
}

namespace {

// blocking_finding() for an open record whose controller_state() is
// `controller` (asked once: for a record of another pid namespace it reads
// every process of the host).
std::optional<GateFinding> finding_for(const RunRecord& record, const std::filesystem::path& path,
                                       const HostView& host, ControllerState controller) {
  const std::string run = "run " + record.run_id + " (" + command_text(record) + ")";
  // Only a tree of this boot can still be alive; only then is sweep the cure.
  auto tree_may_live = [&] {
    return controller != ControllerState::other_boot && host.boundary_empty(record) != true;
  };

  if (record.disposition == Disposition::failed || record.disposition == Disposition::ambiguous) {
    const std::string what = record.disposition == Disposition::failed
                                 ? " failed: members survived the forced kill"
                                 : " is ambiguous: the tree's fate is not proven";
    // Only what can be judged from here can be swept from here.
    const std::string cure = controller == ControllerState::dead && tree_may_live()
                                 ? sweep_command(record.run_id, path)
                                 : resolve_command(record.run_id, path);
    return GateFinding{FindingKind::unresolved, record.run_id, path,
                       run + what + "; unresolved; run: " + cure};
  }

  // Pending: the run is in flight, or its controller died mid-run.
  switch (controller) {
  case ControllerState::alive:
    return std::nullopt;  // a concurrent run (make -j): none of our business
  case ControllerState::other_boot:
    return GateFinding{FindingKind::other_boot, record.run_id, path,
                       run + " is pending from another boot; its end cannot be proven; run: "
                           + resolve_command(record.run_id, path)};
  case ControllerState::earlier_boot:
    return std::nullopt;  // ended with that boot: settled (GateVerdict::settle)
  case ControllerState::other_namespace:
  case ControllerState::other_machine:
    return std::nullopt;  // reported (GateVerdict::unjudged), never judged here
  case ControllerState::namespace_gone:
    return std::nullopt;  // everything of it died with it: settled
  case ControllerState::dead:
    break;
  }
  if (guardian_alive(record, host)) {
    return std::nullopt;  // the guardian is taking it down, and will record how
  }
  const std::optional<bool> empty = host.boundary_empty(record);
  if (empty == true) {
    return std::nullopt;
  }
  const std::string state =
      empty ? "its boundary " + record.boundary.address + " still has members"
            : "its boundary " + record.boundary.address + " cannot be proven empty";
  return GateFinding{FindingKind::controller_lost, record.run_id, path,
                     run + " lost its controller (pid " + std::to_string(record.controller.pid)
                         + ") and " + state + "; run: " + sweep_command(record.run_id, path)};
}

// The first nested run's record `record` holds that blocks: one that ended
// failed or ambiguous, unresolved. Its tree is (or was) inside this run's
// leaf, which this run's own end takes down and proves empty; what is left
// to a person is to read the evidence and resolve it. A pending one is this
// run's to settle (its guardian, or its end), never a finding of its own.
std::optional<GateFinding> nested_finding(const RunRecord& record,
                                          const std::filesystem::path& path) {
  for (const RunRecord& nested : record.nested) {
    if (nested.resolution
        || (nested.disposition != Disposition::failed
            && nested.disposition != Disposition::ambiguous)) {
      continue;
    }
    const std::string what = nested.disposition == Disposition::failed
                                 ? " failed: members survived the forced kill"
                                 : " is ambiguous: the tree's fate is not proven";
    return GateFinding{FindingKind::unresolved, nested.run_id, path,
                       "run " + nested.run_id + " (" + command_text(nested) + "), nested in run "
                           + record.run_id + "," + what
                           + "; unresolved; run: " + resolve_command(nested.run_id, path)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<GateFinding>
blocking_finding(const RunRecord& record, const std::filesystem::path& path, const HostView& host) {
  if (!record.resolution && record.disposition != Disposition::pass) {
    if (auto finding = finding_for(record, path, host, controller_state(record, host))) {
      return finding;
    }
  }
  return nested_finding(record, path);
}

GateFinding corrupt_finding(const StoredRecord& stored) {
  const std::string reason =
      stored.record ? std::string("unknown") : stored.record.error().message();
  return GateFinding{FindingKind::corrupt, "", stored.path, "untrusted record: " + reason};
}

GateVerdict evaluate_gate(const std::vector<StoredRecord>& records, const HostView& host) {
  GateVerdict verdict;
  for (const StoredRecord& stored : records) {
    if (!stored.record) {
      verdict.findings.push_back(corrupt_finding(stored));
      continue;
    }
    const RunRecord& record = *stored.record;
    if (auto finding = nested_finding(record, stored.path)) {
      // An unresolved nested run blocks whatever state the run itself is in.
      verdict.findings.push_back(std::move(*finding));
      continue;
    }
    if (record.resolution || record.disposition == Disposition::pass) {
      verdict.settle.push_back({record, record});  // finished: kept apart from open runs
      continue;
    }
    const ControllerState controller = controller_state(record, host);
    if (auto finding = finding_for(record, stored.path, host, controller)) {
      verdict.findings.push_back(std::move(*finding));
    } else {
      // Pending and not blocking: running here, run elsewhere, in its
      // guardian's hands, or dead and proven empty (finding_for asked).
      if (controller == ControllerState::other_namespace) {
        verdict.unjudged.push_back("run " + record.run_id + " (" + command_text(record)
                                   + "): its controller is in another pid namespace; "
                                     "not judged here");
      } else if (controller == ControllerState::other_machine) {
        verdict.unjudged.push_back("run " + record.run_id + " (" + command_text(record)
                                   + "): recorded on another machine (machine id "
                                   + record.machine_id.value_or("?") + "); not judged here");
      } else if (controller == ControllerState::earlier_boot) {
        verdict.settle.push_back({record, settled_by_reboot(record, "a later launch")});
      } else if (controller == ControllerState::namespace_gone
                 || (controller == ControllerState::dead && !guardian_alive(record, host))) {
        verdict.settle.push_back({record, settled_record(record, controller)});
      }
    }
  }
  return verdict;
}

}  // namespace treeguard
