#include "fake_boundary.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace treeguard;
using namespace treeguard::testing;
using namespace std::chrono_literals;

namespace {

struct Harness {
  FakeClock clock;
  FakeBoundary boundary{clock};
  FakeJournal journal;
  RunPolicy policy;
  std::vector<std::string> lines;

  RunOutcome run() {
    Logger log = [this](const std::string& line) {
      lines.push_back(line);
    };
    auto outcome = supervise(boundary, journal, clock, policy,
                             SpawnSpec{{"cmd"}, "20261129T000000-1-abcd"}, log);
    CHECK_FALSE(boundary.stuck);
    CHECK(journal.finishes == 1);
    CHECK(journal.exit_code == outcome.exit_code);
    return outcome;
  }
};

}  // namespace

TEST_SUITE_BEGIN("treeguard::supervise");

TEST_CASE("COMMAND exits by itself with an empty boundary") {
  Harness h;
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(3); });
  auto outcome = h.run();
  CHECK(outcome.exit_code == 3);
  CHECK(outcome.disposition == Disposition::pass);
  CHECK(outcome.cause == StopCause::child_exited);
  CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
  CHECK_FALSE(h.boundary.called("kill_all"));
  CHECK(h.journal.requests.empty());
}

TEST_CASE("leftovers are drained; the exit stays COMMAND's") {
  Harness h;
  h.boundary.add_member({});
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK(outcome.exit_code == 0);
  CHECK(h.boundary.called("stop_gracefully TERM"));
  // What the boundary delivered is what the journal records.
  CHECK(h.journal.has_event("sent TERM to every member"));
  CHECK(h.journal.has_event("sent CONT to every member"));
  CHECK_FALSE(h.boundary.called("kill_all"));
  CHECK(outcome.disposition == Disposition::pass);
}

TEST_CASE("leftovers that ignore TERM are forced after --kill-after, authority first") {
  Harness h;
  h.policy.kill_after = 3s;
  h.boundary.add_member({true, true, false});
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
  const auto start = h.clock.now();
  auto outcome = h.run();
  CHECK(outcome.exit_code == 0);
  CHECK(outcome.forced);
  REQUIRE(h.journal.requests.size() == 1);
  CHECK(h.journal.requests[0].action == "cgroup.kill");
  CHECK(h.journal.requests[0].targets.front() == "/fake/treeguard-test");
  // The force came when the grace period ended, not before.
  CHECK(h.clock.now() - start >= 4s);
  auto authority = std::find(h.journal.phases.begin(), h.journal.phases.end(), "authority");
  auto force = std::find(h.journal.phases.begin(), h.journal.phases.end(), "force");
  CHECK(authority < force);
}

TEST_CASE("--leftovers wait waits for them, under the deadline") {
  SUBCASE("they finish") {
    Harness h;
    h.policy.leftovers = Leftovers::wait;
    auto leftover = h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    h.boundary.at(30s, [leftover](FakeBoundary& b) { return b.member_exits(leftover); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 0);
    CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
  }
  SUBCASE("the deadline comes first") {
    Harness h;
    h.policy.leftovers = Leftovers::wait;
    h.policy.timeout = 10s;
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    CHECK(h.boundary.called("stop_gracefully TERM"));
  }
}

TEST_CASE("--leftovers outer: only a clean exit hands the leftovers to the enclosing run") {
  // doctest runs this set-up afresh for each subcase: a run asking to hand its leftovers over
  const EnclosingRun outer{"20260101T000000-1-abcd", BoundaryKind::cgroup, "/fake/treeguard-outer"};
  Harness h;
  h.policy.leftovers = Leftovers::outer;
  SUBCASE("COMMAND exits: handed over, named, not signalled; COMMAND's status") {
    h.policy.enclosing = outer;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(3); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 3);
    CHECK(outcome.disposition == Disposition::pass);
    CHECK(h.boundary.called("hand_over " + outer.run_id));
    CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
    CHECK_FALSE(h.boundary.called("kill_all"));
    REQUIRE(outcome.handed_over.size() == 1);
    CHECK(outcome.handed_to == outer.run_id);
    CHECK(h.journal.handed_to == outer.run_id);
    CHECK(h.journal.handed.size() == 1);
  }
  SUBCASE("the deadline: the whole tree is taken down, nothing handed over") {
    h.policy.enclosing = outer;
    h.policy.timeout = 2s;
    h.boundary.add_member({});
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    CHECK_FALSE(h.boundary.called("hand_over " + outer.run_id));
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.handed_over.empty());
  }
  SUBCASE("a stop request: the whole tree is taken down, nothing handed over") {
    h.policy.enclosing = outer;
    h.boundary.member(0).ignores_term = true;
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::term); });
    h.boundary.at(2s, [](FakeBoundary&) { return FakeBoundary::signal(signals::term); });
    auto outcome = h.run();
    CHECK(outcome.cause == StopCause::signal);
    CHECK_FALSE(h.boundary.called("hand_over " + outer.run_id));
    CHECK(outcome.handed_over.empty());
  }
  SUBCASE("no enclosing run: as --leftovers kill") {
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 0);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.handed_over.empty());
  }
  SUBCASE("the hand-over refused: the leftovers are drained as with kill") {
    h.policy.enclosing = outer;
    h.boundary.refuse_hand_over = true;
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 0);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.handed_over.empty());
    CHECK(h.journal.handed.empty());
  }
}

