// The job object boundary (job_boundary.hpp). One file over 500 lines: it
// is the one Windows boundary, every member of JobObjectBoundary, and the
// helpers above them (command line, marked environment, handle list) serve
// only its spawn.
#include "windows/job_boundary.hpp"

#include "record.hpp"
#include "windows/event_port.hpp"
#include "windows/guardian_process.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cwchar>
#include <optional>
#include <vector>

namespace treeguard::platform {

namespace {

// Job messages are "not guaranteed" (Microsoft's word, and Wine sends no
// EXIT_PROCESS for a terminated member): wait() looks at the job itself at
// least this often, whatever the port says.
constexpr DWORD k_recheck_ms = 250;

// COMMAND's environment: treeguard.exe's own, with this run's id added to
// TREEGUARD_RUNS as on Linux (runs_marker), so that a treeguard.exe inside
// finds the run it runs inside (--leftovers outer). A Unicode block sorted
// by name, as CreateProcessW asks: the marker takes the inherited one's
// place, or its place in the order.
std::wstring marked_environment(const std::string& run_id) {
  const std::wstring name = widen(k_run_marker);
  const std::wstring key = name + L"=";
  std::vector<std::wstring> entries;
  std::string inherited;
  wchar_t* block = ::GetEnvironmentStringsW();
  for (const wchar_t* entry = block; entry != nullptr && *entry != L'\0';
       entry += std::wcslen(entry) + 1) {
    std::wstring text(entry);
    if (::_wcsnicmp(text.c_str(), key.c_str(), key.size()) == 0) {
      inherited = narrow(text.substr(key.size()));
      continue;
    }
    entries.push_back(std::move(text));
  }
  if (block != nullptr) {
    ::FreeEnvironmentStringsW(block);
  }
  // Names compare case-insensitively; "=C:=C:\\" entries come first.
  const auto after = [&name](const std::wstring& entry) {
    const std::wstring other = entry.substr(0, entry.find(L'=', 1));
    return entry[0] != L'=' && ::_wcsicmp(other.c_str(), name.c_str()) > 0;
  };
  entries.insert(std::find_if(entries.begin(), entries.end(), after),
                 key + widen(runs_marker(inherited, run_id)));
  std::wstring out;
  for (const auto& entry : entries) {
    out += entry;
    out += L'\0';
  }
  out += L'\0';
  return out;
}

// Called on a thread-pool thread when COMMAND's handle is signalled.
void CALLBACK on_child_exit(void* port, BOOLEAN) {
  ::PostQueuedCompletionStatus(static_cast<HANDLE>(port), 0, k_key_child, nullptr);
}

// Ctrl-C, Ctrl-Break and the console closing, as the core names them.
Signal console_signal(DWORD type) {
  switch (type) {
  case CTRL_C_EVENT:
    return signals::int_;
  case CTRL_BREAK_EVENT:
    return signals::term;
  default:
    return signals::hup;  // close, logoff, shutdown
  }
}

}  // namespace

Result<std::unique_ptr<JobObjectBoundary>> JobObjectBoundary::create(const std::string& run_id) {
  std::unique_ptr<JobObjectBoundary> boundary(new JobObjectBoundary(job_object_name(run_id)));
  ::SetLastError(0);
  boundary->m_job.reset(::CreateJobObjectW(nullptr, widen(boundary->m_name).c_str()));
  if (!boundary->m_job) {
    return fail(last_error("create job object " + boundary->m_name));
  }
  if (::GetLastError() == ERROR_ALREADY_EXISTS) {
    boundary->m_job.reset();
    return fail(plain_error("job object " + boundary->m_name + " exists already"));
  }
  // Kill-on-close; neither BREAKAWAY_OK nor SILENT_BREAKAWAY_OK, so no
  // member can start a process outside the job.
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (!::SetInformationJobObject(boundary->m_job.get(), JobObjectExtendedLimitInformation, &limits,
                                 sizeof limits)) {
    return fail(last_error("set limits of job object " + boundary->m_name));
  }
  JOBOBJECT_ASSOCIATE_COMPLETION_PORT port{};
  port.CompletionKey = reinterpret_cast<void*>(k_key_job);
  port.CompletionPort = event_port();
  if (port.CompletionPort == nullptr
      || !::SetInformationJobObject(
          boundary->m_job.get(), JobObjectAssociateCompletionPortInformation, &port, sizeof port)) {
    return fail(last_error("associate a completion port with job object " + boundary->m_name));
  }
  return boundary;
}

JobObjectBoundary::~JobObjectBoundary() {
  if (m_child_wait != nullptr) {
    // Waits for a running callback; the port outlives it.
    ::UnregisterWaitEx(m_child_wait, INVALID_HANDLE_VALUE);
  }
  if (m_job && !m_proven_empty) {
    // Ending without proof that the job is empty (forced kill withheld, or
    // survivors): no kill without its own authority, so closing our
    // handle must not kill. The members stay as evidence; the record
    // names the job for `treeguard sweep`.
    auto empty = is_empty();
    if (!empty || !*empty) {
      std::ignore = disarm_kill_on_close();
    }
  }
}

Result<void> JobObjectBoundary::disarm_kill_on_close() {
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = 0;
  if (!::SetInformationJobObject(m_job.get(), JobObjectExtendedLimitInformation, &limits,
                                 sizeof limits)) {
    return fail(last_error("clear KILL_ON_JOB_CLOSE of job object " + m_name));
  }
  return {};
}

std::optional<std::string> JobObjectBoundary::standing_authority() const {
  return fmt::format("job {} has KILL_ON_JOB_CLOSE and treeguard.exe pid {} and its guardian hold "
                     "its handles: if both die, Windows terminates every member",
                     m_name, ::GetCurrentProcessId());
}

namespace {

// The handles COMMAND may inherit: treeguard's standard handles, once each,
// and only real ones (not null, not INVALID_HANDLE_VALUE, not a console
// pseudo-handle of old Windows, which GetHandleInformation rejects).
std::vector<HANDLE> stdio_handles(const STARTUPINFOW& startup) {
  std::vector<HANDLE> out;
  for (HANDLE handle : {startup.hStdInput, startup.hStdOutput, startup.hStdError}) {
    DWORD flags = 0;
    if (handle == nullptr || handle == INVALID_HANDLE_VALUE
        || !::GetHandleInformation(handle, &flags)
        || std::find(out.begin(), out.end(), handle) != out.end()) {
      continue;
    }
    ::SetHandleInformation(handle, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
    out.push_back(handle);
  }
  return out;
}

// A PROC_THREAD_ATTRIBUTE_HANDLE_LIST naming `handles` (which must outlive
// it): CreateProcessW then passes those, not every inheritable handle
// treeguard.exe holds (one from its own parent, say, that would keep a pipe
// open, or a handle that kept the job alive after treeguard.exe died).
class HandleList {
public:
  explicit HandleList(std::vector<HANDLE>& handles) {
    SIZE_T size = 0;
    ::InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
    m_buffer.resize(size);
    auto* list = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(m_buffer.data());
    if (!::InitializeProcThreadAttributeList(list, 1, 0, &size)) {
      m_error = last_error("InitializeProcThreadAttributeList");
      return;
    }
    m_list = list;
    if (!::UpdateProcThreadAttribute(m_list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, handles.data(),
                                     handles.size() * sizeof(HANDLE), nullptr, nullptr)) {
      m_error = last_error("UpdateProcThreadAttribute(PROC_THREAD_ATTRIBUTE_HANDLE_LIST)");
    }
  }
  HandleList(const HandleList&) = delete;
  HandleList& operator=(const HandleList&) = delete;
  ~HandleList() {
    if (m_list != nullptr) {
      ::DeleteProcThreadAttributeList(m_list);
    }
  }
  LPPROC_THREAD_ATTRIBUTE_LIST get() const { return m_list; }
  const std::optional<Error>& error() const { return m_error; }

private:
  std::vector<unsigned char> m_buffer;
  LPPROC_THREAD_ATTRIBUTE_LIST m_list = nullptr;
  std::optional<Error> m_error;
};

}  // namespace

Result<long> JobObjectBoundary::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) {
    return fail(plain_error("exec: no command"));
  }
  std::wstring line = command_line(spec.argv);
  STARTUPINFOEXW startup{};
  startup.StartupInfo.cb = sizeof startup;
  startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  startup.StartupInfo.hStdInput = ::GetStdHandle(STD_INPUT_HANDLE);
  startup.StartupInfo.hStdOutput = ::GetStdHandle(STD_OUTPUT_HANDLE);
  startup.StartupInfo.hStdError = ::GetStdHandle(STD_ERROR_HANDLE);
  std::vector<HANDLE> inherited = stdio_handles(startup.StartupInfo);
  PROCESS_INFORMATION info{};
  // Suspended: not one instruction of COMMAND runs before it is in the
  // job. A new process group: CTRL_BREAK_EVENT can be sent to COMMAND and
  // what it starts, without reaching treeguard.
  DWORD flags = CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP | CREATE_UNICODE_ENVIRONMENT;
  std::optional<HandleList> handle_list;
  if (!inherited.empty()) {
    handle_list.emplace(inherited);
    if (handle_list->error()) {
      return fail(*handle_list->error());
    }
    startup.lpAttributeList = handle_list->get();
    flags |= EXTENDED_STARTUPINFO_PRESENT;
  }
  // Inheritance on only with the list; no standard handle at all: none.
  const BOOL inherit = inherited.empty() ? FALSE : TRUE;
  std::wstring environment;
  if (!spec.run_id.empty()) {
    environment = marked_environment(spec.run_id);
  }
  if (!::CreateProcessW(nullptr, line.data(), nullptr, nullptr, inherit, flags,
                        environment.empty() ? nullptr : environment.data(), nullptr,
                        &startup.StartupInfo, &info)) {
    return fail(last_error("exec " + spec.argv.front()));
  }
  m_child.reset(info.hProcess);
  UniqueHandle thread(info.hThread);
  m_child_pid = info.dwProcessId;
  // Ending COMMAND before it ran kills nothing COMMAND started.
  const auto never_ran = [this](const Error& error) -> Result<long> {
    ::TerminateProcess(m_child.get(), 125);
    ::WaitForSingleObject(m_child.get(), INFINITE);
    m_child.reset();
    m_status = ExitStatus{false, 125};
    return fail(error);
  };
  if (!::AssignProcessToJobObject(m_job.get(), m_child.get())) {
    return never_ran(
        last_error(fmt::format("assign pid {} to job object {}", m_child_pid, m_name)));
  }
  // COMMAND leads its process group (CREATE_NEW_PROCESS_GROUP): the
  // group a graceful stop goes to. The run's guardian learns it now,
  // before COMMAND runs, to drain the run if this process dies; a guardian
  // that could not set itself up means COMMAND never runs.
  MemberInfo command;
  command.pid = static_cast<long>(m_child_pid);
  command.start_time = process_creation_time(m_child.get());
  command.leads_group = true;
  remember(command);
  if (auto told = tell_guardian_command(m_name, command); !told) {
    return never_ran(told.error());
  }
  if (!::RegisterWaitForSingleObject(&m_child_wait, m_child.get(), on_child_exit, event_port(),
                                     INFINITE, WT_EXECUTEONLYONCE)) {
    m_child_wait = nullptr;  // wait() still rechecks every k_recheck_ms
  }
  if (::ResumeThread(thread.get()) == static_cast<DWORD>(-1)) {
    return fail(last_error(fmt::format("resume pid {}", m_child_pid)));
  }
  return static_cast<long>(m_child_pid);
}

