#include "linux/graceful_stop.hpp"

#include "linux/cgroup_fs.hpp"
#include "posix/unique_fd.hpp"
#include "run_id.hpp"

#include <fmt/format.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <set>
#include <unordered_map>
#include <utility>

namespace treeguard::platform {

namespace {

// Whether the process `pid` runs this very program: its executable is the
// file this process was started from (device and inode).
bool runs_this_program(pid_t pid) {
  static const std::optional<std::pair<dev_t, ino_t>> self = []() {
    struct stat st {};
    return ::stat("/proc/self/exe", &st) == 0
               ? std::optional<std::pair<dev_t, ino_t>>(std::make_pair(st.st_dev, st.st_ino))
               : std::nullopt;
  }();
  struct stat st {};
  return self && ::stat(fmt::format("/proc/{}/exe", pid).c_str(), &st) == 0
         && std::make_pair(st.st_dev, st.st_ino) == *self;
}

// Whether the controller the nested leaf `nested` (a run's leaf, treeguard-RUNID,
// below the cgroup `top`; both relative to the mount) names by its run id lives:
// alive in `top`'s subtree but outside `nested`, running this very program.
bool nested_controller_lives(const std::string& run_id, const std::string& top,
                             const std::string& nested) {
  const auto pid = run_id_pid(run_id);
  if (!pid) {
    return false;
  }
  auto stat = read_proc_stat(static_cast<pid_t>(*pid));
  if (!stat || !stat->alive()) {
    return false;
  }
  auto where = process_cgroup(static_cast<int>(*pid));
  return where && cgroup_within(*where, top) && !cgroup_within(*where, nested)
         && runs_this_program(static_cast<pid_t>(*pid));
}

// How many pidfds one batch of signal_cgroup may hold: all `wanted` when the
// descriptor limit allows it (the soft limit is raised toward the hard one
// for that), else what it leaves, with room for the rest of treeguard.
std::size_t pin_batch_size(std::size_t wanted) {
  constexpr rlim_t k_reserve = 128;
  constexpr std::size_t k_least = 256;
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return k_least;
  }
  const rlim_t needed = static_cast<rlim_t>(wanted) + k_reserve;
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    struct rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY ? needed : std::min(needed, limit.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
      limit = raised;
    }
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) {
    return std::max(wanted, k_least);
  }
  return std::max(static_cast<std::size_t>(
                      limit.rlim_cur > 2 * k_reserve ? limit.rlim_cur - k_reserve : k_least),
                  k_least);
}

// CONT to each of `stopped`, once every process has the signal pending.
void continue_stopped(const std::vector<UniqueFd>& stopped) {
  for (const auto& pidfd : stopped) {
    pidfd_signal(pidfd.get(), SIGCONT);
  }
}

}  // namespace

std::unordered_set<pid_t> inside_live_nested_runs(const std::vector<ProcStat>& found,
                                                  ProgramLooks* looked) {
  std::unordered_map<pid_t, std::vector<pid_t>> children;
  for (const auto& stat : found) {
    children[stat.ppid].push_back(stat.pid);
  }
  const auto runs_here = [looked](const ProcStat& stat) {
    if (looked == nullptr) {
      return runs_this_program(stat.pid);
    }
    auto [at, added] = looked->try_emplace({stat.pid, stat.start_time}, false);
    if (added) {
      at->second = runs_this_program(stat.pid);
    }
    return at->second;
  };
  std::unordered_set<pid_t> inside;
  for (const auto& stat : found) {
    if (children.count(stat.pid) == 0 || inside.count(stat.pid) != 0 || !runs_here(stat)) {
      continue;
    }
    // A nested run's controller: its descendants are its run's.
    std::vector<pid_t> below = children[stat.pid];
    while (!below.empty()) {
      const pid_t pid = below.back();
      below.pop_back();
      if (!inside.insert(pid).second) {
        continue;
      }
      if (auto more = children.find(pid); more != children.end()) {
        below.insert(below.end(), more->second.begin(), more->second.end());
      }
    }
  }
  return inside;
}

std::vector<std::string> live_nested_leaves(const std::string& leaf) {
  auto mount = cgroup2_mount();
  if (!mount) {
    return {};
  }
  const std::string top = cgroup_relative(*mount, leaf);
  const std::string prefix = "treeguard-";
  std::vector<std::string> live;
  std::vector<std::string> dirs;
  child_cgroups(leaf, dirs);
  while (!dirs.empty()) {
    const std::string dir = dirs.back();
    dirs.pop_back();
    const std::string name = dir.substr(dir.rfind('/') + 1);
    if (name.rfind(prefix, 0) == 0
        && nested_controller_lives(name.substr(prefix.size()), top, cgroup_relative(*mount, dir))) {
      live.push_back(dir);
      continue;  // its controller stops it, and whatever runs are nested in it
    }
    child_cgroups(dir, dirs);
  }
  return live;
}

