// The guardian's descriptor setup (DESIGN.md [guardian]): whatever
// numbers its sources arrive on (0-2 among them, when the caller closed its
// standard descriptors) and however few descriptors it may open, a guardian
// that says it started watches the controller's pidfd and the command pipe,
// holds /dev/null on 0-2 and nothing else, and exits when dismissed; one that
// cannot set itself up is an error at start, never a guardian that spins.
#include "in_child.hpp"
#include "linux/proc.hpp"
#include "port/guardian.hpp"
#include "posix/unique_fd.hpp"
#include "record_fixtures.hpp"
#include "record_store.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

using namespace treeguard;

TEST_SUITE_BEGIN("treeguard::platform::linux");

namespace {

std::string fd_target(pid_t pid, int fd) {
  char buffer[PATH_MAX];
  const std::string link = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  return n < 0 ? std::string() : std::string(buffer, static_cast<std::size_t>(n));
}

// Whether a descriptor's target is in /proc: the process-group guardian's
// walks read /proc every few ms from its start, so one may be open at the
// moment the test looks (two unit runs in 14 saw one). Held descriptors are
// what the checks are about; these come and go.
bool of_proc(const std::string& target) {
  return target == "/proc" || target.rfind("/proc/", 0) == 0;
}

// Whether `pid` (started at `start`) is gone, within `ms`: a bounded poll.
bool gone_within(pid_t pid, unsigned long long start, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    auto stat = platform::read_proc_stat(pid);
    if (!stat || stat->start_time != start || !stat->alive()) {
      return true;
    }
    if (std::chrono::steady_clock::now() > until) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// What a child controller found, as one bit per failed check (0: all held).
enum Failed : int {
  start_failed = 1,
  stdio_not_null = 2,
  pidfd_missing = 4,
  pipe_missing = 8,
  extra_fds = 16,
  not_dismissed = 32,
};

// In a child (its own controller): close the descriptors in `closed` (a
// subset of 0-2), lower RLIMIT_NOFILE to `limit` (0: as is), start a
// guardian and judge it. Returns the Failed bits; 64 + bits when it could
// not start one (an error, as the run's 125), which is allowed.
int controller_child(const std::filesystem::path& state, int closed, rlim_t limit) {
  for (int fd = 0; fd <= 2; ++fd) {
    if ((closed & (1 << fd)) != 0) {
      ::close(fd);
    }
  }
  if (limit != 0) {
    const struct rlimit low = {limit, limit};
    ::setrlimit(RLIMIT_NOFILE, &low);
  }
  auto started = start_guardian(
      GuardianSpec{state, "20261202T000000-1-abcd", BoundaryKind::process_group, ""});
  if (!started || !*started) {
    return 64 | start_failed;
  }
  const pid_t guardian = (*started)->identity().pid;
  const auto start = (*started)->identity().start_time;
  int failed = 0;
  for (int fd = 0; fd <= 2; ++fd) {
    if (fd_target(guardian, fd) != "/dev/null") {
      failed |= stdio_not_null;
    }
  }
  bool pidfd = false;
  bool pipe = false;
  for (int fd = 3; fd < 64; ++fd) {
    const std::string target = fd_target(guardian, fd);
    if (target == "anon_inode:[pidfd]") {
      pidfd = true;
    } else if (target.rfind("pipe:", 0) == 0) {
      pipe = true;
    } else if (!target.empty() && !of_proc(target)) {
      failed |= extra_fds;
    }
  }
  failed |= (pidfd ? 0 : pidfd_missing) | (pipe ? 0 : pipe_missing);
  (*started)->dismiss();
  if (!gone_within(guardian, start, 5000)) {
    failed |= not_dismissed;
    ::kill(guardian, SIGKILL);
  }
  return failed;
}

int judge(int closed, rlim_t limit) {
  test::ScratchDir state;
  return test::exit_status_in_child([&] { return controller_child(state.path(), closed, limit); });
}

// The SigIgn mask of /proc/PID/status, 0 when unreadable.
unsigned long long ignored_signals(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigIgn:", 0) == 0) {
      return std::stoull(line.substr(7), nullptr, 16);
    }
  }
  return 0;
}

