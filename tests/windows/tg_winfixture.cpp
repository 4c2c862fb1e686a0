// The Windows test suite's one fixture program; argv[1] picks its role.
// Members append "pid creation-time" to the file named by TG_PIDFILE, so a
// test can check afterwards that every one of them is gone.
//
//   exit N                    exit with code N
//   sleep                     register, then sleep (default Ctrl handling)
//   ignore-break              register, ignore CTRL_BREAK/CTRL_C, sleep
//   tree FLAGS... [--exit N]  register, start one sleeping grandchild per
//                             flag (none, newgroup, detached, newconsole),
//                             print "ready" once all registered, then exit
//                             N (default: sleep)
//                             (listen: a grandchild listening on a TCP port)
//   listen                    listen on a TCP port of 127.0.0.1, register, sleep
//   seal FILE                 register, print "ready", sleep; on CTRL_BREAK
//                             (or CTRL_C) write "sealed PID" to FILE, flush it
//                             to disk, and exit 0: a module that seals its
//                             log on the graceful stop
//   terminate PID             TerminateProcess(PID, 1), as a crash or a
//                             supervisor kills a Windows process; exit 0 once
//                             it is gone, 1 if it could not be ended
//   fan N                     register, start N sleepers, print "ready", exit 0
//   breakaway                 try CREATE_BREAKAWAY_FROM_JOB; print
//                             "breakaway refused <error>" (exit 0) or
//                             "breakaway succeeded" (exit 1)
//   ctrl-c                    send CTRL_C_EVENT to every process on its
//                             console (as Ctrl-C typed there would)
//   check PIDFILE             exit 0 if no registered process is alive,
//                             else print the survivors and exit 1
//   alive PIDFILE N           exit 0 if at least N registered processes live
//   kill PIDFILE              TerminateProcess every registered survivor
//   launch [--inherit-event] [--env NAME=VALUE]... [--await FILE] -- PROGRAM ARGS...
//                             run PROGRAM (arguments taken from the UTF-16
//                             command line), NAME=VALUE in its environment,
//                             and exit with its code. --inherit-event: an
//                             inheritable event is made first and its value
//                             passed as TG_EVENT_HANDLE; afterwards prints
//                             "event set" if any process set it, else
//                             "event not set". --await: once PROGRAM
//                             exited, print "done CODE" and wait (60 s at
//                             most) until FILE exists before exiting
//   set-event                 SetEvent(TG_EVENT_HANDLE): prints "set-event
//                             done" or "set-event failed ERROR"
//   close-port-handle SECONDS register, close its parent's first I/O
//                             completion port the same way (treeguard.exe's
//                             event port, made first), print "closed VALUE",
//                             live SECONDS, print "done", exit 0 half a second
//                             later
//   close-job-handle          register, then close its parent's (treeguard.exe's)
//                             handle of the job it runs in, from outside
//                             (DuplicateHandle, DUPLICATE_CLOSE_SOURCE), holding
//                             one of its own until it exits so that the job
//                             lives on; prints "closed VALUE" (exit 0), or why
//                             not (exit 3)
#include <winsock2.h>
// After winsock2.h, which must come first.
#include <windows.h>
// After windows.h, which it needs.
#include <shellapi.h>
#include <tlhelp32.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <string>
#include <vector>

namespace {

unsigned long long creation_time(HANDLE process) {
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(process, &created, &exited, &kernel, &user)) {
    return 0;
  }
  return (static_cast<unsigned long long>(created.dwHighDateTime) << 32) | created.dwLowDateTime;
}

std::wstring pidfile() {
  wchar_t buffer[1024];
  DWORD n = GetEnvironmentVariableW(L"TG_PIDFILE", buffer, 1024);
  return n > 0 && n < 1024 ? std::wstring(buffer, n) : std::wstring();
}

