#include "linux/cgroup_fs.hpp"

#include "posix/unique_fd.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

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

// The `index`th word of `text` (words are separated by runs of spaces),
// or an empty view when it has fewer.
std::string_view word(std::string_view text, std::size_t index) {
  std::size_t at = 0;
  for (std::size_t i = 0;; ++i) {
    at = text.find_first_not_of(' ', at);
    if (at == std::string_view::npos) {
      return {};
    }
    const auto end = std::min(text.find(' ', at), text.size());
    if (i == index) {
      return text.substr(at, end - at);
    }
    at = end;
  }
}

}  // namespace

Result<std::string> find_cgroup2_mount_uncached();

std::optional<std::string> find_cgroup2_mount(const std::string& mountinfo) {
  // Views into the text, no stream per line: every run, nested ones
  // included, parses the whole mountinfo before it can make its leaf.
  std::string_view rest(mountinfo);
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    // id parent major:minor root mountpoint options [optional...] - fstype source superopts
    const auto separator = line.find(" - ");
    if (separator == std::string_view::npos || word(line.substr(separator + 3), 0) != "cgroup2") {
      continue;
    }
    const std::string_view head = line.substr(0, separator);
    const std::string_view mount_point = word(head, 4);
    if (!mount_point.empty() && word(head, 3) == "/") {
      return unescape_mount_path(std::string(mount_point));
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
  return own_cgroup_dir(process_cgroup(static_cast<int>(::getpid())));
}

Result<std::string> own_cgroup_dir(const std::optional<std::string>& relative) {
  auto mount = cgroup2_mount();
  if (!mount) {
    return fail(mount.error());
  }
  if (!relative) {
    return fail(plain_error("/proc/self/cgroup has no cgroup v2 entry"));
  }
  if (relative->find("(deleted)") != std::string::npos) {
    return fail(plain_error("treeguard's own cgroup was deleted"));
  }
  if (*relative == "/") {
    return *mount;
  }
  return *mount + *relative;
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

bool cgroup_within(const std::string& path, const std::string& top) {
  return path == top
         || (path.size() > top.size() && path.compare(0, top.size(), top) == 0
             && (top.back() == '/' || path[top.size()] == '/'));
}

std::string cgroup_relative(const std::string& mount, const std::string& path) {
  if (mount == "/") {
    return path;
  }
  return path.size() > mount.size() ? path.substr(mount.size()) : "/";
}

std::optional<std::uint64_t> parse_flat_key(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string name;
  std::string value;
  while (lines >> name >> value) {
    if (name == key) {
      char* end = nullptr;
      errno = 0;
      const unsigned long long number = std::strtoull(value.c_str(), &end, 10);
      if (errno != 0 || end == value.c_str() || *end != '\0') {
        return std::nullopt;
      }
      return static_cast<std::uint64_t>(number);
    }
  }
  return std::nullopt;
}

bool has_word(const std::string& list, const std::string& name) {
  std::istringstream words(list);
  std::string word;
  while (words >> word) {
    if (word == name) {
      return true;
    }
  }
  return false;
}

std::string words_or_none(const std::string& list) {
  std::istringstream words(list);
  std::string word;
  std::string out;
  while (words >> word) {
    out += (out.empty() ? "" : " ") + word;
  }
  return out.empty() ? std::string("none") : out;
}

Result<void> write_cgroup_file(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return fail(errno_error(errno, fmt::format("open {}", path)));
  }
  UniqueFd owner(fd);
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return fail(errno_error(errno, fmt::format("write '{}' to {}", text, path)));
  }
  return {};
}

