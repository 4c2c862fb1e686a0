// The re-execution into a systemd scope (platform/linux/scope_exec.hpp):
// systemd-run's command line, and what the treeguard it starts makes of it.
// The re-executed treeguard must read the command line the user typed, name
// included: a link named timeout speaks timeout's grammar on both sides.
#include "cli.hpp"
#include "linux/scope_exec.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace treeguard;
using namespace std::chrono_literals;
using platform::k_scope_argv0_marker;
using platform::restore_scope_argv0;
using platform::scope_exec;

namespace {

const std::string k_exe = "/opt/tg/bin/treeguard";  // what /proc/self/exe says
const std::string k_run_id = "20261129T000000-1-abcd";

EnvironmentLookup no_environment() {
  return [](const char*) -> std::optional<std::string> {
    return std::nullopt;
  };
}

// What the re-executed treeguard's main reads: the command after
// systemd-run's "--" (started by its path, as systemd-run starts it), with
// the environment the exec was given. The markers are cleared afterwards.
std::vector<std::string> as_reexecuted(const platform::ScopeExec& exec) {
  auto dash = std::find(exec.argv.begin(), exec.argv.end(), "--");
  REQUIRE(dash != exec.argv.end());
  std::vector<std::string> args(dash + 1, exec.argv.end());
  CHECK(args.front() == k_exe);
  for (const auto& [key, value] : exec.environment) {
    ::setenv(key.c_str(), value.c_str(), 1);
  }
  restore_scope_argv0(args);
  CHECK(std::getenv(k_scope_argv0_marker) == nullptr);  // COMMAND never inherits it
  for (const auto& [key, value] : exec.environment) {
    ::unsetenv(key.c_str());
  }
  return args;
}

// The run both sides parse from `typed`, re-executed for `manager`'s scope.
void check_same_run(const std::vector<std::string>& typed, const std::string& manager = "user") {
  CAPTURE(typed);
  auto exec = scope_exec(manager, k_run_id, "/usr/bin/systemd-run", k_exe, typed, "");
  REQUIRE(exec);
  const auto args = as_reexecuted(*exec);
  CHECK(args == typed);
  const Invocation first = parse_command_line(typed, no_environment());
  const Invocation second = parse_command_line(args, no_environment());
  REQUIRE_FALSE(first.error);
  REQUIRE_FALSE(second.error);
  CHECK(second.command == Invocation::Command::run);
  CHECK(second.run.timeout_program == first.run.timeout_program);
  CHECK(second.run.command == first.run.command);
  CHECK(second.run.policy.timeout == first.run.policy.timeout);
  CHECK(second.run.policy.kill_after == first.run.policy.kill_after);
  CHECK(signal_name(second.run.policy.stop_signal) == signal_name(first.run.policy.stop_signal));
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::scope_exec");

TEST_CASE("systemd-run's command line: the scope, Delegate=yes, then treeguard by its path") {
  const std::vector<std::string> typed{"timeout", "5", "true"};
  auto user = scope_exec("user", k_run_id, "/usr/bin/systemd-run", k_exe, typed, "ci.service");
  REQUIRE(user);
  CHECK(user->argv
        == std::vector<std::string>{
            "/usr/bin/systemd-run", "--user", "--scope", "--quiet", "--collect",
            "--property=Delegate=yes", "--unit=treeguard-" + k_run_id + ".scope",
            "--description=treeguard run " + k_run_id, "--", k_exe, "5", "true"});
  auto system = scope_exec("system", k_run_id, "/usr/bin/systemd-run", k_exe, typed, "ci.service");
  REQUIRE(system);
  // root's scope stops with the unit treeguard was started in
  CHECK(std::count(system->argv.begin(), system->argv.end(), "--property=PartOf=ci.service") == 1);
  CHECK(std::count(system->argv.begin(), system->argv.end(), "--user") == 0);
  CHECK_FALSE(scope_exec("session", k_run_id, "/usr/bin/systemd-run", k_exe, typed, ""));
  CHECK_FALSE(scope_exec("user", k_run_id, "/usr/bin/systemd-run", k_exe, {}, ""));
}

TEST_CASE("the re-executed treeguard reads what the user typed, its name included") {
  SUBCASE("a link named timeout, bare and by a path") {
    check_same_run({"timeout", "5", "true"});
    check_same_run({"timeout", "5", "true"}, "system");
    check_same_run({"/home/u/bin/timeout", "-s", "INT", "-k", "1", "5", "sleep", "9"});
    check_same_run({"./timeout", "--preserve-status", "2.5", "sh", "-c", "exit 3"});
  }
  SUBCASE("treeguard timeout and treeguard run keep their grammar") {
    check_same_run({"treeguard", "timeout", "5", "true"});
    check_same_run({"/usr/bin/treeguard", "run", "--timeout", "5s", "--", "timeout", "3", "x"});
  }
  SUBCASE("the timeout personality survives, with its words") {
    auto exec =
        scope_exec("user", k_run_id, "/usr/bin/systemd-run", k_exe, {"timeout", "5", "true"}, "");
    REQUIRE(exec);
    const Invocation parsed = parse_command_line(as_reexecuted(*exec), no_environment());
    REQUIRE_FALSE(parsed.error);
    CHECK(parsed.run.timeout_program == std::optional<std::string>("timeout"));
    CHECK(parsed.run.policy.timeout == std::optional<Duration>(5s));
    CHECK(parsed.run.command == std::vector<std::string>{"true"});
  }
}

TEST_CASE("the name is taken back only after a scope's re-execution") {
  std::vector<std::string> args{k_exe, "run", "--", "true"};
  ::setenv(k_scope_argv0_marker, "timeout", 1);
  restore_scope_argv0(args);  // no scope marker: not a re-execution
  CHECK(args.front() == k_exe);
  CHECK(std::getenv(k_scope_argv0_marker) == nullptr);
}

TEST_SUITE_END();