// In a child controller that is the subreaper of its guardian: TERM sent
// to the guardian (as systemd sends it to every process of a unit or
// scope it stops) before the dismissal. Returns 0 when TERM is ignored and
// the guardian exits 0 on its dismissal; 1 it does not ignore TERM; 2 it
// died of a signal; 3 other.
int term_to_guardian(const std::filesystem::path& state) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  // A guardian that died of TERM makes the dismissal's write a SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  auto started = start_guardian(
      GuardianSpec{state, "20261202T000000-1-abce", BoundaryKind::process_group, ""});
  if (!started || !*started) {
    return 3;
  }
  const pid_t guardian = (*started)->identity().pid;
  int failed = (ignored_signals(guardian) & (1ULL << (SIGTERM - 1))) != 0 ? 0 : 1;
  ::kill(guardian, SIGTERM);
  // A pending TERM is acted on before the guardian can read its dismissal.
  (*started)->dismiss();
  int status = 0;
  while (::waitpid(guardian, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    failed |= 2;
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    failed |= 3;
  }
  return failed;
}

// A member in a process group of its own, as a run's COMMAND is: started
// by the controller, so never older than it (a record naming a process
// older than its controller is refused, as it should be). It does not hold
// `report`, so the pipe ends with the controller and its guardian.
pid_t start_member(int report) {
  const pid_t member = ::fork();
  if (member == 0) {
    // It dies of the drain's TERM as a member does, not in the test
    // framework's handler, which would report a crash from this copy.
    ::signal(SIGTERM, SIG_DFL);
    ::close(report);
    ::setpgid(0, 0);
    for (;;) {
      ::pause();
    }
  }
  if (member > 0) {
    ::setpgid(member, member);
  }
  return member;
}

// A controller step failed: its member goes with it, and `code` tells the
// test which step.
[[noreturn]] void end_controller(pid_t member, int code) {
  ::kill(member, SIGKILL);
  ::_exit(code);
}

// What a controller sends its test on `report` once its guardian started.
struct Started {
  pid_t guardian;
  pid_t member;
  pid_t holder = -1;  // Guarded::pipe_held's child, if any
};

// The controller of a pending run: it starts the run's member (its process
// group), records the run, starts its guardian, sends the guardian's and the
// member's pids on `report`, then, `armed` or not, lets the guardian object
// go (as RunSteps does when run() returns) and exits. Exits 2-5, the member
// killed, when a step fails (the test reports that code).
// What the guardian is started for, and the record it finds once the
// controller is gone: by default a process group and a pending record of one.
struct Guarded {
  BoundaryKind kind = BoundaryKind::process_group;
  std::string address;
  Disposition disposition = Disposition::pending;
  // A child of the controller, forked once the guardian started and never
  // exec'ing, holds the guardian's command pipe open after the controller's
  // death: the guardian sees that death by its pidfd, not by the pipe's EOF.
  bool pipe_held = false;
};

[[noreturn]] void controller_exits(const std::filesystem::path& state, int report, bool armed,
                                   const Guarded& guarded) {
  const pid_t member = start_member(report);
  if (member < 0) {
    ::_exit(2);
  }
  const std::string run_id = "20261202T000000-1-abcf";
  RunRecord record = test::minimal_record(run_id);
  auto self = platform::read_proc_stat(::getpid());
  auto led = platform::read_proc_stat(member);
  if (!self || !led) {
    end_controller(member, 3);
  }
  record.controller = {::getpid(), self->start_time};
  test::led_by(record, member, led->start_time);
  record.disposition = guarded.disposition;
  if (!RecordStore(state).save(record, Durability::durable)) {
    end_controller(member, 4);
  }
  auto started = start_guardian(GuardianSpec{state, run_id, guarded.kind, guarded.address});
  if (!started || !*started) {
    end_controller(member, 5);
  }
  Started said{static_cast<pid_t>((*started)->identity().pid), member};
  if (guarded.pipe_held) {
    said.holder = ::fork();
    if (said.holder == 0) {
      ::close(report);
      for (;;) {
        ::pause();  // until the test kills it
      }
    }
  }
  (void)::write(report, &said, sizeof said);
  if (armed) {
    (*started)->keep_armed();
  }
  started->reset();
  ::_exit(0);
}