namespace {

// A process the signal could not be sent to (ESRCH: it is gone, nothing to
// say). The first refusal is what the delivery reports; the others of the
// run are still sent the signal: one member another user owns must not
// keep the drain from the rest of the tree.
void note_refusal(Delivered& out, int error, pid_t pid) {
  if (error != ESRCH && !out.error) {
    out.error = errno_error(
        error,
        fmt::format("signal pid {} (every other process of the run was still sent it)", pid));
  }
}

}  // namespace

Delivered signal_cgroup(const std::string& path, int signal) {
  // Which processes are the subtree's, without a /proc/PID/cgroup read for
  // each: pin every listed pid with a pidfd, then list the subtree again. A
  // pid in the second list whose pidfd's process is still alive afterwards
  // has held that pid since it was pinned, so it was in the subtree at the
  // second listing. Who it is (/proc/PID/stat) is read before it is
  // signalled, so even a process that dies of the signal is named, and kept
  // only if the signal reached the pinned process, so the identity is its
  // own. In batches as large as the descriptors allow (each batch lists the
  // subtree again, so a tree of thousands in batches of hundreds would be
  // listed dozens of times). The live nested runs' processes are listed
  // after the first listing: one in both is spared.
  const auto listed = cgroup_pids(path);
  std::unordered_set<pid_t> spared;
  for (const auto& nested : live_nested_leaves(path)) {
    for (pid_t pid : cgroup_pids(nested)) {
      spared.insert(pid);
    }
  }
  const std::size_t k_batch = pin_batch_size(listed.size());
  Delivered out;
  std::vector<UniqueFd> stopped;
  for (std::size_t from = 0; from < listed.size(); from += k_batch) {
    std::vector<std::pair<pid_t, UniqueFd>> pinned;
    for (std::size_t i = from; i < std::min(listed.size(), from + k_batch); ++i) {
      if (spared.count(listed[i]) != 0) {
        continue;
      }
      int fd = static_cast<int>(::syscall(SYS_pidfd_open, listed[i], 0));
      if (fd >= 0) {
        pinned.emplace_back(listed[i], UniqueFd(fd));
      }
    }
    auto still = cgroup_pids(path);
    std::sort(still.begin(), still.end());
    for (auto& [pid, pidfd] : pinned) {
      if (!std::binary_search(still.begin(), still.end(), pid)) {
        continue;  // gone, or moved out: not ours to signal
      }
      auto stat = read_proc_stat(pid);
      if (!stat || !stat->alive()) {
        continue;  // dead already (a zombie runs no code)
      }
      // Sent through the pidfd, the signal reaches the pinned process or
      // fails: delivered, it proves that process alive now, so alive when
      // its stat was read and at the second listing.
      int error = pidfd_signal(pidfd.get(), signal);
      if (error != 0) {
        note_refusal(out, error, pid);
        continue;
      }
      out.reached.push_back(*stat);
      if (stat->stopped()) {
        stopped.push_back(std::move(pidfd));
      }
    }
  }
  continue_stopped(stopped);
  return out;
}

Delivered signal_each(const Enumerate& enumerate, int signal) {
  Delivered out;
  std::set<std::pair<pid_t, unsigned long long>> sent;
  std::vector<UniqueFd> stopped;
  ProgramLooks looked;
  for (int round = 0; round < 8; ++round) {
    const auto found = enumerate();
    const auto spared = inside_live_nested_runs(found, &looked);
    bool found_new = false;
    for (const auto& stat : found) {
      if (spared.count(stat.pid) != 0 || !sent.insert({stat.pid, stat.start_time}).second) {
        continue;
      }
      found_new = true;
      UniqueFd pidfd(open_verified_pidfd(stat.pid, stat.start_time));
      if (!pidfd) {
        continue;
      }
      int error = pidfd_signal(pidfd.get(), signal);
      if (error != 0) {
        note_refusal(out, error, stat.pid);
        continue;
      }
      out.reached.push_back(stat);
      if (stat.stopped()) {
        stopped.push_back(std::move(pidfd));
      }
    }
    if (!found_new) {
      break;
    }
  }
  continue_stopped(stopped);
  return out;
}

}  // namespace treeguard::platform
