// The run's own guardian: started before COMMAND, out of the controller's
// tree, it watches the controller (its pidfd, the command pipe) and, in a
// process-group run, walks the tree; when the controller dies without
// dismissing it, it takes the run down (lost_run.hpp). A cgroup run's
// guardian also guards the runs nested in its leaf (guardian_nested.hpp).
#include "port/guardian.hpp"

#include "linux/guardian_link.hpp"
#include "linux/guardian_nested.hpp"
#include "linux/lost_run.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "port/takedown.hpp"
#include "posix/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace treeguard {

namespace {

// The guardian's view of the run while the controller lives: in a process
// group run, every descendant of the controller it has seen (the same member
// walk the controller makes), because after the controller's death the
// orphans no longer hang below it.
class Watch {
public:
  Watch(const GuardianSpec& spec, pid_t controller) : m_spec(spec), m_controller(controller) {
    auto self = platform::read_proc_stat(::getpid());
    m_self = ProcessIdentity{::getpid(), self ? self->start_time : 0};
    if (spec.kind == BoundaryKind::process_group && self) {
      // COMMAND waits for this guardian's word: nothing of the run was
      // alive before it started.
      m_last_look = m_look_begun = self->start_time;
    }
  }

  // When to look first: not at once, since COMMAND is not running yet
  // when the guardian starts (it is held until the record names it).
  int first_interval() const {
    return m_spec.kind == BoundaryKind::process_group ? m_interval_ms : -1;
  }

  // Walk the controller's tree; returns when to look next (ms). Often while
  // the tree is young or changing; then at most every 100 ms while a walk is
  // cheap (a process that appears and escapes between two walks is the one
  // the guardian can miss, so the interval is that window), backing off for
  // big trees so that the walks never take more than 1/20 of a core.
  int scan(int controller_pidfd) {
    if (m_spec.kind != BoundaryKind::process_group) {
      return -1;  // a cgroup needs no membership: the leaf is the boundary
    }
    const auto started = std::chrono::steady_clock::now();
    const auto look = platform::start_time_now();
    bool grew = false;
    platform::walk_members(m_controller, CommandGroup{}, m_seen, {m_self}, &grew);
    // A walk misses a process moved to the controller while it runs (its
    // parent died between the two reads); the next walk finds it there. So
    // every process of the run alive when the walk before this one began
    // has been seen since: that is the last look (Claim::last_look). Only
    // if the controller outlived this walk: its orphans leave the tree when
    // it dies, and a walk after that finds none of them.
    if (still_running(controller_pidfd)) {
      m_last_look = std::exchange(m_look_begun, look);
    }
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    const int slowest = std::clamp(static_cast<int>(took.count()) * 20, k_window_ms, 2000);
    // Growing: look again soon, but not back to back (soonest_walk()).
    const int soonest =
        static_cast<int>(platform::soonest_walk(took, std::chrono::milliseconds(25)).count());
    m_interval_ms = grew ? soonest : std::min(m_interval_ms * 2, slowest);
    return m_interval_ms;
  }

  // The controller died without dismissing us: the run's record, if it
  // still names the boundary this guardian was started for.
  void act() {
    platform::take_down_lost_run(m_spec.state_dir, m_spec.run_id, m_seen, m_last_look, m_self,
                                 [this](const RunRecord& record) {
                                   return record.boundary.kind == m_spec.kind
                                          && (m_spec.kind != BoundaryKind::cgroup
                                              || record.boundary.address == m_spec.address);
                                 });
  }

  ProcessIdentity self() const { return m_self; }

private:
  static bool still_running(int pidfd) {
    struct pollfd exited {};
    exited.fd = pidfd;
    exited.events = POLLIN;
    return pidfd >= 0 && ::poll(&exited, 1, 0) == 0;
  }

  static constexpr int k_window_ms = 100;
  const GuardianSpec& m_spec;
  pid_t m_controller;
  ProcessIdentity m_self;
  Membership m_seen;
  // Process group: when the walk before the last began, and the last.
  std::optional<unsigned long long> m_last_look;
  unsigned long long m_look_begun = 0;
  int m_interval_ms = 25;
};

// The guardian's descriptors: exactly what it watches, on numbers that are
// not 0-2, and /dev/null on 0-2. Any of 0-2 may hold one of the sources
// (the caller closed its standard descriptors), so nothing is put on them
// before the sources are moved off; every step is checked.
struct GuardianFds {
  int controller_pidfd = -1;
  int command = -1;
  int ready = -1;
};

// Close every descriptor but `keep` (at most three, any numbers).
bool close_all_but(std::array<int, 3> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned int from = 0;
  for (int fd : keep) {
    if (fd < 0) {
      continue;
    }
    const auto until = static_cast<unsigned int>(fd);
    if (from < until && ::syscall(SYS_close_range, from, until - 1, 0U) != 0) {
      return false;
    }
    from = std::max(from, until + 1);
  }
  return ::syscall(SYS_close_range, from, ~0U, 0U) == 0;
}

// Move `fd` above 2 (it is the only copy: the old number is closed).
bool move_above_stdio(int& fd) {
  if (fd > 2) {
    return true;
  }
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) {
    return false;
  }
  ::close(fd);
  fd = moved;
  return true;
}