// In a child that is the subreaper of a controller's guardian and member:
// whether the guardian acted once the controller was gone (1: it killed the
// run's member), or exited without acting (0); 6 and up: the test could not
// tell (16 + the controller's exit code when it sent nothing).
int guardian_acts_after_exit(const std::filesystem::path& state, bool armed,
                             const Guarded& guarded = Guarded{}) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  int report[2];
  if (::pipe(report) != 0) {
    return 6;
  }
  const pid_t controller = ::fork();
  if (controller == 0) {
    ::close(report[0]);
    controller_exits(state, report[1], armed, guarded);
  }
  ::close(report[1]);
  Started said{-1, -1};
  const bool told = ::read(report[0], &said, sizeof said) == sizeof said;
  int status = 0;
  ::waitpid(controller, &status, 0);
  if (!told) {
    return 16 + (WIFEXITED(status) ? WEXITSTATUS(status) : 0);
  }
  // Orphaned by the controller, the guardian and the member are this
  // process's children (so their pids stay theirs until reaped here): the
  // guardian exits once dismissed, or once it has acted. Its pidfd becomes
  // readable when it exits; 60 s bound that wait.
  int result = 0;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, said.guardian, 0));
  struct pollfd exited = {pidfd, POLLIN, 0};
  if (pidfd < 0 || ::poll(&exited, 1, 60'000) != 1) {
    ::kill(said.guardian, SIGKILL);
    result = 7;
  }
  if (pidfd >= 0) {
    ::close(pidfd);
  }
  ::waitpid(said.guardian, &status, 0);
  if (said.holder > 0) {
    // Orphaned to this subreaper, its pid is its own until reaped here.
    ::kill(said.holder, SIGKILL);
    ::waitpid(said.holder, nullptr, 0);
  }
  if (result == 0 && ::waitpid(said.member, &status, WNOHANG) == said.member
      && WIFSIGNALED(status)) {
    return 1;
  }
  ::kill(said.member, SIGKILL);
  ::waitpid(said.member, &status, 0);
  return result;
}

// The run a nested run's leaf is in; its guardian is the test, listening.
const std::string k_enclosing_run = "20261202T000000-1-abd0";
const std::string k_enclosing_leaf = "/sys/fs/cgroup/tg-unit.slice/enclosing";
const std::string k_nested_run = "20261202T000000-1-abd1";

// Listen where the enclosing run's guardian does (nested_runs_socket()).
platform::UniqueFd listen_for_nested(const std::filesystem::path& state) {
  const auto path = nested_runs_socket(state, k_enclosing_run);
  std::filesystem::create_directories(path.parent_path());
  struct sockaddr_un address {};
  address.sun_family = AF_UNIX;
  REQUIRE(path.native().size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, path.c_str(), path.native().size());
  platform::UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(listener);
  REQUIRE(::bind(listener.get(), reinterpret_cast<const struct sockaddr*>(&address), sizeof address)
          == 0);
  REQUIRE(::listen(listener.get(), 4) == 0);
  return listener;
}

// How a nested run's controller ended: taken by the enclosing guardian,
// with a guardian of its own (dismissed and gone), or neither.
enum NestedEnd : int {
  announced = 0,
  not_started = 1,
  own_guardian = 2,
  own_not_gone = 3,
  refused = 4
};

