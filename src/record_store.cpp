#include "record_store.hpp"

#include "port/file_io.hpp"
#include "state_dir.hpp"

#include <algorithm>
#include <cerrno>
#include <random>
#include <system_error>
#include <utility>

namespace treeguard {

namespace {

constexpr std::string_view k_record_suffix = ".json";

Error not_a_run_id(const std::string& run_id) {
  return errno_error(EINVAL, "\"" + run_id + "\" is not a run id");
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

// Read and parse one file; `expected_run_id` is what its name says.
Result<RunRecord> read_record_file(const std::filesystem::path& path,
                                   const std::string& expected_run_id) {
  auto text = read_file_untrusted(path, k_max_record_bytes);
  if (!text) {
    return fail(text.error());
  }
  auto record = parse_record(*text);
  if (!record) {
    return fail(plain_error("record " + path.string() + ": " + record.error().message()));
  }
  if (record->run_id != expected_run_id) {
    return fail(plain_error("record " + path.string() + ": holds run " + record->run_id
                            + ", not the run its name says"));
  }
  return record;
}

constexpr std::string_view k_settling_prefix = ".settling-";

// The run id of a record replace_if_unchanged() set aside (".settling-RUNID-NS-RANDOM").
std::optional<std::string> settling_run_id(const std::string& name) {
  if (!starts_with(name, k_settling_prefix)) {
    return std::nullopt;
  }
  const std::size_t last = name.rfind('-');
  const std::size_t second =
      last == std::string::npos || last == 0 ? std::string::npos : name.rfind('-', last - 1);
  if (second == std::string::npos || second < k_settling_prefix.size()) {
    return std::nullopt;
  }
  std::string run_id = name.substr(k_settling_prefix.size(), second - k_settling_prefix.size());
  if (!is_valid_run_id(run_id)) {
    return std::nullopt;
  }
  return run_id;
}

// What save() and finish() write: only a record that can be read back.
Result<std::string> checked_text(const RunRecord& record) {
  if (auto valid = validate_record(record); !valid) {
    return fail(
        plain_error("record of run " + record.run_id + " not saved: " + valid.error().message()));
  }
  std::string text = serialize_record(record);
  if (text.size() > k_max_record_bytes) {
    return fail(errno_error(EFBIG, "record of run " + record.run_id
                                       + " not saved: " + std::to_string(text.size()) + " bytes"));
  }
  return text;
}

// Every `<run_id>.json` of `dir`, as RecordStore::list() describes.
std::vector<StoredRecord> list_records(const std::filesystem::path& m_dir) {
  std::vector<StoredRecord> out;
  std::error_code error;
  std::filesystem::directory_iterator it(m_dir, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) {
      return out;
    }
    out.push_back(
        StoredRecord{".", m_dir, fail(Error{error, "read state directory " + m_dir.string()})});
    return out;
  }
  for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
    const std::filesystem::path& path = it->path();
    const std::string name = path.filename().string();
    if (starts_with(name, k_temp_prefix) || !ends_with(name, k_record_suffix)) {
      continue;
    }
    const std::string run_id = name.substr(0, name.size() - k_record_suffix.size());
    if (!is_valid_run_id(run_id)) {
      out.push_back(StoredRecord{
          name, path,
          fail(plain_error("record " + path.string() + ": file name is not <run id>.json"))});
      continue;
    }
    auto record = read_record_file(path, run_id);
    if (!record && record.error().code == std::errc::no_such_file_or_directory) {
      // Removed between the listing and the read: a concurrent run (make -j)
      // finished cleanly. Not a corrupt record.
      continue;
    }
    out.push_back(StoredRecord{name, path, std::move(record)});
  }
  if (error) {
    // A partial listing must not pass for a complete one.
    out.push_back(
        StoredRecord{".", m_dir, fail(Error{error, "read state directory " + m_dir.string()})});
  }
  std::sort(out.begin(), out.end(),
            [](const StoredRecord& a, const StoredRecord& b) { return a.file_name < b.file_name; });
  return out;
}

}  // namespace

RecordStore::RecordStore(std::filesystem::path dir) : m_dir(std::move(dir)) {}

std::filesystem::path RecordStore::path_for(const std::string& run_id) const {
  return m_dir / (run_id + std::string(k_record_suffix));
}

