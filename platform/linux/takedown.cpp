#include "takedown.hpp"

#include "gate.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/proc.hpp"
#include "posix/unique_fd.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <set>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace treeguard {

namespace {

bool is_cgroup(const RunRecord& record)
{
  return record.boundary.kind == BoundaryKind::cgroup;
}

Result<std::optional<bool>> cgroup_populated(const std::string& path)
{
  auto text = platform::read_cgroup_file(path + "/cgroup.events");
  if (!text) {
    if (text.error().code == std::errc::no_such_file_or_directory) {
      return std::optional<bool>(false); // removed: nothing can be in it
    }
    return fail(text.error());
  }
  auto populated = platform::parse_populated(*text);
  if (!populated) {
    return std::optional<bool>();
  }
  return std::optional<bool>(*populated);
}

// Process groups and sessions that are the run's: those whose id is the
// pid of a recorded member (a member made them with setpgid or setsid),
// as long as that pid has not been reused by another process. While a
// group or session has members its id cannot be handed to a new process,
// so a group whose id names no live process is still the one the member
// made.
std::set<pid_t> owned_ids(const RunRecord& record)
{
  std::set<pid_t> ids;
  for (const auto& member : record.members) {
    auto stat = platform::read_proc_stat(static_cast<pid_t>(member.pid));
    if (!stat || stat->start_time == member.start_time) {
      ids.insert(static_cast<pid_t>(member.pid));
    }
  }
  return ids;
}

// Live processes that belong to the recorded process-group run now.
std::vector<platform::ProcStat> recorded_group_members(const RunRecord& record)
{
  std::vector<platform::ProcStat> out;
  const std::set<pid_t> ids = owned_ids(record);
  const pid_t self = ::getpid();
  for (const auto& process : platform::list_processes()) {
    if (process.state == 'Z' || process.state == 'X' || process.pid == self) {
      continue;
    }
    bool recorded = false;
    for (const auto& member : record.members) {
      if (member.pid == process.pid && member.start_time == process.start_time) {
        recorded = true;
        break;
      }
    }
    if (recorded || ids.count(process.pgid) != 0 || ids.count(process.sid) != 0
        || platform::has_run_marker(process.pid, record.run_id)) {
      out.push_back(process);
    }
  }
  return out;
}

void kill_identity(pid_t pid, unsigned long long start_time)
{
  int fd = platform::open_verified_pidfd(pid, start_time);
  if (fd >= 0) {
    platform::pidfd_signal(fd, SIGKILL);
    ::close(fd);
  }
}

} // namespace

Result<void> check_recorded_boundary(const RunRecord& record)
{
  if (!is_cgroup(record)) {
    if (record.boundary.kind == BoundaryKind::process_group) {
      return {};
    }
    return fail(plain_error("a job boundary cannot be acted on here"));
  }
  auto mount = platform::cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  const std::string& path = record.boundary.address;
  const std::string leaf = "treeguard-" + record.run_id;
  if (path.rfind(*mount + "/", 0) != 0 || path.find("/../") != std::string::npos
      || path.size() < leaf.size() + 1
      || path.compare(path.size() - leaf.size() - 1, std::string::npos, "/" + leaf) != 0) {
    return fail(plain_error(fmt::format(
      "record names cgroup {}, which is not a treeguard leaf for run {} under {}", path,
      record.run_id, *mount)));
  }
  struct statfs fs;
  if (::statfs(path.c_str(), &fs) == 0 && fs.f_type != CGROUP2_SUPER_MAGIC) {
    return fail(plain_error(fmt::format("{} is not in a cgroup2 file system", path)));
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return fail(plain_error(fmt::format("{} is not a directory", path)));
  }
  return {};
}

