#include "cli.hpp"
#include "duration.hpp"
#include "signal_name.hpp"

#include <doctest/doctest.h>

using namespace treeguard;
using namespace std::chrono_literals;

namespace {
Invocation parse(std::vector<std::string> args)
{
  args.insert(args.begin(), "treeguard");
  return parse_command_line(args);
}
} // namespace

TEST_SUITE_BEGIN("treeguard::cli");

TEST_CASE("durations")
{
  CHECK(*parse_duration("250ms") == 250ms);
  CHECK(*parse_duration("90s") == 90s);
  CHECK(*parse_duration("1m30s") == 90s);
  CHECK(*parse_duration("2h") == 2h);
  CHECK(*parse_duration("1.5s") == 1500ms);
  CHECK(*parse_duration("5") == 5s);
  CHECK(*parse_duration("0") == 0s);
  CHECK(*parse_duration("1h2m3s4ms") == 1h + 2min + 3s + 4ms);
  for (const char* bad : {"", "-1s", "+1s", "1e999", "10x", "s", "1.s5", ".", "1s2",
                          "99999999999999999999999h", "1 s", "1m-1s"}) {
    CAPTURE(bad);
    auto parsed = parse_duration(bad);
    CHECK_FALSE(parsed);
    if (!parsed) {
      CHECK(parsed.error().message().find("invalid duration") != std::string::npos);
    }
  }
  CHECK(format_duration(1500ms) == "1500ms");
  CHECK(format_duration(10s) == "10s");
  CHECK(format_duration(250ms) == "250ms");
}

TEST_CASE("signal names")
{
  CHECK(*parse_signal("TERM") == signals::term);
  CHECK(*parse_signal("SIGTERM") == signals::term);
  CHECK(*parse_signal("term") == signals::term);
  CHECK(*parse_signal("sigint") == signals::int_);
  CHECK(*parse_signal("9") == signals::kill);
  CHECK(*parse_signal("HUP") == signals::hup);
  CHECK(*parse_signal("WINCH") == signals::winch);
  // The numbers users type and 128+N exit codes carry (the same on Linux
  // and, by convention, on Windows).
  CHECK(signal_number(signals::term) == 15);
  CHECK(signal_number(signals::int_) == 2);
  CHECK(signal_number(signals::winch) == 28);
  CHECK(*parse_signal("15") == signals::term);
  CHECK(signal_number_name(15) == "TERM");
  CHECK(signal_number_name(42) == "SIG42");
  for (const char* bad : {"", "0", "32", "64", "TERMX", "SIG", "-15", "1000"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_signal(bad));
  }
  CHECK(signal_name(signals::usr1) == "USR1");
  CHECK(is_stop_signal(signals::quit));
  CHECK_FALSE(is_stop_signal(signals::usr1));
  CHECK(is_forwarded_signal(signals::winch));
  CHECK_FALSE(is_forwarded_signal(signals::chld));
}

TEST_CASE("run options")
{
  auto inv = parse({"run", "-t", "2s", "-k", "500ms", "-s", "INT", "--preserve-status",
                    "--boundary", "process-group", "--leftovers", "wait", "-v", "--", "sh",
                    "-c", "exit 3", "--", "-t"});
  REQUIRE_FALSE(inv.error);
  CHECK(inv.command == Invocation::Command::run);
  CHECK(*inv.run.policy.timeout == 2s);
  CHECK(inv.run.policy.kill_after == 500ms);
  CHECK(inv.run.policy.stop_signal == signals::int_);
  CHECK(inv.run.policy.preserve_status);
  CHECK(inv.run.boundary == "process-group");
  CHECK(inv.run.policy.leftovers == Leftovers::wait);
  CHECK(inv.run.verbose == 1);
  // Everything after the first "--" is COMMAND, verbatim.
  CHECK(inv.run.command == std::vector<std::string>{"sh", "-c", "exit 3", "--", "-t"});

  auto defaults = parse({"run", "--", "true"});
  REQUIRE_FALSE(defaults.error);
  CHECK_FALSE(defaults.run.policy.timeout);
  CHECK(defaults.run.policy.kill_after == 10s);
  CHECK(defaults.run.policy.stop_signal == signals::term);
  CHECK(defaults.run.boundary == "auto");
  CHECK(defaults.run.keep_limit == 1000);
  CHECK(parse({"run", "--keep-limit", "0", "--", "true"}).run.keep_limit == 0);

  auto zero = parse({"run", "-t", "0", "--", "true"});
  REQUIRE_FALSE(zero.error);
  CHECK_FALSE(zero.run.policy.timeout);
}

TEST_CASE("bad input: one line naming what was wrong")
{
  struct Case {
    std::vector<std::string> args;
    std::string mentions;
  };
  for (const auto& c : std::vector<Case>{
         {{"run", "--bogus", "--", "true"}, "--bogus"},
         {{"run", "-t", "-1s", "--", "true"}, "-1s"},
         {{"run", "-t", "1e999", "--", "true"}, "1e999"},
         {{"run", "-t", "10x", "--", "true"}, "10x"},
         {{"run", "-t", "", "--", "true"}, "empty"},
         {{"run", "-k", "abc", "--", "true"}, "abc"},
         {{"run", "true"}, "missing '--'"},
         {{"run", "--"}, "no COMMAND"},
         {{"run", "-s", "BOGUS", "--", "true"}, "BOGUS"},
         {{"run", "-s", "KILL", "--", "true"}, "KILL"},
         {{"run", "--boundary", "box", "--", "true"}, "box"},
         {{"run", "--leftovers", "maybe", "--", "true"}, "maybe"},
         {{"run", "--keep-limit", "-1", "--", "true"}, "--keep-limit"},
         {{"run", "--keep-limit", "lots", "--", "true"}, "--keep-limit"},
         {{"frobnicate"}, "frobnicate"},
         {{}, "subcommand"},
         {{"resolve", "x"}, "--why"},
       }) {
    std::string joined;
    for (const auto& a : c.args) {
      joined += a + " ";
    }
    CAPTURE(joined);
    auto inv = parse(c.args);
    REQUIRE(inv.error);
    CAPTURE(*inv.error);
    CHECK(inv.error->find('\n') == std::string::npos);
    CHECK(inv.error->find(c.mentions) != std::string::npos);
  }
}

TEST_CASE("--help and --version exit at once")
{
  auto help = parse({"run", "--help"});
  CHECK(help.exit_now);
  CHECK(help.output.find("--kill-after") != std::string::npos);
  auto version = parse({"--version"});
  CHECK(version.exit_now);
  CHECK(version.output.find("treeguard") != std::string::npos);
}

TEST_SUITE_END();
