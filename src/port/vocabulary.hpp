// The words the core and every platform share: the boundary kinds and
// requests, a run's disposition, the clock. It includes nothing of
// treeguard's own (scripts/check_seams.sh checks that), so any header may
// include it.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

enum class BoundaryKind { cgroup, process_group, job, pid_namespace };

// What --boundary asks for: the strongest boundary the host allows, or one kind.
enum class BoundaryRequest { automatic, cgroup, process_group, job, pid_namespace };

// One table of names, read both ways: "auto", "cgroup", "process-group",
// "job", "pid-namespace" are what users type (--boundary,
// TREEGUARD_BOUNDARY) and what records, reports and -v carry.
std::string_view boundary_kind_name(BoundaryKind kind);
std::optional<BoundaryKind> boundary_kind_named(std::string_view name);
std::string_view boundary_request_name(BoundaryRequest request);
std::optional<BoundaryRequest> boundary_request_named(std::string_view name);
// Every request's name, in the table's order (the CLI's choices).
std::vector<std::string> boundary_request_names();
// The kind a request demands; nullopt for auto.
std::optional<BoundaryKind> demanded_kind(BoundaryRequest request);

// A run's disposition, as its record says: pending until the run is
// settled; then pass, failed or ambiguous.
enum class Disposition { pending, pass, failed, ambiguous };

std::string_view disposition_name(Disposition disposition);

}  // namespace treeguard
