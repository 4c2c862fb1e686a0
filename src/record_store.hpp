// The records of a state directory: one file per run, `<run_id>.json`.
// Open runs (pending, or failed/ambiguous and unresolved: everything that
// can block dispatch) are in the directory itself; finished ones (pass, or
// resolved), when kept, in its `finished/` subdirectory, so that the gate of
// every launch reads only what can block, however many records are kept.
//
// Many runs share the directory at once (make -j), so a run only ever
// writes its own file, and every write replaces the file atomically
// (write_file_atomic): concurrent runs never lose or mix records, and a
// reader never sees half a record. Reading treats every file as untrusted.
#pragma once

#include "port/file_io.hpp"
#include "record.hpp"
#include "result.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <optional>
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
  // Listed by list_finished(): kept apart, never read by the gate.
  bool finished = false;
  // `treeguard status`: a nested run's record, held by the guardian of this
  // run (live) or kept in its record (RunRecord::nested); empty otherwise.
  std::string nested_in = {};
  bool held_live = false;
};

// The subdirectory of finished records.
inline constexpr std::string_view k_finished_dir = "finished";

// How many finished records `treeguard run` keeps unless told otherwise
// (--keep-limit); older ones are removed when a run adds one.
inline constexpr std::size_t k_default_keep_limit = 1000;

// Where a settler writes the record of the run it settles
// (after_death.hpp, authority.hpp): the run's own file (RecordStore), or its
// entry in the record of the run it is nested in (NestedRecordPlace).
class RecordPlace {
public:
  virtual ~RecordPlace() = default;
  // Replace the run's record with `next` only if it is still `read` (as the
  // settler read it, or last wrote it): RecordStore::replace_if_unchanged.
  virtual Result<bool> replace_if_unchanged(const RunRecord& read, const RunRecord& next,
                                            Durability durability) const = 0;
};

class RecordStore : public RecordPlace {
public:
  // The store of `dir`, which prepare_state_dir() has checked.
  explicit RecordStore(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return m_dir; }

  // `<dir>/<run_id>.json`. `run_id` must be valid (is_valid_run_id).
  std::filesystem::path path_for(const std::string& run_id) const;

  // `<dir>/finished/<run_id>.json`, where finish() keeps a finished record.
  std::filesystem::path finished_path_for(const std::string& run_id) const;

  // Write `record` as `<run_id>.json`, replacing any previous version.
  // Refuses a record that validate_record() rejects or that would exceed
  // k_max_record_bytes: what is written can always be read back.
  // A state directory removed meanwhile is made again (prepare_state_dir,
  // with its checks) and the record written there, so a run whose
  // directory was deleted under it still has the record the gate reads.
  Result<void> save(const RunRecord& record, Durability durability) const;

  // The record of `run_id`, open or finished, checked like list() checks
  // it. ENOENT in the error's code when there is none.
  Result<RunRecord> load(const std::string& run_id) const;

  // Keep `record` (pass, or resolved) among the finished ones: written as
  // `finished/<run_id>.json` first, then its open file is removed, so a
  // crash between the two leaves both, never neither. Same checks as save().
  Result<void> finish(const RunRecord& record, Durability durability) const;

  // The one write of every settler (the gate, a guardian, sweep): `next`
  // replaces the open record of its run only if that file is still `read`
  // (the record as this settler read it, or last wrote it; where there is
  // no open one, the finished one: a finished run `sweep RUN` names). That
  // file is first taken aside (renamed to a name list() skips), so no other
  // settler's version can be replaced: if it is gone (its run finished by
  // itself, or another settler finished it) or no longer `read` (a guardian
  // or sweep wrote it since: `failed`, an authority entry), nothing is
  // written, the newer version stays, and the result is false. Else `next`
  // is kept among the finished records when it is pass or resolved
  // (finish()), else written as the open record (save()), and the result is
  // true. Same checks as save().
  // Taken under the directory's lock (file_io.hpp), as every write of a
  // record two processes write. The records of nested runs the file holds
  // (RunRecord::nested) are not compared, and are kept, unless `next`
  // changes them.
  Result<bool> replace_if_unchanged(const RunRecord& read, const RunRecord& next,
                                    Durability durability) const override;

  // The writes of a run's own controller (RecordJournal) to a record its
  // guardian may write too (the records of the runs nested in it,
  // RunRecord::nested), under the directory's lock: `record` is saved, and
  // if the file is no longer the version this controller last wrote
  // (`written`, updated here), the nested runs' records it holds are taken
  // into `record` first, so that none is lost. Where the record is to be
  // removed (`remove`: a clean end), it is removed only if it then holds
  // none; else it is kept (finish() when never_blocks_again(), else saved
  // open), and the result says so: false.
  Result<bool> save_own(RunRecord& record, Durability durability,
                        std::optional<FileVersion>& written, bool remove = false) const;

  // Hold the directory's lock (DirectoryLock) while `then` reads and writes.
  DirectoryLock lock() const { return DirectoryLock(m_dir); }

  // Remove the oldest finished records (run ids sort by start time) until
  // at most `limit` are left. Returns how many were removed.
  Result<std::size_t> prune_finished(std::size_t limit) const;

  // Remove the temporary files (k_temp_prefix) of writes abandoned at least
  // `age` ago, in the directory, in finished/ and in units/ (k_units_dir): a
  // writer killed between its temporary file and the rename leaves one,
  // which nothing else removes. A write in flight lasts milliseconds; only
  // regular files of the effective user are removed (never through a
  // symlink), and a subdirectory is read only if prepare_state_dir() trusts
  // it (not a symlink, ours, not writable by others; else the error). A
  // record replace_if_unchanged() set aside that
  // long ago (its settler was killed) is put back as the open record,
  // unless a newer one is there, rather than lost. Returns how many were
  // removed.
  Result<std::size_t> remove_abandoned_temps(std::chrono::seconds age) const;

  // Delete the open record of `run_id`. A missing record counts as removed.
  Result<void> remove(const std::string& run_id) const;

  // Every open record: each `*.json` file of the directory, sorted by name;
  // temporary files of
  // writes in flight (k_temp_prefix) are skipped. Nothing is dropped
  // silently: a bad file is listed with its error. A missing directory is
  // an empty list; a directory that cannot be read is listed as one entry
  // with file_name "." and the error.
  std::vector<StoredRecord> list() const;

  // The finished records (`finished/`), checked and sorted like list()'s.
  std::vector<StoredRecord> list_finished() const;

private:
  Result<bool> replace_unlocked(const RunRecord& read, const RunRecord& next,
                                Durability durability) const;
  // finish() without removing the open record.
  Result<void> write_finished(const RunRecord& record, Durability durability) const;

  std::filesystem::path m_dir;
};

// The record of a run nested in the leaf of run `outer`, which that run's
// guardian holds (the nested run writes no file of its own): kept, as far
// as evidence needs it, among `outer`'s record's nested runs' records. A
// settler's write replaces that entry only if it is still `read` (or, the
// first time, there is none yet), under the directory's lock; none is
// written once `outer`'s record is gone (the run is over, its boundary
// proven empty), nor beyond k_max_nested_records.
class NestedRecordPlace final : public RecordPlace {
public:
  NestedRecordPlace(const RecordStore& store, std::string outer)
      : m_store(store), m_outer(std::move(outer)) {}
  Result<bool> replace_if_unchanged(const RunRecord& read, const RunRecord& next,
                                    Durability durability) const override;

private:
  const RecordStore& m_store;
  std::string m_outer;
};

}  // namespace treeguard
