// The one settle sequence (src/after_death.hpp) never writes over a record
// another settler wrote since it was read, and sends no kill it could not
// record: the guardian's and sweep's path, like the gate's
// (test_record_store.cpp, "replace_if_unchanged").
#include "after_death.hpp"
#include "linux/proc.hpp"
#include "record_fixtures.hpp"
#include "record_store.hpp"
#include "supervisor.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

namespace {

// A live process in a group of its own, as a run's member: TERM at its
// default action (it dies of it), or ignored. Returned once it says its
// TERM is set so: a TERM sent before that (a loaded machine may not run
// the child at once) would find the test's own handler.
struct Member {
  pid_t pid = -1;
  unsigned long long start_time = 0;
};
Member start_member(bool ignores_term) {
  int ready[2];
  REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGTERM, ignores_term ? SIG_IGN : SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    (void)::write(ready[1], "r", 1);
    for (;;) {
      ::pause();
    }
  }
  ::close(ready[1]);
  char said = 0;
  ssize_t n;
  while ((n = ::read(ready[0], &said, 1)) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  REQUIRE(n == 1);
  REQUIRE(::setpgid(pid, pid) == 0);
  auto stat = platform::read_proc_stat(pid);
  REQUIRE(stat);
  return Member{pid, stat->start_time};
}

// The signal `member` died of (it has been killed by now: the sequence
// waits for what it signals), reaped; 0 if it had not died.
int died_of(const Member& member) {
  int status = 0;
  if (::waitpid(member.pid, &status, WNOHANG) != member.pid) {
    ::kill(member.pid, SIGKILL);
    ::waitpid(member.pid, &status, 0);
    return 0;
  }
  return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
}

bool has_phase(const RunRecord& record, const std::string& name) {
  return std::any_of(record.phases.begin(), record.phases.end(),
                     [&](const PhaseEntry& phase) { return phase.name == name; });
}

}  // namespace

TEST_CASE("the settle sequence drains first: the run's own signal, then its grace, then the kill") {
  ScratchDir scratch;
  const RecordStore store(scratch.path());

  SUBCASE("a member that ends on the signal: drained, no authority, no kill") {
    const Member member = start_member(false);
    RunRecord read = dead_run("20240101T000000-1-0003");
    led_by(read, member.pid, member.start_time);
    read.drain = RecordedDrain{"TERM", 10'000'000'000};
    REQUIRE(store.save(read, Durability::lazy));
    RunRecord record = read;
    const auto started = std::chrono::steady_clock::now();
    const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
    CHECK(outcome.drained);
    CHECK(outcome.proven);
    CHECK_FALSE(outcome.authorized);
    CHECK(died_of(member) == SIGTERM);
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK(loaded->disposition == Disposition::pass);
    CHECK(loaded->authority.empty());
    CHECK(has_phase(*loaded, "drain"));
    CHECK(std::any_of(loaded->notes.begin(), loaded->notes.end(), [](const std::string& note) {
      return note.rfind("drain after controller death: TERM to every process of the run (1 alive)",
                        0)
             == 0;
    }));
  }
  SUBCASE("a member that ignores it: the authority and the kill only once the grace has passed") {
    const Member member = start_member(true);
    RunRecord read = dead_run("20240101T000000-1-0004");
    led_by(read, member.pid, member.start_time);
    read.drain = RecordedDrain{"TERM", 400'000'000};
    REQUIRE(store.save(read, Durability::lazy));
    RunRecord record = read;
    const auto started = std::chrono::steady_clock::now();
    const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
    CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(400));
    CHECK_FALSE(outcome.drained);
    CHECK(outcome.authorized);
    CHECK(died_of(member) == SIGKILL);
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    REQUIRE(loaded->authority.size() == 1);
    CHECK(loaded->authority[0].reason == "test; TERM sent, the grace period 400ms ended");
    CHECK(has_phase(*loaded, "drain"));
  }
  SUBCASE("--signal KILL: no drain, the authority at once") {
    const Member member = start_member(true);
    RunRecord read = dead_run("20240101T000000-1-0005");
    led_by(read, member.pid, member.start_time);
    read.drain = RecordedDrain{"KILL", 10'000'000'000};
    REQUIRE(store.save(read, Durability::lazy));
    RunRecord record = read;
    const AfterDeathOutcome outcome = take_down_after_death(store, read, record, sweep_like());
    CHECK(outcome.authorized);
    CHECK(died_of(member) == SIGKILL);
    auto loaded = store.load(read.run_id);
    REQUIRE(loaded);
    CHECK_FALSE(has_phase(*loaded, "drain"));
    REQUIRE(loaded->authority.size() == 1);
    CHECK(loaded->authority[0].reason == "test");
  }
}

TEST_CASE("the drain after death: the record's signal and grace; -k 0 and no record are bounded") {
  RunRecord record = minimal_record();
  record.drain = RecordedDrain{"USR1", 2'500'000'000};
  CHECK(drain_after_death(record).signal == signals::usr1);
  CHECK(drain_after_death(record).grace == std::chrono::milliseconds(2500));
  record.drain = RecordedDrain{"TERM", 0};  // -k 0: nobody waits for COMMAND any more
  CHECK(drain_after_death(record).grace == k_leftover_grace);
  record.drain.reset();  // written before the drain was recorded
  CHECK(drain_after_death(record).signal == signals::term);
  CHECK(drain_after_death(record).grace == k_leftover_grace);
}
