// The run's processes, judged from a table of the host's processes: the
// rules of DESIGN.md [membership], [escapes] and [ownership], written once
// for every platform. A platform gives the table (Linux: /proc, in
// platform/linux/run_processes.cpp; a unit test: rows it writes); these
// rules decide what of it the run owns. The controller's boundaries, the
// guardian, `sweep` and the gate all judge by them.
//
// What the run owns, without the boundary's own word ([ownership]):
//   - a process whose identity (pid + start time) was seen as a member;
//   - a process in a group or session that a member was SEEN to create (it
//     was its leader), while that group or session is still vouched for:
//     its leader, or another recorded member, is alive in it. A group or
//     session id that merely equals a dead member's pid is not the run's:
//     the pid may since have gone to a stranger who made a session of it;
//   - a live process whose parent is the run's (descent);
//   - a process whose environment carries the run's marker (TREEGUARD_RUNS)
//     and whose ancestry is lost: its parent is a reaper (PID 1 or the run's
//     recorded reaper) that took it in as an orphan, or is gone. A copy of
//     the marker under a live parent that is neither the run's nor a reaper
//     (a job atd started, a stranger's process) is someone else's; its
//     environment is not even read. Nothing older than the run is its, nor
//     anything started before the last look at the run's tree that the look
//     did not find in it (an orphaned stranger). Where nobody looked (sweep,
//     the gate), a marked orphan of another user than the one judging is
//     left alone: nothing tells it from a stranger's.
// treeguard's own helpers (the controller, the guardian, the caller) are
// never the run's.
#pragma once

#include "identity.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// What a process table says of one process, as it was when the table was
// read.
struct ProcessFacts {
  long pid = 0;
  // When it started, as identities count it ([identity]): a later process
  // never has an earlier start time, and two may share one (a parent and
  // the child it forked in the same clock tick).
  unsigned long long start_time = 0;
  long ppid = 0;  // its parent; 0 when the parent is outside what the table sees
  long pgid = 0;
  long sid = 0;
  // By the platform's one rule ([liveness]): the process is alive until
  // its whole thread group is gone; a leader that called pthread_exit
  // while its threads run is alive.
  bool alive = false;
};

// What a process's environment says of the run's marker: it names the run
// (present), does not (absent), or cannot be read (another user's process,
// or one that is not dumpable: a set-id program, ssh-agent).
enum class Marker { present, absent, unreadable };

// A snapshot of the host's processes, as a platform reads it. Rows are
// numbered 0..size()-1; the rules ask for a row's environment and user only
// when they need them (reading an environment may wait on the process).
class ProcessTable {
public:
  virtual ~ProcessTable() = default;
  virtual std::size_t size() const = 0;
  virtual ProcessFacts facts(std::size_t row) const = 0;
  // Whether the row's environment names `run_id` in k_run_marker.
  virtual Marker marker(std::size_t row, const std::string& run_id) const = 0;
  // The row's real user id; nullopt when it cannot be known (it is gone).
  virtual std::optional<long> user(std::size_t row) const = 0;
};

// Who looks: the process taking the census (never the run's) and its user
// (a process of that user whose marker cannot be read cannot be told
// either way, unless the user is root, who could read it).
struct Viewer {
  long pid = 0;
  long uid = 0;
};

// COMMAND's own process group and session: a member seen outside them has
// left them (MemberInfo::left_group, [escapes]). Unknown (-1) where the
// observer cannot know them. 0 is a real answer: in a pid namespace whose
// session (or group) leader lives outside it, the id shows as 0, and a
// setsid'd child (its own pid as session id) has left all the same.
struct CommandGroup {
  long pgid = -1;
  long sid = -1;
};

// Whether `who` is one of `identities` (a helper, a reaper).
bool among(const ProcessIdentity& who, const std::vector<ProcessIdentity>& identities);

// What a sighting of `process` says about it as a member: its identity, and
// whether it has left COMMAND's group or session and leads a group or
// session of its own. Unnamed: the caller names it.
MemberInfo sighting(const ProcessFacts& process, const CommandGroup& command);

// What a run owns, known from its record (after the controller is gone) or
// from the live boundary.
struct Claim {
  std::string run_id;                    // the marker to look for
  std::vector<MemberInfo> members;       // seen by identity
  std::vector<ProcessIdentity> helpers;  // never the run's
  // Processes that started before this (as start times count) cannot be the
  // run's: the run did not exist yet.
  unsigned long long not_before = 0;
  // Where the run's orphans went once the controller was gone (besides
  // PID 1): a process carrying the marker is judged by it only as one of
  // their children (RunRecord::reaper).
  std::vector<ProcessIdentity> reapers;
  // When the run's tree was last looked at while its controller lived (the
  // guardian walks it), as start times count; absent where nobody looked.
  // Every process of the run alive then was in the tree (the controller is
  // its subreaper) and seen as a member: one started before the look that
  // is not a member was outside the run, and is a stranger whatever its
  // environment says. Only what started from the look's clock tick on may
  // be claimed by the marker.
  std::optional<unsigned long long> last_look;
};

// The table's rows the claim covers, each list oldest first.
struct CensusRows {
  std::vector<std::size_t> owned;
  // Rows that may be the run's but cannot be told: started after the run,
  // of the viewer's user (not root), and their environment is unreadable.
  // An after-death takedown that has any of these proves nothing.
  std::vector<std::size_t> unknowable;
  // Rows carrying the run's marker, with their ancestry lost, that are not
  // claimed because nobody looked at the run's tree before (no last_look)
  // and they are another user's than the viewer's: a stranger's orphan
  // carrying a copy of the marker (an `at` job's daemon) cannot be told
  // from the run's. Whoever judges says it left them alone.
  std::vector<std::size_t> left_alone;
  // Every live row looked at, but the helpers and the viewer.
  std::vector<std::size_t> seen;
};

// Judge every row of `table` against `claim`.
CensusRows judge_census(const Claim& claim, const ProcessTable& table, const Viewer& viewer);

}  // namespace treeguard
