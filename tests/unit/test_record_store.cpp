// RecordStore and the POSIX file I/O under it. Faults are real where the
// host allows: a full tmpfs (ENOSPC) and a read-only bind mount (EROFS),
// both only as root; fsync's EIO is injected by tests/fault instead.
#include "port/file_io.hpp"
#include "record_fixtures.hpp"
#include "record_store.hpp"
#include "state_dir.hpp"

#include <doctest/doctest.h>

#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

using namespace treeguard;
using namespace treeguard::test;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string error_of(const StoredRecord& stored) {
  return stored.record ? std::string("(parsed)") : stored.record.error().message();
}

// A mount that is undone at scope exit, whatever the test did.
class ScopedMount {
public:
  explicit ScopedMount(fs::path target) : m_target(std::move(target)) {}
  ScopedMount(const ScopedMount&) = delete;
  ScopedMount& operator=(const ScopedMount&) = delete;
  ~ScopedMount() {
    if (m_mounted) {
      ::umount2(m_target.c_str(), MNT_DETACH);
    }
  }
  bool tmpfs(const char* options) {
    m_mounted = ::mount("tmpfs", m_target.c_str(), "tmpfs", 0, options) == 0;
    return m_mounted;
  }
  bool read_only_bind() {
    m_mounted = ::mount(m_target.c_str(), m_target.c_str(), nullptr, MS_BIND, nullptr) == 0;
    return m_mounted
           && ::mount(nullptr, m_target.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr)
                  == 0;
  }

private:
  fs::path m_target;
  bool m_mounted = false;
};

// Why this host cannot give the storage fault cases their mounts, "" when it
// can: they need root, a tmpfs and a read-only bind remount, tried once in a
// scratch directory (a chroot or a container may allow neither).
const std::string& storage_faults_unavailable() {
  static const std::string why = []() -> std::string {
    if (::geteuid() != 0) {
      return "mounting a tmpfs or a read-only bind mount needs root";
    }
    char scratch[] = "/tmp/tg-mount-probe.XXXXXX";
    if (::mkdtemp(scratch) == nullptr) {
      return std::string("no scratch directory for the mount probe: ") + std::strerror(errno);
    }
    std::string out;
    {
      ScopedMount mount(scratch);
      if (!mount.tmpfs("size=64k,mode=0700")) {
        out = std::string("cannot mount a tmpfs here: ") + std::strerror(errno);
      }
    }
    if (out.empty()) {
      ScopedMount mount(scratch);
      if (!mount.read_only_bind()) {
        out = std::string("cannot remount a bind mount read-only here: ") + std::strerror(errno);
      }
    }
    ::rmdir(scratch);
    return out;
  }();
  return why;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::RecordStore");

TEST_CASE("save, load, list, remove") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  const RunRecord record = full_record("20240131T235959-4242-0a9f");

  SUBCASE("a saved record loads back equal, as <run_id>.json, mode 0600, no temp left") {
    for (Durability durability : {Durability::lazy, Durability::durable}) {
      REQUIRE(store.save(record, durability));
      auto loaded = store.load(record.run_id);
      REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
      CHECK(*loaded == record);
    }
    CHECK(names_in(scratch.path()) == std::vector<std::string>{"20240131T235959-4242-0a9f.json"});
    struct stat info {};
    REQUIRE(::stat(store.path_for(record.run_id).c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0600);
  }
  SUBCASE("a state directory removed mid-run is made again, private, and the record written") {
    const fs::path dir = scratch.path() / "state";
    REQUIRE(prepare_state_dir(dir));
    const RecordStore removed_store(dir);
    REQUIRE(removed_store.save(record, Durability::lazy));
    fs::remove_all(dir);
    auto saved = removed_store.save(record, Durability::durable);
    REQUIRE_MESSAGE(saved, (saved ? "" : saved.error().message()));
    auto loaded = removed_store.load(record.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == record);
    struct stat info {};
    REQUIRE(::lstat(dir.c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0700);
  }
  SUBCASE("one that cannot be made again safely is an error that says so") {
    const fs::path parent = scratch.path() / "parent";
    const fs::path dir = parent / "state";
    REQUIRE(prepare_state_dir(dir));
    const RecordStore removed_store(dir);
    fs::remove_all(dir);
    // Whoever may write the parent could move the directory away again.
    REQUIRE(::chmod(parent.c_str(), 0777) == 0);
    auto saved = removed_store.save(record, Durability::durable);
    REQUIRE_FALSE(saved);
    CHECK(saved.error().message().find("the state directory was removed, and making it again "
                                       "failed")
          != std::string::npos);
    CHECK_FALSE(fs::exists(dir));
  }
  SUBCASE("saving again replaces the record") {
    REQUIRE(store.save(record, Durability::lazy));
    RunRecord changed = record;
    changed.disposition = Disposition::ambiguous;
    changed.notes.push_back("later");
    REQUIRE(store.save(changed, Durability::durable));
    auto loaded = store.load(record.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == changed);
  }
  SUBCASE("load of a missing run says ENOENT; bad run ids never reach the file system") {
    auto missing = store.load("20240101T000000-1-0000");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code == std::errc::no_such_file_or_directory);
    auto traversal = store.load("../../etc/passwd");
    REQUIRE_FALSE(traversal);
    CHECK(traversal.error().code == std::errc::invalid_argument);
    CHECK_FALSE(store.remove("../x"));
  }
  SUBCASE("remove deletes, and a missing record counts as removed") {
    REQUIRE(store.save(record, Durability::lazy));
    CHECK(store.remove(record.run_id));
    CHECK(names_in(scratch.path()).empty());
    CHECK(store.remove(record.run_id));
  }
  SUBCASE("save refuses what could not be read back") {
    RunRecord invalid = record;
    invalid.controller.pid = 0;
    auto refused = store.save(invalid, Durability::lazy);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message()
          == "record of run 20240131T235959-4242-0a9f not saved: field controller.pid: must be "
             "between 1 and 2147483647");
    RunRecord huge = record;
    huge.notes.assign(2, std::string(600 * 1024, 'n'));
    auto too_big = store.save(huge, Durability::lazy);
    REQUIRE_FALSE(too_big);
    CHECK(too_big.error().code == std::errc::file_too_large);
    CHECK(names_in(scratch.path()).empty());
  }
  SUBCASE("list of a missing directory is empty") {
    const RecordStore nowhere(scratch.path() / "absent");
    CHECK(nowhere.list().empty());
  }
}

