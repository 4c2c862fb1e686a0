// The records of nested runs that an enclosing run keeps (RunRecord::nested,
// DESIGN.md [nested]): read back as written, refused when they name a leaf
// outside the enclosing one; written by its guardian only over what it last
// wrote, never lost to the enclosing controller's own writes; blocking the
// gate while one ended failed or ambiguous unresolved, and resolved by its
// own run id.
#include "evidence_commands.hpp"
#include "gate.hpp"
#include "record.hpp"
#include "record_fixtures.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>

using namespace treeguard;
using namespace treeguard::test;

TEST_SUITE_BEGIN("treeguard::nested_records");

namespace {

// What a write said (true, false), or nothing when it failed.
std::optional<bool> value_of(const Result<bool>& written) {
  return written ? std::optional<bool>(*written) : std::nullopt;
}

const std::string k_outer = "20261206T000000-10-aaaa";
const std::string k_inner = "20261206T000001-11-bbbb";
const std::string k_leaf = "/sys/fs/cgroup/tg/treeguard-" + k_outer;

// The enclosing run's record as its controller writes it: pending, a leaf.
RunRecord outer_record() {
  RunRecord record = minimal_record(k_outer);
  record.boundary = {BoundaryKind::cgroup, k_leaf, std::nullopt};
  record.controller = {10, 100};
  record.guardian = ProcessIdentity{12, 101};
  return record;
}

// A nested run's record as the guardian keeps it.
RunRecord inner_record(Disposition disposition) {
  RunRecord record = minimal_record(k_inner);
  record.boundary = {BoundaryKind::cgroup, k_leaf + "/treeguard-" + k_inner, std::nullopt};
  record.controller = {11, 110};
  record.guardian = ProcessIdentity{12, 101};
  record.authority = {
      {5, "cgroup.kill", {record.boundary.address}, "deadline", "controller pid 11"}};
  record.disposition = disposition;
  return record;
}

// A state directory holding the enclosing run's record, as its controller
// wrote it (`written`: that version).
struct StateWithOuter {
  ScratchDir dir;
  RecordStore store{dir.path()};
  RunRecord outer = outer_record();
  std::optional<FileVersion> written;
  StateWithOuter() { REQUIRE(store.save_own(outer, Durability::lazy, written)); }
};

}  // namespace

TEST_CASE("a record keeps its nested runs' records: read back as written; never one outside "
          "its leaf") {
  RunRecord record = outer_record();
  record.nested.push_back(inner_record(Disposition::failed));
  const auto read = parse_record(serialize_record(record));
  REQUIRE(read);
  CHECK(*read == record);
  // Without any, the record is as it always was: no "nested" field.
  CHECK(serialize_record(outer_record()).find("\"nested\"") == std::string::npos);

  SUBCASE("a nested record naming a leaf outside this run's leaf") {
    record.nested[0].boundary.address = "/sys/fs/cgroup/tg/treeguard-" + k_inner;
    CHECK_FALSE(validate_record(record));
    CHECK_FALSE(parse_record(serialize_record(record)));
  }
  SUBCASE("a leaf whose path only starts like this run's") {
    record.nested[0].boundary.address = k_leaf + "x/treeguard-" + k_inner;
    CHECK_FALSE(validate_record(record));
  }
  SUBCASE("a nested record that holds nested records") {
    record.nested[0].nested.push_back(inner_record(Disposition::pass));
    CHECK_FALSE(validate_record(record));
  }
  SUBCASE("the same nested run twice") {
    record.nested.push_back(record.nested[0]);
    CHECK_FALSE(validate_record(record));
  }
}

