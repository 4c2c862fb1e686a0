#include "census.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace treeguard {

bool among(const ProcessIdentity& who, const std::vector<ProcessIdentity>& identities) {
  return std::find(identities.begin(), identities.end(), who) != identities.end();
}

MemberInfo sighting(const ProcessFacts& process, const CommandGroup& command) {
  MemberInfo member;
  member.pid = process.pid;
  member.start_time = process.start_time;
  member.left_group =
      command.sid >= 0 && (process.sid != command.sid || process.pgid != command.pgid);
  member.leads_session = process.sid == process.pid;
  member.leads_group = process.pgid == process.pid || member.leads_session;
  return member;
}

namespace {

// One census: the table read once, the claim's groups and sessions found,
// then every row judged, oldest first.
class Judge {
public:
  Judge(const Claim& claim, const ProcessTable& table, const Viewer& viewer)
      : m_claim(claim), m_table(table), m_viewer(viewer) {
    m_rows.reserve(table.size());
    for (std::size_t row = 0; row < table.size(); ++row) {
      m_rows.push_back(table.facts(row));
    }
    for (const auto& member : claim.members) {
      m_by_pid[member.pid] = &member;
    }
    for (const auto& process : m_rows) {
      if (process.alive) {
        m_live_start[process.pid] = process.start_time;
      }
    }
    find_vouched();
  }

  CensusRows judge();

private:
  std::vector<std::size_t> parents_first() const;
  const MemberInfo* recorded(const ProcessFacts& process) const {
    auto at = m_by_pid.find(process.pid);
    return at != m_by_pid.end() && at->second->start_time == process.start_time ? at->second
                                                                                : nullptr;
  }
  void find_vouched();
  bool descends(const ProcessFacts& process) const;
  bool ancestry_lost(const ProcessFacts& process) const;
  bool is_helper(const ProcessFacts& process) const {
    return among(ProcessIdentity{process.pid, process.start_time}, m_claim.helpers);
  }
  void judge_by_marker(std::size_t row, CensusRows& census);
  void own(std::size_t row, CensusRows& census) {
    census.owned.push_back(row);
    m_owned_start[m_rows[row].pid] = m_rows[row].start_time;
  }

