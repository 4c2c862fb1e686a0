// Signals by identity, and what a platform gives for them: its numbers
// (what kill(2) takes, the N of a 128+N exit code, what `--signal 15`
// means), defined once per platform in signal_numbers.cpp
// (platform/posix/ from <csignal>, platform/windows/ with the shells'
// conventional numbers). Includes nothing of treeguard's own.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace treeguard {

// Every signal treeguard can name, in no particular order.
enum class SignalId : unsigned char {
  hup,
  int_,
  quit,
  ill,
  trap,
  abrt,
  bus,
  fpe,
  kill,
  usr1,
  segv,
  usr2,
  pipe,
  alrm,
  term,
  stkflt,
  chld,
  cont,
  stop,
  tstp,
  ttin,
  ttou,
  urg,
  xcpu,
  xfsz,
  vtalrm,
  prof,
  winch,
  io,
  pwr,
  sys,
  // A signal the core has no name for, by the platform's number: 0 (no
  // signal, a probe), a real-time signal. Only timeout's grammar makes one.
  numbered,
};

struct Signal {
  SignalId id = SignalId::term;
  int number = 0;  // the platform's number, for SignalId::numbered only

  friend bool operator==(Signal a, Signal b) { return a.id == b.id && a.number == b.number; }
  friend bool operator!=(Signal a, Signal b) { return !(a == b); }
};

namespace signals {
inline constexpr Signal hup{SignalId::hup};
inline constexpr Signal int_{SignalId::int_};
inline constexpr Signal quit{SignalId::quit};
inline constexpr Signal kill{SignalId::kill};
inline constexpr Signal usr1{SignalId::usr1};
inline constexpr Signal usr2{SignalId::usr2};
inline constexpr Signal pipe{SignalId::pipe};
inline constexpr Signal alrm{SignalId::alrm};
inline constexpr Signal term{SignalId::term};
inline constexpr Signal chld{SignalId::chld};
inline constexpr Signal cont{SignalId::cont};
inline constexpr Signal stop{SignalId::stop};
inline constexpr Signal tstp{SignalId::tstp};
inline constexpr Signal ttin{SignalId::ttin};
inline constexpr Signal ttou{SignalId::ttou};
inline constexpr Signal winch{SignalId::winch};
}  // namespace signals

// This platform's number for `signal`; 0 when the platform has no such
// signal (SIGSTKFLT off Linux). Defined per platform.
int signal_number(Signal signal);

// The signal this platform numbers `number`, if treeguard names it.
// Defined per platform.
std::optional<Signal> signal_from_number(int number);

// The platform's real-time signal named "RTMIN", "RTMIN+N", "RTMAX" or
// "RTMAX-N" (upper case, no SIG), as a numbered signal; nullopt when the
// name is not one or the platform has none. Defined per platform.
std::optional<Signal> realtime_signal(std::string_view name);

// The highest signal number of this platform (64 on Linux). Defined per
// platform.
int highest_signal_number();

// "RTMIN+1" for the platform's real-time signal `number`, the number as
// text for any other number without a name. Defined per platform.
std::string unnamed_signal_name(int number);

}  // namespace treeguard
