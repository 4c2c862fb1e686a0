// --report FILE: one JSON document per run (schema in man/treeguard.1,
// section REPORT).
#pragma once

#include "record_journal.hpp"
#include "supervisor.hpp"

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string>

namespace treeguard {

// One member as the report (and `status RUN --json`) shows it: pid,
// start_time, escaped, and its name (comm, argv) as name_text() keeps it.
nlohmann::ordered_json member_json(const MemberInfo& member);

// The report of a finished run, as JSON text.
std::string make_report(const RunRecord& record, const std::vector<TimelineEntry>& timeline,
                        const RunOutcome& outcome, std::int64_t started_at, std::int64_t ended_at);

// Write it to `path` (atomically; the report is not the authority record,
// so no fsync).
Result<void> write_report(const std::filesystem::path& path, const std::string& json);

}  // namespace treeguard
