// The fallback boundary where cgroups are not writable: COMMAND leads a new
// process group, and treeguard, a child subreaper, owns every descendant:
// orphans of setsid and double-fork reparent to it rather than to init.
// Membership is every descendant ever seen, by (pid, start time); it only
// grows. A member that leaves COMMAND's group or session is marked so
// (left_group); it stays a member.
#pragma once

#include "linux/linux_boundary.hpp"

#include <memory>
#include <string>
#include <vector>

namespace treeguard::platform {

class ProcessGroupBoundary final : public LinuxBoundary {
public:
  ProcessGroupBoundary();

  BoundaryKind kind() const override { return BoundaryKind::process_group; }
  std::string address() const override;
  std::optional<long> process_group() const override;
  Result<void> signal_all(Signal signal) override;
  ForceMethod force_method() const override;
  Result<void> kill_all() override;
  Result<bool> is_empty() override;
  std::vector<MemberInfo> alive_members() override;
  Result<void> close() override { return {}; }
  // The members stay where they are and this treeguard stops being a
  // subreaper: from then on an orphan of the tree goes past it, and when it
  // exits its children go, to the next subreaper above, which the core has
  // checked is the enclosing run's controller. For an enclosing leaf, every
  // member must be inside it. is_empty() then counts only what was not
  // handed over.
  Result<std::vector<MemberInfo>> hand_over(const EnclosingRun& to) override;
  // Notes the rusage of what treeguard reaped before COMMAND (the
  // guardian's short-lived middle), to leave its CPU time out.
  Result<long> spawn(const SpawnSpec& spec) override;
  // getrusage(RUSAGE_CHILDREN): the descendants treeguard reaped (as their
  // subreaper it reaps the whole tree, and each reaped process carries what
  // it reaped in turn). It misses what nobody reaped into treeguard (a child
  // whose parent ignores SIGCHLD is not counted), its memory peak is the
  // largest single process's peak RSS (not the tree's sum, and at least that
  // of the guardian's middle, a copy of treeguard), and it has no tasks peak.
  std::optional<TreeUsage> usage() override;

private:
  // COMMAND leads a new group, except when treeguard has a controlling
  // terminal: then COMMAND stays in treeguard's group, as the cgroup
  // boundary keeps it, so that the shell's job control is over both at once,
  // as without treeguard. In the foreground COMMAND reads the terminal and
  // Ctrl-C and Ctrl-Z reach it; started with & (or after bg) its read or
  // tcsetattr stops the whole job by TTIN/TTOU, treeguard included (the
  // shell sees "Stopped (tty input)"), and fg gives the terminal to the
  // group and continues it. In a group of its own, fg would give the
  // terminal to treeguard alone and leave COMMAND stopped behind it.
  // Membership does not rest on the group: treeguard is the subreaper of
  // the whole tree.
  bool spawn_new_process_group() const override { return !m_on_terminal; }
  // Escapes are seen by walking the tree (/proc children files): first
  // after 50 ms, then at doubling intervals up to 2 s, and again at once
  // whenever a walk finds new members.
  void on_tick() override;
  std::optional<Duration> tick_interval() const override { return m_tick; }

  // The live descendants of treeguard now; remembers them as members.
  std::vector<MemberInfo> scan(bool* grew = nullptr);

  static constexpr Duration k_first_tick = std::chrono::milliseconds(50);
  static constexpr Duration k_last_tick = std::chrono::seconds(2);
  Duration m_tick = k_first_tick;
  std::vector<ProcessIdentity> m_handed;  // hand_over(): no longer this run's
  bool m_on_terminal = false;
  double m_cpu_user_before = 0;
  double m_cpu_system_before = 0;
};

}  // namespace treeguard::platform
