// The dispositions treeguard inherits (DESIGN.md [signals]): taken
// once at start; SIGCHLD at its default for treeguard (an inherited ignore
// would have the kernel reap its children); a signal ignored at start is
// not handled (but TERM and ALRM);
// COMMAND gets the inherited dispositions back. Each case runs in a child
// process: the state is the process's own, taken once.
#include "in_child.hpp"
#include "linux/signals.hpp"
#include "port/user_scope.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

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

TEST_CASE("signals: handed back before treeguard execs itself again, resumed if the exec fails") {
  CHECK(in_child({},
                 [] {
                   block_signals();
                   ::signal(SIGPIPE, SIG_IGN);  // as host_init
                   int failed = 0;
                   const OwnSignalState own = hand_back_signal_state();
                   failed |=
                       blocked_now(SIGTERM) || blocked_now(SIGINT) || blocked_now(SIGCHLD) ? 1 : 0;
                   failed |= ignored_now(SIGPIPE) ? 2 : 0;
                   resume_signal_state(own);
                   failed |= blocked_now(SIGTERM) && blocked_now(SIGCHLD) ? 0 : 4;
                   failed |= ignored_now(SIGPIPE) ? 0 : 8;
                   return failed;
                 })
        == 0);
}

TEST_CASE("signals: the re-execution into a scope hands on what treeguard inherited, not what it "
          "blocked") {
  // systemd-run is a stand-in that writes its own SigBlk and SigIgn: what
  // the treeguard started in the scope, and so COMMAND, would inherit.
  char dir_template[] = "/tmp/tg-reexec-XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::string dir = dir_template;
  const std::string out = dir + "/status";
  {
    std::ofstream script(dir + "/systemd-run");
    script << "#!/bin/sh\nexec grep -E '^Sig(Blk|Ign):' /proc/self/status > \"$TG_TEST_OUT\"\n";
  }
  REQUIRE(::chmod((dir + "/systemd-run").c_str(), 0755) == 0);
  const int status = in_child({}, [&] {
    block_signals();
    ::signal(SIGPIPE, SIG_IGN);
    ::setenv("PATH", (dir + ":/usr/bin:/bin").c_str(), 1);
    ::setenv("TG_TEST_OUT", out.c_str(), 1);
    (void)treeguard::reexec_in_scope("user", "20260101T000000-1-abcd");
    return 99;  // the exec failed
  });
  CHECK(status == 0);
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  INFO("the stand-in saw: " << text.str());
  CHECK(text.str().find("SigBlk:\t0000000000000000") != std::string::npos);
  // SIGPIPE (13) is not ignored: bit 12 of SigIgn
  const auto at = text.str().find("SigIgn:\t");
  REQUIRE(at != std::string::npos);
  const unsigned long long ignored = std::stoull(text.str().substr(at + 8, 16), nullptr, 16);
  CHECK((ignored & (1ULL << (SIGPIPE - 1))) == 0);
  ::unlink(out.c_str());
  ::unlink((dir + "/systemd-run").c_str());
  ::rmdir(dir.c_str());
}

TEST_SUITE_END();
