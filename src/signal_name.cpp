#include "signal_name.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace treeguard {

namespace {

struct NamedSignal {
  std::string_view name;
  int number;
};

// Linux numbering (x86, arm, riscv): the platform asserts it matches.
constexpr std::array<NamedSignal, 31> k_signal_names{{
  {"HUP", 1},   {"INT", 2},     {"QUIT", 3},  {"ILL", 4},    {"TRAP", 5},
  {"ABRT", 6},  {"BUS", 7},     {"FPE", 8},   {"KILL", 9},   {"USR1", 10},
  {"SEGV", 11}, {"USR2", 12},   {"PIPE", 13}, {"ALRM", 14},  {"TERM", 15},
  {"STKFLT", 16}, {"CHLD", 17}, {"CONT", 18}, {"STOP", 19},  {"TSTP", 20},
  {"TTIN", 21}, {"TTOU", 22},   {"URG", 23},  {"XCPU", 24},  {"XFSZ", 25},
  {"VTALRM", 26}, {"PROF", 27}, {"WINCH", 28}, {"IO", 29},   {"PWR", 30},
  {"SYS", 31},
}};

std::string upper(std::string_view text)
{
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(std::toupper(c));
  });
  return out;
}

} // namespace

Result<Signal> parse_signal(std::string_view text)
{
  if (text.empty()) {
    return fail(plain_error("empty signal name"));
  }
  if (std::all_of(text.begin(), text.end(),
                  [](unsigned char c) { return std::isdigit(c); })) {
    if (text.size() > 3) {
      return fail(plain_error(fmt::format("unknown signal '{}'", text)));
    }
    int number = std::stoi(std::string(text));
    if (number < 1 || number > static_cast<int>(k_signal_names.size())) {
      return fail(plain_error(fmt::format("unknown signal '{}'", text)));
    }
    return Signal{number};
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
    if (entry.name == name) {
      return Signal{entry.number};
    }
  }
  return fail(plain_error(fmt::format("unknown signal '{}'", text)));
}

std::string signal_name(Signal signal)
{
  for (const auto& entry : k_signal_names) {
    if (entry.number == signal.number) {
      return std::string(entry.name);
    }
  }
  return fmt::format("SIG{}", signal.number);
}

bool is_stop_signal(Signal signal)
{
  return signal == signals::hup || signal == signals::int_
         || signal == signals::quit || signal == signals::term;
}

bool is_forwarded_signal(Signal signal)
{
  return is_stop_signal(signal) || signal == signals::usr1
         || signal == signals::usr2 || signal == signals::winch
         || signal == signals::cont || signal == signals::tstp
         || signal == signals::ttin || signal == signals::ttou;
}

} // namespace treeguard
