// What a guardian does when a controller it guards dies without finishing
// its run: the run's own guardian (guardian.cpp) for its controller, and a
// cgroup run's guardian (guardian_nested.cpp) for a run nested in its leaf.
#pragma once

#include "identity.hpp"
#include "record.hpp"
#include "record_store.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

namespace treeguard::platform {

// What a guardian does when a controller it guards died without finishing
// its run (its own controller, or that of a run nested in its leaf): the
// one takedown of every platform's guardian (after_death.hpp,
// take_down_lost_run), with where the run's orphans went now: this
// guardian's parent (the recorded reaper, or the next one up if that has
// died since).
// `last_look`: when the guardian last looked at the tree it walked, if it
// walks one (RunRecord::last_look).
void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const Membership& seen, std::optional<unsigned long long> last_look,
                        ProcessIdentity self, const std::function<bool(const RunRecord&)>& ours);

// The takedown itself, of the pending record `read` where it is kept
// (`place`: the run's own file, or its entry in the enclosing run's record),
// by the guardian `self`, covering every member `seen` too
// (after_death.hpp: take_down_lost_record).
void take_down_lost_record(const RecordPlace& place, const RunRecord& read, const Membership& seen,
                           std::optional<unsigned long long> last_look, ProcessIdentity self);

}  // namespace treeguard::platform
