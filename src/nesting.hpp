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

// --leftovers outer: the run this one (`self`, its record as it stands:
// boundary and reaper known) runs inside, found in `store`. It is the last
// one named in the inherited marker, as its record has it, while it is
// still running; for a process group, only if its controller is where this
// run's orphans go (the guardian's reaper): they become its members when
// this treeguard exits. A leaf's containment, and a job's nesting, are
// checked at the hand-over (Boundary::hand_over). The error says why there
// is none.
Result<EnclosingRun> leftovers_taker(const RecordStore& store, const RunRecord& self);

// The runs this one runs inside, innermost first, as the inherited marker
// names them (no record read): the guardian of the first that takes this
// run (announce_to_enclosing, port/guardian.hpp) holds its record and
// guards it; where none does, the run guards itself. The common path of a
// run that is not nested costs nothing more.
std::vector<std::string> enclosing_runs();

// Whether `record` is that of the run a guardian took as `announced`: its
// run id, a cgroup boundary, and the leaf announced (which the guardian took
// only inside its own, NestedRuns::refusal). Only such a record is written
// into the enclosing run's record, and only such a run acted for.
bool names_taken_run(const RunRecord& record, const Announcement& announced);

}  // namespace treeguard
