// A job known only from its record (the guardian, sweep, the gate): found by its name,
// treeguard-<run_id>. A job object lives as long as a handle to it or a
// process in it does, so a name that no longer opens proves the job empty.
#include "port/takedown.hpp"

#include "windows/job_boundary.hpp"
#include "windows/win_util.hpp"

#include <fmt/format.h>

#include <chrono>

namespace treeguard {

using platform::UniqueHandle;

namespace {

// The recorded job, or an empty handle with the error in GetLastError().
UniqueHandle open_recorded_job(const RunRecord& record, DWORD access) {
  return UniqueHandle(
      ::OpenJobObjectW(access, FALSE, platform::widen(record.boundary.address).c_str()));
}

std::optional<DWORD> active_processes(HANDLE job) {
  JOBOBJECT_BASIC_ACCOUNTING_INFORMATION accounting{};
  if (!::QueryInformationJobObject(job, JobObjectBasicAccountingInformation, &accounting,
                                   sizeof accounting, nullptr)) {
    return std::nullopt;
  }
  return accounting.ActiveProcesses;
}

Result<void> check_job(const RunRecord& record) {
  if (record.boundary.kind != BoundaryKind::job) {
    return fail(plain_error(fmt::format("a {} boundary cannot be acted on from Windows",
                                        boundary_kind_name(record.boundary.kind))));
  }
  if (record.boundary.address != job_object_name(record.run_id)) {
    return fail(
        plain_error("job " + record.boundary.address + " is not named after run " + record.run_id));
  }
  return {};
}

bool alive(const ProcessIdentity& process) {
  return platform::process_alive(static_cast<DWORD>(process.pid), process.start_time);
}

// The run's controller or guardian lives: a handle to the job is held.
bool holder_alive(const RunRecord& record) {
  return alive(record.controller) || (record.guardian && alive(*record.guardian));
}

std::optional<bool> job_empty(const RunRecord& record, std::string* why_not,
                              std::vector<MemberInfo>* alive = nullptr) {
  auto note = [&](std::string why) {
    if (why_not != nullptr) {
      *why_not = std::move(why);
    }
  };
  auto valid = check_job(record);
  if (!valid) {
    note(valid.error().message());
    return std::nullopt;
  }
  UniqueHandle job = open_recorded_job(record, JOB_OBJECT_QUERY);
  if (!job) {
    const DWORD error = ::GetLastError();
    if (error == ERROR_FILE_NOT_FOUND) {
      return true;  // no handle and no member keeps it: nothing is left
    }
    note(platform::windows_error(error, "open job object " + record.boundary.address).message());
    return std::nullopt;
  }
  auto active = active_processes(job.get());
  // A run still pending whose controller and guardian are both dead was cut
  // short: closing their handles made Windows terminate every member
  // (kill-on-close, under the standing authority). Termination takes a
  // moment - under Wine, until the wineserver has torn the dead processes
  // down - and a launch that comes right then must not be refused for it:
  // wait, bounded, for the job to drain. (A run that ended without proof
  // disarmed kill-on-close and is not pending; a live guardian, or
  // controller, holds the job: no wait for either.)
  if (active && *active != 0 && record.disposition == Disposition::pending
      && !holder_alive(record)) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (active && *active != 0 && std::chrono::steady_clock::now() < until) {
      ::Sleep(20);
      active = active_processes(job.get());
    }
  }
  if (!active) {
    note("cannot query job object " + record.boundary.address);
    return std::nullopt;
  }
  if (*active != 0) {
    note(fmt::format("job object {} has {} process(es)", record.boundary.address, *active));
    if (alive != nullptr) {
      auto listed = platform::job_processes(job.get(), record.boundary.address);
      *alive = listed ? *listed : std::vector<MemberInfo>{};
    }
  }
  return *active == 0;
}

Result<bool> kill_job(const RunRecord& record, Duration verify_for, std::string* why_not) {
  TG_TRY(check_job(record));
  UniqueHandle job = open_recorded_job(record, JOB_OBJECT_QUERY | JOB_OBJECT_TERMINATE);
  if (!job) {
    if (::GetLastError() == ERROR_FILE_NOT_FOUND) {
      return true;
    }
    return fail(platform::last_error("open job object " + record.boundary.address));
  }
  if (!::TerminateJobObject(job.get(), platform::JobObjectBoundary::k_forced_exit_code)) {
    return fail(platform::last_error("TerminateJobObject " + record.boundary.address));
  }
  const auto until = std::chrono::steady_clock::now() + verify_for;
  for (;;) {
    auto active = active_processes(job.get());
    if (active && *active == 0) {
      return true;
    }
    if (std::chrono::steady_clock::now() >= until) {
      if (why_not != nullptr) {
        *why_not = "job object " + record.boundary.address + " still has processes";
      }
      return false;
    }
    ::Sleep(20);  // bounded: verify_for
  }
}

// Whether `pid` is another process's now than the member's: then a group
// of that id may be a stranger's. Unknown (not ours to open) counts as
// another's; no process with that pid at all does not.
bool pid_taken_by_another(const MemberInfo& member) {
  UniqueHandle process(
      ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(member.pid)));
  if (!process) {
    return ::GetLastError() != ERROR_INVALID_PARAMETER;
  }
  return platform::process_creation_time(process.get()) != member.start_time;
}

