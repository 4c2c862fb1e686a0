#include "record_journal.hpp"

#include "authority.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace treeguard {

std::vector<std::string> recorded_command(const std::vector<std::string>& argv) {
  constexpr std::size_t k_budget = 128 * 1024;
  std::vector<std::string> out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (used + argv[i].size() > k_budget && i > 0) {
      std::size_t left = 0;
      for (std::size_t j = i; j < argv.size(); ++j) {
        left += argv[j].size();
      }
      out.push_back(
          fmt::format("... ({} more argument(s), {} bytes, not recorded)", argv.size() - i, left));
      break;
    }
    out.push_back(i == 0 ? argv[i].substr(0, k_budget) : argv[i]);
    used += out.back().size();
  }
  return out;
}

RecordJournal::RecordJournal(const RecordStore& store, RunRecord record, Boundary& boundary,
                             bool keep_records)
    : m_store(store), m_record(std::move(record)), m_boundary(boundary), m_keep(keep_records) {
  for (const auto& member : m_record.members) {
    remember(member);
  }
}

void RecordJournal::remember(const MemberInfo& member) {
  // Beyond what the record keeps, one more stands for all the rest: a long
  // run's churn costs no memory here.
  if (m_members.size() <= k_max_recorded_members || m_members.find(member) != nullptr) {
    m_members.remember(member);
  }
}

void RecordJournal::refresh_from_boundary() {
  m_record.boundary.address = m_boundary.address();
  // The group COMMAND leads, known once it runs.
  m_record.boundary.pgid = m_boundary.process_group();
  for (const auto& member : m_boundary.members()) {
    remember(member);
  }
  keep_members(m_record, m_members.all());
}

void RecordJournal::save(Durability durability) {
  auto saved = m_store.save(m_record, durability);
  if (!saved) {
    m_write_error = saved.error();
  }
}

Result<void> RecordJournal::begin() {
  refresh_from_boundary();
  return m_store.save(m_record, Durability::lazy);
}

void RecordJournal::phase(std::string_view name) {
  const auto now = unix_time_ns();
  m_record.phases.push_back(PhaseEntry{std::string(name), now});
  m_timeline.push_back(TimelineEntry{now, fmt::format("phase {}", name), std::nullopt});
  refresh_from_boundary();
  // Not written: what only spawn could tell (the pgid, COMMAND) is in the
  // record already (begin(), with COMMAND held), and the rest of the phases
  // matter only if the run goes wrong; authorize() writes them durably then.
}

void RecordJournal::event(std::string_view what, std::optional<Signal> signal) {
  m_timeline.push_back(TimelineEntry{unix_time_ns(), std::string(what), signal});
}

void RecordJournal::handed_over(const std::string& to, const std::vector<MemberInfo>& members) {
  // One note per member, bounded: a record stays small whatever was left.
  constexpr std::size_t k_max_notes = 64;
  const auto at = unix_time_ns();
  std::size_t noted = 0;
  for (const auto& member : members) {
    const std::string line = fmt::format("handed over to run {}: {} (start {})", to,
                                         describe_member(member), member.start_time);
    m_timeline.push_back(TimelineEntry{at, line, std::nullopt});
    if (noted++ < k_max_notes) {
      m_record.notes.push_back(line);
    }
  }
  if (noted > k_max_notes) {
    m_record.notes.push_back(
        fmt::format("handed over to run {}: {} more", to, noted - k_max_notes));
  }
}

Result<void> RecordJournal::authorize(const AuthorityRequest& request) {
  refresh_from_boundary();
  AuthorityEntry entry;
  entry.at = unix_time_ns();
  entry.action = request.action;
  entry.targets =
      authority_targets(m_record, request.alive ? *request.alive : m_boundary.alive_members());
  entry.reason = request.reason;
  entry.by = fmt::format("controller pid {}", m_record.controller.pid);
  const auto at = entry.at;
  auto recorded = record_authority(m_store, m_record, std::move(entry));
  if (!recorded) {
    m_timeline.push_back(TimelineEntry{
        unix_time_ns(),
        fmt::format("authority for {} not durable: {}", request.action, recorded.error().message()),
        std::nullopt});
    return recorded;
  }
  m_timeline.push_back(
      TimelineEntry{at, fmt::format("authority recorded for {}", request.action), std::nullopt});
  return {};
}

void RecordJournal::guarded_by(ProcessIdentity guardian, std::optional<ProcessIdentity> reaper) {
  m_record.guardian = guardian;
  m_record.reaper = reaper;
  m_timeline.push_back(TimelineEntry{
      unix_time_ns(), fmt::format("guarded from now on by guardian pid {}", guardian.pid),
      std::nullopt});
  save(Durability::lazy);
}

void RecordJournal::finish(Disposition disposition, int exit_code) {
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

}  // namespace treeguard
