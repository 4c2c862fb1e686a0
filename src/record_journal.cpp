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
                             bool keep_records, std::optional<FileVersion> written,
                             Guardian* holder, std::function<void()> holder_lost)
    : m_store(store), m_record(std::move(record)), m_boundary(boundary), m_keep(keep_records),
      m_written(written), m_holder(holder), m_holder_lost(std::move(holder_lost)) {
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
  auto saved = keep(durability);
  if (!saved) {
    m_write_error = saved.error();
  }
}

Result<void> RecordJournal::keep(Durability durability) {
  if (m_holder) {
    auto kept = m_holder->keep_in_enclosing(m_record, durability == Durability::durable);
    if (kept) {
      m_kept_in_enclosing = true;
      return {};
    }
    if (kept.error().code != std::errc::not_connected || !m_holder_lost) {
      return kept;
    }
    m_holder_lost();  // the run guards itself: guarded_by(), its own record from now on
    if (m_holder) {
      return kept;
    }
  }
  TG_TRY(m_store.save_own(m_record, durability, m_written));
  return {};
}

Result<void> RecordJournal::begin() {
  refresh_from_boundary();
  TG_TRY(m_store.save_own(m_record, Durability::lazy, m_written));
  return {};
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
  m_handed_over = m_handed_over || !members.empty();
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
  // Write-ahead: durable where the record is kept (its own file, or the
  // enclosing run's record), or the entry is taken out and no kill is sent.
  m_record.authority.push_back(std::move(entry));
  auto recorded = keep(Durability::durable);
  if (!recorded) {
    m_record.authority.pop_back();
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
  m_holder = nullptr;
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
  if (m_holder) {
    // Held by the enclosing run's guardian: a clean end leaves nothing
    // anywhere; what evidence needs (an authority written, a hand-over, an
    // end that is not pass) goes into the enclosing run's record.
    const bool evidence = m_kept_in_enclosing || m_handed_over || disposition != Disposition::pass;
    if (!evidence) {
      return;
    }
    auto kept = keep(disposition == Disposition::pass ? Durability::lazy : Durability::durable);
    if (!kept) {
      m_write_error = kept.error();
    }
    if (m_holder || !kept) {
      return;
    }
    // (the enclosing guardian was found gone: the run's own record, below)
  }
  // A clean run's record goes, unless it holds what its guardian wrote of
  // the runs nested in it (RecordStore::save_own); a kept or forced one is
  // kept, finished (apart from the open records the gate reads) once
  // nothing in it can block.
  const bool clean = disposition == Disposition::pass && !m_keep && m_record.authority.empty();
  auto saved = m_store.save_own(
      m_record, disposition == Disposition::pass ? Durability::lazy : Durability::durable,
      m_written, clean);
  if (!saved) {
    m_write_error = saved.error();
  }
}

}  // namespace treeguard
