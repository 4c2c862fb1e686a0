// The evidence's file operations on Windows (src/port/file_io.hpp). Durable means
// FlushFileBuffers on the temporary file, then MoveFileEx with
// MOVEFILE_WRITE_THROUGH, which returns only once the rename is on disk
// (Windows has no directory fsync; the write-through move is its place).
#include "port/file_io.hpp"

#include "windows/security.hpp"
#include "windows/win_util.hpp"

#include <atomic>
#include <chrono>
#include <utility>

namespace treeguard {

using platform::last_error;
using platform::UniqueHandle;

namespace {

std::string temp_name(const std::filesystem::path& target) {
  static std::atomic<unsigned long> counter{0};
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return std::string(k_temp_prefix) + target.filename().string() + "-"
         + std::to_string(::GetCurrentProcessId()) + "-" + std::to_string(counter.fetch_add(1))
         + "-" + std::to_string(static_cast<unsigned long long>(ticks) % 1000000007ULL);
}

}  // namespace

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view content,
                               bool durable) {
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  std::filesystem::path temp;
  UniqueHandle file;
  for (int attempt = 0; attempt < 16 && !file; ++attempt) {
    temp = dir / temp_name(path);
    // CREATE_NEW: never an existing file, never through a link planted
    // under the name. Not shared, not inherited by COMMAND.
    file.reset(::CreateFileW(temp.wstring().c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW,
                             FILE_ATTRIBUTE_NORMAL, nullptr));
    if (!file && ::GetLastError() != ERROR_FILE_EXISTS) {
      return fail(last_error("create " + temp.string()));
    }
  }
  if (!file) {
    return fail(platform::windows_error(ERROR_FILE_EXISTS, "create " + temp.string()));
  }
  auto abandon = [&](Error error) {
    file.reset();
    ::DeleteFileW(temp.wstring().c_str());
    return fail(std::move(error));
  };
  while (!content.empty()) {
    DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(content.size(), 1u << 20));
    DWORD written = 0;
    if (!::WriteFile(file.get(), content.data(), chunk, &written, nullptr) || written == 0) {
      return abandon(last_error("write " + temp.string()));
    }
    content.remove_prefix(written);
  }
  // The data is on disk before the rename shows it under the real name.
  if (durable && !::FlushFileBuffers(file.get())) {
    return abandon(last_error("FlushFileBuffers " + temp.string()));
  }
  if (!::CloseHandle(file.release())) {
    ::DeleteFileW(temp.wstring().c_str());
    return fail(last_error("close " + temp.string()));
  }
  const DWORD flags = MOVEFILE_REPLACE_EXISTING | (durable ? MOVEFILE_WRITE_THROUGH : 0);
  if (!::MoveFileExW(temp.wstring().c_str(), path.wstring().c_str(), flags)) {
    Error error = last_error("rename " + temp.string() + " to " + path.string());
    ::DeleteFileW(temp.wstring().c_str());
    return fail(error);
  }
  return {};
}

namespace {

// A device (NUL, CON) or a pipe the user named, written in place: not
// checked further before the write (opening a pipe connects to its server).
bool names_device(const std::filesystem::path& path) {
  const std::wstring text = path.wstring();
  return path.filename() == "NUL" || path.filename() == "CON" || text.rfind(L"\\\\.\\", 0) == 0;
}

}  // namespace

Result<void> check_file_for_user(const std::filesystem::path& path) {
  if (path.empty()) {
    return fail(plain_error("the path is empty"));
  }
  if (names_device(path)) {
    return {};
  }
  const DWORD attributes = ::GetFileAttributesW(path.wstring().c_str());
  if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY) != 0) {
    return fail(plain_error(path.string() + ": names a directory, not a file"));
  }
  // The file is replaced by a rename from its directory: a file must be
  // creatable there. DELETE_ON_CLOSE: the probe goes with its handle.
  const std::filesystem::path dir =
      path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::filesystem::path temp = dir / temp_name(path);
    UniqueHandle probe(::CreateFileW(temp.wstring().c_str(), GENERIC_WRITE, 0, nullptr, CREATE_NEW,
                                     FILE_ATTRIBUTE_TEMPORARY | FILE_FLAG_DELETE_ON_CLOSE,
                                     nullptr));
    if (probe) {
      return {};
    }
    if (::GetLastError() != ERROR_FILE_EXISTS) {
      return fail(last_error("create a file in " + dir.string()));
    }
  }
  return fail(platform::windows_error(ERROR_FILE_EXISTS, "create a file in " + dir.string()));
}