bool set_up_descriptors(GuardianFds& fds) {
  if (!close_all_but({fds.controller_pidfd, fds.command, fds.ready})) {
    return false;
  }
  for (int* fd : {&fds.controller_pidfd, &fds.command, &fds.ready}) {
    if (!move_above_stdio(*fd)) {
      return false;
    }
  }
  // 0-2 are free now: /dev/null lands on 0 and is copied to 1 and 2.
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd != 0) {
    return false;
  }
  return ::dup2(0, 1) == 1 && ::dup2(0, 2) == 2;
}

// Read the controller's word from the command pipe: dismissed (the guardian
// exits), gone (EOF: the controller died; the guardian acts) or none. Clears
// `fd` when the pipe can no longer be read, so that no failing read is
// retried for ever (the pidfd still tells the controller's death).
enum class Word { none, dismissed, gone };
Word read_command(int& fd) {
  char byte = 0;
  const ssize_t n = ::read(fd, &byte, 1);
  if (n == 1) {
    return byte == 'D' ? Word::dismissed : Word::none;
  }
  if (n == 0) {
    return Word::gone;
  }
  if (errno != EINTR && errno != EAGAIN) {
    fd = -1;
  }
  return Word::none;
}

// Poll the pidfd and the command pipe until the controller dismisses us
// (true) or dies (false); walk the tree between polls, and guard the runs
// nested in the leaf.
bool watch_controller(Watch& watch, platform::NestedRuns& nested, int controller_pidfd,
                      int command_fd) {
  int timeout_ms = watch.first_interval();
  std::vector<struct pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({controller_pidfd, POLLIN, 0});
    fds.push_back({command_fd, POLLIN, 0});
    nested.add_fds(fds);
    const int nested_ms = nested.wait_ms();
    const int wait_ms = timeout_ms < 0  ? nested_ms
                        : nested_ms < 0 ? timeout_ms
                                        : std::min(timeout_ms, nested_ms);
    const int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) {
      ::_exit(1);
    }
    if (fds[1].revents & POLLNVAL) {
      command_fd = -1;
    } else if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const Word word = read_command(command_fd);
      if (word == Word::dismissed) {
        return true;
      }
      if (word == Word::gone) {
        return false;  // the controller is gone
      }
    }
    if (fds[0].revents & POLLNVAL) {
      controller_pidfd = -1;
    } else if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      // The controller exited; a dismissal may still sit in the pipe.
      const int flags = command_fd >= 0 ? ::fcntl(command_fd, F_GETFL) : -1;
      return flags >= 0 && ::fcntl(command_fd, F_SETFL, flags | O_NONBLOCK) == 0
             && read_command(command_fd) == Word::dismissed;
    }
    if (controller_pidfd < 0 && command_fd < 0) {
      // Nothing tells the controller's death any more: a guardian that
      // cannot guard exits (never acting on a run it cannot judge).
      ::_exit(1);
    }
    nested.handle(fds, 2);
    timeout_ms = watch.scan(controller_pidfd);
  }
}

