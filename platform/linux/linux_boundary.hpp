// What both Linux boundaries share: spawning COMMAND (clone3, contained
// before exec), reaping (treeguard is a child subreaper), and the event
// loop over the signalfd plus one boundary-specific file descriptor.
#pragma once

#include "duration.hpp"
#include "identity.hpp"
#include "port/boundary.hpp"
#include "posix/unique_fd.hpp"

#include <poll.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace treeguard::platform {

// The places execvp would try for `file`, in order ($PATH, else the
// default path): computed before a fork, so that the child only calls
// async-signal-safe functions.
std::vector<std::string> exec_candidates(const std::string& file);

// What the child of spawn's clone gets: COMMAND's argv, environment and exec
// candidates, computed before the clone, and the descriptors of the spawn
// protocol (see child_exec).
struct ChildLaunch {
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const std::vector<std::string>* candidates = nullptr;
  int error_pipe = -1;  // "A" once running; then exec's errno if exec fails
  int procs_fd = -1;    // cgroup.procs to join before exec, or -1
  bool new_group = false;
  int hold_read = -1;  // the go-ahead (SpawnSpec::before_exec), or -1
  int hold_write = -1;
};

// The argument of clone3 (linux/sched.h's struct clone_args, version 2).
struct CloneArgs {
  std::uint64_t flags;
  std::uint64_t pidfd;
  std::uint64_t child_tid;
  std::uint64_t parent_tid;
  std::uint64_t exit_signal;
  std::uint64_t stack;
  std::uint64_t stack_size;
  std::uint64_t tls;
  std::uint64_t set_tid;
  std::uint64_t set_tid_size;
  std::uint64_t cgroup;
};

// Become COMMAND: runs in a fresh child, async-signal-safe calls only.
// Writes "A", joins procs_fd, waits for the hold, restores the signal
// mask, execs; on failure writes exec's errno and exits 127.
[[noreturn]] void child_exec(const ChildLaunch& launch);

// A child that failed before COMMAND could be started writes one of these
// letters, then the errno, instead of "A" (see namespace_setup_step).
// Their names, for the error spawn() returns; empty for any other byte.
std::string_view child_setup_step(char letter);

// COMMAND's argv, environment and names, laid out before the clone.
struct CommandImage;

class LinuxBoundary : public Boundary {
public:
  Result<long> spawn(const SpawnSpec& spec) override;
  Event wait(std::optional<TimePoint> deadline) override;
  std::optional<ExitStatus> child_status() const override { return m_status; }
  Result<void> forward(Signal signal) override;
  // `signal` to every member, then CONT so that stopped members act on it.
  std::vector<Delivery> stop_gracefully(Signal signal) override;

  // Send `signal` to every member, then CONT to every member that was
  // stopped, so that it acts on the signal; but not to the members of a run
  // nested in this one whose controller lives: it gets `signal`, and stops
  // its own tree (graceful_stop.hpp).
  virtual Result<void> signal_all(Signal signal) = 0;

  std::vector<MemberInfo> members() const override { return m_members.all(); }

  void wake_once_on(int fd, std::function<void()> then) override {
    m_also_fd = fd;
    m_also_then = std::move(then);
  }

protected:
  // spawn's steps. The child, born contained: clone3 into the leaf
  // (CLONE_INTO_CGROUP) and the boundary's namespaces, or a fork whose
  // child joins cgroup.procs itself before exec where clone3 cannot
  // (use_clone3 is turned off then). pid 0: this is the child.
  struct Cloned {
    pid_t pid = -1;
    int pidfd = -1;
    int procs_fd = -1;
  };
  // The clone may share treeguard's memory until COMMAND's exec.
  bool shares_memory_until_exec(const ChildLaunch& launch) const;
  // The entry of a child that shares it: run_child, on a stack of its own.
  struct SharedChild;
  [[noreturn]] static void run_shared_child(void* child);
  // `launch` is complete here: a child that shares treeguard's memory
  // until its exec (see shares_memory_until_exec) runs run_child(launch)
  // on a stack of its own, and only the parent returns.
  Result<Cloned> clone_contained(bool& use_clone3, const ChildLaunch& launch);
  // One attempt: the child cloned, held for SpawnSpec::before_exec if
  // asked, its exec report read. nullopt: it was killed before it ran
  // anything and the fork is worth a try (use_clone3 turned off).
  Result<std::optional<pid_t>> spawn_once(const SpawnSpec& spec, const CommandImage& image,
                                          bool& use_clone3);
  // COMMAND (pid) is the run's child and a member, named as it will exec.
  void adopt_child(pid_t pid, bool new_group, const CommandImage& image);
  // The child will not run COMMAND: reaped, and no longer the run's child.
  void drop_child(pid_t pid);

