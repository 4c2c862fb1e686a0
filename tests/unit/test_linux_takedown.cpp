// The one takedown engine (run_processes.hpp) never signals a pid that
// names another process now. Its Enumerate is the seam between the walk
// and the signal: the walk's sighting is given with a start time that is
// not the live process's, as when the pid was recycled after the walk.
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"

#include <doctest/doctest.h>

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

TEST_SUITE_END();
