// The fallback boundary where cgroups are not writable: COMMAND leads a new
// process group, and treeguard, a child subreaper, owns every descendant:
// orphans of setsid and double-fork reparent to it rather than to init.
// Membership is every descendant ever seen, by (pid, start time); it only
// grows. A member that leaves COMMAND's group or session is marked escaped.
#pragma once

#include "linux/linux_boundary.hpp"

#include <memory>
#include <string>
#include <vector>

namespace treeguard::platform {

class ProcessGroupBoundary final : public LinuxBoundary {
public:
  ProcessGroupBoundary() = default;

  BoundaryKind kind() const override { return BoundaryKind::process_group; }
  std::string address() const override;
  Result<void> signal_all(Signal signal) override;
  Result<void> kill_all() override;
  Result<bool> is_empty() override;
  std::vector<MemberInfo> members() const override { return m_members; }
  std::vector<MemberInfo> alive_members() override;
  Result<void> close() override { return {}; }

private:
  bool spawn_new_process_group() const override { return true; }
  // Escapes are seen by scanning; once a second is enough to catch a
  // setsid before the member's parent exits in most trees, and cheap.
  void on_tick() override { scan(); }
  std::optional<Duration> tick_interval() const override
  {
    return std::chrono::milliseconds(500);
  }

  // The live descendants of treeguard now; remembers them as members.
  std::vector<MemberInfo> scan();

  std::vector<MemberInfo> m_members;
};

} // namespace treeguard::platform