Result<void> write_file_for_user(const std::filesystem::path& path, std::string_view content) {
  // A regular file or a new name: replaced atomically. A device (NUL,
  // CON) or a pipe the user named: written in place.
  if (path.empty()) {
    return fail(plain_error("the path is empty"));
  }
  const DWORD attributes = ::GetFileAttributesW(path.wstring().c_str());
  UniqueHandle existing;
  if (attributes != INVALID_FILE_ATTRIBUTES || names_device(path)) {
    existing.reset(::CreateFileW(path.wstring().c_str(), GENERIC_WRITE,
                                 FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr, OPEN_EXISTING,
                                 FILE_ATTRIBUTE_NORMAL, nullptr));
  }
  if (!existing || ::GetFileType(existing.get()) == FILE_TYPE_DISK) {
    existing.reset();
    return write_file_atomic(path, content, false);
  }
  while (!content.empty()) {
    DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(content.size(), 1u << 20));
    DWORD written = 0;
    if (!::WriteFile(existing.get(), content.data(), chunk, &written, nullptr) || written == 0) {
      return fail(last_error("write " + path.string()));
    }
    content.remove_prefix(written);
  }
  return {};
}

namespace {

// `path` opened as itself (FILE_FLAG_OPEN_REPARSE_POINT: a symlink or
// junction is opened as itself, and refused, never followed), checked to be
// a regular file owned by this user; its information in `info`.
Result<UniqueHandle> open_own_regular(const std::filesystem::path& path, DWORD access,
                                      BY_HANDLE_FILE_INFORMATION& info) {
  UniqueHandle file(::CreateFileW(path.wstring().c_str(), access | READ_CONTROL,
                                  FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                                  OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!file) {
    return fail(last_error("open " + path.string()));
  }
  if (!::GetFileInformationByHandle(file.get(), &info)) {
    return fail(last_error("stat " + path.string()));
  }
  if ((info.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) != 0) {
    return fail(plain_error(path.string() + ": is a symlink"));
  }
  if ((info.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) != 0
      || ::GetFileType(file.get()) != FILE_TYPE_DISK) {
    return fail(plain_error(path.string() + ": is not a regular file"));
  }
  TG_TRY(platform::check_owned_by_current_user(file.get(), path.string()));
  return Result<UniqueHandle>(std::move(file));
}

}  // namespace

Result<void> check_own_regular_file(const std::filesystem::path& path) {
  BY_HANDLE_FILE_INFORMATION info{};
  TG_TRY(open_own_regular(path, FILE_READ_ATTRIBUTES, info));
  return {};
}

Result<std::string> read_file_untrusted(const std::filesystem::path& path, std::size_t max_bytes) {
  BY_HANDLE_FILE_INFORMATION info{};
  auto file = open_own_regular(path, GENERIC_READ, info);
  if (!file) {
    return fail(file.error());
  }
  const unsigned long long size =
      (static_cast<unsigned long long>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  if (size > max_bytes) {
    return fail(
        plain_error(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes"));
  }
  std::string content;
  char buffer[16384];
  for (;;) {
    DWORD got = 0;
    if (!::ReadFile(file->get(), buffer, sizeof buffer, &got, nullptr)) {
      return fail(last_error("read " + path.string()));
    }
    if (got == 0) {
      break;
    }
    if (content.size() + got > max_bytes) {
      return fail(
          plain_error(path.string() + ": larger than " + std::to_string(max_bytes) + " bytes"));
    }
    content.append(buffer, got);
  }
  return content;
}

// No record is written by two processes on Windows: the lock holds nothing.
DirectoryLock::DirectoryLock(const std::filesystem::path&) {}
DirectoryLock::~DirectoryLock() = default;

std::optional<FileVersion> file_version(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) {
    return std::nullopt;
  }
  const auto written = std::filesystem::last_write_time(path, error);
  return FileVersion{0, static_cast<std::uint64_t>(size),
                     static_cast<std::int64_t>(written.time_since_epoch().count())};
}

Result<void> remove_file(const std::filesystem::path& path) {
  if (!::DeleteFileW(path.wstring().c_str())) {
    const DWORD error = ::GetLastError();
    if (error != ERROR_FILE_NOT_FOUND && error != ERROR_PATH_NOT_FOUND) {
      return fail(platform::windows_error(error, "remove " + path.string()));
    }
  }
  return {};
}

std::string current_user_label() {
  return platform::current_user_sid_label();
}

}  // namespace treeguard
