#include "windows/win_util.hpp"

#include <cerrno>

namespace treeguard::platform {

namespace {

class WindowsCategory final : public std::error_category {
public:
  const char* name() const noexcept override { return "windows"; }

  std::string message(int code) const override {
    wchar_t* text = nullptr;
    DWORD length = ::FormatMessageW(
        FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
        nullptr, static_cast<DWORD>(code), 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
    std::string out;
    if (length > 0 && text != nullptr) {
      out = narrow(std::wstring_view(text, length));
      ::LocalFree(text);
      while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.')) {
        out.pop_back();
      }
    }
    if (out.empty()) {
      out = "Windows error " + std::to_string(static_cast<unsigned long>(code));
    }
    return out;
  }

  // The conditions the portable core branches on (spawn failures 126/127,
  // the evidence's ENOSPC/EROFS).
  std::error_condition default_error_condition(int code) const noexcept override {
    switch (static_cast<DWORD>(code)) {
    case ERROR_FILE_NOT_FOUND:
    case ERROR_PATH_NOT_FOUND:
    case ERROR_INVALID_NAME:
    case ERROR_BAD_NETPATH:
      return std::errc::no_such_file_or_directory;
    case ERROR_ACCESS_DENIED:
    case ERROR_SHARING_VIOLATION:
      return std::errc::permission_denied;
    case ERROR_BAD_EXE_FORMAT:
    case ERROR_EXE_MACHINE_TYPE_MISMATCH:
      return std::errc::executable_format_error;
    case ERROR_DISK_FULL:
    case ERROR_HANDLE_DISK_FULL:
      return std::errc::no_space_on_device;
    case ERROR_WRITE_PROTECT:
      return std::errc::read_only_file_system;
    case ERROR_FILE_EXISTS:
    case ERROR_ALREADY_EXISTS:
      return std::errc::file_exists;
    default:
      return std::error_condition(code, *this);
    }
  }
};

}  // namespace

const std::error_category& windows_category() {
  static const WindowsCategory category;
  return category;
}

Error windows_error(DWORD code, std::string context) {
  return Error{std::error_code(static_cast<int>(code), windows_category()), std::move(context)};
}

std::wstring widen(std::string_view utf8) {
  if (utf8.empty()) {
    return {};
  }
  int length =
      ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring out(static_cast<std::size_t>(length), L'\0');
  ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), length);
  return out;
}

std::string narrow(std::wstring_view utf16) {
  if (utf16.empty()) {
    return {};
  }
  int length = ::WideCharToMultiByte(CP_UTF8, 0, utf16.data(), static_cast<int>(utf16.size()),
                                     nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(length), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, utf16.data(), static_cast<int>(utf16.size()), out.data(),
                        length, nullptr, nullptr);
  return out;
}

unsigned long long process_creation_time(HANDLE process) {
  FILETIME created, exited, kernel, user;
  if (!::GetProcessTimes(process, &created, &exited, &kernel, &user)) {
    return 0;
  }
  const unsigned long long at =
      (static_cast<unsigned long long>(created.dwHighDateTime) << 32) | created.dwLowDateTime;
  // Wine reports garbage (0x5555...) for a process still being created;
  // a creation time in the future is not one.
  FILETIME now_time;
  ::GetSystemTimeAsFileTime(&now_time);
  const unsigned long long now =
      (static_cast<unsigned long long>(now_time.dwHighDateTime) << 32) | now_time.dwLowDateTime;
  return at <= now ? at : 0;
}

bool process_alive(DWORD pid, unsigned long long creation_time) {
  if (pid == 0) {
    return false;
  }
  UniqueHandle process(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, pid));
  if (!process) {
    // Gone, or not ours to open: access denied means it exists.
    return ::GetLastError() == ERROR_ACCESS_DENIED && creation_time == 0;
  }
  if (creation_time != 0 && process_creation_time(process.get()) != creation_time) {
    return false;  // the pid was recycled
  }
  return ::WaitForSingleObject(process.get(), 0) == WAIT_TIMEOUT;
}

// One argument as CommandLineToArgvW and the C runtime read it back:
// quoted when needed, backslashes doubled only before a quote.
namespace {

void append_quoted(std::wstring& line, const std::wstring& arg) {
  if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) {
    line += arg;
    return;
  }
  line += L'"';
  std::size_t backslashes = 0;
  for (wchar_t c : arg) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    if (c == L'"') {
      line.append(backslashes * 2 + 1, L'\\');
    } else {
      line.append(backslashes, L'\\');
    }
    backslashes = 0;
    line += c;
  }
  line.append(backslashes * 2, L'\\');
  line += L'"';
}

}  // namespace

std::wstring command_line(const std::vector<std::string>& argv) {
  std::wstring line;
  for (const auto& arg : argv) {
    if (!line.empty()) {
      line += L' ';
    }
    append_quoted(line, widen(arg));
  }
  return line;
}

}  // namespace treeguard::platform
