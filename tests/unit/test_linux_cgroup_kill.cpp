// The cgroup boundary's kill for kernels without cgroup.kill (before 5.14):
// freeze, SIGKILL each member, thaw. This kernel has cgroup.kill, so the
// lifecycle never takes this path here; the test calls it directly, on a
// real tree in a cgroup the test creates and removes. Also the cases of the
// cgroup boundary that need a real leaf: removing a leaf tree, and what the
// boundary remembers of a churning tree.
#include "fifo_word.hpp"
#include "in_child.hpp"
#include "linux/cgroup_boundary.hpp"
#include "linux/cgroup_fs.hpp"
#include "linux/graceful_stop.hpp"
#include "linux/run_processes.hpp"
#include "linux/signals.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using namespace treeguard;
using namespace treeguard::platform;

namespace {

bool cgroups_writable() {
  auto mount = cgroup2_mount();
  return ::geteuid() == 0 && mount && ::access((*mount + "/cgroup.procs").c_str(), W_OK) == 0;
}

// Wait for the leaf's cgroup.events to say `populated` is `wanted`: woken
// by the kernel's notification (POLLPRI), bounded at 5 s.
bool wait_populated(const std::string& leaf, bool wanted) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  UniqueFd events(::open((leaf + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC));
  while (std::chrono::steady_clock::now() < until) {
    char buffer[128];
    ssize_t n = ::pread(events.get(), buffer, sizeof buffer - 1, 0);
    if (n > 0 && parse_populated(std::string(buffer, static_cast<std::size_t>(n))) == wanted) {
      return true;
    }
    struct pollfd fd = {events.get(), POLLPRI, 0};
    ::poll(&fd, 1, 100);
  }
  return false;
}

// The test's own parent cgroup. Whatever happens to the test (a failed
// REQUIRE throws), leaving the scope kills what is in the leaves beneath it
// (cgroup.kill, on cgroups this test created) and removes them, so no
// forking loop outlives a failing test.
class ParentGuard {
public:
  // Makes the test's own parent, tg-unit-TAG-PID under the cgroup2 mount
  // (tg-unit-PID without a tag).
  explicit ParentGuard(const std::string& tag) {
    auto mount = cgroup2_mount();
    REQUIRE(mount);
    m_path = tag.empty() ? fmt::format("{}/tg-unit-{}", *mount, ::getpid())
                         : fmt::format("{}/tg-unit-{}-{}", *mount, tag, ::getpid());
    REQUIRE(::mkdir(m_path.c_str(), 0755) == 0);
  }
  ParentGuard(const ParentGuard&) = delete;
  ParentGuard& operator=(const ParentGuard&) = delete;
  ~ParentGuard() {
    std::error_code ignored;
    for (const auto& entry : std::filesystem::directory_iterator(m_path, ignored)) {
      if (!entry.is_directory(ignored)) {
        continue;
      }
      const std::string leaf = entry.path().string();
      if (FILE* kill = std::fopen((leaf + "/cgroup.kill").c_str(), "w")) {
        std::fputs("1", kill);
        std::fclose(kill);
      }
      wait_populated(leaf, false);
      ::rmdir(leaf.c_str());
    }
    ::rmdir(m_path.c_str());
  }
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
};

// A process that only waits to be killed, made cheaply: it shares this
// process's memory (CLONE_VM) and touches none of it but the stack given it
// (kept in `stacks` until it is reaped), so thousands of them copy no page
// tables.
int idle(void* /*unused*/) {
  for (;;) {
    ::syscall(SYS_pause);
  }
}
pid_t spawn_idle(std::vector<std::unique_ptr<char[]>>& stacks) {
  constexpr std::size_t k_stack = 64 * 1024;
  stacks.emplace_back(new char[k_stack]);
  return ::clone(idle, stacks.back().get() + k_stack, CLONE_VM | SIGCHLD, nullptr);
}

// A child of this process that pauses for ever (TERM ends it), as `uid`
// (this process's own when 0), in the cgroup `leaf`; returns once it runs
// as that user there.
pid_t start_pauser(uid_t uid, const std::string& leaf) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // TERM as a run's member has it: not blocked (an earlier case of this
    // process blocks the signals treeguard handles), not handled.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGTERM, SIG_DFL);
    if (uid != 0 && (::setgid(uid) != 0 || ::setuid(uid) != 0)) {
      ::_exit(90);
    }
    (void)::write(ready[1], "r", 1);
    for (;;) {
      ::pause();
    }
  }
  char byte = 0;
  ::close(ready[1]);
  const bool ran = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  const bool joined = ran && write_cgroup_file(leaf + "/cgroup.procs", std::to_string(pid));
  if (!joined) {
    // Outside the leaf, no guard would end it: it pauses no longer than the test.
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  REQUIRE(ran);
  REQUIRE(joined);
  return pid;
}

