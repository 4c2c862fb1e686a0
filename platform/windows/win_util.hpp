// What every Windows twin needs: an owned HANDLE, Windows errors as
// std::error_code (with the errno conditions the core branches on), UTF-8
// and UTF-16 conversions, and process identity by creation time.
#pragma once

#include "result.hpp"

#include <windows.h>

#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace treeguard::platform {

// Owns one HANDLE; closes it once. Null and INVALID_HANDLE_VALUE are empty.
class UniqueHandle {
public:
  UniqueHandle() = default;
  explicit UniqueHandle(HANDLE handle) : m_handle(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : m_handle(other.release()) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset(other.release());
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  HANDLE get() const { return m_handle; }
  explicit operator bool() const { return m_handle != nullptr && m_handle != INVALID_HANDLE_VALUE; }
  HANDLE release() {
    HANDLE out = m_handle;
    m_handle = nullptr;
    return out;
  }
  void reset(HANDLE handle = nullptr) {
    if (*this) {
      ::CloseHandle(m_handle);
    }
    m_handle = handle;
  }

private:
  HANDLE m_handle = nullptr;
};

// GetLastError() codes. Their messages come from FormatMessage; the codes
// the core tests for (not found, access denied, disk full, read-only)
// compare equal to the matching std::errc.
const std::error_category& windows_category();

// An Error from a GetLastError() value.
Error windows_error(DWORD code, std::string context);

// ... from GetLastError() now.
inline Error last_error(std::string context) {
  return windows_error(::GetLastError(), std::move(context));
}

std::wstring widen(std::string_view utf8);
std::string narrow(std::wstring_view utf16);

// A process's creation time in 100 ns units since 1601: with the pid, its
// identity (a recycled pid has a later creation time). 0 if unknown.
unsigned long long process_creation_time(HANDLE process);

// A command line that CommandLineToArgvW and the C runtime read back as
// `argv` (UTF-8): each argument quoted when needed.
std::wstring command_line(const std::vector<std::string>& argv);

// The process with this pid and creation time is running now.
bool process_alive(DWORD pid, unsigned long long creation_time);

}  // namespace treeguard::platform
