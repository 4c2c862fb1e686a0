// What the run owns, judged over a process table written by hand
// (DESIGN.md [identity], [liveness], [membership], [escapes], [ownership]).
#include "census.hpp"
#include "fake_process_table.hpp"

#include <doctest/doctest.h>

using namespace treeguard;
using namespace treeguard::testing;

namespace {

// The run: its controller (pid 50) started at tick 1000; COMMAND (pid 100)
// in the same tick's successor, leading its own group in the caller's
// session (10); the guardian (pid 60) is a helper; orphans go to PID 1 or
// the recorded reaper (pid 40).
const std::string k_run = "20240131T235959-4242-0a9f";
const Viewer k_viewer{70, 1000};

MemberInfo member(long pid, unsigned long long start, bool leads_group = false,
                  bool leads_session = false) {
  MemberInfo info;
  info.pid = pid;
  info.start_time = start;
  info.leads_group = leads_group;
  info.leads_session = leads_session;
  return info;
}

Claim run_claim() {
  Claim claim;
  claim.run_id = k_run;
  claim.members = {member(100, 1001, true)};
  claim.helpers = {ProcessIdentity{50, 1000}, ProcessIdentity{60, 1000}};
  claim.not_before = 1000;
  claim.reapers = {ProcessIdentity{40, 900}};
  return claim;
}

// The host every case starts from: PID 1, the reaper, the caller's shell
// (the session leader), the controller and guardian, and a stranger of
// this user's (pid 30) under which strangers' children live.
FakeProcessTable host() {
  FakeProcessTable table;
  table.add(process(1, 1, 0, 1, 1))
      .add(process(40, 900, 1, 40, 40))
      .add(process(10, 950, 1, 10, 10))
      .add(process(30, 960, 10, 30, 10))
      .add(process(50, 1000, 10, 50, 10))
      .add(process(60, 1000, 1, 60, 60));
  return table;
}

std::vector<long> owned(const Claim& claim, const FakeProcessTable& table,
                        const Viewer& viewer = k_viewer) {
  return table.pids(judge_census(claim, table, viewer).owned);
}

FakeProcess dead(FakeProcess fake) {
  fake.facts.alive = false;
  return fake;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::census");

TEST_CASE("a member is the run's by its identity; a recycled pid is not") {
  auto table = host();
  table.add(process(100, 1001, 50, 100, 10));
  CHECK(owned(run_claim(), table) == std::vector<long>{100});

  // COMMAND died; its pid went to a stranger who made a group and a
  // session of it, and forked: neither is the run's.
  auto recycled = host();
  recycled.add(process(100, 2000, 30, 100, 100)).add(process(101, 2001, 100, 100, 100));
  CHECK(owned(run_claim(), recycled).empty());
  CHECK_FALSE(recycled.read_environment_of(100));
  CHECK_FALSE(recycled.read_environment_of(101));
}

TEST_CASE("a parent and the child it forked in the same clock tick: the child is the run's") {
  // The child left COMMAND's group and session and dropped the marker:
  // only its parent makes it the run's, and both started in tick 1001.
  auto table = host();
  table.add(process(100, 1001, 50, 100, 10)).add(process(101, 1001, 100, 101, 101));
  CHECK(owned(run_claim(), table) == std::vector<long>{100, 101});
}

TEST_CASE("a child of the same clock tick listed before its parent is the run's all the same") {
  // The pids wrapped around between them: the child (pid 20) is listed,
  // and numbered, before its parent (pid 32000), and before that parent's
  // own parent, COMMAND's child of the same tick.
  auto table = host();
  table.add(process(20, 1001, 32000, 20, 20))
      .add(process(100, 1001, 50, 100, 10))
      .add(process(32000, 1001, 31000, 32000, 32000))
      .add(process(31000, 1001, 100, 31000, 31000));
  CHECK(owned(run_claim(), table) == std::vector<long>{100, 31000, 32000, 20});
}

TEST_CASE("a stranger's child of the same clock tick is the stranger's, whatever it carries") {
  // A stranger (pid 200, not the run's) forked a child carrying a copy of
  // the run's marker in the tick it started itself: the child's parent is
  // alive and is that stranger, not a reaper; its environment is not read.
  auto table = host();
  table.add(process(200, 1500, 30, 30, 10)).add(marked(process(201, 1500, 200, 30, 10)));
  CHECK(owned(run_claim(), table).empty());
  CHECK_FALSE(table.read_environment_of(201));
}

TEST_CASE("a child started before the process holding its parent's pid has lost its parent") {
  // Its parent died and the pid went to a younger process: the child's
  // ancestry is lost, so its marker says whose it is; and it is no
  // child of that younger process, member or not.
  auto table = host();
  table.add(marked(process(301, 1400, 300, 301, 301))).add(process(300, 1500, 10, 300, 10));
  CHECK(owned(run_claim(), table) == std::vector<long>{301});

  Claim claim = run_claim();
  claim.members.push_back(member(300, 1500));
  auto unmarked = host();
  unmarked.add(process(301, 1400, 300, 301, 301)).add(process(300, 1500, 10, 300, 10));
  CHECK(owned(claim, unmarked) == std::vector<long>{300});
}

TEST_CASE("a leader that called pthread_exit is alive while its threads run: it vouches") {
  // COMMAND's leader thread exited; the table (the platform's one rule)
  // says the process is alive. It is the run's, and so is whatever is in
  // the group it made, though nothing else ties that process to the run.
  auto table = host();
  table.add(process(100, 1001, 50, 100, 10)).add(process(105, 1100, 1, 100, 10));
  CHECK(owned(run_claim(), table) == std::vector<long>{100, 105});

  // Its whole thread group gone (a zombie): dead, and its group's id is
  // no longer vouched for.
  auto gone = host();
  gone.add(dead(process(100, 1001, 50, 100, 10))).add(process(105, 1100, 1, 100, 10));
  const CensusRows rows = judge_census(run_claim(), gone, k_viewer);
  CHECK(rows.owned.empty());
  CHECK(gone.pids(rows.seen) == std::vector<long>{1, 40, 10, 30, 105});
}

TEST_CASE("a stranger joining the run's group is in it; a group named after a dead member is not") {
  // Pid 210 (the caller's, same session) moved into COMMAND's group while
  // COMMAND lives: it is inside the boundary.
  auto table = host();
  table.add(process(100, 1001, 50, 100, 10)).add(process(210, 1200, 30, 100, 10));
  CHECK(owned(run_claim(), table) == std::vector<long>{100, 210});

  // COMMAND is dead, and nothing of the run is alive in group 100: a
  // process in a group of that id is a stranger's (the pid was recycled).
  auto after = host();
  after.add(process(210, 1200, 30, 100, 10));
  CHECK(owned(run_claim(), after).empty());
}

TEST_CASE("a session a member made is the run's while a recorded member is alive in it") {
  Claim claim = run_claim();
  claim.members.push_back(member(110, 1010, true, true));  // setsid'd, then died
  claim.members.push_back(member(111, 1011));              // still in that session
  auto table = host();
  table.add(process(111, 1011, 1, 111, 110)).add(process(112, 1300, 1, 112, 110));
  CHECK(owned(claim, table) == std::vector<long>{111, 112});

  auto unvouched = host();
  unvouched.add(process(112, 1300, 1, 112, 110));
  CHECK(owned(claim, unvouched).empty());
}

TEST_CASE("the run's marker claims an orphan born after the run, from its first tick on") {
  auto table = host();
  table
      .add(marked(process(400, 999, 1, 400, 400)))     // older than the run
      .add(marked(process(401, 1000, 1, 401, 401)))    // the controller's own tick
      .add(marked(process(402, 1500, 40, 402, 402)))   // the recorded reaper's orphan
      .add(marked(process(403, 1600, 777, 403, 403)))  // its parent is gone
      .add(marked(process(404, 1700, 0, 404, 404)))    // parent outside the namespace
      .add(process(405, 1800, 1, 405, 405))            // an orphan without the marker
      .add(marked(process(406, 1900, 30, 406, 406)));  // a stranger's child
  CHECK(owned(run_claim(), table) == std::vector<long>{401, 402, 403, 404});
  CHECK_FALSE(table.read_environment_of(400));
  CHECK_FALSE(table.read_environment_of(406));
  CHECK(table.read_environment_of(405));
}

TEST_CASE("a marked orphan started before the last look at the run's tree is a stranger") {
  // The guardian last looked at tick 1400: every process of the run alive
  // then was in the controller's tree and is a member. An orphan carrying
  // the marker that was alive then and not seen in the tree is someone
  // else's (a daemon an `at` job left), whatever its user; one born from
  // that tick on may be the run's.
  Claim claim = run_claim();
  claim.last_look = 1400;
  auto table = host();
  FakeProcess stranger = marked(process(430, 1399, 1, 430, 430));
  stranger.uid = 1001;
  FakeProcess later = marked(process(432, 1401, 1, 432, 432));
  later.uid = 1001;
  const FakeProcess command = process(100, 1001, 50, 100, 10);
  table.add(command)
      .add(stranger)
      .add(marked(process(431, 1400, 40, 431, 431)))  // the look's own tick
      .add(later)
      .add(process(433, 1300, 100, 433, 433));  // COMMAND's child: by descent
  const CensusRows rows = judge_census(claim, table, k_viewer);
  CHECK(table.pids(rows.owned) == std::vector<long>{100, 433, 431, 432});
  CHECK(rows.left_alone.empty());
  CHECK_FALSE(table.read_environment_of(430));
}

TEST_CASE("where nobody looked, a marked orphan of another user is left alone, and said") {
  auto table = host();
  FakeProcess theirs = marked(process(440, 1500, 1, 440, 440));
  theirs.uid = 1001;
  table.add(theirs).add(marked(process(441, 1501, 1, 441, 441)));
  const CensusRows rows = judge_census(run_claim(), table, k_viewer);
  CHECK(table.pids(rows.owned) == std::vector<long>{441});
  CHECK(table.pids(rows.left_alone) == std::vector<long>{440});
  // Root judging: root's own marked orphans are claimed, another user's not.
  FakeProcessTable as_root = host();
  FakeProcess roots = marked(process(442, 1502, 1, 442, 442));
  roots.uid = 0;
  as_root.add(theirs).add(roots);
  const CensusRows by_root = judge_census(run_claim(), as_root, Viewer{70, 0});
  CHECK(as_root.pids(by_root.owned) == std::vector<long>{442});
  CHECK(as_root.pids(by_root.left_alone) == std::vector<long>{440});
}

TEST_CASE("a process holding the recorded reaper's pid is not the reaper") {
  // The reaper died and pid 40 went to a stranger, whose child carries a
  // copy of the marker: that child was not adopted, it was born there.
  FakeProcessTable recycled;
  recycled.add(process(1, 1, 0, 1, 1))
      .add(process(40, 1200, 30, 40, 10))
      .add(marked(process(420, 1300, 40, 420, 420)));
  CHECK(owned(run_claim(), recycled).empty());
  CHECK_FALSE(recycled.read_environment_of(420));
}

TEST_CASE("without a run id nothing is claimed by a marker") {
  Claim claim = run_claim();
  claim.run_id.clear();
  auto table = host();
  table.add(marked(process(400, 1500, 1, 400, 400)));
  CHECK(owned(claim, table).empty());
  CHECK(table.environments_read().empty());
}

TEST_CASE("an unreadable environment: unknowable when it is the viewer's own user's, not root") {
  auto table = host();
  FakeProcess mine = process(500, 1500, 1, 500, 500);
  mine.marker = Marker::unreadable;
  FakeProcess theirs = process(501, 1501, 1, 501, 501);
  theirs.marker = Marker::unreadable;
  theirs.uid = 1001;
  table.add(mine).add(theirs);
  const CensusRows rows = judge_census(run_claim(), table, k_viewer);
  CHECK(rows.owned.empty());
  CHECK(table.pids(rows.unknowable) == std::vector<long>{500});

  FakeProcessTable as_root = host();
  mine.uid = 0;
  as_root.add(mine);
  CHECK(judge_census(run_claim(), as_root, Viewer{70, 0}).unknowable.empty());
}

TEST_CASE("the helpers and the viewer are never the run's nor seen, whatever they carry") {
  Claim claim = run_claim();
  claim.members.push_back(member(60, 1000));  // a record naming the guardian
  auto table = host();
  table.add(marked(process(70, 1500, 1, 70, 70)));  // the viewer, an orphan with the marker
  const CensusRows rows = judge_census(claim, table, k_viewer);
  CHECK(rows.owned.empty());
  CHECK(table.pids(rows.seen) == std::vector<long>{1, 40, 10, 30});
}

TEST_CASE("the census lists what it owns oldest first, whatever the table's order") {
  auto table = host();
  table.add(marked(process(90, 1700, 1, 90, 90)))
      .add(process(101, 1200, 100, 100, 10))
      .add(process(100, 1001, 50, 100, 10));
  CHECK(owned(run_claim(), table) == std::vector<long>{100, 101, 90});
}

TEST_CASE("sighting: leaving COMMAND's group or session is an escape; leading one is seen") {
  const CommandGroup command{100, 10};
  CHECK_FALSE(sighting(process(101, 1, 100, 100, 10).facts, command).left_group);
  CHECK(sighting(process(102, 1, 100, 102, 10).facts, command).left_group);   // setpgid
  CHECK(sighting(process(103, 1, 100, 103, 103).facts, command).left_group);  // setsid
  CHECK(sighting(process(103, 1, 100, 103, 103).facts, command).leads_session);
  CHECK(sighting(process(102, 1, 100, 102, 10).facts, command).leads_group);
  CHECK_FALSE(sighting(process(103, 1, 100, 103, 103).facts, CommandGroup{}).left_group);
}

TEST_SUITE_END();
