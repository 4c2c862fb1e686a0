// The names boundaries and dispositions go by in records, reports and
// messages: one table each, shared by the run, the record parser and
// the fuzzer.
#include "boundary.hpp"
#include "journal.hpp"

namespace treeguard {

std::string_view boundary_kind_name(BoundaryKind kind) {
  switch (kind) {
  case BoundaryKind::cgroup:
    return "cgroup";
  case BoundaryKind::process_group:
    return "process-group";
  case BoundaryKind::job:
    return "job";
  case BoundaryKind::pid_namespace:
    return "pid-namespace";
  }
  return "unknown";
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
