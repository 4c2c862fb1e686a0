// The Linux boundary plan, strongest first: a cgroup v2 leaf beneath
// treeguard's own cgroup (or --cgroup-parent); a leaf in a transient scope
// with Delegate=yes of root's system manager (the system scope) or of the
// user's systemd manager (the user scope), each re-executing treeguard
// inside it; a process group with a subreaper. A
// user+PID namespace only when asked for: programs see other pids in it.
#include "linux/boundary_plan.hpp"
#include "linux/cgroup_boundary.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/pid_namespace_boundary.hpp"
#include "linux/proc.hpp"
#include "linux/process_group_boundary.hpp"
#include "nesting.hpp"
#include "port/boundary.hpp"
#include "port/user_scope.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>

namespace treeguard::platform {

namespace {

using Make = std::function<Result<std::unique_ptr<Boundary>>(const PlanLog&)>;

Make make_leaf(const std::string& parent, const std::string& run_id, const Limits& limits) {
  return [parent, run_id, limits](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
    auto boundary = CgroupBoundary::create(parent, run_id, limits);
    if (!boundary) {
      return fail(boundary.error());
    }
    return std::unique_ptr<Boundary>(std::move(*boundary));
  };
}

// The leaf beneath treeguard's own cgroup, or --cgroup-parent.
BoundaryCandidate leaf_candidate(const Limits& limits, const std::string& run_id,
                                 const LinuxHostFacts& facts) {
  BoundaryCandidate leaf{"cgroup leaf", BoundaryKind::cgroup, "", "", nullptr};
  if (!facts.cgroup_parent.empty()) {
    leaf.name = "cgroup leaf (--cgroup-parent)";
  }
  if (facts.entered.run_id) {
    leaf.refused = fmt::format("treeguard entered the {} scope treeguard-{}.scope for this run: "
                               "its leaf goes there",
                               facts.entered.manager, *facts.entered.run_id);
  } else if (!facts.leaf_parent) {
    leaf.refused = facts.leaf_parent.error().message();
  } else if (facts.own_unit && facts.own_unit->delegation.delegated == false) {
    // systemd's rule: no cgroups beneath a unit without Delegate=yes.
    leaf.refused = fmt::format("unit {} is not delegated ({})", facts.own_unit->unit.unit,
                               facts.own_unit->delegation.how);
  } else {
    leaf.where = fmt::format("a leaf under {}", *facts.leaf_parent);
    if (facts.own_unit) {
      const auto& [unit, delegation] = *facts.own_unit;
      leaf.where += delegation.delegated == true
                        ? fmt::format(" (unit {} is delegated: {})", unit.unit, delegation.how)
                        : fmt::format(" (unit {}: whether it is delegated is not known: {})",
                                      unit.unit, delegation.how);
    }
    leaf.make = make_leaf(*facts.leaf_parent, run_id, limits);
  }
  return leaf;
}

// The scope of `manager` ("user": systemd-run --user; "system": root's).
BoundaryCandidate scope_candidate(const std::string& manager, const Limits& limits,
                                  const std::string& run_id, const LinuxHostFacts& facts) {
  BoundaryCandidate scope{manager + " scope", BoundaryKind::cgroup, "", "", nullptr};
  const auto& offer = manager == "user" ? facts.user_scope : facts.system_scope;
  if (facts.entered.run_id && facts.entered.manager == manager) {
    // Entered: this candidate is the leaf inside it.
    if (!facts.leaf_parent) {
      scope.refused = facts.leaf_parent.error().message();
    } else {
      scope.where = fmt::format("a leaf in {} (the scope treeguard entered for this run, "
                                "Delegate=yes)",
                                *facts.leaf_parent);
      scope.make = make_leaf(*facts.leaf_parent, run_id, limits);
    }
  } else if (facts.entered.run_id) {
    scope.refused = fmt::format("treeguard is in the {} scope already", facts.entered.manager);
  } else if (!facts.entered.refused.empty()) {
    scope.refused = facts.entered.refused;
  } else if (!facts.cgroup_parent.empty()) {
    scope.refused = "--cgroup-parent names where the leaf goes";
  } else if (!facts.inside_run.empty()) {
    // systemd would move treeguard, and all it starts, out of that leaf.
    scope.refused =
        fmt::format("inside another run's boundary ({}): a scope would leave it", facts.inside_run);
  } else if (manager == "system" && !facts.root) {
    scope.refused = "not root (the system manager's scopes are root's)";
  } else if (offer && !*offer) {
    scope.refused = offer->error().message();
  } else {
    scope.where = offer ? fmt::format("{} -p Delegate=yes, a leaf in it", **offer)
                        : "looked at only if the candidates above fail";
    // The offer the plan looked at is the one used: one look at the
    // manager's socket per run (the re-executed treeguard looks at none).
    scope.make = [manager, run_id, offer](const PlanLog& log) -> Result<std::unique_ptr<Boundary>> {
      auto found = offer ? *offer : scope_offer(manager);
      if (!found) {
        return fail(found.error());
      }
      if (log) {
        log(fmt::format("{} scope: a scope from {}", manager, *found));
      }
      return fail(reexec_in_scope(manager, run_id));
    };
  }
  return scope;
}

std::string no_limit_here(const Limits& limits) {
  return fmt::format("holds no limit ({} needs a cgroup v2 leaf with the {} controller)",
                     limit_names(limits), limits.memory_max ? "memory" : "pids");
}

BoundaryCandidate process_group_candidate(BoundaryRequest request, const Limits& limits,
                                          const LinuxHostFacts& facts) {
  BoundaryCandidate group{"process group", BoundaryKind::process_group,
                          "COMMAND's process group, treeguard its child subreaper", "", nullptr};
  if (limits.any()) {
    group.refused = no_limit_here(limits);
  } else if (request == BoundaryRequest::automatic && !facts.cgroup_parent.empty()) {
    // The user named a parent: falling back would hide their mistake.
    group.refused = "--cgroup-parent names a cgroup: no fallback that would hide a mistake in it";
  } else {
    group.make = [](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
      return std::unique_ptr<Boundary>(new ProcessGroupBoundary());
    };
  }
  return group;
}

}  // namespace

BoundaryPlan plan_linux(BoundaryRequest request, const Limits& limits, const std::string& run_id,
                        const LinuxHostFacts& facts) {
  BoundaryPlan plan;
  plan.request = request;
  plan.none_works = limits.any()
                        ? fmt::format("{} cannot be enforced", limit_names(limits))
                        : fmt::format("{} boundary unavailable", boundary_request_name(request));
  auto& candidates = plan.candidates;
  switch (request) {
  case BoundaryRequest::automatic:
  case BoundaryRequest::cgroup:
    candidates.push_back(leaf_candidate(limits, run_id, facts));
    candidates.push_back(scope_candidate("system", limits, run_id, facts));
    candidates.push_back(scope_candidate("user", limits, run_id, facts));
    if (request == BoundaryRequest::automatic) {
      candidates.push_back(process_group_candidate(request, limits, facts));
    }
    break;
  case BoundaryRequest::process_group:
    candidates.push_back(process_group_candidate(request, limits, facts));
    break;
  case BoundaryRequest::pid_namespace: {
    BoundaryCandidate pidns{"pid namespace", BoundaryKind::pid_namespace,
                            "a user+PID namespace (made at spawn)", "", nullptr};
    if (limits.any()) {
      pidns.refused = no_limit_here(limits);
    } else {
      // Whether the namespaces can be made is found at spawn: clone3
      // fails, nothing runs, exit 125.
      pidns.make = [](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
        return std::unique_ptr<Boundary>(new PidNamespaceBoundary());
      };
    }
    candidates.push_back(std::move(pidns));
    break;
  }
  case BoundaryRequest::job:
    candidates.push_back(BoundaryCandidate{"job object", BoundaryKind::job, "",
                                           "the job boundary exists on Windows only", nullptr});
    break;
  }
  return plan;
}

namespace {

// Where a leaf may go for `limits`, or why none may (`own`: this
// process's cgroup, process_cgroup()).
Result<std::string> find_leaf_parent(const std::string& cgroup_parent, const Limits& limits,
                                     const std::optional<std::string>& own) {
  auto parent = cgroup_parent.empty() ? own_cgroup_dir(own) : resolve_cgroup_parent(cgroup_parent);
  if (!parent) {
    return fail(parent.error());
  }
  TG_TRY(CgroupBoundary::check_parent(*parent, limits));
  return *parent;
}

}  // namespace

std::optional<std::string> run_leaf_in(const std::string& cgroup) {
  // A leaf is treeguard-RUNID; its scopes end in .scope, and the cgroup
  // treeguard moves itself into is k_controller_cgroup.
  std::size_t at = 0;
  while ((at = cgroup.find("/treeguard-", at)) != std::string::npos) {
    const std::size_t end = cgroup.find('/', at + 1);
    const std::string name =
        cgroup.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    const bool scope = name.size() > 6 && name.compare(name.size() - 6, 6, ".scope") == 0;
    if (!scope && name != k_controller_cgroup) {
      return name;
    }
    at += 1;
  }
  return std::nullopt;
}

std::string inside_another_run() {
  if (const std::string& runs = inherited_runs(); !runs.empty()) {
    return fmt::format("{}={}", k_run_marker, runs);
  }
  auto own = process_cgroup(static_cast<int>(::getpid()));
  if (own && run_leaf_in(*own)) {
    return fmt::format("cgroup {}", *own);
  }
  return {};
}

}  // namespace treeguard::platform

