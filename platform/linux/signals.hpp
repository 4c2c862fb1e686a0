// treeguard's signals are blocked from the start and read from a signalfd
// inside ppoll (the shape of ninja's and tini's loops): no asynchronous
// handlers, no SIGCHLD races, EINTR handled in one place.
#pragma once

#include "posix/unique_fd.hpp"

#include <csignal>
#include <optional>

namespace treeguard::platform {

struct ReceivedSignal {
  int number = 0;
  int code = 0;  // si_code: SI_USER, SI_KERNEL (the terminal), ...
  pid_t sender = 0;
};

// Block the signals treeguard handles and open the signalfd. Call once,
// first thing in main, before any child exists. Idempotent.
void block_signals();

// The mask treeguard started with: children get it back before exec.
const sigset_t& original_signal_mask();

// Whether SIGCHLD makes the signalfd readable (it does from the start). It
// stays blocked either way; the event loop reaps without it when it knows
// when to look.
void report_child_exits(bool report);

// The signalfd (non-blocking) that block_signals() opened.
int signal_fd();

// Read one pending signal, if any.
std::optional<ReceivedSignal> read_signal();

}  // namespace treeguard::platform
