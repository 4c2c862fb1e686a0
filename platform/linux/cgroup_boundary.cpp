#include "linux/cgroup_boundary.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/proc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace treeguard::platform {

namespace {

// Child cgroups of `dir` (nested treeguard runs make their own leaves).
std::vector<std::string> child_cgroups(const std::string& dir)
{
  std::vector<std::string> out;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    return out;
  }
  while (struct dirent* entry = ::readdir(handle)) {
    if (entry->d_type == DT_DIR && std::strcmp(entry->d_name, ".") != 0
        && std::strcmp(entry->d_name, "..") != 0) {
      out.push_back(dir + "/" + entry->d_name);
    }
  }
  ::closedir(handle);
  return out;
}

void collect_pids(const std::string& dir, std::vector<pid_t>& pids)
{
  if (auto text = read_cgroup_file(dir + "/cgroup.procs")) {
    std::istringstream in(*text);
    long pid = 0;
    while (in >> pid) {
      pids.push_back(static_cast<pid_t>(pid));
    }
  }
  for (const auto& child : child_cgroups(dir)) {
    collect_pids(child, pids);
  }
}

Result<void> write_file(const std::string& path, const char* text)
{
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno_error(errno, fmt::format("open {}", path)));
  }
  UniqueFd owner(fd);
  std::size_t length = std::strlen(text);
  if (::write(fd, text, length) != static_cast<ssize_t>(length)) {
    return fail(errno_error(errno, fmt::format("write {}", path)));
  }
  return {};
}

// The process's cgroup v2 path, from /proc/PID/cgroup.
std::optional<std::string> process_cgroup(pid_t pid)
{
  auto text = read_cgroup_file(fmt::format("/proc/{}/cgroup", pid));
  if (!text) {
    return std::nullopt;
  }
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) {
      return line.substr(3);
    }
  }
  return std::nullopt;
}

// Remove `dir` and, first, the cgroups below it.
Result<void> remove_tree(const std::string& dir)
{
  for (const auto& child : child_cgroups(dir)) {
    auto removed = remove_tree(child);
    if (!removed) {
      return removed;
    }
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    return fail(errno_error(errno, fmt::format("rmdir {}", dir)));
  }
  return {};
}

} // namespace

