// RecordJournal keeps at most k_max_recorded_members (8,000) members in a record and says when it
// dropped some (README, Residuals): a run with a larger tree still has a
// record the store accepts.
#include "fake_boundary.hpp"
#include "record_fixtures.hpp"
#include "record_journal.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>

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

TEST_SUITE_END();
