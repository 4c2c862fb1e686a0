// The one settle sequence (src/after_death.hpp) never writes over a record
// another settler wrote since it was read, and sends no kill it could not
// record: the guardian's and sweep's path, like the gate's
// (test_record_store.cpp, "replace_if_unchanged").
#include "after_death.hpp"
#include "linux/proc.hpp"
#include "record_fixtures.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>

using namespace treeguard;
using namespace treeguard::test;

namespace {

// A record of a run whose controller is gone (this process's pid with a
// start time it never had) and of what `how` says.
RunRecord dead_run(const std::string& run_id) {
  RunRecord record = minimal_record(run_id);
  record.controller = {::getpid(), 1};
  return record;
}

AfterDeath sweep_like() {
  AfterDeath how;
  how.closing_phase = "swept";
  how.reason = "test";
  how.by = "test";
  how.verify_for = std::chrono::milliseconds(500);
  how.found_empty_note = "swept: boundary found empty";
  return how;
}

}  // namespace

TEST_CASE("the settle sequence closes a record only if it is still the one read") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  RunRecord read = dead_run("20240101T000000-1-0001");
  read.boundary = {BoundaryKind::pid_namespace, "init pid 2", std::nullopt};
  REQUIRE(store.save(read, Durability::lazy));

  SUBCASE("unchanged: closed, as pass, among the finished") {
    RunRecord record = read;
    const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
    CHECK(outcome.found_empty);
    CHECK_FALSE(outcome.superseded);
    REQUIRE(outcome.closed);
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(loaded->disposition == Disposition::pass);
    CHECK(!std::filesystem::exists(store.path_for(read.run_id)));
  }
  SUBCASE("written by another settler between the read and the close: theirs stays") {
    const RunRecord newer = saved_by_another_settler(store, read);
    RunRecord record = read;
    record.phases.push_back(PhaseEntry{"guardian", 1706745700000000001LL});
    const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
    CHECK(outcome.found_empty);
    CHECK(outcome.superseded);
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(*loaded == newer);
    CHECK(std::filesystem::exists(store.path_for(read.run_id)));
  }
}

TEST_CASE("the settle sequence sends no kill once another settler wrote the record") {
  // A live member in a group of its own: the judgement finds it, so the
  // next step is the authority, then the kill.
  const pid_t member = ::fork();
  REQUIRE(member >= 0);
  if (member == 0) {
    for (;;) {
      ::pause();
    }
  }
  REQUIRE(::setpgid(member, member) == 0);
  auto stat = platform::read_proc_stat(member);
  REQUIRE(stat);
  ScratchDir scratch;
  const RecordStore store(scratch.path());
  RunRecord read = dead_run("20240101T000000-1-0002");
  led_by(read, member, stat->start_time);
  REQUIRE(store.save(read, Durability::lazy));
  const RunRecord newer = saved_by_another_settler(store, read);

  RunRecord record = read;
  const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
  CHECK_FALSE(outcome.found_empty);
  CHECK_FALSE(outcome.authorized);
  CHECK(outcome.superseded);
  auto loaded = store.load(read.run_id);
  REQUIRE(loaded);
  CHECK(*loaded == newer);
  // Not killed: a kill is waited for before the sequence returns, so the
  // killed member would be a zombie now.
  int status = 0;
  CHECK(::waitpid(member, &status, WNOHANG) == 0);
  ::kill(member, SIGKILL);
  ::waitpid(member, &status, 0);
}
