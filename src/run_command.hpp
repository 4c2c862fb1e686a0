// `treeguard run`, from parsed options to an exit code. The evidence
// commands (status, sweep, resolve) are in evidence_commands.hpp.
#pragma once

#include "invocation.hpp"
#include "port/boundary.hpp"
#include "port/guardian.hpp"
#include "port/holdings.hpp"
#include "port/host_view.hpp"
#include "supervisor.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace treeguard {

// `treeguard run`: the exit code; where COMMAND died of a signal or one
// stopped the run, it ends by that signal instead (host.hpp end_by_signal).
int command_run(const RunOptions& options);

// What a run asks of the platform beyond its Boundary (DESIGN.md [seam]):
// this_host() calls the port's own functions; a unit test passes fakes, so
// that the form loop and the lifecycle run without a host (DESIGN.md
// [tests]). Nothing else of the run reaches a boundary or a guardian.
struct RunHost {
  std::function<std::unique_ptr<HostView>()> host_view;
  std::function<BoundaryPlan(const BoundaryOptions&)> plan;
  std::function<Result<std::unique_ptr<Guardian>>(const GuardianSpec&)> start_guardian;
  // A nested run's announcement to the guardians of the runs it runs inside
  // (port/guardian.hpp); none: no guardian takes it.
  std::function<Enclosed(const GuardianSpec&)> announce_to_enclosing;
  HoldingsReader read_holdings;
  const SteadySource* clock = nullptr;
  // Where a line of -v goes ("treeguard: ...\n"), written whole.
  std::function<void(const std::string&)> say;
};

// The port's functions, the steady clock, stderr.
RunHost this_host();

// How a run ends: the exit code, and the signal to end by instead where
// there is one (RunOutcome::end_signal).
struct RunEnd {
  RunEnd(int exit_code) : code(exit_code) {}  // NOLINT: every early return is a plain code
  RunEnd(int exit_code, std::optional<int> end_signal) : code(exit_code), signal(end_signal) {}
  int code;
  std::optional<int> signal;
};

// One run on `host`, from the state directory to the end told; it does not
// end treeguard by COMMAND's signal (command_run does).
RunEnd run_on(const RunOptions& options, const RunHost& host);

}  // namespace treeguard