Result<std::unique_ptr<CgroupBoundary>>
CgroupBoundary::create(const std::string& parent_dir, const std::string& run_id)
{
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  // Writing cgroup.procs needs write access to the leaf's and the common
  // ancestor's cgroup.procs (delegation rules); check before creating.
  const std::string parent_procs = parent_dir + "/cgroup.procs";
  if (::access(parent_procs.c_str(), W_OK) != 0) {
    return fail(errno_error(errno, fmt::format("write access to {}", parent_procs)));
  }
  std::string path = parent_dir + "/treeguard-" + run_id;
  if (::mkdir(path.c_str(), 0755) != 0) {
    return fail(errno_error(errno, fmt::format("mkdir {}", path)));
  }
  std::unique_ptr<CgroupBoundary> boundary(new CgroupBoundary(path));
  boundary->m_relative = path.size() > mount->size() ? path.substr(mount->size()) : "/";
  if (*mount == "/") {
    boundary->m_relative = path;
  }
  boundary->m_dir_fd.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  boundary->m_events_fd.reset(
    ::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  boundary->m_procs_fd.reset(
    ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!boundary->m_dir_fd || !boundary->m_events_fd || !boundary->m_procs_fd) {
    int error = errno;
    return fail(errno_error(error, fmt::format("open the files of {}", path)));
  }
  boundary->m_has_kill = ::access((path + "/cgroup.kill").c_str(), W_OK) == 0;
  boundary->read_populated();
  return boundary;
}

CgroupBoundary::~CgroupBoundary()
{
  std::ignore = close();
}

std::optional<bool> CgroupBoundary::read_populated()
{
  char buffer[256];
  ssize_t n = ::pread(m_events_fd.get(), buffer, sizeof buffer - 1, 0);
  if (n <= 0) {
    return std::nullopt;
  }
  return parse_populated(std::string(buffer, static_cast<std::size_t>(n)));
}

void CgroupBoundary::remember(const MemberInfo& member)
{
  for (const auto& known : m_members) {
    if (known.pid == member.pid && known.start_time == member.start_time) {
      return;
    }
  }
  m_members.push_back(member);
}

std::vector<MemberInfo> CgroupBoundary::scan()
{
  std::vector<pid_t> pids;
  collect_pids(m_path, pids);
  std::vector<MemberInfo> out;
  for (pid_t pid : pids) {
    auto stat = read_proc_stat(pid);
    if (!stat || stat->state == 'Z') {
      continue;
    }
    MemberInfo member{pid, stat->start_time,
                      m_child_sid > 0 && (stat->sid != m_child_sid || stat->pgid != m_child_pgid)};
    remember(member);
    out.push_back(member);
  }
  return out;
}

std::vector<MemberInfo> CgroupBoundary::alive_members()
{
  return scan();
}

Result<void> CgroupBoundary::signal_all(Signal signal)
{
  for (const auto& member : scan()) {
    int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
    if (fd < 0) {
      continue; // gone already
    }
    UniqueFd pidfd(fd);
    // Only a process still inside our subtree is ours to signal.
    auto where = process_cgroup(static_cast<pid_t>(member.pid));
    if (!where || (*where != m_relative && where->rfind(m_relative + "/", 0) != 0)) {
      continue;
    }
    int error = pidfd_signal(pidfd.get(), signal_number(signal));
    if (error != 0 && error != ESRCH) {
      return fail(errno_error(error, fmt::format("signal pid {}", member.pid)));
    }
  }
  return {};
}

Result<void> CgroupBoundary::kill_all()
{
  scan(); // the report lists who was there when the kill was sent
  if (m_has_kill) {
    // Kills the whole subtree atomically, forks in flight included.
    return write_file(m_path + "/cgroup.kill", "1");
  }
  return kill_by_freezing();
}

Result<void> CgroupBoundary::kill_by_freezing()
{
  const std::string freeze = m_path + "/cgroup.freeze";
  for (int round = 0; round < 100; ++round) {
    auto populated = read_populated();
    if (populated && !*populated) {
      return {};
    }
    // Frozen members cannot fork while we enumerate them.
    TG_TRY(write_file(freeze, "1"));
    for (int waited = 0; waited < 100; ++waited) {
      auto events = read_cgroup_file(m_path + "/cgroup.events");
      if (!events || events->find("frozen 1") != std::string::npos) {
        break;
      }
      struct pollfd fd = {m_events_fd.get(), POLLPRI, 0};
      ::poll(&fd, 1, 10);
    }
    std::vector<pid_t> pids;
    collect_pids(m_path, pids);
    for (pid_t pid : pids) {
      ::kill(pid, SIGKILL);
    }
    TG_TRY(write_file(freeze, "0"));
    if (pids.empty()) {
      return {};
    }
  }
  return fail(plain_error(fmt::format("{} kept members after 100 freeze-and-kill rounds", m_path)));
}

Result<bool> CgroupBoundary::is_empty()
{
  auto populated = read_populated();
  if (!populated) {
    return fail(plain_error(fmt::format("read {}/cgroup.events", m_path)));
  }
  if (*populated) {
    return false;
  }
  reap();
  return m_child <= 0 || m_status.has_value();
}

Result<void> CgroupBoundary::close()
{
  if (m_removed) {
    return {};
  }
  auto populated = read_populated();
  if (populated && *populated) {
    return fail(plain_error(fmt::format("{} still has members; kept", m_path)));
  }
  m_dir_fd.reset();
  m_procs_fd.reset();
  TG_TRY(remove_tree(m_path));
  m_events_fd.reset();
  m_removed = true;
  return {};
}

} // namespace treeguard::platform
