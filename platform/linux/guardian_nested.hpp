// The guardian's nested side: a cgroup run's guardian guards the runs
// nested in its leaf (NestedRuns: the listening socket, the announcements,
// acting for a nested run whose controller died), and a nested run's
// controller announces itself to that guardian instead of starting one of
// its own (announce_to_enclosing). The words they say are in
// nested_protocol.hpp, which runs are nested in which in nesting.hpp.
#pragma once

#include "guardian.hpp"
#include "identity.hpp"
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

// The runs nested in this guardian's leaf that announced themselves to it
// (GuardianSpec::enclosing): the guardian listens on a unix socket,
// nested_runs_socket(); a nested controller connects, says its
// announcement, holds the connection for the run, and says it is finished
// once its record is (nested_protocol.hpp). A connection that ends without
// the finished line is a controller that died
// (the kernel closes its descriptors, SIGKILL included): the guardian then
// takes that run down as the run's own guardian would have
// (take_down_lost_run: authority, kill, proof, record), that leaf only.
// Nothing per run touches a file system or /proc, and no run wakes the
// guardian by itself: connections are taken in batches, every
// k_batch_ms (a run that ended meanwhile costs an accept and a read), and
// only the runs still going when taken are watched, each woken for by its
// end. A controller's death is seen within k_batch_ms.
class NestedRuns {
public:
  NestedRuns(const GuardianSpec& spec, ProcessIdentity self) : m_spec(spec), m_self(self) {}
  NestedRuns(const NestedRuns&) = delete;
  NestedRuns& operator=(const NestedRuns&) = delete;
  ~NestedRuns() { withdraw(); }

  // Listen: only a cgroup run's guardian guards nested runs (their leaves
  // are in its leaf). False: nothing advertised (a socket path too long,
  // say), and a nested run starts a guardian of its own.
  bool advertise();

  // What poll() watches for them: each connection taken.
  void add_fds(std::vector<struct pollfd>& fds) const;

  // How long poll() may wait for them (ms; -1: for ever).
  int wait_ms() const;

  // After poll(): `fds` from `first` are add_fds()'s; then the next batch,
  // when it is due.
  void handle(const std::vector<struct pollfd>& fds, std::size_t first);

  // Every announced run whose controller has gone is settled (after this
  // guardian's own takedown, which killed them, or at its dismissal).
  void settle_dead();

  // No more announcements: the socket goes (the runs still connected
  // ended with this one), and its directory with the last socket in it, so
  // that a state directory holds nothing once its runs are over (another
  // guardian's rmdir fails while its socket is there: ENOTEMPTY).
  void withdraw();

private:
  // Bind the listener at `address` in the sockets' directory, made here if
  // need be (0700), never followed: a directory of this user's, not a
  // symlink. Another guardian's withdraw() may remove the directory
  // between the mkdir and the bind (ENOENT): made again, a few times.
  bool bind_in_own_directory(const struct sockaddr_un& address);

  struct Run {
    UniqueFd connection;
    std::string said;  // what it said so far
    bool done = false;
  };

  // Take every waiting connection and read what each said: the runs that
  // ended meanwhile go (acted on if without "D").
  void take_batch();

  void accept_runs();

  // Read what the runs at `indexes` said; each whose connection ended is
  // dropped, and acted on if it ended without "D".
  void read_runs(const std::vector<std::size_t>& indexes);

  // The controller of a run nested here died: that run, if its record
  // still names that controller and a leaf inside this guardian's leaf.
  void act_on(const std::string& said);

  static constexpr int k_batch_ms = 200;
  const GuardianSpec& m_spec;
  ProcessIdentity m_self;
  std::filesystem::path m_path;
  UniqueFd m_listener;
  std::vector<Run> m_runs;
  std::chrono::steady_clock::time_point m_batch_at = std::chrono::steady_clock::now();
};

// The controller's side of a run nested in a leaf whose guardian listens:
// the announcement to the first of spec.enclosing whose guardian takes it,
// or null when none does (a run that is not a cgroup run, nobody listening):
// the run then starts a guardian of its own.
std::unique_ptr<Guardian> announce_to_enclosing(const GuardianSpec& spec);

}  // namespace treeguard::platform
