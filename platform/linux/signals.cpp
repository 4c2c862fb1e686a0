#include "linux/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>

namespace treeguard::platform {

namespace {
sigset_t g_original_mask;
int g_signal_fd = -1;

sigset_t handled_signals(bool with_child_exits) {
  sigset_t handled;
  sigemptyset(&handled);
  for (int number : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP,
                     SIGTTIN, SIGTTOU}) {
    sigaddset(&handled, number);
  }
  if (with_child_exits) {
    sigaddset(&handled, SIGCHLD);
  }
  return handled;
}
}  // namespace

void block_signals() {
  if (g_signal_fd >= 0) {
    return;
  }
  sigset_t handled = handled_signals(true);
  sigprocmask(SIG_BLOCK, &handled, &g_original_mask);
  g_signal_fd = ::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
}

void report_child_exits(bool report) {
  if (g_signal_fd < 0) {
    return;
  }
  // SIGCHLD stays blocked either way: left out of the signalfd's mask, it
  // stays pending and no longer makes the fd readable.
  sigset_t handled = handled_signals(report);
  ::signalfd(g_signal_fd, &handled, 0);
}

const sigset_t& original_signal_mask() {
  return g_original_mask;
}

int signal_fd() {
  return g_signal_fd;
}

std::optional<ReceivedSignal> read_signal() {
  struct signalfd_siginfo info;
  for (;;) {
    ssize_t n = ::read(g_signal_fd, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      ReceivedSignal out;
      out.number = static_cast<int>(info.ssi_signo);
      out.code = info.ssi_code;
      out.sender = static_cast<pid_t>(info.ssi_pid);
      return out;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    return std::nullopt;
  }
}

}  // namespace treeguard::platform
