// The record-facing side of the one takedown engine (run_processes.hpp):
// what the guardian, `sweep` and the dispatch gate do with a run known only
// from its record, after its controller is gone.
#include "port/takedown.hpp"

#include "gate.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/graceful_stop.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_set>
#include <utility>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

namespace treeguard {

namespace {

// A process found alive, named as records and authority entries name it.
MemberInfo identified(const platform::ProcStat& stat) {
  MemberInfo member;
  member.pid = stat.pid;
  member.start_time = stat.start_time;
  return member;
}

// The processes in the cgroup `path` and below it now, identified.
std::vector<MemberInfo> cgroup_members(const std::string& path) {
  std::vector<MemberInfo> out;
  for (pid_t pid : platform::cgroup_pids(path)) {
    if (auto stat = platform::read_proc_stat(pid)) {
      out.push_back(identified(*stat));
    }
  }
  return out;
}

// The record's claim: its members, the groups and sessions they made, its
// marker; never the run's own helpers nor the process asking.
Claim claim_of(const RunRecord& record) {
  Claim claim;
  claim.run_id = record.run_id;
  claim.members = record.members;
  claim.helpers.push_back(record.controller);
  if (record.guardian) {
    claim.helpers.push_back(*record.guardian);
  }
  claim.helpers.push_back(current_process_identity());
  // Nothing of the run can be older than its controller.
  claim.not_before = record.controller.start_time;
  if (record.reaper) {
    claim.reapers.push_back(*record.reaper);
  }
  claim.last_look = record.last_look;
  return claim;
}

// Whether the recorded group is one the run made: its id is a member's pid
// (COMMAND led it). With a controlling terminal, COMMAND stays in the
// caller's job group, which the shell made and shares with what it started
// beside treeguard (a pipeline's other commands): the run never owned that
// group, and nothing in it is the run's for being there.
bool run_made_group(const RunRecord& record) {
  return std::any_of(record.members.begin(), record.members.end(),
                     [&](const MemberInfo& member) { return member.pid == *record.boundary.pgid; });
}

// Live processes of the recorded process group that the claim does not
// cover, where the run made that group: COMMAND's group may be another's
// now (its id was free once every member in it died), or hold an escapee
// no walk recorded. Cannot tell.
std::size_t unclaimed_in_recorded_group(const RunRecord& record, const platform::Census& census) {
  if (!record.boundary.pgid || !run_made_group(record)) {
    return 0;
  }
  std::unordered_set<long> owned;
  for (const auto& known : census.owned) {
    owned.insert(known.pid);  // the census saw each pid once, with its start time
  }
  std::size_t count = 0;
  for (const auto& process : census.seen) {
    if (process.pgid == *record.boundary.pgid && process.start_time >= record.controller.start_time
        && owned.count(process.pid) == 0) {
      ++count;
    }
  }
  return count;
}

// The process-group verdict: proven empty, holding the run's processes, or
// not provable (with why).
std::optional<bool> judge_group(const RunRecord& record, std::string* why_not,
                                std::vector<MemberInfo>* alive) {
  const auto census = platform::take_census(claim_of(record));
  if (alive != nullptr) {
    alive->clear();
    for (const auto& process : census.owned) {
      alive->push_back(identified(process));
    }
  }
  if (!census.owned.empty()) {
    if (why_not != nullptr) {
      *why_not = fmt::format("{} process(es) of the run alive", census.owned.size());
    }
    return false;
  }
  if (!census.unknowable.empty()) {
    if (why_not != nullptr) {
      *why_not = fmt::format(
          "{} process(es) of this user started after the run cannot be inspected (not dumpable, "
          "e.g. pid {}): the run's fate cannot be proven from here",
          census.unknowable.size(), census.unknowable.front().pid);
    }
    return std::nullopt;
  }
  if (record.members.empty()
      && (record.boundary.pgid || record.boundary.address != k_pgid_pending)) {
    if (why_not != nullptr) {
      *why_not = "the record names a process group but no member";
    }
    return std::nullopt;  // a group but no member: nothing proves what ran
  }
  if (auto unclaimed = unclaimed_in_recorded_group(record, census); unclaimed > 0) {
    if (why_not != nullptr) {
      *why_not = fmt::format("{} process(es) in COMMAND's group {} that the record does not "
                             "name (its group id may be another's now)",
                             unclaimed, *record.boundary.pgid);
    }
    return std::nullopt;
  }
  // Killed before COMMAND was spawned ("pgid pending", no member, nothing
  // carrying the run's marker), or every process of the run is gone.
  return true;
}

// Who a delivery of the drain's signal reached, or why it stopped.
Result<std::vector<ProcessIdentity>> reached(const platform::Delivered& delivered) {
  if (delivered.error) {
    return fail(*delivered.error);
  }
  std::vector<ProcessIdentity> out;
  for (const auto& stat : delivered.reached) {
    out.push_back(ProcessIdentity{stat.pid, stat.start_time});
  }
  return out;
}

// Says why, where the caller asked.
void note(std::string* why_not, std::string why) {
  if (why_not != nullptr) {
    *why_not = std::move(why);
  }
}

// The process-group kill: freeze, then kill, what the record's claim
// covers; then wait for the killed and judge again.
Result<bool> kill_group(const RunRecord& record, std::chrono::milliseconds patience,
                        std::string* why_not, const std::vector<MemberInfo>* alive) {
  // Freeze, then kill, what the record's claim covers now. A process once
  // claimed stays claimed for the rest of the takedown (it joins the claim
  // as a member): killing the members that vouch for a group must not
  // release the rest of the group.
  Claim claim = claim_of(record);
  Membership claimed;
  for (const auto& member : claim.members) {
    claimed.remember(member);
  }
  // The first round stops what the judgement before the authority found
  // alive (shown running, so that a census follows it); each later round
  // takes a census of the host.
  bool judged = alive != nullptr;
  auto enumerate = [&] {
    if (std::exchange(judged, false)) {
      std::vector<platform::ProcStat> found;
      for (const auto& process : *alive) {
        platform::ProcStat stat;
        stat.pid = static_cast<pid_t>(process.pid);
        stat.start_time = process.start_time;
        stat.state = 'R';
        claimed.remember(process);
        found.push_back(stat);
      }
      return found;
    }
    claim.members = claimed.all();
    auto census = platform::take_census(claim);
    // Identities only: the kill path reads /proc/PID/stat and no
    // arguments (nothing here names anyone, and each round would read them
    // again for every member the record kept without them).
    for (const auto& stat : census.owned) {
      claimed.remember(platform::sighting(stat, CommandGroup{}));
    }
    return census.owned;
  };
  auto killed = platform::freeze_and_kill(enumerate, patience);
  // The killed are dying: wait for them (their own /proc entries only) as
  // long as they keep dying; then the verdict, by the one rule the gate
  // uses too, looks at the whole host once more.
  std::vector<ProcessIdentity> dying(claimed.all().begin(), claimed.all().end());
  platform::await_deaths(std::move(dying), patience);
  RunRecord after = record;
  after.members = claimed.all();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  for (;;) {
    auto empty = judge_group(after, why_not, nullptr);
    if (empty == true) {
      return true;
    }
    if (!empty.has_value() || std::chrono::steady_clock::now() >= until) {
      if (!killed) {
        return fail(killed.error());
      }
      return false;
    }
    struct timespec pause = {0, 5'000'000};
    ::nanosleep(&pause, nullptr);
  }
}

// A cgroup leaf: refused unless it is one this tool made for the run (a
// treeguard-<run_id> leaf in the v2 hierarchy); judged by "populated",
// killed by THE cgroup kill.
class CgroupRecord final : public RecordedBoundary {
public:
  explicit CgroupRecord(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override {
    auto mount = platform::cgroup2_mount();
    if (!mount) {
      return fail(mount.error());
    }
    const std::string& path = m_record.boundary.address;
    const std::string leaf = "treeguard-" + m_record.run_id;
    if (path.rfind(*mount + "/", 0) != 0 || path.find("/../") != std::string::npos
        || path.size() < leaf.size() + 1
        || path.compare(path.size() - leaf.size() - 1, std::string::npos, "/" + leaf) != 0) {
      return fail(plain_error(
          fmt::format("record names cgroup {}, which is not a treeguard leaf for run {} under {}",
                      path, m_record.run_id, *mount)));
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

  std::optional<bool> empty(std::string* why_not, std::vector<MemberInfo>* alive) const override {
    if (auto valid = check(); !valid) {
      note(why_not, valid.error().message());
      return std::nullopt;
    }
    auto populated = platform::cgroup_populated(m_record.boundary.address);
    if (!populated) {
      note(why_not, populated.error().message());
      return std::nullopt;
    }
    if (alive != nullptr) {
      *alive = *populated ? cgroup_members(m_record.boundary.address) : std::vector<MemberInfo>{};
    }
    return !*populated;
  }

  Result<bool> kill(Duration verify_for, std::string* why_not,
                    const std::vector<MemberInfo>* /*alive: the leaf says*/) const override {
    TG_TRY(check());
    const std::string& path = m_record.boundary.address;
    if (auto populated = platform::cgroup_populated(path); populated && !*populated) {
      return true;
    }
    TG_TRY(platform::kill_cgroup(path));
    const bool empty = platform::wait_cgroup_empty(
        path, std::chrono::duration_cast<std::chrono::milliseconds>(verify_for));
    if (!empty) {
      note(why_not, fmt::format("{} still populated after the kill", path));
    }
    return empty;
  }

  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal signal) const override {
    TG_TRY(check());
    return reached(platform::signal_cgroup(m_record.boundary.address, signal_number(signal)));
  }

  void await_drained(const std::vector<ProcessIdentity>& /*signalled: the leaf says*/,
                     std::chrono::steady_clock::time_point until) const override {
    if (check()) {
      const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      platform::wait_cgroup_empty(m_record.boundary.address, grace, until);
    }
  }

  std::string force_method() const override { return "cgroup.kill"; }

  Result<void> remove() const override {
    TG_TRY(check());
    // With the leaves of nested runs in it, if any.
    return platform::remove_cgroup_tree(m_record.boundary.address);
  }
};

// A process group: what the record's claim covers (claim_of()), judged by
// a census of the host and killed by the one freeze-then-kill.
class ProcessGroupRecord final : public RecordedBoundary {
public:
  explicit ProcessGroupRecord(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override { return {}; }

  std::optional<bool> empty(std::string* why_not, std::vector<MemberInfo>* alive) const override {
    return judge_group(m_record, why_not, alive);
  }

  Result<bool> kill(Duration verify_for, std::string* why_not,
                    const std::vector<MemberInfo>* alive) const override {
    return kill_group(m_record, std::chrono::duration_cast<std::chrono::milliseconds>(verify_for),
                      why_not, alive);
  }

  // What the record's claim covers now, by the census, round after round.
  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal signal) const override {
    const Claim claim = claim_of(m_record);
    return reached(platform::signal_each([&] { return platform::take_census(claim).owned; },
                                         signal_number(signal)));
  }

  void await_drained(const std::vector<ProcessIdentity>& signalled,
                     std::chrono::steady_clock::time_point until) const override {
    const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    platform::await_deaths(signalled, grace, until);
  }

  std::string force_method() const override { return "SIGKILL"; }

  Result<void> remove() const override { return {}; }

  std::vector<MemberInfo> left_alone() const override {
    std::vector<MemberInfo> out;
    for (const auto& process : platform::take_census(claim_of(m_record)).left_alone) {
      out.push_back(platform::sighting(process, CommandGroup{}));
    }
    return out;
  }
};

// A pid namespace lives about as long as its controller: when it dies, the
// init drains the namespace (the run's signal, its grace) and exits, and
// the kernel kills the rest. Nothing is ever signalled or killed by a pid
// namespace's record; a live controller ends its own run.
class PidNamespaceRecord final : public RecordedBoundary {
public:
  explicit PidNamespaceRecord(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override { return {}; }

  std::optional<bool> empty(std::string* why_not, std::vector<MemberInfo>* alive) const override {
    if (alive != nullptr) {
      alive->clear();  // its members are not named from here: the controller's run
    }
    if (platform::process_alive(static_cast<pid_t>(m_record.controller.pid),
                                m_record.controller.start_time)) {
      note(why_not, "its controller is alive");
      return false;
    }
    return true;
  }

  // Gone with its controller; never a kill by record.
  Result<bool> kill(Duration /*verify_for*/, std::string* why_not,
                    const std::vector<MemberInfo>* /*alive*/) const override {
    return empty(why_not, nullptr) == true;
  }

  // Its init drains it when the controller dies: nothing is sent from here.
  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal /*signal*/) const override {
    return std::vector<ProcessIdentity>{};
  }

  void await_drained(const std::vector<ProcessIdentity>& /*signalled*/,
                     std::chrono::steady_clock::time_point /*until*/) const override {}

  std::string force_method() const override { return "SIGKILL (the namespace's init)"; }

  Result<void> remove() const override { return {}; }
};

// A kind this platform never forms (a Windows job): never acted on here.
class ForeignRecord final : public RecordedBoundary {
public:
  explicit ForeignRecord(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override {
    return fail(plain_error("a job boundary cannot be acted on here"));
  }

  std::optional<bool> empty(std::string* why_not,
                            std::vector<MemberInfo>* /*alive*/) const override {
    note(why_not, check().error().message());
    return std::nullopt;
  }

  Result<bool> kill(Duration /*verify_for*/, std::string* /*why_not*/,
                    const std::vector<MemberInfo>* /*alive*/) const override {
    return fail(check().error());
  }

  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal /*signal*/) const override {
    return fail(check().error());
  }

  void await_drained(const std::vector<ProcessIdentity>& /*signalled*/,
                     std::chrono::steady_clock::time_point /*until*/) const override {}

  std::string force_method() const override { return "SIGKILL"; }

  Result<void> remove() const override { return {}; }
};

}  // namespace

std::unique_ptr<RecordedBoundary> recorded_boundary(const RunRecord& record) {
  switch (record.boundary.kind) {
  case BoundaryKind::cgroup:
    return std::make_unique<CgroupRecord>(record);
  case BoundaryKind::process_group:
    return std::make_unique<ProcessGroupRecord>(record);
  case BoundaryKind::pid_namespace:
    return std::make_unique<PidNamespaceRecord>(record);
  case BoundaryKind::job:
    break;
  }
  return std::make_unique<ForeignRecord>(record);
}

Disposition settled_disposition(const RunRecord& record, bool proven) {
  if (proven) {
    return Disposition::pass;
  }
  return recorded_boundary(record)->empty() == false ? Disposition::failed : Disposition::ambiguous;
}

ProcessIdentity current_process_identity() {
  auto stat = platform::read_proc_stat(::getpid());
  return ProcessIdentity{static_cast<long>(::getpid()), stat ? stat->start_time : 0};
}

}  // namespace treeguard
