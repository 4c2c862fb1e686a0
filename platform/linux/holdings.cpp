// What a process holds, read from /proc (port/holdings.hpp). Each descriptor of
// /proc/PID/fd is named by readlink and typed by statx through its link
// with AT_STATX_DONT_SYNC (no file of the process is opened, no device node
// either, and a hung network or FUSE file system is not asked: its cached
// attributes do). Sockets are looked up by inode in the tables of the
// process's own network namespace (/proc/PID/net/*), read once per
// namespace and only when a socket is met; regular files' open flags and
// the locks held through them come from /proc/PID/fdinfo/N.
#include "port/holdings.hpp"

#include "linux/holdings_proc.hpp"
#include "linux/proc.hpp"
#include "posix/unique_fd.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace treeguard::platform {

namespace {

// How much of one socket table is read, at most (a busy host's unix table
// is long; a table cut here names fewer sockets, never a wrong one).
constexpr std::size_t k_table_bytes = std::size_t(8) << 20;

// The blank-separated fields of a line, at most `max`, each with where it
// starts (the last one of a unix table line, its path, runs to the end).
struct Field {
  std::string_view text;
  std::size_t at;
};
std::vector<Field> split_fields(std::string_view line, std::size_t max) {
  std::vector<Field> out;
  std::size_t i = 0;
  while (out.size() < max) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) {
      ++i;
    }
    if (i >= line.size()) {
      break;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
      ++i;
    }
    out.push_back({line.substr(start, i - start), start});
  }
  return out;
}

