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

// What a boundary of a kind can do. The core asks these, never which kind
// a boundary is: a new kind states its facts here, and the core follows.
struct BoundaryFacts {
  // Its address is known only once COMMAND's process exists (COMMAND's
  // process group): the record is first written at spawn, COMMAND held
  // before exec, not before the boundary forms.
  bool records_at_spawn = false;
  // A member can leave it (setsid and a double fork leave a process group):
  // the takedown also claims the processes carrying the run's marker, and a
  // run that fell back to it is told how to get a boundary none can leave.
  bool members_can_leave = false;
  // Boundaries of its kind nest: a nested run's lies inside the enclosing
  // run's address (a cgroup leaf in a leaf), so the enclosing run's
  // guardian can guard the nested run.
  bool nests = false;
  // It takes processes in: --leftovers outer can hand a nested run's
  // leftovers to it (a pid namespace takes none in).
  bool takes_members_in = false;
  // Its members stay in it for good, and in every one it is nested in (a
  // job): it takes members only from a boundary of that sort, and its own
  // go only to one.
  bool keeps_members_for_good = false;
  // Processes come into it only as orphans its controller reaps (a process
  // group under a subreaper): it takes a nested run's leftovers only where
  // that run's orphans go to its controller.
  bool takes_in_orphans = false;
};

constexpr BoundaryFacts boundary_facts(BoundaryKind kind) {
  BoundaryFacts facts;
  switch (kind) {
  case BoundaryKind::cgroup:
    facts.nests = true;
    facts.takes_members_in = true;
    break;
  case BoundaryKind::process_group:
    facts.records_at_spawn = true;
    facts.members_can_leave = true;
    facts.takes_members_in = true;
    facts.takes_in_orphans = true;
    break;
  case BoundaryKind::job:
    facts.takes_members_in = true;
    facts.keeps_members_for_good = true;
    break;
  case BoundaryKind::pid_namespace:
    break;
  }
  return facts;
}

// A run's disposition, as its record says: pending until the run is
// settled; then pass, failed or ambiguous.
enum class Disposition { pending, pass, failed, ambiguous };

std::string_view disposition_name(Disposition disposition);

}  // namespace treeguard
