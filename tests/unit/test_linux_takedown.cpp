// The one takedown engine (run_processes.hpp) never signals a pid that
// names another process now. Its Enumerate is the seam between the walk
// and the signal: the walk's sighting is given with a start time that is
// not the live process's, as when the pid was recycled after the walk.
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <utility>
#include <vector>

using namespace treeguard::platform;

TEST_SUITE_BEGIN("treeguard::platform::linux");

namespace {

// A child that sleeps until it is killed; -1 if fork failed.
pid_t start_sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) {
      ::pause();
    }
  }
  return pid;
}

// A child that sleeps until it is killed and answers each SIGUSR1 with a
// byte on `answers` (read end); pid -1 if fork failed. Returns once its
// handler is in place.
struct Witness {
  pid_t pid = -1;
  int answers = -1;
};
int g_witness_pipe = -1;
void answer_usr1(int) {
  const char byte = 'a';
  (void)::write(g_witness_pipe, &byte, 1);
}
Witness start_witness() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return {};
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    g_witness_pipe = fds[1];
    ::signal(SIGUSR1, answer_usr1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // other cases may have blocked it
    answer_usr1(0);                              // ready
    for (;;) {
      ::pause();
    }
  }
  ::close(fds[1]);
  char byte = 0;
  if (pid < 0 || ::read(fds[0], &byte, 1) != 1) {
    ::close(fds[0]);
    return {};
  }
  return Witness{pid, fds[0]};
}

// Whether every signal sent to the witness so far has left it alive and
// running: it answers one more SIGUSR1 within 10 s. A SIGKILL sent before
// takes effect before the handler could run (the witness dies instead), a
// SIGSTOP holds it (no answer): the check waits for a signal's effect
// rather than looking the instant the kill returned.
bool still_running(const Witness& witness) {
  if (::kill(witness.pid, SIGUSR1) != 0) {
    return false;
  }
  struct pollfd answer = {witness.answers, POLLIN, 0};
  char byte = 0;
  return ::poll(&answer, 1, 10000) == 1 && (answer.revents & POLLIN) != 0
         && ::read(witness.answers, &byte, 1) == 1;
}

// Whether the child `pid` dies of SIGKILL within `ms` (its pidfd polls
// readable once it has exited); reaps it if it has.
bool dies_of_sigkill(pid_t pid, int ms) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    return false;
  }
  struct pollfd exited = {pidfd, POLLIN, 0};
  const bool gone = ::poll(&exited, 1, ms) == 1;
  ::close(pidfd);
  int status = 0;
  return gone && ::waitpid(pid, &status, WNOHANG) == pid && WIFSIGNALED(status)
         && WTERMSIG(status) == SIGKILL;
}

// Whether the process of `pidfd` has exited (its pidfd polls readable).
bool exited(int pidfd, int ms) {
  struct pollfd fd = {pidfd, POLLIN, 0};
  return ::poll(&fd, 1, ms) == 1;
}

}  // namespace