TEST_CASE("the deadline: 124, or COMMAND's status with --preserve-status") {
  SUBCASE("124") {
    Harness h;
    h.policy.timeout = 2s;
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    CHECK_FALSE(outcome.end_signal);
    CHECK(outcome.cause == StopCause::deadline);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK_FALSE(h.boundary.called("kill_all"));
  }
  SUBCASE("--preserve-status") {
    Harness h;
    h.policy.timeout = 2s;
    h.policy.preserve_status = true;
    auto outcome = h.run();
    CHECK(outcome.exit_code == 128 + 15);
    // After a deadline treeguard exits, as timeout(1) does: it was not the
    // signal's doing that the run ended.
    CHECK_FALSE(outcome.end_signal);
  }
  SUBCASE("a TERM-ignoring COMMAND is killed, still 124") {
    Harness h;
    h.policy.timeout = 2s;
    h.policy.kill_after = 1s;
    h.boundary.member(0).ignores_term = true;
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    CHECK(outcome.forced);
    CHECK(h.boundary.called("kill_all"));
  }
}

namespace {
std::size_t count_calls(const FakeBoundary& b, const std::string& what) {
  return static_cast<std::size_t>(std::count(b.calls.begin(), b.calls.end(), what));
}
}  // namespace

TEST_CASE("an interrupt is passed to COMMAND once and the run goes on") {
  // A program that handles Ctrl-C (a REPL, less) keeps running, and the
  // exit is its own, as without treeguard.
  for (Signal s : {signals::int_, signals::hup, signals::term, signals::quit}) {
    CAPTURE(signal_name(s));
    Harness h;
    h.boundary.member(0).ignores_term = true;
    h.boundary.at(1s, [s](FakeBoundary&) { return FakeBoundary::signal(s); });
    h.boundary.at(5s, [](FakeBoundary& b) { return b.child_exits(7); });
    auto outcome = h.run();
    CHECK(count_calls(h.boundary, "forward " + signal_name(s)) == 1);
    CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.cause == StopCause::child_exited);
    CHECK(outcome.exit_code == 7);
    CHECK_FALSE(outcome.end_signal);
    CHECK(outcome.disposition == Disposition::pass);
  }
}

TEST_CASE("COMMAND dies of the forwarded signal: its leftovers drain, exit 128+N") {
  Harness h;
  h.boundary.add_member({});
  h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::term); });
  auto outcome = h.run();
  CHECK(count_calls(h.boundary, "forward TERM") == 1);
  CHECK(h.boundary.called("stop_gracefully TERM"));
  CHECK(outcome.cause == StopCause::child_exited);
  CHECK(outcome.exit_code == 128 + 15);
  // ... and treeguard ends by that signal once all is done.
  CHECK(outcome.end_signal == 15);
}

TEST_CASE("a second interrupt after COMMAND was sent one is a stop request") {
  for (Signal second : {signals::term, signals::int_, signals::hup}) {
    CAPTURE(signal_name(second));
    Harness h;
    h.boundary.member(0).ignores_term = true;
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
    h.boundary.at(2s, [second](FakeBoundary&) { return FakeBoundary::signal(second); });
    auto outcome = h.run();
    // Passed on once; the second one is not forwarded, it starts the drain.
    CHECK(count_calls(h.boundary, "forward INT") == 1);
    CHECK(count_calls(h.boundary, "forward " + signal_name(second))
          == (second == signals::int_ ? 1U : 0U));
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.cause == StopCause::signal);
    CHECK(outcome.exit_code == 128 + signal_number(second));
    CHECK(outcome.end_signal == signal_number(second));
  }
}

