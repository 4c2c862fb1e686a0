// The records of a state directory: one file per run, `<run_id>.json`.
//
// Many runs share the directory at once (make -j), so a run only ever
// writes its own file, and every write replaces the file atomically
// (write_file_atomic): concurrent runs never lose or mix records, and a
// reader never sees half a record. Reading treats every file as untrusted.
#pragma once

#include "record.hpp"
#include "result.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace treeguard {

// How hard save() works to make the record survive a crash.
enum class Durability {
  lazy,    // atomic replace, no fsync: the common path (spawn, phases, pass)
  durable  // fsync file and directory: authority entries, failed/ambiguous
};

// One file of the directory as list() found it. `record` holds the error
// when the file could not be read, does not parse, is foreign (owned by
// someone else, a symlink, not a regular file) or is named for another run.
struct StoredRecord {
  std::string file_name;
  std::filesystem::path path;
  Result<RunRecord> record;
};

class RecordStore {
public:
  // The store of `dir`, which prepare_state_dir() has checked.
  explicit RecordStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return m_dir; }

  // `<dir>/<run_id>.json`. `run_id` must be valid (is_valid_run_id).
  std::filesystem::path path_for(const std::string& run_id) const;

  // Write `record` as `<run_id>.json`, replacing any previous version.
  // Refuses a record that validate_record() rejects or that would exceed
  // k_max_record_bytes: what is written can always be read back.
  Result<void> save(const RunRecord& record, Durability durability) const;

  // The record of `run_id`, checked like list() checks it. ENOENT in the
  // error's code when there is none.
  Result<RunRecord> load(const std::string& run_id) const;

  // Delete the record of `run_id`. A missing record counts as removed.
  Result<void> remove(const std::string& run_id) const;

  // Every `*.json` file of the directory, sorted by name; temporary files of
  // writes in flight (k_temp_prefix) are skipped. Nothing is dropped
  // silently: a bad file is listed with its error. A missing directory is
  // an empty list; a directory that cannot be read is listed as one entry
  // with file_name "." and the error.
  std::vector<StoredRecord> list() const;

private:
  std::filesystem::path m_dir;
};

}  // namespace treeguard
