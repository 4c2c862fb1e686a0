// What both Linux boundaries share (linux_boundary.hpp): spawn and the wait
// loop. One file over 500 lines because both act on the one child state
// LinuxBoundary keeps (its clone, its reaping, COMMAND's exit); what differs
// per kind is in cgroup_boundary.cpp, process_group_boundary.cpp and
// pid_namespace_boundary.cpp.
#include "linux/linux_boundary.hpp"

#include "linux/proc.hpp"
#include "linux/run_processes.hpp"
#include "linux/signals.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace treeguard::platform {

// Runs in the child, between clone and exec: async-signal-safe calls only.
// With a hold (hold_read >= 0) it waits for the parent's go-ahead before
// exec; a parent that dies or refuses first closes the pipe, and the child
// exits without having run any of COMMAND's code.
[[noreturn]] void child_exec(const ChildLaunch& launch) {
  char* const* argv = launch.argv;
  char* const* envp = launch.envp;
  const int error_pipe = launch.error_pipe;
  int error = 0;
  // "I ran": a child the kernel killed before it ran a single instruction
  // never writes this (see the spawn retry below).
  (void)::write(error_pipe, "A", 1);
  if (launch.procs_fd >= 0) {
    // No CLONE_INTO_CGROUP: join the leaf before exec, before any fork.
    if (::write(launch.procs_fd, "0", 1) != 1) {
      error = errno;
      (void)::write(error_pipe, &error, sizeof error);
      ::_exit(125);
    }
  }
  if (launch.new_group) {
    ::setpgid(0, 0);
  }
  if (launch.hold_read >= 0) {
    if (launch.hold_write >= 0) {
      ::close(launch.hold_write);  // else the parent's death would never read as EOF here
    }
    char go = 0;
    ssize_t n;
    do {
      n = ::read(launch.hold_read, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) {
      ::_exit(125);
    }
  }
  // The caller's dispositions first (SIGPIPE, SIGCHLD: treeguard's own
  // differ), then its mask: nothing treeguard blocked arrives before.
  restore_dispositions();
  ::sigprocmask(SIG_SETMASK, &original_signal_mask(), nullptr);
  int saw_eacces = 0;
  for (const auto& candidate : *launch.candidates) {
    ::execve(candidate.c_str(), argv, envp);
    if (errno == ENOEXEC) {
      // A script without "#!": run it with /bin/sh as shells do.
      std::size_t argc = 0;
      while (argv[argc] != nullptr) {
        ++argc;
      }
      if (argc < 250) {
        const char* sh_argv[256];
        sh_argv[0] = "/bin/sh";
        sh_argv[1] = candidate.c_str();
        for (std::size_t i = 1; i <= argc; ++i) {
          sh_argv[i + 1] = argv[i];
        }
        ::execve("/bin/sh", const_cast<char* const*>(sh_argv), envp);
      }
      errno = EACCES;
    }
    if (errno == EACCES || errno == EPERM || errno == EISDIR) {
      saw_eacces = errno;
    } else if (errno != ENOENT && errno != ENOTDIR) {
      break;
    }
  }
  error = saw_eacces != 0 && (errno == ENOENT || errno == ENOTDIR) ? saw_eacces : errno;
  (void)::write(error_pipe, &error, sizeof error);
  ::_exit(127);
}

std::string_view child_setup_step(char letter) {
  switch (letter) {
  case 'U':
    return "write uid_map";
  case 'G':
    return "write setgroups and gid_map";
  case 'M':
    return "make the mount namespace private";
  case 'P':
    return "mount a fresh /proc";
  case 'F':
    return "fork COMMAND from the namespace's init";
  default:
    return {};
  }
}

namespace {

// Stop treeguard by `number` itself (TSTP, TTIN, TTOU), not SIGSTOP: the
// shell reports a job stopped by SIGSTOP as "Stopped (signal)", $? 147.
// The signal is blocked (read through the signalfd), so it is raised, left
// pending, and unblocked for its default action; execution goes on here
// once a CONT arrives. In an orphaned process group the kernel discards it,
// as it would for COMMAND without treeguard.
void stop_self(int number) {
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, number);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  struct sigaction previous {};
  ::sigaction(number, &default_action, &previous);
  ::kill(::getpid(), number);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::sigprocmask(SIG_BLOCK, &only, nullptr);
  ::sigaction(number, &previous, nullptr);
}

}  // namespace