TEST_CASE("Ctrl-C again and again at a REPL: the terminal's interrupts never stop the run") {
  Harness h;
  h.boundary.member(0).ignores_term = true;
  for (auto at : {1s, 2s, 3s}) {
    h.boundary.at(at, [](FakeBoundary&) {
      Event e = FakeBoundary::signal(signals::int_);
      e.already_delivered = true;
      return e;
    });
  }
  h.boundary.at(4s, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK_FALSE(h.boundary.called("forward INT"));
  CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
  CHECK(outcome.cause == StopCause::child_exited);
  CHECK(outcome.exit_code == 0);
}

TEST_CASE("the terminal's interrupt counts as the one COMMAND was sent") {
  Harness h;
  h.boundary.member(0).ignores_term = true;
  h.boundary.at(1s, [](FakeBoundary&) {
    Event e = FakeBoundary::signal(signals::int_);
    e.already_delivered = true;
    return e;
  });
  h.boundary.at(2s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
  auto outcome = h.run();
  CHECK_FALSE(h.boundary.called("forward INT"));
  CHECK(h.boundary.called("stop_gracefully TERM"));
  CHECK(outcome.exit_code == 130);
}

TEST_CASE("USR1 is forwarded and the run goes on") {
  Harness h;
  h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::usr1); });
  h.boundary.at(2s, [](FakeBoundary& b) { return b.child_exits(7); });
  auto outcome = h.run();
  CHECK(h.boundary.called("forward USR1"));
  CHECK(outcome.exit_code == 7);
}