namespace treeguard {

BoundaryPlan plan_boundary(const BoundaryOptions& options) {
  platform::LinuxHostFacts facts;
  facts.root = ::geteuid() == 0;
  facts.cgroup_parent = options.cgroup_parent;
  facts.entered = options.entered;
  const bool cgroups = options.requested == BoundaryRequest::automatic
                       || options.requested == BoundaryRequest::cgroup;
  if (cgroups) {
    // Its own cgroup, read once: where the leaf goes and which unit it is
    // in (neither is asked with --cgroup-parent).
    const auto own = options.cgroup_parent.empty()
                         ? platform::process_cgroup(static_cast<int>(::getpid()))
                         : std::nullopt;
    facts.leaf_parent = platform::find_leaf_parent(options.cgroup_parent, options.limits, own);
    // Before a leaf beneath a unit treeguard did not make: is it
    // delegated? (A kept answer: one small read; a nested run's leaf, or
    // the scope treeguard entered, is not asked of.)
    if (facts.leaf_parent && options.cgroup_parent.empty() && !facts.entered.run_id) {
      facts.own_unit = platform::own_unit_delegation(options.state_dir, own);
    }
    // A weaker candidate is looked at where no stronger one is viable (or
    // for probe): a launcher's run asks nothing it does not need.
    const bool leaf_viable = facts.leaf_parent && !facts.entered.run_id
                             && !(facts.own_unit && facts.own_unit->delegation.delegated == false);
    // Re-executed into its scope, treeguard asks for no other: the scopes
    // are not looked at again.
    if (!facts.entered.run_id && (options.look_at_all || !leaf_viable)) {
      facts.inside_run = platform::inside_another_run();
      if (facts.root) {
        facts.system_scope = scope_offer("system");
      }
      facts.user_scope = scope_offer("user");
    }
  }
  return platform::plan_linux(options.requested, options.limits, options.run_id, facts);
}

}  // namespace treeguard