void JobObjectBoundary::note_child() {
  if (m_status || !m_child) {
    return;
  }
  if (::WaitForSingleObject(m_child.get(), 0) != WAIT_OBJECT_0) {
    return;
  }
  DWORD code = 0;
  if (!::GetExitCodeProcess(m_child.get(), &code)) {
    code = 125;
  }
  m_status = ExitStatus{false, static_cast<int>(code)};
}

Event JobObjectBoundary::wait(std::optional<TimePoint> deadline) {
  for (;;) {
    note_child();
    DWORD timeout = k_recheck_ms;
    const TimePoint now = Clock::now();
    if (deadline) {
      if (now >= *deadline) {
        return Event{Event::Kind::deadline, {}, false};
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count();
      timeout = static_cast<DWORD>(std::min<long long>(left + 1, k_recheck_ms));
    }
    DWORD bytes = 0;
    ULONG_PTR key = 0;
    OVERLAPPED* overlapped = nullptr;
    BOOL ok = ::GetQueuedCompletionStatus(event_port(), &bytes, &key, &overlapped, timeout);
    if (!ok && overlapped == nullptr) {
      if (::GetLastError() != WAIT_TIMEOUT) {
        // The port itself failed (its handle no longer answers): it would
        // fail again at once, and the caller calls again. Wait out the
        // time it was given, so the job is looked at as often as when the
        // port is quiet, never in a busy loop.
        ::Sleep(timeout);
      }
      // Timed out: the deadline, or time to look at the job again.
      if (deadline && Clock::now() >= *deadline) {
        return Event{Event::Kind::deadline, {}, false};
      }
      return Event{Event::Kind::changed, {}, false};
    }
    switch (key) {
    case k_key_console: {
      Event event;
      event.kind = Event::Kind::signal;
      event.signal = console_signal(bytes);
      return event;
    }
    case k_key_job:
      if (bytes == JOB_OBJECT_MSG_NEW_PROCESS) {
        DWORD pid = static_cast<DWORD>(reinterpret_cast<ULONG_PTR>(overlapped));
        UniqueHandle process(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
        const unsigned long long created = process ? process_creation_time(process.get()) : 0;
        if (created != 0) {
          remember(MemberInfo{static_cast<long>(pid), created, false});
        }
      }
      note_child();
      return Event{Event::Kind::changed, {}, false};
    case k_key_child:
      note_child();
      return Event{Event::Kind::changed, {}, false};
    default:
      break;  // not ours; wait again
    }
  }
}

Result<void> JobObjectBoundary::forward(Signal signal) {
  note_child();
  if (m_status || !m_child) {
    return {};  // COMMAND is gone; nothing to forward to
  }
  if (!is_stop_signal(signal)) {
    return {};  // no Windows meaning (USR1, WINCH...)
  }
  // CTRL_C_EVENT cannot be aimed at a process group; CTRL_BREAK_EVENT can.
  if (!::GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, m_child_pid)) {
    return fail(last_error(fmt::format("CTRL_BREAK_EVENT to process group {}", m_child_pid)));
  }
  return {};
}

std::vector<Delivery> JobObjectBoundary::stop_gracefully(Signal signal) {
  // The nearest Windows has to a signal for every member: CTRL_BREAK_EVENT
  // to COMMAND's process group, on treeguard's console. Members on another
  // console (DETACHED_PROCESS, CREATE_NEW_CONSOLE) do not get it; the
  // grace period ends for them in TerminateJobObject.
  Delivery delivery{signal, "COMMAND's process group (CTRL_BREAK_EVENT)", std::nullopt};
  if (m_child_pid != 0 && !::GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, m_child_pid)) {
    delivery.error = last_error(fmt::format("CTRL_BREAK_EVENT to process group {}", m_child_pid));
  }
  return {delivery};
}

