// treeguard's signals are blocked from the start and read from a signalfd
// inside ppoll (the shape of ninja's and tini's loops): no asynchronous
// handlers, no SIGCHLD races, EINTR handled in one place.
#pragma once

#include "posix/unique_fd.hpp"

#include <array>
#include <csignal>
#include <cstddef>
#include <optional>

namespace treeguard::platform {

struct ReceivedSignal {
  int number = 0;
  int code = 0;  // si_code: SI_USER, SI_KERNEL (the terminal), ...
  pid_t sender = 0;
};

// Block the signals treeguard handles and open the signalfd. Call once,
// first thing in main, before any child exists. Idempotent. First it takes
// the dispositions treeguard inherited (one place: ignored_at_start and
// restore_dispositions answer from it) and sets SIGCHLD to its default,
// which treeguard needs to wait for its children. A signal that was
// ignored at start stays ignored, neither handled nor passed on (HUP
// under nohup, INT and QUIT in a background job), but for TERM and ALRM.
void block_signals();

// Whether signal `number` was ignored (SIG_IGN) when treeguard started.
bool ignored_at_start(int number);

// Forget what block_signals() and the dispositions took, for a forked child
// that starts over as a new treeguard process would. A seam for the unit
// tests (each case's child inherits whatever an earlier case took); no
// production path calls it.
void forget_signal_state();

// In a child, before exec (async-signal-safe): the dispositions treeguard
// inherited, for every signal it reads or sets (SIGPIPE and SIGCHLD
// included), so that COMMAND starts with what the caller gave.
void restore_dispositions();

// COMMAND starts with signal `number` at its default even if treeguard
// inherited it ignored (restore_dispositions): timeout(1)'s deadline signal
// and ALRM, which it handles itself and so does not pass an ignore of on.
void default_in_command(int number);

// The mask treeguard started with: children get it back before exec.
const sigset_t& original_signal_mask();

// Treeguard's own signal state (its mask, the dispositions it set), kept
// across hand_back_signal_state() for a failed exec.
inline constexpr std::size_t k_known_signal_count = 14;
struct OwnSignalState {
  sigset_t mask;
  std::array<struct sigaction, k_known_signal_count> actions;
};

// Before treeguard execs itself again (systemd-run into a scope): the
// dispositions and the mask it inherited, as a child gets them before
// exec, so that the treeguard started there inherits what this one did and
// not the signals this one blocked (which COMMAND would start with, TERM
// never arriving). Returns this process's own state, for
// resume_signal_state() if the exec fails.
OwnSignalState hand_back_signal_state();
void resume_signal_state(const OwnSignalState& own);

// Whether SIGCHLD makes the signalfd readable (it does from the start). It
// stays blocked either way; the event loop reaps without it when it knows
// when to look.
void report_child_exits(bool report);

// The signalfd (non-blocking) that block_signals() opened.
int signal_fd();

// Read one pending signal, if any.
std::optional<ReceivedSignal> read_signal();

}  // namespace treeguard::platform
