#include "guardian.hpp"

#include "after_death.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "posix/unique_fd.hpp"
#include "record_store.hpp"
#include "run_id.hpp"
#include "takedown.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace treeguard {

namespace {

// What a guardian does when a controller it guards died without finishing
// its run (its own controller, or that of a run nested in its leaf): the
// run's record, if it is still pending and `ours` accepts it (never a
// boundary the guardian was not given), is taken down after death: the
// authority made durable first, then the kill, the proof, the record
// settled (after_death.hpp, the one sequence of every settler).
void take_down_lost_run(const std::filesystem::path& state_dir, const std::string& run_id,
                        const Membership& seen, ProcessIdentity self,
                        const std::function<bool(const RunRecord&)>& ours) {
  RecordStore store(state_dir);
  auto loaded = store.load(run_id);
  if (!loaded) {
    // Either the run finished its record just before dying, or it cannot
    // be read: without a record there is no durable authority. Fail
    // closed; the gate of the next run finds what is left.
    return;
  }
  const RunRecord& on_disk = *loaded;
  RunRecord record = on_disk;
  if (record.disposition != Disposition::pending) {
    return;  // the controller finished the run itself
  }
  if (!ours(record)) {
    return;  // not the boundary we were started for: never act on it
  }
  const auto now = unix_time_ns();
  record.phases.push_back(PhaseEntry{"guardian", now});
  record.notes.push_back("controller lost");
  // What the takedown claims: every member the record names and every one
  // this guardian saw. What the record keeps of them is capped like every
  // record's (keep_members), so that it can always be written.
  Membership members;
  for (const auto& member : record.members) {
    members.remember(member);
  }
  for (const auto& member : seen.all()) {
    members.remember(member);
  }
  RunRecord claim = record;
  claim.members = members.all();
  keep_members(record, claim.members);
  // The run's orphans went where this guardian went when it was
  // orphaned: to its parent now (the recorded reaper, or the next one up
  // if that has died since).
  if (auto parent = platform::read_proc_stat(::getppid()); parent) {
    claim.reaper = ProcessIdentity{parent->pid, parent->start_time};
  }
  AfterDeath how;
  how.closing_phase = "verify";
  how.reason = fmt::format("controller lost: pid {} exited without finishing the run",
                           record.controller.pid);
  how.by = fmt::format("guardian pid {}", self.pid);
  how.verify_for = std::chrono::milliseconds(1500);
  how.not_proven_note = "members survived the guardian's kill: ";
  how.kill_failed_note = "guardian kill failed: ";
  std::ignore = take_down_after_death(store, on_disk, record, how, &claim);
}

// The guardian's view of the run while the controller lives: in a process
// group run, every descendant of the controller it has seen (the same member
// walk the controller makes), because after the controller's death the
// orphans no longer hang below it.
class Watch {
public:
  Watch(const GuardianSpec& spec, pid_t controller) : m_spec(spec), m_controller(controller) {
    auto self = platform::read_proc_stat(::getpid());
    m_self = ProcessIdentity{::getpid(), self ? self->start_time : 0};
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
  int scan() {
    if (m_spec.kind != BoundaryKind::process_group) {
      return -1;  // a cgroup needs no membership: the leaf is the boundary
    }
    const auto started = std::chrono::steady_clock::now();
    bool grew = false;
    platform::walk_members(m_controller, platform::CommandGroup{}, m_seen, {m_self}, &grew);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    const int slowest = std::clamp(static_cast<int>(took.count()) * 20, k_window_ms, 2000);
    // Growing: look again soon, but (at real-time priority) never sooner
    // than four walks' time, so that walks of a big growing tree take at
    // most a fifth of a core from it.
    const int soonest = std::max(25, static_cast<int>(took.count()) * 4);
    m_interval_ms = grew ? soonest : std::min(m_interval_ms * 2, slowest);
    return m_interval_ms;
  }

  // The controller died without dismissing us: the run's record, if it
  // still names the boundary this guardian was started for.
  void act() {
    take_down_lost_run(m_spec.state_dir, m_spec.run_id, m_seen, m_self,
                       [this](const RunRecord& record) {
                         return record.boundary.kind == m_spec.kind
                                && (m_spec.kind != BoundaryKind::cgroup
                                    || record.boundary.address == m_spec.address);
                       });
  }

  ProcessIdentity self() const { return m_self; }

private:
  static constexpr int k_window_ms = 100;
  const GuardianSpec& m_spec;
  pid_t m_controller;
  ProcessIdentity m_self;
  Membership m_seen;
  int m_interval_ms = 25;
};

// The runs nested in this guardian's leaf that announced themselves to it
// (GuardianSpec::enclosing): the guardian listens on a unix socket,
// nested_runs_socket(); a nested controller connects, says "A RUN-ID PID
// START", holds the connection for the run, and says "D" once its record is
// finished. A connection that ends without "D" is a controller that died
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
  bool advertise() {
    if (m_spec.kind != BoundaryKind::cgroup) {
      return false;
    }
    const auto path = nested_runs_socket(m_spec.state_dir, m_spec.run_id);
    struct sockaddr_un address {};
    address.sun_family = AF_UNIX;
    if (path.native().size() >= sizeof address.sun_path) {
      return false;
    }
    std::memcpy(address.sun_path, path.c_str(), path.native().size());
    m_listener.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!m_listener || !bind_in_own_directory(address)) {
      m_listener.reset();
      return false;
    }
    m_path = path;
    if (::listen(m_listener.get(), SOMAXCONN) != 0) {
      withdraw();
      return false;
    }
    return true;
  }

