// The run's guardian on Windows (guardian.cpp): treeguard.exe started again
// by its controller, before COMMAND, as a process of its own (outside the
// job, never a member). It holds a handle to the job, so the controller's
// death alone does not end the job (kill-on-close waits for the last
// handle); it then drains the run as the controller would have, records
// the authority, forces what is left and proves the job empty (DESIGN.md
// [guardian]). Should both die, the last handle closes and kill-on-close
// ends the tree, under the standing authority.
#pragma once

#include "identity.hpp"
#include "result.hpp"

#include <string>
#include <vector>

namespace treeguard::platform {

// The first argument that makes treeguard.exe a run's guardian: never
// typed by a person, never parsed by the command line's grammar.
inline constexpr const char* k_guardian_argument = "--internal-run-guardian";

// When `args` (the whole command line) starts treeguard.exe as a guardian,
// guard the run and exit: this never returns then. Otherwise returns at
// once. First thing in main (host_init).
void guard_if_started_as_guardian(const std::vector<std::string>& args);

// COMMAND of the run whose job is `job_name` exists, assigned to the job
// and not yet resumed: the guardian this process started for that run (if
// any) is waited for until it says it watches (its start overlaps the
// controller's own work up to here), then learns who COMMAND is, and the
// process group it leads, before COMMAND runs one instruction. An error:
// the guardian did not start (it is ended); COMMAND must not run.
Result<void> tell_guardian_command(const std::string& job_name, const MemberInfo& command);

}  // namespace treeguard::platform
