// The run's guardian on Windows (guardian_process.hpp): the controller's
// side (start_guardian, the link that tells and dismisses it) and the
// guardian's own (guard_if_started_as_guardian). They speak over two
// anonymous pipes: the guardian says it is ready (its pid) once it holds
// the controller's process and the job; the controller then sends "C pid
// creation-time" for COMMAND and "D" to dismiss it. The command pipe's end
// without "D" (the controller's handles closed with it) is the
// controller's death: the guardian then acts, as the Linux guardian does,
// through the one takedown every guardian shares (take_down_lost_run).
#include "port/guardian.hpp"

#include "after_death.hpp"
#include "port/takedown.hpp"
#include "windows/guardian_process.hpp"
#include "windows/win_util.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

namespace treeguard {

namespace platform {

namespace {

// A pipe handle as the guardian's command line carries it (a number).
std::string handle_text(HANDLE handle) {
  return std::to_string(reinterpret_cast<std::uintptr_t>(handle));
}

bool number_of(const std::string& text, unsigned long long& out) {
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, out);
  return error == std::errc() && at == end && !text.empty();
}

// The controller's side: COMMAND's identity and the dismissal, over the
// command pipe. Every link alive in this process, by job name, for
// tell_guardian_command().
class GuardianLink final : public Guardian {
public:
  GuardianLink(ProcessIdentity identity, std::string job, UniqueHandle command,
               UniqueHandle process, UniqueHandle ready)
      : m_identity(identity), m_job(std::move(job)), m_command(std::move(command)),
        m_process(std::move(process)), m_ready(std::move(ready)) {
    links()[m_job] = this;
  }
  ~GuardianLink() override {
    dismiss();
    links().erase(m_job);
  }

  ProcessIdentity identity() const override { return m_identity; }

  void dismiss() override {
    send("D");
    m_command.reset();
  }

  // The handle stays open, unwritten, until this process ends: its end is
  // the guardian's word that the controller is gone.
  void keep_armed() override { (void)m_command.release(); }

  Result<void> tell_command(const MemberInfo& command) {
    TG_TRY(await_ready());
    send(fmt::format("C {} {}\n", command.pid, command.start_time));
    return {};
  }

  static std::map<std::string, GuardianLink*>& links() {
    static std::map<std::string, GuardianLink*> all;
    return all;
  }

private:
  // The guardian's word that it holds the controller and the job: its pid
  // on the ready pipe. The pipe's end without it (its last writer gone) is
  // a guardian that could not set itself up: ended, never left behind.
  Result<void> await_ready() {
    if (!m_ready) {
      return {};
    }
    DWORD pid = 0;
    DWORD got = 0;
    const bool ready = ::ReadFile(m_ready.get(), &pid, sizeof pid, &got, nullptr)
                       && got == sizeof pid && static_cast<long>(pid) == m_identity.pid;
    m_ready.reset();
    if (!ready) {
      ::TerminateProcess(m_process.get(), 1);
      ::WaitForSingleObject(m_process.get(), INFINITE);
      m_command.reset();
      return fail(plain_error("the guardian did not start"));
    }
    return {};
  }

  void send(const std::string& word) {
    if (!m_command) {
      return;
    }
    DWORD written = 0;
    ::WriteFile(m_command.get(), word.data(), static_cast<DWORD>(word.size()), &written, nullptr);
  }

