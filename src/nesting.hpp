// Runs nested in runs: the rules by which a treeguard finds the runs it runs
// inside (TREEGUARD_RUNS, read once), which of them takes its leftovers
// (--leftovers outer), which of their guardians may guard it, and on which
// nested run such a guardian may act. The words said between a nested run
// and that guardian are in nested_protocol.hpp; the sockets are the
// platform's.
#pragma once

#include "identity.hpp"
#include "nested_protocol.hpp"
#include "port/boundary.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "result.hpp"

#include <string>
#include <vector>

namespace treeguard {

// TREEGUARD_RUNS as this treeguard inherited it (k_run_marker: the runs it
// runs inside, outermost first); empty when it runs inside none. Read from
// the environment once, at the first call.
const std::string& inherited_runs();

// Whether the run `record` is over: finished (pass), failed, ambiguous, or
// resolved (`treeguard resolve` leaves the disposition pending). A run that
// is over is never an enclosing run: it takes no leftovers, and its guardian
// guards no nested run.
bool run_is_over(const RunRecord& record);

// Whether `leaf` is below the leaf `outer` (a path prefix ending at a '/').
bool leaf_within(const std::string& leaf, const std::string& outer);

// --leftovers outer: the run this one (`self`, its record as it stands:
// boundary and reaper known) runs inside, found in `store`. It is the last
// one named in the inherited marker, as its record has it, while it is
// still running; for a process group, only if its controller is where this
// run's orphans go (the guardian's reaper): they become its members when
// this treeguard exits. A leaf's containment, and a job's nesting, are
// checked at the hand-over (Boundary::hand_over). The error says why there
// is none.
Result<EnclosingRun> leftovers_taker(const RecordStore& store, const RunRecord& self);

// The run a nested run runs inside, whose guardian guards the runs nested
// in it (GuardianSpec::enclosing): what that run's record says of it.
struct EnclosingGuardian {
  std::string run_id;
  ProcessIdentity guardian;  // the enclosing run's guardian, as its record names it
  std::string address;       // its leaf: the nested leaf is below it
};

// The runs this one is nested in, nearest first, whose guardians may guard
// it: each one's record (among `open`, as the gate read them) is pending
// and names a cgroup leaf that holds `leaf`, and a guardian.
// start_guardian() announces this run to the first whose guardian listens
// (nested_runs_socket), else starts one of its own (a process-group run,
// another state directory, an older treeguard, a guardian gone). The
// common path of a run that is not nested costs one getenv.
std::vector<EnclosingGuardian> enclosing_guardians(const std::vector<StoredRecord>& open,
                                                   const std::string& leaf);

// Whether a guardian may act for the nested run whose record is `record`,
// taken as `announced` (its controller the announcing peer, its leaf one
// inside the guardian's, both checked when it was taken,
// NestedRuns::refusal): the record still names that controller and leaf.
bool guards_nested_run(const RunRecord& record, const Announcement& announced);

}  // namespace treeguard