// How the child `pid` ended: the signal that killed it, or 0. One still
// alive after 5 s (its pidfd polled; at once, if `kill`) is sent SIGKILL
// then: a test that fails never waits for ever.
int death_signal(pid_t pid, bool kill) {
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  REQUIRE(pidfd);
  struct pollfd ended = {pidfd.get(), POLLIN, 0};
  if (kill || ::poll(&ended, 1, 5000) != 1) {
    ::kill(pid, SIGKILL);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

}  // namespace

// Its own ctest (unit.cgroup, tests/unit/cgroup.sh), which probes for a
// writable cgroup2 mount and skips (77) with the reason printed; the `unit`
// test excludes this suite.
TEST_SUITE_BEGIN("treeguard::platform::linux::cgroup");

TEST_CASE("kill_cgroup_by_freezing takes a forking tree down") {
  REQUIRE_MESSAGE(cgroups_writable(), "needs root and a writable cgroup2 mount");
  block_signals();
  ParentGuard guard("");
  const std::string& parent = guard.path();
  {
    auto boundary = CgroupBoundary::create(parent, "20261129T000000-1-f00d");
    REQUIRE(boundary);
    auto& b = **boundary;
    REQUIRE(b.form());
    // A background grandchild, a setsid'd one, and a loop that keeps
    // forking (bounded: at most 2000 sleepers, however the test ends).
    auto pid = b.spawn(SpawnSpec{{"sh", "-c",
                                  "sleep 1000 & setsid sleep 1000 & "
                                  "i=0; while [ $i -lt 2000 ]; do sleep 1000 & i=$((i+1)); done; "
                                  "wait"},
                                 "20261129T000000-1-f00d"});
    REQUIRE(pid);
    REQUIRE(wait_populated(b.address(), true));
    // Wait for the tree to have grown past COMMAND itself.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (b.alive_members().size() < 4 && std::chrono::steady_clock::now() < until) {
      b.wait(Clock::now() + std::chrono::milliseconds(2));  // wakes on SIGCHLD too
    }
    CHECK(b.alive_members().size() >= 4);

    auto killed = kill_cgroup_by_freezing(b.address());
    CHECK_MESSAGE(killed, (killed ? std::string() : killed.error().message()));
    CHECK(wait_populated(b.address(), false));
    CHECK(b.alive_members().empty());
    // Reap COMMAND, then the leaf can go.
    const auto reap_until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!b.child_status() && std::chrono::steady_clock::now() < reap_until) {
      b.wait(Clock::now() + std::chrono::milliseconds(50));
    }
    REQUIRE(b.child_status());
    CHECK(b.child_status()->signaled);
    CHECK(b.close());
  }
  CHECK(::rmdir(parent.c_str()) == 0);
}

