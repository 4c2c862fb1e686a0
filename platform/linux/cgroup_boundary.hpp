// The strongest Linux boundary: a fresh leaf cgroup v2 that COMMAND is born
// into (clone3 CLONE_INTO_CGROUP). Every descendant stays in it whatever it
// does with sessions and groups; cgroup.kill takes the whole subtree down at
// once; "populated 0" in cgroup.events proves it empty.
#pragma once

#include "linux/linux_boundary.hpp"

#include <memory>
#include <string>
#include <vector>

namespace treeguard::platform {

class CgroupBoundary final : public LinuxBoundary {
public:
  // The leaf `treeguard-<run_id>` in `parent_dir` (an absolute path in the
  // cgroup2 mount), to be created by form(). Fails when the parent is not
  // writable for this user, or cannot give the leaf the controllers that
  // `limits` need (give_controllers, which enables them where it may).
  static Result<std::unique_ptr<CgroupBoundary>>
  create(const std::string& parent_dir, const std::string& run_id, const Limits& limits = {});

  // Whether create() may succeed under `parent_dir`: its checks, with
  // nothing written (the boundary plan asks before it tries).
  static Result<void> check_parent(const std::string& parent_dir, const Limits& limits);

  // Create the leaf (mkdir), open its files and set its limits. The run's
  // record, and its guardian, exist before this: a leaf is never without a
  // record naming it. A limit that cannot be set removes the leaf again.
  Result<void> form() override;

  // cpu.stat, memory.peak, pids.peak and memory.events of the leaf (each
  // where the kernel and the leaf's controllers have it).
  std::optional<TreeUsage> usage() override;

  ~CgroupBoundary() override;

  BoundaryKind kind() const override { return BoundaryKind::cgroup; }
  std::string address() const override { return m_path; }
  Result<void> signal_all(Signal signal) override;
  ForceMethod force_method() const override { return {"cgroup.kill", signals::kill, m_path}; }
  Result<void> kill_all() override;
  Result<bool> is_empty() override;
  std::vector<MemberInfo> alive_members() override;
  // Removes the leaf, unless a service manager signalled treeguard and the
  // leaf is inside its unit (below treeguard's own cgroup): then the empty
  // leaf is left for the manager to remove with the unit (see the .cpp).
  Result<void> close() override;
  std::optional<std::string> left_in_place() const override;
  // The leaf's members move into this treeguard's own cgroup, which must be
  // the enclosing run's leaf or below it (a process-group run owns them by
  // descent: the core checked that this treeguard's orphans go to it). The
  // leaf is frozen meanwhile, so nothing in it forks or reaps: every pid
  // moved is the member it was listed as. Refused while a cgroup below the
  // leaf is populated: a run nested in this one still runs there.
  Result<std::vector<MemberInfo>> hand_over(const EnclosingRun& to) override;

private:
  // hand_over(): the children that processes handed over forked once moved.
  void hand_over_children(const std::string& own, std::vector<MemberInfo>& handed);
  CgroupBoundary(std::string path, Limits limits) : m_path(std::move(path)), m_limits(limits) {}

  // memory.max (and memory.swap.max 0, so the limit bounds memory, not RAM),
  // pids.max: written into the leaf before COMMAND exists.
  Result<void> set_limits();
  // A file of the leaf, read through its directory descriptor.
  std::optional<std::string> read_leaf(const char* name) const;

  int spawn_cgroup_fd() const override { return m_dir_fd.get(); }
  int spawn_cgroup_procs_fd() const override { return m_procs_fd.get(); }
  int watch_fd() const override { return m_events_fd.get(); }
  Event::Kind on_watch() override {
    read_populated();
    return m_leaf_removed ? Event::Kind::gone : Event::Kind::changed;
  }
  bool empties_without_reaping() const override { return true; }

  // close() leaves the empty leaf to the unit's service manager.
  bool leave_to_manager() const;
  // Reads cgroup.events through the watched fd (which re-arms it); notes
  // a leaf removed by someone else (m_leaf_removed), and stops watching it.
  std::optional<bool> read_populated();
  // is_empty() once the leaf was removed by someone else (see the .cpp).
  Result<bool> empty_after_removal();
  // How long empty_after_removal() waits for COMMAND's exit to be reported
  // once the leaf has counted it out.
  static constexpr int k_exit_report_ms = 1000;
  // Every (pid, start time) in the leaf and the cgroups below it now.
  std::vector<MemberInfo> scan();

  std::string m_path;
  Limits m_limits;
  UniqueFd m_dir_fd;
  UniqueFd m_events_fd;
  UniqueFd m_procs_fd;
  bool m_formed = false;
  bool m_removed = false;
  bool m_left_in_place = false;
  bool m_leaf_removed = false;  // rmdir'd by someone else (cgroup.events: ENODEV)
};

}  // namespace treeguard::platform
