// Reading processes from /proc (proc.hpp). One file over 500 lines because
// every read of /proc the Linux code makes is here, so that the one liveness
// rule and the one way of naming a process (pid + start time) are never
// copied elsewhere.
#include "linux/proc.hpp"

#include "identity.hpp"
#include "posix/unique_fd.hpp"
#include "run_id.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace treeguard::platform {

namespace {

// Read a small /proc file in one go (they are generated per read). A file
// made of one record (`single`: /proc/PID/stat is produced whole for each
// read) is complete after a read that did not fill the buffer, which spares
// the read that would only return its end.
std::optional<std::string> read_small(const char* path, bool single = false) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return std::nullopt;
  }
  UniqueFd owner(fd);
  std::string out;
  char buffer[1024];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return std::nullopt;
    }
    if (n == 0) {
      break;
    }
    out.append(buffer, static_cast<std::size_t>(n));
    if (single && static_cast<std::size_t>(n) < sizeof buffer) {
      break;
    }
  }
  return out;
}

// This process's time namespace's CLOCK_BOOTTIME offset, in ns
// (/proc/self/timens_offsets: "boottime SECS NSECS"); 0 in the initial
// time namespace or where the kernel has none. /proc/PID/stat's start time
// and CLOCK_BOOTTIME are both shifted by it for a reader in that namespace.
std::int64_t own_boottime_offset_ns() {
  static const std::int64_t offset = [] {
    auto text = read_small("/proc/self/timens_offsets");
    if (!text) {
      return std::int64_t{0};
    }
    std::size_t at = 0;
    while (at < text->size()) {
      std::size_t end = text->find('\n', at);
      if (end == std::string::npos) {
        end = text->size();
      }
      char name[16] = {};
      long long secs = 0;
      long nsecs = 0;
      const std::string line = text->substr(at, end - at);
      if (std::sscanf(line.c_str(), "%15s %lld %ld", name, &secs, &nsecs) == 3
          && (std::strcmp(name, "boottime") == 0 || std::strcmp(name, "7") == 0)) {
        return static_cast<std::int64_t>(secs * 1000000000LL + nsecs);
      }
      at = end + 1;
    }
    return std::int64_t{0};
  }();
  return offset;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(const std::string& text) {
  // "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
  //  majflt cmajflt utime stime cutime cstime priority nice threads
  //  itrealvalue starttime ..." -- comm can contain anything, so split at
  //  the last ')'.
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) {
    return std::nullopt;
  }
  ProcStat stat;
  stat.pid = static_cast<pid_t>(std::strtol(text.c_str(), nullptr, 10));
  if (auto open = text.find('('); open != std::string::npos && open < close) {
    stat.comm = text.substr(open + 1, close - open - 1);
  }
  const char* p = text.c_str() + close + 2;
  stat.state = *p;
  // Fields after the state, numbered from 4 (ppid).
  int field = 3;
  const char* cursor = p + 1;
  while (*cursor != '\0' && field < 22) {
    while (*cursor == ' ') {
      ++cursor;
    }
    ++field;
    char* end = nullptr;
    if (field == 20) {
      stat.threads = std::strtol(cursor, &end, 10);
    } else if (field == 4) {
      stat.ppid = static_cast<pid_t>(std::strtol(cursor, &end, 10));
    } else if (field == 5) {
      stat.pgid = static_cast<pid_t>(std::strtol(cursor, &end, 10));
    } else if (field == 6) {
      stat.sid = static_cast<pid_t>(std::strtol(cursor, &end, 10));
    } else if (field == 22) {
      stat.start_time = std::strtoull(cursor, &end, 10);
    } else {
      std::strtoll(cursor, &end, 10);
    }
    if (end == cursor) {
      return std::nullopt;
    }
    cursor = end;
  }
  if (field != 22 || stat.pid <= 0) {
    return std::nullopt;
  }
  return stat;
}

