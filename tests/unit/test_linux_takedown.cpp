// The one takedown engine (run_processes.hpp) never signals a pid that
// names another process now. Its Enumerate is the seam between the walk
// and the signal: the walk's sighting is given with a start time that is
// not the live process's, as when the pid was recycled after the walk.
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <vector>

using namespace treeguard::platform;

TEST_SUITE_BEGIN("treeguard::platform::linux");

TEST_CASE("freeze_and_kill never signals a pid whose start time is not the one seen") {
  const pid_t bystander = ::fork();
  REQUIRE(bystander >= 0);
  if (bystander == 0) {
    for (;;) {
      ::pause();
    }
  }
  auto now = read_proc_stat(bystander);
  REQUIRE(now);
  // What a walk saw before the pid went to the bystander: another start
  // time. Shown stopped, so the freeze ends after one round.
  ProcStat seen = *now;
  seen.start_time = now->start_time - 1;
  seen.state = 'T';
  CHECK(open_verified_pidfd(bystander, seen.start_time) < 0);
  const int pidfd = open_verified_pidfd(bystander, now->start_time);
  CHECK(pidfd >= 0);
  ::close(pidfd);

  int rounds = 0;
  auto killed = freeze_and_kill(
      [&] {
        ++rounds;
        return std::vector<ProcStat>{seen};
      },
      std::chrono::milliseconds(500));
  REQUIRE(killed);
  CHECK(*killed == 0);  // the identity seen is gone: nothing to send to
  CHECK(rounds >= 2);   // a freeze round, then a kill round that found none new
  // Neither SIGSTOP nor SIGKILL reached the bystander.
  siginfo_t info{};
  CHECK(::waitid(P_PID, static_cast<id_t>(bystander), &info, WEXITED | WSTOPPED | WNOHANG) == 0);
  CHECK(info.si_pid == 0);
  CHECK(process_alive(bystander, now->start_time));
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
}

// Run in a child of its own (a lowered hard limit cannot be raised again):
// with RLIMIT_NOFILE at 300, stop and kill 400 sleepers. The freeze keeps
// the pidfd of the first ones it stops and opens those of the rest again
// for their kill; every one must die, and none may be left stopped.
TEST_CASE("freeze_and_kill kills more processes than it may keep descriptors for") {
  const pid_t tester = ::fork();
  REQUIRE(tester >= 0);
  if (tester == 0) {
    struct rlimit low = {300, 300};
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0) {
      ::_exit(10);
    }
    std::vector<ProcStat> sleepers;
    for (int k = 0; k < 400; ++k) {
      const pid_t pid = ::fork();
      if (pid < 0) {
        ::_exit(11);
      }
      if (pid == 0) {
        for (;;) {
          ::pause();
        }
      }
      auto stat = read_proc_stat(pid);
      if (!stat) {
        ::_exit(12);
      }
      sleepers.push_back(*stat);
    }
    auto killed = freeze_and_kill([&] { return sleepers; }, std::chrono::seconds(5));
    // Reap them as they die, for at most 10 s; any left then is a survivor.
    int died = 0;
    int left = 400;
    for (int tick = 0; left > 0 && tick < 1000; ++tick) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid > 0) {
        --left;
        died += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 1 : 0;
        continue;
      }
      ::usleep(10'000);
    }
    for (const auto& sleeper : sleepers) {
      ::kill(sleeper.pid, SIGKILL);  // our own children: the survivors, if any
    }
    ::_exit(!killed ? 13 : *killed != 400 ? 14 : died != 400 ? 15 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(tester, &status, 0) == tester);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 14: not all sent SIGKILL; 15: not all died of it
}

// A walk may lose a process it found before (the member that vouched for
// its group died): a process the freeze stopped is killed all the same,
// never left stopped.
TEST_CASE("freeze_and_kill kills what it froze when later walks no longer find it") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    for (;;) {
      ::pause();
    }
  }
  auto seen = read_proc_stat(child);
  REQUIRE(seen);
  seen->state = 'T';  // shown held: the freeze ends after this one round
  int walks = 0;
  auto killed = freeze_and_kill(
      [&] { return ++walks == 1 ? std::vector<ProcStat>{*seen} : std::vector<ProcStat>{}; },
      std::chrono::milliseconds(500));
  REQUIRE(killed);
  CHECK(*killed == 1);
  int status = 0;
  for (int tick = 0; tick < 500 && ::waitpid(child, &status, WNOHANG) == 0; ++tick) {
    ::usleep(10'000);
  }
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, WNOHANG);
}

TEST_SUITE_END();
