// The Linux takedown engine (run_processes.hpp). One file over 500 lines:
// it is the one way the controller, the guardian and `sweep` find, stop and
// kill a run's processes (the census over /proc, freeze-then-kill, the
// cgroup kill), kept whole so that none of them grows a second copy.
#include "linux/run_processes.hpp"

#include "linux/cgroup_fs.hpp"
#include "posix/unique_fd.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace treeguard::platform {

namespace {

// Send `signal` to the process `who` names, if it is still that process.
// Returns the verified pidfd it went through (empty when the process is
// gone, or the pid is another's now).
UniqueFd signal_identity(pid_t pid, unsigned long long start_time, int signal) {
  UniqueFd fd(open_verified_pidfd(pid, start_time));
  if (!fd || pidfd_signal(fd.get(), signal) != 0) {
    return UniqueFd();
  }
  return fd;
}

// The descriptors a takedown may keep open: the soft RLIMIT_NOFILE, raised
// to the hard limit while the takedown runs (and put back after it), less
// a margin for everything else the process holds and opens meanwhile.
class DescriptorBudget {
public:
  DescriptorBudget() {
    if (::getrlimit(RLIMIT_NOFILE, &m_before) != 0) {
      return;
    }
    struct rlimit raised = m_before;
    raised.rlim_cur = m_before.rlim_max;
    m_raised = ::setrlimit(RLIMIT_NOFILE, &raised) == 0;
    const rlim_t soft = m_raised ? raised.rlim_cur : m_before.rlim_cur;
    const rlim_t cap = std::min<rlim_t>(soft, 1U << 20);
    m_left = cap > k_margin ? static_cast<std::size_t>(cap - k_margin) : 0;
  }
  ~DescriptorBudget() {
    if (m_raised) {
      ::setrlimit(RLIMIT_NOFILE, &m_before);
    }
  }
  DescriptorBudget(const DescriptorBudget&) = delete;
  DescriptorBudget& operator=(const DescriptorBudget&) = delete;

  // Whether one more descriptor may be kept; counts it if so.
  bool take() {
    if (m_left == 0) {
      return false;
    }
    --m_left;
    return true;
  }

private:
  static constexpr rlim_t k_margin = 256;
  struct rlimit m_before {};
  bool m_raised = false;
  std::size_t m_left = 0;
};

}  // namespace

void child_cgroups(const std::string& dir, std::vector<std::string>& out) {
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) {
    return;
  }
  while (struct dirent* entry = ::readdir(handle)) {
    if (entry->d_type == DT_DIR && std::strcmp(entry->d_name, ".") != 0
        && std::strcmp(entry->d_name, "..") != 0) {
      out.push_back(dir + "/" + entry->d_name);
    }
  }
  ::closedir(handle);
}

MemberInfo sighting(const ProcStat& stat, const CommandGroup& command) {
  MemberInfo member = treeguard::sighting(stat.facts(), command);
  member.comm = name_text(stat.comm, k_max_comm);
  return member;
}

const MemberInfo& remember_sighting(Membership& members, const ProcStat& stat,
                                    const CommandGroup& command, bool* added) {
  MemberInfo seen = sighting(stat, command);
  // Its arguments are read once, at the first sighting where reading them
  // cannot wait on it (arguments_readable()): a walk of a known, named
  // tree reads no more than /proc/PID/stat.
  const MemberInfo* known = members.find(seen);
  if ((known == nullptr || known->argv.empty()) && arguments_readable(stat)) {
    seen.argv = read_arguments(stat.pid, k_max_argv);
  }
  return members.remember(seen, added);
}

std::chrono::milliseconds soonest_walk(std::chrono::milliseconds took,
                                       std::chrono::milliseconds floor) {
  return std::max(floor, took * 4);
}

void name_as_now(std::vector<MemberInfo>& members) {
  for (auto& member : members) {
    auto stat = read_proc_stat(static_cast<pid_t>(member.pid));
    if (!stat || stat->start_time != member.start_time || !stat->alive()) {
      continue;
    }
    std::string comm = name_text(stat->comm, k_max_comm);
    if (arguments_readable(*stat)) {
      member.argv = read_arguments(stat->pid, k_max_argv);
    } else if (comm != member.comm) {
      member.argv.clear();  // the arguments of what it was: named by comm alone
    }
    member.comm = std::move(comm);
  }
}

