#include "authority.hpp"

#include <fmt/format.h>

namespace treeguard {

std::vector<std::string> authority_targets(const RunRecord& record,
                                           const std::vector<MemberInfo>& alive) {
  std::vector<std::string> targets{record.boundary.address};
  if (boundary_facts(record.boundary.kind).members_can_leave) {
    targets.push_back(fmt::format("processes marked TREEGUARD_RUNS={}", record.run_id));
  }
  targets.push_back(fmt::format("{} member(s) alive", alive.size()));
  for (std::size_t i = 0; i < alive.size() && i < k_authority_sample; ++i) {
    const std::string comm = name_text(alive[i].comm, k_max_comm);
    targets.push_back(
        comm.empty()
            ? fmt::format("pid {} start {}", alive[i].pid, alive[i].start_time)
            : fmt::format("pid {} start {} ({})", alive[i].pid, alive[i].start_time, comm));
  }
  if (alive.size() > k_authority_sample) {
    targets.push_back(fmt::format("... and {} more", alive.size() - k_authority_sample));
  }
  return targets;
}

Result<bool> record_authority(const RecordPlace& place, const RunRecord& read, RunRecord& record,
                              AuthorityEntry entry) {
  record.authority.push_back(std::move(entry));
  auto saved = place.replace_if_unchanged(read, record, Durability::durable);
  if (!saved || !*saved) {
    record.authority.pop_back();
  }
  return saved;
}

}  // namespace treeguard
