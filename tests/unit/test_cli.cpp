#include "cli.hpp"
#include "duration.hpp"
#include "signal_name.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace treeguard;
using namespace std::chrono_literals;

namespace {
using Environment = std::map<std::string, std::string>;

EnvironmentLookup environment_of(Environment values) {
  return [values](const char* name) -> std::optional<std::string> {
    auto found = values.find(name);
    if (found == values.end()) {
      return std::nullopt;
    }
    return found->second;
  };
}

// Parsed as if the environment held only `environment`.
Invocation parse(std::vector<std::string> args, Environment environment = {}) {
  args.insert(args.begin(), "treeguard");
  return parse_command_line(args, environment_of(std::move(environment)));
}
}  // namespace

TEST_SUITE_BEGIN("treeguard::cli");

TEST_CASE("durations") {
  CHECK(*parse_duration("250ms") == 250ms);
  // Below the finest step a positive value would read as 0, "none".
  CHECK_FALSE(parse_duration("0.0000000001s"));
  CHECK(parse_duration("0.0000000001s").error().message().find("below 1ns") != std::string::npos);
  CHECK(*parse_duration("0.000000001s") == 1ns);
  CHECK(*parse_duration("0s") == 0s);
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

TEST_CASE("signal names") {
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

TEST_CASE("signal_named reads back what signal_name wrote, and nothing else") {
  for (int number = 0; number <= highest_signal_number(); ++number) {
    const Signal signal = signal_from_number(number).value_or(Signal{SignalId::numbered, number});
    CAPTURE(number);
    auto named = signal_named(signal_name(signal));
    REQUIRE(named);
    CHECK(*named == signal);
  }
  for (const char* bad : {"", "SIGTERM", "term", "TERMX", "-1", "1000", "SIG42"}) {
    CAPTURE(bad);
    CHECK_FALSE(signal_named(bad));
  }
  CHECK(stops_whom_it_reaches(signals::tstp));
  CHECK_FALSE(stops_whom_it_reaches(signals::term));
}

TEST_CASE("run options") {
  auto inv =
      parse({"run", "-t", "2s", "-k", "500ms", "-s", "INT", "--preserve-status", "--boundary",
             "process-group", "--leftovers", "wait", "-v", "--", "sh", "-c", "exit 3", "--", "-t"});
  REQUIRE_FALSE(inv.error);
  CHECK(inv.command == Invocation::Command::run);
  CHECK(*inv.run.policy.timeout == 2s);
  CHECK(inv.run.policy.kill_after == 500ms);
  CHECK(inv.run.policy.stop_signal == signals::int_);
  CHECK(inv.run.policy.preserve_status);
  CHECK(inv.run.boundary == BoundaryRequest::process_group);
  CHECK(inv.run.policy.leftovers == Leftovers::wait);
  CHECK(inv.run.verbose == 1);
  // Everything after the first "--" is COMMAND, verbatim.
  CHECK(inv.run.command == std::vector<std::string>{"sh", "-c", "exit 3", "--", "-t"});

  auto defaults = parse({"run", "--", "true"});
  REQUIRE_FALSE(defaults.error);
  CHECK_FALSE(defaults.run.policy.timeout);
  CHECK(defaults.run.policy.kill_after == 10s);
  CHECK(defaults.run.policy.stop_signal == signals::term);
  CHECK(defaults.run.boundary == BoundaryRequest::automatic);
  CHECK(defaults.run.keep_limit == 1000);
  CHECK(parse({"run", "--keep-limit", "0", "--", "true"}).run.keep_limit == 0);

  auto zero = parse({"run", "-t", "0", "--", "true"});
  REQUIRE_FALSE(zero.error);
  CHECK_FALSE(zero.run.policy.timeout);
}

// A `run` command line declares only the options it names (cli.cpp): each
// form of naming one must still reach it.
TEST_CASE("run options in every form: attached values, clusters, long names with '='") {
  auto inv = parse({"run", "-vqt5", "-k500ms", "--signal=INT", "--boundary=cgroup",
                    "--leftovers=fail", "--state-dir=/s", "--keep-records", "--keep-limit=3",
                    "--report=/r.json", "--pids-max=10", "--memory-max=1G", "--cgroup-parent=/p",
                    "--preserve-status", "-v", "--", "true", "-h", "--timeout"});
  REQUIRE_FALSE(inv.error);
  CHECK(inv.run.verbose == 2);
  CHECK(inv.run.quiet);
  CHECK(*inv.run.policy.timeout == 5s);
  CHECK(inv.run.policy.kill_after == 500ms);
  CHECK(inv.run.policy.stop_signal == signals::int_);
  CHECK(inv.run.boundary == BoundaryRequest::cgroup);
  CHECK(inv.run.policy.leftovers == Leftovers::fail);
  CHECK(inv.run.state_dir == "/s");
  CHECK(inv.run.keep_records);
  CHECK(inv.run.keep_limit == 3);
  CHECK(inv.run.report == "/r.json");
  CHECK(inv.run.limits.pids_max == 10);
  CHECK(inv.run.limits.memory_max == 1024ull * 1024 * 1024);
  CHECK(inv.run.cgroup_parent == "/p");
  CHECK(inv.run.policy.preserve_status);
  CHECK(inv.run.command == std::vector<std::string>{"true", "-h", "--timeout"});
  // Without "--", COMMAND starts at the first word that is not an option.
  auto bare = parse({"run", "-t", "5", "-q", "make", "-k", "-v"});
  REQUIRE_FALSE(bare.error);
  CHECK(*bare.run.policy.timeout == 5s);
  CHECK(bare.run.quiet);
  CHECK(bare.run.verbose == 0);
  CHECK(bare.run.command == std::vector<std::string>{"make", "-k", "-v"});
  // Help named in a cluster, or after a value: every option listed.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "-vh"}, {"run", "-t", "5", "--help", "--", "true"}, {"run", "-h"}}) {
    auto help = parse(args);
    CHECK(help.exit_now);
    CHECK(help.output.find("--kill-after") != std::string::npos);
    CHECK(help.output.find("--pids-max") != std::string::npos);
  }
  // An option of run's that is not named still comes from the environment.
  auto from_environment = parse({"run", "-v", "--", "true"}, {{"TREEGUARD_TIMEOUT", "7s"}});
  REQUIRE_FALSE(from_environment.error);
  CHECK(*from_environment.run.policy.timeout == 7s);
}

TEST_CASE("bad input: one line naming what was wrong") {
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
           {{"run"}, "no COMMAND"},
           {{"run", "-t", "5"}, "no COMMAND"},
           {{"run", "-v"}, "no COMMAND"},
           {{"run", "--"}, "no COMMAND"},
           {{"run", "-s", "BOGUS", "--", "true"}, "BOGUS"},
           {{"run", "-s", "STOP", "--", "true"}, "STOP"},
           {{"run", "--boundary", "box", "--", "true"}, "box"},
           {{"run", "--leftovers", "maybe", "--", "true"}, "maybe"},
           {{"run", "--keep-limit", "-1", "--", "true"}, "--keep-limit"},
           {{"run", "--keep-limit", "lots", "--", "true"}, "--keep-limit"},
           {{"frobnicate"}, "frobnicate"},
           {{}, "run, probe, status, sweep or resolve"},
           {{"run", "-t", "5", "-t", "6", "--", "true"}, "--timeout given 2 times"},
           {{"run", "--report", "--", "make"}, "--report needs a value before '--'"},
           {{"status", "--state-dir"}, "--state-dir needs a value"},
           {{"run", "--bogus", "--", "true"}, "unknown option --bogus"},
           {{"probe", "extra"}, "unexpected argument extra"},
           {{"resolve", "x"}, "--why is missing"},
           {{"--bogus"}, "unknown option --bogus"},
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

TEST_CASE("timeout's habits: COMMAND at the first positional, -s KILL, -k 0") {
  // As timeout(1): no "--" needed; COMMAND's own options stay COMMAND's.
  auto bare = parse({"run", "sleep", "1"});
  REQUIRE_FALSE(bare.error);
  CHECK(bare.run.command == std::vector<std::string>{"sleep", "1"});

  auto with_options = parse({"run", "-t", "5", "-v", "ls", "-l", "--", "-t", "x"});
  REQUIRE_FALSE(with_options.error);
  CHECK(*with_options.run.policy.timeout == 5s);
  CHECK(with_options.run.verbose == 1);
  CHECK(with_options.run.command == std::vector<std::string>{"ls", "-l", "--", "-t", "x"});

  auto attached = parse({"run", "-t5", "--kill-after=2s", "--boundary", "cgroup", "make", "-k"});
  REQUIRE_FALSE(attached.error);
  CHECK(*attached.run.policy.timeout == 5s);
  CHECK(attached.run.policy.kill_after == 2s);
  CHECK(attached.run.boundary == BoundaryRequest::cgroup);
  CHECK(attached.run.command == std::vector<std::string>{"make", "-k"});

  // A value that looks like a command is still the option's value.
  auto value = parse({"run", "--state-dir", "run", "--report", "sleep", "true"});
  REQUIRE_FALSE(value.error);
  CHECK(*value.run.state_dir == "run");
  CHECK(*value.run.report == "sleep");
  CHECK(value.run.command == std::vector<std::string>{"true"});

  auto kill = parse({"run", "-s", "KILL", "--", "true"});
  REQUIRE_FALSE(kill.error);
  CHECK(kill.run.policy.stop_signal == signals::kill);

  auto never = parse({"run", "-k", "0", "--", "true"});
  REQUIRE_FALSE(never.error);
  CHECK(never.run.policy.kill_after == 0s);

  auto quiet = parse({"run", "-q", "true"});
  REQUIRE_FALSE(quiet.error);
  CHECK(quiet.run.quiet);
}

TEST_CASE("options from the environment; a flag wins") {
  const Environment launcher{{"TREEGUARD_TIMEOUT", "1"},
                             {"TREEGUARD_KILL_AFTER", "250ms"},
                             {"TREEGUARD_SIGNAL", "INT"},
                             {"TREEGUARD_BOUNDARY", "process-group"},
                             {"TREEGUARD_LEFTOVERS", "wait"}};
  auto from_env = parse({"run", "cc", "-c", "x.c"}, launcher);
  REQUIRE_FALSE(from_env.error);
  CHECK(*from_env.run.policy.timeout == 1s);
  CHECK(from_env.run.policy.kill_after == 250ms);
  CHECK(from_env.run.policy.stop_signal == signals::int_);
  CHECK(from_env.run.boundary == BoundaryRequest::process_group);
  CHECK(from_env.run.policy.leftovers == Leftovers::wait);

  auto flags = parse({"run", "-t", "7s", "-k", "3s", "-s", "HUP", "--boundary", "auto",
                      "--leftovers", "kill", "--", "cc"},
                     launcher);
  REQUIRE_FALSE(flags.error);
  CHECK(*flags.run.policy.timeout == 7s);
  CHECK(flags.run.policy.kill_after == 3s);
  CHECK(flags.run.policy.stop_signal == signals::hup);
  CHECK(flags.run.boundary == BoundaryRequest::automatic);
  CHECK(flags.run.policy.leftovers == Leftovers::kill);

  // --leftovers outer, by flag or from the environment (a launcher's).
  auto outer_flag = parse({"run", "--leftovers", "outer", "--", "sccache", "cc"}, {});
  REQUIRE_FALSE(outer_flag.error);
  CHECK(outer_flag.run.policy.leftovers == Leftovers::outer);
  auto outer_env = parse({"run", "sccache", "cc"}, {{"TREEGUARD_LEFTOVERS", "outer"}});
  REQUIRE_FALSE(outer_env.error);
  CHECK(outer_env.run.policy.leftovers == Leftovers::outer);

  // --leftovers wait waits until the deadline; with none, until the leftovers end.
  auto no_deadline = parse({"run", "--leftovers", "wait", "--", "true"});
  REQUIRE_FALSE(no_deadline.error);
  CHECK(no_deadline.run.policy.leftovers == Leftovers::wait);

  // --leftovers fail (the leak verdict), by flag or from the environment (a CI job's).
  auto fail_flag = parse({"run", "--leftovers", "fail", "--", "make", "check"}, {});
  REQUIRE_FALSE(fail_flag.error);
  CHECK(fail_flag.run.policy.leftovers == Leftovers::fail);
  auto fail_env = parse({"run", "make", "check"}, {{"TREEGUARD_LEFTOVERS", "fail"}});
  REQUIRE_FALSE(fail_env.error);
  CHECK(fail_env.run.policy.leftovers == Leftovers::fail);

  // An empty value is unset.
  auto empty = parse({"run", "true"}, {{"TREEGUARD_TIMEOUT", ""}});
  REQUIRE_FALSE(empty.error);
  CHECK_FALSE(empty.run.policy.timeout);

  // The environment's cgroup parent gives way to a flag's process group.
  auto parent =
      parse({"run", "--boundary", "process-group", "true"}, {{"TREEGUARD_CGROUP_PARENT", "/tg"}});
  REQUIRE_FALSE(parent.error);
  CHECK(parent.run.cgroup_parent.empty());
  CHECK(parse({"run", "true"}, {{"TREEGUARD_CGROUP_PARENT", "/tg"}}).run.cgroup_parent == "/tg");

  for (const auto& [name, bad] :
       std::vector<std::pair<std::string, std::string>>{{"TREEGUARD_TIMEOUT", "10x"},
                                                        {"TREEGUARD_KILL_AFTER", "-1s"},
                                                        {"TREEGUARD_SIGNAL", "BOGUS"},
                                                        {"TREEGUARD_BOUNDARY", "box"},
                                                        {"TREEGUARD_LEFTOVERS", "maybe"}}) {
    CAPTURE(name);
    auto inv = parse({"run", "true"}, {{name, bad}});
    REQUIRE(inv.error);
    CHECK(inv.error->find('\n') == std::string::npos);
    CHECK(inv.error->rfind(name + ": ", 0) == 0);
    CHECK(inv.error->find(bad) != std::string::npos);
  }
}

TEST_CASE("a forgotten `run`: the command line it meant, ready to paste") {
  auto option = parse({"-t", "5", "sleep", "1"});
  REQUIRE(option.error);
  CHECK(*option.error == "-t is an option of run; did you mean: treeguard run -t 5 sleep 1");
  auto word = parse({"make", "-j8", "CFLAGS=-O2 -g", "it's"});
  REQUIRE(word.error);
  CHECK(*word.error
        == "unknown command 'make' (run, probe, status, sweep, resolve); did you mean: treeguard "
           "run make -j8 'CFLAGS=-O2 -g' 'it'\\''s'");
  auto long_option = parse({"--timeout=5", "true"});
  REQUIRE(long_option.error);
  CHECK(*long_option.error
        == "--timeout is an option of run; did you mean: treeguard run --timeout=5 true");
}

TEST_CASE("--help wraps to the width it is given (the terminal's; 80 when not a tty)") {
  for (std::size_t width : {std::size_t(80), std::size_t(60)}) {
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"treeguard", "--help"},
                                               {"treeguard", "run", "--help"},
                                               {"treeguard", "status", "--help"},
                                               {"treeguard", "resolve", "--help"}}) {
      auto help = parse_command_line(args, environment_of({}), width);
      REQUIRE(help.exit_now);
      std::size_t start = 0;
      while (start < help.output.size()) {
        const std::size_t end = help.output.find('\n', start);
        const std::string line = help.output.substr(start, end - start);
        CAPTURE(width);
        CAPTURE(line);
        // Longer only where one word is (a word is never broken).
        CHECK((line.size() <= width
               || line.find(' ', line.find_first_not_of(' ')) == std::string::npos));
        start = end == std::string::npos ? help.output.size() : end + 1;
      }
    }
  }
  // Wrapped, not cut: the words are all there.
  auto narrow = parse_command_line({"treeguard", "run", "--help"}, environment_of({}), 60);
  CHECK(narrow.output.find("TREEGUARD_CGROUP_PARENT") != std::string::npos);
  CHECK(narrow.output.find("--cgroup-parent") != std::string::npos);
}

TEST_CASE("--help and --version exit at once") {
  auto help = parse({"run", "--help"});
  CHECK(help.exit_now);
  CHECK(help.output.find("--kill-after") != std::string::npos);
  auto version = parse({"--version"});
  CHECK(version.exit_now);
  CHECK(version.output.find("treeguard") != std::string::npos);
  // `run --version` is the version, not an error.
  auto run_version = parse({"run", "--version"});
  CHECK_FALSE(run_version.error);
  CHECK(run_version.exit_now);
  CHECK(run_version.output == version.output);
}

TEST_SUITE_END();

TEST_CASE("boundary names: one table, read both ways") {
  for (const std::string& name : boundary_request_names()) {
    auto request = boundary_request_named(name);
    REQUIRE(request);
    CHECK(boundary_request_name(*request) == name);
    auto kind = demanded_kind(*request);
    CHECK(bool(kind) == (name != "auto"));
    if (kind) {
      CHECK(boundary_kind_name(*kind) == name);
      CHECK(boundary_kind_named(name) == kind);
    }
  }
  CHECK_FALSE(boundary_request_named("cgroups"));
  CHECK_FALSE(boundary_kind_named("auto"));
}
