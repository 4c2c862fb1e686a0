// Parsers of /proc and mountinfo text: the cgroup v2 mount is found where
// it is, never assumed.
#include "linux/cgroup_fs.hpp"
#include "linux/proc.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

using namespace treeguard::platform;

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("find_cgroup2_mount")
{
  const std::string hybrid =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  CHECK(find_cgroup2_mount(hybrid) == std::optional<std::string>("/sys/fs/cgroup/unified"));
  const std::string unified =
    "25 30 0:22 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n";
  CHECK(find_cgroup2_mount(unified) == std::optional<std::string>("/sys/fs/cgroup"));
  const std::string escaped = "25 30 0:22 / /mnt/my\\040cg rw - cgroup2 none rw\n";
  CHECK(find_cgroup2_mount(escaped) == std::optional<std::string>("/mnt/my cg"));
  // A bind mount of a sub-tree is not the hierarchy's root.
  const std::string bind_only = "25 30 0:22 /sub /mnt/x rw - cgroup2 cgroup2 rw\n";
  CHECK_FALSE(find_cgroup2_mount(bind_only));
  CHECK_FALSE(find_cgroup2_mount("32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw\n"));
}

TEST_CASE("parse_populated")
{
  CHECK(parse_populated("populated 1\nfrozen 0\n") == std::optional<bool>(true));
  CHECK(parse_populated("populated 0\nfrozen 0\n") == std::optional<bool>(false));
  CHECK_FALSE(parse_populated("frozen 0\n"));
}

TEST_CASE("parse_proc_stat copes with hostile command names")
{
  const std::string text =
    "4242 (a) b) (c d) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
  auto stat = parse_proc_stat(text);
  REQUIRE(stat);
  CHECK(stat->pid == 4242);
  CHECK(stat->state == 'S');
  CHECK(stat->ppid == 1);
  CHECK(stat->pgid == 4242);
  CHECK(stat->sid == 4242);
  CHECK(stat->start_time == 987654ULL);
  CHECK_FALSE(parse_proc_stat("garbage"));
  CHECK_FALSE(parse_proc_stat("12 (x) S 1 2"));
}

TEST_CASE("process_alive is false for another start time")
{
  auto self = read_proc_stat(::getpid());
  REQUIRE(self);
  CHECK(process_alive(::getpid(), self->start_time));
  CHECK_FALSE(process_alive(::getpid(), self->start_time + 1));
  CHECK_FALSE(boot_id().empty());
}

TEST_SUITE_END();
