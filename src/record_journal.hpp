// The Journal of a real run: the run's record in the state directory,
// written from spawn on; or, for a run nested in a run whose guardian holds
// its record (DESIGN.md [nested]), held by that guardian, which writes into
// its own run's record what evidence needs (authority, a failed or
// ambiguous end, a hand-over): such a run's clean path writes nothing. Phases are written lazily
// (atomic replace, no fsync: the common path pays no fsync); authority entries and terminal
// failed/ambiguous dispositions are fsynced, file and directory, before the
// lifecycle may go on. A clean run's record is removed unless kept.
#pragma once

#include "journal.hpp"
#include "port/boundary.hpp"
#include "port/guardian.hpp"
#include "record.hpp"
#include "record_store.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace treeguard {

// One line of a report's timeline.
struct TimelineEntry {
  std::int64_t at = 0;  // ns since the Unix epoch
  std::string event;
  std::optional<Signal> signal;
};

// COMMAND as a record keeps it: whole, unless its arguments add up to more
// than 128 KiB (an argv may hold up to the kernel's ARG_MAX); then the
// arguments that fit, and a last one saying how many bytes were left out.
std::vector<std::string> recorded_command(const std::vector<std::string>& argv);

class RecordJournal final : public Journal {
public:
  // `record` is the run's first record: already saved by the caller
  // (`written`: the version it wrote, RecordStore::save_own), or saved by
  // begin(), or held by `holder`, the enclosing run's guardian (never
  // saved here unless that guardian is found gone: `holder_lost` then makes
  // the run guard itself, which calls guarded_by()).
  RecordJournal(const RecordStore& store, RunRecord record, Boundary& boundary, bool keep_records,
                std::optional<FileVersion> written = std::nullopt, Guardian* holder = nullptr,
                std::function<void()> holder_lost = nullptr);

  // The record's first write, for a boundary that is known only once
  // COMMAND's process exists (a process group: its id and first member),
  // called while that process is held before exec. Lazy, like every
  // write of the common path.
  Result<void> begin();

  void phase(std::string_view name) override;
  void event(std::string_view what, std::optional<Signal> signal) override;
  void handed_over(const std::string& to, const std::vector<MemberInfo>& members) override;
  Result<void> authorize(const AuthorityRequest& request) override;

  // The run's guardian is now `guardian` (a nested run guarding itself
  // once the enclosing guardian is gone): the record names it, and from now
  // on it is the run's own, in the state directory.
  void guarded_by(ProcessIdentity guardian, std::optional<ProcessIdentity> reaper);
  void finish(Disposition disposition, int exit_code) override;

  const RunRecord& record() const { return m_record; }
  const std::vector<TimelineEntry>& timeline() const { return m_timeline; }
  // The last error writing the record, if any (reported once, at the end).
  const std::optional<Error>& write_error() const { return m_write_error; }

private:
  void refresh_from_boundary();
  void remember(const MemberInfo& member);
  void save(Durability durability);
  // Write the record where it is kept: its own file, or (held) what
  // evidence needs of it into the enclosing run's record.
  Result<void> keep(Durability durability);

  const RecordStore& m_store;
  RunRecord m_record;
  Boundary& m_boundary;
  bool m_keep;
  // The members the record keeps (the first k_max_recorded_members seen),
  // and one more if more were seen (keep_members() then says so).
  Membership m_members;
  std::vector<TimelineEntry> m_timeline;
  std::optional<Error> m_write_error;
  // The version of the record file this journal last wrote: the guardian
  // may write the record too (the records of runs nested in this one).
  std::optional<FileVersion> m_written;
  Guardian* m_holder;
  std::function<void()> m_holder_lost;
  bool m_handed_over = false;
  bool m_kept_in_enclosing = false;
};

}  // namespace treeguard
