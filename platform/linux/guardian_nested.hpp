// The guardian's nested side (DESIGN.md [nested]): a cgroup run's guardian
// guards the runs nested in its leaf (NestedRuns: the listening socket, the
// announcements it takes, acting for a nested run whose controller died),
// and a nested run's controller announces itself to that guardian instead
// of starting one of its own (announce_to_enclosing). The words they say are
// in nested_protocol.hpp, which runs are nested in which in nesting.hpp.
#pragma once

#include "nested_protocol.hpp"
#include "port/guardian.hpp"
#include "posix/unique_fd.hpp"

#include <poll.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace treeguard::platform {

// The runs nested in this guardian's leaf that announced themselves to it.
// The guardian listens on a unix socket, nested_runs_socket(); a nested
// controller connects and says its announcement; the guardian takes it
// (answers "taken") only from a peer of this user in its own pid namespace
// that is the controller it says it is (the peer's pidfd, pid and start
// time, from the socket: never from the line), for a leaf inside its own
// leaf that does not exist yet and no other run of it claims. From then on
// it watches that peer's pidfd, and acts for the run only on the peer's
// death (act_for_lost_nested): nothing a line says, and no connection's
// end, ever makes it act.
//
// Connections are bounded: at most k_max_waiting that have not said a whole
// line yet (the oldest is dropped for a new one), each for at most
// k_wait_for_line_ms; at most as many runs taken as its descriptors allow
// with k_reserved_fds left for its own run's takedown (an announcement
// beyond that is answered "not taken": the run guards itself). When
// accept() finds no descriptor, the listener rests k_rest_ms. The
// guardian's own controller is watched first, whatever the connections do.
class NestedRuns {
public:
  NestedRuns(const GuardianSpec& spec, ProcessIdentity self);
  NestedRuns(const NestedRuns&) = delete;
  NestedRuns& operator=(const NestedRuns&) = delete;
  ~NestedRuns() { withdraw(); }

  // Listen: only a cgroup run's guardian guards nested runs (their leaves
  // are in its leaf). False: nothing advertised (a socket path too long,
  // say), and a nested run guards itself.
  bool advertise();

  // What poll() watches for them: the listener (unless resting), each
  // connection waiting for its line, each taken run's controller (pidfd).
  void add_fds(std::vector<struct pollfd>& fds) const;

  // How long poll() may wait for them (ms; -1: for ever).
  int wait_ms() const;

  // After poll(): `fds` from `first` are add_fds()'s. Deaths first (each
  // acted for), then the lines of the connections waiting, then new
  // connections (a bounded number per call).
  void handle(const std::vector<struct pollfd>& fds, std::size_t first);

  // Every run taken whose controller has died is acted for (at the end of
  // this guardian's own takedown, or at its dismissal).
  void settle_dead();

  // No more announcements: the socket goes (the runs still connected
  // ended with this one), and its directory with the last socket in it, so
  // that a state directory holds nothing once its runs are over (another
  // guardian's rmdir fails while its socket is there: ENOTEMPTY).
  void withdraw();

private:
  static constexpr std::size_t k_max_waiting = 64;
  static constexpr int k_wait_for_line_ms = 1000;
  static constexpr std::size_t k_reserved_fds = 64;
  static constexpr std::size_t k_accepts_per_call = 64;
  static constexpr int k_rest_ms = 100;
  using Time = std::chrono::steady_clock::time_point;

  // A connection that has not said its whole first line yet.
  struct Waiting {
    UniqueFd connection;
    std::string said;
    Time until;
  };
  // A run taken: its controller (the peer) and what it announced.
  struct Taken {
    UniqueFd connection;
    UniqueFd controller_pidfd;
    Announcement announced;
  };

  // Bind the listener at `address` in the sockets' directory, made here if
  // need be (0700), never followed: a directory of this user's, not a
  // symlink. Another guardian's withdraw() may remove the directory
  // between the mkdir and the bind (ENOENT): made again, a few times.
  bool bind_in_own_directory(const struct sockaddr_un& address);

  void accept_connections();
  // Read what `waiting` said; true when it is done with (answered, or
  // dropped), false while its line is still to come.
  bool read_line(Waiting& waiting);
  // Answer the announcement `line` made on `connection`.
  void answer(UniqueFd connection, std::string_view line);
  // Why the announcement is not taken (empty: it is), the peer's pidfd
  // kept in `pidfd` when it is.
  std::string refusal(int connection, const Announcement& announced, UniqueFd& pidfd) const;

  // The controller of the run `taken` died: what this guardian does for it.
  // The run's record, if it is still pending and names that controller and
  // leaf, is taken down as the run's own guardian would (take_down_lost_run:
  // drained first with that run's own signal and grace, then authority, the
  // kill of that leaf only, the proof, the record settled; a leaf found empty
  // is settled without a kill). While this guardian still guards its own
  // run, a helper process does it, so that the drain's grace never keeps the
  // guardian from its own controller and the other nested runs; once it no
  // longer does (settle_dead), or no process can be made, it is done here.
  void act_for_lost_nested(const Taken& taken);
  // The helpers that have ended, waited for (never any other child).
  void reap_helpers();

  std::size_t max_taken() const;

  const GuardianSpec& m_spec;
  ProcessIdentity m_self;
  std::filesystem::path m_path;
  UniqueFd m_listener;
  Time m_listener_rests_until{};
  std::vector<Waiting> m_waiting;
  std::vector<Taken> m_taken;
  std::size_t m_fd_limit = 1024;
  bool m_guarding = true;        // until settle_dead()
  std::vector<pid_t> m_helpers;  // act_for_lost_nested()'s, not yet waited for
};

// The controller's side of a run nested in a leaf whose guardian listens:
// the announcement to the first of spec.enclosing whose guardian takes it
// (answers within k_answer_ms), or null when none does (nobody listening,
// not taken, no answer): the run then guards itself.
std::unique_ptr<Guardian> announce_to_enclosing(const GuardianSpec& spec);

}  // namespace treeguard::platform
