// Whether the unit treeguard runs in is delegated: see unit_delegation.hpp.
#include "linux/unit_delegation.hpp"

#include "linux/cgroup_fs.hpp"
#include "linux/linux_boundary.hpp"
#include "linux/proc.hpp"
#include "port/file_io.hpp"
#include "posix/unique_fd.hpp"
#include "run_id.hpp"
#include "state_dir.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

extern char** environ;

namespace treeguard::platform {

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size()
         && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A unit name as systemd writes them (and so a safe file name): ASCII
// letters, digits and ":-_.\@", at most 255 characters.
bool plain_unit_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') {
    return false;
  }
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || std::strchr(":-_.\\@", c) != nullptr;
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) {
      out.push_back(part);
    }
  }
  return out;
}

// "user@1000.service" -> 1000; -1 for any other name.
long user_manager_uid(const std::string& name) {
  const std::string prefix = "user@";
  const std::string suffix = ".service";
  if (name.compare(0, prefix.size(), prefix) != 0 || !ends_with(name, suffix)) {
    return -1;
  }
  const std::string digits =
      name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 9
      || digits.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stol(digits);
}

// treeguard-RUNID.scope: a scope treeguard asked for (Delegate=yes).
bool treeguard_scope(const std::string& name) {
  const std::string prefix = "treeguard-";
  return name.compare(0, prefix.size(), prefix) == 0 && ends_with(name, ".scope")
         && is_valid_run_id(name.substr(prefix.size(), name.size() - prefix.size() - 6));
}

// treeguard-RUNID: a run's leaf.
bool treeguard_leaf(const std::string& name) {
  const std::string prefix = "treeguard-";
  return name.compare(0, prefix.size(), prefix) == 0 && is_valid_run_id(name.substr(prefix.size()));
}

}  // namespace

std::optional<ManagedUnit> unit_of_cgroup(const std::string& cgroup) {
  const std::vector<std::string> parts = components(cgroup);
  std::optional<ManagedUnit> found;
  std::string path;
  long user = -1;
  bool below_unit_made_by_us = false;
  for (const std::string& part : parts) {
    path += "/" + part;
    const bool unit = ends_with(part, ".service") || ends_with(part, ".scope");
    if (!unit) {
      // Below the unit: a leaf of treeguard's is a nested run's.
      if (found && treeguard_leaf(part)) {
        below_unit_made_by_us = true;
      }
      continue;
    }
    below_unit_made_by_us = false;
    if (!plain_unit_name(part)) {
      return std::nullopt;
    }
    found = ManagedUnit{user >= 0 ? "user" : "system", part, path, user};
    // The units below user@UID.service are that user's manager's.
    if (const long uid = user_manager_uid(part); uid >= 0 && user < 0) {
      user = uid;
    }
  }
  if (!found || below_unit_made_by_us || treeguard_scope(found->unit)) {
    return std::nullopt;
  }
  return found;
}

std::vector<std::string> delegation_question(const std::string& systemctl,
                                             const ManagedUnit& unit) {
  std::vector<std::string> argv{systemctl};
  if (unit.manager == "user") {
    argv.emplace_back("--user");
  }
  for (const char* arg : {"--no-pager", "show", "-p", "Delegate", "--value", "--"}) {
    argv.emplace_back(arg);
  }
  argv.push_back(unit.unit);
  return argv;
}

std::filesystem::path delegation_file(const std::filesystem::path& state_dir,
                                      const ManagedUnit& unit) {
  return state_dir / std::string(k_units_dir) / (unit.manager + "-" + unit.unit);
}

