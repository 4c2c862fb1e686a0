// THE drain's signal on Linux (DESIGN.md [drain]): the graceful half of a
// takedown, as the controller's boundaries send it at a deadline or a stop
// request, as the guardian and `sweep` send it after the controller's
// death, and as a pid namespace's init sends it for either. The signal goes
// to every process of the run, each through a pidfd for the process seen,
// then CONT to those seen stopped so that they act on it; but not to the
// processes of a run nested in this one whose controller lives (DESIGN.md
// [nested]): that controller gets the signal itself, and stops its own tree
// with its own signal and grace. Nothing is spared for good: the enclosing
// run's force at the end of its grace covers every process, so a wrong guess
// about a nested run only delays it to then.
#pragma once

#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "result.hpp"

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace treeguard::platform {

// One delivery of the drain's signal.
struct Delivered {
  std::vector<ProcStat> reached;  // who got it, as seen just before it was sent
  std::optional<Error> error;     // the first process it could not be sent to, if any, and why
                                  // (the rest were still sent it)
};

// The processes among `found` (a walk of the run's tree, a census: each
// with its parent) that a live nested run owns: the descendants, within
// `found`, of a nested run's controller, which is a process of `found`
// running this very program (its /proc/PID/exe is this process's) with a
// child in `found`. The controller itself is not among them. `looked`, when
// given, keeps whether each process (by pid and start time) runs this
// program across calls: the rounds of one delivery look at each once (a
// fork bomb's thousands of parents, round after round).
using ProgramLooks = std::map<std::pair<pid_t, unsigned long long>, bool>;
std::unordered_set<pid_t> inside_live_nested_runs(const std::vector<ProcStat>& found,
                                                  ProgramLooks* looked = nullptr);

// The leaves below the cgroup `leaf` that are runs nested in it whose
// controller lives: a cgroup named treeguard-RUNID whose controller (the pid
// the run id carries) is alive in `leaf`'s subtree, outside that leaf, and
// runs this very program. A leaf whose controller is gone is looked into
// for live runs nested in it in turn.
std::vector<std::string> live_nested_leaves(const std::string& leaf);

// `signal` to every process of the cgroup `path` and the cgroups below it
// but those in live_nested_leaves(), each pinned by a pidfd and kept only
// if still in the subtree at a second listing; then CONT to those seen
// stopped.
Delivered signal_cgroup(const std::string& path, int signal);

// `signal` to every process `enumerate` yields (a walk of the tree, a
// census) but those inside_live_nested_runs(), each through a pidfd opened
// for the identity seen; in rounds, each enumerating again, until one finds
// no one new (a process reparented while a walk ran, its parent just dead
// of this very signal, shows in the next); then CONT to those seen stopped.
Delivered signal_each(const Enumerate& enumerate, int signal);

}  // namespace treeguard::platform