  const Claim& m_claim;
  const ProcessTable& m_table;
  const Viewer m_viewer;
  std::vector<ProcessFacts> m_rows;
  std::unordered_map<long, const MemberInfo*> m_by_pid;
  std::unordered_map<long, unsigned long long> m_live_start;
  std::unordered_map<long, unsigned long long> m_owned_start;
  std::unordered_set<long> m_groups;
  std::unordered_set<long> m_sessions;
};

// Groups and sessions a member was seen to make, while vouched for: a
// recorded member (the leader or another) is alive in it now. While any
// process is in a group or session, its id cannot be handed to a new
// process, so a vouched id is still the one the member made.
void Judge::find_vouched() {
  std::unordered_set<long> alive_in_group;
  std::unordered_set<long> alive_in_session;
  for (const auto& process : m_rows) {
    if (process.alive && recorded(process) != nullptr) {
      alive_in_group.insert(process.pgid);
      alive_in_session.insert(process.sid);
    }
  }
  for (const auto& member : m_claim.members) {
    if (member.leads_group && alive_in_group.count(member.pid) != 0) {
      m_groups.insert(member.pid);
    }
    if (member.leads_session && alive_in_session.count(member.pid) != 0) {
      m_sessions.insert(member.pid);
    }
  }
}

// Descent: a live process whose parent is owned was started by it, so it
// is the run's too, whatever its group, session or environment (a parent
// is never younger than its child; a reaper that is owned only ever adopts
// its own descendants). It needs no marker read, which waits on the
// memory-map lock of a process that is forking.
bool Judge::descends(const ProcessFacts& process) const {
  auto parent = m_owned_start.find(process.ppid);
  return parent != m_owned_start.end() && parent->second <= process.start_time;
}

// Lost ancestry: a process whose parent took it in as an orphan (PID 1, a
// recorded reaper) or is gone. Only such a process may be claimed by the
// run's marker alone: under any other live parent that is not the run's,
// it was started by someone else, whatever its environment says.
bool Judge::ancestry_lost(const ProcessFacts& process) const {
  if (process.ppid <= 1) {
    return true;  // PID 1, or a parent outside this namespace
  }
  auto parent = m_live_start.find(process.ppid);
  if (parent == m_live_start.end() || parent->second > process.start_time) {
    return true;  // the parent is gone (the pid is another's now)
  }
  return among(ProcessIdentity{process.ppid, parent->second}, m_claim.reapers);
}

// A row nothing else claims, whose ancestry is lost: the run's if its
// environment carries the marker, unless nobody looked at the run's tree
// and it is another user's (left alone).
void Judge::judge_by_marker(std::size_t row, CensusRows& census) {
  switch (m_table.marker(row, m_claim.run_id)) {
  case Marker::present:
    if (m_claim.last_look) {
      own(row, census);  // started since the last look: the marker may claim it
    } else if (auto owner = m_table.user(row); owner && *owner == m_viewer.uid) {
      own(row, census);
    } else if (owner) {
      census.left_alone.push_back(row);  // nobody looked: another user's cannot be told
    }
    break;
  case Marker::unreadable:
    // Not dumpable (a set-id program, ssh-agent) or another user's. Ours
    // only if it is this user's: then it cannot be told either way.
    if (auto owner = m_table.user(row); owner && *owner == m_viewer.uid && m_viewer.uid != 0) {
      census.unknowable.push_back(row);
    }
    break;
  case Marker::absent:
    break;
  }
}

// The rows oldest first, and within one clock tick every parent before its
// children: a parent is judged before its children (descent), also when
// both started in one tick and the child's pid is the lower (the pids
// wrapped around between them).
std::vector<std::size_t> Judge::parents_first() const {
  std::vector<std::size_t> by_age(m_rows.size());
  std::iota(by_age.begin(), by_age.end(), std::size_t{0});
  std::stable_sort(by_age.begin(), by_age.end(), [&](std::size_t a, std::size_t b) {
    return m_rows[a].start_time < m_rows[b].start_time;
  });
  std::vector<std::size_t> order;
  order.reserve(by_age.size());
  std::vector<bool> placed(m_rows.size(), false);
  std::unordered_map<long, std::size_t> in_tick;  // pid -> row, of the tick at hand
  std::vector<std::size_t> chain;
  for (std::size_t first = 0; first < by_age.size();) {
    const unsigned long long tick = m_rows[by_age[first]].start_time;
    std::size_t end = first;
    in_tick.clear();
    for (; end < by_age.size() && m_rows[by_age[end]].start_time == tick; ++end) {
      in_tick[m_rows[by_age[end]].pid] = by_age[end];
    }
    for (std::size_t at = first; at < end; ++at) {
      // Up the parents of this tick not placed yet; then placed from the top.
      chain.clear();
      for (auto row = by_age[at]; !placed[row];) {
        placed[row] = true;
        chain.push_back(row);
        auto parent = in_tick.find(m_rows[row].ppid);
        if (parent == in_tick.end()) {
          break;
        }
        row = parent->second;
      }
      order.insert(order.end(), chain.rbegin(), chain.rend());
    }
    first = end;
  }
  return order;
}

CensusRows Judge::judge() {
  CensusRows census;
  for (const std::size_t row : parents_first()) {
    const ProcessFacts& process = m_rows[row];
    if (!process.alive || process.pid == m_viewer.pid || is_helper(process)) {
      continue;
    }
    census.seen.push_back(row);
    if (recorded(process) != nullptr || m_groups.count(process.pgid) != 0
        || m_sessions.count(process.sid) != 0 || descends(process)) {
      own(row, census);
      continue;
    }
    if (process.start_time < m_claim.not_before || m_claim.run_id.empty()) {
      continue;  // older than the run: not the run's, whatever it carries
    }
    if (m_claim.last_look && process.start_time < *m_claim.last_look) {
      continue;  // outside the run at the last look: a stranger, whatever it carries
    }
    if (!ancestry_lost(process)) {
      continue;  // a live parent that is someone else's: so is this one
    }
    judge_by_marker(row, census);
  }
  return census;
}

}  // namespace

CensusRows judge_census(const Claim& claim, const ProcessTable& table, const Viewer& viewer) {
  return Judge(claim, table, viewer).judge();
}

}  // namespace treeguard