std::vector<std::string> exec_candidates(const std::string& file) {
  if (file.find('/') != std::string::npos) {
    return {file};
  }
  const char* path = std::getenv("PATH");
  std::string search = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t colon = search.find(':', start);
    std::string dir =
        search.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    out.push_back((dir.empty() ? std::string(".") : dir) + "/" + file);
    if (colon == std::string::npos) {
      break;
    }
    start = colon + 1;
  }
  return out;
}

// COMMAND as the child will exec it, laid out before the clone (the child
// calls nothing that allocates): argv, the places exec tries, and the
// environment with this run's id added to TREEGUARD_RUNS; and COMMAND's
// name and arguments as the kernel will show them after the exec.
struct CommandImage {
  explicit CommandImage(const SpawnSpec& spec);
  CommandImage(const CommandImage&) = delete;
  CommandImage& operator=(const CommandImage&) = delete;

  std::vector<char*> argv;
  std::vector<std::string> candidates;
  std::vector<std::string> environment;
  std::vector<char*> envp;  // into `environment`
  std::string comm;         // the file's base name, as exec names it
  std::string argv_text;    // the arguments joined, as records name them
};

CommandImage::CommandImage(const SpawnSpec& spec) : candidates(exec_candidates(spec.argv.front())) {
  for (const auto& arg : spec.argv) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);

  const std::string marker_key = std::string(k_run_marker) + "=";
  std::string runs = spec.run_id;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, marker_key.c_str(), marker_key.size()) == 0) {
      const std::string outer = *entry + marker_key.size();
      runs = runs_marker(outer, spec.run_id);
      continue;
    }
    environment.emplace_back(*entry);
  }
  if (!spec.run_id.empty()) {
    environment.push_back(marker_key + runs);
  }
  for (auto& entry : environment) {
    envp.push_back(entry.data());
  }
  envp.push_back(nullptr);

  const std::string& file = spec.argv.front();
  comm = name_text(file.substr(file.rfind('/') == std::string::npos ? 0 : file.rfind('/') + 1), 15);
  std::string joined;
  for (const auto& arg : spec.argv) {
    if (joined.size() >= k_max_argv) {
      break;
    }
    joined += (joined.empty() ? "" : " ") + arg;
  }
  argv_text = name_text(joined, k_max_argv);
}

namespace {

// The pipes between spawn and its child: the exec report ("A" once the
// child runs, then exec's errno if exec fails; closed by a successful exec)
// and, with SpawnSpec::before_exec, the hold (the go-ahead, one byte).
struct SpawnPipes {
  UniqueFd report_read;
  UniqueFd report_write;
  UniqueFd hold_read;
  UniqueFd hold_write;
};

Result<SpawnPipes> open_spawn_pipes(bool hold) {
  SpawnPipes pipes;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe2"));
  }
  pipes.report_read.reset(fds[0]);
  pipes.report_write.reset(fds[1]);
  if (hold) {
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      return fail(errno_error(errno, "pipe2"));
    }
    pipes.hold_read.reset(fds[0]);
    pipes.hold_write.reset(fds[1]);
  }
  return pipes;
}

// What the child reported before exec closed the pipe.
struct ExecReport {
  enum class Kind {
    never_ran,  // killed before it ran a single instruction: nothing written
    exec_done,  // "A", then the pipe closed at exec
    failed      // a letter ("A", or a setup step's), then the errno
  };
  Kind kind = Kind::never_ran;
  char step = 0;
  int error = 0;
};

ExecReport read_exec_report(int fd) {
  char buffer[1 + sizeof(int)];
  std::size_t got = 0;
  while (got < sizeof buffer) {
    ssize_t n = ::read(fd, buffer + got, sizeof buffer - got);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  ExecReport report;
  if (got == sizeof buffer) {
    report.kind = ExecReport::Kind::failed;
    report.step = buffer[0];
    std::memcpy(&report.error, buffer + 1, sizeof report.error);
  } else if (got > 0) {
    report.kind = ExecReport::Kind::exec_done;
  }
  return report;
}

}  // namespace

