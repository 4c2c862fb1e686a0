// What both Linux boundaries share: spawning COMMAND (clone3, contained
// before exec), reaping (treeguard is a child subreaper), and the event
// loop over the signalfd plus one boundary-specific file descriptor.
#pragma once

#include "boundary.hpp"
#include "duration.hpp"
#include "identity.hpp"
#include "posix/unique_fd.hpp"

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace treeguard::platform {

// The places execvp would try for `file`, in order ($PATH, else the
// default path): computed before a fork, so that the child only calls
// async-signal-safe functions.
std::vector<std::string> exec_candidates(const std::string& file);

class LinuxBoundary : public Boundary {
public:
  Result<long> spawn(const SpawnSpec& spec) override;
  Event wait(std::optional<TimePoint> deadline) override;
  std::optional<ExitStatus> child_status() const override { return m_status; }
  Result<void> forward(Signal signal) override;
  // `signal` to every member, then CONT so that stopped members act on it.
  std::vector<Delivery> stop_gracefully(Signal signal) override;

  // Send `signal` to every member; with `continue_stopped`, then CONT to
  // every member that was stopped, so that it acts on the signal.
  virtual Result<void> signal_all(Signal signal, bool continue_stopped) = 0;

  std::vector<MemberInfo> members() const override { return m_members.all(); }

protected:
  // The cgroup directory COMMAND must be born in, or -1.
  virtual int spawn_cgroup_fd() const { return -1; }
  // A cgroup.procs fd to write the child into when clone3 cannot.
  virtual int spawn_cgroup_procs_fd() const { return -1; }
  // COMMAND leads a new process group.
  virtual bool spawn_new_process_group() const { return false; }
  // A file descriptor whose POLLPRI means "membership changed", or -1.
  virtual int watch_fd() const { return -1; }
  // watch_fd() fired: read it again, which also re-arms it.
  virtual void on_watch() {}
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
  static constexpr std::chrono::milliseconds k_orphan_reap_interval{1000};
  // A stop signal or the forced kill is being sent to the whole boundary:
  // from now on, in a boundary that empties without reaping, wait() reaps
  // as reap_while_waiting() says (m_defer_orphans).
  void stopping();
  bool m_defer_orphans = false;
  TimePoint m_orphans_reaped_at{};
  // No child of treeguard is left, alive or zombie (after reaping).
  bool no_children();

  // Every process seen in the run, by (pid, start time); only grows.
  // COMMAND is in it from spawn, even if it exited before any walk.
  Membership m_members;
  pid_t m_child = -1;
  pid_t m_child_pgid = -1;
  pid_t m_child_sid = -1;
  UniqueFd m_child_pidfd;
  std::optional<ExitStatus> m_status;

private:
  // COMMAND's exit, from a wait status.
  void note_command_exit(int status);
};

}  // namespace treeguard::platform