  // What poll() watches for them: each connection taken.
  void add_fds(std::vector<struct pollfd>& fds) const {
    for (const auto& run : m_runs) {
      fds.push_back({run.connection.get(), POLLIN, 0});
    }
  }

  // How long poll() may wait for them (ms; -1: for ever).
  int wait_ms() const {
    if (!m_listener) {
      return -1;
    }
    const auto since = std::chrono::steady_clock::now() - m_batch_at;
    return std::max(0,
                    k_batch_ms
                        - static_cast<int>(
                            std::chrono::duration_cast<std::chrono::milliseconds>(since).count()));
  }

  // After poll(): `fds` from `first` are add_fds()'s; then the next batch,
  // when it is due.
  void handle(const std::vector<struct pollfd>& fds, std::size_t first) {
    std::vector<std::size_t> readable;
    for (std::size_t i = 0; i < m_runs.size() && first + i < fds.size(); ++i) {
      if (fds[first + i].revents != 0) {
        readable.push_back(i);
      }
    }
    read_runs(readable);
    if (m_listener && wait_ms() == 0) {
      m_batch_at = std::chrono::steady_clock::now();
      take_batch();
    }
  }

  // Every announced run whose controller has gone is settled (after this
  // guardian's own takedown, which killed them, or at its dismissal).
  void settle_dead() {
    if (m_listener) {
      take_batch();
    }
  }

