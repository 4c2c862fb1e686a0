#include "after_death.hpp"

#include "authority.hpp"
#include "port/takedown.hpp"
#include "wall_clock.hpp"

#include <fmt/format.h>

#include <memory>
#include <vector>

namespace treeguard {

Result<bool> settle_record(const RecordStore& store, const RunRecord& read,
                           const RunRecord& settled, bool ended, Durability durability) {
  if (ended) {
    std::ignore = recorded_boundary(settled)->remove();
  }
  return store.replace_if_unchanged(read, settled, durability);
}

Result<bool> close_after_death(const RecordStore& store, const RunRecord& read, RunRecord& record,
                               const RunRecord& claim, const std::string& phase, bool proven,
                               const std::string& note) {
  record.phases.push_back(PhaseEntry{phase, unix_time_ns()});
  record.disposition = settled_disposition(claim, proven);
  if (!note.empty()) {
    record.notes.push_back(note);
  }
  return settle_record(store, read, record, proven);
}

namespace {

std::string with_why(const std::string& note, const std::string& why) {
  return note.empty() ? note : note + why;
}

// The closing write into `outcome`.
void close_into(AfterDeathOutcome& outcome, const RecordStore& store, const RunRecord& read,
                RunRecord& record, const RunRecord& claim, const AfterDeath& how,
                const std::string& note) {
  auto closed =
      close_after_death(store, read, record, claim, how.closing_phase, outcome.proven, note);
  if (!closed) {
    outcome.closed = fail(closed.error());
  } else {
    outcome.superseded = !*closed;
  }
}

}  // namespace

AfterDeathOutcome take_down_after_death(const RecordStore& store, const RunRecord& read,
                                        RunRecord& record, const AfterDeath& how,
                                        const RunRecord* claim) {
  const RunRecord& covered = claim != nullptr ? *claim : record;
  // The boundary's kind is chosen once, from what the takedown covers.
  const std::unique_ptr<RecordedBoundary> boundary = recorded_boundary(covered);
  AfterDeathOutcome outcome;
  std::vector<MemberInfo> alive;
  if (boundary->empty(&outcome.why_not, &alive) == true) {
    outcome.found_empty = outcome.proven = true;
    close_into(outcome, store, read, record, covered, how, how.found_empty_note);
    return outcome;
  }
  // Write-ahead: no durable authority, no kill. The record still says
  // pending: the gate blocks, and sweep can act once it can write.
  AuthorityEntry entry;
  entry.at = unix_time_ns();
  entry.action = boundary->force_method();
  entry.targets = authority_targets(record, alive);
  entry.reason = how.reason;
  entry.by = how.by;
  auto granted = record_authority(store, read, record, std::move(entry));
  if (!granted) {
    outcome.why_not = granted.error().message();
    outcome.closed = fail(granted.error());
    return outcome;
  }
  if (!*granted) {
    // Another settler wrote the record since it was read: its judgement
    // and authority, not this one's, are on disk. No kill from here.
    outcome.superseded = true;
    outcome.why_not = "the record was written by another settler since it was read";
    return outcome;
  }
  outcome.authorized = true;
  // From here on, the record on disk is what this settler wrote.
  const RunRecord written = record;
  auto killed = boundary->kill(how.verify_for, &outcome.why_not, &alive);
  outcome.proven = killed && *killed;
  std::string note = how.taken_down_note;
  if (!killed) {
    outcome.why_not = killed.error().message();
    note = with_why(how.kill_failed_note, outcome.why_not);
  } else if (!outcome.proven) {
    note = with_why(how.not_proven_note, outcome.why_not);
  }
  close_into(outcome, store, written, record, covered, how, note);
  return outcome;
}

}  // namespace treeguard