[[noreturn]] void guardian_main(const GuardianSpec& spec, pid_t controller, GuardianFds fds) {
  // Out of the controller's session: a terminal's signals are not ours.
  // Ignored before they are unblocked: one the terminal sent the
  // controller's group before setsid() is discarded, not acted on.
  ::setsid();
  // TERM too, and every signal a run's drain may send (its --signal may be
  // any, ALRM, USR1, a real-time one): the guardian is ended by its
  // controller (the command pipe, the pidfd), never by a signal meant for
  // the run. systemd stopping the scope or unit that holds the run TERMs
  // every process in it; an enclosing run drains every process of its tree,
  // a nested run's guardian included; a guardian that died of it could not
  // take the tree down when the controller is SIGKILLed next
  // (TimeoutStopSec), which is what it is there for. SIGKILL still ends it;
  // a fault (SEGV, BUS, FPE, ILL, TRAP, ABRT, SYS) keeps its default.
  // CHLD ignored: the helpers it forks (NestedRuns) are reaped by the kernel.
  for (int number = 1; number <= SIGRTMAX; ++number) {
    if (number != SIGKILL && number != SIGSTOP && number != SIGCONT && number != SIGSEGV
        && number != SIGBUS && number != SIGFPE && number != SIGILL && number != SIGTRAP
        && number != SIGABRT && number != SIGSYS) {
      ::signal(number, SIG_IGN);  // glibc's own (32, 33) refuse: as they were
    }
  }
  sigset_t all;
  sigemptyset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  // Keep only what we watch: the leaf's fds, the signalfd and the record
  // files are the controller's. Not even stderr: a guardian holding the
  // caller's pipe open would keep make, ninja or a CI log waiting for EOF
  // after treeguard has exited. What it does goes into the run's record
  // (notes), which status shows. A guardian that cannot set itself up
  // says nothing and exits: the controller reads EOF and starts nothing.
  if (!set_up_descriptors(fds)) {
    ::_exit(1);
  }
  const pid_t self = ::getpid();
  Watch watch(spec, controller);
  // Advertised before the run's COMMAND can start (it waits for our word):
  // a run nested in the leaf finds the directory, or starts a guardian of
  // its own.
  platform::NestedRuns nested(spec, watch.self());
  nested.advertise();
  if (::write(fds.ready, &self, sizeof self) != static_cast<ssize_t>(sizeof self)) {
    ::_exit(1);
  }
  ::close(fds.ready);

  // Like the controller, run ahead of the tree from the start: a fork bomb
  // at its pids.max would otherwise leave the guardian a sliver of CPU for
  // its walks while the controller lives (one walk of the bomb's tree then
  // takes seconds), and for the census, the authority write and the kill
  // once it acts. Bounded work only follows: walks at intervals that keep
  // them under 1/20 of a core, and the takedown's paused rounds.
  platform::take_precedence();
  if (!watch_controller(watch, nested, fds.controller_pidfd, fds.command)) {
    // The whole leaf first (the nested leaves are in it: cgroup.kill is
    // recursive), then the records of the runs that died with it.
    watch.act();
  }
  nested.settle_dead();
  nested.withdraw();
  ::_exit(0);
}

}  // namespace

Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec) {
  const pid_t controller = ::getpid();
  if (spec.kind == BoundaryKind::pid_namespace) {
    // The namespace dies with the controller (its init's death signal),
    // and the kernel kills it: nothing is left for a guardian to do.
    return std::unique_ptr<Guardian>();
  }
  if (controller == 1) {
    // PID 1 of a pid namespace: when it dies the kernel kills every process
    // in the namespace, tree included. A guardian would only be one more
    // child of ours that the process-group boundary waits for.
    return std::unique_ptr<Guardian>();
  }
  platform::UniqueFd controller_pidfd(static_cast<int>(::syscall(SYS_pidfd_open, controller, 0)));
  if (!controller_pidfd) {
    return fail(errno_error(errno, "pidfd_open (guardian)"));
  }
  int command[2];
  int ready[2];
  if (::pipe2(command, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe2 (guardian)"));
  }
  platform::UniqueFd command_read(command[0]);
  platform::UniqueFd command_write(command[1]);
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe2 (guardian)"));
  }
  platform::UniqueFd ready_read(ready[0]);
  platform::UniqueFd ready_write(ready[1]);

  // Fork twice so that the guardian is not the controller's child: it is
  // reparented away, never a member, never reaped by the run, never waited
  // for. A controller that is a subreaper already (a nested run guarding
  // itself once the enclosing guardian is gone, DESIGN.md [nested]) is not
  // one while it forks, or the guardian would be reparented to it; what
  // COMMAND's tree orphans meanwhile goes to the next subreaper up, in the
  // leaf all the same.
  int subreaper = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper, 0, 0, 0) == 0 && subreaper != 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
  }
  struct SubreaperAgain {
    int was;
    ~SubreaperAgain() {
      if (was != 0) {
        ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
      }
    }
  } again{subreaper};
  pid_t middle = ::fork();
  if (middle < 0) {
    return fail(errno_error(errno, "fork (guardian)"));
  }
  if (middle == 0) {
    command_write.reset();
    ready_read.reset();
    pid_t guardian = ::fork();
    if (guardian == 0) {
      guardian_main(spec, controller,
                    GuardianFds{controller_pidfd.get(), command_read.get(), ready_write.get()});
    }
    // The guardian itself says who it is, once its descriptors are set up:
    // the pipe's EOF without a word (its last writer gone) is a guardian
    // that could not set itself up, and the run does not start.
    ::_exit(guardian < 0 ? 1 : 0);
  }
  command_read.reset();
  ready_write.reset();
  int status = 0;
  while (::waitpid(middle, &status, 0) < 0 && errno == EINTR) {
  }
  pid_t guardian = 0;
  ssize_t n;
  do {
    n = ::read(ready_read.get(), &guardian, sizeof guardian);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof guardian) || guardian <= 0) {
    return fail(plain_error("the guardian did not start"));
  }
  auto stat = platform::read_proc_stat(guardian);
  ProcessIdentity identity{guardian, stat ? stat->start_time : 0};
  // The middle has been reaped, so the guardian has been handed on: to the
  // process the run's orphans will go to once the controller is gone.
  std::optional<ProcessIdentity> reaper;
  if (auto parent = stat ? platform::read_proc_stat(stat->ppid) : std::nullopt; parent) {
    reaper = ProcessIdentity{parent->pid, parent->start_time};
  }
  return std::unique_ptr<Guardian>(
      new platform::GuardianLink(identity, reaper, std::move(command_write)));
}

}  // namespace treeguard
