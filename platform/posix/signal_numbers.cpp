// The POSIX numbers of the signals the core names (src/signal_name.hpp),
// taken from this system's <csignal>, so they are right on every POSIX
// platform rather than assumed to be Linux's.
#include "signal_name.hpp"

#include <algorithm>
#include <array>
#include <csignal>
#include <string>

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
  if (signal.id == SignalId::numbered) {
    return signal.number;
  }
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

namespace {

// SIGRTMIN and SIGRTMAX are calls on glibc, not constants; a platform
// without real-time signals gives none.
int realtime_min() {
#ifdef SIGRTMIN
  return SIGRTMIN;
#else
  return 0;
#endif
}

int realtime_max() {
#ifdef SIGRTMAX
  return SIGRTMAX;
#else
  return 0;
#endif
}

}  // namespace

std::optional<Signal> realtime_signal(std::string_view name) {
  const int low = realtime_min();
  const int high = realtime_max();
  if (low <= 0 || high < low) {
    return std::nullopt;
  }
  const bool from_min = name.rfind("RTMIN", 0) == 0;
  if (!from_min && name.rfind("RTMAX", 0) != 0) {
    return std::nullopt;
  }
  std::string_view rest = name.substr(5);
  int offset = 0;
  if (!rest.empty()) {
    if (rest.front() != (from_min ? '+' : '-') || rest.size() < 2 || rest.size() > 4) {
      return std::nullopt;
    }
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') {
        return std::nullopt;
      }
      offset = offset * 10 + (c - '0');
    }
  }
  const int number = from_min ? low + offset : high - offset;
  if (number < low || number > high) {
    return std::nullopt;
  }
  return Signal{SignalId::numbered, number};
}

int highest_signal_number() {
  return std::max(realtime_max(), static_cast<int>(SIGSYS));
}

std::string unnamed_signal_name(int number) {
  const int low = realtime_min();
  const int high = realtime_max();
  if (low > 0 && number >= low && number <= high) {
    // Names as kill -l and timeout -v give them: the lower half from
    // RTMIN, the upper from RTMAX.
    if (number <= low + (high - low) / 2) {
      return number == low ? "RTMIN" : "RTMIN+" + std::to_string(number - low);
    }
    return number == high ? "RTMAX" : "RTMAX-" + std::to_string(high - number);
  }
  return std::to_string(number);
}

}  // namespace treeguard
