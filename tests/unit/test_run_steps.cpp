// `treeguard run`'s steps (run_command.hpp's run_on) on a fake host: the
// plan's candidates tried in turn (DESIGN.md [plan]), then the lifecycle
// (DESIGN.md [lifecycle]) on fake_boundary.hpp's scripted boundary, with a
// real state directory in a scratch folder.
#include "fake_boundary.hpp"
#include "port/takedown.hpp"
#include "record_store.hpp"
#include "run_command.hpp"
#include "wall_clock.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using namespace treeguard;
using namespace treeguard::testing;
using namespace std::chrono_literals;

namespace {

// A boundary the run owns that acts as a FakeBoundary the test keeps (the
// run destroys what it owns before the test can look at it); its form()
// fails with form_error when that is set. Its members started after this
// process did, as a run's members do (a record refuses older ones).
class LentBoundary final : public Boundary {
public:
  LentBoundary(FakeBoundary& to, std::optional<Error> form_error)
      : m_to(to), m_form_error(std::move(form_error)) {}
  BoundaryKind kind() const override { return m_to.kind(); }
  std::string address() const override { return m_to.address(); }
  Result<void> form() override {
    m_to.calls.emplace_back("form");
    if (m_form_error) {
      return fail(*m_form_error);
    }
    return {};
  }
  Result<long> spawn(const SpawnSpec& spec) override { return m_to.spawn(spec); }
  Event wait(std::optional<TimePoint> deadline) override { return m_to.wait(deadline); }
  std::optional<ExitStatus> child_status() const override { return m_to.child_status(); }
  Result<void> forward(Signal signal) override { return m_to.forward(signal); }
  std::vector<Delivery> stop_gracefully(Signal signal) override {
    return m_to.stop_gracefully(signal);
  }
  ForceMethod force_method() const override { return m_to.force_method(); }
  Result<void> kill_all() override { return m_to.kill_all(); }
  Result<bool> is_empty() override { return m_to.is_empty(); }
  std::vector<MemberInfo> members() const override { return later(m_to.members()); }
  std::vector<MemberInfo> alive_members() override { return later(m_to.alive_members()); }
  Result<void> close() override { return m_to.close(); }

private:
  static std::vector<MemberInfo> later(std::vector<MemberInfo> members) {
    for (auto& member : members) {
      member.start_time += current_process_identity().start_time;
    }
    return members;
  }
  FakeBoundary& m_to;
  std::optional<Error> m_form_error;
};

// A guardian that only says what was asked of it, into `said`.
class FakeGuardian final : public Guardian {
public:
  FakeGuardian(long pid, std::vector<std::string>& said) : m_pid(pid), m_said(said) {}
  ProcessIdentity identity() const override { return {m_pid, 1}; }
  void dismiss() override { m_said.push_back("dismiss " + std::to_string(m_pid)); }
  void keep_armed() override { m_said.push_back("keep_armed " + std::to_string(m_pid)); }

private:
  long m_pid;
  std::vector<std::string>& m_said;
};

class FakeHostView final : public HostView {
public:
  std::string boot_id() const override { return "0f3c1b2a-9d8e-4c7b-a6f5-e4d3c2b1a098"; }
  bool process_alive(long, unsigned long long) const override { return false; }
  std::optional<bool> boundary_empty(const RunRecord&) const override { return std::nullopt; }
  std::optional<std::vector<MemberInfo>> alive_in_boundary(const RunRecord&) const override {
    return std::nullopt;
  }
};

// One run's fake host: a state directory of its own, the plan's
// candidates as the test lists them, guardians numbered from 500.
struct FakeRun {
  FakeRun() {
    state_dir = std::filesystem::temp_directory_path()
                / ("treeguard-run-steps-" + std::to_string(unix_time_ns()));
    std::filesystem::create_directories(state_dir);
    std::filesystem::permissions(state_dir, std::filesystem::perms::owner_all);
    options.state_dir = state_dir.string();
    options.command = {"true"};
    options.boundary = BoundaryRequest::cgroup;
    options.verbose = 1;
    options.quiet = true;
    options.keep_records = true;
  }
  ~FakeRun() {
    std::error_code ignored;
    std::filesystem::remove_all(state_dir, ignored);
  }

  // A candidate whose make() fails with `why`.
  void unmakeable(const std::string& name, const std::string& why) {
    BoundaryCandidate candidate{name, BoundaryKind::cgroup, "nowhere", "", nullptr};
    candidate.make = [why](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
      return fail(plain_error(why));
    };
    plan.candidates.push_back(candidate);
  }
  // A candidate made as `boundary`, a leaf under `parent`, whose form()
  // fails with form_error if set.
  void lent(const std::string& name, FakeBoundary& boundary, const std::string& parent,
            std::optional<Error> form_error = std::nullopt) {
    leaves.emplace_back(&boundary, parent);
    BoundaryCandidate candidate{name, BoundaryKind::cgroup, "a leaf under " + parent, "", nullptr};
    candidate.make = [&boundary, form_error](const PlanLog&) -> Result<std::unique_ptr<Boundary>> {
      return std::unique_ptr<Boundary>(std::make_unique<LentBoundary>(boundary, form_error));
    };
    plan.candidates.push_back(candidate);
  }

