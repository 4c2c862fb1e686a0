#include "record_journal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace treeguard {

// Enough for any real tree, small enough that the record stays far below
// the store's 1 MiB limit (about 41 bytes a member).
constexpr std::size_t k_max_recorded_members = 10000;


RecordJournal::RecordJournal(const RecordStore& store, RunRecord record, Boundary& boundary,
                             bool keep_records)
  : m_store(store), m_record(std::move(record)), m_boundary(boundary), m_keep(keep_records)
{
}

void RecordJournal::refresh_from_boundary()
{
  m_record.boundary.address = m_boundary.address();
  if (m_boundary.kind() == BoundaryKind::process_group) {
    // "pgid N": the group COMMAND leads, known once it runs.
    const std::string& address = m_record.boundary.address;
    if (address.rfind("pgid ", 0) == 0) {
      try {
        m_record.boundary.pgid = std::stol(address.substr(5));
      } catch (const std::exception&) {
        m_record.boundary.pgid.reset();
      }
    }
  }
  for (const auto& member : m_boundary.members()) {
    if (m_record.members.size() >= k_max_recorded_members) {
      if (m_record.notes.empty() || m_record.notes.back() != "members truncated") {
        m_record.notes.push_back("members truncated");
      }
      break;
    }
    auto known = std::find_if(m_record.members.begin(), m_record.members.end(),
                              [&](const MemberInfo& m) {
                                return m.pid == member.pid && m.start_time == member.start_time;
                              });
    if (known == m_record.members.end()) {
      m_record.members.push_back(member);
    } else if (member.escaped) {
      known->escaped = true;
    }
  }
}

void RecordJournal::save(Durability durability)
{
  auto saved = m_store.save(m_record, durability);
  if (!saved) {
    m_write_error = saved.error();
  }
}

void RecordJournal::phase(std::string_view name)
{
  const auto now = unix_time_ns();
  m_record.phases.push_back(PhaseEntry{std::string(name), now});
  m_timeline.push_back(TimelineEntry{now, fmt::format("phase {}", name), std::nullopt});
  refresh_from_boundary();
  // "running" carries what only spawn could tell (the pgid); the rest of
  // the phases matter only if the run goes wrong, and authorize() writes
  // them durably then.
  if (name == "running") {
    save(Durability::lazy);
  }
}

void RecordJournal::event(std::string_view what, std::optional<Signal> signal)
{
  m_timeline.push_back(TimelineEntry{unix_time_ns(), std::string(what), signal});
}

Result<void> RecordJournal::authorize(const AuthorityRequest& request)
{
  refresh_from_boundary();
  AuthorityEntry entry;
  entry.at = unix_time_ns();
  entry.action = request.action;
  entry.targets = request.targets;
  entry.reason = request.reason;
  entry.by = fmt::format("controller pid {}", m_record.controller.pid);
  m_record.authority.push_back(entry);
  auto saved = m_store.save(m_record, Durability::durable);
  if (!saved) {
    // Not on disk, so not granted: the record keeps only what is durable.
    m_record.authority.pop_back();
    m_timeline.push_back(TimelineEntry{
      unix_time_ns(), fmt::format("authority for {} not durable: {}", request.action,
                                  saved.error().message()),
      std::nullopt});
    return fail(saved.error());
  }
  m_timeline.push_back(
    TimelineEntry{entry.at, fmt::format("authority recorded for {}", request.action),
                  std::nullopt});
  return {};
}

void RecordJournal::finish(Disposition disposition, int exit_code)
{
  refresh_from_boundary();
  m_record.disposition = disposition;
  m_record.exit_code = exit_code;
  m_record.phases.push_back(PhaseEntry{"exit", unix_time_ns()});
  if (disposition == Disposition::pass && !m_keep && m_record.authority.empty()) {
    auto removed = m_store.remove(m_record.run_id);
    if (!removed) {
      m_write_error = removed.error();
    }
    return;
  }
  if (disposition == Disposition::pass) {
    // Kept, but finished: apart from the open records the gate reads.
    auto kept = m_store.finish(m_record, Durability::lazy);
    if (!kept) {
      m_write_error = kept.error();
    }
    return;
  }
  save(Durability::durable);
}

} // namespace treeguard