void register_self() {
  std::wstring path = pidfile();
  if (path.empty()) {
    return;
  }
  char line[64];
  int n = std::snprintf(line, sizeof line, "%lu %llu\n", GetCurrentProcessId(),
                        creation_time(GetCurrentProcess()));
  // One writer at a time: Wine appends by seeking to the end and writing,
  // so two sleepers of `fan 100` registering at once could write the same
  // place, one line lost (the fan then waits for it in vain).
  HANDLE turn = CreateMutexW(nullptr, FALSE, L"Local\\tg-winfixture-pidfile");
  if (turn != nullptr) {
    WaitForSingleObject(turn, 30000);
  }
  HANDLE file = CreateFileW(path.c_str(), FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE,
                            nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file != INVALID_HANDLE_VALUE) {
    DWORD written = 0;
    WriteFile(file, line, static_cast<DWORD>(n), &written, nullptr);
    CloseHandle(file);
  }
  if (turn != nullptr) {
    ReleaseMutex(turn);
    CloseHandle(turn);
  }
}

struct Registered {
  DWORD pid;
  unsigned long long created;
};

std::vector<Registered> read_registered(const char* path) {
  std::vector<Registered> out;
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) {
    return out;
  }
  unsigned long pid = 0;
  unsigned long long created = 0;
  while (std::fscanf(file, "%lu %llu", &pid, &created) == 2) {
    out.push_back({static_cast<DWORD>(pid), created});
  }
  std::fclose(file);
  return out;
}

std::size_t count_registered() {
  std::wstring path = pidfile();
  HANDLE file = CreateFileW(path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                            OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file == INVALID_HANDLE_VALUE) {
    return 0;
  }
  char buffer[65536];
  DWORD got = 0;
  std::size_t lines = 0;
  while (ReadFile(file, buffer, sizeof buffer, &got, nullptr) && got > 0) {
    for (DWORD i = 0; i < got; ++i) {
      lines += buffer[i] == '\n';
    }
  }
  CloseHandle(file);
  return lines;
}

// Wait (bounded, 60 s) until `count` members registered.
bool await_registered(std::size_t count) {
  for (int i = 0; i < 6000; ++i) {
    if (count_registered() >= count) {
      return true;
    }
    Sleep(10);
  }
  return false;
}

HANDLE alive_handle(const Registered& r) {
  HANDLE process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE | PROCESS_TERMINATE,
                               FALSE, r.pid);
  if (process == nullptr) {
    return nullptr;
  }
  if (creation_time(process) != r.created || WaitForSingleObject(process, 0) != WAIT_TIMEOUT) {
    CloseHandle(process);
    return nullptr;
  }
  return process;
}

[[noreturn]] void sleep_forever() {
  for (;;) {
    Sleep(100000);
  }
}

bool start_self(const wchar_t* role, DWORD flags, DWORD* error = nullptr) {
  wchar_t self[MAX_PATH];
  GetModuleFileNameW(nullptr, self, MAX_PATH);
  std::wstring line = L"\"" + std::wstring(self) + L"\" " + role;
  STARTUPINFOW startup{};
  startup.cb = sizeof startup;
  PROCESS_INFORMATION info{};
  if (!CreateProcessW(nullptr, line.data(), nullptr, nullptr, FALSE, flags, nullptr, nullptr,
                      &startup, &info)) {
    if (error != nullptr) {
      *error = GetLastError();
    }
    return false;
  }
  CloseHandle(info.hThread);
  CloseHandle(info.hProcess);
  return true;
}

BOOL WINAPI ignore_ctrl(DWORD) {
  return TRUE;
}

std::wstring g_seal_path;

// Runs on the thread Windows starts for the event: the seal, then the end.
BOOL WINAPI seal_on_ctrl(DWORD type) {
  if (type != CTRL_BREAK_EVENT && type != CTRL_C_EVENT) {
    return FALSE;
  }
  HANDLE file = CreateFileW(g_seal_path.c_str(), GENERIC_WRITE, 0, nullptr, CREATE_ALWAYS,
                            FILE_ATTRIBUTE_NORMAL, nullptr);
  if (file != INVALID_HANDLE_VALUE) {
    char line[64];
    int n = std::snprintf(line, sizeof line, "sealed %lu\n", GetCurrentProcessId());
    DWORD written = 0;
    WriteFile(file, line, static_cast<DWORD>(n), &written, nullptr);
    FlushFileBuffers(file);
    CloseHandle(file);
  }
  ExitProcess(0);
}

