// Acting on a boundary known only from its record, after its controller is
// gone: the guardian (DESIGN.md [guardian]), `sweep` and the dispatch gate
// (DESIGN.md [gate]). They share the controller's takedown engine (on Linux
// platform/linux/run_processes.hpp): one definition of the run's processes,
// one freeze-then-kill, one cgroup kill. The record is untrusted: nothing is
// signalled unless the boundary is one this tool made for that run (a cgroup
// leaf named treeguard-<run_id> in the v2 hierarchy), or a process the
// record's claim covers (a member by pid AND start time, a process in a
// group or session a member was seen to make while a member still vouches
// for it, a live child of a process so covered, a process carrying the run's
// marker whose ancestry is lost: its parent PID 1, the recorded reaper, or
// gone).
#pragma once

#include "duration.hpp"
#include "record.hpp"
#include "result.hpp"
#include "signal_name.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// A boundary known only from its record, as the settle sequence acts on
// it: one object per recorded kind (a cgroup leaf, a process group, a pid
// namespace; a job object on Windows), chosen once from the record by
// recorded_boundary(). A kind the platform never forms is refused.
class RecordedBoundary {
public:
  virtual ~RecordedBoundary() = default;

  // Refuses a boundary this tool would not have created.
  virtual Result<void> check() const = 0;

  // Proven empty (true), holding members (false), or cannot tell
  // (nullopt); `why_not` says why it is not proven empty; `alive` receives
  // the run's processes found alive (what an authority entry counts and
  // names).
  virtual std::optional<bool> empty(std::string* why_not = nullptr,
                                    std::vector<MemberInfo>* alive = nullptr) const = 0;

  // The forced kill of what the boundary holds, then a wait for it to be
  // empty for as long as the killed keep dying: it gives up once
  // `verify_for` passes in which none died. The caller has already made the
  // authority durable (record_authority). Returns whether it was proven
  // empty, by the same rule as empty(); `why_not` says why not. `alive`,
  // when given, is what empty() just found alive (the judgement the
  // authority names): a process-group takedown stops those first, without
  // a census of the host of its own.
  virtual Result<bool> kill(Duration verify_for, std::string* why_not = nullptr,
                            const std::vector<MemberInfo>* alive = nullptr) const = 0;

  // The drain's graceful stop (DESIGN.md [drain]): `signal` to every
  // process of the run the boundary holds now, then CONT to those that
  // were stopped; but not to the processes of a run nested in it whose
  // controller lives: that controller gets `signal` and stops its own tree
  // (DESIGN.md [nested]). Returns who was sent it (none where the boundary
  // has no graceful stop from here); an error when the sending failed.
  virtual Result<std::vector<ProcessIdentity>> stop_gracefully(Signal signal) const = 0;

  // Wait until the boundary looks empty (every one of `signalled`, what
  // stop_gracefully() returned, is gone; a cgroup leaf: not populated), or
  // `until` passes. The verdict is empty()'s.
  virtual void await_drained(const std::vector<ProcessIdentity>& signalled,
                             std::chrono::steady_clock::time_point until) const = 0;

  // How kill() kills, as the authority names it: "cgroup.kill",
  // "SIGKILL", "TerminateJobObject".
  virtual std::string force_method() const = 0;

  // Remove what is left of the boundary once it is empty: a cgroup leaf
  // (rmdir only; refused while anything is in it); nothing for the rest.
  virtual Result<void> remove() const = 0;

  // Processes carrying the run's marker that a settler leaves alone, alive
  // now: another user's orphans, where the record tells of no look at the
  // run's tree that would tell them from a stranger's (census.hpp). Only a
  // boundary judged by the census has any.
  virtual std::vector<MemberInfo> left_alone() const { return {}; }

protected:
  // Every kind acts on the record it was made from, which outlives it.
  explicit RecordedBoundary(const RunRecord& record) : m_record(record) {}

  const RunRecord& m_record;
};

// The object for `record`'s boundary kind; it reads `record`, which must
// outlive it.
std::unique_ptr<RecordedBoundary> recorded_boundary(const RunRecord& record);

// The disposition a takedown after controller death leaves: pass when
// proven empty, failed when processes of the run are alive, ambiguous when
// the state cannot be proven from here.
Disposition settled_disposition(const RunRecord& record, bool proven);

// This process, as a record identifies it.
ProcessIdentity current_process_identity();

}  // namespace treeguard