void forget_dead(Membership& members, const std::vector<ProcStat>& alive, std::size_t keep_first) {
  std::unordered_set<long> groups;
  std::unordered_set<long> sessions;
  std::set<std::pair<long, unsigned long long>> live;
  for (const auto& stat : alive) {
    groups.insert(stat.pgid);
    sessions.insert(stat.sid);
    live.insert({stat.pid, stat.start_time});
  }
  std::size_t index = 0;
  auto needed = [&](const MemberInfo& member) {
    if (index++ < keep_first || live.count({member.pid, member.start_time}) != 0) {
      return true;
    }
    if ((member.leads_group && groups.count(member.pid) != 0)
        || (member.leads_session && sessions.count(member.pid) != 0)) {
      return true;  // vouches for a group or session a member is alive in
    }
    return process_alive(static_cast<pid_t>(member.pid), member.start_time);
  };
  // Made again from what is kept, in the order first seen.
  Membership kept;
  for (const auto& member : members.all()) {
    if (needed(member)) {
      kept.remember(member);
    }
  }
  members = std::move(kept);
}

std::vector<ProcStat> walk_members(pid_t root, const CommandGroup& command, Membership& members,
                                   const std::vector<ProcessIdentity>& helpers, bool* grew,
                                   std::size_t keep_first) {
  std::vector<ProcStat> alive;
  for (const auto& stat : list_descendants(root)) {
    if (!stat.alive() || among(ProcessIdentity{stat.pid, stat.start_time}, helpers)) {
      continue;  // a zombie is dead; its identity was seen while it lived
    }
    alive.push_back(stat);
  }
  remember_all(alive, command, members, grew, keep_first);
  return alive;
}

void remember_all(const std::vector<ProcStat>& alive, const CommandGroup& command,
                  Membership& members, bool* grew, std::size_t keep_first) {
  for (const auto& stat : alive) {
    bool added = false;
    remember_sighting(members, stat, command, &added);
    if (added && grew != nullptr) {
      *grew = true;
    }
  }
  if (members.size() >= keep_first + 2 * alive.size() + k_forget_batch) {
    forget_dead(members, alive, keep_first);
  }
}

namespace {

// The host as /proc showed it, as the census rules read it.
class ProcTable final : public ProcessTable {
public:
  explicit ProcTable(const std::vector<ProcStat>& host) : m_host(host) {}
  std::size_t size() const override { return m_host.size(); }
  ProcessFacts facts(std::size_t row) const override { return m_host[row].facts(); }
  Marker marker(std::size_t row, const std::string& run_id) const override {
    return read_run_marker(m_host[row].pid, run_id);
  }
  std::optional<long> user(std::size_t row) const override {
    auto owner = real_uid(m_host[row].pid);
    return owner ? std::optional<long>(*owner) : std::nullopt;
  }

private:
  const std::vector<ProcStat>& m_host;
};

std::vector<ProcStat> rows_of(const std::vector<ProcStat>& host,
                              const std::vector<std::size_t>& rows) {
  std::vector<ProcStat> out;
  out.reserve(rows.size());
  for (const std::size_t row : rows) {
    out.push_back(host[row]);
  }
  return out;
}

}  // namespace

Census take_census(const Claim& claim) {
  const auto host = list_processes();
  const CensusRows rows = judge_census(claim, ProcTable(host), Viewer{::getpid(), ::getuid()});
  Census census;
  census.owned = rows_of(host, rows.owned);
  census.unknowable = rows_of(host, rows.unknowable);
  census.left_alone = rows_of(host, rows.left_alone);
  census.seen = rows_of(host, rows.seen);
  return census;
}

