#include "cli.hpp"
#include "limits.hpp"

#include <doctest/doctest.h>

#include <map>

using namespace treeguard;

namespace {
Invocation parse_with(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), "treeguard");
  return parse_command_line(args, [env](const char* name) -> std::optional<std::string> {
    auto found = env.find(name);
    return found == env.end() ? std::nullopt : std::optional<std::string>(found->second);
  });
}
}  // namespace

TEST_SUITE_BEGIN("treeguard::limits");

TEST_CASE("sizes: bytes, K M G T in powers of 1024, max") {
  CHECK(**parse_size("1048576") == 1048576u);
  CHECK(**parse_size("64M") == 64u << 20);
  CHECK(**parse_size("64m") == 64u << 20);
  CHECK(**parse_size("64MiB") == 64u << 20);
  CHECK(**parse_size("64MB") == 64u << 20);
  CHECK(**parse_size("512K") == 512u << 10);
  CHECK(**parse_size("2G") == std::uint64_t{2} << 30);
  CHECK(**parse_size("1T") == std::uint64_t{1} << 40);
  CHECK(**parse_size("100B") == 100u);
  CHECK_FALSE(parse_size("max")->has_value());
  for (const char* bad : {"", "0", "0M", "-1M", "+1M", "1.5G", "64X", "M", "64 M", "64MM",
                          "99999999999999999999", "17179869184G", "1e9", " 1"}) {
    CAPTURE(bad);
    auto parsed = parse_size(bad);
    CHECK_FALSE(parsed);
    if (!parsed) {
      CHECK(parsed.error().message().find("is not a size") != std::string::npos);
    }
  }
}

TEST_CASE("task counts: 1 or more, or max") {
  CHECK(**parse_task_count("64") == 64u);
  CHECK_FALSE(parse_task_count("max")->has_value());
  for (const char* bad : {"", "0", "-1", "1k", "6 4", "99999999999999999999999"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_task_count(bad));
  }
}

TEST_CASE("format_bytes and the -v line") {
  CHECK(format_bytes(64u << 20) == "64M");
  CHECK(format_bytes(1536u << 20) == "1.5G");
  CHECK(format_bytes(100) == "100B");
  TreeUsage usage;
  usage.source = "cgroup";
  usage.cpu_user_seconds = 1.5;
  usage.cpu_system_seconds = 0.25;
  usage.memory_peak_bytes = 5u << 20;
  usage.tasks_peak = 3;
  CHECK(describe_usage(usage)
        == "1.75s CPU time (1.50s user, 0.25s system), 5M memory peak, 3 tasks peak (from cgroup)");
  usage.memory_peak_bytes.reset();
  usage.tasks_peak.reset();
  usage.oom_kills = 2;
  CHECK(describe_usage(usage)
        == "1.75s CPU time (1.50s user, 0.25s system), 2 OOM kill(s) (from cgroup)");
}

TEST_CASE("--memory-max and --pids-max, from flags or the environment; a flag wins") {
  auto flags = parse_with({"run", "--memory-max", "64M", "--pids-max", "64", "--", "true"});
  REQUIRE_FALSE(flags.error);
  CHECK(*flags.run.limits.memory_max == 64u << 20);
  CHECK(*flags.run.limits.pids_max == 64u);

  auto none = parse_with({"run", "--", "true"});
  CHECK_FALSE(none.run.limits.any());

  auto env = parse_with({"run", "--", "true"},
                        {{"TREEGUARD_MEMORY_MAX", "1G"}, {"TREEGUARD_PIDS_MAX", "10"}});
  REQUIRE_FALSE(env.error);
  CHECK(*env.run.limits.memory_max == std::uint64_t{1} << 30);
  CHECK(*env.run.limits.pids_max == 10u);

  auto wins = parse_with({"run", "--memory-max", "max", "--pids-max", "5", "--", "true"},
                         {{"TREEGUARD_MEMORY_MAX", "1G"}, {"TREEGUARD_PIDS_MAX", "10"}});
  REQUIRE_FALSE(wins.error);
  CHECK_FALSE(wins.run.limits.memory_max);
  CHECK(*wins.run.limits.pids_max == 5u);

  auto empty =
      parse_with({"run", "--", "true"}, {{"TREEGUARD_MEMORY_MAX", ""}, {"TREEGUARD_PIDS_MAX", ""}});
  REQUIRE_FALSE(empty.error);
  CHECK_FALSE(empty.run.limits.any());

  auto bad_env = parse_with({"run", "--", "true"}, {{"TREEGUARD_MEMORY_MAX", "lots"}});
  REQUIRE(bad_env.error);
  CHECK(bad_env.error->rfind("TREEGUARD_MEMORY_MAX: ", 0) == 0);
  auto bad_flag = parse_with({"run", "--pids-max", "0", "--", "true"});
  REQUIRE(bad_flag.error);
  CHECK(bad_flag.error->rfind("--pids-max: ", 0) == 0);
  auto empty_flag = parse_with({"run", "--memory-max", "", "--", "true"});
  REQUIRE(empty_flag.error);
  CHECK(empty_flag.error->find('\n') == std::string::npos);
}

TEST_SUITE_END();