  // No more announcements: the socket goes (the runs still connected
  // ended with this one), and its directory with the last socket in it, so
  // that a state directory holds nothing once its runs are over (another
  // guardian's rmdir fails while its socket is there: ENOTEMPTY).
  void withdraw() {
    m_runs.clear();
    if (m_listener) {
      m_listener.reset();
      ::unlink(m_path.c_str());
      ::rmdir(m_path.parent_path().c_str());
    }
  }

private:
  // Bind the listener at `address` in the sockets' directory, made here if
  // need be (0700), never followed: a directory of this user's, not a
  // symlink. Another guardian's withdraw() may remove the directory
  // between the mkdir and the bind (ENOENT): made again, a few times.
  bool bind_in_own_directory(const struct sockaddr_un& address) {
    const auto parent = std::filesystem::path(address.sun_path).parent_path();
    for (int attempt = 0; attempt < 8; ++attempt) {
      struct stat st {};
      if ((::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST)
          || ::lstat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)
          || st.st_uid != ::geteuid()) {
        return false;
      }
      if (::bind(m_listener.get(), reinterpret_cast<const struct sockaddr*>(&address),
                 sizeof address)
          == 0) {
        return true;
      }
      if (errno != ENOENT) {
        return false;
      }
    }
    return false;
  }

  struct Run {
    platform::UniqueFd connection;
    std::string said;  // what it said so far
    bool done = false;
  };

  // Take every waiting connection and read what each said: the runs that
  // ended meanwhile go (acted on if without "D").
  void take_batch() {
    const std::size_t before = m_runs.size();
    accept_runs();
    std::vector<std::size_t> taken;
    for (std::size_t i = before; i < m_runs.size(); ++i) {
      taken.push_back(i);
    }
    read_runs(taken);
  }

  void accept_runs() {
    for (;;) {
      platform::UniqueFd connection(
          ::accept4(m_listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!connection) {
        return;  // EAGAIN: all taken
      }
      struct ucred peer {};
      socklen_t size = sizeof peer;
      if (::getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0
          || peer.uid != ::geteuid()) {
        continue;  // not this user's run: never acted on
      }
      m_runs.push_back(Run{std::move(connection), {}, false});
    }
  }

  // Read what the runs at `indexes` said; each whose connection ended is
  // dropped, and acted on if it ended without "D".
  void read_runs(const std::vector<std::size_t>& indexes) {
    std::vector<std::size_t> ended;
    for (std::size_t i : indexes) {
      Run& run = m_runs[i];
      char buffer[256];
      for (;;) {
        const ssize_t n = ::read(run.connection.get(), buffer, sizeof buffer);
        if (n > 0) {
          run.said.append(buffer, static_cast<std::size_t>(n));
          run.done = run.done || run.said.find("\nD\n") != std::string::npos;
          if (run.said.size() > 1024) {
            run.done = true;  // not an announcement: never acted on
            ended.push_back(i);
            break;
          }
          continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          ended.push_back(i);
        }
        if (n == 0 || errno != EINTR) {
          break;
        }
      }
    }
    for (auto i = ended.rbegin(); i != ended.rend(); ++i) {
      Run run = std::move(m_runs[*i]);
      m_runs.erase(m_runs.begin() + static_cast<std::ptrdiff_t>(*i));
      if (!run.done) {
        act_on(run.said);
      }
    }
  }

  // The controller of a run nested here died: that run, if its record
  // still names that controller and a leaf inside this guardian's leaf.
  void act_on(const std::string& said) {
    char run_id[64] = {};
    ProcessIdentity controller;
    if (std::sscanf(said.c_str(), "A %63s %ld %llu\n", run_id, &controller.pid,
                    &controller.start_time)
            != 3
        || !is_valid_run_id(run_id)) {
      return;  // it died before it announced itself: nothing of it exists
    }
    const std::string inside = m_spec.address + "/";
    take_down_lost_run(
        m_spec.state_dir, run_id, Membership{}, m_self, [&](const RunRecord& record) {
          const std::string& leaf = record.boundary.address;
          return record.controller == controller && record.boundary.kind == BoundaryKind::cgroup
                 && leaf.compare(0, inside.size(), inside) == 0
                 && leaf.find("/..") == std::string::npos;
        });
  }

  static constexpr int k_batch_ms = 200;
  const GuardianSpec& m_spec;
  ProcessIdentity m_self;
  std::filesystem::path m_path;
  platform::UniqueFd m_listener;
  std::vector<Run> m_runs;
  std::chrono::steady_clock::time_point m_batch_at = std::chrono::steady_clock::now();
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
bool watch_controller(Watch& watch, NestedRuns& nested, int controller_pidfd, int command_fd) {
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
    timeout_ms = watch.scan();
  }
}

