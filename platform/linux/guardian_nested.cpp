#include "linux/guardian_nested.hpp"

#include "linux/lost_run.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "nesting.hpp"
#include "record.hpp"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

// The peer's pidfd, as the kernel took it at connect() (Linux 6.5); an older
// kernel says ENOPROTOOPT and the pidfd is opened from the peer's pid.
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

namespace treeguard::platform {

namespace {

// The unix socket address of `path`; false when the path is too long for
// one.
bool socket_address(const std::filesystem::path& path, struct sockaddr_un& address) {
  address = {};
  address.sun_family = AF_UNIX;
  if (path.native().size() >= sizeof address.sun_path) {
    return false;
  }
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  return true;
}

bool has_exited(int pidfd) {
  struct pollfd one = {pidfd, POLLIN, 0};
  return ::poll(&one, 1, 0) != 0;
}

// The socket's peer, if it is a process of this user in this pid namespace
// and the controller it says it is (`claimed`: the same pid and start time
// seen from here), as a pidfd; else an invalid one, and why in `why`.
UniqueFd claimed_peer(int connection, const ProcessIdentity& claimed, std::string& why) {
  struct ucred peer {};
  socklen_t size = sizeof peer;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0
      || peer.uid != ::geteuid()) {
    why = "not a process of this user";
    return UniqueFd();
  }
  int fd = -1;
  socklen_t fd_size = sizeof fd;
  if (::getsockopt(connection, SOL_SOCKET, SO_PEERPIDFD, &fd, &fd_size) != 0) {
    fd = static_cast<int>(::syscall(SYS_pidfd_open, peer.pid, 0));
  }
  UniqueFd pidfd(fd);
  // The start time read while the pidfd's process is alive is its own: a
  // live process's pid is never another's.
  const auto stat = read_proc_stat(peer.pid);
  if (!pidfd || !stat || has_exited(pidfd.get())) {
    why = "the announcing process is gone";
    return UniqueFd();
  }
  if (ProcessIdentity{peer.pid, stat->start_time} != claimed) {
    why = "the announcing process is not the controller it names (or it is in another pid "
          "namespace)";
    return UniqueFd();
  }
  return pidfd;
}

// Say `line` on a connection that is being answered: whole, or not at all
// (a peer that does not take a short line at once is not waiting for it).
bool say(int connection, const std::string& line) {
  return ::send(connection, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL)
         == static_cast<ssize_t>(line.size());
}

}  // namespace

NestedRuns::NestedRuns(const GuardianSpec& spec, ProcessIdentity self)
    : m_spec(spec), m_self(self) {
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY) {
    m_fd_limit = static_cast<std::size_t>(files.rlim_cur);
  }
}

