// Write-ahead authority (DESIGN.md [authority]): what an entry names, and
// the settlers' write of it. The guardian and `sweep` grant a forced kill
// here, the controller through its journal (RecordJournal::authorize), and
// each sends it only once the entry is durable, file and directory, where
// the run's record is kept.
//
// An entry names the boundary, not the tree: its address, the run's marker,
// how many members were alive and a bounded sample of them. Its size never
// grows with the tree, so a tree of any size can be authorized.
#pragma once

#include "identity.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "result.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

// At most this many members are named one by one in an entry.
inline constexpr std::size_t k_authority_sample = 16;

// The targets of an entry: the boundary's address, the marker its processes
// carry, the number alive, and the first k_authority_sample of them.
std::vector<std::string> authority_targets(const RunRecord& record,
                                           const std::vector<MemberInfo>& alive);

// A settler's entry (the guardian, sweep): appended to `record` and saved
// where the run's record is kept (`place`) only if it is still `read`
// (RecordPlace::replace_if_unchanged), durably. False, with the entry taken
// out again, when it is not (another settler wrote it since); an error, with
// it taken out, when it could not be written: the forced kill must not be
// sent. (The controller's own entries: RecordJournal::authorize.)
Result<bool> record_authority(const RecordPlace& place, const RunRecord& read, RunRecord& record,
                              AuthorityEntry entry);

}  // namespace treeguard