TEST_CASE("SIGALRM is the deadline, now: drained, 124, not passed on") {
  SUBCASE("with a later --timeout") {
    Harness h;
    h.policy.timeout = 60s;
    h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::alrm); });
    auto outcome = h.run();
    CHECK(outcome.cause == StopCause::deadline);
    CHECK(outcome.deadline_by_alarm);
    CHECK(outcome.exit_code == 124);
    CHECK_FALSE(outcome.end_signal);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK_FALSE(h.boundary.called("forward ALRM"));
    CHECK(h.clock.now() < TimePoint() + 1h + 60s);
    CHECK(deadline_name(outcome, h.policy) == "deadline (SIGALRM)");
  }
  SUBCASE("without a deadline") {
    Harness h;
    h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::alrm); });
    auto outcome = h.run();
    CHECK(outcome.cause == StopCause::deadline);
    CHECK(outcome.exit_code == 124);
  }
  SUBCASE("while --leftovers wait waits") {
    Harness h;
    h.policy.leftovers = Leftovers::wait;
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    h.boundary.at(2s, [](FakeBoundary&) { return FakeBoundary::signal(signals::alrm); });
    auto outcome = h.run();
    CHECK(outcome.cause == StopCause::deadline);
    CHECK(outcome.exit_code == 124);
  }
  SUBCASE("during the drain: the deadline has passed already, the grace goes on") {
    Harness h;
    h.policy.timeout = 2s;
    h.policy.kill_after = 5s;
    h.boundary.member(0).ignores_term = true;
    h.boundary.at(3s, [](FakeBoundary&) { return FakeBoundary::signal(signals::alrm); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    CHECK_FALSE(outcome.deadline_by_alarm);
    CHECK_FALSE(outcome.grace_cut_by);
    CHECK(h.clock.now() >= TimePoint() + 1h + 7s);
  }
}

TEST_CASE("a signal the terminal already delivered is not forwarded twice") {
  Harness h;
  h.boundary.at(1s, [](FakeBoundary& b) {
    Event e = FakeBoundary::signal(signals::int_);
    e.already_delivered = true;
    b.child_exits(130);
    return e;
  });
  auto outcome = h.run();
  CHECK_FALSE(h.boundary.called("forward INT"));
  CHECK(outcome.exit_code == 130);
  CHECK_FALSE(outcome.end_signal);  // COMMAND exited 130 by itself: not a death by signal
}

TEST_CASE("an interrupt during the drain skips the rest of the grace period") {
  SUBCASE("the drain of a stop request") {
    Harness h;
    h.policy.kill_after = 60s;
    h.boundary.member(0).ignores_term = true;
    h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
    h.boundary.at(2s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
    h.boundary.at(3s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
    const auto start = h.clock.now();
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(h.clock.now() - start < 10s);
    CHECK(outcome.exit_code == 128 + 2);
  }
  SUBCASE("the drain of leftovers") {
    Harness h;
    h.policy.kill_after = 60s;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    h.boundary.at(2s, [](FakeBoundary&) { return FakeBoundary::signal(signals::int_); });
    const auto start = h.clock.now();
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(h.clock.now() - start < 10s);
  }
}

TEST_CASE("--signal KILL: no graceful signal, authority then force") {
  Harness h;
  h.policy.timeout = 1s;
  h.policy.stop_signal = signals::kill;
  auto outcome = h.run();
  CHECK_FALSE(h.boundary.called("stop_gracefully KILL"));
  CHECK(h.boundary.called("kill_all"));
  CHECK(h.journal.requests.size() == 1);
  CHECK(outcome.exit_code == 124);
  CHECK(h.clock.now() - (TimePoint() + std::chrono::hours(1)) < 2s);
}

TEST_CASE("a deadline signal that stops (TSTP, TTIN, TTOU) is followed by CONT to every member") {
  for (Signal signal : {signals::tstp, signals::ttin, signals::ttou}) {
    CAPTURE(signal_name(signal));
    Harness h;
    h.policy.timeout = 1s;
    h.policy.kill_after = Duration(0);
    h.policy.stop_signal = signal;
    h.boundary.at(1h, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(h.boundary.called("stop_gracefully " + signal_name(signal)));
    // Without the CONT a stopped tree would keep the drain waiting for good
    // (as timeout(1) does, the tree is continued and runs on).
    CHECK(h.boundary.called("stop_gracefully CONT"));
    CHECK(outcome.exit_code == 124);
  }
  // Not after TERM: the boundary's own CONT goes to whom it saw stopped.
  Harness h;
  h.policy.timeout = 1s;
  h.run();
  CHECK(h.boundary.called("stop_gracefully TERM"));
  CHECK_FALSE(h.boundary.called("stop_gracefully CONT"));
}

TEST_CASE("-k 0: no forced kill, the drain waits as long as it takes (as timeout)") {
  Harness h;
  h.policy.timeout = 1s;
  h.policy.kill_after = Duration(0);
  h.boundary.member(0).ignores_term = true;
  h.boundary.at(1h, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK(h.boundary.called("stop_gracefully TERM"));
  CHECK_FALSE(h.boundary.called("kill_all"));
  CHECK(outcome.exit_code == 124);
  CHECK(outcome.disposition == Disposition::pass);
}

TEST_CASE(
    "-k 0: what COMMAND leaves behind gets k_leftover_grace once COMMAND is gone, then KILL") {
  Harness h;
  h.policy.kill_after = Duration(0);
  h.policy.kill_exits_137 = true;  // as under timeout's grammar
  h.boundary.add_member({true, true, false});
  SUBCASE("COMMAND exits by itself: its status, within the bounded grace") {
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(3); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 3);
    CHECK(outcome.forced);
    CHECK(outcome.grace == k_leftover_grace);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(h.clock.now() - (TimePoint() + 1h) == 1s + k_leftover_grace);
    REQUIRE(h.journal.requests.size() == 1);
    CHECK(h.journal.requests[0].reason.find("COMMAND exited") != std::string::npos);
  }
  SUBCASE("no deadline either (timeout 0): the same bound") {
    h.policy.timeout.reset();
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(3); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 3);
    CHECK(h.clock.now() - (TimePoint() + 1h) == 1s + k_leftover_grace);
  }
  SUBCASE("at the deadline COMMAND dies of TERM, its leftover does not: 124, not 137") {
    h.policy.timeout = 1s;
    auto outcome = h.run();
    CHECK(outcome.cause == StopCause::deadline);
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == 124);
    CHECK(h.clock.now() - (TimePoint() + 1h) == 1s + k_leftover_grace);
  }
  SUBCASE("COMMAND itself ignores TERM: waited for without limit, as timeout; then the bound") {
    h.policy.timeout = 1s;
    h.boundary.member(0).ignores_term = true;
    h.boundary.at(1h, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == 124);
    CHECK(h.clock.now() - (TimePoint() + 1h) == 1h + k_leftover_grace);
  }
}

TEST_CASE("timeout's 137: after the deadline, only when COMMAND died of the KILL") {
  Harness h;
  h.policy.timeout = 1s;
  h.policy.kill_after = 1s;
  h.policy.kill_exits_137 = true;
  h.boundary.member(0).ignores_term = true;
  SUBCASE("COMMAND resisted TERM and died of the forced kill: 137") {
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == 137);
  }
  SUBCASE("COMMAND ends with exit status 9 on TERM, a leftover is forced: 124") {
    h.boundary.add_member({true, true, false});
    h.boundary.at(1500ms, [](FakeBoundary& b) { return b.child_exits(9); });
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == 124);
  }
  SUBCASE("under run's grammar a KILL is still 124") {
    h.policy.kill_exits_137 = false;
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == 124);
  }
}

