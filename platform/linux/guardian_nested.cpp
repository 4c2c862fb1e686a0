// The guardian's nested side (guardian_nested.hpp). One file over 500 lines
// because it is one state machine over one set of runs: the connections it
// takes, the announcements it answers, the records it holds and writes, and
// the nested runs it acts for when their controller dies all read and change
// the same NestedRuns state.
#include "linux/guardian_nested.hpp"

#include "gate.hpp"
#include "linux/lost_run.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "nesting.hpp"
#include "record.hpp"
#include "record_store.hpp"
#include "signal_name.hpp"

#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

// Say `line` as say() does, passing `connection` itself along (SCM_RIGHTS):
// the guardian that takes the run holds this end, so this process's exit
// is no hang-up that wakes it (its pidfd does).
bool say_passing_own_end(int connection, const std::string& line) {
  struct iovec data = {const_cast<char*>(line.data()), line.size()};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  struct msghdr message {};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(header), &connection, sizeof connection);
  return ::sendmsg(connection, &message, MSG_DONTWAIT | MSG_NOSIGNAL)
         == static_cast<ssize_t>(line.size());
}

// What a connection has for this guardian now, appended to what it said
// before: some, none yet, or nothing more (it ended, or failed). With
// `passed`, a descriptor the peer passed with it (SCM_RIGHTS: one; the
// kernel drops any more) goes there, unless one came already.
enum class Received { some, none_yet, ended };
Received receive_now(int connection, std::string& said, UniqueFd* passed = nullptr) {
  char buffer[4096];
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  for (;;) {
    struct iovec data = {buffer, sizeof buffer};
    struct msghdr message {};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = passed != nullptr ? control : nullptr;
    message.msg_controllen = passed != nullptr ? sizeof control : 0;
    const ssize_t n = ::recvmsg(connection, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    for (struct cmsghdr* header = passed != nullptr && n > 0 ? CMSG_FIRSTHDR(&message) : nullptr;
         header != nullptr; header = CMSG_NXTHDR(&message, header)) {
      if (header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS
          && header->cmsg_len == CMSG_LEN(sizeof(int))) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(header), sizeof fd);
        UniqueFd received(fd);
        if (!*passed) {
          *passed = std::move(received);
        }
      }
    }
    if (n > 0) {
      said.append(buffer, static_cast<std::size_t>(n));
      return Received::some;
    }
    return n == 0 || errno != EAGAIN ? Received::ended : Received::none_yet;
  }
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
    fds.push_back({taken.hung_up ? -1 : taken.connection.get(), POLLIN, 0});
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
  auto fired = [&](std::size_t at) {
    return at < fds.size() && fds[at].revents != 0;
  };
  // What taken runs sent (evidence) first, then their deaths: a run that
  // died is acted for before any new connection is answered.
  std::vector<Taken> dead;
  for (std::size_t i = m_taken.size(); i-- > 0;) {
    if ((fired(taken_at + 2 * i + 1) || fired(taken_at + 2 * i)) && !m_taken[i].hung_up) {
      read_requests(m_taken[i]);
    }
    if (fired(taken_at + 2 * i)) {
      dead.push_back(std::move(m_taken[i]));
      m_taken.erase(m_taken.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const Taken& taken : dead) {
    act_for_lost_nested(taken);
  }
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = m_waiting.size(); i-- > 0;) {
    const bool readable = fired(waiting_at + i);
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
      read_requests(m_taken[i]);
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
  // Each run taken holds three descriptors (its connection, the end its
  // controller passed, its pidfd); the waiting ones two each; the rest is
  // this guardian's own (the gate's watch, its records, its own run's
  // takedown).
  const std::size_t spare = k_reserved_fds + 2 * k_max_waiting + 8;
  return m_fd_limit > spare ? (m_fd_limit - spare) / 3 : 0;
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
                        + std::chrono::milliseconds(k_wait_for_line_ms),
                    {}};
    // A nested run says its line as it connects: most are answered here.
    if (!read_line(waiting)) {
      m_waiting.push_back(std::move(waiting));
    }
  }
}