Result<void> JobObjectBoundary::kill_all() {
  // No census here (Boundary::kill_all): the job ends at once.
  if (!::TerminateJobObject(m_job.get(), k_forced_exit_code)) {
    return fail(last_error("TerminateJobObject " + m_name));
  }
  return {};
}

Result<std::vector<MemberInfo>> job_processes(HANDLE job, const std::string& name) {
  std::vector<char> buffer(sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + 1024 * sizeof(ULONG_PTR));
  for (;;) {
    auto* list = reinterpret_cast<JOBOBJECT_BASIC_PROCESS_ID_LIST*>(buffer.data());
    if (::QueryInformationJobObject(job, JobObjectBasicProcessIdList, list,
                                    static_cast<DWORD>(buffer.size()), nullptr)
        && list->NumberOfAssignedProcesses <= list->NumberOfProcessIdsInList) {
      std::vector<MemberInfo> out;
      for (DWORD i = 0; i < list->NumberOfProcessIdsInList; ++i) {
        DWORD pid = static_cast<DWORD>(list->ProcessIdList[i]);
        UniqueHandle process(::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
        MemberInfo member;
        member.pid = static_cast<long>(pid);
        member.start_time = process ? process_creation_time(process.get()) : 0;
        out.push_back(member);
      }
      return out;
    }
    const DWORD error = ::GetLastError();
    if (error != ERROR_MORE_DATA
        && list->NumberOfAssignedProcesses <= list->NumberOfProcessIdsInList) {
      return fail(windows_error(error, "list the processes of job object " + name));
    }
    buffer.resize(buffer.size() * 2);
    if (buffer.size() > (64u << 20)) {
      return fail(plain_error("list the processes of job object " + name + ": too many"));
    }
  }
}

Result<std::vector<MemberInfo>> JobObjectBoundary::list_members() {
  auto listed = job_processes(m_job.get(), m_name);
  if (listed) {
    for (const auto& member : *listed) {
      if (member.start_time != 0) {
        remember(member);  // identity known: monotonic membership
      }
    }
  }
  return listed;
}

void JobObjectBoundary::remember(const MemberInfo& member) {
  for (const auto& known : m_members) {
    if (known.pid == member.pid
        && (known.start_time == member.start_time || member.start_time == 0)) {
      return;
    }
  }
  m_members.push_back(member);
}

Result<bool> JobObjectBoundary::is_empty() {
  note_child();
  if (m_child && !m_status) {
    return false;
  }
  if (m_handed_over) {
    return true;  // what is left in the job is the enclosing run's
  }
  // ACTIVE_PROCESS_ZERO is a hint; the job's own count and process list
  // are the proof.
  JOBOBJECT_BASIC_ACCOUNTING_INFORMATION accounting{};
  if (!::QueryInformationJobObject(m_job.get(), JobObjectBasicAccountingInformation, &accounting,
                                   sizeof accounting, nullptr)) {
    if (::GetLastError() == ERROR_INVALID_HANDLE) {
      // treeguard.exe's handle was closed under it (DuplicateHandle with
      // DUPLICATE_CLOSE_SOURCE, from outside): the job cannot be listed,
      // killed or proven empty through it any more. Its value may name
      // another object by now: it is let go of, never closed.
      m_job.release();
      return fail(boundary_gone(fmt::format(
          "the handle of job object {} was closed from outside: what is left in it cannot "
          "be listed",
          m_name)));
    }
    return fail(last_error("query job object " + m_name));
  }
  if (accounting.ActiveProcesses != 0) {
    return false;
  }
  auto listed = list_members();
  if (!listed) {
    return fail(listed.error());
  }
  m_proven_empty = listed->empty();
  return m_proven_empty;
}

Result<std::vector<MemberInfo>> JobObjectBoundary::hand_over(const EnclosingRun& to) {
  if (to.kind != BoundaryKind::job) {
    return fail(plain_error(fmt::format("run {}'s {} boundary cannot take a job's members",
                                        to.run_id, boundary_kind_name(to.kind))));
  }
  // Query rights only, and only for the check: a handle kept open would
  // keep the enclosing job, and so its kill-on-close, alive after its own
  // controller died.
  UniqueHandle outer(::OpenJobObjectW(JOB_OBJECT_QUERY, FALSE, widen(to.address).c_str()));
  if (!outer) {
    return fail(last_error(fmt::format("open run {}'s job object {}", to.run_id, to.address)));
  }
  TG_TRY(all_within(outer.get(), to));
  // From here closing this job kills nobody, and whatever is in it is the
  // enclosing run's: a member born since the check was born in this job,
  // so in the enclosing one too. The list after the disarm names it.
  TG_TRY(disarm_kill_on_close());
  m_handed_over = true;
  std::vector<MemberInfo> handed;
  if (auto listed = list_members()) {
    for (const auto& member : *listed) {
      if (member.start_time != 0
          && process_alive(static_cast<DWORD>(member.pid), member.start_time)) {
        handed.push_back(member);
      }
    }
  }
  return handed;
}

Result<void> JobObjectBoundary::all_within(HANDLE outer, const EnclosingRun& to) {
  // treeguard.exe in the enclosing job (no breakaway there) means COMMAND
  // was born in it too, so this job is nested in it and whatever is born in
  // this job is born in that one: a run beside it with a copy of its
  // marker is refused here. Then each member is looked at as well.
  BOOL self_inside = FALSE;
  if (!::IsProcessInJob(::GetCurrentProcess(), outer, &self_inside)) {
    return fail(last_error("is treeguard.exe in job object " + to.address));
  }
  if (!self_inside) {
    return fail(plain_error(fmt::format("treeguard.exe (pid {}) does not run in run {}'s job {}",
                                        ::GetCurrentProcessId(), to.run_id, to.address)));
  }
  auto listed = list_members();
  if (!listed) {
    return fail(listed.error());
  }
  for (const auto& member : *listed) {
    // PROCESS_QUERY_INFORMATION: IsProcessInJob with less is refused under
    // Wine (access denied).
    UniqueHandle process(
        ::OpenProcess(PROCESS_QUERY_INFORMATION, FALSE, static_cast<DWORD>(member.pid)));
    if (!process) {
      if (::GetLastError() == ERROR_INVALID_PARAMETER) {
        continue;  // gone: no such process any more
      }
      return fail(last_error(fmt::format("open {}", describe_member(member))));
    }
    DWORD code = 0;
    if (process_creation_time(process.get()) != member.start_time
        || (::GetExitCodeProcess(process.get(), &code) && code != STILL_ACTIVE)) {
      continue;  // gone (its pid reused, or exited)
    }
    BOOL inside = FALSE;
    if (!::IsProcessInJob(process.get(), outer, &inside)) {
      return fail(
          last_error(fmt::format("is {} in job object {}", describe_member(member), to.address)));
    }
    if (!inside) {
      return fail(
          plain_error(fmt::format("{} is not in run {}'s job {}: job {} is not nested in it",
                                  describe_member(member), to.run_id, to.address, m_name)));
    }
  }
  return {};
}

std::vector<MemberInfo> JobObjectBoundary::alive_members() {
  auto listed = list_members();
  if (listed) {
    return *listed;
  }
  // The job cannot be listed: the members seen that are still alive, never
  // one that is not (a survivor is named only alive).
  std::vector<MemberInfo> alive;
  for (const auto& member : m_members) {
    if (process_alive(static_cast<DWORD>(member.pid), member.start_time)) {
      alive.push_back(member);
    }
  }
  return alive;
}

Result<void> JobObjectBoundary::close() {
  auto empty = is_empty();
  if (!empty) {
    return fail(empty.error());
  }
  if (!*empty) {
    return fail(plain_error("job object " + m_name + " still has members"));
  }
  // Nothing left for kill-on-close to kill: the name goes with the handle.
  m_job.reset();
  return {};
}

}  // namespace treeguard::platform
