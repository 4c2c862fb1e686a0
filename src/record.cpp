#include "record.hpp"

#include <algorithm>

namespace treeguard {

bool operator==(const BoundaryAddress& a, const BoundaryAddress& b) {
  return a.kind == b.kind && a.address == b.address && a.pgid == b.pgid;
}

bool operator==(const PhaseEntry& a, const PhaseEntry& b) {
  return a.name == b.name && a.at == b.at;
}

bool operator==(const AuthorityEntry& a, const AuthorityEntry& b) {
  return a.at == b.at && a.action == b.action && a.targets == b.targets && a.reason == b.reason
         && a.by == b.by;
}

bool operator==(const RecordedDrain& a, const RecordedDrain& b) {
  return a.signal == b.signal && a.kill_after_ns == b.kill_after_ns;
}

bool operator==(const Resolution& a, const Resolution& b) {
  return a.why == b.why && a.at == b.at && a.by == b.by;
}

namespace {
bool same_members(const std::vector<MemberInfo>& a, const std::vector<MemberInfo>& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] || a[i].left_group != b[i].left_group || a[i].leads_group != b[i].leads_group
        || a[i].leads_session != b[i].leads_session || a[i].comm != b[i].comm
        || a[i].argv != b[i].argv) {
      return false;
    }
  }
  return true;
}
}  // namespace

bool operator==(const RunRecord& a, const RunRecord& b) {
  return a.run_id == b.run_id && a.boot_id == b.boot_id && a.machine_id == b.machine_id
         && a.pid_ns == b.pid_ns && a.pid_ns_init == b.pid_ns_init && a.controller == b.controller
         && a.guardian == b.guardian && a.reaper == b.reaper && a.last_look == b.last_look
         && a.boundary == b.boundary && a.drain == b.drain && a.command == b.command
         && a.cwd == b.cwd && a.phases == b.phases && a.authority == b.authority
         && same_members(a.members, b.members) && a.disposition == b.disposition
         && a.exit_code == b.exit_code && a.notes == b.notes && a.resolution == b.resolution
         && a.nested == b.nested;
}

bool leaf_within(const std::string& leaf, const std::string& outer) {
  return leaf.compare(0, outer.size() + 1, outer + "/") == 0;
}

bool never_blocks_again(const RunRecord& record) {
  if (!record.resolution && record.disposition != Disposition::pass) {
    return false;
  }
  return std::all_of(record.nested.begin(), record.nested.end(), [](const RunRecord& nested) {
    return nested.resolution || nested.disposition == Disposition::pass;
  });
}

const RunRecord* nested_record(const RunRecord& record, const std::string& run_id) {
  for (const RunRecord& nested : record.nested) {
    if (nested.run_id == run_id) {
      return &nested;
    }
  }
  return nullptr;
}

void keep_members(RunRecord& record, const std::vector<MemberInfo>& all) {
  const std::size_t kept = std::min(all.size(), k_max_recorded_members);
  record.members.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(kept));
  if (all.size() > kept
      && std::find(record.notes.begin(), record.notes.end(), "members truncated")
             == record.notes.end()) {
    record.notes.push_back("members truncated");
  }
}

}  // namespace treeguard
