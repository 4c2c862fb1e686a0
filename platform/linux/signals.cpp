#include "linux/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>

namespace treeguard::platform {

namespace {
sigset_t g_original_mask;
sigset_t g_ignored_at_start;
sigset_t g_default_in_command;  // default_in_command()
bool g_default_in_command_set = false;
bool g_dispositions_taken = false;
bool g_report_child_exits = true;
int g_signal_fd = -1;

// Every signal whose disposition treeguard reads, sets or hands on.
constexpr int k_known[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH,
                           SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU, SIGALRM, SIGPIPE, SIGCHLD};

// The deadline (ALRM) and the way to stop treeguard (TERM) are handled
// even when ignored at start, as timeout(1) handles them.
bool handled_when_ignored(int number) {
  return number == SIGALRM || number == SIGTERM;
}

sigset_t handled_signals(bool with_child_exits) {
  sigset_t handled;
  sigemptyset(&handled);
  for (int number : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGTSTP,
                     SIGTTIN, SIGTTOU, SIGALRM}) {
    if (!ignored_at_start(number) || handled_when_ignored(number)) {
      sigaddset(&handled, number);
    }
  }
  if (with_child_exits) {
    sigaddset(&handled, SIGCHLD);
  }
  return handled;
}

void take_dispositions() {
  sigemptyset(&g_ignored_at_start);
  for (int number : k_known) {
    struct sigaction inherited {};
    if (::sigaction(number, nullptr, &inherited) == 0 && inherited.sa_handler == SIG_IGN) {
      sigaddset(&g_ignored_at_start, number);
    }
  }
  g_dispositions_taken = true;
}
}  // namespace

void block_signals() {
  if (g_signal_fd >= 0) {
    return;
  }
  if (!g_dispositions_taken) {
    take_dispositions();
  }
  // An inherited ignore of SIGCHLD makes the kernel reap treeguard's
  // children itself: no exit status, no wait would ever succeed.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(SIGCHLD, &default_action, nullptr);
  sigset_t handled = handled_signals(true);
  sigprocmask(SIG_BLOCK, &handled, &g_original_mask);
  g_signal_fd = ::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
}

bool ignored_at_start(int number) {
  if (!g_dispositions_taken) {
    take_dispositions();
  }
  return sigismember(&g_ignored_at_start, number) == 1;
}

void restore_dispositions() {
  for (int number : k_known) {
    struct sigaction action {};
    action.sa_handler = sigismember(&g_ignored_at_start, number) == 1 ? SIG_IGN : SIG_DFL;
    sigemptyset(&action.sa_mask);
    ::sigaction(number, &action, nullptr);
  }
  if (!g_default_in_command_set) {
    return;
  }
  for (int number = 1; number < NSIG; ++number) {
    if (sigismember(&g_default_in_command, number) == 1) {
      struct sigaction action {};
      action.sa_handler = SIG_DFL;
      sigemptyset(&action.sa_mask);
      ::sigaction(number, &action, nullptr);
    }
  }
}

void default_in_command(int number) {
  if (!g_default_in_command_set) {
    sigemptyset(&g_default_in_command);
    g_default_in_command_set = true;
  }
  sigaddset(&g_default_in_command, number);
}

void report_child_exits(bool report) {
  if (g_signal_fd < 0) {
    return;
  }
  // SIGCHLD stays blocked either way: left out of the signalfd's mask, it
  // stays pending and no longer makes the fd readable.
  g_report_child_exits = report;
  sigset_t handled = handled_signals(report);
  ::signalfd(g_signal_fd, &handled, 0);
}

void forget_signal_state() {
  if (g_signal_fd >= 0) {
    ::close(g_signal_fd);
  }
  g_signal_fd = -1;
  g_dispositions_taken = false;
  g_report_child_exits = true;
  g_default_in_command_set = false;
  sigemptyset(&g_ignored_at_start);
  sigemptyset(&g_original_mask);
}

const sigset_t& original_signal_mask() {
  return g_original_mask;
}

static_assert(std::size(k_known) == k_known_signal_count);

OwnSignalState hand_back_signal_state() {
  OwnSignalState own{};
  for (std::size_t i = 0; i < k_known_signal_count; ++i) {
    ::sigaction(k_known[i], nullptr, &own.actions[i]);
  }
  restore_dispositions();
  ::sigprocmask(SIG_SETMASK, &g_original_mask, &own.mask);
  return own;
}

void resume_signal_state(const OwnSignalState& own) {
  ::sigprocmask(SIG_SETMASK, &own.mask, nullptr);
  for (std::size_t i = 0; i < k_known_signal_count; ++i) {
    ::sigaction(k_known[i], &own.actions[i], nullptr);
  }
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