namespace {

// The state of a thread group whose leader has exited (shows Z) while
// `threads` says others are not yet released: theirs, from
// /proc/PID/task/TID/stat. The first thread that is neither stopped nor
// dead decides; else stopped if one is; else the group is dead after all.
char thread_group_state(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* tasks = ::opendir(path);
  if (tasks == nullptr) {
    return 'Z';
  }
  char state = 'Z';
  while (struct dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') {
      continue;
    }
    const std::string task_stat =
        "/proc/" + std::to_string(pid) + "/task/" + entry->d_name + "/stat";
    auto text = read_small(task_stat.c_str(), /*single=*/true);
    auto thread = text ? parse_proc_stat(*text) : std::nullopt;
    if (!thread || !thread->alive()) {
      continue;
    }
    state = thread->state;
    if (!thread->stopped()) {
      break;
    }
  }
  ::closedir(tasks);
  return state;
}

}  // namespace

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  auto text = read_small(path, /*single=*/true);
  if (!text) {
    return std::nullopt;
  }
  auto stat = parse_proc_stat(*text);
  if (stat) {
    stat->start_time = host_start_time(stat->start_time);
  }
  // A real zombie counts itself only (1): no task directory to read.
  if (stat && !stat->alive() && stat->threads > 1) {
    stat->state = thread_group_state(pid);
    stat->leader_exited = stat->alive();
  }
  return stat;
}

unsigned long long host_start_time(unsigned long long seen) {
  static const long long offset_ticks = [] {
    const long hz = ::sysconf(_SC_CLK_TCK);
    const std::int64_t ns = own_boottime_offset_ns();
    if (hz <= 0 || ns == 0) {
      return 0LL;
    }
    // Floor division: a negative offset of less than a tick is -1 tick.
    const std::int64_t tick = 1000000000LL / hz;
    return static_cast<long long>(ns / tick - (ns % tick < 0 ? 1 : 0));
  }();
  return static_cast<unsigned long long>(static_cast<long long>(seen) - offset_ticks);
}

unsigned long long start_time_now() {
  // The kernel counts a start time as CLOCK_BOOTTIME at fork (with the
  // reader's time namespace's offset), cut to whole clock ticks.
  struct timespec since_boot {};
  ::clock_gettime(CLOCK_BOOTTIME, &since_boot);
  const long hz = ::sysconf(_SC_CLK_TCK);
  const std::int64_t tick = 1000000000LL / (hz > 0 ? hz : 100);
  const std::int64_t ns =
      static_cast<std::int64_t>(since_boot.tv_sec) * 1000000000LL + since_boot.tv_nsec;
  return host_start_time(static_cast<unsigned long long>(ns / tick));
}

bool for_each_proc_line(const char* path, std::size_t max_bytes,
                        const std::function<bool(std::string_view)>& line) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return false;
  }
  UniqueFd owner(fd);
  std::string pending;
  char buffer[16384];
  std::size_t total = 0;
  while (total < max_bytes) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    total += static_cast<std::size_t>(n);
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (std::size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      if (!line(std::string_view(pending).substr(start, end - start))) {
        return true;
      }
    }
    pending.erase(0, start);
  }
  if (!pending.empty() && total < max_bytes) {
    line(pending);
  }
  return true;
}

bool arguments_readable(const ProcStat& stat) {
  return (stat.state == 'S' || stat.stopped()) && stat.threads == 1 && !stat.leader_exited;
}

std::string read_arguments(pid_t pid, std::size_t limit) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/cmdline", static_cast<int>(pid));
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return {};
  }
  UniqueFd owner(fd);
  // One read: only the first `limit` bytes are kept anyway.
  char buffer[256];
  ssize_t n;
  do {
    n = ::read(fd, buffer, std::min(sizeof buffer, limit));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    return {};  // a zombie or a kernel thread has none
  }
  std::string text(buffer, static_cast<std::size_t>(n));
  std::replace(text.begin(), text.end(), '\0', ' ');
  while (!text.empty() && text.back() == ' ') {
    text.pop_back();
  }
  return name_text(text, limit);
}

std::vector<ProcStat> list_processes() {
  std::vector<ProcStat> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) {
    return out;
  }
  while (struct dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (name[0] < '1' || name[0] > '9') {
      continue;
    }
    char* end = nullptr;
    long pid = std::strtol(name, &end, 10);
    if (*end != '\0') {
      continue;
    }
    if (auto stat = read_proc_stat(static_cast<pid_t>(pid))) {
      out.push_back(*stat);
    }
  }
  ::closedir(dir);
  return out;
}

namespace {

bool children_files_exist() {
  static const bool exist = [] {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", static_cast<int>(::getpid()),
                  static_cast<int>(::getpid()));
    return ::access(path, R_OK) == 0;
  }();
  return exist;
}

