// The guardian (contract section 7): a small process outside the boundary,
// started before COMMAND, that outlives a controller killed by SIGKILL.
// When the controller dies without dismissing it, the guardian writes the
// authority for the forced kill durably into the run's record, takes the
// boundary down, and records that the controller was lost. It is never a
// member: it is not a descendant of the controller and not in the leaf.
#pragma once

#include "boundary.hpp"
#include "record.hpp"
#include "result.hpp"

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace treeguard {

struct GuardianSpec {
  std::filesystem::path state_dir;
  std::string run_id;
  BoundaryKind kind = BoundaryKind::cgroup;
  std::string address;  // the leaf's path: acted on only if the record agrees
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
};

// Start the guardian and wait until it watches. Must be called before the
// controller becomes a child subreaper (i.e. before spawn). A null pointer
// means none is needed: as PID 1 of a namespace, or with a pid-namespace
// boundary, the controller's death takes the whole namespace down.
Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec);

}  // namespace treeguard
