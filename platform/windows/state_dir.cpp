// The state directory on Windows (port/state_dir.hpp): by default
// %LOCALAPPDATA%\treeguard, in the user's own profile. Refused: a path
// through a reparse point (symlink, junction, mount point) anywhere, and a
// directory not owned by the current user.
#include "port/state_dir.hpp"

#include "windows/security.hpp"
#include "windows/win_util.hpp"

namespace treeguard {

using platform::last_error;
using platform::UniqueHandle;

std::optional<std::filesystem::path> platform_state_dir(const EnvironmentLookup& environment) {
  auto base = environment("LOCALAPPDATA");
  if (!base || base->empty()) {
    return std::nullopt;
  }
  std::filesystem::path path(platform::widen(*base));
  if (!path.is_absolute()) {
    return std::nullopt;
  }
  return (path / "treeguard").lexically_normal();
}

std::optional<std::string> process_environment(const char* name) {
  const std::wstring wide_name = platform::widen(name);
  std::wstring value(256, L'\0');
  for (;;) {
    ::SetLastError(ERROR_SUCCESS);
    const DWORD length = ::GetEnvironmentVariableW(wide_name.c_str(), value.data(),
                                                   static_cast<DWORD>(value.size()));
    if (length == 0) {
      if (::GetLastError() == ERROR_ENVVAR_NOT_FOUND) {
        return std::nullopt;
      }
      return std::string();  // set, empty
    }
    if (length < value.size()) {
      value.resize(length);
      return platform::narrow(value);
    }
    value.resize(length);  // the size it needs, terminator included
  }
}

std::vector<StateDirChoice> platform_fallback_dirs(const EnvironmentLookup&) {
  return {};  // %LOCALAPPDATA% is the user's own; nothing to add before the last resort
}

std::string current_user_id() {
  return platform::current_user_sid_label().substr(4);  // "S-1-5-..."
}

Result<void> prepare_state_dir(const std::filesystem::path& requested) {
  std::error_code error;
  std::filesystem::path dir = std::filesystem::absolute(requested, error);
  if (error) {
    return fail(Error{error, "state directory " + requested.string()});
  }
  dir = dir.lexically_normal();
  while (!dir.empty() && dir.filename().empty() && dir != dir.root_path()) {
    dir = dir.parent_path();
  }
  const std::string name = "state directory " + dir.string();
  std::filesystem::path prefix = dir.root_path();
  for (const std::filesystem::path& part : dir.relative_path()) {
    prefix /= part;
    DWORD attributes = ::GetFileAttributesW(prefix.wstring().c_str());
    if (attributes == INVALID_FILE_ATTRIBUTES) {
      const DWORD missing = ::GetLastError();
      if (missing != ERROR_FILE_NOT_FOUND && missing != ERROR_PATH_NOT_FOUND) {
        return fail(platform::windows_error(missing, name + ": stat " + prefix.string()));
      }
      // The new directory inherits the parent's ACL: in %LOCALAPPDATA%,
      // the user's own.
      if (!::CreateDirectoryW(prefix.wstring().c_str(), nullptr)
          && ::GetLastError() != ERROR_ALREADY_EXISTS) {
        return fail(last_error(name + ": create " + prefix.string()));
      }
      attributes = ::GetFileAttributesW(prefix.wstring().c_str());
      if (attributes == INVALID_FILE_ATTRIBUTES) {
        return fail(last_error(name + ": stat " + prefix.string()));
      }
    }
    if ((attributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) {
      return fail(plain_error(name + ": " + prefix.string()
                              + " is a symlink or junction; refusing to use it"));
    }
    if ((attributes & FILE_ATTRIBUTE_DIRECTORY) == 0) {
      return fail(plain_error(name + ": " + prefix.string() + " is not a directory"));
    }
  }
  UniqueHandle handle(::CreateFileW(
      dir.wstring().c_str(), READ_CONTROL, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
      nullptr, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!handle) {
    return fail(last_error(name + ": open"));
  }
  return platform::check_owned_by_current_user(handle.get(), name);
}

}  // namespace treeguard
