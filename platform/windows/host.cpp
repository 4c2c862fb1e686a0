#include "port/host.hpp"

#include "windows/event_port.hpp"
#include "windows/guardian_process.hpp"
#include "windows/win_util.hpp"

#include <fmt/format.h>

#include <windows.h>
// After windows.h, which it needs.
#include <bcrypt.h>
#include <shellapi.h>

namespace treeguard {

namespace platform {

namespace {

HANDLE g_event_port = nullptr;

// Runs on a thread the system creates. Returning TRUE keeps treeguard alive
// for Ctrl-C and Ctrl-Break: the main loop forwards them and drains. For
// close, logoff and shutdown the system ends the process after the handler
// returns; the job's kill-on-close then takes the tree down, under the
// standing authority recorded before COMMAND started.
BOOL WINAPI on_console_event(DWORD type) {
  if (g_event_port != nullptr) {
    ::PostQueuedCompletionStatus(g_event_port, type, k_key_console, nullptr);
  }
  if (type == CTRL_CLOSE_EVENT || type == CTRL_LOGOFF_EVENT || type == CTRL_SHUTDOWN_EVENT) {
    // Give the main loop a moment to record the stop.
    ::Sleep(2000);
  }
  return TRUE;
}

}  // namespace

HANDLE event_port() {
  return g_event_port;
}

void install_console_handler() {
  if (g_event_port != nullptr) {
    return;
  }
  g_event_port = ::CreateIoCompletionPort(INVALID_HANDLE_VALUE, nullptr, 0, 1);
  // treeguard itself may have been started with Ctrl-C ignored (as the
  // first process of a new group is): take it back, then handle it.
  ::SetConsoleCtrlHandler(nullptr, FALSE);
  ::SetConsoleCtrlHandler(on_console_event, TRUE);
}

}  // namespace platform

void host_init() {
  // A treeguard.exe started as a run's guardian guards and exits here.
  platform::guard_if_started_as_guardian(host_arguments(0, nullptr));
  platform::install_console_handler();
}

bool ignored_at_start(Signal) {
  return false;
}

void default_in_command(Signal) {}

void end_by_signal(int) {
  // Windows has no death by signal to pass on: the exit code (128+N) says it.
}

std::vector<std::string> host_arguments(int argc, char** argv) {
  int count = 0;
  LPWSTR* wide = ::CommandLineToArgvW(::GetCommandLineW(), &count);
  if (wide == nullptr) {
    return std::vector<std::string>(argv, argv + argc);
  }
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    out.push_back(platform::narrow(wide[i]));
  }
  ::LocalFree(wide);
  return out;
}

std::size_t terminal_columns() {
  CONSOLE_SCREEN_BUFFER_INFO info{};
  if (::GetConsoleScreenBufferInfo(::GetStdHandle(STD_OUTPUT_HANDLE), &info) != 0) {
    const int columns = info.srWindow.Right - info.srWindow.Left + 1;
    if (columns > 0) {
      return static_cast<std::size_t>(columns);
    }
  }
  return 80;
}

std::vector<std::string> build_command() {
  return {};  // not looked for: the advice names this run's own command
}

std::string new_run_id() {
  SYSTEMTIME now;
  ::GetSystemTime(&now);
  unsigned short random = 0;
  if (!BCRYPT_SUCCESS(::BCryptGenRandom(nullptr, reinterpret_cast<PUCHAR>(&random), sizeof random,
                                        BCRYPT_USE_SYSTEM_PREFERRED_RNG))) {
    random = static_cast<unsigned short>(::GetCurrentProcessId() ^ ::GetTickCount());
  }
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}-{}-{:04x}", now.wYear, now.wMonth, now.wDay,
                     now.wHour, now.wMinute, now.wSecond, ::GetCurrentProcessId(), random);
}

}  // namespace treeguard
