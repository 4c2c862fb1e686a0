// The pid-namespace boundary (pid_namespace_boundary.hpp). One file over 500
// lines because the controller's side and the init's side (what the init
// runs after the clone, and its drain after the controller's death) speak
// one private protocol over one control pipe, kept in one place.
#include "linux/pid_namespace_boundary.hpp"

#include "linux/graceful_stop.hpp"
#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "record.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>

namespace treeguard::platform {

namespace {

constexpr std::uint64_t k_namespaces = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS;

// Write `text` whole to `path`; 0 or the errno. Async-signal-safe.
int write_proc_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return errno;
  }
  ssize_t n = ::write(fd, text.data(), text.size());
  int error = n == static_cast<ssize_t>(text.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return error;
}

// The namespaces' setup, in the cloned child (PID 1 of the new pid
// namespace, with every capability in the new user namespace only): uid and
// gid mapped to themselves, one id each (setgroups denied, as an ordinary
// user must), the mounts made private, and a /proc of the new pid
// namespace over /proc. Returns 0, or the failed step's letter
// (child_setup_step) with its errno in *error. Async-signal-safe.
char namespace_setup(const std::string& uid_map, const std::string& gid_map, int* error) {
  if ((*error = write_proc_file("/proc/self/uid_map", uid_map)) != 0) {
    return 'U';
  }
  if ((*error = write_proc_file("/proc/self/setgroups", "deny")) != 0
      || (*error = write_proc_file("/proc/self/gid_map", gid_map)) != 0) {
    return 'G';
  }
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    *error = errno;
    return 'M';
  }
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    *error = errno;
    return 'P';
  }
  return 0;
}

// A failed step, as spawn() reads it from the error pipe: letter, errno.
void report_step(int error_pipe, char step, int error) {
  char message[1 + sizeof error];
  message[0] = step;
  std::memcpy(message + 1, &error, sizeof error);
  (void)::write(error_pipe, message, sizeof message);
}

// Close every descriptor but the (sorted, distinct) ones in `keep`.
void close_all_but(int a, int b, int c) {
  int keep[3] = {a, b, c};
  std::sort(keep, keep + 3);
  unsigned from = 0;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) {
      ::syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0U);
    }
    from = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0U, 0U);
}

// The signal the init is sent when the controller dies (PR_SET_PDEATHSIG):
// blocked, and read from its signalfd like SIGCHLD. One that no terminal
// and no service manager sends; the init acts on it only when it comes from
// outside the namespace.
int controller_died_signal() {
  return SIGRTMAX;
}

// The drain's signal, sent by the init: the one graceful stop of every
// boundary (graceful_stop.hpp) over every live process of the namespace
// (its own /proc) but the init itself. A run nested in this one whose
// controller lives is spared: its controller gets the signal and stops its
// own tree with its own signal and grace (DESIGN.md [drain]); the force,
// the init's end, covers every process. The init may allocate: the
// controller that cloned it is single-threaded.
void signal_namespace(int signal) {
  const pid_t init = ::getpid();
  (void)signal_each(
      [init] {
        auto processes = list_processes();
        processes.erase(std::remove_if(processes.begin(), processes.end(),
                                       [init](const ProcStat& stat) {
                                         return stat.pid == init || !stat.alive();
                                       }),
                        processes.end());
        return processes;
      },
      signal);
}

// The controller died: the init drains the namespace as the controller
// would have (DESIGN.md [guardian]): the run's signal (signal_namespace()),
// then a wait, reaping, for them to end, up to the grace. Then it exits,
// and the kernel kills whatever is left in a namespace whose init died.
[[noreturn]] void drain_after_controller(int sigchld_fd, const InitDrain& drain) {
  if (drain.signal != SIGKILL) {
    signal_namespace(drain.signal);
  }
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const long long until = now.tv_sec * 1000LL + now.tv_nsec / 1'000'000 + drain.grace_ms;
  for (;;) {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG | __WALL)) > 0 || (pid < 0 && errno == EINTR)) {
    }
    if (pid < 0 && errno == ECHILD) {
      ::_exit(0);  // every process of the namespace ended in the grace
    }
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const long long left = until - (now.tv_sec * 1000LL + now.tv_nsec / 1'000'000);
    if (drain.signal == SIGKILL || left <= 0) {
      ::_exit(125);
    }
    struct pollfd chld = {sigchld_fd, POLLIN, 0};
    if (::poll(&chld, 1, static_cast<int>(std::min(left, 100LL))) > 0) {
      struct signalfd_siginfo info;
      (void)::read(sigchld_fd, &info, sizeof info);
    }
  }
}