Result<long> LinuxBoundary::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) {
    return fail(plain_error("no COMMAND given"));
  }
  // Orphans of COMMAND's tree (setsid, double fork) reparent to treeguard,
  // not to init: they stay visible, reapable, and in the process-group
  // boundary's membership.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    return fail(errno_error(errno, "prctl PR_SET_CHILD_SUBREAPER"));
  }
  const CommandImage image(spec);
  bool use_clone3 = true;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto started = spawn_once(spec, image, use_clone3);
    if (!started) {
      return fail(started.error());
    }
    if (*started) {
      // From now on the deadline must be kept whatever the tree does with the CPU.
      take_precedence();
      return static_cast<long>(**started);
    }
  }
  return fail(plain_error("COMMAND's process died before it could exec"));
}

namespace {

// The child's stack while it shares treeguard's memory: one child at a
// time (the parent waits until it has exec'd or exited), so one stack.
alignas(16) char g_shared_child_stack[64 * 1024];

#if defined(__x86_64__)
constexpr bool k_can_share_memory = true;

// clone3 with CLONE_VM | CLONE_VFORK, as posix_spawn does: the kernel
// starts the child on `args->stack`, where it calls `entry(argument)`
// (r12 and r13 survive the system call; `entry` never returns); only the
// parent returns here, with the child's pid or -errno.
long clone3_shared_memory(CloneArgs* args, void (*entry)(void*), void* argument) {
  long result;
  register void (*entry_register)(void*) asm("r12") = entry;
  register void* argument_register asm("r13") = argument;
  asm volatile("syscall\n\t"
               "test %%rax, %%rax\n\t"
               "jnz 1f\n\t"
               "xor %%ebp, %%ebp\n\t"
               "mov %%r13, %%rdi\n\t"
               "call *%%r12\n\t"
               "mov $127, %%edi\n\t"
               "mov $231, %%eax\n\t"  // exit_group: never reached
               "syscall\n\t"
               "1:\n\t"
               : "=a"(result)
               : "a"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof *args),
                 "r"(entry_register), "r"(argument_register)
               : "rcx", "r11", "memory");
  return result;
}
#else
// No trampoline for this architecture: shares_memory_until_exec() says no,
// and this is never called.
constexpr bool k_can_share_memory = false;
long clone3_shared_memory(CloneArgs*, void (*)(void*), void*) {
  return -ENOSYS;
}
#endif

}  // namespace

// What a child sharing treeguard's memory is given (run_shared_child).
struct LinuxBoundary::SharedChild {
  LinuxBoundary* boundary;
  const ChildLaunch* launch;
};

void LinuxBoundary::run_shared_child(void* argument) {
  const auto* child = static_cast<const SharedChild*>(argument);
  child->boundary->run_child(*child->launch);
  ::_exit(127);  // (run_child does not return)
}

// Whether the clone may share treeguard's memory until COMMAND's exec.
// Then nothing of treeguard's address space is copied only for the exec to
// discard it (the copy was most of a nested run's clone3). Only a child
// that execs COMMAND straight away: not one held for SpawnSpec::before_exec
// (the parent must run while it waits), not one making namespaces (an
// init that lives on).
bool LinuxBoundary::shares_memory_until_exec(const ChildLaunch& launch) const {
  return k_can_share_memory && launch.hold_read < 0 && spawn_namespaces() == 0;
}

Result<LinuxBoundary::Cloned> LinuxBoundary::clone_contained(bool& use_clone3,
                                                             const ChildLaunch& launch) {
  Cloned cloned;
  long result = -1;
  if (use_clone3) {
    CloneArgs args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<std::uint64_t>(&cloned.pidfd);
    args.flags |= spawn_namespaces();
    args.exit_signal = SIGCHLD;
    if (spawn_cgroup_fd() >= 0) {
      args.flags |= CLONE_INTO_CGROUP;
      args.cgroup = static_cast<std::uint64_t>(spawn_cgroup_fd());
    }
    if (shares_memory_until_exec(launch)) {
      args.flags |= CLONE_VM | CLONE_VFORK;
      args.stack = reinterpret_cast<std::uint64_t>(g_shared_child_stack);
      args.stack_size = sizeof g_shared_child_stack;
      SharedChild child{this, &launch};
      result = clone3_shared_memory(&args, &LinuxBoundary::run_shared_child, &child);
      if (result < 0) {
        errno = static_cast<int>(-result);
        result = -1;
      }
    } else {
      result = ::syscall(SYS_clone3, &args, sizeof args);
    }
    if (result < 0 && spawn_namespaces() != 0) {
      return fail(errno_error(errno, "clone3 into new namespaces"));
    }
    if (result < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) {
      use_clone3 = false;  // before 5.7: no CLONE_INTO_CGROUP
    }
  }
  if (!use_clone3) {
    // Fork, and let the child write itself into cgroup.procs before it
    // can run COMMAND's code (or fork).
    cloned.procs_fd = spawn_cgroup_procs_fd();
    cloned.pidfd = -1;
    result = ::fork();
  }
  if (result < 0) {
    return fail(errno_error(errno, use_clone3 ? "clone3" : "fork"));
  }
  cloned.pid = static_cast<pid_t>(result);
  return cloned;
}

