// The guardian (DESIGN.md [guardian]): a small process outside the boundary,
// started before COMMAND, that outlives a controller killed by SIGKILL.
// When the controller dies without dismissing it, the guardian writes the
// authority for the forced kill durably into the run's record, takes the
// boundary down, and records that the controller was lost. It is never a
// member: it is not a descendant of the controller and not in the leaf.
#pragma once

#include "nested_protocol.hpp"
#include "nesting.hpp"
#include "port/boundary.hpp"
#include "record.hpp"
#include "result.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

struct GuardianSpec {
  std::filesystem::path state_dir;
  std::string run_id;
  BoundaryKind kind = BoundaryKind::cgroup;
  std::string address;  // the leaf's path: acted on only if the record agrees
  // The runs whose leaves hold this cgroup leaf, nearest first: the first
  // whose guardian listens (nested_runs_socket) guards this run, and no
  // guardian process is started: the controller (pid and start time)
  // announces itself to that guardian, which acts as this run's own would
  // have when the controller dies without finishing the run.
  std::vector<EnclosingGuardian> enclosing = {};
  ProcessIdentity controller = {};
  // What the announcement says of the run besides (nested_protocol.hpp).
  std::string cwd = {};
  std::vector<std::string> command = {};
};

class Guardian {
public:
  virtual ~Guardian() = default;
  virtual ProcessIdentity identity() const = 0;
  // Who took the guardian in when it was orphaned at its start (Linux: the
  // controller's nearest child subreaper above, or the namespace's init):
  // the run's orphans go there too once the controller is gone. nullopt
  // where that does not apply or cannot be read (RunRecord::reaper).
  virtual std::optional<ProcessIdentity> reaper() const { return std::nullopt; }
  // The run is over, however it ended: the guardian exits without acting.
  virtual void dismiss() = 0;
  // The controller could not take the tree down itself (an internal error
  // in its own takedown): the guardian stays armed and acts once the
  // controller is gone. Nothing this object does afterwards dismisses it.
  virtual void keep_armed() = 0;
  // A run taken by the enclosing run's guardian (announced to it): a
  // descriptor that becomes readable, or hangs up, once that guardian is
  // gone (the run then guards itself). -1 for a guardian of the run's own.
  virtual int gone_fd() const { return -1; }
};

// Start the guardian and wait until it watches; or, for a nested run whose
// spec names an enclosing guardian, announce the controller to it (no
// process started; falls back to a guardian of its own if the
// announcement cannot be made). Must be called before the
// controller becomes a child subreaper (i.e. before spawn). A null pointer
// means none is needed: as PID 1 of a namespace, or with a pid-namespace
// boundary, the controller's death takes the whole namespace down.
Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec);

}  // namespace treeguard
