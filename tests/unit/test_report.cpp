// The report a person reads (treeguard(1), REPORT): why the run ended kept
// apart from whether its takedown was proven, every time in RFC 3339 beside
// its nanoseconds, the lengths in seconds agreeing with the times, what was
// asked for, and a member that left COMMAND's group never called escaped.
#include "record_fixtures.hpp"
#include "report.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

using namespace treeguard;
using namespace treeguard::test;

namespace {

// 2026-01-01T12:00:00Z, in ns since the epoch.
constexpr std::int64_t k_noon = 1767268800000000000LL;
constexpr std::int64_t k_ms = 1000000;

// A run that hit its 2 s deadline: TERM resisted for the 500 ms grace, the
// forced kill, the proof; COMMAND died of the KILL; a setsid'd member.
struct DeadlineRun {
  RunRecord record = minimal_record("20260101T120000-7-0a0b");
  std::vector<TimelineEntry> timeline;
  RunOutcome outcome;
  RunPolicy policy;

  DeadlineRun() {
    record.phases = {{"spawn", k_noon},
                     {"running", k_noon + 5 * k_ms},
                     {"drain", k_noon + 2005 * k_ms},
                     {"authority", k_noon + 2505 * k_ms},
                     {"force", k_noon + 2506 * k_ms},
                     {"verify", k_noon + 2507 * k_ms},
                     {"exit", k_noon + 2520 * k_ms}};
    record.authority = {{k_noon + 2505 * k_ms,
                         "cgroup.kill",
                         {"/sys/fs/cgroup/t/treeguard-20260101T120000-7-0a0b"},
                         "deadline 2s passed and the grace period 500ms ended",
                         "controller pid 7"}};
    MemberInfo command;
    command.pid = 8;
    command.start_time = 80;
    command.comm = "make";
    MemberInfo server = command;
    server.pid = 9;
    server.start_time = 90;
    server.comm = "python3";
    server.left_group = true;
    server.leads_session = server.leads_group = true;
    record.members = {command, server};
    timeline = {{k_noon + 2004 * k_ms, "deadline passed", std::nullopt},
                {k_noon + 2005 * k_ms, "sent TERM to every member", signals::term}};
    outcome.cause = StopCause::deadline;
    outcome.child_status = ExitStatus{true, 9, false};
    outcome.forced = true;
    outcome.disposition = Disposition::pass;
    outcome.exit_code = 124;
    policy.timeout = std::chrono::seconds(2);
    policy.kill_after = std::chrono::milliseconds(500);
  }

  nlohmann::json report(std::int64_t ended_at = k_noon + 2521 * k_ms) const {
    return nlohmann::json::parse(
        make_report(ReportInput{record, timeline, outcome, policy, k_noon, ended_at}));
  }
};

}  // namespace

TEST_SUITE_BEGIN("treeguard::Report");