  ProcessIdentity m_identity;
  std::string m_job;
  UniqueHandle m_command;
  UniqueHandle m_process;
  UniqueHandle m_ready;  // until the guardian said it watches
};

// This program's own path, however long.
std::wstring own_path() {
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
    if (n == 0) {
      return {};
    }
    if (n < path.size()) {
      path.resize(n);
      return path;
    }
    path.resize(path.size() * 2);
  }
}

// An anonymous pipe whose one end (`inherited`: the read end or the write
// end) the guardian inherits; the other stays here.
struct GuardianPipe {
  UniqueHandle read;
  UniqueHandle write;
};

Result<GuardianPipe> guardian_pipe(bool guardian_reads) {
  HANDLE read = nullptr;
  HANDLE write = nullptr;
  if (!::CreatePipe(&read, &write, nullptr, 0)) {
    return fail(last_error("CreatePipe (guardian)"));
  }
  GuardianPipe pipe{UniqueHandle(read), UniqueHandle(write)};
  HANDLE theirs = guardian_reads ? read : write;
  if (!::SetHandleInformation(theirs, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT)) {
    return fail(last_error("SetHandleInformation (guardian)"));
  }
  return pipe;
}

// Start treeguard.exe as the guardian: no standard handles, no console
// group of its own to share with the run (a new process group: COMMAND's
// CTRL_BREAK never reaches it), inheriting exactly the two pipe ends.
Result<PROCESS_INFORMATION> create_guardian(const GuardianSpec& spec, HANDLE command,
                                            HANDLE ready) {
  const std::wstring self = own_path();
  if (self.empty()) {
    return fail(last_error("GetModuleFileName (guardian)"));
  }
  std::wstring line =
      command_line({narrow(self), k_guardian_argument, handle_text(command), handle_text(ready),
                    std::to_string(spec.controller.pid), std::to_string(spec.controller.start_time),
                    spec.run_id, spec.address, spec.state_dir.u8string()});
  std::vector<HANDLE> inherited{command, ready};
  SIZE_T size = 0;
  ::InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
  std::vector<unsigned char> buffer(size);
  auto* list = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(buffer.data());
  if (!::InitializeProcThreadAttributeList(list, 1, 0, &size)) {
    return fail(last_error("InitializeProcThreadAttributeList (guardian)"));
  }
  struct Deleted {
    LPPROC_THREAD_ATTRIBUTE_LIST list;
    ~Deleted() { ::DeleteProcThreadAttributeList(list); }
  } deleted{list};
  if (!::UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited.data(),
                                   inherited.size() * sizeof(HANDLE), nullptr, nullptr)) {
    return fail(last_error("UpdateProcThreadAttribute (guardian)"));
  }
  STARTUPINFOEXW startup{};
  startup.StartupInfo.cb = sizeof startup;
  startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;  // none: no caller's pipe held open
  startup.lpAttributeList = list;
  PROCESS_INFORMATION info{};
  if (!::CreateProcessW(self.c_str(), line.data(), nullptr, nullptr, TRUE,
                        CREATE_NEW_PROCESS_GROUP | EXTENDED_STARTUPINFO_PRESENT, nullptr, nullptr,
                        &startup.StartupInfo, &info)) {
    return fail(last_error("start the guardian"));
  }
  return info;
}

// What the guardian reads from its command pipe until the controller
// dismisses it (true) or is gone (false): COMMAND's identity meanwhile.
bool watch_controller(HANDLE command, Membership& seen) {
  std::string words;
  char buffer[256];
  for (;;) {
    DWORD got = 0;
    if (!::ReadFile(command, buffer, sizeof buffer, &got, nullptr) || got == 0) {
      return false;  // every writer gone: the controller's handle closed with it
    }
    words.append(buffer, got);
    std::size_t end;
    while ((end = words.find_first_of("D\n")) != std::string::npos) {
      if (words[end] == 'D') {
        return true;
      }
      // "C pid creation-time": COMMAND, which leads its process group.
      std::string line = words.substr(0, end);
      words.erase(0, end + 1);
      const std::size_t space = line.find(' ', 2);
      unsigned long long pid = 0;
      unsigned long long created = 0;
      if (line.size() > 2 && line[0] == 'C' && space != std::string::npos
          && number_of(line.substr(2, space - 2), pid)
          && number_of(line.substr(space + 1), created)) {
        MemberInfo member;
        member.pid = static_cast<long>(pid);
        member.start_time = created;
        member.leads_group = true;
        seen.remember(member);
      }
    }
  }
}

// Ctrl-C, Ctrl-Break and the rest are the controller's to handle: the
// guardian is ended by its controller's word or death, never by a console
// event meant for the run.
BOOL WINAPI ignore_console_event(DWORD) {
  return TRUE;
}