std::optional<unsigned long> hex_number(std::string_view text, int base = 16) {
  if (text.empty() || text.size() > 16) {
    return std::nullopt;
  }
  const std::string copy(text);
  char* end = nullptr;
  errno = 0;
  const unsigned long value = std::strtoul(copy.c_str(), &end, base);
  if (errno != 0 || end != copy.c_str() + copy.size()) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

std::optional<std::string> inet_address(std::string_view hex) {
  const std::size_t colon = hex.find(':');
  if (colon == std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view address = hex.substr(0, colon);
  const auto port = hex_number(hex.substr(colon + 1));
  if (!port || (address.size() != 8 && address.size() != 32)) {
    return std::nullopt;
  }
  // The kernel prints each 32-bit word of the address as the number it
  // is in memory: read back into memory, the bytes are the address's.
  std::array<unsigned char, 16> bytes{};
  for (std::size_t word = 0; word < address.size() / 8; ++word) {
    const auto value = hex_number(address.substr(word * 8, 8));
    if (!value) {
      return std::nullopt;
    }
    const auto native = static_cast<std::uint32_t>(*value);
    std::memcpy(bytes.data() + word * 4, &native, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  const bool v6 = address.size() == 32;
  if (::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes.data(), text, sizeof text) == nullptr) {
    return std::nullopt;
  }
  return v6 ? fmt::format("[{}]:{}", text, *port) : fmt::format("{}:{}", text, *port);
}

bool parse_inet_socket_line(std::string_view line, std::string_view protocol, NamedSockets& out) {
  // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
  const auto fields = split_fields(line, 10);
  if (fields.size() < 10 || fields[0].text.empty() || fields[0].text.back() != ':') {
    return true;  // the heading
  }
  const std::string_view state = fields[3].text;
  const bool tcp = protocol == "tcp";
  if (tcp && state != "0A") {
    return false;  // past the listening sockets
  }
  if (!tcp && state != "07") {
    return true;  // a connected UDP socket
  }
  const auto local = inet_address(fields[1].text);
  const auto inode = hex_number(fields[9].text, 10);
  if (!local || !inode || *inode == 0 || local->size() < 2
      || local->compare(local->size() - 2, 2, ":0") == 0) {
    return true;
  }
  out[*inode] = Holding{HoldingKind::listening, fmt::format("{} {}", protocol, *local)};
  return true;
}

void parse_unix_socket_line(std::string_view line, NamedSockets& out) {
  // Num: RefCount Protocol Flags Type St Inode Path
  const auto fields = split_fields(line, 8);
  if (fields.size() < 8 || fields[0].text.empty() || fields[0].text.back() != ':') {
    return;  // the heading, or a socket without a name
  }
  const auto flags = hex_number(fields[3].text);
  const auto inode = hex_number(fields[6].text, 10);
  if (!flags || !inode) {
    return;
  }
  constexpr unsigned long k_accepts_connections = 0x10000;  // __SO_ACCEPTCON
  std::string what = holding_text(line.substr(fields[7].at));
  if ((*flags & k_accepts_connections) != 0) {
    what += " (listening)";
  }
  out[*inode] = Holding{HoldingKind::unix_socket, std::move(what)};
}

FdInfo parse_fdinfo(std::string_view text) {
  FdInfo out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const auto fields = split_fields(line, 5);
    if (fields.size() >= 2 && fields[0].text == "flags:") {
      out.flags = static_cast<int>(hex_number(fields[1].text, 8).value_or(0));
    } else if (fields.size() >= 5 && fields[0].text == "lock:") {
      // lock: 1: POSIX  ADVISORY  WRITE 1234 08:02:131 0 EOF
      out.locks.push_back(fmt::format("{} {}", fields[2].text, fields[4].text));
    }
  }
  return out;
}

bool is_accelerator_path(std::string_view path) {
  const auto starts = [&](std::string_view prefix) {
    return path.substr(0, prefix.size()) == prefix;
  };
  return starts("/dev/nvidia") || starts("/dev/dri/") || path == "/dev/kfd"
         || starts("/dev/accel/");
}

namespace {

// A file as statx names it: type, where it lives, and (a device node) what
// device it is.
struct ObjectId {
  unsigned type = 0;  // S_IFMT bits
  dev_t dev = 0;
  ino_t ino = 0;
  dev_t rdev = 0;
  bool same_file(const ObjectId& other) const {
    return type == other.type && dev == other.dev && ino == other.ino;
  }
};

// statx of `name` under `dir` (or of the descriptor `dir` itself, for an
// empty name), following a /proc link to the open file it stands for.
// Cached attributes only (AT_STATX_DONT_SYNC): never a question to a
// remote or FUSE file system that may not answer.
std::optional<ObjectId> object_at(int dir, const char* name) {
  struct statx seen = {};
  const int flags = AT_STATX_DONT_SYNC | (name[0] == '\0' ? AT_EMPTY_PATH : 0);
  if (::statx(dir, name, flags, STATX_TYPE | STATX_INO, &seen) != 0) {
    return std::nullopt;
  }
  return ObjectId{static_cast<unsigned>(seen.stx_mode & S_IFMT),
                  makedev(seen.stx_dev_major, seen.stx_dev_minor), seen.stx_ino,
                  makedev(seen.stx_rdev_major, seen.stx_rdev_minor)};
}

// The devices every process may hold without it meaning anything
// (/dev/null, zero, full, random, urandom; /dev/tty, the controlling
// terminal), by what device they are.
bool ordinary_device(const ObjectId& object) {
  if (object.type != S_IFCHR) {
    return false;
  }
  const unsigned major_number = major(object.rdev);
  const unsigned minor_number = minor(object.rdev);
  if (major_number == 1) {
    return minor_number == 3 || minor_number == 5 || minor_number == 7 || minor_number == 8
           || minor_number == 9;
  }
  return major_number == 5 && minor_number == 0;
}

// ... and where they are: a node of the same device made elsewhere (a
// container's, a test's own) is named like any other.
bool ordinary_device_node(const ObjectId& object, std::string_view path) {
  static constexpr std::string_view k_paths[] = {"/dev/null",   "/dev/zero",    "/dev/full",
                                                 "/dev/random", "/dev/urandom", "/dev/tty"};
  return ordinary_device(object)
         && std::find(std::begin(k_paths), std::end(k_paths), path) != std::end(k_paths);
}

// The pipe, socket, terminal or file COMMAND was given as its stdin,
// stdout and stderr: treeguard's own descriptors 0, 1 and 2, which it
// passes to COMMAND and never changes. /dev/null and its kind are left out.
class RunStdio {
public:
  RunStdio() {
    for (int fd = 0; fd < 3; ++fd) {
      auto object = object_at(fd, "");
      if (object && !ordinary_device(*object)) {
        m_objects[static_cast<std::size_t>(fd)] = object;
      }
    }
  }

  // Which of them `object` is: bit N for descriptor N.
  unsigned which(const ObjectId& object) const {
    unsigned out = 0;
    for (std::size_t fd = 0; fd < 3; ++fd) {
      if (m_objects[fd] && m_objects[fd]->same_file(object)) {
        out |= 1U << fd;
      }
    }
    return out;
  }

  // "stdout", "stdout and stderr", "stdin, stdout and stderr".
  static std::string names(unsigned which) {
    static constexpr const char* k_names[] = {"stdin", "stdout", "stderr"};
    std::vector<std::string> named;
    for (std::size_t fd = 0; fd < 3; ++fd) {
      if ((which & (1U << fd)) != 0) {
        named.emplace_back(k_names[fd]);
      }
    }
    if (named.size() < 2) {
      return named.empty() ? std::string() : named.front();
    }
    const std::string last = named.back();
    named.pop_back();
    return fmt::format("{} and {}", fmt::join(named, ", "), last);
  }

private:
  std::array<std::optional<ObjectId>, 3> m_objects;
};

std::string proc_path(pid_t pid, const char* rest) {
  return fmt::format("/proc/{}/{}", pid, rest);
}

// readlink, whole or nullopt.
std::optional<std::string> link_text(int dir, const char* name) {
  char buffer[4096];
  const ssize_t n = ::readlinkat(dir, name, buffer, sizeof buffer);
  if (n < 0 || static_cast<std::size_t>(n) >= sizeof buffer) {
    return std::nullopt;
  }
  return std::string(buffer, static_cast<std::size_t>(n));
}

class ProcReader {
public:
  std::optional<ProcessHoldings> read(const MemberInfo& member);

private:
  void read_descriptors(pid_t pid, ProcessHoldings& out);
  void read_descriptor(pid_t pid, int dir, const char* name, ProcessHoldings& out);
  void read_file(pid_t pid, const char* name, const std::string& path, const ObjectId& object,
                 ProcessHoldings& out);
  const NamedSockets& sockets_of(pid_t pid);

  RunStdio m_stdio;
  unsigned m_stdio_held = 0;  // of the process being read: RunStdio::which()
  std::unordered_map<std::string, NamedSockets> m_sockets;  // by network namespace
};

std::optional<ProcessHoldings> ProcReader::read(const MemberInfo& member) {
  const auto pid = static_cast<pid_t>(member.pid);
  if (!process_alive(pid, member.start_time)) {
    return std::nullopt;
  }
  ProcessHoldings out;
  out.who = member;
  m_stdio_held = 0;
  read_descriptors(pid, out);
  if (m_stdio_held != 0) {
    out.holds.push_back(Holding{HoldingKind::stdio, RunStdio::names(m_stdio_held)});
  }
  if (auto cwd = link_text(AT_FDCWD, proc_path(pid, "cwd").c_str())) {
    out.holds.push_back(Holding{HoldingKind::cwd, holding_text(*cwd)});
  }
  // Read from the process it was, not one that took its pid meanwhile.
  if (!process_alive(pid, member.start_time)) {
    return std::nullopt;
  }
  keep_most_telling(out);
  return out;
}

void ProcReader::read_descriptors(pid_t pid, ProcessHoldings& out) {
  const std::string path = proc_path(pid, "fd");
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    out.note = fmt::format("descriptors not readable: {}", std::strerror(errno));
    return;
  }
  std::size_t read = 0;
  while (struct dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') {
      continue;
    }
    if (read++ == k_holdings_descriptors) {
      out.note = fmt::format("only the first {} descriptors read", k_holdings_descriptors);
      break;
    }
    read_descriptor(pid, ::dirfd(dir), entry->d_name, out);
  }
  ::closedir(dir);
}

void ProcReader::read_descriptor(pid_t pid, int dir, const char* name, ProcessHoldings& out) {
  const auto target = link_text(dir, name);
  const auto object = object_at(dir, name);
  if (!target || !object) {
    return;  // closed meanwhile
  }
  if (const unsigned stdio = m_stdio.which(*object); stdio != 0) {
    m_stdio_held |= stdio;
    return;
  }
  switch (object->type) {
  case S_IFSOCK: {
    const auto& sockets = sockets_of(pid);
    if (auto named = sockets.find(object->ino); named != sockets.end()) {
      out.holds.push_back(named->second);
    }
    break;
  }
  case S_IFCHR:
  case S_IFBLK:
    if (!ordinary_device_node(*object, *target)) {
      out.holds.push_back(
          Holding{is_accelerator_path(*target) ? HoldingKind::accelerator : HoldingKind::device,
                  holding_text(*target)});
    }
    break;
  case S_IFREG:
  case S_IFDIR:
    read_file(pid, name, *target, *object, out);
    break;
  default:
    break;
  }
}

// A file or directory: written to, and locked through this descriptor?
void ProcReader::read_file(pid_t pid, const char* name, const std::string& path,
                           const ObjectId& object, ProcessHoldings& out) {
  const std::string info_path = fmt::format("/proc/{}/fdinfo/{}", pid, name);
  std::string text;
  for_each_proc_line(info_path.c_str(), 64 * 1024, [&](std::string_view line) {
    text.append(line).push_back('\n');
    return true;
  });
  const FdInfo info = parse_fdinfo(text);
  if (object.type == S_IFREG && (info.flags & O_ACCMODE) != O_RDONLY) {
    out.holds.push_back(Holding{HoldingKind::writing, holding_text(path)});
  }
  for (const auto& lock : info.locks) {
    out.holds.push_back(
        Holding{HoldingKind::lock, holding_text(fmt::format("{} ({})", path, lock))});
  }
}

// The named sockets of the network namespace `pid` is in: its own view
// (/proc/PID/net), not treeguard's, read once per namespace.
const NamedSockets& ProcReader::sockets_of(pid_t pid) {
  const std::string key =
      link_text(AT_FDCWD, proc_path(pid, "ns/net").c_str()).value_or(fmt::format("pid {}", pid));
  auto known = m_sockets.find(key);
  if (known != m_sockets.end()) {
    return known->second;
  }
  NamedSockets& sockets = m_sockets[key];
  for (const char* table : {"tcp", "tcp6", "udp", "udp6"}) {
    const std::string protocol = std::string(table).substr(0, 3);
    for_each_proc_line(
        proc_path(pid, fmt::format("net/{}", table).c_str()).c_str(), k_table_bytes,
        [&](std::string_view line) { return parse_inet_socket_line(line, protocol, sockets); });
  }
  for_each_proc_line(proc_path(pid, "net/unix").c_str(), k_table_bytes, [&](std::string_view line) {
    parse_unix_socket_line(line, sockets);
    return true;
  });
  return sockets;
}

}  // namespace

}  // namespace treeguard::platform

namespace treeguard {

std::vector<ProcessHoldings> read_holdings(const std::vector<MemberInfo>& members) {
  std::vector<ProcessHoldings> out;
  platform::ProcReader reader;
  for (std::size_t i = 0; i < members.size() && i < k_holdings_processes; ++i) {
    if (auto read = reader.read(members[i])) {
      out.push_back(std::move(*read));
    }
  }
  return out;
}

}  // namespace treeguard