bool NestedRuns::read_line(Waiting& waiting) {
  for (;;) {
    const Received got = receive_now(waiting.connection.get(), waiting.said, &waiting.passed);
    if (got != Received::some) {
      return got == Received::ended;  // ended, or failed: dropped
    }
    const std::size_t end = waiting.said.find('\n');
    if (end != std::string::npos) {
      answer(waiting, std::string_view(waiting.said).substr(0, end));
      return true;
    }
    if (waiting.said.size() > k_max_protocol_line) {
      return true;  // not a line of the protocol: dropped, never acted on
    }
  }
}

void NestedRuns::answer(Waiting& waiting, std::string_view line) {
  UniqueFd connection = std::move(waiting.connection);
  if (line == k_query_line.substr(0, k_query_line.size() - 1)) {
    tell_held(connection.get());
    return;
  }
  const auto announced = parse_announcement(line);
  if (!announced) {
    say(connection.get(),
        answer_line(Answer{Answer::Kind::not_taken, {}, {}, 0, {}, "not an announcement"}));
    return;
  }
  UniqueFd pidfd;
  const std::string why = refusal(connection.get(), *announced, pidfd);
  if (!why.empty()) {
    say(connection.get(), answer_line(Answer{Answer::Kind::not_taken, {}, {}, 0, {}, why}));
    return;
  }
  const auto refused = gate();
  if (m_own_run_over) {
    // Only a live run encloses: a run that is over (resolved while its
    // controller goes on) guards no nested run.
    say(connection.get(),
        answer_line(
            Answer{Answer::Kind::not_taken, {}, {}, 0, {}, "run " + m_spec.run_id + " is over"}));
    return;
  }
  if (refused) {
    say(connection.get(),
        answer_line(Answer{Answer::Kind::refused, {}, {}, refused->first, refused->second, {}}));
    return;
  }
  // The leaf of the innermost run it runs inside, for --leftovers outer: this
  // run's own, or one this guardian took.
  std::string innermost_leaf;
  if (announced->innermost == m_spec.run_id) {
    innermost_leaf = m_spec.address;
  }
  for (const Taken& taken : m_taken) {
    if (taken.announced.run_id == announced->innermost) {
      innermost_leaf = taken.announced.leaf;
    }
  }
  if (say(connection.get(),
          answer_line(Answer{Answer::Kind::taken, m_self, innermost_leaf, 0, {}, {}}))) {
    m_taken.push_back(Taken{std::move(connection),
                            std::move(waiting.passed),
                            std::move(pidfd),
                            *announced,
                            unix_time_ns(),
                            {},
                            false,
                            {}});
  }
}

