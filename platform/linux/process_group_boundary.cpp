#include "linux/process_group_boundary.hpp"

#include "linux/proc.hpp"
#include "record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>
#include <ctime>

namespace treeguard::platform {

ProcessGroupBoundary::ProcessGroupBoundary()
  : m_interactive(::isatty(STDIN_FILENO) == 1 && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp())
{
}

std::string ProcessGroupBoundary::address() const
{
  return m_child_pgid > 0 ? fmt::format("pgid {}", m_child_pgid) : k_pgid_pending;
}

void ProcessGroupBoundary::on_tick()
{
  const std::size_t before = m_members.size();
  scan();
  // Look often while the tree is young or changing, then back off: a long
  // CI job costs a walk of its own tree every 2 s, not 20 walks a second.
  m_tick = m_members.size() != before ? k_first_tick : std::min(m_tick * 2, k_last_tick);
}

std::vector<MemberInfo> ProcessGroupBoundary::scan()
{
  std::vector<MemberInfo> alive;
  for (const auto& stat : list_descendants(::getpid())) {
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
  return alive;
}

std::vector<MemberInfo> ProcessGroupBoundary::alive_members()
{
  return scan();
}

Result<void> ProcessGroupBoundary::signal_all(Signal signal)
{
  // A walk can miss a process that is being reparented to treeguard while
  // it runs (its parent just died of this very signal). Walk again until a
  // walk finds nobody new, and send each member the signal once.
  std::vector<MemberInfo> signalled;
  for (int round = 0; round < 8; ++round) {
    bool found_new = false;
    for (const auto& member : scan()) {
      bool done = std::any_of(signalled.begin(), signalled.end(), [&](const MemberInfo& m) {
        return m.pid == member.pid && m.start_time == member.start_time;
      });
      if (done) {
        continue;
      }
      found_new = true;
      signalled.push_back(member);
      int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
      if (fd < 0) {
        continue;
      }
      UniqueFd pidfd(fd);
      int error = pidfd_signal(pidfd.get(), signal_number(signal));
      if (error != 0 && error != ESRCH) {
        return fail(errno_error(error, fmt::format("signal pid {}", member.pid)));
      }
    }
    if (!found_new) {
      break;
    }
  }
  return {};
}

Result<void> ProcessGroupBoundary::kill_all()
{
  // Each round kills every descendant alive now. A member forking as it
  // dies leaves children that reparent to treeguard and are found in the
  // next round; a killed process forks no more, so the rounds converge.
  // The rounds end on the exact test (no child of treeguard left), not on
  // an empty walk, which may miss a process forked during it. Bounded in
  // time: a member stuck in uninterruptible sleep never dies, and
  // verification reports it as a survivor.
  const TimePoint give_up = Clock::now() + std::chrono::seconds(2);
  while (!no_children() && Clock::now() < give_up) {
    for (const auto& member : scan()) {
      int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
      if (fd < 0) {
        continue;
      }
      pidfd_signal(fd, SIGKILL);
      ::close(fd);
    }
    // A breath for the dying before the next walk.
    struct timespec pause = {0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
  return no_children() ? Result<void>()
                       : fail(plain_error("members were still alive after 2s of kill rounds"));
}

Result<bool> ProcessGroupBoundary::is_empty()
{
  // Every live descendant hangs below one of treeguard's own children, so
  // "no child left, alive or zombie" is exactly "no member left".
  return no_children();
}

} // namespace treeguard::platform
