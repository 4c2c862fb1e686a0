// Acting on a boundary known only from its record, after its controller is
// gone: the guardian (contract 7), `sweep` and the dispatch gate (contract
// 5). They share the controller's takedown engine (on Linux
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

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// Refuses a record whose boundary this tool would not have created.
Result<void> check_recorded_boundary(const RunRecord& record);

// Proven empty (true), holding members (false), or cannot tell (nullopt);
// `why_not` says why it is not proven empty; `alive` receives the run's
// processes found alive (what an authority entry counts and names).
std::optional<bool> recorded_boundary_empty(const RunRecord& record, std::string* why_not = nullptr,
                                            std::vector<MemberInfo>* alive = nullptr);

// The forced kill of what the record's boundary holds, then a wait for it
// to be empty for as long as the killed keep dying: it gives up once
// `verify_for` passes in which none died. The caller has already made the
// authority durable (record_authority). Returns whether it was proven
// empty, by the same rule as recorded_boundary_empty(); `why_not` says why
// not. `alive`, when given, is what recorded_boundary_empty() just found
// alive (the judgement the authority names): a process-group takedown
// stops those first, without a census of the host of its own.
Result<bool> kill_recorded_boundary(const RunRecord& record, Duration verify_for,
                                    std::string* why_not = nullptr,
                                    const std::vector<MemberInfo>* alive = nullptr);

// The disposition a takedown after controller death leaves: pass when
// proven empty, failed when processes of the run are alive, ambiguous when
// the state cannot be proven from here.
Disposition settled_disposition(const RunRecord& record, bool proven);

// How kill_recorded_boundary() kills this record's boundary, as the
// authority names it: "cgroup.kill", "SIGKILL", "TerminateJobObject".
std::string recorded_force_method(const RunRecord& record);

// Remove the recorded cgroup leaf once it is empty (nothing for a group).
Result<void> remove_recorded_boundary(const RunRecord& record);

// This process, as a record identifies it.
ProcessIdentity current_process_identity();

}  // namespace treeguard