TEST_CASE("the authority names the boundary's own force method") {
  Harness h;
  h.policy.kill_after = 1s;
  h.boundary.force = ForceMethod{"TerminateJobObject", std::nullopt, "the job"};
  h.boundary.add_member({true, true, false});
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK(outcome.forced);
  REQUIRE(h.journal.requests.size() == 1);
  CHECK(h.journal.requests[0].action == "TerminateJobObject");
  CHECK(h.journal.has_event("forced kill (TerminateJobObject)"));
}

TEST_CASE("the forced kill takes one census, the authority's, and follows it once it is durable") {
  // A forker keeps adding members while it is killed: every walk of them
  // before the kill is time it forks in. The members the authority names
  // are the one census; nothing walks them again between the durable entry
  // and the kill (DESIGN.md [authority], [verify]).
  Harness h;
  std::vector<std::string> trace;
  h.boundary.trace = &trace;
  h.journal.trace = &trace;
  h.policy.timeout = 1s;
  h.policy.kill_after = 1s;
  h.boundary.member(0).ignores_term = true;
  h.boundary.add_member({true, true, false});
  h.boundary.add_member({true, true, false});
  auto outcome = h.run();
  CHECK(outcome.forced);
  CHECK(outcome.exit_code == 124);
  const auto authority = std::find(trace.begin(), trace.end(), "phase authority");
  const auto kill = std::find(trace.begin(), trace.end(), "kill_all");
  REQUIRE(authority < kill);
  const std::vector<std::string> steps(authority, kill + 1);
  std::string said;
  for (const auto& step : steps) {
    said += step + "; ";
  }
  INFO("from the authority phase to the kill: " << said);
  CHECK(steps
        == std::vector<std::string>{"phase authority", "census", "authority durable", "phase force",
                                    "kill_all"});
  // The journal is handed that census (it takes none of its own), and the
  // run names the same members as forced.
  REQUIRE(h.journal.requests.size() == 1);
  REQUIRE(h.journal.requests[0].alive);
  CHECK(h.journal.requests[0].alive->size() == 3);
  CHECK(outcome.forced_members.size() == 3);
}

TEST_CASE(
    "out of memory in the takedown: never 125 once COMMAND runs; taken down, or the guardian's") {
  SUBCASE("the first kill throws: taken down again, authority first; 122, the guardian dismissed") {
    Harness h;
    h.policy.kill_after = 1s;
    h.boundary.kill_all_throws = 1;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();  // does not throw
    CHECK(outcome.exit_code == 122);
    CHECK(outcome.disposition == Disposition::ambiguous);
    CHECK_FALSE(outcome.guardian_must_act);
    CHECK(std::count(h.boundary.calls.begin(), h.boundary.calls.end(), "kill_all") == 2);
    REQUIRE(h.journal.requests.size() == 2);
    CHECK(h.journal.requests[1].reason == "internal error: std::bad_alloc");
    CHECK(h.boundary.is_empty().value());
    CHECK(outcome.message.find("the tree was taken down") != std::string::npos);
  }
  SUBCASE("every kill throws: 122, and the guardian must act") {
    Harness h;
    h.policy.kill_after = 1s;
    h.boundary.kill_all_throws = 2;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    RunOutcome outcome;
    CHECK_NOTHROW(outcome = supervise(h.boundary, h.journal, h.clock, h.policy,
                                      SpawnSpec{{"cmd"}, "20261129T000000-1-abcd"}, Logger()));
    CHECK(outcome.exit_code == 122);
    CHECK(outcome.guardian_must_act);
    CHECK(outcome.message.find("the guardian takes it down") != std::string::npos);
  }
  SUBCASE("an error before any kill, the authority not durable: nothing killed, 122") {
    Harness h;
    h.journal.refuse_authority = true;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary&) -> Event { throw std::bad_alloc(); });
    auto outcome = h.run();  // does not throw
    CHECK(outcome.exit_code == 122);
    CHECK(outcome.disposition == Disposition::ambiguous);
    CHECK(outcome.force_withheld);
    CHECK_FALSE(outcome.forced);
    CHECK_FALSE(h.boundary.called("kill_all"));
    CHECK(h.boundary.member(0).alive);  // kept as evidence
    CHECK(h.boundary.member(1).alive);
    REQUIRE(h.journal.requests.size() == 1);
    CHECK(h.journal.requests[0].reason == "internal error: std::bad_alloc");
    CHECK(outcome.message.find("is kept as evidence") != std::string::npos);
  }
}

