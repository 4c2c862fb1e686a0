// The Linux boundary plan for hosts described as data (LinuxHostFacts):
// which candidates, in which order, each refused with its reason or not.
#include "linux/boundary_plan.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace treeguard;
using platform::LinuxHostFacts;
using platform::plan_linux;

namespace {

std::vector<std::string> names(const BoundaryPlan& plan) {
  std::vector<std::string> out;
  for (const auto& candidate : plan.candidates) {
    out.push_back(candidate.name);
  }
  return out;
}

// The candidate `run` forms first: the first not refused.
const BoundaryCandidate* first_viable(const BoundaryPlan& plan) {
  for (const auto& candidate : plan.candidates) {
    if (candidate.refused.empty()) {
      return &candidate;
    }
  }
  return nullptr;
}

const BoundaryCandidate& named(const BoundaryPlan& plan, const std::string& name) {
  for (const auto& candidate : plan.candidates) {
    if (candidate.name == name) {
      return candidate;
    }
  }
  FAIL("no candidate " << name);
  throw;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Root in a cgroup it may write (a container's root, a delegated unit).
LinuxHostFacts writable_root() {
  LinuxHostFacts facts;
  facts.root = true;
  facts.leaf_parent = std::string("/sys/fs/cgroup/ci.service");
  return facts;
}

// An ordinary user in a root-owned session-N.scope.
LinuxHostFacts user_in_session(bool manager) {
  LinuxHostFacts facts;
  facts.leaf_parent =
      fail(plain_error("write access to /sys/fs/cgroup/user.slice/session-3.scope/cgroup.procs"));
  facts.user_scope = manager ? Result<std::string>(
                         std::string("/usr/bin/systemd-run --user --scope (user manager at /run/"
                                     "user/1000/bus)"))
                             : Result<std::string>(fail(plain_error("no user manager: none")));
  return facts;
}

const std::string k_run = "20240101T000000-1-0000";

}  // namespace

TEST_CASE("plan: a writable cgroup: auto forms the leaf first, the scope not asked") {
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, writable_root());
  CHECK(names(plan)
        == std::vector<std::string>{"cgroup leaf", "system scope", "user scope", "process group"});
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "cgroup leaf");
  CHECK(first->kind == BoundaryKind::cgroup);
  CHECK(first->where == "a leaf under /sys/fs/cgroup/ci.service");
  CHECK(first->make);
  // Not looked at: a launcher's run asks its manager nothing.
  CHECK(named(plan, "user scope").refused.empty());
  CHECK(contains(named(plan, "user scope").where, "looked at only if"));
}

TEST_CASE("plan: an ordinary user in a root-owned session scope gets the user scope") {
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, user_in_session(true));
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "user scope");
  CHECK(first->kind == BoundaryKind::cgroup);
  CHECK(contains(first->where, "--user --scope"));
  CHECK(contains(first->where, "Delegate=yes"));
  CHECK(contains(named(plan, "cgroup leaf").refused, "write access"));
}

TEST_CASE("plan: no manager: auto falls back to the process group, each reason kept") {
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, user_in_session(false));
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "process group");
  CHECK(first->kind == BoundaryKind::process_group);
  CHECK(named(plan, "user scope").refused == "no user manager: none");
  auto lines = plan_lines(plan);
  REQUIRE(lines.size() == 4);
  CHECK(lines[1] == "system scope: refused: not root (the system manager's scopes are root's)");
  CHECK(lines[2] == "user scope: refused: no user manager: none");
}