Result<void> RecordStore::save(const RunRecord& record, Durability durability) const {
  auto text = checked_text(record);
  if (!text) {
    return fail(text.error());
  }
  const bool durable = durability == Durability::durable;
  auto written = write_file_atomic(path_for(record.run_id), *text, durable);
  std::error_code ignored;
  if (written || written.error().code != std::errc::no_such_file_or_directory
      || std::filesystem::exists(std::filesystem::symlink_status(m_dir, ignored))) {
    return written;
  }
  // The state directory was removed while the run was going on (rm -rf,
  // a /tmp cleaner): a record that cannot be written is a run the gate
  // cannot see, so it is made again, checked as at the start, and the
  // record written into it. One that is refused now (another user made the
  // name first) is an error that says so.
  auto remade = prepare_state_dir(m_dir);
  if (!remade) {
    return fail(Error{remade.error().code, "record of run " + record.run_id
                                               + ": the state directory was removed, and "
                                                 "making it again failed: "
                                               + remade.error().message()});
  }
  return write_file_atomic(path_for(record.run_id), *text, durable);
}

std::filesystem::path RecordStore::finished_path_for(const std::string& run_id) const {
  return m_dir / k_finished_dir / (run_id + std::string(k_record_suffix));
}

Result<RunRecord> RecordStore::load(const std::string& run_id) const {
  if (!is_valid_run_id(run_id)) {
    return fail(not_a_run_id(run_id));
  }
  auto open = read_record_file(path_for(run_id), run_id);
  if (open || open.error().code != std::errc::no_such_file_or_directory) {
    return open;
  }
  auto finished = read_record_file(finished_path_for(run_id), run_id);
  if (!finished && finished.error().code == std::errc::no_such_file_or_directory) {
    return open;  // names the open file, as before finished records existed
  }
  return finished;
}

Result<void> RecordStore::write_finished(const RunRecord& record, Durability durability) const {
  auto text = checked_text(record);
  if (!text) {
    return fail(text.error());
  }
  // The subdirectory is checked like the state directory itself: ours, not
  // a symlink, not writable by others.
  TG_TRY(prepare_state_dir(m_dir / k_finished_dir));
  return write_file_atomic(finished_path_for(record.run_id), *text,
                           durability == Durability::durable);
}

Result<void> RecordStore::finish(const RunRecord& record, Durability durability) const {
  TG_TRY(write_finished(record, durability));
  return remove_file(path_for(record.run_id));
}

Result<bool> RecordStore::replace_if_unchanged(const RunRecord& read, const RunRecord& next,
                                               Durability durability) const {
  const DirectoryLock locked = lock();
  // The run's guardian writes the records of the runs nested in it
  // (NestedRecordPlace) while a settler of the run itself (the guardian's
  // takedown after the controller's death, sweep) goes on: what it wrote
  // there is kept, and is no reason for that settler to stand down. A
  // settler that changes the nested records itself (resolve) is compared
  // as it read them.
  if (next.nested == read.nested) {
    if (auto on_disk = load(next.run_id); on_disk && on_disk->nested != read.nested) {
      RunRecord read_now = read;
      RunRecord next_now = next;
      read_now.nested = next_now.nested = on_disk->nested;
      return replace_unlocked(read_now, next_now, durability);
    }
  }
  return replace_unlocked(read, next, durability);
}

Result<bool> RecordStore::save_own(RunRecord& record, Durability durability,
                                   std::optional<FileVersion>& written, bool remove) const {
  const DirectoryLock locked = lock();
  const std::filesystem::path path = path_for(record.run_id);
  if (written && file_version(path) != written) {
    // Someone else wrote it since: the guardian, with a nested run's record.
    if (auto on_disk = read_record_file(path, record.run_id); on_disk) {
      record.nested = on_disk->nested;
    }
  }
  if (record.disposition == Disposition::pass) {
    // The run's boundary is proven empty, and every leaf nested in it with
    // it: a nested run its guardian had not settled is over too.
    for (RunRecord& nested : record.nested) {
      if (nested.disposition == Disposition::pending) {
        nested.disposition = Disposition::pass;
        nested.phases.push_back(PhaseEntry{"settled", unix_time_ns()});
        nested.notes.push_back("ended with run " + record.run_id + "'s boundary, proven empty");
      }
    }
  }
  if (remove && record.nested.empty()) {
    TG_TRY(remove_file(path));
    written.reset();
    return true;
  }
  if (never_blocks_again(record) && (remove || record.disposition == Disposition::pass)) {
    TG_TRY(finish(record, durability));
    written.reset();
    return !remove;
  }
  TG_TRY(save(record, durability));
  written = file_version(path);
  return !remove;
}