// The guardian: args are the ones create_guardian() gave.
[[noreturn]] void guardian_main(const std::vector<std::string>& args) {
  ::SetConsoleCtrlHandler(ignore_console_event, TRUE);
  unsigned long long command = 0;
  unsigned long long ready = 0;
  unsigned long long controller_pid = 0;
  unsigned long long controller_created = 0;
  if (args.size() != 9 || !number_of(args[2], command) || !number_of(args[3], ready)
      || !number_of(args[4], controller_pid) || !number_of(args[5], controller_created)) {
    ::ExitProcess(2);
  }
  UniqueHandle command_pipe(reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(command)));
  UniqueHandle ready_pipe(reinterpret_cast<HANDLE>(static_cast<std::uintptr_t>(ready)));
  const std::string& run_id = args[6];
  const std::string& job_name = args[7];
  const std::filesystem::path state_dir = std::filesystem::u8path(args[8]);
  // What it guards, held before it says it is ready: the controller (the
  // one named, not a process that got its pid), and the job, which this
  // handle keeps alive when the controller's closes.
  UniqueHandle controller(::OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE,
                                        static_cast<DWORD>(controller_pid)));
  UniqueHandle job(
      ::OpenJobObjectW(JOB_OBJECT_QUERY | JOB_OBJECT_TERMINATE, FALSE, widen(job_name).c_str()));
  if (!controller || process_creation_time(controller.get()) != controller_created || !job) {
    ::ExitProcess(1);
  }
  const DWORD self = ::GetCurrentProcessId();
  DWORD written = 0;
  if (!::WriteFile(ready_pipe.get(), &self, sizeof self, &written, nullptr)
      || written != sizeof self) {
    ::ExitProcess(1);
  }
  ready_pipe.reset();
  GuardianSight sight{current_process_identity()};
  if (watch_controller(command_pipe.get(), sight.seen)) {
    ::ExitProcess(0);  // dismissed: the run is over
  }
  // Acts on the controller's death, never on anything else.
  ::WaitForSingleObject(controller.get(), INFINITE);
  take_down_lost_run(state_dir, run_id, sight, [&job_name](const RunRecord& record) {
    return record.boundary.kind == BoundaryKind::job && record.boundary.address == job_name;
  });
  ::ExitProcess(0);
}

}  // namespace

void guard_if_started_as_guardian(const std::vector<std::string>& args) {
  if (args.size() > 1 && args[1] == k_guardian_argument) {
    guardian_main(args);
  }
}

Result<void> tell_guardian_command(const std::string& job_name, const MemberInfo& command) {
  auto& links = GuardianLink::links();
  if (auto found = links.find(job_name); found != links.end()) {
    return found->second->tell_command(command);
  }
  return {};
}

}  // namespace platform

using platform::UniqueHandle;

Result<std::unique_ptr<Guardian>> start_guardian(const GuardianSpec& spec) {
  if (spec.kind != BoundaryKind::job) {
    return fail(plain_error(
        fmt::format("a {} boundary has no guardian on Windows", boundary_kind_name(spec.kind))));
  }
  auto command = platform::guardian_pipe(true);
  if (!command) {
    return fail(command.error());
  }
  auto ready = platform::guardian_pipe(false);
  if (!ready) {
    return fail(ready.error());
  }
  auto started = platform::create_guardian(spec, command->read.get(), ready->write.get());
  if (!started) {
    return fail(started.error());
  }
  UniqueHandle process(started->hProcess);
  UniqueHandle thread(started->hThread);
  // Its ends are the guardian's alone now. Its word that it watches is
  // awaited before COMMAND runs (tell_guardian_command), not here: its
  // start overlaps the record, the job and COMMAND's creation.
  command->read.reset();
  ready->write.reset();
  ProcessIdentity identity{static_cast<long>(started->dwProcessId),
                           platform::process_creation_time(process.get())};
  return std::unique_ptr<Guardian>(
      new platform::GuardianLink(identity, spec.address, std::move(command->write),
                                 std::move(process), std::move(ready->read)));
}

// A nested job keeps its own record: no guardian holds another run's.
std::vector<RunRecord> records_held_for(const std::filesystem::path&, const std::string&) {
  return {};
}

Enclosed announce_to_enclosing(const GuardianSpec&) {
  Enclosed none;
  none.why_not = "a job keeps its own record";
  return none;
}

}  // namespace treeguard
