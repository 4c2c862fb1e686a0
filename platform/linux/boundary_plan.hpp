// The Linux boundary plan: what the host allows, as data, and the plan made
// from it. plan_linux() is pure, so hosts can be described in tests.
#pragma once

#include "linux/unit_delegation.hpp"
#include "port/boundary.hpp"

#include <optional>
#include <string>

namespace treeguard::platform {

// What the plan needs to know of the host.
struct LinuxHostFacts {
  bool root = false;  // euid 0: the system manager's scopes are root's
  // --cgroup-parent as given; empty: the leaf goes beneath treeguard's own cgroup.
  std::string cgroup_parent;
  // Where a leaf may go for the limits asked (CgroupBoundary::check_parent),
  // or why none may.
  Result<std::string> leaf_parent = fail(plain_error("not looked at"));
  // The scope this treeguard entered for the run (ScopeEntry).
  ScopeEntry entered;
  // Set when treeguard runs inside another run's boundary (TREEGUARD_RUNS,
  // or a treeguard-RUNID leaf above it), and how it knows: a scope would
  // take it out of that boundary, so none is asked for.
  std::string inside_run;
  // What would start a scope of that manager ("systemd-run --user --scope
  // (user manager at …)"), or why none can; nullopt: not looked at (a
  // stronger candidate comes first; it is looked at when tried).
  std::optional<Result<std::string>> user_scope;
  std::optional<Result<std::string>> system_scope;
  // The systemd unit whose cgroup holds treeguard, and whether its manager
  // delegated it (asked once per unit and boot, kept in the state
  // directory): a unit that is not gets no leaf beneath it. nullopt: no
  // unit is asked of (none, treeguard's own scope or leaf, --cgroup-parent).
  std::optional<OwnUnit> own_unit;
};

// How treeguard knows it runs inside another run's boundary (its
// TREEGUARD_RUNS, or a treeguard-RUNID leaf its cgroup is in); empty: not.
std::string inside_another_run();

// The name of the first treeguard-RUNID leaf in the cgroup path `cgroup`
// (not a treeguard-RUNID.scope, not the treeguard-controller cgroup).
std::optional<std::string> run_leaf_in(const std::string& cgroup);

// The plan for `request` with `limits` on a host with `facts`, strongest
// first; the run's leaf and scope are named for `run_id`.
BoundaryPlan plan_linux(BoundaryRequest request, const Limits& limits, const std::string& run_id,
                        const LinuxHostFacts& facts);

}  // namespace treeguard::platform