// The children of every thread of `pid`.
void children_of(pid_t pid, std::vector<pid_t>& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* tasks = ::opendir(path);
  if (tasks == nullptr) {
    return;
  }
  while (struct dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') {
      continue;
    }
    const std::string children =
        "/proc/" + std::to_string(pid) + "/task/" + entry->d_name + "/children";
    auto text = read_small(children.c_str());
    if (!text) {
      continue;
    }
    const char* cursor = text->c_str();
    for (;;) {
      char* end = nullptr;
      long child = std::strtol(cursor, &end, 10);
      if (end == cursor) {
        break;
      }
      out.push_back(static_cast<pid_t>(child));
      cursor = end;
    }
  }
  ::closedir(tasks);
}

}  // namespace

std::vector<ProcStat> list_descendants(pid_t root) {
  std::vector<ProcStat> out;
  if (!children_files_exist()) {
    const auto all = list_processes();
    std::vector<pid_t> frontier{root};
    while (!frontier.empty()) {
      pid_t parent = frontier.back();
      frontier.pop_back();
      for (const auto& process : all) {
        if (process.ppid == parent) {
          out.push_back(process);
          frontier.push_back(process.pid);
        }
      }
    }
    return out;
  }
  std::vector<pid_t> frontier{root};
  std::vector<pid_t> children;
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    children.clear();
    children_of(parent, children);
    for (pid_t child : children) {
      if (auto stat = read_proc_stat(child)) {
        out.push_back(*stat);
        frontier.push_back(child);
      }
    }
  }
  return out;
}

namespace {

// /proc/PID/environ; for a process whose leader thread has exited (its
// environ reads ESRCH), that of a thread still running. nullopt with errno
// set when none can be read.
std::optional<std::string> read_environ(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/environ", static_cast<int>(pid));
  auto text = read_small(path);
  if (text || errno != ESRCH) {
    return text;
  }
  std::snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* tasks = ::opendir(path);
  if (tasks == nullptr) {
    errno = ESRCH;
    return std::nullopt;
  }
  while (struct dirent* entry = ::readdir(tasks)) {
    if (entry->d_name[0] < '1' || entry->d_name[0] > '9') {
      continue;
    }
    const std::string thread_environ =
        "/proc/" + std::to_string(pid) + "/task/" + entry->d_name + "/environ";
    text = read_small(thread_environ.c_str());
    if (text || errno == EACCES || errno == EPERM) {
      break;
    }
  }
  const int error = errno;
  ::closedir(tasks);
  errno = error;
  return text;
}

}  // namespace

Marker read_run_marker(pid_t pid, const std::string& run_id) {
  auto text = read_environ(pid);
  if (!text) {
    return errno == EACCES || errno == EPERM ? Marker::unreadable : Marker::absent;
  }
  const std::string key = std::string(k_run_marker) + "=";
  std::size_t at = 0;
  while (at < text->size()) {
    std::size_t end = text->find('\0', at);
    if (end == std::string::npos) {
      end = text->size();
    }
    if (text->compare(at, key.size(), key) == 0) {
      // A space-separated list: nested runs append their own id.
      std::string value = text->substr(at + key.size(), end - at - key.size());
      std::size_t start = 0;
      while (start <= value.size()) {
        std::size_t space = value.find(' ', start);
        if (space == std::string::npos) {
          space = value.size();
        }
        if (value.compare(start, space - start, run_id) == 0 && space - start == run_id.size()) {
          return Marker::present;
        }
        start = space + 1;
      }
      return Marker::absent;
    }
    at = end + 1;
  }
  return Marker::absent;
}

std::optional<uid_t> real_uid(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  auto text = read_small(path);
  if (!text) {
    return std::nullopt;
  }
  const auto at = text->find("\nUid:");
  if (at == std::string::npos) {
    return std::nullopt;
  }
  return static_cast<uid_t>(std::strtoul(text->c_str() + at + 5, nullptr, 10));
}

bool process_alive(pid_t pid, unsigned long long start_time) {
  auto stat = read_proc_stat(pid);
  return stat && stat->start_time == start_time && stat->alive();
}

bool is_service_manager(pid_t pid) {
  if (pid <= 0) {
    return false;  // the kernel, or a sender outside this pid namespace
  }
  auto stat = read_proc_stat(pid);
  return stat && stat->comm == "systemd" && (pid == 1 || stat->ppid == 1);
}

