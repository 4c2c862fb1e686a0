// The POSIX numbers of the signals the core names (src/signal_name.hpp),
// taken from this system's <csignal>, so they are right on every POSIX
// platform rather than assumed to be Linux's.
#include "signal_name.hpp"

#include <array>
#include <csignal>

namespace treeguard {

namespace {

struct Numbered {
  SignalId id;
  int number;
};

constexpr std::array k_numbers{
    Numbered{SignalId::hup, SIGHUP},       Numbered{SignalId::int_, SIGINT},
    Numbered{SignalId::quit, SIGQUIT},     Numbered{SignalId::ill, SIGILL},
    Numbered{SignalId::trap, SIGTRAP},     Numbered{SignalId::abrt, SIGABRT},
    Numbered{SignalId::bus, SIGBUS},       Numbered{SignalId::fpe, SIGFPE},
    Numbered{SignalId::kill, SIGKILL},     Numbered{SignalId::usr1, SIGUSR1},
    Numbered{SignalId::segv, SIGSEGV},     Numbered{SignalId::usr2, SIGUSR2},
    Numbered{SignalId::pipe, SIGPIPE},     Numbered{SignalId::alrm, SIGALRM},
    Numbered{SignalId::term, SIGTERM},
#ifdef SIGSTKFLT
    Numbered{SignalId::stkflt, SIGSTKFLT},
#endif
    Numbered{SignalId::chld, SIGCHLD},     Numbered{SignalId::cont, SIGCONT},
    Numbered{SignalId::stop, SIGSTOP},     Numbered{SignalId::tstp, SIGTSTP},
    Numbered{SignalId::ttin, SIGTTIN},     Numbered{SignalId::ttou, SIGTTOU},
    Numbered{SignalId::urg, SIGURG},       Numbered{SignalId::xcpu, SIGXCPU},
    Numbered{SignalId::xfsz, SIGXFSZ},     Numbered{SignalId::vtalrm, SIGVTALRM},
    Numbered{SignalId::prof, SIGPROF},     Numbered{SignalId::winch, SIGWINCH},
    Numbered{SignalId::io, SIGIO},
#ifdef SIGPWR
    Numbered{SignalId::pwr, SIGPWR},
#endif
    Numbered{SignalId::sys, SIGSYS},
};

}  // namespace

int signal_number(Signal signal) {
  for (const auto& entry : k_numbers) {
    if (entry.id == signal.id) {
      return entry.number;
    }
  }
  return 0;
}

std::optional<Signal> signal_from_number(int number) {
  for (const auto& entry : k_numbers) {
    if (entry.number == number) {
      return Signal{entry.id};
    }
  }
  return std::nullopt;
}

}  // namespace treeguard