TEST_CASE("finished records are kept apart from open ones, and pruned oldest first") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  RunRecord record = full_record("20240131T235959-4242-0a9f");
  record.disposition = Disposition::pass;

  SUBCASE("finish moves the record out of the open ones; load still finds it") {
    REQUIRE(store.save(record, Durability::lazy));
    REQUIRE(store.finish(record, Durability::lazy));
    CHECK(store.list().empty());
    const auto finished = store.list_finished();
    REQUIRE(finished.size() == 1);
    REQUIRE(finished[0].record);
    CHECK(*finished[0].record == record);
    CHECK(finished[0].path == store.finished_path_for(record.run_id));
    auto loaded = store.load(record.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == record);
    struct stat info {};
    REQUIRE(::stat((scratch.path() / "finished").c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 0700);
  }
  SUBCASE("finish refuses what could not be read back, and leaves the open record") {
    REQUIRE(store.save(record, Durability::lazy));
    RunRecord invalid = record;
    invalid.controller.pid = 0;
    CHECK_FALSE(store.finish(invalid, Durability::lazy));
    CHECK(store.list().size() == 1);
    CHECK(store.list_finished().empty());
  }
  SUBCASE("prune_finished keeps the newest `limit`") {
    const std::vector<std::string> ids = {"20240101T000003-1-0000", "20240101T000001-1-0000",
                                          "20240101T000004-1-0000", "20240101T000002-1-0000"};
    for (const std::string& id : ids) {
      RunRecord kept = record;
      kept.run_id = id;
      kept.boundary.address = "/sys/fs/cgroup/treeguard-" + id;
      REQUIRE(store.finish(kept, Durability::lazy));
    }
    auto pruned = store.prune_finished(4);
    REQUIRE(pruned);
    CHECK(*pruned == 0);
    pruned = store.prune_finished(2);
    REQUIRE(pruned);
    CHECK(*pruned == 2);
    CHECK(
        names_in(scratch.path() / "finished")
        == std::vector<std::string>{"20240101T000003-1-0000.json", "20240101T000004-1-0000.json"});
    CHECK(*store.prune_finished(0) == 2);
    CHECK(store.list_finished().empty());
  }
  SUBCASE("prune of a store that never finished a record does nothing") {
    auto pruned = store.prune_finished(0);
    REQUIRE(pruned);
    CHECK(*pruned == 0);
  }
}