Result<bool> NestedRecordPlace::replace_if_unchanged(const RunRecord& read, const RunRecord& next,
                                                     Durability durability) const {
  const DirectoryLock locked = m_store.lock();
  auto outer = read_record_file(m_store.path_for(m_outer), m_outer);
  if (!outer) {
    if (outer.error().code == std::errc::no_such_file_or_directory) {
      return false;  // the enclosing run is over: its boundary, the nested one's too, proven empty
    }
    return fail(outer.error());
  }
  RunRecord updated = *outer;
  auto entry = std::find_if(updated.nested.begin(), updated.nested.end(),
                            [&](const RunRecord& nested) { return nested.run_id == next.run_id; });
  if (entry == updated.nested.end()) {
    if (updated.nested.size() >= k_max_nested_records) {
      return fail(plain_error("the record of run " + m_outer + " holds the records of "
                              + std::to_string(k_max_nested_records) + " nested runs already: run "
                              + next.run_id + "'s is not kept"));
    }
    updated.nested.push_back(next);
  } else if (serialize_record(*entry) != serialize_record(read)) {
    return false;  // another settler wrote it since
  } else {
    *entry = next;
  }
  TG_TRY(m_store.save(updated, durability));
  return true;
}

Result<bool> RecordStore::replace_unlocked(const RunRecord& read, const RunRecord& next,
                                           Durability durability) const {
  if (!is_valid_run_id(next.run_id) || read.run_id != next.run_id) {
    return fail(not_a_run_id(next.run_id));
  }
  auto text = checked_text(next);
  if (!text) {
    return fail(text.error());
  }
  const bool durable = durability == Durability::durable;
  const bool finished = never_blocks_again(next);
  const std::filesystem::path target =
      finished ? finished_path_for(next.run_id) : path_for(next.run_id);
  // Names of this settler's own: two settlers of the same record must not
  // take each other's (one could remove a newer version the other set
  // aside).
  const std::string unique = next.run_id + "-" + std::to_string(unix_time_ns()) + "-"
                             + std::to_string(std::random_device()());
  // The new version is written (and made durable) first, under a temporary
  // name, so that the record is never missing from where readers look
  // (status, sweep, the gate) for longer than the compare below takes.
  // In the state directory: renamed into finished/ from there, on the same
  // file system.
  const std::filesystem::path staged = m_dir / (std::string(k_temp_prefix) + "settle-" + unique);
  TG_TRY(write_file_atomic(staged, *text, durable));
  std::error_code ignored;
  // Where `read` was read from: the open record, else (a finished run that
  // `sweep RUN` names) the finished one, as load() looks.
  const std::filesystem::path aside = m_dir / (std::string(k_settling_prefix) + unique);
  std::filesystem::path source = path_for(next.run_id);
  std::error_code error;
  std::filesystem::rename(source, aside, error);
  if (error == std::errc::no_such_file_or_directory) {
    source = finished_path_for(next.run_id);
    error.clear();
    std::filesystem::rename(source, aside, error);
  }
  if (error) {
    std::filesystem::remove(staged, ignored);
    if (error == std::errc::no_such_file_or_directory) {
      return false;  // the run removed it (a clean end), or another settler finished it
    }
    return fail(Error{error, "set aside record " + source.string()});
  }
  // Put back what was taken, unless a newer version was written meanwhile
  // (a link never replaces: the newer one wins).
  auto put_back = [&]() {
    std::filesystem::create_hard_link(aside, source, ignored);
    std::filesystem::remove(aside, ignored);
    std::filesystem::remove(staged, ignored);
  };
  // Compared as written: what was read, or written, reads back the same.
  auto taken = read_record_file(aside, next.run_id);
  if (!taken || serialize_record(*taken) != serialize_record(read)) {
    put_back();
    return false;
  }
  if (finished) {
    // Checked like the state directory itself (write_finished()).
    if (auto made = prepare_state_dir(m_dir / k_finished_dir); !made) {
      put_back();
      return fail(made.error());
    }
  }
  std::filesystem::rename(staged, target, error);
  if (error) {
    put_back();
    return fail(Error{error, "rename " + staged.string() + " to " + target.string()});
  }
  std::filesystem::remove(aside, ignored);
  if (durable) {
    // The rename is durable once its directory is. file_io fsyncs a
    // directory only as the last step of a durable write: one of an empty
    // file there, removed again, makes every entry before it durable.
    const std::filesystem::path sync =
        target.parent_path() / (std::string(k_temp_prefix) + "sync-" + unique);
    auto synced = write_file_atomic(sync, "", true);
    std::filesystem::remove(sync, ignored);
    if (!synced) {
      return fail(Error{synced.error().code,
                        "record " + target.string()
                            + " written but not durable: " + synced.error().message()});
    }
  }
  return true;
}

