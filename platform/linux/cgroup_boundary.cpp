#include "linux/cgroup_boundary.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/graceful_stop.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>
#include <unordered_set>

namespace treeguard::platform {

namespace {

std::vector<std::string> controllers_for(const Limits& limits) {
  std::vector<std::string> controllers;
  if (limits.memory_max) {
    controllers.emplace_back("memory");
  }
  if (limits.pids_max) {
    controllers.emplace_back("pids");
  }
  return controllers;
}

}  // namespace

Result<void> CgroupBoundary::check_parent(const std::string& parent_dir, const Limits& limits) {
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
  const auto controllers = controllers_for(limits);
  if (!controllers.empty()) {
    TG_TRY(check_controllers(parent_dir, controllers));
  }
  return {};
}

Result<std::unique_ptr<CgroupBoundary>> CgroupBoundary::create(const std::string& parent_dir,
                                                               const std::string& run_id,
                                                               const Limits& limits) {
  TG_TRY(check_parent(parent_dir, limits));
  const auto controllers = controllers_for(limits);
  if (!controllers.empty()) {
    TG_TRY(give_controllers(parent_dir, controllers));
  }
  std::string path = parent_dir + "/treeguard-" + run_id;
  std::unique_ptr<CgroupBoundary> boundary(new CgroupBoundary(path, limits));
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
  if (auto limited = set_limits(); !limited) {
    std::ignore = close();
    return limited;
  }
  read_populated();
  return {};
}

Result<void> CgroupBoundary::set_limits() {
  auto write = [this](const char* name, const std::string& value) -> Result<void> {
    UniqueFd fd(::openat(m_dir_fd.get(), name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd
        || ::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size())) {
      return fail(errno_error(errno, fmt::format("write '{}' to {}/{}", value, m_path, name)));
    }
    return {};
  };
  if (m_limits.memory_max) {
    TG_TRY(write("memory.max", std::to_string(*m_limits.memory_max)));
    // Without swap accounting (no memory.swap.max) nothing can swap here.
    if (::faccessat(m_dir_fd.get(), "memory.swap.max", F_OK, 0) == 0) {
      TG_TRY(write("memory.swap.max", "0"));
    }
  }
  if (m_limits.pids_max) {
    TG_TRY(write("pids.max", std::to_string(*m_limits.pids_max)));
  }
  return {};
}

std::optional<std::string> CgroupBoundary::read_leaf(const char* name) const {
  UniqueFd fd(::openat(m_dir_fd.get(), name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    return std::nullopt;
  }
  std::string text;
  char buffer[1024];
  ssize_t n = 0;
  while ((n = ::read(fd.get(), buffer, sizeof buffer)) > 0) {
    text.append(buffer, static_cast<std::size_t>(n));
  }
  if (n < 0) {
    return std::nullopt;
  }
  return text;
}

std::optional<TreeUsage> CgroupBoundary::usage() {
  if (!m_dir_fd) {
    return std::nullopt;
  }
  TreeUsage usage;
  usage.source = "cgroup";
  // cpu.stat has usage, user and system time whether or not the cpu
  // controller is enabled; the peaks exist with their controllers (and
  // kernels 5.19 / 6.1).
  if (auto stat = read_leaf("cpu.stat")) {
    if (auto user = parse_flat_key(*stat, "user_usec")) {
      usage.cpu_user_seconds = static_cast<double>(*user) / 1e6;
    }
    if (auto system = parse_flat_key(*stat, "system_usec")) {
      usage.cpu_system_seconds = static_cast<double>(*system) / 1e6;
    }
  }
  auto number = [this](const char* name) -> std::optional<std::uint64_t> {
    auto text = read_leaf(name);
    if (!text) {
      return std::nullopt;
    }
    char* end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text->c_str(), &end, 10);
    if (errno != 0 || end == text->c_str()) {
      return std::nullopt;
    }
    return static_cast<std::uint64_t>(value);
  };
  usage.memory_peak_bytes = number("memory.peak");
  usage.tasks_peak = number("pids.peak");
  if (auto events = read_leaf("memory.events")) {
    usage.oom_kills = parse_flat_key(*events, "oom_kill").value_or(0);
  }
  return usage;
}

CgroupBoundary::~CgroupBoundary() {
  std::ignore = close();
}

std::optional<bool> CgroupBoundary::read_populated() {
  if (!m_events_fd) {
    return std::nullopt;
  }
  char buffer[256];
  ssize_t n = ::pread(m_events_fd.get(), buffer, sizeof buffer - 1, 0);
  if (n < 0 && errno == ENODEV) {
    // The leaf was removed (rmdir) by someone else. Its files answer
    // nothing any more, and poll says "ready" for them at once, for ever:
    // it is watched no longer (wait() would spin on it).
    m_leaf_removed = true;
    m_events_fd.reset();
    return std::nullopt;
  }
  if (n <= 0) {
    return std::nullopt;
  }
  return parse_populated(std::string(buffer, static_cast<std::size_t>(n)));
}

std::vector<MemberInfo> CgroupBoundary::scan() {
  std::vector<ProcStat> stats;
  for (pid_t pid : cgroup_pids(m_path)) {
    auto stat = read_proc_stat(pid);
    if (stat && stat->alive()) {
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
  auto delivered = signal_cgroup(m_path, signal_number(signal));
  remember_all(delivered.reached, CommandGroup{m_child_pgid, m_child_sid}, m_members);
  if (delivered.error) {
    return fail(*delivered.error);
  }
  return {};
}

Result<void> CgroupBoundary::kill_all() {
  // No census here (Boundary::kill_all): cgroup.kill goes out at once,
  // forks in flight included.
  take_precedence();
  stopping();
  return kill_cgroup(m_path);
}

Result<bool> CgroupBoundary::is_empty() {
  auto populated = read_populated();
  if (m_leaf_removed) {
    return empty_after_removal();
  }
  if (!populated) {
    return fail(plain_error(fmt::format("read {}/cgroup.events", m_path)));
  }
  if (*populated) {
    return false;
  }
  reap();
  return m_child <= 0 || m_status.has_value();
}

// The leaf was removed by someone else. The kernel removes a cgroup only
// when no process lives in it or below it, and none can join it after: each
// member died in it, or was moved out of it before, as a member moved out
// of a leaf that stays is no longer the run's. COMMAND, treeguard's child,
// is the one still seen from here: dead, it is reaped and the boundary is
// empty; alive, it lives outside the leaf, and what it started may too:
// the boundary is gone, with nothing proven.
Result<bool> CgroupBoundary::empty_after_removal() {
  if (m_child > 0 && !m_status && m_child_pidfd) {
    // A process is counted out of its cgroup a moment before its exit is
    // reported: wait for that report (bounded; signals are read through
    // the signalfd, so nothing interrupts this).
    struct pollfd exited = {m_child_pidfd.get(), POLLIN, 0};
    (void)::poll(&exited, 1, k_exit_report_ms);
  }
  reap();
  if (m_child <= 0 || m_status) {
    return true;
  }
  return fail(boundary_gone(fmt::format("the leaf {} was removed from outside while COMMAND "
                                        "(pid {}) lived on outside it",
                                        m_path, m_child)));
}

namespace {

// The pids in the cgroup `path` itself, not in the cgroups below it.
std::vector<pid_t> own_pids(const std::string& path) {
  std::vector<pid_t> pids;
  auto text = read_cgroup_file(path + "/cgroup.procs");
  std::istringstream lines(text ? *text : std::string());
  for (long pid = 0; lines >> pid;) {
    pids.push_back(static_cast<pid_t>(pid));
  }
  return pids;
}

}  // namespace

Result<std::vector<MemberInfo>> CgroupBoundary::hand_over(const EnclosingRun& to) {
  if (!m_formed || m_removed) {
    return fail(plain_error(fmt::format("{} was not formed", m_path)));
  }
  auto own = own_cgroup_dir();
  if (!own) {
    return fail(own.error());
  }
  if (to.kind == BoundaryKind::cgroup && !cgroup_within(*own, to.address)) {
    return fail(plain_error(fmt::format("this treeguard runs in {}, not inside run {}'s leaf {}",
                                        *own, to.run_id, to.address)));
  }
  TG_TRY(freeze_cgroup(m_path));
  const auto listed = own_pids(m_path);
  if (cgroup_pids(m_path).size() != listed.size()) {
    std::ignore = write_cgroup_file(m_path + "/cgroup.freeze", "0");
    return fail(plain_error(
        fmt::format("a run nested in this one still runs in a cgroup below {}", m_path)));
  }
  std::vector<MemberInfo> handed;
  std::optional<Error> failed;
  for (pid_t pid : listed) {
    auto stat = read_proc_stat(pid);
    if (!stat || !stat->alive()) {
      continue;
    }
    const MemberInfo member =
        remember_sighting(m_members, *stat, CommandGroup{m_child_pgid, m_child_sid});
    // A process moved out of a frozen cgroup into a thawed one thaws.
    auto moved = write_cgroup_file(*own + "/cgroup.procs", std::to_string(pid));
    if (moved) {
      handed.push_back(member);
    } else if (!failed) {
      failed = moved.error();
    }
  }
  std::ignore = write_cgroup_file(m_path + "/cgroup.freeze", "0");
  if (handed.empty() && failed) {
    return fail(*failed);
  }
  hand_over_children(*own, handed);
  name_as_now(handed);
  return handed;
}

// A process moved out of the frozen leaf thaws at once and may fork before
// the last one is moved: its child is born in `own`, outside the leaf, and
// goes with its parent. Each such child of a process handed over (and
// theirs, walked until a listing finds none new, at most 8 times) is named
// as handed over too; what they fork later is the enclosing run's, as
// anything its processes start.
void CgroupBoundary::hand_over_children(const std::string& own, std::vector<MemberInfo>& handed) {
  std::unordered_set<pid_t> parents;
  for (const auto& member : handed) {
    parents.insert(static_cast<pid_t>(member.pid));
  }
  bool found_new = true;
  for (int round = 0; round < 8 && found_new; ++round) {
    found_new = false;
    for (pid_t pid : own_pids(own)) {
      if (parents.count(pid) != 0) {
        continue;
      }
      auto stat = read_proc_stat(pid);
      if (!stat || !stat->alive() || parents.count(stat->ppid) == 0) {
        continue;
      }
      handed.push_back(
          remember_sighting(m_members, *stat, CommandGroup{m_child_pgid, m_child_sid}));
      parents.insert(pid);
      found_new = true;
    }
  }
}

// systemd takes a unit down by signalling every process of its cgroup and
// of the cgroups below it, one cgroup after another. Treeguard, signalled
// first, may prove its leaf empty and remove it while that walk is on its
// way to the leaf; the walk then fails there (ENODEV), and systemd, taking
// the failure for "nothing to wait for", goes straight to SIGKILL for the
// whole unit: treeguard dies before its record and report are finished. So
// an empty leaf inside the unit (beneath treeguard's own cgroup) whose
// manager signalled treeguard is left to it: systemd removes a unit's
// cgroups, delegated ones too, when the unit ends.
bool CgroupBoundary::leave_to_manager() const {
  if (m_signalled_by_manager == 0) {
    return false;
  }
  auto own = own_cgroup_dir();
  return own && m_path != *own && cgroup_within(m_path, *own);
}

Result<void> CgroupBoundary::close() {
  if (m_removed || !m_formed || m_left_in_place) {
    return {};
  }
  auto populated = read_populated();
  if (populated && *populated) {
    return fail(plain_error(fmt::format("{} still has members; kept", m_path)));
  }
  m_dir_fd.reset();
  m_procs_fd.reset();
  if (m_leaf_removed) {
    m_removed = true;  // by someone else: nothing left to remove
    return {};
  }
  if (leave_to_manager()) {
    m_left_in_place = true;
    return {};
  }
  TG_TRY(remove_cgroup_tree(m_path));
  m_events_fd.reset();
  m_removed = true;
  return {};
}

std::optional<std::string> CgroupBoundary::left_in_place() const {
  if (!m_left_in_place) {
    return std::nullopt;
  }
  return fmt::format("the empty leaf {} is left to the service manager (systemd, pid {}), "
                     "which signalled treeguard: it removes the leaf with its unit",
                     m_path, m_signalled_by_manager);
}

}  // namespace treeguard::platform