// A nested run's controller (a child): starts its guardian for `leaf`, the
// enclosing run's guardian being this test process (it listens), then lets
// the guardian object go (as RunSteps does).
pid_t start_nested_controller(const std::filesystem::path& state, const std::string& leaf) {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child != 0) {
    return child;
  }
  GuardianSpec spec{state, k_nested_run, BoundaryKind::cgroup, leaf, {k_enclosing_run}};
  const auto self = platform::read_proc_stat(::getpid());
  spec.controller = {::getpid(), self ? self->start_time : 0};
  spec.cwd = "/";
  spec.command = {"cc", "-c", "a b.c"};
  Enclosed enclosed = announce_to_enclosing(spec);
  if (enclosed.refused) {
    ::_exit(refused);
  }
  if (enclosed.guardian) {
    ::_exit(enclosed.guardian->identity().pid == ::getppid() ? announced : not_started);
  }
  auto started = start_guardian(spec);
  if (!started || !*started) {
    ::_exit(not_started);
  }
  const ProcessIdentity guardian = (*started)->identity();
  started->reset();
  ::_exit(gone_within(guardian.pid, guardian.start_time, 5000) ? own_guardian : own_not_gone);
}

// Whether `fd` is readable within `ms`.
bool readable_within(int fd, int ms) {
  struct pollfd ready = {fd, POLLIN, 0};
  return ::poll(&ready, 1, ms) == 1;
}