bool NestedRuns::advertise() {
  if (m_spec.kind != BoundaryKind::cgroup) {
    return false;
  }
  const auto path = nested_runs_socket(m_spec.state_dir, m_spec.run_id);
  struct sockaddr_un address {};
  if (!socket_address(path, address)) {
    return false;
  }
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

void NestedRuns::add_fds(std::vector<struct pollfd>& fds) const {
  const bool resting = std::chrono::steady_clock::now() < m_listener_rests_until;
  fds.push_back({m_listener && !resting ? m_listener.get() : -1, POLLIN, 0});
  for (const auto& waiting : m_waiting) {
    fds.push_back({waiting.connection.get(), POLLIN, 0});
  }
  for (const auto& taken : m_taken) {
    fds.push_back({taken.controller_pidfd.get(), POLLIN, 0});
  }
}

int NestedRuns::wait_ms() const {
  std::optional<Time> next;
  if (m_listener && std::chrono::steady_clock::now() < m_listener_rests_until) {
    next = m_listener_rests_until;
  }
  for (const auto& waiting : m_waiting) {
    next = next ? std::min(*next, waiting.until) : waiting.until;
  }
  if (!next) {
    return -1;
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *next - std::chrono::steady_clock::now());
  return std::max(0, static_cast<int>(left.count()) + 1);
}

void NestedRuns::handle(const std::vector<struct pollfd>& fds, std::size_t first) {
  reap_helpers();
  const std::size_t waiting_at = first + 1;
  const std::size_t taken_at = waiting_at + m_waiting.size();
  // Deaths first: a run that died is acted for before any new connection is
  // answered.
  std::vector<Taken> dead;
  for (std::size_t i = m_taken.size(); i-- > 0;) {
    if (taken_at + i < fds.size() && fds[taken_at + i].revents != 0) {
      dead.push_back(std::move(m_taken[i]));
      m_taken.erase(m_taken.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const Taken& taken : dead) {
    act_for_lost_nested(taken);
  }
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = m_waiting.size(); i-- > 0;) {
    const bool readable = waiting_at + i < fds.size() && fds[waiting_at + i].revents != 0;
    if ((readable && read_line(m_waiting[i])) || (!readable && now >= m_waiting[i].until)) {
      m_waiting.erase(m_waiting.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (first < fds.size() && fds[first].fd >= 0 && fds[first].revents != 0) {
    accept_connections();
  }
}

void NestedRuns::settle_dead() {
  m_guarding = false;
  reap_helpers();
  for (std::size_t i = m_taken.size(); i-- > 0;) {
    if (has_exited(m_taken[i].controller_pidfd.get())) {
      const Taken taken = std::move(m_taken[i]);
      m_taken.erase(m_taken.begin() + static_cast<std::ptrdiff_t>(i));
      act_for_lost_nested(taken);
    }
  }
}

void NestedRuns::withdraw() {
  m_waiting.clear();
  m_taken.clear();
  if (m_listener) {
    m_listener.reset();
    ::unlink(m_path.c_str());
    ::rmdir(m_path.parent_path().c_str());
  }
}

bool NestedRuns::bind_in_own_directory(const struct sockaddr_un& address) {
  const auto parent = std::filesystem::path(address.sun_path).parent_path();
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct stat st {};
    if ((::mkdir(parent.c_str(), 0700) != 0 && errno != EEXIST) || ::lstat(parent.c_str(), &st) != 0
        || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
      return false;
    }
    if (::bind(m_listener.get(), reinterpret_cast<const struct sockaddr*>(&address), sizeof address)
        == 0) {
      return true;
    }
    if (errno != ENOENT) {
      return false;
    }
  }
  return false;
}

std::size_t NestedRuns::max_taken() const {
  // Each run taken holds two descriptors (its connection, its pidfd); the
  // waiting ones one each; the rest is this guardian's own.
  const std::size_t spare = k_reserved_fds + k_max_waiting + 8;
  return m_fd_limit > spare ? (m_fd_limit - spare) / 2 : 0;
}

void NestedRuns::accept_connections() {
  for (std::size_t n = 0; n < k_accepts_per_call; ++n) {
    UniqueFd connection(
        ::accept4(m_listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!connection) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // No descriptor to take it with: the connection stays queued, and
        // the listener rests rather than wake this loop at once again.
        m_listener_rests_until =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(k_rest_ms);
      }
      return;  // EAGAIN: all taken
    }
    if (m_waiting.size() >= k_max_waiting) {
      m_waiting.erase(m_waiting.begin());  // the oldest that said nothing whole
    }
    Waiting waiting{std::move(connection),
                    {},
                    std::chrono::steady_clock::now()
                        + std::chrono::milliseconds(k_wait_for_line_ms)};
    // A nested run says its line as it connects: most are answered here.
    if (!read_line(waiting)) {
      m_waiting.push_back(std::move(waiting));
    }
  }
}

bool NestedRuns::read_line(Waiting& waiting) {
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::recv(waiting.connection.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return n == 0 || errno != EAGAIN;  // ended, or failed: dropped
    }
    waiting.said.append(buffer, static_cast<std::size_t>(n));
    const std::size_t end = waiting.said.find('\n');
    if (end != std::string::npos) {
      answer(std::move(waiting.connection), std::string_view(waiting.said).substr(0, end));
      return true;
    }
    if (waiting.said.size() > k_max_protocol_line) {
      return true;  // not a line of the protocol: dropped, never acted on
    }
  }
}

void NestedRuns::answer(UniqueFd connection, std::string_view line) {
  const auto announced = parse_announcement(line);
  if (!announced) {
    say(connection.get(), answer_line(Answer{false, {}, "not an announcement"}));
    return;
  }
  UniqueFd pidfd;
  const std::string why = refusal(connection.get(), *announced, pidfd);
  if (!why.empty()) {
    say(connection.get(), answer_line(Answer{false, {}, why}));
    return;
  }
  if (say(connection.get(), answer_line(Answer{true, m_self, {}}))) {
    m_taken.push_back(Taken{std::move(connection), std::move(pidfd), *announced});
  }
}

std::string NestedRuns::refusal(int connection, const Announcement& announced,
                                UniqueFd& pidfd) const {
  if (!validate_cgroup_address(announced.leaf, announced.run_id)) {
    return "not a leaf of run " + announced.run_id + ": " + announced.leaf;
  }
  // Never a leaf outside the one this guardian guards.
  if (!leaf_within(announced.leaf, m_spec.address)) {
    return "the leaf " + announced.leaf + " is not inside this run's leaf " + m_spec.address;
  }
  if (m_taken.size() >= max_taken()) {
    return "busy: " + std::to_string(m_taken.size()) + " nested runs guarded";
  }
  for (const Taken& taken : m_taken) {
    if (taken.announced.leaf == announced.leaf || taken.announced.run_id == announced.run_id) {
      return "run " + announced.run_id + " is announced already";
    }
  }
  // A leaf that exists is someone's already: only one about to be made is
  // the announcing run's.
  struct stat st {};
  if (::lstat(announced.leaf.c_str(), &st) == 0 || errno != ENOENT) {
    return "the leaf " + announced.leaf + " exists already";
  }
  std::string why;
  pidfd = claimed_peer(connection, announced.controller, why);
  return pidfd ? std::string() : why;
}

void NestedRuns::act_for_lost_nested(const Taken& taken) {
  const Announcement& run = taken.announced;
  const pid_t helper = m_guarding ? ::fork() : -1;
  if (helper > 0) {
    m_helpers.push_back(helper);
    return;
  }
  take_precedence();
  // The common end: the run finished its record (removed), and nothing is
  // done.
  take_down_lost_run(m_spec.state_dir, run.run_id, Membership{}, std::nullopt, m_self,
                     [&](const RunRecord& record) { return guards_nested_run(record, run); });
  if (helper == 0) {
    ::_exit(0);
  }
}

void NestedRuns::reap_helpers() {
  for (std::size_t i = m_helpers.size(); i-- > 0;) {
    if (::waitpid(m_helpers[i], nullptr, WNOHANG) != 0) {
      m_helpers.erase(m_helpers.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

namespace {

// How long a nested controller waits for the guardian's answer before it
// guards itself.
constexpr int k_answer_ms = 5000;

// The controller's handle on the enclosing run's guardian that took its
// run: the connection, held (never written again) until this process ends;
// that guardian acts on this process's death, not on the connection. The
// connection hangs up when that guardian is gone (gone_fd).
class Announced final : public Guardian {
public:
  Announced(ProcessIdentity guardian, UniqueFd connection)
      : m_guardian(guardian), m_connection(std::move(connection)) {}

  ProcessIdentity identity() const override { return m_guardian; }
  void dismiss() override { m_connection.reset(); }
  void keep_armed() override {}
  int gone_fd() const override { return m_connection.get(); }

private:
  ProcessIdentity m_guardian;
  UniqueFd m_connection;
};

// The answer line on `connection`, within k_answer_ms; nullopt when none.
std::optional<Answer> read_answer(int connection) {
  std::string said;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_answer_ms);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    struct pollfd one = {connection, POLLIN, 0};
    if (left.count() <= 0
        || (::poll(&one, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)) {
      return std::nullopt;
    }
    char buffer[256];
    const ssize_t n = ::recv(connection, buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      return std::nullopt;
    }
    if (n > 0) {
      said.append(buffer, static_cast<std::size_t>(n));
      if (const auto end = said.find('\n'); end != std::string::npos) {
        return parse_answer(std::string_view(said).substr(0, end));
      }
      if (said.size() > k_max_protocol_line) {
        return std::nullopt;
      }
    }
  }
}

// The announcement to `enclosing`'s guardian, or null when it is not taken:
// nobody listens (that run is ending, its guardian is gone, a run that does
// not guard), the guardian says no, or no answer comes.
std::unique_ptr<Guardian> announce_to(const GuardianSpec& spec,
                                      const EnclosingGuardian& enclosing) {
  if (!leaf_within(spec.address, enclosing.address)) {
    return nullptr;  // the leaf is not in that run's leaf: it cannot guard it
  }
  struct sockaddr_un address {};
  if (!socket_address(nested_runs_socket(spec.state_dir, enclosing.run_id), address)) {
    return nullptr;
  }
  UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  struct ucred peer {};
  socklen_t size = sizeof peer;
  if (!connection
      || ::connect(connection.get(), reinterpret_cast<const struct sockaddr*>(&address),
                   sizeof address)
             != 0
      || ::getsockopt(connection.get(), SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0
      || peer.uid != ::geteuid()) {
    return nullptr;
  }
  const std::string said = announcement_line(
      Announcement{spec.run_id, spec.controller, spec.address, spec.cwd, spec.command});
  if (!say(connection.get(), said)) {
    return nullptr;
  }
  const auto answered = read_answer(connection.get());
  if (!answered || !answered->taken || answered->guardian.pid != peer.pid) {
    return nullptr;
  }
  return std::unique_ptr<Guardian>(new Announced(answered->guardian, std::move(connection)));
}

}  // namespace

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

}  // namespace treeguard::platform
