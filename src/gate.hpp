// The dispatch gate (contract section 5): before `treeguard run` launches
// anything, the records of the state directory must show that no earlier
// run left a tree whose fate is unknown. Pure logic: what the host knows
// (boot id, liveness, emptiness of a boundary) comes in through HostView,
// so every branch is testable without processes.
#pragma once

#include "record.hpp"
#include "record_store.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// What the gate may ask the host. The real one lives with the platform's
// liveness code (the one definition of "alive", contract section 6).
class HostView {
public:
  virtual ~HostView() = default;
  // This boot's id, as records carry it; empty if unknown.
  virtual std::string boot_id() const = 0;
  // This process's pid namespace, as records carry it (RunRecord::pid_ns);
  // 0 if unknown. A record of another namespace names pids that mean
  // nothing here.
  virtual std::uint64_t pid_namespace() const { return 0; }
  // When this pid namespace's init started (RunRecord::pid_ns_init);
  // nullopt if unknown.
  virtual std::optional<unsigned long long> pid_namespace_init() const { return std::nullopt; }
  // The pid namespace `inode`, not this one (whose init started at `init`,
  // if known), is proven gone, and every process that was in it with it:
  // seeing every process of the host, none is in it (or the one holding
  // that inode now has another init). False when that cannot be told from
  // here. (A record of this namespace's inode under another init is of a
  // namespace gone: controller_state() tells that from pid_namespace_init.)
  virtual bool pid_namespace_gone(std::uint64_t /*inode*/,
                                  std::optional<unsigned long long> /*init*/) const {
    return false;
  }
  // This machine's id, as records carry it (RunRecord::machine_id); empty
  // if unknown.
  virtual std::string machine_id() const { return {}; }
  // When this boot began, in ns since the Unix epoch; nullopt if unknown.
  // A record of another boot of this machine is of an earlier one only if
  // it was last written before this boot began: one written since is
  // another machine's that shares the id (a cloned image).
  virtual std::optional<std::int64_t> boot_began_at() const { return std::nullopt; }
  // The process with this pid and start time (this boot) is alive.
  virtual bool process_alive(long pid, unsigned long long start_time) const = 0;
  // The record's boundary is proven empty (true), proven not empty (false),
  // or cannot be told (nullopt). Only asked for records of this boot.
  virtual std::optional<bool> boundary_empty(const RunRecord& record) const = 0;
  // The run's processes the record's boundary holds now, named as far as
  // the platform can name them from here (comm, argv); nullopt when that
  // cannot be told. Asked by `status RUN` only: it may scan the host.
  virtual std::optional<std::vector<MemberInfo>>
  alive_in_boundary(const RunRecord& record) const = 0;
};

// The live view of this host, built from the platform's liveness and
// takedown code (platform/linux/host_view.cpp). Never null.
std::unique_ptr<HostView> make_host_view();

enum class FindingKind {
  unresolved,       // failed or ambiguous, and nobody resolved it
  controller_lost,  // pending, controller dead, boundary not proven empty
  other_boot,       // pending, of another boot of a machine not known to be this one
  corrupt           // unreadable, malformed or foreign file: never trusted
};

// One reason the gate is closed.
struct GateFinding {
  FindingKind kind = FindingKind::corrupt;
  std::string run_id;          // empty for a corrupt file
  std::filesystem::path path;  // the record's file
  // One line for a human, naming the run (or file) and, for a run, ending
  // with the command that resolves it (suggested_command, in the record's
  // directory): "treeguard sweep --state-dir DIR RUN" while the tree may
  // still be alive, else "treeguard resolve --state-dir DIR RUN --why TEXT".
  std::string line;
};

// A record to settle: as the gate read it, and as it is to be kept
// (settle_record() writes it only if the file is still `read`).
struct Settlement {
  RunRecord read;
  RunRecord settled;
};

struct GateVerdict {
  std::vector<GateFinding> findings;
  // Records that can never block again, as they are to be kept among the
  // finished ones (RecordStore::finish), so that no later gate reads them:
  // pass or resolved records found among the open ones, and pending runs
  // whose controller and guardian are dead and whose boundary is proven
  // empty, marked pass with the note "controller lost; settled ...", and
  // pending runs of an earlier boot of this machine, marked pass with the
  // note "ended by the host's reboot; ...".
  std::vector<Settlement> settle;
  // Runs the gate cannot judge from here (a controller in another pid
  // namespace, a record of another machine): reported, never blocking,
  // never swept from here.
  std::vector<std::string> unjudged;

  // Dispatch may go ahead.
  bool open() const { return findings.empty(); }
  // Some file could not be trusted (the lead maps this to exit 125).
  bool corrupt() const;
  // Exit code of a refused dispatch: 125 if anything is corrupt, else 121;
  // 0 when the gate is open.
  int exit_code() const;
};

// How a record's controller stands, as status and the gate both see it.
//  - other_namespace: the record's controller is in another pid namespace,
//    so its pid cannot be looked up here;
//  - namespace_gone: that namespace is proven gone
//    (HostView::pid_namespace_gone): the controller and every process of
//    the run died with it;
//  - earlier_boot: the record is of an earlier boot of this machine (same
//    machine id, last written before this boot began): the reboot ended
//    every process of it;
//  - other_machine: the record is of another boot and another machine (a
//    state directory shared over NFS), or names a machine id while this
//    host has none (so it was not written here): nothing of it can be
//    judged here;
//  - other_boot: of another boot, and not known to be this machine's (the
//    record names no machine id): its end cannot be proven.
enum class ControllerState {
  alive,
  dead,
  other_boot,
  other_namespace,
  namespace_gone,
  earlier_boot,
  other_machine
};

// The settled form of a pending record of an earlier boot of this machine:
// pass, noted "ended by the host's reboot". The gate and sweep both use it.
RunRecord settled_by_reboot(const RunRecord& record, const std::string& by);

ControllerState controller_state(const RunRecord& record, const HostView& host);

// A command for the user to paste, exactly as it must be typed: "treeguard
// VERB --state-dir DIR RUN[ REST]", DIR absolute and shell-quoted, so that
// it works from any directory and shell, whatever chose the directory
// (--state-dir, $TREEGUARD_STATE_DIR, the default). Every piece of advice
// the evidence commands print is made here.
std::string suggested_command(const std::string& verb, const std::filesystem::path& state_dir,
                              const std::string& run_id, const std::string& rest = "");

// The finding that `record` blocks dispatch, if it does. A resolved record
// never blocks; a pending one never blocks while its controller is alive (a
// concurrent run), while its guardian is alive (it is taking the tree down,
// and records how that ended), or when its controller is in another pid
// namespace (it cannot be judged from here).
std::optional<GateFinding>
blocking_finding(const RunRecord& record, const std::filesystem::path& path, const HostView& host);

// The finding for a file that could not be read or trusted.
GateFinding corrupt_finding(const StoredRecord& stored);

// Judge the open records of the state directory (RecordStore::list()).
GateVerdict evaluate_gate(const std::vector<StoredRecord>& records, const HostView& host);

}  // namespace treeguard