TEST_CASE("replace_if_unchanged writes a record only if it is still the one that was read") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  RunRecord read = minimal_record("20240101T000000-1-0001");
  // The gate's settled form: one phase and one note more, marked pass.
  RunRecord settled = read;
  settled.disposition = Disposition::pass;
  settled.phases.push_back(PhaseEntry{"settled", 1706745700000000000LL});
  settled.notes.push_back("controller lost; settled at a later launch");
  // A guardian's or sweep's authority: still pending, so kept open.
  RunRecord authorized = read;
  authorized.phases.push_back(PhaseEntry{"guardian", 1706745700000000000LL});
  authorized.authority.push_back(AuthorityEntry{
      1706745700000000001LL, "SIGKILL", {"pgid 7"}, "controller lost", "guardian pid 9"});

  SUBCASE("unchanged, pass: kept among the finished, the open file gone, nothing left aside") {
    REQUIRE(store.save(read, Durability::lazy));
    auto done = store.replace_if_unchanged(read, settled, Durability::lazy);
    REQUIRE_MESSAGE(done, (done ? "" : done.error().message()));
    CHECK(*done);
    CHECK(names_in(scratch.path()) == std::vector<std::string>{"finished"});
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == settled);
  }
  SUBCASE("unchanged, pending: written as the open record, nothing left aside") {
    REQUIRE(store.save(read, Durability::lazy));
    auto done = store.replace_if_unchanged(read, authorized, Durability::durable);
    REQUIRE_MESSAGE(done, (done ? "" : done.error().message()));
    CHECK(*done);
    CHECK(names_in(scratch.path()) == std::vector<std::string>{read.run_id + ".json"});
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == authorized);
  }
  SUBCASE("a finished record (a resolved run sweep names): replaced where it is kept") {
    RunRecord resolved = read;
    resolved.disposition = Disposition::failed;
    resolved.resolution = Resolution{"checked", 1, "uid 0"};
    REQUIRE(store.finish(resolved, Durability::lazy));
    RunRecord swept = resolved;
    swept.notes.push_back("swept: boundary taken down");
    auto done = store.replace_if_unchanged(resolved, swept, Durability::lazy);
    REQUIRE_MESSAGE(done, (done ? "" : done.error().message()));
    CHECK(*done);
    CHECK(names_in(scratch.path()) == std::vector<std::string>{"finished"});
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == swept);
    // Not what was read: left as it is.
    done = store.replace_if_unchanged(resolved, swept, Durability::lazy);
    REQUIRE(done);
    CHECK_FALSE(*done);
    CHECK(*store.load(read.run_id) == swept);
  }
  SUBCASE("the run removed its record meanwhile (a clean end): no finished record made") {
    auto done = store.replace_if_unchanged(read, settled, Durability::lazy);
    REQUIRE(done);
    CHECK_FALSE(*done);
    CHECK(names_in(scratch.path()).empty());
  }
  SUBCASE("a newer version was written meanwhile (failed): it stays, open, as written") {
    const RunRecord newer = saved_by_another_settler(store, read);
    for (const RunRecord* next : {&settled, &authorized}) {
      auto done = store.replace_if_unchanged(read, *next, Durability::lazy);
      REQUIRE(done);
      CHECK_FALSE(*done);
      CHECK(names_in(scratch.path()) == std::vector<std::string>{read.run_id + ".json"});
      auto loaded = store.load(read.run_id);
      REQUIRE(loaded);
      CHECK(*loaded == newer);
    }
  }
}

