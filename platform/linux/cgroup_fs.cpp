#include "linux/cgroup_fs.hpp"

#include "posix/unique_fd.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <sstream>

namespace treeguard::platform {

namespace {

Result<std::string> read_whole(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(errno_error(errno, fmt::format("open {}", path)));
  }
  UniqueFd owner(fd);
  std::string out;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return fail(errno_error(errno, fmt::format("read {}", path)));
    }
    if (n == 0) {
      return out;
    }
    out.append(buffer, static_cast<std::size_t>(n));
  }
}

// Mountinfo escapes spaces and the like as \040 (octal).
std::string unescape_mount_path(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      int value = 0;
      bool ok = true;
      for (std::size_t j = 1; j <= 3; ++j) {
        char c = text[i + j];
        if (c < '0' || c > '7') {
          ok = false;
          break;
        }
        value = value * 8 + (c - '0');
      }
      if (ok) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace

Result<std::string> find_cgroup2_mount_uncached();

std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo) {
  std::istringstream lines(mountinfo);
  std::string line;
  while (std::getline(lines, line)) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    auto separator = line.find(" - ");
    if (separator == std::string::npos) {
      continue;
    }
    std::istringstream tail(line.substr(separator + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") {
      continue;
    }
    std::istringstream head(line.substr(0, separator));
    std::string id, parent, device, root, mount_point;
    head >> id >> parent >> device >> root >> mount_point;
    if (!mount_point.empty() && root == "/") {
      return unescape_mount_path(mount_point);
    }
  }
  return std::nullopt;
}

Result<std::string> cgroup2_mount() {
  // Read once per process: mounts do not move under a run, and a launcher
  // should not parse mountinfo twice per compile.
  static std::optional<Result<std::string>> cached;
  if (!cached) {
    cached = find_cgroup2_mount_uncached();
  }
  return *cached;
}

Result<std::string> find_cgroup2_mount_uncached() {
  auto text = read_whole("/proc/self/mountinfo");
  if (!text) {
    return fail(text.error());
  }
  auto mount = find_cgroup2_mount(*text);
  if (!mount) {
    return fail(plain_error("no cgroup2 file system is mounted (see /proc/self/mountinfo)"));
  }
  return *mount;
}

Result<std::string> own_cgroup_dir() {
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  auto text = read_whole("/proc/self/cgroup");
  if (!text) {
    return fail(text.error());
  }
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) == 0) {
      std::string relative = line.substr(3);
      if (relative.find("(deleted)") != std::string::npos) {
        return fail(plain_error("treeguard's own cgroup was deleted"));
      }
      if (relative == "/") {
        return *mount;
      }
      return *mount + relative;
    }
  }
  return fail(plain_error("/proc/self/cgroup has no cgroup v2 entry"));
}

Result<std::string> resolve_cgroup_parent(const std::string& requested) {
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  std::string candidate = requested;
  if (candidate.rfind(*mount + "/", 0) != 0 && candidate != *mount) {
    if (candidate.empty() || candidate.front() != '/') {
      candidate = "/" + candidate;
    }
    candidate = *mount + candidate;
  }
  char resolved[PATH_MAX];
  if (::realpath(candidate.c_str(), resolved) == nullptr) {
    return fail(errno_error(errno, fmt::format("cgroup parent {}", candidate)));
  }
  std::string real(resolved);
  if (real != *mount && real.rfind(*mount + "/", 0) != 0) {
    return fail(plain_error(fmt::format("cgroup parent {} is outside the cgroup v2 hierarchy at {}",
                                        requested, *mount)));
  }
  return real;
}

Result<std::string> read_cgroup_file(const std::string& path) {
  return read_whole(path);
}

std::optional<bool> parse_populated(const std::string& events) {
  std::istringstream lines(events);
  std::string key;
  int value = 0;
  while (lines >> key >> value) {
    if (key == "populated") {
      return value != 0;
    }
  }
  return std::nullopt;
}

std::optional<std::string> process_cgroup(int pid) {
  auto text = read_whole("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) {
    return std::nullopt;
  }
  std::size_t at = 0;
  while (at < text->size()) {
    std::size_t end = text->find('\n', at);
    if (end == std::string::npos) {
      end = text->size();
    }
    if (text->compare(at, 3, "0::") == 0) {
      return text->substr(at + 3, end - at - 3);
    }
    at = end + 1;
  }
  return std::nullopt;
}

std::string cgroup_relative(const std::string& mount, const std::string& path) {
  if (mount == "/") {
    return path;
  }
  return path.size() > mount.size() ? path.substr(mount.size()) : "/";
}

}  // namespace treeguard::platform