TEST_CASE("the cgroup boundary's forced kill walks no member: the census named them, the kill "
          "takes every one") {
  // The authority's census is the one (Boundary::kill_all): a member born
  // after it is killed with the leaf, and kill_all() does not walk the
  // leaf to name it first (a forker forks all the while such a walk takes).
  REQUIRE_MESSAGE(cgroups_writable(), "needs root and a writable cgroup2 mount");
  block_signals();
  ParentGuard guard("census");
  const std::string& parent = guard.path();
  const std::string fifo = fmt::format("/tmp/tg-unit-census-{}.fifo", ::getpid());
  ::unlink(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  {
    auto boundary = CgroupBoundary::create(parent, "20261129T000000-1-ce05");
    REQUIRE(boundary);
    auto& b = **boundary;
    REQUIRE(b.form());
    // COMMAND waits for the word on the FIFO, then starts a member.
    auto pid = b.spawn(SpawnSpec{{"sh", "-c", fmt::format("read go < {}; sleep 1000 & wait", fifo)},
                                 "20261129T000000-1-ce05"});
    REQUIRE(pid);
    REQUIRE(wait_populated(b.address(), true));
    const auto census = b.alive_members();
    REQUIRE(census.size() == 1);
    CHECK(census[0].pid == *pid);

    // The word (COMMAND opens the FIFO once its shell runs: bounded), then
    // the new member, as the leaf lists it.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    REQUIRE(test::say_go(fifo, until));
    pid_t born = 0;
    while (born == 0 && std::chrono::steady_clock::now() < until) {
      for (pid_t listed : cgroup_pids(b.address())) {
        if (listed != *pid) {
          born = listed;
        }
      }
      if (born == 0) {
        struct timespec pause = {0, 1'000'000};
        ::nanosleep(&pause, nullptr);
      }
    }
    REQUIRE(born != 0);

    auto killed = b.kill_all();
    CHECK_MESSAGE(killed, (killed ? std::string() : killed.error().message()));
    const auto named = b.members();
    INFO("born after the census: pid " << born);
    CHECK(named.size() == 1);
    CHECK(std::none_of(named.begin(), named.end(),
                       [&](const MemberInfo& member) { return member.pid == born; }));
    CHECK(wait_populated(b.address(), false));  // it died with the leaf all the same
    const auto reap_until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!b.child_status() && std::chrono::steady_clock::now() < reap_until) {
      b.wait(Clock::now() + std::chrono::milliseconds(50));
    }
    REQUIRE(b.child_status());
    CHECK(b.close());
  }
  ::unlink(fifo.c_str());
  CHECK(::rmdir(parent.c_str()) == 0);
}

TEST_CASE("a cgroup run's churn costs the boundary no memory once its processes are gone") {
  // Short-lived processes in the leaf, each seen by a scan and then killed
  // and reaped, as a build's compilers come and go: what the boundary
  // remembers stays bounded as the process-group walk's does (the first
  // seen, the live), not by how many came and went.
  REQUIRE_MESSAGE(cgroups_writable(), "needs root and a writable cgroup2 mount");
  ParentGuard guard("churn");
  const std::string& parent = guard.path();
  {
    auto boundary = CgroupBoundary::create(parent, "20261129T000000-1-c0de");
    REQUIRE(boundary);
    auto& b = **boundary;
    REQUIRE(b.form());
    constexpr std::size_t batch = 64;
    const std::size_t churned = k_max_recorded_members + 4 * k_forget_batch;
    std::size_t most = 0;
    for (std::size_t done = 0; done < churned; done += batch) {
      std::vector<pid_t> children;
      std::vector<std::unique_ptr<char[]>> stacks;
      for (std::size_t i = 0; i < batch; ++i) {
        const pid_t child = spawn_idle(stacks);
        REQUIRE(child > 0);
        children.push_back(child);
        REQUIRE(write_cgroup_file(b.address() + "/cgroup.procs", std::to_string(child)));
      }
      CHECK(b.alive_members().size() == batch);
      for (const pid_t child : children) {
        ::kill(child, SIGKILL);
        int status = 0;
        REQUIRE(::waitpid(child, &status, 0) == child);
      }
      most = std::max(most, b.members().size());
    }
    INFO("members remembered at most: " << most << " of " << churned << " churned");
    CHECK(most <= k_max_recorded_members + 2 * batch + k_forget_batch + batch);
    CHECK(b.members().size() >= k_max_recorded_members);  // the first seen: the evidence
    CHECK(b.close());
  }
  CHECK(::rmdir(parent.c_str()) == 0);
}

