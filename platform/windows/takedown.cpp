// A job known only from its record (sweep, the gate): found by its name,
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

std::optional<bool> job_empty(const RunRecord& record, std::string* why_not) {
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
  // A run still pending was cut short: its controller died and closing its
  // handle made Windows terminate every member (kill-on-close, under the
  // standing authority). Termination takes a moment - under Wine, until the
  // wineserver has torn the dead process down - and a launch that comes
  // right then must not be refused for it: wait, bounded, for the job to
  // drain. (A run that ended without proof disarmed kill-on-close and is
  // not pending: no wait for it.)
  if (active && *active != 0 && record.disposition == Disposition::pending) {
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

// The one kind Windows forms: a job object, found by its name.
class RecordedJob final : public RecordedBoundary {
public:
  explicit RecordedJob(const RunRecord& record) : RecordedBoundary(record) {}

  Result<void> check() const override { return check_job(m_record); }

  std::optional<bool> empty(std::string* why_not,
                            std::vector<MemberInfo>* /*alive: not listed*/) const override {
    return job_empty(m_record, why_not);
  }

  Result<bool> kill(Duration verify_for, std::string* why_not,
                    const std::vector<MemberInfo>* /*alive*/) const override {
    return kill_job(m_record, verify_for, why_not);
  }

  // A job known from its record has no graceful stop from here: Windows
  // sends CTRL_BREAK_EVENT only to processes on this process's console, and
  // a run whose controller died was ended by kill-on-close already.
  Result<std::vector<ProcessIdentity>> stop_gracefully(Signal /*signal*/) const override {
    return std::vector<ProcessIdentity>{};
  }

  void await_drained(const std::vector<ProcessIdentity>& /*signalled*/,
                     std::chrono::steady_clock::time_point /*until*/) const override {}

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
