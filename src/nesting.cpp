#include "nesting.hpp"

#include "printable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

namespace treeguard {

const std::string& inherited_runs() {
  static const std::string runs = [] {
    const char* marker = std::getenv(k_run_marker);
    return std::string(marker != nullptr ? marker : "");
  }();
  return runs;
}

bool run_is_over(const RunRecord& record) {
  return record.disposition != Disposition::pending || record.resolution.has_value();
}

Result<EnclosingRun> leftovers_taker(const RecordStore& store, const RunRecord& self) {
  const std::string id = innermost_run(inherited_runs());
  if (id.empty()) {
    return fail(plain_error(
        fmt::format("not inside a treeguard run: no {} in the environment", k_run_marker)));
  }
  auto record = store.load(id);
  if (!record) {
    return fail(plain_error(
        fmt::format("run {} has no record in the state directory {}: give both runs the same "
                    "--state-dir or TREEGUARD_STATE_DIR",
                    escaped(id), store.dir().string())));
  }
  if (run_is_over(*record)) {
    return fail(plain_error(fmt::format("run {} is over", id)));
  }
  const BoundaryKind kind = record->boundary.kind;
  const BoundaryFacts taker = boundary_facts(kind);
  if (!taker.takes_members_in) {
    return fail(plain_error(
        fmt::format("run {}'s {} boundary takes no processes in", id, boundary_kind_name(kind))));
  }
  // A job's members stay in every job it is nested in (Windows has no
  // moving out of a job): a job is handed to only by a job nested in it,
  // and hands to nothing else.
  if (taker.keeps_members_for_good != boundary_facts(self.boundary.kind).keeps_members_for_good) {
    return fail(
        plain_error(fmt::format("run {}'s {} boundary cannot take a {} boundary's members", id,
                                boundary_kind_name(kind), boundary_kind_name(self.boundary.kind))));
  }
  if (taker.takes_in_orphans && (!self.reaper || *self.reaper != record->controller)) {
    return fail(plain_error(fmt::format(
        "run {}'s controller (pid {}) is not where this run's orphans go ({})", id,
        record->controller.pid,
        self.reaper ? fmt::format("pid {}", self.reaper->pid) : std::string("unknown"))));
  }
  return EnclosingRun{id, kind, record->boundary.address};
}

std::vector<std::string> enclosing_runs() {
  std::vector<std::string> runs;
  const std::string& marker = inherited_runs();
  std::size_t at = 0;
  while (at < marker.size()) {
    const std::size_t end = std::min(marker.find(' ', at), marker.size());
    if (end > at) {
      runs.push_back(marker.substr(at, end - at));
    }
    at = end + 1;
  }
  std::reverse(runs.begin(), runs.end());
  return runs;
}

bool names_taken_run(const RunRecord& record, const Announcement& announced) {
  return record.run_id == announced.run_id && boundary_facts(record.boundary.kind).nests
         && record.boundary.address == announced.leaf;
}

}  // namespace treeguard