namespace {

// Reads each of `fds` into its string (at most 4 KiB kept of each) until
// every one is at EOF, or `deadline`; false at the deadline.
bool read_until(const std::vector<std::pair<int, std::string*>>& fds,
                std::chrono::steady_clock::time_point deadline) {
  std::vector<pollfd> open;
  for (const auto& [fd, out] : fds) {
    open.push_back(pollfd{fd, POLLIN, 0});
  }
  char buffer[512];
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return false;
    }
    const int n = ::poll(open.data(), open.size(), static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n == 0) {
      return false;
    }
    if (n < 0) {
      return true;
    }
    for (std::size_t i = open.size(); i-- > 0;) {
      if (open[i].revents == 0) {
        continue;
      }
      const ssize_t got = ::read(open[i].fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) {
        continue;
      }
      if (got <= 0) {
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));  // EOF (or unreadable)
        continue;
      }
      for (const auto& [fd, out] : fds) {
        if (fd == open[i].fd && out->size() < 4096) {
          out->append(buffer, static_cast<std::size_t>(got));
        }
      }
    }
  }
  return true;
}

}  // namespace

Result<std::string> run_for_output(const std::vector<std::string>& argv,
                                   std::chrono::milliseconds limit) {
  // The answer is its stdout alone: a warning on stderr is no part of it.
  int out_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe"));
  }
  UniqueFd out_read(out_fds[0]);
  UniqueFd out_write(out_fds[1]);
  int err_fds[2];
  if (::pipe2(err_fds, O_CLOEXEC) != 0) {
    return fail(errno_error(errno, "pipe"));
  }
  UniqueFd err_read(err_fds[0]);
  UniqueFd err_write(err_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, out_write.get(), 1);
  ::posix_spawn_file_actions_adddup2(&actions, err_write.get(), 2);
  ::posix_spawnattr_init(&attr);
  sigset_t none;
  sigset_t every;
  sigemptyset(&none);
  sigfillset(&every);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &every);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> pointers;
  for (const std::string& arg : argv) {
    pointers.push_back(const_cast<char*>(arg.c_str()));
  }
  pointers.push_back(nullptr);
  pid_t child = -1;
  const int spawned = ::posix_spawn(&child, pointers[0], &actions, &attr, pointers.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  out_write.reset();
  err_write.reset();
  if (spawned != 0) {
    return fail(errno_error(spawned, fmt::format("run {}", argv[0])));
  }
  std::string output;
  std::string errors;
  const bool ended = read_until({{out_read.get(), &output}, {err_read.get(), &errors}},
                                std::chrono::steady_clock::now() + limit);
  if (!ended) {
    ::kill(child, SIGKILL);  // our own child, not yet reaped: its pid is still its
  }
  int status = 0;
  pid_t waited = -1;
  while ((waited = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (!ended) {
    return fail(plain_error(fmt::format("{} did not answer within {} ms", argv[0], limit.count())));
  }
  // A caller that ignores SIGCHLD has its children reaped for it: the
  // status is lost (ECHILD), the output stands.
  if (waited == child && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    const std::string& words = errors.empty() ? output : errors;
    std::string said = words.substr(0, words.find('\n'));
    return fail(plain_error(fmt::format("{} failed{}{}", argv[0], said.empty() ? "" : ": ", said)));
  }
  return output;
}

namespace {

// The kept answer's text: format line, boot, the unit's cgroup, the answer.
std::string answer_text(const std::string& boot_id, unsigned long long cgroup_id, bool delegated) {
  return fmt::format("treeguard unit delegation 1\nboot {}\ncgroup {}\ndelegate {}\n", boot_id,
                     cgroup_id, delegated ? "yes" : "no");
}

// The kept answer, when it is of this boot and cgroup.
std::optional<bool> kept_answer(const std::string& text, const std::string& boot_id,
                                unsigned long long cgroup_id) {
  for (const bool delegated : {true, false}) {
    if (text == answer_text(boot_id, cgroup_id, delegated)) {
      return delegated;
    }
  }
  return std::nullopt;
}

// The manager's words as an answer: "yes" or "no", one line.
std::optional<bool> parse_answer(const std::string& output) {
  if (output == "yes\n" || output == "yes") {
    return true;
  }
  if (output == "no\n" || output == "no") {
    return false;
  }
  return std::nullopt;
}

// Keeps the answer; an empty string when kept, else why not.
std::string keep_answer(const std::filesystem::path& state_dir, const std::filesystem::path& file,
                        const std::string& text) {
  if (auto made = prepare_state_dir(state_dir / std::string(k_units_dir)); !made) {
    return made.error().message();
  }
  if (auto written = write_file_atomic(file, text, false); !written) {
    return written.error().message();
  }
  return {};
}

}  // namespace

Delegation unit_delegation(const ManagedUnit& unit, const std::filesystem::path& state_dir,
                           const std::string& boot_id, unsigned long long cgroup_id,
                           const std::string& systemctl, const AskManager& ask) {
  Delegation result;
  const std::filesystem::path file =
      state_dir.empty() ? std::filesystem::path() : delegation_file(state_dir, unit);
  if (!file.empty() && !boot_id.empty()) {
    // The directory is checked as the state directory is (no symlink,
    // ours, 0700); the file is read without following a symlink or
    // blocking on a FIFO, and only if it is ours alone.
    if (prepare_state_dir(state_dir / std::string(k_units_dir))) {
      if (auto text = read_file_untrusted(file, 4096); text) {
        if (auto kept = kept_answer(*text, boot_id, cgroup_id)) {
          result.delegated = *kept;
          result.how = fmt::format("systemd's answer of this boot, kept in {}", file.string());
          return result;
        }
      }
    }
  }
  const std::string manager = unit.manager == "user" ? "the user's systemd" : "systemd";
  auto output = ask(delegation_question(systemctl, unit));
  result.asked = true;
  if (!output) {
    result.how = fmt::format("{} did not answer ({})", manager, output.error().message());
    return result;
  }
  result.delegated = parse_answer(*output);
  if (!result.delegated) {
    // An answer that cannot be read is not a yes: no leaf beneath the
    // unit on it (DESIGN.md [scopes]). Not kept: asked again next time.
    result.delegated = false;
    result.how = fmt::format("{} answered '{}', not yes or no: taken as not delegated", manager,
                             output->substr(0, std::min<std::size_t>(output->size(), 80)));
    return result;
  }
  if (file.empty() || boot_id.empty()) {
    result.how = fmt::format("asked {}, not kept (no state directory or boot id)", manager);
    return result;
  }
  const std::string not_kept =
      keep_answer(state_dir, file, answer_text(boot_id, cgroup_id, *result.delegated));
  result.how = not_kept.empty() ? fmt::format("asked {}, kept in {}", manager, file.string())
                                : fmt::format("asked {}, not kept: {}", manager, not_kept);
  return result;
}

std::optional<OwnUnit> own_unit_delegation(const std::filesystem::path& state_dir,
                                           const std::optional<std::string>& own) {
  if (!own) {
    return std::nullopt;
  }
  auto unit = unit_of_cgroup(*own);
  if (!unit) {
    return std::nullopt;
  }
  OwnUnit out{*unit, Delegation{}};
  if (unit->manager == "user" && unit->user != static_cast<long>(::geteuid())) {
    out.delegation.delegated = false;
    out.delegation.how =
        fmt::format("it is user {}'s manager's, not uid {}'s (not asked)", unit->user, ::geteuid());
    return out;
  }
  if (::access("/run/systemd/system", F_OK) != 0) {
    out.delegation.how = "no systemd manages this host (not asked)";
    return out;
  }
  std::string systemctl;
  for (const std::string& candidate : exec_candidates("systemctl")) {
    if (::access(candidate.c_str(), X_OK) == 0) {
      systemctl = candidate;
      break;
    }
  }
  if (systemctl.empty()) {
    out.delegation.how = "no systemctl in PATH to ask the manager";
    return out;
  }
  unsigned long long cgroup_id = 0;
  if (auto mount = cgroup2_mount(); mount) {
    struct stat info {};
    if (::stat((*mount + unit->cgroup).c_str(), &info) == 0) {
      cgroup_id = static_cast<unsigned long long>(info.st_ino);
    }
  }
  out.delegation = unit_delegation(*unit, state_dir, boot_id(), cgroup_id, systemctl,
                                   [](const std::vector<std::string>& argv) {
                                     return run_for_output(argv, std::chrono::seconds(5));
                                   });
  return out;
}

}  // namespace treeguard::platform
