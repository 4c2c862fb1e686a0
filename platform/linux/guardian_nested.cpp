#include "linux/guardian_nested.hpp"

#include "linux/guardian_link.hpp"
#include "linux/lost_run.hpp"
#include "nested_protocol.hpp"
#include "nesting.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

// The announcement to `enclosing`'s guardian, or null when it cannot be
// made: nobody listens (that run is ending, its guardian is gone, an older
// treeguard, a run that does not guard), or it is busy.
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
  if (!connection
      || ::connect(connection.get(), reinterpret_cast<const struct sockaddr*>(&address),
                   sizeof address)
             != 0) {
    return nullptr;
  }
  const std::string said = announcement_line(Announcement{spec.run_id, spec.controller});
  if (::write(connection.get(), said.data(), said.size()) != static_cast<ssize_t>(said.size())) {
    return nullptr;
  }
  return std::unique_ptr<Guardian>(
      new GuardianLink(enclosing.guardian, std::nullopt, std::move(connection), k_finished_line));
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
  for (const auto& run : m_runs) {
    fds.push_back({run.connection.get(), POLLIN, 0});
  }
}

int NestedRuns::wait_ms() const {
  if (!m_listener) {
    return -1;
  }
  const auto since = std::chrono::steady_clock::now() - m_batch_at;
  return std::max(0, k_batch_ms
                         - static_cast<int>(
                             std::chrono::duration_cast<std::chrono::milliseconds>(since).count()));
}

void NestedRuns::handle(const std::vector<struct pollfd>& fds, std::size_t first) {
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

void NestedRuns::settle_dead() {
  if (m_listener) {
    // The runs taken before as well as the batch waiting: a run taken
    // while its controller lived is read again now that it may be gone.
    std::vector<std::size_t> taken(m_runs.size());
    for (std::size_t i = 0; i < taken.size(); ++i) {
      taken[i] = i;
    }
    read_runs(taken);
    take_batch();
  }
}

void NestedRuns::withdraw() {
  m_runs.clear();
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

void NestedRuns::take_batch() {
  const std::size_t before = m_runs.size();
  accept_runs();
  std::vector<std::size_t> taken;
  for (std::size_t i = before; i < m_runs.size(); ++i) {
    taken.push_back(i);
  }
  read_runs(taken);
}

void NestedRuns::accept_runs() {
  for (;;) {
    UniqueFd connection(
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

void NestedRuns::read_runs(const std::vector<std::size_t>& indexes) {
  std::vector<std::size_t> ended;
  for (std::size_t i : indexes) {
    Run& run = m_runs[i];
    char buffer[256];
    for (;;) {
      const ssize_t n = ::read(run.connection.get(), buffer, sizeof buffer);
      if (n > 0) {
        run.said.append(buffer, static_cast<std::size_t>(n));
        run.done = run.done || says_finished(run.said);
        if (run.said.size() > k_max_said) {
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

void NestedRuns::act_on(const std::string& said) {
  const auto announced = parse_announcement(said);
  if (!announced) {
    return;  // it died before it announced itself: nothing of it exists
  }
  take_down_lost_run(m_spec.state_dir, announced->run_id, Membership{}, m_self,
                     [&](const RunRecord& record) {
                       return guards_nested_run(m_spec.address, record, announced->controller);
                     });
}

}  // namespace treeguard::platform