Result<std::optional<pid_t>>
LinuxBoundary::spawn_once(const SpawnSpec& spec, const CommandImage& image, bool& use_clone3) {
  auto pipes = open_spawn_pipes(bool(spec.before_exec));
  if (!pipes) {
    return fail(pipes.error());
  }
  const bool new_group = spawn_new_process_group();
  // Laid out before the clone: a child sharing this memory writes nothing
  // of the parent's.
  ChildLaunch launch;
  launch.argv = image.argv.data();
  launch.envp = image.envp.data();
  launch.candidates = &image.candidates;
  launch.error_pipe = pipes->report_write.get();
  launch.new_group = new_group;
  launch.hold_read = pipes->hold_read.get();
  launch.hold_write = pipes->hold_write.get();
  auto cloned = clone_contained(use_clone3, launch);
  if (!cloned) {
    return fail(cloned.error());
  }
  const pid_t pid = cloned->pid;
  if (pid == 0) {
    // A child with memory of its own (fork, or clone3 without CLONE_VM).
    pipes->report_read.release();
    launch.procs_fd = cloned->procs_fd;
    run_child(launch);
  }
  pipes->report_write.reset();
  pipes->hold_read.reset();
  if (new_group) {
    // Both sides set it, so neither races the other.
    ::setpgid(pid, pid);
  }
  UniqueFd child_pidfd(cloned->pidfd >= 0 ? cloned->pidfd
                                          : static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));

  bool released = true;
  if (pipes->hold_write) {
    // Held before exec: it exists (its group made above), whether or not
    // it has run yet, so it is recorded without waiting for it; it
    // finds the go-ahead waiting, or waits for it.
    adopt_child(pid, new_group, image);
    auto allowed = spec.before_exec();
    if (!allowed) {
      pipes->hold_write.reset();  // EOF: the child exits without exec
      drop_child(pid);
      return fail(allowed.error());
    }
    // EPIPE (SIGPIPE is ignored): it died before the go-ahead; what it
    // sent, if anything, is read below.
    released = ::write(pipes->hold_write.get(), "G", 1) == 1;
    pipes->hold_write.reset();
  }
  const ExecReport report = read_exec_report(pipes->report_read.get());
  if (report.kind == ExecReport::Kind::never_ran) {
    // Killed before it ran. Seen on kernel 6.18: CLONE_INTO_CGROUP from
    // a cgroup whose cgroup.kill was ever written SIGKILLs the new child
    // at birth. The child had run nothing: try again the other way.
    drop_child(pid);
    if (use_clone3 && spawn_cgroup_fd() >= 0) {
      use_clone3 = false;
      return std::optional<pid_t>();
    }
    return fail(plain_error("COMMAND's process died before it could exec"));
  }
  if (report.kind == ExecReport::Kind::failed) {
    drop_child(pid);
    if (auto step = child_setup_step(report.step); !step.empty()) {
      return fail(errno_error(report.error, std::string(step)));
    }
    return fail(errno_error(report.error, fmt::format("exec {}", spec.argv.front())));
  }
  if (!released) {
    drop_child(pid);
    return fail(plain_error("COMMAND's process died before it could exec"));
  }
  m_child_pidfd = std::move(child_pidfd);
  if (!spec.before_exec) {
    adopt_child(pid, new_group, image);
  }
  return std::optional<pid_t>(pid);
}

// COMMAND is a member from its first instant, even if it has exited
// already: unreaped, its /proc entry still shows who it was. A record
// naming its group must also name its leader, or nothing after
// treeguard's death could prove the group is still the run's.
void LinuxBoundary::adopt_child(pid_t pid, bool new_group, const CommandImage& image) {
  m_child = pid;
  m_child_pgid = new_group ? pid : ::getpgid(pid);
  m_child_sid = ::getsid(pid);
  if (auto stat = child_is_command() ? read_proc_stat(pid) : std::nullopt) {
    // Named by what it execs, not by what /proc shows before the exec
    // (treeguard's own name and arguments).
    MemberInfo command = sighting(*stat, CommandGroup{m_child_pgid, m_child_sid});
    command.comm = image.comm;
    command.argv = image.argv_text;
    m_members.remember(command);
  }
  // No walk of the boundary here: a held COMMAND has no descendants yet,
  // and one that has just exec'd is unlikely to; the boundaries look at
  // their first tick, or when the run stops.
}

