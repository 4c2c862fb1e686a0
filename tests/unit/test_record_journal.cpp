// RecordJournal keeps at most k_max_recorded_members (8,000) members in a record and says when it
// dropped some (README, Residuals): a run with a larger tree still has a
// record the store accepts.
#include "authority.hpp"
#include "fake_boundary.hpp"
#include "record_fixtures.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>

using namespace treeguard;
using namespace treeguard::test;
using namespace treeguard::testing;

namespace {
// A record of a run in the fake boundary (a cgroup at its address).
RunRecord record_for(FakeBoundary& boundary) {
  RunRecord record = minimal_record();
  boundary.address_text = "/fake/treeguard-" + record.run_id;
  record.boundary.kind = boundary.kind();
  record.boundary.address = boundary.address();
  record.boundary.pgid.reset();
  return record;
}
}  // namespace

TEST_SUITE_BEGIN("treeguard::RecordJournal");

TEST_CASE(
    "a tree of more members than a record keeps: the record keeps the limit and says truncated") {
  ScratchDir scratch;
  RecordStore store(scratch.path());
  FakeClock clock;
  FakeBoundary boundary(clock);
  // Member 0 is COMMAND; 49 more than the limit.
  for (std::size_t i = 0; i < k_max_recorded_members + 49; ++i) {
    boundary.add_member({});
  }
  RunRecord first = record_for(boundary);
  REQUIRE(store.save(first, Durability::lazy));
  RecordJournal journal(store, first, boundary, true);

  journal.phase("running");
  CHECK(journal.record().members.size() == k_max_recorded_members);
  REQUIRE_FALSE(journal.record().notes.empty());
  CHECK(
      std::count(journal.record().notes.begin(), journal.record().notes.end(), "members truncated")
      == 1);

  // Again, at the end: still the limit, the note once, and the store reads the
  // record back as written.
  journal.finish(Disposition::pass, 0);
  REQUIRE_MESSAGE(!journal.write_error(),
                  (journal.write_error() ? journal.write_error()->message() : ""));
  CHECK(journal.record().members.size() == k_max_recorded_members);
  CHECK(
      std::count(journal.record().notes.begin(), journal.record().notes.end(), "members truncated")
      == 1);
  auto loaded = store.load(first.run_id);
  REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
  CHECK(loaded->members.size() == k_max_recorded_members);
  CHECK(loaded->members.front().pid == 100);
  CHECK(loaded->members.back().pid == 100 + static_cast<long>(k_max_recorded_members) - 1);
}

TEST_CASE("a tree of exactly the limit is not truncated") {
  ScratchDir scratch;
  RecordStore store(scratch.path());
  FakeClock clock;
  FakeBoundary boundary(clock);
  for (std::size_t i = 0; i + 1 < k_max_recorded_members; ++i) {
    boundary.add_member({});
  }
  RunRecord first = record_for(boundary);
  REQUIRE(store.save(first, Durability::lazy));
  RecordJournal journal(store, first, boundary, true);
  journal.phase("running");
  CHECK(journal.record().members.size() == k_max_recorded_members);
  CHECK(std::find(journal.record().notes.begin(), journal.record().notes.end(), "members truncated")
        == journal.record().notes.end());
}

TEST_CASE("members' names: the worst case of 8,000 members still fits in a record; a small tree's "
          "are whole") {
  // The worst a run writes: the longest command a record keeps (128 KiB), the widest pids and
  // start times, every member leading a session, the longest names, authority entries whose
  // samples name members too.
  RunRecord record = minimal_record();
  record.command = recorded_command({"cc", std::string(300 * 1024, 'x')});
  MemberInfo widest{{2147483647L, std::numeric_limits<unsigned long long>::max()},
                    false,
                    true,
                    true,
                    std::string(k_max_comm, 'c'),
                    std::string(k_max_argv, 'a')};
  record.members.assign(k_max_recorded_members, widest);
  for (int i = 0; i < 3; ++i) {
    record.authority.push_back(AuthorityEntry{std::numeric_limits<std::int64_t>::max(), "SIGKILL",
                                              authority_targets(record, record.members),
                                              "deadline 1s passed", "controller pid 2147483647"});
  }
  record.notes = {"members truncated", "controller lost"};
  const std::string text = serialize_record(record);
  CHECK(text.size() <= k_max_record_bytes);
  auto parsed = parse_record(text);
  REQUIRE_MESSAGE(parsed, (parsed ? "" : parsed.error().message()));
  REQUIRE(parsed->members.size() == k_max_recorded_members);
  // Cut to what the budget leaves, but named: the comm's start, at least.
  CHECK_FALSE(parsed->members.front().comm.empty());
  CHECK_FALSE(parsed->members.back().comm.empty());
  CHECK(record.members.front().comm.rfind(parsed->members.back().comm, 0) == 0);

  // A tree of 200 with a short command: every name whole.
  record.command = {"make", "-j8"};
  record.members.resize(200);
  record.authority.clear();
  auto small = parse_record(serialize_record(record));
  REQUIRE(small);
  CHECK(small->members.back().comm == widest.comm);
  CHECK(small->members.back().argv == widest.argv);
}

TEST_CASE("names are kept as name_text() says: printable ASCII, no JSON escapes, bounded") {
  CHECK(name_text("sleep", k_max_comm) == "sleep");
  CHECK(name_text("a\x1b[2J\"b\\c\xc3\xa9", 64) == "a?[2J?b?c??");
  CHECK(name_text(std::string(300, 'x'), k_max_argv).size() == k_max_argv);
  MemberInfo named{{12, 34}, false, false, false, "sleep", "sleep 10"};
  CHECK(describe_member(named) == "sleep (pid 12)");
  CHECK(describe_member(MemberInfo{{13, 34}}) == "pid 13");
  CHECK(describe_members({named, named, named}, 2) == "sleep (pid 12), sleep (pid 12) and 1 more");
}

TEST_CASE("--leftovers outer: each member handed over is a note naming it and the run it went "
          "to, bounded; the kept record reads back with them") {
  ScratchDir scratch;
  RecordStore store(scratch.path());
  FakeClock clock;
  FakeBoundary boundary(clock);
  RunRecord first = record_for(boundary);
  REQUIRE(store.save(first, Durability::lazy));
  RecordJournal journal(store, first, boundary, true);
  const std::string outer = "20260101T000000-1-abcd";

  std::vector<MemberInfo> handed;
  for (long i = 0; i < 70; ++i) {
    MemberInfo member{{1000 + i, 5000ULL + static_cast<unsigned long long>(i)}};
    member.comm = "sccache";
    handed.push_back(member);
  }
  journal.handed_over(outer, handed);
  const auto& notes = journal.record().notes;
  REQUIRE(notes.size() == 65);  // 64 named, then how many more
  CHECK(notes.front() == "handed over to run " + outer + ": sccache (pid 1000) (start 5000)");
  CHECK(notes.back() == "handed over to run " + outer + ": 6 more");
  CHECK(journal.timeline().size() == 70);

  journal.finish(Disposition::pass, 0);
  REQUIRE_MESSAGE(!journal.write_error(),
                  (journal.write_error() ? journal.write_error()->message() : ""));
  auto loaded = store.load(first.run_id);
  REQUIRE_MESSAGE(loaded, (loaded ? "" : loaded.error().message()));
  CHECK(loaded->notes == notes);
}

TEST_SUITE_END();