TEST_CASE("the guardian's write of a nested record: only over what it last wrote; never lost "
          "to the enclosing controller's own writes") {
  StateWithOuter enclosing;
  const RecordStore& store = enclosing.store;
  RunRecord& outer = enclosing.outer;
  std::optional<FileVersion>& written = enclosing.written;
  const NestedRecordPlace place(store, k_outer);

  const RunRecord first = inner_record(Disposition::pending);
  REQUIRE(value_of(place.replace_if_unchanged(first, first, Durability::durable)) == true);
  RunRecord second = first;
  second.disposition = Disposition::pass;
  // Written over what was last written: yes; over something else: no.
  RunRecord stale = first;
  stale.notes.push_back("not what is on disk");
  CHECK(value_of(place.replace_if_unchanged(stale, second, Durability::lazy)) == false);
  REQUIRE(value_of(place.replace_if_unchanged(first, second, Durability::lazy)) == true);

  // The enclosing controller writes its own record again (a phase, its
  // authority): the nested record the guardian wrote meanwhile stays.
  outer.phases.push_back(PhaseEntry{"drain", 9});
  REQUIRE(store.save_own(outer, Durability::lazy, written));
  auto on_disk = store.load(k_outer);
  REQUIRE(on_disk);
  REQUIRE(on_disk->nested.size() == 1);
  CHECK(on_disk->nested[0] == second);
  CHECK(on_disk->phases.size() == outer.phases.size());

  // Its clean end keeps the record (finished) rather than removing it.
  outer.disposition = Disposition::pass;
  REQUIRE(value_of(store.save_own(outer, Durability::lazy, written, true)) == false);
  CHECK_FALSE(std::filesystem::exists(store.path_for(k_outer)));
  CHECK(std::filesystem::exists(store.finished_path_for(k_outer)));
  // Once the enclosing run is over, nothing is written for a run nested in it.
  CHECK(value_of(place.replace_if_unchanged(second, second, Durability::lazy)) == false);
}

TEST_CASE("a settler of the enclosing run (its guardian after its controller's death) is not "
          "superseded by the records its guardian writes of the runs nested in it; keeps them") {
  const StateWithOuter enclosing;
  const RecordStore& store = enclosing.store;
  // The settler reads the enclosing run's record; then a helper of the
  // guardian writes a nested run's record into it.
  const auto read = store.load(k_outer);
  REQUIRE(read);
  const RunRecord inner = inner_record(Disposition::pending);
  REQUIRE(
      value_of(
          NestedRecordPlace(store, k_outer).replace_if_unchanged(inner, inner, Durability::lazy))
      == true);
  RunRecord settled = *read;
  settled.notes.push_back("controller lost");
  REQUIRE(value_of(store.replace_if_unchanged(*read, settled, Durability::durable)) == true);
  auto on_disk = store.load(k_outer);
  REQUIRE(on_disk);
  CHECK(on_disk->notes == settled.notes);
  REQUIRE(on_disk->nested.size() == 1);
  CHECK(on_disk->nested[0] == inner);
  // Another settler's write since is still one: nothing written.
  RunRecord other = settled;
  other.notes.push_back("not this settler's");
  CHECK(value_of(store.replace_if_unchanged(*read, other, Durability::durable)) == false);
  // A settler that changes the nested records (resolve) compares them as it
  // read them: read before the guardian's write, it writes nothing.
  RunRecord stale = *on_disk;
  stale.nested.clear();
  RunRecord resolving = *on_disk;
  resolving.nested[0].resolution = Resolution{"read", 7, "uid 0"};
  CHECK(value_of(store.replace_if_unchanged(stale, resolving, Durability::durable)) == false);
  CHECK(value_of(store.replace_if_unchanged(*on_disk, resolving, Durability::durable)) == true);
}

TEST_CASE("a nested run that ended failed or ambiguous blocks the gate until resolved by its "
          "own run id") {
  ScratchDir dir;
  const RecordStore store(dir.path());
  FakeHost host;
  RunRecord outer = outer_record();
  outer.disposition = Disposition::pass;
  outer.nested.push_back(inner_record(Disposition::ambiguous));
  REQUIRE(store.save(outer, Durability::lazy));

  const GateVerdict verdict = evaluate_gate(store.list(), host);
  REQUIRE(verdict.findings.size() == 1);
  CHECK(verdict.findings[0].run_id == k_inner);
  CHECK(verdict.findings[0].line.find("nested in run " + k_outer) != std::string::npos);
  CHECK(verdict.findings[0].line.find("treeguard resolve --state-dir") != std::string::npos);
  CHECK(verdict.exit_code() == 121);
  // A pass record holding it is not settled away among the finished ones.
  CHECK(verdict.settle.empty());

  auto resolved = resolve_run(store, k_inner, "looked at it", host, 7, "uid 0");
  REQUIRE(resolved);
  CHECK(resolved->run_id == k_inner);
  CHECK(evaluate_gate(store.list(), host).open());
  // Nothing in it can block now: kept among the finished records.
  CHECK(std::filesystem::exists(store.finished_path_for(k_outer)));
}

TEST_SUITE_END();