  // Namespaces the clone creates (CLONE_NEWUSER...): 0 for COMMAND itself.
  // Non-zero needs clone3 (no fork fallback).
  virtual std::uint64_t spawn_namespaces() const { return 0; }
  // The clone's child: COMMAND itself (child_exec), or an init that
  // starts it (the pid-namespace boundary).
  [[noreturn]] virtual void run_child(const ChildLaunch& launch) { child_exec(launch); }
  // The cloned child is COMMAND (a member), not a helper of treeguard's.
  virtual bool child_is_command() const { return true; }
  // Send `number` to COMMAND (forwarding, job control).
  virtual int signal_command(int number);
  // The cgroup directory COMMAND must be born in, or -1.
  virtual int spawn_cgroup_fd() const { return -1; }
  // A cgroup.procs fd to write the child into when clone3 cannot.
  virtual int spawn_cgroup_procs_fd() const { return -1; }
  // COMMAND leads a new process group.
  virtual bool spawn_new_process_group() const { return false; }
  // A file descriptor whose watch_events() mean "membership changed", or -1.
  virtual int watch_fd() const { return -1; }
  virtual short watch_events() const { return POLLPRI; }
  // watch_fd() fired: read it again, which also re-arms it. Returns what
  // wait() reports: a change, or the boundary's own object gone.
  virtual Event::Kind on_watch() { return Event::Kind::changed; }
  // Called when wait() wakes without an event for the core, and at least
  // every tick_interval(): the process-group boundary scans here.
  virtual void on_tick() {}
  virtual std::optional<Duration> tick_interval() const { return std::nullopt; }

  // The leaf can say it is empty without treeguard reaping anything
  // (cgroup: `populated 0` does not wait for zombies to be reaped).
  virtual bool empties_without_reaping() const { return false; }

  // Reap every child that has exited; COMMAND's status is kept. Returns
  // how many were reaped.
  int reap();
  // What wait() reaps. While a stop is under way in a boundary that
  // empties without reaping, only COMMAND, and every orphan at most every
  // k_orphan_reap_interval and once the boundary is empty: each
  // waitpid(-1) walks every child of treeguard, so reaping thousands of
  // dying orphans one wake-up at a time costs time squared in the tree.
  int reap_while_waiting();
  // wait()'s steps: the next queued signal as an event (job control acted
  // on here, nullopt when none is queued); when to wake with nothing
  // received (the deadline, the next tick, the next reaping of deferred
  // orphans, whichever is first; nullopt: none); and what one ppoll found.
  std::optional<Event> queued_signal();
  std::optional<TimePoint> next_wake(std::optional<TimePoint> deadline, TimePoint now) const;
  std::optional<Event> poll_once(std::optional<TimePoint> deadline, std::optional<TimePoint> wake,
                                 TimePoint now);
  static constexpr std::chrono::milliseconds k_orphan_reap_interval{1000};
  // How long wait() pauses when ppoll itself fails, before it returns.
  static constexpr long k_wait_error_pause_ns = 50'000'000;
  // A stop signal or the forced kill is being sent to the whole boundary:
  // from now on, in a boundary that empties without reaping, wait() reaps
  // as reap_while_waiting() says (m_defer_orphans).
  void stopping();
  bool m_defer_orphans = false;
  TimePoint m_orphans_reaped_at{};
  // No child of treeguard is left, alive or zombie (after reaping).
  bool no_children();
  // The cloned child was reaped: its status is COMMAND's, unless
  // collect_command_status() found COMMAND's own first.
  void on_child_reaped(int status);
  // Before the cloned child's status is taken for COMMAND's: read
  // COMMAND's status from where the child reports it, if it does.
  virtual void collect_command_status() {}
  // COMMAND's exit, from a wait status.
  void note_command_exit(int status);
  bool m_child_reaped = false;

  // Every process seen in the run, by (pid, start time); only grows.
  // COMMAND is in it from spawn, even if it exited before any walk.
  Membership m_members;
  pid_t m_child = -1;
  pid_t m_child_pgid = -1;
  pid_t m_child_sid = -1;
  UniqueFd m_child_pidfd;
  std::optional<ExitStatus> m_status;
  // A stop signal (TERM, INT, HUP, QUIT) came from a service manager
  // (is_service_manager): systemd is taking down the unit treeguard runs
  // in, walking its cgroups. Its pid.
  pid_t m_signalled_by_manager = 0;
  // wake_once_on(): the descriptor and what to do when it fires.
  int m_also_fd = -1;
  std::function<void()> m_also_then;
};

}  // namespace treeguard::platform
