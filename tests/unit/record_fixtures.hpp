// Shared helpers for the evidence tests: sample records, a scratch
// directory per test case, a fake HostView.
#pragma once

#include "gate.hpp"
#include "record.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace treeguard::test {

inline constexpr const char* k_boot = "0f3c1b2a-9d8e-4c7b-a6f5-e4d3c2b1a098";
inline constexpr const char* k_other_boot = "11111111-2222-3333-4444-555555555555";
inline constexpr std::uint64_t k_pid_ns = 4026531836ULL;  // the host's, as on many machines
inline constexpr unsigned long long k_pid_ns_init = 1;    // its init's start time
inline constexpr const char* k_machine = "3d1219c7c4c5404aaa1f6d2a48adfda4";
inline constexpr const char* k_other_machine = "0123456789abcdef0123456789abcdef";
// When the fake host's boot began: after every time full_record() holds.
inline constexpr std::int64_t k_boot_began = 1706800000000000000LL;

// A record with every field filled in, for run `run_id`.
inline RunRecord full_record(const std::string& run_id = "20240131T235959-4242-0a9f") {
  RunRecord record;
  record.run_id = run_id;
  record.boot_id = k_boot;
  record.pid_ns = k_pid_ns;
  record.pid_ns_init = k_pid_ns_init;
  record.controller = {4242, 123456789ULL};
  record.guardian = ProcessIdentity{4243, 123456790ULL};
  record.drain = RecordedDrain{"USR1", 2'500'000'000};
  record.boundary = {BoundaryKind::cgroup, "/sys/fs/cgroup/unified/tg-tests/treeguard-" + run_id,
                     4244L};
  record.command = {
      "make", "-j8", "check", "ARG=\"quoted\" \\ back", "tab\there", "\xc3\xa9t\xc3\xa9"};
  record.cwd = "/home/user/src/project";
  record.phases = {{"spawn", 1706745599000000001LL},
                   {"running", 1706745599000000002LL},
                   {"drain", 1706745600000000000LL}};
  record.authority = {{1706745610000000000LL,
                       "cgroup.kill",
                       {record.boundary.address},
                       "deadline 10s passed",
                       "controller pid 4242"}};
  record.members = {{4244, 123456800ULL, false, false, false, "make", "make -j8 check"},
                    {4300, 18446744073709551615ULL, true, true, true, "sleep", ""}};
  record.disposition = Disposition::failed;
  record.exit_code = 122;
  record.notes = {"members survived", "second note"};
  record.resolution = Resolution{"checked by hand", 1706745700000000000LL, "uid 1000"};
  return record;
}

// The smallest valid record: a pending process-group run, nothing optional.
inline RunRecord minimal_record(const std::string& run_id = "20240101T000000-1-0000") {
  RunRecord record;
  record.run_id = run_id;
  record.boot_id = k_boot;
  record.controller = {1, 0};
  record.boundary = {BoundaryKind::process_group, "pgid 7", 7L};
  record.command = {"true"};
  record.cwd = "/";
  return record;
}

// A fresh directory under the system's temp dir, removed at scope exit.
class ScratchDir {
public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto base = std::filesystem::temp_directory_path();
    for (;;) {
      m_path =
          base / ("tg-evidence-" + std::to_string(std::rand()) + "-" + std::to_string(counter++));
      if (std::filesystem::create_directory(m_path)) {
        break;
      }
    }
    std::filesystem::permissions(m_path, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(m_path, ignored);
  }
  const std::filesystem::path& path() const { return m_path; }

private:
  std::filesystem::path m_path;
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  REQUIRE(out.good());
}

// A host whose boot id, live processes and boundaries the test decides.
class FakeHost final : public HostView {
public:
  std::string boot = k_boot;
  std::uint64_t pid_ns = k_pid_ns;
  std::optional<unsigned long long> pid_ns_init = k_pid_ns_init;
  std::set<std::uint64_t> gone_namespaces;  // proven gone, as a host seeing all could
  std::string machine = k_machine;
  std::optional<std::int64_t> began = k_boot_began;
  std::set<std::pair<long, unsigned long long>> alive;
  std::map<std::string, std::optional<bool>> empty_by_run;      // absent: nullopt
  std::map<std::string, std::vector<MemberInfo>> alive_by_run;  // absent: cannot be told
  mutable int boundary_questions = 0;
  mutable int namespace_questions = 0;  // pid_namespace_gone: a scan of the host's /proc
  // Called at each process_alive question: what happens elsewhere meanwhile
  // (another settler writing the record a command has read).
  std::function<void()> meanwhile;

  std::string boot_id() const override { return boot; }
  std::uint64_t pid_namespace() const override { return pid_ns; }
  std::optional<unsigned long long> pid_namespace_init() const override { return pid_ns_init; }
  bool pid_namespace_gone(std::uint64_t inode, std::optional<unsigned long long>) const override {
    ++namespace_questions;
    return gone_namespaces.count(inode) != 0;
  }
  std::string machine_id() const override { return machine; }
  std::optional<std::int64_t> boot_began_at() const override { return began; }
  bool process_alive(long pid, unsigned long long start_time) const override {
    if (meanwhile) {
      meanwhile();
    }
    return alive.count({pid, start_time}) != 0;
  }
  std::optional<bool> boundary_empty(const RunRecord& record) const override {
    ++boundary_questions;
    const auto found = empty_by_run.find(record.run_id);
    return found == empty_by_run.end() ? std::nullopt : found->second;
  }
  std::optional<std::vector<MemberInfo>> alive_in_boundary(const RunRecord& record) const override {
    const auto found = alive_by_run.find(record.run_id);
    return found == alive_by_run.end() ? std::nullopt
                                       : std::optional<std::vector<MemberInfo>>(found->second);
  }
};

// `record` as a process-group run whose group `leader` (started at
// `start_time`) leads: its boundary and its one member.
inline void led_by(RunRecord& record, long leader, unsigned long long start_time) {
  record.boundary = {BoundaryKind::process_group, "pgid " + std::to_string(leader), leader};
  MemberInfo led;
  led.pid = leader;
  led.start_time = start_time;
  led.leads_group = true;
  record.members = {led};
}

// What another settler (a sweep, a guardian) writes over `read` after a
// settler read it: its authority and its verdict (failed), saved in `store`
// as the open record. Returned, to compare with what the store holds after.
inline RunRecord saved_by_another_settler(const RecordStore& store, const RunRecord& read) {
  RunRecord newer = read;
  newer.authority.push_back(AuthorityEntry{
      1706745700000000000LL, "SIGKILL", {"pgid 7"}, "controller lost", "sweep pid 1 uid 0"});
  newer.disposition = Disposition::failed;
  newer.notes.push_back("swept: not proven empty: 1 process(es) of the run alive");
  REQUIRE(store.save(newer, Durability::durable));
  return newer;
}

}  // namespace treeguard::test
