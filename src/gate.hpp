// The dispatch gate (DESIGN.md [gate]): before `treeguard run` launches
// anything, the records of the state directory must show that no earlier
// run left a tree whose fate is unknown. Pure logic: what the host knows
// (boot id, liveness, emptiness of a boundary) comes in through HostView,
// so every branch is testable without processes.
#pragma once

#include "port/host_view.hpp"
#include "record.hpp"
#include "record_store.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

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
