// The one writer of write-ahead authority (DESIGN.md [authority]). The
// controller (through its journal), the guardian and `sweep` all grant a
// forced kill here, and send it only when this returned success: the entry
// is then durable, file and directory.
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
#include <string>
#include <vector>

namespace treeguard {

// At most this many members are named one by one in an entry.
inline constexpr std::size_t k_authority_sample = 16;

// The targets of an entry: the boundary's address, the marker its processes
// carry, the number alive, and the first k_authority_sample of them.
std::vector<std::string> authority_targets(const RunRecord& record,
                                           const std::vector<MemberInfo>& alive);

// Append the entry to `record` and save it durably. On failure the entry is
// taken out again (the record keeps only what is on disk) and the error
// says why: the forced kill must not be sent.
Result<void> record_authority(const RecordStore& store, RunRecord& record, AuthorityEntry entry);

// The same for a settler of a record another process may write too (the
// guardian, sweep): saved only if the file on disk is still `read`
// (RecordStore::replace_if_unchanged). False, with the entry taken out
// again, when it is not: another settler wrote it since.
Result<bool> record_authority(const RecordStore& store, const RunRecord& read, RunRecord& record,
                              AuthorityEntry entry);

}  // namespace treeguard
