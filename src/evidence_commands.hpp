// The evidence commands (DESIGN.md [report]): `treeguard status [--json]`,
// `treeguard sweep [RUN]` and `treeguard resolve RUN --why TEXT`. main.cpp
// parses the command line and calls the first three; they find the state
// directory and the host, and call the ones below, which print and return
// the exit code (testable with any HostView and FILE*).
#pragma once

#include "cli.hpp"
#include "gate.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "result.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace treeguard {

int command_status(const StatusOptions& options);
int command_sweep(const SweepOptions& options);
int command_resolve(const ResolveOptions& options);

// The status report of `records` (RecordStore::list()): one entry per file,
// with run id, disposition, whether the controller of a pending run is alive
// ("finished" for the others), boundary, command and the finding that
// blocks dispatch, if any; `with_members`: also every member by name. Text
// for humans (control characters in recorded strings shown as '?'), or a
// JSON array.
std::string format_status_text(const std::vector<StoredRecord>& records, const HostView& host,
                               bool with_members = false);
std::string format_status_json(const std::vector<StoredRecord>& records, const HostView& host,
                               bool with_members = false);

// `treeguard status [RUN]`: checks the state directory (prepare_state_dir),
// prints the report on `out` (with `run_id`: that run only, members
// included). Exit 0; 121 when a run listed blocks dispatch (as `run` would
// refuse); 125 with one line on `err` when the state directory is unusable
// or holds no run `run_id`.
int command_status(const std::filesystem::path& state_dir, bool json, const HostView& host,
                   std::FILE* out, std::FILE* err,
                   const std::optional<std::string>& run_id = std::nullopt);

// `treeguard sweep [RUN]`: checks the state directory (prepare_state_dir),
// then sweep_runs(). 125 with one line on `err` when it is unusable.
int command_sweep(const std::filesystem::path& state_dir, const std::optional<std::string>& run_id,
                  const HostView& host, std::FILE* out, std::FILE* err);

// Record that a human dealt with run `run_id`: sets its resolution to
// {why, at, by} and saves it durably. Refuses (Error, nothing written) an
// invalid run id, an empty `why`, a missing, corrupt or foreign record, a
// record already resolved, and a pending run whose controller or guardian
// is still alive. Returns the record as saved.
Result<RunRecord> resolve_run(const RecordStore& store, const std::string& run_id,
                              const std::string& why, const HostView& host, std::int64_t at,
                              const std::string& by);

// What `resolve` warns of, having resolved `record`: members of it still
// alive (named by pid), or its boundary still holding members, with the
// command that takes them down. Only for a run of this boot and namespace
// whose controller is dead; nullopt when nothing is seen alive.
std::optional<std::string> still_alive_warning(const RunRecord& record,
                                               const std::filesystem::path& state_dir,
                                               const HostView& host);

// `treeguard resolve RUN --why TEXT`: resolve_run() with the current time
// and user. Exit 0 and "treeguard: resolved run RUN" on `out` (and
// still_alive_warning() on `err`, when there is one); 125 and one line
// "treeguard: error: ..." on `err` otherwise.
int command_resolve(const std::filesystem::path& state_dir, const std::string& run_id,
                    const std::string& why, const HostView& host, std::FILE* out, std::FILE* err);

}  // namespace treeguard