Result<std::size_t> RecordStore::prune_finished(std::size_t limit) const {
  std::vector<std::string> names;
  const std::filesystem::path dir = m_dir / k_finished_dir;
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error);
  if (error) {
    if (error == std::errc::no_such_file_or_directory) {
      return std::size_t{0};
    }
    return fail(Error{error, "read " + dir.string()});
  }
  for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (ends_with(name, k_record_suffix)
        && is_valid_run_id(
            std::string_view(name).substr(0, name.size() - k_record_suffix.size()))) {
      names.push_back(name);
    }
  }
  if (error) {
    return fail(Error{error, "read " + dir.string()});
  }
  if (names.size() <= limit) {
    return std::size_t{0};
  }
  // Run ids start with their UTC start time: the first names are the oldest.
  const std::size_t excess = names.size() - limit;
  std::partial_sort(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(excess),
                    names.end());
  for (std::size_t i = 0; i < excess; ++i) {
    TG_TRY(remove_file(dir / names[i]));
  }
  return excess;
}

Result<std::size_t> RecordStore::remove_abandoned_temps(std::chrono::seconds age) const {
  std::size_t removed = 0;
  const auto before = std::filesystem::file_time_type::clock::now() - age;
  // Every directory of the state directory that write_file_atomic() writes
  // in: the records', finished/, and units/ (the service manager's answers).
  for (const std::filesystem::path& dir :
       {m_dir, m_dir / k_finished_dir, m_dir / std::string(k_units_dir)}) {
    if (dir != m_dir) {
      // A subdirectory is read only as the state directory itself is
      // trusted (a directory of ours, never through a symlink to elsewhere:
      // DESIGN.md [state-dir]).
      std::error_code stat_error;
      if (!std::filesystem::exists(std::filesystem::symlink_status(dir, stat_error))) {
        continue;
      }
      TG_TRY(prepare_state_dir(dir));
    }
    std::error_code error;
    std::filesystem::directory_iterator it(dir, error);
    if (error) {
      if (error == std::errc::no_such_file_or_directory) {
        continue;
      }
      return fail(Error{error, "read " + dir.string()});
    }
    for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
      const std::filesystem::path& path = it->path();
      const std::string name = path.filename().string();
      const auto set_aside = settling_run_id(name);
      std::error_code stat_error;
      // Only a regular file of ours: never a symlink (nor what it points
      // at), a FIFO, or a file another user put there.
      if ((!starts_with(name, k_temp_prefix) && !(set_aside && dir == m_dir))
          || !check_own_regular_file(path)) {
        continue;
      }
      const auto written = std::filesystem::last_write_time(path, stat_error);
      if (stat_error || written > before) {
        continue;  // gone meanwhile, or a write that may still be in flight
      }
      if (set_aside) {
        // A settler killed while it held the record aside: the record goes
        // back where the gate reads it, unless a newer one is there (a link
        // never replaces).
        std::error_code ignored;
        std::filesystem::create_hard_link(path, path_for(*set_aside), ignored);
      }
      TG_TRY(remove_file(path));
      ++removed;
    }
    if (error) {
      return fail(Error{error, "read " + dir.string()});
    }
  }
  return removed;
}

Result<void> RecordStore::remove(const std::string& run_id) const {
  if (!is_valid_run_id(run_id)) {
    return fail(not_a_run_id(run_id));
  }
  return remove_file(path_for(run_id));
}

std::vector<StoredRecord> RecordStore::list() const {
  return list_records(m_dir);
}

std::vector<StoredRecord> RecordStore::list_finished() const {
  auto out = list_records(m_dir / k_finished_dir);
  for (StoredRecord& stored : out) {
    stored.finished = true;
  }
  return out;
}

}  // namespace treeguard