TEST_CASE("list reports every bad file, skips temps and other names") {
  ScratchDir scratch;
  const fs::path dir = scratch.path();
  const RecordStore store(dir);
  const RunRecord good = full_record("20240101T000000-1-0001");
  REQUIRE(store.save(good, Durability::lazy));

  // Named for one run, holding another.
  write_text(dir / "20240101T000000-1-0002.json", serialize_record(minimal_record()));
  // Not JSON.
  write_text(dir / "20240101T000000-1-0003.json", "{\"format\":");
  // A *.json name that is not a run id.
  write_text(dir / "notes.json", "{}");
  // A symlink to a valid record.
  fs::create_symlink(dir / "20240101T000000-1-0001.json", dir / "20240101T000000-1-0004.json");
  // Foreign: owned by another user (we may chown only as root).
  const bool root = ::geteuid() == 0;
  if (root) {
    write_text(dir / "20240101T000000-1-0005.json",
               serialize_record(minimal_record("20240101T000000-1-0005")));
    REQUIRE(::chown((dir / "20240101T000000-1-0005.json").c_str(), 1000, 1000) == 0);
  }
  // Group-writable.
  write_text(dir / "20240101T000000-1-0006.json",
             serialize_record(minimal_record("20240101T000000-1-0006")));
  fs::permissions(dir / "20240101T000000-1-0006.json", fs::perms::group_write,
                  fs::perm_options::add);
  // A FIFO must not hang the listing.
  REQUIRE(::mkfifo((dir / "20240101T000000-1-0007.json").c_str(), 0600) == 0);
  // A directory.
  fs::create_directory(dir / "20240101T000000-1-0008.json");
  // Skipped: temps of writes in flight, names without .json.
  write_text(dir / ".tmp-20240101T000000-1-0001.json-99-0-1", "partial");
  write_text(dir / "README", "hello");

  const std::vector<StoredRecord> listed = store.list();
  std::vector<std::string> names;
  for (const StoredRecord& stored : listed) {
    names.push_back(stored.file_name);
  }
  std::vector<std::string> expected = {"20240101T000000-1-0001.json", "20240101T000000-1-0002.json",
                                       "20240101T000000-1-0003.json", "20240101T000000-1-0004.json",
                                       "20240101T000000-1-0006.json", "20240101T000000-1-0007.json",
                                       "20240101T000000-1-0008.json", "notes.json"};
  if (root) {
    expected.insert(expected.begin() + 4, "20240101T000000-1-0005.json");
  }
  REQUIRE(names == expected);

  auto find = [&](const std::string& name) -> const StoredRecord& {
    for (const StoredRecord& stored : listed) {
      if (stored.file_name == name) {
        return stored;
      }
    }
    FAIL("not listed: " << name);
    return listed.front();
  };
  const std::string d = dir.string() + "/";
  REQUIRE(find("20240101T000000-1-0001.json").record);
  CHECK(*find("20240101T000000-1-0001.json").record == good);
  CHECK(find("20240101T000000-1-0001.json").path == dir / "20240101T000000-1-0001.json");
  CHECK(error_of(find("20240101T000000-1-0002.json"))
        == "record " + d
               + "20240101T000000-1-0002.json: holds run 20240101T000000-1-0000, not "
                 "the run its name says");
  CHECK(error_of(find("20240101T000000-1-0003.json"))
            .rfind("record " + d + "20240101T000000-1-0003.json: not valid JSON: ", 0)
        == 0);
  CHECK(error_of(find("20240101T000000-1-0004.json"))
        == d + "20240101T000000-1-0004.json: is a symlink");
  if (root) {
    CHECK(error_of(find("20240101T000000-1-0005.json"))
          == d + "20240101T000000-1-0005.json: owned by uid 1000, not 0");
  }
  CHECK(error_of(find("20240101T000000-1-0006.json"))
        == d + "20240101T000000-1-0006.json: is group- or world-writable");
  CHECK(error_of(find("20240101T000000-1-0007.json"))
        == d + "20240101T000000-1-0007.json: is not a regular file");
  CHECK(error_of(find("20240101T000000-1-0008.json"))
        == d + "20240101T000000-1-0008.json: is not a regular file");
  CHECK(error_of(find("notes.json"))
        == "record " + d + "notes.json: file name is not <run id>.json");
}