// One argument for a command line, as CommandLineToArgvW reads it back.
std::wstring quoted(const std::wstring& arg) {
  if (!arg.empty() && arg.find_first_of(L" \t\"") == std::wstring::npos) {
    return arg;
  }
  std::wstring out = L"\"";
  std::size_t backslashes = 0;
  for (wchar_t c : arg) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    out.append(c == L'"' ? backslashes * 2 + 1 : backslashes, L'\\');
    backslashes = 0;
    out += c;
  }
  out.append(backslashes * 2, L'\\');
  return out + L"\"";
}

int launch() {
  int count = 0;
  LPWSTR* wide = CommandLineToArgvW(GetCommandLineW(), &count);
  bool inherit_event = false;
  std::wstring await_path;
  int i = 2;
  for (; i < count && std::wstring(wide[i]) != L"--"; ++i) {
    std::wstring option = wide[i];
    if (option == L"--inherit-event") {
      inherit_event = true;
    } else if (option == L"--env" && i + 1 < count) {
      std::wstring pair = wide[++i];
      const std::size_t equals = pair.find(L'=');
      SetEnvironmentVariableW(pair.substr(0, equals).c_str(), pair.substr(equals + 1).c_str());
    } else if (option == L"--await" && i + 1 < count) {
      await_path = wide[++i];
    }
  }
  std::wstring line;
  for (++i; i < count; ++i) {
    line += (line.empty() ? L"" : L" ") + quoted(wide[i]);
  }
  HANDLE event = nullptr;
  if (inherit_event) {
    SECURITY_ATTRIBUTES inheritable{sizeof inheritable, nullptr, TRUE};
    event = CreateEventW(&inheritable, TRUE, FALSE, nullptr);
    wchar_t value[32];
    std::swprintf(value, 32, L"%llu",
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(event)));
    SetEnvironmentVariableW(L"TG_EVENT_HANDLE", value);
  }
  STARTUPINFOW startup{};
  startup.cb = sizeof startup;
  PROCESS_INFORMATION info{};
  if (!CreateProcessW(nullptr, line.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &startup,
                      &info)) {
    std::printf("launch: cannot start the program: %lu\n", GetLastError());
    return 2;
  }
  WaitForSingleObject(info.hProcess, INFINITE);
  DWORD code = 2;
  GetExitCodeProcess(info.hProcess, &code);
  if (inherit_event) {
    std::printf(WaitForSingleObject(event, 0) == WAIT_OBJECT_0 ? "event set\n" : "event not set\n");
  }
  if (!await_path.empty()) {
    std::printf("done %lu\n", code);
    for (int n = 0; n < 6000 && GetFileAttributesW(await_path.c_str()) == INVALID_FILE_ATTRIBUTES;
         ++n) {
      Sleep(10);
    }
  }
  return static_cast<int>(code);
}

int set_event() {
  wchar_t value[32];
  DWORD n = GetEnvironmentVariableW(L"TG_EVENT_HANDLE", value, 32);
  if (n == 0 || n >= 32) {
    std::printf("set-event failed: no TG_EVENT_HANDLE\n");
    return 0;
  }
  HANDLE event =
      reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(std::wcstoull(value, nullptr, 10)));
  if (SetEvent(event)) {
    std::printf("set-event done\n");
  } else {
    std::printf("set-event failed %lu\n", GetLastError());
  }
  return 0;
}

// This process's parent's pid, 0 if it cannot be found.
DWORD parent_pid() {
  HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snapshot == INVALID_HANDLE_VALUE) {
    return 0;
  }
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof entry;
  DWORD parent = 0;
  for (BOOL more = Process32FirstW(snapshot, &entry); more;
       more = Process32NextW(snapshot, &entry)) {
    if (entry.th32ProcessID == GetCurrentProcessId()) {
      parent = entry.th32ParentProcessID;
      break;
    }
  }
  CloseHandle(snapshot);
  return parent;
}

// The job this process is in.
bool is_own_job(HANDLE handle) {
  BOOL inside = FALSE;
  return IsProcessInJob(GetCurrentProcess(), handle, &inside) && inside;
}

