// The dispositions treeguard inherits (issue 20 item 3, issue 22): taken
// once at start; SIGCHLD at its default for treeguard (an inherited ignore
// would have the kernel reap its children); a signal ignored at start is
// not handled (but TERM and ALRM);
// COMMAND gets the inherited dispositions back. Each case runs in a child
// process: the state is the process's own, taken once.
#include "in_child.hpp"
#include "linux/signals.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>

using namespace treeguard::platform;

TEST_SUITE_BEGIN("treeguard::platform::linux");

namespace {

bool ignored_now(int number) {
  struct sigaction now {};
  return ::sigaction(number, nullptr, &now) == 0 && now.sa_handler == SIG_IGN;
}

bool blocked_now(int number) {
  sigset_t mask;
  ::sigprocmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, number) == 1;
}

// Runs `body` in a child that starts with every signal at its default,
// nothing blocked, and `ignored` ignored; returns the failed checks' bits.
int in_child(std::initializer_list<int> ignored, const std::function<int()>& body) {
  return treeguard::test::exit_status_in_child([&] {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int number = 1; number < NSIG; ++number) {
      if (number != SIGKILL && number != SIGSTOP) {
        ::signal(number, SIG_DFL);
      }
    }
    for (int number : ignored) {
      ::signal(number, SIG_IGN);
    }
    // An earlier case in this process may have blocked signals already
    // (test_linux_cgroup_kill does): start over as a new treeguard.
    forget_signal_state();
    return body();
  });
}

}  // namespace

TEST_CASE("signals: an inherited SIGCHLD ignore is undone for treeguard, given back to COMMAND") {
  CHECK(in_child({SIGCHLD},
                 [] {
                   block_signals();
                   int failed = 0;
                   failed |= ignored_at_start(SIGCHLD) ? 0 : 1;
                   failed |= ignored_now(SIGCHLD) ? 2 : 0;  // treeguard waits for its children
                   restore_dispositions();
                   failed |= ignored_now(SIGCHLD) ? 0 : 4;  // COMMAND: as the caller gave it
                   return failed;
                 })
        == 0);
}

TEST_CASE("signals: INT, HUP ignored at start are not handled; TERM and ALRM always are") {
  CHECK(in_child({SIGINT, SIGHUP, SIGQUIT, SIGTERM, SIGALRM},
                 [] {
                   block_signals();
                   int failed = 0;
                   failed |=
                       blocked_now(SIGINT) || blocked_now(SIGHUP) || blocked_now(SIGQUIT) ? 1 : 0;
                   failed |= ignored_now(SIGINT) && ignored_now(SIGHUP) ? 0 : 2;
                   failed |= blocked_now(SIGTERM) && blocked_now(SIGALRM) ? 0 : 4;
                   failed |= blocked_now(SIGUSR1) && blocked_now(SIGWINCH) ? 0 : 8;  // not ignored
                   return failed;
                 })
        == 0);
}

TEST_CASE("signals: COMMAND gets the inherited PIPE (ignored or default), not treeguard's own") {
  for (bool caller_ignores : {false, true}) {
    CAPTURE(caller_ignores);
    const auto body = [caller_ignores] {
      block_signals();
      ::signal(SIGPIPE, SIG_IGN);  // as host_init does for treeguard itself
      restore_dispositions();
      return ignored_now(SIGPIPE) == caller_ignores ? 0 : 1;
    };
    CHECK((caller_ignores ? in_child({SIGPIPE}, body) : in_child({}, body)) == 0);
  }
}

TEST_CASE("signals: timeout's deadline signal and ALRM reach COMMAND at their default") {
  // As timeout(1), which handles those itself: COMMAND does not inherit an
  // ignore of them; every other ignore (HUP) still reaches it.
  CHECK(in_child({SIGINT, SIGALRM, SIGHUP, SIGRTMIN + 1},
                 [] {
                   block_signals();
                   default_in_command(SIGINT);
                   default_in_command(SIGALRM);
                   default_in_command(SIGRTMIN + 1);
                   restore_dispositions();
                   int failed = 0;
                   failed |= ignored_now(SIGINT) ? 1 : 0;
                   failed |= ignored_now(SIGALRM) ? 2 : 0;
                   failed |= ignored_now(SIGRTMIN + 1) ? 4 : 0;  // beyond the signals it knows
                   failed |= ignored_now(SIGHUP) ? 0 : 8;
                   return failed;
                 })
        == 0);
}

TEST_SUITE_END();