// It will not run COMMAND: reap it, and it is nobody's child any more.
void LinuxBoundary::drop_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  m_child = m_child_pgid = m_child_sid = -1;
}

int LinuxBoundary::reap() {
  int reaped = 0;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG | __WALL);
    if (pid <= 0) {
      if (pid < 0 && errno == EINTR) {
        continue;
      }
      break;
    }
    ++reaped;
    if (pid == m_child) {
      on_child_reaped(status);
    }
  }
  return reaped;
}

void LinuxBoundary::on_child_reaped(int status) {
  m_child_reaped = true;
  if (!m_status) {
    collect_command_status();
  }
  if (!m_status) {
    note_command_exit(status);
  }
}

void LinuxBoundary::note_command_exit(int status) {
  ExitStatus exit;
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.value = WTERMSIG(status);
    exit.core_dumped = WCOREDUMP(status);
  } else {
    exit.value = WEXITSTATUS(status);
  }
  m_status = exit;
  m_child_pidfd.reset();
}

void LinuxBoundary::stopping() {
  if (m_defer_orphans || !empties_without_reaping()) {
    return;
  }
  report_child_exits(false);
  m_defer_orphans = true;
}

int LinuxBoundary::reap_while_waiting() {
  const TimePoint now = Clock::now();
  if (!m_defer_orphans || now - m_orphans_reaped_at >= k_orphan_reap_interval) {
    m_orphans_reaped_at = now;
    return reap();
  }
  // COMMAND alone: a wait for one pid does not walk the other children.
  if (m_child <= 0 || m_status) {
    return 0;
  }
  int status = 0;
  pid_t pid;
  do {
    pid = ::waitpid(m_child, &status, WNOHANG | __WALL);
  } while (pid < 0 && errno == EINTR);
  if (pid != m_child) {
    return 0;
  }
  on_child_reaped(status);
  return 1;
}

bool LinuxBoundary::no_children() {
  reap();
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  int rc = ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL);
  return rc < 0 && errno == ECHILD;
}

std::optional<Event> LinuxBoundary::queued_signal() {
  while (auto received = read_signal()) {
    if (received->number == SIGCHLD) {
      continue;  // reaped below
    }
    auto named = signal_from_number(received->number);
    if (!named) {
      continue;  // only the signals block_signals() names arrive here
    }
    if (m_signalled_by_manager == 0 && is_stop_signal(*named)
        && is_service_manager(received->sender)) {
      m_signalled_by_manager = received->sender;
    }
    Event event;
    event.kind = Event::Kind::signal;
    event.signal = *named;
    // The terminal (si_code SI_KERNEL) sends to the whole foreground
    // group; when COMMAND shares treeguard's group it got it already.
    event.already_delivered =
        received->code == SI_KERNEL && m_child > 0 && m_child_pgid == ::getpgrp();
    if (received->number == SIGTSTP || received->number == SIGTTIN || received->number == SIGTTOU) {
      // Job control: COMMAND stops (forwarded unless the terminal did
      // it), and so does treeguard, by the same signal, so that the
      // shell sees the job stopped as it would without treeguard
      // ("Stopped", $? 128+N); its CONT resumes both.
      if (!event.already_delivered && !m_status) {
        signal_command(received->number);
      }
      stop_self(received->number);
      continue;
    }
    if (received->number == SIGCONT && m_child > 0 && !m_status && m_child_pgid == ::getpgrp()) {
      // The shell's fg (or bg) continues the whole job, COMMAND
      // included: pass CONT on only if COMMAND is still stopped, so it
      // gets one, not two.
      auto stat = read_proc_stat(m_child);
      event.already_delivered = !stat || !stat->stopped();
    }
    return event;
  }
  return std::nullopt;
}