namespace {

// The least pause after a round, so that even a round that took no time
// leaves the signalled a moment to act.
constexpr std::chrono::milliseconds k_least_pause{1};
// The pause after a round that found the processes it looks at unchanged
// (none of them died, none exited): nothing suggests the next round will
// find more, and a wait can last a drain's whole grace (seconds) while a
// member that ignores the signal never dies.
constexpr std::chrono::milliseconds k_idle_pause{20};

// Between two rounds of a takedown: let the signalled act on their signals
// (a signal takes effect when its target is next scheduled) and keep this
// process, at real-time priority, from holding a CPU: the pause is at least
// as long as the round took, so a takedown's rounds never use more than half
// of one CPU, however long they go on; and at least `least` (k_idle_pause
// after a round in which nothing changed: a long wait then costs fifty
// rounds a second, not a thousand).
void pause_after_round(std::chrono::steady_clock::time_point round_started,
                       std::chrono::milliseconds least = k_least_pause) {
  const auto took = std::chrono::steady_clock::now() - round_started;
  const auto pause = std::max<std::chrono::nanoseconds>(took, least);
  struct timespec ts = {static_cast<time_t>(pause.count() / 1'000'000'000),
                        static_cast<long>(pause.count() % 1'000'000'000)};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

namespace {

using Identity = std::pair<pid_t, unsigned long long>;

// The processes the freeze stopped, each with the pidfd it was stopped
// through, kept while descriptors last (it pins the process, so its kill
// needs no second look at it); an empty one where none was kept.
struct Frozen {
  UniqueFd pidfd;
  pid_t parent = 0;  // its parent when it was stopped
};
using FrozenSet = std::map<Identity, Frozen>;

// A level of the frozen tree this big is waited for before its parents are
// killed (kill_frozen()); below it, the orphans cost their reaper little.
constexpr std::size_t k_many_orphans = 100;
// How long the kill waits at a level for one more of it to die.
constexpr std::chrono::milliseconds k_level_patience{1000};

// Phase 1 of freeze_and_kill(): stop everything, in rounds, until a round
// finds nobody who can still fork (ProcStat::held(): stopped, or in
// uninterruptible sleep, which it leaves only through the SIGSTOP it has
// pending), or `give_up` comes. Stopped processes stay where they are (in
// the tree, in their group), so the next walk still sees them and what they
// forked before they stopped. `held` says whether the last round found
// everyone held (else `give_up` ended the freeze).
FrozenSet freeze(const Enumerate& enumerate, std::chrono::steady_clock::time_point give_up,
                 DescriptorBudget& budget, bool& held) {
  FrozenSet stopped;
  for (;;) {
    const auto round_started = std::chrono::steady_clock::now();
    bool running = false;
    for (const auto& stat : enumerate()) {
      if (!stat.alive()) {
        continue;
      }
      if (!stat.held()) {
        running = true;
      }
      auto [at, added] = stopped.try_emplace(Identity{stat.pid, stat.start_time});
      if (stat.ppid > 0) {
        at->second.parent = stat.ppid;  // a first round from a judgement has none
      }
      if (added) {
        UniqueFd pidfd = signal_identity(stat.pid, stat.start_time, SIGSTOP);
        if (pidfd && budget.take()) {
          at->second.pidfd = std::move(pidfd);
        }
      }
    }
    held = !running;
    if (held || std::chrono::steady_clock::now() >= give_up) {
      return stopped;
    }
    pause_after_round(round_started);
  }
}

// Wait while the processes of `pidfds` keep exiting, until none is left
// or `patience` passes in which none exited. A pidfd polls readable once its
// process's whole thread group is gone, as process_alive() has it; this is
// no judgement (nothing is killed or proven by it), only kill_frozen()'s
// cue to go up a level, and polls the descriptors it holds without reading
// /proc, which at real-time priority would take CPU from the dying.
void await_exits(std::vector<UniqueFd> pidfds, std::chrono::milliseconds patience) {
  std::vector<struct pollfd> polled;
  polled.reserve(pidfds.size());
  for (const auto& fd : pidfds) {
    polled.push_back({fd.get(), POLLIN, 0});
  }
  auto until = std::chrono::steady_clock::now() + patience;
  while (!polled.empty()) {
    pause_after_round(std::chrono::steady_clock::now(), k_idle_pause);
    if (::poll(polled.data(), polled.size(), 0) < 0) {
      return;
    }
    const std::size_t before = polled.size();
    polled.erase(std::remove_if(polled.begin(), polled.end(),
                                [](const struct pollfd& fd) { return fd.revents != 0; }),
                 polled.end());
    const auto now = std::chrono::steady_clock::now();
    if (polled.size() < before) {
      until = now + patience;  // progress: the patience starts again
    } else if (now >= until) {
      return;
    }
  }
}

// The processes of `stopped` by their depth in the frozen tree (how many
// frozen ancestors each has, by the parent it had when it was stopped),
// deepest first.
std::vector<std::vector<FrozenSet::value_type*>> deepest_first(FrozenSet& stopped) {
  std::unordered_map<pid_t, FrozenSet::value_type*> by_pid;
  for (auto& entry : stopped) {
    by_pid[entry.first.first] = &entry;
  }
  std::unordered_map<pid_t, std::size_t> depth;
  std::vector<pid_t> path;
  for (auto& entry : stopped) {
    // Up to the first ancestor whose depth is known, or that is not frozen.
    path.clear();
    std::size_t above = 0;
    for (pid_t at = entry.first.first; path.size() <= stopped.size();) {
      if (auto known = depth.find(at); known != depth.end()) {
        above = known->second + 1;
        break;
      }
      path.push_back(at);
      const pid_t parent = by_pid.at(at)->second.parent;
      if (by_pid.count(parent) == 0) {
        break;
      }
      at = parent;
    }
    for (auto step = path.rbegin(); step != path.rend(); ++step) {
      depth[*step] = above++;
    }
  }
  std::vector<std::vector<FrozenSet::value_type*>> levels;
  for (auto& entry : stopped) {
    const std::size_t level = depth[entry.first.first];
    if (levels.size() <= level) {
      levels.resize(level + 1);
    }
    levels[level].push_back(&entry);
  }
  std::reverse(levels.begin(), levels.end());
  return levels;
}

// SIGKILL, then CONT, each process of `stopped`, through its pidfd (or one
// verified again where none was kept; each is closed once used, so that one
// opened here never adds to those kept). Adds them to `killed`; returns how
// many the signal reached, and when the signals to its last level began.
//
// Children go before their parents, the deepest level of the frozen tree
// first. A process that dies while its parent lives (stopped, here) becomes
// that parent's zombie and wakes nobody. One whose parent died first is an
// orphan of the reaper (the pid namespace's init, or a subreaper), and each
// orphan's death makes a reaper that waits for any child scan all of its
// children: with thousands of killed orphans, time quadratic in their
// number (a 20,000-member tree took 4-45 s to die under a shell as init,
// most of it in those scans). So when `wait_for_levels` (everything frozen
// is held: nothing forks meanwhile), a level with many processes is waited
// for (await_exits()) before the level above it is killed.
std::pair<std::size_t, std::chrono::steady_clock::time_point>
kill_frozen(FrozenSet& stopped, bool wait_for_levels, std::set<Identity>& killed) {
  std::size_t reached = 0;
  auto level_started = std::chrono::steady_clock::now();
  const auto levels = deepest_first(stopped);
  for (std::size_t level = 0; level < levels.size(); ++level) {
    level_started = std::chrono::steady_clock::now();
    std::vector<UniqueFd> dying;
    for (auto* entry : levels[level]) {
      const Identity& who = entry->first;
      killed.insert(who);
      UniqueFd& kept = entry->second.pidfd;
      const bool was_kept = static_cast<bool>(kept);
      UniqueFd pidfd =
          was_kept ? std::move(kept) : UniqueFd(open_verified_pidfd(who.first, who.second));
      if (pidfd && pidfd_signal(pidfd.get(), SIGKILL) == 0) {
        pidfd_signal(pidfd.get(), SIGCONT);
        ++reached;
        if (was_kept) {
          dying.push_back(std::move(pidfd));  // only kept ones: never more open than those
        }
      }
    }
    if (wait_for_levels && level + 1 < levels.size() && dying.size() >= k_many_orphans) {
      await_exits(std::move(dying), k_level_patience);
    }
  }
  return {reached, level_started};
}

}  // namespace

Result<std::size_t> freeze_and_kill(const Enumerate& enumerate, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  DescriptorBudget budget;
  bool held = false;
  FrozenSet stopped = freeze(enumerate, give_up, budget, held);
  // Phase 2: kill them all, each once. First every process the freeze
  // stopped (children before their parents), whether or not a walk would
  // still find it.
  std::set<Identity> killed;
  auto [total, last_level_started] = kill_frozen(stopped, held, killed);
  stopped.clear();
  pause_after_round(last_level_started);
  // Then, in rounds until a walk finds no one new, whatever the walks find
  // alive and not yet killed (a SIGKILLed process cannot fork any more; one
  // that is dying is not sent the signal again). A process SIGKILLed while
  // stopped dies; CONT after it changes nothing for the dead and wakes any
  // that a tracer held. Waiting for the killed to die is the caller's
  // verification. The first walk kills whatever the freeze missed, however
  // long the freeze took; only walks that keep finding new processes are
  // bounded.
  for (bool first = true;; first = false) {
    const auto round_started = std::chrono::steady_clock::now();
    std::size_t sent = 0;
    for (const auto& stat : enumerate()) {
      if (!stat.alive() || !killed.emplace(stat.pid, stat.start_time).second) {
        continue;
      }
      if (UniqueFd pidfd = signal_identity(stat.pid, stat.start_time, SIGKILL)) {
        pidfd_signal(pidfd.get(), SIGCONT);
        ++sent;
      }
    }
    total += sent;
    if (sent == 0) {
      return total;
    }
    if (!first && std::chrono::steady_clock::now() >= give_up) {
      return fail(plain_error(fmt::format(
          "{} new process(es) still appearing after {} ms of kill rounds", sent, limit.count())));
    }
    pause_after_round(round_started);
  }
}

void take_precedence() {
  // Once per process: a child forked afterwards lost it (SCHED_RESET_ON_FORK)
  // and takes it again.
  static pid_t taken_by = 0;
  if (taken_by == ::getpid()) {
    return;
  }
  taken_by = ::getpid();
  struct sched_param param {};
  param.sched_priority = 1;
  if (::sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &param) != 0) {
    ::setpriority(PRIO_PROCESS, 0, -10);
  }
}

std::vector<pid_t> cgroup_pids(const std::string& path, bool* complete) {
  std::vector<pid_t> pids;
  std::vector<std::string> dirs{path};
  if (complete != nullptr) {
    *complete = true;
  }
  while (!dirs.empty()) {
    const std::string dir = dirs.back();
    dirs.pop_back();
    if (auto text = read_cgroup_file(dir + "/cgroup.procs")) {
      const char* cursor = text->c_str();
      for (;;) {
        char* end = nullptr;
        long pid = std::strtol(cursor, &end, 10);
        if (end == cursor) {
          break;
        }
        if (pid > 0) {
          pids.push_back(static_cast<pid_t>(pid));
        }
        cursor = end;
      }
    } else if (complete != nullptr) {
      *complete = false;
    }
    child_cgroups(dir, dirs);
  }
  return pids;
}

Result<bool> cgroup_populated(const std::string& path) {
  auto text = read_cgroup_file(path + "/cgroup.events");
  if (!text) {
    if (text.error().code == std::errc::no_such_file_or_directory) {
      return false;  // removed: nothing can be in it
    }
    return fail(text.error());
  }
  auto populated = parse_populated(*text);
  if (!populated) {
    return fail(plain_error(fmt::format("{}/cgroup.events has no populated line", path)));
  }
  return *populated;
}

bool wait_cgroup_empty(const std::string& path, std::chrono::milliseconds patience,
                       std::optional<std::chrono::steady_clock::time_point> at_most) {
  UniqueFd events(::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  std::size_t fewest = static_cast<std::size_t>(-1);
  auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    auto populated = cgroup_populated(path);
    if (populated && !*populated) {
      return true;
    }
    const auto now = std::chrono::steady_clock::now();
    bool counted = false;
    // A count from a failed read is no progress: taken as one, it would
    // set `fewest` below every true count and end the patience early.
    if (const std::size_t left = cgroup_pids(path, &counted).size(); counted && left < fewest) {
      fewest = left;  // progress: the patience starts again
      until = now + patience;
    }
    if (at_most) {
      until = std::min(until, *at_most);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    if (wait.count() <= 0) {
      return false;
    }
    const int wait_ms = static_cast<int>(std::min<long long>(wait.count(), 100));
    if (events) {
      // POLLPRI fires when "populated" changes; the 100 ms cap only guards
      // against a change between the read above and the poll, and counts
      // the progress of a big tree.
      char buffer[128];
      (void)::pread(events.get(), buffer, sizeof buffer, 0);
      struct pollfd fd = {events.get(), POLLPRI, 0};
      ::poll(&fd, 1, wait_ms);
    } else {
      struct timespec pause = {0, 10'000'000};
      ::nanosleep(&pause, nullptr);
    }
  }
}

std::vector<ProcessIdentity>
await_deaths(std::vector<ProcessIdentity> processes, std::chrono::milliseconds patience,
             std::optional<std::chrono::steady_clock::time_point> at_most) {
  auto until = std::chrono::steady_clock::now() + patience;
  for (;;) {
    const auto round_started = std::chrono::steady_clock::now();
    const std::size_t before = processes.size();
    processes.erase(std::remove_if(processes.begin(), processes.end(),
                                   [](const ProcessIdentity& who) {
                                     return !process_alive(static_cast<pid_t>(who.pid),
                                                           who.start_time);
                                   }),
                    processes.end());
    const auto now = std::chrono::steady_clock::now();
    const bool progress = processes.size() < before;
    if (progress) {
      until = now + patience;  // progress: the patience starts again
    }
    if (at_most) {
      until = std::min(until, *at_most);
    }
    if (processes.empty() || now >= until) {
      return processes;
    }
    // The dying need the CPU to finish exiting; while none dies, the rounds
    // slow to the idle pace (a drain's grace: the signalled act on it, or
    // not, in their own time).
    pause_after_round(round_started, progress ? k_least_pause : k_idle_pause);
  }
}

namespace {

// SIGKILL to `pid` if, pinned by a pidfd, it is (still) inside the subtree
// `relative` (its path below the cgroup2 mount): a pid listed from
// cgroup.procs may have gone to another process since.
void kill_if_inside(pid_t pid, const std::string& relative) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  auto where = pidfd ? process_cgroup(pid) : std::nullopt;
  if (where && cgroup_within(*where, relative)) {
    pidfd_signal(pidfd.get(), SIGKILL);
  }
}

// cgroup.kill signals each process through its leader thread (seen on
// kernel 6.18): a process whose leader has exited (pthread_exit) while its
// other threads run is not reached, and the leaf never empties. Once the
// leaf has had a moment to empty, each such process left in it is killed by
// pidfd, which reaches the whole thread group.
Result<void> kill_leaderless(const std::string& path) {
  if (wait_cgroup_empty(path, std::chrono::milliseconds(50))) {
    return {};
  }
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  const std::string relative = cgroup_relative(*mount, path);
  for (pid_t pid : cgroup_pids(path)) {
    if (auto stat = read_proc_stat(pid); stat && stat->leader_exited) {
      kill_if_inside(pid, relative);
    }
  }
  return {};
}

}  // namespace

Result<void> remove_cgroup_tree(const std::string& path) {
  // The common leaf has no cgroup beneath it: one rmdir, no listing. A
  // cgroup with children refuses (EBUSY): they go first, deepest first.
  if (::rmdir(path.c_str()) == 0 || errno == ENOENT) {
    return {};
  }
  std::vector<std::string> children;
  child_cgroups(path, children);
  for (const auto& child : children) {
    TG_TRY(remove_cgroup_tree(child));
  }
  if (::rmdir(path.c_str()) != 0 && errno != ENOENT) {
    return fail(errno_error(errno, fmt::format("rmdir {}", path)));
  }
  return {};
}

Result<void> kill_cgroup(const std::string& path) {
  const std::string kill_file = path + "/cgroup.kill";
  if (::access(kill_file.c_str(), F_OK) == 0) {
    // The whole subtree at once, forks in flight included.
    TG_TRY(write_cgroup_file(kill_file, "1"));
    return kill_leaderless(path);
  }
  return kill_cgroup_by_freezing(path);
}

Result<void> freeze_cgroup(const std::string& path) {
  TG_TRY(write_cgroup_file(path + "/cgroup.freeze", "1"));
  UniqueFd events(::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  for (int waited = 0; waited < 100; ++waited) {
    auto text = read_cgroup_file(path + "/cgroup.events");
    if (!text || text->find("frozen 1") != std::string::npos) {
      break;
    }
    // POLLPRI fires when "frozen" changes; 10 ms at most between looks.
    char buffer[128];
    (void)::pread(events.get(), buffer, sizeof buffer, 0);
    struct pollfd fd = {events.get(), POLLPRI, 0};
    ::poll(&fd, 1, 10);
  }
  return {};
}

Result<void> kill_cgroup_by_freezing(const std::string& path) {
  // Freeze, so nothing forks while we enumerate, kill each, thaw so that
  // the killed can die, and give them a moment to; again until empty.
  const std::string freeze = path + "/cgroup.freeze";
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  const std::string relative = cgroup_relative(*mount, path);
  UniqueFd events(::open((path + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  // Waits for a change of cgroup.events (frozen, populated), at most `ms`.
  auto await_events = [&](int ms) {
    char buffer[128];
    (void)::pread(events.get(), buffer, sizeof buffer, 0);
    struct pollfd fd = {events.get(), POLLPRI, 0};
    ::poll(&fd, 1, ms);
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int round = 1;; ++round) {
    auto populated = cgroup_populated(path);
    if (populated && !*populated) {
      return {};
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      return fail(plain_error(
          fmt::format("{} kept members after {} freeze-and-kill rounds in 10s", path, round - 1)));
    }
    TG_TRY(freeze_cgroup(path));
    for (pid_t pid : cgroup_pids(path)) {
      kill_if_inside(pid, relative);
    }
    TG_TRY(write_cgroup_file(freeze, "0"));
    // The killed die once thawed; "populated 0" wakes us as soon as they have.
    await_events(50);
  }
}

}  // namespace treeguard::platform
