#include "signal_name.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace treeguard {

namespace {

struct NamedSignal {
  std::string_view name;
  Signal signal;
};

// Names only: the numbers are the platform's (signal_number()).
constexpr std::array<NamedSignal, 31> k_signal_names{{
    {"HUP", {SignalId::hup}},       {"INT", {SignalId::int_}},      {"QUIT", {SignalId::quit}},
    {"ILL", {SignalId::ill}},       {"TRAP", {SignalId::trap}},     {"ABRT", {SignalId::abrt}},
    {"BUS", {SignalId::bus}},       {"FPE", {SignalId::fpe}},       {"KILL", {SignalId::kill}},
    {"USR1", {SignalId::usr1}},     {"SEGV", {SignalId::segv}},     {"USR2", {SignalId::usr2}},
    {"PIPE", {SignalId::pipe}},     {"ALRM", {SignalId::alrm}},     {"TERM", {SignalId::term}},
    {"STKFLT", {SignalId::stkflt}}, {"CHLD", {SignalId::chld}},     {"CONT", {SignalId::cont}},
    {"STOP", {SignalId::stop}},     {"TSTP", {SignalId::tstp}},     {"TTIN", {SignalId::ttin}},
    {"TTOU", {SignalId::ttou}},     {"URG", {SignalId::urg}},       {"XCPU", {SignalId::xcpu}},
    {"XFSZ", {SignalId::xfsz}},     {"VTALRM", {SignalId::vtalrm}}, {"PROF", {SignalId::prof}},
    {"WINCH", {SignalId::winch}},   {"IO", {SignalId::io}},         {"PWR", {SignalId::pwr}},
    {"SYS", {SignalId::sys}},
}};

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace

Result<Signal> parse_signal(std::string_view text) {
  if (text.empty()) {
    return fail(plain_error("empty signal name"));
  }
  if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); })) {
    if (text.size() > 3) {
      return fail(plain_error(fmt::format("unknown signal '{}'", text)));
    }
    auto signal = signal_from_number(std::stoi(std::string(text)));
    if (!signal) {
      return fail(plain_error(fmt::format("unknown signal '{}'", text)));
    }
    return *signal;
  }
  std::string name = upper(text);
  if (name.rfind("SIG", 0) == 0) {
    name.erase(0, 3);
  }
  if (name == "IOT") {
    name = "ABRT";
  } else if (name == "POLL") {
    name = "IO";
  } else if (name == "CLD") {
    name = "CHLD";
  }
  for (const auto& entry : k_signal_names) {
    if (entry.name == name && signal_number(entry.signal) > 0) {
      return entry.signal;
    }
  }
  return fail(plain_error(fmt::format("unknown signal '{}'", text)));
}

std::string signal_name(Signal signal) {
  if (signal.id == SignalId::numbered) {
    return unnamed_signal_name(signal.number);
  }
  for (const auto& entry : k_signal_names) {
    if (entry.signal == signal) {
      return std::string(entry.name);
    }
  }
  return "SIG?";
}

std::optional<Signal> signal_named(std::string_view name) {
  for (const auto& entry : k_signal_names) {
    if (entry.name == name) {
      return signal_number(entry.signal) > 0 ? std::optional<Signal>(entry.signal) : std::nullopt;
    }
  }
  if (auto realtime = realtime_signal(name)) {
    return realtime;
  }
  if (name.empty() || name.size() > 3
      || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  const int number = std::stoi(std::string(name));
  if (number > highest_signal_number()) {
    return std::nullopt;
  }
  if (auto known = signal_from_number(number)) {
    return known;
  }
  return Signal{SignalId::numbered, number};
}

bool stops_whom_it_reaches(Signal signal) {
  return signal == signals::tstp || signal == signals::ttin || signal == signals::ttou;
}

std::string signal_number_name(int number) {
  if (auto signal = signal_from_number(number)) {
    return signal_name(*signal);
  }
  return fmt::format("SIG{}", number);
}

bool is_stop_signal(Signal signal) {
  return signal == signals::hup || signal == signals::int_ || signal == signals::quit
         || signal == signals::term;
}

bool is_forwarded_signal(Signal signal) {
  return is_stop_signal(signal) || signal == signals::usr1 || signal == signals::usr2
         || signal == signals::winch || signal == signals::cont || signal == signals::tstp
         || signal == signals::ttin || signal == signals::ttou;
}

}  // namespace treeguard
