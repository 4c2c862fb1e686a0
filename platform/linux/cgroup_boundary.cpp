#include "linux/cgroup_boundary.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <tuple>

namespace treeguard::platform {

namespace {

// Remove `dir` and, first, the cgroups below it.
Result<void> remove_tree(const std::string& dir) {
  std::vector<std::string> children;
  if (DIR* handle = ::opendir(dir.c_str())) {
    while (struct dirent* entry = ::readdir(handle)) {
      if (entry->d_type == DT_DIR && std::strcmp(entry->d_name, ".") != 0
          && std::strcmp(entry->d_name, "..") != 0) {
        children.push_back(dir + "/" + entry->d_name);
      }
    }
    ::closedir(handle);
  }
  for (const auto& child : children) {
    TG_TRY(remove_tree(child));
  }
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    return fail(errno_error(errno, fmt::format("rmdir {}", dir)));
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<CgroupBoundary>> CgroupBoundary::create(const std::string& parent_dir,
                                                               const std::string& run_id) {
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
  std::unique_ptr<CgroupBoundary> boundary(new CgroupBoundary(path));
  boundary->m_relative = cgroup_relative(*mount, path);
  return boundary;
}

Result<void> CgroupBoundary::form() {
  if (m_dir_fd) {
    return {};
  }
  if (::mkdir(m_path.c_str(), 0755) != 0) {
    return fail(errno_error(errno, fmt::format("mkdir {}", m_path)));
  }
  m_formed = true;
  m_dir_fd.reset(::open(m_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  m_events_fd.reset(::open((m_path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  m_procs_fd.reset(::open((m_path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!m_dir_fd || !m_events_fd || !m_procs_fd) {
    int error = errno;
    std::ignore = close();
    return fail(errno_error(error, fmt::format("open the files of {}", m_path)));
  }
  read_populated();
  return {};
}

CgroupBoundary::~CgroupBoundary() {
  std::ignore = close();
}

std::optional<bool> CgroupBoundary::read_populated() {
  char buffer[256];
  ssize_t n = ::pread(m_events_fd.get(), buffer, sizeof buffer - 1, 0);
  if (n <= 0) {
    return std::nullopt;
  }
  return parse_populated(std::string(buffer, static_cast<std::size_t>(n)));
}

std::vector<MemberInfo> CgroupBoundary::scan() {
  std::vector<ProcStat> stats;
  for (pid_t pid : cgroup_pids(m_path)) {
    auto stat = read_proc_stat(pid);
    if (stat && stat->state != 'Z') {
      stats.push_back(*stat);
    }
  }
  remember_all(stats, CommandGroup{m_child_pgid, m_child_sid}, m_members);
  std::vector<MemberInfo> out;
  for (const auto& stat : stats) {
    if (const MemberInfo* member = m_members.find(ProcessIdentity{stat.pid, stat.start_time})) {
      out.push_back(*member);
    }
  }
  return out;
}

std::vector<MemberInfo> CgroupBoundary::alive_members() {
  return scan();
}

Result<void> CgroupBoundary::signal_all(Signal signal) {
  take_precedence();
  for (const auto& member : scan()) {
    int fd = open_verified_pidfd(static_cast<pid_t>(member.pid), member.start_time);
    if (fd < 0) {
      continue;  // gone already
    }
    UniqueFd pidfd(fd);
    // Only a process still inside our subtree is ours to signal.
    auto where = process_cgroup(static_cast<int>(member.pid));
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

Result<void> CgroupBoundary::kill_all() {
  take_precedence();
  scan();  // the report lists who was there when the kill was sent
  return kill_cgroup(m_path);
}

Result<bool> CgroupBoundary::is_empty() {
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

Result<void> CgroupBoundary::close() {
  if (m_removed || !m_formed) {
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

}  // namespace treeguard::platform
