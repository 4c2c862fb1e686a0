// How treeguard names a process, everywhere: pid plus start time (on Linux
// field 22 of /proc/PID/stat, clock ticks since boot), so that a recycled pid
// is never taken for the process it replaced. The controller, the guardian,
// `sweep`, the records and the reports all use these two types; nothing
// compares pids and start times by hand.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace treeguard {

// COMMAND's environment carries TREEGUARD_RUNS, the ids of the runs it is
// in (space-separated, outermost first): what the takedown after a
// controller's death claims by, and how a nested run finds the run it runs
// inside (the last id in its own environment).
inline constexpr const char* k_run_marker = "TREEGUARD_RUNS";

// TREEGUARD_RUNS as COMMAND gets it, on every platform: the list treeguard
// inherited (`inherited`, empty when it runs inside no run) with `run_id`
// last.
inline std::string runs_marker(std::string_view inherited, std::string_view run_id) {
  std::string runs(inherited);
  if (!runs.empty()) {
    runs += ' ';
  }
  return runs.append(run_id);
}

// The run a treeguard runs inside: the last id of the TREEGUARD_RUNS it
// inherited (`marker`); empty when there is none.
inline std::string innermost_run(std::string_view marker) {
  const auto blank = [](char c) {
    return c == ' ' || c == '\t' || c == '\n';
  };
  std::size_t end = marker.size();
  while (end > 0 && blank(marker[end - 1])) {
    --end;
  }
  std::size_t begin = end;
  while (begin > 0 && !blank(marker[begin - 1])) {
    --begin;
  }
  return std::string(marker.substr(begin, end - begin));
}

struct ProcessIdentity {
  long pid = 0;
  unsigned long long start_time = 0;
};

inline bool operator==(const ProcessIdentity& a, const ProcessIdentity& b) {
  return a.pid == b.pid && a.start_time == b.start_time;
}
inline bool operator!=(const ProcessIdentity& a, const ProcessIdentity& b) {
  return !(a == b);
}

// One process the boundary has owned, and what it was seen to do. Every
// flag is monotonic: once seen, never cleared (DESIGN.md [membership], [escapes]).
//  - left_group: seen outside COMMAND's process group or session (setsid,
//    setpgid). It is still the run's, inside the boundary, and taken down
//    with it: leaving a group is not escaping the boundary. (The record
//    names it "escaped", its key since the first record format.)
//  - leads_group / leads_session: seen as the leader of its own process
//    group / session, i.e. it made that group or session. Only such ids are
//    the run's: a group or session id that merely equals a member's pid may
//    belong to a stranger who got that pid after the member died.
//  - comm, argv: who it was, as first known (DESIGN.md [membership]:
//    evidence names processes): the kernel's name for it (at most k_max_comm
//    characters) and its arguments joined by spaces (at most k_max_argv),
//    both as name_text() keeps them. Either may be empty (not readable when
//    seen; a record written before names were kept).
struct MemberInfo : ProcessIdentity {
  bool left_group = false;
  bool leads_group = false;
  bool leads_session = false;
  std::string comm = {};
  std::string argv = {};
};

inline constexpr std::size_t k_max_comm = 32;  // Linux: 15 (TASK_COMM_LEN); Windows image names
inline constexpr std::size_t k_max_argv = 128;

// A process's name or arguments as evidence keeps them: bytes outside
// printable ASCII, and the two JSON escapes ('"', '\\'), become '?', so that
// the text costs in a record exactly its length and never drives a
// terminal; cut to `limit` bytes.
std::string name_text(std::string_view text, std::size_t limit);

// "sleep (pid 123)", or "pid 123" for a member whose name is not known.
std::string describe_member(const MemberInfo& member);

// The first `shown` of `members` described, then how many more: "sleep (pid
// 12), sh (pid 13) and 4 more". Bounded whatever the tree's size.
std::string describe_members(const std::vector<MemberInfo>& members, std::size_t shown = 4);

// The monotonic set of members: remember() adds a process once and only
// ever sets flags.
class Membership {
public:
  const std::vector<MemberInfo>& all() const { return m_members; }
  std::size_t size() const { return m_members.size(); }

  const MemberInfo* find(const ProcessIdentity& who) const {
    const std::size_t at = index_of(who);
    return at == npos ? nullptr : &m_members[at];
  }

  // Add `seen`, or merge its flags into the known entry. Returns the entry
  // as it now stands; `added` says whether it was new.
  const MemberInfo& remember(const MemberInfo& seen, bool* added = nullptr) {
    std::size_t at = index_of(seen);
    if (added != nullptr) {
      *added = at == npos;
    }
    if (at == npos) {
      m_members.push_back(seen);
      at = m_members.size() - 1;
      m_latest[seen.pid] = at;
      return m_members[at];
    }
    MemberInfo& known = m_members[at];
    // A name is learnt once, never changed: comm at the first sighting
    // that has it, the arguments at the first that could read them.
    if (known.comm.empty()) {
      known.comm = seen.comm;
    }
    if (known.argv.empty()) {
      known.argv = seen.argv;
    }
    known.left_group = known.left_group || seen.left_group;
    known.leads_group = known.leads_group || seen.leads_group;
    known.leads_session = known.leads_session || seen.leads_session;
    return known;
  }

private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // Trees of many thousands are scanned again and again: look a pid up by
  // index (the latest entry with that pid), and only when its start time
  // differs (a recycled pid) search the older entries.
  std::size_t index_of(const ProcessIdentity& who) const {
    auto latest = m_latest.find(who.pid);
    if (latest == m_latest.end()) {
      return npos;
    }
    if (m_members[latest->second] == who) {
      return latest->second;
    }
    for (std::size_t i = 0; i < latest->second; ++i) {
      if (m_members[i] == who) {
        return i;
      }
    }
    return npos;
  }

  std::vector<MemberInfo> m_members;
  std::unordered_map<long, std::size_t> m_latest;
};

}  // namespace treeguard