TEST_CASE("-v says where the forced kill goes, as the boundary does it") {
  Harness h;
  h.policy.kill_after = 1s;
  h.boundary.force = ForceMethod{"SIGKILL", signals::kill, "to each member of pgid 42, by pidfd"};
  h.boundary.add_member({true, true, false});
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK(outcome.forced);
  CHECK(std::count(h.lines.begin(), h.lines.end(),
                   "force: SIGKILL to each member of pgid 42, by pidfd")
        == 1);
}

TEST_CASE("a kill-on-close boundary: standing authority before spawn, or nothing starts") {
  SUBCASE("recorded, then COMMAND runs") {
    Harness h;
    h.boundary.force = ForceMethod{"TerminateJobObject", std::nullopt, "the job"};
    h.boundary.standing = "controller death closes the job";
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 0);
    REQUIRE(h.journal.requests.size() == 1);
    CHECK(h.journal.requests[0].action == "TerminateJobObject (kill-on-close)");
    CHECK(h.journal.requests[0].reason == "controller death closes the job");
    REQUIRE_FALSE(h.boundary.calls.empty());
    CHECK(h.boundary.calls.front() == "spawn cmd");
  }
  SUBCASE("not durable: no spawn, 125") {
    Harness h;
    h.boundary.standing = "controller death closes the job";
    h.journal.refuse_authority = true;
    auto outcome = h.run();
    CHECK(outcome.exit_code == 125);
    CHECK_FALSE(h.boundary.called("spawn cmd"));
    CHECK(outcome.message.find("nothing started") != std::string::npos);
  }
  SUBCASE("a boundary with a guardian records none") {
    Harness h;
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    h.run();
    CHECK(h.journal.requests.empty());
  }
}

TEST_CASE("no durable authority: no forced kill, ambiguous, 122") {
  Harness h;
  h.journal.refuse_authority = true;
  h.policy.timeout = 1s;
  h.policy.kill_after = 1s;
  h.boundary.member(0).ignores_term = true;
  auto outcome = h.run();
  CHECK(outcome.exit_code == 122);
  CHECK(outcome.disposition == Disposition::ambiguous);
  CHECK(outcome.force_withheld);
  CHECK_FALSE(outcome.forced);
  CHECK_FALSE(h.boundary.called("kill_all"));
  CHECK(h.boundary.member(0).alive);  // kept as evidence
  CHECK(h.journal.disposition == Disposition::ambiguous);
}

TEST_CASE("COMMAND died of a signal but members survived: 122, never ended by the signal") {
  Harness h;
  h.policy.kill_after = 1s;
  h.policy.verify_for = 2s;
  h.boundary.add_member({true, true, true});
  h.boundary.at(1s, [](FakeBoundary&) { return FakeBoundary::signal(signals::term); });
  auto outcome = h.run();
  REQUIRE(outcome.child_status);
  CHECK(outcome.child_status->signaled);
  CHECK(outcome.exit_code == 122);
  CHECK_FALSE(outcome.end_signal);
}

TEST_CASE("members that survive the forced kill: failed, 122, named") {
  Harness h;
  h.policy.timeout = 1s;
  h.policy.kill_after = 1s;
  h.policy.verify_for = 2s;
  h.boundary.add_member({true, true, true});
  auto outcome = h.run();
  CHECK(outcome.exit_code == 122);
  CHECK(outcome.disposition == Disposition::failed);
  REQUIRE(outcome.survivors.size() == 1);
  CHECK(outcome.survivors[0].pid == 101);
}