TEST_CASE("remove_abandoned_temps: old temporary files go, fresh ones, records and links stay") {
  ScratchDir scratch;
  const fs::path dir = scratch.path();
  const RecordStore store(dir);
  const RunRecord good = full_record("20240101T000000-1-0001");
  REQUIRE(store.save(good, Durability::lazy));
  fs::create_directory(dir / "finished");
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(2);
  const fs::path old_open = dir / ".tmp-20240101T000000-1-0001.json-99-0-1";
  const fs::path old_finished = dir / "finished" / ".tmp-20240101T000000-1-0002.json-99-1-1";
  const fs::path fresh = dir / ".tmp-20240101T000000-1-0003.json-99-2-1";
  const fs::path target = dir / "elsewhere";
  const fs::path link = dir / ".tmp-20240101T000000-1-0004.json-99-3-1";
  for (const fs::path& path : {old_open, old_finished, fresh, target}) {
    write_text(path, "partial");
  }
  fs::create_symlink(target, link);
  for (const fs::path& path :
       {old_open, old_finished, target, fs::path(dir / "20240101T000000-1-0001.json")}) {
    fs::last_write_time(path, old_time);
  }
  // A record a killed settler had set aside: put back, not lost; one whose
  // run has a newer open record meanwhile: only removed.
  const RunRecord aside_record = minimal_record("20240101T000000-1-0005");
  const fs::path aside = dir / ".settling-20240101T000000-1-0005-1706745700000000000-42";
  write_text(aside, serialize_record(aside_record));
  const fs::path aside_newer = dir / ".settling-20240101T000000-1-0001-1706745700000000000-43";
  write_text(aside_newer, "older");
  for (const fs::path& path : {aside, aside_newer}) {
    fs::last_write_time(path, old_time);
  }
  auto removed = store.remove_abandoned_temps(std::chrono::seconds(600));
  REQUIRE(removed);
  CHECK(*removed == 4);
  CHECK_FALSE(fs::exists(aside));
  CHECK_FALSE(fs::exists(aside_newer));
  auto put_back = store.load(aside_record.run_id);
  REQUIRE_MESSAGE(put_back, (put_back ? "" : put_back.error().message()));
  CHECK(*put_back == aside_record);
  CHECK(*store.load(good.run_id) == good);  // the newer one stays
  CHECK_FALSE(fs::exists(old_open));
  CHECK_FALSE(fs::exists(old_finished));
  CHECK(fs::exists(fresh));     // a write that may still be in flight
  CHECK(fs::is_symlink(link));  // never through a link
  CHECK(fs::exists(target));
  CHECK(store.load(good.run_id));
  removed = store.remove_abandoned_temps(std::chrono::seconds(600));
  REQUIRE(removed);
  CHECK(*removed == 0);
}

TEST_CASE("remove_abandoned_temps: units/ too; never through a symlinked directory; only files of "
          "ours") {
  ScratchDir scratch;
  const fs::path dir = scratch.path();
  const RecordStore store(dir);
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(2);
  // A run killed while it kept the service manager's answer (write_file_atomic's temporary file).
  fs::create_directory(dir / "units");
  fs::permissions(dir / "units", fs::perms::owner_all, fs::perm_options::replace);
  const fs::path old_answer = dir / "units" / ".tmp-system-ci.service-99-0-1";
  const fs::path fresh_answer = dir / "units" / ".tmp-system-ci.service-99-1-1";
  const fs::path kept_answer = dir / "units" / "system-ci.service";
  for (const fs::path& path : {old_answer, fresh_answer, kept_answer}) {
    write_text(path, "treeguard unit delegation 1\n");
  }
  for (const fs::path& path : {old_answer, kept_answer}) {
    fs::last_write_time(path, old_time);
  }
  auto removed = store.remove_abandoned_temps(std::chrono::seconds(600));
  REQUIRE_MESSAGE(removed, (removed ? "" : removed.error().message()));
  CHECK(*removed == 1);
  CHECK_FALSE(fs::exists(old_answer));
  CHECK(fs::exists(fresh_answer));  // a write that may still be in flight
  CHECK(fs::exists(kept_answer));   // the answer itself

  // finished/ a symlink to a directory elsewhere: never read through, its files stay.
  ScratchDir elsewhere;
  const fs::path outside = elsewhere.path() / ".tmp-20240101T000000-1-0002.json-99-1-1";
  write_text(outside, "not the state directory's");
  fs::last_write_time(outside, old_time);
  fs::create_directory_symlink(elsewhere.path(), dir / "finished");
  removed = store.remove_abandoned_temps(std::chrono::seconds(600));
  REQUIRE_FALSE(removed);
  CHECK(fs::exists(outside));
  fs::remove(dir / "finished");

  // A temporary file another user owns (we may chown only as root) is not ours to remove.
  if (::geteuid() == 0) {
    const fs::path foreign = dir / "units" / ".tmp-system-other.service-99-2-1";
    write_text(foreign, "someone else's");
    REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    fs::last_write_time(foreign, old_time);
    removed = store.remove_abandoned_temps(std::chrono::seconds(600));
    REQUIRE(removed);
    CHECK(*removed == 0);
    CHECK(fs::exists(foreign));
  }
}

