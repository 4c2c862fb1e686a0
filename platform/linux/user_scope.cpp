// The systemd scopes on Linux: see src/port/user_scope.hpp.
#include "port/user_scope.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/linux_boundary.hpp"
#include "linux/scope_exec.hpp"
#include "linux/signals.hpp"
#include "posix/unique_fd.hpp"
#include "run_id.hpp"

#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace treeguard {

namespace {

// Each manager's scope: the marker its re-execution leaves, and
// systemd-run's arguments to reach it.
struct Manager {
  const char* name;
  const char* marker;
  std::vector<std::string> arguments;
  // The scope is PartOf= the unit treeguard was started in, so that
  // stopping that unit (a CI job's service, cancelled) stops the run too:
  // the scope is not inside it. Only where both are the same manager's.
  bool part_of_own_unit = false;
};

const std::vector<Manager>& managers() {
  static const std::vector<Manager> all{
      {"user", "TREEGUARD_USER_SCOPE", {"--user"}, false},
      // root's system manager (systemd-run's default).
      {"system", "TREEGUARD_SYSTEM_SCOPE", {}, true},
  };
  return all;
}

const Manager* find_manager(const std::string& name) {
  for (const Manager& manager : managers()) {
    if (name == manager.name) {
      return &manager;
    }
  }
  return nullptr;
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// The unix socket a --user systemd-run would reach: the manager's private
// socket or the session bus under $XDG_RUNTIME_DIR, else the path of a
// unix:path= $DBUS_SESSION_BUS_ADDRESS.
std::vector<std::string> user_bus_candidates() {
  std::vector<std::string> out;
  if (std::string runtime = env_or_empty("XDG_RUNTIME_DIR"); !runtime.empty()) {
    out.push_back(runtime + "/systemd/private");
    out.push_back(runtime + "/bus");
  }
  const std::string address = env_or_empty("DBUS_SESSION_BUS_ADDRESS");
  const std::string prefix = "unix:path=";
  if (address.compare(0, prefix.size(), prefix) == 0) {
    std::string path = address.substr(prefix.size());
    out.push_back(path.substr(0, path.find(',')));
  }
  return out;
}

// True when something accepts connections on the unix socket `path`.
bool listening(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) {
    return false;
  }
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  platform::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd
         && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
}

std::optional<std::string> find_systemd_run() {
  for (const std::string& candidate : platform::exec_candidates("systemd-run")) {
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

// argv of this process, as the kernel keeps it.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < all.size()) {
    std::size_t end = all.find('\0', start);
    if (end == std::string::npos) {
      end = all.size();
    }
    out.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string own_executable() {
  char buffer[4096];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n > 0 ? std::string(buffer, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

namespace {

// The entry one marker says: nothing where it is absent.
ScopeEntry entry_for(const Manager& manager) {
  ScopeEntry entry;
  const char* raw = std::getenv(manager.marker);
  if (raw == nullptr) {
    return entry;
  }
  const std::string id = raw;
  ::unsetenv(manager.marker);
  if (!is_valid_run_id(id)) {
    entry.refused = fmt::format("{} is not a run id; no scope is tried", manager.marker);
    return entry;
  }
  const std::string unit = fmt::format("/treeguard-{}.scope", id);
  auto own = platform::process_cgroup(static_cast<int>(::getpid()));
  if (!own || own->size() < unit.size()
      || own->compare(own->size() - unit.size(), unit.size(), unit) != 0) {
    entry.refused = fmt::format("re-executed for the {} scope treeguard-{}.scope but in {}",
                                manager.name, id, own ? *own : std::string("no cgroup"));
    return entry;
  }
  entry.run_id = id;
  entry.manager = manager.name;
  return entry;
}

}  // namespace

ScopeEntry take_scope_entry() {
  // Every marker is cleared, so COMMAND inherits none.
  ScopeEntry found;
  for (const Manager& manager : managers()) {
    ScopeEntry entry = entry_for(manager);
    if (entry.run_id || !entry.refused.empty()) {
      found = entry;
    }
  }
  return found;
}

namespace {

// Why the environment names no user manager, and what would: the runtime
// directory systemd-logind makes for a logged-in (or lingering) user.
std::string no_user_bus_in_environment() {
  const std::string runtime = fmt::format("/run/user/{}", ::geteuid());
  if (listening(runtime + "/bus") || listening(runtime + "/systemd/private")) {
    return fmt::format("no user manager in the environment (XDG_RUNTIME_DIR is not set, but one "
                       "listens in {0}: export XDG_RUNTIME_DIR={0})",
                       runtime);
  }
  if (::access("/run/systemd/system", F_OK) == 0) {
    return fmt::format("no user manager: none listens in {} (systemd starts one while the user "
                       "is logged in, or always after root runs `loginctl enable-linger USER`)",
                       runtime);
  }
  return "no user manager: XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS are not set, and systemd "
         "does not manage this host";
}

Result<std::string> user_scope_offer() {
  std::vector<std::string> candidates = user_bus_candidates();
  if (candidates.empty()) {
    return fail(plain_error(no_user_bus_in_environment()));
  }
  std::string bus;
  for (const std::string& candidate : candidates) {
    if (listening(candidate)) {
      bus = candidate;
      break;
    }
  }
  if (bus.empty()) {
    return fail(plain_error(fmt::format("no user manager listening on {}", candidates.front())));
  }
  auto systemd_run = find_systemd_run();
  if (!systemd_run) {
    return fail(plain_error(fmt::format("user manager at {}, but no systemd-run in PATH", bus)));
  }
  return fmt::format("{} --user --scope (user manager at {})", *systemd_run, bus);
}

}  // namespace

// The system manager as systemd-run reaches it for root: its private
// socket (no bus daemon needed).
Result<std::string> system_scope_offer() {
  const std::string socket = "/run/systemd/private";
  if (::geteuid() != 0) {
    return fail(plain_error("not root (the system manager's scopes are root's)"));
  }
  if (!listening(socket)) {
    return fail(plain_error(
        ::access("/run/systemd/system", F_OK) == 0
            ? fmt::format("no system manager listening on {}", socket)
            : "no system manager: systemd does not manage this host (run treeguard in a cgroup of "
              "its own that holds no other process, or give --cgroup-parent one)"));
  }
  auto systemd_run = find_systemd_run();
  if (!systemd_run) {
    return fail(
        plain_error(fmt::format("system manager at {}, but no systemd-run in PATH", socket)));
  }
  return fmt::format("{} --scope (system manager at {})", *systemd_run, socket);
}

Result<std::string> scope_offer(const std::string& manager) {
  if (manager == "user") {
    return user_scope_offer();
  }
  if (manager == "system") {
    return system_scope_offer();
  }
  return fail(plain_error(fmt::format("no {} scope on this build", manager)));
}

namespace {

// The unit whose cgroup treeguard is in: the last .service or .scope of
// its cgroup path; empty where there is none.
std::string own_unit() {
  auto own = platform::process_cgroup(static_cast<int>(::getpid()));
  if (!own) {
    return {};
  }
  std::string unit;
  std::size_t start = 0;
  while (start < own->size()) {
    std::size_t end = own->find('/', start);
    if (end == std::string::npos) {
      end = own->size();
    }
    const std::string name = own->substr(start, end - start);
    for (const char* suffix : {".service", ".scope"}) {
      const std::size_t n = std::strlen(suffix);
      if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
        unit = name;
      }
    }
    start = end + 1;
  }
  return unit;
}

}  // namespace

namespace platform {

std::optional<ScopeExec> scope_exec(const std::string& manager_name, const std::string& run_id,
                                    const std::string& systemd_run, const std::string& exe,
                                    const std::vector<std::string>& args,
                                    const std::string& own_unit) {
  const Manager* manager = find_manager(manager_name);
  if (manager == nullptr || args.empty()) {
    return std::nullopt;
  }
  ScopeExec out;
  std::vector<std::string>& argv = out.argv;
  argv.push_back(systemd_run);
  argv.insert(argv.end(), manager->arguments.begin(), manager->arguments.end());
  // Delegate=yes: the scope's subtree is treeguard's to make its leaf in
  // (and to give controllers from); without it systemd owns every cgroup
  // below the unit.
  for (const char* arg : {"--scope", "--quiet", "--collect", "--property=Delegate=yes"}) {
    argv.emplace_back(arg);
  }
  if (manager->part_of_own_unit && !own_unit.empty()) {
    argv.push_back(fmt::format("--property=PartOf={}", own_unit));
  }
  argv.push_back(fmt::format("--unit=treeguard-{}.scope", run_id));
  argv.push_back(fmt::format("--description=treeguard run {}", run_id));
  argv.emplace_back("--");
  argv.push_back(exe);
  argv.insert(argv.end(), args.begin() + 1, args.end());
  out.environment.emplace_back(manager->marker, run_id);
  out.environment.emplace_back(k_scope_argv0_marker, args.front());
  return out;
}

void restore_scope_argv0(std::vector<std::string>& args) {
  const char* argv0 = std::getenv(k_scope_argv0_marker);
  if (argv0 == nullptr) {
    return;
  }
  const std::string name = argv0;
  ::unsetenv(k_scope_argv0_marker);
  for (const Manager& manager : managers()) {
    if (std::getenv(manager.marker) != nullptr && !args.empty()) {
      args.front() = name;
      return;
    }
  }
}

}  // namespace platform

Error reexec_in_scope(const std::string& name, const std::string& run_id) {
  auto systemd_run = find_systemd_run();
  const std::string exe = own_executable();
  const Manager* manager = find_manager(name);
  std::optional<platform::ScopeExec> exec;
  if (systemd_run && !exe.empty() && manager != nullptr) {
    exec = platform::scope_exec(name, run_id, *systemd_run, exe, own_arguments(),
                                manager->part_of_own_unit ? own_unit() : std::string());
  }
  if (!exec) {
    return plain_error(fmt::format("cannot re-execute treeguard for the {} scope", name));
  }
  std::vector<char*> pointers;
  for (std::string& arg : exec->argv) {
    pointers.push_back(arg.data());
  }
  pointers.push_back(nullptr);
  const auto unset_markers = [&exec] {
    for (const auto& [key, value] : exec->environment) {
      ::unsetenv(key.c_str());
    }
  };
  for (const auto& [key, value] : exec->environment) {
    if (::setenv(key.c_str(), value.c_str(), 1) != 0) {
      const int error = errno;
      unset_markers();
      return errno_error(error, "setenv");
    }
  }
  // What treeguard blocked and set (host_init) is not handed on: the
  // treeguard started in the scope takes what this one inherited, and so
  // does COMMAND. Blocked TERM, INT, HUP would stay blocked in COMMAND's
  // whole tree (systemd's stop, the drain's TERM pending until the force).
  const platform::OwnSignalState own = platform::hand_back_signal_state();
  ::execv(pointers[0], pointers.data());
  const int error = errno;
  platform::resume_signal_state(own);
  unset_markers();
  return errno_error(error, fmt::format("exec {}", *systemd_run));
}

}  // namespace treeguard
