// POSIX checks for the state directory (port/state_dir.hpp).
#include "port/state_dir.hpp"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace treeguard {

namespace {

// "/a/b/" -> "/a/b": the trailing separator is not a component.
std::filesystem::path without_trailing_separator(std::filesystem::path path) {
  while (!path.empty() && path.filename().empty() && path != path.root_path()) {
    path = path.parent_path();
  }
  return path;
}

// The /etc/passwd entry of `uid`: its name and home. Read as a file, not
// through getpwuid (the binary is static: glibc's NSS modules would have to
// match the host's); accounts only a directory service knows are not found.
struct Account {
  std::string name;
  std::string home;
};
std::optional<Account> account_of(uid_t uid) {
  std::ifstream passwd("/etc/passwd");
  std::string line;
  const std::string wanted = std::to_string(uid);
  while (std::getline(passwd, line)) {
    std::vector<std::string> fields;
    std::size_t at = 0;
    for (std::size_t colon; (colon = line.find(':', at)) != std::string::npos; at = colon + 1) {
      fields.push_back(line.substr(at, colon - at));
    }
    fields.push_back(line.substr(at));
    if (fields.size() >= 7 && fields[2] == wanted) {
      return Account{fields[0], fields[5]};
    }
  }
  return std::nullopt;
}

// The account's home directory, if the user database names one.
std::optional<std::filesystem::path> account_home(uid_t uid) {
  auto account = account_of(uid);
  if (!account) {
    return std::nullopt;
  }
  std::filesystem::path home(account->home);
  if (!home.is_absolute() || home == home.root_path()) {
    return std::nullopt;
  }
  return home.lexically_normal();
}

// "uid 65534 (nobody)": who owns something, as an error names them.
std::string user_label(uid_t uid) {
  std::string label = "uid " + std::to_string(uid);
  if (auto account = account_of(uid); account && !account->name.empty()) {
    label += " (" + account->name + ")";
  }
  return label;
}

// A directory that exists and belongs to `uid`: a place nobody else made.
bool owned_directory(const std::filesystem::path& path, uid_t uid) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == uid;
}

// The refusal of a state directory someone else owns, naming them: under a
// shared name (/tmp/treeguard-UID) another user may have made it first.
Error foreign_owner(const std::string& name, uid_t owner) {
  return plain_error(name + ": owned by " + user_label(owner) + ", not " + user_label(::geteuid())
                     + "; another user made it: remove it, or choose the state directory with "
                       "--state-dir or TREEGUARD_STATE_DIR");
}

}  // namespace

std::optional<std::string> process_environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

std::string current_user_id() {
  return std::to_string(::geteuid());
}

std::optional<std::filesystem::path> platform_state_dir(const EnvironmentLookup&) {
  return std::nullopt;  // POSIX: the XDG and runtime-directory chain
}

