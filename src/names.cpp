// The names boundaries and dispositions go by in records, reports and
// messages: one table each, shared by the run, the record parser and
// the fuzzer.
#include "journal.hpp"
#include "port/boundary.hpp"

namespace treeguard {

namespace {

struct BoundaryName {
  std::string_view name;
  BoundaryRequest request;
  std::optional<BoundaryKind> kind;  // nullopt: auto, a request and no kind
};

constexpr BoundaryName k_boundary_names[] = {
    {"auto", BoundaryRequest::automatic, std::nullopt},
    {"cgroup", BoundaryRequest::cgroup, BoundaryKind::cgroup},
    {"process-group", BoundaryRequest::process_group, BoundaryKind::process_group},
    {"job", BoundaryRequest::job, BoundaryKind::job},
    {"pid-namespace", BoundaryRequest::pid_namespace, BoundaryKind::pid_namespace},
};

// find_entry: the table's first entry that MATCHES, or null
template <typename Match>
const BoundaryName* find_entry(Match matches) {
  for (const auto& entry : k_boundary_names) {
    if (matches(entry)) {
      return &entry;
    }
  }
  return nullptr;
}

}  // namespace

std::string_view boundary_kind_name(BoundaryKind kind) {
  const auto* entry = find_entry([&](const BoundaryName& e) { return e.kind == kind; });
  return entry != nullptr ? entry->name : "unknown";
}

std::optional<BoundaryKind> boundary_kind_named(std::string_view name) {
  const auto* entry = find_entry([&](const BoundaryName& e) { return e.name == name; });
  return entry != nullptr ? entry->kind : std::nullopt;
}

std::string_view boundary_request_name(BoundaryRequest request) {
  const auto* entry = find_entry([&](const BoundaryName& e) { return e.request == request; });
  return entry != nullptr ? entry->name : "unknown";
}

std::optional<BoundaryRequest> boundary_request_named(std::string_view name) {
  const auto* entry = find_entry([&](const BoundaryName& e) { return e.name == name; });
  return entry != nullptr ? std::optional<BoundaryRequest>(entry->request) : std::nullopt;
}

std::vector<std::string> boundary_request_names() {
  std::vector<std::string> names;
  for (const auto& entry : k_boundary_names) {
    names.emplace_back(entry.name);
  }
  return names;
}

std::optional<BoundaryKind> demanded_kind(BoundaryRequest request) {
  const auto* entry = find_entry([&](const BoundaryName& e) { return e.request == request; });
  return entry != nullptr ? entry->kind : std::nullopt;
}

std::string_view disposition_name(Disposition disposition) {
  switch (disposition) {
  case Disposition::pending:
    return "pending";
  case Disposition::pass:
    return "pass";
  case Disposition::failed:
    return "failed";
  case Disposition::ambiguous:
    return "ambiguous";
  }
  return "unknown";
}

}  // namespace treeguard
