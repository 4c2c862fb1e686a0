#include "linux/process_group_boundary.hpp"

#include "linux/proc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <unistd.h>
#include <unordered_map>

namespace treeguard::platform {

std::string ProcessGroupBoundary::address() const
{
  return m_child_pgid > 0 ? fmt::format("pgid {}", m_child_pgid) : "pgid (none yet)";
}

std::vector<MemberInfo> ProcessGroupBoundary::scan()
{
  const pid_t self = ::getpid();
  const auto processes = list_processes();
  std::unordered_multimap<pid_t, const ProcStat*> children_of;
  for (const auto& process : processes) {
    children_of.emplace(process.ppid, &process);
  }
  std::vector<MemberInfo> alive;
  std::vector<pid_t> frontier{self};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    auto range = children_of.equal_range(parent);
    for (auto it = range.first; it != range.second; ++it) {
      const ProcStat& stat = *it->second;
      frontier.push_back(stat.pid);
      const bool escaped = stat.pgid != m_child_pgid || stat.sid != m_child_sid;
      auto known = std::find_if(m_members.begin(), m_members.end(), [&](const MemberInfo& m) {
        return m.pid == stat.pid && m.start_time == stat.start_time;
      });
      if (known == m_members.end()) {
        m_members.push_back(MemberInfo{stat.pid, stat.start_time, escaped});
        known = m_members.end() - 1;
      } else if (escaped) {
        known->escaped = true; // never cleared (contract section 6)
      }
      if (stat.state != 'Z' && stat.state != 'X') {
        alive.push_back(*known);
      }
    }
  }
  return alive;
}

std::vector<MemberInfo> ProcessGroupBoundary::alive_members()
{
  return scan();
}

Result<void> ProcessGroupBoundary::signal_all(Signal signal)
{
  for (const auto& member : scan()) {
    int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
    if (fd < 0) {
      continue;
    }
    UniqueFd pidfd(fd);
    int error = pidfd_signal(pidfd.get(), signal.number);
    if (error != 0 && error != ESRCH) {
      return fail(errno_error(error, fmt::format("signal pid {}", member.pid)));
    }
  }
  return {};
}

Result<void> ProcessGroupBoundary::kill_all()
{
  // Each round kills every descendant alive now. A member forking as it
  // dies leaves children that reparent to treeguard and are found in the
  // next round; a killed process forks no more, so the rounds converge.
  // Bounded in time, not rounds: a member stuck in uninterruptible sleep
  // never dies, and verification reports it as a survivor.
  const TimePoint give_up = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < give_up) {
    auto alive = scan();
    if (alive.empty()) {
      return {};
    }
    for (const auto& member : alive) {
      int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
      if (fd < 0) {
        continue;
      }
      pidfd_signal(fd, SIGKILL);
      ::close(fd);
    }
    reap();
  }
  return fail(plain_error("members were still alive after 2s of kill rounds"));
}

Result<bool> ProcessGroupBoundary::is_empty()
{
  // Every live descendant hangs below one of treeguard's own children, so
  // "no child left, alive or zombie" is exactly "no member left".
  return no_children();
}

} // namespace treeguard::platform
