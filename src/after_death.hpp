// The takedown of a run whose controller died without finishing it, from
// its record: the guardian's (contract 7) and `sweep`'s, one sequence. The
// boundary is judged; unless it is proven empty, the authority is made
// durable first and only then the forced kill sent; then the record is
// closed: finished (kept apart, never read by the gate again) when the
// boundary was proven empty or a person resolved the run, else left open,
// so that the gate blocks until the run is swept or resolved.
#pragma once

#include "duration.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "result.hpp"

#include <string>

namespace treeguard {

// Who takes the run down, and what it writes into the record.
struct AfterDeath {
  std::string closing_phase;  // the phase that closes the record ("verify", "swept")
  std::string reason;         // the authority's reason and actor
  std::string by;
  Duration verify_for{};  // how long the kill waits for the killed to die
  // The note that closes the record, by how it ended (empty: no note); the
  // last two are followed by why.
  std::string found_empty_note;
  std::string taken_down_note;
  std::string not_proven_note;
  std::string kill_failed_note;
};

struct AfterDeathOutcome {
  bool found_empty = false;  // proven empty before any kill (none sent)
  bool authorized = false;   // a forced kill was granted durably (and sent)
  bool proven = false;       // the boundary is proven empty
  std::string why_not;       // why not proven: what survived, or what failed
  Result<void> closed;       // the record's closing write (untouched when not authorized)
};

// Takes down what `record` (the run's record, as loaded) names, by what
// `claim` covers (the record, or the record widened by what the taker saw
// of the run itself); `record` receives the authority, the closing phase,
// note and disposition, and is written to `store`.
AfterDeathOutcome take_down_after_death(const RecordStore& store, RunRecord& record,
                                        const RunRecord& claim, const AfterDeath& how);

// The closing step alone, for a run found ended without a kill: the
// boundary removed when proven empty; the phase, the disposition `claim`
// earns and the note (if any) added; the record finished or saved open.
Result<void> close_after_death(const RecordStore& store, RunRecord& record, const RunRecord& claim,
                               const std::string& phase, bool proven, const std::string& note);

}  // namespace treeguard