std::optional<std::pair<int, std::vector<std::string>>> NestedRuns::gate() {
  const auto now = std::chrono::steady_clock::now();
  if (!m_changes) {
    m_changes.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (m_changes
        && ::inotify_add_watch(m_changes.get(), m_spec.state_dir.c_str(),
                               IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE
                                   | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
               < 0) {
      m_changes.reset();
    }
  }
  bool changed = !m_changes;
  alignas(struct inotify_event) char events[4096];
  while (m_changes && ::read(m_changes.get(), events, sizeof events) > 0) {
    changed = true;
  }
  if (m_gate_at && !changed && now - *m_gate_at < std::chrono::milliseconds(k_gate_ms)) {
    return m_refused;
  }
  const RecordStore store(m_spec.state_dir);
  const std::vector<StoredRecord> open = store.list();
  // A resolved or finished record is kept apart from the open ones: this
  // run's own, open and not over, or it is over.
  m_own_run_over = std::none_of(open.begin(), open.end(), [&](const StoredRecord& stored) {
    return stored.record && stored.record->run_id == m_spec.run_id && !run_is_over(*stored.record);
  });
  const GateVerdict verdict = evaluate_gate(open, *make_host_view());
  m_refused.reset();
  if (!verdict.open()) {
    std::vector<std::string> lines;
    for (const GateFinding& finding : verdict.findings) {
      lines.push_back((verdict.corrupt() ? "error: " : "dispatch refused: ") + finding.line);
    }
    m_refused.emplace(verdict.exit_code(), std::move(lines));
  }
  m_gate_at = now;
  return m_refused;
}

void NestedRuns::tell_held(int connection) {
  for (const Taken& taken : m_taken) {
    if (!say(connection, held_line(serialize_record(held_record(taken))))) {
      return;
    }
  }
  say(connection, std::string(k_end_of_held));
}

RunRecord NestedRuns::held_record(const Taken& taken) {
  if (taken.written) {
    return *taken.written;
  }
  if (!m_own_ids) {
    if (auto own = RecordStore(m_spec.state_dir).load(m_spec.run_id)) {
      m_own_ids = std::move(*own);
    }
  }
  const Announcement& run = taken.announced;
  RunRecord record;
  record.run_id = run.run_id;
  if (m_own_ids) {
    record.boot_id = m_own_ids->boot_id;
    record.machine_id = m_own_ids->machine_id;
    record.pid_ns = m_own_ids->pid_ns;
    record.pid_ns_init = m_own_ids->pid_ns_init;
  }
  record.controller = run.controller;
  record.guardian = m_self;
  record.boundary = BoundaryAddress{BoundaryKind::cgroup, run.leaf, std::nullopt};
  record.command = run.command;
  record.cwd = run.cwd;
  record.drain = run.drain;
  record.phases.push_back(PhaseEntry{"spawn", taken.taken_at});
  return record;
}

void NestedRuns::read_requests(Taken& taken) {
  for (;;) {
    const Received got = receive_now(taken.connection.get(), taken.said);
    if (got != Received::some) {
      taken.hung_up = taken.hung_up || got == Received::ended;
      return;
    }
    for (std::size_t end; (end = taken.said.find('\n')) != std::string::npos;) {
      const std::string line = taken.said.substr(0, end);
      taken.said.erase(0, end + 1);
      say(taken.connection.get(), evidence_answer(keep_evidence(taken, line)));
    }
    if (taken.said.size() > k_max_evidence_line) {
      taken.said.clear();
      taken.hung_up = true;  // not the protocol's: read no more of it
      return;
    }
  }
}

std::optional<std::string> NestedRuns::keep_evidence(Taken& taken, std::string_view line) {
  const auto evidence = parse_evidence(line);
  if (!evidence) {
    return std::string("not a line of the protocol");
  }
  auto sent = parse_record(evidence->record_json);
  if (!sent) {
    return "not a record: " + sent.error().message();
  }
  if (!names_taken_run(*sent, taken.announced)) {
    return std::string("not the record of the run announced on this connection");
  }
  // What this guardian knows better than the run: who its controller is
  // (the peer), who guards it, and where it runs.
  const RunRecord read = held_record(taken);
  RunRecord entry = std::move(*sent);
  entry.controller = taken.announced.controller;
  entry.guardian = m_self;
  entry.boot_id = read.boot_id;
  entry.machine_id = read.machine_id;
  entry.pid_ns = read.pid_ns;
  entry.pid_ns_init = read.pid_ns_init;
  entry.reaper.reset();
  entry.members.clear();
  entry.nested.clear();
  const RecordStore store(m_spec.state_dir);
  auto kept = NestedRecordPlace(store, m_spec.run_id)
                  .replace_if_unchanged(read, entry,
                                        evidence->durable ? Durability::durable : Durability::lazy);
  if (!kept) {
    return kept.error().message();
  }
  if (!*kept) {
    return "the record of run " + m_spec.run_id + " no longer holds this run's as it was written";
  }
  taken.written = std::move(entry);
  return std::nullopt;
}

std::string NestedRuns::refusal(int connection, const Announcement& announced,
                                UniqueFd& pidfd) const {
  if (!validate_cgroup_address(announced.leaf, announced.run_id)) {
    return "not a leaf of run " + announced.run_id + ": " + announced.leaf;
  }
  // Never a leaf outside the one this guardian guards.
  if (!signal_named(announced.drain.signal)) {
    return "not a signal: " + announced.drain.signal;
  }
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
  if (taken.written && taken.written->disposition != Disposition::pending) {
    return;  // the run ended, and its end is written
  }
  // The common end: the run removed its leaf (or never made it); or the
  // leaf was emptied with this guardian's own (its takedown covers it).
  if (auto populated = cgroup_populated(taken.announced.leaf); populated && !*populated) {
    return;
  }
  const RunRecord read = held_record(taken);
  if (read.boot_id.empty()) {
    return;  // this run's own record cannot be read: no durable authority here
  }
  const pid_t helper = m_guarding ? ::fork() : -1;
  if (helper > 0) {
    m_helpers.push_back(helper);
    return;
  }
  take_precedence();
  const RecordStore store(m_spec.state_dir);
  take_down_lost_record(NestedRecordPlace(store, m_spec.run_id), read, Membership{}, std::nullopt,
                        m_self);
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
// guards itself, and for its evidence to be written.
constexpr int k_answer_ms = 5000;
constexpr int k_evidence_ms = 30000;

// The line `connection` says next, within `ms`; nullopt when none comes
// (the other end gone, too slow, or a line longer than `max`). `said` holds
// what it said and was not taken yet: what comes after the line stays there
// for the next call.
std::optional<std::string> next_line(int connection, std::string& said, int ms, std::size_t max) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    if (const auto end = said.find('\n'); end != std::string::npos) {
      std::string line = said.substr(0, end);
      said.erase(0, end + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    struct pollfd one = {connection, POLLIN, 0};
    if (said.size() > max || left.count() <= 0
        || (::poll(&one, 1, static_cast<int>(left.count())) < 0 && errno != EINTR)
        || receive_now(connection, said) == Received::ended) {
      return std::nullopt;
    }
  }
}

// The controller's handle on the enclosing run's guardian that took its
// run: that guardian holds the run's record and guards it (it acts on this
// process's death, not on the connection), and the run sends it what
// evidence needs. The connection hangs up when that guardian is gone.
class TakenBy final : public Guardian {
public:
  TakenBy(ProcessIdentity guardian, std::string run, std::string innermost_leaf,
          UniqueFd connection, std::string said)
      : m_guardian(guardian), m_run(std::move(run)), m_innermost_leaf(std::move(innermost_leaf)),
        m_connection(std::move(connection)), m_said(std::move(said)) {}

  ProcessIdentity identity() const override { return m_guardian; }
  void dismiss() override { m_connection.reset(); }
  void keep_armed() override {}
  std::optional<std::string> holding_run() const override { return m_run; }
  std::optional<std::string> innermost_leaf() const override {
    return m_innermost_leaf.empty() ? std::nullopt : std::optional<std::string>(m_innermost_leaf);
  }
  int gone_fd() const override { return m_connection.get(); }

  Result<void> keep_in_enclosing(const RunRecord& record, bool durable) override {
    // What the enclosing record keeps of a nested run: no members (the
    // authority names a sample of them), COMMAND as announced.
    RunRecord kept = record;
    kept.members.clear();
    const std::string line = evidence_line(serialize_record(kept), durable);
    if (!m_connection || !say_all(line)) {
      return fail(errno_error(ENOTCONN, "the enclosing run's guardian is gone"));
    }
    const auto answered = next_line(m_connection.get(), m_said, k_evidence_ms, k_max_protocol_line);
    const auto parsed = answered ? parse_evidence_answer(*answered) : std::nullopt;
    if (!parsed) {
      return fail(errno_error(ENOTCONN, "the enclosing run's guardian did not answer"));
    }
    if (*parsed) {
      return fail(plain_error("run " + m_run + "'s guardian did not write it: " + **parsed));
    }
    return {};
  }

private:
  // A line longer than a socket buffer is said in pieces, each waited for.
  bool say_all(const std::string& line) {
    std::size_t sent = 0;
    while (sent < line.size()) {
      const ssize_t n =
          ::send(m_connection.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno == EAGAIN) {
        struct pollfd one = {m_connection.get(), POLLOUT, 0};
        if (::poll(&one, 1, k_evidence_ms) <= 0) {
          return false;
        }
        continue;
      }
      if (n <= 0) {
        return false;
      }
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }

  ProcessIdentity m_guardian;
  std::string m_run;
  std::string m_innermost_leaf;
  UniqueFd m_connection;
  std::string m_said;  // what the guardian said that was not read as a line yet
};

// What the guardian of `enclosing` answers the announcement of `spec`'s
// run: nullopt when nobody listens there (that run is over, its guardian
// is gone, a run that does not guard) or when it does not answer.
std::optional<Enclosed> announce_to(const GuardianSpec& spec, const std::string& enclosing) {
  struct sockaddr_un address {};
  if (!socket_address(nested_runs_socket(spec.state_dir, enclosing), address)) {
    return std::nullopt;
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
    return std::nullopt;
  }
  const std::string innermost = spec.enclosing.empty() ? std::string() : spec.enclosing.front();
  const std::string announcement = announcement_line(Announcement{
      spec.run_id, spec.controller, spec.address, innermost, spec.drain, spec.cwd, spec.command});
  if (!say_passing_own_end(connection.get(), announcement)) {
    return std::nullopt;
  }
  std::string said;
  const auto line = next_line(connection.get(), said, k_answer_ms, k_max_protocol_line);
  auto answered = line ? parse_answer(*line) : std::nullopt;
  if (!answered) {
    return std::nullopt;
  }
  Enclosed enclosed;
  switch (answered->kind) {
  case Answer::Kind::taken:
    if (answered->guardian.pid != peer.pid) {
      return std::nullopt;
    }
    enclosed.guardian =
        std::make_unique<TakenBy>(answered->guardian, enclosing, answered->innermost_leaf,
                                  std::move(connection), std::move(said));
    break;
  case Answer::Kind::refused:
    enclosed.refused = answered->exit_code;
    enclosed.findings = std::move(answered->lines);
    break;
  case Answer::Kind::not_taken:
    enclosed.why_not = "run " + enclosing + "'s guardian: " + answered->why;
    break;
  }
  return enclosed;
}

}  // namespace

}  // namespace treeguard::platform

namespace treeguard {

Enclosed announce_to_enclosing(const GuardianSpec& spec) {
  Enclosed none;
  if (spec.kind != BoundaryKind::cgroup || spec.controller.pid == 0) {
    return none;
  }
  for (const auto& enclosing : spec.enclosing) {
    auto answered = platform::announce_to(spec, enclosing);
    if (answered && (answered->guardian || answered->refused)) {
      return std::move(*answered);
    }
    if (answered && none.why_not.empty()) {
      none.why_not = answered->why_not;
    }
  }
  if (none.why_not.empty()) {
    none.why_not = "no enclosing run's guardian answered";
  }
  return none;
}

std::vector<RunRecord> records_held_for(const std::filesystem::path& state_dir,
                                        const std::string& run_id) {
  std::vector<RunRecord> held;
  struct sockaddr_un address {};
  if (!platform::socket_address(nested_runs_socket(state_dir, run_id), address)) {
    return held;
  }
  platform::UniqueFd connection(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!connection
      || ::connect(connection.get(), reinterpret_cast<const struct sockaddr*>(&address),
                   sizeof address)
             != 0
      || !platform::say(connection.get(), std::string(k_query_line))) {
    return held;
  }
  std::string said;
  while (auto line = platform::next_line(connection.get(), said, 1000, k_max_evidence_line)) {
    auto json = parse_held(*line);
    if (!json) {
      break;  // ".": all told (or not the protocol)
    }
    // Untrusted like any record: read only if it parses whole.
    if (auto record = parse_record(*json)) {
      held.push_back(std::move(*record));
    }
  }
  return held;
}

}  // namespace treeguard
