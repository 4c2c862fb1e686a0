// Parsers of /proc and mountinfo text: the cgroup v2 mount is found where
// it is, never assumed.
#include "gate.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/proc.hpp"

#include <doctest/doctest.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

using namespace treeguard::platform;

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("find_cgroup2_mount") {
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
  // Optional fields, the last line without its newline, an escape at the end.
  const std::string last = "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
                           "41 31 0:38 / /mnt/cg\\040 rw shared:9 master:1 - cgroup2 cgroup2 rw";
  CHECK(find_cgroup2_mount(last) == std::optional<std::string>("/mnt/cg "));
  // The type is the first word after " - " (here cgroup), not its source (cgroup2).
  CHECK_FALSE(find_cgroup2_mount("41 31 0:38 / /mnt/x rw - cgroup cgroup2 rw\n"));
  CHECK_FALSE(find_cgroup2_mount(""));
  CHECK_FALSE(find_cgroup2_mount("41 31 0:38 /\n"));
}

TEST_CASE("machine_id_in: 32 lowercase hex digits, else none") {
  char dir_template[] = "/tmp/tg-machine-id.XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const std::string path = dir + "/machine-id";
  auto write = [&](const std::string& text) {
    std::ofstream(path) << text;
  };
  write("0123456789abcdef0123456789abcdef\n");
  CHECK(machine_id_in(path.c_str()) == "0123456789abcdef0123456789abcdef");
  write("uninitialized\n");  // a fresh image's, before the first boot
  CHECK(machine_id_in(path.c_str()).empty());
  write("");
  CHECK(machine_id_in(path.c_str()).empty());
  ::unlink(path.c_str());
  CHECK(machine_id_in(path.c_str()).empty());
  ::rmdir(dir.c_str());
}

TEST_CASE("parse_populated") {
  CHECK(parse_populated("populated 1\nfrozen 0\n") == std::optional<bool>(true));
  CHECK(parse_populated("populated 0\nfrozen 0\n") == std::optional<bool>(false));
  CHECK_FALSE(parse_populated("frozen 0\n"));
}

TEST_CASE("parse_flat_key and has_word: cpu.stat, memory.events, controller lists") {
  const std::string stat = "usage_usec 2010000\nuser_usec 1990000\nsystem_usec 20000\n"
                           "core_sched.force_idle_usec 0\n";
  CHECK(parse_flat_key(stat, "user_usec") == std::optional<std::uint64_t>(1990000));
  CHECK(parse_flat_key(stat, "system_usec") == std::optional<std::uint64_t>(20000));
  CHECK_FALSE(parse_flat_key(stat, "nr_periods"));
  const std::string events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
  CHECK(parse_flat_key(events, "oom_kill") == std::optional<std::uint64_t>(1));
  CHECK(parse_flat_key(events, "oom") == std::optional<std::uint64_t>(1));
  CHECK(has_word("cpuset cpu io memory pids\n", "pids"));
  CHECK(has_word("cpuset cpu io memory pids\n", "memory"));
  CHECK_FALSE(has_word("hugetlb\n", "memory"));
  CHECK_FALSE(has_word("", "pids"));
}

TEST_CASE("parse_proc_stat copes with hostile command names") {
  const std::string text =
      "4242 (a) b) (c d) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
  auto stat = parse_proc_stat(text);
  REQUIRE(stat);
  CHECK(stat->pid == 4242);
  CHECK(stat->state == 'S');
  CHECK(stat->ppid == 1);
  CHECK(stat->pgid == 4242);
  CHECK(stat->sid == 4242);
  CHECK(stat->threads == 1);
  CHECK(stat->start_time == 987654ULL);
  CHECK_FALSE(parse_proc_stat("garbage"));
  CHECK_FALSE(parse_proc_stat("12 (x) S 1 2"));
}

TEST_CASE("the host view's pid namespace facts are this process's, asked once or again") {
  const auto host = treeguard::make_host_view();
  const std::uint64_t ns = own_pid_namespace();
  CHECK(ns != 0);
  CHECK(host->pid_namespace() == ns);
  CHECK(host->pid_namespace_init() == own_pid_namespace_init());
  // Kept: the gate and the record ask the same view.
  CHECK(host->pid_namespace() == ns);
  CHECK(host->pid_namespace_init() == own_pid_namespace_init());
}

TEST_CASE("process_alive is false for another start time") {
  auto self = read_proc_stat(::getpid());
  REQUIRE(self);
  CHECK(process_alive(::getpid(), self->start_time));
  CHECK_FALSE(process_alive(::getpid(), self->start_time + 1));
  CHECK_FALSE(boot_id().empty());
}

namespace {

void* sleep_forever(void*) {
  for (;;) {
    ::pause();
  }
  return nullptr;
}

// The leader thread's own state letter, as /proc/PID/stat shows it.
char leader_letter(pid_t pid) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto stat = parse_proc_stat(text);
  return stat ? stat->state : '?';
}

}  // namespace

TEST_CASE("a process whose leader thread has exited is alive while another thread runs") {
  // DESIGN.md [liveness]: pthread_exit() in main, a worker running.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    pthread_t worker;
    if (::pthread_create(&worker, nullptr, sleep_forever, nullptr) != 0) {
      ::_exit(1);
    }
    // pthread_exit() itself would unwind through doctest's handlers: end
    // the main thread alone the way it does, by the thread's own exit.
    ::syscall(SYS_exit, 0);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (leader_letter(child) != 'Z' && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(leader_letter(child) == 'Z');
  auto stat = read_proc_stat(child);
  REQUIRE(stat);
  CHECK(stat->threads == 2);
  CHECK(stat->alive());
  CHECK(stat->state != 'Z');
  CHECK(process_alive(child, stat->start_time));

  // Stopped as a group: every live thread stops, and the process says so.
  ::kill(child, SIGSTOP);
  while (!(read_proc_stat(child) && read_proc_stat(child)->stopped())
         && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(read_proc_stat(child)->stopped());
  CHECK(read_proc_stat(child)->held());

  // Killed: the whole group is gone; the zombie is dead before it is reaped.
  ::kill(child, SIGKILL);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) == 0);
  CHECK_FALSE(process_alive(child, stat->start_time));
  CHECK_FALSE(read_proc_stat(child)->alive());
  ::waitpid(child, nullptr, 0);
  CHECK_FALSE(process_alive(child, stat->start_time));
}

TEST_SUITE_END();