std::optional<bool> recorded_boundary_empty(const RunRecord& record)
{
  if (!check_recorded_boundary(record)) {
    return std::nullopt;
  }
  if (is_cgroup(record)) {
    auto populated = cgroup_populated(record.boundary.address);
    if (!populated || !*populated) {
      return std::nullopt;
    }
    return !**populated;
  }
  if (!recorded_group_members(record).empty()) {
    return false;
  }
  if (record.members.empty()) {
    // Killed before COMMAND was spawned (no group yet, no member, nothing
    // carrying the run's marker, as the walk above found): nothing ran.
    // Any other record without members proves nothing.
    if (!record.boundary.pgid && record.boundary.address == k_pgid_pending) {
      return true;
    }
    return std::nullopt;
  }
  if (record.boundary.pgid) {
    // Live processes in the recorded group that none of the rules above
    // claims: the group id may be another's now. Cannot tell.
    for (const auto& process : platform::list_processes()) {
      if (process.pgid == *record.boundary.pgid && process.state != 'Z'
          && process.pid != ::getpid()) {
        return std::nullopt;
      }
    }
  }
  return true;
}

Result<bool> kill_recorded_boundary(const RunRecord& record, Duration verify_for)
{
  TG_TRY(check_recorded_boundary(record));
  const auto until = std::chrono::steady_clock::now() + verify_for;
  if (is_cgroup(record)) {
    const std::string& path = record.boundary.address;
    auto populated = cgroup_populated(path);
    if (populated && *populated && !**populated) {
      return true;
    }
    int fd = ::open((path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      bool written = ::write(fd, "1", 1) == 1;
      int error = errno;
      ::close(fd);
      if (!written) {
        return fail(errno_error(error, fmt::format("write {}/cgroup.kill", path)));
      }
    } else {
      // No cgroup.kill (before 5.14): kill each listed process.
      auto procs = platform::read_cgroup_file(path + "/cgroup.procs");
      if (procs) {
        for (const char* p = procs->c_str(); *p != '\0';) {
          char* end = nullptr;
          long pid = std::strtol(p, &end, 10);
          if (end == p) {
            break;
          }
          if (pid > 0) {
            ::kill(static_cast<pid_t>(pid), SIGKILL);
          }
          p = end;
        }
      }
    }
    platform::UniqueFd events(::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
    for (;;) {
      auto now_populated = cgroup_populated(path);
      if (now_populated && *now_populated && !**now_populated) {
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return false;
      }
      if (events) {
        char buffer[128];
        (void)::pread(events.get(), buffer, sizeof buffer, 0);
        struct pollfd pfd = {events.get(), POLLPRI, 0};
        ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 100)));
      } else {
        struct timespec pause = {0, 10'000'000};
        ::nanosleep(&pause, nullptr);
      }
    }
  }

  // Process group: kill by verified pidfd every recorded member and every
  // process in a group or session a member made, in rounds until none is
  // left or the time is up.
  for (;;) {
    const auto alive = recorded_group_members(record);
    if (alive.empty()) {
      // Nothing left that the record proves is the run's; whether that
      // proves the boundary empty is the one rule the gate uses too.
      return recorded_boundary_empty(record) == true;
    }
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    for (const auto& process : alive) {
      kill_identity(process.pid, process.start_time);
    }
    struct timespec pause = {0, 5'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

Result<void> remove_recorded_boundary(const RunRecord& record)
{
  if (!is_cgroup(record)) {
    return {};
  }
  TG_TRY(check_recorded_boundary(record));
  if (::rmdir(record.boundary.address.c_str()) != 0 && errno != ENOENT) {
    return fail(errno_error(errno, fmt::format("rmdir {}", record.boundary.address)));
  }
  return {};
}

ProcessIdentity current_process_identity()
{
  auto stat = platform::read_proc_stat(::getpid());
  return ProcessIdentity{static_cast<long>(::getpid()), stat ? stat->start_time : 0};
}

std::string recorded_force_method(const RunRecord& record)
{
  return record.boundary.kind == BoundaryKind::cgroup ? "cgroup.kill" : "SIGKILL";
}

} // namespace treeguard
