// The timeout grammar (src/timeout_cli.hpp): coreutils' timeout 9.x's
// options, durations and signals, and what they make of a run.
#include "cli.hpp"
#include "timeout_cli.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <csignal>
#include <map>

using namespace treeguard;
using namespace std::chrono_literals;

namespace {

EnvironmentLookup no_environment() {
  return [](const char*) -> std::optional<std::string> {
    return std::nullopt;
  };
}

// `timeout ARGS...` as if invoked through a symlink named timeout.
Invocation as_timeout(std::vector<std::string> args) {
  args.insert(args.begin(), "/usr/local/bin/timeout");
  return parse_command_line(args, no_environment());
}

std::string error_of(std::vector<std::string> args) {
  auto parsed = as_timeout(std::move(args));
  REQUIRE(parsed.error);
  CHECK(parsed.run.timeout_program);
  return *parsed.error;
}

}  // namespace

TEST_SUITE_BEGIN("treeguard::timeout_cli");

TEST_CASE("timeout's durations: floating point in the C locale, one unit, 0 and huge = none") {
  CHECK(**parse_timeout_duration("10") == 10s);
  CHECK(**parse_timeout_duration("10.34") == 10340ms);
  CHECK(**parse_timeout_duration("9.999999999") == 9999999999ns);
  CHECK(**parse_timeout_duration("1e3") == 1000s);
  CHECK(**parse_timeout_duration("0x10") == 16s);
  CHECK(**parse_timeout_duration("0x1p-2") == 250ms);
  CHECK(**parse_timeout_duration(".5m") == 30s);
  CHECK(**parse_timeout_duration("2h") == 2h);
  CHECK(**parse_timeout_duration("1d") == 24h);
  CHECK(**parse_timeout_duration(" 1") == 1s);  // strtod's leading blanks
  // Underflow rounds up to 1 ns: a deadline, not "none".
  CHECK(**parse_timeout_duration("1e-10000") == 1ns);
  CHECK(**parse_timeout_duration("1e-12") == 1ns);
  for (const char* none : {"0", "0s", "-0", "0x0", "inf", "infinity", "INF", "1e999", "2.34e+5d",
                           "9223372036854775808", "99999999999d"}) {
    CAPTURE(none);
    auto parsed = parse_timeout_duration(none);
    REQUIRE(parsed);
    CHECK_FALSE(parsed->has_value());
  }
  for (const char* bad : {"", "invalid", " -0.1", "-1", " -1e-10000", "42D", "1h30m", "1ss", "nan",
                          "-inf", "1x", "s", "-", "1 s", "ms", "1ms"}) {
    CAPTURE(bad);
    auto parsed = parse_timeout_duration(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message() == fmt::format("invalid time interval '{}'", bad));
  }
}

TEST_CASE("timeout's signals: names in any case with or without SIG, numbers, 0, real-time") {
  CHECK(*parse_timeout_signal("TERM") == signals::term);
  CHECK(*parse_timeout_signal("sigterm") == signals::term);
  CHECK(*parse_timeout_signal("Kill") == signals::kill);
  CHECK(*parse_timeout_signal("9") == signals::kill);
  CHECK(*parse_timeout_signal("137") == signals::kill);  // a shell's 128+9
  CHECK(*parse_timeout_signal("265") == signals::kill);  // ksh's 256+9
  CHECK(*parse_timeout_signal("STOP") == Signal{SignalId::stop});
  CHECK(signal_number(*parse_timeout_signal("0")) == 0);
  CHECK(signal_number(*parse_timeout_signal("EXIT")) == 0);
  CHECK(signal_number(*parse_timeout_signal("sigexit")) == 0);
  CHECK(signal_name(*parse_timeout_signal("0")) == "0");
#ifdef SIGRTMIN
  CHECK(signal_number(*parse_timeout_signal("RTMIN+1")) == SIGRTMIN + 1);
  CHECK(signal_number(*parse_timeout_signal("sigrtmax-2")) == SIGRTMAX - 2);
  CHECK(signal_number(*parse_timeout_signal("RTMIN")) == SIGRTMIN);
  CHECK(signal_name(*parse_timeout_signal("RTMIN+1")) == "RTMIN+1");
  CHECK(signal_name(*parse_timeout_signal(std::to_string(SIGRTMAX))) == "RTMAX");
  CHECK(signal_name(*parse_timeout_signal("RTMAX-1")) == "RTMAX-1");
  CHECK_FALSE(parse_timeout_signal(std::to_string(SIGRTMAX + 1)));
  CHECK_FALSE(parse_timeout_signal("RTMIN-1"));
  CHECK_FALSE(parse_timeout_signal("RTMAX+1"));
  CHECK_FALSE(parse_timeout_signal("RTMIN+999"));
#endif
  for (const char* bad : {"", "invalid", "SIG", "SIGSIGTERM", "TERM ", "-9", "+9", "9x", "1e1",
                          "99999999999999999999"}) {
    CAPTURE(bad);
    auto parsed = parse_timeout_signal(bad);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().message() == fmt::format("'{}': invalid signal", bad));
  }
}

