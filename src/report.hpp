// --report FILE: one JSON document per run, written for a person reading a
// CI log as much as for a program (its fields: man/treeguard.1, section
// REPORT). What the report shows of a process, an authority entry or a time
// is shown the same way by `status RUN --json`: the functions below are the
// one rendering of each.
#pragma once

#include "record_journal.hpp"
#include "supervisor.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace treeguard {

// The report's format marker; a change that breaks its readers changes it.
inline constexpr const char* k_report_format = "treeguard-report/2";

// One member: pid, start_time, its name (comm, argv, as name_text() keeps
// them) and whether it left COMMAND's process group or session.
nlohmann::ordered_json member_json(const MemberInfo& member);

// One write-ahead authority entry, its time as add_time() gives it.
nlohmann::ordered_json authority_json(const AuthorityEntry& entry);

// A time (ns since the Unix epoch) as the report gives every time: "<key>"
// in RFC 3339 and "<key>_unix_ns", added to `out`.
void add_time(nlohmann::ordered_json& out, const std::string& key, std::int64_t unix_ns);

// Everything the report of a finished run is made of.
struct ReportInput {
  const RunRecord& record;
  const std::vector<TimelineEntry>& timeline;
  const RunOutcome& outcome;
  const RunPolicy& policy;  // what was asked for: deadline, grace, signal, leftovers
  std::int64_t started_at = 0;
  std::int64_t ended_at = 0;
};

// The report of a finished run, as JSON text.
std::string make_report(const ReportInput& run);

// Write it to `path` (atomically; the report is not the authority record,
// so no fsync).
Result<void> write_report(const std::filesystem::path& path, const std::string& json);

}  // namespace treeguard