std::optional<TimePoint> LinuxBoundary::next_wake(std::optional<TimePoint> deadline,
                                                  TimePoint now) const {
  std::optional<TimePoint> wake = deadline;
  if (auto tick = tick_interval()) {
    TimePoint tick_at = now + *tick;
    if (!wake || tick_at < *wake) {
      wake = tick_at;
    }
  }
  if (m_defer_orphans) {
    // A dying tree's SIGCHLDs would only wake this loop to reap nothing:
    // they are left pending, and orphans are reaped at the next
    // interval, or when the boundary is empty (watch_fd).
    TimePoint reap_at = m_orphans_reaped_at + k_orphan_reap_interval;
    if (!wake || reap_at < *wake) {
      wake = reap_at;
    }
  }
  return wake;
}

std::optional<Event> LinuxBoundary::poll_once(std::optional<TimePoint> deadline,
                                              std::optional<TimePoint> wake, TimePoint now) {
  struct timespec timeout;
  struct timespec* timeout_ptr = nullptr;
  if (wake) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(*wake - now);
    if (left.count() < 0) {
      left = std::chrono::nanoseconds(0);
    }
    timeout.tv_sec = static_cast<time_t>(left.count() / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(left.count() % 1'000'000'000);
    timeout_ptr = &timeout;
  }
  // signalfd, wake_once_on()'s descriptor (-1: none), the boundary's own
  struct pollfd fds[3];
  nfds_t count = 0;
  fds[count++] = {signal_fd(), POLLIN, 0};
  fds[count++] = {m_also_fd, POLLIN, 0};
  const bool watching = watch_fd() >= 0;
  if (watching) {
    fds[count++] = {watch_fd(), watch_events(), 0};
  }
  int ready = ::ppoll(fds, count, timeout_ptr, nullptr);
  if (ready < 0 && errno != EINTR) {
    // Nothing sensible to wait on (ENOMEM, EINVAL): a pause before the
    // caller looks again, which would call this again at once, never a
    // spin. Until the wake-up, if that comes first.
    struct timespec pause = {0, k_wait_error_pause_ns};
    if (timeout_ptr != nullptr && timeout.tv_sec == 0 && timeout.tv_nsec < pause.tv_nsec) {
      pause = timeout;
    }
    ::nanosleep(&pause, nullptr);
    return Event{Event::Kind::changed, {}, false};
  }
  if (m_also_fd >= 0 && fds[1].revents != 0) {
    m_also_fd = -1;
    auto then = std::move(m_also_then);
    m_also_then = nullptr;
    if (then) {
      then();
    }
    return Event{Event::Kind::changed, {}, false};
  }
  if (watching && (fds[2].revents & (watch_events() | POLLERR | POLLHUP)) != 0) {
    return Event{on_watch(), {}, false};
  }
  if (ready == 0) {
    on_tick();
    if (deadline && Clock::now() >= *deadline) {
      return Event{Event::Kind::deadline, {}, false};
    }
    // A tick is a chance for the boundary to look again.
    return Event{Event::Kind::changed, {}, false};
  }
  return std::nullopt;  // interrupted: wait() looks again
}

Event LinuxBoundary::wait(std::optional<TimePoint> deadline) {
  for (;;) {
    // Signals first: one may already be queued.
    if (auto event = queued_signal()) {
      return *event;
    }
    if (reap_while_waiting() > 0) {
      return Event{Event::Kind::changed, {}, false};
    }
    const TimePoint now = Clock::now();
    if (deadline && now >= *deadline) {
      return Event{Event::Kind::deadline, {}, false};
    }
    if (auto event = poll_once(deadline, next_wake(deadline, now), now)) {
      return *event;
    }
  }
}

std::vector<Delivery> LinuxBoundary::stop_gracefully(Signal signal) {
  // One pass over the members: `signal` to each, and CONT to those seen
  // stopped once all have it pending.
  stopping();
  auto sent = signal_all(signal);
  std::optional<Error> error;
  if (!sent) {
    error = sent.error();
  }
  return {Delivery{signal, "every member", error},
          Delivery{signals::cont, "every stopped member", error}};
}

int LinuxBoundary::signal_command(int number) {
  return m_child_pidfd ? pidfd_signal(m_child_pidfd.get(), number) : ESRCH;
}

Result<void> LinuxBoundary::forward(Signal signal) {
  if (m_status || m_child <= 0) {
    return {};  // COMMAND is gone; nothing to forward to (not an error)
  }
  int error = signal_command(signal_number(signal));
  if (error != 0 && error != ESRCH) {
    return fail(errno_error(error, fmt::format("signal pid {}", m_child)));
  }
  return {};
}

}  // namespace treeguard::platform