TEST_CASE("remove_cgroup_tree: a bare leaf in one rmdir, one with cgroups beneath it whole, one "
          "with a member kept") {
  REQUIRE_MESSAGE(cgroups_writable(), "needs root and a writable cgroup2 mount");
  ParentGuard guard("rm");
  const std::string& parent = guard.path();
  auto exists = [](const std::string& path) {
    return ::access(path.c_str(), F_OK) == 0;
  };

  const std::string bare = parent + "/bare";
  REQUIRE(::mkdir(bare.c_str(), 0755) == 0);
  CHECK(remove_cgroup_tree(bare));
  CHECK_FALSE(exists(bare));
  CHECK(remove_cgroup_tree(bare));  // gone already: fine

  // A nested run's leaves beneath the leaf, two deep: the first rmdir is
  // refused (EBUSY), then they go, deepest first, and the leaf after them.
  const std::string deep = parent + "/deep";
  for (const std::string& dir : {deep, deep + "/a", deep + "/a/b", deep + "/c"}) {
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  }
  CHECK(remove_cgroup_tree(deep));
  CHECK_FALSE(exists(deep));

  // A leaf with a member is never removed: the call fails and it stays.
  const std::string held = parent + "/held";
  REQUIRE(::mkdir(held.c_str(), 0755) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (;;) {
      ::pause();
    }
  }
  CHECK(write_cgroup_file(held + "/cgroup.procs", std::to_string(child)));
  REQUIRE(wait_populated(held, true));
  CHECK_FALSE(remove_cgroup_tree(held));
  CHECK(exists(held));
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  REQUIRE(wait_populated(held, false));
  CHECK(remove_cgroup_tree(held));
  CHECK_FALSE(exists(held));
}

TEST_CASE("the drain's signal reaches every member of a leaf but one it may not signal") {
  // A run's leaf as an ordinary user's (uid 65534) with a process of
  // another user's in it (a daemon started through sudo): that one is
  // refused the signal, reported, and every other member still gets it.
  REQUIRE_MESSAGE(cgroups_writable(), "needs root and a writable cgroup2 mount");
  constexpr uid_t k_nobody = 65534;
  ParentGuard guard("refused");
  const std::string& parent = guard.path();
  const std::string leaf = parent + "/leaf";
  REQUIRE(::mkdir(leaf.c_str(), 0755) == 0);
  // Listed in the order they joined (or of their pids): the refused one
  // between the two others.
  const pid_t first = start_pauser(k_nobody, leaf);
  const pid_t theirs = start_pauser(0, leaf);
  const pid_t last = start_pauser(k_nobody, leaf);
  const int status = test::exit_status_in_child([&] {
    if (::setgid(k_nobody) != 0 || ::setuid(k_nobody) != 0) {
      return 90;
    }
    const Delivered delivered = signal_cgroup(leaf, SIGTERM);
    if (!delivered.error || delivered.error->code != std::errc::operation_not_permitted
        || delivered.error->message().find(std::to_string(theirs)) == std::string::npos) {
      return 1;  // the refusal is reported, naming whom
    }
    return delivered.reached.size() == 2 ? 0 : 2;
  });
  CHECK(status == 0);
  CHECK(death_signal(first, status != 0) == SIGTERM);
  CHECK(death_signal(last, status != 0) == SIGTERM);
  CHECK(death_signal(theirs, true) == SIGKILL);
}

TEST_SUITE_END();