// The init: PID 1 of the namespace. It starts COMMAND, reaps every process
// of the namespace (orphans reparent to it), tells the controller
// COMMAND's wait status, does what the controller asks on the control
// pipe, and exits once it has no child left: the namespace is empty. Its
// own signals are left at their default actions, which the kernel ignores
// for a namespace's init (a terminal's Ctrl-C reaches COMMAND, in the same
// process group, not the init). SIGKILL from the controller ends it, and
// with it, the kernel kills every process in the namespace. The
// controller's death (its control pipe's end, or the death signal from
// outside the namespace) makes it drain the namespace first.
[[noreturn]] void namespace_init(const ChildLaunch& launch, int control_fd, int status_fd,
                                 const std::string& uid_map, const std::string& gid_map,
                                 const InitDrain& drain) {
  sigset_t watched;
  sigemptyset(&watched);
  sigaddset(&watched, SIGCHLD);
  sigaddset(&watched, controller_died_signal());
  ::sigprocmask(SIG_SETMASK, &watched, nullptr);
  // The death signal fires when the thread that cloned us exits:
  // treeguard's controller is single-threaded, so that is its death.
  ::prctl(PR_SET_PDEATHSIG, controller_died_signal());
  // Dead already, before the prctl: the control pipe has no writer.
  struct pollfd controller = {control_fd, POLLIN, 0};
  if (::poll(&controller, 1, 0) == 1 && (controller.revents & POLLHUP) != 0) {
    ::_exit(125);
  }
  int error = 0;
  if (char step = namespace_setup(uid_map, gid_map, &error); step != 0) {
    report_step(launch.error_pipe, step, error);
    ::_exit(125);
  }
  if (launch.hold_write >= 0) {
    ::close(launch.hold_write);  // the controller's end
  }
  int sigchld_fd = ::signalfd(-1, &watched, SFD_CLOEXEC);
  pid_t command = sigchld_fd < 0 ? -1 : ::fork();
  if (command < 0) {
    report_step(launch.error_pipe, 'F', errno);
    ::_exit(125);
  }
  if (command == 0) {
    ::close(control_fd);
    ::close(status_fd);
    ::close(sigchld_fd);
    ChildLaunch as_command = launch;
    as_command.hold_write = -1;
    child_exec(as_command);
  }
  // COMMAND has what it inherits from treeguard (a jobserver's pipe, the
  // terminal); the init keeps only its own three.
  close_all_but(control_fd, status_fd, sigchld_fd);
  bool command_reaped = false;
  for (;;) {
    struct pollfd fds[2] = {{sigchld_fd, POLLIN, 0}, {control_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      ::_exit(125);
    }
    if ((fds[0].revents & POLLIN) != 0) {
      struct signalfd_siginfo info {};
      (void)::read(sigchld_fd, &info, sizeof info);
      if (info.ssi_signo == static_cast<unsigned>(controller_died_signal()) && info.ssi_pid == 0) {
        // From outside the namespace (pid 0 here): the kernel, as the
        // controller died.
        drain_after_controller(sigchld_fd, drain);
      }
      // COMMAND's status {wait status, last}: `last` says the namespace is
      // empty with it, and the init exits right after, so the controller
      // need not drain what is not there.
      int report[2] = {0, 0};
      bool command_now = false;
      bool empty = false;
      for (;;) {
        int status = 0;
        pid_t pid = ::waitpid(-1, &status, WNOHANG | __WALL);
        if (pid > 0) {
          if (pid == command) {
            command_reaped = command_now = true;
            report[0] = status;
          }
          continue;
        }
        if (pid < 0 && errno == EINTR) {
          continue;
        }
        empty = pid < 0 && errno == ECHILD;
        break;
      }
      if (command_now) {
        report[1] = empty ? 1 : 0;
        (void)::write(status_fd, report, sizeof report);
      }
      if (empty) {
        ::_exit(0);  // no process left in the namespace
      }
    }
    if ((fds[1].revents & (POLLIN | POLLHUP)) != 0) {
      char request[1 + sizeof(int)];
      ssize_t n = ::read(control_fd, request, sizeof request);
      if (n == 0) {
        drain_after_controller(sigchld_fd, drain);  // the controller is gone
      }
      if (n != static_cast<ssize_t>(sizeof request)) {
        continue;
      }
      int number = 0;
      std::memcpy(&number, request + 1, sizeof number);
      if (request[0] == 'F' && !command_reaped) {
        ::kill(command, number);  // our unreaped child: its pid is its own
      } else if (request[0] == 'C') {
        signal_namespace(number);
      }
    }
  }
}

// An integer from /proc/sys, or nullopt where the file is absent.
std::optional<long> read_sysctl(const char* path) {
  std::ifstream in(path);
  long value = 0;
  if (in >> value) {
    return value;
  }
  return std::nullopt;
}

// What the host's settings say about user namespaces, for a refusal.
std::string userns_settings() {
  std::string out;
  if (auto max = read_sysctl("/proc/sys/user/max_user_namespaces"); max && *max == 0) {
    out += "; user.max_user_namespaces is 0";
  }
  if (auto clone = read_sysctl("/proc/sys/kernel/unprivileged_userns_clone");
      clone && *clone == 0 && ::geteuid() != 0) {
    out += "; kernel.unprivileged_userns_clone is 0";
  }
  if (auto apparmor = read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
      apparmor && *apparmor != 0 && ::geteuid() != 0) {
    out += "; kernel.apparmor_restrict_unprivileged_userns is 1 (AppArmor restricts them)";
  }
  return out;
}

std::string id_map(unsigned id) {
  return fmt::format("{} {} 1\n", id, id);
}

}  // namespace

