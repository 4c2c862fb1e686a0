// The opt-in Linux boundary for an ordinary user: treeguard's own minimal
// init is PID 1 of a new user+PID namespace (uid and gid mapped to
// themselves, a private mount namespace with a fresh /proc), and COMMAND is
// its child. Nothing in the namespace outlives the init: the kernel kills
// every process in it when the init dies, and the init ends with the
// controller: when it dies (PR_SET_PDEATHSIG, the control pipe's end) the
// init drains the namespace first, as the controller would have (the run's
// signal, its grace), then exits. So the forced kill is SIGKILL to the
// init, its authority is standing (written before spawn), "empty" is the
// init reaped, and no guardian is needed.
#pragma once

#include "linux/linux_boundary.hpp"

#include <csignal>
#include <optional>
#include <string>

namespace treeguard::platform {

// What the namespace's init does when the controller dies: the graceful
// stop with `signal` (every process of the namespace but the trees of live
// nested runs, graceful_stop.hpp), then up to `grace_ms` for them to end,
// then it exits (SpawnSpec::stop_signal, grace_after_death).
struct InitDrain {
  int signal = SIGTERM;
  long long grace_ms = 1000;
};

class PidNamespaceBoundary final : public LinuxBoundary {
public:
  // The pipes between the controller and the init; the id maps.
  Result<void> form() override;

  BoundaryKind kind() const override { return BoundaryKind::pid_namespace; }
  // "init pid N" (N as the controller sees it), "init pending" before spawn.
  std::string address() const override;
  Result<long> spawn(const SpawnSpec& spec) override;
  Result<void> signal_all(Signal signal) override;
  ForceMethod force_method() const override {
    return {"SIGKILL (the namespace's init)", signals::kill, address()};
  }
  std::optional<std::string> standing_authority() const override;
  Result<void> kill_all() override;
  Result<bool> is_empty() override;
  std::vector<MemberInfo> alive_members() override;
  Result<void> close() override { return {}; }

private:
  std::uint64_t spawn_namespaces() const override;
  [[noreturn]] void run_child(const ChildLaunch& launch) override;
  bool child_is_command() const override { return false; }
  int signal_command(int number) override;
  int watch_fd() const override { return m_status_read.get(); }
  short watch_events() const override { return POLLIN; }
  Event::Kind on_watch() override;
  void collect_command_status() override;

  // One request to the init ('F' forward to COMMAND, 'C' the graceful stop
  // of the namespace: every process but the trees of live nested runs, then
  // CONT to those stopped); 0 or an errno.
  int tell_init(char what, int number);
  // The live processes of the namespace (the init's descendants).
  std::vector<MemberInfo> scan();

  UniqueFd m_control_read;      // the init's: requests
  UniqueFd m_control_write;     // the controller's
  UniqueFd m_status_read;       // the controller's: COMMAND's wait status
  UniqueFd m_status_write;      // the init's
  UniqueFd m_init_pidfd;        // kept after COMMAND's exit, for the kill
  bool m_init_exiting = false;  // the init said COMMAND was its last process
  std::string m_uid_map;
  std::string m_gid_map;
  InitDrain m_drain;  // what the init does when the controller dies
};

// Whether this user may form the boundary here: clone3 into a new
// user+PID+mount namespace, the id maps and a fresh /proc, done for real in
// a child that exits at once. nullopt if it can; else why not, with what
// the host's settings say (user.max_user_namespaces,
// kernel.unprivileged_userns_clone, kernel.apparmor_restrict_unprivileged_userns).
std::optional<std::string> pid_namespace_unavailable();

}  // namespace treeguard::platform