  RunEnd run() {
    RunHost host;
    host.host_view = [] {
      return std::make_unique<FakeHostView>();
    };
    host.plan = [this](const BoundaryOptions& asked) {
      run_id = asked.run_id;
      for (auto& [boundary, parent] : leaves) {
        boundary->address_text = leaf(parent);
      }
      plan.request = asked.requested;
      return plan;
    };
    host.start_guardian = [this](const GuardianSpec& spec) -> Result<std::unique_ptr<Guardian>> {
      guardian_said.push_back("start for " + spec.address);
      return std::unique_ptr<Guardian>(
          std::make_unique<FakeGuardian>(500 + guardians++, guardian_said));
    };
    host.clock = &clock;
    host.say = [this](const std::string& line) {
      said.push_back(line);
    };
    return run_on(options, host);
  }

  // The run's leaf under `parent`, as a record names it.
  std::string leaf(const std::string& parent) const { return parent + "/treeguard-" + run_id; }

  bool said_line(const std::string& line) const {
    return std::find(said.begin(), said.end(), "treeguard: " + line + "\n") != said.end();
  }

  // The run's record, open or finished.
  RunRecord record() const {
    auto loaded = RecordStore(state_dir).load(run_id);
    REQUIRE_MESSAGE(loaded, "run " << run_id << ": " << loaded.error().message());
    return *loaded;
  }

  // What -v said, for a failure's message.
  std::string said_text() const {
    std::string out;
    for (const auto& line : said) {
      out += line;
    }
    return out;
  }

  std::filesystem::path state_dir;
  RunOptions options;
  BoundaryPlan plan;
  std::vector<std::pair<FakeBoundary*, std::string>> leaves;
  FakeClock clock;
  std::string run_id;
  int guardians = 0;
  std::vector<std::string> guardian_said;
  std::vector<std::string> said;
};

}  // namespace

TEST_CASE("run: a candidate that does not form says why, and the next one runs COMMAND") {
  FakeRun run;
  FakeBoundary second(run.clock);
  second.at(1s, [](FakeBoundary& b) { return b.child_exits(0); });

  SUBCASE("its make() fails: nothing of it was started") {
    run.unmakeable("first", "no leaf here (fake)");
    run.lent("second", second, "/fake/second");
    const RunEnd end = run.run();
    CHECK(end.code == 0);
    CHECK(run.said_line("first: not formed: no leaf here (fake)"));
    CHECK(run.guardian_said
          == std::vector<std::string>{"start for " + run.leaf("/fake/second"), "dismiss 500"});
  }
  SUBCASE("its form() fails: its guardian is dismissed, nothing of it is left open") {
    FakeBoundary first(run.clock);
    run.lent("first", first, "/fake/first", plain_error("no space for the leaf (fake)"));
    run.lent("second", second, "/fake/second");
    const RunEnd end = run.run();
    CHECK(end.code == 0);
    CHECK(run.said_line("first: not formed: no space for the leaf (fake)"));
    CHECK(first.calls == std::vector<std::string>{"form"});
    CHECK(run.guardian_said
          == std::vector<std::string>{"start for " + run.leaf("/fake/first"), "dismiss 500",
                                      "start for " + run.leaf("/fake/second"), "dismiss 501"});
    for (const auto& stored : RecordStore(run.state_dir).list()) {
      CHECK_MESSAGE(false, stored.path.string());
    }
  }
  CHECK(second.calls == std::vector<std::string>{"form", "spawn true", "close"});
  const RunRecord record = run.record();
  CHECK(record.boundary.address == run.leaf("/fake/second"));
  CHECK(record.disposition == Disposition::pass);
  CHECK(record.exit_code == 0);
}

TEST_CASE("run: no candidate forms: 125, and the error names each one's reason") {
  FakeRun run;
  run.unmakeable("first", "no leaf here (fake)");
  run.unmakeable("second", "no group either (fake)");
  run.plan.none_works = "no boundary formed (fake)";
  const RunEnd end = run.run();
  CHECK(end.code == 125);
  CHECK(run.said_line("first: not formed: no leaf here (fake)"));
  CHECK(run.said_line("second: not formed: no group either (fake)"));
  CHECK(run.guardian_said.empty());
}

TEST_CASE("run: the deadline passes on a COMMAND that never exits: the stop signal, then the "
          "kill, and timeout's status") {
  FakeRun run;
  run.options.policy.timeout = 5s;
  run.options.policy.kill_after = 2s;
  FakeBoundary boundary(run.clock);
  boundary.member(0).ignores_term = true;
  run.lent("leaf", boundary, "/fake");
  const RunEnd end = run.run();
  INFO(run.said_text());
  CHECK(end.code == 124);
  CHECK_FALSE(end.signal);
  CHECK(boundary.calls
        == std::vector<std::string>{"form", "spawn true", "stop_gracefully TERM", "kill_all",
                                    "close"});
  const RunRecord record = run.record();
  REQUIRE(record.authority.size() == 1);  // written before the kill
  CHECK(record.exit_code == 124);
  CHECK(run.guardian_said
        == std::vector<std::string>{"start for " + run.leaf("/fake"), "dismiss 500"});
}

TEST_CASE("run: COMMAND cannot be started: nothing runs, nothing is signalled") {
  FakeRun run;
  FakeBoundary boundary(run.clock);
  run.lent("leaf", boundary, "/fake");
  int expected = 0;
  SUBCASE("exec finds no such file: 127") {
    boundary.spawn_error = errno_error(ENOENT, "exec true");
    expected = 127;
  }
  SUBCASE("the process cannot be made: 125") {
    boundary.spawn_error = plain_error("create COMMAND's process (fake)");
    expected = 125;
  }
  const RunEnd end = run.run();
  CHECK(end.code == expected);
  CHECK(boundary.calls == std::vector<std::string>{"form", "spawn true", "close"});
  CHECK(run.record().exit_code == expected);
  CHECK(run.guardian_said
        == std::vector<std::string>{"start for " + run.leaf("/fake"), "dismiss 500"});
}