namespace {

// Why treeguard may not move itself out of `parent` to meet the
// no-internal-processes rule, if it may not: only when `parent` is
// treeguard's own cgroup and treeguard is the only process in it (a shell
// or make beside it is not ours to move).
std::optional<std::string> why_not_move_self(const std::string& parent, const std::string& procs) {
  const std::string rule = "the no-internal-processes rule: a cgroup holding processes cannot "
                           "give controllers to a leaf";
  auto own = own_cgroup_dir();
  if (!own) {
    return own.error().message();
  }
  if (*own != parent) {
    return fmt::format("cgroup {} holds processes ({})", parent, rule);
  }
  const std::string self = std::to_string(::getpid());
  std::istringstream pids(procs);
  std::string pid;
  while (pids >> pid) {
    if (pid != self) {
      return fmt::format(
          "cgroup {} holds processes other than treeguard (pid {}; {}); start treeguard in a "
          "cgroup of its own (systemd-run --scope -p Delegate=yes, a unit with Delegate=yes) or "
          "give --cgroup-parent one that holds none",
          parent, pid, rule);
    }
  }
  return std::nullopt;
}

// Moves treeguard into k_controller_cgroup below `parent` (its own).
Result<void> move_self_below(const std::string& parent) {
  const std::string below = parent + "/" + k_controller_cgroup;
  if (::mkdir(below.c_str(), 0755) != 0 && errno != EEXIST) {
    return fail(errno_error(errno, fmt::format("mkdir {}", below)));
  }
  struct stat info {};
  if (::lstat(below.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return fail(plain_error(fmt::format("{} is not a cgroup directory", below)));
  }
  return write_cgroup_file(below + "/cgroup.procs", std::to_string(::getpid()));
}

// What giving `controllers` from `parent` takes: the "+name" words to
// write to its cgroup.subtree_control (none when all are given), and
// whether treeguard must move itself below first. Reads only.
struct ControllerSteps {
  std::string enable;
  bool move_self = false;
};

Result<ControllerSteps> controller_steps(const std::string& parent,
                                         const std::vector<std::string>& controllers) {
  ControllerSteps steps;
  auto given = read_whole(parent + "/cgroup.subtree_control");
  if (!given) {
    return fail(given.error());
  }
  for (const auto& name : controllers) {
    if (!has_word(*given, name)) {
      steps.enable += (steps.enable.empty() ? "+" : " +") + name;
    }
  }
  if (steps.enable.empty()) {
    return steps;
  }
  auto available = read_whole(parent + "/cgroup.controllers");
  if (!available) {
    return fail(available.error());
  }
  for (const auto& name : controllers) {
    if (!has_word(*available, name)) {
      return fail(plain_error(fmt::format(
          "cgroup {} has no {} controller to give its leaf (its cgroup.controllers: {}; {})",
          parent, name, words_or_none(*available),
          cgroup2_mount() && *cgroup2_mount() == parent
              ? "it is not in this host's cgroup v2: bound to cgroup v1, or not in the kernel"
              : "the cgroup above it does not give it")));
    }
  }
  // Looked at before the write, not left to its EBUSY: the kernel lets a
  // cgroup holding processes enable threaded controllers (pids, cpu), which
  // makes it a thread root, and the domain leaf beneath it then refuses
  // COMMAND (clone3: EOPNOTSUPP). The root cgroup may hold processes.
  auto mount = cgroup2_mount();
  auto procs = read_whole(parent + "/cgroup.procs");
  if (!procs) {
    return fail(procs.error());
  }
  if ((!mount || *mount != parent) && procs->find_first_not_of(" \n") != std::string::npos) {
    if (auto why = why_not_move_self(parent, *procs)) {
      return fail(plain_error(*why));
    }
    steps.move_self = true;
  }
  return steps;
}

}  // namespace

Result<void> check_controllers(const std::string& parent,
                               const std::vector<std::string>& controllers) {
  auto steps = controller_steps(parent, controllers);
  if (!steps) {
    return fail(steps.error());
  }
  return {};
}

Result<void> give_controllers(const std::string& parent,
                              const std::vector<std::string>& controllers) {
  auto steps = controller_steps(parent, controllers);
  if (!steps) {
    return fail(steps.error());
  }
  if (steps->enable.empty()) {
    return {};
  }
  if (steps->move_self) {
    TG_TRY(move_self_below(parent));
  }
  return write_cgroup_file(parent + "/cgroup.subtree_control", steps->enable);
}

}  // namespace treeguard::platform