TEST_CASE("freeze_and_kill never signals a pid whose start time is not the one seen") {
  const Witness witness = start_witness();
  const pid_t bystander = witness.pid;
  REQUIRE(bystander > 0);
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
  // Neither SIGSTOP nor SIGKILL reached the bystander: it still answers.
  CHECK(still_running(witness));
  siginfo_t info{};
  CHECK(::waitid(P_PID, static_cast<id_t>(bystander), &info, WEXITED | WSTOPPED | WNOHANG) == 0);
  CHECK(info.si_pid == 0);
  CHECK(process_alive(bystander, now->start_time));
  ::kill(bystander, SIGKILL);
  ::waitpid(bystander, nullptr, 0);
  ::close(witness.answers);
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
      const pid_t pid = start_sleeper();
      if (pid < 0) {
        ::_exit(11);
      }
      auto stat = read_proc_stat(pid);
      if (!stat) {
        ::_exit(12);
      }
      sleepers.push_back(*stat);
    }
    auto killed = freeze_and_kill([&] { return sleepers; }, std::chrono::seconds(5));
    // All must die of it within 10 s; one left then is a survivor.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int died = 0;
    for (const auto& sleeper : sleepers) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      died += dies_of_sigkill(sleeper.pid, static_cast<int>(std::max<long long>(0, left.count())))
                  ? 1
                  : 0;
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
  const pid_t child = start_sleeper();
  REQUIRE(child >= 0);
  auto seen = read_proc_stat(child);
  REQUIRE(seen);
  seen->state = 'T';  // shown held: the freeze ends after this one round
  int walks = 0;
  auto killed = freeze_and_kill(
      [&] { return ++walks == 1 ? std::vector<ProcStat>{*seen} : std::vector<ProcStat>{}; },
      std::chrono::milliseconds(500));
  REQUIRE(killed);
  CHECK(*killed == 1);
  CHECK(dies_of_sigkill(child, 5'000));
  ::kill(child, SIGKILL);  // if it survived: ours, and reaped here
  ::waitpid(child, nullptr, 0);
}

// Children die before their parent: a parent of 400 children (a level big
// enough for the kill to wait for it) is killed only once they are dead, so
// that they die its zombies and not orphans a reaper must find among its
// own children, also when the first round knows no parents. An observer (a process of its own,
// neither frozen nor killed) counts the children still alive when the parent has exited.
TEST_CASE("freeze_and_kill kills a big level of children before their parent") {
  constexpr int k_children = 400;
  int pids[2];
  int ready[2];
  REQUIRE(::pipe(pids) == 0);
  REQUIRE(::pipe(ready) == 0);
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    std::vector<pid_t> children;
    for (int k = 0; k < k_children; ++k) {
      children.push_back(start_sleeper());
    }
    // One write of less than PIPE_BUF: read whole.
    (void)!::write(pids[1], children.data(), children.size() * sizeof(pid_t));
    for (;;) {
      ::pause();
    }
  }
  std::vector<pid_t> children(k_children);
  const auto bytes = static_cast<ssize_t>(children.size() * sizeof(pid_t));
  const bool told = ::read(pids[0], children.data(), bytes) == bytes
                    && std::find(children.begin(), children.end(), -1) == children.end();
  const pid_t observer = told ? ::fork() : -1;
  if (observer == 0) {
    const int parent_fd = static_cast<int>(::syscall(SYS_pidfd_open, parent, 0));
    std::vector<int> child_fds;
    for (pid_t child : children) {
      child_fds.push_back(static_cast<int>(::syscall(SYS_pidfd_open, child, 0)));
    }
    if (parent_fd < 0 || std::find(child_fds.begin(), child_fds.end(), -1) != child_fds.end()) {
      ::_exit(254);
    }
    (void)!::write(ready[1], "r", 1);
    if (!exited(parent_fd, 20'000)) {
      ::_exit(253);
    }
    int alive = 0;
    for (int fd : child_fds) {
      alive += exited(fd, 0) ? 0 : 1;
    }
    ::_exit(alive);
  }
  char byte = 0;
  const bool observing = observer > 0 && ::read(ready[0], &byte, 1) == 1;
  for (int fd : {pids[0], pids[1], ready[0], ready[1]}) {
    ::close(fd);
  }
  if (observing) {
    // The first round names identities only, as a record takedown's round
    // from its judgement does (no parent, shown running); the parents come
    // from the walks after it.
    bool first = true;
    auto killed = freeze_and_kill(
        [&] {
          std::vector<ProcStat> found;
          for (pid_t pid : children) {
            if (auto stat = read_proc_stat(pid)) {
              found.push_back(*stat);
            }
          }
          if (auto stat = read_proc_stat(parent)) {
            found.push_back(*stat);
          }
          if (std::exchange(first, false)) {
            for (auto& stat : found) {
              stat.ppid = 0;
              stat.state = 'R';
            }
          }
          return found;
        },
        std::chrono::seconds(5));
    REQUIRE(killed);
    CHECK(*killed == k_children + 1);
  }
  if (!observing) {
    for (pid_t child : children) {
      if (told) {
        ::kill(child, SIGKILL);  // the parent lives: each pid is still its child's
      }
    }
    if (observer > 0) {
      ::kill(observer, SIGKILL);
    }
  }
  int status = 0;
  CHECK(dies_of_sigkill(parent, 10'000));
  ::kill(parent, SIGKILL);  // if it survived: ours, and reaped here
  ::waitpid(parent, nullptr, 0);
  REQUIRE(observing);
  REQUIRE(::waitpid(observer, &status, 0) == observer);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // the children still alive when their parent died
  for (pid_t child : children) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
    CHECK((fd < 0 || exited(fd, 5'000)));  // gone, or a zombie awaiting its reaper
    if (fd >= 0) {
      ::close(fd);
    }
  }
}

TEST_SUITE_END();
