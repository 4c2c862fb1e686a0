// Windows has no signals. The core's signal names still matter there: the
// user names the drain's graceful signal (--signal), console events arrive
// as INT (Ctrl-C), TERM (Ctrl-Break) and HUP (console closed), and a run
// stopped by one exits 128+N. N is the number POSIX shells, MSYS2 and
// Cygwin give it (INT 2, TERM 15), so scripts read the same exit codes as on
// Linux. These numbers are never passed to a system call.
#include "signal_name.hpp"

#include <array>
#include <string>

namespace treeguard {

namespace {

constexpr std::array<SignalId, 31> k_order{
    SignalId::hup,    SignalId::int_, SignalId::quit,  SignalId::ill,  SignalId::trap,
    SignalId::abrt,   SignalId::bus,  SignalId::fpe,   SignalId::kill, SignalId::usr1,
    SignalId::segv,   SignalId::usr2, SignalId::pipe,  SignalId::alrm, SignalId::term,
    SignalId::stkflt, SignalId::chld, SignalId::cont,  SignalId::stop, SignalId::tstp,
    SignalId::ttin,   SignalId::ttou, SignalId::urg,   SignalId::xcpu, SignalId::xfsz,
    SignalId::vtalrm, SignalId::prof, SignalId::winch, SignalId::io,   SignalId::pwr,
    SignalId::sys,
};

}  // namespace

int signal_number(Signal signal) {
  if (signal.id == SignalId::numbered) {
    return signal.number;
  }
  for (std::size_t i = 0; i < k_order.size(); ++i) {
    if (k_order[i] == signal.id) {
      return static_cast<int>(i) + 1;
    }
  }
  return 0;
}

std::optional<Signal> signal_from_number(int number) {
  if (number < 1 || number > static_cast<int>(k_order.size())) {
    return std::nullopt;
  }
  return Signal{k_order[static_cast<std::size_t>(number) - 1]};
}

// No real-time signals on Windows.
std::optional<Signal> realtime_signal(std::string_view) {
  return std::nullopt;
}

int highest_signal_number() {
  return static_cast<int>(k_order.size());
}

std::string unnamed_signal_name(int number) {
  return std::to_string(number);
}

}  // namespace treeguard