TEST_CASE("rfc3339: UTC to the microsecond, before the epoch counted down from it") {
  CHECK(rfc3339(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(rfc3339(k_noon + 123456789) == "2026-01-01T12:00:00.123456Z");
  CHECK(rfc3339(-1) == "1969-12-31T23:59:59.999999Z");
}

TEST_CASE("a deadline run: ended by the deadline, the takedown proven, exit 124") {
  const DeadlineRun run;
  const auto report = run.report();
  CHECK(report["format"] == "treeguard-report/2");
  CHECK(report["ended_by"] == "deadline");
  CHECK(report["takedown"] == "pass");
  CHECK(report["exit_code"] == 124);
  CHECK(report["command_status"]["signal"] == "KILL");
  CHECK(report["stop_request_signal"].is_null());
  CHECK(report["forced_kill"] == "sent");
  CHECK(report.find("disposition") == report.end());  // "pass" is the takedown's, never the run's
  CHECK(report.find("stop_cause") == report.end());
}

TEST_CASE("what was asked for: the deadline, the grace, the signal, the leftovers") {
  DeadlineRun run;
  auto requested = run.report()["requested"];
  CHECK(requested["deadline"] == "2s");
  CHECK(requested["deadline_seconds"] == 2.0);
  CHECK(requested["grace"] == "500ms");
  CHECK(requested["grace_seconds"] == 0.5);
  CHECK(requested["signal"] == "TERM");
  CHECK(requested["leftovers"] == "kill");
  SUBCASE("no deadline, -k 0: null deadline, unlimited grace") {
    run.policy.timeout.reset();
    run.policy.kill_after = Duration::zero();
    requested = run.report()["requested"];
    CHECK(requested["deadline"].is_null());
    CHECK(requested["deadline_seconds"].is_null());
    CHECK(requested["grace"] == "unlimited");
    CHECK(requested["grace_seconds"].is_null());
  }
}

TEST_CASE("times in RFC 3339 beside their nanoseconds; the lengths agree with them") {
  const DeadlineRun run;
  const auto report = run.report();
  CHECK(report["started_at"] == "2026-01-01T12:00:00.000000Z");
  CHECK(report["started_at_unix_ns"] == k_noon);
  CHECK(report["ended_at"] == "2026-01-01T12:00:02.521000Z");
  CHECK(report["ended_at_unix_ns"] == k_noon + 2521 * k_ms);
  CHECK(report["run_seconds"] == doctest::Approx(2.521));
  // From the drain's TERM to the proof; of the grace, up to the forced kill.
  CHECK(report["drain_seconds"] == doctest::Approx(0.515));
  CHECK(report["grace_used_seconds"] == doctest::Approx(0.5));
  const auto& deadline = report["timeline"][0];
  CHECK(deadline["event"] == "deadline passed");
  CHECK(deadline["elapsed_seconds"] == doctest::Approx(2.004));
  CHECK(deadline["at"] == "2026-01-01T12:00:02.004000Z");
  CHECK(deadline["at_unix_ns"] == k_noon + 2004 * k_ms);
  CHECK(report["timeline"][1]["signal"] == "TERM");
  CHECK(report["authority"][0]["at"] == "2026-01-01T12:00:02.505000Z");
  CHECK(report["authority"][0]["at_unix_ns"] == k_noon + 2505 * k_ms);
}

TEST_CASE("a takedown without grace (--signal KILL): drain from the forced kill, no grace used") {
  DeadlineRun run;
  run.record.phases.erase(run.record.phases.begin() + 2);  // no drain phase
  run.policy.stop_signal = signals::kill;
  const auto report = run.report();
  CHECK(report["drain_seconds"] == doctest::Approx(0.015));
  CHECK(report["grace_used_seconds"] == doctest::Approx(0.0));
}

TEST_CASE("a clean run: ended by COMMAND's exit, no takedown lengths, takedown pass") {
  DeadlineRun run;
  run.record.phases = {{"spawn", k_noon}, {"running", k_noon + k_ms}, {"exit", k_noon + 9 * k_ms}};
  run.record.authority.clear();
  run.outcome.cause = StopCause::child_exited;
  run.outcome.child_status = ExitStatus{false, 3, false};
  run.outcome.forced = false;
  run.outcome.exit_code = 3;
  const auto report = run.report(k_noon + 10 * k_ms);
  CHECK(report["ended_by"] == "command-exited");
  CHECK(report["command_status"]["exit"] == 3);
  CHECK(report["takedown"] == "pass");
  CHECK(report["forced_kill"] == "not needed");
  CHECK(report["drain_seconds"].is_null());
  CHECK(report["grace_used_seconds"].is_null());
  CHECK(report["run_seconds"] == doctest::Approx(0.01));
}

TEST_CASE("why the run ended: a signal COMMAND died of, a stop request, nothing started") {
  DeadlineRun run;
  run.outcome.cause = StopCause::child_exited;
  run.outcome.child_status = ExitStatus{true, 11, true};
  CHECK(run.report()["ended_by"] == "command-killed-by-signal");
  run.outcome.cause = StopCause::signal;
  run.outcome.stop_signal = signals::term;
  CHECK(run.report()["ended_by"] == "stop-request");
  CHECK(run.report()["stop_request_signal"] == "TERM");
  run.outcome.cause = StopCause::none;
  run.outcome.child_status.reset();
  CHECK(run.report()["ended_by"] == "not-started");
  run.outcome.disposition = Disposition::failed;
  CHECK(run.report()["takedown"] == "failed");
}

TEST_CASE("a member that left COMMAND's process group is named so, never escaped") {
  const DeadlineRun run;
  const auto report = run.report();
  CHECK(report["members"][0]["left_command_group"] == false);
  CHECK(report["members"][1]["left_command_group"] == true);
  CHECK(report["members"][1]["comm"] == "python3");
  REQUIRE(report["left_command_group"].size() == 1);
  CHECK(report["left_command_group"][0]["pid"] == 9);
  CHECK(report.find("escapes") == report.end());
  CHECK(report["members"][1].find("escaped") == report["members"][1].end());
}

TEST_SUITE_END();