TEST_CASE("a boundary gone under the run: ambiguous at once, never a wait, a force or a survivor") {
  // Its own object removed from outside (a leaf's rmdir): nothing can be
  // waited on, signalled or proven through it any more. The run ends when it
  // is seen gone, not at the end of a grace period it could only spin
  // through, and nothing is sent to what is not there.
  Harness h;
  h.policy.kill_after = 60s;
  h.policy.verify_for = 2s;
  const auto start = h.clock.now();
  auto expect_unproven = [&h](const RunOutcome& outcome) {
    CHECK(outcome.exit_code == 122);
    CHECK(outcome.disposition == Disposition::ambiguous);
    CHECK(h.journal.disposition == Disposition::ambiguous);
    CHECK(outcome.survivors.empty());
    CHECK(outcome.message.find("removed from outside") != std::string::npos);
    CHECK(outcome.message.find("survived") == std::string::npos);
    CHECK_FALSE(outcome.end_signal);
    CHECK_FALSE(h.boundary.called("close"));  // nothing proven: nothing removed
    CHECK(h.journal.has_event("the fake boundary was removed from outside: the boundary is gone"));
  };
  SUBCASE("while COMMAND runs") {
    h.boundary.at(1s, [](FakeBoundary& b) { return b.vanishes(); });
    auto outcome = h.run();
    expect_unproven(outcome);
    CHECK(h.clock.now() - start == 1s);
    CHECK_FALSE(h.boundary.called("stop_gracefully TERM"));
    CHECK_FALSE(h.boundary.called("kill_all"));
  }
  SUBCASE("during the drain of leftovers") {
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    h.boundary.at(5s, [](FakeBoundary& b) { return b.vanishes(); });
    auto outcome = h.run();
    expect_unproven(outcome);
    CHECK(h.clock.now() - start == 5s);  // not at the grace period's end (61 s)
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK_FALSE(h.boundary.called("kill_all"));
    CHECK(h.journal.requests.empty());  // no authority for a kill never sent
  }
  SUBCASE("during the verification after the forced kill") {
    h.policy.timeout = 1s;
    h.policy.kill_after = 1s;
    h.boundary.add_member({true, true, true});
    h.boundary.at(2500ms, [](FakeBoundary& b) { return b.vanishes(); });
    auto outcome = h.run();
    expect_unproven(outcome);
    CHECK(outcome.forced);
    CHECK(h.clock.now() - start == 2500ms);  // not after the verification's windows
  }
  // Asked once: no phase after it asks again, no retry loop.
  CHECK(h.boundary.asked_when_gone == 1);
}

TEST_CASE("not empty after the forced kill, yet no member seen alive: ambiguous, none 'survived'") {
  Harness h;
  h.policy.timeout = 1s;
  h.policy.kill_after = 1s;
  h.policy.verify_for = 2s;
  h.boundary.never_empty = true;
  auto outcome = h.run();
  CHECK(outcome.exit_code == 122);
  CHECK(outcome.disposition == Disposition::ambiguous);
  CHECK(outcome.survivors.empty());
  CHECK(outcome.message.find("no member of it is seen alive") != std::string::npos);
  CHECK(outcome.message.find("survived") == std::string::npos);
}

TEST_CASE("spawn failures map to 127, 126, 125") {
  struct Case {
    int error;
    std::string context;
    int expected;
  };
  for (const auto& c :
       {Case{2, "exec nope", 127}, Case{13, "exec ./x", 126}, Case{12, "clone3", 125}}) {
    CAPTURE(c.context);
    Harness h;
    h.boundary.spawn_error = errno_error(c.error, c.context);
    auto outcome = h.run();
    CHECK(outcome.exit_code == c.expected);
    CHECK(outcome.disposition == Disposition::pass);
  }
}

TEST_CASE("a spawn failure with the boundary not proven empty: ambiguous, never pass") {
  Harness h;
  h.boundary.spawn_error = errno_error(2, "exec nope");
  h.boundary.add_member({true, false, false});  // something alive in the boundary all the same
  auto outcome = h.run();
  CHECK(outcome.exit_code == 127);
  CHECK(outcome.disposition == Disposition::ambiguous);
  CHECK(h.journal.disposition == Disposition::ambiguous);
  CHECK_FALSE(h.boundary.called("close"));  // a boundary not proven empty is not closed
}

TEST_CASE("shell_status") {
  CHECK(shell_status(ExitStatus{false, 0}) == 0);
  CHECK(shell_status(ExitStatus{false, 255}) == 255);
  CHECK(shell_status(ExitStatus{true, 9}) == 137);
}

TEST_SUITE_END();

