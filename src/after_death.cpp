#include "after_death.hpp"

#include "authority.hpp"
#include "port/takedown.hpp"
#include "supervisor.hpp"
#include "wall_clock.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <tuple>
#include <vector>

namespace treeguard {

DrainAfterDeath drain_after_death(const RunRecord& record) {
  const RecordedDrain recorded = record.drain.value_or(RecordedDrain{});
  DrainAfterDeath drain;
  drain.signal = signal_named(recorded.signal).value_or(signals::term);
  drain.grace = grace_after_death(Duration(recorded.kill_after_ns));
  return drain;
}

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

enum class Drained { emptied, not_empty, superseded };

// Drain first (DESIGN.md [guardian]): the drain recorded (its phase, when
// it began; a note: which signal, to whom, by whom, the grace), then the
// run's signal to every process of the run, then CONT where the signal
// stops whom it reaches, then up to the run's grace for the boundary to
// empty, then the judgement again. `on_disk` is the record as this
// settler last read or wrote it, and becomes what the drain wrote; another
// settler's write since: superseded, nothing sent from here. A record that
// cannot be written does not stop the drain (no kill is ever sent without
// durable authority).
Drained drain_first(const RecordStore& store, RunRecord& on_disk, RunRecord& record,
                    const RecordedBoundary& boundary, const AfterDeath& how,
                    const DrainAfterDeath& drain, AfterDeathOutcome& outcome,
                    std::vector<MemberInfo>& alive) {
  const std::string name = signal_name(drain.signal);
  const std::string note =
      fmt::format("drain after controller death: {} to every process of the run ({} alive), then "
                  "CONT, by {}; grace {}",
                  name, alive.size(), how.by, format_duration(drain.grace));
  record.phases.push_back(PhaseEntry{"drain", unix_time_ns()});
  record.notes.push_back(note);
  auto written = store.replace_if_unchanged(on_disk, record, Durability::lazy);
  if (written && !*written) {
    outcome.superseded = true;
    outcome.why_not = "the record was written by another settler since it was read";
    return Drained::superseded;
  }
  if (written) {
    on_disk = record;
  }
  if (how.tell) {
    how.tell(note);
  }
  auto sent = boundary.stop_gracefully(drain.signal);
  if (sent && stops_whom_it_reaches(drain.signal)) {
    std::ignore = boundary.stop_gracefully(signals::cont);
  }
  if (!sent) {
    record.notes.push_back(
        fmt::format("drain after controller death: {} not sent: {}", name, sent.error().message()));
  } else {
    boundary.await_drained(*sent, std::chrono::steady_clock::now() + drain.grace);
  }
  return boundary.empty(&outcome.why_not, &alive) == true ? Drained::emptied : Drained::not_empty;
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
  // Drain first, kill second (--signal KILL has no drain).
  RunRecord on_disk = read;
  const DrainAfterDeath drain = drain_after_death(record);
  std::string reason = how.reason;
  if (drain.signal != signals::kill) {
    switch (drain_first(store, on_disk, record, *boundary, how, drain, outcome, alive)) {
    case Drained::emptied:
      outcome.drained = outcome.proven = true;
      close_into(outcome, store, on_disk, record, covered, how, how.drained_note);
      return outcome;
    case Drained::superseded:
      return outcome;
    case Drained::not_empty:
      reason += fmt::format("; {} sent, the grace period {} ended", signal_name(drain.signal),
                            format_duration(drain.grace));
      break;
    }
  }
  // Write-ahead: no durable authority, no kill. The record still says
  // pending: the gate blocks, and sweep can act once it can write.
  AuthorityEntry entry;
  entry.at = unix_time_ns();
  entry.action = boundary->force_method();
  entry.targets = authority_targets(record, alive);
  entry.reason = reason;
  entry.by = how.by;
  auto granted = record_authority(store, on_disk, record, std::move(entry));
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