std::vector<StateDirChoice> platform_fallback_dirs(const EnvironmentLookup& environment) {
  std::vector<StateDirChoice> out;
  const uid_t uid = ::geteuid();
  if (auto home = account_home(uid); home && owned_directory(*home, uid)) {
    const auto set_home = environment("HOME");
    if (!set_home || std::filesystem::path(*set_home).lexically_normal() != *home) {
      out.push_back({*home / ".local" / "state" / "treeguard", "the user database"});
    }
  }
  const std::filesystem::path run_user = std::filesystem::path("/run/user") / std::to_string(uid);
  if (owned_directory(run_user, uid)) {
    out.push_back({run_user / "treeguard", "/run/user/UID"});
  }
  struct stat run {};
  if (uid == 0 && ::lstat("/run", &run) == 0 && S_ISDIR(run.st_mode) && run.st_uid == 0
      && (run.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    out.push_back({"/run/treeguard", "/run"});
  }
  return out;
}

Result<void> prepare_state_dir(const std::filesystem::path& requested) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(requested, error);
  if (error) {
    return fail(Error{error, "state directory " + requested.string()});
  }
  const std::filesystem::path dir = without_trailing_separator(absolute.lexically_normal());
  const std::string name = "state directory " + dir.string();

  // Walk down from the root with lstat, so a symlink anywhere on the way is
  // seen as one (stat would follow it), creating what is missing.
  std::filesystem::path prefix = dir.root_path();
  for (const std::filesystem::path& part : dir.relative_path()) {
    prefix /= part;
    struct stat info {};
    if (::lstat(prefix.c_str(), &info) != 0) {
      if (errno != ENOENT) {
        return fail(errno_error(errno, name + ": stat " + prefix.string()));
      }
      if (::mkdir(prefix.c_str(), 0700) == 0) {
        // mkdir's mode is filtered by the umask; ours must be exactly 0700.
        if (::chmod(prefix.c_str(), 0700) != 0) {
          return fail(errno_error(errno, name + ": chmod " + prefix.string()));
        }
      } else if (errno != EEXIST) {  // EEXIST: a concurrent run made it first
        return fail(errno_error(errno, name + ": create " + prefix.string()));
      }
      if (::lstat(prefix.c_str(), &info) != 0) {
        return fail(errno_error(errno, name + ": stat " + prefix.string()));
      }
    }
    const bool last = prefix == dir;
    if (last && S_ISDIR(info.st_mode) && info.st_uid != ::geteuid()) {
      // Before opening it: as another user we could not (EACCES), and that
      // would read as "cannot be created" rather than "someone made it".
      return fail(foreign_owner(name, info.st_uid));
    }
    if (S_ISLNK(info.st_mode)) {
      return fail(
          plain_error(last ? name + ": is a symlink"
                           : name + ": path component " + prefix.string() + " is a symlink"));
    }
    if (!S_ISDIR(info.st_mode)) {
      return fail(
          plain_error(last ? name + ": is not a directory"
                           : name + ": path component " + prefix.string() + " is not a directory"));
    }  // Whoever may rename entries of a parent may move the state directory
    // away (and the gate with it) while the run's tree lives: every
    // ancestor is ours or root's, and writable by others only if sticky.
    if (!last) {
      if (info.st_uid != ::geteuid() && info.st_uid != 0) {
        return fail(plain_error(name + ": path component " + prefix.string() + " is owned by uid "
                                + std::to_string(info.st_uid)
                                + ", who could move the state directory away"));
      }
      if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (info.st_mode & S_ISVTX) == 0) {
        return fail(plain_error(name + ": path component " + prefix.string()
                                + " is group- or world-writable without the sticky bit"));
      }
    }
  }

  // The final checks go through one descriptor, opened without following
  // a symlink, so they are about the directory that is really there.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int open_error = errno;
    if (open_error == ELOOP) {
      return fail(plain_error(name + ": is a symlink"));
    }
    if (open_error == ENOTDIR) {
      return fail(plain_error(name + ": is not a directory"));
    }
    return fail(errno_error(open_error, name + ": open"));
  }
  struct stat info {};
  const int stat_result = ::fstat(fd, &info);
  const int stat_error = errno;
  ::close(fd);
  if (stat_result != 0) {
    return fail(errno_error(stat_error, name + ": stat"));
  }
  if (info.st_uid != ::geteuid()) {
    return fail(foreign_owner(name, info.st_uid));
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return fail(plain_error(name + ": is group- or world-writable"));
  }

  // The lexically normal path must be the canonical one: this catches what
  // the walk could not (a component swapped for a symlink meanwhile).
  const std::unique_ptr<char, decltype(&::free)> real(::realpath(dir.c_str(), nullptr), &::free);
  if (!real) {
    return fail(errno_error(errno, name + ": realpath"));
  }
  if (dir.string() != real.get()) {
    return fail(plain_error(name + ": is reached through a symlink (really " + real.get() + ")"));
  }
  return {};
}

}  // namespace treeguard
