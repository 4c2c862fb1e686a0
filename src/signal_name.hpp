// Signals as the core sees them: a number in the Linux numbering, plus the
// names users type. The platform checks at compile time that its own
// numbers agree (platform/posix/signal_table_check.cpp), so the core needs
// no OS header; on Windows the job-object boundary maps the few that matter.
#pragma once

#include "result.hpp"

#include <string>
#include <string_view>

namespace treeguard {

struct Signal {
  int number = 0;

  friend bool operator==(Signal a, Signal b) { return a.number == b.number; }
  friend bool operator!=(Signal a, Signal b) { return a.number != b.number; }
};

namespace signals {
inline constexpr Signal hup{1};
inline constexpr Signal int_{2};
inline constexpr Signal quit{3};
inline constexpr Signal kill{9};
inline constexpr Signal usr1{10};
inline constexpr Signal usr2{12};
inline constexpr Signal pipe{13};
inline constexpr Signal alrm{14};
inline constexpr Signal term{15};
inline constexpr Signal chld{17};
inline constexpr Signal cont{18};
inline constexpr Signal stop{19};
inline constexpr Signal tstp{20};
inline constexpr Signal ttin{21};
inline constexpr Signal ttou{22};
inline constexpr Signal winch{28};
} // namespace signals

// Parse "TERM", "SIGTERM", "term", "sigterm" or "15". Numbers must name a
// known signal (1..31); 0 and real-time signals are refused.
Result<Signal> parse_signal(std::string_view text);

// "TERM" for 15; "SIG42"-style text for numbers without a name.
std::string signal_name(Signal signal);

// Signals that, sent to treeguard, end the run (after being forwarded):
// HUP, INT, QUIT, TERM. The others are forwarded and the run goes on.
bool is_stop_signal(Signal signal);

// Signals treeguard forwards to COMMAND (contract section 4).
bool is_forwarded_signal(Signal signal);

} // namespace treeguard
