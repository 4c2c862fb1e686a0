#include "after_death.hpp"

#include "authority.hpp"
#include "takedown.hpp"
#include "wall_clock.hpp"

#include <fmt/format.h>

#include <vector>

namespace treeguard {

Result<void> close_after_death(const RecordStore& store, RunRecord& record, const RunRecord& claim,
                               const std::string& phase, bool proven, const std::string& note) {
  if (proven) {
    std::ignore = remove_recorded_boundary(record);
  }
  record.phases.push_back(PhaseEntry{phase, unix_time_ns()});
  record.disposition = settled_disposition(claim, proven);
  if (!note.empty()) {
    record.notes.push_back(note);
  }
  auto written = proven || record.resolution ? store.finish(record, Durability::durable)
                                             : store.save(record, Durability::durable);
  if (!written) {
    return fail(written.error());
  }
  return {};
}

namespace {

std::string with_why(const std::string& note, const std::string& why) {
  return note.empty() ? note : note + why;
}

}  // namespace

AfterDeathOutcome take_down_after_death(const RecordStore& store, RunRecord& record,
                                        const RunRecord& claim, const AfterDeath& how) {
  AfterDeathOutcome outcome;
  std::vector<MemberInfo> alive;
  if (recorded_boundary_empty(claim, &outcome.why_not, &alive) == true) {
    outcome.found_empty = outcome.proven = true;
    outcome.closed =
        close_after_death(store, record, claim, how.closing_phase, true, how.found_empty_note);
    return outcome;
  }
  // Write-ahead: no durable authority, no kill. The record still says
  // pending: the gate blocks, and sweep can act once it can write.
  AuthorityEntry entry;
  entry.at = unix_time_ns();
  entry.action = recorded_force_method(record);
  entry.targets = authority_targets(record, alive);
  entry.reason = how.reason;
  entry.by = how.by;
  if (auto granted = record_authority(store, record, std::move(entry)); !granted) {
    outcome.why_not = granted.error().message();
    outcome.closed = fail(granted.error());
    return outcome;
  }
  outcome.authorized = true;
  auto killed = kill_recorded_boundary(claim, how.verify_for, &outcome.why_not, &alive);
  outcome.proven = killed && *killed;
  std::string note = how.taken_down_note;
  if (!killed) {
    outcome.why_not = killed.error().message();
    note = with_why(how.kill_failed_note, outcome.why_not);
  } else if (!outcome.proven) {
    note = with_why(how.not_proven_note, outcome.why_not);
  }
  outcome.closed = close_after_death(store, record, claim, how.closing_phase, outcome.proven, note);
  return outcome;
}

}  // namespace treeguard