// What the one run that connected to `listener` said until its end (EOF),
// answered with `answer` once its first line came; each wait bounded by
// 30 s, "<silent>" when one ran out.
std::string heard_until_eof(int listener, const std::string& answer) {
  if (!readable_within(listener, 30'000)) {
    return "<silent>";
  }
  const platform::UniqueFd connection(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  std::string said;
  char buffer[256];
  bool answered = false;
  while (connection && readable_within(connection.get(), 30'000)) {
    const ssize_t n = ::read(connection.get(), buffer, sizeof buffer);
    if (n <= 0) {
      return said;
    }
    said.append(buffer, static_cast<std::size_t>(n));
    if (!answered && said.find('\n') != std::string::npos) {
      answered = ::write(connection.get(), answer.data(), answer.size()) > 0;
    }
  }
  return said + "<silent>";
}

// The announcement `controller` makes for `leaf`, read before it is reaped.
std::string announcement_of(pid_t controller, const std::string& leaf) {
  const auto stat = platform::read_proc_stat(controller);
  return announcement_line(Announcement{k_nested_run,
                                        {controller, stat ? stat->start_time : 0},
                                        leaf,
                                        k_enclosing_run,
                                        {},
                                        "/",
                                        {"cc", "-c", "a b.c"}});
}

// "taken" in the words of this test process, the enclosing guardian.
std::string taken_answer() {
  const auto self = platform::read_proc_stat(::getpid());
  return answer_line(
      Answer{Answer::Kind::taken, {::getpid(), self ? self->start_time : 0}, {}, 0, {}, {}});
}

// The child's exit status; -1 when it did not exit.
int reaped(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("guardian: kept armed, it acts once its controller is gone; dismissed, it does not") {
  // A controller whose own takedown failed (supervise's guardian_must_act)
  // keeps its guardian armed: the object's end must not dismiss it.
  test::ScratchDir armed_state;
  CHECK(
      test::exit_status_in_child([&] { return guardian_acts_after_exit(armed_state.path(), true); })
      == 1);
  test::ScratchDir dismissed_state;
  CHECK(test::exit_status_in_child(
            [&] { return guardian_acts_after_exit(dismissed_state.path(), false); })
        == 0);
}

TEST_CASE(
    "guardian: armed, it never acts on a record it was not started for, nor on a finished one") {
  // Started for a cgroup leaf, it finds a record naming a process group
  // (the record was rewritten since): not its boundary, never acted on.
  test::ScratchDir other_boundary;
  CHECK(test::exit_status_in_child([&] {
          return guardian_acts_after_exit(
              other_boundary.path(), true,
              Guarded{BoundaryKind::cgroup,
                      "/sys/fs/cgroup/tg-unit.slice/treeguard-20261202T000000-1-abcf",
                      Disposition::pending});
        })
        == 0);
  // The controller finished the run (its record is no longer pending) and
  // died before dismissing it: the run's end is written; nothing to take down.
  for (Disposition finished : {Disposition::failed, Disposition::ambiguous}) {
    CAPTURE(disposition_name(finished));
    test::ScratchDir finished_state;
    CHECK(test::exit_status_in_child([&] {
            return guardian_acts_after_exit(finished_state.path(), true,
                                            Guarded{BoundaryKind::process_group, "", finished});
          })
          == 0);
  }
}

TEST_CASE("guardian: the controller's death seen by its pidfd first (a child holds the pipe): it "
          "acts; dismissed, it does not") {
  // The command pipe stays open after the controller's death while a child
  // that has not exec'd yet holds it (COMMAND held before exec): the pidfd
  // tells the death, and only a word in the pipe is a dismissal.
  test::ScratchDir armed_state;
  const Guarded held{BoundaryKind::process_group, "", Disposition::pending, true};
  CHECK(test::exit_status_in_child(
            [&] { return guardian_acts_after_exit(armed_state.path(), true, held); })
        == 1);
  test::ScratchDir dismissed_state;
  CHECK(test::exit_status_in_child(
            [&] { return guardian_acts_after_exit(dismissed_state.path(), false, held); })
        == 0);
}

TEST_CASE("guardian: a nested run announces itself and says nothing more; taken, it starts no "
          "guardian of its own; refused, it starts nothing; not taken, a guardian of its own") {
  // The enclosing guardian acts on the announcing process's death, never on
  // a word: the announcement is all a nested controller says while its run
  // is clean.
  const std::string leaf = k_enclosing_leaf + "/treeguard-" + k_nested_run;
  const struct {
    std::string answer;
    int end;
  } cases[] = {
      {taken_answer(), announced},
      {answer_line(Answer{Answer::Kind::refused, {}, {}, 121, {"dispatch refused: x"}, {}}),
       refused},
      {answer_line(Answer{Answer::Kind::not_taken, {}, {}, 0, {}, "busy"}), own_guardian},
  };
  for (const auto& one : cases) {
    CAPTURE(one.answer);
    test::ScratchDir state;
    const auto listener = listen_for_nested(state.path());
    const pid_t controller = start_nested_controller(state.path(), leaf);
    const std::string announcement = announcement_of(controller, leaf);
    const std::string said = heard_until_eof(listener.get(), one.answer);
    CHECK(reaped(controller) == one.end);
    CHECK(said == announcement);
  }
}

TEST_CASE("guardian: TERM does not end it (systemd stopping the holding unit or scope)") {
  test::ScratchDir state;
  CHECK(test::exit_status_in_child([&] { return term_to_guardian(state.path()); }) == 0);
}

TEST_CASE("guardian: closed standard descriptors are never overwritten (every subset of 0-2)") {
  for (int closed = 0; closed < 8; ++closed) {
    CAPTURE(closed);
    CHECK(judge(closed, 0) == 0);
  }
}

TEST_CASE("guardian: under low descriptor limits it watches or does not start; never spins") {
  for (rlim_t limit : {5, 6, 8, 16, 64, 128}) {
    for (int closed : {0, 3, 7}) {
      CAPTURE(limit);
      CAPTURE(closed);
      const int result = judge(closed, limit);
      // 64 + start_failed: start_guardian said so (the run's 125); any
      // other bit is a guardian that said it started but does not watch.
      CHECK((result == 0 || result == (64 | start_failed)));
    }
  }
}

TEST_SUITE_END();