TEST_CASE("timeout's options, then DURATION, then COMMAND untouched") {
  auto plain = as_timeout({"5", "sleep", "10"});
  REQUIRE_FALSE(plain.error);
  CHECK(plain.command == Invocation::Command::run);
  CHECK(*plain.run.policy.timeout == 5s);
  CHECK(plain.run.command == std::vector<std::string>{"sleep", "10"});
  // timeout's defaults: TERM, no KILL, 137 for a KILL, silence.
  CHECK(plain.run.policy.stop_signal == signals::term);
  CHECK(plain.run.policy.kill_after == 0s);
  CHECK(plain.run.policy.kill_exits_137);
  CHECK(plain.run.quiet);
  CHECK(plain.run.verbose == 0);
  CHECK(*plain.run.timeout_program == "/usr/local/bin/timeout");
  // COMMAND gets the deadline's signal and ALRM at their default (timeout
  // handles them, so a caller's ignore of them stops there); run's keeps all.
  CHECK(plain.run.command_defaults == std::vector<Signal>{signals::alrm, signals::term});

  auto all = as_timeout({"-fpv", "-k5", "--sig=KILL", "1m", "make", "-k", "--", "-s", "x"});
  REQUIRE_FALSE(all.error);
  CHECK(all.run.policy.preserve_status);
  CHECK(all.run.timeout_verbose);
  CHECK(all.run.policy.kill_after == 5s);
  CHECK(all.run.policy.stop_signal == signals::kill);
  CHECK(*all.run.policy.timeout == 60s);
  CHECK(all.run.command == std::vector<std::string>{"make", "-k", "--", "-s", "x"});

  auto separate = as_timeout({"--kill-after", "2", "-s", "INT", "--", "0", "true"});
  REQUIRE_FALSE(separate.error);
  CHECK(separate.run.policy.kill_after == 2s);
  CHECK(separate.run.policy.stop_signal == signals::int_);
  CHECK_FALSE(separate.run.policy.timeout);  // 0: no deadline
  CHECK(separate.run.command == std::vector<std::string>{"true"});
  CHECK(separate.run.command_defaults == std::vector<Signal>{signals::alrm, signals::int_});
  auto none = as_timeout({"-s", "0", "1", "true"});
  CHECK(none.run.command_defaults == std::vector<Signal>{signals::alrm});

  // The subcommand is the same grammar, its name in the messages.
  std::vector<std::string> sub{"treeguard", "timeout", "-v", "1", "true"};
  auto subcommand = parse_command_line(sub, no_environment());
  REQUIRE_FALSE(subcommand.error);
  CHECK(*subcommand.run.timeout_program == "treeguard timeout");
  CHECK(subcommand.run.timeout_verbose);
  CHECK(subcommand.run.command == std::vector<std::string>{"true"});
  // run's own -v is not timeout's.
  auto run_verbose = parse_command_line({"treeguard", "run", "-v", "true"}, no_environment());
  CHECK_FALSE(run_verbose.run.timeout_program);
  CHECK(run_verbose.run.command_defaults.empty());
}