TEST_CASE("plan: a limit never falls back to a boundary that cannot hold it") {
  Limits limits;
  limits.memory_max = 64 << 20;
  auto plan = plan_linux(BoundaryRequest::automatic, limits, k_run, user_in_session(false));
  CHECK(first_viable(plan) == nullptr);
  CHECK(contains(named(plan, "process group").refused, "holds no limit"));
  CHECK(plan.none_works == "--memory-max cannot be enforced");
  std::vector<std::string> why;
  for (const auto& candidate : plan.candidates) {
    why.push_back(candidate.refused);
  }
  const std::string error = plan_failure(plan, why);
  CHECK(contains(error, "--memory-max cannot be enforced: cgroup leaf: write access"));
  CHECK(contains(error, "; user scope: no user manager"));
  CHECK(contains(error, "; process group: holds no limit"));

  for (auto request : {BoundaryRequest::process_group, BoundaryRequest::pid_namespace}) {
    auto one = plan_linux(request, limits, k_run, writable_root());
    REQUIRE(one.candidates.size() == 1);
    CHECK(contains(one.candidates[0].refused, "holds no limit"));
  }
}

TEST_CASE("plan: a demanded cgroup has no process group to fall back to") {
  auto plan = plan_linux(BoundaryRequest::cgroup, {}, k_run, user_in_session(false));
  CHECK(names(plan) == std::vector<std::string>{"cgroup leaf", "system scope", "user scope"});
  CHECK(first_viable(plan) == nullptr);
  CHECK(plan.none_works == "cgroup boundary unavailable");
}

TEST_CASE("plan: re-executed into the user scope, its leaf is the user scope's candidate") {
  auto facts = user_in_session(true);
  facts.entered.run_id = k_run;
  facts.entered.manager = "user";
  facts.leaf_parent = std::string("/sys/fs/cgroup/user.slice/u/treeguard-" + k_run + ".scope");
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(contains(named(plan, "cgroup leaf").refused, "entered the user scope"));
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "user scope");
  CHECK(contains(first->where, "a leaf in /sys/fs/cgroup/user.slice/u/treeguard-"));
  CHECK(first->make);
}

TEST_CASE("plan: a scope entry refused is not tried again") {
  auto facts = user_in_session(true);
  facts.entered.refused = "re-executed for the user scope treeguard-x.scope but in /elsewhere";
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(named(plan, "user scope").refused == facts.entered.refused);
  CHECK(first_viable(plan)->name == "process group");
}

TEST_CASE("plan: a named --cgroup-parent: no scope and no fallback hide a mistake in it") {
  LinuxHostFacts facts;
  facts.cgroup_parent = "/tg";
  facts.leaf_parent = fail(plain_error("cgroup parent /sys/fs/cgroup/tg: No such file"));
  facts.user_scope = std::string("systemd-run --user --scope (user manager at /run/user/1/bus)");
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, facts);
  CHECK(first_viable(plan) == nullptr);
  CHECK(contains(named(plan, "user scope").refused, "--cgroup-parent"));
  CHECK(contains(named(plan, "process group").refused, "--cgroup-parent"));
}

TEST_CASE("plan: the job boundary is Windows only; the pid namespace only when asked") {
  auto job = plan_linux(BoundaryRequest::job, {}, k_run, writable_root());
  REQUIRE(job.candidates.size() == 1);
  CHECK(contains(job.candidates[0].refused, "Windows only"));
  auto pidns = plan_linux(BoundaryRequest::pid_namespace, {}, k_run, writable_root());
  REQUIRE(pidns.candidates.size() == 1);
  CHECK(pidns.candidates[0].kind == BoundaryKind::pid_namespace);
  CHECK(pidns.candidates[0].make);
  for (const auto& candidate :
       plan_linux(BoundaryRequest::automatic, {}, k_run, writable_root()).candidates) {
    CHECK(candidate.kind != BoundaryKind::pid_namespace);
  }
}

namespace {

// Root in a oneshot service whose cgroup also holds its shell, limits asked.
LinuxHostFacts root_in_busy_service(bool manager) {
  LinuxHostFacts facts;
  facts.root = true;
  facts.leaf_parent = fail(plain_error(
      "cgroup /sys/fs/cgroup/system.slice/ci.service holds processes other than treeguard"));
  facts.system_scope =
      manager ? Result<std::string>(
          std::string("/usr/bin/systemd-run --scope (system manager at /run/systemd/private)"))
              : Result<std::string>(fail(plain_error("no system manager: systemd does not "
                                                     "manage this host")));
  facts.user_scope = fail(plain_error("no user manager: none listens in /run/user/0"));
  return facts;
}

}  // namespace

