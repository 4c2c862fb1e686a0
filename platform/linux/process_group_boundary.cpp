#include "linux/process_group_boundary.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/graceful_stop.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "record.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>

namespace treeguard::platform {

namespace {

// treeguard has a controlling terminal, in whose foreground it runs or not:
// a job the shell started with & (or moved there with bg) can be brought to
// the foreground later, and COMMAND may reach the terminal without its
// standard input (less and vim open /dev/tty).
bool has_controlling_terminal() {
  const int fd = ::open("/dev/tty", O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace

ProcessGroupBoundary::ProcessGroupBoundary() : m_on_terminal(has_controlling_terminal()) {}

std::optional<long> ProcessGroupBoundary::process_group() const {
  return m_child_pgid > 0 ? std::optional<long>(m_child_pgid) : std::nullopt;
}

std::string ProcessGroupBoundary::address() const {
  return m_child_pgid > 0 ? fmt::format("pgid {}", m_child_pgid) : k_pgid_pending;
}

ForceMethod ProcessGroupBoundary::force_method() const {
  // Never to the group as a whole (kill_all() says why): to each member.
  return {"SIGKILL", signals::kill,
          fmt::format("to each member of {}, frozen first, by pidfd", address())};
}

namespace {

double seconds(const struct timeval& time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

}  // namespace

Result<long> ProcessGroupBoundary::spawn(const SpawnSpec& spec) {
  struct rusage before {};
  if (::getrusage(RUSAGE_CHILDREN, &before) == 0) {
    m_cpu_user_before = seconds(before.ru_utime);
    m_cpu_system_before = seconds(before.ru_stime);
  }
  return LinuxBoundary::spawn(spec);
}

std::optional<TreeUsage> ProcessGroupBoundary::usage() {
  struct rusage after {};
  if (::getrusage(RUSAGE_CHILDREN, &after) != 0) {
    return std::nullopt;
  }
  TreeUsage usage;
  usage.source = "rusage";
  usage.cpu_user_seconds = std::max(0.0, seconds(after.ru_utime) - m_cpu_user_before);
  usage.cpu_system_seconds = std::max(0.0, seconds(after.ru_stime) - m_cpu_system_before);
  usage.memory_peak_bytes = static_cast<std::uint64_t>(after.ru_maxrss) * 1024;  // KiB
  return usage;
}

void ProcessGroupBoundary::on_tick() {
  const auto started = std::chrono::steady_clock::now();
  bool grew = false;
  scan(&grew);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  // Look often while the tree is young or changing (but, at real-time
  // priority, a growing tree of 20,000 is not walked back to back), then
  // back off: a long CI job costs a walk of its own tree every 2 s, not 20
  // walks a second.
  const auto soonest =
      soonest_walk(took, std::chrono::duration_cast<std::chrono::milliseconds>(k_first_tick));
  m_tick = grew ? Duration(soonest) : std::min(m_tick * 2, k_last_tick);
}

std::vector<MemberInfo> ProcessGroupBoundary::scan(bool* grew) {
  std::vector<MemberInfo> alive;
  for (const auto& stat :
       walk_members(::getpid(), CommandGroup{m_child_pgid, m_child_sid}, m_members, {}, grew)) {
    alive.push_back(*m_members.find(ProcessIdentity{stat.pid, stat.start_time}));
  }
  return alive;
}

std::vector<MemberInfo> ProcessGroupBoundary::alive_members() {
  return scan();
}

Result<void> ProcessGroupBoundary::signal_all(Signal signal) {
  // Every walk of the tree remembers its members; the graceful stop walks
  // again until a walk finds nobody new (graceful_stop.hpp).
  take_precedence();
  const CommandGroup command{m_child_pgid, m_child_sid};
  auto delivered = signal_each([&] { return walk_members(::getpid(), command, m_members); },
                               signal_number(signal));
  if (delivered.error) {
    return fail(*delivered.error);
  }
  return {};
}

Result<void> ProcessGroupBoundary::kill_all() {
  // Freeze the population, then kill it (the one takedown of
  // run_processes.hpp): every live descendant is a member, since treeguard
  // is the subreaper of the whole tree. Each signal goes by pidfd to a
  // member verified by pid and start time, never to COMMAND's process group
  // as a whole: a process of the same session may join that group without
  // being the run's, and it is not ours to stop or kill. Then wait for the
  // exact test, no child of treeguard left, alive or zombie: a killed
  // process still has to be reaped. Bounded in time: a member stuck in
  // uninterruptible sleep never dies, and verification reports it as a
  // survivor.
  take_precedence();
  const CommandGroup command{m_child_pgid, m_child_sid};
  auto killed = freeze_and_kill([&] { return walk_members(::getpid(), command, m_members); },
                                std::chrono::seconds(2));
  const TimePoint give_up = Clock::now() + std::chrono::seconds(1);
  while (!no_children() && Clock::now() < give_up) {
    struct timespec pause = {0, 1'000'000};
    ::nanosleep(&pause, nullptr);
  }
  if (!killed) {
    return fail(killed.error());
  }
  return no_children() ? Result<void>()
                       : fail(plain_error("members were still alive after the kill rounds"));
}

Result<bool> ProcessGroupBoundary::is_empty() {
  // Every live descendant hangs below one of treeguard's own children, so
  // "no child left, alive or zombie" is exactly "no member left".
  if (m_handed.empty()) {
    return no_children();
  }
  // After a hand-over: no child left but those handed over (their
  // descendants are theirs).
  reap();
  const pid_t self = ::getpid();
  for (const auto& stat : list_descendants(self)) {
    const ProcessIdentity who{stat.pid, stat.start_time};
    if (stat.ppid == self && stat.alive()
        && std::find(m_handed.begin(), m_handed.end(), who) == m_handed.end()) {
      return false;
    }
  }
  return m_status.has_value();
}

namespace {

// Every one of `members` is in the cgroup `leaf` (absolute) or below it.
Result<void> all_within(const std::vector<MemberInfo>& members, const std::string& leaf) {
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  const std::string relative = cgroup_relative(*mount, leaf);
  for (const auto& member : members) {
    auto where = process_cgroup(static_cast<int>(member.pid));
    if (!where || !cgroup_within(*where, relative)) {
      return fail(plain_error(fmt::format("{} is in cgroup {}, not inside {}",
                                          describe_member(member), where.value_or("?"), leaf)));
    }
  }
  return {};
}

}  // namespace

Result<std::vector<MemberInfo>> ProcessGroupBoundary::hand_over(const EnclosingRun& to) {
  // First no longer a subreaper, then the walk: an orphan made meanwhile
  // either is this treeguard's child already (and walked) or went past it.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) != 0) {
    return fail(errno_error(errno, "prctl PR_SET_CHILD_SUBREAPER 0"));
  }
  // An orphan whose adoption was under way while the flag changed shows
  // in a later walk: walk until one finds nobody new.
  std::vector<MemberInfo> alive = scan();
  for (int round = 0; round < 8; ++round) {
    bool found_new = false;
    for (const auto& member : scan()) {
      const auto same = [&](const MemberInfo& known) {
        return static_cast<const ProcessIdentity&>(known) == member;
      };
      if (std::none_of(alive.begin(), alive.end(), same)) {
        alive.push_back(member);
        found_new = true;
      }
    }
    if (!found_new) {
      break;
    }
  }
  if (to.kind == BoundaryKind::cgroup) {
    if (auto inside = all_within(alive, to.address); !inside) {
      ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
      return fail(inside.error());
    }
  }
  for (const auto& member : alive) {
    m_handed.push_back(member);
  }
  name_as_now(alive);
  return alive;
}

}  // namespace treeguard::platform
