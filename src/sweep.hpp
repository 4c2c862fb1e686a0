// `treeguard sweep [RUN]`: take down the boundaries of runs whose
// controller died, authority first (DESIGN.md [after-death]).
#pragma once

#include "gate.hpp"
#include "record_store.hpp"

#include <cstdio>
#include <optional>
#include <string>

namespace treeguard {

// Sweep every stale run of `store`, or only `run_id`. Returns the exit
// code: 0 all swept (or nothing to do), 122 a kill withheld or members
// survived, 125 a named run is missing or a record is untrusted.
int sweep_runs(const RecordStore& store, const HostView& host,
               const std::optional<std::string>& run_id, std::FILE* out, std::FILE* err);

}  // namespace treeguard