namespace {

// The pids of /proc/PID/status's NSpid line, outermost (the namespace of
// this /proc) first; empty if there is none.
std::vector<long> namespace_pids(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
  std::vector<long> out;
  auto text = read_small(path);
  const auto at = text ? text->find("\nNSpid:") : std::string::npos;
  if (at == std::string::npos) {
    return out;
  }
  const char* cursor = text->c_str() + at + 7;
  for (;;) {
    char* end = nullptr;
    const long value = std::strtol(cursor, &end, 10);
    if (end == cursor || *cursor == '\n') {
      return out;
    }
    out.push_back(value);
    cursor = end;
  }
}

std::uint64_t namespace_inode(const char* path) {
  struct stat st;
  return ::stat(path, &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : 0;
}

}  // namespace

std::uint64_t own_pid_namespace() {
  // What `ls -l /proc/self/ns/pid` shows as pid:[N].
  return namespace_inode("/proc/self/ns/pid");
}

std::optional<unsigned long long> own_pid_namespace_init() {
  // /proc shows this namespace's pids exactly when NSpid names one pid.
  if (namespace_pids(::getpid()).size() != 1) {
    return std::nullopt;
  }
  auto init = read_proc_stat(1);
  return init ? std::optional<unsigned long long>(init->start_time) : std::nullopt;
}

bool pid_namespace_gone(std::uint64_t inode, std::optional<unsigned long long> init) {
  if (own_pid_namespace() != k_initial_pid_namespace || !own_pid_namespace_init()) {
    return false;  // not every process of the host is in sight
  }
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) {
    return false;
  }
  bool in_it = false;
  bool other_init = false;
  bool unknowable = false;
  while (struct dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') {
      continue;
    }
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/ns/pid", pid);
    const std::uint64_t its = namespace_inode(path);
    if (its == 0) {
      // Gone meanwhile, dead (a zombie has no namespaces left), in this
      // namespace itself (NSpid names one pid: not below it; PID 1 may
      // refuse to be inspected), or not to be inspected: only the last
      // cannot be told.
      const auto stat = read_proc_stat(static_cast<pid_t>(pid));
      unknowable =
          unknowable
          || (stat && stat->alive() && namespace_pids(static_cast<pid_t>(pid)).size() != 1);
      continue;
    }
    if (its != inode) {
      continue;
    }
    in_it = true;
    const auto pids = namespace_pids(static_cast<pid_t>(pid));
    if (init && !pids.empty() && pids.back() == 1) {
      auto stat = read_proc_stat(static_cast<pid_t>(pid));
      other_init = other_init || (stat && stat->start_time != *init);
    }
  }
  ::closedir(dir);
  if (other_init) {
    return true;  // the inode has been handed on: its namespace is gone
  }
  return !in_it && !unknowable;
}

std::string boot_id() {
  auto text = read_small("/proc/sys/kernel/random/boot_id");
  if (!text) {
    return {};
  }
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) {
    text->pop_back();
  }
  return *text;
}

std::string machine_id_in(const char* path) {
  auto text = read_small(path);
  if (!text) {
    return {};
  }
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) {
    text->pop_back();
  }
  return is_valid_machine_id(*text) ? *text : std::string();
}

std::string machine_id() {
  for (const char* path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    if (std::string id = machine_id_in(path); !id.empty()) {
      return id;
    }
  }
  return {};
}

std::int64_t boot_began_at() {
  struct timespec real {};
  struct timespec since_boot {};
  ::clock_gettime(CLOCK_REALTIME, &real);
  ::clock_gettime(CLOCK_BOOTTIME, &since_boot);
  // CLOCK_BOOTTIME as the initial time namespace counts it.
  return (static_cast<std::int64_t>(real.tv_sec) - since_boot.tv_sec) * 1000000000LL
         + (static_cast<std::int64_t>(real.tv_nsec) - since_boot.tv_nsec)
         + own_boottime_offset_ns();
}

int open_verified_pidfd(pid_t pid, unsigned long long start_time) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    return -1;
  }
  // The pidfd pins the process we got, but the pid may have been recycled
  // between the scan and pidfd_open. Read the start time now, and then ask
  // the pidfd whether its process still exists: if it does, it existed when
  // we read /proc too, so the start time we read was its own.
  auto stat = read_proc_stat(pid);
  if (!stat || stat->start_time != start_time
      || ::syscall(SYS_pidfd_send_signal, fd, 0, nullptr, 0) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int pidfd_signal(int pidfd, int signal) {
  if (::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0) != 0) {
    return errno;
  }
  return 0;
}

}  // namespace treeguard::platform