[[noreturn]] void guardian_main(const GuardianSpec& spec, pid_t controller, GuardianFds fds) {
  // Out of the controller's session: a terminal's signals are not ours.
  // Ignored before they are unblocked: one the terminal sent the
  // controller's group before setsid() is discarded, not acted on.
  ::setsid();
  // TERM too: the guardian is ended by its controller (the command pipe,
  // the pidfd), never by a signal meant for the run. systemd stopping the
  // scope or unit that holds the run TERMs every process in it; a guardian
  // that died of it could not take the tree down when the controller is
  // SIGKILLed next (TimeoutStopSec), which is what it is there for.
  // SIGKILL still ends it.
  for (int number : {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE}) {
    ::signal(number, SIG_IGN);
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
  NestedRuns nested(spec, watch.self());
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

// The controller's side of its guardian: the guardian's identity and the
// descriptor the guardian watches: the command pipe of a guardian of the
// run's own, or the connection to the enclosing run's guardian (NestedRuns)
// of a run nested in a leaf whose guardian guards it (no process of its own;
// announced before the run's record and leaf exist, and the record names
// that guardian as this run's: the gate and sweep leave the run to it while
// it lives). One word over it, once the run is over, dismisses the guardian.
class GuardianLink final : public Guardian {
public:
  GuardianLink(ProcessIdentity identity, std::optional<ProcessIdentity> reaper,
               platform::UniqueFd watched, std::string_view dismissal)
      : m_identity(identity), m_reaper(reaper), m_watched(std::move(watched)),
        m_dismissal(dismissal) {}
  ~GuardianLink() override { dismiss(); }

  ProcessIdentity identity() const override { return m_identity; }
  std::optional<ProcessIdentity> reaper() const override { return m_reaper; }

  void dismiss() override {
    if (m_watched) {
      (void)::write(m_watched.get(), m_dismissal.data(), m_dismissal.size());
      m_watched.reset();
    }
  }

  // The descriptor stays open, unwritten, until this process ends: its end
  // is the guardian's "gone" (it takes the run down as lost), and the
  // destructor has nothing left to dismiss.
  void keep_armed() override { (void)m_watched.release(); }

private:
  ProcessIdentity m_identity;
  std::optional<ProcessIdentity> m_reaper;
  platform::UniqueFd m_watched;
  std::string_view m_dismissal;
};

// The announcement to `enclosing`'s guardian, or null when it cannot be
// made: nobody listens (that run is ending, its guardian is gone, an older
// treeguard, a run that does not guard), or it is busy.
std::unique_ptr<Guardian> announce_to(const GuardianSpec& spec,
                                      const EnclosingGuardian& enclosing) {
  const std::string inside = enclosing.address + "/";
  if (spec.address.compare(0, inside.size(), inside) != 0) {
    return nullptr;  // the leaf is not in that run's leaf: it cannot guard it
  }
  const auto path = nested_runs_socket(spec.state_dir, enclosing.run_id);
  struct sockaddr_un address {};
  address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof address.sun_path) {
    return nullptr;
  }
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  platform::UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!connection
      || ::connect(connection.get(), reinterpret_cast<const struct sockaddr*>(&address),
                   sizeof address)
             != 0) {
    return nullptr;
  }
  const std::string said =
      fmt::format("A {} {} {}\n", spec.run_id, spec.controller.pid, spec.controller.start_time);
  if (::write(connection.get(), said.data(), said.size()) != static_cast<ssize_t>(said.size())) {
    return nullptr;
  }
  return std::unique_ptr<Guardian>(
      new GuardianLink(enclosing.guardian, std::nullopt, std::move(connection), "D\n"));
}

std::unique_ptr<Guardian> announce_to_enclosing(const GuardianSpec& spec) {
  if (spec.kind != BoundaryKind::cgroup || spec.controller.pid == 0) {
    return nullptr;
  }
  for (const auto& enclosing : spec.enclosing) {
    if (auto announced = announce_to(spec, enclosing)) {
      return announced;
    }
  }
  return nullptr;
}

}  // namespace

Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec) {
  if (auto announced = announce_to_enclosing(spec)) {
    return announced;
  }
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
  // reparented away before the controller becomes a subreaper, so it is
  // never a member, never reaped by the run, never waited for.
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
      new GuardianLink(identity, reaper, std::move(command_write), "D"));
}

}  // namespace treeguard
