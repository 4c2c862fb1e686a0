// Acting on a boundary known only from its record, after its controller is
// gone: the guardian (contract 7) and `treeguard sweep` (contract 5). The
// record is untrusted: nothing is signalled unless the boundary is one this
// tool made for that run (a cgroup leaf named treeguard-<run_id> in the v2
// hierarchy) or a process whose pid AND start time the record names.
#pragma once

#include "duration.hpp"
#include "record.hpp"
#include "result.hpp"

#include <memory>
#include <optional>
#include <string>

namespace treeguard {

// Refuses a record whose boundary this tool would not have created.
Result<void> check_recorded_boundary(const RunRecord& record);

// Proven empty (true), holding members (false), or cannot tell (nullopt).
std::optional<bool> recorded_boundary_empty(const RunRecord& record);

// The forced kill of what the record's boundary holds, then a wait of up to
// `verify_for` for it to be empty. The caller has already made the
// authority durable. Returns whether it was proven empty.
Result<bool> kill_recorded_boundary(const RunRecord& record, Duration verify_for);

// How kill_recorded_boundary() kills this record's boundary, as the
// authority names it: "cgroup.kill", "SIGKILL", "TerminateJobObject".
std::string recorded_force_method(const RunRecord& record);

// Remove the recorded cgroup leaf once it is empty (nothing for a group).
Result<void> remove_recorded_boundary(const RunRecord& record);

// This process, as a record identifies it.
ProcessIdentity current_process_identity();

}  // namespace treeguard