// The drain's graceful stop from a record, as the controller's at a
// deadline (DESIGN.md [windows]): CTRL_BREAK_EVENT to each process group
// a member of the run leads (COMMAND's), which reaches the group's
// processes on this process's console (the guardian shares its
// controller's; a sweep on another console reaches none). A group whose
// leader's pid another process holds now is left alone: it may be that
// process's group. Returns the leaders whose groups were sent it; an error
// when none was.
Result<std::vector<ProcessIdentity>> break_groups(const RunRecord& record) {
  std::vector<ProcessIdentity> sent;
  std::optional<Error> error;
  for (const auto& member : record.members) {
    if (!member.leads_group || pid_taken_by_another(member)) {
      continue;
    }
    if (::GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, static_cast<DWORD>(member.pid))) {
      sent.push_back(member);
    } else if (!error) {
      error = platform::last_error(fmt::format("CTRL_BREAK_EVENT to process group {}", member.pid));
    }
  }
  if (sent.empty()) {
    return fail(error ? *error
                      : plain_error("no process group of the run is known (COMMAND's is not "
                                    "recorded, or its pid is another process's now)"));
  }
  return sent;
}

// The one kind Windows forms: a job object, found by its name.
class RecordedJob final : public RecordedBoundary {
public:
  explicit RecordedJob(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override { return check_job(m_record); }

  std::optional<bool> empty(std::string* why_not, std::vector<MemberInfo>* alive) const override {
    if (alive != nullptr) {
      alive->clear();
    }
    return job_empty(m_record, why_not, alive);
  }

  Result<bool> kill(Duration verify_for, std::string* why_not,
                    const std::vector<MemberInfo>* /*alive*/) const override {
    return kill_job(m_record, verify_for, why_not);
  }

  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal /*signal*/) const override {
    TG_TRY(check_job(m_record));
    return break_groups(m_record);
  }

  // Until the job has no process, or `until`.
  void await_drained(const std::vector<ProcessIdentity>& /*signalled: the job says*/,
                     std::chrono::steady_clock::time_point until) const override {
    if (!check_job(m_record)) {
      return;
    }
    UniqueHandle job = open_recorded_job(m_record, JOB_OBJECT_QUERY);
    while (job && std::chrono::steady_clock::now() < until) {
      auto active = active_processes(job.get());
      if (!active || *active == 0) {
        return;
      }
      ::Sleep(20);  // bounded: until
    }
  }

  std::string force_method() const override { return "TerminateJobObject"; }

  Result<void> remove() const override {
    return {};  // a job goes with its last handle and member
  }
};

}  // namespace

std::unique_ptr<RecordedBoundary> recorded_boundary(const RunRecord& record) {
  return std::make_unique<RecordedJob>(record);
}

Disposition settled_disposition(const RunRecord& record, bool proven) {
  if (proven) {
    return Disposition::pass;
  }
  return job_empty(record, nullptr) == false ? Disposition::failed : Disposition::ambiguous;
}

ProcessIdentity current_process_identity() {
  return ProcessIdentity{static_cast<long>(::GetCurrentProcessId()),
                         platform::process_creation_time(::GetCurrentProcess())};
}

}  // namespace treeguard
