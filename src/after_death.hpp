// Settling a run whose controller died without finishing it, from its
// record (DESIGN.md [after-death]): the guardian's takedown ([guardian]),
// `sweep`'s, and the dispatch gate's settling of what can never block
// again, one sequence. The boundary is judged; unless it is proven empty,
// the run is drained first, as its controller would have drained it (the
// run's signal from its record, then its grace), and judged again; unless
// it is proven empty then, the authority is made durable first and only
// then the forced kill sent; then the record is closed: finished (kept
// apart, never read by the gate again) when the boundary was proven empty
// or a person resolved the run, else left open, so that the gate blocks
// until the run is swept or resolved.
//
// Several settlers may act on one record at once (a guardian, sweeps, the
// gates of concurrent launches): every write of this sequence is made only
// if the record on disk is still the one the settler read, or last wrote
// (RecordStore::replace_if_unchanged). A settler that finds it changed
// writes nothing more and sends no kill it has not recorded: the newer
// version, another settler's, stays.
#pragma once

#include "duration.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "result.hpp"
#include "signal_name.hpp"
#include "supervisor.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace treeguard {

// Who takes the run down, and what it writes into the record.
struct AfterDeath {
  std::string closing_phase;  // the phase that closes the record ("verify", "swept")
  std::string reason;         // the authority's reason and actor
  std::string by;
  Duration verify_for = k_kill_patience;  // how long the kill waits for the killed to die
  // The note that closes the record, by how it ended (empty: no note); the
  // last two are followed by why.
  std::string found_empty_note;
  std::string drained_note;  // proven empty after the drain
  std::string taken_down_note;
  std::string not_proven_note;
  std::string kill_failed_note;
  // Told what the drain does as it starts it (`sweep` prints it); unset:
  // nobody is told.
  std::function<void(const std::string&)> tell;
};

// The run's drain as its record says (DESIGN.md [drain]): its signal, and
// how long a takedown after its controller's death waits once it sent it
// (grace_after_death(): --kill-after, or k_leftover_grace under -k 0). A
// record without its drain is drained with the defaults.
struct DrainAfterDeath {
  Signal signal = signals::term;
  Duration grace{};
};
DrainAfterDeath drain_after_death(const RunRecord& record);

struct AfterDeathOutcome {
  bool found_empty = false;  // proven empty before any signal (none sent)
  bool drained = false;      // proven empty after the drain, without a kill
  bool authorized = false;   // a forced kill was granted durably (and sent)
  bool proven = false;       // the boundary is proven empty
  // Another settler wrote the record (or finished it) since this one read
  // it: what this one had not written yet is not written; no kill is sent
  // unless `authorized` (granted before the other settler wrote).
  bool superseded = false;
  std::string why_not;  // why not proven: what survived, or what failed
  Result<void> closed;  // the record's closing write (untouched when not authorized)
};

// The closing write of every settler: `settled` (the record as it is to be
// kept: its phase, note and disposition added) replaces the record on disk
// only if that is still `read`. When `ended` (the run is proven over), the
// recorded boundary goes first (a cgroup leaf removed: rmdir only, refused
// while anything is in it). False when superseded: nothing written. Lazy
// only for the gate's batch of records that can never block again.
Result<bool> settle_record(const RecordPlace& store, const RunRecord& read,
                           const RunRecord& settled, bool ended,
                           Durability durability = Durability::durable);

// Takes down what `record` (the run's record: as `read` from the store,
// with whatever the taker adds) names, by what `claim` covers (by default
// the record itself; or the record widened by what the taker saw of the
// run); `record` receives the authority, the closing phase, note and
// disposition, and is written to `store`, each write compared with what
// was read or last written.
AfterDeathOutcome take_down_after_death(const RecordPlace& store, const RunRecord& read,
                                        RunRecord& record, const AfterDeath& how,
                                        const RunRecord* claim = nullptr);

// The closing step alone, for a run found ended without a kill: the
// boundary removed when proven empty; the phase, the disposition `claim`
// earns and the note (if any) added to `record`; the record finished or
// saved open, if the record on disk is still `read` (false: superseded).
Result<bool> close_after_death(const RecordPlace& store, const RunRecord& read, RunRecord& record,
                               const RunRecord& claim, const std::string& phase, bool proven,
                               const std::string& note);

// What a guardian knows of the run it guards besides the record: itself,
// the members it saw, its last look at the run's tree
// (RunRecord::last_look) and where the run's orphans went now
// (RunRecord::reaper), each as far as its platform tells it.
struct GuardianSight {
  ProcessIdentity self;
  Membership seen = {};
  std::optional<unsigned long long> last_look = std::nullopt;
  std::optional<ProcessIdentity> reaper = std::nullopt;
};

// What a guardian does when a controller it guards died without finishing
// its run (DESIGN.md [guardian]), on every platform: the run's record, if
// it is still pending and `ours` accepts it (never a boundary the guardian
// was not given), is taken down after death: drained first with the run's
// own signal and grace, then the authority made durable, then the kill,
// the proof, the record settled (take_down_after_death). What it claims:
// every member the record names and every one the guardian saw.
void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const GuardianSight& sight,
                        const std::function<bool(const RunRecord&)>& ours);

// The takedown itself, of the pending record `read` where it is kept
// (`place`: the run's own file, or its entry in the enclosing run's record,
// NestedRecordPlace): "controller lost" noted, then take_down_after_death.
void take_down_lost_record(const RecordPlace& place, const RunRecord& read,
                           const GuardianSight& sight);

}  // namespace treeguard
