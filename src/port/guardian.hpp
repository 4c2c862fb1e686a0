// The guardian (DESIGN.md [guardian]): a small process outside the boundary,
// started before COMMAND, that outlives a controller killed by SIGKILL.
// When the controller dies without dismissing it, the guardian writes the
// authority for the forced kill durably into the run's record, takes the
// boundary down, and records that the controller was lost. It is never a
// member: it is not a descendant of the controller and not in the leaf.
#pragma once

#include "nested_protocol.hpp"
#include "port/boundary.hpp"
#include "record.hpp"
#include "result.hpp"

#include <cerrno>
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
  // announce_to_enclosing(): the runs this one runs inside, innermost first
  // (nesting.hpp: enclosing_runs()); the first whose guardian takes it holds
  // its record and guards it. The controller (pid and start time), the
  // run's drain, its working directory and COMMAND are what the
  // announcement says.
  std::vector<std::string> enclosing = {};
  ProcessIdentity controller = {};
  RecordedDrain drain = {};
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

  // The rest is for a run taken by the enclosing run's guardian, which holds
  // its record (DESIGN.md [nested]); a guardian of the run's own answers
  // "none".
  // The run whose guardian took this one.
  virtual std::optional<std::string> holding_run() const { return std::nullopt; }
  // The leaf of the innermost run this one runs inside, as that guardian
  // knows it (--leftovers outer hands leftovers there); nullopt when not.
  virtual std::optional<std::string> innermost_leaf() const { return std::nullopt; }
  // A descriptor that becomes readable, or hangs up, once that guardian is
  // gone (the run then guards itself); -1 for none.
  virtual int gone_fd() const { return -1; }
  // Write what evidence needs of `record` (the run's record as it stands: an
  // authority entry, an ambiguous or failed end, a hand-over) into the
  // enclosing run's record, durably when asked, before returning. An error
  // means it is not written (a forced kill must not be sent); its code is
  // ENOTCONN when that guardian is gone.
  virtual Result<void> keep_in_enclosing(const RunRecord& /*record*/, bool /*durable*/) {
    return fail(errno_error(ENOTCONN, "no enclosing run's guardian holds this run's record"));
  }
};

// Start the run's own guardian and wait until it watches. A null pointer
// means none is needed: as PID 1 of a namespace, or with a pid-namespace
// boundary, the controller's death takes the whole namespace down.
Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec);

// What the guardians of the runs in spec.enclosing answered a run nested
// in their leaves (a cgroup run; announced before its leaf exists): the
// first to take it (`guardian`: it holds the run's record and guards it);
// or the dispatch gate it answers for the runs it holds refused the run
// (`refused`: the exit code, `findings` the lines to print; nothing is to be
// launched); or none took it (`why_not`, for -v: the run then guards
// itself, the gate, its record and a guardian its own).
struct Enclosed {
  std::unique_ptr<Guardian> guardian;
  std::optional<int> refused;
  std::vector<std::string> findings;
  std::string why_not;
};
Enclosed announce_to_enclosing(const GuardianSpec& spec);

// The records of the runs the guardian of run `run_id` holds while they
// go on (taken, and not over), as it answers `treeguard status`; empty when
// it does not answer within a second (or holds none).
std::vector<RunRecord> records_held_for(const std::filesystem::path& state_dir,
                                        const std::string& run_id);

}  // namespace treeguard