// An I/O completion port (a packet taken to tell is put back).
bool is_completion_port(HANDLE handle) {
  DWORD bytes = 0;
  ULONG_PTR key = 0;
  OVERLAPPED* overlapped = nullptr;
  if (GetQueuedCompletionStatus(handle, &bytes, &key, &overlapped, 0) || overlapped != nullptr) {
    PostQueuedCompletionStatus(handle, bytes, key, overlapped);
    return true;
  }
  return GetLastError() == WAIT_TIMEOUT;
}

// Close the parent's (treeguard.exe's) first handle, by value, that `what`
// accepts, from outside: moved into this process, which holds it until it
// exits (a job it holds lives on). Prints "closed VALUE" (0), or why not (3).
int close_parent_handle(const char* role, bool (*what)(HANDLE)) {
  register_self();
  HANDLE controller = OpenProcess(PROCESS_DUP_HANDLE, FALSE, parent_pid());
  if (controller == nullptr) {
    std::printf("%s: cannot open the parent: %lu\n", role, GetLastError());
    return 3;
  }
  // Its handle values, tried in turn.
  for (ULONG_PTR value = 4; value < (1u << 16); value += 4) {
    HANDLE mine = nullptr;
    if (!DuplicateHandle(controller, reinterpret_cast<HANDLE>(value), GetCurrentProcess(), &mine, 0,
                         FALSE, DUPLICATE_SAME_ACCESS)) {
      continue;
    }
    if (what(mine)) {
      // `mine` stays open until this process exits: the job lives on.
      // Moved here (a target process is needed: Wine 8 refuses a null one
      // with ERROR_INVALID_HANDLE), so the parent's value is closed.
      HANDLE moved = nullptr;
      if (DuplicateHandle(controller, reinterpret_cast<HANDLE>(value), GetCurrentProcess(), &moved,
                          0, FALSE, DUPLICATE_CLOSE_SOURCE | DUPLICATE_SAME_ACCESS)) {
        std::printf("closed %lu\n", static_cast<unsigned long>(value));
        return 0;
      }
      std::printf("%s: DUPLICATE_CLOSE_SOURCE failed: %lu\n", role, GetLastError());
      return 3;
    }
    CloseHandle(mine);
  }
  std::printf("%s: no handle of the parent is the one looked for\n", role);
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  std::string role = argc > 1 ? argv[1] : "";
  if (role == "exit" && argc > 2) {
    return std::atoi(argv[2]);
  }
  if (role == "args") {
    // Each argument after "args" as it arrived (the UTF-16 command line),
    // in UTF-8, as hex: one line each, then "end".
    register_self();
    int count = 0;
    LPWSTR* wide = CommandLineToArgvW(GetCommandLineW(), &count);
    for (int i = 2; wide != nullptr && i < count; ++i) {
      int length = WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, nullptr, 0, nullptr, nullptr);
      std::string utf8(static_cast<std::size_t>(length > 0 ? length : 1), '\0');
      WideCharToMultiByte(CP_UTF8, 0, wide[i], -1, &utf8[0], length, nullptr, nullptr);
      utf8.resize(std::strlen(utf8.c_str()));
      for (unsigned char c : utf8) {
        std::printf("%02x", c);
      }
      std::printf("\n");
    }
    std::printf("end\n");
    return 0;
  }
  if (role == "launch") {
    return launch();
  }
  if (role == "set-event") {
    return set_event();
  }
  if (role == "close-job-handle") {
    return close_parent_handle("close-job-handle", is_own_job);
  }
  if (role == "close-port-handle" && argc > 2) {
    const int closed = close_parent_handle("close-port-handle", is_completion_port);
    if (closed == 0) {
      Sleep(static_cast<DWORD>(std::atoi(argv[2])) * 1000);
      std::printf("done\n");
      Sleep(500);  // the test reads the parent's CPU time before it goes on
    }
    return closed;
  }
  if (role == "sleep") {
    register_self();
    sleep_forever();
  }
  if (role == "listen") {
    // Listening before it registers: once the tree says ready, the port is bound.
    WSADATA data;
    if (WSAStartup(MAKEWORD(2, 2), &data) != 0) {
      return 2;
    }
    SOCKET listener = socket(AF_INET, SOCK_STREAM, IPPROTO_TCP);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (listener == INVALID_SOCKET
        || bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0
        || listen(listener, 4) != 0) {
      return 2;
    }
    register_self();
    sleep_forever();
  }
  if (role == "seal" && argc > 2) {
    int count = 0;
    LPWSTR* wide = CommandLineToArgvW(GetCommandLineW(), &count);
    g_seal_path = count > 2 ? wide[2] : L"";
    SetConsoleCtrlHandler(nullptr, FALSE);  // Ctrl-C too, in a new process group
    SetConsoleCtrlHandler(seal_on_ctrl, TRUE);
    register_self();
    std::printf("ready\n");
    sleep_forever();
  }
  if (role == "terminate" && argc > 2) {
    HANDLE process = OpenProcess(PROCESS_TERMINATE | SYNCHRONIZE, FALSE,
                                 static_cast<DWORD>(std::strtoul(argv[2], nullptr, 10)));
    if (process == nullptr || !TerminateProcess(process, 1)
        || WaitForSingleObject(process, 10000) != WAIT_OBJECT_0) {
      std::printf("terminate: cannot end pid %s: %lu\n", argv[2], GetLastError());
      return 1;
    }
    CloseHandle(process);
    return 0;
  }
  if (role == "ignore-break") {
    SetConsoleCtrlHandler(ignore_ctrl, TRUE);
    register_self();
    std::printf("ready\n");
    sleep_forever();
  }
  if (role == "tree") {
    register_self();
    int exit_code = -1;
    std::size_t children = 0;
    for (int i = 2; i < argc; ++i) {
      std::string flag = argv[i];
      if (flag == "--exit" && i + 1 < argc) {
        exit_code = std::atoi(argv[++i]);
        continue;
      }
      DWORD flags = flag == "newgroup"     ? CREATE_NEW_PROCESS_GROUP
                    : flag == "detached"   ? DETACHED_PROCESS
                    : flag == "newconsole" ? CREATE_NEW_CONSOLE
                                           : 0;
      if (!start_self(flag == "listen" ? L"listen" : L"sleep", flags)) {
        std::printf("cannot start a %s grandchild: %lu\n", flag.c_str(), GetLastError());
        return 2;
      }
      ++children;
    }
    if (!await_registered(1 + children)) {
      std::printf("grandchildren did not register\n");
      return 2;
    }
    std::printf("ready\n");
    if (exit_code >= 0) {
      return exit_code;
    }
    sleep_forever();
  }
  if (role == "fan" && argc > 2) {
    register_self();
    int n = std::atoi(argv[2]);
    for (int i = 0; i < n; ++i) {
      if (!start_self(L"sleep", 0)) {
        std::printf("cannot start sleeper %d: %lu\n", i, GetLastError());
        return 2;
      }
    }
    if (!await_registered(1 + static_cast<std::size_t>(n))) {
      std::printf("sleepers did not register\n");
      return 2;
    }
    std::printf("ready\n");
    return 0;
  }
  if (role == "breakaway") {
    register_self();
    DWORD error = 0;
    if (start_self(L"sleep", CREATE_BREAKAWAY_FROM_JOB, &error)) {
      await_registered(2);
      std::printf("breakaway succeeded\n");
      return 1;
    }
    std::printf("breakaway refused %lu\n", error);
    return 0;
  }
  if (role == "ctrl-c") {
    return GenerateConsoleCtrlEvent(CTRL_C_EVENT, 0) ? 0 : 3;
  }
  if ((role == "check" || role == "kill" || role == "alive") && argc > 2) {
    int alive = 0;
    for (const auto& r : read_registered(argv[2])) {
      HANDLE process = alive_handle(r);
      if (process == nullptr) {
        continue;
      }
      ++alive;
      if (role == "check") {
        std::printf("survivor: pid %lu (created %llu)\n", r.pid, r.created);
      } else if (role == "kill") {
        TerminateProcess(process, 1);
        WaitForSingleObject(process, 5000);
      }
      CloseHandle(process);
    }
    if (role == "alive") {
      return argc > 3 && alive >= std::atoi(argv[3]) ? 0 : 1;
    }
    return role == "check" && alive > 0 ? 1 : 0;
  }
  std::fprintf(stderr, "tg_winfixture: unknown role\n");
  return 64;
}
