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

Result<bool> settle_record(const RecordPlace& store, const RunRecord& read,
                           const RunRecord& settled, bool ended, Durability durability) {
  if (ended) {
    std::ignore = recorded_boundary(settled)->remove();
  }
  return store.replace_if_unchanged(read, settled, durability);
}

Result<bool> close_after_death(const RecordPlace& store, const RunRecord& read, RunRecord& record,
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
void close_into(AfterDeathOutcome& outcome, const RecordPlace& store, const RunRecord& read,
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

enum class Drained { emptied, not_empty, not_empty_unsent, superseded };

// Drain first (DESIGN.md [guardian]): the drain recorded (its phase, when
// it began; a note: which signal, to whom, by whom, the grace), then the
// run's signal to every process of the run, then CONT where the signal
// stops whom it reaches, then up to the run's grace for the boundary to
// empty, then the judgement again. `on_disk` is the record as this
// settler last read or wrote it, and becomes what the drain wrote; another
// settler's write since: superseded, nothing sent from here. A record that
// cannot be written does not stop the drain (no kill is ever sent without
// durable authority).
Drained drain_first(const RecordPlace& store, RunRecord& on_disk, RunRecord& record,
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
  }
  // The grace is waited whether or not the signal could be sent, as the
  // controller waits it at a deadline: a member may be ending of something
  // else, and the force never comes sooner than it would have.
  boundary.await_drained(sent ? *sent : std::vector<ProcessIdentity>{},
                         std::chrono::steady_clock::now() + drain.grace);
  if (boundary.empty(&outcome.why_not, &alive) == true) {
    return Drained::emptied;
  }
  return sent ? Drained::not_empty : Drained::not_empty_unsent;
}

}  // namespace

AfterDeathOutcome take_down_after_death(const RecordPlace& store, const RunRecord& read,
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
    const Drained drained =
        drain_first(store, on_disk, record, *boundary, how, drain, outcome, alive);
    switch (drained) {
    case Drained::emptied:
      outcome.drained = outcome.proven = true;
      close_into(outcome, store, on_disk, record, covered, how, how.drained_note);
      return outcome;
    case Drained::superseded:
      return outcome;
    case Drained::not_empty:
    case Drained::not_empty_unsent:
      reason += fmt::format("; {} {}, the grace period {} ended", signal_name(drain.signal),
                            drained == Drained::not_empty ? "sent" : "could not be sent",
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

void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const GuardianSight& sight,
                        const std::function<bool(const RunRecord&)>& ours) {
  RecordStore store(state_dir);
  auto loaded = store.load(run_id);
  if (!loaded) {
    // Either the run finished its record just before dying, or it cannot
    // be read: without a record there is no durable authority. Fail
    // closed; the gate of the next run finds what is left.
    return;
  }
  const RunRecord& on_disk = *loaded;
  if (on_disk.disposition != Disposition::pending) {
    return;  // the controller finished the run itself
  }
  if (!ours(on_disk)) {
    return;  // not the boundary we were started for: never act on it
  }
  take_down_lost_record(store, on_disk, sight);
}

void take_down_lost_record(const RecordPlace& place, const RunRecord& on_disk,
                           const GuardianSight& sight) {
  RunRecord record = on_disk;
  record.phases.push_back(PhaseEntry{"guardian", unix_time_ns()});
  record.notes.push_back("controller lost");
  // What the record keeps of the claim is capped like every record's
  // (keep_members), so that it can always be written.
  Membership members;
  for (const auto& member : record.members) {
    members.remember(member);
  }
  for (const auto& member : sight.seen.all()) {
    members.remember(member);
  }
  RunRecord claim = record;
  claim.members = members.all();
  claim.last_look = sight.last_look;
  keep_members(record, claim.members);
  if (record.members.size() == claim.members.size()) {
    // A later settler may rely on the look only where the record names
    // every member the guardian saw.
    record.last_look = sight.last_look;
  }
  if (sight.reaper) {
    claim.reaper = sight.reaper;
  }
  AfterDeath how;
  how.closing_phase = "verify";
  how.reason = fmt::format("controller lost: pid {} exited without finishing the run",
                           record.controller.pid);
  how.by = fmt::format("guardian pid {}", sight.self.pid);
  how.drained_note = "the guardian's drain emptied the run: no forced kill";
  how.not_proven_note = "members survived the guardian's kill: ";
  how.kill_failed_note = "guardian kill failed: ";
  std::ignore = take_down_after_death(place, on_disk, record, how, &claim);
}

}  // namespace treeguard