Result<void> PidNamespaceBoundary::form() {
  if (m_control_write) {
    return {};
  }
  int control[2];
  int status[2];
  if (::pipe2(control, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe2"));
  }
  m_control_read.reset(control[0]);
  m_control_write.reset(control[1]);
  if (::pipe2(status, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe2"));
  }
  m_status_read.reset(status[0]);
  m_status_write.reset(status[1]);
  // The controller never blocks on the init.
  ::fcntl(m_control_write.get(), F_SETFL, O_NONBLOCK);
  ::fcntl(m_status_read.get(), F_SETFL, O_NONBLOCK);
  m_uid_map = id_map(::geteuid());
  m_gid_map = id_map(::getegid());
  return {};
}

std::string PidNamespaceBoundary::address() const {
  return m_child > 0 ? fmt::format("init pid {}", m_child) : std::string(k_init_pending);
}

std::optional<std::string> PidNamespaceBoundary::standing_authority() const {
  return std::string("the controller's death kills the pid namespace: its init drains it (the "
                     "run's signal, then its grace) and exits, and the kernel kills every process "
                     "left in a namespace whose init died");
}

std::uint64_t PidNamespaceBoundary::spawn_namespaces() const {
  return k_namespaces;
}

void PidNamespaceBoundary::run_child(const ChildLaunch& launch) {
  m_control_write.reset();  // the controller's ends
  m_status_read.reset();
  namespace_init(launch, m_control_read.get(), m_status_write.get(), m_uid_map, m_gid_map, m_drain);
}

Result<long> PidNamespaceBoundary::spawn(const SpawnSpec& spec) {
  TG_TRY(form());
  m_drain.signal = signal_number(spec.stop_signal);
  m_drain.grace_ms = static_cast<long long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(spec.grace_after_death).count());
  auto init = LinuxBoundary::spawn(spec);
  m_control_read.reset();  // the init's ends
  m_status_write.reset();
  if (!init) {
    return init;
  }
  m_init_pidfd.reset(::fcntl(m_child_pidfd.get(), F_DUPFD_CLOEXEC, 0));
  // COMMAND (the init's child by now: the init forked it before it exec'd)
  // is a member from its start.
  const auto alive = scan();
  return alive.empty() ? *init : alive.front().pid;
}

int PidNamespaceBoundary::tell_init(char what, int number) {
  if (!m_control_write || m_child <= 0 || m_child_reaped) {
    return ESRCH;
  }
  char request[1 + sizeof number];
  request[0] = what;
  std::memcpy(request + 1, &number, sizeof number);
  ssize_t n = ::write(m_control_write.get(), request, sizeof request);
  if (n == static_cast<ssize_t>(sizeof request)) {
    return 0;
  }
  return n < 0 ? (errno == EPIPE ? ESRCH : errno) : EIO;
}

int PidNamespaceBoundary::signal_command(int number) {
  return tell_init('F', number);
}

void PidNamespaceBoundary::collect_command_status() {
  while (m_status_read && !m_status) {
    int report[2] = {0, 0};
    ssize_t n = ::read(m_status_read.get(), report, sizeof report);
    if (n == static_cast<ssize_t>(sizeof report)) {
      note_command_exit(report[0]);
      m_init_exiting = report[1] != 0;
    } else if (n == 0) {
      m_status_read.reset();  // the init is gone; its own exit follows
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
}

Event::Kind PidNamespaceBoundary::on_watch() {
  collect_command_status();
  if (m_init_exiting && !m_child_reaped && m_init_pidfd) {
    // COMMAND was the last: the init is exiting. Wait for that (bounded),
    // so that the run ends as one whose boundary emptied with COMMAND.
    struct pollfd exited = {m_init_pidfd.get(), POLLIN, 0};
    (void)::poll(&exited, 1, 1000);
  }
  return Event::Kind::changed;
}

std::vector<MemberInfo> PidNamespaceBoundary::scan() {
  std::vector<MemberInfo> out;
  if (m_child <= 0 || m_child_reaped) {
    return out;
  }
  for (const auto& stat :
       walk_members(m_child, CommandGroup{m_child_pgid, m_child_sid}, m_members)) {
    if (const MemberInfo* member = m_members.find(ProcessIdentity{stat.pid, stat.start_time})) {
      out.push_back(*member);
    }
  }
  return out;
}

std::vector<MemberInfo> PidNamespaceBoundary::alive_members() {
  return scan();
}

Result<void> PidNamespaceBoundary::signal_all(Signal signal) {
  take_precedence();
  scan();
  int error = tell_init('C', signal_number(signal));
  if (error != 0 && error != ESRCH) {
    return fail(errno_error(error, "ask the namespace's init to signal every process"));
  }
  return {};
}

Result<void> PidNamespaceBoundary::kill_all() {
  take_precedence();  // no census here (Boundary::kill_all): the init's death kills the rest
  if (m_child <= 0 || m_child_reaped || !m_init_pidfd) {
    return {};
  }
  int error = pidfd_signal(m_init_pidfd.get(), SIGKILL);
  if (error != 0 && error != ESRCH) {
    return fail(errno_error(error, fmt::format("SIGKILL the namespace's init (pid {})", m_child)));
  }
  return {};
}

Result<bool> PidNamespaceBoundary::is_empty() {
  reap();
  return m_child <= 0 || m_child_reaped;
}

std::optional<std::string> pid_namespace_unavailable() {
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) {
    return fmt::format("pipe2: {}", std::strerror(errno));
  }
  UniqueFd read_end(error_pipe[0]);
  UniqueFd write_end(error_pipe[1]);
  const std::string uid_map = id_map(::geteuid());
  const std::string gid_map = id_map(::getegid());
  CloneArgs args{};
  args.flags = k_namespaces;
  args.exit_signal = SIGCHLD;
  long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid < 0) {
    const int error = errno;
    return fmt::format("clone3 into a new user+pid+mount namespace: {}{}{}", std::strerror(error),
                       error == EPERM ? " (a seccomp filter, as in many containers, or a chroot)"
                                      : "",
                       userns_settings());
  }
  if (pid == 0) {
    int error = 0;
    char step = namespace_setup(uid_map, gid_map, &error);
    if (step != 0) {
      report_step(write_end.get(), step, error);
    }
    ::_exit(step != 0 ? 1 : 0);
  }
  write_end.reset();
  char message[1 + sizeof(int)];
  ssize_t n;
  do {
    n = ::read(read_end.get(), message, sizeof message);
  } while (n < 0 && errno == EINTR);
  int status = 0;
  while (::waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  if (n == static_cast<ssize_t>(sizeof message)) {
    int error = 0;
    std::memcpy(&error, message + 1, sizeof error);
    return fmt::format("{}: {}{}", child_setup_step(message[0]), std::strerror(error),
                       userns_settings());
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::string("the namespace's first process did not finish its setup");
  }
  return std::nullopt;
}

}  // namespace treeguard::platform