TEST_CASE("timeout's errors, in getopt's and timeout's words") {
  CHECK(error_of({}).empty());  // only "Try ... --help"
  CHECK(error_of({"5"}).empty());
  CHECK(error_of({"-v", "5"}).empty());
  CHECK(error_of({"-x", "1", "true"}) == "invalid option -- 'x'");
  CHECK(error_of({"--xyz=1", "1", "true"}) == "unrecognized option '--xyz=1'");
  CHECK(error_of({"--v", "1", "true"})
        == "option '--v' is ambiguous; possibilities: '--verbose' '--version'");
  CHECK(error_of({"--fore=1", "1", "true"}) == "option '--foreground' doesn't allow an argument");
  CHECK(error_of({"-k"}) == "option requires an argument -- 'k'");
  CHECK(error_of({"-vs"}) == "option requires an argument -- 's'");
  CHECK(error_of({"--kill-after"}) == "option '--kill-after' requires an argument");
  CHECK(error_of({"1x", "true"}) == "invalid time interval '1x'");
  CHECK(error_of({"-k", "x", "1", "true"}) == "invalid time interval 'x'");
  CHECK(error_of({"-s", "FOO", "1", "true"}) == "'FOO': invalid signal");
  // An intended difference: STOP is refused (timeout stops itself with it).
  CHECK(error_of({"-s", "sigstop", "1", "true"})
        == "sigstop: STOP cannot be the deadline's signal");
  CHECK(error_of({"--", "-1", "true"}) == "invalid time interval '-1'");
  CHECK(error_of({"-", "true"}) == "invalid time interval '-'");
  // Options act in order: --help before a bad option prints the help.
  auto help = as_timeout({"--help", "-x"});
  CHECK(help.exit_now);
  CHECK(help.output.find("Usage: /usr/local/bin/timeout [OPTION]... DURATION COMMAND")
        != std::string::npos);
  CHECK(error_of({"-k", "x", "--help"}) == "invalid time interval 'x'");
  auto version = as_timeout({"--vers"});
  CHECK(version.exit_now);
  CHECK(version.output.find("treeguard") != std::string::npos);
  // The first operand is DURATION even if it looks like an option later on.
  auto operand = as_timeout({"1", "-x"});
  REQUIRE_FALSE(operand.error);
  CHECK(operand.run.command == std::vector<std::string>{"-x"});
}

TEST_CASE("what timeout has no option for comes from the environment, as for run") {
  auto parsed = parse_command_line({"timeout", "1", "true"}, [](const char* name) {
    return std::string(name) == "TREEGUARD_BOUNDARY" ? std::optional<std::string>("cgroup")
                                                     : std::nullopt;
  });
  REQUIRE_FALSE(parsed.error);
  CHECK(parsed.run.boundary == BoundaryRequest::cgroup);
  // TREEGUARD_TIMEOUT is run's: DURATION is timeout's only deadline.
  auto timing = parse_command_line({"timeout", "0", "true"}, [](const char* name) {
    return std::string(name) == "TREEGUARD_TIMEOUT" ? std::optional<std::string>("1")
                                                    : std::nullopt;
  });
  REQUIRE_FALSE(timing.error);
  CHECK_FALSE(timing.run.policy.timeout);
  auto bad = parse_command_line({"timeout", "1", "true"}, [](const char* name) {
    return std::string(name) == "TREEGUARD_BOUNDARY" ? std::optional<std::string>("nope")
                                                     : std::nullopt;
  });
  REQUIRE(bad.error);
  CHECK(bad.error->find("TREEGUARD_BOUNDARY") != std::string::npos);
}

TEST_SUITE_END();