TEST_CASE("read_file_untrusted enforces its size limit") {
  ScratchDir scratch;
  const fs::path file = scratch.path() / "f";
  write_text(file, std::string(100, 'x'));
  auto exact = read_file_untrusted(file, 100);
  REQUIRE(exact);
  CHECK(exact->size() == 100);
  auto over = read_file_untrusted(file, 99);
  REQUIRE_FALSE(over);
  CHECK(over.error().message() == file.string() + ": larger than 99 bytes");
}

TEST_CASE("concurrent writers never lose or mix records") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  constexpr int k_threads = 16;
  constexpr int k_saves = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(k_threads, 0);
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      char suffix[5];
      std::snprintf(suffix, sizeof suffix, "%04x", t);
      RunRecord record = full_record("20240101T000000-" + std::to_string(1000 + t) + "-" + suffix);
      record.resolution.reset();
      for (int i = 0; i < k_saves; ++i) {
        record.phases.push_back({"step-" + std::to_string(i), i});
        if (!store.save(record, i % 10 == 0 ? Durability::durable : Durability::lazy)) {
          ++failures[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (std::thread& thread : threads) {
    thread.join();
  }
  CHECK(failures == std::vector<int>(k_threads, 0));
  const std::vector<StoredRecord> listed = store.list();
  REQUIRE(listed.size() == k_threads);
  for (const StoredRecord& stored : listed) {
    CAPTURE(stored.file_name);
    REQUIRE(stored.record);
    CHECK(stored.record->phases.size() == 3 + k_saves);
    CHECK(stored.record->phases.back().name == "step-49");
    CHECK(stored.file_name == stored.record->run_id + ".json");
  }
  CHECK(names_in(scratch.path()).size() == k_threads);  // no temp left behind
}

TEST_CASE("real storage faults come back as errno codes, and the old record survives"
          * doctest::skip(!storage_faults_unavailable().empty())
          * doctest::description(storage_faults_unavailable().c_str())) {
  ScratchDir scratch;
  const fs::path dir = scratch.path() / "mnt";
  fs::create_directory(dir);

  SUBCASE("ENOSPC on a full tmpfs") {
    ScopedMount mount(dir);
    REQUIRE_MESSAGE(mount.tmpfs("size=64k,mode=0700"), "errno ", errno);
    const RecordStore store(dir);
    const RunRecord before = minimal_record();
    REQUIRE(store.save(before, Durability::lazy));
    RunRecord big = before;
    big.notes.assign(1, std::string(200 * 1024, 'n'));
    for (Durability durability : {Durability::lazy, Durability::durable}) {
      auto saved = store.save(big, durability);
      REQUIRE_FALSE(saved);
      CHECK(saved.error().code == std::errc::no_space_on_device);
      CHECK(saved.error().context.rfind("write " + dir.string() + "/.tmp-", 0) == 0);
      CHECK(names_in(dir) == std::vector<std::string>{before.run_id + ".json"});
      auto loaded = store.load(before.run_id);
      REQUIRE(loaded);
      CHECK(*loaded == before);
    }
  }
  SUBCASE("EROFS on a read-only bind mount") {
    const RecordStore store(dir);
    const RunRecord before = minimal_record();
    REQUIRE(store.save(before, Durability::lazy));
    ScopedMount mount(dir);
    REQUIRE_MESSAGE(mount.read_only_bind(), "errno ", errno);
    RunRecord after = before;
    after.disposition = Disposition::ambiguous;
    auto saved = store.save(after, Durability::durable);
    REQUIRE_FALSE(saved);
    CHECK(saved.error().code == std::errc::read_only_file_system);
    auto loaded = store.load(before.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == before);
    CHECK_FALSE(store.remove(before.run_id));
  }
}

TEST_SUITE_END();
