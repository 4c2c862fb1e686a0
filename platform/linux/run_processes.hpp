// The one takedown engine of Linux. The controller's boundaries, the
// guardian and `sweep` all find, stop and kill a run's processes here, by
// the one definition of what the run owns (census.hpp, judged over /proc
// here), and for a cgroup boundary: every process in the leaf and below
// it.
#pragma once

#include "census.hpp"
#include "identity.hpp"
#include "linux/proc.hpp"
#include "record.hpp"
#include "result.hpp"

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace treeguard::platform {

// What a sighting of `stat` says about it as a member (census.hpp's
// sighting()), named by comm.
MemberInfo sighting(const ProcStat& stat, const CommandGroup& command);

// Remember the sighting of `stat` in `members`; a process not yet named by
// its arguments is named by them (/proc/PID/cmdline, cut) at the first
// sighting where they can be read without waiting (arguments_readable()).
const MemberInfo& remember_sighting(Membership& members, const ProcStat& stat,
                                    const CommandGroup& command, bool* added = nullptr);

// `members` named as they are now: a process that exec'd since it was first
// seen ("sh" that became "sleep") by its current comm and arguments (where
// they can be read without waiting, else by comm alone when it changed); one
// that is gone, or whose pid is
// another process's now, keeps the name it had. For what is said of
// processes that live on (handed over), where the name a person looks for
// is the current one; the record's members keep their first names.
void name_as_now(std::vector<MemberInfo>& members);

// How soon a walk of a growing tree may follow the last one, which took
// `took`: never sooner than four walks' time (nor than `floor`), so that a
// walker at real-time priority (the controller, the guardian) takes at most
// a fifth of a core from a big tree while it grows.
std::chrono::milliseconds soonest_walk(std::chrono::milliseconds took,
                                       std::chrono::milliseconds floor);

// Remember `alive`, the run's live processes as one look found them (a walk
// of its tree, a cgroup leaf's listing), in `members` (identity and
// monotonic flags). `grew` is set when a new member appeared. THE bound on
// what a boundary remembers: a long run's churn costs no memory once its
// processes are gone: whenever the members outnumber the first
// `keep_first` and twice the live ones by k_forget_batch, those
// forget_dead() picks are forgotten.
inline constexpr std::size_t k_forget_batch = 256;
void remember_all(const std::vector<ProcStat>& alive, const CommandGroup& command,
                  Membership& members, bool* grew = nullptr,
                  std::size_t keep_first = k_max_recorded_members);

// THE member walk of a process tree: every live descendant of `root` now
// (zombies are dead), except the helpers named, remembered by
// remember_all() (bounded as it says).
std::vector<ProcStat> walk_members(pid_t root, const CommandGroup& command, Membership& members,
                                   const std::vector<ProcessIdentity>& helpers = {},
                                   bool* grew = nullptr,
                                   std::size_t keep_first = k_max_recorded_members);

// Forget the members nothing needs any more: beyond the first `keep_first`
// seen (what a record keeps of them, k_max_recorded_members: the evidence),
// every member proven dead (process_alive(), the one rule; `alive` is a
// walk just made) unless it led a group or session in which a member is
// alive now (it vouches for that group or session: Claim). A dead
// identity is never alive again, so this makes no process owned or
// unowned; and a record never names more than its first members.
void forget_dead(Membership& members, const std::vector<ProcStat>& alive, std::size_t keep_first);

// The run's live processes on this host now.
struct Census {
  std::vector<ProcStat> owned;
  // Processes that may be the run's but cannot be told: started after the
  // run, of this user, and their environment is unreadable (not dumpable).
  // An after-death takedown that has any of these proves nothing.
  std::vector<ProcStat> unknowable;
  // Processes carrying the run's marker that the census leaves alone:
  // another user's orphans, where nobody looked at the run's tree before.
  std::vector<ProcStat> left_alone;
  // Every live process the census looked at (the host, once).
  std::vector<ProcStat> seen;
};

// Judge every process of the host (/proc now) against `claim`, by
// judge_census(), as this process and its real user.
Census take_census(const Claim& claim);

// Freeze, then kill: SIGSTOP every process `enumerate` yields, in rounds,
// until a round finds no process that can still fork (one neither stopped
// nor in uninterruptible sleep: a stopped process cannot fork, so the
// population cannot outgrow the walk); then SIGKILL each once and CONT it
// (a stopped process dies of SIGKILL without it, but be sure): first every
// process the freeze stopped, even one no later walk would find (children
// before their parents: when all are held, each big level of the frozen
// tree is let die before its parents are killed, so that the dead stay
// their parents' zombies and never burden a reaper as orphans), then in
// rounds of walks until one finds no one new. Rounds pause at least as long
// as they took (this runs at real-time priority). Every signal goes through
// a pidfd opened for the identity seen, so a recycled pid is never
// signalled; a stopped process keeps the one it was stopped through for its
// kill (while descriptors last: RLIMIT_NOFILE is raised to its hard limit
// meanwhile). Gives up after `limit`. Returns the number of processes sent
// SIGKILL; whether they have died yet is the caller's to verify.
using Enumerate = std::function<std::vector<ProcStat>()>;
Result<std::size_t> freeze_and_kill(const Enumerate& enumerate, std::chrono::milliseconds limit);

// THE cgroup kill: cgroup.kill where the kernel has it (5.14+), else freeze
// the subtree (cgroup.freeze), SIGKILL every process in it, thaw, repeated
// until it is empty. `path` must be a leaf this tool created: callers check.
Result<void> kill_cgroup(const std::string& path);

// rmdir `path` and, first, the cgroups below it (a nested run's leaves).
// Only rmdir: a cgroup with members stays, and the call fails. A cgroup
// already gone (the nested run removed its own leaf meanwhile) is fine.
Result<void> remove_cgroup_tree(const std::string& path);

// Freeze the cgroup `path` (cgroup.freeze) and wait, up to a second, until
// the kernel says it is frozen: nothing in it runs, forks or reaps until it
// is thawed (cgroup.freeze 0) or moved out of it. A member in
// uninterruptible sleep may keep it from "frozen 1"; then it returns all
// the same.
Result<void> freeze_cgroup(const std::string& path);

// The fallback half of kill_cgroup(), callable on its own for tests.
Result<void> kill_cgroup_by_freezing(const std::string& path);

// From spawn on: run ahead of the tree. A tree that keeps every CPU
// busy (a fork bomb spinning at its pids.max) would otherwise leave the
// takedown a sliver of CPU, and the deadline would act seconds late. Where
// permitted (root), this process is made SCHED_RR priority 1 (bounded work
// only follows: walks and kill rounds with pauses); else, it lowers its nice
// value if it may. Idempotent; nothing this process forks afterwards
// inherits it unknowingly (the run forks nothing after spawn).
void take_precedence();

// Every pid in the cgroup `path` and the cgroups below it. `complete`, if
// given, is set to whether every cgroup.procs of them could be read (a
// failed read lists nothing of that cgroup: never a count to compare).
std::vector<pid_t> cgroup_pids(const std::string& path, bool* complete = nullptr);

// The cgroups directly below `dir`, appended to `out` as `dir`/NAME.
void child_cgroups(const std::string& dir, std::vector<std::string>& out);

// "populated" of `path`/cgroup.events: true, false (also: the leaf is gone),
// or an error.
Result<bool> cgroup_populated(const std::string& path);

// Wait, without spinning, until `path` is not populated, for as long as its
// population keeps falling: gives up once `patience` passes in which no
// process left it (a killed tree of thousands takes the kernel a while to
// tear down; a member stuck in uninterruptible sleep never goes), and at
// `at_most` whatever happens (a drain's grace).
bool wait_cgroup_empty(const std::string& path, std::chrono::milliseconds patience,
                       std::optional<std::chrono::steady_clock::time_point> at_most = {});

// Wait until none of `processes` is alive (process_alive(), the one rule),
// for as long as they keep dying: gives up once `patience` passes in which
// none of them died, and at `at_most` whatever happens. Reads only their
// own /proc entries, not the host's. Returns those still alive.
std::vector<ProcessIdentity>
await_deaths(std::vector<ProcessIdentity> processes, std::chrono::milliseconds patience,
             std::optional<std::chrono::steady_clock::time_point> at_most = {});

}  // namespace treeguard::platform
