// The core names signals by their Linux numbers (src/signal_name.cpp) so
// that it needs no OS header. This file makes the build fail on a platform
// whose numbers differ, rather than let treeguard send the wrong signal.
#include "signal_name.hpp"

#include <csignal>

namespace treeguard {
static_assert(signals::hup.number == SIGHUP);
static_assert(signals::int_.number == SIGINT);
static_assert(signals::quit.number == SIGQUIT);
static_assert(signals::kill.number == SIGKILL);
static_assert(signals::usr1.number == SIGUSR1);
static_assert(signals::usr2.number == SIGUSR2);
static_assert(signals::pipe.number == SIGPIPE);
static_assert(signals::alrm.number == SIGALRM);
static_assert(signals::term.number == SIGTERM);
static_assert(signals::chld.number == SIGCHLD);
static_assert(signals::cont.number == SIGCONT);
static_assert(signals::stop.number == SIGSTOP);
static_assert(signals::tstp.number == SIGTSTP);
static_assert(signals::ttin.number == SIGTTIN);
static_assert(signals::ttou.number == SIGTTOU);
static_assert(signals::winch.number == SIGWINCH);
static_assert(SIGSYS == 31 && SIGSEGV == 11 && SIGBUS == 7 && SIGABRT == 6);
} // namespace treeguard
