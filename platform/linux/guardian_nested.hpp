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
#include "record.hpp"

#include <poll.h>
#include <sys/un.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace treeguard::platform {

// The runs nested in this guardian's leaf that announced themselves to it.
// The guardian listens on a unix socket, nested_runs_socket(); a nested
// controller connects and says its announcement; the guardian takes it
// (answers "taken") only from a peer of this user in its own pid namespace
// that is the controller it says it is (the peer's pidfd, pid and start
// time, from the socket: never from the line), for a leaf inside its own
// leaf that does not exist yet and no other run of it claims, and only while
// the dispatch gate it answers for the runs it holds is open (else it
// answers with the gate's refusal). It then holds the run's record: in
// memory while the run is clean, written into its own run's record
// (RunRecord::nested) as far as evidence needs (what the run sends: an
// authority, an ambiguous or failed end, a hand-over; what it does itself
// for the run). It watches the peer's pidfd, and acts for the run only on
// the peer's death (act_for_lost_nested): nothing a line says, and no
// connection's end, ever makes it act. The controller passes its own end
// of the connection with its announcement (SCM_RIGHTS), and a run taken
// keeps it: the controller's exit then wakes the guardian once (its
// pidfd), not twice (the hang-up, then the pidfd); a passed descriptor is
// only held, never used. `treeguard status` asks it which runs it holds.
//
// Connections are bounded: at most k_max_waiting that have not said a whole
// line yet (the oldest is dropped for a new one), each for at most
// k_wait_for_line_ms; at most as many runs taken as its descriptors allow
// with k_reserved_fds left for its own run's takedown (an announcement
// beyond that is answered "not taken": the run guards itself). When
// accept() finds no descriptor, the listener rests k_rest_ms. The
// guardian's own controller is watched first, whatever the connections do.
//
// The gate is judged again when the state directory changed (inotify), and
// at least every k_gate_ms: a run whose controller and guardian both died
// without a word to the directory blocks the nested runs announced from
// then on within that time.
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
  // connection waiting for its line, each taken run's controller (pidfd) and
  // connection (what it sends).
  void add_fds(std::vector<struct pollfd>& fds) const;

  // How long poll() may wait for them (ms; -1: for ever).
  int wait_ms() const;

  // After poll(): `fds` from `first` are add_fds()'s. What taken runs sent
  // first, then deaths (each acted for), then the lines of the connections
  // waiting, then new connections (a bounded number per call).
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
  static constexpr int k_gate_ms = 1000;
  using Time = std::chrono::steady_clock::time_point;

  // A connection that has not said its whole first line yet.
  struct Waiting {
    UniqueFd connection;
    std::string said;
    Time until;
    UniqueFd passed;  // the peer's own end, passed with its line (held only)
  };
  // A run taken: its controller (the peer), what it announced, what it sent
  // since (a line not yet whole), and its record as this guardian last
  // wrote it into its own run's record (none while the run is clean).
  struct Taken {
    UniqueFd connection;
    UniqueFd passed;  // the controller's end: its exit is no hang-up here
    UniqueFd controller_pidfd;
    Announcement announced;
    std::int64_t taken_at = 0;
    std::string said;
    bool hung_up = false;
    std::optional<RunRecord> written;
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
  // Answer the first line `line` said on `connection`: an announcement, or
  // status's question.
  void answer(Waiting& waiting, std::string_view line);
  // Why the announcement is not taken (empty: it is), the peer's pidfd
  // kept in `pidfd` when it is.
  std::string refusal(int connection, const Announcement& announced, UniqueFd& pidfd) const;
  // The dispatch gate for the runs this guardian holds: refused (exit code,
  // and the lines to print), or nullopt when it is open.
  std::optional<std::pair<int, std::vector<std::string>>> gate();
  // status: every run taken, one record a line.
  void tell_held(int connection);

  // Read and answer what the run `taken` sent (its evidence).
  void read_requests(Taken& taken);
  // Write the evidence `line` of the run `taken` into this run's record.
  std::optional<std::string> keep_evidence(Taken& taken, std::string_view line);
  // The run `taken`'s record as this guardian holds it: as last written,
  // else as announced (with this run's boot, machine and namespace).
  RunRecord held_record(const Taken& taken);

  // The controller of the run `taken` died: what this guardian does for it.
  // Its end written (failed, ambiguous), or its leaf gone or empty (the run
  // ended, or it was taken down with this guardian's own leaf), nothing;
  // else the leaf is taken down as the run's own guardian would
  // (take_down_lost_record: drained first with that run's own signal and
  // grace, then authority, the kill of that leaf only, the proof), written
  // into this run's record. While this guardian still guards its own run, a
  // helper process does it, so that the drain's grace never keeps the
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
  // the gate: the state directory watched for changes, the last verdict
  UniqueFd m_changes;
  std::optional<Time> m_gate_at;
  std::optional<std::pair<int, std::vector<std::string>>> m_refused;
  bool m_own_run_over = false;  // as the gate last read this run's record (or found none open)
  // this run's record's boot, machine and namespace, read once when needed
  std::optional<RunRecord> m_own_ids;
};

// announce_to_enclosing() (port/guardian.hpp) is the controller's side.

}  // namespace treeguard::platform