namespace {

// A holdings reader that notes when it was asked, before or after any signal.
struct ReaderProbe {
  std::vector<std::vector<MemberInfo>> asked;
  std::vector<bool> before_any_signal;
  HoldingsReader reader(const FakeBoundary& boundary) {
    return [this, &boundary](const std::vector<MemberInfo>& members) {
      asked.push_back(members);
      before_any_signal.push_back(!boundary.called("stop_gracefully TERM")
                                  && !boundary.called("kill_all"));
      std::vector<ProcessHoldings> out;
      for (const auto& member : members) {
        out.push_back(ProcessHoldings{member, {{HoldingKind::listening, "tcp 0.0.0.0:8000"}}, ""});
      }
      return out;
    };
  }
};

}  // namespace

TEST_CASE("leftovers: named with what they hold, read before any signal; a clean run reads none") {
  SUBCASE("a clean run: nothing read, no leftovers, no leak") {
    Harness h;
    ReaderProbe probe;
    h.policy.read_holdings = probe.reader(h.boundary);
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(probe.asked.empty());
    CHECK(outcome.leftovers.empty());
    CHECK_FALSE(outcome.leaked);
  }
  SUBCASE("leftovers: read once, before the drain; a leak, the exit stays COMMAND's") {
    Harness h;
    ReaderProbe probe;
    h.policy.read_holdings = probe.reader(h.boundary);
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    REQUIRE(probe.asked.size() == 1);
    CHECK(probe.before_any_signal.front());
    REQUIRE(outcome.leftovers.size() == 1);
    CHECK(outcome.leftovers.front().pid == 101);
    CHECK(outcome.leaked);
    CHECK(outcome.exit_code == 0);
    REQUIRE(outcome.holdings.size() == 1);
    CHECK(outcome.holdings.front().who.pid == 101);
    CHECK(h.journal.has_event("COMMAND left 1 process(es) behind: pid 101"));
  }
  SUBCASE("at the deadline, before the drain") {
    Harness h;
    ReaderProbe probe;
    h.policy.read_holdings = probe.reader(h.boundary);
    h.policy.timeout = 2s;
    h.boundary.add_member({});
    auto outcome = h.run();
    CHECK(outcome.exit_code == 124);
    REQUIRE(probe.asked.size() == 1);
    CHECK(probe.before_any_signal.front());
    CHECK(probe.asked.front().size() == 2);
    CHECK(outcome.leftovers.empty());
    CHECK_FALSE(outcome.leaked);
  }
  SUBCASE("the survivors of the forced kill, read again") {
    Harness h;
    ReaderProbe probe;
    h.policy.read_holdings = probe.reader(h.boundary);
    h.boundary.add_member({true, true, true});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 122);
    REQUIRE(probe.asked.size() == 2);
    CHECK(probe.asked.back().size() == 1);
    CHECK(outcome.holdings.size() == 1);  // the same process, its last reading
  }
}

TEST_CASE("--leftovers fail: a leak is 120 when COMMAND exited 0; COMMAND's failure stands") {
  Harness h;
  h.policy.leftovers = Leftovers::fail;
  SUBCASE("exit 0 and a leftover: taken down as kill does, 120") {
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == k_exit_leaked);
    CHECK(h.journal.exit_code == k_exit_leaked);
    CHECK(h.boundary.called("stop_gracefully TERM"));
    CHECK(outcome.disposition == Disposition::pass);
    CHECK(outcome.leaked);
  }
  SUBCASE("exit 3 and a leftover: 3") {
    h.boundary.add_member({});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(3); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 3);
    CHECK(outcome.leaked);
  }
  SUBCASE("exit 0 and nothing left: 0") {
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.exit_code == 0);
    CHECK_FALSE(outcome.leaked);
  }
  SUBCASE("a leftover that resists TERM: forced, still 120") {
    h.policy.kill_after = 1s;
    h.boundary.add_member({true, true, false});
    h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
    auto outcome = h.run();
    CHECK(outcome.forced);
    CHECK(outcome.exit_code == k_exit_leaked);
  }
}

TEST_CASE("--leftovers outer: what the enclosing run takes is not a leak") {
  Harness h;
  h.policy.leftovers = Leftovers::outer;
  h.policy.enclosing =
      EnclosingRun{"20260101T000000-1-abcd", BoundaryKind::cgroup, "/fake/treeguard-outer"};
  h.boundary.add_member({});
  h.boundary.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });
  auto outcome = h.run();
  CHECK(outcome.leftovers.size() == 1);
  CHECK(outcome.handed_over.size() == 1);
  CHECK_FALSE(outcome.leaked);
}