TEST_CASE("plan: root whose cgroup holds other processes gets the system scope for a limit") {
  Limits limits;
  limits.pids_max = 64;
  auto plan = plan_linux(BoundaryRequest::automatic, limits, k_run, root_in_busy_service(true));
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "system scope");
  CHECK(first->kind == BoundaryKind::cgroup);
  CHECK(contains(first->where, "systemd-run --scope (system manager at /run/systemd/private)"));
  CHECK(contains(first->where, "Delegate=yes"));
  CHECK(first->make);
  // Stronger than the user scope: root's own manager first.
  CHECK(names(plan)[1] == "system scope");
  CHECK(names(plan)[2] == "user scope");
}

TEST_CASE("plan: root without a reachable manager: 125 says why for each candidate") {
  Limits limits;
  limits.memory_max = 64 << 20;
  auto plan = plan_linux(BoundaryRequest::automatic, limits, k_run, root_in_busy_service(false));
  CHECK(first_viable(plan) == nullptr);
  std::vector<std::string> why;
  for (const auto& candidate : plan.candidates) {
    why.push_back(candidate.refused);
  }
  const std::string error = plan_failure(plan, why);
  CHECK(contains(error, "--memory-max cannot be enforced: cgroup leaf: cgroup "));
  CHECK(contains(error, "; system scope: no system manager"));
  CHECK(contains(error, "; user scope: no user manager"));
}

TEST_CASE("plan: the system scope is root's; a user never asks it") {
  auto plan = plan_linux(BoundaryRequest::automatic, {}, k_run, user_in_session(true));
  CHECK(contains(named(plan, "system scope").refused, "not root"));
  CHECK(first_viable(plan)->name == "user scope");
}

TEST_CASE("plan: re-executed into the system scope, its leaf is the system scope's candidate") {
  auto facts = root_in_busy_service(true);
  facts.entered.run_id = k_run;
  facts.entered.manager = "system";
  facts.leaf_parent = std::string("/sys/fs/cgroup/system.slice/treeguard-" + k_run + ".scope");
  auto plan = plan_linux(BoundaryRequest::cgroup, {}, k_run, facts);
  auto* first = first_viable(plan);
  REQUIRE(first);
  CHECK(first->name == "system scope");
  CHECK(contains(first->where, "a leaf in /sys/fs/cgroup/system.slice/treeguard-"));
  CHECK(contains(named(plan, "user scope").refused, "in the system scope already"));
}

TEST_CASE("plan: inside another run's boundary no scope is asked (it would leave that boundary)") {
  Limits limits;
  limits.pids_max = 10;
  auto facts = root_in_busy_service(true);
  facts.inside_run = "TREEGUARD_RUNS=" + k_run;
  auto plan = plan_linux(BoundaryRequest::automatic, limits, k_run, facts);
  CHECK(first_viable(plan) == nullptr);
  CHECK(contains(named(plan, "system scope").refused, "inside another run's boundary"));
  CHECK(contains(named(plan, "user scope").refused, "inside another run's boundary"));
}

TEST_CASE("plan: a treeguard-RUNID leaf in the cgroup path means inside another run") {
  using platform::run_leaf_in;
  CHECK(run_leaf_in("/system.slice/ci.service/treeguard-" + k_run) == "treeguard-" + k_run);
  CHECK(run_leaf_in("/a/treeguard-" + k_run + "/treeguard-x/sub") == "treeguard-" + k_run);
  // Its own scope, and the cgroup it moves itself into, are not another run.
  CHECK_FALSE(run_leaf_in("/system.slice/treeguard-" + k_run + ".scope"));
  CHECK_FALSE(run_leaf_in("/system.slice/treeguard-" + k_run + ".scope/treeguard-controller"));
  CHECK_FALSE(run_leaf_in("/user.slice/user-1000.slice/session-3.scope"));
  CHECK_FALSE(run_leaf_in("/"));
}
